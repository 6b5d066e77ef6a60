"""Prefill / decode disaggregation: two pools sized for N users, the KV transfer between them, the launch
commands and the llm-d values (``python -m planner disagg`` / ``deploy``)."""

import streamlit as st

from planner.scale import plan_disagg
from planner.scale.deploy import disagg_values_yaml
from ui import catalog, disagg_knobs, feature_line, inputs, scale_view, serving, traffic, views
from ui.format import count_noun, format_command, format_int, md_text

views.setup_page("Disaggregation", "🔀",
                 "Separate prefill and decode pools for N users: each pool's GPUs, replicas and per-GPU budget, "
                 "the KV each request moves between them, and how to launch them (roofline upper bound).")
form, problems = inputs.sidebar_inputs(model="one", gpu="one", numbers=("gpu_memory_utilization",),
                                       advanced=("block_size",))
knobs, more = scale_view.disagg_inputs()
problems.extend(more)
engine_values, more = disagg_knobs.knob_inputs(knobs.engine)  # the Engine page's knobs, both pools
problems.extend(more)
problems.extend(traffic.carried_number_problems(("context_len", "batch_size"), "its own users and lengths"))
inputs.show_problems(problems)
feature_line.show_users_line(None, left_out=disagg_knobs.left_out([*feature_line.link_features_left_out(
    "this page sizes the pools for the bare model; `python -m planner disagg` takes the serving flags, and Home, "
    "Concurrency and Allocation apply them", applied=("language_model_only",),  # the pools serve text only
    scale=False), *scale_view.prefill_dcp_left_out(knobs),  # the sidebar reads the parallel flags
    *disagg_knobs.not_taken(engine_values, knobs.engine)]))  # vLLM's own knobs under another engine
if carried := scale_view.load_defaults_from_link()[1]:
    st.caption(carried)

model = serving.served_model(views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}"))
gpu = views.guarded(catalog.gpu, form.gpu_id, what=f"loading {form.gpu_id}")
if missing := scale_view.roofline_gap(gpu):  # a custom GPU: no TFLOPS figure to time the prefill with
    st.warning(md_text(missing), icon=":material/speed:")
    st.stop()
engine_fields = disagg_knobs.request_fields(form, engine_values, knobs.engine)
prefill, decode = views.guarded(scale_view.pool_requests, form, knobs, gpu, text_only=model.language_model_only,
                                engine_fields=engine_fields, what="reading the inputs")
n = knobs.numbers
result = views.guarded(
    plan_disagg, model, gpu_memory_bytes=gpu.framework_memory_bytes, bandwidth_gb_s=gpu.bandwidth_gb_s or 0,
    bf16_dense_tflops=getattr(gpu, "bf16_dense_tflops", None), prefill=prefill, decode=decode, users=n["users"],
    prompt_len=n["prompt_len"], output_len=n["output_len"], ttft_ms=n["ttft_ms"], tpot_ms=n["tpot_ms"],
    link_id=knobs.link, what=f"sizing the pools for {form.model_id} on {gpu.name}")

st.subheader(md_text(f"{model.display_name} on {gpu.vendor} {gpu.name} under {knobs.engine}: "
                     f"{count_noun(n['users'], 'user')}, {format_int(n['prompt_len'])} + "
                     f"{format_int(n['output_len'])} tokens"))
scale_view.headline(result, knobs)
left, right = st.columns(2, gap="large")
scale_view.show_pool(left, result.prefill, gpu.framework_memory_bytes, gpu.name)
scale_view.show_pool(right, result.decode, gpu.framework_memory_bytes, gpu.name)
if not result.starts:  # no transfer, commands or values for pools that would not start
    st.stop()


def kv_transfer() -> None:
    """What each request moves from the prefill to the decode pool, per link."""
    st.markdown(scale_view.transfer_text(result))
    st.dataframe(scale_view.transfer_rows(result), hide_index=True, key="transfer_table",
                 column_config=scale_view.TRANSFER_COLUMNS)


def llm_d_values() -> None:
    """The llm-d model-service values that launch both pools."""
    try:
        values = disagg_values_yaml(model, result, gpu_name=gpu.name)
    except ValueError as exc:  # SGLang, or a tensor-parallel group wider than a node: a normal answer
        st.info(f"No llm-d values: {exc}.", icon=":material/info:")
        return
    st.code(values, language="yaml")
    st.download_button("Download values.yaml", values, file_name="values.yaml", mime="application/yaml",
                       key="download_values", icon=":material/download:", on_click="ignore")


# Only the open tab runs and draws (issue 27 speed: a rerun renders the transfer table or the YAML, not both).
views.lazy_tabs({"KV transfer between the pools": kv_transfer, "llm-d model-service values": llm_d_values},
                key="disaggregation_section")
for note in result.sizing_notes:  # they size both pools, whichever tab is open
    st.caption(note)
st.markdown("**The same plan from the command line**")
st.code(format_command(disagg_knobs.cli_command(form, knobs.engine, n, knobs.switches, knobs.link, engine_values,
                                                engine_fields, text_only=model.language_model_only)), language="bash")
st.caption("Sizing: decode batch per rank = the fewer of what its KV pool holds and what meets the TPOT target; "
           "prefill = 2 x active parameters FLOPs per prompt token; arrivals = users / (TTFT + output x TPOT). "
           "Same figures as `python -m planner disagg` and `deploy --target llm-d`. Sources: "
           "planner/scale/disagg.py, planner/scale/links.py, llm-d-modelservice chart v0.4.12.")
