"""Real-browser check: Find's "Setup to launch" box follows a new search (QA round of the lazy tabs).

After a change of users the box still read "1. TP · 1 x A100 PCIe 80GB ..." while its own first option, the
success line and the launch tab described "1 x GeForce RTX 5090": its options were row positions, which a new
search keeps, so the browser kept showing the old label. Its options are now the labels. Run alone with
``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from tests.e2e_helpers import collect, open_settled, set_number, wait_settled

pytestmark = pytest.mark.browser

BOX = '.st-key-find_choice input[role="combobox"]'


def test_the_chosen_setup_box_shows_the_new_first_row_after_a_search(streamlit_server, browser_page):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/Find_a_GPU_setup")
    before = page.locator(BOX).input_value()
    wait_settled(page, after_ms=set_number(page, "users", 50))
    after = page.locator(BOX).input_value()
    assert not collect(page)["exceptions"]
    best = page.locator('[data-testid="stAlertContentSuccess"]').inner_text()  # "Cheapest: 1 x <GPU> ..."
    gpu = after.split(" · ")[1]  # "1 x GeForce RTX 5090"
    assert gpu in best, ("the box names another setup than the search's best", after, best)
    assert before != after, "the default search and 50 users pick the same setup: choose another case"
