"""Real-browser check that the Memory curves chart's GPU labels cover no curve (QA: on the linear axis the
white-backed "B200 (HGX, SXM) 180GB: usable 160.51 GiB" hid Qwen3-Next's curve from 128K to 262K, so it looked as
if it ended near 100K while the table said 262,144; on the log axis the B200 and MI300X labels hid Llama 4 Scout's).

In Chromium at 1,280 and 1,400 px, on the QA's link with either memory axis, each label's drawn box lies right of
the plot area (where no trace is drawn), inside the chart, and apart from every other label. Run alone with
``pytest -m browser``.
"""

from __future__ import annotations

import pytest

from tests.e2e_helpers import OBSERVER_JS, collect, open_settled

pytestmark = pytest.mark.browser

QA_LINK = ("/Memory_curves?models=meta-llama%2FLlama-4-Scout-17B-16E-Instruct&models=Qwen%2FQwen3-0.6B"
           "&models=openai-community%2Fgpt2&models=google%2Fgemma-3-1b-it&models=meta-llama%2FMeta-Llama-3.1-8B"
           "&models=Qwen%2FQwen3-Next-80B-A3B-Instruct&gpus=nvidia-h200-sxm&gpus=nvidia-rtx-4090&gpus=nvidia-b200"
           "&gpus=amd-mi300x")

BOXES_JS = """() => {
  const chart = document.querySelector('[data-testid="stPlotlyChart"] .js-plotly-plot');
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  return {chart: box(chart), plot: box(chart.querySelector('.draglayer .xy .nsewdrag')),
          labels: [...chart.querySelectorAll('g.annotation-text-g')].map((g) => [g.textContent, box(g)])};
}"""


def _apart(a: list[float], b: list[float]) -> bool:
    return a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]


@pytest.mark.parametrize("width", [1280, 1400])
@pytest.mark.parametrize("log_y", [False, True])
def test_gpu_labels_sit_beside_the_plot_apart_and_whole(streamlit_server, chromium_browser, width, log_y):
    context = chromium_browser.new_context(viewport={"width": width, "height": 1000})
    context.add_init_script(OBSERVER_JS)
    try:
        page = context.new_page()
        open_settled(page, streamlit_server.base_url + QA_LINK + ("&log_y=true" if log_y else ""))
        assert not collect(page)["exceptions"]
        page.wait_for_selector('[data-testid="stPlotlyChart"] g.annotation-text-g')
        drawn = page.evaluate(BOXES_JS)
        labels = drawn["labels"]
        for name in ("H200 SXM 141GB", "GeForce RTX 4090", "B200 (HGX, SXM) 180GB", "Instinct MI300X"):
            assert sum(name in text for text, _ in labels) == 1, (name, labels)  # one label per GPU line
        plot, chart = drawn["plot"], drawn["chart"]
        for text, box in labels:
            assert box[0] >= plot[2], (text, box, plot)  # right of the plot area: over no trace
            assert box[2] <= chart[2] and box[1] >= chart[1] and box[3] <= chart[3], (text, box, chart)  # not cut
        for i, (text, box) in enumerate(labels):
            for other, other_box in labels[i + 1:]:
                assert _apart(box, other_box), (text, box, other, other_box)
    finally:
        context.close()
