"""The link's vLLM data + expert parallel rank on the budget pages, priced as Home and ``plan`` price it.

A link with ``data_parallel_size=N&enable_expert_parallel=true`` (the Engine page's ``-dp N --enable-expert-parallel``)
is priced on Home as one attention data-parallel rank (:func:`planner.rank_budget.rank_plan`): each GPU holds its
share of the routed experts, the rank its share of the batch, and the profile pass the data-parallel MoE layer's peak.
QA: DeepSeek-V3.2 on an H200 at 32,768 tokens read 9 users per rank on Home and the Engine page, 0 and "does not fit"
on Concurrency, Allocation, GQA savings and Memory curves, which planned every expert on one GPU under a caption
naming the link's 8 replicas. Those pages now plan :func:`link_rank`'s model and request
(:func:`planner.rank_budget.rank_inputs`: the same rank without its engine plan) wherever Home plans the rank: a vLLM
engine, no pipeline stages, a layout the flags can make.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import streamlit as st

from planner.budget import PlanRequest
from planner.model import ModelSpec


@dataclass(frozen=True)
class LinkRank:
    """One rank of the link's launch (:func:`link_rank`).

    Attributes:
        model: The model with one GPU's share of the routed experts.
        request: The request of one rank: its share of the batch and the MoE layers' data-parallel layout.
        ranks: The launch's attention data-parallel ranks.
        local_experts, global_experts: Routed experts per MoE layer on one GPU, and in all.
    """

    model: ModelSpec
    request: PlanRequest
    ranks: int
    local_experts: int
    global_experts: int


def link_expert_parallel() -> bool:
    """The link's ``enable_expert_parallel`` switch as the Engine page's bound toggle reads it (``true``)."""
    return (st.query_params.get("enable_expert_parallel") or "").lower() == "true"


def link_rank(model: ModelSpec, request: PlanRequest, stages: int = 1) -> LinkRank | None:
    """One attention data-parallel rank of the link's ``-dp N --enable-expert-parallel`` launch for ``request`` (the
    whole batch, ``num_gpus`` each rank's tensor-parallel size), as Home prices it
    (:func:`planner.rank_budget.rank_inputs`); None where Home plans no such rank: no such flags, another engine
    than vLLM, pipeline stages (``stages`` > 1), or a layout the flags cannot make (a dense model)."""
    from planner.engines.profiles import ENGINE_PROFILES  # noqa: PLC0415
    from planner.rank_budget import rank_inputs  # noqa: PLC0415
    from planner.scale import ScaleRequest  # noqa: PLC0415
    from ui.budget_knobs import link_engine  # noqa: PLC0415 - ui.budget_knobs reads the sidebar
    from ui.feature_line import link_replicas  # noqa: PLC0415

    replicas = link_replicas()
    if (replicas <= 1 or stages > 1 or not link_expert_parallel()
            or ENGINE_PROFILES[link_engine()].family != "vllm"):
        return None
    try:
        rank, share, layout = rank_inputs(model, request, ScaleRequest(data_parallel_size=replicas,
                                                                       enable_expert_parallel=True))
    except ValueError:
        return None
    return LinkRank(rank, share, layout.attention_dp, layout.local_experts, layout.global_experts)


def rank_line(rank: LinkRank, batch_size: int, what: str) -> str:
    """The caption that says ``what`` (``"every variant is planned as"``) one rank of the link's launch."""
    return (f"The link's `data_parallel_size={rank.ranks}` with `enable_expert_parallel=true`: {what} one attention "
            f"data-parallel rank, as Home and `plan -dp {rank.ranks} --enable-expert-parallel` price it: each GPU "
            f"holds {rank.local_experts:,} of {rank.global_experts:,} routed experts per MoE layer, the rank its "
            f"share of batch {batch_size:,}, {rank.request.batch_size:,} (ceil({batch_size:,} / {rank.ranks:,})), "
            "and the profile pass every rank's tokens gathered into each MoE layer; users are per rank.")


def link_ranks(models: Sequence[ModelSpec], whole: PlanRequest, share: PlanRequest,
               stages: int = 1) -> tuple[list[tuple[ModelSpec, PlanRequest]], LinkRank | None]:
    """``[(model, request)]`` each of ``models`` plans under the link: its rank of ``whole`` (the whole batch,
    :func:`link_rank`) where it has one, else ``(model, share)`` (a replica's share of the batch,
    :func:`ui.feature_line.link_replica_share`); with the first rank found (None: none, the pages plan as before)."""
    pairs, first = [], None
    for m in models:
        rank = link_rank(m, whole, stages)
        pairs.append((m, share) if rank is None else (rank.model, rank.request))
        first = first or rank
    return pairs, first


def memory_views(models: Sequence[ModelSpec], gpus: Sequence, whole: PlanRequest, share: PlanRequest,
                 contexts: Sequence[int], stages: int = 1):
    """Memory curves' ``(curves, grid, rank)`` (:func:`ui.data.memory_curve_groups`, :func:`ui.data.plan_grid`) with
    each model planned as :func:`link_ranks` plans it (the page's one call of each where the link has no rank), and
    the first rank (None: none)."""
    from ui import data  # noqa: PLC0415

    pairs, rank = link_ranks(models, whole, share, stages)
    if rank is None:
        return (data.memory_curve_groups(models, gpus, share, contexts, stages),
                data.plan_grid(models, gpus, share, stages), None)
    curves, grid = [], {}
    for m, r in pairs:
        curves += data.memory_curve_groups((m,), gpus, r, contexts, stages)
        grid |= data.plan_grid((m,), gpus, r, stages)
    return curves, grid, rank
