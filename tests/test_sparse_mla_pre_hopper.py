"""Sparse MLA (DeepSeek-V3.2, GLM-5.x) on pre-Hopper NVIDIA GPUs: vLLM has no attention backend for it (QA).

``find --model deepseek-ai/DeepSeek-V3.2 --users 64 --prompt-len 2000 --output-len 500 --gpu-types
nvidia-a100-sxm-80gb --max-gpus 32`` listed 16 x A100 DP+EP with ``fp8_ds_mla``, and ``plan ... --gpu
nvidia-a100-sxm-80gb -dp 16 --enable-expert-parallel`` planned it with no note. vLLM's CUDA sparse-MLA backends
need compute capability 9.0 or 10.x (FlashMLASparseBackend: majors 9 and 10; FlashAttnMLASparseBackend: 9;
FlashInfer's sparse MLA: SM100 / SM120), and the indexer's DeepGEMM logits kernels SM90: on an A100 (8.0) or an
L40S (8.9) the selector finds no valid backend and the worker stops before loading weights
(planner/engines/vllm_kv_formats.py design note 6).
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu, model_spec
from model_catalog.gpus import load_gpus
from planner.engines import plan_engine
from planner.engines.loaded import nvidia_capability
from planner.engines.types import EngineRequest
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_app import run_page

V32 = model_spec("deepseek-ai/DeepSeek-V3.2")
A100, L40S, H100 = (get_gpu(g) for g in ("nvidia-a100-sxm-80gb", "nvidia-l40s", "nvidia-h100-sxm-80gb"))
PROFILES = ("vllm", "vllm-v0.28", "vllm-v0.11")


def _capability_text(gpu) -> str:
    major, minor = nvidia_capability(gpu.name)
    return f"compute capability {major}.{minor}"


def _request(profile: str, gpu, **kw) -> EngineRequest:
    return EngineRequest(engine=profile, tensor_parallel_size=8, max_model_len=8192, gpu_name=gpu.name, **kw)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("gpu", [A100, L40S], ids=["A100", "L40S"])
def test_sparse_mla_on_pre_hopper_does_not_start(profile, gpu):
    refused = plan_engine(V32, gpu.framework_memory_bytes, _request(profile, gpu))
    assert not refused.starts
    assert any(_capability_text(gpu) in r for r in refused.reasons), refused.reasons
    assert refused.engine_kv_cache_tokens == 0  # stopped before loading weights
    hopper = plan_engine(V32, H100.framework_memory_bytes, _request(profile, H100))
    assert not any("compute capability" in r for r in hopper.reasons)


def test_cli_plan_dp_ep_on_a100_says_it_does_not_start():
    from tests.test_cli import run_cli

    out = run_cli("plan", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", A100.id, "-dp", "16",
                  "--enable-expert-parallel").stdout
    starts = next(line for line in out.splitlines() if line.startswith("starts"))
    assert starts.split()[1] == "no", out
    assert _capability_text(A100) in out


def test_find_offers_no_a100_setup_and_says_why():
    gpus = [g for g in load_gpus().values() if g.id == A100.id]
    found = find_setups(V32, gpus, FindRequest(users=64, prompt_len=2000, output_len=500, max_gpus=32, top=50,
                                               engine="vllm"))
    assert not found.fits and not any(s.fits for s in found.options)
    shown = (*found.options, found.closest)
    assert all(any(_capability_text(A100) in r for r in s.reasons) for s in shown if s is not None)
    assert found.closest is not None


def test_home_budget_carries_the_refusal_on_a100():
    """The QA launch, -dp 16 with expert parallel: the budget fits, the engine refuses (as on AMD)."""
    at = run_page("app.py", {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": A100.id, "data_parallel_size": "16",
                              "enable_expert_parallel": "true"})
    said = " ".join(str(w.value) for w in (*at.warning, *at.error))
    assert _capability_text(A100) in said, said
