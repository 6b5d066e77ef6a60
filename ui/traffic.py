"""Inputs for the traffic pages (Allocation, Find a GPU setup): numeric fields, link defaults, the lengths
CSV upload.

Pages stay thin: they read these widgets (keys = CLI flags with underscores, bound to the URL), call the
bundle functions (each a sequence of planner calls) and render the rows and figures built in
:mod:`ui.allocation_view` (Allocation), :mod:`ui.find_view` and :mod:`ui.find_table` (Find a GPU setup);
their names are re-exported here, so ``traffic.allocation_view`` and ``traffic.run_find`` keep working.
Every size on screen goes through :mod:`ui.format`.
"""

from __future__ import annotations

import io
from collections.abc import Sequence

import streamlit as st

from planner.budget import MAX_CONTEXT_SEARCH_LIMIT
from planner.model.dtypes import WEIGHT_DTYPES
from planner.text import quote
from planner.traffic.find_types import DEFAULT_FIND_KV_DTYPES, FIND_KV_DTYPE_CHOICES
from planner.traffic.lengths_csv import LengthTable, parse_lengths_csv
from planner.traffic.offload import PCIE4_X16_GB_S
from ui import inputs
from ui.allocation_view import (  # noqa: F401 - the Allocation page's names, re-exported for the page and tests
    CHART_LAYOUT,
    MONTE_CARLO_TRIALS,
    SCHEME_LABELS,
    AllocationView,
    allocation_bars,
    allocation_caption,
    allocation_curve_chart,
    allocation_metric_values,
    allocation_rows,
    allocation_view,
    build_workload,
    kv_dtype_bars,
    kv_dtype_rows,
    kv_dtype_sources,
    metrics_row,
    preemption_chart,
    prefix_metric_values,
    sampling_bars,
    sampling_metric_values,
    simulation_metric_values,
    slice_text,
    swap_metric_values,
    users_same_as,
)
from ui.find_table import (  # noqa: F401 - the Find table's names, re-exported for the page and tests
    FIND_COLUMNS,
    FIND_PAGE_ROWS,
    FIND_TOP,
    FindColumn,
    find_rows,
    find_table_config,
    num_pages,
    page_notes,
)
from ui.find_view import (  # noqa: F401 - the Find page's names, re-exported for the page and tests
    best_text,
    find_request,
    fixed_or_workload,
    gpu_type_filter,
    nothing_fits_text,
    run_find,
    setup_throughput,
    shown_setup,
    throughput_chart,
    throughput_rows,
    vendor_filter,
)
from ui.inputs import NumberField
from ui.number_fields import DEFAULT_USERS
from ui.format import count_noun

# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------
TRAFFIC_FIELDS: dict[str, NumberField] = {
    f.key: f
    for f in (
        NumberField(key="max_model_len", label="max_model_len [tokens]", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=8192, step=1024, unit="tokens",
                    help="Engine limit per sequence; naive allocation reserves this much for every sequence "
                         "(`--max-model-len`)."),
        NumberField(key="mean_len", label="Average sequence length [tokens]", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=800, step=100, unit="tokens",
                    help="Prompt + generated tokens a sequence actually holds, on average (`--mean-len`)."),
        NumberField(key="prefix_len", label="Shared prefix [tokens]", min_value=0, max_value=MAX_CONTEXT_SEARCH_LIMIT,
                    default=0, step=100, unit="tokens",
                    help="System prompt or document shared by some requests; its full blocks are stored once "
                         "(`--prefix-len`)."),
        NumberField(key="prefix_hit_fraction", label="Share of requests with that prefix", min_value=0.0,
                    max_value=1.0, default=1.0, step=0.05, is_float=True,
                    help="Fraction of requests that start with the shared prefix (`--prefix-hit-fraction`)."),
        NumberField(key="users", label="Concurrent users", min_value=1, max_value=1_000_000, default=DEFAULT_USERS,
                    step=10, unit="users", help="Requests in flight at once (`--users`)."),
        NumberField(key="prompt_len", label="Prompt length, mean [tokens]", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=2000, step=100, unit="tokens",
                    help="Fixed prompt length, or the mean when a p95 is set (`--prompt-len`)."),
        NumberField(key="prompt_p95", label="Prompt length p95 [tokens] (empty = fixed)", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=None, step=100, unit="tokens",
                    help="95th percentile: prompts become log-normal with this mean and p95 (`--prompt-p95`)."),
        NumberField(key="output_len", label="Output length, mean [tokens]", min_value=0,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=500, step=50, unit="tokens",
                    help="Fixed output length, or the mean when a p95 is set (`--output-len`)."),
        NumberField(key="output_p95", label="Output length p95 [tokens] (empty = fixed)", min_value=1,
                    max_value=MAX_CONTEXT_SEARCH_LIMIT, default=None, step=50, unit="tokens",
                    help="95th percentile: outputs become log-normal with this mean and p95 (`--output-p95`)."),
        NumberField(key="seed", label="Monte-Carlo seed", min_value=0, max_value=2**31 - 1, default=0, step=1,
                    help="Same seed, same simulation (`--seed`)."),
        NumberField(key="num_samples", label="Samples per request (n) / beam width (k)", min_value=1, max_value=64,
                    default=4, step=1, help="Parallel sampling or beam search: outputs generated per prompt."),
        NumberField(key="swap_space_gib", label="CPU swap space [GiB per GPU]", min_value=0.0, max_value=4096.0,
                    default=4.0, step=1.0, is_float=True, unit="GiB",
                    help="Host memory for preempted sequences' KV (vLLM V0 `--swap-space`, default 4)."),
        NumberField(key="host_link_gb_s", label="Host link [GB/s per direction]", min_value=0.1, max_value=1000.0,
                    default=PCIE4_X16_GB_S, step=1.0, is_float=True, unit="GB/s",
                    help="GPU-CPU bandwidth: PCIe 4.0 x16 = 31.5, PCIe 5.0 x16 = 63."),
        NumberField(key="max_gpus", label="Most GPUs per setup", min_value=1, max_value=64, default=8, step=1,
                    unit="GPUs", help="All replicas together (`--max-gpus`)."),
        NumberField(key="max_tpot_ms", label="Max time per output token [ms] (empty = none)", min_value=0.01,
                    max_value=100000.0, default=None, step=5.0, is_float=True, unit="ms",
                    help="Limit on the roofline decode step at the target load (`--max-tpot-ms`)."),
        NumberField(key="preemption_probability", label="Accepted chance of running out of KV", min_value=0.0,
                    max_value=0.99, default=0.05, step=0.01, is_float=True,
                    help="For length distributions: setups are sized so N users overflow the KV cache at most "
                         "this often (`--preemption-probability`)."),
    )
}
"""Numeric inputs of the traffic pages, by key (= CLI flag with underscores)."""

for _field in TRAFFIC_FIELDS.values():
    inputs.NUMBER_FIELDS.setdefault(_field.key, _field)  # so inputs.check_link validates them too

def _field(key: str) -> NumberField:
    """The traffic field of ``key``, else the shared one (:data:`ui.inputs.NUMBER_FIELDS`)."""
    return TRAFFIC_FIELDS.get(key) or inputs.NUMBER_FIELDS[key]


def _number(container, key: str, default):
    field = _field(key)
    if field.is_float:
        return container.number_input(
            field.label, min_value=float(field.min_value), max_value=float(field.max_value),
            value=None if default is None else float(default), step=float(field.step), format="%.2f",
            key=key, help=field.help, bind="query-params")
    return container.number_input(
        field.label, min_value=int(field.min_value), max_value=int(field.max_value),
        value=None if default is None else int(default), step=int(field.step), key=key, help=field.help,
        bind="query-params")


def length_from_link() -> dict[str, int]:
    """``{"max_model_len": N}`` when the link carries a plan's ``context_len`` but no ``max_model_len`` (a link
    from Home or Concurrency), so the Allocation page sizes the same length; else ``{}``. A value that is not a
    whole number in range is left to the page's own default (its ``context_len`` check says why)."""
    params = st.query_params
    if "max_model_len" in params or "context_len" not in params:
        return {}
    raw = params.get("context_len", "")
    if not raw.isdigit() or not 1 <= int(raw) <= TRAFFIC_FIELDS["max_model_len"].max_value:
        return {}
    return {"max_model_len": int(raw)}


CARRIED_USERS = "the link's batch_size"
"""Where the users come from when :func:`users_from_link` carries them (the words of a bad ``users``'s message)."""


def carried_words(from_link: dict) -> dict[str, str]:
    """``{"users": CARRIED_USERS}`` when ``from_link`` (a page's defaults from :func:`users_from_link`) carries the
    users, else ``{}``: :func:`number_inputs`'s ``carried``."""
    return {"users": CARRIED_USERS} if "users" in from_link else {}


