"""An SGLang replica wider than one node (QA: tensor parallel 16 on nodes of 8 "starts yes" with a one-node command).

SGLang's launcher gives each scheduler process the GPU id ``base_gpu_id + (pp_rank % pp_size_per_node) x
tp_size_per_node + tp_rank % tp_size_per_node`` with ``tp_size_per_node = tp_size // nnodes_per_tp_group``
(python/sglang/srt/entrypoints/engine.py, ``_launch_scheduler_processes`` and ``_calculate_rank_ranges``). With the
default ``--nnodes 1`` the 16 ranks of ``--tp 16`` get GPU ids 0-15 on one node of 8; ranks 8-15 stop in
``ModelRunner.init_torch_distributed`` at ``torch.cuda.set_device`` ("CUDA error: invalid device ordinal",
python/sglang/srt/model_executor/model_runner.py), which runs before ``initialize()`` loads the weights. Across
nodes SGLang takes ``--nnodes``, ``--node-rank`` and ``--dist-init-addr`` (python/sglang/srt/server_args.py), one
command per node, and asserts in ``check_server_args`` that ``tp_size x pp_size`` divides by the nodes.

Expected figures come from :func:`planner.engines.plan_engine` of the two-node request, never from the page or the
command under test; the one-node refusal is checked by SGLang's own error text.
"""

from __future__ import annotations

import json

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.replica_layout import node_advice, on_one_node
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page

MODEL = "meta-llama/Meta-Llama-3.1-405B"
GPU = "nvidia-h100-sxm-80gb"
LINK = {"engine": "sglang", "model": MODEL, "gpu": GPU, "num_gpus": "16", "context_len": "8192"}
CLI = ["plan", "--model", MODEL, "--gpu", GPU, "--num-gpus", "16", "--context-len", "8192", "--engine", "sglang"]
ACROSS = {"num_nodes": 2, "distributed_executor_backend": "ray"}
ORDINAL = "invalid device ordinal"
"""The CUDA error ``torch.cuda.set_device`` raises for a GPU id the node does not have."""


def _request(tp: int = 16, pp: int = 1, **more) -> EngineRequest:
    gpu = get_gpu(GPU)
    return EngineRequest(engine="sglang", tensor_parallel_size=tp, pipeline_parallel_size=pp, max_model_len=8192,
                         gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu), **more)


def _plan(tp: int = 16, pp: int = 1, **more):
    return plan_engine(model_spec(MODEL), get_gpu(GPU).framework_memory_bytes, _request(tp, pp, **more))


def _per_node(command: str, nodes: int = 2) -> list[str]:
    """Each node's command as SGLang's docs give them (docs/references/multi_node_deployment/multi_node.md): the
    same launch, ``--node-rank`` 0, 1, ... (derived here from node 0's, not by the planner's helper)."""
    assert command.count("--node-rank 0") == 1, command
    return [command.replace("--node-rank 0", f"--node-rank {rank}") for rank in range(nodes)]


def _cli(capsys, *extra: str) -> str:
    assert main([*CLI, *extra]) == 0
    return capsys.readouterr().out


