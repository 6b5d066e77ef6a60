"""Find's costs of one candidate (tensor parallel size x KV dtype): weights, overhead, KV per sequence, each GPU's.

:func:`candidate_costs` prices each (tp, KV dtype) once, then on every GPU searched as :func:`planner.budget.plan`
prices it there (:meth:`CandidateCosts.on`), so a Find row's budget and users are Home's for that GPU.
Split from :mod:`planner.traffic.reverse` (the search).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from planner.budget import PlanRequest, paged_with_serving, plan_base, profile_pass_tokens
from planner.engines.profiles import engine_profile, is_large_datacenter_gpu
from planner.engines.vllm_deepseek_v4 import launch_kv_cache_dtype
from planner.engines.vllm_deepseek_v4 import stored_name as deepseek_v4_stored_name
from planner.engines.vllm_kv_formats import FP8_DS_MLA, stored_kv_bytes_per_token, stored_kv_name
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import indexed_mla_layer
from planner.overhead import OVERHEAD_PROFILE, estimate_overhead, overhead_bytes
from planner.serving.features import launch_flags as serving_launch_flags, serving_effects
from planner.serving.multimodal import encoder_chunk_budget
from planner.sweep import per_gpu_costs
from planner.traffic.find_types import FindRequest
from planner.traffic.throughput import active_parameters
from planner.traffic.workload import Workload


@dataclass(frozen=True)
class CandidateCosts:
    """What one (tp, KV dtype) candidate costs on one GPU: weights and overhead per GPU [bytes], the KV cache's
    names, one request's paged bytes (``paged_per_seq``, of the workload's longest request) and the decode
    context's exact bytes for the roofline [bytes], the paged ``profile``, active parameters, the serving flags
    of the launch command, one prefill chunk's extra window blocks [bytes], and ``by_gpu``: the same on each GPU
    searched (:meth:`on`)."""

    weights: int
    overheads: dict  # vLLM size class (planner.engines.profiles.is_large_datacenter_gpu) -> overhead [bytes]
    kv_name: str
    kv_flag: str
    paged_per_seq: int
    exact_decode_seq: int
    profile: object
    active_params: int
    launch_extra: str = ""
    prefill_extra: int = 0  # one request's prefill chunk beside its windows, fixed lengths (planner.budget.plan)
    by_gpu: dict = field(default_factory=dict, compare=False)  # GPU id -> these costs on it (:meth:`on`)

    def overhead(self, gpu) -> int:
        """Overhead per GPU on ``gpu``: its size class picks vLLM's scheduler defaults [bytes]."""
        return self.overheads[is_large_datacenter_gpu(gpu.framework_memory_bytes, gpu.id)]

    def on(self, gpu) -> CandidateCosts:
        """These costs on ``gpu`` as :func:`planner.budget.plan` counts them there (:func:`_on_each_gpu`); these
        (its size class's) where the plan of that GPU could not be made."""
        return self.by_gpu.get(gpu.id, self)


