"""Max concurrent sequences against context length for several GPUs, with a CSV table."""

import streamlit as st

from planner.budget import weights_label
from ui import budget_knobs, catalog, charts, data, downloads, feature_line, inputs, link_rank, serving, views
from ui.format import md_message, md_text

views.setup_page("Concurrency", "👥",
                 "How many sequences of a given length fit in each GPU's KV budget (one model replica, "
                 "paged in whole blocks).")
form, problems = inputs.sidebar_inputs(
    model="one", gpu="many",
    default_gpus=("nvidia-rtx-4090", "nvidia-l40s", "nvidia-a100-sxm-80gb", "nvidia-h100-sxm-80gb",
                  "nvidia-h200-sxm"),
    numbers=("num_gpus", "context_len", "gpu_memory_utilization"), advanced=("block_size", "overhead_gib"))
features, serving_problems = serving.serving_inputs(model_id=form.model_id)
inputs.show_problems([*problems, *serving_problems])
views.require(form.gpu_ids, "GPU")

model = serving.served_model(views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}"))
gpus = [views.guarded(catalog.gpu, g, what=f"loading {g}") for g in form.gpu_ids]
request = budget_knobs.with_link_knobs(serving.with_serving(form.request(), features))  # the link's engine knobs
stages = feature_line.link_stages(form.num_gpus, (model,))  # the link's pipeline stages, planned as Home plans them
dcp = feature_line.link_dcp(model, form.num_gpus, stages, form.gpu_ids, request.kv_cache_dtype)  # -dcp, why not
rank = link_rank.link_rank(model, request, stages)  # the link's -dp + expert parallel rank, as Home prices it
planned, request = (rank.model, rank.request) if rank else (model, request)  # its experts, batch share, MoE peak
contexts = data.concurrency_contexts(model)
series = views.guarded(data.concurrency_series, planned, gpus, request, contexts, stages, dcp[0],
                       what="sweeping the GPUs")
holds_nothing = views.no_fit_warnings(series, model.model_id)  # True: no chart to draw
too_long = views.context_problem(model, form.context_len)
if too_long:
    st.warning(md_message(too_long), icon=":material/warning:")  # the curves stop at the limit; the headline not

st.subheader(md_text(
    f"{model.display_name}, {views.guarded(weights_label, model, form.weight_dtype, what='reading the weight dtype')} "
    f"weights, {data.priced_kv_name(model, form.weight_dtype, form.kv_cache_dtype, form.gpu_ids)} KV cache"))
feature_line.show_users_line(features, form.model_id,
                             left_out=feature_line.link_left_out(num_gpus=form.num_gpus, dcp=dcp, models=(model,),
                                                                 expert_parallel=rank is not None))
if rank:
    st.caption(md_message(link_rank.rank_line(rank, form.batch_size, "every user count here plans")))
feature_line.show_dcp_line(dcp[0])
feature_line.show_seqs_cap_line(request.max_num_seqs)  # the scheduler's limit, where the link sets one
feature_line.show_stages_line(stages, form.num_gpus, "each GPU's users at each length those of the stage that "
                              "holds the fewest")
views.guarded(feature_line.concurrency_headline, planned, gpus, request, stages, dcp[0],
              feature_line.link_replicas(), what="planning at the plan's context")  # per replica, x the link's


def chart() -> None:
    """Users against context length, a line per GPU."""
    if holds_nothing:  # an empty chart would say nothing: the warnings above say why
        st.info("No chart: not one sequence fits on any of these GPUs at any context length (see the warnings "
                "above). More GPUs per replica, fp8 or int4 weights, or larger GPUs bring the lines back.",
                icon=":material/info:")
        return
    charts.show(st, charts.concurrency_lines(contexts, series), key="concurrency_chart")
    st.caption(f"Each line ends at {data.CURVE_END}. "
               "GPUs with the same framework memory and the same vLLM size class draw the same line; hover, or "
               "open the table's tab. A line that levels off above its neighbours comes from sliding-window or "
               "recurrent layers that stop growing; a line at 1 or 0 is a budget that holds one sequence or none.")


def table() -> None:
    """The same sweep at round context lengths, with its CSV."""
    columns = data.table_contexts(model)
    frame = data.concurrency_table(
        views.guarded(data.concurrency_series, planned, gpus, request, columns, stages, dcp[0], what="tabulating"),
        gpus, columns)
    views.static_table(data.concurrency_display(frame))  # static: no data-grid chunk to load (issue 27 speed)
    st.download_button("Download CSV", downloads.deferred_csv(frame), file_name="max_concurrent_sequences.csv",
                       mime="text/csv", key="download_csv", icon=":material/download:", on_click="ignore")
    st.caption("Per replica of num_gpus GPUs; each GPU's budget = utilization x framework memory - weights - "
               f"overhead. Columns double from 128 tokens, where the chart starts, and stop at {data.CURVE_END}; the "
               "chart passes through every cell and ends there too.")


# Only the open tab runs and draws (issue 27 speed: a rerun draws the chart or the table, not both).
views.lazy_tabs({"Chart": chart, "Table by context length": table}, key="concurrency_section")
