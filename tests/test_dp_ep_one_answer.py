"""One shared data-parallel + expert-parallel link, one answer on every page (QA, reproduced twice).

``?model=deepseek-ai/DeepSeek-V3.2&gpu=nvidia-h200-sxm&context_len=32768&data_parallel_size=8&
enable_expert_parallel=true&kv_cache_dtype=fp8&max_num_seqs=64`` read 19 users on Home, 9 per rank on the Engine page
and in ``plan``'s launch (whose budget said 19), 0 and "does not fit at any context" on Concurrency, "the KV budget is
not positive" on Allocation, "weights (627.71 GiB) ..." on GQA savings and "does not fit" on Memory curves, which
planned the whole model on one GPU under a caption naming the link's 8 replicas. The rank budget now charges the
data-parallel MoE layer's profile peak (planner/rank_budget.py), and every budget page plans the link's rank as Home
does (ui/link_rank.py). The expected figure is ``plan``'s JSON for the same flags, not copied from the code.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from planner.cli import main
from tests.test_app import run_page
from tests.tiles import metric_tiles
from ui.format import format_int, format_tokens

LINKS = {
    "V3.2-H200": {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "context_len": "32768",
                  "data_parallel_size": "8", "enable_expert_parallel": "true", "kv_cache_dtype": "fp8",
                  "max_num_seqs": "64"},
    "K2.5-B200": {"model": "moonshotai/Kimi-K2.5", "gpu": "nvidia-b200", "context_len": "65536",
                  "data_parallel_size": "8", "enable_expert_parallel": "true"},
}
FLAGS = {"model": "--model", "gpu": "--gpu", "context_len": "--context-len", "data_parallel_size": "-dp",
         "kv_cache_dtype": "--kv-cache-dtype", "max_num_seqs": "--max-num-seqs"}


def _plan_json(link: dict) -> dict:
    args = [a for k, v in link.items() if k in FLAGS for a in (FLAGS[k], v)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", *args, "--enable-expert-parallel", "--format", "json"]) == 0
    return json.loads(out.getvalue())


def _tiles(at) -> dict[str, str]:
    assert not at.exception, [e.value for e in at.exception]
    return {t.label: t.value for t in metric_tiles(at)}


def _users_shown(page: str, link: dict) -> str:
    """The users one rank holds at the link's context, as ``page`` shows them (Allocation: naive reservation's, each
    sequence at max_model_len, the link's context; its paged users are at the mean length)."""
    if page == "pages/1_Memory_curves.py":  # no users there: the longest context at the link's batch
        at = run_page(page, {**link, "memory_curves_section": "Longest context that fits"})
        assert not at.exception, [e.value for e in at.exception]
        return str(at.table[0].value.iloc[0, 1])
    tiles = _tiles(run_page(page, link))
    label = {"app.py": "Max concurrent sequences", "pages/5_Engine.py": "Users per rank",
             "pages/3_Concurrency.py": next(iter(tiles)), "pages/6_Allocation.py": "Naive: users",  # at max_model_len
             "pages/2_GQA_savings.py": next((k for k in tiles if k.startswith("Max sequences") and "as built" in k),
                                            "")}[page]
    return tiles[label]


PAGES = ("app.py", "pages/5_Engine.py", "pages/3_Concurrency.py", "pages/6_Allocation.py", "pages/2_GQA_savings.py",
         "pages/1_Memory_curves.py")


@pytest.mark.parametrize("name", sorted(LINKS))
@pytest.mark.parametrize("page", PAGES)
def test_every_page_plans_the_links_rank(name, page):
    link = LINKS[name]
    cli = _plan_json(link)
    per_rank = int(cli["scale"]["max_concurrency_per_rank"])
    assert abs(cli["max_concurrent_sequences"] - per_rank) <= 1, (cli["max_concurrent_sequences"], per_rank)
    shown = _users_shown(page, link)
    if page == "pages/1_Memory_curves.py":
        assert shown.startswith(format_tokens(cli["max_context_len"])), (shown, cli["max_context_len"])
    elif page == "pages/5_Engine.py":
        assert shown == format_int(per_rank), (shown, per_rank)
    else:
        assert shown == format_int(cli["max_concurrent_sequences"]), (page, shown, cli["max_concurrent_sequences"])


@pytest.mark.parametrize("page", PAGES[2:])
def test_no_budget_page_names_expert_parallel_left_out(page):
    at = run_page(page, LINKS["V3.2-H200"])
    assert not at.exception, [e.value for e in at.exception]
    left_out = [c.value for c in at.caption if c.value.startswith("Left out")]
    assert not any("enable_expert_parallel" in c for c in left_out), left_out
