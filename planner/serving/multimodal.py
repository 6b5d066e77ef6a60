"""Multimodal inputs: the image and video tokens a request puts into the KV cache, the encoder cache vLLM
profiles, and the vision tower a multimodal catalog spec carries beside its language model.

Tokens per image (Qwen2-VL / Qwen2.5-VL / Qwen3-VL / Qwen3.5 processors, ``smart_resize`` in
transformers models/qwen2_vl/image_processing_qwen2_vl.py, which the Qwen3-VL processor reuses):

    factor = patch_size x spatial_merge_size                  (14 x 2 = 28; Qwen3-VL 16 x 2 = 32)
    h, w   = height and width rounded to multiples of factor (at least one factor), then, if h x w
             leaves [min_pixels, max_pixels], rescaled by sqrt of the ratio (floor to fit under the
             maximum, ceil to reach the minimum) and rounded to factor again
    tokens = (h / patch) x (w / patch) / spatial_merge_size^2, + 2 for <|vision_start|> and
             <|vision_end|> around the image's pad tokens (the Qwen chat templates)

Worked example: 1,024 x 1,024 on Qwen3-VL (factor 32): 1,024 is a multiple of 32 and 1,048,576 px
lies in [65,536, 16,777,216], so 64 x 64 patches / 4 = 1,024 tokens + 2 = 1,026 per image; two images
add 2,052 tokens to the prompt. On Qwen2.5-VL (factor 28): round(1,024 / 28) = 37, 1,036 x 1,036 px,
74 x 74 / 4 = 1,369 tokens + 2 = 1,371.

min_pixels / max_pixels come from the model's preprocessor_config.json, which the catalog does not
copy; the defaults here are the published ones (:data:`PROCESSOR_DEFAULTS`): Qwen2-VL and Qwen2.5-VL
3,136 and 12,845,056 (Qwen/Qwen2.5-VL-7B-Instruct preprocessor_config.json); Qwen3-VL and Qwen3.5
``size.shortest_edge`` 65,536 and ``size.longest_edge`` 16,777,216 (Qwen/Qwen3-VL-8B-Instruct
preprocessor_config.json).

The profile pass (vLLM V1): ``compute_encoder_budget`` (vllm/v1/core/encoder_cache_manager.py) sets the
encoder cache to ``max(max_num_batched_tokens, the largest item's tokens)`` tokens when
``--limit-mm-per-prompt`` allows the modality (0 switches the encoder profile off), and
``GPUModelRunner.profile_run`` (vllm/v1/worker/gpu_model_runner.py) encodes that many dummy items of
the largest size and keeps their outputs while it profiles the language model. So the KV budget loses

    encoder cache bytes  = budget tokens x encoder output width x activation bytes
                           (output width = out_hidden_size x (1 + deepstack levels) for Qwen3-VL,
                            vllm/model_executor/models/qwen3_vl.py)
    + max(0, vision forward peak - language-model activation peak)
    vision forward peak ~ patches x activation bytes x (3 x hidden + intermediate)   (an estimate)

The vision tower (transformers Qwen2_5_VisionTransformerPretrainedModel,
models/qwen2_5_vl/modeling_qwen2_5_vl.py; Qwen3VLVisionModel, models/qwen3_vl/modeling_qwen3_vl.py) is part
of the catalog spec (:mod:`model_catalog.families_multimodal` adds every family's tower groups, names under
:data:`TOWER_PREFIXES`), because vLLM loads it unless every modality it serves is limited to 0
(``--limit-mm-per-prompt '{"image": 0, "video": 0}'``, vllm/model_executor/models/qwen3_vl.py: ``self.visual
= None`` only then). :func:`text_only` is the spec such a server holds; :func:`tower_weight_bytes` the share
the towers take. It is split over tensor-parallel GPUs like vLLM's default ``mm_encoder_tp_mode="weights"``,
in the activation dtype (quantized checkpoints leave the tower unquantized). SGLang and llama.cpp
(``--mmproj``) put the same tokens into the KV cache; their encoder memory is not profiled this way, so only
the tokens are priced for them.

Tokens per video (:func:`tokens_per_video`). Frames: ``--video-frames`` as given, or ``--video-seconds x fps``
with fps 2, clamped to [4, 768] frames (``Qwen3VLVideoProcessor.sample_frames``: ``fps = 2``, ``min_frames =
4``, ``max_frames = 768``, transformers models/qwen3_vl/video_processing_qwen3_vl.py); an odd count is padded
to a multiple of ``temporal_patch_size`` (``patchify``). Frame size:

    Qwen3-VL / Qwen3.5: one smart_resize over the whole clip: h x w rounded to factor 32, then, if
        t x h x w leaves [131,072, 786,432] pixels (``size`` 128 x 32 x 32 / 768 x 32 x 32; t = frames
        rounded to 2), rescaled by sqrt as for images (video_processing_qwen3_vl.py ``smart_resize``,
        ``cap_pixels_per_frame`` off, its 5.24 default)
    Qwen2-VL / 2.5-VL: each frame like an image within [100,352, 602,112] pixels (``size`` 128 x 28 x 28 /
        768 x 28 x 28, video_processing_qwen2_vl.py)

    groups = frames / temporal_patch_size
    tokens = groups x (h / patch) x (w / patch) / merge^2 + delimiters
    delimiters: Qwen3-VL 2 per group (``<|vision_start|>`` ... ``<|vision_end|>`` around every group,
        processing_qwen3_vl.py ``replace_video_token``); Qwen2-VL 2 per video (processing_qwen2_vl.py)

Worked example: 1 video of 16 frames at 448 x 448 on Qwen3-VL-8B: 448 is a multiple of 32, but 16 x 448 x
448 = 3,211,264 px > 786,432, so beta = sqrt(3,211,264 / 786,432) = 2.021 and each side becomes
floor(448 / 2.021 / 32) x 32 = 192; 8 groups x (12 x 12 / 4 = 36) = 288 tokens + 8 x 2 delimiters = **304
tokens**. Qwen3-VL also writes a ``<t seconds>`` timestamp in text before each group (a few text tokens,
tokenizer-dependent), which is not counted.

The video processors' defaults are used because the repositories' video_preprocessor_config.json files are
not among the references.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from planner.model.dtypes import StorageFormat
from planner.model.memo import memoized
from planner.model.params import ParamGroup, weight_bytes

if TYPE_CHECKING:
    from planner.model.spec import ModelSpec

QWEN2_VL_TYPES = frozenset({"qwen2_vl", "qwen2_5_vl"})
QWEN3_VL_TYPES = frozenset({"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_5_vision",
                            "qwen3_5_moe_vision"})

PROCESSOR_DEFAULTS: dict[str, tuple[int, int]] = {
    "qwen2_vl": (3136, 12_845_056),
    "qwen3_vl": (65_536, 16_777_216),
}
"""Vision family -> (min_pixels, max_pixels) of its published preprocessor_config.json (module docstring)."""

VIDEO_DEFAULTS: dict[str, tuple[int, int]] = {
    "qwen2_vl": (128 * 28 * 28, 768 * 28 * 28),
    "qwen3_vl": (128 * 32 * 32, 768 * 32 * 32),
}
"""Vision family -> the video processor's ``size`` (shortest_edge, longest_edge) [pixels] (module docstring):
per frame for Qwen2-VL, over the whole clip for Qwen3-VL."""

VIDEO_FPS = 2
VIDEO_MIN_FRAMES = 4
VIDEO_MAX_FRAMES = 768
"""``Qwen3VLVideoProcessor`` frame sampling defaults (fps, min_frames, max_frames)."""

DELIMITER_TOKENS = 2
"""<|vision_start|> and <|vision_end|> around each image's pad tokens (Qwen chat templates)."""

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

