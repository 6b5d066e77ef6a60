"""An SGLang launch whose KV pool is shorter than one request, on Home and the Engine page.

SGLang starts with such a pool and caps every request at it (:mod:`planner.engines.sglang_request_cap`: ``max_req_len
= min(context_len - 1, max_total_num_tokens - 1)`` in python/sglang/srt/managers/tp_worker.py, longer prompts rejected
by ``validate_input_length`` in managers/utils.py). So neither page may say a plain "Fits" or "starts" there (QA, stop
47: Qwen3-32B on one H100 SXM at 27,904 tokens under ``engine=sglang`` read a green "Fits ... 1 concurrent sequence"
on Home and a green "sglang starts ... 0.67x" on the Engine page): the verdict says what SGLang does with a request
of that length, in its own words, and how to get a pool that holds one.
"""

from __future__ import annotations

import streamlit as st

from planner.engines.sglang_request_cap import cap_headline, cap_text, holds_one_request, pool_fix_text, short_pool
from planner.engines.types import EnginePlan
from ui import views
from ui.format import md_message, md_text


def holds(plan: EnginePlan | str) -> bool:
    """Home's test for searching the engine's own fixes: True where ``plan`` (:func:`ui.engine_home.home_engine_plan`)
    starts and serves a request of its whole length, or cannot plan the inputs (a sentence: no fix to search)."""
    return isinstance(plan, str) or holds_one_request(plan)


def headline(plan: EnginePlan | str) -> str:
    """Home's verdict words beside a budget that fits (:func:`ui.views.verdict`'s ``engine_caps``), "" unless ``plan``
    is an SGLang pool shorter than one request."""
    return "" if isinstance(plan, str) else cap_headline(plan)


def short_pool_warning(fits: bool, plan: EnginePlan | str, batch_size: int = 1) -> None:
    """Under Home's verdict, beside a budget that fits: "**But sglang caps each request at its KV pool**", with what
    it replies to a longer prompt and the way out; nothing unless ``plan`` is such a pool."""
    if not fits or isinstance(plan, str) or not short_pool(plan):
        return
    st.warning(f"**But {md_text(plan.engine)} caps each request at its KV pool.** {md_message(cap_text(plan))}\n\n"
               f"{md_message(pool_fix_text(plan, batch_size))} Its own figures for this launch are at the bottom.",
               icon=":material/warning:")


def start_fixes_caption(engine: str, plan: EnginePlan | str) -> str:
    """The line above Home's engine fixes: each starts the engine (or, for a short SGLang pool, holds a whole
    request) and keeps the budget fitting."""
    does = "holds a whole request" if not isinstance(plan, str) and short_pool(plan) else "starts"
    return f"One click each; with any of these {md_text(engine)} {does} and the budget still fits:"


def engine_verdict(plan: EnginePlan, fixes=()) -> bool:
    """The Engine page's verdict for an SGLang pool shorter than one request: a warning, not "starts", with SGLang's
    reply to a longer prompt, the way out with numbers, and ``fixes`` (:func:`planner.fixes.engine_fixes`) as
    one-click buttons (True); False (nothing drawn) for any other plan, whose verdict :func:`ui.engine.engine_verdict`
    draws (and, for both, the plan's warnings and notes)."""
    if not short_pool(plan):
        return False
    lines = [f"**{md_text(plan.engine)} starts with max_model_len {plan.max_model_len:,}, but refuses requests longer "
             f"than its KV pool of {plan.engine_kv_cache_tokens:,} tokens.** {md_message(cap_text(plan))}",
             f"\n{md_message(pool_fix_text(plan))}"]
    if fixes:
        lines += ["\n**Try:**", *[f"- {md_message(str(f.fix))}" for f in fixes]]
    st.warning("\n".join(lines), icon=":material/warning:")
    views.fix_buttons(fixes, key_prefix="engine_fix")
    return True


def warnings_and_notes(plan: EnginePlan) -> None:
    """The plan's warnings (``st.warning``) and notes (``st.info``), under the Engine page's verdict."""
    for warning in plan.warnings:
        st.warning(md_message(warning), icon=":material/warning:")
    for note in plan.notes:
        st.info(md_message(note), icon=":material/info:")
