"""The CLI contract: subcommands, flags, JSON keys, one-line errors with exit code 2."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from model_catalog import get_gpu, model_spec
from model_catalog.custom import MAX_GPU_MEMORY_BYTES
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.cli.args import MAX_CUSTOM_GPU_GIB
from planner.units import GiB

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
    assert out.pop("catalog_id") == "meta-llama/Meta-Llama-3-8B"  # beside model_id: the entry it resolved to
    assert out == json.loads(json.dumps(expected.to_dict()))
    assert out["kv_cache_bytes_per_token"] == 65_536


INSTRUCT = "meta-llama/Llama-3.1-8B-Instruct"
"""A catalog alias of the ``meta-llama/Meta-Llama-3.1-8B`` entry (same architecture, another repo)."""

LAUNCHERS = {"vllm": "vllm serve {id} ", "sglang": "--model-path {id} ", "trtllm": "trtllm-serve {id} ",
             "tgi": "--model-id {id} ", "transformers": "from_pretrained('{id}'",
             "llama.cpp": "-m Llama-3.1-8B-Instruct.gguf "}
"""Where each engine family's launch command names the model (planner/engines/launch.py)."""


@pytest.mark.parametrize("engine", sorted(LAUNCHERS))
def test_alias_keeps_the_users_id_with_the_entrys_numbers(capsys, engine):
    base = ["--gpu", "nvidia-h100-sxm-80gb", "--engine", engine, "--format", "json"]
    assert main(["plan", "--model", INSTRUCT, *base]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["plan", "--model", "meta-llama/Meta-Llama-3.1-8B", *base]) == 0
    canonical = json.loads(capsys.readouterr().out)
    assert out["model_id"] == INSTRUCT and out["catalog_id"] == "meta-llama/Meta-Llama-3.1-8B"
    assert list(out)[:2] == ["model_id", "catalog_id"]
    assert canonical["model_id"] == canonical["catalog_id"] == "meta-llama/Meta-Llama-3.1-8B"
    assert LAUNCHERS[engine].format(id=INSTRUCT) in out["launch_command"]
    assert "Meta-Llama" not in out["launch_command"]
    assert out["engine_plan"]["model_id"] == INSTRUCT
    # the same numbers: only the ids (and the commands that carry them) differ
    text = json.dumps(out).replace(INSTRUCT, "ID").replace("Llama-3.1-8B-Instruct", "NAME")
    same = json.dumps(canonical).replace("meta-llama/Meta-Llama-3.1-8B", "ID").replace("Meta-Llama-3.1-8B", "NAME")
    assert json.loads(text) | {"catalog_id": None} == json.loads(same) | {"catalog_id": None}


def test_alias_typed_in_other_case_keeps_the_hub_spelling(capsys):
    assert main(["plan", "--model", "META-LLAMA/llama-3.1-8b-INSTRUCT", "--gpu", "nvidia-h100-sxm-80gb",
                 "--engine", "vllm", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model_id"] == INSTRUCT  # the catalog's (the Hub's) spelling, not the typed one
    assert out["launch_command"].startswith(f"vllm serve {INSTRUCT} ")
    assert main(["plan", "--model", INSTRUCT, "--gpu", "nvidia-h100-sxm-80gb"]) == 0
    assert f"model        {INSTRUCT} (" in capsys.readouterr().out


def test_custom_config_has_no_catalog_id(capsys, tmp_path):
    from model_catalog import get_model_entry

    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(get_model_entry(INSTRUCT).config)))
    assert main(["plan", "--config", str(path), "--gpu", "nvidia-h100-sxm-80gb", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["catalog_id"] is None


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
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--context-len", "99999999999"],
     "argument --context-len: must be at most 16,777,216 tokens, got 99,999,999,999"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--engine", "vllm", "--max-model-len", "16777217"],
     "argument --max-model-len: must be at most 16,777,216 tokens"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--gpu-memory-utilization", "1.5"], "must be in (0, 1]"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--weight-dtype", "int3"], "invalid choice"),
    (["plan", "--gpu", "nvidia-t4"], "required"),
    # a GPU not in the catalog: exactly one of --gpu and --gpu-memory-gib, with sane bounds
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--gpu-memory-gib", "24"], "not allowed with argument --gpu"),
    (["plan", "--model", "gpt2"], "one of the arguments --gpu --gpu-memory-gib is required"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "0"], "--gpu-memory-gib: must be > 0, got 0"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "-24"], "--gpu-memory-gib: must be > 0"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "1e-6"], "must be at least 0.001 GiB"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "1e6"], "must be at most 65,536 GiB (64 TiB)"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "inf"], "expected a finite number"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "24GB"], "expected a number, got '24GB'"),
    (["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--gpu-name", "My card"], "--gpu-name describes a"),
    (["plan", "--model", "gpt2", "--gpu-memory-gib", "24", "--gpu-name", "x" * 101], "at most 100 characters"),
    (["allocation", "--model", "gpt2", "--mean-len", "100"], "one of the arguments --gpu --gpu-memory-gib"),
    (["allocation", "--model", "gpt2", "--mean-len", "100", "--gpu", "nvidia-t4", "--gpu-memory-gib", "16"],
     "not allowed with argument --gpu"),
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


