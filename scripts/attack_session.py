"""One browser tab's worth of ``scripts/attack.py``: Streamlit's websocket protocol and upload route.

A script run is one ``rerun_script`` BackMsg, read back to its final ``script_finished``
(:class:`PageRun`); :func:`attack_once` delivers one :class:`attack_cases.Attack` in a new
session (link, widget or upload: ``PUT /_stcore/upload_file/...`` with the XSRF pair, then a
rerun naming the file); :func:`bystander` loads Home in a loop in its own session. Only loopback
traffic; every wait and every loop is bounded in count and time.

Sources: streamlit ``proto/BackMsg.proto`` and ``ForwardMsg.proto`` (Streamlit 1.67), its
upload route ``/_stcore/upload_file/<session_id>/<file_id>``; :mod:`tests.ws_load` for the
rerun message.
"""

from __future__ import annotations

import asyncio
import http.client
import http.cookies
import time
import urllib.request
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from attack_cases import MIB, Attack
from tests.ws_load import FINISHED_OK, _rerun_message

FINISHED_EARLY_FOR_RERUN = 2
"""``ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN``: another run follows at once."""

MAX_MESSAGES_PER_RUN = 50_000
"""Most ForwardMsgs read for one run (a page sends a few hundred)."""


# --------------------------------------------------------------------------
# Protocol: one script run, read to its end
# --------------------------------------------------------------------------
@dataclass
class PageRun:
    """What one script run sent back.

    Attributes:
        status: ``script_finished`` status (0 = success), None when none came.
        ms: Message sent -> final ``script_finished`` [ms] (or until the wait ended).
        exceptions: ``exception`` elements' messages.
        alerts: ``(format, body)`` of every ``alert`` element (format: error/warning/info/success).
        headings: ``heading`` bodies, in order (the first is the page title).
        widgets: Widget key -> element id, for keyed widgets and keyed expanders.
        session_id: The server's id of this session (``new_session``), if it was sent.
        error: Why the run did not finish (timeout, lost socket), or "".
        close_code: The websocket close code when the server closed the socket (1009: frame too big).
    """

    status: int | None = None
    ms: float = 0.0
    exceptions: list[str] = field(default_factory=list)
    alerts: list[tuple[str, str]] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    widgets: dict[str, str] = field(default_factory=dict)
    session_id: str = ""
    error: str = ""
    close_code: int | None = None


ALERT_FORMATS = {1: "error", 2: "warning", 3: "info", 4: "success"}
"""``Alert.Format`` values."""


def _key_of(element_id: str) -> str | None:
    """The user key a Streamlit element id ends with (``$$ID-<hash>-<key>``), or None."""
    if not element_id.startswith("$$ID-"):
        return None
    parts = element_id.split("-", 2)
    return parts[2] if len(parts) == 3 and parts[2] != "None" else None


def _note(msg, run: PageRun) -> int | None:
    """Record one ForwardMsg in ``run``; the finish status when it is ``script_finished``."""
    kind = msg.WhichOneof("type")
    if kind == "new_session":
        run.session_id = msg.new_session.initialize.session_id or run.session_id
    elif kind == "script_finished":
        return msg.script_finished
    elif kind == "delta":
        delta = msg.delta
        which = delta.WhichOneof("type")
        if which == "new_element":
            element = delta.new_element
            etype = element.WhichOneof("type")
            proto = getattr(element, etype) if etype else None
            if etype == "exception":
                run.exceptions.append(proto.message or proto.type or "exception")
            elif etype == "alert":
                run.alerts.append((ALERT_FORMATS.get(proto.format, "alert"), proto.body))
            elif etype == "heading":
                run.headings.append(proto.body)
            key = _key_of(getattr(proto, "id", "") or "") if proto is not None else None
            if key:
                run.widgets[key] = proto.id
        elif which == "add_block":
            btype = delta.add_block.WhichOneof("type")
            block_id = getattr(getattr(delta.add_block, btype), "id", "") if btype else ""
            key = _key_of(block_id or "")
            if key:
                run.widgets[key] = block_id
    return None


async def _page_run(ws, message: bytes, timeout_s: float) -> PageRun:
    """Send one ``rerun_script`` and read ForwardMsgs to the run's final ``script_finished``."""
    import websockets
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    run = PageRun()
    t0 = time.perf_counter()
    deadline = time.monotonic() + timeout_s
    try:
        await ws.send(message)
        for _ in range(MAX_MESSAGES_PER_RUN):
            msg = ForwardMsg()
            msg.ParseFromString(await asyncio.wait_for(ws.recv(), timeout=max(0.05, deadline - time.monotonic())))
            status = _note(msg, run)
            if status is not None and status != FINISHED_EARLY_FOR_RERUN:
                run.status = status
                break
        else:
            run.error = f"more than {MAX_MESSAGES_PER_RUN:,} messages without a final script_finished"
    except TimeoutError:
        run.error = f"no script_finished within {timeout_s:g} s"
    except websockets.exceptions.ConnectionClosed as exc:
        run.close_code = exc.rcvd.code if exc.rcvd else None
        run.error = f"socket closed by the server: code {exc.rcvd.code if exc.rcvd else None} " \
                    f"{(exc.rcvd.reason if exc.rcvd else '')[:80]}".rstrip()
    run.ms = (time.perf_counter() - t0) * 1000
    return run


