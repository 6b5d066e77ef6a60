"""SGLang, TensorRT-LLM, TGI, llama.cpp and plain transformers: budget -> KV tokens, per GPU.

Each engine gets one function with the chain its source uses (ENGINES.md 2-5):

* SGLang: ``rest = free_before_load x mem_fraction_static - weights``,
  ``max_total_num_tokens = rest // cell`` (rounded down to ``page_size``); the
  pool holds ``tokens + page_size`` slots (slot 0 pads), printed as K and V size.
* TensorRT-LLM: ``kv = (total - peak after profiling) x free_gpu_memory_fraction``,
  ``tokens = kv // per_token`` in whole ``tokens_per_block`` blocks, where the
  per-token size divides ``kv_heads x head_dim`` by TP with integer division
  (the engine's estimate assumes fractional heads rather than replication).
* TGI: after a ``max_batch_prefill_tokens`` warm-up, keep
  ``(1 - CUDA_MEMORY_FRACTION x 0.9)`` of total memory free; the rest is KV, in
  ``BLOCK_SIZE`` blocks (1 with flashinfer); ``kv_heads // world_size`` heads
  per GPU, no replication (it refuses when that is 0).
* llama.cpp: exactly the cells ``-c/-np`` ask for: ``n_ctx`` padded to 256; one
  stream (unified) or ``-np`` streams of ``pad256(n_ctx / np)`` cells; SWA
  layers keep ``pad256(min(cells, n_swa x (unified ? np : 1) + n_ubatch))``;
  rows are ``ggml_row_size`` (q8_0 34 B / 32 values, q4_0 18 B / 32); MLA keeps
  one 576-wide latent row and no V.
* transformers: the whole device minus weights and the prompt's forward pass;
  the cache per sequence is the ``transformers`` view of planner/verify_view.py
  (full layers every token, sliding layers a ``w - 1`` view pinning ``min(n, w)``
  tokens after a decode step, MLA the 512 + 64 latent, recurrent states with an
  fp32 SSM state; checked against transformers by ``python -m planner verify``); no blocks.

Sources: SGLang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
(``profile_max_num_token``, ``get_cell_size_per_token``), mem_cache/memory_pool.py;
TensorRT-LLM tensorrt_llm/_torch/pyexecutor/_util.py (``KvCacheCreator``),
resource_manager.py (``get_cache_size_per_token``); TGI
server/text_generation_server/models/flash_causal_lm.py (``warmup``); llama.cpp
src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp, src/llama-context.cpp,
ggml/src/ggml.c (type traits); transformers src/transformers/cache_utils.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.dtypes import weight_dtype
from planner.engine_profiles import EngineProfile, default_block_size, sglang_memory_defaults
from planner.engine_types import EnginePlan, EngineRequest, RankBudget
from planner.engine_vllm import MAX_CONTEXT_SEARCH_LIMIT, gib2, resolve_max_model_len
from planner.kv import cache_dtypes
from planner.launch import LaunchSpec, launch_command
from planner.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model import ModelSpec
from planner.overheads import activation_estimate, forward_peak_bytes, loaded_weight_bytes, pipeline_layer_ranges
from planner.units import GiB, MiB, ceil_div
from planner.verify_view import (
    TRANSFORMERS_KV_FORMATS,
    transformers_bytes_per_token,
    transformers_cache_bytes,
    transformers_layer_tokens,
    transformers_peak_bytes,
    transformers_recurrent_state_bytes,
)

CUDA_CONTEXT_BYTES = 625 * MiB
"""Device memory in use before an engine loads anything (CUDA context): 0.61 GiB,
from llm-d's "Free memory on device: 78.57/79.18 GiB on startup" (H100). Engines
that size from *free* memory (SGLang, TensorRT-LLM, TGI) lose it; vLLM sizes
from total memory and measures from a snapshot taken after it."""

LLAMACPP_PAD = 256
"""llama.cpp pads ``n_ctx`` and per-stream cells to a multiple of 256."""


@dataclass(frozen=True, kw_only=True)
class _Common:
    """Resolved knobs shared by the per-engine functions."""

    tp: int
    pp: int
    max_model_len: int
    dtypes: CacheDtypes
    limit: int


def _common(model: ModelSpec, request: EngineRequest, kv_name: str | None = None) -> _Common:
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype if kv_name is None else kv_name)
    return _Common(tp=request.tensor_parallel_size, pp=request.pipeline_parallel_size,
                   max_model_len=resolve_max_model_len(model, request), dtypes=dtypes,
                   limit=model.max_position_embeddings or MAX_CONTEXT_SEARCH_LIMIT)


def _rank(stage: int, layers: range, *, base: int, requested: int, weights: int, activation: int, forward: int,
          sampler: int, non_torch: int, cudagraph: int, available: int, per_token: int, bytes_per_block: int,
          num_blocks: int, request: EngineRequest) -> RankBudget:
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


def _plan(model: ModelSpec, request: EngineRequest, profile: EngineProfile, c: _Common, ranks: list[RankBudget],
          *, gpu_memory_bytes: int, fraction: float | None, block_size: int, mnbt: int, seqs: int, tokens: int,
          num_blocks: int, concurrency: float, engine_max_len: int, needed: int, reasons: list[str],
          warnings: list[str], notes: list[str], log: list[str], formula: str, launch: LaunchSpec) -> EnginePlan:
    return EnginePlan(
        engine=profile.id, engine_label=profile.label, family=profile.family, model_id=model.model_id,
        gpu_memory_bytes=gpu_memory_bytes, tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
        data_parallel_size=request.data_parallel_size, num_gpus=request.num_gpus,
        weight_dtype=request.weight_dtype, kv_cache_dtype=c.dtypes.kv.name, gpu_memory_utilization=fraction,
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


def _kv_row_bytes(layer, dtypes: CacheDtypes, tp: int) -> tuple[int, int]:
    """(K, V) bytes of one token in one layer on one GPU (MLA: latent as K, no V)."""
    if isinstance(layer, MLAAttention):
        return dtypes.kv.bytes_for(layer.kv_lora_rank + layer.qk_rope_head_dim), 0
    if isinstance(layer, FullAttention):
        heads = layer.kv_heads_per_gpu(tp)
        v_dim = layer.head_dim if layer.v_head_dim is None else layer.v_head_dim
        return dtypes.kv.bytes_for(heads * layer.head_dim), dtypes.kv.bytes_for(heads * v_dim)
    return 0, 0


def _weights(model: ModelSpec, request: EngineRequest, c: _Common, stage: int) -> int:
    if request.weights_bytes is not None:
        return request.weights_bytes
    return loaded_weight_bytes(model, weight_dtype(request.weight_dtype), c.tp, stage, c.pp)


def _non_torch(profile: EngineProfile, request: EngineRequest, c: _Common, *, context: bool) -> int:
    if request.non_torch_bytes is not None:
        return request.non_torch_bytes
    extra = profile.non_torch_multi_gpu_bytes if c.tp * c.pp > 1 else 0
    return profile.non_torch_bytes + extra + (CUDA_CONTEXT_BYTES if context else 0)


def _activation(model: ModelSpec, request: EngineRequest, c: _Common, tokens: int) -> tuple[int, int]:
    """(peak, forward) of a profile pass of ``tokens`` tokens, or the override."""
    forward = forward_peak_bytes(model, tokens, c.dtypes.state.bytes_for(1), c.tp)
    return (forward if request.activation_bytes is None else request.activation_bytes), forward


# --- SGLang ---------------------------------------------------------------------------


def plan_sglang(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile) -> EnginePlan:
    """SGLang: ``max_total_num_tokens = (free_before x mem_fraction_static - weights) // cell``.

    With ``available_kv_memory_bytes`` (the printed K + V size) the tokens are
    ``available // cell - page_size``. Worked example (case S01, Qwen3-235B TP 4,
    94 layers x 1 head x 256 x 2 B = 48,128 B cell): K size 8.23 GiB printed for
    367,404 tokens = (367,404 + 1) x 24,064 B = 8.234 GiB.

    Sources: model_runner_kv_cache_mixin.py ``profile_max_num_token``,
    ``_resolve_max_num_reqs``; memory_pool.py ``MHATokenToKVPool``; ENGINES.md 2.
    """
    c = _common(model, request)
    chunk, graph_bs, default_fraction = sglang_memory_defaults(gpu_memory_bytes, c.tp, c.pp)
    fraction = request.gpu_memory_utilization or default_fraction
    page = request.block_size or default_block_size(profile, is_mla=False)
    mnbt = request.max_num_batched_tokens or chunk
    ranks, k_cells, v_cells = [], [], []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        rows = [_kv_row_bytes(model.layers[i], c.dtypes, c.tp) for i in layers]
        k_cell, v_cell = sum(r[0] for r in rows), sum(r[1] for r in rows)
        cell = k_cell + v_cell
        weights = _weights(model, request, c, stage)
        non_torch = _non_torch(profile, request, c, context=True)
        free_before = gpu_memory_bytes - non_torch
        rest = int(free_before * fraction) - weights
        if request.available_kv_memory_bytes is not None:
            tokens = request.available_kv_memory_bytes // cell - page if cell else 0
        else:
            tokens = rest // cell if cell and rest > 0 else 0
        tokens = max(tokens, 0) // page * page
        pool = (tokens + page) * cell if tokens else max(rest, 0)
        activation, forward = _activation(model, request, c, mnbt)
        ranks.append(_rank(stage, layers, base=free_before, requested=int(free_before * fraction), weights=weights,
                           activation=activation, forward=forward, sampler=0, non_torch=non_torch,
                           cudagraph=request.cudagraph_bytes or 0, available=pool, per_token=cell,
                           bytes_per_block=cell * page, num_blocks=tokens, request=request))
        k_cells.append(k_cell)
        v_cells.append(v_cell)
    tokens = min(r.num_blocks for r in ranks)
    seqs = request.max_num_seqs or max(1, int(min(max(min(tokens / c.max_model_len * 512, 4096), 2048), tokens / 2)))
    reasons, warnings, notes = [], [], []
    if tokens <= 0:
        reasons.append("Not enough memory. Please try to increase --mem-fraction-static "
                       f"(weights {gib2(ranks[0].weights_bytes)} GiB leave no room in "
                       f"{fraction:g} x {gib2(ranks[0].memory_base_bytes)} GiB)")
    reserve = ranks[0].memory_base_bytes - ranks[0].requested_bytes
    if ranks[0].activation_bytes > reserve:
        warnings.append(f"the activation estimate ({gib2(ranks[0].activation_bytes)} GiB) exceeds the "
                        f"{gib2(reserve)} GiB that mem_fraction_static {fraction:g} leaves; lower it")
    if any(isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention)) for layer in model.layers):
        notes.append("sliding-window layers priced as full attention (SGLang disables its hybrid SWA pool for "
                     "Gemma and gpt-oss)")
    if any(isinstance(layer, RecurrentState) for layer in model.layers):
        notes.append("Mamba state pool not modelled: SGLang carves it out before the KV tokens")
    mla = any(isinstance(layer, MLAAttention) for layer in model.layers)
    kv_print = (f"KV Cache is allocated. #tokens: {tokens}, KV size: {(tokens + page) * k_cells[0] / GiB:.2f} GB"
                if mla else
                f"KV Cache is allocated. #tokens: {tokens}, K size: {(tokens + page) * k_cells[0] / GiB:.2f} GB, "
                f"V size: {(tokens + page) * v_cells[0] / GiB:.2f} GB")
    log = [f"Load weight end. mem usage={gib2(ranks[0].weights_bytes)} GB", kv_print,
           f"max_total_num_tokens={tokens}, chunked_prefill_size={mnbt}, max_running_requests={seqs}, "
           f"context_len={c.max_model_len}"]
    return _plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=page, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=tokens // page,
                 concurrency=tokens / c.max_model_len, engine_max_len=min(tokens, c.limit),
                 needed=c.max_model_len * ranks[0].kv_cache_bytes_per_token, reasons=reasons, warnings=warnings,
                 notes=notes, log=log,
                 formula=f"tokens = (({gib2(gpu_memory_bytes)} GiB - context/non-torch) x {fraction:g} - weights) "
                         f"// cell; cuda_graph_max_bs {graph_bs}",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   data_parallel_size=request.data_parallel_size, max_model_len=c.max_model_len,
                                   gpu_memory_utilization=fraction, kv_cache_dtype=request.kv_cache_dtype,
                                   max_num_seqs=seqs, max_num_batched_tokens=request.max_num_batched_tokens,
                                   block_size=request.block_size))


# --- TensorRT-LLM --------------------------------------------------------------------


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

    Sources: _util.py ``KvCacheCreator._cal_max_memory``; kvCacheManager.cpp
    ``calculateMaxNumBlocks``; ENGINES.md 4.
    """
    c = _common(model, request)
    fraction = request.gpu_memory_utilization or profile.default_memory_fraction
    tpb = request.block_size or default_block_size(profile, is_mla=False)
    mnbt = request.max_num_batched_tokens or 8192
    seqs = request.max_num_seqs or 2048
    ranks = []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        per_token = trtllm_bytes_per_token(model, layers, c.dtypes, c.tp)
        weights = _weights(model, request, c, stage)
        activation, forward = _activation(model, request, c, mnbt)
        non_torch = _non_torch(profile, request, c, context=True)
        graphs = profile.cudagraph_bytes if request.cudagraph_bytes is None else request.cudagraph_bytes
        free_after = gpu_memory_bytes - weights - activation - non_torch - graphs
        kv = request.available_kv_memory_bytes
        if kv is None:
            kv = int(max(free_after, 0) * fraction)
        blocks = kv // (per_token * tpb) if per_token else 0
        ranks.append(_rank(stage, layers, base=max(free_after, 0), requested=int(max(free_after, 0) * fraction),
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
    log = [f"[MemUsageChange] Allocated {tokens * ranks[0].kv_cache_bytes_per_token / GiB:.2f} GiB for max tokens "
           f"in paged KV cache ({tokens}).", f"Number of blocks in KV cache primary pool: {blocks}"]
    return _plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=tpb, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=blocks,
                 concurrency=tokens / c.max_model_len, engine_max_len=min(tokens, c.limit),
                 needed=c.max_model_len * ranks[0].kv_cache_bytes_per_token, reasons=reasons, warnings=[],
                 notes=notes, log=log,
                 formula=f"kv = (total - weights - activation - non-torch - graphs) x {fraction:g}; "
                         f"tokens = kv // per_token in {tpb}-token blocks",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   data_parallel_size=request.data_parallel_size, max_model_len=c.max_model_len,
                                   gpu_memory_utilization=fraction, kv_cache_dtype=request.kv_cache_dtype,
                                   max_num_seqs=seqs, max_num_batched_tokens=request.max_num_batched_tokens))


