"""Real-browser helpers shared by the end-to-end and load tests and the perf/load scripts.

* :class:`StreamlitServer`: ``python -m streamlit run app.py`` on a free
  127.0.0.1 port, in its own process group, stopped by its pid; RSS read from
  ``/proc/<pid>/status``.
* :func:`new_context`: a headless-Chromium browser context (one Streamlit
  session) with a small observer injected before the page's own scripts.
* :func:`wait_settled`: the settle signal. Streamlit publishes its state on
  the root element (``data-test-connection-state`` and
  ``data-test-script-state`` on ``[data-testid="stApp"]``, the signal its own
  e2e tests use). The observer notes, on the page clock
  (``performance.now()``, ms since navigation start), when the page last
  became *idle* (``CONNECTED`` + ``notRunning`` + no ``stSkeleton``
  placeholder) and when the last websocket message from the server arrived:
  a rerun that finishes within one React render never flips the script-state
  attribute, but its messages still arrive. A page is settled once it is idle
  and no message has come for :data:`QUIET_MS`; the time reported is when
  that began, so the quiet wait is not counted. The observer also notes the
  last click or key press, so a rerun's latency is "input event -> settled",
  measured inside the page.
* Widget helpers address widgets by key: Streamlit gives every keyed
  widget's container the class ``st-key-<key>``; :data:`PAGES` names the
  input each page's rerun benchmark and load session changes.
* :func:`run_load`: many sessions at once (Playwright async API, one
  Chromium), with the server's RSS sampled throughout.

Only loopback traffic: the server listens on 127.0.0.1 and Chromium runs
with background networking, component updates and sync turned off.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
VIEWPORT = {"width": 1280, "height": 900}
SETTLE_TIMEOUT_S = float(os.environ.get("E2E_SETTLE_TIMEOUT_S", "60"))
"""Longest wait for one page load or rerun to settle [s] (a cold server imports transformers)."""
QUIET_MS = 400.0
"""How long the idle state must hold before a page counts as settled [ms]."""
SERVER_START_TIMEOUT_S = 60.0


# --------------------------------------------------------------------------
# Availability
# --------------------------------------------------------------------------
def in_ci() -> bool:
    """True when the ``CI`` environment variable is set to something other than empty/0/false."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def browser_missing() -> str | None:
    """Why the real-browser tests cannot run here (missing playwright or Chromium), or None."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements-dev.txt)"
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set $CHROMIUM)"
    return None


# --------------------------------------------------------------------------
# Server
# --------------------------------------------------------------------------
def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pdeathsig_setter():
    """A function for ``preexec_fn`` that asks Linux to SIGTERM the child when the test process dies.

    prctl is looked up here, in the parent, so the child between fork and exec
    only makes one system call (no import, no allocation: safe with threads).
    """
    try:
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None
    return lambda: prctl(1, signal.SIGTERM)  # 1 = PR_SET_PDEATHSIG


_TERM_WHEN_PARENT_DIES = _pdeathsig_setter()


def add_load_arguments(parser, *, ramp_s: float, think_s: float) -> None:
    """The flags both load scripts take: ``--sessions --duration --ramp --think --json``."""
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of changes per session")
    parser.add_argument("--ramp", type=float, default=ramp_s, help="seconds between two sessions' starts")
    parser.add_argument("--think", type=float, default=think_s, help="seconds a session waits after each result")
    parser.add_argument("--json", type=Path, help="also write the figures here")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time process ``pid`` has used so far [s], from ``/proc/<pid>/stat``."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields_ = stat.read().rsplit(")", 1)[1].split()
    return (int(fields_[11]) + int(fields_[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime (fields 14, 15)


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, summed over cores, from ``/proc/stat``.

    Busy is user + nice + system + irq + softirq + steal; total adds idle and iowait.
    The difference of two readings over a run says how many cores were busy.
    """
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(v) for v in stat.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = ticks
    hz = os.sysconf("SC_CLK_TCK")
    busy = user + nice + system + irq + softirq + steal
    return busy / hz, (busy + idle + iowait) / hz


def rss_bytes(pid: int) -> int:
    """Resident set size of process ``pid`` [bytes], from ``/proc/<pid>/status`` (VmRSS, in KiB)."""
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise ValueError(f"no VmRSS line for pid {pid}")


