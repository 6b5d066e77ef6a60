"""Inputs, bundles, tables and charts for the traffic pages (Allocation, Find a GPU setup).

Pages stay thin: they read these widgets (keys = CLI flags with underscores,
bound to the URL), call the bundle functions below (each a sequence of planner
calls), and render the rows and figures built here. Every size on screen goes
through :mod:`ui.format`.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import plotly.graph_objects as go
import streamlit as st

from planner.budget import MAX_CONTEXT_SEARCH_LIMIT, PlanRequest, sequence_profiles
from planner.model import ModelSpec
from planner.model.dtypes import WEIGHT_DTYPES
from planner.sweep import context_points
from planner.text import quote
from planner.traffic.allocation import (
    AllocationComparison,
    AllocationPoint,
    allocation_curve,
    allocation_for_model,
    slice_waste,
)
from planner.traffic.find_types import DEFAULT_FIND_KV_DTYPES, FIND_KV_DTYPE_CHOICES, FindRequest, FindResult, Setup
from planner.traffic.kvquant import KVQuantOption, compare_kv_dtypes
from planner.traffic.lengths_csv import LengthTable, parse_lengths_csv, workload_from_lengths
from planner.traffic.offload import PCIE4_X16_GB_S, SwapPlan, swap_plan
from planner.traffic.prefix import PrefixSharing, SamplingMemory, parallel_sampling, prefix_caching
from planner.traffic.reverse import find_setups
from planner.traffic.simulation import ConcurrencySimulation, simulate_concurrency
from planner.traffic.throughput import ThroughputEstimate, active_parameters, estimate_throughput, prefill_seconds
from planner.traffic.workload import Fixed, LogNormal, Workload
from ui import inputs
from ui.charts import ALLOCATION_COLOURS, PALETTE, TOKEN_AXIS, reused
from ui.find_table import (  # noqa: F401 - the Find table's names, re-exported for the page and tests
    FIND_COLUMNS,
    FIND_PAGE_ROWS,
    FIND_TOP,
    FindColumn,
    find_rows,
    find_table_config,
    num_pages,
    page_notes,
    page_of,
)
from ui.format import (
    bytes_to_gib,
    format_bytes,
    count_noun,
    format_bytes_exact,
    format_int,
    format_tokens,
    gib_to_bytes,
    md_message,
    md_text,
)
from ui.inputs import NumberField

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
        NumberField(key="users", label="Concurrent users", min_value=1, max_value=1_000_000, default=200, step=10,
                    unit="users", help="Requests in flight at once (`--users`)."),
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

_LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
               hoverlabel=dict(namelength=-1))

CURVE_MAX_TOKENS = 1 << 20
"""Longest max_model_len on the allocation curve [tokens]."""

MONTE_CARLO_TRIALS = 1000
"""Trials per simulation on the pages."""


def _number(container, key: str, default):
    field = TRAFFIC_FIELDS.get(key) or inputs.NUMBER_FIELDS[key]
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


def _link_whole_number(key: str, field: NumberField) -> int | None:
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

    Without them the page keeps its defaults (200 users, 2,000 + 500 tokens). Example: ``context_len=2500,
    batch_size=64`` gives 64 users of 2,000 + 500 tokens.
    """
    params, out, said = st.query_params, {}, []
    context = _link_whole_number("context_len", TRAFFIC_FIELDS["prompt_len"])
    if context is not None and context >= 2 and "prompt_len" not in params and "output_len" not in params:
        output = min(int(TRAFFIC_FIELDS["output_len"].default), context // 4)
        out.update(prompt_len=context - output, output_len=output)
        said.append(f"context_len {context:,} = prompt {context - output:,} + output {output:,} tokens")
    batch = _link_whole_number("batch_size", TRAFFIC_FIELDS["users"])
    if batch is not None and "users" not in params:
        out["users"] = batch
        said.append(f"batch_size {batch:,} = {batch:,} concurrent users")
    return out, (f"From the link: {'; '.join(said)}. Set the users and lengths above to override.") if said else None


def number_inputs(title: str, keys: Sequence[str], defaults: dict | None = None,
                  expanded: bool = True) -> tuple[dict, list[str]]:
    """A titled sidebar block of numeric inputs, validated against the link first.

    Args:
        title: Block heading.
        keys: Keys of :data:`TRAFFIC_FIELDS` (or :data:`ui.inputs.NUMBER_FIELDS`).
        defaults: Per-page defaults overriding the field defaults.
        expanded: Show the block open.

    Returns:
        Values by key, and the link problems (show with :func:`ui.inputs.show_problems`).
    """
    defaults = defaults or {}
    problems = inputs.check_link({}, {}, keys)
    values = {}
    with st.sidebar.expander(title, expanded=expanded):
        for key in keys:
            field = TRAFFIC_FIELDS.get(key) or inputs.NUMBER_FIELDS[key]
            values[key] = _number(st, key, defaults.get(key, field.default))
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


def build_workload(prompt_len: int, prompt_p95: int | None, output_len: int, output_p95: int | None,
                   max_model_len: int, lengths: LengthTable | None = None) -> Workload:
    """The workload the inputs describe: an uploaded CSV's lengths (:func:`read_upload`), else log-normal where
    a p95 is set, else fixed.

    Raises:
        ValueError: impossible shapes or a CSV row over ``max_model_len`` (messages from :mod:`planner.traffic`).
    """
    if lengths is not None:
        return workload_from_lengths(lengths, max_model_len)
    prompt = LogNormal(mean=prompt_len, p95=prompt_p95) if prompt_p95 else Fixed(tokens=prompt_len)
    output = LogNormal(mean=output_len, p95=output_p95) if output_p95 else Fixed(tokens=output_len)
    return Workload(prompt=prompt, output=output, max_model_len=max_model_len)


# --------------------------------------------------------------------------
# Bundles: planner calls for one page
# --------------------------------------------------------------------------
@dataclass(frozen=True, kw_only=True)
class AllocationView:
    """Everything the Allocation page shows (planner results only)."""

    comparison: AllocationComparison
    curve: tuple[AllocationPoint, ...]
    slices: object | None
    simulation: ConcurrencySimulation | None
    preemption_at_users: float | None
    prefix: PrefixSharing | None
    sampling: SamplingMemory
    kv_dtypes: tuple[KVQuantOption, ...]
    swap: SwapPlan
    workload: Workload
    users: int


def allocation_view(model: ModelSpec, gpu, request: PlanRequest, *, mean_len: int, prefix_len: int,
                    prefix_hit_fraction: float, workload: Workload, users: int, seed: int, num_samples: int,
                    swap_space_gib: float, host_link_gb_s: float) -> AllocationView:
    """Run every planner call of the Allocation page.

    ``request.context_len`` is ``max_model_len``. Raises ValueError with the
    planner's message when an input is out of range.
    """
    comparison = allocation_for_model(model, gpu.framework_memory_bytes, request, mean_len=mean_len,
                                      prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction, gpu_id=gpu.id)
    exact, paged = sequence_profiles(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)  # features on
    budget = comparison.kv_cache_budget_bytes
    limit = model.max_position_embeddings or MAX_CONTEXT_SEARCH_LIMIT
    top = max(min(limit, CURVE_MAX_TOKENS), request.context_len, mean_len)
    curve = allocation_curve(exact, paged, budget, mean_len=mean_len,
                             max_model_lens=context_points(mean_len, max(top, mean_len + 1), 32),
                             prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction)
    try:
        slices = slice_waste(mean_len, request.context_len, 32)
    except ValueError:
        slices = None
    simulation = preempt = None
    if budget > paged.bytes_per_sequence(1):
        simulation = simulate_concurrency(paged, budget, workload, num_trials=MONTE_CARLO_TRIALS, seed=seed)
        preempt = simulation.preemption_probability(users)
    prefix = (prefix_caching(paged, prefix_len=prefix_len, seq_len=mean_len, num_requests=users,
                             hit_fraction=prefix_hit_fraction, budget_bytes=budget) if prefix_len else None)
    prompt = max(1, round(workload.prompt.mean_tokens))
    output = max(0, round(workload.output.mean_tokens))
    sampling = parallel_sampling(exact, paged, prompt_len=prompt, output_len=output, num_samples=num_samples,
                                 budget_bytes=budget)
    kv_dtypes = compare_kv_dtypes(model, gpu.framework_memory_bytes, replace(request, context_len=mean_len),
                                  gpu_id=gpu.id)
    recompute = (prefill_seconds(active_parameters(model), mean_len, gpu.bf16_dense_tflops, request.num_gpus)
                 if gpu.bf16_dense_tflops else None)
    swap = swap_plan(kv_bytes_per_sequence_per_gpu=paged.bytes_per_sequence(mean_len),
                     gpu_max_sequences=comparison.paged.max_sequences, cpu_swap_bytes=gib_to_bytes(swap_space_gib),
                     host_link_gb_s=host_link_gb_s, recompute_seconds=recompute, num_gpus=request.num_gpus)
    return AllocationView(comparison=comparison, curve=curve, slices=slices, simulation=simulation,
                          preemption_at_users=preempt, prefix=prefix, sampling=sampling, kv_dtypes=kv_dtypes,
                          swap=swap, workload=workload, users=users)


def find_request(*, users: int, workload: Workload, max_gpus: int, kv_cache_dtypes: tuple[str, ...],
                 weight_dtype: str, max_tpot_ms: float | None, gpu_memory_utilization: float, block_size: int,
                 overhead_gib: float | None, preemption_probability: float, seed: int) -> FindRequest:
    """The reverse-planner request for the Find page's inputs (units converted as the CLI does)."""
    return FindRequest(
        users=users, workload=workload, max_gpus=max_gpus, kv_cache_dtypes=kv_cache_dtypes or ("auto",),
        weight_dtype=weight_dtype, max_time_per_output_token_s=None if max_tpot_ms is None else max_tpot_ms / 1000,
        gpu_memory_utilization=gpu_memory_utilization, block_size=block_size,
        overhead_bytes=None if overhead_gib is None else gib_to_bytes(overhead_gib),
        max_preemption_probability=preemption_probability, seed=seed, top=FIND_TOP)


def fixed_or_workload(prompt_len: int, prompt_p95: int | None, output_len: int, output_p95: int | None,
                      max_model_len: int | None, lengths: LengthTable | None) -> Workload:
    """The Find page's workload: like the CLI, the limit defaults to prompt + output for fixed lengths.

    Raises:
        ValueError: a distribution without ``max_model_len``, or bad shapes.
    """
    if lengths is not None or prompt_p95 or output_p95:
        if max_model_len is None:
            raise ValueError("a length distribution needs max_model_len (the engine limit that caps long requests)")
        return build_workload(prompt_len, prompt_p95, output_len, output_p95, max_model_len, lengths)
    total = prompt_len + output_len
    return build_workload(prompt_len, None, output_len, None, max_model_len or total)


def run_find(model: ModelSpec, gpus, request: FindRequest) -> FindResult:
    """:func:`planner.reverse.find_setups` over the catalog GPUs."""
    return find_setups(model, list(gpus), request)


def shown_setup(result: FindResult) -> Setup | None:
    """The setup the throughput chart describes: the cheapest, else the closest."""
    return result.options[0] if result.options else result.closest


def setup_throughput(model: ModelSpec, gpu, setup: Setup, request: FindRequest,
                     workload: Workload) -> ThroughputEstimate:
    """Roofline estimate for one replica of ``setup`` at its load."""
    kv = "auto" if setup.kv_cache_dtype in ("bf16", "fp16") else setup.kv_cache_dtype
    plan_request = PlanRequest(context_len=setup.max_model_len, weight_dtype=setup.weight_dtype, kv_cache_dtype=kv,
                               num_gpus=setup.tensor_parallel_size,
                               gpu_memory_utilization=request.gpu_memory_utilization,
                               block_size=request.block_size, overhead_bytes=request.overhead_bytes)
    prompt = max(1, round(workload.prompt.mean_tokens))
    output = max(0, round(workload.output.mean_tokens))
    return estimate_throughput(model, plan_request, gpu_memory_bytes=gpu.framework_memory_bytes,
                               bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=gpu.bf16_dense_tflops,
                               price_usd_per_gpu_hour=gpu.price_usd_per_hour, prompt_len=prompt, output_len=output,
                               gpu_id=gpu.id)


# --------------------------------------------------------------------------
# Text and tables
# --------------------------------------------------------------------------
SCHEME_LABELS = {"naive": "Naive (reserve max_model_len)", "paged": "Paged (blocks on demand)",
                 "paged+prefix": "Paged + prefix caching"}


def allocation_metric_values(view: AllocationView) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the Allocation page."""
    c = view.comparison
    return {
        "Naive: users": (
            format_int(c.naive.max_sequences),
            f"Sequences that fit with naive reservation: KV budget {format_bytes(c.kv_cache_budget_bytes)} ÷ "
            f"{format_bytes_exact(c.naive.reserved_bytes_per_sequence)} reserved each"),
        "Paged: users": (
            format_int(c.paged.max_sequences),
            f"Sequences that fit with paged blocks: budget ÷ "
            f"{format_bytes_exact(c.paged.reserved_bytes_per_sequence)} in whole {c.block_size}-token blocks"),
        "Prefix cache: users": (
            format_int(c.prefix.max_sequences),
            f"Sequences that fit with paged blocks and a shared prefix of {format_tokens(c.prefix_len)}, "
            f"{c.prefix_hit_fraction:.0%} of requests"),
        "Naive: unused": (
            f"{c.naive.unused_fraction:.1%}",
            f"Share of the naive reservation never written: 1 − {format_int(c.mean_len)} / "
            f"{format_int(c.max_model_len)} of each reservation"),
        "Paged: unused": (
            f"{c.paged.unused_fraction:.1%}",
            "Share of the paged reservation never written: under one block per sequence"),
    }


METRICS_PER_ROW = 3
"""Metrics per row: four or five cut labels such as "Users, 95th percentile" at 1,400 px."""


def metrics_row(values: dict[str, tuple[str, str]]) -> None:
    """One row of bordered metrics."""
    items = list(values.items())
    for start in range(0, len(items), METRICS_PER_ROW):  # rows of three keep every label whole at 1,400 px
        row = items[start:start + METRICS_PER_ROW]
        for col, (label, (value, help_text)) in zip(st.columns(METRICS_PER_ROW), row):
            col.metric(label, value, help=help_text, border=True)


def allocation_rows(c: AllocationComparison) -> list[dict]:
    """One row per scheme, formatted."""
    return [{
        "Scheme": SCHEME_LABELS[u.scheme], "Sequences in the batch": format_int(u.num_sequences),
        "Reserved": format_bytes(u.reserved_bytes), "In use": format_bytes(u.used_bytes),
        "Wasted": format_bytes(u.wasted_bytes), "Unused share": f"{u.unused_fraction:.1%}",
        "Sequences that fit": format_int(u.max_sequences),
    } for u in c.schemes]


def slice_text(view: AllocationView) -> str | None:
    """The "N of 32 slices" sentence, when ``max_model_len`` divides into 32 slices."""
    s = view.slices
    if s is None:
        return None
    return (f"Cut the naive {format_tokens(s.max_model_len)} reservation into {s.num_slices} slices of "
            f"{format_tokens(s.slice_tokens)}: a sequence of {format_tokens(s.num_tokens)} fills {s.used_slices} "
            f"and leaves **{s.wasted_slices} of {s.num_slices}** empty.")


def simulation_metric_values(view: AllocationView) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the Monte-Carlo panel."""
    sim = view.simulation
    if sim is None:
        return {}
    return {
        "Guaranteed users": (format_int(sim.guaranteed_users),
                             f"every request at its longest, {format_tokens(sim.max_tokens)}: never preempted"),
        "Expected users": (format_int(round(sim.expected_users)),
                           f"mean of {format_int(sim.num_trials)} trials; analytic "
                           f"{sim.analytic_expected_users:,.1f}"),
        "Users, 5th percentile": (format_int(sim.p5_users), "fit in 95% of trials"),
        "Users, 95th percentile": (format_int(sim.p95_users), "fit in only 5% of trials"),
        f"P(out of KV) at {format_int(view.users)} users": (f"{view.preemption_at_users:.1%}",
                                                           "share of trials where they do not all fit"),
    }


def prefix_metric_values(p: PrefixSharing) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the prefix-caching panel."""
    return {
        "Shared per request": (format_tokens(p.shared_tokens),
                               f"⌊{format_int(p.prefix_len)} / {p.block_size}⌋ full blocks; the partial last "
                               f"block is not shared"),
        "KV saved": (format_bytes(p.bytes_saved), f"{format_bytes_exact(p.bytes_saved)} for {p.num_hits} of "
                                                  f"{format_int(p.num_requests)} requests"),
        "Prefill tokens saved": (format_int(p.prefill_tokens_saved), "not recomputed"),
        "Sequences that fit": (f"{format_int(p.max_sequences_with)} (vs {format_int(p.max_sequences_without)})",
                               "with vs without sharing"),
    }


def sampling_metric_values(s: SamplingMemory) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the sampling / beam panel."""
    return {
        f"{s.num_samples} full caches, no paging": (format_bytes(s.bytes_without_paging),
                                                    format_bytes_exact(s.bytes_without_paging)),
        "Paged, prompt blocks shared": (format_bytes(s.bytes_paged_shared),
                                        format_bytes_exact(s.bytes_paged_shared)),
        "Requests that fit, no paging": (format_int(s.requests_without_paging), "per GPU KV budget"),
        "Requests that fit, paged + shared": (format_int(s.requests_paged_shared), "per GPU KV budget"),
    }


def kv_dtype_rows(options: Sequence[KVQuantOption]) -> list[dict]:
    """One row per KV dtype, formatted."""
    return [{
        "KV dtype": o.kv_cache_dtype, "Bits per value": f"{o.bits_per_element:g}",
        "KV per token per GPU": format_bytes(o.kv_cache_bytes_per_token_per_gpu, "auto"),
        "Sequences that fit": format_int(o.max_concurrent_sequences),
        "Users gained": f"{o.users_gained:+,}", "Quality trade-off": o.quality_note, "Sources": o.sources,
    } for o in options]


def swap_metric_values(s: SwapPlan) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the swap panel."""
    recompute = "unknown (no TFLOPS in the catalog)" if s.recompute_seconds is None else \
        f"{s.recompute_seconds * 1000:,.1f} ms"
    return {
        "Sequences in CPU swap": (format_int(s.parked_sequences),
                                           f"{format_bytes(s.cpu_swap_bytes)} ÷ "
                                           f"{format_bytes_exact(s.kv_bytes_per_sequence_per_gpu)} per sequence"),
        "Kept alive (GPU + CPU)": (format_int(s.sequences_in_flight), "resident plus parked"),
        "Swap out (one way)": (f"{s.swap_out_seconds * 1000:,.1f} ms", f"at {s.host_link_gb_s:g} GB/s"),
        "Recompute instead": (recompute, "prefill of the same tokens on the compute roofline"),
    }


def vendor_filter(gpus) -> tuple[list, list[str]]:
    """The "Vendors" multiselect (URL key ``vendors``; empty = every vendor) and the GPUs it keeps."""
    vendors = sorted({g.vendor for g in gpus})
    problems = inputs.check_link({}, {"vendors": (tuple(vendors), None, "vendor", len(vendors))}, ())
    chosen = st.sidebar.multiselect("Vendors", vendors, default=[], key="vendors", bind="query-params",
                                    help="Search only these vendors' GPUs (empty = all).")
    return [g for g in gpus if not chosen or g.vendor in chosen], problems


def gpu_type_filter(gpus) -> tuple[tuple[str, ...], list[str]]:
    """The "GPU types" multiselect (URL key ``gpu_types``, the ``find --gpu-types`` flag; empty = every type) over
    ``gpus`` (what the vendor filter kept), and the link problems. The ids go into the request
    (:attr:`planner.traffic.find_types.FindRequest.gpu_ids`), so only those types are searched. The options
    are ids, not names: a URL-bound multiselect matches the link's values against what it shows."""
    from ui import catalog  # noqa: PLC0415 - the catalog's resolver, for aliases in a link

    ids = tuple(dict.fromkeys(g.id for g in gpus))
    problems = inputs.check_link({}, {"gpu_types": (ids, catalog.resolve_gpu_id, "GPU", len(ids))}, ())
    chosen = st.sidebar.multiselect("GPU types", ids, default=[], key="gpu_types", bind="query-params",
                                    help="Search only these GPU types (empty = every type the vendor filter "
                                         "keeps; `--gpu-types` of `python -m planner find`).")
    return tuple(chosen), problems


def nothing_fits_text(result: FindResult, max_gpus: int) -> str:
    """The "nothing fits" warning with the closest option, reasons and fixes."""
    lines = [f"**Nothing fits** within {format_int(max_gpus)} GPUs."]
    c = result.closest
    if c is not None:
        lines.append(f"Closest: {c.num_gpus} x {md_text(c.gpu_name)} (tensor parallel {c.tensor_parallel_size}, "
                     f"{c.kv_cache_dtype} KV) at ${c.price_per_hour:,.2f}/h, holding about "
                     f"{format_int(c.max_concurrent_sequences)} of {format_int(c.users)} users:")
        lines += [f"- {md_message(r)}" for r in c.reasons]
    if result.suggestions:
        lines.append("\n**Try:**")
        lines += [f"- {md_message(s)}" for s in result.suggestions]
    return "\n".join(lines)


def best_text(result: FindResult) -> str:
    """One sentence on the cheapest setup."""
    s = result.options[0]
    return (f"**Cheapest: {s.num_gpus} x {md_text(s.gpu_name)}** (tensor parallel {s.tensor_parallel_size}, "
            f"{s.data_parallel_size} replica{'s' if s.data_parallel_size > 1 else ''}, {s.kv_cache_dtype} KV) at "
            f"**${s.price_per_hour:,.2f}/h**: holds {format_int(s.max_concurrent_sequences)} users for "
            f"{format_int(s.users)} wanted ({s.margin:.0%} of the KV budget to spare).")


def throughput_rows(est: ThroughputEstimate) -> list[dict]:
    """One row per batch size, formatted."""
    return [{
        "Batch": format_int(p.batch_size), "Time per output token [ms]": f"{p.time_per_output_token_s * 1000:,.2f}",
        "Tokens/s per sequence": f"{p.tokens_per_s_per_sequence:,.1f}",
        "Tokens/s, all sequences": f"{p.aggregate_tokens_per_s:,.1f}",
        "USD per 1M output tokens": None if p.cost_per_million_output_tokens_usd is None else
        f"{p.cost_per_million_output_tokens_usd:,.3f}",
        "Fits in KV": p.fits,
    } for p in est.points]


# --------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------
@reused
def allocation_bars(c: AllocationComparison) -> go.Figure:
    """Reserved vs in use vs wasted KV per scheme, for the same batch (GiB per GPU)."""
    names = [SCHEME_LABELS[u.scheme] for u in c.schemes]
    fig = go.Figure()
    for label, attr in (("Reserved", "reserved_bytes"), ("In use", "used_bytes"), ("Wasted", "wasted_bytes")):
        values = [getattr(u, attr) for u in c.schemes]
        fig.add_bar(x=names, y=[bytes_to_gib(v) for v in values], name=label, marker_color=ALLOCATION_COLOURS[label],
                    hovertext=[format_bytes_exact(v) for v in values],
                    hovertemplate=f"{label}: %{{hovertext}}<extra></extra>")
    budget = bytes_to_gib(max(c.kv_cache_budget_bytes, 0))  # a layout shape: much cheaper than add_hline
    fig.update_layout(
        shapes=[dict(type="line", xref="x domain", x0=0, x1=1, yref="y", y0=budget, y1=budget,
                     line=dict(dash="dash", color="#333333"))],
        annotations=[dict(text=f"KV budget {format_bytes(c.kv_cache_budget_bytes)}", showarrow=False, xref="x domain",
                          x=0, xanchor="left", yref="y", y=budget, yanchor="bottom")])
    fig.update_layout(barmode="group", height=400, yaxis_title="KV cache per GPU [GiB]",
                      title=f"{count_noun(c.naive.num_sequences, 'sequence')} of {format_tokens(c.mean_len)} "
                            f"under a limit of {format_tokens(c.max_model_len)}", **_LAYOUT)
    fig.update_layout(margin=dict(l=10, r=10, t=70, b=10))
    return fig


def _label_side(x: int, xs: Sequence[int]) -> str:
    """``xanchor`` that keeps a label beside a vertical line at ``x`` inside a log x axis over ``xs``."""
    if not xs:
        return "left"
    middle = math.sqrt(max(min(xs), 1) * max(max(xs), 1))
    return "right" if x > middle else "left"


@reused
def allocation_curve_chart(points: Sequence[AllocationPoint], current: int) -> go.Figure:
    """Sequences that fit against max_model_len, per scheme (log x axis)."""
    fig = go.Figure()
    series = (("naive", "naive_max_sequences"), ("paged", "paged_max_sequences"),
              ("paged+prefix", "prefix_max_sequences"))
    for i, (scheme, attr) in enumerate(series):
        pts = [(p.max_model_len, getattr(p, attr)) for p in points if getattr(p, attr) > 0]
        fig.add_scatter(x=[x for x, _ in pts], y=[y for _, y in pts], mode="lines+markers", name=SCHEME_LABELS[scheme],
                        line=dict(color=PALETTE[i], width=3, dash="dot" if scheme == "paged+prefix" else "solid"),
                        hovertext=[f"max_model_len {format_tokens(x)}: {count_noun(y, 'sequence')}" for x, y in pts],
                        hovertemplate="%{hovertext}<extra></extra>")
    # A layout shape (cheaper than add_vline). On a log axis shapes take data values but annotations
    # take log10 of them; add_vline's label sat at 10**current, off the chart.
    fig.update_layout(
        shapes=[dict(type="line", xref="x", x0=current, x1=current, yref="y domain", y0=0, y1=1,
                     line=dict(dash="dash", color="#333333"))],
        annotations=[dict(text="your max_model_len", showarrow=False, xref="x", x=math.log10(max(current, 1)),
                          xanchor=_label_side(current, [p.max_model_len for p in points]), yref="y domain", y=1,
                          yanchor="bottom")])  # above the plot area: never over a line
    fig.update_layout(height=420, xaxis=dict(TOKEN_AXIS, title="max_model_len [tokens; K = 1,024]"),
                      yaxis=dict(title="Sequences that fit per GPU budget", tickformat=",d", rangemode="tozero"),
                      **_LAYOUT)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, x=0), margin=dict(l=10, r=10, t=30, b=10))
    return fig


