"""Shared fixtures for the real-browser tests (end-to-end and load).

* ``streamlit_server`` (session): ONE ``python -m streamlit run app.py
  --server.headless true`` on a free 127.0.0.1 port for the whole session,
  stopped by its pid at the end (see :class:`tests.e2e_helpers.StreamlitServer`).
* ``chromium_browser`` (session): headless Debian Chromium through
  Playwright's sync API. Missing Playwright or Chromium skips the test with
  the reason locally, and fails it when the ``CI`` environment variable is set.
* ``browser_page`` (function): a factory of fresh browser contexts (one
  Streamlit session each); when the test fails, every page it opened is
  screenshotted into ``e2e-screenshots`` under pytest's tmp dir and the path
  is printed (and repeated in the terminal summary).
* ``report_figures`` (session): a list of lines (rerun latencies, load-test
  figures) printed in the terminal summary, so figures are reported, never asserted.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e_helpers import StreamlitServer, browser_missing, in_ci, new_context

_SCREENSHOTS: list[Path] = []
_FIGURES: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the item (``item.rep_call``) so fixtures can see a failure."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, f"rep_{report.when}", report)


def pytest_terminal_summary(terminalreporter):
    for line in _FIGURES:
        terminalreporter.write_line(line)
    if _SCREENSHOTS:
        terminalreporter.write_line(f"e2e screenshots of failing pages: {_SCREENSHOTS[0].parent}")


def require_browser() -> None:
    """Skip (locally) or fail (``CI`` set) when Playwright or Chromium is missing."""
    missing = browser_missing()
    if missing:
        if in_ci():
            pytest.fail(f"real-browser tests cannot run in CI: {missing}")
        pytest.skip(missing)


@pytest.fixture(scope="session")
def report_figures() -> list[str]:
    """Lines (latency and memory figures) printed in the terminal summary, after the test results."""
    return _FIGURES


@pytest.fixture(scope="session")
def e2e_artifacts(tmp_path_factory) -> Path:
    """Folder for the server log and failure screenshots (under pytest's tmp dir)."""
    return tmp_path_factory.mktemp("e2e-screenshots")


@pytest.fixture(scope="session")
def streamlit_server(e2e_artifacts):
    """One fresh Streamlit server for the session; its log is ``server.log`` beside the screenshots."""
    server = StreamlitServer(e2e_artifacts / "server.log")
    try:
        server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def chromium_browser():
    require_browser()
    from tests.e2e_helpers import chromium

    with chromium() as browser:
        yield browser


@pytest.fixture
def browser_page(chromium_browser, e2e_artifacts, request):
    """``browser_page()`` -> a page in a new browser context (a new Streamlit session).

    On failure every page opened through it is saved as a full-page PNG.
    """
    contexts = []

    def make():
        context = new_context(chromium_browser)
        contexts.append(context)
        return context.new_page()

    yield make
    report = getattr(request.node, "rep_call", None)
    failed = report is not None and report.failed
    for i, context in enumerate(contexts):
        if failed:
            for j, page in enumerate(context.pages):
                name = re.sub(r"[^A-Za-z0-9._-]+", "_", request.node.name)[:100] + f"-{i}{j}.png"
                path = e2e_artifacts / name
                try:
                    # Streamlit scrolls inside stMain: grow the viewport to the content first.
                    height = page.evaluate("() => (document.querySelector('[data-testid=\"stMain\"]') || "
                                           "document.body).scrollHeight")
                    page.set_viewport_size({"width": 1280, "height": max(900, min(int(height), 8000))})
                    page.screenshot(path=str(path), full_page=True)
                except Exception as exc:  # noqa: BLE001 - best effort on a broken page
                    print(f"screenshot of {page.url} failed: {exc}")
                else:
                    _SCREENSHOTS.append(path)
                    print(f"screenshot of {page.url}: {path}")
        context.close()
