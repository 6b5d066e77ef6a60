"""What a serving engine allocates and prints: per-rank budget, its own figures, launch command, log check."""

import streamlit as st

from planner.budget import weights_label
from planner.engines import plan_engine
from planner.engines.logparse import MAX_LOG_CHARS
from planner.engines.replica_layout import on_one_node
from planner.fixes import engine_fixes
from planner.scale.layout import DEFAULT_GPUS_PER_NODE
from ui import budget_knobs, catalog, custom_panel, engine, engine_graphs, feature_line, inputs, scale_view, serving
from ui import traffic, views
from ui import engine_home  # the node warning, one wording with Home's engine panel
from ui import engine_nodes
from ui.engine_metrics import batch_short_text
from ui.format import count_noun, md_message, md_text

views.setup_page("Engine", "⚙️",
                 "What vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp or transformers would allocate for this model, "
                 "per GPU, and the lines it would print. Paste a startup log to compare.")
form, problems = inputs.sidebar_inputs(model="one", gpu="one", numbers=("num_gpus", "context_len"), advanced=(),
                                      reads_max_model_len=True)
knobs, more = engine.engine_inputs()
problems.extend(more)
graph_knobs, more = engine_graphs.cudagraph_inputs(knobs.engine)  # vLLM cudagraph_mode and -O
problems.extend(more)
scale_request, more = scale_view.engine_scale_inputs(knobs.engine, knobs.data_parallel_size)  # -dp / EP / DCP
problems.extend(more)
inputs.show_problems(problems)
if ignored := budget_knobs.ignored_text(knobs.engine):  # vLLM's own knobs under another engine
    st.caption(ignored)
engine.kv_dtype_fix(knobs.engine, form.kv_cache_dtype, stop=True)  # an engine/dtype mismatch: a one-click fix

model = views.guarded(catalog.model_spec, form.model_id, what=f"loading {form.model_id}")
gpu = views.guarded(catalog.gpu, form.gpu_id, what=f"loading {form.gpu_id}")
features, serving_problems = serving.serving_inputs(knobs.engine, form.model_id, offload=True, gpu=gpu)
model = serving.served_model(model)  # without the towers when the text-only switch is on
inputs.show_problems(serving_problems)
request = views.guarded(engine.engine_request, form, knobs, gpu.name, features, engine.reported_memory_bytes(gpu),
                        what="reading the engine inputs")
request = engine_graphs.with_cudagraph_knobs(request, graph_knobs)
# -dp with expert parallel, or -dcp: the whole page describes that launch, one attention data-parallel rank (issue 26)
launch = scale_view.plan_launch(model, gpu, request, scale_request) if scale_request is not None else None
result = launch.engine_view() if launch is not None else views.guarded(
    plan_engine, model, gpu.framework_memory_bytes, request,
    what=f"planning {form.model_id} under {knobs.engine} on {gpu.name}")

st.subheader(md_text(f"{model.display_name} on {gpu.vendor} {gpu.name} under {result.engine}"))
layout_text = (scale_view.launch_layout_text(launch) if launch is not None else
               f"tensor parallel {result.tensor_parallel_size} × pipeline {result.pipeline_parallel_size} × "
               f"{count_noun(result.data_parallel_size, 'replica')} = {count_noun(result.num_gpus, 'GPU')}")
st.caption(f"{result.engine_label} · {layout_text} · "
           f"{views.guarded(weights_label, model, result.weight_dtype, what='reading the weight dtype')} weights · "
           f"{result.kv_cache_dtype} KV cache")
fixes = [] if launch is not None else views.guarded(  # [] when it starts; the fixes are checked for plain TP
    engine_fixes, model, gpu.framework_memory_bytes, request, result,
    context_key="max_model_len" if knobs.max_model_len else "context_len", what="checking the fixes")
if launch is not None:
    st.markdown(scale_view.scale_users_line(launch))
