"""Find where an explicit max_num_seqs, not memory, rules out every setup (QA, stop 47).

With ``--max-num-seqs 4`` and 256 users, every setup needs ceil(256 / 4) = 64 replicas (ranks) of at least one GPU:
more than max_gpus 8, whatever the memory. Find said "nothing fits" with a 277-GPU disaggregated row as the closest,
suggested fp8 / int4 weights (which cannot help) and never named the cap. Now:

1. the result names the cap as the cause (``FindResult.nothing_fits_cause``; the CLI's ``cause:`` line, the JSON row's
   ``nothing_fits_cause`` key, the page's warning);
2. the suggestions raise max_num_seqs to the value that makes the cheapest setup fit, checked by a search with it;
3. no memory fix (fp8 KV, smaller weights) is offered;
4. the closest row is within max_gpus and its reasons name the cap.
"""

import json

from model_catalog import model_spec
from model_catalog.gpus import load_gpus
from planner.cli import main
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from planner.units import ceil_div
from tests.test_app import run_page

QWEN = "Qwen/Qwen3.6-35B-A3B"
USERS, CAP, MAX_GPUS = 256, 4, 8
CASE = dict(users=USERS, prompt_len=32768 - 500, output_len=500, kv_cache_dtypes=("fp8",), engine="vllm",
            max_gpus=MAX_GPUS)


def _find(**knobs):
    request = FindRequest(**CASE, engine_knobs=tuple(knobs.items()))
    return find_setups(model_spec(QWEN), list(load_gpus().values()), request)


def _raised_to(suggestions) -> int:
    line = next(s for s in suggestions if s.startswith("raise max_num_seqs to "))
    return int(line.removeprefix("raise max_num_seqs to ").split(":")[0].replace(",", ""))


def test_a_binding_cap_is_named_and_raising_it_is_the_fix():
    found = _find(max_num_seqs=CAP)
    assert not found.fits
    replicas = ceil_div(USERS, CAP)
    assert replicas > MAX_GPUS
    cause = found.nothing_fits_cause
    assert f"--max-num-seqs {CAP}" in cause and f"{replicas:,} replicas" in cause and f"max_gpus {MAX_GPUS}" in cause
    # the value named is what the cheapest setup without the cap runs per replica, and with it a setup fits
    uncapped = _find()
    assert uncapped.fits
    raised = _raised_to(found.suggestions)
    assert raised == uncapped.options[0].users_per_replica
    again = _find(max_num_seqs=raised)
    assert again.fits and f"${again.options[0].price_per_hour:.2f}/h" in next(
        s for s in found.suggestions if s.startswith("raise max_num_seqs"))
    # memory fixes would not help: not offered
    assert not any("weight_dtype" in s or "kv_cache_dtype" in s for s in found.suggestions)
    # the closest row is a setup within the limit, stopped by the cap
    closest = found.closest
    assert closest is not None and closest.num_gpus <= MAX_GPUS
    assert any(f"--max-num-seqs {CAP}" in r for r in closest.reasons)


def test_a_cap_that_does_not_bind_alone_names_no_cause():
    found = _find(max_num_seqs=64)  # 4 replicas of 64 would do: the cap alone rules nothing out
    assert found.nothing_fits_cause == ""


def test_the_cli_prints_and_the_json_carries_the_cause(capsys):
    argv = ["find", "--model", QWEN, "--users", str(USERS), "--prompt-len", str(32768 - 500), "--output-len", "500",
            "--kv-cache-dtypes", "fp8", "--max-num-seqs", str(CAP)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    cause = next(line for line in out.splitlines() if line.startswith("cause:"))
    assert f"--max-num-seqs {CAP}" in cause
    assert "  try: raise max_num_seqs to " in out and "use weight_dtype" not in out
    assert main([*argv, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1 and f"--max-num-seqs {CAP}" in rows[0]["nothing_fits_cause"]


def test_the_page_says_the_cap_binds():
    at = run_page("pages/7_Find_a_GPU_setup.py", {"model": QWEN, "gpu": "nvidia-b200", "context_len": "32768",
                                                   "max_num_seqs": str(CAP), "kv_cache_dtype": "fp8"})
    assert not at.exception, [e.value for e in at.exception]
    text = at.warning[0].value
    assert "Nothing fits" in text and f"--max-num-seqs {CAP}" in text.split("Closest")[0]
    assert "raise max_num_seqs to" in text and "use weight_dtype" not in text