def _texts(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [e.value for kind in ("error", "warning", "success", "info", "caption", "markdown")
            for e in getattr(at, kind)]


# --------------------------------------------------------------------------
# 1. The planner
# --------------------------------------------------------------------------
def test_two_node_sglang_launch_names_the_nodes_its_rank_and_the_head_address():
    plan = _plan(**ACROSS)
    command = plan.launch_command
    assert plan.starts
    assert "--nnodes 2" in command and "--node-rank 0" in command and "--dist-init-addr HEAD_IP:" in command
    assert command.startswith("python -m sglang.launch_server") and "--tp 16" in command
    one_node = _plan()
    assert "--nnodes" not in one_node.launch_command and "--dist-init-addr" not in one_node.launch_command


def test_one_node_sglang_wider_than_a_node_stops_before_loading_weights():
    model, memory = model_spec(MODEL), get_gpu(GPU).framework_memory_bytes
    refused = on_one_node(model, memory, _request(), _plan(), 8)
    assert refused.starts is False and refused.stopped_at_config_check
    assert refused.engine_log_lines == () and refused.num_gpu_blocks == 0 and refused.max_concurrency == 0
    assert ORDINAL in refused.reasons[0]
    fits = on_one_node(model, memory, _request(), _plan(), 16)  # a node of 16 holds the replica
    assert fits.starts and fits.engine_log_lines


def test_node_advice_plans_sglang_across_nodes_with_one_command_per_node():
    advice = node_advice(model_spec(MODEL), get_gpu(GPU).framework_memory_bytes, _request(), 8)
    across = _plan(**ACROSS)
    assert advice is not None and advice.num_nodes == 2
    assert advice.plan.launch_command == across.launch_command and advice.plan.starts
    text = advice.text("--num-nodes 2", "--gpus-per-node, default 8")
    for command in _per_node(across.launch_command):
        assert command in text
    assert f"{across.max_concurrency:.2f}x" in text and ORDINAL in text
    assert "ray" not in text  # SGLang spans nodes with its own launcher, not a Ray cluster


def test_sglang_node_count_follows_its_rank_layout():
    """Tensor parallel 8 x pipeline 3 on nodes of 16: two nodes give SGLang one pipeline stage each (``pp_size //
    nnodes`` = 1 per node, engine.py ``_calculate_rank_ranges``), so stage 2 has no node; three nodes hold the
    three stages of 8."""
    advice = node_advice(model_spec(MODEL), get_gpu(GPU).framework_memory_bytes, _request(8, 3), 16)
    assert advice is not None and advice.num_nodes == 3
    assert "--nnodes 3" in advice.plan.launch_command


def test_sglang_refuses_nodes_that_do_not_divide_its_ranks():
    """server_args.py ``check_server_args``: ``tp_size * pp_size % nnodes == 0``, asserted before any process."""
    plan = _plan(num_nodes=3, distributed_executor_backend="ray")
    assert plan.starts is False and plan.stopped_at_config_check and plan.engine_log_lines == ()
    assert "tp_size must be divisible by number of nodes" in plan.reasons[0]


# --------------------------------------------------------------------------
# 2. The CLI
# --------------------------------------------------------------------------
def test_cli_refuses_the_one_node_launch_and_warns_with_each_nodes_command(capsys):
    out = _cli(capsys)
    across = _plan(**ACROSS)
    lines = out.splitlines()
    assert "starts       no" in lines
    assert any(line.startswith("  reason:") and ORDINAL in line for line in lines), out
    assert "KV Cache is allocated" not in out and "Load weight end" not in out
    warning = next((line for line in lines if line.startswith("  warning:") and "--num-nodes 2" in line), "")
    assert warning, out
    for command in _per_node(across.launch_command):
        assert command in warning
    assert f"{across.max_concurrency:.2f}x" in warning


def test_cli_json_refusal_and_multi_node_keys(capsys):
    out = json.loads(_cli(capsys, "--format", "json"))
    across = _plan(**ACROSS)
    engine, multi = out["engine_plan"], out["multi_node"]
    assert engine["starts"] is False and engine["engine_log_lines"] == [] and ORDINAL in engine["reasons"][0]
    assert multi["num_nodes"] == 2 and multi["gpus_per_node"] == 8 and multi["starts"] is True
    assert multi["launch_command"] == across.launch_command
    assert multi["launch_commands"] == _per_node(across.launch_command)
    assert multi["max_concurrency"] == across.max_concurrency
    vllm = json.loads(_cli(capsys, "--format", "json", "--engine", "vllm"))["multi_node"]
    assert set(vllm) <= set(multi)  # the vLLM key's fields, each kept


def test_cli_two_nodes_start_with_one_command_per_node(capsys):
    across = _plan(**ACROSS)
    out = json.loads(_cli(capsys, "--num-nodes", "2", "--format", "json"))
    refused = json.loads(_cli(capsys, "--format", "json"))
    assert "multi_node" not in out and out["engine_plan"]["starts"] is True
    assert out["launch_command"] == across.launch_command
    assert out["launch_commands"] == _per_node(across.launch_command)
    assert set(refused) - {"multi_node", "fixes"} <= set(out)  # no key renamed or dropped
    text = _cli(capsys, "--num-nodes", "2")
    launches = [line for line in text.splitlines() if line.startswith("launch ")]
    assert [line.split(None, 1)[1] for line in launches] == _per_node(across.launch_command)
    assert "starts       yes" in text.splitlines() and ORDINAL not in text
    one_node = json.loads(_cli(capsys, "--num-gpus", "8", "--weight-dtype", "fp8", "--format", "json"))
    assert "launch_commands" not in one_node and "--nnodes" not in one_node["launch_command"]  # JSON as before
    assert main(["deploy", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", GPU, "--engine", "sglang", "--num-nodes",
                 "2", "--tensor-parallel-size", "16", "--ep-size", "16", "--target", "commands"]) == 0
    deployed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("python")]
    assert len(deployed) == 2 and all(line.count("--nnodes") == 1 for line in deployed), deployed  # its own flags
    port = next(w for w in across.launch_command.split() if w.startswith("HEAD_IP:")).split(":")[1]
    assert all(f"--dist-init-addr $HEAD_IP:{port}" in line for line in deployed), deployed  # one rendezvous port


