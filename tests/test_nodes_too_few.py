"""A replica whose GPUs the nodes it names cannot hold (QA of the node advice, stop 44).

vLLM over Ray asks a placement group of one GPU bundle per worker and waits for it; a cluster with fewer GPUs than
the world size never grants it, and after ``PG_WAIT_TIMEOUT`` (1800 s) vLLM stops with "Cannot provide a placement
group of placement_group_specs=... within 1800 seconds" (vllm/v1/executor/ray_utils.py ``_wait_until_pg_ready``),
before any weight loads. SGLang's ``--nnodes 2`` gives each node ``tp / 2`` ranks, GPU ids past the node's stop at
``torch.cuda.set_device`` ("invalid device ordinal", python/sglang/srt/model_executor/model_runner.py). Tensor
parallel 32 over 2 nodes of 8 said "starts yes" for both; tensor parallel 16 with the Ray backend on one node too.

Expected figures come from :func:`planner.engines.plan_engine` of the layout that runs, never from the output under
test.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page

MODEL = "deepseek-ai/DeepSeek-V3"
GPU = "nvidia-h100-sxm-80gb"
CLI = ["plan", "--model", MODEL, "--gpu", GPU, "--context-len", "8192"]


def _cli(capsys, *extra: str, as_json: bool = False):
    assert main([*CLI, *extra, *(["--format", "json"] if as_json else [])]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if as_json else out


def _across(engine: str, tp: int, nodes: int):
    gpu = get_gpu(GPU)
    return plan_engine(model_spec(MODEL), gpu.framework_memory_bytes, EngineRequest(
        engine=engine, tensor_parallel_size=tp, max_model_len=8192, num_nodes=nodes,
        distributed_executor_backend="ray", gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu)))


def test_vllm_over_two_nodes_of_eight_cannot_place_32_workers(capsys):
    out = _cli(capsys, "--engine", "vllm", "--tensor-parallel-size", "32", "--num-nodes", "2",
               "--distributed-executor-backend", "ray", as_json=True)
    engine = out["engine_plan"]
    assert engine["starts"] is False
    assert "Cannot provide a placement group" in engine["reasons"][0] and "16" in engine["reasons"][0]
    four = _across("vllm", 32, 4)
    assert four.starts and out["multi_node"]["num_nodes"] == 4
    assert out["multi_node"]["launch_command"] == four.launch_command


def test_vllm_ray_on_one_node_of_eight_cannot_place_16_workers(capsys):
    text = _cli(capsys, "--engine", "vllm", "--tensor-parallel-size", "16", "--distributed-executor-backend", "ray")
    assert "starts       no" in text.splitlines(), text
    assert "Cannot provide a placement group" in text and "--num-nodes 2" in text
    assert f"{_across('vllm', 16, 2).max_concurrency:.2f}x" in text


def test_sglang_over_two_nodes_of_eight_stops_at_the_device_ordinal(capsys):
    out = _cli(capsys, "--engine", "sglang", "--tensor-parallel-size", "32", "--num-nodes", "2", as_json=True)
    assert out["engine_plan"]["starts"] is False
    assert "invalid device ordinal" in out["engine_plan"]["reasons"][0]
    assert "--nnodes 2" in out["engine_plan"]["reasons"][0]
    assert out["multi_node"]["num_nodes"] == 4 and _across("sglang", 32, 4).starts


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_enough_nodes_start_as_before(capsys, engine):
    out = _cli(capsys, "--engine", engine, "--tensor-parallel-size", "16", "--num-nodes", "2",
               *(["--distributed-executor-backend", "ray"] if engine == "vllm" else []), as_json=True)
    assert out["engine_plan"]["starts"] is True and "multi_node" not in out


def test_engine_page_refuses_too_few_nodes_and_offers_enough():
    at = run_page("pages/5_Engine.py", {"model": MODEL, "gpu": GPU, "num_gpus": "32", "num_nodes": "2",
                                        "context_len": "8192"})
    assert not at.exception, [e.value for e in at.exception]
    said = " ".join(e.value for kind in ("error", "warning") for e in getattr(at, kind))
    assert "Cannot provide a placement group" in said, said
    assert any("4" in b.label and "Nodes" in b.label for b in at.button), [b.label for b in at.button]


def test_one_node_holds_in_the_singular(capsys):
    text = _cli(capsys, "--engine", "vllm", "--tensor-parallel-size", "16", "--distributed-executor-backend", "ray")
    assert "1 node of 8 GPUs holds 8" in text and "which holds 8" in text, text
