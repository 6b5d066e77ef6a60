"""Load: concurrent browser sessions changing inputs against one server, and bounded caches.

The short version runs in every suite: 5 sessions x 15 s on the session's
server (``tests/conftest.py``), each in its own tab (own websocket, own Streamlit session) on one page
(pages in turn, starting a second apart), changing one input two seconds
after the previous rerun settled (:func:`tests.e2e_helpers.run_load`).
The full version is 20 sessions x 60 s: ``python scripts/load_test.py`` (its
own fresh server), or this test with ``LOAD_SESSIONS=20 LOAD_DURATION_S=60``.

A second short run drives 8 sessions x 5 s over Streamlit's websocket protocol
without browsers (:mod:`tests.ws_load`), rerunning back to back: the server's
own latency; the full version is ``python scripts/server_load.py``.

Checked: no errors (no exception or error on any page, every rerun settled),
every session made progress, and the server's memory (RSS from
``/proc/<pid>/status``) stayed under :data:`RSS_LIMIT_BYTES`. Rerun latency
p50/p95 and RSS start/peak/end are reported in the terminal summary, never
asserted. Only loopback traffic; each session's loop is bounded in time and
in count.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

from tests.e2e_helpers import run_load
from tests.ws_load import run_server_load

ROOT = Path(__file__).resolve().parents[1]
SESSIONS = int(os.environ.get("LOAD_SESSIONS", "5"))
DURATION_S = float(os.environ.get("LOAD_DURATION_S", "15"))
RSS_LIMIT_BYTES = int(float(os.environ.get("LOAD_RSS_LIMIT_GIB", "2")) * (1 << 30))
"""Server memory budget under load: 2 GiB, under the memory a small hosted instance gives one app."""

CACHE_DECORATORS = {"cache_data", "cache_resource"}


def _ui_sources() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]


def _cache_decorators(path: Path):
    """(function name, line, keyword names) of every ``st.cache_data``/``st.cache_resource`` decorator."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
            if name in CACHE_DECORATORS:
                keywords = {k.arg for k in deco.keywords} if isinstance(deco, ast.Call) else set()
                yield node.name, node.lineno, keywords


def test_every_streamlit_cache_has_max_entries():
    found = [(path.relative_to(ROOT), name, line, keywords)
             for path in _ui_sources() for name, line, keywords in _cache_decorators(path)]
    assert found, "the catalog loaders are cached"
    unbounded = [f"{path}:{line} {name}" for path, name, line, keywords in found if "max_entries" not in keywords]
    assert not unbounded, f"caches without max_entries grow with every distinct input: {unbounded}"


@pytest.mark.browser
def test_concurrent_sessions_changing_inputs(streamlit_server, chromium_browser, report_figures):
    # chromium_browser only applies the skip/fail rule; run_load drives its own Chromium (async API).
    report = run_load(streamlit_server.base_url, streamlit_server.pid, sessions=SESSIONS, duration_s=DURATION_S)
    figures = report.summary()
    report_figures.append(
        f"load {SESSIONS} sessions x {DURATION_S:g} s: {figures['reruns']} reruns, {figures['errors']} errors, "
        f"rerun p50 {figures.get('rerun_p50_ms')} ms p95 {figures.get('rerun_p95_ms')} ms, first page p50 "
        f"{figures.get('first_page_p50_ms')} ms, server RSS start {figures['rss_start_mib']} MiB peak "
        f"{figures['rss_peak_mib']} MiB end {figures['rss_end_of_load_mib']} MiB after {figures['rss_after_mib']} MiB, "
        f"server CPU {figures['server_cpu_s']} s in {figures['wall_s']} s, machine busy "
        f"{figures['machine_busy_cores']} of {figures['machine_cores']} cores")
    print(figures)
    assert not report.errors, report.errors
    assert len(report.changes_per_session) == SESSIONS
    assert min(report.changes_per_session) >= 1, f"a session made no change: {report.changes_per_session}"
    assert max(r for _, r in report.rss_samples) < RSS_LIMIT_BYTES, figures
    assert streamlit_server.healthy(), "the server still answers its health check"


WS_SESSIONS = int(os.environ.get("WS_LOAD_SESSIONS", "8"))
WS_DURATION_S = float(os.environ.get("WS_LOAD_DURATION_S", "5"))


def test_sessions_over_the_websocket_protocol_back_to_back(streamlit_server, report_figures):
    # No browser: each session sends the BackMsgs a tab would and reruns as soon as the last one finished
    # (tests/ws_load.py), so this is the server's own latency under the heaviest load a session makes.
    report = run_server_load(streamlit_server.base_url, streamlit_server.pid, sessions=WS_SESSIONS,
                             duration_s=WS_DURATION_S)
    figures = report.summary()
    report_figures.append(
        f"server load {WS_SESSIONS} websocket sessions x {WS_DURATION_S:g} s back to back: {figures['reruns']} "
        f"reruns, {figures['errors']} errors, rerun p50 {figures.get('rerun_p50_ms')} ms p95 "
        f"{figures.get('rerun_p95_ms')} ms, server busy {figures['server_busy_cores']} cores, RSS peak "
        f"{figures.get('rss_peak_mib')} MiB")
    assert not report.errors, report.errors
    assert len(report.first_page_ms) == WS_SESSIONS, "every session got its first page"
    assert len(report.rerun_ms) >= WS_SESSIONS, figures
    assert max(report.rss_samples) < RSS_LIMIT_BYTES, figures
    assert streamlit_server.healthy()
