"""The Engine page's metric tiles: what an engine plan allocates and prints, as label -> (value, help).

All values come from :class:`planner.engines.types.EnginePlan` fields; nothing is computed here.
"""

from __future__ import annotations

import streamlit as st

from planner.engines.expected_error import expected_error_reason
from planner.engines.hf_transformers import generate_allocated_bytes, generate_cache_bytes
from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.rank_bar import rank_bar
from planner.engines.types import EnginePlan
from planner.scale.replicas import queued_requests, replica_batch
from ui.expected_error import AVAILABLE_KV_LABEL, available_kv_delta, available_kv_help, available_kv_value
from ui.format import count_noun, format_bytes, format_bytes_exact, format_int, format_tokens, md_message
from ui.tiles import Tile, show_tiles


def engine_metric_values(plan: EnginePlan) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help), all from ``plan`` fields."""
    rank = plan.limiting_rank
    source = "the engine's own figure" if plan.available_kv_from_log else "overhead model estimate"
    if plan.family == "transformers":  # no blocks, no pool, no startup print: one growing cache per sequence
        return {
            "Memory free for caches per GPU": (format_bytes(plan.available_kv_cache_bytes),
                                               f"{format_bytes_exact(plan.available_kv_cache_bytes)}; device "
                                               f"minus weights, the prompt's forward pass and non-torch memory"),
            "Sequences that fit": (format_int(plan.num_gpu_blocks),
                                   f"each sequence's cache at its peak: {format_bytes(rank.bytes_per_block)} "
                                   f"at {format_tokens(plan.max_model_len)}"),
            "Tokens of cache": (format_int(plan.engine_kv_cache_tokens),
                                "sequences that fit x max_model_len (nothing is printed by transformers)"),
            "Longest sequence that fits": (format_int(plan.engine_max_model_len),
                                           "one sequence, its prompt as long as the sequence (the peak of "
                                           "prefill and decode)"),
        }
    return {
        AVAILABLE_KV_LABEL: (available_kv_value(plan), available_kv_help(plan, source)),
        "GPU blocks": (format_int(plan.num_gpu_blocks),
                       f"{plan.block_size}-token blocks of {format_bytes(rank.bytes_per_block, 'auto')} "
                       f"({count_noun(plan.num_kv_groups, 'group')} of {count_noun(plan.group_size, 'layer')})"),
        _tokens_label(plan): (format_int(plan.engine_kv_cache_tokens), _tokens_help(plan)),
        "Max concurrency": (f"{plan.max_concurrency:.2f}x",
                            f"requests of {format_tokens(plan.max_model_len)}; "
                            f"{plan.max_concurrency_all_replicas:.2f}x over "
                            f"{count_noun(plan.data_parallel_size, 'replica')}"),
        **({DECODING_LABEL: (f"{plan.max_concurrency_decoding:,.2f}", md_message(plan.decoding_note))}
           if plan.decodes_more_than_printed else {}),
        "Longest max_model_len": (
            format_int(plan.engine_max_model_len),
            f"The largest --max-model-len this engine accepts with this memory (the plan above launches with "
            f"{format_tokens(plan.max_model_len)}); one request of {format_tokens(plan.max_model_len)} needs "
            f"{format_bytes(plan.kv_cache_bytes_needed_per_request)} of KV cache"),
    }


def _tokens_printed(plan: EnginePlan) -> bool:
    """False for a launch vLLM V1 refuses at its KV check: it stops before its "GPU KV cache size" line (V0 prints
    its blocks first; QA, stop 43: the tile said "as printed" for a line no log has)."""
    return plan.starts or plan.family != "vllm" or ENGINE_PROFILES[plan.engine].start_check == "v0_tokens"


def _tokens_label(plan: EnginePlan) -> str:
    return "KV cache size [tokens, as printed]" if _tokens_printed(plan) else "KV cache size [tokens]"


def _tokens_help(plan: EnginePlan) -> str:
    if _tokens_printed(plan):
        return plan.engine_label
    return (f"{plan.engine_label}. Not printed: a launch its KV check refuses stops before the \"GPU KV cache size\" "
            "line (vllm/v1/core/kv_cache_utils.py); this is what the pool would hold")


DECODING_LABEL = "Requests decoding at once"
"""The Engine page's metric of :attr:`planner.engines.types.EnginePlan.max_concurrency_decoding` (a count of
requests, so no "x": the printed concurrency beside it keeps vLLM's)."""


