"""KV-cache quantization: users gained by fp8, int8 and int4 KV against 16-bit.

The KV dtype is chosen separately from the weight dtype (vLLM's --kv-cache-dtype, SGLang's --kv-cache-dtype,
llama.cpp's -ctk / -ctv).
Smaller elements fit more tokens in the same per-GPU budget; the budget itself
does not change (weights and overheads are untouched), so users scale with
``16 / bits_per_element`` up to block rounding.

Element sizes, scale overhead included (:data:`planner.model.dtypes.KV_CACHE_DTYPES`):
    * bf16/fp16: 16 bits.
    * fp8 (e4m3/e5m2): 8 bits; one fp32 scale per tensor kept outside the cache.
    * int8: 8 bits; per-tensor scale outside the cache.
    * int4: 4.5 bits: llama.cpp q4_0 layout, 32 values in 16 bytes plus one fp16
      scale per group of 32 -> 18 bytes / 32 values.
    Worked example: Llama-3-8B, 128 KiB/token in bf16 -> 64 KiB in fp8,
    36 KiB in int4 (131,072 x 4.5 / 16 = 36,864 B).

Sources: vLLM docs "Quantized KV Cache" (docs/features/quantization/quantized_kvcache.md);
llama.cpp ggml type traits (ggml/src/ggml.c, q4_0 / q8_0 block sizes); Liu et al.
2024, "KIVI: A Tuning-Free Asymmetric 2bit Quantization for KV Cache" (ICML 2024);
Hooper et al. 2024, "KVQuant" (NeurIPS 2024).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction

from planner.budget import PlanRequest
from planner.model import ModelSpec
from planner.model.dtypes import KV_CACHE_DTYPES
from planner.model.kv import cache_dtypes
from planner.model.sparse import (
    CompressedAttention,
    SharedKVSlidingAttention,
    fp8_ds_mla_bytes,
    indexed_mla_layer,
)
from planner.pipeline import plan_pipeline

V4_LAYERS = (CompressedAttention, SharedKVSlidingAttention)
"""DeepSeek-V4's layer kinds, each with one K=V entry of ``head_dim`` values (:mod:`planner.model.sparse`)."""

DEFAULT_KV_DTYPES = ("auto", "fp8", "int8", "int4")
"""Baseline (model dtype) first, then the quantized formats compared."""

QUALITY_NOTES: dict[str, tuple[str, str]] = {
    "bf16": ("baseline: the cache keeps the model's own precision, no quality change", "config.json torch_dtype (the cache is kept in the model dtype)"),
    "fp16": ("baseline: the cache keeps the model's own precision, no quality change", "config.json torch_dtype (the cache is kept in the model dtype)"),
    "fp32": ("twice the 16-bit size, no quality gain for serving", "config.json torch_dtype"),
    "fp8": (
        "usually a small accuracy loss; calibrated scales (llm-compressor) are recommended over the default "
        "scale 1.0; supported by vLLM (--kv-cache-dtype fp8) and SGLang",
        "vLLM docs, Quantized KV Cache (docs/features/quantization/quantized_kvcache.md); SGLang docs, "
        "Quantized KV Cache",
    ),
    "int8": (
        "8-bit integers with scales: small loss, similar to fp8; llama.cpp offers q8_0 "
        "(-ctk q8_0 -ctv q8_0); newer vLLM trees add int8 per-token-head scales",
        "llama.cpp ggml type traits (ggml/src/ggml.c); TensorRT-LLM QuantMode INT8_KV_CACHE "
        "(tensorrt_llm/quantization/mode.py)",
    ),
    "int4": (
        "a visible quality trade-off: keys have outlier channels, so plain per-token 4-bit groups lose "
        "accuracy; KIVI keeps quality at 2 bits by quantizing keys per channel and values per token; "
        "llama.cpp offers q4_0 (-ctk q4_0 -ctv q4_0); vLLM's --kv-cache-dtype has no int4",
        "Liu et al. 2024 (KIVI, ICML 2024); Hooper et al. 2024 (KVQuant); llama.cpp ggml type traits",
    ),
    "fp8_ds_mla": (
        "vLLM's own fp8 format for sparse-MLA layers (DeepSeek-V3.2, GLM-5): the latent in fp8 with one fp32 "
        "scale per 128 values, the rope key kept in bf16; vLLM's default for these models (--kv-cache-dtype "
        "bfloat16 keeps a bf16 cache); DeepSeek-V4 keeps every cache in it (vLLM v0.22+ asserts an fp8 cache for the "
        "model and pages it in one fp8_ds_mla pool), so its users have no other KV dtype to compare",
        "vllm-project/recipes DeepSeek-V3.2 guide; vllm/v1/attention/backends/mla/flashmla_sparse.py; "
        "vllm/models/deepseek_v4/attention.py (planner/engines/vllm_deepseek_v4.py note 2)",
    ),
    "q8_0": ("as int8 (llama.cpp block format, 34 B per 32 values)", "llama.cpp ggml/src/ggml.c"),
    "q4_0": ("as int4 (llama.cpp block format, 18 B per 32 values)", "llama.cpp ggml/src/ggml.c"),
}
"""Per KV dtype: (quality trade-off, sources)."""


