"""What typing into a model picker finds first: the base repo before its quantized checkpoints.

Streamlit 1.67's selectbox and multiselect filter their options in the browser
(``filter_mode="fuzzy"``): they keep the labels that hold the typed characters in order
(:func:`ui.catalog.is_fuzzy_match`) and sort them by fzy's score, best first, keeping the
options' order among equal scores (``useSyncComboBoxEnterTargetFocus`` chunk: ``xn`` sorts by
``-_n(query, label)``; fzy.js, MIT, https://github.com/jhawthorn/fzy.js). Enter takes the first.

fzy scores a run of consecutive matches the same wherever it starts after a separator, and
takes 0.005 off for every label character outside the match, so the shorter label wins:
typing ``DeepSeek-V3.2`` put ``nvidia/DeepSeek-V3.2-NVFP4`` (66 characters) before
``deepseek-ai/DeepSeek-V3.2`` (85, its name carries the attention design), and one Enter planned
the NVFP4 checkpoint. :func:`base_first_labels` therefore names each quantized checkpoint's base
in its label (``... · quantized from DeepSeek-V3.2 (MLA + sparse indexer, FP8)``): what a reader wants
to know about such a repo, and enough characters that the base scores higher for the base's repo name,
id or display name (``tests/test_picker_order.py`` checks every pair of the catalog).
:func:`frontend_order` replays the browser's ordering, for the tests.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence

QUANT_TAGS = frozenset({"FP8", "NVFP4", "MXFP4", "FP4", "AWQ", "GPTQ", "INT4", "INT8", "W4A16", "W8A8", "W4A8",
                        "GGUF", "BNB", "EXL2"})
"""Repo-name segments that mark a quantized checkpoint (``Qwen3-32B-FP8-Static-PerTensor``)."""

BASE_PRECISION_TAGS = frozenset({"BF16", "FP16"})
"""Segments that mark the original precision: such a repo is the base when no untagged one exists
(``NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16`` beside its ``-FP8`` and ``-NVFP4``)."""

QUANTIZED_NOTE = " · quantized from "
"""What a quantized checkpoint's label adds before its base's id."""


def _stem(repo: str) -> tuple[str, str | None]:
    """``(repo name before its first precision segment, lowercased; that segment or None)``:
    ``DeepSeek-V3.2-NVFP4`` -> ``("deepseek-v3.2", "NVFP4")``."""
    parts = repo.split("-")
    for i, part in enumerate(parts):
        if i and part.upper() in QUANT_TAGS | BASE_PRECISION_TAGS:
            return "-".join(parts[:i]).lower(), part.upper()
    return repo.lower(), None


def quantized_bases(aliases: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Quantized checkpoint id -> its base's id, among the catalog ids ``aliases`` lists.

    The base is the entry whose repo name (or one of its alias repo names, any owner, any case) is the
    checkpoint's without its precision segment and what follows: ``nvidia/DeepSeek-V3.2-NVFP4`` ->
    ``deepseek-ai/DeepSeek-V3.2``, ``nvidia/Llama-3.1-70B-Instruct-FP8`` -> the entry that answers to
    ``meta-llama/Llama-3.1-70B-Instruct``; where every repo of a stem carries a segment, the BF16/FP16 one.

    Args:
        aliases: Catalog id -> its alias ids.
    """
    plain: dict[str, str] = {}  # stem -> base id
    original: dict[str, str] = {}  # stem -> the BF16/FP16 repo's id
    quantized: dict[str, str] = {}  # quantized id -> stem
    for model_id, names in aliases.items():
        stem, tag = _stem(model_id.rpartition("/")[2])
        if tag is None:
            plain.setdefault(stem, model_id)
        elif tag in BASE_PRECISION_TAGS:
            original.setdefault(stem, model_id)
        else:
            quantized[model_id] = stem
        for alias in names:
            alias_stem, alias_tag = _stem(alias.rpartition("/")[2])
            if alias_tag is None:
                plain.setdefault(alias_stem, model_id)
    out = {}
    for model_id, stem in quantized.items():
        base = plain.get(stem) or original.get(stem)
        if base is not None and base != model_id:
            out[model_id] = base
    return out


