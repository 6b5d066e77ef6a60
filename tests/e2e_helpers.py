"""Real-browser helpers shared by the end-to-end and load tests and the perf/load scripts.

Every helper is importable from here (``from tests.e2e_helpers import ...``); each lives in the
module of its concern:

* :mod:`tests.e2e_server`: :class:`StreamlitServer` (``python -m streamlit run app.py`` on a free
  127.0.0.1 port, in its own process group, stopped by its pid), :func:`fresh_server` for the
  scripts, and what a run costs (:func:`rss_bytes`, :func:`cpu_seconds`, :func:`machine_cpu_seconds`).
* :mod:`tests.e2e_browser`: headless Chromium (:func:`new_context`, :func:`chromium`), the settle
  signal (:func:`wait_settled`, :func:`open_settled`, :func:`rerun_latency_ms`), widget helpers that
  address widgets by key (:func:`set_number`, :func:`choose`, :func:`change_widget`, :data:`PAGES`),
  what a page shows (:func:`collect`), and :func:`in_ci` / :func:`browser_missing`.
* :mod:`tests.e2e_load`: :func:`run_load`, many sessions at once (Playwright async API, one
  Chromium), with the server's RSS sampled throughout; :func:`add_load_arguments` for the scripts.

Only loopback traffic: the server listens on 127.0.0.1 and Chromium runs
with background networking, component updates and sync turned off.
"""

from __future__ import annotations

from tests.e2e_browser import (  # noqa: F401  (re-exported: the tests and scripts import them from here)
    CHROMIUM,
    CHROMIUM_ARGS,
    COLLECT_JS,
    OBSERVER_JS,
    PAGES,
    PICKER_KEYS,
    QUIET_MS,
    SEARCH_TERMS,
    SETTLE_TIMEOUT_S,
    STATE_JS,
    VIEWPORT,
    browser_missing,
    change_widget,
    choose,
    chromium,
    collect,
    in_ci,
    key_box,
    last_input_ms,
    launch_browser,
    new_context,
    open_settled,
    page_now_ms,
    percentile,
    picker_labels,
    query,
    rerun_latency_ms,
    set_number,
    step_number,
    wait_settled,
)
from tests.e2e_load import LOAD_POLL_S, LoadReport, LoadRun, RunClock, add_load_arguments, run_load  # noqa: F401
from tests.e2e_server import (  # noqa: F401
    ROOT,
    SERVER_START_TIMEOUT_S,
    StreamlitServer,
    cpu_seconds,
    free_port,
    fresh_server,
    machine_cpu_seconds,
    rss_bytes,
)
