"""A config's ``quantization_config`` -> the format each tensor has in the published checkpoint.

Pre-quantized checkpoints do not quantize everything: gpt-oss stores only the
routed experts in MXFP4 and keeps attention, router, embeddings and ``lm_head``
in bf16 (``modules_to_not_convert``); DeepSeek-V3 stores every linear layer in
FP8 e4m3 with an fp32 scale per 128 x 128 block and keeps embeddings, norms,
the router and ``lm_head`` in bf16. This module marks each parameter group with
that format (``ParamGroup.checkpoint``); the planner's weight dtype ``auto``
("as the checkpoint ships") then sums the bytes the checkpoint really holds.

Design notes (assumptions):
    1. Only ``linear`` groups (attention / MLP / expert matrices) are ever
       quantized; embeddings, ``lm_head``, norms, biases, routers, convolutions
       and other tensors keep the checkpoint's ``torch_dtype``. This is what the
       transformers quantizers replace (``nn.Linear`` and expert modules) and
       what the checkpoints hold.
    2. ``modules_to_not_convert`` patterns (``model.layers.*.self_attn``) are
       matched against group module paths with the ``model.`` wrapper dropped;
       a concrete layer index in a pattern (``layers.3.mlp``) is widened to all
       layers (groups merge layers), which over-excludes, never under-counts.
    3. Supported ``quant_method`` values: ``mxfp4`` (4.25 bits: 32 e2m1 values +
       one e8m0 scale), ``fp8`` (1 byte; ``weight_block_size`` [br, bc] adds one
       fp32 ``weight_scale_inv`` per block, otherwise one fp32 scale per tensor),
       ``gptq`` / ``awq`` (``bits`` + one fp16 scale and one packed ``bits``-wide
       zero point per ``group_size`` inputs). Anything else is reported as
       unsupported and ``auto`` then counts the weights at ``torch_dtype``.
    4. Fused expert tensors (``gate_up_proj``) take block scales over the fused
       shape; that equals the checkpoint's separate gate / up tensors whenever the
       expert width is a multiple of the block (DeepSeek-V3: 2048 = 16 x 128).
       Worked example, DeepSeek-V3 ``q_b_proj`` (24576, 1536): 24576 x 1536 B
       + 192 x 12 x 4 B = 37,757,952 B.

Sources: transformers 5.24 quantizers/quantizer_mxfp4.py and
integrations/mxfp4.py (``GptOssExperts`` blocks + scales), quantizers/
quantizer_finegrained_fp8.py and integrations/finegrained_fp8.py
(``weight_scale_inv`` per ``weight_block_size`` block), quantizers/quantizer_gptq.py;
DeepSeek-V3 README_WEIGHTS.md ("FP8 Weight Documentation"); OCP Microscaling
spec v1.0 (MXFP4); gpt-oss config.json ``quantization_config``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from typing import Any

from planner.model.dtypes import FP8_BLOCK128, WEIGHT_DTYPES, StorageFormat
from planner.model.params import ParamGroup

_LAYER_INDEX = re.compile(r"\.\d+(?=\.|$)")


def _format_for(config: Mapping[str, Any]) -> StorageFormat | None:
    """The storage format of quantized tensors for one ``quantization_config`` (note 3)."""
    method = str(config.get("quant_method", "")).lower()
    if method == "mxfp4":
        return WEIGHT_DTYPES["mxfp4"]
    if method == "fp8":
        block = config.get("weight_block_size")
        if block is None:
            return WEIGHT_DTYPES["fp8"]
        rows, cols = (int(v) for v in block)
        if (rows, cols) == FP8_BLOCK128.block_shape:
            return FP8_BLOCK128
        return replace(FP8_BLOCK128, name=f"fp8_block{rows}x{cols}", block_shape=(rows, cols),
                       label=f"FP8 e4m3 + one fp32 scale per {rows} x {cols} block")
    if method in ("gptq", "awq"):
        bits = int(config.get("bits", config.get("w_bit", 4)))
        group = int(config.get("group_size", config.get("q_group_size", 128)))
        if group <= 0:  # act-order / per-channel GPTQ: one scale + zero per output row
            return StorageFormat(name=f"{method}-int{bits}", bits_per_element=Fraction(bits),
                                 per_channel_scale_bytes=2, label=f"{method} int{bits}, per-channel scale")
        return StorageFormat(name=f"{method}-int{bits}-g{group}",
                             bits_per_element=Fraction(bits) + Fraction(16 + bits, group),
                             label=f"{method} int{bits}: fp16 scale + {bits}-bit zero per {group} inputs")
    return None


def _excluded_patterns(config: Mapping[str, Any]) -> tuple[str, ...]:
    """``modules_to_not_convert`` (or ``ignore`` / ``ignored_layers``) as group path prefixes (note 2)."""
    raw = config.get("modules_to_not_convert") or config.get("ignore") or config.get("ignored_layers") or ()
    patterns = []
    for pattern in raw:
        text = str(pattern).removeprefix("model.")
        patterns.append(_LAYER_INDEX.sub(".*", text))
    return tuple(patterns)


def _module_path(group: ParamGroup) -> str:
    """``layers.*.self_attn.q_proj`` for ``layers.*.self_attn.q_proj.weight`` (experts keep their tensor name)."""
    name = group.name
    return name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name


def _excluded(group: ParamGroup, patterns: tuple[str, ...]) -> bool:
    path = _module_path(group)
    return any(path == p or path.startswith(p + ".") or group.name.startswith(p + ".") for p in patterns)


def checkpoint_formats(params: tuple[ParamGroup, ...],
                       quantization_config: Mapping[str, Any] | None) -> tuple[tuple[ParamGroup, ...], str]:
    """Mark the groups a pre-quantized checkpoint stores quantized.

    Args:
        params: Parameter groups from the family adapter.
        quantization_config: The config's ``quantization_config`` (None when the
            checkpoint ships unquantized).

    Returns:
        ``(groups, description)``: groups with ``checkpoint`` set on the quantized
        ones, and one line for ``ModelSpec.checkpoint_quantization`` (empty when
        unquantized; ``unsupported ...`` for an unknown ``quant_method``).

    Example: gpt-oss-20b (``mxfp4``, attention / router / embeddings excluded)
    marks the two expert groups; weight dtype ``auto`` then gives
    13,761,264,768 B (12.82 GiB; the gpt-oss model card says 12.8 GiB).
    """
    if not isinstance(quantization_config, Mapping) or not quantization_config:
        return params, ""
    fmt = _format_for(quantization_config)
    method = quantization_config.get("quant_method", "?")
    if fmt is None:
        return params, f"unsupported quant_method {method!r}: weight dtype auto counts torch_dtype weights"
    patterns = _excluded_patterns(quantization_config)
    out, marked = [], 0
    for group in params:
        if group.kind == "linear" and not _excluded(group, patterns):
            out.append(replace(group, checkpoint=fmt))
            marked += 1
        else:
            out.append(group)
    total = sum(1 for group in params if group.kind == "linear")
    return tuple(out), f"{method}: {fmt.label}; {marked} of {total} linear weight groups"
