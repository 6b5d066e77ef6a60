"""``plan``'s table ``capacity`` line says what it counts (QA, stop 42).

It showed ``kv_cache_capacity_tokens_at_context`` as "N tokens in C-token sequences" and README called that
vLLM's "GPU KV cache size" within one block, which is false for windowed and compressed models: DeepSeek-V4-Flash
on 8 x H200 at 131,072 tokens printed "capacity 24,649,193 tokens" above the engine's "GPU KV cache size:
3,934,908 tokens", gpt-oss-120b on one H100 at 32,768 x 8 104,287 above 90,025. The line now says the figure is the
requests decoding at once times their length, and where the engine section of the same output prints another
figure, names it and says why they differ. The JSON values stay as they were.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]
V4 = ["--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", "nvidia-h200-sxm", "--num-gpus", "8", "--context-len",
      "131072", "--batch-size", "64", "--engine", "vllm", "--tensor-parallel-size", "8"]
GPT_OSS = ["--model", "openai/gpt-oss-120b", "--gpu", "nvidia-h100-sxm-80gb", "--context-len", "32768",
           "--batch-size", "8", "--engine", "vllm"]


def _run(capsys, argv: list[str]) -> tuple[str, dict]:
    assert main(["plan", *argv]) == 0
    text = capsys.readouterr().out
    assert main(["plan", *argv, "--format", "json"]) == 0
    return text, json.loads(capsys.readouterr().out)


def _line(text: str, label: str) -> str:
    return re.search(rf"^{label}\s+(.*)$", text, re.M).group(1)


@pytest.mark.parametrize("argv", [V4, GPT_OSS], ids=["deepseek-v4-flash", "gpt-oss-120b"])
def test_capacity_line_names_the_engine_print_it_differs_from(capsys, argv):
    text, out = _run(capsys, argv)
    held, printed = out["kv_cache_capacity_tokens_at_context"], out["engine_kv_cache_tokens"]
    assert abs(held - printed) >= out["block_size"]  # the two figures QA read as one
    line = _line(text, "capacity")
    assert line.startswith(f"{held:,} tokens")  # the JSON value, as before
    assert "decoding" in line  # what it counts: requests decoding at once x their length
    assert f"{printed:,}" in line and "prefill peak" in line, line  # the engine's figure, and why it differs
    assert f"GPU KV cache size: {printed:,} tokens" in text  # the figure named is the one the engine section prints


LLAMA = ["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--context-len", "8192",
         "--engine", "vllm"]


@pytest.mark.parametrize("argv", [GPT_OSS[:-2], LLAMA], ids=["no-engine", "full-attention"])
def test_capacity_line_names_no_print_where_there_is_none_to_tell_apart(capsys, argv):
    """No engine section (nothing to compare), or a model whose every layer keeps every token (Llama 3 8B: the
    engine prints within a block of the line's figure): the line says what it counts and adds no clause."""
    text, out = _run(capsys, argv)
    held = out["kv_cache_capacity_tokens_at_context"]
    if "engine_kv_cache_tokens" in out:
        assert abs(held - out["engine_kv_cache_tokens"]) < out["block_size"]
    line = _line(text, "capacity")
    assert line.startswith(f"{held:,} tokens") and "decoding" in line
    assert "prefill peak" not in line and "engine" not in line


def test_readme_does_not_call_the_capacity_vllm_s_print():
    readme = (ROOT / "README.md").read_text()
    start = readme.index("`kv_cache_capacity_tokens_at_context` is")
    sentence = " ".join(readme[start:readme.index("`allocation`'s JSON", start)].split())
    assert "within one block of its print" not in sentence
    assert "prefill peak" in sentence


@pytest.mark.parametrize("gpu,kv,context", [("nvidia-h100-sxm-80gb", "auto", 8192),
                                            ("nvidia-a100-pcie-80gb", "fp8", 2500)])
def test_capacity_at_context_is_whole_blocks_as_vllm_prints_it(capsys, gpu, kv, context):
    """QA (stop 43): Llama-3-8B on an H100 printed "capacity 441,955 tokens" where the JSON's whole-block capacity
    and Home said 441,952; on an A100 PCIe with fp8 KV at 2,500 tokens it printed 897,513 beside the engine
    section's "GPU KV cache size: 897,500 tokens". A full-attention model's figure is now vLLM's:
    int(num_blocks / blocks_per_request x context) of whole blocks."""
    args = ["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", gpu, "--kv-cache-dtype", kv,
            "--context-len", str(context), "--engine", "vllm"]
    main([*args, "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    blocks = data["kv_cache_capacity_tokens"] // data["block_size"]
    per_request = -(-context // data["block_size"])
    assert data["kv_cache_capacity_tokens_at_context"] == blocks * context // per_request
    printed = data["engine_plan"]["engine_kv_cache_tokens"]
    assert abs(data["kv_cache_capacity_tokens_at_context"] - printed) <= 1  # the engine's own budget: same here
