"""A batch spread over data-parallel replicas: each replica holds its share in its own KV cache.

Under vLLM ``--data-parallel-size N`` every data-parallel rank is an engine core with its own scheduler and KV
cache (vllm/v1/engine/core.py ``DPEngineCoreProc``), and the front end spreads the requests over them: the API
server's client sends each request to the engine with the lowest score of its waiting (weighted 4) and running
requests, from the counts the DP coordinator gathers from every engine and publishes to the API servers
(vllm/v1/engine/core_client.py ``DPLBAsyncMPClient.get_core_engine_for_request``, vllm/v1/engine/coordinator.py).
So a batch of ``B`` requests puts at most ``ceil(B / N)`` on one replica when they spread
evenly, and the budget of one replica is judged against that share, not against the whole batch (QA:
Llama-3.1-8B on 4 x H100 per replica, ``-dp 4``, 200 requests of 32,768 tokens: "200 sequences need 200.00 GiB
per GPU; the budget is 64.99 GiB", fits no, where each replica holds 64 and the 4 hold 256). SGLang's
``--dp-size`` router and data-parallel attention ranks split a batch the same way
(:attr:`planner.scale.layout.RankLayout.attention_dp`).

Pure arithmetic: the caller plans one replica at :func:`replica_batch` and words the verdict with
:func:`replicas_verdict`; :func:`spread_batch_fix` restates a per-replica batch fix as the whole batch
(:func:`spread_plan` for a plan's suggestions).
"""

from __future__ import annotations

from dataclasses import replace

from planner.diagnose import Fix
from planner.text import count_noun


def replica_batch(batch_size: int, replicas: int) -> int:
    """The most requests one of ``replicas`` data-parallel replicas holds when ``batch_size`` spread evenly:
    ``ceil(batch_size / replicas)`` (module docstring). Example: 200 over 4 -> 50; 201 over 4 -> 51."""
    return -(-batch_size // max(replicas, 1))


def queued_requests(batch_size: int, replicas: int, held_per_replica: int) -> int:
    """The requests of ``batch_size`` that wait in a queue when the front end spreads them over ``replicas``
    data-parallel replicas, each holding ``held_per_replica`` at once (module docstring: vLLM's DP load balancing,
    vllm/v1/engine/core_client.py ``DPLBAsyncMPClient.get_core_engine_for_request``): the batch split as evenly as
    it goes (``batch % replicas`` replicas take one more), each replica's excess summed. Example: 200 over 4, 13
    held by each -> 4 x (50 - 13) = 148; with one replica, ``batch_size - held``."""
    n = max(replicas, 1)
    base, extra = divmod(batch_size, n)
    return sum(max(0, base + (i < extra) - held_per_replica) for i in range(n))


def replicas_verdict(batch_size: int, replicas: int, per_replica_users: int, context_len: int) -> str:
    """One line: the batch, its share per replica against what one replica holds at ``context_len``, and the
    total (``per_replica_users``: the budget's users of one replica; "" with one replica).

    Example: "200 sequences over 4 data-parallel replicas: up to 50 per replica (ceil(200 / 4)), each holds 64
    sequences of 32,768 tokens, 256 in all".
    """
    if replicas <= 1:
        return ""
    share = replica_batch(batch_size, replicas)
    holds = "holds" if share <= per_replica_users else "holds only"
    return (f"{count_noun(batch_size, 'sequence')} over {replicas:,} data-parallel replicas: up to {share:,} per "
            f"replica (ceil({batch_size:,} / {replicas:,})), each {holds} {count_noun(per_replica_users, 'sequence')} "
            f"of {context_len:,} tokens, {per_replica_users * replicas:,} in all")


def spread_batch_fix(fix, replicas: int):
    """A ``batch_size`` :class:`~planner.diagnose.Fix` of one replica restated for the whole batch of
    ``replicas`` replicas (the link's and the CLI's ``batch_size`` is the whole batch); any other suggestion as
    it is. Example: "lower batch_size to 64 (fits at this context)" over 4 -> "lower batch_size to 256 (64 per
    replica x 4 replicas; fits at this context)"."""
    if replicas <= 1 or not isinstance(fix, Fix) or fix.key != "batch_size":
        return fix
    total = int(fix.value) * replicas
    return Fix(f"lower batch_size to {total:,} ({int(fix.value):,} per replica x {replicas:,} replicas; fits at "
               "this context)", "batch_size", total)


def spread_plan(result, replicas: int):
    """``result`` (one replica's plan at its share) with its batch fixes restated for the whole batch
    (:func:`spread_batch_fix`); unchanged with one replica."""
    if replicas <= 1 or not result.suggestions:
        return result
    return replace(result, suggestions=tuple(spread_batch_fix(s, replicas) for s in result.suggestions))


def replicas_users_text(users: int, replicas: int) -> str:
    """``"256 over 4 data-parallel replicas"``: what ``replicas`` replicas of ``users`` each hold (each its own KV
    cache, module docstring); "" with one replica."""
    return "" if replicas <= 1 else f"{users * replicas:,} over {replicas:,} data-parallel replicas"
