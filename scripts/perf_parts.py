"""What Streamlit's own elements add to a one-chart page's "charts drawn" time (a benchmark, never a test).

Issue 27 ("Speed, decided") judges each chart page against a page with one small Plotly chart and nothing
else (:mod:`perf_floor`). A chart page also has a sidebar, tables and launch commands, and Streamlit loads
the code of some elements lazily, as separate script chunks parsed on the browser's main thread while the
Plotly chunk is parsed: ``st.dataframe`` (the data grid and Arrow formatting chunks) and ``st.code`` (the
syntax highlighter chunk). This script measures, side by side on one server, the one-chart page with one
more element each, so the part of a page's ratio that is Streamlit's own cost is known:

    python scripts/perf_parts.py [--loads 7]

Prints, per variant, the median "charts drawn" time and main-thread CPU over the one-chart page's
(the same measurement as :func:`perf_floor.charts_drawn_ms`, loads alternating between the pages).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from perf_floor import charts_drawn_ms  # noqa: E402
from tests.e2e_helpers import StreamlitServer, launch_browser  # noqa: E402

HEAD = '''import pandas as pd
import plotly.graph_objects as go
import streamlit as st

st.title("One chart")
st.plotly_chart(go.Figure(go.Scatter(x=[1, 2, 3, 4], y=[1, 3, 2, 4], mode="lines+markers")), key="one_chart")
'''
TABLE = 'pd.DataFrame({"a": [1, 2, 3], "b": ["x", "y", "z"]})'
VARIANTS = {
    "": "",  # the one-chart page itself (the reference)
    "Plus_dataframe": f"st.dataframe({TABLE}, hide_index=True)\n",
    "Plus_table": f"st.table({TABLE}, hide_index=True)\n",
    "Plus_code": 'st.code("vllm serve m --tensor-parallel-size 2", language="bash")\n',
    "Plus_sidebar": "".join(f'st.sidebar.number_input("n{i}", value={i}, key="n{i}")\n' for i in range(12)),
}
VARIANTS["Plus_sidebar_dataframe_code"] = (VARIANTS["Plus_sidebar"] + VARIANTS["Plus_dataframe"]
                                           + VARIANTS["Plus_code"])  # what a chart page has at the least
"""URL path (without the slash) -> what the page adds after the chart."""


def build(tmp: Path) -> Path:
    """A temporary app: ``app.py`` is the one-chart page, ``pages/`` the variants."""
    (tmp / "pages").mkdir(parents=True)
    for i, (name, extra) in enumerate(VARIANTS.items()):
        target = tmp / "app.py" if not name else tmp / "pages" / f"{i}_{name}.py"
        target.write_text(HEAD + extra, encoding="utf-8")
    return tmp


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--loads", type=int, default=7, help="fresh-context loads per page (the first is dropped)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        root = build(Path(tmp) / "app")
        browser = launch_browser(pw)  # Debian's chromium with the suite's flags
        with StreamlitServer(Path(tmp) / "server.log", app_dir=root) as server:
            wall: dict[str, list[float]] = {name: [] for name in VARIANTS}
            cpu: dict[str, list[float]] = {name: [] for name in VARIANTS}
            for turn in range(args.loads):
                for name in VARIANTS:
                    _, at, used = charts_drawn_ms(browser, f"{server.base_url}/{name}")
                    if turn:  # the first round warms the server's imports and the browser's cache
                        wall[name].append(at)
                        cpu[name].append(used)
        browser.close()
    ref_wall, ref_cpu = statistics.median(wall[""]), statistics.median(cpu[""])
    print(f"one chart: drawn {ref_wall:,.0f} ms, main-thread CPU {ref_cpu:,.0f} ms ({args.loads - 1} loads each)")
    for name in list(VARIANTS)[1:]:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"  {name:<28} drawn {w:6,.0f} ms: {w / ref_wall:4.2f}x   CPU {c:6,.0f} ms: {c / ref_cpu:4.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
