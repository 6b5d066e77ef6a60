"""Home's budget for a link with a vLLM data / expert / context parallel launch: one rank, as ``plan`` prices it.

Where the link carries the flags the Engine page plans with :func:`planner.scale.plan_scale`
(:func:`ui.engine_home.link_scale`: ``-dp`` with ``--enable-expert-parallel``, or ``-dcp``), Home's budget tiles,
verdict and fixes are those of one attention data-parallel rank with its share of the routed experts and of the
batch (:func:`planner.rank_budget.rank_plan`), the function ``python -m planner plan`` with the same flags
calls: QA, DeepSeek-V3 on H200 with ``data_parallel_size=8&enable_expert_parallel=true``: "Does not fit ... weights
626.92 GiB per GPU" on Home, 93.92 GiB per GPU and "fits" from the CLI. Elsewhere Home plans as before.
"""

from __future__ import annotations

from planner.budget import PlanRequest
from planner.engines.types import EnginePlan, EngineRequest
from planner.model import ModelSpec
from planner.rank_budget import RankBudget, rank_plan


def link_scale_plan(model: ModelSpec, gpu, request: EngineRequest, plain: EnginePlan | str, dcp: int):
    """:func:`planner.scale.plan_scale` of ``request`` under the link's scale flags
    (:func:`ui.engine_home.link_scale` with ``dcp``, the valid size Home's budget applies), or None where the Engine
    page plans plain replicas (no such flag, ``-dp`` alone), another engine, pipeline stages, an engine that cannot
    plan the inputs (``plain`` is then :func:`ui.engine_home.home_engine_plan`'s sentence) or a launch the planner
    refuses (the Engine page then plans one tensor-parallel replica too)."""
    from ui.engine_home import link_scale  # noqa: PLC0415 - ui.engine_home imports this module

    scale = link_scale(request, dcp)
    if isinstance(plain, str) or scale is None:
        return None
    from planner.scale import plan_scale  # noqa: PLC0415 - only a link with scale flags needs it

    try:
        return plan_scale(model, gpu.framework_memory_bytes, request, scale)
    except ValueError:
        return None


def rank_budget(model: ModelSpec, gpu, request: PlanRequest, scale) -> RankBudget | None:
    """One rank's budget of the launch ``scale`` (:func:`link_scale_plan`) for ``request``, Home's budget request of
    the whole batch (:func:`planner.rank_budget.rank_plan`, as ``plan`` prices those flags); None without a
    scale launch or where the budget cannot price that rank (Home then plans as without one)."""
    if scale is None:
        return None
    try:
        return rank_plan(model, gpu.framework_memory_bytes, gpu.id, request, scale)
    except ValueError:
        return None
