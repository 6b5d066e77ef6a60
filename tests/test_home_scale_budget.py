"""Home's budget prices the link's vLLM data + expert parallel launch as ``python -m planner plan`` does (one link,
one answer).

QA: ``/?model=deepseek-ai/DeepSeek-V3&gpu=nvidia-h200-sxm&num_gpus=1&data_parallel_size=8&enable_expert_parallel=true``
at 8,192 tokens, batch 64: Home's tiles priced every routed expert on each GPU ("Does not fit ... weights 626.92 GiB
per GPU") with a line saying the budget leaves expert parallel out, where ``plan --data-parallel-size 8
--enable-expert-parallel`` prices one attention data-parallel rank with its 32 of 256 experts (93.92 GiB) and fits.
Both now call :func:`planner.rank_budget.rank_plan`; the expected figures are the CLI's JSON, not copied.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex

import pytest

from planner.cli import main
from tests.test_home_panel_scale import V3_EP, V32_EP_DCP
from tests.test_serving_app import run
from tests.tiles import metric_tiles
from ui.format import format_bytes, format_int

CLI = {
    "V3_EP": ["--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h200-sxm", "--num-gpus", "1",
              "--data-parallel-size", "8", "--enable-expert-parallel", "--context-len", "8192", "--batch-size", "64"],
    "V32_EP_DCP": ["--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-h200-sxm", "--num-gpus", "4",
                   "--tensor-parallel-size", "4", "--data-parallel-size", "2", "--decode-context-parallel-size", "4",
                   "--enable-expert-parallel", "--context-len", "131072", "--batch-size", "64"],
}
LINKS = {"V3_EP": V3_EP, "V32_EP_DCP": V32_EP_DCP}


def _plan_json(args: list[str]) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", *args, "--format", "json"]) == 0
    return json.loads(out.getvalue())


def _home(params: dict):
    at = run("app.py", params)
    assert not at.exception and not at.error, ([e.value for e in at.exception], [e.value for e in at.error])
    return at


@pytest.mark.parametrize("name", sorted(LINKS))
def test_home_budget_is_the_clis_rank(name):
    cli = _plan_json(CLI[name])
    at = _home(LINKS[name])
    tiles = {t.label: t.value for t in metric_tiles(at)}
    weights = next(v for k, v in tiles.items() if k.startswith("Weights"))
    assert weights == format_bytes(cli["weights_bytes_per_gpu"]), (weights, cli["weights_bytes_per_gpu"])
    assert tiles["Max concurrent sequences"] == format_int(cli["max_concurrent_sequences"]), tiles
    fits = any(s.value.startswith("**Fits.**") for s in at.success)
    assert fits == cli["fits"], ([s.value for s in at.success], [w.value[:200] for w in at.warning])
    assert any(cli["data_parallel"]["verdict"][1:] in v for v in [*(s.value for s in at.success),
                                                                   *(w.value for w in at.warning)])


@pytest.mark.parametrize("name", sorted(LINKS))
def test_no_line_says_the_budget_leaves_expert_parallel_out(name):
    at = _home(LINKS[name])
    assert not [i.value for i in at.info if "leaves out" in i.value and "expert" in i.value.lower()]
    left_out = [c.value for c in at.caption if c.value.startswith("Left out")]
    assert not any("enable_expert_parallel" in c for c in left_out), left_out


@pytest.mark.parametrize("name", sorted(LINKS))
def test_the_command_line_plans_the_same_rank(name):
    """Home's "same plan from the command line" carries the scale flags and gives the figures of the CLI's JSON."""
    at = _home(LINKS[name])
    command = next(c.value for c in at.code if c.value.startswith("python -m planner plan"))
    assert "--enable-expert-parallel" in command and "--data-parallel-size" in command, command
    args = shlex.split(command.replace("\\\n", " "))[4:]
    home, cli = _plan_json(args), _plan_json(CLI[name])
    keys = ("weights_bytes_per_gpu", "max_concurrent_sequences", "fits", "kv_cache_budget_bytes", "data_parallel")
    assert {k: home[k] for k in keys} == {k: cli[k] for k in keys}


def test_home_words_the_rank_budget_notes_for_a_reader_not_the_cli_json():
    """QA (stop 46): Home showed the CLI's notes as they were, "this section prices one attention data-parallel rank
    ... x 8 ranks in scale.max_concurrency" and "... as the scale section counts them": words for the CLI's JSON,
    not for the page. The notes name the budget, the launch's ranks and the engine view."""
    at = run("app.py", V3_EP)
    assert not at.exception, [e.value for e in at.exception]
    shown = [e.value for e in at.info]
    ranks = [t for t in shown if "attention data-parallel rank" in t]
    assert ranks and all("section" not in t and "scale." not in t for t in shown), shown
    assert any("of the launch's 8 ranks" in t for t in ranks), ranks
