"""vLLM profiles a vision model's encoder by default (QA, issues 25 / 27).

vLLM's ``GPUModelRunner.profile_run`` (vllm/v1/worker/gpu_model_runner.py, and model runner V2's in
vllm/v1/worker/gpu/model_runner.py) encodes a dummy multimodal batch for every model that takes images unless
``skip_mm_profiling`` (default False) is set or every modality is limited to 0; an unstated limit is 999
(vllm/config/multimodal.py ``get_limit_per_prompt``). The item count is bounded by the encoder budget, not the
limit, so a launch without media flags is profiled as ``--limit-mm-per-prompt '{"image": 2}'`` is: the planner's
default must price the same KV memory (Qwen3-VL-8B on an L40S: 21.02 GiB, where it printed 22.28 GiB), with no
image per request in the KV. Expected figures are the planner's own explicit-flag plans, never numbers typed here.
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main
from planner.model.dtypes import BF16
from planner.serving.features import ServingFeatures
from planner.serving.multimodal import launch_flags, multimodal_cost, vision_from_config
from tests.test_serving_multimodal import QWEN3_VL_8B

VL = "Qwen/Qwen3-VL-8B-Instruct"
L40S = "nvidia-l40s"


def _plan(capsys, *argv: str) -> dict:
    assert main(["plan", *argv, "--gpu", L40S, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_default_is_charged_the_encoder_profile_of_an_explicit_limit(capsys):
    default = _plan(capsys, "--engine", "vllm", "--model", VL)
    limited = _plan(capsys, "--engine", "vllm", "--model", VL, "--limit-mm-per-prompt", '{"image": 2}')
    # the engine view and the budget: the same encoder profile (1 dummy image of 16,384 tokens either way)
    assert default["available_kv_cache_bytes"] == limited["available_kv_cache_bytes"]
    assert default["kv_cache_budget_bytes"] == limited["kv_cache_budget_bytes"]
    mm = default["serving"]["multimodal"]
    assert (mm["images_per_request"], mm["tokens_per_request"], mm["encoder_profile_default"]) == (0, 0, True)
    assert mm["encoder_cache_bytes"] == limited["serving"]["multimodal"]["encoder_cache_bytes"] > 0
    # no image in the KV either way: a limit only bounds what a prompt may carry (vllm/config/multimodal.py
    # limit_per_prompt), so the sequence holds only its text, as vLLM's default's does
    assert default["kv_cache_bytes_per_sequence"] == limited["kv_cache_bytes_per_sequence"]
    assert limited["serving"]["multimodal"]["tokens_per_request"] == 0
    # vLLM's default needs no flag; the note says what switches it off
    assert "--limit-mm-per-prompt" not in default["launch_command"] and default["serving"]["launch_flags"] == {}
    assert any("vLLM's default" in n and "--language-model-only" in n for n in default["engine_plan"]["notes"])
    assert "encoder profile (vLLM's default" in default["engine_plan"]["overhead_formula"]


def test_cli_budget_only_plan_charges_it_too(capsys):
    default = _plan(capsys, "--model", VL)
    limited = _plan(capsys, "--model", VL, "--limit-mm-per-prompt", '{"image": 2}')
    assert default["kv_cache_budget_bytes"] == limited["kv_cache_budget_bytes"]


def test_language_model_only_gives_the_text_only_figure(capsys):
    default = _plan(capsys, "--engine", "vllm", "--model", VL)
    text = _plan(capsys, "--engine", "vllm", "--model", VL, "--language-model-only")
    zero = _plan(capsys, "--engine", "vllm", "--model", VL, "--limit-mm-per-prompt", '{"image": 0, "video": 0}')
    assert "serving" not in text and text["available_kv_cache_bytes"] == zero["available_kv_cache_bytes"]
    assert text["available_kv_cache_bytes"] > default["available_kv_cache_bytes"]


def test_a_text_model_is_unchanged_and_sglang_s_engine_view_charges_no_profile(capsys):
    text_model = _plan(capsys, "--engine", "vllm", "--model", "meta-llama/Meta-Llama-3-8B")
    assert "serving" not in text_model and "encoder" not in text_model["engine_plan"]["overhead_formula"]
    sglang = _plan(capsys, "--engine", "sglang", "--model", VL)
    # SGLang runs no encoder profile pass: its engine view charges none; the budget (the newest vLLM's) keeps
    # vLLM's default, as without --engine (planner.serving.features.budget_features; tests/test_sglang_users_agree.py)
    assert "serving" not in sglang["engine_plan"]
    assert sglang["serving"]["multimodal"]["encoder_profile_default"]
    assert sglang["kv_cache_budget_bytes"] == _plan(capsys, "--model", VL)["kv_cache_budget_bytes"]


def test_the_shared_default_only_for_vllm_and_a_vision_config():
    from planner.serving.features import for_engine, with_engine_defaults
    from planner.serving.multimodal import engine_default_media

    vision = vision_from_config(QWEN3_VL_8B)
    added = with_engine_defaults(None, engine="vllm-v0.11", raw_config=QWEN3_VL_8B)
    assert added is not None and added.multimodal == engine_default_media(vision) and not added.asked
    assert with_engine_defaults(None, engine="sglang", raw_config=QWEN3_VL_8B) is None
    assert with_engine_defaults(None, engine="vllm", raw_config=QWEN3_VL_8B, text_only=True) is None
    assert with_engine_defaults(None, engine="vllm", raw_config={"model_type": "llama"}) is None
    # re-engined for another family (Find's engine view), the default profile is left out
    assert for_engine(added, "sglang") is None and for_engine(added, "vllm").engine == "vllm"
    assert launch_flags(added.multimodal, "vllm") == ""
    cost = multimodal_cost(added.multimodal, activation=BF16, num_batched_tokens=8192)
    assert cost.encoder_profile_default and cost.tokens_per_request == 0 and cost.encoder_profile_items == 1


def test_engine_page_matches_the_cli_default(capsys):
    from tests.test_serving_app import metrics, run
    from ui.format import format_bytes

    cli = _plan(capsys, "--engine", "vllm", "--model", VL)["engine_plan"]
    limited = _plan(capsys, "--engine", "vllm", "--model", VL, "--limit-mm-per-prompt", '{"image": 2}')
    at = run("pages/5_Engine.py", {"model": VL, "gpu": L40S})
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = metrics(at)["Available KV memory per GPU"]
    assert shown == format_bytes(cli["available_kv_cache_bytes"]) == format_bytes(limited["available_kv_cache_bytes"])
    assert not any("--limit-mm-per-prompt" in c.value for c in at.code)  # vLLM's default needs no flag
    assert any(s.value == "vLLM's default encoder profile" for s in at.subheader)  # not "features" nobody asked
    assert any("Priced with vLLM's default encoder profile" in c.value for c in at.caption)


@pytest.mark.parametrize("text_only", [False, True])
def test_home_tower_cards_price_the_default_profile_with_the_tower_only(text_only):
    from model_catalog import get_gpu, get_model_entry, model_spec
    from planner.budget import PlanRequest, plan
    from planner.serving.multimodal import engine_default_media
    from planner.serving.multimodal import text_only as drop_towers
    from tests.test_serving_app import metrics, run
    from ui.format import format_int

    params = {"model": VL, "gpu": L40S, "context_len": "4096", **({"language_model_only": "true"} if text_only else {})}
    at = run("app.py", params)
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu, model = get_gpu(L40S), model_spec(VL)
    features = ServingFeatures(multimodal=engine_default_media(vision_from_config(get_model_entry(VL).config)))
    full = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=features), gpu_id=gpu.id)
    text = plan(drop_towers(model), gpu.framework_memory_bytes, PlanRequest(context_len=4096), gpu_id=gpu.id)
    shown = metrics(at)
    assert shown["Users with the tower"] == format_int(full.max_concurrent_sequences)
    assert shown["Users text only"] == format_int(text.max_concurrent_sequences)
    assert all(s.value != "Serving features" for s in at.subheader)  # nothing was asked for


def test_pages_that_count_users_name_the_default_profile():
    """Concurrency counts users with the newest vLLM's budget: the default profile is in them, and its one line
    says so (issue 27: a page names what its counts carry)."""
    from tests.test_serving_app import run

    at = run("pages/3_Concurrency.py", {"model": VL, "gpus": [L40S]})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("vLLM's default encoder profile" in c.value for c in at.caption)
    text = run("pages/3_Concurrency.py", {"model": "meta-llama/Meta-Llama-3.1-8B", "gpus": [L40S]})
    assert not any("encoder profile" in c.value for c in text.caption)


def test_home_serving_panel_keeps_the_default_profile_when_features_are_off():
    """With LoRA slots on a vision model, "was N" is the plan without the asked features: vLLM's default encoder
    profile, which nobody asked for, stays in both figures (it is not the features' cost)."""
    from model_catalog import get_gpu, get_model_entry, model_spec
    from planner.budget import PlanRequest, plan
    from planner.serving import LoRAConfig
    from planner.serving.multimodal import engine_default_media
    from tests.test_serving_app import metrics, run
    from ui.format import format_int

    at = run("app.py", {"model": VL, "gpu": L40S, "context_len": "4096", "enable_lora": "true", "max_loras": "4"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu, model = get_gpu(L40S), model_spec(VL)
    media = engine_default_media(vision_from_config(get_model_entry(VL).config))
    both = ServingFeatures(lora=LoRAConfig(max_loras=4), multimodal=media)
    on = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=both), gpu_id=gpu.id)
    off = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=ServingFeatures(
        multimodal=media)), gpu_id=gpu.id)
    assert metrics(at)["Users at this context"] == (f"{format_int(on.max_concurrent_sequences)} "
                                                    f"(was {format_int(off.max_concurrent_sequences)})")


