"""The Engine page and the Home engine panel: deep links, planner values on screen, the log box.

Displayed numbers are compared with :func:`planner.engines.plan_engine` output
passed through the same formatting helpers (never re-derived here).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.units import GiB
from ui.engine import engine_metric_values
from ui.format import format_command
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
PAGE = "pages/5_Engine.py"
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
H100 = "nvidia-h100-sxm-80gb"

V07_LOG = """\
(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=1671) INFO 09-04 01:02:38 [scheduler.py:222] Chunked prefill is enabled with max_num_batched_tokens=2048.
(EngineCore_0 pid=1812) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and 4.42 seconds
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 5.01 GiB
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:849] GPU KV cache size: 93,872 tokens
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens per request: 5.73x
"""


def reconcile_table(at: AppTest):
    """The log check's line-by-line table: a static table (its log lines wrap at 1,280 px), not a data grid."""
    return next(t.value for t in at.table if "Log line" in t.value.columns)


def run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def shown_metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in metric_tiles(at)}


def expected(engine: str, **kw):
    from planner.engines.shared_gpu import reported_memory_bytes

    gpu = get_gpu(H100)
    request = EngineRequest(engine=engine, gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu),
                            **({"weight_dtype": "auto"} | kw))  # as the page: nvidia-smi's total for SGLang
    return plan_engine(model_spec(LLAMA3), gpu.framework_memory_bytes, request)


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0.28", "vllm-v0.10", "sglang", "llama.cpp", "trtllm", "tgi",
                                    "transformers"])
def test_engine_page_shows_planner_values(engine):
    at = run(PAGE, {"engine": engine, "model": LLAMA3, "gpu": H100, "context_len": "4096"})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert engine in at.selectbox(key="engine").options  # every profile is offered, vllm-v0.28 included
    plan = expected(engine, max_model_len=4096)
    assert shown_metrics(at) == {k: v for k, (v, _) in engine_metric_values(plan).items()}
    codes = [c.value for c in at.code]
    assert format_command(plan.launch_command) in codes
    if plan.engine_log_lines:
        assert "\n".join(plan.engine_log_lines) in codes
    else:  # transformers prints nothing: the page says so instead of an empty box
        assert any("prints no memory lines" in c.value for c in at.caption)


def test_parallel_deep_link_splits_gpus_into_stages():
    at = run(PAGE, {"model": LLAMA3, "gpu": H100, "num_gpus": "4", "pipeline_parallel_size": "2",
                    "data_parallel_size": "3", "context_len": "8192"})
    assert not at.exception and not at.error
    plan = expected("vllm", max_model_len=8192, tensor_parallel_size=2, pipeline_parallel_size=2, data_parallel_size=3)
    assert shown_metrics(at) == {k: v for k, (v, _) in engine_metric_values(plan).items()}
    assert list(at.table[0].value.columns)[1:] == ["Stage 0", "Stage 1"]  # one column per pipeline stage


def test_refusal_is_a_warning_with_the_largest_length():
    at = run(PAGE, {"model": LLAMA3, "gpu": "nvidia-rtx-3090", "max_model_len": "200000"})
    assert not at.exception and not at.error
    assert any("would refuse to start" in w.value for w in at.warning)


@pytest.mark.parametrize("params,phrase", [
    ({"engine": "vllm-v9"}, "engine=vllm-v9"),
    ({"pipeline_parallel_size": "0"}, "pipeline_parallel_size=0"),
    ({"available_kv_memory_gib": "lots"}, "available_kv_memory_gib=lots"),
])
def test_bad_link_names_the_parameter_and_the_fix(params, phrase):
    at = run(PAGE, params)
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert phrase in errors and "sidebar" in errors


def test_uneven_stage_split_is_a_clear_error():
    at = run(PAGE, {"num_gpus": "3", "pipeline_parallel_size": "2"})
    assert not at.exception
    assert "cannot be split into 2 pipeline stages" in " ".join(e.value for e in at.error)


