"""The link's vLLM engine knobs in the budget: one link, one answer on Home and the budget pages.

The budget's overhead is the newest vLLM's profile run, priced with the Engine view's functions
(:func:`planner.overhead.estimate_overhead`), so the knobs that change vLLM's non-KV memory change it too: the
scheduler sizes (``max_num_seqs``, ``max_num_batched_tokens``), the start mode (``usage_context``), the CUDA graphs
(``enforce_eager``, ``cudagraph_mode``, ``optimization_level``) and the compile cache (``warm_compile_cache``). A
link from the Engine page carries them under its URL keys; Home's engine panel read them (:mod:`ui.disagg_knobs`)
while its budget did not (QA: Kimi-K2.5 on 8 H200 at 65,536 tokens with ``max_num_seqs=64``: 50.38 GiB and 23 users
in the budget, 51.53 GiB and 24.03x in the panel and on the Engine page). :func:`with_link_knobs` sets them on a
page's :class:`planner.budget.PlanRequest`, as ``python -m planner plan`` sets them from its flags
(planner/cli/entry.py), and :func:`with_cli_flags` adds those flags to Home's command line.
"""

from __future__ import annotations

from dataclasses import replace

from planner.budget import PlanRequest
from ui import disagg_knobs, inputs

BUDGET_KNOBS = ("max_num_seqs", "max_num_batched_tokens", "usage_context", "enforce_eager", "cudagraph_mode",
                "optimization_level", "warm_compile_cache")
"""The :class:`planner.budget.PlanRequest` fields a link sets, under the Engine page's URL keys (the CLI flags with
underscores)."""

_DEFAULTS = {"usage_context": "serve"}
"""Knob values that are the budget's default (left off the command line)."""


def link_knobs(where: str) -> tuple[dict, list[str]]:
    """The link's knobs (:func:`ui.disagg_knobs.link_values`) and one message per bad value, which ``where`` (the
    page's budget, in words) then plans at the engine's default."""
    return disagg_knobs.link_values(where)


def budget_fields(knobs: dict) -> dict:
    """The :class:`planner.budget.PlanRequest` fields of ``knobs`` (:func:`link_knobs`' values; a key it lacks is
    the default)."""
    fields = {key: knobs.get(key) for key in BUDGET_KNOBS}
    fields["usage_context"] = fields["usage_context"] or "serve"
    fields["enforce_eager"] = bool(fields["enforce_eager"])
    fields["warm_compile_cache"] = bool(fields["warm_compile_cache"])
    return fields


def with_link_knobs(request: PlanRequest, knobs: dict | None = None, where: str = "this page's budget") -> PlanRequest:
    """``request`` with the link's engine knobs (``knobs``: :func:`link_knobs`' values, whose problems the caller
    shows: Home; None: read from the link here, each bad value shown as a link problem and left at the default)."""
    if knobs is None:
        knobs, problems = link_knobs(where)
        inputs.show_problems(problems)
    return replace(request, **budget_fields(knobs))


def cli_flags(knobs: dict) -> list[str]:
    """``python -m planner plan``'s flags for the knobs set (``--max-num-seqs 64``, ``--enforce-eager``)."""
    flags = []
    for key, value in budget_fields(knobs).items():
        if value is None or value is False or value == _DEFAULTS.get(key):
            continue
        flag = "--" + key.replace("_", "-")
        flags.append(flag if value is True else f"{flag} {value}")
    return flags


def with_cli_flags(command: str, knobs: dict) -> str:
    """Home's ``plan`` command line (:meth:`ui.inputs.PlanInputs.cli_command`) with the knobs' flags, on a line of
    their own as that command lays its parts out, so the copied command prints Home's budget."""
    flags = cli_flags(knobs)
    return command + " \\\n  " + " ".join(flags) if flags else command
