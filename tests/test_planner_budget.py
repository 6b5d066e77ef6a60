"""Budget, capacity, users and max context on a hand-checkable model.

The factory model (tests/factories.py) has 4 layers x 8 KV heads x 128 dims, so
one bf16 token costs 4 x 2 x 8 x 128 x 2 = 16,384 B (16 KiB), and
134,226,944 parameters (268,453,888 B in bf16).
"""

import pytest

from planner.budget import PlanRequest, max_context_len, plan
from planner.engines.profiles import engine_profile
from planner.model.kv import attention_variants, cache_dtypes, kv_profile
from planner.overhead import estimate_overhead
from planner.sweep import catalog_sweep, concurrency_curve, context_points, memory_curve
from planner.units import GiB, MiB
from tests.factories import dense_model

MODEL = dense_model()
WEIGHTS = 268_453_888
PER_TOKEN = 16_384


def exact_request(**kw) -> PlanRequest:
    """No overhead, whole card usable: the budget is memory minus weights."""
    base = dict(context_len=1024, gpu_memory_utilization=1.0, overhead_bytes=0)
    base.update(kw)
    return PlanRequest(**base)


def test_factory_counts():
    assert MODEL.num_parameters == 134_226_944
    assert MODEL.attention_kind == "MHA"


def test_eight_gib_budget_holds_524288_tokens_and_512_sequences_of_1024():
    result = plan(MODEL, WEIGHTS + 8 * GiB, exact_request())
    assert result.weights_bytes == WEIGHTS
    assert result.kv_cache_bytes_per_token == PER_TOKEN
    assert result.kv_cache_budget_bytes == 8 * GiB
    assert result.kv_cache_capacity_tokens == 8 * GiB // PER_TOKEN == 524_288
    assert result.kv_cache_bytes_per_sequence == 1024 * PER_TOKEN == 16 * MiB
    assert result.max_concurrent_sequences == 512
    assert result.max_context_len == 524_288
    assert result.max_context_len_limited_by == "memory"
    assert result.fits


def test_one_token_past_a_block_costs_a_whole_block():
    # 1025 tokens -> 65 blocks of 16 = 1040 slots x 16 KiB = 16.25 MiB; 8 GiB / 16.25 MiB = 504.6
    result = plan(MODEL, WEIGHTS + 8 * GiB, exact_request(context_len=1025))
    assert result.max_concurrent_sequences == 504
    assert result.kv_cache_bytes_per_sequence == 1025 * PER_TOKEN  # reported exactly, unrounded


def test_budget_one_byte_short_of_a_block_loses_that_block():
    budget = 8 * GiB - 1
    result = plan(MODEL, WEIGHTS + budget, exact_request())
    assert result.kv_cache_capacity_tokens == 524_288 - 16


def test_max_context_halves_with_batch_two():
    result = plan(MODEL, WEIGHTS + 8 * GiB, exact_request(batch_size=2))
    assert result.max_context_len == 262_144


def test_utilization_and_overhead_come_off_the_card():
    mem = 10 * GiB
    result = plan(MODEL, mem, exact_request(gpu_memory_utilization=0.9, overhead_bytes=GiB))
    assert result.usable_memory_bytes == int(mem * 0.9)
    assert result.kv_cache_budget_bytes == int(mem * 0.9) - WEIGHTS - GiB
    assert result.overhead_overridden