def test_pasted_log_is_compared_line_by_line():
    at = run(PAGE, {"engine": "vllm-v0.10", "model": "Qwen/Qwen2.5-7B", "gpu": "nvidia-a100-sxm-80gb",
                    "gpu_memory_utilization": "0.25", "context_len": "16384"})
    at.text_area(key="engine_log").input(V07_LOG).run()
    assert not at.exception and not at.error
    table = reconcile_table(at)
    assert "Available KV cache memory" in list(table["Quantity"])
    assert not any("Log line" in d.value.columns for d in at.dataframe)  # a grid cut the line at 1,280 px (QA)
    replan = at.dataframe[0].value
    pinned = replan[replan["Plan"] == "Engine's own available memory"].iloc[0]
    assert pinned["Available KV per GPU"] == "5.01 GiB"


def test_unknown_log_gets_a_message_not_an_error():
    at = run(PAGE, {})
    at.text_area(key="engine_log").input("hello\nworld").run()
    assert not at.exception and not at.error
    assert any("No engine figures recognised" in w.value for w in at.warning)


def test_home_has_an_engine_selector_and_panel():
    at = run("app.py", {"engine": "sglang"})
    assert not at.exception and not at.error
    assert at.selectbox(key="engine").value == "sglang"
    assert any(c.value.startswith("python -m sglang.launch_server") for c in at.code)
    default = run("app.py", {})
    assert default.selectbox(key="engine").value == "vllm"


def test_pipeline_stages_with_one_gpu_per_replica_add_gpus_like_the_cli():
    # `--pipeline-parallel-size 4` without `--num-gpus` is tensor parallel 1 x 4 stages = 4 GPUs;
    # the page reads 'GPUs per replica' left at 1 the same way.
    at = run(PAGE, {"engine": "vllm", "model": LLAMA3, "gpu": H100, "context_len": "4096",
                    "pipeline_parallel_size": "4"})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    plan = expected("vllm", max_model_len=4096, tensor_parallel_size=1, pipeline_parallel_size=4)
    assert plan.num_gpus == 4
    assert shown_metrics(at) == {k: v for k, (v, _) in engine_metric_values(plan).items()}
    # GPUs per replica above 1 must still be a multiple of the stages.
    at = run(PAGE, {"engine": "vllm", "model": LLAMA3, "gpu": H100, "num_gpus": "3", "pipeline_parallel_size": "2"})
    assert not at.exception
    assert any("cannot be split into 2 pipeline stages" in e.value for e in at.error)


def test_page_names_the_version_it_models_next_to_the_per_rank_chart():
    at = run(PAGE, {"engine": "vllm-v0.10", "model": LLAMA3, "gpu": H100, "context_len": "4096"})
    assert not at.exception and not at.error
    captions = " ".join(c.value for c in at.caption)
    plan = expected("vllm-v0.10", max_model_len=4096)
    assert f"Modelled: {plan.engine_label}. Version modelled: {plan.engine_version}." in captions
    assert plan.engine_version == "vLLM v0.10.x"


def test_nodes_and_enforce_eager_deep_link_reach_the_plan():
    at = run(PAGE, {"engine": "vllm", "model": LLAMA3, "gpu": H100, "num_gpus": "2", "num_nodes": "2",
                    "enforce_eager": "true", "context_len": "4096"})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    plan = expected("vllm", max_model_len=4096, tensor_parallel_size=2, num_nodes=2,
                    distributed_executor_backend="ray", enforce_eager=True)
    assert plan.ranks[0].cudagraph_bytes == 0
    assert shown_metrics(at) == {k: v for k, (v, _) in engine_metric_values(plan).items()}
    assert format_command(plan.launch_command) in [c.value for c in at.code]


def test_engine_spelled_another_way_in_the_link_is_read():
    at = run(PAGE, {"engine": "tensorrt-llm", "model": LLAMA3, "gpu": H100, "context_len": "4096"})
    assert not at.exception and not at.error
    assert at.selectbox(key="engine").value == "trtllm"


