"""The app's charts drawn once per change: Streamlit's look written into each figure, no template.

Why (issue 27, "Speed, decided"): Streamlit draws a ``st.plotly_chart`` with ``Plotly.newPlot`` and then
calls ``Plotly.react`` twice with a JSON copy of the same figure (its theme effect and its state update;
Streamlit 1.67's ``PlotlyChart`` element, ``frontend/lib/src/components/elements/PlotlyChart/PlotlyChart.tsx``).
``Plotly.react`` redraws everything when the figure has a ``layout.template`` (Streamlit's theme always puts
one there) or data arrays of a new identity without ``layout.datarevision`` (plotly.js ``plot_api.js``,
``react``, and the ``datarevision`` attribute's description). And ``newPlot`` draws twice when automargin
has to grow a margin for tick labels, titles or a legend. Measured in Chromium on the Concurrency chart
(5 lines): 35 writes of the line paths per mount with the theme (one draw writes each path twice), 10
without a template, with a ``datarevision``, ``theme=None`` and margins automargin need not grow. A chart
that changes is mounted afresh on every rerun (its element id hashes the figure), so each rerun paid that too.

So every chart of these pages is

* built with the values Streamlit's "streamlit" theme gives a figure under this app's fixed light theme
  (``.streamlit/config.toml``: ``base = "light"``, its colours, ``font = "sans-serif"``), written into the
  figure's own layout wherever the figure sets none (:data:`LOOK`, read from the themed
  ``layout.template.layout`` Streamlit 1.67 builds; source: ``CustomTheme.tsx``,
  ``applyStreamlitThemeTemplateLayout``, which also sets a title in bold);
* given margins as wide as automargin makes them at 1,280 px (in each builder; automargin stays on, so a
  longer label than usual still fits, at the cost of the second draw);
* without a template, with ``datarevision`` = a digest of its data (:func:`finish`);
* shown with ``theme=None`` (:func:`show`), so Streamlit adds no template back.

``tests/test_browser_chart_draws.py`` checks each chart page in Chromium.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping

import plotly.graph_objects as go

_FONT = '"Source Sans", sans-serif'
"""Streamlit's body font for ``font = "sans-serif"``."""

_MUTED = "#808495"
"""Streamlit's gray70 under this theme: tick labels, axis titles, hover text."""

_GRID = "#e6eaf1"
"""Streamlit's gray30 under this theme: grid, zero and tick lines."""

_AXIS = dict(zerolinecolor=_GRID, gridcolor=_GRID, tickcolor=_GRID, tickfont=dict(color=_MUTED, size=12),
             automargin=True)
# Not the theme's ``minor.gridcolor``: in a figure's own layout (not a template) it turns minor grid lines on,
# thousands of them on a log axis (plotly.js coerces ``minor.showgrid`` on when a minor grid colour is given).

LOOK: dict = dict(
    font=dict(family=_FONT, size=12, color=_MUTED),
    title=dict(font=dict(family=_FONT, size=16, color="#1F2933", weight="bold"), x=0, xanchor="left",
               pad=dict(l=4)),
    legend=dict(title=dict(font=dict(size=12, color=_MUTED), side="top"), valign="top",
                bordercolor="rgba(0,0,0,0)", borderwidth=0, font=dict(size=12, color="#262730")),
    paper_bgcolor="#FFFFFF",
    plot_bgcolor="#FFFFFF",
    colorway=["#0068c9", "#83c9ff", "#ff2b2b", "#ffabab", "#29b09d", "#7defa1", "#ff8700", "#ffd16a",
              "#6d3fc0", "#d5dae5"],
    xaxis=dict(_AXIS, showgrid=False, zeroline=False, title=dict(font=dict(color=_MUTED, size=14), standoff=20)),
    yaxis=dict(_AXIS, ticklabelposition="outside", title=dict(font=dict(color=_MUTED, size=14), standoff=24)),
    margin=dict(pad=8),
    hoverlabel=dict(bgcolor="#FFFFFF", bordercolor="rgba(31, 41, 51, 0.2)",
                    font=dict(color=_MUTED, family=_FONT, size=12)),
)
"""What Streamlit's theme put under every figure of this app (its ``layout.template.layout``, light theme
of ``.streamlit/config.toml``), as layout values; a figure's own values win (:func:`missing`)."""


def missing(look: Mapping, layout: Mapping) -> dict:
    """The part of ``look`` that ``layout`` does not set, nested: what to add so ``layout`` keeps its own
    values and gets ``look``'s elsewhere (as a template would give them).

    ``{"font": {"size": 12, "color": "a"}}`` under ``{"font": {"size": 14}}`` gives
    ``{"font": {"color": "a"}}``.
    """
    out = {}
    for key, value in look.items():
        if key not in layout:
            out[key] = value
        elif isinstance(value, Mapping) and isinstance(layout[key], Mapping):
            below = missing(value, layout[key])
            if below:
                out[key] = below
    return out


def data_revision(traces: list) -> str:
    """A digest of a figure's traces (their ``to_dict`` form; sha256 of the JSON, 16 hex digits): it changes
    whenever a value does."""
    return hashlib.sha256(json.dumps(traces, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _add(layout: dict, extra: Mapping) -> None:
    """Add ``extra`` (from :func:`missing`) into ``layout`` in place, nested."""
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(layout.get(key), dict):
            _add(layout[key], value)
        else:
            layout[key] = copy.deepcopy(value)


def finish(fig: go.Figure) -> go.Figure:
    """``fig`` with :data:`LOOK` where it sets nothing, no template and a ``datarevision`` (module docstring).

    Returns a new figure built from ``fig``'s dict without Plotly's per-property validation: ``fig`` was
    validated as it was built, and :data:`LOOK` is (``tests/test_page_speed.py``); validating the look's
    ~40 values again cost as much as building the figure (about 7 ms a chart). Builders return this
    (:func:`ui.charts.chart`).
    """
    spec = fig.to_dict()
    layout = spec["layout"]
    layout.pop("template", None)
    _add(layout, missing(LOOK, layout))
    for key in [k for k in layout if re.fullmatch(r"[xy]axis\d+", k)]:  # a template styles every axis
        _add(layout[key], missing(LOOK[key[:5]], layout[key]))
    layout["datarevision"] = data_revision(spec["data"])
    out = _unvalidated(spec)
    out.layout.template = None  # a new figure takes the default template; unvalidated, this sends "template": null
    return out


def _unvalidated(spec: dict) -> go.Figure:
    """``go.Figure(spec)`` without validating each property (plotly's ``_validate`` flag of
    ``BaseFigure.__init__``); validated where a plotly version lacks the flag."""
    try:
        return go.Figure(spec, _validate=False)
    except TypeError:
        return go.Figure(spec)


def show(container, fig: go.Figure, *, key: str) -> None:
    """Draw a :func:`finish`-ed figure with ``theme=None`` (Streamlit's theme would put a template back).

    Args:
        container: ``st`` or a column / container.
        fig: The figure.
        key: The element key (the page's tests and the browser checks find the chart by it).
    """
    container.plotly_chart(fig, key=key, theme=None)
