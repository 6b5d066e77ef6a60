"""vLLM's page specs and the block size it runs with (split from :mod:`planner.engines.vllm`).

:func:`stage_specs` turns one pipeline stage's layers (and the drafter layers that share their
pool) into the page specs vLLM's allocator sees; :func:`vllm_block_size` resolves the attention
``block_size`` vLLM actually runs with: the asked or default size, raised for attention + Mamba
hybrids so that one attention page holds a Mamba state page, then the size an MLA backend forces.
:mod:`planner.engines.vllm` re-exports every public name here, so existing imports keep working.

Sources: vllm/model_executor/models/config.py (``HybridAttentionMambaModelConfig``),
vllm/platforms/cuda.py (``CudaPlatformBase.check_and_update_config``),
vllm/v1/kv_cache_interface.py (the specs); ENGINES.md section 1.
"""

from __future__ import annotations

from planner.engines.loaded import gpu_capability
from planner.engines.pages import (
    MAMBA_BLOCK_ALIGNMENT,
    FullAttentionPages,
    KVLayout,
    MambaPages,
    kv_layout,
    layer_page_specs,
    mamba_hybrid_block_size,
)
from planner.engines.profiles import EngineProfile, default_block_size, default_mla_backend
from planner.engines.serving import vllm_drafter_layers
from planner.engines import vllm_deepseek_v4 as deepseek_v4
from planner.engines.types import EngineRequest
from planner.engines.vllm_kv_formats import mamba_pages_per_request, uses_fp8_ds_mla, vllm_layer_page_specs
from planner.engines.vllm_runner import speculative_tokens
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes
from planner.model.layers import FullAttention


def stage_specs(model: ModelSpec, layers: range, request: EngineRequest, profile: EngineProfile,
                 block_size: int) -> list:
    """The page specs of ``layers`` (and of the drafter layers that share their pool) at ``block_size``.

    Raises:
        ValueError: a Mamba hybrid under a profile without vLLM's hybrid allocator.
    """
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, vllm_storage=False)
    hybrid = profile.hybrid_allocator and not request.disable_hybrid_kv_cache_manager
    tp = request.tensor_parallel_size
    ds_mla = uses_fp8_ds_mla(model, profile.id, request.kv_cache_dtype, request.gpu_name)  # vllm_kv_formats 1, 3, 5
    mamba = mamba_pages_per_request(profile.id, request.enable_prefix_caching, speculative_tokens(request))
    specs = [spec for i in layers for spec in vllm_layer_page_specs(model.layers[i], dtypes, tp, block_size,
                                                                    hybrid_allocator=hybrid, ds_mla=ds_mla,
                                                                    mamba_pages=mamba)]
    if request.serving is not None:  # the drafter's layers share the pool (planner.engines.serving)
        specs += [spec for x in vllm_drafter_layers(model, request, profile, layers)
                  for spec in layer_page_specs(x, dtypes, tp, block_size, hybrid_allocator=hybrid)]
    if not hybrid and any(isinstance(s, MambaPages) for s in specs):
        raise ValueError(f"{model.model_id}: attention + Mamba hybrids are modelled only with vLLM's hybrid "
                         f"allocator (engine vllm, vllm-v0.11 or vllm-v0.10); {profile.id} kept the Mamba state in "
                         "a separate cache that the planner does not model")
    return specs


def stage_layout(model: ModelSpec, layers: range, request: EngineRequest, profile: EngineProfile,
                  block_size: int) -> KVLayout:
    """One pipeline stage's :class:`KVLayout` at the block size :func:`vllm_block_size` resolved;
    DeepSeek-V4 under v0.22+ with vLLM's allocator for that model (:mod:`planner.engines.vllm_deepseek_v4`).

    Raises:
        ValueError: pages that cannot be unified; DeepSeek-V4 with the hybrid KV cache manager disabled
            (its compressor states keep 4- and 8-token blocks, which only that manager allocates).
    """
    if deepseek_v4.applies(model, profile.id):
        if request.disable_hybrid_kv_cache_manager:
            raise ValueError(f"{model.model_id}: vLLM's DeepSeek-V4 caches need the hybrid KV cache manager (the "
                             "compressor states keep 4- and 8-token blocks); drop --disable-hybrid-kv-cache-manager")
        drafter = vllm_drafter_layers(model, request, profile, range(model.num_layers)) if request.serving else ()
        return deepseek_v4.deepseek_v4_layout(model, layers, block_size, drafter)
    return kv_layout(stage_specs(model, layers, request, profile, block_size))


def mamba_block_alignment(model: ModelSpec, request: EngineRequest, profile: EngineProfile) -> int:
    """``kernel_block_alignment_size`` of an attention + Mamba hybrid [tokens].

    MLA models: 128 with the CUTLASS MLA backend, 64 with any other MLA backend; other models
    16, or 32 on datacenter Blackwell (SM 10.x) with head size 256 under FlashInfer (the
    default backend), which cannot run 16-token blocks there (flashinfer issue #1993).

    Sources: vllm/model_executor/models/config.py
    ``HybridAttentionMambaModelConfig.verify_and_update_config`` (2026 source; earlier
    releases used 16 for every model).
    """
    backend = (request.attention_backend or "").upper()
    if model.attention_kind == "MLA":
        backend = backend or default_mla_backend(profile, request.gpu_name)
        return 128 if backend == "CUTLASS_MLA" else 64
    if gpu_capability(request.gpu_name)[0] == 10 and backend in ("", "FLASHINFER") and any(
            isinstance(layer, FullAttention) and layer.head_dim == 256 for layer in model.layers):
        return 32
    return MAMBA_BLOCK_ALIGNMENT


