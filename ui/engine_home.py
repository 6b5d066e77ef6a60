"""The Home page's engine view: the chosen engine's plan of Home's inputs, its refusal warning and its panel.

The request is the Engine page's for the same link (:func:`home_request`): Home's inputs, the page's serving
features, the engine's own defaults for what Home leaves untouched. So Home's warning, its panel and every
fix it previews (:mod:`planner.fixes`) give the Engine page's figures.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from planner.budget import Plan, PlanRequest, profile_pass_tokens
from planner.diagnose import Fix, kv_heads_replicated_note
from planner.engines import plan_engine
from planner.engines.budget_gap import budget_gap_text
from planner.engines.expected_error import close_call, expected_error_reason
from planner.engines.profiles import USAGE_CONTEXTS
from planner.engines.replica_layout import node_advice, pipeline_stages_text
from planner.engines.types import EnginePlan, EngineRequest, stores_another_cache
from planner.engines.vllm_fp8_kv import fp8_kv_note_of
from planner.model import ModelSpec
from planner.scale.layout import DEFAULT_GPUS_PER_NODE
from planner.serving import ServingFeatures
from ui import custom_panel, feature_line, inputs, nav, views
from ui.data import priced_kv_name
from ui.engine import ENGINE_FIELDS, kv_dtype_fix
from ui.expected_error import available_kv_text
from ui.format import (
    count_noun,
    format_command,
    format_int,
    format_tokens,
    gib_to_bytes,
    md_message,
    md_text,
    quoted,
)
from ui.inputs import PlanInputs


IN_USE_KEY = "gpu_memory_in_use_gib"
"""The Engine page's "Memory other processes hold" (``--gpu-memory-in-use-gib``), carried by the navigation."""


def link_usage_context() -> tuple[str, list[str]]:
    """The Engine page's start mode (``usage_context``: ``serve`` or ``llm``) from the link, carried by the
    navigation, and a message for a value that is neither (then ``serve``, vLLM's default)."""
    raw = st.query_params.get("usage_context")
    if raw is None or raw in USAGE_CONTEXTS:
        return raw or "serve", []
    return "serve", [f"Link parameter `usage_context={md_text(raw[:60])}` is not one of {', '.join(USAGE_CONTEXTS)}, "
                     "so the engine panel plans `serve`: set the start mode on the Engine page."]


def link_memory_in_use() -> tuple[int, list[str]]:
    """Memory other processes hold on each GPU [bytes], from the link (0 without it), and one message per bad
    value: Home has no input of its own for it, so a bad value is named and left out of the engine panel."""
    wrong = inputs.link_number_problems((IN_USE_KEY,))
    raw = st.query_params.get(IN_USE_KEY)
    if wrong or raw is None:
        return 0, [f"{what}, so the engine panel leaves it out: set it on the Engine page (its sidebar's "
                   "\"Memory other processes hold\")." for _, what, _ in wrong]
    return gib_to_bytes(float(raw)), []


LAYOUT_KEYS = ("pipeline_parallel_size", "data_parallel_size", "num_nodes")
"""The Engine page's layout inputs (``ui.engine.ENGINE_FIELDS``) Home's engine panel reads from the link."""


@dataclass(frozen=True)
class LinkLayout:
    """The Engine page's layout of one replica, from the link (:func:`link_layout`): tensor parallel x pipeline
    stages GPUs per replica (:func:`ui.engine.engine_request`'s rule), replicas and nodes per replica."""

    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    num_nodes: int = 1