def test_serving_features_deep_link_reaches_the_engine_plan():
    # LoRA 8 x rank 64 + EAGLE (3 tokens) on the Engine page: the URL keys are the Home page's
    # (ui/serving.py); the numbers shown are plan_engine's with the same features, through ui.engine.
    from planner.serving import LoRAConfig, ServingFeatures, SpeculativeConfig
    from ui.engine import serving_metric_values

    params = {"model": LLAMA3, "gpu": H100, "context_len": "8192", "enable_lora": "true", "max_loras": "8",
              "max_lora_rank": "64", "speculative_method": "eagle", "num_speculative_tokens": "3"}
    at = run(PAGE, params)
    assert not at.exception
    features = ServingFeatures(engine="vllm", lora=LoRAConfig(max_loras=8, max_lora_rank=64),
                               speculative=SpeculativeConfig(method="eagle", num_speculative_tokens=3))
    plan = expected("vllm", max_model_len=8192, serving=features)
    shown = shown_metrics(at)
    for label, (value, _) in (engine_metric_values(plan) | serving_metric_values(plan)).items():
        assert shown[label] == value, label
    assert "LoRA slots" in shown and "Draft KV cache" in shown
    assert any("--enable-lora --max-loras 8 --max-lora-rank 64" in " ".join(c.value.replace("\\\n", " ").split())
               for c in at.code)  # the command is shown one flag per line


def test_engine_without_the_feature_says_so_on_the_page():
    at = run(PAGE, {"model": LLAMA3, "gpu": H100, "engine": "tgi", "enable_lora": "true"})
    assert not at.exception
    assert any("not modelled for tgi: LoRA adapter slots" in i.value for i in at.info)


def test_per_gpu_table_reads_down_one_column_per_stage():
    # Turned on its side so a dozen terms fit 1,400 px: one row per term, one column per kind of GPU,
    # the same formatted values as the plan's ranks.
    from ui.engine import rank_rows, rank_table

    model = model_spec("meta-llama/Meta-Llama-3.1-70B")
    gpu = get_gpu("nvidia-a100-sxm-80gb")
    plan = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", pipeline_parallel_size=4, max_model_len=8192, gpu_name=gpu.name))
    table, rows = rank_table(plan), rank_rows(plan)
    # stages 1 and 2 (layers only, no embedding or lm_head) have the same figures: one column
    assert list(table[0])[1:] == ["Stage 0", "Stages 1-2", "Stage 3"]
    by_term = {r["Per GPU"]: r for r in table}
    assert by_term["Layers"]["Stage 3"] == "60-79" and by_term["Layers"]["Stages 1-2"] == "20-59, 20 per stage"
    assert [by_term["Weights"][h] for h in ("Stage 0", "Stages 1-2", "Stages 1-2", "Stage 3")] == \
        [r["Weights"] for r in rows]
    assert "Stage" not in by_term and "GPUs" not in by_term


def test_sixteen_pipeline_stages_fit_and_place_dense_and_moe_layers_where_they_are():
    # DeepSeek-V3: dense MLP in layers 0-2, experts in 3-60 (ParamGroup.layers). Stage 0 holds the
    # embedding and the three dense layers only; the 4-layer MoE stages share one column.
    from ui.engine import rank_table

    model = model_spec("deepseek-ai/DeepSeek-V3")
    gpu = get_gpu(H100)
    plan = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", pipeline_parallel_size=16, max_model_len=8192, gpu_name=gpu.name))
    weights = [r.weights_bytes for r in plan.ranks]
    assert weights[0] < 4 * GiB < 40 * GiB < weights[2] == max(weights)  # dense stage vs 4 MoE layers
    heads = list(rank_table(plan)[0])[1:]
    assert len(heads) <= 5 and any(h.startswith("Stages ") for h in heads)


def test_engine_without_the_kv_dtype_offers_the_nearest_in_one_click():
    # llama.cpp has no fp8 cache (its -ctk choices: f32, f16, bf16, q8_0, q4_0...): the page names what it
    # offers and a button switches the sidebar to q8_0, the nearest in size; the plan then runs.
    at = run(PAGE, {"model": LLAMA3, "gpu": H100, "engine": "llama.cpp", "kv_cache_dtype": "fp8"})
    assert not at.exception
    assert any("does not offer KV-cache dtype `fp8`" in e.value and "`q8_0`" in e.value for e in at.error)
    assert not metric_tiles(at)  # stopped: no figures for a combination the engine refuses
    at.button(key="kv_dtype_fix").click().run()
    assert not at.exception and not at.error
    assert at.selectbox(key="kv_cache_dtype").value == "q8_0"
    assert shown_metrics(at)  # the llama.cpp plan with a q8_0 cache


