"""Compact, versioned URL parameters for a custom model and a custom GPU.

A design-review link must rebuild the same plan on a fresh server, so a custom
model's architecture travels in the URL. Only the config keys the planner
needs are kept (:func:`minimal_config` drops every key whose removal leaves the
planned :class:`~planner.model.ModelSpec` unchanged), then:

    code = "v1." + base64url( zlib( JSON ) )        (no padding)

JSON payloads (short keys keep links short):

* ``custom_model``: ``{"n": name, "c": minimal config, "s": source}``, plus for
  GGUF files ``"a"``: architecture and ``"t"``: tensor rows
  ``[name pattern, shape, count, kind, ggml type]``, and ``"q"``: the repository's
  ``hf_quant_config.json`` when one was given (module lists widened where that plans
  the same model, :func:`compact_quantization_config`).
* ``custom_gpu``: ``{"n": name, "m": memory as text, "u": "GiB"|"GB"|"MiB",
  "b": bandwidth [GB/s], "p": price [USD/h] or null}``.

Decoding never trusts the text: length cap, base64 alphabet, zlib with an
output cap (no decompression bombs) and its Adler-32 check (a changed or cut
character fails), JSON without NaN (``Infinity`` is kept, as config.json files use it), a pydantic schema with ``extra="forbid"``,
then the same validation as a pasted config.json (transformers' config
classes, no remote code). Every failure is a ``ValueError`` whose message
names the parameter and says how to recover.

Example: a 24 GiB card at 936 GB/s and 0.44 USD/h is
``custom_gpu=v1.`` followed by about 90 base64url characters.

Sources: RFC 4648 section 5 (base64url); RFC 1950 (zlib, Adler-32).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from model_catalog.custom import (
    GENERIC_REQUIRED_KEYS,
    MAX_NAME_CHARS,
    CustomGPU,
    CustomModel,
    custom_gpu,
    json_constant,
    read_custom_config,
)
from planner.json_keys import UniqueKeys
from planner.serving.speculative import MTP_CONFIG_KEYS
from planner.text import quote

CODEC_VERSION = 1
"""Current format version; the code starts with ``v1.``."""

MODEL_PARAM = "custom_model"
"""URL query key of a custom model."""

GPU_PARAM = "custom_gpu"
"""URL query key of a custom GPU."""

MAX_CODE_CHARS = 16_000
"""Longest accepted code [characters]; browsers and proxies handle URLs of this size."""

MAX_JSON_BYTES = 256 * 1024
"""Largest decompressed payload [bytes]."""

MAX_TENSOR_ROWS = 4096
"""Most GGUF tensor rows in one code."""

MAX_TENSOR_ELEMENTS = 2**63 - 1
"""Most elements of one tensor in a GGUF row [elements]: what a GGUF header may state (int64 element
counts; :mod:`model_catalog.gguf_reader` refuses more), so a link can describe no larger tensor than a file.
The rows' counts together are bounded like a file's tensors (``gguf_header.MAX_TENSOR_COUNT``)."""

ALWAYS_KEPT_KEYS: tuple[str, ...] = (
    *GENERIC_REQUIRED_KEYS, "num_key_value_heads", "head_dim", "max_position_embeddings", "torch_dtype",
    *MTP_CONFIG_KEYS,
)
"""Config keys a share code keeps whenever the config has them (at the top level and in ``text_config``). The MTP
layer counts (:data:`planner.serving.speculative.MTP_CONFIG_KEYS`) change no spec, so the greedy removal dropped
them, and ``speculative_method=mtp`` on a link read 0 draft layers where ``plan --config`` reads the file's."""

_CODE = re.compile(r"^v(\d{1,3})\.([A-Za-z0-9_-]*)$")
_KINDS = frozenset({"embedding", "lm_head", "linear", "norm", "bias", "router", "conv", "other"})


class _ModelPayload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    c: dict[str, Any]
    s: str = Field(default="shared link", max_length=300)
    a: str | None = Field(default=None, max_length=64)
    t: list[tuple[str, list[int], int, str, str]] | None = Field(default=None, max_length=MAX_TENSOR_ROWS)
    q: dict[str, Any] | None = None


class _GPUPayload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    m: str = Field(min_length=1, max_length=40)
    u: str
    b: float
    p: float | None = None