def users_from_link() -> dict[str, int]:
    """``{"users": N}`` when the link carries a plan's ``batch_size`` but no ``users`` it can use (a link from
    Home or Concurrency), so the Allocation page's traffic is the plan's batch (QA: a link with ``batch_size=8``
    drew 3 sequences and said nothing); else ``{}``. A ``users`` out of range counts as none (QA: ``batch_size=8&
    users=0`` fell back to the default users, not 8); its own check says why, and what the page shows instead
    (:data:`CARRIED_USERS`). A ``batch_size`` that is not a whole number in range is left to the page's own
    default (its ``batch_size`` check says why)."""
    batch = link_whole_number("batch_size", inputs.NUMBER_FIELDS["batch_size"])
    if batch is None or link_whole_number("users", TRAFFIC_FIELDS["users"]) is not None:
        return {}
    return {"users": batch}


def carried_number_problems(keys: Sequence[str], uses: str) -> list[str]:
    """One message per carried plan key in ``keys`` (``context_len``, ``batch_size``: read by this page only to
    seed its own inputs) whose link value is not valid, saying the page ignored it; before, a bad value was
    dropped in silence while Home, Engine and Concurrency said why.

    Args:
        keys: Keys of :data:`ui.inputs.NUMBER_FIELDS` the page reads from a link without a widget of its own.
        uses: What the page uses instead (``"its own max_model_len"``).
    """
    return [f"{wrong}, so it was ignored: this page uses {uses}. Fix it in the link, or on Home."
            for _, wrong, _ in inputs.link_number_problems(keys)]


def link_whole_number(key: str, field: NumberField) -> int | None:
    """The link's ``key`` as a whole number within ``field``'s range, else None (the page's own check says why)."""
    raw = st.query_params.get(key, "")
    if not raw.isdigit() or not field.min_value <= int(raw) <= field.max_value:
        return None
    return int(raw)


