"""Home's engine panel plans the link's decode context parallel size, as the Engine page does (one link, one answer).

QA: DeepSeek-V3.2 on 8 H200 at 131,072 tokens, batch 64, ``decode_context_parallel_size=8``: Home's tiles and fixes
planned ``-dcp 8`` (57 users) while its folded "What vllm would allocate" panel planned the launch without it
(7.21x, a command with no ``--decode-context-parallel-size``) and only said so in a sentence; the Engine page printed
57.67x for the same link.
"""

from __future__ import annotations

import re

import pytest

from tests.test_app import run_page
from tests.tiles import metric_tiles

V32 = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
       "batch_size": "64", "decode_context_parallel_size": "8"}


def _panel(params: dict) -> tuple[str, str, str]:
    """Home's engine panel: (its figures line, its launch command, its captions joined)."""
    at = run_page("app.py", params)
    assert not at.exception, [e.value for e in at.exception]
    panel = next(e for e in at.expander if "would allocate" in e.label)
    figures = next(m.value for m in panel.markdown if "concurrency" in m.value)
    command = next(c.value for c in panel.code if c.value.startswith("vllm serve"))
    return figures, command, " ".join(c.value for c in panel.caption)


def _engine_page(params: dict) -> tuple[str, str]:
    """The Engine page's printed concurrency tile and its launch command."""
    at = run_page("pages/5_Engine.py", params)
    assert not at.exception, [e.value for e in at.exception]
    tiles = {t.label: t.value for t in metric_tiles(at)}
    command = next(c.value for c in at.code if c.value.startswith("vllm serve"))
    return tiles["Max concurrency"], command


def test_home_panel_plans_the_links_dcp_as_the_engine_page():
    figures, command, captions = _panel(V32)
    concurrency, engine_command = _engine_page(V32)
    assert f"{concurrency} concurrency" in figures, (figures, concurrency)
    assert "--decode-context-parallel-size 8" in command and command == engine_command
    assert "keeps every token of a request on each GPU" not in captions, captions


def test_home_users_agree_with_the_panels_launch():
    """The tiles' users are the whole requests of the panel's printed concurrency (both plan ``-dcp 8``)."""
    at = run_page("app.py", V32)
    users = int(next(t.value for t in metric_tiles(at) if t.label == "Max concurrent sequences"))
    figures, _, _ = _panel(V32)
    printed = float(re.search(r"([\d.]+)x concurrency", figures).group(1))
    assert users == int(printed), (users, figures)


def test_an_invalid_dcp_keeps_the_launch_without_it():
    """3 does not divide the 8 tensor-parallel GPUs: the budget drops it (:func:`ui.feature_line.link_dcp`), and so
    does the panel's launch."""
    _, command, _ = _panel({**V32, "decode_context_parallel_size": "3"})
    assert "--decode-context-parallel-size" not in command


@pytest.mark.parametrize("layout", [{}, {"num_gpus": "4", "data_parallel_size": "2",
                                         "decode_context_parallel_size": "4"}], ids=["tp8-dcp8", "tp4-dp2-dcp4"])
def test_home_panel_plans_the_links_expert_parallel_beside_its_dcp(layout):
    """A link with ``-dcp`` and ``enable_expert_parallel=true``: Home's panel planned the split without the flag (on
    ``-tp 4 -dp 2 -dcp 4``: 25.54x beside the Engine page's 25.42x, whose ranks spread the experts over all 8 GPUs);
    it now plans the Engine page's request, with the same printed concurrency and command."""
    params = {**V32, **layout, "enable_expert_parallel": "true"}
    figures, command, _ = _panel(params)
    concurrency, engine_command = _engine_page(params)
    assert f"{concurrency} concurrency" in figures, (figures, concurrency)
    assert "--enable-expert-parallel" in command and command == engine_command


V3_REFUSED = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
              "batch_size": "1", "gpu_memory_utilization": "0.61", "decode_context_parallel_size": "8",
              "engine": "vllm-v0.11"}
"""vLLM 0.11's ``-dcp 8`` launch refuses (0.10 GiB of KV per GPU for a 1.07 GiB shard). The budget used to price the
newest vLLM here and fit 1 user, so Home offered start fixes; it now prices vllm-v0.11's own overhead
(PlanRequest.for_engine) and says "Does not fit" with the same 0.10 GiB, offering the budget's checked fixes."""


def test_the_budget_agrees_with_the_refusing_dcp_launch():
    at = run_page("app.py", V3_REFUSED)
    assert not at.exception, [e.value for e in at.exception]
    said = next(w.value for w in at.warning if w.value.startswith("**Does not fit**"))
    assert "the budget is 0.10 GiB" in said, said
    assert not any("would refuse to start" in w.value for w in at.warning)


def test_start_fixes_quote_the_dcp_launch_the_engine_page_plans_after_each():
    """Each fix's quoted concurrency is the Engine page's after that fix is applied (QA: the fixes were
    searched on the launch without ``-dcp``: "Utilization → 0.95: starts with 5.56x", the Engine page then 44.45x)."""
    at = run_page("app.py", V3_REFUSED)
    assert not at.exception, [e.value for e in at.exception]
    fixes = [b for b in at.button if (b.key or "").startswith(("start_fix", "apply_fix"))]
    assert len(fixes) >= 2, [b.label for b in at.button]
    for button in fixes:
        quoted = re.search(r"starts with ([\d.,]+x) concurrency", button.help).group(1)
        fixed = run_page("app.py", V3_REFUSED)
        fixed.button(key=button.key).click().run()
        params = {key: fixed.query_params[key] for key in fixed.query_params}
        params = {key: value[0] if isinstance(value, list) else value for key, value in params.items()}
        assert params != V3_REFUSED, button.label
        concurrency, command = _engine_page(params)
        assert "--decode-context-parallel-size 8" in command, (button.label, command)
        assert concurrency == quoted, (button.label, params, concurrency, quoted)
