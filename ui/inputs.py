"""Sidebar inputs shared by every page, bound to the URL.

Every input that defines a plan is a widget with a stable key equal to the
CLI flag with underscores (``--context-len`` -> ``context_len``) and
``bind="query-params"``, so the address bar is the plan: a copied link
opened on a fresh server rebuilds the same view.

Streamlit (1.55+) silently drops a bound query parameter it cannot use (an
unknown option, a number out of range, ``abc`` for a number) and shows the
widget default. :func:`check_link` therefore reads the raw parameters
*before* the widgets exist, says what was wrong and how to fix it, and maps
catalog aliases (``gpu=h100``) to canonical ids through ``st.session_state``.
Everything else in the link is kept.

The four pickers (``model``, ``models``, ``gpu``, ``gpus``) show names, not ids, so they are
*not* bound: a bound widget with ``format_func`` writes the shown label into the URL
(Streamlit 1.67 serializes a selectbox value through ``format_func``) and no longer accepts
the id in a link. :func:`picker` syncs them by hand, ids both ways: a link's ids seed the
widget, and a change writes the ids into ``st.query_params`` in the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, PlanRequest
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, KV_CACHE_DTYPES, WEIGHT_DTYPES
from planner.text import quote
from ui import catalog, picker_search
from ui.format import gib_to_bytes, md_message, md_text, shorten
from ui.number_fields import (  # noqa: F401 - re-exported
    NUMBER_FIELDS, NumberField, link_default, link_default_problem, link_number_problems, number_problem,
    typed_rule_problems)

DTYPE_OPTIONS: dict[str, tuple[str, ...]] = {
    "weight_dtype": tuple(WEIGHT_DTYPES),
    "kv_cache_dtype": KV_CACHE_DTYPE_CHOICES,
}

MAX_MODELS = 6
"""Most models one chart compares."""

MAX_GPUS = 8
"""Most GPUs one chart compares."""

LISTED_KEY = "_link_values_listed"
"""Session key: multi-value link key -> how many values the link listed before :mod:`ui.link_guard` capped it
(set on every run), so :func:`check_link` states the link's own count once."""


@dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """What the sidebar holds after a run. Field names are the URL keys.

    Attributes:
        model_ids: Chosen model ids (one on single-model pages): catalog ids, or an alias the link
            named, kept as the catalog spells it (its numbers are its entry's).
        gpu_ids: Chosen canonical GPU ids (one on single-GPU pages).
        weight_dtype: Weight storage format.
        kv_cache_dtype: KV-cache format or ``auto``.
        num_gpus: Tensor-parallel size.
        context_len: Tokens per sequence.
        batch_size: Concurrent sequences.
        gpu_memory_utilization: Usable fraction of framework memory.
        block_size: KV page size [tokens].
        overhead_gib: Per-GPU overhead override [GiB], None for the estimate.
    """

    model_ids: tuple[str, ...]
    gpu_ids: tuple[str, ...]
    weight_dtype: str = "auto"
    kv_cache_dtype: str = "auto"
    num_gpus: int = 1
    context_len: int = 8192
    batch_size: int = 1
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    block_size: int = DEFAULT_BLOCK_SIZE
    overhead_gib: float | None = None

    @property
    def model_id(self) -> str:
        """The (first) chosen model."""
        return self.model_ids[0]

    @property
    def gpu_id(self) -> str:
        """The (first) chosen GPU."""
        return self.gpu_ids[0]

    def request(self, context_len: int | None = None) -> PlanRequest:
        """The planner request (overhead GiB converted as the CLI does)."""
        overhead = None if self.overhead_gib is None else gib_to_bytes(self.overhead_gib)
        return PlanRequest(
            context_len=self.context_len if context_len is None else context_len,
            batch_size=self.batch_size, weight_dtype=self.weight_dtype, kv_cache_dtype=self.kv_cache_dtype,
            num_gpus=self.num_gpus, gpu_memory_utilization=self.gpu_memory_utilization,
            block_size=self.block_size, overhead_bytes=overhead,
        )

    def cli_command(self, pipeline_parallel_size: int = 1, decode_context_parallel_size: int = 1,
                    num_nodes: int = 1, data_parallel_size: int = 1, expert_parallel: bool = False) -> str:
        """The equivalent ``python -m planner plan`` command line (first model and GPU; a custom model or GPU as
        the CLI takes it, with a comment line on the file to save: :mod:`ui.cli_line`); with the pipeline stages
        and the decode context parallel size Home's budget planned (:func:`planner.context_budget.
        plan_context_parallel`) and the link's nodes (over Ray), where they are more than one, so the copied command
        gives Home's figures (QA, stop 44: without ``--num-nodes 2`` it refused a launch Home said starts), and
        ``--enable-expert-parallel`` where Home's budget prices one rank's experts (:mod:`ui.home_scale`)."""
        from ui.cli_line import source_flags  # noqa: PLC0415 - reads the custom panel, which imports this module

        model, gpu, comments = source_flags(self.model_id, self.gpu_id)
        own_gpu = not gpu.startswith("--gpu ")  # --gpu-memory-gib and --gpu-name: a line of their own
        parts = [*([f"python -m planner plan {model}", gpu] if own_gpu else [f"python -m planner plan {model} {gpu}"]),
                 f"--num-gpus {self.num_gpus} --weight-dtype {self.weight_dtype}",
                 f"--kv-cache-dtype {self.kv_cache_dtype} --context-len {self.context_len}",
                 f"--batch-size {self.batch_size} --gpu-memory-utilization {self.gpu_memory_utilization:g}",
                 f"--block-size {self.block_size}"]
        if self.overhead_gib is not None:
            parts.append(f"--overhead-gib {self.overhead_gib:g}")
        if pipeline_parallel_size > 1:
            parts.append(f"--pipeline-parallel-size {pipeline_parallel_size}")
        if decode_context_parallel_size > 1:
            parts.append(f"--decode-context-parallel-size {decode_context_parallel_size}")
        if num_nodes > 1:
            parts.append(f"--num-nodes {num_nodes} --distributed-executor-backend ray")
        if data_parallel_size > 1:  # the link's replicas: the CLI splits the batch over them as Home does
            parts.append(f"--data-parallel-size {data_parallel_size}")
        if expert_parallel:
            parts.append("--enable-expert-parallel")
        return "".join(f"{c}\n" for c in comments) + " \\\n  ".join(parts)


# --------------------------------------------------------------------------
# Link validation (runs before the widgets exist)
# --------------------------------------------------------------------------
def _choice_problem(raw: str, options: Sequence[str], resolve: Callable[[str], str] | None,
                    what: str) -> tuple[str | None, str | None]:
    """(value kept or None, problem text or None) for one selection: the option itself, else what ``resolve``
    makes of it (a canonical id; for models the id or alias as the catalog spells it, an alias option)."""
    if raw in options:
        return raw, None
    if raw == catalog.CUSTOM_ID:  # the link's custom_model/custom_gpu could not be read, or it has none
        code = "custom_gpu" if what == "GPU" else "custom_model"
        if not st.query_params.get(code, ""):  # QA: "model=custom" alone pointed to a message that was not there
            return None, (f"the link names a custom {what} but carries no `{code}` code; open Custom model & GPU "
                          "in the sidebar to define one (its share code goes into the link)")
        return None, (f"the custom {what} this link names could not be read (the message about `{code}` says "
                      "why)")
    if resolve is not None:
        try:
            canonical = resolve(raw)
        except ValueError as exc:
            return None, str(exc)
        if canonical in options:
            return canonical, None
        return None, f"{quote(canonical)} is not offered here"
    return None, f"unknown {what} {quote(raw)}; choose one of {', '.join(options)}"


