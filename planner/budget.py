"""Per-GPU memory budget: from card memory to KV capacity, users and max context.

The chain (one small function each), per GPU:

    usable  = floor(gpu_memory_bytes * gpu_memory_utilization)
    budget  = usable - weights_per_gpu - overhead_per_gpu          (KV cache budget)
    blocks  = budget // (block_size * kv_bytes_per_token_per_gpu)
    tokens  = blocks * block_size                                   (capacity)
    users   = budget // kv_bytes_per_sequence_per_gpu(context_len)  (paged, windows applied)
    context = largest C with batch_size * kv_bytes_per_sequence_per_gpu(C) <= budget

Sources: vLLM ``Worker.determine_available_memory`` (vllm/v1/worker/gpu_worker.py:
requested memory = total x gpu_memory_utilization, minus weights, profiled
activation peak and non-torch memory) and ``get_kv_cache_configs`` /
``get_max_concurrency_for_kv_cache_config`` (vllm/v1/core/kv_cache_utils.py);
DOMAIN.md sections 1 and 4; PagedAttention (Kwon et al., SOSP 2023) for blocks.

Design notes:
    1. ``gpu_memory_bytes`` is the total the framework sees
       (``torch.cuda.mem_get_info()[1]``), not the marketed size.
    2. Tensor parallelism (``num_gpus`` GPUs, one model replica): weights are
       split (norms replicated) and each GPU holds ``max(1, kv_heads // tp)`` KV
       heads; MLA latents are replicated. Budgets are per GPU, never pooled.
    3. Per-sequence bytes are rounded up to whole blocks per layer, so a
       window-capped layer costs ``ceil(min(C, w) / B)`` blocks.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from planner.diagnose import diagnose, gib, tensor_parallel_splits
from planner.model import ModelSpec
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES, weight_dtype
from planner.model.kv import KVProfile, cache_dtypes, kv_profile
from planner.model.params import describe_weight_formats, weight_bytes, weight_bytes_by_format
from planner.overhead import OverheadEstimate, estimate_overhead
from planner.units import largest_fitting

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` (vllm/config/cache.py)."""

DEFAULT_BLOCK_SIZE = 16
"""vLLM's KV block size for ordinary attention backends on CUDA [tokens] (vllm/platforms/cuda.py)."""

MAX_CONTEXT_SEARCH_LIMIT = 1 << 24
"""Upper bound of the max-context search when the model states no limit [tokens]."""


@dataclass(frozen=True, kw_only=True)
class PlanRequest:
    """What the user asks for. Field names are the CLI flags and URL keys.

    Attributes:
        context_len: Tokens per sequence, prompt + output [tokens], >= 1.
        batch_size: Concurrent sequences wanted, >= 1.
        weight_dtype: Key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.
        kv_cache_dtype: ``auto`` or a key of :data:`planner.model.dtypes.KV_CACHE_DTYPES`.
        num_gpus: GPUs holding one replica (tensor parallel size), >= 1.
        gpu_memory_utilization: Fraction of framework-visible memory the engine
            may use, in (0, 1].
        block_size: KV page size [tokens], >= 1.
        max_num_batched_tokens: Largest forward pass, for the activation estimate
            [tokens]; None = what ``vllm serve`` picks for the GPU (:func:`estimate_overhead`).
        overhead_bytes: Per-GPU overhead override [bytes]; None = estimate.
    """

    context_len: int
    batch_size: int = 1
    weight_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    num_gpus: int = 1
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    block_size: int = DEFAULT_BLOCK_SIZE
    max_num_batched_tokens: int | None = None
    overhead_bytes: int | None = None

    def validate(self) -> None:
        """Raise ValueError with an actionable message for any out-of-range field."""
        checks = (
            (self.context_len >= 1, f"context_len must be at least 1 token, got {self.context_len}"),
            (self.context_len <= MAX_CONTEXT_SEARCH_LIMIT,
             f"context_len must be at most {MAX_CONTEXT_SEARCH_LIMIT:,} tokens, got {self.context_len:,}"),
            (self.batch_size >= 1, f"batch_size must be at least 1 sequence, got {self.batch_size}"),
            (self.num_gpus >= 1, f"num_gpus must be at least 1, got {self.num_gpus}"),
            (0 < self.gpu_memory_utilization <= 1,
             f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}"),
            (self.block_size >= 1, f"block_size must be at least 1 token, got {self.block_size}"),
            (self.max_num_batched_tokens is None or self.max_num_batched_tokens >= 1,
             f"max_num_batched_tokens must be at least 1, got {self.max_num_batched_tokens}"),
            (self.overhead_bytes is None or self.overhead_bytes >= 0,
             f"overhead must be >= 0 bytes, got {self.overhead_bytes}"),
            (self.weight_dtype in WEIGHT_DTYPES,
             f"unknown weight dtype {self.weight_dtype!r}; choose one of {', '.join(WEIGHT_DTYPES)}"),
            (self.kv_cache_dtype in KV_CACHE_DTYPE_CHOICES,
             f"unknown KV-cache dtype {self.kv_cache_dtype!r}; choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}"),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)


