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
                                                  "Engine", "Allocation", "Find_a_GPU_setup"]
    assert PAGES[0].label == "Home"
