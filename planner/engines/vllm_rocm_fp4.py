"""ModelOpt NVFP4 checkpoints on AMD GPUs under vLLM: which kernel runs them, what loads, what cannot start.

Design notes (assumptions):
    1. vLLM's ROCm platform does not list ``modelopt`` / ``modelopt_fp4`` among its quantizations; it lists
       ``petit_nvfp4`` (vllm/platforms/rocm.py, ``RocmPlatform.supported_quantization``), and on ROCm
       ``PetitNvFp4Config.override_quantization_method`` takes over a checkpoint whose ``quant_algo`` is NVFP4
       (vllm/model_executor/layers/quantization/petit.py). Petit's ``get_quant_method`` gives linear layers its NVFP4
       method and returns None for a fused-MoE layer, which vLLM then builds as an unquantized bf16
       ``UnquantizedFusedMoEMethod`` (vllm/model_executor/layers/fused_moe/layer.py, ``_get_quant_method``): the
       checkpoint's packed uint8 experts and their fp8 block scales match none of those parameters, so an NVFP4 MoE
       checkpoint does not load. A dense one loads its linear layers packed (4 bits a value, one fp8 scale per 16),
       the checkpoint's bytes, and needs the petit-kernel package.
    2. The 2026 trees run NVFP4 on ROCm through emulation instead: vLLM PR 35733 makes the linear emulation
       backend (``NvFp4LinearBackend.EMULATION``, quantization/utils/nvfp4_utils.py) ROCm's default and PR 35737
       and its follow-up PR 40033 add the NVFP4 MoE emulation experts for MI300 / MI350; PR 44667
       fuses the dequantization into the Triton MoE GEMM, reading each packed byte once. The weights stay packed as
       the checkpoint stores them (no Blackwell swizzle: :func:`planner.engines.loaded.nvfp4_swizzles` is False on
       an AMD GPU), so the loaded bytes are the checkpoint's; each GEMM dequantizes to bf16, so a step is slower
       than native FP4 (the roofline does not price that). The profiles of those trees: ``vllm`` (v0.29+) and
       ``vllm-v0.28`` (v0.22-v0.28) (:data:`NVFP4_EMULATION_PROFILES`); ``vllm-v0.11`` (v0.11-v0.20) is priced as
       its first releases, before the emulation (April 2026), so note 1 applies to it and to every older profile.
"""

from __future__ import annotations

from planner.engines.loaded import _group_format
from planner.engines.vllm_kv_formats import sparse_refusal
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.platforms import is_rocm_gpu

NVFP4_EMULATION_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""vLLM profiles that run NVFP4 on ROCm through the emulation kernels (design note 2)."""


def nvfp4_groups(model: ModelSpec, weight_dtype_name: str) -> tuple[bool, bool]:
    """``(any group loads as NVFP4, a routed-expert group does)`` for this weight dtype request (``auto`` reads the
    checkpoint's formats: :func:`planner.engines.loaded._group_format`)."""
    fmt = weight_dtype(weight_dtype_name)
    nvfp4 = [g for g in model.params if _group_format(g, fmt, model.torch_dtype).name == "nvfp4"]
    return bool(nvfp4), any(".experts." in g.name for g in nvfp4)


def rocm_nvfp4_refusal(model: ModelSpec, profile_id: str, weight_dtype_name: str, gpu_name: str | None) -> str:
    """Why vLLM (this profile) cannot load the model's NVFP4 experts on an AMD GPU (design note 1), else ""."""
    if not is_rocm_gpu(gpu_name) or profile_id in NVFP4_EMULATION_PROFILES:
        return ""
    if not nvfp4_groups(model, weight_dtype_name)[1]:
        return ""
    return (f"{profile_id} on ROCm hands an NVFP4 checkpoint to the Petit kernels (petit_nvfp4: "
            "vllm/model_executor/layers/quantization/petit.py), which quantize linear layers only; the routed experts "
            "would be built as bf16 and the packed NVFP4 experts do not load. The 2026 releases (--engine vllm) run "
            "it through their NVFP4 emulation kernels")


def rocm_refusal(model: ModelSpec, profile_id: str, request) -> str:
    """Why the vLLM launch ``request`` (an :class:`planner.engines.types.EngineRequest`) on an AMD GPU stops before
    its KV cache is sized: no sparse-MLA backend for its cache (:func:`planner.engines.vllm_kv_formats.sparse_refusal`)
    or NVFP4 experts it cannot load (:func:`rocm_nvfp4_refusal`); "" otherwise."""
    return (sparse_refusal(model, profile_id, request)
            or rocm_nvfp4_refusal(model, profile_id, request.weight_dtype, request.gpu_name))


def rocm_nvfp4_note(model: ModelSpec, profile_id: str, weight_dtype_name: str, gpu_name: str | None) -> str:
    """The kernel that runs the model's NVFP4 weights on an AMD GPU under this vLLM profile (design notes 1-2), or ""
    (an NVIDIA GPU, no NVFP4 weight, or a launch :func:`rocm_nvfp4_refusal` refuses)."""
    if not is_rocm_gpu(gpu_name):
        return ""
    carried, experts = nvfp4_groups(model, weight_dtype_name)
    if not carried:
        return ""
    if profile_id in NVFP4_EMULATION_PROFILES:
        return ("NVFP4 on ROCm: no native FP4 GEMM on this GPU; vLLM keeps the weights packed (the checkpoint's "
                "bytes) and runs its NVFP4 emulation kernels (NvFp4LinearBackend.EMULATION"
                + (" and the NVFP4 MoE emulation experts" if experts else "")
                + "), dequantizing to bf16 in each GEMM: slower steps than native FP4 or a bf16 checkpoint")
    if experts:
        return ""
    return ("NVFP4 on ROCm: vLLM hands the checkpoint to the Petit kernels (petit_nvfp4, needs the petit-kernel "
            "package), which keep the weights packed: the checkpoint's bytes")
