"""ModelOpt NVFP4 checkpoints on AMD GPUs under vLLM (QA, stop 47).

Find offered nvidia/Qwen3.5-397B-A17B-NVFP4 on 2 x MI300X with a plain ``vllm serve`` and no word on how ROCm runs
NVFP4. vLLM's ROCm platform has no ``modelopt`` quantization: older releases hand such a checkpoint to the Petit
kernels, which quantize linear layers only (an MoE checkpoint's experts do not load); the 2026 releases run it
through their NVFP4 emulation kernels with the weights packed (planner/engines/vllm_rocm_fp4.py). So:

1. under the newest vLLM an AMD row of an NVFP4 model names the emulation kernels; an NVIDIA row does not;
2. under vllm-v0.11 an NVFP4 MoE model is refused on an AMD GPU (the reason names Petit), not on an NVIDIA one;
3. under vllm-v0.11 a dense NVFP4 model still fits on an AMD GPU, with a note naming Petit.
"""

from model_catalog import model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups

QWEN_NVFP4 = "nvidia/Qwen3.5-397B-A17B-NVFP4"
GEMMA_NVFP4 = "nvidia/Gemma-4-31B-IT-NVFP4"  # dense
CASE = dict(users=8, prompt_len=65536 - 500, output_len=500, kv_cache_dtypes=("fp8",), top=50)


def _find(model_id, engine, gpu_ids):
    request = FindRequest(**CASE, engine=engine, gpu_ids=gpu_ids)
    return find_setups(model_spec(model_id), list(load_gpus().values()), request)


def test_the_newest_vllm_names_the_emulation_kernels_on_amd_rows():
    found = _find(QWEN_NVFP4, "vllm", ("amd-mi300x", "nvidia-h200-sxm"))
    amd = [s for s in found.options if s.gpu_id == "amd-mi300x"]
    nvidia = [s for s in found.options if s.gpu_id != "amd-mi300x"]
    assert amd and nvidia
    assert all(any("emulation" in n and "NVFP4" in n for n in s.notes) for s in amd)
    assert not any("emulation" in n for s in nvidia for n in s.notes)


def test_an_older_vllm_cannot_load_nvfp4_experts_on_rocm():
    gpu = get_gpu("amd-mi300x")
    request = EngineRequest(engine="vllm-v0.11", max_model_len=8192, tensor_parallel_size=4, gpu_name=gpu.name)
    refused = plan_engine(model_spec(QWEN_NVFP4), gpu.framework_memory_bytes, request)
    assert not refused.starts and any("Petit" in r for r in refused.reasons)
    h200 = get_gpu("nvidia-h200-sxm")
    assert plan_engine(model_spec(QWEN_NVFP4), h200.framework_memory_bytes,
                       EngineRequest(engine="vllm-v0.11", max_model_len=8192, tensor_parallel_size=4,
                                     gpu_name=h200.name)).starts
    found = _find(QWEN_NVFP4, "vllm-v0.11", ("amd-mi300x",))
    assert not found.options and found.closest is not None
    assert any("Petit" in r for r in found.closest.reasons)


def test_an_older_vllm_serves_a_dense_nvfp4_model_on_rocm_through_petit():
    found = _find(GEMMA_NVFP4, "vllm-v0.11", ("amd-mi300x",))
    assert found.options
    assert all(any("Petit" in n for n in s.notes) for s in found.options)
