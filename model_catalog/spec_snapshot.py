"""A committed snapshot of every catalog model's ModelSpec, so the app starts without importing transformers.

Building a spec reads config.json through transformers' config classes
(:mod:`model_catalog.hf_config`); importing transformers alone costs about
3.8 s of the first page on a cold server (2-core machine). The snapshot
(``spec_snapshot.json``, written by ``python scripts/snapshot_model_specs.py``
with transformers) holds those same specs as plain JSON, and
:func:`model_catalog.model_spec` uses an entry only when it is provably
current:

* ``sources_sha256``: SHA-256 of the code that derives specs
  (:data:`DERIVATION_SOURCES`: the hf_config/families/quantization adapters
  and the planner dataclasses they build). Any edit there makes the whole
  snapshot stale.
* per model ``config_sha256``: SHA-256 of the entry's id, display name and
  config. A changed or new model has no current entry.

A stale or missing entry is simply not used: the spec is built through
transformers as before, so results never differ, only the start is slower.
``tests/test_spec_snapshot.py`` fails while the snapshot is stale and checks
every stored spec against a fresh transformers-built one.

Encoding: dataclasses as ``{"__type__": name, field: value, ...}`` (only the
planner classes in :data:`_CLASSES`), ``Fraction`` as ``{"__fraction__":
[numerator, denominator]}``, tuples of dataclasses as runs
``{"__runs__": [[count, item], ...]}`` (a model's identical layers), other
tuples as JSON arrays.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import fields, is_dataclass
from fractions import Fraction
from functools import lru_cache
from pathlib import Path
from typing import Any

from planner.model import ModelSpec
from planner.model.dtypes import StorageFormat
from planner.model.layers import (
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.params import ParamGroup
from planner.model.sparse import (
    AttentionWithState,
    CompressedAttention,
    IndexedAttention,
    IndexedMLAAttention,
    SharedKVSlidingAttention,
)

ROOT = Path(__file__).resolve().parents[1]
SNAPSHOT_PATH = Path(__file__).resolve().parent / "spec_snapshot.json"
FORMAT = 1
DERIVATION_SOURCES = (
    "model_catalog/hf_config.py", "model_catalog/families.py", "model_catalog/families_base.py",
    "model_catalog/families_gpt.py", "model_catalog/families_gqa.py",
    "model_catalog/families_hybrid.py", "model_catalog/families_sparse.py", "model_catalog/families_multimodal.py",
    "model_catalog/quantization.py", "model_catalog/spec_snapshot.py", "planner/model/__init__.py",
    "planner/model/layers.py", "planner/model/sparse.py", "planner/model/params.py", "planner/model/spec.py",
    "planner/model/dtypes.py", "planner/model/memo.py", "planner/units.py", "planner/text.py",
    "planner/serving/multimodal.py", "planner/serving/vision_config.py", "planner/serving/vision_towers.py",
    "planner/serving/media_tokens.py",
)
"""Files whose code decides what a spec holds (paths from the repository root): every project module
``model_catalog/hf_config.py`` imports, directly or through another (the vision towers of multimodal entries
included); ``tests/test_spec_snapshot.py`` checks that none is missing."""

_CLASSES = {cls.__name__: cls for cls in (ModelSpec, FullAttention, SlidingWindowAttention, ChunkedLocalAttention,
                                           MLAAttention, RecurrentState, NoCache, ParamGroup, StorageFormat,
                                           IndexedMLAAttention, IndexedAttention, SharedKVSlidingAttention,
                                           CompressedAttention, AttentionWithState)}


# --------------------------------------------------------------------------
# Fingerprints
# --------------------------------------------------------------------------
@lru_cache(maxsize=1)
def sources_sha256() -> str:
    """SHA-256 over :data:`DERIVATION_SOURCES` (path and bytes of each)."""
    digest = hashlib.sha256()
    for name in DERIVATION_SOURCES:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    return digest.hexdigest()


def config_sha256(model_id: str, display_name: str, config: Any, hf_quant_config: Any = None) -> str:
    """SHA-256 of what a spec is built from: id, display name, the config.json keys and the
    repository's ``hf_quant_config.json`` when it has one."""
    doc = {"id": model_id, "display_name": display_name, "config": config}
    if hf_quant_config is not None:
        doc["hf_quant_config"] = hf_quant_config
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# --------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------
def encode(value: Any) -> Any:
    """A spec (or any part of one) as JSON-ready data.

    Raises:
        TypeError: a value of a type the snapshot cannot hold.
    """
    if is_dataclass(value) and not isinstance(value, type):
        name = type(value).__name__
        if _CLASSES.get(name) is not type(value):
            raise TypeError(f"{name} is not a planner class the snapshot knows")
        return {"__type__": name, **{f.name: encode(getattr(value, f.name)) for f in fields(value)}}
    if isinstance(value, Fraction):
        return {"__fraction__": [value.numerator, value.denominator]}
    if isinstance(value, tuple):
        if value and all(is_dataclass(item) for item in value):
            runs: list[list] = []
            for item in map(encode, value):  # encoded, so fields with compare=False count too
                if runs and runs[-1][1] == item:
                    runs[-1][0] += 1
                else:
                    runs.append([1, item])
            return {"__runs__": runs}
        return [encode(item) for item in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} in the spec snapshot")