def find_defaults_from_link() -> tuple[dict[str, int], str | None]:
    """The Find page's defaults from a plan link (Home, Concurrency, Engine), and a sentence saying so.

    Only keys the link carries count (the navigation carries only what the user set), and Find's own keys win:

    * ``context_len`` without ``prompt_len`` / ``output_len``: output = min(500, context_len // 4) (Find's
      output default, or a quarter of a short context), prompt = context_len - output;
    * ``batch_size`` without ``users``: users = batch_size.

    Without them the page keeps its defaults (256 users, 2,000 + 500 tokens). Example: ``context_len=2500,
    batch_size=64`` gives 64 users of 2,000 + 500 tokens.
    """
    params, out, said = st.query_params, {}, []
    context = link_whole_number("context_len", TRAFFIC_FIELDS["prompt_len"])
    if context is not None and context >= 2 and "prompt_len" not in params and "output_len" not in params:
        output = min(int(TRAFFIC_FIELDS["output_len"].default), context // 4)
        out.update(prompt_len=context - output, output_len=output)
        said.append(f"context_len {context:,} = prompt {context - output:,} + output {output:,} tokens")
    carried = users_from_link()
    if carried:
        out.update(carried)
        said.append(f"batch_size {carried['users']:,} = {count_noun(carried['users'], 'concurrent user')}")
    return out, (f"From the link: {'; '.join(said)}. Set the users and lengths above to override.") if said else None


def number_inputs(title: str, keys: Sequence[str], defaults: dict | None = None,
                  expanded: bool = True, carried: dict[str, str] | None = None) -> tuple[dict, list[str]]:
    """A titled sidebar block of numeric inputs, validated against the link first.

    Args:
        title: Block heading.
        keys: Keys of :data:`TRAFFIC_FIELDS` (or :data:`ui.inputs.NUMBER_FIELDS`).
        defaults: Per-page defaults overriding the field defaults.
        expanded: Show the block open.
        carried: Key -> where its default came from when a link carried it (:data:`CARRIED_USERS`); a bad link
            value's message names the value shown and its source ("this page's default" for the other defaults).

    Returns:
        Values by key, and the link problems (show with :func:`ui.inputs.show_problems`).
    """
    defaults, carried = defaults or {}, carried or {}
    shown = {key: (value, carried.get(key, "this page's default")) for key, value in defaults.items()
             if key in keys and (key in carried or value != _field(key).default)}
    problems = inputs.check_link({}, {}, keys, shown=shown)
    values = {}
    with st.sidebar.expander(title, expanded=expanded):
        for key in keys:
            values[key] = _number(st, key, defaults.get(key, _field(key).default))
    return values, problems


def find_dtype_inputs() -> tuple[str, tuple[str, ...], list[str]]:
    """Weight dtype selectbox and the KV dtypes multiselect of the Find page (URL-bound)."""
    problems = inputs.check_link(
        {"weight_dtype": (tuple(WEIGHT_DTYPES), None, "weight dtype", "auto")},
        {"kv_cache_dtypes": (FIND_KV_DTYPE_CHOICES, None, "KV-cache dtype", len(FIND_KV_DTYPE_CHOICES))}, ())
    bar = st.sidebar
    weight = bar.selectbox("Weight dtype", tuple(WEIGHT_DTYPES), index=tuple(WEIGHT_DTYPES).index("auto"),
                           key="weight_dtype", bind="query-params",
                           help="; ".join(f"{k}: {v.label}" for k, v in WEIGHT_DTYPES.items()))
    kv = bar.multiselect("KV-cache dtypes to try", FIND_KV_DTYPE_CHOICES, default=list(DEFAULT_FIND_KV_DTYPES),
                         key="kv_cache_dtypes", bind="query-params",
                         help="auto = the model's dtype; fp8 halves the cache (`--kv-cache-dtypes`).")
    return weight, tuple(kv), problems


LENGTHS_UPLOAD_LIMIT_MB = 2
"""Largest CSV of lengths the uploader takes [MB; Streamlit's MB is 2**20 bytes]. 100,000 rows of the
longest realistic row (two 8-digit token counts, a comma and CRLF: 19 bytes) are 1.9 MB, and typical
rows (``1834,412``: 9-10 bytes) give ~200,000, far more draws than the Monte-Carlo percentiles need.
A session keeps its parsed upload for as long as the upload stays, so this limit also bounds what one
browser tab holds (~20 MB of parsed lengths at most, measured with tracemalloc)."""

LENGTHS_UPLOAD_MAX_BYTES = LENGTHS_UPLOAD_LIMIT_MB * 1024 * 1024
""":data:`LENGTHS_UPLOAD_LIMIT_MB` in bytes, as Streamlit counts it; checked again on the server, because
the uploader's own limit is enforced by the browser only (the server refuses only past
``server.maxUploadSize``, which the GGUF uploader needs larger)."""

_PARSED_UPLOAD_KEY = "_lengths_csv_parsed"
"""Session-state slot of the last upload read: ``((file_id, size), LengthTable or error message)``. One slot,
so a session holds one parsed table at most, and reruns (every widget change) reuse it."""


def lengths_uploader():
    """The sidebar's "upload a CSV of lengths" widget, limited to :data:`LENGTHS_UPLOAD_LIMIT_MB`."""
    return st.sidebar.file_uploader(
        "Or upload a CSV of lengths", type=["csv", "txt"], key="lengths_csv", max_upload_size=LENGTHS_UPLOAD_LIMIT_MB,
        help=f"One column of total tokens, or prompt_len,output_len (header optional); at most "
             f"{LENGTHS_UPLOAD_LIMIT_MB} MB.")


def read_upload(upload) -> LengthTable | None:
    """The lengths in an uploaded CSV (None when nothing was uploaded), parsed once per upload.

    The result (or the error) is kept in session state under the upload's ``file_id`` and size, so a rerun
    costs a lookup, not a parse.

    Raises:
        ValueError: the file is over :data:`LENGTHS_UPLOAD_MAX_BYTES`, not UTF-8 text, or not a CSV of
            lengths (messages from :func:`planner.traffic.lengths_csv.parse_lengths_csv`).
    """
    if upload is None:
        st.session_state.pop(_PARSED_UPLOAD_KEY, None)  # a removed upload frees its table
        return None
    fingerprint = (upload.file_id, upload.size)
    saved = st.session_state.get(_PARSED_UPLOAD_KEY)
    if saved is None or saved[0] != fingerprint:
        try:
            result: LengthTable | str = _parse_upload(upload)
        except ValueError as exc:
            result = str(exc)
        saved = (fingerprint, result)
        st.session_state[_PARSED_UPLOAD_KEY] = saved
    if isinstance(saved[1], str):
        raise ValueError(saved[1])
    return saved[1]


def _parse_upload(upload) -> LengthTable:
    name = quote(upload.name)
    if upload.size > LENGTHS_UPLOAD_MAX_BYTES:
        raise ValueError(f"{name} is {upload.size:,} bytes; the limit is {LENGTHS_UPLOAD_MAX_BYTES:,} bytes "
                         f"({LENGTHS_UPLOAD_LIMIT_MB} MB): keep a random sample of the rows")
    stream = io.TextIOWrapper(io.BytesIO(upload.getvalue()), encoding="utf-8-sig", newline=None)
    try:
        return parse_lengths_csv(stream, max_chars=LENGTHS_UPLOAD_MAX_BYTES)
    except UnicodeDecodeError:
        raise ValueError(f"{name} is not UTF-8 text; save it as a plain CSV (UTF-8)") from None