def test_weights_that_do_not_fit_give_reasons_and_knobs():
    result = plan(MODEL, WEIGHTS // 2, exact_request())
    assert not result.fits
    assert result.max_concurrent_sequences == 0
    assert result.kv_cache_capacity_tokens == 0
    assert any("weights" in r for r in result.reasons)
    assert any("num_gpus" in s or "weight_dtype" in s for s in result.suggestions)


def test_batch_too_large_suggests_the_batch_that_fits():
    result = plan(MODEL, WEIGHTS + 8 * GiB, exact_request(batch_size=513))
    assert not result.fits
    assert "lower batch_size to 512 (fits at this context)" in result.suggestions


def test_context_beyond_model_limit_does_not_fit():
    model = dense_model(max_position_embeddings=4096)
    result = plan(model, WEIGHTS + 8 * GiB, exact_request(context_len=8192))
    assert not result.fits
    assert "max_position_embeddings 4,096" in result.reasons[0]
    assert result.max_context_len == 4096
    assert result.max_context_len_limited_by == "model"


def test_tensor_parallel_splits_weights_and_kv_heads():
    result = plan(MODEL, WEIGHTS + 8 * GiB, exact_request(num_gpus=2))
    norms = 9 * 1024 * 2  # 9 RMSNorm vectors of 1024 bf16 values stay replicated
    assert result.weights_bytes_per_gpu == (WEIGHTS - norms) // 2 + norms
    assert result.kv_cache_bytes_per_token_per_gpu == PER_TOKEN // 2
    assert result.kv_cache_bytes_total == 2 * result.kv_cache_bytes_per_sequence_per_gpu


def test_tensor_parallel_past_kv_heads_replicates():
    model = dense_model(num_key_value_heads=2, num_attention_heads=16)
    result = plan(model, 80 * GiB, exact_request(num_gpus=4))
    assert result.kv_cache_bytes_per_token_per_gpu == 4 * 2 * 1 * 128 * 2
    assert any("replicated" in n for n in result.notes)


def test_sliding_window_model_context_is_limited_by_the_model_not_memory():
    model = dense_model(sliding_window=4096, max_position_embeddings=32768)
    result = plan(model, WEIGHTS + 8 * GiB, exact_request(context_len=32768))
    assert result.kv_cache_bytes_per_sequence == 4096 * PER_TOKEN
    assert result.max_context_len == 32768
    assert result.max_context_len_limited_by == "model"


def test_before_overheads_uses_the_whole_card():
    result = plan(MODEL, WEIGHTS + 8 * GiB, PlanRequest(context_len=1024))
    assert result.max_context_len_before_overheads == 8 * GiB // PER_TOKEN
    assert result.max_context_len < result.max_context_len_before_overheads


@pytest.mark.parametrize(("field", "value", "message"), [
    ("context_len", 0, "context_len must be at least 1"),
    ("batch_size", 0, "batch_size must be at least 1"),
    ("num_gpus", 0, "num_gpus must be at least 1"),
    ("gpu_memory_utilization", 1.5, r"gpu_memory_utilization must be in \(0, 1\]"),
    ("gpu_memory_utilization", 0.0, r"gpu_memory_utilization must be in \(0, 1\]"),
    ("block_size", 0, "block_size must be at least 1"),
    ("weight_dtype", "int3", "unknown weight dtype"),
    ("kv_cache_dtype", "fp4x", "unknown KV-cache dtype"),
    ("overhead_bytes", -1, "overhead must be >= 0"),
])
def test_bad_requests_raise_value_error_with_message(field, value, message):
    with pytest.raises(ValueError, match=message):
        plan(MODEL, 8 * GiB, exact_request(**{field: value}))


def test_zero_memory_raises():
    with pytest.raises(ValueError, match="gpu_memory_bytes must be > 0"):
        plan(MODEL, 0, exact_request())


def test_max_context_binary_search_boundaries():
    profile = kv_profile(MODEL, cache_dtypes(MODEL, "bf16", "auto"), 1, 1)
    assert max_context_len(profile, 100 * PER_TOKEN, 1, 10**6) == 100
    assert max_context_len(profile, 100 * PER_TOKEN - 1, 1, 10**6) == 99
    assert max_context_len(profile, PER_TOKEN - 1, 1, 10**6) == 0
    assert max_context_len(profile, -5, 1, 10**6) == 0
    assert max_context_len(profile, 10**12, 1, 4096) == 4096


def test_fp8_kv_halves_per_token_and_doubles_users():
    bf = plan(MODEL, WEIGHTS + 8 * GiB, exact_request())
    f8 = plan(MODEL, WEIGHTS + 8 * GiB, exact_request(kv_cache_dtype="fp8"))
    assert f8.kv_cache_bytes_per_token * 2 == bf.kv_cache_bytes_per_token
    assert f8.max_concurrent_sequences == 2 * bf.max_concurrent_sequences


def test_int4_weights_keep_embeddings_16_bit():
    result = plan(MODEL, 80 * GiB, exact_request(weight_dtype="int4"))
    embeddings = 2 * 32768 * 1024 * 2  # embed_tokens + lm_head stay bf16
    assert embeddings < result.weights_bytes < WEIGHTS


def test_overhead_estimate_takes_the_larger_of_forward_and_sampler_peaks():
    """On model runner V1 (vllm-v0.28 runs an MoE / hybrid model there; here a V1-only release) the sampler
    peak per logit is the profile's constant; the larger peak is the activation term."""
    profile = engine_profile("vllm-v0.11")
    est = estimate_overhead(MODEL, 2, 1, max_num_batched_tokens=1024, max_num_seqs=256, profile_id=profile.id)
    # forward: 1024 tokens x 2 B x (3 x 1024 + max(attention 2 x 1024 + 2 x 1024, mlp 3 x 4096)) = 31,457,280 B
    # sampler: min(256, 1024) x 32,768 vocab x the profile's bytes per logit + 1024 x 1024 x 2 B
    sampler = 256 * 32768 * profile.sampler_bytes_per_logit + 1024 * 1024 * 2
    assert sampler > 31_457_280
    assert est.activation_bytes == 0 and est.logits_bytes == sampler
    assert est.runtime_bytes == 133 * MiB  # vLLM non-torch memory, one GPU
    assert estimate_overhead(MODEL, 2, 2, profile_id=profile.id).runtime_bytes == (133 + 430) * MiB  # + NCCL
    assert est.cudagraph_bytes == est.runner_bytes == 0  # v0.11 captures its graphs after sizing the KV cache
    assert est.total_bytes == est.activation_bytes + est.logits_bytes + est.runtime_bytes


def test_default_overhead_is_the_engine_view_s_so_home_and_engine_agree():
    """QA round (issue 27, "one link, one answer"): Home said "KV budget 55.34 GiB, 55 users" for Llama 3 8B on
    an H100 while the Engine page, both naming the newest vLLM, said 53.95 GiB and 53.95x: the budget left out
    the CUDA graphs vLLM v0.29+ estimates before sizing the KV cache, model runner V2's sampler state and a
    first launch's compile. The budget now takes those terms from the Engine view's own functions."""
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines import EngineRequest, plan_engine

    model, gpu = model_spec("meta-llama/Meta-Llama-3-8B"), get_gpu("nvidia-h100-sxm-80gb")
    budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192), gpu_id=gpu.id)
    engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(engine="vllm", gpu_name=gpu.name,
                                                                          max_model_len=8192))
    (rank,) = engine.ranks
    assert budget.cudagraph_bytes == rank.cudagraph_bytes > 0
    assert budget.runner_bytes == rank.runner_state_bytes + rank.first_compile_bytes > 0
    assert budget.activation_bytes + budget.logits_bytes == rank.activation_bytes - budget.runner_bytes
    assert budget.runtime_bytes == rank.non_torch_bytes
    # The weights stay the checkpoint's bytes; what vLLM's loaded tensors take beyond them (here the caching
    # allocator's rounding of their blocks, 2.2 MB) is an overhead term, so the KV budgets are the same.
    assert budget.weights_bytes_per_gpu + budget.loading_bytes == rank.weights_bytes
    assert 0 < budget.loading_bytes < 4 * MiB
    assert budget.kv_cache_budget_bytes == rank.available_kv_cache_bytes
    assert budget.overhead_bytes == (budget.activation_bytes + budget.logits_bytes + budget.runtime_bytes
                                     + budget.cudagraph_bytes + budget.runner_bytes + budget.loading_bytes)


