"""What each page costs over Streamlit's own floor, measured side by side (``scripts/perf_budget.py``, item 5).

Issue 27 ("Speed, decided"): charts stay Plotly, so a page is judged against what Streamlit and
Plotly cost by themselves, on the same machine, server and minute:

a. **Charts drawn**: navigation start -> the last visible Plotly chart of the page has its SVG, in a
   fresh browser context (so the 4.7 MB Plotly chunk is fetched and parsed each time), over the same
   for a page that draws one small Plotly chart (:data:`ONE_CHART_SOURCE`; the same Plotly build, as
   it is Streamlit's bundled chunk). Target <= :data:`CHART_RATIO_TARGET`.
b. **Rerun after one widget change** (the widget of ``tests.e2e_helpers.PAGES``): p50 over the same
   change on the page's *floor* (:data:`FLOOR_SOURCE`): the page's own script up to its last
   ``inputs.show_problems`` call, which every page makes once its sidebar is complete, then
   ``st.stop()``; the Catalog page, which has no sidebar inputs, stops after its search box. Same
   widgets, nothing loaded, planned or drawn. Target <= :data:`RERUN_RATIO_TARGET`.

Beside each wall-clock ratio, the same ratio of the browser's main-thread CPU time (Chromium's
``ThreadTime`` metric over the DevTools protocol: the renderer's main thread, where Streamlit's React
and Plotly run): of the whole load for (a), per rerun for (b). On a machine shared with other work the
wall clock of identical checkouts differs by up to 0.3x between runs; CPU time barely moves with load,
so it tells a real change from noise. The server's CPU is not in it (the wall clock has it).

The measuring app is a temporary folder with this checkout's files linked in (``app.py`` copied:
Streamlit finds ``pages/`` beside the entry file it was given) and the extra pages added to a
``pages/`` of links; one server serves the pages and their references, and measurements alternate
between the two so that machine load hits both alike. A benchmark, never a test.
"""

from __future__ import annotations

import ast
import shutil
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path

from tests.e2e_helpers import (
    PAGES,
    StreamlitServer,
    change_widget,
    collect,
    new_context,
    open_settled,
    percentile,
    rerun_latency_ms,
)

CHART_RATIO_TARGET = 1.3
RERUN_RATIO_TARGET = 1.5

ONE_CHART_PATH = "/Perf_one_chart"
ONE_CHART_SOURCE = '''"""perf_budget reference: one small Plotly chart and nothing else."""
import plotly.graph_objects as go
import streamlit as st

st.title("One chart")
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[1, 3, 2, 4], mode="lines+markers")), key="one_chart")
'''

FLOOR_SOURCE = '''"""perf_budget floor of {path}: its script up to its last show_problems (the sidebar complete), then st.stop()."""
import runpy

import streamlit as st

from ui import inputs

_show, _text_input, _calls = inputs.show_problems, st.text_input, []


def _show_then_stop(problems):
    _show(problems)
    _calls.append(1)
    if len(_calls) >= {stops}:
        st.stop()


def _text_input_then_stop(*args, **kwargs):
    value = _text_input(*args, **kwargs)
    if {stops} == 0 and kwargs.get("key") == {widget!r}:
        st.stop()
    return value


inputs.show_problems, st.text_input = _show_then_stop, _text_input_then_stop
try:
    runpy.run_path({script!r}, run_name="__main__")
finally:
    inputs.show_problems, st.text_input = _show, _text_input
'''

CHARTS_JS = """() => {
  const visible = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter((el) => el.offsetParent);
  return {charts: visible.length, drawn: visible.filter((el) => el.querySelector('.main-svg')).length,
          at: window.__perfChartsAt ?? null};
}"""

ALL_DRAWN_JS = """() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
  .filter((el) => el.offsetParent).every((el) => el.querySelector('.main-svg'))"""

CHARTS_OBSERVER_JS = r"""
(() => {
  if (window.top !== window) return;
  window.__perfChartsAt = null;
  const check = () => {
    const visible = [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].filter((el) => el.offsetParent);
    if (visible.length && visible.every((el) => el.querySelector('.main-svg'))) window.__perfChartsAt = performance.now();
  };
  // Plotly appends its <svg class="main-svg"> to a chart already on the page: check when one arrives.
  new MutationObserver((records) => {
    if (records.some((r) => [...r.addedNodes].some((n) => n.nodeType === 1 && n.classList.contains('main-svg')))) check();
  }).observe(document, {subtree: true, childList: true});
})();
"""


