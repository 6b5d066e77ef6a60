"""Counts of one read in the singular (QA, stop 42).

The Disaggregation page, opened from a plan link with ``batch_size=1``, said "batch_size 1 = 1 concurrent users".
That sentence and the other f-strings that put a count before "users", "sequences" or "requests" (Allocation's
Monte-Carlo label and chart, its prefix panel and naive note, Find's advice, the profile-run formula, the CLI's
scale lines) use :func:`planner.text.count_noun`.
"""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

from streamlit.testing.v1 import AppTest

from model_catalog import get_gpu, model_spec
from planner.traffic.allocation import _naive_note
from planner.traffic.find_advice import setup_words
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_app import run_page
from ui.allocation_view import prefix_metric_values, simulation_metric_values


def _texts(at: AppTest) -> list[str]:
    return [e.value for kind in ("caption", "info", "markdown", "warning", "success") for e in getattr(at, kind)
            if isinstance(e.value, str)]


def test_disaggregation_s_link_note_says_one_concurrent_user():
    at = run_page("pages/8_Disaggregation.py", {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "gpu": "nvidia-h100-sxm-80gb",
                       "num_gpus": "4", "context_len": "1000000", "batch_size": "1"})
    assert not at.exception
    said = [t for t in _texts(at) if "From the link" in t]
    assert said and all("1 concurrent user" in t and "1 concurrent users" not in t for t in said), said


def test_allocation_labels_of_one_user_and_one_request():
    sim = SimpleNamespace(guaranteed_users=1, max_tokens=4096, expected_users=1.0, num_trials=100,
                          analytic_expected_users=1.0, p5_users=1, p95_users=1)
    labels = simulation_metric_values(SimpleNamespace(simulation=sim, users=1, preemption_at_users=0.0))
    assert "P(out of KV) at 1 user" in labels
    prefix = SimpleNamespace(shared_tokens=0, prefix_len=0, block_size=16, bytes_saved=0, num_hits=1,
                             num_requests=1, prefill_tokens_saved=0, max_sequences_with=1, max_sequences_without=1)
    assert prefix_metric_values(prefix)["KV saved"][1].endswith("for 1 of 1 request")


def test_naive_note_of_one_sequence():
    note = _naive_note(1, 2, 1 << 30, 1 << 29, 4096, 16, 1024, False)
    assert note.startswith("Naive reservation holds 1 sequence:"), note


def test_find_advice_of_a_setup_of_one_user():
    found = find_setups(model_spec("meta-llama/Meta-Llama-3-8B"), [get_gpu("nvidia-h100-sxm-80gb")],
                        FindRequest(users=1, prompt_len=2000, output_len=500, max_gpus=1, kv_cache_dtypes=("auto",),
                                    setup_kinds=("TP",)))
    words = setup_words(replace(found.options[0], max_concurrent_sequences=1))
    assert "1 user)" in words, words
