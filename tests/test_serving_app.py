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
from tests.lazy_tabs import open_tab
from ui import data
from ui.format import format_bytes, format_int
from tests.tiles import metric_tiles

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
    return {m.label: m.value for m in metric_tiles(at)}


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
    assert shown["Adapter slots, this batch"] == format_int(lora["max_loras_that_fit"])
    assert shown["KV budget per GPU"] == format_bytes(result.kv_cache_budget_bytes)
    flat = [" ".join(c.value.replace("\\\n", " ").split()) for c in at.code]  # one flag per line on screen
    assert any("--enable-lora --max-loras 8 --max-lora-rank 64" in f for f in flat)


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
    assert shown["Offload host memory"] == format_bytes(result.serving["offload"]["host_bytes_per_gpu"])


def concurrency_row(at: AppTest, gpu) -> list[int]:
    """The Concurrency table's cells for ``gpu``, in context order (the GPU column first, then one column per
    :func:`ui.data.table_contexts` context), from its lazy tab (ui.views.lazy_tabs)."""
    table = open_tab(at, "concurrency_section", "Table by context length").table[0].value  # static
    name = "GPU" if "GPU" in table.columns else "gpu"
    row = table[table[name] == gpu.name].iloc[0]
    return [int(str(v).replace(",", "")) for v in row[[c for c in table.columns if c not in ("GPU", "gpu", "gpu_id")]]]


def test_concurrency_table_follows_the_features():
    at = run("pages/3_Concurrency.py", {"model": LLAMA, "gpus": [L4], **LORA})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu = get_gpu(L4)
    features = ServingFeatures(lora=LoRAConfig(max_loras=8, max_lora_rank=64))
    shown = concurrency_row(at, gpu)
    for i, c in enumerate(data.table_contexts(model_spec(LLAMA))[:4]):
        expected = plan(model_spec(LLAMA), gpu.framework_memory_bytes,
                        PlanRequest(context_len=c, serving=features), gpu_id=gpu.id).max_concurrent_sequences
        assert shown[i] == expected


def test_find_launch_commands_carry_the_flags():
    at = run("pages/7_Find_a_GPU_setup.py", {"model": LLAMA, "users": "8", **LORA})
    assert not at.exception and not at.error, [e.value for e in at.error]
    # shown one flag per line (ui.format.format_command): compare as one line
    assert any(" ".join(c.value.replace("\\\n", " ").split()).endswith("--enable-lora --max-loras 8 --max-lora-rank 64")
               for c in at.code)


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


QWEN3_VL = "Qwen/Qwen3-VL-8B-Instruct"
L40S = "nvidia-l40s"
TOWER_BYTES = 1_152_776_672
"""Qwen3-VL-8B's vision tower in bf16: 576,388,336 parameters x 2 B (counted by hand from its config.json
``vision_config`` in tests/test_serving_multimodal.py), 1.07 GiB."""


def _cli_plan(*argv: str) -> dict:
    """``python -m planner plan --format json`` for Qwen3-VL-8B on an L40S at 4,096 tokens, in process."""
    import contextlib
    import io
    import json

    from planner.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--model", QWEN3_VL, "--gpu", L40S, "--context-len", "4096", "--format", "json",
                     *argv]) == 0
    return json.loads(out.getvalue())


