"""Per-GPU memory budget: from card memory to KV capacity, users and max context.

(Size: about 590 lines because ``Plan`` and ``PlanRequest`` carry their field docs and the
memoized context-free part of a plan (``_PlanBase``) sits beside ``plan()``, which it must match
field for field, with its one-pass per-sequence sums and the one-dict result record; the overhead
estimate and the diagnosis live in ``overhead.py`` / ``diagnose.py``.)

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

from dataclasses import asdict, dataclass, field, fields, replace
from operator import itemgetter

from planner.diagnose import ContextFreeMessages, context_free_messages, diagnose, gib, tensor_parallel_splits
from planner.model import ModelSpec
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES, weight_dtype
from planner.model.fastinit import fast_frozen_init
from planner.model.kv import KVProfile, cache_dtypes, kv_profile
from planner.model.memo import model_memo, remember
from planner.model.params import (
    describe_weight_formats,
    model_weight_bytes,
    model_weight_bytes_by_format,
    weight_bytes_by_format,
)
from planner.overhead import OverheadEstimate, estimate_overhead
from planner.serving.features import ServingEffects, ServingFeatures, serving_effects
from planner.units import MiB, largest_fitting

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` (vllm/config/cache.py)."""

DEFAULT_BLOCK_SIZE = 16
"""vLLM's KV block size for ordinary attention backends on CUDA [tokens] (vllm/platforms/cuda.py)."""

MAX_CONTEXT_SEARCH_LIMIT = 1 << 24
"""Upper bound of the max-context search when the model states no limit [tokens]."""


