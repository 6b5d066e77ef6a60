"""Loading and looking up catalog entries (``model_catalog/models/*.json``).

Loading is cached with ``functools.lru_cache`` (the UI adds ``st.cache_data``
on top). A malformed file fails with a ``ValueError`` naming the file and the
field; an unknown id fails with close matches from ``difflib``.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from pydantic import ValidationError

from model_catalog.schema_models import ModelEntry
from planner.text import quote

MODELS_DIR = Path(__file__).resolve().parent / "models"
"""Folder of the catalog's model entries, one ``ORG__NAME.json`` per model."""

_LIST_HINT = "(see `python -m planner models`)"


@dataclass(frozen=True)
class ModelCatalog:
    """All entries of one models folder.

    Attributes:
        entries: Entry per canonical id.
        lookup: Canonical id per lower-cased id or alias.
        spelling: The catalog's own spelling of each id and alias, per lower-cased id or alias
            (``meta-llama/llama-3.1-8b-instruct`` -> ``meta-llama/Llama-3.1-8B-Instruct``): the Hugging
            Face repo id as the entry file writes it, which is how the Hub spells it.
    """

    entries: Mapping[str, ModelEntry]
    lookup: Mapping[str, str]
    spelling: Mapping[str, str]


def _describe(error: ValidationError) -> str:
    """``field 'a.b': message; ...`` for each pydantic error."""
    parts = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or "<entry>"
        parts.append(f"field '{field}': {item['msg']}")
    return "; ".join(parts)


def load_entry_file(path: Path) -> ModelEntry:
    """Read and validate one entry file.

    Raises:
        ValueError: not JSON, a field fails validation, or the file name does
            not match the ``id`` field; the message names the file and field.
    """
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not valid JSON ({exc})") from None
    try:
        entry = ModelEntry.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(f"{path.name}: invalid model entry: {_describe(exc)}") from None
    if entry.file_stem != path.stem:
        raise ValueError(f"{path.name}: field 'id' is {entry.id!r}, so the file must be named {entry.file_stem}.json")
    return entry


@lru_cache(maxsize=8)
def load_catalog(models_dir: Path = MODELS_DIR) -> ModelCatalog:
    """Load every ``*.json`` entry of ``models_dir`` (cached per folder).

    Raises:
        ValueError: a malformed entry, or an id / alias claimed twice
            (case-insensitive); the message names the files.
    """
    entries: dict[str, ModelEntry] = {}
    lookup: dict[str, str] = {}
    spelling: dict[str, str] = {}
    for path in sorted(Path(models_dir).glob("*.json")):
        entry = load_entry_file(path)
        for name in (entry.id, *entry.aliases):
            owner = lookup.setdefault(name.lower(), entry.id)
            if owner != entry.id:
                raise ValueError(f"{path.name}: field 'aliases' or 'id': {name!r} is already used by {owner!r}")
            spelling[name.lower()] = name
        entries[entry.id] = entry
    if not entries:
        raise ValueError(f"no model entries (*.json) found in {models_dir}")
    return ModelCatalog(entries=MappingProxyType(entries), lookup=MappingProxyType(lookup),
                        spelling=MappingProxyType(spelling))


_DECORATIONS = re.compile(r"^meta-|-(instruct|chat|hf|it|base)$")
"""Release decorations that do not change the architecture: ``Meta-Llama-3.1-8B`` vs ``Llama-3.1-8B-Instruct``."""


def _core(name: str) -> str:
    """The model part of an id without org and release decorations, e.g. ``llama-3.1-8b``."""
    short = name.rsplit("/", 1)[-1]
    previous = None
    while previous != short:
        previous, short = short, _DECORATIONS.sub("", short)
    return short