class StreamlitServer:
    """``python -m streamlit run app.py --server.headless true`` on a free loopback port.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. The
    process gets its own session (process group id = its pid); :meth:`stop`
    signals that pid's group only, so nothing else is touched.
    """

    def __init__(self, log_path: Path, *, entry: str = "app.py", extra_args: Sequence[str] = (),
                 app_dir: Path = ROOT) -> None:
        self.log_path = Path(log_path)
        self.entry = entry
        self.app_dir = Path(app_dir)
        self.extra_args = tuple(extra_args)
        self.port = 0
        self.proc: subprocess.Popen | None = None
        self._log = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError("server not started")
        return self.proc.pid

    def start(self, timeout_s: float = SERVER_START_TIMEOUT_S) -> StreamlitServer:
        """Start the server and wait until ``/_stcore/health`` answers ``ok``.

        Raises:
            RuntimeError: the process exited or stayed unhealthy for ``timeout_s``.
        """
        self.port = free_port()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        cmd = [sys.executable, "-m", "streamlit", "run", self.entry, "--server.headless", "true",
               "--server.port", str(self.port), "--server.address", "127.0.0.1",
               "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *self.extra_args]
        self.proc = subprocess.Popen(cmd, cwd=self.app_dir, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True,
                                     preexec_fn=_TERM_WHEN_PARENT_DIES)  # noqa: PLW1509 - one syscall
        deadline = time.monotonic() + timeout_s
        while not self.healthy():
            if self.proc.poll() is not None:
                self.stop()
                raise RuntimeError(f"streamlit exited with code {self.proc.returncode}; log:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout_s:.0f} s; log:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.2)
        return self

    def healthy(self) -> bool:
        """True when ``GET /_stcore/health`` answers 200 ``ok``."""
        try:
            with urllib.request.urlopen(self.base_url + "/_stcore/health", timeout=2) as response:
                return response.status == 200 and response.read().decode().strip() == "ok"
        except OSError:
            return False

    def rss_bytes(self) -> int:
        """The server process's resident memory [bytes]."""
        return rss_bytes(self.pid)

    def stop(self) -> None:
        """SIGTERM the server's process group (pgid = its pid), then SIGKILL if it lingers."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, sig)
                try:
                    proc.wait(timeout=wait_s)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self._log is not None:
            self._log.close()
            self._log = None

    def log_tail(self, num_chars: int = 4000) -> str:
        """The end of the server log."""
        try:
            return self.log_path.read_bytes()[-num_chars:].decode(errors="replace")
        except OSError:
            return ""

    def __enter__(self) -> StreamlitServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@contextlib.contextmanager
def fresh_server(prefix: str, app_dir: Path):
    """A fresh :class:`StreamlitServer` for a script (``scripts/attack.py``, ``server_load.py``, ``soak.py``),
    its log in a temporary folder named ``prefix...``, stopped by its pid at the end.

    Yields:
        The started server, or None when it did not start (the reason is printed on stderr; the
        scripts then exit 2).
    """
    import tempfile  # noqa: PLC0415

    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        server = StreamlitServer(Path(tmp) / "server.log", app_dir=app_dir)
        try:
            server.start()
        except RuntimeError as exc:
            print(f"server did not start: {exc}", file=sys.stderr)
            yield None
            return
        try:
            yield server
        finally:
            server.stop()


# --------------------------------------------------------------------------
# Browser
# --------------------------------------------------------------------------
OBSERVER_JS = r"""
(() => {
  if (window.top !== window || window.__e2e) return;
  const e2e = window.__e2e = {idleSince: null, inputAt: null, lastMessageAt: null, messages: 0};
  // Every message the server sends (deltas, script started/finished) arrives on the app's websocket.
  // A fast rerun can flip the script state running -> notRunning inside one React render, so the
  // attribute never changes; the messages still show that it ran, and when its last message came.
  const NativeWebSocket = window.WebSocket;
  window.WebSocket = class extends NativeWebSocket {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', () => { e2e.lastMessageAt = performance.now(); e2e.messages += 1; });
    }
  };
  const idleNow = () => {
    const app = document.querySelector('[data-testid="stApp"]');
    return !!app && app.getAttribute('data-test-connection-state') === 'CONNECTED'
      && app.getAttribute('data-test-script-state') === 'notRunning'
      && !document.querySelector('[data-testid="stSkeleton"]');
  };
  new MutationObserver((records) => {
    const idle = idleNow();
    if (!idle) e2e.idleSince = null;
    else if (e2e.idleSince === null || records.some((r) => r.type === 'attributes')) e2e.idleSince = performance.now();
  }).observe(document, {subtree: true, childList: true, attributes: true,
                        attributeFilter: ['data-test-script-state', 'data-test-connection-state']});
  for (const type of ['click', 'keydown']) {
    document.addEventListener(type, () => { e2e.inputAt = performance.now(); }, true);
  }
})();
"""

STATE_JS = """() => {
  const e = window.__e2e || {};
  const app = document.querySelector('[data-testid="stApp"]');
  return {now: performance.now(), idleSince: e.idleSince ?? null, lastMessageAt: e.lastMessageAt ?? null,
          inputAt: e.inputAt ?? null, title: !!document.querySelector('h1'),
          connection: app && app.getAttribute('data-test-connection-state'),
          script: app && app.getAttribute('data-test-script-state'),
          skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length};
}"""


def launch_browser(playwright):
    """Headless Debian Chromium through ``executable_path`` (no ``playwright install``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS))


