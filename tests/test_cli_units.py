"""The CLI tables print sizes in the unit their magnitude calls for (issue 27, polish: "the CLI table
prints KV in raw bytes beside GiB"); the JSON keeps integer bytes."""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.cli.args import human_bytes

LLAMA3 = ["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb"]


@pytest.mark.parametrize(("size", "text"), [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1.00 KiB"), (131_072, "128.00 KiB"), (4 << 20, "4.00 MiB"),
    (3 << 29, "1.50 GiB"), (-(1 << 30), "-1.00 GiB"),
])
def test_human_bytes_by_magnitude(size, text):
    assert human_bytes(size) == text


def test_plan_table_shows_kv_in_binary_units_and_json_keeps_bytes(capsys):
    assert main(["plan", *LLAMA3]) == 0
    lines = {line[:12].strip(): line[13:] for line in capsys.readouterr().out.splitlines() if line[:2] != "  "}
    # Llama 3 8B: 32 layers x 8 KV heads x 128 x (K + V) x 2 bytes = 131,072 B per token; x 8,192 = 1 GiB
    assert lines["KV/token"] == "128.00 KiB"
    assert lines["KV/sequence"] == "1.00 GiB at 8,192 tokens"
    assert main(["plan", *LLAMA3, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_cache_bytes_per_token"] == 131_072 and out["kv_cache_bytes_per_sequence"] == 1 << 30


def test_allocation_table_shows_kv_per_token_in_binary_units(capsys):
    assert main(["allocation", *LLAMA3, "--max-model-len", "8192", "--mean-len", "800"]) == 0
    budget = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("KV budget"))
    assert budget.endswith("; 128.00 KiB per token") and " B/token" not in budget


def test_plan_table_gives_the_paged_sequence_users_are_counted_with(capsys):
    """A hybrid's exact sequence (304 MiB for Qwen3.5-27B at 2,500 tokens) divides the 16.62 GiB budget into 55,
    not the 49 users printed below it: the line adds the sequence in vLLM's 784-token blocks (QA)."""
    args = ["plan", "--model", "Qwen/Qwen3.5-27B", "--gpu", "nvidia-h100-80gb", "--context-len", "2500"]
    assert main(args) == 0
    lines = {line[:12].strip(): line[13:] for line in capsys.readouterr().out.splitlines() if line[:2] != "  "}
    assert lines["KV/sequence"] == ("304.00 MiB at 2,500 tokens (343.00 MiB per GPU in 784-token blocks, as users "
                                    "are counted)")
    assert lines["max users"] == "49 at 2,500 tokens"
