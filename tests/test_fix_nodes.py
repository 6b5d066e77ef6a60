"""A GPU-count fix whose GPUs outgrow one node (QA, stop 44).

"GPUs → 32" for DeepSeek-V3.2 at 16 x 131,072 tokens on 8 H200 said "starts with 16.98x", and the page it opened
refused the launch: 32 workers on one node of 8 ("World size (32 ...) is larger than the 8 GPUs of this node",
vllm/config/parallel.py). The Engine page's "GPUs → 40" for Llama 4 Maverick at 1M tokens did the same. A fix is
now checked as it runs, over the nodes that hold its GPUs (:func:`planner.engines.replica_layout.node_advice`), says
so, and sets the nodes with the GPUs.

Expected figures come from :func:`planner.engines.plan_engine` of the launch over those nodes, never from the page.
"""

from __future__ import annotations

import json

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page

DS = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
      "batch_size": "16", "kv_cache_dtype": "fp8"}


def _over_nodes(model: str, gpu_id: str, tp: int, nodes: int, context: int, **more):
    gpu = get_gpu(gpu_id)
    return plan_engine(model_spec(model), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=tp, max_model_len=context, num_nodes=nodes,
        distributed_executor_backend="ray", gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu),
        **more))


def test_cli_gpu_fix_names_the_nodes_and_the_launch_that_starts(capsys):
    args = ["plan", "--model", DS["model"], "--gpu", DS["gpu"], "--num-gpus", "8", "--context-len", "131072",
            "--batch-size", "16", "--kv-cache-dtype", "fp8", "--format", "json"]
    assert main(args) == 0
    fix = next(f for f in json.loads(capsys.readouterr().out)["fixes"] if f["key"] == "num_gpus")
    nodes = fix["also"]["num_nodes"]
    assert nodes == -(-fix["value"] // 8) and fix["starts"] is True
    across = _over_nodes(DS["model"], DS["gpu"], fix["value"], nodes, 131072, kv_cache_dtype="fp8")
    assert across.starts and f"over {nodes} nodes it starts with {across.max_concurrency:.2f}x" in fix["help"]


def test_home_gpu_fix_sets_the_nodes_and_the_launch_starts():
    at = run_page("app.py", DS)
    button = next(b for b in at.button if b.label.startswith("GPUs →"))
    assert "nodes" in button.label, button.label
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert str(at.query_params["num_nodes"]) == "4" and str(at.query_params["num_gpus"]) == "32"
    assert any(s.value.startswith("**Fits.**") for s in at.success), [w.value for w in at.warning]
    assert not any("would not start" in w.value or "World size" in w.value for w in at.warning)


def test_engine_page_gpu_fix_sets_its_nodes_knob():
    link = {"model": "meta-llama/Llama-4-Maverick-17B-128E-Instruct", "gpu": "nvidia-h100-sxm-80gb", "num_gpus": "8",
            "context_len": "1048576", "kv_cache_dtype": "fp8"}
    at = run_page("pages/5_Engine.py", link)
    button = next(b for b in at.button if b.label.startswith("GPUs →"))
    assert "nodes" in button.label, button.label
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    refused = [w.value for w in at.warning if "refuse to start" in w.value or "World size" in w.value]
    assert not refused, refused


def test_home_offers_the_nodes_a_replica_wider_than_its_nodes_needs():
    """QA (stop 44): ``/?...&num_gpus=32&num_nodes=2`` refused the launch ("span 4 nodes") with no button on Home,
    where the Engine page offers "Nodes → 4"; one click now sets the link's nodes and the launch starts."""
    at = run_page("app.py", {"model": "meta-llama/Meta-Llama-3.1-405B", "gpu": "nvidia-h100-sxm-80gb",
                             "num_gpus": "32", "num_nodes": "2"})
    button = next(b for b in at.button if b.label.startswith("Nodes →"))
    assert button.label == "Nodes → 4", button.label
    button.click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert str(at.query_params["num_nodes"]) == "4"
    assert not any("Cannot provide a placement group" in w.value for w in at.warning), [w.value for w in at.warning]
