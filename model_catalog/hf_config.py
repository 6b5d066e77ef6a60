"""Hugging Face config.json -> :class:`planner.model.ModelSpec`.

The raw dict is read through transformers' own config classes
(``AutoConfig.for_model(model_type, **raw)``; never remote code), so that
defaults, attribute maps and derived fields (``head_dim``, ``layer_types``) are
the library's. Multimodal configs (Gemma 3, Llama 4) are reduced to their text
config with ``get_text_config()``. The family adapter (:mod:`model_catalog.families`)
turns the config into parameter groups; this module turns ``layer_types`` into
one cache spec per decoder layer.

Design notes (assumptions):
    1. Legacy Falcon configs (``model_type`` ``RefinedWebModel`` / ``RefinedWeb``,
       keys ``n_layer``, ``n_head``, ``n_head_kv``) are mapped to ``falcon`` and
       ``num_hidden_layers`` / ``num_attention_heads`` / ``num_kv_heads`` before
       the config class sees them: transformers 5 knows neither the type nor the
       old keys (it would silently use its defaults). The stored config stays
       original.
    2. Per-layer cache kind: the config's ``layer_types`` when it has one, else
       the rule of transformers' cache (``get_layer_types_and_kwargs`` in
       cache_utils.py): a non-null ``sliding_window`` makes every layer sliding
       (Mistral-7B-v0.1, Phi-3, Starcoder2), a non-null ``attention_chunk_size``
       every layer chunked, otherwise full attention. Qwen2's config already
       honours ``use_sliding_window`` / ``max_window_layers`` in its ``layer_types``.
    3. MLA families cache one latent per layer (``MLAAttention``); Mamba layers
       (``linear_attention``) a constant state (``RecurrentState``).
    4. ``torch_dtype`` is the raw config's ``torch_dtype`` (or ``dtype``), else
       its ``text_config``'s; None when absent.

Sources: transformers 5 ``AutoConfig.for_model`` (models/auto/configuration_auto.py),
``PreTrainedConfig.get_text_config``, cache_utils.py ``get_layer_types_and_kwargs``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from huggingface_hub.errors import StrictDataclassError
from transformers import AutoConfig
from transformers.utils import logging as hf_logging

from model_catalog.families import FAMILIES, FamilyParts, config_int
from model_catalog.quantization import checkpoint_formats
from planner.model import ModelSpec
from planner.model.layers import ChunkedLocalAttention, FullAttention, LayerSpec, SlidingWindowAttention

LEGACY_MODEL_TYPES: dict[str, str] = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon"}
"""Old ``model_type`` names -> the name transformers 5 registers."""

LEGACY_KEYS: dict[str, dict[str, str]] = {
    "falcon": {"n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_head_kv": "num_kv_heads"},
}
"""Old config keys per family -> the keys the transformers 5 config class reads."""

MULTIMODAL_MODEL_TYPES: frozenset[str] = frozenset({"gemma3", "llama4"})
"""Wrapper configs whose text config (``get_text_config()``) is planned."""

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted({*FAMILIES, *MULTIMODAL_MODEL_TYPES, *LEGACY_MODEL_TYPES}))
"""``model_type`` values a stored or pasted config.json may have."""


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' config warnings (token ids, rope checks) for one call."""
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)


