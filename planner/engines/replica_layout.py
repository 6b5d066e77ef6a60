"""A replica laid out beyond one tensor-parallel group on one node: pipeline stages and more than one node.

1. Pipeline stages. The engine plan splits the layers over the stages (vLLM ``--pipeline-parallel-size``), and so
   does the budget of Home and of ``python -m planner plan`` (:func:`planner.pipeline.plan_pipeline`);
   :func:`pipeline_stages_text` words the engine's figures for the budget's readers; :func:`stages_apart` names the
   stage behind its available KV where that is not the stage that sizes the cache.
2. Nodes. vLLM picks its executor in ``ParallelConfig.__post_init__`` (vllm/config/parallel.py): with no
   ``--distributed-executor-backend`` and a world size (tensor x pipeline parallel) above 1 it takes ``mp``, whose
   workers run on this host; where the host has fewer GPUs than the world size it stops at startup and asks for
   ``--distributed-executor-backend ray`` (or, in the newest builds, ``--nnodes`` for its multi-node ``mp`` mode).
   The planner's multi-node launch is the Ray one (:attr:`planner.engines.types.EngineRequest.num_nodes`, which
   also prices the NCCL buffers per node). :func:`node_advice` re-plans a request that needs more GPUs than its
   nodes have across ``ceil(world / gpus_per_node)`` nodes with that backend. Over Ray (the backend named, or more
   than one node) a cluster with too few GPUs never grants the placement group of one GPU per worker: vLLM waits
   ``PG_WAIT_TIMEOUT`` (1800 s) and stops with "Cannot provide a placement group" (vllm/v1/executor/ray_utils.py
   ``_wait_until_pg_ready``) before any weight loads.
3. SGLang places the ranks itself: with ``--nnodes 1`` a node runs every rank on GPU ids ``0 .. tp x pp - 1``, and a
   rank whose id the node lacks stops at ``torch.cuda.set_device`` ("CUDA error: invalid device ordinal") before the
   weights load; across nodes it takes ``--nnodes``, ``--node-rank`` and ``--dist-init-addr``, one command per node
   (:mod:`planner.engines.sglang_nodes`). :func:`node_advice` re-plans it over the fewest nodes its rank layout fills.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines import sglang_nodes
from planner.engines.dispatch import plan_engine
from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.types import EnginePlan, EngineRequest, RankBudget, stopped_before_load
from planner.model import ModelSpec
from planner.text import count_noun

RAY_HEAD_PORT = 6379
"""The port ``ray start --head`` listens on by default (Ray's documented default, the GCS server)."""

PG_WAIT_TIMEOUT_S = 1800
"""How long vLLM's Ray executor waits for its placement group before it stops (``PG_WAIT_TIMEOUT`` in
vllm/v1/executor/ray_utils.py)."""


def starts_text(plan: EnginePlan) -> str:
    """``"starts with 40.04x at 32,768 tokens (40 requests at once)"``, or ``"would refuse to start"``: an engine
    plan's verdict and the concurrency it prints (vLLM's "Maximum concurrency for N tokens per request",
    vllm/v1/core/kv_cache_utils.py), with the whole requests it decodes at once (:attr:`EnginePlan.requests_held`)."""
    if not plan.starts:
        return "would refuse to start"
    return (f"starts with {plan.max_concurrency:.2f}x at {plan.max_model_len:,} tokens "
            f"({count_noun(int(plan.requests_held), 'request')} at once)")


def pipeline_stages_text(plan: EnginePlan, where: str = "") -> str:
    """``"2 pipeline stages of 8 GPUs: vllm starts with 40.04x at 32,768 tokens (40 requests at once)"``: the
    engine plan's pipeline layout and verdict, "" for a plan without pipeline stages; ``where`` follows the
    layout (``" (Engine page)"``)."""
    pp = plan.pipeline_parallel_size
    if pp <= 1:
        return ""
    return (f"{pp} pipeline stages of {count_noun(plan.tensor_parallel_size, 'GPU')}{where}: "
            f"{plan.engine} {starts_text(plan)}")


def stages_apart(plan: EnginePlan) -> tuple[RankBudget, RankBudget] | None:
    """``(least, sizing)``: the rank with the least available KV (:attr:`EnginePlan.available_kv_cache_bytes`, the
    minimum over GPUs) and the rank with the fewest blocks, whose blocks every stage gets (vLLM
    ``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py sets each worker's ``num_blocks`` to the smallest of
    all workers'; each worker prints its own "Available KV cache memory", vllm/v1/worker/gpu_worker.py), where they
    are different pipeline stages; else None. The budget's stage is the sizing one
    (:func:`planner.pipeline.plan_pipeline`: the fewest users, then tokens). Example: Kimi-K2.5 on 8 H200 in 2
    stages: stage 1, which also profiles the sampler and keeps the runner's sampling state (vLLM's profile run samples
    on the last pipeline rank only, vllm/v1/worker/gpu_model_runner.py), has 51.55 GiB; stage 0, 52.21 GiB in fewer
    blocks (its layers keep more KV a token), sizes the cache."""
    if plan.pipeline_parallel_size <= 1 or not plan.ranks:
        return None
    least = min(plan.ranks, key=lambda r: r.available_kv_cache_bytes)
    sizing = min(plan.ranks, key=lambda r: (r.num_blocks, r.available_kv_cache_bytes))
    return None if least.stage == sizing.stage else (least, sizing)


@dataclass(frozen=True)
class NodeAdvice:
    """A one-node launch wider than a node, and the launch across nodes that runs.

    Attributes:
        gpus_per_node: GPUs in one node the advice assumed [GPUs].
        num_nodes: Nodes the replica needs (``ceil(tp x pp / gpus_per_node)``; SGLang: the fewest its rank layout
            fills, :func:`planner.engines.sglang_nodes.nodes_needed`).
        plan: The engine plan across ``num_nodes`` nodes with the Ray backend (SGLang: its ``--nnodes`` launch).
    """

    gpus_per_node: int
    num_nodes: int
    plan: EnginePlan
    given_nodes: int = 1
    """The nodes the refused request named (its ``num_nodes``), which hold fewer GPUs than its ``tp x pp``."""
    given_backend: str = "mp"
    """The refused request's ``distributed_executor_backend``: vLLM's ``mp`` stops on one node, Ray waits."""

    @property
    def waits_for_ray(self) -> bool:
        """True where vLLM's refused request runs over Ray (it named the Ray backend or more than one node): its
        placement group waits for GPUs the nodes lack, not the ``mp`` executor's one-node stop."""
        return self.plan.family != "sglang" and (self.given_nodes > 1 or self.given_backend != "mp")

    def text(self, how: str, node_source: str) -> str:
        """The warning: why the one-node launch stops, and the command that runs.

        Args:
            how: How the reader sets the nodes (``"--num-nodes 2"``, ``"Nodes per replica 2"``).
            node_source: Where the node size comes from (``"--gpus-per-node, default 8"``).
        """
        p = self.plan
        if p.family == "sglang":
            return sglang_nodes.advice_text(p, self.gpus_per_node, self.num_nodes, how, node_source, starts_text(p),
                                            given_nodes=self.given_nodes)
        world = p.tensor_parallel_size * p.pipeline_parallel_size
        if self.waits_for_ray:
            held = self.given_nodes * self.gpus_per_node
            return (f"{count_noun(world, 'GPU')} per replica (tensor parallel {p.tensor_parallel_size} x pipeline "
                    f"{p.pipeline_parallel_size}) over {count_noun(self.given_nodes, 'node')} of {self.gpus_per_node} "
                    f"({node_source}), which {'holds' if self.given_nodes == 1 else 'hold'} {held}: vLLM's Ray "
                    "executor asks a placement group of one GPU per "
                    f"worker, waits {PG_WAIT_TIMEOUT_S} s for it and stops with 'Cannot provide a placement group' "
                    f"(vllm/v1/executor/ray_utils.py _wait_until_pg_ready). Across {self.num_nodes} nodes ({how}) "
                    f"it runs: start a Ray cluster over them (`ray start --head` on the first, `ray start "
                    f"--address=HEAD_IP:{RAY_HEAD_PORT}` on the others), then run on the first `{p.launch_command}`, "
                    f"which {starts_text(p)}")
        return (f"{count_noun(world, 'GPU')} per replica (tensor parallel {p.tensor_parallel_size} x pipeline "
                f"{p.pipeline_parallel_size}) on one node, where a node holds {self.gpus_per_node} ({node_source}): "
                f"vLLM's default `mp` executor keeps the workers on one node and stops at startup when the node has "
                f"fewer GPUs than that (vllm/config/parallel.py). Across {self.num_nodes} nodes ({how}) it runs with "
                f"the Ray backend: start a Ray cluster over them (`ray start --head` on the first, `ray start "
                f"--address=HEAD_IP:{RAY_HEAD_PORT}` on the others), then run on the first `{p.launch_command}`, "
                f"which {starts_text(p)}")


def node_advice(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                gpus_per_node: int) -> NodeAdvice | None:
    """The multi-node launch of a vLLM ``request`` planned on one node with the ``mp`` executor, or of an SGLang one
    on one node (``--nnodes 1``), whose ``tp x pp`` GPUs are more than ``gpus_per_node`` (module docstring, 2 and
    3; the callers' default is ``planner.scale.layout.DEFAULT_GPUS_PER_NODE``, an HGX board's 8); None when the
    request fits a node, already spans nodes or names the Ray backend, or another engine family plans it.

    Raises:
        ValueError: as :func:`planner.engines.plan_engine`.
    """
    world = request.tensor_parallel_size * request.pipeline_parallel_size
    family = ENGINE_PROFILES[request.engine].family
    if family not in ("vllm", "sglang") or world <= request.num_nodes * gpus_per_node:
        return None
    nodes = (sglang_nodes.nodes_needed(request.tensor_parallel_size, request.pipeline_parallel_size, gpus_per_node)
             if family == "sglang" else -(-world // gpus_per_node))
    # SGLang ignores the backend; the request names Ray only because EngineRequest.validate asks it of every launch
    # over nodes
    across = replace(request, num_nodes=nodes, distributed_executor_backend="ray")
    return NodeAdvice(gpus_per_node=gpus_per_node, num_nodes=nodes, plan=plan_engine(model, gpu_memory_bytes, across),
                      given_nodes=request.num_nodes, given_backend=request.distributed_executor_backend)


def refused_on_one_node(plan: EnginePlan, advice: NodeAdvice | None) -> EnginePlan:
    """``plan`` as the one-node launch runs: refused before it loads weights where ``advice`` (:func:`node_advice`)
    says the replica needs more GPUs than a node holds, else ``plan`` unchanged. The reason is worded as the engine's
    stop, vLLM's or SGLang's "invalid device ordinal" (:func:`planner.engines.sglang_nodes.one_node_reason`), with
    its figures, not the planner's: the two-node launch and its concurrency are the warning's (QA stop 43). A node
    of 8 GPUs cannot hold 16 workers whatever the executor: vLLM's ``mp`` stops at startup (vllm/config/parallel.py),
    and a Ray launch waits for GPUs no node has until a cluster spans the nodes. QA (stop 43): DeepSeek-V3 on tensor
    parallel 8 x pipeline 2 "starts yes" above a warning that said the same launch stops; the advice's launch is the
    one that runs."""
    if advice is None:
        return plan
    world = plan.tensor_parallel_size * plan.pipeline_parallel_size
    if plan.family == "sglang":
        reason = sglang_nodes.one_node_reason(plan, advice.gpus_per_node, advice.given_nodes)
    elif advice.waits_for_ray:
        reason = (f"Cannot provide a placement group of {world} GPU bundles within {PG_WAIT_TIMEOUT_S} seconds: "
                  f"{count_noun(advice.given_nodes, 'node')} of {advice.gpus_per_node} GPUs "
                  f"{'holds' if advice.given_nodes == 1 else 'hold'} "
                  f"{advice.given_nodes * advice.gpus_per_node} (vllm/v1/executor/ray_utils.py _wait_until_pg_ready); "
                  f"span {advice.num_nodes} nodes")
    else:
        reason = (f"World size ({world}: tensor parallel {plan.tensor_parallel_size} x pipeline "
                  f"{plan.pipeline_parallel_size}) is larger than the {advice.gpus_per_node} GPUs of this node; set "
                  "--distributed-executor-backend ray over a cluster of enough nodes")
    return EnginePlan._from_parts(vars(plan), {"starts": False, "reasons": (reason, *plan.reasons),
                                               **stopped_before_load(vars(plan))})


def on_one_node(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, plan: EnginePlan,
                gpus_per_node: int) -> EnginePlan:
    """``plan`` (of ``request``) as it runs on one node: :func:`refused_on_one_node` of :func:`node_advice`, for the
    pages, whose GPUs carry no node size (``gpus_per_node``: the CLI's default, 8).

    Raises:
        ValueError: as :func:`planner.engines.plan_engine`.
    """
    return refused_on_one_node(plan, node_advice(model, gpu_memory_bytes, request, gpus_per_node))


def stage_log_note(plan: EnginePlan) -> str:
    """Which stage each printed vLLM line describes where the pipeline stages' available memory differs, else "":
    each worker logs its own "Available KV cache memory" (the planner prints stage 0's, as a log's first such line),
    while the cache size and the concurrency follow the stage with the fewest blocks (vllm/v1/core/kv_cache_utils.py
    takes the minimum over workers). QA (stop 43): Home and the CLI showed "26.13 GiB of KV per GPU" beside a printed
    "Available KV cache memory: 29.13 GiB" and said nothing; the Engine page did."""
    if not plan.engine.startswith("vllm") or len({r.available_kv_cache_bytes for r in plan.ranks}) < 2:
        return ""
    return ("as vLLM logs them, 'Available KV cache memory' is one worker's line (stage 0's here; every worker "
            "prints its own), while the KV cache size and the concurrency follow the stage with the fewest blocks")
