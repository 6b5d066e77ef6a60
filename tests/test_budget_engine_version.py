"""The budget prices the link's (or the CLI's) vLLM version's overhead, so it agrees with that version's Engine view.

QA (reproduced twice): ``/?model=Qwen/Qwen3-32B&gpu=nvidia-h100-sxm-80gb&context_len=30000&engine=vllm-v0.28`` read
"Does not fit", 0 users, while its own "Try" line and the Engine page said vllm-v0.28 starts (1.05x), and ``plan
--engine vllm-v0.28 --format json`` had ``fits`` false beside ``engine_plan.starts`` true: the budget's overhead was
always the newest vLLM's (:data:`planner.overhead.OVERHEAD_PROFILE`). :meth:`planner.budget.PlanRequest.for_engine`
now sets :attr:`~planner.budget.PlanRequest.overhead_profile` to a vLLM version, so the budget's KV memory is that
version's "available KV" and its users the Engine view's whole requests. vllm-v0's profile pass grows with the context
(``max(max_model_len, 2048)`` tokens), which the context-free budget cannot price: it keeps the newest vLLM's.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from tests.test_app import run_page
from tests.tiles import metric_tiles

QWEN = {"model": "Qwen/Qwen3-32B", "gpu": "nvidia-h100-sxm-80gb", "context_len": "30000"}
V1_VERSIONS = ["vllm", "vllm-v0.28", "vllm-v0.11", "vllm-v0.10", "vllm-v1-2025", "vllm-v1-jan2025"]


def _cli_json(model: str, gpu: str, context: int, engine: str, capsys) -> dict:
    argv = ["plan", "--model", model, "--gpu", gpu, "--context-len", str(context), "--engine", engine,
            "--format", "json"]
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("engine", V1_VERSIONS)
@pytest.mark.parametrize("model,context", [("Qwen/Qwen3-32B", 30000), ("meta-llama/Meta-Llama-3-8B", 8192)])
def test_cli_budget_is_the_engine_versions_available_kv(model, context, engine, capsys):
    out = _cli_json(model, "nvidia-h100-sxm-80gb", context, engine, capsys)
    engine_plan = out["engine_plan"]
    assert out["overhead_profile"] == engine
    assert out["kv_cache_budget_bytes"] == engine_plan["available_kv_cache_bytes"]
    assert out["fits"] == engine_plan["starts"]
    held = engine_plan.get("max_concurrency_decoding") or engine_plan["max_concurrency"]
    assert out["max_concurrent_sequences"] == int(held)


def test_qa_link_fits_with_the_engines_one_user(capsys):
    out = _cli_json(QWEN["model"], QWEN["gpu"], 30000, "vllm-v0.28", capsys)
    assert out["fits"] and out["engine_plan"]["starts"] and out["max_concurrent_sequences"] == 1
    assert "v0.22-v0.28" in out["overhead_formula"]


@pytest.mark.parametrize("engine,priced", [("vllm-v0.28", "vllm-v0.28"), ("vllm-v0.11", "vllm-v0.11"),
                                           ("vllm", "vllm"), ("vllm-v0", "vllm"), ("sglang", "vllm"),
                                           ("trtllm", "vllm"), ("llama.cpp", "vllm")])
def test_for_engine_prices_vllm_versions_only(engine, priced):
    assert PlanRequest(context_len=1).for_engine(engine)[0].overhead_profile == priced


def test_plan_takes_the_request_profile():
    model, gpu = model_spec("Qwen/Qwen3-32B"), get_gpu("nvidia-h100-sxm-80gb")
    request = PlanRequest(context_len=30000).for_engine("vllm-v0.10")[0]
    budget = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    engine = plan_engine(model, gpu.framework_memory_bytes,
                         EngineRequest(engine="vllm-v0.10", gpu_name=gpu.id, max_model_len=30000))
    assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes
    assert budget.overhead_profile == "vllm-v0.10"


def test_a_non_vllm_overhead_profile_is_refused():
    with pytest.raises(ValueError, match="overhead_profile must be a vLLM profile"):
        plan(model_spec("Qwen/Qwen3-32B"), 80 << 30, PlanRequest(context_len=1, overhead_profile="sglang"))


def _tiles(page: str, params: dict) -> tuple[dict[str, str], object]:
    at = run_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    return {t.label: t.value for t in metric_tiles(at)}, at


def test_home_qa_link_fits_as_the_engine_page_says():
    tiles, at = _tiles("app.py", {**QWEN, "engine": "vllm-v0.28"})
    assert tiles["Max concurrent sequences"] == "1"
    text = " ".join(m.value for m in at.markdown) + " ".join(e.value for e in at.error)
    assert "Does not fit" not in text
    captions = " ".join(c.value for c in at.caption)
    assert "vLLM v0.22-v0.28's" in captions and "newest vLLM's" not in captions
    code = " ".join(c.value for c in at.code)
    assert "--engine vllm-v0.28" in code  # the copied command prints this budget


def test_concurrency_headline_counts_the_versions_users():
    tiles, _ = _tiles("pages/3_Concurrency.py", {"model": QWEN["model"], "gpus": QWEN["gpu"],
                                                  "context_len": "30000", "engine": "vllm-v0.28"})
    headline = [v for k, v in tiles.items() if "H100" in k]
    assert headline and headline[0] == "1", tiles
