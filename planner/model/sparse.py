"""Cache specs of the 2025-26 attention designs: sparse-attention indexers, compressed attention, shared K=V.

Each class extends a kind of :mod:`planner.model.layers` with what the design adds,
so every engine view that knows the base kind (pages, tensor parallelism, the MHA
variants) handles it unchanged; only the per-token bytes differ. Each answers
``bytes_per_token`` and ``bytes_per_sequence(num_tokens)`` like its base, and
``transformers_bytes_per_token`` where transformers' own cache stores a token
differently from the serving engines (:mod:`planner.engines.hf_transformers`).

Design notes (assumptions):
    1. *Indexer keys* (DeepSeek-V3.2 / GLM-5 DSA "lightning indexer", MiniMax-M3
       sparse attention): every layer with an indexer caches one extra key of
       ``index_head_dim`` values per token. Serving engines store it as FP8 e4m3
       plus one fp32 scale per 128 values, packed as bytes:
       ``index_head_dim + index_head_dim // 128 * 4`` = 132 B for 128 values,
       whatever the KV dtype (vLLM ``DeepseekV32IndexerCache``, an
       ``MLAAttentionSpec`` of ``torch.uint8``; SGLang ``NSATokenToKVPool``).
       transformers keeps it in the model dtype (``DynamicIndexedLayer.indexer_keys``,
       ``MiniMaxM3VLSparseCacheLayer.idx_keys``): 256 B in bf16.
       Worked example, DeepSeek-V3.2 bf16 per layer per token: MLA latent
       (512 + 64) x 2 = 1,152 B + indexer 132 B = 1,284 B in the engines;
       1,152 + 256 = 1,408 B in transformers.
    2. *Compressed attention* (DeepSeek-V4): every layer keeps a sliding window of
       ``sliding_window`` tokens of one ``head_dim``-wide head whose K and V are
       the same tensor; CSA layers add one compressed entry per
       ``compress_ratio`` (4) tokens and the indexer keys of those entries, HCA
       layers one compressed entry per 128 tokens. The engines' per-token price
       of a CSA/HCA layer is the compressed part spread over the tokens,
       ``ceil((bytes(head_dim) + indexer) / compress_ratio)``; the sliding window
       (at most ``sliding_window x bytes(head_dim)`` per layer and sequence,
       128 KiB in bf16) is not added, because the planner's per-layer profile has
       one growth rate per layer. Worked example, V4-Flash CSA layer in bf16:
       ceil((1,024 + 132) / 4) = 289 B per token.
    3. *Shared K=V* (DeepSeek-V4): one tensor serves as K and V, so a token costs
       one ``head_dim`` row in the engines, not two. transformers keeps two copies
       on the sliding-only layers (a plain ``DynamicSlidingWindowLayer`` updated
       with ``(kv, kv)``) and one on CSA / HCA layers (``DeepseekV4HCACache`` sets
       ``values = keys``: exposed twice, stored once).
    4. *transformers' DeepSeek-V4 compressor state* (CSA / HCA layers, checked
       byte for byte by ``python -m planner verify``): besides the window and the
       compressed entries (model dtype), each compressor keeps the ``n mod ratio``
       source tokens of the unfinished window as *views* (``buffer_kv`` /
       ``buffer_gate``, ``c x width`` wide, ``c`` = 2 for CSA, 1 for HCA) into the
       projection of the last call: right after a prefill of ``n`` tokens they pin
       all ``n`` projected tokens, after a decode step ``((n - 1) mod ratio) + 1``.
       CSA layers also keep the last window's first series (``overlap_kv`` in the
       model dtype, ``overlap_gate`` in fp32: ``ratio x width`` each) once a window
       has closed, for the compressor and for the indexer (width ``index_head_dim``).
       Worked example, V4-Flash CSA layer, bf16, prefill n = 33: window 33 x 1,024
       + buffers 33 x (1,024 + 256) x 2 x 2 + 8 entries x (512 + 128) x 2
       + overlap 4 x 640 x 6 = 228,352 B of memory. After a decode step to
       n = 100,228 (783 x 128 + 4): CSA 128 x 1,024 + 4 x 1,280 x 2 x 2
       + 25,057 x 640 x 2 + 15,360 = 32,239,872 B; at n = 100,324 (783 x 128 + 100)
       HCA 128 x 1,024 + 100 x 512 x 2 x 2 + 783 x 1,024 = 1,137,664 B, both as
       measured (``tests/data/reference/deepseek_v4_transformers_cache.json``: 8 x 128
       and 783 x 128 tokens + 0, 1, 100, 127, per layer kind). The overlap gate is fp32
       because the gate gets the compressor's ``position_bias`` added, a parameter
       built in fp32 and kept there (``_keep_in_fp32_modules_strict``) by
       ``from_pretrained`` / ``from_config``. A model cast afterwards with
       ``.to(torch.bfloat16)`` casts it too and keeps ``ratio x width x 2`` =
       5,120 B less per CSA layer (107,520 B on V4-Flash, 153,600 B on V4-Pro, at every
       length past the first window); that cast is not modelled.

Sources: vLLM vllm/model_executor/models/deepseek_v2.py (``DeepseekV32IndexerCache``:
``head_dim = index_head_dim + index_head_dim // quant_block_size * 4``, dtype uint8);
transformers 5.24 cache_utils.py (``DynamicIndexedLayer``), models/minimax_m3_vl/
modeling_minimax_m3_vl.py (``MiniMaxM3VLSparseCacheLayer``), models/deepseek_v4/
modeling_deepseek_v4.py (``DeepseekV4HCACache.store_compression_weights``,
``DeepseekV4CSACache.update_overlap_state``, ``DeepseekV4CSACompressor.forward``,
``DeepseekV4PreTrainedModel._keep_in_fp32_modules_strict``); DeepSeek-V4
config.json (``compress_ratios``, ``sliding_window``, ``index_head_dim``).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.dtypes import FP32, StorageFormat
from planner.model.layers import (  # noqa: F401 - FP8_DS_MLA_SCALE_BLOCK, fp8_ds_mla_bytes re-exported
    FP8_DS_MLA_SCALE_BLOCK,
    CacheDtypes,
    FullAttention,
    MLAAttention,
    SlidingWindowAttention,
    _check_tp,
    fp8_ds_mla_bytes,
)
from planner.model.memo import model_memo, remember
from planner.units import ceil_div

INDEXER_QUANT_BLOCK = 128
"""Values per fp32 scale of an FP8 indexer key in the serving engines (design note 1)."""
INDEXER_SCALE_BYTES = 4
"""Bytes of one indexer-key scale (fp32)."""


FP8_DS_MLA_CACHE_DTYPES = frozenset({"auto", "fp8", "fp8_e4m3", "fp8_e5m2"})
"""``--kv-cache-dtype`` values vLLM (v0.11 and later) stores sparse-MLA layers as ``fp8_ds_mla`` for; only
``bfloat16`` keeps a bf16 cache (design note 1 of :mod:`planner.engines.vllm_kv_formats`)."""

def engine_indexer_bytes(index_head_dim: int) -> int:
    """Bytes one indexer key costs in a serving engine: FP8 values + one fp32 scale per 128.

    ``index_head_dim + index_head_dim // 128 * 4``; 128 values -> 132 B (design note 1).

    Sources: vLLM ``DeepseekV32IndexerCache``; SGLang ``NSATokenToKVPool``.
    """
    if index_head_dim < 1:
        raise ValueError(f"index_head_dim must be >= 1, got {index_head_dim}")
    return index_head_dim + index_head_dim // INDEXER_QUANT_BLOCK * INDEXER_SCALE_BYTES


@dataclass(frozen=True, kw_only=True)
class IndexedMLAAttention(MLAAttention):
    """An MLA layer with a sparse-attention indexer (DeepSeek-V3.2, GLM-5).

    Attributes:
        index_head_dim: Width of the cached indexer key [elements] (config
            ``index_head_dim``, 128).

    ``bytes_per_token``: the MLA latent in the KV dtype plus the engine's FP8
    indexer key (design note 1). Worked example, DeepSeek-V3.2 bf16:
    61 layers x (1,152 + 132) B = 78,324 B per token; with ``dtypes.fp8_ds_mla``
    (vLLM's default for this layer) 61 x (656 + 132) = 48,068 B.

    Sources: module design note 1.
    """

    index_head_dim: int

    kind = "mla_indexed"

    def indexer_bytes_per_token(self) -> int:
        """Engine bytes of the indexer key of one token [bytes]."""
        return engine_indexer_bytes(self.index_head_dim)

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        return super().bytes_per_token(dtypes, tensor_parallel_size) + self.indexer_bytes_per_token()

    def transformers_bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """Latent + rope key + indexer key, all in the model dtype (transformers' cache) [bytes]."""
        return super().bytes_per_token(dtypes, tensor_parallel_size) + dtypes.kv.bytes_for(self.index_head_dim)


def indexed_mla_layer(model) -> IndexedMLAAttention | None:
    """The first :class:`IndexedMLAAttention` layer of ``model`` (a ``ModelSpec``), or None: whether the model
    is a sparse-MLA one (DeepSeek-V3.2, GLM-5.x), which every engine view and the budget ask. Kept per model
    (:mod:`planner.model.memo`): the plans ask on every call."""
    memo = model_memo(model)
    found = memo.get("indexed_mla_layer", memo)  # the memo itself marks "not asked yet" (None is an answer)
    if found is memo:
        found = remember(memo, "indexed_mla_layer",
                         next((layer for layer in model.layers if isinstance(layer, IndexedMLAAttention)), None))
    return found


@dataclass(frozen=True, kw_only=True)
class IndexedAttention(FullAttention):
    """A GQA layer with a sparse-attention indexer key per token (MiniMax-M3 sparse layers).

    Attributes:
        index_head_dim: Width of the cached indexer key [elements] (config
            ``sparse_attention_config.sparse_index_dim``, 128); one key per token,
            shared by all index heads, so it is replicated under tensor parallelism.

    Worked example, MiniMax-M3 in bf16: K + V 2 x 4 x 128 x 2 B = 2,048 B + 132 B
    indexer = 2,180 B per layer per token (transformers: 2,048 + 256 = 2,304 B).

    Sources: module design note 1; transformers ``MiniMaxM3VLIndexer``
    (``idx_keys`` of shape ``(batch, 1, tokens, sparse_index_dim)``).
    """

    index_head_dim: int

    kind = "indexed_attention"

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        return super().bytes_per_token(dtypes, tensor_parallel_size) + engine_indexer_bytes(self.index_head_dim)

    def transformers_bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """K + V + indexer key in the model dtype (transformers' cache) [bytes]."""
        return super().bytes_per_token(dtypes, tensor_parallel_size) + dtypes.kv.bytes_for(self.index_head_dim)


@dataclass(frozen=True, kw_only=True)
class SharedKVSlidingAttention(SlidingWindowAttention):
    """A sliding-window layer whose K and V are one tensor (DeepSeek-V4 sliding layers).

    ``bytes_per_token`` is one row of ``kv_heads x head_dim`` (design note 3).
    Worked example, DeepSeek-V4-Flash: 1 head x 512 x 2 B = 1,024 B per token, at
    most 128 tokens.

    Sources: transformers ``DeepseekV4Attention`` (``cache.update(kv, kv, ...)``:
    "sliding where K==V"); DeepSeek-V4 config.json (``num_key_value_heads`` 1,
    ``head_dim`` 512, ``sliding_window`` 128).
    """

    kind = "sliding_attention_shared_kv"

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        return dtypes.kv.bytes_for(self.kv_heads_per_gpu(tensor_parallel_size) * self.head_dim)

    def transformers_bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """K and V as two copies, as transformers' ``DynamicSlidingWindowLayer`` keeps them (design note 3)."""
        return 2 * self.bytes_per_token(dtypes, tensor_parallel_size)


@dataclass(frozen=True, kw_only=True)
class CompressedAttention(FullAttention):
    """A DeepSeek-V4 CSA or HCA layer: sliding K=V window plus compressed entries.

    Attributes:
        sliding_window: Window of the K=V branch [tokens] (config ``sliding_window``).
        compress_ratio: Source tokens per compressed entry (config
            ``compress_ratios[i]``: 4 for CSA, 128 for HCA).
        index_head_dim: Indexer key width of a CSA layer [elements], 0 for HCA.

    ``bytes_per_token`` is the engines' amortized price of the compressed part,
    ``ceil((bytes(head_dim) + indexer key) / compress_ratio)`` (design note 2);
    :meth:`exact_bytes_per_sequence` adds the window.
    Worked example, V4-Flash in bf16: CSA ceil((1,024 + 132) / 4) = 289 B,
    HCA ceil(1,024 / 128) = 8 B per token.

    Sources: module design note 2.
    """

    sliding_window: int
    compress_ratio: int
    index_head_dim: int = 0

    kind = "compressed_attention"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.compress_ratio < 1 or self.sliding_window < 1 or self.index_head_dim < 0:
            raise ValueError(
                f"CompressedAttention needs compress_ratio >= 1, sliding_window >= 1 and index_head_dim >= 0, "
                f"got {self.compress_ratio}, {self.sliding_window} and {self.index_head_dim}")

    def entry_bytes(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """Engine bytes of one compressed entry: the K=V row plus the indexer key (CSA) [bytes]."""
        _check_tp(tensor_parallel_size)
        row = dtypes.kv.bytes_for(self.kv_heads_per_gpu(tensor_parallel_size) * self.head_dim)
        return row + (engine_indexer_bytes(self.index_head_dim) if self.index_head_dim else 0)

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        return ceil_div(self.entry_bytes(dtypes, tensor_parallel_size), self.compress_ratio)

    def transformers_cache_bytes(self, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1,
                                 phase: str = "decode") -> tuple[int, int]:
        """``(tensor bytes, memory bytes)`` transformers' CSA / HCA cache layer holds (design note 4).

        Window: the K=V tensor exposed as keys and values, ``min(n, w - 1)`` tokens
        (memory: ``n`` after a prefill, ``min(n, w)`` after a decode step). Compressed
        entries ``floor(n / ratio) x (head_dim + index_head_dim)``; buffers
        ``n mod ratio`` tokens of ``c x (head_dim + index_head_dim)`` for kv and for
        gate (memory: ``n`` or ``((n - 1) mod ratio) + 1`` tokens); CSA overlap state
        ``ratio x (head_dim + index_head_dim) x (model dtype + fp32)`` once ``n >= ratio``.

        Raises:
            ValueError: ``num_tokens < 0``.
        """
        self.tokens_held(num_tokens)
        _check_tp(tensor_parallel_size)
        b = dtypes.kv.bytes_for(1)
        width = self.head_dim + self.index_head_dim
        series = 2 if self.index_head_dim else 1  # CSA compressors project two overlapping series
        n, r, w = num_tokens, self.compress_ratio, self.sliding_window
        window_mem = n if phase == "prefill" else min(n, w)
        pinned = n if phase == "prefill" else ((n - 1) % r) + 1 if n else 0
        entries = n // r * width * b
        overlap = r * width * (b + 4) if self.index_head_dim and n >= r else 0
        row = self.head_dim * b
        tensor = 2 * min(n, w - 1) * row + (n % r) * series * width * b * 2 + entries + overlap
        memory = window_mem * row + pinned * series * width * b * 2 + entries + overlap
        return tensor, memory

    def exact_bytes_per_sequence(self, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """Window plus whole compressed entries, unpaged [bytes].

        ``min(n, w) x bytes(head_dim) + floor(n / ratio) x entry_bytes``. Worked
        example, V4-Flash CSA layer, bf16, n = 1,000: 128 x 1,024 + 250 x 1,156 = 420,072 B.
        """
        self.tokens_held(num_tokens)
        row = dtypes.kv.bytes_for(self.kv_heads_per_gpu(tensor_parallel_size) * self.head_dim)
        entries = num_tokens // self.compress_ratio
        return min(num_tokens, self.sliding_window) * row + entries * self.entry_bytes(dtypes, tensor_parallel_size)


@dataclass(frozen=True, kw_only=True)
class AttentionWithState(FullAttention):
    """A layer that keeps a KV cache *and* a recurrent state (transformers layer type ``hybrid``:
    Falcon-H1's parallel attention + Mamba2 mixer, Zamba2's shared-attention layers).

    Attributes:
        conv_state_elements, ssm_state_elements, ssm_state_format: As
            :class:`planner.model.layers.RecurrentState`.

    ``bytes_per_token`` is the attention's; ``bytes_per_sequence`` adds the constant state
    (conv in ``CacheDtypes.state``, SSM in ``ssm_state_format`` or ``CacheDtypes.state``).
    Worked example, one layer, 1 KV head x 64, conv 1,000 and SSM 2,000 elements, bf16, 10
    tokens: 10 x 256 B + 3,000 x 2 B = 8,560 B.

    Sources: transformers cache_utils.py ``LinearAttentionAndFullAttentionLayer``
    (a ``DynamicLayer`` and a ``LinearAttentionLayer`` in one).
    """

    conv_state_elements: int
    ssm_state_elements: int
    ssm_state_format: StorageFormat | None = None

    kind = "attention_with_state"

    def state_bytes(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1, *, ssm: StorageFormat | None = None) -> int:
        """Conv + SSM state of one sequence on one GPU [bytes]."""
        _check_tp(tensor_parallel_size)
        ssm_format = ssm or self.ssm_state_format or dtypes.state
        return (dtypes.state.bytes_for(ceil_div(self.conv_state_elements, tensor_parallel_size))
                + ssm_format.bytes_for(ceil_div(self.ssm_state_elements, tensor_parallel_size)))

    def bytes_per_sequence(self, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1,
                           block_size: int = 1) -> int:
        attention = super().bytes_per_sequence(num_tokens, dtypes, tensor_parallel_size, block_size)
        return attention + self.state_bytes(dtypes, tensor_parallel_size)

    def transformers_cache_bytes(self, num_tokens: int, dtypes: CacheDtypes, tensor_parallel_size: int = 1,
                                 phase: str = "decode") -> tuple[int, int]:
        """Every token of K and V, the conv state in the model dtype and the SSM state in fp32 (transformers)."""
        self.tokens_held(num_tokens)
        total = num_tokens * FullAttention.bytes_per_token(self, dtypes, tensor_parallel_size)
        total += self.state_bytes(dtypes, tensor_parallel_size, ssm=FP32)
        return total, total
