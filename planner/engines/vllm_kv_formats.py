"""vLLM's own KV-cache formats that differ from "the KV dtype times the layer's elements".

Design notes (assumptions):
    1. DeepSeek-V3.2 and the GLM-5.x models with the same sparse attention (an MLA layer with a
       lightning indexer, :class:`planner.model.sparse.IndexedMLAAttention`): in v0.11,
       ``DeepseekV32ForCausalLM.verify_and_update_config`` turned ``--kv-cache-dtype auto`` and every
       ``fp8`` choice into vLLM's own ``fp8_ds_mla`` format and only ``bfloat16`` into a bf16 cache
       (the same rule survives in a Kunlun-platform plugin's patch of that function); later trees keep
       the ``bfloat16`` step there and map ``fp8`` (first in that function, then in the sparse
       attention layer), and the vllm-project/recipes DeepSeek-V3.2 guide states the default is a
       custom fp8 cache with ``kv_cache_dtype=bfloat16`` for bf16. The planner therefore prices
       ``auto`` and ``fp8`` as ``fp8_ds_mla`` on every v0.11+ profile, on NVIDIA GPUs (note 5). The FlashMLA
       sparse backend stores one token of one layer as the ``kv_lora_rank`` latent in FP8, one fp32 scale per 128
       latent values, and the ``qk_rope_head_dim`` rope key in bf16: 512 + 4 x 4 + 64 x 2 = 656 B
       (its ``get_kv_cache_shape`` gives such a cache 656 bytes per token). The indexer keys keep their own FP8 format with a
       scale per 128 values (132 B for 128 values, :func:`planner.model.sparse.engine_indexer_bytes`),
       whatever the cache dtype. Worked example, DeepSeek-V3.2 (61 such layers):
       61 x (656 + 132) = 48,068 B per token, against 61 x (1,152 + 132) = 78,324 B in bf16: 1.63x
       the tokens.
    2. vLLM first served DeepSeek-V3.2 in v0.11.0, so the format applies to the profiles of
       v0.11 and later (:data:`FP8_DS_MLA_PROFILES`); the older profiles price the layer as
       before (they could not load the model).
    3. Attention + Mamba hybrids with prefix caching (Qwen3.5 / 3.6 Gated DeltaNet, Nemotron-H):
       the 2026 builds (``vllm-v0.28``, ``vllm``; vLLM 0.24 printed the figures below) run the Mamba
       layers in ``mamba_cache_mode`` "align", where a request holds
       two state pages (the running state and the one of the last full cached block) instead of
       one, so each Mamba group adds two blocks to a request, not one
       (``MambaSpec.max_memory_usage_bytes``). Worked example (reference case N09, Qwen3.6-35B-A3B
       NVFP4 on an RTX 5090, fp8 cache, 131,072 tokens, 2,096-token blocks): 63 blocks of the full
       attention group + 3 Mamba groups x 2 = 69 blocks per request; 299 blocks give 299 / 69 =
       4.33x and int(4.333 x 131,072) = 567,978 tokens, the two figures vLLM 0.24 printed
       (with one page: 66 blocks, 4.53x, 593,795 tokens).
    4. Speculative decoding on a hybrid (MTP drafts of Qwen3.5 / 3.6, EAGLE, n-gram): every Mamba layer also
       keeps one state page per draft token, so the state of each proposed position can be rolled back
       (``MambaSpec.num_speculative_blocks`` = ``num_speculative_tokens``; ``max_memory_usage_bytes`` is
       ``(1 + k)`` pages, ``(2 + k)`` in "align" mode). The V1 profiles with the hybrid allocator from v0.11
       (:data:`SPECULATIVE_STATE_PROFILES`) charge them; the field came with Qwen3-Next's MTP (v0.10.2), which
       the ``vllm-v0.10`` profile (0.10.0-0.10.1 logs) predates. Worked example: N09's launch with
       ``num_speculative_tokens`` 2 holds 63 + 3 x (2 + 2) = 75 blocks per request instead of 69.

    5. AMD GPUs (vLLM's ROCm platform) never store ``fp8_ds_mla``. The newest trees pick the format in the attention
       layer, not the model config: ``MLAAttention.__init__`` (vllm/model_executor/layers/attention/mla_attention.py)
       turns an fp8 ``--kv-cache-dtype`` into ``fp8_ds_mla`` only when the backend is ``FLASHMLA_SPARSE``, a CUDA
       backend; ROCm's only sparse-MLA backend is ``ROCM_AITER_MLA_SPARSE`` (vllm/platforms/rocm.py
       ``_get_backend_priorities``), whose cache is ``(num_blocks, block_size, head_size)`` of 576 values in the
       cache dtype (vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py, ``get_kv_cache_shape``), and the
       ``fp8_ds_mla`` writer ``concat_and_cache_mla`` has no ROCm path (vLLM's kernel tests skip it on ROCm). So on AMD
       ``auto`` / ``bf16`` keep a bf16 cache, 61 x (1,152 + 132) = 78,324 B per token for DeepSeek-V3.2 (76.49 KiB,
       against 48,068 B = 46.94 KiB as fp8_ds_mla on NVIDIA), and ``fp8`` / ``fp8_e4m3`` a plain FP8 latent,
       61 x (576 + 132) = 43,188 B. What vLLM refuses there (:func:`rocm_sparse_mla_refusal`): the backend lists
       ``auto``, ``float16``, ``bfloat16``, ``fp8`` and ``fp8_e4m3`` (``supported_kv_cache_dtypes``; its first
       version had a bf16 path only, ``_forward_bf16_kv``), so ``fp8_e5m2`` finds no valid backend; the v0.11 line's
       ``RocmPlatform.get_attn_backend_cls`` raised "ROCMAiterMLASparseBackend doesn't support fp8 kv_cache_dtype"
       for every fp8 name.
    6. NVIDIA GPUs before Hopper (compute capability 8.x: A100, A10, L40S; older) have no sparse-MLA backend, so
       vLLM stops while it builds the attention layers (``get_attn_backend_cls`` in vllm/platforms/cuda.py raises
       "No valid attention backend found"): FLASHMLA_SPARSE takes majors 9 and 10 only
       (``FlashMLASparseBackend.supports_compute_capability``, vllm/v1/attention/backends/mla/flashmla_sparse.py),
       FLASH_ATTN_MLA_SPARSE major 9 (mla/flashattn_mla_sparse.py), FlashInfer's sparse MLA SM100 / SM120
       (mla/flashinfer_mla_sparse.py, flashinfer_mla_sparse_sm120.py), and the indexer's logits kernels are
       DeepGEMM's ``fp8_mqa_logits`` (vllm/model_executor/layers/sparse_attn_indexer.py), built for SM90+. A
       Triton sparse-MLA backend for SM80 (``TRITON_MLA_SPARSE``, mla/triton_mla_sparse.py: a bf16 cache of
       576 values, no ``fp8_ds_mla``) is proposed in vllm-project/vllm PRs #38476 / #47629 (issue #38006), not
       in a release the profiles model; :func:`cuda_sparse_mla_refusal` refuses the launch on every v0.11+
       profile. Older profiles could not load the model at all (:func:`too_old_for_sparse_mla`).

Sources: vllm/v1/kv_cache_interface.py (``MambaSpec``, ``mamba_cache_mode``, ``num_speculative_blocks``);
vllm/model_executor/layers/mamba/abstract.py (``MambaBase.get_kv_cache_spec``); vllm/config/cache.py
(``CacheConfig.mamba_cache_mode``); vllm/model_executor/models/config.py (``DeepseekV32ForCausalLM``,
``verify_and_update_config``); vllm/v1/attention/backends/mla/flashmla_sparse.py
(``get_kv_cache_shape``); vllm/v1/kv_cache_interface.py (``MLAAttentionSpec`` with
``cache_dtype_str == "fp8_ds_mla"``); vllm-project/recipes DeepSeek/DeepSeek-V3_2.md; design note 5:
vllm/model_executor/layers/attention/mla_attention.py, vllm/platforms/rocm.py,
vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py; design note 6: vllm/platforms/cuda.py
(``_get_backend_priorities``, ``get_attn_backend_cls``), vllm/v1/attention/backends/mla/flashmla_sparse.py,
flashattn_mla_sparse.py, flashinfer_mla_sparse.py, triton_mla_sparse.py.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines.pages import FullAttentionPages, MambaPages, PageSpec, layer_page_specs
from planner.model import ModelSpec
from planner.model.layers import CacheDtypes, LayerSpec, MLAAttention
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import (  # noqa: F401 - FP8_DS_MLA_SCALE_BLOCK, fp8_ds_mla_bytes re-exported
    FP8_DS_MLA_CACHE_DTYPES,
    FP8_DS_MLA_SCALE_BLOCK,
    IndexedMLAAttention,
    fp8_ds_mla_bytes,
    indexed_mla_layer,
)

FP8_DS_MLA = "fp8_ds_mla"
"""The name vLLM gives that cache format (``--kv-cache-dtype fp8_ds_mla``; what the plans label the cache)."""

FP8_DS_MLA_PROFILES = frozenset({"vllm-v0.11", "vllm-v0.28", "vllm"})
"""vLLM profiles that store sparse-MLA layers as ``fp8_ds_mla`` by default (design note 2)."""


FP8_DS_MLA_NOTE = ("vLLM stores the sparse-attention (DSA) layers in its fp8_ds_mla format for --kv-cache-dtype "
                   "{kv_cache_dtype}: 656 B per layer per token (FP8 latent, fp32 scales, bf16 rope key) plus the FP8 "
                   "indexer key; --kv-cache-dtype bf16 keeps a bf16 cache")
"""The plan's note when :func:`uses_fp8_ds_mla` (``{kv_cache_dtype}``: the request's value)."""

MLA_REPLICATED_NOTE = "MLA latent cache is replicated on every tensor-parallel GPU (not divided by TP)"
"""The plan's note for an MLA model at tensor parallel > 1: the latent has no head axis to split (DeepSeek-V2 report;
planner/model/layers.py). Under ``-dcp`` :func:`planner.scale.plan.plan_scale` words it for the token split."""



ALIGN_MODE_PROFILES = frozenset({"vllm-v0.28", "vllm"})
"""vLLM profiles that keep Mamba states in "align" mode under prefix caching (design note 3)."""


SPECULATIVE_STATE_PROFILES = frozenset({"vllm-v0.11", "vllm-v0.28", "vllm"})
"""vLLM profiles whose Mamba layers keep one more state page per draft token (design note 4)."""


def mamba_pages_per_request(profile_id: str, enable_prefix_caching: bool, num_speculative_tokens: int = 0) -> int:
    """State pages one request holds in each Mamba layer: 2 in "align" mode (prefix caching on a 2026 build),
    else 1 (design note 3), plus one per draft token of speculative decoding (design note 4).

    Args:
        profile_id: The vLLM profile.
        enable_prefix_caching: ``--enable-prefix-caching``.
        num_speculative_tokens: Draft tokens per step (``--speculative-config``'s ``num_speculative_tokens``;
            0 without speculative decoding).
    """
    base = 2 if enable_prefix_caching and profile_id in ALIGN_MODE_PROFILES else 1
    return base + (num_speculative_tokens if profile_id in SPECULATIVE_STATE_PROFILES else 0)


def uses_fp8_ds_mla(model: ModelSpec, profile_id: str, kv_cache_dtype: str, gpu_name: str | None = "") -> bool:
    """True when vLLM (this profile) stores the model's sparse-MLA layers as ``fp8_ds_mla`` on ``gpu_name`` (never
    on an AMD GPU: design note 5; "" / None = an NVIDIA GPU)."""
    return (profile_id in FP8_DS_MLA_PROFILES and kv_cache_dtype in FP8_DS_MLA_CACHE_DTYPES
            and not is_rocm_gpu(gpu_name) and indexed_mla_layer(model) is not None)


ROCM_SPARSE_MLA_KV_DTYPES = frozenset({"auto", "bf16", "bfloat16", "fp16", "float16", "fp8", "fp8_e4m3"})
"""``--kv-cache-dtype`` values ROCm's sparse-MLA backend takes in the 2026 builds (design note 5)."""


