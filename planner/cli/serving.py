"""Serving-feature flags of ``python -m planner plan`` and ``find`` (vLLM's flag names).

Flags: ``--enable-lora --max-loras --max-lora-rank --max-cpu-loras --lora-dtype`` (vLLM's names;
with ``--engine sglang`` they price SGLang's ``--max-loras-per-batch`` pool, whose
``--lora-target-modules`` is the one SGLang-only flag); ``--speculative-config JSON`` (vLLM's:
``method``, ``model``, ``num_speculative_tokens``, ``draft_vocab_size``) or its parts
``--speculative-method --num-speculative-tokens --speculative-model`` (the older vLLM flag names; they
override the JSON). A ``draft_model`` is read from the catalog; MTP layers from the model's config
(``num_nextn_predict_layers`` / ``mtp_num_hidden_layers``). KV offload: ``--kv-offloading-size GiB
--kv-offloading-backend {native,lmcache}`` (vLLM V1; SGLang's ``--hicache-size``), ``--swap-space GiB``
(vLLM V0 only), ``--host-link-gb-s`` (the host link; default: the catalog GPU's ``host_link``,
model_catalog/gpus.json, read by :func:`catalog_host_link`). Images: ``--images-per-request N --image-width PX
--image-height PX`` (the workload; default 1,024 x 1,024), videos: ``--videos-per-request N --video-frames F
| --video-seconds S --video-width PX --video-height PX`` (default 16 frames of 448 x 448), and vLLM's
``--limit-mm-per-prompt '{"image": N, "video": M}'``, priced from the model config's ``vision_config``
(Qwen2-VL / 2.5-VL / 3-VL / 3.5, Gemma 3, Gemma 4; videos for the Qwen families). ``--limit-mm-per-prompt
'{"image": 0, "video": 0}'`` (Gemma 3: ``'{"image": 0}'``) or ``--language-model-only`` serve the text model
only: the plan drops the towers' weights (:func:`served_model`); :func:`model_keys` adds the multimodal and
``params_source`` JSON keys.

With none of them given the request carries no serving features and the JSON stays byte-identical;
with any, ``plan`` adds a ``serving`` key (:attr:`planner.budget.Plan.serving`) and ``find`` sizes
every setup with the features on and writes their flags into each launch command.

This module is a CLI edge like :mod:`planner.cli.engine`: it may read the catalog, inside functions.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping

from planner.cli.args import gib_amount, human_bytes, json_flag, non_negative_int, positive_float, positive_int
from planner.serving import LoRAConfig, ServingFeatures
from planner.serving.features import budget_features, engine_family, with_engine_defaults
from planner.serving.lora import MAX_TARGET_MODULES
from planner.serving.multimodal import MultimodalConfig, video_frames, vision_from_config
from planner.serving.offload import OFFLOAD_BACKENDS, OffloadConfig, link_of_gpu
from planner.serving.speculative import (
    DRAFT_PLACEHOLDERS,
    PASSTHROUGH_KEYS,
    MODEL_FREE_METHODS,
    SPECULATIVE_METHODS,
    SpeculativeConfig,
    infer_method,
    mtp_layers_from_config,
)
from planner.text import count_noun, quote

LORA_DTYPE_NAMES = {"auto": "auto", "bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16"}
"""``--lora-dtype`` spellings: vLLM's (auto, bfloat16, float16) and the planner's short names."""

LORA_FLAGS = ("max_loras", "max_lora_rank", "max_cpu_loras", "lora_dtype", "lora_target_modules")
"""LoRA flags that need ``--enable-lora``."""


def add_serving_arguments(p: argparse.ArgumentParser) -> None:
    """Register the serving-feature flags on ``p`` (all default to None / off)."""
    g = p.add_argument_group("serving features (vLLM flag names; see README 'Serving features')")
    g.add_argument("--enable-lora", action="store_true", default=None,
                   help="preallocate LoRA adapter slots on every GPU (vLLM --enable-lora)")
    g.add_argument("--max-loras", type=positive_int, default=None,
                   help="adapter slots per GPU (default 1; SGLang --max-loras-per-batch)")
    g.add_argument("--max-lora-rank", type=positive_int, default=None, help="largest adapter rank (default 16)")
    g.add_argument("--max-cpu-loras", type=positive_int, default=None,
                   help="adapters cached in host memory (default --max-loras; SGLang --max-loaded-loras)")
    g.add_argument("--lora-dtype", choices=tuple(LORA_DTYPE_NAMES), default=None,
                   help="adapter dtype (default auto = the model's activation dtype)")
    g.add_argument("--lora-target-modules", nargs="+", default=None, metavar="MODULE",
                   help=f"SGLang only: modules with slots (default all; at most {MAX_TARGET_MODULES} names, a repeat "
                        "counts once); vLLM allocates every supported module")
    g.add_argument("--speculative-config", default=None, metavar="JSON",
                   help='vLLM\'s speculative config, e.g. \'{"method": "eagle3", "num_speculative_tokens": 3}\' '
                        f"(methods: {', '.join(SPECULATIVE_METHODS)})")
    g.add_argument("--speculative-method", choices=SPECULATIVE_METHODS, default=None,
                   help="the config's method (draft_model needs --speculative-model)")
    g.add_argument("--num-speculative-tokens", type=positive_int, default=None,
                   help="draft tokens per step (default 1; MTP: the model's next-n layers)")
    g.add_argument("--speculative-model", default=None, metavar="ID",
                   help="draft model (catalog id, for draft_model) or the EAGLE head's repo id (launch command only)")
    g.add_argument("--kv-offloading-size", type=gib_amount, default=None, metavar="GIB",
                   help="host KV buffer in GiB, server-wide (vLLM V1; with --engine sglang: --hicache-size GB "
                        "per rank)")
    g.add_argument("--kv-offloading-backend", choices=OFFLOAD_BACKENDS, default=None,
                   help="vLLM's offload backend (default native)")
    g.add_argument("--swap-space", type=gib_amount, default=None, metavar="GIB",
                   help="vLLM V0 CPU swap space per GPU in GiB (V1 ignores it)")
    g.add_argument("--host-link-gb-s", type=positive_float, default=None, metavar="GB_S",
                   help="host link per direction in GB/s (default: the GPU's, e.g. PCIe 5.0 x16 = 63)")
    g.add_argument("--images-per-request", type=non_negative_int, default=None,
                   help="images each request carries (Qwen-VL, Gemma 3 / 4 models; their tokens join each sequence)")
    g.add_argument("--image-width", type=positive_int, default=None, metavar="PX", help="image width (default 1024)")
    g.add_argument("--image-height", type=positive_int, default=None, metavar="PX", help="image height (default 1024)")
    g.add_argument("--limit-mm-per-prompt", default=None, metavar="JSON",
                   help='vLLM\'s per-prompt limit, e.g. \'{"image": 2, "video": 1}\' (it bounds; the items a request '
                        "carries are --images-per-request / --videos-per-request); '{\"image\": 0, \"video\": 0}' "
                        "serves text only (no vision tower, no encoder profile)")
    add_multimodal_arguments(g)


def add_multimodal_arguments(g) -> None:
    """The video and text-only flags (vLLM's names): ``--videos-per-request --video-frames | --video-seconds
    --video-width --video-height`` and ``--language-model-only`` (vLLM's shorthand for every modality limited to 0)."""
    g.add_argument("--videos-per-request", type=non_negative_int, default=None,
                   help="videos each request carries (Qwen3-VL / Qwen3.5 / Qwen2.5-VL; their tokens join each sequence)")
    g.add_argument("--video-frames", type=positive_int, default=None, help="frames per video after sampling (default 16)")
    g.add_argument("--video-seconds", type=positive_float, default=None,
                   help="clip length instead of --video-frames: frames = seconds x 2 fps, 4 to 768")
    g.add_argument("--video-width", type=positive_int, default=None, metavar="PX", help="frame width (default 448)")
    g.add_argument("--video-height", type=positive_int, default=None, metavar="PX", help="frame height (default 448)")
    g.add_argument("--language-model-only", action="store_true", default=None,
                   help="serve the text model only: the vision / audio towers are not loaded (vLLM "
                        "--language-model-only, the same as --limit-mm-per-prompt '{\"image\": 0, \"video\": 0}')")


VIDEO_FLAGS = ("videos_per_request", "video_frames", "video_seconds", "video_width", "video_height")
"""Flags describing the videos of a request."""


def mm_limits(args: argparse.Namespace) -> tuple[int | None, int | None]:
    """``(image limit, video limit)`` of ``--limit-mm-per-prompt`` (None = unstated, vLLM's 999); both 0 under
    ``--language-model-only``. Values may be counts or vLLM's ``{"count": N, ...}`` objects
    (vllm/config/multimodal.py ``limit_per_prompt``).

    Raises:
        ValueError: text that is not such JSON (one sentence with an example).
    """
    if getattr(args, "language_model_only", None):
        return 0, 0
    text = getattr(args, "limit_mm_per_prompt", None)
    if text is None:
        return None, None
    example = "--limit-mm-per-prompt takes JSON such as '{\"image\": 2, \"video\": 1}'"
    parsed = json_flag(text, "--limit-mm-per-prompt", "'{\"image\": 2, \"video\": 1}'")
    if isinstance(parsed, int) and not isinstance(parsed, bool):
        parsed = {"image": parsed}
    if not isinstance(parsed, dict):
        raise ValueError(f"{example}, got {quote(text)}")
    limits = []
    for key in ("image", "video"):
        value = parsed.get(key)
        if isinstance(value, dict):
            value = value.get("count", 999)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise ValueError(f"{example} (whole numbers >= 0), got {quote(text)}")
        limits.append(value)
    return limits[0], limits[1]


def text_only_requested(args: argparse.Namespace, raw_config: Mapping | None = None) -> bool:
    """True when the server loads no tower: ``--language-model-only``, or every modality the model takes limited
    to 0 (image and video; a Gemma 3, which takes images only, with ``{"image": 0}``: vLLM builds a tower under
    ``_mark_tower_model`` only for modalities left on, vllm/model_executor/models/interfaces.py).

    Args:
        args: Parsed flags.
        raw_config: The model's config.json; None = read it from the flags when the image limit alone is 0.
    """
    images, videos = mm_limits(args)
    if (images, videos) == (0, 0):
        return True
    if images != 0 or videos is not None:
        return False
    vision = vision_from_config(raw_model_config(args) if raw_config is None else raw_config)
    return vision is not None and not vision.takes_video


def served_model(args: argparse.Namespace, model):
    """The spec the flags' server holds: ``model`` without towers when text only
    (:func:`planner.serving.multimodal.text_only`), else ``model``."""
    from planner.serving.multimodal import text_only

    return text_only(model) if text_only_requested(args) else model


def model_keys(args: argparse.Namespace, model, num_gpus: int) -> dict:
    """Extra ``plan`` JSON keys about what the parameter count is and what is loaded.

    ``params_source`` / ``params_expected_error`` for models given by file (``--config``: ``estimate`` for the
    generic reading, :data:`model_catalog.generic.PARAMS_EXPECTED_ERROR`; ``exact`` for a family adapter;
    ``by source``; ``--gguf``: ``exact``, the header's tensors) and for multimodal catalog models (the
    verification table's status); plus, for a multimodal model, ``text_only``, ``text_params``,
    ``multimodal_params``, ``multimodal_weight_bytes`` (the towers and projectors, in the plan's weight dtype,
    whole model), ``multimodal_weight_bytes_per_gpu`` and ``multimodal_towers`` ("vision tower 1.07 GiB").
    Empty for a text-only catalog model, so its JSON is unchanged.
    """
    from planner.model.dtypes import weight_dtype
    from planner.serving.multimodal import (is_multimodal, text_only, tower_parameters, tower_summary,
                                            tower_weight_bytes)

    out: dict = {}
    custom = getattr(args, "config", None) is not None or getattr(args, "gguf", None) is not None
    if custom or is_multimodal(model):
        out |= params_source(args, model)
    if is_multimodal(model):
        fmt = weight_dtype(args.weight_dtype)
        out |= {"text_only": text_only_requested(args), "text_params": text_only(model).num_parameters,
                "multimodal_params": tower_parameters(model),
                "multimodal_weight_bytes": tower_weight_bytes(model, fmt),
                "multimodal_weight_bytes_per_gpu": tower_weight_bytes(model, fmt, num_gpus),
                "multimodal_towers": tower_summary(model, fmt)}
    return out


def params_source(args: argparse.Namespace, model) -> dict:
    """``{"params_source": ..., "params_expected_error": ...}`` (:func:`model_keys`)."""
    from model_catalog.generic import PARAMS_EXPECTED_ERROR
    from model_catalog.hf_config import ADAPTERS, BY_SOURCE_MODEL_TYPES

    if getattr(args, "gguf", None) is not None:
        return {"params_source": "exact", "params_expected_error": None}
    kind = model.model_type.rsplit("/", 1)[-1]
    if getattr(args, "config", None) is not None:
        source = "by source" if kind in BY_SOURCE_MODEL_TYPES else "exact" if kind in ADAPTERS else "estimate"
    else:
        from model_catalog.verification import load_verification

        from model_catalog import catalog_id_or_none

        rows = {row["model_id"]: row["status"] for row in load_verification()["models"]}
        source = rows.get(catalog_id_or_none(model.model_id) or model.model_id, "exact")  # an alias: its entry's
    return {"params_source": source, "params_expected_error": PARAMS_EXPECTED_ERROR if source == "estimate" else None}


def speculative_from_args(args: argparse.Namespace, raw_config: Mapping | None) -> SpeculativeConfig | None:
    """The speculative request of ``--speculative-config`` and its part flags, or None.

    Raises:
        ValueError: bad JSON, an unknown key, a draft model the catalog lacks, or parts without a method.
    """
    spec: dict = {}
    if getattr(args, "speculative_config", None) is not None:
        spec = json_flag(args.speculative_config, "--speculative-config",
                         '\'{"method": "eagle", "num_speculative_tokens": 3}\'')
        if not isinstance(spec, dict):
            raise ValueError("--speculative-config must be a JSON object with method and num_speculative_tokens")
        unknown = sorted(set(spec) - {"method", "model", "num_speculative_tokens", "draft_vocab_size"}
                         - PASSTHROUGH_KEYS)
        if unknown:
            keys = f"keys {unknown} are" if len(unknown) > 1 else f"key {unknown} is"
            raise ValueError(f"--speculative-config {keys} not modelled; use method, model, "
                             "num_speculative_tokens, draft_vocab_size (and an n-gram's prompt_lookup_max / "
                             "prompt_lookup_min)")
        _require_draft_tokens(spec)
    for key, flag in (("method", "speculative_method"), ("num_speculative_tokens", "num_speculative_tokens"),
                      ("model", "speculative_model")):
        if getattr(args, flag, None) is not None:
            spec[key] = getattr(args, flag)
    if not spec:
        return None
    method = spec.get("method")
    model_id = spec.get("model") or ""
    if method == "[ngram]":
        method = "ngram"  # vLLM's other spelling
    placeholder_of = {name: head for head, name in DRAFT_PLACEHOLDERS.items()}
    placeholder = model_id in placeholder_of and method in (None, placeholder_of[model_id])
    if placeholder:  # the planner's own launch command: a head still to be named, priced from the target's shapes
        method, model_id = placeholder_of[model_id], ""
    if method is None or (method == "draft_model" and model_id):
        method = infer_method(model_id, _draft_config(model_id))  # as vLLM detects it (speculative.py)
    if (method in HEAD_METHODS and not model_id and not placeholder
            and getattr(args, "speculative_config", None) is not None):
        raise ValueError(f"--speculative-config asks for {method} without its head: vLLM stops with \"num_speculative_"
                         "tokens was provided but without speculative model\" (vllm/config/speculative.py); add "
                         "\"model\": the head's repo (for example yuhuili/EAGLE3-LLaMA3.1-Instruct-8B), or plan the "
                         "head from the target's shapes with --speculative-method " + method)
    if method in MODEL_FREE_METHODS:
        model_id = ""  # n-gram loads no draft: a JSON's head under --speculative-method ngram is dropped
    if method == "deepseek_mtp" or (isinstance(method, str) and method.endswith("_mtp")):
        method = "mtp"  # vLLM folds the per-family MTP names into "mtp"
    layers = mtp_layers_from_config(raw_config or {})
    draft = None
    if method == "draft_model" and model_id:
        from model_catalog import served_model_spec

        draft = served_model_spec(model_id)  # an alias draft keeps its id in the launch command
        model_id = draft.model_id
    tokens = spec.get("num_speculative_tokens") or (layers if method == "mtp" and layers else 1)
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise ValueError(f"num_speculative_tokens must be a whole number, got {tokens!r}")
    passthrough = tuple((key, _whole(spec[key], key)) for key in sorted(PASSTHROUGH_KEYS) if key in spec)
    return SpeculativeConfig(method=method, num_speculative_tokens=tokens, draft=draft, draft_model_id=model_id,
                             num_mtp_layers=layers, draft_vocab_size=spec.get("draft_vocab_size") or 32000,
                             passthrough=passthrough)


HEAD_METHODS = frozenset(DRAFT_PLACEHOLDERS)
"""Methods whose draft is a head checkpoint vLLM must be given (``"model"``)."""


def _whole(value, key: str) -> int:
    """A whole-number ``--speculative-config`` value, else ValueError naming the key."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"--speculative-config {key} must be a whole number >= 1, got {value!r}")
    return value


def _require_draft_tokens(spec: Mapping) -> None:
    """vLLM's rule for a ``--speculative-config`` that names a draft model but no ``num_speculative_tokens``:
    only a draft whose config.json has ``n_predict`` (an MTP module, an MLP speculator) sets it; otherwise vLLM
    stops ("num_speculative_tokens must be provided with speculative model unless the draft model config
    contains an n_predict parameter", vllm/config/speculative.py ``SpeculativeConfig.__post_init__``). An
    n-gram proposer or an MTP request (its own next-n layers) needs no draft.

    Raises:
        ValueError: a named draft without ``num_speculative_tokens`` whose catalog config has no ``n_predict``.
    """
    model_id = spec.get("model")
    method = spec.get("method") or ""
    if spec.get("num_speculative_tokens") is not None or not model_id or model_id in ("ngram", "[ngram]"):
        return
    if method == "mtp" or method.endswith("_mtp") or method in ("ngram", "[ngram]"):
        return
    config = _draft_config(model_id) or {}
    if config.get("n_predict"):
        return
    raise ValueError(f"--speculative-config names draft {model_id!r} but no num_speculative_tokens; vLLM needs it "
                     "unless the draft's config.json has n_predict: add \"num_speculative_tokens\": 3 (published "
                     "setups draft 1-8 tokens)")


def _draft_config(model_id: str) -> Mapping | None:
    """The catalog's config.json of draft ``model_id`` (None when the catalog lacks it), for the method vLLM
    would detect from it (:func:`planner.serving.speculative.infer_method`)."""
    if not model_id or model_id in ("ngram", "[ngram]"):
        return None
    try:
        from model_catalog import get_model_entry

        return get_model_entry(model_id).config
    except (ValueError, KeyError):
        return None


def _multimodal_from_args(args: argparse.Namespace, raw_config: Mapping) -> MultimodalConfig | None:
    """The images and videos the flags describe, or None when no media flag is given (vLLM's default, priced by
    :func:`planner.serving.features.with_engine_defaults`) or the towers are off.

    A bare ``--limit-mm-per-prompt`` only bounds: vLLM puts no item into a request, so no image or video is priced
    per request (as on the pages, ui/serving.py), while the limit still sizes the encoder profile; an image size
    (``--image-width`` / ``--image-height``) or a video flag asks for one item of that modality.

    Raises:
        ValueError: image or video flags for a model without a vision config the planner reads, flags beside a
            text-only switch, or a bad limit.
    """
    image_limit, video_limit = mm_limits(args)
    image_names = ("images_per_request", "image_width", "image_height")
    asked = [n for n in (*image_names, *VIDEO_FLAGS) if getattr(args, n, None) is not None]
    if text_only_requested(args, raw_config):
        if asked:
            flag = "--" + asked[0].replace("_", "-")
            raise ValueError(f"{flag} sends images or videos, but the server is text only (--language-model-only "
                             "or --limit-mm-per-prompt with image and video 0); drop one of them")
        return None
    if not asked and getattr(args, "limit_mm_per_prompt", None) is None:
        return None
    vision = vision_from_config(raw_config)
    if vision is None:
        raise ValueError("image and video flags need a vision-language model whose config.json has a vision_config "
                         "the planner reads (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5, Gemma 3, Gemma 4, Llama 4); "
                         "this one has none (Gemma 3 4B / 12B catalog copies are the text model only: use "
                         "google/gemma-3-27b-it)")
    if getattr(args, "video_frames", None) is not None and getattr(args, "video_seconds", None) is not None:
        raise ValueError("give --video-frames or --video-seconds, not both")
    videos = getattr(args, "videos_per_request", None)
    if videos is None:
        videos = 1 if any(getattr(args, n, None) is not None for n in VIDEO_FLAGS) else 0
    frames = args.video_frames or (video_frames(args.video_seconds) if args.video_seconds else 16)
    images = args.images_per_request
    if images is None:  # an image size asks for one image; a limit only bounds (vLLM puts no item in a request)
        sized = any(getattr(args, n, None) is not None for n in image_names)
        images = 1 if sized and image_limit != 0 else 0
    return MultimodalConfig(vision=vision, images_per_request=images, image_width=args.image_width or 1024,
                            image_height=args.image_height or 1024, limit_mm_per_prompt=image_limit,
                            videos_per_request=videos, video_frames=frames, video_width=args.video_width or 448,
                            video_height=args.video_height or 448, limit_videos_per_prompt=video_limit)


def raw_model_config(args: argparse.Namespace) -> Mapping:
    """The raw config.json of the planned model (``--model`` from the catalog, ``--config`` from its file), for
    the keys the spec does not carry (``num_nextn_predict_layers``); empty for a GGUF or an unknown id."""
    try:
        if getattr(args, "config", None) is not None:  # the same capped read as the plan's (model_catalog.custom)
            from pathlib import Path

            from model_catalog.config_bounds import check_sizes
            from model_catalog.custom import MAX_CONFIG_BYTES, parse_config_json, read_regular_file

            raw = parse_config_json(read_regular_file(Path(args.config), MAX_CONFIG_BYTES))
            check_sizes(raw)  # the file may have changed since the plan's own (checked) read
            return raw
        if getattr(args, "model", None):
            from model_catalog import get_model_entry

            return get_model_entry(args.model).config
    except (OSError, ValueError):
        pass
    return {}


def catalog_host_link(args: argparse.Namespace) -> tuple[float | None, str, str]:
    """The host link the offload flags price: ``--host-link-gb-s`` when given, else the ``--gpu``'s catalog
    entry (:func:`link_of_gpu`); unknown (None) when neither states one."""
    if getattr(args, "host_link_gb_s", None) is not None:
        return args.host_link_gb_s, "", ""
    gpu_id = getattr(args, "gpu", None)
    if not gpu_id:
        return None, "", ""
    from model_catalog.gpus import get_gpu

    try:
        return link_of_gpu(get_gpu(gpu_id))
    except ValueError:
        return None, "", ""


def serving_from_args(args: argparse.Namespace, *, engine: str | None = None,
                      raw_config: Mapping | None = None) -> ServingFeatures | None:
    """The :class:`ServingFeatures` the flags ask for, with vLLM's default encoder profile for a vision model
    planned without media flags (:func:`planner.serving.features.with_engine_defaults`, as the pages); None when
    no serving flag is given and the engine does nothing unasked.

    Args:
        args: Parsed ``plan`` / ``find`` arguments.
        engine: Engine profile id whose rules apply; None = ``args.engine`` or vLLM.
        raw_config: The model's config.json (for its MTP layers); None = read it from the flags.

    Raises:
        ValueError: a LoRA flag without ``--enable-lora``, or an invalid value (one line, exit 2).
    """
    lora = None
    if getattr(args, "enable_lora", None):
        lora = LoRAConfig(
            max_loras=args.max_loras or 1, max_lora_rank=args.max_lora_rank or 16, max_cpu_loras=args.max_cpu_loras,
            lora_dtype=LORA_DTYPE_NAMES[args.lora_dtype or "auto"],
            target_modules=None if args.lora_target_modules is None else tuple(args.lora_target_modules))
    else:
        stray = [name for name in LORA_FLAGS if getattr(args, name, None) is not None]
        if stray:
            flag = "--" + stray[0].replace("_", "-")
            raise ValueError(f"{flag} sizes LoRA adapter slots: add --enable-lora (as vLLM needs), or drop {flag}")
    wants_spec = any(getattr(args, name, None) is not None for name in (
        "speculative_config", "speculative_method", "num_speculative_tokens", "speculative_model"))
    wants_images = any(getattr(args, name, None) is not None for name in (
        "images_per_request", "image_width", "image_height", "limit_mm_per_prompt", "language_model_only",
        *VIDEO_FLAGS))
    if raw_config is None:  # also for vLLM's default encoder profile (with_engine_defaults)
        raw_config = raw_model_config(args)
    speculative = speculative_from_args(args, raw_config) if wants_spec else None
    multimodal = _multimodal_from_args(args, raw_config or {}) if wants_images else None
    offload = None
    if getattr(args, "kv_offloading_size", None) is not None or getattr(args, "swap_space", None) is not None:
        rate, name, source = catalog_host_link(args)
        offload = OffloadConfig(kv_offloading_size=args.kv_offloading_size, swap_space=args.swap_space,
                                kv_offloading_backend=args.kv_offloading_backend or "native",
                                host_link_gb_s=rate, host_link_name=name, host_link_source=source)
    else:
        for name in ("kv_offloading_backend", "host_link_gb_s"):
            if getattr(args, name, None) is not None:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} describes KV offload: add --kv-offloading-size GiB (or --swap-space for "
                                 f"vLLM V0), or drop {flag}")
    engine = engine or getattr(args, "engine", None) or "vllm"
    features = ServingFeatures(engine=engine, lora=lora, speculative=speculative, offload=offload,
                               multimodal=multimodal)
    features = with_engine_defaults(features if features.enabled else None, engine=engine, raw_config=raw_config,
                                    text_only=text_only_requested(args, raw_config))
    if features is not None:
        features.validate()
    return features


def budget_serving_from_args(args: argparse.Namespace) -> ServingFeatures | None:
    """What ``plan``'s budget prices: :func:`serving_from_args` under ``args.engine``, with vLLM's default encoder
    profile under another engine too when no feature is asked (:func:`planner.serving.features.budget_features`,
    as Home's budget); the engine section keeps :func:`serving_from_args`."""
    raw_config = raw_model_config(args)
    return budget_features(serving_from_args(args, raw_config=raw_config), engine=getattr(args, "engine", None)
                           or "vllm", raw_config=raw_config, text_only=text_only_requested(args, raw_config))


def serving_table_lines(serving: dict) -> list[str]:
    """Lines appended to the ``plan`` table for the ``serving`` JSON block."""
    def g(n: int) -> str:
        return f"{n / (1 << 30):,.2f} GiB"

    head = (f"serving      {serving['engine']}: +{g(serving['extra_weights_bytes_per_gpu'])} weights, "
            f"+{g(serving['extra_activation_bytes_per_gpu'])} activation, "
            f"+{serving['extra_tokens_per_sequence']:,} tokens per sequence; host "
            f"{g(serving['host_bytes_per_gpu'])} per GPU")
    lines = [head]
    lora = serving.get("lora")
    if lora:
        lines.append(f"LoRA         {lora['max_loras']} slots of rank {lora['max_lora_rank']} ({lora['lora_dtype']}): "
                     f"{g(lora['bytes_per_adapter_slot'])} per adapter slot, {g(lora['adapter_slot_bytes'])} in all; "
                     f"{lora['max_loras_that_fit']:,} slots fit beside this batch's KV cache")
    spec = serving.get("speculative")
    if spec:
        lines.append(f"speculative  {spec['method']}, {count_noun(spec['num_speculative_tokens'], 'draft token')}: "
                     f"+{g(spec['draft_weights_bytes_per_gpu'])} drafter weights, "
                     f"+{human_bytes(spec['draft_kv_cache_bytes_per_token_per_gpu'])} KV per token, "
                     f"+{spec['extra_tokens_per_sequence']} slots per sequence")
    mm = serving.get("multimodal")
    if mm and mm.get("videos_per_request"):
        lines.append(f"videos       {mm['videos_per_request']} x {mm['video_frames']} frames of "
                     f"{mm['resized_video_width']} x {mm['resized_video_height']} px: {mm['tokens_per_video']:,} "
                     "tokens each")
    if mm and mm.get("encoder_profile_default"):
        lines.append(f"images       none per request; vLLM's default encoder profile: vision tower "
                     f"{g(mm['vision_weights_bytes_per_gpu'])}, encoder cache {g(mm['encoder_cache_bytes'])} "
                     f"({mm['encoder_budget_tokens']:,} tokens)")
    elif mm:
        lines.append(f"images       {mm['images_per_request']} x {mm['resized_width']} x {mm['resized_height']} px: "
                     f"{mm['tokens_per_image']:,} tokens each, {mm['tokens_per_request']:,} per request; vision tower "
                     f"{g(mm['vision_weights_bytes_per_gpu'])}, encoder cache {g(mm['encoder_cache_bytes'])} "
                     f"({mm['encoder_budget_tokens']:,} tokens)")
    off = serving.get("offload")
    if off:
        if off["supported"]:
            per_token = off["seconds_per_token_moved"]
            timing = (f"; {per_token * 1e6:,.2f} us per token, {off['seconds_per_sequence_moved'] * 1e3:,.1f} ms per "
                      f"sequence over {off['host_link']} ({off['host_link_gb_s']:g} GB/s, estimate)"
                      if per_token is not None else f"; host link {off['host_link']}: no copy time priced")
            lines.append(f"offload      {off['mechanism']}: {g(off['host_bytes_per_gpu'])} host per GPU holds "
                         f"{off['host_kv_capacity_tokens']:,} tokens beside {off['gpu_kv_capacity_tokens']:,} on the "
                         f"GPU{timing}")
        else:
            lines.append(f"offload      not modelled: {off['notes'][0]}")
    for engine, flags in _one_heading_per_flags(serving["launch_flags"], serving["engine"]).items():
        lines.append(f"  {engine} flags: {flags}")
    lines += [f"  note: {n}" for n in serving["notes"]]
    return lines


def _one_heading_per_flags(launch_flags: dict[str, str], planned: str) -> dict[str, str]:
    """``launch_flags`` with one entry per engine family and flag text: ``vllm`` and ``vllm-v0.28`` take the same
    ``--limit-mm-per-prompt``, printed once under the planned profile's name (else the family's first)."""
    kept: dict[tuple[str, str], str] = {}
    for engine, flags in launch_flags.items():
        key = (engine_family(engine), flags)
        if key not in kept or engine == planned:
            kept[key] = engine
    return {engine: flags for (_, flags), engine in kept.items()}


def model_table_lines(keys: dict) -> list[str]:
    """Lines appended to the ``plan`` table for :func:`model_keys` (none for a text-only catalog model)."""
    lines = []
    if "multimodal_params" in keys:
        loaded = "not loaded (text only)" if keys["text_only"] else "loaded"
        lines.append(f"multimodal   {keys['multimodal_towers']} ({keys['multimodal_params']:,} params) {loaded}; "
                     f"text model {keys['text_params']:,} params")
    if keys.get("params_source") == "estimate":
        lines.append(f"params       estimate ({keys['params_expected_error']})")
    return lines