def new_context(browser, **kwargs):
    """A fresh browser context (cookies, storage and Streamlit session of its own) with the observer."""
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True, **kwargs)
    context.add_init_script(OBSERVER_JS)
    return context


def wait_settled(page, *, after_ms: float | None = None, quiet_ms: float = QUIET_MS,
                 timeout_s: float = SETTLE_TIMEOUT_S) -> float:
    """Wait until the page is idle and quiet, and return when that began.

    Idle: connected, script not running, no skeleton, a title drawn. Quiet:
    idle and no websocket message from the server for ``quiet_ms``.

    Args:
        page: A page of a context from :func:`new_context`.
        after_ms: A rerun must have sent its messages after this page-clock
            time (the moment of a widget change), so the idle state from
            before the change is not mistaken for the new one.

    Returns:
        Page-clock time [ms] when the settled state began: the later of the
        last server message and the start of the idle spell.

    Raises:
        AssertionError: not settled within ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    state: dict = {}
    while time.monotonic() < deadline:
        state = page.evaluate(STATE_JS)
        idle, last = state["idleSince"], state["lastMessageAt"]
        if idle is not None and last is not None and state["title"] and (after_ms is None or last > after_ms):
            since = max(idle, last)
            if state["now"] - since >= quiet_ms:
                return since
        time.sleep(0.03)
    raise AssertionError(f"page {page.url} did not settle within {timeout_s:.0f} s: {state}")


def open_settled(page, url: str, **kwargs) -> float:
    """Navigate to ``url`` and wait until it settles; return ms from navigation start to settled."""
    page.goto(url, wait_until="commit")
    return wait_settled(page, **kwargs)


def last_input_ms(page) -> float:
    """Page-clock time [ms] of the last click or key press."""
    value = page.evaluate("() => window.__e2e.inputAt")
    if value is None:
        raise AssertionError("no click or key press was recorded on the page")
    return value


def rerun_latency_ms(page, before_ms: float, **kwargs) -> float:
    """After an input made at or after page time ``before_ms``: ms from that input event to settled."""
    settled = wait_settled(page, after_ms=before_ms, **kwargs)
    return settled - last_input_ms(page)


def page_now_ms(page) -> float:
    return page.evaluate("performance.now()")


def key_box(page, key: str):
    """The container of the widget with this key."""
    return page.locator(f".st-key-{key}")


def set_number(page, key: str, value: float) -> float:
    """Type ``value`` into the number input ``key`` and press Enter; return the page time before typing."""
    field = key_box(page, key).locator("input")
    t0 = page_now_ms(page)
    field.fill(str(value))
    field.press("Enter")
    return t0


def step_number(page, key: str, up: bool = True) -> float:
    """Click the +/- button of the number input ``key``; return the page time before the click."""
    button = key_box(page, key).locator(
        '[data-testid="stNumberInputStepUp"]' if up else '[data-testid="stNumberInputStepDown"]')
    t0 = page_now_ms(page)
    button.click()
    return t0


PICKER_KEYS = ("model", "models", "gpu", "gpus")
"""Widgets that show a catalog name for an id (``ui.inputs.picker``)."""


@functools.lru_cache(maxsize=1)
def picker_labels() -> dict[str, str]:
    """Catalog id -> the label the model and GPU pickers show (``ui.catalog.model_label``, GPU names)."""
    from model_catalog import get_model_entry, model_ids
    from model_catalog.gpus import load_gpus
    from ui.catalog import model_label
    from ui.picker_search import base_first_labels, quantized_bases

    labels = {g.id: g.name for g in load_gpus().values()}
    entries = {model_id: get_model_entry(model_id) for model_id in model_ids()}
    models = {model_id: model_label(e.display_name, model_id, e.aliases) for model_id, e in entries.items()}
    bases = quantized_bases({model_id: tuple(e.aliases) for model_id, e in entries.items()})
    names = {variant: entries[base].display_name for variant, base in bases.items()}
    return labels | base_first_labels(models, names)  # quantized checkpoints name their base (ui.inputs)


def choose(page, key: str, option: str) -> float:
    """Pick ``option`` (exact text, or a catalog id in a model/GPU picker) in the selectbox ``key``;
    return the page time before the first click."""
    if key in PICKER_KEYS:
        option = picker_labels().get(option, option)
    field = key_box(page, key).locator("input")
    t0 = page_now_ms(page)
    field.click()
    field.fill(option)
    page.get_by_role("option", name=option, exact=True).click()
    return t0


COLLECT_JS = r"""() => {
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  const text = (el) => (el ? el.innerText.trim() : '');
  const widgets = {};
  for (const box of all(document, '[class*="st-key-"]')) {
    const key = Array.from(box.classList).find((c) => c.startsWith('st-key-')).slice(7);
    const input = box.querySelector('input:not([type="file"]), textarea');
    if (box.querySelector('[data-testid="stMultiSelect"]')) {
      // Selected options are tags; the title holds the full (untruncated) text.
      const tags = all(box, '.react-aria-ComboBox [data-tag] [title]');
      widgets[key] = tags.map((t) => t.getAttribute('title'));
    } else if (input && input.type === 'checkbox') widgets[key] = input.checked;
    else if (input) widgets[key] = input.value;
  }
  return {
    exceptions: all(document, '[data-testid="stException"]').map(text),
    metrics: Object.fromEntries(all(document, '[data-testid="stMetric"]').map((m) => [
      text(m.querySelector('[data-testid="stMetricLabel"]')), text(m.querySelector('[data-testid="stMetricValue"]'))])),
    alerts: all(document, '[data-testid="stAlert"]').map((a) => {
      const kind = a.querySelector('[data-testid^="stAlertContent"]');
      return {kind: kind ? kind.getAttribute('data-testid').slice(14).toLowerCase() : '', text: text(a)};
    }),
    title: text(document.querySelector('h1')),
    widgets,
    charts: all(document, '[data-testid="stPlotlyChart"]').map((el) => {
      const gd = el.querySelector('.js-plotly-plot');
      if (!gd || !gd.data) return {drawn: false, traces: 0, points: 0};
      const points = gd.data.reduce((n, t) => n + ((t.x || t.y || []).length || 0), 0);
      return {drawn: !!gd.querySelector('.main-svg'), traces: gd.data.length, points};
    }),
    url: location.href,
  };
}"""


def collect(page) -> dict:
    """What the page shows.

    Returns:
        ``exceptions`` (texts of ``st.exception`` blocks), ``metrics`` (label ->
        value text), ``alerts`` (``{"kind": "error"|"warning"|"info"|"success",
        "text"}``), ``title``, ``widgets`` (key -> value as shown: text for inputs
        and selectboxes, a list for multiselects; the model and GPU pickers as ids), ``charts`` (plotly: drawn,
        traces, points) and ``url``.
    """
    shown = page.evaluate(COLLECT_JS)
    ids = {label: item for item, label in picker_labels().items()}
    for key in PICKER_KEYS:  # the pickers show names: report the ids they stand for
        value = shown["widgets"].get(key)
        if isinstance(value, list):
            shown["widgets"][key] = [ids.get(v, v) for v in value]
        elif value is not None:
            shown["widgets"][key] = ids.get(value, value)
    return shown


def query(**params) -> str:
    """A query string; list values become repeated keys (``?models=a&models=b``)."""
    parts = [f"{key}={quote(str(item), safe='/')}"
             for key, value in params.items() for item in (value if isinstance(value, list) else [value])]
    return "?" + "&".join(parts)


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("no values")
    pos = (len(ordered) - 1) * q / 100
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@contextlib.contextmanager
def chromium() -> Iterator:
    """A launched headless Chromium (closed on exit)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_browser(pw)
        try:
            yield browser
        finally:
            browser.close()


