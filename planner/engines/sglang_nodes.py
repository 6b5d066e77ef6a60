"""An SGLang replica over more than one node: where its ranks run, and what stops a launch that spans too few.

1. Placement. SGLang's launcher starts one scheduler process per rank of this node and gives it the GPU id
   ``base_gpu_id + (pp_rank % pp_size_per_node) x tp_size_per_node + (tp_rank % tp_size_per_node) x gpu_id_step``
   (python/sglang/srt/entrypoints/engine.py, ``Engine._launch_scheduler_processes``), where
   ``_calculate_rank_ranges`` splits the ranks over ``--nnodes``: ``pp_size_per_node = max(pp_size // nnodes, 1)``,
   ``nnodes_per_tp_group = max(nnodes // pp_size, 1)``, ``tp_size_per_node = tp_size // nnodes_per_tp_group``, and
   ``--node-rank`` picks this node's pipeline and tensor ranks. ``nnodes`` (default 1), ``node_rank`` (0) and
   ``dist_init_addr`` (None: a local port) are server arguments (python/sglang/srt/server_args.py).
2. One node too few. With the default ``--nnodes 1`` a node runs every rank, GPU ids ``0 .. tp x pp - 1``. Nothing
   checks them against the GPUs present (``ServerArgs.check_server_args`` asserts only that the nodes divide
   ``tp_size x pp_size``): each scheduler's ``ModelRunner.init_torch_distributed`` calls ``torch.cuda.set_device
   (gpu_id)`` first, and a GPU id the node does not have raises "CUDA error: invalid device ordinal"
   (python/sglang/srt/model_executor/model_runner.py: it logs the ``Context: ... self.gpu_id=...`` line and
   re-raises). The scheduler logs "Scheduler hit an exception" and sends SIGQUIT to the launcher, which kills the
   process tree (python/sglang/srt/managers/scheduler.py ``run_scheduler_process``; engine.py
   ``launch_phase_sigquit_handler``). ``init_torch_distributed`` runs before ``ModelRunner.initialize``, which
   loads the weights: the launch stops before any memory line.
3. Nodes that do not divide the ranks: ``check_server_args`` asserts ``tp_size * pp_size % nnodes == 0`` ("tp_size
   must be divisible by number of nodes") before any process starts.
"""

from __future__ import annotations

from planner.engines.launch import node_commands
from planner.engines.types import EnginePlan, stopped_before_load
from planner.text import count_noun


def gpus_per_node(tensor_parallel_size: int, pipeline_parallel_size: int, nnodes: int) -> int | None:
    """GPUs SGLang runs on each of ``nnodes`` nodes (``pp_size_per_node x tp_size_per_node``, module docstring 1), or
    None where its layout leaves ranks without a node (``tp x pp`` GPUs not ``nnodes`` nodes of that many, e.g. pipeline
    3 over 2 nodes: one stage each, stage 2 on none) or ``check_server_args`` refuses the nodes (docstring 3)."""
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    if (tp * pp) % nnodes:
        return None
    per_node = max(pp // nnodes, 1) * (tp // max(nnodes // pp, 1))
    return per_node if per_node * nnodes == tp * pp else None


def nodes_needed(tensor_parallel_size: int, pipeline_parallel_size: int, node_size: int) -> int:
    """The fewest nodes of ``node_size`` GPUs whose ``--nnodes`` SGLang lays out with every rank on a GPU of its node
    (:func:`gpus_per_node`); one GPU per node always does."""
    world = tensor_parallel_size * pipeline_parallel_size
    for nodes in range(-(-world // node_size), world + 1):
        per_node = gpus_per_node(tensor_parallel_size, pipeline_parallel_size, nodes)
        if per_node is not None and per_node <= node_size:
            return nodes
    return world


def one_node_reason(plan: EnginePlan, node_size: int, nnodes: int = 1) -> str:
    """SGLang's stop for ``plan`` over ``nnodes`` nodes of ``node_size`` GPUs when a node gets more ranks than that
    (module docstring 2: each node's ranks take GPU ids from 0, :func:`gpus_per_node`)."""
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    per_node = gpus_per_node(tp, pp, nnodes) or tp * pp
    ranks = (f"the {tp * pp} ranks of tensor parallel {tp} x pipeline {pp}" if nnodes == 1 else
             f"each of the {nnodes} nodes {per_node} of the {tp * pp} ranks of tensor parallel {tp} x pipeline {pp},")
    return (f"Scheduler hit an exception: CUDA error: invalid device ordinal (torch.cuda.set_device({node_size}) in "
            f"init_torch_distributed): --nnodes {nnodes} gives {ranks} the GPU ids 0-{per_node - 1} of "
            f"{'this node' if nnodes == 1 else 'its node'}, which has {count_noun(node_size, 'GPU')}; launch with "
            "--nnodes, --node-rank and --dist-init-addr over enough nodes")


def advice_text(plan: EnginePlan, node_size: int, nodes: int, how: str, node_source: str, starts: str, *,
                given_nodes: int = 1) -> str:
    """The warning for an SGLang launch over ``given_nodes`` nodes that gives a node more ranks than its GPUs: why it
    stops, and each node's command of ``plan`` (the launch over ``nodes`` nodes) with what it ``starts`` with.

    Args:
        how: How the reader sets the nodes (``"--num-nodes 2"``).
        node_source: Where the node size comes from (``"--gpus-per-node, default 8"``).
        starts: The verdict of ``plan`` (:func:`planner.engines.replica_layout.starts_text`).
        given_nodes: The refused launch's ``--nnodes``.
    """
    tp, pp = plan.tensor_parallel_size, plan.pipeline_parallel_size
    world = tp * pp
    per_node = gpus_per_node(tp, pp, given_nodes) or world
    commands = node_commands(plan.launch_command)
    runs = "; ".join(f"on node {rank}{' (HEAD_IP is its address)' if rank == 0 else ''} `{command}`"
                     for rank, command in enumerate(commands))
    where = ("on one node" if given_nodes == 1 else f"over {given_nodes} nodes")
    nnodes = "the default --nnodes 1" if given_nodes == 1 else f"--nnodes {given_nodes}"
    return (f"{count_noun(world, 'GPU')} per replica (tensor parallel {tp} x pipeline {pp}) {where}, where a node "
            f"holds {node_size} ({node_source}): with {nnodes} SGLang gives a node's ranks the GPU ids "
            f"0-{per_node - 1} of that node (python/sglang/srt/entrypoints/engine.py), and the ranks past "
            f"{node_size - 1} stop at startup with 'CUDA error: invalid device ordinal' before loading weights "
            f"(model_runner.py init_torch_distributed). Across {nodes} nodes ({how}) it runs "
            f"{count_noun(world // nodes, 'GPU')} on each, one command per node: {runs}; it {starts}")


def nodes_refusal(plan: EnginePlan, num_nodes: int) -> EnginePlan:
    """``plan`` refused before any process starts when ``num_nodes`` does not divide its ``tp x pp`` GPUs (module
    docstring 3), else unchanged."""
    world = plan.tensor_parallel_size * plan.pipeline_parallel_size
    if num_nodes <= 1 or world % num_nodes == 0:
        return plan
    reason = (f"AssertionError: tp_size must be divisible by number of nodes (tensor parallel "
              f"{plan.tensor_parallel_size} x pipeline {plan.pipeline_parallel_size} over --nnodes {num_nodes}; "
              "check_server_args, python/sglang/srt/server_args.py)")
    return EnginePlan._from_parts(vars(plan), {"starts": False, "reasons": (reason, *plan.reasons),
                                               **stopped_before_load(vars(plan))})