def rocm_sparse_mla_refusal(model: ModelSpec, profile_id: str, kv_cache_dtype: str, gpu_name: str | None) -> str:
    """Why vLLM on an AMD GPU refuses ``--kv-cache-dtype kv_cache_dtype`` for a sparse-MLA model (design note 5),
    else "": any fp8 name in the v0.11 line, an fp8 name the backend does not list (``fp8_e5m2``) later."""
    if not is_rocm_gpu(gpu_name) or indexed_mla_layer(model) is None or profile_id not in FP8_DS_MLA_PROFILES:
        return ""
    where = "vLLM's ROCm sparse-MLA backend (ROCM_AITER_MLA_SPARSE)"
    if profile_id == "vllm-v0.11" and kv_cache_dtype.startswith("fp8"):
        return (f"{where} in v0.11 refuses an fp8 KV cache (vllm/platforms/rocm.py: \"doesn't support fp8 "
                "kv_cache_dtype\"); use --kv-cache-dtype auto (bf16) or --engine vllm")
    if kv_cache_dtype.startswith("fp8") and kv_cache_dtype not in ROCM_SPARSE_MLA_KV_DTYPES:
        return (f"{where} does not take --kv-cache-dtype {kv_cache_dtype} (it lists auto, bfloat16, fp8 and "
                "fp8_e4m3), so vLLM finds no attention backend; use fp8 or auto")
    return ""


