"""Metric tiles: a page's headline figures as one static HTML grid instead of one ``st.metric`` per figure.

Why (issue 27, "Speed, decided": a page's rerun after one widget change within 1.5x of its sidebar alone):
every ``st.metric`` is its own element in its own ``st.columns`` cell, and each one costs the browser a
component, a tooltip and a layout on every rerun. Measured side by side on one server
(``scripts/perf_budget.py --ratios-only --pages /Disaggregation --app-dir <before> --app-dir <after>``, 16 reruns
a side, 2 cores, 2026-12-06): the Disaggregation page's 16 metrics in 8 two-column rows took its rerun from
141 to 119 ms (1.78x to 1.45x its floor; main-thread CPU 1.54x to 1.36x) when drawn as two grids.

A tile looks like Streamlit's bordered metric (label 0.875rem, value 2.25rem, a grey line under the value
where ``st.metric`` had its delta, a "?" whose tooltip is the help text), but its label and value wrap
instead of being cut with an ellipsis, which the issue's polish list asks for at 1,280 px. Every string is
escaped: model and GPU names come from the user.

Markup read by the tests (``tests/tiles.py``): each tile is ``<div data-tile data-label=... data-value=...>``,
with ``data-note`` and ``data-help`` when it has them; its lines are ``data-part="label"``, ``"value"`` and
``"note"``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import streamlit as st

_TEXT = "#1F2933"  # .streamlit/config.toml textColor
_MUTED = "rgba(31, 41, 51, 0.6)"  # Streamlit's metric delta in "off" colour, over the theme's text colour
_BORDER = "rgba(31, 41, 51, 0.2)"  # Streamlit's bordered-container line
_GAP = "1rem"
_MIN_TILE = "9.5rem"  # below this a row holds fewer tiles (a phone), as st.columns stacks


@dataclass(frozen=True)
class Tile:
    """One headline figure.

    Attributes:
        label: What the figure is, with its unit where the value has none (e.g. ``"Max users"``).
        value: The figure as shown (already formatted by :mod:`ui.format`).
        help: Tooltip text (the sources and the exact bytes); ``""`` for none.
        note: A grey line under the value (a cap, an expected error); None for none.
        literal: The label is text a user may have typed (a GPU name): shown as it is, where our own labels have
            their Markdown emphasis and code marks dropped (:func:`_plain`); a custom GPU named ``**bold**`` lost
            its asterisks in the Concurrency headline (QA).
    """

    label: str
    value: str
    help: str = ""
    note: str | None = None
    literal: bool = False


def _plain(text: str) -> str:
    """Markdown emphasis and code marks dropped, for a tooltip (``title`` shows text as it is)."""
    return text.replace("**", "").replace("`", "")


def _tile_html(tile: Tile, border: bool, reserve_note: bool = False) -> str:
    """One tile's markup; every field escaped. The label takes the tile's spare height, so in a row whose labels
    wrap to different line counts the values still line up; ``reserve_note``: an empty line where a tile of a
    grid with notes has none, for the same reason."""
    raw = tile.label if tile.literal else _plain(tile.label)
    label, value = html.escape(raw), html.escape(_plain(tile.value))
    attrs = f'data-tile="" data-label="{label}" data-value="{value}"'
    box = "padding:calc(1rem - 1px);border-radius:0.5rem;min-width:0;display:flex;flex-direction:column;"
    box += f"border:1px solid {_BORDER};" if border else "padding-left:0;"
    help_mark = ""
    if tile.help:
        tip = html.escape(_plain(tile.help))
        attrs += f' data-help="{tip}"'
        help_mark = (f'<span title="{tip}" aria-label="{tip}" role="img" style="display:inline-block;'
                     f"margin-left:0.35em;width:1.05em;height:1.05em;line-height:0.95em;text-align:center;"
                     f'font-size:0.75rem;border:1px solid {_MUTED};border-radius:50%;color:{_MUTED};cursor:help">?'
                     "</span>")
    note = (f'<div style="font-size:0.875rem;margin-top:0.15rem;visibility:hidden">&nbsp;</div>'
            if reserve_note else "")
    if tile.note:
        attrs += f' data-note="{html.escape(_plain(tile.note))}"'
        note = (f'<div data-part="note" style="font-size:0.875rem;color:{_MUTED};overflow-wrap:anywhere;'
                f'margin-top:0.15rem">{html.escape(_plain(tile.note))}</div>')
    if help_mark:  # the "?" kept on the line of the label's last letter (QA: alone on a line at 1,280 px)
        help_mark = f'<span style="white-space:nowrap">{html.escape(raw[-1:])}{help_mark}</span>'
        label = html.escape(raw[:-1])
    return (f'<div {attrs} style="{box}">'
            f'<div data-part="label" style="font-size:0.875rem;color:{_TEXT};overflow-wrap:anywhere;line-height:1.4;'
            f'flex:1 0 auto">{label}{help_mark}'
            f"</div>"
            f'<div data-part="value" style="font-size:2.25rem;color:{_TEXT};line-height:1.25;overflow-wrap:anywhere">'
            f"{value}</div>"
            f"{note}</div>")


def tiles_html(tiles: Sequence[Tile], per_row: int, *, border: bool = True) -> str:
    """A grid of ``per_row`` tiles a row (fewer when the page is narrower than ``per_row`` x 9.5 rem).

    Args:
        tiles: The figures, in reading order.
        per_row: Tiles a row at full width (>= 1).
        border: Draw each tile's border, as ``st.metric(border=True)``.

    Raises:
        ValueError: ``per_row`` below 1.
    """
    if per_row < 1:
        raise ValueError(f"per_row must be at least 1, got {per_row}")
    width = f"calc((100% - {per_row - 1} * {_GAP}) / {per_row})"
    grid = (f"display:grid;grid-template-columns:repeat(auto-fill,minmax(max({_MIN_TILE},{width}),1fr));"
            f"gap:{_GAP};font-family:inherit")
    notes = any(t.note for t in tiles)
    return f'<div data-tiles="" style="{grid}">' + "".join(_tile_html(t, border, notes) for t in tiles) + "</div>"


def show_tiles(tiles: Iterable[Tile], per_row: int, *, container=None, border: bool = True) -> None:
    """Draw :func:`tiles_html` with one ``st.html`` call (nothing when there are no tiles).

    Args:
        tiles: The figures.
        per_row: Tiles a row at full width.
        container: ``st`` (default) or a column / container.
        border: As :func:`tiles_html`.
    """
    tiles = list(tiles)
    if tiles:
        (container or st).html(tiles_html(tiles, per_row, border=border))


def tiles_from_values(values: dict[str, tuple]) -> list[Tile]:
    """``label -> (value, help[, note])`` (the pages' ``*_metric_values`` dicts) as tiles."""
    return [Tile(label, value, help_text or "", note[0] if note else None)
            for label, (value, help_text, *note) in values.items()]
