"""The Home page's engine view: the chosen engine's plan of Home's inputs, its refusal warning and its panel.

The request is the Engine page's for the same link (:func:`home_request`): Home's inputs, the page's serving
features, the engine's own defaults for what Home leaves untouched. So Home's warning, its panel and every
fix it previews (:mod:`planner.fixes`) give the Engine page's figures.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import streamlit as st

from planner.budget import Plan, PlanRequest, profile_pass_tokens
from planner.diagnose import Fix
from planner.fixes import short_label
from planner.engines import plan_engine
from planner.engines.budget_gap import budget_gap_text
from planner.engines.expected_error import close_call, expected_error_reason
from planner.engines.node_split import uneven_nodes_text
from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.replica_layout import node_advice, on_one_node, pipeline_stages_text, stages_apart
from planner.engines.types import EnginePlan, EngineRequest, stores_another_cache
from planner.engines.vllm_fp8_kv import fp8_kv_note_of
from planner.overhead import OVERHEAD_PROFILE, budget_profile
from planner.model import ModelSpec
from planner.scale.layout import DEFAULT_GPUS_PER_NODE
from planner.scale.replicas import replica_batch, replicas_verdict, spread_batch_fix, spread_plan
from planner.serving import ServingFeatures
from planner.serving.features import budget_encoder_left_out, budget_features, engine_family
from ui import budget_knobs, custom_panel, disagg_knobs, engine_nodes, feature_line, inputs, nav, serving, views
from ui.data import priced_kv_name
from ui.engine import ENGINE_FIELDS, kv_dtype_fix, log_note
from ui.expected_error import available_kv_text
from ui.format import (
    count_noun,
    format_bytes,
    format_int,
    format_tokens,
    md_message,
    quoted,
)
from ui.inputs import PlanInputs
from ui.link_rank import link_expert_parallel  # noqa: F401 - Home reads it here
from ui.scale_view import vllm_scale_request


def home_budget_features(features: ServingFeatures | None, engine: str,
                         model_id: str | None) -> tuple[ServingFeatures | None, list[tuple[str, str]]]:
    """The features Home's budget prices for the link's ``engine`` (:func:`planner.serving.features.budget_features`:
    vLLM's default encoder profile under any engine when nothing is asked, as GQA savings, Concurrency and
    Allocation count the users) and ``(what, why)`` for its "Left out" line: the link's engine, whose own pool the
    engine panel plans, or the profile a non-vLLM engine's features leave out. ``features``: the page's
    (:func:`ui.serving.serving_inputs` under ``engine``), which the engine panel keeps."""
    raw = serving.raw_config(model_id)
    text_only = serving.text_only_on(model_id)
    budget = budget_features(features, engine=engine, raw_config=raw, text_only=text_only)
    family = engine_family(engine)
    if family == "vllm":
        return budget, []
    own = (f"{engine} runs no encoder profile pass but lowers mem_fraction_static for a vision tower "
           "(adjust_mem_fraction_for_vlm), as its panel below does" if family == "sglang" else
           f"its panel below plans {engine}'s own pool")
    if budget is not features:
        return budget, [(f"the link's engine ({engine})", "this budget counts the users under the newest vLLM's rules, "
                         f"its default encoder profile included, as GQA savings, Concurrency and Allocation; {own}")]
    if budget_encoder_left_out(features, engine=engine, raw_config=raw, text_only=text_only):
        return budget, [("vLLM's default encoder profile", f"this budget prices the features under {engine}'s rules, "
                         "which run no encoder profile pass; GQA savings, Concurrency and Allocation count it under "
                         f"the newest vLLM's; {own}")]
    return budget, []


def link_knobs() -> tuple[dict, list[str]]:
    """The Engine page's knobs the link carries (start mode, scheduler sizes, memory other processes hold, the
    switches and vLLM's CUDA-graph knobs), read as the Disaggregation page reads them
    (:func:`ui.disagg_knobs.link_values`: Home has no input of its own for them), and one message per bad value, which
    the engine panel and the budget leave out (:func:`ui.budget_knobs.with_link_knobs`). QA (stop 41):
    ``enforce_eager=true`` gave 53.95x here, 54.80x on the Engine page."""
    return disagg_knobs.link_values("Home's engine panel (and its budget)")


def knobs_left_out(engine: str, context_len: int) -> list[tuple[str, str]]:
    """``(what, why)`` for each Engine-page key the link carries that Home's engine panel does not apply
    (:data:`ui.disagg_knobs.HOME_NOT_APPLIED`; a ``max_model_len`` equal to the context length changes nothing), and
    the vLLM-only knobs under another engine, which takes none (:func:`ui.budget_knobs.not_taken`)."""
    out = disagg_knobs.left_out(not_applied=disagg_knobs.HOME_NOT_APPLIED, same={"max_model_len": str(context_len)})
    return out + [(what, f"{engine} has no such knob") for what, _ in budget_knobs.not_taken(link_knobs()[0], engine)]


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
    number, stages that do not divide the GPUs, more nodes than GPUs or nodes that do not split them evenly): the
    engine panel then plans without it."""
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
    elif uneven := uneven_nodes_text(gpus, nodes):  # vLLM and SGLang refuse it (planner/engines/node_split.py)
        problems.append(f"Link parameter `num_nodes={nodes}`: {uneven}, so Home's engine panel plans one node: set "
                        "it on the Engine page.")
        nodes = 1
    return LinkLayout(tensor_parallel_size=gpus // pp, pipeline_parallel_size=pp,
                      data_parallel_size=value["data_parallel_size"], num_nodes=nodes), problems


