"""What runs a plan: llm-d model-service Helm values, and each role's launch commands.

llm-d's model-service chart (llm-d-incubation/llm-d-modelservice, chart v0.4.12) describes a model as
a ``decode`` role and an optional ``prefill`` role. Per role, ``parallelism`` has ``tensor`` (vLLM
``--tensor-parallel-size``), ``data`` (``--data-parallel-size``, all DP ranks of one replica),
``dataLocal`` (``--data-parallel-size-local``, ranks in one pod) and ``workers`` (pods of one replica,
a LeaderWorkerSet group when ``multinode`` is true); one pod requests ``dataLocal x tensor`` GPUs.
With ``modelCommand: vllmServe`` the chart writes ``vllm serve <model> --port ... --tensor-parallel-size
--data-parallel-size --data-parallel-size-local --served-model-name`` itself, then appends the
container's ``args``: everything else (``--enable-expert-parallel``, which has no chart key, the
memory flags, the KV connector) goes there. Prefill / decode pairs exchange KV through vLLM's
``NixlConnector`` (``--kv-transfer-config`` with ``kv_role`` ``kv_both``), as the chart's P/D example does.

Sources: charts/llm-d-modelservice/values.yaml, values.schema.json and templates/_helpers.tpl
(``tensorParallelism``, ``dataParallelism``, ``dataLocalParallelism``, ``numWorkers``,
``numGpuPerWorker``, ``vllmServeModelCommand``) and examples/values-pd.yaml at tag
llm-d-modelservice-v0.4.12; vLLM docs/serving/data_parallel_deployment.md (``--headless``,
``--data-parallel-start-rank``, ``--data-parallel-address``, ``--data-parallel-rpc-port``);
SGLang server arguments (``--nnodes``, ``--node-rank``, ``--dist-init-addr``,
``--disaggregation-mode``).
"""

from __future__ import annotations

import json
import re
import shlex

from planner.engines.launch import SGLANG_DIST_INIT_PORT
from planner.scale.plan import ScalePlan, append_flags
from planner.text import count_noun

CHART = "llm-d-incubation/llm-d-modelservice"
CHART_VERSION = "v0.4.12"
"""The chart release the values follow."""

IMAGE = "ghcr.io/llm-d/llm-d-cuda:latest"
"""The vLLM image of the chart's CUDA examples (examples/values-pd.yaml)."""

NIXL_CONFIG = '{"kv_connector": "NixlConnector", "kv_role": "kv_both"}'
"""vLLM's ``--kv-transfer-config`` for a prefill / decode pair over NIXL."""

NIXL_PORT = 5600
"""NIXL side-channel port of the chart's P/D example."""

MANAGED_FLAGS = ("--tensor-parallel-size", "--data-parallel-size", "--data-parallel-size-local")
"""Flags the chart writes itself from ``parallelism`` (left out of the container args)."""

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_./-]+$")


