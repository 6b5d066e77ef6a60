"""Memory curves with many lines stay readable (QA, stop 47).

Six models on six GPUs of three profile-pass classes drew 16 lines, each with up to 14 markers of 6 px and a 3 px
stroke: four models in the 10-25 GiB band became one blur at 1,280 px. Past :data:`ui.charts.CROWDED_CURVES` lines
the curves are drawn as thinner lines without markers (their dash style still tells the classes apart, the legend
and the hover still name each one); a chart of a few lines keeps its markers.
"""

from __future__ import annotations

import json

from tests.test_app import run_page
from ui.charts import CROWDED_CURVES

MODELS = ["deepseek-ai/DeepSeek-V4-Flash", "zai-org/GLM-5.1-FP8", "Qwen/Qwen3.6-35B-A3B", "google/gemma-4-26B-A4B-it",
          "openai/gpt-oss-120b", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"]
GPUS = ["nvidia-h100-sxm-80gb", "nvidia-h200-sxm", "nvidia-b200", "amd-mi300x", "nvidia-l40s", "nvidia-rtx-5090"]


def _curve_traces(params: dict) -> list[dict]:
    at = run_page("pages/1_Memory_curves.py", params)
    assert not at.exception and not at.error
    specs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    return [t for spec in specs for t in spec["data"] if t.get("legendgroup") and "lines" in t.get("mode", "")]


def test_a_crowded_chart_draws_thin_lines_without_markers():
    traces = _curve_traces({"models": MODELS, "gpus": GPUS, "num_gpus": "8"})
    assert len(traces) > CROWDED_CURVES
    assert all(t["mode"] == "lines" and t["line"]["width"] < 3 for t in traces)


def test_a_few_curves_keep_their_markers():
    traces = _curve_traces({"models": ["Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B-Instruct"],
                            "gpus": ["nvidia-h100-sxm-80gb"]})
    assert 0 < len(traces) <= CROWDED_CURVES
    assert all(t["mode"] == "lines+markers" for t in traces)
