"""Real-browser check of the Disaggregation page at 1,400 px: both pools drawn, no label over a bar.

One page load (the README's DeepSeek-V3.2 DP 8 + EP case): the two pool headings and their numbers are
visible, each pool has its per-GPU budget bar, and no text of a bar (the "usable" / "card" labels, the
axis ticks, the legend) overlaps a bar segment or runs out of its pool's column. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from tests.e2e_helpers import OBSERVER_JS, collect, open_settled, query

pytestmark = pytest.mark.browser

LINK = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "users": 512, "data_parallel_size": 8,
        "enable_expert_parallel": "true"}

BOXES_JS = """() => {
  const box = (e) => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height,
                                                                     text: e.textContent}; };
  return [...document.querySelectorAll('div[role="img"]')].filter(f => f.querySelector('[data-segment]')).map(f => ({
    frame: box(f.closest('[data-testid="stColumn"]') || f),
    segments: [...f.querySelectorAll('[data-segment]')].map(box),
    texts: [...f.querySelectorAll('span')].filter(s => s.textContent.trim() && !s.children.length).map(box),
  }));
}"""


def _overlap(a: dict, b: dict) -> bool:
    return a["x"] < b["x"] + b["w"] - 0.5 and b["x"] < a["x"] + a["w"] - 0.5 and \
        a["y"] < b["y"] + b["h"] - 0.5 and b["y"] < a["y"] + a["h"] - 0.5


def test_both_pools_and_their_bars_are_drawn_without_overlaps(streamlit_server, chromium_browser):
    context = chromium_browser.new_context(viewport={"width": 1400, "height": 1000})
    context.add_init_script(OBSERVER_JS)
    try:
        page = context.new_page()
        open_settled(page, streamlit_server.base_url + "/Disaggregation" + query(**LINK))
        shown = collect(page)
        assert not shown["exceptions"], shown["exceptions"]
        assert not [a for a in shown["alerts"] if a["kind"] == "error"], shown["alerts"]
        for heading in ("Prefill pool", "Decode pool"):
            assert page.get_by_role("heading", name=heading).first.is_visible(), heading
        metrics = page.locator("[data-tile]")
        assert metrics.count() == 16
        values = [v.strip() for v in page.locator('[data-tile] [data-part="value"]').all_inner_texts()]
        assert values[3] == values[11] == "1 / 8 / 8" and all(values), values  # tp / dp / ep of both pools
        bars = page.evaluate(BOXES_JS)
        assert len(bars) == 2, bars
        for bar in bars:
            assert bar["segments"] and all(s["w"] > 0 for s in bar["segments"])
            for text in bar["texts"]:
                assert not any(_overlap(text, s) for s in bar["segments"]), text
                # 8 px: the "0" tick is centred on the bar's left edge, half of it in the columns' gap (drawn)
                assert text["x"] >= bar["frame"]["x"] - 8 and text["x"] + text["w"] <= bar["frame"]["x"] + \
                    bar["frame"]["w"] + 8, ("label cut: outside its pool's column", text, bar["frame"])
    finally:
        context.close()


TILE_ROWS_JS = """() => [...document.querySelectorAll('[data-tiles]')].map((grid) =>
  [...grid.querySelectorAll('[data-tile]')].map((tile) => {
    const value = tile.querySelector('[data-part="value"]'), label = tile.querySelector('[data-part="label"]');
    const mark = label.querySelector('[title]'), box = value.getBoundingClientRect();
    const walk = document.createTreeWalker(label, NodeFilter.SHOW_TEXT);
    let last = null, node;
    while ((node = walk.nextNode())) { if (node.textContent.trim() && !(mark && mark.contains(node))) last = node; }
    const range = document.createRange();
    range.setStart(last, last.textContent.trimEnd().length - 1);
    range.setEnd(last, last.textContent.trimEnd().length);
    const word = range.getBoundingClientRect(), at = mark ? mark.getBoundingClientRect() : null;
    return {label: tile.dataset.label, valueTop: box.top,
            valueLines: Math.round(box.height / parseFloat(getComputedStyle(value).lineHeight)),
            markOnWordLine: at ? Math.abs((at.top + at.bottom) / 2 - (word.top + word.bottom) / 2) < word.height / 2
                               : true};
  }))"""


@pytest.mark.parametrize("users", [64, 16])
@pytest.mark.parametrize("width", [1280, 1400])
def test_the_pools_metric_rows_line_up(streamlit_server, chromium_browser, users, width):
    """QA: at 1,280 px the prefill pool's "1,266.92 ms" wrapped to two lines and the "?" of "Concurrency per
    replica" fell to a line of its own, so the two pools' rows no longer lined up (fine at 1,400 px)."""
    context = chromium_browser.new_context(viewport={"width": width, "height": 1000})
    context.add_init_script(OBSERVER_JS)
    try:
        page = context.new_page()
        link = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": 8,
                "kv_cache_dtype": "fp8", "context_len": 131072, "batch_size": users,
                "decode_context_parallel_size": 8}
        open_settled(page, streamlit_server.base_url + "/Disaggregation" + query(**link))
        assert not collect(page)["exceptions"]
        prefill, decode = page.evaluate(TILE_ROWS_JS)
        assert len(prefill) == len(decode) == 8
        for tile in (*prefill, *decode):
            assert tile["valueLines"] == 1 and tile["markOnWordLine"], tile
        for a, b in zip(prefill, decode):
            assert abs(a["valueTop"] - b["valueTop"]) < 1, (a, b)
    finally:
        context.close()