@pytest.mark.parametrize(("model_id", "gpu_id", "tp"), [
    ("openai/gpt-oss-120b", "nvidia-a100-sxm-80gb", 1),  # Marlin's padded MXFP4 experts on Ampere: 5.2 GiB more
    ("openai/gpt-oss-120b", "nvidia-h100-sxm-80gb", 1),
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm", 8),  # MLA kept whole, NVLS buffers of TP 8
    ("meta-llama/Meta-Llama-3.1-70B", "nvidia-a100-pcie-80gb", 2),  # a PCIe pair
    ("google/gemma-3-27b-it", "nvidia-l40s", 2),
])
def test_plan_and_engine_view_size_the_same_kv_budget(model_id, gpu_id, tp):
    """QA round 2: gpt-oss-120b on an A100 had an 8.80 GiB budget on Home and 3.60 GiB on the Engine page (vLLM
    loads 65.97 GiB of weights where the checkpoint holds 60.77). The plan charges that difference and the
    topology's NCCL buffers as the Engine view does, so every page sizes the same KV cache for the newest vLLM."""
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines import EngineRequest, plan_engine

    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=tp), gpu_id=gpu.id)
    engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", gpu_name=gpu.name, max_model_len=8192, tensor_parallel_size=tp))
    rank = engine.ranks[0]
    assert budget.kv_cache_budget_bytes == rank.available_kv_cache_bytes
    assert budget.weights_bytes_per_gpu + budget.loading_bytes == rank.weights_bytes


