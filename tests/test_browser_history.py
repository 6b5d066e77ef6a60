"""Real-browser check: one page switch is one history entry, and Back goes back a page.

Streamlit 1.67's frontend pushes a history entry for every ``st.query_params`` update
(``handlePageInfoChanged``); ui/nav.py makes same-page URL updates replace the entry and
ui/inputs.py ``rewrite_link`` sends its changes in one update. Measured before that: 12-13
entries per page switch, so Back stayed on the same page. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e_helpers import set_number, wait_settled

pytestmark = pytest.mark.browser


def _history_length(page) -> int:
    return page.evaluate("() => history.length")


def _click_nav(page, label: str) -> None:
    before = page.evaluate("performance.now()")
    page.locator('[data-testid="stSidebar"] a', has_text=label).first.click()
    path = "/" if label == "Home" else "/" + label
    page.wait_for_function("(path) => location.pathname === path", arg=path, timeout=60_000)
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


def test_back_returns_each_page_as_it_was_visited(streamlit_server, browser_page):
    """Catalog -> Home, two Home edits, Engine, then Back twice: the /Catalog that was visited.

    Before the fix the Catalog entry came back as ``/Catalog?batch_size=4&context_len=16384``: the first
    run after the switch put back what the page left (Engine) carried, not what the entry's URL said.
    """
    page = browser_page()
    page.goto(streamlit_server.base_url + "/", wait_until="commit")
    wait_settled(page)
    _click_nav(page, "Catalog")
    catalog_query = parse_qs(urlparse(page.url).query)
    _click_nav(page, "Home")
    wait_settled(page, after_ms=set_number(page, "context_len", 16384))
    wait_settled(page, after_ms=set_number(page, "batch_size", 4))
    home_query = parse_qs(urlparse(page.url).query)
    assert home_query.get("context_len") == ["16384"] and home_query.get("batch_size") == ["4"], page.url
    start = _history_length(page)
    _click_nav(page, "Engine")
    assert _history_length(page) - start == 1, "Home -> Engine added more than one history entry"

    _back(page, "/")
    assert _query_becomes(page, home_query), page.url
    _back(page, "/Catalog")
    assert _query_becomes(page, catalog_query), page.url


def _query_becomes(page, expected: dict, timeout_s: float = 10.0) -> bool:
    """True once the address bar's query is ``expected`` (within ``timeout_s``): on a loaded machine the page's
    first run after Back may settle before its last URL update is applied (a full-suite run once read the URL
    between the two); a URL that stays wrong still fails."""
    import time  # noqa: PLC0415

    end = time.monotonic() + timeout_s
    while parse_qs(urlparse(page.url).query) != expected:
        if time.monotonic() > end:
            return False
        page.wait_for_timeout(200)
    return True


def test_a_tab_is_in_the_link_replaces_the_entry_and_stays_on_its_page(streamlit_server, browser_page):
    """Allocation's lazy tabs (ui.views.lazy_tabs, bound to the URL): opening a tab writes its label into the
    link without a history entry, the first tab leaves the key out, the navigation does not carry it to another
    page, and Back returns to the tab that was open."""
    page = browser_page()
    page.goto(streamlit_server.base_url + "/Allocation", wait_until="commit")
    wait_settled(page)
    start = _history_length(page)
    for label, value in (("KV-cache quantization", ["KV-cache quantization"]), ("Naive vs paged", None),
                         ("Swap / offload", ["Swap / offload"])):
        before = page.evaluate("performance.now()")
        page.get_by_role("tab", name=label).click()
        wait_settled(page, after_ms=before)
        assert parse_qs(urlparse(page.url).query).get("allocation_section") == value, page.url
    assert _history_length(page) == start, "a tab switch added a history entry"
    _click_nav(page, "Engine")
    assert "allocation_section" not in page.url, page.url
    _back(page, "/Allocation")
    assert parse_qs(urlparse(page.url).query).get("allocation_section") == ["Swap / offload"], page.url
    assert page.get_by_role("tab", name="Swap / offload").get_attribute("aria-selected") == "true"


def test_the_find_choice_is_in_the_link_without_a_history_entry(streamlit_server, browser_page):
    """Find's "Setup to launch" (ui.find_scale_view.chosen_setup, written by hand as ``find_setup``): picking a
    setup writes its id into the link without a history entry, a fresh page opened on that link shows the same
    choice, and the navigation does not carry it to another page."""
    query = "?model=meta-llama/Meta-Llama-3-8B&users=50"
    page = browser_page()
    page.goto(streamlit_server.base_url + "/Find_a_GPU_setup" + query, wait_until="commit")
    wait_settled(page)
    start = _history_length(page)
    box = page.locator('.st-key-find_choice input[role="combobox"]')
    first = box.input_value()
    before = page.evaluate("performance.now()")
    box.click()
    page.keyboard.press("ArrowDown")  # the second setup
    page.keyboard.press("Enter")
    wait_settled(page, after_ms=before)
    second = box.input_value()
    chosen = parse_qs(urlparse(page.url).query).get("find_setup")
    assert chosen and second.startswith("2. ") and second != first, (page.url, second)
    assert _history_length(page) == start, "choosing a setup added a history entry"

    fresh = browser_page()
    fresh.goto(page.url, wait_until="commit")
    wait_settled(fresh)
    assert fresh.locator('.st-key-find_choice input[role="combobox"]').input_value() == second
    _click_nav(page, "Engine")
    assert "find_setup" not in page.url, page.url
