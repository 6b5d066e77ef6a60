"""A vLLM launch that stops before it loads weights prints no memory figures.

QA (stop 42 leftover): DeepSeek-V4-Flash on 8 x A100 "would refuse to start" for want of a sparse-MLA kernel, yet the
Engine page showed that refusal above the log a started engine prints ("Model loading took 19.34 GiB ... Available
KV cache memory: 50.18 GiB ... Maximum concurrency ..."), and the CLI said "max len 0 tokens: the largest
--max-model-len the engine would accept with this memory". The same holds for a shared GPU whose free memory is
under ``total x gpu_memory_utilization``: vLLM's worker raises at its startup memory check, before the model loads.
"""

import json

import pytest

from planner.cli import main
from tests.test_app import run_page

V4_ON_A100 = ["--engine", "vllm", "--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", "nvidia-a100-80gb",
              "--num-gpus", "8", "--context-len", "32768"]
SHARED_H100 = ["--engine", "vllm", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "nvidia-h100",
               "--num-gpus", "1", "--gpu-memory-in-use-gib", "30"]
STARTS = ["--engine", "vllm", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "nvidia-h100", "--num-gpus", "1"]


def _plan(capsys, args, *extra):
    assert main(["plan", *args, *extra]) in (0, 1)
    return capsys.readouterr().out


@pytest.mark.parametrize("args", [V4_ON_A100, SHARED_H100], ids=["v4-kernel", "shared-gpu"])
def test_refusal_before_profile_prints_no_memory_log(capsys, args):
    data = json.loads(_plan(capsys, args, "--format", "json"))
    engine = data["engine_plan"]
    assert engine["starts"] is False
    assert engine["stopped_at_config_check"] is True
    assert engine["engine_log_lines"] == []
    assert engine["engine_kv_cache_tokens"] == 0 and engine["max_concurrency"] == 0
    text = _plan(capsys, args)
    assert "engine says  nothing: it stops before allocating" in text
    assert "max len      none: the engine stops before it profiles memory" in text
    assert "the largest --max-model-len the engine would accept" not in text


def test_a_launch_that_starts_keeps_its_log(capsys):
    engine = json.loads(_plan(capsys, STARTS, "--format", "json"))["engine_plan"]
    assert engine["starts"] is True and engine["stopped_at_config_check"] is False
    assert any(line.startswith("Available KV cache memory") for line in engine["engine_log_lines"])
    assert "the largest --max-model-len the engine would accept" in _plan(capsys, STARTS)


def test_engine_page_shows_no_started_log_under_the_refusal():
    at = run_page("pages/5_Engine.py", {"model": "deepseek-ai/DeepSeek-V4-Flash", "num_gpus": "8",
                                        "gpu": "nvidia-a100-80gb", "context_len": "32768"})
    assert not at.exception
    assert any("would refuse to start" in w.value for w in at.warning)
    assert not any("Model loading took" in c.value or "Available KV cache memory" in c.value for c in at.code)
    assert any(i.value.startswith("No memory figures") for i in at.info)
    assert any("stops before it prints any memory line" in c.value for c in at.caption)


def test_a_v1_launch_its_kv_check_refuses_prints_no_cache_size_or_concurrency(capsys):
    """QA (stop 43): Qwen3-8B at 40,960 tokens and utilization 0.24 on an H100 "printed" "GPU KV cache size: 9,696
    tokens" and "Maximum concurrency ... 0.24x" under "starts no". vLLM V1 checks the KV memory before those lines
    (vllm/v1/core/kv_cache_utils.py get_kv_cache_configs raises first): the log ends at "Available KV cache
    memory", the figure the refusal quotes."""
    args = ["--engine", "vllm", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100", "--gpu-memory-utilization",
            "0.24", "--max-model-len", "40960"]
    engine = json.loads(_plan(capsys, args, "--format", "json"))["engine_plan"]
    assert engine["starts"] is False and engine["reasons"]
    assert engine["engine_log_lines"][-1].startswith("Available KV cache memory")
    assert not any(line.startswith(("GPU KV cache size", "Maximum concurrency")) for line in engine["engine_log_lines"])
    started = json.loads(_plan(capsys, [a if a != "40960" else "4096" for a in args], "--format", "json"))
    assert started["engine_plan"]["starts"] and started["engine_plan"]["engine_log_lines"][-1].startswith("Maximum")
