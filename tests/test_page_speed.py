"""What keeps a page's rerun near Streamlit's floor (issue 27, "Speed, decided"; ``scripts/perf_budget.py``).

* The GQA page's catalog chart rows depend only on the two dtypes, so a rerun for another widget reuses
  them instead of walking every layer of every catalog model again (``ui.data.catalog_kv_rows``).
* The per-model catalog loaders hand out the one frozen object they keep (``st.cache_resource``), so a hit
  costs no unpickling (``st.cache_data`` returns a fresh copy on every call); so does the GPU catalog,
  behind a read-only view.
* Every chart of the chart pages is finished by :mod:`ui.chart_look` (no template, a ``datarevision``,
  Streamlit's look in its own layout) and sent with ``theme=None``, so Streamlit draws it once, not three
  times (the browser check: ``tests/test_browser_chart_draws.py``).
* The Catalog page's tables are filtered and converted to Arrow once per search (``ui.data.catalog_search``),
  its verification headline once per server; a Disaggregation rerun for another user count reuses each
  pool's weight pricing (``planner.scale.weights.rank_weight_bytes``, in the model's memo).

Each cache: a hit computes nothing, other inputs compute afresh, and the kept value equals the uncached one.
"""

from __future__ import annotations

import pytest

from ui import catalog, data


def test_catalog_kv_rows_are_built_once_per_dtype_pair(monkeypatch):
    data.catalog_kv_rows.clear()
    first = data.catalog_kv_rows("bf16", "auto")
    calls = []
    real = catalog.model_spec
    monkeypatch.setattr(catalog, "model_spec", lambda model_id: calls.append(model_id) or real(model_id))
    again = data.catalog_kv_rows("bf16", "auto")
    assert again == first and calls == []  # kept: no catalog model read again
    assert len(first) == len(catalog.model_ids())
    data.catalog_kv_rows("bf16", "fp8")  # another pair is built afresh, from every catalog model
    assert len(calls) == len(catalog.model_ids())
    data.catalog_kv_rows.clear()


def test_catalog_model_loaders_share_one_frozen_object():
    model_id = catalog.default_model_id()
    assert catalog.model_spec(model_id) is catalog.model_spec(model_id)
    assert catalog.model_entry(model_id) is catalog.model_entry(model_id)


# --------------------------------------------------------------------------
# Charts drawn once (ui/chart_look.py); tests/test_browser_chart_draws.py checks it in Chromium
# --------------------------------------------------------------------------
def test_missing_gives_only_what_the_layout_does_not_set():
    from ui.chart_look import missing

    assert missing({"font": {"size": 12, "color": "a"}}, {"font": {"size": 14}}) == {"font": {"color": "a"}}
    assert missing({"a": 1, "b": {"c": 2}}, {"a": 5, "b": {"c": 3}}) == {}
    assert missing({"b": {"c": 2}}, {"b": "text"}) == {}  # a value, not a container: the figure's wins


def test_finish_writes_the_look_under_the_figures_own_layout_without_a_template():
    import json

    import plotly.graph_objects as go
    import plotly.io as pio

    from ui.chart_look import LOOK, finish

    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    fig.update_layout(title="Two<br>lines", yaxis_title="GiB", font=dict(size=13), margin=dict(l=80, r=10, t=50, b=40))
    fig = finish(fig)
    layout = fig.to_dict()["layout"]
    assert layout.pop("template", None) is None and layout["datarevision"]
    assert layout["title"]["text"] == "Two<br>lines" and layout["title"]["font"]["weight"] == "bold"
    assert layout["font"] == dict(LOOK["font"], size=13)  # the figure's size kept, the theme's family and colour
    assert layout["yaxis"]["title"] == dict(LOOK["yaxis"]["title"], text="GiB")
    assert layout["margin"] == dict(l=80, r=10, t=50, b=40, pad=8)
    # what is sent is a valid figure (finish builds it unvalidated): plotly's validation changes nothing in it
    sent = json.loads(pio.to_json(fig, validate=False))
    copy = go.Figure(sent)
    copy.layout.template = None  # a validated copy takes the default template: none in either
    assert json.loads(pio.to_json(copy, validate=False)) == sent | {"layout": {k: v for k, v in sent["layout"].items()
                                                                              if k != "template"}}


def test_finish_styles_every_axis_as_a_template_would():
    import plotly.graph_objects as go

    from ui.chart_look import LOOK, finish

    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4], yaxis="y2"))
    fig.update_layout(yaxis2=dict(title="cost", overlaying="y", side="right"))
    layout = finish(fig).to_dict()["layout"]
    assert layout["yaxis2"]["title"] == dict(LOOK["yaxis"]["title"], text="cost")
    assert layout["yaxis2"]["tickfont"] == LOOK["yaxis"]["tickfont"] and layout["yaxis2"]["side"] == "right"


