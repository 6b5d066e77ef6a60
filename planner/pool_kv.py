"""A plan's KV figures in the pool pages its users are priced in, where those are not its exact cache.

:func:`planner.budget.plan` counts users with the paged profile of one GPU
(:func:`planner.engines.vllm_hybrid_profile.paged_kv_profile`) and names that cache in ``Plan.kv_cache_dtype``;
its exact figures (``kv_cache_bytes_per_token``, ``kv_cache_bytes_per_sequence[_per_gpu]``) come from the model's
own layers in the requested dtype. For every model but DeepSeek-V4 the two are one cache (the paged figure is the
exact one rounded up to whole blocks). DeepSeek-V4 is paged by vLLM's allocator for the model, whose every
KV-cache group block is one whole pool block of ``fp8_ds_mla`` pages (:mod:`planner.engines.vllm_hybrid_profile`
step 5, :mod:`planner.engines.vllm_deepseek_v4` notes 2-4), while its exact figures stay in bf16 (or fp8): a page
that shows those beside the users shows two caches for one plan. :func:`pool_kv` gives the pool's own figures:

    pool block          = the groups' ``page_bytes`` (22 layer tuples x 47,808 B = 1,051,776 B for V4-Flash)
    bytes per token     = ceil(sum over the groups without a window of layers x pool block / their block)
                          (:attr:`planner.model.kv.KVProfile.pool_bytes_per_token`, also
                          ``Plan.kv_cache_pool_bytes_per_token``)
                          (a sequence's pages grow by this past every window: the compressed K and indexer keys;
                          V4-Flash: ceil(1,051,776 / 256) = 4,109 B)
    blocks per sequence = the paged profile's bytes of one decoding sequence of ``context_len`` / pool block
                          (V4-Flash at 8,192 tokens: 58 blocks = 61,003,008 B, ``Plan.kv_cache_bytes_per_sequence_
                          paged_per_gpu``, the figure users are counted with)

Every GPU of a DeepSeek-V4 plan keeps every layer's cache (its latent is replicated under tensor parallelism:
``Plan.kv_cache_bytes_per_sequence`` equals ``..._per_gpu``), so the pool figures are the whole model's too.

Sources: :class:`planner.model.kv.KVGroup` (``page_bytes``), :func:`planner.budget.plan_base` (the paged profile
the users are counted with), vLLM v0.22.0 vllm/v1/core/kv_cache_utils.py ``_get_kv_cache_config_deepseek_v4`` as
read for :mod:`planner.engines.vllm_deepseek_v4`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.budget import PlanRequest, plan_base
from planner.model import ModelSpec


@dataclass(frozen=True, kw_only=True)
class PoolKV:
    """One sequence's KV in a plan's pool pages, on one GPU (module docstring).

    Attributes:
        cache: The cache the pool stores (``Plan.kv_cache_dtype``: ``fp8_ds_mla``).
        block_bytes: One pool block [bytes].
        block_size: Tokens one pool block holds of the caches without a window (``Plan.block_size``).
        bytes_per_token: Bytes a sequence's pool pages grow by per token past every window, rounded up [bytes].
        blocks_per_sequence: Pool blocks one decoding sequence of ``context_len`` tokens holds.
        bytes_per_sequence: ``blocks_per_sequence x block_bytes`` [bytes].
        context_len: The sequence's tokens.
    """

    cache: str
    block_bytes: int
    block_size: int
    bytes_per_token: int
    blocks_per_sequence: int
    bytes_per_sequence: int
    context_len: int


def pool_kv(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str = "") -> PoolKV | None:
    """The pool figures of ``plan(model, gpu_memory_bytes, request, gpu_id)`` (module docstring), None when its
    users are priced in the exact cache's blocks (every model but DeepSeek-V4).

    Raises:
        ValueError: as :func:`planner.budget.plan`.
    """
    base = plan_base(model, gpu_memory_bytes, request, gpu_id)
    profile = base.paged_gpu
    if not profile.pooled:
        return None
    pages = {g.page_bytes for g in profile.groups}
    if len(pages) != 1:  # vLLM's DeepSeek-V4 allocator has one pool block (vllm_deepseek_v4 note 4)
        raise ValueError(f"a pool profile with one page size expected, got {sorted(pages)}")
    block_bytes = pages.pop()
    per_sequence = base.bytes_per_sequence(request.context_len)[0]
    return PoolKV(cache=base.plan_fields["kv_cache_dtype"], block_bytes=block_bytes, block_size=profile.block_size,
                  bytes_per_token=profile.pool_bytes_per_token, blocks_per_sequence=per_sequence // block_bytes,
                  bytes_per_sequence=per_sequence, context_len=request.context_len)


def exact_cache_label(exact_dtype: str, stored_dtype: str, *, inside_brackets: bool = False) -> str:
    """The name to print beside a plan's exact KV figures (``Plan.kv_cache_exact_dtype``) where its users are counted
    in another cache (``stored_dtype``, ``Plan.kv_cache_dtype``); "" where the two are one cache.

    DeepSeek-V4 under ``--kv-cache-dtype fp8``: the exact figure is plain fp8 arithmetic (1 B per value, 512 values
    an entry: no bf16 RoPE part, no scales), a cache no engine stores: vLLM turns any fp8 name into ``fp8_ds_mla``
    (584 B an entry, :mod:`planner.engines.vllm_deepseek_v4` note 2), so the label says so: "fp8 (plain
    arithmetic, not a cache vLLM stores)", or "fp8: plain ..." ``inside_brackets``. A bf16 exact figure is the
    cache transformers keeps, and is named as it is.

    Sources: :mod:`planner.engines.vllm_deepseek_v4` note 2 (vLLM v0.22.0 vllm/models/deepseek_v4/attention.py).
    """
    if exact_dtype == stored_dtype:
        return ""
    if stored_dtype == "fp8_ds_mla" and exact_dtype.startswith("fp8"):
        note = "plain arithmetic, not a cache vLLM stores"
        return f"{exact_dtype}: {note}" if inside_brackets else f"{exact_dtype} ({note})"
    return exact_dtype
