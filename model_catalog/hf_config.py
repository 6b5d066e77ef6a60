"""Hugging Face config.json -> :class:`planner.model.ModelSpec`.

The raw dict is read through transformers' own config classes
(``AutoConfig.for_model(model_type, **raw)``; never remote code), so that
defaults, attribute maps and derived fields (``head_dim``, ``layer_types``) are
the library's. Multimodal configs (Gemma 3 / 4, Llama 4, Qwen3-VL, Qwen3.5, Kimi K2.5,
MiniMax-M3, Step 3.7) are read through their text config (``get_text_config()``) for the language model,
and their vision towers and projectors are appended to the parameter groups where the config states
them (:mod:`model_catalog.families_multimodal`).
The family adapter (:data:`ADAPTERS`: :mod:`model_catalog.families`, ``families_gqa``,
``families_sparse``, ``families_hybrid``) turns the config into parameter groups and,
where layers differ in shape, one cache spec per layer; otherwise this module turns
``layer_types`` into them.

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
    5. A ``model_type`` transformers has no config class for is read only through
       :data:`BY_SOURCE_MODEL_TYPES`: the class of the architecture the config
       declares (``architectures``, ``auto_map``) or that vLLM serves it with, each
       entry with its source; the spec keeps the raw ``model_type`` and the
       verification calls it "by source".
    6. Wrappers: a ``text_config`` must state its sizes (``hidden_size``,
       ``num_hidden_layers``), else transformers' defaults would size another model;
       a ``layer_types`` list must have one entry per layer; a wrapper written flat
       (Step 3.7 Flash: text keys at the top) is read through the wrapper's own text
       config class; and a ``text_config`` without ``tie_word_embeddings`` takes the
       wrapper's, because the wrapper model ties by its own flag.

Sources: transformers 5 ``AutoConfig.for_model`` (models/auto/configuration_auto.py),
``PreTrainedConfig.get_text_config``, cache_utils.py ``get_layer_types_and_kwargs``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from huggingface_hub.errors import StrictDataclassError
from transformers import AutoConfig
from transformers.utils import logging as hf_logging

from model_catalog.families import FAMILIES, FamilyParts, config_int
from model_catalog.families_gqa import GQA_FAMILIES
from model_catalog.families_hybrid import HYBRID_FAMILIES
from model_catalog.families_multimodal import tower_groups
from model_catalog.families_sparse import SPARSE_FAMILIES
from model_catalog.quantization import checkpoint_formats
from planner.model import ModelSpec
from planner.model.layers import ChunkedLocalAttention, FullAttention, LayerSpec, NoCache, SlidingWindowAttention
from planner.serving.vision_towers import is_tower_group
from planner.text import echo, quote, reason

LEGACY_MODEL_TYPES: dict[str, str] = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon"}
"""Old ``model_type`` names -> the name transformers 5 registers."""

LEGACY_KEYS: dict[str, dict[str, str]] = {
    "falcon": {"n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_head_kv": "num_kv_heads"},
}
"""Old config keys per family -> the keys the transformers 5 config class reads."""


@dataclass(frozen=True, kw_only=True)
class BySource:
    """How a ``model_type`` transformers has no config class for is read (design note 5).

    Attributes:
        read_as: ``model_type`` of the transformers config class that reads the keys.
        architecture: The architecture the config declares or an engine serves it with.
        source: Where that mapping is stated.
        text_config: Read the raw ``text_config`` (the language model of a multimodal wrapper).
        drop_null: Drop keys whose value is null (the class would refuse them; the
            family adapter does not read them).
    """

    read_as: str
    architecture: str
    source: str
    text_config: bool = False
    drop_null: bool = False


BY_SOURCE_MODEL_TYPES: dict[str, BySource] = {
    "kimi_k2": BySource(
        read_as="deepseek_v3", architecture="DeepseekV3ForCausalLM",
        source="Kimi-K2 config.json: 'architectures': ['DeepseekV3ForCausalLM'], auto_map "
               "configuration_deepseek.DeepseekV3Config; vLLM serves it with DeepseekV3ForCausalLM"),
    "kimi_k3": BySource(
        read_as="kimi_linear", architecture="KimiLinearForCausalLM", text_config=True,
        source="Kimi-K3 config.json: text_config 'architectures': ['KimiLinearForCausalLM'], "
               "auto_map modeling_kimi_linear.KimiLinearForCausalLM"),
    "minimax_m3": BySource(
        read_as="minimax_m3_vl_text", architecture="MiniMaxM3ForCausalLM",
        source="nvidia/MiniMax-M3-NVFP4 ships the same text model as transformers' minimax_m3_vl "
               "(text config minimax_m3_vl_text, MiniMaxM3VLForCausalLM) with the same keys"),
    "nemotron-nas": BySource(
        read_as="llama", architecture="DeciLMForCausalLM", drop_null=True,
        source="config.json 'architectures': ['DeciLMForCausalLM']; vLLM vllm/model_executor/models/"
               "nemotron_nas.py builds Llama layers per block_configs"),
    "mimo": BySource(
        read_as="qwen2", architecture="MiMoForCausalLM",
        source="vLLM vllm/model_executor/models/mimo.py: MiMoForCausalLM extends Qwen2ForCausalLM "
               "(its MTP layers are not part of the model)"),
    "deepseek_ref": BySource(
        read_as="deepseek_v4", architecture="DeepseekV4ForCausalLM",
        source="config.json 'architectures': ['DeepseekV4ForCausalLM'] (SGLang's repackaging of DeepSeek-V4)"),
}
"""``model_type`` values transformers 5.24 has no config class for, read through the
architecture they declare (their verification is "by source", not exact)."""

ADAPTERS: dict[str, Callable[[Any], FamilyParts]] = {**FAMILIES, **GQA_FAMILIES, **SPARSE_FAMILIES, **HYBRID_FAMILIES}
"""Family adapter per (text) config ``model_type``."""

MULTIMODAL_MODEL_TYPES: frozenset[str] = frozenset({
    "gemma3", "llama4", "gemma4", "qwen3_5", "qwen3_5_moe", "qwen3_vl", "qwen3_vl_moe", "kimi_k25",
    "minimax_m3_vl", "step3p7",
})
"""Wrapper configs whose text config (``get_text_config()``) is planned."""

SUPPORTED_MODEL_TYPES: tuple[str, ...] = tuple(sorted({*ADAPTERS, *MULTIMODAL_MODEL_TYPES, *LEGACY_MODEL_TYPES,
                                                        *BY_SOURCE_MODEL_TYPES}))
"""``model_type`` values a stored or pasted config.json may have."""

TEXT_SIZE_KEYS: tuple[str, ...] = ("hidden_size", "num_hidden_layers")
"""Keys a ``text_config`` must state; without them transformers' defaults would size another model."""


