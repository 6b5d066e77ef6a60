"""Real-browser check that every chart is drawn once when it appears (issue 27, "Speed, decided").

Streamlit drew each ``st.plotly_chart`` with ``Plotly.newPlot`` and then twice more through
``Plotly.react`` (its theme's template and data arrays of a new identity make plotly.js redraw
everything), and automargin drew it once more inside ``newPlot`` when the margins had to grow: 35 writes
of the line paths for the Concurrency chart's 5 lines, where one draw writes each path at most twice.
:mod:`ui.chart_look` removes every one of those redraws. For each chart page, in Chromium at 1,280 px:

* no template in the drawn figure and a ``datarevision`` set (what keeps ``Plotly.react`` from redrawing);
* the plot area's margins are the ones the figure gives (automargin had nothing to grow);
* the line paths were written at most twice each from the page's first load to a quiet page.

No timings. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from tests.e2e_helpers import collect, open_settled

pytestmark = pytest.mark.browser

CHART_PAGES = {"/Memory_curves": 1, "/GQA_savings": 3, "/Concurrency": 1, "/Allocation": 2}
"""Page -> charts it draws with its default inputs (Allocation: its first tab; the others draw when opened)."""

LINE_WRITES_JS = r"""
(() => {
  if (window.top !== window) return;
  window.__lineWrites = 0;
  new MutationObserver((records) => {
    for (const r of records) if (r.target.classList && r.target.classList.contains('js-line')) window.__lineWrites++;
  }).observe(document, {subtree: true, attributes: true, attributeFilter: ['d']});
})();
"""

CHARTS_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"] .js-plotly-plot')].map((g) => ({
  template: !!g.layout.template, datarevision: g.layout.datarevision ?? null,
  margin: ['l', 'r', 't', 'b'].map((k) => g.layout.margin[k]),
  drawn: ['l', 'r', 't', 'b'].map((k) => Math.round(g._fullLayout._size[k])),
  lines: g.querySelectorAll('.js-line').length,
}))"""

ALL_DRAWN_JS = """(n) => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter(
  (el) => el.querySelector('.main-svg')).length >= n"""


@pytest.mark.parametrize("path", list(CHART_PAGES))
def test_each_chart_is_drawn_once(streamlit_server, chromium_browser, path):
    context = chromium_browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_init_script(LINE_WRITES_JS)
    try:
        from tests.e2e_helpers import OBSERVER_JS

        context.add_init_script(OBSERVER_JS)
        page = context.new_page()
        open_settled(page, streamlit_server.base_url + path)
        page.wait_for_function(ALL_DRAWN_JS, arg=CHART_PAGES[path], timeout=30_000)
        page.wait_for_timeout(1_000)  # a redraw Streamlit or plotly.js would still make comes within this
        assert not collect(page)["exceptions"]
        charts = page.evaluate(CHARTS_JS)
        assert len(charts) == CHART_PAGES[path], charts
        for chart in charts:
            assert not chart["template"] and chart["datarevision"], chart
            assert chart["drawn"] == chart["margin"], ("automargin grew the margins: a second draw", chart)
        lines = sum(c["lines"] for c in charts)
        writes = page.evaluate("() => window.__lineWrites")
        assert writes <= 2 * lines, (f"{writes} writes of {lines} line paths: drawn more than once", charts)
    finally:
        context.close()


ALLOCATION_TABS = {"Your traffic": 1, "Prefix caching": 0, "Parallel sampling": 1, "KV-cache quantization": 1,
                   "Swap / offload": 0, "Naive vs paged": 2}
"""Allocation's lazy tabs (ui.views.lazy_tabs) -> the charts each draws when opened, in the order clicked."""


def test_allocation_tabs_draw_their_charts_when_opened(streamlit_server, browser_page):
    """Only the open tab runs: each tab clicked draws its own charts (and no other tab's), without an error."""
    from tests.e2e_helpers import page_now_ms, wait_settled

    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/Allocation")
    for label, num_charts in ALLOCATION_TABS.items():
        before = page_now_ms(page)
        page.get_by_role("tab", name=label).click()
        wait_settled(page, after_ms=before)
        page.wait_for_function(ALL_DRAWN_JS, arg=num_charts, timeout=30_000)
        visible = page.locator('[data-testid="stPlotlyChart"]:visible').count()
        assert visible == num_charts, (label, visible)
        assert not collect(page)["exceptions"], label
        assert page.get_by_role("tab", name=label).get_attribute("aria-selected") == "true", label
