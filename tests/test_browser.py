"""Real-browser checks: every page opened through a deep link on a freshly started server.

Covers what ``AppTest`` cannot: the frontend seeding widgets from the URL,
the URL rewritten after a widget change (so a copied link is the plan), and
plotly charts actually drawn with data. Headless Debian Chromium driven by
Playwright (sync API) through ``executable_path``; no ``playwright install``.

Skipped, with the reason, when Playwright or Chromium is missing. Screenshots
of failing pages go to ``test-artifacts/browser/`` (or ``$BROWSER_ARTIFACTS``).
Run alone with ``pytest -m browser``.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(os.environ.get("BROWSER_ARTIFACTS", ROOT / "test-artifacts" / "browser"))
SETTLE_TIMEOUT_S = 45
QUIET_MS = 500

playwright_api = pytest.importorskip("playwright.sync_api",
                                     reason="playwright is not installed (pip install playwright)")
if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium, or set $CHROMIUM)",
                allow_module_level=True)

pytestmark = pytest.mark.browser

LLAMA2 = "meta-llama/Llama-2-7b-hf"
LLAMA3 = "meta-llama/Meta-Llama-3-8B"


def q(**params) -> str:
    """A query string; list values become repeated keys (``?models=a&models=b``)."""
    parts = []
    for key, value in params.items():
        for item in value if isinstance(value, list) else [value]:
            parts.append(f"{key}={quote(str(item), safe='/')}")
    return "?" + "&".join(parts)


# A sub-page first: on a fresh server the very first request is a deep link.
DEEP_LINKS = [
    ("/Memory_curves" + q(models=[LLAMA2, LLAMA3, "Qwen/Qwen2.5-7B"], gpus=["nvidia-rtx-3090", "nvidia-l40s"],
                          batch_size=8), 1, []),
    # Home: no Plotly chart (its budget bar is HTML, ui/budget_bar.py); the bar's axis title and legend are text
    ("/" + q(model=LLAMA2, gpu="nvidia-rtx-3090", weight_dtype="fp16", context_len=4096), 0,
     ["12.55 GiB", "GiB per GPU (2^30 bytes)", "Free KV budget"]),
    ("/GQA_savings" + q(model="deepseek-ai/DeepSeek-V2-Lite", gpu="nvidia-a100-sxm-80gb", context_len=16384), 3, []),
    ("/Concurrency" + q(model="Qwen/Qwen2.5-7B", gpus=["nvidia-l4", "nvidia-h100-sxm-80gb"], num_gpus=1), 1, []),
    ("/Catalog" + q(search="qwen"), 0, ["qwen", "models. Parameters"]),
    ("/" + q(model="nope", gpu="h100", context_len="inf", batch_size=0), 0,
     ["model=nope", "context_len=inf", "GiB per GPU (2^30 bytes)"]),
    ("/Memory_curves" + q(models=["zzz"], gpus=["nvidia-t4"]), 1, ["models=zzz"]),
]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    """A fresh ``streamlit run app.py`` on a free loopback port, in its own process group."""
    port = _free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    log = open(ARTIFACTS / "server.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false",
         "--server.fileWatcherType", "none"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"streamlit exited with {proc.returncode}; see {ARTIFACTS / 'server.log'}")
            try:
                with urllib.request.urlopen(base + "/_stcore/health", timeout=2) as r:
                    if r.read().decode().strip() == "ok":
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("streamlit did not answer /_stcore/health within 60 s")
            time.sleep(0.25)
        yield base
    finally:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
                proc.wait(timeout=8)
                break
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue
        log.close()


@pytest.fixture(scope="module")
def browser(chromium_browser):
    """The session's Chromium (tests/conftest.py): Playwright's sync API allows one instance per thread."""
    return chromium_browser


@pytest.fixture
def page(browser):
    """A fresh browser context (a new Streamlit session) with a 1280x900 viewport."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    yield context.new_page()
    context.close()


def _screenshot(pg, name: str) -> None:
    path = ARTIFACTS / (re.sub(r"[^A-Za-z0-9._-]+", "_", name)[:120] + ".png")
    try:
        pg.screenshot(path=str(path), full_page=True)
        print(f"screenshot: {path}")
    except Exception:  # noqa: BLE001 - best effort on a failing page
        pass


@contextlib.contextmanager
def shot_on_failure(pg, request):
    """Screenshot ``pg`` into the artifact folder when the block raises."""
    try:
        yield
    except BaseException:
        _screenshot(pg, request.node.name)
        raise