TYPE_WORDS: dict[str, str] = {"int": "a whole number without a decimal point", "float": "a number",
                              "bool": "true or false", "str": "a text", "dict": "an object", "list": "a list",
                              "tuple": "a list", "NoneType": "null"}
"""How a message names the Python types transformers' strict config classes state (huggingface_hub
``StrictDataclassFieldValidationError``: "Field 'x' expected int, got float")."""


def plain_reason(exc: BaseException) -> str:
    """What a library's exception says, for a message: its last line, at most 60 characters
    (:func:`planner.text.reason`), without the Python exception class's name."""
    text, prefix = reason(exc), f"{type(exc).__name__}: "
    return text.removeprefix(prefix) if text.startswith(prefix) else "a value it does not accept"


def _json_text(value: Any) -> str:
    """A config value as JSON writes it (``true``, ``null``), else as :func:`planner.text.echo` does."""
    if isinstance(value, bool) or value is None:
        return "null" if value is None else str(value).lower()
    return echo(value)


def rejection(exc: BaseException, read_as: str, kwargs: Mapping[str, Any]) -> str:
    """A config class's refusal in plain words: the key, its value and the type the class expects for a strict
    dataclass field (transformers 5 configs are huggingface_hub strict dataclasses), else the class's own reason
    (:func:`plain_reason`). Never a Python exception class's name."""
    text = str(exc)
    field = re.search(r"[Ff]ield '([^']{1,128})'", text)
    if isinstance(exc, StrictDataclassError) and field:
        key = field.group(1)
        expected = [TYPE_WORDS.get(name, name) for name in dict.fromkeys(re.findall(r"expected (\w+)", text))]
        text_config = kwargs.get("text_config")
        source = kwargs if key in kwargs or not isinstance(text_config, Mapping) else text_config
        value = f" is {_json_text(source[key])}" if key in source else ""
        return (f"config key {quote(key)}{value}, which transformers' {read_as!r} config class does not take: it "
                f"expects {' or '.join(expected) or 'another type'}; fix the value")
    return f"transformers' {read_as!r} config class rejected it: {plain_reason(exc)}"


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    """Silence transformers' config warnings (token ids, rope checks) for one call."""
    previous = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        yield
    finally:
        hf_logging.set_verbosity(previous)


