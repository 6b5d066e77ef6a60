"""A ``--block-size`` vLLM has no attention kernel for is refused on the CLI and named on the pages (QA, stop 46:
``--block-size 7`` printed "starts yes" with ``--block-size 7`` in the launch, and ``/Engine?block_size=7`` said vLLM
starts). vLLM's CUDA backends take multiples of 16 (planner/engines/block_sizes.py); SGLang's page size is its own."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from planner.cli import main
from planner.engines import EngineRequest, plan_engine

ROOT = Path(__file__).resolve().parents[1]
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
H100 = "nvidia-h100-sxm-80gb"
ACCEPTED = "use 16, 32, 64, 128 or 256 (any multiple of 16)"


def cli(*argv: str) -> tuple[int, str, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("engine", [("--engine", "vllm"), ("--engine", "vllm-v0.11"), ()],
                         ids=["vllm", "vllm-v0.11", "budget-only"])
def test_cli_refuses_a_block_size_vllm_has_no_kernel_for(engine):
    code, out, err = cli("plan", *engine, "--model", LLAMA3, "--gpu", H100, "--block-size", "7")
    assert code == 2 and "starts" not in out
    accepted = "use 16, 32, 64, 128 or 256" if "vllm-v0.11" in engine else ACCEPTED  # that release's choices
    assert "vLLM refuses --block-size 7" in err and accepted in err and len(err.strip().splitlines()) == 1, err
    taken = "64" if "vllm-v0.11" in engine else "48"  # v0.11's --block-size choices lack 48 (test_block_size_versions)
    assert cli("plan", *engine, "--model", LLAMA3, "--gpu", H100, "--block-size", taken)[0] == 0
    code, out, _ = cli("plan", "--engine", "sglang", "--model", LLAMA3, "--gpu", H100, "--block-size", "7")
    assert code == 0 and "--page-size 7" in out  # SGLang's page size is its own


def test_plan_engine_refuses_it_and_a_hybrid_still_runs_vllms_raised_block():
    llama = model_spec(LLAMA3)
    with pytest.raises(ValueError, match="vLLM refuses --block-size 8"):
        plan_engine(llama, 80 << 30, EngineRequest(engine="vllm", max_model_len=8192, block_size=8))
    hybrid = plan_engine(model_spec("Qwen/Qwen3.5-35B-A3B"), 80 << 30,
                         EngineRequest(engine="vllm", max_model_len=8192, block_size=16, gpu_name="H100"))
    assert hybrid.block_size == 1056 and hybrid.starts


def _run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _errors(at: AppTest) -> str:
    return " ".join(e.value for e in at.error)


@pytest.mark.parametrize("page", ["pages/5_Engine.py", "app.py"])
def test_a_link_block_size_vllm_refuses_is_a_link_problem(page):
    at = _run(page, {"model": LLAMA3, "block_size": "7"})
    errors = _errors(at)
    assert "block\\_size=7" in errors or "block_size=7" in errors, errors
    assert "vLLM refuses block\\_size 7" in errors or "vLLM refuses block_size 7" in errors, errors
    assert "multiple of 16" in errors and "sidebar" in errors, errors
    assert at.number_input(key="block_size").value in (None, 16)
    if page == "pages/5_Engine.py":  # SGLang's page size is its own
        sglang = _run(page, {"model": LLAMA3, "engine": "sglang", "block_size": "7"})
        assert "multiple of 16" not in _errors(sglang) and sglang.number_input(key="block_size").value == 7


def test_a_typed_block_size_vllm_refuses_is_named_on_home():
    at = _run("app.py", {"model": LLAMA3})
    at.number_input(key="block_size").set_value(7).run()
    assert not at.exception
    errors = _errors(at)
    assert "vLLM refuses block" in errors and "Planning the default 16 instead" in errors, errors