def test_attention_variants_of_gqa_model():
    model = dense_model(num_attention_heads=32, num_key_value_heads=8, hidden_size=4096)
    variants = {v.name: v for v in attention_variants(model)}
    assert set(variants) == {"MHA", "GQA", "MQA"}
    assert variants["GQA"].as_built
    bf = cache_dtypes(model, "bf16", "auto")
    per_token = {name: kv_profile(v.model, bf).bytes_per_token for name, v in variants.items()}
    assert per_token["MHA"] == 4 * per_token["GQA"] == 32 * per_token["MQA"]


def test_sweeps_agree_with_plan():
    request = PlanRequest(context_len=1024)
    contexts = context_points(128, 65536, 16)
    mem = 24 * GiB
    users = concurrency_curve(MODEL, mem, request, contexts)
    for c, u in zip(contexts, users):
        assert u == plan(MODEL, mem, PlanRequest(context_len=c)).max_concurrent_sequences
    assert catalog_sweep((MODEL,), (mem,), request, contexts)[0][0] == users
    curve = memory_curve(MODEL, request, contexts)
    assert [p.kv_cache_bytes for p in curve] == [c * PER_TOKEN for c in contexts]


def test_context_points_are_sorted_and_inclusive():
    pts = context_points(128, 131072, 64)
    assert pts[0] == 128 and pts[-1] == 131072
    assert list(pts) == sorted(set(pts))
    with pytest.raises(ValueError):
        context_points(0, 10, 5)


# --- the default overhead follows vLLM's scheduler defaults for the GPU ---------------------------


def _catalog(model_id: str, gpu_id: str):
    from model_catalog import get_gpu as catalog_gpu
    from model_catalog import model_spec

    return model_spec(model_id), catalog_gpu(gpu_id)


