"""Home and ``plan --format json`` say so where the budget does not fit but the chosen non-vLLM engine starts.

QA (reproduced twice): ``/?model=Qwen/Qwen3-32B&gpu=nvidia-h100-sxm-80gb&context_len=32768&engine=trtllm`` read "Does
not fit ... budget 6.82 GiB" while the Engine page said TensorRT-LLM starts with 57,152 tokens (1.74x, 13.95 GiB
available), and nothing on Home said which to believe. The budget stays vLLM's arithmetic; a line beside the verdict
(:func:`ui.engine_verdict.engine_starts_note`) and a JSON note (:func:`planner.engines.budget_gap.engine_starts_text`)
give the engine's own figures, users its concurrency rounded down.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.budget_gap import engine_starts_text
from planner.engines.types import EngineRequest
from tests.test_app import run_page

MODEL, GPU, CONTEXT = "Qwen/Qwen3-32B", "nvidia-h100-sxm-80gb", 32768
STARTING = ["trtllm", "llama.cpp", "tgi", "transformers"]  # each starts and holds a request where the budget does not


def _engine(engine: str, context: int = CONTEXT):
    gpu = get_gpu(GPU)
    return plan_engine(model_spec(MODEL), gpu.framework_memory_bytes,
                       EngineRequest(engine=engine, gpu_name=gpu.id, max_model_len=context))


def _budget(context: int = CONTEXT):
    gpu = get_gpu(GPU)
    return plan(model_spec(MODEL), gpu.framework_memory_bytes, PlanRequest(context_len=context), gpu_id=gpu.id)


@pytest.mark.parametrize("engine", STARTING)
def test_the_sentence_gives_the_engines_figures(engine):
    budget, launch = _budget(), _engine(engine)
    assert not budget.fits and launch.starts and launch.requests_held >= 1
    said = engine_starts_text(launch, budget_fits=budget.fits, budget_context_len=CONTEXT)
    assert said.startswith(f"{engine} starts")
    users = int(launch.requests_held)
    assert f"{launch.engine_kv_cache_tokens:,} tokens" in said and f"{users} user" in said
    assert f"({launch.requests_held:,.2f}x)" in said and "budget above is vLLM's" in said


def test_nothing_where_the_budget_fits_or_the_engine_holds_no_request():
    fitting = _budget(8192)
    assert fitting.fits
    assert engine_starts_text(_engine("trtllm", 8192), budget_fits=True, budget_context_len=8192) == ""
    sglang = _engine("sglang")  # starts at 0.57x: holds no whole request of the context
    assert sglang.starts and sglang.requests_held < 1
    assert engine_starts_text(sglang, budget_fits=False, budget_context_len=CONTEXT) == ""
    # the budget's own vLLM: its verdict is the engine's, nothing to reconcile
    assert engine_starts_text(_engine("vllm"), budget_fits=False, budget_context_len=CONTEXT) == ""


def test_cli_json_notes_the_engine_start(capsys):
    argv = ["plan", "--model", MODEL, "--gpu", GPU, "--context-len", str(CONTEXT), "--engine", "trtllm",
            "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert not out["fits"] and out["engine_plan"]["starts"]
    tokens = f"{out['engine_plan']['engine_kv_cache_tokens']:,} tokens"
    assert any(n.startswith("trtllm starts") and tokens in n for n in out["notes"]), out["notes"]


def test_home_says_the_engine_starts_beside_the_verdict():
    at = run_page("app.py", {"model": MODEL, "gpu": GPU, "context_len": str(CONTEXT), "engine": "trtllm"})
    assert not at.exception, [e.value for e in at.exception]
    infos = [i.value for i in at.info if "But trtllm starts" in i.value]
    launch = _engine("trtllm")
    assert len(infos) == 1 and f"{launch.engine_kv_cache_tokens:,} tokens" in infos[0], [i.value for i in at.info]
    assert f"{int(launch.requests_held)} user" in infos[0]


def test_home_says_nothing_under_the_budgets_own_vllm():
    at = run_page("app.py", {"model": MODEL, "gpu": GPU, "context_len": str(CONTEXT)})
    assert not at.exception, [e.value for e in at.exception]
    assert not [i.value for i in at.info if "starts" in i.value and "But" in i.value]


def test_no_starts_line_where_the_context_is_past_the_models_limit():
    """QA (stop 46): Meta-Llama-3-8B (max_position_embeddings 8,192) at 32,768 tokens on 2 L40S under sglang read
    "Does not fit ... longer than the model supports" above "But sglang starts ... 14 users of 32,768 tokens": the
    budget refuses the length, not the memory, so no engine's overhead changes that."""
    from tests.test_app import run_page

    at = run_page("app.py", {"model": "meta-llama/Meta-Llama-3-8B", "gpu": "nvidia-l40s", "num_gpus": "2",
                             "context_len": "32768", "engine": "sglang"})
    assert not at.exception, [e.value for e in at.exception]
    assert [e.value for e in at.error if "longer than" in e.value], [e.value for e in at.error]
    assert not [e.value for e in at.info if "starts" in e.value and "But" in e.value], [e.value for e in at.info]
