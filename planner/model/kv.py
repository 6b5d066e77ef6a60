"""KV-cache bytes of a whole model: per token, per sequence, and a fast profile.

Everything here is a sum over the model's per-layer specs
(:mod:`planner.model.layers`); nothing is approximated.

Sources: DOMAIN.md section 3; vLLM ``get_kv_cache_configs``
(vllm/v1/core/kv_cache_utils.py) for the per-layer sums.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from math import ceil, gcd

from planner.model.dtypes import activation_dtype, resolve_kv_cache_dtype, weight_dtype
from planner.model.layers import CacheDtypes, ChunkedLocalAttention, FullAttention, MLAAttention, SlidingWindowAttention
from planner.model.memo import model_memo, remember
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import FP8_DS_MLA_CACHE_DTYPES, CompressedAttention, indexed_mla_layer
from planner.model.spec import ModelSpec
from planner.units import ceil_div


def cache_dtypes(model: ModelSpec, weight_dtype_name: str, kv_cache_dtype_name: str, *,
                 vllm_storage: bool = True, gpu_name: str | None = "") -> CacheDtypes:
    """Resolve the KV and recurrent-state formats for a plan.

    Args:
        model: The model (its ``torch_dtype`` resolves ``auto``).
        weight_dtype_name: A key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.
        kv_cache_dtype_name: ``auto`` or a key of :data:`planner.model.dtypes.KV_CACHE_DTYPES`.
        vllm_storage: Store sparse-MLA layers the way the newest vLLM does, which the budget arithmetic
            prices: ``fp8_ds_mla`` (:attr:`CacheDtypes.fp8_ds_mla`) for ``auto`` and the fp8 names on a model
            with such layers (DeepSeek-V3.2, GLM-5). The engine views pass False and apply their own
            engine's and release's rule (:mod:`planner.engines.vllm_kv_formats`).
        gpu_name: The GPU's name or catalog id: on an AMD GPU vLLM's ROCm sparse-MLA backend keeps the cache in
            the dtype asked (bf16 for ``auto``), never ``fp8_ds_mla`` (design note 5 of
            :mod:`planner.engines.vllm_kv_formats`); "" / None = an NVIDIA GPU.

    Raises:
        ValueError: an unknown dtype name (the message lists the valid ones).

    Sources: vLLM ``CacheConfig.cache_dtype`` (auto = model dtype); Mamba state
    stays in the activation dtype (vLLM ``MambaSpec``; transformers Jamba cache); sparse MLA:
    vllm/model_executor/models/config.py (``DeepseekV32ForCausalLM.verify_and_update_config``) and the
    vllm-project/recipes DeepSeek-V3.2 guide (a custom fp8 cache by default, ``bfloat16`` for bf16).

    Memoized per model object and names (:mod:`planner.model.memo`): the
    same :class:`CacheDtypes` object comes back, so caches keyed by its formats hit.
    """
    memo = model_memo(model)
    vllm_storage = vllm_storage and not is_rocm_gpu(gpu_name)
    key = ("cache_dtypes", weight_dtype_name, kv_cache_dtype_name, vllm_storage)
    dtypes = memo.get(key)
    if dtypes is None:  # the layer walk runs once per model and names, not per call (plan() is microseconds)
        dtypes = _cache_dtypes(model.torch_dtype, weight_dtype_name, kv_cache_dtype_name)
        ds_mla = (vllm_storage and kv_cache_dtype_name in FP8_DS_MLA_CACHE_DTYPES
                  and indexed_mla_layer(model) is not None)
        dtypes = remember(memo, key, replace(dtypes, fp8_ds_mla=True) if ds_mla else dtypes)
    return dtypes


def _cache_dtypes(torch_dtype: str | None, weight_dtype_name: str, kv_cache_dtype_name: str) -> CacheDtypes:
    """:func:`cache_dtypes` without the memo (raises ValueError for unknown names)."""
    weights = weight_dtype(weight_dtype_name)
    kv = resolve_kv_cache_dtype(kv_cache_dtype_name, weights, torch_dtype)
    state = activation_dtype(weights, torch_dtype)
    return CacheDtypes(kv=kv, state=state)


def kv_cache_bytes_per_token(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
    """Bytes one token costs when every KV-holding layer keeps it, on one GPU.

    Sum over layers of ``layer.bytes_per_token``; recurrent layers add 0.
    Worked example: Meta-Llama-3-8B bf16, 32 layers x 2 x 8 x 128 x 2 B = 131,072 B.

    Sources: DOMAIN.md section 3 (``2 x num_key_value_heads x head_dim x bytes`` per layer).
    """
    return sum(layer.bytes_per_token(dtypes, tensor_parallel_size) for layer in model.layers)


@dataclass(frozen=True, kw_only=True)
class KVGroup:
    """Layers that share a per-token cost and a token cap.

    Attributes:
        num_layers: Layers in the group.
        bytes_per_token: Per-token bytes of one layer on one GPU [bytes].
        max_tokens: Tokens a layer keeps at most (window), None for no cap.
        bytes_per_sequence_fixed: Constant per-sequence bytes of one layer
            (recurrent state; the extra page vLLM keeps for a sliding window) [bytes].
        block_size: The group's own page size [tokens] where it differs from the profile's (vLLM pages a
            model's layers in blocks of one page size, so a layer with twice the per-token bytes gets half the
            tokens: Gemma 4's full-attention layers in 32-token blocks beside 16-token sliding ones); None =
            :attr:`KVProfile.block_size`.
        page_bytes: Bytes one block of one layer costs where that is not ``block x bytes_per_token`` (0 = that
            product): a DeepSeek-V4 KV-cache group, whose every block is a whole pool block of vLLM's allocator for
            the model (1,051,776 B for V4-Flash, 256 tokens of the compressed caches or 4 of a compressor state:
            :mod:`planner.engines.vllm_deepseek_v4` note 4), which a block does not divide into whole bytes per
            token. ``bytes_per_token`` is then ``page_bytes // block`` (what the per-token figures read); every
            sequence and prefill sum prices whole blocks of ``page_bytes``.
    """

    num_layers: int
    bytes_per_token: int
    max_tokens: int | None
    bytes_per_sequence_fixed: int
    block_size: int | None = None
    page_bytes: int = 0

    def block_bytes(self, block: int) -> int:
        """Bytes one block of ``block`` tokens costs in one layer of the group: :attr:`page_bytes`, else
        ``block x bytes_per_token`` [bytes]."""
        return self.page_bytes or block * self.bytes_per_token


@dataclass(frozen=True, kw_only=True)
class KVProfile:
    """A model's cache cost, pre-grouped so sweeps evaluate it cheaply.

    ``bytes_per_sequence(n)`` equals the sum of the layers'
    ``bytes_per_sequence(n, ...)``; the grouping only saves time.
    """

    groups: tuple[KVGroup, ...]
    block_size: int

    @property
    def bytes_per_token(self) -> int:
        """Bytes per token over all KV-holding layers (windows not applied) [bytes]."""
        return sum(g.num_layers * g.bytes_per_token for g in self.groups)

    def bytes_per_sequence(self, num_tokens: int) -> int:
        """Bytes one sequence of ``num_tokens`` holds on one GPU [bytes].

        Each layer's tokens are capped by its window and rounded up to whole
        blocks of ``block_size`` (17 tokens at block 16 -> 32 slots), each block priced
        :meth:`KVGroup.block_bytes`.

        Raises:
            ValueError: ``num_tokens < 0``.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        total = 0
        for g in self.groups:
            block = g.block_size or self.block_size
            held = num_tokens if g.max_tokens is None else min(num_tokens, g.max_tokens)
            total += g.num_layers * (ceil_div(held, block) * g.block_bytes(block) + g.bytes_per_sequence_fixed)
        return total

    @property
    def pooled(self) -> bool:
        """True when some group prices its blocks by :attr:`KVGroup.page_bytes`: the profile is an engine's pool
        in its own cache format (vLLM's DeepSeek-V4 ``fp8_ds_mla`` pages), not the exact cache paged."""
        return any(g.page_bytes for g in self.groups)

    @property
    def pool_bytes_per_token(self) -> int | None:
        """Bytes a sequence's pool pages grow by per token past every window, rounded up: ``ceil(sum over the
        groups without a window of layers x page_bytes / their block)`` [bytes]; None unless :attr:`pooled`.
        DeepSeek-V4-Flash: one 1,051,776 B pool block per 256 compressed tokens = 4,109 B, where its exact
        figure in bf16 is 8,277 B (every layer's full per-token KV). Sources: :mod:`planner.pool_kv`;
        :mod:`planner.engines.vllm_deepseek_v4` note 4 (vLLM v0.22.0 vllm/v1/core/kv_cache_utils.py
        ``_get_kv_cache_config_deepseek_v4``)."""
        if not self.pooled:
            return None
        growth = sum((Fraction(g.num_layers * g.block_bytes(g.block_size or self.block_size),
                               g.block_size or self.block_size)
                      for g in self.groups if g.max_tokens is None), Fraction(0))
        return ceil(growth)

    @property
    def uniform_block(self) -> bool:
        """True when every group is paged in :attr:`block_size` (no group has its own)."""
        return all(g.block_size in (None, self.block_size) for g in self.groups)

    def prefill_extra_bytes(self, num_tokens: int, batched_tokens: int) -> int:
        """Bytes a sequence of ``num_tokens`` holds at its prefill peak beyond what it holds decoding [bytes].

        A layer with a window (``max_tokens``) keeps the window's tokens while a sequence decodes, but while a
        chunk of ``batched_tokens`` is prefilled it holds the window plus that chunk: vLLM allocates a step's
        blocks before it frees the ones the window has left behind. Per capped group, ``ceil(min(cap - 1 + b,
        n) / B) x B - ceil(min(cap, n) / B) x B`` token slots (``b = batched_tokens``; the cap is the decode
        step's tokens, ``window`` for a sliding window and ``chunk + 1`` for chunked local attention; a group with
        :attr:`KVGroup.page_bytes` prices those blocks by that page); 0 for a
        model without windows and for ``b <= 1``. Gemma 3 27B (52 sliding layers, window 1,024, block 16) at
        32,768 tokens with 8,192 batched tokens: 52 x (9,216 - 1,024) slots of one layer's per-token bytes.

        Sources: vllm/v1/kv_cache_interface.py (``SlidingWindowSpec.max_memory_usage_bytes``,
        ``ChunkedLocalAttentionSpec``); vllm/v1/core/single_type_kv_cache_manager.py (``remove_skipped_blocks``)
        and vllm/v1/core/kv_cache_manager.py (``allocate_slots``); :func:`planner.engines.pages.decoding_ratio`.

        Raises:
            ValueError: ``num_tokens < 0``.
        """
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        return self.prefill_extra_bytes_many((num_tokens,), batched_tokens)[0]

    @property
    def windowed(self) -> bool:
        """True when some layer keeps a window of tokens (its prefill peak holds a chunk more:
        :meth:`prefill_extra_bytes`)."""
        return any(g.max_tokens is not None and g.bytes_per_token for g in self.groups)

    def prefill_extra_bytes_many(self, token_counts: Sequence[int], batched_tokens: int) -> list[int]:
        """:meth:`prefill_extra_bytes` of each count, the same integers, one pass per windowed group [bytes].

        Raises:
            ValueError: a count < 0.
        """
        if token_counts and min(token_counts) < 0:
            raise ValueError(f"num_tokens must be >= 0, got {min(token_counts)}")
        totals = [0] * len(token_counts)
        if batched_tokens <= 1:
            return totals
        for g in self.groups:
            if g.max_tokens is None or not g.bytes_per_token:  # not windowed (see :attr:`windowed`)
                continue
            block = g.block_size or self.block_size
            per_block = g.num_layers * g.block_bytes(block)
            reach, cap = g.max_tokens - 1 + batched_tokens, g.max_tokens
            held = -(-cap // block)  # blocks of the window; a count up to the cap adds nothing, past the reach all
            top = per_block * (-(-reach // block) - held)
            totals = [t if n <= cap else t + top if n >= reach else t + per_block * (-(-n // block) - held)
                      for t, n in zip(totals, token_counts)]
        return totals

    def bytes_per_sequences(self, token_counts: Sequence[int]) -> list[int]:
        """:meth:`bytes_per_sequence` of each count, the same integers, one pass per group [bytes].

        Per group, ``num_layers x (blocks x block bytes + fixed)`` is computed as
        ``blocks x (num_layers x block bytes) + num_layers x fixed`` (exact in integers),
        so a sweep over hundreds of contexts costs one comprehension per group.

        Raises:
            ValueError: a count < 0.
        """
        if token_counts and min(token_counts) < 0:
            raise ValueError(f"num_tokens must be >= 0, got {min(token_counts)}")
        totals: list[int] | None = None
        for g in self.groups:
            block = g.block_size or self.block_size
            per_block = g.num_layers * g.block_bytes(block)
            fixed = g.num_layers * g.bytes_per_sequence_fixed
            cap = g.max_tokens
            if cap is None:
                part = [-(-n // block) * per_block + fixed for n in token_counts]
            else:
                part = [-(-min(n, cap) // block) * per_block + fixed for n in token_counts]
            totals = part if totals is None else [a + b for a, b in zip(totals, part)]
        return [0] * len(token_counts) if totals is None else totals


def kv_profile(
    model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int = 1, block_size: int = 1
) -> KVProfile:
    """Group a model's layers into a :class:`KVProfile`.

    Args:
        model: The model.
        dtypes: Cache element formats.
        tensor_parallel_size: GPUs the layers are split over.
        block_size: Page size [tokens]; 1 = exact token counts.

    Raises:
        ValueError: ``block_size < 1`` or ``tensor_parallel_size < 1``.

    Memoized per model object (:mod:`planner.model.memo`), keyed by the two
    formats' identities (the stored entry keeps them alive), the tensor parallel
    size and the block size: a plan asks for three profiles, and rebuilding one
    walks every layer.
    """
    if block_size < 1:
        raise ValueError(f"block_size must be >= 1 token, got {block_size}")
    memo = model_memo(model)
    key = ("kv_profile", id(dtypes.kv), id(dtypes.state), dtypes.fp8_ds_mla, tensor_parallel_size, block_size)
    entry = memo.get(key)
    if entry is None:
        profile = _build_kv_profile(model, dtypes, tensor_parallel_size, block_size)
        entry = remember(memo, key, (dtypes.kv, dtypes.state, profile))
    return entry[2]


def _build_kv_profile(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int) -> KVProfile:
    """:func:`kv_profile` without the memo: one pass over the layers."""
    # A window cap read from tokens_held of a huge sequence: FullAttention and MLA
    # hold everything (cap None); windowed layers return their window.
    probe = 1 << 62
    counts: dict[tuple[int, int | None, int], int] = {}
    for layer in model.layers:
        per_token = layer.bytes_per_token(dtypes, tensor_parallel_size)
        held = layer.tokens_held(probe)
        cap = None if held == probe else held
        # Constant per-sequence bytes (recurrent state; zero for attention layers at 0 tokens, so a layer that
        # keeps both, planner.model.sparse.AttentionWithState, adds its state beside its per-token cost).
        fixed = layer.bytes_per_sequence(0, dtypes, tensor_parallel_size, 1)
        key = (per_token, cap, fixed)
        counts[key] = counts.get(key, 0) + 1
    groups = tuple(
        KVGroup(num_layers=n, bytes_per_token=t, max_tokens=c, bytes_per_sequence_fixed=f)
        for (t, c, f), n in counts.items()
        if t or f
    )
    return KVProfile(groups=groups, block_size=block_size)


def kv_cache_bytes_per_sequence(
    model: ModelSpec,
    num_tokens: int,
    dtypes: CacheDtypes,
    tensor_parallel_size: int = 1,
    block_size: int = 1,
) -> int:
    """Bytes one sequence of ``num_tokens`` holds, windows and states applied.

    Worked example: Meta-Llama-3-70B bf16 at 8,192 tokens:
    80 layers x 2 x 8 x 128 x 2 B x 8,192 = 2,684,354,560 B (2.5 GiB).

    Sources: DOMAIN.md sections 3-4.
    """
    return kv_profile(model, dtypes, tensor_parallel_size, block_size).bytes_per_sequence(num_tokens)


@dataclass(frozen=True, kw_only=True)
class AttentionVariant:
    """The model rebuilt with another attention design (same layers otherwise).

    Attributes:
        name: ``MHA``, ``GQA``, ``MQA`` or ``MLA``.
        num_key_value_heads: KV heads per attention layer (None for MLA's latent).
        model: The model with its attention layers swapped; plan it like any model.
        as_built: True for the design the model actually uses.
        description: One sentence for the UI.
    """

    name: str
    num_key_value_heads: int | None
    model: ModelSpec
    as_built: bool
    description: str


def _swap_heads(layer, heads: int):
    if isinstance(layer, FullAttention):
        return replace(layer, num_key_value_heads=heads)
    return layer


def attention_variants(model: ModelSpec) -> tuple[AttentionVariant, ...]:
    """The model as MHA, GQA (as built), MQA, and MLA where the model uses it.

    For MHA/GQA/MQA models the variants change only ``num_key_value_heads`` of
    every attention layer (MHA = query heads, MQA = 1), keeping windows, so a
    plan of each variant shows the users GQA buys. For MLA models the MHA
    variant is the decompressed per-head cache (K ``qk_nope + qk_rope`` and V
    ``v_head_dim`` per head) that engines without MLA kernels keep.

    Raises:
        ValueError: an MLA model whose spec lacks the per-head shapes.

    Sources: Shazeer 2019 (MQA); Ainslie et al. 2023 (GQA); DeepSeek-V2 report
    2024 (MLA); DOMAIN.md section 3.
    """
    if any(isinstance(layer, MLAAttention) for layer in model.layers):
        def decompress(layer):
            if not isinstance(layer, MLAAttention):
                return layer
            if not (layer.num_attention_heads and layer.v_head_dim):
                raise ValueError(f"{model.model_id}: MLA layers lack head shapes for the MHA view")
            return FullAttention(
                num_key_value_heads=layer.num_attention_heads,
                head_dim=layer.qk_nope_head_dim + layer.qk_rope_head_dim,
                v_head_dim=layer.v_head_dim,
            )

        mha = replace(model, layers=tuple(decompress(layer) for layer in model.layers))
        return (
            AttentionVariant(name="MHA", num_key_value_heads=model.num_attention_heads, model=mha,
                             as_built=False,
                             description="decompressed per-head K and V, as engines without MLA kernels store it"),
            AttentionVariant(name="MLA", num_key_value_heads=None, model=model, as_built=True,
                             description="one latent of kv_lora_rank + qk_rope_head_dim values per layer"),
        )

    heads, kv_heads = model.num_attention_heads, model.num_key_value_heads

    def variant(n: int):
        return replace(model, num_key_value_heads=n,
                       layers=tuple(_swap_heads(layer, n) for layer in model.layers))

    variants = [AttentionVariant(name="MHA", num_key_value_heads=heads, model=variant(heads),
                                 as_built=kv_heads >= heads, description="one KV head per query head")]
    if 1 < kv_heads < heads:
        variants.append(AttentionVariant(
            name="GQA", num_key_value_heads=kv_heads, model=model, as_built=True,
            description=f"{heads // kv_heads} query heads share each KV head"))
    variants.append(AttentionVariant(name="MQA", num_key_value_heads=1, model=variant(1),
                                     as_built=kv_heads == 1, description="all query heads share one KV head"))
    return tuple(variants)


_WINDOW_KINDS = ((SlidingWindowAttention, "sliding-window"), (ChunkedLocalAttention, "chunked local-attention"),
                 (CompressedAttention, "compressed-attention"))
"""Layer classes that keep a window of tokens, and their names in the pages' text."""


def windowed_layer_kinds(model: ModelSpec) -> tuple[str, ...]:
    """Names of the kinds of windowed layer ``model`` has, in :data:`_WINDOW_KINDS` order; () for none.

    ``"sliding-window"``: :class:`~planner.model.layers.SlidingWindowAttention` (config ``sliding_window``; also
    DeepSeek-V4's shared-K=V sliding layers); ``"chunked local-attention"``:
    :class:`~planner.model.layers.ChunkedLocalAttention` (Llama 4's ``attention_chunk_size``, vLLM
    ``ChunkedLocalAttentionSpec``); ``"compressed-attention"``: DeepSeek-V4's CSA / HCA layers, whose sliding K=V
    window vLLM pages as a sliding-window spec (:mod:`planner.engines.pages` design note 5). These are the layers
    whose prefill peak holds a batched chunk more (:meth:`KVProfile.prefill_extra_bytes`).
    """
    layers = model.layers
    return tuple(name for kind, name in _WINDOW_KINDS if any(isinstance(layer, kind) for layer in layers))


def pool_exact_profile(paged):
    """The exact bytes of a sequence in a pooled profile's own stored format, unpaged: ``paged``'s caches at their
    pool rate, each group's tokens capped by its window, no block rounding and no block kept beyond a window.

    Per group of a pooled ``paged`` profile (:attr:`KVProfile.pooled`: vLLM's DeepSeek-V4
    ``fp8_ds_mla`` pool), ``page_bytes`` hold ``block`` tokens, so a layer costs ``page_bytes / block`` per token
    held; the group is re-cut into blocks of ``g = block / gcd(block, page_bytes)`` tokens, the fewest whose share
    of a page is whole bytes (V4-Flash: the compressed group's 1,051,776 B per 256 tokens -> 8,217 B per 2
    tokens, so a sequence is rounded up by at most one token there; the sliding and compressor-state groups'
    pages divide by their blocks, ``g = 1``). ``bytes_per_sequence_fixed``, the page vLLM keeps beyond a window
    (``+ 1`` block in :mod:`planner.engines.vllm_deepseek_v4` note 4), is dropped: a contiguous reservation
    holds the window's tokens only. The naive scheme and the used bytes of :mod:`planner.traffic.allocation`
    price a V4 sequence with this, so all three schemes count the one cache vLLM stores (it never stores V4's
    exact bf16 or plain fp8 cache: note 2). A :class:`planner.serving.features.ShiftedProfile` keeps its
    extra tokens; a profile that is not pooled comes back unchanged.

    Sources: :mod:`planner.engines.vllm_deepseek_v4` notes 2-4 (vLLM v0.22.0
    vllm/v1/core/kv_cache_utils.py ``_get_kv_cache_config_deepseek_v4``); :class:`KVGroup`.
    """
    inner = getattr(paged, "inner", paged)
    if not inner.pooled:
        return paged
    groups = []
    for g in inner.groups:
        block = g.block_size or inner.block_size
        page = g.block_bytes(block)
        step = block // gcd(block, page)
        groups.append(KVGroup(num_layers=g.num_layers, bytes_per_token=page // block, max_tokens=g.max_tokens,
                              bytes_per_sequence_fixed=0, block_size=step,
                              page_bytes=0 if step == 1 else page * step // block))
    exact = KVProfile(groups=tuple(groups), block_size=1)
    return exact if inner is paged else replace(paged, inner=exact)