@dataclass(frozen=True, kw_only=True)
class Plan:
    """The answer for one model on one GPU type. Sizes in bytes, per GPU unless named.

    ``fits`` is False with ``reasons`` when the request does not fit; that is a
    normal result, not an error. ``suggestions`` name the knob to turn.
    JSON keys (``to_dict``) are a public contract of the CLI.

    Context fields [tokens]: ``max_context_len`` is the longest context
    ``batch_size`` sequences reach, capped by the model's
    ``max_position_embeddings``; ``max_context_len_limited_by`` says which
    bound applied (``memory``, ``model``, ``none`` when no layer grows with
    context, or ``tensor_parallel`` when ``num_gpus`` cannot split the model and
    the capacity fields are 0); ``max_context_len_by_memory`` ignores the model's limit;
    ``max_context_len_before_overheads`` also ignores ``gpu_memory_utilization``
    and the overhead (whole framework-visible memory minus weights, no paging).

    ``weight_dtype`` echoes the request (``auto`` included);
    ``weight_dtype_resolved`` names the formats the weights end up in, largest
    share first (``"mxfp4 + bf16"`` for gpt-oss at ``auto``, ``"int4 + bf16"``
    when int4 leaves embeddings in bf16), from
    :func:`planner.model.params.weight_bytes_by_format`.
    """

    model_id: str
    gpu_id: str
    num_gpus: int
    weight_dtype: str
    weight_dtype_resolved: str
    kv_cache_dtype: str
    context_len: int
    batch_size: int
    gpu_memory_utilization: float
    block_size: int
    params: int
    weights_bytes: int
    weights_bytes_per_gpu: int
    kv_cache_bytes_per_token: int
    kv_cache_bytes_per_token_per_gpu: int
    kv_cache_bytes_per_sequence: int
    kv_cache_bytes_per_sequence_per_gpu: int
    kv_cache_bytes_total: int
    gpu_memory_bytes: int
    usable_memory_bytes: int
    overhead_bytes: int
    activation_bytes: int
    logits_bytes: int
    runtime_bytes: int
    overhead_overridden: bool
    overhead_formula: str
    kv_cache_budget_bytes: int
    kv_cache_bytes_in_use: int
    free_bytes: int
    kv_cache_capacity_tokens: int
    max_concurrent_sequences: int
    max_context_len: int
    max_context_len_limited_by: str
    max_context_len_by_memory: int
    max_context_len_before_overheads: int
    max_position_embeddings: int | None
    fits: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)
    suggestions: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def weights_label(self) -> str:
        """The weight dtype as asked and as resolved, for messages.

        ``"bf16"``; ``"int4 + bf16"`` when int4 leaves embeddings and norms in
        16 bits; ``"auto → mxfp4 + bf16"`` when ``auto`` resolved to the checkpoint's formats.
        """
        return _weights_label(self.weight_dtype, self.weight_dtype_resolved)

    def to_dict(self) -> dict:
        """Plain dict for JSON output (tuples become lists)."""
        out = asdict(self)
        for key in ("reasons", "suggestions", "notes"):
            out[key] = list(out[key])
        return out


def _weights_label(requested: str, resolved: str) -> str:
    return f"auto → {resolved}" if requested == "auto" else resolved


def weights_label(model: ModelSpec, weight_dtype_name: str) -> str:
    """What ``weight_dtype_name`` resolves to on ``model``, as :attr:`Plan.weights_label` words it.

    Args:
        model: The model (its parameter groups carry the checkpoint formats).
        weight_dtype_name: A key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.

    Raises:
        ValueError: unknown dtype name.

    Sources: :func:`planner.model.params.weight_bytes_by_format`.
    """
    by_format = weight_bytes_by_format(model.params, weight_dtype(weight_dtype_name), model.torch_dtype)
    return _weights_label(weight_dtype_name, describe_weight_formats(by_format))


def max_context_len(profile: KVProfile, budget_bytes: int, batch_size: int, limit: int) -> int:
    """Largest ``C <= limit`` whose ``batch_size`` sequences fit in ``budget_bytes``.

    Binary search on the non-decreasing ``profile.bytes_per_sequence``; 0 when
    not even one token fits.

    Sources: vLLM ``_estimate_max_model_len_from_groups`` (binary search),
    vllm/v1/core/kv_cache_utils.py.
    """
    if budget_bytes < 0:
        return 0

    def fits(c: int) -> bool:
        return batch_size * profile.bytes_per_sequence(c) <= budget_bytes

    return max(0, largest_fitting(fits, 0, limit))


