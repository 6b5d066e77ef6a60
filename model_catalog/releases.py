"""Release dates of catalog ids and aliases, and of quantized checkpoints through the model they were made from.

An entry's ``released`` is its own; an alias shares it unless the entry's ``alias_released`` gives the alias its
own (Qwen/Qwen3.6-27B, 22 April 2026, beside Qwen/Qwen3.5-27B's February). A quantized checkpoint the catalog
holds no date for (nvidia/Qwen3.6-27B-NVFP4) gets its base model's, marked as such: the checkpoint came out on or
after it. The base model is read from the checkpoint's repo name, which its publishers form as the base model's
name plus the quantization (``-NVFP4``, ``-FP8``, ``-FP8-Static-PerTensor``; NVIDIA ModelOpt and Qwen's own
FP8 repos on Hugging Face).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from model_catalog.model_registry import MODELS_DIR, ModelCatalog, load_catalog

QUANT_SUFFIX = re.compile(r"-(?:nvfp4|mxfp4|fp8|fp4|int4|int8|w4a16|w8a8|w4a8|awq|gptq)(?:-[^/]*)?$", re.IGNORECASE)
"""The quantization part at the end of a checkpoint's repo name, and whatever follows it."""


@dataclass(frozen=True)
class Release:
    """A catalog id's first public release.

    Attributes:
        date: ``YYYY-MM`` or ``YYYY-MM-DD``.
        source: Where the date was read.
        base_model: The catalog id or alias whose date this is, when the checkpoint has none of its own; else None.
    """

    date: str
    source: str
    base_model: str | None = None


def _own(model_id: str, catalog: ModelCatalog) -> Release | None:
    """The release the catalog states for ``model_id`` (an id or alias, any case), or None."""
    key = model_id.strip().lower()
    canonical = catalog.lookup.get(key)
    if canonical is None:
        return None
    entry = catalog.entries[canonical]
    alias = entry.alias_released.get(catalog.spelling[key])
    if alias is not None:
        return Release(alias.released, alias.source)
    return Release(entry.released, entry.released_source) if entry.released else None


def base_model_id(model_id: str, models_dir: Path = MODELS_DIR) -> str | None:
    """The catalog id or alias a quantized checkpoint was made from, as the catalog spells it, or None.

    Its repo name less :data:`QUANT_SUFFIX`, matched against the name part of every catalog id and alias; one
    of the same organisation first, else the only match (``nvidia/Qwen3.6-27B-NVFP4`` -> ``Qwen/Qwen3.6-27B``;
    ``Qwen/Qwen3-32B-FP8-Static-PerTensor`` -> ``Qwen/Qwen3-32B``). None for a name with no quantization part,
    no match or several.
    """
    org, _, name = model_id.strip().rpartition("/")
    base = QUANT_SUFFIX.sub("", name)
    if base == name or not base:
        return None
    catalog = load_catalog(models_dir)
    found = [spelled for key, spelled in catalog.spelling.items() if key.rpartition("/")[2] == base.lower()]
    same_org = [f for f in found if f.rpartition("/")[0].lower() == org.lower()]
    chosen = same_org or found
    return chosen[0] if len(chosen) == 1 else None


def release(model_id: str, models_dir: Path = MODELS_DIR) -> Release | None:
    """``model_id``'s release (an id or alias): its own, else its base model's (:func:`base_model_id`), else None."""
    catalog = load_catalog(models_dir)
    own = _own(model_id, catalog)
    if own is not None:
        return own
    base = base_model_id(model_id, models_dir)
    inherited = _own(base, catalog) if base else None
    return None if inherited is None else Release(inherited.date, inherited.source, base_model=base)