def test_default_overhead_profiles_2048_tokens_on_small_gpus_and_a100s():
    from planner.engines.profiles import vllm_scheduler_defaults

    v011 = engine_profile("vllm-v0.11")
    model, rtx3090 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-rtx-3090")
    _, h100 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-h100-sxm-80gb")
    _, a100 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-a100-sxm-80gb")
    assert vllm_scheduler_defaults(v011, rtx3090.framework_memory_bytes, rtx3090.id, 0) == (2048, 256)
    assert vllm_scheduler_defaults(v011, a100.framework_memory_bytes, a100.id, 0) == (2048, 256)
    small = estimate_overhead(model, 2, gpu_memory_bytes=rtx3090.framework_memory_bytes, gpu_name=rtx3090.id)
    assert small == estimate_overhead(model, 2, max_num_batched_tokens=2048, max_num_seqs=256)
    assert estimate_overhead(model, 2, gpu_memory_bytes=a100.framework_memory_bytes, gpu_name=a100.id) == small
    large = estimate_overhead(model, 2, gpu_memory_bytes=h100.framework_memory_bytes, gpu_name=h100.id)
    assert large == estimate_overhead(model, 2)  # no GPU given: the large-GPU defaults, as before
    assert small.total_bytes < large.total_bytes
    assert "2,048 tokens, 256 sequences" in small.formula


def test_llama31_8b_on_rtx_3090_at_20000_tokens_fits_as_the_v01_server_did():
    # Reference case V01 (shared/reference/engine_cases.csv): vLLM started this setup with 3.81 GiB of
    # KV cache under its V0 profile pass of 20,000 tokens; vLLM 0.11 profiles 2,048 tokens on a 24 GB card,
    # so its budget is larger still. The plan must not call it "does not fit".
    model, rtx3090 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-rtx-3090")
    result = plan(model, rtx3090.framework_memory_bytes, PlanRequest(context_len=20000), gpu_id=rtx3090.id)
    assert result.fits, result.reasons
    assert result.kv_cache_budget_bytes > int(3.81 * GiB)
    # An A100 80GB is profiled like a small GPU (vLLM's A100 exception), known by its id or name.
    _, a100 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-a100-sxm-80gb")
    by_id = plan(model, a100.framework_memory_bytes, PlanRequest(context_len=20000), gpu_id=a100.id)
    by_memory_only = plan(model, a100.framework_memory_bytes, PlanRequest(context_len=20000))
    assert by_id.overhead_bytes == result.overhead_bytes < by_memory_only.overhead_bytes


def test_h100_default_overhead_still_matches_the_v20_breakdown():
    # V20: Llama-3.1-8B, H100 80GB, 0.9, 16,000 tokens, block 128: a late-2025 vLLM (the v0.11-v0.20 profile)
    # printed 51.38 GiB of KV cache; the plain plan with that version's profile pass lands on it. The default
    # plan follows the newest vLLM, whose dummy sampler skips top-k / top-p (planner/engines/profiles.py).
    model, h100 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-h100-sxm-80gb")
    older = estimate_overhead(model, 2, 1, gpu_memory_bytes=h100.framework_memory_bytes, gpu_name=h100.name,
                              profile_id="vllm-v0.11")
    result = plan(model, h100.framework_memory_bytes,
                  PlanRequest(context_len=16000, block_size=128, overhead_bytes=older.total_bytes), gpu_id=h100.id)
    assert abs(result.kv_cache_budget_bytes / GiB - 51.38) < 0.01 * 51.38
    newest = plan(model, h100.framework_memory_bytes, PlanRequest(context_len=16000, block_size=128), gpu_id=h100.id)
    assert newest.kv_cache_budget_bytes > result.kv_cache_budget_bytes


def test_sweeps_use_the_gpu_size_class_like_plan():
    model, l4 = _catalog("Qwen/Qwen3-8B", "nvidia-l4")
    request = PlanRequest(context_len=8192)
    contexts = (1024, 8192)
    curve = concurrency_curve(model, l4.framework_memory_bytes, request, contexts, l4.id)
    single = plan(model, l4.framework_memory_bytes, PlanRequest(context_len=8192), gpu_id=l4.id)
    assert curve[-1] == single.max_concurrent_sequences > 0
    swept = catalog_sweep((model,), (l4.framework_memory_bytes,), request, contexts)
    assert swept[0][0] == curve