SPARSE_MLA_MIN_MAJOR = 9
"""The lowest NVIDIA compute capability major with a vLLM sparse-MLA backend (design note 6)."""


def cuda_sparse_mla_refusal(model: ModelSpec, profile_id: str, gpu_name: str | None) -> str:
    """Why vLLM (a v0.11+ profile) finds no attention backend for a sparse-MLA model on an NVIDIA GPU older than
    Hopper (design note 6), else "" (another model, profile or vendor; a GPU name the capability table does not
    know, :func:`planner.engines.loaded.nvidia_capability`)."""
    from planner.engines.loaded import nvidia_capability  # noqa: PLC0415 - loaded imports the model layer only

    if (not gpu_name or profile_id not in FP8_DS_MLA_PROFILES or is_rocm_gpu(gpu_name)
            or indexed_mla_layer(model) is None):
        return ""
    capability = nvidia_capability(gpu_name)
    if capability is None or capability[0] >= SPARSE_MLA_MIN_MAJOR:
        return ""
    return (f"vLLM has no sparse-MLA attention backend (DeepSeek Sparse Attention) for compute capability "
            f"{capability[0]}.{capability[1]} ({gpu_name}): FLASHMLA_SPARSE needs 9.x or 10.x, FLASH_ATTN_MLA_SPARSE "
            "9.x, FlashInfer's sparse MLA 10.x / 12.x, and the indexer's DeepGEMM kernels SM90 "
            "(vllm/v1/attention/backends/mla/flashmla_sparse.py), so vLLM stops with \"No valid attention backend "
            "found\" (vllm/platforms/cuda.py); use a Hopper or Blackwell GPU")