def rewrite_link(changes: Mapping[str, list[str] | None], multi_keys: Sequence[str]) -> None:
    """Make Streamlit seed widgets from our reading of the link, and show that reading in the URL.

    Streamlit seeds a bound widget from the URL values it saw at page load.
    It crashes on some (``?context_len=inf`` raises ``OverflowError`` inside
    its int ``number_input`` deserializer, Streamlit 1.67), quietly accepts
    values we report as invalid (``1e5``) and drops aliases (``gpu=h100``).
    So once :func:`check_link` has judged a parameter, the page-load values
    are rewritten: ``None`` drops the parameter (the widget shows its
    default), a list replaces it (canonical ids). This uses Streamlit's
    internal ``QueryParams`` (no public hook exists); if that API changes,
    the canonical values go through ``st.session_state`` instead and the
    messages are still shown. All the changes reach the browser in one URL
    update: Streamlit's frontend (1.67, ``handlePageInfoChanged``) turns each
    ``st.query_params`` update into a ``history.pushState``, so one update
    per key left one Back-button step per key.

    Args:
        changes: key -> new values, or None to drop the key.
        multi_keys: Keys whose widget holds a list (multiselect).
    """
    if not changes:
        return
    ctx = get_script_run_ctx()
    try:
        if ctx is None:
            raise AttributeError("no script run context")
        with ctx.session_state.query_params() as qp:
            for name in ("set_initial_query_params", "is_bound", "set_with_no_forward_msg",
                         "discard_param_no_forward_msg", "_send_query_param_msg"):
                getattr(qp, name)  # all or nothing: AttributeError before anything changed
            kept = []
            for key in st.query_params:
                values = changes[key] if key in changes else st.query_params.get_all(key)
                kept += [(key, v) for v in values or []]
            present = set(st.query_params)
            kept += [(key, v) for key, values in changes.items() if key not in present for v in values or []]
            qp.set_initial_query_params(urlencode(kept))
            changed = False
            for key, values in changes.items():
                if qp.is_bound(key):
                    continue
                if values is None:
                    changed |= qp.discard_param_no_forward_msg(key)
                else:
                    qp.set_with_no_forward_msg(key, list(values) if key in multi_keys else values[0])
                    changed = True
            if changed:  # ONE url update for all the changes: the browser adds no history entry per key
                qp._send_query_param_msg()  # noqa: SLF001 - what set_corrected_value sends, once
    except AttributeError:  # pragma: no cover - a Streamlit release without these internals
        for key, values in changes.items():
            if values and key not in st.session_state:
                st.session_state[key] = values if key in multi_keys else values[0]