# --------------------------------------------------------------------------
# Framing: JSON -> zlib -> base64url, and back with every check
# --------------------------------------------------------------------------
def _refuse_nan(value: Any) -> None:
    """Raise ValueError for a NaN anywhere in ``value`` (dicts and lists walked)."""
    if isinstance(value, float) and value != value:
        raise ValueError("a share code cannot hold NaN")
    if isinstance(value, Mapping):
        for item in value.values():
            _refuse_nan(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _refuse_nan(item)


def pack(payload: Mapping[str, Any]) -> str:
    """``v1.`` + base64url(zlib(compact JSON)), padding removed."""
    _refuse_nan(payload)  # Infinity is legal in a config (json_constant), NaN is not
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True, allow_nan=True)
    data = zlib.compress(text.encode("utf-8"), 9)
    return f"v{CODEC_VERSION}." + base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")




def unpack(code: str, param: str) -> dict[str, Any]:
    """The JSON object inside a code.

    Args:
        code: The parameter value.
        param: Parameter name, for messages.

    Raises:
        ValueError: ``"Link parameter custom_model ... : <reason>; <what to do>"``.
    """
    def fail(reason: str) -> ValueError:
        return ValueError(f"Link parameter {param} is not a valid share code ({reason}); it was ignored: "
                          "ask for a fresh link, or set the custom model/GPU again in the sidebar panel")

    if not isinstance(code, str):
        raise fail("not text")
    code = code.strip()
    if len(code) > MAX_CODE_CHARS:
        raise fail(f"{len(code):,} characters, at most {MAX_CODE_CHARS:,}")
    match = _CODE.match(code)
    if match is None:
        raise fail("expected 'v1.' followed by letters, digits, '-' and '_'")
    version = int(match.group(1))
    if version != CODEC_VERSION:
        raise fail(f"format version {version}; this app reads version {CODEC_VERSION}")
    body = match.group(2)
    try:
        data = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise fail("cut short or altered: base64 does not decode") from None
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_JSON_BYTES)
    except zlib.error:
        raise fail("cut short or altered: the compressed data is damaged") from None
    if inflater.unconsumed_tail:
        raise fail(f"expands beyond {MAX_JSON_BYTES:,} bytes")
    if not inflater.eof or inflater.unused_data:
        raise fail("cut short or altered: the compressed data is incomplete")
    unique = UniqueKeys()  # a hand-made payload stating a key twice: refused, not its last value taken in silence
    try:
        payload = json.loads(raw.decode("utf-8"), parse_constant=json_constant, object_pairs_hook=unique)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail("the content is not valid JSON") from None
    try:
        unique.check("the content")
    except ValueError as exc:
        raise fail(str(exc)) from None
    if not isinstance(payload, dict):
        raise fail("the content is not a JSON object")
    return payload


def _schema_problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "payload"
    return f"field '{where}': {first['msg']}"


# --------------------------------------------------------------------------
# Custom model
# --------------------------------------------------------------------------
def _rebuilder(model: CustomModel, hf_quant_config: Mapping[str, Any] | None = None
               ) -> Callable[[dict[str, Any]], CustomModel]:
    """How the decoder rebuilds a model from a config (GGUF models re-apply their tensors)."""
    if model.reading == "gguf":
        from model_catalog.gguf_reader import gguf_custom_model

        arch = model.spec.model_type.removeprefix("gguf:")
        return lambda config: gguf_custom_model(config, model.tensors, arch, model.name, source=model.source)
    return lambda config: read_custom_config(config, model.name, source=model.source, hf_quant_config=hf_quant_config)


_LAYER_INDEX = re.compile(r"\.\d+(?=\.|\*|$)")
EXCLUSION_KEYS: tuple[str, ...] = ("modules_to_not_convert", "ignore", "ignored_layers", "exclude_modules")
"""Lists of module patterns a quantization config leaves unquantized."""


def _widen(name: str) -> str:
    return _LAYER_INDEX.sub(".*", name)


