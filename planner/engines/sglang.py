"""SGLang: budget -> KV tokens per GPU.

``rest = free_before_load x mem_fraction_static - weights``,
``max_total_num_tokens = rest // cell`` (rounded down to ``page_size``); the
pool holds ``tokens + page_size`` slots (slot 0 pads), printed as K and V size.

With serving features (:mod:`planner.engines.serving`): the LoRA pool loads
before the KV pool is sized, so they come out of it like weights; speculative decoding lowers the default
fraction (:data:`planner.serving.speculative.SGLANG_SPEC_RESERVE_MIB`) and the draft worker's weights
and own KV pool sit beside the target's (:func:`planner.serving.speculative.sglang_draft_pool_bytes`).

Hybrid models with Mamba / linear-attention layers (Qwen3.5 / Qwen3.6 Gated DeltaNet,
Qwen3-Next, Nemotron-H, Jamba, Kimi Linear) keep their states in a separate Mamba pool
that is carved out of ``rest`` first (:func:`mamba_pool`): the cell then counts only the
attention layers, and ``max_running_requests`` is capped by the pool's slots.

DeepSeek-V3.2 / GLM-5.x sparse attention (DSA) sits on SGLang's NSA pool: 64-token pages, ``auto`` stored
as bf16 on Hopper and fp8 on Blackwell, and every layer's cell adds the FP8 indexer key
(:func:`sglang_kv_row_bytes`).

What SGLang reads (every release): ``get_available_gpu_memory`` (python/sglang/srt/utils.py) calls
``torch.cuda.empty_cache()`` and returns ``torch.cuda.mem_get_info``'s free memory, once after
``init_torch_distributed`` (``free_before``) and once after loading. So the weights count as the caching
allocator's reserved segments (:func:`sglang_weight_bytes`), not as tensor bytes, and ``free_before`` has lost
the CUDA context and the process groups' buffers but not the cuBLAS workspace or the other runtime memory
vLLM's non-torch figure holds: ``ModelRunner.init_cublas`` runs after ``init_memory_pool``
(:func:`sglang_non_torch_bytes`). The default ``mem_fraction_static`` of both profiles is computed from
nvidia-smi's ``memory.total`` (``get_device_memory_capacity`` -> ``get_nvgpu_memory_capacity``), which callers
pass as ``EngineRequest.gpu_memory_reported_bytes``. For a vision-language model that default is then scaled down
by the tower's size (``adjust_mem_fraction_for_vlm``: :mod:`planner.engines.sglang_vlm`); a fraction the user sets
is kept as given.

Sources: SGLang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
(``profile_max_num_token``, ``get_cell_size_per_token``, ``handle_max_mamba_cache``,
``init_memory``), mem_cache/memory_pool.py (``MambaPool``); server_args.py
(``mamba_full_memory_ratio`` 0.9, ``mamba_ssm_dtype`` "float32"); ENGINES.md 2.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines.allocator import reserved_bytes
from planner.engines.common import (
    CUDA_CONTEXT_BYTES,
    Knobs,
    engine_plan,
    kv_row_bytes,
    profile_activation,
    rank_budget,
    resolve_knobs,
)
from planner.engines.launch import LaunchSpec
from planner.engines.loaded import gpu_capability
from planner.engines.overheads import (
    non_torch_bytes_by_topology,
    pipeline_layer_ranges,
)
from planner.engines.profiles import (
    EngineProfile,
    default_block_size,
    sglang_2025_memory_defaults,
    sglang_memory_defaults,
)
from planner.engines.serving import DRAFT_KV, DRAFT_WEIGHTS, LORA_SLOTS, serving_terms
from planner.engines.sglang_nodes import nodes_refusal
from planner.engines.sglang_vlm import sglang_vlm_fraction
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.engines.vllm import gib2
from planner.engines.weight_tensors import vllm_weight_tensors
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.layers import (
    ChunkedLocalAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
    fp8_ds_mla_bytes,
)
from planner.model.dtypes import BF16, FP32
from planner.model.sparse import IndexedMLAAttention, engine_indexer_bytes, indexed_mla_layer
from planner.serving.speculative import SGLANG_SPEC_RESERVE_MIB, sglang_draft_pool_bytes
from planner.units import GiB

MAMBA_FULL_MEMORY_RATIO = (9, 10)
"""``--mamba-full-memory-ratio`` default 0.9 (SGLang server_args.py): Mamba pool / KV pool bytes."""
MAMBA_SLOTS_PER_RUNNING_REQUEST = 3
"""``MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO`` (model_runner_kv_cache_mixin.py): Mamba slots per running
request with the radix cache on and no extra buffer."""


def mamba_state_bytes_per_request(model: ModelSpec, layers, dtypes, tensor_parallel_size: int) -> int:
    """SGLang's ``mamba_cache_per_req`` on one GPU [bytes]: every recurrent layer's conv state in bf16
    (``CONV_DTYPE``) and SSM state in ``--mamba-ssm-dtype`` (default float32), ``d_conv - 1`` conv columns.

    Worked example, Nemotron 3 Nano (23 Mamba2 layers, TP 1): 23 x (18,432 x 2 + 524,288 x 4) =
    49,082,368 B.

    Sources: SGLang python/sglang/srt/configs/mamba_utils.py (``Mamba2StateShape.create``,
    ``Mamba2CacheParams.mamba_cache_per_req``, ``mamba2_state_dtype``); server_args.py ``mamba_ssm_dtype``.
    """
    return sum(model.layers[i].engine_bytes_per_sequence(dtypes, tensor_parallel_size, conv_format=BF16,
                                                         ssm_format=FP32)
               for i in layers if isinstance(model.layers[i], RecurrentState))


HYBRID_SWA_MODEL_TYPES = frozenset({"llama4", "llama4_text", "mimo_v2_flash", "step3p5", "gemma4", "gemma4_text"})
"""Model types whose architectures SGLang gives a separate sliding-window pool (``is_hybrid_swa_model`` in
python/sglang/srt/configs/model_config.py: Llama4, MiMoV2Flash, Step3p5, Gemma4). gpt-oss is on that list too,
but ``ServerArgs._handle_model_specific_adjustments`` sets ``disable_hybrid_swa_memory`` for it in the
releases modelled here, as it does for Gemma 2 / 3."""
SWA_FULL_TOKENS_RATIO = (4, 5)
"""``--swa-full-tokens-ratio`` default 0.8 (server_args.py): sliding-window tokens per full-attention token."""


def hybrid_swa_tokens(profile_tokens: int, full_bytes_per_token: int, swa_bytes_per_token: int,
                      page_size: int) -> tuple[int, int]:
    """``(full_layer_tokens, swa_layer_tokens)`` SGLang splits a hybrid-SWA pool into.

    The profile sized ``profile_tokens`` against ``F + S`` bytes per token (``F`` = every full layer's
    K + V of one token, ``S`` = every sliding layer's); the same bytes are re-split so that the sliding
    layers hold ``r = 0.8`` tokens per full-layer token: ``full = profile x (F + S) / (F + r S)``,
    ``swa = full x r``, each rounded down to ``page_size``. Worked example: 1,000,000 profile tokens,
    F = 16,384 B, S = 81,920 B (Gemma-like 1 : 5 layers of equal width): full = 1,000,000 x 98,304 /
    81,920 = 1,200,000, swa = 960,000.

    Sources: SGLang model_runner_kv_cache_mixin.py ``set_num_tokens_hybrid_swa``.
    """
    num, den = SWA_FULL_TOKENS_RATIO
    if profile_tokens <= 0 or full_bytes_per_token <= 0:
        return max(profile_tokens, 0), 0
    full = profile_tokens * (full_bytes_per_token + swa_bytes_per_token) * den // (
        full_bytes_per_token * den + swa_bytes_per_token * num)
    swa = full * num // den
    return full // page_size * page_size, swa // page_size * page_size


DSA_PAGE_SIZE = 64
"""Page size SGLang forces for DeepSeek-V3.2 / GLM-5.x sparse attention on CUDA (server_args.py, the DeepSeek
NSA / DSA model-specific adjustment)."""


def sglang_dsa_kv_name(request: EngineRequest) -> str:
    """The KV dtype SGLang stores a DSA model in: ``--kv-cache-dtype auto`` becomes ``bfloat16`` below compute
    capability 10 (Hopper) and ``fp8_e4m3`` from 10 (Blackwell); any other choice stays.

    Sources: SGLang python/sglang/srt/server_args.py (the DeepSeek NSA adjustment of
    ``_handle_model_specific_adjustments``, later ``_set_default_nsa_kv_cache_dtype`` and the DSA post-process
    pass): the device's major capability picks the default.
    """
    if request.kv_cache_dtype != "auto":
        return request.kv_cache_dtype
    return "fp8" if gpu_capability(request.gpu_name)[0] >= 10 else "bf16"


def sglang_kv_row_bytes(layer, dtypes, tp: int, indexer: IndexedMLAAttention | None) -> tuple[int, int]:
    """(K, V) bytes of one token in one layer as SGLang's cell counts it [bytes].

    Without ``indexer`` (no DSA model): :func:`planner.engines.common.kv_row_bytes`. On a DSA model every MLA
    layer of the stage costs its latent row plus one indexer key (:func:`planner.model.sparse.engine_indexer_bytes`,
    132 B for 128 values), whether or not the layer runs an indexer of its own (GLM-5.2's layers that reuse
    indices keep the buffer too): the pool builds the indexer buffer for each of its ``layer_num`` layers and the
    cell multiplies both terms by the stage's layers. The latent row is ``kv_lora_rank + qk_rope_head_dim``
    values in the cache dtype, except fp8, where it is the FlashMLA layout of
    :func:`planner.model.layers.fp8_ds_mla_bytes` (512 FP8 + 4 fp32 scales + 64 bf16 rope = 656 B).
    Worked example, DeepSeek-V3.2 (61 layers): bf16 61 x (1,152 + 132) = 78,324 B; fp8 61 x (656 + 132) = 48,068 B.

    Sources: SGLang python/sglang/srt/mem_cache/memory_pool.py (``NSATokenToKVPool`` / ``DSATokenToKVPool``:
    ``index_k_with_scale_buffer`` per layer, ``override_kv_cache_dim``); model_executor/model_runner_kv_cache_mixin.py
    (``calculate_mla_kv_cache_dim``, ``get_cell_size_per_token``) and, in 2026 builds,
    model_executor/pool_configurator.py (``DefaultPoolConfigurator._compute_cell_size``). Builds before that
    configurator priced the fp8 row as 576 B in the cell while allocating 656 B rows (sgl-project/sglang pull
    27354); the allocation is what is priced here.
    """
    if indexer is None or not isinstance(layer, MLAAttention):
        return kv_row_bytes(layer, dtypes, tp)
    if dtypes.fp8_ds_mla:
        latent = fp8_ds_mla_bytes(layer.kv_lora_rank, layer.qk_rope_head_dim)
    else:
        latent = dtypes.kv.bytes_for(layer.kv_lora_rank + layer.qk_rope_head_dim)
    return latent + engine_indexer_bytes(indexer.index_head_dim), 0


def mamba_pool(rest_bytes: int, state_bytes_per_request: int) -> tuple[int, int]:
    """``(slots, bytes)`` of SGLang's Mamba pool carved out of ``rest_bytes``.

    ``mamba = rest x r / (1 + r)`` with ``r`` = ``--mamba-full-memory-ratio`` (0.9), then
    ``slots = mamba // mamba_cache_per_req`` and the pool costs ``slots x mamba_cache_per_req``; the KV
    tokens come from what is left. Worked example: rest 60 GiB, 49,082,368 B per request:
    64,424,509,440 x 9 // 19 = 30,516,872,892 B -> 621 slots, 30,480,150,528 B.

    Sources: model_runner_kv_cache_mixin.py ``handle_max_mamba_cache`` (ratio-based branch: no
    ``--max-mamba-cache-size``, radix cache on).
    """
    if rest_bytes <= 0 or state_bytes_per_request <= 0:
        return 0, 0
    num, den = MAMBA_FULL_MEMORY_RATIO
    slots = rest_bytes * num // (num + den) // state_bytes_per_request
    return slots, slots * state_bytes_per_request


def _sglang_pool_side(terms, model: ModelSpec, stage: int, layers: range) -> int:
    """What the serving features load before SGLang sizes its KV pool, on one GPU of ``stage`` [bytes]: the
    LoRA pool (``init_lora_manager`` runs before ``init_memory_pool``, python/sglang/srt/model_executor/
    model_runner.py), split over stages by layer count."""
    return terms.lora_bytes * len(layers) // model.num_layers


def _sglang_serving_rank(rank: RankBudget, terms, model: ModelSpec, tokens: int, page: int, *, last: bool) -> RankBudget:
    """``rank`` with its serving parts: the LoRA pool inside the weights, and on the last stage the
    draft worker's weights and KV pool outside the target's pool
    (:func:`planner.serving.speculative.sglang_draft_pool_bytes`)."""
    draft = terms.draft_weights_bytes if last else 0
    pool = sglang_draft_pool_bytes(tokens, page, terms.draft_kv_bytes_per_token) if last else 0
    lora = terms.lora_bytes * rank.num_layers // model.num_layers
    parts = ((LORA_SLOTS, "weights", lora), (DRAFT_WEIGHTS, "outside", draft), (DRAFT_KV, "outside", pool))
    return replace(rank, serving_parts=parts)


def _sglang_draft_messages(rank: RankBudget, log: list[str], tokens: int, fraction: float, *,
                           mla: bool) -> list[str]:
    """Append the draft worker's startup lines to ``log``; a warning when it does not fit in what
    ``mem_fraction_static`` leaves (its weights, its pool and the activation estimate)."""
    parts = {label: size for label, _, size in rank.serving_parts}
    draft, pool = parts[DRAFT_WEIGHTS], parts[DRAFT_KV]
    sizes = (f"KV size: {pool / GiB:.2f} GB" if mla else
             f"K size: {pool / 2 / GiB:.2f} GB, V size: {pool / 2 / GiB:.2f} GB")
    log += [f"Load weight end. mem usage={gib2(draft)} GB", f"KV Cache is allocated. #tokens: {tokens}, {sizes}"]
    reserve = rank.memory_base_bytes - rank.requested_bytes
    need = draft + pool + rank.activation_bytes
    if need <= reserve:
        return []
    return [f"the draft worker's weights ({gib2(draft)} GiB) and KV pool ({gib2(pool)} GiB) with the activation "
            f"estimate need {gib2(need)} GiB, more than the {gib2(reserve)} GiB mem_fraction_static {fraction:g} "
            "leaves; lower --mem-fraction-static"]


def sglang_weight_bytes(model: ModelSpec, request: EngineRequest, c: Knobs, stage: int) -> int:
    """Weights one GPU of pipeline ``stage`` takes as SGLang measures them [bytes]: the caching allocator's
    reserved segments for the weight tensors, created in order and all kept (:func:`planner.engines.allocator.
    reserved_bytes`), since SGLang reads free device memory after ``torch.cuda.empty_cache()`` (module
    docstring); or the request's override. The tensors are the fused shapes vLLM creates
    (:func:`planner.engines.weight_tensors.vllm_weight_tensors`; SGLang fuses ``qkv_proj`` and ``gate_up_proj``
    alike), MXFP4 in the checkpoint's layout.

    Worked example (reference case N22, Qwen3-0.6B, bf16): the 8 MiB ``qkv_proj``, 4 MiB ``o_proj`` and
    6 MiB ``down_proj`` of each layer share 20 MiB segments (``kLargeBuffer``) with about 2 MiB left over
    per layer: 1.1777 GiB reserved for 1.1200 GiB of tensors; the log printed "mem usage=1.25 GB". A public
    SGLang log of Qwen3-14B at TP 4 printed "mem usage=7.08 GB": 7.0664 GiB reserved, 6.8874 GiB of tensors.
    """
    if request.weights_bytes is not None:
        return request.weights_bytes
    tensors, _ = vllm_weight_tensors(model, weight_dtype(request.weight_dtype), c.tp, stage, c.pp)
    return reserved_bytes(tensors)


def sglang_non_torch_bytes(profile: EngineProfile, request: EngineRequest, c: Knobs) -> int:
    """Device memory in use when SGLang measures ``free_before`` [bytes]: the CUDA context and the buffers of
    the process groups formed in ``init_torch_distributed`` (:func:`planner.engines.overheads.
    non_torch_bytes_by_topology` without the single-GPU runtime, whose cuBLAS workspace SGLang creates after
    the KV pool: ``ModelRunner.init_cublas`` follows ``init_memory_pool`` in model_runner.py); or the
    request's override."""
    if request.non_torch_bytes is not None:
        return request.non_torch_bytes
    groups = non_torch_bytes_by_topology(0, tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                         num_nodes=request.num_nodes, gpu_name=request.gpu_name)
    return groups + CUDA_CONTEXT_BYTES


def context_limit_reason(context_length: int, derived: int) -> str:
    """SGLang's refusal of a ``--context-length`` above the one it derives from the config (every release):
    ``ModelConfig._derive_context_length`` (python/sglang/srt/configs/model_config.py) raises a ValueError unless
    the env var ``SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN`` is set, before any weight loads. ``derived``: the
    model's ``max_position_embeddings``, standing in for SGLang's ``get_context_length``
    (python/sglang/srt/utils/hf_transformers_utils.py), which reads the first length key of the text config and
    scales it by a rope factor where the config states no original length: as vLLM's limit here (vllm.py)."""
    return (f"User-specified context_length ({context_length}) is greater than the derived context_length "
            f"({derived}); lower --context-length, or set SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 to allow it "
            "(outputs may be wrong past the model's length)")


def plan_sglang(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile) -> EnginePlan:
    """SGLang: ``max_total_num_tokens = (free_before x mem_fraction_static - weights) // cell``.

    With ``available_kv_memory_bytes`` (the printed K + V size) the tokens are
    ``available // cell - page_size``. Worked example (case S01, Qwen3-235B TP 4,
    94 layers x 1 head x 256 x 2 B = 48,128 B cell): K size 8.23 GiB printed for
    367,404 tokens = (367,404 + 1) x 24,064 B = 8.234 GiB.

    Sources: model_runner_kv_cache_mixin.py ``profile_max_num_token``,
    ``_resolve_max_num_reqs``; memory_pool.py ``MHATokenToKVPool``; ENGINES.md 2.
    """
    indexer = indexed_mla_layer(model)  # a DeepSeek-V3.2 / GLM-5.x model (index_topk): SGLang's NSA pool
    c = resolve_knobs(model, request, None if indexer is None else sglang_dsa_kv_name(request))
    if indexer is not None and c.dtypes.kv.name == "fp8":  # the FlashMLA 656-B row (sglang_kv_row_bytes)
        c = replace(c, dtypes=replace(c.dtypes, fp8_ds_mla=True))
    spec = None if request.serving is None else request.serving.speculative
    reserve = SGLANG_SPEC_RESERVE_MIB[spec.method] if spec is not None else 0
    capacity = request.gpu_memory_reported_bytes or gpu_memory_bytes  # nvidia-smi's total (module docstring)
    if profile.id == "sglang-v0.4":  # mid-2025 builds: a fixed reserve per GPU class
        chunk, graph_bs, default_fraction = sglang_2025_memory_defaults(capacity, c.tp, c.pp, spec is not None)
    else:
        chunk, graph_bs, default_fraction = sglang_memory_defaults(capacity, c.tp, c.pp, reserve)
    vlm_note = None
    if request.gpu_memory_utilization is None:  # adjust_mem_fraction_for_vlm: the default only (sglang_vlm.py)
        default_fraction, vlm_note = sglang_vlm_fraction(model, profile.id, default_fraction)
    fraction = request.gpu_memory_utilization or default_fraction
    default_page = DSA_PAGE_SIZE if indexer is not None else default_block_size(profile, is_mla=False)
    page = request.block_size or default_page
    mnbt = request.max_num_batched_tokens or chunk
    terms = None if request.serving is None else serving_terms(model, request, profile, num_batched_tokens=mnbt)
    ranks, k_cells, v_cells, mamba_slots, mamba_states = [], [], [], [], []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        rows = [sglang_kv_row_bytes(model.layers[i], c.dtypes, c.tp, indexer) for i in layers]
        k_cell, v_cell = sum(r[0] for r in rows), sum(r[1] for r in rows)
        cell = k_cell + v_cell
        weights = sglang_weight_bytes(model, request, c, stage)
        if terms is not None and request.weights_bytes is None:  # LoRA pool and tower load before the KV pool
            weights += _sglang_pool_side(terms, model, stage, layers)
        non_torch = sglang_non_torch_bytes(profile, request, c)
        free_before = gpu_memory_bytes - non_torch - request.memory_in_use_bytes  # planner/engines/shared_gpu.py
        rest = int(free_before * fraction) - weights
        state = mamba_state_bytes_per_request(model, layers, c.dtypes, c.tp)
        slots, pool_bytes = mamba_pool(rest, state) if request.available_kv_memory_bytes is None else (0, 0)
        mamba_slots.append(slots)
        mamba_states.append(state)
        if request.available_kv_memory_bytes is not None:
            tokens = request.available_kv_memory_bytes // cell - page if cell else 0
        else:
            tokens = (rest - pool_bytes) // cell if cell and rest > pool_bytes else 0
        tokens = max(tokens, 0) // page * page
        pool = (tokens + page) * cell if tokens else max(rest, 0)
        activation, forward = profile_activation(model, request, c, mnbt)
        rank = rank_budget(stage, layers, base=free_before, requested=int(free_before * fraction), weights=weights,
                           activation=activation, forward=forward, sampler=0, non_torch=non_torch,
                           cudagraph=request.cudagraph_bytes or 0, available=pool, per_token=cell,
                           bytes_per_block=cell * page, num_blocks=tokens, request=request)
        ranks.append(replace(rank, state_pool_bytes=pool_bytes) if pool_bytes else rank)
        k_cells.append(k_cell)
        v_cells.append(v_cell)
    tokens = min(r.num_blocks for r in ranks)
    profile_tokens = tokens
    swa_split = None
    if model.model_type in HYBRID_SWA_MODEL_TYPES and request.available_kv_memory_bytes is None and tokens > 0:
        rows = {False: [0, 0], True: [0, 0]}  # sliding? -> [K, V] bytes per token over the first stage's layers
        for i in pipeline_layer_ranges(model.num_layers, c.pp)[0]:
            k_row, v_row = kv_row_bytes(model.layers[i], c.dtypes, c.tp)
            sliding = isinstance(model.layers[i], (SlidingWindowAttention, ChunkedLocalAttention))
            rows[sliding][0] += k_row
            rows[sliding][1] += v_row
        swa_split = hybrid_swa_tokens(tokens, sum(rows[False]), sum(rows[True]), page)
        tokens = swa_split[0]
        k_cells[0] = ((swa_split[0] + page) * rows[False][0] + (swa_split[1] + page) * rows[True][0]) // (tokens + page)
        v_cells[0] = ((swa_split[0] + page) * rows[False][1] + (swa_split[1] + page) * rows[True][1]) // (tokens + page)
    if terms is not None:  # the draft pool takes the SWA-adjusted token count (draft_runner_cache_size)
        ranks = [_sglang_serving_rank(r, terms, model, tokens, page, last=r.stage == c.pp - 1) for r in ranks]
    seqs = request.max_num_seqs or max(1, int(min(max(min(profile_tokens / c.max_model_len * 512, 4096), 2048),
                                                  profile_tokens / 2)))
    hybrid_mamba = any(mamba_states) and request.available_kv_memory_bytes is None
    if hybrid_mamba:  # init_memory: max_num_reqs = min(max_num_reqs, max_mamba_cache_size // 3)
        seqs = max(1, min(seqs, min(mamba_slots) // MAMBA_SLOTS_PER_RUNNING_REQUEST))
    concurrency = min(tokens / c.max_model_len, seqs) if hybrid_mamba else tokens / c.max_model_len
    reasons, warnings = [], []
    notes = [] if vlm_note is None else [vlm_note]
    if model.max_position_embeddings and c.max_model_len > model.max_position_embeddings:
        reasons.append(context_limit_reason(c.max_model_len, model.max_position_embeddings))
    if tokens <= 0:
        reasons.append("Not enough memory. Please try to increase --mem-fraction-static "
                       f"(weights {gib2(ranks[0].weights_bytes)} GiB leave no room in "
                       f"{fraction:g} x {gib2(ranks[0].memory_base_bytes)} GiB)")
    reserve = ranks[0].memory_base_bytes - ranks[0].requested_bytes
    if ranks[0].activation_bytes > reserve:
        warnings.append(f"the activation estimate ({gib2(ranks[0].activation_bytes)} GiB) exceeds the "
                        f"{gib2(reserve)} GiB that mem_fraction_static {fraction:g} leaves; lower it")
    if swa_split is not None:
        notes.append(f"hybrid SWA pool: {swa_split[0]:,} full-layer and {swa_split[1]:,} sliding-layer tokens "
                     "(--swa-full-tokens-ratio 0.8)")
    elif any(isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention)) for layer in model.layers):
        notes.append("sliding-window layers priced as full attention (SGLang disables its hybrid SWA pool for "
                     "Gemma and gpt-oss)")
    if any(isinstance(layer, RecurrentState) for layer in model.layers) and not hybrid_mamba:
        notes.append("with the KV memory given, the Mamba state pool SGLang carves out first is not priced")
    elif hybrid_mamba:
        notes.append(f"Mamba pool: {min(mamba_slots)} state slots of {mamba_states[0]:,} B (bf16 conv, fp32 SSM) "
                     f"take {gib2(min(mamba_slots) * mamba_states[0])} GiB before the KV tokens "
                     "(--mamba-full-memory-ratio 0.9); max_running_requests is capped at slots // 3")
    mla = any(isinstance(layer, MLAAttention) for layer in model.layers)
    kv_print = (f"KV Cache is allocated. #tokens: {tokens}, KV size: {(tokens + page) * k_cells[0] / GiB:.2f} GB"
                if mla else
                f"KV Cache is allocated. #tokens: {tokens}, K size: {(tokens + page) * k_cells[0] / GiB:.2f} GB, "
                f"V size: {(tokens + page) * v_cells[0] / GiB:.2f} GB")
    mamba_print = ([f"Mamba Cache is allocated. max_mamba_cache_size: {mamba_slots[0]}, "
                    f"state size: {mamba_slots[0] * mamba_states[0] / GiB:.2f}GB"] if hybrid_mamba else [])
    swa_print = ([f"Use sliding window memory pool. full_layer_tokens={swa_split[0]}, "
                  f"swa_layer_tokens={swa_split[1]}"] if swa_split is not None else [])
    log = [f"Load weight end. mem usage={gib2(ranks[0].weights_bytes)} GB", *mamba_print, *swa_print, kv_print,
           f"max_total_num_tokens={tokens}, chunked_prefill_size={mnbt}, max_running_requests={seqs}, "
           f"context_len={c.max_model_len}"]
    if terms is not None and terms.draft_weights_bytes:
        warnings += _sglang_draft_messages(ranks[-1], log, tokens, fraction, mla=mla)
    plan = engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
                 block_size=page, mnbt=mnbt, seqs=seqs, tokens=tokens, num_blocks=tokens // page,
                 concurrency=concurrency, engine_max_len=min(tokens, c.limit),
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
                                   block_size=request.block_size, num_nodes=request.num_nodes))
    return nodes_refusal(plan, request.num_nodes)  # --nnodes that do not divide tp x pp (sglang_nodes.py)