def check_link(single: Mapping[str, tuple[Sequence[str], Callable[[str], str] | None, str, str]],
               multi: Mapping[str, tuple[Sequence[str], Callable[[str], str] | None, str, int]],
               numbers: Sequence[str], shown: Mapping[str, tuple[object, str]] | None = None) -> list[str]:
    """Validate this page's raw URL parameters before its widgets are created.

    Aliases that resolve to a catalog id are replaced by that id, so the widget
    and the URL show it; invalid values are dropped, so the widget shows its
    default. The rest of the link is kept (see :func:`rewrite_link`).

    Args:
        single: key -> (options, resolver or None, noun, default shown) for selectboxes.
        multi: key -> (options, resolver or None, noun, max items) for multiselects.
        numbers: Keys of :data:`NUMBER_FIELDS` on this page.
        shown: Number key -> ``(value, whence)`` where its widget shows another value than the field's default
            (:func:`ui.number_fields.link_number_problems`), so a bad link value's message names what is shown.

    Returns:
        One message per bad parameter, saying what is wrong and how to fix it.
    """
    params = st.query_params
    problems: list[str] = []
    changes: dict[str, list[str] | None] = {}
    for key, (options, resolve, noun, default) in single.items():
        values = params.get_all(key)
        if not values:
            continue
        raw = values[-1]
        canonical, problem = _choice_problem(raw, options, resolve, noun)
        if problem:
            problems.append(f"Link parameter `{key}={shorten(raw)}`: {problem}. Showing `{default}` instead; "
                            f"pick {'an' if noun[:1] in 'aeiou' else 'a'} {noun} in the sidebar.")
            changes[key] = None
        elif canonical != raw or len(values) > 1:
            changes[key] = [canonical]
    for key, (options, resolve, noun, max_items) in multi.items():
        values = [v for v in params.get_all(key) if v.strip()]
        if not values:
            continue
        kept: list[str] = []
        for raw in values:
            canonical, problem = _choice_problem(raw, options, resolve, noun)
            if problem:
                problems.append(f"Link parameter `{key}={shorten(raw)}`: {problem}. It was left out; "
                                f"add a {noun} in the sidebar.")
            elif canonical not in kept:
                kept.append(canonical)
        listed = max(st.session_state.get(LISTED_KEY, {}).get(key, 0), len(values))  # before the guard's cap
        if len(kept) > max_items:
            problems.append(f"Link parameter `{key}` lists {listed:,} {noun}s; at most {max_items} fit on one "
                            f"chart, so only the first {max_items} are shown. Remove some in the sidebar.")
            kept = kept[:max_items]
        elif listed > len(values):
            problems.append(f"Link parameter `{key}` lists {listed:,} values; this page reads the first "
                            f"{len(values)}. Pick the others in the sidebar.")
        if kept != values:
            changes[key] = kept or None
    for key, wrong, fix in link_number_problems(numbers, shown=shown):
        problems.append(f"{wrong}. {fix}")
        changes[key] = None
    if "num_gpus" in numbers and "tensor_parallel_size" not in numbers:
        _gpus_from_tensor_parallel(params, changes, problems)
    rewrite_link(changes, tuple(multi))
    return problems


def _gpus_from_tensor_parallel(params, changes: dict, problems: list[str]) -> None:
    """A link's ``tensor_parallel_size`` on a page whose layout knob is ``num_gpus``: the CLI's rule, GPUs per
    replica = tensor parallel x pipeline stages (``--num-gpus`` defaults to tp x pp, planner/cli), so a link
    written from ``plan --tensor-parallel-size 4`` plans 4 GPUs here too instead of dropping the key unsaid (QA).
    A ``num_gpus`` that disagrees is kept, and the message says which one the page used. The key leaves the URL
    once read, so a later change of 'GPUs per replica' is not contradicted by it."""
    tp_text = (params.get_all("tensor_parallel_size") or [""])[-1]
    pp_text = (params.get_all("pipeline_parallel_size") or ["1"])[-1]
    if not tp_text:
        return
    changes["tensor_parallel_size"] = None  # read once into num_gpus: the widget holds the layout from here on
    limit = NUMBER_FIELDS["num_gpus"].max_value
    try:
        gpus = int(tp_text) * int(pp_text)
    except ValueError:
        gpus = 0
    if not 1 <= gpus <= limit:
        problems.append(f"Link parameter `tensor_parallel_size={shorten(tp_text)}` (with `pipeline_parallel_size="
                        f"{shorten(pp_text)}`) is not a GPU count from 1 to {limit}, so it was ignored. Set "
                        "'GPUs per replica' in the sidebar.")
        return
    asked = "" if "num_gpus" in changes else (params.get_all("num_gpus") or [""])[-1]  # a dropped one: unasked
    if not asked:
        changes["num_gpus"] = [str(gpus)]
    elif asked != str(gpus):
        problems.append(f"Link parameters `num_gpus={shorten(asked)}` and `tensor_parallel_size={tp_text}` disagree "
                        f"(GPUs per replica = tensor parallel x pipeline stages = {gpus}); this page uses "
                        f"`num_gpus`. Set 'GPUs per replica' in the sidebar.")


