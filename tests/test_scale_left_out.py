"""A link's data / expert / context parallel flags on the budget pages (QA, stop 44).

``/?model=deepseek-ai/DeepSeek-V3.2&...&decode_context_parallel_size=8``: the Engine page planned vLLM ``-dcp 8``
(each request's KV split along tokens over the 8 GPUs, 57.67x) while Home and Concurrency showed 7 users and never
named the flag. Home and Concurrency now apply a valid size (planner/context_budget.py: each GPU keeps
ceil(L / d) tokens of a request) and say so; every other page that counts users with the budget names the flags it
leaves out on its one line (issue 27, item 4); Find, which searches those layouts itself, does not.
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu, model_spec
from planner.engines.types import EngineRequest
from planner.scale import ScaleRequest, plan_scale
from tests.test_app import metrics, run_page

LINK = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
        "batch_size": "16", "kv_cache_dtype": "fp8", "decode_context_parallel_size": "8"}


def _left_out_lines(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [c.value for c in at.caption if "Left out" in c.value]


@pytest.mark.parametrize("page", ["pages/1_Memory_curves.py", "pages/2_GQA_savings.py", "pages/6_Allocation.py"])
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


def _engine_users(link: dict) -> int:
    """``int(requests held)`` of the Engine view's ``-dcp`` launch of ``link`` (planner.scale, not the budget)."""
    gpu = get_gpu(link["gpu"])
    engine = EngineRequest(engine="vllm", tensor_parallel_size=int(link["num_gpus"]),
                           max_model_len=int(link["context_len"]), kv_cache_dtype=link["kv_cache_dtype"],
                           gpu_name=gpu.name)
    scaled = plan_scale(model_spec(link["model"]), gpu.framework_memory_bytes, engine,
                        ScaleRequest(decode_context_parallel_size=int(link["decode_context_parallel_size"])))
    return int(scaled.engine_view().requests_held)


def _applied_lines(at) -> list[str]:
    return [c.value for c in at.caption if "decode context parallel 8" in c.value]


def test_home_applies_the_links_context_parallel_size():
    """Home holds the Engine page's 57 users (57.67x) where it held 7, says it applies the split, names it no more."""
    at = run_page("app.py", LINK)
    assert metrics(at)["Max concurrent sequences"] == f"{_engine_users(LINK):,}"
    assert _applied_lines(at) and "split over 8 GPUs" in _applied_lines(at)[0]
    assert not any("decode_context_parallel_size" in line for line in _left_out_lines(at))


def test_concurrency_applies_the_links_context_parallel_size():
    at = run_page("pages/3_Concurrency.py", LINK)
    assert not at.exception, [e.value for e in at.exception]
    assert _applied_lines(at)
    assert not any("decode_context_parallel_size" in line for line in _left_out_lines(at))
    assert metrics(at)[get_gpu(LINK["gpu"]).name] == f"{_engine_users(LINK):,}"  # the headline's H200 tile


@pytest.mark.parametrize("page", ["app.py", "pages/3_Concurrency.py"])
def test_a_size_the_budget_cannot_apply_stays_named_with_the_reason(page):
    lines = _left_out_lines(run_page(page, {**LINK, "decode_context_parallel_size": "3"}))
    assert any("`decode_context_parallel_size=3`" in line and "must divide" in line for line in lines), lines
    bf16 = _left_out_lines(run_page(page, {**LINK, "kv_cache_dtype": "bf16"}))
    assert any("`decode_context_parallel_size=8`" in line and "log-sum-exp" in line for line in bf16), bf16


def test_homes_command_line_carries_the_context_parallel_size_it_applied(capsys):
    """The copied ``python -m planner plan`` line gives Home's users: it carries ``--decode-context-parallel-size``."""
    import json

    from planner.cli import main

    at = run_page("app.py", LINK)
    line = next(c.value for c in at.code if c.value.startswith("python -m planner plan"))
    assert "--decode-context-parallel-size 8" in line, line
    assert main(["plan", *line.replace("\\\n", " ").split()[4:], "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert metrics(at)["Max concurrent sequences"] == f"{out['max_concurrent_sequences']:,}"


@pytest.mark.parametrize("users", ["16", "64"])
def test_disaggregation_names_no_flag_its_pools_apply(users):
    """QA: the Disaggregation page's line said "Left out: `decode_context_parallel_size=8` (... this page's budget
    keeps each request's whole KV ...)" while its decode pool ran ``-dcp 8`` (57 requests a replica, the launch's
    ``--decode-context-parallel-size 8``); its sidebar reads the link's data / expert / context parallel flags. Only
    the prefill pool, which the page launches without the split, is named."""
    at = run_page("pages/8_Disaggregation.py", {**LINK, "batch_size": users, "enable_expert_parallel": "true"})
    lines = _left_out_lines(at)
    assert not any("whole KV" in line or "enable_expert_parallel" in line for line in lines), lines
    assert any("`decode_context_parallel_size=8` on the prefill pool" in line for line in lines), lines
    launches = [c.value for c in at.code if "vllm serve" in c.value]
    assert len(launches) == 2 and "decode-context-parallel-size" not in launches[0], launches
    assert "--decode-context-parallel-size 8" in launches[1], launches[1]