def replica_request(request: PlanRequest, layout: LinkLayout) -> PlanRequest:
    """Home's budget request for one of the link's ``data_parallel_size`` replicas: its share of the batch,
    ``ceil(batch / replicas)`` (:func:`planner.scale.replicas.replica_batch`: vLLM's API server spreads the requests
    over the data-parallel engines, each with its own KV cache), as ``python -m planner plan --data-parallel-size``
    plans it; ``request`` as it is with one replica."""
    if layout.data_parallel_size <= 1:
        return request
    return replace(request, batch_size=replica_batch(request.batch_size, layout.data_parallel_size))


def replicas_line(result: Plan, batch_size: int, layout: LinkLayout) -> str:
    """The verdict's line on the batch over the link's replicas (:func:`planner.scale.replicas.replicas_verdict`,
    the CLI's ``fits`` line), "" with one replica."""
    return replicas_verdict(batch_size, layout.data_parallel_size, result.max_concurrent_sequences,
                            result.context_len)


def whole_batch(result: Plan, fixes, layout: LinkLayout):
    """``(result, fixes)`` for Home's verdict with each batch fix of one replica's plan restated for the link's whole
    batch over its replicas (:func:`planner.scale.replicas.spread_plan`, ``spread_batch_fix``: a button sets
    ``batch_size=256``, not the 64 one replica holds); unchanged with one replica."""
    replicas = layout.data_parallel_size
    if fixes is None or replicas <= 1:
        return spread_plan(result, replicas), fixes
    out = []
    for checked in fixes:  # each checked against one replica; its text, button and help restated for the batch
        whole = spread_batch_fix(checked.fix, replicas)
        out.append(checked if whole is checked.fix else replace(
            checked, fix=whole, label=short_label("batch_size", whole.value),
            help=checked.help.replace(str(checked.fix), str(whole), 1)))
    return spread_plan(result, replicas), out


