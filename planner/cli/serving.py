"""Serving-feature flags of ``python -m planner plan`` and ``find`` (vLLM's flag names).

Flags: ``--enable-lora --max-loras --max-lora-rank --max-cpu-loras --lora-dtype`` (vLLM's names;
with ``--engine sglang`` they price SGLang's ``--max-loras-per-batch`` pool, whose
``--lora-target-modules`` is the one SGLang-only flag); ``--speculative-config JSON`` (vLLM's:
``method``, ``model``, ``num_speculative_tokens``, ``draft_vocab_size``) or its parts
``--speculative-method --num-speculative-tokens --speculative-model`` (the older vLLM flag names; they
override the JSON). A ``draft_model`` is read from the catalog; MTP layers from the model's config
(``num_nextn_predict_layers`` / ``mtp_num_hidden_layers``). KV offload: ``--kv-offloading-size GiB
--kv-offloading-backend {native,lmcache}`` (vLLM V1; SGLang's ``--hicache-size``), ``--swap-space GiB``
(vLLM V0 only), ``--host-link-gb-s`` (the host link; default: the GPU's entry in
:data:`planner.serving.offload.HOST_LINKS`). Images: ``--images-per-request N --image-width PX
--image-height PX`` (the workload; default 1,024 x 1,024) and vLLM's ``--limit-mm-per-prompt
'{"image": N}'``, priced from the model config's ``vision_config`` (Qwen2-VL / 2.5-VL / 3-VL / 3.5).

With none of them given the request carries no serving features and the JSON stays byte-identical;
with any, ``plan`` adds a ``serving`` key (:attr:`planner.budget.Plan.serving`) and ``find`` sizes
every setup with the features on and writes their flags into each launch command.

This module is a CLI edge like :mod:`planner.cli.engine`: it may read the catalog, inside functions.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping

from planner.cli.args import gib_amount, non_negative_int, positive_float, positive_int
from planner.serving import LoRAConfig, ServingFeatures
from planner.serving.multimodal import MultimodalConfig, vision_from_config
from planner.serving.offload import OFFLOAD_BACKENDS, OffloadConfig
from planner.serving.speculative import SPECULATIVE_METHODS, SpeculativeConfig, mtp_layers_from_config

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
                   help="SGLang only: modules with slots (default all); vLLM allocates every supported module")
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
                   help="images each request carries (Qwen-VL-family models; their tokens join each sequence)")
    g.add_argument("--image-width", type=positive_int, default=None, metavar="PX", help="image width (default 1024)")
    g.add_argument("--image-height", type=positive_int, default=None, metavar="PX", help="image height (default 1024)")
    g.add_argument("--limit-mm-per-prompt", default=None, metavar="JSON",
                   help='vLLM\'s per-prompt limit, e.g. \'{"image": 2}\' (0 switches the encoder profile off)')


def _speculative_from_args(args: argparse.Namespace, raw_config: Mapping | None) -> SpeculativeConfig | None:
    """The speculative request of ``--speculative-config`` and its part flags, or None.

    Raises:
        ValueError: bad JSON, an unknown key, a draft model the catalog lacks, or parts without a method.
    """
    spec: dict = {}
    if getattr(args, "speculative_config", None) is not None:
        try:
            spec = json.loads(args.speculative_config)
        except json.JSONDecodeError as exc:
            raise ValueError(f"--speculative-config is not JSON ({exc.msg}); e.g. "
                             '\'{"method": "eagle", "num_speculative_tokens": 3}\'') from None
        if not isinstance(spec, dict):
            raise ValueError("--speculative-config must be a JSON object with method and num_speculative_tokens")
        unknown = sorted(set(spec) - {"method", "model", "num_speculative_tokens", "draft_vocab_size"})
        if unknown:
            raise ValueError(f"--speculative-config key(s) {unknown} are not modelled; use method, model, "
                             "num_speculative_tokens, draft_vocab_size")
    for key, flag in (("method", "speculative_method"), ("num_speculative_tokens", "num_speculative_tokens"),
                      ("model", "speculative_model")):
        if getattr(args, flag, None) is not None:
            spec[key] = getattr(args, flag)
    if not spec:
        return None
    method = spec.get("method")
    if method is None:
        raise ValueError("speculative decoding needs a method: --speculative-method or \"method\" in "
                         f"--speculative-config ({', '.join(SPECULATIVE_METHODS)})")
    if method == "deepseek_mtp" or (isinstance(method, str) and method.endswith("_mtp")):
        method = "mtp"  # vLLM folds the per-family MTP names into "mtp"
    layers = mtp_layers_from_config(raw_config or {})
    draft = None
    model_id = spec.get("model") or ""
    if method == "draft_model" and model_id:
        from model_catalog import model_spec

        draft = model_spec(model_id)
        model_id = draft.model_id
    tokens = spec.get("num_speculative_tokens") or (layers if method == "mtp" and layers else 1)
    if not isinstance(tokens, int) or isinstance(tokens, bool):
        raise ValueError(f"num_speculative_tokens must be a whole number, got {tokens!r}")
    return SpeculativeConfig(method=method, num_speculative_tokens=tokens, draft=draft, draft_model_id=model_id,
                             num_mtp_layers=layers, draft_vocab_size=spec.get("draft_vocab_size") or 32000)


def _multimodal_from_args(args: argparse.Namespace, raw_config: Mapping) -> MultimodalConfig | None:
    """The images the flags describe, or None when no image flag is given.

    Raises:
        ValueError: image flags for a model without a vision config the planner reads, or a bad limit.
    """
    names = ("images_per_request", "image_width", "image_height", "limit_mm_per_prompt")
    if all(getattr(args, n, None) is None for n in names):
        return None
    limit = None
    if args.limit_mm_per_prompt is not None:
        try:
            parsed = json.loads(args.limit_mm_per_prompt)
        except json.JSONDecodeError:
            parsed = None
        value = parsed.get("image") if isinstance(parsed, dict) else parsed
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"--limit-mm-per-prompt takes JSON such as '{{\"image\": 2}}', got "
                             f"{args.limit_mm_per_prompt!r}")
        limit = value
    vision = vision_from_config(raw_config)
    if vision is None:
        raise ValueError("image flags need a vision-language model whose config.json has a vision_config the planner "
                         "reads (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5); this one has none")
    images = args.images_per_request if args.images_per_request is not None else 1
    return MultimodalConfig(vision=vision, images_per_request=images, image_width=args.image_width or 1024,
                            image_height=args.image_height or 1024, limit_mm_per_prompt=limit)


def raw_model_config(args: argparse.Namespace) -> Mapping:
    """The raw config.json of the planned model (``--model`` from the catalog, ``--config`` from its file), for
    the keys the spec does not carry (``num_nextn_predict_layers``); empty for a GGUF or an unknown id."""
    try:
        if getattr(args, "config", None) is not None:
            with open(args.config, encoding="utf-8") as f:
                raw = json.load(f)
            return raw if isinstance(raw, dict) else {}
        if getattr(args, "model", None):
            from model_catalog import get_model_entry

            return get_model_entry(args.model).config
    except (OSError, ValueError):
        pass
    return {}


def serving_from_args(args: argparse.Namespace, *, engine: str | None = None,
                      raw_config: Mapping | None = None) -> ServingFeatures | None:
    """The :class:`ServingFeatures` the flags ask for, or None when no serving flag is given.

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
        "images_per_request", "image_width", "image_height", "limit_mm_per_prompt"))
    if raw_config is None and (wants_spec or wants_images):
        raw_config = raw_model_config(args)
    speculative = _speculative_from_args(args, raw_config) if wants_spec else None
    multimodal = _multimodal_from_args(args, raw_config or {}) if wants_images else None
    offload = None
    if getattr(args, "kv_offloading_size", None) is not None or getattr(args, "swap_space", None) is not None:
        offload = OffloadConfig(kv_offloading_size=args.kv_offloading_size, swap_space=args.swap_space,
                                kv_offloading_backend=args.kv_offloading_backend or "native",
                                host_link_gb_s=args.host_link_gb_s)
    else:
        for name in ("kv_offloading_backend", "host_link_gb_s"):
            if getattr(args, name, None) is not None:
                flag = "--" + name.replace("_", "-")
                raise ValueError(f"{flag} describes KV offload: add --kv-offloading-size GiB (or --swap-space for "
                                 f"vLLM V0), or drop {flag}")
    if lora is None and speculative is None and offload is None and multimodal is None:
        return None
    features = ServingFeatures(engine=engine or getattr(args, "engine", None) or "vllm", lora=lora,
                               speculative=speculative, offload=offload, multimodal=multimodal)
    features.validate()
    return features


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
        lines.append(f"speculative  {spec['method']}, {spec['num_speculative_tokens']} tokens: "
                     f"+{g(spec['draft_weights_bytes_per_gpu'])} drafter weights, "
                     f"+{spec['draft_kv_cache_bytes_per_token_per_gpu']:,} B KV per token, "
                     f"+{spec['extra_tokens_per_sequence']} slots per sequence")
    mm = serving.get("multimodal")
    if mm:
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
                      if per_token is not None else f"; {off['host_link']}: nothing to copy")
            lines.append(f"offload      {off['mechanism']}: {g(off['host_bytes_per_gpu'])} host per GPU holds "
                         f"{off['host_kv_capacity_tokens']:,} tokens beside {off['gpu_kv_capacity_tokens']:,} on the "
                         f"GPU{timing}")
        else:
            lines.append(f"offload      not modelled: {off['notes'][0]}")
    for engine, flags in serving["launch_flags"].items():
        lines.append(f"  {engine} flags: {flags}")
    lines += [f"  note: {n}" for n in serving["notes"]]
    return lines