def _rerun(page: str, query: str = "", states: Sequence[Callable] = ()) -> bytes:
    """A ``rerun_script`` BackMsg for ``page`` with ``query``; each of ``states`` fills one WidgetState."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    for fill in states:
        fill(msg.rerun_script.widget_states.widgets.add())
    return msg.SerializeToString()


def _string(widget_id: str, value: str) -> Callable:
    def fill(state) -> None:
        state.id, state.string_value = widget_id, value
    return fill


def _bool(widget_id: str, value: bool) -> Callable:
    def fill(state) -> None:
        state.id, state.bool_value = widget_id, value
    return fill


def _trigger(widget_id: str) -> Callable:
    def fill(state) -> None:
        state.id, state.trigger_value = widget_id, True
    return fill


def _uploaded(widget_id: str, file_id: str, name: str, size: int) -> Callable:
    def fill(state) -> None:
        state.id = widget_id
        state.file_uploader_state_value.uploaded_file_info.add(file_id=file_id, name=name, size=size)
    return fill


def _connect(url: str):
    import websockets

    return websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=15, close_timeout=2)


# --------------------------------------------------------------------------
# Uploads: Streamlit's HTTP route, as the browser uses it
# --------------------------------------------------------------------------
_LOOPBACK_ONLY = urllib.request.build_opener(urllib.request.ProxyHandler({}))
"""urllib without proxies: every request goes to the loopback server itself."""


def _xsrf_cookie(base_url: str) -> str:
    """The ``_streamlit_xsrf`` cookie the server sets on ``/_stcore/health`` ("" when XSRF is off)."""
    with _LOOPBACK_ONLY.open(base_url + "/_stcore/health", timeout=10) as response:
        for header in response.headers.get_all("Set-Cookie") or ():
            jar = http.cookies.SimpleCookie()
            jar.load(header)
            if "_streamlit_xsrf" in jar:
                return jar["_streamlit_xsrf"].value
    return ""


def _multipart(name: str, data: bytes, boundary: str) -> bytes:
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    return head + data + f"\r\n--{boundary}--\r\n".encode()


def put_upload(base_url: str, session_id: str, file_id: str, name: str, data: bytes,
               timeout_s: float) -> tuple[int, str]:
    """``PUT /_stcore/upload_file/<session_id>/<file_id>`` with one file: (HTTP status, body text start).

    The body goes in 1 MiB chunks; a server that refuses early (413 on ``Content-Length``)
    may close the socket mid-body, so its answer is read after the send stops. Status 0:
    no answer (the text says why).
    """
    token = _xsrf_cookie(base_url)
    boundary = "attack" + uuid.uuid4().hex
    body = _multipart(name, data, boundary)
    parts = urlsplit(base_url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
    sent = 0
    try:
        connection.putrequest("PUT", f"/_stcore/upload_file/{session_id}/{file_id}")
        connection.putheader("Content-Type", f"multipart/form-data; boundary={boundary}")
        connection.putheader("Content-Length", str(len(body)))
        if token:
            connection.putheader("X-Xsrftoken", token)
            connection.putheader("Cookie", f"_streamlit_xsrf={token}")
        connection.endheaders()
        with memoryview(body) as view:
            for start in range(0, len(body), MIB):  # bounded: len(body) / 1 MiB chunks
                try:
                    connection.send(view[start:start + MIB])
                except (BrokenPipeError, ConnectionResetError):
                    break
                sent = min(len(body), start + MIB)
        response = connection.getresponse()
        return response.status, response.read(200).decode(errors="replace")
    except OSError as exc:
        return 0, f"{type(exc).__name__} after {sent:,} of {len(body):,} bytes sent: {exc}"[:200]
    except http.client.HTTPException as exc:
        return 0, f"{type(exc).__name__} after {sent:,} of {len(body):,} bytes sent"[:200]
    finally:
        connection.close()


# --------------------------------------------------------------------------
# One attack run
# --------------------------------------------------------------------------
@dataclass
class RunRecord:
    """One attack run: the timed run's figures plus the upload's HTTP status (0 = no upload)."""

    run: PageRun
    http_status: int = 0
    http_text: str = ""
    problem: str = ""


async def attack_once(base_url: str, attack: Attack, timeout_s: float) -> RunRecord:
    """Deliver ``attack`` once, in a new websocket session; the timed run is the attack's own."""
    import websockets

    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    try:
        async with _connect(url) as ws:
            if attack.kind == "link":
                return RunRecord(await _page_run(ws, _rerun(attack.page, attack.query), timeout_s))
            first = await _page_run(ws, _rerun(attack.page), timeout_s)
            if first.status is None:
                return RunRecord(first, problem=f"page did not load before the attack: {first.error}")
            if attack.kind == "widget":
                widget = first.widgets.get(attack.key)
                if widget is None:
                    return RunRecord(first, problem=f"no widget {attack.key!r} on the page")
                return RunRecord(await _page_run(ws, _rerun(attack.page, "", [_string(widget, attack.text)]),
                                                 timeout_s))
            return await _upload_once(ws, base_url, attack, first, timeout_s)
    except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
        return RunRecord(PageRun(error=f"{type(exc).__name__}: {str(exc)[:150]}"))


