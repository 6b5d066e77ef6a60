"""The link's vLLM engine knobs in the budget: one link, one answer on Home and the budget pages.

The budget's overhead is a vLLM profile run (the link's vLLM version, else the newest), priced with the Engine view's
functions (:func:`planner.overhead.estimate_overhead`), so the knobs that change vLLM's non-KV memory change it too: the
scheduler sizes (``max_num_seqs``, ``max_num_batched_tokens``), the start mode (``usage_context``), the CUDA graphs
(``enforce_eager``, ``cudagraph_mode``, ``optimization_level``) and the compile cache (``warm_compile_cache``). A
link from the Engine page carries them under its URL keys; Home's engine panel read them (:mod:`ui.disagg_knobs`)
while its budget did not (QA: Kimi-K2.5 on 8 H200 at 65,536 tokens with ``max_num_seqs=64``: 50.38 GiB and 23 users
in the budget, 51.53 GiB and 24.03x in the panel and on the Engine page). :func:`with_link_knobs` sets them on a
page's :class:`planner.budget.PlanRequest`, as ``python -m planner plan`` sets them from its flags
(planner/cli/entry.py), and :func:`with_cli_flags` adds those flags to Home's command line. Under a link whose
engine is not vLLM the vLLM-only ones (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`) are left out, as that launch
has no such flag (:meth:`planner.budget.PlanRequest.for_engine_family`), and :func:`not_taken` names them.
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from planner.budget import PlanRequest
from planner.engines import DEFAULT_ENGINE
from planner.engines.profiles import ENGINE_PROFILES, resolve_engine_name
from ui import disagg_knobs, inputs
from ui.format import shorten

BUDGET_KNOBS = ("max_num_seqs", "max_num_batched_tokens", "usage_context", "enforce_eager", "cudagraph_mode",
                "optimization_level", "warm_compile_cache")
"""The :class:`planner.budget.PlanRequest` fields a link sets, under the Engine page's URL keys (the CLI flags with
underscores)."""

_DEFAULTS = {"usage_context": "serve"}
"""Knob values that are the budget's default (left off the command line)."""


def link_knobs(where: str, engine: str | None = None) -> tuple[dict, list[str]]:
    """The link's knobs (:func:`ui.disagg_knobs.link_values`) and one message per bad value, which ``where`` (the
    page's budget, in words) then plans at the engine's default (a vLLM-only one under another ``engine``: ignored)."""
    return disagg_knobs.link_values(where, engine)


def budget_fields(knobs: dict) -> dict:
    """The :class:`planner.budget.PlanRequest` fields of ``knobs`` (:func:`link_knobs`' values; a key it lacks is
    the default)."""
    fields = {key: knobs.get(key) for key in BUDGET_KNOBS}
    fields["usage_context"] = fields["usage_context"] or "serve"
    fields["enforce_eager"] = bool(fields["enforce_eager"])
    fields["warm_compile_cache"] = bool(fields["warm_compile_cache"])
    return fields


def link_engine() -> str:
    """The link's ``engine`` (an alias resolved), or the default engine where it names none or an unknown one (the
    engine selector says so on the pages that have one)."""
    try:
        return resolve_engine_name(st.query_params.get("engine") or DEFAULT_ENGINE)
    except ValueError:
        return DEFAULT_ENGINE


def _family(engine: str | None) -> str:
    return ENGINE_PROFILES[engine or link_engine()].family


def with_link_knobs(request: PlanRequest, knobs: dict | None = None, where: str = "this page's budget",
                    engine: str | None = None) -> PlanRequest:
    """``request`` with the link's engine knobs (``knobs``: :func:`link_knobs`' values, whose problems the caller
    shows: Home; None: read from the link here, each bad value shown as a link problem and left at the default).
    ``engine``: the page's engine (None: the link's, :func:`link_engine`); under one that is not vLLM the vLLM-only
    knobs are left out, which the page's "left out" line names (:func:`not_taken`); under a vLLM version the budget
    prices that version's overhead (:meth:`planner.budget.PlanRequest.for_engine`), as its Engine view does."""
    if knobs is None:
        knobs, problems = link_knobs(where)
        inputs.show_problems(problems)
    return replace(request, **budget_fields(knobs)).for_engine(engine or link_engine())[0]


