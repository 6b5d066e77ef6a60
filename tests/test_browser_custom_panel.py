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
