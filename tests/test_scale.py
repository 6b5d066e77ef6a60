"""Data + expert parallel and decode context parallel (planner/scale/): placement, weights, printed figures.

Golden figures are startup prints quoted by public vLLM recipes (sources beside each fixture); the
available memory the engine printed pins the pool, so the KV arithmetic is checked exactly, as
scripts/bench_engine_cases.py does ("in rounding": some memory within the print's 0.005 GiB
reproduces the print).
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines.types import EngineRequest
from planner.scale import ScaleRequest, plan_scale, rank_layout
from planner.scale.context import MULTIPLY_LINE, check_dcp_model
from planner.units import GiB

N10 = {
    # vllm-project/recipes PR #12 (2025-08-04), Qwen3-Coder-480B-A35B-Instruct-FP8 recipe: 8 x H20 (141 GB),
    # vLLM v0.10.1.dev101, `vllm serve ... -dp 8 --enable-expert-parallel`, max_model_len 262144 (model
    # default). Printed: "Available KV cache memory: 48.66 GiB", 62.0 GiB KV needed for one 262,144-token
    # request, estimated maximum model length 205728; a second run at gpu_memory_utilization 0.95 printed
    # 55.65 GiB and 235296 (case [N10] of the shared engine case table, copied here with its source).
    "model": "Qwen/Qwen3-Coder-480B-A35B-Instruct", "weight_dtype": "fp8_block128", "gpu": "nvidia-h20-141gb",
    "engine": "vllm-v0.10", "max_model_len": 262144,
    "runs": ((0.9, 48.66, 205728), (0.95, 55.65, 235296)), "needed_gib": "62.00",
}

KIMI_DCP = {
    # vllm-project/recipes moonshotai/Kimi-K2-Think.md (PR #115, 2025-11-06): 8 x H200, TP 8, vLLM nightly
    # 2025-11 (~0.11.1). TP8: "Available KV cache memory: 46.80 GiB", "GPU KV cache size: 715,072 tokens";
    # TP8 + --decode-context-parallel-size 8: the same 46.80 GiB, "Multiplying the GPU KV cache size by the
    # dcp_world_size 8.", "GPU KV cache size: 5,721,088 tokens".
    "model": "moonshotai/Kimi-K2-Thinking", "gpu": "nvidia-h200-sxm", "engine": "vllm-v0.11", "tp": 8,
    "max_model_len": 262144, "available_gib": 46.80, "tokens": 715072, "tokens_dcp8": 5721088,
}


def _request(case: dict, **kw) -> EngineRequest:
    gpu = get_gpu(case["gpu"])
    fields = {"engine": case["engine"], "weight_dtype": case.get("weight_dtype", "auto"),
              "tensor_parallel_size": case.get("tp", 1), "max_model_len": case["max_model_len"], "gpu_name": gpu.name}
    return EngineRequest(**(fields | kw))


def _printed_range(gib: float, step: int):
    """Byte values inside the print's rounding: [gib - 0.005, gib + 0.005) GiB, every ``step`` bytes."""
    low, high = int((gib - 0.005) * GiB), int((gib + 0.005) * GiB)
    return range(low, high, step)


# --- placement (design notes of planner/scale/layout.py) ---------------------------------------------
def test_vllm_dp_ep_spreads_experts_over_dp_times_tp():
    layout = rank_layout(ScaleRequest(data_parallel_size=8, enable_expert_parallel=True), family="vllm",
                         tensor_parallel_size=1, num_experts=160, num_kv_heads=8)
    assert (layout.num_gpus, layout.attention_tp, layout.attention_dp) == (8, 1, 8)
    assert (layout.expert_parallel_size, layout.expert_tp, layout.local_experts) == (8, 1, 20)
    two = rank_layout(ScaleRequest(data_parallel_size=2, enable_expert_parallel=True, enable_eplb=True,
                                   num_redundant_experts=32), family="vllm", tensor_parallel_size=8,
                      num_experts=256, num_kv_heads=1)
    assert (two.num_gpus, two.expert_parallel_size, two.global_experts, two.local_experts, two.nodes) == (16, 16, 288,
                                                                                                          18, 2)


