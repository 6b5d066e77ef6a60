"""How many nodes one replica's GPUs may span: vLLM runs the same number of workers on every node.

vLLM's multi-node launch (``--nnodes``, vllm/engine/arg_utils.py ``EngineArgs.create_engine_config``, 2026 source)
asserts that its world size (data x pipeline x tensor parallel) is divisible by the node count, each node then
running ``world / nnodes`` workers (vllm/config/parallel.py ``ParallelConfig.local_world_size``: the world size over
the nodes of one data-parallel rank); the planner's Ray launch spreads a replica the same way (each node's share
prices its process groups, :mod:`planner.engines.replica_layout`), although Ray itself would place workers
unevenly (its placement group asserts nothing of the kind), so the refusal says the planner does not plan that.
SGLang asserts the same of its ``--nnodes``
(:mod:`planner.engines.sglang_nodes`). A node count that does not divide the GPUs is therefore refused with the
counts that do, as the planner refuses other invalid layouts ("pipeline_parallel_size 3 does not divide num_gpus
8", :mod:`planner.pipeline`).
"""

from __future__ import annotations

from planner.text import count_noun

DEFAULT_NODE_GPUS = 8
"""GPUs in one node when the caller names none (the planner's default node, ``--gpus-per-node``)."""


def even_node_counts(num_gpus: int, gpus_per_node: int = DEFAULT_NODE_GPUS) -> list[int]:
    """Node counts that split ``num_gpus`` GPUs evenly with at most ``gpus_per_node`` on each, fewest first.

    Example: 12 GPUs on 8-GPU nodes: ``[2, 3, 4, 6, 12]`` (one node would need 12 GPUs).
    """
    return [n for n in range(1, num_gpus + 1) if num_gpus % n == 0 and num_gpus // n <= gpus_per_node]


def _or_list(values: list[int]) -> str:
    words = [f"{v:,}" for v in values]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def uneven_nodes_text(num_gpus: int, num_nodes: int, gpus_per_node: int = DEFAULT_NODE_GPUS,
                      why: str = "each node runs the same number of the replica's GPUs") -> str:
    """What to change when ``num_nodes`` nodes cannot hold ``num_gpus`` GPUs evenly, else "" (one line).

    Example: ``uneven_nodes_text(12, 5)`` is "12 GPUs over 5 nodes: use 2, 3, 4, 6 or 12 nodes (each node runs
    the same number of the replica's GPUs)".
    """
    if num_nodes <= 1 or (num_gpus % num_nodes == 0 and num_nodes <= num_gpus):
        return ""
    counts = even_node_counts(num_gpus, gpus_per_node) or [num_gpus]
    return (f"{count_noun(num_gpus, 'GPU')} over {count_noun(num_nodes, 'node')}: use {_or_list(counts)} "
            f"{'node' if counts == [1] else 'nodes'} ({why})")


def nodes_problem(engine: str, num_gpus: int, num_nodes: int) -> str:
    """:meth:`planner.engines.types.EngineRequest.validate`'s message for ``num_nodes`` nodes of a replica of
    ``num_gpus`` GPUs under ``engine``, else "": more nodes than GPUs for every engine; for vLLM also a count that
    does not divide the GPUs (module docstring; SGLang's launch is refused in its plan instead,
    :func:`planner.engines.sglang_nodes.nodes_refusal`)."""
    if num_nodes > num_gpus:
        return f"{num_nodes} nodes for {count_noun(num_gpus, 'GPU')} per replica; use at most " \
               f"{count_noun(num_gpus, 'node')}"
    if not engine.startswith("vllm"):
        return ""
    return uneven_nodes_text(num_gpus, num_nodes, why="the planner prices an even share on every node, as vLLM's "
                             "--nnodes launch requires: world_size divisible by nnodes, vllm/engine/arg_utils.py; "
                             "Ray can place workers unevenly, which is not planned")