VISION_FIELD_LIMITS: dict[str, tuple[int, int]] = {
    "patch_size": (1, MAX_PATCH_SIZE), "spatial_merge_size": (1, MAX_MERGE_SIZE),
    "temporal_patch_size": (1, MAX_MERGE_SIZE), "hidden_size": (1, MAX_TOWER_WIDTH),
    "embed_dim": (1, MAX_TOWER_WIDTH), "depth": (1, MAX_TOWER_LAYERS), "intermediate_size": (1, MAX_TOWER_FFN),
    "num_heads": (1, MAX_TOWER_HEADS), "in_channels": (1, MAX_CHANNELS), "out_hidden_size": (1, MAX_TOWER_WIDTH),
    "num_position_embeddings": (0, MAX_VISION_POSITIONS), "deepstack_visual_indexes": (0, MAX_TOWER_LAYERS),
    "min_pixels": (1, MAX_PIXELS), "max_pixels": (1, MAX_PIXELS),
}
"""Accepted range of each ``vision_config`` field :func:`vision_from_config` reads (inclusive;
``deepstack_visual_indexes``: its length). The catalog checks the same keys with the same bounds when a config
is read (``model_catalog.config_bounds.CONFIG_KEY_RANGES``); these keep a config that reached the planner another way
from building a tower of a billion blocks or dividing by a zero patch."""


