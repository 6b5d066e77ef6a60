"""Multimodal inputs (planner.serving.multimodal): image tokens, encoder cache and vision tower by hand.

Vision fields: Qwen/Qwen3-VL-8B-Instruct config.json ``vision_config`` (patch 16, merge 2, temporal 2,
hidden 1,152, depth 27, intermediate 4,304, out_hidden 4,096, 2,304 position embeddings, deepstack at
layers 8, 16, 24) and the Qwen2.5-VL-7B-Instruct one (patch 14, hidden 1,280, depth 32, intermediate
3,420, out_hidden 3,584). Resize rule: transformers ``smart_resize`` (models/qwen2_vl/
image_processing_qwen2_vl.py); encoder budget: vLLM ``compute_encoder_budget``.
"""

from __future__ import annotations

import pytest

from planner.budget import PlanRequest, plan
from planner.model.dtypes import BF16
from planner.serving import ServingFeatures
from planner.serving.multimodal import (
    MultimodalConfig,
    launch_flags,
    multimodal_cost,
    resized,
    tokens_per_image,
    vision_from_config,
    vision_tower_groups,
)
from planner.units import GiB
from tests.factories import dense_model

QWEN3_VL_8B = {"model_type": "qwen3_vl", "vision_config": {
    "deepstack_visual_indexes": [8, 16, 24], "depth": 27, "hidden_size": 1152, "in_channels": 3,
    "intermediate_size": 4304, "model_type": "qwen3_vl", "num_heads": 16, "num_position_embeddings": 2304,
    "out_hidden_size": 4096, "patch_size": 16, "spatial_merge_size": 2, "temporal_patch_size": 2}}
