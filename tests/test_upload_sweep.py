"""The uploads of sessions that are gone are freed (ui/upload_sweep.py).

Streamlit drops an expired disconnected session without shutting it down, so its uploaded files stayed
in the server's memory for good (+534 MiB after ten 60 MB CSV uploads from closed tabs, measured with
scripts/attack.py). These tests drive :func:`ui.upload_sweep.sweep` with Streamlit's own upload manager
and stand-in session lists.
"""

from __future__ import annotations

from types import SimpleNamespace

from streamlit.runtime.memory_uploaded_file_manager import MemoryUploadedFileManager
from streamlit.runtime.uploaded_file_manager import UploadedFileRec

from ui import upload_sweep


def _runtime(live_ids: list[str]):
    files = MemoryUploadedFileManager("/_stcore/upload_file")
    for session_id in ("alive", "waiting", "gone-1", "gone-2"):
        files.add_file(session_id, UploadedFileRec(file_id="f", name="x.csv", type="text/csv", data=b"1\n" * 1000))
    sessions = [SimpleNamespace(session=SimpleNamespace(id=i)) for i in live_ids]
    return SimpleNamespace(uploaded_file_mgr=files, _session_mgr=SimpleNamespace(list_sessions=lambda: sessions))


def test_files_of_sessions_that_are_gone_are_removed_and_the_rest_kept():
    rt = _runtime(["alive", "waiting"])
    assert upload_sweep.sweep(1e9, runtime_instance=rt) == 2
    assert set(rt.uploaded_file_mgr.file_storage) == {"alive", "waiting"}
    assert rt.uploaded_file_mgr.get_files("alive", ["f"])[0].data.startswith(b"1\n")


def test_sweeps_are_spaced_out():
    rt = _runtime([])
    assert upload_sweep.sweep(2e9, runtime_instance=rt) == 4
    rt = _runtime([])
    assert upload_sweep.sweep(2e9 + upload_sweep.SWEEP_EVERY_S / 2, runtime_instance=rt) == 0
    assert len(rt.uploaded_file_mgr.file_storage) == 4


def test_an_unexpected_runtime_is_left_alone():
    assert upload_sweep.sweep(3e9, runtime_instance=SimpleNamespace()) == 0
    assert upload_sweep.sweep(4e9) == 0  # no server running in the test process
