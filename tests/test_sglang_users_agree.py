"""One link, one user count: a vision model under ``engine=sglang`` has the same users on every page (QA).

Gemma 4 26B-A4B on an H100 at 32,768 tokens under ``engine=sglang``: Home (and ``plan --engine sglang``) dropped
vLLM's default encoder profile from the budget and counted 22 users, where GQA savings, Concurrency and Allocation
keep it and count 17. The budget prices the newest vLLM (Home says so), and SGLang itself holds memory back for a
vision tower (``adjust_mem_fraction_for_vlm``, python/sglang/srt/server_args.py), so a budget with no encoder term
overstated them: every page now counts the users with the profile, as under ``engine=vllm``, and Home names the
link's engine. Expected figures come from the pages and ``plan`` themselves, never typed in.
"""

from __future__ import annotations

import json

from planner.cli import main
from tests.test_app import metrics, run_page

GEMMA4, H100 = "google/gemma-4-26B-A4B", "nvidia-h100-sxm-80gb"
LINK = {"model": GEMMA4, "gpu": H100, "context_len": "32768"}
PAGES = {"app.py": "Max concurrent sequences", "pages/2_GQA_savings.py": "Max sequences, GQA (as built)",
         "pages/3_Concurrency.py": "H100 SXM5 80GB"}


def _users(page: str, engine: str) -> str:
    at = run_page(page, {**LINK, "engine": engine})
    assert not at.exception and not at.error, [e.value for e in at.error]
    return metrics(at)[PAGES[page]]


def test_every_page_counts_the_same_users_under_sglang_as_under_vllm():
    under_vllm = {page: _users(page, "vllm") for page in PAGES}
    assert len(set(under_vllm.values())) == 1, under_vllm  # the pages agree under vLLM
    under_sglang = {page: _users(page, "sglang") for page in PAGES}
    assert under_sglang == under_vllm


def test_home_names_the_link_engine_beside_the_users_under_sglang():
    at = run_page("app.py", {**LINK, "engine": "sglang"})
    lines = [c.value for c in at.caption if "encoder profile" in c.value]
    assert any("sglang" in line and "mem_fraction_static" in line for line in lines), lines


def _plan_json(capsys, *extra: str) -> dict:
    assert main(["plan", "--model", GEMMA4, "--gpu", H100, "--context-len", LINK["context_len"], *extra,
                 "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_plan_under_sglang_counts_the_budget_as_without_engine(capsys):
    plain = _plan_json(capsys)
    sglang = _plan_json(capsys, "--engine", "sglang")
    assert sglang["kv_cache_budget_bytes"] == plain["kv_cache_budget_bytes"]
    assert sglang["max_concurrent_sequences"] == plain["max_concurrent_sequences"]
    assert sglang["engine_plan"]["engine"] == "sglang"  # the engine section stays SGLang's own pool