def test_tensor_parallel_size_that_cannot_split_the_heads_reports_no_capacity():
    # Llama 3 8B: 32 query heads, 8 KV heads; vLLM refuses tensor_parallel_size 3
    # (vllm/config/model.py verify_with_parallel_config), so no users fit at all.
    model, h100 = _catalog("meta-llama/Meta-Llama-3-8B", "nvidia-h100-sxm-80gb")
    result = plan(model, h100.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=3), gpu_id=h100.id)
    assert not result.fits and any("cannot split" in r for r in result.reasons)
    assert result.max_concurrent_sequences == result.kv_cache_capacity_tokens == result.max_context_len == 0
    assert result.max_context_len_limited_by == "tensor_parallel"
    assert "use num_gpus 1 or 2 or 4 or 8 or 16 or 32" in result.suggestions
    # A huge size is answered at once (no search over every size up to it).
    huge = plan(model, h100.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=1 << 40), gpu_id=h100.id)
    assert not huge.fits and huge.max_concurrent_sequences == 0


def test_too_large_a_batch_suggests_the_smallest_gpu_count_that_holds_it():
    model, rtx3090 = _catalog("meta-llama/Meta-Llama-3.1-8B", "nvidia-rtx-3090")
    mem = rtx3090.framework_memory_bytes

    def run(n: int):
        return plan(model, mem, PlanRequest(context_len=8192, batch_size=100, num_gpus=n), gpu_id=rtx3090.id)

    suggestion = next(s for s in run(1).suggestions if s.startswith("use num_gpus"))
    n = int(suggestion.split()[2])
    assert run(n).fits
    smaller = [k for k in (2, 4, 8) if k < n]
    assert smaller and not any(run(k).fits for k in smaller)


@pytest.mark.parametrize("model_id, method, context_len, batch_size", [
    ("Qwen/Qwen3.5-27B", "mtp", 4_096, 400),  # a hybrid: MTP keeps 1 + k state pages per sequence
    ("Qwen/Qwen3.5-27B", "eagle3", 8_192, 64),
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "mtp", 4_096, 400),
    ("meta-llama/Meta-Llama-3.1-8B", "eagle3", 32_768, 64),
])
def test_the_gpu_count_advice_holds_the_batch_with_its_serving_features(model_id, method, context_len, batch_size):
    """The "use num_gpus N (the smallest count that holds this batch)" fix is planned with the request's serving
    features, as plan() plans N: Qwen3.5-27B + MTP k=3 at 400 x 4,096 on an H100 was told 4 GPUs, where 4 hold
    54 GiB of the 92 GiB its sequences need (the advice priced neither the drafter nor MTP's state pages)."""
    from dataclasses import replace

    from planner.serving import ServingFeatures, SpeculativeConfig

    model, h100 = _catalog(model_id, "nvidia-h100-sxm-80gb")
    extra = {"num_mtp_layers": 1} if method == "mtp" else {}
    features = ServingFeatures(speculative=SpeculativeConfig(method=method, num_speculative_tokens=3, **extra))
    request = PlanRequest(context_len=context_len, batch_size=batch_size, serving=features)
    one = plan(model, h100.framework_memory_bytes, request, gpu_id=h100.id)
    assert not one.fits
    advice = next(s for s in one.suggestions if str(s).startswith("use num_gpus"))
    n = int(str(advice).split()[2])
    assert plan(model, h100.framework_memory_bytes, replace(request, num_gpus=n), gpu_id=h100.id).fits
    smaller = [k for k in range(2, n) if plan(model, h100.framework_memory_bytes, replace(request, num_gpus=k),
                                              gpu_id=h100.id).fits]
    assert not smaller, f"{smaller} GPUs already hold the batch"