@dataclass(frozen=True, kw_only=True)
class KVQuantOption:
    """One KV dtype on one GPU (per-GPU figures).

    Attributes:
        kv_cache_dtype: The cache the plan counts its users in (``Plan.kv_cache_dtype``; ``auto`` becomes
            ``bf16``/``fp16``).
        bits_per_element: Bits per stored value, scales included.
        kv_cache_bytes_per_token_per_gpu: In the cache the users are counted in: the plan's, or its pool's growth per
            token past every window where that is another cache (DeepSeek-V4) [bytes].
        kv_cache_capacity_tokens: Tokens the budget holds [tokens].
        max_concurrent_sequences: Sequences of ``context_len`` that fit.
        users_gained: Versus the baseline (first dtype compared).
        capacity_ratio: Capacity / baseline capacity.
        quality_note: The trade-off, in one sentence.
        sources: Where the note comes from.
    """

    kv_cache_dtype: str
    bits_per_element: float
    kv_cache_bytes_per_token_per_gpu: int
    kv_cache_capacity_tokens: int
    max_concurrent_sequences: int
    users_gained: int
    capacity_ratio: float
    quality_note: str
    sources: str


def compare_kv_dtypes(
    model: ModelSpec,
    gpu_memory_bytes: int,
    request: PlanRequest,
    kv_cache_dtypes: tuple[str, ...] = DEFAULT_KV_DTYPES,
    gpu_id: str = "",
    *,
    pipeline_parallel_size: int = 1,
) -> tuple[KVQuantOption, ...]:
    """Users and capacity per KV dtype, each against the first (baseline).

    Each dtype is a full :func:`planner.budget.plan` with only
    ``kv_cache_dtype`` changed, so budgets are identical and the gain is
    ``budget // bytes_per_sequence(dtype) - budget // bytes_per_sequence(baseline)``. Names that store the same
    cache make one row, as do names whose plans count their users in one cache (``Plan.kv_cache_dtype``:
    DeepSeek-V4's every name is vLLM's ``fp8_ds_mla`` pool, one row whose KV per token is that pool's,
    ``Plan.kv_cache_pool_bytes_per_token``, not the exact bf16 figure beside users it does not count); where the
    first is vLLM's ``fp8_ds_mla`` (a sparse-MLA model under ``auto``), the
    model's 16-bit cache (vLLM's ``--kv-cache-dtype bfloat16``) comes first as the baseline.

    With ``pipeline_parallel_size`` stages each dtype is :func:`planner.pipeline.plan_pipeline`'s plan of them (the
    per-GPU figures those of the stage with the fewest users, vLLM ``get_kv_cache_configs`` in
    vllm/v1/core/kv_cache_utils.py); with one stage, :func:`planner.budget.plan`'s.

    Raises:
        ValueError: an unknown dtype or invalid request fields; stages that do not split the GPUs or the layers.

    Sources: module docstring.
    """
    if not kv_cache_dtypes:
        raise ValueError("give at least one KV dtype to compare")
    rows = {}
    if cache_dtypes(model, request.weight_dtype, kv_cache_dtypes[0], gpu_name=gpu_id).fp8_ds_mla:  # not on AMD
        # vLLM's auto is already fp8 (fp8_ds_mla) for sparse MLA: the 16-bit cache it keeps for --kv-cache-dtype
        # bfloat16 is the baseline, so the gain of its own format shows
        kv_cache_dtypes = (cache_dtypes(model, request.weight_dtype, "auto", vllm_storage=False).kv.name,
                           *kv_cache_dtypes)
    for name in kv_cache_dtypes:
        resolved = cache_dtypes(model, request.weight_dtype, name, gpu_name=gpu_id).kv_name
        if resolved in rows:  # DeepSeek-V3.2's auto and fp8 are both fp8_ds_mla: one row
            continue
        result = plan_pipeline(model, gpu_memory_bytes, replace(request, kv_cache_dtype=name), gpu_id,
                               pipeline_parallel_size=pipeline_parallel_size)
        rows.setdefault(result.kv_cache_dtype, result)  # DeepSeek-V4: every name is vLLM's fp8_ds_mla pool
    base = next(iter(rows.values()))
    out = []
    for stored, result in rows.items():
        note, sources = QUALITY_NOTES.get(stored, ("", ""))
        pool = result.kv_cache_pool_bytes_per_token  # the users' pool pages, not the exact cache (DeepSeek-V4)
        out.append(KVQuantOption(
            kv_cache_dtype=stored,
            bits_per_element=float(_bits_per_element(model, stored)),
            kv_cache_bytes_per_token_per_gpu=result.kv_cache_bytes_per_token_per_gpu if pool is None else pool,
            kv_cache_capacity_tokens=result.kv_cache_capacity_tokens,
            max_concurrent_sequences=result.max_concurrent_sequences,
            users_gained=result.max_concurrent_sequences - base.max_concurrent_sequences,
            capacity_ratio=(result.kv_cache_capacity_tokens / base.kv_cache_capacity_tokens
                            if base.kv_cache_capacity_tokens else 0.0),
            quality_note=note, sources=sources,
        ))
    return tuple(out)


