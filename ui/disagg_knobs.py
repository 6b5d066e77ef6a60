"""The engine knobs of the Disaggregation page, what it leaves out of a shared link, and its CLI line.

A link from Home, Allocation, Find or the Engine page carries the engine's memory knobs; ``python -m planner
disagg`` takes them as flags (planner/cli/scale.py builds both pools from ``planner.cli.engine.engine_request``),
so the page applies each one to both pools as the CLI does: the shared sidebar's ``gpu_memory_utilization`` and
``block_size`` (passed when the link or the sidebar sets them, else the engine's default, as Home's engine view
does: :func:`ui.engine_home.home_request`), and the Engine page's scheduler and CUDA-graph knobs under the same
URL keys. What no pool can take is named in the page's "Left out" line (:func:`left_out`). Its
:func:`cli_command` is the ``python -m planner disagg`` line of the page's inputs, so "same figures as the CLI"
can be checked by running it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from planner.budget import PlanRequest
from planner.engines.profiles import ENGINE_PROFILES, USAGE_CONTEXTS
from planner.plan_types import ENGINE_KNOB_FIELDS
from ui import engine_graphs, inputs
from ui.engine import ENGINE_FIELDS
from ui.format import gib_to_bytes, shorten

NUMBERS = ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_in_use_gib")
"""The Engine page's numbers each pool takes (``--max-num-seqs``, ``--max-num-batched-tokens``,
``--gpu-memory-in-use-gib``)."""

SWITCHES = {"enforce_eager": "Enforce eager (no CUDA graphs)", "enable_prefix_caching": "Prefix caching",
            "warm_compile_cache": "Compile cache warm (a relaunch)", "use_deep_gemm": "DeepGEMM MoE kernels"}
"""The Engine page's switches each pool takes, with its labels (their help is on the Engine page)."""

SHARED = ("gpu_memory_utilization", "block_size")
"""The shared sidebar's engine inputs (Home, Concurrency, Allocation, Find)."""

NOT_APPLIED = {
    "max_model_len": "each pool's max_model_len is its prompt + output length",
    "available_kv_memory_gib": "a startup log's figure for one launch; each pool picks its own tensor-parallel size",
    "pipeline_parallel_size": "the pools split by tensor and data parallel only",
    "num_nodes": "the pools split by tensor and data parallel only",
    "overhead_gib": "Home's overhead override; each pool prices its engine's own profile pass, as the Engine page does",
}
"""Carried keys no pool can take, and why (named in the "Left out" line when set to other than the default)."""

_DEFAULTS = {"pipeline_parallel_size": "1", "num_nodes": "1"}
"""Values of :data:`NOT_APPLIED` keys that change nothing (not named)."""

HOME_NOT_APPLIED = {
    "max_model_len": "Home's engine panel plans the sidebar's context length, as its budget and fixes do",
    "available_kv_memory_gib": "a startup log's figure, which the Engine page sets in place of the overhead model",
}
"""Carried Engine-page keys Home's engine panel does not take, and why (:func:`left_out`)."""

_DEFAULT_KNOBS = {"usage_context": "serve", "enforce_eager": False, "warm_compile_cache": False}
"""The defaults of the vLLM-only knobs :func:`knob_inputs` shows (the CUDA-graph ones' is None)."""

GRAPH_KEYS = engine_graphs.GRAPH_KEYS
"""vLLM's CUDA-graph knobs (:mod:`ui.engine_graphs`): no other engine takes them."""


def link_values(where: str = "Home's engine panel", engine: str | None = None) -> tuple[dict, list[str]]:
    """:func:`knob_inputs`' values read from the link alone, for a page without those widgets (Home): a switch is
    on for ``true`` (Streamlit's reading of a bound toggle), a number in its Engine-page range, else the engine's
    default; and one message per bad value, which ``where`` (the part of the page that reads them) leaves out. Under
    an ``engine`` that is not vLLM (None: not known here) a bad value of a vLLM-only knob is named as ignored instead
    (:func:`_ignored`): that engine takes no such knob, so there is nothing to set (QA: Find under SGLang said of
    ``cudagraph_mode=BOGUS`` "set it on the Engine page")."""
    values, problems = _link_values(where)
    if engine is None or ENGINE_PROFILES[engine].family == "vllm":
        return values, problems
    return values, [_ignored(p, engine) for p in problems]


_VLLM_ONLY_KEYS = ("usage_context", "enforce_eager", "warm_compile_cache", *engine_graphs.GRAPH_KEYS)
"""The vLLM-only knobs :func:`link_values` reads (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`)."""