@pytest.mark.parametrize(("context_len", "batch_size"), [(8_192, 16), (8_192, 1), (32_768, 64)])
def test_when_the_weights_do_not_fit_the_gpu_count_advice_holds_the_batch_too(context_len, batch_size):
    """Llama-3.1-70B (131 GiB of bf16 weights) on one H100: the weights fix "use num_gpus 2" was the smallest count
    that holds the *weights*; at 64 x 32,768 two GPUs keep 1.6 GiB for the KV cache, so the advice led to another
    "does not fit". The count offered is the smallest whose plan fits this batch, or, where no count up to 64 does,
    the fix says that it holds the weights only."""
    from dataclasses import replace

    model, h100 = _catalog("meta-llama/Meta-Llama-3.1-70B", "nvidia-h100-sxm-80gb")
    request = PlanRequest(context_len=context_len, batch_size=batch_size)
    one = plan(model, h100.framework_memory_bytes, request, gpu_id=h100.id)
    assert not one.fits and one.kv_cache_budget_bytes < 0  # the weights alone do not fit
    advice = next(s for s in one.suggestions if getattr(s, "key", None) == "num_gpus")
    fits = {k: plan(model, h100.framework_memory_bytes, replace(request, num_gpus=k), gpu_id=h100.id).fits
            for k in (2, 4, 8, 16, 32, 64)}
    holding = [k for k, ok in fits.items() if ok]
    if holding:
        assert advice.value == holding[0] and "holds this batch" in advice, (advice, holding)
    else:
        assert advice.value == 2 and "not this batch" in advice, advice


def test_checked_fixes_fit_start_or_say_so_least_change_first():
    """Issue "One link, one answer" item 5 (gpt-oss-120b, 131,072 tokens, batch 3, one A100 SXM 80GB, vLLM):
    every offered fix, applied, fits and starts vLLM ("Batch → 2" fits the budget while vLLM still refuses:
    left out); the least change first. The Engine page's refusal fixes carry vLLM's own figures."""
    from dataclasses import replace

    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.budget import PlanRequest, plan
    from planner.engines import EngineRequest, plan_engine
    from planner.fixes import ENGINE_FIELDS, checked_fixes, engine_fixes

    model, gpu = model_spec("openai/gpt-oss-120b"), get_gpu("nvidia-a100-sxm-80gb")
    request = PlanRequest(context_len=131_072, batch_size=3)
    base = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    engine_request = EngineRequest(engine="vllm", gpu_name=gpu.name, max_model_len=131_072)
    fixes = checked_fixes(model, gpu.framework_memory_bytes, request, base, engine_request, gpu_id=gpu.id)
    assert fixes and "GPUs → 2" in [f.label for f in fixes] and "batch_size" not in [f.fix.key for f in fixes]
    for f in fixes:
        assert plan(model, gpu.framework_memory_bytes, replace(request, **{f.fix.key: f.fix.value}), gpu_id=gpu.id).fits
        field = ENGINE_FIELDS[f.fix.key]
        assert f.starts and plan_engine(model, gpu.framework_memory_bytes,
                                        replace(engine_request, **{field: f.fix.value})).starts
        assert len(f.label) < 24
    assert [f.change for f in fixes] == sorted(f.change for f in fixes)
    refused = plan_engine(model, gpu.framework_memory_bytes, engine_request)
    offered = engine_fixes(model, gpu.framework_memory_bytes, engine_request, refused)
    two = plan_engine(model, gpu.framework_memory_bytes, replace(engine_request, tensor_parallel_size=2))
    assert (f"2 GPUs (tensor parallel 2): starts with {two.max_concurrency:.2f}x concurrency at 131,072 tokens per "
            "request") in [str(f.fix) for f in offered]
    assert all(f.starts for f in offered) and [f.change for f in offered] == sorted(f.change for f in offered)
