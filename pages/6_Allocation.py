"""Real traffic, not worst case: naive vs paged vs prefix-cached KV, length distributions, sampling,
KV quantization and swap, for one model on one GPU type."""

import streamlit as st

from ui import budget_knobs, catalog, charts, feature_line, inputs, link_rank, serving, traffic, views
from ui.format import format_bytes, format_int, format_tokens, md_message, md_text

views.setup_page("Allocation", "🧱",
                 "How the KV cache is handed out decides how many users fit: naive reservation of max_model_len "
                 "vs PagedAttention blocks vs shared prefixes, under your traffic.")
form, problems = inputs.sidebar_inputs(model="one", gpu="one", numbers=("num_gpus", "gpu_memory_utilization"),
                                       advanced=("block_size", "overhead_gib"))
alloc, more = traffic.number_inputs("Allocation", ("max_model_len", "mean_len", "prefix_len", "prefix_hit_fraction"),
                                    defaults=traffic.length_from_link())  # a plan's context_len carries over
problems.extend(more)
carried_users = traffic.users_from_link()  # a plan's batch_size is this page's traffic
load, more = traffic.number_inputs(
    "Traffic (Monte-Carlo)", ("users", "prompt_len", "prompt_p95", "output_len", "output_p95", "seed"),
    defaults={"prompt_len": 600, "prompt_p95": 1500, "output_len": 200, "output_p95": 500, **carried_users},
    expanded=False, carried=traffic.carried_words(carried_users))
problems.extend(more)
extra, more = traffic.number_inputs("Sampling and swap", ("num_samples", "swap_space_gib", "host_link_gb_s"),
                                    expanded=False)
problems.extend(more)
upload = traffic.lengths_uploader()
features, more = serving.serving_inputs(model_id=form.model_id)  # LoRA slots, speculative decoding, images
problems.extend(more)
problems.extend(traffic.carried_number_problems(("context_len",), "its own max_model_len"))
problems.extend(traffic.carried_number_problems(("batch_size",), "its own traffic's users (under Traffic)"))
if carried_users:
    st.sidebar.caption(f"From the link: batch_size {carried_users['users']:,} = {carried_users['users']:,} "
                       "concurrent users of the sampled traffic (Traffic, above). The Naive vs paged tab compares "
                       "the batch naive reservation admits.")
inputs.show_problems(problems)

model = serving.served_model(views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}"))
gpu = views.guarded(catalog.gpu, form.gpu_id, what=f"loading {form.gpu_id}")
lengths = views.guarded(traffic.read_upload, upload, what="reading the uploaded CSV")  # parsed once
stages = feature_line.link_stages(form.num_gpus, (model,))  # the link's pipeline stages, planned as Home plans them
workload = views.guarded(traffic.build_workload, load["prompt_len"], load["prompt_p95"], load["output_len"],
                         load["output_p95"], alloc["max_model_len"], lengths, what="building the workload")
request = budget_knobs.with_link_knobs(serving.with_serving(form.request(context_len=alloc["max_model_len"]), features))
rank = link_rank.link_rank(model, request, stages)  # the link's -dp + expert parallel rank, as Home prices it
view = views.guarded(
    traffic.allocation_view, rank.model if rank else model, gpu, rank.request if rank else request,  # its experts
    mean_len=alloc["mean_len"], prefix_len=alloc["prefix_len"], prefix_hit_fraction=alloc["prefix_hit_fraction"],
    workload=workload, users=load["users"], seed=load["seed"], num_samples=extra["num_samples"],
    swap_space_gib=extra["swap_space_gib"], host_link_gb_s=extra["host_link_gb_s"], pipeline_parallel_size=stages,
    what=f"comparing allocations for {form.model_id} on {gpu.name}")
c = view.comparison

st.subheader(f"{md_text(model.display_name)} on {md_text(gpu.name)}: naive vs paged vs paged + prefix")
feature_line.show_users_line(features, form.model_id, what="Every user count on this page",
                             left_out=feature_line.link_left_out(read_keys=("swap_space_gib",), num_gpus=form.num_gpus,
                                                                 models=(model,), expert_parallel=rank is not None),
                             same_as=traffic.users_same_as(c))
feature_line.show_stages_line(stages, form.num_gpus, "every figure per GPU those of the stage that holds the fewest "
                              "users")
if rank:
    st.caption(md_message(link_rank.rank_line(rank, form.batch_size, "every figure here plans")))
too_long = views.context_problem(model, alloc["max_model_len"])
if too_long:
    st.error(md_message(too_long), icon=":material/error:")
for note in c.notes:
    st.warning(md_message(note), icon=":material/warning:")
st.caption(f"Sampled traffic (the Your traffic and Parallel sampling tabs): {md_text(workload.describe())}")