def _ignored(problem: str, engine: str) -> str:
    """``problem`` (one of :func:`_link_values`' messages), or, where it is about a vLLM-only knob, the sentence
    that ``engine`` ignores that knob."""
    key = next((k for k in _VLLM_ONLY_KEYS if problem.startswith(f"Link parameter `{k}=")), None)
    if key is None:
        return problem
    return f"{problem[:problem.index('` ') + 1]} is a vLLM knob; {engine} has no such knob and ignores it."


def _link_values(where: str) -> tuple[dict, list[str]]:
    """:func:`link_values` under vLLM."""
    params, problems = st.query_params, []
    values: dict = {"usage_context": params.get("usage_context") or "serve"}
    if values["usage_context"] not in USAGE_CONTEXTS:
        problems.append(f"Link parameter `usage_context={shorten(values['usage_context'])}` is not one of "
                        f"{', '.join(USAGE_CONTEXTS)}, so {where} plans `serve`: set the start mode on the Engine "
                        "page.")
        values["usage_context"] = "serve"
    wrong = {key: what for key, what, _ in inputs.link_number_problems(NUMBERS, ENGINE_FIELDS)}
    problems += [f"{what}, so {where} leaves it out: set it on the Engine page." for what in wrong.values()]
    for key in NUMBERS:
        raw = params.get(key)
        kind = float if ENGINE_FIELDS[key].is_float else int
        values[key] = None if key in wrong or not raw else kind(float(raw))
    values |= {key: (params.get(key) or "").lower() == "true" for key in SWITCHES}
    problems += [f"Link parameter `{key}={shorten(raw)}` is neither true nor false, so {where} leaves it off: set it "
                 "on the Engine page." for key in SWITCHES if (raw := params.get(key) or "").lower() not in
                 ("", "true", "false")]
    for key in GRAPH_KEYS:
        raw = params.get(key) or ""
        values[key] = engine_graphs.graph_value(key, raw)
        if raw and values[key] is None:
            problems.append(engine_graphs.graph_problem(key, raw, f"{where} plans the version's default"))
    return values, problems


def knob_inputs(engine: str) -> tuple[dict, list[str]]:
    """The "Engine knobs (both pools)" block and the CUDA-graph block (vLLM), URL-bound under the Engine page's
    keys, and the link problems of their values.

    Returns:
        ``(values by URL key, problems)``; an empty number is the engine's default.
    """
    problems = inputs.check_link({"usage_context": (USAGE_CONTEXTS, None, "start mode", "serve")}, {}, NUMBERS)
    carried = any(k in st.query_params for k in (*NUMBERS, *SWITCHES, "usage_context"))
    values: dict = {}
    with st.sidebar.expander("Engine knobs (both pools)", expanded=carried):
        values["usage_context"] = st.selectbox(
            "Start mode (usage context)", USAGE_CONTEXTS, key="usage_context", bind="query-params",
            help="`--usage-context`: `serve` (`vllm serve`) or `llm` (the offline class); see the Engine page.")
        for key in NUMBERS:
            field = ENGINE_FIELDS[key]
            kind = float if field.is_float else int
            values[key] = st.number_input(field.label, min_value=kind(field.min_value),
                                          max_value=kind(field.max_value), value=None, step=kind(field.step),
                                          format="%.2f" if field.is_float else None, key=key, help=field.help,
                                          bind="query-params")
        for key, label in SWITCHES.items():
            values[key] = st.toggle(label, key=key, bind="query-params",
                                    help=f"`--{key.replace('_', '-')}`, as on the Engine page.")
    graphs, more = engine_graphs.cudagraph_inputs(engine)
    return values | graphs, problems + more


def vllm_only(values: dict, engine: str) -> tuple[str, ...]:
    """The vLLM-only knobs of ``values`` (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`: ``usage_context``,
    ``enforce_eager``, ``warm_compile_cache``, ...) set off their default under an ``engine`` that does not take them
    (:meth:`planner.budget.PlanRequest.for_engine_family`); ``()`` under vLLM. ``disagg`` refuses these flags there
    (planner/cli/scale.py), so the pools leave them out (:func:`request_fields`) and :func:`not_taken` names them."""
    given = {key: values[key] for key in ENGINE_KNOB_FIELDS if values.get(key) not in (None, False)}
    return PlanRequest(context_len=1, **given).for_engine_family(ENGINE_PROFILES[engine].family)[1]


def not_taken(values: dict, engine: str) -> list[tuple[str, str]]:
    """``(what, why)`` for each of :func:`vllm_only`, for the page's "Left out" line."""
    return [(f"`{key}={shorten(st.query_params.get(key) or str(values[key]).lower()).replace('`', chr(39))}`",
             f"{engine} has no such knob, so the pools leave it out") for key in vllm_only(values, engine)]


