"""Serving-feature inputs and panels (LoRA adapter slots, speculative decoding, ...) for Home,
Concurrency and Find.

The inputs sit in one sidebar expander, bound to the URL under the CLI flag names with
underscores (``enable_lora``, ``max_loras``, ``max_lora_rank``, ``max_cpu_loras``,
``speculative_method``, ``num_speculative_tokens``, ``speculative_model``, ``kv_offloading_size``,
``kv_offloading_backend``, ``swap_space_gib``, ``host_link_gb_s``, ``images_per_request``,
``image_width``, ``image_height``, ``limit_mm_per_prompt``), so a copied link carries them. With
every switch off the pages compute exactly what they did before: the request's ``serving`` stays
None. Numbers on screen are planner return values (:attr:`planner.budget.Plan.serving`) through
:mod:`ui.format`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import streamlit as st

from planner.budget import Plan, PlanRequest, plan
from planner.model import ModelSpec
from planner.serving import LoRAConfig, ServingFeatures
from planner.serving.features import SERVING_ENGINES
from planner.serving.multimodal import MultimodalConfig, vision_from_config
from planner.serving.offload import OFFLOAD_BACKENDS, OffloadConfig
from planner.serving.speculative import SPECULATIVE_METHODS, SpeculativeConfig, mtp_layers_from_config
from ui import catalog, inputs
from ui.format import format_bytes, format_bytes_exact, format_int
from ui.inputs import NumberField

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
                         "vision-language models of the Qwen-VL family)."),
        NumberField(key="image_width", label="Image width [px]", min_value=1, max_value=65536, default=1024, step=64,
                    unit="pixels",
                    help="Before the processor's resize to multiples of patch x merge (`--image-width`)."),
        NumberField(key="image_height", label="Image height [px]", min_value=1, max_value=65536, default=1024,
                    step=64, unit="pixels", help="`--image-height`."),
        NumberField(key="limit_mm_per_prompt", label="vLLM image limit per prompt (empty = default)", min_value=0,
                    max_value=1024, default=None, step=1, unit="images",
                    help="vLLM `--limit-mm-per-prompt '{\"image\": N}'`; 0 switches the encoder profile off."),
        NumberField(key="host_link_gb_s", label="Host link [GB/s per direction] (empty = the GPU's)", min_value=0.1,
                    max_value=1000.0, default=None, step=1.0, is_float=True, unit="GB/s",
                    help="GPU-CPU bandwidth; by default the GPU family's link (PCIe 4.0 x16 = 31.5, PCIe 5.0 x16 = "
                         "63, NVLink-C2C = 450)."),
    )
}
"""Numeric serving inputs, by key (= CLI flag with underscores)."""

SWITCHES = {"enable_lora": "LoRA adapters (`--enable-lora`)"}
"""Boolean serving inputs: key -> toggle label."""

OFF = "off"
METHOD_OPTIONS = (OFF, *SPECULATIVE_METHODS)
"""``speculative_method`` choices: off, then vLLM's methods."""

LORA_KEYS = ("max_loras", "max_lora_rank", "max_cpu_loras")
OFFLOAD_KEYS = ("kv_offloading_size", "swap_space_gib", "host_link_gb_s")
IMAGE_KEYS = ("images_per_request", "image_width", "image_height", "limit_mm_per_prompt")

for _field in SERVING_FIELDS.values():
    inputs.NUMBER_FIELDS.setdefault(_field.key, _field)  # so inputs.check_link validates them too


def _number(container, key: str):
    field = SERVING_FIELDS[key]
    if field.is_float:
        return container.number_input(
            field.label, min_value=float(field.min_value), max_value=float(field.max_value),
            value=None if field.default is None else float(field.default), step=float(field.step), format="%.2f",
            key=key, help=field.help, bind="query-params")
    return container.number_input(
        field.label, min_value=int(field.min_value), max_value=int(field.max_value),
        value=None if field.default is None else int(field.default), step=int(field.step), key=key,
        help=field.help, bind="query-params")


def _raw_config(model_id: str | None) -> dict:
    """The catalog model's config.json (keys the spec does not carry); empty for custom or unknown models."""
    if not model_id or model_id == catalog.CUSTOM_ID:
        return {}
    try:
        return dict(catalog.model_entry(model_id).config)
    except (ValueError, KeyError):
        return {}


def _is_on(key: str) -> bool:
    """Whether the widget state (else the link) switches ``key`` on: a toggle at true, a method not off."""
    value = st.session_state.get(key, st.query_params.get(key, ""))
    if key == "speculative_method":
        return value not in ("", OFF, None)
    return value is True or str(value).lower() == "true"


