"""Memory curves and GQA savings plan a link's batch over its ``data_parallel_size`` replicas, as Home and the CLI do.

QA: ``/Memory_curves?model=meta-llama/Meta-Llama-3.1-8B&gpu=nvidia-h100-sxm-80gb&num_gpus=1&data_parallel_size=4&
context_len=32768&batch_size=200`` said "At batch 200: 2,208 tokens" where Home said 8,832 (50 per replica, each
replica its own KV cache: :mod:`planner.scale.replicas`), and nothing said the replicas were left out. The expected
figures are :func:`planner.plan`'s at ``ceil(batch / replicas)``, computed here.
"""

from __future__ import annotations

import math

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from tests.test_app import run_page

LLAMA, H100, BATCH, REPLICAS = "meta-llama/Meta-Llama-3.1-8B", "nvidia-h100-sxm-80gb", 200, 4
LINK = {"num_gpus": "1", "data_parallel_size": str(REPLICAS), "context_len": "32768", "batch_size": str(BATCH)}


def _max_context(batch: int) -> int:
    gpu = get_gpu(H100)
    return plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=32768, batch_size=batch),
                gpu_id=gpu.id).max_context_len


def _text(at) -> str:
    return " ".join(str(e.value) for kind in ("markdown", "caption", "info") for e in at.get(kind))


def test_memory_curves_plans_each_replicas_share():
    share = math.ceil(BATCH / REPLICAS)
    assert _max_context(share) != _max_context(BATCH)  # the premise: the share reaches further
    at = run_page("pages/1_Memory_curves.py", {**LINK, "models": LLAMA, "gpus": H100,
                                               "memory_curves_section": "Longest context that fits"})
    assert not at.exception and not at.error
    cells = " ".join(str(v) for t in at.table for v in t.value.to_numpy().ravel())
    assert f"{_max_context(share):,}" in cells and f"{_max_context(BATCH):,}" not in cells
    said = _text(at)
    assert f"ceil({BATCH:,} / {REPLICAS})" in said and f"{share:,} per replica" in said


def test_gqa_savings_plans_each_replicas_share():
    share = math.ceil(BATCH / REPLICAS)
    at = run_page("pages/2_GQA_savings.py", {**LINK, "model": LLAMA, "gpu": H100})
    assert not at.exception and not at.error
    said = _text(at)
    assert f"ceil({BATCH:,} / {REPLICAS})" in said and f"{share:,} per replica" in said
