"""Load test on demand: many headless-Chromium sessions changing inputs against one fresh local server.

Usage::

    python scripts/load_test.py                        # 20 sessions x 60 s (the issue's full run)
    python scripts/load_test.py --sessions 5 --duration 15 --json load.json

Starts ``streamlit run app.py`` on a free 127.0.0.1 port (stopped by its pid
at the end), opens every page once to warm it (``--cold`` skips that), then
runs ``--sessions`` browser tabs at once (each its own websocket, so its own
Streamlit session; starting ``--ramp`` s apart),
one page each (the pages in turn), each changing one sidebar input ``--think``
seconds after the previous rerun settled,
for ``--duration`` seconds after its page loaded (at most ``--max-changes``
changes; every wait bounded). Prints errors, rerun latency p50/p95/max, first
page load and the server's RSS (start, peak, end of load, after the sessions
closed), sampled from ``/proc/<pid>/status``, the server's CPU time and the
whole machine's busy cores (``/proc/stat``): on a small machine the browsers'
rendering shares the cores with the server and is part of every latency.
Only loopback traffic.

The short version of the same run is ``tests/test_load.py`` (5 x 15 s).
Exit status: 0 no errors, 1 errors, 2 the browser is missing or the server did not start.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_helpers import PAGES, StreamlitServer, add_load_arguments, browser_missing, run_load  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser, ramp_s=1.0, think_s=2.0)
    parser.add_argument("--max-changes", type=int, default=2000, help="most widget changes per session")
    parser.add_argument("--cold", action="store_true", help="no warm-up: the first sessions hit a cold server")
    args = parser.parse_args(argv)

    missing = browser_missing()
    if missing:
        print(missing, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="load_test_") as tmp:
        server = StreamlitServer(Path(tmp) / "server.log")
        try:
            server.start()
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 2
        try:
            if not args.cold:
                warm = run_load(server.base_url, server.pid, sessions=len(PAGES), duration_s=0, ramp_s=args.ramp)
                print(f"warm-up: every page opened once, {len(warm.errors)} errors, server RSS "
                      f"{warm.summary().get('rss_after_mib')} MiB", flush=True)
                for error in warm.errors:
                    print("warm-up error:", error)
            report = run_load(server.base_url, server.pid, sessions=args.sessions, duration_s=args.duration,
                              max_changes=args.max_changes, ramp_s=args.ramp, think_s=args.think)
            healthy = server.healthy()
        finally:
            server.stop()
    figures = report.summary() | {"healthy_after": healthy}
    print(json.dumps(figures, indent=2))
    for error in report.errors:
        print("error:", error)
    if args.json:
        args.json.write_text(json.dumps(figures | {"errors_text": report.errors}, indent=2) + "\n")
    return 1 if report.errors or not healthy else 0


if __name__ == "__main__":
    raise SystemExit(main())
