"""Engine profiles on hand-checkable models: pages, groups, eras, parallelism, other engines.

The factory model (tests/factories.py) has 4 layers x 8 KV heads x 128 dims:
16 KiB per bf16 token, a 16-token page of one layer is 64 KiB, and one block of
the pool (4 layers) 256 KiB, so 8 GiB hold exactly 32,768 blocks = 524,288 tokens.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from model_catalog import model_spec
from planner.engines import EngineRequest, plan_engine, reproduce_printed
from planner.engines.hf_transformers import transformers_bytes_per_sequence
from planner.engines.llamacpp import llamacpp_cells, pad256
from planner.engines.overheads import forward_peak_bytes, pipeline_layer_ranges, sampler_peak_bytes
from planner.engines.pages import (
    FullAttentionPages,
    SlidingWindowPages,
    kv_layout,
    mamba_hybrid_block_size,
)
from planner.engines.profiles import (
    ENGINE_CHOICES,
    default_block_size,
    engine_profile,
    sglang_memory_defaults,
    vllm_scheduler_defaults,
)
from planner.model.kv import cache_dtypes
from planner.model.layers import FullAttention, MLAAttention, RecurrentState, SlidingWindowAttention
from planner.units import GiB, KiB, MiB
from tests.factories import dense_model

MODEL = dense_model()
BLOCK_BYTES = 256 * KiB


def pinned(available: int = 8 * GiB, **kw) -> EngineRequest:
    base = dict(engine="vllm-v0.11", max_model_len=1024, available_kv_memory_bytes=available)
    base.update(kw)
    return EngineRequest(**base)


# --- vLLM pages, blocks and what each era prints ------------------------------------


def test_eight_gib_hold_32768_blocks_and_one_byte_less_loses_one():
    plan = plan_engine(MODEL, 80 * GiB, pinned())
    assert plan.limiting_rank.bytes_per_block == BLOCK_BYTES
    assert plan.num_gpu_blocks == 32_768
    assert plan.engine_kv_cache_tokens == 524_288
    assert plan.max_concurrency == 512.0  # 32768 blocks / ceil(1024 / 16)
    assert plan_engine(MODEL, 80 * GiB, pinned(8 * GiB - 1)).num_gpu_blocks == 32_767


@pytest.mark.parametrize("engine,tokens,concurrency,line", [
    ("vllm-v0", 524_288, 524.29, "# GPU blocks: 32768"),          # N*B/L = 524288 / 1000
    ("vllm-v1-jan2025", 524_288, 524.29, "# GPU blocks: 32768"),
    ("vllm-v1-2025", 524_288, 524.29, "GPU KV cache size: 524,288 tokens"),
    ("vllm-v0.11", 524_288, 520.13, "GPU KV cache size: 524,288 tokens"),   # 32768 / ceil(1000/16)=63
    ("vllm", 520_126, 520.13, "GPU KV cache size: 520,126 tokens"),         # int(32768/63 x 1000)
])
def test_each_vllm_era_prints_its_own_tokens_and_concurrency(engine, tokens, concurrency, line):
    plan = plan_engine(MODEL, 80 * GiB, pinned(engine=engine, max_model_len=1000))
    assert plan.engine_kv_cache_tokens == tokens
    assert plan.max_concurrency == concurrency
    assert line in plan.engine_log_lines
    assert f"Maximum concurrency for 1,000 tokens per request: {concurrency:.2f}x" in plan.engine_log_lines


def test_sliding_window_needs_window_minus_one_plus_batch_plus_one_block():
    spec = SlidingWindowPages(block_size=16, bytes_per_token=4096, sliding_window=4096)
    # ceil(min(4095 + 2048, 32768) / 16) + 1 = ceil(6143 / 16) + 1 = 384 + 1
    assert spec.blocks_per_request(32768, 2048) == 385
    # a short max_model_len caps it: ceil(1000 / 16) + 1 = 64
    assert spec.blocks_per_request(1000, 2048) == 64
    assert FullAttentionPages(block_size=16, bytes_per_token=4096).blocks_per_request(32768, 2048) == 2048


def hybrid_model(num_full: int, num_sliding: int, window: int = 4096):
    full = FullAttention(num_key_value_heads=8, head_dim=128)
    sliding = SlidingWindowAttention(num_key_value_heads=8, head_dim=128, sliding_window=window)
    return dense_model(num_layers=num_full + num_sliding, layers=(sliding,) * num_sliding + (full,) * num_full)


def test_half_sliding_model_has_two_groups_and_sums_blocks_per_request():
    model = hybrid_model(2, 2)
    plan = plan_engine(model, 80 * GiB, pinned(max_model_len=32768, max_num_batched_tokens=2048))
    assert (plan.num_kv_groups, plan.group_size) == (2, 2)
    assert plan.limiting_rank.bytes_per_block == 2 * 64 * KiB
    assert plan.num_gpu_blocks == 8 * GiB // (128 * KiB) == 65_536
    assert plan.blocks_per_request == 2048 + 385
    assert plan.engine_kv_cache_tokens == 65_536 // 2 * 16  # v0.10-v0.20 print
    assert plan.max_concurrency == round(65_536 / 2433, 2)


def test_gemma3_five_to_one_makes_six_groups():
    plan = plan_engine(hybrid_model(2, 10), 80 * GiB, pinned(max_model_len=32768))
    assert (plan.num_kv_groups, plan.group_size) == (6, 2)


def test_close_layer_counts_share_the_larger_group_size_with_padding():
    layout = kv_layout([FullAttentionPages(block_size=16, bytes_per_token=4096)] * 3
                       + [SlidingWindowPages(block_size=16, bytes_per_token=4096, sliding_window=128)] * 4)
    assert (layout.num_groups, layout.group_size, layout.padding_layers) == (2, 4, 1)  # 4 < 1.5 x 3


def test_disabling_the_hybrid_manager_or_an_old_era_prices_every_layer_full():
    model = hybrid_model(2, 2)
    off = plan_engine(model, 80 * GiB, pinned(max_model_len=32768, disable_hybrid_kv_cache_manager=True))
    old = plan_engine(model, 80 * GiB, pinned(engine="vllm-v1-2025", max_model_len=32768))
    assert off.num_kv_groups == old.num_kv_groups == 1
    assert off.num_gpu_blocks == old.num_gpu_blocks == 32_768


def test_mamba_block_size_grows_until_a_page_holds_the_state():
    assert mamba_hybrid_block_size(4 * KiB, 1 * MiB) == 256  # 16 x ceil(1 MiB / 64 KiB)
    full = FullAttention(num_key_value_heads=8, head_dim=128)
    mamba = RecurrentState(conv_state_elements=8192 * 4, ssm_state_elements=8192 * 16)  # 320 KiB in bf16
    model = dense_model(num_layers=4, layers=(mamba, full, mamba, full))
    plan = plan_engine(model, 80 * GiB, pinned(max_model_len=4096))
    assert plan.block_size == 16 * 5  # 320 KiB state / (16 x 4 KiB) = 5 steps of 16 tokens
    with pytest.raises(ValueError, match="Mamba hybrids are modelled only with vLLM's hybrid allocator"):
        plan_engine(model, 80 * GiB, pinned(engine="vllm-v1-2025", max_model_len=4096))


# --- parallelism ---------------------------------------------------------------------


@pytest.mark.parametrize("tp,heads_per_gpu", [(1, 8), (4, 2), (8, 1), (16, 1)])
def test_kv_heads_per_gpu_replicate_past_the_head_count(tp, heads_per_gpu):
    model = dense_model(num_attention_heads=16)
    plan = plan_engine(model, 80 * GiB, pinned(tensor_parallel_size=tp))
    assert plan.limiting_rank.kv_cache_bytes_per_token == 4 * 2 * heads_per_gpu * 128 * 2


def test_mla_latent_is_not_divided_by_tp_and_uses_the_backend_block():
    mla = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64)
    model = dense_model(num_layers=2, layers=(mla, mla))
    one = plan_engine(model, 80 * GiB, pinned(gpu_name="H100 SXM5 80GB"))
    eight = plan_engine(model, 80 * GiB, pinned(gpu_name="H100 SXM5 80GB", tensor_parallel_size=8))
    assert one.limiting_rank.kv_cache_bytes_per_token == eight.limiting_rank.kv_cache_bytes_per_token == 2 * 576 * 2
    assert one.block_size == 64  # FlashMLA on Hopper
    assert plan_engine(model, 80 * GiB, pinned(gpu_name="B200")).block_size == 128  # CUTLASS MLA
    assert plan_engine(model, 80 * GiB, pinned(gpu_name="A100 SXM4 80GB")).block_size == 16
    assert default_block_size(engine_profile("vllm"), is_mla=True, attention_backend="TRITON_MLA") == 16


def test_pipeline_stages_split_layers_and_the_fewest_blocks_win():
    assert [len(r) for r in pipeline_layer_ranges(30, 4)] == [7, 8, 8, 7]
    plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm-v0.11", max_model_len=1024,
                                                      pipeline_parallel_size=2))
    first, last = plan.ranks
    assert (first.num_layers, last.num_layers) == (2, 2)
    assert first.sampler_bytes == 0 < last.sampler_bytes  # logits only on the last stage
    assert plan.num_gpu_blocks == min(first.num_blocks, last.num_blocks) == last.num_blocks
    assert first.weights_bytes != last.weights_bytes  # embedding first, lm_head last


def test_data_parallel_replicas_multiply_concurrency_not_memory():
    plan = plan_engine(MODEL, 80 * GiB, pinned(tensor_parallel_size=2, data_parallel_size=3))
    assert plan.num_gpus == 6
    assert plan.max_concurrency_all_replicas == pytest.approx(3 * plan.max_concurrency, abs=0.01)
    assert "--data-parallel-size 3" in plan.launch_command


# --- start checks and launch commands ------------------------------------------------


def test_v1_refuses_a_max_model_len_that_does_not_fit_and_names_the_largest_that_does():
    plan = plan_engine(MODEL, 80 * GiB, pinned(available=16 * MiB, max_model_len=4096))
    # 16 MiB / 16 KiB = 1024 tokens
    assert not plan.starts
    assert plan.engine_max_model_len == 1024
    assert "To serve at least one request with the model's max seq len (4096)" in plan.reasons[0]
    assert "estimated maximum model length is 1024" in plan.reasons[0]
    assert "--max-model-len 1024" in plan.launch_command


def test_v0_refuses_when_max_model_len_exceeds_block_tokens():
    plan = plan_engine(MODEL, 80 * GiB, pinned(engine="vllm-v0", available=16 * MiB, max_model_len=4096))
    assert not plan.starts and "larger than the maximum number of tokens that can be stored in KV cache (1024)" \
        in plan.reasons[0]


def test_no_memory_left_is_a_result_with_the_knob_to_turn():
    plan = plan_engine(MODEL, 300 * MiB, EngineRequest(engine="vllm", max_model_len=1024))
    assert not plan.starts
    assert "No available memory for the cache blocks" in plan.reasons[0]
    assert plan.num_gpu_blocks == 0


def test_vllm_launch_command_carries_the_capacity_flags():
    plan = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="vllm", max_model_len=4096, kv_cache_dtype="fp8",
                                                      tensor_parallel_size=2, gpu_memory_utilization=0.85))
    for flag in ("vllm serve test/dense", "--tensor-parallel-size 2", "--max-model-len 4096",
                 "--gpu-memory-utilization 0.85", "--kv-cache-dtype fp8", "--max-num-seqs"):
        assert flag in plan.launch_command


@pytest.mark.parametrize("engine,fragment", [
    ("sglang", "python -m sglang.launch_server --model-path test/dense --tp 1 --context-length 1024"),
    ("llama.cpp", "llama-server -m dense.gguf -c 1024 -np 1 -ctk f16 -ctv f16"),
    ("trtllm", "trtllm-serve test/dense --tp_size 1"),
    ("tgi", "text-generation-launcher --model-id test/dense --num-shard 1 --max-total-tokens 1024"),
    ("transformers", "AutoModelForCausalLM.from_pretrained('test/dense'"),
])
def test_every_engine_has_a_launch_command(engine, fragment):
    plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine=engine, max_model_len=1024))
    assert fragment in plan.launch_command
    assert plan.starts, plan.reasons


# --- defaults ------------------------------------------------------------------------


def test_vllm_scheduler_defaults_follow_the_gpu():
    profile = engine_profile("vllm-v0.11")
    assert vllm_scheduler_defaults(profile, int(79.19 * GiB), "H100 SXM5 80GB", 8192) == (8192, 1024)
    assert vllm_scheduler_defaults(profile, int(79.25 * GiB), "A100 SXM4 80GB", 8192) == (2048, 256)
    assert vllm_scheduler_defaults(profile, int(23.58 * GiB), "GeForce RTX 3090", 8192) == (2048, 256)
    assert vllm_scheduler_defaults(engine_profile("vllm-v0"), 0, "", 20000) == (20000, 256)


def test_sglang_default_mem_fraction_static():
    assert sglang_memory_defaults(int(79.19 * GiB)) == (8192, 256, 0.834)
    # 24 GiB: 512 + 1.5 x 2048 + 2 x 24 + 128 = 3760 MiB reserved of 24576
    assert sglang_memory_defaults(24 * GiB) == (2048, 24, round((24576 - 3760) / 24576, 3))


# --- other engines -------------------------------------------------------------------


def test_sglang_pool_holds_tokens_plus_one_page():
    plan = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="sglang", max_model_len=1024,
                                                      available_kv_memory_bytes=8 * GiB))
    assert plan.engine_kv_cache_tokens == 8 * GiB // (16 * KiB) - 1
    assert plan.available_kv_cache_bytes == (plan.engine_kv_cache_tokens + 1) * 16 * KiB
    assert any("K size: 4.00 GB, V size: 4.00 GB" in line for line in plan.engine_log_lines)


def test_trtllm_divides_head_bytes_by_tp_without_replication():
    model = dense_model(num_key_value_heads=4, num_attention_heads=32)
    vllm = plan_engine(model, 80 * GiB, pinned(tensor_parallel_size=8))
    trt = plan_engine(model, 80 * GiB, EngineRequest(engine="trtllm", max_model_len=1024, tensor_parallel_size=8,
                                                     available_kv_memory_bytes=8 * GiB))
    assert vllm.limiting_rank.kv_cache_bytes_per_token == 4 * 2 * 1 * 128 * 2  # one replicated head
    assert trt.limiting_rank.kv_cache_bytes_per_token == 4 * 2 * (4 * 128 // 8) * 2  # half a head
    assert trt.engine_kv_cache_tokens % 32 == 0


def test_tgi_refuses_to_shard_fewer_kv_heads_than_gpus():
    model = dense_model(num_key_value_heads=4, num_attention_heads=32)
    plan = plan_engine(model, 80 * GiB, EngineRequest(engine="tgi", max_model_len=1024, tensor_parallel_size=8))
    assert not plan.starts and "cannot shard 4 KV heads over 8 GPUs" in plan.reasons[0]


def test_llamacpp_cells_pad_to_256_and_split_streams():
    assert pad256(1000) == 1024
    unified = llamacpp_cells(8192, 4, unified=True, sliding_window=None)
    split = llamacpp_cells(8192, 4, unified=False, sliding_window=None)
    assert (unified.streams, unified.full_cells) == (1, 8192)
    assert (split.streams, split.full_cells) == (4, 2048)
    swa = llamacpp_cells(32768, 2, unified=True, sliding_window=1024, n_ubatch=512)
    assert swa.swa_cells == pad256(1024 * 2 + 512) == 2560


def test_llamacpp_q8_0_rows_and_mla_without_v():
    plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="llama.cpp", max_model_len=4096, kv_cache_dtype="q8_0"))
    # 1024 values per row -> 1088 B; K + V x 4 layers x 4096 cells
    assert plan.available_kv_cache_bytes == 2 * 1088 * 4 * 4096
    assert "-ctk q8_0 -ctv q8_0" in plan.launch_command and "-fa on" in plan.launch_command
    mla = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64)
    plan = plan_engine(dense_model(num_layers=2, layers=(mla, mla)), 24 * GiB,
                       EngineRequest(engine="llama.cpp", max_model_len=256))
    assert plan.available_kv_cache_bytes == 2 * 576 * 2 * 256


def test_transformers_sliding_layers_keep_window_minus_one():
    model = hybrid_model(2, 2, window=128)
    dtypes = cache_dtypes(model, "bf16", "auto")
    per_layer = 2 * 8 * 128 * 2
    # the kept view is w - 1 = 127 tokens, but after a decode step it pins the w = 128-token
    # concatenation (planner/engines/hf_transformers.py, verified by `python -m planner verify`)
    assert transformers_bytes_per_sequence(model, 1000, dtypes) == per_layer * (2 * 1000 + 2 * 128)
    # right after prefilling a 1000-token prompt the sliding layers still pin all 1000 tokens
    assert transformers_bytes_per_sequence(model, 1000, dtypes, prompt_tokens=1000) == per_layer * 4 * 1000
    plan = plan_engine(model, 24 * GiB, EngineRequest(engine="transformers", max_model_len=1000))
    assert plan.starts and plan.engine_max_model_len > 1000


def test_transformers_engine_sizes_the_prefill_pin_of_the_prompt():
    model = hybrid_model(2, 2, window=128)
    per_layer = 2 * 8 * 128 * 2
    # No max_num_batched_tokens: the prompt may be the whole max_model_len, so right after its
    # prefill all four layers hold 1000 tokens (not the 2 x 1000 + 2 x 128 of the decode view).
    whole = plan_engine(model, 24 * GiB, EngineRequest(engine="transformers", max_model_len=1000))
    assert whole.ranks[0].bytes_per_block == per_layer * 4 * 1000
    assert "1,000-token prompt" in whole.overhead_formula
    # A 200-token prompt pins less than decoding to 1000 keeps: the decode view is the peak.
    short = plan_engine(model, 24 * GiB, EngineRequest(engine="transformers", max_model_len=1000,
                                                     max_num_batched_tokens=200))
    assert short.ranks[0].bytes_per_block == per_layer * (2 * 1000 + 2 * 128)
    # 600 prompt tokens in 2 sequences is 300 each: still below the decode view.
    two = plan_engine(model, 24 * GiB, EngineRequest(engine="transformers", max_model_len=1000,
                                                   max_num_batched_tokens=600, max_num_seqs=2))
    assert two.ranks[0].bytes_per_block == per_layer * (2 * 1000 + 2 * 128)


def test_transformers_engine_pin_on_gemma3_is_the_whole_prompt_in_every_layer():
    # Gemma 3 12B: 48 layers (8 global, 40 sliding with window 1024), 8 KV heads x head_dim 256, bf16:
    # 2 x 8 x 256 x 2 B = 8,192 B per token per layer. A 32,768-token prompt pins 32,768 tokens in
    # all 48 layers right after its prefill (transformers cache_utils DynamicSlidingWindowLayer).
    model = model_spec("google/gemma-3-12b-it")
    plan = plan_engine(model, 80 * GiB, EngineRequest(engine="transformers", weight_dtype="bf16", max_model_len=32768))
    assert plan.ranks[0].bytes_per_block == 48 * 8_192 * 32_768
    assert plan.ranks[0].bytes_per_block == transformers_bytes_per_sequence(
        model, 32_768, cache_dtypes(model, "bf16", "auto"), prompt_tokens=32_768)


# --- overhead model ------------------------------------------------------------------


def test_forward_and_sampler_peaks_by_hand():
    # 4 layers model: 3h + 3I = 3 x 1024 + 3 x 4096 = 15,360 elements/token
    assert forward_peak_bytes(MODEL, 1000, 2) == 1000 * 2 * 15_360
    assert forward_peak_bytes(MODEL, 1000, 2, tensor_parallel_size=2) == 1000 * 2 * (3072 + 6144)
    assert sampler_peak_bytes(MODEL, 8192, 1024, 38, 2) == 1024 * 32768 * 38 + 8192 * 1024 * 2
    assert sampler_peak_bytes(MODEL, 100, 1024, 38, 2) == 100 * 32768 * 38 + 100 * 1024 * 2  # rows <= tokens


def test_every_override_replaces_its_term():
    plan = plan_engine(MODEL, 10 * GiB, EngineRequest(
        engine="vllm", max_model_len=1024, gpu_memory_utilization=0.5, weights_bytes=GiB, activation_bytes=GiB,
        non_torch_bytes=GiB // 2, cudagraph_bytes=GiB // 2))
    rank = plan.limiting_rank
    assert rank.available_kv_cache_bytes == 5 * GiB - 3 * GiB
    assert set(rank.overridden) == {"weights", "activation", "non_torch", "cudagraph"}


def test_cudagraph_is_only_deducted_from_v0_21():
    new = plan_engine(MODEL, 10 * GiB, EngineRequest(engine="vllm", max_model_len=1024, cudagraph_bytes=GiB))
    old = plan_engine(MODEL, 10 * GiB, EngineRequest(engine="vllm-v0.11", max_model_len=1024, cudagraph_bytes=GiB))
    # the same budget but the CUDA-graph term (and the 2026 dummy sampler, 6 B per logit: its activation differs)
    assert (old.available_kv_cache_bytes + old.limiting_rank.activation_bytes
            - new.available_kv_cache_bytes - new.limiting_rank.activation_bytes) == GiB
    small = plan_engine(MODEL, 10 * GiB, EngineRequest(engine="vllm-v0.11", max_model_len=1024,
                                                       gpu_memory_utilization=0.95, cudagraph_bytes=GiB))
    assert any("headroom" in w for w in small.warnings)


def test_reproduce_printed_pins_the_engine_figure():
    plan = reproduce_printed(MODEL, EngineRequest(engine="vllm-v0.11", max_model_len=1024), 8 * GiB)
    assert plan.available_kv_from_log and plan.num_gpu_blocks == 32_768


# --- errors --------------------------------------------------------------------------


@pytest.mark.parametrize("kw,fragment", [
    (dict(engine="vllm-v9"), "unknown engine 'vllm-v9'; choose one of vllm"),
    (dict(engine="vllm", kv_cache_dtype="q4_0"), "vllm does not offer KV-cache dtype 'q4_0'"),
    (dict(pipeline_parallel_size=5), "pipeline_parallel_size 5 exceeds the model's 4 layers"),
    (dict(tensor_parallel_size=0), "tensor_parallel_size must be at least 1"),
    (dict(gpu_memory_utilization=1.5), "gpu_memory_utilization must be in \\(0, 1\\]"),
    (dict(weights_bytes=-1), "weights_bytes must be >= 0"),
    (dict(max_model_len=0), "max_model_len must be at least 1"),
])
def test_invalid_requests_raise_actionable_errors(kw, fragment):
    with pytest.raises(ValueError, match=fragment):
        plan_engine(MODEL, 24 * GiB, EngineRequest(**({"max_model_len": 1024} | kw)))


def test_gpu_memory_must_be_positive_and_max_len_known():
    with pytest.raises(ValueError, match="gpu_memory_bytes must be > 0"):
        plan_engine(MODEL, 0, EngineRequest(max_model_len=1024))
    with pytest.raises(ValueError, match="pass max_model_len"):
        plan_engine(replace(MODEL, max_position_embeddings=None), 24 * GiB, EngineRequest())


def test_every_profile_plans_the_factory_model():
    for engine in ENGINE_CHOICES:
        plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine=engine, max_model_len=2048))
        assert plan.engine == engine and plan.engine_kv_cache_tokens > 0, engine
        assert set(plan.cli_keys()) == {"engine", "available_kv_cache_bytes", "num_gpu_blocks",
                                        "engine_kv_cache_tokens", "max_concurrency", "engine_max_model_len",
                                        "launch_command"}


# --- CLI -----------------------------------------------------------------------------

CLI_KEYS = {"engine", "available_kv_cache_bytes", "num_gpu_blocks", "engine_kv_cache_tokens", "max_concurrency",
            "engine_max_model_len", "launch_command"}


def _cli_json(capsys, *args: str) -> dict:
    import json

    from planner.cli import main

    assert main(["plan", "--model", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb",
                 "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_without_engine_flags_keeps_the_v1_json(capsys):
    assert not CLI_KEYS & set(_cli_json(capsys))


def test_cli_engine_keys_match_plan_engine(capsys):
    pytest.importorskip("model_catalog")
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu

    out = _cli_json(capsys, "--engine", "vllm-v0.11", "--max-model-len", "16000", "--block-size", "128",
                    "--available-kv-memory-gib", "51.38")
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    plan = plan_engine(model_spec("meta-llama/Meta-Llama-3.1-8B"), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm-v0.11", max_model_len=16000, block_size=128, available_kv_memory_bytes=int(51.38 * GiB),
        gpu_name=gpu.name))
    assert {k: out[k] for k in CLI_KEYS} == plan.cli_keys()
    assert out["num_gpu_blocks"] == int(51.38 * GiB) // (128 * 131072)  # 3288 blocks of 16 MiB
    assert out["engine_plan"]["ranks"][0]["overridden"] == ["available_kv_cache"]
    assert out["block_size"] == 128  # the v1 keys see the same flag


def test_cli_tp_pp_and_num_gpus_must_agree(capsys):
    out = _cli_json(capsys, "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2")
    assert out["num_gpus"] == 4 and out["engine_plan"]["tensor_parallel_size"] == 2
    assert len(out["engine_plan"]["ranks"]) == 2
    from planner.cli import main

    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--num-gpus", "3",
                 "--tensor-parallel-size", "2"]) == 2
    assert "--num-gpus 3 must equal --tensor-parallel-size 2 x --pipeline-parallel-size 1" in capsys.readouterr().err


def test_cli_engine_rejects_a_dtype_the_engine_lacks(capsys):
    from planner.cli import main

    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--engine", "vllm", "--kv-cache-dtype", "q8_0"]) == 2
    assert "vllm does not offer KV-cache dtype 'q8_0'" in capsys.readouterr().err


def test_cli_pipeline_stages_keep_num_gpus_and_size_one_tensor_parallel_group(capsys):
    # 3 pipeline stages of Llama 3.1 8B (32 heads): tensor parallel 1, so the plan section must not
    # call the layout "cannot split" (it did, reading num_gpus 3 as tensor parallel 3).
    out = _cli_json(capsys, "--engine", "vllm", "--pipeline-parallel-size", "3")
    assert out["num_gpus"] == 3 and out["fits"] and out["engine_plan"]["starts"]
    assert not any("cannot split" in r for r in out["reasons"])
    assert any("pipeline_parallel_size 3" in n for n in out["notes"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "tgi"])
def test_head_splitting_engines_refuse_a_tensor_parallel_size_that_does_not_divide_the_heads(engine):
    model = dense_model(num_layers=4, num_attention_heads=32, num_key_value_heads=8)
    result = plan_engine(model, 80 * GiB, EngineRequest(engine=engine, tensor_parallel_size=3, max_model_len=4096))
    assert not result.starts and any("must be divisible by" in r for r in result.reasons)
    # The engine never reaches its memory print: no blocks, tokens or concurrency to report.
    assert (result.num_gpu_blocks, result.engine_kv_cache_tokens, result.max_concurrency) == (0, 0, 0.0)
    assert result.engine_log_lines == ()


def test_llama_cpp_splits_layers_so_three_gpus_are_fine():
    model = dense_model(num_layers=4, num_attention_heads=32, num_key_value_heads=8)
    result = plan_engine(model, 24 * GiB, EngineRequest(engine="llama.cpp", tensor_parallel_size=3, max_model_len=4096))
    assert not any("must be divisible by" in r for r in result.reasons)


@pytest.mark.parametrize(("weight_dtype", "expected"), [
    ("auto", ""), ("bf16", " --dtype bfloat16"), ("fp32", " --dtype float32"), ("fp8", " --quantization fp8"),
])
def test_launch_commands_load_the_planned_weight_dtype(weight_dtype, expected):
    result = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="vllm", weight_dtype=weight_dtype, max_model_len=4096))
    assert result.launch_command.endswith("--max-num-seqs 1024" + expected)
    sglang = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="sglang", weight_dtype=weight_dtype, max_model_len=4096))
    assert sglang.launch_command.endswith(expected) if expected else "--dtype" not in sglang.launch_command


def test_launch_command_for_int4_weights_names_the_checkpoint_it_needs():
    result = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="vllm", weight_dtype="int4", max_model_len=4096))
    assert "--quantization" not in result.launch_command
    assert result.launch_command.split("  # ", 1)[1].startswith("int4 weights: serve a checkpoint quantized to int4")


# --- weights as the engine loads them (planner/engines/loaded.py) --------------------


@pytest.mark.parametrize("name,capability", [
    ("H100 SXM5 80GB", (9, 0)), ("nvidia-h200-sxm", (9, 0)), ("A100 SXM4 80GB", (8, 0)),
    ("nvidia-a100-pcie-80gb", (8, 0)), ("GeForce RTX 3090", (8, 6)), ("L40S", (8, 9)), ("B200 (HGX, SXM) 180GB", (10, 0)),
    ("GeForce RTX 5090", (12, 0)), ("Tesla T4", (7, 5)), ("", (9, 0)),
])
def test_gpu_capability_from_the_name(name, capability):
    from planner.engines.loaded import gpu_capability

    assert gpu_capability(name) == capability


def test_vllm_mxfp4_kernel_by_version_and_gpu():
    from planner.engines.loaded import vllm_mxfp4_layout

    assert vllm_mxfp4_layout("vllm-v0.10", "A100 SXM4 80GB").backend == "marlin"
    assert vllm_mxfp4_layout("vllm", "RTX 5090").backend == "marlin"  # SM 12.0: no Triton kernels
    hopper_new, hopper_old = vllm_mxfp4_layout("vllm-v0.11", "H100"), vllm_mxfp4_layout("vllm-v0.10", "H100")
    assert hopper_new.scale_pack == (256, 2) and hopper_old.backend == "marlin"  # 0.10.x: Marlin on Hopper
    assert vllm_mxfp4_layout("vllm", "B200").backend == "flashinfer"


def test_mxfp4_expert_bytes_by_hand():
    from planner.engines.loaded import vllm_mxfp4_layout
    from planner.engines.loaded import mxfp4_expert_bytes as expert

    # Marlin, TP 4 (case V15): intermediate 2880 // 4 = 720 -> 768, hidden 2880 -> 3072.
    # w13 2 x 768 x 3072 / 2 + w2 3072 x 768 / 2 values, (2 x 768 x 3072 + 3072 x 768) / 32 scales,
    # bf16 biases (2 x 768 + 3072) x 2.
    marlin = vllm_mxfp4_layout("vllm-v0.10", "A100")
    assert expert(hidden=2880, intermediate=2880, tensor_parallel_size=4, layout=marlin, with_bias=True) == (
        2_359_296 + 1_179_648 + 147_456 + 73_728 + 9_216)
    # Hopper Triton (case V21): no padding at 64; a second, swizzled copy of the scales padded to
    # 256 rows (5760 -> 5888, 2880 -> 3072); fp32 biases.
    triton = vllm_mxfp4_layout("vllm-v0.11", "H100")
    assert expert(hidden=2880, intermediate=2880, tensor_parallel_size=1, layout=triton, with_bias=True) == (
        12_441_600 + 777_600 + 5888 * 90 + 3072 * 90 + (5760 + 2880) * 4)


def test_block_scaled_fp8_keeps_one_scale_per_block_of_each_gpu_partition():
    from planner.engines.loaded import loaded_weight_bytes
    from planner.model.dtypes import FP8_BLOCK128, weight_dtype
    from planner.model.params import ParamGroup

    def one(name: str, shape):
        group = ParamGroup(name=f"layers.*.mlp.{name}.weight", shape=shape, kind="linear", checkpoint=FP8_BLOCK128)
        model = replace(MODEL, params=(group,), max_position_embeddings=None)
        return loaded_weight_bytes(model, weight_dtype("auto"), 2)

    # column parallel (rows split): (192, 256) per GPU: 192 x 256 B + ceil(192/128) x 2 x 4 B
    assert one("up_proj", (384, 256)) == 192 * 256 + 2 * 2 * 4
    # row parallel (columns split): (384, 128) per GPU: 384 x 128 B + 3 x 1 x 4 B
    assert one("down_proj", (384, 256)) == 384 * 128 + 3 * 1 * 4


def test_mla_down_projections_stay_whole_on_every_tensor_parallel_gpu():
    from planner.engines.loaded import loaded_weight_bytes
    from planner.model.dtypes import weight_dtype
    from planner.model.params import ParamGroup

    kv_a = ParamGroup(name="layers.*.self_attn.kv_a_proj_with_mqa.weight", shape=(576, 1024), kind="linear")
    q_b = ParamGroup(name="layers.*.self_attn.q_b_proj.weight", shape=(4096, 1024), kind="linear")
    model = replace(MODEL, params=(kv_a, q_b), max_position_embeddings=None)
    assert loaded_weight_bytes(model, weight_dtype("bf16"), 4) == 576 * 1024 * 2 + 4096 * 1024 * 2 // 4


# --- topology: non-torch memory, workers, per-rank figures -------------------------


@pytest.mark.parametrize("tp,pp,nodes,gpu,extra_mib", [
    (1, 1, 1, "H100 SXM5 80GB", 0),
    (2, 1, 1, "H100 SXM5 80GB", 430),        # NVLink: one peer (NCCL direct connections + custom all-reduce)
    (4, 1, 1, "H100 SXM5 80GB", 3 * 430),    # three peers
    (1, 2, 1, "H100 SXM5 80GB", 430),        # the pipeline's neighbour stage
    (2, 1, 1, "A100 PCIe 80GB", 96),         # no NVLink: rings over PCIe / shared memory, no custom all-reduce
    (8, 1, 1, "L40S", 96),                   # rings: two connections whatever the size
    (4, 1, 4, "A100 SXM4 80GB", 20),         # case V15: TP over 4 nodes (Ray)
    (4, 2, 2, "H100 SXM5 80GB", 3 * 430 + 20),  # TP in a node, the pipeline across the two
])
def test_non_torch_memory_by_topology(tp, pp, nodes, gpu, extra_mib):
    from planner.engines.overheads import non_torch_bytes_by_topology

    assert non_torch_bytes_by_topology(133 * MiB, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                       num_nodes=nodes, gpu_name=gpu) == (133 + extra_mib) * MiB


@pytest.mark.parametrize("tp,pp,nodes,gpu,extra_mib", [
    (2, 1, 1, "H100 SXM5 80GB", 430),            # ring connections of one NVLink group; NCCL has no NVLS for 2 GPUs
    (4, 1, 1, "H100 SXM5 80GB", 430 + 2 * 128),  # + NVLS: 16 channels x 2 x 8 x 128 KiB x 4 heads, two communicators
    (8, 1, 1, "H200 SXM 141GB", 430 + 2 * 256),  # case N01 (Kimi-K2-Thinking TP 8): 1,075 MiB, not 133 + 7 x 430
    (8, 1, 1, "B200 SXM 180GB", 430 + 2 * 384),  # Blackwell: 24 NVLS channels on one node
    (8, 1, 1, "A100 SXM4 80GB", 430),            # Ampere: no multicast, so no NVLS
    (4, 1, 1, "H100 NVL 94GB", 430),             # bridged pairs, no NVSwitch
    (2, 1, 1, "A100 PCIe 80GB", 96),             # no NVLink: rings over PCIe / shared memory
    (4, 1, 4, "A100 SXM4 80GB", 20),             # case V15: TP over 4 nodes (Ray)
    (4, 2, 2, "H100 SXM5 80GB", 430 + 2 * 128 + 20),  # TP in a node, the pipeline across the two
])
def test_vllm_non_torch_memory_follows_nccl_rings_and_nvls(tp, pp, nodes, gpu, extra_mib):
    from planner.engines.overheads import vllm_non_torch_bytes

    assert vllm_non_torch_bytes(133 * MiB, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                num_nodes=nodes, gpu_name=gpu) == (133 + extra_mib) * MiB


def test_nvls_buffer_is_nccls_formula():
    from planner.engines.overheads import nvls_bytes

    # src/transport/nvls.cc: nChannels (16 on SM90) x 2 x (128 KiB chunk x 8 steps) x nHeads (one per GPU)
    assert nvls_bytes(8, "H200 SXM 141GB") == 16 * 2 * 8 * 128 * 1024 * 8 == 256 * MiB
    assert nvls_bytes(2, "H200 SXM 141GB") == 0  # ncclNvlsInit: gpuCount <= 2 returns before NVLS
    assert nvls_bytes(8, "L40S") == 0


def test_nodes_need_ray_and_enough_gpus():
    with pytest.raises(ValueError, match="need --distributed-executor-backend ray"):
        plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=2))
    with pytest.raises(ValueError, match="3 nodes for 2 GPUs"):
        plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=3,
                                                   distributed_executor_backend="ray"))
    plan = plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=2,
                                                      distributed_executor_backend="ray", max_model_len=1024))
    assert plan.ranks[0].non_torch_bytes == (133 + 20) * MiB
    assert "--distributed-executor-backend ray" in plan.launch_command


def test_v0_driver_worker_samples_and_its_peers_do_not():
    plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm-v0", max_model_len=1024, tensor_parallel_size=2))
    driver, others = plan.ranks
    assert (driver.role, others.role) == ("driver", "others")
    assert driver.sampler_bytes > 0 == others.sampler_bytes
    assert plan.num_gpu_blocks == driver.num_blocks < others.num_blocks  # the pool is the smallest worker's
    v1 = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm-v0.11", max_model_len=1024, tensor_parallel_size=2))
    assert [r.role for r in v1.ranks] == ["all"]  # V1: every worker runs the dummy sampler


def test_available_memory_per_worker_pools_to_the_smallest():
    values = (int(45.32 * GiB), int(45.40 * GiB), int(45.35 * GiB), int(45.38 * GiB))
    plan = plan_engine(MODEL, 80 * GiB, pinned(tensor_parallel_size=4, available_kv_memory_bytes=None,
                                               available_kv_memory_per_rank_bytes=values))
    assert plan.available_kv_cache_bytes == values[0]
    assert plan.available_kv_from_log
    staged = plan_engine(MODEL, 80 * GiB, pinned(pipeline_parallel_size=2, available_kv_memory_bytes=None,
                                                 available_kv_memory_per_rank_bytes=(6 * GiB, 5 * GiB)))
    assert [r.available_kv_cache_bytes for r in staged.ranks] == [6 * GiB, 5 * GiB]
    with pytest.raises(ValueError, match="3 available-KV values for 4 workers"):
        plan_engine(MODEL, 80 * GiB, pinned(tensor_parallel_size=4, available_kv_memory_per_rank_bytes=(1, 2, 3)))


def test_cli_takes_one_available_value_per_worker(capsys):
    out = _cli_json(capsys, "--engine", "vllm-v0.11", "--tensor-parallel-size", "2", "--max-model-len", "8192",
                    "--available-kv-memory-gib", "30.5,30.25")
    assert out["available_kv_cache_bytes"] == int(30.25 * GiB)


# --- the profile pass as each version runs it -----------------------------------


def test_scheduler_defaults_by_usage_context_and_v0_chunked_prefill():
    v011, v0 = engine_profile("vllm-v0.11"), engine_profile("vllm-v0")
    h100 = int(79.19 * GiB)
    assert vllm_scheduler_defaults(v011, h100, "H100", 8192, "llm") == (16384, 1024)
    assert vllm_scheduler_defaults(v011, int(23.58 * GiB), "RTX 3090", 8192, "llm") == (8192, 256)
    # 2026 source (vllm/engine/arg_utils.py get_batch_defaults): 8192 for serve, 16384 for the LLM class
    assert vllm_scheduler_defaults(engine_profile("vllm"), h100, "H100", 8192) == (8192, 1024)
    assert vllm_scheduler_defaults(engine_profile("vllm"), h100, "H100", 8192, "llm") == (16384, 1024)
    # V0 profiles a whole prompt up to 32K, then chunked prefill takes over
    assert vllm_scheduler_defaults(v0, 0, "", 32768) == (32768, 256)
    assert vllm_scheduler_defaults(v0, 0, "", 32769) == (2048, 256)
    assert vllm_scheduler_defaults(v0, 0, "", 32769, "llm") == (8192, 256)


def test_enforce_eager_drops_cuda_graph_memory():
    graphs = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm", max_model_len=1024))
    eager = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm", max_model_len=1024, enforce_eager=True))
    assert graphs.ranks[0].cudagraph_bytes > 0 and eager.ranks[0].cudagraph_bytes == 0  # tests/test_vllm_cudagraph.py
    # eager also compiles nothing: the first launch's torch.compile charge goes too (vllm_runner.first_compile_bytes)
    assert graphs.ranks[0].first_compile_bytes > 0 and eager.ranks[0].first_compile_bytes == 0
    assert (eager.available_kv_cache_bytes - graphs.available_kv_cache_bytes
            == graphs.ranks[0].cudagraph_bytes + graphs.ranks[0].first_compile_bytes)
    assert "--enforce-eager" in eager.launch_command


def test_every_plan_names_the_version_it_models():
    for engine in ENGINE_CHOICES:
        assert plan_engine(MODEL, 80 * GiB, EngineRequest(engine=engine, max_model_len=1024)).engine_version
    assert plan_engine(MODEL, 80 * GiB, EngineRequest(max_model_len=1024)).engine_version == "vLLM v0.29+ (2026)"


def test_plain_plan_overhead_is_the_newest_vllm_and_says_so():
    from planner.overhead import OVERHEAD_PROFILE, estimate_overhead

    assert OVERHEAD_PROFILE == "vllm"
    newest = estimate_overhead(MODEL, 2, 1, gpu_memory_bytes=int(79.19 * GiB), gpu_name="H100")
    older = estimate_overhead(MODEL, 2, 1, gpu_memory_bytes=int(79.19 * GiB), gpu_name="H100", profile_id="vllm-v0.11")
    assert "vLLM v0.29+ (2026) profile run: 8,192 tokens, 1,024 sequences" in newest.formula
    assert "vLLM v0.11-v0.20 profile run: 8,192 tokens" in older.formula
    # the same pass; the older sampler (full sort, 38 B per logit) peaks above the forward pass:
    # 1,024 x 32,768 x 38 B + hidden states 8,192 x 1,024 x 2 B; the 2026 one (6 B) stays under it
    assert older.logits_bytes == 1024 * 32768 * 38 + 8192 * 1024 * 2
    assert newest.logits_bytes == 0 and newest.activation_bytes == forward_peak_bytes(MODEL, 8192, 2)
    with pytest.raises(ValueError, match="follows a vLLM profile"):
        estimate_overhead(MODEL, 2, 1, profile_id="sglang")


# --- small things ------------------------------------------------------------------------


@pytest.mark.parametrize("name,engine", [("vLLM", "vllm"), ("tensorrt-llm", "trtllm"), ("trt-llm", "trtllm"),
                                         ("TensorRT-LLM", "trtllm"), ("SGLang", "sglang"), ("llama-cpp", "llama.cpp")])
def test_engine_spellings(name, engine, capsys):
    from planner.cli import main
    from planner.engines import resolve_engine_name

    assert resolve_engine_name(name) == engine
    assert plan_engine(MODEL, 80 * GiB, EngineRequest(engine=name, max_model_len=1024)).engine == engine
    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--engine", name, "--format", "json"]) == 0
    capsys.readouterr()
    with pytest.raises(ValueError, match="unknown engine 'vlm'"):
        resolve_engine_name("vlm")


def test_trtllm_engine_built_in_fp16_takes_an_fp16_cache():
    fp16 = plan_engine(MODEL, 16 * GiB, EngineRequest(engine="trtllm-engine", max_model_len=1024,
                                                      kv_cache_dtype="fp16", available_kv_memory_bytes=GiB))
    assert fp16.kv_cache_dtype == "fp16" and fp16.engine_kv_cache_tokens == GiB // (16 * KiB) // 64 * 64
    assert "kv_cache_config: {dtype: float16}" in fp16.launch_command


def test_llamacpp_refusal_for_mla_does_not_suggest_the_q8_0_it_has():
    mla = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64)
    model = dense_model(num_layers=2, layers=(mla, mla))
    given_q8 = plan_engine(model, GiB, EngineRequest(engine="llama.cpp", max_model_len=1 << 20, kv_cache_dtype="q8_0"))
    assert not given_q8.starts
    assert "q8_0" not in given_q8.reasons[0] and "use -ctk q4_0" in given_q8.reasons[0]
    assert "-ctv" not in given_q8.reasons[0]  # MLA has no V cache
    given_f16 = plan_engine(model, GiB, EngineRequest(engine="llama.cpp", max_model_len=1 << 20))
    assert "use -ctk q8_0" in given_f16.reasons[0]


def test_llamacpp_separate_k_and_v_types():
    # Case L06's post: Qwen3-4B, -c 32768, -ctk q8_0 -ctv f16: 36 x (1088 + 2048) B x 32,768 = 3528.00 MiB
    from tests.test_engine_cases import qwen3_4b_geometry

    plan = plan_engine(qwen3_4b_geometry(), 24 * GiB, EngineRequest(
        engine="llama.cpp", max_model_len=32768, kv_cache_dtype="q8_0", kv_cache_dtype_v="fp16"))
    assert plan.available_kv_cache_bytes == 3528 * MiB
    assert "K (q8_0): 1224.00 MiB, V (f16): 2304.00 MiB" in plan.engine_log_lines[0]
    assert "-ctk q8_0 -ctv f16" in plan.launch_command
    with pytest.raises(ValueError, match="llama.cpp's -ctv only"):
        plan_engine(MODEL, 80 * GiB, EngineRequest(kv_cache_dtype_v="fp8"))


def test_llamacpp_recurrent_state_is_f32_per_sequence_whatever_the_kv_type():
    full = FullAttention(num_key_value_heads=8, head_dim=128)
    mamba = RecurrentState(conv_state_elements=8192 * 4, ssm_state_elements=8192 * 16)
    model = dense_model(num_layers=4, layers=(mamba, full, mamba, full))
    plan = plan_engine(model, 24 * GiB, EngineRequest(engine="llama.cpp", max_model_len=4096, max_num_seqs=2,
                                                      kv_cache_dtype="q8_0"))
    state = 2 * (8192 * 20 * 4) * 2  # 2 layers x 655,360 B of f32 R + S x 2 sequences
    kv = 2 * (2 * 8 * 128 * 34 // 32) * 4096  # 2 attention layers, q8_0 K and V, 2 streams of 2048 cells
    assert plan.available_kv_cache_bytes == kv + state
    line = next(x for x in plan.engine_log_lines if x.startswith("llama_memory_recurrent"))
    # R: 2 layers x 32,768 x 4 B x 2 sequences = 0.50 MiB; S: 2 x 131,072 x 4 B x 2 = 2.00 MiB
    assert "size =    2.50 MiB (     2 cells,   2 layers,  2 seqs), R (f32):    0.50 MiB, S (f32):    2.00 MiB" in line


@pytest.mark.parametrize(("dtype", "words"), [("nvfp4", "an NVFP4 checkpoint (ModelOpt hf_quant_config.json"),
                                              ("fp8_block128", "a block-scaled FP8 checkpoint")])
def test_launch_command_says_which_checkpoint_a_pre_quantized_dtype_needs(dtype, words):
    """No flag turns a 16-bit checkpoint into NVFP4 or block-scaled FP8: the command says what to serve instead."""
    from model_catalog.gpus import get_gpu

    gpu = get_gpu("nvidia-h100-sxm-80gb")
    for engine in ("vllm", "sglang"):
        result = plan_engine(model_spec("google/gemma-4-26B-A4B"), gpu.framework_memory_bytes,
                             EngineRequest(engine=engine, weight_dtype=dtype, max_model_len=8192))
        command, comment = result.launch_command.split("  # ", 1)
        assert "--quantization" not in command
        assert comment.startswith(f"{dtype} weights: serve {words}")


def test_pipeline_stages_hold_the_groups_of_their_own_layers():
    # DeepSeek-V3 (config first_k_dense_replace 3): the dense MLP groups name layers 0-2 and the routed
    # experts 3-60 (ParamGroup.layers, from the family adapter); a stage holds the tensors of its layers.
    from model_catalog import model_spec
    from planner.engines.loaded import pipeline_layer_ranges, stage_params

    model = model_spec("deepseek-ai/DeepSeek-V3")
    dense = next(g for g in model.params if g.name == "layers.*.mlp.gate_proj.weight")
    experts = next(g for g in model.params if g.name == "layers.*.mlp.experts.gate_up_proj")
    assert dense.layers == (0, 1, 2) and experts.layers == tuple(range(3, 61)) and experts.count == 58 * 256
    ranges = pipeline_layer_ranges(model.num_layers, 16)
    for stage, layers in enumerate(ranges):
        held = {g.name: g.count for g in stage_params(model, stage, 16)}
        assert held.get(dense.name, 0) == sum(1 for i in layers if i < 3)
        assert held.get(experts.name, 0) == 256 * sum(1 for i in layers if i >= 3)
    # over all stages every tensor is held exactly once
    total = sum(g.count for stage in range(16) for g in stage_params(model, stage, 16) if g.name == experts.name)
    assert total == experts.count
