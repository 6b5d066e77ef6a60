"""Find's setups beyond plain tensor parallel: data + expert parallel, decode context parallel, disaggregated pools.

For an MoE or MLA model, :func:`planner.traffic.reverse.find_setups` also searches, beside its TP x replicas rows
(kinds of :data:`planner.traffic.find_types.SETUP_KINDS`):

* ``DP+EP``: one launch of ``ranks`` attention data-parallel ranks of ``tp`` GPUs each, the routed experts spread
  whole over all ``ranks x tp`` GPUs: vLLM ``-tp tp -dp ranks --enable-expert-parallel``, SGLang ``--tp W
  --dp-size ranks --enable-dp-attention --ep-size W`` (W = ranks x tp). MoE models only. ``ranks x tp`` is a
  power of two within ``max_gpus`` and at most the routed experts; wider than a node (8) only with ``tp`` 1,
  as the recipes go wide (DeepSeek's, Qwen3-Coder's ``-dp 8 --enable-expert-parallel``).
* ``DCP``: replicas of one ``-tp tp -dcp c`` launch (vLLM profiles with decode context parallel), ``c`` the
  largest divisor of ``tp`` within ``tp / KV heads`` (MLA: ``tp``); models whose cached layers are all full
  attention or MLA (:func:`planner.scale.context.check_dcp_model`).
* ``disaggregated``: a prefill pool and a decode pool (:func:`planner.scale.disagg.size_pools`): the decode
  launch is any TP, DP+EP or DCP shape above, the prefill launch the smallest TP (else DP+EP) launch that
  starts: on the compute roofline the prefill GPUs the arrivals need do not shrink with wider launches, only
  the time to first token does; both pools together within ``max_gpus``. Fixed lengths and GPUs with a
  bandwidth and a bf16 TFLOPS figure only.

Every launch is planned once per GPU type, shape, KV dtype and length by :func:`planner.scale.plan_scale` (one
attention-DP rank as its engine plans it, the fullest GPU's weights under the placement) and kept in the model's
memo (:mod:`planner.model.memo`): only the arithmetic below depends on the user count, so a new user count costs
no plan. A setup then reads as a TP row of :mod:`planner.traffic.find_engine` does, per rank:

    users per rank     = ceil(N / (ranks x replicas))
    rank holds         = whole requests its pool holds while they run (ScalePlan.requests_per_rank: vLLM V1's
                         decoding concurrency; under -dcp the printed tokens // max_model_len)
    fits               = the launch starts and users per rank <= what a rank holds
    max users          = what a rank holds x ranks x replicas
    time per token     = (the fullest GPU's weights + users per rank x KV per sequence / dcp) / bandwidth
    price              = catalog price x GPUs

Worked example (``tests/test_find_scale.py``): DeepSeek-V3.2 on H200 SXM, 2,000 + 500 tokens under the newest
vLLM. ``-tp 8`` holds 369 requests of 2,500 tokens; ``-dp 8 --enable-expert-parallel`` holds 112 per rank x 8 =
896 on the same 8 GPUs (94.77 GiB of weights and 12.94 GiB of KV pool per GPU: the latent kept once per rank, not
once per GPU, and each rank's MoE layers run the 65,536 tokens gathered from all 8 in the profile pass), and
``-tp 2 -dp 4`` 254 per rank x 4 = 1,016. At 500 users TP needs two replicas (16 GPUs), DP+EP one launch of 8:
half the price.

Sources: :mod:`planner.scale` (placement, engine files cited there), :mod:`planner.traffic.find_engine` (a
replica's users), :mod:`planner.scale.deploy` (per-node commands, llm-d values).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Callable, NamedTuple

from planner.engines.profiles import engine_profile
from planner.engines.vllm_rocm_fp4 import rocm_nvfp4_note
from planner.model import ModelSpec
from planner.model.memo import model_memo, remember
from planner.scale.context import DCP_PROFILES, check_dcp_model, dcp_backend_refusal
from planner.scale.deploy import disagg_roles, role_commands, roles_yaml
from planner.scale.disagg import DisaggPlan, decode_kv_per_sequence, decode_step_seconds, size_pools
from planner.scale.layout import DEFAULT_GPUS_PER_NODE, ScaleRequest
from planner.scale.plan import ScalePlan, append_flags, plan_scale, scale_launch_flags
from planner.text import count_noun
from planner.traffic.find_costs import launch_kv_flag
from planner.traffic.find_engine import (
    EngineCapacity,
    engine_launch_command,
    engine_request_for,
    launch_knobs,
    launch_max_model_len,
    launch_max_num_seqs,
)
from planner.traffic.find_types import FindRequest, Setup, capped_note
from planner.traffic.throughput import cost_per_million_tokens
from planner.traffic.workload import Workload
from planner.units import ceil_div

SCALE_FAMILIES = ("vllm", "sglang")
"""Engine families whose data / expert / context parallel flags the planner models (:mod:`planner.scale`)."""


class Candidate(NamedTuple):
    """A setup as the search ranks it, and how to finish it when it is listed (its launch command and
    deployment: built for the listed setups only)."""

    setup: Setup
    finish: Callable[[Setup], Setup]


@dataclass(frozen=True)
class Shape:
    """One launch's layout in Find's terms.

    Attributes:
        kind: ``TP``, ``DP+EP`` or ``DCP``.
        tp: GPUs of one attention data-parallel rank.
        ranks: Attention data-parallel ranks of the launch (each with its own KV pool).
        dcp: Decode context parallel size.
    """

    kind: str
    tp: int
    ranks: int = 1
    dcp: int = 1

    @property
    def gpus(self) -> int:
        """GPUs of one launch."""
        return self.tp * self.ranks


def offers_scale(model: ModelSpec) -> bool:
    """True for a model Find searches DP+EP / DCP / disaggregated setups for: MoE (routed experts) or MLA."""
    return bool(model.num_experts) or model.attention_kind == "MLA"


def _dp_ep_shape(tp: int, ranks: int, num_experts: int) -> bool:
    """A DP+EP launch Find tries: ``ranks x tp`` GPUs a power of two, at most the routed experts (every GPU holds
    one), and past one node of 8 only with one GPU per rank (how the recipes go wide)."""
    width = tp * ranks
    return width & (width - 1) == 0 and width <= num_experts and (width <= DEFAULT_GPUS_PER_NODE or tp == 1)


def scale_shapes(model: ModelSpec, engine: str, tp_sizes: tuple[int, ...], max_gpus: int) -> list[Shape]:
    """The DP+EP and DCP launches Find tries for ``model`` under ``engine`` within ``max_gpus`` (module docstring)."""
    profile = engine_profile(engine)
    shapes = []
    if model.num_experts:
        for tp in tp_sizes:
            shapes += [Shape("DP+EP", tp, ranks) for ranks in range(2, max_gpus // tp + 1)
                       if _dp_ep_shape(tp, ranks, model.num_experts)]
    if profile.family == "vllm" and profile.id in DCP_PROFILES:
        try:
            check_dcp_model(model)
        except ValueError:
            return shapes
        heads = 1 if model.attention_kind == "MLA" else max(1, model.num_key_value_heads)
        for tp in tp_sizes:
            dcp = max((c for c in range(2, tp + 1) if tp % c == 0 and c * heads <= tp), default=0)
            if dcp:
                shapes.append(Shape("DCP", tp, dcp=dcp))
    return shapes


def scale_request(shape: Shape, family: str) -> tuple[ScaleRequest, int]:
    """``(flags, the launch's tensor-parallel flag)`` of ``shape`` under an engine family's own names."""
    if shape.kind == "DP+EP" and family == "sglang":
        width = shape.gpus
        return ScaleRequest(data_parallel_size=shape.ranks, enable_dp_attention=True,
                            expert_parallel_size=width), width
    if shape.kind == "DP+EP":
        return ScaleRequest(data_parallel_size=shape.ranks, enable_expert_parallel=True), shape.tp
    return ScaleRequest(decode_context_parallel_size=shape.dcp), shape.tp


def launch_plan(model: ModelSpec, gpu, request: FindRequest, shape: Shape, kv_flag: str,
                max_model_len: int) -> ScalePlan | EngineCapacity | str:
    """One launch of ``shape`` on ``gpu``, planned by :func:`planner.scale.plan_scale` and kept in the model's
    ``"find"`` memo under everything it reads (not the users). A launch that would not start is kept as its
    rank's :class:`EngineCapacity` (the figures a row needs, without the whole plan); one the engine cannot plan
    at all as its refusal, a sentence."""
    family = engine_profile(request.engine).family
    flags, launch_tp = scale_request(shape, family)
    engine_request = engine_request_for(request, gpu, launch_tp, kv_flag, max_model_len)
    key = ("launch", gpu.framework_memory_bytes, shape, flags, engine_request)
    memo = model_memo(model, "find")
    try:
        cached = memo.get(key)
    except TypeError:  # an unhashable serving field: plan without the memo
        key, cached = None, None
    if cached is None:
        cached = _plan_launch(model, gpu, request, engine_request, flags, family)
        if key is not None:
            remember(memo, key, cached)
    return cached


def _plan_launch(model: ModelSpec, gpu, request: FindRequest, engine_request, flags: ScaleRequest,
                 family: str) -> ScalePlan | EngineCapacity | str:
    """:func:`launch_plan` without the memo: a started launch as a slim plan (one rank budget, no printed lines or
    notes: what the rows, the pools and the deployments read), one that would not start as its capacity."""
    try:
        plan = plan_scale(model, gpu.framework_memory_bytes, engine_request, flags)
    except ValueError as exc:
        return f"{request.engine}: {exc}"
    if not plan.starts:
        return rank_capacity(plan, family)
    engine = plan.engine
    return replace(plan, notes=(), engine=replace(engine, ranks=(engine.limiting_rank,), warnings=(), notes=(),
                                                  engine_log_lines=(), overhead_formula="", serving=None))


def rank_capacity(plan: ScalePlan | EngineCapacity | str, family: str) -> EngineCapacity | str:
    """One rank of ``plan`` as :mod:`planner.traffic.find_engine` reads a replica (its KV pool, whole requests)."""
    if not isinstance(plan, ScalePlan):
        return plan
    engine = plan.engine
    needed = (plan.context.kv_cache_bytes_needed_per_request if plan.context is not None
              else engine.kv_cache_bytes_needed_per_request)
    return EngineCapacity(
        engine=engine.engine, family=family, starts=plan.starts,
        reason="" if plan.starts else (plan.reasons[0] if plan.reasons else "no room for its KV cache"),
        available_kv_bytes=engine.available_kv_cache_bytes, kv_cache_tokens=plan.engine_kv_cache_tokens,
        users_per_replica=plan.requests_per_rank, needed_bytes_per_request=needed,
        max_model_len=engine.max_model_len, gpu_memory_utilization=engine.gpu_memory_utilization,
        weights_bytes=engine.limiting_rank.weights_bytes, requests_held=plan.requests_held_per_rank,
        kv_cache_dtype=engine.kv_cache_dtype)


def _launch_command(model: ModelSpec, request: FindRequest, plan: ScalePlan, shape: Shape, replicas: int,
                    per_rank: int, kv_flag: str, extra: str) -> str:
    """The launch command of a DP+EP or DCP row: the capacity flags as the TP rows write them (``--max-num-seqs`` =
    the users of one rank; SGLang's ``--max-running-requests`` counts all ranks), then the scale flags."""
    family = plan.layout.family
    cap = rank_capacity(plan, family)
    sglang = family == "sglang"
    kv = kv_flag if sglang else launch_kv_flag(model, request, kv_flag)  # vLLM: DeepSeek-V4 launches with fp8
    command = engine_launch_command(
        cap, model.model_id, tensor_parallel_size=plan.layout.tensor_parallel_size,
        data_parallel_size=shape.ranks * replicas, kv_cache_dtype=kv, weight_dtype=request.weight_dtype,
        max_num_seqs=launch_max_num_seqs(request, per_rank * (shape.ranks if sglang else 1)),
        block_size=request.block_size, language_model_only=model.language_model_only, knobs=launch_knobs(request))
    command = append_flags(command, scale_launch_flags(plan.request, plan.layout))
    return append_flags(command, [extra]) if extra else command


def _finish_launch(model: ModelSpec, gpu, request: FindRequest, shape: Shape, replicas: int, kv_flag: str,
                   extra: str, max_model_len: int, setup: Setup) -> Setup:
    """A listed DP+EP / DCP row with its command; a launch on more than one node also gets every node's command
    and, under vLLM, the llm-d values. A launch that would not start (the closest row) is planned again here."""
    plan = launch_plan(model, gpu, request, shape, kv_flag, max_model_len)
    if isinstance(plan, EngineCapacity):
        family = engine_profile(request.engine).family
        flags, launch_tp = scale_request(shape, family)
        plan = plan_scale(model, gpu.framework_memory_bytes,
                          engine_request_for(request, gpu, launch_tp, kv_flag, max_model_len), flags)
    if isinstance(plan, str):
        return setup
    command = _launch_command(model, request, plan, shape, replicas, setup.users_per_replica, kv_flag, extra)
    out = replace(setup, launch_command=command)
    if plan.layout.nodes <= 1:
        return out
    roles = {"decode": (replace(plan, launch_command=command), replicas)}
    yaml = roles_yaml(model, roles, gpu_name=gpu.name) if plan.layout.family == "vllm" else None
    return replace(out, deploy_commands=tuple(role_commands(roles)), llm_d_values=yaml)


KIND_NOTES = {
    "DP+EP": (),
    "DCP": ("-dcp: vLLM checks at start that every attention backend returns the log-sum-exp of its decode step, "
            "to merge the ranks' partial results (vllm/v1/worker/cp_utils.py, check_attention_cp_compatibility); "
            "DCP rows are listed only where the backend vLLM picks does (planner/scale/context.py: not on AMD GPUs "
            "for full-attention or sparse-MLA models; sparse MLA only from v0.29; on AMD a dense-MLA model runs "
            "TRITON_MLA, and with VLLM_ROCM_USE_AITER=1 AITER MLA returns it from v0.29 only). The roofline leaves "
            "out the ranks' exchange",),
}
"""Notes every row of a kind carries (numbered under the Find table)."""


def launch_candidates(model: ModelSpec, gpu, request: FindRequest, workload: Workload, costs: dict,
                      shapes: list[Shape], max_gpus: int, make_setup: Callable) -> list[Candidate]:
    """The DP+EP and DCP rows of one GPU type.

    Args:
        model, gpu, request, workload: As :func:`planner.traffic.reverse.find_setups` has them.
        costs: The search's per (tp, KV dtype) costs (:class:`planner.traffic.find_costs.CandidateCosts`).
        shapes: :func:`scale_shapes`.
        max_gpus: Most GPUs of a setup.
        make_setup: ``(gpu, c, tp, ranks, per_rank, cap, weights, kv_split) -> Setup`` (the TP rows' arithmetic,
            :func:`planner.traffic.reverse._setup`, with ``demand`` looked up for distributions).
    """
    family = engine_profile(request.engine).family
    out = []
    for (tp, _), c in costs.items():
        for shape in (s for s in shapes if s.tp == tp):
            if shape.kind == "DCP" and not workload.is_fixed:
                continue  # the Monte-Carlo demand is per whole request, not per token shard
            if shape.kind == "DCP" and dcp_backend_refusal(model, engine_profile(request.engine).id, gpu.name,
                                                           c.kv_flag):
                continue  # this GPU's attention backend stops a -dcp launch (named in scale_notes)
            plan = launch_plan(model, gpu, request, shape, c.kv_flag, workload.max_model_len)
            cap = rank_capacity(plan, family)
            planned = isinstance(plan, ScalePlan)
            weights = plan.engine.limiting_rank.weights_bytes if planned else None
            width = shape.gpus if shape.kind == "DP+EP" else 1
            for replicas in range(1, (max_gpus // shape.gpus if shape.kind == "DCP" else 1) + 1):
                ranks = shape.ranks * replicas
                per_rank = ceil_div(request.users, ranks)
                setup = make_setup(gpu, c, tp, ranks, per_rank, cap, weights, shape.dcp)
                setup = replace(setup, kind=shape.kind, notes=setup.notes + KIND_NOTES[shape.kind],
                                decode_context_parallel_size=shape.dcp,
                                expert_parallel_size=plan.layout.expert_parallel_size if planned else width,
                                nodes=plan.layout.nodes if planned else -(-shape.gpus // DEFAULT_GPUS_PER_NODE))
                out.append(Candidate(setup, partial(_finish_launch, model, gpu, request, shape, replicas, c.kv_flag,
                                                    c.launch_extra, workload.max_model_len)))
    return out


DISAGG_NOTE = ("disaggregated: both pools sized on the roofline (peak bandwidth and FLOPS, no queueing or "
               "communication time); TTFT includes one prompt's KV over the link between the pools")
"""The note every disaggregated row carries."""


def disagg_candidates(model: ModelSpec, gpu, request: FindRequest, workload: Workload, costs: dict,
                      shapes: list[Shape], max_gpus: int) -> list[Candidate]:
    """The disaggregated rows of one GPU type (module docstring): every decode launch (TP, DP+EP, DCP) with the
    smallest prefill launch that starts (TP, else DP+EP), their GPUs together within ``max_gpus``, each pool
    planned once (:func:`launch_plan`) and sized for the users by :func:`planner.scale.disagg.size_pools`."""
    tflops = getattr(gpu, "bf16_dense_tflops", None)
    prompt, output = round(workload.prompt.mean_tokens), round(workload.output.mean_tokens)
    if not workload.is_fixed or not gpu.bandwidth_gb_s or not tflops or output < 1 or max_gpus < 2:
        return []
    plain = [Shape("TP", tp) for tp in sorted(dict.fromkeys(tp for tp, _ in costs))]
    decode_shapes = [s for s in plain + shapes if s.gpus < max_gpus]
    prefill_shapes = [s for s in plain + sorted((s for s in shapes if s.kind == "DP+EP"), key=lambda s: s.gpus)
                      if s.gpus < max_gpus]
    tpot_ms = None if request.max_time_per_output_token_s is None else request.max_time_per_output_token_s * 1000
    family = engine_profile(request.engine).family
    per_dtype: dict = {}
    for (_, kv_name), c in costs.items():
        per_dtype.setdefault(kv_name, c)
    out = []
    for kv_name, c in per_dtype.items():
        started = {"decode": [(s, p) for s in decode_shapes if isinstance(
            p := launch_plan(model, gpu, request, s, c.kv_flag, workload.max_model_len), ScalePlan)]}
        # prefill: the smallest launch that starts (more GPUs per prompt cut the TTFT, not the GPUs the arrivals
        # need: replicas x GPUs ~ arrivals x the prefill time on one GPU), at the decode role's max_model_len
        # (planner.scale.disagg design note 3), its KV sizing at the prompt's length
        first = next(((s, p) for s in prefill_shapes if isinstance(
            p := launch_plan(model, gpu, request, s, c.kv_flag, workload.max_model_len), ScalePlan)), None)
        prompt_plan = None if first is None else launch_plan(model, gpu, request, first[0], c.kv_flag, prompt)
        started["prefill"] = [first] if isinstance(prompt_plan, ScalePlan) else []
        for d_shape, d_plan in started["decode"]:
            decode_engine = engine_request_for(request, gpu, d_plan.layout.tensor_parallel_size, c.kv_flag,
                                               workload.max_model_len)
            for p_shape, p_plan in started["prefill"]:
                if d_shape.gpus + p_shape.gpus > max_gpus:
                    continue
                result = size_pools(model, p_plan, d_plan, prompt_plan=prompt_plan, decode_engine=decode_engine,
                                    bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=tflops, users=request.users,
                                    prompt_len=prompt, output_len=output, tpot_ms=tpot_ms, link_id=request.link)
                if result.decode.replicas < 1:
                    continue  # not one sequence per rank: no such pool
                setup = _disagg_setup(model, gpu, request, workload, result, decode_engine, kv_name, max_gpus)
                out.append(Candidate(setup, lambda s, result=result: _finish_disagg(model, gpu, family, result, s)))
    return out


def _disagg_setup(model: ModelSpec, gpu, request: FindRequest, workload: Workload, result: DisaggPlan, decode_engine,
                  kv_name: str, max_gpus: int) -> Setup:
    """A disaggregated row from its sized pools: the decode pool's figures per rank, both pools' GPUs and price.
    Its time per output token is the decode step at the users' load (``ceil(N / ranks)`` per rank), as the TP rows'
    is; ``decode.time_per_output_token_ms`` is the step at the pool's full batch, as ``disagg`` prints it."""
    decode, prefill = result.decode, result.prefill
    layout, plan = decode.plan.layout, decode.plan
    gpus = decode.gpus + prefill.gpus
    per_rank = ceil_div(request.users, decode.replicas * layout.attention_dp)
    reasons = list(result.reasons)
    if gpus > max_gpus:
        reasons.append(f"{count_noun(gpus, 'GPU')} (prefill {prefill.gpus:,} + decode {decode.gpus:,}) exceed "
                       f"max_gpus {max_gpus:,}")
    price = float(gpu.price_usd_per_hour) * gpus
    tpot = decode_step_seconds(plan, model, decode_engine, prompt_len=result.prompt_len, output_len=result.output_len,
                               batch=per_rank, bandwidth_gb_s=gpu.bandwidth_gb_s)
    kv_seq = decode_kv_per_sequence(plan, model, decode_engine, result.prompt_len + result.output_len // 2)
    cap, held = request.knob("max_num_seqs"), plan.requests_held_per_rank  # a binding cap sets the margin (reverse)
    capped = cap is not None and 0 < cap < int(held)
    margin = 1 - per_rank / cap if capped else 1 - per_rank / held if held > 0 else None
    return Setup(
        gpu_id=gpu.id, gpu_name=gpu.name, num_gpus=gpus, tensor_parallel_size=layout.attention_tp,
        data_parallel_size=layout.attention_dp, kv_cache_dtype=plan.engine.kv_cache_dtype or kv_name,
        kv_cache_dtype_flag=kv_name, weight_dtype=request.weight_dtype,  # the stored cache, as the TP rows name it
        price_per_hour=round(price, 6), price_per_gpu_hour=float(gpu.price_usd_per_hour), users=request.users,
        users_per_replica=per_rank, max_concurrent_sequences=decode.replicas * decode.max_concurrency,
        kv_cache_budget_bytes_per_gpu=plan.engine.available_kv_cache_bytes,
        kv_demand_bytes_per_gpu=per_rank * plan.engine.kv_cache_bytes_needed_per_request,
        margin=margin, max_num_seqs_cap=cap if capped else None,
        time_per_output_token_s=tpot, time_to_first_token_s=result.ttft_ms / 1000,
        output_tokens_per_s=request.users / tpot if tpot > 0 else None,
        usd_per_million_output_tokens=cost_per_million_tokens(price, 1, request.users / tpot) if tpot > 0 else None,
        max_model_len=launch_max_model_len(request, workload.max_model_len), fits=not reasons, launch_command="",
        reasons=tuple(reasons),
        notes=(DISAGG_NOTE, *((capped_note(cap),) if capped else ()),
               *filter(None, (plan.engine.family == "vllm"  # the kernel of NVFP4 on ROCm (vllm_rocm_fp4)
                              and rocm_nvfp4_note(model, plan.engine.engine, request.weight_dtype, gpu.name),))),
        kind="disaggregated",
        expert_parallel_size=layout.expert_parallel_size,
        decode_context_parallel_size=layout.decode_context_parallel_size,
        nodes=max(layout.nodes, prefill.plan.layout.nodes),
        weights_bytes_per_gpu=plan.engine.limiting_rank.weights_bytes, kv_bytes_per_sequence_per_gpu=kv_seq)


def _finish_disagg(model: ModelSpec, gpu, family: str, result: DisaggPlan, setup: Setup) -> Setup:
    """A listed disaggregated row: each role's commands (the decode role's first node as its launch command), the
    llm-d values under vLLM, and both pools' JSON objects (what ``python -m planner deploy`` / ``disagg`` print)."""
    roles = disagg_roles(result)
    commands = tuple(role_commands(roles))
    yaml = None
    if family == "vllm":
        try:
            yaml = roles_yaml(model, roles, gpu_name=gpu.name)
        except ValueError:  # a tensor-parallel group wider than a node: the chart cannot hold it
            yaml = None
    decode_head = commands.index(next(x for x in commands if x.startswith("# decode")))
    return replace(setup, launch_command=commands[decode_head + 1], deploy_commands=commands, llm_d_values=yaml,
                   prefill=result.prefill.to_dict(), decode=result.decode.to_dict())


def scale_searched(model: ModelSpec, request: FindRequest) -> bool:
    """Whether the search adds DP+EP / DCP / disaggregated rows: an MoE or MLA model, one of those kinds asked,
    and an engine whose flags :mod:`planner.scale` models."""
    return (offers_scale(model) and any(k != "TP" for k in request.setup_kinds) and request.engine is not None
            and engine_profile(request.engine).family in SCALE_FAMILIES)


def scale_notes(model: ModelSpec, request: FindRequest, workload: Workload) -> list[str]:
    """What the search says about the kinds beside TP: why they are not searched, or what they leave out."""
    if not offers_scale(model) or not any(k != "TP" for k in request.setup_kinds):
        return []
    if request.engine is None or engine_profile(request.engine).family not in SCALE_FAMILIES:
        whose = "the budget arithmetic" if request.engine is None else request.engine
        return [f"DP+EP, DCP and disaggregated setups are planned by vLLM's or SGLang's view; {whose} has no such "
                "flags, so only TP setups are listed (use --engine vllm or sglang)"]
    notes = ["DP+EP / DCP rows: one launch's GPUs are tp x ranks; each rank has its own KV pool and scheduler, so a "
             "rank holds ceil(users / ranks); a vLLM rank's profile pass holds the batch its MoE layers gather from "
             "every rank (the default all-gather dispatch); DeepEP / pplx buffers are not priced"]
    if not workload.is_fixed:
        notes.append("lengths vary: DCP and disaggregated setups are sized for fixed lengths only and are left out")
    return notes
