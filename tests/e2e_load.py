"""Many browser sessions at once against one server: :func:`run_load` and what it records.

* :func:`run_load`: many sessions at once (Playwright async API, one
  Chromium), with the server's RSS sampled throughout; the figures are a
  :class:`LoadReport` (wall time and CPU: :class:`RunClock`; what every load run
  records, the websocket one of ``tests/ws_load.py`` too: :class:`LoadRun`).
* :func:`add_load_arguments`: the flags both load scripts take.

Only loopback traffic: sessions open ``base_url`` on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tests.e2e_browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    COLLECT_JS,
    OBSERVER_JS,
    PAGES,
    QUIET_MS,
    SEARCH_TERMS,
    SETTLE_TIMEOUT_S,
    STATE_JS,
    VIEWPORT,
    percentile,
)
from tests.e2e_server import cpu_seconds, machine_cpu_seconds, rss_bytes


def add_load_arguments(parser, *, ramp_s: float, think_s: float) -> None:
    """The flags both load scripts take: ``--sessions --duration --ramp --think --json``."""
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of changes per session")
    parser.add_argument("--ramp", type=float, default=ramp_s, help="seconds between two sessions' starts")
    parser.add_argument("--think", type=float, default=think_s, help="seconds a session waits after each result")
    parser.add_argument("--json", type=Path, help="also write the figures here")


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