def test_home_engine_panel_offers_the_same_fix_without_stopping_the_page():
    at = run("app.py", {"model": LLAMA3, "gpu": H100, "engine": "llama.cpp", "kv_cache_dtype": "fp8"})
    assert not at.exception
    assert metric_tiles(at)  # Home's own plan still shows
    assert any("does not offer KV-cache dtype `fp8`" in i.value for i in at.info)
    at.button(key="kv_dtype_fix").click().run()
    assert at.selectbox(key="kv_cache_dtype").value == "q8_0" and not at.exception


def test_printed_lines_say_which_stage_they_describe_when_stages_differ():
    from ui.engine import log_note

    model, gpu = model_spec("meta-llama/Meta-Llama-3.1-70B"), get_gpu(H100)
    staged = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", pipeline_parallel_size=4, max_model_len=8192, gpu_name=gpu.name))
    assert len({r.available_kv_cache_bytes for r in staged.ranks}) > 1
    assert "stage 0's here" in log_note(staged)
    single = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=4, max_model_len=8192, gpu_name=gpu.name))
    assert log_note(single) is None


LOG_CHECK = {"engine": "vllm-v0.10", "gpu": "nvidia-a100-sxm-80gb", "gpu_memory_utilization": "0.25",
             "context_len": "16384"}


def test_a_log_that_follows_from_its_own_memory_shows_no_disagreement():
    at = run(PAGE, {**LOG_CHECK, "model": "Qwen/Qwen2.5-7B"})
    at.text_area(key="engine_log").input(V07_LOG).run()
    assert not at.exception
    assert not any("disagrees with itself" in w.value for w in at.warning)
    assert not any("own available memory" in q for q in reconcile_table(at)["Quantity"])


def test_a_log_from_another_model_is_flagged_with_a_row_and_a_note():
    """V07 is a Qwen2-7B-geometry log (28 layers x 4 KV heads x 128 x 2 B x 2 = 57,344 B per token): planned
    as Llama-3-8B (32 x 8 x 128 x 2 x 2 = 131,072 B per token), its printed memory buys about 0.44x the tokens
    it printed, far outside two decimals of GiB."""
    at = run(PAGE, {**LOG_CHECK, "model": "meta-llama/Meta-Llama-3-8B"})
    at.text_area(key="engine_log").input(V07_LOG).run()
    assert not at.exception
    note = next(w.value for w in at.warning if "disagrees with itself" in w.value)
    assert "another" in note and "model" in note
    table = reconcile_table(at)
    row = table[table["Quantity"].str.contains("own available memory")].iloc[0]
    estimate, printed = (float(row[c].replace(",", "")) for c in ("Estimate", "Engine log"))
    assert 0.35 < estimate / printed < 0.55


@pytest.mark.parametrize(("engine", "fragment"), [("vllm", "vllm serve {id} "), ("sglang", "--model-path {id} ")])
def test_engine_page_serves_the_alias_of_the_link(engine, fragment):
    alias = "meta-llama/Llama-3.1-8B-Instruct"
    at = run(PAGE, {"engine": engine, "model": alias, "gpu": H100})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.query_params.get("model") in (alias, [alias])  # one value: a string
    codes = [c.value.replace(" \\\n  ", " ") for c in at.code]  # one flag per line on the page
    assert any(fragment.format(id=alias) in c for c in codes), codes


