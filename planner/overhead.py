"""Overhead per GPU of the plain plan: the activation peak of vLLM's profile pass plus non-torch memory.

What :func:`planner.budget.plan` subtracts besides weights before the KV cache:
``max(forward, sampler)`` of a profile pass of ``max_num_batched_tokens`` tokens
and ``max_num_seqs`` sampled sequences, plus the runtime's non-torch memory. The
per-engine, per-version chains live in :mod:`planner.engines`; this is the one
estimate Home, the sweeps and the reverse planner share. It models the newest vLLM by default
(:data:`OVERHEAD_PROFILE`, v0.29+, the same profile ``--engine vllm`` uses), or the vLLM version a request
names (:attr:`planner.budget.PlanRequest.overhead_profile`, :func:`budget_profile`), and names that version in
its formula.

Sources: vLLM ``Worker.determine_available_memory`` (vllm/v1/worker/gpu_worker.py),
``memory_profiling`` (vllm/utils/mem_utils.py); ENGINES.md 1.4-1.5.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from planner.model import ModelSpec
from planner.model.kv import cache_dtypes
from planner.model.memo import model_memo, remember
from planner.plan_types import DEFAULT_OVERHEAD_PROFILE
from planner.units import GiB, MiB
from planner.text import count_noun

if TYPE_CHECKING:  # annotations only (planner.budget imports this module)
    from planner.budget import PlanRequest

DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192
"""Tokens in the engine's largest forward pass when the GPU is not given: the newest vLLM's
``vllm serve`` default on datacenter GPUs (:func:`planner.engines.profiles.vllm_scheduler_defaults`,
profile ``vllm``; vllm/engine/arg_utils.py ``get_batch_defaults``, 2026 source) [tokens]."""

DEFAULT_MAX_NUM_SEQS = 1024
"""Sequences sampled in one step: vLLM ``vllm serve``'s ``max_num_seqs`` default on
datacenter GPUs (vllm/engine/arg_utils.py ``_set_default_args``; ENGINES.md 1.5)."""

OVERHEAD_PROFILE = DEFAULT_OVERHEAD_PROFILE
"""Engine profile whose overhead terms the default plan uses: the newest vLLM, as ``--engine vllm``
(planner.engines.profiles). Any vLLM profile id can be passed to :func:`estimate_overhead`; a plan takes its
request's :attr:`planner.budget.PlanRequest.overhead_profile` (:func:`plan_overhead`)."""


def budget_profile(engine: str) -> str:
    """The vLLM profile whose overhead the budget prices beside a launch of ``engine`` (a key of
    :data:`planner.engines.profiles.ENGINE_PROFILES`): ``engine`` itself where it is a vLLM version the budget can
    price, else :data:`OVERHEAD_PROFILE` (:meth:`planner.budget.PlanRequest.for_engine`).

    Raises:
        ValueError: unknown engine.
    """
    from planner.plan_types import PlanRequest  # noqa: PLC0415 - the one rule, PlanRequest.for_engine's

    return PlanRequest(context_len=1).for_engine(engine)[0].overhead_profile


UNCLAMPED_LENGTH = 1 << 24
"""A ``max_model_len`` past vLLM's clamp of a defaulted token budget to ``max_num_seqs x max_model_len``
(:func:`planner.engines.profiles.vllm_batch_limits`), for the context-free overhead [tokens]."""


@lru_cache(maxsize=4096)
def _clamp_below(profile_id: str, gpu_memory_bytes: int, gpu_name: str, usage_context: str,
                 max_num_batched_tokens: int | None, max_num_seqs: int | None) -> int:
    from planner.engines.profiles import batch_limits_clamp_below, engine_profile  # noqa: PLC0415 - import cycle

    return batch_limits_clamp_below(engine_profile(profile_id), gpu_memory_bytes, gpu_name, usage_context,
                                    max_num_batched_tokens, max_num_seqs)


