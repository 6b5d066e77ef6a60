"""A GPU the catalog lacks: :class:`CustomGPU` and :func:`custom_gpu`, which validates one.

The app's "Custom model & GPU" panel and the CLI's ``--gpu-memory-gib`` build it; the pages
read it like a catalog GPU.

Design notes (assumptions):
    1. A custom GPU's memory is the total the framework sees
       (``torch.cuda.mem_get_info()[1]``), the figure the catalog stores as
       ``framework_memory_bytes``; a card labelled "24 GB" reports about 23.5 GiB.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from planner.text import quote
from planner.units import GB, GiB, MiB

MAX_NAME_CHARS = 100
"""Longest custom model or GPU name [characters]."""


class CustomGPU(BaseModel):
    """A GPU the catalog lacks, with the attributes the pages read from a catalog GPU.

    Attributes:
        id: Always ``custom``.
        name: Display name.
        vendor: Always ``Custom``.
        memory_value: Memory as entered, e.g. ``24``.
        memory_unit: ``GiB``, ``GB`` or ``MiB``.
        framework_memory_bytes: ``memory_value x unit`` [bytes], read as the
            total the framework sees (design note 1).
        framework_memory_basis: Always ``entered``.
        framework_memory_source: How the figure was entered, for captions.
        bandwidth_gb_s: Peak memory bandwidth [GB/s, 10**9 B/s].
        price_usd_per_hour: On-demand price of one device [USD/h], optional.
        bf16_dense_tflops: Unknown for a custom card (None).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Literal["custom"] = "custom"
    name: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    vendor: Literal["Custom"] = "Custom"
    memory_value: str
    memory_unit: Literal["GiB", "GB", "MiB"]
    framework_memory_bytes: int = Field(gt=0, strict=True)
    framework_memory_basis: Literal["entered"] = "entered"
    framework_memory_source: str
    bandwidth_gb_s: float = Field(gt=0, allow_inf_nan=False)
    price_usd_per_hour: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    bf16_dense_tflops: None = None


MEMORY_UNITS: dict[str, int] = {"GiB": GiB, "GB": GB, "MiB": MiB}
"""Accepted custom-GPU memory units [bytes per unit]."""

MAX_GPU_MEMORY_BYTES = 64 * 1024 * GiB
"""Largest custom GPU memory accepted [bytes] (64 TiB): above any real device."""

MAX_GPU_MEMORY_EXPONENT = 15
"""Largest decimal exponent of an entered memory amount (10^15 MiB is past 64 TiB in every unit):
checked before ``amount x unit`` so that ``1e999999`` is refused instead of overflowing
:mod:`decimal`'s context (``decimal.Overflow``)."""

MAX_GPU_MEMORY_DIGITS = 40
"""Most significant digits accepted in an entered memory amount: more precision than any byte
count needs, and a bound on the cost of the multiplication."""


def custom_gpu(name: str, memory: str | float | int, unit: str, bandwidth_gb_s: float,
               price_usd_per_hour: float | None = None) -> CustomGPU:
    """Validate a custom GPU.

    Args:
        name: Display name (1-100 characters).
        memory: Framework-visible memory in ``unit`` (``24``, ``"23.5"``).
        unit: ``GiB``, ``GB`` or ``MiB``.
        bandwidth_gb_s: Peak memory bandwidth [GB/s].
        price_usd_per_hour: Price of one device [USD/h], or None.

    Returns:
        The validated :class:`CustomGPU`; memory is ``floor(memory x unit)`` [bytes].

    Raises:
        ValueError: naming the bad field and the accepted range.

    Example:
        ``custom_gpu("My card", 24, "GiB", 936).framework_memory_bytes == 25769803776``
    """
    if unit not in MEMORY_UNITS:
        raise ValueError(f"custom GPU memory unit {unit!r} is not one of {', '.join(MEMORY_UNITS)}")
    try:
        amount = Decimal(str(memory).strip())
    except InvalidOperation:
        raise ValueError(f"custom GPU memory {quote(memory)} is not a number; enter e.g. 24 ({unit})") from None
    if not amount.is_finite() or amount <= 0:
        raise ValueError(f"custom GPU memory must be a positive number of {unit}, got {quote(memory)}")
    if amount.adjusted() > MAX_GPU_MEMORY_EXPONENT or len(amount.as_tuple().digits) > MAX_GPU_MEMORY_DIGITS:
        raise ValueError(f"custom GPU memory {quote(memory)} {unit} is outside 1 byte .. 64 TiB; enter e.g. 80 (GiB)")
    memory_bytes = int(amount * MEMORY_UNITS[unit])
    if not 0 < memory_bytes <= MAX_GPU_MEMORY_BYTES:
        raise ValueError(f"custom GPU memory {memory} {unit} is outside 1 byte .. 64 TiB")
    for label, value in (("bandwidth_gb_s", bandwidth_gb_s), ("price_usd_per_hour", price_usd_per_hour)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not math.isfinite(value)):
            raise ValueError(f"custom GPU {label} must be a finite number, got {value!r}")
    gpu_name = str(name).strip() or "Custom GPU"
    if len(gpu_name) > MAX_NAME_CHARS or not gpu_name.isprintable():
        raise ValueError(f"custom GPU name must be printable (no control characters) and at most {MAX_NAME_CHARS} "
                         f"characters, got {quote(gpu_name)}")
    try:
        return CustomGPU(
            name=gpu_name, memory_value=format(amount.normalize(), "f"),
            memory_unit=unit,  # type: ignore[arg-type]
            framework_memory_bytes=memory_bytes,
            framework_memory_source=f"entered: {format(amount.normalize(), 'f')} {unit} framework-visible memory",
            bandwidth_gb_s=float(bandwidth_gb_s),
            price_usd_per_hour=None if price_usd_per_hour is None else float(price_usd_per_hour),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"custom GPU field '{field}': {first['msg']}") from None