PAGES: dict[str, tuple[str, str]] = {
    "/": ("app.py", "batch_size"),
    "/Memory_curves": ("pages/1_Memory_curves.py", "batch_size"),
    "/GQA_savings": ("pages/2_GQA_savings.py", "batch_size"),
    "/Concurrency": ("pages/3_Concurrency.py", "gpu_memory_utilization"),
    "/Catalog": ("pages/4_Catalog.py", "search"),
    "/Engine": ("pages/5_Engine.py", "num_gpus"),
    "/Allocation": ("pages/6_Allocation.py", "mean_len"),  # "users" sits in a folded expander
    "/Find_a_GPU_setup": ("pages/7_Find_a_GPU_setup.py", "users"),
    "/Disaggregation": ("pages/8_Disaggregation.py", "users"),
}
"""URL path -> (script file, the widget key a rerun benchmark or load session changes)."""

SEARCH_TERMS = ("llama", "qwen", "h100", "mi300")
"""What :func:`change_widget` types into a text input, in turn."""


def change_widget(page, key: str, turn: int) -> float:
    """One input change on ``key``: +/- step on a number input (alternating), else a search term.

    Returns:
        The page time [ms] just before the change (pass to :func:`rerun_latency_ms`).
    """
    box = key_box(page, key)
    if box.locator('[data-testid="stNumberInputStepUp"]').count():
        return step_number(page, key, up=turn % 2 == 0)
    field = box.locator("input")
    t0 = page_now_ms(page)
    field.fill(SEARCH_TERMS[turn % len(SEARCH_TERMS)])
    field.press("Enter")
    return t0


