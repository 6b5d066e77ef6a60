"""A memo of values derived from one model object, for the hot paths of a single plan.

A :class:`~planner.model.spec.ModelSpec` is frozen, so anything computed from it
alone (its KV profile at a dtype, tensor parallel size and block size, its weight
bytes at a weight dtype, its attention kind) never changes. Hashing a spec to use
it as a ``functools.lru_cache`` key walks every layer and parameter group (about
4 us for a 32-layer model, more than most of a plan), so the memo is keyed by the
object's identity instead: :func:`model_memo` returns one dict per live model
object, and the entry goes when the object is garbage collected (a weak reference
with a callback). Two equal but distinct spec objects simply get two memos
holding the same values.

Rules for callers: keys are small tuples of ``str`` / ``int`` / ``float`` /
``None`` (or ``id()`` of an object that the value keeps alive); values are
immutable, or never mutated after being stored, and must not reference the model
itself (that would keep it alive forever). Values that depend on anything besides
the model must have that in the key. Racing threads at worst compute a value twice.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

_MEMOS: dict[int | tuple[int, str], tuple[weakref.ref, dict]] = {}

MAX_NAMESPACED_MODELS = 4
"""How many models keep a namespaced memo at once (the Find search's holds every setup it planned, up to
about 13 MB for an MoE model): the least recently used one is emptied and dropped when a fifth model asks
for one, so a visitor stepping through the catalog on the Find page cannot grow the server by every model's
search (the catalog's specs themselves stay cached for the whole server)."""

_NAMESPACED: list[tuple[int, str]] = []
"""Keys of the live namespaced memos, least recently used first."""

_NAMESPACED_LOCK = threading.Lock()
"""Guards :data:`_NAMESPACED` (each Streamlit session runs its script in a thread of its own)."""

MAX_ENTRIES_PER_MODEL = 4096
"""A model's memo is emptied when it reaches this many entries (a long-running app that
tries many knob combinations on one model would otherwise grow it without bound)."""


def model_memo(model: Any, namespace: str = "") -> dict:
    """The memo dict of ``model`` (created empty on first use), keyed by ``id(model)``.

    Args:
        model: Any object that supports weak references (a ``ModelSpec``).
        namespace: A separate memo of the same model (its own :data:`MAX_ENTRIES_PER_MODEL`), for a caller
            whose many entries would otherwise empty the shared one (the Find search, ``"find"``).

    Returns:
        The same dict for the same live object (and namespace) on every call.
    """
    key = id(model) if not namespace else (id(model), namespace)
    entry = _MEMOS.get(key)
    if entry is not None and entry[0]() is model:
        if namespace:
            _touch(key)
        return entry[1]
    memo: dict = {}
    # the callback keeps its own reference to the dict: at interpreter exit the module global is None already
    _MEMOS[key] = (weakref.ref(model, lambda _ref, key=key, memos=_MEMOS: memos.pop(key, None)), memo)
    if namespace:
        _touch(key)
    return memo


def _touch(key: tuple[int, str]) -> None:
    """Mark namespaced memo ``key`` as the most recently used; drop the oldest beyond
    :data:`MAX_NAMESPACED_MODELS`."""
    with _NAMESPACED_LOCK:
        if key in _NAMESPACED:
            _NAMESPACED.remove(key)
        _NAMESPACED.append(key)
        while len(_NAMESPACED) > MAX_NAMESPACED_MODELS:
            entry = _MEMOS.pop(_NAMESPACED.pop(0), None)
            if entry is not None:
                entry[1].clear()


def remember(memo: dict, key: tuple, value: Any) -> Any:
    """Store ``value`` under ``key`` in a memo from :func:`model_memo` and return it.

    Empties the memo first when it holds :data:`MAX_ENTRIES_PER_MODEL` entries.
    """
    if len(memo) >= MAX_ENTRIES_PER_MODEL:
        memo.clear()
    memo[key] = value
    return value


def memoized(model: Any, key: tuple, compute) -> Any:
    """``model_memo(model)[key]``, computed by ``compute()`` on the first call.

    Exceptions from ``compute`` propagate and are not stored.
    """
    memo = model_memo(model)
    value = memo.get(key)
    if value is None:
        value = remember(memo, key, compute())
    return value
