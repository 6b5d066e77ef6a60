"""Monte-Carlo of concurrent users: seeded draws of a workload laid into a per-GPU KV budget.

The simulation draws a stream of requests, lays their paged KV cache
(:class:`planner.model.kv.KVProfile`, blocks of ``block_size`` tokens) into the
budget in arrival order, and counts how many fit before the budget runs out.
Repeated over seeded trials this gives the expected number of concurrent users,
its 5th/95th percentiles and the probability that N users run out of KV cache
(vLLM then preempts a request). Design notes: :mod:`planner.traffic.workload`.

Sources: DOMAIN.md section 4; Kwon et al., SOSP 2023 (PagedAttention, blocks on
demand); vLLM docs "Optimization and Tuning" (preemption).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from planner.model.kv import KVProfile
from planner.traffic.workload import MAX_SIMULATION_ELEMENTS, Workload

# --- KV bytes of many sequences at once ----------------------------------------------


def sequence_bytes(profile: KVProfile, tokens: np.ndarray) -> np.ndarray:
    """Vectorised ``profile.bytes_per_sequence`` over an int array [bytes].

    Same arithmetic as :meth:`planner.model.kv.KVProfile.bytes_per_sequence`: per
    group, tokens capped by the window, rounded up to whole blocks. A profile whose
    sequences hold extra slots (:class:`planner.serving.features.ShiftedProfile`: the
    lookahead and image tokens of the serving features) costs each request's tokens
    plus those, as its ``bytes_per_sequence`` does.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    extra = getattr(profile, "extra_tokens", 0)
    if extra:
        return sequence_bytes(profile.inner, tokens + extra)
    total = np.zeros(tokens.shape, dtype=np.int64)
    for g in profile.groups:
        block = g.block_size or profile.block_size  # a group paged in its own block (planner.model.kv.KVGroup)
        held = tokens if g.max_tokens is None else np.minimum(tokens, g.max_tokens)
        total += g.num_layers * (-(-held // block) * g.block_bytes(block) + g.bytes_per_sequence_fixed)
    return total


def analytic_mean_sequence_bytes(profile: KVProfile, workload: Workload) -> float:
    """Expected paged KV bytes of one request, in closed form [bytes].

    Exact for fixed lengths (``profile.bytes_per_sequence``). Otherwise, per
    layer group: ``layers x (bytes_per_token x (min(E[L], window) + (B - 1) / 2)
    + fixed)``: a request's last block is on average ``(B - 1) / 2`` slots short
    of full when lengths are spread over many blocks. Ignores the
    ``max_model_len`` clip and uses ``min(E[L], w)`` for ``E[min(L, w)]``
    (an overestimate for windowed layers).
    Worked example: 16 KiB/token, block 16, mean 800 tokens -> 16 KiB x 807.5.

    Sources: Kwon et al. 2023 section 4.1 (waste bounded by one block per
    sequence); DOMAIN.md section 4.
    """
    if workload.is_fixed:
        return float(profile.bytes_per_sequence(workload.max_tokens))
    mean = workload.mean_tokens + getattr(profile, "extra_tokens", 0)  # a ShiftedProfile's extra slots
    half_block = (profile.block_size - 1) / 2
    total = 0.0
    for g in profile.groups:
        held = mean if g.max_tokens is None else min(mean, g.max_tokens)
        total += g.num_layers * (g.bytes_per_token * (held + half_block) + g.bytes_per_sequence_fixed)
    return total


# --- Monte-Carlo of concurrent users --------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ConcurrencySimulation:
    """Users that fit a KV budget under paging, from a seeded Monte-Carlo.

    Attributes:
        seed: The ``numpy.random.default_rng`` seed.
        num_trials: Streams simulated.
        kv_cache_budget_bytes: Per-GPU KV budget [bytes].
        guaranteed_users: Users that fit with every request at its maximum
            length (``budget // bytes(max_tokens)``): never preempted.
        expected_users: Mean users that fit before the budget runs out.
        p5_users: Users that fit in 95% of trials (5th percentile).
        p50_users: Median users.
        p95_users: Users that fit in only 5% of trials (95th percentile).
        analytic_expected_users: ``budget / analytic_mean_sequence_bytes``.
        mean_sequence_bytes: Mean paged KV bytes per request in the draws [bytes].
        analytic_mean_sequence_bytes: Closed-form mean [bytes].
        mean_tokens: Mean tokens per request in the draws [tokens].
        analytic_mean_tokens: The workload's analytic mean [tokens].
        max_tokens: Longest request the workload allows [tokens].
        users_fit: Per-trial users that fit, sorted ascending.
    """

    seed: int
    num_trials: int
    kv_cache_budget_bytes: int
    guaranteed_users: int
    expected_users: float
    p5_users: int
    p50_users: int
    p95_users: int
    analytic_expected_users: float
    mean_sequence_bytes: float
    analytic_mean_sequence_bytes: float
    mean_tokens: float
    analytic_mean_tokens: float
    max_tokens: int
    users_fit: tuple[int, ...] = field(repr=False)

    def preemption_probability(self, num_users: int) -> float:
        """P(``num_users`` concurrent requests run out of KV cache) (module note 4)."""
        if num_users < 1:
            raise ValueError(f"num_users must be >= 1, got {num_users}")
        below = int(np.searchsorted(np.asarray(self.users_fit), num_users, side="left"))
        return below / self.num_trials

    def users_at_risk(self, probability: float) -> int:
        """Most users whose preemption probability is at most ``probability``.

        Raises:
            ValueError: ``probability`` outside [0, 1).
        """
        if not 0 <= probability < 1:
            raise ValueError(f"probability must be in [0, 1), got {probability}")
        fits = np.asarray(self.users_fit)
        # P(users_fit < n) <= p  <=>  at most floor(p * trials) trials below n.
        allowed = int(math.floor(probability * self.num_trials + 1e-9))
        return int(fits[allowed])

    def curve(self, max_points: int = 200) -> tuple[tuple[int, float], ...]:
        """Chart data: (users, probability of running out of KV), increasing users.

        From the guaranteed users (probability 0) to one past the largest
        trial (probability 1), at most ``max_points`` points.
        """
        lo = max(1, min(self.guaranteed_users, self.users_fit[0]))
        hi = self.users_fit[-1] + 1
        step = max(1, math.ceil((hi - lo + 1) / max_points))
        points = list(range(lo, hi + 1, step))
        if points[-1] != hi:
            points.append(hi)
        fits = np.asarray(self.users_fit)
        below = np.searchsorted(fits, np.asarray(points), side="left") / self.num_trials
        return tuple((n, float(p)) for n, p in zip(points, below))

    def to_dict(self) -> dict:
        """Summary for JSON (without the per-trial array)."""
        return {
            "seed": self.seed, "num_trials": self.num_trials,
            "kv_cache_budget_bytes": self.kv_cache_budget_bytes,
            "guaranteed_users": self.guaranteed_users, "expected_users": self.expected_users,
            "p5_users": self.p5_users, "p50_users": self.p50_users, "p95_users": self.p95_users,
            "analytic_expected_users": self.analytic_expected_users,
            "mean_sequence_bytes": self.mean_sequence_bytes,
            "analytic_mean_sequence_bytes": self.analytic_mean_sequence_bytes,
            "mean_tokens": self.mean_tokens, "analytic_mean_tokens": self.analytic_mean_tokens,
            "max_tokens": self.max_tokens,
        }


def simulate_concurrency(
    profile: KVProfile,
    budget_bytes: int,
    workload: Workload,
    *,
    num_trials: int = 1000,
    seed: int = 0,
) -> ConcurrencySimulation:
    """Seeded Monte-Carlo of how many concurrent requests fit a paged KV budget.

    Each trial draws a stream of requests (``workload.sample_tokens``), costs
    each with ``profile.bytes_per_sequence`` (blocks of ``profile.block_size``,
    windows applied), and counts the requests admitted in order before the
    running total exceeds ``budget_bytes``.

    Args:
        profile: Paged KV profile on one GPU (``kv_profile(..., block_size=B)``).
        budget_bytes: Per-GPU KV budget [bytes] (``Plan.kv_cache_budget_bytes``).
        workload: Request lengths.
        num_trials: Streams to simulate, >= 20.
        seed: Seed of ``numpy.random.default_rng``; same seed, same result.

    Raises:
        ValueError: ``num_trials < 20``, a budget that holds not even the
            smallest request, or a model without per-sequence KV.

    Sources: module docstring; vLLM scheduler admits requests FCFS while free
    blocks remain (vllm/v1/core/sched/scheduler.py).

    The result is immutable and a function of the arguments alone (the seed fixes
    the draws), so the last :data:`SIMULATION_CACHE_SIZE` results are kept: a page
    rerun for a knob the simulation does not read (the Allocation page's mean
    length, say) reuses the draws instead of repeating them.
    """
    return _simulate(profile, budget_bytes, workload, num_trials, seed)


SIMULATION_CACHE_SIZE = 16
"""Results :func:`simulate_concurrency` keeps (each holds ``num_trials`` integers and
references its profile and workload, an uploaded CSV's lengths included)."""


@functools.lru_cache(maxsize=SIMULATION_CACHE_SIZE)
def _simulate(profile: KVProfile, budget_bytes: int, workload: Workload, num_trials: int,
              seed: int) -> ConcurrencySimulation:
    """:func:`simulate_concurrency` without its cache (same arguments, positional)."""
    if num_trials < 20:
        raise ValueError(f"num_trials must be >= 20 for percentiles, got {num_trials}")
    if profile.bytes_per_sequence(1) <= 0:
        raise ValueError("this model holds no KV cache per sequence; concurrency is not limited by KV")
    rng = np.random.default_rng(seed)
    max_tokens = workload.max_tokens
    worst = profile.bytes_per_sequence(max_tokens)
    guaranteed = max(budget_bytes, 0) // worst
    analytic_bytes = analytic_mean_sequence_bytes(profile, workload)
    if budget_bytes < profile.bytes_per_sequence(1):
        raise ValueError(
            f"the KV budget ({budget_bytes:,} B) holds not even a 1-token request "
            f"({profile.bytes_per_sequence(1):,} B): add GPUs, use a smaller weight dtype or raise "
            f"gpu_memory_utilization")

    stream_len = int(math.ceil(1.3 * budget_bytes / analytic_bytes)) + 32
    chunk = max(1, MAX_SIMULATION_ELEMENTS // stream_len)
    users: list[np.ndarray] = []
    token_sum = 0.0
    byte_sum = 0.0
    drawn = 0
    done = 0
    while done < num_trials:
        rows = min(chunk, num_trials - done)
        tokens = workload.sample_tokens(rng, rows * stream_len).reshape(rows, stream_len)
        costs = sequence_bytes(profile, tokens)
        token_sum += float(tokens.sum())
        byte_sum += float(costs.sum())
        drawn += tokens.size
        running = np.cumsum(costs, axis=1)
        # Rare long tails: extend the streams that never ran out (deterministic for a seed).
        while (running[:, -1] <= budget_bytes).any():
            extra_tokens = workload.sample_tokens(rng, rows * stream_len).reshape(rows, stream_len)
            extra = sequence_bytes(profile, extra_tokens)
            token_sum += float(extra_tokens.sum())
            byte_sum += float(extra.sum())
            drawn += extra_tokens.size
            running = np.concatenate([running, running[:, -1:] + np.cumsum(extra, axis=1)], axis=1)
        users.append((running <= budget_bytes).sum(axis=1))
        done += rows
    fits = np.sort(np.concatenate(users))
    return ConcurrencySimulation(
        seed=seed, num_trials=num_trials, kv_cache_budget_bytes=budget_bytes,
        guaranteed_users=int(guaranteed), expected_users=float(fits.mean()),
        p5_users=int(np.quantile(fits, 0.05, method="lower")),
        p50_users=int(np.quantile(fits, 0.5, method="lower")),
        p95_users=int(np.quantile(fits, 0.95, method="higher")),
        analytic_expected_users=budget_bytes / analytic_bytes,
        mean_sequence_bytes=byte_sum / drawn, analytic_mean_sequence_bytes=analytic_bytes,
        mean_tokens=token_sum / drawn, analytic_mean_tokens=workload.mean_tokens,
        max_tokens=max_tokens, users_fit=tuple(int(x) for x in fits),
    )


def demand_quantile_bytes(
    slot_sums: dict[int | None, np.ndarray], profile: KVProfile, num_users: int, quantile: float
) -> int:
    """The ``quantile`` of the KV bytes ``num_users`` requests need, from pre-drawn slot sums.

    ``slot_sums[cap]`` holds, per trial, the block-rounded token slots of
    ``num_users`` requests in a layer with window ``cap`` (None = no window),
    from :func:`draw_slot_sums`. Bytes per trial are then
    ``sum_g layers_g x bytes_per_token_g x slot_sums[cap_g] + num_users x fixed``:
    linear in the profile, so one draw serves every dtype and TP size.

    Raises:
        KeyError: a window of ``profile`` missing from ``slot_sums``.
    """
    total = np.zeros_like(next(iter(slot_sums.values())), dtype=np.float64)
    for g in profile.groups:
        total += float(g.num_layers * g.bytes_per_token) * slot_sums[g.max_tokens]
        total += float(num_users * g.num_layers * g.bytes_per_sequence_fixed)
    return int(math.ceil(float(np.quantile(total, quantile))))


def draw_slot_sums(
    workload: Workload, num_users: int, block_size: int, caps: tuple[int | None, ...],
    *, num_trials: int = 2000, seed: int = 0,
) -> dict[int | None, np.ndarray]:
    """Per-trial sums of block-rounded token slots of ``num_users`` requests, per window cap.

    See :func:`demand_quantile_bytes`. Deterministic for a seed.
    """
    if num_users < 1:
        raise ValueError(f"num_users must be >= 1, got {num_users}")
    rng = np.random.default_rng(seed)
    rows = max(1, min(num_trials, MAX_SIMULATION_ELEMENTS // num_users))
    sums: dict[int | None, list[np.ndarray]] = {c: [] for c in caps}
    done = 0
    while done < num_trials:
        n = min(rows, num_trials - done)
        tokens = workload.sample_tokens(rng, n * num_users).reshape(n, num_users)
        for cap in caps:
            held = tokens if cap is None else np.minimum(tokens, cap)
            sums[cap].append((-(-held // block_size) * block_size).sum(axis=1).astype(np.float64))
        done += n
    return {c: np.concatenate(v) for c, v in sums.items()}


class DemandCache:
    """KV one GPU needs for ``users`` requests of one replica at (tensor parallel size, KV dtype), kept per search.

    Fixed lengths: ``users x`` the paged bytes of one request (``costs[key].paged_per_seq``); distributions: the
    ``quantile`` of :func:`demand_quantile_bytes` over slot sums drawn once per user count
    (:func:`draw_slot_sums`), shared by every (tp, dtype).

    Args:
        workload: The lengths.
        costs: ``(tp, KV dtype name) ->`` an object with ``paged_per_seq`` [bytes] and ``profile`` (a
            :class:`~planner.model.kv.KVProfile`), as :mod:`planner.traffic.reverse` keeps them.
        block_size: KV page size [tokens].
        num_trials, seed: The Monte-Carlo draws.
        quantile: The share of trials the demand covers (``1 -`` the accepted preemption probability).
    """

    def __init__(self, workload: Workload, costs: dict, *, block_size: int, num_trials: int, seed: int,
                 quantile: float):
        self.workload, self.costs, self.block_size = workload, costs, block_size
        self.num_trials, self.seed, self.quantile = num_trials, seed, quantile
        self.demand: dict[tuple, int] = {}
        self.slots: dict[int, dict] = {}
        self.caps = tuple({g.max_tokens for c in costs.values()
                           for on in (c, *getattr(c, "by_gpu", {}).values()) for g in on.profile.groups})

    def __call__(self, tp: int, kv_name: str, users: int, costs=None) -> int:
        """The demand of ``users`` requests on one GPU at ``(tp, kv_name)`` [bytes]; ``costs``: that GPU's own
        (``CandidateCosts.on``: its paged profile and prefill chunk), else the candidate's."""
        c = self.costs[(tp, kv_name)] if costs is None else costs
        key = (tp, kv_name, users, c.paged_per_seq, getattr(c, "prefill_extra", 0), id(c.profile))
        if key not in self.demand:
            if self.workload.is_fixed:  # one of them at its prefill peak (windowed layers, as plan() counts)
                self.demand[key] = users * c.paged_per_seq + (getattr(c, "prefill_extra", 0) if users else 0)
            else:
                if users not in self.slots:
                    self.slots[users] = draw_slot_sums(self.workload, users, self.block_size, self.caps,
                                                       num_trials=self.num_trials, seed=self.seed)
                self.demand[key] = demand_quantile_bytes(self.slots[users], c.profile, users, self.quantile)
        return self.demand[key]
