"""vLLM's KV cache for DeepSeek-V4 (v0.22-v0.23 allocator): five cache kinds, tuple-packed groups.

vLLM does not treat a DeepSeek-V4 layer as one cache. It registers up to five cache layers per decoder
layer, each with its own ``KVCacheSpec``, and groups them with an allocator written for this model.

Design notes (assumptions, with the worked example of reference case N11: V4-Flash, ``--block-size 256``,
``--kv-cache-dtype fp8``, ``max_model_len`` 30,000, 16,384 batched tokens):
    1. *Caches per layer.* Every decoder layer keeps a sliding K=V cache of ``sliding_window`` (128)
       tokens in 64-token blocks (``DeepseekV4SWACache``, a ``SlidingWindowMLASpec``). A layer with
       ``compress_ratio`` r > 1 adds its compressed K (an ``MLAAttentionSpec`` of ``--block-size`` source
       tokens, ``block_size // r`` stored entries) and its compressor's state (``CompressorStateCache``:
       fp32 ``kv`` and ``score`` rows of ``coff x head_dim`` each, ``coff`` 2 for r = 4 and 1 for r = 128,
       a ``SlidingWindowMLASpec`` of window ``coff x r`` in blocks of 4 (r = 4) or 8 (r = 128) tokens).
       A CSA layer (r = 4) also keeps its indexer's keys (``DeepseekV4IndexerCache``: 128 FP8 values and
       one fp32 scale = 132 B per entry) and the indexer compressor's state (``head_dim`` 128). An MTP
       (drafter) layer has ``compress_ratio`` 1: only the sliding cache.
    2. *Bytes.* Any fp8 ``--kv-cache-dtype`` becomes ``fp8_ds_mla``: 448 FP8 NoPE + 64 bf16 RoPE values +
       8 B of scales = 584 B per stored entry, for the sliding and the compressed K alike; v0.22 asserts an
       fp8 cache for this model. Every page is rounded up to FlashMLA's 576-byte alignment. V4-Flash:
       sliding 64 x 584 = 37,376 -> 37,440 B; CSA K 64 x 584 -> 37,440; HCA K 2 x 584 = 1,168 -> 1,728;
       indexer keys 64 x 132 = 8,448 -> 8,640; CSA state 4 x 2 x 2 x 512 x 4 = 32,768 -> 32,832; HCA
       state 8 x 2 x 512 x 4 = 32,768 -> 32,832; indexer state 4 x 2 x 2 x 128 x 4 = 8,192 -> 8,640 B.
    3. *Groups.* The compressed K and indexer keys form one group (all at ``--block-size``); the sliding
       caches are grouped by ``(block_size, sliding_window)``: the sliding K=V caches, the CSA + indexer
       states, the HCA states. A "layer tuple" holds one page of each page size of the compressed group
       (37,440 + 8,640 + 1,728 = 47,808 B). Each group counts its tuples (its most common page size's
       layers: 21, 43, 21, 20); the tuple count ``d`` minimises the padding of all counts up to a
       multiple of it, from the compressed group's count up (22); a sliding group with more layers is
       split into ``ceil(n / d)`` groups (43 -> 22 + 21). A state page is padded up to the nearest page
       size of the compressed group (32,832 -> 37,440; 8,640 stays).
    4. *Pool.* All groups share one pool whose block is ``d`` tuples (22 x 47,808 = 1,051,776 B):
       ``num_blocks = available // that``. A request holds, in every group, the most blocks any of its
       caches needs (compressed: ``ceil(L / block_size)``; sliding: ``ceil(min(w - 1 + batched, L) / B)
       + 1``), and each group's block is a whole pool block, so one request of ``L`` tokens needs
       ``d x tuple bytes x sum over groups of blocks``. N11: 118 + 259 + 259 + 4,099 + 2,065 = 6,800
       blocks = 7,152,076,800 B = 6.66 GiB ("6.66 GiB KV cache is needed"); the largest length that fits
       5.44 GiB is 13,528 (the log's estimate, for an available memory between 5.4404 and 5.4423 GiB).
       The compressor states dominate: 6,164 of those 6,800 blocks, and they grow with the batched
       tokens, not with the length, up to ``L``.
    5. *Printed concurrency.* ``get_max_concurrency_for_kv_cache_config`` divides the blocks by
       ``ceil(sum over groups of blocks x group page bytes / compressed group page bytes)``, which weighs
       a state group by its own pages, not by the pool block each of its blocks takes: the print
       overstates the requests the pool holds at ``L`` (admission takes the sum of blocks, note 4).
       The plan prints what vLLM prints.
    6. *Pipeline parallelism.* Groups are formed over the whole model, then each worker keeps its own
       layers; a group with none of them keeps its whole-model spec in the memory check (v0.22's
       ``_project_kv_cache_groups_to_worker``).
    7. *Prefix caching* changes only the hash granularity (the gcd of the group block sizes,
       ``resolve_kv_cache_block_sizes``), not what a request holds.
    8. *Releases.* v0.24-v0.25 pack the pages per page-size slot (``_get_kv_cache_config_packed``: the
       pool block is the sum of each page size times its largest layer count, 1,039,680 B for N11,
       about 1 % more blocks) with the same memory check; v0.26+ also reserve the sliding caches for
       every in-flight batch (``VllmConfig.max_in_flight_tokens``: 2 x ``max_num_batched_tokens`` with
       async scheduling) and v0.27+ stop padding the states. Those changes are not modelled: the plan
       follows v0.22-v0.23 and says so.
    9. *GPUs.* vLLM's NVIDIA attention for this model is FlashMLA sparse or FlashInfer's V4 kernels, built for
       compute capability 9.0 and up; an 8.x card does not start (:func:`gpu_refusal`). ROCm has its own path.

Sources (vLLM v0.22.0): vllm/v1/kv_cache_interface.py (``MLAAttentionSpec`` and
``SlidingWindowMLASpec`` ``real_page_size_bytes``, ``_apply_alignment_padding``,
``SlidingWindowSpec.max_admission_blocks_per_request``, ``UniformTypeKVCacheSpecs``);
vllm/v1/core/kv_cache_utils.py (``group_and_unify_kv_cache_specs``, ``_approximate_gcd``,
``_get_kv_cache_groups_uniform_groups``, ``_get_kv_cache_config_deepseek_v4``,
``_max_memory_usage_bytes_from_groups``, ``_estimate_max_model_len_from_groups``,
``get_max_concurrency_for_kv_cache_config``, ``_project_kv_cache_groups_to_worker``);
vllm/models/deepseek_v4/attention.py (``DeepseekV4MLAAttention``, ``DeepseekV4IndexerCache``,
``DeepseekV4Indexer``); vllm/v1/attention/backends/mla/flashmla_sparse.py
(``FlashMLASparseBackend.supports_compute_capability``, note 9);
vllm/models/deepseek_v4/compressor.py (``CompressorStateCache``,
``DeepseekCompressor``); vllm/v1/attention/backends/mla/sparse_swa.py (``DeepseekV4SWACache``,
``DeepseekSparseSWABackend.get_preferred_block_size``); vllm/models/deepseek_v4/nvidia/model.py
(per-layer ``compress_ratio``, 1 past ``num_hidden_layers``); releases v0.24.0-v0.29.0 for note 8.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from planner.engines.pages import FullAttentionPages, KVLayout, SlidingWindowPages
from planner.model import ModelSpec
from planner.model.sparse import CompressedAttention, SharedKVSlidingAttention, engine_indexer_bytes
from planner.units import ceil_div

PROFILES = frozenset({"vllm-v0.28", "vllm"})
"""vLLM profiles that run DeepSeek-V4 with this allocator (v0.22+; note 8 for the later releases)."""

DEFAULT_BLOCK_SIZE = 256
"""``--block-size`` vLLM picks for DeepSeek-V4 when none is given [tokens] (the sliding cache's backend
prefers 256: ``DeepseekSparseSWABackend.get_preferred_block_size``)."""

FLASHMLA_ALIGNMENT = 576
"""Every DeepSeek-V4 page is rounded up to a multiple of this [bytes] (FlashMLA)."""

FP8_DS_MLA_ENTRY_BYTES = 448 + 64 * 2 + 8
"""One stored K=V entry in ``fp8_ds_mla``: 448 FP8 NoPE values, 64 bf16 RoPE values, 8 B scales [bytes]."""

SLIDING_BLOCK_SIZE = 64
"""Block of the sliding K=V cache [tokens]."""

STATE_BLOCK_SIZES = {4: 4, 128: 8}
"""Block of a compressor state cache by ``compress_ratio`` [tokens]."""

STATE_BYTES_PER_VALUE = 4
"""Compressor states are fp32 [bytes]."""

NOTE = ("DeepSeek-V4 KV pages follow vLLM v0.22-v0.23's allocator: per layer a sliding K=V cache, the compressed "
        "K, the indexer keys and fp32 compressor states, packed in 5 groups of one shared pool; v0.24+ pack the pool "
        "per page size (about 1 % more blocks) and v0.26+ also keep the sliding caches of every in-flight batch, "
        "not modelled")
"""The plan's note when this layout prices the model."""