def home_request(form: PlanInputs, engine: str, gpu_name: str, reported_bytes: int | None = None,
                 features: ServingFeatures | None = None, knobs: dict | None = None,
                 layout: LinkLayout | None = None) -> EngineRequest:
    """The Home page's engine request: the home inputs, the link's engine knobs, the engine's own defaults otherwise.

    ``features`` (the page's serving features, :func:`ui.serving.serving_inputs`) are priced under the engine's
    rules, as the Engine page's :func:`engine_request` does, so Home's engine view and every fix it previews give
    the Engine page's figures for the same link. ``knobs``: :func:`link_knobs`' values (None: none carried), turned
    into request fields by :func:`ui.disagg_knobs.request_fields` (the home utilization and block size only when the
    link sets them); ``layout``: :func:`link_layout` (None: the GPUs as one tensor-parallel group), so the panel
    plans the Engine page's stages, replicas and nodes (QA: 19.37x and ``--tensor-parallel-size 16`` on Home beside
    the Engine page's 40.04x for 2 stages of 8).
    """
    layout = layout or LinkLayout(tensor_parallel_size=form.num_gpus)
    fields = disagg_knobs.request_fields(form, disagg_knobs.link_values()[0] if knobs is None else knobs, engine)
    return EngineRequest(
        engine=engine, weight_dtype=form.weight_dtype, kv_cache_dtype=form.kv_cache_dtype,
        tensor_parallel_size=layout.tensor_parallel_size, pipeline_parallel_size=layout.pipeline_parallel_size,
        data_parallel_size=layout.data_parallel_size, num_nodes=layout.num_nodes,
        distributed_executor_backend="ray" if layout.num_nodes > 1 else "mp", max_model_len=form.context_len,
        gpu_name=gpu_name, gpu_memory_reported_bytes=reported_bytes,  # nvidia-smi's total (SGLang's capacity)
        serving=features, **fields)


def budget_stages(num_gpus: int, layout: LinkLayout, models: Sequence[ModelSpec] = (), *, warn: bool = False) -> int:
    """The pipeline stages Home's budget plans (:func:`planner.pipeline.plan_pipeline`): the link's stages where they
    split Home's ``num_gpus`` GPUs per replica, else 1 (one GPU, whose link stages add GPUs: the budget plans the one
    GPU Home shows, :func:`pipeline_note` gives the stages' figure beside it), and 1 where a model of ``models`` has
    fewer layers than stages (vLLM ``get_pp_indices`` gives every stage a layer; QA, stop 44: 32 stages of a 16-layer
    model stopped every page with "Could not finish planning"), said in a warning when ``warn``."""
    pp = layout.pipeline_parallel_size
    if pp <= 1 or layout.tensor_parallel_size * pp != num_gpus:
        return 1
    short = [m for m in models if len(m.layers) < pp]
    if short:
        if warn:
            st.warning(md_message(f"Link parameter `pipeline_parallel_size={pp}` is more than the "
                                  f"{count_noun(len(short[0].layers), 'layer')} of {short[0].model_id}, and vLLM gives "
                                  "every stage at least one: the budget plans the GPUs as one tensor-parallel group. "
                                  f"Use at most {len(short[0].layers)} stages on the Engine page."),
                       icon=":material/link_off:")
        return 1
    return pp


def pipeline_note(result: Plan, model: ModelSpec, plan: EnginePlan | str, stages_planned: int = 1) -> bool:
    """Beside the budget's users, where the link splits the GPUs into pipeline stages: the engine's figure for
    that layout, and what the budget above plans: the same stages (``stages_planned`` > 1, :func:`budget_stages`)
    or the one GPU Home shows. QA: Home's "up to 19 concurrent sequences" and "KV heads are replicated" beside the
    Engine page's 40.04x for 2 stages of 8, when the budget planned all 16 as one tensor-parallel group. Their users
    "differ" only where they do (QA, stop 41: a budget of 0 users beside a launch that refuses to start). True when
    the note is shown, so the engine panel's :func:`budget_gap` does not say it again."""
    stages = "" if isinstance(plan, str) else pipeline_stages_text(plan, " (Engine page)")
    if not stages:
        return False
    gpus = plan.tensor_parallel_size * plan.pipeline_parallel_size
    budget = ("the same stages, each on its tensor-parallel GPUs" if stages_planned > 1
              else f"all {format_int(result.num_gpus)} as one tensor-parallel group" if result.num_gpus > 1
              else "one GPU")
    engine_users = int(plan.requests_held) if plan.starts else 0  # planner.engines.budget_gap's count
    users = result.max_concurrent_sequences
    outcome = (", so its users differ" if engine_users != users
               else ": neither holds a user" if users == 0 else f", and holds the same {format_int(users)} users")
    st.info(md_message(f"The link splits the {count_noun(gpus, 'GPU')} into {stages}; the budget above plans "
                       f"{budget}{outcome}."), icon=":material/account_tree:")
    return True


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


