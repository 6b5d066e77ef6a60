"""Numbers to text: the one place where bytes become GiB or GB.

Every size on screen goes through :func:`format_bytes`, so a label always
says which unit it is: ``GiB`` = 2**30 bytes (what PyTorch and the engines
print), ``GB`` = 10**9 bytes (vendor labels), ``B`` for exact byte counts.
Charts need plain floats for their axes; :func:`bytes_to_gib` is the only
conversion for that. Pages never divide or multiply: they call these helpers.

Sources: DOMAIN.md ("GB = 10^9 bytes, GiB = 2^30 bytes, never mixed");
:mod:`planner.units` for the constants.
"""

from __future__ import annotations

import math
from typing import Literal

from planner.units import GB, GiB, KiB, MiB

ByteUnit = Literal["GiB", "GB", "B", "auto"]

_DIVISORS: dict[str, int] = {"GiB": GiB, "MiB": MiB, "KiB": KiB, "GB": GB}


def binary_unit(num_bytes: int) -> str:
    """The binary unit that reads best for ``num_bytes``: ``B`` under 1 KiB, ``KiB`` under
    1 MiB, ``MiB`` under 1 GiB, else ``GiB`` (by magnitude; negative sizes by their absolute value)."""
    size = abs(num_bytes)
    return "B" if size < KiB else "KiB" if size < MiB else "MiB" if size < GiB else "GiB"


def format_bytes(num_bytes: int, unit: ByteUnit = "GiB", digits: int = 2) -> str:
    """A byte count as labelled text.

    Args:
        num_bytes: Size [bytes]; may be negative (an over-committed budget).
        unit: ``GiB`` (2**30), ``GB`` (10**9), ``B`` (exact, thousands separated) or ``auto``:
            KiB / MiB / GiB by magnitude (:func:`binary_unit`), for sizes that range from a
            block to a card (KV per token, per block, per sequence).
        digits: Decimals for GiB and GB.

    Returns:
        Text such as ``"12.55 GiB"``, ``"13.48 GB"``, ``"131,072 B"`` or (auto) ``"128.00 KiB"``.

    Raises:
        ValueError: an unknown unit.
    """
    if unit == "auto":
        unit = binary_unit(num_bytes)  # type: ignore[assignment]
    if unit == "B":
        return f"{num_bytes:,} B"
    if unit not in _DIVISORS:
        raise ValueError(f"unknown unit {unit!r}; use GiB, GB, B or auto")
    return f"{num_bytes / _DIVISORS[unit]:,.{digits}f} {unit}"


def format_bytes_exact(num_bytes: int, unit: ByteUnit = "GiB", digits: int = 2) -> str:
    """Rounded and exact: ``"12.55 GiB (13,476,831,232 B)"``, for hover text and help."""
    return f"{format_bytes(num_bytes, unit, digits)} ({format_bytes(num_bytes, 'B')})"


def bytes_in(num_bytes: int, unit: str) -> float:
    """A byte count as a float in ``unit`` (``B``, ``KiB``, ``MiB``, ``GiB`` or ``GB``), for chart axes
    whose unit follows the data's magnitude (:func:`binary_unit`).

    Raises:
        ValueError: an unknown unit.
    """
    if unit == "B":
        return float(num_bytes)
    if unit not in _DIVISORS:
        raise ValueError(f"unknown unit {unit!r}; use B, KiB, MiB, GiB or GB")
    return num_bytes / _DIVISORS[unit]


def bytes_to_gib(num_bytes: int) -> float:
    """A byte count as a float number of GiB, for chart axes and numeric table columns."""
    return num_bytes / GiB


def gib_to_bytes(gib: float) -> int:
    """A user-entered size in GiB as whole bytes (truncated, as the CLI's ``--overhead-gib``).

    Raises:
        ValueError: a negative or non-finite value.
    """
    if not math.isfinite(gib) or gib < 0:
        raise ValueError(f"a size must be a finite number >= 0 GiB, got {gib}")
    return int(gib * GiB)


def format_int(value: int) -> str:
    """A count with thousands separators: ``"8,192"``."""
    return f"{value:,}"


def format_tokens(num_tokens: int) -> str:
    """A token count: ``"8,192 tokens"`` (``"1 token"``)."""
    return f"{num_tokens:,} token" + ("" if num_tokens == 1 else "s")


def format_params(num_params: int, digits: int = 2) -> str:
    """A parameter count in billions (10**9) or millions (10**6): ``"8.03 B"``, ``"494.03 M"``."""
    if num_params >= 10**12:
        return f"{num_params / 10**12:,.{digits}f} T"
    if num_params >= 10**9:
        return f"{num_params / 10**9:,.{digits}f} B"
    return f"{num_params / 10**6:,.{digits}f} M"


def format_fraction(value: float) -> str:
    """A fraction such as ``gpu_memory_utilization`` as the user typed it: ``"0.9"``."""
    return f"{value:g}"


def format_limited_by(limited_by: str) -> str:
    """Plain words for ``Plan.max_context_len_limited_by``."""
    return {
        "memory": "limited by GPU memory",
        "model": "limited by the model's max_position_embeddings",
        "search limit": "search limit reached",
        "none": "no layer grows with context",
        "tensor_parallel": "num_gpus cannot split the model's attention heads",
    }.get(limited_by, limited_by)


def format_context(num_tokens: int, model_limit: int | None) -> str:
    """A context length that may exceed the model's ``max_position_embeddings``, saying so:
    ``"8,192"``, or ``"526,192 (beyond the model's 8,192)"`` when memory alone would allow more
    than the model was built for."""
    if model_limit and num_tokens > model_limit:
        return f"{num_tokens:,} (beyond the model's {model_limit:,})"
    return f"{num_tokens:,}"


def format_tokens_short(num_tokens: int) -> str:
    """A token count for axis ticks, K = 1,024: ``"512"``, ``"8K"``, ``"1M"`` (exact multiples only)."""
    for size, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if num_tokens >= size and num_tokens % size == 0:
            return f"{num_tokens // size:,}{suffix}"
    return f"{num_tokens:,}"


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for messages that quote user input."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_command(command: str) -> str:
    """A shell command one flag per line, continued with `` \\``, for a code block that is read and copied.

    Flags (tokens starting with ``-``) start a line with the values that follow them; what comes before
    the first flag (the program, the model; ``python -m module``) stays on the first line. Each line is re-quoted with
    :func:`shlex.join`, so the text pastes into bash as one command. A command ``shlex`` cannot split
    (an unclosed quote) is returned as it is.
    Example: ``vllm serve m --tensor-parallel-size 2 --max-model-len 8192`` ->
    ``vllm serve m \\`` / ``  --tensor-parallel-size 2 \\`` / ``  --max-model-len 8192``.
    """
    import shlex

    try:
        tokens = shlex.split(command)
    except ValueError:
        return command
    lines: list[list[str]] = [[]]
    for i, token in enumerate(tokens):
        module = i > 0 and token == "-m" and tokens[i - 1].startswith("python")  # python -m pkg.module
        if token.startswith("-") and lines[-1] and not _is_number(token) and not module:
            lines.append([])
        lines[-1].append(token)
    return " \\\n  ".join(shlex.join(line) for line in lines if line)


def _is_number(token: str) -> bool:
    """``-1``, ``-0.5``: a negative value after a flag, not a flag of its own."""
    return token.lstrip("-").replace(".", "", 1).isdigit()