def _capped_label(plan: EnginePlan) -> str:
    """The metric whose count the scheduler caps: the decoding one where it is shown, else the printed one."""
    return DECODING_LABEL if plan.decodes_more_than_printed else "Max concurrency"


def cap_delta(plan: EnginePlan) -> str | None:
    """``"runs 1,024 (max_num_seqs)"`` under the concurrency metric when the pool holds more requests than the
    engine runs at once (:attr:`planner.engines.types.EnginePlan.scheduler_cap_note`, said in full above the
    tiles; short here, as the tile is narrow at 1,280 px), else None."""
    return f"runs {plan.max_num_seqs:,} (max_num_seqs)" if plan.scheduler_cap_note else None


def rounded_up_delta(plan: EnginePlan) -> str | None:
    """``"50 whole requests"`` under the printed concurrency when its two decimals round up to a whole request
    the pool does not hold, else None: DeepSeek-V3.2 on 8 x B200 at 32,768 tokens has 13,055 blocks of 256 per
    request, 50.996, printed "51.00x" beside Home's and Find's 50 (QA). Whole requests are
    :attr:`~planner.engines.types.EnginePlan.requests_at_prefill_peak`, floored from the exact ratio; a pool
    shown with its decoding count has that tile instead."""
    if plan.decodes_more_than_printed or plan.requests_held_ratio is None:
        return None
    whole = plan.requests_at_prefill_peak
    return f"{count_noun(whole, 'whole request')}" if whole < int(plan.max_concurrency) else None


def whole_decoding_delta(plan: EnginePlan) -> str | None:
    """``"64 whole requests"`` under the decoding count (``64.81``), the users Home counts from the same pool
    (QA: "64.81" beside Home's 64 read oddly); None where that tile is not shown."""
    if not plan.decodes_more_than_printed:
        return None
    return count_noun(int(plan.max_concurrency_decoding), "whole request")


def engine_metrics(plan: EnginePlan) -> None:
    """Bordered tiles, three per row (:mod:`ui.tiles`)."""
    notes = {AVAILABLE_KV_LABEL: available_kv_delta(plan),  # grey lines under the values
             _capped_label(plan): cap_delta(plan) or rounded_up_delta(plan) or whole_decoding_delta(plan)}
    show_tiles([Tile(label, value, help_text, notes.get(label))
                for label, (value, help_text) in engine_metric_values(plan).items()], 3)
    if reason := expected_error_reason(plan):  # a known miss sets the +- under the available KV (QA: +-40.51 GiB)
        st.caption(md_message(reason))


def batch_short_text(plan: EnginePlan, batch_size: int | None) -> str:
    """The sentence for a plan link's ``batch_size`` (Home's 'Concurrent sequences') that one replica's pool
    cannot hold at once, or "" (no batch, a pool that holds it, or an engine that does not start: its verdict
    speaks). This page plans no batch, so it said "starts" in green where Home said "Does not fit" for the same
    link (QA: Qwen3.5-27B + MTP k=3 with 2 images, 8 x 32,768 tokens on an H100: 5.72x). Whole requests are
    :attr:`~planner.engines.types.EnginePlan.requests_held` floored (vLLM: its decoding concurrency). Over
    ``data_parallel_size`` replicas the batch is spread, ``ceil(batch / replicas)`` at most on one, as Home and the
    CLI judge it (:mod:`planner.scale.replicas`; QA: 200 over 4 replicas holding 13 each said 187 would wait, not
    4 x 37 = 148)."""
    if not batch_size or not plan.starts or plan.family == "transformers":
        return ""
    held, replicas = int(plan.requests_held), max(plan.data_parallel_size, 1)
    share = replica_batch(batch_size, replicas)
    if held >= share:
        return ""
    spread = (f" spread over {count_noun(replicas, 'replica')} (up to {format_int(share)} on one, "
              f"ceil({format_int(batch_size)} / {replicas}))" if replicas > 1 else "")
    in_all = f" ({format_int(held * replicas)} in all)" if replicas > 1 else ""
    waiting = queued_requests(batch_size, replicas, held)
    return (f"The link's batch of {count_noun(batch_size, 'sequence')} (`batch_size`, Home's 'Concurrent "
            f"sequences'){spread} is more than the {count_noun(held, 'request')} of {format_int(plan.max_model_len)} "
            f"tokens one replica's pool holds at once{in_all}: {plan.engine} starts, but "
            f"{count_noun(waiting, 'request')} would wait in {'their queues' if replicas > 1 else 'its queue'}. Add "
            "GPUs, or lower the batch or the context on Home.")


