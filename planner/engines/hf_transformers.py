"""The ``transformers`` view: what a transformers ``DynamicCache`` holds for one sequence.

Serving engines reserve pages (vLLM, SGLang) or cells (llama.cpp) with margins;
plain transformers ``generate()`` keeps one growing tensor pair per layer. This
module states, in integer bytes, what that cache holds, so the planner can show
the ``transformers`` view beside the engine views. Every rule below was checked
exactly against transformers 5.24 by :mod:`model_catalog.verify` (``python -m planner
verify``), which sums the bytes of every tensor a real cache holds after a
prefill and after decode steps.

Design notes (assumptions, with worked examples):
    1. Two sizes per cache. *Tensor bytes*: ``numel x element size`` of the
       tensors the cache exposes. *Memory bytes*: the storages those tensors keep
       alive. They differ only for sliding-window layers, whose kept tensor is a
       view into a longer concatenation (note 3).
    2. Full attention (``DynamicLayer``): each step concatenates the new K and V,
       so a sequence of ``n`` tokens holds ``n`` tokens per layer, tensors and
       memory alike. MLA layers (DeepSeek-V2/V3) go through the same layer with
       the 512-wide compressed latent as "keys" and the 64-wide rope key as
       "values": ``n x (kv_lora_rank + qk_rope_head_dim)`` elements.
       Worked example: DeepSeek-V3 bf16, 61 layers x (512 + 64) x 2 B = 70,272 B/token.
    3. Sliding-window and chunked layers (``DynamicSlidingWindowLayer``; chunked
       layers get ``sliding_window = attention_chunk_size``): after every step the
       kept tensor is the last ``w - 1`` tokens of ``cat(old, new)``, a *view*.
       Tensor tokens: ``min(n, w - 1)``. Memory tokens: after a prefill of ``n``
       tokens the view pins the whole ``n``-token concatenation; after a decode
       step the concatenation was ``min(n - 1, w - 1) + 1 = min(n, w)`` tokens.
       Worked example, w = 4: prefill 6 tokens -> tensor 3, memory 6; one decode
       step (n = 7) -> tensor 3, memory 4; prefill 2 tokens -> 2 and 2.
    4. Recurrent layers (``LinearAttentionLayer``, Jamba's Mamba mixer, Qwen3-Next
       Gated DeltaNet): the conv state is kept in the activation dtype, the
       recurrent (SSM / delta-rule) state in float32, because the scan returns
       its final state in fp32 (transformers' torch fallback; the mamba_ssm and
       fla CUDA kernels do the same). Both are independent of ``n``.
       Worked example, Jamba-v0.1 bf16: 8192 x 4 x 2 B + 8192 x 16 x 4 B = 589,824 B per Mamba layer.
    5. The cache also holds one 0-d int64 ``_sliding_window_tensor`` per sliding
       layer (8 B of bookkeeping); it is not KV and is left out here (the
       verifier reports it separately).
    6. Only fp32 / bf16 / fp16 caches are modelled: transformers' quantized caches
       (quanto / HQQ) keep a full-precision residual plus per-group scales and are
       not a per-token format.
    7. Tensor parallelism (``tp_plan``) splits heads and recurrent channels like
       the engines do (``max(1, kv_heads // tp)`` per GPU); the verifier checks tp = 1.
    8. Falcon with ``new_decoder_architecture`` (Falcon-40B/180B) broadcasts K and V
       from ``num_kv_heads`` to all query heads in ``FalconAttention._split_heads``
       *before* ``cache.update``: transformers caches 128 heads where engines
       cache 8 (``FullAttention.transformers_kv_heads``). Falcon-7B (multi-query)
       caches its single head.
    9. 2025-26 layer kinds (:mod:`planner.model.sparse`): sparse-attention indexer
       keys are cached in the model dtype beside the MLA latent or K/V
       (``DynamicIndexedLayer``, ``MiniMaxM3VLSparseCacheLayer``): 1,408 B per layer
       and token for DeepSeek-V3.2 in bf16, where the engines store 1,284 B (FP8
       indexer key + scale). DeepSeek-V4 keeps K = V twice on its sliding-only layers
       and once (exposed twice) on CSA / HCA layers, beside the compressor's
       entries, buffers and overlap state
       (``planner.model.sparse.CompressedAttention.transformers_cache_bytes``), also
       measured inside a window, 783 x 128 + 0, 1, 4, 100, 127 tokens
       (``scripts/measure_deepseek_v4_cache.py``).

Sources: transformers 5.24 src/transformers/cache_utils.py (``DynamicLayer.update``,
``DynamicSlidingWindowLayer.update``, ``LinearAttentionLayer``,
``DYNAMIC_LAYER_TYPE_MAPPING``, ``get_layer_types_and_kwargs``);
models/deepseek_v3/modeling_deepseek_v3.py (``DeepseekV3Attention.forward``:
``cache.update(kv_nope, k_rot, ...)``); models/jamba/modeling_jamba.py and
models/qwen3_next/modeling_qwen3_next.py (``update_conv_state``,
``update_recurrent_state``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from planner.engines.common import engine_plan, non_torch_memory, rank_budget, resolve_knobs
from planner.engines.launch import LaunchSpec
from planner.engines.length_limits import over_limit, transformers_message
from planner.engines.overheads import activation_estimate, loaded_weight_bytes, pipeline_layer_ranges
from planner.engines.profiles import EngineProfile
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.engines.vllm import gib2
from planner.model import ModelSpec
from planner.model.dtypes import FP32, StorageFormat, weight_dtype
from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    LayerSpec,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.text import count_noun
from planner.units import ceil_div

TransformersPhase = Literal["prefill", "decode"]
"""When the cache is looked at: right after a prefill of all ``n`` tokens, or
after a decode step that brought the sequence to ``n`` tokens."""

TRANSFORMERS_VIEW = "transformers"
"""Name of this view beside the engine views (``vllm``, ``sglang``, ``llama.cpp``, ...)."""

TRANSFORMERS_RECURRENT_STATE_FORMAT: StorageFormat = FP32
"""Element format of the recurrent (SSM / delta-rule) state in transformers (design note 4)."""

TRANSFORMERS_KV_FORMATS: frozenset[str] = frozenset({"fp32", "bf16", "fp16"})
"""KV element formats the view models (design note 6)."""

TRANSFORMERS_VIEW_SENTENCE = (
    "transformers keeps every token in full-attention layers and a view of the last "
    "sliding_window - 1 tokens in sliding layers (pinning the whole prompt until the first "
    "decode step), with no page or block rounding, stores Mamba/DeltaNet recurrent states in float32, "
    "keeps sparse-attention indexer keys in the model dtype (the engines: FP8 with a scale), "
    "and caches Falcon-40B's K/V for all 128 query heads."
)
"""One sentence for the UI where the transformers view differs from the engines'."""


