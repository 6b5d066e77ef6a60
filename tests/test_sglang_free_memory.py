"""SGLang sizes its pool from free device memory (planner/engines/sglang.py module docstring).

Sources: python/sglang/srt/utils.py ``get_available_gpu_memory`` (``torch.cuda.empty_cache()`` then
``mem_get_info``'s free bytes), ``get_nvgpu_memory_capacity`` (nvidia-smi ``memory.total``, read by every release
through ``get_device_memory_capacity``); model_runner.py (``init_memory_pool`` before ``init_cublas``);
c10/cuda/CUDACachingAllocator.cpp (20 MiB ``kLargeBuffer`` segments for requests of 1-10 MiB, 2 MiB rounding from
10 MiB on). Figures: reference case N22 ('mem usage=1.25 GB', Qwen3-0.6B, RTX 5080: nvidia-smi 16,303 MiB).
"""

from __future__ import annotations

import json

from model_catalog import model_spec
from planner.engines.allocator import reserved_bytes
from planner.engines.types import EngineRequest
from planner.engines.weight_tensors import vllm_weight_tensors
from planner.model.dtypes import weight_dtype
from planner.units import GiB, MiB


def test_reserved_segments_by_hand():
    # Qwen3-0.6B's layer: qkv 8 MiB opens a 20 MiB segment, o_proj 4 MiB and down 6 MiB share it (2 MiB left),
    # gate_up 12 MiB gets its own 12 MiB segment: 32 MiB per layer for 30 MiB of tensors
    layer = [8 * MiB, 4 * MiB, 12 * MiB, 6 * MiB]
    assert reserved_bytes(layer) == 32 * MiB
    assert reserved_bytes(layer * 2) == 64 * MiB
    assert reserved_bytes([100]) == 2 * MiB  # a small-pool segment


def test_sglang_weights_are_the_reserved_segments():
    from planner.engines.common import resolve_knobs
    from planner.engines.sglang import sglang_weight_bytes

    model = model_spec("Qwen/Qwen3-0.6B")
    request = EngineRequest(engine="sglang-v0.4", max_model_len=40960)
    tensors, _ = vllm_weight_tensors(model, weight_dtype("auto"), 1)
    weights = sglang_weight_bytes(model, request, resolve_knobs(model, request), 0)
    assert weights == reserved_bytes(tensors)
    assert weights - sum(tensors) >= 28 * 2 * MiB  # 2 MiB left in a 20 MiB segment per layer
    assert 1.17 * GiB < weights < 1.25 * GiB  # the log's "mem usage=1.25 GB" (GiB)


def _engine_plan(capsys, *argv: str) -> dict:
    from planner.cli import main

    assert main(["plan", "--format", "json", *argv]) == 0
    return json.loads(capsys.readouterr().out)["engine_plan"]


def test_current_sglang_default_fraction_reads_nvidia_smi(capsys):
    # _handle_gpu_memory_settings on nvidia-smi's 16,303 MiB: chunk 2,048, graph bs 8; reserved 512 + 3,072 + 16
    # + 128 = 3,728 MiB; round((16,303 - 3,728) / 16,303, 3) = 0.771 (the 15,791 MiB CUDA shows gave 0.764)
    plan = _engine_plan(capsys, "--engine", "sglang", "--model", "Qwen/Qwen3-0.6B", "--gpu", "nvidia-rtx-5080",
                        "--context-len", "40960")
    assert plan["gpu_memory_utilization"] == 0.771


def test_free_before_load_loses_the_context_not_the_cublas_workspace(capsys):
    from planner.engines.common import CUDA_CONTEXT_BYTES

    plan = _engine_plan(capsys, "--engine", "sglang-v0.4", "--model", "Qwen/Qwen3-0.6B", "--gpu", "nvidia-rtx-5080",
                        "--context-len", "40960")
    rank = plan["ranks"][0]
    assert rank["non_torch_bytes"] == CUDA_CONTEXT_BYTES  # one GPU: no process group, cuBLAS comes later
    assert rank["memory_base_bytes"] == plan["gpu_memory_bytes"] - CUDA_CONTEXT_BYTES
