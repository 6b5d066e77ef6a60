"""Gemma 3 / Gemma 4 image inputs (planner.serving.multimodal and its split modules), by hand.

Sources of every figure:
* the catalog configs (model_catalog/models/google__gemma-3-27b-it.json: ``mm_tokens_per_image`` 256, SigLIP patch
  14 on 896 px, text hidden 5,376; google__gemma-4-26B-A4B.json: ``vision_soft_tokens_per_image`` 280, patch 16,
  ``pooling_kernel_size`` 3, ``position_embedding_size`` 10,240, vision hidden 1,152 / intermediate 4,304, text
  hidden 2,816);
* transformers models/gemma3/processing_gemma3.py (``full_image_sequence``: "\\n\\n", <boi>, 256 image tokens,
  <eoi>, "\\n\\n") and models/gemma4/image_processing_gemma4.py (``get_aspect_ratio_preserving_size``);
* vLLM vllm/model_executor/models/gemma4_mm.py (``_compute_num_soft_tokens``, ``get_mm_max_tokens_per_item``: a
  video counts 32 x (70 + 2 + 6) = 2,496 tokens, dummies of 224 px, ``_encoder_chunk``), vllm/multimodal/
  encoder_budget.py (``_get_max_items``: budget // item tokens) and vllm/v1/core/encoder_cache_manager.py.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_model_entry, model_spec
from planner.model.dtypes import BF16
from planner.serving.media_tokens import gemma4_soft_tokens, profile_item
from planner.serving.multimodal import (
    MultimodalConfig,
    encoder_chunk_budget,
    launch_flags,
    multimodal_cost,
    resized,
    tokens_per_image,
    tower_parameters,
    vision_from_config,
    vision_tower_groups,
)
from tests.tiles import metric_tiles

GEMMA3 = "google/gemma-3-27b-it"
GEMMA4 = "google/gemma-4-26B-A4B"
GEMMA4_31B = "nvidia/Gemma-4-31B-IT-NVFP4"


def vision(model_id: str):
    return vision_from_config(get_model_entry(model_id).config)


def test_gemma_vision_fields_from_the_catalog_configs():
    g3, g4 = vision(GEMMA3), vision(GEMMA4)
    # Gemma 3: 896 / 14 = 64 patches a side, pooled to sqrt(256) = 16: a 4 x 4 kernel, 56 px per token side
    assert (g3.family, g3.spatial_merge_size, g3.factor, g3.max_tokens_per_image, g3.out_hidden_size) == (
        "gemma3", 4, 56, 256, 5376)
    # Gemma 4: 16 px patches pooled 3 x 3: 48 px per token side; 280 x 9 x 16^2 = 645,120 px at most
    assert (g4.family, g4.factor, g4.max_pixels, g4.max_tokens_per_image, g4.out_hidden_size) == (
        "gemma4", 48, 645_120, 280, 2816)
    assert not g3.takes_video and g4.takes_video and not g4.supports_video
    assert vision_from_config(get_model_entry("google/gemma-3-4b-it").config) is None  # text-only extraction


@pytest.mark.parametrize(("size", "tokens"), [((1024, 1024), 260), ((3000, 200), 260), ((10, 10), 260)])
def test_gemma3_every_image_is_260_tokens(size, tokens):
    # full_image_sequence: "\n\n" <boi> 256 x <image> <eoi> "\n\n"; every image is resized to 896 x 896
    assert tokens_per_image(vision(GEMMA3), *size) == tokens
    assert resized(vision(GEMMA3), *size) == (896, 896)


@pytest.mark.parametrize(("size", "resized_to", "soft"), [
    ((1024, 1024), (768, 768), 256),   # scale sqrt(2,520 / 4,096): 803.2 px -> 16 x 48; 48 x 48 / 9
    ((1920, 1080), (1056, 576), 264),  # scale sqrt(2,520 / 8,100) = 0.558: 22 x 48 by 12 x 48; 66 x 36 / 9
    ((100, 100), (768, 768), 256),     # small images are scaled up to the budget
    ((3, 900), (48, 13_872), 280),     # vLLM's clamp: 867 x 3 patches / 9 = 289 -> 280
])
def test_gemma4_tokens_per_image_by_hand(size, resized_to, soft):
    v = vision(GEMMA4)
    assert resized(v, *size) == resized_to
    assert gemma4_soft_tokens(v, *size) == soft
    assert tokens_per_image(v, *size) == soft + 2  # <boi> and <eoi>


def test_gemma4_dummy_items():
    v = vision(GEMMA4)
    # 224 px dummy frame at a 70-token budget: scale sqrt(630 / 196): 401.6 px -> 8 x 48 = 384; 24 x 24 / 9 = 64
    video = profile_item(v, videos_allowed=True)
    assert (video.modality, video.budget_tokens, video.embeddings, video.patches, video.frames) == (
        "video", 2496, 32 * 64, 32 * 630, 32)
    image = profile_item(v, videos_allowed=False)
    assert (image.modality, image.budget_tokens, image.embeddings, image.patches) == ("image", 280, 256, 2520)


def test_encoder_cache_of_the_dummy_batch():
    # Gemma 3 27B at 8,192 batched tokens: 8,192 // 256 = 32 images, 32 x 256 outputs of the text width 5,376
    g3 = multimodal_cost(MultimodalConfig(vision=vision(GEMMA3), images_per_request=2), activation=BF16,
                         num_batched_tokens=8192)
    assert (g3.encoder_budget_tokens, g3.encoder_profile_items, g3.encoder_profile_modality) == (8192, 32, "image")
    assert g3.encoder_cache_bytes == 32 * 256 * 5376 * 2 == 88_080_384
    assert g3.vision_forward_bytes == 32 * 4096 * (3 * 1152 + 4304) * 2  # 4,096 patches an image
    assert g3.tokens_per_request == 2 * 260
    # Gemma 4 26B: videos allowed (no video limit), so 8,192 // 2,496 = 3 dummy videos of 32 x 64 outputs
    g4 = multimodal_cost(MultimodalConfig(vision=vision(GEMMA4), images_per_request=2), activation=BF16,
                         num_batched_tokens=8192)
    assert (g4.encoder_profile_items, g4.encoder_profile_modality) == (3, "video")
    assert g4.encoder_cache_bytes == 3 * 2048 * 2816 * 2 == 34_603_008
    # '{"image": 2, "video": 0}': 8,192 // 280 = 29 dummy images of 256 outputs
    images_only = multimodal_cost(MultimodalConfig(vision=vision(GEMMA4), images_per_request=2,
                                                   limit_videos_per_prompt=0), activation=BF16, num_batched_tokens=8192)
    assert (images_only.encoder_profile_items, images_only.encoder_cache_bytes) == (29, 29 * 256 * 2816 * 2)
    off = multimodal_cost(MultimodalConfig(vision=vision(GEMMA3), images_per_request=0, limit_mm_per_prompt=0),
                          activation=BF16, num_batched_tokens=8192)
    assert off.encoder_cache_bytes == off.vision_forward_bytes == 0  # Gemma 3 takes images only


def test_gemma4_position_one_hot_in_vllms_chunks():
    # A frame has 630 patch slots; its one-hot is 630 x 2 x 10,240 int64 + its bf16 cast = 129,024,000 B, and
    # vLLM's cost per frame is 630 x 4 x 10,240 x 8 = 206,438,400 B. A 2 GiB budget: 10 frames per chunk; the 96
    # frames' hidden states (96 x 630 x 1,152 x 2 B) stay for pooling.
    assert encoder_chunk_budget(80 << 30, 30 << 30) == 8 << 30  # min(free / 2, total / 10)
    assert encoder_chunk_budget(80 << 30, 10 << 30) == 5 << 30
    config = MultimodalConfig(vision=vision(GEMMA4), images_per_request=1)
    cost = multimodal_cost(config, activation=BF16, num_batched_tokens=8192, encoder_chunk_budget_bytes=2 << 30)
    assert cost.vision_forward_bytes == 10 * 129_024_000 + 96 * 630 * 1152 * 2
    unbounded = multimodal_cost(config, activation=BF16, num_batched_tokens=8192)
    assert unbounded.vision_forward_bytes == 96 * 129_024_000 + 96 * 630 * 1152 * 2


def test_gemma_towers_built_from_the_vision_fields_match_the_catalog_spec():
    for model_id in (GEMMA3, GEMMA4, GEMMA4_31B):
        groups = vision_tower_groups(vision(model_id))
        assert sum(g.total_numel for g in groups) == tower_parameters(model_spec(model_id)), model_id


def test_launch_flags_name_only_the_modalities_the_model_takes():
    limits = dict(images_per_request=2, limit_mm_per_prompt=2, limit_videos_per_prompt=0)
    assert launch_flags(MultimodalConfig(vision=vision(GEMMA3), **limits), "vllm") == ('--limit-mm-per-prompt '
                                                                                      '\'{"image": 2}\'')
    assert launch_flags(MultimodalConfig(vision=vision(GEMMA4), **limits),
                        "vllm") == '--limit-mm-per-prompt \'{"image": 2, "video": 0}\''


def _plan(capsys, model_id: str, *argv: str) -> dict:
    from planner.cli import main

    assert main(["plan", "--model", model_id, "--gpu", "nvidia-h100-sxm", "--context-len", "8192", "--format", "json",
                 *argv]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("model_id", [GEMMA3, GEMMA4, GEMMA4_31B, "nvidia/Gemma-4-26B-A4B-NVFP4"])
def test_cli_accepts_images_for_every_catalog_gemma_with_a_tower(capsys, model_id):
    out = _plan(capsys, model_id, "--images-per-request", "2", "--limit-mm-per-prompt", '{"image": 2}',
                "--engine", "vllm")
    mm = out["serving"]["multimodal"]
    assert mm["tokens_per_request"] == 2 * (260 if model_id == GEMMA3 else 258)
    assert out["serving"]["extra_tokens_per_sequence"] == mm["tokens_per_request"]
    assert out["engine_plan"]["serving"]["multimodal"]["tokens_per_request"] == mm["tokens_per_request"]


def test_cli_gemma3_image_limit_zero_is_text_only(capsys):
    full = _plan(capsys, GEMMA3)
    text = _plan(capsys, GEMMA3, "--limit-mm-per-prompt", '{"image": 0}')
    assert full["text_only"] is False and text["text_only"] is True
    assert full["weights_bytes"] - text["weights_bytes"] == full["multimodal_weight_bytes"]
    gemma4 = _plan(capsys, GEMMA4, "--limit-mm-per-prompt", '{"image": 0}')
    assert gemma4["text_only"] is False  # Gemma 4 also takes video: its tower stays


@pytest.mark.parametrize(("model_id", "argv", "match"), [
    (GEMMA3, ("--videos-per-request", "1"), "Gemma 3 videos are not priced"),
    ("google/gemma-3-4b-it", ("--images-per-request", "1"), "google/gemma-3-27b-it"),
])
def test_cli_refusals_say_what_to_do(capsys, model_id, argv, match):
    from planner.cli import main

    assert main(["plan", "--model", model_id, "--gpu", "nvidia-h100-sxm", *argv]) == 2
    assert match in capsys.readouterr().err


def test_home_link_with_gemma3_images_shows_the_cli_figures():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from ui.format import format_int

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    for key, value in {"model": GEMMA3, "gpu": "nvidia-h100-sxm", "context_len": "8192",
                       "images_per_request": "2"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown["Image tokens per request"] == format_int(520)
    assert "video_frames" not in {n.key for n in at.number_input}  # Gemma 3 takes no video


WHY_VIDEO = "vLLM profiles every modality the model accepts unless --limit-mm-per-prompt limits it"


def test_gemma4_images_only_says_why_its_encoder_profile_runs_videos(capsys):
    """QA: Gemma 4 with 4 images a request read "3 dummy videos encoded ... the largest video's 2,496" with no
    word on why. vLLM does profile a video there (vllm/config/multimodal.py: the unstated video limit is 999;
    vllm/multimodal/encoder_budget.py: the modality with the most tokens per item is encoded), so the figure stays
    and a note says why, with the flag that profiles images; the CLI prints the planner's note."""
    asked = MultimodalConfig(vision=vision(GEMMA4), images_per_request=4)
    cost = multimodal_cost(asked, activation=BF16, num_batched_tokens=8192)
    assert cost.encoder_profile_modality == "video"
    why = [n for n in cost.notes if WHY_VIDEO in n]
    assert len(why) == 1 and "video's 2,496 over an image's 280" in why[0]
    assert """'{"image": 4, "video": 0}'""" in why[0]
    images = multimodal_cost(MultimodalConfig(vision=vision(GEMMA4), images_per_request=4, limit_videos_per_prompt=0),
                             activation=BF16, num_batched_tokens=8192)
    assert images.encoder_profile_modality == "image" and not any(WHY_VIDEO in n for n in images.notes)
    videos = multimodal_cost(MultimodalConfig(vision=vision(GEMMA3), images_per_request=4), activation=BF16,
                             num_batched_tokens=8192)
    assert not any(WHY_VIDEO in n for n in videos.notes)  # Gemma 3 takes no video
    from planner.cli import main

    assert main(["plan", "--model", GEMMA4, "--gpu", "nvidia-h100-sxm-80gb", "--context-len", "16384",
                 "--batch-size", "16", "--images-per-request", "4"]) == 0
    out = capsys.readouterr().out
    assert "3 dummy videos encoded" in out and f"note: {why[0]}" in out
