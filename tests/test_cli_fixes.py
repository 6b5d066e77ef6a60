"""Home and ``python -m planner plan`` offer the same checked fixes (QA), and every fix labels vLLM's concurrency.

QA: for the same plan the CLI printed the budget's unchecked suggestions ("try: use kv_cache_dtype fp8 (halves the
KV cache)" for Qwen3.6-35B-A3B at 32,768 tokens, batch 100, on one H100: 70.50 GiB halved is still far over the
2.66 GiB budget) while Home printed the checked ones, and Home's "utilization 0.95" for gpt-oss-120b at 131,072
tokens was missing from the CLI. Both now print :func:`planner.fixes.try_texts` of
:func:`planner.fixes.checked_fixes`. The expected lines are read off the Home page itself, not rebuilt here.
"""

from __future__ import annotations

import json
import re

import pytest

from planner.cli import main
from tests.test_app import run_page

H100 = "nvidia-h100-sxm-80gb"

CASES = {
    "qwen3.6-batch-100": {"model": "Qwen/Qwen3.6-35B-A3B", "gpu": H100, "context_len": "32768", "batch_size": "100"},
    "scout-fp8-2-gpus": {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "gpu": H100, "num_gpus": "2",
                         "weight_dtype": "fp8", "context_len": "32768", "batch_size": "32"},
    "gpt-oss-131k": {"model": "openai/gpt-oss-120b", "gpu": H100, "context_len": "131072", "batch_size": "1"},
}

BARE_RATIO = re.compile(r"\d\.\d\dx(?! concurrency)")
"""A concurrency figure without its label ("3.74x" alone, QA)."""


def _home_try_lines(params: dict) -> list[str]:
    at = run_page("app.py", params)
    assert not at.exception
    verdict = next(w.value for w in at.warning if w.value.startswith("**Does not fit**"))
    lines = verdict.split("**Try:**\n", 1)[1].splitlines()
    return [line.removeprefix("- ").replace("\\", "") for line in lines if line.startswith("- ")]


def _cli_args(params: dict) -> list[str]:
    return ["plan", *(x for k, v in params.items() for x in (f"--{k.replace('_', '-')}", v))]


def _cli_try_lines(capsys, params: dict) -> list[str]:
    assert main(_cli_args(params)) == 0
    out = capsys.readouterr().out
    return [line.removeprefix("  try: ") for line in out.splitlines() if line.startswith("  try: ")]


@pytest.mark.parametrize("case", list(CASES))
def test_cli_prints_homes_fixes_in_homes_order(capsys, case):
    params = CASES[case]
    home = _home_try_lines(params)
    assert home, "Home offers fixes for these plans"
    assert _cli_try_lines(capsys, params) == home


def test_the_qa_cases_leave_out_fp8_kv_and_offer_the_engines_utilization(capsys):
    qwen = _cli_try_lines(capsys, CASES["qwen3.6-batch-100"])
    assert not any("kv_cache_dtype fp8" in line for line in qwen)
    assert not any("kv_cache_dtype fp8" in line for line in _cli_try_lines(capsys, CASES["scout-fp8-2-gpus"]))
    oss = _cli_try_lines(capsys, CASES["gpt-oss-131k"])
    assert oss[0].startswith("utilization 0.95: starts with ")


def test_the_json_adds_the_checked_fixes_and_keeps_the_suggestions(capsys):
    """``suggestions`` stays the budget's own list (public contract); ``fixes`` adds the checked ones, the table's
    "try:" lines in their order."""
    params = CASES["qwen3.6-batch-100"]
    lines = _cli_try_lines(capsys, params)
    assert main([*_cli_args(params), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert any("kv_cache_dtype fp8" in s for s in out["suggestions"])
    assert [f["help"] for f in out["fixes"]] == lines
    assert {f["key"] for f in out["fixes"]} == {"batch_size", "num_gpus"}
    assert all(f["starts"] is True for f in out["fixes"])


@pytest.mark.parametrize("case", list(CASES))
def test_every_fix_labels_its_concurrency(capsys, case):
    """QA: "starts at 32,768, 3.74x" gave vLLM's "Maximum concurrency" figure without a label, on Home and in
    the CLI."""
    lines = [*_home_try_lines(CASES[case]), *_cli_try_lines(capsys, CASES[case])]
    assert any("x concurrency at " in line for line in lines)
    assert not [line for line in lines if BARE_RATIO.search(line)]


OUTPUT_COMMANDS = ("models", "gpus", "plan", "allocation", "find", "disagg")


def _format_choices(command: str) -> tuple:
    from planner.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.choices and command in a.choices).choices[command]
    return next(a.choices for a in sub._actions if "--format" in a.option_strings)


@pytest.mark.parametrize("argv", [
    ["disagg", "--model", "Qwen/Qwen3-8B", "--gpu", H100, "--users", "10", "--prompt-len", "100",
     "--output-len", "100"],
    ["plan", "--model", "Qwen/Qwen3-8B", "--gpu", H100],
])
def test_a_json_flag_names_the_format_flag(capsys, argv):
    """QA: ``disagg --json`` was refused with no word of the flag to use. Every command that prints a table or JSON
    takes ``--format table|json`` (``disagg`` keeps its JSON default, which its scripts and tests read); ``--json``
    is refused by all of them alike, naming ``--format json``."""
    assert {_format_choices(c) for c in OUTPUT_COMMANDS} == {("table", "json")}
    with pytest.raises(SystemExit) as stop:
        main([*argv, "--json"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --json; did you mean --format json?" in capsys.readouterr().err


@pytest.mark.parametrize("model,batch", [("google/gemma-3-27b-it", "60"), ("openai/gpt-oss-120b", "40")])
def test_the_prefill_peak_reason_is_given_once_in_the_try_list(capsys, model, batch):
    """QA (stop 42 leftover): Gemma 3 27B at 32,768 x 60 on one H100 listed two fixes that each carried the same
    30-word reason why users exceed the printed concurrency. The first keeps it; a later one refers back to it;
    each button's own help keeps the whole sentence."""
    from planner.engines.types import PREFILL_PEAK_REASON
    from planner.fixes import PEAK_REASON_AGAIN

    args = ["plan", "--model", model, "--gpu", "nvidia-h100", "--context-len", "32768", "--batch-size", batch,
            "--engine", "vllm"]
    main(args)
    tried = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  try: ")]
    assert sum(PREFILL_PEAK_REASON in line for line in tried) == 1, tried
    first = next(i for i, line in enumerate(tried) if PREFILL_PEAK_REASON in line)
    assert any(PEAK_REASON_AGAIN in line for line in tried[first + 1:]), tried
    at = run_page("app.py", {"model": model, "context_len": "32768", "batch_size": batch, "gpu": "nvidia-h100"})
    verdict = next(w.value for w in at.warning if "Try:" in w.value)
    assert verdict.count(PREFILL_PEAK_REASON) == 1
    helps = [b.help for b in at.button if b.help and "starts with" in b.help]
    assert sum(PREFILL_PEAK_REASON in h for h in helps) >= 2
