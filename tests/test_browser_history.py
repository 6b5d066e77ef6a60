"""Real-browser check: one page switch is one history entry, and Back goes back a page.

Streamlit 1.67's frontend pushes a history entry for every ``st.query_params`` update
(``handlePageInfoChanged``); ui/nav.py makes same-page URL updates replace the entry and
ui/inputs.py ``rewrite_link`` sends its changes in one update. Measured before that: 12-13
entries per page switch, so Back stayed on the same page. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.e2e_helpers import wait_settled

pytestmark = pytest.mark.browser


def _history_length(page) -> int:
    return page.evaluate("() => history.length")


def _click_nav(page, label: str) -> None:
    before = page.evaluate("performance.now()")
    page.locator('[data-testid="stSidebar"] a', has_text=label).first.click()
    page.wait_for_function("(label) => document.title.startsWith(label)", arg=label, timeout=60_000)
    wait_settled(page, after_ms=before)


def _back(page, path: str) -> None:
    page.go_back(wait_until="commit")
    page.wait_for_function("(path) => location.pathname === path", arg=path, timeout=60_000)
    wait_settled(page)


@pytest.mark.parametrize("query", ["", "?model=Qwen/Qwen2.5-7B&context_len=4096&block_size=32"],
                         ids=["untouched", "deep-link"])
def test_a_page_switch_is_one_history_entry_and_back_goes_back(streamlit_server, browser_page, query):
    page = browser_page()
    page.goto(streamlit_server.base_url + "/" + query, wait_until="commit")
    wait_settled(page)
    start = _history_length(page)
    lengths = []
    for label in ("Engine", "Concurrency"):
        _click_nav(page, label)
        lengths.append(_history_length(page) - start)
    assert lengths == [1, 2], f"history entries added by Home -> Engine -> Concurrency: {lengths}"
    assert urlparse(page.url).path == "/Concurrency"

    _back(page, "/Engine")
    assert urlparse(page.url).path == "/Engine"
    _back(page, "/")
    assert urlparse(page.url).path == "/"
    if query:  # the entry of the page left keeps that page's own link
        for part in ("context_len=4096", "block_size=32"):
            assert part in page.url, page.url
