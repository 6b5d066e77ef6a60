"""The numeric sidebar inputs (:class:`NumberField`, :data:`NUMBER_FIELDS`) and the one check of a link's numbers.

:func:`link_number_problems` is what every page runs on the numbers a link carries before its widgets exist
(``ui.inputs.check_link``, ``ui.scale_view.check_numbers``, ``ui.traffic.carried_number_problems``): one rule
(:func:`number_problem`) and one wording. :mod:`ui.inputs` re-exports these names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import streamlit as st

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, MAX_CONTEXT_SEARCH_LIMIT
from planner.engines.block_sizes import VLLM_BLOCK_MULTIPLE, vllm_block_size_problem
from planner.engines.profiles import DEFAULT_ENGINE, ENGINE_PROFILES, resolve_engine_name
from ui.format import format_decimal, format_int, shorten


@dataclass(frozen=True, kw_only=True)
class NumberField:
    """A numeric sidebar input.

    Attributes:
        key: Widget key, URL query key and CLI flag (with underscores).
        label: Widget label.
        min_value: Smallest accepted value.
        max_value: Largest accepted value.
        default: Value when the link does not set it (None: empty).
        step: Step of the +/- buttons.
        is_float: Float input (else whole numbers).
        unit: Unit word for messages (``tokens``).
        help: Tooltip.
    """

    key: str
    label: str
    min_value: int | float
    max_value: int | float
    default: int | float | None
    step: int | float
    is_float: bool = False
    unit: str = ""
    help: str = ""


NUMBER_FIELDS: dict[str, NumberField] = {
    f.key: f
    for f in (
        NumberField(key="num_gpus", label="GPUs per replica", min_value=1, max_value=64,
                    default=1, step=1, unit="GPUs",
                    help="Weights and KV heads are split over this many GPUs (`--num-gpus`): tensor parallel, "
                         "times the pipeline stages where the page has them. Budgets are per GPU."),
        NumberField(key="context_len", label="Context length [tokens]", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=8192, step=1024, unit="tokens",
                    help="Prompt + generated tokens per sequence, sized for the end of generation (`--context-len`)."),
        NumberField(key="batch_size", label="Concurrent sequences (batch)", min_value=1, max_value=65536,
                    default=1, step=1, unit="sequences",
                    help="Sequences held in the KV cache at once (`--batch-size`)."),
        NumberField(key="gpu_memory_utilization", label="GPU memory utilization", min_value=0.01, max_value=1.0,
                    default=DEFAULT_GPU_MEMORY_UTILIZATION, step=0.01, is_float=True,
                    help="Fraction of the framework-visible memory the engine may use (vLLM default 0.9; "
                         "`--gpu-memory-utilization`)."),
        NumberField(key="block_size", label="KV block size [tokens]", min_value=1, max_value=1024,
                    default=DEFAULT_BLOCK_SIZE, step=1, unit="tokens",
                    help="PagedAttention page size; each sequence is rounded up to whole blocks (`--block-size`)."),
        NumberField(key="overhead_gib", label="Overhead override [GiB per GPU]", min_value=0.0, max_value=1024.0,
                    default=None, step=0.25, is_float=True, unit="GiB",
                    help="Activations + runtime memory per GPU. Leave empty to use the planner's estimate "
                         "(`--overhead-gib`)."),
    )
}
"""Numeric inputs by key; bounds are what the planner accepts."""


def number_problem(field: NumberField, raw: str) -> str | None:
    """What is wrong with ``raw`` for ``field`` (``"is not a whole number"``), or None when it is valid."""
    if raw.strip() == "":
        return None if field.default is None else "is empty"
    try:
        value = float(raw) if field.is_float else int(raw)
    except ValueError:
        return "is not a number" if field.is_float else "is not a whole number"
    if field.is_float and not math.isfinite(value):
        return "is not a finite number"
    if value < field.min_value:
        return "is too small"
    if value > field.max_value:
        return "is too large"
    return None


def _show(field: NumberField, value: int | float) -> str:
    """A bound or default as the user would type it: ``"0.01"``, ``"1,000,000"`` (never ``"1e+06"``)."""
    return format_decimal(value) if field.is_float else format_int(int(value))


EMPTY_MEANS = re.compile(r"\(empty = ([^)]+)\)")
"""What an empty field stands for, as its label says it: ``"Images per request (empty = none)"`` -> ``none``."""


def _number_fix(field: NumberField, shown_value: tuple[object, str] | None = None) -> str:
    """``"Showing the default 8,192 instead; enter a whole number from 1 to ... in the sidebar."``

    ``shown_value``: ``(value, whence)`` where the page's widget shows another value than the field's default, a
    page default or a value a link carried (``(8, "the link's batch_size")``: "Showing the link's batch_size 8
    instead"). A field without a default is left empty, and the message says what that means where the label does
    (``"Leaving it empty instead, which means none"``), else that the planner estimates it (the overhead)."""
    default, whence = shown_value if shown_value is not None else (field.default, "the default")
    if default is not None:
        shown = f"Showing {whence} {_show(field, default)} instead"
    elif means := EMPTY_MEANS.search(field.label):
        shown = f"Leaving it empty instead, which means {means.group(1)}"
    else:
        shown = "Showing the planner's estimate instead"
    kind = "a number" if field.is_float else "a whole number"
    unit = f" {field.unit}" if field.unit else ""
    return (f"{shown}; enter {kind} from {_show(field, field.min_value)} to "
            f"{_show(field, field.max_value)}{unit} in \"{field.label}\" in the sidebar.")


def link_number_problems(keys: Sequence[str], fields: Mapping[str, NumberField] = NUMBER_FIELDS,
                         shown: Mapping[str, tuple[object, str]] | None = None) -> list[tuple[str, str, str]]:
    """The link's values of ``keys`` that are not valid numbers for their field, before the widgets exist.

    Args:
        keys: Keys of ``fields`` this page reads from the link.
        fields: key -> :class:`NumberField` (:data:`NUMBER_FIELDS`, or a page's own table such as
            ``ui.scale_view.DISAGG_FIELDS``).
        shown: key -> ``(value, whence)`` where the page shows another value than the field's default
            (:func:`_number_fix`).

    Returns:
        ``(key, what is wrong, how to fix it in the sidebar)`` per bad value (the last one, as Streamlit reads a
        repeated key), e.g. ``("context_len", "Link parameter `context_len=0` is too small", "Showing the default
        8,192 instead; enter a whole number from 1 to ... in the sidebar.")``; the caller joins them into its
        message and drops the key where its widget would otherwise take the value.
    """
    out = []
    for key in keys:
        values = st.query_params.get_all(key)
        problem = number_problem(fields[key], values[-1]) if values else None
        if problem:
            out.append((key, f"Link parameter `{key}={shorten(values[-1])}` {problem}",
                        _number_fix(fields[key], (shown or {}).get(key))))
        elif values and (refused := engine_rule_problem(key, values[-1])):
            out.append((key, f"Link parameter `{key}={shorten(values[-1])}`: {refused}",
                        _number_fix(fields[key], (shown or {}).get(key)).split("; enter")[0]
                        + f"; enter a multiple of {VLLM_BLOCK_MULTIPLE} in \"{fields[key].label}\" in the sidebar."))
    return out


def _engine_id() -> str:
    """The engine this run plans: the link's ``engine`` (or the widget's), else the default vLLM."""
    raw = st.query_params.get("engine") or st.session_state.get("engine") or DEFAULT_ENGINE
    try:
        return resolve_engine_name(str(raw))
    except ValueError:  # an unknown engine: the link check names it; the pages then plan the default vLLM
        return DEFAULT_ENGINE


def _engine_family() -> str:
    """The family of :func:`_engine_id`."""
    return ENGINE_PROFILES[_engine_id()].family


def engine_rule_problem(key: str, raw: object) -> str | None:
    """Why the engine this run plans refuses a valid number ``raw`` of ``key``, or None: a ``block_size`` vLLM has
    no attention kernel for (:func:`planner.engines.block_sizes.vllm_block_size_problem`; QA: ``block_size=7``
    planned "vllm starts"). Other engines' block sizes (SGLang's page size 1) are theirs."""
    if key != "block_size" or raw is None or _engine_family() != "vllm":
        return None
    try:
        return vllm_block_size_problem(int(str(raw).strip()), "block_size", profile_id=_engine_id())
    except ValueError:  # not a whole number: number_problem says so
        return None


def typed_rule_problems(values: dict) -> list[str]:
    """The typed values of ``values`` (key -> a sidebar number) the engine refuses (:func:`engine_rule_problem`),
    each reset to its field's default in ``values``, with one message each saying so and what to enter."""
    out = []
    for key, value in values.items():
        if key in NUMBER_FIELDS and (refused := engine_rule_problem(key, value)):
            field = NUMBER_FIELDS[key]
            values[key] = field.default
            out.append(f"{refused}. Planning the default {_show(field, field.default)} instead; enter a multiple of "
                       f"{VLLM_BLOCK_MULTIPLE} in \"{field.label}\" in the sidebar.")
    return out