FP8_CACHE_DTYPES = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_ds_mla"})
"""``--kv-cache-dtype`` values v0.22 accepts for DeepSeek-V4 (each becomes ``fp8_ds_mla``, note 2)."""

ESTIMATE_NOTE = ("DeepSeek-V4 compressed-attention pages are padded to the sliding-window page: vLLM's allocator for "
                 "this model is not modelled, so its KV tokens are an estimate")
"""The note of a profile older than v0.22 (which could not load the model): pages.py design note 5."""


def messages(model: ModelSpec, profile_id: str, kv_cache_dtype: str,
             padded_estimate: bool) -> tuple[list[str], list[str]]:
    """``(warnings, notes)`` a vLLM plan of ``model`` adds: :data:`NOTE` under this allocator (and a warning for a
    cache dtype v0.22 refuses), else :data:`ESTIMATE_NOTE` when ``padded_estimate`` (an older profile)."""
    if not applies(model, profile_id):
        return [], [ESTIMATE_NOTE] if padded_estimate else []
    warnings = []
    if kv_cache_dtype not in FP8_CACHE_DTYPES:
        warnings.append(f"vLLM v0.22 accepts only an fp8 KV cache for DeepSeek-V4 (DeepseekV4MLAAttention asserts "
                        f"it; later releases add other pages, not modelled): --kv-cache-dtype {kv_cache_dtype} is "
                        "priced as fp8 (fp8_ds_mla), and the launch command passes --kv-cache-dtype fp8")
    return warnings, [NOTE]