def candidate_costs(model: ModelSpec, request: FindRequest, workload: Workload,
                     tp_sizes: tuple[int, ...], gpus) -> dict[tuple[int, str], CandidateCosts]:
    """Per (tp, kv dtype): weights, overhead per GPU size class of ``gpus`` and KV per sequence on
    one GPU (budget arithmetic of plan()), and the same on each of ``gpus`` (:meth:`CandidateCosts.on`). The KV
    format is the one vLLM stores on an NVIDIA GPU unless every one of ``gpus`` is an AMD GPU (a sparse-MLA model
    keeps bf16 or plain fp8 there, not fp8_ds_mla: :func:`planner.traffic.reverse.platform_groups` searches the two
    apart)."""
    platform = gpus[0].id if gpus and all(is_rocm_gpu(g.id) for g in gpus) else ""
    classes = {}
    for gpu in gpus:  # one GPU of each vLLM size class stands for the class
        classes.setdefault(is_large_datacenter_gpu(gpu.framework_memory_bytes, gpu.id), gpu)
    costs = {}
    active = active_parameters(model)
    decode_ctx = min(workload.max_model_len,
                     int(workload.prompt.mean_tokens + workload.output.mean_tokens / 2))
    for tp in tp_sizes:
        for kv in dict.fromkeys(request.kv_cache_dtypes):
            plan_request = PlanRequest(context_len=workload.max_model_len, weight_dtype=request.weight_dtype,
                                       kv_cache_dtype=kv, num_gpus=tp, block_size=request.block_size,
                                       gpu_memory_utilization=request.gpu_memory_utilization,
                                       overhead_bytes=request.overhead_bytes, **dict(request.engine_knobs))
            c = per_gpu_costs(model, plan_request, gpu_name=platform)
            overheads = {large: overhead_bytes(model, plan_request, gpu.framework_memory_bytes, gpu.id)
                         for large, gpu in classes.items()}
            dtypes = cache_dtypes(model, request.weight_dtype, kv, gpu_name=platform)
            name = stored_name(model, request, kv, platform)
            if (tp, name) in costs:
                continue  # "auto" and "bf16" resolve to the same cache (vLLM: "auto" and "fp8" to fp8_ds_mla)
            weights, paged, exact, extra = c.weights_bytes_per_gpu, c.profile_paged, c.profile_exact, ""
            if request.serving is not None:
                weights, overheads, paged, exact, extra = _serving_costs(model, request, plan_request, classes,
                                                                          weights, overheads, paged, exact)
            decode_seq = exact.bytes_per_sequence(decode_ctx)
            if name == FP8_DS_MLA and indexed_mla_layer(model) is not None:
                # the roofline reads the bytes the engine stores (sparse, full-attention MLA: linear); DeepSeek-V4's
                # pool pages (also fp8_ds_mla) keep the exact profile's bytes read
                decode_seq = stored_kv_bytes_per_token(model, dtypes, tp) * decode_ctx
            costs[(tp, name)] = _on_each_gpu(model, CandidateCosts(
                weights=weights, overheads=overheads,
                kv_name=name, kv_flag=kv,
                paged_per_seq=paged.bytes_per_sequence(workload.max_tokens),
                exact_decode_seq=decode_seq, profile=paged, active_params=active, launch_extra=extra,
                prefill_extra=c.prefill_tokens and paged.prefill_extra_bytes(workload.max_tokens, c.prefill_tokens)),
                plan_request if request.serving is None else replace(plan_request, serving=_vllm(request.serving)),
                gpus, workload.max_tokens)
    return costs


def _on_each_gpu(model: ModelSpec, c: CandidateCosts, plan_request: PlanRequest, gpus, tokens: int) -> CandidateCosts:
    """``c`` with :attr:`CandidateCosts.by_gpu`: on each of ``gpus``, the weights, overhead, paged profile,
    paged sequence of ``tokens`` and prefill chunk of :func:`planner.budget.plan_base` on that GPU (its overhead,
    not its size class's first GPU's; vLLM's layout for its kernels: datacenter Blackwell's block alignment, an MLA
    backend's block; its ``max_num_batched_tokens``: 2,048 on an L40S where an H100 batches 8,192), so a setup's
    users are Home's. GPUs that share every figure share one object."""
    by_gpu, shared = {}, {}
    for gpu in gpus:
        try:
            base = plan_base(model, gpu.framework_memory_bytes, plan_request, gpu.id)
        except ValueError:
            continue  # the size class's costs stand
        key = (base.weights_gpu, base.overhead_bytes, id(base.paged_gpu), base.prefill_tokens)
        if key not in shared:
            shared[key] = replace(
                c, weights=base.weights_gpu, overheads=dict.fromkeys((True, False), base.overhead_bytes),
                paged_per_seq=base.bytes_per_sequence(tokens)[0], profile=base.paged_gpu,
                prefill_extra=base.prefill_extra_bytes(tokens))
        by_gpu[gpu.id] = shared[key]
    return replace(c, by_gpu=by_gpu)