def node_button(nodes: int) -> None:
    """Home's one-click fix for a replica wider than its nodes (QA, stop 44: the Engine page had "Nodes → 4", Home
    only the words): it sets the link's ``num_nodes``, which Home's engine panel reads (:func:`link_layout`)."""
    views.fix_buttons([Fix(f"use num_nodes {nodes} (Nodes per replica, over Ray)", "num_nodes", nodes)],
                      key_prefix="home_node_fix")


def node_warning(model: ModelSpec, gpu, request: EngineRequest, plan: EnginePlan) -> None:
    """The Engine page's warning under its verdict (:func:`node_note`), with a button that sets the nodes."""
    text, nodes = node_note(model, gpu, request, plan, where="in the engine knobs")
    if text:
        st.warning(md_message(text), icon=":material/lan:")
        views.fix_buttons([Fix(f"use num_nodes {nodes} (Nodes per replica)", "num_nodes", nodes)],
                          key_prefix="node_fix")


def expert_parallel_refusal(model: ModelSpec, engine: str) -> str:
    """vLLM's refusal of the link's ``enable_expert_parallel=true`` on a dense model (:func:`planner.scale.layout.
    vllm_dense_expert_parallel_refusal`: the CLI's and the Engine page's sentence), "" otherwise."""
    from planner.scale.layout import vllm_dense_expert_parallel_refusal  # noqa: PLC0415

    if ENGINE_PROFILES[engine].family != "vllm":
        return ""
    return vllm_dense_expert_parallel_refusal(model.num_experts, link_expert_parallel())


def home_engine_plan(model: ModelSpec, gpu, request: EngineRequest) -> EnginePlan | str:
    """The Home page's engine plan of ``request`` (:func:`home_request`: the page's inputs and serving features)
    on ``gpu``, or the sentence saying why the engine cannot plan it (an engine/dtype mismatch is a message, not
    an error; expert parallel on a dense model, :func:`expert_parallel_refusal`: the verdict is then not green)."""
    if refusal := expert_parallel_refusal(model, request.engine):
        return f"{request.engine} would refuse to start: {refusal}."
    try:  # one replica wider than a node does not start on one (the Engine page's verdict; node_note says how)
        return on_one_node(model, gpu.framework_memory_bytes, request,
                           plan_engine(model, gpu.framework_memory_bytes, request), DEFAULT_GPUS_PER_NODE)
    except ValueError as exc:
        return f"{request.engine}: {exc}. Change the engine or the dtype in the sidebar to see its figures."


def link_launch(plan: EnginePlan | str, scale) -> EnginePlan | str:
    """The launch the Engine page plans for the link's data / expert / context parallel flags: the engine view of
    ``scale`` (:func:`ui.home_scale.link_scale_plan`: ``-dp`` from the replicas, ``--enable-expert-parallel``, and
    the ``-dcp`` Home's budget applies; one attention data-parallel rank's printed tokens and concurrency, the command
    with those flags), as :func:`ui.scale_view.plan_launch` plans it there. ``plan`` (:func:`home_engine_plan`) as it
    is where ``scale`` is None (no such flag, ``-dp`` alone, an engine other than vLLM, pipeline stages, or what the
    planner refuses: the Engine page then plans one tensor-parallel replica too). QA: DeepSeek-V3.2 on 8 H200 at
    131,072 tokens with ``-dcp 8``: 57 users in Home's tiles beside 7.21x in its panel, 57.67x on the Engine page;
    DeepSeek-V3 with ``-dp 8 --enable-expert-parallel`` and no ``-dcp``: "would refuse to start (505.09 GiB short)"
    and no ``--enable-expert-parallel`` in Home's panel, where the Engine page's launch starts with 25 per rank x 8."""
    return plan if scale is None else scale.engine_view()