def test_multimodal_home_shows_the_switch_and_the_tower():
    from ui.serving import TEXT_ONLY_LABEL

    at = run("app.py", {"model": QWEN3_VL, "gpu": L40S, "context_len": "4096"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    switch = [t for t in at.toggle if t.label == TEXT_ONLY_LABEL]
    assert len(switch) == 1 and switch[0].value is False
    full, text = _cli_plan(), _cli_plan("--language-model-only")
    assert full["multimodal_towers"] == "vision tower 1.07 GiB"  # 1,152,776,672 / 2^30 = 1.0736
    assert full["weights_bytes"] - text["weights_bytes"] == TOWER_BYTES
    line = f"vision tower 1.07 GiB; text only: {format_bytes(text['weights_bytes'])}"
    assert any(line in m.value for m in at.markdown), [m.value for m in at.markdown]
    shown = metrics(at)
    assert shown["Weights, with the tower"] == format_bytes(full["weights_bytes"])
    assert shown["Weights, text only"] == format_bytes(text["weights_bytes"])
    assert shown["Users with the tower"] == format_int(full["max_concurrent_sequences"])
    assert shown["Users text only"] == format_int(text["max_concurrent_sequences"])
    assert shown["Weights"] == format_bytes(full["weights_bytes"])  # vLLM's default: the tower is loaded


def test_text_only_link_changes_weights_and_users_as_the_cli_does():
    at = run("app.py", {"model": QWEN3_VL, "gpu": L40S, "context_len": "4096", "language_model_only": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    full, text = _cli_plan(), _cli_plan("--language-model-only")
    assert text["max_concurrent_sequences"] > full["max_concurrent_sequences"]  # the tower's 1.07 GiB freed
    shown = metrics(at)
    assert shown["Weights"] == format_bytes(text["weights_bytes"]) != format_bytes(full["weights_bytes"])
    assert shown["Max concurrent sequences"] == format_int(text["max_concurrent_sequences"])
    assert shown["KV budget per GPU"] == format_bytes(text["kv_cache_budget_bytes"])


def test_text_only_link_reaches_concurrency():
    from planner.serving.multimodal import text_only

    at = run("pages/3_Concurrency.py", {"model": QWEN3_VL, "gpus": [L40S], "language_model_only": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu, spec = get_gpu(L40S), model_spec(QWEN3_VL)
    shown = concurrency_row(at, gpu)
    for i, c in enumerate(data.table_contexts(spec)[:3]):
        served = plan(text_only(spec), gpu.framework_memory_bytes, PlanRequest(context_len=c), gpu_id=gpu.id)
        full = plan(spec, gpu.framework_memory_bytes, PlanRequest(context_len=c), gpu_id=gpu.id)
        assert shown[i] == served.max_concurrent_sequences > full.max_concurrent_sequences


def test_text_models_get_no_text_only_switch():
    from ui.serving import TEXT_ONLY_LABEL

    at = run("app.py", {"model": LLAMA, "gpu": L4, "language_model_only": "true"})
    assert not at.exception and not at.error
    assert all(t.label != TEXT_ONLY_LABEL for t in at.toggle)
    assert "Users text only" not in metrics(at)


def test_video_link_prices_the_video_tokens():
    # 16 frames of 448 x 448 on Qwen3-VL: 8 groups x 36 tokens + 8 x 2 delimiters = 304 (planner/serving/
    # multimodal.py docstring's worked example, from transformers video_processing_qwen3_vl.py)
    at = run("app.py", {"model": QWEN3_VL, "gpu": L40S, "context_len": "4096", "videos_per_request": "1",
                        "video_frames": "16"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    cli = _cli_plan("--videos-per-request", "1", "--video-frames", "16")
    assert cli["serving"]["multimodal"]["tokens_per_video"] == 304
    shown = metrics(at)
    assert shown["Tokens per video"] == "304"
    assert shown["Users at this context"].startswith(format_int(cli["max_concurrent_sequences"]) + " ")


@pytest.mark.parametrize("page", ["app.py", "pages/5_Engine.py"])
def test_an_image_limit_alone_prices_no_image_per_request_on_pages_and_cli(page):
    """A bare image limit bounds what a prompt may carry (vllm/config/multimodal.py ``limit_per_prompt``); vLLM
    puts no image into a request, so neither the pages nor the CLI price one (QA, stop 38: Home said 37 users
    for Qwen3-VL-8B on an L40S at 4,096 tokens, `plan --limit-mm-per-prompt '{"image": 2}'` said 29: one image
    of 1,026 tokens in each request)."""
    cli = _cli_plan("--engine", "vllm", "--limit-mm-per-prompt", '{"image": 2}')
    assert cli["serving"]["multimodal"]["images_per_request"] == cli["serving"]["extra_tokens_per_sequence"] == 0
    assert any("only bounds" in n for n in cli["serving"]["notes"])
    default = _cli_plan("--engine", "vllm")  # vLLM's default launch profiles the same encoder, no image either
    assert cli["max_concurrent_sequences"] == default["max_concurrent_sequences"]
    at = run(page, {"model": QWEN3_VL, "gpu": L40S, "context_len": "4096", "limit_mm_per_prompt": "2"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = metrics(at)
    if page == "app.py":
        assert shown["Image tokens per request"] == "0"
        assert shown["Max concurrent sequences"] == format_int(cli["max_concurrent_sequences"])
    else:
        assert shown["Available KV memory per GPU"] == format_bytes(cli["engine_plan"]["available_kv_cache_bytes"])
        assert shown["Max concurrency"] == f"{cli['engine_plan']['max_concurrency']:,.2f}x"


def test_text_only_with_images_says_what_to_change():
    at = run("app.py", {"model": QWEN3_VL, "gpu": L40S, "language_model_only": "true", "images_per_request": "2"})
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "text only" in errors and "sidebar" in errors


NASTY = ("", "-1", "inf", "nan", "1e400", "9" * 40, "abc", "x" * 300)
SERVING_KEYS = ("max_loras", "max_lora_rank", "max_cpu_loras", "num_speculative_tokens", "speculative_method",
                "speculative_model", "kv_offloading_size", "kv_offloading_backend", "host_link_gb_s",
                "images_per_request", "enable_lora", "video_seconds", "language_model_only")


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


def test_concurrency_draws_no_empty_chart():
    """Llama 4 Scout (109B, bf16) on the page's default GPUs holds no sequence anywhere: the chart was empty
    (seen at 1,280 px in the QA round of issue 27); the page says why instead."""
    at = run("pages/3_Concurrency.py", {"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct"})
    assert not at.exception
    assert not at.get("plotly_chart")
    assert any(i.value.startswith("No chart: not one sequence fits") for i in at.info)
    assert run("pages/3_Concurrency.py", {"model": LLAMA, "gpus": [L4]}).get("plotly_chart")


@pytest.mark.parametrize("limit", ["2", '{"image": 2}'])
def test_an_image_limit_alone_charges_the_encoder_profile_as_the_cli_does(capsys, limit):
    """`limit_mm_per_prompt` without images per request: vLLM still profiles the encoder with that many images, as
    `plan --limit-mm-per-prompt '{"image": 2}'` prices it; the page dropped the key unless images were set, and
    refused the CLI's JSON spelling (QA: Qwen3-VL-8B on an L40S, 22.28 GiB on the page, 21.02 in the CLI)."""
    import json  # noqa: PLC0415

    from planner.cli import main  # noqa: PLC0415

    assert main(["plan", "--engine", "vllm", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-l40s",
                 "--limit-mm-per-prompt", '{"image": 2}', "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)["engine_plan"]
    at = run("pages/5_Engine.py", {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-l40s",
                                   "limit_mm_per_prompt": limit})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.query_params["limit_mm_per_prompt"] in ("2", ["2"])
    assert metrics(at)["Available KV memory per GPU"] == format_bytes(cli["available_kv_cache_bytes"])
    assert any("--limit-mm-per-prompt" in c.value for c in at.code)
