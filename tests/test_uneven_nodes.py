"""A replica's GPUs spread evenly over its nodes, or the planner says which node counts do.

QA: ``python -m planner plan --tensor-parallel-size 4 --pipeline-parallel-size 3 --num-nodes 5
--distributed-executor-backend ray --engine vllm`` planned 12 GPUs over 5 nodes and said "starts yes", where vLLM
asserts that its world size is divisible by the node count (vllm/engine/arg_utils.py ``create_engine_config``).
The node counts a message offers are checked here by division, not copied from the code.
"""

from __future__ import annotations

import pytest

from planner.cli import main
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from model_catalog import get_gpu, model_spec
from tests.test_app import run_page

LLAMA, H100 = "meta-llama/Llama-3.1-8B-Instruct", "nvidia-h100-sxm-80gb"
PLAN = ["plan", "--model", LLAMA, "--gpu", H100, "--tensor-parallel-size", "4", "--pipeline-parallel-size", "3",
        "--distributed-executor-backend", "ray", "--engine", "vllm"]


def _counts_named(text: str) -> list[int]:
    """The node counts after "use" in a message: "use 2, 3, 4, 6 or 12 nodes" -> [2, 3, 4, 6, 12]."""
    said = text.split(": use ", 1)[1].split(" nodes", 1)[0]
    return [int(w) for w in said.replace(" or ", ", ").split(", ")]


def test_vllm_refuses_nodes_that_do_not_divide_the_gpus():
    with pytest.raises(ValueError, match="12 GPUs over 5 nodes") as err:
        EngineRequest(engine="vllm", tensor_parallel_size=4, pipeline_parallel_size=3, num_nodes=5,
                      distributed_executor_backend="ray").validate()
    counts = _counts_named(str(err.value))
    assert counts and all(12 % n == 0 and 12 // n <= 8 for n in counts)  # even splits of nodes of 8 GPUs
    assert set(counts) == {n for n in range(1, 13) if 12 % n == 0 and 12 // n <= 8}
    assert "\n" not in str(err.value)


def test_an_even_split_still_plans_and_sglang_keeps_its_refusal():
    gpu = get_gpu(H100)
    even = plan_engine(model_spec(LLAMA), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=4, pipeline_parallel_size=3, num_nodes=3, max_model_len=8192,
        distributed_executor_backend="ray", gpu_name=gpu.name))
    assert even.starts
    sglang = plan_engine(model_spec(LLAMA), gpu.framework_memory_bytes, EngineRequest(
        engine="sglang", tensor_parallel_size=4, pipeline_parallel_size=3, num_nodes=5, max_model_len=8192,
        distributed_executor_backend="ray", gpu_name=gpu.name))
    assert not sglang.starts  # its own assertion, in its plan (planner/engines/sglang_nodes.py)


def test_cli_refuses_uneven_nodes_with_the_counts_that_work(capsys):
    assert main([*PLAN, "--num-nodes", "5"]) == 2
    err = capsys.readouterr().err
    assert "12 GPUs over 5 nodes" in err and err.strip().count("\n") == 0
    assert all(12 % n == 0 for n in _counts_named(err))
    assert main([*PLAN, "--num-nodes", "3", "--format", "json"]) == 0


def test_pages_name_uneven_nodes_from_a_link():
    link = {"model": LLAMA, "gpu": H100, "num_gpus": "12", "pipeline_parallel_size": "3", "num_nodes": "5"}
    home = run_page("app.py", link)
    said = [e.value for e in home.error if "num_nodes=5" in e.value]
    assert said and "12 GPUs over 5 nodes" in said[0] and all(12 % n == 0 for n in _counts_named(said[0]))
    engine = run_page("pages/5_Engine.py", {**link, "engine": "vllm", "tensor_parallel_size": "4"})
    assert any("12 GPUs over 5 nodes" in e.value for e in engine.error)