def show_problems_calls(script: Path) -> int:
    """How many ``inputs.show_problems(...)`` calls the page script makes (its floor stops after the last)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return sum(isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "show_problems" for node in ast.walk(tree))


def floor_path(path: str) -> str:
    """``/Floor_Memory_curves`` for ``/Memory_curves``, ``/Floor_Home`` for ``/``."""
    return "/Floor_" + (path.strip("/") or "Home")


def build_app(app_dir: Path, tmp: Path, paths: Sequence[str]) -> Path:
    """The measuring app in ``tmp/app``: ``app_dir`` linked, a floor per page and the one-chart page added."""
    root = tmp / "app"
    (root / "pages").mkdir(parents=True)
    for item in app_dir.iterdir():
        if item.name == "app.py":
            shutil.copy(item, root / item.name)
        elif item.name not in ("pages", ".git"):
            (root / item.name).symlink_to(item)
    for item in (app_dir / "pages").iterdir():
        (root / "pages" / item.name).symlink_to(item)
    for i, path in enumerate(paths):
        script, widget = PAGES[path]
        source = FLOOR_SOURCE.format(path=path, stops=show_problems_calls(app_dir / script), widget=widget,
                                     script=str(app_dir / script))
        (root / "pages" / f"{90 + i}_{floor_path(path)[1:]}.py").write_text(source, encoding="utf-8")
    (root / "pages" / f"99_{ONE_CHART_PATH[1:]}.py").write_text(ONE_CHART_SOURCE, encoding="utf-8")
    return root


def main_thread_ms(cdp) -> float:
    """CPU time the page's renderer main thread has used so far [ms] (CDP ``Performance.getMetrics``,
    ``ThreadTime``; the session must have run ``Performance.enable``)."""
    metrics = cdp.send("Performance.getMetrics")["metrics"]
    return 1000 * next(m["value"] for m in metrics if m["name"] == "ThreadTime")


def cpu_session(context, page):
    """A DevTools session on ``page`` that reports thread CPU times (:func:`main_thread_ms`)."""
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable", {"timeDomain": "threadTicks"})
    return cdp


def charts_drawn_ms(browser, url: str) -> tuple[int, float | None, float]:
    """(visible Plotly charts, ms from navigation start until the last was drawn, main-thread CPU [ms] of
    the load until then and settled) of one fresh load."""
    context = new_context(browser)
    context.add_init_script(CHARTS_OBSERVER_JS)
    try:
        page = context.new_page()
        cdp = cpu_session(context, page)
        settled = open_settled(page, url)
        page.wait_for_function(ALL_DRAWN_JS, timeout=30000)
        state = page.evaluate(CHARTS_JS)
        cpu_ms = main_thread_ms(cdp)
        if collect(page)["exceptions"]:
            raise RuntimeError(f"{url}: exception on the page")
    finally:
        context.close()
    if not state["charts"]:
        return 0, None, cpu_ms
    return state["charts"], state["at"] if state["at"] is not None else settled, cpu_ms


def _rerun_pair(browser, base: str, path: str, reruns: int) -> tuple[list[float], list[float], list[float]]:
    """Rerun latencies [ms] of the page and of its floor, one change each in turn, and the main-thread CPU
    per rerun [ms] of each (each context has its own renderer process)."""
    widget = PAGES[path][1]
    contexts = [new_context(browser), new_context(browser)]
    try:
        pages = [c.new_page() for c in contexts]
        for page, url in zip(pages, (base + path, base + floor_path(path))):
            open_settled(page, url)
        sessions = [cpu_session(c, p) for c, p in zip(contexts, pages)]
        cpu_before = [main_thread_ms(cdp) for cdp in sessions]
        times: tuple[list[float], list[float]] = ([], [])
        for turn in range(reruns):
            for page, out in zip(pages, times):
                t0 = change_widget(page, widget, turn)
                out.append(rerun_latency_ms(page, t0))
        cpu = [(main_thread_ms(cdp) - before) / max(reruns, 1) for cdp, before in zip(sessions, cpu_before)]
        for page in pages:
            if collect(page)["exceptions"]:
                raise RuntimeError(f"{page.url}: exception after the widget changes")
    finally:
        for context in contexts:
            context.close()
    return times[0], times[1], cpu


def measure_ratios(browser, paths: Sequence[str], *, app_dir: Path, tmp: Path, chart_loads: int, reruns: int,
                   on_row: Callable[[dict], None] | None = None) -> list[dict]:
    """Both ratios for each page in ``paths`` (see the module docstring), one server for all of them."""
    root = build_app(app_dir, tmp, paths)
    rows = []
    with StreamlitServer(tmp / "server_ratios.log", app_dir=root) as server:
        base = server.base_url
        for url in [base + ONE_CHART_PATH, *(base + p for p in paths), *(base + floor_path(p) for p in paths)]:
            context = new_context(browser)  # every script run once: imports and caches warm for both sides
            try:
                open_settled(context.new_page(), url)
            finally:
                context.close()
        for path in paths:
            page_ms, ref_ms, page_cpu, ref_cpu, charts = [], [], [], [], 0
            for _ in range(chart_loads):
                charts, at, cpu = charts_drawn_ms(browser, base + path)
                if not charts:
                    break
                page_ms.append(at)
                page_cpu.append(cpu)
                _, at, cpu = charts_drawn_ms(browser, base + ONE_CHART_PATH)
                ref_ms.append(at)
                ref_cpu.append(cpu)
            page_runs, floor_runs, (rerun_cpu, floor_cpu) = _rerun_pair(browser, base, path, reruns)
            row = {"page": path, "charts": charts,
                   "charts_drawn_ms": round(statistics.median(page_ms)) if page_ms else None,
                   "one_chart_drawn_ms": round(statistics.median(ref_ms)) if ref_ms else None,
                   "charts_cpu_ms": round(statistics.median(page_cpu)) if page_cpu else None,
                   "one_chart_cpu_ms": round(statistics.median(ref_cpu)) if ref_cpu else None,
                   "rerun_p50_ms": round(percentile(page_runs, 50)), "floor_rerun_p50_ms": round(percentile(floor_runs, 50)),
                   "rerun_p95_ms": round(percentile(page_runs, 95)), "floor_rerun_p95_ms": round(percentile(floor_runs, 95)),
                   "rerun_cpu_ms": round(rerun_cpu, 1), "floor_rerun_cpu_ms": round(floor_cpu, 1),
                   "widget": PAGES[path][1]}
            row["chart_ratio"] = (round(statistics.median(page_ms) / statistics.median(ref_ms), 2)
                                  if page_ms else None)
            row["chart_cpu_ratio"] = (round(statistics.median(page_cpu) / statistics.median(ref_cpu), 2)
                                      if page_cpu else None)
            row["rerun_ratio"] = round(percentile(page_runs, 50) / max(percentile(floor_runs, 50), 1.0), 2)
            row["rerun_cpu_ratio"] = round(rerun_cpu / max(floor_cpu, 1.0), 2)
            rows.append(row)
            if on_row is not None:
                on_row(row)
    return rows


def ratio_line(row: dict) -> str:
    """One printed line of :func:`measure_ratios`."""
    if row["chart_ratio"] is None:
        charts = f"{'no Plotly chart':>59}"
    else:
        charts = (f"{row['charts']} chart{'s' if row['charts'] > 1 else ' '} drawn {row['charts_drawn_ms']:6,} ms vs "
                  f"{row['one_chart_drawn_ms']:6,} ms: {row['chart_ratio']:4.2f}x (CPU {row['chart_cpu_ratio']:4.2f}x)")
    return (f"  {row['page']:<18} {charts} | rerun ({row['widget']}) p50 {row['rerun_p50_ms']:4} ms vs floor "
            f"{row['floor_rerun_p50_ms']:4} ms: {row['rerun_ratio']:4.2f}x (CPU {row['rerun_cpu_ms']:.0f} vs "
            f"{row['floor_rerun_cpu_ms']:.0f} ms: {row['rerun_cpu_ratio']:4.2f}x; p95 {row['rerun_p95_ms']} vs "
            f"{row['floor_rerun_p95_ms']} ms)")
