"""Server-side load without browsers: many Streamlit sessions driven over the websocket protocol.

Each simulated user opens ``/_stcore/stream`` (its own websocket, so its own
Streamlit session, as a browser tab would), asks for a page with a
``rerun_script`` BackMsg (the ``ClientState`` a browser sends: query string
and page name), reads the ForwardMsgs until ``script_finished``, then changes
one widget (by the id the server sent in the widget's element, like a browser
does) and measures the next rerun the same way. Latency here is the server's
part only (the script run plus the protobuf traffic on loopback): no page
rendering, so on a small machine it shows what the server does while the
browser load test (:func:`tests.e2e_helpers.run_load`) shows what a user sees
when the browsers share the cores.

The protocol is Streamlit's own protobuf (``streamlit.proto``); the websocket
client is the ``websockets`` package Streamlit itself depends on.
Sources: streamlit/web/server/starlette/starlette_websocket.py (subprotocol
``streamlit``, binary BackMsg frames), streamlit/proto/BackMsg.proto,
ClientState.proto, WidgetStates.proto, ForwardMsg.proto (``script_finished``).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from tests.e2e_helpers import PAGES, SEARCH_TERMS, LoadRun, percentile, rss_bytes

FINISHED_OK = 0
"""``ForwardMsg.ScriptFinishedStatus.FINISHED_SUCCESSFULLY``."""


@dataclass
class _Widget:
    """What a rerun needs to know about the widget it changes (from its element proto)."""

    id: str
    kind: str  # "int", "double" or "string"
    value: float | str = 0
    step: float = 1
    maximum: float | None = None


@dataclass(kw_only=True)
class ServerLoadReport(LoadRun):
    """Figures of one :func:`run_server_load` (:class:`tests.e2e_helpers.LoadRun`): first pages and
    reruns from ``rerun_script`` sent to ``script_finished`` received [ms]; errors are exception
    elements, unsuccessful finishes, timeouts and lost sockets.

    Attributes:
        rss_samples: Server RSS [bytes] sampled through the run.
    """

    rss_samples: list[int] = field(default_factory=list)

    def summary(self) -> dict:
        """Figures for printing and JSON (MiB = 2^20 bytes)."""
        out: dict = {"sessions": self.sessions, "duration_s": self.duration_s, "wall_s": round(self.wall_s, 1),
                     "reruns": len(self.rerun_ms), "errors": len(self.errors),
                     "server_cpu_s": round(self.server_cpu_s, 1),
                     "server_busy_cores": round(self.server_cpu_s / self.wall_s, 2) if self.wall_s else None,
                     "machine_busy_cores": round(self.machine_cpu_s / self.wall_s, 2) if self.wall_s else None}
        for name, values in (("rerun", self.rerun_ms), ("first_page", self.first_page_ms)):
            if values:
                out |= {f"{name}_p50_ms": round(percentile(values, 50)), f"{name}_p95_ms": round(percentile(values, 95)),
                        f"{name}_max_ms": round(max(values))}
        if self.rss_samples:
            out |= {"rss_start_mib": self.rss_samples[0] >> 20, "rss_peak_mib": max(self.rss_samples) >> 20,
                    "rss_end_mib": self.rss_samples[-1] >> 20}
        return out


def _widget_of(element, key: str) -> _Widget | None:
    """The widget bound to URL key ``key`` in one ``Element`` proto, or None."""
    kind = element.WhichOneof("type")
    proto = getattr(element, kind, None)
    if getattr(proto, "query_param_key", "") != key:
        return None
    if kind == "number_input":
        is_int = proto.data_type == proto.INT
        return _Widget(id=proto.id, kind="int" if is_int else "double",
                       value=proto.value if proto.HasField("value") else proto.default,
                       step=proto.step or 1, maximum=proto.max if proto.has_max else None)
    if kind == "text_input":
        return _Widget(id=proto.id, kind="string")
    return None


def _rerun_message(page_name: str, query_string: str, widget: _Widget | None, turn: int) -> bytes:
    """A ``rerun_script`` BackMsg; with ``widget``, its value stepped up (even turns) or back (odd)."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    msg.rerun_script.query_string = query_string
    msg.rerun_script.page_name = page_name
    if widget is not None:
        state = msg.rerun_script.widget_states.widgets.add()
        state.id = widget.id
        if widget.kind == "string":
            state.string_value = SEARCH_TERMS[turn % len(SEARCH_TERMS)]
        else:
            up = widget.value + widget.step
            value = up if turn % 2 == 0 and (widget.maximum is None or up <= widget.maximum) else widget.value
            if widget.kind == "int":
                state.int_value = int(value)
            else:
                state.double_value = float(value)
    return msg.SerializeToString()