# --- TGI -----------------------------------------------------------------------------


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

    Sources: flash_causal_lm.py ``FlashCausalLM.warmup``; globals.py
    (``TGI_WIGGLE_ROOM`` 0.9, ``BLOCK_SIZE``); ENGINES.md 3.
    """
    c = _common(model, request)
    fraction = request.gpu_memory_utilization or profile.default_memory_fraction
    block = request.block_size or default_block_size(profile, is_mla=False, attention_backend=request.attention_backend)
    mnbt = request.max_num_batched_tokens or 4096
    seqs = request.max_num_seqs or 128
    ranks = []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        per_token = tgi_bytes_per_token(model, layers, c.dtypes, c.tp)
        weights = _weights(model, request, c, stage)
        activation, forward = _activation(model, request, c, mnbt)
        non_torch = _non_torch(profile, request, c, context=True)
        requested = int(gpu_memory_bytes * fraction * 0.9)
        kv = request.available_kv_memory_bytes
        if kv is None:
            kv = requested - weights - activation - non_torch
        blocks = kv // (per_token * block) if per_token and kv > 0 else 0
        ranks.append(_rank(stage, layers, base=gpu_memory_bytes, requested=requested, weights=weights,
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
    return _plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=block, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=blocks,
                 concurrency=tokens / c.max_model_len, engine_max_len=min(tokens, c.limit),
                 needed=c.max_model_len * ranks[0].kv_cache_bytes_per_token, reasons=reasons, warnings=[], notes=[],
                 log=log, formula=f"kv = total x {fraction:g} x 0.9 - weights - warm-up activation ({mnbt} tokens) "
                                  "- non-torch",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, max_model_len=c.max_model_len,
                                   gpu_memory_utilization=request.gpu_memory_utilization,
                                   kv_cache_dtype=request.kv_cache_dtype, max_num_seqs=seqs,
                                   max_num_batched_tokens=request.max_num_batched_tokens,
                                   attention_backend=request.attention_backend))


# --- llama.cpp -----------------------------------------------------------------------


def pad256(n: int) -> int:
    """Round up to a multiple of 256 (llama.cpp cell padding): 1000 -> 1024."""
    return ceil_div(n, LLAMACPP_PAD) * LLAMACPP_PAD


@dataclass(frozen=True, kw_only=True)
class LlamaCppCells:
    """Cells of a llama.cpp context.

    Attributes:
        n_ctx: Padded context [cells]. n_seq: Slots (``-np``). unified: One shared stream.
        streams: KV streams. full_cells: Cells per stream of full layers.
        swa_cells: Cells per stream of SWA layers.
    """

    n_ctx: int
    n_seq: int
    unified: bool
    streams: int
    full_cells: int
    swa_cells: int


def llamacpp_cells(n_ctx: int, n_seq: int, *, unified: bool, sliding_window: int | None, n_ubatch: int = 512,
                   swa_full: bool = False) -> LlamaCppCells:
    """Cells llama.cpp allocates (module docstring).

    Worked example (case L04, gemma-3-270m): ``-c 1024 -np 4``, non-unified,
    window 512: 4 streams x pad256(1024 / 4) = 4 x 256 cells; SWA
    pad256(min(256, 512 + 512)) = 256 cells per stream.

    Sources: src/llama-context.cpp (n_ctx padding, ``n_ctx_seq``),
    src/llama-kv-cache-iswa.cpp (SWA size).
    """
    padded = pad256(n_ctx)
    streams = 1 if unified else n_seq
    full = padded if unified else pad256(padded // n_seq)
    swa = full
    if sliding_window is not None and not swa_full:
        swa = pad256(min(full, sliding_window * (n_seq if unified else 1) + n_ubatch))
    return LlamaCppCells(n_ctx=padded, n_seq=n_seq, unified=unified, streams=streams, full_cells=full, swa_cells=swa)


@dataclass(frozen=True, kw_only=True)
class _DeviceKV:
    """One llama.cpp device's layers: counts and per-cell row bytes of the full and SWA caches."""

    full_layers: int
    swa_layers: int
    k_full: int
    v_full: int
    k_swa: int
    v_swa: int

    def bytes(self, cells: LlamaCppCells) -> int:
        """KV buffer of this device: rows x cells x streams for each cache [bytes]."""
        return ((self.k_full + self.v_full) * cells.full_cells
                + (self.k_swa + self.v_swa) * cells.swa_cells) * cells.streams