def _similarity(query: str, name: str) -> float:
    """Best difflib ratio of ``query`` to ``name`` or to its part after ``/``, plus 1
    when a query of 4+ characters appears inside the name (so substrings rank first),
    plus 1 when both name the same model once org and release decorations
    (``meta-``, ``-instruct``, ``-hf``, ...) are dropped."""
    short = name.rsplit("/", 1)[-1]
    ratio = max(difflib.SequenceMatcher(None, query, text).ratio() for text in (name, short))
    same_core = _core(query) == _core(name)
    return ratio + (1.0 if len(query) >= 4 and query in name else 0.0) + (1.0 if same_core else 0.0)


MAX_MODEL_ID_CHARS = 200
"""Longest model id looked up [characters]. A Hugging Face repo id is ``org/name``, the name at most
96 characters (the Hub's limit, huggingface_hub ``validate_repo_id``); the same bound as a link's id
values (ui/link_guard.py ``MAX_ID_CHARS``). A 100,000-character ``--model`` cost 43 s in the close-match
search before this bound."""


def _suggestions(query: str, catalog: ModelCatalog, limit: int = 3, cutoff: float = 0.6) -> list[str]:
    """Up to ``limit`` canonical ids closest to ``query`` (by id, alias or name part)."""
    wanted = query.lower()
    best: dict[str, float] = {}
    for name, model_id in catalog.lookup.items():
        best[model_id] = max(best.get(model_id, 0.0), _similarity(wanted, name))
    ranked = sorted((model_id for model_id, score in best.items() if score >= cutoff), key=lambda m: (-best[m], m))
    return ranked[:limit]


def resolve_model_id(model_id: str, models_dir: Path = MODELS_DIR) -> str:
    """Canonical id for an id or alias (case-insensitive).

    Raises:
        ValueError: ``unknown model id 'X'; did you mean 'A', 'B'? (see `python -m planner models`)``.
    """
    catalog = load_catalog(models_dir)
    text = str(model_id).strip()
    if len(text) > MAX_MODEL_ID_CHARS:  # before any matching: difflib is quadratic in the query's length
        raise ValueError(f"model id {quote(text)} is longer than {MAX_MODEL_ID_CHARS} characters, so it is no "
                         f"Hugging Face repo id (org/name); {_LIST_HINT}")
    found = catalog.lookup.get(text.lower())
    if found is not None:
        return found
    suggestions = _suggestions(text, catalog)
    if suggestions:
        hint = "did you mean " + ", ".join(repr(s) for s in suggestions) + "?"
    else:
        hint = "no close match in the catalog"
    raise ValueError(f"unknown model id {quote(text)}; {hint} {_LIST_HINT}")


def hub_model_id(model_id: str, models_dir: Path = MODELS_DIR) -> str:
    """The Hugging Face repo id the user named, as the catalog spells it (case-insensitive match).

    An alias stays that alias (``meta-llama/Llama-3.1-8B-Instruct`` is not turned into the entry's
    ``meta-llama/Meta-Llama-3.1-8B``): aliases share the entry's architecture, so the numbers are the
    entry's, but a launch command must serve the repo the user asked for. The spelling is the entry
    file's (``meta-llama/llama-3.1-8b-instruct`` -> ``meta-llama/Llama-3.1-8B-Instruct``), since the
    Hub's repo ids are case-sensitive in download URLs and engines pass the id on verbatim.

    Raises:
        ValueError: an unknown id, as :func:`resolve_model_id` says it.
    """
    resolve_model_id(model_id, models_dir)  # the same checks and message for an unknown id
    return load_catalog(models_dir).spelling[str(model_id).strip().lower()]


def catalog_id_or_none(model_id: str, models_dir: Path = MODELS_DIR) -> str | None:
    """The canonical id of a catalog id or alias (case-insensitive), or None when the catalog lacks it.

    No close-match search and no error: for callers that only ask whether a spec's ``model_id``
    (possibly an alias, :func:`hub_model_id`) names a catalog entry.
    """
    text = str(model_id).strip()
    return None if len(text) > MAX_MODEL_ID_CHARS else load_catalog(models_dir).lookup.get(text.lower())
