"""Home's budget bar: one GPU's memory as a stacked horizontal bar, drawn in HTML.

Home shows one chart, and drawing it with ``st.plotly_chart`` makes a fresh browser
fetch, parse and run Streamlit's Plotly chunk (``PlotlyChart.*.js``, 4.7 MB) before the
page is idle: about a second of a 2.5 s first page on a 2-core machine (issue "Ten times
faster than the closest peer"). The bar needs no chart library: each segment is a
``<div>`` whose width is its share of the scale, the usable and card lines are absolutely
placed borders, and hovering a segment shows its exact size (``title``). Rendered with
``st.html`` (no iframe, no script).

Sizes are :class:`planner.budget.Plan` fields (per GPU [bytes]); widths are percentages
of ``max(card, sum of segments)``, so a batch that needs KV beyond its budget runs past
the usable line (and the card's, when the shortfall is larger than the headroom), as the
plan says. Labels go through :mod:`ui.format` (GiB = 2^30 bytes).
"""

from __future__ import annotations

import html
import math

from planner.budget import Plan
from planner.engines.rank_bar import FREE
from ui import palette
from ui.format import format_bytes

RANK_COLOURS = {
    "Weights": palette.WEIGHTS, "Activation peak": palette.ACTIVATION, "Non-torch": palette.RUNTIME,
    "CUDA graphs": palette.CUDA_GRAPHS, "KV cache": palette.KV_IN_USE, "Not allocated": palette.NOT_ALLOCATED,
    FREE: palette.NOT_ALLOCATED,  # an engine without a memory cap
    "Over the card": palette.OVER_BUDGET,
    # serving features (planner.engines.serving.SEGMENT_LABELS)
    "LoRA slots": palette.LORA, "Draft weights": palette.DRAFT_WEIGHTS, "LoRA / encoder buffers": palette.PROFILE_EXTRAS,
    "Draft KV cache": palette.DRAFT_KV, "Mamba state pool": palette.STATE_POOL,
}
"""Segments of :meth:`planner.engines.types.RankBudget.segments`, in :mod:`ui.palette`'s colours (Home's)."""

OVER_THE_CARD = "Over the card"
"""The segment of :meth:`planner.engines.types.RankBudget.segments` that is the terms' excess over the card."""


SEGMENT_COLOURS = {
    "Weights": palette.WEIGHTS,
    "KV cache in use": palette.KV_IN_USE,
    "Activation peak (forward)": palette.ACTIVATION,
    "Activation peak (sampler)": palette.SAMPLER,
    "Runtime": palette.RUNTIME,
    "Runner state + compile": palette.RUNNER_STATE,
    "Weights as loaded, beyond the checkpoint": palette.WEIGHTS_LOADED,
    "CUDA graphs": palette.CUDA_GRAPHS,
    "Overhead (override)": palette.ACTIVATION,
    "Free KV budget": palette.KV_FREE,
    "KV over the budget": palette.OVER_BUDGET,
}
"""Colour per segment (:mod:`ui.palette`, the same on the Engine and Allocation pages)."""

AXIS_TITLE = "GiB per GPU (2^30 bytes)"


def budget_segments(plan: Plan) -> list[tuple[str, int]]:
    """``(name, bytes)`` of the bar, left to right: weights, KV in use, overhead terms, free budget and,
    when the batch needs more KV than the budget, the shortfall (``Plan.kv_cache_shortfall_bytes``).

    The profile pass's peak is the forward pass or the sampler's logits, whichever is larger
    (``Plan.activation_bytes`` / ``Plan.logits_bytes``; the Engine page calls it the activation
    peak); the part that is zero is left out. Other zero-byte segments stay in the list (the
    legend names them); negative sizes count as zero.
    """
    if plan.overhead_overridden:
        overhead = [("Overhead (override)", plan.activation_bytes)]
    else:
        peaks = [(name, size) for name, size in (("Activation peak (forward)", plan.activation_bytes),
                                                 ("Activation peak (sampler)", plan.logits_bytes)) if size > 0]
        overhead = [("Weights as loaded, beyond the checkpoint", plan.loading_bytes),
                    *(peaks or [("Activation peak (forward)", 0)]), ("Runner state + compile", plan.runner_bytes),
                    ("Runtime", plan.runtime_bytes), ("CUDA graphs", plan.cudagraph_bytes)]
    segments = [("Weights", plan.weights_bytes_per_gpu), ("KV cache in use", plan.kv_cache_bytes_in_use),
                *overhead, ("Free KV budget", plan.free_bytes)]
    if plan.kv_cache_shortfall_bytes > 0:
        segments.append(("KV over the budget", plan.kv_cache_shortfall_bytes))
    return [(name, max(0, size)) for name, size in segments]


def nice_ticks(high_gib: float, target: int = 6) -> list[float]:
    """Axis ticks from 0 to at most ``high_gib`` [GiB], a 1, 2 or 5 x 10^k step, about ``target`` of them."""
    if high_gib <= 0:
        return [0.0]
    raw = high_gib / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    return [round(i * step, 12) for i in range(int(high_gib / step + 1e-9) + 1)]


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.3f}%"


SMALL_SEGMENT_BYTES = 2**30 // 200
"""Below this (0.005 GiB, which GiB with two decimals shows as 0.00), a segment's legend size is in KiB / MiB."""


def _segment_size(size: int) -> str:
    """A legend size: GiB as the axis, or KiB / MiB for a non-empty segment that would read "0.00 GiB"."""
    return format_bytes(size, "auto" if 0 < size < SMALL_SEGMENT_BYTES else "GiB")


