"""The budget of a request whose KV is split along tokens by decode context parallel (vLLM
``--decode-context-parallel-size`` / ``-dcp``), as :mod:`planner.pipeline` plans pipeline stages.

With ``d`` GPUs of the tensor-parallel group in one DCP group, token ``t`` of a request is kept on rank ``t mod d``,
so one GPU keeps ``ceil(L / d)`` of a request's ``L`` tokens; no GPU is added and each GPU's pool (memory, weights,
overhead, KV budget) is the one :func:`planner.budget.plan` sizes. So, per GPU:

    users at L        = users of sequences of ceil(L / d) tokens in the same budget (whole blocks, as plan pages them)
    KV per sequence   = the shard's: ceil(L / d) tokens                       (per GPU)
    max context       = d x the longest shard the batch fits, capped by max_position_embeddings
    tokens held       = d x one GPU's tokens (the group keeps d different shards of each request)

Which ``d`` vLLM accepts: ``d`` divides the tensor-parallel size and
``1 <= d <= tp / kv_heads`` (1 KV head for MLA's latent); the model's cached layers are full attention or MLA
(:func:`planner.scale.context.check_dcp_model`), and the attention backend the newest vLLM picks on the GPU returns
the decode log-sum-exp (:func:`planner.scale.context.dcp_backend_refusal`). Pipeline stages beside ``d`` > 1 are
refused as the Engine page's and the CLI's launch refuses them (:data:`planner.scale.layout.PIPELINE_NOT_MODELLED`).
Anything else raises ValueError.

Sources: vllm/v1/kv_cache_interface.py (``FullAttentionSpec.max_memory_usage_bytes``: ``cdiv(L, dcp)`` tokens per
GPU), vllm/v1/core/kv_cache_utils.py (``_report_kv_cache_config``: the token print multiplied by the DCP size),
docs/serving/context_parallel_deployment.md (supported models and the ``tp / H`` range), vllm/v1/worker/cp_utils.py
(``check_attention_cp_compatibility``); the engine view of the same launch: :mod:`planner.scale.context`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from planner.diagnose import Fix, gib
from planner.model import ModelSpec
from planner.pipeline import plan_pipeline
from planner.plan_types import Plan, PlanRequest

BUDGET_PROFILE = "vllm"
"""The vLLM profile whose attention backends the budget checks (the budget prices the newest vLLM)."""


def dcp_kv_heads(model: ModelSpec) -> int:
    """KV heads one token keeps per layer for vLLM's DCP range: 1 for MLA's latent, else ``num_key_value_heads``
    (docs/serving/context_parallel_deployment.md)."""
    return 1 if model.attention_kind == "MLA" else max(1, model.num_key_value_heads)


def check_dcp_budget(model: ModelSpec, num_gpus: int, decode_context_parallel_size: int, *,
                     pipeline_parallel_size: int = 1, gpu_id: str = "", kv_cache_dtype: str = "auto") -> None:
    """Refuse a ``decode_context_parallel_size`` vLLM would not run for this model on ``num_gpus`` GPUs per replica
    (module docstring); nothing for a valid one or 1.

    Raises:
        ValueError: saying how to fix it (the size, the tensor-parallel GPUs, the model's layers or the GPU's
            attention backend).
    """
    dcp, pp = decode_context_parallel_size, pipeline_parallel_size
    if dcp < 1:
        raise ValueError(f"decode_context_parallel_size must be at least 1, got {dcp}")
    if dcp == 1:
        return
    from planner.scale.context import check_dcp_model, dcp_backend_refusal  # noqa: PLC0415 - engines load lazily
    from planner.scale.layout import PIPELINE_NOT_MODELLED  # noqa: PLC0415 - as the line above

    if pp > 1:  # as the Engine page's and the CLI's launch (planner.scale.plan_scale) refuse it
        raise ValueError(PIPELINE_NOT_MODELLED)
    check_dcp_model(model)  # the layers first: no size fixes a sliding window
    tp = num_gpus // pp if pp >= 1 and num_gpus % pp == 0 else num_gpus
    group = "each stage's tensor-parallel GPUs" if pp > 1 else "the tensor-parallel size"
    if tp % dcp:
        raise ValueError(f"decode_context_parallel_size {dcp} must divide {group} {tp} (DCP splits a request over "
                         f"the tensor-parallel GPUs): use a divisor of {tp} or drop it")
    heads = dcp_kv_heads(model)
    if dcp * heads > tp:
        raise ValueError(f"decode_context_parallel_size {dcp} exceeds tp / KV heads = {tp} / {heads} (vLLM's range): "
                         + (f"use at most {tp // heads}" if tp // heads > 1 else "drop it")
                         + f" or use {dcp * heads} tensor-parallel GPUs")
    refusal = dcp_backend_refusal(model, BUDGET_PROFILE, gpu_id, kv_cache_dtype)
    if refusal:
        raise ValueError(refusal)


def shard_contexts(contexts: Sequence[int], decode_context_parallel_size: int) -> tuple[int, ...]:
    """The tokens one GPU keeps of a request of each of ``contexts`` under ``-dcp decode_context_parallel_size``:
    ``ceil(L / d)`` (vllm/v1/kv_cache_interface.py ``max_memory_usage_bytes``: ``cdiv(L, dcp)``). A sweep of users
    against length (:func:`planner.sweep.concurrency_curve`) at these lengths gives the users of
    :func:`plan_context_parallel` at ``contexts``: the same budget, sequences of the shard's length."""
    return tuple(-(-c // decode_context_parallel_size) for c in contexts)


def plan_context_parallel(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str = "", *,
                          decode_context_parallel_size: int = 1, pipeline_parallel_size: int = 1) -> Plan:
    """Plan ``request`` with each request's KV split along tokens over ``decode_context_parallel_size`` GPUs of the
    tensor-parallel group (of each pipeline stage's, :func:`planner.pipeline.plan_pipeline`).

    With a size of 1 this is :func:`planner.pipeline.plan_pipeline`. With ``d`` > 1 the per-GPU figures are those of
    the shard, sequences of ``ceil(context_len / d)`` tokens in the same budget (users, KV per sequence per GPU, KV
    needed); ``context_len`` stays the request's; the contexts are ``d`` x the shard's (capped by the model's
    ``max_position_embeddings``), the tokens held ``d`` x one GPU's; ``kv_cache_bytes_per_sequence`` and
    ``kv_cache_bytes_per_token`` stay a whole request's at tensor parallel 1. A note says what was applied.

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes], > 0.
        request: The workload; ``num_gpus`` is every GPU of the replica.
        gpu_id: Catalog id (its attention backend is checked), echoed in the result.
        decode_context_parallel_size: GPUs one request's KV is split over, >= 1.
        pipeline_parallel_size: Stages, as :func:`planner.pipeline.plan_pipeline`.

    Raises:
        ValueError: as :func:`planner.pipeline.plan_pipeline`, or a size vLLM would not run (:func:`check_dcp_budget`).

    Sources: the module docstring (vllm/v1/kv_cache_interface.py ``max_memory_usage_bytes``: ``cdiv(L, dcp)``;
    docs/serving/context_parallel_deployment.md).
    """
    dcp, pp = decode_context_parallel_size, pipeline_parallel_size
    check_dcp_budget(model, request.num_gpus, dcp, pipeline_parallel_size=pp, gpu_id=gpu_id,
                     kv_cache_dtype=request.kv_cache_dtype)
    whole = plan_pipeline(model, gpu_memory_bytes, request, gpu_id, pipeline_parallel_size=pp)
    if dcp == 1:
        return whole
    length, local = request.context_len, -(-request.context_len // dcp)
    shard = plan_pipeline(model, gpu_memory_bytes, replace(request, context_len=local), gpu_id,
                          pipeline_parallel_size=pp)
    limit = model.max_position_embeddings
    by_memory = shard.max_context_len_by_memory * dcp  # C fits iff ceil(C / d) <= the shard's longest
    max_ctx, limited_by = shard.max_context_len * dcp, shard.max_context_len_limited_by
    if limited_by == "tensor_parallel":
        max_ctx = 0
    elif limit and by_memory >= limit:
        max_ctx, limited_by = limit, "model"
    elif limited_by == "model":  # the shard reached the limit; d x it is past it
        max_ctx = limit
    reasons, suggestions = _messages(shard, whole, length, local, dcp, max_ctx)
    suggestions = tuple(_gpu_fix(fix, model, gpu_memory_bytes, replace(request, context_len=local), gpu_id, dcp, pp)
                        if getattr(fix, "key", None) == "num_gpus" else fix for fix in suggestions)
    note = (f"decode_context_parallel_size {dcp}: each request's KV split along tokens over {dcp} tensor-parallel "
            f"GPUs (vLLM -dcp, token t on GPU t mod {dcp}); one GPU keeps {local:,} of a request's {length:,} tokens, "
            "so the users and the KV per GPU are those of that shard in the same budget")
    return replace(
        shard, context_len=length, decode_context_parallel_size=dcp,
        kv_cache_bytes_per_sequence=whole.kv_cache_bytes_per_sequence,
        kv_cache_capacity_tokens=shard.kv_cache_capacity_tokens * dcp,
        kv_cache_capacity_tokens_at_context=shard.kv_cache_capacity_tokens_at_context * length // local,
        max_context_len=max_ctx, max_context_len_limited_by=limited_by, max_context_len_by_memory=by_memory,
        max_context_len_before_overheads=shard.max_context_len_before_overheads * dcp,
        fits=not reasons, reasons=reasons, suggestions=suggestions, notes=(*shard.notes, note))


def _messages(shard: Plan, whole: Plan, length: int, local: int, dcp: int,
              max_ctx: int) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The shard plan's reasons and fixes in the request's terms: its KV line names the request's length and the
    shard, its context fix ``d`` x the shard's; the model's length limit is checked at the request's length (the
    whole plan's message)."""
    reasons, suggestions = [], []
    limit = whole.max_position_embeddings
    if limit and length > limit:  # the shard is shorter than the request: the whole plan's words
        reasons += [r for r in whole.reasons if r.startswith(f"context_len {length:,}")]
        suggestions += [s for s in whole.suggestions if getattr(s, "key", None) == "context_len"][:1]
    shard_kv = f"x {local:,} tokens need "
    for reason in shard.reasons:
        if shard_kv in reason and reason.split(" ", 1)[0].replace(",", "").isdigit():
            need = shard.kv_cache_bytes_needed
            reason = (f"{shard.batch_size:,} sequence{'' if shard.batch_size == 1 else 's'} x {length:,} tokens "
                      f"({local:,} per GPU with decode context parallel {dcp}) need {gib(need)} of KV cache per GPU; "
                      f"the budget is {gib(max(shard.kv_cache_budget_bytes, 0))}")
        reasons.append(reason)
    for fix in shard.suggestions:
        if getattr(fix, "key", None) == "context_len":
            if any(getattr(s, "key", None) == "context_len" for s in suggestions) or not max_ctx:
                continue
            fix = Fix(f"lower context_len to {max_ctx:,} (fits this batch)", "context_len", max_ctx)
        suggestions.append(fix)
    return tuple(reasons), tuple(suggestions)


def _gpu_fix(fix: Fix, model: ModelSpec, gpu_memory_bytes: int, shard: PlanRequest, gpu_id: str, dcp: int,
             pp: int) -> Fix | str:
    """The shard plan's GPU-count ``fix`` (:func:`planner.diagnose.gpus_for_batch`, per stage x ``pp``) as a count
    that keeps ``-dcp dcp``: vLLM refuses a tensor-parallel size the DCP size does not divide ("tp_size ... must be
    divisible by dcp_size", ``ParallelConfig._validate_parallel_config`` in vllm/config/parallel.py), and the range
    of :func:`check_dcp_budget` holds. The smallest valid tensor-parallel size at or above the fix's that ``dcp``
    divides and whose shard plan (``shard``: the request at ``ceil(L / dcp)`` tokens) holds the batch, worded with
    the DCP it keeps; where none up to 64 does, the smallest such size (at or above the fix's count, so it holds
    the weights), worded as :func:`planner.diagnose._for_this_batch` words it; where none is left, the replicas
    advice.
    Example: GLM-4.7-Flash, 33 x 131,072 tokens on 4 H100 with ``-dcp 4``: "use num_gpus 5" became "use num_gpus
    20" (tensor parallel 5 and 10 do not split over 4; 20 holds 39 users)."""
    from planner.diagnose import valid_tensor_parallel_sizes  # noqa: PLC0415 - only a -dcp GPU fix needs it

    sizes = []
    for n in valid_tensor_parallel_sizes(model, 64):
        if n * pp < fix.value or n % dcp:
            continue
        try:
            check_dcp_budget(model, n * pp, dcp, pipeline_parallel_size=pp, gpu_id=gpu_id,
                             kv_cache_dtype=shard.kv_cache_dtype)
        except ValueError:
            continue
        sizes.append(n)
    split = f"decode context parallel {dcp} kept"
    for n in sizes:
        if plan_pipeline(model, gpu_memory_bytes, replace(shard, num_gpus=n * pp), gpu_id,
                         pipeline_parallel_size=pp).fits:
            return Fix(f"use num_gpus {n * pp} ({_group_words(n, pp)}, {split}; the smallest such count that holds "
                       "this batch)", "num_gpus", n * pp)
    if sizes:  # at or above the fix's count, so it holds the weights
        n = sizes[0]
        return Fix(f"use num_gpus {n * pp} ({_group_words(n, pp)}, {split}; it holds the weights but not this batch: "
                   "there, lower batch_size or context_len, or add replicas)", "num_gpus", n * pp)
    return "add replicas (each holds part of the batch) or a GPU with more memory"


def _group_words(tp: int, pp: int) -> str:
    """``"tensor parallel 20"``, or ``"2 stages of 20 tensor-parallel GPUs"`` in pipeline stages."""
    return f"tensor parallel {tp}" if pp == 1 else f"{pp} stages of {tp} tensor-parallel GPUs"
