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

from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple

from planner.model import ModelSpec
from planner.model.memo import model_memo, remember
from planner.model.params import model_weight_bytes
from planner.units import GiB

if TYPE_CHECKING:  # annotations only (planner.budget imports this module)
    from planner.budget import PlanRequest

class Fix(str):
    """A suggestion's text that also names the knob and the value that apply it.

    A ``str`` (so ``Plan.suggestions`` and the CLI JSON keep their plain strings) with two
    attributes: ``key``, the request field / CLI flag with underscores / URL key
    (``batch_size``, ``context_len``, ``num_gpus``, ``kv_cache_dtype``, ``weight_dtype``), and
    ``value``, the value that fixes the plan (an ``int`` or a dtype name). The UI turns it into
    a button that sets that input. Example: ``Fix("lower batch_size to 172 (fits at this
    context)", "batch_size", 172)``.
    """

    key: str
    value: int | str

    def __new__(cls, text: str, key: str, value: int | str) -> Fix:
        made = super().__new__(cls, text)
        made.key, made.value = key, value
        return made

    def __reduce__(self):  # copy / deepcopy (dataclasses.asdict) keep the knob
        return (Fix, (str(self), self.key, self.value))


def gib(num_bytes: int) -> str:
    """Bytes as a GiB string for messages (2 decimals, labelled)."""
    return f"{num_bytes / GiB:,.2f} GiB"



def diagnose(model: ModelSpec, request: PlanRequest, *, usable: int, weights_gpu: int, overhead: int,
              budget: int, per_seq: int, max_seqs: int, max_ctx: int,
              gpu_memory_bytes: int, gpu_name: str = "",
              context_free: ContextFreeMessages | None = None,
              prefill_extra: int = 0) -> tuple[list[str], list[str], list[str]]:
    """Reasons a plan does not fit, the knobs that would fix it, and notes.

    ``context_free``: :func:`context_free_messages` of the same model, knobs and budget (a caller that
    keeps it per knob set passes it; else it is made here). ``prefill_extra``: what one of the batch holds at
    its prefill peak beyond its decoding blocks (windowed layers, ``planner.budget._PlanBase.prefill_extra_bytes``)
    [bytes]; the batch needs ``batch_size x per_seq`` plus that.
    """
    reasons: list[str] = []
    suggestions: list[str] = []
    notes: list[str] = []
    if context_free is None:
        context_free = context_free_messages(model, request, usable=usable, weights_gpu=weights_gpu,
                                             overhead=overhead, gpu_memory_bytes=gpu_memory_bytes, budget=budget)
    limit = model.max_position_embeddings
    if limit and request.context_len > limit:
        tail, fix = _context_limit_messages(limit, model.max_position_embeddings_default)
        reasons.append(f"context_len {request.context_len:,}{tail}")
        suggestions.append(fix)
    if context_free.weights is not None:
        reason, fixes = context_free.weights
        reasons.append(reason)
        suggestions.extend(_for_this_batch(fix, model, request, gpu_memory_bytes, gpu_name) for fix in fixes)
    elif request.batch_size * per_seq + prefill_extra > budget:
        need = request.batch_size * per_seq + prefill_extra
        peak = " (one of them at its prefill peak: its windows hold a chunk more)" if prefill_extra else ""
        reasons.append(
            f"{request.batch_size:,} sequence{'' if request.batch_size == 1 else 's'} x {request.context_len:,} "
            f"tokens need {gib(need)} of KV "
            f"cache per GPU{peak}; the budget is {context_free.budget_text}")
        if max_seqs:
            suggestions.append(Fix(f"lower batch_size to {max_seqs:,} (fits at this context)", "batch_size", max_seqs))
        if max_ctx:
            suggestions.append(Fix(f"lower context_len to {max_ctx:,} (fits this batch)", "context_len", max_ctx))
        if request.kv_cache_dtype in ("auto", "bf16", "fp16", "fp32"):
            suggestions.append(_FP8_KV_FIX)
        more = gpus_for_batch(model, request, gpu_memory_bytes, gpu_name)
        suggestions.append(Fix(f"use num_gpus {more} (tensor parallel; the smallest count that holds this batch)",
                               "num_gpus", more)
                           if more else "add replicas (each holds part of the batch) or a GPU with more memory")
    split_reason, split_fix, split_note = context_free.tensor_parallel
    if split_reason:
        reasons.append(split_reason)
        suggestions.append(split_fix)
    if split_note:
        notes.append(split_note)
    return reasons, suggestions, notes


