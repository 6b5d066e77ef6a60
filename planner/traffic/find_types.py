"""What the reverse planner is asked and what it answers: :class:`FindRequest`, :class:`Setup`, :class:`FindResult`.

Frozen, keyword-only records, validated on construction (a bad request raises a
``ValueError`` naming the field). The search itself is :func:`planner.traffic.reverse.find_setups`.

Sources: see :mod:`planner.traffic.reverse`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, ENGINE_KNOB_FIELDS, PlanRequest
from planner.engines.profiles import ENGINE_PROFILES, resolve_engine_name
from planner.model.dtypes import WEIGHT_DTYPES
from planner.scale.links import DEFAULT_LINK, LINKS
from planner.serving.features import ServingFeatures
from planner.traffic.workload import Workload, fixed_workload

DEFAULT_TP_SIZES = (1, 2, 4, 8)
"""Tensor parallel sizes tried (one node of up to 8 GPUs)."""

DEFAULT_FIND_KV_DTYPES = ("auto", "fp8")
"""KV dtypes tried: the model dtype, then fp8 (what vLLM's --kv-cache-dtype offers)."""

FIND_KV_DTYPE_CHOICES: tuple[str, ...] = ("auto", "bf16", "fp16", "fp8")
"""KV dtypes ``find`` may try: the setups are ``vllm serve`` commands, and vLLM's ``--kv-cache-dtype``
takes auto, a 16-bit dtype or fp8 (vllm/config/cache.py ``CacheDType``); int8/int4/q8_0/q4_0 caches
are llama.cpp or research formats (the Allocation page prices them)."""

SETUP_KINDS: tuple[str, ...] = ("TP", "DP+EP", "DCP", "disaggregated")
"""The kinds of setup Find offers (:attr:`Setup.kind`): plain tensor parallel x replicas; data parallel with expert
parallel (vLLM ``-dp N --enable-expert-parallel``, SGLang ``--dp-size N --enable-dp-attention --ep-size``); decode
context parallel (vLLM ``-dcp``); prefill / decode disaggregated pools. The last three only for MoE or MLA models
(:mod:`planner.traffic.find_scale`)."""

SETUP_KIND_SPELLINGS: dict[str, str] = {
    "tp": "TP", "dp+ep": "DP+EP", "dp-ep": "DP+EP", "dp ep": "DP+EP", "dpep": "DP+EP", "ep": "DP+EP", "dcp": "DCP",
    "disaggregated": "disaggregated", "disagg": "disaggregated", "pd": "disaggregated", "p/d": "disaggregated"}
"""What ``--setup-kinds`` (and the URL key ``setup_kinds``) accepts, case-insensitive, for each kind (``dp ep``: a
link's ``DP+EP`` read with its ``+`` as a space)."""


def setup_kind(text: str) -> str:
    """The :data:`SETUP_KINDS` name of ``text`` (any spelling of :data:`SETUP_KIND_SPELLINGS`, any case).

    Raises:
        ValueError: an unknown kind, naming the kinds.
    """
    try:
        return SETUP_KIND_SPELLINGS[text.strip().lower()]
    except KeyError:
        raise ValueError(f"unknown setup kind {text!r}; choose among tp, dp-ep, dcp, disaggregated") from None


KIND_LABELS = {"TP": "TP", "DP+EP": "DP+EP", "DCP": "DCP", "disaggregated": "P/D"}
"""The short text of each :data:`SETUP_KINDS` kind in Find's tables, the page's and the CLI's (``P/D``:
disaggregated prefill / decode pools; the CSV's ``Setup kind`` and the JSON's ``kind`` spell the id out)."""

TP_REPLICAS_LABEL = "TP+DP"
"""The kind text of a TP row of more than one replica (tensor parallel x data-parallel replicas); one replica:
``TP``."""


def kind_label(setup) -> str:
    """A setup's kind as Find's tables show it: :data:`KIND_LABELS` of its kind, :data:`TP_REPLICAS_LABEL` for a
    TP setup of more than one replica (``data_parallel_size`` > 1)."""
    if setup.kind == "TP" and setup.data_parallel_size > 1:
        return TP_REPLICAS_LABEL
    return KIND_LABELS.get(setup.kind, setup.kind)


CAPPED_NOTE_START = "max users and margin count --max-num-seqs"
"""How :func:`capped_note` begins."""


def capped_note(max_num_seqs: int) -> str:
    """The note of a row whose replica (or rank) its explicit ``--max-num-seqs`` caps below the users its KV cache
    holds: its max users are ``max_num_seqs x replicas`` and its margin ``1 - users per replica / max_num_seqs``
    (:attr:`Setup.max_num_seqs_cap`), since vLLM's scheduler runs at most ``max_num_seqs`` requests a step
    (vllm/v1/core/sched/scheduler.py); QA: 20 users on one H100 with ``--max-num-seqs 32`` read 93% margin, 32 max
    users."""
    return (f"{CAPPED_NOTE_START} {max_num_seqs:,}, below what a replica's KV cache holds: the engine runs at most "
            f"{max_num_seqs:,} requests at once (vllm/v1/core/sched/scheduler.py)")


def margin_of(setup, kv_words: str = "the KV budget") -> str:
    """What a row's margin is a share of, in words: ``the --max-num-seqs 32 cap`` where that cap bounds its users
    (:attr:`Setup.max_num_seqs_cap`), else ``kv_words``."""
    cap = getattr(setup, "max_num_seqs_cap", None)
    return kv_words if cap is None else f"the --max-num-seqs {cap:,} cap"


KV_QUALITY_RANK = {"fp32": 0, "bf16": 0, "fp16": 0, "fp8": 1, "fp8_ds_mla": 1, "int8": 2, "q8_0": 2, "int4": 3,
                   "q4_0": 3}
"""Ties on price prefer the less quantized cache."""


def setup_rank(s: Setup) -> tuple:
    """How Find orders fitting setups: price per hour, then the less quantized cache, fewer GPUs, more KV to spare,
    and the kinds' order (:data:`SETUP_KINDS`)."""
    return (s.price_per_hour, KV_QUALITY_RANK.get(s.kv_cache_dtype, 9), s.num_gpus, -(s.margin or 0.0),
            SETUP_KINDS.index(s.kind))


FIND_KNOB_FIELDS = ("max_num_seqs", "max_num_batched_tokens", *ENGINE_KNOB_FIELDS)
"""The engine knobs a Find search takes (:attr:`FindRequest.engine_knobs`): ``plan``'s ``--max-num-seqs`` and
``--max-num-batched-tokens`` and vLLM's own (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`), each a field of the same
name of :class:`planner.engines.types.EngineRequest` and :class:`planner.budget.PlanRequest`."""


class GPULike(Protocol):
    """The GPU fields the search reads (``model_catalog.gpus.GPU`` has them)."""

    id: str
    name: str
    framework_memory_bytes: int
    bandwidth_gb_s: float
    price_usd_per_hour: float | None
    # Optional (read with getattr): bf16_dense_tflops [TFLOPS] for the time to first token,
    # fp8_native and vendor for the fp8-KV backend note.


@dataclass(frozen=True, kw_only=True)
class FindRequest:
    """What the user wants served. Field names are the CLI flags.

    Attributes:
        users: Concurrent users (sequences) N, >= 1.
        prompt_len, output_len: Fixed lengths [tokens]; ignored when ``workload`` is set.
        workload: A length distribution instead of fixed lengths.
        max_gpus: Most GPUs per setup (all replicas), >= 1.
        tensor_parallel_sizes: TP sizes tried.
        kv_cache_dtypes: KV dtypes tried (``auto`` = model dtype).
        weight_dtype: Weight format (key of ``WEIGHT_DTYPES``).
        max_time_per_output_token_s: Limit on the roofline step time [s], None = none.
        gpu_memory_utilization: Engine memory fraction, in (0, 1].
        block_size: KV page size [tokens].
        overhead_bytes: Per-GPU activation + runtime overhead [bytes]; None = estimate.
        max_preemption_probability: For distributions, the accepted chance that
            N users run out of KV (the demand is sized at the 1 - p quantile).
        num_trials, seed: Monte-Carlo draws for distributions.
        top: Setups returned, >= 1.
        serving: Serving features every setup carries (:mod:`planner.serving`; priced by vLLM's
            rules, their flags written into each launch command); None = none.
        gpu_ids: GPU types searched (catalog ids, ``--gpus``); empty = every GPU given.
        engine: Whose view sizes each setup (a key of :data:`planner.engines.ENGINE_PROFILES`, ``--engine``):
            its loaded weights, profile pass and block rules (:mod:`planner.traffic.find_engine`); None = the
            budget arithmetic of :func:`planner.budget.plan` alone. The page and the CLI pass vLLM unless told.
        alternative_weight_dtype: A weight dtype searched beside ``weight_dtype`` for a hint (``fp8``: the
            cheapest setup with fp8 weights, :attr:`FindResult.weight_alternative`); None = none. Skipped when
            it would not shrink the weights by a quarter.
        setup_kinds: Kinds of setup searched (:data:`SETUP_KINDS`, ``--setup-kinds``); the kinds beside TP are
            searched for MoE and MLA models under vLLM or SGLang only.
        link: The link between the prefill and decode pools of disaggregated setups (an id of
            :data:`planner.scale.links.LINKS`, ``--link``).
        engine_knobs: ``(field, value)`` of the engine knobs set (:data:`FIND_KNOB_FIELDS`; the page's link keys,
            the CLI's ``plan`` flags), passed to every setup's engine request and to the budget arithmetic's
            :class:`planner.budget.PlanRequest`, so a setup is sized as Home and the Engine page size that launch
            (QA: ``enforce_eager=true`` moved Home's and the Engine page's users, not Find's); each launch command
            writes their flags, and with ``max_num_seqs`` set a replica (vLLM: a data-parallel rank) holds at most
            that many users at once (vllm/v1/core/sched/scheduler.py runs ``max_num_seqs`` requests a step).
            vLLM's own knobs (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`) only under a vLLM ``engine`` (or the
            budget arithmetic, the newest vLLM's).
    """

    users: int
    prompt_len: int = 0
    output_len: int = 0
    workload: Workload | None = None
    max_gpus: int = 8
    tensor_parallel_sizes: tuple[int, ...] = DEFAULT_TP_SIZES
    kv_cache_dtypes: tuple[str, ...] = DEFAULT_FIND_KV_DTYPES
    weight_dtype: str = "auto"
    max_time_per_output_token_s: float | None = None
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    block_size: int = DEFAULT_BLOCK_SIZE
    overhead_bytes: int | None = None
    max_preemption_probability: float = 0.05
    num_trials: int = 2000
    seed: int = 0
    top: int = 10
    serving: ServingFeatures | None = None
    gpu_ids: tuple[str, ...] = ()
    engine: str | None = None
    alternative_weight_dtype: str | None = None
    setup_kinds: tuple[str, ...] = SETUP_KINDS
    link: str = DEFAULT_LINK
    engine_knobs: tuple[tuple[str, object], ...] = ()

    def knob(self, name: str):
        """The value of knob ``name`` in :attr:`engine_knobs`, None where it is not set."""
        return dict(self.engine_knobs).get(name)

    def resolved_workload(self) -> Workload:
        """The workload searched: ``workload`` or fixed ``prompt_len + output_len``."""
        if self.workload is not None:
            return self.workload
        return fixed_workload(self.prompt_len, self.output_len)

    def validate(self) -> None:
        """Raise ValueError with an actionable message for any out-of-range field."""
        checks = (
            (self.users >= 1, f"users must be >= 1, got {self.users}"),
            (self.workload is not None or self.prompt_len >= 1,
             f"prompt_len must be >= 1 token, got {self.prompt_len}"),
            (self.output_len >= 0, f"output_len must be >= 0 tokens, got {self.output_len}"),
            (self.max_gpus >= 1, f"max_gpus must be >= 1, got {self.max_gpus}"),
            (bool(self.tensor_parallel_sizes) and all(t >= 1 for t in self.tensor_parallel_sizes),
             f"tensor_parallel_sizes must be >= 1, got {self.tensor_parallel_sizes}"),
            (bool(self.kv_cache_dtypes) and all(d in FIND_KV_DTYPE_CHOICES for d in self.kv_cache_dtypes),
             f"kv_cache_dtypes must be among {', '.join(FIND_KV_DTYPE_CHOICES)} (what vLLM's --kv-cache-dtype "
             f"takes), got {self.kv_cache_dtypes}"),
            (self.weight_dtype in WEIGHT_DTYPES,
             f"unknown weight dtype {self.weight_dtype!r}; choose one of {', '.join(WEIGHT_DTYPES)}"),
            (self.max_time_per_output_token_s is None or self.max_time_per_output_token_s > 0,
             f"max_time_per_output_token_s must be > 0, got {self.max_time_per_output_token_s}"),
            (0 < self.gpu_memory_utilization <= 1,
             f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}"),
            (self.block_size >= 1, f"block_size must be >= 1 token, got {self.block_size}"),
            (self.overhead_bytes is None or self.overhead_bytes >= 0,
             f"overhead must be >= 0 bytes, got {self.overhead_bytes}"),
            (0 <= self.max_preemption_probability < 1,
             f"max_preemption_probability must be in [0, 1), got {self.max_preemption_probability}"),
            (self.num_trials >= 20, f"num_trials must be >= 20, got {self.num_trials}"),
            (self.top >= 1, f"top must be >= 1, got {self.top}"),
            (self.alternative_weight_dtype is None or self.alternative_weight_dtype in WEIGHT_DTYPES,
             f"unknown alternative weight dtype {self.alternative_weight_dtype!r}; choose one of "
             f"{', '.join(WEIGHT_DTYPES)}"),
            (bool(self.setup_kinds) and all(k in SETUP_KINDS for k in self.setup_kinds),
             f"setup_kinds must be among {', '.join(SETUP_KINDS)}, got {self.setup_kinds}"),
            (self.link in {x.id for x in LINKS},
             f"unknown link {self.link!r}; choose one of {', '.join(x.id for x in LINKS)}"),
        )
        for ok, message in checks:
            if not ok:
                raise ValueError(message)
        if self.serving is not None:
            self.serving.validate()
        if self.engine is not None:
            resolve_engine_name(self.engine)  # ValueError naming the engines
        self._validate_knobs()

    def _validate_knobs(self) -> None:
        """:attr:`engine_knobs`: known names, values vLLM takes, vLLM's own only under a vLLM engine."""
        unknown = [name for name, _ in self.engine_knobs if name not in FIND_KNOB_FIELDS]
        if unknown:
            raise ValueError(f"unknown engine knob {unknown[0]!r}; choose among {', '.join(FIND_KNOB_FIELDS)}")
        knobs = PlanRequest(context_len=1, **dict(self.engine_knobs))
        knobs.validate_engine_knobs()
        family = "vllm" if self.engine is None else ENGINE_PROFILES[resolve_engine_name(self.engine)].family
        foreign = knobs.for_engine_family(family)[1]
        if foreign:
            raise ValueError(f"{', '.join(foreign)}: vLLM knobs, which {self.engine} does not take")


@dataclass(frozen=True, kw_only=True)
class Setup:
    """One GPU setup and how it holds the users.

    Attributes:
        gpu_id, gpu_name: Catalog GPU.
        num_gpus: GPUs in the setup, ``tensor_parallel_size x data_parallel_size``.
        tensor_parallel_size: GPUs per replica.
        data_parallel_size: Replicas sharing the users.
        kv_cache_dtype: The KV cache the setup stores: the engine plan's name for it where the chosen engine sizes
            the setup (SGLang keeps DeepSeek-V3.2 under ``auto`` in bf16 on Hopper, in fp8 on Blackwell), else the
            budget's (``auto`` shows as ``bf16``/``fp16``; vLLM's sparse MLA as ``fp8_ds_mla``).
        weight_dtype: Weight format.
        price_per_hour: Catalog price x ``num_gpus`` [USD/h].
        price_per_gpu_hour: Catalog price of one GPU [USD/h].
        users: Users wanted N.
        users_per_replica: ``ceil(N / data_parallel_size)``.
        max_concurrent_sequences: Users the whole setup holds (fixed lengths:
            ``replicas x budget // bytes per sequence``; distributions: Monte-Carlo
            users at the accepted preemption probability).
        kv_cache_budget_bytes_per_gpu: KV budget of one GPU [bytes] (negative when
            weights and overhead do not fit).
        kv_demand_bytes_per_gpu: KV the replica's users need on one GPU [bytes].
        margin: ``1 - demand / budget``, the share of the KV budget left; None
            when the budget is not positive.
        time_per_output_token_s: Roofline decode step at the replica's load [s].
        time_to_first_token_s: Roofline estimate of a new request's first token at that load:
            its prompt's prefill on the replica's GPUs (compute roofline) plus one decode step
            shared with the running requests [s]; None without TFLOPS or bandwidth in the catalog.
        output_tokens_per_s: Output tokens per second the setup produces for the ``users``
            (one token per user per decode step, ``users / time_per_output_token_s``) [tokens/s].
        usd_per_million_output_tokens: ``price_per_hour`` spread over that output [USD / 10^6 tokens].
        max_model_len: ``--max-model-len`` of the launch command [tokens].
        fits: Holds the users within every limit.
        launch_command: ``vllm serve`` command (:mod:`planner.engines.launch`).
        reasons: Why it does not fit.
        notes: Caveats (fp8 without native support, raised ``--max-num-seqs``).
        kind: One of :data:`SETUP_KINDS`. For ``DP+EP`` ``tensor_parallel_size`` is the GPUs of one
            attention data-parallel rank and ``data_parallel_size`` the ranks (each with its own KV pool;
            ``users_per_replica`` is per rank); for ``DCP`` the replicas are copies of one ``-dcp`` launch; for
            ``disaggregated`` the two sizes, ``users_per_replica`` and the KV figures are the decode pool's
            (one rank of one decode replica), and ``num_gpus`` counts both pools.
        expert_parallel_size: GPUs the routed experts are spread over whole (1 = none).
        decode_context_parallel_size: GPUs one request's KV is split over along tokens (1 = none).
        nodes: Nodes one launch spans (GPUs per node: 8).
        kv_bytes_per_sequence_per_gpu: KV of one sequence on one GPU at the mean decode context, as its time per
            output token reads it (split by ``-dcp``) [bytes]; None where the setup has no such figure.
        weights_bytes_per_gpu: The fullest GPU's weights as the engine loads them [bytes]; None for the budget
            arithmetic's TP rows (the rows' own weights are in the budget).
        deploy_commands: For a launch on more than one node or a disaggregated setup: every node's (or each
            role's) launch command, each with a ``# role`` comment line before it (:mod:`planner.scale.deploy`).
        llm_d_values: For those setups under vLLM: the llm-d model-service Helm values (YAML text); else None.
        prefill, decode: A disaggregated setup's pools (:meth:`planner.scale.disagg.Pool.to_dict`), else None.
        kv_cache_dtype_flag: The ``--kv-cache-dtype`` value its launch command passes (``auto``, ``fp8`` ...); ""
            where the setup was not built from one.
        max_num_seqs_cap: The explicit ``max_num_seqs`` (``FindRequest.engine_knobs``) where it, not the KV cache,
            bounds a replica's (rank's) users: ``max_concurrent_sequences`` is ``cap x replicas`` and ``margin``
            ``1 - users_per_replica / cap`` (:func:`capped_note`); None where the KV cache bounds them.

    ``to_dict`` adds ``headroom_users`` and ``kind_label`` (:func:`kind_label`: the kind as Find's tables print it,
    ``TP+DP`` for a TP row of more than one replica; ``kind`` keeps the :data:`SETUP_KINDS` id).

    ``to_dict`` keys are a CLI contract (``python -m planner find``): later fields are added, none renamed.
    """

    gpu_id: str
    gpu_name: str
    num_gpus: int
    tensor_parallel_size: int
    data_parallel_size: int
    kv_cache_dtype: str
    weight_dtype: str
    price_per_hour: float
    price_per_gpu_hour: float
    users: int
    users_per_replica: int
    max_concurrent_sequences: int
    kv_cache_budget_bytes_per_gpu: int
    kv_demand_bytes_per_gpu: int
    margin: float | None
    time_per_output_token_s: float | None
    max_model_len: int
    fits: bool
    launch_command: str
    time_to_first_token_s: float | None = None
    output_tokens_per_s: float | None = None
    usd_per_million_output_tokens: float | None = None
    reasons: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)
    kind: str = "TP"
    expert_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    nodes: int = 1
    weights_bytes_per_gpu: int | None = None
    kv_bytes_per_sequence_per_gpu: int | None = None
    deploy_commands: tuple[str, ...] = field(default_factory=tuple)
    llm_d_values: str | None = None
    prefill: dict | None = field(default=None, hash=False, compare=False)
    decode: dict | None = field(default=None, hash=False, compare=False)
    kv_cache_dtype_flag: str = ""
    max_num_seqs_cap: int | None = None

    @property
    def headroom_users(self) -> int:
        """Users beyond N the setup still holds (negative when short)."""
        return self.max_concurrent_sequences - self.users

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        out = dict(self.__dict__)
        out["headroom_users"] = self.headroom_users
        out["kind_label"] = kind_label(self)
        out["reasons"] = list(self.reasons)
        out["notes"] = list(self.notes)
        out["deploy_commands"] = list(self.deploy_commands)
        return out


