"""Inputs and results of an engine-faithful plan (see :mod:`planner.engines`).

Field names are the CLI flags and URL keys with underscores. Sizes are integer
bytes, per GPU unless named otherwise.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields

from planner.engines.expected_error import expected_error_fields
from planner.engines.node_split import nodes_problem
from planner.engines.profiles import DEFAULT_ENGINE, ENGINE_CHOICES, USAGE_CONTEXTS
from planner.engines.vllm_cudagraph import CUDAGRAPH_MODES, OPTIMIZATION_LEVELS
from planner.engines.vllm_moe_dispatch import DataParallelMoE
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.model.fastinit import fast_frozen_init
from planner.serving.features import ServingFeatures
from planner.text import count_noun

EXECUTOR_BACKENDS: tuple[str, ...] = ("mp", "ray")
"""``--distributed-executor-backend`` values the planner models (vllm/config/parallel.py)."""


@fast_frozen_init  # the same constructor, without object.__setattr__ per field (planner/model/fastinit.py)
@dataclass(frozen=True, kw_only=True)
class EngineRequest:
    """The engine, its knobs, and optional measured overrides.

    Attributes:
        engine: A key of :data:`planner.engines.profiles.ENGINE_PROFILES`.
        weight_dtype: Key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.
        kv_cache_dtype: ``auto`` or a KV dtype the engine accepts.
        tensor_parallel_size: GPUs each layer is split over (``--tensor-parallel-size``).
        pipeline_parallel_size: Pipeline stages (layers split), ``--pipeline-parallel-size``.
        data_parallel_size: Independent replicas (each ``tp x pp`` GPUs).
        max_model_len: Longest request [tokens] (llama.cpp: ``n_ctx``); None = the
            model's ``max_position_embeddings`` as the engines default to.
        gpu_memory_utilization: The engine's memory fraction: vLLM
            ``gpu_memory_utilization``, SGLang ``mem_fraction_static``, TensorRT-LLM
            ``free_gpu_memory_fraction``, TGI ``CUDA_MEMORY_FRACTION``; None = default.
        block_size: KV page size [tokens]; None = the engine / backend default.
        max_num_batched_tokens: Tokens in the profile pass (vLLM
            ``max_num_batched_tokens``, SGLang ``chunked_prefill_size``, TGI
            ``max_batch_prefill_tokens``, TensorRT-LLM ``max_num_tokens``); None = default.
        max_num_seqs: Sequences per step (vLLM ``max_num_seqs``, SGLang
            ``max_running_requests``, llama.cpp ``-np`` slots); None = default.
        attention_backend: vLLM backend (``FLASHMLA``, ``CUTLASS_MLA``, ...) or TGI
            ``ATTENTION`` (``flashinfer``, ``flashdecoding``, ``paged``); None = default.
        disable_hybrid_kv_cache_manager: vLLM flag: price sliding layers as full.
        available_kv_memory_bytes: The engine's reported KV memory per GPU (vLLM
            "Available KV cache memory", SGLang K + V size, TensorRT-LLM allocation)
            [bytes]; skips the overhead model.
        weights_bytes: Measured weights per GPU ("Model loading took") [bytes].
        activation_bytes: Measured activation peak per GPU [bytes].
        non_torch_bytes: Measured non-torch memory per GPU [bytes].
        cudagraph_bytes: CUDA-graph memory per GPU [bytes].
        kv_unified: llama.cpp ``--kv-unified``; None = unified only with one slot.
        kv_cache_dtype_v: llama.cpp ``-ctv`` when V is stored in another type than K
            (``kv_cache_dtype`` is ``-ctk``); None = the same as K. Other engines ignore it.
        n_ubatch: llama.cpp ``-ub`` (physical batch) [tokens].
        swa_full: llama.cpp ``--swa-full`` (full-size SWA cache).
        gpu_name: GPU display name; picks vLLM's scheduler defaults (A100 rule),
            MLA backend (Hopper / Blackwell) and MoE kernel layouts
            (:func:`planner.engines.loaded.gpu_capability`).
        gpu_memory_reported_bytes: ``nvidia-smi``'s ``memory.total`` of the GPU [bytes] (the catalog's
            ``memory_reported_mib``), which SGLang reads to pick its default ``mem_fraction_static``;
            None = ``gpu_memory_bytes`` (the framework-visible memory) stands in for it.
        available_kv_memory_per_rank_bytes: The engine's printed available KV memory of
            every worker, in rank order (``rank = stage x tp + tp_rank``, as vLLM numbers
            them), or one per pipeline stage [bytes]; the pool takes the smallest
            (``available_kv_memory_bytes`` is then ignored). Empty = not given.
        usage_context: ``serve`` (``vllm serve``) or ``llm`` (the offline ``LLM`` class):
            vLLM's scheduler defaults differ (:func:`planner.engines.profiles.vllm_scheduler_defaults`).
        enforce_eager: ``--enforce-eager``: no CUDA graphs are captured (their memory is 0).
        cudagraph_mode: vLLM ``cudagraph_mode`` (``FULL_AND_PIECEWISE``, ``PIECEWISE``, ``FULL``,
            ``FULL_DECODE_ONLY``, ``NONE``; ``-cc.cudagraph_mode``); None = the version's default
            (:func:`planner.engines.vllm_cudagraph.resolve_cudagraph_mode`).
        optimization_level: vLLM ``-O`` (0-3: ``--optimization-level`` from v0.12, the compilation
            level before); None = the default (3 / O2), which captures CUDA graphs.
        max_cudagraph_capture_size: vLLM ``--max-cudagraph-capture-size`` (``--cuda-graph-sizes N`` on
            v0.10) [tokens]: the largest batch captured; None = the version's default.
        warm_compile_cache: vLLM's torch.compile cache already holds this model and shape (a relaunch on the
            same machine): the first-compile charge of :func:`planner.engines.vllm_runner.first_compile_bytes`
            is left out. False (the default) plans a first launch.
        use_deep_gemm: vLLM runs its FP8 MoE layers on DeepGEMM: ``VLLM_USE_DEEP_GEMM=1`` (v0.10's default is 0,
            v0.11's 1) with the ``deep_gemm`` package installed, on Hopper or datacenter Blackwell. It changes the
            data-parallel MoE peak of v0.10 / v0.11 (:mod:`planner.engines.vllm_moe_dispatch`). False (the
            default) prices the Triton kernel.
        distributed_executor_backend: ``mp`` (one node, multiprocessing) or ``ray``
            (``--distributed-executor-backend ray``, the way vLLM spans nodes).
        num_nodes: Nodes the ``tp x pp`` GPUs of one replica span (1 = one machine).
        memory_in_use_bytes: Device memory other processes already hold when the engine starts [bytes]
            (a shared GPU): vLLM's fraction still applies to the total but refuses when that is more than is
            free; SGLang's applies to what is free (:mod:`planner.engines.shared_gpu`).
        enable_prefix_caching: vLLM ``--enable-prefix-caching``; on an attention + Mamba hybrid the 2026
            builds keep Mamba states in "align" mode, one more state page per request
            (:func:`planner.engines.vllm_kv_formats.mamba_pages_per_request`).
        serving: LoRA slots, speculative decoding, images, KV offload (:class:`planner.serving.ServingFeatures`,
            priced under this request's engine by :mod:`planner.engines.serving`); None = the bare model,
            every number and JSON key exactly as without it.
        moe_data_parallel: vLLM: this worker's MoE layers gather the tokens of several data-parallel ranks
            (``-dp`` on an MoE model; set by :func:`planner.scale.plan_scale`), so its profile pass holds the
            gathered batch and the DP group's NCCL buffers (:mod:`planner.engines.vllm_moe_dispatch`); None = a
            lone rank. Other engines ignore it.
    """

    engine: str = DEFAULT_ENGINE
    weight_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    block_size: int | None = None
    max_num_batched_tokens: int | None = None
    max_num_seqs: int | None = None
    attention_backend: str | None = None
    disable_hybrid_kv_cache_manager: bool = False
    available_kv_memory_bytes: int | None = None
    weights_bytes: int | None = None
    activation_bytes: int | None = None
    non_torch_bytes: int | None = None
    cudagraph_bytes: int | None = None
    kv_unified: bool | None = None
    kv_cache_dtype_v: str | None = None
    n_ubatch: int = 512
    swa_full: bool = False
    gpu_name: str = ""
    gpu_memory_reported_bytes: int | None = None
    available_kv_memory_per_rank_bytes: tuple[int, ...] = ()
    usage_context: str = "serve"
    enforce_eager: bool = False
    cudagraph_mode: str | None = None
    optimization_level: int | None = None
    max_cudagraph_capture_size: int | None = None
    warm_compile_cache: bool = False
    use_deep_gemm: bool = False
    distributed_executor_backend: str = "mp"
    num_nodes: int = 1
    enable_prefix_caching: bool = False
    memory_in_use_bytes: int = 0
    serving: ServingFeatures | None = None
    moe_data_parallel: DataParallelMoE | None = None

    @property
    def num_gpus(self) -> int:
        """GPUs in all: ``tp x pp x dp``."""
        return self.tensor_parallel_size * self.pipeline_parallel_size * self.data_parallel_size

    def validate_max_model_len(self) -> None:
        """The one check of :meth:`validate` on ``max_model_len``: unset or >= 1 [tokens].

        :func:`planner.engines.plan_engine` runs only this when a request with the same other
        fields has already passed :meth:`validate`.

        Raises:
            ValueError: ``max_model_len`` below 1.
        """
        value = self.max_model_len
        if value is not None and value < 1:
            raise ValueError(f"max_model_len must be at least 1 (or unset for the engine default), got {value}")

    def validate(self) -> None:
        """Raise ValueError with an actionable message for any out-of-range field."""
        values = self.__dict__  # the fields by name (a dict lookup is cheaper than getattr on a hot path)
        positive = ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "n_ubatch", "num_nodes")
        for name in positive:
            value = values[name]
            if value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        for name in ("max_model_len", "block_size", "max_num_batched_tokens", "max_num_seqs",
                     "max_cudagraph_capture_size"):
            value = values[name]
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1 (or unset for the engine default), got {value}")
        for name in ("available_kv_memory_bytes", "weights_bytes", "activation_bytes", "non_torch_bytes",
                     "cudagraph_bytes", "memory_in_use_bytes", "gpu_memory_reported_bytes"):
            value = values[name]
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 bytes, got {value}")
        if self.gpu_memory_utilization is not None and not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {self.gpu_memory_utilization}")
        if self.available_kv_memory_per_rank_bytes and min(self.available_kv_memory_per_rank_bytes) < 0:
            raise ValueError(f"available KV memory per rank must be >= 0 bytes, got "
                             f"{list(self.available_kv_memory_per_rank_bytes)}")
        ranks = self.tensor_parallel_size * self.pipeline_parallel_size
        if self.available_kv_memory_per_rank_bytes and len(self.available_kv_memory_per_rank_bytes) not in (
                ranks, self.pipeline_parallel_size, 1):
            raise ValueError(f"{len(self.available_kv_memory_per_rank_bytes)} available-KV values for {ranks} "
                             f"workers (tp {self.tensor_parallel_size} x pp {self.pipeline_parallel_size}); give one "
                             f"per worker ({ranks}), one per pipeline stage ({self.pipeline_parallel_size}) or one")
        if self.usage_context not in USAGE_CONTEXTS:
            raise ValueError(f"unknown usage context {self.usage_context!r}; choose one of {', '.join(USAGE_CONTEXTS)}")
        if self.distributed_executor_backend not in EXECUTOR_BACKENDS:
            raise ValueError(f"unknown distributed executor backend {self.distributed_executor_backend!r}; choose "
                             f"one of {', '.join(EXECUTOR_BACKENDS)}")
        if said := nodes_problem(self.engine, ranks, self.num_nodes):  # more nodes than GPUs, or uneven for vLLM
            raise ValueError(said)
        if self.num_nodes > 1 and self.distributed_executor_backend != "ray":
            raise ValueError(f"{self.num_nodes} nodes need --distributed-executor-backend ray (vLLM's multiprocessing "
                             "executor runs on one node)")
        if self.engine not in ENGINE_CHOICES:
            raise ValueError(f"unknown engine {self.engine!r}; choose one of {', '.join(ENGINE_CHOICES)}")
        if self.weight_dtype not in WEIGHT_DTYPES:
            raise ValueError(f"unknown weight dtype {self.weight_dtype!r}; choose one of {', '.join(WEIGHT_DTYPES)}")
        if self.kv_cache_dtype_v is not None and self.kv_cache_dtype_v not in KV_CACHE_DTYPE_CHOICES:
            raise ValueError(f"unknown V-cache dtype {self.kv_cache_dtype_v!r}; "
                             f"choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}")
        if self.kv_cache_dtype not in KV_CACHE_DTYPE_CHOICES:
            raise ValueError(f"unknown KV-cache dtype {self.kv_cache_dtype!r}; "
                             f"choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}")
        if self.cudagraph_mode is not None and self.cudagraph_mode not in CUDAGRAPH_MODES:
            raise ValueError(f"unknown cudagraph_mode {self.cudagraph_mode!r}; choose one of {', '.join(CUDAGRAPH_MODES)}")
        if self.optimization_level is not None and self.optimization_level not in OPTIMIZATION_LEVELS:
            raise ValueError(f"optimization level -O{self.optimization_level} does not exist; choose 0, 1, 2 or 3")
        if self.serving is not None:
            self.serving.validate()


@dataclass(frozen=True, kw_only=True)
class RankBudget:
    """One GPU of one pipeline stage (every tensor-parallel GPU of a stage is alike).

    Attributes:
        stage: Pipeline stage index.
        role: Which tensor-parallel GPUs of the stage this row stands for: ``all`` (every one
            alike), or vLLM V0's ``driver`` (rank 0, which samples) and ``others``.
        first_layer, num_layers: Decoder layers this stage holds.
        memory_base_bytes: What the engine's fraction multiplies [bytes].
        requested_bytes: The engine's share of it (weights + KV + overheads) [bytes].
        weights_bytes: Weights on this GPU [bytes].
        activation_bytes: Activation peak [bytes] (``forward`` / ``sampler`` parts below).
        forward_activation_bytes, sampler_bytes: Parts of the activation model [bytes].
        non_torch_bytes: Non-torch memory [bytes].
        cudagraph_bytes: CUDA-graph memory [bytes] (deducted only where the engine does).
        available_kv_cache_bytes: KV memory of this GPU [bytes].
        kv_cache_bytes_per_token: KV bytes per token on this GPU, windows not applied [bytes].
        kv_cache_bytes_per_token_dtype: The cache ``kv_cache_bytes_per_token`` is in, where the engine names it
            (vLLM: the requested cache as stored, ``bf16`` for DeepSeek-V4 under ``auto`` beside its ``fp8_ds_mla``
            pool blocks, :mod:`planner.engines.vllm_deepseek_v4`); "" = the plan's ``kv_cache_dtype``.
        bytes_per_block: One block of the pool on this GPU [bytes] (cell size for page 1).
        num_blocks: Blocks this GPU alone could hold.
        overridden: Names of terms the user supplied.
        serving_parts: What the serving features put on this GPU, as ``(label, term, bytes)``: ``term``
            is the budget term the part is counted in (``weights``, ``activation``, ``kv``) or ``outside``
            (SGLang's draft worker, llama.cpp's draft model: beside the pool); empty without features.
        state_pool_bytes: An engine's separate recurrent-state pool beside the KV cache (SGLang's Mamba
            pool, :func:`planner.engines.sglang.mamba_pool`) [bytes]; 0 where the states share the KV pool.
        runner_state_bytes: Buffers the model runner keeps from before the profile pass, counted in
            ``activation_bytes`` (vLLM's Model Runner V2: :func:`planner.engines.vllm_runner.v2_state_bytes`)
            [bytes]; 0 where none is modelled.
        first_compile_bytes: What a first launch's torch.compile adds to the profile pass, counted in
            ``activation_bytes`` (:func:`planner.engines.vllm_runner.first_compile_bytes`) [bytes]; 0 where it
            is not charged.
        cudagraph_charged: True when ``cudagraph_bytes`` is taken from the KV budget before it is sized
            (:func:`planner.engines.vllm_runner.graphs_charged`).
    """

    stage: int
    first_layer: int
    num_layers: int
    memory_base_bytes: int
    requested_bytes: int
    weights_bytes: int
    activation_bytes: int
    forward_activation_bytes: int
    sampler_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    available_kv_cache_bytes: int
    kv_cache_bytes_per_token: int
    bytes_per_block: int
    num_blocks: int
    overridden: tuple[str, ...] = ()
    role: str = "all"
    serving_parts: tuple[tuple[str, str, int], ...] = ()
    state_pool_bytes: int = 0
    runner_state_bytes: int = 0
    cudagraph_charged: bool = False
    first_compile_bytes: int = 0
    kv_cache_bytes_per_token_dtype: str = ""

    def segments(self, gpu_memory_bytes: int) -> tuple[tuple[str, int], ...]:
        """This GPU's memory as the engine divides it, for a stacked bar [bytes each].

        ``(weights, activation peak, non-torch, CUDA graphs, KV cache, rest)`` where
        ``rest = gpu_memory_bytes - the five terms`` (the share the engine leaves unused,
        ``1 - gpu_memory_utilization`` for vLLM, plus block rounding), 0 when the terms
        exceed the card; ``overflow`` is then that excess (an engine that would not start).

        Args:
            gpu_memory_bytes: Framework-visible memory of the GPU [bytes].
        """
        used = (("Weights", self.weights_bytes), ("Activation peak", self.activation_bytes),
                ("Non-torch", self.non_torch_bytes), ("CUDA graphs", self.cudagraph_bytes),
                ("KV cache", max(self.available_kv_cache_bytes, 0)))  # a refusal's negative pool is no segment
        if self.serving_parts:
            used = self._with_serving_parts(used)
        if self.state_pool_bytes:
            used = (*used, ("Mamba state pool", self.state_pool_bytes))
        rest = gpu_memory_bytes - sum(size for _, size in used)
        return (*used, ("Not allocated", max(rest, 0)), ("Over the card", max(-rest, 0)))

    def _with_serving_parts(self, used: tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
        """``used`` with each serving part carved out of the term it is counted in (placed after that
        term), and the ``outside`` parts added after the KV cache; every part keeps its place at 0 B so
        each rank of a plan has the same segments."""
        term_of = {"Weights": "weights", "Activation peak": "activation", "KV cache": "kv"}
        out: list[tuple[str, int]] = []
        for name, size in used:
            term = term_of.get(name)
            mine = [(label, part) for label, where, part in self.serving_parts if where == term]
            out.append((name, max(size - sum(part for _, part in mine), 0)))
            out += mine
            if term == "kv":
                out += [(label, part) for label, where, part in self.serving_parts if where == "outside"]
        return tuple(out)


def stopped_before_load(values: dict) -> dict:
    """The fields of an :class:`EnginePlan` (field dict ``values``) whose engine stops before loading weights: no
    blocks, tokens, concurrency, accepted length or print (the per-rank arithmetic stays). Refusals that stop there:
    heads TP cannot split (:mod:`~.dispatch`), a shared GPU short of memory (:mod:`~.shared_gpu` note 1), no
    DeepSeek-V4 kernel (:mod:`~.vllm_deepseek_v4`), no ROCm sparse MLA for the dtype (:mod:`~.vllm_kv_formats`)."""
    return {"stopped_at_config_check": True, "engine_log_lines": (), "num_gpu_blocks": 0, "engine_kv_cache_tokens": 0,
            "max_concurrency": 0.0, "max_concurrency_all_replicas": 0.0, "engine_max_model_len": 0,
            "max_concurrency_decoding": None if values.get("max_concurrency_decoding") is None else 0.0,
            "requests_held_ratio": None if values.get("requests_held_ratio") is None else (0, 1)}


PREFILL_PEAK_REASON = ("users are the requests its pool holds while they decode, beside one prefill chunk: for "
                       "windowed models more than its printed concurrency, which counts each request at its prefill "
                       "peak")
"""Why vLLM V1 runs more requests than its "Maximum concurrency" print says, in the words every page uses (Find's
engine note, :mod:`planner.traffic.reverse`; a fix's text, :mod:`planner.fixes`): the print divides the pool by
each request's blocks at its prefill peak (a windowed layer's window plus a whole batched chunk), while the
scheduler frees the blocks a window has left behind before each step (:mod:`planner.engines.pages` design note 6;
vllm/v1/core/kv_cache_utils.py ``get_max_concurrency_for_kv_cache_config``,
vllm/v1/core/single_type_kv_cache_manager.py ``remove_skipped_blocks``)."""


@dataclass(frozen=True, kw_only=True)
class EnginePlan:
    """What the engine would allocate and print. Per GPU unless named.

    ``starts`` False with ``reasons`` when the engine would refuse to start;
    that is a normal result, not an error. JSON keys (``to_dict``) are part of
    the CLI contract: ``engine``, ``available_kv_cache_bytes``, ``num_gpu_blocks``,
    ``engine_kv_cache_tokens``, ``max_concurrency``, ``engine_max_model_len`` and
    ``launch_command`` are merged into ``python -m planner plan --format json``.

    Attributes:
        engine, engine_label, family: The profile used.
        engine_version: The releases that profile models (``vLLM v0.29+ (2026)``).
        model_id, gpu_memory_bytes: Echoed inputs.
        tensor_parallel_size, pipeline_parallel_size, data_parallel_size, num_gpus: Layout.
        weight_dtype, kv_cache_dtype: Resolved dtype names.
        gpu_memory_utilization: Resolved memory fraction (None when the engine has none).
        block_size: Block size of the first KV group [tokens].
        max_model_len, max_num_batched_tokens, max_num_seqs: Resolved knobs.
        ranks: One :class:`RankBudget` per pipeline stage.
        available_kv_cache_bytes: Minimum over GPUs [bytes].
        available_kv_from_log: True when the user supplied it.
        num_gpu_blocks: Blocks after the minimum over GPUs (cells for llama.cpp,
            tokens for SGLang's page 1).
        num_kv_groups, group_size: vLLM hybrid-allocator layout.
        blocks_per_request: Blocks one ``max_model_len`` request needs.
        engine_kv_cache_tokens: Token capacity as the engine prints it.
        max_concurrency: Requests of ``max_model_len`` per replica, 2 decimals as vLLM prints.
        max_concurrency_all_replicas: Times ``data_parallel_size``.
        max_concurrency_decoding: Requests of ``max_model_len`` per replica the pool holds once each is
            decoding (vLLM V1's allocator frees what a sliding window has left behind:
            :func:`planner.engines.pages.decoding_ratio`), 2 decimals; None for the engines and
            releases whose print counts no prefill peak (then not in the JSON).
        requests_held_ratio: ``(blocks, blocks per request)`` behind :attr:`requests_held` where vLLM V1 sets
            :attr:`max_concurrency_decoding`, so whole requests are floored from the exact ratio, not from the
            2-decimal print (13,055 / 256 = 50.996 holds 50, printed 51.00); None elsewhere; not in the JSON.
        engine_max_model_len: Largest ``max_model_len`` the engine accepts here [tokens].
        kv_cache_bytes_needed_per_request: KV of one ``max_model_len`` request on one GPU [bytes].
        starts: False when the engine would refuse to start.
        reasons, warnings, notes: Messages.
        engine_log_lines: The startup lines the engine would print.
        overhead_formula: The overhead model's arithmetic.
        launch_command: A ready-to-run command for this plan.
        stopped_at_config_check: True when the engine stops before loading weights (:func:`stopped_before_load`:
            heads the tensor-parallel size cannot split, a shared GPU, no kernel): the printed figures are then 0.
        serving: What the request's serving features cost under this engine
            (:func:`planner.engines.serving.with_serving`), None without features (then not in the JSON).
        known_misses: Kinds of launch the cold-start bench measured but could not count
            (:data:`planner.engines.expected_error.KNOWN_MISSES`): their miss widens the expected error.
            Empty for every other plan (the JSON key is then absent).
    """

    engine: str
    engine_label: str
    engine_version: str
    family: str
    model_id: str
    gpu_memory_bytes: int
    tensor_parallel_size: int
    pipeline_parallel_size: int
    data_parallel_size: int
    num_gpus: int
    weight_dtype: str
    kv_cache_dtype: str
    gpu_memory_utilization: float | None
    block_size: int
    max_model_len: int
    max_num_batched_tokens: int
    max_num_seqs: int
    ranks: tuple[RankBudget, ...]
    available_kv_cache_bytes: int
    available_kv_from_log: bool
    num_gpu_blocks: int
    num_kv_groups: int
    group_size: int
    blocks_per_request: int
    engine_kv_cache_tokens: int
    max_concurrency: float
    max_concurrency_all_replicas: float
    engine_max_model_len: int
    kv_cache_bytes_needed_per_request: int
    starts: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)
    warnings: tuple[str, ...] = field(default_factory=tuple)
    notes: tuple[str, ...] = field(default_factory=tuple)
    engine_log_lines: tuple[str, ...] = field(default_factory=tuple)
    overhead_formula: str = ""
    launch_command: str = ""
    stopped_at_config_check: bool = False
    serving: dict | None = None
    known_misses: tuple[str, ...] = ()
    max_concurrency_decoding: float | None = None
    requests_held_ratio: tuple[int, int] | None = None

    @property
    def decodes_more_than_printed(self) -> bool:
        """True when :attr:`max_concurrency_decoding` is set and differs from the printed concurrency (sliding-
        window or local-attention layers; design note 6 of :mod:`planner.engines.pages`)."""
        held = self.max_concurrency_decoding
        return held is not None and held != self.max_concurrency

    @property
    def concurrency_printed(self) -> bool:
        """True when the engine prints its concurrency ("Maximum concurrency for N tokens per request", vLLM's
        vllm/v1/core/kv_cache_utils.py); SGLang, TensorRT-LLM, TGI and llama.cpp print none, so their
        ``max_concurrency`` is the planner's tokens / ``max_model_len``."""
        return any(line.startswith("Maximum concurrency") for line in self.engine_log_lines)

    @property
    def requests_held(self) -> float:
        """Requests of ``max_model_len`` one replica's pool holds while they run: vLLM V1's decoding
        concurrency from its exact :attr:`requests_held_ratio` (the 2-decimal print can round 50.996 up to 51),
        else the printed capacity over the length (llama.cpp: the longest n_ctx it accepts, which its slots
        share), which every other engine admits by."""
        if self.requests_held_ratio is not None:
            blocks, per_request = self.requests_held_ratio
            return blocks / per_request
        held = self.engine_max_model_len if self.family == "llama.cpp" else self.engine_kv_cache_tokens
        return held / self.max_model_len if self.max_model_len else 0.0

    @property
    def scheduler_cap_note(self) -> str:
        """The sentence saying the scheduler runs fewer requests at once than the pool holds, or "" when it
        does not: a step schedules at most ``max_num_seqs`` sequences (vLLM: vllm/v1/core/sched/scheduler.py,
        ``len(self.running) == self.max_num_running_reqs``; SGLang: ``max_running_requests``, python/sglang/srt/
        managers/scheduler.py; TensorRT-LLM ``max_batch_size``; TGI ``max_concurrent_requests``; llama.cpp
        ``-np`` slots). transformers' count is its batch, so it has none."""
        flag = _SEQUENCE_LIMIT_FLAGS.get(self.family)
        if flag is None or not self.starts or self.requests_held <= self.max_num_seqs:
            return ""
        return (f"{self.engine} runs at most {count_noun(self.max_num_seqs, 'sequence')} at once ({flag}); the pool "
                f"holds {int(self.requests_held):,} requests of {self.max_model_len:,} tokens "
                f"({self.requests_held:,.2f}x): raise {flag} to serve them all")

    @property
    def requests_at_prefill_peak(self) -> int:
        """Whole requests of ``max_model_len`` the pool holds with each at its prefill peak (what vLLM's printed
        concurrency counts), floored from the exact ratio where :attr:`requests_held_ratio` is set (the print
        style ``blocks_per_request``: blocks over blocks per request), else from the printed figure."""
        if self.requests_held_ratio is not None and self.blocks_per_request > 0:
            return self.num_gpu_blocks // self.blocks_per_request
        return int(self.max_concurrency)

    @property
    def decoding_note(self) -> str:
        """The sentence that sets :attr:`max_concurrency_decoding` beside the printed concurrency, or "" when
        they agree (:attr:`decodes_more_than_printed`)."""
        if not self.decodes_more_than_printed:
            return ""
        return (f"{int(self.max_concurrency_decoding):,} requests of {self.max_model_len:,} tokens decode at once "
                f"({self.max_concurrency_decoding:,.2f}x) beside one prefill chunk; the printed "
                f"{self.max_concurrency:,.2f}x counts each request at its prefill peak (its window plus "
                f"{self.max_num_batched_tokens:,} batched tokens, at most the whole length, in every sliding-window or "
                "local-attention cache), and the scheduler frees the blocks a window has left behind before each step")

    @property
    def limiting_rank(self) -> RankBudget:
        """The GPU with the fewest blocks (the engine equalises to it)."""
        return min(self.ranks, key=lambda r: r.num_blocks)

    def to_dict(self) -> dict:
        """Plain dict for JSON output (tuples become lists)."""
        out = asdict(self)
        out["ranks"] = [asdict(r) | {"overridden": list(r.overridden)} for r in self.ranks]
        for key in ("reasons", "warnings", "notes", "engine_log_lines"):
            out[key] = list(out[key])
        for rank in out["ranks"]:
            for key in ("state_pool_bytes", "runner_state_bytes", "cudagraph_charged", "first_compile_bytes"):
                if not rank[key]:  # only the plans that have the term add the key
                    del rank[key]
        if self.max_concurrency_decoding is None:  # only the vLLM V1 plans that print a prefill peak
            del out["max_concurrency_decoding"]
        del out["requests_held_ratio"]  # the exact form of requests_held; the JSON keeps the printed figures
        if not self.known_misses:  # only plans of a kind the bench could not count add the key
            del out["known_misses"]
        else:
            out["known_misses"] = list(self.known_misses)
        if self.serving is None:  # the JSON without features stays what it was
            del out["serving"]
            for rank in out["ranks"]:
                del rank["serving_parts"]
        else:
            for rank in out["ranks"]:
                rank["serving_parts"] = [list(p) for p in rank["serving_parts"]]
        out.update(expected_error_fields(self))  # how sure the available-KV figure is (issue 25)
        return out

    def cli_keys(self) -> dict:
        """The keys ``python -m planner plan`` adds to its JSON."""
        return {
            "engine": self.engine,
            "available_kv_cache_bytes": self.available_kv_cache_bytes,
            "num_gpu_blocks": self.num_gpu_blocks,
            "engine_kv_cache_tokens": self.engine_kv_cache_tokens,
            "max_concurrency": self.max_concurrency,
            "engine_max_model_len": self.engine_max_model_len,
            "launch_command": self.launch_command,
        }

    @classmethod
    def _from_parts(cls, *parts: dict) -> EnginePlan:
        """``EnginePlan(**merged)`` for the union of ``parts`` (a later part overrides an earlier one), built
        without the generated ``__init__``; the same object.

        A frozen dataclass's ``__init__`` sets each field through ``object.__setattr__``
        (about 0.1 us a field, 4 to 5 us for these 36, a third of a warm vLLM plan); this fills
        the new instance's ``__dict__`` directly, and the instance is frozen as usual.
        The parts must name every field and nothing else (checked by count, which a
        missing field with an extra name would pass: the tests compare the result with
        ``EnginePlan(**merged)``).

        Raises:
            TypeError: the merged parts do not have one value per field.
        """
        values: dict = {}
        for part in parts:
            values.update(part)
        return cls._from_dict(values)

    @classmethod
    def _from_dict(cls, values: dict) -> EnginePlan:
        """:meth:`_from_parts` of one dict, which becomes the new instance's ``__dict__`` (the caller hands
        it over and no longer touches it): one dict, no per-field ``object.__setattr__``.

        Raises:
            TypeError: ``values`` does not have one value per field.
        """
        for name, default in _PLANNER_DEFAULTS:  # fields the planners leave out: set after them, when at all
            if name not in values:
                values[name] = default
        if len(values) != _ENGINE_PLAN_FIELD_COUNT:
            missing = sorted(set(cls.__dataclass_fields__) - set(values))
            extra = sorted(set(values) - set(cls.__dataclass_fields__))
            raise TypeError(f"EnginePlan._from_parts: missing fields {missing}, unknown names {extra}")
        result = object.__new__(cls)
        object.__setattr__(result, "__dict__", values)
        return result


_ENGINE_PLAN_FIELD_COUNT = len(fields(EnginePlan))

def stores_another_cache(engine_kv_cache_dtype: str, budget_kv_cache_dtype: str | None) -> bool:
    """True when an engine stores its KV cache in another format than the budget prices (vLLM's ``fp8_ds_mla``
    against another engine's bf16, say): both resolved names, ``auto`` never; bf16 and fp16 are the same size."""
    if budget_kv_cache_dtype in (None, "auto", engine_kv_cache_dtype) or engine_kv_cache_dtype == "auto":
        return False
    return {engine_kv_cache_dtype, budget_kv_cache_dtype} != {"bf16", "fp16"}


_SEQUENCE_LIMIT_FLAGS = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests", "trtllm": "--max_batch_size",
                         "tgi": "--max-concurrent-requests", "llama.cpp": "-np"}
"""The launch flag of each engine family's limit on the sequences one step runs (:mod:`planner.engines.launch`)."""

_PLANNER_DEFAULTS = (("serving", None), ("known_misses", ()), ("max_concurrency_decoding", None),
                     ("requests_held_ratio", None))
"""Fields an engine planner may leave out (the serving block and the bench's known misses come after it,
:func:`planner.engines.dispatch.plan_engine`; only vLLM V1 fills the decoding concurrency), with their defaults."""