def link_layout(num_gpus: int) -> tuple[LinkLayout, list[str]]:
    """The link's layout for Home's ``num_gpus`` GPUs per replica, as the Engine page reads it (``Pipeline
    stages`` split the GPUs; with 1 GPU the stages add GPUs), and one message per value Home leaves out (a bad
    number, stages that do not divide the GPUs, more nodes than GPUs): the engine panel then plans without it."""
    wrong = {key: what for key, what, _ in inputs.link_number_problems(LAYOUT_KEYS, ENGINE_FIELDS)}
    problems = [f"{what}, so Home's engine panel leaves it out: set it on the Engine page." for what in wrong.values()]
    value = {key: (1 if key in wrong else int(st.query_params.get(key) or 1)) for key in LAYOUT_KEYS}
    pp = value["pipeline_parallel_size"]
    gpus = pp if num_gpus == 1 else num_gpus
    if gpus % pp:
        problems.append(f"Link parameter `pipeline_parallel_size={pp}` does not divide the "
                        f"{count_noun(num_gpus, 'GPU')} per replica, so Home's engine panel plans them as one "
                        "tensor-parallel group: make 'GPUs per replica' a multiple of 'Pipeline stages' on the "
                        "Engine page.")
        pp, gpus = 1, num_gpus
    nodes = value["num_nodes"]
    if nodes > gpus:
        problems.append(f"Link parameter `num_nodes={nodes}` is more than the {count_noun(gpus, 'GPU')} per replica, "
                        "so Home's engine panel plans one node: set it on the Engine page.")
        nodes = 1
    return LinkLayout(tensor_parallel_size=gpus // pp, pipeline_parallel_size=pp,
                      data_parallel_size=value["data_parallel_size"], num_nodes=nodes), problems


def home_request(form: PlanInputs, engine: str, gpu_name: str, reported_bytes: int | None = None,
                 features: ServingFeatures | None = None, memory_in_use_bytes: int = 0,
                 usage_context: str = "serve", layout: LinkLayout | None = None) -> EngineRequest:
    """The Home page's engine request: the home inputs, the engine's own defaults otherwise.

    The home utilization and block size are passed only when the link sets them. ``features`` (the page's
    serving features, :func:`ui.serving.serving_inputs`) are priced under the engine's rules, as the Engine
    page's :func:`engine_request` does, so Home's engine view and every fix it previews give the Engine
    page's figures for the same link. ``memory_in_use_bytes``: :func:`link_memory_in_use`; ``usage_context``:
    :func:`link_usage_context`; ``layout``: :func:`link_layout` (None: the GPUs as one tensor-parallel group), so
    the panel plans the Engine page's stages, replicas and nodes (QA: 19.37x and ``--tensor-parallel-size 16`` on
    Home beside the Engine page's 40.04x for 2 stages of 8).
    """
    explicit = st.query_params
    layout = layout or LinkLayout(tensor_parallel_size=form.num_gpus)
    return EngineRequest(
        engine=engine, weight_dtype=form.weight_dtype, kv_cache_dtype=form.kv_cache_dtype,
        tensor_parallel_size=layout.tensor_parallel_size, pipeline_parallel_size=layout.pipeline_parallel_size,
        data_parallel_size=layout.data_parallel_size, num_nodes=layout.num_nodes,
        distributed_executor_backend="ray" if layout.num_nodes > 1 else "mp", max_model_len=form.context_len,
        gpu_memory_utilization=form.gpu_memory_utilization if "gpu_memory_utilization" in explicit else None,
        block_size=form.block_size if "block_size" in explicit else None, gpu_name=gpu_name,
        gpu_memory_reported_bytes=reported_bytes, serving=features,  # nvidia-smi's total (SGLang's capacity)
        memory_in_use_bytes=memory_in_use_bytes, usage_context=usage_context, max_num_seqs=link_max_num_seqs())


def link_max_num_seqs() -> int | None:
    """The link's ``max_num_seqs`` (the Engine page's input) when it is a whole number in that input's range, else
    None (the engine's default): Home's engine view and its scheduler-cap line read the link's cap, as the Engine
    page does (QA: a link with ``max_num_seqs=2048`` read "runs at most 1,024" on Home). A bad value is the Engine
    page's to report."""
    from ui.traffic import link_whole_number  # noqa: PLC0415 - the traffic inputs load with their pages

    return link_whole_number("max_num_seqs", ENGINE_FIELDS["max_num_seqs"])


