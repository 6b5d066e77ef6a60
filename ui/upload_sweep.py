"""Free the uploads of browser sessions that are gone.

Streamlit keeps every uploaded file in memory (``MemoryUploadedFileManager.file_storage``, per session)
until the session is shut down (``AppSession.shutdown`` calls ``remove_session_files``). A tab that
closes is first kept for reconnecting (``server.disconnectedSessionTTL``, 120 s); when that time runs
out, or the store of 128 disconnected sessions evicts it, the session is dropped without a shutdown
(streamlit/runtime/websocket_session_manager.py ``disconnect_session`` and
streamlit/runtime/memory_session_storage.py, Streamlit 1.67), so its files stay for the life of the
server. Measured with ``scripts/attack.py``: ten 60 MB CSV uploads from ten tabs left the server
+534 MiB after their sessions had expired.

:func:`sweep` removes the files of every session id that is neither connected nor waiting to
reconnect. Every page calls it (``ui.views.setup_page``), at most once per :data:`SWEEP_EVERY_S`.
It reads Streamlit's runtime objects, which are not a public API: if they change shape, the sweep
does nothing (and says so in the server log) rather than break a page.
"""

from __future__ import annotations

import logging
import threading
import time

SWEEP_EVERY_S = 10.0
"""Least time between two sweeps [s]: a sweep walks the session lists, so it is not done on every rerun."""

_LOCK = threading.Lock()
_LAST: list[float] = [float("-inf")]
_LOG = logging.getLogger(__name__)


def _give_back() -> None:
    """Hand freed heap pages back to the OS (glibc ``malloc_trim(0)``; nothing elsewhere).

    An upload is read into many mid-sized buffers (the multipart parser's chunks) that glibc keeps in its
    heap after they are freed; without a trim the server's RSS stays at its high-water mark.
    """
    import ctypes  # noqa: PLC0415
    import ctypes.util  # noqa: PLC0415
    import gc  # noqa: PLC0415

    gc.collect()  # the dropped sessions' objects can sit in reference cycles
    name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(name) if name else None
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def sweep(now: float | None = None, *, runtime_instance=None) -> int:
    """Remove uploaded files whose session no longer exists.

    Args:
        now: Monotonic time [s] (tests pass their own); None = :func:`time.monotonic`.
        runtime_instance: The Streamlit runtime; None = the running one (none outside ``streamlit run``).

    Returns:
        How many sessions' files were removed (0 when the last sweep was under :data:`SWEEP_EVERY_S`
        ago, when no runtime runs, or when Streamlit's objects are not as expected). Never raises.
    """
    now = time.monotonic() if now is None else now
    with _LOCK:
        if now - _LAST[0] < SWEEP_EVERY_S:
            return 0
        _LAST[0] = now
    try:
        if runtime_instance is None:
            from streamlit import runtime  # noqa: PLC0415 - only inside a running server

            if not runtime.exists():
                return 0
            runtime_instance = runtime.get_instance()
        files = runtime_instance.uploaded_file_mgr
        storage = getattr(files, "file_storage", None)
        if not isinstance(storage, dict) or not storage:
            return 0
        live = {info.session.id for info in runtime_instance._session_mgr.list_sessions()}  # noqa: SLF001
        gone = [session_id for session_id in list(storage) if session_id not in live]
        for session_id in gone:
            files.remove_session_files(session_id)
        if gone:
            _give_back()
        return len(gone)
    except Exception as exc:  # noqa: BLE001 - a Streamlit internals change must not break a page
        _LOG.warning("upload sweep skipped: %s: %s", type(exc).__name__, exc)
        return 0
