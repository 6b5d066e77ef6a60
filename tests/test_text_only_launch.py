"""A text-only plan's launch commands leave the tower unloaded, as the plan does (QA leftover of stop 37).

The plan of ``--language-model-only`` (or the page's text-only switch) prices the model without its vision tower
and without vLLM's encoder profile. A ``vllm serve`` command written without the flag would load the tower and
profile its encoder (vllm/v1/worker/gpu_model_runner.py ``profile_run``), so the copied command would start with
a smaller KV cache than the plan says: Qwen3-VL-8B on an L40S, 23.36 GiB planned against 21.02 GiB served.
vLLM reads every modality limited to 0 as language-model-only (vLLM PR 22299, v0.10.1); the 2026 releases also
take ``--language-model-only`` (the vLLM docs' multimodal page). Expected commands are the planner's own output.
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.engines.launch import LaunchSpec, launch_command

VL = "Qwen/Qwen3-VL-8B-Instruct"
L40S = "nvidia-l40s"
ZERO_LIMITS = "--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'"


def _plan(capsys, *argv: str) -> dict:
    assert main(["plan", "--model", VL, "--gpu", L40S, "--format", "json", *argv]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("engine", "flag"), [("vllm", "--language-model-only"),
                                              ("vllm-v0.28", "--language-model-only"),
                                              ("vllm-v0.11", ZERO_LIMITS), ("vllm-v0.10", ZERO_LIMITS)])
def test_plan_launch_command_carries_the_text_only_flag(capsys, engine, flag):
    text = _plan(capsys, "--engine", engine, "--language-model-only")
    full = _plan(capsys, "--engine", engine)
    assert text["launch_command"].count(flag) == 1, text["launch_command"]
    assert "--language-model-only" not in full["launch_command"]
    assert "--limit-mm-per-prompt" not in full["launch_command"]
    # the flag is what makes the command's figure the plan's: the tower's weights are out of the text plan
    assert text["weights_bytes"] < full["weights_bytes"]
    assert text["available_kv_cache_bytes"] > full["available_kv_cache_bytes"]


def test_zero_limits_flag_is_read_as_text_only_and_written_once(capsys):
    zero = _plan(capsys, "--engine", "vllm", "--limit-mm-per-prompt", '{"image": 0, "video": 0}')
    assert zero["launch_command"].count("--language-model-only") == 1
    assert "--limit-mm-per-prompt" not in zero["launch_command"]


def test_text_model_commands_have_no_text_only_flag(capsys):
    assert main(["plan", "--model", "Qwen/Qwen3-8B", "--gpu", L40S, "--engine", "vllm", "--format", "json"]) == 0
    command = json.loads(capsys.readouterr().out)["launch_command"]
    assert "--language-model-only" not in command and "--limit-mm-per-prompt" not in command


def test_launch_spec_writes_the_flag_for_vllm_only():
    common = {"model_id": VL, "max_model_len": 4096, "language_model_only": True}
    assert launch_command(LaunchSpec(engine="vllm", family="vllm", **common)).endswith("--language-model-only")
    sglang = launch_command(LaunchSpec(engine="sglang", family="sglang", **common))
    assert "language-model-only" not in sglang and "limit-mm" not in sglang  # SGLang has no such flag


def test_find_commands_carry_the_flag(capsys):
    argv = ["find", "--model", VL, "--users", "20", "--prompt-len", "2000", "--output-len", "500", "--format", "json"]
    assert main([*argv, "--language-model-only"]) == 0
    text = json.loads(capsys.readouterr().out)
    commands = [s["launch_command"] for s in text if s["launch_command"].startswith("vllm serve")]
    assert commands and all(c.count("--language-model-only") == 1 for c in commands)
    assert main(argv) == 0
    full = json.loads(capsys.readouterr().out)
    assert full and not any("--language-model-only" in s["launch_command"] for s in full)


def test_engine_page_command_carries_the_flag():
    from tests.test_serving_app import run

    at = run("pages/5_Engine.py", {"model": VL, "gpu": L40S, "language_model_only": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    commands = [c.value for c in at.code if "vllm serve" in c.value]
    assert commands and all("--language-model-only" in c for c in commands)
    assert not any("Text only: add" in c.value for c in at.caption)  # the command says it; no note to follow
    full = run("pages/5_Engine.py", {"model": VL, "gpu": L40S})
    assert not any("--language-model-only" in c.value for c in full.code if "vllm serve" in c.value)


def test_text_only_switch_names_the_flag_the_commands_write():
    # QA (stop 38): the switch said "vLLM --limit-mm-per-prompt image 0, video 0" beside an Engine command that
    # writes --language-model-only, so a design review copied two spellings of one setting
    from tests.test_serving_app import run
    from ui.serving import TEXT_ONLY_LABEL

    at = run("pages/5_Engine.py", {"model": VL, "gpu": L40S, "language_model_only": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    switch = [t for t in at.toggle if t.label == TEXT_ONLY_LABEL]
    assert len(switch) == 1 and switch[0].value is True
    command = next(c.value for c in at.code if "vllm serve" in c.value)
    assert "--language-model-only" in command and "--language-model-only" in TEXT_ONLY_LABEL
    assert "--limit-mm-per-prompt" not in command and "--limit-mm-per-prompt" not in TEXT_ONLY_LABEL
    assert ZERO_LIMITS.split(" ", 1)[1] in switch[0].help  # older builds' spelling, in the help


def test_memory_curves_names_the_text_only_switch_it_leaves_out():
    """Memory curves plans the bare models (towers included): a link's text-only switch is named on its line
    (QA: it was dropped unsaid); Disaggregation applies it, so its line does not name it."""
    from tests.test_serving_app import run

    vl = VL
    curves = run("pages/1_Memory_curves.py", {"models": [vl], "gpus": ["nvidia-l40s"], "language_model_only": "true"})
    assert not curves.exception and not curves.error
    assert any("`language_model_only=true`" in c.value for c in curves.caption), [c.value for c in curves.caption]
    pools = run("pages/8_Disaggregation.py", {"model": vl, "gpu": "nvidia-l40s", "language_model_only": "true"})
    assert not pools.exception
    assert not any("`language_model_only=true`" in c.value for c in pools.caption)

