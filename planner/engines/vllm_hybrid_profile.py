"""The budget's paged KV profile, with attention + Mamba hybrids paged as vLLM pages them.

The budget (:mod:`planner.budget`), the sweeps (:mod:`planner.sweep`) and the GPU-count advice
(:mod:`planner.diagnose`) size a sequence with a :class:`planner.model.kv.KVProfile` paged by ``block_size``.
For a model whose layers all hold a per-token cache that is vLLM's arithmetic. For an attention + Mamba
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
allocates it, 55 users against vLLM's printed-style 49.57x (the Engine page's figure). Every other model gets
:func:`planner.model.kv.kv_profile` unchanged.

Limits: the kernel alignment is vLLM's on a GPU the budget does not name (16 tokens; 64 for MLA hybrids): the
Engine page, which knows the GPU, refines it on datacenter Blackwell (32 for head size 256, FlashInfer).
Prefix caching's extra state pages ("align" mode) are the Engine page's too; the budget prices vLLM's default
(prefix caching off for hybrids).
"""

from __future__ import annotations

from planner.engines.pages import FullAttentionPages, MambaPages, kv_layout
from planner.engines.profiles import engine_profile
from planner.engines.types import EngineRequest
from planner.engines.vllm_specs import stage_specs, vllm_block_size
from planner.model import ModelSpec
from planner.model.kv import KVGroup, KVProfile, kv_profile
from planner.model.layers import CacheDtypes
from planner.model.memo import model_memo, remember

BUDGET_ENGINE = "vllm"
"""Engine profile whose hybrid paging the budget follows (the newest vLLM, as its overheads)."""


def paged_kv_profile(model: ModelSpec, dtypes: CacheDtypes, tensor_parallel_size: int, block_size: int, *,
                     weight_dtype: str, kv_cache_dtype: str) -> KVProfile:
    """The KV profile one of ``tensor_parallel_size`` GPUs pages sequences with (module docstring).

    Args:
        model: The model.
        dtypes: Its cache formats (:func:`planner.model.kv.cache_dtypes` of the two names below).
        tensor_parallel_size: GPUs the layers are split over.
        block_size: The block size asked [tokens]; a hybrid's may come out larger, as in vLLM (the returned
            profile's ``block_size`` is the one used).
        weight_dtype, kv_cache_dtype: The planner dtype names the plan was asked with.

    Raises:
        ValueError: ``block_size < 1`` or ``tensor_parallel_size < 1`` (:func:`planner.model.kv.kv_profile`).

    Memoized per model object, keyed by the arguments.
    """
    plain = kv_profile(model, dtypes, tensor_parallel_size, block_size)
    if block_size == 1 or not _has_state_and_attention(plain):
        return plain
    memo = model_memo(model)
    key = ("paged_kv_profile", id(dtypes.kv), id(dtypes.state), tensor_parallel_size, block_size, weight_dtype,
           kv_cache_dtype)
    entry = memo.get(key)
    if entry is None:
        entry = remember(memo, key, (dtypes.kv, dtypes.state, _hybrid_profile(
            model, tensor_parallel_size, block_size, weight_dtype, kv_cache_dtype) or plain))
    return entry[2]


def _has_state_and_attention(profile: KVProfile) -> bool:
    """True when some layers hold only a fixed state and others a per-token cache."""
    return (any(g.bytes_per_sequence_fixed and not g.bytes_per_token for g in profile.groups)
            and any(g.bytes_per_token for g in profile.groups))


def _hybrid_profile(model: ModelSpec, tp: int, block_size: int, weight_dtype: str,
                    kv_cache_dtype: str) -> KVProfile | None:
    """The hybrid's profile from vLLM's layout; None when the layout has other page kinds (sliding windows,
    compressed pages) or cannot be built (pages that do not unify): the caller keeps the plain profile."""
    profile = engine_profile(BUDGET_ENGINE)
    request = EngineRequest(engine=BUDGET_ENGINE, weight_dtype=weight_dtype, kv_cache_dtype=kv_cache_dtype,
                            tensor_parallel_size=tp, block_size=block_size)
    try:
        block, _ = vllm_block_size(model, request, profile)
        layout = kv_layout(stage_specs(model, range(model.num_layers), request, profile, block))
    except ValueError:
        return None
    groups, blocks = [], set()
    for spec, count in layout.group_spec_counts:
        layers = count * layout.group_size
        if type(spec) is MambaPages:
            groups.append(KVGroup(num_layers=layers, bytes_per_token=0, max_tokens=0,
                                  bytes_per_sequence_fixed=spec.page_size_bytes * spec.pages_per_request))
        elif type(spec) is FullAttentionPages and not spec.compressed:
            blocks.add(spec.block_size)
            groups.append(KVGroup(num_layers=layers, bytes_per_token=spec.page_size_bytes // spec.block_size,
                                  max_tokens=None, bytes_per_sequence_fixed=0))
        else:
            return None
    if len(blocks) != 1:
        return None
    return KVProfile(groups=tuple(groups), block_size=blocks.pop())
