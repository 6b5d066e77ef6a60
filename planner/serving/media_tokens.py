"""The tokens an image or a video puts into the prompt, and the dummy item vLLM's encoder profile runs.

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

Gemma 3 (transformers models/gemma3/processing_gemma3.py ``Gemma3Processor``; vLLM
vllm/model_executor/models/gemma3_mm.py ``get_image_repl``): every image is resized to ``image_size`` square
(896 x 896) and each ``<start_of_image>`` becomes ``full_image_sequence`` = ``"\\n\\n"``, ``<start_of_image>``,
``mm_tokens_per_image`` (256) image tokens, ``<end_of_image>``, ``"\\n\\n"``: **260 tokens** whatever the image's
size (``"\\n\\n"`` is one token; vLLM merges it with a neighbouring ``"\\n"`` into ``"\\n\\n\\n"``, so a chat
prompt can come out one or two tokens shorter). Pan-and-scan crops (``do_pan_and_scan``) are off by default and
not priced.

Gemma 4 (transformers models/gemma4/image_processing_gemma4.py ``get_aspect_ratio_preserving_size``; vLLM
vllm/model_executor/models/gemma4_mm.py ``_compute_num_soft_tokens``, ``get_image_repl``): with T soft tokens
at most (280), pool k (3), patch p (16) and unit = k x p (48):

    scale  = sqrt(T x k^2 / ((h / p) x (w / p)))          (up or down: every image fills the budget)
    h', w' = max(unit, floor(side x scale / unit) x unit)
    tokens = min((h' / p) x (w' / p) / k^2, T) + 2 for <boi> and <eoi>

Worked example: 1,024 x 1,024: scale = sqrt(2,520 / 4,096) = 0.784, 803.2 px -> 16 x 48 = 768; 48 x 48 patches /
9 = 256 soft tokens + 2 = **258**. 1,920 x 1,080: scale 0.558, 1,056 x 576 px, 66 x 36 / 9 = 264 + 2 = 266.

Llama 4 (transformers models/llama4/image_processing_llama4_fast.py ``find_supported_resolutions``,
``get_best_fit``; processing_llama4.py ``_prompt_split_image``; vLLM vllm/model_executor/models/mllama4.py the same
functions): the canvases are every ``rows x cols`` grid of at most ``max_tiles`` (16) tiles of ``image_size``
(336) px; the image takes the one whose limiting side scales it least upward (``min(rows x 336 / h, cols x 336 /
w) >= 1``), else the one that shrinks it least, the smallest grid on a tie (``resize_to_max_canvas`` off). With
T = tokens per tile (144) and N = rows x cols:

    tokens = 1 (<|image_start|>) + [N x (T + 1): each tile's patches and a x / y separator, only when N > 1]
             + 1 (<|image|>) + T (the global tile) + 1 (<|image_end|>)

Worked example: 1,024 x 1,024: only 4 x 4 tiles (1,344 px a side) reach 1,024, so N = 16 and tokens = 1 + 16 x 145
+ 147 = **2,467**; a 336 x 336 image is one tile: 147.

Tokens per video (:func:`tokens_per_video`, Qwen only). Frames: ``--video-frames`` as given, or
``--video-seconds x fps`` with fps 2, clamped to [4, 768] frames (``Qwen3VLVideoProcessor.sample_frames``:
``fps = 2``, ``min_frames = 4``, ``max_frames = 768``, transformers models/qwen3_vl/video_processing_qwen3_vl.py);
an odd count is padded to a multiple of ``temporal_patch_size`` (``patchify``). Frame size:

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
tokenizer-dependent), which is not counted. The video processors' defaults are used because the repositories'
video_preprocessor_config.json files are not among the references.

The encoder profile's dummy item (:func:`profile_item`): vLLM profiles the modality with the most tokens per
item (``MultiModalBudget.get_modality_with_max_tokens``, vllm/multimodal/encoder_budget.py), counted by the
model's ``get_mm_max_tokens_per_item`` or, without one, by the dummy item's embeddings:

    Qwen-VL: the largest image, ``max_pixels / factor^2`` tokens (16,384), as many embeddings, x merge^2 patches.
    Gemma 3: one 896 x 896 image: 256 embeddings from (896 / 14)^2 = 4,096 patches.
    Gemma 4: a video while videos are allowed (``get_mm_max_tokens_per_item``: 32 frames x (70 + 2 + 6) =
        2,496 tokens), else an image (280). The dummies are 224 x 224 (``Gemma4DummyInputsBuilder``: the image
        processor states no size): an image fills 256 soft tokens, a frame 64 (70-token budget: 384 x 384 px),
        and the tower runs every patch slot, padding included (280 x 9 = 2,520 an image, 70 x 9 = 630 a frame).
    Llama 4: no ``get_mm_max_tokens_per_item``, so vLLM counts its dummy's embeddings (vllm/multimodal/
        encoder_budget.py ``get_mm_max_toks_per_item``: ``get_num_embeds``, the ``<|patch|>`` tokens only, mllama4.py
        ``select_text``). The dummy is ``image_size`` wide and ``max_tiles x image_size`` tall
        (``get_image_size_with_most_features``): 16 x 1 tiles + the global = 17 chunks x 144 = 2,448 embeddings,
        from 17 x (24^2 + 1 class token) = 9,809 patches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction

from planner.serving.vision_config import FAMILY_NAMES, VisionConfig

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
"""<|vision_start|> and <|vision_end|> around each image's pad tokens (Qwen chat templates); Gemma 4's <boi> and
<eoi> likewise."""

GEMMA3_WRAPPER_TOKENS = 4
"""``"\\n\\n"``, ``<start_of_image>``, ``<end_of_image>``, ``"\\n\\n"`` around Gemma 3's image tokens
(``Gemma3Processor.full_image_sequence``)."""

GEMMA4_VIDEO_FRAMES = 32
GEMMA4_VIDEO_SOFT_TOKENS = 70
GEMMA4_TIMESTAMP_TOKENS = 6
"""vLLM gemma4_mm.py ``_VIDEO_MAX_FRAMES``, ``_VIDEO_MAX_SOFT_TOKENS`` and the timestamp tokens per frame its
``get_mm_max_tokens_per_item`` allows for."""

GEMMA4_DUMMY_SIDE = 224
"""Side of vLLM's Gemma 4 dummy images and frames [pixels] (``Gemma4DummyInputsBuilder``: 224 when the image
processor states no ``size``)."""


def _gemma4_resized(vision: VisionConfig, width: int, height: int, max_tokens: int) -> tuple[int, int]:
    """``(width, height)`` of a Gemma 4 image with ``max_tokens`` soft tokens at most (module docstring)."""
    p, unit = vision.patch_size, vision.factor
    scale = math.sqrt(max_tokens * vision.spatial_merge_size ** 2 / ((height / p) * (width / p)))
    return (max(unit, math.floor(width * scale / unit) * unit), max(unit, math.floor(height * scale / unit) * unit))


def gemma4_soft_tokens(vision: VisionConfig, width: int, height: int, max_tokens: int | None = None) -> int:
    """Soft tokens of one Gemma 4 image (or frame) of ``width x height`` [tokens], without <boi> / <eoi>
    (module docstring; ``max_tokens`` None = the config's per-image budget)."""
    budget = vision.max_tokens_per_image if max_tokens is None else max_tokens
    w, h = _gemma4_resized(vision, width, height, budget)
    return min((w // vision.patch_size) * (h // vision.patch_size) // vision.spatial_merge_size ** 2, budget)


def llama4_grid(vision: VisionConfig, width: int, height: int) -> tuple[int, int]:
    """``(rows, cols)`` of the tile canvas Llama 4's processor fits a ``width x height`` image onto (module
    docstring: ``get_best_fit`` over ``find_supported_resolutions``, in exact fractions where transformers divides
    in float32). Ties in scale go to the smallest grid, the first listed on equal area."""
    grids = [(rows, tiles // rows) for tiles in range(vision.max_tiles, 0, -1)
             for rows in range(1, tiles + 1) if tiles % rows == 0]
    by_ratio: dict[Fraction, list[tuple[int, int]]] = {}
    for rows, cols in grids:  # transformers groups the grids by aspect ratio, in first-seen order
        by_ratio.setdefault(Fraction(rows, cols), []).append((rows, cols))
    ordered = [grid for group in by_ratio.values() for grid in group]
    side = vision.image_size
    scales = [min(Fraction(rows * side, height), Fraction(cols * side, width)) for rows, cols in ordered]
    up = [s for s in scales if s >= 1]
    chosen = min(up) if up else max(scales)
    return min((g for g, s in zip(ordered, scales, strict=True) if s == chosen), key=lambda g: g[0] * g[1])


def llama4_image_tokens(vision: VisionConfig, tiles: int) -> int:
    """Prompt tokens of a Llama 4 image cut into ``tiles`` tiles (module docstring)."""
    per_tile = vision.tokens_per_tile
    return (tiles * (per_tile + 1) if tiles > 1 else 0) + per_tile + 3


def resized(vision: VisionConfig, width: int, height: int) -> tuple[int, int]:
    """``(width, height)`` the processor resizes an image to [pixels] (module docstring: ``smart_resize``;
    Gemma 3 its fixed square; Gemma 4 the soft-token budget; Llama 4 its tile canvas, padding included).

    Raises:
        ValueError: a side under 1 pixel.
    """
    if width < 1 or height < 1:
        raise ValueError(f"image sides must be at least 1 pixel, got {width} x {height}")
    if vision.family == "gemma3":
        return vision.image_size, vision.image_size
    if vision.family == "gemma4":
        return _gemma4_resized(vision, width, height, vision.max_tokens_per_image)
    if vision.family == "llama4":
        rows, cols = llama4_grid(vision, width, height)
        return cols * vision.image_size, rows * vision.image_size
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
    """Tokens one image of ``width x height`` puts into the prompt, delimiters included [tokens] (module
    docstring).

    Raises:
        ValueError: a side under 1 pixel.
    """
    w, h = resized(vision, width, height)
    if vision.family == "gemma3":
        return vision.max_tokens_per_image + GEMMA3_WRAPPER_TOKENS
    if vision.family == "gemma4":
        return gemma4_soft_tokens(vision, width, height) + DELIMITER_TOKENS
    if vision.family == "llama4":
        return llama4_image_tokens(vision, w * h // vision.image_size ** 2)
    patches = (w // vision.patch_size) * (h // vision.patch_size)
    return patches // (vision.spatial_merge_size ** 2) + DELIMITER_TOKENS


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
        ValueError: a family whose videos are not priced, fewer frames than ``temporal_patch_size`` or a side
            under 1 pixel.
    """
    if not vision.supports_video:
        raise ValueError(f"{FAMILY_NAMES[vision.family]} videos are not priced: Gemma 3 takes no video, and Gemma "
                         "4's timestamped frames are not modelled; send the frames as images instead, or drop the "
                         "video flags")
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


@dataclass(frozen=True)
class ProfileItem:
    """One dummy item of vLLM's encoder profile (module docstring).

    Attributes:
        modality: ``image`` or ``video``.
        budget_tokens: Its tokens as vLLM's encoder budget counts them [tokens].
        embeddings: Encoder outputs it leaves in the encoder cache [tokens].
        patches: Patches the tower runs on for it, padding included [patches].
        frames: Images the tower encodes for it (a video's frames; 1 for an image).
    """

    modality: str
    budget_tokens: int
    embeddings: int
    patches: int
    frames: int = 1


def profile_item(vision: VisionConfig, *, videos_allowed: bool, video_tokens: int = 0) -> ProfileItem:
    """The dummy item vLLM profiles the encoder with (module docstring).

    Args:
        vision: The model's vision fields.
        videos_allowed: Whether the video limit is above 0 (an unstated limit counts 999).
        video_tokens: Tokens of the request's own video (Qwen-VL: the item is the larger of it and the
            largest image) [tokens].
    """
    merge2 = vision.spatial_merge_size ** 2
    if vision.family == "gemma3":
        tokens = vision.max_tokens_per_image
        return ProfileItem("image", tokens, tokens, (vision.image_size // vision.patch_size) ** 2)
    if vision.family == "gemma4":
        side = GEMMA4_DUMMY_SIDE
        if videos_allowed:
            frames, per_frame = GEMMA4_VIDEO_FRAMES, GEMMA4_VIDEO_SOFT_TOKENS
            budget = frames * (per_frame + DELIMITER_TOKENS + GEMMA4_TIMESTAMP_TOKENS)
            return ProfileItem("video", budget, frames * gemma4_soft_tokens(vision, side, side, per_frame),
                               frames * per_frame * merge2, frames)
        tokens = vision.max_tokens_per_image
        return ProfileItem("image", tokens, gemma4_soft_tokens(vision, side, side), tokens * merge2)
    if vision.family == "llama4":
        rows, cols = llama4_grid(vision, vision.image_size, vision.max_tiles * vision.image_size)
        chunks = rows * cols + 1 if rows * cols > 1 else 1  # the tiles and the global tile (mllama4.py)
        embeddings = chunks * vision.tokens_per_tile
        patches = chunks * ((vision.image_size // vision.patch_size) ** 2 + 1)  # and a class token a chunk
        return ProfileItem("image", embeddings, embeddings, patches)
    largest = max(vision.max_tokens_per_image, video_tokens)
    return ProfileItem("video" if video_tokens > vision.max_tokens_per_image else "image", largest, largest,
                       largest * merge2)