def test_vllm_dp_without_ep_tensor_splits_experts_over_the_whole_world():
    layout = rank_layout(ScaleRequest(data_parallel_size=4), family="vllm", tensor_parallel_size=2, num_experts=64,
                         num_kv_heads=4)
    assert (layout.expert_parallel_size, layout.expert_tp, layout.local_experts) == (1, 8, 64)


def test_uneven_experts_put_the_extra_one_on_the_first_ranks():
    layout = rank_layout(ScaleRequest(data_parallel_size=3, enable_expert_parallel=True), family="vllm",
                         tensor_parallel_size=1, num_experts=128, num_kv_heads=4)
    assert layout.local_experts == 43  # 128 = 43 + 43 + 42


@pytest.mark.parametrize(("scale", "match"), [
    (ScaleRequest(data_parallel_size=8, enable_expert_parallel=True, num_redundant_experts=8), "--enable-eplb"),
    (ScaleRequest(data_parallel_size=8, enable_expert_parallel=True, enable_eplb=True, num_redundant_experts=3),
     "over 64 expert-parallel GPUs; use --num-redundant-experts 32"),  # 160 + 32 = 3 x 64
    (ScaleRequest(data_parallel_size=8, enable_dp_attention=True), "SGLang flags"),
    (ScaleRequest(decode_context_parallel_size=3), "must divide"),
])
def test_bad_vllm_flags_name_the_fix(scale, match):
    with pytest.raises(ValueError, match=match):
        rank_layout(scale, family="vllm", tensor_parallel_size=8, num_experts=160, num_kv_heads=1)


def test_dcp_stays_within_tp_over_kv_heads():
    with pytest.raises(ValueError, match="use -dcp 2"):
        rank_layout(ScaleRequest(decode_context_parallel_size=4), family="vllm", tensor_parallel_size=8,
                    num_experts=0, num_kv_heads=4)


def test_sglang_dp_attention_lives_inside_tp():
    layout = rank_layout(ScaleRequest(data_parallel_size=8, enable_dp_attention=True, expert_parallel_size=8),
                         family="sglang", tensor_parallel_size=8, num_experts=256, num_kv_heads=1)
    assert (layout.num_gpus, layout.attention_tp, layout.attention_dp, layout.dense_tp) == (8, 1, 8, 8)
    assert (layout.expert_parallel_size, layout.expert_tp, layout.local_experts) == (8, 1, 32)
    plain = rank_layout(ScaleRequest(data_parallel_size=2), family="sglang", tensor_parallel_size=4, num_experts=0,
                        num_kv_heads=8)
    assert (plain.num_gpus, plain.attention_tp, plain.attention_dp) == (8, 4, 2)