else:  # one replica wider than a node does not start on one: the verdict says so, the warning below how it runs
    result = views.guarded(on_one_node, model, gpu.framework_memory_bytes, request, result, DEFAULT_GPUS_PER_NODE,
                           what="checking the node size")
engine.engine_verdict(result, fixes)
if launch is None:  # one replica wider than a node: the launch across nodes that runs (vLLM's mp stays on one)
    views.guarded(engine_home.node_warning, model, gpu, request, result, what="planning the launch across nodes")
if not result.stopped_at_config_check:
    engine.engine_metrics(result)
else:
    st.info("No memory figures: the engine stops at a check before it loads weights or allocates a cache (the "
            "refusal above). The figures below are the arithmetic for this launch, not what would happen.",
            icon=":material/info:")
if serving_line := feature_line.engine_line(result, features, form.model_id):  # why its concurrency differs (issue 27)
    st.caption(serving_line)
batch = traffic.link_whole_number("batch_size", inputs.NUMBER_FIELDS["batch_size"])  # Home's batch, if carried
if batch_text := batch_short_text(result, batch):  # a batch one replica's pool cannot hold at once
    st.warning(md_message(batch_text), icon=":material/group:")
if launch is not None:  # data / expert / context parallel: the layout, users per rank x ranks
    scale_view.engine_scale_section(launch, gpu)

st.subheader("Per-GPU budget, by pipeline stage")
st.caption(engine.rank_caption(result))
left, right = st.columns([3, 2])
left.html(engine.stage_bars_html(result, gpu.name))  # HTML: no Plotly chart to load or redraw
right.markdown("**The engine would print**")
if result.engine_log_lines:
    right.code("\n".join(result.engine_log_lines), language="text", wrap_lines=True)
    if note := engine.log_note(result):
        right.caption(note)
elif result.stopped_at_config_check:
    right.caption(f"{result.engine} stops before it prints any memory line (the refusal above).")
else:
    right.caption(f"{result.engine} prints no memory lines at startup.")
views.static_table(engine.rank_table(result))  # static: no data-grid chunk to load (issue 27 speed)
st.caption(f"{result.overhead_formula}. Every term can be replaced by a measured one (paste a log below, or set "
           "the engine's available KV memory in the sidebar). The engine keeps the fewest blocks over all GPUs. "
           "Sources: vLLM gpu_worker.py and kv_cache_utils.py; SGLang model_runner_kv_cache_mixin.py; "
           "llama.cpp llama-kv-cache.cpp.")
st.markdown("**Launch command**")
engine_nodes.launch_code(result.launch_command)  # SGLang over nodes: one command per node
if name_note := custom_panel.launch_name_note(form.model_id):  # a pasted config's name is no checkpoint
    st.caption(name_note)
engine.serving_section(result)

st.subheader("Check against your engine's startup log")
text = st.text_area("Paste the startup log (vLLM, SGLang, llama.cpp, TensorRT-LLM or TGI)", key="engine_log",
                    height=180, max_chars=MAX_LOG_CHARS,
                    help="Lines such as 'Available KV cache memory: X GiB', 'GPU KV cache size: N "
                         "tokens', 'KV Cache is allocated. #tokens: N', 'llama_kv_cache: size = ...'. "
                         f"At most {MAX_LOG_CHARS:,} characters: paste the startup part, from model loading to "
                         "the KV-cache lines, not a whole day of serving logs.")
if text.strip():
    view = views.guarded(engine.log_view, text, model, gpu.framework_memory_bytes, request, result,
                         what="reading the log")
    engine.log_message(view)
    if view.rows:
        st.markdown("**Estimate vs engine log, line by line**")
        views.static_table(engine.reconcile_rows(view.rows))  # static: the log line wraps (a grid cut it at 1,280 px)
    if view.plans:
        st.markdown("**Re-planned with what the log measured**")
        st.dataframe(engine.replan_rows(view.plans), hide_index=True, key="replan_table")
