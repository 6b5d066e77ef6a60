"""The log check reads the two ways vLLM reports a launch whose KV cache cannot hold what it must.

1. A negative available memory. V1's worker logs ``requested_memory - non_kv_cache_memory`` as "Available KV
   cache memory: %.2f GiB" (vllm/v1/worker/gpu_worker.py ``determine_available_memory``), negative when the
   weights and the profile's peak exceed ``gpu_memory_utilization`` x total; ``get_kv_cache_configs`` then stops
   in ``_check_enough_kv_cache_memory`` (vllm/v1/core/kv_cache_utils.py) with "No available memory for the cache
   blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", before the "GPU KV cache size"
   and "Maximum concurrency" lines. V0 prints the same difference as "kv_cache_size=%.2fGiB" in its "Memory
   profiling results" (v0.6) or "the rest of the memory reserved for KV Cache is %.2fGiB." (v0.7-v0.10), both in
   vllm/worker/worker.py ``determine_num_available_blocks``, clamps the blocks to 0 and raises the same sentence
   from ``raise_if_cache_size_invalid``.
2. V0's length refusal, "The model's max seq len (%d) is larger than the maximum number of tokens that can be
   stored in KV cache (%d). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when
   initializing the engine." (vllm/worker/worker.py ``raise_if_cache_size_invalid``: ``max_model_len`` against
   ``block_size x num_gpu_blocks``), after the executor's "# GPU blocks: %d, # CPU blocks: %d" and "Maximum
   concurrency for %s tokens per request: %.2fx" lines (vllm/executor/gpu_executor.py ``initialize_cache``, v0.6).

The figures: V1_REFUSED is the V07 row of tests/data/reference/engine_cases.csv (Qwen2-7B geometry on an A100
80GB, vLLM 0.10.1.1: weights 14.2488 GiB, 0.55 GiB activation + non-torch) launched at gpu_memory_utilization
0.15: 0.15 x 79.25 - 14.2488 - 0.55 = -2.91 GiB. V0_REFUSED is the same model under vLLM 0.6.4 at 0.25:
0.25 x 79.25 - 18.50 GiB peak torch - 0.60 GiB non-torch = 0.7125 GiB, 833 blocks of 16 x 57,344 B = 13,328
tokens, short of max_model_len 32,768 (concurrency 13,328 / 32,768 = 0.41x).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines.logparse import parse_engine_log
from planner.engines.reconcile import measured_available_bytes, reconcile, request_from_log
from planner.units import GiB

PAGE = "pages/5_Engine.py"
A100 = "nvidia-a100-sxm-80gb"

NO_MEMORY = ("No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing "
             "the engine.")
V1_AVAILABLE = "(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: -2.91 GiB"
V1_REFUSED = "\n".join((
    "(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1",
    "(APIServer pid=1671) INFO 09-04 01:02:38 [scheduler.py:222] Chunked prefill is enabled with "
    "max_num_batched_tokens=2048.",
    "(EngineCore_0 pid=1812) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and "
    "4.42 seconds",
    V1_AVAILABLE,
    f"(EngineCore_0 pid=1812) ERROR 09-04 01:04:29 [core.py:700] ValueError: {NO_MEMORY}"))
V1_PARAMS = {"engine": "vllm-v0.10", "model": "Qwen/Qwen2.5-7B", "gpu": A100, "gpu_memory_utilization": "0.15",
             "max_model_len": "16384"}

V0_LENGTH = ("ValueError: The model's max seq len (32768) is larger than the maximum number of tokens that can be "
             "stored in KV cache (13328). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
             "initializing the engine.")
V0_REFUSED = "\n".join((
    "INFO 12-02 10:00:01 llm_engine.py:249] Initializing an LLM engine (v0.6.4.post1) with config: "
    "model='Qwen/Qwen2.5-7B', max_seq_len=32768, tensor_parallel_size=1",
    "INFO 12-02 10:00:31 model_runner.py:1077] Loading model weights took 14.2487 GB",
    "INFO 12-02 10:00:35 worker.py:232] Memory profiling results: duration=3.10 seconds, total_gpu_memory=79.25GiB, "
    "initial_memory_usage=14.73GiB, peak_torch_memory=18.50GiB, memory_usage_post_profile=14.86GiB, "
    "non_torch_memory=0.60GiB, kv_cache_size=0.71GiB, gpu_memory_utilization=0.25.",
    "INFO 12-02 10:00:35 gpu_executor.py:113] # GPU blocks: 833, # CPU blocks: 4681",
    "INFO 12-02 10:00:35 gpu_executor.py:117] Maximum concurrency for 32768 tokens per request: 0.41x",
    V0_LENGTH))
V0_PARAMS = {"engine": "vllm-v0", "model": "Qwen/Qwen2.5-7B", "gpu": A100, "gpu_memory_utilization": "0.25",
             "max_model_len": "32768"}


def _model_and_gpu():
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu

    gpu = get_gpu(A100)
    return model_spec("Qwen/Qwen2.5-7B"), gpu


def _estimate(params: dict):
    """The overhead model's plan at the page's settings (what the log check compares with)."""
    model, gpu = _model_and_gpu()
    request = EngineRequest(engine=params["engine"], gpu_name=gpu.name,
                            gpu_memory_utilization=float(params["gpu_memory_utilization"]),
                            max_model_len=int(params["max_model_len"]), max_num_batched_tokens=2048
                            if params["engine"] == "vllm-v0.10" else None)
    return model, gpu, request, plan_engine(model, gpu.framework_memory_bytes, request)


# --- the parser ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("line", [
    V1_AVAILABLE,
    "INFO 11-03 15:51:26 [worker.py:294] model weights take 14.25GiB; non_torch_memory takes 0.60GiB; PyTorch "
    "activation peak memory takes 3.25GiB; the rest of the memory reserved for KV Cache is -2.91GiB.",
    "INFO 12-02 10:00:35 worker.py:232] Memory profiling results: duration=3.10 seconds, total_gpu_memory=79.25GiB, "
    "initial_memory_usage=14.73GiB, peak_torch_memory=17.50GiB, memory_usage_post_profile=14.86GiB, "
    "non_torch_memory=0.60GiB, kv_cache_size=-2.91GiB, gpu_memory_utilization=0.15.",
])
def test_a_negative_available_memory_is_read_as_printed(line):
    figures = parse_engine_log(line)
    assert figures.engine == "vllm"
    assert figures.value("available_kv_gib") == -2.91
    assert measured_available_bytes(figures) == round(-2.91 * GiB)


def test_a_launch_refused_for_no_memory_is_not_told_its_token_lines_are_missing():
    """V1 raises before ``_report_kv_cache_config``: no "GPU KV cache size" nor "Maximum concurrency" line."""
    figures = parse_engine_log(V1_REFUSED)
    assert figures.complete and "Not found" not in figures.message, figures.message


def test_the_v0_length_refusal_gives_the_length_and_the_tokens_the_cache_holds():
    figures = parse_engine_log(V0_LENGTH)
    assert figures.engine == "vllm"
    assert figures.value("max_model_len") == 32768
    assert figures.value("refusal_kv_tokens") == 13328
    assert "GPU KV cache size" not in parse_engine_log(V0_REFUSED).message


# --- the comparison and the re-plan ------------------------------------------------------------------------------

def test_the_comparison_shows_the_printed_negative_memory_and_the_replan_refuses():
    pytest.importorskip("model_catalog")
    model, gpu, request, estimate = _estimate(V1_PARAMS)
    figures = parse_engine_log(V1_REFUSED)
    row = next(r for r in reconcile(estimate, figures) if r.quantity == "Available KV cache memory")
    assert row.actual == -2.91
    assert row.difference == pytest.approx(estimate.available_kv_cache_bytes / GiB + 2.91)
    assert row.relative_error * row.difference > 0  # the sign of the difference, against a negative figure too
    pinned = plan_engine(model, gpu.framework_memory_bytes, request_from_log(request, figures))
    assert not pinned.starts and pinned.num_gpu_blocks == 0 and pinned.engine_kv_cache_tokens == 0
    assert pinned.reasons[0].startswith("No available memory for the cache blocks"), pinned.reasons


def test_every_workers_negative_line_replans_without_an_error():
    """Tensor parallel 2: one negative line per worker; the re-plan refuses instead of raising."""
    pytest.importorskip("model_catalog")
    model, gpu, request, _ = _estimate(V1_PARAMS)
    request = replace(request, tensor_parallel_size=2)
    log = "\n".join((V1_AVAILABLE, V1_AVAILABLE.replace("-2.91", "-2.88").replace("1812", "1813")))
    pinned = plan_engine(model, gpu.framework_memory_bytes, request_from_log(request, parse_engine_log(log)))
    assert not pinned.starts and pinned.engine_kv_cache_tokens == 0


def test_the_comparison_sets_the_planned_tokens_against_the_v0_refusals():
    pytest.importorskip("model_catalog")
    _, _, _, estimate = _estimate(V0_PARAMS)
    row = next(r for r in reconcile(estimate, parse_engine_log(V0_REFUSED)) if r.actual == 13328)
    assert row.unit == "tokens" and row.estimate == estimate.engine_kv_cache_tokens


# --- the Engine page ---------------------------------------------------------------------------------------------

def _page(params: dict, log: str):
    from tests.test_app import run_page

    at = run_page(PAGE, params)
    at.text_area(key="engine_log").input(log).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _tables(at) -> tuple[list[dict], dict]:
    """The line-by-line rows, and the re-plan rows by plan label."""
    rows = next(t.value for t in at.table if "Log line" in t.value.columns).to_dict("records")
    replan = next(d.value for d in at.dataframe if "Largest max_model_len" in d.value.columns)
    return rows, {row["Plan"]: row for row in replan.to_dict("records")}


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_the_page_compares_the_negative_memory_and_says_the_engine_refused():
    pytest.importorskip("model_catalog")
    at = _page(V1_PARAMS, V1_REFUSED)
    rows, plans = _tables(at)
    row = next(r for r in rows if r["Quantity"] == "Available KV cache memory")
    assert _number(row["Engine log"]) == -2.91
    assert _number(row["Difference"]) == pytest.approx(_number(row["Estimate"]) + 2.91, abs=1e-4)
    assert "-2.91 GiB" in row["Log line"]
    pinned = plans["Engine's own available memory"]
    assert pinned["Starts"] == "no" and pinned["KV tokens"] == "0"
    warnings = " ".join(w.value for w in at.warning)
    assert "Not found: GPU KV cache size" not in warnings, warnings
    note = next(w.value for w in at.warning if "refused" in w.value)
    assert "-2.91 GiB" in note and "No available memory for the cache blocks" in note, note


def test_the_page_compares_the_v0_refusals_tokens_and_says_the_engine_refused():
    pytest.importorskip("model_catalog")
    at = _page(V0_PARAMS, V0_REFUSED)
    rows, plans = _tables(at)
    row = next(r for r in rows if r["Engine log"] == "13,328")
    assert row["Unit"] == "tokens" and "maximum number of tokens" in row["Log line"]
    assert _number(row["Difference"]) == _number(row["Estimate"]) - 13328
    assert plans["Engine's own available memory"]["Starts"] == "no"
    note = next(w.value for w in at.warning if "refused" in w.value)
    assert "32,768" in note and "13,328" in note, note
