"""Cached catalog loaders for the pages (catalog I/O only; planner maths stays uncached).

``model_catalog`` reads and validates JSON files and transformers configs;
these wrappers keep the results per server process with ``st.cache_data``
(bounded by ``max_entries``) so a rerun costs no file reads.

Sources: Streamlit docs, "Caching overview" (cache I/O, not computation).
"""

from __future__ import annotations

import streamlit as st

import model_catalog
from model_catalog import gpus as gpu_catalog
from planner.model import ModelSpec

DEFAULT_MODEL_ID = "meta-llama/Meta-Llama-3-8B"
"""Home page default model (falls back to the first catalog id if it is missing)."""

DEFAULT_GPU_ID = "nvidia-h100-sxm-80gb"
"""Home page default GPU (falls back to the first catalog id if it is missing)."""

CUSTOM_ID = "custom"
"""Sidebar id of the user's custom model or GPU (resolved by :mod:`ui.custom_panel`)."""


@st.cache_data(max_entries=1, show_spinner=False)
def model_ids() -> tuple[str, ...]:
    """Canonical ids of every catalog model, in catalog order."""
    return tuple(model_catalog.model_ids())


def model_spec(model_id: str) -> ModelSpec:
    """The planner's :class:`ModelSpec` for a catalog id or alias, or ``custom`` (:mod:`ui.custom_panel`).

    Raises:
        ValueError: unknown id (with close matches), an unsupported config, or
            ``custom`` without a valid custom model.
    """
    if model_id == CUSTOM_ID:
        from ui import custom_panel

        return custom_panel.model_spec(model_id)
    return _catalog_model_spec(model_id)


@st.cache_data(max_entries=256, show_spinner=False)
def _catalog_model_spec(model_id: str) -> ModelSpec:
    return model_catalog.model_spec(model_id)


@st.cache_data(max_entries=256, show_spinner=False)
def model_entry(model_id: str):
    """The catalog entry (display name, source, official parameter count, config)."""
    return model_catalog.get_model_entry(model_id)


@st.cache_data(max_entries=1, show_spinner=False)
def gpus() -> dict:
    """Every catalog GPU by id, in catalog order."""
    return gpu_catalog.load_gpus()


def gpu_ids() -> tuple[str, ...]:
    """Catalog GPU ids, in catalog order."""
    return tuple(gpus())


def gpu(gpu_id: str):
    """One catalog GPU by canonical id, or the custom GPU for ``custom`` (:mod:`ui.custom_panel`).

    Raises:
        ValueError: unknown id (with close matches).
    """
    if gpu_id == CUSTOM_ID:
        from ui import custom_panel

        return custom_panel.gpu(gpu_id)
    found = gpus().get(gpu_id)
    return found if found is not None else gpu_catalog.get_gpu(gpu_id)


def resolve_model_id(text: str) -> str:
    """Canonical model id for an id or alias (case-insensitive).

    Raises:
        ValueError: unknown id; the message names close matches.
    """
    if text in model_ids():
        return text
    return model_entry(text).id


def resolve_gpu_id(text: str) -> str:
    """Canonical GPU id for an id or alias (``h100``, ``rtx-3090``).

    Raises:
        ValueError: unknown id; the message names close matches.
    """
    if text in gpus():
        return text
    return gpu_catalog.get_gpu(text).id


def default_model_id() -> str:
    """:data:`DEFAULT_MODEL_ID` if the catalog has it, else the first model."""
    ids = model_ids()
    return DEFAULT_MODEL_ID if DEFAULT_MODEL_ID in ids else ids[0]


def default_gpu_id() -> str:
    """:data:`DEFAULT_GPU_ID` if the catalog has it, else the first GPU."""
    ids = gpu_ids()
    return DEFAULT_GPU_ID if DEFAULT_GPU_ID in ids else ids[0]


def pick_existing(wanted: tuple[str, ...], available: tuple[str, ...]) -> list[str]:
    """The ids of ``wanted`` that ``available`` holds, in order (page defaults)."""
    return [item for item in wanted if item in available]