SPARSE_MLA_MIN_MAJOR = 9
"""The lowest NVIDIA compute capability major whose kernels run DeepSeek-V4's sparse MLA under vLLM (note 9)."""


def gpu_refusal(model: ModelSpec, profile_id: str, gpu_name: str) -> str:
    """Why vLLM cannot run ``model`` on ``gpu_name`` (design note 9), or "" when it can or the GPU is unknown.

    vLLM's NVIDIA path for DeepSeek-V4 (vllm/models/deepseek_v4/nvidia/model.py) attends through FlashMLA sparse
    (``FlashMLASparseBackend.supports_compute_capability``, vllm/v1/attention/backends/mla/flashmla_sparse.py:
    majors 9 and 10, 12 through its Triton kernels) or FlashInfer's V4 kernels (SM90/SM100/SM120): an Ampere or
    Ada card (8.x) has neither. ROCm takes vllm/models/deepseek_v4/amd (AITER sparse MLA): not refused. The GPU's
    capability is read from its name (:func:`planner.engines.loaded.nvidia_capability`; None for another vendor)."""
    from planner.engines.loaded import nvidia_capability

    capability = nvidia_capability(gpu_name) if gpu_name and applies(model, profile_id) else None
    if capability is None or capability[0] >= SPARSE_MLA_MIN_MAJOR:
        return ""
    return (f"vLLM has no DeepSeek-V4 sparse MLA kernel for compute capability {capability[0]}.{capability[1]} "
            f"({gpu_name}): FlashMLA sparse and FlashInfer's V4 kernels need Hopper (9.0) or Blackwell "
            "(vllm/v1/attention/backends/mla/flashmla_sparse.py)")


def launch_kv_cache_dtype(model: ModelSpec, profile_id: str, kv_cache_dtype: str) -> str:
    """The ``--kv-cache-dtype`` a launch of ``model`` passes: ``fp8`` where this allocator applies and the asked
    value is one v0.22 refuses for DeepSeek-V4 (:data:`FP8_CACHE_DTYPES`; ``DeepseekV4MLAAttention`` asserts an
    fp8 cache, so ``auto`` would not start), else the asked value."""
    if applies(model, profile_id) and kv_cache_dtype not in FP8_CACHE_DTYPES:
        return "fp8"
    return kv_cache_dtype


