"""Roofline throughput and cost: an upper-bound estimate, not a benchmark.

Decode is memory-bandwidth bound: each step reads every weight once (for the
whole batch) plus every running sequence's KV cache. Prefill is compute bound.
Per GPU of a tensor-parallel group, all GPUs working in parallel:

    time per output token  = (weights_bytes_per_gpu + batch x kv_bytes_per_sequence_per_gpu)
                             / (bandwidth_gb_s x 10^9)                               [s]
    tokens/s per sequence  = 1 / time per output token
    aggregate tokens/s     = batch / time per output token
    prefill time           = 2 x active_params x prompt_tokens / (num_gpus x bf16_tflops x 10^12)  [s]
    cost per 1M output tok = price_per_gpu_hour x num_gpus / 3600 / aggregate tokens/s x 10^6  [USD]

Design notes (assumptions, all optimistic -- real engines are slower):
    1. Perfect overlap, peak bandwidth and peak dense bf16 TFLOPS; no kernel
       launch, communication (all-reduce) or scheduling time.
    2. KV read per sequence per step is taken at the mean decode context,
       ``prompt + output // 2`` tokens (KV grows linearly during decode).
    3. Every weight is read each step, all experts included for MoE (a large
       batch touches them all); prefill FLOPs use the *active* parameters.
    4. Prefill ignores the attention term (``~ 4 x layers x tokens^2 x d``), small
       next to ``2 x params`` below a few thousand tokens.
    Worked example: 16 GiB of weights per GPU, 3,350 GB/s (H100 SXM), batch 1,
    no KV: 17,179,869,184 / 3.35e12 = 5.13 ms per token, 195 tokens/s.

Sources: DOMAIN.md section 4 ("decode is memory-bandwidth bound ... prefill is
compute bound, 2 x params FLOPs per token"); Williams, Waterman & Patterson,
"Roofline", CACM 2009; Kaplan et al. 2020 (2N FLOPs per token forward);
Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023 (decode
memory-bound analysis).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from planner.budget import PlanRequest, plan
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.roofline import (  # noqa: F401 - the roofline's core, re-exported under its old names
    UPPER_BOUND_LABEL,
    active_parameters,
    prefill_seconds,
    time_per_output_token,
)
from planner.traffic.find_types import FindRequest, Setup
from planner.traffic.workload import Workload

FORMULA = (
    "time per output token = (weights per GPU + batch x KV per sequence per GPU) / memory bandwidth; "
    "aggregate tokens/s = batch / time per output token; "
    "prefill time = 2 x active params x prompt tokens / (GPUs x bf16 dense FLOPS); "
    "cost per 1M output tokens = price per hour x GPUs / 3600 / aggregate tokens/s x 10^6"
)


def cost_per_million_tokens(price_usd_per_gpu_hour: float, num_gpus: int, tokens_per_s: float) -> float:
    """USD per 10^6 tokens at a steady ``tokens_per_s``: ``price x GPUs / 3600 / tokens_per_s x 10^6``.

    Worked example: 2 GPUs at $3.20/h, 1,000 tokens/s: 6.40 / 3600 / 1000 x 1e6 = $1.78.

    Raises:
        ValueError: ``tokens_per_s <= 0`` or a negative price.
    """
    if tokens_per_s <= 0 or price_usd_per_gpu_hour < 0:
        raise ValueError(f"need tokens_per_s > 0 and price >= 0, got {tokens_per_s} and {price_usd_per_gpu_hour}")
    return price_usd_per_gpu_hour * num_gpus / 3600 / tokens_per_s * 1e6


@dataclass(frozen=True, kw_only=True)
class ThroughputPoint:
    """Decode figures at one batch size (one replica).

    Attributes:
        batch_size: Sequences decoding together.
        time_per_output_token_s: Step time [s].
        tokens_per_s_per_sequence: ``1 / step`` [tokens/s].
        aggregate_tokens_per_s: ``batch / step`` [tokens/s].
        cost_per_million_output_tokens_usd: None when the GPU has no price.
        fits: The batch fits the KV budget at the decode context.
    """

    batch_size: int
    time_per_output_token_s: float
    tokens_per_s_per_sequence: float
    aggregate_tokens_per_s: float
    cost_per_million_output_tokens_usd: float | None
    fits: bool


@dataclass(frozen=True, kw_only=True)
class ThroughputEstimate:
    """Roofline decode and prefill estimate for one model on one GPU type (upper bound)."""

    model_id: str
    gpu_id: str
    num_gpus: int
    kv_cache_dtype: str
    prompt_len: int
    output_len: int
    decode_context_len: int
    weights_bytes_per_gpu: int
    kv_bytes_per_sequence_per_gpu: int
    bandwidth_gb_s: float
    bf16_dense_tflops: float | None
    price_usd_per_gpu_hour: float | None
    active_params: int
    max_concurrent_sequences: int
    prefill_seconds: float | None
    points: tuple[ThroughputPoint, ...]
    label: str = UPPER_BOUND_LABEL
    formula: str = FORMULA
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        out = {k: getattr(self, k) for k in (
            "model_id", "gpu_id", "num_gpus", "kv_cache_dtype", "prompt_len", "output_len",
            "decode_context_len", "weights_bytes_per_gpu", "kv_bytes_per_sequence_per_gpu", "bandwidth_gb_s",
            "bf16_dense_tflops", "price_usd_per_gpu_hour", "active_params", "max_concurrent_sequences",
            "prefill_seconds", "label", "formula")}
        out["points"] = [p.__dict__.copy() for p in self.points]
        out["notes"] = list(self.notes)
        return out


def default_batch_sizes(max_batch: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``max_batch``, plus ``max_batch`` itself (at least (1,))."""
    sizes = []
    b = 1
    while b < max_batch:
        sizes.append(b)
        b *= 2
    sizes.append(max(1, max_batch))
    return tuple(sizes)


