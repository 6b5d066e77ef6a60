"""The budget caps a defaulted profile pass at ``max_num_seqs x max_model_len`` where vLLM does, as the Engine view.

QA: ``python -m planner plan --model meta-llama/Llama-3.1-8B-Instruct --gpu nvidia-h100-sxm-80gb --context-len 2048
--max-num-seqs 1`` charged an 8,192-token profile pass in the budget while its own ``--engine vllm`` section planned
min(1 x 2,048, 8,192) = 2,048 tokens (vllm/engine/arg_utils.py, 2026 source), so the two KV figures differed. The
expected figures here are :func:`planner.engines.plan_engine`'s and :func:`planner.engines.profiles.
vllm_batch_limits`'s, the functions the Engine view plans with.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.budget import profile_pass_tokens
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.profiles import engine_profile, vllm_batch_limits
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest

LLAMA, H100 = "meta-llama/Llama-3.1-8B-Instruct", "nvidia-h100-sxm-80gb"


def _engine(context_len: int, **knobs):
    gpu = get_gpu(H100)
    return plan_engine(model_spec(LLAMA), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", max_model_len=context_len, gpu_name=gpu.name,
        gpu_memory_reported_bytes=reported_memory_bytes(gpu), **knobs))


@pytest.mark.parametrize(("context_len", "max_num_seqs"), [(2048, 1), (1000, 2), (4096, 1)])
def test_the_budget_caps_a_defaulted_profile_pass_as_the_engine_view(context_len, max_num_seqs):
    gpu = get_gpu(H100)
    request = PlanRequest(context_len=context_len, max_num_seqs=max_num_seqs)
    engine = _engine(context_len, max_num_seqs=max_num_seqs)
    assert engine.max_num_batched_tokens == max_num_seqs * context_len  # the engine view caps the default
    assert profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id) == engine.max_num_batched_tokens
    budget = plan(model_spec(LLAMA), gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes


def test_a_length_past_the_cap_keeps_the_default():
    gpu = get_gpu(H100)
    default = vllm_batch_limits(engine_profile("vllm"), gpu.framework_memory_bytes, gpu.id, 1 << 24)[0]
    for context_len in (8192, 32768):
        request = PlanRequest(context_len=context_len, max_num_seqs=1)
        assert profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id) == default
    short, long = (plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=c, max_num_seqs=1),
                        gpu_id=gpu.id) for c in (2048, 32768))
    assert short.kv_cache_budget_bytes > long.kv_cache_budget_bytes  # the short launch profiles fewer tokens


def test_a_given_token_budget_is_not_capped():
    gpu = get_gpu(H100)
    request = PlanRequest(context_len=2048, max_num_seqs=1, max_num_batched_tokens=8192)
    assert profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id) == 8192
    budget = plan(model_spec(LLAMA), gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    assert budget.kv_cache_budget_bytes == _engine(2048, max_num_seqs=1,
                                                   max_num_batched_tokens=8192).available_kv_cache_bytes


def test_cli_budget_and_engine_section_agree_under_a_small_max_num_seqs(capsys):
    assert main(["plan", "--model", LLAMA, "--gpu", H100, "--context-len", "2048", "--max-num-seqs", "1",
                 "--engine", "vllm", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_plan"]["max_num_batched_tokens"] == 2048
    assert out["kv_cache_budget_bytes"] == out["available_kv_cache_bytes"]
    assert "2,048 tokens, 1 sequence" in out["overhead_formula"]
