"""argparse value types shared by every ``python -m planner`` subcommand.

Each raises ``argparse.ArgumentTypeError`` with a message that says what was
expected and what was given; the parser turns it into one line and exit code 2.
"""

from __future__ import annotations

import argparse
import math


def _number(text: str, kind: type, expected: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _number(text, float, "a number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


MAX_GIB = 1 << 20
"""Largest memory amount a ``--*-gib`` flag takes: 1,048,576 GiB (1 PiB), far above any accelerator."""


def gib_amount(text: str) -> float:
    """A memory amount in GiB: finite, >= 0 and at most :data:`MAX_GIB` (so bytes stay an exact int)."""
    value = non_negative_float(text)
    if value > MAX_GIB:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_GIB:,} GiB, got {text}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1], e.g. ``gpu_memory_utilization``."""
    value = _number(text, float, "a number in (0, 1]")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def share(text: str) -> float:
    """A number in [0, 1], e.g. the share of requests that hit a prefix."""
    value = _number(text, float, "a number in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def probability(text: str) -> float:
    """A number in [0, 1)."""
    value = share(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, got {value}")
    return value
