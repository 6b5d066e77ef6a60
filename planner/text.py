"""Text for messages: quoting what a user typed back, bounded and printable; counts with their noun.

Every reader of user data (a pasted config, an upload, a link value, a CLI flag) refuses bad input
with a message that says what was wrong. Such a message quotes at most :data:`ECHO_CHARS`
characters of the input: a 20 MB cell echoed whole took seconds to render, and control characters
echoed raw reach a terminal (``ESC ] 0 ; ... BEL`` sets its title).
"""

from __future__ import annotations

ECHO_CHARS = 60
"""Most characters of user input quoted back in a message."""


def quote(value: object, limit: int = ECHO_CHARS) -> str:
    """``value`` as a short, printable quotation for a message.

    Args:
        value: What the user gave (any object; ``str()`` of it is quoted).
        limit: Most characters of the input kept [characters]; longer input is cut with ``…`` and
            its length is said.

    Returns:
        ``'abc'``: single-quoted, non-printable characters written as ``\\x1b``-style escapes
        (:func:`repr` of each), at most ``limit`` input characters. Never raises.

    Example: ``quote("x" * 100_000)`` is ``'xxx…x…' (100,000 characters)``, 60 of them kept.
    """
    try:
        text = value if isinstance(value, str) else str(value)
    except Exception:  # noqa: BLE001 -- a message must never fail on odd input
        text = object.__repr__(value)
    length = len(text)
    shown = text[:limit]
    escaped = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in shown)
    if length <= limit:
        return f"'{escaped}'"
    return f"'{escaped}…' ({length:,} characters)"


def reason(exc: BaseException, limit: int = ECHO_CHARS) -> str:
    """Why a library refused user data, for a message: ``TypeError: ...`` with the last line of its text (where
    a nested validation error states the cause), cut to ``limit`` characters: a library's message may quote the
    user's value whole (transformers' ``layer_types`` check lists every entry). Never raises."""
    try:
        lines = [line for line in str(exc).splitlines() if line.strip()]
        text = " ".join(lines[-1].split()) if lines else ""
    except Exception:  # noqa: BLE001 -- a message must never fail on odd input
        text = ""
    if len(text) > limit:
        text = f"{text[:limit]}… ({len(text):,} characters)"
    text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def echo(value: object, limit: int = ECHO_CHARS) -> str:
    """Any value of user data for a message: a string as :func:`quote` writes it; anything else (a number, a
    list, an object) as its ``repr``, cut to ``limit`` characters with ``…`` and its length said.

    Example: ``echo(5)`` is ``5``; ``echo("llama")`` is ``'llama'``; ``echo([1] * 10_000)`` keeps the first 60
    characters of ``[1, 1, 1, ...`` and adds ``… (30,000 characters)``. Never raises.
    """
    if isinstance(value, str):
        return quote(value, limit)
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 -- a message must never fail on odd input
        text = object.__repr__(value)
    if len(text) <= limit:
        return text
    shown = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text[:limit])
    return f"{shown}… ({len(text):,} characters)"


def plain_or_quoted(text: str, limit: int = ECHO_CHARS) -> str:
    """A name the user chose (a file's, a header key's) for a message: as it is when it is at most ``limit``
    characters of printable text, else as :func:`quote` writes it (quoted, cut, its length said).

    Example: ``plain_or_quoted("model.gguf")`` is ``model.gguf``; a 205-character file name keeps its first 60
    characters and adds ``(205 characters)``. Never raises.
    """
    if isinstance(text, str) and len(text) <= limit and text.isprintable():
        return text
    return quote(text, limit)


def count_noun(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` with thousands separators and its noun in the right number: ``"1 GPU"``, ``"2,475 replicas"``.

    Args:
        count: How many [items].
        singular: The noun for one; ``plural`` defaults to it plus ``s`` (``"node"`` -> ``"nodes"``).
    """
    return f"{count:,} {singular if count == 1 else (plural or singular + 's')}"
