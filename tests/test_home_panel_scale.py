"""Home's engine panel plans the Engine page's data / expert parallel launch without ``-dcp`` too (one answer).

QA: ``/?model=deepseek-ai/DeepSeek-V3&gpu=nvidia-h200-sxm&num_gpus=1&data_parallel_size=8&enable_expert_parallel=true``
at 8,192 tokens: Home's panel said vLLM "would refuse to start (505.09 GiB short)" with no
``--enable-expert-parallel`` in its command, where the Engine page's launch starts (25 per rank x 8) and
``python -m planner plan ... --data-parallel-size 8 --enable-expert-parallel`` fits: the panel planned the link's
scale flags only beside a ``decode_context_parallel_size``.
"""

from __future__ import annotations

import re

from tests.test_app import run_page
from tests.test_home_panel_dcp import _engine_page, _panel

V3_EP = {"model": "deepseek-ai/DeepSeek-V3", "gpu": "nvidia-h200-sxm", "num_gpus": "1", "data_parallel_size": "8",
         "enable_expert_parallel": "true", "context_len": "8192", "batch_size": "64"}
V32_EP_DCP = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "4",
              "tensor_parallel_size": "4", "data_parallel_size": "2", "decode_context_parallel_size": "4",
              "enable_expert_parallel": "true", "context_len": "131072", "batch_size": "64"}


def test_home_panel_plans_the_links_expert_parallel_without_dcp():
    figures, command, _ = _panel(V3_EP)
    concurrency, engine_command = _engine_page(V3_EP)
    assert "starts" in figures and f"{concurrency} concurrency" in figures, (figures, concurrency)
    assert "--enable-expert-parallel" in command and command == engine_command, (command, engine_command)


def _home(params: dict):
    at = run_page("app.py", params)
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_verdicts_fixes_quote_the_expert_parallel_launch_the_engine_page_plans_after_each():
    """The "Try" fixes are checked on the panel's launch (QA: "use num_gpus 8 ... starts with 79.08x", the launch
    without expert parallel, where the Engine page then prints its -tp 8 -dp 8 expert-parallel launch's figure).
    DeepSeek-V3.2 with -dcp: its rank's budget (tests/test_home_scale_budget.py) does not fit the batch's share."""
    at = _home(V32_EP_DCP)
    fixes = [b for b in at.button if (b.key or "").startswith("apply_fix") and "starts with" in (b.help or "")]
    assert fixes, [b.label for b in at.button]
    for button in fixes:
        quoted = re.search(r"starts with ([\d.,]+x) concurrency", button.help).group(1)
        fixed = _home(V32_EP_DCP)
        fixed.button(key=button.key).click().run()
        params = {key: fixed.query_params[key] for key in fixed.query_params}
        params = {key: value[0] if isinstance(value, list) else value for key, value in params.items()}
        concurrency, command = _engine_page(params)
        assert "--enable-expert-parallel" in command, (button.label, command)
        assert concurrency == quoted, (button.label, params, concurrency, quoted)