@reused
def preemption_chart(sim: ConcurrencySimulation, users: int) -> go.Figure:
    """Users against the probability of running out of KV cache (Monte-Carlo)."""
    curve = sim.curve()
    fig = go.Figure(go.Scatter(
        x=[n for n, _ in curve], y=[p for _, p in curve], mode="lines", line=dict(color=PALETTE[3], width=3),
        name="P(out of KV)", hovertext=[f"{format_int(n)} users: {p:.1%}" for n, p in curve],
        hovertemplate="%{hovertext}<extra></extra>"))
    marks = ((sim.guaranteed_users, "guaranteed"), (sim.p5_users, "p5"), (sim.p95_users, "p95"), (users, "your users"))
    fig.update_layout(  # layout shapes: ~60 ms cheaper per rerun than four add_vline calls
        shapes=[dict(type="line", xref="x", x0=value, x1=value, yref="y domain", y0=0, y1=1,
                     line=dict(dash="dot", color="#555555")) for value, _ in marks],
        # Labels above the plot area, in two staggered rows so that close marks (p5, p95) do not overlap.
        annotations=[dict(text=text, showarrow=False, xref="x", x=value, xanchor="center", yref="y domain",
                          y=1.0 if i % 2 == 0 else 1.09, yanchor="bottom")
                     for i, (value, text) in enumerate(sorted(marks))])
    fig.update_layout(height=400, xaxis_title="Concurrent users", yaxis=dict(title="P(out of KV)", tickformat=".0%",
                                                                            range=[0, 1.02]), **_LAYOUT)
    fig.update_layout(showlegend=False, margin=dict(l=10, r=10, t=60, b=10))
    return fig