def base_first_labels(labels: Mapping[str, str], base_names: Mapping[str, str]) -> dict[str, str]:
    """``labels`` with :data:`QUANTIZED_NOTE` and the base's display name after each quantized checkpoint's label.

    The base's *name*, not its id: a base label that writes its aliases into its id
    (``nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B[-Base]-BF16``) no longer holds the plain id in one run,
    so a checkpoint label that did would win when that id is typed.

    Args:
        labels: Option id -> picker label (:func:`ui.catalog.model_label`).
        base_names: Quantized checkpoint id -> its base's display name (:func:`quantized_bases`).
    """
    return {option: f"{label}{QUANTIZED_NOTE}{base_names[option]}" if option in base_names else label
            for option, label in labels.items()}


@functools.lru_cache(maxsize=4)
def catalog_base_names(model_ids: tuple[str, ...]) -> dict[str, str]:
    """Quantized checkpoint id -> its base's display name, among these catalog ids (read from the catalog)."""
    from ui import catalog  # noqa: PLC0415 - Streamlit-cached loaders, only for the app

    bases = quantized_bases({m: tuple(catalog.model_entry(m).aliases) for m in model_ids})
    return {variant: catalog.model_entry(base).display_name for variant, base in bases.items()}


# --------------------------------------------------------------------------
# The browser's ordering (fzy.js score, as bundled in Streamlit 1.67)
# --------------------------------------------------------------------------
_GAP_LEADING, _GAP_TRAILING, _GAP_INNER = -0.005, -0.005, -0.01
_MATCH_CONSECUTIVE = 1.0
_MATCH_SLASH, _MATCH_WORD, _MATCH_CAPITAL, _MATCH_DOT = 0.9, 0.8, 0.7, 0.6


def _bonuses(label: str) -> list[float]:
    out, previous = [], "/"
    for char in label:
        if previous == "/":
            out.append(_MATCH_SLASH)
        elif previous in "-_ ":
            out.append(_MATCH_WORD)
        elif previous == ".":
            out.append(_MATCH_DOT)
        elif previous.lower() == previous and char.upper() == char:  # as fzy.js: digits and signs count too
            out.append(_MATCH_CAPITAL)
        else:
            out.append(0.0)
        previous = char
    return out


def fzy_score(query: str, label: str) -> float:
    """fzy.js ``score(needle, haystack)``, case-insensitive, for a label :func:`ui.catalog.is_fuzzy_match` keeps.

    Returns:
        ``inf`` when the query is the whole label (any case), ``-inf`` for an empty one or a label over
        1,024 characters, else the best alignment's score (higher is better).
    """
    if not query or not label:
        return -math.inf
    if query == label or len(query) == len(label):
        return math.inf
    if len(label) > 1024:
        return -math.inf
    q, text, bonus = query.lower(), label.lower(), _bonuses(label)
    last_d: list[float] = []
    last_m: list[float] = []
    for i, qc in enumerate(q):
        gap = _GAP_TRAILING if i == len(q) - 1 else _GAP_INNER
        best = -math.inf
        d_row, m_row = [], []
        for j, tc in enumerate(text):
            if qc == tc:
                if i == 0:
                    score = j * _GAP_LEADING + bonus[j]
                elif j:
                    score = max(last_m[j - 1] + bonus[j], last_d[j - 1] + _MATCH_CONSECUTIVE)
                else:
                    score = -math.inf
                d_row.append(score)
                best = max(score, best + gap)
            else:
                d_row.append(-math.inf)
                best += gap
            m_row.append(best)
        last_d, last_m = d_row, m_row
    return last_m[-1]


def frontend_order(query: str, labels: Mapping[str, str]) -> list[str]:
    """The option ids in the order the picker lists them after ``query`` is typed (first = what Enter takes)."""
    from ui.catalog import is_fuzzy_match  # noqa: PLC0415 - the filter the browser applies

    kept = [option for option, label in labels.items() if is_fuzzy_match(query, label)]
    return sorted(kept, key=lambda option: -fzy_score(query, labels[option]))  # stable, as lodash sortBy