def budget_max_model_len(request: "PlanRequest", gpu_memory_bytes: int | None, gpu_name: str,
                         profile_id: str | None = None) -> int:
    """The ``max_model_len`` the budget's overhead hands :func:`planner.engines.profiles.vllm_batch_limits`, the
    one rule the Engine view applies too [tokens]: the plan's ``context_len`` (the launch's ``--max-model-len``, as
    Home's engine panel and ``plan`` launch it) where it is below the length at which the profile clamps a defaulted
    ``max_num_batched_tokens`` to ``max_num_seqs x max_model_len``, else :data:`UNCLAMPED_LENGTH`, so every longer
    plan shares one context-free overhead.

    Worked example: ``--max-num-seqs 1`` at 2,048 tokens on an H100 under the newest vLLM profiles 1 x 2,048 =
    2,048 tokens, not the 8,192 ``vllm serve`` defaults to (QA: the budget charged an 8,192-token pass, the Engine
    view 2,048). Profiles without the clamp (``vllm-v0.11`` and older) are left as they are. ``profile_id``: the
    vLLM profile whose clamp applies (None: the request's ``overhead_profile``, the one its overhead prices).

    Sources: vllm/engine/arg_utils.py ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args`` (2026
    source: only a defaulted token budget is capped by ``max_num_seqs x max_model_len``); the v0.10 / v0.11 source
    set the default in ``_set_default_args_v1`` with no cap, and vllm/config.py ``SchedulerConfig.__post_init__``
    capped only a budget still unset, which the V1 defaults had already set
    (:data:`planner.engines.profiles.CLAMPING_PROFILES`).
    """
    memory, name = (80 * GiB, "") if gpu_memory_bytes is None else (gpu_memory_bytes, gpu_name)
    if profile_id is None:  # the request's vLLM (PlanRequest.overhead_profile), whose clamp its overhead follows
        profile_id = getattr(request, "overhead_profile", OVERHEAD_PROFILE)
    below = _clamp_below(profile_id, memory, name, request.usage_context, request.max_num_batched_tokens,
                         request.max_num_seqs)
    return request.context_len if request.context_len < below else UNCLAMPED_LENGTH


@dataclass(frozen=True, kw_only=True)
class OverheadEstimate:
    """Memory per GPU that is neither weights nor KV cache.

    Attributes:
        activation_bytes: Forward-pass activation peak, when it is the larger peak [bytes].
        logits_bytes: Sampler (logits) peak, when it is the larger peak [bytes].
        runtime_bytes: Non-torch runtime memory [bytes].
        overridden: True when the user supplied the total.
        formula: The arithmetic as text, for the formula panel.
        cudagraph_bytes: The CUDA-graph memory the profile's release estimates and takes from the KV cache
            before sizing it (0 where graphs are captured after the KV cache) [bytes].
        runner_bytes: What Model Runner V2 keeps through the profile pass beside the peak: its per-sequence
            sampler state and a first launch's torch.compile [bytes].
        loading_bytes: What the weights take on the GPU beyond the checkpoint's bytes, as the newest vLLM loads
            them (its kernels' layouts, such as MXFP4 experts padded for Marlin on Ampere, and the caching
            allocator's rounding of each tensor) [bytes] (:func:`weights_loading_bytes`).
    """

    activation_bytes: int
    logits_bytes: int
    runtime_bytes: int
    overridden: bool
    formula: str
    cudagraph_bytes: int = 0
    runner_bytes: int = 0
    loading_bytes: int = 0

    @property
    def total_bytes(self) -> int:
        """Sum of the terms [bytes]."""
        return (self.activation_bytes + self.logits_bytes + self.runtime_bytes + self.cudagraph_bytes
                + self.runner_bytes + self.loading_bytes)