def _check_layer_types(config: Mapping[str, Any], where: str) -> None:
    """Refuse a ``layer_types`` list whose length is not ``num_hidden_layers`` (naming the fix)."""
    layer_types, layers = config.get("layer_types"), config.get("num_hidden_layers")
    if isinstance(layer_types, list) and isinstance(layers, int) and not isinstance(layers, bool):
        if len(layer_types) not in (layers, layers + int(config.get("num_nextn_predict_layers") or 0)):
            raise ValueError(
                f"config key '{where}layer_types' lists {len(layer_types)} layers but '{where}num_hidden_layers' "
                f"is {layers}; paste the complete list (one entry per decoder layer) or remove the key")


def _wrapper_kwargs(model_type: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Check a multimodal wrapper's ``text_config``; nest a flat (text-only) copy under it.

    A wrapper whose config.json holds the language-model keys at the top level
    (Step 3.7 Flash: ``model_type`` ``step3p7`` without ``text_config``) is read through
    the wrapper's own text config class.
    """
    text = kwargs.get("text_config")
    if text is None:
        if not all(key in kwargs for key in TEXT_SIZE_KEYS):
            raise ValueError(f"config key 'text_config' is missing; a {model_type!r} config keeps its language "
                             "model there: paste the whole config.json")
        shared = {key: kwargs[key] for key in ("torch_dtype", "dtype", "quantization_config") if key in kwargs}
        return {**shared, "text_config": {key: value for key, value in kwargs.items() if key != "quantization_config"}}
    if not isinstance(text, Mapping):
        raise ValueError(f"config key 'text_config' must be an object with the language model's keys, "
                         f"got {type(text).__name__}")
    missing = [key for key in TEXT_SIZE_KEYS if key not in text]
    if missing:
        raise ValueError(f"config key 'text_config' has no {' or '.join(repr(k) for k in missing)}: transformers' "
                         f"{model_type!r} defaults would size another model; paste the whole config.json")
    _check_layer_types(text, "text_config.")
    if "tie_word_embeddings" in kwargs and "tie_word_embeddings" not in text:
        # The wrapper model ties by its own flag (PreTrainedModel.tie_weights reads self.config), which a text
        # config without the key would otherwise replace by its class default (Qwen3-VL-30B-A3B: false vs true).
        kwargs = {**kwargs, "text_config": {**text, "tie_word_embeddings": kwargs["tie_word_embeddings"]}}
    return kwargs


def _normalized(raw_config: Mapping[str, Any]) -> tuple[str, dict[str, Any], BySource | None]:
    """``(model_type to read with, kwargs, by-source mapping or None)`` (design notes 1 and 5)."""
    model_type = raw_config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ValueError(f"config.json needs a 'model_type' string, got {echo(model_type)}")
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise ValueError(
            f"config key 'model_type' is {quote(model_type)}, which the planner cannot read yet; "
            f"supported: {', '.join(SUPPORTED_MODEL_TYPES)}"
        )
    model_type = LEGACY_MODEL_TYPES.get(model_type, model_type)
    # Deep copy: config classes edit nested dicts in place (rope_scaling gains keys).
    kwargs = {key: copy.deepcopy(value) for key, value in raw_config.items() if key != "model_type"}
    for old, new in LEGACY_KEYS.get(model_type, {}).items():
        if old in kwargs and new not in kwargs:
            kwargs[new] = kwargs.pop(old)
    by_source = BY_SOURCE_MODEL_TYPES.get(model_type)
    if by_source is not None:
        if by_source.text_config:
            text = kwargs.get("text_config")
            if not isinstance(text, Mapping) or any(key not in text for key in TEXT_SIZE_KEYS):
                raise ValueError(f"config key 'text_config' of a {model_type!r} config must hold the language "
                                 f"model's keys ({', '.join(TEXT_SIZE_KEYS)}); paste the whole config.json")
            kwargs = {**{k: v for k, v in text.items() if k != "model_type"},
                      **{k: kwargs[k] for k in ("torch_dtype", "dtype") if k in kwargs and k not in text}}
        if by_source.drop_null:
            kwargs = {key: value for key, value in kwargs.items() if value is not None}
        kwargs.pop("auto_map", None)
        _check_layer_types(kwargs, "")
        return by_source.read_as, kwargs, by_source
    if model_type in MULTIMODAL_MODEL_TYPES:
        return model_type, _wrapper_kwargs(model_type, kwargs), None
    _check_layer_types(kwargs, "")
    return model_type, kwargs, None


@dataclass(frozen=True, kw_only=True)
class ConfigReading:
    """A config.json read through transformers' config classes.

    Attributes:
        text: The text config (``PreTrainedConfig``) of the language model.
        full: The config as read (the wrapper of a multimodal model; ``text`` otherwise).
        model_type: The raw ``model_type`` (legacy names mapped).
        by_source: The mapping used for a ``model_type`` transformers does not know, or None.
    """

    text: Any
    full: Any
    model_type: str
    by_source: BySource | None = None


def read_config(raw_config: Mapping[str, Any]) -> ConfigReading:
    """Read a raw config.json dict through transformers' config class (design notes 1 and 5).

    Raises:
        ValueError: no or unsupported ``model_type``, a ``text_config`` without its
            sizes, a truncated ``layer_types``, or a value the config class rejected
            (the message names the key).
    """
    read_as, kwargs, by_source = _normalized(raw_config)
    raw_type = LEGACY_MODEL_TYPES.get(raw_config["model_type"], raw_config["model_type"])
    try:
        with _quiet_transformers():
            config = AutoConfig.for_model(read_as, **kwargs)
    except (ValueError, TypeError, KeyError, StrictDataclassError) as exc:
        raise ValueError(rejection(exc, read_as, kwargs)) from exc
    except ArithmeticError as exc:  # e.g. num_attention_heads 0 -> ZeroDivisionError inside the class
        raise ValueError(
            f"transformers' {read_as!r} config class could not derive its sizes ({plain_reason(exc)}); check that "
            "hidden_size, num_attention_heads and num_key_value_heads are positive integers") from exc
    return ConfigReading(text=config.get_text_config(), full=config, model_type=raw_type, by_source=by_source)


def load_text_config(raw_config: Mapping[str, Any]) -> Any:
    """The transformers text config (``PreTrainedConfig``) of a raw config.json dict.

    Raises:
        ValueError: as :func:`read_config`.
    """
    return read_config(raw_config).text


def _raw_torch_dtype(raw_config: Mapping[str, Any]) -> str | None:
    """Design note 4."""
    for source in (raw_config, raw_config.get("text_config") or {}):
        for key in ("torch_dtype", "dtype"):
            value = source.get(key)
            if isinstance(value, str):
                return value
    return None


def _architecture(raw_config: Mapping[str, Any]) -> str:
    """config.json ``architectures[0]``, empty when the config names none (``ModelSpec.architecture``)."""
    archs = raw_config.get("architectures")
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""


def _vision_config_sizes(raw_config: Mapping[str, Any]) -> tuple[int | None, int | None] | None:
    """``(num_hidden_layers, hidden_size)`` of the raw ``vision_config`` (None for a key it omits or states as no
    positive whole number), or None without a ``vision_config`` object: the two keys SGLang's
    ``adjust_mem_fraction_for_vlm`` reads (python/sglang/srt/server_args.py; :mod:`planner.engines.sglang_vlm`)."""
    vision = raw_config.get("vision_config")
    if not isinstance(vision, Mapping):
        return None

    def stated(key: str) -> int | None:
        value = vision.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    return stated("num_hidden_layers"), stated("hidden_size")


def _tower_fields(raw_config: Mapping[str, Any], params) -> dict[str, Any]:
    """``architecture`` and ``vision_config_sizes`` of a spec whose tower the planner counts (its ``params`` hold
    a tower group: :func:`planner.serving.vision_towers.is_tower_group`), for SGLang's vision-model fraction
    (:mod:`planner.engines.sglang_vlm`), the only reader; empty for any other model, so a shared link of a text
    model (or of Kimi-K3, whose tower is not counted) need not carry ``architectures`` or vision sizes
    (:func:`model_catalog.share_codec.minimal_config` keeps every key the spec depends on)."""
    if not any(is_tower_group(g) for g in params):
        return {}
    return {"architecture": _architecture(raw_config), "vision_config_sizes": _vision_config_sizes(raw_config)}


def _raw_quantization_config(raw_config: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The raw config's ``quantization_config`` (or its ``text_config``'s); None when absent.

    Sources: DeepSeek-V3 and gpt-oss config.json (top-level ``quantization_config``); DeepSeek-V4
    config.json ``expert_dtype`` (transformers models/deepseek_v4/configuration_deepseek_v4.py).
    """
    for source in (raw_config, raw_config.get("text_config") or {}):
        value = source.get("quantization_config") if isinstance(source, Mapping) else None
        if isinstance(value, Mapping):
            if isinstance(source.get("expert_dtype"), str) and "expert_dtype" not in value:
                # DeepSeek-V4 states it beside the block; DeepseekV4Config.__post_init__ folds it in the same way.
                return {**value, "expert_dtype": source["expert_dtype"]}
            return value
    return None


NO_CACHE_LAYER_TYPES: frozenset[str] = frozenset({"dummy", "moe", "mlp"})
"""``layer_types`` entries whose layer caches nothing (transformers ``DummyLayer``: KV-sharing
consumers, Nemotron-H MLP / MoE blocks; cache_utils.py ``get_layer_types_and_kwargs``)."""


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
    if parts.layers is not None:
        if len(parts.layers) != config_int(cfg, "num_hidden_layers"):
            raise ValueError(f"the family adapter gave {len(parts.layers)} layer specs for "
                             f"{config_int(cfg, 'num_hidden_layers')} layers")
        return parts.layers
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
        elif layer_type in NO_CACHE_LAYER_TYPES:
            specs.append(NoCache())
        else:
            raise ValueError(f"config key 'layer_types' holds {quote(layer_type)}, which has no cache spec here")
    return tuple(specs)


POSITION_KEYS: tuple[str, ...] = ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length",
                                  "n_ctx", "max_seq_len")
