"""What grouped-query (and multi-query, latent) attention saves: KV per token and users per GPU."""

import streamlit as st

from planner.pipeline import plan_pipeline
from planner.model.kv import attention_variants
from ui import budget_knobs, catalog, charts, data, feature_line, inputs, link_rank, serving, views
from ui.format import count_noun, format_gpus, format_int, format_tokens, md_message, md_text

views.setup_page("GQA savings", "🗜️",
                 "The chosen model rebuilt as MHA, GQA (as built), MQA, or with MLA's latent: KV cache per token "
                 "and how many sequences one GPU holds.")
form, problems = inputs.sidebar_inputs(model="one", gpu="one")
features, serving_problems = serving.serving_inputs(model_id=form.model_id)  # LoRA, speculative decoding, images
inputs.show_problems([*problems, *serving_problems])

model = serving.served_model(views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}"))
gpu = views.guarded(catalog.gpu, form.gpu_id, what=f"loading {form.gpu_id}")
too_long = views.context_problem(model, form.context_len)
if too_long:
    st.error(md_message(too_long), icon=":material/error:")
whole = budget_knobs.with_link_knobs(serving.with_serving(form.request(), features))  # and the engine knobs
stages = feature_line.link_stages(form.num_gpus, (model,))  # the link's pipeline stages, planned as Home plans them
rank = link_rank.link_rank(model, whole, stages)  # the link's -dp + expert parallel rank, as Home prices it
request, share_line = ((rank.request, link_rank.rank_line(rank, form.batch_size, "every variant is planned as"))
                       if rank else feature_line.link_replica_share(whole, "every variant is planned as"))  # a share
variants = views.guarded(attention_variants, rank.model if rank else model,  # the rank's experts, where it has one
                         what=f"building attention variants of {model.model_id}")
plans = [(v, views.guarded(plan_pipeline, v.model, gpu.framework_memory_bytes, request, gpu_id=gpu.id,
                           pipeline_parallel_size=stages, what=f"planning the {v.name} variant")) for v in variants]
rows = data.variant_rows(plans)

st.subheader(md_text(f"{model.display_name} on {format_gpus(form.num_gpus, gpu.name)}, "
                     f"{format_tokens(form.context_len)} per sequence"))
st.caption(md_message(f"`{model.model_id}` is built with {model.attention_kind}; weights "
                      f"{plans[0][1].weights_label}, {data.kv_dtypes_text(plans)}, "
                      f"batch {format_int(form.batch_size)}, {count_noun(form.num_gpus, 'GPU')} per replica."))
if share_line:
    st.caption(md_message(share_line))
feature_line.show_users_line(features, form.model_id, what="Every variant's users",
                             left_out=feature_line.link_left_out(num_gpus=form.num_gpus, models=(model,),
                                                                 expert_parallel=rank is not None))
feature_line.show_stages_line(stages, form.num_gpus, "every variant's users those of its stage that holds the fewest")
feature_line.show_seqs_cap_line(request.max_num_seqs)  # the scheduler's limit, where the link sets one
nothing_fits = views.variant_fit_warning(plans)
savings = data.savings_sentence(plans)
if savings:
    st.markdown(f"**{md_message(savings)}**")
    if stored := data.savings_format_note(plans):  # the format's share of the saving, not a second headline
        st.caption(md_message(stored))
views.variant_metrics(plans)
left, right = st.columns(2)
charts.show(left, charts.variant_bars(rows, "kv_bytes_per_token", data.KV_TOKEN_COLUMN,
                                      "KV cache per token, whole model", "KV per token", byte_axis=True),
            key="kv_chart")
if nothing_fits:
    right.info("No users chart: not one sequence fits in any variant (see the warning above). The bytes per "
               "token on the left do not depend on the GPU.", icon=":material/info:")
else:
    charts.show(right, charts.variant_bars(rows, "max_concurrent_sequences", "Max concurrent sequences",
                                           f"Max concurrent sequences {views.replica_label(form.num_gpus)}",
                                           "sequences"), key="users_chart")
views.static_table(data.variant_table(rows))  # static: the Design notes wrap instead of being cut
if pricing := data.variant_pricing_note(plans):  # DeepSeek-V4: vLLM's pool as built, plain pages for a rebuild
    st.caption(md_message(pricing))
st.caption("Only the attention's KV heads change between variants; layers, windows, weights and overhead stay "
           "as built. Sources: Shazeer 2019 (MQA), Ainslie et al. 2023 (GQA), DeepSeek-V2 report 2024 (MLA).")

st.subheader("Across the catalog: KV cache per token vs parameters")
charts.show(st, charts.kv_vs_params(data.catalog_kv_rows(form.weight_dtype, form.kv_cache_dtype, gpu.id),
                                    highlight=catalog.entry_id(model.model_id)), key="catalog_chart")
st.caption(f"KV dtype {form.kv_cache_dtype} (auto = each model's compute dtype with {form.weight_dtype} "
           f"weights){data.sparse_mla_clause(form.kv_cache_dtype, gpu.id)}. Every KV-holding layer counted, windows "
           "not applied; the ringed point is the chosen model. 1 KiB = 2^10 bytes, 1 MiB = 2^20 bytes.")