def _normalized(raw_config: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """``(model_type, kwargs)`` with legacy names mapped (design note 1)."""
    model_type = raw_config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ValueError(f"config.json needs a 'model_type' string, got {model_type!r}")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"config key 'model_type' is {model_type!r}, which the planner cannot read yet; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    model_type = LEGACY_MODEL_TYPES.get(model_type, model_type)
    # Deep copy: config classes edit nested dicts in place (rope_scaling gains keys).
    kwargs = {key: copy.deepcopy(value) for key, value in raw_config.items() if key != "model_type"}
    for old, new in LEGACY_KEYS.get(model_type, {}).items():
        if old in kwargs and new not in kwargs:
            kwargs[new] = kwargs.pop(old)
    return model_type, kwargs


def load_text_config(raw_config: Mapping[str, Any]) -> Any:
    """Read a raw config.json dict through transformers' config class.

    Args:
        raw_config: config.json as a dict (original keys and values).

    Returns:
        The transformers text config (``PreTrainedConfig``) of the model.

    Raises:
        ValueError: no or unsupported ``model_type``, or the config class
            rejected a value (the message names the key).
    """
    model_type, kwargs = _normalized(raw_config)
    try:
        with _quiet_transformers():
            config = AutoConfig.for_model(model_type, **kwargs)
    except (ValueError, TypeError, KeyError, StrictDataclassError) as exc:
        raise ValueError(f"transformers' {model_type!r} config class rejected it: {exc}") from exc
    except ArithmeticError as exc:  # e.g. num_attention_heads 0 -> ZeroDivisionError inside the class
        raise ValueError(
            f"transformers' {model_type!r} config class could not derive its sizes ({exc}); check that "
            "hidden_size, num_attention_heads and num_key_value_heads are positive integers") from exc
    return config.get_text_config()


def _raw_torch_dtype(raw_config: Mapping[str, Any]) -> str | None:
    """Design note 4."""
    for source in (raw_config, raw_config.get("text_config") or {}):
        for key in ("torch_dtype", "dtype"):
            value = source.get(key)
            if isinstance(value, str):
                return value
    return None


def _raw_quantization_config(raw_config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The raw config's ``quantization_config`` (or its ``text_config``'s); None when absent.

    Sources: DeepSeek-V3 and gpt-oss config.json (top-level ``quantization_config``).
    """
    for source in (raw_config, raw_config.get("text_config") or {}):
        value = source.get("quantization_config") if isinstance(source, Mapping) else None
        if isinstance(value, Mapping):
            return value
    return None


def _layer_types(cfg: Any) -> list[str]:
    """One cache kind name per decoder layer (design note 2)."""
    num_layers = config_int(cfg, "num_hidden_layers")
    layer_types = getattr(cfg, "layer_types", None)
    if layer_types is None:
        if getattr(cfg, "sliding_window", None) is not None:
            return ["sliding_attention"] * num_layers
        if getattr(cfg, "attention_chunk_size", None) is not None:
            return ["chunked_attention"] * num_layers
        return ["full_attention"] * num_layers
    if len(layer_types) != num_layers:
        raise ValueError(
            f"config key 'layer_types' lists {len(layer_types)} layers but 'num_hidden_layers' is {num_layers}"
        )
    return list(layer_types)


def layer_specs(cfg: Any, parts: FamilyParts) -> tuple[LayerSpec, ...]:
    """Cache spec per decoder layer from ``layer_types`` and the family's facts.

    Raises:
        ValueError: a layer type the planner has no spec for, or a window /
            chunk size missing from the config (the message names the key).
    """
    full = FullAttention(num_key_value_heads=parts.num_key_value_heads, head_dim=parts.head_dim,
                         transformers_kv_heads=parts.transformers_kv_heads)
    specs: list[LayerSpec] = []
    for layer_type in _layer_types(cfg):
        if layer_type == "full_attention":
            specs.append(parts.latent or full)
        elif layer_type == "sliding_attention":
            specs.append(
                SlidingWindowAttention(
                    num_key_value_heads=full.num_key_value_heads,
                    head_dim=full.head_dim,
                    sliding_window=config_int(cfg, "sliding_window"),
                    transformers_kv_heads=full.transformers_kv_heads,
                )
            )
        elif layer_type == "chunked_attention":
            specs.append(
                ChunkedLocalAttention(
                    num_key_value_heads=full.num_key_value_heads,
                    head_dim=full.head_dim,
                    attention_chunk_size=config_int(cfg, "attention_chunk_size"),
                    transformers_kv_heads=full.transformers_kv_heads,
                )
            )
        elif layer_type == "linear_attention" and parts.recurrent is not None:
            specs.append(parts.recurrent)
        else:
            raise ValueError(f"config key 'layer_types' holds {layer_type!r}, which has no cache spec here")
    return tuple(specs)


def _activation_width(cfg: Any, parts: FamilyParts) -> int:
    """Widest MLP activation one token produces [elements] (for the overhead estimate).

    Dense: ``intermediate_size``. MoE: ``num_experts_per_tok`` routed experts of
    ``moe_intermediate_size`` (else ``intermediate_size``) plus shared experts
    (``n_shared_experts`` x ``moe_intermediate_size`` or
    ``shared_expert_intermediate_size``); the larger of the two.
    Sources: the config keys of the same names (DeepSeek-V3, Qwen3-MoE, Mixtral configs).
    """
    hidden = config_int(cfg, "hidden_size")
    dense = getattr(cfg, "intermediate_size", None)
    dense = dense if isinstance(dense, int) and dense > 0 else 4 * hidden
    if not parts.num_experts:
        return dense
    expert = getattr(cfg, "moe_intermediate_size", None)
    expert = expert if isinstance(expert, int) and expert > 0 else dense
    shared = (getattr(cfg, "n_shared_experts", None) or 0) * expert
    shared += getattr(cfg, "shared_expert_intermediate_size", None) or 0
    return max(dense, parts.num_experts_per_tok * expert + shared)


def model_spec_from_config(raw_config: Mapping[str, Any], model_id: str, *, display_name: str = "") -> ModelSpec:
    """Build the planner's :class:`ModelSpec` from a config.json dict.

    Args:
        raw_config: config.json as a dict (original keys and values).
        model_id: Id to put on the spec (and in error messages).
        display_name: UI name; defaults to ``model_id``.

    Returns:
        Layers (one cache spec each), parameter groups and headline sizes.

    Raises:
        ValueError: ``"<model_id>: ..."`` naming the missing or bad key.

    Example:
        ``model_spec_from_config({"model_type": "llama", "hidden_size": 4096, ...}, "my/llama")``
    """
    if not isinstance(raw_config, Mapping):
        raise ValueError(f"{model_id}: config.json must be a JSON object, got {type(raw_config).__name__}")
    try:
        cfg = load_text_config(raw_config)
        parts = FAMILIES[cfg.model_type](cfg)
        params, quantization = checkpoint_formats(parts.params, _raw_quantization_config(raw_config))
        layers = layer_specs(cfg, parts)
        max_positions = getattr(cfg, "max_position_embeddings", None)
        return ModelSpec(
            model_id=model_id,
            model_type=cfg.model_type,
            layers=layers,
            params=params,
            hidden_size=config_int(cfg, "hidden_size"),
            num_attention_heads=config_int(cfg, "num_attention_heads"),
            num_key_value_heads=parts.num_key_value_heads,
            head_dim=parts.head_dim,
            vocab_size=config_int(cfg, "vocab_size"),
            max_position_embeddings=max_positions if isinstance(max_positions, int) else None,
            torch_dtype=_raw_torch_dtype(raw_config),
            num_experts=parts.num_experts,
            num_experts_per_tok=parts.num_experts_per_tok,
            intermediate_size=_activation_width(cfg, parts),
            display_name=display_name or model_id,
            checkpoint_quantization=quantization,
        )
    except ValueError as exc:
        raise ValueError(f"{model_id}: {exc}") from exc
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"{model_id}: config.json is missing or mistypes a key the planner needs ({exc!r})") from exc
