"""Metric tiles (ui/tiles.py): one static grid per group of figures instead of one st.metric each (issue 27,
rerun speed), escaped, readable back by tests/tiles.py."""

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.tiles import metric_tiles, tiles_in
from ui.tiles import Tile, tiles_from_values, tiles_html

ROOT = Path(__file__).resolve().parents[1]


def test_a_tile_keeps_label_value_note_and_help_and_escapes_them():
    body = tiles_html([Tile("Max users <b>", 'x "7"', help="**bold** `code` & more", note="runs 1,024"),
                       Tile("Weights", "9.29 GiB")], 2)
    first, second = tiles_in(body)
    assert (first.label, first.value, first.delta, first.help) == ("Max users <b>", 'x "7"', "runs 1,024",
                                                                   "bold code & more")
    assert (second.label, second.value, second.delta, second.help) == ("Weights", "9.29 GiB", None, "")
    assert "<b>" not in body and "&lt;b&gt;" in body  # a user's model name cannot inject markup
    assert body.count("data-tile=") == 2 and body.count('data-part="value"') == 2
    assert "(100% - 1 * 1rem) / 2" in body  # two a row at full width


def test_per_row_must_be_positive():
    with pytest.raises(ValueError, match="per_row must be at least 1"):
        tiles_html([Tile("a", "1")], 0)


def test_values_dicts_become_tiles_with_their_notes():
    tiles = tiles_from_values({"A": ("1", "help a"), "B": ("2", "help b", "under b"), "C": ("3", None)})
    assert tiles == [Tile("A", "1", "help a"), Tile("B", "2", "help b", "under b"), Tile("C", "3", "")]


PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]
TILE_PAGES = {"app.py": 7, "pages/2_GQA_savings.py": 6, "pages/3_Concurrency.py": 3, "pages/5_Engine.py": 5,
              "pages/6_Allocation.py": 3, "pages/8_Disaggregation.py": 16}
"""Pages that show figures as tiles with their defaults, and at least how many."""


@pytest.mark.parametrize("page", PAGES)
def test_pages_draw_tiles_not_st_metric(page):
    """The rerun budget: a page's figures are tiles (one element a group), not one st.metric each."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    at.run()
    assert not at.exception
    assert not at.metric
    assert len(metric_tiles(at)) >= TILE_PAGES.get(page, 0)