def concurrency_text(plan: EnginePlan) -> str:
    """``"2.35x concurrency per replica as printed"`` where the engine prints its concurrency (vLLM), else
    ``"2.35x concurrency per replica (computed from its KV tokens; sglang prints no concurrency line)"``
    (:attr:`planner.engines.types.EnginePlan.concurrency_printed`)."""
    if plan.concurrency_printed:
        return f"{plan.max_concurrency:.2f}x concurrency per replica as printed"
    return (f"{plan.max_concurrency:.2f}x concurrency per replica (computed from its KV tokens; {plan.engine} "
            "prints no concurrency line)")


def cap_sentence(plan: EnginePlan) -> str:
    """What the bar's dashed line stands for where it is not a share of the whole budget
    (:func:`planner.engines.rank_bar.rank_bar`): SGLang's static pools, TensorRT-LLM's KV cap (a fraction of the free
    memory, after the terms allocated before it), or no cap at all."""
    bar = rank_bar(plan, plan.limiting_rank, plan.gpu_memory_bytes)
    if bar.line_kind == "static":
        return (f" The dashed line is mem_fraction_static {bar.fraction:g} × the "
                f"{format_bytes(bar.fraction_base_bytes)} free when SGLang starts = {format_bytes(bar.line_bytes)}: "
                "it holds the weights and the KV pool; the activation peak, CUDA graphs and the CUDA context and "
                "process groups sit outside it (model_runner.py profile_max_num_token).")
    if bar.line_kind == "free":
        before = bar.line_bytes - plan.limiting_rank.requested_bytes
        return (f" The dashed line is the KV cap: the {format_bytes(before)} allocated before the KV pool (weights, "
                f"activation peak, non-torch, CUDA graphs) + {ENGINE_PROFILES[plan.engine].fraction_flag} "
                f"{bar.fraction:g} × the {format_bytes(bar.fraction_base_bytes)} then free = "
                f"{format_bytes(bar.line_bytes)}; the rest of the free memory stays unallocated "
                "(tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator._cal_max_memory).")
    if bar.line_kind == "none" and plan.family == "transformers":
        return transformers_cap_sentence(plan)
    if bar.line_kind == "none":
        return (f" {plan.engine} has no memory cap: it allocates {format_bytes(bar.allocated_bytes)} (weights, "
                f"compute buffers, KV cache) and leaves the rest of the card free, less its CUDA context, which is "
                "not priced here.")
    return ""


def transformers_cap_sentence(plan: EnginePlan) -> str:
    """transformers' caption: what ``generate()`` allocates for the batch asked
    (:func:`planner.engines.hf_transformers.generate_allocated_bytes`), and apart how many sequences would fit.
    QA, stop 47: it gave the whole card at the largest batch that fits (79.19 GiB for 65 sequences of Llama-2-7b
    on an H100) as the allocation, then said the rest of the card stays free."""
    rank = plan.limiting_rank
    seqs = plan.max_num_seqs
    allocated = generate_allocated_bytes(rank, seqs)
    return (f" transformers has no memory cap: generate() allocates {format_bytes(allocated)} for the "
            f"{count_noun(seqs, 'sequence')} of {plan.max_model_len:,} tokens asked (weights "
            f"{format_bytes(rank.weights_bytes)}, compute buffers {format_bytes(rank.activation_bytes)}, KV cache "
            f"{format_bytes(generate_cache_bytes(rank, seqs))}), "
            f"plus {format_bytes(rank.non_torch_bytes)} of CUDA context and other non-torch memory, and leaves the "
            f"rest of the card free: room for {count_noun(plan.num_gpu_blocks, 'sequence')} of that length at once.")