# --------------------------------------------------------------------------
# Widgets
# --------------------------------------------------------------------------
def _number_widget(container, key: str, default: int | float | None = None):
    field = NUMBER_FIELDS[key]
    value = field.default if default is None else default
    if field.is_float:
        return container.number_input(
            field.label, min_value=float(field.min_value), max_value=float(field.max_value),
            value=None if value is None else float(value), step=float(field.step), format="%.2f",
            key=key, help=field.help, bind="query-params")
    return container.number_input(
        field.label, min_value=int(field.min_value), max_value=int(field.max_value), value=int(value),
        step=int(field.step), key=key, help=field.help, bind="query-params")


_SYNCED = "_picker_url_ids"
"""Session-state key: key -> (page, ids) each picker last wrote into the URL."""

PICKER_CSS = """<style>
section[data-testid="stSidebar"] [data-testid="stMultiSelect"] div[role="group"] {max-height: none;}
section[data-testid="stSidebar"] [data-testid="stMultiSelectTagsContainer"] {max-height: none; overflow: visible;}
section[data-testid="stSidebar"] [data-testid="stMultiSelectTagsContainer"] [data-tag] {height: auto; max-width: 100%;}
section[data-testid="stSidebar"] [data-testid="stMultiSelectTagsContainer"] [data-tag] > span {
  white-space: normal; overflow-wrap: anywhere; line-height: 1.3; padding: 2px 0;}
</style>"""
"""Sidebar multiselect chips wrap instead of ending in an ellipsis, and the box grows with them
(Streamlit 1.67 caps a chip at one line and the box at about five chips, then scrolls)."""


SIDEBAR_WIDTH_PX = 340
"""Sidebar width [px] (Streamlit's default is 300): room for model names in the chips (the Find
table, :data:`ui.traffic.FIND_COLUMNS`, is sized for what it leaves at 1,280 px). Set by
:func:`ui.views.setup_page`: Streamlit 1.67 takes the width only from a page's first
``st.set_page_config`` call."""


def _seed_from_link(key: str, options: Sequence[str], multi: bool) -> None:
    """Put the link's ids into the picker's state when the link changed since this session wrote it.

    The link wins on a session's first run, on a page's first run after a page switch (the
    navigation carries the ids) and when the browser goes back; otherwise the widget's own state (a click, a callback of the
    custom panel) wins and is written to the URL by :func:`_write_link`. :func:`check_link` has
    already replaced aliases by canonical ids and dropped unknown ones.
    """
    ids = [v for v in st.query_params.get_all(key) if v in options]
    if not ids:
        return
    synced = st.session_state.get(_SYNCED, {})
    if key in st.session_state and synced.get(key) == (_page_id(), ids):
        return
    st.session_state[key] = ids if multi else ids[-1]


def _page_id() -> str:
    """This run's page (script hash): on the first run after a page switch Streamlit shows a picker's
    default even when the same key was set on the page before, so the link's ids are put back."""
    ctx = get_script_run_ctx()
    return "" if ctx is None else str(ctx.page_script_hash)


def _write_link(key: str, chosen: Sequence[str], default: Sequence[str]) -> None:
    """Write the picker's ids into the URL (same run), unless they are the default and the link lacks the key."""
    ids = [str(v) for v in chosen]
    st.session_state.setdefault(_SYNCED, {})[key] = (_page_id(), ids)
    if st.query_params.get_all(key) == ids or (key not in st.query_params and ids == list(default)):
        return
    if ids:
        st.query_params[key] = ids
    else:
        del st.query_params[key]


def picker(container, key: str, label: str, options: Sequence[str], labels: Mapping[str, str],
           default: Sequence[str], *, multi: bool, help: str, max_selections: int | None = None) -> list[str]:
    """A model or GPU picker that shows names and keeps ids in the URL (see the module docstring).

    Args:
        container: Where to draw it (``st.sidebar``).
        key: Widget key and URL key (``model``, ``models``, ``gpu``, ``gpus``).
        label: Widget label.
        options: Canonical ids offered.
        labels: id -> label shown (and searched) in the picker; an id without one shows as itself.
        default: Ids chosen when neither the link nor the session says (one for a selectbox).
        multi: Multiselect (else selectbox).
        help: Tooltip.
        max_selections: Most ids a multiselect keeps.

    Returns:
        The chosen canonical ids (one for a selectbox).
    """
    _seed_from_link(key, options, multi)
    shown = lambda option: labels.get(option, str(option))  # noqa: E731 - format_func
    if multi:
        # select_all=False: no "Select N matches" row, so Enter on a typed name adds the best match only
        chosen = list(container.multiselect(label, options, default=list(default), key=key, format_func=shown,
                                            max_selections=max_selections, help=help, select_all=False))
    else:
        chosen = [container.selectbox(label, options, index=list(options).index(default[0]), key=key,
                                      format_func=shown, help=help)]
    _write_link(key, chosen, default)
    return chosen