def sparse_refusal(model: ModelSpec, profile_id: str, request) -> str:
    """Why the vLLM launch ``request`` (an :class:`planner.engines.types.EngineRequest`) stops before loading
    weights on a sparse-MLA model, else "": vLLM raises while it picks the attention backend, when the model's
    layers are built, on an AMD GPU for a cache its backend refuses (:func:`rocm_sparse_mla_refusal`) and on an
    NVIDIA GPU before Hopper (:func:`cuda_sparse_mla_refusal`)."""
    return (rocm_sparse_mla_refusal(model, profile_id, request.kv_cache_dtype, request.gpu_name)
            or cuda_sparse_mla_refusal(model, profile_id, request.gpu_name))


def too_old_for_sparse_mla(model: ModelSpec, profile_id: str) -> str:
    """The warning of a vLLM profile older than v0.11 on a sparse-MLA model (design note 2: those releases could
    not load DeepSeek-V3.2 / GLM-5, so their plan prices a plain MLA cache for a launch that would not run), else
    "". Only vLLM profiles are asked (the caller is the vLLM planner)."""
    if profile_id in FP8_DS_MLA_PROFILES or indexed_mla_layer(model) is None:
        return ""
    return (f"{profile_id} predates vLLM's sparse-attention support (DeepSeek-V3.2 was first served in v0.11.0): "
            "that release cannot load this model; the figures price a plain MLA cache. Use --engine vllm")


