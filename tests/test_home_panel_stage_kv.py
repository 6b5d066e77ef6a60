"""Home's engine panel says which pipeline stage its available KV is, and which stage sizes the cache the budget shows.

QA: Kimi-K2.5 on 8 H200 with ``pipeline_parallel_size=2``: Home's budget said 52.21 GiB of KV per GPU and its engine
panel 51.55 GiB for the same launch (the same 1,569,920 tokens). Both are right, for different stages: the budget
shows stage 0, the stage with the fewest blocks, which vLLM gives every stage (``get_kv_cache_configs`` in
vllm/v1/core/kv_cache_utils.py); the panel's figure is the least of the stages' available KV, stage 1's (the last
stage also profiles the sampler and keeps the runner's sampling state). The panel now names both.
"""

from __future__ import annotations

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from planner.pipeline import plan_pipeline
from tests.test_app import run_page
from tests.tiles import metric_tiles
from ui.format import format_bytes

KIMI = {"model": "moonshotai/Kimi-K2.5", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "pipeline_parallel_size": "2"}


def _stages():
    gpu, model = get_gpu(KIMI["gpu"]), model_spec(KIMI["model"])
    engine = plan_engine(model, gpu.framework_memory_bytes,
                         EngineRequest(engine="vllm", tensor_parallel_size=4, pipeline_parallel_size=2,
                                       max_model_len=8192, gpu_name=gpu.name))
    budget = plan_pipeline(model, gpu.framework_memory_bytes, PlanRequest(num_gpus=8, context_len=8192), gpu.id,
                           pipeline_parallel_size=2)
    return engine, budget


def test_the_budget_and_the_engine_agree_stage_by_stage():
    """The budget's stage is the engine's stage with the fewest blocks, with the same available KV to the byte."""
    engine, budget = _stages()
    fewest = min(engine.ranks, key=lambda r: r.num_blocks)
    assert fewest.stage == budget.pipeline_stage
    assert fewest.available_kv_cache_bytes == budget.kv_cache_budget_bytes
    assert engine.engine_kv_cache_tokens == budget.kv_cache_capacity_tokens


def test_home_panel_names_the_stage_behind_each_figure():
    engine, _ = _stages()
    at = run_page("app.py", KIMI)
    assert not at.exception, [e.value for e in at.exception]
    budget_kv = next(t.value for t in metric_tiles(at) if t.label == "KV budget per GPU")
    panel = next(e for e in at.expander if "would allocate" in e.label)
    text = " ".join([*(m.value for m in panel.markdown), *(c.value for c in panel.caption)])
    least = format_bytes(engine.available_kv_cache_bytes)
    assert budget_kv != least and least in text  # the two stages differ, as in the QA report
    assert budget_kv in text and "stage 0" in text and "stage 1" in text, text
