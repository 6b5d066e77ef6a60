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
from ui.format import md_message


def engine_starts_note(fits: bool, context_len: int, plan: EnginePlan | str) -> None:
    """Under the verdict: "**But trtllm starts** with these inputs: ..." where the budget does not fit and the chosen
    engine (``plan``: Home's engine view of the link; a sentence where the engine cannot plan the inputs) starts and
    holds at least one whole request of ``context_len`` tokens; nothing otherwise."""
    if isinstance(plan, str):
        return
    said = engine_starts_text(plan, budget_fits=fits, budget_context_len=context_len)
    if said:
        lead, _, rest = said.partition(" starts ")
        st.info(f"**But {md_message(lead)} starts** {md_message(rest)} Its launch is at the bottom.",
                icon=":material/info:")
