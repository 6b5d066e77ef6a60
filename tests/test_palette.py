"""One palette and one vocabulary (issue 27, polish): weights, KV in use, free KV and the overheads keep
one colour each on Home (ui/budget_bar.py), Engine (ui/engine.py ``stage_bars_html``) and Allocation
(ui/allocation_view.py ``allocation_bars``), all from ui/palette.py; green means free KV and nothing else (it
meant "wasted" on Allocation); and the engine's part of the card is "usable" everywhere."""

from __future__ import annotations

import colorsys
import json
from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui import palette
from ui.budget_bar import SEGMENT_COLOURS
from ui.budget_bar import RANK_COLOURS
from ui.charts import ALLOCATION_COLOURS

ROOT = Path(__file__).resolve().parents[1]


def _is_green(colour: str) -> bool:
    r, g, b = (int(colour[i:i + 2], 16) / 255 for i in (1, 3, 5))
    hue, _, saturation = colorsys.rgb_to_hls(r, g, b)
    return 80 <= hue * 360 <= 160 and saturation > 0.2


def test_each_kind_of_memory_has_one_colour_on_every_page():
    assert SEGMENT_COLOURS["Weights"] == RANK_COLOURS["Weights"] == palette.WEIGHTS
    assert SEGMENT_COLOURS["KV cache in use"] == ALLOCATION_COLOURS["In use"] == RANK_COLOURS["KV cache"]
    assert SEGMENT_COLOURS["Activation peak (forward)"] == RANK_COLOURS["Activation peak"] == palette.ACTIVATION
    assert SEGMENT_COLOURS["Runtime"] == RANK_COLOURS["Non-torch"] == palette.RUNTIME
    assert SEGMENT_COLOURS["KV over the budget"] == RANK_COLOURS["Over the card"] == palette.OVER_BUDGET
    assert SEGMENT_COLOURS["Free KV budget"] == palette.KV_FREE


def test_green_is_free_kv_only():
    every = {**{f"Home {k}": v for k, v in SEGMENT_COLOURS.items()}, **{f"Engine {k}": v for k, v in RANK_COLOURS.items()},
             **{f"Allocation {k}": v for k, v in ALLOCATION_COLOURS.items()}}
    assert [name for name, colour in every.items() if _is_green(colour)] == ["Home Free KV budget"]


def test_allocation_bars_are_drawn_in_the_palette():
    at = AppTest.from_file(str(ROOT / "pages/6_Allocation.py"), default_timeout=60).run()
    assert not at.exception
    specs = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    bars = next(s for s in specs if any(t.get("name") == "Wasted" for t in s["data"]))
    colours = {t["name"]: t["marker"]["color"] for t in bars["data"]}
    assert colours == ALLOCATION_COLOURS


def test_usable_is_the_one_word_for_the_engines_part_of_the_card():
    copy = [*(ROOT / "ui").glob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
    assert not [p.name for p in copy if "engine's share" in p.read_text(encoding="utf-8").lower()]
    at = AppTest.from_file(str(ROOT / "pages/5_Engine.py"), default_timeout=60).run()
    assert not at.exception
    (bar,) = [h.proto.body for h in at.get("html") if 'data-segment="Weights"' in h.proto.body]
    assert ">usable " in bar and 'data-label="usable"' in bar and ">card " in bar