def naive_vs_paged() -> None:
    """The three allocators side by side at the sidebar's average length: users, bars, users against length, the
    table (QA: these users sat above every tab, beside "Your traffic"'s own)."""
    traffic.metrics_row(traffic.allocation_metric_values(view))
    left, right = st.columns(2)
    charts.show(left, traffic.allocation_bars(c, view.extra_tokens), key="allocation_bars")
    charts.show(right, traffic.allocation_curve_chart(view.curve, alloc["max_model_len"]), key="allocation_curve")
    views.static_table(traffic.allocation_rows(c))  # static: no data-grid chunk to load (issue 27 speed)
    if c.naive_note:  # naive reserves exact bytes; Home's users are paged as vLLM pages them
        st.caption(md_message(c.naive_note))
    sentence = traffic.slice_text(view)
    if sentence:
        st.markdown(sentence)
    st.caption(traffic.allocation_caption(c))


def your_traffic() -> None:
    """How many users of the sampled traffic fit, and how often they overflow."""
    if view.simulation is None:
        st.warning("The KV budget holds not even one short request: fix the plan first (more GPUs, smaller "
                   "weights).", icon=":material/warning:")
        return
    traffic.metrics_row(traffic.simulation_metric_values(view))
    charts.show(st, traffic.preemption_chart(view.simulation, load["users"]), key="preemption_chart")
    st.caption(f"Seeded Monte-Carlo ({format_int(view.simulation.num_trials)} trials, seed {view.simulation.seed}): "
               "requests drawn from the distribution are admitted in order, each paged in whole blocks and sized for "
               "its last token, until the KV budget runs out. Past that point vLLM preempts a request.")


def prefix_caching() -> None:
    """What storing a shared prefix once saves."""
    if view.prefix is None:
        st.info("Set a shared prefix (system prompt or document) in the sidebar to see what storing it once saves.",
                icon=":material/info:")
        return
    traffic.metrics_row(traffic.prefix_metric_values(view.prefix))
    st.caption("Saving = (requests hitting the prefix − 1) × ⌊prefix / block_size⌋ × block_size × KV per "
               "token. Sources: vLLM automatic prefix caching, full blocks only (vllm/v1/core/kv_cache_utils.py, "
               "hash_block_tokens).")


def parallel_sampling() -> None:
    """Several outputs per prompt, with and without copy-on-write blocks."""
    st.markdown(f"**{view.sampling.num_samples} outputs per prompt** (parallel sampling / beam search)")
    traffic.metrics_row(traffic.sampling_metric_values(view.sampling))
    charts.show(st, traffic.sampling_bars(view.sampling), key="sampling_chart")
    st.caption(f"One request of {format_tokens(view.sampling.prompt_len)} prompt + "
               f"{format_tokens(view.sampling.output_len)} output. Without paging each sample keeps a full cache; "
               "with paging the prompt's full blocks are shared copy-on-write (Kwon et al. 2023, section 4.4).")


def kv_quantization() -> None:
    """Users per KV-cache dtype at the mean length, with each dtype's quality trade-off."""
    st.markdown(f"**At {format_tokens(alloc['mean_len'])} per sequence**")
    charts.show(st, traffic.kv_dtype_bars(view.kv_dtypes), key="kv_dtype_chart")
    views.static_table(traffic.kv_dtype_rows(view.kv_dtypes))  # static: its "Quality trade-off" notes wrap
    st.caption(md_text(traffic.kv_dtype_sources(view.kv_dtypes)))
    st.caption("int4 uses the q4_0 layout: 32 values in 16 bytes plus one fp16 scale per group (4.5 bits). Sources: "
               "vLLM docs, Quantized KV Cache; Liu et al. 2024 (KIVI); Hooper et al. 2024 (KVQuant).")


def swap() -> None:
    """Parking preempted sequences in host memory."""
    traffic.metrics_row(traffic.swap_metric_values(view.swap))
    st.caption(f"Host memory per GPU {format_bytes(view.swap.cpu_swap_bytes)}. Swapping parks preempted sequences "
               "without losing their KV; vLLM V1 recomputes by default and offers CPU offloading "
               "(--kv-offloading-size). Sources: vLLM docs, Optimization and Tuning; Kwon et al. 2023, section 4.5.")


# Only the open tab runs and draws (a rerun draws one section's charts, not five: issue 27 speed).
views.lazy_tabs({"Naive vs paged": naive_vs_paged, "Your traffic": your_traffic, "Prefix caching": prefix_caching,
                 "Parallel sampling": parallel_sampling, "KV-cache quantization": kv_quantization,
                 "Swap / offload": swap}, key="allocation_section")