# --- a GPU that is not in the catalog ------------------------------------------------------

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def plan_json(capsys, *args: str) -> dict:
    assert main(["plan", "--model", LLAMA3, "--context-len", "8192", "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_custom_gpu_plans_like_the_planner_with_that_framework_memory(capsys):
    out = plan_json(capsys, "--gpu-memory-gib", "24", "--gpu-name", "My card")
    expected = plan(model_spec(LLAMA3), 24 * GiB, PlanRequest(context_len=8192), gpu_id="custom")
    assert out.pop("catalog_id") == LLAMA3
    assert out == json.loads(json.dumps(expected.to_dict()))
    assert out["gpu_id"] == "custom" and out["gpu_memory_bytes"] == 24 * GiB  # the GiB are framework-visible


@pytest.mark.parametrize("engine", [[], ["--engine", "vllm"]])
def test_custom_gpu_equals_a_catalog_gpu_of_the_same_memory(capsys, engine):
    # The M3 Max entry's framework memory is exactly 96 GiB (Metal's working set, measured).
    assert get_gpu("apple-m3-max-128gb").framework_memory_bytes == 96 * GiB
    catalog = plan_json(capsys, "--gpu", "apple-m3-max-128gb", *engine)
    custom = plan_json(capsys, "--gpu-memory-gib", "96", "--gpu-name", "My card", *engine)
    assert custom.pop("gpu_id") == "custom" and catalog.pop("gpu_id") == "apple-m3-max-128gb"
    assert custom == catalog


def test_custom_gpu_table_names_the_card(capsys):
    assert main(["plan", "--model", LLAMA3, "--gpu-memory-gib", "23.5", "--gpu-name", "My card"]) == 0
    gpu_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("gpu "))
    assert "custom (My card) x 1: 23.50 GiB framework-visible each" in gpu_line


def test_custom_gpu_limit_is_the_apps():
    assert MAX_CUSTOM_GPU_GIB * GiB == MAX_GPU_MEMORY_BYTES


# --- a reader that closes the pipe (`python -m planner models | head`) ---------------------

PIPE_BUFFER_BYTES = 64 * 1024  # Linux pipe capacity (pipe(7)); the output must not fit in it
BIG_OUTPUT = ["find", "--model", LLAMA3, "--users", "10", "--prompt-len", "1000", "--output-len", "200",
              "--top", "200", "--format", "json"]


def run_into_closed_pipe(args: list[str], read_first: int) -> subprocess.CompletedProcess:
    """Run the CLI with stdout on a pipe whose only reader reads ``read_first`` bytes, then closes it."""
    read_end, write_end = os.pipe()
    proc = subprocess.Popen([sys.executable, "-m", "planner", *args], cwd=ROOT, stdout=write_end,
                            stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        if read_first:
            os.read(read_end, read_first)
    finally:
        os.close(read_end)
    _, err = proc.communicate(timeout=120)
    return subprocess.CompletedProcess(proc.args, proc.returncode, b"", err)


def test_big_output_is_larger_than_a_pipe_buffer():
    assert len(run_cli(*BIG_OUTPUT).stdout.encode()) > 2 * PIPE_BUFFER_BYTES


@pytest.mark.parametrize("read_first", [0, 4096], ids=["closed-at-once", "head-like"])
@pytest.mark.parametrize("args", [["models"], ["gpus", "--format", "json"], ["models", "--format", "json"],
                                  BIG_OUTPUT, ["plan", "--help"]], ids=lambda a: " ".join(a[:3]))
def test_closed_stdout_is_quiet(args, read_first):
    proc = run_into_closed_pipe(args, read_first)
    stderr = proc.stderr.decode()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr


def test_pipeline_stages_do_not_get_a_num_gpus_suggestion_they_already_have(capsys):
    # --num-gpus 16 --pipeline-parallel-size 16: the plain plan sizes one tensor-parallel group (1 GPU) and
    # does not fit, but "use num_gpus 16" would name the GPUs the replica already has.
    out = plan_json(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h100-sxm-80gb", "--num-gpus", "16",
                    "--pipeline-parallel-size", "16", "--engine", "vllm")
    assert out["num_gpus"] == 16
    assert not any("use num_gpus" in s and int(s.split("use num_gpus ")[1].split()[0]) <= 16
                   for s in out["suggestions"])
    assert any("pipeline_parallel_size 16" in note for note in out["notes"])


def test_verify_names_an_unknown_model_like_plan_does(capsys):
    """QA: ``verify --model foo/bar`` ended in a Python traceback with a server path; it is a usage error
    (exit 2, one line), found before torch is loaded."""
    assert main(["verify", "--model", "foo/bar"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: unknown model id 'foo/bar'") and "Traceback" not in err and "/" not in err.split("'")[-1]


def test_an_unknown_flag_is_named_by_its_subcommand_with_the_closest_flag(capsys):
    """QA round: ``plan ... --contxt-len 4096`` pointed to ``python -m planner --help`` with no hint."""
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--model", LLAMA3, "--gpu", "nvidia-h100-sxm-80gb", "--contxt-len", "4096"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --contxt-len 4096; did you mean --context-len?" in err
    assert "see `python -m planner plan --help`" in err
    with pytest.raises(SystemExit):
        main(["find", "--model", LLAMA3, "--users", "3", "--prompt-len", "5", "--output-len", "3", "--bogus"])
    err = capsys.readouterr().err
    assert "--bogus (see `python -m planner find --help`)" in err  # nothing close: no guess