class ContextFreeMessages(NamedTuple):
    """The parts of :func:`diagnose` that no context length or batch size changes.

    Attributes:
        weights: ``(reason, fixes)`` when weights + overhead exceed the usable memory
            (:func:`_weights_do_not_fit`), else None.
        tensor_parallel: ``(reason, fix, note)`` of :func:`_tensor_parallel_messages`.
        budget_text: :func:`gib` of the KV-cache budget per GPU (the end of the "need ... of KV cache
            per GPU; the budget is ..." reason).
    """

    weights: tuple[str, tuple[str, ...]] | None
    tensor_parallel: tuple[str, str, str]
    budget_text: str


def context_free_messages(model: ModelSpec, request: PlanRequest, *, usable: int, weights_gpu: int, overhead: int,
                          gpu_memory_bytes: int, budget: int) -> ContextFreeMessages:
    """:class:`ContextFreeMessages` of ``model`` under ``request``'s knobs (sizes per GPU [bytes])."""
    weights = None
    if weights_gpu + overhead > usable:
        weights = _weights_do_not_fit(model, request, usable=usable, weights_gpu=weights_gpu,
                                      overhead=overhead, gpu_memory_bytes=gpu_memory_bytes)
    return ContextFreeMessages(weights, _tensor_parallel_messages(model, request.num_gpus), gib(budget))


_FP8_KV_FIX = Fix("use kv_cache_dtype fp8 (halves the KV cache)", "kv_cache_dtype", "fp8")
"""The fp8 KV-cache suggestion (one object: it depends on nothing)."""

_CONTEXT_LIMIT_MESSAGES: dict[tuple[int, bool], tuple[str, Fix]] = {}


def _context_limit_messages(limit: int, defaulted: bool = False) -> tuple[str, Fix]:
    """The end of the "context_len N is longer than the model supports" reason and the "lower context_len to at
    most ``limit``" suggestion, made once per model limit [tokens] (neither depends on the context).

    ``defaulted``: the config states no ``max_position_embeddings``, so ``limit`` is the default of transformers'
    config class (:attr:`planner.model.ModelSpec.max_position_embeddings_default`; ``LlamaConfig``: 2,048), which
    vLLM's ``max_model_len`` check reads too: the reason says so and how to state the model's own limit.
    """
    found = _CONTEXT_LIMIT_MESSAGES.get((limit, defaulted))
    if found is None:
        if len(_CONTEXT_LIMIT_MESSAGES) >= 1024:
            _CONTEXT_LIMIT_MESSAGES.clear()
        tail = (f" is longer than {limit:,} tokens, transformers' default max_position_embeddings for this model "
                "type, which stands in because the config has no max_position_embeddings: add "
                "\"max_position_embeddings\" (the model's longest context, e.g. 131072) to the config"
                if defaulted else f" is longer than the model supports (max_position_embeddings {limit:,})")
        found = _CONTEXT_LIMIT_MESSAGES[limit, defaulted] = (
            tail, Fix(f"lower context_len to at most {limit:,}", "context_len", limit))
    return found