def compact_quantization_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` with layer (and expert) indices widened to ``*`` in its module lists, duplicates dropped.

    Exclusion lists, ``quantized_layers`` keys (kept per module where the widened entries
    disagree) and ``config_groups`` targets; nested ``quantization`` objects
    (hf_quant_config.json) too. Qwen3-235B-A22B-FP8's 283 exclusions become 7 and
    MiniMax-M3-NVFP4's 22,422 quantized layers 15. :func:`minimal_config` keeps the
    result only when the rebuilt spec is identical, so a checkpoint that really differs
    from layer to layer keeps its full list.
    """
    out = dict(config)
    for key in EXCLUSION_KEYS:
        value = out.get(key)
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            out[key] = list(dict.fromkeys(_widen(item) for item in value))
    layers = out.get("quantized_layers")
    if isinstance(layers, Mapping):
        widened: dict[str, list] = {}
        for name, value in layers.items():
            widened.setdefault(_widen(str(name)), []).append((name, value))
        compact: dict[str, Any] = {}
        for key, items in widened.items():
            values = [value for _, value in items]
            if all(value == values[0] for value in values):
                compact[key] = values[0]
            else:
                compact.update(dict(items))
        out["quantized_layers"] = compact
    groups = out.get("config_groups")
    if isinstance(groups, Mapping):
        out["config_groups"] = {
            name: ({**group, "targets": list(dict.fromkeys(_widen(str(t)) for t in group["targets"]))}
                   if isinstance(group, Mapping) and isinstance(group.get("targets"), list) else group)
            for name, group in groups.items()}
    if isinstance(out.get("quantization"), Mapping):
        out["quantization"] = compact_quantization_config(out["quantization"])
    return out


def minimal_config(model: CustomModel, hf_quant_config: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The fewest config keys that rebuild exactly ``model.spec`` (greedy, verified).

    Each key (and each key inside ``text_config``) is dropped in turn when the
    model rebuilt without it has the same spec and reading. ``model_type`` and
    the standard size keys (:data:`ALWAYS_KEPT_KEYS`) are always kept when
    present, so a link does not depend on transformers' defaults for them. By
    construction the returned config rebuilds the same spec.

    Args:
        model: A model from :func:`read_custom_config`, the Hub or a GGUF file.
        hf_quant_config: The ``hf_quant_config.json`` the link carries with it
            (:func:`minimal_hf_quant_config`); None = the model's own.

    Returns:
        A config dict, usually 5-20 keys.
    """
    rebuild = _rebuilder(model, model.hf_quant_config if hf_quant_config is None else hf_quant_config)

    def same(candidate: dict[str, Any]) -> bool:
        try:
            other = rebuild(candidate)
        except (ValueError, TypeError, KeyError, AttributeError):
            return False
        return other.spec == model.spec and other.reading == model.reading
    return _minimal_keys(model, same)


def minimal_hf_quant_config(model: CustomModel) -> dict[str, Any] | None:
    """The model's ``hf_quant_config.json`` with its module lists widened when that rebuilds the same spec."""
    if model.hf_quant_config is None:
        return None
    compact = compact_quantization_config(model.hf_quant_config)
    try:
        other = read_custom_config(model.config, model.name, source=model.source, hf_quant_config=compact)
    except ValueError:
        return dict(model.hf_quant_config)
    return compact if other.spec == model.spec else dict(model.hf_quant_config)


MAX_GREEDY_KEYS = 128
"""Most removable keys of one object :func:`minimal_config` tries one at a time (published configs have at
most 96). A larger object, padded with keys nothing reads, is pruned by halves first
(:func:`_halved_away`), so it costs a few rebuilds per needed key instead of one rebuild per key: a paste of
1,000 unread keys in both ``config`` and ``text_config`` took 38 s of CPU one key at a time."""


def _halved_away(keys: list[str], same_without: Callable[[list[str]], bool]) -> list[str]:
    """The keys of ``keys`` whose removal keeps the model: a run of keys that can go together goes in one
    rebuild, a run that cannot is split in halves down to single keys (which then stay)."""
    dropped: list[str] = []
    pending = [keys]
    while pending:
        run = pending.pop()
        if same_without([*dropped, *run]):
            dropped += run
        elif len(run) > 1:
            middle = len(run) // 2
            pending += [run[middle:], run[:middle]]  # the first half is tried first
    return dropped


def _minimal_keys(model: CustomModel, same: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The greedy key removal of :func:`minimal_config`, given its equality check (objects of more than
    :data:`MAX_GREEDY_KEYS` removable keys pruned by halves first)."""
    keep = {"model_type", *ALWAYS_KEPT_KEYS}

    config = {key: value for key, value in model.config.items()}
    for where in (None, "text_config"):  # long ModelOpt / FP8 exclusion lists, one pattern per layer
        holder = config if where is None else config.get(where)
        if isinstance(holder, Mapping) and isinstance(holder.get("quantization_config"), Mapping):
            compact = {**holder, "quantization_config": compact_quantization_config(holder["quantization_config"])}
            trial = compact if where is None else {**config, where: compact}
            if same(trial):
                config = trial
    candidates = [key for key in config if key not in keep and key != "text_config"]
    if len(candidates) > MAX_GREEDY_KEYS:
        gone = set(_halved_away(candidates, lambda drop: same({k: v for k, v in config.items() if k not in drop})))
        config = {k: v for k, v in config.items() if k not in gone}
    text = config.get("text_config")
    inner_candidates = [key for key in text if key not in keep] if isinstance(text, Mapping) else []
    if len(inner_candidates) > MAX_GREEDY_KEYS:
        def without(drop: list[str]) -> bool:
            return same({**config, "text_config": {k: v for k, v in text.items() if k not in drop}})
        gone = set(_halved_away(inner_candidates, without))
        config = {**config, "text_config": {k: v for k, v in text.items() if k not in gone}}
    for key in list(config):
        if key in keep:
            continue
        trial = {k: v for k, v in config.items() if k != key}
        if same(trial):
            config = trial
        elif key == "text_config" and isinstance(config[key], Mapping):
            inner = dict(config[key])
            for inner_key in list(inner):
                if inner_key in keep:
                    continue
                smaller = {k: v for k, v in inner.items() if k != inner_key}
                if same({**config, key: smaller}):
                    inner = smaller
            config = {**config, key: inner}
    return config


def encode_model(model: CustomModel) -> str:
    """The ``custom_model`` code for a model (module docstring)."""
    quant = minimal_hf_quant_config(model)
    payload: dict[str, Any] = {"n": model.name, "c": minimal_config(model, quant), "s": model.source[:300]}
    if quant is not None:
        payload["q"] = quant
    if model.reading == "gguf":
        payload["a"] = model.spec.model_type.removeprefix("gguf:")
        payload["t"] = [[name, list(shape), count, kind, qtype] for name, shape, count, kind, qtype in model.tensors]
    return pack(payload)


def decode_model(code: str) -> CustomModel:
    """The custom model a ``custom_model`` code describes, validated like a pasted config.json.

    Raises:
        ValueError: a damaged, tampered or outdated code, or a config the
            planner cannot read; the message names the parameter.
    """
    payload = unpack(code, MODEL_PARAM)
    try:
        parsed = _ModelPayload.model_validate(payload)
    except ValidationError as exc:
        raise ValueError(f"Link parameter {MODEL_PARAM} has an invalid {_schema_problem(exc)}; it was "
                         "ignored: set the custom model again in the sidebar panel") from None
    try:
        if parsed.t is None:
            return read_custom_config(parsed.c, parsed.n, source=parsed.s, hf_quant_config=parsed.q)
        from model_catalog.gguf_header import MAX_TENSOR_COUNT, MAX_TENSOR_DIMS
        from model_catalog.gguf_reader import gguf_custom_model

        rows = []
        for name, shape, count, kind, qtype in parsed.t:
            if (kind not in _KINDS or count < 1 or not shape or any(d < 1 for d in shape)
                    or len(shape) > MAX_TENSOR_DIMS):
                raise ValueError(f"tensor row {quote(name)} is malformed")
            if math.prod(shape) > MAX_TENSOR_ELEMENTS:
                raise ValueError(f"tensor row {quote(name)} has more than {MAX_TENSOR_ELEMENTS:,} elements, more "
                                 "than a GGUF file can hold")
            rows.append((name, tuple(shape), count, kind, qtype))
        tensors = sum(row[2] for row in rows)
        if tensors > MAX_TENSOR_COUNT:
            raise ValueError(f"the tensor rows count {tensors:,} tensors; a GGUF file holds at most "
                             f"{MAX_TENSOR_COUNT:,}")

        return gguf_custom_model(parsed.c, rows, parsed.a or "unknown", parsed.n, source=parsed.s)
    except ValueError as exc:
        raise ValueError(f"Link parameter {MODEL_PARAM} describes a model that cannot be planned: {exc}; "
                         "set the custom model again in the sidebar panel") from None


# --------------------------------------------------------------------------
# Custom GPU
# --------------------------------------------------------------------------
def encode_gpu(gpu: CustomGPU) -> str:
    """The ``custom_gpu`` code for a custom GPU (module docstring)."""
    return pack({"n": gpu.name, "m": gpu.memory_value, "u": gpu.memory_unit, "b": gpu.bandwidth_gb_s,
                 "p": gpu.price_usd_per_hour})


def decode_gpu(code: str) -> CustomGPU:
    """The custom GPU a ``custom_gpu`` code describes.

    Raises:
        ValueError: a damaged or tampered code or out-of-range values; the
            message names the parameter and the field.
    """
    payload = unpack(code, GPU_PARAM)
    try:
        parsed = _GPUPayload.model_validate(payload)
        return custom_gpu(parsed.n, parsed.m, parsed.u, parsed.b, parsed.p)
    except ValidationError as exc:
        raise ValueError(f"Link parameter {GPU_PARAM} has an invalid {_schema_problem(exc)}; it was ignored: "
                         "set the custom GPU again in the sidebar panel") from None
    except ValueError as exc:
        raise ValueError(f"Link parameter {GPU_PARAM}: {exc}; it was ignored: set the custom GPU again in the "
                         "sidebar panel") from None