def stored_kv_name(model: ModelSpec, profile_id: str | None, kv_cache_dtype: str, dtype_name: str,
                   gpu_name: str | None = "") -> str:
    """The name of the KV cache an engine stores for ``--kv-cache-dtype kv_cache_dtype``: ``fp8_ds_mla``
    (:data:`FP8_DS_MLA`) where :func:`uses_fp8_ds_mla` holds (vLLM v0.11+ on a sparse-MLA model with ``auto`` or
    an ``fp8`` choice; design notes 1, 2), else ``dtype_name``, the resolved dtype's own name
    (``planner.model.layers.cache_dtypes(...).kv.name``: ``auto`` -> ``bf16``).

    Args:
        model: The model.
        profile_id: The engine profile's id; None for the budget arithmetic without an engine, which prices
            the newest vLLM (``planner.model.kv.cache_dtypes``). A profile that is not a vLLM one never matches.
        kv_cache_dtype: The ``--kv-cache-dtype`` value as asked (``auto``, ``fp8``, ``bf16`` ...).
        dtype_name: The name of the dtype ``kv_cache_dtype`` resolves to.
        gpu_name: The GPU (an AMD GPU never stores ``fp8_ds_mla``: design note 5); "" = an NVIDIA GPU.
    """
    if uses_fp8_ds_mla(model, "vllm" if profile_id is None else profile_id, kv_cache_dtype, gpu_name):
        return FP8_DS_MLA
    return dtype_name


def stored_kv_bytes_per_token(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int) -> int:
    """KV bytes of one token over all layers on one GPU as vLLM stores a model whose sparse-MLA layers are in
    ``fp8_ds_mla`` (:func:`layer_bytes_per_token` with ``ds_mla``; design note 1: 61 x (656 + 132) = 48,068 B for
    DeepSeek-V3.2) [bytes]."""
    return sum(layer_bytes_per_token(layer, dtypes, tensor_parallel_size, True) for layer in model.layers)


def layer_bytes_per_token(layer: LayerSpec, dtypes: CacheDtypes, tensor_parallel_size: int, ds_mla: bool) -> int:
    """KV bytes of one token of ``layer`` on one GPU as vLLM stores it [bytes]: when ``ds_mla``, the
    ``fp8_ds_mla`` latent of every MLA layer (a sparse model runs all of them on the sparse backend, those
    that reuse an earlier layer's indices too: ``DeepseekV2MLAAttention`` passes ``is_sparse`` for every layer
    of a model with ``index_topk``, vllm/model_executor/models/deepseek_v2.py) plus the indexer key where the
    layer has one; else the layer's own figure."""
    if ds_mla and isinstance(layer, MLAAttention):
        indexer = layer.indexer_bytes_per_token() if isinstance(layer, IndexedMLAAttention) else 0
        return fp8_ds_mla_bytes(layer.kv_lora_rank, layer.qk_rope_head_dim) + indexer
    return layer.bytes_per_token(dtypes, tensor_parallel_size)


def vllm_layer_page_specs(layer: LayerSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int,
                          *, hybrid_allocator: bool, ds_mla: bool, mamba_pages: int = 1) -> tuple[PageSpec, ...]:
    """:func:`planner.engines.pages.layer_page_specs`, with a sparse-MLA layer in ``fp8_ds_mla`` when
    ``ds_mla`` (one MLA page spec of :func:`layer_bytes_per_token` per token: vLLM's latent and indexer
    specs are both ``MLAAttentionSpec`` of one block size, one group, so their pages add) and a Mamba
    layer holding ``mamba_pages`` state pages per request (:func:`mamba_pages_per_request`)."""
    if ds_mla and isinstance(layer, MLAAttention):
        per_token = layer_bytes_per_token(layer, dtypes, tensor_parallel_size, ds_mla)
        return (FullAttentionPages(block_size=block_size, bytes_per_token=per_token, mla=True),)
    specs = layer_page_specs(layer, dtypes, tensor_parallel_size, block_size, hybrid_allocator=hybrid_allocator)
    if mamba_pages != 1:
        specs = tuple(replace(s, pages_per_request=mamba_pages) if isinstance(s, MambaPages) else s for s in specs)
    return specs