def stored_name(model: ModelSpec, profile_id: str, name: str) -> str:
    """The name of the cache vLLM keeps: ``fp8_ds_mla`` for DeepSeek-V4 under this allocator (every accepted
    dtype becomes it, note 2), else ``name``."""
    return "fp8_ds_mla" if applies(model, profile_id) else name


def predates(model: ModelSpec, profile_id: str) -> bool:
    """True when ``profile_id`` is a vLLM profile older than v0.22 and ``model`` is a DeepSeek-V4 model (compressed
    layers): that release cannot load it (:data:`ESTIMATE_NOTE`; the model's code, vllm/models/deepseek_v4, is
    first in v0.22.0). Only vLLM profile ids are asked; another engine's id is no vLLM release (False)."""
    return (profile_id.startswith("vllm") and profile_id not in PROFILES
            and any(isinstance(layer, CompressedAttention) for layer in model.layers))


def applies(model: ModelSpec, profile_id: str) -> bool:
    """True when vLLM (this profile) prices ``model`` with this allocator: a DeepSeek-V4 model (compressed
    layers) under a profile of v0.22 or later, built as DeepSeek-V4 is, with one K=V head per layer.

    The allocator's pages hold one ``fp8_ds_mla`` row of ``head_dim`` values per entry (notes 1-2: the layer's
    ``kv_proj`` makes one K=V row, ``DeepseekV4MLAAttention``; config ``num_key_value_heads`` 1), whatever the spec's
    ``num_key_value_heads`` says. A rebuild with more KV heads (the GQA page's MHA variant,
    :func:`planner.model.kv.attention_variants`) is no model this allocator places: its pages would price the
    as-built model's one row, so it gets the plain paged arithmetic of its own per-token bytes."""
    return profile_id in PROFILES and any(isinstance(layer, CompressedAttention) for layer in model.layers) and all(
        layer.num_key_value_heads == 1 for layer in model.layers
        if isinstance(layer, CompressedAttention | SharedKVSlidingAttention))


def _aligned(num_bytes: int) -> int:
    """``num_bytes`` rounded up to :data:`FLASHMLA_ALIGNMENT` (``_apply_alignment_padding``)."""
    return ceil_div(num_bytes, FLASHMLA_ALIGNMENT) * FLASHMLA_ALIGNMENT


@dataclass(frozen=True)
class _Cache:
    """One cache layer vLLM registers (note 1): its decoder layer, block, page and window (None: full).

    ``padded`` is the page after the group's unification (note 3), ``page`` before it [bytes]."""

    layer: int
    kind: str
    block_size: int
    page: int
    window: int | None = None
    padded: int = 0

    @property
    def page_bytes(self) -> int:
        return self.padded or self.page


def layer_caches(layer, index: int, block_size: int, *, drafter: bool = False) -> tuple[_Cache, ...]:
    """The caches vLLM registers for one decoder layer (notes 1-2), V4 layers only.

    Raises:
        ValueError: a layer that is not a DeepSeek-V4 layer, or a block size that is not a multiple of
            256 (the indexer backend's kernel block: ``DeepseekV4IndexerBackend``).
    """
    if not isinstance(layer, CompressedAttention | SharedKVSlidingAttention):
        raise ValueError(f"layer {index} ({type(layer).__name__}) is not a DeepSeek-V4 layer: vLLM's DeepSeek-V4 "
                         "allocator places only the model's own and its MTP layers' caches")
    sliding = _Cache(index, "sliding", SLIDING_BLOCK_SIZE, _aligned(SLIDING_BLOCK_SIZE * FP8_DS_MLA_ENTRY_BYTES),
                     layer.sliding_window)
    if drafter or not isinstance(layer, CompressedAttention) or layer.compress_ratio <= 1:
        return (sliding,)
    ratio = layer.compress_ratio
    if ratio not in STATE_BLOCK_SIZES:
        raise ValueError(f"layer {index}: vLLM's DeepSeek-V4 compressor takes compress_ratio 4 or 128, got {ratio}")
    if block_size % DEFAULT_BLOCK_SIZE:
        raise ValueError(f"vLLM's DeepSeek-V4 indexer kernels take {DEFAULT_BLOCK_SIZE}-token blocks "
                         f"(DeepseekV4IndexerBackend): --block-size must be a multiple of {DEFAULT_BLOCK_SIZE}, "
                         f"got {block_size}")
    entries = block_size // ratio
    coff = 2 if ratio == 4 else 1
    state_block = STATE_BLOCK_SIZES[ratio]

    def state(kind: str, head_dim: int) -> _Cache:
        values = state_block * 2 * coff * head_dim  # kv_state + score_state, coff x head_dim each
        return _Cache(index, kind, state_block, _aligned(values * STATE_BYTES_PER_VALUE), coff * ratio)

    caches = [sliding, _Cache(index, f"c{ratio}", block_size, _aligned(entries * FP8_DS_MLA_ENTRY_BYTES)),
              state(f"c{ratio}_state", layer.head_dim)]
    if layer.index_head_dim:
        caches += [_Cache(index, "indexer", block_size, _aligned(entries * engine_indexer_bytes(layer.index_head_dim))),
                   state("indexer_state", layer.index_head_dim)]
    return tuple(caches)