def request_fields(form: inputs.PlanInputs, values: dict, engine: str) -> dict:
    """The :class:`planner.engines.types.EngineRequest` fields of the knobs, as ``engine_request`` of the CLI sets
    them from the flags: the shared utilization and block size only when the link or sidebar sets them; the vLLM-only
    knobs only under vLLM (:func:`vllm_only`)."""
    values = values | {key: _DEFAULT_KNOBS.get(key) for key in vllm_only(values, engine)}
    explicit = st.query_params
    fields = {"gpu_memory_utilization": form.gpu_memory_utilization if SHARED[0] in explicit else None,
              "block_size": form.block_size if SHARED[1] in explicit else None,
              "max_num_seqs": values["max_num_seqs"], "max_num_batched_tokens": values["max_num_batched_tokens"],
              "memory_in_use_bytes": gib_to_bytes(values["gpu_memory_in_use_gib"] or 0),
              "usage_context": values["usage_context"]}
    fields |= {key: bool(values[key]) for key in SWITCHES}
    if ENGINE_PROFILES[engine].family == "vllm":  # ui.engine_graphs.with_cudagraph_knobs
        fields |= {"cudagraph_mode": values.get("cudagraph_mode"),
                   "optimization_level": values.get("optimization_level")}
    return fields


def left_out(features: Sequence[tuple[str, str]] = (), not_applied: Mapping[str, str] = NOT_APPLIED,
             same: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """``features`` (the serving features the page leaves out: :func:`ui.feature_line.link_features_left_out`), then
    ``(what, why)`` for each carried key of ``not_applied`` (the pools': :data:`NOT_APPLIED`; Home's panel:
    :data:`HOME_NOT_APPLIED`), for :func:`ui.feature_line.users_line`; ``same``: key -> the link value that changes
    nothing on this page (Home: ``max_model_len`` = its context length), besides :data:`_DEFAULTS`."""
    out, same = list(features), _DEFAULTS | dict(same or {})
    for key, why in not_applied.items():
        raw = st.query_params.get(key, "")
        if raw and raw != same.get(key):
            out.append((f"`{key}={shorten(raw).replace('`', chr(39))}`", why))
    return out


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def _text(value) -> str:
    """A flag's value as the CLI reads it back: ``2000`` for 2000.0, ``0.85``; whole numbers in full."""
    return f"{value:.10g}" if isinstance(value, float) else str(value)


def cli_command(form: inputs.PlanInputs, engine: str, numbers: dict, switches: dict, link: str, values: dict,
                fields: dict, *, text_only: bool) -> str:
    """The ``python -m planner disagg`` line of the page's inputs (one line; :func:`ui.format.format_command`
    lays it out).

    Args:
        form: The shared sidebar.
        engine, numbers, switches, link: The page's :class:`ui.scale_view.DisaggInputs` fields.
        values, fields: :func:`knob_inputs`' values and :func:`request_fields` of them.
        text_only: The pools serve the language model only (``--language-model-only``).
    """
    from ui.cli_line import source_flags  # noqa: PLC0415 - reads the custom panel, which imports the sidebar

    model, gpu, comments = source_flags(form.model_id, form.gpu_id)
    parts = ["python -m planner disagg", model, gpu, f"--engine {engine}", f"--weight-dtype {form.weight_dtype}",
             f"--kv-cache-dtype {form.kv_cache_dtype}"]
    parts += [f"{_flag(k)} {_text(numbers[k])}" for k in ("users", "prompt_len", "output_len", "ttft_ms", "tpot_ms")]
    parts.append(f"--link {link}")
    parts += [f"{_flag(k)} {v}" for k, v in numbers.items()
              if k.endswith(("parallel_size", "dp_size", "ep_size")) and v is not None and (v != 1 or "tensor" in k)]
    parts += [_flag(k) for k, on in switches.items() if on]
    values = values | {key: _DEFAULT_KNOBS.get(key) for key in vllm_only(values, engine)}  # as the pools plan
    knobs = {k: fields[k] for k in SHARED} | {k: values[k] for k in (*NUMBERS, *SWITCHES)}
    knobs |= {k: fields.get(k) for k in ("cudagraph_mode", "optimization_level")}  # vLLM's only
    if values["usage_context"] != "serve":
        knobs["usage_context"] = values["usage_context"]
    for key, value in knobs.items():
        if value is None or value is False:
            continue
        parts.append(_flag(key) if value is True else f"{_flag(key)} {_text(value)}")
    if text_only:
        parts.append("--language-model-only")
    return "".join(f"{c}\n" for c in comments) + " ".join(parts)
