"""Which vLLM platform a GPU runs: AMD GPUs run vLLM's ROCm platform (vllm/platforms/rocm.py), every other GPU of
the catalog its CUDA platform (vllm/platforms/cuda.py). The attention backends, and so some KV-cache formats, differ
between the two (:mod:`planner.engines.vllm_kv_formats` design note 5, :mod:`planner.scale.context`); it sits
in :mod:`planner.model` because the stored cache format, a model-level figure, depends on it.

Sources: vllm/platforms/rocm.py (``_ROCM_DEVICE_ID_NAME_MAP``: AMD Instinct MI300A / MI300X / MI308X / MI325X /
MI350X / MI355X, Radeon RX 7900 XTX); the catalog's AMD ids (``amd-mi300x``, ``amd-mi325x`` ...).
"""

from __future__ import annotations

ROCM_TAGS = ("instinct", "amd-", "amd ", "radeon", "mi250", "mi300", "mi325", "mi350", "mi355")
"""Name or catalog-id fragments of AMD GPUs (vLLM's ROCm platform)."""


def is_rocm_gpu(gpu_name: str | None) -> bool:
    """True for an AMD GPU by its display name or catalog id (``Instinct MI300X``, ``amd-mi325x``); False for
    every other GPU and for None / "" (no GPU named: the CUDA platform, what the budget prices by default)."""
    name = (gpu_name or "").lower()
    return any(tag in name for tag in ROCM_TAGS)