@dataclass(frozen=True, kw_only=True)
class TransformersCacheBytes:
    """Bytes a transformers cache holds for one sequence on one GPU.

    Attributes:
        tensor_bytes: Sum of ``numel x element size`` of the cache tensors [bytes].
        memory_bytes: Bytes of the storages those tensors keep alive [bytes].
    """

    tensor_bytes: int
    memory_bytes: int

    def __add__(self, other: TransformersCacheBytes) -> TransformersCacheBytes:
        return TransformersCacheBytes(tensor_bytes=self.tensor_bytes + other.tensor_bytes,
                                      memory_bytes=self.memory_bytes + other.memory_bytes)


def _check(num_tokens: int, phase: str) -> None:
    if num_tokens < 0:
        raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
    if phase not in ("prefill", "decode"):
        raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")


def _window(layer: LayerSpec) -> int | None:
    """The ``sliding_window`` transformers gives this layer's cache, or None."""
    if isinstance(layer, SlidingWindowAttention):
        return layer.sliding_window
    if isinstance(layer, ChunkedLocalAttention):
        return layer.attention_chunk_size
    return None


def transformers_layer_tokens(layer: LayerSpec, num_tokens: int, phase: TransformersPhase = "decode") -> tuple[int, int]:
    """``(tensor tokens, memory tokens)`` one attention layer keeps for ``num_tokens``.

    Full / MLA: ``(n, n)``. Sliding or chunked with window ``w``: tensor
    ``min(n, w - 1)``; memory ``n`` right after a prefill, ``min(n, w)`` after a
    decode step (design note 3). Recurrent and no-cache layers: ``(0, 0)``.

    Example: ``transformers_layer_tokens(SlidingWindowAttention(..., sliding_window=4096), 4200, "decode")``
    is ``(4095, 4096)``.

    Raises:
        ValueError: ``num_tokens < 0`` or an unknown phase.

    Sources: transformers cache_utils.py ``DynamicLayer.update``,
    ``DynamicSlidingWindowLayer.update``.
    """
    _check(num_tokens, phase)
    if isinstance(layer, (RecurrentState, NoCache)):
        return 0, 0
    window = _window(layer)
    if window is None:
        return num_tokens, num_tokens
    tensor = min(num_tokens, window - 1)
    memory = num_tokens if phase == "prefill" else min(num_tokens, window)
    return tensor, memory


