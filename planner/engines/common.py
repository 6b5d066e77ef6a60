"""What the SGLang, TensorRT-LLM, TGI, llama.cpp and transformers views share.

The knobs every one of them resolves first (:class:`Knobs`: tensor and pipeline
parallel sizes, ``max_model_len``, cache dtypes), one :class:`~planner.engines.types.RankBudget`
per pipeline stage, the :class:`~planner.engines.types.EnginePlan` they all return,
and the weight, activation and non-torch terms of their budgets. vLLM has its own
chain in :mod:`planner.engines.vllm`.

Sources: see each engine module; ENGINES.md 2-5.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engines.launch import LaunchSpec, launch_command
from planner.engines.overheads import (
    forward_peak_bytes,
    loaded_weight_bytes,
    non_torch_bytes_by_topology,
)
from planner.engines.profiles import EngineProfile
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.engines.vllm import MAX_CONTEXT_SEARCH_LIMIT, resolve_max_model_len
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.kv import cache_dtypes
from planner.model.layers import (
    CacheDtypes,
    FullAttention,
    MLAAttention,
)
from planner.units import MiB, ceil_div

CUDA_CONTEXT_BYTES = 625 * MiB
"""Device memory in use before an engine loads anything (CUDA context): 0.61 GiB,
from llm-d's "Free memory on device: 78.57/79.18 GiB on startup" (H100). Engines
that size from *free* memory (SGLang, TensorRT-LLM, TGI) lose it; vLLM sizes
from total memory and measures from a snapshot taken after it."""


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """Resolved knobs shared by the per-engine functions.

    Attributes:
        tp, pp: Tensor and pipeline parallel sizes [GPUs].
        max_model_len: The request's ``max_model_len``, or the model's own limit [tokens].
        dtypes: Resolved KV-cache and state formats.
        limit: Upper bound of max-context searches [tokens].
    """

    tp: int
    pp: int
    max_model_len: int
    dtypes: CacheDtypes
    limit: int


def resolve_knobs(model: ModelSpec, request: EngineRequest, kv_name: str | None = None) -> Knobs:
    """The :class:`Knobs` of ``request`` on ``model``; ``kv_name`` overrides the KV dtype name.

    Raises:
        ValueError: an unknown dtype name (from :func:`planner.model.kv.cache_dtypes`).
    """
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype if kv_name is None else kv_name,
                          vllm_storage=False)
    return Knobs(tp=request.tensor_parallel_size, pp=request.pipeline_parallel_size,
                 max_model_len=resolve_max_model_len(model, request), dtypes=dtypes,
                 limit=model.max_position_embeddings or MAX_CONTEXT_SEARCH_LIMIT)


def rank_budget(stage: int, layers: range, *, base: int, requested: int, weights: int, activation: int,
                forward: int, sampler: int, non_torch: int, cudagraph: int, available: int, per_token: int,
                bytes_per_block: int, num_blocks: int, request: EngineRequest) -> RankBudget:
    """One pipeline stage's :class:`~planner.engines.types.RankBudget` (all sizes per GPU [bytes]),
    naming which terms the request overrode (figures from a startup log)."""
    overridden = tuple(name for name, value in (
        ("weights", request.weights_bytes), ("activation", request.activation_bytes),
        ("non_torch", request.non_torch_bytes), ("cudagraph", request.cudagraph_bytes),
        ("available_kv_cache", request.available_kv_memory_bytes)) if value is not None)
    return RankBudget(stage=stage, first_layer=layers.start, num_layers=len(layers), memory_base_bytes=base,
                      requested_bytes=requested, weights_bytes=weights, activation_bytes=activation,
                      forward_activation_bytes=forward, sampler_bytes=sampler, non_torch_bytes=non_torch,
                      cudagraph_bytes=cudagraph, available_kv_cache_bytes=available,
                      kv_cache_bytes_per_token=per_token, bytes_per_block=bytes_per_block, num_blocks=num_blocks,
                      overridden=overridden)


def engine_plan(model: ModelSpec, request: EngineRequest, profile: EngineProfile, c: Knobs, ranks: list[RankBudget],
                *, gpu_memory_bytes: int, fraction: float | None, block_size: int, mnbt: int, seqs: int,
                tokens: int, num_blocks: int, concurrency: float, engine_max_len: int, needed: int,
                reasons: list[str], warnings: list[str], notes: list[str], log: list[str], formula: str,
                launch: LaunchSpec) -> EnginePlan:
    """The :class:`~planner.engines.types.EnginePlan` of a non-vLLM engine: the pool is the smallest
    stage's (``available_kv_cache_bytes`` = min over ranks), ``starts`` is "no reasons"."""
    return EnginePlan(
        engine=profile.id, engine_label=profile.label, engine_version=profile.version, family=profile.family,
        model_id=model.model_id,
        gpu_memory_bytes=gpu_memory_bytes, tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
        data_parallel_size=request.data_parallel_size, num_gpus=request.num_gpus,
        weight_dtype=request.weight_dtype, kv_cache_dtype=c.dtypes.kv_name, gpu_memory_utilization=fraction,
        block_size=block_size, max_model_len=c.max_model_len, max_num_batched_tokens=mnbt, max_num_seqs=seqs,
        ranks=tuple(ranks), available_kv_cache_bytes=min(r.available_kv_cache_bytes for r in ranks),
        available_kv_from_log=request.available_kv_memory_bytes is not None, num_gpu_blocks=num_blocks,
        num_kv_groups=1, group_size=max(r.num_layers for r in ranks),
        blocks_per_request=ceil_div(c.max_model_len, block_size), engine_kv_cache_tokens=tokens,
        max_concurrency=round(concurrency, 2),
        max_concurrency_all_replicas=round(concurrency * request.data_parallel_size, 2),
        engine_max_model_len=engine_max_len, kv_cache_bytes_needed_per_request=needed, starts=not reasons,
        reasons=tuple(reasons), warnings=tuple(warnings), notes=tuple(notes), engine_log_lines=tuple(log),
        overhead_formula=formula, launch_command=launch_command(launch))