def serving_inputs(engine: str = "vllm", model_id: str | None = None,
                   offload: bool = False) -> tuple[ServingFeatures | None, list[str]]:
    """The "Serving features" sidebar block (URL-bound) and its link problems.

    Args:
        engine: The page's engine (profile id); its family decides whose allocation rules apply.
        model_id: The page's model (its config's MTP layers); None = no MTP.
        offload: Offer the KV offload inputs (Home: the host tier changes no user count elsewhere).

    Returns:
        The features switched on (None when every switch is off), and the problems to show.
    """
    model_options = catalog.model_ids()
    problems = inputs.check_link(
        {"speculative_method": (METHOD_OPTIONS, None, "speculative method", OFF),
         "speculative_model": (model_options, catalog.resolve_model_id, "draft model", model_options[0]),
         **({"kv_offloading_backend": (OFFLOAD_BACKENDS, None, "offload backend", "native")} if offload else {})},
        {}, tuple(k for k in SERVING_FIELDS if offload or k not in OFFLOAD_KEYS))
    raw = _raw_config(model_id)
    vision = vision_from_config(raw)
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
        draft_id = None
        if method != OFF:
            values["num_speculative_tokens"] = _number(st, "num_speculative_tokens")
            if method == "draft_model":
                draft_id = st.selectbox("Draft model", model_options, index=0, key="speculative_model",
                                        bind="query-params", help="A small model of the same tokenizer (`model`).")
        images = {}
        if vision is not None:
            images = {key: _number(st, key) for key in IMAGE_KEYS}
        host = {}
        if offload:
            host = {key: _number(st, key) for key in OFFLOAD_KEYS if key != "swap_space_gib" or engine == "vllm-v0"}
            host["backend"] = st.selectbox("Offload backend", OFFLOAD_BACKENDS, index=0, key="kv_offloading_backend",
                                           bind="query-params", help="vLLM `--kv-offloading-backend`.")
    lora = speculative = host_tier = None
    if lora_on:
        lora = LoRAConfig(max_loras=values["max_loras"], max_lora_rank=values["max_lora_rank"],
                          max_cpu_loras=values["max_cpu_loras"])
    if method != OFF:
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
        host_tier = OffloadConfig(kv_offloading_size=host.get("kv_offloading_size"),
                                  swap_space=host.get("swap_space_gib"), kv_offloading_backend=host["backend"],
                                  host_link_gb_s=host.get("host_link_gb_s"))
    multimodal = None
    if vision is not None and images.get("images_per_request"):
        multimodal = MultimodalConfig(vision=vision, images_per_request=images["images_per_request"],
                                      image_width=images["image_width"], image_height=images["image_height"],
                                      limit_mm_per_prompt=images["limit_mm_per_prompt"])
    if lora is None and speculative is None and host_tier is None and multimodal is None:
        return None, problems
    features = ServingFeatures(engine=engine, lora=lora, speculative=speculative, offload=host_tier,
                               multimodal=multimodal)
    try:
        features.validate()
    except ValueError as exc:
        problems.append(f"Serving features: {exc}. Showing the plan without them; change them in the sidebar.")
        return None, problems
    return features, problems


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
        parts.append(f"--speculative-method {spec.method} --num-speculative-tokens {spec.num_speculative_tokens}")
        if spec.draft_model_id:
            parts.append(f"--speculative-model {spec.draft_model_id}")
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
    if mm is not None:
        parts.append(f"--images-per-request {mm.images_per_request} --image-width {mm.image_width} "
                     f"--image-height {mm.image_height}")
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
        "KV budget per GPU": (
            format_bytes(result.kv_cache_budget_bytes),
            f"{format_bytes(serving.get('kv_cache_budget_bytes_without_serving', 0))} without the features"),
    }
    lora = serving.get("lora")
    if lora and lora["supported"]:
        out["Memory per adapter slot"] = (
            format_bytes(lora["bytes_per_adapter_slot"], "auto"),
            f"{format_bytes_exact(lora['bytes_per_adapter_slot'], 'B')}: rank {lora['max_lora_rank']} x (in + out) "
            f"on every wrapped module, {lora['lora_dtype']}, per GPU")
        out[f"Adapter slots in all ({format_int(lora['max_loras'])})"] = (
            format_bytes(lora["adapter_slot_bytes"]), "What each GPU preallocates (counted with the weights)")
        out["Adapter slots that fit beside the KV"] = (
            format_int(lora["max_loras_that_fit"]),
            f"Slots the budget holds next to {format_int(result.batch_size)} sequence(s) of "
            f"{format_int(result.context_len)} tokens")
        out["Host memory per GPU"] = (
            format_bytes(serving["host_bytes_per_gpu"]),
            f"{format_int(lora['max_cpu_loras'])} adapters cached in CPU memory, each up to "
            f"{format_bytes(lora['adapter_bytes_host'], 'auto')} (rank {lora['max_lora_rank']}, unsharded)")
    spec = serving.get("speculative")
    if spec:
        out[f"Drafter weights ({spec['method']})"] = (
            format_bytes(spec["draft_weights_bytes_per_gpu"]),
            f"{format_int(spec['draft_params'])} parameters the drafter adds, per GPU at tensor parallel "
            f"{result.num_gpus}")
        out["Drafter KV per token"] = (
            format_bytes(spec["draft_kv_cache_bytes_per_token_per_gpu"], "auto"),
            f"{format_int(spec['draft_layers'])} drafter layer(s) in the same block pool; the target's own: "
            f"{format_bytes(plain.kv_cache_bytes_per_token_per_gpu, 'auto')}")
        out["Slots reserved per sequence"] = (
            format_int(spec["extra_tokens_per_sequence"]),
            f"{format_int(spec['num_speculative_tokens'])} drafts verified"
            + (" + the same number of lookahead slots" if spec["extra_tokens_per_sequence"]
               > spec["num_speculative_tokens"] else ""))
    mm = serving.get("multimodal")
    if mm:
        out["Image tokens per request"] = (
            format_int(mm["tokens_per_request"]),
            f"{format_int(mm['images_per_request'])} image(s) resized to {mm['resized_width']} x "
            f"{mm['resized_height']} px: {format_int(mm['tokens_per_image'])} tokens each, delimiters included")
        out["Vision tower"] = (format_bytes(mm["vision_weights_bytes_per_gpu"]),
                               f"{format_int(mm['vision_params'])} parameters, per GPU, counted with the weights")
        out["Encoder cache (profile pass)"] = (
            format_bytes(mm["encoder_cache_bytes"]),
            f"vLLM profiles {format_int(mm['encoder_budget_tokens'])} encoder tokens and keeps them while it "
            "profiles the language model")
    off = serving.get("offload")
    if off and off["supported"]:
        out["Host memory per GPU (offload)"] = (
            format_bytes(off["host_bytes_per_gpu"]),
            f"{format_bytes(off['host_bytes_per_replica'])} for the replica ({off['mechanism']})")
        out["Tokens on the host / on the GPU"] = (
            f"{format_int(off['host_kv_capacity_tokens'])} / {format_int(off['gpu_kv_capacity_tokens'])}",
            "The GPU keeps its whole pool; the host tier holds evicted prefixes and preempted sequences")
        link = f"{off['host_link']} ({off['host_link_gb_s']:g} GB/s per direction)"
        if off["seconds_per_token_moved"] is not None:
            out["Per token moved (estimate)"] = (
                f"{off['seconds_per_token_moved'] * 1e6:,.2f} µs", f"KV of one token over {link}; peak rate")
            out["Per sequence moved (estimate)"] = (
                f"{off['seconds_per_sequence_moved'] * 1e3:,.1f} ms",
                f"One sequence of {format_int(result.context_len)} tokens over {link}")
        else:
            out["Host link"] = (off["host_link"], off["host_link_source"])
    return out