@reused
def kv_dtype_bars(options: Sequence[KVQuantOption]) -> go.Figure:
    """Sequences that fit per KV dtype."""
    fig = go.Figure(go.Bar(
        x=[o.kv_cache_dtype for o in options], y=[o.max_concurrent_sequences for o in options],
        text=[format_int(o.max_concurrent_sequences) for o in options], textposition="auto",
        marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(options))],
        hovertext=[f"{o.kv_cache_dtype}: {count_noun(o.max_concurrent_sequences, 'sequence')} "
                   f"({o.users_gained:+,})" for o in options], hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(height=340, yaxis_title="Sequences that fit per GPU", showlegend=False, **_LAYOUT)
    return fig


@reused
def sampling_bars(s: SamplingMemory) -> go.Figure:
    """KV of one n-sample / beam request: no paging, paged unshared, paged shared."""
    labels = ("No paging (k full caches)", "Paged, no sharing", "Paged, prompt shared")
    values = (s.bytes_without_paging, s.bytes_paged_unshared, s.bytes_paged_shared)
    fig = go.Figure(go.Bar(x=list(labels), y=[bytes_to_gib(v) for v in values],
                           text=[format_bytes(v) for v in values], textposition="auto",
                           marker_color=[PALETTE[3], PALETTE[1], PALETTE[2]],
                           hovertext=[format_bytes_exact(v) for v in values],
                           hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(height=340, yaxis_title="KV per request [GiB per GPU]", showlegend=False, **_LAYOUT)
    return fig


@reused
def throughput_chart(est: ThroughputEstimate) -> go.Figure:
    """Time per output token and cost per 1M output tokens against batch size (roofline)."""
    batches = [p.batch_size for p in est.points]
    fig = go.Figure()
    fig.add_scatter(x=batches, y=[p.time_per_output_token_s * 1000 for p in est.points], mode="lines+markers",
                    name="time per output token [ms]", line=dict(color=PALETTE[0], width=3),
                    hovertext=[f"batch {format_int(p.batch_size)}: {p.time_per_output_token_s * 1000:,.2f} ms, "
                               f"{p.aggregate_tokens_per_s:,.0f} tokens/s" for p in est.points],
                    hovertemplate="%{hovertext}<extra></extra>")
    costs = [(p.batch_size, p.cost_per_million_output_tokens_usd) for p in est.points
             if p.cost_per_million_output_tokens_usd is not None]
    if costs:
        fig.add_scatter(x=[b for b, _ in costs], y=[c for _, c in costs], mode="lines+markers", yaxis="y2",
                        name="USD per 1M output tokens", line=dict(color=PALETTE[1], width=3, dash="dot"),
                        hovertext=[f"batch {format_int(b)}: ${c:,.3f} per 1M tokens" for b, c in costs],
                        hovertemplate="%{hovertext}<extra></extra>")
    fig.update_layout(height=420, xaxis=dict(type="log", title="Batch (concurrent sequences per replica)",
                                             tickvals=[1 << k for k in range(0, 15)]),
                      yaxis=dict(title="Time per output token [ms]", rangemode="tozero"),
                      yaxis2=dict(title="USD per 1M output tokens", overlaying="y", side="right", type="log",
                                  dtick=1, tickformat="$.2~f", showgrid=False),
                      **_LAYOUT)
    return fig
