"""Rendering blocks shared by the pages: page setup, verdict, metrics, formula panel.

Every number shown is a planner return value passed through :mod:`ui.format`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import streamlit as st

from planner.budget import MAX_CONTEXT_SEARCH_LIMIT, Plan
from planner.pool_kv import PoolKV
from planner.diagnose import Fix
from planner.fixes import CheckedFix, no_single_fix_text, short_label, try_texts
from planner.model import ModelSpec
from planner.model.kv import windowed_layer_kinds
from ui import kv_tiles, link_guard, nav, upload_sweep
from ui.format import (
    count_noun,
    format_budget,
    format_bytes,
    format_bytes_exact,
    format_context,
    format_int,
    format_limited_by,
    format_tokens,
    md_message,
    md_text,
    shorten,
)
from ui.inputs import SIDEBAR_WIDTH_PX
from ui.tiles import show_tiles, tiles_from_values

T = TypeVar("T")


def setup_page(title: str, icon: str, intro: str) -> None:
    """Page config, title and one line saying what the page answers.

    Every shared link is checked here first (:func:`ui.link_guard.apply`): values over
    their length limit, repeated single-value keys and bad switch values are reported
    and dropped before anything else reads them.

    Args:
        title: Page title.
        icon: An emoji (material icons would be fetched from Google's font CDN for the favicon).
        intro: One sentence under the title.
    """
    st.set_page_config(page_title=f"{title} · GPU memory planner", page_icon=icon, layout="wide",
                       initial_sidebar_state=SIDEBAR_WIDTH_PX)  # a width only counts in this first call
    nav.begin()  # the top of the sidebar; filled by ui.inputs.sidebar_inputs or navigation()
    link_problems = link_guard.apply()  # before any widget or lookup reads the link
    upload_sweep.sweep()  # uploads of closed tabs that Streamlit would keep for the server's life
    st.title(title)
    st.caption(intro)
    for problem in link_problems:
        st.warning(md_message(problem), icon=":material/link_off:")


def navigation() -> None:
    """Draw the page links for a page without the shared sidebar inputs (they draw it themselves)."""
    nav.draw()


def guarded(call: Callable[..., T], *args, what: str, **kwargs) -> T:
    """Run a catalog or planner call; on ``ValueError`` show it as ``st.error`` and stop the page.

    Args:
        call: Function to run.
        what: Words for the message, e.g. ``"planning meta-llama/Llama-2-7b-hf"``.
    """
    try:
        return call(*args, **kwargs)
    except ValueError as exc:
        st.error(md_message(f"Could not finish {what}: {exc}. Change the inputs in the sidebar."),
                 icon=":material/error:")
        st.stop()
        raise  # st.stop() raises; this keeps type checkers quiet


def require(items: Sequence[str], noun: str) -> None:
    """Stop with an ``st.info`` when a multiselect is empty."""
    if not items:
        st.info(f"Pick at least one {noun} in the sidebar.", icon=":material/arrow_back:")
        st.stop()


def context_problem(model: ModelSpec, context_len: int) -> str | None:
    """Text when ``context_len`` exceeds the model's ``max_position_embeddings``, else None; where the config
    states none, the text says the limit is transformers' default and how to fix the config."""
    limit = model.max_position_embeddings
    if limit and context_len > limit and model.max_position_embeddings_default:
        return (f"Context length {format_tokens(context_len)} is longer than {format_tokens(limit)}, transformers' "
                f"default max_position_embeddings for {model.model_type}, which stands in because {model.model_id}'s "
                "config has no max_position_embeddings: add `max_position_embeddings` (the model's longest context, "
                f"e.g. 131072) to the config and use it again, or lower `context_len` to at most {format_int(limit)} "
                "in the sidebar; the numbers below are for the requested length.")
    if limit and context_len > limit:
        return (f"Context length {format_tokens(context_len)} is longer than {model.model_id} supports "
                f"(max_position_embeddings {format_tokens(limit)}). Lower `context_len` to at most "
                f"{format_int(limit)} in the sidebar; the numbers below are for the requested length.")
    return None


def prefill_share(plan: Plan, model: ModelSpec | None = None) -> str:
    """`` (of which 3.28 GiB only while one of them is prefilled: ...)`` when the plan sets one
    prefill chunk aside (``Plan.kv_cache_prefill_extra_bytes``, windowed models), else "". The layers named are
    ``model``'s windowed kinds (:func:`planner.model.kv.windowed_layer_kinds`; QA: Llama 4's chunked local attention
    was called sliding-window); "windowed" without a model."""
    extra = plan.kv_cache_prefill_extra_bytes
    if not extra:
        return ""
    which = "the sequence is" if plan.batch_size == 1 else "one of them is"  # QA: "one of them" of one sequence
    kinds = " and ".join(windowed_layer_kinds(model)) if model is not None else ""
    return (f" (of which {format_bytes(extra)} only while {which} prefilled: a chunk of batched tokens in its "
            f"{kinds or 'windowed'} layers)")  # QA: "3.24 GiB ... more" beside 3.30 GiB read as a contradiction


def verdict(plan: Plan, gpu_label: str, fixes=None, refusing_engine: str | None = None,
            model: ModelSpec | None = None, replicas: str = "", engine_caps: str = "") -> None:
    """Fits (``st.success``) or does not fit (``st.warning`` with reasons and fixes); notes as ``st.info``.

    ``fixes``: :func:`planner.fixes.checked_fixes` of ``plan`` (checked against the chosen engine and
    ordered); None = the plan's own suggestions, unchecked. ``refusing_engine``: the chosen engine when its
    view would refuse to start a plan that fits the budget: the verdict is then not green (a green "Fits"
    beside "But vllm would refuse to start" read as a go), and the engine's reason follows it. ``model``: the
    planned model, whose windowed layers the prefill share names (:func:`prefill_share`). ``replicas``: the batch
    over the link's data-parallel replicas (:func:`ui.engine_home.replicas_line`; ``plan`` is one replica's at its
    share), said after the verdict as the CLI's ``fits`` line says it. ``engine_caps``: what the chosen engine does
    with a request of this length where it starts but caps it (:func:`ui.engine_pool.headline`: SGLang's pool shorter
    than one request), said in a verdict that is then not green either.
    """
    said = f" {md_message(replicas[0].upper() + replicas[1:])}." if replicas else ""
    where = f"{gpu_label} x {plan.num_gpus}" if plan.num_gpus > 1 else gpu_label
    if plan.fits:
        figures = (f"{format_int(plan.batch_size)} x {format_tokens(plan.context_len)} of {md_text(plan.model_id)} "
                   f"({plan.weights_label} weights, {plan.kv_cache_dtype} KV cache) on {md_text(where)}: "
                   f"{format_bytes(plan.kv_cache_bytes_in_use)} of the {format_bytes(plan.kv_cache_budget_bytes)} "
                   f"KV budget per GPU in use{prefill_share(plan, model)}; up to "
                   f"{count_noun(plan.max_concurrent_sequences, 'concurrent sequence')} at this context.")
        if refusing_engine or engine_caps:
            why = f"{md_text(refusing_engine)} would not start" if refusing_engine else md_message(engine_caps)
            st.warning(f"**Fits the budget; {why} (below).**{said} {figures}", icon=":material/warning:")
        else:
            st.success(f"**Fits.**{said} {figures}", icon=":material/check_circle:")
    else:
        lines = [f"**Does not fit** on {md_text(where)}:{said}"]
        lines += [f"- {md_message(reason)}" for reason in plan.reasons]
        if plan.kv_cache_shortfall_bytes > 0 and plan.kv_cache_budget_bytes > 0:
            lines.append(f"- **{format_bytes(plan.kv_cache_shortfall_bytes)} per GPU short**: the red segment "
                         "of the bar below runs past the usable line by that much")
        if plan.suggestions:
            tried = try_texts(plan, fixes)  # one rule with the CLI's "try:" lines
            if tried:
                lines += ["\n**Try:**", *(f"- {md_message(s)}" for s in tried)]
            else:  # every fix was checked and none fits alone (QA: "Try:" with nothing after it)
                lines.append(f"\n**No single change fits.** {md_message(no_single_fix_text(plan))}")
        st.warning("\n".join(lines), icon=":material/warning:")
        fix_buttons(plan.suggestions if fixes is None else fixes)
    for note in plan.notes:
        st.info(md_message(note), icon=":material/info:")


def _apply_fix(key: str, value, also: tuple = ()) -> None:
    """Set the fix's input, and the inputs it sets ``also`` (:attr:`planner.fixes.CheckedFix.also`: the nodes a GPU
    count needs): a widget of this page through its state, a value the page reads from the link (Home's
    ``num_nodes``) in the URL."""
    for name, number in ((key, value), *also):
        if name in st.session_state:  # a widget of this page (drawn before any button can be clicked)
            st.session_state[name] = number
        else:  # a value this page reads from the link only (Home's num_nodes)
            st.query_params[name] = str(number)


def fix_buttons(fixes, key_prefix: str = "apply_fix") -> None:
    """One button per fix that names a knob: :class:`planner.fixes.CheckedFix` (checked and ordered by
    :mod:`planner.fixes`) or a bare :class:`planner.diagnose.Fix`. The label is short and shows the value
    in full ("Batch → 40"); the long text is the help. A click sets that input."""
    items = [f if isinstance(f, CheckedFix) else CheckedFix(f, short_label(f.key, f.value), str(f), 0.0, None)
             for f in fixes if isinstance(f, (Fix, CheckedFix))]
    if not items:
        return
    for row in range(0, len(items), 4):  # four a row, every fix (QA: a fifth "use num_gpus 2" had no button)
        chunk = items[row:row + 4]
        for col, (i, item) in zip(st.columns(4 if len(items) > 4 else len(chunk)), enumerate(chunk, start=row)):
            col.button(item.label, key=f"{key_prefix}_{i}", on_click=_apply_fix,
                       args=(item.fix.key, item.fix.value, item.also), icon=":material/build:", help=item.help)


def seed_answer(plan: Plan, model: ModelSpec, gpu_label: str, engine_plan=None) -> None:
    """The longest context that fits at this batch: capped by the model, by memory alone, and before overheads;
    with ``engine_plan`` (Home's :func:`ui.engine_home.home_engine_plan`, or its message), also the engine's longest
    accepted ``max_model_len`` where it is shorter (its startup check counts one request's KV at its prefill peak,
    from its own memory figures), so "usable" is never a length the engine refuses."""
    batch = f"**Longest context at batch {format_int(plan.batch_size)}:**"
    if not plan.max_context_len_before_overheads:
        st.markdown(f"{batch} none. {md_text(model.display_name)} with {plan.weights_label} weights does not fit on "
                    f"{md_text(gpu_label)} at any context length, even with no overheads; see the suggestions above.")
        return
    if plan.max_context_len_by_memory >= MAX_CONTEXT_SEARCH_LIMIT:  # the search's end, not memory's (QA)
        memory = (f"GPU memory holds at least **{format_tokens(plan.max_context_len_by_memory)}** per sequence "
                  f"with the engine's utilization cap and overheads (the longest context the planner searches)")
    elif plan.max_context_len_by_memory:
        memory = (f"GPU memory runs out after **{format_tokens(plan.max_context_len_by_memory)}** per sequence "
                  f"with the engine's utilization cap and overheads")
    else:
        memory = "with the engine's utilization cap and overheads not even one token fits"
    limit = plan.max_position_embeddings
    beyond = (f", beyond the {format_tokens(limit)} the model was built for"
              if limit and plan.max_context_len_before_overheads > limit else "")
    st.markdown(
        f"{batch} {md_text(model.display_name)} with {plan.weights_label} weights on {md_text(gpu_label)}: {memory}, "
        "and after "
        f"**{'at least ' if plan.max_context_len_before_overheads >= MAX_CONTEXT_SEARCH_LIMIT else ''}"
        f"{format_tokens(plan.max_context_len_before_overheads)}** before overheads (whole card minus weights"
        f"{'; the search stops there' if plan.max_context_len_before_overheads >= MAX_CONTEXT_SEARCH_LIMIT else ''})"
        f"{beyond}. "
        f"Usable here: **{format_tokens(plan.max_context_len)}** "
        f"({format_limited_by(plan.max_context_len_limited_by)})." + _engine_limit(plan, engine_plan))


def _engine_limit(plan: Plan, engine_plan) -> str:
    """`` But vllm's startup check accepts at most N tokens ...`` when the engine's longest ``max_model_len`` is
    below the budget's usable context, else ""."""
    accepted = getattr(engine_plan, "engine_max_model_len", None)
    if not accepted or accepted >= plan.max_context_len:
        return ""
    if engine_plan.family == "sglang":  # it starts with any pool and caps each request there (sglang_request_cap)
        return (f" But {md_text(engine_plan.engine)}'s KV pool holds **{format_tokens(accepted)}**: it caps each "
                "request there and rejects a longer prompt (see what it would allocate, at the bottom).")
    return (f" But {md_text(engine_plan.engine)}'s startup check accepts at most **{format_tokens(accepted)}** as "
            "`--max-model-len` (one request's KV at its prefill peak, from its own memory figures: see what it "
            "would allocate, at the bottom).")


def plan_metric_values(plan: Plan, pool: PoolKV | None = None) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) or (value, help, note under the value) for the Home page, all from
    ``plan`` fields; the KV figures from ``pool`` where the users are counted in pool pages
    (:func:`planner.pool_kv.pool_kv`: DeepSeek-V4's fp8_ds_mla), so the page shows one cache."""
    per_gpu = " per GPU" if plan.num_gpus > 1 else ""
    return {
        "Weights" + per_gpu: (format_bytes(plan.weights_bytes_per_gpu),
                              f"{format_bytes_exact(plan.weights_bytes)} in total, {format_int(plan.params)} params"),
        **(kv_tiles.exact_kv_values(plan, per_gpu) if pool is None else kv_tiles.pool_kv_values(pool, per_gpu)),
        "KV budget per GPU": (
            format_budget(plan.kv_cache_budget_bytes),
            f"{format_bytes_exact(plan.kv_cache_budget_bytes)}; holds "
            f"{format_tokens(plan.kv_cache_capacity_tokens_at_context)} as {format_int(plan.context_len)}-token "
            "sequences (users x context; vLLM's own \"GPU KV cache size\" print is on the Engine page)"
            if plan.kv_cache_budget_bytes >= 0 else
            f"weights and overhead exceed usable memory by {format_bytes(-plan.kv_cache_budget_bytes)}"),
        "Max concurrent sequences": (format_int(plan.max_concurrent_sequences),
                                     f"at {format_tokens(plan.context_len)} each, paged in "
                                     f"{plan.block_size}-token blocks"),
        f"Max context at batch {format_int(plan.batch_size)} [tokens]": (
            format_int(plan.max_context_len),
            f"{format_limited_by(plan.max_context_len_limited_by)}; memory alone allows "
            f"{format_tokens(plan.max_context_len_by_memory)}"),
        "Max context before overheads [tokens]": (
            _at_least(plan.max_context_len_before_overheads),
            "memory only: whole card minus weights, no utilization cap, no activations or runtime, no block "
            "rounding, and not capped at the model's max_position_embeddings"
            + (f" ({format_int(plan.max_position_embeddings)})" if plan.max_position_embeddings else ""),
            # the card is too narrow for format_context's words beside the number: they go under it
            format_context(plan.max_context_len_before_overheads, plan.max_position_embeddings)
            .partition(" (")[2].rstrip(")") or None),
    }


def _at_least(num_tokens: int) -> str:
    """A searched context length: ``"≥ 16,777,216"`` when the search stopped at its cap
    (:data:`planner.budget.MAX_CONTEXT_SEARCH_LIMIT`, 2^24 tokens) rather than at memory."""
    return f"≥ {format_int(num_tokens)}" if num_tokens >= MAX_CONTEXT_SEARCH_LIMIT else format_int(num_tokens)


def plan_metrics(plan: Plan, pool: PoolKV | None = None) -> None:
    """The Home metrics in three rows (sizes, capacity, context), so values and labels stay whole at 1,280 px;
    ``pool``: as :func:`plan_metric_values`."""
    tiles = tiles_from_values(plan_metric_values(plan, pool))
    show_tiles(tiles[:3], 3)
    show_tiles(tiles[3:], 2)


def variant_metric_values(plans) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for each attention variant's plan."""
    out: dict[str, tuple[str, str]] = {}
    for variant, p in plans:
        tag = f"{variant.name} (as built)" if variant.as_built else variant.name
        named = kv_tiles.exact_cache_suffix(plans, p)  # DeepSeek-V4: " (bf16)", its users in fp8_ds_mla pages
        whole = "whole model" if p.num_gpus == 1 else f"whole model across {p.num_gpus} GPUs"
        out[f"KV per token{named}, {tag}"] = (format_bytes(p.kv_cache_bytes_per_token, "auto"),
                                             f"{variant.description}; all layers, {whole} (per GPU "
                                             f"{format_bytes(p.kv_cache_bytes_per_token_per_gpu, 'auto')})")
        where = ("one GPU's KV budget" if p.num_gpus == 1 else
                 f"each GPU's KV budget, a replica of {p.num_gpus} tensor-parallel GPUs")
        out[f"Max sequences, {tag}"] = (format_int(p.max_concurrent_sequences),
                                        f"at {format_tokens(p.context_len)} each on {where} "
                                        f"({format_bytes(p.kv_cache_budget_bytes)})")
    return out


def replica_label(num_gpus: int) -> str:
    """``"per GPU"`` on one GPU, ``"per replica (4 GPUs)"`` under tensor parallelism."""
    return "per GPU" if num_gpus == 1 else f"per replica ({num_gpus} GPUs)"


def variant_fit_warning(plans) -> bool:
    """When the as-built model does not fit, say why and what to change; True when nothing fits.

    The reasons and suggestions are the planner's (:func:`planner.budget.plan`), e.g.
    "weights (131.45 GiB) + overhead ... exceed the usable 71.27 GiB" and "use num_gpus 2".
    """
    built = next(p for v, p in plans if v.as_built)
    if not any(p.max_concurrent_sequences for _, p in plans):
        where = "one GPU" if built.num_gpus == 1 else f"a replica of {built.num_gpus} GPUs"
        lines = [f"**No sequence fits on {where} with these settings:**",
                 *[f"- {md_message(r)}" for r in built.reasons]]
        if built.suggestions:
            lines += ["", "Try: " + "; ".join(md_message(s) for s in built.suggestions) + " (in the sidebar)."]
        st.warning("\n".join(lines), icon=":material/warning:")
        fix_buttons(built.suggestions)
        return True
    return False


def variant_metrics(plans) -> None:
    """One column per attention variant, two metrics each."""
    tiles = tiles_from_values(variant_metric_values(plans))
    for col, pair in zip(st.columns(len(plans)), (tiles[i:i + 2] for i in range(0, len(tiles), 2))):
        show_tiles(pair, 1, container=col)


def no_fit_warnings(series, model_id: str) -> bool:
    """``st.warning`` for each GPU where not even the shortest context fits; True when that is every GPU (a
    chart of ``series`` would be empty, so the page says so instead)."""
    empty = [label for label, users in series.items() if not any(users)]
    for label in empty:
        st.warning(f"{md_text(model_id)} does not fit on {md_text(label)} at any context with these settings: "
                   "weights and "
                   "overhead exceed the usable memory. Try more GPUs (num_gpus), a smaller weight dtype or "
                   "a higher gpu_memory_utilization.", icon=":material/warning:")
    return len(empty) == len(series)


def static_table(frame, container=None) -> None:
    """``st.table`` of ``frame`` (a DataFrame or a list of row dicts) with every string cell and header made
    inert (:func:`ui.format.md_cell`): ``st.table`` renders them as Markdown, so a custom model or GPU name
    could load a remote image and a "-" cell showed as a bullet. Static tables wrap long cells instead of
    cutting them, and load no data-grid chunk (issue 27).

    Args:
        frame: The rows; a list of dicts becomes a DataFrame with those columns.
        container: ``st`` (default) or a column / container.
    """
    import pandas as pd  # noqa: PLC0415 - only pages with a table load pandas

    from ui.format import md_cell  # noqa: PLC0415

    table = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(list(frame))
    shown = table.rename(columns=lambda c: md_cell(str(c))).apply(lambda column: column.map(md_cell))  # pandas 2.0
    (container or st).table(shown, hide_index=True)


def lazy_tabs(sections: dict[str, Callable[[], None]], *, key: str) -> None:
    """Tabs whose content runs only while open, and whose open tab is in the URL.

    ``st.tabs(..., bind="query-params")`` reruns on a tab switch and sets each tab's ``.open``; only the open
    tab's function runs, so a rerun draws that section's charts and tables, not every section's (issue 27
    speed: a page's rerun against the same sidebar with no work). The open tab's label is the URL key ``key``
    (absent for the first tab), so a copied link opens the same tab; it is also ``st.session_state[key]``, which
    is how tests open one. A link whose value names no tab gets a warning that lists the tabs (Streamlit drops the
    value and opens the first tab).

    Args:
        sections: Tab label -> the function that draws that section (called inside its tab), in tab order.
            Labels are the URL values: keep them stable (:data:`ui.link_guard.SECTION_KEYS` lists the keys).
        key: The widget key and URL key of the tab bar.
    """
    asked = st.query_params.get(key)
    if asked is not None and asked not in sections:
        tabs_named = ", ".join(f"“{label}”" for label in sections)
        st.warning(f"Link parameter `{key}` names no tab of this page (“{md_text(shorten(asked))}”); its tabs are "
                   f"{tabs_named}, so the first one is open.", icon=":material/link_off:")
    tabs = st.tabs(list(sections), key=key, on_change="rerun", bind="query-params")
    for tab, draw in zip(tabs, sections.values(), strict=True):
        if tab.open:
            with tab:
                draw()


def open_tab_with_rows(key: str, rows: dict[str, int], search: str) -> None:
    """After a new ``search``, open the first tab that has rows when the open one has none.

    The Catalog's search "h100" matches no model and three GPUs: its Models tab, open by default, showed an empty
    table (QA). Only a changed search moves the tab, so a tab the user opens by hand stays open.

    Args:
        key: The tab bar's key (:func:`lazy_tabs`).
        rows: Tab label -> rows it would show, in tab order.
        search: The search text this run (the last one handled is kept in ``st.session_state``).
    """
    seen = f"{key}_search"
    if st.session_state.get(seen) == search:
        return
    st.session_state[seen] = search
    current = st.session_state.get(key) or next(iter(rows))
    if rows.get(current, 0) == 0:
        first = next((label for label, count in rows.items() if count), None)
        if first is not None:
            st.session_state[key] = first


RELEASED_COLUMN = st.column_config.TextColumn(
    "released", width="small",
    help="First public release (Hugging Face repo or vendor announcement), YYYY-MM[-DD]; sorts by date. "
         "\"unknown\" where no source was found. A + after it: a quantized checkpoint with no date of its own, "
         "dated by its base model (it came out then or later). The model table's \"released source\" says where "
         "it was read.")
"""The release-date column of the model and verification tables (``data.released``)."""

ID_COLUMN = st.column_config.TextColumn("id", width=280, pinned=True)
"""The id column of the model and verification tables: pinned, and wide enough for a 40-character id
(Streamlit's "medium" cut ``CohereForAI/c4ai-command-r-v01`` at 1,280 px)."""


def _text(label: str, width: int, help: str | None = None):
    """A text column ``width`` px wide (about 7 px a character), so its cells show whole at 1,280 px."""
    return st.column_config.TextColumn(label, width=width, help=help)


MODEL_COLUMNS = {
    "id": ID_COLUMN,
    "name": _text("name", 270),
    "released": RELEASED_COLUMN,
    "alias of": _text("alias of", 280),
    "aliases": _text("aliases", 300),
    "params": st.column_config.NumberColumn("params", format="compact", help="All experts included"),
    "layer kinds": _text("layer kinds", 280),
    "max context": st.column_config.NumberColumn("max context [tokens]", format="localized"),
    "checkpoint": _text("checkpoint", 190),
    "source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)/.*"),
    "source note": st.column_config.TextColumn("source note", width="large"),
    "released source": st.column_config.TextColumn("released source", width="large"),
}
"""Column formats of the model table."""

