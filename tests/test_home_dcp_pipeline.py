"""Pipeline stages with ``-dcp``: Home's budget applies neither more nor less than the Engine page and the CLI.

QA: ``/?model=deepseek-ai/DeepSeek-V3.2&gpu=nvidia-h200-sxm&context_len=131072&batch_size=8&num_gpus=8&
pipeline_parallel_size=2&decode_context_parallel_size=4``: Home's budget split each request's KV over 4 GPUs ("up to
56 concurrent sequences", "as the Engine page plans it") where the Engine page says "pipeline parallel together with
data / expert / context parallel is not modelled" and ``python -m planner plan`` refuses the pair (exit 2).
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan_pipeline
from planner.context_budget import check_dcp_budget
from tests.test_app import run_page
from tests.tiles import metric_tiles

H200 = get_gpu("nvidia-h200-sxm")
V32 = model_spec("deepseek-ai/DeepSeek-V3.2")
LINK = {"model": V32.model_id, "gpu": H200.id, "context_len": "131072", "batch_size": "8", "num_gpus": "8",
        "pipeline_parallel_size": "2", "decode_context_parallel_size": "4"}


def test_the_planner_refuses_dcp_with_pipeline_stages_as_the_engine_pages_launch():
    with pytest.raises(ValueError, match="pipeline parallel together with .*context parallel is not modelled"):
        check_dcp_budget(V32, 8, 4, pipeline_parallel_size=2, gpu_id=H200.id)
    check_dcp_budget(V32, 8, 4, gpu_id=H200.id)  # without stages the size is valid


def test_home_leaves_the_dcp_out_under_pipeline_stages_and_names_why():
    at = run_page("app.py", LINK)
    assert not at.exception, [e.value for e in at.exception]
    users = int(next(t.value for t in metric_tiles(at) if t.label == "Max concurrent sequences").replace(",", ""))
    staged = plan_pipeline(V32, H200.framework_memory_bytes, PlanRequest(context_len=131_072, batch_size=8,
                                                                          num_gpus=8), H200.id,
                           pipeline_parallel_size=2)  # the stages, each request's whole KV on each GPU
    assert users == staged.max_concurrent_sequences, (users, staged.max_concurrent_sequences)
    captions = [c.value for c in at.caption]
    assert not any("as the Engine page plans it" in c for c in captions), captions
    left_out = [c for c in captions if c.startswith("Left out")]
    assert any("decode_context_parallel_size=4" in c and "not modelled" in c for c in left_out), left_out