# --------------------------------------------------------------------------
# Load: many browser sessions at once (Playwright async API, one Chromium)
# --------------------------------------------------------------------------
LOAD_POLL_S = 0.2
"""Poll interval of the load sessions [s]; settle times come from the page clock, so it only sets the pace."""


@dataclass(kw_only=True)
class RunClock:
    """Wall time and CPU of a load run, filled by :meth:`measure`.

    Attributes:
        wall_s: Measured length of the run [s].
        server_cpu_s: CPU time the server process used during the run [s].
        machine_cpu_s: CPU time every process on the machine used during the run
            (server, browsers, this test) [s]; over ``wall_s`` it is the busy cores.
    """

    wall_s: float = 0.0
    server_cpu_s: float = 0.0
    machine_cpu_s: float = 0.0

    @contextlib.contextmanager
    def measure(self, server_pid: int) -> Iterator[None]:
        """Time the ``with`` body: wall clock, the server's CPU and the whole machine's CPU."""
        start, server0, machine0 = time.monotonic(), cpu_seconds(server_pid), machine_cpu_seconds()[0]
        try:
            yield
        finally:
            self.wall_s = time.monotonic() - start
            self.server_cpu_s = cpu_seconds(server_pid) - server0
            self.machine_cpu_s = machine_cpu_seconds()[0] - machine0


