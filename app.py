"""Home: the memory plan for one model on one GPU type.

Answers "does it fit, how many users, and at what context does it stop
fitting?" for the inputs in the sidebar (all of them in the URL).
Run: ``streamlit run app.py``.
"""

import streamlit as st

from planner.fixes import checked_fixes, engine_start_fixes
from planner.context_budget import plan_context_parallel
from planner.pool_kv import pool_kv
from ui import (budget_bar, budget_knobs, catalog, engine, engine_home, engine_pool, engine_verdict, feature_line,
                formulas, home_scale, inputs, serving, views)
from ui.format import format_bytes, format_gpus, md_message, md_text

views.setup_page("GPU memory plan", "🧮",
                 "Weights + KV-cache budget for one model on one GPU type, per GPU, with "
                 f"{budget_knobs.overhead_named()} overhead for that GPU: its weights as loaded, profile pass, CUDA "
                 "graphs and runner state.")
form, problems = inputs.sidebar_inputs(model="one", gpu="one")
engine_name, engine_problems = engine.engine_selector()
features, serving_problems = serving.serving_inputs(engine_name, form.model_id, offload=True,
                                                    gpu=serving.page_gpu(form.gpu_id))
budget_features, budget_left_out = engine_home.home_budget_features(features, engine_name, form.model_id)
knobs, knob_problems = engine_home.link_knobs()  # the Engine page's knobs, if carried
layout, layout_problems = engine_home.link_layout(form.num_gpus)  # and its pipeline stages, replicas and nodes
inputs.show_problems([*problems, *engine_problems, *serving_problems, *knob_problems, *layout_problems])
whole = budget_knobs.with_link_knobs(serving.with_serving(form.request(), budget_features), knobs,  # as the panel
                                     engine=engine_name)
request = engine_home.replica_request(whole, layout)  # one replica's share of the batch (data_parallel_size)

full_model = views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}")
model = serving.served_model(full_model)  # without the towers when the text-only switch is on
gpu = views.guarded(catalog.gpu, form.gpu_id, what=f"loading {form.gpu_id}")
stages = engine_home.budget_stages(form.num_gpus, layout, (model,), warn=True)  # the link's stages: plan each
dcp = feature_line.link_dcp(model, form.num_gpus, stages, (gpu.id,), request.kv_cache_dtype)  # -dcp: (size, why not)
asked = engine_home.home_request(form, engine_name, gpu.name, engine.reported_memory_bytes(gpu), features,
                                 knobs, layout)
engine_plan = engine_home.home_engine_plan(model, gpu, asked)  # the Engine page's view of the link, without -dcp
scale_plan = home_scale.link_scale_plan(model, gpu, asked, engine_plan, dcp[0])  # -dp/EP/-dcp, as the Engine page
launch = engine_home.link_launch(engine_plan, scale_plan)  # its launch (engine_plan without such flags)
rank = home_scale.rank_budget(model, gpu, whole, scale_plan)  # one rank with its experts, as `plan` prices it
result = rank.share_result if rank else views.guarded(
    plan_context_parallel, model, gpu.framework_memory_bytes, request, gpu_id=gpu.id,
    decode_context_parallel_size=dcp[0], pipeline_parallel_size=stages, what=f"planning {form.model_id} on {gpu.name}")

too_long = views.context_problem(model, form.context_len)
if too_long:
    st.error(md_message(too_long), icon=":material/error:")

st.subheader(md_text(f"{model.display_name} on {format_gpus(form.num_gpus, f'{gpu.vendor} {gpu.name}')}"))
st.caption(md_message(
    f"`{model.model_id}` · {model.attention_kind} · {result.weights_label} weights · "
    f"{result.kv_cache_dtype} KV cache"
    f" · {format_bytes(gpu.framework_memory_bytes)} framework memory ({gpu.framework_memory_basis})"),
    help=md_message(f"Framework memory source: {gpu.framework_memory_source}"))
