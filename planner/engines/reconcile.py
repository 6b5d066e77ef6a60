"""Estimate vs actual: an engine plan lined up against the figures its startup log printed.

:func:`reconcile` builds one :class:`ReconcileRow` per figure (estimate, printed,
difference); :func:`request_from_log` and :func:`knobs_from_log` turn the figures
into overrides and knobs so the planner re-plans with the overheads measured on
that hardware (weights, activation peak, non-torch) or pins the engine's own
available memory; :func:`suggest_engine` names the engine a log came from.

Units and sources of the log formats: :mod:`planner.engines.logparse`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from planner.engines.logparse import LogFigure, LogFigures
from planner.engines.types import EnginePlan, EngineRequest
from planner.units import GiB, MiB

# --- estimate vs actual --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ReconcileRow:
    """One line of the estimate-vs-actual table.

    Attributes:
        quantity: What is compared.
        unit: ``GiB``, ``MiB``, ``tokens``, ``count`` or ``x``.
        estimate: The plan's figure, in ``unit``.
        actual: The log's figure, in ``unit``.
        line: The log line it came from.
    """

    quantity: str
    unit: str
    estimate: float
    actual: float
    line: str

    @property
    def difference(self) -> float:
        """``estimate - actual`` in ``unit``."""
        return self.estimate - self.actual

    @property
    def relative_error(self) -> float | None:
        """``(estimate - actual) / |actual|``, None when actual is 0: the sign is the difference's, also for a
        negative printed figure (vLLM's available memory of a launch it refuses, :mod:`planner.engines.logparse`)."""
        return None if self.actual == 0 else self.difference / abs(self.actual)


def _row(label: str, unit: str, estimate: float, figure: LogFigure | None) -> ReconcileRow | None:
    if figure is None:
        return None
    return ReconcileRow(quantity=label, unit=unit, estimate=estimate, actual=figure.value, line=figure.line)


def reconcile(plan: EnginePlan, figures: LogFigures) -> tuple[ReconcileRow, ...]:
    """The plan's figures next to the log's, line by line (only those found in the log).

    Sizes are compared per GPU in the unit the engine printed.
    """
    rank = plan.limiting_rank
    g = figures.get
    rows = [
        _row("Model loading (weights)", "GiB", rank.weights_bytes / GiB, g("weights_gib")),
        _row("SGLang weights (Load weight end, mem usage)", "GiB", rank.weights_bytes / GiB, g("sglang_weights_gib")),
        _row("llama.cpp model buffer (weights, first GPU)", "MiB", plan.ranks[0].weights_bytes / MiB,
             _llamacpp_gpu_weights(figures)),
        _row("Activation peak", "GiB", rank.activation_bytes / GiB, g("activation_gib")),
        _row("Non-torch memory", "GiB", rank.non_torch_bytes / GiB, g("non_torch_gib")),
        _row("CUDA graph memory", "GiB", rank.cudagraph_bytes / GiB, g("cudagraph_gib")),
        _row("Available KV cache memory", "GiB", plan.available_kv_cache_bytes / GiB,
             g("available_kv_gib") or g("refusal_available_kv_gib")),
        _row("# GPU blocks", "count", plan.num_gpu_blocks, g("num_gpu_blocks")),
        _row("GPU KV cache size", "tokens", plan.engine_kv_cache_tokens, g("kv_cache_tokens")),
        _row("Maximum concurrency", "x", plan.max_concurrency, g("max_concurrency")),
        _row("KV needed for one max-length request", "GiB", plan.kv_cache_bytes_needed_per_request / GiB,
             g("needed_kv_gib")),
        _row("Estimated max model length", "tokens", plan.engine_max_model_len, g("estimated_max_model_len")),
        _row("KV cache tokens (V0 refusal)", "tokens", plan.engine_kv_cache_tokens, g("refusal_kv_tokens")),
        _row("SGLang #tokens", "tokens", plan.engine_kv_cache_tokens, g("sglang_tokens")),
        _row("SGLang K + V size", "GiB", plan.available_kv_cache_bytes / GiB, _sum_kv(figures)),
        _row("llama.cpp KV size", "MiB", plan.available_kv_cache_bytes / MiB, _llamacpp_total(figures)),
        _row("llama.cpp cells (all streams)", "count", plan.engine_kv_cache_tokens, _llamacpp_cells(figures)),
        _row("TensorRT-LLM tokens", "tokens", plan.engine_kv_cache_tokens, g("trtllm_tokens")),
        _row("TensorRT-LLM KV allocation", "GiB", plan.available_kv_cache_bytes / GiB, g("trtllm_alloc_gib")),
        _row("TGI max batch total tokens", "tokens", plan.engine_kv_cache_tokens, g("tgi_max_total_tokens")),
    ]
    return tuple(r for r in rows if r is not None)


def _sum_kv(figures: LogFigures) -> LogFigure | None:
    k, v = figures.get("sglang_k_gib"), figures.get("sglang_v_gib")
    if k is not None and v is not None:
        return replace(k, name="sglang_kv_sum", value=round(k.value + v.value, 2))
    return figures.get("sglang_kv_gib")


def _llamacpp_gpu_weights(figures: LogFigures) -> LogFigure | None:
    """The first GPU's "model buffer size" line (llama.cpp src/llama-model.cpp ``load_tensors``: one line per
    buffer type, ``CUDA0``, ``CUDA1``, ... and the host's ``CPU`` / ``CPU_Mapped``, which is not GPU memory)."""
    return next((f for f in figures.all("llamacpp_model_buffer_mib")
                 if not re.search(r"CPU\w*\s+model buffer size", f.line)), None)


def _llamacpp_total(figures: LogFigures) -> LogFigure | None:
    """Sum of the ``llama_kv_cache`` size lines (full + SWA caches) and the ``llama_memory_recurrent``
    size line (recurrent states, f32) of the first device."""
    sizes = figures.all("llamacpp_kv_mib") + figures.all("llamacpp_rs_mib")
    if not sizes:
        return None
    return replace(sizes[0], name="llamacpp_kv_total", value=round(sum(f.value for f in sizes), 2))


def _llamacpp_cells(figures: LogFigures) -> LogFigure | None:
    """Cells of the first (full-attention) cache times its streams: ``kv_size x n_stream``."""
    cells, streams = figures.get("llamacpp_cells"), figures.get("llamacpp_streams")
    if cells is None:
        return None
    return replace(cells, name="llamacpp_cells_total", value=cells.value * (streams.value if streams else 1))


PRINTED_TOKENS: tuple[tuple[str, str], ...] = (
    ("kv_cache_tokens", "GPU KV cache size"), ("sglang_tokens", "SGLang #tokens"),
    ("trtllm_tokens", "TensorRT-LLM tokens"), ("tgi_max_total_tokens", "TGI max batch total tokens"),
    ("refusal_kv_tokens", "KV cache tokens of V0's refusal"),
)
"""Token figures an engine prints after sizing its cache, and their labels, in the order looked for (V0's length
refusal states ``block_size x num_gpu_blocks``, vllm/worker/worker.py ``raise_if_cache_size_invalid``)."""

MEMORY_PRINT_STEP_BYTES = GiB // 100
"""The print step of "Available KV cache memory" and its kin (two decimals of GiB) [bytes]: the printed
memory stands for any value within half a step either side."""


def print_rounding_bytes(figures: LogFigures) -> int:
    """How far the engine's exact KV memory may lie from :func:`measured_available_bytes` [bytes].

    Each printed figure stands for any value within half its print step; a sum of ``n`` printed figures is
    uncertain by ``n`` half steps. Print formats:

    - vLLM "Available KV cache memory: %.2f GiB" (vllm/v1/worker/gpu_worker.py): one figure, 2 decimals of GiB.
    - SGLang ``MHATokenToKVPool`` "KV Cache is allocated. #tokens: N, K size: %.2f GB, V size: %.2f GB"
      (python/sglang/srt/mem_cache/memory_pool.py, ``GB = 1024 * 1024 * 1024``, i.e. GiB): two figures;
      the MLA pool's single "KV size: %.2f GB": one.
    - TensorRT-LLM "Allocated %.2f GiB for max tokens in paged KV cache"
      (cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp): one figure.
    - llama.cpp "llama_kv_cache: size = %7.2f MiB" per cache, plus "llama_memory_recurrent: size = %7.2f MiB"
      (src/llama-kv-cache.cpp, src/llama-memory-recurrent.cpp): one figure per line summed, 2 decimals of MiB.

    Returns:
        The half-width of the rounding [bytes]; 0 when the log has no memory figure.
    """
    half_gib = MEMORY_PRINT_STEP_BYTES // 2
    if figures.engine == "sglang":
        if figures.get("sglang_k_gib") is not None and figures.get("sglang_v_gib") is not None:
            return 2 * half_gib  # K and V printed apart, each rounded
        return half_gib if figures.get("sglang_kv_gib") is not None else 0
    if figures.engine == "llama.cpp":
        lines = len(figures.all("llamacpp_kv_mib") + figures.all("llamacpp_rs_mib"))
        return lines * (MiB // 100 // 2)
    return half_gib if measured_available_bytes(figures) is not None else 0


def log_consistency(pinned: EnginePlan, figures: LogFigures) -> ReconcileRow | None:
    """A row when the log's printed tokens do not follow from its own printed memory for this model.

    ``pinned`` is the re-plan at the engine's own available memory (:func:`request_from_log` with
    ``pin_available``): with this model's bytes per token it gives the tokens the engine would have
    printed. The printed memory's rounding (:func:`print_rounding_bytes`: half a step per printed figure
    summed, e.g. two for SGLang's K + V) is the slack either side, plus one block, so the row appears only
    for a real disagreement: the log then comes from another model, KV dtype, block size or flag set than
    the one planned.

    Args:
        pinned: The plan at the log's available memory [its ``engine_kv_cache_tokens`` in tokens].
        figures: The parsed log.

    Returns:
        A :class:`ReconcileRow` (``estimate``: the tokens this model gives at the log's memory;
        ``actual``: the printed tokens), or None when they agree within print rounding or the log lacks
        either figure.
    """
    if measured_available_bytes(figures) is None or pinned.engine_kv_cache_tokens <= 0:
        return None
    printed = next(((figures.get(name), label) for name, label in PRINTED_TOKENS if figures.get(name)), None)
    blocks = figures.get("num_gpu_blocks")
    if printed is None and blocks is not None:  # vLLM V0 prints blocks: tokens = blocks x block_size
        printed = replace(blocks, value=blocks.value * pinned.block_size), "# GPU blocks x block_size"
    if printed is None:
        return None
    figure, label = printed
    bytes_per_token = pinned.available_kv_cache_bytes / pinned.engine_kv_cache_tokens
    slack = print_rounding_bytes(figures) / bytes_per_token + pinned.block_size
    if abs(pinned.engine_kv_cache_tokens - figure.value) <= slack:
        return None
    return ReconcileRow(quantity=f"{label} at the log's own available memory", unit="tokens",
                        estimate=pinned.engine_kv_cache_tokens, actual=figure.value, line=figure.line)


def log_refusal(figures: LogFigures, estimate: EnginePlan) -> str | None:
    """One sentence when the log shows vLLM refusing the launch, with what the overhead model predicts; else None.

    The refusals, each read from the figures the log printed (formats: :mod:`planner.engines.logparse`):

    - no memory for the cache: the smallest printed available memory is <= 0 (V1 vllm/v1/worker/gpu_worker.py and
      V0 vllm/worker/worker.py print ``requested - non-KV memory``); V1's ``_check_enough_kv_cache_memory``
      (vllm/v1/core/kv_cache_utils.py) and V0's ``raise_if_cache_size_invalid`` (0 blocks) then raise "No
      available memory for the cache blocks";
    - V0's length refusal: ``max_model_len`` above the ``block_size x num_gpu_blocks`` tokens it states
      (``raise_if_cache_size_invalid``);
    - V1's length refusal: one request of ``max_model_len`` needs more KV memory than the worker has
      (``_check_enough_kv_cache_memory``).

    Args:
        figures: The parsed log.
        estimate: The overhead model's plan at the log's own knobs (the plan :func:`reconcile` compares).
    """
    if figures.engine != "vllm":
        return None
    memory = f"{estimate.available_kv_cache_bytes / GiB:,.2f} GiB of KV memory"
    workers, tokens = figures.all("available_kv_gib"), figures.get("refusal_kv_tokens")
    needed, available = figures.get("needed_kv_gib"), figures.get("refusal_available_kv_gib")
    if workers and (low := min(workers, key=lambda f: f.value)).value <= 0:
        said = (f"its available KV cache memory is {low.value:,.2f} GiB (line {low.line_number:,}), so no cache "
                'block fits: "No available memory for the cache blocks"')
        planned = memory
    elif tokens is not None:
        said = (f"max_model_len{_length_on(figures, tokens)} is more than the {tokens.value:,.0f} tokens its KV cache "
                f"can store (line {tokens.line_number:,})")
        planned = f"{estimate.engine_kv_cache_tokens:,} tokens"
    elif available is not None:
        need = f": {needed.value:,.2f} GiB" if needed is not None else ""
        said = (f"one request of max_model_len{_length_on(figures, available)} needs more KV cache than the "
                f"{available.value:,.2f} GiB available (line {available.line_number:,}{need})")
        planned = memory
    else:
        return None
    verdict = "predicts a refusal too" if not estimate.starts else "predicts that it starts"
    return (f"vLLM refused this launch: {said}. The overhead model {verdict} ({planned} here); the table below "
            "compares the figures.")


def _length_on(figures: LogFigures, figure: LogFigure) -> str:
    """`` L``: the ``max_model_len`` a refusal line states beside ``figure`` ("max seq len (L)"), or ""."""
    length = next((f.value for f in figures.all("max_model_len") if f.line_number == figure.line_number), None)
    return f" {length:,.0f}" if length else ""


# --- re-plan -------------------------------------------------------------------------


def implausible_figures(figures: LogFigures, *, gpu_memory_bytes: int, tensor_parallel_size: int = 1,
                        max_position_embeddings: int | None = None) -> tuple[str, ...]:
    """What a pasted log says that cannot hold for the GPU and model planned here, one sentence each.

    A vLLM worker's weights ("Model loading took") and its available KV memory are shares of one GPU, so
    neither can exceed the GPU's framework-visible memory; the concurrency line's tokens per request are
    ``max_model_len``, which vLLM refuses past the model's ``max_position_embeddings`` without a RoPE
    override (vllm/config/model.py ``_get_and_verify_max_len``). Such a log comes from another GPU, another
    tensor-parallel size or another model, and re-planning at its figures would only repeat that.

    Args:
        figures: :func:`planner.engines.logparse.parse_engine_log` of the paste.
        gpu_memory_bytes: Framework-visible memory of the planned GPU [bytes].
        tensor_parallel_size: GPUs per layer of the plan (named in the hint).
        max_position_embeddings: The model's limit [tokens], or None.

    Returns:
        Sentences (empty when the log fits the GPU and the model).
    """
    out = []
    card = f"this GPU's {gpu_memory_bytes / GiB:,.2f} GiB"
    available = ("available_kv_gib", "refusal_available_kv_gib")
    for names, what in ((("weights_gib",), "weights per GPU (%s) are"),
                        (available, "available KV cache memory per GPU (%s) is")):
        found = [f for name in names for f in figures.all(name) if f.bytes > gpu_memory_bytes]
        if found:
            out.append(f"The log's {what % f'{found[0].value:,.2f} GiB'} more than {card}: it comes from "
                       f"another GPU or more GPUs per layer than tensor parallel {tensor_parallel_size}; set those "
                       "in the sidebar.")
    length = figures.value("concurrency_len")
    if max_position_embeddings and length is not None and length > max_position_embeddings:
        out.append(f"The log's {int(length):,} tokens per request are past this model's {max_position_embeddings:,} "
                   "(max_position_embeddings): it may come from another model, or a launch with a RoPE override.")
    return tuple(out)


def measured_available_bytes(figures: LogFigures) -> int | None:
    """The engine's own KV memory per GPU from a log [bytes], or None.

    vLLM: the smallest "Available KV cache memory" of the workers (the engine
    equalises to the minimum), and the available memory its "To serve at least one request" refusal states
    (one worker's, from ``_check_enough_kv_cache_memory``, vllm/v1/core/kv_cache_utils.py: a refused launch
    prints no later line); SGLang: K + V size; TensorRT-LLM: the allocation;
    llama.cpp: the KV size plus the recurrent-state size.
    """
    if figures.engine == "vllm":
        found = [size for size in (figures.min_bytes("available_kv_gib"), figures.min_bytes("refusal_available_kv_gib"))
                 if size is not None]
        return min(found) if found else None
    if figures.engine == "sglang":
        total = _sum_kv(figures)
        return None if total is None else int(round(total.value * GiB))
    if figures.engine == "trtllm":
        return figures.min_bytes("trtllm_alloc_gib")
    if figures.engine == "llama.cpp":
        total = _llamacpp_total(figures)
        return None if total is None else int(round(total.value * MiB))
    return None


def request_from_log(request: EngineRequest, figures: LogFigures, *, pin_available: bool = True,
                     plan: EnginePlan | None = None) -> EngineRequest:
    """A request re-planned with what the log measured.

    With ``pin_available`` the engine's own KV memory replaces the overhead model
    (the plan then reproduces the printed tokens and concurrency). Without it the
    measured terms (weights, activation peak, non-torch, CUDA graphs) replace the
    model's, so changing a knob (``max_model_len``, the memory fraction) re-plans
    with this hardware's overheads. Knobs the log states (``max_model_len``,
    ``max_num_batched_tokens``, block size) are adopted unless already set.
    When the log has no activation breakdown (vLLM V1 at INFO level) and
    ``plan`` is given, the activation becomes the residual
    ``requested - weights - available - non_torch`` (:func:`residual_overhead_bytes`).

    A negative printed memory (a launch vLLM refuses, :func:`log_refusal`) is pinned as 0: vLLM treats every
    figure <= 0 alike, no block and "No available memory for the cache blocks" (vllm/v1/core/kv_cache_utils.py
    ``_check_enough_kv_cache_memory``; V0 vllm/worker/worker.py clamps its blocks to 0), and a request holds no
    negative size. The residual above keeps the sign, so the measured-overheads plan reproduces the figure.
    """
    updates: dict = {}
    weights = figures.min_bytes("weights_gib")
    if weights is None and figures.get("sglang_weights_gib") is not None:
        weights = figures.min_bytes("sglang_weights_gib")
    if weights is not None:
        updates["weights_bytes"] = weights
    activation = figures.get("activation_gib")
    if activation is None and figures.get("peak_torch_gib") is not None and weights is not None:
        updates["activation_bytes"] = max(0, figures.get("peak_torch_gib").bytes - weights)
    elif activation is not None:
        updates["activation_bytes"] = activation.bytes
    if figures.get("non_torch_gib") is not None:
        updates["non_torch_bytes"] = figures.get("non_torch_gib").bytes
    if figures.get("cudagraph_gib") is not None:
        updates["cudagraph_bytes"] = max(0, figures.get("cudagraph_gib").bytes)
    if "activation_bytes" not in updates and plan is not None:
        residual = residual_overhead_bytes(plan, figures)
        if residual is not None:
            non_torch = updates.get("non_torch_bytes", plan.limiting_rank.non_torch_bytes)
            updates["activation_bytes"] = max(0, residual - non_torch)
            updates.setdefault("non_torch_bytes", non_torch)
    available = measured_available_bytes(figures)
    if pin_available and available is not None:
        updates["available_kv_memory_bytes"] = max(available, 0)
        workers = [max(f.bytes, 0) for f in figures.all("available_kv_gib")] if figures.engine == "vllm" else []
        if len(workers) > 1 and len(workers) == request.tensor_parallel_size * request.pipeline_parallel_size:
            # one line per worker, in the order the workers logged them (the pool takes the smallest)
            updates["available_kv_memory_per_rank_bytes"] = tuple(workers)
    length = figures.value("concurrency_len") or figures.value("max_model_len") or figures.value("sglang_context_len")
    if length and request.max_model_len is None:
        updates["max_model_len"] = int(length)
    if figures.value("max_num_batched_tokens") and request.max_num_batched_tokens is None:
        updates["max_num_batched_tokens"] = int(figures.value("max_num_batched_tokens"))
    if figures.value("block_size") and request.block_size is None:
        updates["block_size"] = int(figures.value("block_size"))
    if figures.value("gpu_memory_utilization") and request.gpu_memory_utilization is None:
        updates["gpu_memory_utilization"] = figures.value("gpu_memory_utilization")
    return replace(request, **updates)


def knobs_from_log(request: EngineRequest, figures: LogFigures) -> tuple[EngineRequest, tuple[str, ...]]:
    """The request with the knobs the log states (they win over the request's), and their names.

    Comparing a plan with a log only makes sense at the log's own settings:
    ``max_model_len`` (concurrency line, "Using max model len", SGLang
    ``context_len``), ``max_num_batched_tokens``, a forced block size and V0's
    ``gpu_memory_utilization``.
    """
    updates: dict = {}
    length = figures.value("concurrency_len") or figures.value("max_model_len") or figures.value("sglang_context_len")
    if length:
        updates["max_model_len"] = int(length)
    if figures.value("max_num_batched_tokens"):
        updates["max_num_batched_tokens"] = int(figures.value("max_num_batched_tokens"))
    if figures.value("block_size"):
        updates["block_size"] = int(figures.value("block_size"))
    if figures.value("gpu_memory_utilization"):
        updates["gpu_memory_utilization"] = figures.value("gpu_memory_utilization")
    changed = tuple(k for k, v in updates.items() if getattr(request, k) != v)
    return replace(request, **updates), changed


def residual_overhead_bytes(plan: EnginePlan, figures: LogFigures) -> int | None:
    """What the log implies for activation + non-torch when it prints no breakdown [bytes].

    ``requested - weights - available`` for vLLM logs that give "Model loading
    took" and "Available KV cache memory" (V1 prints no breakdown at INFO
    level). Case V07: 0.25 x 79.25 - 14.2488 - 5.01 = 0.55 GiB.
    """
    weights, available = figures.min_bytes("weights_gib"), measured_available_bytes(figures)
    if figures.engine != "vllm" or weights is None or available is None:
        return None
    rank = plan.limiting_rank
    graphs = rank.cudagraph_bytes if rank.cudagraph_charged else 0
    return rank.requested_bytes - weights - available - graphs


def suggest_engine(figures: LogFigures) -> str | None:
    """The engine profile whose print formulas match the log, or None when unknown.

    vLLM by version: < 0.7 -> ``vllm-v0``; 0.7.0-0.7.2 -> ``vllm-v1-jan2025``;
    0.7.3-0.9.x -> ``vllm-v1-2025``; 0.10.x -> ``vllm-v0.10``; 0.11-0.20 ->
    ``vllm-v0.11``; 0.22-0.28 -> ``vllm-v0.28``; 0.21 and >= 0.29 -> ``vllm``. Without a
    version, a "# GPU blocks" line means ``vllm-v0`` and a token line the newest profile. Other
    engines map to their family profile (``trtllm`` for TensorRT-LLM).

    Sources: the PRs listed in ENGINES.md 1.5 (print formats by date); the model runners of
    v0.22-v0.29 (:mod:`planner.engines.vllm_runner`).
    """
    if figures.engine != "vllm":
        return figures.engine
    match = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", figures.version or "")
    if match is None:
        return "vllm-v0" if figures.get("num_gpu_blocks") and not figures.get("kv_cache_tokens") else "vllm"
    major, minor, patch = (int(g or 0) for g in match.groups())
    version = (major, minor, patch)
    for bound, profile in (((0, 7, 0), "vllm-v0"), ((0, 7, 3), "vllm-v1-jan2025"), ((0, 10, 0), "vllm-v1-2025"),
                           ((0, 11, 0), "vllm-v0.10"), ((0, 21, 0), "vllm-v0.11")):
        if version < bound:
            return profile
    return "vllm-v0.28" if (0, 22, 0) <= version < (0, 29, 0) else "vllm"
