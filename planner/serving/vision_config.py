"""The vision fields of a multimodal config.json the planner reads (:class:`VisionConfig`), with their bounds.

Families (``family``), from the wrapper's ``model_type``:

* ``qwen2_vl`` (Qwen2-VL, Qwen2.5-VL) and ``qwen3_vl`` (Qwen3-VL, Qwen3-VL-MoE, Qwen3.5): a patch tower whose
  merger joins ``spatial_merge_size^2`` patches into one token. min_pixels / max_pixels come from the model's
  preprocessor_config.json, which the catalog does not copy; the defaults here are the published ones
  (:data:`PROCESSOR_DEFAULTS`): Qwen2-VL and Qwen2.5-VL 3,136 and 12,845,056 (Qwen/Qwen2.5-VL-7B-Instruct
  preprocessor_config.json); Qwen3-VL and Qwen3.5 ``size.shortest_edge`` 65,536 and ``size.longest_edge``
  16,777,216 (Qwen/Qwen3-VL-8B-Instruct preprocessor_config.json).
* ``gemma3`` (Gemma3ForConditionalGeneration): a SigLIP tower (``vision_config``, a ``siglip_vision_model``)
  on a fixed ``image_size`` square, whose ``(image_size / patch_size)^2`` patch outputs are average-pooled to
  ``mm_tokens_per_image`` tokens (transformers models/gemma3/modeling_gemma3.py ``Gemma3MultiModalProjector``:
  ``kernel_size = patches_per_image // sqrt(mm_tokens_per_image)``; vLLM
  vllm/model_executor/models/gemma3_mm.py the same). Stored here as ``spatial_merge_size`` = that kernel
  (896 / 14 = 64 patches a side, 64 / 16 = 4), so ``factor`` = 56 px and min = max pixels = ``image_size^2``.
  Defaults: transformers ``Gemma3Config.mm_tokens_per_image`` 256 and ``SiglipVisionConfig``.
* ``gemma4`` (Gemma4ForConditionalGeneration): a variable-resolution tower that pools
  ``pooling_kernel_size^2`` patches into one soft token, at most ``vision_soft_tokens_per_image`` (the
  vision config's ``default_output_length``, 280) per image (transformers
  models/gemma4/image_processing_gemma4.py ``max_soft_tokens = 280``, ``pooling_kernel_size = 3``; vLLM
  vllm/model_executor/models/gemma4_mm.py ``get_mm_max_tokens_per_item``). Stored as ``spatial_merge_size`` =
  ``pooling_kernel_size``, so ``factor`` = 48 px and ``max_pixels`` = 280 x 9 x 16^2 = 645,120.

* ``llama4`` (Llama4ForConditionalGeneration: Scout, Maverick): a tiling tower. The processor fits the image
  onto a canvas of up to ``max_patches`` (16) square tiles of ``image_size`` (336) px, each tile a ``(image_size /
  patch_size)^2`` patch grid (576) that the pixel shuffle (``pixel_shuffle_ratio`` 0.5) folds into 576 x 0.5^2 =
  144 tokens; an image of more than one tile adds a global tile of the whole image (transformers
  models/llama4/image_processing_llama4_fast.py ``max_patches = 16``, processing_llama4.py ``_prompt_split_image``;
  vLLM vllm/model_executor/models/mllama4.py ``get_patch_per_chunk``, ``get_max_num_tiles``). Stored as
  ``spatial_merge_size`` = 1 / ``pixel_shuffle_ratio`` (2), so ``factor`` = 28 px; ``max_tiles`` = 16 (the
  processor's default: the catalog does not copy preprocessor_config.json), ``min_pixels`` one tile and
  ``max_pixels`` 16 tiles. Missing fields take transformers' ``Llama4VisionConfig`` defaults
  (models/llama4/configuration_llama4.py); the text width ``Llama4TextConfig.hidden_size`` 5,120.

For the other families ``max_pixels // factor^2`` is the most tokens one image yields (Qwen3-VL 16,384; Gemma 3
256; Gemma 4 280); Llama 4's is its largest tiling's prompt, 16 x (144 + 1) + 144 + 3 = 2,467
(:attr:`VisionConfig.max_tokens_per_image`). The bounds (:data:`VISION_FIELD_LIMITS`) keep a config that
reached the planner another way from building a tower of a billion blocks or dividing by a zero patch; the
catalog checks the same keys with the same bounds (``model_catalog.config_bounds.CONFIG_KEY_RANGES``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

QWEN2_VL_TYPES = frozenset({"qwen2_vl", "qwen2_5_vl"})
QWEN3_VL_TYPES = frozenset({"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_5_vision",
                            "qwen3_5_moe_vision"})
GEMMA_TYPES = frozenset({"gemma3", "gemma4"})
"""Wrapper ``model_type``s whose family is their own name (``llama4`` too, :func:`vision_from_config`)."""

VISION_FAMILIES = ("qwen2_vl", "qwen3_vl", "gemma3", "gemma4", "llama4")

FAMILY_NAMES = {"qwen2_vl": "Qwen2-VL / Qwen2.5-VL", "qwen3_vl": "Qwen3-VL / Qwen3.5", "gemma3": "Gemma 3",
                "gemma4": "Gemma 4", "llama4": "Llama 4"}
"""Family -> the models it covers, for messages."""

VIDEO_FAMILIES = frozenset({"qwen2_vl", "qwen3_vl"})
"""Families whose videos the planner prices (Gemma 3 takes no video; Gemma 4's timestamped frames are not
priced here)."""

VIDEO_MODALITY_FAMILIES = frozenset({"qwen2_vl", "qwen3_vl", "gemma4"})
"""Families whose vLLM model takes a ``video`` modality, so its limit shapes the encoder profile
(``get_supported_mm_limits``: Gemma 3 ``{"image"}`` only, vllm/model_executor/models/gemma3_mm.py; Gemma 4 image
and video, gemma4_mm.py)."""

PROCESSOR_DEFAULTS: dict[str, tuple[int, int]] = {
    "qwen2_vl": (3136, 12_845_056),
    "qwen3_vl": (65_536, 16_777_216),
}
"""Vision family -> (min_pixels, max_pixels) of its published preprocessor_config.json (module docstring)."""

GEMMA3_TOKENS_PER_IMAGE = 256
"""transformers ``Gemma3Config.mm_tokens_per_image`` default (and every published Gemma 3 config)."""

GEMMA4_TOKENS_PER_IMAGE = 280
"""transformers ``Gemma4ImageProcessor.max_soft_tokens`` / the vision config's ``default_output_length``."""

