"""The Catalog page's three grids at 1,280 px: the columns each shows, and a selected row's every field.

The main column is 778 px wide at 1,280 px (Chromium, the sidebar open). The model catalog has 18 columns
(:func:`ui.data.model_table`, about 2,975 px of grid), the GPU catalog 14 (:func:`ui.data.gpu_table`) and the
verification table 13 (:func:`ui.data.verification_frame`): each grid shows the columns a reader scans and sorts
by (:data:`MODEL_SHOWN`, :data:`GPU_SHOWN`, :data:`VERIFIED_SHOWN`, each within 778 px with its selection column),
and selecting a row lists all of that row's fields under the grid (:func:`row_details`), in a static table whose
long cells (sources, notes, reasons) wrap instead of being cut (issue 27: the GPU and verification grids cut
their last columns, "measu", "34,388,91", at 1,280 px). The search still reads every column
(:data:`ui.data.CATALOG_TABLES`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from ui import views
from ui.format import format_int

if TYPE_CHECKING:
    import pyarrow as pa

MODEL_SHOWN = ("id", "released", "params", "max context", "checkpoint")
"""Columns the models grid draws, in order; the others are in the selected row's details."""

MODEL_COLUMNS = {
    **views.MODEL_COLUMNS,
    "id": st.column_config.TextColumn("id", width=330, pinned=True),
    "released": {**views.RELEASED_COLUMN, "width": 85},  # "2026-04-22+": a base model's date (ui.data.released_cells)
    "params": st.column_config.NumberColumn("params", format="compact", width=62,
                                            help="Parameters, all experts included (the exact count is in the "
                                                 "row's details)"),
    "max context": st.column_config.NumberColumn("context", format="localized", width=85,
                                                 help="max context [tokens]: the config's max_position_embeddings"),
    "checkpoint": st.column_config.TextColumn("checkpoint", width=180,
                                              help="The checkpoint's quantization (empty: bf16 / fp16 weights)"),
}
"""Column formats of the models grid: widths that hold the longest id (50 characters at about 6.5 px), the
longest checkpoint (27) and a date with its "+" (11), and together fit 778 px."""

GPU_SHOWN = ("id", "name", "framework memory [GiB]", "basis", "price [USD/h]")
"""Columns the GPU grid draws, in order; the others (vendor, bandwidth, TFLOPS, host link, sources) are in the
selected row's details."""

GPU_COLUMNS = {
    **views.GPU_COLUMNS,
    "id": st.column_config.TextColumn("id", width=205, pinned=True),
    "name": st.column_config.TextColumn("name", width=280),
    "framework memory [GiB]": st.column_config.NumberColumn(
        "memory [GiB]", format="%.2f", width=95,
        help="Framework memory [GiB = 2^30 bytes]: what PyTorch reports (torch.cuda.mem_get_info total)"),
    "basis": st.column_config.TextColumn("basis", width=80,
                                         help="measured in a public log, or estimated by the catalog's rule"),
    "price [USD/h]": st.column_config.NumberColumn("$/h", format="%.2f", width=65,
                                                   help="Catalog price [USD per GPU-hour]; its source is in the "
                                                        "row's details"),
}
"""Column formats of the GPU grid: widths that hold the longest id (31 characters) and name (42), together
within 778 px."""

VERIFIED_SHOWN = ("id", "status", "counted", "params (planner)", "KV checks exact")
"""Columns the verification grid draws, in order; transformers' own counts, the KV bytes and the reason are in
the selected row's details ("exact" says both counts agree)."""

VERIFIED_COLUMNS = {
    **views.VERIFICATION_COLUMNS,
    "id": st.column_config.TextColumn("id", width=330, pinned=True),
    "status": st.column_config.TextColumn("status", width=85, help=views.VERIFICATION_COLUMNS["status"]["help"]),
    "counted": st.column_config.TextColumn("counted", width=105, help=views.VERIFICATION_COLUMNS["counted"]["help"]),
    "params (planner)": st.column_config.NumberColumn(
        "params", format="localized", width=120,
        help="The planner's parameter count; transformers' own is in the row's details (status exact: equal)"),
    "KV checks exact": st.column_config.TextColumn(
        "KV checks", width=90, help="KV-cache measurements that match transformers byte for byte, of those made"),
}
"""Column formats of the verification grid: the longest id (50 characters), together within 778 px."""