def _device_kv(model: ModelSpec, layers: range, dtypes: CacheDtypes) -> _DeviceKV:
    counts = {"full": [0, 0, 0], "swa": [0, 0, 0]}
    for i in layers:
        layer = model.layers[i]
        k, v = _kv_row_bytes(layer, dtypes, 1)
        bucket = "swa" if isinstance(layer, SlidingWindowAttention) else "full"
        if k:
            counts[bucket][0] += 1
            counts[bucket][1] += k
            counts[bucket][2] += v
    (nf, kf, vf), (ns, ks, vs) = counts["full"], counts["swa"]
    return _DeviceKV(full_layers=nf, swa_layers=ns, k_full=kf, v_full=vf, k_swa=ks, v_swa=vs)


def _llamacpp_lines(dev: _DeviceKV, cells: LlamaCppCells, kv_name: str) -> list[str]:
    """The ``llama_kv_cache`` lines llama.cpp prints for one device (format of llama-kv-cache.cpp)."""
    kv_type = {"fp32": "f32", "fp16": "f16"}.get(kv_name, kv_name)
    lines = []
    if dev.swa_layers:
        lines.append(f"llama_kv_cache_iswa: creating non-SWA KV cache, size = {cells.full_cells} cells")
        lines.append(f"llama_kv_cache_iswa: creating     SWA KV cache, size = {cells.swa_cells} cells")
    for per_stream, layers_n, k_b, v_b in ((cells.full_cells, dev.full_layers, dev.k_full, dev.v_full),
                                           (cells.swa_cells, dev.swa_layers, dev.k_swa, dev.v_swa)):
        if layers_n:
            n_cells = per_stream * cells.streams
            lines.append(f"llama_kv_cache: size = {(k_b + v_b) * n_cells / MiB:7.2f} MiB ({per_stream:6d} cells, "
                         f"{layers_n:3d} layers, {cells.n_seq:2d}/{cells.streams} seqs), K ({kv_type}): "
                         f"{k_b * n_cells / MiB:7.2f} MiB, V ({kv_type}): {v_b * n_cells / MiB:7.2f} MiB")
    return lines


