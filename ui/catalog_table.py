"""The Catalog page's models table at 1,280 px: the columns it shows, and the selected model's every field.

The model catalog has 18 columns (:func:`ui.data.model_table`), about 2,975 px of grid, while the main column
is 778 px wide at 1,280 px (Chromium, the sidebar open). The grid shows the columns a reader scans and sorts by
(:data:`MODEL_SHOWN`, 770 px with :data:`MODEL_COLUMNS`); selecting a row lists all of that model's fields under
the table (:func:`model_details`), in a static table whose long cells (sources, notes, aliases) wrap instead of
being cut. The search still reads every column (:data:`ui.data.CATALOG_TABLES`).
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
    "params": st.column_config.NumberColumn("params", format="compact", width=70,
                                            help="Parameters, all experts included (the exact count is in the "
                                                 "row's details)"),
    "max context": st.column_config.NumberColumn("context", format="localized", width=85,
                                                 help="max context [tokens]: the config's max_position_embeddings"),
    "checkpoint": st.column_config.TextColumn("checkpoint", width=180,
                                              help="The checkpoint's quantization (empty: bf16 / fp16 weights)"),
}
"""Column formats of the models grid: widths that hold the longest id (50 characters at about 6.5 px) and
the longest checkpoint (27), and together fit 778 px."""

INTEGER_FIELDS = ("params", "layers", "kv heads", "head_dim", "max context")
"""Fields shown with thousands separators in the details."""


def model_details(table: pa.Table, row: int) -> list[dict[str, str]]:
    """Every field of the model in ``table``'s row ``row``, as ``{"field", "value"}`` rows (for
    :func:`ui.views.static_table`): integers with separators, empty fields left out.

    Args:
        table: The models grid's table (:func:`ui.data.catalog_search` ``"models"``).
        row: A row index of ``table``, as the grid's selection gives it.

    Raises:
        IndexError: ``row`` outside ``table``.
    """
    if not 0 <= row < table.num_rows:
        raise IndexError(f"row {row} is not in a table of {table.num_rows} models")
    out = []
    for name, value in table.slice(row, 1).to_pylist()[0].items():
        if value is None or value == "" or value != value:  # NaN: a model without a source link
            continue
        shown = format_int(value) if name in INTEGER_FIELDS and isinstance(value, int) else str(value)
        out.append({"field": name, "value": shown})
    return out