st.caption(serving.weights_source_note(model))  # exact / by source / estimate (+-N%), towers named
budget_model = rank.model if rank else model  # what the budget prices: one rank's share of the experts
budget_request = rank.request if rank else request  # and its request: the MoE layers' data-parallel profile peak
engine_request = None if isinstance(engine_plan, str) else asked  # None: the engine cannot plan these inputs
fixes = None if result.fits else views.guarded(  # each fix re-planned, kept when the engine starts, least change first
    checked_fixes, model, gpu.framework_memory_bytes, budget_request, result, engine_request, gpu_id=gpu.id,
    what="checking the fixes", scale=engine_home.launch_scale(asked, engine_plan, launch, dcp[0]),  # -dcp too
    budget_model=budget_model)  # re-planned as the budget prices it: one rank's share of the experts
shown, shown_fixes = engine_home.whole_batch(result, fixes, layout)  # a batch fix names the whole batch
views.verdict(shown, gpu.name, shown_fixes, refusing_engine=engine_home.refusing_engine(launch, engine_name),
              engine_caps=engine_pool.headline(launch),  # SGLang's pool shorter than one request: not a plain Fits
              model=model, replicas=engine_home.replicas_line(result, form.batch_size, layout))
pipeline_said = engine_home.pipeline_note(result, model, launch, stages)  # the stages: the engine's figure
engine_home.engine_start_warning(result.fits, launch)  # "fits" here, but the engine view would refuse
engine_pool.short_pool_warning(result.fits, launch, request.batch_size)  # or SGLang caps each request at its pool
engine_verdict.engine_starts_note(result.fits, form.context_len, launch,  # the reverse: "does not fit", it starts
                                  engine_home.plans_left_out_experts(engine_plan, launch, rank is not None),  # EP
                                  model_limit=result.max_position_embeddings)
engine_home.backend_note(launch)  # fp8 KV on Ampere: the backend its launch command sets, or why none
node_text, node_count = engine_home.node_note(model, gpu, asked, launch)  # wider than a node: only nodes fix it
held = engine_pool.holds(launch)  # it starts, and (SGLang) its pool holds one whole request
start_fixes = [] if engine_request is None or not result.fits or node_count or held else views.guarded(
    engine_start_fixes, model, gpu.framework_memory_bytes, budget_request, engine_request, launch, gpu_id=gpu.id,
    decode_context_parallel_size=result.decode_context_parallel_size, what="checking the fixes",  # as planned,
    scale=engine_home.launch_scale(asked, engine_plan, launch, dcp[0]),  # on the launch that refused (-dcp too)
    budget_model=budget_model)
if node_count:  # wider than its nodes: one click sets the nodes it needs (Home reads num_nodes from the link)
    engine_home.node_button(node_count)
if start_fixes:  # under that warning: each one starts the engine and keeps the budget fitting
    st.caption(engine_pool.start_fixes_caption(engine_name, launch))
    views.fix_buttons(start_fixes, key_prefix="start_fix")
views.seed_answer(result, model, format_gpus(form.num_gpus, gpu.name), launch)
pool = views.guarded(pool_kv, model, gpu.framework_memory_bytes, request, gpu_id=gpu.id,  # DeepSeek-V4's pool
                     what="pricing the KV pool")
views.plan_metrics(result, pool)  # the KV tiles in the cache the users are counted in
feature_line.show_users_line(budget_features, form.model_id, same_as="", left_out=[  # and the vLLM knobs it leaves
    *budget_left_out, *feature_line.link_scale_left_out(  # EP on a dense model: the refusal above names it
        dcp, rank is not None or bool(engine_home.expert_parallel_refusal(model, engine_name))),
    *budget_knobs.not_taken(knobs, engine_name)])
feature_line.show_dcp_line(dcp[0])
views.guarded(serving.tower_panel, full_model, gpu, request, result, engine_name,
              what="planning the text-only variant")
st.html(budget_bar.budget_bar_html(result, gpu.name))  # HTML: no Plotly chunk for Home (ui/budget_bar.py)
command = budget_knobs.with_cli_flags(form.cli_command(stages, dcp[0], layout.num_nodes, layout.data_parallel_size,
                                                       rank is not None and engine_home.link_expert_parallel()),
                                      knobs, engine_name)  # as the CLI
serving.serving_panel(model, gpu, request, result, command)
formulas.formula_panel(result, model, form, command)
engine_home.home_engine_view(model, form, engine_name, launch, features,
                             gap=engine_home.budget_gap(launch, result, request, gpu, pipeline_said, engine_plan),
                             nodes=node_text,
                             left_out=engine_home.knobs_left_out(engine_name, form.context_len))