def test_engine_refusal_offers_fixes_with_numbers_and_one_click_makes_it_start():
    """Issue "One link, one answer" item 5: the refusal carries the same one-click fixes, with the engine's numbers
    (gpt-oss-120b at 131,072 tokens on one A100, where vLLM's Marlin MXFP4 layout leaves too little for one
    request; the figures are plan_engine's for each fix)."""
    from dataclasses import replace

    a100 = "nvidia-a100-sxm-80gb"
    at = run(PAGE, {"engine": "vllm", "model": "openai/gpt-oss-120b", "gpu": a100, "context_len": "131072"})
    assert not at.exception
    assert any("would refuse to start" in w.value for w in at.warning)
    fixes = [b for b in at.button if b.key and b.key.startswith("engine_fix_")]
    assert "GPUs → 2" in [b.label for b in fixes] and "Utilization → 0.95" in [b.label for b in fixes]
    assert all(len(b.label) < 24 for b in fixes)
    gpu, model = get_gpu(a100), model_spec("openai/gpt-oss-120b")
    request = EngineRequest(engine="vllm", gpu_name=gpu.name, max_model_len=131_072)
    two = plan_engine(model, gpu.framework_memory_bytes, replace(request, tensor_parallel_size=2))
    gpus = next(b for b in fixes if b.label == "GPUs → 2")
    assert (f"2 GPUs (tensor parallel 2): starts with {two.max_concurrency:.2f}x concurrency at 131,072 tokens per "
            "request") in gpus.help
    gpus.click().run()
    assert not at.exception
    assert at.success and "vllm starts" in at.success[0].value


