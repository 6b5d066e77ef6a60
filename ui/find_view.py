"""The Find a GPU setup page's bundle, text, filters and throughput chart (split from :mod:`ui.traffic`,
which keeps the traffic pages' inputs and re-exports these names; the result table is :mod:`ui.find_table`).
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from model_catalog.gpus import GPU
from planner.model import ModelSpec
from planner.text import quote
from planner.traffic.find_types import FindRequest, FindResult, Setup, margin_of
from planner.traffic.lengths_csv import LengthTable
from planner.traffic.reverse import find_setups
from planner.traffic.throughput import ThroughputEstimate
from planner.traffic.throughput import setup_throughput as planner_setup_throughput
from planner.traffic.workload import Workload
from ui import inputs
from ui.allocation_view import CHART_LAYOUT, build_workload
from ui.charts import PALETTE, chart
from ui.find_table import FIND_TOP
from ui.format import count_noun, format_int, gib_to_bytes, md_message, md_text

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
    """:func:`planner.reverse.find_setups` over the catalog GPUs, kept per server for the last
    :data:`FIND_CACHE_ENTRIES` distinct inputs (a rerun that changes none of them, such as a page turn of the
    table, or a value set back, skips the 0.3-1 s search)."""
    return _cached_find(model, tuple(gpus), request)


FIND_CACHE_ENTRIES = 32
"""Distinct (model, GPUs, request) searches :func:`run_find` keeps; each result is about 60 KB pickled."""

KEYED_BY_REPR = {ModelSpec: repr, FindRequest: repr, GPU: repr}
"""How :func:`run_find`'s cache hashes its arguments: by their ``repr``, which names every field (no field of
these types, or of the dataclasses inside them, is left out of it: ``tests/test_find_cache_key.py``). Streamlit's
default hashes a dataclass through ``dataclasses.asdict``, a deep copy (streamlit/runtime/caching/hashing.py,
``_CacheFuncHasher._to_bytes``): 6 ms of each Find rerun went to hashing a cached search's key, 0.3 ms by repr
(issue 27 speed)."""


@st.cache_data(max_entries=32, show_spinner=False,  # = FIND_CACHE_ENTRIES (a literal: tests/test_cache_bounds.py)
               hash_funcs=KEYED_BY_REPR)
def _cached_find(model: ModelSpec, gpus: tuple, request: FindRequest) -> FindResult:
    return find_setups(model, list(gpus), request)


def shown_setup(result: FindResult) -> Setup | None:
    """The setup the throughput chart describes: the cheapest, else the closest."""
    return result.options[0] if result.options else result.closest


def setup_throughput(model: ModelSpec, gpu, setup: Setup, request: FindRequest,
                     workload: Workload) -> ThroughputEstimate:
    """:func:`planner.traffic.throughput.setup_throughput` on a catalog GPU (its memory, bandwidth, bf16 TFLOPS,
    price)."""
    return planner_setup_throughput(model, setup, request, workload, gpu_memory_bytes=gpu.framework_memory_bytes,
                                    bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=gpu.bf16_dense_tflops,
                                    price_usd_per_gpu_hour=gpu.price_usd_per_hour, gpu_id=gpu.id)


def vendor_filter(gpus) -> tuple[list, list[str]]:
    """The "Vendors" multiselect (URL key ``vendors``; empty = every vendor) and the GPUs it keeps."""
    vendors = sorted({g.vendor for g in gpus})
    problems = inputs.check_link({}, {"vendors": (tuple(vendors), _vendor_resolver(vendors), "vendor",
                                                  len(vendors))}, ())
    chosen = st.sidebar.multiselect("Vendors", vendors, default=[], key="vendors", bind="query-params",
                                    help="Search only these vendors' GPUs (empty = all).")
    return [g for g in gpus if not chosen or g.vendor in chosen], problems


def _vendor_resolver(vendors: list[str]):
    """A link's vendor name in any case -> the catalog's spelling (``nvidia`` -> ``NVIDIA``, as GPU ids ignore case;
    QA: ``vendors=nvidia,amd`` was refused as unknown vendor 'nvidia'); ValueError for an unknown one."""
    by_lower = {v.lower(): v for v in vendors}

    def resolve(raw: str) -> str:
        if (found := by_lower.get(raw.strip().lower())) is None:
            raise ValueError(f"unknown vendor {quote(raw)}; choose one of {', '.join(vendors)}")
        return found
    return resolve


def gpu_type_filter(gpus) -> tuple[tuple[str, ...], list[str]]:
    """The "GPU types" multiselect (URL key ``gpu_types``, the ``find --gpu-types`` flag; empty = every type) over
    ``gpus`` (what the vendor filter kept), and the link problems. The ids go into the request
    (:attr:`planner.traffic.find_types.FindRequest.gpu_ids`), so only those types are searched. It shows the
    catalog names, as the grid does, and keeps ids in the URL: :func:`ui.inputs.picker` (a URL-bound widget would
    write the shown names into the link)."""
    from ui import catalog  # noqa: PLC0415 - the catalog's resolver, for aliases in a link

    ids = tuple(dict.fromkeys(g.id for g in gpus))
    problems = inputs.check_link({}, {"gpu_types": (ids, catalog.resolve_gpu_id, "GPU", len(ids))}, ())
    names = {g.id: g.name for g in gpus}
    chosen = inputs.picker(st.sidebar, "gpu_types", "GPU types", ids, names, [], multi=True,
                           help="Search only these GPU types (empty = every type the vendor filter keeps; "
                                "`--gpu-types` of `python -m planner find`).")
    return tuple(chosen), problems


def nothing_fits_text(result: FindResult, max_gpus: int) -> str:
    """The "nothing fits" warning with the closest option, reasons and fixes."""
    lines = [f"**Nothing fits** within {count_noun(max_gpus, 'GPU')}."
             + (f" {md_message(result.nothing_fits_cause)}." if result.nothing_fits_cause else "")]
    c = result.closest
    if c is not None:
        lines.append(f"Closest: {format_int(c.num_gpus)} x {md_text(c.gpu_name)} ({layout_text(c)}, "
                     f"{c.kv_cache_dtype} KV) at ${c.price_per_hour:,.2f}/h, holding about "
                     f"{format_int(c.max_concurrent_sequences)} of {count_noun(c.users, 'user')}:")
        lines += [f"- {md_message(r)}" for r in c.reasons]
    if result.suggestions:
        lines.append("\n**Try:**")
        lines += [f"- {md_message(s)}" for s in result.suggestions]
    return "\n".join(lines)


def layout_text(s: Setup) -> str:
    """``"tensor parallel 8, 2 replicas"``, ``"DP+EP: 8 ranks of 1 GPU"``, ``"DCP 8 on tensor parallel 8, 1
    replica"`` or ``"disaggregated: decode tensor parallel 8 x 1 rank"``: a setup's layout in words."""
    if s.kind == "DP+EP":
        return f"DP+EP: {count_noun(s.data_parallel_size, 'rank')} of {count_noun(s.tensor_parallel_size, 'GPU')}"
    if s.kind == "disaggregated":
        return (f"disaggregated: decode tensor parallel {s.tensor_parallel_size} x "
                f"{count_noun(s.data_parallel_size, 'rank')}")
    dcp = f"DCP {s.decode_context_parallel_size} on " if s.kind == "DCP" else ""
    return f"{dcp}tensor parallel {s.tensor_parallel_size}, {count_noun(s.data_parallel_size, 'replica')}"


def best_text(result: FindResult) -> str:
    """One sentence on the cheapest setup."""
    s = result.options[0]
    return (f"**Cheapest: {format_int(s.num_gpus)} x {md_text(s.gpu_name)}** ({layout_text(s)}, "
            f"{s.kv_cache_dtype} KV) at "
            f"**${s.price_per_hour:,.2f}/h**: holds {count_noun(s.max_concurrent_sequences, 'user')} for "
            f"{format_int(s.users)} wanted ({s.margin:.0%} of {margin_of(s)} to spare).")


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


@chart  # drawn once, in the app's look, like every other chart (ui.chart_look)
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
                      **CHART_LAYOUT)
    return fig
