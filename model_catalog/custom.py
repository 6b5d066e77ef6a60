"""Models and GPUs that are not in the catalog: a pasted config.json, a custom card.

A user's ``config.json`` is untrusted text. It is read as JSON only (at most
:data:`MAX_CONFIG_BYTES`), never as code: keys that name remote code
(``auto_map``, ``trust_remote_code``) are dropped before transformers sees the
dict, and transformers is only asked for its built-in config classes
(``AutoConfig.for_model``), which never import a repository's files. Before
anything is computed from it, every number, list and object in it, at any depth
(text model, vision / audio towers, a draft's config), is bounded
(:func:`check_sizes`, :data:`CONFIG_KEY_RANGES`), so no loop, multiplication or
division runs on a count or size the config states unchecked.

Three readings, tried in order:

1. ``model_type`` has a family adapter (:data:`model_catalog.hf_config.SUPPORTED_MODEL_TYPES`):
   the catalog's own path, so a pasted catalog config plans exactly like the
   catalog entry.
2. A multimodal wrapper whose ``text_config`` has a supported ``model_type``
   (Llava-style): the text model is planned; the vision tower is not counted.
3. Anything else: a *generic decoder* reading of the standard keys
   (:data:`GENERIC_REQUIRED_KEYS`, aliases in :data:`GENERIC_KEY_ALIASES`) as a
   Llama-layout model (gated MLP, RMSNorm, no biases unless ``attention_bias`` /
   ``mlp_bias``), or a Mixtral layout when the config names routed experts.
   The result carries a note saying so.

Design notes (assumptions):
    1. The generic reading requires its keys explicitly instead of taking
       transformers' Llama defaults (``intermediate_size`` 11008, ``vocab_size``
       32000): a silent default would size a different model.
    2. A generic MoE prices every layer as MoE with ``moe_intermediate_size``
       (else ``intermediate_size``) experts; shared experts and dense layers of
       the real architecture are ignored, and the note lists such keys.
    3. Architecture keys the generic reading cannot price (MLA ranks, Mamba/SSM
       state sizes) are listed in the note: KV for such models is likely wrong.

Sources: transformers ``AutoConfig.for_model`` (models/auto/configuration_auto.py);
``PreTrainedConfig.attribute_map`` conventions for the key aliases (GPT-2
``n_embd``/``n_layer``/``n_head``, Falcon ``num_kv_heads``, ChatGLM
``multi_query_group_num``); DOMAIN.md section 2 for quantization formats.

Layout: this module holds the model readings and :class:`CustomModel`; a custom GPU
(:class:`CustomGPU`, :func:`custom_gpu`) is in :mod:`model_catalog.custom_gpu` and the
capped, JSON-only reading of config.json text and files in :mod:`model_catalog.config_json`.
Every name they hold is re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from model_catalog.config_bounds import check_sizes
from model_catalog.config_values import check_values
from model_catalog.config_json import (  # noqa: F401  (re-exported: the CLI, hub and tests import them here)
    HF_QUANT_CONFIG_NAME,
    JSON_INFINITIES,
    MAX_CONFIG_BYTES,
    MAX_PARSED_INT_DIGITS,
    _read_json_file,
    check_regular_file,
    json_constant,
    json_int,
    parse_config_json,
    read_regular_file,
)
from model_catalog.custom_gpu import (  # noqa: F401  (re-exported: the panel, CLI and tests import them here)
    MAX_GPU_MEMORY_BYTES,
    MAX_GPU_MEMORY_DIGITS,
    MAX_GPU_MEMORY_EXPONENT,
    MAX_NAME_CHARS,
    MEMORY_UNITS,
    CustomGPU,
    custom_gpu,
)
from model_catalog.weight_hint import WEIGHT_DTYPE_BY_TORCH_DTYPE, weight_dtype_hint  # noqa: F401  (re-exported)
from planner.model import ModelSpec
from planner.text import echo, quote

REMOTE_CODE_KEYS: tuple[str, ...] = ("auto_map", "trust_remote_code", "custom_pipelines")
"""Keys that point transformers at a repository's Python files; always dropped."""

GENERIC_REQUIRED_KEYS: tuple[str, ...] = (
    "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size",
)
"""Keys the generic decoder reading needs (after aliases)."""

