"""The budget's paged KV profile: Mamba hybrids, windowed, MLA and DeepSeek-V4 models paged as vLLM pages them.

The budget (:mod:`planner.budget`), the sweeps (:mod:`planner.sweep`) and the GPU-count advice
(:mod:`planner.diagnose`) size a sequence with a :class:`planner.model.kv.KVProfile` paged by ``block_size``.
For a model whose layers all hold a per-token cache that is vLLM's arithmetic, at the block size vLLM runs: an
MLA model's default backend forces its own (:func:`mla_block_size`: 64 tokens under FlashMLA on Hopper, 128 under
CUTLASS MLA on datacenter Blackwell; DeepSeek-V3.2 on 8 x H200 at 800 tokens, 1,181 users by 16-token blocks
against vLLM's 1,135.69x, now 1,135). For an attention + Mamba
(Gated DeltaNet, Mamba-2, ...) hybrid it is not, in two ways (newest vLLM, the profile the budget's overheads
follow, :data:`planner.overhead.OVERHEAD_PROFILE`):

1. vLLM raises the attention block size until one attention page holds a Mamba state
   (vllm/model_executor/models/config.py ``HybridAttentionMambaModelConfig.verify_and_update_config``;
   :func:`planner.engines.vllm_specs.vllm_block_size`): 784 tokens for Qwen3.5-27B at TP 1, so a request's
   attention layers hold whole 784-token blocks, not 16-token ones.
2. Each Mamba layer's state is padded to that page (``mamba_page_size_padded``), and the layers are grouped into
   KV-cache groups of one size (vllm/v1/core/kv_cache_utils.py ``get_kv_cache_groups``), a short group padded.

:func:`paged_kv_profile` returns the profile built from the engine's own layout
(:func:`planner.engines.pages.kv_layout`), so ``bytes_per_sequence(n)`` is vLLM's blocks per request times its
block bytes. Qwen3.5-27B on an H100 at 2,500 tokens: 304 MiB a sequence at 16-token blocks, 343 MiB as vLLM
allocates it, 55 users against vLLM's printed-style 49.57x (the Engine page's figure); windowed models and
DeepSeek-V4 too (steps 4-5). Every other model gets :func:`planner.model.kv.kv_profile` unchanged.

3. Speculative decoding (``PlanRequest.serving``'s ``speculative``): the drafter's attention layers join the
   layout (:func:`planner.engines.serving.vllm_drafter_layers`) and every Mamba layer keeps one more state page per
   draft token (:func:`planner.engines.vllm_kv_formats.mamba_pages_per_request`). Qwen3.5-27B with MTP, 1 draft
   token, on an H100 at 2,500 tokens: 10 blocks a request instead of 7, 31.00x in the Engine view.

4. Windowed models (sliding windows, chunked local attention: Gemma 3 / 4, gpt-oss, Llama 4) are paged from the
   same layout: vLLM groups their layers into KV-cache groups of one size, a short group padded (Gemma 3 27B:
   52 sliding layers take 6 groups of 10), and a sliding layer keeps one block beyond its window
   (``SlidingWindowSpec``). A sequence's decoding blocks are :meth:`planner.engines.pages.KVLayout.
   held_blocks_per_request` with one batched token; the budget sets one prefill chunk's extra window blocks
   aside (:meth:`planner.model.kv.KVProfile.prefill_extra_bytes`). Gemma 3 27B on an H200 at 1,000 tokens:
   149 users by 16-token blocks per layer, 130 as vLLM's layout holds them (130.23 in the Engine view).

5. DeepSeek-V4 is paged by vLLM's allocator for the model (:mod:`planner.engines.vllm_deepseek_v4`, v0.22+,
   the profile the budget prices): per decoder layer a sliding K=V cache in 64-token blocks, the compressed K and
   the indexer keys in ``--block-size`` blocks (256 by default) and fp32 compressor states in 4- or 8-token
   blocks, all fp8_ds_mla pages, packed in KV-cache groups whose every block is one whole pool block
   (``DeepseekV4Layout.bytes_per_block``: 22 layer tuples x 47,808 B = 1,051,776 B for V4-Flash). Each group
   becomes a :class:`planner.model.kv.KVGroup` of that page (``page_bytes``) in its own block and window, so
   ``bytes_per_sequence(n)`` is the layout's ``held_blocks_per_request(n, 1)`` pool blocks and the prefill extra
   the blocks a whole chunk holds more (the sliding caches and compressor states grow with the batched tokens).
   vLLM v0.22 stores every accepted ``--kv-cache-dtype`` as fp8_ds_mla and the Engine view prices any other name
   so (with a warning): the profile is the same whatever the dtype. A ``--block-size`` the allocator refuses
   (not a multiple of 256: the budget's default 16 among them) is priced at vLLM's default 256. V4-Flash on
   4 x H200 at 8,192 tokens: 58 pool blocks a decoding request (32 compressed + 3 + 3 sliding + 3 + 17 state),
   1,411 users as the Engine view's 1,411.41 decoding at once, where the plain per-token profile said 1,746.
   Only the model as built (one K=V head per layer, :func:`planner.engines.vllm_deepseek_v4.applies`): the GQA
   page's MHA rebuild (64 KV heads) is no model the allocator places, and its pages would price the as-built row
   (QA: 188 users of 43.35 GiB on 8 x H200), so it gets the plain profile of its own per-token bytes.
   Sources: vllm/v1/core/kv_cache_utils.py (``_get_kv_cache_config_deepseek_v4``,
   ``get_max_concurrency_for_kv_cache_config``), vllm/v1/kv_cache_interface.py (``SlidingWindowMLASpec``,
   ``MLAAttentionSpec``), as read for :mod:`planner.engines.vllm_deepseek_v4` (v0.22.0).

The GPU (``gpu_name``) picks the kernel alignment as on the Engine page: 16 tokens (64 for MLA hybrids), 32 for
head size 256 on datacenter Blackwell (FlashInfer); 800-token blocks for Qwen3.5-27B on a B200.
Prefix caching's extra state pages ("align" mode) are the Engine page's; the budget prices vLLM's default
(prefix caching off for hybrids).
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines import vllm_deepseek_v4 as deepseek_v4
from planner.engines.pages import ChunkedLocalPages, FullAttentionPages, MambaPages, SlidingWindowPages
from planner.engines.profiles import engine_profile
from planner.engines.types import EngineRequest
from planner.engines.vllm_deepseek_v4 import DeepseekV4Layout
from planner.engines.vllm_specs import stage_layout, vllm_block_size
from planner.model import ModelSpec
from planner.model.kv import KVGroup, KVProfile, kv_profile
from planner.model.layers import CacheDtypes
from planner.model.memo import model_memo, remember
from planner.overhead import OVERHEAD_PROFILE as BUDGET_ENGINE  # the newest vLLM, whose overheads the budget uses
from planner.serving.features import ServingFeatures
from planner.serving.speculative import SpeculativeConfig


def paged_kv_profile(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int, *,
                     weight_dtype: str, kv_cache_dtype: str, gpu_name: str = "",
                     speculative: SpeculativeConfig | None = None) -> KVProfile:
    """The KV profile one of ``tensor_parallel_size`` GPUs pages sequences with (module docstring): vLLM's layout
    for a hybrid, a windowed model or DeepSeek-V4 (:func:`hybrid_kv_profile`), else
    :func:`planner.model.kv.kv_profile` at ``block_size``.

    Args:
        model: The model.
        dtypes: Its cache formats (:func:`planner.model.kv.cache_dtypes` of the two names below).
        tensor_parallel_size: GPUs the layers are split over.
        block_size: The block size asked [tokens]; a hybrid's may come out larger, as in vLLM (the returned
            profile's ``block_size`` is the one used).
        weight_dtype, kv_cache_dtype: The planner dtype names the plan was asked with.
        gpu_name: GPU catalog id or name (the kernel alignment of datacenter Blackwell); "" = none named.
        speculative: Speculative decoding (module docstring, step 3); only a hybrid's profile holds the drafter.

    Raises:
        ValueError: ``block_size < 1`` or ``tensor_parallel_size < 1`` (:func:`planner.model.kv.kv_profile`).
    """
    hybrid = hybrid_kv_profile(model, dtypes, tensor_parallel_size, block_size, weight_dtype=weight_dtype,
                               kv_cache_dtype=kv_cache_dtype, gpu_name=gpu_name, speculative=speculative)
    if hybrid is not None:
        return hybrid
    return kv_profile(model, dtypes, tensor_parallel_size, mla_block_size(model, block_size, gpu_name))


def mla_block_size(model: ModelSpec, block_size: int, gpu_name: str = "") -> int:
    """The block size vLLM pages an MLA model's cache with when ``block_size`` is asked [tokens]: the default MLA
    backend's forced size (:func:`planner.engines.vllm_specs.vllm_block_size`, vllm/platforms/cuda.py
    ``check_and_update_config``: FlashMLA on Hopper 64, CUTLASS MLA on datacenter Blackwell 128), else
    ``block_size`` (other models, block 1, or a backend that takes any size). DeepSeek-V3.2 on an H200: 16 -> 64."""
    if block_size == 1 or model.attention_kind != "MLA":
        return block_size
    request = EngineRequest(engine=BUDGET_ENGINE, block_size=block_size, gpu_name=gpu_name)
    try:
        return vllm_block_size(model, request, engine_profile(BUDGET_ENGINE))[0]
    except ValueError:
        return block_size


def hybrid_kv_profile(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int, *,
                      weight_dtype: str, kv_cache_dtype: str, gpu_name: str = "",
                      speculative: SpeculativeConfig | None = None) -> KVProfile | None:
    """The paged profile of an attention + Mamba hybrid, a windowed model or DeepSeek-V4 as vLLM lays it out
    (arguments as :func:`paged_kv_profile`; module docstring, steps 1-5); None for any other model, for
    ``block_size`` 1 (the exact profile) and for a layout with other page kinds (compressed pages priced by their
    per-token bytes, under a profile older than v0.22).
    With ``speculative``, the profile already holds the drafter's layers (the caller adds no drafter groups).

    Memoized per model object, keyed by the arguments.
    """
    if block_size == 1 or not ((model.has_recurrent_state and model.has_attention) or model.sliding_windows
                               or deepseek_v4.applies(model, BUDGET_ENGINE)):
        return None
    memo = model_memo(model)
    draft = None if speculative is None else speculative.draft
    key = ("hybrid_kv_profile", id(dtypes.kv), id(dtypes.state), tensor_parallel_size, block_size, weight_dtype,
           kv_cache_dtype, gpu_name, speculative, id(draft))
    entry = memo.get(key)
    if entry is None:
        features = None if speculative is None else ServingFeatures(engine=BUDGET_ENGINE, speculative=speculative)
        request = EngineRequest(engine=BUDGET_ENGINE, weight_dtype=weight_dtype, kv_cache_dtype=kv_cache_dtype,
                                tensor_parallel_size=tensor_parallel_size, block_size=block_size, gpu_name=gpu_name,
                                serving=features)
        entry = remember(memo, key, (dtypes.kv, dtypes.state, draft, _hybrid_profile(model, request)))
    return entry[3]


def _hybrid_profile(model: ModelSpec, request: EngineRequest) -> KVProfile | None:
    """The profile of vLLM's layout for ``request`` (module docstring, step 4 for windowed models, step 5 for
    DeepSeek-V4); None when the layout has other page kinds (compressed pages) or cannot be built (pages that do
    not unify): the caller keeps the plain profile."""
    profile = engine_profile(BUDGET_ENGINE)
    if deepseek_v4.applies(model, profile.id) and request.block_size % deepseek_v4.DEFAULT_BLOCK_SIZE:
        request = replace(request, block_size=None)  # step 5: a size the allocator refuses is priced at its default
    try:
        block, _ = vllm_block_size(model, request, profile)
        layout = stage_layout(model, range(model.num_layers), request, profile, block)
    except ValueError:
        return None
    if isinstance(layout, DeepseekV4Layout):
        return _pool_profile(layout)
    groups = []
    for spec, count in layout.group_spec_counts:
        group = _layout_group(spec, count * layout.group_size)
        if group is None:
            return None
        groups.append(group)
    blocks = [g.block_size for g in groups if g.block_size]
    if not blocks:
        return None
    smallest = min(blocks)
    return KVProfile(groups=tuple(replace(g, block_size=None if g.block_size == smallest else g.block_size)
                                  for g in groups), block_size=smallest)


def _layout_group(spec, layers: int) -> KVGroup | None:
    """One KV-cache group of vLLM's layout (``layers`` slots, a short group padded) as a :class:`KVGroup` whose
    ``bytes_per_sequence(n)`` is the group's blocks of a decoding request times its page: a Mamba state's pages;
    a full-attention layer's ``ceil(n / B)`` blocks; a sliding window's ``ceil(min(w, n) / B) + 1`` (cap ``w``
    and one page fixed); a chunked-local layer's ``ceil(min(chunk + 1, n) / B)`` (cap ``chunk + 1``)
    (:meth:`planner.engines.pages.KVLayout.held_blocks_per_request` with one batched token). None for a compressed
    page. ``block_size`` here is the group's own (the caller keeps it where it differs from the profile's)."""
    kind = type(spec)
    if kind is MambaPages:
        return KVGroup(num_layers=layers, bytes_per_token=0, max_tokens=0,
                       bytes_per_sequence_fixed=spec.page_size_bytes * spec.pages_per_request)
    if getattr(spec, "compressed", False):
        return None
    per_token = spec.page_size_bytes // spec.block_size
    if kind is FullAttentionPages:
        return KVGroup(num_layers=layers, bytes_per_token=per_token, max_tokens=None, bytes_per_sequence_fixed=0,
                       block_size=spec.block_size)
    if kind is SlidingWindowPages:
        return KVGroup(num_layers=layers, bytes_per_token=per_token, max_tokens=spec.sliding_window,
                       bytes_per_sequence_fixed=spec.page_size_bytes, block_size=spec.block_size)
    if kind is ChunkedLocalPages:
        return KVGroup(num_layers=layers, bytes_per_token=per_token, max_tokens=spec.attention_chunk_size + 1,
                       bytes_per_sequence_fixed=0, block_size=spec.block_size)
    return None


def _pool_profile(layout: DeepseekV4Layout) -> KVProfile | None:
    """The profile of DeepSeek-V4's layout (module docstring, step 5): one :class:`KVGroup` per block size and
    window of its KV-cache groups (``num_layers`` = the groups that share them: V4-Flash's sliding K=V caches
    fill two), each block priced as the whole pool block (``page_bytes``); a sliding group keeps one block beyond
    its window (``SlidingWindowPages.blocks_per_request``: ``ceil(min(w - 1 + b, L) / B) + 1``), a compressed
    group ``ceil(L / B)``. The profile's block is the compressed group's (vLLM's ``--block-size``). None when a
    group mixes blocks or windows (the allocator groups caches by both: not expected)."""
    page = layout.bytes_per_block
    counts: dict[tuple[int, int | None], int] = {}
    for specs in layout.distinct_group_specs:
        shapes = {(spec.block_size, getattr(spec, "sliding_window", None)) for spec in specs}
        if len(shapes) != 1:
            return None
        shape = shapes.pop()
        counts[shape] = counts.get(shape, 0) + 1
    first = layout.block_size
    groups = tuple(KVGroup(num_layers=n, bytes_per_token=page // block, max_tokens=window,
                           bytes_per_sequence_fixed=0 if window is None else page,
                           block_size=None if block == first else block, page_bytes=page)
                   for (block, window), n in counts.items())
    return KVProfile(groups=groups, block_size=first)


def budget_kv_name(model: ModelSpec, kv_name: str) -> str:
    """The cache :func:`planner.budget.plan` prices for ``model`` when the request names ``kv_name`` (its
    ``Plan.kv_cache_dtype``, without planning): ``fp8_ds_mla`` for DeepSeek-V4, whose budget is vLLM's pool pages
    (step 5; :func:`planner.engines.vllm_deepseek_v4.stored_name`), else ``kv_name``. A page heading names it (QA:
    Concurrency said "bf16 KV cache" for V4 where Home and the Engine page said fp8_ds_mla)."""
    return deepseek_v4.stored_name(model, BUDGET_ENGINE, kv_name)


def allocator_pool_prices(model: ModelSpec) -> bool:
    """True when the budget pages ``model`` with vLLM's DeepSeek-V4 allocator (step 5,
    :func:`planner.engines.vllm_deepseek_v4.applies`): DeepSeek-V4 as built; a rebuild with more KV heads (the GQA
    page's MHA variant) gets the plain paged arithmetic of its own per-token bytes instead."""
    return deepseek_v4.applies(model, BUDGET_ENGINE)


def paged_kv_name(model: ModelSpec, profile, kv_name: str) -> str:
    """The name of the cache ``profile`` (a :func:`paged_kv_profile`) prices: ``fp8_ds_mla`` for DeepSeek-V4's pool
    pages (module docstring, step 5; :func:`planner.engines.vllm_deepseek_v4.stored_name`), else ``kv_name``."""
    return deepseek_v4.stored_name(model, BUDGET_ENGINE, kv_name) if profile.pooled else kv_name
