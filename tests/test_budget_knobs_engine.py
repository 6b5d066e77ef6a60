"""vLLM-only knobs in a link or on the command line do not move the budget of a plan for another engine.

QA: a link with ``engine=sglang`` (or ``llama.cpp``) and ``enforce_eager=true``, ``usage_context=llm``,
``warm_compile_cache=true`` or ``cudagraph_mode=NONE`` changed Home's "KV budget per GPU" and users with no word,
while the chosen engine has no such flag (:data:`planner.plan_types.ENGINE_KNOB_FIELDS` are vLLM flags). The page
now plans without them and names them in its left-out line; ``plan --engine sglang --enforce-eager`` is refused as
``--cudagraph-mode`` already was. ``max_num_seqs`` stays: every engine takes it under its own flag (SGLang's
``--max-running-requests``, llama.cpp's ``-np``).
"""

from __future__ import annotations

import pytest

from planner.cli import main
from tests.test_app import run_page
from tests.tiles import metric_tiles

BASE = {"model": "meta-llama/Meta-Llama-3-8B", "gpu": "nvidia-h100-sxm-80gb"}
VLLM_ONLY = [{"enforce_eager": "true"}, {"usage_context": "llm"}, {"warm_compile_cache": "true"},
             {"cudagraph_mode": "NONE"}]


def _budget(params: dict) -> tuple[dict[str, str], list[str]]:
    at = run_page("app.py", params)
    assert not at.exception, [e.value for e in at.exception]
    tiles = {t.label: t.value for t in metric_tiles(at)}
    return {k: tiles[k] for k in ("KV budget per GPU", "Max concurrent sequences")}, [c.value for c in at.caption]


@pytest.mark.parametrize("engine", ["sglang", "llama.cpp"])
@pytest.mark.parametrize("knob", VLLM_ONLY, ids=lambda k: next(iter(k)))
def test_a_vllm_knob_does_not_move_another_engines_budget_and_is_named(engine, knob):
    plain, _ = _budget({**BASE, "engine": engine})
    with_knob, captions = _budget({**BASE, "engine": engine, **knob})
    assert with_knob == plain
    key, value = next(iter(knob.items()))
    assert any(f"`{key}={value}`" in c and engine in c for c in captions), captions


@pytest.mark.parametrize("knob", VLLM_ONLY, ids=lambda k: next(iter(k)))
def test_under_vllm_the_knob_still_counts(knob):
    assert _budget({**BASE, **knob})[0]["KV budget per GPU"] != _budget(BASE)[0]["KV budget per GPU"]


@pytest.mark.parametrize("flag", [["--enforce-eager"], ["--usage-context", "llm"], ["--warm-compile-cache"]])
def test_cli_refuses_a_vllm_flag_for_another_engine(flag, capsys):
    argv = ["plan", "--model", BASE["model"], "--gpu", BASE["gpu"], "--engine", "sglang", *flag, "--format", "json"]
    assert main(argv) != 0
    err = capsys.readouterr().err
    assert flag[0] in err and "sglang does not take" in err, err


def test_cli_takes_max_num_seqs_for_sglang(capsys):
    argv = ["plan", "--model", BASE["model"], "--gpu", BASE["gpu"], "--engine", "sglang", "--max-num-seqs", "64",
            "--format", "json"]
    assert main(argv) == 0
    assert "--max-running-requests 64" in capsys.readouterr().out