STATE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return {
    conn: app && app.getAttribute('data-test-connection-state'),
    script: app && app.getAttribute('data-test-script-state'),
    skeleton: document.querySelectorAll('[data-testid="stSkeleton"]').length,
    title: !!document.querySelector('h1'),
  };
}"""

COLLECT_JS = """() => {
  const all = (sel) => Array.from(document.querySelectorAll(sel));
  return {
    exceptions: all('[data-testid="stException"]').map(e => e.innerText),
    metrics: all('[data-tile]').map(e => e.innerText),
    alerts: all('[data-testid="stAlert"]').map(e => e.innerText),
    text: document.body.innerText + ' | ' + all('input').map(i => i.value).join(' | '),
    charts: all('[data-testid="stPlotlyChart"]').map(el => {
      const gd = el.querySelector('.js-plotly-plot');
      if (!gd || !gd.data) return {drawn: false, traces: 0, points: 0};
      const points = gd.data.reduce((n, t) => n + ((t.x || t.y || []).length || 0), 0);
      return {drawn: !!gd.querySelector('.main-svg'), traces: gd.data.length, points};
    }),
  };
}"""


def settle(pg, since_ms: float = 0.0) -> float:
    """Wait until the script has finished and the page is quiet; return ms from ``since_ms`` (page clock)."""
    deadline = time.monotonic() + SETTLE_TIMEOUT_S
    stable_since = None
    while time.monotonic() < deadline:
        s = pg.evaluate(STATE_JS)
        idle = s["conn"] == "CONNECTED" and s["script"] == "notRunning" and not s["skeleton"] and s["title"]
        now = pg.evaluate("performance.now()")
        if idle:
            stable_since = stable_since if stable_since is not None else now
            if now - stable_since >= QUIET_MS:
                return stable_since - since_ms
        else:
            stable_since = None
        time.sleep(0.05)
    raise AssertionError(f"page never settled: {pg.evaluate(STATE_JS)}")


def open_settled(pg, url: str) -> dict:
    pg.goto(url, wait_until="domcontentloaded")
    settle(pg)
    pg.wait_for_function(
        """() => Array.from(document.querySelectorAll('[data-testid="stPlotlyChart"]'))
                 .every(el => el.querySelector('.js-plotly-plot .main-svg'))""", timeout=15000)
    return pg.evaluate(COLLECT_JS)


@pytest.mark.parametrize(("path", "min_charts", "expected_text"), DEEP_LINKS, ids=[p for p, _, _ in DEEP_LINKS])
def test_deep_link_renders_without_exception(server, page, request, path, min_charts, expected_text):
    with shot_on_failure(page, request):
        found = open_settled(page, server + path)
        assert not found["exceptions"], found["exceptions"]
        assert len(found["charts"]) >= min_charts
        for i, chart in enumerate(found["charts"]):
            assert chart["drawn"] and chart["traces"] and chart["points"], f"chart {i} is empty: {chart}"
        for text in expected_text:  # page text or an input's value (tables are drawn on a canvas)
            assert text in found["text"], f"{text!r} not on the page"


def test_invalid_link_values_are_removed_from_the_url(server, page, request):
    with shot_on_failure(page, request):
        open_settled(page, server + "/" + q(model="nope", gpu="rtx-3090", context_len="inf", batch_size=4))
        params = parse_qs(urlparse(page.url).query)
        assert "model" not in params and "context_len" not in params, params
        assert params.get("gpu") == ["nvidia-rtx-3090"], params  # alias rewritten to the catalog id
        assert params.get("batch_size") == ["4"], params


def test_widget_change_updates_url_and_copied_link_reproduces_view(server, browser, page, request):
    with shot_on_failure(page, request):
        _change_batch_and_reopen(server, browser, page)


def _change_batch_and_reopen(server, browser, page):
    open_settled(page, server + "/" + q(model=LLAMA2, gpu="nvidia-rtx-3090", weight_dtype="fp16", context_len=2048))
    box = page.locator('[data-testid="stNumberInput"]').filter(has_text="Concurrent sequences")
    t0 = page.evaluate("performance.now()")
    box.locator('[data-testid="stNumberInputStepUp"]').click()
    page.wait_for_function("() => document.body.innerText.includes('Max context at batch 2')", timeout=15000)
    latency_ms = settle(page, since_ms=t0)
    print(f"widget rerun latency (batch_size step): {latency_ms:.0f} ms")
    assert "batch_size=2" in page.url
    before = page.evaluate(COLLECT_JS)["metrics"]

    other = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        copy = other.new_page()
        found = open_settled(copy, page.url)
        assert not found["exceptions"]
        assert found["metrics"] == before
    finally:
        other.close()


# --------------------------------------------------------------------------
# Pickers show names, the URL keeps ids (issue 14, item 6), and the Find table fits (item 8)
# --------------------------------------------------------------------------
WIDGET_TEXT_JS = """(label) => {
  const all = Array.from(document.querySelectorAll(
    '[data-testid="stSelectbox"], [data-testid="stMultiSelect"]'));
  const el = all.find(e => (e.querySelector('[data-testid="stWidgetLabel"]') || {}).innerText === label);
  if (!el) return null;
  return {text: el.innerText + ' | ' + Array.from(el.querySelectorAll('input')).map(i => i.value).join(' | '),
          chips: Array.from(el.querySelectorAll('[data-tag] > span')).map(s => s.innerText.replace(/\\s+/g, ' '))};
}"""

LLAMA31 = "meta-llama/Meta-Llama-3.1-8B"


def _url_params(pg) -> dict[str, list[str]]:
    return parse_qs(urlparse(pg.url).query)


@pytest.mark.parametrize(("path", "label", "names", "key", "ids"), [
    ("/" + q(model=LLAMA31, gpu="nvidia-l4"), "Model", ["Llama 3.1 8B · meta-llama/Meta-Llama-3.1-8B"], "model",
     [LLAMA31]),
    ("/" + q(model=LLAMA31, gpu="nvidia-l4"), "GPU", ["L4"], "gpu", ["nvidia-l4"]),
    ("/Memory_curves" + q(models=[LLAMA31, "Qwen/Qwen2.5-7B"], gpus=["nvidia-rtx-4090"]), "Models (up to 6)",
     ["Llama 3.1 8B · meta-llama/Meta-Llama-3.1-8B[-Instruct]", "Qwen2.5 7B · Qwen/Qwen2.5-7B[-Instruct]"], "models",
     [LLAMA31, "Qwen/Qwen2.5-7B"]),
    ("/Concurrency" + q(model=LLAMA31, gpus=["nvidia-rtx-4090", "nvidia-h100-sxm-80gb"]), "GPUs (up to 8)",
     ["GeForce RTX 4090", "H100 SXM5 80GB"], "gpus", ["nvidia-rtx-4090", "nvidia-h100-sxm-80gb"]),
], ids=["model", "gpu", "models", "gpus"])
def test_pickers_show_names_while_the_url_keeps_ids(server, page, request, path, label, names, key, ids):
    with shot_on_failure(page, request):
        open_settled(page, server + path)
        found = page.evaluate(WIDGET_TEXT_JS, label)
        assert found is not None, f"no picker labelled {label!r}"
        if key in ("models", "gpus"):
            assert found["chips"] == names, found  # whole names: the chips wrap instead of ending in "..."
        else:
            assert names[0] in found["text"], found
        assert ids[0] not in found["text"].split(" · ")[0]  # the name comes first, not the id
        assert _url_params(page)[key] == ids


def test_typing_part_of_a_name_picks_it_and_writes_the_id(server, page, request):
    with shot_on_failure(page, request):
        open_settled(page, server + "/" + q(model=LLAMA31, gpu="nvidia-l4"))
        box = page.locator('[data-testid="stSelectbox"]').filter(has_text="GPU").first
        box.locator("input").click()
        page.keyboard.type("h100 pcie")
        page.keyboard.press("Enter")
        page.wait_for_function("() => location.search.includes('gpu=nvidia-h100-pcie-80gb')", timeout=15000)
        settle(page)
        assert "H100 PCIe 80GB" in page.evaluate(WIDGET_TEXT_JS, "GPU")["text"]
        assert _url_params(page)["model"] == [LLAMA31]


@pytest.mark.parametrize("tab", ["Models", "GPUs", "Verified against transformers"])
@pytest.mark.parametrize("width", [1400, 1280])
def test_catalog_tables_do_not_scroll_sideways(server, browser, request, width, tab):
    """Each Catalog grid draws the columns of ui.catalog_table.MODEL_SHOWN / GPU_SHOWN / VERIFIED_SHOWN within the
    main column (the models grid was 2,975 px of 18 columns in a 778 px column at 1,280 px; the GPU and
    verification grids cut their last columns); the longest id (50 characters) shows whole."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    try:
        with shot_on_failure(pg, request):
            found = open_settled(pg, server + "/Catalog" + (q(catalog_section=tab) if tab != "Models" else ""))
            assert not found["exceptions"], found["exceptions"]
            pg.wait_for_selector('[data-testid="stDataFrame"] .dvn-scroller', state="attached", timeout=15000)
            (grid,) = pg.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
                .map(d => { const s = d.querySelector('.dvn-scroller');
                            return {scroll: s.scrollWidth, client: s.clientWidth}; })""")
            assert grid["scroll"] <= grid["client"], grid
    finally:
        context.close()


FIND_LINKS = {"dense": {"model": "meta-llama/Meta-Llama-3-8B", "users": 50},
              "every kind": {"model": "deepseek-ai/DeepSeek-V3.2", "users": 500, "gpu_types": "nvidia-h200-sxm",
                             "max_gpus": 16}}  # TP, DP+EP, DCP and P/D rows (issue "Serve at scale")


@pytest.mark.parametrize("link", list(FIND_LINKS))
@pytest.mark.parametrize("width", [1400, 1280])
def test_find_table_does_not_scroll_sideways(server, browser, request, width, link):
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    try:
        with shot_on_failure(pg, request):
            found = open_settled(pg, server + "/Find_a_GPU_setup" + q(**FIND_LINKS[link]))
            assert not found["exceptions"], found["exceptions"]
            pg.wait_for_selector('[data-testid="stDataFrame"] .dvn-scroller', state="attached", timeout=15000)
            grids = pg.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
                .map(d => { const s = d.querySelector('.dvn-scroller');
                            return {scroll: s.scrollWidth, client: s.clientWidth}; })""")
            assert grids, "no table"
            assert grids[0]["scroll"] <= grids[0]["client"], grids[0]  # the setups table
    finally:
        context.close()


