"""Find's words for a setup that falls short, and for a ``max_model_len`` above the model's limit (QA).

1. ``/Find_a_GPU_setup?model=Qwen/Qwen3-32B&users=64&max_num_seqs=2``: nothing fits and the closest setup holds about
   16 of the 64 users, yet the "Setup to launch" summary read "the setup holds 16, -300% of the --max-num-seqs 2 cap
   to spare" (Llama-3.1-8B, 100 users, cap 4: "-225%"; DeepSeek-V3.2 on its DP+EP line; a KV-bound closest, 5,000
   users on one H100: "-1322% of the KV pool to spare"). A setup short of the users says how many it holds of how
   many, and how many short; never a negative spare.
2. ``max_model_len=8192`` for Llama-2-7b (4,096 positions) with 2,000 + 500 token requests said "requests of up to
   8,192 tokens exceed what meta-llama/Llama-2-7b-hf supports (4,096); shorten the prompt or output": the 8,192 is the
   user's limit, not the requests. The message names the setting (``max_model_len`` on the page, ``--max-model-len``
   in the CLI) and the largest value that works; "shorten the prompt or output" only where the requests exceed it.
"""

from __future__ import annotations

import re

import pytest

from model_catalog import model_spec
from planner.cli import main
from tests.test_app import run_page

PAGE = "pages/7_Find_a_GPU_setup.py"
LLAMA2 = "meta-llama/Llama-2-7b-hf"


def _headline_held(at) -> tuple[int, int]:
    """(users held, users wanted) from the page's "Nothing fits" warning ("holding about X of N users")."""
    text = next(w.value for w in at.warning if "Nothing fits" in w.value)
    held, wanted = re.search(r"holding about ([\d,]+) of ([\d,]+) users", text).groups()
    return int(held.replace(",", "")), int(wanted.replace(",", ""))


def _summary(at) -> str:
    return next(m.value for m in at.markdown if "the setup holds" in m.value)


@pytest.mark.parametrize("params", [
    {"model": "Qwen/Qwen3-32B", "users": "64", "max_num_seqs": "2"},
    {"model": "meta-llama/Llama-3.1-8B-Instruct", "users": "100", "max_num_seqs": "4"},
    {"model": "deepseek-ai/DeepSeek-V3.2", "users": "64", "max_num_seqs": "2"},
    {"model": "meta-llama/Llama-3.1-8B-Instruct", "users": "5000", "max_gpus": "1",
     "gpu_types": "nvidia-h100-sxm-80gb"},  # no cap: the KV pool bounds the closest
])
def test_a_short_setups_summary_says_how_many_it_is_short(params):
    at = run_page(PAGE, params)
    assert not at.exception and not at.error
    held, wanted = _headline_held(at)
    assert held < wanted
    summary = _summary(at)
    assert f"the setup holds {held:,} of {wanted:,}, {wanted - held:,} short" in summary, summary
    assert "to spare" not in summary and not re.search(r"-\d+%", summary), summary


def _page_error(params: dict) -> str:
    at = run_page(PAGE, {"model": LLAMA2, "users": "8", **params})
    assert not at.exception
    return " ".join(e.value for e in at.error)


def test_page_names_max_model_len_when_only_the_limit_is_too_long():
    limit = model_spec(LLAMA2).max_position_embeddings
    text = _page_error({"max_model_len": "8192"})  # 2,000 + 500 token requests (the page's default lengths)
    assert f"max_model_len 8,192 exceeds what {LLAMA2} supports ({limit:,})" in text, text
    assert f"lower max_model_len to at most {limit:,}" in text, text
    assert "shorten the prompt or output" not in text and "requests of up to 8,192" not in text, text


def test_page_names_a_distribution_whose_p95_fits_as_a_limit_problem():
    limit = model_spec(LLAMA2).max_position_embeddings
    text = _page_error({"max_model_len": "8192", "prompt_p95": "3000"})  # p95 3,000 + 500 fits 4,096
    assert f"lower max_model_len to at most {limit:,}" in text, text
    assert "shorten the prompt or output" not in text, text


def test_page_still_asks_to_shorten_requests_that_are_too_long():
    limit = model_spec(LLAMA2).max_position_embeddings
    text = _page_error({"prompt_len": "4000", "output_len": "500"})
    assert f"requests of up to 4,500 tokens exceed what {LLAMA2} supports ({limit:,}); shorten the prompt or output" \
        in text, text
    text = _page_error({"max_model_len": "8192", "prompt_p95": "3900"})  # p95 3,900 + 500 does not fit
    assert "shorten the prompt or output" in text and f"lower max_model_len to at most {limit:,}" in text, text


def test_cli_names_the_max_model_len_flag(capsys):
    limit = model_spec(LLAMA2).max_position_embeddings
    code = main(["find", "--model", LLAMA2, "--users", "8", "--prompt-len", "2000", "--output-len", "500",
                 "--max-model-len", "8192"])
    err = capsys.readouterr().err
    assert code == 2
    assert f"--max-model-len 8,192 exceeds what {LLAMA2} supports ({limit:,})" in err, err
    assert f"lower --max-model-len to at most {limit:,}" in err, err
    assert "shorten the prompt or output" not in err, err