GENERIC_OPTIONAL_KEYS: tuple[str, ...] = (
    "num_key_value_heads", "head_dim", "max_position_embeddings", "tie_word_embeddings", "sliding_window",
    "layer_types", "attention_bias", "mlp_bias", "num_experts_per_tok", "moe_intermediate_size",
    "torch_dtype", "dtype",
)
"""Keys the generic reading uses when present."""

GENERIC_KEY_ALIASES: dict[str, str] = {
    "n_embd": "hidden_size", "d_model": "hidden_size", "model_dim": "hidden_size",
    "n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "num_layers": "num_hidden_layers",
    "n_head": "num_attention_heads", "n_heads": "num_attention_heads", "num_heads": "num_attention_heads",
    "n_head_kv": "num_key_value_heads", "num_kv_heads": "num_key_value_heads",
    "multi_query_group_num": "num_key_value_heads", "n_kv_heads": "num_key_value_heads",
    "n_positions": "max_position_embeddings", "seq_length": "max_position_embeddings",
    "max_sequence_length": "max_position_embeddings",
    "n_inner": "intermediate_size", "ffn_hidden_size": "intermediate_size", "ffn_dim": "intermediate_size",
    "padded_vocab_size": "vocab_size",
}
"""Other names of the standard keys (GPT-2, Falcon, ChatGLM, OPT ...) -> the standard name."""

GENERIC_EXPERT_KEYS: tuple[str, ...] = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
"""Keys that give the routed expert count of an MoE layer."""

GENERIC_IGNORED_ARCH_KEYS: tuple[str, ...] = (
    "kv_lora_rank", "q_lora_rank", "n_shared_experts", "shared_expert_intermediate_size", "first_k_dense_replace",
    "mlp_only_layers", "decoder_sparse_step", "mamba_d_state", "mamba_expand", "ssm_state_size", "state_size",
    "linear_num_value_heads", "linear_key_head_dim", "num_kv_shared_layers", "attention_chunk_size",
)
"""Architecture keys the generic reading cannot price (design notes 2 and 3)."""


# --------------------------------------------------------------------------
# Result types
# --------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class CustomModel:
    """A model read from a user's config.json (or a Hub repo, or a GGUF file).

    Attributes:
        spec: The planner's model.
        config: The config dict that was read (remote-code keys removed).
        reading: ``family`` (a catalog family), ``text_config`` (text model of a
            multimodal wrapper), ``generic`` (standard keys only) or ``gguf``
            (a GGUF header, see :mod:`model_catalog.gguf_reader`).
        source: Where it came from: ``pasted config.json``, ``hf:ORG/NAME@SHA``,
            ``gguf:FILE``.
        notes: Caveats to show beside the plan.
        weight_dtype_hint: Weight dtype the panel puts in the sidebar on "Use" (a key of
            ``planner.model.dtypes.WEIGHT_DTYPES``): ``auto`` wherever auto reads the checkpoint (its
            quantization scheme, or its torch_dtype), the config's closest dtype (:func:`weight_dtype_hint`)
            only for a quantization_config the planner cannot read, None when nothing fits.
        tensors: GGUF tensor groups for the share link (name, shape, count,
            kind, ggml type); empty for config.json models.
        hf_quant_config: The repository's ``hf_quant_config.json`` read beside
            config.json (NVIDIA ModelOpt), or None.
    """

    spec: ModelSpec
    config: Mapping[str, Any]
    reading: Literal["family", "text_config", "generic", "gguf"]
    source: str
    notes: tuple[str, ...] = ()
    weight_dtype_hint: str | None = None
    tensors: tuple[tuple[str, tuple[int, ...], int, str, str], ...] = ()
    hf_quant_config: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        """The model id shown in plans."""
        return self.spec.model_id


