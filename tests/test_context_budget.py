"""The budget under decode context parallel (vLLM ``-dcp``; planner/context_budget.py).

QA (stop 44): DeepSeek-V3.2 on 8 H200 at 131,072 tokens, fp8, ``decode_context_parallel_size=8``: the Engine page
held 57.67x while Home, Concurrency and ``plan``'s budget section held 7 users. Expected figures come from the
engine view's own code path (:func:`planner.scale.plan_scale`, :func:`planner.engines.plan_engine`) or from plain
:func:`planner.plan` calls, never from the function under test.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.cli import main
from planner.engines.types import EngineRequest
from planner.scale import ScaleRequest, plan_scale

H200 = get_gpu("nvidia-h200-sxm")
V32 = model_spec("deepseek-ai/DeepSeek-V3.2")
LLAMA_8B = model_spec("meta-llama/Meta-Llama-3.1-8B")  # config: 8 KV heads
LLAMA_405B = model_spec("meta-llama/Meta-Llama-3.1-405B")  # config: 126 layers, 8 KV heads
GEMMA = model_spec("google/gemma-3-27b-it")  # sliding-window layers
LENGTH = 131_072


def _dcp(model, num_gpus: int, dcp: int, **more):
    from planner.context_budget import plan_context_parallel

    pp = more.pop("pp", 1)
    request = PlanRequest(context_len=more.pop("context_len", LENGTH), num_gpus=num_gpus, **more)
    return plan_context_parallel(model, H200.framework_memory_bytes, request, H200.id,
                                 decode_context_parallel_size=dcp, pipeline_parallel_size=pp)


def _engine_users(dcp: int) -> int:
    engine = EngineRequest(engine="vllm", tensor_parallel_size=8, max_model_len=LENGTH, kv_cache_dtype="fp8",
                           gpu_name=H200.name)
    scaled = plan_scale(V32, H200.framework_memory_bytes, engine, ScaleRequest(decode_context_parallel_size=dcp))
    return int(scaled.engine_view().requests_held)


def test_users_are_the_engine_views_requests_held_under_dcp():
    """The budget's users equal the engine view's whole requests with ``-dcp 8`` (57 of 57.67x), within 1 %:
    the budget's overhead is the newest vLLM's estimate (:func:`planner.overhead.estimate_overhead`), the engine
    view's its own per-term figures, which agree here to the printed 0.01 GiB but need not on every GPU."""
    split = _dcp(V32, 8, 8, batch_size=16, kv_cache_dtype="fp8")
    engine = _engine_users(8)
    assert engine > 8 * _engine_users(1) * 0.9  # the split holds about 8x the plain launch's requests
    assert abs(split.max_concurrent_sequences - engine) <= max(1, engine // 100)
    assert split.fits and split.decode_context_parallel_size == 8 and split.context_len == LENGTH
    plain = plan(V32, H200.framework_memory_bytes, PlanRequest(context_len=LENGTH, batch_size=16,
                                                                kv_cache_dtype="fp8", num_gpus=8), H200.id)
    assert not plain.fits and plain.max_concurrent_sequences < 16


def test_per_gpu_figures_are_the_shards_and_the_contexts_scale():
    """One GPU keeps ceil(L / 8) tokens of a request (vllm/v1/kv_cache_interface.py: cdiv(L, dcp)): the per-GPU KV
    of a sequence is the plain plan's at that length; the whole request's KV at tensor parallel 1 stays L's; the
    longest context is 8 x the shard's, capped at max_position_embeddings (163,840 in the config)."""
    split = _dcp(V32, 8, 8, batch_size=16, kv_cache_dtype="fp8")
    request = PlanRequest(context_len=LENGTH // 8, batch_size=16, kv_cache_dtype="fp8", num_gpus=8)
    shard = plan(V32, H200.framework_memory_bytes, request, H200.id)
    whole = plan(V32, H200.framework_memory_bytes, PlanRequest(**{**request.__dict__, "context_len": LENGTH}), H200.id)
    assert split.kv_cache_bytes_per_sequence_per_gpu == shard.kv_cache_bytes_per_sequence_per_gpu
    assert split.kv_cache_bytes_per_sequence_paged_per_gpu == shard.kv_cache_bytes_per_sequence_paged_per_gpu
    assert split.kv_cache_bytes_per_sequence == whole.kv_cache_bytes_per_sequence
    assert split.max_concurrent_sequences == shard.max_concurrent_sequences
    assert split.max_context_len_by_memory == 8 * shard.max_context_len_by_memory
    assert split.max_context_len == min(8 * shard.max_context_len_by_memory, V32.max_position_embeddings)
    assert split.kv_cache_capacity_tokens_at_context == 8 * shard.kv_cache_capacity_tokens_at_context


def test_a_ragged_length_keeps_the_rounded_up_shard():
    """131,073 tokens over 8 GPUs: one GPU keeps 16,385 (ceil), as a plain plan of 16,385 tokens pages them."""
    split = _dcp(V32, 8, 8, context_len=LENGTH + 1, kv_cache_dtype="fp8")
    shard = plan(V32, H200.framework_memory_bytes,
                 PlanRequest(context_len=LENGTH // 8 + 1, kv_cache_dtype="fp8", num_gpus=8), H200.id)
    assert split.max_concurrent_sequences == shard.max_concurrent_sequences
    assert split.kv_cache_bytes_per_sequence_per_gpu == shard.kv_cache_bytes_per_sequence_per_gpu


def test_size_one_is_the_plain_plan():
    for model, more in ((V32, {"kv_cache_dtype": "fp8"}), (LLAMA_8B, {})):
        request = PlanRequest(context_len=LENGTH, batch_size=4, num_gpus=8, **more)
        assert _dcp(model, 8, 1, batch_size=4, **more) == plan(model, H200.framework_memory_bytes, request, H200.id)


def test_a_batch_that_does_not_fit_is_worded_at_the_requests_length():
    split = _dcp(V32, 8, 8, batch_size=80, kv_cache_dtype="fp8")
    assert not split.fits and split.max_concurrent_sequences < 80
    assert any("131,072 tokens (16,384 per GPU" in r for r in split.reasons), split.reasons
    context_fix = [s for s in split.suggestions if getattr(s, "key", None) == "context_len"]
    assert context_fix and context_fix[0].value == split.max_context_len > LENGTH // 8
    batch_fix = [s for s in split.suggestions if getattr(s, "key", None) == "batch_size"]
    assert batch_fix and batch_fix[0].value == split.max_concurrent_sequences


def test_past_the_models_limit_is_refused_as_the_plain_plan_refuses_it():
    split = _dcp(V32, 8, 8, context_len=200_000, kv_cache_dtype="fp8")
    assert not split.fits and any("max_position_embeddings" in r for r in split.reasons)


def test_pipeline_stages_beside_dcp_are_refused_as_the_engine_pages_launch():
    """Pipeline stages with ``-dcp`` are not planned, as :func:`planner.scale.plan_scale` (the Engine page, the CLI)
    does not plan them: DeepSeek-V3.2 on 16 GPUs in 2 stages of 8 with -dcp 8 used to hold the stages' users at
    ceil(L / 8) tokens on Home while the Engine page said "not modelled"."""
    for model, gpus, dcp in ((LLAMA_405B, 16, 2), (V32, 16, 8)):
        with pytest.raises(ValueError, match="pipeline parallel together with .* is not modelled"):
            _dcp(model, gpus, dcp, pp=2, kv_cache_dtype="fp8")
    assert _dcp(V32, 16, 1, pp=2, kv_cache_dtype="fp8").pipeline_parallel_size == 2  # stages alone: planned


@pytest.mark.parametrize(("model", "gpus", "dcp", "more", "fragment"), [
    (V32, 8, 3, {"kv_cache_dtype": "fp8"}, "must divide the tensor-parallel size 8"),
    (V32, 8, 16, {"kv_cache_dtype": "fp8"}, "must divide"),
    (LLAMA_8B, 8, 2, {}, "tp / KV heads = 8 / 8"),
    (GEMMA, 8, 2, {}, "decode context parallel is modelled for full attention"),
    (V32, 8, 8, {"kv_cache_dtype": "bf16"}, "use --kv-cache-dtype auto or fp8"),
    (V32, 8, 0, {"kv_cache_dtype": "fp8"}, "at least 1"),
])
def test_sizes_vllm_would_not_run_are_refused_with_the_fix(model, gpus, dcp, more, fragment):
    with pytest.raises(ValueError, match=fragment):
        _dcp(model, gpus, dcp, **more)


def test_cli_budget_section_applies_dcp(capsys):
    args = ["plan", "--model", V32.model_id, "--gpu", H200.id, "--num-gpus", "8", "--context-len", str(LENGTH),
            "--batch-size", "16", "--kv-cache-dtype", "fp8", "--decode-context-parallel-size", "8", "--format", "json"]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["max_concurrent_sequences"] == _engine_users(8) and out["fits"] is True
    assert out["decode_context_parallel_size"] == 8
    assert out["max_concurrent_sequences"] == int(out["scale"]["max_concurrency"])
    assert not any("without decode context parallel" in n for n in out["notes"]), out["notes"]
