"""Memory curves and Concurrency end at the model's max_position_embeddings (QA: both stopped at 1,048,576
tokens, ``CURVE_MAX_TOKENS = 1 << 20``, while their captions said each curve ends at the model's limit; Llama 4
Scout's is 10,485,760), with a bounded number of points per curve, and the table ends where the chart does."""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from tests.lazy_tabs import open_tab
from tests.test_app import run_page
from ui import data
from ui.format import format_tokens_short

ROOT = Path(__file__).resolve().parents[1]
SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
GPUS = ["nvidia-h100-sxm-80gb", "nvidia-b200", "amd-mi300x", "nvidia-h200-sxm"]


def _chart(at: AppTest) -> dict:
    (spec,) = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    return spec


def test_a_10m_model_curve_reaches_its_limit_with_bounded_points():
    scout = model_spec(SCOUT)
    limit = scout.max_position_embeddings
    assert limit > 1 << 20  # the config's 10,485,760
    grid = data.curve_contexts([scout, model_spec("Qwen/Qwen3-0.6B")])
    assert grid[-1] == limit and len(grid) <= data.CURVE_POINTS
    assert len(data.concurrency_contexts(scout)) <= data.CURVE_POINTS + len(data.TABLE_CONTEXTS) + 1
    at = AppTest.from_file(str(ROOT / "pages/1_Memory_curves.py"), default_timeout=60)
    at.query_params["models"] = [SCOUT, "Qwen/Qwen3-0.6B"]
    at.query_params["gpus"] = GPUS[1:3]
    at.query_params["log_y"] = "true"
    at.run()
    assert not at.exception and not at.error
    curves = [t for t in _chart(at)["data"] if "meta" in t]
    assert {max(t["x"]) for t in curves if t["legendgroup"] == SCOUT} == {limit}
    caption = next(c.value for c in at.caption if "Each curve ends at" in c.value)
    assert f"{data.CURVE_MAX_TOKENS:,} tokens at most" in caption


def test_concurrency_chart_and_table_end_at_the_model_limit():
    limit = model_spec(SCOUT).max_position_embeddings
    at = run_page("pages/3_Concurrency.py", dict(model=SCOUT, num_gpus="8", gpus=GPUS, context_len="1000000"))
    assert not at.exception and not at.error
    assert max(max(t["x"]) for t in _chart(at)["data"]) == limit
    table = open_tab(at, "concurrency_section", "Table by context length").table[0].value
    assert list(table.columns)[-1] == format_tokens_short(limit)


def test_allocation_curve_ends_where_the_memory_curves_do():
    """QA: the Allocation page's curve stopped at 1,048,576 tokens (its own ``CURVE_MAX_TOKENS = 1 << 20``) where the
    Memory curves and Concurrency pages reach the model's limit; it ends at the same :func:`ui.data.curve_top` now."""
    at = run_page("pages/6_Allocation.py", dict(model=SCOUT, gpu="nvidia-h200-sxm", num_gpus="8"))
    assert not at.exception and not at.error
    curve = next(s for s in (json.loads(el.proto.spec) for el in at.get("plotly_chart"))
                 if "max_model_len" in s["layout"]["xaxis"]["title"].get("text", ""))
    ends = {max(t["x"]) for t in curve["data"] if t["x"]}
    assert max(ends) == data.curve_contexts([model_spec(SCOUT)])[-1] == model_spec(SCOUT).max_position_embeddings