LLAMA4_MAX_TILES = 16
"""transformers ``Llama4ImageProcessorFast.max_patches`` (image_processing_llama4_fast.py), the tiles of one image at
most; vLLM reads the processor's (mllama4.py ``get_max_num_tiles``)."""

LLAMA4_DEFAULTS = {"hidden_size": 768, "num_hidden_layers": 34, "num_attention_heads": 16, "num_channels": 3,
                   "intermediate_size": 5632, "vision_output_dim": 7680, "image_size": 448, "patch_size": 14,
                   "pixel_shuffle_ratio": 0.5, "projector_input_dim": 4096, "projector_output_dim": 4096}
"""transformers ``Llama4VisionConfig`` defaults (models/llama4/configuration_llama4.py), for a ``vision_config``
that omits a field."""

LLAMA4_TEXT_WIDTH = 5120
"""transformers ``Llama4TextConfig.hidden_size`` default."""

SIGLIP_DEFAULTS = {"hidden_size": 768, "intermediate_size": 3072, "num_hidden_layers": 12,
                   "num_attention_heads": 12, "num_channels": 3, "image_size": 224, "patch_size": 16}
"""transformers ``SiglipVisionConfig`` defaults (models/siglip/configuration_siglip.py), for a Gemma 3
``vision_config`` that omits a field."""

MAX_TOWER_LAYERS = 1_024
"""Most vision-tower blocks accepted (``depth``): the text model's layer bound
(``model_catalog.config_bounds.MAX_LAYERS``), 38x Qwen3-VL's 27 and 23x InternViT-6B's 45."""

MAX_TOWER_WIDTH = 262_144
"""Widest tower or merger output accepted [elements] (``hidden_size``, ``out_hidden_size``): the text
model's width bound (``model_catalog.config_bounds.MAX_HIDDEN``); Qwen3-VL: 1,152 and 4,096."""

MAX_TOWER_FFN = 1_048_576
"""Widest tower MLP accepted [elements]: the text model's bound (``model_catalog.config_bounds.MAX_FFN``);
Qwen3-VL: 4,304."""

MAX_TOWER_HEADS = 4_096
"""Most tower attention heads accepted: the text model's bound (``model_catalog.config_bounds.MAX_HEADS``);
Qwen3-VL: 16."""

