"""Llama 4 (Scout, Maverick) image inputs, by hand (QA: ``images_per_request`` was ignored on every page and
``plan --images-per-request`` refused Llama 4 Scout although the page counted its 1.62 GiB vision tower).

Sources of every figure:
* the catalog configs' ``vision_config`` (model_catalog/models/meta-llama__Llama-4-Scout-17B-16E-Instruct.json and
  ...Maverick-17B-128E-Instruct.json, verbatim from ai-dynamo/aiconfigurator @ 64c5ddb, the same in both), copied
  into :data:`VISION_CONFIG` below; text ``hidden_size`` 5,120;
* transformers models/llama4/image_processing_llama4_fast.py (``max_patches = 16``, ``find_supported_resolutions``,
  ``get_best_fit``: the smallest upscale >= 1 else the largest downscale, the smallest canvas on a tie) and
  models/llama4/processing_llama4.py (``_prompt_split_image``: ``<|image_start|>``, per tile row the tiles'
  ``<|patch|>`` runs joined by ``<|tile_x_separator|>`` and closed by ``<|tile_y_separator|>`` (only when the
  image has more than one tile), then ``<|image|>`` and the global tile's patches, ``<|image_end|>``);
* vLLM vllm/model_executor/models/mllama4.py (``get_patch_per_chunk``: ``(image_size / patch)^2 //
  round(1 / pixel_shuffle_ratio^2)``; ``get_image_size_with_most_features``: a dummy ``max_patches x image_size``
  tall and ``image_size`` wide; ``patches_per_image``: the tiles plus the global one when there is more than one;
  ``PromptUpdateDetails.select_text(repl, <|patch|>)``: only the patch tokens are embeddings) and
  vllm/multimodal/encoder_budget.py (``get_mm_max_toks_per_item``: a model without ``get_mm_max_tokens_per_item``
  counts its dummy's embeddings; ``_get_max_items``: budget // item tokens).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from model_catalog import get_model_entry, model_spec
from planner.model.dtypes import BF16
from planner.serving.media_tokens import profile_item
from planner.serving.multimodal import MultimodalConfig, multimodal_cost, resized, tokens_per_image, tower_parameters
from planner.serving.multimodal import vision_from_config, vision_tower_groups

SCOUT = "meta-llama/Llama-4-Scout-17B-16E-Instruct"
MAVERICK = "meta-llama/Llama-4-Maverick-17B-128E-Instruct"
H100 = "nvidia-h100-sxm-80gb"
ROOT = Path(__file__).resolve().parents[1]

VISION_CONFIG = {"hidden_size": 1408, "image_size": 336, "intermediate_size": 5632, "model_type": "llama4_vision_model",
                 "num_attention_heads": 16, "num_channels": 3, "num_hidden_layers": 34, "patch_size": 14,
                 "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096,
                 "vision_output_dim": 4096}
"""The vision fields of meta-llama/Llama-4-Scout-17B-16E-Instruct's config.json (module docstring's source)."""

CONFIG = {"model_type": "llama4", "vision_config": VISION_CONFIG, "text_config": {"hidden_size": 5120}}


def test_llama4_vision_fields():
    """336 / 14 = 24 patches a tile side, 576 a tile; pixel shuffle 0.5 keeps 576 x 0.5^2 = 144 tokens a tile
    (vLLM ``get_patch_per_chunk``: 576 // round(1 / 0.25) = 144), so 28 px a token side. The catalog copies of
    Scout and Maverick carry these fields and read the same."""
    for model_id in (SCOUT, MAVERICK):
        stated = get_model_entry(model_id).config
        assert {k: stated["vision_config"][k] for k in VISION_CONFIG} == VISION_CONFIG, model_id
        assert vision_from_config(stated) == vision_from_config(CONFIG), model_id
    v = vision_from_config(CONFIG)
    assert v is not None and (v.family, v.patch_size, v.spatial_merge_size, v.factor, v.image_size) == (
        "llama4", 14, 2, 28, 336)
    assert (v.tokens_per_tile, v.max_tiles, v.out_hidden_size, v.output_width) == (144, 16, 5120, 5120)
    # the largest prompt: 16 tiles of 144 + 16 separators, 144 global, 3 delimiters = 16 x 145 + 147 = 2,467
    assert v.max_tokens_per_image == 2467
    assert not v.takes_video and not v.supports_video


@pytest.mark.parametrize(("size", "canvas", "tokens"), [
    # 1,024 x 1,024: only 4 x 4 tiles (1,344 px) reach 1,024 on both sides (3 x 336 = 1,008 does not): 16 tiles,
    # 1 + 16 x (144 + 1) + 1 + 144 + 1 = 2,467
    ((1024, 1024), (1344, 1344), 2467),
    # 336 x 336: one tile at scale 1, no separators, no second global tile: 1 + 1 + 144 + 1 = 147
    ((336, 336), (336, 336), 147),
    # 500 wide x 300 tall: 1 row x 2 columns scales by min(336 / 300, 672 / 500) = 1.12, the smallest upscale
    # (1 x 3 ... 1 x 16 tie at 1.12 with more area): 1 + 2 x 145 + 1 + 144 + 1 = 437
    ((500, 300), (672, 336), 437),
    # 4,000 x 3,000: no canvas upscales; the largest downscale is 0.336 (3 rows x 4 columns: 1,008 / 3,000 =
    # 1,344 / 4,000), also reached by 3 x 5 and 4 x 4 with more area: 12 tiles, 1 + 12 x 145 + 147 = 1,887
    ((4000, 3000), (1344, 1008), 1887),
])
def test_tokens_per_image_by_hand(size, canvas, tokens):
    v = vision_from_config(CONFIG)
    assert resized(v, *size) == canvas
    assert tokens_per_image(v, *size) == tokens


def test_encoder_profile_by_hand():
    """vLLM's dummy is 336 wide x 16 x 336 = 5,376 tall: only 16 rows x 1 column reach scale 1, so 16 tiles + the
    global = 17 chunks of 144 embeddings = 2,448 (the separators and delimiters are not embeddings), and the
    tower runs 17 x (576 + 1 class token) = 9,809 patches. At 8,192 batched tokens the budget is
    max(8,192, 2,448) = 8,192: 8,192 // 2,448 = 3 dummy images, 3 x 2,448 x 5,120 x 2 B = 75,202,560 B held."""
    v = vision_from_config(CONFIG)
    item = profile_item(v, videos_allowed=True)
    assert (item.modality, item.budget_tokens, item.embeddings, item.patches) == ("image", 2448, 2448, 9809)
    cost = multimodal_cost(MultimodalConfig(vision=v, images_per_request=4), activation=BF16,
                           num_batched_tokens=8192)
    assert (cost.tokens_per_image, cost.tokens_per_request) == (2467, 4 * 2467)
    assert (cost.encoder_budget_tokens, cost.encoder_profile_items, cost.encoder_cache_bytes) == (8192, 3, 75_202_560)


def test_tower_parameters_by_hand():
    """transformers models/llama4/modeling_llama4.py: patch ``linear`` 3 x 14^2 = 588 -> 1,408 (827,904), class
    embedding 1,408, positions 577 x 1,408 = 812,416, ``layernorm_pre`` / ``_post`` 4 x 1,408 = 5,632; per layer
    4 x (1,408^2 + 1,408) = 7,935,488, fc1 1,408 x 5,632 + 5,632 = 7,935,488, fc2 5,632 x 1,408 + 1,408 =
    7,931,264, two LayerNorms 5,632: 23,807,872, x 34 = 809,467,648; adapter 5,632 x 4,096 + 4,096^2 =
    39,845,888; projector 4,096 x 5,120 = 20,971,520. Total 871,932,416 (1.62 GiB in bf16)."""
    total = 827_904 + 1_408 + 812_416 + 5_632 + 809_467_648 + 39_845_888 + 20_971_520
    assert total == 871_932_416
    assert sum(g.total_numel for g in vision_tower_groups(vision_from_config(CONFIG))) == total
    assert tower_parameters(model_spec(SCOUT)) == tower_parameters(model_spec(MAVERICK)) == total


def _cli(*argv: str) -> dict:
    from planner.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--model", SCOUT, "--gpu", H100, "--num-gpus", "4", "--context-len", "32768",
                     "--format", "json", *argv]) == 0
    return json.loads(out.getvalue())


def test_cli_prices_llama4_images():
    images = _cli("--images-per-request", "4")
    mm = images["serving"]["multimodal"]
    assert (mm["images_per_request"], mm["tokens_per_image"]) == (4, 2467)
    assert images["serving"]["extra_tokens_per_sequence"] == 4 * 2467
    default = _cli()  # vLLM's default launch: the encoder profile, no image in a request
    assert images["max_concurrent_sequences"] < default["max_concurrent_sequences"]


def test_home_drops_the_users_with_four_images():
    from streamlit.testing.v1 import AppTest

    from tests.tiles import metric_tiles
    from ui.format import format_int

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in {"model": SCOUT, "gpu": H100, "num_gpus": "4", "context_len": "32768",
                       "images_per_request": "4"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown.get("Image tokens per request") == format_int(4 * 2467)  # QA: the page showed no image tokens
    images, default = _cli("--images-per-request", "4"), _cli()
    assert shown["Max concurrent sequences"] == format_int(images["max_concurrent_sequences"])
    assert images["max_concurrent_sequences"] < default["max_concurrent_sequences"]
