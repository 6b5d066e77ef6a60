"""Benchmark: planner sweep time and app rerun time per page (not a test).

Usage: ``python scripts/benchmark.py [--repeats N]``

1. Planner sweep: every catalog model x every catalog GPU x 256 context points
   (``planner.sweep.catalog_sweep``), timed after one warm-up (catalog loading
   and config parsing excluded: the app caches them).
2. Page rerun: each page run in ``streamlit.testing.v1.AppTest`` once to warm
   caches, then re-run after a widget change; reports the median and max.

Targets (issue "Ten times faster than the closest peer"; "Planner v1" asked 100 ms / 300 ms):
sweep under 50 ms, page rerun under 150 ms. The load average is printed with the figures.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def bench_sweep(repeats: int) -> dict:
    from model_catalog import model_ids, model_spec
    from model_catalog.gpus import load_gpus
    from planner.budget import PlanRequest
    from planner.sweep import catalog_sweep, context_points

    models = tuple(model_spec(m) for m in model_ids())
    gpus = tuple(g.framework_memory_bytes for g in load_gpus().values())
    contexts = context_points(1, 1 << 20, 256)[:256]
    while len(contexts) < 256:  # rounding merges a few small points; top up linearly
        contexts = tuple(sorted(set(contexts) | {contexts[-1] + len(contexts)}))
    request = PlanRequest(context_len=8192)
    catalog_sweep(models, gpus, request, contexts)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        catalog_sweep(models, gpus, request, contexts)
        times.append(time.perf_counter() - t0)
    return {"models": len(models), "gpus": len(gpus), "contexts": len(contexts),
            "evaluations": len(models) * len(gpus) * len(contexts),
            "median_ms": 1000 * statistics.median(times), "max_ms": 1000 * max(times)}


def bench_pages(repeats: int) -> list[dict]:
    from streamlit.testing.v1 import AppTest

    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    results = []
    for page in pages:
        at = AppTest.from_file(str(page), default_timeout=60)
        t0 = time.perf_counter()
        at.run()
        first = time.perf_counter() - t0
        times = []
        for i in range(repeats):
            widget = next(iter(at.number_input), None)
            if widget is not None:
                widget.set_value(widget.value + (1 if i % 2 == 0 else -1) * (widget.step or 1))
            t0 = time.perf_counter()
            at.run()
            times.append(time.perf_counter() - t0)
        results.append({"page": page.name, "first_run_ms": 1000 * first,
                        "rerun_median_ms": 1000 * statistics.median(times), "rerun_max_ms": 1000 * max(times),
                        "exceptions": len(at.exception)})
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} before")
    sweep = bench_sweep(args.repeats)
    print(f"sweep: {sweep['models']} models x {sweep['gpus']} GPUs x {sweep['contexts']} contexts "
          f"= {sweep['evaluations']:,} points: median {sweep['median_ms']:.1f} ms, max {sweep['max_ms']:.1f} ms "
          f"(target < 50 ms)")
    for row in bench_pages(args.repeats):
        print(f"page {row['page']:<28} first run {row['first_run_ms']:7.0f} ms, rerun median "
              f"{row['rerun_median_ms']:6.0f} ms, max {row['rerun_max_ms']:6.0f} ms (target < 150 ms), "
              f"exceptions {row['exceptions']}")
    print(f"load average {os.getloadavg()[0]:.2f} after")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