@dataclass(kw_only=True)
class LoadRun(RunClock):
    """What every load run records (the browser one and the websocket one).

    Attributes:
        sessions: Concurrent sessions.
        duration_s: Planned seconds of widget changes per session.
        first_page_ms: Each session's first page [ms].
        rerun_ms: Every rerun after a widget change [ms].
        errors: One line per problem (exception on a page, rerun never settled, ...).

    Wall time and CPU: :class:`RunClock`.
    """

    sessions: int
    duration_s: float
    first_page_ms: list[float] = field(default_factory=list)
    rerun_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class LoadReport(LoadRun):
    """What a browser load run saw (:class:`LoadRun`; first pages navigation -> settled, reruns
    input -> settled, wall time with page loads included).

    Attributes:
        changes_per_session: Widget changes each session made.
        rss_samples: (seconds since start, server RSS [bytes]) every :attr:`rss_every_s`.
        rss_after_bytes: Server RSS after every session closed and a short pause [bytes].
    """

    changes_per_session: list[int] = field(default_factory=list)
    rss_samples: list[tuple[float, int]] = field(default_factory=list)
    rss_after_bytes: int = 0

    def summary(self) -> dict:
        """Figures for printing and JSON."""
        mib = 1 << 20
        rss = [r for _, r in self.rss_samples]
        out = {"sessions": self.sessions, "duration_s": self.duration_s, "wall_s": round(self.wall_s, 1),
               "reruns": len(self.rerun_ms), "errors": len(self.errors),
               "changes_per_session_min": min(self.changes_per_session, default=0),
               "changes_per_session_max": max(self.changes_per_session, default=0),
               "server_cpu_s": round(self.server_cpu_s, 1),
               "server_cpu_share": round(self.server_cpu_s / self.wall_s, 2) if self.wall_s else None,
               "machine_cpu_s": round(self.machine_cpu_s, 1),
               "machine_busy_cores": round(self.machine_cpu_s / self.wall_s, 2) if self.wall_s else None,
               "machine_cores": os.cpu_count()}
        if self.rerun_ms:
            out |= {"rerun_p50_ms": round(percentile(self.rerun_ms, 50)),
                    "rerun_p95_ms": round(percentile(self.rerun_ms, 95)), "rerun_max_ms": round(max(self.rerun_ms))}
        if self.first_page_ms:
            out |= {"first_page_p50_ms": round(percentile(self.first_page_ms, 50)),
                    "first_page_max_ms": round(max(self.first_page_ms))}
        if rss:
            out |= {"rss_start_mib": round(rss[0] / mib), "rss_peak_mib": round(max(rss) / mib),
                    "rss_end_of_load_mib": round(rss[-1] / mib), "rss_after_mib": round(self.rss_after_bytes / mib)}
        return out


async def _settle_async(page, after_ms: float | None, timeout_s: float) -> float:
    """:func:`wait_settled` for the async API (same page-clock rule)."""
    deadline = time.monotonic() + timeout_s
    state: dict = {}
    while time.monotonic() < deadline:
        state = await page.evaluate(STATE_JS)
        idle, last = state["idleSince"], state["lastMessageAt"]
        if idle is not None and last is not None and state["title"] and (after_ms is None or last > after_ms):
            since = max(idle, last)
            if state["now"] - since >= QUIET_MS:
                return since
        await asyncio.sleep(LOAD_POLL_S)
    raise AssertionError(f"{page.url} did not settle within {timeout_s:.0f} s: {state}")


async def _change_async(page, key: str, turn: int) -> float:
    """:func:`change_widget` for the async API."""
    box = page.locator(f".st-key-{key}")
    t0 = await page.evaluate("performance.now()")
    step = box.locator('[data-testid="stNumberInputStepUp"]' if turn % 2 == 0 else
                       '[data-testid="stNumberInputStepDown"]')
    if await step.count():
        await step.click()
    else:
        field_ = box.locator("input")
        await field_.fill(SEARCH_TERMS[turn % len(SEARCH_TERMS)])
        await field_.press("Enter")
    return t0