def weights_loading_bytes(model: ModelSpec, weight_dtype_name: str, tensor_parallel_size: int, gpu_name: str,
                          checkpoint_bytes: int, profile_id: str = OVERHEAD_PROFILE) -> int:
    """What one GPU's weights take beyond the checkpoint's bytes when ``profile_id``'s vLLM loads them [bytes].

    ``loaded - checkpoint_bytes``, at least 0, with ``loaded`` what the Engine view counts as "Model loading
    took" (:func:`planner.engines.loaded.loaded_weight_bytes` in the layout this release's kernels use on this
    GPU, plus :func:`planner.engines.weight_tensors.vllm_allocator_rounding_bytes`). The plan keeps the
    checkpoint's bytes as its weights (what transformers counts) and charges this difference as overhead, so its
    KV budget is the Engine view's. Worked examples (newest vLLM): Llama-3-8B bf16 on an H100, 2.2 MB of
    rounding; gpt-oss-120b on an A100 (Marlin's padded MXFP4 experts), about 5.2 GiB.

    Args:
        model: The model.
        weight_dtype_name: Key of :data:`planner.model.dtypes.WEIGHT_DTYPES` (``auto``: the checkpoint's).
        tensor_parallel_size: GPUs one layer is split over.
        gpu_name: GPU name or catalog id (the kernel a release picks by compute capability).
        checkpoint_bytes: The checkpoint's weight bytes on one GPU (the plan's ``weights_bytes_per_gpu``).
        profile_id: The vLLM profile (default the newest).
    """
    memo = model_memo(model)
    key = ("weights_loading_bytes", weight_dtype_name, tensor_parallel_size, gpu_name, checkpoint_bytes, profile_id)
    found = memo.get(key)
    if found is None:
        found = remember(memo, key, _weights_loading_bytes(model, weight_dtype_name, tensor_parallel_size, gpu_name,
                                                           checkpoint_bytes, profile_id))
    return found


def _weights_loading_bytes(model: ModelSpec, weight_dtype_name: str, tensor_parallel_size: int, gpu_name: str,
                           checkpoint_bytes: int, profile_id: str) -> int:
    """:func:`weights_loading_bytes` without the memo."""
    from planner.engines.loaded import (  # noqa: PLC0415 - import cycle (planner.engines imports the budget)
        loaded_weight_bytes,
        nvfp4_swizzles,
        vllm_mxfp4_layout,
    )
    from planner.engines.weight_tensors import vllm_allocator_rounding_bytes  # noqa: PLC0415
    from planner.model.dtypes import weight_dtype  # noqa: PLC0415

    fmt, layout = weight_dtype(weight_dtype_name), vllm_mxfp4_layout(profile_id, gpu_name)
    loaded = (loaded_weight_bytes(model, fmt, tensor_parallel_size, mxfp4=layout,
                                  nvfp4_swizzle=nvfp4_swizzles(gpu_name))
              + vllm_allocator_rounding_bytes(model, fmt, tensor_parallel_size, mxfp4=layout))
    return max(0, loaded - checkpoint_bytes)


