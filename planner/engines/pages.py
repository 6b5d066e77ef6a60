"""vLLM-style KV-cache pages: per-layer specs, hybrid groups, blocks, tokens, concurrency.

This mirrors the data flow of vLLM's V1 allocator in small pure functions:
layer specs (one frozen dataclass per kind, each answering "bytes per page" and
"most one request can use") -> groups sharing one block pool -> blocks from an
available byte budget -> the token and concurrency figures each vLLM era prints
-> the largest ``max_model_len`` that fits (binary search). Other engines reuse
the page arithmetic with their own block sizes.

Design notes (assumptions, with worked examples):
    1. A page is one layer's K and V for ``block_size`` tokens on one GPU:
       ``block_size x per-token bytes``. Llama-3-8B at TP 1, bf16, block 16:
       16 x 2 x 8 x 128 x 2 B = 65,536 B per layer.
    2. A sliding-window layer with window ``w`` needs at most
       ``ceil(min(w - 1 + max_num_batched_tokens, max_model_len) / B) + 1`` blocks
       per request. The "+1": a window of 4 tokens at block 4 that starts at
       token 2 spans tokens 2-5, i.e. blocks 0 and 1 -- one more block than
       ``4 / 4``. gpt-oss (w 128, 2048 batched tokens, B 16): ceil(2175 / 16) + 1 = 137.
    3. Chunked-local layers (Llama 4) need ``ceil(min(chunk + max_num_batched_tokens,
       max_model_len) / B)`` blocks; full attention and MLA ``ceil(max_model_len / B)``;
       a Mamba layer one page per request whatever the length.
    4. Hybrid models: pages are unified by growing the block size of the layer
       kind with the smaller page; layers of each kind are cut into groups of
       ``group_size`` layers (the smallest kind's count, or the largest kind's
       when max < 1.5 x min); all groups share one pool, and one block of the pool
       costs ``page x group_size`` bytes. gpt-oss-120b (18 sliding + 18 full)
       -> 2 groups of 18; Gemma 3 (5 sliding : 1 full) -> 6 groups.
    5. DeepSeek-V4's compressed (CSA / HCA) layers are priced at their amortized bytes per
       source token (:mod:`planner.model.sparse` design note 2), whose pages need not divide
       the sliding layers' page (V4-Flash bf16, block 16: CSA 16 x 289 = 4,624 B against
       16 x 1,024 = 16,384 B). vLLM's allocator for that model (v0.22+) is
       :mod:`planner.engines.vllm_deepseek_v4`; for the older profiles, which could not load it,
       such a page takes, as an estimate, the largest whole multiple of its block size that fits the
       pool's page and is padded to it (4,624 -> 3 x 16 = 48 tokens, 13,872 B padded to
       16,384 B), the way ``MambaSpec`` pages are padded. Any other page that does not
       divide the largest one raises, as vLLM's ``unify_kv_cache_spec_page_size`` does.

    6. *Printed concurrency against a decoding pool.* vLLM's "Maximum concurrency" divides the pool by
       the blocks of design notes 2-3, each request at its prefill peak (a sliding layer's window plus a
       whole ``max_num_batched_tokens`` chunk). Before every step its scheduler frees the blocks a
       sliding window or local chunk has left behind (``remove_skipped_blocks``, replaced by the null
       block), and a decode step adds one token, so a decoding request holds the same blocks with one
       batched token: :meth:`KVLayout.held_blocks_per_request`. Gemma 3 27B at 32,768 tokens, block 16,
       8,192 batched tokens (1 full + 6 sliding groups, window 1,024): printed divisor 2,048 + 6 x 577 =
       5,510 blocks, decoding 2,048 + 6 x 65 = 2,438 blocks. With one prefill chunk's extra blocks
       beside the decoding requests (:func:`decoding_ratio`), 58,214 blocks hold 22.62 requests
       where vLLM prints 10.57.

Sources: vllm/v1/kv_cache_interface.py (``FullAttentionSpec``,
``SlidingWindowSpec``, ``ChunkedLocalAttentionSpec``, ``MLAAttentionSpec``,
``MambaSpec``: ``page_size_bytes`` and ``max_memory_usage_bytes``);
vllm/v1/core/kv_cache_utils.py (``get_kv_cache_groups``,
``unify_kv_cache_spec_page_size``, ``_get_kv_cache_groups_uniform_page_size``,
``get_num_blocks``, ``get_max_concurrency_for_kv_cache_config``,
``_estimate_max_model_len_from_groups``, ``_report_kv_cache_config``);
vllm/v1/core/single_type_kv_cache_manager.py (``SlidingWindowManager.remove_skipped_blocks``,
``ChunkedLocalAttentionManager.remove_skipped_blocks``) and vllm/v1/core/kv_cache_manager.py
(``allocate_slots`` frees those blocks before it allocates);
vllm/model_executor/models/config.py (``HybridAttentionMambaModelConfig``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cached_property

from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    LayerSpec,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.sparse import CompressedAttention
from planner.units import ceil_div, largest_fitting

MAMBA_BLOCK_ALIGNMENT = 16
"""Attention block sizes of Mamba hybrids are raised in steps of this many tokens
(the FlashAttention kernel block alignment in ``HybridAttentionMambaModelConfig``)."""


@dataclass(frozen=True, kw_only=True)
class FullAttentionPages:
    """Full attention: every token of the request is kept (vLLM ``FullAttentionSpec``).

    Attributes:
        block_size: Tokens per block.
        bytes_per_token: K + V bytes of one token in this layer on one GPU [bytes].
        mla: True for an MLA latent (vLLM ``MLAAttentionSpec``: same sizing,
            one latent "head", no factor 2).
        compressed: True for a DeepSeek-V4 CSA / HCA layer priced at its amortized
            per-token bytes (:class:`planner.model.sparse.CompressedAttention`); its page
            may be padded to the pool's page (design note 5, an estimate).
        padded_page_bytes: Page after that padding (0 = unpadded).
    """

    block_size: int
    bytes_per_token: int
    mla: bool = False
    compressed: bool = False
    padded_page_bytes: int = 0

    kind = "full"

    @property
    def page_size_bytes(self) -> int:
        """One layer, one block [bytes]."""
        return self.padded_page_bytes or self.block_size * self.bytes_per_token

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Blocks one request of ``max_model_len`` needs: ``ceil(max_model_len / B)``."""
        return ceil_div(max_model_len, self.block_size)

    def max_memory_usage_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Most bytes one request can hold in this layer [bytes]."""
        return self.blocks_per_request(max_model_len, max_num_batched_tokens) * self.page_size_bytes

    def with_block_size(self, block_size: int):
        """The same layer with another block size (page grows proportionally, padding dropped)."""
        return replace(self, block_size=block_size, padded_page_bytes=0)


@dataclass(frozen=True, kw_only=True)
class SlidingWindowPages(FullAttentionPages):
    """A sliding-window layer (vLLM ``SlidingWindowSpec``), see design note 2.

    Attributes:
        sliding_window: Window ``w`` [tokens].
    """

    sliding_window: int

    kind = "sliding_window"

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """``ceil(min(w - 1 + max_num_batched_tokens, max_model_len) / B) + 1`` blocks."""
        tokens = min(self.sliding_window - 1 + max_num_batched_tokens, max_model_len)
        return ceil_div(tokens, self.block_size) + 1


@dataclass(frozen=True, kw_only=True)
class ChunkedLocalPages(FullAttentionPages):
    """A chunked-local layer (vLLM ``ChunkedLocalAttentionSpec``), see design note 3.

    Attributes:
        attention_chunk_size: Chunk [tokens].
    """

    attention_chunk_size: int

    kind = "chunked_local"

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """``ceil(min(chunk + max_num_batched_tokens, max_model_len) / B)`` blocks."""
        tokens = min(self.attention_chunk_size + max_num_batched_tokens, max_model_len)
        return ceil_div(tokens, self.block_size)


@dataclass(frozen=True, kw_only=True)
class MambaPages:
    """A Mamba / linear-attention layer: one constant-size state page per request.

    Attributes:
        block_size: Tokens per block of the attention layers it shares a pool with.
        state_bytes: Conv + SSM state of one request on one GPU [bytes].
        padded_page_bytes: Page after padding to the attention page (0 = unpadded).
        pages_per_request: State pages one request holds: 1 with ``mamba_cache_mode`` "none", 2 with
            "align" (prefix caching keeps the state of the last cached block beside the running one).

    Sources: vLLM ``MambaSpec.page_size_bytes`` / ``max_memory_usage_bytes``
    (``mamba_cache_mode`` "none": one page per request without speculative decoding, "align": two).
    """

    block_size: int
    state_bytes: int
    padded_page_bytes: int = 0
    pages_per_request: int = 1

    kind = "mamba"

    @property
    def page_size_bytes(self) -> int:
        return self.padded_page_bytes or self.state_bytes

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """:attr:`pages_per_request` blocks, whatever the length."""
        return self.pages_per_request

    def max_memory_usage_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        return self.page_size_bytes * self.pages_per_request

    def with_block_size(self, block_size: int):
        return replace(self, block_size=block_size)


PageSpec = FullAttentionPages | SlidingWindowPages | ChunkedLocalPages | MambaPages


def layer_pages(layer: LayerSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int,
                *, hybrid_allocator: bool = True) -> PageSpec | None:
    """The page spec of one decoder layer on one GPU, or None when it caches nothing.

    With ``hybrid_allocator`` False (vLLM before v0.10, or
    ``--disable-hybrid-kv-cache-manager``) sliding and chunked layers are priced
    as full attention. Per-token bytes follow :mod:`planner.model.layers` (KV heads per
    GPU ``max(1, kv_heads // tp)``; an MLA latent on every GPU).

    Sources: vllm/v1/kv_cache_interface.py; ``unify_hybrid_kv_cache_specs``
    (vllm/v1/core/kv_cache_utils.py).
    """
    if isinstance(layer, NoCache):
        return None
    if isinstance(layer, RecurrentState):
        return MambaPages(block_size=block_size,
                          state_bytes=layer.engine_bytes_per_sequence(dtypes, tensor_parallel_size))
    per_token = layer.bytes_per_token(dtypes, tensor_parallel_size)
    if isinstance(layer, MLAAttention):
        return FullAttentionPages(block_size=block_size, bytes_per_token=per_token, mla=True)
    if isinstance(layer, CompressedAttention):
        return FullAttentionPages(block_size=block_size, bytes_per_token=per_token, compressed=True)
    if hybrid_allocator and isinstance(layer, SlidingWindowAttention):
        return SlidingWindowPages(block_size=block_size, bytes_per_token=per_token,
                                  sliding_window=layer.sliding_window)
    if hybrid_allocator and isinstance(layer, ChunkedLocalAttention):
        return ChunkedLocalPages(block_size=block_size, bytes_per_token=per_token,
                                 attention_chunk_size=layer.attention_chunk_size)
    if isinstance(layer, FullAttention):
        return FullAttentionPages(block_size=block_size, bytes_per_token=per_token)
    raise ValueError(f"unsupported layer spec {type(layer).__name__}")


def layer_page_specs(layer: LayerSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int,
                     *, hybrid_allocator: bool = True) -> tuple[PageSpec, ...]:
    """Every page spec one decoder layer adds on one GPU: :func:`layer_pages`, and for a
    DeepSeek-V4 compressed layer its sliding K=V window as a second, sliding-window spec.

    A CSA / HCA layer keeps the last ``sliding_window`` tokens of one K=V head beside its
    compressed entries (:mod:`planner.model.sparse` design note 2); the engine prices that
    window like a sliding-window layer (design note 5: an estimate, vLLM's allocator for
    the model is not modelled). Worked example, V4-Flash CSA layer, bf16, block 16: a
    compressed spec of 289 B per token and a window spec of 1,024 B per token, window 128.
    """
    spec = layer_pages(layer, dtypes, tensor_parallel_size, block_size, hybrid_allocator=hybrid_allocator)
    if spec is None:
        return ()
    if not isinstance(layer, CompressedAttention):
        return (spec,)
    row = dtypes.kv.bytes_for(layer.kv_heads_per_gpu(tensor_parallel_size) * layer.head_dim)
    if not hybrid_allocator:
        return (spec, FullAttentionPages(block_size=block_size, bytes_per_token=row))
    return (spec, SlidingWindowPages(block_size=block_size, bytes_per_token=row, sliding_window=layer.sliding_window))


def mamba_hybrid_block_size(attention_bytes_per_token: int, mamba_state_bytes: int,
                            alignment: int = MAMBA_BLOCK_ALIGNMENT) -> int:
    """Attention block size of an attention + Mamba hybrid [tokens].

    The smallest multiple of ``alignment`` whose attention page holds at least one
    Mamba state: ``alignment x ceil(state / (alignment x per_token))``.
    Worked example: 4 KiB/token attention layer, 1 MiB state, alignment 16:
    16 x ceil(1 MiB / 64 KiB) = 256 tokens.

    Sources: ``HybridAttentionMambaModelConfig.verify_and_update_config``
    (vllm/model_executor/models/config.py).
    """
    return alignment * ceil_div(mamba_state_bytes, alignment * attention_bytes_per_token)


@dataclass(frozen=True, kw_only=True)
class KVLayout:
    """How one GPU's layers share its KV pool.

    Attributes:
        groups: One tuple of layer specs per KV-cache group.
        bytes_per_block: Bytes one block of the shared pool costs on this GPU [bytes].
        group_size: Layers per group (tensors sharing a block).
        uniform: True when every layer has the same spec (one group).
        padding_layers: Layers added to fill the last group of a kind (vLLM warns).
    """

    groups: tuple[tuple[PageSpec, ...], ...]
    bytes_per_block: int
    group_size: int
    uniform: bool
    padding_layers: int = 0

    @property
    def num_groups(self) -> int:
        return len(self.groups)

    @property
    def padded_estimate(self) -> bool:
        """True when a compressed layer's page was padded to the pool's page (design note 5: an estimate)."""
        return any(getattr(spec, "padded_page_bytes", 0) and getattr(spec, "compressed", False)
                   for group in self.groups for spec in group)

    @property
    def min_block_size(self) -> int:
        """Smallest block size over groups [tokens] (used by the hybrid-era token print)."""
        return min(group[0].block_size for group in self.groups)

    @property
    def block_size(self) -> int:
        """Block size of the first group [tokens]."""
        return self.groups[0][0].block_size

    def num_blocks(self, available_bytes: int) -> int:
        """Blocks of the pool that fit in ``available_bytes`` (0 when negative).

        Sources: vLLM ``get_num_blocks`` (available // page_size // num_layers).
        """
        if available_bytes <= 0 or self.bytes_per_block <= 0:
            return 0
        return available_bytes // self.bytes_per_block

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Pool blocks one request of ``max_model_len`` needs: the sum over groups.

        Each distinct first spec is priced once and multiplied by its group count
        (:attr:`group_spec_counts`); the sum is the same.

        Sources: vLLM ``get_max_concurrency_for_kv_cache_config``.
        """
        total = 0
        for spec, count in self.group_spec_counts:
            total += count * spec.blocks_per_request(max_model_len, max_num_batched_tokens)
        return total

    def held_blocks_per_request(self, max_model_len: int, batched_tokens: int = 1) -> int:
        """Pool blocks a request of ``max_model_len`` tokens holds with ``batched_tokens`` in its step
        (design note 6): :meth:`blocks_per_request`, whose groups each take whole pool blocks. One
        batched token (a decode step): a sliding-window group keeps ``ceil(min(w, L) / B) + 1`` blocks,
        a chunked-local group ``ceil(min(chunk + 1, L) / B)``, a full-attention group ``ceil(L / B)``.
        """
        return self.blocks_per_request(max_model_len, batched_tokens)

    @cached_property
    def group_spec_counts(self) -> tuple[tuple[PageSpec, int], ...]:
        """``(first spec of a group, number of groups it starts)``, in order of first appearance."""
        counts: dict[PageSpec, int] = {}
        for group in self.groups:
            counts[group[0]] = counts.get(group[0], 0) + 1
        return tuple(counts.items())

    def needed_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """Bytes one request of ``max_model_len`` needs: sum over layers [bytes].

        Each distinct layer spec is priced once and multiplied by its layer count
        (:attr:`spec_counts`); the sum is the same.

        Sources: vLLM ``_check_enough_kv_cache_memory`` (``max_memory_usage_bytes``
        summed over every layer spec).
        """
        total = 0
        for spec, count in self.spec_counts:
            total += count * spec.max_memory_usage_bytes(max_model_len, max_num_batched_tokens)
        return total

    def start_check_bytes(self, max_model_len: int, max_num_batched_tokens: int, padded: bool) -> int:
        """The KV one request of ``max_model_len`` needs in the engine's start check [bytes]: with ``padded``
        (vLLM >= v0.21, ``_max_memory_usage_bytes_from_groups`` in vllm/v1/core/kv_cache_utils.py) its blocks in
        every KV-cache group times the pool's bytes per block, so a short group's padding layers count (Gemma 3
        27B: 52 sliding layers in 6 groups of 10); else :meth:`needed_bytes`, every layer's bytes (older
        ``max_memory_usage_bytes`` over the layer specs)."""
        if padded:
            return self.blocks_per_request(max_model_len, max_num_batched_tokens) * self.bytes_per_block
        return self.needed_bytes(max_model_len, max_num_batched_tokens)

    @cached_property
    def spec_counts(self) -> tuple[tuple[PageSpec, int], ...]:
        """``(spec, number of layers with it)`` over every group, in order of first appearance."""
        counts: dict[PageSpec, int] = {}
        for group in self.groups:
            for spec in group:
                counts[spec] = counts.get(spec, 0) + 1
        return tuple(counts.items())


def _unify_pages(specs: list[PageSpec]) -> list[PageSpec]:
    """Grow block sizes so every page has the largest page size.

    Raises:
        ValueError: a page size that does not divide the largest one (vLLM raises
            "The page size of the layer is not divisible by the maximum page size").
    """
    target = max(spec.page_size_bytes for spec in specs)
    out = []
    for spec in specs:
        page = spec.page_size_bytes
        if page == target:
            out.append(spec)
            continue
        if isinstance(spec, MambaPages):
            out.append(replace(spec, padded_page_bytes=target))
            continue
        if getattr(spec, "compressed", False) and target % page and page < target:  # design note 5
            grown = spec.with_block_size(spec.block_size * (target // page))
            out.append(replace(grown, padded_page_bytes=target))
            continue
        if target % page:
            raise ValueError(
                f"page sizes {page} and {target} bytes cannot be unified (not a multiple); "
                "pass --block-size so that the pages divide each other, or disable the hybrid allocator")
        out.append(spec.with_block_size(spec.block_size * (target // page)))
    return out


def kv_layout(specs: list[PageSpec | None]) -> KVLayout:
    """Group one GPU's layer specs the way vLLM's allocator does (design note 4).

    Raises:
        ValueError: no layer holds a cache, or pages cannot be unified.

    Sources: vllm/v1/core/kv_cache_utils.py ``get_kv_cache_groups``.
    """
    specs = [s for s in specs if s is not None]
    if not specs:
        raise ValueError("no layer on this GPU holds a KV cache")
    if all(s == specs[0] for s in specs):
        return KVLayout(groups=(tuple(specs),), bytes_per_block=specs[0].page_size_bytes * len(specs),
                        group_size=len(specs), uniform=True)
    kinds = {type(s) for s in specs}
    if len(kinds) == 1 and not isinstance(specs[0], MambaPages) and len({s.block_size for s in specs}) == 1 \
            and all(getattr(s, "sliding_window", None) == getattr(specs[0], "sliding_window", None) for s in specs):
        # Same kind, different per-layer sizes (UniformTypeKVCacheSpecs): one group.
        return KVLayout(groups=(tuple(specs),), bytes_per_block=sum(s.page_size_bytes for s in specs),
                        group_size=len(specs), uniform=False)
    unified = _unify_pages(specs)
    by_spec: dict[PageSpec, list[PageSpec]] = {}
    for spec in unified:
        by_spec.setdefault(spec, []).append(spec)
    counts = [len(v) for v in by_spec.values()]
    group_size = min(counts)
    if max(counts) < 1.5 * min(counts):
        group_size = max(counts)
    groups: list[tuple[PageSpec, ...]] = []
    padding = 0
    for layers in by_spec.values():
        for start in range(0, len(layers), group_size):
            chunk = tuple(layers[start:start + group_size])
            padding += group_size - len(chunk)
            groups.append(chunk)
    page = unified[0].page_size_bytes
    return KVLayout(groups=tuple(groups), bytes_per_block=page * group_size, group_size=group_size,
                    uniform=False, padding_layers=padding)


def max_concurrency(layout: KVLayout, num_blocks: int, max_model_len: int, max_num_batched_tokens: int,
                    style: str = "blocks_per_request") -> Fraction:
    """Requests of ``max_model_len`` tokens the pool holds at once, as vLLM computes it.

    ``blocks_per_request`` (June 2025 on): ``num_blocks / sum_groups blocks``;
    ``tokens_over_len`` (V0 and V1 before June 2025): ``num_blocks x B / max_model_len``.
    Worked example (V15, gpt-oss-120b): 330,018 / (1024 + 137) = 284.25.
    :func:`concurrency_ratio` gives the same value as two integers.

    Sources: vLLM ``get_max_concurrency_for_kv_cache_config`` and the V0 / early
    V1 ``_report_kv_cache_config``.
    """
    return Fraction(*concurrency_ratio(layout, num_blocks, max_model_len, max_num_batched_tokens, style))


def decoding_ratio(layout: KVLayout, num_blocks: int, max_model_len: int,
                   max_num_batched_tokens: int) -> tuple[int, int]:
    """Requests of ``max_model_len`` tokens the pool holds while they decode, one prefill chunk beside them
    (design note 6), as ``(blocks for decoding requests, blocks one of them holds)``: integers, so whole
    requests are ``first // second`` and the figure ``first / second``.

    ``(num_blocks - (prefill - decode), decode)``, where ``decode`` and ``prefill`` are
    :meth:`KVLayout.held_blocks_per_request` with one and with ``max_num_batched_tokens`` batched tokens:
    every request holds its decoding blocks, and the step's prefill chunk (at most
    ``max_num_batched_tokens`` over all requests) needs its window's extra blocks once. The first is 0 when
    that chunk does not fit; the ratio equals the printed concurrency without sliding or local layers.
    Worked example (design note 6, Gemma 3 27B, 58,214 blocks): (58,214 - 5,510 + 2,438) / 2,438 = 22.62,
    where vLLM prints 58,214 / 5,510 = 10.57.

    Raises:
        ValueError: ``max_model_len < 1``.
    """
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1, got {max_model_len}")
    decode = layout.held_blocks_per_request(max_model_len, 1)
    spare = num_blocks - layout.held_blocks_per_request(max_model_len, max_num_batched_tokens) + decode
    return max(spare, 0), decode


def concurrency_ratio(layout: KVLayout, num_blocks: int, max_model_len: int, max_num_batched_tokens: int,
                      style: str = "blocks_per_request", *, blocks_per_request: int | None = None) -> tuple[int, int]:
    """:func:`max_concurrency` as ``(numerator, denominator)``, integers not reduced (denominator >= 1).

    ``numerator / denominator`` is the same float as ``float(max_concurrency(...))``
    (both are correctly rounded quotients of the same rational), without building a ``Fraction``.
    ``blocks_per_request``: ``layout.blocks_per_request(max_model_len, max_num_batched_tokens)``
    when the caller has it already.

    Raises:
        ValueError: ``max_model_len < 1``.
    """
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1, got {max_model_len}")
    if style == "tokens_over_len":
        return num_blocks * layout.block_size, max_model_len
    if blocks_per_request is None:
        blocks_per_request = layout.blocks_per_request(max_model_len, max_num_batched_tokens)
    return num_blocks, blocks_per_request


def printed_tokens(layout: KVLayout, num_blocks: int, style: str, concurrency: Fraction,
                   max_model_len: int) -> int:
    """The token capacity the engine prints ("GPU KV cache size: N tokens").

    * ``blocks`` / ``blocks_x_block_size``: ``num_blocks x B`` (V0 and early V1
      print the blocks; this is their token equivalent).
    * ``blocks_per_group`` (v0.10-v0.20): ``num_blocks // num_groups x min_block_size``.
    * ``concurrency_x_len`` (2026): ``int(concurrency x max_model_len)``.

    Sources: vLLM ``_report_kv_cache_config`` across PRs #12569, #13596, #38364, #40694.
    """
    ratio = (concurrency.numerator, concurrency.denominator)
    return printed_tokens_for_ratio(layout, num_blocks, style, ratio, max_model_len)


def printed_tokens_for_ratio(layout: KVLayout, num_blocks: int, style: str, concurrency: tuple[int, int],
                             max_model_len: int) -> int:
    """:func:`printed_tokens` with the concurrency as :func:`concurrency_ratio` gives it.

    ``int(concurrency x max_model_len)`` is ``numerator x max_model_len // denominator``
    (non-negative, so truncation is the floor).
    """
    if style == "blocks_per_group":
        return num_blocks // layout.num_groups * layout.min_block_size
    if style == "concurrency_x_len":
        numerator, denominator = concurrency
        return numerator * max_model_len // denominator
    return num_blocks * layout.block_size


def max_model_len_that_fits(layout: KVLayout, available_bytes: int, max_num_batched_tokens: int,
                            limit: int, *, padded: bool = False) -> int:
    """Largest ``max_model_len <= limit`` whose one request fits in ``available_bytes``.

    Binary search on :meth:`KVLayout.start_check_bytes` (``padded`` as there; non-decreasing in the
    length); 0 when not even one token fits.

    Sources: vLLM ``_estimate_max_model_len_from_groups`` (binary search).
    """

    def fits(length: int) -> bool:
        return layout.start_check_bytes(length, max_num_batched_tokens, padded) <= available_bytes

    if available_bytes <= 0:
        return 0
    return max(0, largest_fitting(fits, 1, limit))