def test_datarevision_follows_the_data():
    import plotly.graph_objects as go

    from ui.chart_look import finish

    def bars(values):
        return finish(go.Figure(go.Bar(x=["a", "b"], y=values))).layout.datarevision

    assert bars([1, 2]) == bars([1, 2]) != bars([1, 3])


CHART_PAGES = ("pages/1_Memory_curves.py", "pages/2_GQA_savings.py", "pages/3_Concurrency.py", "pages/6_Allocation.py")
"""The pages that draw Plotly charts (the Engine page's budget is Home's HTML bar)."""


@pytest.mark.parametrize("page", CHART_PAGES)
def test_every_chart_of_these_pages_is_sent_finished_and_without_streamlits_theme(page):
    import json
    from pathlib import Path

    import plotly.graph_objects as go
    import plotly.io as pio

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / page), default_timeout=60).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert charts
    for chart in charts:
        spec = json.loads(chart.proto.spec)
        layout = spec["layout"]
        assert chart.proto.theme == "" and not layout.get("template") and layout["datarevision"], page
        copy = go.Figure(spec)  # validated: an unknown or misspelt property raises here
        copy.layout.template = None
        layout.pop("template", None)
        assert json.loads(pio.to_json(copy, validate=False)) == spec, page


# --------------------------------------------------------------------------
# Per-input caches
# --------------------------------------------------------------------------
def test_catalog_search_is_built_once_per_search_and_equals_the_plain_search(monkeypatch):
    data.catalog_search.clear()
    calls = []
    real = data.search
    monkeypatch.setattr(data, "search", lambda *args, **kwargs: calls.append(args[1]) or real(*args, **kwargs))
    first = data.catalog_search("models", data.search_words("Llama 70B"))
    again = data.catalog_search("models", data.search_words("  llama   70b "))  # same words, other case / spacing
    assert again is first and calls == ["llama 70b"]  # kept: not filtered again
    other = data.catalog_search("models", data.search_words("qwen"))
    assert calls == ["llama 70b", "qwen"] and other.num_rows != first.num_rows
    monkeypatch.setattr(data, "search", real)
    for kind, (build, columns) in data.CATALOG_TABLES.items():
        for query in ("", "llama 70b", "h100", "2026", "no such thing"):
            kept = data.catalog_search(kind, data.search_words(query)).to_pandas()
            plain = real(build(), query, columns).reset_index(drop=True)
            assert kept.astype(str).equals(plain.astype(str)), (kind, query)
    data.catalog_search.clear()


def test_catalog_gpus_are_one_read_only_mapping():
    from model_catalog import gpus as gpu_catalog

    shared = catalog.gpus()
    assert catalog.gpus() is shared
    assert dict(shared) == gpu_catalog.load_gpus()
    with pytest.raises(TypeError):
        shared["x"] = None  # type: ignore[index]


def test_verification_headline_is_written_once(monkeypatch):
    import model_catalog

    data.verification_headline.clear()
    first = data.verification_headline()
    monkeypatch.setattr(model_catalog, "verification_summary", lambda: pytest.fail("summary read again"))
    assert data.verification_headline() == first
    data.verification_headline.clear()


def test_rank_weights_are_priced_once_per_model_and_layout(monkeypatch):
    from dataclasses import replace

    from model_catalog import model_spec
    from planner.scale import ScaleRequest, rank_layout, rank_weight_bytes
    from planner.scale import weights

    model = replace(model_spec("Qwen/Qwen3-30B-A3B"))  # a fresh object: an empty memo
    layouts = [rank_layout(ScaleRequest(data_parallel_size=dp, enable_expert_parallel=True), family="vllm",
                           tensor_parallel_size=1, num_experts=model.num_experts, num_kv_heads=4) for dp in (2, 4)]
    calls = []
    real = weights._rank_weight_bytes
    monkeypatch.setattr(weights, "_rank_weight_bytes", lambda *args: calls.append(args[1]) or real(*args))
    first = rank_weight_bytes(model, layouts[0], engine="vllm", weight_dtype_name="auto", gpu_name="H100 SXM5 80GB")
    again = rank_weight_bytes(model, layouts[0], engine="vllm", weight_dtype_name="auto", gpu_name="H100 SXM5 80GB")
    assert again is first and calls == [layouts[0]]
    other = rank_weight_bytes(model, layouts[1], engine="vllm", weight_dtype_name="auto", gpu_name="H100 SXM5 80GB")
    assert calls == layouts and other.experts_per_layer < first.experts_per_layer
    fp8 = rank_weight_bytes(model, layouts[0], engine="vllm", weight_dtype_name="fp8", gpu_name="H100 SXM5 80GB")
    assert len(calls) == 3 and fp8.total_bytes < first.total_bytes  # another dtype: priced afresh
    for layout, kept in zip(layouts, (first, other)):  # equal to a cold pricing on an equal, fresh model
        assert real(replace(model), layout, "vllm", "auto", "H100 SXM5 80GB") == kept
