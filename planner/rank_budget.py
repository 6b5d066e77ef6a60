"""The engine-free budget of one attention data-parallel rank of a scale launch, as ``plan`` and Home price it.

Under vLLM ``--data-parallel-size N --enable-expert-parallel`` (or SGLang's data-parallel attention) each rank is an
engine with its own KV cache and scheduler (vllm/v1/engine/core.py ``DPEngineCoreProc``), and each GPU holds its share
of the routed experts (vllm/model_executor/layers/fused_moe/layer.py ``determine_expert_map``). The budget of one
rank is the bare budget (:func:`planner.context_budget.plan_context_parallel`) of :func:`planner.scale.weights.
rank_model` (the experts scaled to the GPU's share) at the rank's share of the batch, ``ceil(batch / ranks)``
(:func:`planner.scale.replicas.replica_batch`: vLLM's API server balances requests over the data-parallel engines).

``python -m planner plan`` with a scale flag (planner/cli/scale.py) and Home with a link that carries a vLLM scale
launch (ui/home_scale.py) both call :func:`rank_plan`, so one link gives one answer. Pure arithmetic. It sits beside
:mod:`planner.context_budget` rather than in ``planner/scale/``, which does not import the budget (its layer rule,
tests/test_planner_purity.py).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from planner.scale.replicas import replica_batch, replicas_verdict, spread_plan
from planner.scale.weights import rank_model
from planner.text import count_noun

if TYPE_CHECKING:
    from planner.scale.plan import ScalePlan


@dataclass(frozen=True)
class RankBudget:
    """:func:`rank_plan`'s answer.

    Attributes:
        result: The rank's :class:`planner.budget.Plan` at its share of the batch (batch fixes restated for the
            whole batch, GPU-count fixes per rank).
        verdict: One line on the batch over the ranks (:func:`planner.scale.replicas.replicas_verdict`); "" with
            one rank.
        data_parallel: The ``plan`` JSON's ``data_parallel`` block; None with one rank.
        share_result: ``result`` before its batch fixes are restated for the whole batch (the plan of the rank at
            its share, whose fixes a caller re-plans on that share: Home's :func:`planner.fixes.checked_fixes`).
        model: The model that plan prices (:func:`v1_model`: the GPU's share of the routed experts).
        request: The request that plan prices (:func:`rank_request`: the rank's share of the batch and its MoE
            layers' data-parallel layout), which a caller's fixes re-plan (Home's :func:`planner.fixes.checked_fixes`).
    """

    result: object
    verdict: str
    data_parallel: dict | None
    share_result: object
    model: object
    request: object = None


def v1_model(model, scale: ScalePlan | None):
    """The model the engine-free plan prices: one rank's share of the experts under a scale plan
    (:func:`planner.scale.weights.rank_model`)."""
    return model if scale is None else rank_model(model, scale.layout)


def v1_plan(model, gpu_memory_bytes: int, gpu_id: str, request, scale: ScalePlan):
    """The engine-free plan of one rank of a scale launch (:func:`v1_model`), with the launch's decode context
    parallel size applied (:func:`planner.context_budget.plan_context_parallel`: each GPU keeps ``ceil(L / dcp)``
    tokens of a request) where the budget can apply it, else without it (:func:`v1_result` then says so)."""
    from planner.budget import plan
    from planner.context_budget import plan_context_parallel

    rank = v1_model(model, scale)
    try:
        return plan_context_parallel(rank, gpu_memory_bytes, request, gpu_id,
                                     decode_context_parallel_size=scale.layout.decode_context_parallel_size)
    except ValueError:  # a size the launch refuses (its reasons say why): the cache without the split
        return plan(rank, gpu_memory_bytes, request, gpu_id=gpu_id)


def rank_plan(model, gpu_memory_bytes: int, gpu_id: str, request, scale: ScalePlan) -> RankBudget:
    """The engine-free plan of one attention data-parallel rank (:func:`v1_plan`, :func:`v1_result`) at its share
    of the batch: the ranks each hold ``ceil(batch / ranks)`` requests of a batch spread over them
    (:func:`planner.scale.replicas.replica_batch`; vLLM's API server balances requests over the data-parallel
    engines), so ``fits`` compares that share with one rank's users and a batch fix names the whole batch.

    Args:
        model: The whole model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        gpu_id: Catalog id, passed to the budget.
        request: The :class:`planner.budget.PlanRequest` of the whole batch, ``num_gpus`` the rank's
            tensor-parallel size.
        scale: :func:`planner.scale.plan_scale` of the launch.
    """
    replicas, batch = scale.layout.attention_dp, request.batch_size
    share = rank_request(model, request, scale.layout)
    priced = v1_model(model, scale)
    result = v1_result(v1_plan(model, gpu_memory_bytes, gpu_id, share, scale), model, scale)
    verdict = replicas_verdict(batch, replicas, result.max_concurrent_sequences, result.context_len)
    if replicas <= 1:
        return RankBudget(result, verdict, None, result, priced, share)
    spread = spread_plan(result, replicas)
    return RankBudget(spread, verdict, {
        "replicas": replicas, "batch_size": batch, "batch_size_per_replica": share.batch_size,
        "max_concurrent_sequences_per_replica": spread.max_concurrent_sequences,
        "max_concurrent_sequences_all_replicas": spread.max_concurrent_sequences * replicas,
        "fits": spread.fits, "verdict": verdict}, result, priced, share)


def rank_request(model, request, layout):
    """``request`` (the whole batch) as one attention data-parallel rank of ``layout`` plans it: its share of the
    batch, ``ceil(batch / ranks)`` (:func:`planner.scale.replicas.replica_batch`), and under vLLM the MoE layers'
    data-parallel layout (:func:`planner.scale.plan.moe_data_parallel_of`): vLLM's profile run gathers every rank's
    tokens into each MoE layer (vllm/model_executor/layers/fused_moe/prepare_finalize/naive_dp_ep.py), a peak the
    overhead charges as the Engine view does (:attr:`planner.budget.PlanRequest.moe_data_parallel`). QA:
    DeepSeek-V3.2 on an H200 at 32,768 tokens under ``-dp 8 --enable-expert-parallel``: 19 users per rank in the
    budget without it, 9 in the launch; 9 with it."""
    from planner.scale.plan import moe_data_parallel_of  # noqa: PLC0415

    return replace(request, batch_size=replica_batch(request.batch_size, layout.attention_dp),
                   moe_data_parallel=moe_data_parallel_of(model, layout))


def rank_inputs(model, request, scale_request, family: str = "vllm"):
    """``(rank model, rank request, layout)`` of one attention data-parallel rank of the launch ``scale_request``
    (a :class:`planner.scale.ScaleRequest`) without planning its engine: the layout
    (:func:`planner.scale.layout.rank_layout`, ``request.num_gpus`` the launch's tensor-parallel size), the model
    with the GPU's share of the routed experts (:func:`v1_model`) and the request of :func:`rank_request`. What
    :func:`rank_plan` prices at each context, for the pages that sweep it (Concurrency, Allocation, GQA savings,
    Memory curves: ui/link_rank.py).

    Raises:
        ValueError: a layout the flags cannot make (:func:`planner.scale.layout.rank_layout` names the flag).
    """
    from planner.scale.layout import rank_layout  # noqa: PLC0415
    from planner.scale.plan import dcp_kv_heads  # noqa: PLC0415

    layout = rank_layout(scale_request, family=family, tensor_parallel_size=request.num_gpus,
                         num_experts=model.num_experts, num_kv_heads=dcp_kv_heads(model))
    return rank_model(model, layout), rank_request(model, request, layout), layout


def v1_result(result, model, scale: ScalePlan | None):
    """The engine-free plan of a scale launch, with ``params`` and ``weights_bytes`` back at the whole model's
    (the per-GPU keys stay the rank's) and a note saying what the section prices; unchanged without a scale plan.

    Under decode context parallel the section's users are those of a cache that keeps every token of a request
    on each GPU of the group; ``-dcp N`` keeps 1/N of them (vllm/v1/worker/cp_utils.py), so the note points to
    the launch's count (QA: Kimi-K2.5 on 8 x H200 with -dcp 8 printed "max users 46" above "scale users 375").
    A data-parallel MoE launch's profile pass gathers every rank's tokens into each MoE layer
    (:class:`planner.engines.vllm_moe_dispatch.MoeDispatchPeak`); the section charges it (:func:`rank_request`) and
    the note says so (DeepSeek-V3.2 on a B200 at 32K once read 40 users here against the launch's 21)."""
    if scale is None:
        return result
    layout, notes = scale.layout, []
    if scale.context is not None and result.decode_context_parallel_size == 1:
        notes.append(f"this budget prices the cache without decode context parallel (each GPU keeps every token "
                     f"of its requests); -dcp {layout.decode_context_parallel_size} keeps 1/"
                     f"{layout.decode_context_parallel_size} of them: "
                     f"{count_noun(scale.requests_all_ranks, 'user')}, as the launch counts them")
    if model.num_experts and (layout.attention_dp > 1 or layout.expert_parallel_size > 1):
        from planner.model.params import model_weight_bytes

        notes.append(f"this budget prices one attention data-parallel rank: each GPU holds {layout.local_experts} "
                     f"of {layout.global_experts} routed experts per MoE layer; users are per rank, of the launch's "
                     f"{layout.attention_dp} ranks")
        if scale.moe_dispatch is not None:
            peak = scale.moe_dispatch.peak_bytes / 2**30
            notes.append(f"this budget charges the data-parallel MoE layer's profile peak ({peak:.2f} GiB per GPU, "
                         "every rank's tokens gathered into each MoE layer) as the engine view does")
        result = replace(result, params=model.num_parameters,
                         weights_bytes=model_weight_bytes(model, result.weight_dtype))
    if layout.family == "vllm" and layout.attention_dp > 1:
        result = replace(result, suggestions=tuple(per_rank_fix(s, layout.attention_dp) for s in result.suggestions))
    return replace(result, notes=(*result.notes, *notes)) if notes else result


def per_rank_fix(fix, dp: int):
    """A GPU-count fix of the section's one-rank plan under vLLM ``--data-parallel-size dp`` (each rank its own
    ``--tensor-parallel-size`` GPUs, KV pool and scheduler: vllm/config/parallel.py ``world_size_across_dp`` =
    tp x pp x dp), worded as what it is: the tensor-parallel size of each rank, ``dp`` x it GPUs in all, the
    smallest at which each rank holds its share of the batch (:func:`rank_plan` plans the rank at
    ``ceil(batch / dp)``; QA: "use num_gpus 2 (tensor parallel; the smallest count that holds this batch)" for
    Llama 3.1 8B, 20 x 32,768 tokens on 4 ranks of one H100, whose 4 ranks already hold 52); any other suggestion
    as it is."""
    if getattr(fix, "key", None) != "num_gpus":
        return fix
    from planner.diagnose import Fix  # noqa: PLC0415

    n = fix.value
    return Fix(f"use num_gpus {n} per data-parallel rank (tensor parallel {n} in each of the {dp} ranks, {n * dp} "
               f"GPUs; the smallest count at which each rank holds its share, ceil(batch / {dp}): scale users)",
               "num_gpus", n)
