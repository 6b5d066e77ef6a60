"""Memory per GPU against context length for up to six models, with GPU capacity lines."""

import streamlit as st

from planner.gpu_compare import profile_pass_tiers

from ui import budget_knobs, catalog, charts, data, feature_line, inputs, link_rank, views
from ui.format import md_message

views.setup_page("Memory vs context length", "📈",
                 "Weights + overhead + KV cache per GPU as the context grows; the grey lines are each GPU's "
                 "usable memory (utilization x framework memory).")
form, problems = inputs.sidebar_inputs(
    model="many", gpu="many",
    default_models=("meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-7b-hf", "Qwen/Qwen2.5-7B",
                     "mistralai/Mistral-7B-v0.1"),
    default_gpus=("nvidia-rtx-4090", "nvidia-l40s", "nvidia-h100-sxm-80gb"),
    numbers=("num_gpus", "batch_size", "gpu_memory_utilization"), advanced=("overhead_gib",))
inputs.show_problems(problems)
views.require(form.model_ids, "model")
views.require(form.gpu_ids, "GPU")

models = [views.guarded(catalog.model_spec, m, what=f"loading {m}") for m in form.model_ids]
gpus = [views.guarded(catalog.gpu, g, what=f"loading {g}") for g in form.gpu_ids]
stages = feature_line.link_stages(form.num_gpus, models)  # the link's pipeline stages, planned as Home plans them
whole = budget_knobs.with_link_knobs(form.request())  # the link's engine knobs
request, share_line = feature_line.link_replica_share(whole, "the curves and the table plan")  # a replica's share
contexts = data.curve_contexts(models)
curves, grid, rank = views.guarded(link_rank.memory_views, models, gpus, whole, request, contexts, stages,
                                   what="sweeping the models")  # each model as Home plans it: the link's -dp + EP rank
feature_line.show_users_line(None, left_out=feature_line.link_features_left_out(
    "these curves and the table are the bare models' memory; Home, Concurrency and Allocation apply them",
    num_gpus=form.num_gpus, models=models, knobs=True, expert_parallel=rank is not None))
feature_line.show_stages_line(stages, form.num_gpus, "each curve the GPU of the stage that holds the most bytes")
if rank:
    request, share_line = rank.request, link_rank.rank_line(rank, form.batch_size, "the curves and the table plan")
if share_line:
    st.caption(md_message(share_line))
capacities = [(g.name, grid[(models[0].model_id, g.id)].usable_memory_bytes) for g in gpus]

log_y = st.toggle("Log memory axis", key="log_y", bind="query-params",
                  help="Keeps small models readable next to a very large one (DeepSeek-V3, Llama 3.1 405B).")


def curve_chart() -> None:
    """Memory per GPU against context length, with each GPU's usable line."""
    charts.show(st, charts.memory_curves(curves, capacities, request.batch_size, log_y=log_y), key="memory_chart")
    note = charts.class_note(curves)  # a model priced for two overhead classes: a line per class, told apart by dash
    if note:
        st.caption(note)
    st.caption(f"Each curve ends at {data.CURVE_END}, the \"(model limit)\" of the tab Longest context that fits; "
               "each GPU's usable line is named in the right margin. A triangle on the top edge marks where a curve "
               "leaves the chart (hover for its size; the log axis shows all of it). KV cache is exact (no block "
               "rounding), sliding windows and recurrent states applied. Hover for GiB and exact bytes. Each curve "
               f"carries the overhead of the GPUs it names ({budget_knobs.overhead_named()}, as the Engine page "
               f"prices it; its profile pass: {profile_pass_tiers(request.overhead_profile)}), so it crosses a GPU's "
               "line at the context that tab gives for that GPU.")


def fit_table() -> None:
    """The longest context each model fits at this batch, per GPU."""
    per = f" ({request.batch_size:,} per replica)" if share_line else ""
    st.markdown(f"**At batch {form.batch_size}{per}**")
    views.static_table(data.fit_table(grid, models, gpus))  # static: "does not fit: ..." cells wrap, not cut
    st.caption(f"After weights, {budget_knobs.overhead_named()} overhead (profile pass, CUDA graphs, runner state, "
               "weights as it loads them) and the utilization cap; open a model on the Home page for the full "
               "breakdown.")


# Only the open tab runs and draws (issue 27 speed: a rerun draws the chart or the table, not both).
views.lazy_tabs({"Curves": curve_chart, "Longest context that fits": fit_table},
                key="memory_curves_section")
