"""Text Generation Inference: budget -> KV blocks per GPU.

After a ``max_batch_prefill_tokens`` warm-up TGI keeps
``(1 - CUDA_MEMORY_FRACTION x 0.9)`` of total memory free; the rest is KV, in
``BLOCK_SIZE`` blocks (1 with flashinfer); ``kv_heads // world_size`` heads per
GPU, no replication (it refuses when that is 0).

Sources: TGI server/text_generation_server/models/flash_causal_lm.py (``warmup``);
ENGINES.md 5.
"""

from __future__ import annotations

from planner.engines.common import (
    engine_plan,
    non_torch_memory,
    profile_activation,
    rank_budget,
    resolve_knobs,
    stage_weights,
)
from planner.engines.launch import LaunchSpec
from planner.engines.length_limits import over_limit, tgi_warning
from planner.engines.overheads import (
    pipeline_layer_ranges,
)
from planner.engines.profiles import EngineProfile, default_block_size
from planner.engines.types import EnginePlan, EngineRequest
from planner.model import ModelSpec
from planner.model.layers import (
    CacheDtypes,
    FullAttention,
    MLAAttention,
)


def tgi_bytes_per_token(model: ModelSpec, layers: range, dtypes: CacheDtypes, tp: int) -> int:
    """TGI's per-token KV on one GPU [bytes]: ``kv_heads // world_size`` heads (1 for MQA).

    Returns 0 when a layer would get no head (TGI asserts and stops). MLA layers
    are priced decompressed (per-head K and V), as TGI's DeepSeek-V2 path caches them.

    Sources: flash_causal_lm.py (``num_kv_heads`` per shard); ENGINES.md 3.
    """
    total = 0
    for i in layers:
        layer = model.layers[i]
        if isinstance(layer, MLAAttention):
            total += layer.decompressed_bytes_per_token(dtypes, tp) if layer.v_head_dim else \
                layer.bytes_per_token(dtypes, tp)
        elif isinstance(layer, FullAttention):
            heads = layer.num_key_value_heads // tp if layer.num_key_value_heads > 1 else 1
            if heads == 0:
                return 0
            v_dim = layer.head_dim if layer.v_head_dim is None else layer.v_head_dim
            total += dtypes.kv.bytes_for(heads * layer.head_dim) + dtypes.kv.bytes_for(heads * v_dim)
    return total


def plan_tgi(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile) -> EnginePlan:
    """TGI: KV = ``total x CUDA_MEMORY_FRACTION x 0.9 - used after warm-up``, in ``BLOCK_SIZE`` blocks.

    A ``--max-total-tokens`` past the model's limit starts with no word from TGI; the plan warns
    (:func:`planner.engines.length_limits.tgi_warning`).

    Sources: flash_causal_lm.py ``FlashCausalLM.warmup``; globals.py
    (``TGI_WIGGLE_ROOM`` 0.9, ``BLOCK_SIZE``); ENGINES.md 3; launcher/src/main.rs.
    """
    c = resolve_knobs(model, request)
    fraction = request.gpu_memory_utilization or profile.default_memory_fraction
    block = request.block_size or default_block_size(profile, is_mla=False, attention_backend=request.attention_backend)
    mnbt = request.max_num_batched_tokens or 4096
    seqs = request.max_num_seqs or 128
    ranks = []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        per_token = tgi_bytes_per_token(model, layers, c.dtypes, c.tp)
        weights = stage_weights(model, request, c, stage)
        activation, forward = profile_activation(model, request, c, mnbt)
        non_torch = non_torch_memory(profile, request, c, context=True)
        requested = int(gpu_memory_bytes * fraction * 0.9)
        kv = request.available_kv_memory_bytes
        if kv is None:
            kv = requested - weights - activation - non_torch
        blocks = kv // (per_token * block) if per_token and kv > 0 else 0
        ranks.append(rank_budget(stage, layers, base=gpu_memory_bytes, requested=requested, weights=weights,
                           activation=activation, forward=forward, sampler=0, non_torch=non_torch, cudagraph=0,
                           available=kv, per_token=per_token, bytes_per_block=per_token * block, num_blocks=blocks,
                           request=request))
    blocks = min(r.num_blocks for r in ranks)
    tokens = blocks * block
    reasons = []
    if any(r.kv_cache_bytes_per_token == 0 for r in ranks):
        reasons.append(f"TGI cannot shard {model.num_key_value_heads} KV heads over {c.tp} GPUs (no replication); "
                       "use a num-shard that divides the KV heads")
    elif tokens < c.max_model_len:
        reasons.append(f"max_total_tokens {c.max_model_len} exceeds the {tokens} tokens of KV cache; lower "
                       "--max-total-tokens or raise --cuda-memory-fraction")
    log = [f"KV-cache blocks: {blocks}, size: {block}", f"Setting max batch total tokens to {tokens}"]
    limit = over_limit(model, c.max_model_len)
    warnings = [tgi_warning(model, c.max_model_len, limit)] if limit else []
    return engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=block, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=blocks,
                 concurrency=tokens / c.max_model_len, engine_max_len=min(tokens, c.limit),
                 needed=c.max_model_len * ranks[0].kv_cache_bytes_per_token, reasons=reasons, warnings=warnings,
                 notes=[], log=log,
                 formula=f"kv = total x {fraction:g} x 0.9 - weights - warm-up activation ({mnbt} tokens) - non-torch",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, max_model_len=c.max_model_len,
                                   gpu_memory_utilization=request.gpu_memory_utilization,
                                   kv_cache_dtype=request.kv_cache_dtype, max_num_seqs=seqs,
                                   max_num_batched_tokens=request.max_num_batched_tokens,
                                   attention_backend=request.attention_backend))