QWEN25_VL_7B = {"model_type": "qwen2_5_vl", "vision_config": {
    "depth": 32, "hidden_size": 1280, "intermediate_size": 3420, "num_heads": 16, "in_chans": 3,
    "out_hidden_size": 3584, "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}}


def test_vision_fields_and_processor_defaults():
    v = vision_from_config(QWEN3_VL_8B)
    assert (v.family, v.factor, v.min_pixels, v.max_pixels, v.deepstack_levels) == ("qwen3_vl", 32, 65_536,
                                                                                      16_777_216, 3)
    assert vision_from_config(QWEN25_VL_7B).factor == 28
    assert vision_from_config({"model_type": "llama"}) is None


@pytest.mark.parametrize(("config", "size", "tokens"), [
    (QWEN3_VL_8B, (1024, 1024), 64 * 64 // 4 + 2),      # 1,024 is a multiple of 32: 1,026
    (QWEN25_VL_7B, (1024, 1024), 74 * 74 // 4 + 2),     # round(1,024 / 28) = 37 -> 1,036 px: 1,371
    (QWEN25_VL_7B, (112, 112), 8 * 8 // 4 + 2),         # 18
    (QWEN3_VL_8B, (128, 128), 16 * 16 // 4 + 2),        # 16,384 px < 65,536: x 2 -> 256 px: 66
    (QWEN3_VL_8B, (8000, 8000), 256 * 256 // 4 + 2),    # 64 M px > 16,777,216: / 1.953125 -> 4,096 px: 16,386
])
def test_tokens_per_image_by_hand(config, size, tokens):
    assert tokens_per_image(vision_from_config(config), *size) == tokens


def test_resize_keeps_the_bounds():
    v = vision_from_config(QWEN3_VL_8B)
    assert resized(v, 8000, 8000) == (4096, 4096)
    assert resized(v, 128, 128) == (256, 256)
    with pytest.raises(ValueError, match="at least 1 pixel"):
        resized(v, 0, 10)


def test_qwen3_vl_tower_parameters_by_hand():
    # patch embed 1,152 x (3 x 2 x 16 x 16) + 1,152 = 1,770,624; positions 2,304 x 1,152 = 2,654,208;
    # per block: 2 LayerNorms 4,608 + qkv 1,152 x 3,456 + 3,456 + proj 1,152^2 + 1,152 + fc1 1,152 x 4,304 + 4,304
    # + fc2 4,304 x 1,152 + 1,152 = 15,239,504, x 27 = 411,466,608; merger LayerNorm(1,152) 2,304 + fc1 4,608^2
    # + 4,608 + fc2 4,608 x 4,096 + 4,096 = 40,119,040; 3 deepstack mergers (LayerNorm over 4,608) 3 x 40,125,952.
    groups = vision_tower_groups(vision_from_config(QWEN3_VL_8B))
    assert sum(g.total_numel for g in groups) == 1_770_624 + 2_654_208 + 411_466_608 + 40_119_040 + 120_377_856


def test_encoder_cache_is_the_budget_times_the_output_width():
    # Largest image: 16,777,216 / 32^2 = 16,384 tokens > 8,192 batched tokens. Output width 4,096 x (1 + 3).
    config = MultimodalConfig(vision=vision_from_config(QWEN3_VL_8B), images_per_request=2)
    cost = multimodal_cost(config, activation=BF16, num_batched_tokens=8192)
    assert cost.encoder_budget_tokens == 16_384
    assert cost.encoder_cache_bytes == 16_384 * 16_384 * 2 == 512 * 1024 * 1024
    assert cost.tokens_per_request == 2 * 1026
    assert cost.vision_weights_bytes == 2 * cost.vision_params
    off = multimodal_cost(MultimodalConfig(vision=config.vision, images_per_request=0, limit_mm_per_prompt=0,
                                           limit_videos_per_prompt=0), activation=BF16, num_batched_tokens=8192)
    assert off.encoder_cache_bytes == 0 and off.tokens_per_request == 0
    # image 0 alone leaves video at vLLM's 999 (get_limit_per_prompt), so the encoder is still profiled
    videos_on = multimodal_cost(MultimodalConfig(vision=config.vision, images_per_request=0, limit_mm_per_prompt=0),
                                activation=BF16, num_batched_tokens=8192)
    assert videos_on.encoder_cache_bytes == 512 * 1024 * 1024


@pytest.mark.parametrize(("config", "match"), [
    (dict(images_per_request=-1), "per request must be >= 0"),
    (dict(image_width=0), "image sides"),
    (dict(images_per_request=3, limit_mm_per_prompt=2), "exceed --limit-mm-per-prompt"),
])
def test_bad_settings_say_what_to_change(config, match):
    with pytest.raises(ValueError, match=match):
        MultimodalConfig(vision=vision_from_config(QWEN3_VL_8B), **config).validate()


def test_launch_flags():
    config = MultimodalConfig(vision=vision_from_config(QWEN3_VL_8B), images_per_request=2)
    assert launch_flags(config, "vllm") == '--limit-mm-per-prompt \'{"image": 2}\''
    assert launch_flags(config, "sglang") == ""


def test_plan_adds_image_tokens_tower_and_encoder_cache():
    # The factory model: 16,384 B per token. 1,024 text + 2,052 image tokens = 3,076 -> 193 blocks = 3,088 slots.
    model = dense_model()
    mm = MultimodalConfig(vision=vision_from_config(QWEN3_VL_8B), images_per_request=2)
    request = PlanRequest(context_len=1024, max_num_batched_tokens=8192)
    plain = plan(model, 24 * GiB, request)
    result = plan(model, 24 * GiB, PlanRequest(context_len=1024, max_num_batched_tokens=8192,
                                               serving=ServingFeatures(multimodal=mm)))
    cost = multimodal_cost(mm, activation=BF16, num_batched_tokens=8192)
    assert result.kv_cache_bytes_needed == 3088 * 16_384
    # the tower is part of a multimodal catalog spec (families_multimodal), so the feature adds no weights
    assert result.weights_bytes_per_gpu == plain.weights_bytes_per_gpu
    lm_peak = plain.activation_bytes + plain.logits_bytes
    assert result.overhead_bytes == plain.overhead_bytes + cost.encoder_cache_bytes + max(
        0, cost.vision_forward_bytes - lm_peak)
    block = result.to_dict()["serving"]["multimodal"]
    assert block["tokens_per_image"] == 1026 and block["encoder_budget_tokens"] == 16_384


# --- towers in the catalog specs (model_catalog/families_multimodal.py), worked from the reference configs ---


@pytest.mark.parametrize(("model_id", "tower", "projector"), [
    # Qwen3-VL-8B: the by-hand sum of test_qwen3_vl_tower_parameters_by_hand (merger and deepstack included).
    ("Qwen/Qwen3-VL-8B-Instruct", 1_770_624 + 2_654_208 + 411_466_608 + 40_119_040 + 120_377_856, 0),
    # Gemma 4 26B-A4B vision_config: h 1,152, intermediate 4,304, 27 layers, 16 heads x 72, position table 10,240,
    # patch 16. position 2 x 10,240 x 1,152 = 23,592,960; input_proj 1,152 x 768 = 884,736; per layer q/k/v/o
    # 4 x 1,152^2 + q/k norms 2 x 72 + gated MLP 3 x 1,152 x 4,304 + 4 norms x 1,152 = 20,187,792, x 27 =
    # 545,070,384. embed_vision: text hidden 2,816 x 1,152 = 3,244,032.
    ("google/gemma-4-26B-A4B", 23_592_960 + 884_736 + 27 * 20_187_792, 2816 * 1152),
    # Kimi-K2.5 (MoonViT) vision_config: vt_hidden 1,152, vt_intermediate 4,304, 27 layers, patch 14, 64 x 64
    # positions. Conv2d 1,152 x 3 x 14 x 14 + 1,152 = 678,528; positions 4,718,592; per layer 2 LayerNorms 4,608 +
    # q/k/v/proj 4 x (1,152^2 + 1,152) + fc1 1,152 x 4,304 + 4,304 + fc2 4,304 x 1,152 + 1,152 = 15,239,504;
    # final LayerNorm 2,304. mm_projector: LayerNorm 2,304 + in_proj 4,608^2 + 4,608 + out_proj 4,608 x 7,168 + 7,168.
    ("moonshotai/Kimi-K2.5", 678_528 + 4_718_592 + 27 * 15_239_504 + 2_304,
     2_304 + 4608 * 4608 + 4608 + 4608 * 7168 + 7168),
    # MiniMax-M3 vision_config: h 1,280, intermediate 5,120, 32 layers, patch 14, temporal 2. Conv3d 1,280 x 3 x 2
    # x 14 x 14 = 1,505,280; pre_layrnorm 2,560; per layer q/k/v/out 4 x (1,280^2 + 1,280) + 2 LayerNorms 5,120 +
    # fc1 1,280 x 5,120 + 5,120 + fc2 5,120 x 1,280 + 1,280 = 19,677,440. Projector (projector_hidden_size 6,144,
    # text hidden 6,144, merged 4 x 6,144): 1,280 x 6,144 + 6,144 + 2 x (6,144^2 + 6,144) + 24,576 x 6,144 + 6,144.
    ("nvidia/MiniMax-M3-NVFP4", 1_505_280 + 2_560 + 32 * 19_677_440,
     1280 * 6144 + 6144 + 2 * (6144 * 6144 + 6144) + 24576 * 6144 + 6144),
    # Gemma 3 27B vision_config (SigLIP): h 1,152, intermediate 4,304, 27 layers, patch 14, image 896. Conv2d
    # 1,152 x 3 x 14 x 14 + 1,152 = 678,528; positions (896 / 14)^2 = 4,096 x 1,152 = 4,718,592; per layer the
    # same 15,239,504 as MoonViT's (biased q/k/v/out, two LayerNorms, fc1 / fc2); post_layernorm 2,304; no head
    # (vision_use_head false). Projector: mm_input_projection_weight 1,152 x 5,376 + RMSNorm 1,152.
    ("google/gemma-3-27b-it", 678_528 + 4_718_592 + 27 * 15_239_504 + 2_304, 1152 * 5376 + 1152),
    # Llama 4 vision_config: h 1,408, intermediate 5,632, 34 layers, patch 14, image 336. Unfold linear 3 x 14 x 14
    # x 1,408 = 827,904; class_embedding 1,408; positions ((336 / 14)^2 + 1) x 1,408 = 812,416; layernorm_pre /
    # _post 4 x 1,408; per layer q/k/v/o 4 x (1,408^2 + 1,408) + fc1 1,408 x 5,632 + 5,632 + fc2 5,632 x 1,408 +
    # 1,408 + 2 LayerNorms 4 x 1,408 = 23,807,872; vision_adapter fc1 5,632 x 4,096 + fc2 4,096^2. Projector
    # linear_1 4,096 x 5,120. The per-module table printed for meta-llama/Llama-4-Scout-17B-16E lists the same
    # 827,904 / 812,416 / 1,982,464 (q_proj) / 7,929,856 (fc1) / 23,068,672 / 16,777,216 / 20,971,520.
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct",
     827_904 + 1_408 + 812_416 + 5_632 + 34 * 23_807_872 + 5632 * 4096 + 4096 * 4096, 4096 * 5120),
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct",
     827_904 + 1_408 + 812_416 + 5_632 + 34 * 23_807_872 + 5632 * 4096 + 4096 * 4096, 4096 * 5120),
])
def test_catalog_towers_by_hand(model_id, tower, projector):
    from model_catalog import model_spec
    from planner.serving.multimodal import text_only, tower_parameters

    spec = model_spec(model_id)
    assert tower_parameters(spec) == tower + projector
    assert spec.num_parameters == text_only(spec).num_parameters + tower + projector
    assert tower_parameters(text_only(spec)) == 0


def test_text_models_carry_no_tower():
    from model_catalog import model_spec
    from planner.serving.multimodal import is_multimodal, text_only

    spec = model_spec("meta-llama/Meta-Llama-3-8B")
    assert not is_multimodal(spec) and text_only(spec) is spec


def test_tokens_per_video_by_hand():
    from planner.serving.multimodal import resized_video, tokens_per_video, video_frames

    v = vision_from_config(QWEN3_VL_8B)
    # 16 x 448 x 448 = 3,211,264 px > 786,432 (768 x 32 x 32): beta = sqrt(3,211,264 / 786,432) = 2.0207,
    # floor(448 / 2.0207 / 32) = 6 -> 192 px; 8 groups x (12 x 12 / 4 = 36) + 8 x 2 delimiters = 304.
    assert resized_video(v, 16, 448, 448) == (192, 192)
    assert tokens_per_video(v, 16, 448, 448) == 8 * 36 + 16 == 304
    # 4 frames of 224 x 224: 4 x 224^2 = 200,704 in [131,072, 786,432]; 224 = 7 x 32 -> 14 x 14 / 4 = 49 per
    # group, 2 groups: 98 + 4 = 102. 5 frames pad to 6 (3 groups); t rounds to 4 for the bound: 3 x 49 + 6 = 153.
    assert tokens_per_video(v, 4, 224, 224) == 102
    assert tokens_per_video(v, 5, 224, 224) == 153
    # Qwen2.5-VL: per frame within [100,352, 602,112]; 448 = 16 x 28 stays, 200,704 px -> 32 x 32 / 4 = 256 per
    # group, 8 groups + one pair of delimiters = 2,050.
    assert tokens_per_video(vision_from_config(QWEN25_VL_7B), 16, 448, 448) == 8 * 256 + 2
    # seconds x 2 fps, clamped to [4, 768]
    assert (video_frames(10), video_frames(1), video_frames(1000)) == (20, 4, 768)
    with pytest.raises(ValueError, match="at least 2 frames"):
        tokens_per_video(v, 1, 448, 448)


def test_video_limit_and_launch_flags():
    v = vision_from_config(QWEN3_VL_8B)
    with pytest.raises(ValueError, match="video limit 1"):
        MultimodalConfig(vision=v, images_per_request=0, videos_per_request=2, limit_videos_per_prompt=1).validate()
    config = MultimodalConfig(vision=v, images_per_request=0, videos_per_request=1)
    # no limit stated: the flag bounds the videos a request carries and leaves images at vLLM's 999 (an
    # "image": 0 here would refuse every image, which nobody asked)
    assert launch_flags(config, "vllm") == '--limit-mm-per-prompt \'{"video": 1}\''
    cost = multimodal_cost(config, activation=BF16, num_batched_tokens=8192)
    assert cost.tokens_per_request == cost.tokens_per_video == 304


@pytest.mark.parametrize(("limits", "flag"), [
    (dict(limit_videos_per_prompt=0), '{"video": 0}'),
    (dict(limit_mm_per_prompt=3), '{"image": 3}'),
    (dict(limit_mm_per_prompt=3, videos_per_request=1), '{"image": 3}'),
    (dict(limit_mm_per_prompt=2, limit_videos_per_prompt=1, videos_per_request=1), '{"image": 2, "video": 1}'),
])
def test_a_stated_limit_is_carried_as_stated(limits, flag):
    """vLLM gives every modality its ``--limit-mm-per-prompt`` leaves out 999 items (vllm/config/multimodal.py
    ``MultiModalConfig.get_limit_per_prompt``): the command carries the limits the user stated and no other
    (QA, stop 38: ``{"video": 0}`` was written ``{"image": 1, "video": 0}``)."""
    config = MultimodalConfig(vision=vision_from_config(QWEN3_VL_8B), **{"images_per_request": 0, **limits})
    assert launch_flags(config, "vllm") == f"--limit-mm-per-prompt '{flag}'"


def test_cli_video_limit_alone_writes_no_image_limit(capsys):
    out = _plan_json(capsys, "--engine", "vllm", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--limit-mm-per-prompt",
                     '{"video": 0}')
    assert out["launch_command"].endswith("--limit-mm-per-prompt '{\"video\": 0}'")
    assert out["serving"]["launch_flags"]["vllm"] == "--limit-mm-per-prompt '{\"video\": 0}'"


def _plan_json(capsys, *argv):
    import json

    from planner.cli import main

    assert main(["plan", *argv, "--gpu", "nvidia-l40s", "--context-len", "4096", "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_counts_the_tower_by_default_and_drops_it_text_only(capsys):
    full = _plan_json(capsys, "--model", "Qwen/Qwen3-VL-8B-Instruct")
    text = _plan_json(capsys, "--model", "Qwen/Qwen3-VL-8B-Instruct", "--limit-mm-per-prompt",
                      '{"image": 0, "video": 0}')
    same = _plan_json(capsys, "--model", "Qwen/Qwen3-VL-8B-Instruct", "--language-model-only")
    # 576,388,336 tower parameters in bf16 = 1,152,776,672 B (1.07 GiB), on top of the text model
    assert full["multimodal_params"] == 576_388_336 and full["multimodal_weight_bytes"] == 1_152_776_672
    assert full["text_only"] is False and text["text_only"] is True and full["multimodal_towers"] == "vision tower 1.07 GiB"
    assert full["weights_bytes"] - text["weights_bytes"] == 1_152_776_672
    assert full["params"] == full["text_params"] + 576_388_336 and text["params"] == full["text_params"]
    assert full["params_source"] == "exact" and full["params_expected_error"] is None
    assert {k: v for k, v in same.items()} == text
    assert full["max_concurrent_sequences"] < text["max_concurrent_sequences"]


def test_cli_video_flags(capsys):
    out = _plan_json(capsys, "--model", "Qwen/Qwen3-VL-8B-Instruct", "--videos-per-request", "1", "--video-frames",
                     "16", "--video-width", "448", "--video-height", "448")
    mm = out["serving"]["multimodal"]
    assert (mm["videos_per_request"], mm["tokens_per_video"], mm["images_per_request"]) == (1, 304, 0)
    assert out["serving"]["extra_tokens_per_sequence"] == 304


def test_cli_text_model_json_has_no_multimodal_keys(capsys):
    out = _plan_json(capsys, "--model", "meta-llama/Meta-Llama-3-8B")
    assert not {"text_only", "multimodal_weight_bytes", "params_source"} & set(out)


def test_cli_generic_config_is_labelled_an_estimate(capsys, tmp_path):
    import json

    from model_catalog.generic import PARAMS_EXPECTED_ERROR

    # olmo2: a type transformers knows but the catalog has no adapter for (the generic path)
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "olmo2", "hidden_size": 2048, "num_hidden_layers": 16,
                                "num_attention_heads": 16, "num_key_value_heads": 16, "intermediate_size": 8192,
                                "vocab_size": 100352, "max_position_embeddings": 4096}))
    out = _plan_json(capsys, "--config", str(path))
    assert out["params_source"] == "estimate" and out["params_expected_error"] == PARAMS_EXPECTED_ERROR
    family = tmp_path / "llama.json"
    family.write_text(json.dumps({"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
                                  "num_attention_heads": 16, "num_key_value_heads": 8, "intermediate_size": 8192,
                                  "vocab_size": 32000}))
    assert _plan_json(capsys, "--config", str(family))["params_source"] == "exact"


def test_text_only_switch_refuses_media_flags(capsys):
    from planner.cli import main

    assert main(["plan", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-l40s", "--language-model-only",
                 "--images-per-request", "1"]) == 2
    assert "text only" in capsys.readouterr().err
