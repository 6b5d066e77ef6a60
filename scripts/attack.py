"""Hostile input against one server: each attack of the issue N times, with a bystander session timed alongside.

Usage::

    python scripts/attack.py                      # every attack 10 times (a few minutes)
    python scripts/attack.py --short              # the CI subset, once each (under a minute when warm)
    python scripts/attack.py --only gguf --runs 3 --json attack.json

Issue "hostile input: one paste, link or upload must never freeze, exhaust or phish the
hosted instance". Starts ONE fresh ``streamlit run app.py`` on a free 127.0.0.1 port
(:class:`tests.e2e_helpers.StreamlitServer`, stopped by its pid at the end) and talks to it
the way a browser tab does, over Streamlit's websocket protocol (``streamlit.proto``
BackMsg / ForwardMsg, as :mod:`tests.ws_load` does) and, for uploads, its HTTP upload
route. Only loopback traffic; every wait and every loop is bounded in count and time.

Phases:

1. Warm-up: every page an attack uses is opened once (plus a valid custom model link), so
   first-import costs are not charged to the attacks; the page's own alerts are noted, so an
   attack's message is the first alert its page did *not* show before.
1b. Rehearsal (a full run; ``--rehearse 0`` skips it, ``--short`` never has it): every attack
   once, unmeasured, then ``--rehearse`` s (130, past the session TTL) and one visitor, so the
   first use of each code path (imports, Plotly's first figure of a kind, allocator arenas) is
   in the baseline and "RSS after" shows what the measured attacks leave behind.
2. Quiet figure: a "bystander" session (one websocket) loads Home ``--quiet-loads`` times:
   ``rerun_script`` sent -> ``script_finished`` received [ms], the server's part of a page
   load (no rendering), the first load of the session not counted. Server RSS [MiB = 2^20
   bytes] from ``/proc/<pid>/status`` (:func:`tests.e2e_helpers.rss_bytes`).
3. Attacks: each one ``--runs`` times, sequentially, every run in its own websocket session
   (a fresh tab), while the bystander (a new session) keeps loading Home in a loop
   (``--think`` s between loads). Per run: wall time [ms] from the attack's message sent
   (for uploads: the HTTP PUT started) to ``script_finished``; the first exception, else the
   first new error/warning (else info/success) alert the page showed; after the attack's last
   run, the server RSS. A run that does not finish within ``--timeout`` s is a hang: the
   attack's remaining runs are skipped.
4. RSS every 5 s for ``--settle`` s after the last attack, then once more 1 s after one more
   visitor's page load: that last reading is "RSS after". Streamlit keeps a closed tab's
   session, and its uploads, for ``server.disconnectedSessionTTL`` = 120 s, and drops expired
   sessions from its storage only when another session is saved there (a visitor leaving),
   hence the visitor; ``--settle 130`` shows what is left past the TTL.

Delivery:

* Link-borne: the ``query_string`` of ``rerun_script`` (what a browser sends for
  ``/<page>?<query>``). Share codes are built with the product's own framing
  (:func:`model_catalog.share_codec.pack`) from a raw payload dict, so a code can hold what
  the validators refuse (the point of the attack); valid codes (the Markdown names) use
  :func:`model_catalog.share_codec.encode_model`.
* Widget-borne: a second ``rerun_script`` whose ``widget_states`` set the text area's
  ``string_value`` directly (the browser's ``max_chars`` is bypassed; the widget id comes from
  the element the server sent on the first run: Streamlit ids end in ``-<key>``). What the
  server does with it shows in the recorded message or error. With Streamlit 1.67 the server
  itself cuts a text area's value to its ``max_chars`` (``TextAreaSerde`` in
  streamlit/elements/widgets/text_widgets.py), so a paste up to the frame limit reaches the page
  as its first 2,000,000 characters. The 14 MB paste is over ``server.maxWidgetStateSize``
  (13 MB in ``.streamlit/config.toml``), so the server closes the socket with code 1009 before
  decoding it: that is its pass.
* Upload-borne: as the browser does, ``PUT /_stcore/upload_file/<session_id>/<file_id>``
  (multipart, with the XSRF cookie/header pair the server sets on ``/_stcore/health``), then a
  rerun whose widget state names the file (``file_uploader_state_value``); the HTTP status is
  recorded at the head of the message (413 = refused by ``server.maxUploadSize``, then no rerun;
  the 60 and 70 MiB CSVs are over the 32 MB that ``.streamlit/config.toml`` allows, so both get 413). The GGUF header goes to
  the "Custom model & GPU" panel (opened through its expander's widget state) and is read by
  pressing "Read GGUF header" (the button's ``trigger_value``).

Pass (per attack): every run finished (``script_finished``, successfully) within ``--pass-s``
s, no exception element, no lost socket, and a message where the attack must be refused.
Targets (issue acceptance): RSS after within 15 % of before; bystander median under attack
within 1.5x of the quiet median. Both are printed, and decide the exit status only here,
never in a test (the figures are machine-dependent).

Exit status: 0 every attack passed and both targets held, 1 otherwise, 2 the server did not start.

Layout: the attacks and their payloads are in ``scripts/attack_cases.py``, the websocket
protocol, the upload route, one attack run and the bystander in ``scripts/attack_session.py``;
this file runs the phases, judges each attack and prints the table.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from attack_cases import (  # noqa: E402, F401  (re-exported: the attacks as before)
    EVIL,
    FRAME_TOO_BIG,
    LOG_LINE,
    MIB,
    MODEL_REASON,
    NAMED_BASE,
    QWEN_VL,
    Attack,
    _catalog_config,
    _q,
    _raw_model_code,
    build_attacks,
)
from attack_session import (  # noqa: E402, F401  (re-exported: the protocol as before)
    ALERT_FORMATS,
    FINISHED_EARLY_FOR_RERUN,
    MAX_MESSAGES_PER_RUN,
    Bystander,
    PageRun,
    RunRecord,
    _connect,
    _page_run,
    _rerun,
    attack_once,
    bystander,
    put_upload,
)
from tests.e2e_helpers import fresh_server, rss_bytes  # noqa: E402
from tests.ws_load import FINISHED_OK  # noqa: E402

RSS_TARGET = 0.15
"""Largest accepted RSS change after the attacks, as a fraction of the RSS before."""

BYSTANDER_TARGET = 1.5
"""Largest accepted ratio of the bystander's median page load under attack to the quiet median."""

