"""One GPU of an engine plan as its budget bar reads it: the segments in the engine's own order, and where the
engine's memory cap ends.

Each engine caps a different thing, so the line and the order of the terms follow the engine:

- vLLM, TGI: the fraction caps everything the engine allocates (weights, activation peak, non-torch, CUDA graphs
  and the KV cache): the terms stack up to the "usable" line (``gpu_memory_utilization x total``;
  vllm/v1/worker/gpu_worker.py ``determine_available_memory``; TGI's ``CUDA_MEMORY_FRACTION x total x 0.9``).
  A vLLM release that captures CUDA graphs after sizing the KV cache (``RankBudget.cudagraph_charged`` False: V0 and
  V1 before the builds that estimate them, and v0.22-v0.28's model runner V2 for dense models; vllm/v1/worker/
  gpu_worker.py ``compile_or_warm_up_model`` after ``initialize_from_config``) takes them from the
  ``1 - gpu_memory_utilization`` headroom, so their segment follows the KV cache, past the line (Meta-Llama-3-8B on
  an H100 under vllm-v0.28: drawn before it, the graphs' 0.44 GiB pushed the KV segment's end past "usable").
- TensorRT-LLM: ``free_gpu_memory_fraction`` (``kv_cache_free_gpu_mem_fraction`` for trtllm-build engines) caps only
  the KV pool, as a fraction of the memory free after the weights are loaded and the profiling pass has run:
  ``available_kv_mem = (total - peak + kv allocated for the estimate) x fraction`` (tensorrt_llm/_torch/pyexecutor/
  _util.py ``KvCacheCreator._cal_max_memory``; the fraction is ``KvCacheConfig.free_gpu_memory_fraction``,
  tensorrt_llm/llmapi/llm_args.py). So the line sits at ``weights + activation + non-torch + CUDA graphs +
  fraction x free after them`` (``total - free + fraction x free``), the end of the largest pool it takes, and the
  ``1 - fraction`` of the free memory stays unallocated beyond it. QA: Meta-Llama-3-8B on an H100 drew the line at
  "usable 55.93 GiB" (the pool cap alone, from the bar's left) while the KV segment ran from 17 to 73 GiB.
- SGLang: ``mem_fraction_static`` caps only the static pools. ``profile_max_num_token`` sizes the KV pool as
  ``rest = free_after_load - free_before x (1 - mem_fraction_static)``, i.e. ``free_before x
  mem_fraction_static - weights``, where ``free_before`` is the device's free memory once the CUDA context and
  the process groups exist. Inside the fraction: the weights (with what loads before the pool: LoRA slots) and
  the KV pool (with the Mamba state pool carved out of ``rest``). Outside it: the activation peak, CUDA graphs
  and the draft worker, which live in the ``1 - mem_fraction_static`` the fraction leaves, and the context and
  process groups, spent before ``free_before`` was read. So the line sits after weights + KV, at
  ``mem_fraction_static x free_before``, not at a fraction of the card.
- llama.cpp and transformers have no cap: what they allocate is weights + compute buffers + KV cache, and the
  rest of the card is free; no line is drawn.

Sources: SGLang python/sglang/srt/model_executor/model_runner.py and model_runner_kv_cache_mixin.py
(``profile_max_num_token``, ``init_memory_pool``), python/sglang/srt/utils.py (``get_available_gpu_memory``);
llama.cpp src/llama-context.cpp (buffers sized from the flags, no memory fraction); :mod:`planner.engines.sglang`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engines.profiles import engine_profile
from planner.engines.types import EnginePlan, RankBudget

INSIDE_STATIC = frozenset({"Weights", "KV cache", "Mamba state pool"})
"""SGLang terms inside ``mem_fraction_static`` (module docstring); serving parts follow their term."""
FREE = "Free"
"""The last segment of an engine without a memory cap: the card's memory it does not allocate."""
NOT_ALLOCATED = "Not allocated"
GRAPHS = "CUDA graphs"
"""The CUDA-graph segment: after the KV cache, past vLLM's line, where the release captures the graphs after sizing
the KV cache (module docstring)."""