def _kv_format(dtypes: CacheDtypes) -> StorageFormat:
    if dtypes.kv.name not in TRANSFORMERS_KV_FORMATS:
        raise ValueError(
            f"the transformers view models fp32, bf16 and fp16 caches only, got KV dtype {dtypes.kv.name!r}; "
            "choose kv_cache_dtype auto, bf16, fp16 or fp32")
    return dtypes.kv


def transformers_bytes_per_token(layer: LayerSpec, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
    """K + V (or latent) bytes of one token in this layer of transformers' cache, on one GPU.

    As :meth:`planner.model.layers.FullAttention.bytes_per_token`, except that layers whose
    ``transformers_kv_heads`` is set store that many heads (design note 8).
    Worked example, Falcon-40B bf16: 2 x 128 heads x 64 x 2 B = 32,768 B per layer,
    16x vLLM's 2 x 8 x 64 x 2 B = 2,048 B.
    """
    own = getattr(layer, "transformers_bytes_per_token", None)
    if own is not None:  # indexer keys in the model dtype (planner.model.sparse, design note 1)
        return own(dtypes, tensor_parallel_size)
    heads = getattr(layer, "transformers_kv_heads", None)
    if heads is not None:
        layer = replace(layer, num_key_value_heads=heads)
    return layer.bytes_per_token(dtypes, tensor_parallel_size)


def transformers_recurrent_state_bytes(layer: RecurrentState, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
    """Conv state in the activation dtype + recurrent state in float32, on one GPU [bytes].

    Example: Jamba-v0.1 bf16 (d_inner 8192, d_conv 4, d_state 16):
    8192 x 4 x 2 B + 8192 x 16 x 4 B = 589,824 B (design note 4).

    Sources: transformers cache_utils.py ``LinearAttentionLayer.lazy_initialization``
    (conv state in the input dtype, recurrent state ``zeros_like`` the fp32 scan state).
    """
    tp = tensor_parallel_size
    if tp < 1:
        raise ValueError(f"tensor_parallel_size must be >= 1, got {tp}")
    conv = dtypes.state.bytes_for(ceil_div(layer.conv_state_elements, tp))
    state = TRANSFORMERS_RECURRENT_STATE_FORMAT.bytes_for(ceil_div(layer.ssm_state_elements, tp))
    return conv + state


def transformers_layer_bytes(layer: LayerSpec, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1,
                             phase: TransformersPhase = "decode") -> TransformersCacheBytes:
    """Bytes one layer's transformers cache holds for one sequence on one GPU.

    Raises:
        ValueError: bad ``num_tokens`` / phase, or a KV dtype outside fp32/bf16/fp16.
    """
    if isinstance(layer, RecurrentState):
        _check(num_tokens, phase)
        state = transformers_recurrent_state_bytes(layer, dtypes, tensor_parallel_size)
        return TransformersCacheBytes(tensor_bytes=state, memory_bytes=state)
    if isinstance(layer, NoCache):
        _check(num_tokens, phase)
        return TransformersCacheBytes(tensor_bytes=0, memory_bytes=0)
    _kv_format(dtypes)
    own = getattr(layer, "transformers_cache_bytes", None)
    if own is not None:  # DeepSeek-V4 CSA / HCA compressor state (design note 9)
        _check(num_tokens, phase)
        tensor_bytes, memory_bytes = own(num_tokens, dtypes, tensor_parallel_size, phase)
        return TransformersCacheBytes(tensor_bytes=tensor_bytes, memory_bytes=memory_bytes)
    per_token = transformers_bytes_per_token(layer, dtypes, tensor_parallel_size)
    tensor, memory = transformers_layer_tokens(layer, num_tokens, phase)
    return TransformersCacheBytes(tensor_bytes=tensor * per_token, memory_bytes=memory * per_token)


def transformers_cache_bytes(model: ModelSpec, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1,
                             *, phase: TransformersPhase = "decode",
                             layers: range | None = None) -> TransformersCacheBytes:
    """Bytes the whole transformers cache holds for one sequence of ``num_tokens`` on one GPU.

    Args:
        model: The model.
        num_tokens: Tokens of the sequence so far [tokens].
        dtypes: Cache element formats (KV fp32/bf16/fp16; ``state`` is the
            activation dtype of the conv state).
        tensor_parallel_size: GPUs the heads are split over.
        phase: ``decode`` (after a decode step) or ``prefill`` (right after
            prefilling all ``num_tokens``); see design note 3.
        layers: Decoder layers on this GPU (a pipeline stage); None = all.

    Returns:
        Tensor and memory bytes (design note 1).

    Example: Meta-Llama-3-8B bf16, 8,192 tokens: 32 x 2 x 8 x 128 x 2 B x 8,192 =
    1,073,741,824 B either way.

    Sources: module design notes.
    """
    total = TransformersCacheBytes(tensor_bytes=0, memory_bytes=0)
    for index in (layers if layers is not None else range(model.num_layers)):
        total = total + transformers_layer_bytes(model.layers[index], num_tokens, dtypes, tensor_parallel_size, phase)
    return total


def transformers_peak_bytes(model: ModelSpec, prompt_tokens: int, total_tokens: int, dtypes: CacheDtypes,
                            tensor_parallel_size: int = 1, layers: range | None = None) -> int:
    """Most cache memory one ``generate()`` call holds: prompt prefill, then decode to ``total_tokens``.

    ``max(memory after prefilling prompt_tokens, memory after decoding to total_tokens)``;
    with sliding layers the prefill can dominate (design note 3). Worked example
    with one sliding layer of w = 4 and 1 B/token: prompt 6, total 9 ->
    max(6, 4) = 6 B.

    Raises:
        ValueError: ``prompt_tokens`` < 0 or > ``total_tokens``.
    """
    if not 0 <= prompt_tokens <= total_tokens:
        raise ValueError(f"need 0 <= prompt_tokens <= total_tokens, got {prompt_tokens} and {total_tokens}")
    prefill = transformers_cache_bytes(model, prompt_tokens, dtypes, tensor_parallel_size, phase="prefill",
                                       layers=layers).memory_bytes
    if total_tokens == prompt_tokens:
        return prefill
    decode = transformers_cache_bytes(model, total_tokens, dtypes, tensor_parallel_size, phase="decode",
                                      layers=layers).memory_bytes
    return max(prefill, decode)


def differs_from_engines(model: ModelSpec) -> bool:
    """True when the transformers view differs from the per-token engine views for this model.

    That is when a layer is windowed (tensor ``w - 1`` and the prefill pin) or
    recurrent (fp32 state); plain full-attention and MLA models cache the same
    bytes as an exact engine view without paging.
    """
    return any(isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention, RecurrentState))
               for layer in model.layers)