def estimate_throughput(
    model: ModelSpec,
    request: PlanRequest,
    *,
    gpu_memory_bytes: int,
    bandwidth_gb_s: float,
    bf16_dense_tflops: float | None,
    price_usd_per_gpu_hour: float | None,
    prompt_len: int,
    output_len: int,
    batch_sizes: tuple[int, ...] | None = None,
    gpu_id: str = "",
    max_concurrent_sequences: int | None = None,
    kv_bytes_per_sequence_per_gpu: int | None = None,
    kv_cache_dtype_name: str | None = None,
) -> ThroughputEstimate:
    """Time per output token, tokens/s and cost per batch size, on the roofline.

    Args:
        model: The model.
        request: Dtypes, ``num_gpus`` (tensor parallel), memory knobs; its
            ``context_len`` is ignored (``prompt_len + output_len`` is used).
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        bandwidth_gb_s: Memory bandwidth of one GPU [GB/s, 10^9 B/s].
        bf16_dense_tflops: Dense bf16 peak of one GPU [TFLOPS]; None skips prefill.
        price_usd_per_gpu_hour: Rental price of one GPU [USD/h]; None skips cost.
        prompt_len, output_len: Tokens per request.
        batch_sizes: Batches to evaluate; None = powers of two up to the
            sequences that fit (see :func:`default_batch_sizes`).
        gpu_id: Echoed in the result.
        max_concurrent_sequences, kv_bytes_per_sequence_per_gpu, kv_cache_dtype_name: What a caller already sized
            (one replica of a Find setup, as its engine holds it: the requests its pool holds, the decode-context
            KV per sequence the setup's TPOT reads [bytes], the cache format the engine stores), replacing the
            budget arithmetic's figures so the two tables agree; None: this function's own.

    Raises:
        ValueError: invalid lengths, bandwidth or request fields.

    Sources: module docstring.
    """
    if prompt_len < 1 or output_len < 0:
        raise ValueError(f"need prompt_len >= 1 and output_len >= 0 tokens, got {prompt_len} and {output_len}")
    full = replace(request, context_len=prompt_len + output_len)
    result = plan(model, gpu_memory_bytes, full, gpu_id=gpu_id)
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, gpu_name=gpu_id)
    decode_ctx = prompt_len + output_len // 2
    kv_seq = (kv_profile(model, dtypes, request.num_gpus, 1).bytes_per_sequence(decode_ctx)
              if kv_bytes_per_sequence_per_gpu is None else kv_bytes_per_sequence_per_gpu)
    held = result.max_concurrent_sequences if max_concurrent_sequences is None else max_concurrent_sequences
    sizes = batch_sizes or default_batch_sizes(held)
    active = active_parameters(model)
    points = []
    for b in sizes:
        step = time_per_output_token(result.weights_bytes_per_gpu, kv_seq, b, bandwidth_gb_s)
        aggregate = b / step
        cost = (cost_per_million_tokens(price_usd_per_gpu_hour, request.num_gpus, aggregate)
                if price_usd_per_gpu_hour is not None else None)
        points.append(ThroughputPoint(
            batch_size=b, time_per_output_token_s=step, tokens_per_s_per_sequence=1 / step,
            aggregate_tokens_per_s=aggregate, cost_per_million_output_tokens_usd=cost,
            fits=b <= held))
    prefill = (prefill_seconds(active, prompt_len, bf16_dense_tflops, request.num_gpus)
               if bf16_dense_tflops else None)
    notes = []
    if bf16_dense_tflops is None:
        notes.append("the GPU catalog has no bf16 TFLOPS for this GPU: prefill time not estimated")
    if price_usd_per_gpu_hour is None:
        notes.append("the GPU catalog has no price for this GPU: cost not estimated")
    if model.is_moe:
        notes.append("MoE: every expert's weights are counted as read each step; prefill uses active parameters")
    return ThroughputEstimate(
        model_id=model.model_id, gpu_id=gpu_id, num_gpus=request.num_gpus,
        kv_cache_dtype=kv_cache_dtype_name or dtypes.kv_name,
        prompt_len=prompt_len, output_len=output_len, decode_context_len=decode_ctx,
        weights_bytes_per_gpu=result.weights_bytes_per_gpu, kv_bytes_per_sequence_per_gpu=kv_seq,
        bandwidth_gb_s=bandwidth_gb_s, bf16_dense_tflops=bf16_dense_tflops,
        price_usd_per_gpu_hour=price_usd_per_gpu_hour, active_params=active,
        max_concurrent_sequences=held, prefill_seconds=prefill,
        points=tuple(points), notes=tuple(notes),
    )


