"""TensorRT-LLM (PyTorch backend): budget -> KV tokens per GPU.

``kv = (total - peak after profiling) x free_gpu_memory_fraction``,
``tokens = kv // per_token`` in whole ``tokens_per_block`` blocks, where the
per-token size divides ``kv_heads x head_dim`` by TP with integer division
(the engine's estimate assumes fractional heads rather than replication).

Sources: TensorRT-LLM tensorrt_llm/_torch/pyexecutor/_util.py (``KvCacheCreator``),
resource_manager.py (``get_cache_size_per_token``); ENGINES.md 4.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines.common import (
    engine_plan,
    non_torch_memory,
    profile_activation,
    rank_budget,
    resolve_knobs,
    stage_weights,
)
from planner.engines.launch import LaunchSpec
from planner.engines.length_limits import over_limit, trtllm_build_warning, trtllm_clamp_warning
from planner.engines.overheads import (
    pipeline_layer_ranges,
)
from planner.engines.profiles import EngineProfile, default_block_size
from planner.engines.types import EnginePlan, EngineRequest
from planner.engines.vllm import gib2
from planner.model import ModelSpec
from planner.model.layers import (
    CacheDtypes,
    FullAttention,
    MLAAttention,
    RecurrentState,
)
from planner.units import GiB

RECURRENT_NOTE = ("the Mamba / linear-attention layers' states are not priced: TensorRT-LLM keeps them in its hybrid "
                  "cache manager beside the paged KV pool (tensorrt_llm/_torch/pyexecutor/mamba_cache_manager.py, conv "
                  "and SSM states per request slot), so these tokens and this concurrency are high by that memory")
"""The note of a plan whose model has recurrent layers (only the attention layers' KV is priced here)."""


def trtllm_bytes_per_token(model: ModelSpec, layers: range, dtypes: CacheDtypes, tp: int) -> int:
    """TensorRT-LLM's per-token KV estimate on one GPU [bytes].

    Per layer: MLA ``(kv_lora_rank + qk_rope_head_dim) x b`` (kv_factor 1, not
    split); otherwise ``2 x (kv_heads x head_dim // tp) x b`` -- integer division of
    the product, so TP above the KV-head count gives fractional heads (an engine
    quirk, kept on purpose). Qwen2.5-0.5B fp16: 24 x 2 x (2 x 64) x 2 = 12,288 B.

    Sources: resource_manager.py ``get_cache_size_per_token``.
    """
    total = 0
    for i in layers:
        layer = model.layers[i]
        if isinstance(layer, MLAAttention):
            total += dtypes.kv.bytes_for(layer.kv_lora_rank + layer.qk_rope_head_dim)
        elif isinstance(layer, FullAttention):
            total += 2 * dtypes.kv.bytes_for(layer.num_key_value_heads * layer.head_dim // tp)
    return total


def plan_trtllm(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile) -> EnginePlan:
    """TensorRT-LLM: ``kv = (total - peak) x fraction``, tokens in whole blocks.

    Worked example (case T02, Qwen2.5-Coder-0.5B, 12,288 B/token, 64-token blocks):
    4.53 GiB -> 395,837 tokens -> 6,184 blocks -> 395,776 tokens, printed as
    "Allocated 4.53 GiB for max tokens in paged KV cache (395776)".

    A length past the model's: the PyTorch backend plans at the model's length, trtllm-build at the one asked,
    each with the engine's warning (:mod:`planner.engines.length_limits`).

    Sources: _util.py ``KvCacheCreator._cal_max_memory``; kvCacheManager.cpp
    ``calculateMaxNumBlocks``; ENGINES.md 4; model_engine.py ``_init_max_seq_len``; builder.py
    ``_init_max_seq_len``.
    """
    c = resolve_knobs(model, request)
    warnings = []
    if limit := over_limit(model, c.max_model_len):
        if profile.id == "trtllm":  # PyTorchModelEngine clamps max_seq_len to the model's
            warnings.append(trtllm_clamp_warning(c.max_model_len, limit))
            c = replace(c, max_model_len=limit)
        else:  # trtllm-build warns and builds at the length asked
            warnings.append(trtllm_build_warning(c.max_model_len, limit))
    fraction = request.gpu_memory_utilization or profile.default_memory_fraction
    tpb = request.block_size or default_block_size(profile, is_mla=False)
    mnbt = request.max_num_batched_tokens or 8192
    seqs = request.max_num_seqs or 2048
    ranks = []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        per_token = trtllm_bytes_per_token(model, layers, c.dtypes, c.tp)
        weights = stage_weights(model, request, c, stage)
        activation, forward = profile_activation(model, request, c, mnbt)
        non_torch = non_torch_memory(profile, request, c, context=True)
        graphs = profile.cudagraph_bytes if request.cudagraph_bytes is None else request.cudagraph_bytes
        free_after = gpu_memory_bytes - weights - activation - non_torch - graphs
        kv = request.available_kv_memory_bytes
        if kv is None:
            kv = int(max(free_after, 0) * fraction)
        blocks = kv // (per_token * tpb) if per_token else 0
        ranks.append(rank_budget(stage, layers, base=max(free_after, 0), requested=int(max(free_after, 0) * fraction),
                           weights=weights, activation=activation, forward=forward, sampler=0,
                           non_torch=non_torch, cudagraph=graphs, available=blocks * tpb * per_token,
                           per_token=per_token, bytes_per_block=per_token * tpb, num_blocks=blocks, request=request))
    blocks = min(r.num_blocks for r in ranks)
    tokens = blocks * tpb
    reasons, notes = [], []
    if tokens <= 0:
        reasons.append(f"no memory left for the KV cache after weights and profiling "
                       f"({gib2(ranks[0].weights_bytes)} GiB weights); use more tensor parallelism or a smaller dtype")
    if c.tp > model.num_key_value_heads and model.attention_kind != "MLA":
        notes.append("TensorRT-LLM's estimate divides kv_heads x head_dim by TP (fractional heads) when TP exceeds "
                     "the KV-head count")
    if any(isinstance(layer, RecurrentState) for layer in model.layers):
        notes.append(RECURRENT_NOTE)
    log = [f"[MemUsageChange] Allocated {tokens * ranks[0].kv_cache_bytes_per_token / GiB:.2f} GiB for max tokens "
           f"in paged KV cache ({tokens}).", f"Number of blocks in KV cache primary pool: {blocks}"]
    return engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=tpb, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=blocks,
                 concurrency=tokens / c.max_model_len, engine_max_len=min(tokens, c.limit),
                 needed=c.max_model_len * ranks[0].kv_cache_bytes_per_token, reasons=reasons, warnings=warnings,
                 notes=notes, log=log,
                 formula=f"kv = (total - weights - activation - non-torch - graphs) x {fraction:g}; "
                         f"tokens = kv // per_token in {tpb}-token blocks",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   data_parallel_size=request.data_parallel_size, max_model_len=c.max_model_len,
                                   gpu_memory_utilization=fraction, kv_cache_dtype=request.kv_cache_dtype,
                                   max_num_seqs=seqs, max_num_batched_tokens=request.max_num_batched_tokens))