__all__ = [
    "TRANSFORMERS_KV_FORMATS",
    "TRANSFORMERS_RECURRENT_STATE_FORMAT",
    "TRANSFORMERS_VIEW",
    "TRANSFORMERS_VIEW_SENTENCE",
    "TransformersCacheBytes",
    "TransformersPhase",
    "differs_from_engines",
    "transformers_bytes_per_token",
    "transformers_cache_bytes",
    "transformers_layer_bytes",
    "transformers_layer_tokens",
    "transformers_peak_bytes",
    "transformers_recurrent_state_bytes",
]


# --- the transformers engine view: a whole device, one growing cache per sequence --------

def transformers_bytes_per_sequence(model: ModelSpec, num_tokens: int, dtypes: CacheDtypes, tp: int = 1,
                                    layers: range | None = None, prompt_tokens: int | None = None) -> int:
    """Memory a transformers 5 ``DynamicCache`` pins for one sequence of ``num_tokens`` [bytes].

    Delegates to the ``transformers`` view (:mod:`planner.engines.hf_transformers`), checked
    exactly against transformers 5.24 by ``python -m planner verify``: full and
    MLA layers keep every token (MLA as the 512 + 64 latent); sliding and chunked
    layers keep a view of the last ``w - 1`` tokens that pins ``min(n, w)``
    tokens after a decode step and the whole prompt right after its prefill;
    recurrent layers keep the conv state in the activation dtype and the SSM /
    delta-rule state in float32. With ``prompt_tokens`` the result is the peak
    over the call (prefill of the prompt, then decode to ``num_tokens``).
    Quantized KV caches (int8 / int4 via quanto or HQQ) are not a per-token
    format in transformers; for them the same token rule is applied at the KV
    format's size (an approximation, not verified).

    Sources: transformers cache_utils.py (``DynamicLayer``, ``DynamicSlidingWindowLayer``,
    ``LinearAttentionLayer``); planner/engines/hf_transformers.py design notes.
    """
    if dtypes.kv.name in TRANSFORMERS_KV_FORMATS:
        if prompt_tokens is not None:
            return transformers_peak_bytes(model, prompt_tokens, num_tokens, dtypes, tp, layers)
        return transformers_cache_bytes(model, num_tokens, dtypes, tp, phase="decode", layers=layers).memory_bytes
    total = 0
    for i in (layers if layers is not None else range(model.num_layers)):
        layer = model.layers[i]
        if isinstance(layer, RecurrentState):
            total += transformers_recurrent_state_bytes(layer, dtypes, tp)
            continue
        _, held = transformers_layer_tokens(layer, max(num_tokens, prompt_tokens or 0), "decode")
        total += held * transformers_bytes_per_token(layer, dtypes, tp)
    return total