def _picker_labels(kind: str) -> dict[str, str]:
    """Picker labels of the catalog models or GPUs, plus the sidebar's custom one when it is set."""
    from ui import custom_panel  # noqa: PLC0415 - ui.custom_panel imports ui.catalog

    choice = custom_panel.current_choice()
    if kind == "model":
        labels = dict(catalog.model_labels())
        if choice.model is not None:
            labels[catalog.CUSTOM_ID] = f"Custom model: {choice.model.name}"
    else:
        labels = catalog.gpu_labels()
        if choice.gpu is not None:
            labels[catalog.CUSTOM_ID] = f"Custom GPU: {choice.gpu.name}"
    return labels


def _model_labels(options: Sequence[str]) -> dict[str, str]:
    """:func:`_picker_labels` of the models, each quantized checkpoint naming its base (so typing a base's
    name lists the base first, :mod:`ui.picker_search`), plus a label for each alias option
    (:func:`ui.catalog.alias_options`): the entry's name and the alias id."""
    labels = _picker_labels("model")
    labels = picker_search.base_first_labels(labels, picker_search.catalog_base_names(catalog.model_ids()))
    return labels | {option: catalog.alias_label(option) for option in options if option not in labels}


def _other_form(key: str) -> list[str]:
    """The link's value under the other form of ``key`` (``model`` for ``models`` ...), when it has none of its
    own: a link copied from a one-model page and opened on a many-model page (or back) keeps its choice. The
    navigation's rule for a page without the picker (:func:`ui.nav.carried_params`): the other form's first value."""
    from ui import nav  # noqa: PLC0415 - ui.nav -> ui.link_guard -> ui.inputs

    params = st.query_params
    if key in params:
        return []
    carried = nav.carried_params({k: params.get_all(k) for k in nav.PICKER_KEYS}, model=None, gpu=None)
    return carried.get(key, [])


def _carried_first(key: str | None, defaults: Sequence[str], options: Sequence[str],
                   resolve: Callable[[str], str], problems: list[str] | None = None) -> list[str]:
    """What the link carries under the other form of ``key`` (:func:`_other_form`) among ``options``, as the
    navigation carries it (``gpu=X`` becomes ``gpus=X``, :func:`ui.nav.carried_params`); the page's defaults when
    it carries none it knows. QA (stop 44): ``/Concurrency?gpu=nvidia-h200-sxm`` opened directly planned four
    default GPUs nobody picked beside it, each with a "does not fit" warning, where the same link through the
    sidebar planned the H200 alone. An id that is not known is left out and, with ``problems`` given, said there
    (QA: ``/Memory_curves?gpu=nvidia-zzz`` drew the default GPUs in silence; the picker's own check reports a bad
    value of its own key)."""
    chosen = list(defaults)
    if key is not None:
        carried = []
        what = "GPU" if key.startswith("gpu") else "model"
        for raw in _other_form(key):
            try:  # "custom" with a code: the sidebar's own entry; without one, _choice_problem says so
                kept, problem = _choice_problem(raw, options, resolve, what)
            except KeyError as exc:
                kept, problem = None, str(exc)
            if kept is not None:
                carried.append(kept)
            elif problems is not None:
                other = key[:-1] if key.endswith("s") else f"{key}s"
                instead = (f"this page's `{key}` list starts with its defaults" if key.endswith("s") else
                           f"this page shows its default for `{key}`")
                problems.append(f"Link parameter `{other}={shorten(raw)}`: {problem}. Instead, {instead}; pick in "
                                "the sidebar.")
        chosen = carried or chosen
    return catalog.pick_existing(tuple(chosen), tuple(options))


