"""Which attention backend vLLM reads an fp8 KV cache with on a GPU without FlashAttention 3: the one rule that
Find, the engine view (Home, the Engine page, ``plan --engine``) and the CLI use for the launch command's
``VLLM_ATTENTION_BACKEND`` and for the note beside it.

vLLM's FlashAttention reads an fp8 KV cache only as FlashAttention 3, which it runs on the Hopper family alone
(``flash_attn_supports_fp8``: version 3 and compute capability major 9, vllm/attention/utils/fa_utils.py; later
``is_device_capability_family(90)``). So an fp8 cache has no FlashAttention on Ampere (8.0, 8.6), Ada (8.9: fp8
tensor cores, still FlashAttention 2), RTX 50 / RTX PRO 6000 and DGX Spark (12.x), and what vLLM does about it
depends on the release:

* V0 engine (profile ``vllm-v0``): the V0 selector never reads fp8 with FlashAttention, on any NVIDIA GPU that
  runs FlashAttention 2 (8.0 and above, Hopper included): it falls back to XFormers by itself and logs "Please
  use FlashInfer backend with FP8 KV Cache for better performance by setting environment variable
  VLLM_ATTENTION_BACKEND=FLASHINFER" (vllm/platforms/cuda.py ``get_attn_backend_cls``, V0 branch, v0.7-v0.10;
  vllm/attention/selector.py before; FlashInfer's fp8 cache: vllm-project/vllm#7798).
* V1 before v0.11 (``vllm-v1-jan2025``, ``vllm-v1-2025``, ``vllm-v0.10``): ``EngineArgs._is_v1_supported_oracle``
  (vllm/engine/arg_utils.py, v0.8-v0.10) accepts ``--kv-cache-dtype fp8`` on V1 only where
  ``CudaPlatform.is_kv_cache_dtype_supported`` (vllm/platforms/cuda.py) says so: compute capability 10.0, or
  FlashAttention 3 (Hopper), and from v0.10.2 the FLASHINFER backend when VLLM_ATTENTION_BACKEND names it
  (vllm-project/vllm#24577). Otherwise vLLM falls back to its V0 engine (XFormers, or FlashInfer with the
  variable); v0.7.0-v0.7.2 ran V0 unless VLLM_USE_V1=1.
* v0.11 and later (``vllm-v0.11``, ``vllm-v0.28``, ``vllm``): the V0 engine is gone and the selector picks an fp8
  capable backend itself: v0.11.0 routes an fp8 cache below SM 9.0 to TRITON_ATTN (vllm/platforms/cuda.py,
  vllm-project/vllm#25396); later releases take the first backend whose ``validate_configuration`` accepts it in
  the order FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLEX_ATTENTION (vllm/platforms/cuda.py
  ``_get_backend_priorities``, ``get_valid_backends``), FLASH_ATTN refusing it below FlashAttention 3
  (``FlashAttentionBackend.supports_kv_cache_dtype``, vllm/v1/attention/backends/flash_attn.py). No variable.
  On datacenter Blackwell (10.x) FlashInfer is the default backend already, so there is nothing to say.

So the launch command of the first two groups sets ``VLLM_ATTENTION_BACKEND=FLASHINFER`` and the newer ones set
nothing; a backend the user chose (``--attention-backend``) is left as it is, with no note.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engines.loaded import nvidia_capability

FP8_KV_DTYPES = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2"})
"""``--kv-cache-dtype`` values that store an fp8 cache (vllm/config/cache.py ``CacheDType``)."""

FP8_FLASH_ATTENTION_MAJOR = 9
"""The compute capability major (Hopper) where vLLM's FlashAttention 3 reads an fp8 cache (fa_utils.py
``flash_attn_supports_fp8``)."""

V1_FP8_CAPABILITY = (10, 0)
"""The other capability ``is_kv_cache_dtype_supported`` accepts an fp8 cache on before v0.11 (vllm/platforms/cuda.py),
where FlashInfer is the default backend."""

FLASH_ATTENTION_2_MIN = (8, 0)
"""Below this the V0 selector picks XFormers for the GPU itself (Volta, Turing), fp8 or not."""

V0_PROFILES = frozenset({"vllm-v0"})
"""Profiles that run vLLM's V0 engine: XFormers by itself, FLASHINFER advised (V0 branch of vllm/platforms/cuda.py)."""

V1_FALLBACK_PROFILES = frozenset({"vllm-v1-jan2025", "vllm-v1-2025", "vllm-v0.10"})
"""V1 profiles before v0.11, whose oracle (vllm/engine/arg_utils.py) sends an fp8 cache there back to V0."""

FP8_BACKEND = "FLASHINFER"
"""The backend that reads an fp8 cache on these GPUs in V0 and, from v0.10.2, in V1 (vllm-project/vllm#7798, #24577)."""


FP8_KV_GAP = "fp8 KV cache: vLLM's FlashAttention does not read it here"
"""How every note of :func:`fp8_kv_backend` begins (:func:`fp8_kv_note_of` finds it among a plan's notes); each note
then says why for its engine: V0 runs FlashAttention 2 on every GPU, V1 reads fp8 with FlashAttention 3 on Hopper
only (QA: "... runs on Hopper only" was said on an H100 under V0)."""