def decode(data: Any) -> Any:
    """The inverse of :func:`encode`.

    Raises:
        ValueError: an unknown class or malformed data.
    """
    if isinstance(data, list):
        return tuple(decode(item) for item in data)
    if not isinstance(data, dict):
        return data
    if "__fraction__" in data:
        numerator, denominator = data["__fraction__"]
        return Fraction(numerator, denominator)
    if "__runs__" in data:
        return tuple(item for count, raw in data["__runs__"] for item in [decode(raw)] * count)
    cls = _CLASSES.get(data.get("__type__", ""))
    if cls is None:
        raise ValueError(f"unknown class {data.get('__type__')!r} in the spec snapshot")
    return cls(**{key: decode(value) for key, value in data.items() if key != "__type__"})


# --------------------------------------------------------------------------
# Reading and writing
# --------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _load(path: Path = SNAPSHOT_PATH) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("format") == FORMAT else None


def lookup(model_id: str, display_name: str, config: Any, *, hf_quant_config: Any = None,
           path: Path = SNAPSHOT_PATH) -> ModelSpec | None:
    """The snapshot's spec for this catalog entry, or None when the snapshot has no current one."""
    doc = _load(path)
    if doc is None or doc.get("sources_sha256") != sources_sha256():
        return None
    item = doc.get("models", {}).get(model_id)
    if not item or item.get("config_sha256") != config_sha256(model_id, display_name, config, hf_quant_config):
        return None
    try:
        spec = decode(item["spec"])
    except (KeyError, TypeError, ValueError):
        return None
    return spec if isinstance(spec, ModelSpec) else None


def build(entries, make_spec) -> dict:
    """The snapshot document for ``entries`` (catalog entries), each spec made by ``make_spec(entry)``."""
    import transformers

    models = {}
    for entry in sorted(entries, key=lambda e: e.id):
        spec = make_spec(entry)
        models[entry.id] = {"config_sha256": config_sha256(entry.id, entry.display_name, entry.config,
                                                           entry.hf_quant_config),
                            "spec": encode(spec)}
    return {"format": FORMAT, "generated_by": "python scripts/snapshot_model_specs.py",
            "transformers_version": transformers.__version__, "sources_sha256": sources_sha256(),
            "models": models}


def write(doc: dict, path: Path = SNAPSHOT_PATH) -> None:
    """Write ``doc`` (compact, one model per line, so a diff shows which models changed)."""
    head = {key: value for key, value in doc.items() if key != "models"}
    lines = ["{", *(f"  {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()), '  "models": {']
    items = list(doc["models"].items())
    lines += [f"    {json.dumps(k)}: {json.dumps(v, separators=(',', ':'))}{',' if i < len(items) - 1 else ''}"
              for i, (k, v) in enumerate(items)]
    lines += ["  }", "}"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _load.cache_clear()