MAX_TOWER_HEAD_DIM = 4_096
"""Widest tower head accepted [elements]: the text model's bound (``model_catalog.config_bounds.MAX_HEAD_DIM``);
Gemma 4's tower: 72."""

MAX_PATCH_SIZE = 256
"""Largest patch side accepted [pixels]: 8x the largest published (ViT-B/32: 32; Qwen3-VL 16, Qwen2.5-VL 14)."""

MAX_MERGE_SIZE = 64
"""Largest spatial merge, temporal patch, merge-kernel or pooling side accepted [patches or frames]:
published 2 (Qwen-VL, Kimi-K2.5 ``merge_kernel_size [2, 2]``) and 3 (Gemma 4 ``pooling_kernel_size``)."""

MAX_CHANNELS = 1_024
"""Most input channels of a patch or audio front-end accepted: images have 3, audio encoders up to 128 mel bins."""

MAX_VISION_POSITIONS = 1_048_576
"""Largest learned position table side accepted [positions]: 100x the largest published
(Gemma 4 ``position_embedding_size`` 10,240; Qwen3-VL ``num_position_embeddings`` 2,304)."""

MAX_IMAGE_SIZE = 16_384
"""Largest image side a config may state [pixels]: 8x the largest published (MiniMax-M3: 2,016; Gemma 3: 896)."""

MAX_PIXELS = 1 << 28
"""Largest ``min_pixels`` / ``max_pixels`` accepted [pixels] (16,384 x 16,384): 16x Qwen3-VL's 16,777,216."""

MAX_TOKENS_PER_IMAGE = 65_536
"""Most tokens per image a config may state (``mm_tokens_per_image``, ``vision_soft_tokens_per_image``,
``default_output_length``): 4x Qwen3-VL's largest image (16,384) and 58x Gemma 4's largest budget (1,120)."""

VISION_FIELD_LIMITS: dict[str, tuple[int, int]] = {
    "patch_size": (1, MAX_PATCH_SIZE), "spatial_merge_size": (1, MAX_MERGE_SIZE),
    "temporal_patch_size": (1, MAX_MERGE_SIZE), "hidden_size": (1, MAX_TOWER_WIDTH),
    "embed_dim": (1, MAX_TOWER_WIDTH), "depth": (1, MAX_TOWER_LAYERS), "intermediate_size": (1, MAX_TOWER_FFN),
    "num_heads": (1, MAX_TOWER_HEADS), "in_channels": (1, MAX_CHANNELS), "out_hidden_size": (1, MAX_TOWER_WIDTH),
    "num_position_embeddings": (0, MAX_VISION_POSITIONS), "deepstack_visual_indexes": (0, MAX_TOWER_LAYERS),
    "min_pixels": (1, MAX_PIXELS), "max_pixels": (1, MAX_PIXELS),
    "num_hidden_layers": (1, MAX_TOWER_LAYERS), "num_attention_heads": (1, MAX_TOWER_HEADS),
    "num_key_value_heads": (1, MAX_TOWER_HEADS), "head_dim": (1, MAX_TOWER_HEAD_DIM),
    "num_channels": (1, MAX_CHANNELS), "image_size": (1, MAX_IMAGE_SIZE),
    "pooling_kernel_size": (1, MAX_MERGE_SIZE), "position_embedding_size": (1, MAX_VISION_POSITIONS),
    "output_proj_dims": (1, MAX_TOWER_WIDTH), "mm_tokens_per_image": (1, MAX_TOKENS_PER_IMAGE),
    "vision_soft_tokens_per_image": (1, MAX_TOKENS_PER_IMAGE), "default_output_length": (1, MAX_TOKENS_PER_IMAGE),
    "projector_input_dim": (1, MAX_TOWER_WIDTH), "projector_output_dim": (1, MAX_TOWER_WIDTH),
    "vision_output_dim": (1, MAX_TOWER_WIDTH),
}
"""Accepted range of each config field :func:`vision_from_config` reads (inclusive; ``deepstack_visual_indexes``:
its length), under ``vision_config`` except ``mm_tokens_per_image`` / ``vision_soft_tokens_per_image`` (top
level) and the text width."""