# --- weights: the README's hand check ------------------------------------------------------------------
def test_deepseek_v32_dp8_ep_experts_per_gpu_by_hand():
    """256 experts / EP 8 = 32 per GPU; one expert 3 x 7,168 x 2,048 FP8 values + 3 x 56 x 16 fp32 block scales
    (fused gate_up 4,096 x 7,168: 32 x 56 blocks; down 7,168 x 2,048: 56 x 16) = 44,040,192 + 10,752 B; 58 MoE layers."""
    model = model_spec("deepseek-ai/DeepSeek-V3.2")
    gpu = get_gpu("nvidia-h200-sxm")
    request = EngineRequest(engine="vllm", tensor_parallel_size=1, max_model_len=8192, gpu_name=gpu.name)
    plan = plan_scale(model, gpu.framework_memory_bytes, request,
                      ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    per_expert = 3 * 7168 * 2048 + (32 * 56 + 56 * 16) * 4  # fused gate_up 4,096 rows, down
    assert per_expert == 44_050_944
    assert plan.weights.experts_per_layer == 32
    # the tensor bytes; the caching allocator's blocks of ~44 MB tensors add at most 2 MiB each
    assert 58 * 32 * per_expert <= plan.weights.routed_expert_bytes <= 58 * 32 * per_expert + 58 * 2 * 2**21
    assert plan.layout.num_gpus == 8 and plan.max_concurrency == round(plan.max_concurrency_per_rank * 8, 2)
    tp8 = plan_scale(model, gpu.framework_memory_bytes, EngineRequest(engine="vllm", tensor_parallel_size=8,
                     max_model_len=8192, gpu_name=gpu.name), ScaleRequest())
    # TP 8 keeps the same MLA latent on all 8 GPUs: one pool of users; DP 8 has eight, each smaller by the
    # 65,536 gathered tokens its MoE layers run in the profile pass (planner/scale/__init__.py, by hand)
    assert plan.moe_dispatch.peak_bytes == 16_980_639_744 and plan.moe_dispatch.group_bytes == 471 * 2**20
    assert plan.engine.available_kv_cache_bytes == 13_889_779_442 and plan.engine.num_gpu_blocks == 4_515
    assert (plan.max_concurrency_per_rank, plan.max_concurrency, tp8.max_concurrency) == (35.27, 282.16, 115.34)


# --- [N10]: DP8 + EP8 from the printed available memory ------------------------------------------------
@pytest.mark.parametrize(("util", "available_gib", "max_len"), N10["runs"])
def test_n10_dp8_ep8_per_rank_kv_reproduces_the_print(util, available_gib, max_len):
    model = model_spec(N10["model"])
    gpu = get_gpu(N10["gpu"])
    scale = ScaleRequest(data_parallel_size=8, enable_expert_parallel=True)
    lengths = set()
    for available in _printed_range(available_gib, 1 << 20):  # the print's rounding, 1 MiB apart
        plan = plan_scale(model, gpu.framework_memory_bytes,
                          _request(N10, gpu_memory_utilization=util, available_kv_memory_bytes=available), scale)
        lengths.add(plan.engine_max_model_len)
    assert max_len in lengths  # in rounding
    assert (plan.layout.num_gpus, plan.layout.attention_tp, plan.layout.local_experts) == (8, 1, 20)
    assert plan.engine.limiting_rank.kv_cache_bytes_per_token == 62 * 2 * 8 * 128 * 2  # all 8 KV heads on each rank
    assert not plan.starts and f"({N10['needed_gib']} GiB KV cache is needed" in plan.reasons[0]
    assert "--data-parallel-size 8" in plan.launch_command
    assert plan.launch_command.index("--enable-expert-parallel") < plan.launch_command.index("  # ")
    assert plan.max_concurrency == round(plan.max_concurrency_per_rank * 8, 2)


def test_n10_cold_start_weights_are_the_expert_share():
    """Without the print: the fullest GPU holds 20 of 160 experts of each of the 62 layers, all the rest whole."""
    model = model_spec(N10["model"])
    gpu = get_gpu(N10["gpu"])
    plan = plan_scale(model, gpu.framework_memory_bytes, _request(N10), ScaleRequest(data_parallel_size=8,
                      enable_expert_parallel=True))
    # 3 x 6,144 x 2,560 FP8 values + (2 x 20 x 48 + 48 x 20) x 4 B block scales per expert
    per_expert = 3 * 6144 * 2560 + (2 * 20 * 48 + 48 * 20) * 4
    assert 62 * 20 * per_expert <= plan.weights.routed_expert_bytes <= 62 * 20 * per_expert + 62 * 2 * 2**21
    assert plan.weights.total_bytes < 70 * GiB  # 480 B parameters in FP8 would be ~447 GiB on one GPU


# --- decode context parallel: the Kimi-K2-Thinking recipe -------------------------------------------------
def _kimi_tokens(dcp: int) -> set[int]:
    model = model_spec(KIMI_DCP["model"])
    gpu = get_gpu(KIMI_DCP["gpu"])
    seen = set()
    for available in _printed_range(KIMI_DCP["available_gib"], 1 << 20):
        plan = plan_scale(model, gpu.framework_memory_bytes, _request(KIMI_DCP, available_kv_memory_bytes=available),
                          ScaleRequest(decode_context_parallel_size=dcp))
        seen.add(plan.engine_kv_cache_tokens)
    return seen


def test_kimi_tp8_prints_715072_tokens_in_rounding():
    assert KIMI_DCP["tokens"] in _kimi_tokens(1)


def test_kimi_dcp8_multiplies_the_printed_tokens_in_rounding():
    tokens = _kimi_tokens(8)
    assert KIMI_DCP["tokens_dcp8"] in tokens
    assert all(t % (64 * 8) == 0 for t in tokens)  # blocks // groups x 64-token FlashMLA blocks x 8


def test_dcp_log_line_and_concurrency():
    model = model_spec(KIMI_DCP["model"])
    gpu = get_gpu(KIMI_DCP["gpu"])
    request = _request(KIMI_DCP, available_kv_memory_bytes=int(KIMI_DCP["available_gib"] * GiB))
    plain = plan_scale(model, gpu.framework_memory_bytes, request, ScaleRequest())
    dcp = plan_scale(model, gpu.framework_memory_bytes, request, ScaleRequest(decode_context_parallel_size=8))
    view = dcp.engine_view()
    assert MULTIPLY_LINE.format(dcp=8) in view.engine_log_lines
    assert f"GPU KV cache size: {dcp.engine_kv_cache_tokens:,} tokens" in view.engine_log_lines
    assert dcp.context.tokens_per_gpu_per_request == 262144 // 8
    assert dcp.max_concurrency == pytest.approx(plain.max_concurrency * 8, rel=0.01)
    assert "--decode-context-parallel-size 8" in dcp.launch_command


def test_dcp_refuses_sliding_window_models():
    with pytest.raises(ValueError, match="SlidingWindowAttention; decode context parallel is modelled for full"):
        check_dcp_model(model_spec("openai/gpt-oss-120b"))  # alternating 128-token windows
    check_dcp_model(model_spec(KIMI_DCP["model"]))  # MLA: allowed


def test_dcp_refuses_older_vllm():
    model = model_spec(KIMI_DCP["model"])
    gpu = get_gpu(KIMI_DCP["gpu"])
    with pytest.raises(ValueError, match="arrived in vLLM 0.11"):
        plan_scale(model, gpu.framework_memory_bytes, _request(KIMI_DCP, engine="vllm-v0.10"),
                   ScaleRequest(decode_context_parallel_size=8))


# Which attention backend vLLM picks, and whether it returns the decode log-sum-exp DCP needs, read in the published
# vLLM wheels v0.11.0-v0.34.0 (planner/scale/context.py module docstring): (model, GPU, profile, KV dtype, starts,
# the file or backend the refusal names).
DCP_BACKENDS = [
    ("deepseek-ai/DeepSeek-V3.2", "amd-mi300x", "vllm", "auto", False, "rocm_aiter_mla_sparse.py"),
    ("deepseek-ai/DeepSeek-V3.2", "amd-mi325x", "vllm", "bf16", False, "rocm_aiter_mla_sparse.py"),
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm", "vllm", "auto", True, ""),  # FlashMLA-sparse, v0.29+
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm", "vllm-v0.28", "auto", False, "flashmla_sparse.py"),
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm", "vllm", "bf16", False, "FLASH_ATTN_MLA_SPARSE"),
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-b200", "vllm", "bf16", True, ""),  # FlashMLA / FlashInfer sparse, v0.29+
    ("moonshotai/Kimi-K2-Thinking", "amd-mi325x", "vllm-v0.11", "auto", True, ""),  # ROCm's default TRITON_MLA
    ("Qwen/Qwen3-30B-A3B", "amd-mi325x", "vllm", "auto", False, "ROCM_ATTN"),
    ("Qwen/Qwen3-30B-A3B", "nvidia-h100-sxm-80gb", "vllm", "auto", True, ""),  # FLASH_ATTN
]


@pytest.mark.parametrize("model_id, gpu_id, engine, kv, starts, named", DCP_BACKENDS)
def test_dcp_runs_only_where_the_attention_backend_returns_the_decode_lse(model_id, gpu_id, engine, kv, starts, named):
    gpu = get_gpu(gpu_id)
    plan = plan_scale(model_spec(model_id), gpu.framework_memory_bytes,
                      EngineRequest(engine=engine, gpu_name=gpu.name, tensor_parallel_size=8, max_model_len=8192,
                                    kv_cache_dtype=kv), ScaleRequest(decode_context_parallel_size=2))
    assert plan.starts is starts, plan.reasons
    if not starts:
        assert named in plan.reasons[0] and "check_attention_cp_compatibility" in plan.reasons[0]


# --- CLI ---------------------------------------------------------------------------------------------
def test_cli_plan_dp_ep_adds_a_scale_block(capsys):
    args = ["plan", "--model", N10["model"], "--gpu", N10["gpu"], "--weight-dtype", "fp8_block128", "--engine",
            "vllm-v0.10", "--max-model-len", "262144", "--available-kv-memory-gib", "48.66"]
    assert main([*args, "-dp", "8", "--enable-expert-parallel", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_max_model_len"] == 205728
    assert out["scale"]["layout"]["local_experts"] == 20
    assert out["scale"]["max_concurrency"] == round(out["max_concurrency"] * 8, 2)
    assert out["weights_bytes_per_gpu"] < 100 * GiB  # the engine-free part prices one rank's share too
    assert out["params"] > 480e9  # the model's own count stays whole
    assert main([*args, "--format", "json"]) == 0
    assert "scale" not in json.loads(capsys.readouterr().out)


def test_cli_plan_with_dcp_budget_holds_the_scale_sections_users(capsys):
    """``plan -dcp 8`` printed "max users 46" (a cache that keeps every token on each GPU) above "scale users 375"
    for Kimi-K2.5 on 8 x H200 (QA); the budget section then said it priced the cache without -dcp. It now applies it
    (planner.context_budget: each GPU keeps ceil(L / 8) of a request's tokens) and holds the scale section's users,
    375 (floor of the printed 375.88x), within 1 % (the same budget, two code paths)."""
    args = ["plan", "--model", "moonshotai/Kimi-K2.5", "--gpu", "nvidia-h200-sxm", "--num-gpus", "8",
            "--context-len", "32768", "--kv-cache-dtype", "fp8", "--engine", "vllm", "--decode-context-parallel-size",
            "8", "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    users = out["scale"]["requests_all_ranks"]
    assert abs(out["max_concurrent_sequences"] - users) <= max(1, users // 100), (out["max_concurrent_sequences"], users)
    assert out["decode_context_parallel_size"] == 8
    assert not [n for n in out["notes"] if "without decode context parallel" in n]


DP_EP_LINKS = {  # QA: one shared -dp 8 --enable-expert-parallel link, the budget's users against the launch's
    "V3.2-H200": ["--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-h200-sxm", "--context-len", "32768",
                  "--kv-cache-dtype", "fp8", "--max-num-seqs", "64"],
    "K2.5-B200": ["--model", "moonshotai/Kimi-K2.5", "--gpu", "nvidia-b200", "--context-len", "65536"],
    "V3.2-B200": ["--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-b200", "--context-len", "32768"],
}


@pytest.mark.parametrize("name", sorted(DP_EP_LINKS))
def test_cli_plan_with_dp_ep_budget_charges_the_moe_profile_peak(capsys, name):
    """``plan -dp 8 --enable-expert-parallel`` printed "max users 19" above "scale users 9 per rank" for
    DeepSeek-V3.2 on an H200 at 32K (QA; 40 against 21 on a B200): the budget left out the data-parallel MoE layer's
    profile peak (every rank's tokens gathered, vllm_moe_dispatch), which vLLM's profile run holds. The budget now
    charges it: its users are the launch's per rank (within one), its overhead holds the scale section's peak, and
    no note says the budget leaves it out."""
    args = ["plan", *DP_EP_LINKS[name], "--engine", "vllm", "--data-parallel-size", "8", "--enable-expert-parallel",
            "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    scale = out["scale"]
    per_rank, peak = int(scale["max_concurrency_per_rank"]), scale["moe_dispatch"]["peak_bytes"]
    assert abs(out["max_concurrent_sequences"] - per_rank) <= 1, (out["max_concurrent_sequences"], per_rank)
    assert out["overhead_bytes"] > peak, (out["overhead_bytes"], peak)
    assert not [n for n in out["notes"] if "leaves out" in n and "MoE" in n], out["notes"]
    assert out["data_parallel"]["max_concurrent_sequences_per_replica"] == out["max_concurrent_sequences"]


@pytest.mark.parametrize(("flags", "match"), [
    (["--engine", "sglang", "--data-parallel-size", "8"], "SGLang spells it --dp-size"),
    (["--engine", "vllm", "--ep-size", "8"], "vLLM spells it --enable-expert-parallel"),
    (["--engine", "vllm", "-dp", "8", "--enable-eplb", "--num-redundant-experts", "3", "--enable-expert-parallel"],
     "--num-redundant-experts 8"),
])
def test_cli_bad_scale_flags_are_one_line(capsys, flags, match):
    assert main(["plan", "--model", N10["model"], "--gpu", N10["gpu"], *flags]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_dcp_decoding_count_is_the_shards_not_the_whole_lengths():
    """With -dcp 8 each GPU keeps 1/8 of every request, so the requests that decode at once are the shard's: for an
    MLA model (no sliding window) the same as the printed concurrency, not that figure / 8 (QA: 2.94 beside 23.49x
    for Kimi-K2.5 on 8 x H200 at 262,144 tokens)."""
    model = model_spec("moonshotai/Kimi-K2.5")
    gpu = get_gpu("nvidia-h200-sxm")
    request = EngineRequest(engine="vllm", gpu_name=gpu.name, tensor_parallel_size=8, max_model_len=262144)
    dcp = plan_scale(model, gpu.framework_memory_bytes, request, ScaleRequest(decode_context_parallel_size=8))
    view = dcp.engine_view()
    assert dcp.max_concurrency_per_rank > 20
    assert not view.decodes_more_than_printed
    assert view.max_concurrency_decoding is None or \
        view.max_concurrency_decoding == pytest.approx(dcp.max_concurrency_per_rank, abs=0.01)


def test_dcp_words_the_mla_note_for_the_token_split():
    """QA (stop 47): under -dcp the Engine page said the MLA latent "is replicated on every tensor-parallel GPU" beside
    the note that -dcp splits it along tokens."""
    from planner.engines.vllm_kv_formats import MLA_REPLICATED_NOTE  # noqa: PLC0415

    model, gpu = model_spec(KIMI_DCP["model"]), get_gpu(KIMI_DCP["gpu"])
    request = _request(KIMI_DCP)
    plain = plan_scale(model, gpu.framework_memory_bytes, request, ScaleRequest())
    dcp = plan_scale(model, gpu.framework_memory_bytes, request, ScaleRequest(decode_context_parallel_size=8))
    assert MLA_REPLICATED_NOTE in plain.engine_view().notes
    assert MLA_REPLICATED_NOTE not in dcp.engine_view().notes
    assert any("-dcp 8 splits each request's latent along tokens" in n for n in dcp.engine_view().notes)
