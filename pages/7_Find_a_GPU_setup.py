"""Reverse planner: the cheapest GPU setups that hold N concurrent users, with launch commands, and a
roofline throughput / cost estimate for the best one."""

from dataclasses import replace

import streamlit as st

from planner.diagnose import Fix
from planner.serving.features import for_engine
from planner.traffic.find_engine import launch_media_tokens
from ui import (
    catalog,
    charts,
    budget_knobs,
    custom_panel,
    downloads,
    engine,
    feature_line,
    find_scale_view,
    find_table,
    inputs,
    serving,
    traffic,
    views,
)
from ui.format import count_noun, md_message, md_text

views.setup_page("Find a GPU setup", "🔎",
                 "Give the users and their request lengths; get the cheapest GPU type x count x layout x KV dtype "
                 "that holds them, ranked by catalog price per hour. MoE and MLA models also get data + expert "
                 "parallel, decode context parallel and prefill / decode disaggregated setups.")
form, problems = inputs.sidebar_inputs(model="one", gpu=None, dtypes=False, numbers=(),
                                       advanced=("gpu_memory_utilization", "block_size", "overhead_gib"))
weight_dtype, kv_cache_dtypes, more = traffic.find_dtype_inputs()
problems.extend(more)
engine_name, more = engine.engine_selector()  # the app's engine (URL key engine, default vLLM) sizes every setup
problems.extend(more)
from_link, from_link_text = traffic.find_defaults_from_link()  # a plan's context_len / batch_size, if set
load, more = traffic.number_inputs(
    "Users and lengths", ("users", "prompt_len", "output_len", "prompt_p95", "output_p95", "max_model_len"),
    defaults={"max_model_len": None, **from_link}, carried=traffic.carried_words(from_link))
problems.extend(more)
if from_link_text:
    st.sidebar.caption(from_link_text)
limits, more = traffic.number_inputs("Search limits", ("max_gpus", "max_tpot_ms", "preemption_probability", "seed"))
problems.extend(more)
upload = traffic.lengths_uploader()
custom_gpu = custom_panel.current_choice().gpu  # the sidebar's custom GPU takes part when it has a price
search_gpus, more = traffic.vendor_filter([*catalog.gpus().values(), *([custom_gpu] if custom_gpu else [])])
problems.extend(more)
gpu_ids, more = traffic.gpu_type_filter(search_gpus)
problems.extend(more)
setup_kinds, link, more = find_scale_view.setup_kind_inputs()  # TP, DP+EP, DCP, disaggregated (URL setup_kinds)
problems.extend(more)
features, more = serving.serving_inputs(model_id=form.model_id)  # every setup carries them (and their flags)
problems.extend(more)
problems.extend(traffic.carried_number_problems(("context_len", "batch_size"), "its own users and lengths"))
engine_knobs, more = budget_knobs.find_knobs(engine_name)  # the link's knobs, as Home and the Engine page plan them
problems.extend(more)
inputs.show_problems(problems)

model = serving.served_model(views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}"))
lengths = views.guarded(traffic.read_upload, upload, what="reading the uploaded CSV")  # parsed once
workload = views.guarded(traffic.fixed_or_workload, load["prompt_len"], load["prompt_p95"], load["output_len"],
                         load["output_p95"], load["max_model_len"], lengths, what="building the workload")
request = views.guarded(
    traffic.find_request, users=load["users"], workload=workload, max_gpus=limits["max_gpus"],
    kv_cache_dtypes=kv_cache_dtypes, weight_dtype=weight_dtype, max_tpot_ms=limits["max_tpot_ms"],
    gpu_memory_utilization=form.gpu_memory_utilization, block_size=form.block_size, overhead_gib=form.overhead_gib,
    preemption_probability=limits["preemption_probability"], seed=limits["seed"], what="reading the inputs")
if features is not None:
    request = replace(request, serving=features)
if gpu_ids:
    request = replace(request, gpu_ids=gpu_ids)
request = replace(request, engine=engine_name, alternative_weight_dtype="fp8",  # fp8 weights: searched for a hint
                  setup_kinds=setup_kinds, link=link, engine_knobs=engine_knobs)
result = views.guarded(traffic.run_find, model, search_gpus, request, what=f"searching setups for {model.model_id}")

st.subheader(f"{md_text(model.display_name)}: {count_noun(load['users'], 'user')}")
st.caption(workload.describe(media_tokens=launch_media_tokens(request)))  # the launches' --max-model-len
feature_line.show_users_line(for_engine(features, engine_name), form.model_id, what="Every setup's users",
                             left_out=feature_line.link_left_out(engine=engine_name, scale=False))
