"""Home's KV per token / per sequence tiles, in the one cache a plan counts its users in, and the GQA page's label of
the cache its variants' bytes are in.

A plan prices its users in its cache's blocks (``Plan.kv_cache_dtype``); for DeepSeek-V4 those are vLLM's fp8_ds_mla
pool pages while the plan's exact figures stay in the requested dtype (:mod:`planner.pool_kv`). The tiles show the
exact figures with the paged one in their help, or the pool's figures with the cache named in their labels, never
one cache's figures beside the other's users. Formatting only: the figures come from :mod:`planner`.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.budget import Plan
from planner.pool_kv import PoolKV
from ui.format import format_bytes, format_bytes_exact, format_int, format_tokens


def exact_kv_values(plan: Plan, per_gpu: str) -> dict[str, tuple[str, str]]:
    """The KV per token / per sequence tiles from the plan's exact figures (its cache's blocks count the users)."""
    return {
        "KV per token": (format_bytes(plan.kv_cache_bytes_per_token, "auto"),
                         "all layers, whole model; per GPU "
                         f"{format_bytes(plan.kv_cache_bytes_per_token_per_gpu, 'auto')}"),
        # in whole blocks, as the users and the verdict's "in use" count it (QA, stop 44: the tile said 1.92 GiB
        # beside the verdict's 61.88 GiB for 32 sequences and the CLI's 1.93 GiB in 2,112-token blocks)
        "KV per sequence" + per_gpu: (format_bytes(plan.kv_cache_bytes_per_sequence_paged_per_gpu),
                                      f"in whole {plan.block_size}-token blocks, as users are counted: "
                                      f"{format_bytes(plan.kv_cache_bytes_per_sequence_paged_per_gpu)} per GPU "
                                      f"({format_bytes(plan.kv_cache_bytes_per_sequence_per_gpu)} before the block "
                                      f"rounding); {format_bytes_exact(plan.kv_cache_bytes_per_sequence)} for the "
                                      f"whole model at {format_tokens(plan.context_len)}, windows applied"),
    }


def pool_kv_values(pool: PoolKV, per_gpu: str) -> dict[str, tuple[str, str]]:
    """The KV per token / per sequence tiles in the pool's cache (:class:`planner.pool_kv.PoolKV`), named in the
    labels."""
    stored = f" ({pool.cache}, as vLLM stores it)"
    block = format_bytes_exact(pool.block_bytes, "auto")
    return {
        "KV per token" + stored: (format_bytes(pool.bytes_per_token, "auto"),
                                  f"vLLM's pool pages, past every window: one {block} pool block per "
                                  f"{format_int(pool.block_size)} tokens of the caches without a window; every GPU "
                                  "keeps every layer's cache"),
        "KV per sequence" + per_gpu + stored: (
            format_bytes(pool.bytes_per_sequence),
            f"{format_int(pool.blocks_per_sequence)} pool blocks of {block} at {format_tokens(pool.context_len)}, "
            "each KV-cache group's block a whole pool block, as users are counted; every GPU keeps every "
            "layer's cache"),
    }


def exact_cache_suffix(plans: Sequence[tuple[object, Plan]], p: Plan) -> str:
    """``" (bf16)"``: the cache ``p``'s KV per token and per sequence are in, where some variant's users are counted
    in another cache (``Plan.kv_cache_exact_named``: DeepSeek-V4 as built, in vLLM's fp8_ds_mla pool pages), so
    every variant's bytes name their cache (QA: V4-Flash's as-built "8.08 KiB" was its bf16 figure beside users
    counted in fp8_ds_mla); "" where each variant's figures are its users' cache."""
    return f" ({p.kv_cache_exact_dtype})" if any(q.kv_cache_exact_named for _, q in plans) else ""


def kv_split_text(plan: Plan) -> str:
    """How a sequence's KV reaches one GPU, for Home's formula panel: ``÷ N GPUs`` only where tensor parallelism
    splits it (``Plan.kv_cache_bytes_per_token_per_gpu`` below ``kv_cache_bytes_per_token``: KV heads >= the
    tensor-parallel size), else replicated on each GPU (one KV head, an MLA latent: DeepSeek-V3.2 and V4); for a
    plan of pipeline stages (:func:`planner.pipeline.plan_pipeline`), the stage's layers on its tensor-parallel
    group.

    Sources: :func:`planner.model.kv.kv_cache_bytes_per_token` (each layer's ``bytes_per_token(dtypes, tp)``).
    """
    pp, whole, per_gpu = (plan.pipeline_parallel_size, plan.kv_cache_bytes_per_token,
                          plan.kv_cache_bytes_per_token_per_gpu)
    tp = plan.num_gpus // pp
    layers = " of the stage's layers" if pp > 1 else ""
    if tp == 1 or not per_gpu:
        return layers
    ways = round(whole / (per_gpu * pp))  # the stages' layers are (about) equal shares of the model's
    if ways <= 1:
        return (f"{layers}, replicated on each of the {tp} GPUs (one latent or fewer KV heads than GPUs: nothing to "
                "split)")
    if ways >= tp:
        return f"{layers} ÷ {tp} GPUs (tensor parallel splits the KV heads)"
    return f"{layers} ÷ {ways} (the KV heads split {ways} ways, each part replicated on {tp // ways} of the {tp} GPUs)"


def users_formula_text(plan: Plan, per_seq_paged: int) -> str:
    """The users row's formula on Home's panel: ``⌊(budget − prefill extra) ÷ KV per sequence⌋`` with the numbers,
    as :func:`planner.budget.plan` counts them (``Plan.kv_cache_prefill_extra_bytes``, one prefill chunk's window
    blocks set aside first; no term where it is 0). Where the users the row's value shows are not the KV cache's (a
    context past the model's limit: 0; an explicit ``max_num_seqs`` below it), the text says why after the arithmetic
    (QA: Llama 3 8B at 32,768 tokens read ⌊... ÷ ...⌋ beside a value of 0)."""
    pool = "" if plan.kv_cache_pool_bytes_per_token is None else f" {plan.kv_cache_dtype} pool"
    extra = plan.kv_cache_prefill_extra_bytes
    budget = f"{format_int(plan.kv_cache_budget_bytes)} B"
    room, figures = (("(budget − prefill extra)", f"({budget} − {format_int(extra)} B)") if extra else
                     ("budget", budget))
    held, users = plan.max_concurrent_sequences_by_memory, plan.max_concurrent_sequences
    limit = plan.max_position_embeddings
    after = ("" if users == held else
             f" = {format_int(held)} the KV cache holds; 0 at {format_int(plan.context_len)} tokens, past the model's "
             f"{format_int(limit)} (max_position_embeddings)" if limit and plan.context_len > limit and users == 0 else
             f" = {format_int(held)} the KV cache holds, at most max_num_seqs {format_int(users)}")
    return (f"⌊{room} ÷ KV per sequence in whole {format_int(plan.block_size)}-token{pool} blocks⌋ = "
            f"⌊{figures} ÷ {format_int(per_seq_paged)} B⌋{after}")