def find_knobs(engine: str, where: str = "the setups' sizing") -> tuple[tuple[tuple[str, object], ...], list[str]]:
    """The link's knobs as :attr:`planner.traffic.find_types.FindRequest.engine_knobs` under the Find page's
    ``engine`` (its vLLM-only ones left out under another, as :func:`with_link_knobs` leaves them out of a budget),
    and one message per bad value, which ``where`` plans at the engine's default. QA:
    ``/Find_a_GPU_setup?enforce_eager=true`` ranked setups by the default CUDA-graph memory while Home and the
    Engine page applied the flag."""
    knobs, problems = link_knobs(where, engine)
    request = with_link_knobs(PlanRequest(context_len=1), knobs, engine=engine)
    sizes = tuple((name, getattr(request, name)) for name in ("max_num_seqs", "max_num_batched_tokens")
                  if getattr(request, name) is not None)
    return sizes + request.engine_knobs(), problems


def not_taken(knobs: dict | None = None, engine: str | None = None) -> list[tuple[str, str]]:
    """``(what, why)`` for each vLLM-only knob of ``knobs`` (:func:`link_knobs`' values; None: the link's) set off its
    default under an ``engine`` (None: the link's) that does not take it, which the budget leaves out
    (:func:`with_link_knobs`): for a page's "left out" line (:func:`ui.feature_line.users_line`)."""
    engine = engine or link_engine()
    knobs = link_knobs("this page's budget")[0] if knobs is None else knobs
    _, dropped = PlanRequest(context_len=1, **budget_fields(knobs)).for_engine_family(_family(engine))
    return [(f"`{key}={shorten(st.query_params.get(key) or '').replace('`', chr(39))}`",
             f"{engine} has no such knob, so the budget leaves it out") for key in dropped]


def ignored_text(engine: str) -> str:
    """The Engine page's line for the link's vLLM-only knobs (:func:`not_taken`) under an ``engine`` that does not
    take them, which its launch and figures leave out (the CLI refuses the flags there); "" where none is set."""
    names = [what for what, _ in not_taken(engine=engine)]
    if not names:
        return ""
    many = len(names) > 1
    return (f"{engine} ignores {', '.join(names)}: {'vLLM knobs' if many else 'a vLLM knob'} it has no flag for, "
            f"which its launch command and these figures leave out.")


def overhead_named(engine: str | None = None) -> str:
    """Whose overhead the budget prices under ``engine`` (None: the link's, :func:`link_engine`), for the captions:
    ``"the newest vLLM's (v0.29+)"``, or ``"vLLM v0.22-v0.28's (`vllm-v0.28`, the link's engine)"`` where the budget
    prices that vLLM version (:meth:`planner.budget.PlanRequest.for_engine`)."""
    priced = overhead_profile(engine)
    version = ENGINE_PROFILES[priced].version
    if priced == DEFAULT_ENGINE:
        return f"the newest vLLM's ({version.removeprefix('vLLM ').split(' ')[0]})"
    return f"{version}'s (`{priced}`, the link's engine)"


def overhead_profile(engine: str | None = None) -> str:
    """The vLLM profile id whose overhead the budget prices under ``engine`` (None: the link's)."""
    return PlanRequest(context_len=1).for_engine(engine or link_engine())[0].overhead_profile


def cli_flags(knobs: dict, engine: str = DEFAULT_ENGINE) -> list[str]:
    """``python -m planner plan``'s flags for the knobs set (``--max-num-seqs 64``, ``--enforce-eager``); the
    vLLM-only ones only under a vLLM ``engine`` (the CLI refuses them for another, planner/cli/engine.py); first
    ``--engine vllm-v0.28`` where the budget prices an older vLLM's overhead (:meth:`planner.budget.PlanRequest.
    for_engine`), which the CLI's budget then prices too."""
    priced, dropped = PlanRequest(context_len=1, **budget_fields(knobs)).for_engine(engine)
    flags = [] if priced.overhead_profile == DEFAULT_ENGINE else [f"--engine {priced.overhead_profile}"]
    for key, value in budget_fields(knobs).items():
        if value is None or value is False or value == _DEFAULTS.get(key) or key in dropped:
            continue
        flag = "--" + key.replace("_", "-")
        flags.append(flag if value is True else f"{flag} {value}")
    return flags


def with_cli_flags(command: str, knobs: dict, engine: str = DEFAULT_ENGINE) -> str:
    """Home's ``plan`` command line (:meth:`ui.inputs.PlanInputs.cli_command`) with the knobs' flags, on a line of
    their own as that command lays its parts out, so the copied command prints Home's budget."""
    flags = cli_flags(knobs, engine)
    return command + " \\\n  " + " ".join(flags) if flags else command
