"""Multimodal inputs: the image and video tokens a request puts into the KV cache, the encoder cache vLLM
profiles, and the vision tower a multimodal catalog spec carries beside its language model.

The module is split along its seams; every name it had still imports from here:

* :mod:`planner.serving.vision_config`: :class:`VisionConfig` and :func:`vision_from_config` (Qwen2-VL /
  Qwen2.5-VL / Qwen3-VL / Qwen3.5, Gemma 3, Gemma 4), with the bounds on every field read.
* :mod:`planner.serving.media_tokens`: tokens per image and per video, and the dummy item of vLLM's encoder
  profile (:func:`profile_item`).
* :mod:`planner.serving.vision_towers`: the towers as parameter groups, :func:`text_only`.
* here: the request (:class:`MultimodalConfig`), its cost on one GPU (:func:`multimodal_cost`) and the launch flag.

The profile pass (vLLM V1): ``compute_mm_encoder_budget`` (vllm/v1/core/encoder_cache_manager.py) sets the
encoder budget to ``max(max_num_batched_tokens, the largest item's tokens)`` when ``--limit-mm-per-prompt`` allows
a modality (0 for every one switches the encoder profile off); ``MultiModalBudget._get_max_items``
(vllm/multimodal/encoder_budget.py) fits ``items = max(1, budget // item tokens)`` dummy items of the profiled
modality into one batch (also bounded by ``max_num_seqs x`` items per prompt, which is far larger at the
defaults); ``GPUModelRunner.profile_run`` (vllm/v1/worker/gpu_model_runner.py) encodes them and keeps their
outputs while it profiles the language model. So the KV budget loses

    encoder cache bytes  = items x embeddings per item x encoder output width x activation bytes
                           (output width = out_hidden_size x (1 + deepstack levels) for Qwen3-VL,
                            vllm/model_executor/models/qwen3_vl.py; the text width for Gemma)
    + max(0, vision forward peak - language-model activation peak)
    vision forward peak ~ items x patches x activation bytes x (3 x hidden + intermediate)   (an estimate)

vLLM runs this profile by default: a launch without ``--limit-mm-per-prompt`` allows 999 items of every modality,
and ``skip_mm_profiling`` is off, so a model with a vision tower is charged it with no image per request
(:func:`engine_default_media`; ``{"image": 0, "video": 0}`` or ``--language-model-only`` switches it off).

Worked example: Qwen3-VL at 8,192 batched tokens: its largest image is 16,384 tokens, so the budget is 16,384
and one item; Gemma 3 27B: 256-token images, so 8,192 // 256 = 32 images of 4,096 patches, holding 32 x 256 x
5,376 x 2 B = 88,080,384 B of outputs.

Gemma 4's tower (transformers models/gemma4/modeling_gemma4.py ``Gemma4VisionPatchEmbedder._position_embeddings``)
one-hot encodes every patch's (x, y) position over ``position_embedding_size`` classes in int64 and casts it to
the activation dtype, so an image or frame of N patch slots briefly holds ``N x 2 x P x (8 + 2)`` bytes (2,520 x
2 x 10,240 x 10 = 516 MB an image). vLLM encodes Gemma 4 items in chunks sized for it (gemma4_mm.py
``_encoder_chunk``: ``max(1, min(free // 2, total // 10) // (N x 4 x P x 8))`` items, free and total from
``mem_get_info`` after the weights are loaded), so the peak is a chunk of those transients (or of the layers'
activations, whichever is larger) plus every item's hidden states kept for pooling. :func:`encoder_chunk_budget`
gives the chunk budget where the caller knows the GPU; without it the whole batch is one chunk (an upper bound).

SGLang and llama.cpp (``--mmproj``) put the same tokens into the KV cache; their encoder memory is not profiled
this way, so only the tokens are priced for them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.model.dtypes import StorageFormat
from planner.model.params import weight_bytes
from planner.serving.media_tokens import (
    DELIMITER_TOKENS,
    VIDEO_DEFAULTS,
    VIDEO_FPS,
    VIDEO_MAX_FRAMES,
    VIDEO_MIN_FRAMES,
    ProfileItem,
    profile_item,
    resized,
    resized_video,
    tokens_per_image,
    tokens_per_video,
    video_frames,
)
from planner.serving.vision_config import (
    FAMILY_NAMES,
    MAX_CHANNELS,
    MAX_IMAGE_SIZE,
    MAX_MERGE_SIZE,
    MAX_PATCH_SIZE,
    MAX_PIXELS,
    MAX_TOKENS_PER_IMAGE,
    MAX_TOWER_FFN,
    MAX_TOWER_HEADS,
    MAX_TOWER_LAYERS,
    MAX_TOWER_WIDTH,
    MAX_VISION_POSITIONS,
    PROCESSOR_DEFAULTS,
    QWEN2_VL_TYPES,
    QWEN3_VL_TYPES,
    VISION_FIELD_LIMITS,
    VisionConfig,
    vision_from_config,
)
from planner.serving.vision_towers import (
    TOWER_PREFIXES,
    is_multimodal,
    is_tower_group,
    text_only,
    tower_groups_of,
    tower_linear,
    tower_norm,
    tower_parameters,
    tower_summary,
    tower_weight_bytes,
    vision_tower_groups,
)
from planner.text import count_noun

__all__ = [
    "DELIMITER_TOKENS", "MAX_CHANNELS", "MAX_IMAGE_SIZE", "MAX_MERGE_SIZE", "MAX_PATCH_SIZE", "MAX_PIXELS",
    "MAX_TOKENS_PER_IMAGE", "MAX_TOWER_FFN", "MAX_TOWER_HEADS", "MAX_TOWER_LAYERS", "MAX_TOWER_WIDTH",
    "MAX_VISION_POSITIONS", "PROCESSOR_DEFAULTS", "QWEN2_VL_TYPES", "QWEN3_VL_TYPES", "TOWER_PREFIXES",
    "VIDEO_DEFAULTS", "VIDEO_FPS", "VIDEO_MAX_FRAMES", "VIDEO_MIN_FRAMES", "VISION_FIELD_LIMITS", "MultimodalConfig",
    "MultimodalCost", "VisionConfig", "encoder_chunk_budget", "engine_default_media", "is_multimodal",
    "is_tower_group", "launch_flags", "multimodal_cost", "resized", "resized_video", "text_only", "text_only_flags",
    "tokens_per_image", "tokens_per_video", "tower_groups_of", "tower_linear", "tower_norm", "tower_parameters",
    "tower_summary", "tower_weight_bytes", "video_frames", "vision_from_config", "vision_tower_groups",
]

ONE_HOT_BYTES = 8
"""Bytes of one int64 element of Gemma 4's position one-hot (``F.one_hot`` returns int64)."""


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
            when every modality the model takes is limited to 0 (Gemma 3 takes images only).
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
    def videos_allowed(self) -> bool:
        """Whether the model takes videos and their limit is above 0 (an unstated limit counts 999)."""
        return self.vision.takes_video and self.limit_videos_per_prompt != 0

    @property
    def engine_default(self) -> bool:
        """True for vLLM's default launch: no image or video per request and no ``--limit-mm-per-prompt`` (999 per
        modality, vllm/config/multimodal.py ``MultiModalConfig.get_limit_per_prompt``), whose encoder vLLM still
        profiles (:func:`engine_default_media`)."""
        return (not self.images_per_request and not self.videos_per_request and self.limit_mm_per_prompt is None
                and self.limit_videos_per_prompt is None)

    @property
    def encoder_profiled(self) -> bool:
        """False when vLLM skips the encoder: every modality the model takes limited to 0 (module docstring)."""
        return self.limit_mm_per_prompt != 0 or self.videos_allowed


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
        encoder_profile_modality: The modality vLLM profiles (``image`` / ``video``; empty when off).
        encoder_profile_items: Dummy items it encodes in one batch.
        encoder_profile_default: The profile is vLLM's default (no media flag given:
            :attr:`MultimodalConfig.engine_default`), not one the request asked for.
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
    encoder_profile_modality: str = ""
    encoder_profile_items: int = 0
    encoder_profile_default: bool = False
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        """JSON keys of the ``serving.multimodal`` block (the video keys only when a video is asked for)."""
        out = {"images_per_request": self.images_per_request, "tokens_per_image": self.tokens_per_image,
               "tokens_per_request": self.tokens_per_request, "resized_width": self.resized_width,
               "resized_height": self.resized_height, "encoder_budget_tokens": self.encoder_budget_tokens,
               "encoder_cache_bytes": self.encoder_cache_bytes, "vision_forward_bytes": self.vision_forward_bytes,
               "vision_params": self.vision_params, "vision_weights_bytes_per_gpu": self.vision_weights_bytes,
               "encoder_profile_modality": self.encoder_profile_modality,
               "encoder_profile_items": self.encoder_profile_items,
               "encoder_profile_default": self.encoder_profile_default}
        if self.videos_per_request:
            out |= {"videos_per_request": self.videos_per_request, "video_frames": self.video_frames,
                    "tokens_per_video": self.tokens_per_video, "resized_video_width": self.resized_video_width,
                    "resized_video_height": self.resized_video_height}
        return out | {"notes": list(self.notes)}


