"""Serving-feature inputs and panels (LoRA adapter slots, speculative decoding, ...) for Home,
Concurrency and Find.

The inputs sit in one sidebar expander, bound to the URL under the CLI flag names with
underscores (``enable_lora``, ``max_loras``, ``max_lora_rank``, ``max_cpu_loras``,
``speculative_method``, ``num_speculative_tokens``, ``speculative_model``, ``kv_offloading_size``,
``kv_offloading_backend``, ``swap_space_gib``, ``host_link_gb_s``, ``images_per_request``,
``image_width``, ``image_height``, ``limit_mm_per_prompt`` (the image limit, a number),
``videos_per_request``, ``video_frames``, ``video_seconds``, ``video_width``, ``video_height``), so a
copied link carries them. With every switch off the request's ``serving`` stays None, except for a vision model
under vLLM: it carries vLLM's default encoder profile, as ``python -m planner plan`` charges it
(:func:`planner.serving.features.with_engine_defaults`).

For a model with a vision / audio tower the sidebar shows the text-only switch (``language_model_only``,
the CLI's ``--language-model-only``) above the expander; :func:`served_model` gives the spec the pages
plan (the towers dropped by :func:`planner.serving.multimodal.text_only`, as the CLI does), and
:func:`tower_panel` shows both weight figures and both user counts on Home. Numbers on screen are planner
return values (:func:`planner.budget.plan`, :attr:`planner.budget.Plan.serving`) through :mod:`ui.format`.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from planner.budget import Plan, PlanRequest, plan, serving_budget_cost_bytes
from planner.model import ModelSpec
from planner.serving import LoRAConfig, ServingFeatures
from planner.serving.features import SERVING_ENGINES, features_off, with_engine_defaults
from planner.serving.multimodal import (
    MultimodalConfig,
    is_multimodal,
    text_only,
    tower_summary,
    video_frames,
    vision_from_config,
)
from planner.serving.offload import OFFLOAD_BACKENDS, OffloadConfig, link_of_gpu
from planner.serving.speculative import SPECULATIVE_METHODS, SpeculativeConfig, mtp_layers_from_config
from ui import catalog, inputs, speculative_link
from ui.format import (
    count_noun,
    format_budget,
    format_bytes,
    format_bytes_exact,
    format_command,
    format_int,
    md_message,
)
from ui.inputs import NumberField
from ui.tiles import show_tiles, tiles_from_values

SERVING_FIELDS: dict[str, NumberField] = {
    f.key: f
    for f in (
        NumberField(key="max_loras", label="LoRA adapter slots per GPU", min_value=1, max_value=1024, default=1,
                    step=1, unit="slots",
                    help="Adapters one batch can mix; each GPU preallocates this many slots (vLLM `--max-loras`, "
                         "SGLang `--max-loras-per-batch`)."),
        NumberField(key="max_lora_rank", label="Max LoRA rank", min_value=1, max_value=512, default=16, step=8,
                    help="Every slot is sized for this rank on every module the engine wraps "
                         "(`--max-lora-rank`; vLLM takes 1, 8, 16, 32, 64, 128, 256, 320, 512)."),
        NumberField(key="max_cpu_loras", label="Adapters cached in host memory (empty = slots)", min_value=1,
                    max_value=100_000, default=None, step=1, unit="adapters",
                    help="vLLM `--max-cpu-loras` (default `--max-loras`), SGLang `--max-loaded-loras`."),
        NumberField(key="num_speculative_tokens", label="Draft tokens per step", min_value=1, max_value=64,
                    default=None, step=1, unit="tokens",
                    help="vLLM `num_speculative_tokens` (empty = 1; MTP: the model's next-n layers). Each sequence "
                         "reserves these slots twice: the drafts being verified and the lookahead."),
        NumberField(key="kv_offloading_size", label="KV offload to host [GiB] (empty = off)", min_value=0.0,
                    max_value=65536.0, default=None, step=16.0, is_float=True, unit="GiB",
                    help="vLLM V1 `--kv-offloading-size`: a host buffer for the whole server, split over its GPUs "
                         "(SGLang: `--hicache-size` GB per rank). The GPU keeps its KV pool."),
        NumberField(key="swap_space_gib", label="vLLM V0 swap space [GiB per GPU] (empty = off)", min_value=0.0,
                    max_value=4096.0, default=None, step=1.0, is_float=True, unit="GiB",
                    help="`--swap-space`: only the vLLM V0 engine uses it."),
        NumberField(key="images_per_request", label="Images per request (empty = none)", min_value=0,
                    max_value=1024, default=None, step=1, unit="images",
                    help="Images each request carries; their tokens join every sequence's KV (`--images-per-request`; "
                         "Qwen-VL, Gemma 3 and Gemma 4 vision-language models)."),
        NumberField(key="image_width", label="Image width [px]", min_value=1, max_value=65536, default=1024, step=64,
                    unit="pixels",
                    help="Before the processor's resize (Qwen: multiples of patch x merge; Gemma 3: 896 px square; "
                         "Gemma 4: its 280-token budget) (`--image-width`)."),
        NumberField(key="image_height", label="Image height [px]", min_value=1, max_value=65536, default=1024,
                    step=64, unit="pixels", help="`--image-height`."),
        NumberField(key="limit_mm_per_prompt", label="vLLM image limit per prompt (empty = default)", min_value=0,
                    max_value=1024, default=None, step=1, unit="images",
                    help="vLLM `--limit-mm-per-prompt '{\"image\": N}'`; 0 switches the encoder profile off."),
        NumberField(key="videos_per_request", label="Videos per request (empty = none)", min_value=0, max_value=64,
                    default=None, step=1, unit="videos",
                    help="Videos each request carries; their tokens join every sequence's KV "
                         "(`--videos-per-request`; Qwen3-VL, Qwen3.5, Qwen2.5-VL)."),
        NumberField(key="video_frames", label="Frames per video (empty = 16, or from the seconds)", min_value=1,
                    max_value=768, default=None, step=2, unit="frames",
                    help="Frames after sampling (`--video-frames`); give this or the clip length, not both."),
        NumberField(key="video_seconds", label="Clip length [s] (empty = use the frames)", min_value=0.1,
                    max_value=86400.0, default=None, step=1.0, is_float=True, unit="seconds",
                    help="`--video-seconds`: frames = seconds x 2 fps, clamped to 4 to 768 (the Qwen3-VL video "
                         "processor's defaults)."),
        NumberField(key="video_width", label="Video frame width [px]", min_value=1, max_value=65536, default=448,
                    step=32, unit="pixels", help="`--video-width`, before the video processor's resize."),
        NumberField(key="video_height", label="Video frame height [px]", min_value=1, max_value=65536, default=448,
                    step=32, unit="pixels", help="`--video-height`."),
        NumberField(key="host_link_gb_s", label="Host link [GB/s per direction] (empty = the GPU's)", min_value=0.1,
                    max_value=1000.0, default=None, step=1.0, is_float=True, unit="GB/s",
                    help="GPU-CPU bandwidth; by default the GPU's link from the catalog (PCIe 4.0 x16 = 31.5, "
                         "PCIe 5.0 x16 = 63, NVLink-C2C = 450; none for a GPU the catalog marks unknown)."),
    )
}
"""Numeric serving inputs, by key (= CLI flag with underscores)."""

SWITCHES = {"enable_lora": "LoRA adapters (`--enable-lora`)"}
"""Boolean serving inputs: key -> toggle label."""

TEXT_ONLY_KEY = "language_model_only"
"""URL key of the text-only switch (the CLI's ``--language-model-only``)."""

TEXT_ONLY_LABEL = "Serve text only (skip the vision tower: vLLM --language-model-only)"
"""The switch names the flag the pages' ``vllm serve`` commands write for the newest vLLM
(:func:`planner.engines.launch.vllm_text_only_flags`); its help gives older builds' spelling."""

OFF = "off"
METHOD_OPTIONS = (OFF, *SPECULATIVE_METHODS)
"""``speculative_method`` choices: off, then vLLM's methods."""

LORA_KEYS = ("max_loras", "max_lora_rank", "max_cpu_loras")
OFFLOAD_KEYS = ("kv_offloading_size", "swap_space_gib", "host_link_gb_s")
IMAGE_KEYS = ("images_per_request", "image_width", "image_height", "limit_mm_per_prompt")
VIDEO_KEYS = ("videos_per_request", "video_frames", "video_seconds", "video_width", "video_height")
MEDIA_COUNT_KEYS = ("images_per_request", "videos_per_request")

for _field in SERVING_FIELDS.values():
    inputs.NUMBER_FIELDS.setdefault(_field.key, _field)  # so inputs.check_link validates them too


def _number(container, key: str, disabled: bool = False):
    field = SERVING_FIELDS[key]
    if field.is_float:
        return container.number_input(
            field.label, min_value=float(field.min_value), max_value=float(field.max_value),
            value=None if field.default is None else float(field.default), step=float(field.step), format="%.2f",
            key=key, help=field.help, bind="query-params", disabled=disabled)
    return container.number_input(
        field.label, min_value=int(field.min_value), max_value=int(field.max_value),
        value=None if field.default is None else int(field.default), step=int(field.step), key=key,
        help=field.help, bind="query-params", disabled=disabled)


def text_only_on(model_id: str | None) -> bool:
    """Whether the link serves ``model_id`` text only (``language_model_only``) and it has a tower to leave out."""
    return _is_on(TEXT_ONLY_KEY) and _has_tower(model_id)


def _has_tower(model_id: str | None) -> bool:
    """Whether the page's model carries vision / audio tower weights (:func:`is_multimodal`); False when it
    cannot be loaded (the page reports that itself)."""
    if not model_id:
        return False
    try:
        return is_multimodal(catalog.model_spec(model_id))
    except (ValueError, KeyError):
        return False


def text_only_switch(model_id: str | None) -> bool:
    """The sidebar's text-only switch (URL key ``language_model_only``), drawn only for a model with a tower;
    True when it is on."""
    if not _has_tower(model_id):
        return False
    return st.sidebar.toggle(
        TEXT_ONLY_LABEL, key=TEXT_ONLY_KEY, bind="query-params",
        help="vLLM builds no vision / audio tower when every modality is limited to 0 per prompt "
             "(`--language-model-only`; for the older vLLM engines the launch commands write "
             "`--limit-mm-per-prompt '{\"image\": 0, \"video\": 0}'`, read the same way "
             "since v0.10.1): the weights shrink by the tower and the KV budget grows by as much; the server then "
             "takes text only.")


def served_model(model: ModelSpec) -> ModelSpec:
    """``model`` as the page's server holds it: without its towers when the text-only switch is on
    (:func:`planner.serving.multimodal.text_only`, as ``python -m planner plan --language-model-only``), else
    ``model``. Call after :func:`serving_inputs`."""
    return text_only(model) if _is_on(TEXT_ONLY_KEY) else model


def _media_config(vision, images: dict, videos: dict, problems: list[str]) -> MultimodalConfig | None:
    """The images and videos the inputs ask for (None when neither count nor the image limit is set), read as
    the CLI reads its flags (planner/cli/serving.py): frames or seconds, not both; no image count = no images, but
    an image limit alone still sizes vLLM's encoder profile (``--limit-mm-per-prompt`` without images)."""
    if not (images.get("images_per_request") or videos.get("videos_per_request")
            or images.get("limit_mm_per_prompt") is not None):
        return None
    frames, seconds = videos.get("video_frames"), videos.get("video_seconds")
    if frames is not None and seconds is not None and videos["videos_per_request"]:
        problems.append("Serving features: frames per video and clip length are both set (like `--video-frames` "
                        "with `--video-seconds`); using the frames. Clear one in the sidebar.")
    if frames is None:
        frames = video_frames(seconds) if seconds else MultimodalConfig.video_frames
    return MultimodalConfig(vision=vision, images_per_request=images["images_per_request"] or 0,
                            image_width=images["image_width"], image_height=images["image_height"],
                            limit_mm_per_prompt=images["limit_mm_per_prompt"],
                            videos_per_request=videos.get("videos_per_request") or 0, video_frames=frames,
                            video_width=videos.get("video_width") or MultimodalConfig.video_width,
                            video_height=videos.get("video_height") or MultimodalConfig.video_height)


def raw_config(model_id: str | None) -> dict:
    """The model's config.json (keys the spec does not carry): the catalog entry's, or the custom model's (its
    ``vision_config`` too, as ``plan --config`` reads it; QA: a pasted Qwen3.6-35B-A3B lost vLLM's encoder
    profile, 57.59 GiB of KV budget against 57.30); empty for an unknown model."""
    if not model_id:
        return {}
    if model_id == catalog.CUSTOM_ID:
        from ui import custom_panel  # noqa: PLC0415 - as ui.catalog resolves ``custom``: only when chosen
        chosen = custom_panel.current_choice().model
        return {} if chosen is None else dict(chosen.config)
    try:
        return dict(catalog.model_entry(model_id).config)
    except (ValueError, KeyError):
        return {}


def _is_on(key: str) -> bool:
    """Whether the widget state (else the link) switches ``key`` on: a toggle at true, a method not off."""
    value = st.session_state.get(key, st.query_params.get(key, ""))
    if key == "speculative_method":  # or the JSON of --speculative-config (ui/speculative_link.py)
        return value not in ("", OFF, None) or speculative_link.in_link()
    return value is True or str(value).lower() == "true"


def serving_inputs(engine: str = "vllm", model_id: str | None = None,
                   offload: bool = False, gpu=None) -> tuple[ServingFeatures | None, list[str]]:
    """The "Serving features" sidebar block (URL-bound) and its link problems.

    Args:
        engine: The page's engine (profile id); its family decides whose allocation rules apply.
        model_id: The page's model (its config's MTP layers); None = no MTP.
        offload: Offer the KV offload inputs (Home: the host tier changes no user count elsewhere).
        gpu: The page's catalog GPU, whose ``host_link`` (model_catalog/gpus.json) prices the offload copies
            when the host-link input is empty; None = unknown link.

    Returns:
        The features switched on (None when none is and the engine profiles no encoder unasked), and the problems.
    """
    model_options = catalog.model_ids()
    problems = inputs.check_link(
        {"speculative_method": (METHOD_OPTIONS, None, "speculative method", OFF),
         "speculative_model": (model_options, catalog.resolve_model_id, "draft model", model_options[0]),
         **({"kv_offloading_backend": (OFFLOAD_BACKENDS, None, "offload backend", "native")} if offload else {})},
        {}, tuple(k for k in SERVING_FIELDS if offload or k not in OFFLOAD_KEYS))
    raw = raw_config(model_id)
    vision = vision_from_config(raw)
    text_only_on = text_only_switch(model_id)
    expanded = any(_is_on(k) for k in (*SWITCHES, "speculative_method")) or (
        offload and bool(st.query_params.get("kv_offloading_size") or st.session_state.get("kv_offloading_size")))
    with st.sidebar.expander("Serving features", expanded=expanded):
        lora_on = st.toggle(SWITCHES["enable_lora"], key="enable_lora", bind="query-params",
                            help="Preallocate adapter slots on every GPU; they come out of the KV cache budget.")
        values = {key: _number(st, key) for key in LORA_KEYS} if lora_on else {}
        method = st.selectbox("Speculative decoding", METHOD_OPTIONS, index=0, key="speculative_method",
                              bind="query-params",
                              help="vLLM `--speculative-config` method: a draft model, an EAGLE / EAGLE-3 head, "
                                   "the model's own MTP layers, or n-gram lookup.")
        spec_text, draft_id = speculative_link.json_input(st), None
        if method != OFF or spec_text:
            values["num_speculative_tokens"] = _number(st, "num_speculative_tokens")
            if method == "draft_model":
                draft_id = st.selectbox("Draft model", model_options, index=0, key="speculative_model",
                                        bind="query-params", help="A small model of the same tokenizer (`model`).")
        images, videos = {}, {}
        if vision is not None:  # greyed out while the server is text only (they would be refused)
            images = {key: _number(st, key, disabled=text_only_on) for key in IMAGE_KEYS}
            if vision.supports_video:  # Gemma 3 takes no video; Gemma 4's frames are not priced
                videos = {key: _number(st, key, disabled=text_only_on) for key in VIDEO_KEYS}
            elif st.query_params.get("videos_per_request"):
                problems.append("Serving features: this model's videos are not priced (Gemma 3 takes none; Gemma 4's "
                                "timestamped frames are not modelled); the link's video inputs are left out. Send "
                                "the frames as images instead.")
        host = {}
        if offload:
            host = {key: _number(st, key) for key in OFFLOAD_KEYS if key != "swap_space_gib" or engine == "vllm-v0"}
            host["backend"] = st.selectbox("Offload backend", OFFLOAD_BACKENDS, index=0, key="kv_offloading_backend",
                                           bind="query-params", help="vLLM `--kv-offloading-backend`.")
    lora = speculative = host_tier = None
    if lora_on:
        lora = LoRAConfig(max_loras=values["max_loras"], max_lora_rank=values["max_lora_rank"],
                          max_cpu_loras=values["max_cpu_loras"])
    if spec_text:  # the CLI's reading of --speculative-config with its part flags
        speculative = speculative_link.from_link(spec_text, None if method == OFF else method,
                                                 values["num_speculative_tokens"], draft_id, raw, problems)
    elif method != OFF:
        layers = mtp_layers_from_config(raw)
        tokens = values["num_speculative_tokens"] or (layers if method == "mtp" and layers else 1)
        try:
            draft = catalog.model_spec(draft_id) if draft_id else None
        except ValueError as exc:
            problems.append(f"Serving features: the draft model {draft_id} could not be loaded ({exc}); pick another "
                            "in the sidebar.")
            draft, draft_id = None, None
        speculative = SpeculativeConfig(method=method, num_speculative_tokens=tokens, draft=draft,
                                        draft_model_id=draft_id or "", num_mtp_layers=layers)
    if host.get("kv_offloading_size") is not None or host.get("swap_space_gib") is not None:
        rate, name, source = (host["host_link_gb_s"], "", "") if host.get("host_link_gb_s") is not None \
            else link_of_gpu(gpu)
        host_tier = OffloadConfig(kv_offloading_size=host.get("kv_offloading_size"),
                                  swap_space=host.get("swap_space_gib"), kv_offloading_backend=host["backend"],
                                  host_link_gb_s=rate, host_link_name=name, host_link_source=source)
    multimodal = None
    if vision is not None and text_only_on:
        if images.get("images_per_request") or videos.get("videos_per_request"):
            problems.append("Serving features: images or videos per request are set, but the server is text only "
                            "(the CLI refuses `--images-per-request` beside `--language-model-only`); showing the "
                            "text-only plan. Switch text only off, or clear the counts in the sidebar.")
    elif vision is not None:
        multimodal = _media_config(vision, images, videos, problems)
    features = ServingFeatures(engine=engine, lora=lora, speculative=speculative, offload=host_tier,
                               multimodal=multimodal)
    try:
        features.validate()
    except ValueError as exc:
        problems.append(f"Serving features: {exc}. Showing the plan without them; change them in the sidebar.")
        features = ServingFeatures(engine=engine)
    return with_engine_defaults(  # vLLM's default encoder profile for a vision model, as the CLI charges it
        features if features.enabled else None, engine=engine, raw_config=raw, text_only=text_only_on), problems


def page_gpu(gpu_id: str | None):
    """The catalog (or custom) GPU of ``gpu_id`` for its host link, or None when it cannot be loaded (the page
    reports that itself)."""
    try:
        return catalog.gpu(gpu_id) if gpu_id else None
    except (ValueError, KeyError):
        return None


def with_serving(request: PlanRequest, features: ServingFeatures | None) -> PlanRequest:
    """``request`` carrying ``features`` (unchanged when None)."""
    return request if features is None else replace(request, serving=features)


def cli_flags(features: ServingFeatures) -> str:
    """The ``python -m planner`` flags for these features (vLLM's names)."""
    parts = []
    if features.lora is not None:
        lora = features.lora
        parts.append(f"--enable-lora --max-loras {lora.max_loras} --max-lora-rank {lora.max_lora_rank}")
        if lora.max_cpu_loras is not None:
            parts.append(f"--max-cpu-loras {lora.max_cpu_loras}")
    spec = features.speculative
    if spec is not None:
        parts.append(speculative_link.cli_flags(spec))
    off = features.offload
    if off is not None:
        if off.kv_offloading_size is not None:
            parts.append(f"--kv-offloading-size {off.kv_offloading_size:g}")
            if off.kv_offloading_backend != "native":
                parts.append(f"--kv-offloading-backend {off.kv_offloading_backend}")
        if off.swap_space is not None:
            parts.append(f"--swap-space {off.swap_space:g}")
        if off.host_link_gb_s is not None:
            parts.append(f"--host-link-gb-s {off.host_link_gb_s:g}")
    mm = features.multimodal
    if mm is not None and not mm.engine_default:  # vLLM's default profile: the CLI's default too
        parts.append(f"--images-per-request {mm.images_per_request} --image-width {mm.image_width} "
                     f"--image-height {mm.image_height}")
        if mm.videos_per_request:
            parts.append(f"--videos-per-request {mm.videos_per_request} --video-frames {mm.video_frames} "
                         f"--video-width {mm.video_width} --video-height {mm.video_height}")
        if mm.limit_mm_per_prompt is not None:
            parts.append(f"--limit-mm-per-prompt '{{\"image\": {mm.limit_mm_per_prompt}}}'")
    if features.engine != "vllm":
        parts.append(f"--engine {features.engine}")
    return " ".join(parts)


def panel_values(result: Plan, plain: Plan) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the serving panel, from the two plans' fields."""
    serving = result.serving or {}
    out: dict[str, tuple[str, str]] = {
        "Users at this context": (
            f"{format_int(result.max_concurrent_sequences)} (was {format_int(plain.max_concurrent_sequences)})",
            "Max concurrent sequences with the serving features on, and without them"),
        "KV budget, features off": (
            format_budget(plain.kv_cache_budget_bytes),
            f"KV budget per GPU without the serving features; with them (\"KV budget per GPU\" above): "
            f"{format_budget(result.kv_cache_budget_bytes)}. The features take "
            f"{format_bytes(serving_budget_cost_bytes(plain, result))} per GPU."),
    }
    lora = serving.get("lora")
    if lora and lora["supported"]:
        out["Memory per adapter slot"] = (
            format_bytes(lora["bytes_per_adapter_slot"], "auto"),
            f"{format_bytes_exact(lora['bytes_per_adapter_slot'], 'B')}: rank {lora['max_lora_rank']} x (in + out) "
            f"on every wrapped module, {lora['lora_dtype']}, per GPU")
        out[f"Adapter slots in all ({format_int(lora['max_loras'])})"] = (
            format_bytes(lora["adapter_slot_bytes"]), "What each GPU preallocates (counted with the weights)")
        out["Adapter slots, this batch"] = (  # the Engine page's "that fit" counts beside one request
            format_int(lora["max_loras_that_fit"]),
            f"Adapter slots that fit beside the KV: slots the budget holds next to "
            f"{count_noun(result.batch_size, 'sequence')} of {format_int(result.context_len)} tokens")
        out["Host memory per GPU"] = (
            format_bytes(serving["host_bytes_per_gpu"]),
            f"{count_noun(lora['max_cpu_loras'], 'adapter')} cached in CPU memory, each up to "
            f"{format_bytes(lora['adapter_bytes_host'], 'auto')} (rank {lora['max_lora_rank']}, unsharded)")
    spec = serving.get("speculative")
    if spec:
        out[f"Drafter weights ({spec['method']})"] = (
            format_bytes(spec["draft_weights_bytes_per_gpu"]),
            f"{format_int(spec['draft_params'])} parameters the drafter adds, per GPU at tensor parallel "
            f"{result.num_gpus}")
        out["Drafter KV per token"] = (
            format_bytes(spec["draft_kv_cache_bytes_per_token_per_gpu"], "auto"),
            f"{count_noun(spec['draft_layers'], 'drafter layer')} in the same block pool; the target's own: "
            f"{format_bytes(plain.kv_cache_bytes_per_token_per_gpu, 'auto')}")
        out["Draft slots per sequence"] = (
            format_int(spec["extra_tokens_per_sequence"]),
            f"KV slots reserved per sequence: {format_int(spec['num_speculative_tokens'])} drafts verified"
            + (" + the same number of lookahead slots" if spec["extra_tokens_per_sequence"]
               > spec["num_speculative_tokens"] else ""))
    mm = serving.get("multimodal")
    if mm and mm.get("videos_per_request"):
        out["Tokens per video"] = (
            format_int(mm["tokens_per_video"]),
            (f"{count_noun(mm['videos_per_request'], 'video')} of {count_noun(mm['video_frames'], 'frame')} "
             f"resized to {mm['resized_video_width']} x {mm['resized_video_height']} px, delimiters included"))
    if mm:
        out["Media tokens per request" if mm.get("videos_per_request") else "Image tokens per request"] = (
            format_int(mm["tokens_per_request"]),
            ("Image and video tokens per request: " if mm.get("videos_per_request") else "")
            + f"{count_noun(mm['images_per_request'], 'image')} resized to {mm['resized_width']} x "
            f"{mm['resized_height']} px: {format_int(mm['tokens_per_image'])} tokens each, delimiters included")
        out["Vision tower"] = (format_bytes(mm["vision_weights_bytes_per_gpu"]),
                               f"{format_int(mm['vision_params'])} parameters, per GPU, counted with the weights")
        dummy = "dummy " + (mm.get("encoder_profile_modality") or "item")
        out["Encoder cache"] = (
            format_bytes(mm["encoder_cache_bytes"]),
            f"Held through the profile pass: vLLM encodes {count_noun(mm.get('encoder_profile_items', 0), dummy)} "
            f"within an encoder budget of {format_int(mm['encoder_budget_tokens'])} tokens and keeps their outputs "
            "while it profiles the language model")
    off = serving.get("offload")
    if off and off["supported"]:
        out["Offload host memory"] = (
            format_bytes(off["host_bytes_per_gpu"]),
            f"Host memory per GPU for the offload tier; {format_bytes(off['host_bytes_per_replica'])} for the "
            f"replica ({off['mechanism']})")
        out["Tokens host / GPU"] = (
            f"{format_int(off['host_kv_capacity_tokens'])} / {format_int(off['gpu_kv_capacity_tokens'])}",
            "KV tokens on the host / on the GPU. The GPU keeps its whole pool; the host tier holds evicted "
            "prefixes and preempted sequences")
        link = f"{off['host_link']} ({off['host_link_gb_s']:g} GB/s per direction)"
        if off["seconds_per_token_moved"] is not None:
            out["Per token moved"] = (
                f"{off['seconds_per_token_moved'] * 1e6:,.2f} µs",
                f"Estimate: KV of one token over {link}; peak rate")
            out["Per sequence moved"] = (
                f"{off['seconds_per_sequence_moved'] * 1e3:,.1f} ms",
                f"Estimate: one sequence of {format_int(result.context_len)} tokens over {link}")
        else:
            out["Host link"] = (off["host_link"], off["host_link_source"])
    return out


PANEL_TILES_PER_ROW = 3
"""Serving-panel tiles per row: at 1,280 px three leave each label (up to about 25 characters) whole."""


def serving_panel(model: ModelSpec, gpu, request: PlanRequest, result: Plan, cli_command: str = "") -> None:
    """The Home page's "Serving features" section: what the features cost and what they leave.

    Args:
        model, gpu, request, result: The page's plan (``result``) and what it was planned from.
        cli_command: The page's ``python -m planner plan`` line; the features' flags are appended.
    """
    if result.serving is None or request.serving is None or not request.serving.asked:
        return  # vLLM's default encoder profile alone: the tower line says it (tower_figures)
    serving = result.serving
    unasked = features_off(request.serving)  # vLLM's default encoder profile stays: nobody asked for it
    plain = plan(model, gpu.framework_memory_bytes, replace(request, serving=unasked), gpu_id=gpu.id)
    st.subheader("Serving features")
    if serving["engine_family"] not in SERVING_ENGINES:
        st.info(f"{serving['engine']}: the serving features are modelled for {', '.join(SERVING_ENGINES)} "
                "only; this engine gets notes below, not numbers.", icon=":material/info:")
    show_tiles(tiles_from_values(panel_values(result, plain)), PANEL_TILES_PER_ROW)
    for note in [*serving["notes"], *(serving.get("offload") or {}).get("notes", [])]:
        st.info(md_message(note), icon=":material/info:")
    st.caption("The engine panel below and the Engine page price these features under the chosen engine's "
               "own rules.")
    for engine, flags in serving["launch_flags"].items():
        st.markdown(f"{engine} launch flags:")
        st.code(format_command(flags), language="bash", wrap_lines=True)
    if cli_command and request.serving is not None:
        st.markdown("Same plan from the command line:")
        st.code(f"{cli_command} \\\n  {format_command(cli_flags(request.serving))}", language="bash",
                wrap_lines=True)


def weights_source_note(model: ModelSpec) -> str:
    """The Home page's label on the weights' parameter count: ``exact`` / ``by source`` / ``estimate (+-N%)``, as
    ``plan --format json`` reports it (``params_source``: planner/cli/serving.py ``model_keys``); :func:`tower_panel`
    names the towers. It names the count, not the bytes (QA, stop 43: "Weights: exact." beside a pasted ModelOpt
    checkpoint priced at bf16 read as exact bytes)."""
    from model_catalog import catalog_id_or_none
    from model_catalog.verification import load_verification

    statuses = {row["model_id"]: row["status"] for row in load_verification()["models"]}
    entry_id = catalog_id_or_none(model.model_id) or model.model_id  # an alias: its entry's row
    if entry_id in statuses:  # a catalog entry: its verification status (no transformers import)
        source = statuses[entry_id]
    elif model.params and all(g.storage is not None for g in model.params):
        source = "exact"  # a GGUF header's own tensors
    else:  # a pasted config: transformers is loaded for it anyway
        from model_catalog.generic import PARAMS_EXPECTED_ERROR
        from model_catalog.hf_config import ADAPTERS, BY_SOURCE_MODEL_TYPES

        kind = model.model_type.rsplit("/", 1)[-1]
        source = ("by source" if kind in BY_SOURCE_MODEL_TYPES else "exact" if kind in ADAPTERS
                  else f"estimate (expected error: {PARAMS_EXPECTED_ERROR})")
    return f"Parameter count: {source}; the bytes follow the weight dtype and the checkpoint's formats."


def tower_figures(model: ModelSpec, gpu, request: PlanRequest, result: Plan,
                  engine: str = "vllm") -> tuple[str, dict[str, tuple[str, str]]]:
    """The Home page's tower line and cards for a multimodal ``model`` (``("", {})`` for a text model): the tower
    named with its size and the text model's weights (``"vision tower 1.07 GiB; text only: 15.26 GiB"``), then
    the weights and the users with the tower and text only, each from :func:`planner.budget.plan` (the page's
    ``result`` and one plan of the other variant) and :func:`tower_summary`, as ``plan --format json`` reports
    them (``multimodal_towers``, ``weights_bytes``, ``max_concurrent_sequences`` with and without
    ``--language-model-only``).

    Args:
        model: The catalog spec with its towers (not :func:`served_model`'s).
        gpu, request: What ``result`` was planned on and from.
        result: The page's plan of :func:`served_model`.
        engine: The page's engine (profile id): under vLLM the variant with the tower carries vLLM's default
            encoder profile when no image is asked for (:func:`with_engine_defaults`); the text-only one carries
            no media.

    Raises:
        ValueError: as :func:`planner.budget.plan`, for the other variant.
    """
    from planner.model.dtypes import weight_dtype

    if not is_multimodal(model):
        return "", {}
    on = _is_on(TEXT_ONLY_KEY)
    serving = (with_engine_defaults(request.serving, engine=engine, raw_config=raw_config(model.model_id)) if on
               else None if request.serving is None else replace(request.serving, multimodal=None))  # text only: none
    serving = serving if serving is not None and serving.enabled else None
    other = plan(model if on else text_only(model), gpu.framework_memory_bytes, replace(request, serving=serving),
                 gpu_id=gpu.id)
    full, text = (other, result) if on else (result, other)
    per_gpu = " per GPU" if result.num_gpus > 1 else ""
    line = (f"**{tower_summary(model, weight_dtype(request.weight_dtype))}; text only: "
            f"{format_bytes(text.weights_bytes)}** (whole model). "
            + ("Not loaded: the sidebar's text-only switch is on, so the cards above plan the text model."
               if on else "Loaded, as vLLM does by default; the sidebar's text-only switch "
                          "(`--language-model-only`) drops it.") + _default_profile_text(full))
    users = f"max concurrent sequences at {format_int(result.context_len)} tokens each"
    cards = {
        f"Weights{per_gpu}, with the tower": (format_bytes(full.weights_bytes_per_gpu),
                                              f"{format_int(full.params)} parameters"),
        f"Weights{per_gpu}, text only": (format_bytes(text.weights_bytes_per_gpu),
                                         f"{format_int(text.params)} parameters"),
        "Users with the tower": (format_int(full.max_concurrent_sequences), users),
        "Users text only": (format_int(text.max_concurrent_sequences), users),
    }
    return line, cards


def _default_profile_text(full: Plan) -> str:
    """`` vLLM also profiles ...`` when ``full`` carries vLLM's default encoder profile, else empty."""
    mm = (full.serving or {}).get("multimodal") or {}
    if not mm.get("encoder_profile_default"):
        return ""
    dummy = "dummy " + (mm.get("encoder_profile_modality") or "item")
    return (f" With the tower, vLLM profiles its encoder by default ({count_noun(mm['encoder_profile_items'], dummy)}"
            f", {format_bytes(mm['encoder_cache_bytes'])} of outputs held through the profile pass), so the users "
            "with the tower carry it although no request sends an image.")


TOWER_TILES_PER_ROW = 2
"""Tower tiles per row: two, so "Weights per GPU, with the tower" stays whole at 1,280 px."""


def tower_panel(model: ModelSpec, gpu, request: PlanRequest, result: Plan, engine: str = "vllm") -> None:
    """The Home page's row of tower cards (:func:`tower_figures`); nothing for a text model."""
    line, cards = tower_figures(model, gpu, request, result, engine)
    if not cards:
        return
    st.markdown(line)
    show_tiles(tiles_from_values(cards), TOWER_TILES_PER_ROW)


# --- the one line a page that counts users shows (issue 27: one link, one user count) ------------------

