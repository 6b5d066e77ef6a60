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
    off = multimodal_cost(MultimodalConfig(vision=config.vision, images_per_request=0, limit_mm_per_prompt=0),
                          activation=BF16, num_batched_tokens=8192)
    assert off.encoder_cache_bytes == 0 and off.tokens_per_request == 0


@pytest.mark.parametrize(("config", "match"), [
    (dict(images_per_request=-1), "images_per_request"),
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
    assert result.weights_bytes_per_gpu == plain.weights_bytes_per_gpu + cost.vision_weights_bytes
    lm_peak = plain.activation_bytes + plain.logits_bytes
    assert result.overhead_bytes == plain.overhead_bytes + cost.encoder_cache_bytes + max(
        0, cost.vision_forward_bytes - lm_peak)
    block = result.to_dict()["serving"]["multimodal"]
    assert block["tokens_per_image"] == 1026 and block["encoder_budget_tokens"] == 16_384