def _scalar(value) -> str:
    """One YAML scalar: strings double-quoted (JSON's escapes are YAML's), numbers and booleans plain."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    return json.dumps(str(value))


def _lines(value, indent: int) -> list[str]:
    """Block-style YAML lines of a dict or list at ``indent`` spaces."""
    pad = " " * indent
    out: list[str] = []
    if isinstance(value, dict):
        for key, item in value.items():
            name = key if _PLAIN_KEY.match(key) else json.dumps(key)
            if isinstance(item, (dict, list)) and item:
                out.append(f"{pad}{name}:")
                out += _lines(item, indent + 2)
            else:
                out.append(f"{pad}{name}: {_inline(item)}")
        return out
    for item in value:
        if isinstance(item, dict) and item:
            inner = _lines(item, indent + 2)
            out.append(f"{pad}- {inner[0].lstrip()}")
            out += inner[1:]
        elif isinstance(item, list) and item:
            raise ValueError("nested lists are not emitted")
        else:
            out.append(f"{pad}- {_inline(item)}")
    return out


def _inline(item) -> str:
    """An empty container or a scalar on one line."""
    if isinstance(item, dict):
        return "{}"
    if isinstance(item, list):
        return "[]"
    return _scalar(item)


def to_yaml(values: dict, header: tuple[str, ...] = ()) -> str:
    """``values`` as a block-style YAML document, with ``header`` lines as comments.

    Args:
        values: Nested dicts / lists of strings, numbers, booleans and None (no nested lists).
        header: Comment lines written first.

    Raises:
        ValueError: a list directly inside a list.
    """
    return "\n".join([*(f"# {line}" for line in header), *_lines(values, 0)]) + "\n"


def _split_launch(command: str) -> tuple[list[str], list[dict]]:
    """``(args after the model id without the chart's own flags, env entries)`` of a vLLM launch command."""
    tokens = shlex.split(command, comments=True)
    env = []
    while tokens and "=" in tokens[0] and not tokens[0].startswith("-"):
        name, value = tokens.pop(0).split("=", 1)
        env.append({"name": name, "value": value})
    tokens = tokens[3:]  # vllm serve MODEL
    args: list[str] = []
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token in MANAGED_FLAGS:
            skip = True
            continue
        args.append(token)
    return args, env


def _role(plan: ScalePlan, replicas: int, *, disaggregated: bool, gpus_per_node: int, port: int) -> dict:
    """One role's values (``decode`` or ``prefill``).

    Raises:
        ValueError: a tensor-parallel group wider than a node (the chart keeps it in one pod), or SGLang.
    """
    layout = plan.layout
    if layout.family != "vllm":
        raise ValueError("llm-d's model-service chart runs vLLM; use --engine vllm, or --target commands for SGLang")
    tp, dp = layout.tensor_parallel_size, layout.attention_dp
    if tp > gpus_per_node:
        raise ValueError(f"--tensor-parallel-size {tp} is wider than a node of {count_noun(gpus_per_node, 'GPU')}; the "
                         "chart keeps one tensor-parallel group in one pod: use data + expert parallel across nodes "
                         "instead")
    local = layout.data_parallel_size_local or 1
    workers = dp // local
    args, env = _split_launch(plan.launch_command)
    ports = [{"containerPort": port, "protocol": "TCP"}]
    if disaggregated:
        args += ["--kv-transfer-config", NIXL_CONFIG]
        env += [{"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(NIXL_PORT)},
                {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}]
        ports.append({"containerPort": NIXL_PORT, "protocol": "TCP"})
    gpus = {"nvidia.com/gpu": str(local * tp)}
    return {
        "create": True, "replicas": replicas,
        "parallelism": {"tensor": tp, "data": dp, "dataLocal": local, "workers": workers},
        "containers": [{
            "name": "vllm", "image": IMAGE, "modelCommand": "vllmServe", "args": args, "env": env,
            "ports": ports, "resources": {"limits": dict(gpus), "requests": dict(gpus)}, "mountModelVolume": True,
        }],
    }


def llm_d_values(model_id: str, roles: dict[str, tuple[ScalePlan, int]], *, model_size_gib: int,
                 gpus_per_node: int = 8) -> dict:
    """The model-service values for ``roles`` (module docstring).

    Args:
        model_id: The Hugging Face repo the pods serve.
        roles: ``{"decode": (plan, replicas)}``, plus ``"prefill"`` for a disaggregated deployment.
        model_size_gib: Size of the model volume to request [GiB].
        gpus_per_node: GPUs in one node [GPUs].

    Raises:
        ValueError: no decode role, an SGLang plan, or a tensor-parallel group wider than a node.
    """
    if "decode" not in roles:
        raise ValueError("a deployment needs a decode role")
    disaggregated = "prefill" in roles
    # decode pods sit behind the routing sidecar (proxy.targetPort 8200), prefill pods serve routing.servicePort
    built = {name: _role(plan, replicas, disaggregated=disaggregated, gpus_per_node=gpus_per_node,
                         port=8200 if name == "decode" else 8000) for name, (plan, replicas) in roles.items()}
    slug = re.sub(r"[^a-z0-9.-]+", "-", model_id.lower()).strip("-.")[:63] or "model"
    return {
        "multinode": any(role["parallelism"]["workers"] > 1 for role in built.values()),
        "modelArtifacts": {"name": model_id, "uri": f"hf://{model_id}", "size": f"{max(1, model_size_gib)}Gi",
                           "labels": {"llm-d.ai/inference-serving": "true", "llm-d.ai/model": slug}},
        "accelerator": {"type": "nvidia"},
        "routing": {"servicePort": 8000, "proxy": {"enabled": True, "targetPort": 8200, "connector": "nixlv2"}},
        "decode": built["decode"],
        "prefill": built.get("prefill", {"create": False, "replicas": 0}),
    }


def node_commands(plan: ScalePlan, role: str, *, disaggregated: bool, head: str = "$HEAD_IP") -> list[str]:
    """The launch command of every node of one replica of ``role`` (module docstring).

    Args:
        plan: The role's launch.
        role: ``decode`` or ``prefill`` (or ``serve`` for an aggregated deployment).
        disaggregated: Add the KV connector (vLLM) or the disaggregation mode (SGLang).
        head: Address of the replica's first node, as written into the commands.
    """
    layout, command = plan.layout, plan.launch_command
    if layout.family == "vllm":
        if disaggregated:
            command = append_flags(command, ["--kv-transfer-config", f"'{NIXL_CONFIG}'"])
        if layout.nodes <= 1:
            return [command]
        local = layout.data_parallel_size_local or 1
        common = ["--data-parallel-address", head, "--data-parallel-rpc-port", "13345"]
        return [append_flags(command, common + ([] if node == 0 else
                                                ["--headless", "--data-parallel-start-rank", str(node * local)]))
                for node in range(layout.nodes)]
    if disaggregated:
        command = append_flags(command, ["--disaggregation-mode", role])
    if layout.nodes <= 1:
        return [command]
    return [append_flags(command, ["--nnodes", str(layout.nodes), "--node-rank", str(node), "--dist-init-addr",
                                   f"{head}:{SGLANG_DIST_INIT_PORT}"]) for node in range(layout.nodes)]


def model_volume_gib(model) -> int:
    """The model volume to request: the checkpoint's stored weights plus 10 %, in whole GiB (at least 1) [GiB]."""
    from planner.model.params import model_weight_bytes
    from planner.units import GiB

    return max(1, -(-model_weight_bytes(model, "auto") * 11 // (10 * GiB)))


def roles_yaml(model, roles: dict[str, tuple[ScalePlan, int]], *, gpu_name: str, gpus_per_node: int = 8) -> str:
    """llm-d values of ``roles`` as YAML text with its header comments (what ``python -m planner deploy --target
    llm-d`` prints).

    Args:
        model: The model the roles serve (its id names the artifacts, its weights size the volume).
        roles: ``{"decode": (plan, replicas)}``, plus ``"prefill"`` for a disaggregated deployment.
        gpu_name: The GPU's display name (header comment).
        gpus_per_node: GPUs in one node [GPUs].

    Raises:
        ValueError: what :func:`llm_d_values` refuses (SGLang, a tensor-parallel group wider than a node).
    """
    values = llm_d_values(model.model_id, roles, model_size_gib=model_volume_gib(model), gpus_per_node=gpus_per_node)
    header = (f"llm-d model-service values ({CHART} chart {CHART_VERSION}), from python -m planner deploy",
              f"model {model.model_id} on {gpu_name}; "
              + "; ".join(f"{r}: {count_noun(rep, 'replica')} of {count_noun(p.layout.num_gpus, 'GPU')}"
                          for r, (p, rep) in roles.items()))
    return to_yaml(values, header)


def role_commands(roles: dict[str, tuple[ScalePlan, int]]) -> list[str]:
    """Each role's launch commands, one per node of one replica, each role after a ``# role: ...`` comment line
    (what ``python -m planner deploy --target commands`` prints). A single ``decode`` role is an aggregated
    deployment, named ``serve``."""
    disaggregated = "prefill" in roles
    out = []
    for role, (plan, replicas) in roles.items():
        name = role if disaggregated else "serve"
        out.append(f"# {name}: {count_noun(replicas, 'replica')} of {count_noun(plan.layout.num_gpus, 'GPU')} on "
                   f"{count_noun(plan.layout.nodes, 'node')}; one replica's commands, one per node")
        out += node_commands(plan, name, disaggregated=disaggregated)
    return out


def start_refusal(roles: dict[str, tuple[ScalePlan, int]]) -> str | None:
    """Why ``roles`` cannot be deployed: a sentence naming each role whose launch would not start and the engine's
    reason, or None when every launch starts (no command or values are written for a launch that would not
    start)."""
    refused: dict[str, list[str]] = {}  # reason -> roles (the same launch refused for both roles: once)
    for role, (plan, _) in roles.items():
        if not plan.starts:
            refused.setdefault("; ".join(plan.reasons) or "no room for its KV cache", []).append(role)
    return "; ".join(f"the {' and '.join(names)} launch would not start ({reason})"
                     for reason, names in refused.items()) or None


def disagg_roles(result) -> dict[str, tuple[ScalePlan, int]]:
    """``{"prefill": ..., "decode": ...}`` of a :class:`planner.scale.disagg.DisaggPlan` (at least one decode
    replica)."""
    return {"prefill": (result.prefill.plan, result.prefill.replicas),
            "decode": (result.decode.plan, max(1, result.decode.replicas))}


def disagg_values_yaml(model, result, *, gpu_name: str, gpus_per_node: int = 8) -> str:
    """llm-d values of both pools of a :class:`planner.scale.disagg.DisaggPlan`, as YAML text (what
    ``python -m planner deploy --target llm-d`` prints with ``--users``).

    Raises:
        ValueError: what :func:`llm_d_values` refuses (SGLang, a tensor-parallel group wider than a node).
    """
    return roles_yaml(model, disagg_roles(result), gpu_name=gpu_name, gpus_per_node=gpus_per_node)