def estimate_overhead(
    model: ModelSpec,
    activation_bytes_per_element: int,
    tensor_parallel_size: int = 1,
    max_num_batched_tokens: int | None = None,
    max_num_seqs: int | None = None,
    *,
    gpu_memory_bytes: int | None = None,
    gpu_name: str = "",
    profile_id: str = OVERHEAD_PROFILE,
    speculative_method: str | None = None,
    num_speculative_tokens: int = 0,
    pipeline_parallel_size: int = 1,
    knobs: tuple[tuple[str, object], ...] = (),
    max_model_len: int = UNCLAMPED_LENGTH,
    moe_data_parallel=None,
    weight_dtype_name: str = "auto",
) -> OverheadEstimate:
    """Activation + runtime overhead per GPU, as vLLM's profile run measures it (an estimate).

    ``activation = max(forward, sampler)`` with ``forward = T x e x (3 h +
    max(attention, mlp) / tp)`` and ``sampler = min(S, T) x vocab x 38 B + T x h x e``
    for ``T = max_num_batched_tokens`` tokens of ``e`` bytes and ``S = max_num_seqs``
    (:func:`planner.engines.overheads.activation_estimate`); ``runtime`` = vLLM's non-torch
    memory (133 MiB, plus 430 MiB of NCCL and custom all-reduce buffers when ``tp > 1`` on
    one NVLink node). The profile is the newest vLLM's (:data:`OVERHEAD_PROFILE`, v0.29+):
    16,384 tokens and 1,024 sequences on GPUs of 70 GiB or more that are not A100s.
    Llama-3.1-8B on an H100 (case V20): 1,024 x 128,256 x 38 + 16,384 x 4,096 x 2 B =
    4.77 GiB of sampler peak (vLLM 0.11, profiling 8,192 tokens, measured 4.76 GiB).
    The release's own charges beside the peak are the Engine view's (``--engine vllm``, the same functions),
    so Home and the Engine page size the same KV cache for the same link: the CUDA-graph memory it
    estimates before sizing the KV cache (:func:`planner.engines.vllm_cudagraph.request_cudagraphs`, where
    :func:`planner.engines.vllm_runner.graphs_charged`), and on Model Runner V2 its sampler state
    (:func:`planner.engines.vllm_runner.v2_state_bytes`) and a first launch's compile
    (:func:`planner.engines.vllm_runner.first_compile_bytes`). Users can override the total.

    Args:
        model: The model.
        activation_bytes_per_element: Bytes of one activation element (2 for bf16).
        tensor_parallel_size: GPUs one layer is split over.
        max_num_batched_tokens, max_num_seqs: The profile pass [tokens] and the
            sequences sampled [sequences]; None = what ``vllm serve`` picks for
            this GPU under ``profile_id`` (:func:`planner.engines.profiles.vllm_scheduler_defaults`:
            16,384 / 1,024 for the newest vLLM on GPUs of 70 GiB or more that are not A100s,
            else 2,048 / 256), or the large-GPU pair when ``gpu_memory_bytes`` is None.
        gpu_memory_bytes: Framework-visible memory of the GPU [bytes], for the defaults.
        gpu_name: GPU name or catalog id (the A100 exception of the defaults).
        profile_id: The vLLM profile whose scheduler defaults and sampler apply (default the
            newest; ``vllm-v0.11`` etc. for an older release).
        speculative_method: The serving features' speculative decoding method, if any: it picks the model runner
            as the Engine view does (:func:`planner.engines.vllm_runner.model_runner`: n-gram drafting keeps the
            V1 runner, whose sampler, CUDA graphs and state differ from V2's).
        num_speculative_tokens: Its draft tokens per step k: V2's structured-output state holds 1 + k rows per
            sequence slot (:func:`planner.engines.vllm_runner.v2_state_bytes`).
        pipeline_parallel_size: Stages of the replica whose one stage this is: the pipeline group's buffers join
            the non-torch memory (:func:`planner.engines.overheads.vllm_non_torch_bytes`).
        knobs: ``(field, value)`` of the launch's other vLLM knobs set off their default
            (:meth:`planner.budget.PlanRequest.engine_knobs`: ``usage_context``, ``enforce_eager``, ``cudagraph_mode``,
            ``optimization_level``, ``max_cudagraph_capture_size``, ``warm_compile_cache``, fields of the
            :class:`planner.engines.types.EngineRequest` the overhead plans with), each taken as the Engine view
            takes it: the
            start mode picks the scheduler defaults, a defaulted ``max_num_seqs`` is at most the token budget
            (:func:`planner.engines.profiles.vllm_batch_limits`), ``--enforce-eager`` / ``cudagraph_mode`` /
            ``-O`` / ``max_cudagraph_capture_size`` size the CUDA graphs
            (:func:`planner.engines.vllm_cudagraph.request_cudagraphs`) and, with a warm compile cache, V2's first
            compile (:func:`planner.engines.vllm_runner.first_compile_bytes`). QA: Kimi-K2.5 on 8 H200 at 65,536
            tokens with ``--max-num-seqs 64``: 51.53 GiB of KV per GPU in the Engine view, 50.38 in the budget
            before the budget took the knobs.
        max_model_len: The launch's ``max_model_len`` for vLLM's cap of a defaulted token budget
            (:func:`budget_max_model_len`); the default is past every cap.
        moe_data_parallel: The :class:`planner.engines.vllm_moe_dispatch.DataParallelMoE` of a data-parallel MoE
            launch whose one rank this is (:attr:`planner.budget.PlanRequest.moe_data_parallel`), or None. vLLM's
            profile run then gathers every rank's ``max_num_batched_tokens`` into each MoE layer
            (vllm/model_executor/layers/fused_moe/prepare_finalize/naive_dp_ep.py, the ``allgather_reducescatter``
            default of vllm/config/parallel.py; v0.10 / v0.11: vllm/distributed/device_communicators/all2all.py):
            the forward peak is the larger of the plain one and that layer's
            (:func:`planner.engines.vllm_moe_dispatch.moe_dispatch_peak`, as the Engine view charges it in
            planner/engines/vllm.py ``_rank_budget``), and the DP group's NCCL buffers join the non-torch memory.
            QA: DeepSeek-V3.2 on an H200 at 32,768 tokens under ``-dp 8 --enable-expert-parallel``: 15.81 GiB of
            peak, the budget's 19 users per rank against the launch's 9 before it was charged.
        weight_dtype_name: The request's weight dtype (the experts' format sets that peak's fp8 copies).

    Returns:
        An :class:`OverheadEstimate` [bytes].

    Sources: vLLM ``memory_profiling`` (vllm/utils/mem_utils.py) and
    ``_dummy_sampler_run`` (vllm/v1/worker/gpu_model_runner.py); vLLM
    ``EngineArgs._set_default_args`` (vllm/engine/arg_utils.py) for the scheduler
    defaults; ENGINES.md 1.4-1.5; planner/engines/overheads.py and
    planner/engines/profiles.py for the constants.

    Memoized per model object and arguments (:mod:`planner.model.memo`): plans,
    sweeps and the GPU-count suggestion ask for the same estimate many times.
    """
    memo = model_memo(model)
    key = ("estimate_overhead", activation_bytes_per_element, tensor_parallel_size, max_num_batched_tokens,
           max_num_seqs, gpu_memory_bytes, gpu_name, profile_id, speculative_method, num_speculative_tokens,
           pipeline_parallel_size, knobs, max_model_len, moe_data_parallel,
           weight_dtype_name if moe_data_parallel else "")
    estimate = memo.get(key)
    if estimate is None:
        estimate = remember(memo, key, _estimate_overhead(
            model, activation_bytes_per_element, tensor_parallel_size, max_num_batched_tokens, max_num_seqs,
            gpu_memory_bytes, gpu_name, profile_id, speculative_method, num_speculative_tokens,
            pipeline_parallel_size, knobs, max_model_len, moe_data_parallel, weight_dtype_name))
    return estimate


