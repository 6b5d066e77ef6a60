"""Benchmark the reverse planner on the issue's case (not a test; prints timings).

"200 users, 2,000-token prompts, 500-token outputs, Llama-3.1-70B", searched
over every priced catalog GPU x TP (1, 2, 4, 8) x replicas x KV dtype
(auto, fp8) within 8 GPUs. Reports:

1. the search itself (:func:`planner.reverse.find_setups`, model and GPU
   catalog already loaded): best and median of ``--repeat`` runs;
2. the same with a log-normal length distribution (Monte-Carlo sizing);
3. catalog loading (model spec + GPUs), first call in this process;
4. the whole CLI, ``python -m planner find ... --format json``, in a fresh
   process (interpreter start, imports, catalog, search, JSON).

Usage: ``python scripts/bench_reverse.py [--repeat 20] [--model ID]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _timed(fn, repeat: int) -> tuple[float, float, object]:
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="meta-llama/Llama-3.1-70B")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    start = time.perf_counter()
    from model_catalog import model_spec
    from model_catalog.gpus import load_gpus

    model = model_spec(args.model)
    gpus = list(load_gpus().values())
    load_s = time.perf_counter() - start

    from planner.traffic.find_types import FindRequest
    from planner.traffic.reverse import find_setups
    from planner.traffic.workload import LogNormal, Workload

    request = FindRequest(users=200, prompt_len=2000, output_len=500, max_gpus=8)
    best, median, result = _timed(lambda: find_setups(model, gpus, request), args.repeat)
    print(f"model {model.model_id}, {len(gpus)} GPUs in the catalog, {result.num_evaluated} setups evaluated")
    print(f"search (fixed lengths):        best {best * 1000:7.1f} ms, median {median * 1000:7.1f} ms")
    top = result.options[0]
    print(f"  cheapest: {top.num_gpus} x {top.gpu_id} tp {top.tensor_parallel_size} {top.kv_cache_dtype} "
          f"${top.price_per_hour:.2f}/h, {top.max_concurrent_sequences} users, margin {top.margin:.0%}")

    dist = FindRequest(users=200, workload=Workload(prompt=LogNormal(mean=2000, p95=4000),
                                                    output=LogNormal(mean=500, p95=1200), max_model_len=16384),
                       max_gpus=8)
    best_d, median_d, _ = _timed(lambda: find_setups(model, gpus, dist), max(1, args.repeat // 4))
    print(f"search (log-normal lengths):   best {best_d * 1000:7.1f} ms, median {median_d * 1000:7.1f} ms")
    print(f"catalog load (first call):     {load_s * 1000:7.1f} ms")

    cmd = [sys.executable, "-m", "planner", "find", "--model", args.model, "--users", "200", "--prompt-len", "2000",
           "--output-len", "500", "--max-gpus", "8", "--format", "json"]
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
    cli_s = time.perf_counter() - start
    print(f"whole CLI in a fresh process:  {cli_s * 1000:7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
