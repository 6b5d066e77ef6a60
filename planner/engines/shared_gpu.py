"""A GPU another process already uses: what each engine's memory fraction then applies to.

Design notes (assumptions):
    1. vLLM takes ``total x gpu_memory_utilization`` whatever else runs on the card, and refuses to
       start when less than that is free at startup (``Worker.init_device``: "Free memory on device ...
       on startup is less than desired GPU memory utilization ..."). Free memory there is the total
       minus what the other processes hold minus the worker's own CUDA context
       (:data:`planner.engines.common.CUDA_CONTEXT_BYTES`); the budget itself does not change.
       Worked example: an H100 (79.19 GiB) with 8 GiB in use elsewhere at the default 0.9:
       71.27 GiB wanted, 79.19 - 8 - 0.61 = 70.58 GiB free: refused; at 0.85 (67.31 GiB) it starts.
    2. SGLang sizes from the memory free before loading (``mem_fraction_static`` of it), so memory in
       use elsewhere shrinks its pool by that share (:func:`planner.engines.sglang.plan_sglang`).

Sources: vllm/v1/worker/gpu_worker.py (``init_device``, ``requested_memory``); vllm/utils/mem_utils.py
(``MemorySnapshot``); python/sglang/srt/model_executor/model_runner.py (``profile_max_num_token``:
``get_available_gpu_memory`` before and after the weights).
"""

from __future__ import annotations

from planner.units import GiB, MiB


def vllm_free_at_startup(gpu_memory_bytes: int, memory_in_use_bytes: int) -> int:
    """Free device memory when a vLLM worker takes its startup snapshot [bytes] (design note 1)."""
    from planner.engines.common import CUDA_CONTEXT_BYTES  # noqa: PLC0415 - common imports the vLLM chain

    return gpu_memory_bytes - memory_in_use_bytes - CUDA_CONTEXT_BYTES


def shared_gpu_refusal(gpu_memory_bytes: int, memory_in_use_bytes: int, util: float, requested_bytes: int) -> str:
    """vLLM's refusal when other processes leave less free than ``total x util`` (design note 1), else ""
    (always "" when nothing else is in use)."""
    if memory_in_use_bytes <= 0:
        return ""
    free = vllm_free_at_startup(gpu_memory_bytes, memory_in_use_bytes)
    if free >= requested_bytes:
        return ""
    in_use = memory_in_use_bytes / GiB
    return (f"Free memory on device ({free / GiB:.2f}/{gpu_memory_bytes / GiB:.2f} GiB) on startup is less than "
            f"desired GPU memory utilization ({util:g}, {requested_bytes / GiB:.2f} GiB); {in_use:.2f} GiB are in "
            f"use by other processes. Decrease gpu_memory_utilization to at most {free / gpu_memory_bytes:.2f} "
            "or free the GPU")


def reported_memory_bytes(gpu) -> int | None:
    """``nvidia-smi``'s ``memory.total`` of a catalog GPU [bytes], the capacity SGLang reads
    (``get_nvgpu_memory_capacity``, python/sglang/srt/utils.py), for
    :attr:`EngineRequest.gpu_memory_reported_bytes`.

    Args:
        gpu: Any object with ``memory_reported_mib`` [MiB] (a catalog GPU); a custom GPU has none.

    Returns:
        The reported memory [bytes], or None when the GPU reports none (the engine then uses the memory CUDA
        reports).
    """
    mib = getattr(gpu, "memory_reported_mib", None)
    return mib * MiB if mib else None