async def _until_finished(ws, key: str, timeout_s: float) -> tuple[int, _Widget | None, list[str]]:
    """Read ForwardMsgs to ``script_finished``: (finish status, the ``key`` widget, exception messages)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    widget, exceptions = None, []
    deadline = time.monotonic() + timeout_s
    while True:
        msg = ForwardMsg()
        msg.ParseFromString(await asyncio.wait_for(ws.recv(), timeout=max(0.1, deadline - time.monotonic())))
        kind = msg.WhichOneof("type")
        if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            if element.WhichOneof("type") == "exception":
                exceptions.append(element.exception.message)
            widget = _widget_of(element, key) or widget
        elif kind == "script_finished":
            return msg.script_finished, widget, exceptions


async def _session(url: str, path: str, report: ServerLoadReport, *, duration_s: float, delay_s: float,
                   think_s: float, max_changes: int, timeout_s: float) -> None:
    """One simulated user on ``path``: first page, then widget changes for ``duration_s``."""
    import websockets

    _, key = PAGES[path]
    page_name = path.strip("/")
    await asyncio.sleep(delay_s)
    try:
        async with websockets.connect(url, subprotocols=["streamlit"], max_size=None) as ws:
            t0 = time.perf_counter()
            await ws.send(_rerun_message(page_name, "", None, 0))
            status, widget, exceptions = await _until_finished(ws, key, timeout_s)
            report.first_page_ms.append((time.perf_counter() - t0) * 1000)
            _check(report, path, status, exceptions)
            if widget is None:
                report.errors.append(f"{path}: no widget bound to {key!r} on the page")
                return
            deadline, turn = time.monotonic() + duration_s, 0
            while time.monotonic() < deadline and turn < max_changes:
                t0 = time.perf_counter()
                await ws.send(_rerun_message(page_name, "", widget, turn))
                status, _, exceptions = await _until_finished(ws, key, timeout_s)
                report.rerun_ms.append((time.perf_counter() - t0) * 1000)
                _check(report, path, status, exceptions)
                turn += 1
                await asyncio.sleep(think_s)
    except (TimeoutError, OSError, websockets.exceptions.WebSocketException) as exc:
        report.errors.append(f"{path}: {type(exc).__name__}: {str(exc)[:200]}")


def _check(report: ServerLoadReport, path: str, status: int, exceptions: list[str]) -> None:
    if status != FINISHED_OK:
        report.errors.append(f"{path}: script finished with status {status}")
    report.errors += [f"{path}: exception on the page: {text[:300]}" for text in exceptions]


async def _sample(pid: int, report: ServerLoadReport, stop: asyncio.Event, every_s: float) -> None:
    while True:
        report.rss_samples.append(rss_bytes(pid))
        try:
            await asyncio.wait_for(stop.wait(), timeout=every_s)
            return
        except TimeoutError:
            continue


async def _run(base_url: str, pid: int, sessions: int, duration_s: float, ramp_s: float, think_s: float,
               max_changes: int, timeout_s: float) -> ServerLoadReport:
    report = ServerLoadReport(sessions=sessions, duration_s=duration_s)
    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    paths = list(PAGES)
    stop = asyncio.Event()
    sampler = asyncio.create_task(_sample(pid, report, stop, 0.5))
    try:
        with report.measure(pid):
            await asyncio.gather(*(_session(url, paths[i % len(paths)], report, duration_s=duration_s,
                                            delay_s=i * ramp_s, think_s=think_s, max_changes=max_changes,
                                            timeout_s=timeout_s)
                                   for i in range(sessions)))
    finally:
        stop.set()
        await sampler
    return report


def run_server_load(base_url: str, server_pid: int, *, sessions: int, duration_s: float, ramp_s: float = 0.1,
                    think_s: float = 0.0, max_changes: int = 10_000, timeout_s: float = 60.0) -> ServerLoadReport:
    """``sessions`` websocket sessions at once against ``base_url`` (loopback), pages in turn.

    Session ``i`` starts ``i * ramp_s`` s in, opens its page (:data:`tests.e2e_helpers.PAGES`),
    then changes that page's widget every ``think_s`` s after each finished rerun
    (0 = back to back, the heaviest load one session can make) for ``duration_s``
    or ``max_changes`` changes. Every wait is bounded by ``timeout_s``.

    Returns:
        A :class:`ServerLoadReport`; problems are in ``errors``, never raised.
    """
    run = _run(base_url, server_pid, sessions, duration_s, ramp_s, think_s, max_changes, timeout_s)
    # A thread of its own: Playwright's sync API (the browser tests) may hold an event loop on this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, run).result()
