"""SGLang: budget -> KV tokens per GPU.

``rest = free_before_load x mem_fraction_static - weights``,
``max_total_num_tokens = rest // cell`` (rounded down to ``page_size``); the
pool holds ``tokens + page_size`` slots (slot 0 pads), printed as K and V size.

With serving features (:mod:`planner.engines.serving`): the LoRA pool loads
before the KV pool is sized, so they come out of it like weights; speculative decoding lowers the default
fraction (:data:`planner.serving.speculative.SGLANG_SPEC_RESERVE_MIB`) and the draft worker's weights
and own KV pool sit beside the target's (:func:`planner.serving.speculative.sglang_draft_pool_bytes`).

Sources: SGLang python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py
(``profile_max_num_token``, ``get_cell_size_per_token``), mem_cache/memory_pool.py;
ENGINES.md 2.
"""

from __future__ import annotations

from dataclasses import replace

from planner.engines.common import (
    engine_plan,
    kv_row_bytes,
    non_torch_memory,
    profile_activation,
    rank_budget,
    resolve_knobs,
    stage_weights,
)
from planner.engines.launch import LaunchSpec
from planner.engines.overheads import (
    pipeline_layer_ranges,
)
from planner.engines.profiles import EngineProfile, default_block_size, sglang_memory_defaults
from planner.engines.serving import DRAFT_KV, DRAFT_WEIGHTS, LORA_SLOTS, serving_terms
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.engines.vllm import gib2
from planner.model import ModelSpec
from planner.model.layers import (
    ChunkedLocalAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.serving.speculative import SGLANG_SPEC_RESERVE_MIB, sglang_draft_pool_bytes
from planner.units import GiB


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


def plan_sglang(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile) -> EnginePlan:
    """SGLang: ``max_total_num_tokens = (free_before x mem_fraction_static - weights) // cell``.

    With ``available_kv_memory_bytes`` (the printed K + V size) the tokens are
    ``available // cell - page_size``. Worked example (case S01, Qwen3-235B TP 4,
    94 layers x 1 head x 256 x 2 B = 48,128 B cell): K size 8.23 GiB printed for
    367,404 tokens = (367,404 + 1) x 24,064 B = 8.234 GiB.

    Sources: model_runner_kv_cache_mixin.py ``profile_max_num_token``,
    ``_resolve_max_num_reqs``; memory_pool.py ``MHATokenToKVPool``; ENGINES.md 2.
    """
    c = resolve_knobs(model, request)
    spec = None if request.serving is None else request.serving.speculative
    reserve = SGLANG_SPEC_RESERVE_MIB[spec.method] if spec is not None else 0
    chunk, graph_bs, default_fraction = sglang_memory_defaults(gpu_memory_bytes, c.tp, c.pp, reserve)
    fraction = request.gpu_memory_utilization or default_fraction
    page = request.block_size or default_block_size(profile, is_mla=False)
    mnbt = request.max_num_batched_tokens or chunk
    terms = None if request.serving is None else serving_terms(model, request, profile, num_batched_tokens=mnbt)
    ranks, k_cells, v_cells = [], [], []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, c.pp)):
        rows = [kv_row_bytes(model.layers[i], c.dtypes, c.tp) for i in layers]
        k_cell, v_cell = sum(r[0] for r in rows), sum(r[1] for r in rows)
        cell = k_cell + v_cell
        weights = stage_weights(model, request, c, stage)
        if terms is not None and request.weights_bytes is None:  # LoRA pool and tower load before the KV pool
            weights += _sglang_pool_side(terms, model, stage, layers)
        non_torch = non_torch_memory(profile, request, c, context=True)
        free_before = gpu_memory_bytes - non_torch
        rest = int(free_before * fraction) - weights
        if request.available_kv_memory_bytes is not None:
            tokens = request.available_kv_memory_bytes // cell - page if cell else 0
        else:
            tokens = rest // cell if cell and rest > 0 else 0
        tokens = max(tokens, 0) // page * page
        pool = (tokens + page) * cell if tokens else max(rest, 0)
        activation, forward = profile_activation(model, request, c, mnbt)
        ranks.append(rank_budget(stage, layers, base=free_before, requested=int(free_before * fraction), weights=weights,
                           activation=activation, forward=forward, sampler=0, non_torch=non_torch,
                           cudagraph=request.cudagraph_bytes or 0, available=pool, per_token=cell,
                           bytes_per_block=cell * page, num_blocks=tokens, request=request))
        k_cells.append(k_cell)
        v_cells.append(v_cell)
    tokens = min(r.num_blocks for r in ranks)
    if terms is not None:
        ranks = [_sglang_serving_rank(r, terms, model, tokens, page, last=r.stage == c.pp - 1) for r in ranks]
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
    if terms is not None and terms.draft_weights_bytes:
        warnings += _sglang_draft_messages(ranks[-1], log, tokens, fraction, mla=mla)
    return engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=fraction,
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
