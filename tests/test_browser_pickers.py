"""Real-browser check of the model pickers (issue 27, polish): typing "DeepSeek-V3.2" and pressing Enter
plans the base repo, not its NVFP4 checkpoint, and in a multi-model picker it adds that one model, not
every match ("Select 2 matches"). The ordering is the browser's own (fzy score, ui/picker_search.py).
Run alone with ``pytest -m browser``."""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e_helpers import key_box, wait_settled

pytestmark = pytest.mark.browser

BASE = "deepseek-ai/DeepSeek-V3.2"


def _type_and_enter(page, key: str, text: str) -> None:
    field = key_box(page, key).locator("input")
    before = page.evaluate("performance.now()")
    field.click()
    field.fill(text)
    page.get_by_role("option").first.wait_for(timeout=10_000)
    field.press("Enter")
    wait_settled(page, after_ms=before)


def _params(page) -> dict[str, list[str]]:
    return parse_qs(urlparse(page.url).query)


def test_enter_on_a_typed_name_plans_the_base_repo(streamlit_server, browser_page):
    page = browser_page()
    page.goto(streamlit_server.base_url + "/", wait_until="commit")
    wait_settled(page)
    _type_and_enter(page, "model", "DeepSeek-V3.2")
    assert _params(page)["model"] == [BASE]


def test_enter_in_a_multi_model_picker_adds_one_model(streamlit_server, browser_page):
    page = browser_page()
    page.goto(streamlit_server.base_url + "/Memory_curves?models=meta-llama/Meta-Llama-3-8B", wait_until="commit")
    wait_settled(page)
    _type_and_enter(page, "models", "DeepSeek-V3.2")
    assert _params(page)["models"] == ["meta-llama/Meta-Llama-3-8B", BASE]