@fast_frozen_init  # the same constructor, without object.__setattr__ per field (planner/model/fastinit.py)
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
        serving: Production serving features (LoRA slots, speculative decoding, multimodal
            inputs, KV offload; :mod:`planner.serving`); None = none, every number as without it.
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
    serving: ServingFeatures | None = None

    def validate(self) -> None:
        """Raise ValueError with an actionable message for the first out-of-range field.

        The checks run in a fixed order and a message is formatted only when its check fails.
        """
        self.validate_context_and_batch()
        if not self.num_gpus >= 1:
            raise ValueError(f"num_gpus must be at least 1, got {self.num_gpus}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if not self.block_size >= 1:
            raise ValueError(f"block_size must be at least 1 token, got {self.block_size}")
        if not (self.max_num_batched_tokens is None or self.max_num_batched_tokens >= 1):
            raise ValueError(f"max_num_batched_tokens must be at least 1, got {self.max_num_batched_tokens}")
        if not (self.overhead_bytes is None or self.overhead_bytes >= 0):
            raise ValueError(f"overhead must be >= 0 bytes, got {self.overhead_bytes}")
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"unknown weight dtype {self.weight_dtype!r}; choose one of {', '.join(WEIGHT_DTYPES)}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPE_CHOICES:
            raise ValueError(f"unknown KV-cache dtype {self.kv_cache_dtype!r}; "
                             f"choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}")
        if self.serving is not None:
            self.serving.validate()

    def validate_context_and_batch(self) -> None:
        """The first checks of :meth:`validate`: ``context_len`` in [1, 2^24] and ``batch_size`` >= 1.

        :func:`plan` runs only these when a request with the same other knobs has already passed
        :meth:`validate` (its per-model memo holds that request's context-free part).

        Raises:
            ValueError: naming the field, its limit and the value given.
        """
        if not self.context_len >= 1:
            raise ValueError(f"context_len must be at least 1 token, got {self.context_len}")
        if not self.context_len <= MAX_CONTEXT_SEARCH_LIMIT:
            raise ValueError(f"context_len must be at most {MAX_CONTEXT_SEARCH_LIMIT:,} tokens, "
                             f"got {self.context_len:,}")
        if not self.batch_size >= 1:
            raise ValueError(f"batch_size must be at least 1 sequence, got {self.batch_size}")


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

    KV fields per GPU [bytes]: ``kv_cache_bytes_needed`` is what ``batch_size`` sequences of
    ``context_len`` take in whole blocks; ``kv_cache_bytes_in_use`` is that much of it that fits
    in the budget, and ``kv_cache_shortfall_bytes = max(0, needed - max(budget, 0))`` the rest
    (the overflow a "does not fit" plan shows). Example (the design-review case): Llama-3.1-70B,
    4 x H100, 200 x 2,500 tokens need 38.33 GiB against a 33.09 GiB budget: 5.24 GiB short.

    ``weight_dtype`` echoes the request (``auto`` included);
    ``weight_dtype_resolved`` names the formats the weights end up in, largest
    share first (``"mxfp4 + bf16"`` for gpt-oss at ``auto``, ``"int4 + bf16"``
    when int4 leaves embeddings in bf16), from
    :func:`planner.model.params.weight_bytes_by_format`.

    ``serving`` (JSON key only when the request has serving features, :mod:`planner.serving`): the
    features' breakdown per GPU. With it on, ``weights_bytes_per_gpu`` includes the LoRA slots and
    draft weights (vLLM counts them in "Model loading took"), ``activation_bytes`` the profile-pass
    extras, the KV per token the draft's layers, and each sequence its extra token slots.
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
    kv_cache_bytes_needed: int
    kv_cache_shortfall_bytes: int
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
    serving: dict | None = None

    @property
    def weights_label(self) -> str:
        """The weight dtype as asked and as resolved, for messages.

        ``"bf16"``; ``"int4 + bf16"`` when int4 leaves embeddings and norms in
        16 bits; ``"auto → mxfp4 + bf16"`` when ``auto`` resolved to the checkpoint's formats.
        """
        return _weights_label(self.weight_dtype, self.weight_dtype_resolved)

    def to_dict(self) -> dict:
        """Plain dict for JSON output (tuples become lists; ``serving`` only when it is on)."""
        out = asdict(self)
        for key in ("reasons", "suggestions", "notes"):
            out[key] = list(out[key])
        if out["serving"] is None:
            del out["serving"]
        return out

    @classmethod
    def _from_parts(cls, *parts: dict) -> Plan:
        """``Plan(**merged)`` for the union of ``parts`` (a later part overrides an earlier one), built
        without the generated ``__init__`` (:meth:`_from_dict`); the same object.

        Raises:
            TypeError: the merged parts do not have one value per field.
        """
        values: dict = {}
        for part in parts:
            values.update(part)
        return cls._from_dict(values)

    @classmethod
    def _from_dict(cls, values: dict) -> Plan:
        """``Plan(**values)`` without the generated ``__init__``: ``values`` (which the caller hands over and
        no longer touches) becomes the new instance's ``__dict__``; the same object, frozen as usual.

        A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__`` (about 0.1 us a
        field, 4 to 5 us for these 43, more than the rest of a warm :func:`plan`). ``values`` must name
        every field and nothing else (checked by count, which a missing field with an extra name would
        pass: the tests compare the result with ``Plan(**values)``).

        Raises:
            TypeError: ``values`` does not have one value per field.
        """
        if len(values) != _PLAN_FIELD_COUNT:
            missing = sorted(set(cls.__dataclass_fields__) - set(values))
            extra = sorted(set(values) - set(cls.__dataclass_fields__))
            raise TypeError(f"Plan._from_dict: missing fields {missing}, unknown names {extra}")
        plan = object.__new__(cls)
        object.__setattr__(plan, "__dict__", values)
        return plan


_PLAN_FIELD_COUNT = len(fields(Plan))


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
    base = _plan_base(model, gpu_memory_bytes, request, gpu_id)  # validates the request (or knew it valid)
    tp, context, batch = request.num_gpus, request.context_len, request.batch_size
    budget = base.budget
    per_seq_gpu_paged, per_seq_gpu_exact, per_seq_exact_1 = base.bytes_per_sequence(context)

    capacity_tokens = base.capacity_tokens
    if budget <= 0:
        max_seqs = 0
    elif per_seq_gpu_paged:
        max_seqs = budget // per_seq_gpu_paged
    else:
        max_seqs = 0

    model_limit = model.max_position_embeddings
    found = base._contexts.get(batch)  # contexts_for_batch, without the call when it has the answer
    by_memory, max_ctx_raw = base.contexts_for_batch(batch) if found is None else found
    if model_limit and by_memory >= model_limit:
        max_ctx, limited_by = model_limit, "model"
    elif by_memory >= MAX_CONTEXT_SEARCH_LIMIT:
        max_ctx, limited_by = by_memory, "none"  # window-capped or recurrent layers only
    else:
        max_ctx, limited_by = by_memory, "memory"

    needed = batch * per_seq_gpu_paged
    budget_or_0 = budget if budget > 0 else 0  # conditionals, not max() / min(): cheaper calls on this path
    if needed > budget or (model_limit and context > model_limit):
        reasons, suggestions, notes = diagnose(
            model, request, usable=base.usable, weights_gpu=base.weights_gpu, overhead=base.overhead_bytes,
            budget=budget, per_seq=per_seq_gpu_paged, max_seqs=max_seqs, max_ctx=max_ctx,
            gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id, context_free=base.context_free)
        reasons, suggestions, notes = tuple(reasons), tuple(suggestions), tuple(notes)
    else:  # it fits: only the context-free messages (_PlanBase.fitting_messages)
        reasons, suggestions, notes = base.fitting_messages
    in_use = needed if needed < budget_or_0 else budget_or_0
    if not base.splits:
        # The engine refuses to start: no capacity to report (the reasons say why).
        capacity_tokens = max_seqs = max_ctx = max_ctx_raw = in_use = 0
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
    values["kv_cache_shortfall_bytes"] = needed - budget_or_0 if needed > budget_or_0 else 0
    values["kv_cache_capacity_tokens"] = capacity_tokens
    values["max_concurrent_sequences"] = max_seqs
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
        kv_bytes_per_token_per_gpu=base.paged_gpu.bytes_per_token, block_size=request.block_size,
        kv_bytes_per_sequence_per_gpu=per_seq_gpu_paged, capacity_tokens=capacity_tokens)
    return Plan._from_dict(values)


