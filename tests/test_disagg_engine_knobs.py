"""The Disaggregation page reads the engine knobs a shared link carries, or names the ones it leaves out.

QA (D3): ``/Disaggregation?model=Qwen/Qwen3-8B&gpu=nvidia-h100-sxm-80gb&gpu_memory_utilization=0.5`` showed
"usable 71.27 GiB" (0.9 of the card), 6 GPUs and ``--gpu-memory-utilization 0.9`` in both launch commands,
while ``python -m planner disagg ... --gpu-memory-utilization 0.5`` sizes other pools. The page now reads the
shared ``gpu_memory_utilization`` input (Home's, Allocation's and Find's key), passes it to the planner, and shows
the ``python -m planner disagg`` line of its inputs; every figure here is compared with what that line prints
(the planner's own output, never re-derived).
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from streamlit.testing.v1 import AppTest

from planner.cli import main
from ui.engine import ENGINE_NUMBERS

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "8_Disaggregation.py")
BASE = {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-h100-sxm-80gb"}
DISAGG = ["disagg", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--users", "256",
          "--prompt-len", "4096", "--output-len", "512"]


def _run(params: dict) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def _cli(capsys, argv: list[str]) -> dict:
    assert main([*argv, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _launches(at: AppTest) -> list[str]:
    return [c.value for c in at.code if c.value.startswith("vllm serve") or c.value.startswith("python -m sglang")]


def _cli_line(at: AppTest) -> str:
    lines = [c.value for c in at.code if c.value.startswith("python -m planner disagg")]
    assert len(lines) == 1, [c.value[:60] for c in at.code]
    return lines[0]


def _argv(line: str) -> list[str]:
    """The page's CLI line as ``main``'s arguments (``python -m planner`` dropped)."""
    return shlex.split(line.replace("\\\n", " "))[3:]


def _headline(at: AppTest) -> str:
    assert at.success, [w.value for w in at.warning]
    return at.success[0].value


def _left_out(at: AppTest) -> str:
    lines = [c.value for c in at.caption if "Left out:" in c.value]
    return lines[0] if lines else ""


def test_the_links_utilization_sizes_the_pools_as_the_cli_does(capsys):
    half = _cli(capsys, [*DISAGG, "--gpu-memory-utilization", "0.5"])
    default = _cli(capsys, [*DISAGG, "--gpu-memory-utilization", "0.9"])
    assert half["gpus"] != default["gpus"]  # the bug's signature: the page showed the 0.9 pools
    at = _run({**BASE, "gpu_memory_utilization": "0.5"})
    assert _headline(at).startswith(f"{half['gpus']} GPUs for 256 users: prefill {half['prefill']['gpus']} + "
                                    f"decode {half['decode']['gpus']}")
    launches = _launches(at)
    assert len(launches) == 2 and all("--gpu-memory-utilization 0.5" in c for c in launches), launches
    assert "--gpu-memory-utilization 0.5" in _cli_line(at)


def test_the_cli_line_gives_the_pages_figures(capsys):
    at = _run({**BASE, "gpu_memory_utilization": "0.85", "kv_cache_dtype": "fp8", "block_size": "32",
               "max_num_seqs": "128", "enforce_eager": "true"})
    out = _cli(capsys, _argv(_cli_line(at)))
    assert _headline(at).startswith(f"{out['gpus']} GPUs for 256 users: prefill {out['prefill']['gpus']} + "
                                    f"decode {out['decode']['gpus']}")
    for flag in ("--gpu-memory-utilization 0.85", "--kv-cache-dtype fp8", "--block-size 32", "--enforce-eager"):
        assert all(flag in c for c in _launches(at)), flag


def test_a_link_without_engine_knobs_keeps_the_engines_defaults(capsys):
    at = _run(BASE)
    line = _cli_line(at)
    assert "--gpu-memory-utilization" not in line and "--block-size" not in line
    out = _cli(capsys, _argv(line))
    assert _headline(at).startswith(f"{out['gpus']} GPUs for 256 users")
    assert not _left_out(at)


CARRIED = {
    # the shared sidebar (Home, Concurrency, Allocation, Find)
    "weight_dtype": "fp8", "kv_cache_dtype": "fp8", "gpu_memory_utilization": "0.85", "block_size": "32",
    "overhead_gib": "1.5", "context_len": "4608", "batch_size": "256",
    # the Engine page's knobs (ui.engine.ENGINE_NUMBERS, its switches and start mode, ui.engine_graphs)
    "pipeline_parallel_size": "2", "data_parallel_size": "2", "num_nodes": "2", "max_model_len": "8192",
    "max_num_seqs": "128", "max_num_batched_tokens": "4096", "available_kv_memory_gib": "40",
    "gpu_memory_in_use_gib": "1", "usage_context": "llm", "enforce_eager": "true", "warm_compile_cache": "true",
    "use_deep_gemm": "true", "enable_prefix_caching": "true", "cudagraph_mode": "PIECEWISE",
    "optimization_level": "2",
}
"""A link with every engine knob another page reads set to a value other than its default."""

NOT_FLAGS = {"context_len", "batch_size"}
"""Keys that are Home's budget or load inputs, not engine flags (this page reads context_len / batch_size as its
lengths and users, as tests/test_scale_pages.py checks)."""


def test_every_carried_engine_knob_is_applied_or_named(capsys):
    assert set(ENGINE_NUMBERS) <= set(CARRIED)  # the Engine page's numbers, all carried here
    at = _run({**BASE, **CARRIED})
    line, left_out = _cli_line(at), _left_out(at)
    for key, value in CARRIED.items():
        flag = "--" + key.replace("_", "-")
        applied = flag in line.split()
        named = f"`{key}`" in left_out or f"`{key}={value}`" in left_out
        if key in NOT_FLAGS:
            continue
        assert applied != named, (key, applied, named, left_out)
    for key in ("gpu_memory_utilization", "block_size", "max_num_seqs", "enforce_eager", "kv_cache_dtype"):
        assert "--" + key.replace("_", "-") in line.split(), key
    out = _cli(capsys, _argv(line))
    assert _headline(at).startswith(f"{out['gpus']} GPUs for 256 users: prefill {out['prefill']['gpus']} + "
                                    f"decode {out['decode']['gpus']}")


@pytest.mark.parametrize("flag", ["--max-model-len", "--context-len"])
def test_cli_disagg_refuses_a_length_flag_it_would_drop(capsys, flag):
    """QA (stop 43): ``disagg --max-model-len 8000`` planned as if the flag were absent: each pool launches with
    prompt + output. It is now refused with the length the pools use; ``deploy`` without --users still reads it."""
    from planner.cli import main

    args = ["--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100", "--users", "64", "--prompt-len", "2000",
            "--output-len", "200"]
    assert main(["disagg", *args, flag, "8000"]) == 2
    err = capsys.readouterr().err
    assert f"{flag} does not apply here" in err
    assert "--max-model-len = --prompt-len + --output-len (2,200 tokens)" in err
    assert main(["deploy", "--target", "commands", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100",
                 "--max-model-len", "8000"]) == 0
    assert "--max-model-len 8000" in capsys.readouterr().out


def test_a_shared_gpu_pool_gets_the_utilization_fix_not_smaller_weights(capsys):
    """QA (stop 43): on an H100 with 20 GiB held by other processes both pools said "use smaller weights than its
    bf16 ... or a GPU with more memory", while vLLM's startup check refuses them whatever the weights and a
    utilization of at most 0.74 starts them. The reason keeps vLLM's fix; no note contradicts it."""
    from planner.cli import main

    args = ["disagg", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--users", "64",
            "--prompt-len", "2000", "--output-len", "200", "--gpu-memory-in-use-gib", "20"]
    main(args)
    out = json.loads(capsys.readouterr().out)
    assert any("Decrease gpu_memory_utilization to at most 0.74" in r for r in out["reasons"])
    assert not any("smaller weights" in n for n in out["notes"]), out["notes"]
    main([*args, "--gpu-memory-utilization", "0.7"])
    assert json.loads(capsys.readouterr().out)["fits"] is True


def test_a_pool_wider_than_a_node_is_refused_as_the_engine_page_refuses_it(capsys):
    """QA (stop 43): ``disagg --tensor-parallel-size 16`` on nodes of 8 sized "64 GPUs for 256 users" with one-node
    commands, where the Engine page refuses a 16-GPU replica on one node. The pools split within a node."""
    from planner.cli import main

    args = ["disagg", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--users", "64",
            "--prompt-len", "2000", "--output-len", "200"]
    assert main([*args, "--tensor-parallel-size", "16"]) == 2
    assert "where a node holds 8" in capsys.readouterr().err
    assert main([*args, "--tensor-parallel-size", "16", "--gpus-per-node", "16"]) == 0
    at = run_page_disagg({"model": "Qwen/Qwen3-8B", "gpu": "nvidia-h100-sxm-80gb", "num_gpus": "16"})
    assert any("where a node holds 8" in e.value for e in at.error)


def run_page_disagg(params):
    from tests.test_app import run_page

    return run_page("pages/8_Disaggregation.py", params)