def _estimate_overhead(model: ModelSpec, activation_bytes_per_element: int, tensor_parallel_size: int,
                       max_num_batched_tokens: int | None, max_num_seqs: int | None, gpu_memory_bytes: int | None,
                       gpu_name: str, profile_id: str = OVERHEAD_PROFILE,
                       speculative_method: str | None = None, num_speculative_tokens: int = 0,
                       pipeline_parallel_size: int = 1, knobs: tuple[tuple[str, object], ...] = (),
                       max_model_len: int = UNCLAMPED_LENGTH, moe_data_parallel=None,
                       weight_dtype_name: str = "auto") -> OverheadEstimate:
    """:func:`estimate_overhead` without the memo."""
    from planner.engines.overheads import activation_estimate, vllm_non_torch_bytes  # noqa: PLC0415
    from planner.scale.layout import DEFAULT_GPUS_PER_NODE  # noqa: PLC0415
    from planner.engines.profiles import engine_profile, vllm_batch_limits  # noqa: PLC0415 - import cycle
    from planner.engines.types import EngineRequest  # noqa: PLC0415
    from planner.engines.vllm_cudagraph import request_cudagraphs  # noqa: PLC0415
    from planner.engines.vllm_moe_dispatch import moe_dispatch_peak  # noqa: PLC0415
    from planner.serving.features import ServingFeatures  # noqa: PLC0415
    from planner.serving.speculative import SpeculativeConfig  # noqa: PLC0415
    from planner.engines.vllm_runner import (  # noqa: PLC0415
        first_compile_bytes,
        graphs_charged,
        model_runner,
        sampler_bytes_per_logit,
        v2_state_bytes,
    )

    profile = engine_profile(profile_id)
    if profile.family != "vllm":
        raise ValueError(f"the plan's overhead follows a vLLM profile; {profile_id!r} is {profile.family}")
    # the Engine view's limits (planner/engines/vllm.py _static_plan_at), at max_model_len: budget_max_model_len's
    # length where the profile caps a defaulted token budget, else one past every cap (one overhead for all lengths)
    memory, name = (80 * GiB, "") if gpu_memory_bytes is None else (gpu_memory_bytes, gpu_name)
    engine_knobs = dict(knobs)
    usage = engine_knobs.get("usage_context", "serve")
    tokens, seqs = vllm_batch_limits(profile, memory, name, max_model_len, usage,
                                     max_num_batched_tokens=max_num_batched_tokens or None,
                                     max_num_seqs=max_num_seqs or None)
    tp, e = tensor_parallel_size, activation_bytes_per_element
    engine_request = EngineRequest(engine=profile.id, gpu_name=gpu_name, tensor_parallel_size=tp, **engine_knobs)
    if speculative_method is not None:  # the method picks the runner and the draft tokens the CUDA-graph sizes
        # (request_cudagraphs: uniform-decode batches of 1 + k tokens a sequence); the drafter's costs are the features'
        speculative = SpeculativeConfig(method=speculative_method,
                                        num_speculative_tokens=max(num_speculative_tokens, 1))
        engine_request = replace(engine_request, serving=ServingFeatures(engine=profile.id, speculative=speculative))
    runner = model_runner(model, profile.id, engine_request)
    # a pipeline stage samples only as the last one, which holds the LM head (planner.engines.loaded.stage_params;
    # the Engine view's last_stage, planner/engines/vllm.py _rank_budget)
    last = pipeline_parallel_size == 1 or any(g.kind == "lm_head" for g in model.params)
    act = activation_estimate(
        model, num_tokens=tokens, num_seqs=seqs,
        bytes_per_logit=sampler_bytes_per_logit(profile, runner, e, engine_request), activation_bytes=e,
        tensor_parallel_size=tp, last_stage=last)
    moe = moe_data_parallel and moe_dispatch_peak(model, moe_data_parallel, profile.id, num_tokens=tokens,
                                                  activation_bytes=e, weight_dtype_name=weight_dtype_name,
                                                  gpu_name=gpu_name)
    if moe:  # every DP rank's tokens in each MoE layer: the Engine view's charge (planner/engines/vllm.py _rank_budget)
        act = replace(act, forward_bytes=max(act.forward_bytes, moe.peak_bytes))
    if gpu_name:  # the Engine view's rule by topology (NVLink or PCIe, NVLS on NVSwitch boards), on the fewest
        # nodes of DEFAULT_GPUS_PER_NODE that hold the replica: one wider than a node runs only across nodes
        # (planner.engines.replica_layout), where its groups use the network (DeepSeek-V3 on 16 H100: 26.48 GiB of
        # KV per GPU priced on one node, 27.88 in the engine view over the 2 nodes it needs)
        nodes = max(1, -(-tp * pipeline_parallel_size // DEFAULT_GPUS_PER_NODE))
        runtime = vllm_non_torch_bytes(profile.non_torch_bytes, tensor_parallel_size=tp,
                                       pipeline_parallel_size=pipeline_parallel_size, num_nodes=nodes,
                                       gpu_name=gpu_name)
    else:  # no GPU named: one NVLink node's process group
        runtime = profile.non_torch_bytes + (profile.non_torch_multi_gpu_bytes if tp * pipeline_parallel_size > 1
                                             else 0)
    if moe:
        runtime += moe.group_bytes
    runner_bytes = first_compile_bytes(engine_request, runner) + (
        v2_state_bytes(model, max_num_seqs=seqs, max_num_batched_tokens=tokens, last_stage=last,
                       num_speculative_tokens=num_speculative_tokens) if runner == "v2" else 0)
    charged = graphs_charged(profile, runner)
    graphs = request_cudagraphs(model, engine_request, profile.id, num_layers=model.num_layers,
                                max_num_batched_tokens=tokens, max_num_seqs=seqs, activation_bytes=e,
                                estimated=charged).total_bytes if charged else 0
    dispatch = (f" (the data-parallel MoE layer's profile peak, {moe.peak_bytes / MiB:,.0f} MiB for "
                f"{moe.gathered_tokens:,} gathered tokens, with {moe.group_bytes / MiB:,.0f} MiB of DP-group NCCL "
                "buffers in the non-torch term)" if moe else "")
    formula = (f"{act.formula}{dispatch} + {runtime / MiB:,.0f} MiB non-torch"
               + (f" + {graphs / MiB:,.0f} MiB CUDA graphs" if graphs else "")
               + (f" + {runner_bytes / MiB:,.0f} MiB model runner V2 state and first compile" if runner_bytes else "")
               + f" ({profile.version} profile run: {count_noun(tokens, 'token')}, {count_noun(seqs, 'sequence')})")
    return OverheadEstimate(
        activation_bytes=act.forward_bytes if act.forward_bytes >= act.sampler_bytes else 0,
        logits_bytes=act.sampler_bytes if act.sampler_bytes > act.forward_bytes else 0,
        runtime_bytes=runtime, overridden=False, formula=formula, cudagraph_bytes=graphs, runner_bytes=runner_bytes,
    )


def overhead_bytes(model: ModelSpec, request: "PlanRequest", gpu_memory_bytes: int | None = None,
                   gpu_name: str = "", tensor_parallel_size: int | None = None) -> int:
    """Per-GPU overhead for ``request``: its ``overhead_bytes`` override, else :func:`estimate_overhead`.

    Args:
        model: The model.
        request: Knobs (dtypes, ``max_num_batched_tokens``, the override).
        gpu_memory_bytes, gpu_name: The GPU, for vLLM's scheduler defaults (None = a large GPU).
        tensor_parallel_size: GPUs one layer is split over; None = ``request.num_gpus``.

    Returns:
        Overhead per GPU [bytes], with :func:`weights_loading_bytes` (as :func:`planner.budget.plan` charges it).
    """
    if request.overhead_bytes is not None:
        return request.overhead_bytes
    from planner.model.params import model_weight_bytes  # noqa: PLC0415

    tp = request.num_gpus if tensor_parallel_size is None else tensor_parallel_size
    return plan_overhead(model, request, gpu_memory_bytes, gpu_name, tp,
                         model_weight_bytes(model, request.weight_dtype, tp)).total_bytes


def plan_overhead(model: ModelSpec, request: "PlanRequest", gpu_memory_bytes: int | None, gpu_name: str,
                  tensor_parallel_size: int, checkpoint_bytes: int) -> OverheadEstimate:
    """The plan's overhead with its parts: :func:`estimate_overhead` plus :func:`weights_loading_bytes` (what
    :func:`planner.budget.plan` and :func:`overhead_bytes` subtract; ``request.overhead_bytes`` is not read).

    Args:
        model, request: The model and the plan's knobs (dtypes, ``max_num_batched_tokens``, the vLLM profile
            ``overhead_profile``).
        gpu_memory_bytes, gpu_name: The GPU (None / "" = a large GPU on one NVLink node).
        tensor_parallel_size: GPUs one layer is split over.
        checkpoint_bytes: The checkpoint's weight bytes on one GPU [bytes].
    """
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    spec = None if request.serving is None else request.serving.speculative
    overhead = estimate_overhead(model, dtypes.state.bytes_for(1), tensor_parallel_size, request.max_num_batched_tokens,
                                 gpu_memory_bytes=gpu_memory_bytes, gpu_name=gpu_name,
                                 speculative_method=None if spec is None else spec.method,
                                 num_speculative_tokens=0 if spec is None else spec.num_speculative_tokens,
                                 pipeline_parallel_size=getattr(request, "pipeline_parallel_size", 1),
                                 max_num_seqs=request.max_num_seqs, knobs=request.engine_knobs(),
                                 max_model_len=budget_max_model_len(request, gpu_memory_bytes, gpu_name,
                                                                    request.overhead_profile),
                                 profile_id=request.overhead_profile,
                                 moe_data_parallel=getattr(request, "moe_data_parallel", None),
                                 weight_dtype_name=request.weight_dtype)
    loading = weights_loading_bytes(model, request.weight_dtype, tensor_parallel_size, gpu_name, checkpoint_bytes,
                                    request.overhead_profile)
    if not loading:
        return overhead
    return replace(overhead, loading_bytes=loading, formula=f"{overhead.formula} + {loading / MiB:,.0f} MiB of weights "
                   "as vLLM loads them beyond the checkpoint (layouts, allocator rounding)")
