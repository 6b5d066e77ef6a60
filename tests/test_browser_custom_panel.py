"""Real-browser check of the "Custom model & GPU" panel after "Use pasted config" (QA, ui/custom_panel.py).

Steps of the report: open ``/?model=custom``, unfold the panel, paste a config.json and press "Use pasted
config"; then edit the config.json box and press Ctrl+Enter. Before the fix the panel folded and the
address bar lost ``custom_model=`` (Streamlit drops a bound input's parameter on a run that does not draw
it), so the link opened on another model. Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs, urlparse

import pytest

from model_catalog import get_model_entry
from tests.e2e_helpers import key_box, open_settled, query, wait_settled

pytestmark = pytest.mark.browser

CONFIG = json.dumps(get_model_entry("mistralai/Mistral-Nemo-Base-2407").config)


def _code(page) -> str | None:
    return parse_qs(urlparse(page.url).query).get("custom_model", [None])[0]


def _settle_after(page, action) -> None:
    before = page.evaluate("performance.now()")
    action()
    wait_settled(page, after_ms=before)


def test_editing_the_config_box_keeps_the_link_code_and_the_open_panel(streamlit_server, browser_page):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/" + query(model="custom"))
    _settle_after(page, lambda: page.get_by_test_id("stSidebarUserContent").get_by_text("Custom model & GPU").click())
    box = key_box(page, "custom_config_text").locator("textarea")
    box.fill(CONFIG)
    _settle_after(page, lambda: key_box(page, "custom_use_pasted").locator("button").click())
    code = _code(page)
    assert code and code.startswith("v1."), page.url

    box.fill("{}")
    _settle_after(page, lambda: box.press("Control+Enter"))
    assert _code(page) == code, page.url
    assert box.is_visible()  # the panel is still open
    assert box.input_value() == "{}"

    copy = browser_page()
    open_settled(copy, page.url)
    alerts = copy.locator('[data-testid="stAlert"]').all_inner_texts()
    assert not any("carries no" in text or "instead" in text for text in alerts), alerts
    assert copy.locator("h3").first.inner_text().startswith("custom-model on ")  # the pasted model, unnamed


def _use_config(page, config: str) -> str:
    """Unfold the panel if needed, paste ``config`` and press "Use pasted config"; the new link code."""
    box = key_box(page, "custom_config_text").locator("textarea")
    if not box.is_visible():
        _settle_after(page, lambda: page.get_by_test_id("stSidebarUserContent").get_by_text("Custom model & GPU")
                      .click())
    box.fill(config)
    _settle_after(page, lambda: key_box(page, "custom_use_pasted").locator("button").click())
    return _code(page)


def test_back_shows_the_custom_model_of_the_entry_not_the_last_one_used(streamlit_server, browser_page):
    """QA: Home with custom model A, the GQA page, "Use" model B there, Back: Home showed B and rewrote its URL
    to B's code. The link is the plan: Back lands on A's entry with A's code (ui/nav.py ``_arrive``)."""
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/" + query(model="custom"))
    first = _use_config(page, CONFIG)
    before = page.evaluate("performance.now()")
    page.locator('[data-testid="stSidebar"] a', has_text="GQA savings").first.click()
    page.wait_for_function("() => location.pathname === '/GQA_savings'", timeout=60_000)
    wait_settled(page, after_ms=before)
    assert _code(page) == first, page.url  # the sidebar link carried A
    other = json.dumps(get_model_entry("Qwen/Qwen3-0.6B").config)
    second = _use_config(page, other)
    assert second and second != first
    page.go_back(wait_until="commit")
    page.wait_for_function("() => location.pathname === '/'", timeout=60_000)
    wait_settled(page)
    page.wait_for_timeout(500)
    assert _code(page) == first, page.url
