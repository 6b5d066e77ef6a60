"""One link, one answer: the budget plans the vLLM engine knobs a link or the CLI carries, as the Engine view does.

QA: ``model=moonshotai/Kimi-K2.5&gpu=nvidia-h200-sxm&tensor_parallel_size=8&kv_cache_dtype=fp8&context_len=65536``
with ``max_num_seqs=64`` showed "KV budget per GPU" 50.38 GiB and 23 users on Home while Home's own engine panel and
the Engine page gave 51.53 GiB and 24.03x (``enforce_eager=true``: 51.59 GiB, 24.06x); ``python -m planner plan
--engine vllm --max-num-seqs 64`` printed the same two figures. Without knobs the budget is the engine view's to the
byte, so every expected figure here is :func:`planner.engines.plan_engine`'s for the same knobs.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page
from tests.tiles import metric_tiles

LLAMA, H100 = "meta-llama/Meta-Llama-3-8B", "nvidia-h100-sxm-80gb"
KNOBS = [{"max_num_seqs": 64}, {"enforce_eager": True}, {"cudagraph_mode": "NONE"}, {"cudagraph_mode": "PIECEWISE"},
         {"optimization_level": 0}, {"usage_context": "llm"}, {"warm_compile_cache": True},
         {"max_cudagraph_capture_size": 64}, {"max_num_batched_tokens": 512},
         {"max_num_seqs": 8, "enforce_eager": True, "usage_context": "llm"}]
"""Engine knobs that change vLLM's non-KV memory, each under its EngineRequest / PlanRequest field name."""


def _engine(model_id: str, gpu_id: str, context_len: int, tp: int = 1, kv: str = "auto", **knobs):
    gpu = get_gpu(gpu_id)
    return plan_engine(model_spec(model_id), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", kv_cache_dtype=kv, tensor_parallel_size=tp, max_model_len=context_len, gpu_name=gpu.name,
        gpu_memory_reported_bytes=reported_memory_bytes(gpu), **knobs))


@pytest.mark.parametrize("knobs", KNOBS, ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_the_budget_is_the_engine_views_kv_memory_under_each_knob(knobs):
    gpu = get_gpu(H100)
    budget = plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=8192, **knobs), gpu_id=gpu.id)
    engine = _engine(LLAMA, H100, 8192, **knobs)
    assert engine.available_kv_cache_bytes != _engine(LLAMA, H100, 8192).available_kv_cache_bytes  # the knob counts
    assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes
    assert budget.max_concurrent_sequences_by_memory == int(engine.max_concurrency)
    cap = knobs.get("max_num_seqs")  # an explicit max_num_seqs runs no more at once (vllm/v1/core/sched/scheduler.py)
    assert budget.max_concurrent_sequences == min(int(engine.max_concurrency), cap or int(engine.max_concurrency))


