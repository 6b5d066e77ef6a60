"""What a plain plan is asked and what it answers: :class:`PlanRequest` and :class:`Plan`, and their defaults.

Split from :mod:`planner.budget` (which keeps the chain that turns one into the other and re-exports
every name here, so ``from planner.budget import Plan, PlanRequest, DEFAULT_BLOCK_SIZE`` and
``from planner import Plan`` keep working). Field names are the CLI flags and URL keys; sizes are
integer bytes, per GPU unless named.

Sources: vLLM ``CacheConfig`` defaults (vllm/config/cache.py), block sizes (vllm/platforms/cuda.py);
the result fields are :func:`planner.budget.plan`'s, whose docstring gives the chain.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING

from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.model.fastinit import fast_frozen_init
from planner.serving.features import ServingFeatures

if TYPE_CHECKING:  # annotations only
    from planner.engines.vllm_moe_dispatch import DataParallelMoE

DEFAULT_GPU_MEMORY_UTILIZATION = 0.9
"""vLLM's default ``gpu_memory_utilization`` (vllm/config/cache.py)."""

DEFAULT_BLOCK_SIZE = 16
"""vLLM's KV block size for ordinary attention backends on CUDA [tokens] (vllm/platforms/cuda.py)."""

MAX_CONTEXT_SEARCH_LIMIT = 1 << 24
"""Upper bound of the max-context search when the model states no limit [tokens]."""

CONTEXT_BOUND_OVERHEAD = frozenset({"vllm-v0"})
"""vLLM profiles whose profile pass grows with ``max_model_len`` (V0 without chunked prefill profiles one whole
prompt, ``max(max_model_len, 2048)`` tokens: :func:`planner.engines.profiles.vllm_scheduler_defaults`), which the
budget's context-free overhead cannot price: :meth:`PlanRequest.for_engine` keeps the newest vLLM's for them."""

DEFAULT_OVERHEAD_PROFILE = "vllm"
"""The vLLM profile whose overhead a request prices by default: the newest vLLM (``--engine vllm``;
:data:`planner.overhead.OVERHEAD_PROFILE` is this id)."""


ENGINE_KNOB_FIELDS = ("usage_context", "enforce_eager", "cudagraph_mode", "optimization_level",
                      "max_cudagraph_capture_size", "warm_compile_cache")
