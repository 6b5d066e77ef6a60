"""The Engine page's CUDA-graph knobs (vLLM ``cudagraph_mode`` and ``-O``), URL-bound like the CLI flags.

Keys are the CLI flags with underscores: ``cudagraph_mode`` (``--cudagraph-mode``) and ``optimization_level``
(``-O`` / ``--optimization-level``). Empty = the vLLM version's default. Other engines have no such knob: the
values are then left out of the request (:func:`with_cudagraph_knobs`).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.types import EngineRequest
from planner.engines.vllm_cudagraph import CUDAGRAPH_MODES, OPTIMIZATION_LEVELS
from ui import inputs
from ui.format import shorten

LEVELS = tuple(str(level) for level in OPTIMIZATION_LEVELS)
"""``-O`` values as the URL carries them."""

MODE_HELP = ("vLLM `cudagraph_mode` (`--cudagraph-mode`; vLLM's `-cc.cudagraph_mode=...`). FULL_AND_PIECEWISE "
             "(the default from v0.11) captures every batch size in pieces between attention layers plus one "
             "whole graph per decode size; PIECEWISE (the default before) only the pieces; FULL one whole graph "
             "per size; FULL_DECODE_ONLY only the decode sizes; NONE nothing. Each graph holds memory: the 2026 "
             "builds take their estimate from the KV cache, older ones need it inside the 1 - utilization headroom.")
LEVEL_HELP = ("vLLM `-O` (`--optimization-level` from v0.12): 0 captures no CUDA graphs, 1 PIECEWISE, 2 and 3 "
              "FULL_AND_PIECEWISE. On v0.10 and earlier `-O` is the compilation level and only 3 (the default) "
              "captures graphs. A CUDA graph mode set above wins over it.")


GRAPH_KEYS = ("cudagraph_mode", "optimization_level")
"""The two knobs' URL keys (the CLI flags with underscores)."""

_ACCEPTED = {"cudagraph_mode": ("a CUDA graph mode", CUDAGRAPH_MODES), "optimization_level": ("an -O level", LEVELS)}
"""Per key: the noun for a bad value, and the values vLLM takes."""


def graph_value(key: str, raw: str) -> str | int | None:
    """A link value of one of :data:`GRAPH_KEYS` as a request holds it (a mode in capitals, a level as a number), or
    None when it is empty or not a value vLLM takes."""
    if key == "cudagraph_mode":
        return raw.upper() if raw.upper() in CUDAGRAPH_MODES else None
    return int(raw) if raw in LEVELS else None


def graph_problem(key: str, raw: str, outcome: str) -> str:
    """The one line for a bad link value ``raw`` of ``key`` (one of :data:`GRAPH_KEYS`): what is wrong, the values
    vLLM takes, ``outcome`` (what the page does instead) and where to set it."""
    noun, accepted = _ACCEPTED[key]
    return (f"Link parameter `{key}={shorten(raw)}` is not {noun} vLLM takes ({', '.join(accepted)}), so {outcome}: "
            "set it on the Engine page.")


def link_graph_problems(outcome: str = "this page leaves it out") -> list[str]:
    """:func:`graph_problem` for each bad value of :data:`GRAPH_KEYS` in the link, for a page that neither shows nor
    plans these knobs (Catalog, Find a GPU setup): a link carries them between pages (:data:`ui.nav.PLAN_KEYS`), and
    a bad one was passed on in silence (QA: ``/Catalog?cudagraph_mode=BOGUS``)."""
    out = []
    for key in GRAPH_KEYS:
        raw = st.query_params.get(key) or ""
        if raw and graph_value(key, raw) is None:
            out.append(graph_problem(key, raw, outcome))
    return out


def cudagraph_inputs(engine: str) -> tuple[dict, list[str]]:
    """The two selectboxes (vLLM engines only) and the link problems of their URL values.

    Returns:
        ``({"cudagraph_mode": str | None, "optimization_level": int | None}, problems)``.
    """
    problems = inputs.check_link({
        "cudagraph_mode": (CUDAGRAPH_MODES, str.upper, "CUDA graph mode", "the version's default"),
        "optimization_level": (LEVELS, None, "-O level", "the version's default"),
    }, {}, ())
    if ENGINE_PROFILES[engine].family != "vllm":
        return {"cudagraph_mode": None, "optimization_level": None}, problems
    with st.sidebar.expander("CUDA graphs (vLLM)", expanded=False):
        mode = st.selectbox("CUDA graph mode (empty = version default)", CUDAGRAPH_MODES, index=None,
                            placeholder="version default", key="cudagraph_mode", bind="query-params", help=MODE_HELP)
        level = st.selectbox("-O level (empty = default)", LEVELS, index=None, placeholder="default",
                             key="optimization_level", bind="query-params", help=LEVEL_HELP)
    return {"cudagraph_mode": mode, "optimization_level": None if level is None else int(level)}, problems


def with_cudagraph_knobs(request: EngineRequest, knobs: dict) -> EngineRequest:
    """``request`` with the CUDA-graph knobs set, for a vLLM engine; unchanged for any other."""
    if ENGINE_PROFILES[request.engine].family != "vllm":
        return request
    return replace(request, cudagraph_mode=knobs.get("cudagraph_mode"), optimization_level=knobs.get("optimization_level"))
