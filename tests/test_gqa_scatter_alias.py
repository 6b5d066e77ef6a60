"""GQA savings' catalog scatter rings the planned model when the link names it by an alias (QA, stop 46).

``model=meta-llama/Llama-3.1-8B-Instruct`` is an alias of the catalog entry ``meta-llama/Meta-Llama-3.1-8B``: the
page plans it and keeps the user's id (issue 27, item 2), but the scatter's points are the catalog's entries, so
the "selected" ring looked for the alias among them and drew nothing.
"""

from __future__ import annotations

import pytest

from model_catalog import model_registry
from tests.test_app import plotly_specs, run_page


def _rings(model_id: str) -> list[dict]:
    at = run_page("pages/2_GQA_savings.py", {"model": model_id, "gpu": "nvidia-h100-sxm"})
    assert not at.exception and not at.error
    traces = [t for spec in plotly_specs(at) for t in spec["data"]]
    return [t for t in traces if t.get("name") == "selected"]


@pytest.mark.parametrize("model_id", ["meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen3-8B"])
def test_the_scatter_rings_the_planned_model_named_by_an_alias_or_its_id(model_id):
    entry_id = model_registry.resolve_model_id(model_id)
    rings = _rings(model_id)
    assert len(rings) == 1
    points = [t for spec in plotly_specs(run_page("pages/2_GQA_savings.py", {"model": entry_id,
                                                                              "gpu": "nvidia-h100-sxm"}))
              for t in spec["data"] if t.get("name") == "selected"]
    assert rings[0]["x"] == points[0]["x"] and rings[0]["y"] == points[0]["y"]  # the entry's own point