def _weights_do_not_fit(model: ModelSpec, request: PlanRequest, *, usable: int, weights_gpu: int, overhead: int,
                        gpu_memory_bytes: int) -> tuple[str, tuple[str, ...]]:
    """The reason and the fixes when weights + overhead exceed the usable memory (no context in them).

    Memoized per model object and the numbers the text depends on (:mod:`planner.model.memo`).
    """
    memo = model_memo(model)
    key = ("weights_do_not_fit", usable, weights_gpu, overhead, gpu_memory_bytes, request.gpu_memory_utilization,
           request.num_gpus, request.weight_dtype)
    found = memo.get(key)
    if found is None:
        reason = (f"weights ({gib(weights_gpu)}) + overhead ({gib(overhead)}) per GPU exceed the usable "
                  f"{gib(usable)} ({request.gpu_memory_utilization:g} x {gib(gpu_memory_bytes)})")
        found = remember(memo, key, (reason, tuple(weight_fixes(model, request, usable, overhead))))
    return found


def _tensor_parallel_messages(model: ModelSpec, tp: int) -> tuple[str, str, str]:
    """``(reason, fix, note)`` about tensor parallel size ``tp``; empty strings where none applies.

    The reason and fix when engines cannot split the heads over ``tp`` GPUs; the
    note when ``tp`` exceeds the KV heads (replicated). Memoized per model object and ``tp``.
    """
    memo = model_memo(model)
    key = ("tensor_parallel_messages", tp)
    found = memo.get(key)
    if found is None:
        reason = fix = note = ""
        if not tensor_parallel_splits(model, tp):
            valid_tp = valid_tensor_parallel_sizes(model, 64)
            reason = (
                f"num_gpus {tp} cannot split this model: tensor-parallel engines (vLLM, SGLang, TensorRT-LLM, TGI) "
                f"need num_attention_heads "
                f"({model.num_attention_heads}) divisible by the tensor parallel size, and num_key_value_heads "
                f"({model.num_key_value_heads}) divisible by it or dividing it")
            fix = Fix("use num_gpus " + " or ".join(str(n) for n in valid_tp[:6]), "num_gpus",
                      min(valid_tp, key=lambda n: abs(n - tp)))
        if tp > model.num_key_value_heads and model.attention_kind != "MLA":
            note = (f"num_gpus {tp} > num_key_value_heads {model.num_key_value_heads}: KV heads are replicated, "
                    f"so KV per GPU stops shrinking")
        found = remember(memo, key, (reason, fix, note))
    return found


def valid_tensor_parallel_sizes(model: ModelSpec, limit: int) -> list[int]:
    """Tensor parallel sizes up to ``limit`` that engines accept for ``model``.

    vLLM checks ``num_attention_heads % tp == 0`` (``ModelConfig.verify_with_parallel_config``)
    and shards KV heads when ``num_key_value_heads % tp == 0`` or replicates them when
    ``tp % num_key_value_heads == 0`` (``QKVParallelLinear``); MLA latents have no KV-head
    constraint. Example: 32 query and 8 KV heads -> 1, 2, 4, 8, 16, 32.

    Sources: vllm/config/model.py, vllm/model_executor/layers/linear.py.
    """
    memo = model_memo(model)
    key = ("valid_tensor_parallel_sizes", limit)
    sizes = memo.get(key)
    if sizes is None:
        sizes = remember(memo, key, tuple(n for n in range(1, min(limit, model.num_attention_heads) + 1)
                                          if tensor_parallel_splits(model, n)))
    return list(sizes)


def tensor_parallel_splits(model: ModelSpec, tensor_parallel_size: int) -> bool:
    """True when engines accept ``tensor_parallel_size`` for ``model`` (rule of :func:`valid_tensor_parallel_sizes`)."""
    n, heads, kv = tensor_parallel_size, model.num_attention_heads, model.num_key_value_heads
    return heads % n == 0 and (kv % n == 0 or n % kv == 0 or model.attention_kind == "MLA")