def link_scale(request: EngineRequest, dcp: int):
    """The :class:`planner.scale.ScaleRequest` :func:`link_launch` plans ``request`` with: the Engine page's
    (:func:`ui.scale_view.vllm_scale_request` of the link's replicas, expert parallel switch and ``dcp``), or None
    where it plans none (plain replicas, an engine other than vLLM, pipeline stages)."""
    if ENGINE_PROFILES[request.engine].family != "vllm" or request.pipeline_parallel_size > 1:
        return None
    return vllm_scale_request(request.data_parallel_size, link_expert_parallel(), dcp)


def launch_scale(request: EngineRequest, plain: EnginePlan | str, launch: EnginePlan | str, dcp: int):
    """The scale request behind ``launch`` (:func:`link_launch` of ``plain``, :func:`home_engine_plan`'s), for
    :func:`planner.fixes.engine_start_fixes` to search its fixes on the same launch; None where ``launch`` is
    ``plain`` (no scale launch planned)."""
    return None if launch is plain else link_scale(request, dcp)


def plans_left_out_experts(plain: EnginePlan | str, launch: EnginePlan | str, budget_applies: bool = False) -> bool:
    """True where ``launch`` (:func:`link_launch` of ``plain``) plans the link's ``--enable-expert-parallel`` and
    Home's budget leaves it out (:func:`ui.feature_line.link_scale_left_out` names it), for
    :func:`ui.engine_verdict.engine_starts_note`; False where ``budget_applies`` (the budget prices the launch's rank,
    :func:`ui.home_scale.rank_budget`)."""
    return launch is not plain and link_expert_parallel() and not budget_applies


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
    lines = ["\n".join(said), _where_said(plan)]
    if caveat := close_call(plan):
        lines.append(f"**Close call:** {plan.engine} {md_message(caveat)}.")
    st.warning("\n\n".join(lines), icon=":material/warning:")


def _where_said(plan: EnginePlan) -> str:
    """Where the warning sends the reader: the newest vLLM the budget prices (:data:`planner.overhead.
    OVERHEAD_PROFILE`) against another engine's figures, or, for that engine itself, its check before loading
    weights or its own figures (QA, stop 41: "see what this engine version would allocate" under ``vllm``)."""
    if plan.engine != budget_profile(plan.engine):  # the budget prices a vLLM version's own overhead
        told = ("why this engine version stops before loading weights" if plan.stopped_at_config_check
                else "what this engine version would allocate and print")
        return f"The budget above prices the newest vLLM; see {told}, at the bottom."
    if plan.stopped_at_config_check:
        return ("It stops at a check before it loads the weights, which the budget above does not make; more at the "
                "bottom.")
    return "Its own figures for this launch are at the bottom."


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
                     features: ServingFeatures | None = None, gap: str = "", nodes: str = "",
                     left_out: list[tuple[str, str]] | None = None) -> None:
    """The Home page's engine panel for ``plan`` (:func:`home_engine_plan`'s answer), priced with the page's
    serving ``features``; ``gap``: :func:`budget_gap`; ``nodes``: :func:`node_note`; ``left_out``:
    :func:`knobs_left_out`, named under the figures."""
    if isinstance(plan, str):
        if not kv_dtype_fix(engine, form.kv_cache_dtype, stop=False):
            st.info(md_message(plan), icon=":material/info:")
        return
    budget_kv = priced_kv_name(model, form.weight_dtype, form.kv_cache_dtype, form.gpu_ids[:1])  # AMD: no fp8_ds_mla
    line = " ".join(t for t in (feature_line.engine_line(plan, features, form.model_id),
                                feature_line.users_line(None, left_out=left_out or ())) if t)
    home_panel(plan, line, budget_kv_dtype=budget_kv, command_note=custom_panel.launch_name_note(form.model_id),
               gap=gap, nodes=nodes)


