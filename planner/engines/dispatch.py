"""Engine-faithful plans: what vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp or transformers allocate.

Public API:

* :class:`EngineRequest` -> :func:`plan_engine` -> :class:`EnginePlan` (one
  :class:`RankBudget` per pipeline stage; numbers per GPU).
* :func:`reproduce_printed` -- given the engine's own "Available KV cache
  memory" (or K + V size, or allocation), the token capacity and concurrency it
  prints.
* :data:`ENGINE_CHOICES` / :func:`engine_profile` -- the profiles.

The v1 :func:`planner.budget.plan` is untouched; the CLI merges both.

Design notes:
    1. Budgets are per GPU, never pooled: tensor parallelism splits weights
       (norms replicated) and KV heads (``max(1, kv_heads // tp)``; an MLA latent
       on every GPU); pipeline parallelism splits layers, and the engine keeps the
       *minimum* blocks over GPUs; data parallelism multiplies replicas only.
    2. "Does not fit" / "would not start" is a result (``starts`` False, with the
       engine's own message and the largest ``max_model_len`` it would accept);
       ``ValueError`` is raised only for invalid inputs.

Sources: ENGINES.md (per-engine source files are cited in
:mod:`planner.engines.vllm` and :mod:`planner.engines`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from operator import itemgetter

from planner.diagnose import tensor_parallel_splits
from planner.engines.block_sizes import vllm_block_size_problem
from planner.engines.hf_transformers import plan_transformers
from planner.engines.llamacpp import plan_llamacpp
from planner.engines.profiles import (
    DEFAULT_ENGINE,
    ENGINE_CHOICES,
    ENGINE_PROFILES,
    EngineProfile,
    engine_profile,
    resolve_engine_name,
)
from planner.engines.expected_error import known_misses
from planner.engines.serving import with_serving
from planner.engines.sglang import plan_sglang
from planner.engines.tgi import plan_tgi
from planner.engines.trtllm import plan_trtllm
from planner.engines.types import EnginePlan, EngineRequest, RankBudget, stopped_before_load
from planner.engines.vllm import plan_vllm
from planner.model import ModelSpec
from planner.model.memo import model_memo, remember

_PLANNERS = {
    "vllm": plan_vllm, "sglang": plan_sglang, "trtllm": plan_trtllm, "tgi": plan_tgi,
    "llama.cpp": plan_llamacpp, "transformers": plan_transformers,
}


def _check_engine_dtype(profile: EngineProfile, request: EngineRequest) -> None:
    if request.kv_cache_dtype not in profile.kv_cache_dtypes:
        hint = ""
        if request.kv_cache_dtype in ("bf16", "fp16", "fp32") and "auto" in profile.kv_cache_dtypes:
            hint = " (auto keeps the cache in the model's own 16-bit dtype)"
        raise ValueError(f"{profile.id} does not offer KV-cache dtype {request.kv_cache_dtype!r}; "
                         f"choose one of {', '.join(profile.kv_cache_dtypes)}{hint}")
    v_dtype = request.kv_cache_dtype_v
    if v_dtype is not None and v_dtype != request.kv_cache_dtype:
        if profile.family != "llama.cpp":
            raise ValueError(f"{profile.id} stores K and V in one dtype; a separate V-cache dtype ({v_dtype!r}) is "
                             "llama.cpp's -ctv only")
        if v_dtype not in profile.kv_cache_dtypes:
            raise ValueError(f"{profile.id} does not offer V-cache dtype {v_dtype!r}; "
                             f"choose one of {', '.join(profile.kv_cache_dtypes)}")


def plan_engine(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest) -> EnginePlan:
    """Plan ``model`` under ``request.engine`` on GPUs of ``gpu_memory_bytes`` each.

    Args:
        model: The model (from ``model_catalog.model_spec`` or built by hand).
        gpu_memory_bytes: Framework-visible memory of one GPU
            (``torch.cuda.mem_get_info()[1]``) [bytes], > 0.
        request: Engine, knobs and optional measured overrides.

    Returns:
        An :class:`EnginePlan`; ``starts`` False with reasons when the engine
        would refuse to start.

    Raises:
        ValueError: invalid request fields, an engine/KV-dtype combination the
            engine does not offer, ``pipeline_parallel_size`` above the layer
            count, or ``gpu_memory_bytes <= 0``.
    """
    memo = model_memo(model)
    key = ("engine_request", gpu_memory_bytes, _LENGTH_FREE_FIELDS(request.__dict__))
    try:
        checked = memo.get(key)
    except TypeError:  # an unhashable field (a caller's list, say): validate() names it
        checked = None
    if checked is None:
        checked = _check_request(model, gpu_memory_bytes, request)
        try:
            remember(memo, key, checked)
        except TypeError:
            pass
    elif request.max_model_len is not None and request.max_model_len < 1:  # these other fields passed the checks
        request.validate_max_model_len()  # raises
    if checked.engine != request.engine:  # another spelling ("vLLM", "tensorrt-llm")
        request = replace(request, engine=checked.engine)
    profile = checked.profile
    if profile.family == "vllm":
        result = plan_vllm(model, gpu_memory_bytes, request, profile, static_slot=checked.static_slot)
    else:
        result = _PLANNERS[profile.family](model, gpu_memory_bytes, request, profile)
    if request.serving is not None:  # serving features: the serving block, notes, launch flags
        result = with_serving(model, request, profile, result)
    if not checked.splits:
        result = _refused_at_config_check(model, request, result)
    if misses := known_misses(model, request, profile.family):  # the bench's uncounted misses of this kind
        result = replace(result, known_misses=misses)
    return result


_LENGTH_FREE_FIELDS = itemgetter(*(f.name for f in fields(EngineRequest) if f.name != "max_model_len"))
"""Every :class:`EngineRequest` field but ``max_model_len``, read from the request's ``__dict__`` as one tuple
(the key of a checked request in the model's memo; by name from the dict: cheaper than ``attrgetter``)."""


@dataclass(frozen=True)
class _CheckedRequest:
    """What :func:`plan_engine` knows of a request whose fields but ``max_model_len`` passed its checks.

    Kept in the model's memo (:mod:`planner.model.memo`) under the GPU memory and those fields, so a
    request that differs only in ``max_model_len`` is validated, resolved and keyed once.

    Attributes:
        engine: The profile id the request's engine name means (:func:`resolve_engine_name`).
        profile: That profile.
        splits: False when the engine splits heads and cannot split them over ``tensor_parallel_size``.
        static_slot: Where the vLLM planner keeps its length-free plan for these fields
            (:func:`planner.engines.vllm.plan_vllm`); empty for the other engines.
    """

    engine: str
    profile: EngineProfile
    splits: bool
    static_slot: dict = field(default_factory=dict, compare=False, repr=False)


def _check_request(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest) -> _CheckedRequest:
    """Resolve the engine's name and check every field and combination (raises as :func:`plan_engine`)."""
    engine = request.engine if request.engine in ENGINE_PROFILES else resolve_engine_name(request.engine)
    if engine != request.engine:
        request = replace(request, engine=engine)
    request.validate()
    if gpu_memory_bytes <= 0:
        raise ValueError(f"gpu_memory_bytes must be > 0, got {gpu_memory_bytes}")
    if request.memory_in_use_bytes >= gpu_memory_bytes:
        raise ValueError(f"memory in use by other processes ({request.memory_in_use_bytes / (1 << 30):.2f} GiB) must "
                         f"be less than the GPU's {gpu_memory_bytes / (1 << 30):.2f} GiB; give what they hold on one GPU")
    if request.pipeline_parallel_size > model.num_layers:
        raise ValueError(f"pipeline_parallel_size {request.pipeline_parallel_size} exceeds the model's "
                         f"{model.num_layers} layers; choose at most {model.num_layers}")
    profile = ENGINE_PROFILES.get(engine) or engine_profile(engine)
    if profile.family != "vllm" and (request.cudagraph_mode is not None or request.optimization_level is not None
                                     or request.max_cudagraph_capture_size is not None):
        raise ValueError(f"--cudagraph-mode, -O and --max-cudagraph-capture-size are vLLM flags; {engine} does not "
                         "take them (drop them, or pick a vLLM engine)")
    if profile.family == "vllm" and request.block_size is not None and (
            problem := vllm_block_size_problem(request.block_size, profile_id=profile.id)):
        raise ValueError(problem)  # vLLM finds no attention backend for it (planner.engines.block_sizes)
    if request.kv_cache_dtype not in profile.kv_cache_dtypes or request.kv_cache_dtype_v is not None:
        _check_engine_dtype(profile, request)  # raises for a combination the engine does not offer
    splits = (profile.family not in HEAD_SPLITTING_FAMILIES
              or tensor_parallel_splits(model, request.tensor_parallel_size))
    return _CheckedRequest(engine=engine, profile=profile, splits=splits)


HEAD_SPLITTING_FAMILIES = frozenset({"vllm", "sglang", "trtllm", "tgi"})
"""Engines that split attention heads over tensor-parallel GPUs and check divisibility before loading
(vLLM ``verify_with_parallel_config``; SGLang ``ModelConfig`` head checks; TensorRT-LLM and TGI
head sharding). llama.cpp splits by layers and transformers' ``device_map`` by modules: any count works."""


def _refused_at_config_check(model: ModelSpec, request: EngineRequest, result: EnginePlan) -> EnginePlan:
    """The engine stops before loading weights: no blocks, tokens, concurrency or memory print.

    The per-rank arithmetic stays (it shows what the split would have cost); the
    printed figures are zeroed because the engine never reaches them.
    """
    tp = request.tensor_parallel_size
    reason = (f"Total number of attention heads ({model.num_attention_heads}) must be divisible by tensor parallel "
              f"size ({tp}), and num_key_value_heads ({model.num_key_value_heads}) divisible by it or dividing it; "
              "choose a tensor_parallel_size that divides the heads")
    return EnginePlan._from_parts(vars(result), {  # dataclasses.replace, without the frozen __init__
        "starts": False, "reasons": (reason, *result.reasons), **stopped_before_load(vars(result))})


def reproduce_printed(model: ModelSpec, request: EngineRequest, available_kv_bytes: int,
                      gpu_memory_bytes: int = 80 << 30) -> EnginePlan:
    """The engine's printed tokens and concurrency, from its own available-memory figure.

    Equivalent to :func:`plan_engine` with ``available_kv_memory_bytes`` pinned;
    ``gpu_memory_bytes`` only matters for defaults (scheduler limits, MLA block size).
    """
    return plan_engine(model, gpu_memory_bytes, replace(request, available_kv_memory_bytes=available_kv_bytes))


__all__ = [
    "DEFAULT_ENGINE", "ENGINE_CHOICES", "ENGINE_PROFILES", "EnginePlan", "EngineProfile", "EngineRequest",
    "RankBudget", "engine_profile", "plan_engine", "reproduce_printed", "resolve_engine_name",
]
