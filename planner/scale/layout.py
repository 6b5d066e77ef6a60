"""Where each part of a model lives when an engine serves it with data, expert and context parallelism.

A :class:`ScaleRequest` holds the engine's own flags (vLLM: ``--data-parallel-size`` / ``-dp``,
``--data-parallel-size-local``, ``--enable-expert-parallel``, ``--enable-eplb``,
``--num-redundant-experts``, ``--decode-context-parallel-size`` / ``-dcp``; SGLang: ``--dp-size``,
``--enable-dp-attention``, ``--ep-size``, ``--ep-num-redundant-experts``) and
:func:`rank_layout` turns them, with the tensor-parallel size, into a :class:`RankLayout`: how many
GPUs there are, over how many GPUs each kind of weight is split, how many routed experts one GPU
holds, and how many independent KV pools (attention data-parallel ranks) there are.

Design notes (numbered assumptions):
    1. vLLM. Every data-parallel rank is a full engine core with its own scheduler and KV cache; the
       ``tp`` GPUs of one rank split attention, dense MLP, shared experts, embeddings and ``lm_head``
       as plain tensor parallelism, so those weights are held once per rank. The fused-MoE layer
       flattens the whole ``dp x tp`` world: without ``--enable-expert-parallel`` each expert is
       tensor-split over all ``dp x tp`` GPUs; with it the experts are split whole over an
       expert-parallel group of ``dp x tp`` GPUs (tensor parallel 1 inside the MoE). Sources:
       vllm/model_executor/layers/fused_moe/config.py (``FusedMoEParallelConfig.make``,
       ``flatten_tp_across_dp_and_pcp``), vllm/distributed/parallel_state.py (the DP, TP and EP groups).
    2. vLLM expert placement: ``global = routed experts + --num-redundant-experts``; rank ``r`` of
       ``ep`` gets ``global // ep`` experts, one more when ``r < global % ep``, so the fullest GPU
       holds ``ceil(global / ep)``. Redundant experts need ``--enable-eplb``, and with EPLB the
       global count must divide evenly. Worked example: Qwen3-Coder-480B's 160 experts over EP 8:
       20 per GPU; DeepSeek-V3's 256 + 32 redundant over EP 16: 18 per GPU. Sources:
       vllm/model_executor/layers/fused_moe/layer.py (``determine_expert_map``, the EPLB checks in
       ``FusedMoE.__init__``).
    3. SGLang. With ``--enable-dp-attention`` the ``--dp-size`` attention ranks live inside the
       ``--tp`` GPUs (``tp`` GPUs in all, attention split over ``tp / dp``); without it the data
       parallel controller starts ``dp`` separate ``tp``-GPU workers. Dense MLP, shared experts and
       embeddings stay split over the full ``tp`` (``--moe-dense-tp-size`` unset); routed experts are
       split over ``--ep-size`` ranks and tensor-split by ``tp / ep`` inside. Sources:
       python/sglang/srt/layers/dp_attention.py (``compute_dp_attention_world_info``: attention TP
       = TP / DP), python/sglang/srt/managers/data_parallel_controller.py (DP attention reuses the TP
       group), python/sglang/srt/server_args.py (``ep_size``, ``moe_dense_tp_size``,
       ``ep_num_redundant_experts``).
    4. Decode context parallel (vLLM only): ``--decode-context-parallel-size`` splits each request's
       KV along tokens over ``dcp`` GPUs of the tensor-parallel group, it adds no GPU. It must divide
       ``tp`` and stay within ``tp / kv_heads`` (1 KV head for MLA), the range vLLM documents; see
       :mod:`planner.scale.context` for the attention kinds it allows.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_GPUS_PER_NODE = 8
"""GPUs in one node when the request does not say (an HGX / DGX board) [GPUs]."""

PIPELINE_NOT_MODELLED = ("pipeline parallel together with data / expert / context parallel is not modelled; drop "
                         "--pipeline-parallel-size")
"""Why :func:`planner.scale.plan_scale` (the Engine page's and the CLI's scale launch) and
:func:`planner.context_budget.check_dcp_budget` (the budget pages' ``-dcp``) refuse pipeline stages beside these
flags: the stage split (vllm/distributed/utils.py ``get_pp_indices``) is not composed with the rank layout here."""


@dataclass(frozen=True, kw_only=True)
class ScaleRequest:
    """The data / expert / context parallel flags of one launch, under each engine's own name.

    Attributes:
        data_parallel_size: vLLM ``--data-parallel-size`` (``-dp``) or SGLang ``--dp-size`` [ranks].
        data_parallel_size_local: vLLM ``--data-parallel-size-local``: DP ranks on one node; None = all
            that fit on ``gpus_per_node``.
        enable_expert_parallel: vLLM ``--enable-expert-parallel``.
        enable_eplb: vLLM / SGLang ``--enable-eplb`` (expert-parallel load balancer).
        num_redundant_experts: vLLM ``--num-redundant-experts`` (newer builds: ``--eplb-config``'s
            ``num_redundant_experts``) or SGLang ``--ep-num-redundant-experts`` [experts per MoE layer].
        enable_dp_attention: SGLang ``--enable-dp-attention``.
        expert_parallel_size: SGLang ``--ep-size`` [ranks]; 1 = experts tensor-split.
        decode_context_parallel_size: vLLM ``--decode-context-parallel-size`` (``-dcp``) [ranks].
        gpus_per_node: GPUs in one node [GPUs] (for multi-node launches and the llm-d pods).
    """

    data_parallel_size: int = 1
    data_parallel_size_local: int | None = None
    enable_expert_parallel: bool = False
    enable_eplb: bool = False
    num_redundant_experts: int = 0
    enable_dp_attention: bool = False
    expert_parallel_size: int = 1
    decode_context_parallel_size: int = 1
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE

    @property
    def is_plain(self) -> bool:
        """True when no flag of this request changes anything (a plain tensor-parallel launch)."""
        return self == ScaleRequest(gpus_per_node=self.gpus_per_node)


@dataclass(frozen=True, kw_only=True)
class RankLayout:
    """How one launch places a model on its GPUs (all sizes in GPUs or experts; per GPU unless named).

    Attributes:
        family: ``vllm`` or ``sglang``.
        num_gpus: GPUs of the whole launch.
        tensor_parallel_size: The launch's tensor-parallel flag (vLLM ``-tp``, SGLang ``--tp``).
        attention_tp: GPUs one attention layer (and its KV heads) is split over.
        attention_dp: Independent KV pools and schedulers (attention data-parallel ranks).
        dense_tp: GPUs the dense MLP, shared experts and embeddings are split over.
        expert_parallel_size: GPUs the routed experts are spread over whole (1 = none).
        expert_tp: GPUs each routed expert is tensor-split over.
        global_experts: Routed plus redundant experts per MoE layer (0 for a dense model).
        local_experts: Experts per MoE layer on the fullest GPU.
        redundant_experts: Redundant experts per MoE layer.
        decode_context_parallel_size: GPUs one request's KV is split over along tokens.
        nodes: Nodes the launch spans (``ceil(num_gpus / gpus_per_node)``).
        data_parallel_size_local: DP ranks per node (vLLM), or None.
    """

    family: str
    num_gpus: int
    tensor_parallel_size: int
    attention_tp: int
    attention_dp: int
    dense_tp: int
    expert_parallel_size: int
    expert_tp: int
    global_experts: int
    local_experts: int
    redundant_experts: int
    decode_context_parallel_size: int
    nodes: int
    data_parallel_size_local: int | None = None

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return dict(self.__dict__)


def _check_positive(request: ScaleRequest, tensor_parallel_size: int) -> None:
    """Raise ValueError for a size below 1 or a negative redundant-expert count."""
    sizes = {"--tensor-parallel-size": tensor_parallel_size, "data parallel size": request.data_parallel_size,
             "--ep-size": request.expert_parallel_size,
             "--decode-context-parallel-size": request.decode_context_parallel_size,
             "GPUs per node": request.gpus_per_node}
    for name, value in sizes.items():
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    if request.num_redundant_experts < 0:
        raise ValueError(f"the redundant expert count must be >= 0, got {request.num_redundant_experts}")
    if request.data_parallel_size_local is not None and request.data_parallel_size_local < 1:
        raise ValueError(f"--data-parallel-size-local must be at least 1, got {request.data_parallel_size_local}")


def _placed_experts(num_experts: int, redundant: int, ep: int, *, eplb: bool, flag: str,
                    redundant_needs_eplb: bool = True) -> tuple[int, int]:
    """``(global, local)`` experts per MoE layer under design note 2 [experts].

    Raises:
        ValueError: redundant experts without EPLB (vLLM), an uneven EPLB split, or fewer experts than ranks.
    """
    total = num_experts + redundant
    if redundant and not eplb and redundant_needs_eplb:
        raise ValueError(f"{redundant} redundant experts need --enable-eplb (only the load balancer places them)")
    if eplb and ep > 1 and total % ep:
        fits = [r for r in range(redundant, redundant + ep) if (num_experts + r) % ep == 0][0]
        raise ValueError(f"EPLB spreads experts evenly: {num_experts} + {redundant} redundant = {total} experts do "
                         f"not divide over {ep} expert-parallel GPUs; use {flag} {fits}")
    if ep > total:
        raise ValueError(f"{ep} expert-parallel GPUs for {total} experts per layer: some GPUs would hold none; "
                         f"use at most {total} GPUs in the expert-parallel group")
    return total, -(-total // ep)


VLLM_DENSE_EP_ERROR = "Number of experts in the model must be greater than 0 when expert parallelism is enabled."
"""What vLLM raises for ``--enable-expert-parallel`` on a model without routed experts:
``ModelConfig.verify_with_parallel_config`` calls ``_verify_with_expert_parallelism`` whenever
``parallel_config.enable_expert_parallel`` is set (vllm/config/model.py; vllm/config.py before the split), before
any weight loads. ``--enable-eplb`` without it is refused by ``ParallelConfig`` (vllm/config/parallel.py)."""


def vllm_dense_expert_parallel_refusal(num_experts: int, expert_flag: bool) -> str:
    """Why vLLM refuses ``--enable-expert-parallel`` (or ``--enable-eplb``, ``expert_flag``) on a model with
    ``num_experts`` routed experts per MoE layer (0: a dense model, :data:`VLLM_DENSE_EP_ERROR`), else "". The one
    sentence the CLI, Home and the Engine page give (QA: a dense model read "Fits" on Home)."""
    if not expert_flag or num_experts:
        return ""
    return ("--enable-expert-parallel / --enable-eplb need an MoE model; this model has no routed experts, and "
            f"vLLM stops before loading weights with \"{VLLM_DENSE_EP_ERROR}\" (vllm/config/model.py "
            "_verify_with_expert_parallelism); drop the flag and use --data-parallel-size alone for replicas")


def rank_layout(request: ScaleRequest, *, family: str, tensor_parallel_size: int, num_experts: int,
                num_kv_heads: int) -> RankLayout:
    """The :class:`RankLayout` of a launch (design notes 1-4).

    Args:
        request: The data / expert / context parallel flags.
        family: Engine family, ``vllm`` or ``sglang``.
        tensor_parallel_size: The launch's tensor-parallel size [GPUs].
        num_experts: Routed experts per MoE layer (0 for a dense model).
        num_kv_heads: KV heads of the attention layers (1 for MLA's latent), for the DCP range.

    Returns:
        The layout; a plain launch gives ``attention_dp = 1`` and ``expert_parallel_size = 1``.

    Raises:
        ValueError: a flag of the other engine, an expert flag on a dense model, sizes that do not
            divide, or a DCP size outside ``[1, tp / kv_heads]``; each message names the flag to change.
    """
    _check_positive(request, tensor_parallel_size)
    if family == "vllm":
        return _vllm_layout(request, tensor_parallel_size, num_experts, num_kv_heads)
    if family == "sglang":
        return _sglang_layout(request, tensor_parallel_size, num_experts)
    raise ValueError(f"data / expert / context parallel are modelled for vLLM and SGLang only, not {family}; "
                     "use --engine vllm or --engine sglang")


def _vllm_layout(request: ScaleRequest, tp: int, num_experts: int, kv_heads: int) -> RankLayout:
    """:func:`rank_layout` for vLLM (design notes 1, 2 and 4)."""
    if request.enable_dp_attention or request.expert_parallel_size > 1:
        raise ValueError("--enable-dp-attention and --ep-size are SGLang flags; vLLM spells them "
                         "--data-parallel-size with --enable-expert-parallel (the EP group is then dp x tp)")
    dp, dcp = request.data_parallel_size, request.decode_context_parallel_size
    world = dp * tp
    if refusal := vllm_dense_expert_parallel_refusal(num_experts, request.enable_expert_parallel or
                                                     request.enable_eplb):
        raise ValueError(refusal)
    if request.enable_eplb and not request.enable_expert_parallel:
        raise ValueError("--enable-eplb balances experts over an expert-parallel group: add --enable-expert-parallel")
    if tp % dcp:
        raise ValueError(f"--decode-context-parallel-size {dcp} must divide --tensor-parallel-size {tp} (DCP reuses "
                         "the tensor-parallel GPUs)")
    if dcp > 1 and dcp * kv_heads > tp:
        best = max(1, tp // kv_heads)
        raise ValueError(f"--decode-context-parallel-size {dcp} exceeds tp / KV heads = {tp} / {kv_heads}: with "
                         f"{tp} GPUs no GPU holds a KV head twice to split; use -dcp {best} or raise "
                         "--tensor-parallel-size")
    ep = world if request.enable_expert_parallel and world > 1 else 1
    global_experts, local = (0, 0)
    if num_experts:
        global_experts, local = _placed_experts(num_experts, request.num_redundant_experts, ep,
                                                eplb=request.enable_eplb, flag="--num-redundant-experts")
    local_dp = request.data_parallel_size_local
    if local_dp is None and dp > 1:  # the most ranks that fit one node and divide dp
        room = max(1, request.gpus_per_node // tp)
        local_dp = max(d for d in range(1, min(dp, room) + 1) if dp % d == 0)
    elif local_dp is not None and dp % local_dp:
        raise ValueError(f"--data-parallel-size {dp} is not a multiple of --data-parallel-size-local {local_dp}")
    if local_dp is not None and local_dp * tp > request.gpus_per_node:
        raise ValueError(f"{local_dp} local DP ranks x tp {tp} = {local_dp * tp} GPUs do not fit a node of "
                         f"{request.gpus_per_node}; lower --data-parallel-size-local")
    nodes = dp // local_dp if local_dp else -(-world // request.gpus_per_node)
    return RankLayout(
        family="vllm", num_gpus=world, tensor_parallel_size=tp, attention_tp=tp, attention_dp=dp, dense_tp=tp,
        expert_parallel_size=ep, expert_tp=1 if ep > 1 else world, global_experts=global_experts,
        local_experts=local, redundant_experts=request.num_redundant_experts, decode_context_parallel_size=dcp,
        nodes=nodes, data_parallel_size_local=local_dp)


def _sglang_layout(request: ScaleRequest, tp: int, num_experts: int) -> RankLayout:
    """:func:`rank_layout` for SGLang (design note 3)."""
    if request.enable_expert_parallel or request.data_parallel_size_local is not None:
        raise ValueError("--enable-expert-parallel and --data-parallel-size-local are vLLM flags; SGLang spells "
                         "expert parallel --ep-size N")
    if request.decode_context_parallel_size > 1:
        raise ValueError("decode context parallel is modelled for vLLM only (--engine vllm)")
    dp, ep = request.data_parallel_size, request.expert_parallel_size
    if request.enable_dp_attention:
        if dp < 2 or tp % dp:
            raise ValueError(f"--enable-dp-attention needs --dp-size of 2 or more that divides --tp {tp}, got "
                             f"--dp-size {dp}")
        world, attention_tp = tp, tp // dp
    else:
        world, attention_tp = dp * tp, tp
    if (ep > 1 or request.enable_eplb) and not num_experts:
        raise ValueError("--ep-size / --enable-eplb need an MoE model; this model has no routed experts")
    if tp % ep:
        raise ValueError(f"--ep-size {ep} must divide --tp {tp} (SGLang's expert-parallel group is inside the "
                         "tensor-parallel group)")
    global_experts, local = (0, 0)
    if num_experts:
        global_experts, local = _placed_experts(num_experts, request.num_redundant_experts, ep,
                                                eplb=request.enable_eplb, flag="--ep-num-redundant-experts",
                                                redundant_needs_eplb=False)
    return RankLayout(
        family="sglang", num_gpus=world, tensor_parallel_size=tp, attention_tp=attention_tp, attention_dp=dp,
        dense_tp=tp, expert_parallel_size=ep, expert_tp=tp // ep, global_experts=global_experts,
        local_experts=local, redundant_experts=request.num_redundant_experts, decode_context_parallel_size=1,
        nodes=-(-world // request.gpus_per_node))
