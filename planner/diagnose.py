"""Why a plan does not fit, and the knob that would fix it.

"Does not fit" is a normal result: :func:`diagnose` returns the reasons, the
suggestions (a smaller batch or context, fp8 KV, the smallest tensor-parallel
size that holds the batch, a smaller weight dtype) and notes for
:class:`planner.budget.Plan`. :func:`tensor_parallel_splits` is the one rule,
shared by plan, find and the engines, for which tensor parallel sizes engines
accept.

Sources: vLLM ``ModelConfig.verify_with_parallel_config`` (vllm/config/model.py),
``QKVParallelLinear`` (vllm/model_executor/layers/linear.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.model import ModelSpec
from planner.model.dtypes import WEIGHT_DTYPES, weight_dtype
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.params import weight_bytes
from planner.overhead import overhead_bytes
from planner.units import GiB

if TYPE_CHECKING:  # annotations only (planner.budget imports this module)
    from planner.budget import PlanRequest

def gib(num_bytes: int) -> str:
    """Bytes as a GiB string for messages (2 decimals, labelled)."""
    return f"{num_bytes / GiB:,.2f} GiB"



def diagnose(model: ModelSpec, request: PlanRequest, *, usable: int, weights_gpu: int, overhead: int,
              budget: int, per_seq: int, max_seqs: int, max_ctx: int,
              gpu_memory_bytes: int, gpu_name: str = "") -> tuple[list[str], list[str], list[str]]:
    """Reasons a plan does not fit, the knobs that would fix it, and notes."""
    reasons: list[str] = []
    suggestions: list[str] = []
    notes: list[str] = []
    tp = request.num_gpus
    limit = model.max_position_embeddings
    if limit and request.context_len > limit:
        reasons.append(
            f"context_len {request.context_len:,} is longer than the model supports "
            f"(max_position_embeddings {limit:,})")
        suggestions.append(f"lower context_len to at most {limit:,}")
    if weights_gpu + overhead > usable:
        reasons.append(
            f"weights ({gib(weights_gpu)}) + overhead ({gib(overhead)}) per GPU exceed the usable "
            f"{gib(usable)} ({request.gpu_memory_utilization:g} x {gib(gpu_memory_bytes)})")
        suggestions.extend(weight_fixes(model, request, usable, overhead))
    elif request.batch_size * per_seq > budget:
        need = request.batch_size * per_seq
        reasons.append(
            f"{request.batch_size:,} sequences x {request.context_len:,} tokens need {gib(need)} of KV "
            f"cache per GPU; the budget is {gib(budget)}")
        if max_seqs:
            suggestions.append(f"lower batch_size to {max_seqs:,} (fits at this context)")
        if max_ctx:
            suggestions.append(f"lower context_len to {max_ctx:,} (fits this batch)")
        if request.kv_cache_dtype in ("auto", "bf16", "fp16", "fp32"):
            suggestions.append("use kv_cache_dtype fp8 (halves the KV cache)")
        more = gpus_for_batch(model, request, gpu_memory_bytes, gpu_name)
        suggestions.append(f"use num_gpus {more} (tensor parallel; the smallest count that holds this batch)"
                           if more else "add replicas (each holds part of the batch) or a GPU with more memory")
    valid_tp = valid_tensor_parallel_sizes(model, 64)
    if not tensor_parallel_splits(model, tp):
        reasons.append(
            f"num_gpus {tp} cannot split this model: tensor-parallel engines (vLLM, SGLang, TensorRT-LLM, TGI) "
            f"need num_attention_heads "
            f"({model.num_attention_heads}) divisible by the tensor parallel size, and num_key_value_heads "
            f"({model.num_key_value_heads}) divisible by it or dividing it")
        suggestions.append("use num_gpus " + " or ".join(str(n) for n in valid_tp[:6]))
    if tp > model.num_key_value_heads and model.attention_kind != "MLA":
        notes.append(
            f"num_gpus {tp} > num_key_value_heads {model.num_key_value_heads}: KV heads are replicated, "
            f"so KV per GPU stops shrinking")
    return reasons, suggestions, notes


def valid_tensor_parallel_sizes(model: ModelSpec, limit: int) -> list[int]:
    """Tensor parallel sizes up to ``limit`` that engines accept for ``model``.

    vLLM checks ``num_attention_heads % tp == 0`` (``ModelConfig.verify_with_parallel_config``)
    and shards KV heads when ``num_key_value_heads % tp == 0`` or replicates them when
    ``tp % num_key_value_heads == 0`` (``QKVParallelLinear``); MLA latents have no KV-head
    constraint. Example: 32 query and 8 KV heads -> 1, 2, 4, 8, 16, 32.

    Sources: vllm/config/model.py, vllm/model_executor/layers/linear.py.
    """
    return [n for n in range(1, min(limit, model.num_attention_heads) + 1) if tensor_parallel_splits(model, n)]


def tensor_parallel_splits(model: ModelSpec, tensor_parallel_size: int) -> bool:
    """True when engines accept ``tensor_parallel_size`` for ``model`` (rule of :func:`valid_tensor_parallel_sizes`)."""
    n, heads, kv = tensor_parallel_size, model.num_attention_heads, model.num_key_value_heads
    return heads % n == 0 and (model.attention_kind == "MLA" or kv % n == 0 or n % kv == 0)


def gpus_for_batch(model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int, gpu_name: str) -> int | None:
    """Smallest valid tensor-parallel size above ``request.num_gpus`` (up to 64) whose per-GPU budget
    holds ``batch_size`` sequences of ``context_len``; None when none does.

    Same arithmetic as :func:`plan` at each size (weights and KV heads split, overhead re-estimated).
    """
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    fmt = weight_dtype(request.weight_dtype)
    usable = int(gpu_memory_bytes * request.gpu_memory_utilization)
    for n in valid_tensor_parallel_sizes(model, 64):
        if n <= request.num_gpus:
            continue
        overhead = overhead_bytes(model, request, gpu_memory_bytes, gpu_name, tensor_parallel_size=n)
        budget = usable - weight_bytes(model.params, fmt, model.torch_dtype, n) - overhead
        per_seq = kv_profile(model, dtypes, n, request.block_size).bytes_per_sequence(request.context_len)
        if budget > 0 and request.batch_size * per_seq <= budget:
            return n
    return None


def weight_fixes(model: ModelSpec, request: PlanRequest, usable: int, overhead: int) -> list[str]:
    """Smallest GPU count, then smaller weight dtypes, that would hold the weights."""
    fixes: list[str] = []
    fmt = weight_dtype(request.weight_dtype)
    for n in (2, 4, 8, 16, 32, 64):
        if n > request.num_gpus and weight_bytes(model.params, fmt, model.torch_dtype, n) + overhead <= usable:
            fixes.append(f"use num_gpus {n} (tensor parallel)")
            break
    current = weight_bytes(model.params, fmt, model.torch_dtype, request.num_gpus)
    for name in ("fp8", "int4"):
        smaller = weight_bytes(model.params, WEIGHT_DTYPES[name], model.torch_dtype, request.num_gpus)
        if smaller < current and smaller + overhead <= usable:
            fixes.append(f"use weight_dtype {name} ({gib(smaller)} per GPU)")
            break
    if not fixes:
        fixes.append("choose a GPU with more memory")
    return fixes
