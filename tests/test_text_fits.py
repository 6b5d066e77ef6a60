"""Text that fits at 1,280 px (issue 27, polish "Text cut off"): the review's screenshots showed Home's serving
tiles ("Memory per adapte..."), the serving panel's launch flags, Allocation's first bar-chart title and its
"Quality trade-off" column, the Catalog's id cells and the sidebar's selected model cut off.

Streamlit draws a metric label on one line and a dataframe cell on one line, so these checks bound what the page
hands them (label length per tile width, code lines, column widths in pixels); the screenshots themselves are in
the issue note. The link is the review's (Qwen3-VL-8B on an L40S with LoRA, EAGLE-3 and 2 images).
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import serving, views
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
LINK = {"context_len": "16384", "enable_lora": "true", "gpu": "nvidia-l40s", "images_per_request": "2",
        "max_loras": "4", "model": "Qwen/Qwen3-VL-8B-Instruct", "speculative_method": "eagle3"}

LABEL_CHARS_AT_THREE = 26
"""Longest metric label that shows whole in a row of three tiles at 1,280 px ("Memory per adapter slot" is 23;
four tiles a row cut it after 17)."""

CODE_LINE_CHARS = 90
"""Longest code line that shows whole in the main column at 1,280 px (monospace, about 8 px a character)."""

PX_PER_CHAR = 6.5
"""About what a character of the dataframe font takes [px] (the screenshots: "CohereForAI/c4ai-command-r-v01",
30 characters, in 190 px)."""


def run(script: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def test_home_serving_tiles_and_flags_fit():
    at = run("app.py", LINK)
    assert serving.PANEL_TILES_PER_ROW <= 3 and serving.TOWER_TILES_PER_ROW <= 2
    labels = [m.label for m in metric_tiles(at)]
    assert "Adapter slots, this batch" in labels and "Draft slots per sequence" in labels  # the panel is drawn
    tiles = labels[labels.index("Weights, with the tower"):]  # the tower's and the serving panel's tiles
    too_long = [label for label in tiles if len(label) > LABEL_CHARS_AT_THREE]
    assert not too_long, too_long
    assert all(len(label) <= 2 * LABEL_CHARS_AT_THREE for label in labels)  # the plan's rows of two
    flags = [c.value for c in at.code if c.value.startswith("--")]  # the per-engine launch flags
    assert len(flags) >= 2
    assert all(line.strip().startswith("--") for block in flags for line in block.splitlines())  # one a line
    # a block that wraps shows a long line whole (the launch's --speculative-config names the EAGLE-3 head's repo)
    long_lines = [line for c in at.code if not c.proto.wrap_lines for line in c.value.splitlines()
                  if len(line) > CODE_LINE_CHARS]
    assert not long_lines, long_lines


def test_home_sidebar_names_the_model_id_in_full():
    at = run("app.py", LINK)
    assert any("Qwen/Qwen3-VL-8B-Instruct" in c.value for c in at.sidebar.caption)


def test_allocation_title_and_quality_column_fit():
    from ui import allocation_view

    at = run("pages/6_Allocation.py", LINK)
    figure = next(reversed(allocation_view.allocation_bars.kept.values()))  # the one this run drew (first tab)
    # The KV-dtype table is static, so its notes wrap (and the allocation table beside the charts, so the page
    # loads no data-grid chunk). It is drawn when its tab is open (ui.views.lazy_tabs).
    at.session_state["allocation_section"] = "KV-cache quantization"
    at.run()
    (table,) = [t.value for t in at.table if "Quality trade-off" in t.value.columns]
    assert "Sources" not in table.columns
    lines = figure.layout.title.text.split("<br>")
    assert len(lines) == 2 and all(len(line) <= 40 for line in lines), lines


def test_catalog_text_columns_hold_their_cells():
    from ui import data

    models, verified = data.model_table(), data.verification_frame()
    for frame, columns in ((models, views.MODEL_COLUMNS), (verified, views.VERIFICATION_COLUMNS)):
        for name in ("id",) + tuple(c for c in ("name", "counted", "status", "family") if c in frame.columns):
            width = columns[name]["width"]
            longest = frame[name].astype(str).str.len().quantile(0.9)
            assert isinstance(width, int) and width >= PX_PER_CHAR * longest, (name, width, longest)
    assert views.ID_COLUMN["pinned"]


def test_catalog_models_grid_fits_the_main_column_and_a_selected_row_lists_every_field():
    """The models grid draws :data:`ui.catalog_table.MODEL_SHOWN` in widths that hold their longest cells and sum
    to at most the main column at 1,280 px (778 px in Chromium, the grid's 36 px selection column included;
    tests/test_browser.py measures the grid itself); selecting a row lists that model's every non-empty field
    under it, so nothing the 18-column grid showed is lost."""
    from ui import catalog_table, data
    from ui.format import format_int, md_cell

    models = data.model_table()
    columns = catalog_table.MODEL_COLUMNS
    for name in ("id", "checkpoint"):
        assert columns[name]["width"] >= PX_PER_CHAR * models[name].astype(str).str.len().max(), name
    small_px = 75  # Streamlit's "small" column (the release date)
    widths = [small_px if columns[name]["width"] == "small" else columns[name]["width"]
              for name in catalog_table.MODEL_SHOWN]
    assert 36 + sum(widths) <= 778, widths
    at = run("pages/4_Catalog.py", {"search": "lightning"})
    (grid,) = at.dataframe
    assert list(grid.proto.column_order) == list(catalog_table.MODEL_SHOWN) and not at.table
    at.session_state["models_table"] = {"selection": {"rows": [0], "columns": [], "cells": []}}
    at.run()
    (details,) = [t.value for t in at.table]
    row = models[models["id"] == grid.value["id"][0]].iloc[0]
    filled = [name for name in models.columns if str(row[name]) not in ("", "nan")]
    assert list(details.iloc[:, 0]) == [md_cell(name) for name in filled]
    shown = dict(zip(details.iloc[:, 0], details.iloc[:, 1], strict=True))
    assert shown["params"] == format_int(int(row["params"])) and shown["id"] == md_cell(row["id"])


def _grid_width(columns: dict, shown: tuple[str, ...]) -> int:
    small_px = 75  # Streamlit's "small" column (the release date)
    return 36 + sum(small_px if columns[name]["width"] == "small" else columns[name]["width"] for name in shown)


def test_catalog_gpu_and_verification_grids_fit_and_a_selected_row_lists_every_field():
    """The GPU and verification grids cut their last columns at 1,280 px ("measu", "34,388,91"; issue 27,
    "Catalog's tables"). Each now draws the columns of :data:`ui.catalog_table.GPU_SHOWN` /
    :data:`ui.catalog_table.VERIFIED_SHOWN` in widths that hold their longest cells and sum to at most the main
    column (778 px, the 36 px selection column included), and a selected row lists that row's every non-empty field
    under the grid."""
    from ui import catalog_table, data
    from ui.format import format_int, md_cell

    cases = (("GPUs", "gpus_table", data.gpu_table(), catalog_table.GPU_COLUMNS, catalog_table.GPU_SHOWN,
              ("id", "name"), "bandwidth [GB/s]"),
             ("Verified against transformers", "verification_table", data.verification_frame(),
              catalog_table.VERIFIED_COLUMNS, catalog_table.VERIFIED_SHOWN, ("id", "status", "counted"),
              "params (transformers)"))
    for tab, key, frame, columns, shown, text_columns, hidden in cases:
        for name in text_columns:
            assert columns[name]["width"] >= PX_PER_CHAR * frame[name].astype(str).str.len().max(), (tab, name)
        assert _grid_width(columns, shown) <= 778, (tab, _grid_width(columns, shown))
        assert hidden not in shown
        at = run("pages/4_Catalog.py", {"catalog_section": tab})
        (grid,) = at.dataframe
        assert list(grid.proto.column_order) == list(shown) and not at.table
        at.session_state[key] = {"selection": {"rows": [0], "columns": [], "cells": []}}
        at.run()
        (details,) = [t.value for t in at.table]
        row = frame[frame["id"] == grid.value["id"][0]].iloc[0]
        filled = [name for name in frame.columns if str(row[name]) not in ("", "nan", "None")]
        assert list(details.iloc[:, 0]) == [md_cell(name) for name in filled], tab
        cells = dict(zip(details.iloc[:, 0], details.iloc[:, 1], strict=True))
        assert cells[md_cell(hidden)] == format_int(int(row[hidden]))  # a hidden field, with separators


def test_a_catalog_selection_follows_its_entry_through_a_new_search():
    """QA: Kimi-K3 selected under "kimi", then "qwen" typed: the grid kept the row position and listed Qwen2.5-32B's
    fields. A new search selects the same id's new row, or nothing when the search leaves it out."""
    at = run("pages/4_Catalog.py", {"search": "kimi"})
    picked = len(at.dataframe[0].value) - 1
    chosen = at.dataframe[0].value["id"].iloc[picked]
    at.session_state["models_table"] = {"selection": {"rows": [picked], "columns": [], "cells": []}}
    at.run()
    assert at.table
    at.text_input(key="search").input("k").run()  # a search that lists it at another row: selected there
    ids = list(at.dataframe[0].value["id"])
    assert chosen in ids and ids.index(chosen) != picked
    (details,) = [t.value for t in at.table]
    assert chosen in " ".join(details.iloc[:, 1]).replace("\\", ""), details
    at.text_input(key="search").input("qwen").run()  # a search that leaves it out: nothing selected
    assert chosen not in list(at.dataframe[0].value["id"])
    assert not at.table, [t.value for t in at.table]


def test_the_verified_tab_finds_the_models_the_models_tab_finds():
    """QA: "qwen3.6" listed Qwen/Qwen3.5-27B (an alias match) on the models tab and not on the verified tab. Every
    verified model the models search finds is found there too, and the verified tab's own columns still count."""
    from ui import data

    for query in ("qwen3.6", "kimi", "llama 70b", "2026"):
        words = data.search_words(query)
        models = set(data.catalog_search("models", words).column("id").to_pylist())
        verified_all = set(data.verification_frame()["id"])
        found = set(data.catalog_search("verified", words).column("id").to_pylist())
        assert models & verified_all <= found, (query, (models & verified_all) - found)
    family = data.catalog_search("verified", data.search_words("gpt_neox")).column("id").to_pylist()
    assert "EleutherAI/gpt-neox-20b" in family  # a family word: the verified table's own column