@dataclass(frozen=True, kw_only=True)
class RankBar:
    """A rank's bar.

    Attributes:
        segments: ``(name, bytes)`` left to right (:meth:`RankBudget.segments`, reordered per engine).
        line_bytes: Where the engine's cap ends, from the bar's left [bytes]; None for an engine without one.
        line_kind: ``usable`` (a fraction of the whole budget), ``static`` (SGLang's ``mem_fraction_static``
            of the free memory), ``free`` (TensorRT-LLM's fraction of the memory free after loading and profiling,
            placed after the terms allocated before the KV pool) or ``none``.
        fraction: The engine's fraction (``gpu_memory_utilization`` / ``mem_fraction_static``), or None.
        fraction_base_bytes: What the fraction multiplies [bytes] (``RankBudget.memory_base_bytes``).
        allocated_bytes: What the engine allocates on this GPU [bytes] (the terms, without free memory).
        free_bytes: The card's memory beyond the terms [bytes] (0 when they exceed it).
    """

    segments: tuple[tuple[str, int], ...]
    line_bytes: int | None
    line_kind: str
    fraction: float | None
    fraction_base_bytes: int
    allocated_bytes: int
    free_bytes: int


def rank_bar(plan: EnginePlan, rank: RankBudget, gpu_memory_bytes: int) -> RankBar:
    """``rank`` of ``plan`` as a bar on a ``gpu_memory_bytes`` card (module docstring for each engine's order)."""
    segments = rank.segments(gpu_memory_bytes)
    terms = [(n, s) for n, s in segments if n not in (NOT_ALLOCATED, "Over the card")]
    tail = [(n, s) for n, s in segments if n in (NOT_ALLOCATED, "Over the card")]
    allocated = sum(s for _, s in terms)
    common = dict(fraction=plan.gpu_memory_utilization, fraction_base_bytes=rank.memory_base_bytes,
                  allocated_bytes=allocated, free_bytes=dict(tail).get(NOT_ALLOCATED, 0))
    if plan.gpu_memory_utilization is None:  # no cap: the rest of the card is free
        tail = [(FREE if n == NOT_ALLOCATED else n, s) for n, s in tail]
        return RankBar(segments=tuple(terms + tail), line_bytes=None, line_kind="none", **common)
    if engine_profile(plan.engine).budget_base == "free_after_profile":  # TensorRT-LLM: base = the free memory
        line = gpu_memory_bytes - rank.memory_base_bytes + rank.requested_bytes
        return RankBar(segments=segments, line_bytes=line, line_kind="free", **common)
    if plan.family == "vllm" and not rank.cudagraph_charged and rank.cudagraph_bytes:  # captured after the KV cache
        after = [t for t in terms if t[0] == GRAPHS]
        segments = tuple([t for t in terms if t[0] != GRAPHS] + after + tail)
    if plan.family != "sglang":
        return RankBar(segments=segments, line_bytes=rank.requested_bytes, line_kind="usable", **common)
    inside = _static_names(rank)
    ordered = [t for t in terms if t[0] in inside] + [t for t in terms if t[0] not in inside]
    return RankBar(segments=tuple(ordered + tail), line_bytes=rank.requested_bytes, line_kind="static", **common)


def _static_names(rank: RankBudget) -> frozenset[str]:
    """SGLang's terms inside ``mem_fraction_static`` on ``rank``, with the serving parts counted in them."""
    parts = {label for label, where, _ in rank.serving_parts if where in ("weights", "kv")}
    return INSIDE_STATIC | parts


def allocated_row_name(plan: EnginePlan) -> str:
    """The per-GPU table's name for ``RankBudget.requested_bytes``: ``Usable`` under a fraction of the whole
    budget, ``Static (mem_fraction_static)`` for SGLang (weights + KV pools), ``KV pool (free_gpu_memory_fraction x
    free)`` for TensorRT-LLM (the fraction of the free memory its KV pool may take; the bar's dashed "KV cap" line is
    where that pool ends, after what was allocated before it), ``Allocated`` without a cap."""
    if plan.gpu_memory_utilization is None:
        return "Allocated"
    profile = engine_profile(plan.engine)
    if profile.budget_base == "free_after_profile":
        return f"KV pool ({profile.fraction_flag} x free)"
    return "Static (mem_fraction_static)" if plan.family == "sglang" else "Usable"