NARROWEST_BAR_PX = 240
"""Width of the narrowest bar drawn [px]: a Disaggregation pool column at a 1,280 px window (357 px in Chromium) less
the fragment's 110 px right padding, rounded down. A usable label with less room than its width left of its line goes
right of it."""

LABEL_CHAR_PX = 7
"""Width of one label character at 12 px Source Sans Pro [px], rounded up (digits 6.1, lower-case 5.5 in Chromium)."""


def _label_px(text: str) -> int:
    """A line label's width [px], rounded up (:data:`LABEL_CHAR_PX` a character)."""
    return len(text) * LABEL_CHAR_PX


def _tick_label(value: float) -> str:
    return f"{value:g}"


def budget_bar_html(plan: Plan, gpu_label: str) -> str:
    """The bar as an HTML fragment for ``st.html``: segments, the usable (dashed) and card (solid) lines
    with their labels above the bar, a GiB axis under it and a legend with every segment's size.

    Each segment carries ``data-segment`` (its name) and ``data-bytes`` (its size [bytes]) for tests
    and tools, and a ``title`` with the exact size for hovering.
    """
    return segments_bar_html(budget_segments(plan), SEGMENT_COLOURS, usable_bytes=plan.usable_memory_bytes,
                             card_bytes=plan.gpu_memory_bytes, gpu_label=gpu_label)


def segments_bar_html(segments: list[tuple[str, int]], colours: dict[str, str], *, usable_bytes: int | None,
                      card_bytes: int, gpu_label: str, usable_label: str | None = None) -> str:
    """Any GPU's memory as :func:`budget_bar_html` draws Home's (the Disaggregation page's per-GPU bars).

    Args:
        segments: ``(name, bytes)`` left to right; zero-byte ones get no bar but stay in the legend.
        colours: Name -> colour (:mod:`ui.palette`).
        usable_bytes: Where the dashed "usable" line goes [bytes], or None for no such line.
        card_bytes: The card's framework-visible memory, the solid line [bytes].
        gpu_label: Words for the figure's accessible label.
        usable_label: The dashed line's words; default ``usable <size>``.
    """
    total = sum(size for _, size in segments)
    scale = max(card_bytes, total, 1)
    usable, card = usable_bytes, card_bytes
    bars = "".join(
        f'<div data-segment="{html.escape(name)}" data-bytes="{size}" '
        f'title="{html.escape(name)}: {html.escape(_segment_size(size))} ({size:,} B)" '
        f'style="width:{_pct(size, scale)};background:{colours[name]};height:100%"></div>'
        for name, size in segments if size)
    line = "position:absolute;top:-6px;bottom:-6px;width:0;border-left:2px {style} #333333"
    label = "position:absolute;bottom:{bottom}px;font-size:12px;color:#333333;white-space:nowrap"
    lines = labels = ""
    card_row = 2  # the card label's bottom [px]: the first row, or the second over a usable label beside it
    if usable is not None:
        words = usable_label or f"usable {format_bytes(usable)}"
        lines = f'<div data-line="usable" style="{line.format(style="dashed")};left:{_pct(usable, scale)}"></div>'
        room = usable / scale * NARROWEST_BAR_PX  # px left of the line on the narrowest bar
        if room >= _label_px(words) + 4:  # left of its line, as it always was
            place = f"right:calc(100% - {_pct(usable, scale)} + 4px)"
        else:  # it would run past the box's left edge (QA: "sable 19.79 GiB"): right of its line instead
            place = f"left:calc({_pct(usable, scale)} + 4px)"
            if (card - usable) / scale * NARROWEST_BAR_PX < _label_px(words) + 8:
                card_row = 18
        labels = (f'<span data-label="usable" style="{label.format(bottom=2)};{place}">'
                  f'{html.escape(words)}</span>')
    lines += f'<div data-line="card" style="{line.format(style="solid")};left:{_pct(card, scale)}"></div>'
    labels += (f'<span data-label="card" style="{label.format(bottom=card_row)};left:calc({_pct(card, scale)} + 4px)">'
               f'card {html.escape(format_bytes(card))}</span>')
    high = scale / 2**30
    ticks = "".join(  # a 5 px mark at the value and its label centred under it
        f'<span style="position:absolute;left:{_pct(t, high)};top:0;height:5px;border-left:1px solid #999999">'
        f'</span><span style="position:absolute;left:{_pct(t, high)};top:6px;transform:translateX(-50%);'
        f'font-size:11px;color:#555555">{_tick_label(t)}</span>'
        for t in nice_ticks(high))
    legend = "".join(
        f'<span style="display:inline-flex;align-items:center;margin:0 14px 4px 0;white-space:nowrap">'
        f'<span style="width:12px;height:12px;background:{colours[name]};margin-right:5px;'
        f'border:1px solid #bbbbbb"></span>{html.escape(name)} {html.escape(_segment_size(size))}</span>'
        for name, size in segments)
    summary = "; ".join(f"{name} {_segment_size(size)}" for name, size in segments)
    return (
        f'<div role="img" aria-label="{html.escape(f"{gpu_label}: {summary}")}" '
        f'style="font-family:\'Source Sans Pro\',sans-serif;padding:4px 110px 0 0;margin-bottom:8px">'
        f'<div style="position:relative;height:{card_row + 20}px">{labels}</div>'
        f'<div style="position:relative;display:flex;height:44px;background:#f4f4f4">{bars}{lines}</div>'
        f'<div style="position:relative;height:22px;margin-top:6px">{ticks}</div>'
        f'<div style="font-size:12px;color:#555555;margin:2px 0 8px">{AXIS_TITLE}</div>'
        f'<div style="font-size:13px;color:#31333F">{legend}</div>'
        "</div>")