def encoder_chunk_budget(total_bytes: int, free_bytes: int) -> int:
    """The memory vLLM sizes a Gemma 4 encoder chunk for [bytes]: ``min(free // 2, total // 10)`` (gemma4_mm.py
    ``_encoder_chunk``; free = what ``mem_get_info`` reports after the weights are loaded)."""
    return max(0, min(free_bytes // 2, total_bytes // 10))


def _forward_peak(vision: VisionConfig, item: ProfileItem, items: int, activation: StorageFormat,
                  chunk_budget_bytes: int | None) -> tuple[int, str]:
    """Estimated vision forward peak of ``items`` dummy items [bytes], and a note for Gemma 4's chunks (module
    docstring)."""
    per_patch = 3 * vision.hidden_size + vision.intermediate_size
    if vision.family != "gemma4":
        return activation.bytes_for(items * item.patches * per_patch), ""
    units, unit_patches = items * item.frames, item.patches // item.frames  # images, or frames of every video
    positions = unit_patches * 2 * vision.num_position_embeddings
    one_hot = positions * ONE_HOT_BYTES + activation.bytes_for(positions)
    per_unit = max(one_hot, activation.bytes_for(unit_patches * per_patch))
    chunk = units
    if chunk_budget_bytes is not None:
        chunk = min(units, max(1, chunk_budget_bytes // (unit_patches * 4 * vision.num_position_embeddings * 8)))
    held = activation.bytes_for(units * unit_patches * vision.hidden_size)
    where = (f"vLLM's chunk of {chunk:,} of {units:,}" if chunk_budget_bytes is not None
             else f"all {units:,} at once (GPU unknown, an upper bound)")
    return chunk * per_unit + held, (f"Gemma 4 tower: position one-hot of {one_hot / 2**20:,.0f} MiB per "
                                     f"{'frame' if item.frames > 1 else 'image'}, {where}")


def multimodal_cost(config: MultimodalConfig, *, activation: StorageFormat, num_batched_tokens: int,
                    tensor_parallel_size: int = 1, engine: str = "vllm",
                    encoder_chunk_budget_bytes: int | None = None) -> MultimodalCost:
    """Tokens, encoder cache, vision activation and tower weights of ``config`` on one GPU (module docstring).

    The tower's weights are reported (``vision_weights_bytes``) but not added: the catalog spec already
    holds them (:mod:`model_catalog.families_multimodal`).

    Args:
        config: The images, videos and the model's vision fields.
        activation: The activation dtype (encoder outputs and the tower).
        num_batched_tokens: ``max_num_batched_tokens`` of the profile pass [tokens].
        tensor_parallel_size: GPUs the tower is split over.
        engine: Engine family; only vLLM profiles an encoder cache.
        encoder_chunk_budget_bytes: Gemma 4's encoder chunk budget (:func:`encoder_chunk_budget`); None = the
            GPU is unknown, every dummy item in one chunk.

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
    if vision.family.startswith("qwen"):
        notes = [f"min_pixels {vision.min_pixels:,} / max_pixels {vision.max_pixels:,}: the {vision.family} "
                 "processor defaults"]
    elif vision.family == "llama4":
        tiles = width * height // vision.image_size ** 2
        notes = [f"Llama 4: {config.image_width} x {config.image_height} px on {count_noun(tiles, 'tile')} of "
                 f"{vision.image_size} px ({width} x {height}){' and a global tile' if tiles > 1 else ''}, "
                 f"{vision.tokens_per_tile:,} tokens a tile; at most {vision.max_tiles} tiles, "
                 f"{vision.max_tokens_per_image:,} tokens (the image processor's max_patches default)"]
    else:
        notes = [f"{FAMILY_NAMES[vision.family]}: at most {vision.max_tokens_per_image:,} image tokens, images "
                 f"resized to {width} x {height} px (pan-and-scan off)"]
    if config.videos_per_request:
        notes.append(f"video: {config.video_frames} frames resized to {video_w} x {video_h} ({vision.family} video "
                     "processor defaults); Qwen3-VL's per-group text timestamps are not counted")
    budget = cache = forward = items = 0
    modality = ""
    if engine == "vllm" and config.encoder_profiled:
        item = profile_item(vision, videos_allowed=config.videos_allowed, video_tokens=per_video)
        budget = max(num_batched_tokens, item.budget_tokens)
        items, modality = max(1, budget // item.budget_tokens), item.modality
        cache = activation.bytes_for(items * item.embeddings * vision.output_width)
        forward, chunk_note = _forward_peak(vision, item, items, activation, encoder_chunk_budget_bytes)
        notes.append(f"vLLM encoder budget of {budget:,} tokens (max of max_num_batched_tokens and the largest "
                     f"{item.modality}'s {item.budget_tokens:,}): {count_noun(items, 'dummy ' + item.modality)} "
                     "encoded, "
                     f"{items * item.embeddings:,} output tokens held through the profile pass; the vision forward "
                     "peak is an estimate")
        notes += [chunk_note] if chunk_note else []
        if item.modality == "video" and not config.videos_per_request and not config.engine_default:
            notes.append(_unasked_video_note(config, item))
        if config.engine_default:
            notes.append(f"vLLM's default (no --limit-mm-per-prompt: 999 {item.modality}s per prompt) profiles the "
                         f"encoder although no request here carries one; {text_only_flags(vision)} or "
                         "--language-model-only switches it off (and leaves the tower unloaded)")
        elif not config.images_per_request and not config.videos_per_request:
            notes.append("--limit-mm-per-prompt only bounds the images and videos a prompt may carry: none is priced "
                         "per request here (set images or videos per request to count their tokens)")
    elif engine == "vllm":
        notes.append("--limit-mm-per-prompt 0 for every modality: vLLM skips the encoder profile")
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
        tokens_per_video=per_video, resized_video_width=video_w, resized_video_height=video_h,
        encoder_profile_modality=modality, encoder_profile_items=items,
        encoder_profile_default=bool(items) and config.engine_default, notes=tuple(notes))


def _unasked_video_note(config: MultimodalConfig, item) -> str:
    """Why the encoder profile runs dummy videos for requests that carry none (QA: Gemma 4 with images only).

    vLLM profiles every modality the model accepts whose ``--limit-mm-per-prompt`` is above 0, an unstated one
    counting 999 (vllm/config/multimodal.py ``get_limit_per_prompt``; vllm/multimodal/encoder_budget.py
    ``MultiModalBudget``: the tower modalities), and encodes the one with the most tokens per item
    (``get_modality_with_max_tokens``; vllm/v1/worker/gpu_model_runner.py ``profile_run``)."""
    image = profile_item(config.vision, videos_allowed=False)
    limit = config.limit_mm_per_prompt if config.limit_mm_per_prompt is not None else config.images_per_request
    return (f"No request here carries a video, but vLLM profiles every modality the model accepts unless "
            f"--limit-mm-per-prompt limits it (an unstated video limit is 999), and encodes the one with the most "
            f"tokens per item: a video's {item.budget_tokens:,} over an image's {image.budget_tokens:,}; "
            f"--limit-mm-per-prompt '{{\"image\": {limit}, \"video\": 0}}' profiles images instead")


def engine_default_media(vision: VisionConfig) -> MultimodalConfig:
    """What a vLLM launch without media flags profiles for a model with ``vision``: no image or video per request
    (none in the KV), every limit unstated (999 per modality), so the encoder profile of the module docstring
    runs as for any image limit above 0 (the items are bounded by the encoder budget, not the limit).

    Sources: vllm/v1/worker/gpu_model_runner.py ``GPUModelRunner.profile_run`` and model runner V2's
    (vllm/v1/worker/gpu/model_runner.py): a model that takes multimodal inputs encodes its dummy batch unless
    ``skip_mm_profiling`` (default False) or every modality's limit is 0 (``--language-model-only``);
    vllm/config/multimodal.py: an unstated modality's limit is 999 (``get_limit_per_prompt``; v0.11.0 documents 999
    for the V1 engine and 1 for V0, whose profile also encodes dummy images). The item count here is V1's.
    """
    return MultimodalConfig(vision=vision, images_per_request=0)


def text_only_flags(vision: VisionConfig) -> str:
    """vLLM's ``--limit-mm-per-prompt`` that limits every modality ``vision`` takes to 0 (no ``video`` key for a
    model that takes none, as :func:`launch_flags`)."""
    limits = '"image": 0, "video": 0' if vision.takes_video else '"image": 0'
    return f"--limit-mm-per-prompt '{{{limits}}}'"


def launch_flags(config: MultimodalConfig, engine: str) -> str:
    """The engine's flag bounding images and videos per prompt (vLLM ``--limit-mm-per-prompt``; never a ``video``
    key for a model without that modality).

    vLLM reads the flag per modality and gives every modality it does not name 999 items
    (vllm/config/multimodal.py ``MultiModalConfig.get_limit_per_prompt``), so a limit the user stated is carried
    as stated and an unstated modality is left out: ``{"video": 0}`` stays ``{"video": 0}``, not
    ``{"image": 1, "video": 0}``. Without any stated limit the flag bounds the modalities a request carries at
    their count (``--images-per-request 2`` gives ``{"image": 2}``) and names no other.

    SGLang and llama.cpp take no such bound (llama.cpp needs the tower's ``--mmproj`` file); vLLM's default
    (:func:`engine_default_media`) needs none.
    """
    if engine == "vllm" and config.engine_default:
        return ""  # vLLM's own default: no flag
    if engine == "vllm":
        stated = config.limit_mm_per_prompt is not None or config.limit_videos_per_prompt is not None
        limits = ((config.limit_mm_per_prompt, config.limit_videos_per_prompt) if stated
                  else (config.images_per_request or None, config.videos_per_request or None))
        named = [f'"{modality}": {limit}' for modality, limit in zip(("image", "video"), limits, strict=True)
                 if limit is not None and (modality == "image" or config.vision.takes_video)]
        return f"--limit-mm-per-prompt '{{{', '.join(named)}}}'" if named else ""
    if engine == "llama.cpp":
        return "--mmproj MMPROJ.gguf"
    return ""