def budget_shown(result: Plan, model: ModelSpec, layout: LinkLayout) -> Plan:
    """The budget as Home's verdict shows it: where the link splits the GPUs into pipeline stages whose
    tensor-parallel groups shard the KV heads, without the note that the budget's one group replicates them
    (:func:`pipeline_note` says it of the budget instead); else ``result`` itself."""
    replicated = kv_heads_replicated_note(model, result.num_gpus)
    if layout.pipeline_parallel_size <= 1 or not replicated or replicated not in result.notes:
        return result
    if kv_heads_replicated_note(model, layout.tensor_parallel_size):  # replicated in the stages too
        return result
    return replace(result, notes=tuple(n for n in result.notes if n != replicated))


def pipeline_note(result: Plan, model: ModelSpec, plan: EnginePlan | str) -> None:
    """Beside the budget's users, where the link splits the GPUs into pipeline stages: the engine's figure for
    that layout, and that the budget above plans the GPUs as one tensor-parallel group (it has no pipeline model:
    :mod:`planner.engines.replica_layout`). QA: Home's "up to 19 concurrent sequences" and "KV heads are
    replicated" beside the Engine page's 40.04x for 2 stages of 8."""
    stages = "" if isinstance(plan, str) else pipeline_stages_text(plan, " (Engine page)")
    if not stages:
        return
    gpus = plan.tensor_parallel_size * plan.pipeline_parallel_size
    budget = (f"all {format_int(result.num_gpus)} as one tensor-parallel group" if result.num_gpus > 1
              else "one GPU")
    replicated = kv_heads_replicated_note(model, result.num_gpus)
    heads = (f" (where num_gpus {result.num_gpus} > num_key_value_heads {model.num_key_value_heads} replicates the "
             "KV heads)" if replicated and not kv_heads_replicated_note(model, plan.tensor_parallel_size) else "")
    st.info(md_message(f"The link splits the {count_noun(gpus, 'GPU')} into {stages}; the budget above plans "
                       f"{budget}{heads}, so its users differ."), icon=":material/account_tree:")


def node_note(model: ModelSpec, gpu, request: EngineRequest, plan: EnginePlan | str,
              where: str = "on the Engine page") -> tuple[str, int]:
    """The launch across nodes that runs when one replica needs more GPUs than a node holds
    (:func:`planner.engines.replica_layout.node_advice`; the catalog's GPUs carry no node size, so the CLI's
    ``--gpus-per-node`` default, 8), and the nodes it needs; ``("", 0)`` when none is needed. ``where``: where the
    reader sets "Nodes per replica". QA: tensor parallel 16 "starts" with a one-node command and no warning."""
    if isinstance(plan, str):
        return "", 0
    advice = node_advice(model, gpu.framework_memory_bytes, request, DEFAULT_GPUS_PER_NODE)
    if advice is None:
        return "", 0
    return advice.text(f"Nodes per replica {advice.num_nodes} {where}", "the planner's default node size"), \
        advice.num_nodes


def node_warning(model: ModelSpec, gpu, request: EngineRequest, plan: EnginePlan) -> None:
    """The Engine page's warning under its verdict (:func:`node_note`), with a button that sets the nodes."""
    text, nodes = node_note(model, gpu, request, plan, where="in the engine knobs")
    if text:
        st.warning(md_message(text), icon=":material/lan:")
        views.fix_buttons([Fix(f"use num_nodes {nodes} (Nodes per replica)", "num_nodes", nodes)],
                          key_prefix="node_fix")


def home_engine_plan(model: ModelSpec, gpu, request: EngineRequest) -> EnginePlan | str:
    """The Home page's engine plan of ``request`` (:func:`home_request`: the page's inputs and serving features)
    on ``gpu``, or the sentence saying why the engine cannot plan it (an engine/dtype mismatch is a message, not
    an error)."""
    try:
        return plan_engine(model, gpu.framework_memory_bytes, request)
    except ValueError as exc:
        return f"{request.engine}: {exc}. Change the engine or the dtype in the sidebar to see its figures."


