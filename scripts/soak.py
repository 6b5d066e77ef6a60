"""Soak (not a test): does the server's memory stay flat over a long run of sessions?

Usage::

    python scripts/soak.py                         # 10 rounds of 3 sessions x 60 s, RSS every minute
    python scripts/soak.py --rounds 5 --sessions-per-round 6 --json soak.json

Starts ``streamlit run app.py`` on a free 127.0.0.1 port (stopped by its pid at the
end). Each round opens ``--sessions-per-round`` new websocket sessions
(:mod:`tests.ws_load`, pages in turn, a widget change every ``--think`` seconds) for
``--round-s`` seconds; sessions of a round end before the next round starts, as tabs
that are opened, used and closed. After each round (one a minute by default) the
server's RSS is printed. Target (issue "Hostile input and long runs"): RSS within
15 % of its value at minute 2 for the rest of the run. Only loopback traffic; every
wait is bounded.

Exit status: 0 within target and no errors, 1 otherwise, 2 the server did not start.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e_helpers import PAGES, fresh_server  # noqa: E402
from tests.ws_load import run_server_load  # noqa: E402

TARGET_DRIFT = 0.15
"""Largest accepted RSS growth over the value after round 2 (minute 2)."""


def main(argv: list[str] | None = None) -> int:
    """Run the soak and print RSS per round."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--sessions-per-round", type=int, default=3)
    parser.add_argument("--round-s", type=float, default=60.0, help="seconds each round's sessions run")
    parser.add_argument("--think", type=float, default=1.0, help="seconds a session waits after each result")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    rows, errors = [], []
    with fresh_server("soak_", ROOT) as server:
        if server is None:
            return 2
        start = time.monotonic()
        run_server_load(server.base_url, server.pid, sessions=len(PAGES), duration_s=0)  # warm every page
        print(f"start: RSS {server.rss_bytes() >> 20} MiB", flush=True)
        for i in range(1, args.rounds + 1):
            report = run_server_load(server.base_url, server.pid, sessions=args.sessions_per_round,
                                     duration_s=args.round_s, ramp_s=0.5, think_s=args.think)
            errors += report.errors
            rss = server.rss_bytes()
            rows.append({"round": i, "minute": round((time.monotonic() - start) / 60, 1),
                         "rss_mib": rss >> 20, "reruns": report.summary().get("reruns"),
                         "errors": len(report.errors)})
            print(json.dumps(rows[-1]), flush=True)
    base = rows[1]["rss_mib"] if len(rows) > 1 else rows[0]["rss_mib"]
    worst = max(r["rss_mib"] for r in rows[1:]) if len(rows) > 1 else base
    drift = worst / base - 1
    verdict = "within" if drift <= TARGET_DRIFT else "over"
    summary = {"sessions": args.rounds * args.sessions_per_round, "rss_at_round_2_mib": base,
               "rss_max_after_mib": worst, "drift": round(drift, 3), "target": TARGET_DRIFT, "errors": len(errors)}
    print(json.dumps(summary))
    print(f"RSS drift after minute 2: {drift:+.1%} ({verdict} the {TARGET_DRIFT:.0%} target)")
    for error in errors[:10]:
        print("error:", error)
    if args.json:
        args.json.write_text(json.dumps({"rounds": rows, "summary": summary}, indent=2))
    return 0 if drift <= TARGET_DRIFT and not errors else 1


if __name__ == "__main__":
    sys.exit(main())
