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


LEGEND_OVER_TITLE_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].flatMap((chart) => {
  const legend = chart.querySelector('.legend'), title = chart.querySelector('.xtitle');
  if (!legend || !title) return [];
  const a = legend.getBoundingClientRect(), b = title.getBoundingClientRect();
  const apart = a.right <= b.left || b.right <= a.left || a.bottom <= b.top || b.bottom <= a.top;
  return apart ? [] : [title.textContent];
})"""


@pytest.mark.parametrize("query", ["?model=meta-llama/Llama-4-Scout-17B-16E-Instruct&gpu=nvidia-h100-sxm-80gb"
                                   "&num_gpus=4", "?model=openai/gpt-oss-120b&gpu=nvidia-h100-sxm-80gb"])
def test_allocation_legend_keeps_off_the_axis_title_at_1280(streamlit_server, chromium_browser, query):
    """QA: the Allocation curve's legend (y -0.22 of the plot) sat over its x-axis title, "max_model_len
    [tokens; K = 1,024]", at half a page wide."""
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(OBSERVER_JS)
    try:
        page = context.new_page()
        open_settled(page, streamlit_server.base_url + "/Allocation" + query)
        page.wait_for_function("() => document.querySelectorAll('[data-testid=stPlotlyChart] .xtitle').length")
        assert page.evaluate(LEGEND_OVER_TITLE_JS) == []
    finally:
        context.close()