def plan_transformers(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                      profile: EngineProfile) -> EnginePlan:
    """Plain transformers ``generate()``: the device minus weights and the prompt's forward pass.

    No fraction and no blocks: ``budget = total - weights - forward(prompt) -
    non-torch``; concurrency = ``budget // bytes_per_sequence(max_model_len)``;
    tokens = concurrency x ``max_model_len``. The prompt is the forward pass the
    activations are sized for: ``max_num_batched_tokens`` split over the
    ``max_num_seqs`` sequences, else the whole ``max_model_len``. Each sequence's
    cache is the peak over the call (:func:`transformers_bytes_per_sequence` with
    ``prompt_tokens``): sliding layers keep ``w - 1`` tokens while decoding but pin
    the whole prompt right after its prefill, so a long prompt on a sliding-window
    model (Gemma 3, gpt-oss, Mistral 7B v0.1) needs its full length in every layer
    for a moment, as ``python -m planner verify`` measures.

    Sources: module docstring; transformers cache_utils.py ``DynamicSlidingWindowLayer``.
    """
    c = resolve_knobs(model, request)
    seqs_wanted = request.max_num_seqs or 1
    prompt = min(request.max_num_batched_tokens or c.max_model_len * seqs_wanted, c.max_model_len * seqs_wanted)
    prompt_per_seq = max(1, min(c.max_model_len, prompt // seqs_wanted))
    ranks, budgets, ranges = [], [], pipeline_layer_ranges(model.num_layers, c.pp)
    for stage, layers in enumerate(ranges):
        weights = request.weights_bytes if request.weights_bytes is not None else loaded_weight_bytes(
            model, weight_dtype(request.weight_dtype), c.tp, stage, c.pp, engine_extras=False)
        act = activation_estimate(model, num_tokens=prompt, num_seqs=seqs_wanted, bytes_per_logit=4,
                                  activation_bytes=c.dtypes.state.bytes_for(1), tensor_parallel_size=c.tp,
                                  last_stage=stage == c.pp - 1)
        activation = act.peak_bytes if request.activation_bytes is None else request.activation_bytes
        non_torch = non_torch_memory(profile, request, c, context=True)
        budget = request.available_kv_memory_bytes
        if budget is None:
            budget = gpu_memory_bytes - weights - activation - non_torch
        per_seq = transformers_bytes_per_sequence(model, c.max_model_len, c.dtypes, c.tp, layers,
                                                  prompt_tokens=prompt_per_seq)
        fit = budget // per_seq if per_seq and budget > 0 else 0
        budgets.append(budget)
        ranks.append(rank_budget(stage, layers, base=gpu_memory_bytes, requested=gpu_memory_bytes, weights=weights,
                           activation=activation, forward=act.forward_bytes, sampler=act.sampler_bytes,
                           non_torch=non_torch, cudagraph=0, available=budget,
                           per_token=sum(transformers_bytes_per_token(model.layers[i], c.dtypes, c.tp) for i in layers),
                           bytes_per_block=per_seq, num_blocks=fit, request=request))
    fit = min(r.num_blocks for r in ranks)

    def one_fits(length: int) -> bool:
        pinned = length if request.max_num_batched_tokens is None else min(length, prompt_per_seq)
        return all(transformers_bytes_per_sequence(model, length, c.dtypes, c.tp, lay, prompt_tokens=pinned) <= b
                   for lay, b in zip(ranges, budgets))

    lo, hi = 0, c.limit
    if one_fits(hi):
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if one_fits(mid) else (lo, mid)
    reasons = []
    if fit < seqs_wanted:
        reasons.append(f"{count_noun(seqs_wanted, 'sequence')} of {c.max_model_len:,} tokens need "
                       f"{gib2(seqs_wanted * ranks[0].bytes_per_block)} GiB of cache; {gib2(max(budgets[0], 0))} GiB "
                       f"is free after weights and activations; at most {fit} fit")
    limit = over_limit(model, c.max_model_len)  # past the model's length: an IndexError, or a warning
    reason, warning = transformers_message(model, c.max_model_len, limit) if limit else ("", "")
    reasons += [reason] if reason else []
    return engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=None, block_size=1,
                 mnbt=prompt, seqs=seqs_wanted, tokens=fit * c.max_model_len, num_blocks=fit, concurrency=float(fit),
                 engine_max_len=lo, needed=ranks[0].bytes_per_block, reasons=reasons,
                 warnings=[warning] if warning else [],
                 notes=["transformers allocates the cache as it grows; no fraction of memory is reserved"],
                 log=[], formula="budget = total - weights - forward(prompt) - non-torch" + (
                     f"; sliding layers keep window - 1 tokens while decoding but pin the whole "
                     f"{prompt_per_seq:,}-token prompt after its prefill (the peak counts)"
                     if any(isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention)) for layer in model.layers)
                     else ""),
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   max_model_len=c.max_model_len, max_num_seqs=seqs_wanted))


