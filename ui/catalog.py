"""Cached catalog loaders for the pages (catalog I/O only; planner maths stays uncached).

``model_catalog`` reads and validates JSON files and transformers configs;
these wrappers keep the results per server process (bounded by ``max_entries``) so a rerun
costs no file reads. The per-model loaders use ``st.cache_resource``: their results are frozen
(a frozen :class:`ModelSpec` dataclass, a ``frozen=True`` pydantic entry, the GPU catalog behind a
read-only view), so every session may share
the one object, and a hit costs no unpickling (``st.cache_data`` returns a fresh copy per call,
0.1-0.3 ms each here; the GQA page reads every catalog model per rerun).

Sources: Streamlit docs, "Caching overview" (cache I/O, not computation; ``st.cache_resource`` returns
the cached object itself, ``st.cache_data`` a copy; streamlit/runtime/caching/cache_data_api.py
unpickles each hit).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

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

    An alias keeps its own id as ``model_id`` (:func:`model_catalog.served_model_spec`): the entry's
    numbers, but the pages' launch commands serve the repo the link names.

    Raises:
        ValueError: unknown id (with close matches), an unsupported config, or
            ``custom`` without a valid custom model.
    """
    if model_id == CUSTOM_ID:
        from ui import custom_panel

        return custom_panel.model_spec(model_id)
    return _catalog_model_spec(model_id)


@st.cache_resource(max_entries=256, show_spinner=False)  # frozen ModelSpec: shared, never copied
def _catalog_model_spec(model_id: str) -> ModelSpec:
    return model_catalog.served_model_spec(model_id)


@st.cache_resource(max_entries=256, show_spinner=False)  # frozen pydantic entry: shared, never copied
def model_entry(model_id: str):
    """The catalog entry (display name, source, official parameter count, config)."""
    return model_catalog.get_model_entry(model_id)


@st.cache_resource(max_entries=1, show_spinner=False)  # frozen GPU entries behind a read-only view: shared
def gpus() -> Mapping[str, gpu_catalog.GPU]:
    """Every catalog GPU by id, in catalog order (read-only: every session shares it).

    ``st.cache_data`` unpickled the whole catalog on each call, and a page calls this for the GPU
    picker, its labels and each chosen GPU (a few milliseconds per rerun of the Concurrency page).
    """
    return MappingProxyType(gpu_catalog.load_gpus())


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


def entry_id(model_id: str) -> str | None:
    """The catalog entry's id for an id or alias (``meta-llama/Llama-3.1-8B-Instruct`` ->
    ``meta-llama/Meta-Llama-3.1-8B``), where the catalog's own tables and charts list it; None for a model the
    catalog does not hold (a pasted config)."""
    try:
        return resolve_model_id(model_id)
    except (ValueError, KeyError):
        return None


@st.cache_data(max_entries=256, show_spinner=False)
def hub_model_id(text: str) -> str:
    """The id or alias ``text`` names, as the catalog spells it (``meta-llama/llama-3.1-8b-instruct`` ->
    ``meta-llama/Llama-3.1-8B-Instruct``): the model picker's reading of a link (an alias stays).

    Raises:
        ValueError: unknown id; the message names close matches.
    """
    return model_catalog.hub_model_id(text)


def alias_options(raw_ids: Sequence[str], options: Sequence[str]) -> tuple[str, ...]:
    """``options`` plus the catalog aliases among ``raw_ids`` (a link's ``model`` / ``models`` values),
    each right after its entry's canonical id, so the picker can hold the alias and the URL keeps it.

    Ids that are options already, unknown ids and aliases of entries not offered are left out
    (the link check reports those).
    """
    extra: dict[str, list[str]] = {}
    for raw in raw_ids:
        canonical = model_catalog.catalog_id_or_none(raw)  # no close-match search: check_link reports unknown ids
        if canonical is None:
            continue
        alias = hub_model_id(raw)
        if alias not in options and canonical in options and alias not in extra.get(canonical, []):
            extra.setdefault(canonical, []).append(alias)
    if not extra:
        return tuple(options)
    return tuple(item for option in options for item in (option, *extra.get(option, ())))


def alias_label(alias: str) -> str:
    """The picker label of an alias option: the entry's name, then the alias id
    (``Llama 3.1 8B · meta-llama/Llama-3.1-8B-Instruct``)."""
    return f"{model_entry(alias).display_name}{LABEL_SEPARATOR}{alias}"