def test_engine_page_passes_nvidia_smi_memory_as_the_cli_does():
    """SGLang's mid-2025 release sizes from nvidia-smi's total (``memory_reported_mib``): the Engine page and
    ``plan --engine sglang-v0.4`` give the same available KV for Qwen3-0.6B on an RTX 5080 (case [N22])."""
    import json

    from planner.cli import main as cli_main
    from ui.format import format_bytes

    args = ["plan", "--model", "Qwen/Qwen3-0.6B", "--gpu", "nvidia-rtx-5080", "--engine", "sglang-v0.4",
            "--format", "json"]
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert cli_main(args) == 0
    expected = json.loads(out.getvalue())["engine_plan"]["available_kv_cache_bytes"]
    at = AppTest.from_file(str(ROOT / "pages" / "5_Engine.py"), default_timeout=90)
    for key, value in {"engine": "sglang-v0.4", "model": "Qwen/Qwen3-0.6B", "gpu": "nvidia-rtx-5080"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown["Available KV memory per GPU"] == format_bytes(expected)


def test_cudagraph_mode_and_level_deep_link_reach_the_plan():
    at = run(PAGE, {"engine": "vllm", "model": LLAMA3, "gpu": H100, "context_len": "4096",
                    "cudagraph_mode": "piecewise", "optimization_level": "1"})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert at.selectbox(key="cudagraph_mode").value == "PIECEWISE"
    assert at.selectbox(key="optimization_level").value == "1"
    plan = expected("vllm", max_model_len=4096, cudagraph_mode="PIECEWISE", optimization_level=1)
    assert plan.ranks[0].cudagraph_bytes != expected("vllm", max_model_len=4096).ranks[0].cudagraph_bytes
    assert shown_metrics(at) == {k: v for k, (v, _) in engine_metric_values(plan).items()}
    assert format_command(plan.launch_command) in [c.value for c in at.code]


def test_bad_cudagraph_mode_in_the_link_names_the_parameter():
    at = run(PAGE, {"engine": "vllm", "model": LLAMA3, "gpu": H100, "context_len": "4096", "cudagraph_mode": "FAST"})
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    assert "cudagraph_mode=FAST" in errors and "sidebar" in errors
    assert at.selectbox(key="cudagraph_mode").value is None


@pytest.mark.parametrize("kv, label", [("auto", "fp8_ds_mla"), ("fp8", "fp8_ds_mla"), ("bf16", "bf16")])
def test_engine_header_labels_the_cache_vllm_stores_for_deepseek_v32(kv, label):
    """vLLM stores DeepSeek-V3.2's sparse-MLA layers as fp8_ds_mla for auto and fp8, bf16 only for bf16
    (planner/engines/vllm_kv_formats.py): the header names what the plan stores."""
    gpu = get_gpu("nvidia-h200-sxm")
    plan = plan_engine(model_spec("deepseek-ai/DeepSeek-V3.2"), gpu.framework_memory_bytes,
                       EngineRequest(gpu_name=gpu.name, tensor_parallel_size=8, kv_cache_dtype=kv))
    assert plan.kv_cache_dtype == label
    at = run(PAGE, {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "tensor_parallel_size": "8",
                    "kv_cache_dtype": kv})
    assert not at.exception, at.exception
    assert any(f" · {label} KV cache" in c.value for c in at.caption)


def test_engine_page_enforce_eager_with_a_graph_mode_warns_and_launches_eager():
    at = run(PAGE, {"model": LLAMA3, "gpu": H100, "enforce_eager": "true", "cudagraph_mode": "FULL"})
    assert not at.exception, at.exception
    assert any("--enforce-eager overrides cudagraph_mode FULL" in w.value for w in at.warning)
    commands = [c.value for c in at.code if "vllm serve" in c.value]
    assert commands and all("--enforce-eager" in c and "cudagraph_mode" not in c for c in commands)


def test_a_refused_rank_s_bar_ends_where_its_terms_end():
    """Llama 4 Scout at 131,072 tokens on one MI300X under vLLM: the terms exceed the card, and the chart
    stacked that excess as one more segment, so the bar ran about 16 GiB past the table's total (QA round of
    issue 27). The bar is now Home's HTML bar: the terms stack past the card line, the excess counted once; the tile
    says "none", "35.50 GiB short" under it."""
    from planner.engines.types import EngineRequest
    import re

    from ui.engine import stage_bars_html
    from ui.expected_error import available_kv_delta, available_kv_value
    from ui.format import format_bytes

    gpu = get_gpu("amd-mi300x")
    plan = plan_engine(model_spec("meta-llama/Llama-4-Scout-17B-16E-Instruct"), gpu.framework_memory_bytes,
                       EngineRequest(engine="vllm-v0.28", max_model_len=131072, gpu_name=gpu.name))  # measured: a +-
    rank = plan.ranks[0]
    segments = dict(rank.segments(gpu.framework_memory_bytes))
    excess = segments.pop("Over the card")
    assert not plan.starts and excess > 0
    bar = stage_bars_html(plan, gpu.name)
    drawn = sum(int(n) for n in re.findall(r'data-bytes="(\d+)"', bar))
    assert drawn == sum(v for v in segments.values() if v > 0)  # the used terms only: card + excess, past its line
    assert abs(sum(segments.values()) - gpu.framework_memory_bytes - excess) <= 1
    assert 'data-segment="Over the card"' not in bar  # Home's rule: the excess is not counted a second time
    assert available_kv_value(plan) == "none"  # "none (35.50 GiB short)" was cut in the tile at 1,280 px
    assert available_kv_delta(plan).startswith(f"{format_bytes(-plan.available_kv_cache_bytes)} short (± ")


def test_home_panel_text_of_a_refusal_is_a_shortfall_not_a_negative_figure():
    """Home's engine panel used ``available_kv_text``, which printed "-35.50 GiB ± 0.42" for the refusal the
    Engine tile already calls "none" (review of issue 27's change)."""
    from ui.expected_error import available_kv_text
    from ui.format import format_bytes

    gpu = get_gpu("amd-mi300x")
    plan = plan_engine(model_spec("meta-llama/Llama-4-Scout-17B-16E-Instruct"), gpu.framework_memory_bytes,
                       EngineRequest(engine="vllm", max_model_len=131072, gpu_name=gpu.name))
    text = available_kv_text(plan)
    assert text.startswith(f"none ({format_bytes(-plan.available_kv_cache_bytes)} short") and "-" not in text


def test_serving_parts_are_rows_of_the_term_that_counts_them():
    """QA round: with LoRA, EAGLE-3 and 2 images (Qwen3-VL-8B on an L40S) the per-GPU table listed "LoRA slots",
    "Draft weights", "LoRA / encoder buffers" and "Draft KV cache" as rows beside "Weights", "Activation peak"
    and "Available KV", which already count them: the rows added up to 42.9 GiB on a 40.04 GiB share. Each part
    is now an "of which" row under its term, and the terms add up to the usable memory."""
    link = {"context_len": "16384", "enable_lora": "true", "gpu": "nvidia-l40s", "images_per_request": "2",
            "max_loras": "4", "model": "Qwen/Qwen3-VL-8B-Instruct", "speculative_method": "eagle3"}
    at = run(PAGE, link)
    assert not at.exception
    table = next(t.value for t in at.table if "Per GPU" in t.value.columns)
    terms = [t.lstrip("\u00a0") for t in table["Per GPU"]]  # indented by no-break spaces
    assert all(t.startswith("\u00a0") for t in table["Per GPU"] if "of which" in t)
    parts = [t for t in terms if t.startswith("· of which")]
    assert parts == ["· of which LoRA slots", "· of which draft weights", "· of which LoRA / encoder buffers",
                     "· of which draft KV cache"]
    assert terms.index("· of which LoRA slots") == terms.index("Weights") + 1
    assert terms.index("· of which LoRA / encoder buffers") == terms.index("Activation peak") + 1
    assert terms.index("· of which draft KV cache") == terms.index("Available KV") + 1
    gib = {t: float(v.split()[0]) for t, v in zip(terms, table["Stage 0"]) if str(v).endswith(" GiB")}
    whole = sum(gib[t] for t in ("Weights", "Activation peak", "Non-torch", "CUDA graphs", "Available KV"))
    assert abs(whole - gib["Usable"]) <= 0.03, (whole, gib["Usable"])


def test_usage_context_from_the_link_is_the_cli_s_usage_context(capsys):
    """`usage_context=llm` in a link (case [N11]'s offline LLM class) sizes the launch as `plan --usage-context llm`:
    the page ignored the key and said "starts" where the CLI and vLLM refused (QA)."""
    link = {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-gh200-96gb", "num_gpus": "2",
            "context_len": "30000", "kv_cache_dtype": "fp8", "block_size": "256", "gpu_memory_utilization": "0.95",
            "usage_context": "llm", "available_kv_memory_gib": "5.44"}
    assert main(["plan", "--engine", "vllm", "--model", link["model"], "--gpu", link["gpu"], "--num-gpus", "2",
                 "--max-model-len", "30000", "--kv-cache-dtype", "fp8", "--block-size", "256",
                 "--gpu-memory-utilization", "0.95", "--usage-context", "llm", "--available-kv-memory-gib", "5.44",
                 "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)["engine_plan"]
    assert not cli["starts"]
    at = run(PAGE, link)
    assert not at.exception
    assert at.session_state["usage_context"] == "llm"
    assert any("would refuse" in e.value or "refuse" in e.value for e in (*at.error, *at.warning)), \
        [e.value for e in (*at.error, *at.warning, *at.success)]
    bad = run(PAGE, {"usage_context": "batch"})
    assert any("`usage_context=batch`: unknown start mode" in e.value for e in bad.error)
    assert bad.session_state["usage_context"] == "serve"


def test_the_per_gpu_budget_is_home_s_html_bar_one_per_stage():
    """The Engine page draws each pipeline stage's budget as Home's HTML bar (ui/budget_bar.py segments and palette),
    not a Plotly chart: its rerun redrew a chart the bar shows as well (issue 27 speed)."""
    at = run(PAGE, {"model": LLAMA3, "gpu": H100, "pipeline_parallel_size": "2"})
    assert not at.exception
    assert not at.get("plotly_chart")
    bars = [h.proto.body for h in at.get("html") if 'data-segment="Weights"' in h.proto.body]
    assert len(bars) == 1 and bars[0].count("stage 0: layers 0-15") and bars[0].count("stage 1: layers 16-31")
    assert bars[0].count('data-segment="Weights"') == 2


def test_vllm_v0_rank_table_heads_have_no_nested_parentheses():
    """The V0 engine's driver and its peers get a column each, named "Stage 0, TP rank 0 (driver, samples)"
    (QA: "Stage 0 (TP rank 0 (driver, samples))")."""
    from tests.test_serving_app import run

    at = run("pages/5_Engine.py", {"model": "meta-llama/Meta-Llama-3.1-70B", "gpu": "nvidia-h100-80gb",
                                   "num_gpus": "4", "engine": "vllm-v0"})
    assert not at.exception and not at.error
    heads = [c for t in at.table for c in t.value.columns if c.startswith("Stage")]
    assert heads == ["Stage 0, TP rank 0 (driver, samples)", "Stage 0, TP ranks 1+ (no sampler)"]
