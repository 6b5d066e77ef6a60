"""Named values of a config, checked before transformers or any family adapter reads them.

:mod:`model_catalog.config_bounds` bounds every number, list and name a config states. This module checks the
values whose meaning is a choice from a short list, so that a wrong one is refused with the key, the value and
the choices instead of an exception from deep inside transformers or a plan of a checkpoint no engine loads:

* ``torch_dtype`` / ``dtype`` (transformers 4.56+ writes ``dtype``; both are read) must be one of
  :data:`CONFIG_DTYPES`. transformers' ``PreTrainedConfig.__init__`` turns the string into ``getattr(torch,
  value)`` (transformers configuration_utils.py), so "float128" surfaced as ``AttributeError``; it saves the
  dtype back as ``str(torch_dtype).split(".")[1]`` (``dict_dtype_to_str``), which for checkpoints is
  bfloat16, float16 or float32. vLLM's own spellings (vllm/config/model.py ``_STR_DTYPE_TO_TORCH_DTYPE``:
  half, float16, float, float32, bfloat16) map onto the same three.
* GPTQ and AWQ ``bits`` and ``group_size``
  (:func:`model_catalog.quantization.check_quantization_values`), as vLLM checks them when it builds the
  quantization config: vllm/model_executor/layers/quantization/awq.py ``AWQConfig.__init__``
  refuses any ``weight_bits`` but 4 (awq_marlin.py ``AWQMarlinConfig.TYPE_MAP`` also holds only 4);
  gptq.py ``GPTQConfig.__init__`` refuses any ``weight_bits`` outside 2, 3, 4, 8. Both divide the input
  width by ``group_size`` (``input_size_per_partition % group_size``, ``input_size // group_size``), where
  -1 stands for the whole input row (one scale per output channel, ``group_size = input_size``): 0 or any
  other negative divides by zero or gives negative group counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model_catalog.config_bounds import MAX_CONFIG_DEPTH, MODULE_LIST_SCOPES
from model_catalog.quantization import check_quantization_values
from planner.text import quote

SAVED_DTYPES: tuple[str, ...] = ("bfloat16", "float16", "float32")
"""The dtypes transformers saves for a checkpoint's weights: the ones a refusal suggests."""

CONFIG_DTYPES: tuple[str, ...] = (*SAVED_DTYPES, "half", "float", "float64", "double", "float8_e4m3fn", "float8_e5m2")
"""``torch_dtype`` / ``dtype`` values accepted: :data:`SAVED_DTYPES` and the other torch dtype names transformers
resolves with ``getattr(torch, value)`` (torch's aliases half / float / double, and its fp8 dtypes, which some
quantized checkpoints state), all of which planned before this check; "fp16" or "float128" raised inside
transformers."""

DTYPE_KEYS: tuple[str, ...] = ("torch_dtype", "dtype")
"""The keys that state a config's dtype (``dtype`` is the name transformers writes since 4.56)."""


def check_dtypes(config: Mapping[str, Any], where: str = "", depth: int = 0) -> None:
    """Refuse a ``torch_dtype`` / ``dtype`` string outside :data:`CONFIG_DTYPES`, in ``config`` and in every
    sub-config (a key ending in ``_config``: ``text_config``, ``vision_config``, ...; quantization metadata
    aside, whose keys are not dtypes of the model).

    Raises:
        ValueError: naming the dotted key, the value (at most 60 characters) and the accepted values.
    """
    for key in DTYPE_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value not in CONFIG_DTYPES:
            raise ValueError(f"config key '{where}{key}' is {quote(value)}, which is not a dtype the planner reads: "
                             f"use {', '.join(SAVED_DTYPES[:-1])} or {SAVED_DTYPES[-1]} (the dtype the checkpoint's "
                             "weights are saved in, as transformers writes it)")
    if depth >= MAX_CONFIG_DEPTH:
        return
    for key, value in config.items():
        if isinstance(key, str) and key.endswith("_config") and key not in MODULE_LIST_SCOPES \
                and isinstance(value, Mapping):
            check_dtypes(value, f"{where}{key}.", depth + 1)


def check_values(config: Mapping[str, Any]) -> None:
    """:func:`check_dtypes` on the whole config, :func:`check_quantization_values` on its ``quantization_config``
    and its ``text_config``'s (where :func:`model_catalog.hf_config._raw_quantization_config` finds it)."""
    check_dtypes(config)
    for where, source in (("", config), ("text_config.", config.get("text_config"))):
        quant = source.get("quantization_config") if isinstance(source, Mapping) else None
        if isinstance(quant, Mapping):
            check_quantization_values(quant, f"{where}quantization_config")
