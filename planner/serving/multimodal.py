"""Multimodal inputs: the image tokens a request puts into the KV cache, the encoder cache vLLM profiles,
and the vision tower the text-only catalog spec leaves out.

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

and the weights gain the vision tower (transformers Qwen2_5_VisionTransformerPretrainedModel,
models/qwen2_5_vl/modeling_qwen2_5_vl.py; Qwen3VLVisionModel, models/qwen3_vl/modeling_qwen3_vl.py),
split over tensor-parallel GPUs like vLLM's default ``mm_encoder_tp_mode="weights"``, in the activation
dtype (quantized checkpoints leave the tower unquantized). SGLang and llama.cpp (``--mmproj``) put the
same tokens into the KV cache; their encoder memory is not profiled this way, so only the tokens and
the tower are priced for them.

Video is not modelled (its frames share the image formula with their own limits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from planner.model.dtypes import StorageFormat
from planner.model.params import ParamGroup, linear, norm, weight_bytes

QWEN2_VL_TYPES = frozenset({"qwen2_vl", "qwen2_5_vl"})
QWEN3_VL_TYPES = frozenset({"qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe", "qwen3_5_vision",
                            "qwen3_5_moe_vision"})

PROCESSOR_DEFAULTS: dict[str, tuple[int, int]] = {
    "qwen2_vl": (3136, 12_845_056),
    "qwen3_vl": (65_536, 16_777_216),
}
"""Vision family -> (min_pixels, max_pixels) of its published preprocessor_config.json (module docstring)."""

DELIMITER_TOKENS = 2
"""<|vision_start|> and <|vision_end|> around each image's pad tokens (Qwen chat templates)."""


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
    """
    vision = config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None
    kind = str(config.get("model_type", "")) or str(vision.get("model_type", ""))
    family = "qwen2_vl" if kind in QWEN2_VL_TYPES else "qwen3_vl" if kind in QWEN3_VL_TYPES else None
    if family is None or not vision.get("patch_size"):
        return None
    low, high = PROCESSOR_DEFAULTS[family]
    hidden = vision.get("hidden_size") or vision.get("embed_dim") or 1280
    return VisionConfig(
        family=family, patch_size=int(vision["patch_size"]),
        spatial_merge_size=int(vision.get("spatial_merge_size") or 2),
        temporal_patch_size=int(vision.get("temporal_patch_size") or 2), hidden_size=int(hidden),
        depth=int(vision.get("depth") or 32), intermediate_size=int(vision.get("intermediate_size") or 4 * hidden),
        num_heads=int(vision.get("num_heads") or 16), in_channels=int(vision.get("in_channels") or 3),
        out_hidden_size=int(vision.get("out_hidden_size") or vision.get("hidden_size") or hidden),
        num_position_embeddings=int(vision.get("num_position_embeddings") or 0) if family == "qwen3_vl" else 0,
        deepstack_levels=len(vision.get("deepstack_visual_indexes") or ()) if family == "qwen3_vl" else 0,
        min_pixels=int(vision.get("min_pixels") or low), max_pixels=int(vision.get("max_pixels") or high))


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
    """The vision tower's parameter groups (module docstring's transformers classes)."""
    h, m2 = vision.hidden_size, vision.spatial_merge_size ** 2
    kernel = vision.in_channels * vision.temporal_patch_size * vision.patch_size ** 2
    qwen3 = vision.family == "qwen3_vl"
    d = vision.depth
    # patch_embed is a Conv3d vLLM keeps whole on every GPU ("router" = replicated, activation dtype)
    groups = [ParamGroup(name="visual.patch_embed.proj.weight", shape=(h, kernel), kind="router")]
    if qwen3:
        groups.append(ParamGroup(name="visual.patch_embed.proj.bias", shape=(h,), kind="bias"))
        if vision.num_position_embeddings:
            groups.append(ParamGroup(name="visual.pos_embed.weight", shape=(vision.num_position_embeddings, h),
                                     kind="norm"))  # an nn.Embedding vLLM keeps whole on every GPU
    norm_bias = qwen3  # LayerNorm (weight + bias) in Qwen3-VL, RMSNorm (weight) in Qwen2.5-VL
    groups += [*norm("visual.blocks.*.norm1", h, bias=norm_bias, count=d),
               *norm("visual.blocks.*.norm2", h, bias=norm_bias, count=d),
               *linear("visual.blocks.*.attn.qkv", h, 3 * h, bias=True, count=d),
               *linear("visual.blocks.*.attn.proj", h, h, bias=True, count=d)]
    if qwen3:
        groups += [*linear("visual.blocks.*.mlp.linear_fc1", h, vision.intermediate_size, bias=True, count=d),
                   *linear("visual.blocks.*.mlp.linear_fc2", vision.intermediate_size, h, bias=True, count=d)]
    else:
        for name in ("gate_proj", "up_proj"):
            groups += linear(f"visual.blocks.*.mlp.{name}", h, vision.intermediate_size, bias=True, count=d)
        groups += linear("visual.blocks.*.mlp.down_proj", vision.intermediate_size, h, bias=True, count=d)
    merged = h * m2
    groups += [*norm("visual.merger.norm", h, bias=norm_bias),
               *linear("visual.merger.fc1", merged, merged, bias=True),
               *linear("visual.merger.fc2", merged, vision.out_hidden_size, bias=True)]
    if vision.deepstack_levels:
        n = vision.deepstack_levels
        groups += [*norm("visual.deepstack_merger_list.*.norm", merged, bias=True, count=n),
                   *linear("visual.deepstack_merger_list.*.fc1", merged, merged, bias=True, count=n),
                   *linear("visual.deepstack_merger_list.*.fc2", merged, vision.out_hidden_size, bias=True, count=n)]
    return tuple(groups)


@dataclass(frozen=True, kw_only=True)
class MultimodalConfig:
    """Images per request, as asked (vLLM ``--limit-mm-per-prompt '{"image": N}'`` bounds them).

    Attributes:
        vision: The model's vision fields (:func:`vision_from_config`).
        images_per_request: Images each request carries, >= 0.
        image_width, image_height: Their size [pixels].
        limit_mm_per_prompt: vLLM's image limit per prompt; None = vLLM's default (no practical
            limit), 0 = images off (no encoder profile).
    """

    vision: VisionConfig = field(compare=True)
    images_per_request: int = 1
    image_width: int = 1024
    image_height: int = 1024
    limit_mm_per_prompt: int | None = None

    def validate(self) -> None:
        """Raise ValueError naming the bad setting."""
        if self.images_per_request < 0:
            raise ValueError(f"images_per_request must be >= 0, got {self.images_per_request}")
        if self.image_width < 1 or self.image_height < 1:
            raise ValueError(f"image sides must be at least 1 pixel, got {self.image_width} x {self.image_height}")
        if self.limit_mm_per_prompt is not None and self.limit_mm_per_prompt < 0:
            raise ValueError(f"limit_mm_per_prompt must be >= 0, got {self.limit_mm_per_prompt}")
        if self.limit_mm_per_prompt is not None and self.images_per_request > self.limit_mm_per_prompt:
            raise ValueError(f"{self.images_per_request} images per request exceed --limit-mm-per-prompt "
                             f"{self.limit_mm_per_prompt}; raise the limit or send fewer images")


@dataclass(frozen=True, kw_only=True)
class MultimodalCost:
    """What the images and the tower cost on one GPU (bytes unless named).

    Attributes:
        tokens_per_image: Prompt tokens of one image, delimiters included [tokens].
        tokens_per_request: ``images_per_request x tokens_per_image`` [tokens].
        resized_width, resized_height: The processor's image size [pixels].
        encoder_budget_tokens: vLLM's encoder cache budget [tokens] (0 when profiling is off).
        encoder_cache_bytes: Encoder outputs held through the profile pass.
        vision_forward_bytes: Estimated vision-tower activation peak of the profile pass.
        vision_params: Parameters of the vision tower.
        vision_weights_bytes: Its bytes on one GPU.
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
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """JSON keys of the ``serving.multimodal`` block."""
        return {"images_per_request": self.images_per_request, "tokens_per_image": self.tokens_per_image,
                "tokens_per_request": self.tokens_per_request, "resized_width": self.resized_width,
                "resized_height": self.resized_height, "encoder_budget_tokens": self.encoder_budget_tokens,
                "encoder_cache_bytes": self.encoder_cache_bytes, "vision_forward_bytes": self.vision_forward_bytes,
                "vision_params": self.vision_params, "vision_weights_bytes_per_gpu": self.vision_weights_bytes,
                "notes": list(self.notes)}


