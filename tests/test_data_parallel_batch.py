"""A batch under data parallel is spread over the replicas: each replica's budget is judged on its share.

QA: ``python -m planner plan --model meta-llama/Llama-3.1-8B-Instruct --gpu nvidia-h100-sxm-80gb --num-gpus 4
--data-parallel-size 4 --context-len 32768 --batch-size 200`` said "fits no: 200 sequences x 32,768 tokens need
200.00 GiB of KV cache per GPU; the budget is 64.99 GiB" while each of the 4 replicas (own KV cache and scheduler;
vLLM's API server balances requests over them) holds 64 and the launch 256. The expected figures come from
:func:`planner.plan` of one replica, at ``ceil(batch / replicas)`` computed here.
"""

from __future__ import annotations

import json
import math

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.cli import main
from planner.scale.replicas import replica_batch, replicas_verdict
from tests.test_app import run_page
from tests.tiles import metric_tiles

LLAMA, H100, CONTEXT = "meta-llama/Llama-3.1-8B-Instruct", "nvidia-h100-sxm-80gb", 32768
ARGV = ["plan", "--model", LLAMA, "--gpu", H100, "--num-gpus", "4", "--context-len", str(CONTEXT), "--format", "json"]
LINK = {"model": LLAMA, "gpu": H100, "num_gpus": "4", "data_parallel_size": "4", "context_len": str(CONTEXT)}


def _replica(batch: int):
    gpu = get_gpu(H100)
    return plan(model_spec(LLAMA), gpu.framework_memory_bytes,
                PlanRequest(context_len=CONTEXT, batch_size=batch, num_gpus=4), gpu_id=gpu.id)


def _cli(capsys, *extra: str) -> dict:
    assert main([*ARGV, *extra]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("batch", "replicas"), [(200, 4), (201, 4), (1, 4), (7, 3), (8, 1)])
def test_replica_batch_is_the_ceiling_share(batch, replicas):
    assert replica_batch(batch, replicas) == math.ceil(batch / replicas)


def test_cli_judges_each_replica_on_its_share(capsys):
    per_replica = _replica(50).max_concurrent_sequences
    assert 200 > per_replica >= 50  # the whole batch overflows one replica; its share does not
    alone = _cli(capsys, "--batch-size", "200")
    assert alone["fits"] is False  # one replica of 4 GPUs: still judged on the whole batch
    out = _cli(capsys, "--batch-size", "200", "--data-parallel-size", "4")
    assert out["fits"] is True
    dp = out["data_parallel"]
    assert (dp["replicas"], dp["batch_size"], dp["batch_size_per_replica"]) == (4, 200, 50)
    assert dp["max_concurrent_sequences_per_replica"] == per_replica
    assert dp["max_concurrent_sequences_all_replicas"] == 4 * per_replica
    assert "200 sequences over 4 data-parallel replicas" in dp["verdict"] and "\n" not in dp["verdict"]


def test_cli_refuses_a_share_over_one_replica_and_fixes_the_whole_batch(capsys):
    per_replica = _replica(1).max_concurrent_sequences
    batch = 4 * per_replica + 1  # one more than the 4 replicas hold: one replica gets per_replica + 1
    out = _cli(capsys, "--batch-size", str(batch), "--data-parallel-size", "4")
    assert out["fits"] is False and out["data_parallel"]["batch_size_per_replica"] == per_replica + 1
    assert f"lower batch_size to {4 * per_replica:,} " in " ".join(out["suggestions"])
    assert main([*ARGV[:-2], "--batch-size", "200", "--data-parallel-size", "4"]) == 0
    fits_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("fits"))
    assert fits_line.startswith("fits         yes: 200 sequences over 4 data-parallel replicas: up to 50 per replica")


def test_home_says_the_share_and_sets_the_whole_batch(capsys):
    per_replica = _replica(1).max_concurrent_sequences
    fits = run_page("app.py", {**LINK, "batch_size": "200"})
    said = [s.value for s in fits.success]
    assert said and "up to 50 per replica" in said[0] and f"{4 * per_replica:,} in all" in said[0]
    command = next(c.value for c in fits.get("code") if c.value.startswith("python -m planner plan"))
    assert "--data-parallel-size 4" in command
    argv = command.replace("\\\n", " ").split()[3:]  # the copied command plans what Home plans
    assert main([*argv, "--format", "json"]) == 0 and json.loads(capsys.readouterr().out)["fits"] is True
    over = run_page("app.py", {**LINK, "batch_size": str(4 * per_replica + 1)})
    assert any("Does not fit" in w.value for w in over.warning)
    assert f"Batch → {4 * per_replica:,}" in [b.label for b in over.button]


def test_concurrency_names_what_the_links_replicas_hold():
    per_replica = _replica(1).max_concurrent_sequences
    at = run_page("pages/3_Concurrency.py", {**{k: v for k, v in LINK.items() if k != "gpu"}, "gpus": H100})
    tiles = [t for t in metric_tiles(at) if t.value == f"{per_replica:,}"]
    assert tiles and f"{4 * per_replica:,} over 4 data-parallel replicas" in tiles[0].help


def test_the_verdict_counts_sequences_per_replica_not_tokens():
    """QA (stop 47): "each holds 19 of 32,768 tokens, 152 in all" read as 19 tokens; it is 19 sequences."""
    line = replicas_verdict(200, 4, 64, 32_768)
    assert "each holds 64 sequences of 32,768 tokens, 256 in all" in line
    assert "each holds only 1 sequence of 32,768 tokens, 4 in all" in replicas_verdict(200, 4, 1, 32_768)
