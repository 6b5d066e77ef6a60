"""Why a card with less (or the same) memory can hold more users: vLLM sizes its profile pass by GPU class.

vLLM profiles 2,048 tokens (256 sequences) on GPUs under 70 GiB and on A100s, and a larger pass (1,024
sequences) on the others, larger again from 160 GiB in the newest releases
(:func:`planner.engines.profiles.vllm_scheduler_defaults`; in words, :func:`profile_pass_tiers`). The
activation and sampler peak of that pass comes out of every GPU's KV budget, so an A100 80GB keeps more KV
than an H100 80GB of the same memory (:func:`planner.overhead.estimate_overhead`).

:func:`profile_inversions` finds those pairs among a page's plans, with the numbers that explain them.

Sources: vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults``; vllm/v1/worker/gpu_worker.py
``determine_available_memory``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.budget import Plan, PlanRequest, profile_pass_tokens


@dataclass(frozen=True, kw_only=True)
class ProfileInversion:
    """A GPU that holds more users than another with at least as much usable memory left after the overhead
    difference, because its profile pass is smaller.

    Attributes:
        more_gpu_id, fewer_gpu_id: The GPU that holds more users and the one that holds fewer (catalog ids).
        more_users, fewer_users: Max concurrent sequences on each at the plan's context.
        more_memory_bytes, fewer_memory_bytes: Their framework memory [bytes].
        more_profile_tokens, fewer_profile_tokens: Tokens of each one's profile pass [tokens].
        more_overhead_bytes, fewer_overhead_bytes: Overhead per GPU each plan subtracts [bytes].
    """

    more_gpu_id: str
    fewer_gpu_id: str
    more_users: int
    fewer_users: int
    more_memory_bytes: int
    fewer_memory_bytes: int
    more_profile_tokens: int
    fewer_profile_tokens: int
    more_overhead_bytes: int
    fewer_overhead_bytes: int


def profile_inversions(entries: Sequence[tuple[str, int, Plan]], request: PlanRequest) -> list[ProfileInversion]:
    """The pairs where a GPU holds more users than another only because its profile pass is smaller.

    A pair counts when ``more`` holds more users, profiles fewer tokens, and the overhead it saves is at least
    the usable memory it has beyond ``fewer`` (so with ``fewer``'s overhead it would hold no more). Worked
    example: an A100 80GB (79.25 GiB, 2,048 tokens) against an H100 80GB (79.19 GiB, a larger pass).

    Args:
        entries: ``(gpu_id, gpu_memory_bytes, plan)`` per GPU, each planned from ``request``.
        request: The plan's request (an overhead override, or ``max_num_batched_tokens``, is the same on
            every GPU: no pair).

    Returns:
        For each GPU that holds fewer users, the pair with the most users on the other side; in the order given.
    """
    if request.overhead_bytes is not None:  # an override is the whole overhead on every GPU: no class
        return []
    tokens = {gpu_id: profile_pass_tokens(request, memory, gpu_id) for gpu_id, memory, _ in entries}
    out: list[ProfileInversion] = []
    for few_id, few_memory, few in entries:
        best = None
        for more_id, more_memory, more in entries:
            explained = (few.overhead_bytes - more.overhead_bytes
                         >= more.usable_memory_bytes - few.usable_memory_bytes)
            holds_more = more.max_concurrent_sequences > few.max_concurrent_sequences
            if holds_more and tokens[more_id] < tokens[few_id] and explained and (
                    best is None or more.max_concurrent_sequences > best[2].max_concurrent_sequences):
                best = (more_id, more_memory, more)
        if best is not None:
            more_id, more_memory, more = best
            out.append(ProfileInversion(
                more_gpu_id=more_id, fewer_gpu_id=few_id, more_users=more.max_concurrent_sequences,
                fewer_users=few.max_concurrent_sequences, more_memory_bytes=more_memory, fewer_memory_bytes=few_memory,
                more_profile_tokens=tokens[more_id], fewer_profile_tokens=tokens[few_id],
                more_overhead_bytes=more.overhead_bytes, fewer_overhead_bytes=few.overhead_bytes))
    return out


def profile_pass_tiers(profile_id: str = "vllm", usage_context: str = "serve") -> str:
    """The profile-pass sizes of :func:`vllm_scheduler_defaults` by GPU class, in words, for captions:
    ``"2,048 tokens on GPUs under 70 GiB and A100s, 8,192 from 70 GiB, 16,384 from 160 GiB"`` for the newest
    ``serve`` (each figure computed, so the sentence follows the rule).

    Raises:
        KeyError: an unknown profile id.
    """
    from planner.engines.profiles import (  # noqa: PLC0415
        ENGINE_PROFILES,
        LARGE_GPU_BYTES,
        LARGEST_TIER_BYTES,
        vllm_scheduler_defaults,
    )
    from planner.units import GiB  # noqa: PLC0415

    profile = ENGINE_PROFILES[profile_id]
    small, large, largest = (vllm_scheduler_defaults(profile, size, "gpu", 8192, usage_context)[0]
                             for size in (LARGE_GPU_BYTES - 1, LARGE_GPU_BYTES, LARGEST_TIER_BYTES))
    large_gib, largest_gib = LARGE_GPU_BYTES // GiB, LARGEST_TIER_BYTES // GiB
    text = f"{small:,} tokens on GPUs under {large_gib} GiB and A100s, {large:,} from {large_gib} GiB"
    return text + (f", {largest:,} from {largest_gib} GiB" if largest != large else "")