def serving_panel(model: ModelSpec, gpu, request: PlanRequest, result: Plan, cli_command: str = "") -> None:
    """The Home page's "Serving features" section: what the features cost and what they leave.

    Args:
        model, gpu, request, result: The page's plan (``result``) and what it was planned from.
        cli_command: The page's ``python -m planner plan`` line; the features' flags are appended.
    """
    if result.serving is None:
        return
    serving = result.serving
    plain = plan(model, gpu.framework_memory_bytes, replace(request, serving=None), gpu_id=gpu.id)
    st.subheader("Serving features")
    if serving["engine_family"] not in SERVING_ENGINES:
        st.info(f"{serving['engine']}: the serving features are modelled for {', '.join(SERVING_ENGINES)} "
                "only; this engine gets notes below, not numbers.", icon=":material/info:")
    items = list(panel_values(result, plain).items())
    for row in (items[i:i + 4] for i in range(0, len(items), 4)):
        if row:
            for col, (label, (value, help_text)) in zip(st.columns(len(row)), row):
                col.metric(label, value, help=help_text, border=True)
    for note in [*serving["notes"], *(serving.get("offload") or {}).get("notes", [])]:
        st.info(note, icon=":material/info:")
    st.caption("The engine panel below prices the bare model: its figures do not include these features yet.")
    for engine, flags in serving["launch_flags"].items():
        st.markdown(f"{engine} launch flags:")
        st.code(flags, language="bash")
    if cli_command and request.serving is not None:
        st.markdown("Same plan from the command line:")
        st.code(f"{cli_command} \\\n  {cli_flags(request.serving)}", language="bash")


def concurrency_series(model: ModelSpec, gpus: Sequence, request: PlanRequest,
                       contexts: Sequence[int]) -> dict[str, tuple[int, ...]]:
    """GPU name -> max concurrent sequences at each context with the serving features on (one
    :func:`planner.budget.plan` per point; the plain page uses :func:`ui.data.concurrency_series`)."""
    return {g.name: tuple(plan(model, g.framework_memory_bytes, replace(request, context_len=c), gpu_id=g.id)
                          .max_concurrent_sequences for c in contexts) for g in gpus}