async def _load_session(context, base_url: str, path: str, duration_s: float, report: LoadReport,
                        max_changes: int, settle_timeout_s: float, delay_s: float, think_s: float) -> None:
    """One user (a tab: its own websocket, so its own Streamlit session): after ``delay_s``, open
    ``path``, then change its widget for ``duration_s`` (at most ``max_changes`` times), pausing
    ``think_s`` after each settled rerun."""
    _, key = PAGES[path]
    await asyncio.sleep(delay_s)
    changes = 0
    page = None
    try:
        page = await context.new_page()
        await page.goto(base_url + path, wait_until="commit")
        report.first_page_ms.append(await _settle_async(page, None, 3 * settle_timeout_s))
        deadline = time.monotonic() + duration_s
        while time.monotonic() < deadline and changes < max_changes:
            t0 = await _change_async(page, key, changes)
            settled = await _settle_async(page, t0, settle_timeout_s)
            report.rerun_ms.append(settled - await page.evaluate("() => window.__e2e.inputAt"))
            changes += 1
            await asyncio.sleep(think_s)
        shown = await page.evaluate(COLLECT_JS)
        report.errors += [f"{path}: exception on the page: {e[:300]}" for e in shown["exceptions"]]
        report.errors += [f"{path}: error shown: {a['text'][:300]}" for a in shown["alerts"] if a["kind"] == "error"]
    except Exception as exc:  # noqa: BLE001 - every failure is a reported error, the run goes on
        report.errors.append(f"{path}: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    finally:
        report.changes_per_session.append(changes)
        if page is not None:
            await page.close()


async def _sample_rss(pid: int, report: LoadReport, start: float, stop: asyncio.Event, every_s: float) -> None:
    while True:
        report.rss_samples.append((time.monotonic() - start, rss_bytes(pid)))
        try:
            await asyncio.wait_for(stop.wait(), timeout=every_s)
            return
        except TimeoutError:
            continue


async def _run_load(base_url: str, server_pid: int, sessions: int, duration_s: float, *, max_changes: int,
                    settle_timeout_s: float, rss_every_s: float, ramp_s: float, think_s: float) -> LoadReport:
    from playwright.async_api import async_playwright

    report = LoadReport(sessions=sessions, duration_s=duration_s)
    paths = list(PAGES)
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS))
        # One profile for all tabs: they share the HTTP and compiled-code caches, so the test machine
        # parses Streamlit's JavaScript bundle about once instead of once per user (each real user's
        # own machine does that for them); sessions stay separate (one websocket per tab).
        context = await browser.new_context(viewport=VIEWPORT)
        await context.add_init_script(OBSERVER_JS)
        start = time.monotonic()
        stop = asyncio.Event()
        sampler = asyncio.create_task(_sample_rss(server_pid, report, start, stop, rss_every_s))
        try:
            with report.measure(server_pid):
                await asyncio.gather(*(_load_session(context, base_url, paths[i % len(paths)], duration_s, report,
                                                     max_changes, settle_timeout_s, i * ramp_s, think_s)
                                       for i in range(sessions)))
        finally:
            stop.set()
            await sampler
            await browser.close()
    await asyncio.sleep(2.0)  # let the server drop the closed sessions
    report.rss_after_bytes = rss_bytes(server_pid)
    return report


def run_load(base_url: str, server_pid: int, *, sessions: int, duration_s: float, max_changes: int = 2000,
             settle_timeout_s: float = SETTLE_TIMEOUT_S, rss_every_s: float = 0.5, ramp_s: float = 1.0,
             think_s: float = 2.0) -> LoadReport:
    """``sessions`` browser sessions at once, each on one page (the pages in turn), changing one input.

    Session ``i`` starts ``i * ramp_s`` seconds in (users arrive, they do not
    all load the JavaScript bundle in the same second), opens its page in its
    own tab (its own websocket, so its own Streamlit session), then changes the page's widget (:data:`PAGES`)
    ``think_s`` seconds after the previous rerun settled (someone reading the
    result), for ``duration_s`` after its page loaded or ``max_changes``
    changes; every rerun wait is bounded by ``settle_timeout_s`` (a first page
    by three times that). The browsers share the machine with the server, so
    on a small machine their rendering is part of the measured latency. The server's RSS is sampled from
    ``/proc/<server_pid>/status`` throughout. Only ``base_url`` (loopback) is
    contacted.
    """
    run = _run_load(base_url, server_pid, sessions, duration_s, max_changes=max_changes,
                    settle_timeout_s=settle_timeout_s, rss_every_s=rss_every_s, ramp_s=ramp_s, think_s=think_s)
    # A thread of its own: Playwright's sync API (other tests' browser) keeps an event loop on this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run).result()
