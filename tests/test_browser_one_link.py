"""Real-browser check of issue 27, item 4: one shared link, one user count on every page.

Home is opened with the review's link (Qwen3-VL-8B on an L40S at 16,384 tokens, 4 LoRA slots, EAGLE-3, 2 images
per request) and the sidebar's navigation is clicked to each page that counts users. Each shows Home's count
and one line naming the features; the Engine page shows vLLM's concurrency with the line that explains it.
Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu
from tests.e2e_helpers import collect, wait_settled
from tests.test_serving_one_link import GPU, LINK, PHRASES

pytestmark = pytest.mark.browser


def _click_nav(page, label: str) -> None:
    before = page.evaluate("performance.now()")
    page.locator('[data-testid="stSidebar"] a', has_text=label).first.click()
    page.wait_for_function("(label) => document.title.startsWith(label)", arg=label, timeout=60_000)
    wait_settled(page, after_ms=before)


def _captions(page) -> str:
    return "\n".join(page.locator('[data-testid="stCaptionContainer"]').all_inner_texts())


def test_every_page_counts_the_link_s_users_and_says_with_what(streamlit_server, browser_page):
    page = browser_page()
    query = "&".join(f"{k}={v.replace('/', '%2F')}" for k, v in sorted(LINK.items()))
    page.goto(f"{streamlit_server.base_url}/?{query}", wait_until="commit")
    wait_settled(page)
    users = collect(page)["metrics"]["Max concurrent sequences"]
    checks = {"Concurrency": get_gpu(GPU).name, "GQA savings": "Max sequences, GQA (as built)",
              "Allocation": "Naive: users", "Engine": None}
    for label, metric in checks.items():
        _click_nav(page, label)
        shown = collect(page)
        assert not shown["exceptions"], (label, shown["exceptions"])
        captions = _captions(page)
        assert all(p in captions for p in PHRASES), (label, captions)
        if metric is not None:
            assert shown["metrics"].get(metric) == users, (label, metric, shown["metrics"])
        else:
            assert "inside max_model_len" in captions, captions
