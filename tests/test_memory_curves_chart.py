"""Memory curves (pages/1_Memory_curves.py, ui/charts.py ``memory_curves``), issue 27 polish:

* curves stopped before the model's limit (Mistral 7B v0.3 ended at 29,679 while the table said 32,768);
* a model priced for two overhead classes had two same-colour lines and a legend entry each (8 for 4 models);
* the linear axis grew with the highest curve, so at batch 50 the GPU lines sat flattened at the bottom.
"""

from __future__ import annotations

import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest
from planner.sweep import contexts_up_to
from tests.lazy_tabs import open_tab
from ui import charts, data
from ui.format import bytes_to_gib, format_tokens

ROOT = Path(__file__).resolve().parents[1]
MISTRAL = "mistralai/Mistral-7B-Instruct-v0.3"
MODELS = ["meta-llama/Meta-Llama-3.1-8B", MISTRAL, "meta-llama/Llama-2-7b-hf", "Qwen/Qwen2.5-7B"]
GPUS = ["nvidia-rtx-4090", "nvidia-h100-sxm-80gb"]  # one GPU of each of vLLM's profile-pass classes


def _page(**params) -> tuple[AppTest, dict]:
    at = AppTest.from_file(str(ROOT / "pages/1_Memory_curves.py"), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    (spec,) = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    return at, spec


def test_contexts_end_at_the_limit_inside_the_grid():
    assert contexts_up_to((128, 4000, 5000), 4096) == (128, 4000, 4096)
    assert contexts_up_to((128, 4096, 5000), 4096) == (128, 4096)
    assert contexts_up_to((128, 4096), 10_000_000) == (128, 4096)  # past the grid: the grid's end
    model = model_spec(MISTRAL)
    grid = data.curve_contexts([model_spec(MODELS[0]), model])
    assert 32_768 not in grid and max(c for c in grid if c < 32_768) < 32_000  # 31,357 here; 29,679 on a grid to 262,144
    assert data.within_limit(grid, model)[-1] == model.max_position_embeddings == 32_768


def test_one_colour_and_legend_entry_per_model_each_curve_to_its_limit():
    at, fig = _page(models=MODELS, gpus=GPUS)
    curves = [t for t in fig["data"] if "meta" in t]
    assert len(curves) == 8  # 4 models x 2 overhead classes
    legend = [t["name"] for t in curves if t.get("showlegend", True)]
    assert legend == [model_spec(m).display_name for m in MODELS]
    for model_id in MODELS:
        mine = [t for t in curves if t["legendgroup"] == model_id]
        assert len(mine) == 2 and len({t["line"]["color"] for t in mine}) == 1
        assert [t["line"]["dash"] for t in mine] == ["solid", "dash"]
        assert {max(t["x"]) for t in mine} == {data.model_limit(model_spec(model_id))}
    note = next(c.value for c in at.caption if "legend entry per model" in c.value)
    small, large = (get_gpu(g).name for g in GPUS)
    assert f"solid priced for {small}" in note and f"dashed priced for {large}" in note
    table = open_tab(at, "memory_curves_section", "Longest context that fits").table[0].value  # static: cells wrap
    row = table[table["Model"] == model_spec(MISTRAL).display_name].iloc[0]
    assert row[get_gpu(GPUS[1]).name] == f"{format_tokens(32_768)} (model limit)"  # where its curve now ends


def test_a_linear_axis_keeps_the_gpu_lines_in_view_and_marks_where_curves_leave():
    _, fig = _page(models=MODELS, gpus=GPUS, batch_size="50")
    top = fig["layout"]["yaxis"]["range"][1]
    lines = [s["y0"] for s in fig["layout"]["shapes"]]
    assert max(lines) < top <= charts.AXIS_HEADROOM * charts.CURVE_TOP_FACTOR * max(lines) + 1e-9
    curves = [t for t in fig["data"] if "meta" in t]
    exits = [t for t in fig["data"] if t.get("marker", {}).get("symbol") == "triangle-up"]
    leaving = [t for t in curves if max(t["y"]) > top]
    assert leaving and len(exits) == len(leaving)
    for exit_, curve in zip(exits, leaving):
        first_out = next(x for x, y in zip(curve["x"], curve["y"]) if y > top)
        assert exit_["x"] == [first_out] and exit_["y"] == [top] and exit_["showlegend"] is False
        assert exit_["legendgroup"] == curve["legendgroup"]


def test_the_axis_fits_the_curves_when_none_climbs_far():
    models = [model_spec(m) for m in MODELS[:2]]
    gpus = [get_gpu(g) for g in GPUS]
    request = PlanRequest(context_len=8192, batch_size=1)
    groups = data.memory_curve_groups(models, gpus, request, data.curve_contexts(models))
    capacities = [(g.name, int(g.framework_memory_bytes * 0.9)) for g in gpus]
    top, clipped = charts.memory_axis_top(groups, capacities)
    highest = max(bytes_to_gib(p.total_bytes) for c in groups for p in c.points)
    assert not clipped and top == charts.AXIS_HEADROOM * max(highest, *(bytes_to_gib(u) for _, u in capacities))


def test_hover_names_the_curve_once_per_trace_and_each_point_by_its_values():
    """Each point's hover shows the curve, the context x batch and the four sizes of the table, but the
    label and the words are the trace's ``hovertemplate`` (sent once) and only the values are per point
    (``customdata``): the figure is sent again on every rerun, and 4 models x 2 classes sent ~84 KB of
    repeated hover text. A label with Plotly's template syntax or HTML stays inert text."""
    at, fig = _page(models=MODELS, gpus=GPUS, batch_size=3)
    curves = [t for t in fig["data"] if "meta" in t]
    model = model_spec(MODELS[0])
    first = next(t for t in curves if t["legendgroup"] == MODELS[0])
    assert "hovertext" not in first and model.display_name in first["hovertemplate"]
    assert "x 3<br>" in first["hovertemplate"] and "%{customdata[0]}" in first["hovertemplate"]
    point = first["customdata"][0]
    assert point[0] == format_tokens(first["x"][0]) and all(" GiB" in v or " MiB" in v for v in point[1:])
    hover = sum(len(json.dumps(t.get("customdata", ""))) + len(t.get("hovertemplate", "")) for t in fig["data"])
    assert hover < 64_000, hover  # 84,090 characters of hover text before

    (group, *_) = data.memory_curve_groups([model], [get_gpu(GPUS[0])], PlanRequest(context_len=1024), (1024, 2048))
    curve = data.CurveGroup(label="x%{y}<b>bold</b>", model_id="m", gpu_names=("g",), group=0, points=group.points)
    template = charts.memory_curves([curve], [("g", 10 << 30)], 1).data[0].hovertemplate
    assert "%{y}" not in template and "<b>bold" not in template and "&lt;b&gt;bold" in template


QA_MODELS = ["meta-llama/Llama-4-Scout-17B-16E-Instruct", "Qwen/Qwen3-0.6B", "openai-community/gpt2",
             "google/gemma-3-1b-it", "meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-Next-80B-A3B-Instruct"]
QA_GPUS = ["nvidia-h200-sxm", "nvidia-rtx-4090", "nvidia-b200", "amd-mi300x"]


def test_gpu_labels_sit_in_the_right_margin_where_no_curve_runs():
    """QA: the white-backed B200 label hid Qwen3-Next's curve from 128K to 262K (linear axis) and the B200 and
    MI300X labels hid Llama 4 Scout's (log axis). Each label now starts right of the plot area (paper x >= 1,
    anchored at its left), in a margin wide enough for its longest line; the browser check measures the boxes
    (tests/test_browser_curve_labels.py)."""
    for log_y in ("false", "true"):
        _, fig = _page(models=QA_MODELS, gpus=QA_GPUS, log_y=log_y)
        labels = fig["layout"]["annotations"]
        assert len(labels) == len(QA_GPUS)
        for label in labels:
            assert label["xref"] == "paper" and label["x"] >= 1 and label["xanchor"] == "left", label
        longest = max(len(line) for label in labels for line in label["text"].split("<br>"))
        assert fig["layout"]["margin"]["r"] >= 5.5 * longest  # 11 px Source Sans: about 5.5 px a character


def test_spread_labels_keeps_them_apart_near_their_lines_and_inside_the_axis():
    targets, heights = [10.0, 10.5, 11.0, 40.0, 99.0], [3.0, 3.0, 4.0, 3.0, 3.0]
    places = charts.spread_labels(targets, heights, 0.0, 100.0)
    spans = sorted((p - h / 2, p + h / 2) for p, h in zip(places, heights))
    assert all(below[1] <= above[0] + 1e-9 for below, above in zip(spans, spans[1:]))
    assert spans[0][0] >= 0 and spans[-1][1] <= 100
    assert places[3] == 40.0  # a label with room stays on its line
    assert places[4] == 100.0 - 1.5  # one at the top is moved down just enough


QA42_MODELS = ["deepseek-ai/DeepSeek-V4-Flash", "Qwen/Qwen3.6-35B-A3B", "google/gemma-4-26B-A4B", "openai/gpt-oss-120b",
               "MiniMaxAI/MiniMax-M2.7", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8"]
QA42_GPUS = ["nvidia-h100-sxm-80gb", "nvidia-h200-sxm", "nvidia-b200", "nvidia-l40s", "nvidia-l4", "amd-mi300x",
             "nvidia-rtx-5090", "nvidia-dgx-spark"]


def test_each_gpu_line_has_the_dash_of_the_curves_priced_for_it():
    """QA (stop 42): the curves' dash told the overhead class they are priced for, while the GPUs' usable lines had
    dashes of their own (MI300X dashed, B200 dash-dot, H200 dotted), so a dotted curve priced for the L40S read
    against the dotted H200 line. Each usable line now has the dash of the curves priced for its GPU, one dash per
    class, and the caption says so."""
    at, fig = _page(models=QA42_MODELS, gpus=QA42_GPUS, num_gpus="2", batch_size="4")
    names = [get_gpu(g).name for g in QA42_GPUS]
    models = [model_spec(m) for m in QA42_MODELS]
    groups = data.memory_curve_groups(models, [get_gpu(g) for g in QA42_GPUS], PlanRequest(
        context_len=8192, batch_size=4, num_gpus=2), data.curve_contexts(models))
    curves = [t for t in fig["data"] if "meta" in t]
    assert [t["meta"] for t in curves] == [c.label for c in groups]  # the page draws these curves, in this order
    line_dash = dict(zip(names, (s["line"]["dash"] for s in fig["layout"]["shapes"])))
    classes: dict[str, set[tuple[str, ...]]] = {}
    for trace, group in zip(curves, groups):
        for name in group.gpu_names:
            assert line_dash[name] == trace["line"]["dash"], (name, group.label)
        classes.setdefault(trace["line"]["dash"], set()).add(tuple(sorted(group.gpu_names)))
    assert all(len(v) == 1 for v in classes.values()), classes  # one dash, one set of GPUs
    assert set(line_dash.values()) == set(classes)
    note = next(c.value for c in at.caption if "legend entry per model" in c.value)
    assert "usable line" in note
    for dash, (gpus,) in classes.items():
        assert f"{charts.dash_word(dash)} priced for {', '.join(n for n in names if n in gpus)}" in note, note
