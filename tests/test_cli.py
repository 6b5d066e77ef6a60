"""The CLI contract: subcommands, flags, JSON keys, one-line errors with exit code 2."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]
REQUIRED_KEYS = {
    "model_id", "gpu_id", "num_gpus", "params", "weights_bytes", "kv_cache_bytes_per_token",
    "kv_cache_bytes_per_sequence", "kv_cache_bytes_total", "gpu_memory_bytes", "kv_cache_budget_bytes",
    "kv_cache_capacity_tokens", "max_concurrent_sequences", "max_context_len", "fits", "reasons",
}


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_plan_json_matches_planner(capsys):
    argv = ["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--context-len",
            "8192", "--batch-size", "4", "--kv-cache-dtype", "fp8", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert REQUIRED_KEYS <= set(out)
    expected = plan(model_spec("meta-llama/Meta-Llama-3-8B"), get_gpu("nvidia-h100-sxm-80gb").framework_memory_bytes,
                    PlanRequest(context_len=8192, batch_size=4, kv_cache_dtype="fp8"), gpu_id="nvidia-h100-sxm-80gb")
    assert out == json.loads(json.dumps(expected.to_dict()))
    assert out["kv_cache_bytes_per_token"] == 65_536


def test_plan_table_and_list_commands(capsys):
    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4"]) == 0
    assert "max users" in capsys.readouterr().out
    assert main(["models", "--format", "json"]) == 0
    ids = [row["model_id"] for row in json.loads(capsys.readouterr().out)]
    assert "meta-llama/Meta-Llama-3-8B" in ids and len(ids) >= 45
    assert main(["gpus", "--format", "json"]) == 0
    gpus = [row["gpu_id"] for row in json.loads(capsys.readouterr().out)]
    assert "nvidia-rtx-3090" in gpus and len(gpus) >= 30


@pytest.mark.parametrize(("args", "fragment"), [
    (["plan", "--model", "nope/nope", "--gpu", "nvidia-t4"], "unknown model id 'nope/nope'"),
    (["plan", "--model", "gpt2", "--gpu", "h1000"], "unknown GPU id 'h1000'"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--context-len", "0"], "must be at least 1"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--context-len", "abc"], "expected a whole number"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--gpu-memory-utilization", "1.5"], "must be in (0, 1]"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--weight-dtype", "int3"], "invalid choice"),
    (["plan", "--gpu", "nvidia-t4"], "required"),
])
def test_bad_arguments_one_line_exit_2(args, fragment):
    proc = run_cli(*args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert fragment in lines[0]
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("flag", ["--overhead-gib", "--available-kv-memory-gib"])
def test_huge_gib_amounts_are_a_one_line_error(flag, capsys):
    args = ["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb", flag, "1e308"]
    if flag == "--available-kv-memory-gib":
        args += ["--engine", "vllm"]
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    assert "must be at most 1,048,576 GiB" in capsys.readouterr().err


def test_table_says_none_instead_of_a_negative_kv_budget(capsys):
    assert main(["plan", "--model", "meta-llama/Meta-Llama-3.1-405B", "--gpu", "nvidia-t4"]) == 0
    out = capsys.readouterr().out
    budget_line = next(line for line in out.splitlines() if line.startswith("KV budget"))
    assert "none: weights + overhead exceed the usable" in budget_line and "-" not in budget_line
