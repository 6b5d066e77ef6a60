"""The navigation links carry the plan between single- and multi-model pages (ui/nav.py)."""

from ui.nav import PAGES, carried_params, url_path

QWEN, LLAMA = "Qwen/Qwen2.5-7B", "meta-llama/Meta-Llama-3-8B"


def test_a_single_model_page_puts_its_model_first_in_models():
    out = carried_params({"model": [QWEN], "models": [LLAMA, QWEN], "gpu": ["nvidia-l4"]}, model="one", gpu="one")
    assert out["models"] == [QWEN, LLAMA] and out["model"] == [QWEN]
    assert out["gpus"] == ["nvidia-l4"]


def test_a_multi_model_page_carries_its_first_model_as_model():
    out = carried_params({"models": [LLAMA, QWEN], "gpus": ["nvidia-l4", "nvidia-h100-sxm-80gb"],
                          "model": [QWEN]}, model="many", gpu="many")
    assert out["model"] == [LLAMA] and out["gpu"] == ["nvidia-l4"]
    assert out["models"] == [LLAMA, QWEN]


def test_a_page_without_the_inputs_fills_the_missing_counterpart():
    out = carried_params({"model": [QWEN], "gpus": ["nvidia-l4"]}, model=None, gpu=None)
    assert out["models"] == [QWEN] and out["gpu"] == ["nvidia-l4"]


def test_the_models_list_is_capped():
    out = carried_params({"model": ["m0"], "models": [f"m{i}" for i in range(1, 10)]}, model="one", gpu=None)
    assert out["models"] == ["m0", "m1", "m2", "m3", "m4", "m5"]


def test_page_urls_stay_what_streamlit_derives_from_file_names():
    assert [url_path(p.path) for p in PAGES] == ["", "Memory_curves", "GQA_savings", "Concurrency", "Catalog",
                                                  "Engine", "Allocation", "Find_a_GPU_setup", "Disaggregation"]
    assert PAGES[0].label == "Home"
    assert PAGES[-1].label == "Disaggregation"


# --------------------------------------------------------------------------
# A link carries only what the user set (AppTest: the params every sidebar link of the run carries)
# --------------------------------------------------------------------------
def _carried(query: dict[str, str]) -> dict[str, list[str]]:
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return dict(at.session_state["_nav_carried"])


def test_home_links_carry_no_untouched_default():
    carried = _carried({})
    for key in ("block_size", "context_len", "batch_size", "num_gpus", "gpu_memory_utilization", "overhead_gib",
                "weight_dtype", "kv_cache_dtype", "model", "models", "gpu", "gpus"):
        assert key not in carried, carried


def test_home_links_carry_what_the_url_set():
    carried = _carried({"block_size": "32", "model": QWEN, "context_len": "4096"})
    assert carried["block_size"] == ["32"] and carried["context_len"] == ["4096"]
    assert carried["model"] == [QWEN] and carried["models"] == [QWEN]
    assert "batch_size" not in carried and "gpu" not in carried


def test_disaggregation_links_carry_its_inputs():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "8_Disaggregation.py"),
                           default_timeout=60)
    for key, value in {"users": "512", "data_parallel_size": "8", "enable_expert_parallel": "true",
                       "link": "nvlink4"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    carried = dict(at.session_state["_nav_carried"])
    assert carried["users"] == ["512"] and carried["data_parallel_size"] == ["8"]
    assert carried["enable_expert_parallel"] == ["true"] and carried["link"] == ["nvlink4"]
    assert "ttft_ms" not in carried and "prompt_len" not in carried  # untouched defaults stay on the page


def test_memory_in_use_travels_and_home_s_engine_panel_applies_it():
    """The Engine page's `gpu_memory_in_use_gib` (a GPU shared with other processes) was lost on the first page
    switch, and Home's engine panel said nothing where the Engine page refused (QA: Qwen3-8B on an L40S with 10 GiB
    in use: vLLM's 0.9 x total is more than is free)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    query = {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-l40s", "gpu_memory_in_use_gib": "10", "engine": "vllm"}
    assert _carried(query)["gpu_memory_in_use_gib"] == ["10"]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert any("would refuse to start" in w.value and "in use" in w.value for w in at.warning), \
        [w.value for w in at.warning]
    bad = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    bad.query_params["gpu_memory_in_use_gib"] = "lots"
    bad.run()
    assert not bad.exception
    assert any("gpu_memory_in_use_gib=lots" in e.value for e in (*bad.error, *bad.warning))


def test_the_start_mode_travels_and_home_s_engine_panel_applies_it():
    """`usage_context=llm` (case N11's offline LLM class) was dropped on the way to Home, whose panel then planned
    `vllm serve` (QA)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    query = {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-gh200-96gb", "num_gpus": "2",
             "context_len": "30000", "kv_cache_dtype": "fp8", "block_size": "256", "gpu_memory_utilization": "0.95",
             "usage_context": "llm"}
    assert _carried(query)["usage_context"] == ["llm"]
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    # the LLM class's 16,384 batched tokens: 8.83 GiB available and a close call (2.17 GiB margin); `serve` plans
    # 9.72 GiB and no close call (`plan --usage-context llm` / `serve`, same flags)
    assert any("margin (2.17 GiB)" in w.value for w in at.warning), [w.value for w in at.warning]


def test_the_engine_pages_switches_and_graph_knobs_travel_to_home():
    """The Engine page's switches and CUDA-graph selects (`enforce_eager`, `cudagraph_mode`, ...) were not plan keys:
    a sidebar link from the Engine page to Home dropped them, although Home's engine panel and budget read them."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    knobs = {"enforce_eager": "true", "cudagraph_mode": "NONE", "optimization_level": "1",
             "enable_prefix_caching": "true", "warm_compile_cache": "true", "use_deep_gemm": "true"}
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "5_Engine.py"), default_timeout=60)
    for key, value in {"model": LLAMA, "gpu": "nvidia-h100-sxm-80gb", **knobs}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    carried = dict(at.session_state["_nav_carried"])
    assert {key: carried.get(key) for key in knobs} == {key: [value] for key, value in knobs.items()}
    assert "enforce_eager" not in _carried({"model": LLAMA})  # an untouched switch stays on its page