def generate_allocated_bytes(rank: RankBudget, num_seqs: int) -> int:
    """What ``generate()`` allocates on ``rank`` for a batch of ``num_seqs`` sequences [bytes]: the weights, the
    compute buffers of the prompt pass (the rank's activation peak, sized by :func:`plan_transformers` for the
    asked ``max_num_seqs``) and ``num_seqs`` caches of ``max_model_len`` tokens (``bytes_per_block``: this view's
    "block" is one sequence's peak cache). Non-torch memory (the CUDA context) is apart. Not the rank's budget bar,
    whose KV segment is all the free memory, enough for ``num_blocks`` sequences: transformers allocates the cache
    as it grows (``DynamicCache``, transformers cache_utils.py), only for the sequences it runs.

        allocated = weights + activation peak + num_seqs x one sequence's cache

    Worked example: Llama-2-7b-hf on an H100 at 2,048 tokens, one sequence: 12.55 GiB of fp16 weights + 0.17 GiB
    of activation + 1.00 GiB of cache (32 layers x 2 x 4,096 x 2 B x 2,048 tokens) = 13.72 GiB.
    """
    return rank.weights_bytes + rank.activation_bytes + generate_cache_bytes(rank, num_seqs)


def generate_cache_bytes(rank: RankBudget, num_seqs: int) -> int:
    """The cache part of :func:`generate_allocated_bytes` [bytes]: ``num_seqs`` caches of ``max_model_len`` tokens."""
    return num_seqs * rank.bytes_per_block
