"""Home's line beside a "Does not fit" verdict where the chosen engine starts anyway.

The budget prices a vLLM's overhead (the link's vLLM version, else the newest: :func:`planner.overhead.
budget_profile`); another engine (SGLang, TensorRT-LLM, llama.cpp, TGI, transformers, or vllm-v0) sizes its KV cache
its own way and can start where the budget does not fit. Home already says the opposite case under the verdict ("But
vllm would refuse to start", :func:`ui.engine_home.engine_start_warning`); this says this one, with the engine's own
figures (:func:`planner.engines.budget_gap.engine_starts_text`), so the page does not contradict itself silently (QA:
Qwen3-32B on an H100 at 32,768 tokens under ``trtllm``: "Does not fit ... budget 6.82 GiB" above an engine panel that
starts with 57,152 tokens, 1.74x).
"""

from __future__ import annotations

import streamlit as st

from planner.engines.budget_gap import engine_starts_text
from planner.engines.types import EnginePlan
from ui.format import format_bytes, md_message


def engine_starts_note(fits: bool, context_len: int, plan: EnginePlan | str, expert_parallel: bool = False,
                       model_limit: int | None = None) -> None:
    """Under the verdict: "**But trtllm starts** with these inputs: ..." where the budget does not fit and the chosen
    engine (``plan``: Home's engine view of the link; a sentence where the engine cannot plan the inputs) starts and
    holds at least one whole request of ``context_len`` tokens; nothing otherwise. ``expert_parallel``: ``plan`` is
    the link's ``--enable-expert-parallel`` launch (:func:`ui.engine_home.plans_left_out_experts`), which the budget
    leaves out (only where it cannot price that launch's rank, :func:`ui.home_scale.rank_budget`): where it starts,
    :func:`expert_parallel_text` says so instead. ``model_limit``: the budget's ``max_position_embeddings`` (a context
    past it does not fit for a reason no engine's memory changes: no sentence)."""
    if isinstance(plan, str):
        return
    if expert_parallel:
        if said := expert_parallel_text(fits, plan):
            st.info(said, icon=":material/info:")
        return
    said = engine_starts_text(plan, budget_fits=fits, budget_context_len=context_len, budget_model_limit=model_limit)
    if said:
        lead, _, rest = said.partition(" starts ")
        st.info(f"**But {md_message(lead)} starts** {md_message(rest)} Its launch is at the bottom.",
                icon=":material/info:")


def expert_parallel_text(fits: bool, plan: EnginePlan) -> str:
    """The line beside a budget that does not fit where the link's expert-parallel launch starts (QA: DeepSeek-V3 on
    H200 with ``-dp 8 --enable-expert-parallel``: "Does not fit, weights 626.92 GiB" above an engine panel that
    starts with 25.60x per rank): the budget keeps every routed expert on each GPU (the Left out line names the
    switch), the launch spreads them over its expert-parallel group (vllm/model_executor/layers/fused_moe/layer.py,
    ``determine_expert_map``); its figures are one data-parallel rank's, as the Engine page prints them. "" where
    the budget fits or the launch refuses or stops before loading weights."""
    if fits or not plan.starts or plan.stopped_at_config_check:
        return ""
    return (f"**But {md_message(plan.engine)} starts** with the link's `enable_expert_parallel=true`, which the budget "
            "above leaves out (it keeps every routed expert on each GPU; the launch spreads them over its "
            f"expert-parallel group): {plan.engine_kv_cache_tokens:,} tokens of KV cache per rank "
            f"({format_bytes(plan.available_kv_cache_bytes)} per GPU available), {plan.max_concurrency:,.2f}x "
            f"concurrency at {plan.max_model_len:,} tokens per rank, as the Engine page plans it. Its launch is at "
            "the bottom.")