def plan_llamacpp(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                  profile: EngineProfile) -> EnginePlan:
    """llama.cpp: the KV buffer is exactly what ``-c/-np/-ctk/-ctv`` ask for (or it fails).

    Layers are split across ``tp x pp`` devices (``-sm layer``); each device's
    "KV buffer size" holds its layers. Bytes per layer = ``(K row + V row) x cells
    x streams``. Worked example (case L06, Qwen3-4B, q8_0, ``-c 32768``): 36 x
    (1088 + 1088) B x 32,768 = 2,448.00 MiB. Concurrency is the slot count
    (``-np``); the fit check adds weights and a compute-buffer estimate
    (``n_ubatch x vocab x 4 B`` of logits + an fp32 forward pass; not calibrated).

    Sources: module docstring.
    """
    kv_name = "fp16" if request.kv_cache_dtype == "auto" else request.kv_cache_dtype
    c = _common(model, request, kv_name)
    n_seq = request.max_num_seqs or 1
    unified = request.kv_unified if request.kv_unified is not None else n_seq == 1
    windows = [layer.sliding_window for layer in model.layers if isinstance(layer, SlidingWindowAttention)]
    cells = llamacpp_cells(c.max_model_len, n_seq, unified=unified, sliding_window=max(windows) if windows else None,
                           n_ubatch=request.n_ubatch, swa_full=request.swa_full)
    devices = c.tp * c.pp
    ranks, lines = [], []
    for device, layers in enumerate(pipeline_layer_ranges(model.num_layers, devices)):
        dev = _device_kv(model, layers, c.dtypes)
        kv = dev.bytes(cells)
        if device == 0:
            lines += _llamacpp_lines(dev, cells, c.dtypes.kv.name)
        weights = request.weights_bytes if request.weights_bytes is not None else loaded_weight_bytes(
            model, weight_dtype(request.weight_dtype), 1, device, devices, engine_extras=False)
        compute = request.activation_bytes
        if compute is None:
            compute = request.n_ubatch * model.vocab_size * 4 + forward_peak_bytes(model, request.n_ubatch, 4, 1)
        row = dev.k_full + dev.v_full + dev.k_swa + dev.v_swa
        ranks.append(_rank(device, layers, base=gpu_memory_bytes, requested=weights + kv + compute, weights=weights,
                           activation=compute, forward=compute, sampler=0, non_torch=request.non_torch_bytes or 0,
                           cudagraph=0, available=kv, per_token=row, bytes_per_block=row,
                           num_blocks=cells.full_cells * cells.streams, request=request))
        lines.append(f"llama_kv_cache: {'CUDA' + str(device):>10s} KV buffer size = {kv / MiB:8.2f} MiB")
    reasons = [f"device {r.stage}: weights {gib2(r.weights_bytes)} + KV {gib2(r.available_kv_cache_bytes)} + compute "
               f"buffer ~{gib2(r.activation_bytes)} GiB exceed {gib2(gpu_memory_bytes)} GiB; lower -c, use -ctk/-ctv "
               "q8_0, or offload fewer layers (-ngl)"
               for r in ranks if r.requested_bytes + r.non_torch_bytes > gpu_memory_bytes][:1]
    notes = ["quantized V cache needs flash attention (-fa on)"] if c.dtypes.kv.name in ("q8_0", "q4_0") else []
    total_cells = cells.full_cells * cells.streams
    return _plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=None, block_size=1,
                 mnbt=request.n_ubatch, seqs=n_seq, tokens=total_cells, num_blocks=total_cells,
                 concurrency=float(n_seq), engine_max_len=cells.n_ctx if unified else cells.full_cells,
                 needed=ranks[0].available_kv_cache_bytes // n_seq, reasons=reasons, warnings=[], notes=notes,
                 log=lines, formula="KV = rows x cells (no fraction); compute buffer ~ n_ubatch x (vocab x 4 B "
                                     "+ fp32 forward pass)",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   max_model_len=c.max_model_len, kv_cache_dtype=request.kv_cache_dtype,
                                   max_num_seqs=n_seq, n_ubatch=request.n_ubatch, kv_unified=unified and n_seq > 1,
                                   swa_full=request.swa_full))


