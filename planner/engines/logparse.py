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

Sources (log formats): vLLM vllm/v1/worker/gpu_worker.py,
vllm/v1/core/kv_cache_utils.py (``_report_kv_cache_config``), vllm/worker/worker.py
(V0 "Memory profiling results"), vllm/executor/executor_base.py ("# GPU blocks");
SGLang python/sglang/srt/mem_cache/memory_pool.py, managers/scheduler.py,
model_executor/model_runner.py; llama.cpp src/llama-kv-cache.cpp,
src/llama-memory-recurrent.cpp (recurrent-state size and "RS buffer size"), src/llama-context.cpp; TensorRT-LLM cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp,
tensorrt_llm/_torch/pyexecutor/_util.py; TGI backends/v3/src (router); ENGINES.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from planner.units import GiB, MiB

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"
_SP = r"\s*"

# name, engine family, unit ("GiB", "MiB", "tokens", "count", "x", "bytes"), pattern, group
_PATTERNS: tuple[tuple[str, str, str, str, int], ...] = (
    ("available_kv_gib", "vllm", "GiB", r"Available KV cache memory:" + _SP + _NUM + _SP + r"GiB", 1),
    ("kv_cache_tokens", "vllm", "tokens", r"GPU KV cache size:" + _SP + _NUM + _SP + r"tokens", 1),
    ("concurrency_len", "vllm", "tokens", r"Maximum concurrency for " + _NUM + r" tokens per request", 1),
    ("max_concurrency", "vllm", "x", r"Maximum concurrency for [0-9,]+ tokens per request:" + _SP + _NUM + r"x", 1),
    ("num_gpu_blocks", "vllm", "count", r"# GPU blocks:" + _SP + _NUM, 1),
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
    ("available_kv_gib", "vllm", "GiB", r"kv_cache_size=" + _NUM + r"GiB", 1),
    ("available_kv_gib", "vllm", "GiB", r"the rest of the memory reserved for KV Cache is" + _SP + _NUM + _SP + "GiB", 1),
    ("total_gpu_gib", "vllm", "GiB", r"total_gpu_memory(?:=| \()" + _NUM + r"GiB", 1),
    ("gpu_memory_utilization", "vllm", "x", r"gpu_memory_utilization(?:=| \()" + _NUM, 1),
    ("cudagraph_gib", "vllm", "GiB", r"Graph capturing finished in [0-9.]+ secs?, took" + _SP + _NUM + _SP + "GiB", 1),
    ("cudagraph_gib", "vllm", "GiB", r"CUDA ?[Gg]raph memory:?" + _SP + "(-?" + _NUM[1:] + _SP + "GiB", 1),
    ("needed_kv_gib", "vllm", "GiB", r"\(" + _NUM + _SP + r"GiB KV cache is needed", 1),
    ("estimated_max_model_len", "vllm", "tokens", r"estimated maximum model length is" + _SP + _NUM, 1),
    ("max_model_len", "vllm", "tokens", r"max seq len \(" + _NUM + r"\)", 1),
    ("max_model_len", "vllm", "tokens", r"Using max model len" + _SP + _NUM, 1),
    ("max_num_batched_tokens", "vllm", "tokens", r"max_num_batched_tokens=" + _NUM, 1),
    ("block_size", "vllm", "tokens", r"[Ff]orcing kv cache block size to" + _SP + _NUM, 1),
    ("sglang_tokens", "sglang", "tokens", r"KV Cache is allocated\. #tokens:" + _SP + _NUM, 1),
    ("sglang_k_gib", "sglang", "GiB", r"K size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_v_gib", "sglang", "GiB", r"V size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_kv_gib", "sglang", "GiB", r"KV Cache is allocated\. #tokens: [0-9]+, KV size:" + _SP + _NUM + _SP + "GB", 1),
    ("sglang_max_total_tokens", "sglang", "tokens", r"max_total_num_tokens=" + _NUM, 1),
    ("sglang_max_running_requests", "sglang", "count", r"max_running_requests=" + _NUM, 1),
    ("sglang_context_len", "sglang", "tokens", r"context_len=" + _NUM, 1),
    ("sglang_avail_gib", "sglang", "GiB", r"avail mem=" + _NUM + _SP + "GB", 1),
    ("sglang_weights_gib", "sglang", "GiB", r"Load weight end\..*?mem usage=" + _NUM + _SP + "GB", 1),
    ("llamacpp_kv_mib", "llama.cpp", "MiB", r"llama_kv_cache\w*:\s+size =" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_kv_mib", "llama.cpp", "MiB", r"KV self size\s*=" + _SP + _NUM + _SP + "MiB", 1),
    ("llamacpp_cells", "llama.cpp", "count", r"llama_kv_cache\w*:\s+size =\s*[0-9.]+ MiB \(\s*" + _NUM + r" cells", 1),
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
    ("trtllm_peak_gib", "trtllm", "GiB", r"Peak memory during memory usage profiling.*?:" + _SP + _NUM + _SP + "GiB", 1),
    ("tgi_blocks", "tgi", "count", r"KV-cache blocks:" + _SP + _NUM, 1),
    ("tgi_block_size", "tgi", "tokens", r"KV-cache blocks: [0-9]+, size:" + _SP + _NUM, 1),
    ("tgi_max_total_tokens", "tgi", "tokens", r"Setting max batch total tokens to" + _SP + _NUM, 1),
)
_COMPILED = tuple((n, e, u, re.compile(p), g) for n, e, u, p, g in _PATTERNS)
_VERSION = re.compile(r"(?:vLLM API server version|LLM engine \(v)\s*([0-9][0-9a-z.+\-]*)")

LABELS: dict[str, str] = {
    "available_kv_gib": "Available KV cache memory", "kv_cache_tokens": "GPU KV cache size",
    "max_concurrency": "Maximum concurrency", "concurrency_len": "tokens per request (concurrency line)",
    "num_gpu_blocks": "# GPU blocks", "weights_gib": "Model loading (weights)",
    "activation_gib": "Activation peak", "peak_torch_gib": "Peak torch memory (incl. weights)",
    "non_torch_gib": "Non-torch memory", "total_gpu_gib": "Total GPU memory",
    "gpu_memory_utilization": "gpu_memory_utilization", "cudagraph_gib": "CUDA graph memory",
    "needed_kv_gib": "KV needed for one max-length request", "estimated_max_model_len": "Estimated max model length",
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
    "vllm": ("available_kv_gib", "weights_gib", "kv_cache_tokens|num_gpu_blocks", "max_concurrency"),
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

    Args:
        text: Pasted log (any mix of lines; ANSI colour codes are ignored).

    Returns:
        A :class:`LogFigures`; ``engine`` None and an explanatory ``message``
        when no known line was found. Never raises on odd input.
    """
    text = re.sub(r"\x1b\[[0-9;]*m", "", text or "")
    figures: list[LogFigure] = []
    version = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        match = _VERSION.search(line)
        if match and version is None:
            version = match.group(1).rstrip(")")
        for name, engine, unit, pattern, group in _COMPILED:
            for m in pattern.finditer(line):
                value = float(m.group(group).replace(",", ""))
                figures.append(LogFigure(name=name, engine=engine, value=value, unit=unit, line_number=number,
                                         line=line))
    figures = _dedupe(figures)
    engine = _detect(figures)
    return LogFigures(engine=engine, version=version, figures=tuple(figures), message=_message(engine, figures),
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


def _missing(engine: str, figures: list[LogFigure]) -> list[str]:
    names = {f.name for f in figures}
    return [key for key in _KEY_FIGURES.get(engine, ()) if not any(k in names for k in key.split("|"))]


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