GPU_COLUMNS = {
    "id": st.column_config.TextColumn("id", width=220, pinned=True),
    "name": _text("name", 290),
    "framework memory [GiB]": st.column_config.NumberColumn("framework memory [GiB]", format="%.2f",
                                                            help="GiB = 2^30 bytes"),
    "marketed [GB]": st.column_config.NumberColumn("marketed [GB]", help="Vendor label"),
    "host link": _text("host link", 110),
    "price [USD/h]": st.column_config.NumberColumn("price [USD/h]", format="%.2f"),
    "source": st.column_config.LinkColumn("source", display_text=r"https?://([^/]+)/.*"),
    "source note": st.column_config.TextColumn("source note", width="large"),
}
"""Column formats of the GPU table."""

VERIFICATION_COLUMNS = {
    "id": ID_COLUMN,
    "family": _text("family", 110),
    "released": RELEASED_COLUMN,
    "status": _text("status", 90, help="exact, by source (read as the architecture its config declares), "
                                       "or not built (nothing checked: see the reason)"),
    "counted": _text("counted", 120, help="language model: a multimodal model is checked on its language "
                                          "model, while the catalog lists it with its vision tower"),
    "params (planner)": st.column_config.NumberColumn("params (planner)", format="localized", width=140),
    "params (transformers)": st.column_config.NumberColumn("params (transformers)", format="localized", width=160),
    "prompt tokens": _text("prompt tokens", 150),
    "KV bytes (planner)": st.column_config.NumberColumn("KV bytes (planner)", format="localized", width=150),
    "KV bytes (transformers)": st.column_config.NumberColumn("KV bytes (transformers)", format="localized",
                                                             width=170),
    "reason": st.column_config.TextColumn("reason", width="large"),
}
"""Column formats of the verification table: short status, numbers with separators, the reason last and wide."""
