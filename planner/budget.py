"""Per-GPU memory budget: from card memory to KV capacity, users and max context.

(The request and result types, ``PlanRequest`` and ``Plan`` with their defaults, live in
``plan_types.py`` and are re-exported here; the memoized context-free part of a plan
(``_PlanBase``) sits beside ``plan()``, which it must match field for field; the overhead
estimate and the diagnosis live in ``overhead.py`` / ``diagnose.py``.)

The chain (one small function each), per GPU:

    usable  = floor(gpu_memory_bytes * gpu_memory_utilization)
    budget  = usable - weights_per_gpu - overhead_per_gpu          (KV cache budget)
    blocks  = budget // (block_size * kv_bytes_per_token_per_gpu)
    tokens  = blocks * block_size                                   (capacity: every layer keeps every token)
    users   = budget // kv_bytes_per_sequence_per_gpu(context_len)  (paged, windows applied)
    held    = budget * context_len // kv_bytes_per_sequence_per_gpu(context_len)
                                                                    (capacity at context: users x context,
                                                                     vLLM's "GPU KV cache size" for full attention)
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

from dataclasses import dataclass, field, fields, replace
from operator import itemgetter

from planner.diagnose import ContextFreeMessages, Fix, context_free_messages, diagnose, gib, tensor_parallel_splits
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.kv import KVProfile, cache_dtypes, kv_profile
from planner.model.memo import model_memo, remember
from planner.model.params import (
    describe_weight_formats,
    model_weight_bytes,
    model_weight_bytes_by_format,
    weight_bytes_by_format,
)
from planner.overhead import (  # noqa: F401 - estimate_overhead re-exported (planner.sweep's docstrings)
    OverheadEstimate,
    estimate_overhead,
    budget_max_model_len,
    plan_overhead,
)
from planner.serving.features import ServingEffects, ShiftedProfile, serving_effects
from planner.serving.multimodal import encoder_chunk_budget
from planner.units import MiB, largest_fitting

from planner.plan_types import (  # noqa: F401 - re-exported: the request and result types live there
    DEFAULT_BLOCK_SIZE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    ENGINE_KNOB_FIELDS,
    MAX_CONTEXT_SEARCH_LIMIT,
    Plan,
    PlanRequest,
    _weights_label,
)


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


def max_context_len(profile: KVProfile, budget_bytes: int, batch_size: int, limit: int, *,
                    prefill_tokens: int = 0) -> int:
    """Largest ``C <= limit`` whose ``batch_size`` sequences fit in ``budget_bytes``, one of them at its prefill
    peak when ``prefill_tokens`` is given (``profile.prefill_extra_bytes``: windowed layers hold a chunk more).

    Binary search on the non-decreasing ``profile.bytes_per_sequence`` (the prefill extra is non-decreasing
    too); 0 when not even one token fits.

    Sources: vLLM ``_estimate_max_model_len_from_groups`` (binary search),
    vllm/v1/core/kv_cache_utils.py.
    """
    if budget_bytes < 0:
        return 0

    def fits(c: int) -> bool:
        extra = profile.prefill_extra_bytes(c, prefill_tokens) if prefill_tokens and batch_size else 0
        return batch_size * profile.bytes_per_sequence(c) + extra <= budget_bytes

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
    base = plan_base(model, gpu_memory_bytes, request, gpu_id)  # validates the request (or knew it valid)
    tp, context, batch = request.num_gpus, request.context_len, request.batch_size
    budget = base.budget
    per_seq_gpu_paged, per_seq_gpu_exact, per_seq_exact_1 = base.bytes_per_sequence(context)

    capacity_tokens = base.capacity_tokens
    prefill_extra = base.prefill_extra_bytes(context)  # windowed layers only
    if budget <= prefill_extra:
        max_seqs = at_context = 0
    elif per_seq_gpu_paged:
        max_seqs = (budget - prefill_extra) // per_seq_gpu_paged
        at_context = _tokens_at_context(budget - prefill_extra, per_seq_gpu_paged, context,
                                        base.plan_fields["block_size"])
    else:
        max_seqs = at_context = 0

    model_limit = model.max_position_embeddings
    found = base._contexts.get(batch)  # contexts_for_batch, without the call when it has the answer
    by_memory, max_ctx_raw = base.contexts_for_batch(batch) if found is None else found
    if model_limit and by_memory >= model_limit:
        max_ctx, limited_by = model_limit, "model"
    elif by_memory >= MAX_CONTEXT_SEARCH_LIMIT:
        max_ctx, limited_by = by_memory, "none"  # window-capped or recurrent layers only
    else:
        max_ctx, limited_by = by_memory, "memory"

    needed = batch * per_seq_gpu_paged + prefill_extra  # one of the batch at its prefill peak
    budget_or_0 = budget if budget > 0 else 0  # conditionals, not max() / min(): cheaper calls on this path
    if needed > budget or (model_limit and context > model_limit):
        reasons, suggestions, notes = diagnose(
            model, request, usable=base.usable, weights_gpu=base.weights_gpu, overhead=base.overhead_bytes,
            budget=budget, per_seq=per_seq_gpu_paged, max_seqs=max_seqs, max_ctx=max_ctx,
            gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id, context_free=base.context_free,
            prefill_extra=prefill_extra)
        reasons, suggestions, notes = tuple(reasons), tuple(suggestions), tuple(notes)
    else:  # it fits: only the context-free messages (_PlanBase.fitting_messages)
        reasons, suggestions, notes = base.fitting_messages
    cap = request.max_num_seqs
    if cap and (max_seqs > cap or batch > cap):
        reasons, suggestions, notes = _scheduler_cap(cap, batch, max_seqs, context, reasons, suggestions, notes)
    in_use = needed if needed < budget_or_0 else budget_or_0
    if not base.splits:
        # The engine refuses to start: no capacity to report (the reasons say why).
        capacity_tokens = at_context = max_seqs = max_ctx = max_ctx_raw = in_use = 0
        limited_by = "tensor_parallel"

    # Plan(**base.plan_fields, **these), filled as one dict (Plan._from_dict): the same object, cheaper.
    values = base.plan_fields.copy()
    values["context_len"] = context
    values["batch_size"] = batch
    values["kv_cache_bytes_per_sequence"] = per_seq_exact_1
    values["kv_cache_bytes_per_sequence_per_gpu"] = per_seq_gpu_exact
    values["kv_cache_bytes_total"] = batch * tp * per_seq_gpu_exact
    values["kv_cache_bytes_in_use"] = in_use
    values["free_bytes"] = budget_or_0 - in_use
    values["kv_cache_bytes_needed"] = needed
    values["kv_cache_prefill_extra_bytes"] = prefill_extra
    values["kv_cache_shortfall_bytes"] = needed - budget_or_0 if needed > budget_or_0 else 0
    values["kv_cache_capacity_tokens"] = capacity_tokens
    values["kv_cache_capacity_tokens_at_context"] = at_context
    past_limit = bool(model_limit and context > model_limit)  # no request of context_len is taken: no user
    values["max_concurrent_sequences"] = 0 if past_limit else max_seqs if not cap or max_seqs <= cap else cap
    values["max_concurrent_sequences_by_memory"] = max_seqs
    values["max_context_len"] = max_ctx
    values["max_context_len_limited_by"] = limited_by
    values["max_context_len_by_memory"] = by_memory
    values["max_context_len_before_overheads"] = max_ctx_raw
    values["fits"] = not reasons
    values["reasons"] = reasons
    values["suggestions"] = suggestions
    values["notes"] = notes
    values["serving"] = None if base.serving is None else base.serving.plan_dict(
        budget_bytes=budget, kv_needed_bytes=needed, features=request.serving,
        kv_bytes_per_token_per_gpu=base.paged_gpu.bytes_per_token, block_size=base.paged_gpu.block_size,
        kv_bytes_per_sequence_per_gpu=per_seq_gpu_paged, capacity_tokens=capacity_tokens)
    return Plan._from_dict(values)


def _scheduler_cap(cap: int, batch: int, held: int, context: int, reasons: tuple, suggestions: tuple,
                   notes: tuple) -> tuple[tuple, tuple, tuple]:
    """The messages of an explicit ``max_num_seqs`` (``cap``): a note where the KV cache holds more than ``cap``
    requests of ``context`` tokens (``held``), and a reason with its two fixes (raise ``max_num_seqs`` to the batch,
    lower the batch to what runs at once) where ``batch`` is above ``cap``. A batch fix of the memory diagnosis above
    ``cap`` is dropped (it would not fit either).

    Source: vLLM's scheduler admits a waiting request only while fewer than ``max_num_seqs`` run
    (vllm/v1/core/sched/scheduler.py ``Scheduler.schedule``: ``len(self.running) == self.max_num_running_reqs``
    stops admission), so the users decoding at once are ``min(held, max_num_seqs)``.
    """
    said = f"limited by max_num_seqs {cap:,}; the KV cache holds {held:,} of {context:,} tokens"
    if held > cap:
        notes = (*notes, f"Users {said} (vLLM runs at most max_num_seqs requests at once).")
    if batch > cap:
        reasons = (*reasons, f"batch {batch:,} is more than max_num_seqs {cap:,}: vLLM runs at most {cap:,} "
                             f"requests at once (the KV cache holds {held:,} of {context:,} tokens)")
        kept = tuple(s for s in suggestions if not (isinstance(s, Fix) and s.key == "batch_size" and s.value > cap))
        lower = min(cap, held)
        batch_fix = ((Fix(f"lower batch_size to {lower:,} (at most max_num_seqs {cap:,} run at once)",
                          "batch_size", lower),) if lower > 0 and ("batch_size", lower) not in
                     {(s.key, s.value) for s in kept if isinstance(s, Fix)} else ())
        suggestions = (*kept, *((Fix(f"raise max_num_seqs to {batch:,} (the KV cache holds {held:,})",
                                     "max_num_seqs", batch),) if held >= batch else ()), *batch_fix)
    return reasons, suggestions, notes


@dataclass(frozen=True, kw_only=True)
class _PlanBase:
    """The part of a plan that ``context_len`` and ``batch_size`` do not change, per GPU [bytes].

    Built once per model object and set of the other knobs by :func:`plan_base`;
    each value is one step of the module docstring's chain.

    Attributes:
        plan_fields: The :class:`Plan` fields these knobs alone decide (ids, dtypes,
            weights, overhead, usable memory, budget, per-token KV); read-only.
        exact_1, exact_gpu, paged_gpu: KV profiles at TP 1 unpaged, at ``num_gpus`` unpaged,
            at ``num_gpus`` paged by ``block_size``.
        usable: ``floor(gpu_memory_bytes x gpu_memory_utilization)``.
        weights_gpu, overhead_bytes: Weights and overhead of one GPU.
        budget: ``usable - weights_gpu - overhead_bytes`` (the KV cache budget).
        capacity_tokens: Whole blocks of the budget, in tokens (0 when none).
        raw_budget: ``gpu_memory_bytes - weights_gpu`` (the "before overheads" context).
        splits: Whether engines accept ``num_gpus`` for this model.
        context_free: The messages of :func:`planner.diagnose.diagnose` that no context or batch
            changes (weights that do not fit, tensor-parallel split), for a request that does not fit.
        fitting_messages: ``(reasons, suggestions, notes)`` of a request that fits, as tuples: what
            :func:`planner.diagnose.diagnose` says then (only the tensor-parallel messages, which do not
            depend on the context); empty when the budget is negative (no request fits).
        serving: What the request's serving features change (:func:`planner.serving.serving_effects`),
            None when it has none.
        sequence_terms: The three profiles' per-sequence sums pre-multiplied
            (:func:`_sequence_terms`), None when a serving feature shifts them (its profiles are then asked).
        prefill_tokens: Tokens of the one prefill chunk beside the decoding sequences
            (:func:`profile_pass_tokens`: ``max_num_batched_tokens``); a windowed layer holds its window plus
            that chunk while it is prefilled (:meth:`prefill_extra_bytes`).
    """

    plan_fields: dict
    exact_1: KVProfile
    exact_gpu: KVProfile
    paged_gpu: KVProfile
    usable: int
    weights_gpu: int
    overhead_bytes: int
    budget: int
    capacity_tokens: int
    raw_budget: int
    splits: bool
    fitting_messages: tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]] = ((), (), ())
    context_free: ContextFreeMessages | None = None
    serving: ServingEffects | None = None
    sequence_terms: tuple | None = None
    prefill_tokens: int = 0
    _contexts: dict = field(default_factory=dict, compare=False, repr=False)

    def prefill_extra_bytes(self, context_len: int) -> int:
        """Bytes the batch holds beyond its sequences' decoding blocks: one of them at its prefill peak, a
        chunk of :attr:`prefill_tokens` beside its windows (:meth:`planner.model.kv.KVProfile.prefill_extra_bytes`
        of the paged profile) [bytes]; 0 without windowed layers. The users of a plan are those decoding beside
        that one prefill chunk, as the Engine view's :func:`planner.engines.pages.decoding_ratio` counts them:
        Gemma 3 27B on an H200 at 8,192 tokens, 61 users (vLLM's 61.56 decoding at once) where the decoding
        blocks alone would hold 64."""
        return self.paged_gpu.prefill_extra_bytes(context_len, self.prefill_tokens) if self.prefill_tokens else 0

    def bytes_per_sequence(self, context_len: int) -> tuple[int, int, int]:
        """``(paged_gpu, exact_gpu, exact_1)`` bytes of one sequence of ``context_len`` tokens [bytes].

        The same integers as the three profiles' :meth:`planner.model.kv.KVProfile.bytes_per_sequence`
        (each group's ``num_layers x (slots x bytes_per_token + fixed)`` summed as ``slots x
        (num_layers x bytes_per_token) + num_layers x fixed``, as ``KVProfile.bytes_per_sequences``
        does; the groups without a window share one slot count), in one call; ``context_len`` >= 0
        (``PlanRequest.validate`` checked it).
        """
        terms = self.sequence_terms
        if terms is None:
            return (self.paged_gpu.bytes_per_sequence(context_len), self.exact_gpu.bytes_per_sequence(context_len),
                    self.exact_1.bytes_per_sequence(context_len))
        out = []
        for block, per_slot, fixed, capped in terms:
            total = -(-context_len // block) * block * per_slot + fixed
            for cap, cap_per_slot in capped:
                held = context_len if context_len < cap else cap
                total += -(-held // block) * block * cap_per_slot
            out.append(total)
        if len(out) == 2:  # exact_1 is exact_gpu (one GPU, or a cache replicated on every GPU)
            out.append(out[1])
        return out

    def contexts_for_batch(self, batch_size: int) -> tuple[int, int]:
        """``(max context by memory, max context before overheads)`` for ``batch_size`` sequences [tokens].

        Two binary searches (:func:`max_context_len`), kept per batch size. Before overheads searches the exact
        cache, except where the users are counted in an engine's pool of another cache format
        (:attr:`planner.model.kv.KVProfile.pooled`: vLLM's ``fp8_ds_mla`` pages of DeepSeek-V4), where it
        searches that pool: one plan, one cache (QA: V4-Flash on 8 x H200 at batch 64 read 397,824 tokens with
        overheads and 327,774 before them, the latter in bf16).
        """
        found = self._contexts.get(batch_size)
        if found is None:
            if len(self._contexts) >= 1024:
                self._contexts.clear()
            by_memory = max_context_len(self.paged_gpu, self.budget, batch_size, MAX_CONTEXT_SEARCH_LIMIT,
                                        prefill_tokens=self.prefill_tokens)
            raw = max_context_len(self.paged_gpu if self.paged_gpu.pooled else self.exact_gpu, self.raw_budget,
                                  batch_size, MAX_CONTEXT_SEARCH_LIMIT)
            found = self._contexts[batch_size] = (by_memory, raw)
        return found


_KNOBS_BUT_CONTEXT_AND_BATCH = itemgetter(*(f.name for f in fields(PlanRequest)
                                             if f.name not in ("context_len", "batch_size")))
"""Every :class:`PlanRequest` field but ``context_len`` and ``batch_size``, read from the request's ``__dict__``
as one tuple (part of the base's key; by name from the dict: cheaper than ``attrgetter``)."""


def _tokens_at_context(pool_bytes: int, per_seq_bytes: int, context: int, block_size: int) -> int:
    """Tokens ``pool_bytes`` hold as ``context``-token sequences decoding at once, as vLLM prints them:
    ``int(num_blocks / blocks_per_request x context)`` of whole blocks (vllm/v1/core/kv_cache_utils.py, the "GPU KV
    cache size" and "Maximum concurrency" lines). A sequence whose bytes are ``ceil(context / block_size)`` equal
    rows (every layer keeps every token) is floored to whole rows first: Llama-3-8B on an H100 held "441,955" here
    where the whole-block capacity and the engine both say 441,952 (QA, stop 43). Other layouts (windows, recurrent
    states, pool blocks) keep the byte ratio, within one row of it."""
    rows = -(-context // block_size)
    row_bytes, ragged = divmod(per_seq_bytes, rows)
    if not ragged and row_bytes:
        return pool_bytes // row_bytes * context // rows
    return pool_bytes * context // per_seq_bytes


def plan_base(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str) -> _PlanBase:
    """The :class:`_PlanBase` of ``plan(model, gpu_memory_bytes, request, gpu_id)``, memoized per model
    object and every knob but ``context_len`` and ``batch_size`` (:mod:`planner.model.memo`).

    Validates the request first when the memo has no entry for its knobs; an entry means a request
    with the same knobs passed :meth:`PlanRequest.validate`, so only the context and batch are checked.

    Raises:
        ValueError: as :meth:`PlanRequest.validate`, or ``gpu_memory_bytes <= 0``.
    """
    memo = model_memo(model)
    key = ("plan_base", gpu_memory_bytes, gpu_id, _KNOBS_BUT_CONTEXT_AND_BATCH(request.__dict__),
           budget_max_model_len(request, gpu_memory_bytes, gpu_id))  # the context, where vLLM caps the profile pass
    try:
        base = memo.get(key)
    except TypeError:  # an unhashable knob (a caller's list, say): validate() names it
        base = None
    if base is None:
        request.validate()
        if gpu_memory_bytes <= 0:
            raise ValueError(f"gpu_memory_bytes must be > 0, got {gpu_memory_bytes}")
        base = remember(memo, key, _build_plan_base(model, gpu_memory_bytes, request, gpu_id))
    else:  # a request with these other knobs passed validate() and gpu_memory_bytes > 0: only these two are new
        request.validate_context_and_batch()
    return base


def _build_plan_base(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str) -> _PlanBase:
    """:func:`plan_base` without the memo (module docstring, first three steps of the chain)."""
    tp = request.num_gpus
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, gpu_name=gpu_id)  # AMD: no fp8_ds_mla
    by_format = model_weight_bytes_by_format(model, request.weight_dtype, tp)
    weights_gpu = sum(by_format.values())
    paged_gpu = _paged_profile(model, dtypes, tp, request, gpu_id)  # vLLM's block size (a hybrid's padded pages)

    if request.overhead_bytes is None:
        overhead = plan_overhead(model, request, gpu_memory_bytes, gpu_id, tp, weights_gpu)
    else:
        overhead = OverheadEstimate(
            activation_bytes=request.overhead_bytes, logits_bytes=0, runtime_bytes=0,
            overridden=True, formula=f"user override: {gib(request.overhead_bytes)}")

    exact_1, exact_gpu = kv_profile(model, dtypes, 1, 1), kv_profile(model, dtypes, tp, 1)
    effects = None
    if request.serving is not None:  # the one serving hook (planner.serving.features)
        effects, weights_gpu, overhead, (exact_1, exact_gpu, paged_gpu) = _apply_serving(
            model, request, gpu_memory_bytes, gpu_id, dtypes, weights_gpu, overhead, (exact_1, exact_gpu, paged_gpu))

    usable = int(gpu_memory_bytes * request.gpu_memory_utilization)
    budget = usable - weights_gpu - overhead.total_bytes
    # Per token per GPU in the exact cache's format for a pool of another format (DeepSeek-V4's fp8_ds_mla pages:
    # the paged profile's per-token figure is each group's whole page over its block, windowed groups included,
    # 431,392 B for V4-Flash beside 8,277 B whole-model, QA); else the paged profile's (its block rounding only).
    per_token_gpu = exact_gpu.bytes_per_token if paged_gpu.pooled else paged_gpu.bytes_per_token
    if budget > 0 and per_token_gpu:
        blocks = budget // (paged_gpu.block_size * per_token_gpu)
        capacity_tokens = blocks * paged_gpu.block_size
    else:
        capacity_tokens = 0
    plan_fields = {
        "model_id": model.model_id, "gpu_id": gpu_id, "num_gpus": tp,
        "weight_dtype": request.weight_dtype, "weight_dtype_resolved": describe_weight_formats(by_format),
        "kv_cache_dtype": _paged_kv_name(model, paged_gpu, dtypes.kv_name),  # DeepSeek-V4's pool: fp8_ds_mla
        "gpu_memory_utilization": request.gpu_memory_utilization,
        "block_size": paged_gpu.block_size, "params": model.num_parameters,  # a hybrid's: vLLM's raised size
        "weights_bytes": model_weight_bytes(model, request.weight_dtype), "weights_bytes_per_gpu": weights_gpu,
        "kv_cache_bytes_per_token": exact_1.bytes_per_token, "kv_cache_bytes_per_token_per_gpu": per_token_gpu,
        "kv_cache_exact_dtype": dtypes.kv_name, "kv_cache_pool_bytes_per_token": paged_gpu.pool_bytes_per_token,
        "gpu_memory_bytes": gpu_memory_bytes, "usable_memory_bytes": usable,
        "overhead_bytes": overhead.total_bytes, "activation_bytes": overhead.activation_bytes,
        "logits_bytes": overhead.logits_bytes, "runtime_bytes": overhead.runtime_bytes,
        "cudagraph_bytes": overhead.cudagraph_bytes, "runner_bytes": overhead.runner_bytes,
        "loading_bytes": overhead.loading_bytes,
        "overhead_overridden": overhead.overridden, "overhead_formula": overhead.formula,
        "kv_cache_budget_bytes": budget, "max_position_embeddings": model.max_position_embeddings,
        "pipeline_parallel_size": 1, "pipeline_stage": 0,  # one stage; planner.pipeline sets them for more
        "decode_context_parallel_size": 1,  # each GPU keeps every token; planner.context_budget sets it for -dcp
        "overhead_profile": request.overhead_profile,
    }
    fitting = ((), (), ())
    context_free = context_free_messages(model, request, usable=usable, weights_gpu=weights_gpu,
                                         overhead=overhead.total_bytes, gpu_memory_bytes=gpu_memory_bytes,
                                         budget=budget)
    if budget >= 0:  # what diagnose says of a request that fits (one token, no KV): context-free messages
        said = diagnose(model, replace(request, context_len=1, batch_size=1), usable=usable,
                        weights_gpu=weights_gpu, overhead=overhead.total_bytes, budget=budget, per_seq=0,
                        max_seqs=0, max_ctx=0, gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id,
                        context_free=context_free)
        fitting = tuple(tuple(messages) for messages in said)
    profiles = (paged_gpu, exact_gpu) if exact_1 == exact_gpu else (paged_gpu, exact_gpu, exact_1)
    return _PlanBase(
        plan_fields=plan_fields, exact_1=exact_1, exact_gpu=exact_gpu, paged_gpu=paged_gpu,
        usable=usable, weights_gpu=weights_gpu, overhead_bytes=overhead.total_bytes, budget=budget,
        capacity_tokens=capacity_tokens, raw_budget=gpu_memory_bytes - weights_gpu,
        splits=tensor_parallel_splits(model, tp), fitting_messages=fitting, context_free=context_free,
        serving=effects,
        sequence_terms=(tuple(map(_sequence_terms, profiles))
                        if all(_slot_priced(p) for p in profiles) else None),
        prefill_tokens=profile_pass_tokens(request, gpu_memory_bytes, gpu_id) if paged_gpu.windowed else 0,
    )


def _slot_priced(profile) -> bool:
    """True when :func:`_sequence_terms` prices ``profile``: a plain :class:`KVProfile` in one block whose groups
    cost ``bytes_per_token`` a slot (no ``KVGroup.page_bytes``: DeepSeek-V4's pool blocks)."""
    return type(profile) is KVProfile and profile.uniform_block and not any(g.page_bytes for g in profile.groups)


def _sequence_terms(profile: KVProfile) -> tuple[int, int, int, tuple[tuple[int, int], ...]]:
    """``(block_size, uncapped bytes per slot, fixed bytes, ((window cap, bytes per slot), ...))`` of ``profile``:
    the per-group factors of :meth:`_PlanBase.bytes_per_sequence`, the uncapped groups' summed [bytes, tokens]."""
    uncapped = sum(g.num_layers * g.bytes_per_token for g in profile.groups if g.max_tokens is None)
    fixed = sum(g.num_layers * g.bytes_per_sequence_fixed for g in profile.groups)
    capped = tuple((g.max_tokens, g.num_layers * g.bytes_per_token) for g in profile.groups
                   if g.max_tokens is not None)
    return profile.block_size, uncapped, fixed, capped


def _paged_profile(model: ModelSpec, dtypes, tp: int, request: PlanRequest, gpu_id: str) -> KVProfile:
    """The paged profile of one GPU at the block vLLM runs
    (:func:`planner.engines.vllm_hybrid_profile.paged_kv_profile`: a hybrid's raised block and padded states, a
    windowed model's groups, DeepSeek-V4's pool blocks, an MLA backend's forced block, else ``block_size``)."""
    from planner.engines.vllm_hybrid_profile import paged_kv_profile  # noqa: PLC0415 - import cycle

    return paged_kv_profile(model, dtypes, tp, request.block_size, weight_dtype=request.weight_dtype,
                            kv_cache_dtype=request.kv_cache_dtype, gpu_name=gpu_id, speculative=_speculative(request))


def _paged_kv_name(model: ModelSpec, paged: KVProfile, kv_name: str) -> str:
    """The cache the paged profile prices (:func:`planner.engines.vllm_hybrid_profile.paged_kv_name`: DeepSeek-V4's
    pool pages are fp8_ds_mla whatever ``kv_name``)."""
    from planner.engines.vllm_hybrid_profile import paged_kv_name  # noqa: PLC0415 - import cycle

    return paged_kv_name(model, paged, kv_name)


def _speculative(request: PlanRequest):
    """The request's speculative decoding config, or None."""
    return None if request.serving is None else request.serving.speculative


def hybrid_paged_profile(model: ModelSpec, dtypes, tp: int, request: PlanRequest, gpu_id: str = "") -> KVProfile | None:
    """The paged profile of an attention + Mamba hybrid, a windowed model or DeepSeek-V4 on one GPU of ``gpu_id``,
    from vLLM's layout (:func:`planner.engines.vllm_hybrid_profile.hybrid_kv_profile`: a hybrid's raised block size
    and states padded to the page, windowed layers' padded groups, DeepSeek-V4's pool blocks, the drafter's layers
    and draft-token state pages of speculative decoding); None for other models."""
    from planner.engines.vllm_hybrid_profile import hybrid_kv_profile  # noqa: PLC0415 - import cycle

    return hybrid_kv_profile(model, dtypes, tp, request.block_size, weight_dtype=request.weight_dtype,
                             kv_cache_dtype=request.kv_cache_dtype, gpu_name=gpu_id, speculative=_speculative(request))


# --- serving features (planner.serving): the one hook; PlanRequest.serving None skips it -------------
def profile_pass_tokens(request: PlanRequest, gpu_memory_bytes: int, gpu_id: str) -> int:
    """Tokens of the profile pass the overhead estimate assumes: ``max_num_batched_tokens``, else what
    ``vllm serve`` (or the ``LLM`` class, ``usage_context="llm"``) of the request's ``overhead_profile`` picks for
    this GPU, capped at ``max_num_seqs x context_len`` where that vLLM caps it
    (:func:`planner.overhead.budget_max_model_len`, the Engine view's :func:`planner.engines.profiles.
    vllm_batch_limits`) [tokens]."""
    if request.max_num_batched_tokens is not None:
        return request.max_num_batched_tokens
    from planner.engines.profiles import engine_profile, vllm_batch_limits  # noqa: PLC0415 - import cycle

    profile = request.overhead_profile
    return vllm_batch_limits(engine_profile(profile), gpu_memory_bytes, gpu_id,
                             budget_max_model_len(request, gpu_memory_bytes, gpu_id, profile), request.usage_context,
                             max_num_seqs=request.max_num_seqs)[0]


def _apply_serving(model, request, gpu_memory_bytes, gpu_id, dtypes, weights_gpu, overhead, profiles):
    """The serving features' extras on one GPU: weights, profile-pass activation (not under an
    overhead override), and the KV profiles (the features' extra layers and token slots)."""
    tp = request.num_gpus
    effects = serving_effects(model, request.serving, tensor_parallel_size=tp, dtypes=dtypes,
                              weight_dtype_name=request.weight_dtype, gpu_id=gpu_id,
                              num_batched_tokens=profile_pass_tokens(request, gpu_memory_bytes, gpu_id),
                              encoder_chunk_budget_bytes=encoder_chunk_budget(gpu_memory_bytes,
                                                                              gpu_memory_bytes - weights_gpu))
    effects = effects.with_profile_peak(overhead.activation_bytes + overhead.logits_bytes)
    if effects.extra_activation_bytes and overhead.overridden:  # the override is the whole overhead
        effects = replace(effects, extra_activation_bytes=0, notes=(
            *effects.notes, "the overhead override replaces the serving features' profile-pass extras"))
    elif effects.extra_activation_bytes:
        overhead = OverheadEstimate(
            activation_bytes=overhead.activation_bytes + effects.extra_activation_bytes,
            logits_bytes=overhead.logits_bytes, runtime_bytes=overhead.runtime_bytes, overridden=False,
            cudagraph_bytes=overhead.cudagraph_bytes, runner_bytes=overhead.runner_bytes,
            loading_bytes=overhead.loading_bytes,
            formula=f"{overhead.formula} + {effects.extra_activation_bytes / MiB:,.1f} MiB serving features "
                    "(profile pass)")
    extra = effects.extra_kv_model
    exact = tuple(effects.kv_profile(p, None if extra is None else kv_profile(extra, dtypes, t, 1))
                  for p, t in zip(profiles[:2], (1, tp)))
    paged = paged_with_serving(model, dtypes, request, effects, profiles[2], gpu_id)
    return effects, weights_gpu + effects.extra_weights_bytes, overhead, (*exact, paged)


def paged_with_serving(model: ModelSpec, dtypes, request: PlanRequest, effects, paged: KVProfile,
                       gpu_id: str = "") -> KVProfile | ShiftedProfile:
    """The paged profile of one GPU with the serving features' ``effects``
    (:class:`planner.serving.features.ServingEffects`): a hybrid's or windowed model's from vLLM's layout, which holds
    the drafter's layers and draft-token state pages (:func:`hybrid_paged_profile`), else ``paged`` with the
    drafter's layers paged as the model's; either with the extra token slots each sequence holds (lookahead,
    image tokens)."""
    tp, extra = request.num_gpus, effects.extra_kv_model
    hybrid = hybrid_paged_profile(model, dtypes, tp, request, gpu_id)
    added = None if hybrid is not None or extra is None else kv_profile(extra, dtypes, tp, paged.block_size)
    return effects.kv_profile(hybrid or paged, added)


def sequence_profiles(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest,
                      gpu_id: str = "") -> tuple[KVProfile | ShiftedProfile, KVProfile | ShiftedProfile]:
    """``(exact, paged)``: the KV profiles on one GPU that :func:`plan` sizes ``request``'s sequences with,
    unpaged and paged by ``request.block_size``, serving features applied (the drafter's layers in the pool,
    the lookahead and image tokens each sequence holds: :func:`_apply_serving`); without features, the
    model's own ``kv_profile(model, dtypes, num_gpus, 1)`` and ``(..., block_size)``.

    Raises:
        ValueError: as :func:`plan`.
    """
    base = plan_base(model, gpu_memory_bytes, request, gpu_id)
    return base.exact_gpu, base.paged_gpu


def serving_budget_cost_bytes(plain: Plan, served: Plan) -> int:
    """KV-cache budget per GPU the serving features take [bytes]: ``plain``'s budget minus ``served``'s.

    Args:
        plain: :func:`plan` of a request without serving features (``serving=None``).
        served: :func:`plan` of the same request with them, on the same GPU.

    The budget is ``usable - weights_per_gpu - overhead_per_gpu`` (module docstring) and the features leave
    ``usable`` alone, so the cost is what they add to the weights (LoRA adapter slots, a drafter's weights:
    ``ServingEffects.extra_weights_bytes``) plus what they add to the profile pass (``extra_activation_bytes``,
    none under an overhead override), :func:`_apply_serving`. Negative when the features free memory.
    Worked example: Qwen3-8B on an H100 SXM at 8,192 tokens, one rank-16 bf16 LoRA slot: 87,293,952 B of adapter
    weights + 1,572,864 B of profile pass = 88,866,816 B (59,005,118,562 - 58,916,251,746).
    """
    return plain.kv_cache_budget_bytes - served.kv_cache_budget_bytes