def stored_name(model: ModelSpec, request: FindRequest, kv: str, gpu_name: str = "") -> str:
    """The cache a setup of ``request`` with ``--kv-cache-dtype kv`` stores
    (:func:`planner.engines.vllm_kv_formats.stored_kv_name`); under the budget arithmetic (no engine) DeepSeek-V4's
    pool pages are ``fp8_ds_mla`` whatever ``kv`` (:func:`planner.engines.vllm_deepseek_v4.stored_name`, as
    :func:`planner.budget.plan` names them): one row per tensor-parallel size, as the Engine view's. ``gpu_name``:
    an AMD GPU's name stores no fp8_ds_mla ("" = an NVIDIA GPU)."""
    pid = profile_id(request)
    name = stored_kv_name(model, pid, kv, cache_dtypes(model, request.weight_dtype, kv).kv.name, gpu_name)
    return deepseek_v4_stored_name(model, OVERHEAD_PROFILE, name) if pid is None else name


def _vllm(features):
    """``features`` under vLLM's rules (Find's setups are ``vllm serve`` commands)."""
    return replace(features, engine="vllm")


def launch_kv_flag(model: ModelSpec, request: FindRequest, kv: str) -> str:
    """The ``--kv-cache-dtype`` a vLLM launch of a setup passes for the searched ``kv``: ``fp8`` for DeepSeek-V4
    where ``kv`` is one vLLM refuses for it (:func:`planner.engines.vllm_deepseek_v4.launch_kv_cache_dtype`, under
    the chosen profile, else the newest vLLM's), as the Engine page's launch command writes it; else ``kv``."""
    return launch_kv_cache_dtype(model, profile_id(request) or OVERHEAD_PROFILE, kv)


def profile_id(request: FindRequest) -> str | None:
    """The id of the engine profile ``request`` names (``find --engine``), None for the budget arithmetic: what
    :func:`planner.engines.vllm_kv_formats.stored_kv_name` reads to name the cache the engine stores."""
    return None if request.engine is None else engine_profile(request.engine).id


def _serving_costs(model: ModelSpec, request: FindRequest, plan_request: PlanRequest, classes: dict, weights: int,
                   overheads: dict, paged, exact):
    """The serving features (:mod:`planner.serving`) on one (tp, dtype) candidate: weights + extras, each
    size class's overhead + profile-pass extras (unless overridden), the KV profiles with the extra layers
    and token slots, and the vLLM flags for the launch command. The same arithmetic as
    :func:`planner.budget.plan` (its ``_apply_serving``)."""
    features = _vllm(request.serving)  # the setups are vllm serve commands
    dtypes = cache_dtypes(model, plan_request.weight_dtype, plan_request.kv_cache_dtype,
                          gpu_name=next(iter(classes.values())).id if classes else "")
    tp = plan_request.num_gpus
    new_overheads, effects = {}, None
    for large, gpu in classes.items():
        tokens = profile_pass_tokens(plan_request, gpu.framework_memory_bytes, gpu.id)
        effects = serving_effects(model, features, tensor_parallel_size=tp, dtypes=dtypes, gpu_id=gpu.id,
                                  weight_dtype_name=plan_request.weight_dtype, num_batched_tokens=tokens,
                                  encoder_chunk_budget_bytes=encoder_chunk_budget(
                                      gpu.framework_memory_bytes, gpu.framework_memory_bytes - weights))
        if plan_request.overhead_bytes is None:
            lm = estimate_overhead(model, dtypes.state.bytes_for(1), tp, plan_request.max_num_batched_tokens,
                                   gpu_memory_bytes=gpu.framework_memory_bytes, gpu_name=gpu.id)
            effects = effects.with_profile_peak(lm.activation_bytes + lm.logits_bytes)
        extra_act = 0 if plan_request.overhead_bytes is not None else effects.extra_activation_bytes
        new_overheads[large] = overheads[large] + extra_act
    if effects is None:  # no priced GPU: nothing is evaluated
        return weights, overheads, paged, exact, ""
    extra = effects.extra_kv_model
    paged = paged_with_serving(model, dtypes, replace(plan_request, serving=features), effects, paged)
    exact = effects.kv_profile(exact, None if extra is None else kv_profile(extra, dtypes, tp, 1))
    return (weights + effects.extra_weights_bytes, new_overheads, paged, exact,
            serving_launch_flags(features).get("vllm", ""))