"""Names configs give the longest context (GPT-2 / GPT-J ``n_positions`` and ``n_ctx``, ChatGLM ``seq_length``,
MPT ``max_seq_len``)."""


def states_positions(raw_config: Mapping[str, Any], cfg: Any) -> bool:
    """True when the raw config (or its ``text_config``) states the longest context under any name: a key of
    :data:`POSITION_KEYS` or the name the config class maps ``max_position_embeddings`` to
    (``PreTrainedConfig.attribute_map``). False means the class's default stands in (``LlamaConfig``: 2,048)."""
    mapped = (getattr(type(cfg), "attribute_map", None) or {}).get("max_position_embeddings")
    names = (*POSITION_KEYS, mapped) if isinstance(mapped, str) else POSITION_KEYS
    text = raw_config.get("text_config")
    return any(name in raw_config or (isinstance(text, Mapping) and name in text) for name in names)


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


def model_spec_from_config(raw_config: Mapping[str, Any], model_id: str, *, display_name: str = "",
                           hf_quant_config: Mapping[str, Any] | None = None) -> ModelSpec:
    """Build the planner's :class:`ModelSpec` from a config.json dict.

    Args:
        raw_config: config.json as a dict (original keys and values).
        model_id: Id to put on the spec (and in error messages).
        display_name: UI name; defaults to ``model_id``.
        hf_quant_config: The repository's ``hf_quant_config.json`` (ModelOpt), which
            decides the checkpoint's weight formats when given (:mod:`model_catalog.quantization`).

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
        reading = read_config(raw_config)
        cfg = reading.text
        adapter = ADAPTERS.get(reading.model_type) if reading.by_source else None
        adapter = adapter or ADAPTERS.get(cfg.model_type)
        if adapter is None:
            raise ValueError(f"config key 'model_type' is {quote(reading.model_type)}, whose text model "
                             f"{quote(cfg.model_type)} has no family adapter here")
        parts = adapter(cfg)
        params, quantization = checkpoint_formats(parts.params, _raw_quantization_config(raw_config),
                                                  hf_quant_config, parts.param_layers)
        params += tower_groups(raw_config, reading.full)  # towers vLLM loads by default (families_multimodal)
        layers = layer_specs(cfg, parts)
        max_positions = getattr(cfg, "max_position_embeddings", None)
        max_positions = max_positions if isinstance(max_positions, int) else None
        return ModelSpec(
            model_id=model_id,
            model_type=reading.model_type if reading.by_source else cfg.model_type,
            layers=layers,
            params=params,
            hidden_size=config_int(cfg, "hidden_size"),
            num_attention_heads=config_int(cfg, "num_attention_heads"),
            num_key_value_heads=parts.num_key_value_heads,
            head_dim=parts.head_dim,
            vocab_size=config_int(cfg, "vocab_size"),
            max_position_embeddings=max_positions,
            max_position_embeddings_default=max_positions is not None and not states_positions(raw_config, cfg),
            torch_dtype=_raw_torch_dtype(raw_config),
            num_experts=parts.num_experts,
            num_experts_per_tok=parts.num_experts_per_tok,
            intermediate_size=_activation_width(cfg, parts),
            display_name=display_name or model_id,
            checkpoint_quantization=quantization,
            **_tower_fields(raw_config, params),
        )
    except ValueError as exc:
        raise ValueError(f"{model_id}: {exc}") from exc
    except (TypeError, AttributeError, KeyError) as exc:
        raise ValueError(f"{model_id}: config.json is missing or mistypes a key the planner needs "
                         f"({plain_reason(exc)})") from exc
    except ArithmeticError as exc:  # a zero divisor or an overflowing size the bounds did not catch
        raise ValueError(f"{model_id}: config.json gives a size the planner cannot compute with "
                         f"({type(exc).__name__}); check for a zero, negative or huge size or count") from exc
