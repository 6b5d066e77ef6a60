"""Server load on demand, without browsers: many Streamlit sessions over the websocket protocol.

Usage::

    python scripts/server_load.py                               # 20 sessions x 60 s, back to back
    python scripts/server_load.py --sessions 50 --think 2 --json server_load.json

Starts ``streamlit run app.py`` on a free 127.0.0.1 port (stopped by its pid at
the end), opens every page once to warm it, then drives ``--sessions``
websocket sessions at once (:mod:`tests.ws_load`): each opens one page (the
pages in turn) and changes that page's widget ``--think`` seconds after each
finished rerun (0 = back to back) for ``--duration`` seconds. Prints errors,
server-side rerun latency p50/p95/max (message sent -> ``script_finished``
received), first page, server RSS (start, peak, end) and CPU. Rendering is
not included: ``scripts/load_test.py`` measures the same load through real
browsers. Only loopback traffic.

Exit status: 0 no errors, 1 errors, 2 the server did not start.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_helpers import PAGES, add_load_arguments, fresh_server  # noqa: E402
from tests.ws_load import run_server_load  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Run the load and print its figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_load_arguments(parser, ramp_s=0.1, think_s=0.0)
    args = parser.parse_args(argv)

    with fresh_server("server_load_", ROOT) as server:
        if server is None:
            return 2
        warm = run_server_load(server.base_url, server.pid, sessions=len(PAGES), duration_s=0)
        print(f"warm-up: every page opened once, {len(warm.errors)} errors", flush=True)
        report = run_server_load(server.base_url, server.pid, sessions=args.sessions, duration_s=args.duration,
                                 ramp_s=args.ramp, think_s=args.think)
        healthy = server.healthy()
    figures = report.summary() | {"think_s": args.think, "healthy_after": healthy}
    print(json.dumps(figures, indent=2))
    for error in warm.errors + report.errors:
        print("error:", error)
    if args.json:
        args.json.write_text(json.dumps(figures | {"errors_text": report.errors}, indent=2) + "\n")
    return 1 if report.errors or warm.errors or not healthy else 0


if __name__ == "__main__":
    raise SystemExit(main())