@dataclass(frozen=True, kw_only=True)
class _PlanBase:
    """The part of a plan that ``context_len`` and ``batch_size`` do not change, per GPU [bytes].

    Built once per model object and set of the other knobs by :func:`_plan_base`;
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
    _contexts: dict = field(default_factory=dict, compare=False, repr=False)

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

        Two binary searches (:func:`max_context_len`), kept per batch size.
        """
        found = self._contexts.get(batch_size)
        if found is None:
            if len(self._contexts) >= 1024:
                self._contexts.clear()
            by_memory = max_context_len(self.paged_gpu, self.budget, batch_size, MAX_CONTEXT_SEARCH_LIMIT)
            raw = max_context_len(self.exact_gpu, self.raw_budget, batch_size, MAX_CONTEXT_SEARCH_LIMIT)
            found = self._contexts[batch_size] = (by_memory, raw)
        return found


_KNOBS_BUT_CONTEXT_AND_BATCH = itemgetter(*(f.name for f in fields(PlanRequest)
                                             if f.name not in ("context_len", "batch_size")))
"""Every :class:`PlanRequest` field but ``context_len`` and ``batch_size``, read from the request's ``__dict__``
as one tuple (part of the base's key; by name from the dict: cheaper than ``attrgetter``)."""


def _plan_base(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str) -> _PlanBase:
    """The :class:`_PlanBase` of ``plan(model, gpu_memory_bytes, request, gpu_id)``, memoized per model
    object and every knob but ``context_len`` and ``batch_size`` (:mod:`planner.model.memo`).

    Validates the request first when the memo has no entry for its knobs; an entry means a request
    with the same knobs passed :meth:`PlanRequest.validate`, so only the context and batch are checked.

    Raises:
        ValueError: as :meth:`PlanRequest.validate`, or ``gpu_memory_bytes <= 0``.
    """
    memo = model_memo(model)
    key = ("plan_base", gpu_memory_bytes, gpu_id, _KNOBS_BUT_CONTEXT_AND_BATCH(request.__dict__))
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
    """:func:`_plan_base` without the memo (module docstring, first three steps of the chain)."""
    tp = request.num_gpus
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    by_format = model_weight_bytes_by_format(model, request.weight_dtype, tp)
    weights_gpu = sum(by_format.values())
    paged_gpu = kv_profile(model, dtypes, tp, request.block_size)

    if request.overhead_bytes is None:
        overhead = estimate_overhead(
            model, dtypes.state.bytes_for(1), tp, request.max_num_batched_tokens,
            gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_id)
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
    per_token_gpu = paged_gpu.bytes_per_token
    if budget > 0 and per_token_gpu:
        blocks = budget // (request.block_size * per_token_gpu)
        capacity_tokens = blocks * request.block_size
    else:
        capacity_tokens = 0
    plan_fields = {
        "model_id": model.model_id, "gpu_id": gpu_id, "num_gpus": tp,
        "weight_dtype": request.weight_dtype, "weight_dtype_resolved": describe_weight_formats(by_format),
        "kv_cache_dtype": dtypes.kv.name, "gpu_memory_utilization": request.gpu_memory_utilization,
        "block_size": request.block_size, "params": model.num_parameters,
        "weights_bytes": model_weight_bytes(model, request.weight_dtype), "weights_bytes_per_gpu": weights_gpu,
        "kv_cache_bytes_per_token": exact_1.bytes_per_token, "kv_cache_bytes_per_token_per_gpu": per_token_gpu,
        "gpu_memory_bytes": gpu_memory_bytes, "usable_memory_bytes": usable,
        "overhead_bytes": overhead.total_bytes, "activation_bytes": overhead.activation_bytes,
        "logits_bytes": overhead.logits_bytes, "runtime_bytes": overhead.runtime_bytes,
        "overhead_overridden": overhead.overridden, "overhead_formula": overhead.formula,
        "kv_cache_budget_bytes": budget, "max_position_embeddings": model.max_position_embeddings,
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
        sequence_terms=tuple(map(_sequence_terms, profiles)) if all(type(p) is KVProfile for p in profiles) else None,
    )


