"""A link's data / expert / context parallel flags on the budget pages (QA, stop 44).

``/?model=deepseek-ai/DeepSeek-V3.2&...&decode_context_parallel_size=8``: the Engine page planned vLLM ``-dcp 8``
(each request's KV split along tokens over the 8 GPUs, 57.67x) while Home and Concurrency showed 7 users and never
named the flag. Every page that counts users with the budget names the flags it leaves out on its one line
(issue 27, item 4); Find, which searches those layouts itself, does not.
"""

from __future__ import annotations

import pytest

from tests.test_app import run_page

LINK = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
        "batch_size": "16", "kv_cache_dtype": "fp8", "decode_context_parallel_size": "8"}


def _left_out_lines(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [c.value for c in at.caption if "Left out" in c.value]


@pytest.mark.parametrize("page", ["app.py", "pages/1_Memory_curves.py", "pages/2_GQA_savings.py",
                                  "pages/3_Concurrency.py", "pages/6_Allocation.py"])
def test_budget_pages_name_the_links_context_parallel_size(page):
    lines = _left_out_lines(run_page(page, LINK))
    assert any("`decode_context_parallel_size=8`" in line for line in lines), lines
    plain = {k: v for k, v in LINK.items() if k != "decode_context_parallel_size"}
    assert not any("decode_context_parallel_size" in line for line in _left_out_lines(run_page(page, plain)))


def test_a_size_of_one_is_no_flag_and_find_names_none():
    one = _left_out_lines(run_page("app.py", {**LINK, "decode_context_parallel_size": "1"}))
    assert not any("decode_context_parallel_size" in line for line in one), one
    find = _left_out_lines(run_page("pages/7_Find_a_GPU_setup.py", {**LINK, "users": "16"}))
    assert not any("decode_context_parallel_size" in line for line in find), find
