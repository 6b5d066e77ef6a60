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


def test_trtllm_says_it_leaves_a_hybrid_s_recurrent_states_out():
    """TensorRT-LLM keeps Mamba / linear-attention states in its hybrid cache manager, beside the paged KV pool
    (tensorrt_llm/_torch/pyexecutor/mamba_cache_manager.py); the view prices the attention layers' KV only, and
    now says so where it used to be silent (QA: Qwen3.5-27B 11.63x against vLLM's 7.78x)."""
    hybrid = plan_engine(model_spec("Qwen/Qwen3.5-27B"), 80 * GiB, EngineRequest(engine="trtllm", max_model_len=32768))
    assert any("mamba_cache_manager.py" in n and "not priced" in n for n in hybrid.notes), hybrid.notes
    dense = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), 80 * GiB, EngineRequest(engine="trtllm"))
    assert not any("mamba_cache_manager.py" in n for n in dense.notes)


def test_an_llm_class_plan_s_command_carries_its_token_budget():
    """`--usage-context llm` plans the offline LLM class's max_num_batched_tokens; the `vllm serve` command it
    prints must say it, or serve's smaller default gives another pool (QA: Qwen3-8B on an L40S, 8,192 planned, the
    command got 2,048)."""
    model = model_spec("Qwen/Qwen3-8B")
    llm = plan_engine(model, 44 * GiB, EngineRequest(engine="vllm", max_model_len=32768, usage_context="llm",
                                                       gpu_name="L40S"))
    served = plan_engine(model, 44 * GiB, EngineRequest(engine="vllm", max_model_len=32768, gpu_name="L40S"))
    assert f"--max-num-batched-tokens {llm.max_num_batched_tokens}" in llm.launch_command
    assert llm.max_num_batched_tokens != served.max_num_batched_tokens
    assert "--max-num-batched-tokens" not in served.launch_command