N12_LOG = "\n".join((  # the printed lines of tests/data/reference/engine_cases.csv row [N12] (vLLM 0.28.0, L40S)
    "INFO 09-06 10:13:02 [gpu_model_runner.py:2653] Model loading took 27.52 GiB and 38.112 seconds",
    "INFO 09-06 10:13:20 [gpu_worker.py:298] Available KV cache memory: 11.57 GiB",
    "INFO 09-06 10:13:20 [kv_cache_utils.py:1087] GPU KV cache size: 75,824 tokens",
    "INFO 09-06 10:13:20 [kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per request: 1.85x"))


@pytest.mark.parametrize("width", [1400, 1280])
def test_engine_replan_table_does_not_scroll_sideways(server, browser, request, width):
    """The log check's "Re-planned with what the log measured" table cut its last column to "Star" at 1,280 px
    (QA); its six short columns fit the main column. The line-by-line table ends in the log line itself, which a
    data grid cut off at 1,280 px (QA): it is a static table whose cells wrap, so the whole line shows."""
    context = browser.new_context(viewport={"width": width, "height": 900})
    pg = context.new_page()
    try:
        with shot_on_failure(pg, request):
            open_settled(pg, server + "/Engine" + q(model="Qwen/Qwen3-14B", gpu="nvidia-l40s", context_len=40960,
                                                    engine="vllm-v0.28"))
            pg.locator('[data-testid="stTextArea"] textarea').last.fill(N12_LOG)
            since = pg.evaluate("performance.now()")
            pg.keyboard.press("Control+Enter")
            pg.wait_for_function("""() => document.querySelectorAll('[data-testid="stDataFrame"] .dvn-scroller')
                .length >= 1 && [...document.querySelectorAll('[data-testid="stTable"]')]
                .some(t => t.innerText.includes('Log line'))""", timeout=30000)
            settle(pg, since)
            grids = pg.evaluate("""() => Array.from(document.querySelectorAll('[data-testid="stDataFrame"]'))
                .map(d => { const s = d.querySelector('.dvn-scroller');
                            return {scroll: s.scrollWidth, client: s.clientWidth}; })""")
            assert grids[-1]["scroll"] <= grids[-1]["client"], grids  # the re-plan table
            lines = pg.evaluate("""() => { const t = [...document.querySelectorAll('[data-testid="stTable"]')]
                .find(t => t.innerText.includes('Log line'));
                const main = document.querySelector('[data-testid="stMain"] [data-testid="stMainBlockContainer"]');
                return {table: t.getBoundingClientRect().right, main: main.getBoundingClientRect().right,
                        scroll: t.scrollWidth, client: t.clientWidth, text: t.innerText}; }""")
            assert lines["table"] <= lines["main"] + 1 and lines["scroll"] <= lines["client"], lines
            for line in N12_LOG.splitlines():  # every log line whole on the page, not cut
                assert line.split("] ", 1)[1] in " ".join(lines["text"].split()), line
    finally:
        context.close()
