"""A multi-value link key over its limits gets one message on the page that reads it, with one count (QA, stop 42).

``/Memory_curves?models=...`` with 40 values said "lists 40 values; the planner reads the first 16" (a warning)
and then "models lists 16 models; at most 6 fit" (an error): two boxes, two counts. On ``/Concurrency``, a
one-model page, the first box said "Remove some in the sidebar", where there is no such box.
"""

from __future__ import annotations


from model_catalog import model_ids
from tests.test_app import run_page
from ui.inputs import MAX_MODELS
from ui.link_guard import MAX_VALUES_PER_KEY

FORTY = list(model_ids())[:40]


def _messages(page: str, **params) -> list[str]:
    at = run_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    return [w.value for w in at.warning] + [e.value for e in at.error]


def test_a_many_model_page_says_it_once_with_the_link_s_count():
    assert len(FORTY) == 40
    about = [m for m in _messages("pages/1_Memory_curves.py", models=FORTY) if "`models`" in m]
    assert len(about) == 1, about
    assert "40" in about[0] and f"first {MAX_MODELS}" in about[0] and f"first {MAX_VALUES_PER_KEY}" not in about[0]


def test_a_one_model_page_does_not_ask_to_remove_models_from_a_box_it_lacks():
    about = [m for m in _messages("pages/3_Concurrency.py", models=FORTY) if "`models`" in m]
    assert not any("Remove some" in m for m in about), about
