"""Engine plans as each version runs them: the profile pass (scheduler defaults, eager mode, the
version named), and engine specifics: spellings, TensorRT-LLM's fp16 engine, llama.cpp's K / V and
recurrent types, launch commands for pre-quantized dtypes, pipeline stages' weight groups.

Models: the factory model of ``tests/test_engines.py`` (tests/factories.py) unless a test names one.
"""

from __future__ import annotations

import pytest

from model_catalog import model_spec
from planner.engines import EngineRequest, plan_engine
from planner.engines.overheads import forward_peak_bytes
from planner.engines.profiles import ENGINE_CHOICES, engine_profile, vllm_scheduler_defaults
from planner.model.layers import FullAttention, MLAAttention, RecurrentState
from planner.units import GiB, KiB, MiB
from tests.factories import dense_model

MODEL = dense_model()


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