def _bits_per_element(model: ModelSpec, name: str) -> Fraction:
    """Bits per stored value of the KV cache ``name``, scales included; ``fp8_ds_mla``: the stored bytes of one
    sparse-MLA latent (:func:`planner.model.sparse.fp8_ds_mla_bytes`) over its ``kv_lora_rank + qk_rope_head_dim``
    values (656 B for 576 values: 9.11 bits); DeepSeek-V4 (no latent: vLLM's pool pages of its K=V entries,
    :mod:`planner.engines.vllm_deepseek_v4` note 2): one entry's 584 B over its ``head_dim`` values (512: 9.13 bits)."""
    if name == "fp8_ds_mla":
        layer = indexed_mla_layer(model)
        if layer is None:
            from planner.engines.vllm_deepseek_v4 import FP8_DS_MLA_ENTRY_BYTES  # noqa: PLC0415 - engines on use

            head_dim = next(x.head_dim for x in model.layers if isinstance(x, V4_LAYERS))
            return Fraction(8 * FP8_DS_MLA_ENTRY_BYTES, head_dim)
        values = layer.kv_lora_rank + layer.qk_rope_head_dim
        return Fraction(8 * fp8_ds_mla_bytes(layer.kv_lora_rank, layer.qk_rope_head_dim), values)
    return KV_CACHE_DTYPES[name].bits_per_element
