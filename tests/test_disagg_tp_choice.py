"""QA round (disagg-tp): with no tensor-parallel size given, each disaggregated pool gets the size that needs the fewest
GPUs for the users among those that start and meet its target (ties: the smaller), not merely the smallest that starts;
the decode launch's ``--max-num-seqs`` / ``--max-running-requests`` is what a replica holds."""

from __future__ import annotations

import json
import shlex

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines.types import EngineRequest
from planner.scale.disagg import PoolRequest, plan_disagg, starting_tensor_parallel
from planner.scale.layout import ScaleRequest

LLAMA70 = ["--model", "meta-llama/Llama-3.3-70B-Instruct", "--gpu", "nvidia-h100-sxm-80gb", "--users", "128",
           "--prompt-len", "8000", "--output-len", "500"]


def _disagg(capsys, *flags) -> dict:
    assert main(["disagg", *flags, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _flag(command: str, flag: str) -> int:
    words = shlex.split(command, comments=True)
    return int(words[words.index(flag) + 1])


def test_llama70b_decode_pool_takes_the_size_with_the_fewest_gpus(capsys):
    """The QA case: decode at tp 2 (the smallest that starts) held one user per replica (2 GiB of KV per GPU), 256
    GPUs for 128 users. Each pool's size is the one whose own explicit launch needs the fewest GPUs."""
    auto = _disagg(capsys, *LLAMA70)
    by_tp = {tp: _disagg(capsys, *LLAMA70, "--prefill-tensor-parallel-size", str(tp), "--decode-tensor-parallel-size",
                         str(tp)) for tp in (2, 4, 8)}
    for role in ("prefill", "decode"):
        fewest = min((d[role]["gpus"], tp) for tp, d in by_tp.items() if d[role]["starts"] and d[role]["replicas"])
        assert (auto[role]["gpus"], auto[role]["tensor_parallel_size"]) == fewest, role
    assert auto["decode"]["tensor_parallel_size"] > 2 and auto["gpus"] < by_tp[2]["gpus"]
    assert auto["fits"] and auto["tensor_parallel_fixes"] == {}
    assert any(n.startswith("decode: tensor parallel") and "fewest GPUs" in n for n in auto["notes"])


def test_a_given_tensor_parallel_size_is_kept(capsys):
    out = _disagg(capsys, *LLAMA70, "--tensor-parallel-size", "2")
    assert out["prefill"]["tensor_parallel_size"] == out["decode"]["tensor_parallel_size"] == 2


@pytest.mark.parametrize("engine, flag", [("vllm", "--max-num-seqs"), ("sglang", "--max-running-requests")])
def test_decode_launch_caps_its_sequences_at_what_a_replica_holds(capsys, engine, flag):
    """The decode launch said ``--max-num-seqs 1024`` for a replica holding one user: its cap is now the replica's
    concurrency (vLLM: per data-parallel rank; SGLang's flag counts every rank), never above the engine default."""
    checked = 0
    for tp in ("2", "4", "8"):
        out = _disagg(capsys, *LLAMA70, "--engine", engine, "--tensor-parallel-size", tp)
        decode = out["decode"]
        if not decode["starts"]:
            continue
        checked += 1
        per_rank = decode["max_concurrency"] // decode["data_parallel_size"]
        written = _flag(decode["launch_command"], flag)
        assert written == (per_rank if engine == "vllm" else decode["max_concurrency"]), (tp, decode["launch_command"])
        assert all(_flag(c, flag) == written for c in decode["launch_commands"])
    assert checked >= 2


CASES = [("meta-llama/Llama-3.3-70B-Instruct", "nvidia-h100-sxm-80gb", 128, 8000, 500),
         ("meta-llama/Llama-3.3-70B-Instruct", "nvidia-h100-sxm-80gb", 8, 2000, 200),
         ("Qwen/Qwen3-235B-A22B", "nvidia-h200-sxm", 256, 4096, 512),
         ("Qwen/Qwen3-30B-A3B", "nvidia-h100-sxm-80gb", 512, 2000, 500),
         ("meta-llama/Llama-3.1-8B-Instruct", "nvidia-l40s", 64, 4000, 400)]


@pytest.mark.parametrize("model_id, gpu_id, users, prompt, output", CASES)
def test_the_chosen_layout_needs_no_more_gpus_than_the_smallest_that_starts(model_id, gpu_id, users, prompt, output):
    """Over a few catalog models: the chosen layout's GPUs are at most the smallest-TP layout's, and it fits."""
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    figures = dict(gpu_memory_bytes=gpu.framework_memory_bytes, bandwidth_gb_s=gpu.bandwidth_gb_s,
                   bf16_dense_tflops=gpu.bf16_dense_tflops, users=users, prompt_len=prompt, output_len=output)
    engine = EngineRequest(gpu_name=gpu.name)
    smallest = starting_tensor_parallel(model, gpu.framework_memory_bytes,
                                        EngineRequest(gpu_name=gpu.name, tensor_parallel_size=0,
                                                      max_model_len=prompt + output), ScaleRequest())
    fixed = PoolRequest(engine=EngineRequest(gpu_name=gpu.name, tensor_parallel_size=smallest), scale=ScaleRequest())
    auto = PoolRequest(engine=engine, scale=ScaleRequest(), auto_tensor_parallel=True)
    chosen = plan_disagg(model, prefill=auto, decode=auto, **figures)
    base = plan_disagg(model, prefill=fixed, decode=fixed, **figures)
    assert chosen.starts and chosen.decode.replicas >= 1
    total = chosen.prefill.gpus + chosen.decode.gpus
    assert total <= base.prefill.gpus + base.decode.gpus
    assert chosen.decode.plan.layout.tensor_parallel_size >= smallest


def test_find_sglang_disaggregated_row_has_both_pools_and_the_decode_cap():
    """Find's SGLang disaggregated row: each role's commands, and the decode role's ``--max-running-requests`` is what
    one decode replica holds (it said SGLang's default, 4,096, against 256 users)."""
    from model_catalog import served_model_spec
    from model_catalog.gpus import load_gpus
    from planner.traffic.find_types import FindRequest
    from planner.traffic.reverse import find_setups

    request = FindRequest(users=256, prompt_len=2000, output_len=500, engine="sglang", top=5,
                          gpu_ids=("nvidia-h100-sxm-80gb",), kv_cache_dtypes=("auto",), setup_kinds=("disaggregated",))
    found = find_setups(served_model_spec("Qwen/Qwen3-30B-A3B"), list(load_gpus().values()), request)
    assert found.options
    for row in found.options:
        heads = [c.split(":")[0] for c in row.deploy_commands if c.startswith("#")]
        assert heads == ["# prefill", "# decode"]
        decode = row.deploy_commands[row.deploy_commands.index(next(c for c in row.deploy_commands
                                                                    if c.startswith("# decode"))) + 1]
        assert _flag(decode, "--max-running-requests") == row.decode["max_concurrency"] == _flag(
            row.launch_command, "--max-running-requests")
        assert row.decode["max_concurrency"] * row.decode["replicas"] >= 256
