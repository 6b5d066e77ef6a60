"""Compact, versioned URL parameters for a custom model and a custom GPU.

A design-review link must rebuild the same plan on a fresh server, so a custom
model's architecture travels in the URL. Only the config keys the planner
needs are kept (:func:`minimal_config` drops every key whose removal leaves the
planned :class:`~planner.model.ModelSpec` unchanged), then:

    code = "v1." + base64url( zlib( JSON ) )        (no padding)

JSON payloads (short keys keep links short):

* ``custom_model``: ``{"n": name, "c": minimal config, "s": source}``, plus for
  GGUF files ``"a"``: architecture and ``"t"``: tensor rows
  ``[name pattern, shape, count, kind, ggml type]``.
* ``custom_gpu``: ``{"n": name, "m": memory as text, "u": "GiB"|"GB"|"MiB",
  "b": bandwidth [GB/s], "p": price [USD/h] or null}``.

Decoding never trusts the text: length cap, base64 alphabet, zlib with an
output cap (no decompression bombs) and its Adler-32 check (a changed or cut
character fails), JSON without NaN, a pydantic schema with ``extra="forbid"``,
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
    read_custom_config,
)

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

ALWAYS_KEPT_KEYS: tuple[str, ...] = (
    *GENERIC_REQUIRED_KEYS, "num_key_value_heads", "head_dim", "max_position_embeddings", "torch_dtype",
)
"""Config keys a share code keeps whenever the config has them."""

_CODE = re.compile(r"^v(\d{1,3})\.([A-Za-z0-9_-]*)$")
_KINDS = frozenset({"embedding", "lm_head", "linear", "norm", "bias", "router", "conv", "other"})


class _ModelPayload(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    n: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    c: dict[str, Any]
    s: str = Field(default="shared link", max_length=300)
    a: str | None = Field(default=None, max_length=64)
    t: list[tuple[str, list[int], int, str, str]] | None = Field(default=None, max_length=MAX_TENSOR_ROWS)


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
def pack(payload: Mapping[str, Any]) -> str:
    """``v1.`` + base64url(zlib(compact JSON)), padding removed."""
    text = json.dumps(payload, separators=(",", ":"), sort_keys=True, allow_nan=False)
    data = zlib.compress(text.encode("utf-8"), 9)
    return f"v{CODEC_VERSION}." + base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _reject_constant(name: str) -> None:
    raise ValueError(f"holds {name}")


def unpack(code: str, param: str) -> dict[str, Any]:
    """The JSON object inside a code.

    Args:
        code: The parameter value.
        param: Parameter name, for messages.

    Raises:
        ValueError: ``"link parameter custom_model ... : <reason>; <what to do>"``.
    """
    def fail(reason: str) -> ValueError:
        return ValueError(f"link parameter {param} is not a valid share code ({reason}); it was ignored: "
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
    try:
        payload = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise fail("the content is not valid JSON") from None
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
def _rebuilder(model: CustomModel) -> Callable[[dict[str, Any]], CustomModel]:
    """How the decoder rebuilds a model from a config (GGUF models re-apply their tensors)."""
    if model.reading == "gguf":
        from model_catalog.gguf_reader import gguf_custom_model

        arch = model.spec.model_type.removeprefix("gguf:")
        return lambda config: gguf_custom_model(config, model.tensors, arch, model.name, source=model.source)
    return lambda config: read_custom_config(config, model.name, source=model.source)


def minimal_config(model: CustomModel) -> dict[str, Any]:
    """The fewest config keys that rebuild exactly ``model.spec`` (greedy, verified).

    Each key (and each key inside ``text_config``) is dropped in turn when the
    model rebuilt without it has the same spec and reading. ``model_type`` and
    the standard size keys (:data:`ALWAYS_KEPT_KEYS`) are always kept when
    present, so a link does not depend on transformers' defaults for them. By
    construction the returned config rebuilds the same spec.

    Args:
        model: A model from :func:`read_custom_config`, the Hub or a GGUF file.

    Returns:
        A config dict, usually 5-20 keys.
    """
    rebuild = _rebuilder(model)
    keep = {"model_type", *ALWAYS_KEPT_KEYS}

    def same(candidate: dict[str, Any]) -> bool:
        try:
            other = rebuild(candidate)
        except (ValueError, TypeError, KeyError, AttributeError):
            return False
        return other.spec == model.spec and other.reading == model.reading

    config = {key: value for key, value in model.config.items()}
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
    payload: dict[str, Any] = {"n": model.name, "c": minimal_config(model), "s": model.source[:300]}
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
        raise ValueError(f"link parameter {MODEL_PARAM} has an invalid {_schema_problem(exc)}; it was "
                         "ignored: set the custom model again in the sidebar panel") from None
    try:
        if parsed.t is None:
            return read_custom_config(parsed.c, parsed.n, source=parsed.s)
        rows = []
        for name, shape, count, kind, qtype in parsed.t:
            if kind not in _KINDS or count < 1 or not shape or any(d < 1 for d in shape) or len(shape) > 4:
                raise ValueError(f"tensor row {name!r} is malformed")
            rows.append((name, tuple(shape), count, kind, qtype))
        from model_catalog.gguf_reader import gguf_custom_model

        return gguf_custom_model(parsed.c, rows, parsed.a or "unknown", parsed.n, source=parsed.s)
    except ValueError as exc:
        raise ValueError(f"link parameter {MODEL_PARAM} describes a model that cannot be planned: {exc}; "
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
        raise ValueError(f"link parameter {GPU_PARAM} has an invalid {_schema_problem(exc)}; it was ignored: "
                         "set the custom GPU again in the sidebar panel") from None
    except ValueError as exc:
        raise ValueError(f"link parameter {GPU_PARAM}: {exc}; it was ignored: set the custom GPU again in the "
                         "sidebar panel") from None