def plan(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str = "") -> Plan:
    """Plan one model on ``request.num_gpus`` GPUs of ``gpu_memory_bytes`` each.

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes], > 0.
        request: The workload and knobs.
        gpu_id: Catalog id, echoed in the result.

    Returns:
        A :class:`Plan`; ``fits`` False with reasons when it does not fit.

    Raises:
        ValueError: invalid request fields or ``gpu_memory_bytes <= 0``.

    Sources: see the module docstring.
    """
    request.validate()
    if gpu_memory_bytes <= 0:
        raise ValueError(f"gpu_memory_bytes must be > 0, got {gpu_memory_bytes}")
    tp = request.num_gpus
    fmt = weight_dtype(request.weight_dtype)
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    weights_total = weight_bytes(model.params, fmt, model.torch_dtype)
    by_format = weight_bytes_by_format(model.params, fmt, model.torch_dtype, tp)
    weights_gpu = sum(by_format.values())

    exact_1 = kv_profile(model, dtypes, 1, 1)
    exact_gpu = kv_profile(model, dtypes, tp, 1)
    paged_gpu = kv_profile(model, dtypes, tp, request.block_size)

    if request.overhead_bytes is None:
        overhead = estimate_overhead(
            model, dtypes.state.bytes_for(1), tp, request.max_num_batched_tokens,
            gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id)
    else:
        overhead = OverheadEstimate(
            activation_bytes=request.overhead_bytes, logits_bytes=0, runtime_bytes=0,
            overridden=True, formula=f"user override: {gib(request.overhead_bytes)}")

    usable = int(gpu_memory_bytes * request.gpu_memory_utilization)
    budget = usable - weights_gpu - overhead.total_bytes
    per_token_gpu = paged_gpu.bytes_per_token
    per_seq_gpu_paged = paged_gpu.bytes_per_sequence(request.context_len)

    if budget > 0 and per_token_gpu:
        blocks = budget // (request.block_size * per_token_gpu)
        capacity_tokens = blocks * request.block_size
    else:
        capacity_tokens = 0
    if budget <= 0:
        max_seqs = 0
    elif per_seq_gpu_paged:
        max_seqs = budget // per_seq_gpu_paged
    else:
        max_seqs = 0

    model_limit = model.max_position_embeddings
    by_memory = max_context_len(paged_gpu, budget, request.batch_size, MAX_CONTEXT_SEARCH_LIMIT)
    if model_limit and by_memory >= model_limit:
        max_ctx, limited_by = model_limit, "model"
    elif by_memory >= MAX_CONTEXT_SEARCH_LIMIT:
        max_ctx, limited_by = by_memory, "none"  # window-capped or recurrent layers only
    else:
        max_ctx, limited_by = by_memory, "memory"
    raw_budget = gpu_memory_bytes - weights_gpu
    max_ctx_raw = max_context_len(exact_gpu, raw_budget, request.batch_size, MAX_CONTEXT_SEARCH_LIMIT)

    in_use = min(request.batch_size * per_seq_gpu_paged, max(budget, 0))
    reasons, suggestions, notes = diagnose(
        model, request, usable=usable, weights_gpu=weights_gpu, overhead=overhead.total_bytes,
        budget=budget, per_seq=per_seq_gpu_paged, max_seqs=max_seqs, max_ctx=max_ctx,
        gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id)
    if not tensor_parallel_splits(model, tp):
        # The engine refuses to start: no capacity to report (the reasons say why).
        capacity_tokens = max_seqs = max_ctx = max_ctx_raw = in_use = 0
        limited_by = "tensor_parallel"

    return Plan(
        model_id=model.model_id, gpu_id=gpu_id, num_gpus=tp,
        weight_dtype=request.weight_dtype, weight_dtype_resolved=describe_weight_formats(by_format),
        kv_cache_dtype=dtypes.kv.name,
        context_len=request.context_len, batch_size=request.batch_size,
        gpu_memory_utilization=request.gpu_memory_utilization, block_size=request.block_size,
        params=model.num_parameters, weights_bytes=weights_total, weights_bytes_per_gpu=weights_gpu,
        kv_cache_bytes_per_token=exact_1.bytes_per_token,
        kv_cache_bytes_per_token_per_gpu=per_token_gpu,
        kv_cache_bytes_per_sequence=exact_1.bytes_per_sequence(request.context_len),
        kv_cache_bytes_per_sequence_per_gpu=exact_gpu.bytes_per_sequence(request.context_len),
        kv_cache_bytes_total=request.batch_size * tp * exact_gpu.bytes_per_sequence(request.context_len),
        gpu_memory_bytes=gpu_memory_bytes, usable_memory_bytes=usable,
        overhead_bytes=overhead.total_bytes, activation_bytes=overhead.activation_bytes,
        logits_bytes=overhead.logits_bytes, runtime_bytes=overhead.runtime_bytes,
        overhead_overridden=overhead.overridden, overhead_formula=overhead.formula,
        kv_cache_budget_bytes=budget, kv_cache_bytes_in_use=in_use,
        free_bytes=max(budget, 0) - in_use,
        kv_cache_capacity_tokens=capacity_tokens, max_concurrent_sequences=max_seqs,
        max_context_len=max_ctx, max_context_len_limited_by=limited_by,
        max_context_len_by_memory=by_memory,
        max_context_len_before_overheads=max_ctx_raw, max_position_embeddings=model_limit,
        fits=not reasons, reasons=tuple(reasons), suggestions=tuple(suggestions), notes=tuple(notes),
    )