def kv_row_bytes(layer, dtypes: CacheDtypes, tp: int) -> tuple[int, int]:
    """(K, V) bytes of one token in one layer on one GPU (MLA: latent as K, no V)."""
    if isinstance(layer, MLAAttention):
        return dtypes.kv.bytes_for(layer.kv_lora_rank + layer.qk_rope_head_dim), 0
    if isinstance(layer, FullAttention):
        heads = layer.kv_heads_per_gpu(tp)
        v_dim = layer.head_dim if layer.v_head_dim is None else layer.v_head_dim
        return dtypes.kv.bytes_for(heads * layer.head_dim), dtypes.kv.bytes_for(heads * v_dim)
    return 0, 0


def stage_weights(model: ModelSpec, request: EngineRequest, c: Knobs, stage: int) -> int:
    """Weights one GPU of pipeline ``stage`` loads [bytes] (:func:`~planner.engines.overheads.loaded_weight_bytes`),
    or the request's override."""
    if request.weights_bytes is not None:
        return request.weights_bytes
    return loaded_weight_bytes(model, weight_dtype(request.weight_dtype), c.tp, stage, c.pp)


def non_torch_memory(profile: EngineProfile, request: EngineRequest, c: Knobs, *, context: bool) -> int:
    """Non-torch memory per GPU [bytes]: the profile's runtime, what its process groups add by topology
    (:func:`~planner.engines.overheads.non_torch_bytes_by_topology`) when ``tp x pp > 1``, and the CUDA
    context when the engine sizes from free memory (``context``)."""
    if request.non_torch_bytes is not None:
        return request.non_torch_bytes
    runtime = non_torch_bytes_by_topology(profile.non_torch_bytes, tensor_parallel_size=c.tp,
                                          pipeline_parallel_size=c.pp, num_nodes=request.num_nodes,
                                          gpu_name=request.gpu_name)
    return runtime + (CUDA_CONTEXT_BYTES if context else 0)


def profile_activation(model: ModelSpec, request: EngineRequest, c: Knobs, tokens: int) -> tuple[int, int]:
    """(peak, forward) of a profile pass of ``tokens`` tokens, or the override."""
    forward = forward_peak_bytes(model, tokens, c.dtypes.state.bytes_for(1), c.tp)
    return (forward if request.activation_bytes is None else request.activation_bytes), forward