def multimodal_cost(config: MultimodalConfig, *, activation: StorageFormat, num_batched_tokens: int,
                    tensor_parallel_size: int = 1, engine: str = "vllm") -> MultimodalCost:
    """Tokens, encoder cache, vision activation and tower weights of ``config`` on one GPU (module docstring).

    Args:
        config: The images and the model's vision fields.
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
    groups = vision_tower_groups(vision)
    notes: list[str] = [f"min_pixels {vision.min_pixels:,} / max_pixels {vision.max_pixels:,}: the "
                        f"{vision.family} processor defaults", "vision tower added to the weights (the catalog spec "
                        "is the language model only)"]
    budget = cache = forward = 0
    if engine == "vllm" and config.limit_mm_per_prompt != 0:
        largest = vision.max_tokens_per_image
        budget = max(num_batched_tokens, largest)
        cache = activation.bytes_for(budget * vision.output_width)
        patches = largest * vision.spatial_merge_size ** 2
        forward = activation.bytes_for(patches * (3 * vision.hidden_size + vision.intermediate_size))
        notes.append(f"vLLM encoder cache of {budget:,} tokens (max of max_num_batched_tokens and the largest image's "
                     f"{largest:,}) held through the profile pass; the vision forward peak is an estimate")
    elif engine == "vllm":
        notes.append("--limit-mm-per-prompt 0: vLLM skips the encoder profile")
    else:
        notes.append(f"{engine}: image tokens and tower priced; its encoder memory is not profiled here")
    return MultimodalCost(
        images_per_request=config.images_per_request, tokens_per_image=per_image,
        tokens_per_request=config.images_per_request * per_image, resized_width=width, resized_height=height,
        encoder_budget_tokens=budget, encoder_cache_bytes=cache, vision_forward_bytes=forward,
        vision_params=sum(g.total_numel for g in groups),
        vision_weights_bytes=weight_bytes(groups, activation, None, tensor_parallel_size), notes=tuple(notes))


def launch_flags(config: MultimodalConfig, engine: str) -> str:
    """The engine's flag bounding images per prompt (vLLM ``--limit-mm-per-prompt``, vllm/engine/arg_utils.py).

    SGLang and llama.cpp take no such bound (llama.cpp needs the tower's ``--mmproj`` file).
    """
    if engine == "vllm":
        limit = config.limit_mm_per_prompt if config.limit_mm_per_prompt is not None else config.images_per_request
        return f"--limit-mm-per-prompt '{{\"image\": {limit}}}'"
    if engine == "llama.cpp":
        return "--mmproj MMPROJ.gguf"
    return ""