# --------------------------------------------------------------------------
# Reading a config.json file
# --------------------------------------------------------------------------
def load_config_file(path: str | Path, *, name: str | None = None,
                     hf_quant_config: str | Path | None = None) -> CustomModel:
    """Read a config.json file from disk and plan it (the CLI's ``--config``).

    Args:
        path: The file.
        name: Model id for the plan; defaults to the parent folder's name when
            the file is called ``config.json``, else the file stem.
        hf_quant_config: The repository's ``hf_quant_config.json``; None = the one
            beside ``path`` when there is one (a downloaded ModelOpt checkpoint folder).

    Raises:
        ValueError: unreadable, too large, not JSON, or a config the planner
            cannot read (the message names the file and the key).
    """
    path = Path(path)
    raw = _read_json_file(path)
    quant_path = Path(hf_quant_config) if hf_quant_config is not None else path.with_name(HF_QUANT_CONFIG_NAME)
    quant = _read_json_file(quant_path) if hf_quant_config is not None or quant_path.is_file() else None
    default = path.parent.name if path.name == "config.json" and path.parent.name else path.stem
    try:
        model = read_custom_config(raw, name or default, source=f"file:{path.name}", hf_quant_config=quant, cli=True)
    except ValueError as exc:  # the spec builder names the model (the file stem): the path names it here, once
        raise ValueError(f"{path}: {str(exc).removeprefix(f'{name or default}: ')}") from None
    if quant is not None:
        model = replace(model, notes=(*model.notes, f"read {quant_path.name} beside {path.name}: the checkpoint's "
                                                    "per-layer weight formats (weight dtype auto)"))
    return model


# --------------------------------------------------------------------------
# Reading the config dict
# --------------------------------------------------------------------------
def clean_name(name: str) -> str:
    """A custom model name: trimmed, printable, at most :data:`MAX_NAME_CHARS` characters.

    Raises:
        ValueError: empty or with control characters.
    """
    text = str(name).strip()
    if not text:
        raise ValueError("the custom model needs a name, e.g. my-org/my-finetune")
    if len(text) > MAX_NAME_CHARS or not text.isprintable():
        raise ValueError(f"custom model name must be 1-{MAX_NAME_CHARS} printable characters, got {quote(text)}")
    return text