def _sequence_terms(profile: KVProfile) -> tuple[int, int, int, tuple[tuple[int, int], ...]]:
    """``(block_size, uncapped bytes per slot, fixed bytes, ((window cap, bytes per slot), ...))`` of ``profile``:
    the per-group factors of :meth:`_PlanBase.bytes_per_sequence`, the uncapped groups' summed [bytes, tokens]."""
    uncapped = sum(g.num_layers * g.bytes_per_token for g in profile.groups if g.max_tokens is None)
    fixed = sum(g.num_layers * g.bytes_per_sequence_fixed for g in profile.groups)
    capped = tuple((g.max_tokens, g.num_layers * g.bytes_per_token) for g in profile.groups
                   if g.max_tokens is not None)
    return profile.block_size, uncapped, fixed, capped


# --- serving features (planner.serving): the one hook; PlanRequest.serving None skips it -------------
def profile_pass_tokens(request: PlanRequest, gpu_memory_bytes: int, gpu_id: str) -> int:
    """Tokens of the profile pass the overhead estimate assumes: ``max_num_batched_tokens``, else what
    ``vllm serve`` picks for this GPU (:func:`planner.overhead.estimate_overhead`) [tokens]."""
    if request.max_num_batched_tokens is not None:
        return request.max_num_batched_tokens
    from planner.engines.profiles import engine_profile, vllm_scheduler_defaults  # noqa: PLC0415 - import cycle
    from planner.overhead import OVERHEAD_PROFILE  # noqa: PLC0415

    return vllm_scheduler_defaults(engine_profile(OVERHEAD_PROFILE), gpu_memory_bytes, gpu_id, 0)[0]


def _apply_serving(model, request, gpu_memory_bytes, gpu_id, dtypes, weights_gpu, overhead, profiles):
    """The serving features' extras on one GPU: weights, profile-pass activation (not under an
    overhead override), and the KV profiles (the features' extra layers and token slots)."""
    tp = request.num_gpus
    effects = serving_effects(model, request.serving, tensor_parallel_size=tp, dtypes=dtypes,
                              weight_dtype_name=request.weight_dtype, gpu_id=gpu_id,
                              num_batched_tokens=profile_pass_tokens(request, gpu_memory_bytes, gpu_id))
    effects = effects.with_profile_peak(overhead.activation_bytes + overhead.logits_bytes)
    if effects.extra_activation_bytes and overhead.overridden:  # the override is the whole overhead
        effects = replace(effects, extra_activation_bytes=0, notes=(
            *effects.notes, "the overhead override replaces the serving features' profile-pass extras"))
    elif effects.extra_activation_bytes:
        overhead = OverheadEstimate(
            activation_bytes=overhead.activation_bytes + effects.extra_activation_bytes,
            logits_bytes=overhead.logits_bytes, runtime_bytes=overhead.runtime_bytes, overridden=False,
            formula=f"{overhead.formula} + {effects.extra_activation_bytes / MiB:,.1f} MiB serving features "
                    "(profile pass)")
    extra = effects.extra_kv_model
    sizes = ((1, 1), (tp, 1), (tp, request.block_size))
    shifted = tuple(effects.kv_profile(p, None if extra is None else kv_profile(extra, dtypes, t, b))
                    for p, (t, b) in zip(profiles, sizes))
    return effects, weights_gpu + effects.extra_weights_bytes, overhead, shifted
