"""The Engine page's dashed line marks what each engine caps, so a launch that starts never runs its KV cache past it.

QA: under TensorRT-LLM (``/Engine?model=meta-llama/Meta-Llama-3-8B&engine=trtllm``) the dashed "usable 55.93 GiB"
line sat at 56 GiB while the KV segment ran from 17 to 73 GiB; for Qwen3-32B it cut through the 61 GiB of weights.
TensorRT-LLM's ``free_gpu_memory_fraction`` is a fraction of the memory free after loading and profiling
(tensorrt_llm/_torch/pyexecutor/_util.py ``KvCacheCreator._cal_max_memory``), so the line now sits after the terms
allocated before the pool. vLLM releases that capture CUDA graphs after sizing the KV cache draw the graphs after it,
in the headroom. SGLang's line (``mem_fraction_static`` x the free memory at startup, after weights + KV pool) was
right already; its pool holds one padding page beyond ``rest`` (python/sglang/srt/mem_cache/memory_pool.py: size +
page_size), so its KV may end within one block past the line.
"""

from __future__ import annotations

import re

import pytest

from model_catalog import get_gpu, model_spec
from planner.engines import plan_engine
from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.rank_bar import rank_bar
from planner.engines.types import EngineRequest
from tests.test_app import run_page

GPU = "nvidia-h100-sxm-80gb"
CASES = [("meta-llama/Meta-Llama-3-8B", 8192), ("Qwen/Qwen3-32B", 32768)]


def _plan(model_id: str, engine: str, context: int):
    gpu = get_gpu(GPU)
    return plan_engine(model_spec(model_id), gpu.framework_memory_bytes,
                       EngineRequest(engine=engine, gpu_name=gpu.id, max_model_len=context))


def _ends(segments) -> dict[str, int]:
    """Where each segment ends, from the bar's left [bytes]."""
    ends, at = {}, 0
    for name, size in segments:
        at += size
        ends[name] = at
    return ends


@pytest.mark.parametrize("engine", list(ENGINE_PROFILES))
@pytest.mark.parametrize("model_id,context", CASES)
def test_a_starting_launch_keeps_its_kv_inside_the_line(model_id, context, engine):
    plan = _plan(model_id, engine, context)
    if not plan.starts:
        pytest.skip(f"{engine} refuses {model_id} at {context}")
    rank = plan.limiting_rank
    bar = rank_bar(plan, rank, plan.gpu_memory_bytes)
    if bar.line_bytes is None:  # llama.cpp, transformers: no cap
        assert ENGINE_PROFILES[engine].default_memory_fraction is None
        return
    slack = rank.bytes_per_block if plan.family == "sglang" else 0  # SGLang's padding page (module docstring)
    assert bar.line_bytes + slack >= _ends(bar.segments)["KV cache"]
    assert bar.line_bytes > _ends(bar.segments)["Weights"]


@pytest.mark.parametrize("engine", ["trtllm", "trtllm-engine"])
def test_trtllm_line_is_what_comes_before_the_pool_plus_its_fraction_of_the_free(engine):
    plan = _plan("Qwen/Qwen3-32B", engine, 32768)
    rank = plan.limiting_rank
    bar = rank_bar(plan, rank, plan.gpu_memory_bytes)
    before = sum(size for name, size in bar.segments[:[n for n, _ in bar.segments].index("KV cache")])
    assert bar.line_kind == "free" and bar.line_bytes == before + rank.requested_bytes
    assert bar.line_bytes <= plan.gpu_memory_bytes
    assert rank.requested_bytes == int(rank.memory_base_bytes * bar.fraction)


def test_vllm_graphs_captured_after_the_kv_cache_follow_it():
    plan = _plan("meta-llama/Meta-Llama-3-8B", "vllm-v0.28", 8192)
    rank = plan.limiting_rank
    assert not rank.cudagraph_charged and rank.cudagraph_bytes
    names = [n for n, _ in rank_bar(plan, rank, plan.gpu_memory_bytes).segments]
    assert names.index("CUDA graphs") > names.index("KV cache")
    charged = _plan("meta-llama/Meta-Llama-3-8B", "vllm", 8192)
    names = [n for n, _ in rank_bar(charged, charged.limiting_rank, charged.gpu_memory_bytes).segments]
    assert names.index("CUDA graphs") < names.index("KV cache")


@pytest.mark.parametrize("model_id", ["meta-llama/Meta-Llama-3-8B", "Qwen/Qwen3-32B"])
def test_engine_page_draws_the_trtllm_line_after_the_kv_segment(model_id):
    at = run_page("pages/5_Engine.py", {"model": model_id, "gpu": GPU, "engine": "trtllm"})
    assert not at.exception, [e.value for e in at.exception]
    bodies = [h.proto.body for h in at.get("html") if 'data-line="usable"' in h.proto.body]
    assert bodies
    body = bodies[0]
    segments = [(n, int(b)) for n, b in re.findall(r'data-segment="([^"]+)" data-bytes="(\d+)"', body)]
    scale = sum(b for _, b in segments)  # the bar's width: the terms and what the card leaves unallocated
    line_pct = float(re.search(r'data-line="usable" style="[^"]*left:([\d.]+)%', body).group(1))
    ends = _ends(segments)
    assert line_pct / 100 * scale >= ends["KV cache"] - scale * 1e-5  # the % is printed to 3 decimals
    assert re.search(r'data-label="usable"[^>]*>KV cap ', body)
    assert any("The dashed line is the KV cap" in c.value for c in at.caption)


def test_trtllm_table_row_and_bar_line_do_not_share_a_name_for_two_figures():
    """The Engine page under TensorRT-LLM showed a table row "KV cap (free_gpu_memory_fraction)" of 55.93 GiB beside
    a dashed bar line "KV cap 72.98 GiB" (Llama 3 8B, one H100): two figures, one name. The row is the KV pool the
    fraction allows; the line is where that pool ends."""
    from planner.engines.rank_bar import allocated_row_name
    from planner.engines import plan_engine
    from planner.engines.types import EngineRequest
    from model_catalog import get_gpu, model_spec

    gpu = get_gpu("nvidia-h100-sxm-80gb")
    plan = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), gpu.framework_memory_bytes,
                       EngineRequest(engine="trtllm", max_model_len=8192, gpu_name=gpu.id))
    assert allocated_row_name(plan).startswith("KV pool ("), allocated_row_name(plan)