def mla_forced_block_size(backend: str, block_size: int) -> int:
    """The block size vLLM's CUDA platform forces for an MLA backend [tokens].

    FlashMLA: 64 unless ``block_size`` is a multiple of 64; CUTLASS MLA: 128 unless a
    multiple of 128; FlashInfer MLA: 64 unless 32 or a multiple of 64; other backends keep it.
    Worked example: FlashMLA (Hopper), ``--block-size 16`` -> 64; 128 stays 128.

    Sources: vllm/platforms/cuda.py ``CudaPlatformBase.check_and_update_config`` ("Forcing kv
    cache block size to 64 for FlashMLA backend"; v0.11 and later: releases up to v0.10 forced
    exactly 64 / 128, so a multiple such as 128 was forced to 64 there too, not modelled).
    """
    backend = backend.upper()
    if backend == "FLASHMLA" and block_size % 64:
        return 64
    if backend == "CUTLASS_MLA" and block_size % 128:
        return 128
    if backend == "FLASHINFER_MLA" and block_size != 32 and block_size % 64:
        return 64
    return block_size


def vllm_block_size(model: ModelSpec, request: EngineRequest, profile: EngineProfile) -> tuple[int, tuple[str, ...]]:
    """The attention ``block_size`` vLLM runs with, and the notes saying why it is not the one asked.

    1. Start from ``--block-size`` (``request.block_size``), else the backend default
       (:func:`planner.engines.profiles.default_block_size`); DeepSeek-V4 under v0.22+ defaults to 256,
       the size its sliding cache's backend prefers (``DeepseekSparseSWABackend.get_preferred_block_size``,
       picked by ``Platform.update_block_size_for_backend`` from the first attention layer, its sliding
       cache), and takes no other step.
    2. Attention + Mamba hybrids (vllm/model_executor/models/config.py
       ``HybridAttentionMambaModelConfig.verify_and_update_config``, ``mamba_cache_mode``
       "none"): ``attn_block_size = a x ceil(mamba_page_size / (a x attention page bytes of one
       token))`` with ``a`` = :func:`mamba_block_alignment` (:func:`planner.engines.pages.mamba_hybrid_block_size`);
       when the block size is unset or smaller, vLLM sets it to ``attn_block_size`` ("Setting
       attention block size to N tokens to ensure that attention page size is >= mamba page
       size"). A larger one is kept and the Mamba page padded to the attention page; vLLM
       refuses no value here.
    3. MLA models: the backend's forced size (:func:`mla_forced_block_size`; vllm/platforms/cuda.py
       ``check_and_update_config``, which runs after step 2). A forced size that no longer
       holds a Mamba state makes the pages fail to unify, as in vLLM.

    The hybrid sizes come from every layer of the model (vLLM computes them from the model
    config, once for all pipeline stages). Worked example (Qwen3.5-35B-A3B, bf16, TP 1):
    attention page of one token 2 x 2 KV heads x 256 x 2 B = 2,048 B; Gated DeltaNet state
    2,146,304 B (conv 3 x 8,192 x 2 B + SSM 32 x 128 x 128 x 4 B); 16 x ceil(2,146,304 /
    32,768) = 1,056 tokens, so ``--block-size 16`` runs with 1,056.

    Returns:
        ``(block_size, notes)``; notes only when ``request.block_size`` was given and changed.
    """
    asked = request.block_size
    is_mla = model.attention_kind == "MLA"
    if deepseek_v4.applies(model, profile.id):  # the sliding cache's backend prefers 256 (vllm_deepseek_v4)
        return asked or deepseek_v4.DEFAULT_BLOCK_SIZE, ()
    block = asked or default_block_size(profile, is_mla=is_mla, gpu_name=request.gpu_name,
                                        attention_backend=request.attention_backend)
    notes: list[str] = []
    if profile.family != "vllm":
        return block, ()
    specs = stage_specs(model, range(model.num_layers), request, profile, 1)
    attention = [s for s in specs if isinstance(s, FullAttentionPages)]
    mamba = [s for s in specs if isinstance(s, MambaPages)]
    if mamba and attention:
        mamba_page_size = max(s.state_bytes for s in mamba)
        attn_block_size = mamba_hybrid_block_size(max(a.bytes_per_token for a in attention), mamba_page_size,
                                                  mamba_block_alignment(model, request, profile))
        if block < attn_block_size:
            if asked is not None:
                notes.append(f"vLLM raises the attention block size to {attn_block_size:,} tokens so that an "
                             f"attention page holds at least one Mamba state page (model_executor/models/config.py); "
                             f"block_size {asked} was asked")
            block = attn_block_size
    if is_mla and asked is not None:
        backend = request.attention_backend or default_mla_backend(profile, request.gpu_name)
        forced = mla_forced_block_size(backend, block)
        if forced != block:
            notes.append(f"vLLM forces the KV cache block size to {forced} for the {backend.upper()} backend "
                         f"(platforms/cuda.py); block_size {asked} was asked")
            block = forced
    return block, tuple(notes)
