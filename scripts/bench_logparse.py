"""Benchmark (not a test): time to parse a pasted engine log, at 64 KB, 1 MB and 16 MB, realistic and hostile.

Usage: ``python scripts/bench_logparse.py [--repeats 3] [--clock cpu|wall] [--format table|json]``

What is parsed (every input is ASCII, so 1 character = 1 byte; KB and MB are 2^10 and 2^20):

* ``realistic log``: :data:`REAL_LOG` (startup lines of vLLM V1 and V0, SGLang,
  llama.cpp, TensorRT-LLM and TGI, with the noise lines around them: a config dump,
  progress bars, HTTP access lines) repeated to the size;
* ``hostile: X``: the anchor ``X`` of a pattern that had an unbounded gap before the
  fix (``Load weight end\\..*?mem usage=``, ``Peak memory during memory usage profiling.*?:``,
  ``llama_kv_cache\\w*:``) repeated to the size, once as a single line (no newline:
  the paste that took 17 s at 256 KB) and once cut into lines of
  :data:`~planner.engines.logparse.MAX_LINE_CHARS` (so the line cap alone does not
  bound the work and the bounded gaps are what is measured).

The timed function is the parser's scan, ``planner.engines.logparse._scan``: it is
:func:`~planner.engines.logparse.parse_engine_log` without the
:data:`~planner.engines.logparse.MAX_LOG_CHARS` check, so growth can be measured past
the 2,000,000-character limit (at 16 MB ``parse_engine_log`` refuses the paste unread;
its time for that is printed below the table). Each cell is the fastest of
``--repeats`` runs [s]; ``s/MB`` is that time per 2^20 characters, and ``growth`` is
the 16 MB time per MB over the 64 KB time per MB: 1.0 is linear, a quadratic parser
shows ~256. ``--clock cpu`` (default) times this process's CPU time, which other
work on a shared machine disturbs less than the wall clock. Timings vary between
machines and runs: they are kept out of the tests (``tests/test_logparse.py`` checks
the patterns are bounded instead). The script changes nothing and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.engines import logparse  # noqa: E402

SIZES: dict[str, int] = {"64 KB": 64 << 10, "1 MB": 1 << 20, "16 MB": 16 << 20}
"""Paste sizes timed [characters]: a long real log, half the box's limit, eight times the limit."""

REAL_LOG = """\
(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=1671) INFO 09-04 01:02:30 [core.py:74] Initializing a V1 LLM engine (v0.10.1.1) with config: \
model='Qwen/Qwen2-7B-Instruct', speculative_config=None, tokenizer='Qwen/Qwen2-7B-Instruct', \
skip_tokenizer_init=False, \
tokenizer_mode=auto, revision=None, trust_remote_code=False, dtype=torch.bfloat16, max_seq_len=16384, \
download_dir=None, load_format=auto, tensor_parallel_size=1, pipeline_parallel_size=1, quantization=None, \
enforce_eager=False, kv_cache_dtype=auto, device_config=cuda, seed=0, served_model_name=Qwen/Qwen2-7B-Instruct
(APIServer pid=1671) INFO 09-04 01:02:37 [__init__.py:1750] Using max model len 16384
(APIServer pid=1671) INFO 09-04 01:02:38 [scheduler.py:222] Chunked prefill is enabled with max_num_batched_tokens=2048.
Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:04<00:00,  1.10s/it]
(EngineCore_0 pid=1812) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and 4.42 seconds
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 5.01 GiB
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:849] GPU KV cache size: 93,872 tokens
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens per \
request: 5.73x
Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 67/67 [00:02<00:00, 27.01it/s]
(EngineCore_0 pid=1812) INFO 09-04 01:04:32 [gpu_model_runner.py:2708] Graph capturing finished in 3 secs, took 0.50 GiB
(APIServer pid=1671) INFO:     127.0.0.1:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK
INFO 12-02 10:00:01 model_runner.py:1077] Loading model weights took 14.9888 GB
INFO 12-02 10:00:05 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.25GiB \
peak_torch_memory=17.06GiB memory_usage_post_profile=15.61GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB \
gpu_memory_utilization=0.90
INFO 12-02 10:00:05 gpu_executor.py:113] # GPU blocks: 1952, # CPU blocks: 2048
[2025-07-21 10:00:00 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=19.40 GB, \
mem usage=55.52 GB.
[2025-07-21 10:00:01 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB
[2025-07-21 10:00:02 TP0] max_total_num_tokens=367404, chunked_prefill_size=8192, max_prefill_tokens=16384, \
max_running_requests=4096, context_len=40960, available_gpu_mem=2.81 GB
[2025-07-21 10:00:09 TP0] Prefill batch. #new-seq: 1, #new-token: 841, #cached-token: 0, token usage: 0.00
llama_context: n_seq_max     = 4
llama_context: n_ctx         = 1024
llama_kv_cache:      CUDA0 KV buffer size =    15.00 MiB
llama_kv_cache: size =   15.00 MiB (   256 cells,  15 layers,  4/4 seqs), K (f16):    7.50 MiB, V (f16):    7.50 MiB
llama_context:      CUDA0 compute buffer size =   300.75 MiB
[01/16/2026-06:20:15] [TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 91.46 GiB, \
available KV cache memory when calculating max tokens: 41.11 GiB, fraction is set 0.85, kv size is 35136.
[TensorRT-LLM][INFO] [MemUsageChange] Allocated 4.53 GiB for max tokens in paged KV cache (395776).
INFO text_generation_router: KV-cache blocks: 9000, size: 1
INFO text_generation_router: Setting max batch total tokens to 9000
"""
"""One copy of a mixed startup log [~3.4 KB]. The figure lines are the public log excerpts quoted in
``tests/test_logparse.py`` (vLLM 0.10.1.1 and V0, SGLang, llama.cpp, TensorRT-LLM, TGI) plus TensorRT-LLM's
"Peak memory" line as a January 2026 log prints it; the lines without a figure (config dump, progress bars,
an HTTP access line, a prefill line) are written in each engine's format to stand for the noise around them."""

