"""Engine inputs, tables and the log box for the Engine page (the Home engine panel: :mod:`ui.engine_home`).

Pages stay thin: they read these widgets (keys = CLI flags with underscores,
bound to the URL), call :func:`planner.engines.plan_engine` and the log
functions of :mod:`planner.logparse`, and render the rows built here. Every
size on screen goes through :mod:`ui.format`.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, replace

import streamlit as st

from planner.budget import MAX_CONTEXT_SEARCH_LIMIT
from planner.engines import plan_engine
from planner.engines.expected_error import close_call
from planner.engines.logparse import LogFigures, parse_engine_log
from planner.engines.profiles import (
    DEFAULT_ENGINE,
    ENGINE_CHOICES,
    ENGINE_PROFILES,
    USAGE_CONTEXTS,
    nearest_kv_cache_dtype,
    resolve_engine_name,
)
from planner.engines.reconcile import (
    ReconcileRow,
    implausible_figures,
    knobs_from_log,
    log_consistency,
    log_refusal,
    reconcile,
    request_from_log,
)
from planner.engines.log_profile import ProfileHint, profile_hint
from planner.engines.rank_bar import allocated_row_name, rank_bar
from planner.pool_kv import exact_cache_label
from planner.engines.replica_layout import stage_log_note
from planner.engines.shared_gpu import reported_memory_bytes  # noqa: F401 - the pages read it from here
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.model import ModelSpec
from planner.serving import ServingFeatures
from ui import engine_pool, inputs, traffic, views  # noqa: F401 - traffic registers the shared max_model_len first
from ui.engine_metrics import (  # noqa: F401 - the page and tests read them here
    cap_sentence,
    concurrency_text,
    engine_metric_values,
    engine_metrics,
)
from ui.format import (
    count_noun,
    format_budget,
    format_bytes,
    format_bytes_exact,
    format_int,
    format_signed_percent,
    gib_to_bytes,
    md_message,
    quoted,
)
from ui.inputs import NumberField, PlanInputs
from ui.scale_view import rank_bar_html
from ui.tiles import show_tiles, tiles_from_values

ENGINE_FIELDS: dict[str, NumberField] = {
    f.key: f
    for f in (
        NumberField(key="pipeline_parallel_size", label="Pipeline stages", min_value=1, max_value=64, default=1,
                    step=1, unit="stages",
                    help="Layers split over this many GPUs (`--pipeline-parallel-size`); GPUs per replica = "
                         "tensor parallel x pipeline stages."),
        NumberField(key="data_parallel_size", label="Replicas (data parallel)", min_value=1, max_value=1024,
                    default=1, step=1, unit="replicas", help="Independent copies of the model (`--data-parallel-size`)."),
        NumberField(key="max_model_len", label="max_model_len [tokens] (empty = context length)", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=None, step=1024, unit="tokens",
                    help="The engine's per-request limit (llama.cpp: n_ctx for all slots) (`--max-model-len`)."),
        NumberField(key="max_num_seqs", label="max_num_seqs (empty = engine default)", min_value=1, max_value=65536,
                    default=None, step=16, unit="sequences",
                    help="Sequences per step; llama.cpp slots (-np); SGLang max_running_requests (`--max-num-seqs`)."),
        NumberField(key="max_num_batched_tokens", label="max_num_batched_tokens (empty = engine default)",
                    min_value=1, max_value=MAX_CONTEXT_SEARCH_LIMIT, default=None, step=1024, unit="tokens",
                    help="Tokens in the engine's profile pass: vLLM max_num_batched_tokens, SGLang "
                         "chunked_prefill_size, TGI max_batch_prefill_tokens (`--max-num-batched-tokens`)."),
        NumberField(key="num_nodes", label="Nodes per replica", min_value=1, max_value=1024, default=1, step=1,
                    unit="nodes",
                    help="Machines the GPUs of one replica span (`--num-nodes`): vLLM runs them with `--distributed-"
                         "executor-backend ray`, SGLang with `--nnodes`, a command per node; NCCL spans the network."),
        NumberField(key="available_kv_memory_gib", label="Engine's available KV memory [GiB per GPU]",
                    min_value=0.0, max_value=4096.0, default=None, step=0.5, is_float=True, unit="GiB",
                    help="What the engine printed ('Available KV cache memory'); skips the overhead model "
                         "(`--available-kv-memory-gib`)."),
        NumberField(key="gpu_memory_in_use_gib", label="Memory other processes hold [GiB per GPU]", min_value=0.0,
                    max_value=4096.0, default=None, step=0.5, is_float=True, unit="GiB",
                    help="A shared GPU: vLLM still takes its utilization of the total and refuses when that much is "
                         "not free; SGLang sizes from what is free (`--gpu-memory-in-use-gib`)."),
    )
}
"""Engine-only numeric inputs by key (= CLI flag with underscores)."""

for _field in ENGINE_FIELDS.values():
    # So inputs.check_link validates them too. ``max_model_len`` is already registered by
    # ui.traffic (same bounds); the widget below still uses this module's label and default.
    inputs.NUMBER_FIELDS.setdefault(_field.key, _field)

ENGINE_NUMBERS = ("pipeline_parallel_size", "data_parallel_size", "num_nodes", "max_model_len", "max_num_seqs",
                  "max_num_batched_tokens", "block_size", "gpu_memory_utilization", "available_kv_memory_gib",
                  "gpu_memory_in_use_gib")
"""Engine-page numeric keys, in sidebar order."""

OPTIONAL_DEFAULTS = {"block_size": None, "gpu_memory_utilization": None}
"""Shared keys that start empty on the Engine page (empty = the engine's own default)."""


@dataclass(frozen=True, kw_only=True)
class EngineInputs:
    """The engine block of the sidebar. Field names are the URL keys."""

    engine: str = DEFAULT_ENGINE
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    num_nodes: int = 1
    enforce_eager: bool = False
    warm_compile_cache: bool = False
    use_deep_gemm: bool = False
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    gpu_memory_utilization: float | None = None
    available_kv_memory_gib: float | None = None
    gpu_memory_in_use_gib: float | None = None
    enable_prefix_caching: bool = False
    usage_context: str = "serve"


def engine_label(engine: str) -> str:
    """Selectbox label of a profile id."""
    return f"{engine} - {ENGINE_PROFILES[engine].label}"


def engine_selector(container=None) -> tuple[str, list[str]]:
    """The URL-bound ``engine`` selectbox (default vLLM) and its link problems."""
    problems = inputs.check_link({"engine": (ENGINE_CHOICES, resolve_engine_name, "engine", DEFAULT_ENGINE)}, {}, ())
    bar = container or st.sidebar
    # No format_func: a bound selectbox writes its *label* into the URL (Streamlit 1.67), and the
    # link must carry the CLI value.
    engine = bar.selectbox("Serving engine", ENGINE_CHOICES, index=ENGINE_CHOICES.index(DEFAULT_ENGINE),
                           key="engine", bind="query-params",
                           help="Whose rules size the KV cache (`--engine`); vLLM eras differ in what they "
                                "print. " + "; ".join(engine_label(e) for e in ENGINE_CHOICES))
    return engine, problems


def _number(container, key: str, default):
    field = ENGINE_FIELDS.get(key) or inputs.NUMBER_FIELDS[key]
    if field.is_float:
        return container.number_input(
            field.label, min_value=float(field.min_value), max_value=float(field.max_value),
            value=None if default is None else float(default), step=float(field.step), format="%.2f", key=key,
            help=field.help, bind="query-params")
    return container.number_input(
        field.label, min_value=int(field.min_value), max_value=int(field.max_value),
        value=None if default is None else int(default), step=int(field.step), key=key, help=field.help,
        bind="query-params")


def engine_inputs() -> tuple[EngineInputs, list[str]]:
    """Engine selector plus the engine knobs (empty = the engine's default), URL-bound."""
    engine, problems = engine_selector()
    problems += inputs.check_link({"usage_context": (USAGE_CONTEXTS, None, "start mode", "serve")}, {},
                                  ENGINE_NUMBERS)
    values = {}
    with st.sidebar.expander("Engine knobs", expanded=True):
        values["usage_context"] = st.selectbox(
            "Start mode (usage context)", USAGE_CONTEXTS, key="usage_context", bind="query-params",
            help="vLLM `--usage-context` in the planner's CLI: `serve` (`vllm serve`, the default) or `llm` (the "
                 "offline `LLM(...)` class). Their default max_num_batched_tokens and max_num_seqs differ, and so "
                 "does the profile pass sized from them.")
        for key in ENGINE_NUMBERS:
            field = ENGINE_FIELDS.get(key) or inputs.NUMBER_FIELDS[key]
            default = OPTIONAL_DEFAULTS.get(key, field.default)
            values[key] = _number(st, key, default)
        values["enforce_eager"] = st.toggle(
            "Enforce eager (no CUDA graphs)", key="enforce_eager", bind="query-params",
            help="vLLM `--enforce-eager`: no CUDA graphs are captured, so their memory goes to the KV cache.")
        values["warm_compile_cache"] = st.toggle(
            "Compile cache warm (a relaunch)", key="warm_compile_cache", bind="query-params",
            help="vLLM `--warm-compile-cache` in the planner's CLI: the model was compiled on this machine before, "
                 "so the 0.41 GiB a first launch's torch.compile adds to vLLM's profile pass (Model Runner V2, "
                 "measured on a public vLLM 0.27.1 log) is not charged. Off: plan a first launch.")
        values["use_deep_gemm"] = st.toggle(
            "DeepGEMM MoE kernels", key="use_deep_gemm", bind="query-params",
            help="vLLM runs FP8 MoE layers on DeepGEMM (`VLLM_USE_DEEP_GEMM=1` with the deep_gemm package, Hopper "
                 "or Blackwell; v0.11's default where installed): its workspaces size a data-parallel MoE rank's "
                 "profile pass under vllm-v0.10 / vllm-v0.11 (`--use-deep-gemm` in the CLI). Off: Triton's.")
        values["enable_prefix_caching"] = st.toggle(
            "Prefix caching", key="enable_prefix_caching", bind="query-params",
            help="vLLM `--enable-prefix-caching`: on an attention + Mamba hybrid each request keeps two state pages.")
    return EngineInputs(engine=engine, **values), problems


def engine_request(form: PlanInputs, knobs: EngineInputs, gpu_name: str,
                   features: ServingFeatures | None = None, reported_bytes: int | None = None) -> EngineRequest:
    """The planner request for the sidebar: GPUs per replica = tensor parallel x pipeline stages.

    With 'GPUs per replica' left at 1, pipeline stages add GPUs (tensor parallel 1,
    ``pp`` GPUs per replica), as the CLI's ``--pipeline-parallel-size`` does
    without ``--num-gpus``. ``features`` (the sidebar's serving features, ``ui.serving``) are priced
    under the chosen engine's rules (:mod:`planner.engines.serving`); None = the bare model.

    Raises:
        ValueError: GPUs per replica (above 1) not a multiple of the pipeline stages.
    """
    pp = knobs.pipeline_parallel_size
    if form.num_gpus == 1 and pp > 1:
        form = replace(form, num_gpus=pp)
    if form.num_gpus % pp:
        raise ValueError(f"{form.num_gpus} GPUs per replica cannot be split into {pp} pipeline stages; make "
                         "'GPUs per replica' a multiple of 'Pipeline stages'")
    available = None if knobs.available_kv_memory_gib is None else gib_to_bytes(knobs.available_kv_memory_gib)
    return EngineRequest(
        engine=knobs.engine, weight_dtype=form.weight_dtype, kv_cache_dtype=form.kv_cache_dtype,
        tensor_parallel_size=form.num_gpus // pp, pipeline_parallel_size=pp,
        data_parallel_size=knobs.data_parallel_size, max_model_len=knobs.max_model_len or form.context_len,
        gpu_memory_utilization=knobs.gpu_memory_utilization, block_size=knobs.block_size,
        max_num_batched_tokens=knobs.max_num_batched_tokens, max_num_seqs=knobs.max_num_seqs,
        available_kv_memory_bytes=available, gpu_name=gpu_name, num_nodes=knobs.num_nodes or 1,
        distributed_executor_backend="ray" if (knobs.num_nodes or 1) > 1 else "mp",
        enforce_eager=bool(knobs.enforce_eager), warm_compile_cache=bool(knobs.warm_compile_cache),
        use_deep_gemm=bool(knobs.use_deep_gemm), serving=features, enable_prefix_caching=bool(knobs.enable_prefix_caching),
        memory_in_use_bytes=gib_to_bytes(knobs.gpu_memory_in_use_gib or 0), gpu_memory_reported_bytes=reported_bytes,
        usage_context=knobs.usage_context)


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------
def engine_verdict(plan: EnginePlan, fixes=()) -> None:
    """Starts (``st.success``) or refuses (``st.warning`` with the engine's words, and ``fixes``,
    :func:`planner.fixes.engine_fixes`, as one-click buttons); warnings and notes."""
    if plan.family == "transformers":
        fits = plan.starts
        text = (f"**{count_noun(plan.num_gpu_blocks, 'sequence')} of {format_int(plan.max_model_len)} tokens fit** "
                f"in generate() at once" if fits else
                f"**{plan.engine} would fail:**\n" + "\n".join(f"- {md_message(r)}" for r in plan.reasons))
        (st.success if fits else st.warning)(text, icon=":material/check_circle:" if fits else ":material/warning:")
        st.caption(f"Sized for a prompt pass of {format_int(plan.max_num_batched_tokens)} tokens in all "
                   "(max_num_batched_tokens; empty = the whole length): right after the prefill, sliding-window "
                   "layers still hold the whole prompt. transformers has no startup check; it runs out of memory "
                   "during generate() instead.")
        engine_pool.warnings_and_notes(plan)
        return
    caveat = close_call(plan)  # the margin is inside the estimate's expected error
    if engine_pool.engine_verdict(plan, fixes):  # SGLang starts with a pool shorter than one request: not "starts"
        pass
    elif plan.starts:
        decoding = (f", {plan.max_concurrency_decoding:,.2f} requests decoding at once"
                    if plan.decodes_more_than_printed else "")
        st.success(f"**{plan.engine} starts** with max_model_len {format_int(plan.max_model_len)}: "
                   f"{format_int(plan.engine_kv_cache_tokens)} tokens of KV cache, "
                   f"{concurrency_text(plan)}{decoding}.",
                   icon=":material/check_circle:")
        if caveat:
            st.warning(f"**Close call:** {plan.engine} {md_message(caveat)}.", icon=":material/warning:")
        if plan.scheduler_cap_note:  # the pool holds more requests than one step runs
            st.info(f"{md_message(plan.scheduler_cap_note)}.", icon=":material/info:")
    else:
        lines = [f"**{plan.engine} would refuse to start.** It would print:", *quoted(plan.reasons)]
        if plan.engine_max_model_len > 0:
            lines.append(f"\nThe launch command below uses max_model_len {format_int(plan.engine_max_model_len)}, "
                         "the largest it would accept here.")
        if caveat:
            lines.append(f"\n**Close call:** {plan.engine} {md_message(caveat)}.")
        if fixes:
            lines += ["\n**Try:**", *[f"- {md_message(str(f.fix))}" for f in fixes]]
        st.warning("\n".join(lines), icon=":material/warning:")
        views.fix_buttons(fixes, key_prefix="engine_fix")
    engine_pool.warnings_and_notes(plan)


ROLE_LABELS = {"all": "every GPU of the stage", "driver": "TP rank 0 (driver, samples)",
               "others": "TP ranks 1+ (no sampler)"}
"""What each :attr:`planner.engines.RankBudget.role` stands for, in the per-rank table."""


def rank_caption(plan: EnginePlan) -> str:
    """The line above the per-rank chart: the profile, the version it models, and whether GPUs differ."""
    same = all(r.role == "all" for r in plan.ranks)
    alike = ("Every tensor-parallel GPU of a stage holds the same." if same else
             "The driver worker samples and its tensor-parallel peers do not, so their budgets differ.")
    return f"Modelled: {plan.engine_label}. Version modelled: {plan.engine_version}. {alike}{cap_sentence(plan)}"


OF_WHICH = "\u00a0\u00a0\u00a0· of which"
"""A part's row name starts so: indented under its term (no-break spaces: Markdown drops leading plain ones)."""

PART_OF = {"weights": "Weights", "activation": "Activation peak", "kv": "Available KV"}
"""The term a serving part is counted in (:attr:`planner.engines.types.RankBudget.serving_parts`), as its row."""


def rank_rows(plan: EnginePlan) -> list[dict]:
    """One formatted row per kind of GPU: per pipeline stage, and V0's driver apart from its peers; with
    serving features, one column per part they add (:attr:`planner.engines.types.RankBudget.serving_parts`),
    right after the term that already counts it and named "of which ..." (the LoRA slots are in the weights,
    the encoder buffers in the activation peak, the draft's KV in the available KV), so the terms still add
    up to the usable memory; a part beside the engine's pool keeps its own name."""
    return [_with_parts(_rank_row(plan, r), r.serving_parts) for r in plan.ranks]


def _with_parts(row: dict, parts) -> dict:
    """``row`` with each ``(label, term, bytes)`` part after its term's key (:data:`PART_OF`), else at the end."""
    out = dict(row)
    for label, term, size in parts:
        parent = PART_OF.get(term)
        if parent not in out:
            out[label] = format_bytes(size)
            continue
        keys = list(out)
        at = keys.index(parent) + 1
        while at < len(keys) and keys[at].startswith(OF_WHICH):
            at += 1
        items = list(out.items())
        first = label.split()[0]
        named = label[0].lower() + label[1:] if first[1:].islower() else label  # "draft weights", "LoRA slots"
        items.insert(at, (f"{OF_WHICH} {named}", format_bytes(size)))
        out = dict(items)
    return out


def log_note(plan: EnginePlan) -> str | None:
    """Under the printed lines when vLLM's pipeline stages differ: which stage each line describes
    (:func:`planner.engines.replica_layout.stage_log_note`, Home's panel and the CLI say the same)."""
    note = stage_log_note(plan)
    return f"{note[0].upper()}{note[1:]}." if note else None


def rank_table(plan: EnginePlan) -> list[dict]:
    """:func:`rank_rows` turned on its side: one row per term, one column per kind of GPU (``Stage 0``, or
    ``Stage 0, TP rank 0 (driver, samples)``, ...), so the dozen-odd terms read down the page at 1,400 px instead of scrolling
    out of view to the right. Neighbouring stages whose figures are all the same share one column
    (``Stages 1-14``, their layers as ``3-58, 4 per stage``), so 16 pipeline stages still fit."""
    rows = rank_rows(plan)
    groups: list[list[tuple[RankBudget, dict]]] = []
    for rank, row in zip(plan.ranks, rows):
        if groups and _same_but_layers(groups[-1][-1][1], row):
            groups[-1].append((rank, row))
        else:
            groups.append([(rank, row)])
    terms = [k for k in (rows[0] if rows else {}) if k not in ("Stage", "GPUs")]
    columns = [(_stage_head(group), _merged(group)) for group in groups]
    return [{"Per GPU": term, **{head: str(row.get(term, "-")) for head, row in columns}} for term in terms]


def _same_but_layers(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(a[k] == b[k] for k in a if k not in ("Stage", "Layers"))


def _stage_head(group: list[tuple[RankBudget, dict]]) -> str:
    first, last = group[0][0], group[-1][0]
    head = f"Stage {first.stage}" if first is last else f"Stages {first.stage}-{last.stage}"
    return head if first.role == "all" else f"{head}, {ROLE_LABELS.get(first.role, first.role)}"  # no (( ))


def _merged(group: list[tuple[RankBudget, dict]]) -> dict:
    (first, row), last = group[0], group[-1][0]
    if first is last:
        return row
    sizes = {rank.num_layers for rank, _ in group}
    each = f", {sizes.pop()} per stage" if len(sizes) == 1 else ""
    return row | {"Layers": f"{first.first_layer}-{last.first_layer + last.num_layers - 1}{each}"}


def _rank_row(plan: EnginePlan, r: RankBudget) -> dict:
    """One GPU's terms; the first size is named for what the engine caps (``Usable``, SGLang's ``Static
    (mem_fraction_static)``) or, without a cap (llama.cpp, transformers), ``Allocated``, with the card's free
    memory beside it (:mod:`planner.engines.rank_bar`)."""
    bar = rank_bar(plan, r, plan.gpu_memory_bytes)
    free = {"Free on the card": format_bytes(bar.free_bytes)} if bar.line_kind == "none" else {}
    return {
        "Stage": r.stage, "GPUs": ROLE_LABELS.get(r.role, r.role),
        "Layers": f"{r.first_layer}-{r.first_layer + r.num_layers - 1}",
        allocated_row_name(plan): format_bytes(r.requested_bytes), **free, "Weights": format_bytes(r.weights_bytes),
        "Activation peak": format_bytes(r.activation_bytes), "Non-torch": format_bytes(r.non_torch_bytes),
        "CUDA graphs": format_bytes(r.cudagraph_bytes), "Available KV": format_bytes(r.available_kv_cache_bytes),
        **({"Mamba state pool": format_bytes(r.state_pool_bytes)} if r.state_pool_bytes else {}),
        "KV per token": format_bytes(r.kv_cache_bytes_per_token, "auto") + _token_cache(plan, r),
        "Block": format_bytes(r.bytes_per_block, "auto"), "Blocks": format_int(r.num_blocks),
        "Measured": ", ".join(r.overridden) or "-",
    }


def _token_cache(plan: EnginePlan, r: RankBudget) -> str:
    """`` (bf16)``: the cache of the rank's KV per token where it is not the plan's (``RankBudget.
    kv_cache_bytes_per_token_dtype``: DeepSeek-V4's bf16 figure beside its fp8_ds_mla pool blocks, QA); else ""."""
    named = r.kv_cache_bytes_per_token_dtype
    if named in ("", plan.kv_cache_dtype):
        return ""
    return f" ({exact_cache_label(named, plan.kv_cache_dtype, inside_brackets=True)})"  # plain fp8: not stored


SERVING_PART_HELP = {
    "LoRA slots": "Adapter slots the engine preallocates (counted in the weights: 'Model loading took')",
    "Draft weights": "The drafter's own weights: a draft model, an EAGLE head or the MTP layers",
    "LoRA / encoder buffers": "Profile-pass extras: the LoRA shrink buffer and the encoder cache of the images",
    "Draft KV cache": "The drafter's KV: in the same block pool (vLLM) or a pool of its own (SGLang, llama.cpp)",
}
WHERE = {"weights": "in the weights", "activation": "in the activation peak", "kv": "in the KV pool",
         "outside": "beside the engine's pool"}


def serving_metric_values(plan: EnginePlan) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the Engine page's serving section, from ``plan.serving``."""
    serving = plan.serving or {}
    out: dict[str, tuple[str, str]] = {}
    for label, where, size in plan.limiting_rank.serving_parts:
        if size:
            out[label] = (format_bytes(size), f"{SERVING_PART_HELP[label]}; per GPU, {WHERE[where]}")
    lora = serving.get("lora")
    if lora and lora["supported"]:
        out["Memory per adapter slot"] = (format_bytes(lora["bytes_per_adapter_slot"], "auto"),
                                          f"{format_bytes_exact(lora['bytes_per_adapter_slot'], 'B')} per GPU")
        out["Adapter slots beside one request"] = (format_int(lora["max_loras_that_fit"]),
                                         f"Slots the pool holds beside one {format_int(plan.max_model_len)}-token "
                                         "request")
    spec = serving.get("speculative")
    if spec:
        out["Drafter KV per token"] = (format_bytes(spec["draft_kv_cache_bytes_per_token_per_gpu"], "auto"),
                                       f"{count_noun(spec['draft_layers'], 'drafter layer')}, per GPU")
    off = serving.get("offload")
    if off and off["supported"]:
        out["Host memory per GPU"] = (format_bytes(off["host_bytes_per_gpu"]),
                                      f"{off['mechanism']}; the GPU keeps its whole pool")
        if off["seconds_per_token_moved"] is not None:
            out["Per token moved (estimate)"] = (f"{off['seconds_per_token_moved'] * 1e6:,.2f} µs",
                                                 f"over {off['host_link']} ({off['host_link_gb_s']:g} GB/s)")
    return out


def stage_bars_html(plan: EnginePlan, gpu_label: str) -> str:
    """The per-GPU budget of each pipeline stage as Home's HTML bar (:func:`ui.scale_view.rank_bar_html`: the same
    segments and :mod:`ui.palette` colours as Home and Disaggregation), a line naming the stage above each bar when
    there are several; no Plotly chart to load or redraw on a rerun (issue 27 speed)."""
    parts = []
    for r in plan.ranks:
        stage = (f"stage {r.stage}: layers {r.first_layer}-{r.first_layer + r.num_layers - 1}"
                 + ("" if r.role == "all" else f" ({r.role})"))  # vLLM V0: the driver vs its peers
        if len(plan.ranks) > 1:
            parts.append(f'<div style="font-size:0.875rem;margin:0.5rem 0 0.25rem">{html.escape(stage)}</div>')
        parts.append(rank_bar_html(plan, plan.gpu_memory_bytes, f"{stage}, {gpu_label}", rank=r))
    return "".join(parts)


def serving_section(plan: EnginePlan) -> None:
    """The Engine page's "Serving features" block: what they cost under this engine and its flags (their notes
    are among ``plan.notes``, shown with the verdict)."""
    if plan.serving is None:
        return
    mm, asked = plan.serving.get("multimodal") or {}, ("lora", "speculative", "offload")
    alone = mm.get("encoder_profile_default") and not any(plan.serving.get(k) for k in asked)
    st.subheader("vLLM's default encoder profile" if alone else "Serving features under this engine")
    show_tiles(tiles_from_values(serving_metric_values(plan)), 3)
    if plan.serving["engine_launch_flags"]:
        st.caption(f"{plan.engine}'s own flags (in the launch command above): "
                   f"`{plan.serving['engine_launch_flags']}`")
    st.caption("The features' notes are with the verdict above.")


def reconcile_rows(rows: tuple[ReconcileRow, ...]) -> list[dict]:
    """The estimate-vs-actual table, formatted in each figure's printed unit."""
    out = []
    for r in rows:
        digits = 4 if r.unit in ("GiB", "MiB") else (2 if r.unit == "x" else 0)
        rel = "-" if r.relative_error is None else f"{r.relative_error:+.2%}"
        difference = f"{r.difference:+,.{digits}f}"
        if float(difference.replace(",", "")) == 0:  # "-0.0000" and "+0.00%" read as a difference
            difference = f"{0:.{digits}f}"
        if rel.lstrip("+-") == f"{0:.2%}":  # one format for every row: "0.00%", as "-0.04%" beside it
            rel = f"{0:.2%}"
        out.append({"Quantity": r.quantity, "Unit": r.unit, "Estimate": f"{r.estimate:,.{digits}f}",
                    "Engine log": f"{r.actual:,.{digits}f}", "Difference": difference,
                    "Relative": rel, "Log line": r.line})
    return out


def replan_rows(plans: dict[str, EnginePlan]) -> list[dict]:
    """Side-by-side figures of the estimate and the re-plans from the log. The headers stay short enough for
    the six columns to fit the main column at 1,280 px ("Tokens (as printed)" cut "Starts" to "Star"); the
    tokens are the printed "GPU KV cache size" line's."""
    return [{
        "Plan": label, "Available KV per GPU": format_budget(p.available_kv_cache_bytes),
        "KV tokens": format_int(p.engine_kv_cache_tokens), "Max concurrency": f"{p.max_concurrency:.2f}x",
        "Largest max_model_len": format_int(p.engine_max_model_len), "Starts": "yes" if p.starts else "no",
    } for label, p in plans.items()]


@dataclass(frozen=True, kw_only=True)
class LogView:
    """What the log box shows: the figures, the comparison and the re-plans."""

    figures: LogFigures
    hint: ProfileHint | None
    rows: tuple[ReconcileRow, ...]
    plans: dict
    adopted: tuple[str, ...] = ()
    inconsistent: ReconcileRow | None = None
    implausible: tuple[str, ...] = ()
    refusal: str | None = None  # the refusal the log shows (planner.engines.reconcile.log_refusal)


def log_view(text: str, model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
             estimate: EnginePlan) -> LogView:
    """Parse a pasted log and re-plan at the log's own knobs: the overhead model, the measured
    overheads, and the engine's own available memory.

    Raises:
        ValueError: the log's figures give an invalid request (e.g. a negative size).
    """
    figures = parse_engine_log(text)
    if figures.engine is None:
        return LogView(figures=figures, hint=None, rows=(), plans={})
    implausible = implausible_figures(figures, gpu_memory_bytes=gpu_memory_bytes,
                                      tensor_parallel_size=request.tensor_parallel_size,
                                      max_position_embeddings=model.max_position_embeddings)
    base, adopted = knobs_from_log(replace(request, available_kv_memory_bytes=None), figures)
    if implausible:  # a log of another GPU or model: compare at the sidebar's settings, not at its own
        base, adopted = replace(request, available_kv_memory_bytes=None), ()
    if adopted:
        estimate = plan_engine(model, gpu_memory_bytes, base)
    measured = plan_engine(model, gpu_memory_bytes,
                           request_from_log(base, figures, pin_available=False, plan=estimate))
    pinned = plan_engine(model, gpu_memory_bytes, request_from_log(base, figures))
    plans = {"Overhead model": estimate, "Measured overheads from the log": measured,
             "Engine's own available memory": pinned}
    inconsistent = log_consistency(pinned, figures)
    rows = reconcile(estimate, figures) + ((inconsistent,) if inconsistent else ())
    hint = profile_hint(figures, model, gpu_memory_bytes, base)  # a suggestion only: the sidebar is not changed
    return LogView(figures=figures, hint=hint, rows=rows, plans=plans, adopted=adopted,
                   inconsistent=inconsistent, implausible=implausible, refusal=log_refusal(figures, estimate))


def log_message(view: LogView) -> None:
    """What was recognised (``st.success`` / ``st.warning``) and a profile hint (:attr:`LogView.hint`, for the
    request's engine: a profile of the same family is no mismatch)."""
    if view.figures.engine is None:
        st.warning(view.figures.message, icon=":material/help:")
        return
    (st.success if view.figures.complete else st.warning)(view.figures.message, icon=":material/receipt_long:")
    for sentence in filter(None, (view.refusal, *view.implausible)):  # the engine's own refusal first
        st.warning(md_message(sentence), icon=":material/rule:")
    if view.inconsistent is not None:
        row = view.inconsistent
        st.warning(f"The log disagrees with itself for this model: at its own printed memory this model holds "
                   f"{format_int(round(row.estimate))} tokens, but the log prints {format_int(round(row.actual))} "
                   f"({round(row.difference):+,} tokens, {format_signed_percent(row.relative_error or 0)}; "
                   "the last row of the table). The log may come from another "
                   "model, KV-cache dtype, block size or flag set than the one planned here: check the sidebar "
                   "against the launch command of that log.", icon=":material/rule:")
    if view.adopted:
        st.info(f"Compared at the log's own settings ({', '.join(view.adopted)} taken from the log).",
                icon=":material/tune:")
    if view.hint is not None:  # another engine, or another build of the chosen one (planner.engines.log_profile)
        st.info(md_message(view.hint.message), icon=":material/info:")


KV_DTYPE_KEY = "kv_cache_dtype"
"""The sidebar's KV-cache dtype widget (ui/inputs.py), which the one-click fix sets."""


def _use_kv_dtype(value: str) -> None:
    st.session_state[KV_DTYPE_KEY] = value


def kv_dtype_fix(engine_name: str, kv_cache_dtype: str, *, stop: bool) -> bool:
    """When ``engine_name`` does not offer ``kv_cache_dtype``: say which it offers and offer a button that
    switches the sidebar to the nearest (:func:`planner.engines.profiles.nearest_kv_cache_dtype`).

    Returns False when there is nothing to fix (or the engine name is unknown: the engine selector reports
    that); with ``stop`` the page stops after the message, else True is returned.
    """
    try:
        nearest = nearest_kv_cache_dtype(engine_name, kv_cache_dtype)
        offered = ENGINE_PROFILES[resolve_engine_name(engine_name)].kv_cache_dtypes
    except ValueError:
        return False
    if nearest is None:
        return False
    (st.error if stop else st.info)(
        f"{engine_name} does not offer KV-cache dtype `{kv_cache_dtype}`; it offers {', '.join(offered)}. "
        f"The nearest in size is `{nearest}`.", icon=":material/error:" if stop else ":material/info:")
    st.button(f"Use KV-cache dtype {nearest}", key="kv_dtype_fix", on_click=_use_kv_dtype, args=(nearest,),
              type="primary", help="Sets the KV-cache dtype in the sidebar (and in the page's address)")
    if stop:
        st.stop()
    return True
