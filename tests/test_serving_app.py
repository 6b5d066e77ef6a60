"""Serving features on the pages (Home, Concurrency, Find), seeded through the URL with AppTest.

Displayed numbers are compared with the planner's output through the same formatting helpers, never
re-derived here. A link without the serving keys draws no serving panel.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.serving import LoRAConfig, ServingFeatures
from planner.serving.offload import OffloadConfig
from planner.serving.speculative import SpeculativeConfig
from ui import data
from ui.format import format_bytes, format_int

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "meta-llama/Meta-Llama-3.1-8B"
L4 = "nvidia-l4"
LORA = {"enable_lora": "true", "max_loras": "8", "max_lora_rank": "64"}


def run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_home_without_serving_keys_has_no_serving_panel():
    at = run("app.py", {"model": LLAMA, "gpu": L4})
    assert not at.exception and not at.error
    assert "Memory per adapter slot" not in metrics(at)
    assert all(s.value != "Serving features" for s in at.subheader)


def test_home_shows_the_lora_slots():
    at = run("app.py", {"model": LLAMA, "gpu": L4, "context_len": "4096", **LORA})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu = get_gpu(L4)
    features = ServingFeatures(lora=LoRAConfig(max_loras=8, max_lora_rank=64))
    result = plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=features),
                  gpu_id=gpu.id)
    plain = plan(model_spec(LLAMA), gpu.framework_memory_bytes, PlanRequest(context_len=4096), gpu_id=gpu.id)
    shown = metrics(at)
    lora = result.serving["lora"]
    assert shown["Memory per adapter slot"] == format_bytes(lora["bytes_per_adapter_slot"], "auto")
    assert shown["Users at this context"] == (f"{format_int(result.max_concurrent_sequences)} "
                                              f"(was {format_int(plain.max_concurrent_sequences)})")
    assert shown["Adapter slots that fit beside the KV"] == format_int(lora["max_loras_that_fit"])
    assert shown["KV budget per GPU"] == format_bytes(result.kv_cache_budget_bytes)
    assert any("--enable-lora --max-loras 8 --max-lora-rank 64" in c.value for c in at.code)


def test_home_shows_mtp_and_offload():
    at = run("app.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": "nvidia-h200-sxm", "num_gpus": "8",
                        "speculative_method": "mtp", "kv_offloading_size": "256"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu = get_gpu("nvidia-h200-sxm")
    features = ServingFeatures(speculative=SpeculativeConfig(method="mtp", num_speculative_tokens=1, num_mtp_layers=1),
                               offload=OffloadConfig(kv_offloading_size=256.0))
    result = plan(model_spec("deepseek-ai/DeepSeek-V3"), gpu.framework_memory_bytes,
                  PlanRequest(context_len=8192, num_gpus=8, serving=features), gpu_id=gpu.id)
    shown = metrics(at)
    assert shown["Drafter weights (mtp)"] == format_bytes(result.serving["speculative"]["draft_weights_bytes_per_gpu"])
    assert shown["Host memory per GPU (offload)"] == format_bytes(result.serving["offload"]["host_bytes_per_gpu"])


def test_concurrency_table_follows_the_features():
    at = run("pages/3_Concurrency.py", {"model": LLAMA, "gpus": [L4], **LORA})
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    gpu = get_gpu(L4)
    features = ServingFeatures(lora=LoRAConfig(max_loras=8, max_lora_rank=64))
    row = table[table["gpu_id"] == L4].iloc[0]
    for c in data.table_contexts(model_spec(LLAMA))[:4]:
        expected = plan(model_spec(LLAMA), gpu.framework_memory_bytes,
                        PlanRequest(context_len=c, serving=features), gpu_id=gpu.id).max_concurrent_sequences
        assert int(row[f"{c} tokens"]) == expected


def test_find_launch_commands_carry_the_flags():
    at = run("pages/7_Find_a_GPU_setup.py", {"model": LLAMA, "users": "8", **LORA})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(c.value.endswith("--enable-lora --max-loras 8 --max-lora-rank 64") for c in at.code)


@pytest.mark.parametrize(("params", "fragment"), [
    ({"enable_lora": "true", "max_loras": "abc"}, "max_loras=abc"),
    ({"speculative_method": "medusa"}, "speculative method"),
    ({"kv_offloading_size": "-5"}, "kv_offloading_size=-5"),
    ({"speculative_method": "mtp"}, "num_nextn_predict_layers"),
])
def test_bad_serving_links_say_what_to_change(params, fragment):
    at = run("app.py", {"model": LLAMA, "gpu": L4, **params})
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert fragment in errors and "sidebar" in errors


NASTY = ("", "-1", "inf", "nan", "1e400", "9" * 40, "abc", "x" * 300)
SERVING_KEYS = ("max_loras", "max_lora_rank", "max_cpu_loras", "num_speculative_tokens", "speculative_method",
                "speculative_model", "kv_offloading_size", "kv_offloading_backend", "host_link_gb_s",
                "images_per_request", "enable_lora")


@pytest.mark.parametrize("key", SERVING_KEYS)
def test_nasty_serving_values_never_break_a_page(key):
    """The link fuzzing of tests/test_fuzz_urls.py, for the serving keys: a clear answer, never a traceback."""
    for value in NASTY[::3] if key != "max_loras" else NASTY:
        at = run("app.py", {"model": LLAMA, "gpu": L4, "enable_lora": "true", "speculative_method": "eagle",
                            key: value})
        assert not at.exception, (key, value, [e.value for e in at.exception])
        assert at.title, "the page still answers"
        for error in at.error:
            assert "sidebar" in error.value or "link" in error.value.lower(), error.value
