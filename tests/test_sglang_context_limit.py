"""A length past the model's limit under ``engine=sglang``: refused, as under vLLM, never planned silently (QA).

SGLang's ``ModelConfig._derive_context_length`` (python/sglang/srt/configs/model_config.py) raises when
``--context-length`` exceeds the context length it derives from the config, unless
``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is set. The QA pass found the Engine page (and ``plan --engine
sglang``) saying "starts" at 8,192 tokens of Llama 2 (limit 4,096), and the Disaggregation page sizing two SGLang
pools at 8,000 + 1,000 tokens of Llama 3 8B (limit 8,192) with no word on the limit, where vLLM refuses both.

Expected figures come from the model spec (its ``max_position_embeddings``), never typed in.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from planner.scale import PoolRequest, ScaleRequest, plan_disagg
from tests.test_app import run_page

LLAMA2, LLAMA3, H100 = "meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3-8B", "nvidia-h100-sxm-80gb"
ENV = "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"


@pytest.mark.parametrize("engine", ["sglang", "sglang-v0.4"])
def test_sglang_refuses_a_context_length_past_the_model_s(engine):
    model, gpu = model_spec(LLAMA2), get_gpu(H100)
    limit = model.max_position_embeddings
    over = plan_engine(model, gpu.framework_memory_bytes,
                       EngineRequest(engine=engine, gpu_name=gpu.name, max_model_len=limit + 1))
    assert not over.starts
    assert any(ENV in reason and str(limit + 1) in reason and str(limit) in reason for reason in over.reasons)
    at_limit = plan_engine(model, gpu.framework_memory_bytes,
                           EngineRequest(engine=engine, gpu_name=gpu.name, max_model_len=limit))
    assert at_limit.starts and not any(ENV in reason for reason in at_limit.reasons)


def test_cli_plan_under_sglang_says_it_does_not_start(capsys):
    limit = model_spec(LLAMA2).max_position_embeddings
    assert main(["plan", "--model", LLAMA2, "--gpu", H100, "--engine", "sglang", "--context-len", str(2 * limit),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_plan"]["starts"] is False
    assert any(ENV in reason for reason in out["engine_plan"]["reasons"])


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_engine_page_refuses_max_model_len_past_the_limit_under_either_engine(engine):
    limit = model_spec(LLAMA2).max_position_embeddings
    at = run_page("pages/5_Engine.py", {"model": LLAMA2, "gpu": H100, "engine": engine,
                                        "max_model_len": str(2 * limit)})
    assert not at.exception
    said = " ".join(w.value for w in at.warning)
    assert f"{engine} would refuse to start" in said
    assert str(limit) in said
    if engine == "sglang":
        assert ENV in said


def test_disaggregation_page_under_sglang_names_the_limit():
    limit = model_spec(LLAMA3).max_position_embeddings
    at = run_page("pages/8_Disaggregation.py", {"model": LLAMA3, "gpu": H100, "engine": "sglang",
                                                "prompt_len": str(limit - 192), "output_len": "1000"})
    assert not at.exception
    said = " ".join(w.value for w in at.warning) + " ".join(e.value for e in at.error)
    assert "Would not start" in said and ENV in said and str(limit) in said
    assert "more memory" not in said  # no size, weight format or GPU lifts a length limit
    assert not any(m.label == "KV pool per GPU" for m in at.get("metric"))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_disagg_pools_past_the_limit_name_the_length_not_memory(engine):
    """Both pools refuse at every size; their notes say the length is the cause and how to lower it."""
    model, gpu = model_spec(LLAMA3), get_gpu(H100)
    limit = model.max_position_embeddings
    pool = PoolRequest(engine=EngineRequest(engine=engine, gpu_name=gpu.name), scale=ScaleRequest(),
                       auto_tensor_parallel=True)
    result = plan_disagg(model, gpu_memory_bytes=gpu.framework_memory_bytes, bandwidth_gb_s=gpu.bandwidth_gb_s,
                         bf16_dense_tflops=gpu.bf16_dense_tflops, prefill=pool, decode=pool, users=8,
                         prompt_len=limit, output_len=1, ttft_ms=2000.0, tpot_ms=50.0)
    assert not result.starts and len(result.pool_notes) == 2
    for note in result.pool_notes:
        assert f"{limit + 1:,}" in note and f"{limit:,}" in note and "more memory" not in note