STORED_AS_AUTO = ("bf16", "fp16", "fp8_ds_mla")
"""Stored KV formats a Find setup reaches with ``--kv-cache-dtype auto``: the model's own dtype, and vLLM's
``fp8_ds_mla`` for DeepSeek-V3.2-style sparse MLA (:mod:`planner.engines.vllm`)."""


def setup_throughput(model: ModelSpec, setup: Setup, request: FindRequest, workload: Workload, *,
                     gpu_memory_bytes: int, bandwidth_gb_s: float, bf16_dense_tflops: float | None,
                     price_usd_per_gpu_hour: float | None, gpu_id: str = "") -> ThroughputEstimate:
    """:func:`estimate_throughput` for one replica of a Find ``setup`` at its load (the Find page's chart).

    The requests one replica holds (``max_concurrent_sequences`` per data-parallel rank) and the KV per
    sequence its time per output token reads are the setup's own (its "Max users" and TPOT), not re-derived; the
    request's ``--kv-cache-dtype`` is the setup's own flag, else ``auto`` for a format stored as the model's own
    (:data:`STORED_AS_AUTO`);
    lengths are the workload's means (prompt at least 1 token, rounded).

    Args:
        model: The served model.
        setup: A :class:`~planner.traffic.find_types.Setup` from :func:`planner.traffic.reverse.find_setups`.
        request: The Find request (utilization, block size, overhead).
        workload: Its lengths.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        bandwidth_gb_s, bf16_dense_tflops, price_usd_per_gpu_hour, gpu_id: As for :func:`estimate_throughput`.

    Raises:
        ValueError: as :func:`estimate_throughput`.
    """
    kv = setup.kv_cache_dtype_flag or ("auto" if setup.kv_cache_dtype in STORED_AS_AUTO else setup.kv_cache_dtype)
    plan_request = PlanRequest(context_len=setup.max_model_len, weight_dtype=setup.weight_dtype, kv_cache_dtype=kv,
                               num_gpus=setup.tensor_parallel_size,
                               gpu_memory_utilization=request.gpu_memory_utilization,
                               block_size=request.block_size, overhead_bytes=request.overhead_bytes,
                               **dict(request.engine_knobs))
    return estimate_throughput(
        model, plan_request, gpu_memory_bytes=gpu_memory_bytes, bandwidth_gb_s=bandwidth_gb_s,
        bf16_dense_tflops=bf16_dense_tflops, price_usd_per_gpu_hour=price_usd_per_gpu_hour,
        prompt_len=max(1, round(workload.prompt.mean_tokens)), output_len=max(0, round(workload.output.mean_tokens)),
        gpu_id=gpu_id, max_concurrent_sequences=setup.max_concurrent_sequences // max(1, setup.data_parallel_size),
        kv_bytes_per_sequence_per_gpu=setup.kv_bytes_per_sequence_per_gpu, kv_cache_dtype_name=setup.kv_cache_dtype)
