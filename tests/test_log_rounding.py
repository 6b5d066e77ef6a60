"""The log check's slack follows each engine's print precision; SGLang and llama.cpp weights get a row.

Case S01 (tests/data/reference/engine_cases.csv): SGLang prints K and V separately, each to two decimals of
GiB (python/sglang/srt/mem_cache/memory_pool.py, ``MHATokenToKVPool``), so K + V is uncertain by twice a
half step; the planner's tokens at the printed memory are within that of the printed #tokens.
"""

from __future__ import annotations

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.engines.logparse import parse_engine_log
from planner.engines.reconcile import log_consistency, print_rounding_bytes, reconcile, request_from_log
from planner.units import GiB, MiB
from tests.factories import dense_model

S01_LINE = "[2025-07-21 10:00:01 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB"
H100 = "nvidia-h100-sxm-80gb"


def _s01(line: str = S01_LINE):
    model, gpu = model_spec("Qwen/Qwen3-235B-A22B-FP8"), get_gpu(H100)
    request = EngineRequest(engine="sglang", tensor_parallel_size=4, max_model_len=40960,
                            gpu_memory_utilization=0.93, gpu_name=gpu.name)
    figures = parse_engine_log(line)
    return plan_engine(model, gpu.framework_memory_bytes, request_from_log(request, figures)), figures


def test_sglang_k_plus_v_rounding_is_two_half_steps_and_s01_agrees_with_itself():
    pinned, figures = _s01()
    assert print_rounding_bytes(figures) == 2 * (GiB // 100) // 2
    assert log_consistency(pinned, figures) is None


def test_a_real_disagreement_is_still_flagged_for_sglang():
    pinned, figures = _s01(S01_LINE.replace("367404", "300000"))
    row = log_consistency(pinned, figures)
    assert row is not None and row.actual == 300000


def test_one_printed_figure_keeps_one_half_step():
    vllm = parse_engine_log("INFO [gpu_worker.py:276] Available KV cache memory: 5.01 GiB")
    mla = parse_engine_log("[TP0] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB")
    assert print_rounding_bytes(vllm) == print_rounding_bytes(mla) == (GiB // 100) // 2
    two_caches = parse_engine_log("llama_kv_cache: size =    3.00 MiB (   256 cells,   3 layers,  4/4 seqs)\n"
                                  "llama_kv_cache: size =   15.00 MiB (   256 cells,  15 layers,  4/4 seqs)\n")
    assert print_rounding_bytes(two_caches) == 2 * (MiB // 100 // 2)


def test_sglang_weights_get_a_row_like_vllms():
    log = ("[TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=19.40 GB, "
           "mem usage=55.52 GB.\n" + S01_LINE)
    figures = parse_engine_log(log)
    plan = plan_engine(dense_model(), 80 * GiB, EngineRequest(engine="sglang", max_model_len=2048))
    row = next(r for r in reconcile(plan, figures) if "weights" in r.quantity)
    assert (row.unit, row.actual) == ("GiB", 55.52) and "mem usage=55.52 GB" in row.line
    assert row.estimate == plan.limiting_rank.weights_bytes / GiB


def test_llamacpp_gpu_model_buffer_gets_a_row_and_the_cpu_one_does_not():
    log = ("load_tensors:   CPU_Mapped model buffer size =   308.23 MiB\n"
           "load_tensors:        CUDA0 model buffer size =  4403.49 MiB\n"
           "llama_kv_cache: size =   32.00 MiB (  2048 cells,   4 layers,  1/1 seqs)\n")
    figures = parse_engine_log(log)
    plan = plan_engine(dense_model(), 24 * GiB, EngineRequest(engine="llama.cpp", max_model_len=2048))
    row = next(r for r in reconcile(plan, figures) if "weights" in r.quantity)
    assert (row.unit, row.actual) == ("MiB", 4403.49) and "CUDA0" in row.line
    assert row.estimate == plan.ranks[0].weights_bytes / MiB


S01_LINK = {"model": "Qwen/Qwen3-235B-A22B-FP8", "gpu": H100, "num_gpus": "4", "context_len": "40960",
            "engine": "sglang", "gpu_memory_utilization": "0.93"}


def _engine_page_warnings(log: str) -> list[str]:
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages/5_Engine.py"), default_timeout=120)
    for key, value in S01_LINK.items():
        at.query_params[key] = value
    at.run()
    at.text_area(key="engine_log").input(log).run()
    assert not at.exception, [e.value for e in at.exception]
    return [w.value for w in at.warning]


def test_engine_page_reads_the_s01_line_as_consistent():
    assert not any("disagrees with itself" in w for w in _engine_page_warnings(S01_LINE))


def test_a_small_real_gap_is_stated_in_tokens_and_never_as_minus_zero_percent():
    """One printed figure (an MLA-style "KV size") at the same 16.46 GiB leaves half the slack: S01's gap of
    -181 tokens (-0.05%) is then outside it, and the note must not round it to "-0.0%"."""
    mla = S01_LINE.replace("K size: 8.23 GB, V size: 8.23 GB", "KV size: 16.46 GB")
    pinned, figures = _s01(mla)
    row = log_consistency(pinned, figures)
    assert row is not None
    note = next(w for w in _engine_page_warnings(mla) if "disagrees with itself" in w)
    assert f"{round(row.difference):+,} tokens" in note
    assert "-0.0%" not in note and "+0.0%" not in note


def test_signed_percent_shows_enough_decimals():
    from ui.format import format_signed_percent

    assert format_signed_percent(-0.000493) == "-0.05%"
    assert format_signed_percent(-0.049) == "-4.9%"
    assert format_signed_percent(0.0) == "+0.0%"


def test_an_mla_kv_size_line_is_not_read_as_a_v_size():
    """SGLang's MLA pool prints one "KV size: X GB"; its "V size:" tail is not the MHA pool's V figure."""
    figures = parse_engine_log("[TP0] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB")
    assert figures.get("sglang_v_gib") is None and figures.value("sglang_kv_gib") == 17.16
    assert "V size" not in figures.message.replace("KV size", "")
