"""Read an engine's startup log: the figures it printed, and an estimate-vs-actual table.

:func:`parse_engine_log` recognises the lines vLLM (V0 and V1, every era),
SGLang, llama.cpp, TensorRT-LLM and TGI print while sizing their KV cache and
returns each figure with the line it came from. :func:`reconcile` lines those
figures up against an :class:`~planner.engines.types.EnginePlan`, and
:func:`request_from_log` turns them into overrides so the planner re-plans with
the overheads measured on that hardware (weights, activation peak, non-torch)
or pins the engine's own available memory.

Units: "GiB" and SGLang's "GB" are 2^30 bytes (SGLang divides by 2^30); vLLM V0's
"Loading model weights took X GB" is also GiB (it divides by 2^30). Printed
values carry their print rounding (2 decimals of GiB = +-5.4 MB).

Limits: a paste over :data:`MAX_LOG_CHARS` is refused unread; each line is read up to
:data:`MAX_LINE_CHARS`; every pattern is bounded, so the time is linear in the paste's
length (``scripts/bench_logparse.py`` measures it).

vLLM's refusal of a ``max_model_len`` that does not fit, "To serve at least one request with the models's max
seq len (L), (N GiB KV cache is needed, which is larger than the available KV cache memory (A GiB). Based on
the available memory, the estimated maximum model length is M.", always states the available memory ``A`` of
the worker it refused on (``_check_enough_kv_cache_memory``, run per worker by ``get_kv_cache_configs``, both
vllm/v1/core/kv_cache_utils.py; ``format_gib``: 2 decimals of GiB): it is read as
``refusal_available_kv_gib``, apart from the workers' own "Available KV cache memory" lines so that a log
holding both is not read as one more worker. Its "No available memory for the cache blocks" refusal states no
figure (same function, and V0's ``raise_if_cache_size_invalid``); the figure that causes it is the worker's
available memory, which vLLM prints as ``requested - non-KV memory`` and so below zero when the weights and the
profile's peak exceed ``gpu_memory_utilization`` x total (V1 vllm/v1/worker/gpu_worker.py
``determine_available_memory``; V0 vllm/worker/worker.py ``determine_num_available_blocks``: "kv_cache_size=",
"the rest of the memory reserved for KV Cache is"): those lines are read with their sign. V0's length refusal,
"The model's max seq len (L) is larger than the maximum number of tokens that can be stored in KV cache (T)"
(``raise_if_cache_size_invalid``: ``T = block_size x num_gpu_blocks``), gives ``max_model_len`` and
``refusal_kv_tokens``.

Sources (log formats): vLLM vllm/v1/worker/gpu_worker.py,
vllm/v1/core/kv_cache_utils.py (``_report_kv_cache_config``, ``_check_enough_kv_cache_memory``), vllm/worker/worker.py
(V0 "Memory profiling results"), vllm/executor/executor_base.py ("# GPU blocks"; from v0.7 "# CUDA blocks" or
"# cuda blocks", the platform's dispatch key);
SGLang python/sglang/srt/mem_cache/memory_pool.py, managers/scheduler.py,
model_executor/model_runner.py; llama.cpp src/llama-kv-cache.cpp,
src/llama-memory-recurrent.cpp (recurrent-state size and "RS buffer size"), src/llama-context.cpp; TensorRT-LLM cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp,
tensorrt_llm/_torch/pyexecutor/_util.py; TGI backends/v3/src (router); ENGINES.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from planner.units import GiB, MiB

MAX_LOG_CHARS = 2_000_000
"""Most characters :func:`parse_engine_log` reads, and the Engine page's log box accepts [characters].