def sidebar_inputs(*, model: str | None = "one", gpu: str | None = "one",
                   default_models: Sequence[str] = (), default_gpus: Sequence[str] = (),
                   numbers: Sequence[str] = ("num_gpus", "context_len", "batch_size", "gpu_memory_utilization"),
                   advanced: Sequence[str] = ("block_size", "overhead_gib"),
                   dtypes: bool = True, reads_max_model_len: bool = False) -> tuple[PlanInputs, list[str]]:
    """Build this page's sidebar (validated against the link first) and read it.

    Args:
        model: ``"one"`` (selectbox ``model``), ``"many"`` (multiselect ``models``) or None.
        gpu: ``"one"`` (selectbox ``gpu``), ``"many"`` (multiselect ``gpus``) or None.
        default_models: Defaults for the model input (first one for ``"one"``).
        default_gpus: Defaults for the GPU input.
        numbers: Numeric keys shown in the main sidebar block, in order.
        advanced: Numeric keys shown under "Advanced".
        dtypes: Show ``weight_dtype`` and ``kv_cache_dtype``.
        reads_max_model_len: The page has its own ``max_model_len`` input, which names a bad link value (the Engine
            page); else a bad one, which the context length would otherwise take, is named here.

    Returns:
        The inputs, and the link problems to show (see :func:`show_problems`).
    """
    from ui import custom_panel  # the sidebar's "Custom model & GPU" panel (imports ui.catalog)

    m_ids = custom_panel.model_options(catalog.model_ids())
    model_key = {"one": "model", "many": "models"}.get(model or "")
    if model_key is not None:  # a link's alias is an option of its own, so the URL keeps it (_model_labels)
        m_ids = catalog.alias_options(st.query_params.get_all(model_key) or _other_form(model_key), m_ids)
    g_ids = custom_panel.gpu_options(catalog.gpu_ids())
    carried_problems: list[str] = []
    d_models = (_carried_first(model_key, default_models, m_ids, catalog.hub_model_id, carried_problems)
                or [catalog.default_model_id()])
    d_gpus = _carried_first({"one": "gpu", "many": "gpus"}.get(gpu or ""), default_gpus, g_ids,
                            catalog.resolve_gpu_id, carried_problems) or [catalog.default_gpu_id()]
    single, multi = {}, {}
    if model == "one":
        single["model"] = (m_ids, catalog.hub_model_id, "model", d_models[0])
    elif model == "many":
        multi["models"] = (m_ids, catalog.hub_model_id, "model", MAX_MODELS)
    if gpu == "one":
        single["gpu"] = (g_ids, catalog.resolve_gpu_id, "GPU", d_gpus[0])
    elif gpu == "many":
        multi["gpus"] = (g_ids, catalog.resolve_gpu_id, "GPU", MAX_GPUS)
    if dtypes:
        single["weight_dtype"] = (DTYPE_OPTIONS["weight_dtype"], None, "weight dtype", "auto")
        single["kv_cache_dtype"] = (DTYPE_OPTIONS["kv_cache_dtype"], None, "KV-cache dtype", "auto")
    problems = [*carried_problems, *check_link(single, multi, (*numbers, *advanced))]

    bar = st.sidebar
    chosen_models: tuple[str, ...] = ()
    chosen_gpus: tuple[str, ...] = ()
    if model is not None or gpu is not None:
        bar.html(PICKER_CSS)
    model_help = ("Shown by name, then the Hugging Face id (and the alias ids it also answers to); type any "
                  "part of either to search. Links and the CLI use the id (`--model`).")
    if model == "one":
        chosen_models = tuple(picker(bar, "model", "Model", m_ids, _model_labels(m_ids), d_models[:1],
                                     multi=False, help=model_help))
        if chosen_models[0] != catalog.CUSTOM_ID:  # the select's text box cuts a long label: the id in full
            bar.caption(f"Model id (`--model`): `{chosen_models[0].replace('`', '')}`")
    elif model == "many":
        chosen_models = tuple(picker(bar, "models", f"Models (up to {MAX_MODELS})", m_ids, _model_labels(m_ids),
                                     d_models[:MAX_MODELS], multi=True, max_selections=MAX_MODELS,
                                     help=model_help))
    gpu_help = "Shown by catalog name; type any part of it to search. Links and the CLI use the id (`--gpu`)."
    if gpu == "one":
        chosen_gpus = tuple(picker(bar, "gpu", "GPU", g_ids, _picker_labels("gpu"), d_gpus[:1], multi=False,
                                   help=gpu_help))
    elif gpu == "many":
        chosen_gpus = tuple(picker(bar, "gpus", f"GPUs (up to {MAX_GPUS})", g_ids, _picker_labels("gpu"),
                                   d_gpus[:MAX_GPUS], multi=True, max_selections=MAX_GPUS, help=gpu_help))
    if chosen_gpus:
        bar.caption(f"GPU id{'s' if len(chosen_gpus) > 1 else ''} (`--gpu`): "
                    + ", ".join(f"`{g}`" for g in chosen_gpus))
    values: dict = {}
    if dtypes:
        values["weight_dtype"] = bar.selectbox(
            "Weight dtype", DTYPE_OPTIONS["weight_dtype"], index=DTYPE_OPTIONS["weight_dtype"].index("auto"),
            key="weight_dtype", bind="query-params",
            help="; ".join(f"{k}: {v.label}" for k, v in WEIGHT_DTYPES.items()))
        values["kv_cache_dtype"] = bar.selectbox(
            "KV-cache dtype", DTYPE_OPTIONS["kv_cache_dtype"], index=0, key="kv_cache_dtype",
            bind="query-params",
            help="auto = the model's compute dtype; "
                 + "; ".join(f"{k}: {v.label}" for k, v in KV_CACHE_DTYPES.items()))
    for key in numbers:  # a link from the Engine page gives the context length as max_model_len
        values[key] = _number_widget(bar, key, link_default(key))
        problems += [p for p in (link_default_problem(key),) if p and not reads_max_model_len]
    if advanced:
        with bar.expander("Advanced"):
            for key in advanced:
                values[key] = _number_widget(st, key)
    problems += typed_rule_problems(values)  # a typed block size vLLM refuses: named, its default planned
    choice = custom_panel.render_custom_model_panel(bar, show_problems=False)
    problems += choice.problems
    if custom_panel.last_use_failed():  # the panel says why in the sidebar; the page kept what it showed
        shown = [_picker_labels(kind).get(ids[0], ids[0]).split(" · ")[0] if len(ids) == 1 else None  # its name
                 for kind, ids in (("model", chosen_models), ("GPU", chosen_gpus))]
        st.error(custom_panel.failed_use_line(*shown), icon=":material/error:")
    if choice.model is not None and catalog.CUSTOM_ID in chosen_models:
        for note in custom_panel.warning_notes(choice.model):  # the folded panel would hide them
            st.warning(f"Custom model {md_text(choice.model.name)}: {md_message(note)}", icon=":material/warning:")
    bar.caption("Every input is in the address bar: copy the URL to share this exact view.")
    from ui import nav  # noqa: PLC0415 - ui.nav -> ui.link_guard -> ui.inputs

    nav.draw(model=model, gpu=gpu)
    inputs = PlanInputs(model_ids=chosen_models, gpu_ids=chosen_gpus, **values)
    return inputs, problems


def show_problems(problems: Sequence[str]) -> None:
    """Show each link problem as an ``st.error`` at the top of the page."""
    for problem in problems:
        st.error(md_message(problem), icon=":material/link_off:")