def refusing_engine(plan: EnginePlan | str, engine: str) -> str | None:
    """The engine's name (``engine``, the sidebar's) when its plan would refuse to start, or when it cannot run
    these inputs at all (``plan`` is then :func:`home_engine_plan`'s sentence: a KV-cache or weight dtype the engine
    does not offer, said below the verdict): the Home verdict is then not green; else None. QA (stop 43): q4_0 KV
    under vllm read "Fits ... 191 concurrent sequences" in green, where the Engine page and the CLI refuse it."""
    if isinstance(plan, str):
        return engine
    return None if plan.starts else plan.engine


def engine_start_warning(fits: bool, plan: EnginePlan | str) -> None:
    """Under the verdict: a plan that fits while the selected engine would refuse to start says so, with the
    engine's reason (its view holds the weights as its kernels lay them out and deducts its own profile pass)
    and, when the shortfall is inside the estimate's expected error, the Engine page's close-call caveat
    (:func:`planner.engines.expected_error.close_call`)."""
    if isinstance(plan, str) or plan.starts or not fits:
        return
    lead = f"**But {plan.engine} would refuse to start** with these inputs"
    said = ([f"{lead}. It would print:", *quoted(plan.reasons[:1])]
            if plan.reasons else [f"{lead}: its own figures leave no room."])
    lines = ["\n".join(said), "The budget above prices the newest vLLM; see what this engine version would "
             "allocate and print, at the bottom."]
    if caveat := close_call(plan):
        lines.append(f"**Close call:** {plan.engine} {md_message(caveat)}.")
    st.warning("\n\n".join(lines), icon=":material/warning:")


def backend_note(plan: EnginePlan | str) -> None:
    """Under the verdict: the engine plan's fp8-KV backend note (:func:`planner.engines.vllm_fp8_kv.fp8_kv_backend`:
    the ``VLLM_ATTENTION_BACKEND`` its launch command sets on an Ampere GPU, or why it sets none), the sentence the
    Engine page shows with its verdict; and its scheduler cap (``EnginePlan.scheduler_cap_note``: the pool holds more
    requests than the engine runs at once, QA: Home's 1,411 users of DeepSeek-V4-Flash beside vLLM's default
    ``--max-num-seqs`` 1,024, said only on the Engine page)."""
    if isinstance(plan, str):
        return
    if note := fp8_kv_note_of(plan.notes):
        st.info(md_message(note), icon=":material/info:")
    if cap := plan.scheduler_cap_note:
        st.info(md_message(f"{cap}."), icon=":material/group:")


def home_engine_view(model: ModelSpec, form: PlanInputs, engine: str, plan: EnginePlan | str,
                     features: ServingFeatures | None = None, gap: str = "", nodes: str = "") -> None:
    """The Home page's engine panel for ``plan`` (:func:`home_engine_plan`'s answer), priced with the page's
    serving ``features``; ``gap``: :func:`budget_gap`; ``nodes``: :func:`node_note`."""
    if isinstance(plan, str):
        if not kv_dtype_fix(engine, form.kv_cache_dtype, stop=False):
            st.info(md_message(plan), icon=":material/info:")
        return
    budget_kv = priced_kv_name(model, form.weight_dtype, form.kv_cache_dtype)
    home_panel(plan, feature_line.engine_line(plan, features, form.model_id), budget_kv_dtype=budget_kv,
               command_note=custom_panel.launch_name_note(form.model_id), gap=gap, nodes=nodes)