def _tuples(caches) -> int:
    """Layer tuples of a group: the layer count of its most common page size (``get_num_layer_tuples``)."""
    return Counter(c.page_bytes for c in caches).most_common(1)[0][1]


def approximate_gcd(values: list[int], lower_bound: int) -> int:
    """The tuple count in ``[lower_bound, max(values)]`` that pads ``values`` up to its multiples the least,
    the larger on a tie (``_approximate_gcd``). Example: ``approximate_gcd([21, 43, 21, 20], 21) == 22``
    (padding 1 + 1 + 1 + 2 = 5; 21 pads 0 + 20 + 0 + 1)."""
    best, best_pad = lower_bound, None
    for d in range(lower_bound, max(values) + 1):
        pad = sum(-x % d for x in values)
        if best_pad is None or pad <= best_pad:
            best, best_pad = d, pad
    return best


def model_groups(caches: list[_Cache]) -> list[list[_Cache]]:
    """The whole model's KV cache groups (note 3), the compressed group first.

    Raises:
        ValueError: a sliding page larger than every compressed page, or unequal layer counts per page
            size in one sliding group (vLLM asserts both).
    """
    compressed = [c for c in caches if c.window is None]
    sliding: dict[tuple[int, int], list[_Cache]] = {}
    for c in caches:
        if c.window is not None:
            sliding.setdefault((c.block_size, c.window), []).append(c)
    if not compressed:
        raise ValueError("a DeepSeek-V4 model without compressed layers has no compressed group; vLLM's allocator "
                         "for the model needs one")
    pages = sorted({c.page for c in compressed})
    d = approximate_gcd([_tuples(compressed)] + [_tuples(g) for g in sliding.values()], _tuples(compressed))
    groups = [compressed]
    for members in sliding.values():
        by_page: dict[int, list[_Cache]] = {}
        for c in members:
            target = next((p for p in pages if p >= c.page), None)
            if target is None:
                raise ValueError(f"a {c.kind} page of {c.page:,} B is larger than every compressed page "
                                 f"({pages[-1]:,} B): vLLM's DeepSeek-V4 allocator refuses it; use --block-size "
                                 f"{DEFAULT_BLOCK_SIZE} or more")
            by_page.setdefault(target, []).append(_Cache(c.layer, c.kind, c.block_size, c.page, c.window, target))
        counts = {len(v) for v in by_page.values()}
        if len(counts) != 1:
            raise ValueError("vLLM's DeepSeek-V4 allocator needs as many layers of each page size in a sliding group")
        rows = list(zip(*by_page.values()))
        split = ceil_div(counts.pop(), d)
        groups += [[c for row in rows[i::split] for c in row] for i in range(split)]
    return groups


