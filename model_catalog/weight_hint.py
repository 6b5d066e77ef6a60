"""The single weight dtype that comes closest to a checkpoint, from its config.json alone.

Weight dtype ``auto`` prices each tensor in the format the checkpoint ships it
(:mod:`model_catalog.quantization`) and is what the catalog and ``plan --config`` use. This guess is
for a ``quantization_config`` that ``auto`` cannot read (bitsandbytes, auto-round, fbgemm_fp8, a
compressed-tensors scheme of several groups): the custom panel then puts it in the sidebar and the
note names it (:func:`model_catalog.custom.read_custom_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.text import quote

WEIGHT_DTYPE_BY_TORCH_DTYPE: dict[str, str] = {
    "bfloat16": "bf16", "float16": "fp16", "float32": "bf16", "bf16": "bf16", "fp16": "fp16",
}
"""Unquantized checkpoints: serving dtype by config ``torch_dtype`` (fp32 is served in 16 bits)."""


def weight_dtype_hint(config: Mapping[str, Any]) -> tuple[str | None, str]:
    """The weight dtype that matches the checkpoint, from ``quantization_config`` or ``torch_dtype``.

    Returns:
        ``(dtype or None, explanation)``; dtype is a key of
        ``planner.model.dtypes.WEIGHT_DTYPES``.

    Sources: quant_method names of transformers' quantizers
    (transformers/utils/quantization_config.py: GPTQ/AWQ ``bits``, FP8
    ``fp8``, ``mxfp4``, bitsandbytes ``load_in_4bit``/``load_in_8bit``,
    compressed-tensors ``config_groups.*.weights.num_bits/type``).
    """
    quant = config.get("quantization_config")
    if isinstance(quant, Mapping):
        method = str(quant.get("quant_method", "")).lower()
        bits = quant.get("bits") or quant.get("w_bit")
        if method in ("gptq", "awq", "autoround", "auto-round") and bits in (4, 8):
            return ("int4" if bits == 4 else "int8"), f"quantization_config: {method} {bits}-bit"
        if method in ("fp8", "fbgemm_fp8"):
            return "fp8", f"quantization_config: {method}"
        if method == "mxfp4":
            return "mxfp4", "quantization_config: mxfp4"
        if method == "bitsandbytes":
            if quant.get("load_in_4bit"):
                return "int4", "quantization_config: bitsandbytes 4-bit (NF4/FP4 is about 4.1-4.5 bits; int4 is close)"
            if quant.get("load_in_8bit"):
                return "int8", "quantization_config: bitsandbytes 8-bit"
        if method == "compressed-tensors":
            for group in (quant.get("config_groups") or {}).values():
                weights = group.get("weights") if isinstance(group, Mapping) else None
                if isinstance(weights, Mapping):
                    num_bits, kind = weights.get("num_bits"), weights.get("type")
                    if num_bits == 8:
                        return (("fp8" if kind == "float" else "int8"),
                                f"quantization_config: compressed-tensors {kind} 8-bit")
                    if num_bits == 4 and kind == "int":
                        return "int4", "quantization_config: compressed-tensors int 4-bit"
        from model_catalog.quantization import Scheme, resolve_scheme

        try:
            scheme = resolve_scheme(quant)
        except ValueError:
            scheme = None
        if isinstance(scheme, Scheme):
            return "auto", f"quantization_config: {scheme.method} (weight dtype auto counts each tensor as shipped)"
        named = quote(method) if method else "(no quant_method)"
        return None, f"quantization_config {named} has no matching weight dtype here; pick one"
    torch_dtype = config.get("torch_dtype") or config.get("dtype")
    if isinstance(torch_dtype, str) and torch_dtype in WEIGHT_DTYPE_BY_TORCH_DTYPE:
        return WEIGHT_DTYPE_BY_TORCH_DTYPE[torch_dtype], f"torch_dtype {torch_dtype}"
    return None, "config states no torch_dtype or quantization_config"