def budget_gap(plan: EnginePlan | str, budget: Plan, request: PlanRequest, gpu, pipeline_said: bool = False,
               plain: EnginePlan | str | None = None) -> str:
    """Why the engine's whole requests differ from the budget's users (the CLI's note:
    :func:`planner.engines.budget_gap.budget_gap_text`), "" when they agree or the engine cannot plan the inputs;
    ``gpu``: the catalog GPU; ``pipeline_said``: :func:`pipeline_note` said the stages already; ``plain``: the
    launch without ``-dcp`` (:func:`home_engine_plan`), which ``plan`` is unless :func:`link_launch` split it.
    Where the budget splits each request's KV by the link's decode context parallel size
    (:func:`ui.feature_line.link_dcp`) and this launch does not (an engine without ``-dcp``, or pipeline stages),
    that is the difference, and the sentence says so."""
    if isinstance(plan, str):
        return ""
    dcp = budget.decode_context_parallel_size
    if dcp > 1 and (plain is None or plan is plain):
        return (f"The budget above splits each request's KV over {count_noun(dcp, 'GPU')} (decode context parallel "
                f"{dcp}); this launch keeps every token of a request on each GPU. The Engine page plans "
                f"`--decode-context-parallel-size {dcp}` under vLLM without pipeline stages.")
    return budget_gap_text(plan, budget_users=budget.max_concurrent_sequences_by_memory,
                           budget_context_len=budget.context_len,
                           budget_batched_tokens=profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id),
                           pipeline_said=pipeline_said, budget_kv_bytes=budget.kv_cache_budget_bytes,
                           budget_stages=budget.pipeline_parallel_size)


def home_panel(plan: EnginePlan, features_line: str = "", budget_kv_dtype: str | None = None,
               command_note: str | None = None, gap: str = "", nodes: str = "") -> None:
    """A compact engine view for the Home page (no metrics; text from planner fields); ``features_line``: the
    serving features it was priced with (:func:`ui.feature_line.engine_line`) and the knobs it leaves out, shown
    under the figures; ``budget_kv_dtype``: the KV dtype the figures above price, named when the engine stores
    another (vLLM keeps DeepSeek-V3.2 as ``fp8_ds_mla`` under ``auto``, the budget bf16); ``command_note``: a line
    under the launch command (:func:`ui.custom_panel.launch_name_note`); ``nodes``: a warning under it
    (:func:`node_note`). A launch that stops at a check before loading weights prints no memory line, so it shows
    no figures (QA, stop 41: "0 tokens as printed, 0.00x concurrency" and an empty log box)."""
    with st.expander(f"What {plan.engine} would allocate and print", icon=":material/memory:", expanded=False):
        if plan.stopped_at_config_check:
            st.markdown(f"**{plan.engine_label}** stops before loading weights: it prints no memory line, so it "
                        "has no KV cache, tokens or concurrency to show.")
        else:
            st.markdown(_figures_text(plan))
            if reason := expected_error_reason(plan):  # why the +- beside the available KV is that large
                st.caption(md_message(reason))
        if stages := stage_kv_text(plan):
            st.caption(stages)
        if features_line:
            st.caption(features_line)
        if plan.reasons:
            st.markdown("\n".join(["It would print:", *quoted(plan.reasons)]))
        if caveat := close_call(plan):
            st.warning(f"**Close call:** {plan.engine} {md_message(caveat)}.", icon=":material/warning:")
        if not plan.stopped_at_config_check:
            st.caption(_why_text(plan, budget_kv_dtype, gap))
        if plan.engine_log_lines:
            st.code("\n".join(plan.engine_log_lines), language="text")
            if stage_note := log_note(plan):  # pipeline stages: which stage each printed line describes
                st.caption(stage_note)
        elif plan.starts:
            st.caption(f"{plan.engine} prints no memory lines at startup.")
        # wrapped: a --speculative-config naming its head runs past the column (QA D6: EAGLE3_DRAFT_REPO)
        engine_nodes.launch_code(plan.launch_command, wrap_lines=True)  # SGLang over nodes: a command per node
        if command_note:  # a custom model's name (ui.custom_panel.launch_name_note)
            st.caption(command_note)
        if nodes:  # one replica wider than a node: the launch across nodes that runs
            st.warning(md_message(nodes), icon=":material/lan:")
        nav.link("pages/5_Engine.py", label="Per-rank breakdown, other engines and your own logs",
                 icon=":material/arrow_forward:")