@dataclass(frozen=True, kw_only=True)
class DeepseekV4Layout(KVLayout):
    """One worker's :class:`planner.engines.pages.KVLayout` under the DeepSeek-V4 allocator (notes 3-6).

    ``groups`` hold the worker's caches as page specs (a group without any keeps the whole model's, note 6);
    ``bytes_per_block`` is the pool block (note 4).

    Attributes:
        need_block_bytes: Bytes each group block costs in the memory check: tuple bytes x the largest
            tuple count of any group [bytes].
        group_page_bytes: Sum of each group's page sizes (note 5) [bytes].
    """

    need_block_bytes: int
    group_page_bytes: tuple[int, ...]

    @cached_property
    def distinct_group_specs(self) -> tuple[tuple, ...]:
        """Each group's distinct page specs (a group holds many alike)."""
        return tuple(tuple(dict.fromkeys(group)) for group in self.groups)

    def _group_blocks(self, max_model_len: int, max_num_batched_tokens: int) -> list[int]:
        """Blocks one request holds in each group: the most any of its caches needs (note 4)."""
        return [max(spec.blocks_per_request(max_model_len, max_num_batched_tokens) for spec in specs)
                for specs in self.distinct_group_specs]

    def blocks_per_request(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """The divisor of vLLM's printed concurrency (note 5)."""
        blocks = self._group_blocks(max_model_len, max_num_batched_tokens)
        weighted = sum(b * p for b, p in zip(blocks, self.group_page_bytes))
        return ceil_div(weighted, self.group_page_bytes[0])

    def held_blocks_per_request(self, max_model_len: int, batched_tokens: int = 1) -> int:
        """Pool blocks a request holds with ``batched_tokens`` in its step: every group's blocks, each a
        whole pool block (note 4; :meth:`planner.engines.pages.KVLayout.held_blocks_per_request`), where
        the printed divisor weighs the states by their own pages (note 5). N11 decoding: 118 + 3 + 3 + 3
        + 17 = 144; at 16,384 batched tokens the 6,800 of note 4."""
        return sum(self._group_blocks(max_model_len, batched_tokens))

    def needed_bytes(self, max_model_len: int, max_num_batched_tokens: int) -> int:
        """What vLLM's memory check charges one request of ``max_model_len`` tokens (note 4) [bytes]."""
        return self.need_block_bytes * sum(self._group_blocks(max_model_len, max_num_batched_tokens))

    def start_check_bytes(self, max_model_len: int, max_num_batched_tokens: int, padded: bool) -> int:
        """:meth:`needed_bytes`, which already counts the allocator's group blocks (note 4; N11: 6.66 GiB as
        printed), whichever way ``padded`` asks."""
        return self.needed_bytes(max_model_len, max_num_batched_tokens)


def _page_spec(cache: _Cache):
    """A :mod:`planner.engines.pages` spec with this cache's block, page and window."""
    per_token = ceil_div(cache.page, cache.block_size)
    if cache.window is None:
        return FullAttentionPages(block_size=cache.block_size, bytes_per_token=per_token, mla=True,
                                  padded_page_bytes=cache.page_bytes)
    return SlidingWindowPages(block_size=cache.block_size, bytes_per_token=per_token, sliding_window=cache.window,
                              padded_page_bytes=cache.page_bytes)


def deepseek_v4_layout(model: ModelSpec, layers: range, block_size: int,
                       drafter_layers: tuple = ()) -> DeepseekV4Layout:
    """The layout of the worker holding decoder ``layers`` (and the drafter's, on the last stage).

    Args:
        model: A DeepSeek-V4 :class:`planner.model.ModelSpec`.
        layers: The worker's decoder layers.
        block_size: ``--block-size`` [tokens].
        drafter_layers: The MTP layers of ``--speculative-config`` (each a sliding cache, note 1).

    Raises:
        ValueError: as :func:`layer_caches` and :func:`model_groups`.
    """
    n = model.num_layers
    caches = [c for i, layer in enumerate(model.layers) for c in layer_caches(layer, i, block_size)]
    caches += [c for k, layer in enumerate(drafter_layers)
               for c in layer_caches(layer, n + k, block_size, drafter=True)]
    mine = set(layers) | (set(range(n, n + len(drafter_layers))) if layers.stop == n else set())
    groups = []
    for group in model_groups(caches):
        kept = [c for c in group if c.layer in mine]
        groups.append(kept or group)  # note 6: an empty group keeps the whole model's spec
    tuple_bytes = sum({c.page_bytes for c in groups[0]})
    held = [g for g in groups if any(c.layer in mine for c in g)]
    pool_tuples = max(_tuples(g) for g in held)
    return DeepseekV4Layout(
        groups=tuple(tuple(_page_spec(c) for c in g) for g in groups),
        bytes_per_block=tuple_bytes * pool_tuples, group_size=pool_tuples, uniform=False,
        need_block_bytes=tuple_bytes * max(_tuples(g) for g in groups),
        group_page_bytes=tuple(sum(c.page_bytes for c in g) for g in groups))
