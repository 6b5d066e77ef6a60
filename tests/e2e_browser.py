"""Real-browser helpers: headless Chromium, the settle signal, widgets by key, what a page shows.

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

Chromium runs with background networking, component updates and sync turned off.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from collections.abc import Iterator, Sequence
from urllib.parse import quote

CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync")
VIEWPORT = {"width": 1280, "height": 900}
SETTLE_TIMEOUT_S = float(os.environ.get("E2E_SETTLE_TIMEOUT_S", "60"))
"""Longest wait for one page load or rerun to settle [s] (a cold server imports transformers)."""
QUIET_MS = 400.0
"""How long the idle state must hold before a page counts as settled [ms]."""


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
    metrics: Object.fromEntries(all(document, '[data-tile]').map((m) => [
      m.getAttribute('data-label'), m.getAttribute('data-value')])),
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