def test_home_features_off_keeps_the_default_profile_when_images_are_asked():
    """With 2 images per request asked, "features off" is a server without the media flags: no image in any
    sequence, but vLLM's default encoder profile still charged (it was dropped, so "was N" came out too high)."""
    from model_catalog import get_gpu, get_model_entry, model_spec
    from planner.budget import PlanRequest, plan
    from planner.serving.features import features_off
    from planner.serving.multimodal import MultimodalConfig, engine_default_media
    from tests.test_serving_app import metrics, run
    from ui.format import format_int

    at = run("app.py", {"model": VL, "gpu": L40S, "context_len": "4096", "images_per_request": "2"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu, model = get_gpu(L40S), model_spec(VL)
    vision = vision_from_config(get_model_entry(VL).config)
    asked = ServingFeatures(multimodal=MultimodalConfig(vision=vision, images_per_request=2))
    assert features_off(asked) == ServingFeatures(multimodal=engine_default_media(vision))
    on = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=asked), gpu_id=gpu.id)
    off = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, serving=features_off(asked)),
               gpu_id=gpu.id)
    bare = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096), gpu_id=gpu.id)
    assert off.kv_cache_budget_bytes < bare.kv_cache_budget_bytes  # the default profile is a real cost
    assert metrics(at)["Users at this context"] == (f"{format_int(on.max_concurrent_sequences)} "
                                                    f"(was {format_int(off.max_concurrent_sequences)})")
    assert features_off(ServingFeatures(engine="sglang", multimodal=asked.multimodal)) is None
