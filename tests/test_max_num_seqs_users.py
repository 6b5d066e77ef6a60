"""An explicit ``max_num_seqs`` caps the budget's users: vLLM runs at most that many requests at once.

QA: ``python -m planner plan --model meta-llama/Llama-3.1-8B-Instruct --gpu nvidia-h100-sxm-80gb --context-len 2500
--batch-size 100 --max-num-seqs 64 --engine vllm`` said "fits yes, max users 178" (Home: "Fits ... up to 178") where
vLLM's scheduler admits at most ``max_num_seqs`` running requests (vllm/v1/core/sched/scheduler.py); ``-dp 4
--batch-size 100 --max-num-seqs 20`` said "fits yes ... up to 25 per replica" although 25 > 20. ``find --max-num-seqs
64`` capped each replica at 64 but reported "max users 356" and 256 headroom on 2 x H100. The KV figures here come
from :func:`planner.plan` without the cap, the function the budget plans with.
"""

from __future__ import annotations

import json

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.cli import main
from tests.test_app import run_page

LLAMA, H100, CONTEXT = "meta-llama/Llama-3.1-8B-Instruct", "nvidia-h100-sxm-80gb", 2500


def _plan(**request):
    gpu = get_gpu(H100)
    return plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=CONTEXT, **request),
                gpu_id=gpu.id)


def _kv_users(max_num_seqs: int) -> int:
    """Users the KV cache holds with this ``max_num_seqs``'s overhead (its CUDA graphs), uncapped: a batch of 1."""
    return _plan(batch_size=1, max_num_seqs=max_num_seqs).max_concurrent_sequences_by_memory


def test_an_explicit_max_num_seqs_caps_the_users_and_says_so():
    held = _kv_users(64)
    assert held > 64  # the premise: the cache holds more than the scheduler runs
    capped = _plan(batch_size=32, max_num_seqs=64)
    assert capped.fits and capped.max_concurrent_sequences == 64
    assert capped.max_concurrent_sequences_by_memory == held
    assert any(f"limited by max_num_seqs 64; the KV cache holds {held:,}" in n for n in capped.notes)
    free = _plan(batch_size=32)  # no max_num_seqs: as before
    assert free.max_concurrent_sequences == free.max_concurrent_sequences_by_memory > 64
    assert not any("max_num_seqs" in n for n in free.notes)


def test_a_batch_above_max_num_seqs_does_not_fit_with_both_fixes():
    over = _plan(batch_size=100, max_num_seqs=64)
    assert not over.fits and any("max_num_seqs 64" in r for r in over.reasons)
    fixes = {(f.key, f.value) for f in over.suggestions}
    assert ("max_num_seqs", 100) in fixes and ("batch_size", 64) in fixes
    assert _plan(batch_size=100, max_num_seqs=100).fits  # the fix fits


def test_cli_plan_caps_the_users_and_each_replicas_share(capsys):
    held = _kv_users(64)
    argv = ["plan", "--model", LLAMA, "--gpu", H100, "--context-len", str(CONTEXT)]
    assert main([*argv, "--batch-size", "100", "--max-num-seqs", "64", "--engine", "vllm"]) == 0
    out = capsys.readouterr().out
    lines = {line[:12].strip(): line[12:].strip() for line in out.splitlines() if line[:1] != " "}
    assert lines["max users"].startswith(f"64 at {CONTEXT:,} tokens (limited by max_num_seqs 64; the KV cache "
                                         f"holds {held:,})")
    assert lines["fits"].startswith("no")
    assert main([*argv, "-dp", "4", "--batch-size", "100", "--max-num-seqs", "20", "--format", "json"]) == 0
    dp = json.loads(capsys.readouterr().out)
    assert dp["fits"] is False and dp["data_parallel"]["max_concurrent_sequences_per_replica"] == 20
    said = " | ".join(dp["suggestions"])
    assert "lower batch_size to 80 " in said and "raise max_num_seqs to 25 " in said  # 20 a replica x 4; 25 a replica


def test_home_says_the_cap_beside_the_verdict():
    held = _kv_users(64)
    link = {"model": LLAMA, "gpu": H100, "context_len": str(CONTEXT), "max_num_seqs": "64"}
    fits = run_page("app.py", {**link, "batch_size": "32"})
    said = " ".join(s.value for s in fits.success)
    assert "up to 64 concurrent sequences" in said
    assert f"limited by max_num_seqs 64; the KV cache holds {held:,}" in " ".join(i.value for i in fits.info)
    over = run_page("app.py", {**link, "batch_size": "100"})
    assert any("Does not fit" in w.value and "max_num_seqs 64" in w.value for w in over.warning)


def test_find_reports_the_users_its_max_num_seqs_runs(capsys):
    argv = ["find", "--model", LLAMA, "--users", "100", "--prompt-len", "2000", "--output-len", "500",
            "--gpu-types", H100, "--format", "json"]
    assert main(argv) == 0
    free = json.loads(capsys.readouterr().out)
    assert main([*argv, "--max-num-seqs", "64"]) == 0
    capped = json.loads(capsys.readouterr().out)
    assert capped and all(s["max_concurrent_sequences"] <= 64 * s["data_parallel_size"] for s in capped)
    held = {(s["num_gpus"], s["tensor_parallel_size"], s["kv_cache_dtype"]): s["max_concurrent_sequences"]
            for s in free}
    for s in capped:  # the KV cache's users where fewer, else 64 a replica
        kv = held.get((s["num_gpus"], s["tensor_parallel_size"], s["kv_cache_dtype"]))
        if kv is not None:
            assert s["max_concurrent_sequences"] == min(kv, 64 * s["data_parallel_size"])
        assert s["headroom_users"] == s["max_concurrent_sequences"] - s["users"]


def test_allocation_quotes_homes_capped_users():
    """QA (stop 46): with ``max_num_seqs=64`` Home showed 64 users for Llama 3.1 8B on an H100 at 2,500 tokens while
    Allocation said "The plan (Home's users) counts 178": it now quotes 64 and says the cap holds it there, and its
    schemes keep counting what memory holds."""
    from tests.test_app import run_page

    link = {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "nvidia-h100-sxm-80gb", "context_len": "2500",
            "batch_size": "32", "max_num_seqs": "64"}
    at = run_page("pages/6_Allocation.py", link)
    assert not at.exception, [e.value for e in at.exception]
    said = [x.value for x in [*at.caption, *at.markdown, *at.info] if "Home's users" in x.value]
    assert said and all("counts 64: max_num_seqs 64 caps the 178" in t for t in said), said
