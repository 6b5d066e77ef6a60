"""Plotly figure builders. Inputs are planner results; sizes reach the axes in GiB.

Every size on an axis is ``bytes_to_gib`` of a planner value, and every hover
label is :func:`ui.format.format_bytes_exact` of it (GiB with 2 decimals and
the exact byte count), so charts and metrics never disagree.
"""

from __future__ import annotations

import functools
import math
import textwrap
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence

import pandas  # noqa: F401 - imported before Plotly, see below
import plotly.graph_objects as go

# Plotly's validators look pandas up in sys.modules (_plotly_utils.optional_imports) without the import
# lock, so on a cold server a page drawing a chart while another session's first table was still importing
# pandas saw the half-initialised module ("partially initialized module 'pandas' has no attribute
# 'Series'", 8 sessions opening every page at once, scripts/server_load.py). Importing it here, under
# this module's import lock, makes every chart builder wait for a whole pandas.

from ui import palette
from ui.chart_look import finish, show  # noqa: F401 - show: the pages draw these charts with it
from ui.format import (
    binary_unit,
    bytes_in,
    bytes_to_gib,
    count_noun,
    format_bytes,
    format_bytes_exact,
    format_bytes_short,
    format_params,
    format_tokens,
    format_tokens_short,
    plotly_text,
)

PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#B279A2", "#FF9DA6", "#9D755D")
"""Colour per series (Tableau 10 order), colour-blind friendly."""


ALLOCATION_COLOURS = {"Reserved": palette.KV_RESERVED, "In use": palette.KV_IN_USE, "Wasted": palette.KV_WASTED}
"""The Allocation page's KV bars (``ui.allocation_view.allocation_bars``): in use orange as on Home, wasted grey
(green is free KV everywhere)."""

ATTENTION_COLOURS = {"MHA": "#E45756", "GQA": "#4C78A8", "MQA": "#54A24B", "MLA": "#F58518"}


_TOKEN_TICKS = tuple(1 << k for k in range(7, 25))  # 128, 256, 512, 1K, ... 16M
TOKEN_AXIS = dict(type="log", title="Context length [tokens per sequence; K = 1,024]",
                   tickvals=list(_TOKEN_TICKS), ticktext=[format_tokens_short(t) for t in _TOKEN_TICKS])
_PARAM_TICKS = (10**8, 10**9, 10**10, 10**11, 10**12)
_BYTE_TICKS = tuple(1 << k for k in range(10, 26, 2))  # 1,024 B ... 16 MiB, every second power of 2

_LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
               hoverlabel=dict(namelength=-1))


FIGURES_KEPT = 64
"""Figures :func:`reused` keeps per builder (the most recently used ones)."""


