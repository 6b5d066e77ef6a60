"""Curves over context length, for charts and for the catalog-wide sweep.

Each curve evaluates the same arithmetic as :func:`planner.budget.plan`, with
the per-model parts (weights, KV profile, overhead) computed once per curve, so
a sweep of every catalog model x GPU x 256 context points stays cheap.

A replica split into pipeline stages (``pipeline_parallel_size``) is swept per stage, each stage's layers on its
tensor-parallel GPUs (:func:`planner.pipeline.pipeline_stages`), as :func:`planner.pipeline.plan_pipeline` plans it;
with one stage nothing else is computed.

Sources: as planner.budget (vLLM kv_cache_utils; DOMAIN.md section 4); the stages: vLLM ``get_pp_indices``
(vllm/distributed/utils.py) and ``get_kv_cache_configs`` (vllm/v1/core/kv_cache_utils.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import repeat
from operator import floordiv, sub

from planner.budget import PlanRequest, profile_pass_tokens
from planner.engines.profiles import LARGE_GPU_BYTES, is_large_datacenter_gpu
from planner.engines.vllm_hybrid_profile import paged_kv_profile
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.params import model_weight_bytes
from planner.overhead import overhead_bytes
from planner.pipeline import pipeline_stages


def context_points(min_tokens: int = 128, max_tokens: int = 131072, num_points: int = 64) -> tuple[int, ...]:
    """Log-spaced integer context lengths from ``min_tokens`` to ``max_tokens`` inclusive.

    Raises:
        ValueError: ``min_tokens < 1``, ``max_tokens < min_tokens`` or ``num_points < 2``.
    """
    if min_tokens < 1 or max_tokens < min_tokens or num_points < 2:
        raise ValueError(
            f"need 1 <= min_tokens <= max_tokens and num_points >= 2, got {min_tokens}, {max_tokens}, {num_points}")
    ratio = math.log(max_tokens / min_tokens)
    points = {round(min_tokens * math.exp(ratio * i / (num_points - 1))) for i in range(num_points)}
    points.add(min_tokens)
    points.add(max_tokens)
    return tuple(sorted(points))


def contexts_up_to(contexts: tuple[int, ...], limit_tokens: int) -> tuple[int, ...]:
    """The ``contexts`` a model with a ``limit_tokens`` context limit supports, ending at the limit itself.

    A log grid seldom holds the limit: Mistral 7B v0.3's 32,768 lies between 29,679 and 33,497 of the
    64-point grid to 262,144 tokens, so a curve cut at the limit stopped at 29,679 while the plan reaches 32,768.
    The limit is added when it lies inside the grid (a 10M-token model's curve still ends at the grid's end).

    Example: ``contexts_up_to((128, 4000, 5000), 4096) == (128, 4000, 4096)``.
    """
    kept = tuple(c for c in contexts if c <= limit_tokens)
    if contexts and limit_tokens < contexts[-1] and (not kept or kept[-1] != limit_tokens):
        kept += (limit_tokens,)
    return kept


@dataclass(frozen=True, kw_only=True)
class PerGPUCosts:
    """What one GPU of a plan spends before any KV cache [bytes], and the KV profile."""

    weights_bytes_per_gpu: int
    overhead_bytes: int
    profile_exact: object
    profile_paged: object
    prefill_tokens: int = 0  # the one prefill chunk beside decoding sequences (planner.budget._PlanBase); 0 = none


def per_gpu_costs(model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int | None = None,
                  gpu_name: str = "") -> PerGPUCosts:
    """Weights, overhead and KV profiles on one GPU for ``request``.

    Args:
        model: The model.
        request: The workload and knobs.
        gpu_memory_bytes: The GPU's framework-visible memory [bytes]; picks vLLM's
            scheduler defaults for the overhead estimate (:func:`planner.budget.estimate_overhead`).
            None = the defaults of a large datacenter GPU.
        gpu_name: GPU name or catalog id (the A100 exception of those defaults; a hybrid's kernel alignment on
            datacenter Blackwell).

    Raises:
        ValueError: invalid request fields.
    """
    request.validate()
    tp = request.num_gpus
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, gpu_name=gpu_name)
    weights = model_weight_bytes(model, request.weight_dtype, tp)
    paged = paged_kv_profile(model, dtypes, tp, request.block_size, weight_dtype=request.weight_dtype,
                             kv_cache_dtype=request.kv_cache_dtype, gpu_name=gpu_name)  # hybrid, windows: as vLLM
    return PerGPUCosts(
        weights_bytes_per_gpu=weights, overhead_bytes=overhead_bytes(model, request, gpu_memory_bytes, gpu_name),
        profile_exact=kv_profile(model, dtypes, tp, 1), profile_paged=paged,
        prefill_tokens=profile_pass_tokens(request, gpu_memory_bytes or LARGE_GPU_BYTES, gpu_name) if paged.windowed
        else 0,
    )


def stage_costs(model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int | None = None, gpu_name: str = "", *,
                pipeline_parallel_size: int = 1) -> tuple[PerGPUCosts, ...]:
    """:func:`per_gpu_costs` of each pipeline stage on its tensor-parallel GPUs
    (:func:`planner.pipeline.pipeline_stages`: vLLM ``get_pp_indices`` in vllm/distributed/utils.py); one entry,
    the whole model's on ``request.num_gpus``, for one stage.

    Raises:
        ValueError: as :func:`per_gpu_costs`; stages that do not split the GPUs or the layers.
    """
    if pipeline_parallel_size == 1:
        return (per_gpu_costs(model, request, gpu_memory_bytes, gpu_name),)
    return tuple(per_gpu_costs(stage, group, gpu_memory_bytes, gpu_name)
                 for stage, group in pipeline_stages(model, request, pipeline_parallel_size))


@dataclass(frozen=True, kw_only=True)
class MemoryPoint:
    """Memory one GPU needs at one context length [bytes]."""

    context_len: int
    weights_bytes: int
    overhead_bytes: int
    kv_cache_bytes: int

    @property
    def total_bytes(self) -> int:
        """Weights + overhead + KV cache [bytes]."""
        return self.weights_bytes + self.overhead_bytes + self.kv_cache_bytes


def memory_curve(model: ModelSpec, request: PlanRequest, contexts: tuple[int, ...],
                 gpu_memory_bytes: int | None = None, gpu_name: str = "", *,
                 pipeline_parallel_size: int = 1) -> tuple[MemoryPoint, ...]:
    """Per-GPU memory for ``request.batch_size`` sequences at each context length.

    KV bytes are exact (no block rounding), windows and states applied. The overhead is
    the one :func:`planner.budget.plan` subtracts on that GPU (vLLM's scheduler defaults
    differ between GPU size classes, :func:`per_gpu_costs`), so the curve crosses the GPU's
    usable memory where the plan's max context lies (within block rounding).

    Args:
        model, request, contexts: The model, the knobs and the context lengths [tokens].
        gpu_memory_bytes, gpu_name: The GPU whose overhead to use; None = a large datacenter GPU.
        pipeline_parallel_size: Stages splitting ``request.num_gpus`` (:func:`planner.pipeline.pipeline_stages`):
            each point is then the stage whose GPUs hold the most bytes at that context (the first such stage), the
            GPU that fills first; every stage's cache is sized to the smallest worker's (vLLM
            ``get_kv_cache_configs``, vllm/v1/core/kv_cache_utils.py).

    Raises:
        ValueError: invalid request fields or a negative context; stages that do not split the GPUs or the layers.
    """
    if pipeline_parallel_size != 1:
        curves = [memory_curve(stage, group, contexts, gpu_memory_bytes, gpu_name)
                  for stage, group in pipeline_stages(model, request, pipeline_parallel_size)]
        return tuple(max(points, key=lambda p: p.total_bytes) for points in zip(*curves))
    costs = per_gpu_costs(model, request, gpu_memory_bytes, gpu_name)
    exact, chunk, batch = costs.profile_exact, costs.prefill_tokens, request.batch_size
    return tuple(
        MemoryPoint(
            context_len=c, weights_bytes=costs.weights_bytes_per_gpu, overhead_bytes=costs.overhead_bytes,
            kv_cache_bytes=batch * exact.bytes_per_sequence(c) + (exact.prefill_extra_bytes(c, chunk) if batch else 0),
        )
        for c in contexts
    )


def concurrency_curve(
    model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, contexts: tuple[int, ...], gpu_name: str = "", *,
    pipeline_parallel_size: int = 1,
) -> tuple[int, ...]:
    """Max concurrent sequences at each context length (paged, per GPU budget).

    Same arithmetic as ``plan(..., gpu_id=gpu_name).max_concurrent_sequences``, an explicit ``request.max_num_seqs``
    included (each point at most that many: vLLM's scheduler runs at most ``max_num_seqs`` requests at once,
    vllm/v1/core/sched/scheduler.py; :func:`planner.budget.plan` caps its users the same way); with
    ``pipeline_parallel_size``
    stages, as :func:`planner.pipeline.plan_pipeline`'s: each stage's curve on its tensor-parallel GPUs
    (:func:`planner.pipeline.pipeline_stages`), the replica's users at each context the fewest of any stage (vLLM
    sizes every stage's cache to the smallest worker's KV blocks: ``get_kv_cache_configs`` in
    vllm/v1/core/kv_cache_utils.py).

    Raises:
        ValueError: invalid request fields or ``gpu_memory_bytes <= 0``; stages that do not split the GPUs or the
            layers.
    """
    if pipeline_parallel_size != 1:
        return tuple(map(min, *(concurrency_curve(stage, gpu_memory_bytes, group, contexts, gpu_name)
                                for stage, group in pipeline_stages(model, request, pipeline_parallel_size))))
    if gpu_memory_bytes <= 0:
        raise ValueError(f"gpu_memory_bytes must be > 0, got {gpu_memory_bytes}")
    costs = per_gpu_costs(model, request, gpu_memory_bytes, gpu_name)
    budget = int(gpu_memory_bytes * request.gpu_memory_utilization) - costs.weights_bytes_per_gpu - costs.overhead_bytes
    held = concurrency_for_budget(costs.profile_paged, budget, contexts, prefill_tokens=costs.prefill_tokens)
    cap = request.max_num_seqs
    return tuple(min(users, cap) for users in held) if cap else held


def concurrency_for_budget(profile, budget_bytes: int, contexts: tuple[int, ...], *,
                           prefill_tokens: int = 0) -> tuple[int, ...]:
    """``(budget_bytes - prefill extra) // bytes_per_sequence(c)`` for each ``c`` (0 when that is not positive):
    the sequences that decode beside one prefill chunk of ``prefill_tokens`` (``profile.prefill_extra_bytes``,
    windowed layers only; as :func:`planner.budget.plan` counts them)."""
    if budget_bytes <= 0:
        return tuple(0 for _ in contexts)
    out = []
    for c in contexts:
        per_seq = profile.bytes_per_sequence(c)
        room = budget_bytes - (profile.prefill_extra_bytes(c, prefill_tokens) if prefill_tokens else 0)
        out.append(room // per_seq if per_seq and room > 0 else 0)
    return tuple(out)


def catalog_sweep(
    models: tuple[ModelSpec, ...], gpu_memory_bytes: tuple[int, ...], request: PlanRequest,
    contexts: tuple[int, ...],
) -> list[list[tuple[int, ...]]]:
    """Max concurrent sequences for every model x GPU x context (benchmark and tables).

    The overhead follows vLLM's scheduler defaults by GPU size (:func:`planner.budget.estimate_overhead`);
    GPUs are known here by memory only, so an A100 80GB counts as a large GPU
    (``plan()`` with its catalog id applies the A100 exception).

    Returns:
        ``result[m][g][c]`` = max concurrent sequences of model ``m`` on GPU ``g``
        at ``contexts[c]``. GPUs with the same memory share one row (the same tuple).
    """
    result = []
    zeros = tuple(0 for _ in contexts)
    for model in models:
        costs = per_gpu_costs(model, request)
        per_seq = costs.profile_paged.bytes_per_sequences(contexts)
        # The overhead and the prefill chunk depend on the GPU only through vLLM's size class; no GPU given = the
        # large class.
        overheads: dict[bool, int] = {True: costs.overhead_bytes}
        dividers = {}
        by_memory: dict[int, tuple[int, ...]] = {}
        rows = []
        for mem in gpu_memory_bytes:
            row = by_memory.get(mem)
            if row is None:
                large = is_large_datacenter_gpu(mem, "")
                if large not in overheads:
                    overheads[large] = overhead_bytes(model, request, mem)
                if large not in dividers:
                    dividers[large] = _class_divider(costs, per_seq, contexts, request, mem)
                budget = int(mem * request.gpu_memory_utilization) - costs.weights_bytes_per_gpu - overheads[large]
                row = zeros if budget <= 0 else dividers[large](budget)
                by_memory[mem] = row
            rows.append(row)
        result.append(rows)
    return result


def _class_divider(costs: PerGPUCosts, per_seq: list[int], contexts: tuple[int, ...], request: PlanRequest,
                   gpu_memory_bytes: int):
    """``budget -> users`` per context on a GPU of ``gpu_memory_bytes``: :func:`_divider`, or for windowed layers
    :func:`_divider_beside` with the prefill chunk of that GPU's size class set aside (``max_num_batched_tokens``
    2,048 on a small GPU where a large one batches 8,192: :func:`planner.budget.profile_pass_tokens`)."""
    if not costs.prefill_tokens:
        return _divider(per_seq)
    tokens = profile_pass_tokens(request, gpu_memory_bytes, "")
    return _divider_beside(per_seq, costs.profile_paged.prefill_extra_bytes_many(contexts, tokens))


def _divider_beside(per_seq: list[int], extras: list[int]):
    """``budget -> tuple(max((budget - e) // s, 0))`` per context (0 where ``s`` is 0): :func:`_divider` with each
    context's prefill extra ``e`` set aside first, in the same units (``u = gcd`` of every size and extra, so
    ``(budget - e) // s == (budget // u - e // u) // (s // u)``, the nested floor of :func:`_divider`), mapped in C."""
    if 0 in per_seq:
        return lambda budget: tuple((budget - e) // s if s and budget > e else 0 for s, e in zip(per_seq, extras))
    unit = math.gcd(*per_seq, *extras)
    scaled, shifts, n = [s // unit for s in per_seq], [e // unit for e in extras], len(per_seq)
    top = max(shifts)

    def divide(budget: int) -> tuple[int, ...]:
        units = budget // unit
        out = tuple(map(floordiv, map(sub, repeat(units, n), shifts), scaled))
        return out if units >= top else tuple(u if u > 0 else 0 for u in out)  # a room below some extra: 0

    return divide


def _divider(per_seq: list[int]):
    """``budget -> tuple(budget // s for s in per_seq)`` (0 where ``s`` is 0), for budgets > 0.

    When every ``s`` is positive, the sizes share a unit ``u = gcd(per_seq)`` (a
    multiple of the block size times the per-token bytes), and
    ``budget // s == (budget // u) // (s // u)`` (nested floor division,
    ``floor(floor(x / m) / n) = floor(x / (m n))`` for positive integers; Graham, Knuth
    and Patashnik, Concrete Mathematics, section 3.2): the same integers, from
    operands small enough for CPython's one-digit division, done by ``map`` in C.
    """
    if 0 in per_seq:
        return lambda budget: tuple(budget // s if s else 0 for s in per_seq)
    unit = math.gcd(*per_seq)
    scaled = [s // unit for s in per_seq]
    return lambda budget: tuple(map(floordiv, repeat(budget // unit, len(scaled)), scaled))
