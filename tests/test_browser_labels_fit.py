"""Real-browser check that no metric label is cut at 1,280 px on any page of the review's link (issue 27,
polish: "text cut off at 1,280 / 1,400 px"; the Concurrency headline cut "A100 SXM4 80GB" to "A100 SXM4 8...",
five tiles to a row; the Engine page's serving tiles cut "LoRA / encoder buffers", four to a row).

Streamlit cuts a metric's label with an ellipsis (CSS ``text-overflow``) when it is wider than its tile: a label
element whose ``scrollWidth`` exceeds its ``clientWidth`` is shown cut. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from tests.e2e_helpers import OBSERVER_JS, collect, open_settled

pytestmark = pytest.mark.browser

REVIEW_LINK = ("?context_len=16384&enable_lora=true&gpu=nvidia-l40s&images_per_request=2&max_loras=4"
               "&model=Qwen%2FQwen3-VL-8B-Instruct&speculative_method=eagle3")
"""The link of issue 27's design review."""

PAGES = ("/", "/GQA_savings", "/Concurrency", "/Engine", "/Allocation", "/Disaggregation")
"""The pages that show metric tiles."""

CUT_LABELS_JS = """() => [...document.querySelectorAll('[data-tile] [data-part]')].flatMap((label) =>
  [label, ...label.querySelectorAll('*')].filter((el) => el.scrollWidth > el.clientWidth + 1
                                                 && getComputedStyle(el).overflow !== 'visible')
    .map((el) => el.innerText.trim()).filter((t) => t))"""


@pytest.mark.parametrize("path", PAGES)
def test_no_metric_label_is_cut_at_1280(streamlit_server, chromium_browser, path):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(OBSERVER_JS)
    try:
        page = context.new_page()
        open_settled(page, streamlit_server.base_url + path + REVIEW_LINK)
        assert not collect(page)["exceptions"]
        assert page.locator("[data-tile]").count(), "no metric tile on the page"
        assert page.evaluate(CUT_LABELS_JS) == []
    finally:
        context.close()