if result.fits:
    st.success(traffic.best_text(result), icon=":material/check_circle:")
else:
    st.warning(traffic.nothing_fits_text(result, limits["max_gpus"]), icon=":material/warning:")
for note in result.notes:
    st.info(md_message(note), icon=":material/info:")
if result.weight_alternative is not None:  # one click: search with those weights
    alt = result.weight_alternative
    views.fix_buttons([Fix(f"search with {alt.weight_dtype} weights", "weight_dtype", alt.weight_dtype)],
                      key_prefix="find_weight_fix")
listed = find_scale_view.listed_setups(result)
if not listed:  # no setup of the kinds asked was planned within the limit: nothing to list, the advice is above
    st.caption(find_table.EMPTY_TEXT)
pages = find_table.num_pages(len(listed))
linked = find_scale_view.linked_page(result)  # a link naming a setup opens the table on its page
if linked is not None and pages > 1:
    st.session_state["find_page"] = linked
page = st.number_input(f"Page (of {pages}; {len(listed):,} setups, {find_table.FIND_PAGE_ROWS} a page)", min_value=1,
                       max_value=pages, value="min", step=1, key="find_page") if pages > 1 else 1
order, columns = find_table.find_table_config()
if listed:  # only the page shown is built (the CSV builds every row on its click)
    shown = find_table.find_rows(result, page)
    st.dataframe(shown, hide_index=True, key="setups_table", column_order=order, column_config=columns,
                 placeholder=find_table.MISSING_CELL, height="content")  # as the CSV writes a missing figure
    if ttft_note := find_table.missing_ttft_text(shown):  # why, without hovering the header
        st.caption(md_message(ttft_note))
for number, note in find_table.page_notes(result, page):
    st.caption(f"Note {number}: {md_message(note)}")
st.download_button("Download CSV", downloads.deferred_csv(lambda: find_table.csv_rows(find_table.find_rows(result))),
                   file_name="gpu_setups.csv", mime="text/csv", key="download_setups", icon=":material/download:",
                   on_click="ignore")
st.caption(f"Each replica (or data-parallel rank) is sized as {md_text(result.engine or engine_name)} sizes it (the "
           "Engine page's figures: the weights as its kernels load them, its own profile pass and block rules); a "
           "replica holds ceil(users / replicas) sequences of prompt + output tokens, a DP+EP launch ceil(users / "
           "ranks) per rank. Hover a column header for its full name. The CSV also has each row's margin, KV "
           "budget per GPU and launch command. Prices: model_catalog/gpus.json (each with its source).")
best = find_scale_view.chosen_setup(result, page)


def launch() -> None:
    """The chosen setup's launch commands (and llm-d values)."""
    find_scale_view.show_launch(best)


def throughput() -> None:
    """Roofline throughput and cost of one replica of the chosen plain tensor-parallel setup."""
    if best.kind != "TP":
        st.caption(f"No throughput chart for a {md_text(best.kind)} setup: the chart is drawn for plain "
                   "tensor-parallel rows (pick one under 'Setup to launch' to see it). This setup's TPOT, TTFT and "
                   "$/1M columns in the table are its own roofline figures.")
        return
    gpu = views.guarded(catalog.gpu, best.gpu_id, what=f"loading {best.gpu_id}")
    estimate = views.guarded(traffic.setup_throughput, model, gpu, best, request, workload,
                             what="estimating throughput")
    st.markdown(f"**{best.num_gpus} x {md_text(gpu.name)}** (one replica, tensor parallel "
                f"{best.tensor_parallel_size})")
    st.warning(f"**{estimate.label.capitalize()}.** {estimate.formula}.", icon=":material/speed:")
    charts.show(st, traffic.throughput_chart(estimate), key="throughput_chart")
    st.dataframe(traffic.throughput_rows(estimate), hide_index=True, key="throughput_table")
    for note in estimate.notes:
        st.info(md_message(note), icon=":material/info:")
    st.caption("Decode reads every weight once per step plus each running sequence's KV (at the mean decode "
               "context); prefill costs 2 x active parameters FLOPs per token. Sources: "
               "Pope et al., MLSys 2023; Williams et al., Roofline, CACM 2009.")


if best is not None:  # only the open tab runs and draws (issue 27 speed: the throughput chart draws when asked)
    views.lazy_tabs({"Launch": launch, "Throughput and cost": throughput}, key="find_section")