async def _upload_once(ws, base_url: str, attack: Attack, first: PageRun, timeout_s: float) -> RunRecord:
    """PUT the file, then rerun with it in the uploader (and the button pressed)."""
    states: list[Callable] = []
    page = first
    if attack.open_panel:
        panel = first.widgets.get(attack.open_panel)
        if panel is None:
            return RunRecord(first, problem=f"no expander {attack.open_panel!r} on the page")
        states.append(_bool(panel, True))
        page = await _page_run(ws, _rerun(attack.page, "", states), timeout_s)
        if page.status is None:
            return RunRecord(page, problem=f"the panel did not open: {page.error}")
    uploader = page.widgets.get(attack.key)
    if uploader is None:
        return RunRecord(page, problem=f"no uploader {attack.key!r} on the page")
    if not first.session_id:
        return RunRecord(page, problem="the server sent no session id")
    file_id = str(uuid.uuid4())
    t0 = time.perf_counter()
    status, text = await asyncio.to_thread(put_upload, base_url, first.session_id, file_id, attack.file_name,
                                           attack.file_data, timeout_s)
    put_ms = (time.perf_counter() - t0) * 1000
    if status == 0:
        return RunRecord(PageRun(ms=put_ms, error=f"upload got no HTTP answer: {text}"))
    if status != 204:  # refused (413 = over server.maxUploadSize): the browser shows the error, no rerun
        return RunRecord(PageRun(status=FINISHED_OK, ms=put_ms), http_status=status, http_text=text)
    states.append(_uploaded(uploader, file_id, attack.file_name, len(attack.file_data)))
    if attack.press:
        button = page.widgets.get(attack.press)
        if button is None:
            return RunRecord(page, http_status=status, problem=f"no button {attack.press!r} on the page")
        states.append(_trigger(button))
    run = await _page_run(ws, _rerun(attack.page, "", states), timeout_s)
    run.ms += put_ms
    return RunRecord(run, http_status=status)


# --------------------------------------------------------------------------
# Bystander: one session loading Home in a loop
# --------------------------------------------------------------------------
@dataclass
class Bystander:
    """Bystander page loads [ms] (``rerun_script`` -> ``script_finished``; a hang counts as the timeout)."""

    loads_ms: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def bystander(base_url: str, out: Bystander, *, loads: int, stop: asyncio.Event | None, think_s: float,
                    timeout_s: float, ready: asyncio.Event | None = None) -> None:
    """Load Home up to ``loads`` times (or until ``stop``) in one session, ``think_s`` s apart.

    Each session's first load is its warm-up and not counted (``ready`` is set after it); after
    a hang or a lost socket a new session is opened (its first load again not counted).
    """
    import websockets

    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    done = 0
    while done < loads and not (stop is not None and stop.is_set()):
        try:
            async with _connect(url) as ws:
                first = True
                while done < loads and not (stop is not None and stop.is_set()):
                    run = await _page_run(ws, _rerun_message("", "", None, 0), timeout_s)
                    if run.status is None:
                        out.loads_ms.append(run.ms)
                        out.errors.append(run.error)
                        done += 1
                        break  # a new session: the late finish of this one must not be read as the next load
                    if not first:
                        out.loads_ms.append(run.ms)
                        done += 1
                    elif ready is not None:
                        ready.set()
                    first = False
                    if stop is None:
                        await asyncio.sleep(think_s)
                    else:
                        try:
                            await asyncio.wait_for(stop.wait(), timeout=think_s)
                        except TimeoutError:
                            pass
        except (OSError, TimeoutError, websockets.exceptions.WebSocketException) as exc:
            out.errors.append(f"{type(exc).__name__}: {str(exc)[:150]}")
            done += 1
            await asyncio.sleep(min(think_s, 1.0))
