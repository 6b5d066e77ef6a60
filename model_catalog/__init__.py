"""Catalog of models (Hugging Face config.json + metadata), validated at the edge.

GPU API (model_catalog.gpus): :func:`load_gpus`, :func:`gpu_ids`, :func:`get_gpu`.

Model API:
    * :func:`model_ids` - sorted canonical ids.
    * :func:`get_model_entry` - the validated entry for an id or alias.
    * :func:`model_spec` - the planner's :class:`~planner.model.ModelSpec` (cached), named by the entry's id.
    * :func:`served_model_spec` - the same numbers, named by the id the user gave (an alias stays the alias).
    * :func:`hub_model_id` - the catalog's spelling of an id or alias; :func:`catalog_id_or_none`.
    * :func:`model_spec_from_config` - a ModelSpec from any config.json dict.

Verification API (no torch): :func:`verification_table`, :func:`verification_checks`,
:func:`verification_summary` read ``verification.json``, written by ``python -m planner verify``.

transformers is imported only when a spec is built, so importing this package
(e.g. for GPU data) stays cheap; catalog specs come from the committed
snapshot (:mod:`model_catalog.spec_snapshot`) while it is current, without
importing transformers at all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from model_catalog.gpus import GPU, get_gpu, gpu_ids, load_gpus
from model_catalog.model_registry import (MODELS_DIR, catalog_id_or_none, hub_model_id, load_catalog,
                                          resolve_model_id)
from model_catalog.schema_models import ModelEntry, OfficialParams
from model_catalog.verification import verification_checks, verification_summary, verification_table

if TYPE_CHECKING:
    from planner.model import ModelSpec


def model_ids() -> tuple[str, ...]:
    """Canonical ids of every catalog model, sorted."""
    return tuple(sorted(load_catalog().entries))


def get_model_entry(model_id: str) -> ModelEntry:
    """The catalog entry for an id or alias (case-insensitive).

    Raises:
        ValueError: unknown id; the message suggests close matches.
    """
    return load_catalog().entries[resolve_model_id(model_id)]


def model_spec(model_id: str) -> ModelSpec:
    """The planner's view of a catalog model (id or alias), cached.

    Raises:
        ValueError: unknown id, or a config the planner cannot read.
    """
    return _cached_model_spec(resolve_model_id(model_id))


def served_model_spec(model_id: str) -> ModelSpec:
    """:func:`model_spec` named by the repo id the user gave: ``model_id`` is :func:`hub_model_id`.

    An alias (``meta-llama/Llama-3.1-8B-Instruct``) gets the entry's numbers (same layers, params,
    KV bytes) but keeps its own id, so plans, JSON and launch commands serve the repo the user
    asked for; the entry's canonical id is ``resolve_model_id(model_id)``. A canonical id returns
    the :func:`model_spec` object itself. Cached.

    Raises:
        ValueError: unknown id, or a config the planner cannot read.
    """
    return _cached_served_spec(hub_model_id(model_id))


@lru_cache(maxsize=None)
def _cached_served_spec(hub_id: str) -> ModelSpec:
    spec = _cached_model_spec(resolve_model_id(hub_id))
    return spec if spec.model_id == hub_id else replace(spec, model_id=hub_id)


@lru_cache(maxsize=None)
def _cached_model_spec(canonical_id: str) -> ModelSpec:
    from model_catalog import spec_snapshot

    entry = load_catalog().entries[canonical_id]
    # The committed snapshot holds the same spec when it is current (no transformers import: fast cold start).
    snapshot = spec_snapshot.lookup(entry.id, entry.display_name, entry.config, hf_quant_config=entry.hf_quant_config)
    if snapshot is not None:
        return snapshot
    return model_spec_from_config(entry.config, entry.id, display_name=entry.display_name,
                                  hf_quant_config=entry.hf_quant_config)


def model_spec_from_config(raw_config: Mapping[str, Any], model_id: str, *, display_name: str = "",
                           hf_quant_config: Mapping[str, Any] | None = None) -> ModelSpec:
    """A ModelSpec from a config.json dict (e.g. one pasted by the user), and its ``hf_quant_config.json``.

    Raises:
        ValueError: ``"<model_id>: ..."`` naming the missing or bad key.
    """
    from model_catalog.hf_config import model_spec_from_config as build

    return build(raw_config, model_id, display_name=display_name, hf_quant_config=hf_quant_config)


__all__ = [
    "GPU",
    "MODELS_DIR",
    "get_gpu",
    "gpu_ids",
    "load_gpus",
    "ModelEntry",
    "OfficialParams",
    "catalog_id_or_none",
    "get_model_entry",
    "hub_model_id",
    "model_ids",
    "model_spec",
    "model_spec_from_config",
    "resolve_model_id",
    "served_model_spec",
    "verification_checks",
    "verification_summary",
    "verification_table",
]