# --------------------------------------------------------------------------
# 3. The Engine page and Home's engine panel
# --------------------------------------------------------------------------
def test_engine_page_refuses_sglang_on_one_node_with_the_nodes_button():
    at = run_page("pages/5_Engine.py", LINK)
    texts = _texts(at)
    across = _plan(**ACROSS)
    assert not at.success
    assert any("would refuse to start" in t and ORDINAL in t for t in texts), texts
    assert any(b.label == "Nodes → 2" for b in at.button)
    warned = [w.value for w in at.warning if "--node-rank 1" in w.value]
    assert warned, [w.value for w in at.warning]
    assert "--dist-init-addr" in warned[0] and f"{across.max_concurrency:.2f}x" in warned[0]
    assert not any("KV Cache is allocated" in c.value for c in at.code)


def test_engine_page_two_sglang_nodes_start_with_each_nodes_command():
    at = run_page("pages/5_Engine.py", {**LINK, "num_nodes": "2"})
    texts = _texts(at)
    assert any("sglang starts" in s.value for s in at.success), texts
    assert not any(ORDINAL in t for t in texts)
    codes = [c.value for c in at.code]
    for rank in (0, 1):
        assert any("--node-rank" in c and f"--node-rank {rank}" in c and "--nnodes 2" in c for c in codes), codes


def test_home_engine_panel_refuses_sglang_on_one_node_and_warns_with_the_nodes():
    at = run_page("app.py", LINK)
    texts = _texts(at)
    assert any("would refuse to start" in t and ORDINAL in t for t in texts), texts
    assert any("--node-rank 1" in w.value and "--dist-init-addr" in w.value for w in at.warning), texts


def test_nodes_that_do_not_divide_get_the_nodes_that_do_as_a_fix():
    """QA (stop 44): SGLang's 16 GPUs over --nnodes 3 ("tp_size must be divisible by number of nodes") offered only
    "GPUs → 32, 4 nodes"; the same 16 GPUs over 2 nodes start (SGLang's own figure, from plan_engine)."""
    link = {"model": "meta-llama/Meta-Llama-3.1-405B", "gpu": "nvidia-h100-sxm-80gb", "engine": "sglang",
            "num_gpus": "16", "num_nodes": "3"}
    at = run_page("pages/5_Engine.py", link)
    assert not at.exception, [e.value for e in at.exception]
    button = next((b for b in at.button if b.label == "Nodes → 2"), None)
    assert button is not None, [b.label for b in at.button]
    button.click().run()
    assert not any("divisible by number of nodes" in w.value for w in at.warning), [w.value for w in at.warning]