def stage_kv_text(plan: EnginePlan) -> str:
    """Under the panel's figures, where its available KV (the least of the pipeline stages') is not the stage that
    sizes the cache (:func:`planner.engines.replica_layout.stages_apart`): which stage each figure is, and that the
    budget above shows the sizing one; "" otherwise. QA: Kimi-K2.5 on 8 H200 in 2 stages, 52.21 GiB in Home's budget
    beside 51.55 GiB in its panel for the same 1,569,920 tokens."""
    if plan.stopped_at_config_check or not (apart := stages_apart(plan)):
        return ""
    least, sizing = apart
    return (f"Per stage: {format_bytes(least.available_kv_cache_bytes)} of KV per GPU is stage {least.stage}'s, the "
            f"least of the {plan.pipeline_parallel_size} stages; stage {sizing.stage}'s "
            f"{format_bytes(sizing.available_kv_cache_bytes)} holds the fewest blocks "
            f"({format_int(sizing.num_blocks)}), which {plan.engine} gives every stage, so the tokens are its"
            + (" and the budget above shows that stage." if plan.engine == budget_profile(plan.engine) else "."))


def _figures_text(plan: EnginePlan) -> str:
    """The panel's figures: the available KV, tokens, concurrency (printed or computed) and longest length."""
    if not plan.starts:  # vLLM V1 refuses before its token and concurrency lines (planner.engines.vllm._log_tail)
        return (f"**{plan.engine_label}** would refuse to start: {available_kv_text(plan)} of KV per GPU, where one "
                f"request of {format_tokens(plan.max_model_len)} needs "
                f"{format_bytes(plan.kv_cache_bytes_needed_per_request)}; largest max_model_len accepted: "
                f"{format_int(plan.engine_max_model_len)}.")
    state = "starts"
    printed = " as printed" if plan.concurrency_printed else f" (computed: {plan.engine} prints no concurrency line)"
    decoding = f" ({plan.max_concurrency_decoding:,.2f}x once decoding)" if plan.decodes_more_than_printed else ""
    return (f"**{plan.engine_label}** {state}: {available_kv_text(plan)} of KV per GPU, "
            f"{format_int(plan.engine_kv_cache_tokens)} tokens as printed, {plan.max_concurrency:.2f}x concurrency "
            f"at {format_tokens(plan.max_model_len)}{printed}{decoding}; "
            f"largest max_model_len accepted: {format_int(plan.engine_max_model_len)}.")


def _why_text(plan: EnginePlan, budget_kv_dtype: str | None, gap: str) -> str:
    """The "Why these can differ" caption: each cause once. Another engine's own way of loading, profiling and
    capturing is the ``gap`` sentence's (:func:`planner.engines.budget_gap.budget_gap_text`) where it has one; the
    concurrency is called printed only when the engine prints it (:attr:`EnginePlan.concurrency_printed`)."""
    stored = (f"{plan.engine} stores the KV cache as {plan.kv_cache_dtype} where the figures above price "
              f"{budget_kv_dtype}, so its tokens per GiB differ; "
              if stores_another_cache(plan.kv_cache_dtype, budget_kv_dtype) else "")
    engine_said = bool(gap) and plan.engine != budget_profile(plan.engine)  # the gap names this engine's own way
    priced = "the newest vLLM" if budget_profile(plan.engine) == OVERHEAD_PROFILE else plan.engine
    parts = [f"Why these can differ from the figures above: {stored}the figures above price {priced} under "
             "`vllm serve` (its loaded weights, profile pass, CUDA graphs and runner state), so for such a launch with "
             "its defaults the KV budgets agree"
             + ("." if engine_said else "; another engine or version loads the weights, profiles and captures graphs "
                "its own way.")]
    if plan.decodes_more_than_printed:
        parts.append(f"Concurrency: {md_message(plan.decoding_note)}; the users above are the requests decoding at "
                     "once beside one prefill chunk, as the newest vLLM pages them.")
    elif plan.concurrency_printed:
        parts.append("The concurrency here is the figure the engine prints.")
    if plan.scheduler_cap_note:
        parts.append(f"{md_message(plan.scheduler_cap_note)}.")
    if gap:
        parts.append(md_message(gap))
    return " ".join(parts)
