"""Home's formula panel: the plan's arithmetic with the user's numbers, one row per kind of layer and per term.

Every value comes from the planner (:func:`planner.budget.plan`, :func:`planner.pipeline.plan_pipeline`); the
rows only say how it was reached.
"""

from __future__ import annotations

from collections import Counter

import streamlit as st

from planner.budget import Plan
from planner.model import ModelSpec
from planner.model.dtypes import WEIGHT_DTYPES
from planner.model.kv import cache_dtypes
from planner.model.layers import (
    FP8_DS_MLA_SCALE_BLOCK,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.sparse import (
    AttentionWithState,
    CompressedAttention,
    IndexedAttention,
    IndexedMLAAttention,
    SharedKVSlidingAttention,
    engine_indexer_bytes,
)
from planner.pipeline import stage_model
from planner.pool_kv import exact_cache_label
from ui import kv_tiles
from ui.format import (
    count_noun,
    format_bytes,
    format_bytes_exact,
    format_fraction,
    format_int,
    format_limited_by,
    format_tokens,
)
from ui.inputs import PlanInputs


def _stage_words(plan: Plan, held: ModelSpec) -> str:
    """``, for pipeline stage 1 of 2 (its 63 layers; each stage on 8 tensor-parallel GPUs)``; "" for one stage."""
    pp = plan.pipeline_parallel_size
    if pp == 1:
        return ""
    return (f", for pipeline stage {plan.pipeline_stage} of {pp} (its {count_noun(len(held.layers), 'layer')}; "
            f"each stage on {count_noun(plan.num_gpus // pp, 'tensor-parallel GPU')}), the stage with the fewest "
            "KV tokens")


def _layer_line(layer, count: int, model: ModelSpec, inputs: PlanInputs, tp: int) -> str:
    """One row of the KV-per-token formula for ``count`` identical layers on a tensor-parallel group of ``tp``."""
    rows = count_noun(count, "layer")  # "1 layer", "31 layers"
    dtypes = cache_dtypes(model, inputs.weight_dtype, inputs.kv_cache_dtype,
                          gpu_name=inputs.gpu_ids[0] if inputs.gpu_ids else "")  # an AMD GPU stores no fp8_ds_mla
    per_layer = format_bytes(layer.bytes_per_token(dtypes, tp), "B")
    special = _new_kind_line(layer, count, dtypes, tp, per_layer)
    if special:
        return special
    if isinstance(layer, FullAttention):
        heads = layer.kv_heads_per_gpu(tp)
        if layer.v_head_dim in (None, layer.head_dim):
            shape = f"2 (K, V) × {heads} KV heads × {layer.head_dim} head_dim"
        else:
            shape = f"{heads} KV heads × ({layer.head_dim} K + {layer.v_head_dim} V) head_dim"
        kind = "full attention"
        cap = ""
        if isinstance(layer, SlidingWindowAttention):
            kind, cap = "sliding window", f"; holds at most {format_tokens(layer.sliding_window)}"
        elif isinstance(layer, ChunkedLocalAttention):
            kind, cap = "chunked local", f"; holds at most {format_tokens(layer.attention_chunk_size)}"
        return (f"| {rows}, {kind} | {shape} × {dtypes.kv.label}"
                f"{cap} | {per_layer} per layer |")
    if isinstance(layer, MLAAttention):
        return f"| {rows}, MLA latent | {_latent_text(layer, dtypes)}, no factor 2 | {per_layer} per layer |"
    if isinstance(layer, RecurrentState):
        state = format_bytes(layer.bytes_per_sequence(0, dtypes, tp), "B")
        return (f"| {rows}, recurrent state | constant {state} per sequence ({dtypes.state.label}) "
                "| 0 B per token |")
    return f"| {rows}, shared / no cache | reuse another layer's cache | 0 B per token |"


def _latent_text(layer: MLAAttention, dtypes) -> str:
    """How one token's MLA latent is stored: ``(512 kv_lora_rank + 64 qk_rope_head_dim) × bf16 (2 B)``, or
    vLLM's ``fp8_ds_mla`` layout (FP8 latent, an fp32 scale per 128 values, bf16 rope key) where the budget
    prices it (:attr:`planner.model.layers.CacheDtypes.fp8_ds_mla`)."""
    if dtypes.fp8_ds_mla:
        scales = layer.kv_lora_rank // FP8_DS_MLA_SCALE_BLOCK
        return (f"fp8_ds_mla: {layer.kv_lora_rank} kv_lora_rank × FP8 (1 B) + {scales} fp32 scales (4 B) + "
                f"{layer.qk_rope_head_dim} qk_rope_head_dim × bf16 (2 B)")
    return (f"({layer.kv_lora_rank} kv_lora_rank + {layer.qk_rope_head_dim} qk_rope_head_dim) × "
            f"{dtypes.kv.label}")


def _new_kind_line(layer, count: int, dtypes, tp: int, per_layer: str) -> str | None:
    """The formula row of a 2025-26 layer kind (:mod:`planner.model.sparse`), or None for the others."""
    rows = count_noun(count, "layer")
    if isinstance(layer, IndexedMLAAttention):
        return (f"| {rows}, MLA latent + indexer key | {_latent_text(layer, dtypes)} + {layer.index_head_dim}-value "
                f"FP8 indexer key with its scale ({format_bytes(engine_indexer_bytes(layer.index_head_dim), 'B')}) "
                f"| {per_layer} per layer |")
    if isinstance(layer, IndexedAttention):
        return (f"| {rows}, attention + indexer key | 2 (K, V) × {layer.kv_heads_per_gpu(tp)} KV heads × "
                f"{layer.head_dim} × {dtypes.kv.label} + FP8 indexer key "
                f"({format_bytes(engine_indexer_bytes(layer.index_head_dim), 'B')}) | {per_layer} per layer |")
    if isinstance(layer, SharedKVSlidingAttention):
        return (f"| {rows}, sliding window, K = V | {layer.kv_heads_per_gpu(tp)} head × {layer.head_dim} × "
                f"{dtypes.kv.label}; holds at most {format_tokens(layer.sliding_window)} | {per_layer} per layer |")
    if isinstance(layer, CompressedAttention):
        indexer = f" + indexer key of {layer.index_head_dim}" if layer.index_head_dim else ""
        return (f"| {rows}, compressed (1 entry per {layer.compress_ratio} tokens) | ({layer.head_dim} × "
                f"{dtypes.kv.label}{indexer}) ÷ {layer.compress_ratio}, beside a "
                f"{format_tokens(layer.sliding_window)} window | {per_layer} per layer |")
    if isinstance(layer, AttentionWithState):
        state = format_bytes(layer.state_bytes(dtypes, tp), "B")
        return (f"| {rows}, attention + recurrent state | 2 (K, V) × {layer.kv_heads_per_gpu(tp)} KV heads × "
                f"{layer.head_dim} × {dtypes.kv.label}, and {state} of state per sequence | {per_layer} per layer |")
    return None


def formula_panel(plan: Plan, model: ModelSpec, inputs: PlanInputs, command: str | None = None) -> None:
    """An expander that shows the arithmetic with the user's numbers (values from the planner): for a plan of
    pipeline stages (:func:`planner.pipeline.plan_pipeline`), the stage its per-GPU figures are of, its layers and
    parameters on its tensor-parallel group."""
    per_seq_paged = plan.kv_cache_bytes_per_sequence_paged_per_gpu
    pp = plan.pipeline_parallel_size
    tp = plan.num_gpus // pp
    held = stage_model(model, plan.pipeline_stage, pp)  # pipeline stages: the stage these figures are of
    split = f" ÷ {tp} GPUs (tensor parallel)" if tp > 1 else ""
    with st.expander("How these numbers are computed (formulas with your inputs)", icon=":material/function:"):
        st.markdown("**KV cache per token**, per GPU: one row per kind of layer, summed over layers" +
                    _stage_words(plan, held) + ".")
        rows = ["| Layers | Per layer, per token | Bytes |", "|---|---|---|"]
        rows += [_layer_line(layer, n, held, inputs, tp) for layer, n in Counter(held.layers).items()]
        named = exact_cache_label(plan.kv_cache_exact_dtype, plan.kv_cache_dtype)  # V4: bf16, or plain fp8
        exact = f" in {named}" if named else ""
        rows.append(f"| **Sum** | | **{format_bytes(plan.kv_cache_bytes_per_token_per_gpu, 'B')} per token{exact}** |")
        st.markdown("\n".join(rows))
        wfmt = WEIGHT_DTYPES[plan.weight_dtype]
        lines = [
            "| Quantity | Formula with your numbers | Result |", "|---|---|---|",
            f"| Weights | {format_int(held.num_parameters)} params{' of the stage' if pp > 1 else ''} × "
            f"{wfmt.label if plan.weight_dtype == plan.weight_dtype_resolved else plan.weights_label + ' (per tensor)'}"
            f"{split} | "
            f"{format_bytes_exact(plan.weights_bytes_per_gpu)} |",
            f"| KV per sequence{exact} | KV per token × {format_tokens(plan.context_len)} (windows capped)"
            f"{kv_tiles.kv_split_text(plan)} | "
            f"{format_bytes_exact(plan.kv_cache_bytes_per_sequence_per_gpu)} |",
            f"| Usable memory | {format_fraction(plan.gpu_memory_utilization)} (utilization) × "
            f"{format_bytes(plan.gpu_memory_bytes)} (framework-visible) | "
            f"{format_bytes_exact(plan.usable_memory_bytes)} |",
            f"| Overhead | {plan.overhead_formula} | {format_bytes_exact(plan.overhead_bytes)} |",
            f"| KV budget | usable − weights − overhead = {format_bytes(plan.usable_memory_bytes)} − "
            f"{format_bytes(plan.weights_bytes_per_gpu)} − {format_bytes(plan.overhead_bytes)} | "
            f"{format_bytes_exact(plan.kv_cache_budget_bytes)} |",
            f"| Capacity | tokens the budget holds as {format_int(plan.context_len)}-token sequences: "
            f"⌊(budget − prefill extra) × {format_int(plan.context_len)} ÷ KV per sequence in whole "
            f"{plan.block_size}-token blocks⌋ (users × context; for a full-attention model vLLM's "
            "\"GPU KV cache size\" within a block; windowed, hybrid and compressed models: the Engine page has "
            "vLLM's own figure) | "
            f"{format_tokens(plan.kv_cache_capacity_tokens_at_context)} |",
            f"| Max concurrent sequences | {kv_tiles.users_formula_text(plan, per_seq_paged)} | "
            f"{format_int(plan.max_concurrent_sequences)} |",
            f"| Max context at batch {plan.batch_size} | largest C with {plan.batch_size} × KV(C) ≤ KV budget "
            f"({format_limited_by(plan.max_context_len_limited_by)}) | {format_tokens(plan.max_context_len)} |",
            f"| Max context by memory alone | largest C with {plan.batch_size} × KV(C) ≤ KV budget, ignoring "
            f"max_position_embeddings | {format_tokens(plan.max_context_len_by_memory)} |",
            f"| Max context before overheads | largest C with {plan.batch_size} × KV(C) ≤ "
            f"{format_bytes(plan.gpu_memory_bytes)} − {format_bytes(plan.weights_bytes_per_gpu)} (whole card minus "
            "weights; exact tokens, or vLLM's fp8_ds_mla pool pages for DeepSeek-V4, as its users) | "
            f"{format_tokens(plan.max_context_len_before_overheads)} |",
        ]
        st.markdown("\n".join(lines))
        st.caption("Sizes: GiB = 2^30 bytes, GB = 10^9 bytes. Quantized weight formats apply to linear layers; "
                   "embeddings keep 16 bits. Sources: vLLM vllm/v1/core/kv_cache_utils.py and "
                   "vllm/v1/worker/gpu_worker.py; "
                   "the README's Models section.")
        st.markdown("Same plan from the command line:")
        st.code(command or inputs.cli_command(pp), language="bash")  # Home's: with its stages, -dcp and nodes