"""The :class:`PlanRequest` fields that are :class:`planner.engines.types.EngineRequest` fields of the same name and
default, passed to it as they are (:meth:`PlanRequest.engine_knobs`); ``max_num_seqs`` and
``max_num_batched_tokens`` go to the profile-pass sizes instead. Each is a vLLM flag (``--usage-context``,
``--enforce-eager``, ``-cc.cudagraph_mode``, ``-O``, ``--max-cudagraph-capture-size``, the compile cache of
``VLLM_CACHE_ROOT``) that no other engine takes (:meth:`PlanRequest.for_engine_family`), where the other engines
take the two sizes under their own flags (SGLang ``--max-running-requests`` / ``--chunked-prefill-size``, llama.cpp
``-np`` for the sequences; planner/engines/launch.py)."""


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
        max_num_seqs, enforce_eager, cudagraph_mode, optimization_level, max_cudagraph_capture_size, usage_context,
            warm_compile_cache: vLLM's engine knobs that change its non-KV memory, under the CLI flags' names and the
            Engine page's URL keys (:class:`planner.engines.types.EngineRequest` has the same fields); the defaults
            (None, False, ``serve``) are ``vllm serve``'s own, so a request without them plans as before. The
            overhead takes each through the Engine view's functions (:func:`planner.overhead.estimate_overhead`).
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
    max_num_seqs: int | None = None
    enforce_eager: bool = False
    cudagraph_mode: str | None = None
    optimization_level: int | None = None
    max_cudagraph_capture_size: int | None = None
    usage_context: str = "serve"
    warm_compile_cache: bool = False
    pipeline_parallel_size: int = 1
    """Pipeline stages of the replica whose one stage these ``num_gpus`` GPUs are: :func:`planner.pipeline.
    plan_pipeline` sets it on each stage's request, and only the process groups' memory reads it (a stage's GPUs
    also hold the pipeline group's NCCL buffers, :func:`planner.engines.overheads.vllm_non_torch_bytes`)."""
    overhead_profile: str = DEFAULT_OVERHEAD_PROFILE
    """The vLLM profile (:data:`planner.engines.profiles.ENGINE_PROFILES`, family ``vllm``) whose overhead the budget
    prices: its weights as loaded, profile pass, CUDA graphs and runner state (:func:`planner.overhead.
    estimate_overhead` ``profile_id``). The newest vLLM by default; :meth:`for_engine` sets the link's or the CLI's
    vLLM version, so the budget and that version's Engine view size one KV cache (QA: Qwen3-32B on an H100 at 30,000
    tokens under ``vllm-v0.28`` read "Does not fit, 0 users" beside the Engine page's "starts, 1.05x")."""
    moe_data_parallel: DataParallelMoE | None = None
    """The data-parallel MoE layout of a vLLM ``--data-parallel-size`` launch of an MoE model whose one attention
    data-parallel rank this request plans (:func:`planner.rank_budget.rank_plan` sets it; None = a lone rank): vLLM's
    profile run then gathers every rank's tokens into each MoE layer, and the overhead charges that peak and the DP
    group's NCCL buffers as the Engine view does (:func:`planner.overhead.estimate_overhead`,
    :mod:`planner.engines.vllm_moe_dispatch`)."""

    def validate(self) -> None:
        """Raise ValueError with an actionable message for the first out-of-range field.

        The checks run in a fixed order and a message is formatted only when its check fails.
        """
        self.validate_context_and_batch()
        if not self.num_gpus >= 1:
            raise ValueError(f"num_gpus must be at least 1, got {self.num_gpus}")
        if not self.pipeline_parallel_size >= 1:
            raise ValueError(f"pipeline_parallel_size must be at least 1, got {self.pipeline_parallel_size}")
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if not self.block_size >= 1:
            raise ValueError(f"block_size must be at least 1 token, got {self.block_size}")
        if not (self.max_num_batched_tokens is None or self.max_num_batched_tokens >= 1):
            raise ValueError(f"max_num_batched_tokens must be at least 1, got {self.max_num_batched_tokens}")
        if not (self.overhead_bytes is None or self.overhead_bytes >= 0):
            raise ValueError(f"overhead must be >= 0 bytes, got {self.overhead_bytes}")
        self.validate_engine_knobs()
        self.validate_overhead_profile()
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"unknown weight dtype {self.weight_dtype!r}; choose one of {', '.join(WEIGHT_DTYPES)}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPE_CHOICES:
            raise ValueError(f"unknown KV-cache dtype {self.kv_cache_dtype!r}; "
                             f"choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}")
        if self.serving is not None:
            self.serving.validate()

    def engine_knobs(self) -> tuple[tuple[str, object], ...]:
        """``(field, value)`` of :data:`ENGINE_KNOB_FIELDS` set off their default, in that order: the
        :class:`planner.engines.types.EngineRequest` fields of the same names the overhead plans with
        (:func:`planner.overhead.estimate_overhead`); ``()`` for ``vllm serve`` with none set."""
        return tuple((name, getattr(self, name)) for name in ENGINE_KNOB_FIELDS
                     if getattr(self, name) != _KNOB_DEFAULTS[name])

    def for_engine_family(self, family: str) -> tuple[PlanRequest, tuple[str, ...]]:
        """This request as the budget plans it beside a launch of an engine of ``family`` (``vllm``, ``sglang``,
        ``llama.cpp``, ...: :attr:`planner.engines.profiles.EngineProfile.family`), and the names of the knobs it
        drops: :data:`ENGINE_KNOB_FIELDS` are vLLM flags, so under another engine they are at their default (the
        launch has no such flag); ``(self, ())`` for vLLM or with none set. QA: ``engine=sglang`` with
        ``enforce_eager=true`` moved Home's budget with no word."""
        dropped = () if family == "vllm" else tuple(name for name, _ in self.engine_knobs())
        if not dropped:
            return self, ()
        return replace(self, **{name: _KNOB_DEFAULTS[name] for name in dropped}), dropped

    def for_engine(self, engine: str) -> tuple[PlanRequest, tuple[str, ...]]:
        """:meth:`for_engine_family` of ``engine``'s family (a key of :data:`planner.engines.profiles.ENGINE_PROFILES`),
        with the budget's overhead priced as ``engine`` where it is a vLLM version (:attr:`overhead_profile`); another
        engine, or a vLLM of :data:`CONTEXT_BOUND_OVERHEAD`, keeps the newest vLLM's, whose arithmetic the budget then
        shows beside that engine's own view. Worked example (Qwen3-32B, one H100, 30,000 tokens): ``vllm-v0.28``
        prices 7.66 GiB of KV, its Engine view's "available" to the byte, where the newest vLLM's overhead left 6.82.

        Raises:
            ValueError: unknown engine (:func:`planner.engines.profiles.engine_profile`).
        """
        from planner.engines.profiles import engine_profile  # noqa: PLC0415 - planner.engines imports the budget

        profile = engine_profile(engine)
        request, dropped = self.for_engine_family(profile.family)
        priced = profile.id if profile.family == "vllm" and profile.id not in CONTEXT_BOUND_OVERHEAD else (
            DEFAULT_OVERHEAD_PROFILE)
        return (request if request.overhead_profile == priced else replace(request, overhead_profile=priced)), dropped

    def validate_overhead_profile(self) -> None:
        """Check that :attr:`overhead_profile` is a vLLM profile (the budget's overhead is a vLLM profile pass).

        Raises:
            ValueError: naming the value and the vLLM profiles.
        """
        if self.overhead_profile == DEFAULT_OVERHEAD_PROFILE:
            return
        from planner.engines.profiles import ENGINE_PROFILES  # noqa: PLC0415 - planner.engines imports the budget

        known = [p.id for p in ENGINE_PROFILES.values() if p.family == "vllm"]
        if self.overhead_profile not in known:
            raise ValueError(f"overhead_profile must be a vLLM profile ({', '.join(known)}), "
                             f"got {self.overhead_profile!r}")

    def validate_engine_knobs(self) -> None:
        """Check the vLLM knobs (``max_num_seqs`` ... ``usage_context``) against the values vLLM takes
        (:data:`planner.engines.vllm_cudagraph.CUDAGRAPH_MODES`, ``OPTIMIZATION_LEVELS``,
        :data:`planner.engines.profiles.USAGE_CONTEXTS`).

        Raises:
            ValueError: naming the field and the value given.
        """
        from planner.engines.profiles import USAGE_CONTEXTS  # noqa: PLC0415 - planner.engines imports the budget
        from planner.engines.vllm_cudagraph import CUDAGRAPH_MODES, OPTIMIZATION_LEVELS  # noqa: PLC0415

        for name in ("max_num_seqs", "max_cudagraph_capture_size"):
            value = getattr(self, name)
            if not (value is None or value >= 1):
                raise ValueError(f"{name} must be at least 1, got {value}")
        if not (self.cudagraph_mode is None or self.cudagraph_mode in CUDAGRAPH_MODES):
            raise ValueError(f"unknown cudagraph_mode {self.cudagraph_mode!r}; "
                             f"choose one of {', '.join(CUDAGRAPH_MODES)}")
        if not (self.optimization_level is None or self.optimization_level in OPTIMIZATION_LEVELS):
            raise ValueError(f"optimization_level must be one of {', '.join(map(str, OPTIMIZATION_LEVELS))}, "
                             f"got {self.optimization_level}")
        if self.usage_context not in USAGE_CONTEXTS:
            raise ValueError(f"unknown usage_context {self.usage_context!r}; choose one of {', '.join(USAGE_CONTEXTS)}")

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
    ``kv_cache_prefill_extra_bytes`` is the part of ``kv_cache_bytes_needed`` that one of the batch holds at its
    prefill peak beyond its decoding blocks: a chunk of ``max_num_batched_tokens`` more in each windowed layer
    (sliding windows, chunked local attention; 0 for other models): Gemma 3 27B on an H200, one 8,192-token
    sequence: 1.10 GiB decoding (whole blocks), 3.28 GiB more while it is prefilled.

    ``block_size`` is the page size the plan used: the request's, except for an attention + Mamba hybrid, which
    vLLM pages in larger blocks that hold one Mamba state each (784 tokens for Qwen3.5-27B;
    :mod:`planner.engines.vllm_hybrid_profile`).

    ``weight_dtype`` echoes the request (``auto`` included);
    ``weight_dtype_resolved`` names the formats the weights end up in, largest
    share first (``"mxfp4 + bf16"`` for gpt-oss at ``auto``, ``"int4 + bf16"``
    when int4 leaves embeddings in bf16), from
    :func:`planner.model.params.weight_bytes_by_format`.

    ``overhead_bytes`` is the sum of ``activation_bytes`` / ``logits_bytes`` (the profile pass's peak, one of them
    zero), ``runtime_bytes`` (non-torch), ``cudagraph_bytes`` (the CUDA graphs :attr:`overhead_profile`'s vLLM
    estimates before sizing the KV cache), ``runner_bytes`` (Model Runner V2's sampler state and a first launch's
    compile) and ``loading_bytes`` (the weights as that vLLM loads them beyond the checkpoint's
    ``weights_bytes_per_gpu``): the Engine view's terms for ``--engine`` :attr:`overhead_profile`
    (:func:`planner.overhead.estimate_overhead`, :func:`planner.overhead.weights_loading_bytes`).

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
    kv_cache_exact_dtype: str
    """The cache the exact KV figures (``kv_cache_bytes_per_token[_per_gpu]``, ``kv_cache_bytes_per_sequence
    [_per_gpu]``, ``kv_cache_bytes_total``) are in: the requested ``--kv-cache-dtype`` resolved
    (:func:`planner.model.kv.cache_dtypes`). It is :attr:`kv_cache_dtype` for every model but DeepSeek-V4, whose
    users are counted in vLLM's ``fp8_ds_mla`` pool pages while these figures stay in ``bf16`` (or ``fp8``)."""
    kv_cache_pool_bytes_per_token: int | None
    """Where the users are counted in an engine's pool of another format (:attr:`kv_cache_dtype`, DeepSeek-V4's
    ``fp8_ds_mla``): the bytes a sequence's pool pages grow by per token past every window, on one GPU
    (:attr:`planner.model.kv.KVProfile.pool_bytes_per_token`; 4,109 B for V4-Flash beside its 8,277 B bf16
    ``kv_cache_bytes_per_token``); None where the users are counted in the exact cache's blocks."""
    kv_cache_bytes_per_sequence: int
    kv_cache_bytes_per_sequence_per_gpu: int
    kv_cache_bytes_total: int
    gpu_memory_bytes: int
    usable_memory_bytes: int
    overhead_bytes: int
    activation_bytes: int
    logits_bytes: int
    runtime_bytes: int
    cudagraph_bytes: int = 0
    runner_bytes: int = 0
    loading_bytes: int = 0
    overhead_overridden: bool
    overhead_formula: str
    kv_cache_budget_bytes: int
    kv_cache_bytes_in_use: int
    free_bytes: int
    kv_cache_bytes_needed: int
    kv_cache_prefill_extra_bytes: int = 0
    kv_cache_shortfall_bytes: int
    kv_cache_capacity_tokens: int
    """Whole blocks of the budget at :attr:`kv_cache_bytes_per_token_per_gpu`, in tokens: every layer keeping every
    token, so windows, recurrent states and compressed caches are not applied (a JSON key kept as it is)."""
    kv_cache_capacity_tokens_at_context: int = 0
    """Tokens the budget holds as sequences of :attr:`context_len`, users counted as :attr:`max_concurrent_sequences`
    (``floor((budget - prefill extra) x context_len / KV of one paged sequence)``): users x context. For a model whose
    every layer is full attention this is vLLM's "GPU KV cache size" print within one block; for windowed and
    compressed models vLLM's print (the concurrency times the length) counts each request at its prefill peak, its
    window plus a whole batched chunk (vllm/v1/core/kv_cache_utils.py ``get_max_concurrency_for_kv_cache_config``,
    ``_report_kv_cache_config``; :func:`planner.engines.pages.printed_tokens`), which the engine view gives."""
    max_concurrent_sequences: int
    """Requests of :attr:`context_len` decoding at once: the KV cache's (:attr:`max_concurrent_sequences_by_memory`),
    at most an explicit ``max_num_seqs`` (vLLM's scheduler runs no more: vllm/v1/core/sched/scheduler.py); 0 when
    :attr:`context_len` is past :attr:`max_position_embeddings` (the engine takes no such request)."""
    max_concurrent_sequences_by_memory: int = 0
    """Requests of :attr:`context_len` the KV cache holds, whatever ``max_num_seqs`` runs at once (and past the
    model's limit too: what the memory would hold)."""
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
    pipeline_parallel_size: int = 1
    """Pipeline stages the replica's :attr:`num_gpus` are split into, each stage on ``num_gpus //
    pipeline_parallel_size`` tensor-parallel GPUs (:func:`planner.pipeline.plan_pipeline`); 1 without stages."""
    pipeline_stage: int = 0
    """The stage whose per-GPU figures these are: the one with the fewest users and KV tokens, which sizes every
    stage's cache (vLLM takes the smallest worker's blocks); 0 without stages."""
    decode_context_parallel_size: int = 1
    """GPUs of the tensor-parallel group each request's KV is split over along tokens (vLLM ``-dcp``,
    :func:`planner.context_budget.plan_context_parallel`): the per-GPU figures are then those of sequences of
    ``ceil(context_len / decode_context_parallel_size)`` tokens; 1 without it."""
    overhead_profile: str = DEFAULT_OVERHEAD_PROFILE
    """The vLLM profile whose overhead the budget priced (:attr:`PlanRequest.overhead_profile`): the newest vLLM's
    unless the request names an older vLLM version."""

    @property
    def kv_cache_bytes_per_sequence_paged_per_gpu(self) -> int:
        """One sequence of ``context_len`` on one GPU in whole blocks, as ``max_concurrent_sequences`` counts it
        (a hybrid's raised block and padded states included): ``(kv_cache_bytes_needed - kv_cache_prefill_extra_bytes)
        / batch_size`` [bytes]."""
        return (self.kv_cache_bytes_needed - self.kv_cache_prefill_extra_bytes) // self.batch_size

    @property
    def kv_cache_exact_named(self) -> str:
        """``"bf16"``: the cache of the exact KV figures where it is not the one the users are counted in
        (:attr:`kv_cache_exact_dtype` beside :attr:`kv_cache_dtype`: DeepSeek-V4), so a page or the CLI names it
        beside those figures; ``""`` where the two are one cache."""
        return "" if self.kv_cache_exact_dtype == self.kv_cache_dtype else self.kv_cache_exact_dtype

    @property
    def weights_label(self) -> str:
        """The weight dtype as asked and as resolved, for messages.

        ``"bf16"``; ``"int4 + bf16"`` when int4 leaves embeddings and norms in
        16 bits; ``"auto → mxfp4 + bf16"`` when ``auto`` resolved to the checkpoint's formats.
        """
        return _weights_label(self.weight_dtype, self.weight_dtype_resolved)

    def to_dict(self) -> dict:
        """Plain dict for JSON output (tuples become lists; ``serving`` only when it is on), with
        ``kv_cache_bytes_per_sequence_paged_per_gpu`` (:attr:`kv_cache_bytes_per_sequence_paged_per_gpu`, the
        sequence the users are counted in) beside the fields."""
        out = asdict(self)
        out["kv_cache_bytes_per_sequence_paged_per_gpu"] = self.kv_cache_bytes_per_sequence_paged_per_gpu
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


_KNOB_DEFAULTS = {f.name: f.default for f in fields(PlanRequest) if f.name in ENGINE_KNOB_FIELDS}
"""The defaults of :data:`ENGINE_KNOB_FIELDS` (``vllm serve``'s own)."""
