"""Max users past the model's limit are 0, in the table and the JSON (QA, stop 47).

``plan --model openai/gpt-oss-20b --context-len 200000`` said "fits no" (200,000 tokens is past the model's 131,072)
and printed "max users 11 at 200,000 tokens": a count of requests the model cannot take. ``max_concurrent_sequences``
is now 0 there; ``max_concurrent_sequences_by_memory`` keeps what the KV cache would hold, and the table says why.
"""

import json

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.cli import main

GPT_OSS = "openai/gpt-oss-20b"
H100 = "nvidia-h100-sxm"


def _plan(context_len: int):
    gpu = get_gpu(H100)
    return plan(model_spec(GPT_OSS), gpu.framework_memory_bytes, PlanRequest(context_len=context_len), gpu_id=gpu.id)


def test_past_the_model_limit_no_user_is_counted():
    limit = model_spec(GPT_OSS).max_position_embeddings
    past = _plan(limit + 1)
    assert not past.fits
    assert past.max_concurrent_sequences == 0
    assert past.max_concurrent_sequences_by_memory > 0  # the memory figure stays: what the cache would hold
    assert _plan(limit).max_concurrent_sequences > 0


def test_the_table_and_the_json_agree(capsys):
    argv = ["plan", "--model", GPT_OSS, "--gpu", H100, "--context-len", "200000"]
    assert main([*argv, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["fits"] is False and data["max_concurrent_sequences"] == 0
    assert main(argv) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("max users"))
    assert line.split()[2] == "0" and "past the model's" in line and "max_num_seqs" not in line
