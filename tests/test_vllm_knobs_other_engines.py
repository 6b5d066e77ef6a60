"""vLLM-only knobs under another engine on Disaggregation, ``disagg`` / ``deploy``, the Engine page and Find (QA, stop 46).

``plan --engine sglang --enforce-eager`` and ``find`` refuse the flag (tests/test_budget_knobs_engine.py); ``disagg``
and ``deploy`` exited 0 in silence, the Disaggregation page named no knob left out and copied ``--enforce-eager
--warm-compile-cache --usage-context llm`` into its command line, the Engine page showed ``usage_context=llm`` under
SGLang as an active knob, and Find said of ``cudagraph_mode=BOGUS`` under SGLang "set it on the Engine page", though
SGLang takes no such knob (:data:`planner.plan_types.ENGINE_KNOB_FIELDS` are vLLM flags).
"""

from __future__ import annotations

import pytest

from planner.cli import main
from tests.test_app import run_page

BASE = {"model": "meta-llama/Meta-Llama-3-8B", "gpu": "nvidia-h100-sxm-80gb"}
SOURCE = ["--model", BASE["model"], "--gpu", BASE["gpu"], "--engine", "sglang"]
KNOBS = {"enforce_eager": "true", "usage_context": "llm", "warm_compile_cache": "true"}


def _texts(at) -> list[str]:
    return [str(e.value) for kind in ("caption", "markdown", "info", "warning", "error") for e in getattr(at, kind)]


@pytest.mark.parametrize("command", [["disagg", "--users", "4", "--prompt-len", "1000", "--output-len", "100"],
                                     ["deploy", "--target", "commands"]], ids=lambda c: c[0])
@pytest.mark.parametrize("flag", [["--enforce-eager"], ["--usage-context", "llm"], ["--warm-compile-cache"]],
                         ids=lambda f: f[0])
def test_disagg_and_deploy_refuse_a_vllm_flag_under_sglang(command, flag, capsys):
    assert main([*command, *SOURCE, *flag]) == 2
    err = capsys.readouterr().err
    assert flag[0] in err and "sglang does not take" in err, err


def test_disagg_still_takes_the_flag_under_vllm(capsys):
    argv = ["disagg", "--users", "4", "--prompt-len", "1000", "--output-len", "100", "--model", BASE["model"],
            "--gpu", BASE["gpu"], "--enforce-eager"]
    assert main(argv) == 0, capsys.readouterr().err


def test_disaggregation_page_names_the_knobs_left_out_and_keeps_them_off_its_command_line():
    at = run_page("pages/8_Disaggregation.py", {**BASE, "engine": "sglang", **KNOBS})
    assert not at.exception, [e.value for e in at.exception]
    left_out = next((t for t in _texts(at) if t.startswith("Left out")), "")
    for key, value in KNOBS.items():
        assert f"`{key}={value}`" in left_out, left_out
    cli = next(c.value for c in at.code if c.value.startswith("python -m planner disagg"))
    for flag in ("--enforce-eager", "--warm-compile-cache", "--usage-context"):
        assert flag not in cli, cli


def test_disaggregation_page_under_vllm_keeps_them():
    at = run_page("pages/8_Disaggregation.py", {**BASE, **KNOBS})
    assert not at.exception
    cli = next(c.value for c in at.code if c.value.startswith("python -m planner disagg"))
    assert "--enforce-eager" in cli and "--usage-context llm" in cli
    assert not any(t.startswith("Left out") and "enforce_eager" in t for t in _texts(at))


def test_engine_page_says_sglang_ignores_a_linked_vllm_knob():
    at = run_page("pages/5_Engine.py", {**BASE, "engine": "sglang", "usage_context": "llm"})
    assert not at.exception
    assert any("`usage_context=llm`" in t and "ignore" in t and "sglang" in t for t in _texts(at)), _texts(at)
    plain = run_page("pages/5_Engine.py", {**BASE, "usage_context": "llm"})
    assert not any("`usage_context=llm`" in t and "ignore" in t for t in _texts(plain))


def test_find_says_a_bad_graph_knob_is_ignored_under_sglang():
    at = run_page("pages/7_Find_a_GPU_setup.py", {**BASE, "engine": "sglang", "cudagraph_mode": "BOGUS"})
    assert not at.exception
    said = [t for t in _texts(at) if "cudagraph_mode=BOGUS" in t]
    assert said and not any("set it on the Engine page" in t for t in said), said
    assert any("sglang" in t and "ignore" in t for t in said), said
    vllm = run_page("pages/7_Find_a_GPU_setup.py", {**BASE, "cudagraph_mode": "BOGUS"})
    assert any("cudagraph_mode=BOGUS" in t and "set it on the Engine page" in t for t in _texts(vllm))
