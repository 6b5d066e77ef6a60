"""The Streamlit server the browser tests, load tests and perf / load scripts run against.

* :class:`StreamlitServer`: ``python -m streamlit run app.py`` on a free
  127.0.0.1 port, in its own process group, stopped by its pid; RSS read from
  ``/proc/<pid>/status``.
* :func:`fresh_server`: one such server in a temporary folder, for a script.
* :func:`cpu_seconds`, :func:`machine_cpu_seconds`, :func:`rss_bytes`: what a run
  costs the server and the machine, from ``/proc``.

Only loopback traffic: the server listens on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER_START_TIMEOUT_S = 60.0


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