def _frozen(value):
    """``value`` as a hashable key: mappings and lists become tuples, recursively.

    Raises:
        TypeError: something inside is not hashable (the figure is then built afresh).
    """
    if isinstance(value, Mapping):
        return ("<map>",) + tuple((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ("<seq>",) + tuple(_frozen(v) for v in value)
    hash(value)
    return value


def reused(builder: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """Keep a builder's figures by its arguments, so a rerun for a knob a chart does not read reuses it.

    Plotly validates every property a figure is built with (10-15 ms per chart here), and a page
    rerun after one widget change leaves most charts' inputs as they were. The key is the arguments
    themselves (planner results are frozen dataclasses; lists and dicts are turned into tuples),
    never their identity. Callers must not change a figure they get (``st.plotly_chart`` only reads it).
    """
    kept: OrderedDict = OrderedDict()
    lock = threading.Lock()

    @functools.wraps(builder)
    def build(*args, **kwargs):
        try:
            key = _frozen((args, kwargs))
        except TypeError:
            return builder(*args, **kwargs)
        with lock:
            figure = kept.get(key)
            if figure is not None:
                kept.move_to_end(key)
                return figure
        figure = builder(*args, **kwargs)
        with lock:
            kept[key] = figure
            while len(kept) > FIGURES_KEPT:
                kept.popitem(last=False)
        return figure

    build.kept = kept
    return build


def chart(builder: Callable[..., go.Figure]) -> Callable[..., go.Figure]:
    """:func:`reused`, each figure finished in the app's look without a template (:func:`ui.chart_look.finish`):
    Streamlit then draws it once, not three times. Draw it with :func:`ui.chart_look.show` (``theme=None``)."""
    @functools.wraps(builder)
    def build(*args, **kwargs):
        return finish(builder(*args, **kwargs))

    return reused(build)


def _line(axis: str, value: float, dash: str, colour: str, width: float) -> dict:
    """A full-width (``axis="y"``) or full-height (``axis="x"``) reference line as a layout shape.

    Layout shapes are much cheaper to build than ``Figure.add_hline``.
    """
    other = "y" if axis == "x" else "x"
    return {"type": "line", "xref": "x" if axis == "x" else "paper", "yref": "y" if axis == "y" else "paper",
            axis + "0": value, axis + "1": value, other + "0": 0, other + "1": 1,
            "line": {"dash": dash, "color": colour, "width": width}}


CLASS_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "9px,3px,3px,3px,3px,3px", "3px,9px")
"""Line style per GPU class (:class:`ui.data.CurveGroup` ``group``: the GPUs of one of vLLM's profile-pass
classes): each model's curve priced for those GPUs, in the model's colour, and those GPUs' grey usable lines
(eight styles: the catalog's GPUs fall in at most eight classes for one model; more would repeat a style). The
last two are plotly dash lists in px, as long as the named ones at 3 px (plotly.js scales a named dash by the
line width, at least 3)."""

CURVE_TOP_FACTOR = 1.25
"""A linear memory axis ends at the highest curve, or at this much above the largest GPU line (or the
highest curve start, so every curve is seen starting) when a curve climbs beyond that: a batch of 50
long sequences no longer flattens every GPU line at the bottom."""

AXIS_HEADROOM = 1.06
"""Room above the highest value drawn, so the top line and its label are not on the frame."""


def memory_axis_top(curves: Sequence, capacities: Sequence[tuple[str, int]]) -> tuple[float, bool]:
    """``(top of the linear memory axis [GiB], whether some curve climbs past it)`` (:data:`CURVE_TOP_FACTOR`)."""
    totals = [bytes_to_gib(p.total_bytes) for c in curves for p in c.points]
    lines = [bytes_to_gib(u) for _, u in capacities]
    starts = [bytes_to_gib(c.points[0].total_bytes) for c in curves if c.points]
    highest = max(totals + lines, default=1.0)
    cap = CURVE_TOP_FACTOR * max(lines + starts, default=highest)
    return AXIS_HEADROOM * min(highest, cap), highest > cap


def _exit_marker(curve, top_gib: float, colour: str, batch_size: int) -> dict | None:
    """A triangle on the axis top where ``curve`` leaves a linear axis ending at ``top_gib``, or None."""
    out = next((p for p in curve.points if bytes_to_gib(p.total_bytes) > top_gib), None)
    if out is None:
        return None
    text = (f"<b>{plotly_text(curve.label)}</b><br>above the chart from {format_tokens(out.context_len)} x "
            f"{batch_size}: total {format_bytes_exact(out.total_bytes)}<br>(the log memory axis shows all of it)")
    return dict(x=[out.context_len], y=[top_gib], mode="markers", legendgroup=curve.model_id, showlegend=False,
                marker=dict(symbol="triangle-up", size=13, color=colour, line=dict(color="#333333", width=1)),
                cliponaxis=False, hovertext=[text], hovertemplate="%{hovertext}<extra></extra>")


_DASH_WORDS = dict(zip(CLASS_DASHES, ("solid", "dashed", "dotted", "dash-dot", "long-dashed", "long-dash-dot",
                                      "dash-dot-dot", "sparse-dotted")))


def dash_word(dash: str) -> str:
    """A :data:`CLASS_DASHES` style in words (``"dot"`` -> ``"dotted"``)."""
    return _DASH_WORDS[dash]


def class_dash(group: int) -> str:
    """The line style of GPU class ``group`` (:data:`CLASS_DASHES`)."""
    return CLASS_DASHES[group % len(CLASS_DASHES)]


def class_note(curves: Sequence) -> str | None:
    """What the line styles mean when a model has a curve per GPU class, else None:
    ``"... a line per class, and each GPU's grey usable line has the style of the curves priced for it: solid
    priced for RTX 4090, L40S; dashed priced for H100 SXM5 80GB."``."""
    names: dict[int, list[str]] = {}
    for c in curves:
        for name in c.gpu_names:
            if name not in names.setdefault(c.group, []):
                names[c.group].append(name)
    if len(names) < 2:
        return None
    parts = [f"{dash_word(class_dash(g))} priced for {', '.join(names[g])}" for g in sorted(names)]
    return ("One colour and one legend entry per model. The chosen GPUs fall in more than one of vLLM's "
            "profile-pass classes, so a model has a line per class, and each GPU's grey usable line has the style "
            f"of the curves priced for it: {'; '.join(parts)}.")


CROWDED_CURVES = 6
"""Past this many curves :func:`memory_curves` draws thinner lines without markers (QA: 16 marked lines of six
models on six GPUs blurred into one band at 1,280 px)."""


@chart
def memory_curves(curves: Sequence, capacities: Sequence[tuple[str, int]], batch_size: int,
                  log_y: bool = False) -> go.Figure:
    """Per-GPU memory against context length, one colour and one legend entry per model, log x.

    A model priced for GPUs of two overhead classes has a line per class, in its colour, told apart by
    :data:`CLASS_DASHES`; each GPU's grey usable line has the style of the curves priced for it, so one style
    means one set of GPUs (:func:`class_note` says which). A linear axis ends at :func:`memory_axis_top`;
    a curve that climbs past it ends in a triangle on the top edge (hover: where and how much).

    Args:
        curves: :class:`ui.data.CurveGroup` items (``label``, ``model_id``, ``points``, ``group``),
            each priced with the overhead of the GPUs it names, so it crosses those GPUs' lines
            where the table's max context lies. Each trace's ``meta`` is its ``label``.
        capacities: (GPU label, usable bytes) for the horizontal capacity lines, labelled in the right
            margin beside the plot, where they cover no curve (:func:`gpu_line_labels`).
        batch_size: Sequences per point, for the hover text.
        log_y: Log memory axis, so a 600 GiB model and an 8 GiB one stay readable together.
    """
    fig = go.Figure()
    model_index = {mid: i for i, mid in enumerate(dict.fromkeys(c.model_id for c in curves))}
    names = {c.model_id: c.label.split(" · on ")[0] for c in curves if c.group == 0}
    top_gib, clipped = (None, False) if log_y else memory_axis_top(curves, capacities)
    exits = []
    shown: set[str] = set()
    crowded = len(curves) > CROWDED_CURVES
    for curve in curves:
        i, points = model_index[curve.model_id], curve.points
        colour = PALETTE[i % len(PALETTE)]
        values = [[format_tokens(p.context_len), *(format_bytes_exact(b) for b in
                                                   (p.total_bytes, p.weights_bytes, p.kv_cache_bytes, p.overhead_bytes))]
                  for p in points]
        fig.add_scatter(x=[p.context_len for p in points], y=[bytes_to_gib(p.total_bytes) for p in points],
                        mode="lines" if crowded else "lines+markers",
                        name=plotly_text(names.get(curve.model_id, curve.label)),
                        meta=curve.label, legendgroup=curve.model_id, showlegend=curve.model_id not in shown,
                        line=dict(color=colour, width=2 if crowded else 3, dash=class_dash(curve.group)),
                        marker=dict(size=6, maxdisplayed=14),
                        customdata=values, hovertemplate=_curve_hover(curve.label, batch_size))
        shown.add(curve.model_id)
        if clipped:
            exits.append(_exit_marker(curve, top_gib, colour, batch_size))
    for marker in filter(None, exits):
        fig.add_scatter(**marker)
    values = [bytes_to_gib(p.total_bytes) for curve in curves for p in curve.points]
    values += [bytes_to_gib(usable) for _, usable in capacities]
    if log_y:
        low, high = min(values, default=1), max(values, default=1)
        ticks = _log_ticks(low, high)
        bottom, top = _log_range(low, high)
        yaxis = dict(title="Memory per GPU [GiB, log scale]", type="log", tickvals=ticks, range=[bottom, top],
                     ticktext=[f"{t:,g}" for t in ticks])
    else:
        bottom, top = 0.0, top_gib
        yaxis = dict(title="Memory per GPU [GiB]", range=[0, top_gib])
    labels, label_width = gpu_line_labels(capacities, bottom, top, log_y)
    group_of = {name: c.group for c in curves for name in c.gpu_names}  # each GPU's line: its curves' style
    fig.update_layout(
        shapes=[_line("y", bytes_to_gib(usable), class_dash(group_of.get(name, 0)), "#555555", 1.5)
                for name, usable in capacities],
        annotations=labels)
    fig.update_layout(height=520, xaxis=TOKEN_AXIS, yaxis=yaxis, hovermode="closest", **_LAYOUT)
    # l, t, b: what automargin grows to, drawn once (ui.chart_look); r: the GPU labels' column, which
    # automargin does not measure (annotations take no part in it).
    fig.update_layout(margin=dict(l=80, r=max(16, label_width), t=52, b=80))
    return fig


def _curve_hover(label: str, batch_size: int) -> str:
    """A memory curve's ``hovertemplate``: its label and the words once per trace, each point's values from
    its ``customdata`` (context, total, weights, KV cache, overhead). The figure is sent on every rerun, and
    the label repeated in every point's text made most of it. ``%`` of the label is an entity, so a custom
    name holding ``%{y}`` is shown as typed, not filled in by Plotly."""
    name = plotly_text(label).replace("%", "&#37;")
    return (f"<b>{name}</b><br>%{{customdata[0]}} x {batch_size}<br>total %{{customdata[1]}}<br>"
            "weights %{customdata[2]}<br>KV cache %{customdata[3]}<br>overhead %{customdata[4]}<extra></extra>")


LABEL_FONT_PX = 11
"""Font size of a GPU line's label [px]."""

LABEL_LINE_PX = 15
"""Height of one line of a GPU line's label [px] (plotly.js draws lines 1.3 em apart, plus the box's padding)."""

LABEL_GAP_PX = 4
"""Space between two GPU labels [px]."""

LABEL_CHARS = 22
"""Longest line of a GPU label [characters]: a longer GPU name wraps at its spaces."""

LABEL_CHAR_PX = 6.2
"""Width of a character of a GPU label [px] (11 px Source Sans averages about 5.5 px; room for wide ones)."""

LABEL_ARROW_PX = 12
"""Length of the leader from a GPU line's right end to its label [px]."""

PLOT_HEIGHT_PX = 360
"""Height of the memory chart's plot area [px] that the labels are spaced for: 520 px less the margins, and
less a second legend row (six models); a taller plot leaves more room between them."""


def _label_lines(label: str, usable: int) -> list[str]:
    """A GPU line's label as its lines: the GPU name wrapped at :data:`LABEL_CHARS`, then its usable size."""
    return [*(textwrap.wrap(label, LABEL_CHARS, break_long_words=False) or [""]), f"usable {format_bytes(usable)}"]


def spread_labels(targets: Sequence[float], heights: Sequence[float], low: float, high: float) -> list[float]:
    """Centres for labels wanted at ``targets`` (in order), each ``heights[i]`` tall, none overlapping and
    each as near its target as that allows, kept inside ``[low, high]`` while they fit there.

    Pushes each label up past the one below it, then, when the top one passes ``high``, down from the top.
    ``spread_labels([1, 1.1], [0.5, 0.5], 0, 10) == [1, 1.5]``.
    """
    order = sorted(range(len(targets)), key=lambda i: targets[i])
    place = [0.0] * len(targets)
    previous_top = -math.inf
    for i in order:
        place[i] = max(targets[i], low + heights[i] / 2, previous_top + heights[i] / 2)
        previous_top = place[i] + heights[i] / 2
    next_bottom = math.inf
    for i in reversed(order):
        place[i] = min(place[i], high - heights[i] / 2, next_bottom - heights[i] / 2)
        next_bottom = place[i] - heights[i] / 2
    return place


def gpu_line_labels(capacities: Sequence[tuple[str, int]], bottom: float, top: float,
                    log_y: bool) -> tuple[list[dict], int]:
    """Each GPU line's label in the right margin, outside the plot area, so it covers no curve (a label drawn
    on the plot hid Qwen3-Next's curve from 128K to 262K behind "B200 ... usable 160.51 GiB"), and the
    right margin they need [px].

    Each label starts :data:`LABEL_ARROW_PX` right of the plot, a thin leader from its line's end; labels
    whose lines lie close are moved apart (:func:`spread_labels`, spaced for a :data:`PLOT_HEIGHT_PX` plot).

    Args:
        capacities: (GPU label, usable bytes) per line.
        bottom, top: The memory axis's range, as Plotly holds it (log10 of GiB on a log axis).
        log_y: The memory axis is logarithmic (annotations then take log10 of a value).
    """
    if not capacities:
        return [], 0
    per_px = (top - bottom) / PLOT_HEIGHT_PX
    lines = [_label_lines(label, usable) for label, usable in capacities]
    heights = [(len(text) * LABEL_LINE_PX + LABEL_GAP_PX) * per_px for text in lines]
    targets = [_axis_value(bytes_to_gib(usable), log_y) for _, usable in capacities]
    places = spread_labels(targets, heights, bottom, top)
    labels = [dict(xref="paper", x=1, yref="y", y=target, ax=LABEL_ARROW_PX, axref="pixel", ay=place, ayref="y",
                   xanchor="left", yanchor="middle", align="left", showarrow=True, arrowhead=0, arrowwidth=1,
                   arrowcolor="#555555", standoff=0, text="<br>".join(plotly_text(t) for t in text),
                   font=dict(size=LABEL_FONT_PX, color="#333333"))
              for text, target, place in zip(lines, targets, places)]
    widest = max(len(t) for text in lines for t in text)
    return labels, math.ceil(LABEL_ARROW_PX + 8 + widest * LABEL_CHAR_PX)


def _axis_value(gib: float, log_y: bool) -> float:
    """Where ``gib`` sits on the memory axis as Plotly places annotations (log10 on a log axis)."""
    return math.log10(max(gib, 1e-9)) if log_y else gib


def _log_range(low: float, high: float) -> tuple[float, float]:
    """A log axis's range [log10 GiB] from ``low`` to ``high`` GiB with 5 % of the span (at least 0.05
    decades) beside each end, as Plotly's autorange pads it, fixed so the labels are spaced for it."""
    bottom, top = math.log10(max(low, 1e-9)), math.log10(max(high, 1e-9))
    pad = max(0.05 * (top - bottom), 0.05)
    return bottom - pad, top + pad


def _log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks covering ``[low, high]`` on a log axis, written out in full (plotly's own minor
    labels abbreviate 20 as "2", which reads as 2 GiB above 10)."""
    low, high = max(low, 1e-3), max(high, 1e-3)
    ticks = []
    for exponent in range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 1):
        for mantissa in (1, 2, 5):
            value = mantissa * 10.0 ** exponent
            if low / 2 <= value <= high * 2:
                ticks.append(round(value, 6))
    return ticks


@chart
def variant_bars(rows: Sequence[Mapping], value_key: str, text_key: str, title: str, axis: str,
                 byte_axis: bool = False) -> go.Figure:
    """Bars per attention variant (MHA / GQA / MQA / MLA), the as-built one outlined.

    With ``byte_axis`` the values are byte counts drawn in the binary unit of the largest
    one (KiB / MiB / GiB, :func:`ui.format.binary_unit`), named in the axis title.
    """
    names = [r["Variant"] for r in rows]
    values = [r[value_key] for r in rows]
    if byte_axis:
        unit = binary_unit(max(values, default=0))
        values = [bytes_in(v, unit) for v in values]
        axis = f"{axis} [{unit}]"
    fig = go.Figure(go.Bar(
        x=names, y=values, text=[r[text_key] for r in rows], textposition="auto",
        marker=dict(color=[ATTENTION_COLOURS.get(n, PALETTE[0]) for n in names],
                    line=dict(color=["#000000" if r["As built"] else "rgba(0,0,0,0)" for r in rows], width=3)),
        hovertext=[f"{r['Variant']}: {r[text_key]}" for r in rows], hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(title=title, height=340, yaxis_title=axis, showlegend=False, **_LAYOUT)
    fig.update_layout(margin=dict(l=86, r=10, t=56, b=50))
    return fig


@chart
def kv_vs_params(rows: Sequence[Mapping], highlight: str | None = None) -> go.Figure:
    """Catalog scatter: KV bytes per token against parameter count, log axes, by attention kind.

    Args:
        rows: Dicts with ``model_id``, ``params``, ``kv_bytes_per_token``, ``attention``.
        highlight: Model id to circle.
    """
    fig = go.Figure()
    for kind, colour in ATTENTION_COLOURS.items():
        group = [r for r in rows if r["attention"] == kind and r["kv_bytes_per_token"] > 0]
        if not group:
            continue
        fig.add_scatter(
            x=[r["params"] for r in group], y=[r["kv_bytes_per_token"] for r in group], mode="markers", name=kind,
            marker=dict(color=colour, size=11, line=dict(color="#ffffff", width=1)),
            hovertext=[f"<b>{plotly_text(r['model_id'])}</b><br>{format_params(r['params'])} params<br>"
                       f"KV {format_bytes(r['kv_bytes_per_token'], 'auto')} per token" for r in group],
            hovertemplate="%{hovertext}<extra></extra>")
    chosen = [r for r in rows if r["model_id"] == highlight and r["kv_bytes_per_token"] > 0]
    if chosen:
        fig.add_scatter(x=[chosen[0]["params"]], y=[chosen[0]["kv_bytes_per_token"]], mode="markers",
                        name="selected", marker=dict(size=22, color="rgba(0,0,0,0)",
                                                     line=dict(color="#000000", width=2)), hoverinfo="skip")
    fig.update_layout(
        height=480,
        xaxis=dict(type="log", title="Parameters (all experts)", tickvals=list(_PARAM_TICKS),
                   ticktext=[format_params(p, 0) for p in _PARAM_TICKS]),
        yaxis=dict(type="log", title="KV per token, all layers [KiB / MiB]", tickvals=list(_BYTE_TICKS),
                   ticktext=[format_bytes_short(b) for b in _BYTE_TICKS]),
        **_LAYOUT)
    fig.update_layout(margin=dict(l=105, r=16, t=52, b=80))  # what automargin grows to: drawn once (ui.chart_look)
    return fig


SERIES_DASHES = ("solid", "dash", "dot", "dashdot", "longdash")
"""Line styles of the Concurrency chart's GPUs, in order."""


@chart
def concurrency_lines(contexts: Sequence[int], series: Mapping[str, Sequence[int]]) -> go.Figure:
    """Max concurrent sequences against context length, one line per GPU, log axes.

    Points with zero sequences cannot sit on a log axis and are left out, and so is a GPU with none (the page's
    tile and warning say 0). Each line has its own dash (:data:`SERIES_DASHES`) and the later ones are thinner,
    so a GPU whose line runs on top of another's (an A100 and an H100 with 55 and 53 users) still shows both. The
    legend stays on when one line is left, which Plotly would leave unnamed.
    """
    fig = go.Figure()
    for i, (label, users) in enumerate(series.items()):
        pts = [(c, u) for c, u in zip(contexts, users) if u > 0]
        if not pts:
            continue
        fig.add_scatter(
            x=[c for c, _ in pts], y=[u for _, u in pts], mode="lines", name=plotly_text(label),
            line=dict(color=PALETTE[i % len(PALETTE)], width=max(1.5, 3.5 - 0.5 * i),
                      dash=SERIES_DASHES[i % len(SERIES_DASHES)]),
            hovertext=[f"<b>{plotly_text(label)}</b><br>{format_tokens(c)}: {count_noun(u, 'sequence')}" for c, u in pts],
            hovertemplate="%{hovertext}<extra></extra>")
    top = max((u for users in series.values() for u in users), default=1)
    fig.update_layout(height=500, xaxis=TOKEN_AXIS, showlegend=True,
                      yaxis=dict(type="log", title="Max concurrent sequences per replica", tickvals=log_ticks(top),
                                 tickformat=",d"), **_LAYOUT)
    fig.update_layout(margin=dict(l=100, r=24, t=52, b=80))  # what automargin grows to: drawn once (ui.chart_look)
    return fig


def log_ticks(top: int) -> list[int]:
    """Tick values 1, 2, 5, 10, 20, 50, ... up to the first at or above ``top``, for a log axis of counts: powers of
    ten alone left a curve between 1 and 64 (a link's ``max_num_seqs=64``) with the one label "10" (QA, stop 46)."""
    ticks, decade = [], 1
    while not ticks or ticks[-1] < top:
        ticks += [decade * m for m in (1, 2, 5)]
        decade *= 10
    return ticks