def _vision_field(key: str, value: object, where: str = "vision_config.") -> int:
    """``value`` of config key ``<where><key>`` as an int inside :data:`VISION_FIELD_LIMITS`.

    Raises:
        ValueError: not a whole number, or out of range (naming the key and the bound).
    """
    name = f"{where}{key}"
    if value is None:
        raise ValueError(f"config key '{name}' is missing; the vision tower needs it: paste the whole config.json")
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"config key '{name}' is a {type(value).__name__}; expected a whole number")
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except ValueError:
        number = None
    if number is None:
        raise ValueError(f"config key '{name}' is {str(value)[:60]!r}; expected a whole number")
    low, high = VISION_FIELD_LIMITS[key]
    if number > high:
        shown = f"{number:,}" if number < 10**30 else "a number of more than 30 digits"
        raise ValueError(f"config key '{name}' is {shown}; at most {high:,} is accepted (far above "
                         "any published vision tower): fix the value")
    if number < low:
        raise ValueError(f"config key '{name}' is {number:,}; at least {low:,} is accepted: fix the "
                         "value, or leave the key out")
    return number


@dataclass(frozen=True, kw_only=True)
class VisionConfig:
    """The vision fields of a model's config.json (``vision_config``) the planner reads.

    Attributes:
        family: One of :data:`VISION_FAMILIES` (module docstring).
        patch_size, spatial_merge_size, temporal_patch_size: Patch geometry [pixels, patches, frames]
            (Gemma: ``spatial_merge_size`` is the pooling side, ``temporal_patch_size`` 1).
        hidden_size, depth, intermediate_size, num_heads, in_channels: The tower's shape.
        out_hidden_size: Width of one merged token handed to the language model [elements] (Gemma: the text
            model's ``hidden_size``, the projector's output).
        num_position_embeddings: Qwen3-VL's learned position table, Gemma 4's ``position_embedding_size``
            (0 for none).
        deepstack_levels: Qwen3-VL deepstack mergers (``len(deepstack_visual_indexes)``).
        min_pixels, max_pixels: The processor's resize bounds [pixels].
        image_size: Gemma 3's fixed input side [pixels] (0 for the others).
        head_dim, num_kv_heads: Gemma 4's tower heads (0 for the others).
        output_proj_dims: Gemma 4's pooled width before ``embed_vision`` (0 = ``hidden_size``).
        use_head: Gemma 3's SigLIP attention-pooling head (``vision_use_head``).
        max_tiles: Llama 4's tiles per image at most (0 for the others).
        projector_input_dim, projector_output_dim, vision_output_dim: Llama 4's pixel-shuffle adapter MLP widths
            and its projector's input width (0 for the others).
    """

    family: str
    patch_size: int
    spatial_merge_size: int = 2
    temporal_patch_size: int = 2
    hidden_size: int
    depth: int
    intermediate_size: int
    num_heads: int = 16
    in_channels: int = 3
    out_hidden_size: int
    num_position_embeddings: int = 0
    deepstack_levels: int = 0
    min_pixels: int
    max_pixels: int
    image_size: int = 0
    head_dim: int = 0
    num_kv_heads: int = 0
    output_proj_dims: int = 0
    use_head: bool = False
    max_tiles: int = 0
    projector_input_dim: int = 0
    projector_output_dim: int = 0
    vision_output_dim: int = 0

    @property
    def factor(self) -> int:
        """``patch_size x spatial_merge_size``: image sides are multiples of it [pixels]."""
        return self.patch_size * self.spatial_merge_size

    @property
    def output_width(self) -> int:
        """Elements one merged token carries out of the encoder (deepstack levels included)."""
        return self.out_hidden_size * (1 + self.deepstack_levels)

    @property
    def tokens_per_tile(self) -> int:
        """Llama 4: the tokens of one tile, ``(image_size / patch_size)^2 / spatial_merge_size^2`` (144)."""
        return (self.image_size // self.patch_size) ** 2 // self.spatial_merge_size ** 2

    @property
    def max_tokens_per_image(self) -> int:
        """Tokens of the largest image the processor produces (``max_pixels`` worth of patches, merged; Llama 4:
        the prompt of ``max_tiles`` tiles, their separators, the global tile and 3 delimiters, module docstring)."""
        if self.family == "llama4":
            return self.max_tiles * (self.tokens_per_tile + 1) + self.tokens_per_tile + 3
        return self.max_pixels // (self.factor * self.factor)

    @property
    def takes_video(self) -> bool:
        """Whether vLLM's model takes a ``video`` modality (:data:`VIDEO_MODALITY_FAMILIES`)."""
        return self.family in VIDEO_MODALITY_FAMILIES

    @property
    def supports_video(self) -> bool:
        """Whether the planner prices this family's videos (:data:`VIDEO_FAMILIES`)."""
        return self.family in VIDEO_FAMILIES


def _qwen_vision(family: str, vision: Mapping) -> VisionConfig:
    """:class:`VisionConfig` of a Qwen-VL ``vision_config`` (min / max pixels from :data:`PROCESSOR_DEFAULTS`
    unless stated)."""
    low, high = PROCESSOR_DEFAULTS[family]

    def field(key: str, default: object) -> int:
        return _vision_field(key, vision.get(key) or default)

    hidden = field("hidden_size", None) if vision.get("hidden_size") else field("embed_dim", 1280)
    deepstack = (vision.get("deepstack_visual_indexes") or ()) if family == "qwen3_vl" else ()
    if not isinstance(deepstack, (list, tuple)):
        raise ValueError("config key 'vision_config.deepstack_visual_indexes' must be a list of block indices "
                         "such as [8, 16, 24]")
    if len(deepstack) > VISION_FIELD_LIMITS["deepstack_visual_indexes"][1]:
        raise ValueError(f"config key 'vision_config.deepstack_visual_indexes' lists {len(deepstack):,} entries; at "
                         f"most {VISION_FIELD_LIMITS['deepstack_visual_indexes'][1]:,} (one per block) are accepted")
    return VisionConfig(
        family=family, patch_size=field("patch_size", None), spatial_merge_size=field("spatial_merge_size", 2),
        temporal_patch_size=field("temporal_patch_size", 2), hidden_size=hidden, depth=field("depth", 32),
        intermediate_size=field("intermediate_size", 4 * hidden), num_heads=field("num_heads", 16),
        in_channels=field("in_channels", 3), out_hidden_size=field("out_hidden_size", hidden),
        num_position_embeddings=field("num_position_embeddings", 0) if family == "qwen3_vl" else 0,
        deepstack_levels=len(deepstack),
        min_pixels=field("min_pixels", low), max_pixels=field("max_pixels", high))


def _text_width(config: Mapping, default: int | None = None) -> int:
    """The text model's ``hidden_size`` (``text_config.hidden_size``), the Gemma / Llama 4 projectors' output width
    (``default`` where the config states none).

    Raises:
        ValueError: the config states none and there is no default.
    """
    text = config.get("text_config")
    width = text.get("hidden_size") if isinstance(text, Mapping) else None
    width = default if width is None else width
    if width is None:
        raise ValueError("config key 'text_config.hidden_size' is missing; a Gemma 3 / 4 vision config needs the "
                         "text model's width (its projector's output): paste the whole config.json")
    return _vision_field("hidden_size", width, "text_config.")


def _gemma_vision(family: str, config: Mapping, vision: Mapping) -> VisionConfig:
    """:class:`VisionConfig` of a Gemma 3 / Gemma 4 config (module docstring; missing fields take transformers'
    class defaults: ``SiglipVisionConfig`` for Gemma 3, the Gemma 4 image processor's 280 tokens)."""
    defaults = SIGLIP_DEFAULTS if family == "gemma3" else {}

    def field(key: str, default: object = None) -> int:
        value = vision.get(key)
        return _vision_field(key, value if value is not None else defaults.get(key, default))

    patch, hidden = field("patch_size"), field("hidden_size")
    common = dict(family=family, patch_size=patch, temporal_patch_size=1, hidden_size=hidden,
                  depth=field("num_hidden_layers"), intermediate_size=field("intermediate_size"),
                  num_heads=field("num_attention_heads"), in_channels=field("num_channels", 3),
                  out_hidden_size=_text_width(config))
    if family == "gemma3":
        stated = config.get("mm_tokens_per_image")
        tokens = _vision_field("mm_tokens_per_image", GEMMA3_TOKENS_PER_IMAGE if stated is None else stated, "")
        side = field("image_size")
        per_side, pooled = side // patch, math.isqrt(tokens)
        if per_side == 0 or pooled * pooled != tokens or per_side % pooled:
            raise ValueError(f"config keys 'mm_tokens_per_image' ({tokens:,}) and 'vision_config.image_size / "
                             f"patch_size' ({side:,} / {patch:,}) do not pool evenly: Gemma 3 averages a square of "
                             "patches into each token; fix the values")
        return VisionConfig(**common, spatial_merge_size=per_side // pooled, min_pixels=side * side,
                            max_pixels=side * side, image_size=side, use_head=bool(vision.get("vision_use_head")))
    stated = config.get("vision_soft_tokens_per_image")
    key = "vision_soft_tokens_per_image" if stated is not None else "default_output_length"
    where = "" if stated is not None else "vision_config."
    value = stated if stated is not None else vision.get("default_output_length")
    tokens = _vision_field(key, GEMMA4_TOKENS_PER_IMAGE if value is None else value, where)
    pool = field("pooling_kernel_size", 3)
    width = vision.get("output_proj_dims")
    return VisionConfig(
        **common, spatial_merge_size=pool, num_position_embeddings=field("position_embedding_size"),
        min_pixels=(patch * pool) ** 2, max_pixels=tokens * (patch * pool) ** 2, head_dim=field("head_dim"),
        num_kv_heads=field("num_key_value_heads", common["num_heads"]),
        output_proj_dims=0 if width is None else _vision_field("output_proj_dims", width))


def _llama4_vision(config: Mapping, vision: Mapping) -> VisionConfig:
    """:class:`VisionConfig` of a Llama 4 config (module docstring; missing fields take :data:`LLAMA4_DEFAULTS`).

    Raises:
        ValueError: a field out of bounds, a ``pixel_shuffle_ratio`` that is not 1 / a whole number, or a tile
            whose patches do not fold evenly under it.
    """
    def field(key: str) -> int:
        value = vision.get(key)
        return _vision_field(key, LLAMA4_DEFAULTS[key] if value is None else value)

    ratio = vision.get("pixel_shuffle_ratio")
    ratio = LLAMA4_DEFAULTS["pixel_shuffle_ratio"] if ratio is None else ratio
    merge = round(1 / ratio) if isinstance(ratio, (int, float)) and not isinstance(ratio, bool) and ratio > 0 else 0
    patch, side = field("patch_size"), field("image_size")
    if not 1 <= merge <= MAX_MERGE_SIZE or abs(merge * ratio - 1) > 1e-9 or side % patch or (side // patch) % merge:
        raise ValueError(f"config key 'vision_config.pixel_shuffle_ratio' is {str(ratio)[:30]!r} with image_size "
                         f"{side:,} and patch_size {patch:,}: Llama 4 folds each tile's patch grid by 1 / the ratio "
                         "a side, so it must be 1 / a whole number (0.5) that divides image_size / patch_size")
    return VisionConfig(
        family="llama4", patch_size=patch, spatial_merge_size=merge, temporal_patch_size=1,
        hidden_size=field("hidden_size"), depth=field("num_hidden_layers"),
        intermediate_size=field("intermediate_size"),
        num_heads=field("num_attention_heads"), in_channels=field("num_channels"),
        out_hidden_size=_text_width(config, LLAMA4_TEXT_WIDTH), min_pixels=side * side,
        max_pixels=LLAMA4_MAX_TILES * side * side, image_size=side, max_tiles=LLAMA4_MAX_TILES,
        projector_input_dim=field("projector_input_dim"), projector_output_dim=field("projector_output_dim"),
        vision_output_dim=field("vision_output_dim"))


def vision_from_config(config: Mapping) -> VisionConfig | None:
    """The :class:`VisionConfig` of a Qwen-VL, Gemma 3 / 4 or Llama 4 config.json, or None for text-only and other
    families.

    Reads ``vision_config`` and the top-level ``model_type`` (Gemma: also ``text_config.hidden_size`` and
    ``mm_tokens_per_image`` / ``vision_soft_tokens_per_image``); Qwen min / max pixels are the family's
    :data:`PROCESSOR_DEFAULTS` unless the vision config states ``min_pixels`` / ``max_pixels``.

    Raises:
        ValueError: a field that is not a whole number or lies outside :data:`VISION_FIELD_LIMITS` (the message
            names the key and the bound), so no tower of a billion blocks is ever built; a Gemma config without
            its text width, or whose Gemma 3 patches do not pool evenly into its tokens.
    """
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    kind = str(config.get("model_type", "")) or str(vision.get("model_type", ""))
    if kind in GEMMA_TYPES:
        return _gemma_vision(kind, config, vision) if vision.get("patch_size") else None
    if kind == "llama4":
        return _llama4_vision(config, vision) if vision else None
    family = "qwen2_vl" if kind in QWEN2_VL_TYPES else "qwen3_vl" if kind in QWEN3_VL_TYPES else None
    if family is None or not vision.get("patch_size"):
        return None
    return _qwen_vision(family, vision)
