"""The log check reads vLLM's refusal line: its available KV memory, and no profile that cannot load the model.

vLLM V1 refuses a ``max_model_len`` that does not fit with one ``ValueError`` whose text always states the
available memory: "To serve at least one request with the models's max seq len (L), (N GiB KV cache is needed,
which is larger than the available KV cache memory (A GiB). Based on the available memory, the estimated maximum
model length is M. ..." (vllm/v1/core/kv_cache_utils.py ``_check_enough_kv_cache_memory``, called per worker by
``get_kv_cache_configs``; the figures are ``format_gib``'s). A launch that stops there prints no "GPU KV cache
size" nor "Maximum concurrency" line.

The figures are the N11 and N03 rows of tests/data/reference/engine_cases.csv (columns ``available_kv_gib``,
``max_model_len`` and the notes' "KV needed GiB" and "estimated max model len").
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from planner.engines import EngineRequest
from planner.engines.logparse import parse_engine_log
from planner.engines.reconcile import measured_available_bytes, request_from_log
from planner.units import GiB

ROOT = Path(__file__).resolve().parents[1]
CASES_CSV = ROOT / "tests" / "data" / "reference" / "engine_cases.csv"
PAGE = "pages/5_Engine.py"

N11 = {"engine": "vllm-v0.28", "model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-gh200-96gb", "num_gpus": "2",
       "tensor_parallel_size": "2", "max_model_len": "30000", "kv_cache_dtype": "fp8", "block_size": "256",
       "gpu_memory_utilization": "0.95", "usage_context": "llm", "enable_prefix_caching": "true"}
N03 = {"engine": "vllm", "model": "MiniMaxAI/MiniMax-M2.7", "weight_dtype": "int4", "gpu": "nvidia-dgx-spark",
       "num_gpus": "2", "tensor_parallel_size": "2", "num_nodes": "2", "distributed_executor_backend": "ray",
       "max_model_len": "196608", "gpu_memory_utilization": "0.8"}


def _row(tag: str) -> dict:
    with CASES_CSV.open(newline="") as f:
        return next(r for r in csv.DictReader(f) if f"[{tag}]" in r["notes"])


def _printed(tag: str) -> dict:
    """The row's printed figures: available and needed memory [GiB], the length asked and vLLM's estimate."""
    row = _row(tag)
    return {"available": row["available_kv_gib"], "length": int(row["max_model_len"].split()[0]),
            "needed": re.search(r"KV needed GiB ([0-9.]+)", row["notes"]).group(1),
            "estimate": int(re.search(r"estimated max model len ([0-9]+)", row["notes"]).group(1))}


def refusal_line(tag: str) -> str:
    """The row's refusal as vLLM words it (``_check_enough_kv_cache_memory``), with the row's figures."""
    p = _printed(tag)
    return (f"(EngineCore_DP0 pid=2201) ERROR [core.py:708] ValueError: To serve at least one request with the "
            f"models's max seq len ({p['length']}), ({p['needed']} GiB KV cache is needed, which is larger than the "
            f"available KV cache memory ({p['available']} GiB). Based on the available memory, the estimated maximum "
            f"model length is {p['estimate']}. Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
            "when initializing the engine.")


def available_line(tag: str) -> str:
    return ("(EngineCore_DP0 pid=2201) INFO [gpu_worker.py:298] Available KV cache memory: "
            f"{_printed(tag)['available']} GiB")


# --- the parser ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("tag", ["N11", "N03"])
def test_the_refusal_line_gives_the_available_memory_it_states(tag):
    figures = parse_engine_log(refusal_line(tag))
    assert figures.engine == "vllm"
    assert measured_available_bytes(figures) == round(float(_printed(tag)["available"]) * GiB)
    # the same figure as the worker's own line gives
    assert measured_available_bytes(figures) == measured_available_bytes(parse_engine_log(available_line(tag)))
    # with the worker's line beside it (the same worker's figure) a TP 2 log is not read as two workers' lines
    both = parse_engine_log("\n".join((available_line(tag), refusal_line(tag))))
    request = request_from_log(EngineRequest(tensor_parallel_size=2), both)
    assert request.available_kv_memory_bytes == measured_available_bytes(figures)
    assert not request.available_kv_memory_per_rank_bytes


def test_a_refused_launch_is_not_told_its_available_memory_or_its_token_lines_are_missing():
    """A refused launch never prints "GPU KV cache size" or "Maximum concurrency": they are not asked for."""
    message = parse_engine_log(refusal_line("N11")).message
    assert "Available KV cache memory" not in message.split("Not found:")[-1], message
    assert "GPU KV cache size" not in message and "Maximum concurrency" not in message, message


# --- the profile hint ----------------------------------------------------------------------------------------

def _n11_plan_inputs():
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines.shared_gpu import reported_memory_bytes

    gpu = get_gpu("nvidia-gh200-96gb")
    request = EngineRequest(engine="vllm-v0.28", gpu_name=gpu.name,
                            gpu_memory_reported_bytes=reported_memory_bytes(gpu), tensor_parallel_size=2,
                            max_model_len=30000, kv_cache_dtype="fp8", block_size=256, gpu_memory_utilization=0.95,
                            usage_context="llm", enable_prefix_caching=True)
    return model_spec("deepseek-ai/DeepSeek-V4-Flash"), gpu.framework_memory_bytes, request


@pytest.mark.parametrize("version", [None, "0.15.1"])
def test_the_hint_never_names_a_profile_that_cannot_load_the_model(version):
    """DeepSeek-V4 is served from vLLM v0.22 (``planner.engines.vllm_deepseek_v4.PROFILES``): a DeepSeek-V4 log is
    never pointed at an older profile, by its pool (no version line) nor by a version line naming an older build."""
    pytest.importorskip("model_catalog")
    from planner.engines.log_profile import profile_hint
    from planner.engines.vllm_deepseek_v4 import PROFILES

    model, gpu_memory_bytes, request = _n11_plan_inputs()
    head = (f"(APIServer pid=1) INFO [api_server.py:1805] vLLM API server version {version}",) if version else ()
    log = "\n".join((*head, available_line("N11"), refusal_line("N11")))
    hint = profile_hint(parse_engine_log(log), model, gpu_memory_bytes, request)
    assert hint is None or hint.profile in PROFILES, hint


# --- the Engine page ---------------------------------------------------------------------------------------------

def _page(params: dict, log: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=180)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.text_area(key="engine_log").input(log).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _replan(at) -> dict:
    """The re-plan table's rows by plan label."""
    table = next(d.value for d in at.dataframe if "Largest max_model_len" in d.value.columns)
    return {row["Plan"]: row for row in table.to_dict("records")}


@pytest.mark.parametrize(("tag", "params"), [("N11", N11), ("N03", N03)])
def test_the_page_replans_at_the_refusals_own_memory(tag, params):
    """The "Engine's own available memory" row is what the worker's "Available KV cache memory" line gives: the
    printed memory, a refusal, and vLLM's estimated maximum length within print rounding."""
    pytest.importorskip("model_catalog")
    printed = _printed(tag)
    alone = _page(params, refusal_line(tag))
    pinned = _replan(alone)["Engine's own available memory"]
    assert pinned == _replan(_page(params, "\n".join((available_line(tag), refusal_line(tag)))))[
        "Engine's own available memory"]
    assert pinned["Available KV per GPU"] == f"{float(printed['available']):.2f} GiB"
    assert pinned["Starts"] == "no"
    largest = int(pinned["Largest max_model_len"].replace(",", ""))
    assert abs(largest - printed["estimate"]) <= printed["estimate"] * 0.001, (largest, printed["estimate"])
    warnings = " ".join(w.value for w in alone.warning)
    assert "Not found: Available KV cache memory" not in warnings, warnings