def gpus_for_batch(model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int, gpu_name: str) -> int | None:
    """Smallest valid tensor-parallel size above ``request.num_gpus`` (up to 64) whose per-GPU budget
    holds ``batch_size`` sequences of ``context_len``; None when none does.

    The arithmetic of :func:`planner.budget.plan` at each size, serving features included (the drafter's
    weights and layers, MTP's state pages, LoRA slots, image tokens): Qwen3.5-27B + MTP k=3 at 400 x 4,096 on
    an H100 was once told 4 GPUs from the plain model's figures, where 4 hold 54 GiB of the 92 GiB asked.
    """
    batch, context = request.batch_size, request.context_len
    for n, base in _budgets_above(model, request, gpu_memory_bytes, gpu_name):
        extra = base.prefill_extra_bytes(context)  # one request at its prefill peak
        if base.budget > 0 and batch * base.bytes_per_sequence(context)[0] + extra <= base.budget:
            return n
    return None


def _for_this_batch(fix: str, model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int, gpu_name: str) -> str:
    """A weights fix (:func:`weight_fixes`) for this request: a GPU count that holds the weights is replaced by
    the smallest one that also holds ``batch_size`` sequences of ``context_len`` (:func:`gpus_for_batch`), so the
    advice does not lead to a plan that fails again on its KV cache (Llama-3.1-70B, 64 x 32,768 on one H100 was
    told "use num_gpus 2", where 2 GPUs hold the weights and 1.6 GiB of KV cache); where no count up to 64 holds the
    batch, the fix says so. Other fixes are returned as they are."""
    if getattr(fix, "key", None) != "num_gpus":
        return fix
    more = gpus_for_batch(model, request, gpu_memory_bytes, gpu_name)
    if more is not None and more >= fix.value:
        return Fix(f"use num_gpus {more} (tensor parallel; the smallest count that holds this batch)", "num_gpus",
                   more)
    return Fix(f"use num_gpus {fix.value} (tensor parallel; it holds the weights but not this batch: there, lower "
               "batch_size or context_len, or add replicas)", "num_gpus", fix.value)


def _budgets_above(model: ModelSpec, request: PlanRequest, gpu_memory_bytes: int, gpu_name: str) -> tuple:
    """``(n, the plan's context-free part at num_gpus = n)`` for each valid tensor-parallel size ``n`` above
    ``request.num_gpus`` (up to 64) (:func:`planner.budget.plan_base`: its budget, paged sequence bytes and prefill
    extra; memoized there per model object and knobs). A size whose request does not validate (a feature that
    cannot run at that size) is left out.
    """
    from planner.budget import plan_base  # noqa: PLC0415 - import cycle (budget calls diagnose)

    rows = []
    for n in valid_tensor_parallel_sizes(model, 64):
        if n <= request.num_gpus:
            continue
        try:
            base = plan_base(model, gpu_memory_bytes, replace(request, num_gpus=n), gpu_name)
        except ValueError:
            continue
        rows.append((n, base))
    return tuple(rows)


def weight_fixes(model: ModelSpec, request: PlanRequest, usable: int, overhead: int) -> list[str]:
    """Smallest GPU count, then smaller weight dtypes, that would hold the weights."""
    fixes: list[str] = []
    for n in (2, 4, 8, 16, 32, 64):
        if n > request.num_gpus and model_weight_bytes(model, request.weight_dtype, n) + overhead <= usable:
            fixes.append(Fix(f"use num_gpus {n} (tensor parallel)", "num_gpus", n))
            break
    current = model_weight_bytes(model, request.weight_dtype, request.num_gpus)
    for name in ("fp8", "int4"):
        smaller = model_weight_bytes(model, name, request.num_gpus)
        if smaller < current and smaller + overhead <= usable:
            fixes.append(Fix(f"use weight_dtype {name} ({gib(smaller)} per GPU)", "weight_dtype", name))
            break
    if not fixes:
        fixes.append("choose a GPU with more memory")
    return fixes