def budget_gap(plan: EnginePlan | str, budget: Plan, request: PlanRequest, gpu) -> str:
    """Why the engine's whole requests differ from the budget's users (the CLI's note:
    :func:`planner.engines.budget_gap.budget_gap_text`), "" when they agree or the engine cannot plan the inputs;
    ``gpu``: the catalog GPU."""
    if isinstance(plan, str):
        return ""
    return budget_gap_text(plan, budget_users=budget.max_concurrent_sequences, budget_context_len=budget.context_len,
                           budget_batched_tokens=profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id))


def home_panel(plan: EnginePlan, features_line: str = "", budget_kv_dtype: str | None = None,
               command_note: str | None = None, gap: str = "", nodes: str = "") -> None:
    """A compact engine view for the Home page (no metrics; text from planner fields); ``features_line``: the
    serving features it was priced with (:func:`ui.feature_line.engine_line`), shown under the figures;
    ``budget_kv_dtype``: the KV dtype the figures above price, named when the engine stores another (vLLM keeps
    DeepSeek-V3.2 as ``fp8_ds_mla`` under ``auto``, the budget bf16); ``command_note``: a line under the launch
    command (:func:`ui.custom_panel.launch_name_note`); ``nodes``: a warning under it (:func:`node_note`)."""
    with st.expander(f"What {plan.engine} would allocate and print", icon=":material/memory:", expanded=False):
        state = "starts" if plan.starts else "would refuse to start"
        st.markdown(
            f"**{plan.engine_label}** {state}: {available_kv_text(plan)} of KV per GPU, "
            f"{format_int(plan.engine_kv_cache_tokens)} tokens as printed, {plan.max_concurrency:.2f}x concurrency "
            f"at {format_tokens(plan.max_model_len)}"
            f"{' as printed' if plan.concurrency_printed else f' (computed: {plan.engine} prints no concurrency line)'}"
            f"{f' ({plan.max_concurrency_decoding:,.2f}x once decoding)' if plan.decodes_more_than_printed else ''}; "
            f"largest max_model_len accepted: {format_int(plan.engine_max_model_len)}.")
        if reason := expected_error_reason(plan):  # why the +- beside the available KV is that large
            st.caption(md_message(reason))
        if features_line:
            st.caption(features_line)
        if plan.reasons:
            st.markdown("\n".join(["It would print:", *quoted(plan.reasons)]))
        if caveat := close_call(plan):
            st.warning(f"**Close call:** {plan.engine} {md_message(caveat)}.", icon=":material/warning:")
        stored = (f"{plan.engine} stores the KV cache as {plan.kv_cache_dtype} where the figures above price "
                  f"{budget_kv_dtype}, so its tokens per GiB differ; "
                  if stores_another_cache(plan.kv_cache_dtype, budget_kv_dtype) else "")
        st.caption(f"Why these can differ from the figures above: {stored}the figures above price the newest vLLM "
                   "under `vllm serve` (its loaded weights, profile pass, CUDA graphs and runner state), so for that "
                   "launch the KV budgets agree; "
                   "another engine or version loads the weights, profiles and captures graphs its own way. "
                   + (f"Concurrency: {md_message(plan.decoding_note)}; the users above are the requests decoding "
                      "at once beside one prefill chunk, as the newest vLLM pages them."
                      if plan.decodes_more_than_printed else "The concurrency here is the figure the engine prints.")
                   + (f" {md_message(plan.scheduler_cap_note)}." if plan.scheduler_cap_note else "")
                   + (f" {md_message(gap)}" if gap else ""))
        st.code("\n".join(plan.engine_log_lines), language="text")
        # wrapped: a --speculative-config naming its head runs past the column (QA D6: EAGLE3_DRAFT_REPO)
        st.code(format_command(plan.launch_command), language="bash", wrap_lines=True)
        if command_note:  # a custom model's name (ui.custom_panel.launch_name_note)
            st.caption(command_note)
        if nodes:  # one replica wider than a node: the launch across nodes that runs
            st.warning(md_message(nodes), icon=":material/lan:")
        nav.link("pages/5_Engine.py", label="Per-rank breakdown, other engines and your own logs",
                 icon=":material/arrow_forward:")