def _vision_field(key: str, value: object) -> int:
    """``value`` of ``vision_config.<key>`` as an int inside :data:`VISION_FIELD_LIMITS`.

    Raises:
        ValueError: not a whole number, or out of range (naming the key and the bound).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"config key 'vision_config.{key}' is a {type(value).__name__}; expected a whole number")
    try:
        number = int(value) if not isinstance(value, float) or value.is_integer() else None
    except ValueError:
        number = None
    if number is None:
        raise ValueError(f"config key 'vision_config.{key}' is {str(value)[:60]!r}; expected a whole number")
    low, high = VISION_FIELD_LIMITS[key]
    if number > high:
        shown = f"{number:,}" if number < 10**30 else "a number of more than 30 digits"
        raise ValueError(f"config key 'vision_config.{key}' is {shown}; at most {high:,} is accepted (far above "
                         "any published vision tower): fix the value")
    if number < low:
        raise ValueError(f"config key 'vision_config.{key}' is {number:,}; at least {low:,} is accepted: fix the "
                         "value, or leave the key out")
    return number


TOWER_PREFIXES: tuple[str, ...] = ("visual.", "vision_tower.", "vision_model.", "embed_vision.", "mm_projector.",
                                   "multi_modal_projector.", "audio_tower.", "embed_audio.")
"""Parameter-group name prefixes of vision / audio towers and projectors (the transformers module names
under ``model.`` of each ``*ForConditionalGeneration``); everything else is the language model."""


def tower_linear(name: str, fan_in: int, fan_out: int, *, bias: bool = False, count: int = 1) -> list[ParamGroup]:
    """One tower ``nn.Linear`` (``fan_in`` -> ``fan_out``) as parameter groups: weight ``(out, in)`` of kind
    ``other`` (activation dtype, split over tensor-parallel GPUs) and, with ``bias``, its bias."""
    out = [ParamGroup(name=f"{name}.weight", shape=(fan_out, fan_in), count=count, kind="other")]
    if bias:
        out.append(ParamGroup(name=f"{name}.bias", shape=(fan_out,), count=count, kind="bias"))
    return out


def tower_norm(name: str, dim: int, *, bias: bool = False, count: int = 1) -> list[ParamGroup]:
    """One tower norm: ``weight`` (and ``bias`` for a LayerNorm) of ``dim``, replicated on every GPU."""
    out = [ParamGroup(name=f"{name}.weight", shape=(dim,), count=count, kind="norm")]
    if bias:
        out.append(ParamGroup(name=f"{name}.bias", shape=(dim,), count=count, kind="norm"))
    return out


def is_tower_group(group: ParamGroup) -> bool:
    """True for a vision / audio tower or projector tensor (:data:`TOWER_PREFIXES`)."""
    return group.name.startswith(TOWER_PREFIXES)


def tower_groups_of(model: ModelSpec) -> tuple[ParamGroup, ...]:
    """The model's tower and projector groups (empty for a text model)."""
    return memoized(model, ("tower_groups",), lambda: tuple(g for g in model.params if is_tower_group(g)))


def is_multimodal(model: ModelSpec) -> bool:
    """True when the spec carries tower or projector weights."""
    return bool(tower_groups_of(model))


def text_only(model: ModelSpec) -> ModelSpec:
    """The spec a text-only server holds: ``model`` without its towers and projectors (``model`` itself for a
    text model). vLLM builds no tower when every modality it serves is limited to 0 (module docstring).
    Memoized per object, so repeated plans of the same text-only model share one spec."""
    if not is_multimodal(model):
        return model
    return memoized(model, ("text_only",), lambda: replace(
        model, params=tuple(g for g in model.params if not is_tower_group(g))))


