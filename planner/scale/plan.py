"""A launch at scale: one attention-DP rank planned by its engine, then multiplied out.

:func:`plan_scale` places the model (:func:`planner.scale.layout.rank_layout`), prices the fullest
GPU's weights (:func:`planner.scale.weights.rank_weight_bytes`), plans one attention data-parallel
rank with the engine's own chain (:func:`planner.engines.plan_engine` with the rank's tensor-parallel
size and those weights pinned), applies decode context parallel (:mod:`planner.scale.context`) and
multiplies the users: every rank has its own KV pool and scheduler, so the launch serves
``max_concurrency x attention_dp`` requests of ``max_model_len``.

Design notes:
    1. Per GPU, within one rank: weights (module :mod:`planner.scale.weights`), the engine's
       activation, non-torch and CUDA-graph terms for a ``attention_tp``-GPU rank, and the KV pool
       with ``kv_heads / attention_tp`` heads (at least 1) or the whole MLA latent per GPU. Under
       vLLM with ``-dp`` > 1 on an MoE model the rank's MoE layers gather every rank's tokens, so
       its profile pass also holds that batch, the expert kernel's workspace for it and the DP
       group's NCCL buffers (:attr:`EngineRequest.moe_data_parallel`, priced per version by
       :mod:`planner.engines.vllm_moe_dispatch`; :attr:`ScalePlan.moe_dispatch`). The buffers of the
       non-default DeepEP / pplx backends (``--all2all-backend``) are not priced.
    2. A printed available memory (``--available-kv-memory-gib``) pins the pool as usual: the KV
       arithmetic is then exact whatever the weights. The placement's weights reach the engine plan as a
       pinned figure but are not a measurement: the ranks' ``overridden`` (what a log supplied) leaves them
       out.
    3. Pipeline parallel together with data / expert parallel is refused (not modelled).

Sources: :mod:`planner.scale.layout` (placement and the engine files it follows).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines import plan_engine
from planner.engines.profiles import engine_profile
from planner.engines.types import EnginePlan, EngineRequest
from planner.engines.launch import without_node_flags
from planner.engines.vllm_kv_formats import MLA_REPLICATED_NOTE
from planner.engines.vllm_moe_dispatch import DataParallelMoE, MoeDispatchPeak, moe_dispatch_peak
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes
from planner.scale.context import ContextParallelResult, apply_dcp
from planner.scale.layout import PIPELINE_NOT_MODELLED, RankLayout, ScaleRequest, rank_layout
from planner.scale.weights import RankWeights, rank_weight_bytes
from planner.text import count_noun


@dataclass(frozen=True, kw_only=True)
class ScalePlan:
    """One launch: its layout, the fullest GPU's weights, one rank's engine plan, and the totals.

    Attributes:
        request: The data / expert / context parallel flags.
        layout: Where each part of the model lives.
        weights: The fullest GPU's weights [bytes].
        engine: One attention-DP rank as its engine plans it (``tensor_parallel_size`` = the rank's
            attention TP; per GPU).
        context: The decode-context-parallel figures, or None without ``-dcp``.
        engine_kv_cache_tokens: Tokens one rank's pool holds, as printed [tokens].
        max_concurrency_per_rank: Requests of ``max_model_len`` one rank holds (2 decimals).
        max_concurrency: All ranks together (``per rank x attention_dp``).
        engine_max_model_len: Longest ``max_model_len`` accepted [tokens].
        starts: False when the engine would refuse to start.
        reasons: Why not.
        launch_command: The command that starts it (one node's command for multi-node vLLM DP).
        notes: Assumptions worth reading beside the numbers.
        moe_dispatch: What the rank's MoE layers hold for every DP rank's tokens in the profile pass, as the
            engine plan charged it (vLLM ``-dp`` on an MoE model), or None.
    """

    request: ScaleRequest
    layout: RankLayout
    weights: RankWeights
    engine: EnginePlan
    context: ContextParallelResult | None
    engine_kv_cache_tokens: int
    max_concurrency_per_rank: float
    max_concurrency: float
    engine_max_model_len: int
    starts: bool
    reasons: tuple[str, ...]
    launch_command: str
    notes: tuple[str, ...]
    moe_dispatch: MoeDispatchPeak | None = None

    @property
    def requests_held_per_rank(self) -> float:
        """Requests of ``max_model_len`` one rank's pool holds while they run: the engine plan's
        :attr:`~planner.engines.types.EnginePlan.requests_held`, or, under ``-dcp``, the printed tokens over that
        length."""
        if self.context is None:
            return self.engine.requests_held
        length = self.engine.max_model_len
        return self.engine_kv_cache_tokens / length if length else 0.0

    @property
    def decodes_more_than_printed(self) -> bool:
        """True when :attr:`requests_held_per_rank` is vLLM's decoding concurrency and exceeds its printed one
        (sliding-window layers: :attr:`planner.engines.types.EnginePlan.decoding_note`)."""
        return self.context is None and self.engine.decodes_more_than_printed

    @property
    def requests_per_rank(self) -> int:
        """Whole requests of ``max_model_len`` one rank's pool holds at once: ``floor(requests_held_per_rank)``
        (0 when it would not start)."""
        return int(self.requests_held_per_rank) if self.starts else 0

    @property
    def requests_all_ranks(self) -> int:
        """Whole requests of ``max_model_len`` all ranks hold at once: :attr:`requests_per_rank` x the ranks (each
        rank's scheduler admits whole requests; ``max_concurrency`` is vLLM's printed ratio, a fraction)."""
        return self.requests_per_rank * self.layout.attention_dp

    def engine_view(self) -> EnginePlan:
        """:attr:`engine` with the launch's own figures: the printed tokens and concurrency of one rank under
        ``-dcp`` (and the requests that decode at once, each keeping its shard), all ranks' concurrency, the start
        verdict and the launch command (what ``plan`` prints)."""
        lines, engine = self.engine.engine_log_lines, self.engine
        if self.context is not None:
            lines = tuple(x for x in lines if not x.startswith(("GPU KV cache size", "Maximum concurrency")))
            lines += self.context.engine_log_lines
            engine = replace(engine, max_concurrency_decoding=self.context.max_concurrency_decoding,
                             requests_held_ratio=None)  # requests_held_per_rank reads the printed tokens
        return replace(engine, engine_kv_cache_tokens=self.engine_kv_cache_tokens,
                       max_concurrency=self.max_concurrency_per_rank, max_concurrency_all_replicas=self.max_concurrency,
                       engine_max_model_len=self.engine_max_model_len, starts=self.starts, reasons=self.reasons,
                       engine_log_lines=lines, launch_command=self.launch_command)

    def to_dict(self) -> dict:
        """The ``scale`` JSON block."""
        rank = self.engine.limiting_rank
        return {
            "layout": self.layout.to_dict(),
            "weights": self.weights.to_dict(),
            "weights_bytes_per_gpu": rank.weights_bytes,
            "available_kv_cache_bytes": self.engine.available_kv_cache_bytes,
            "kv_cache_bytes_per_token_per_gpu": rank.kv_cache_bytes_per_token,
            "num_gpu_blocks": self.engine.num_gpu_blocks,
            "engine_kv_cache_tokens": self.engine_kv_cache_tokens,
            "max_concurrency_per_rank": self.max_concurrency_per_rank,
            "max_concurrency": self.max_concurrency,
            "requests_held_per_rank": round(self.requests_held_per_rank, 2),
            "requests_per_rank": self.requests_per_rank,
            "requests_all_ranks": self.requests_all_ranks,
            "engine_max_model_len": self.engine_max_model_len,
            "max_model_len": self.engine.max_model_len,
            "starts": self.starts,
            "reasons": list(self.reasons),
            "decode_context_parallel": None if self.context is None else self.context.to_dict(),
            "launch_command": self.launch_command,
            "notes": list(self.notes),
            "moe_dispatch": None if self.moe_dispatch is None else self.moe_dispatch.to_dict(),
        }


def dcp_kv_heads(model: ModelSpec) -> int:
    """KV heads one token keeps per layer for the DCP range: 1 for MLA's latent."""
    return 1 if model.attention_kind == "MLA" else max(1, model.num_key_value_heads)


_kv_heads = dcp_kv_heads
"""The former name (planner/scale/transfer.py imports it)."""


def _weights_as_plain_tp(model: ModelSpec, layout: RankLayout) -> bool:
    """True when every weight is split as plain tensor parallel over ``attention_tp`` (the engine's own figure
    then stands: dense models, and MoE without expert parallel on one rank)."""
    same_dense = layout.dense_tp == layout.attention_tp
    experts_plain = (not model.num_experts or (layout.expert_parallel_size == 1
                                               and layout.expert_tp == layout.attention_tp))
    return same_dense and experts_plain


def moe_data_parallel_of(model: ModelSpec, layout: RankLayout) -> DataParallelMoE | None:
    """What vLLM's MoE layers gather under this layout (design note 1), or None (one rank, a dense model,
    SGLang). The engine view's rank request and the budget of one rank (:func:`planner.rank_budget.rank_plan`) both
    take it, so both charge the same profile peak."""
    if layout.family != "vllm" or layout.attention_dp < 2 or not model.num_experts:
        return None
    return DataParallelMoE(data_parallel_size=layout.attention_dp, expert_tp=layout.expert_tp, nodes=layout.nodes,
                           local_experts=layout.local_experts)


def _dispatch(model: ModelSpec, rank_request: EngineRequest, engine: EnginePlan) -> MoeDispatchPeak | None:
    """The data-parallel MoE peak the rank's engine plan charged (design note 1), or None."""
    if rank_request.moe_data_parallel is None:
        return None
    e = cache_dtypes(model, rank_request.weight_dtype, rank_request.kv_cache_dtype).state.bytes_for(1)
    return moe_dispatch_peak(model, rank_request.moe_data_parallel, engine.engine,
                             num_tokens=engine.max_num_batched_tokens, activation_bytes=e,
                             weight_dtype_name=rank_request.weight_dtype, gpu_name=rank_request.gpu_name,
                             deep_gemm=rank_request.use_deep_gemm)


def scale_launch_flags(request: ScaleRequest, layout: RankLayout) -> list[str]:
    """The flags a launch command needs beyond tensor / data parallel (engine's own names)."""
    flags: list[str] = []
    if layout.family == "vllm":
        if layout.data_parallel_size_local and layout.nodes > 1:
            flags += ["--data-parallel-size-local", str(layout.data_parallel_size_local)]
        if request.enable_expert_parallel:
            flags.append("--enable-expert-parallel")
        if request.enable_eplb:
            flags.append("--enable-eplb")
        if request.num_redundant_experts:
            flags += ["--eplb-config", '\'{"num_redundant_experts": %d}\'' % request.num_redundant_experts]
        if request.decode_context_parallel_size > 1:
            flags += ["--decode-context-parallel-size", str(request.decode_context_parallel_size)]
    else:
        if request.enable_dp_attention:
            flags.append("--enable-dp-attention")
        if request.expert_parallel_size > 1:
            flags += ["--ep-size", str(request.expert_parallel_size)]
        if request.enable_eplb:
            flags.append("--enable-eplb")
        if request.num_redundant_experts:
            flags += ["--ep-num-redundant-experts", str(request.num_redundant_experts)]
    return flags


def _launch(plan: EnginePlan, request: ScaleRequest, layout: RankLayout) -> str:
    """The engine's launch command with this layout's flags (SGLang DP attention: ``--tp`` is the whole group); an
    SGLang rank planned over nodes loses the engine's node flags, which each node's command adds
    (:func:`planner.scale.deploy.node_commands`)."""
    command = without_node_flags(plan.launch_command)
    if layout.family == "sglang" and request.enable_dp_attention:
        command = command.replace(f" --tp {layout.attention_tp} ", f" --tp {layout.tensor_parallel_size} ", 1)
    return append_flags(command, scale_launch_flags(request, layout))


def append_flags(command: str, flags: list[str]) -> str:
    """``command`` with ``flags`` added before its trailing ``  # ...`` comment (a weight-format hint), if any."""
    if not flags:
        return command
    body, mark, comment = command.partition("  # ")
    return f"{body} {' '.join(flags)}{mark}{comment}"


def _dcp_worded(note: str, dcp: int) -> str:
    """An engine note restated under ``-dcp``: the MLA latent, replicated over the tensor-parallel heads, is split
    along tokens over ``dcp`` of those GPUs (vLLM's decode context parallel, :mod:`planner.scale.context`); QA: the
    Engine page said "replicated on every tensor-parallel GPU" beside the note that the latent is split."""
    if note != MLA_REPLICATED_NOTE:
        return note
    return (f"MLA latent cache is not divided by TP's heads; -dcp {dcp} splits each request's latent along tokens "
            f"over {dcp} of the tensor-parallel GPUs instead")


def plan_scale(model: ModelSpec, gpu_memory_bytes: int, engine_request: EngineRequest,
               request: ScaleRequest) -> ScalePlan:
    """Plan a data / expert / context parallel launch (module docstring).

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        engine_request: The engine and its knobs; ``tensor_parallel_size`` is the launch's ``-tp``
            (``--tp`` for SGLang), its ``data_parallel_size`` is ignored (``request`` has it). A given
            ``weights_bytes`` replaces the placement's estimate.
        request: The data / expert / context parallel flags.

    Raises:
        ValueError: invalid or inconsistent flags (each message names the flag), pipeline parallel
            with data / expert parallel, or what :func:`planner.engines.plan_engine` refuses.
    """
    profile = engine_profile(engine_request.engine)
    if engine_request.pipeline_parallel_size > 1 and not request.is_plain:
        raise ValueError(PIPELINE_NOT_MODELLED)
    layout = rank_layout(request, family=profile.family, tensor_parallel_size=engine_request.tensor_parallel_size,
                         num_experts=model.num_experts, num_kv_heads=dcp_kv_heads(model))
    weights = rank_weight_bytes(model, layout, engine=profile.id, weight_dtype_name=engine_request.weight_dtype,
                                gpu_name=engine_request.gpu_name)
    notes = [f"{count_noun(layout.attention_dp, 'attention data-parallel rank')} of "
             f"{count_noun(layout.attention_tp, 'GPU')}, each with its own KV pool and scheduler; "
             f"{count_noun(layout.num_gpus, 'GPU')} on {count_noun(layout.nodes, 'node')}"]
    if model.num_experts:
        notes.append(f"routed experts: {layout.local_experts} of {layout.global_experts} per MoE layer on the fullest "
                     f"GPU (expert parallel {layout.expert_parallel_size}, each expert split over {layout.expert_tp})")
    pinned = engine_request.weights_bytes
    if pinned is None and not _weights_as_plain_tp(model, layout):
        pinned = weights.total_bytes
    elif pinned is not None:
        notes.append("weights per GPU: the given measured figure, not the placement's estimate")
    rank_request = replace(engine_request, engine=profile.id, tensor_parallel_size=layout.attention_tp,
                           data_parallel_size=layout.attention_dp, weights_bytes=pinned,
                           moe_data_parallel=moe_data_parallel_of(model, layout))
    engine = plan_engine(model, gpu_memory_bytes, rank_request)
    if engine_request.weights_bytes is None and pinned is not None:  # the placement's figure, not a measured one
        engine = replace(engine, ranks=tuple(replace(r, overridden=tuple(x for x in r.overridden if x != "weights"))
                                             for r in engine.ranks))
    dispatch = _dispatch(model, rank_request, engine)
    if dispatch is not None:
        notes.append(dispatch.note())
    elif layout.expert_parallel_size > 1:
        notes.append("the MoE dispatch buffers of this engine version (gathered tokens, DeepEP / pplx) are not priced")
    if engine_request.weights_bytes is None and pinned is None:  # the engine's own figure for a plain layout
        weights = replace(weights, total_bytes=engine.limiting_rank.weights_bytes,
                          dense_bytes=engine.limiting_rank.weights_bytes - weights.routed_expert_bytes)
    context = None
    tokens, per_rank = engine.engine_kv_cache_tokens, engine.max_concurrency
    accepted, starts, reasons = engine.engine_max_model_len, engine.starts, engine.reasons
    if layout.decode_context_parallel_size > 1:
        context = apply_dcp(model, gpu_memory_bytes, rank_request, engine, layout.decode_context_parallel_size)
        tokens, per_rank, accepted = context.engine_kv_cache_tokens, context.max_concurrency, context.engine_max_model_len
        starts, reasons = context.starts, context.reasons
        engine = replace(engine, notes=tuple(_dcp_worded(n, layout.decode_context_parallel_size) for n in engine.notes))
    return ScalePlan(
        request=request, layout=layout, weights=weights, engine=engine, context=context,
        engine_kv_cache_tokens=tokens, max_concurrency_per_rank=per_rank,
        max_concurrency=round(per_rank * layout.attention_dp, 2), engine_max_model_len=accepted, starts=starts,
        reasons=tuple(reasons), launch_command=_launch(engine, request, layout), notes=tuple(notes),
        moe_dispatch=dispatch)