_FA3_ONLY = " (only FlashAttention 3, on Hopper, reads one)"
"""The reason the V1 notes give."""


@dataclass(frozen=True)
class Fp8KvBackend:
    """What vLLM needs to read an fp8 KV cache on this GPU.

    Attributes:
        env_backend: The ``VLLM_ATTENTION_BACKEND`` the launch command sets (``FLASHINFER``), or None where vLLM
            picks an fp8-capable backend itself.
        note: The sentence a page, a Find row and ``plan`` show beside the command.
    """

    env_backend: str | None
    note: str


def fp8_kv_backend(engine: str, gpu_name: str, kv_cache_dtype: str, *,
                   attention_backend: str | None = None) -> Fp8KvBackend | None:
    """The backend rule for an fp8 KV cache under vLLM profile ``engine`` on ``gpu_name`` (a catalog name or id,
    read by :func:`planner.engines.loaded.nvidia_capability`), or None where it does not apply: another engine
    family, a cache that is not fp8, a backend the user chose, a GPU that is not a known NVIDIA part, or a GPU
    whose default backend reads the cache (Hopper from V1 on; compute capability 10.0 before v0.11, datacenter
    Blackwell 10.x from v0.11).

    Examples: ``("vllm-v0.10", "A100 SXM 80GB", "fp8")`` -> ``env_backend="FLASHINFER"``; ``("vllm-v0.10",
    "L40S", "fp8")`` -> ``env_backend="FLASHINFER"`` (Ada: FlashAttention 2); ``("vllm", "A100 SXM 80GB", "fp8")``
    -> ``env_backend=None`` (the note says vLLM picks the backend); ``("vllm", "H100 SXM5 80GB", "fp8")`` -> None;
    ``("vllm-v0", "H100 SXM5 80GB", "fp8")`` -> ``env_backend="FLASHINFER"`` (V0 reads fp8 with FlashAttention
    nowhere).

    Sources: the module docstring (vllm/platforms/cuda.py, vllm/engine/arg_utils.py,
    vllm/attention/utils/fa_utils.py, vllm/v1/attention/backends/flash_attn.py).
    """
    if not engine.startswith("vllm") or attention_backend or kv_cache_dtype not in FP8_KV_DTYPES:
        return None
    capability = nvidia_capability(gpu_name) if gpu_name else None
    if capability is None:
        return None
    gap = FP8_KV_GAP
    if engine in V0_PROFILES:
        if capability < FLASH_ATTENTION_2_MIN:
            return None
        return Fp8KvBackend(FP8_BACKEND, (
            f"{gap} (the V0 engine runs FlashAttention 2, which reads no fp8 cache on any GPU); it falls back to "
            f"XFormers by itself and advises VLLM_ATTENTION_BACKEND={FP8_BACKEND}, which the launch command sets "
            "(vllm/platforms/cuda.py; vllm-project/vllm#7798)"))
    if capability[0] == FP8_FLASH_ATTENTION_MAJOR:
        return None
    if engine in V1_FALLBACK_PROFILES:
        if capability == V1_FP8_CAPABILITY:
            return None
        return Fp8KvBackend(FP8_BACKEND, (
            f"{gap}{_FA3_ONLY}; before v0.11 vLLM's V1 engine refuses it there and falls back to its V0 engine "
            "(vllm/engine/arg_utils.py, _is_v1_supported_oracle). The launch command sets "
            f"VLLM_ATTENTION_BACKEND={FP8_BACKEND}, the backend that reads an fp8 cache there: on V1 from v0.10.2 "
            "(vllm-project/vllm#24577), on the V0 fallback before; the figures are the V1 engine's"))
    if capability[0] == V1_FP8_CAPABILITY[0]:
        return None
    return Fp8KvBackend(None, (
        f"{gap}{_FA3_ONLY}; from v0.11 vLLM picks a backend that does by itself (TRITON_ATTN in v0.11.0, then the first "
        "valid of FLASH_ATTN, FLASHINFER, TRITON_ATTN: FlashInfer where installed; vllm/platforms/cuda.py), so the "
        "launch command sets no VLLM_ATTENTION_BACKEND"))


def fp8_kv_env_backend(engine: str, gpu_name: str, kv_cache_dtype: str,
                       attention_backend: str | None = None) -> str | None:
    """The ``VLLM_ATTENTION_BACKEND`` a launch command sets: the user's ``attention_backend`` when given, else
    :func:`fp8_kv_backend`'s (None: none)."""
    if attention_backend:
        return attention_backend
    rule = fp8_kv_backend(engine, gpu_name, kv_cache_dtype)
    return rule.env_backend if rule else None


def fp8_kv_notes(engine: str, gpu_name: str, kv_cache_dtype: str, attention_backend: str | None = None) -> list[str]:
    """:func:`fp8_kv_backend`'s note as a list (empty where the rule does not apply), for a plan's notes."""
    rule = fp8_kv_backend(engine, gpu_name, kv_cache_dtype, attention_backend=attention_backend)
    return [rule.note] if rule else []


def fp8_kv_note_of(notes) -> str | None:
    """The :func:`fp8_kv_backend` note among a plan's ``notes`` (the Home page and ``plan``'s text show it beside
    the launch command), or None."""
    return next((n for n in notes if n.startswith(FP8_KV_GAP)), None)
