"""A link's bad vLLM CUDA-graph knob is named on the pages that do not read it (QA: ``/Catalog?cudagraph_mode=BOGUS``
and ``/Find_a_GPU_setup?optimization_level=7`` said nothing, where Home, the budget pages, the Engine page and
Disaggregation each name it): one line per bad value, with the values vLLM takes
(planner/engines/vllm_cudagraph.py ``CUDAGRAPH_MODES``, ``OPTIMIZATION_LEVELS``)."""

from __future__ import annotations

import pytest

from tests.test_app import run_page

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


CASES = [
    ("pages/4_Catalog.py", {"search": "llama 8b", "cudagraph_mode": "BOGUS"}, "cudagraph_mode=BOGUS",
     "FULL_AND_PIECEWISE, PIECEWISE, FULL, FULL_DECODE_ONLY, NONE"),
    ("pages/7_Find_a_GPU_setup.py", {"model": LLAMA3, "users": "8", "max_gpus": "1", "optimization_level": "7"},
     "optimization_level=7", "0, 1, 2, 3"),
]


@pytest.mark.parametrize(("page", "params", "named", "accepted"), CASES)
def test_a_bad_graph_knob_in_the_link_is_named_with_the_values_vllm_takes(page, params, named, accepted):
    at = run_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    lines = [e.value for e in at.error if named in e.value]
    assert len(lines) == 1, [e.value for e in at.error]
    assert accepted in lines[0] and "Engine page" in lines[0], lines[0]


def test_a_good_graph_knob_says_nothing():
    at = run_page("pages/4_Catalog.py", {"search": "llama 8b", "cudagraph_mode": "piecewise",
                                         "optimization_level": "2"})
    assert not at.exception and not at.error, [e.value for e in at.error]