PASS_S = 15.0
"""An attack run must finish within this [s] to pass."""

TIMEOUT_S = 30.0
"""Longest wait for one run's ``script_finished`` [s]: a hang guard, beyond which the run is a hang."""

MESSAGE_CHARS = 100
"""Characters of the page's message kept in the table."""

MAX_BYSTANDER_LOADS = 5_000
"""Most bystander page loads in one phase (the phase's end stops it long before)."""

LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The only hosts :func:`run_attacks` talks to."""

SETTLE_EVERY_S = 5.0
"""RSS sampling interval while settling after the attacks [s]."""


# --------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------
@dataclass
class AttackRow:
    """One table row: an attack's runs.

    Attributes:
        times_ms: Each run's wall time [ms].
        rss_after_mib: Server RSS after the attack's last run [MiB].
        message: The first exception or new alert of the first run that showed one (or the subheader).
        http_status: Upload HTTP status of the last run (0 = no upload).
        problems: Why it did not pass (empty = passed).
    """

    attack: str
    kind: str
    page: str
    runs: int
    planned: int
    times_ms: list[float]
    rss_after_mib: float
    message: str
    http_status: int
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems and self.runs == self.planned

    def row(self) -> dict:
        return asdict(self) | {"passed": self.passed,
                               "median_ms": round(statistics.median(self.times_ms)) if self.times_ms else None,
                               "max_ms": round(max(self.times_ms)) if self.times_ms else None}


def _message(run: PageRun, baseline: set[str], attack: Attack) -> str:
    """The first exception, else (Markdown names) the subheader, else the first new error/warning alert,
    else the first other new alert ("new": not shown by the same page without the attack), an alert
    containing :attr:`Attack.about` before the others."""
    if run.exceptions:
        return "exception: " + run.exceptions[0]
    if attack.show_heading and len(run.headings) > 1:
        return "subheader: " + run.headings[1]
    fresh = [(kind, body) for kind, body in run.alerts if body not in baseline]
    for kind, body in sorted(fresh, key=lambda a: (attack.about not in a[1], a[0] not in ("error", "warning"))):
        return f"{kind}: {body}"
    return ""


def _frame_refused(attack: Attack, run: PageRun) -> bool:
    """The server refused an oversized frame as it must (:attr:`Attack.frame_refused`)."""
    return attack.frame_refused and run.close_code == FRAME_TOO_BIG


def _judge(attack: Attack, record: RunRecord, message: str, pass_s: float) -> list[str]:
    run, problems = record.run, []
    if record.problem:
        problems.append(record.problem)
    if attack.frame_refused and not _frame_refused(attack, run):
        problems.append(f"the server decoded the frame instead of refusing it ({run.error or 'the page ran'})")
    elif run.error and not _frame_refused(attack, run):
        problems.append(run.error)
    elif run.status is not None and run.status != FINISHED_OK:
        problems.append(f"script finished with status {run.status}")
    if run.exceptions:
        problems.append("exception on the page")
    if run.ms > pass_s * 1000:
        problems.append(f"took {run.ms / 1000:.1f} s (> {pass_s:g} s)")
    if record.http_status not in (0, 204, 413):
        problems.append(f"upload answered HTTP {record.http_status} {record.http_text[:60]}")
    if attack.refused and not message and record.http_status != 413:
        problems.append("no message on the page")
    return problems


async def _warm(base_url: str, pages: Sequence[str], timeout_s: float) -> tuple[dict[str, set[str]], list[str]]:
    """Open each page once (and Home/Engine with a valid custom model): the alerts each page shows by itself."""
    url = base_url.replace("http://", "ws://", 1) + "/_stcore/stream"
    baseline: dict[str, set[str]] = {}
    errors: list[str] = []
    valid = _q(("model", "custom"), ("custom_model", _raw_model_code(_catalog_config(QWEN_VL), "Qwen3-VL-8B-ok")))
    for page, query in [(p, "") for p in pages] + [("", valid), ("Engine", valid)]:
        async with _connect(url) as ws:
            run = await _page_run(ws, _rerun(page, query), 3 * timeout_s)
        if run.error or run.exceptions:
            errors.append(f"warm-up {page or 'Home'}: {run.error or run.exceptions[0][:100]}")
        if not query:
            baseline[page] = {body for _, body in run.alerts}
    return baseline, errors


async def _rehearse(base_url: str, attacks: Sequence[Attack], timeout_s: float, wait_s: float) -> None:
    """Each attack once, not measured, then ``wait_s`` and one visitor: what the first run of a code path loads.

    Python's first import of a module a path needs (the GGUF reader, the CSV reader, the share
    codec's error paths), Plotly's first figure of a kind and glibc's arenas grow once and stay:
    that is the server's working set, not what an attack leaves behind. Opening every page
    (:func:`_warm`) no longer reaches those paths now that links carry only what the user set,
    so the baseline is taken after one rehearsal of every attack, once its sessions (and their
    uploads) have outlived ``server.disconnectedSessionTTL`` (120 s) and a visitor's save has
    dropped them (Streamlit's ``MemorySessionStorage`` expires entries on a write).
    """
    for attack in attacks:
        await attack_once(base_url, attack, timeout_s)
    await asyncio.sleep(wait_s)
    visitor = Bystander()
    await bystander(base_url, visitor, loads=1, stop=None, think_s=0.0, timeout_s=timeout_s)
    await asyncio.sleep(1.0)


@dataclass
class Report:
    """Everything one :func:`run_attacks` measured (RSS in MiB, times in ms)."""

    rows: list[AttackRow]
    rss_before_mib: float
    rss_after_mib: float
    quiet_ms: list[float]
    attack_ms: list[float]
    bystander_errors: list[str]
    warm_errors: list[str]
    rss_settle: list[tuple[float, float]] = field(default_factory=list)
    """(seconds after the last attack, server RSS [MiB]) while settling; the last is ``rss_after_mib``."""

    @property
    def rss_change(self) -> float:
        return self.rss_after_mib / self.rss_before_mib - 1

    @property
    def quiet_median_ms(self) -> float | None:
        return statistics.median(self.quiet_ms) if self.quiet_ms else None

    @property
    def attack_median_ms(self) -> float | None:
        return statistics.median(self.attack_ms) if self.attack_ms else None

    @property
    def ratio(self) -> float | None:
        quiet, loud = self.quiet_median_ms, self.attack_median_ms
        return loud / quiet if quiet and loud is not None else None

    @property
    def all_passed(self) -> bool:
        return all(row.passed for row in self.rows)

    @property
    def targets_held(self) -> bool:
        return abs(self.rss_change) <= RSS_TARGET and self.ratio is not None and self.ratio <= BYSTANDER_TARGET

    def as_dict(self) -> dict:
        return {"attacks": [row.row() for row in self.rows],
                "rss_before_mib": round(self.rss_before_mib, 1), "rss_after_mib": round(self.rss_after_mib, 1),
                "rss_change": round(self.rss_change, 3), "rss_target": RSS_TARGET,
                "rss_settle_mib": [[t, round(m, 1)] for t, m in self.rss_settle],
                "bystander": {"quiet_median_ms": _round(self.quiet_median_ms),
                              "attack_median_ms": _round(self.attack_median_ms),
                              "ratio": None if self.ratio is None else round(self.ratio, 2),
                              "target": BYSTANDER_TARGET, "quiet_ms": [round(v) for v in self.quiet_ms],
                              "attack_ms": [round(v) for v in self.attack_ms], "errors": self.bystander_errors},
                "warm_errors": self.warm_errors, "all_passed": self.all_passed, "targets_held": self.targets_held}


def _round(value: float | None) -> int | None:
    return None if value is None else round(value)


async def _run(base_url: str, pid: int, attacks: Sequence[Attack], *, runs: int, timeout_s: float, pass_s: float,
               think_s: float, quiet_loads: int, settle_s: float, rehearse_s: float,
               progress: Callable[[str], None]) -> Report:
    pages = sorted({a.page for a in attacks} | {""})
    baseline, warm_errors = await _warm(base_url, pages, timeout_s)
    progress(f"warm-up: {', '.join(p or 'Home' for p in pages)} opened, {len(warm_errors)} errors")
    if rehearse_s > 0:
        await _rehearse(base_url, attacks, timeout_s, rehearse_s)
        progress(f"rehearsal: each of {len(attacks)} attacks once, then {rehearse_s:g} s and one visitor, "
                 f"RSS {rss_bytes(pid) / MIB:.0f} MiB")
    quiet = Bystander()
    await bystander(base_url, quiet, loads=quiet_loads, stop=None, think_s=think_s, timeout_s=timeout_s)
    rss_before = rss_bytes(pid) / MIB
    progress(f"quiet: bystander median {statistics.median(quiet.loads_ms) if quiet.loads_ms else float('nan'):.0f} ms"
             f" over {len(quiet.loads_ms)} loads, RSS {rss_before:.0f} MiB")

    loud, stop, ready = Bystander(), asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(bystander(base_url, loud, loads=MAX_BYSTANDER_LOADS, stop=stop, think_s=think_s,
                                         timeout_s=timeout_s, ready=ready))
    rows: list[AttackRow] = []
    try:
        with contextlib.suppress(TimeoutError):  # its uncounted first load done before the first attack
            await asyncio.wait_for(ready.wait(), timeout=timeout_s)
        for attack in attacks:
            times, problems, message, http_status = [], [], "", 0
            done = 0
            for _ in range(runs):
                record = await attack_once(base_url, attack, timeout_s)
                done += 1
                found = _message(record.run, baseline.get(attack.page, set()), attack)
                if record.http_status == 413:
                    found = f"HTTP 413 {record.http_text}".strip()
                if _frame_refused(attack, record.run):
                    found = record.run.error
                if record.http_status and found and not found.startswith("HTTP"):
                    found = f"HTTP {record.http_status}; {found}"
                message = message or found
                http_status = record.http_status or http_status
                times.append(record.run.ms)
                problems += [p for p in _judge(attack, record, found, pass_s) if p not in problems]
                if record.run.status is None and not _frame_refused(attack, record.run):  # a hang: do not pile on
                    problems.append(f"remaining {runs - done} run(s) skipped after a hang")
                    break
            row = AttackRow(attack.name, attack.kind, attack.page or "Home", done, runs, times, rss_bytes(pid) / MIB,
                            message, http_status, problems)
            rows.append(row)
            progress(f"{attack.name}: {'pass' if row.passed else 'FAIL'} median "
                     f"{row.row()['median_ms']} ms, RSS {row.rss_after_mib:.0f} MiB, {message[:80]!r}")
    finally:
        stop.set()
        with contextlib.suppress(TimeoutError):  # a hung load: wait_for cancels it
            await asyncio.wait_for(task, timeout=timeout_s + 5)
    settle = [(0.0, rss_bytes(pid) / MIB)]
    start = time.monotonic()
    for _ in range(int(settle_s // SETTLE_EVERY_S) + 1):  # RSS every SETTLE_EVERY_S until settle_s
        left = settle_s - (time.monotonic() - start)
        if left <= 0:
            break
        await asyncio.sleep(min(SETTLE_EVERY_S, left))
        settle.append((round(time.monotonic() - start, 1), rss_bytes(pid) / MIB))
    # One more visitor: Streamlit removes expired sessions from its storage only on a write
    # (a session saved at disconnect), so without a visitor an expired session would never go.
    visitor = Bystander()
    await bystander(base_url, visitor, loads=1, stop=None, think_s=0.0, timeout_s=timeout_s)
    await asyncio.sleep(1.0)
    settle.append((round(time.monotonic() - start, 1), rss_bytes(pid) / MIB))
    return Report(rows, rss_before, settle[-1][1], quiet.loads_ms, loud.loads_ms,
                  quiet.errors + loud.errors + visitor.errors, warm_errors, settle)


def run_attacks(base_url: str, pid: int, *, short: bool = False, runs: int | None = None, only: str = "",
                timeout_s: float = TIMEOUT_S, pass_s: float = PASS_S, think_s: float = 0.5, quiet_loads: int = 20,
                settle_s: float = 5.0, rehearse_s: float = 0.0,
                progress: Callable[[str], None] = lambda line: None) -> Report:
    """Run the attacks against the server at ``base_url`` (loopback) whose process is ``pid``.

    Args:
        short: The CI subset (:attr:`Attack.short`), one run each unless ``runs`` says otherwise.
        runs: Runs per attack (default 10, or 1 with ``short``).
        only: Keep attacks whose name contains this text (case-insensitive).
        timeout_s: Longest wait for one run [s] (hang guard).
        pass_s: A run must finish within this to pass [s].
        think_s: Pause between two bystander loads [s].
        quiet_loads: Bystander loads counted for the quiet figure.
        settle_s: Pause before the final RSS reading [s].
        rehearse_s: When above 0, every attack runs once before the baseline, followed by this
            pause [s] and one visitor (:func:`_rehearse`); 0 (the default, and the CI subset)
            takes the baseline after the page warm-up alone.
        progress: Called with one line after each phase and attack.
    """
    if urlsplit(base_url).hostname not in LOOPBACK_HOSTS:
        raise ValueError(f"attacks go to a loopback server only, not {base_url}")
    attacks = [a for a in build_attacks() if (a.short or not short) and only.lower() in a.name.lower()]
    count = runs if runs is not None else (1 if short else 10)
    coro = _run(base_url, pid, attacks, runs=count, timeout_s=timeout_s, pass_s=pass_s, think_s=think_s,
                quiet_loads=quiet_loads, settle_s=settle_s, rehearse_s=rehearse_s, progress=progress)
    # A thread of its own, as tests.ws_load.run_server_load: Playwright's sync API (the browser tests) may hold an
    # event loop on this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def format_table(report: Report) -> str:
    """The table and the two target lines."""
    header = f"{'attack':<42} | {'runs':>5} | {'median / max [ms]':>17} | {'RSS after [MiB]':>15} | " \
             f"{'message (first ' + str(MESSAGE_CHARS) + ' chars)':<{MESSAGE_CHARS}} | pass"
    lines = [header, "-" * len(header)]
    for row in report.rows:
        figures = row.row()
        times = f"{figures['median_ms']} / {figures['max_ms']}" if row.times_ms else "-"
        message = " ".join(row.message.split())[:MESSAGE_CHARS]
        lines.append(f"{row.attack:<42} | {row.runs:>2}/{row.planned:<2} | {times:>17} | {row.rss_after_mib:>15.0f} | "
                     f"{message:<{MESSAGE_CHARS}} | {'pass' if row.passed else 'FAIL'}")
        for problem in row.problems:
            lines.append(f"{'':<42}   ! {problem[:150]}")
    if len(report.rss_settle) > 1:  # the readings where it changed, and the last one
        shown = [(t, m) for i, (t, m) in enumerate(report.rss_settle)
                 if i in (0, len(report.rss_settle) - 1) or round(m) != round(report.rss_settle[i - 1][1])]
        lines.append("RSS after the last attack: " + ", ".join(f"{m:.0f} MiB at {t:g} s" for t, m in shown)
                     + " (the last after one more visitor)")
    verdict = "within" if abs(report.rss_change) <= RSS_TARGET else "over"
    lines.append(f"RSS before {report.rss_before_mib:.0f} MiB, after {report.rss_after_mib:.0f} MiB "
                 f"({report.rss_change:+.1%}, target within {RSS_TARGET:.0%}: {verdict})")
    quiet, loud, ratio = report.quiet_median_ms, report.attack_median_ms, report.ratio
    lines.append(f"bystander page load: quiet median {_round(quiet)} ms, under attack median {_round(loud)} ms "
                 f"(ratio {'n/a' if ratio is None else f'{ratio:.2f}'}, target within {BYSTANDER_TARGET:g}x: "
                 f"{'within' if ratio is not None and ratio <= BYSTANDER_TARGET else 'over'}; "
                 f"{len(report.quiet_ms)} quiet and {len(report.attack_ms)} loads under attack)")
    for error in (report.warm_errors + report.bystander_errors)[:10]:
        lines.append(f"note: {error}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Start a fresh server, run the attacks, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--short", action="store_true", help="the CI subset, once each")
    parser.add_argument("--runs", type=int, help="runs per attack (default 10, 1 with --short)")
    parser.add_argument("--only", default="", help="attacks whose name contains this text")
    parser.add_argument("--timeout", type=float, default=TIMEOUT_S, help="hang guard per run [s]")
    parser.add_argument("--pass-s", type=float, default=PASS_S, help="a run must finish within this [s]")
    parser.add_argument("--think", type=float, default=0.5, help="seconds between two bystander loads")
    parser.add_argument("--quiet-loads", type=int, default=20,
                        help="bystander loads for the quiet figure (enough for a steady median)")
    parser.add_argument("--settle", type=float, default=5.0,
                        help="seconds before the final RSS reading (Streamlit keeps a closed tab's session, its "
                             "uploads included, for server.disconnectedSessionTTL = 120 s)")
    parser.add_argument("--rehearse", type=float, default=None,
                        help="run every attack once before the baseline, then wait this long [s] (default 130 "
                             "for a full run, past the 120 s session TTL; 0 with --short); 0 turns it off")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)

    with fresh_server("attack_", ROOT) as server:
        if server is None:
            return 2
        report = run_attacks(server.base_url, server.pid, short=args.short, runs=args.runs, only=args.only,
                             timeout_s=args.timeout, pass_s=args.pass_s, think_s=args.think,
                             quiet_loads=args.quiet_loads, settle_s=args.settle,
                             rehearse_s=args.rehearse if args.rehearse is not None else (0.0 if args.short else 130.0),
                             progress=lambda line: print(line, flush=True))
        healthy = server.healthy()
    print(format_table(report))
    print(f"server healthy after the run: {healthy}")
    if args.json:
        args.json.write_text(json.dumps(report.as_dict() | {"healthy_after": healthy}, indent=2) + "\n")
    return 0 if report.all_passed and report.targets_held and healthy else 1


if __name__ == "__main__":
    raise SystemExit(main())
