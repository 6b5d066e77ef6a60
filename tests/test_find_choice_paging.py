"""The Find page's "Setup to launch" box offers the rows of the table page shown and the chosen setup
(ui.find_scale_view.chosen_setup), not all 200 listed setups (issue 27 speed). A choice survives a turn of
the page, and a link naming a setup on another page opens on it.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from ui.find_scale_view import SETUP_URL_KEY
from ui.find_table import FIND_PAGE_ROWS

ROOT = Path(__file__).resolve().parents[1]
FIND = str(ROOT / "pages" / "7_Find_a_GPU_setup.py")
LINK = {"model": "meta-llama/Meta-Llama-3-8B", "users": "50"}  # many setups: several table pages


def _run(params: dict) -> AppTest:
    at = AppTest.from_file(FIND, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def _rank(label: str) -> int:
    return int(label.split(".", 1)[0])  # "23. TP · ..." -> 23


def _launch(at: AppTest) -> str:
    return next(c.value for c in at.code if "serve" in c.value)


def test_the_box_offers_the_page_shown_and_keeps_the_choice_through_a_page_turn():
    at = _run(LINK)
    assert not at.exception, at.exception
    assert at.number_input(key="find_page").proto.max >= 3
    box = at.selectbox(key="find_choice")
    assert [_rank(o) for o in box.options] == list(range(1, FIND_PAGE_ROWS + 1))  # the first page's rows
    assert len(box.options) == len(at.dataframe[0].value)  # one option a row of the table shown
    box.set_value(box.options[4]).run()  # row 5
    chosen, command = at.selectbox(key="find_choice").value, _launch(at)
    written = at.query_params[SETUP_URL_KEY]

    at.number_input(key="find_page").set_value(2).run()  # the table's second page
    box = at.selectbox(key="find_choice")
    assert box.value == chosen and _launch(at) == command and at.query_params[SETUP_URL_KEY] == written
    assert [_rank(o) for o in box.options] == [5, *range(FIND_PAGE_ROWS + 1, 2 * FIND_PAGE_ROWS + 1)]
    box.set_value(box.options[3]).run()  # a row of the second page
    assert _rank(at.selectbox(key="find_choice").value) == FIND_PAGE_ROWS + 3
    assert _launch(at) != command


def test_a_link_naming_a_setup_on_another_page_opens_on_it():
    at = _run(LINK)
    at.number_input(key="find_page").set_value(3).run()
    box = at.selectbox(key="find_choice")
    far = next(o for o in box.options if _rank(o) == 2 * FIND_PAGE_ROWS + 5)
    box.set_value(far).run()
    written = at.query_params[SETUP_URL_KEY]
    command = _launch(at)

    shared = _run({**LINK, SETUP_URL_KEY: written})  # the link, opened in a fresh session: on the setup's page
    assert not shared.exception and not shared.warning, [w.value for w in shared.warning]
    box = shared.selectbox(key="find_choice")
    assert box.value == far and _launch(shared) == command
    assert shared.number_input(key="find_page").value == 3  # the row shows in the table (QA: it opened on page 1)
    assert [_rank(o) for o in box.options] == list(range(2 * FIND_PAGE_ROWS + 1, 3 * FIND_PAGE_ROWS + 1))
    assert _rank(far) - 1 - 2 * FIND_PAGE_ROWS in range(len(shared.dataframe[0].value))

    shared.number_input(key="find_page").set_value(1).run()  # a page the user turns stays turned
    assert shared.number_input(key="find_page").value == 1 and shared.selectbox(key="find_choice").value == far


def test_back_on_the_page_after_another_the_table_shows_the_chosen_row():
    """QA: Find, page 3, row 45 chosen, Back to Home, Forward: the link named row 45 and the box chose it, but the
    table showed page 1. Back on the page the page input starts afresh, so it follows the chosen setup."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/7_Find_a_GPU_setup.py")
    for key, value in LINK.items():
        at.query_params[key] = value
    at.run()
    at.number_input(key="find_page").set_value(3).run()
    box = at.selectbox(key="find_choice")
    far = next(o for o in box.options if _rank(o) == 2 * FIND_PAGE_ROWS + 5)
    box.set_value(far).run()
    written = at.query_params[SETUP_URL_KEY]
    at.number_input(key="find_page").set_value(1).run()  # a turned page stays turned
    assert at.number_input(key="find_page").value == 1
    at.switch_page("app.py").run()  # away, and back with the link that names the setup
    at.switch_page("pages/7_Find_a_GPU_setup.py")
    for key, value in {**LINK, SETUP_URL_KEY: written}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    assert at.selectbox(key="find_choice").value == far
    assert at.number_input(key="find_page").value == 3