def strip_remote_code(raw: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The config without keys that name remote code (top level and ``text_config``).

    Returns:
        ``(config, dropped key names)``.
    """
    dropped: list[str] = []
    config = {}
    for key, value in raw.items():
        if key in REMOTE_CODE_KEYS:
            dropped.append(key)
        elif key == "text_config" and isinstance(value, Mapping):
            inner, inner_dropped = strip_remote_code(value)
            dropped += [f"text_config.{k}" for k in inner_dropped]
            config[key] = inner
        else:
            config[key] = value
    return config, tuple(dropped)


def _require_positive_int(config: Mapping[str, Any], key: str, example: str) -> int:
    value = config.get(key)
    if value is None:
        raise ValueError(f"config key '{key}' is missing; expected a positive integer ({example})")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config key '{key}' is {echo(value)}; expected a positive integer ({example})")
    return value


_EXAMPLES = {
    "hidden_size": "the model width, e.g. 4096",
    "num_hidden_layers": "decoder layers, e.g. 32",
    "num_attention_heads": "query heads, e.g. 32",
    "intermediate_size": "the MLP width, e.g. 14336",
    "vocab_size": "tokens in the vocabulary, e.g. 128256",
    "num_key_value_heads": "KV heads, e.g. 8 (equal to num_attention_heads for MHA)",
    "head_dim": "per-head width, e.g. 128",
    "max_position_embeddings": "longest context in tokens, e.g. 131072",
    "num_experts_per_tok": "experts per token, e.g. 2",
    "moe_intermediate_size": "one expert's MLP width, e.g. 1408",
    "sliding_window": "window in tokens, e.g. 4096",
}


def generic_config(raw: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Map a config of unknown ``model_type`` onto a Llama (or Mixtral) config dict.

    Args:
        raw: The config.json dict (remote-code keys already removed).

    Returns:
        ``(config for transformers' llama/mixtral class, notes)``.

    Raises:
        ValueError: a required key is missing or not a positive integer; the
            message names it and gives an example value.
    """
    source = dict(raw)
    notes: list[str] = []
    for alias, standard in GENERIC_KEY_ALIASES.items():
        if alias in source and standard not in source:
            source[standard] = source[alias]
            notes.append(f"read '{alias}' as '{standard}'")
    config: dict[str, Any] = {}
    for key in GENERIC_REQUIRED_KEYS:
        config[key] = _require_positive_int(source, key, _EXAMPLES[key])
    for key in ("num_key_value_heads", "head_dim", "max_position_embeddings"):
        if source.get(key) is not None:
            config[key] = _require_positive_int(source, key, _EXAMPLES[key])
    if "max_position_embeddings" not in config:  # transformers' LlamaConfig default then applies, silently
        notes.append("no max_position_embeddings (or n_positions / seq_length) in the config: transformers' "
                     "Llama default of 2,048 tokens is the context limit; add the model's own "
                     f"max_position_embeddings ({_EXAMPLES['max_position_embeddings']}) to plan longer contexts")
    for key in ("tie_word_embeddings", "attention_bias", "mlp_bias"):
        if key in source:
            if not isinstance(source[key], bool):
                raise ValueError(f"config key '{key}' is {echo(source[key])}; expected true or false")
            config[key] = source[key]
    for key in ("torch_dtype", "dtype"):
        if isinstance(source.get(key), str):
            config["torch_dtype"] = source[key]
            break
    window = source.get("sliding_window")
    if window is not None and source.get("use_sliding_window", True) is not False:
        config["sliding_window"] = _require_positive_int(source, "sliding_window", _EXAMPLES["sliding_window"])
    if source.get("layer_types") is not None:
        layer_types = source["layer_types"]
        if not isinstance(layer_types, list) or not all(isinstance(t, str) for t in layer_types):
            raise ValueError("config key 'layer_types' must be a list of strings such as \"full_attention\"")
        config["layer_types"] = list(layer_types)
    experts_key = next((k for k in GENERIC_EXPERT_KEYS if isinstance(source.get(k), int) and source[k] > 1), None)
    model_type = "llama"
    if experts_key is not None:
        model_type = "mixtral"
        config["num_local_experts"] = source[experts_key]
        config["num_experts_per_tok"] = _require_positive_int(source, "num_experts_per_tok",
                                                              _EXAMPLES["num_experts_per_tok"])
        if source.get("moe_intermediate_size") is not None:
            config["intermediate_size"] = _require_positive_int(source, "moe_intermediate_size",
                                                                _EXAMPLES["moe_intermediate_size"])
        if config.get("attention_bias") or config.get("mlp_bias"):
            notes.append("biases are not counted in the generic MoE reading")
        notes.append(f"MoE read from '{experts_key}': every layer holds {config['num_local_experts']} experts of "
                      f"width {config['intermediate_size']:,}")
    ignored = [k for k in GENERIC_IGNORED_ARCH_KEYS if source.get(k) not in (None, 0, [], False)]
    if ignored:
        notes.append("ignored architecture keys the generic reading cannot price: " + ", ".join(ignored)
                     + " (KV cache and parameters may be off)")
    config["model_type"] = model_type
    return config, tuple(notes)


def _text_config_reading(raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``text_config`` of a multimodal wrapper when its model_type has an adapter."""
    from model_catalog.hf_config import SUPPORTED_MODEL_TYPES

    text = raw.get("text_config")
    if not isinstance(text, Mapping) or text.get("model_type") not in SUPPORTED_MODEL_TYPES:
        return None
    config = dict(text)
    for key in ("torch_dtype", "dtype"):
        if key not in config and isinstance(raw.get(key), str):
            config[key] = raw[key]
    return config


CORE_KEYS: tuple[str, ...] = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                              "vocab_size")
"""Keys whose absence means transformers' class defaults stand in for the model's own sizes."""


def unstated_core_keys(config: Mapping[str, Any]) -> list[str]:
    """The :data:`CORE_KEYS` for which transformers' class defaults stand in: those the config states under no name.

    A key counts as stated when the config (or its ``text_config``) holds it, the name the family's config class
    maps it to (``PreTrainedConfig.attribute_map``: GPT-J / GPT-2 ``hidden_size`` -> ``n_embd``, ``num_hidden_layers``
    -> ``n_layer``, ``num_attention_heads`` -> ``n_head``), or an old name the family reads
    (:data:`model_catalog.hf_config.LEGACY_KEYS`: Falcon-7B's ``n_layer``, ``n_head``). A key the family's config
    class has no attribute for is not read at all, so no default of it stands in: GPT-J and GPT-2 size the MLP
    from ``n_inner`` (null or absent = 4 x ``n_embd``: transformers models/gptj/modeling_gptj.py ``GPTJBlock``,
    models/gpt2/modeling_gpt2.py ``GPT2Block``), Falcon from ``ffn_hidden_size`` (null or absent = 4 x
    ``hidden_size``: models/falcon/configuration_falcon.py), each a function of stated sizes.

    Example: GPT-J-6B's config.json (``n_embd``, ``n_layer``, ``n_head``, ``n_inner`` null, ``vocab_size``) -> [].
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    from model_catalog.hf_config import LEGACY_KEYS, LEGACY_MODEL_TYPES

    stated = {*config, *(config.get("text_config") or {})}
    model_type = LEGACY_MODEL_TYPES.get(config["model_type"], config["model_type"])
    try:
        config_class = CONFIG_MAPPING[model_type]
    except KeyError:  # a type only the planner's own adapters read: no class to ask
        return [key for key in CORE_KEYS if key not in stated]
    attribute_map = getattr(config_class, "attribute_map", {}) or {}
    legacy = {new: old for old, new in LEGACY_KEYS.get(model_type, {}).items()}
    defaults = _class_defaults(config_class)
    return [key for key in CORE_KEYS
            if key not in stated and attribute_map.get(key) not in stated and legacy.get(key) not in stated
            and (defaults is None or hasattr(defaults, key))]


def defaults_note(missing: list[str], spec: ModelSpec, model_type: str) -> str | None:
    """The warning that transformers' class defaults stand in for the ``missing`` core keys
    (:func:`unstated_core_keys`) and, when the config states no ``max_position_embeddings``
    (:attr:`ModelSpec.max_position_embeddings_default`), for that limit, with the default used: it caps the context
    length every plan checks (QA: Meta-Llama-3-70B's config without the key was "longer than the model supports
    (max_position_embeddings 2,048)" with no word of where 2,048 came from). None when the config states them all."""
    keys = list(missing)
    limit = ""
    if spec.max_position_embeddings_default and spec.max_position_embeddings is not None:
        keys.append("max_position_embeddings")
        limit = (f" (max_position_embeddings {spec.max_position_embeddings:,} tokens, which caps the context length: "
                 "add \"max_position_embeddings\", the model's longest context such as 131072, to the config)")
    if not keys:
        return None
    them = "them" if len(keys) > 1 else "it"
    fix = "; paste the whole config.json for the real model" if missing else ""
    return (f"config.json does not state {', '.join(keys)}: transformers' {model_type} defaults stand in for "
            f"{them}{limit}{fix}")


def _class_defaults(config_class):
    """An instance of ``config_class`` with its defaults, or None where the class needs arguments."""
    try:
        return config_class()
    except Exception:  # noqa: BLE001  (any class that cannot build bare: keep every key)
        return None


def read_custom_config(raw: Mapping[str, Any], name: str = "custom-model", *,
                       source: str = "pasted config.json",
                       hf_quant_config: Mapping[str, Any] | None = None, cli: bool = False) -> CustomModel:
    """Plan any config.json safely (module docstring: three readings), then check what it built.

    First bounds every number, list and object of ``raw`` and ``hf_quant_config`` (:func:`check_sizes`). Besides
    :func:`_read_custom_config`'s errors, refuses a non-positive ``max_position_embeddings`` and
    KV heads that do not divide the attention heads, and notes a ``quantization_config`` it cannot read
    (:func:`_checked`; ``cli``: the note names ``--weight-dtype`` instead of the sidebar).
    """
    model = _read_custom_config(raw, name, source=source, hf_quant_config=hf_quant_config)
    return _checked(model, raw, cli=cli)


def _checked(model: CustomModel, raw: Mapping[str, Any], *, cli: bool = False) -> CustomModel:
    """``model`` with its :attr:`CustomModel.weight_dtype_hint` and a note for an unread ``quantization_config``;
    raises for impossible geometry.

    Weight dtype ``auto`` is what ``plan --config`` and the catalog use: it prices each tensor in the format the
    checkpoint ships it (``ParamGroup.checkpoint``), which no single dtype does (Kimi-K2.5's int4 experts beside
    bf16 attention, DeepSeek-V3.2's 128 x 128 block FP8), so it is the hint wherever the scheme was read.

    Raises:
        ValueError: ``max_position_embeddings`` <= 0 (naming the key and the fix), or
            ``num_key_value_heads`` not dividing ``num_attention_heads`` (GQA shares each KV head among
            ``num_attention_heads / num_key_value_heads`` query heads; transformers' ``repeat_kv`` needs
            the division to be exact).
    """
    for where, cfg in (("", raw), ("text_config.", raw.get("text_config"))):
        if not isinstance(cfg, Mapping):
            continue
        for key in ("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length"):
            value = cfg.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
                raise ValueError(f"config key '{where}{key}' is {value}; expected the longest context in tokens, "
                                 "a positive number such as 131072 (or leave the key out)")
    spec = model.spec
    heads, kv = spec.num_attention_heads, spec.num_key_value_heads
    if spec.attention_kind != "MLA" and heads and kv and (kv > heads or heads % kv):
        raise ValueError(f"num_key_value_heads {kv} does not divide num_attention_heads {heads}: each KV head "
                         f"serves num_attention_heads / num_key_value_heads query heads; use a divisor of {heads} "
                         f"(e.g. {heads} for MHA, 1 for MQA)")
    quantization = raw.get("quantization_config")
    read = spec.checkpoint_quantization
    if quantization is None or (read and not read.startswith("unsupported")):
        return replace(model, weight_dtype_hint="auto")
    method = quantization.get("quant_method") if isinstance(quantization, Mapping) else quantization
    hint, reason = weight_dtype_hint(raw)
    hint = None if hint == "auto" else hint
    if cli:
        advice = f"pass --weight-dtype {hint} ({reason})" if hint else "pass the checkpoint's format as --weight-dtype"
    else:
        advice = "pick the weight dtype in the sidebar" + (f" ({hint}: {reason})" if hint else "")
    why = ""
    if str(method).lower().startswith("modelopt"):  # model_catalog.quantization design note 6
        why = f" ({read.removeprefix('unsupported: ').split(': weight dtype auto', 1)[0]})" if read else ""
        advice += (", or put the repository's hf_quant_config.json beside the config file" if cli else
                   ", or give the repository's hf_quant_config.json as the second file")
    note = (f"quantization_config ({echo(method)}) is not a scheme the planner reads{why}: weight dtype auto counts "
            f"the weights at torch_dtype; {advice}")
    return replace(model, notes=(*model.notes, note), weight_dtype_hint=hint)


def _read_custom_config(raw: Mapping[str, Any], name: str = "custom-model", *,
                        source: str = "pasted config.json",
                        hf_quant_config: Mapping[str, Any] | None = None) -> CustomModel:
    """Plan any config.json safely (module docstring: three readings).

    Args:
        raw: config.json as a dict (e.g. from :func:`parse_config_json`).
        name: Model id for the plan (a repo id, or any name).
        source: Where it came from, for captions and share links.
        hf_quant_config: The repository's ``hf_quant_config.json`` (optional second
            file, NVIDIA ModelOpt): it decides which layers the checkpoint stores in
            NVFP4 / FP8 and which in 16 bits (:mod:`model_catalog.quantization`).

    Returns:
        The :class:`CustomModel`; ``reading`` says which reading applied.

    Raises:
        ValueError: a number, list or object out of bounds (:func:`check_sizes`: the dotted key path and the
            limit), a missing or bad key (named, with the expected value), an encoder-decoder model, or a
            config transformers' class rejects.

    Example:
        ``read_custom_config(json.loads(text), "my-org/my-llama").spec.num_parameters``
    """
    name = clean_name(name)
    if not isinstance(raw, Mapping):
        raise ValueError(f"config.json must be a JSON object, got {type(raw).__name__}")
    check_sizes(raw)  # first: every later step may loop over, multiply or nest what the config states
    if isinstance(hf_quant_config, Mapping):
        check_sizes(hf_quant_config, label="hf_quant_config.json key", module_lists=True)
    check_values(raw)  # dtype and GPTQ / AWQ values: refused here, before transformers is imported (seconds)
    from model_catalog.hf_config import SUPPORTED_MODEL_TYPES, model_spec_from_config

    config, dropped = strip_remote_code(raw)
    notes: list[str] = []
    if dropped:
        notes.append(f"ignored {', '.join(dropped)}: remote code is never loaded or run")
    model_type = config.get("model_type")
    if model_type is None:
        raise ValueError("config key 'model_type' is missing; expected a string such as \"llama\" "
                         "(copy the whole config.json)")
    if not isinstance(model_type, str) or not model_type:
        raise ValueError(f"config key 'model_type' is {echo(model_type)}; expected a string such as \"llama\"")
    if config.get("is_encoder_decoder") is True:
        raise ValueError(f"config key 'is_encoder_decoder' is true ({quote(model_type)}); only decoder-only "
                         "language models are planned")
    if hf_quant_config is not None and not isinstance(hf_quant_config, Mapping):
        raise ValueError("hf_quant_config.json must be a JSON object with a 'quantization' object")
    if model_type in SUPPORTED_MODEL_TYPES:
        spec = model_spec_from_config(config, name, hf_quant_config=hf_quant_config)
        if note := defaults_note(unstated_core_keys(config), spec, model_type):
            notes.append(note)
        return CustomModel(spec=spec, config=config, reading="family", source=source, notes=tuple(notes),
                           hf_quant_config=hf_quant_config)
    if hf_quant_config is not None:
        raise ValueError(f"hf_quant_config.json is read only beside a config.json whose model_type has an adapter; "
                         f"{quote(model_type)} has none: remove the second file")
    text_config = _text_config_reading(config)
    if text_config is not None:
        spec = model_spec_from_config(text_config, name)
        if note := defaults_note([], spec, text_config["model_type"]):
            notes.append(note)
        notes.append(f"model_type {quote(model_type)} wraps a {quote(text_config['model_type'])} text model: only the "
                     "text model is planned (vision/audio towers are not counted)")
        return CustomModel(spec=replace(spec, model_type=f"{model_type}/{spec.model_type}"), config=config,
                           reading="text_config", source=source, notes=tuple(notes))
    if transformers_knows(model_type):
        from model_catalog.generic import generic_spec

        try:
            spec, generic_notes = generic_spec(config, name)
        except ValueError as exc:
            raise ValueError(f"{name}: model_type {quote(model_type)} has no family adapter here, so it was read "
                             f"through transformers' own {quote(model_type)} config class: {exc}") from None
        notes.insert(0, f"model_type {quote(model_type)} has no family adapter here: read through transformers' own "
                        f"{quote(model_type)} config class (generic reading)")
        notes.extend(generic_notes)
        if note := defaults_note([], spec, model_type):
            notes.append(note)
        return CustomModel(spec=spec, config=config, reading="generic", source=source, notes=tuple(notes))
    try:
        generic, generic_notes = generic_config(config)
    except ValueError as exc:
        raise ValueError(f"{name}: model_type {quote(model_type)} is not known to transformers (its config class is "
                         f"remote code, which is never run) and has no adapter here, so the standard keys are "
                         f"read: {exc}") from None
    spec = model_spec_from_config(generic, name)
    notes.insert(0, f"model_type {quote(model_type)} has no adapter here and transformers has no config class for it "
                    "(remote code is never run): read as a generic "
                    f"{'Mixtral-style MoE' if generic['model_type'] == 'mixtral' else 'Llama-style'} decoder from "
                    "the standard keys; parameter counts are an estimate")
    notes.extend(generic_notes)
    return CustomModel(spec=replace(spec, model_type=model_type), config=config, reading="generic",
                       source=source, notes=tuple(notes))


def transformers_knows(model_type: str) -> bool:
    """True when transformers has a built-in config class for ``model_type`` (no remote code).

    Sources: transformers models/auto/configuration_auto.py ``CONFIG_MAPPING_NAMES``.
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    return model_type in CONFIG_MAPPING_NAMES


def hint_text(model: CustomModel) -> str:
    """Why the panel sets :attr:`CustomModel.weight_dtype_hint`, in one line."""
    if model.weight_dtype_hint == "auto":
        read = model.spec.checkpoint_quantization
        return (f"each tensor as the checkpoint ships it, {read.split(':', 1)[0]}" if read else
                f"the checkpoint's torch_dtype, {model.spec.torch_dtype or 'not stated: bf16'}")
    hint, reason = weight_dtype_hint(model.config)
    return f"weights look like {hint} ({reason})" if hint else reason