HOSTILE: tuple[str, ...] = ("Load weight end.", "Peak memory during memory usage profiling", "llama_kv_cache")
"""The anchors whose pattern rescanned the rest of the line from every start before the gaps were bounded."""


def _repeat(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def _wrapped(unit: str, chars: int) -> str:
    """``unit`` repeated to ``chars`` characters, in lines of at most MAX_LINE_CHARS whole copies."""
    step = logparse.MAX_LINE_CHARS - logparse.MAX_LINE_CHARS % len(unit)
    text = _repeat(unit, chars)
    return "\n".join(text[i:i + step] for i in range(0, len(text), step))


def inputs() -> dict[str, Callable[[int], str]]:
    """Each input's name and the function that builds it at a size [characters]."""
    made: dict[str, Callable[[int], str]] = {"realistic log": lambda n: _repeat(REAL_LOG, n)}
    for unit in HOSTILE:
        made[f"hostile: {unit!r} x N, one line"] = lambda n, u=unit: _repeat(u, n)
        made[f"hostile: {unit!r} x N, lines"] = lambda n, u=unit: _wrapped(u, n)
    return made


def _timer(clock: str):
    return time.process_time if clock == "cpu" else time.perf_counter


def best_time(function, text: str, repeats: int, clock: str) -> float:
    """The fastest of ``repeats`` calls of ``function(text)`` [s]."""
    now, best = _timer(clock), float("inf")
    for _ in range(repeats):
        start = now()
        function(text)
        best = min(best, now() - start)
    return best


def run(repeats: int, clock: str) -> dict:
    """Times of every input at every size, and of the refusal of the largest paste."""
    rows = []
    for name, build in inputs().items():
        times = {}
        for label, chars in SIZES.items():
            text = build(chars)
            times[label] = {"chars": len(text), "seconds": best_time(logparse._scan, text, repeats, clock)}
        per_mb = {label: t["seconds"] / (t["chars"] / (1 << 20)) for label, t in times.items()}
        first, last = list(SIZES)[0], list(SIZES)[-1]
        rows.append({"input": name, "times": times, "seconds_per_mb": per_mb,
                     "growth": per_mb[last] / per_mb[first] if per_mb[first] else None})
    big = _repeat(REAL_LOG, SIZES["16 MB"])
    refused = logparse.parse_engine_log(big)
    return {"clock": clock, "repeats": repeats, "rows": rows,
            "refusal": {"chars": len(big), "seconds": best_time(logparse.parse_engine_log, big, repeats, clock),
                        "message": refused.message}}


def table(results: dict) -> str:
    """The results as a markdown table, then the refusal line."""
    sizes = list(SIZES)
    lines = ["| input | " + " | ".join(f"{s} [s]" for s in sizes) + " | "
             + " | ".join(f"s/MB at {s}" for s in sizes) + " | growth (16 MB / 64 KB per MB) |",
             "|---|" + "---:|" * (2 * len(sizes) + 1)]
    for r in results["rows"]:
        growth = "" if r["growth"] is None else f"{r['growth']:.2f}"
        lines.append(f"| {r['input']} | " + " | ".join(f"{r['times'][s]['seconds']:.4f}" for s in sizes) + " | "
                     + " | ".join(f"{r['seconds_per_mb'][s]:.4f}" for s in sizes) + f" | {growth} |")
    refusal = results["refusal"]
    lines.append("")
    lines.append(f"parse_engine_log on {refusal['chars']:,} characters (over MAX_LOG_CHARS = "
                 f"{logparse.MAX_LOG_CHARS:,}): {refusal['seconds'] * 1e6:.1f} us, refused unread: "
                 f"\"{refusal['message']}\"")
    lines.append(f"clock: {results['clock']}, fastest of {results['repeats']} runs per cell")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell; the fastest is kept (default 3)")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu", help="process CPU time or wall clock")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats {args.repeats}: give 1 or more runs per cell")
    results = run(args.repeats, args.clock)
    print(json.dumps(results, indent=1) if args.format == "json" else table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