@dataclass(frozen=True, kw_only=True)
class FindResult:
    """The search's answer.

    Attributes:
        options: Fitting setups, cheapest first (at most ``top``).
        fits: True when at least one setup fits.
        closest: When nothing fits, the setup covering the largest share of the
            demand (cheapest on ties; a setup within ``max_gpus`` before one beyond it, such as a disaggregated
            setup whose pools were sized past the limit; an explicit ``max_num_seqs`` caps a replica's share);
            None otherwise.
        skipped_gpus: GPU ids left out for lack of a catalog price.
        num_evaluated: Setups evaluated.
        suggestions: What to change when nothing fits.
        notes: Assumptions worth showing.
        weight_alternative: The cheapest setup with :attr:`FindRequest.alternative_weight_dtype` weights when
            it is cheaper than the cheapest answer (or fits where nothing else does); None otherwise.
        engine: The engine whose view sized the setups (resolved id), None for the budget arithmetic.
        nothing_fits_cause: When nothing fits because one limit alone rules out every setup, whatever the memory: that
            limit in a sentence (an explicit ``max_num_seqs`` whose ``ceil(users / cap)`` replicas exceed
            ``max_gpus``: :func:`planner.traffic.find_advice.cap_cause`); "" otherwise.
    """

    options: tuple[Setup, ...]
    fits: bool
    closest: Setup | None
    skipped_gpus: tuple[str, ...]
    num_evaluated: int
    suggestions: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)
    weight_alternative: Setup | None = None
    engine: str | None = None
    nothing_fits_cause: str = ""

    def rows(self) -> list[dict]:
        """The CLI's JSON list: fitting setups, or the closest one (``fits`` false, with ``suggestions`` and
        ``nothing_fits_cause``)."""
        if self.options:
            return [s.to_dict() for s in self.options]
        if self.closest is None:
            return []
        return [{**self.closest.to_dict(), "suggestions": list(self.suggestions),
                 "nothing_fits_cause": self.nothing_fits_cause}]