# --- transformers --------------------------------------------------------------------


def transformers_bytes_per_sequence(model: ModelSpec, num_tokens: int, dtypes: CacheDtypes, tp: int = 1,
                                    layers: range | None = None, prompt_tokens: int | None = None) -> int:
    """Memory a transformers 5 ``DynamicCache`` pins for one sequence of ``num_tokens`` [bytes].

    Delegates to the ``transformers`` view (:mod:`planner.verify_view`), checked
    exactly against transformers 5.24 by ``python -m planner verify``: full and
    MLA layers keep every token (MLA as the 512 + 64 latent); sliding and chunked
    layers keep a view of the last ``w - 1`` tokens that pins ``min(n, w)``
    tokens after a decode step and the whole prompt right after its prefill;
    recurrent layers keep the conv state in the activation dtype and the SSM /
    delta-rule state in float32. With ``prompt_tokens`` the result is the peak
    over the call (prefill of the prompt, then decode to ``num_tokens``).
    Quantized KV caches (int8 / int4 via quanto or HQQ) are not a per-token
    format in transformers; for them the same token rule is applied at the KV
    format's size (an approximation, not verified).

    Sources: transformers cache_utils.py (``DynamicLayer``, ``DynamicSlidingWindowLayer``,
    ``LinearAttentionLayer``); planner/verify_view.py design notes.
    """
    if dtypes.kv.name in TRANSFORMERS_KV_FORMATS:
        if prompt_tokens is not None:
            return transformers_peak_bytes(model, prompt_tokens, num_tokens, dtypes, tp, layers)
        return transformers_cache_bytes(model, num_tokens, dtypes, tp, phase="decode", layers=layers).memory_bytes
    total = 0
    for i in (layers if layers is not None else range(model.num_layers)):
        layer = model.layers[i]
        if isinstance(layer, RecurrentState):
            total += transformers_recurrent_state_bytes(layer, dtypes, tp)
            continue
        _, held = transformers_layer_tokens(layer, max(num_tokens, prompt_tokens or 0), "decode")
        total += held * transformers_bytes_per_token(layer, dtypes, tp)
    return total