A startup log, from the launch command to "ready", is tens to a few hundred kB (a
public 8-GPU SGLang boot log with every rank's lines: ~130 kB); 2,000,000 leaves room
for ten of those. Above it the paste is refused unread: the work is linear, but it is
a shared server's CPU (``re`` holds the GIL, so every other visitor waits), and over
16 MB the browser's websocket message was dropped without a word."""

MAX_LINE_CHARS = 16_384
"""Characters of one line that are scanned; the rest of a longer line is not read [characters].

Figure lines are under 1,000 characters (the longest, TensorRT-LLM's "Peak memory during
memory usage profiling" and SGLang's "Load weight end.", run to ~300 with their
timestamps); the longest lines of a real log are configuration dumps (vLLM "with
config:", SGLang "server_args=ServerArgs(...)"), several thousand. The cap bounds the
work of one line whatever it holds."""

_MAX_GAP = 500
"""Most characters between the two halves of a split pattern ("Load weight end." ...
"mem usage=", "Peak memory during memory usage profiling" ... ":") [characters].

Real lines put 20 (TensorRT-LLM: " (torch + non-torch)") to ~120 (SGLang 2026: " elapsed=...
s, type=<class>, quant=..., quant_algo=..., avail mem=... GB, ") characters there; 500 is
four times the longest. A bounded gap keeps the search linear: unbounded, every start rescans to
the end of the line (256 kB of "Load weight end." took 17 s)."""

_MAX_NAME_SUFFIX = 32
"""Most word characters after ``llama_kv_cache`` in a llama.cpp line [characters]; the real
suffixes ("_unified", "_iswa", "_unified_iswa") are at most 13. Bounded for the same reason
as :data:`_MAX_GAP` (``\\w*`` would swallow a run of repeated names)."""

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_SIGNED = r"(-?" + _NUM[1:]
"""A number that may be negative: vLLM's available KV memory and CUDA-graph estimate (module docstring)."""
_SP = r"\s*"


def _gap(anchor: str) -> str:
    """A lazy gap of at most :data:`_MAX_GAP` characters that stops at the next ``anchor``.

    Stopping at the anchor makes each character part of one start's scan only, so a line of
    repeated anchors costs one pass; the figure read from a real line is the same.
    """
    return r"(?:(?!" + anchor + r").){0," + str(_MAX_GAP) + r"}?"

# name, engine family, unit ("GiB", "MiB", "tokens", "count", "x", "bytes"), pattern, group
_PATTERNS: tuple[tuple[str, str, str, str, int], ...] = (
    ("available_kv_gib", "vllm", "GiB", r"Available KV cache memory:" + _SP + _SIGNED + _SP + r"GiB", 1),
    ("kv_cache_tokens", "vllm", "tokens", r"GPU KV cache size:" + _SP + _NUM + _SP + r"tokens", 1),
    ("concurrency_len", "vllm", "tokens", r"Maximum concurrency for " + _NUM + r" tokens per request", 1),
    ("max_concurrency", "vllm", "x", r"Maximum concurrency for [0-9,]+ tokens per request:" + _SP + _NUM + r"x", 1),
    ("num_gpu_blocks", "vllm", "count", r"# GPU blocks:" + _SP + _NUM, 1),
    ("num_gpu_blocks", "vllm", "count", r"# CUDA blocks:" + _SP + _NUM, 1),  # V0 v0.7+: the platform's dispatch key
    ("num_gpu_blocks", "vllm", "count", r"# cuda blocks:" + _SP + _NUM, 1),  # (vllm/executor/executor_base.py)
    ("num_gpu_blocks", "vllm", "count", r"num_gpu_blocks is:" + _SP + _NUM, 1),
    ("weights_gib", "vllm", "GiB", r"Model loading took" + _SP + _NUM + _SP + r"Gi?B", 1),
    ("weights_gib", "vllm", "GiB", r"Loading model weights took" + _SP + _NUM + _SP + r"Gi?B", 1),
    ("weights_gib", "vllm", "GiB", r"model weights take" + _SP + _NUM + _SP + r"GiB", 1),
    ("weights_gib", "vllm", "GiB", r"weights memory:" + _SP + _NUM + _SP + r"GiB", 1),
    ("activation_gib", "vllm", "GiB", r"PyTorch activation peak memory takes" + _SP + _NUM + _SP + r"GiB", 1),
    ("activation_gib", "vllm", "GiB", r"torch peak memory increase:" + _SP + _NUM + _SP + r"GiB", 1),
    ("activation_gib", "vllm", "GiB", r"[Pp]eak activation memory:?" + _SP + _NUM + _SP + r"GiB", 1),
    ("peak_torch_gib", "vllm", "GiB", r"peak_torch_memory=" + _NUM + r"GiB", 1),
    ("non_torch_gib", "vllm", "GiB", r"non_torch_memory(?:=|\s+takes\s+)" + _NUM + _SP + r"GiB", 1),
    ("non_torch_gib", "vllm", "GiB", r"non-torch (?:forward increase )?memory:?" + _SP + _NUM + _SP + r"GiB", 1),
    ("available_kv_gib", "vllm", "GiB", r"kv_cache_size=" + _SIGNED + r"GiB", 1),
    ("available_kv_gib", "vllm", "GiB",
     r"the rest of the memory reserved for KV Cache is" + _SP + _SIGNED + _SP + "GiB", 1),
    ("total_gpu_gib", "vllm", "GiB", r"total_gpu_memory(?:=| \()" + _NUM + r"GiB", 1),
    ("gpu_memory_utilization", "vllm", "x", r"gpu_memory_utilization(?:=| \()" + _NUM, 1),
    ("cudagraph_gib", "vllm", "GiB", r"Graph capturing finished in [0-9.]+ secs?, took" + _SP + _NUM + _SP + "GiB", 1),
    ("cudagraph_gib", "vllm", "GiB", r"CUDA ?[Gg]raph memory:?" + _SP + _SIGNED + _SP + "GiB", 1),
    ("needed_kv_gib", "vllm", "GiB", r"\(" + _NUM + _SP + r"GiB KV cache is needed", 1),
    ("refusal_available_kv_gib", "vllm", "GiB",
     r"larger than the available KV cache memory \(" + _NUM + _SP + r"GiB\)", 1),
    ("estimated_max_model_len", "vllm", "tokens", r"estimated maximum model length is" + _SP + _NUM, 1),
    ("max_model_len", "vllm", "tokens", r"max seq len \(" + _NUM + r"\)", 1),
    ("refusal_kv_tokens", "vllm", "tokens",
     r"maximum number of tokens that can be stored in KV cache \(" + _NUM + r"\)", 1),
    ("max_model_len", "vllm", "tokens", r"Using max model len" + _SP + _NUM, 1),
    ("max_num_batched_tokens", "vllm", "tokens", r"max_num_batched_tokens=" + _NUM, 1),
    ("block_size", "vllm", "tokens", r"[Ff]orcing kv cache block size to" + _SP + _NUM, 1),
    ("sglang_tokens", "sglang", "tokens", r"KV Cache is allocated\. #tokens:" + _SP + _NUM, 1),
    ("sglang_k_gib", "sglang", "GiB", r"K size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_v_gib", "sglang", "GiB", r"(?<!K)V size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_kv_gib", "sglang", "GiB", r"KV Cache is allocated\. #tokens: [0-9]+, KV size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_max_total_tokens", "sglang", "tokens", r"max_total_num_tokens=" + _NUM, 1),
    ("sglang_max_running_requests", "sglang", "count", r"max_running_requests=" + _NUM, 1),
    ("sglang_context_len", "sglang", "tokens", r"context_len=" + _NUM, 1),
    ("sglang_avail_gib", "sglang", "GiB", r"avail mem=" + _NUM + _SP + "GB", 1),
    ("sglang_weights_gib", "sglang", "GiB",
     r"Load weight end\." + _gap(r"Load weight end\.") + r"mem usage=" + _NUM + _SP + "GB", 1),
    ("llamacpp_kv_mib", "llama.cpp", "MiB",
     r"llama_kv_cache\w{0,%d}:\s+size =" % _MAX_NAME_SUFFIX + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_kv_mib", "llama.cpp", "MiB", r"KV self size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_cells", "llama.cpp", "count",
     r"llama_kv_cache\w{0,%d}:\s+size =\s*[0-9.]+ MiB \(\s*" % _MAX_NAME_SUFFIX + _NUM + r" cells", 1),
    ("llamacpp_layers", "llama.cpp", "count", r"MiB \(\s*[0-9]+ cells,\s*" + _NUM + r" layers", 1),
    ("llamacpp_streams", "llama.cpp", "count", r"layers,\s*[0-9]+/" + _NUM + r" seqs\)", 1),
    ("llamacpp_kv_buffer_mib", "llama.cpp", "MiB", r"KV buffer size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_rs_mib", "llama.cpp", "MiB", r"llama_memory_recurrent:\s+size =" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_rs_buffer_mib", "llama.cpp", "MiB", r"RS buffer size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_n_ctx", "llama.cpp", "tokens", r"llama_context:\s+n_ctx\s*=" + _SP + _NUM, 1),
    ("llamacpp_n_ctx_seq", "llama.cpp", "tokens", r"n_ctx_seq\s*=" + _SP + _NUM, 1),
    ("llamacpp_n_seq_max", "llama.cpp", "count", r"n_seq_max\s*=" + _SP + _NUM, 1),
    ("llamacpp_compute_buffer_mib", "llama.cpp", "MiB", r"compute buffer size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_model_buffer_mib", "llama.cpp", "MiB", r"model buffer size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("trtllm_alloc_gib", "trtllm", "GiB", r"Allocated" + _SP + _NUM + _SP + r"GiB for max tokens in paged KV cache", 1),
    ("trtllm_tokens", "trtllm", "tokens", r"for max tokens in paged KV cache \(" + _NUM + r"\)", 1),
    ("trtllm_tokens", "trtllm", "tokens", r"Max tokens in paged KV cache:" + _SP + _NUM, 1),
    ("trtllm_tokens", "trtllm", "tokens", r"Using" + _SP + _NUM + _SP + r"tokens in paged KV cache", 1),
    ("trtllm_blocks", "trtllm", "count", r"Number of blocks in KV cache primary pool:" + _SP + _NUM, 1),
    ("trtllm_estimated_kv_gib", "trtllm", "GiB", r"Estimated max memory in KV cache\s*:" + _SP + _NUM + _SP + "GiB", 1),
    ("trtllm_peak_gib", "trtllm", "GiB", r"Peak memory during memory usage profiling"
     + _gap("Peak memory during memory usage profiling") + ":" + _SP + _NUM + _SP + "GiB", 1),
    ("tgi_blocks", "tgi", "count", r"KV-cache blocks:" + _SP + _NUM, 1),
    ("tgi_block_size", "tgi", "tokens", r"KV-cache blocks: [0-9]+, size:" + _SP + _NUM, 1),
    ("tgi_max_total_tokens", "tgi", "tokens", r"Setting max batch total tokens to" + _SP + _NUM, 1),
)


def _required_literal(pattern: str) -> str:
    """The longest run of plain characters that every match of ``pattern`` contains.

    Reads the pattern's top level only: groups, classes, escapes such as ``\\s`` and a
    character under a quantifier break a run; ``\\.`` and ``\\(`` are the characters. Used
    as a pre-filter (``in`` is a plain substring search, far cheaper than a regex): a
    line without the literal cannot match.

    Raises:
        ValueError: the pattern has a top-level ``|`` (no literal is then required).
    """
    runs, run, depth, i = [], "", 0, 0
    while i < len(pattern):
        char, literal = pattern[i], None
        if char == "\\":
            escaped = pattern[i + 1]
            literal = escaped if not escaped.isalnum() else None
            i += 2
        elif char == "[":
            i = pattern.index("]", i + 2) + 1  # no class here holds "]"
        elif char in "*+?{":
            run = run[:-1]  # the character before is optional or repeated: not part of a run
            runs.append(run)
            run = ""
            i = pattern.index("}", i) + 1 if char == "{" else i + 1
            continue
        else:
            if char == "|" and depth == 0:
                raise ValueError(f"top-level alternation in {pattern[:60]!r}")
            depth += {"(": 1, ")": -1}.get(char, 0)
            literal = None if char in "().^$|" else char
            i += 1
        if literal is not None and depth == 0:
            run += literal
        else:
            runs.append(run)
            run = ""
    return max(runs + [run], key=len)


_COMPILED = tuple((n, e, u, re.compile(p), g, _required_literal(p)) for n, e, u, p, g in _PATTERNS)
"""Each pattern compiled, with the literal every match contains (the pre-filter of :func:`parse_engine_log`)."""
_VERSION = re.compile(r"(?:vLLM API server version|LLM engine \(v)\s*([0-9][0-9a-z.+\-]*)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
"""An ANSI colour code. Linear as is: a run of ``[0-9;]`` cannot hold the next ``\\x1b``, so each
character is scanned from one start only; ``_VERSION`` likewise (its ``\\s*`` run ends at the
next non-space)."""

LABELS: dict[str, str] = {
    "available_kv_gib": "Available KV cache memory", "kv_cache_tokens": "GPU KV cache size",
    "max_concurrency": "Maximum concurrency", "concurrency_len": "tokens per request (concurrency line)",
    "num_gpu_blocks": "# GPU blocks", "weights_gib": "Model loading (weights)",
    "activation_gib": "Activation peak", "peak_torch_gib": "Peak torch memory (incl. weights)",
    "non_torch_gib": "Non-torch memory", "total_gpu_gib": "Total GPU memory",
    "gpu_memory_utilization": "gpu_memory_utilization", "cudagraph_gib": "CUDA graph memory",
    "needed_kv_gib": "KV needed for one max-length request",
    "refusal_available_kv_gib": "Available KV cache memory (in the refusal)",
    "estimated_max_model_len": "Estimated max model length",
    "refusal_kv_tokens": "KV cache tokens (in the refusal)",
    "max_model_len": "max_model_len", "max_num_batched_tokens": "max_num_batched_tokens",
    "block_size": "Block size", "sglang_tokens": "SGLang #tokens", "sglang_k_gib": "SGLang K size",
    "sglang_v_gib": "SGLang V size", "sglang_kv_gib": "SGLang KV size (MLA)",
    "sglang_max_total_tokens": "max_total_num_tokens", "sglang_max_running_requests": "max_running_requests",
    "sglang_context_len": "context_len", "sglang_avail_gib": "avail mem", "sglang_weights_gib": "weight mem usage",
    "llamacpp_kv_mib": "llama_kv_cache size", "llamacpp_cells": "KV cells per stream", "llamacpp_layers": "KV layers",
    "llamacpp_streams": "KV streams",
    "llamacpp_kv_buffer_mib": "KV buffer size", "llamacpp_rs_mib": "llama_memory_recurrent size",
    "llamacpp_rs_buffer_mib": "RS buffer size", "llamacpp_n_ctx": "n_ctx", "llamacpp_n_ctx_seq": "n_ctx_seq",
    "llamacpp_n_seq_max": "n_seq_max", "llamacpp_compute_buffer_mib": "compute buffer size",
    "llamacpp_model_buffer_mib": "model buffer size", "trtllm_alloc_gib": "Allocated for paged KV cache",
    "trtllm_tokens": "Max tokens in paged KV cache", "trtllm_blocks": "Blocks in primary pool",
    "trtllm_estimated_kv_gib": "Estimated max memory in KV cache", "trtllm_peak_gib": "Peak memory in profiling",
    "tgi_blocks": "KV-cache blocks", "tgi_block_size": "KV-cache block size",
    "tgi_max_total_tokens": "max batch total tokens",
}
"""Display label of each figure name."""

_KEY_FIGURES: dict[str, tuple[str, ...]] = {
    "vllm": ("available_kv_gib|refusal_available_kv_gib", "weights_gib",
             "kv_cache_tokens|num_gpu_blocks|refusal_kv_tokens", "max_concurrency"),
    "sglang": ("sglang_tokens", "sglang_k_gib|sglang_kv_gib", "sglang_max_total_tokens"),
    "llama.cpp": ("llamacpp_kv_mib|llamacpp_rs_mib", "llamacpp_cells|llamacpp_rs_mib"),
    "trtllm": ("trtllm_tokens", "trtllm_alloc_gib"),
    "tgi": ("tgi_blocks", "tgi_max_total_tokens"),
}


@dataclass(frozen=True, kw_only=True)
class LogFigure:
    """One number found in a log.

    Attributes:
        name: Figure name (key of :data:`LABELS`).
        engine: Engine family the line belongs to.
        value: The number as printed (commas removed).
        unit: ``GiB``, ``MiB``, ``tokens``, ``count`` or ``x``.
        line_number: 1-based line in the pasted text.
        line: The line, stripped.
    """

    name: str
    engine: str
    value: float
    unit: str
    line_number: int
    line: str

    @property
    def bytes(self) -> int:
        """The value in bytes for GiB / MiB figures [bytes]."""
        scale = {"GiB": GiB, "MiB": MiB}.get(self.unit)
        if scale is None:
            raise ValueError(f"{self.name} is in {self.unit}, not a size")
        return int(round(self.value * scale))


@dataclass(frozen=True, kw_only=True)
class LogFigures:
    """Everything recognised in a pasted log.

    Attributes:
        engine: Detected family (``vllm``, ``sglang``, ``llama.cpp``, ``trtllm``,
            ``tgi``) or None when nothing was recognised.
        version: vLLM version when the log states it.
        figures: Every figure found, in log order.
        message: What was recognised and what is missing, for the user.
        complete: True when the key figures of the engine were all found.
    """

    engine: str | None
    version: str | None
    figures: tuple[LogFigure, ...] = field(default_factory=tuple)
    message: str = ""
    complete: bool = False

    def all(self, name: str) -> tuple[LogFigure, ...]:
        """Every figure of that name (vLLM prints some per worker)."""
        return tuple(f for f in self.figures if f.name == name)

    def get(self, name: str) -> LogFigure | None:
        """The first figure of that name, or None."""
        found = self.all(name)
        return found[0] if found else None

    def value(self, name: str) -> float | None:
        figure = self.get(name)
        return None if figure is None else figure.value

    def min_bytes(self, name: str) -> int | None:
        """Smallest of the per-worker values of a size figure [bytes], or None."""
        found = self.all(name)
        return min(f.bytes for f in found) if found else None


def parse_engine_log(text: str) -> LogFigures:
    """Recognise the KV-sizing figures in an engine's startup log.

    Linear in the length of ``text``: every pattern is bounded (:data:`_MAX_GAP`), a line
    is read up to :data:`MAX_LINE_CHARS`, and a pattern runs only on lines holding its
    literal text. A paste over :data:`MAX_LOG_CHARS` is refused unread.

    Args:
        text: Pasted log (any mix of lines; ANSI colour codes are ignored).

    Returns:
        A :class:`LogFigures`; ``engine`` None and an explanatory ``message``
        when no known line was found or the paste is over :data:`MAX_LOG_CHARS`.
        Never raises on odd input.
    """
    text = text or ""
    if len(text) > MAX_LOG_CHARS:
        return LogFigures(engine=None, version=None, message=(
            f"The log box accepts at most {MAX_LOG_CHARS:,} characters; this paste has {len(text):,}. Paste the "
            "startup part only, from model loading to the KV-cache lines (a few hundred lines)."))
    return _scan(text)


def _scan(text: str) -> LogFigures:
    """:func:`parse_engine_log` without the :data:`MAX_LOG_CHARS` check (``scripts/bench_logparse.py``
    times it past the limit to show the growth is linear)."""
    text = _ANSI.sub("", text)
    active = tuple(entry for entry in _COMPILED if entry[5] in text)  # patterns whose literal is in the paste
    figures: list[LogFigure] = []
    version, long_line = None, None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if len(line) > MAX_LINE_CHARS:
            line, long_line = line[:MAX_LINE_CHARS], long_line or number
        if not line:
            continue
        if version is None and (match := _VERSION.search(line)):
            version = match.group(1).rstrip(")")
        for name, engine, unit, pattern, group, literal in active:
            if literal not in line:
                continue
            for m in pattern.finditer(line):
                value = float(m.group(group).replace(",", ""))
                figures.append(LogFigure(name=name, engine=engine, value=value, unit=unit, line_number=number,
                                         line=line))
    figures = _dedupe(figures)
    engine = _detect(figures)
    message = _message(engine, figures)
    if long_line is not None:
        message += (f" Line {long_line:,} is longer than {MAX_LINE_CHARS:,} characters and was read only that far; "
                    "paste the log as the engine printed it, one line per log record.")
    return LogFigures(engine=engine, version=version, figures=tuple(figures), message=message,
                      complete=engine is not None and not _missing(engine, figures))


def _dedupe(figures: list[LogFigure]) -> list[LogFigure]:
    """Drop a figure matched twice on one line by overlapping patterns."""
    seen, out = set(), []
    for f in figures:
        key = (f.name, f.line_number, f.value)
        if key not in seen:
            seen.add(key)
            out.append(f)
    return out


def _detect(figures: list[LogFigure]) -> str | None:
    counts: dict[str, int] = {}
    for f in figures:
        if f.name in ("max_model_len", "max_num_batched_tokens"):
            continue  # shared vocabulary; not evidence of an engine
        counts[f.engine] = counts.get(f.engine, 0) + 1
    return max(counts, key=counts.get) if counts else None


_AFTER_SIZING: frozenset[str] = frozenset({"kv_cache_tokens|num_gpu_blocks|refusal_kv_tokens", "max_concurrency"})
"""vLLM's key figures printed only once the cache is sized (``_report_kv_cache_config``, after the memory check of
``get_kv_cache_configs``, vllm/v1/core/kv_cache_utils.py): a launch refused at that check never prints them."""

_REFUSAL_FIGURES: frozenset[str] = frozenset({"needed_kv_gib", "refusal_available_kv_gib"})
"""Figures of vLLM's "To serve at least one request ..." refusal: a log holding one stops before
:data:`_AFTER_SIZING`'s lines. So does a log whose available memory is not above zero (the "No available memory
for the cache blocks" refusal of the same check)."""


def _missing(engine: str, figures: list[LogFigure]) -> list[str]:
    names = {f.name for f in figures}
    keys = _KEY_FIGURES.get(engine, ())
    no_memory = any(f.value <= 0 for f in figures if f.name == "available_kv_gib")
    if engine == "vllm" and (names & _REFUSAL_FIGURES or no_memory):
        keys = tuple(key for key in keys if key not in _AFTER_SIZING)
    return [key for key in keys if not any(k in names for k in key.split("|"))]


def _message(engine: str | None, figures: list[LogFigure]) -> str:
    if engine is None:
        return ("No engine figures recognised. Paste the startup log of vLLM (lines such as 'Available KV cache "
                "memory: X GiB', 'GPU KV cache size: N tokens'), SGLang ('KV Cache is allocated. #tokens: N, K "
                "size: X GB, V size: Y GB'), llama.cpp ('llama_kv_cache: size = X MiB (N cells, ...)'), "
                "TensorRT-LLM ('Allocated X GiB for max tokens in paged KV cache (N)') or TGI "
                "('KV-cache blocks: N, size: S').")
    found = sorted({LABELS.get(f.name, f.name) for f in figures if f.engine == engine})
    missing = [" or ".join(LABELS.get(k, k) for k in key.split("|")) for key in _missing(engine, figures)]
    text = f"Recognised {engine} log: {', '.join(found)}."
    if missing:
        text += (f" Not found: {', '.join(missing)} -- the log looks partial; paste it from model loading to the "
                 "KV-cache lines for a full comparison.")
    return text
