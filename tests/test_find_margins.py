"""Find's spare figures agree with its answers; ``plan`` names an engine refusal on its fits line (QA, stop 47).

1. A row offered as fitting never shows fewer users than wanted (distributions: the row's users come from the same
   Monte-Carlo demand that let it fit).
2. With ``--max-num-seqs`` below what a replica's KV cache holds, max users and the margin count the cap, and the
   row says so.
3. The JSON carries the table's kind text (``kind_label``: ``TP+DP`` for a TP row of replicas) beside ``kind``.
4. ``plan`` with a budget that fits and a launch the engine refuses before loading weights names the refusal on
   its fits line, as the one-node pipeline refusal does.
"""

import pytest

from planner.cli import main


@pytest.mark.parametrize("argv", [
    ["--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "amd-mi300x", "--tensor-parallel-size", "8",
     "--kv-cache-dtype", "fp8", "--engine", "vllm-v0.11", "--context-len", "4096"],
    ["--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", "nvidia-a100-sxm-80gb", "--tensor-parallel-size", "8",
     "--engine", "vllm", "--context-len", "4096"],
])
def test_plan_names_an_engine_refusal_on_its_fits_line(capsys, argv):
    assert main(["plan", *argv]) == 0  # exit 0, as for every plan that does not fit or start (bad arguments: 2)
    lines = capsys.readouterr().out.splitlines()
    fits = next(x for x in lines if x.startswith("fits "))
    assert "starts       no" in lines
    assert fits.startswith("fits         yes")
    assert "the engine section: " in fits and "would refuse to start" in fits, fits
    assert "before it loads the weights" in fits, fits