def plan_transformers(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                      profile: EngineProfile) -> EnginePlan:
    """Plain transformers ``generate()``: the device minus weights and the prompt's forward pass.

    No fraction and no blocks: ``budget = total - weights - forward(prompt) -
    non-torch``; concurrency = ``budget // bytes_per_sequence(max_model_len)``;
    tokens = concurrency x ``max_model_len``. The prompt is the forward pass the
    activations are sized for: ``max_num_batched_tokens`` split over the
    ``max_num_seqs`` sequences, else the whole ``max_model_len``. Each sequence's
    cache is the peak over the call (:func:`transformers_bytes_per_sequence` with
    ``prompt_tokens``): sliding layers keep ``w - 1`` tokens while decoding but pin
    the whole prompt right after its prefill, so a long prompt on a sliding-window
    model (Gemma 3, gpt-oss, Mistral 7B v0.1) needs its full length in every layer
    for a moment, as ``python -m planner verify`` measures.

    Sources: module docstring; transformers cache_utils.py ``DynamicSlidingWindowLayer``.
    """
    c = _common(model, request)
    seqs_wanted = request.max_num_seqs or 1
    prompt = min(request.max_num_batched_tokens or c.max_model_len * seqs_wanted, c.max_model_len * seqs_wanted)
    prompt_per_seq = max(1, min(c.max_model_len, prompt // seqs_wanted))
    ranks, budgets, ranges = [], [], pipeline_layer_ranges(model.num_layers, c.pp)
    for stage, layers in enumerate(ranges):
        weights = request.weights_bytes if request.weights_bytes is not None else loaded_weight_bytes(
            model, weight_dtype(request.weight_dtype), c.tp, stage, c.pp, engine_extras=False)
        act = activation_estimate(model, num_tokens=prompt, num_seqs=seqs_wanted, bytes_per_logit=4,
                                  activation_bytes=c.dtypes.state.bytes_for(1), tensor_parallel_size=c.tp,
                                  last_stage=stage == c.pp - 1)
        activation = act.peak_bytes if request.activation_bytes is None else request.activation_bytes
        non_torch = _non_torch(profile, request, c, context=True)
        budget = request.available_kv_memory_bytes
        if budget is None:
            budget = gpu_memory_bytes - weights - activation - non_torch
        per_seq = transformers_bytes_per_sequence(model, c.max_model_len, c.dtypes, c.tp, layers,
                                                  prompt_tokens=prompt_per_seq)
        fit = budget // per_seq if per_seq and budget > 0 else 0
        budgets.append(budget)
        ranks.append(_rank(stage, layers, base=gpu_memory_bytes, requested=gpu_memory_bytes, weights=weights,
                           activation=activation, forward=act.forward_bytes, sampler=act.sampler_bytes,
                           non_torch=non_torch, cudagraph=0, available=budget,
                           per_token=sum(model.layers[i].bytes_per_token(c.dtypes, c.tp) for i in layers),
                           bytes_per_block=per_seq, num_blocks=fit, request=request))
    fit = min(r.num_blocks for r in ranks)

    def one_fits(length: int) -> bool:
        pinned = length if request.max_num_batched_tokens is None else min(length, prompt_per_seq)
        return all(transformers_bytes_per_sequence(model, length, c.dtypes, c.tp, lay, prompt_tokens=pinned) <= b
                   for lay, b in zip(ranges, budgets))

    lo, hi = 0, c.limit
    if one_fits(hi):
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if one_fits(mid) else (lo, mid)
    reasons = []
    if fit < seqs_wanted:
        reasons.append(f"{seqs_wanted} sequence(s) of {c.max_model_len:,} tokens need "
                       f"{gib2(seqs_wanted * ranks[0].bytes_per_block)} GiB of cache; {gib2(max(budgets[0], 0))} GiB "
                       f"is free after weights and activations; at most {fit} fit")
    return _plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=None, block_size=1,
                 mnbt=prompt, seqs=seqs_wanted, tokens=fit * c.max_model_len, num_blocks=fit, concurrency=float(fit),
                 engine_max_len=lo, needed=ranks[0].bytes_per_block, reasons=reasons, warnings=[],
                 notes=["transformers allocates the cache as it grows; no fraction of memory is reserved"],
                 log=[], formula="budget = total - weights - forward(prompt) - non-torch" + (
                     f"; sliding layers keep window - 1 tokens while decoding but pin the whole "
                     f"{prompt_per_seq:,}-token prompt after its prefill (the peak counts)"
                     if any(isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention)) for layer in model.layers)
                     else ""),
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   max_model_len=c.max_model_len, max_num_seqs=seqs_wanted))