def test_a_bad_knob_is_a_value_error():
    for bad in ({"max_num_seqs": 0}, {"cudagraph_mode": "SOME"}, {"optimization_level": 7},
                {"usage_context": "batch"}, {"max_cudagraph_capture_size": 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            PlanRequest(context_len=8192, **bad).validate()


def test_cli_plan_budget_is_its_engine_kv_under_max_num_seqs(capsys):
    argv = ["plan", "--model", LLAMA, "--gpu", H100, "--engine", "vllm", "--max-num-seqs", "64", "--enforce-eager",
            "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["available_kv_cache_bytes"] == _engine(LLAMA, H100, 8192, max_num_seqs=64,
                                                      enforce_eager=True).available_kv_cache_bytes
    assert out["kv_cache_budget_bytes"] == out["available_kv_cache_bytes"]


KIMI = {"model": "moonshotai/Kimi-K2.5", "gpu": "nvidia-h200-sxm", "tensor_parallel_size": "8", "kv_cache_dtype": "fp8",
        "context_len": "65536"}
LINK_KNOBS = [({"max_num_seqs": "64"}, {"max_num_seqs": 64}), ({"enforce_eager": "true"}, {"enforce_eager": True}),
              ({"max_num_batched_tokens": "2048"}, {"max_num_batched_tokens": 2048})]


def _kimi_engine(knobs: dict):
    return _engine(KIMI["model"], KIMI["gpu"], 65536, tp=8, kv="fp8", **knobs)


@pytest.mark.parametrize(("link", "knobs"), LINK_KNOBS, ids=[next(iter(k)) for k, _ in LINK_KNOBS])
def test_homes_budget_is_its_engine_panels_figure(link, knobs):
    at = run_page("app.py", {**KIMI, **link})
    assert not at.exception, [e.value for e in at.exception]
    engine = _kimi_engine(knobs)
    tiles = {t.label: t for t in metric_tiles(at)}
    assert f"({engine.available_kv_cache_bytes:,} B)" in tiles["KV budget per GPU"].help, tiles["KV budget per GPU"]
    assert tiles["Max concurrent sequences"].value == f"{int(engine.max_concurrency):,}"
    panel = next(m.value for m in at.markdown if " of KV per GPU" in m.value)
    assert f"{engine.max_concurrency:.2f}x concurrency" in panel  # the panel's own figure, beside the budget's


@pytest.mark.parametrize(("link", "knobs"), LINK_KNOBS[:2], ids=[next(iter(k)) for k, _ in LINK_KNOBS[:2]])
def test_concurrency_headline_plans_the_links_knobs(link, knobs):
    at = run_page("pages/3_Concurrency.py", {**KIMI, "gpus": KIMI["gpu"], **link})
    assert not at.exception, [e.value for e in at.exception]
    engine = _kimi_engine(knobs)
    tile = next(t for t in metric_tiles(at) if "KV budget per GPU" in t.help)
    assert tile.value == f"{int(engine.max_concurrency):,}", tile
    assert tile.help.startswith(f"{engine.available_kv_cache_bytes / 2**30:,.2f} GiB KV budget"), tile


@pytest.mark.parametrize(("link", "knobs"), LINK_KNOBS[:2], ids=[next(iter(k)) for k, _ in LINK_KNOBS[:2]])
def test_gqa_savings_as_built_users_plan_the_links_knobs(link, knobs):
    at = run_page("pages/2_GQA_savings.py", {**KIMI, **link})
    assert not at.exception, [e.value for e in at.exception]
    engine = _kimi_engine(knobs)
    table = at.table[0].value
    built = table[table["As built"].astype(str).str.contains("yes|✓|True", case=False)].iloc[0]
    assert str(built["Max concurrent sequences"]) == f"{int(engine.max_concurrency):,}", built.to_dict()


@pytest.mark.parametrize(("link", "knobs"), LINK_KNOBS[:2], ids=[next(iter(k)) for k, _ in LINK_KNOBS[:2]])
def test_allocation_plans_the_links_knobs(link, knobs):
    """Naive reservation of the link's 65,536 tokens (whole blocks: exact bytes are the paged ones here) holds the
    engine's concurrency at that length, whole."""
    at = run_page("pages/6_Allocation.py", {**KIMI, **link})
    assert not at.exception, [e.value for e in at.exception]
    shown = {t.label: t.value for t in metric_tiles(at)}
    assert shown["Naive: users"] == f"{int(_kimi_engine(knobs).max_concurrency):,}", shown


@pytest.mark.parametrize(("link", "knobs"), [({}, {}), *LINK_KNOBS[:2]], ids=["none", "max_num_seqs", "enforce_eager"])
def test_memory_curves_fit_table_plans_the_links_knobs(link, knobs):
    """At batch 24 the longest context reaches 65,536 tokens exactly where the engine holds 24 such requests
    (23.49x without knobs, 24.03x with ``max_num_seqs=64``)."""
    from tests.lazy_tabs import open_tab

    at = run_page("pages/1_Memory_curves.py", {"models": KIMI["model"], "gpus": KIMI["gpu"], "num_gpus": "8",
                                               "kv_cache_dtype": "fp8", "batch_size": "24", **link})
    at = open_tab(at, "memory_curves_section", "Longest context that fits")
    assert not at.exception, [e.value for e in at.exception]
    cell = str(at.table[0].value.iloc[0][get_gpu(KIMI["gpu"]).name])
    longest = int(cell.split()[0].replace(",", ""))
    assert (longest >= 65536) == (_kimi_engine(knobs).max_concurrency >= 24), cell


def test_homes_command_line_carries_the_knobs_and_prints_its_budget(capsys):
    import shlex

    at = run_page("app.py", {"model": LLAMA, "gpu": H100, "max_num_seqs": "64", "enforce_eager": "true",
                             "usage_context": "llm"})
    assert not at.exception, [e.value for e in at.exception]
    command = next(c.value for c in at.code if c.value.startswith("python -m planner plan"))
    argv = shlex.split(command.replace("\\\n", " "))[3:]
    assert {"--max-num-seqs", "--enforce-eager", "--usage-context"} <= set(argv), command
    assert main([*argv, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    budget = next(t for t in metric_tiles(at) if t.label == "KV budget per GPU")
    assert f"({out['kv_cache_budget_bytes']:,} B)" in budget.help
    assert out["kv_cache_budget_bytes"] == _engine(LLAMA, H100, 8192, max_num_seqs=64, enforce_eager=True,
                                                   usage_context="llm").available_kv_cache_bytes


def test_a_budget_page_names_a_bad_knob_value():
    at = run_page("pages/3_Concurrency.py", {"model": LLAMA, "gpus": H100, "max_num_seqs": "lots",
                                             "enforce_eager": "yes"})
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    assert any("`max_num_seqs=lots`" in e and "this page's budget" in e for e in errors), errors
    said = errors + [w.value for w in at.warning]  # a switch's bad value: the link guard's warning, on every page
    assert any("`enforce_eager=yes`" in e for e in said), said


@pytest.mark.parametrize(("flags", "link"), [(["--max-num-seqs", "64"], {"max_num_seqs": "64"}),
                                             (["--enforce-eager"], {"enforce_eager": "true"})])
def test_cli_allocation_takes_the_knobs_the_page_takes(capsys, flags, link):
    """The Allocation page plans a link's engine knobs; ``allocation`` had no flag for them, so the same link gave
    23 naive users in the CLI beside the page's 24 (Kimi-K2.5 on 8 H200 at 65,536 tokens, fp8)."""
    at = run_page("pages/6_Allocation.py", {**KIMI, **link})
    shown = {t.label: t.value for t in metric_tiles(at)}
    mean_len = at.number_input(key="mean_len").value
    assert main(["allocation", "--model", KIMI["model"], "--gpu", KIMI["gpu"], "--num-gpus", "8",
                 "--kv-cache-dtype", "fp8", "--max-model-len", "65536", "--mean-len", str(mean_len), *flags,
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert f"{out['naive_max_sequences']:,}" == shown["Naive: users"]
    assert f"{out['paged_max_sequences']:,}" == shown["Paged: users"]


@pytest.mark.parametrize("method", ["ngram", "eagle"])
def test_the_budget_sizes_speculative_cuda_graphs_as_the_engine(capsys, method):
    """QA: Llama 3.1 8B on an H100 at 8,192 tokens, ``--max-num-seqs 64`` with 3 speculative tokens: the budget said
    55.15 GiB (55 users) beside the engine's 54.87 GiB (54.87x): its CUDA graphs were sized for one token a sequence
    (0.16 GiB), the engine's for 1 + 3 (uniform-decode sizes, planner/engines/vllm_cudagraph.py; 0.44 GiB)."""
    assert main(["plan", "--model", LLAMA, "--gpu", H100, "--context-len", "8192", "--engine", "vllm",
                 "--max-num-seqs", "64", "--speculative-method", method, "--num-speculative-tokens", "3",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_cache_budget_bytes"] == out["available_kv_cache_bytes"]


def test_more_sequences_than_batched_tokens_is_refused_as_vllm_refuses_it(capsys):
    """vLLM stops at startup when ``max_num_batched_tokens`` is below ``max_num_seqs`` (vllm/config/scheduler.py:
    "must be greater than or equal to max_num_seqs"); QA: ``--max-num-seqs 4096 --max-num-batched-tokens 2048``
    planned "starts yes", and a link with ``max_num_seqs=65536`` (the defaulted budget is 8,192 tokens on an H100)
    planned 18 users on every page. Both are now a one-line error that says what to change."""
    for flags in (["--max-num-seqs", "4096", "--max-num-batched-tokens", "2048"], ["--max-num-seqs", "65536"]):
        assert main(["plan", "--model", LLAMA, "--gpu", H100, "--context-len", "8192", "--engine", "vllm",
                     *flags]) == 2
        err = capsys.readouterr().err
        assert "max_num_seqs" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    at = run_page("app.py", {"model": LLAMA, "gpu": H100, "max_num_seqs": "65536"})
    assert not at.exception and any("max_num_seqs" in e.value for e in at.error)