INTEGER_FIELDS = ("params", "layers", "kv heads", "head_dim", "max context", "params (planner)",
                  "params (transformers)", "KV bytes (planner)", "KV bytes (transformers)", "marketed [GB]",
                  "bandwidth [GB/s]")
"""Fields shown with thousands separators in the details."""

DECIMAL_FIELDS = ("framework memory [GiB]", "price [USD/h]")
"""Fields shown with two decimals in the details."""


def _shown(name: str, value) -> str:
    """One details cell: integers (also as whole floats, where a column has gaps) with separators."""
    if name in INTEGER_FIELDS and isinstance(value, (int, float)) and float(value).is_integer():
        return format_int(int(value))
    if name in DECIMAL_FIELDS and isinstance(value, (int, float)):
        return f"{value:,.2f}"
    return str(value)


def row_details(table: pa.Table, row: int) -> list[dict[str, str]]:
    """Every field of ``table``'s row ``row``, as ``{"field", "value"}`` rows (for
    :func:`ui.views.static_table`): integers with separators, empty fields left out.

    Args:
        table: A grid's table (:func:`ui.data.catalog_search` ``"models"``, ``"gpus"`` or ``"verified"``).
        row: A row index of ``table``, as the grid's selection gives it.

    Raises:
        IndexError: ``row`` outside ``table``.
    """
    if not 0 <= row < table.num_rows:
        raise IndexError(f"row {row} is not in a table of {table.num_rows} rows")
    out = []
    for name, value in table.slice(row, 1).to_pylist()[0].items():
        if value is None or value == "" or value != value:  # NaN: a model without a source link
            continue
        out.append({"field": name, "value": _shown(name, value)})
    return out


def grid_with_details(table: pa.Table, *, key: str, columns: dict, shown: tuple[str, ...], caption: str,
                      scope: tuple[str, ...] = ()) -> None:
    """``table`` as a grid of the ``shown`` columns with single-row selection, ``caption`` under it, and the
    selected row's every field under that (:func:`row_details`).

    The grid's selection is a row position, so a new search (``scope``: the search words the table answers) kept
    the position and showed another entry (QA: Kimi-K3 selected, then "qwen" typed: Qwen2.5-32B's fields). The
    selected row's id is kept with its scope: a new search selects that id's new row, or nothing when the search
    left it out (:func:`_follow_selection`)."""
    _follow_selection(table, key, scope)
    picked = st.dataframe(table, hide_index=True, key=key, column_config=columns, column_order=shown,
                          on_select="rerun", selection_mode="single-row", placeholder="n/a")  # n/a: no price
    st.caption(caption)
    rows = [r for r in picked.selection.rows if r < table.num_rows]
    chosen = table.column("id")[rows[0]].as_py() if rows else None
    st.session_state[_PICKED + key] = (scope, chosen)
    if rows:
        views.static_table(row_details(table, rows[0]))


_PICKED = "_catalog_picked_"
"""Session-state key prefix: ``(scope, id)`` of a grid's selected row in the last run."""


def _follow_selection(table: pa.Table, key: str, scope: tuple[str, ...]) -> None:
    """Before the grid ``key`` is drawn: when the search changed since its row was selected, select that id's row
    in ``table`` (or none), through the grid's session state (Streamlit's programmatic selection)."""
    kept_scope, chosen = st.session_state.get(_PICKED + key, (scope, None))
    if kept_scope == scope or key not in st.session_state:
        return
    ids = table.column("id").to_pylist()
    rows = [ids.index(chosen)] if chosen in ids else []
    st.session_state[key] = {"selection": {"rows": rows, "columns": [], "cells": []}}