def resolve_gpu_id(text: str) -> str:
    """Canonical GPU id for an id or alias (``h100``, ``rtx-3090``).

    Raises:
        ValueError: unknown id; the message names close matches.
    """
    if text in gpus():
        return text
    return gpu_catalog.get_gpu(text).id


# --------------------------------------------------------------------------
# Picker labels: names on screen, ids in the URL (ui.inputs.picker)
# --------------------------------------------------------------------------
LABEL_SEPARATOR = " · "
"""Between a model's display name and its Hugging Face id in the picker label."""


def is_fuzzy_match(query: str, label: str) -> bool:
    """Whether Streamlit's picker filter keeps ``label`` for the typed ``query``.

    Streamlit 1.67's selectbox and multiselect filter with ``filter_mode="fuzzy"`` by
    default: the frontend keeps an option when every character of the query occurs in
    its label in the same order, ignoring case (fzy.js ``hasMatch``, as bundled in
    Streamlit's static ``useSyncComboBoxEnterTargetFocus`` chunk). The ids and names are ASCII.
    """
    text, at = label.lower(), 0
    for char in query.lower():
        at = text.find(char, at) + 1
        if at == 0:
            return False
    return True


def _insertion(repo: str, alias_repo: str) -> tuple[int, str] | None:
    """``(k, text)`` when ``alias_repo`` is ``repo`` with ``text`` inserted at ``k``, moved as far left
    as it goes so that it starts at a separator (``Llama-2-7b-hf`` + ``-chat`` at 10); else None."""
    if len(alias_repo) <= len(repo):
        return None
    k = 0
    while k < len(repo) and repo[k] == alias_repo[k]:
        k += 1
    text = alias_repo[k:len(alias_repo) - (len(repo) - k)]
    if text + repo[k:] != alias_repo[k:]:
        return None
    while k and repo[k - 1] == text[-1]:  # the same string with the insertion one character earlier
        k, text = k - 1, repo[k - 1] + text[:-1]
    return k, text


def model_label(name: str, model_id: str, aliases: Sequence[str] = ()) -> str:
    """The picker label of a catalog model: display name, Hugging Face id, then what its aliases add.

    The label is all the picker can search (:func:`is_fuzzy_match`), so typing any part of the
    name, the id or an alias id finds the entry. Aliases of the same owner that insert words
    into the id's repo name at one place are written there in brackets
    (``meta-llama/Meta-Llama-3.1-8B[-Instruct]``, ``Qwen/Qwen3-30B-A3B-FP8`` with
    ``[-Instruct-2507|-Thinking-2507]`` before ``-FP8``); an alias that the label already matches
    adds nothing (``meta-llama/Llama-3.1-8B`` inside ``meta-llama/Meta-Llama-3.1-8B``); any other
    adds its repo name, or its whole id under another owner, after ``also``.

    Args:
        name: The catalog's ``display_name`` (``Llama 3.1 8B``).
        model_id: The canonical Hugging Face id.
        aliases: The entry's alias ids.

    Returns:
        ``"Llama 3.1 8B · meta-llama/Meta-Llama-3.1-8B[-Instruct]"``.
    """
    owner, _, repo = model_id.rpartition("/")
    found: dict[str, tuple[int, str] | None] = {}
    for alias in aliases:
        alias_owner, _, alias_repo = alias.rpartition("/")
        found[alias] = _insertion(repo, alias_repo) if alias_owner == owner else None
    places = [f[0] for f in found.values() if f is not None]
    place = max(places, key=places.count) if places else None  # the most shared insertion point
    texts = [f[1] for f in found.values() if f is not None and f[0] == place]
    shown_id = (f"{owner}/{repo[:place]}[{'|'.join(dict.fromkeys(texts))}]{repo[place:]}"
                if place is not None else model_id)
    label = f"{name}{LABEL_SEPARATOR}{shown_id}"
    for alias in aliases:
        if not is_fuzzy_match(alias, label):
            alias_owner, _, alias_repo = alias.rpartition("/")
            label += f" also {alias_repo if alias_owner == owner else alias}"
    return label


@st.cache_data(max_entries=1, show_spinner=False)
def model_labels() -> dict[str, str]:
    """Picker label of every catalog model by canonical id (:func:`model_label`)."""
    labels = {}
    for model_id in model_ids():
        entry = model_entry(model_id)
        labels[model_id] = model_label(entry.display_name, model_id, tuple(entry.aliases))
    return labels


def gpu_labels() -> dict[str, str]:
    """Picker label of every catalog GPU by id: its catalog name (``H100 SXM5 80GB``)."""
    return {gpu_id: g.name for gpu_id, g in gpus().items()}


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
