"""The Concurrency page's curve and table cap users at the link's max_num_seqs, as its headline and Home do.

QA (stop 46): with ``max_num_seqs=64`` the headline said 64 users for Llama 3.1 8B on an H100 at 2,500 tokens while
the chart and table beside it counted what the KV cache holds (178 at 2,500 tokens): vLLM's scheduler runs at most
``max_num_seqs`` requests at once (vllm/v1/core/sched/scheduler.py), which ``planner.budget.plan`` applies.
"""

from __future__ import annotations

from dataclasses import replace

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.sweep import concurrency_curve

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
GPU = "nvidia-h100-sxm-80gb"
CONTEXTS = (512, 2500, 8192, 65536)


def test_curve_points_are_plans_users_with_and_without_the_cap():
    model, gpu = model_spec(MODEL), get_gpu(GPU)
    for cap in (None, 64):
        request = PlanRequest(context_len=2500, max_num_seqs=cap)
        curve = concurrency_curve(model, gpu.framework_memory_bytes, request, CONTEXTS, gpu.id)
        planned = tuple(plan(model, gpu.framework_memory_bytes, replace(request, context_len=c), gpu_id=gpu.id)
                        .max_concurrent_sequences for c in CONTEXTS)
        assert curve == planned
    assert max(concurrency_curve(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500, max_num_seqs=64), CONTEXTS,
                                 gpu.id)) == 64


def test_concurrency_table_says_what_the_headline_says():
    from tests.test_app import run_page
    from tests.tiles import metric_tiles

    at = run_page("pages/3_Concurrency.py", {"model": MODEL, "gpus": GPU, "context_len": "2500", "max_num_seqs": "64",
                                             "concurrency_section": "Table by context length"})
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in metric_tiles(at)] == ["64"]
    frame = at.table[0].value
    cells = [int(str(v).replace(",", "")) for v in frame.iloc[0, 1:] if str(v).replace(",", "").isdigit()]
    assert cells and max(cells) == 64, frame


def test_gqa_and_concurrency_say_the_users_stop_at_max_num_seqs():
    """QA (stop 46): GQA savings showed GQA and MQA at the same 64 users (178 and 1,427 without the cap) beside
    "MQA stores 32x less", and Concurrency's line ran flat at 64, with no word of the link's max_num_seqs."""
    from tests.test_app import run_page

    for page, gpus in (("pages/2_GQA_savings.py", "gpu"), ("pages/3_Concurrency.py", "gpus")):
        base = {"model": MODEL, gpus: GPU, "context_len": "2500", "batch_size": "32"}
        for cap, expected in ((None, False), ("64", True)):
            at = run_page(page, base | ({"max_num_seqs": cap} if cap else {}))
            assert not at.exception, [e.value for e in at.exception]
            said = [c.value for c in at.caption if "max_num_seqs=64" in c.value]
            assert bool(said) == expected, (page, cap, said)


def test_concurrency_axis_labels_a_curve_that_stays_under_a_hundred():
    """QA (stop 46): the curve capped at 64 users had one y label ("10"): a log axis ticked at powers of ten only."""
    from ui.charts import concurrency_lines

    fig = concurrency_lines((128, 1024, 8192, 65536), {"H100": (64, 64, 40, 3)})
    shown = [t for t in fig.layout.yaxis.tickvals if 3 <= t <= 64]
    assert len(shown) >= 3, fig.layout.yaxis.tickvals