def tower_parameters(model: ModelSpec) -> int:
    """Parameters of the model's towers and projectors."""
    return sum(g.total_numel for g in tower_groups_of(model))


def tower_weight_bytes(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1) -> int:
    """Bytes the towers and projectors take on one of ``tensor_parallel_size`` GPUs [bytes]
    (:func:`planner.model.params.weight_bytes` over their groups, in the format the plan gives them)."""
    return weight_bytes(tower_groups_of(model), weight_format, model.torch_dtype, tensor_parallel_size)


def tower_summary(model: ModelSpec, weight_format: StorageFormat) -> str:
    """``"vision tower 1.07 GiB"`` (and ``"audio tower ..."`` where there is one): the towers with their
    projectors and their bytes in ``weight_format`` (:func:`tower_weight_bytes`), whole model."""
    groups = tower_groups_of(model)
    audio = tuple(g for g in groups if g.name.startswith(("audio_tower.", "embed_audio.")))
    vision = tuple(g for g in groups if g not in audio)
    parts = [f"{what} tower {weight_bytes(gs, weight_format, model.torch_dtype) / (1 << 30):.2f} GiB"
             for what, gs in (("vision", vision), ("audio", audio)) if gs]
    return " + ".join(parts)


@dataclass(frozen=True, kw_only=True)
class VisionConfig:
    """The vision fields of a model's config.json (``vision_config``) the planner reads.

    Attributes:
        family: ``qwen2_vl`` (Qwen2-VL, Qwen2.5-VL) or ``qwen3_vl`` (Qwen3-VL, Qwen3.5).
        patch_size, spatial_merge_size, temporal_patch_size: Patch geometry [pixels, patches, frames].
        hidden_size, depth, intermediate_size, num_heads, in_channels: The tower's shape.
        out_hidden_size: Width of one merged token handed to the language model [elements].
        num_position_embeddings: Qwen3-VL's learned position table (0 for Qwen2.5-VL).
        deepstack_levels: Qwen3-VL deepstack mergers (``len(deepstack_visual_indexes)``).
        min_pixels, max_pixels: The processor's resize bounds [pixels].
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

    @property
    def factor(self) -> int:
        """``patch_size x spatial_merge_size``: image sides are multiples of it [pixels]."""
        return self.patch_size * self.spatial_merge_size

    @property
    def output_width(self) -> int:
        """Elements one merged token carries out of the encoder (deepstack levels included)."""
        return self.out_hidden_size * (1 + self.deepstack_levels)

    @property
    def max_tokens_per_image(self) -> int:
        """Tokens of the largest image the processor produces (``max_pixels`` worth of patches, merged)."""
        return self.max_pixels // (self.factor * self.factor)


def vision_from_config(config: Mapping) -> VisionConfig | None:
    """The :class:`VisionConfig` of a Qwen-VL-family config.json, or None for text-only and other families.

    Reads ``vision_config`` and the top-level ``model_type``; min / max pixels are the family's
    :data:`PROCESSOR_DEFAULTS` unless the vision config states ``min_pixels`` / ``max_pixels``.

    Raises:
        ValueError: a field that is not a whole number or lies outside :data:`VISION_FIELD_LIMITS` (the message
            names ``vision_config.<key>`` and the bound), so no tower of a billion blocks is ever built.
    """
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    kind = str(config.get("model_type", "")) or str(vision.get("model_type", ""))
    family = "qwen2_vl" if kind in QWEN2_VL_TYPES else "qwen3_vl" if kind in QWEN3_VL_TYPES else None
    if family is None or not vision.get("patch_size"):
        return None
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


def resized(vision: VisionConfig, width: int, height: int) -> tuple[int, int]:
    """``(width, height)`` the processor resizes an image to [pixels] (``smart_resize``, module docstring).

    Raises:
        ValueError: a side under 1 pixel.
    """
    if width < 1 or height < 1:
        raise ValueError(f"image sides must be at least 1 pixel, got {width} x {height}")
    f = vision.factor
    h = max(f, round(height / f) * f)
    w = max(f, round(width / f) * f)
    if h * w > vision.max_pixels:
        beta = math.sqrt(height * width / vision.max_pixels)
        h = max(f, math.floor(height / beta / f) * f)
        w = max(f, math.floor(width / beta / f) * f)
    elif h * w < vision.min_pixels:
        beta = math.sqrt(vision.min_pixels / (height * width))
        h = math.ceil(height * beta / f) * f
        w = math.ceil(width * beta / f) * f
    return w, h


def tokens_per_image(vision: VisionConfig, width: int, height: int) -> int:
    """Tokens one image of ``width x height`` puts into the prompt, delimiters included [tokens]."""
    w, h = resized(vision, width, height)
    patches = (w // vision.patch_size) * (h // vision.patch_size)
    return patches // (vision.spatial_merge_size ** 2) + DELIMITER_TOKENS


def vision_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """The vision tower's parameter groups, named as transformers' ``model.visual`` (module docstring's
    classes): Conv3d patch embedding (bias in Qwen3-VL), Qwen3-VL's learned position table, per block two
    norms (LayerNorm in Qwen3-VL, RMSNorm in Qwen2.5-VL), biased ``qkv`` / ``proj`` and MLP (Qwen3-VL
    ``linear_fc1`` / ``linear_fc2``, Qwen2.5-VL gated), the patch merger over ``spatial_merge_size^2``
    tokens and Qwen3-VL's deepstack mergers (one per ``deepstack_visual_indexes`` entry).

    Worked example (Qwen3-VL-8B: hidden 1,152, depth 27, intermediate 4,304, patch 16, position table 2,304,
    out 4,096, 3 deepstack levels): patch 1,152 x 3 x 2 x 16 x 16 + 1,152 = 1,770,624; position 2,304 x 1,152
    = 2,654,208; per block 4 x 1,152 (norms) + 1,152 x 3,456 + 3,456 + 1,152^2 + 1,152 + 2 x 1,152 x 4,304
    + 4,304 + 1,152 = 15,239,504, x 27 = 411,466,608; merger 2 x 1,152 + 4,608^2 + 4,608 + 4,608 x 4,096
    + 4,096 = 40,119,040; each deepstack merger 2 x 4,608 + the same two linears = 40,125,952, x 3 =
    120,377,856; total 576,388,336 (transformers 5.24 meta count of ``model.visual``).
    """
    h, m2 = vision.hidden_size, vision.spatial_merge_size ** 2
    kernel = (h, vision.in_channels, vision.temporal_patch_size, vision.patch_size, vision.patch_size)
    qwen3 = vision.family == "qwen3_vl"
    d = vision.depth
    # patch_embed is a Conv3d vLLM keeps whole on every GPU (kind "norm": replicated, activation dtype)
    groups = [ParamGroup(name="visual.patch_embed.proj.weight", shape=kernel, kind="norm")]
    if qwen3:
        groups.append(ParamGroup(name="visual.patch_embed.proj.bias", shape=(h,), kind="norm"))
        if vision.num_position_embeddings:
            groups.append(ParamGroup(name="visual.pos_embed.weight", shape=(vision.num_position_embeddings, h),
                                     kind="norm"))  # an nn.Embedding vLLM keeps whole on every GPU
    norm_bias = qwen3  # LayerNorm (weight + bias) in Qwen3-VL, RMSNorm (weight) in Qwen2.5-VL
    groups += [*tower_norm("visual.blocks.*.norm1", h, bias=norm_bias, count=d),
               *tower_norm("visual.blocks.*.norm2", h, bias=norm_bias, count=d),
               *tower_linear("visual.blocks.*.attn.qkv", h, 3 * h, bias=True, count=d),
               *tower_linear("visual.blocks.*.attn.proj", h, h, bias=True, count=d)]
    if qwen3:
        groups += [*tower_linear("visual.blocks.*.mlp.linear_fc1", h, vision.intermediate_size, bias=True, count=d),
                   *tower_linear("visual.blocks.*.mlp.linear_fc2", vision.intermediate_size, h, bias=True, count=d)]
    else:
        for name in ("gate_proj", "up_proj"):
            groups += tower_linear(f"visual.blocks.*.mlp.{name}", h, vision.intermediate_size, bias=True, count=d)
        groups += tower_linear("visual.blocks.*.mlp.down_proj", vision.intermediate_size, h, bias=True, count=d)
    merged = h * m2
    fc1, fc2 = ("linear_fc1", "linear_fc2") if qwen3 else ("mlp.0", "mlp.2")
    groups += [*tower_norm("visual.merger.norm" if qwen3 else "visual.merger.ln_q", h, bias=norm_bias),
               *tower_linear(f"visual.merger.{fc1}", merged, merged, bias=True),
               *tower_linear(f"visual.merger.{fc2}", merged, vision.out_hidden_size, bias=True)]
    if vision.deepstack_levels:
        n = vision.deepstack_levels
        groups += [*tower_norm("visual.deepstack_merger_list.*.norm", merged, bias=True, count=n),
                   *tower_linear("visual.deepstack_merger_list.*.linear_fc1", merged, merged, bias=True, count=n),
                   *tower_linear("visual.deepstack_merger_list.*.linear_fc2", merged, vision.out_hidden_size,
                                 bias=True, count=n)]
    return tuple(groups)


def video_frames(seconds: float, fps: float = VIDEO_FPS) -> int:
    """Frames the processor samples from a clip of ``seconds`` at ``fps`` [frames]: ``int(seconds x fps)``
    clamped to [:data:`VIDEO_MIN_FRAMES`, :data:`VIDEO_MAX_FRAMES`] (module docstring).

    Raises:
        ValueError: a duration or rate that is not positive.
    """
    if seconds <= 0 or fps <= 0:
        raise ValueError(f"video seconds and fps must be positive, got {seconds} s at {fps} fps")
    return min(max(int(seconds * fps), VIDEO_MIN_FRAMES), VIDEO_MAX_FRAMES)


def resized_video(vision: VisionConfig, frames: int, width: int, height: int) -> tuple[int, int]:
    """``(width, height)`` every frame is resized to [pixels] (module docstring's video rules).

    Raises:
        ValueError: fewer frames than ``temporal_patch_size`` or a side under 1 pixel.
    """
    if frames < vision.temporal_patch_size:
        raise ValueError(f"a video needs at least {vision.temporal_patch_size} frames (temporal_patch_size), "
                         f"got {frames}")
    low, high = VIDEO_DEFAULTS[vision.family]
    if vision.family == "qwen2_vl":  # each frame like an image within the video size bounds
        return resized(replace(vision, min_pixels=low, max_pixels=high), width, height)
    t = round(frames / vision.temporal_patch_size) * vision.temporal_patch_size
    if width < 1 or height < 1:
        raise ValueError(f"video frame sides must be at least 1 pixel, got {width} x {height}")
    f = vision.factor
    h, w = max(f, round(height / f) * f), max(f, round(width / f) * f)
    if t * h * w > high:
        beta = math.sqrt(frames * height * width / high)
        h, w = max(f, math.floor(height / beta / f) * f), max(f, math.floor(width / beta / f) * f)
    elif t * h * w < low:
        beta = math.sqrt(low / (frames * height * width))
        h, w = math.ceil(height * beta / f) * f, math.ceil(width * beta / f) * f
    return w, h


def tokens_per_video(vision: VisionConfig, frames: int, width: int, height: int) -> int:
    """Tokens one video of ``frames`` frames of ``width x height`` puts into the prompt [tokens]
    (module docstring: ``groups x patches / merge^2`` plus the delimiters; timestamps not counted).

    Raises:
        ValueError: as :func:`resized_video`.
    """
    w, h = resized_video(vision, frames, width, height)
    groups = -(-frames // vision.temporal_patch_size)  # patchify pads to a multiple of temporal_patch_size
    per_group = (w // vision.patch_size) * (h // vision.patch_size) // (vision.spatial_merge_size ** 2)
    delimiters = DELIMITER_TOKENS * groups if vision.family == "qwen3_vl" else DELIMITER_TOKENS
    return groups * per_group + delimiters


@dataclass(frozen=True, kw_only=True)
class MultimodalConfig:
    """Images and videos per request, as asked (vLLM ``--limit-mm-per-prompt '{"image": N, "video": M}'``
    bounds them).

    Attributes:
        vision: The model's vision fields (:func:`vision_from_config`).
        images_per_request: Images each request carries, >= 0.
        image_width, image_height: Their size [pixels].
        limit_mm_per_prompt: vLLM's image limit per prompt; None = vLLM's default (999 per modality),
            0 = images off.
        videos_per_request: Videos each request carries, >= 0.
        video_frames: Frames of each video after sampling [frames].
        video_width, video_height: Frame size [pixels].
        limit_videos_per_prompt: vLLM's video limit per prompt; None = 999. The encoder profile is off only
            when both limits are 0.
    """

    vision: VisionConfig = field(compare=True)
    images_per_request: int = 1
    image_width: int = 1024
    image_height: int = 1024
    limit_mm_per_prompt: int | None = None
    videos_per_request: int = 0
    video_frames: int = 16
    video_width: int = 448
    video_height: int = 448
    limit_videos_per_prompt: int | None = None

    def validate(self) -> None:
        """Raise ValueError naming the bad setting."""
        if self.images_per_request < 0 or self.videos_per_request < 0:
            raise ValueError(f"images and videos per request must be >= 0, got {self.images_per_request} and "
                             f"{self.videos_per_request}")
        if self.image_width < 1 or self.image_height < 1:
            raise ValueError(f"image sides must be at least 1 pixel, got {self.image_width} x {self.image_height}")
        for what, asked, limit in (("images", self.images_per_request, self.limit_mm_per_prompt),
                                   ("videos", self.videos_per_request, self.limit_videos_per_prompt)):
            if limit is not None and limit < 0:
                raise ValueError(f"--limit-mm-per-prompt's {what[:-1]} limit must be >= 0, got {limit}")
            if limit is not None and asked > limit:
                raise ValueError(f"{asked} {what} per request exceed --limit-mm-per-prompt's {what[:-1]} limit "
                                 f"{limit}; raise the limit or send fewer {what}")
        if self.videos_per_request:
            resized_video(self.vision, self.video_frames, self.video_width, self.video_height)

    @property
    def encoder_profiled(self) -> bool:
        """False when vLLM skips the encoder: every modality limited to 0 (module docstring)."""
        return not (self.limit_mm_per_prompt == 0 and self.limit_videos_per_prompt == 0)


@dataclass(frozen=True, kw_only=True)
class MultimodalCost:
    """What the images, videos and the tower cost on one GPU (bytes unless named).

    Attributes:
        tokens_per_image: Prompt tokens of one image, delimiters included [tokens].
        tokens_per_request: ``images x tokens_per_image + videos x tokens_per_video`` [tokens].
        resized_width, resized_height: The processor's image size [pixels].
        encoder_budget_tokens: vLLM's encoder cache budget [tokens] (0 when profiling is off).
        encoder_cache_bytes: Encoder outputs held through the profile pass.
        vision_forward_bytes: Estimated vision-tower activation peak of the profile pass.
        vision_params: Parameters of the vision tower.
        vision_weights_bytes: Its bytes on one GPU (already inside the model's weights).
        videos_per_request, video_frames, tokens_per_video: The videos and their tokens [tokens].
        resized_video_width, resized_video_height: The video processor's frame size [pixels].
        notes: Assumptions.
    """

    images_per_request: int
    tokens_per_image: int
    tokens_per_request: int
    resized_width: int
    resized_height: int
    encoder_budget_tokens: int
    encoder_cache_bytes: int
    vision_forward_bytes: int
    vision_params: int
    vision_weights_bytes: int
    videos_per_request: int = 0
    video_frames: int = 0
    tokens_per_video: int = 0
    resized_video_width: int = 0
    resized_video_height: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """JSON keys of the ``serving.multimodal`` block (the video keys only when a video is asked for)."""
        out = {"images_per_request": self.images_per_request, "tokens_per_image": self.tokens_per_image,
               "tokens_per_request": self.tokens_per_request, "resized_width": self.resized_width,
               "resized_height": self.resized_height, "encoder_budget_tokens": self.encoder_budget_tokens,
               "encoder_cache_bytes": self.encoder_cache_bytes, "vision_forward_bytes": self.vision_forward_bytes,
               "vision_params": self.vision_params, "vision_weights_bytes_per_gpu": self.vision_weights_bytes}
        if self.videos_per_request:
            out |= {"videos_per_request": self.videos_per_request, "video_frames": self.video_frames,
                    "tokens_per_video": self.tokens_per_video, "resized_video_width": self.resized_video_width,
                    "resized_video_height": self.resized_video_height}
        return out | {"notes": list(self.notes)}


def multimodal_cost(config: MultimodalConfig, *, activation: StorageFormat, num_batched_tokens: int,
                    tensor_parallel_size: int = 1, engine: str = "vllm") -> MultimodalCost:
    """Tokens, encoder cache, vision activation and tower weights of ``config`` on one GPU (module docstring).

    The tower's weights are reported (``vision_weights_bytes``) but not added: the catalog spec already
    holds them (:mod:`model_catalog.families_multimodal`).

    Args:
        config: The images, videos and the model's vision fields.
        activation: The activation dtype (encoder outputs and the tower).
        num_batched_tokens: ``max_num_batched_tokens`` of the profile pass [tokens].
        tensor_parallel_size: GPUs the tower is split over.
        engine: Engine family; only vLLM profiles an encoder cache.

    Raises:
        ValueError: an invalid config.
    """
    config.validate()
    vision = config.vision
    per_image = tokens_per_image(vision, config.image_width, config.image_height)
    width, height = resized(vision, config.image_width, config.image_height)
    per_video = video_w = video_h = 0
    if config.videos_per_request:
        per_video = tokens_per_video(vision, config.video_frames, config.video_width, config.video_height)
        video_w, video_h = resized_video(vision, config.video_frames, config.video_width, config.video_height)
    groups = vision_tower_groups(vision)
    notes: list[str] = [f"min_pixels {vision.min_pixels:,} / max_pixels {vision.max_pixels:,}: the "
                        f"{vision.family} processor defaults"]
    if config.videos_per_request:
        notes.append(f"video: {config.video_frames} frames resized to {video_w} x {video_h} ({vision.family} video "
                     "processor defaults); Qwen3-VL's per-group text timestamps are not counted")
    budget = cache = forward = 0
    if engine == "vllm" and config.encoder_profiled:
        largest = max(vision.max_tokens_per_image, per_video)
        budget = max(num_batched_tokens, largest)
        cache = activation.bytes_for(budget * vision.output_width)
        patches = largest * vision.spatial_merge_size ** 2
        forward = activation.bytes_for(patches * (3 * vision.hidden_size + vision.intermediate_size))
        notes.append(f"vLLM encoder cache of {budget:,} tokens (max of max_num_batched_tokens and the largest item's "
                     f"{largest:,}) held through the profile pass; the vision forward peak is an estimate")
    elif engine == "vllm":
        notes.append("--limit-mm-per-prompt 0 for images and videos: vLLM skips the encoder profile")
    else:
        notes.append(f"{engine}: image and video tokens priced; its encoder memory is not profiled here")
    return MultimodalCost(
        images_per_request=config.images_per_request, tokens_per_image=per_image,
        tokens_per_request=config.images_per_request * per_image + config.videos_per_request * per_video,
        resized_width=width, resized_height=height,
        encoder_budget_tokens=budget, encoder_cache_bytes=cache, vision_forward_bytes=forward,
        vision_params=sum(g.total_numel for g in groups),
        vision_weights_bytes=weight_bytes(groups, activation, None, tensor_parallel_size),
        videos_per_request=config.videos_per_request, video_frames=config.video_frames if per_video else 0,
        tokens_per_video=per_video, resized_video_width=video_w, resized_video_height=video_h, notes=tuple(notes))


def launch_flags(config: MultimodalConfig, engine: str) -> str:
    """The engine's flag bounding images and videos per prompt (vLLM ``--limit-mm-per-prompt``,
    vllm/config/multimodal.py ``limit_per_prompt``).

    SGLang and llama.cpp take no such bound (llama.cpp needs the tower's ``--mmproj`` file).
    """
    if engine == "vllm":
        limit = config.limit_mm_per_prompt if config.limit_mm_per_prompt is not None else config.images_per_request
        if not config.videos_per_request and config.limit_videos_per_prompt is None:
            return f"--limit-mm-per-prompt '{{\"image\": {limit}}}'"
        videos = (config.limit_videos_per_prompt if config.limit_videos_per_prompt is not None
                  else config.videos_per_request)
        return f"--limit-mm-per-prompt '{{\"image\": {limit}, \"video\": {videos}}}'"
    if engine == "llama.cpp":
        return "--mmproj MMPROJ.gguf"
    return ""