DEFAULT_USERS = 256
"""Concurrent users of every page that reads the URL key ``users`` (Find a GPU setup, Allocation, Disaggregation)
where the link has none: one default, so one link shows one user count on each (QA, stop 46: Find's field said 200,
Disaggregation's 256, for the same link)."""


LINK_FALLBACKS = {"context_len": "max_model_len"}
"""Sidebar number -> the Engine page's key that gives its value where a link lacks it: a link from the Engine page
with ``max_model_len=65536`` and no ``context_len`` plans 65,536 tokens on every page (QA: Kimi-K2.5 on 8 H200 showed
24.03x at 65,536 on the Engine page, and Home, one click on, planned its default 8,192 and named the length left out
only inside its folded engine panel). The engine serves ``max_model_len`` per request, the budget's context length
(``--context-len``)."""


def link_default(key: str) -> int | None:
    """The default of the sidebar number ``key`` that a link gives under another name (:data:`LINK_FALLBACKS`):
    that key's value where the link carries it, not ``key`` itself, and it is a whole number in ``key``'s range;
    else None (the field's own default; a bad value is reported by the page that reads that key)."""
    other = LINK_FALLBACKS.get(key)
    if other is None or key in st.query_params or other not in st.query_params:
        return None
    raw, field = st.query_params.get_all(other)[-1].strip(), NUMBER_FIELDS[key]
    if not raw.isdigit() or not field.min_value <= int(raw) <= field.max_value:
        return None
    return int(raw)


def link_default_problem(key: str) -> str | None:
    """Why the link's value under :data:`LINK_FALLBACKS`' other name was not taken as ``key``'s default, or None
    (QA: ``/Concurrency?max_model_len=4096.5`` planned 8,192 tokens with no word, where the Engine page names it)."""
    other = LINK_FALLBACKS.get(key)
    if other is None or key in st.query_params or other not in st.query_params or link_default(key) is not None:
        return None
    raw, field = st.query_params.get_all(other)[-1], NUMBER_FIELDS[key]
    why = number_problem(field, raw) or "is not a whole number"
    return (f"Link parameter `{other}={shorten(raw)}` {why}, so this page plans its default context length "
            f"{_show(field, field.default)}: set the context length in the sidebar, or write a whole number of "
            f"tokens from {_show(field, field.min_value)} to {_show(field, field.max_value)} in the link.")
