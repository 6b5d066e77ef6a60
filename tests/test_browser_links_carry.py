"""Real-browser check of issue 27, item 1 (its regression): a link carries only what the user set.

Home is opened with a model and a GPU, one input (context length) is changed, and every sidebar link
must then carry that key and the link's own keys, nothing else. Before the fix the Engine page reached
from there had ``block_size=16&gpu_memory_utilization=0.9`` in its URL and links: Streamlit 1.67 keeps
the value of every bound widget of the page left (``SessionState._remove_stale_widgets``) and the Engine
page's same-key inputs, which start empty (the engine's own default), took Home's untouched defaults as
set values (``--block-size 16`` in the launch). Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e_helpers import key_box, set_number, wait_settled

pytestmark = pytest.mark.browser

LINK = {"model": "Qwen/Qwen3.6-35B-A3B", "gpu": "nvidia-h100-sxm-80gb"}
SET = {"context_len": "16384"}
CARRIED = {**LINK, "models": LINK["model"], "gpus": LINK["gpu"], **SET}
"""What every link may carry: the link's keys (each with its single/multi counterpart, ui/nav.py) and the one set."""


def _queries(page) -> dict[str, dict[str, list[str]]]:
    """Sidebar link label -> its parsed query."""
    links = page.locator('[data-testid="stSidebar"] a[href]')
    return {link.inner_text().strip(): parse_qs(urlparse(link.get_attribute("href")).query)
            for link in links.all()}


def _assert_only_what_was_set(where: str, queries: dict[str, dict[str, list[str]]]) -> None:
    assert len(queries) >= 9, (where, list(queries))
    for label, query in queries.items():
        extra = {k: v for k, v in query.items() if k not in CARRIED}
        assert not extra, f"{where}: the {label} link carries what nobody set: {extra}"
        assert query.get("context_len") == [SET["context_len"]], (where, label, query)


def test_one_home_change_and_every_link_carries_only_it(streamlit_server, browser_page):
    page = browser_page()
    page.goto(f"{streamlit_server.base_url}/?model=Qwen/Qwen3.6-35B-A3B&gpu=nvidia-h100-sxm-80gb",
              wait_until="commit")
    wait_settled(page)
    wait_settled(page, after_ms=set_number(page, "context_len", 16384))
    _assert_only_what_was_set("Home", _queries(page))

    before = page.evaluate("performance.now()")
    page.locator('[data-testid="stSidebar"] a', has_text="Engine").first.click()
    page.wait_for_function("() => document.title.startsWith('Engine')", timeout=60_000)
    wait_settled(page, after_ms=before)
    url = parse_qs(urlparse(page.url).query)
    assert not {k: v for k, v in url.items() if k not in CARRIED}, page.url
    assert url.get("context_len") == ["16384"], page.url
    for key in ("block_size", "gpu_memory_utilization"):  # empty: the engine's own default
        assert key_box(page, key).locator("input").input_value() == "", (key, page.url)
    _assert_only_what_was_set("Engine", _queries(page))
