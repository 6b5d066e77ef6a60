"""How sure the engine view's available-KV figure is, as text: the figure with its expected error beside it.

The numbers are :mod:`planner.engines.expected_error`'s (measured by ``scripts/bench_engine_cases.py``);
this module only formats them, for the Engine page's metric and the Home page's engine panel.
"""

from __future__ import annotations

from planner.engines.expected_error import expected_error_bytes, group_error
from planner.engines.types import EnginePlan
from ui.format import format_budget, format_bytes, format_bytes_exact

AVAILABLE_KV_LABEL = "Available KV memory per GPU"
"""The Engine page's metric whose expected error (:func:`available_kv_delta`) goes on the line under its value."""


NOT_MEASURED = "expected error not measured"
"""What stands where the +- would be for a group ``scripts/bench_engine_cases.py`` never measured
(:func:`planner.engines.expected_error.group_error`, design note 3): no borrowed figure."""


def available_kv_text(plan: EnginePlan) -> str:
    """The available-KV figure with its expected error beside it: ``"11.57 GiB ± 0.07 GiB"`` for a cold start
    (:func:`planner.engines.expected_error.expected_error_bytes`), the figure alone for a printed one,
    ``"12.06 GiB (expected error not measured)"`` for a group the bench never measured."""
    error = expected_error_bytes(plan)
    if plan.available_kv_cache_bytes < 0:  # a refusal: "none (35.50 GiB short ± 0.42 GiB)", never "-35.50 GiB"
        short = f"{format_bytes(-plan.available_kv_cache_bytes)} short"
        if error is None:
            return f"none ({short}; {NOT_MEASURED})"
        return f"none ({short} ± {format_bytes(error)})" if error else f"none ({short})"
    text = format_bytes(plan.available_kv_cache_bytes)
    if error is None:
        return f"{text} ({NOT_MEASURED})"
    return f"{text} ± {format_bytes(error)}" if error else text


def available_kv_value(plan: EnginePlan) -> str:
    """The available-KV metric's value: the figure, or ``"none"`` when the engine's terms exceed its share of
    the card (vLLM's arithmetic goes negative there and it refuses to start; a tile reading "-35.50 GiB" looked
    like a figure). The shortfall goes on the line under it (:func:`available_kv_delta`)."""
    return format_budget(plan.available_kv_cache_bytes)


def available_kv_delta(plan: EnginePlan) -> str | None:
    """The expected error alone, ``"± 0.07 GiB expected error"``, for the grey line under the Engine page's
    available-KV metric (the tile is too narrow for the figure and its error on one line at 1,280 px);
    ``"35.50 GiB short (± 0.42)"`` under a "none"; ``"expected error not measured"`` for a group the bench never
    measured; None for a printed figure that is not short."""
    error = expected_error_bytes(plan)
    if plan.available_kv_cache_bytes < 0:  # "none" above: the shortfall here, the error beside it
        short = f"{format_bytes(-plan.available_kv_cache_bytes)} short"
        if error is None:
            return f"{short} (error not measured)"
        return f"{short} (± {format_bytes(error).removesuffix(' GiB')})" if error else short
    if error is None:
        return NOT_MEASURED
    return f"± {format_bytes(error)} expected error" if error else None


def available_kv_help(plan: EnginePlan, source: str) -> str:
    """Hover text of the available-KV metric: exact bytes, where it comes from, and its expected error."""
    error, text = expected_error_bytes(plan), f"{format_bytes_exact(plan.available_kv_cache_bytes)}; {source}"
    if error is None:
        return f"{text}; expected error {group_error(plan.engine)[1]}, and no other group's figure is lent to it"
    return text + (f"; expected error ±{format_bytes_exact(error)} (the largest cold-start miss of "
                   f"{plan.engine_version} in scripts/bench_engine_cases.py, {group_error(plan.engine)[1]})"
                   if error else "")
