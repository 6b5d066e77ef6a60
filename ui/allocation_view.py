"""The Allocation page's bundle, text, tables and charts: naive vs paged vs prefix-cached KV, the
Monte-Carlo users, prefix sharing, parallel sampling, KV quantization and swap (split from
:mod:`ui.traffic`, which keeps the traffic pages' inputs and re-exports these names).

Every size on screen goes through :mod:`ui.format`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import plotly.graph_objects as go

from planner.budget import PlanRequest, sequence_profiles
from planner.model import ModelSpec
from planner.pipeline import planning_stage
from planner.sweep import context_points
from planner.traffic.allocation import (
    AllocationComparison,
    AllocationPoint,
    allocation_curve,
    allocation_for_model,
    slice_waste,
)
from planner.traffic.lengths_csv import LengthTable, workload_from_lengths
from planner.traffic.kvquant import KVQuantOption, compare_kv_dtypes
from planner.traffic.offload import SwapPlan, swap_plan
from planner.traffic.prefix import PrefixSharing, SamplingMemory, parallel_sampling, prefix_caching
from planner.traffic.simulation import ConcurrencySimulation, simulate_concurrency
from planner.traffic.throughput import active_parameters, prefill_seconds
from planner.traffic.workload import Fixed, LogNormal, Workload
from ui import data
from ui.charts import ALLOCATION_COLOURS, PALETTE, TOKEN_AXIS, chart
from ui.format import (
    bytes_to_gib,
    count_noun,
    format_bytes,
    format_bytes_exact,
    format_int,
    format_tokens,
    gib_to_bytes,
)
from ui.tiles import show_tiles, tiles_from_values

CHART_LAYOUT = dict(margin=dict(l=10, r=10, t=40, b=10), legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
                    hoverlabel=dict(namelength=-1))
"""Layout shared by the traffic pages' charts (this module's and :mod:`ui.find_view`'s)."""

MONTE_CARLO_TRIALS = 1000
"""Trials per simulation on the pages."""


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
    extra_tokens: int = 0
    """Tokens the serving features add to every sequence beside its text (images, draft slots), which the
    schemes' figures count (:class:`planner.serving.features.ShiftedProfile`)."""


def allocation_view(model: ModelSpec, gpu, request: PlanRequest, *, mean_len: int, prefix_len: int,
                    prefix_hit_fraction: float, workload: Workload, users: int, seed: int, num_samples: int,
                    swap_space_gib: float, host_link_gb_s: float, pipeline_parallel_size: int = 1) -> AllocationView:
    """Run every planner call of the Allocation page.

    ``request.context_len`` is ``max_model_len``. ``pipeline_parallel_size``: the link's stages
    (:func:`ui.feature_line.link_stages`); every per-GPU figure is then the stage's that
    :func:`planner.pipeline.plan_pipeline` reports (:func:`planner.pipeline.planning_stage`), as Home plans them,
    and the host memory and recompute time stay the whole replica's. Raises ValueError with the
    planner's message when an input is out of range.
    """
    pp = pipeline_parallel_size
    comparison = allocation_for_model(model, gpu.framework_memory_bytes, request, mean_len=mean_len,
                                      prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction, gpu_id=gpu.id,
                                      pipeline_parallel_size=pp)
    stage, group = planning_stage(model, gpu.framework_memory_bytes, request, gpu.id, pipeline_parallel_size=pp)
    exact, paged = sequence_profiles(stage, gpu.framework_memory_bytes, group, gpu_id=gpu.id)  # features on
    budget = comparison.kv_cache_budget_bytes
    top = max(data.curve_top([model]), request.context_len, mean_len)  # the Memory curves pages' end (QA: 1M)
    curve = allocation_curve(exact, paged, budget, mean_len=mean_len,
                             max_model_lens=context_points(mean_len, max(top, mean_len + 1), 32),
                             prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction,
                             prefill_tokens=comparison.prefill_tokens)
    extra_tokens = getattr(paged, "extra_tokens", 0)  # images / draft slots: the schemes' figures count them
    try:  # the 32-slice picture of a text-only sequence (with extra tokens the table's figures speak)
        slices = None if extra_tokens else slice_waste(mean_len, request.context_len, 32)
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
                                  gpu_id=gpu.id, pipeline_parallel_size=pp)
    recompute = (prefill_seconds(active_parameters(model), mean_len, gpu.bf16_dense_tflops, request.num_gpus)
                 if gpu.bf16_dense_tflops else None)
    swap = swap_plan(kv_bytes_per_sequence_per_gpu=paged.bytes_per_sequence(mean_len),
                     gpu_max_sequences=comparison.paged.max_sequences, cpu_swap_bytes=gib_to_bytes(swap_space_gib),
                     host_link_gb_s=host_link_gb_s, recompute_seconds=recompute, num_gpus=request.num_gpus)
    return AllocationView(comparison=comparison, curve=curve, slices=slices, simulation=simulation,
                          preemption_at_users=preempt, prefix=prefix, sampling=sampling, kv_dtypes=kv_dtypes,
                          swap=swap, workload=workload, users=users, extra_tokens=extra_tokens)


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
            f"{format_int(c.max_model_len)} of each reservation" if not c.pooled else
            f"Share of the naive reservation never written: the {format_int(c.max_model_len - c.mean_len)} tokens "
            "beyond each sequence in the caches without a window, priced in the fp8_ds_mla pool pages vLLM stores"),
        "Paged: unused": (
            f"{c.paged.unused_fraction:.1%}",
            "Share of the paged reservation never written: " + paged_waste_text(c)),
    }


def paged_waste_text(c: AllocationComparison) -> str:
    """What the paged scheme's unused share is made of (:mod:`planner.traffic.allocation` design note 5)."""
    if c.pooled:
        return ("the unfilled tail of each cache group's last pool block and the block vLLM keeps beyond each "
                "window; the windows' and compressor states' tokens count as used, every scheme priced in the "
                "fp8_ds_mla pool pages vLLM stores")
    return "under one block per sequence"


def allocation_caption(c: AllocationComparison) -> str:
    """The caption under the naive-vs-paged table: how each scheme is priced, and its sources."""
    paged = (f"blocks of {format_int(c.block_size)} tokens on demand, waste under one block per sequence"
             if not c.pooled else f"blocks on demand, waste: {paged_waste_text(c)}")
    naive = ("each sequence reserves max_model_len tokens up front; unused = 1 − mean_len / max_model_len"
             if not c.pooled else "each sequence reserves max_model_len tokens up front, windows and compressor "
             "states at their caps")
    return (f"Naive: {naive}. Paged: {paged}. Prefix: requests sharing a prefix store its full blocks once. Per "
            "GPU, KV budget from the plan. Sources: Kwon et al., SOSP 2023 (PagedAttention); vLLM "
            "vllm/v1/core/kv_cache_manager.py.")


METRICS_PER_ROW = 3
"""Metrics per row: four or five cut labels such as "Users, 95th percentile" at 1,400 px."""


def metrics_row(values: dict[str, tuple[str, str]]) -> None:
    """One row of bordered metrics."""
    show_tiles(tiles_from_values(values), METRICS_PER_ROW)


def allocation_rows(c: AllocationComparison) -> list[dict]:
    """One row per scheme, formatted."""
    return [{
        "Scheme": SCHEME_LABELS[u.scheme], "Sequences in the batch": format_int(u.num_sequences),
        "Reserved": format_bytes(u.reserved_bytes), "In use": format_bytes(u.used_bytes),
        "Wasted": format_bytes(u.wasted_bytes), "Unused share": f"{u.unused_fraction:.1%}",
        "Sequences that fit": format_int(u.max_sequences),
    } for u in c.schemes]


def users_same_as(c: AllocationComparison) -> str:
    """The last words of the page's users line (:func:`ui.feature_line.users_line`): ``as on Home``, or, where
    naive reservation of exact bytes holds another count than Home's users (``c.naive_note``), which count
    differs and by how much (QA: "Naive: users 83" under "as on Home" where Home said 81)."""
    if not c.naive_note:
        return "as on Home"
    return (f"as on Home, except Naive's {format_int(c.naive.max_sequences)}: Home's "
            f"{format_int(c.max_concurrent_sequences)} at {format_tokens(c.max_model_len)} pages each sequence as "
            "vLLM does, where Naive reserves its exact bytes (the Naive vs paged tab says why)")


def slice_text(view: AllocationView) -> str | None:
    """The "N of 32 slices" sentence, when ``max_model_len`` divides into 32 slices; with serving features that
    add tokens to each sequence, what they add (the table's figures count them)."""
    s = view.slices
    if view.extra_tokens:
        return (f"Each sequence also holds {format_tokens(view.extra_tokens)} the serving features add (image and "
                "draft-token slots) beside its text; the table's reserved, used and wasted figures count them.")
    if s is None:
        return None
    text = (f"Cut the naive reservation of {format_tokens(s.max_model_len)} into {s.num_slices} slices of "
            f"{format_tokens(s.slice_tokens)} each: a sequence of {format_tokens(s.num_tokens)} fills "
            f"{s.used_slices} and leaves **{s.wasted_slices} of {s.num_slices}** empty.")
    in_bytes = view.comparison.naive.unused_fraction
    if abs(in_bytes - s.wasted_slices / s.num_slices) > SLICE_BYTES_GAP:
        text += (f" The slices count tokens; in bytes {in_bytes:.1%} of the reservation is unused (the table's "
                 "Unused share), as the model's sliding-window or compressed layers do not grow with every token.")
    return text


SLICE_BYTES_GAP = 0.05
"""How far the byte share the table gives may sit from the slices' token share before :func:`slice_text` says the
slices count token slots, not bytes [fraction] (QA, stop 42: DeepSeek-V4's windows and compressed layers)."""


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
        f"P(out of KV) at {count_noun(view.users, 'user')}": (f"{view.preemption_at_users:.1%}",
                                                           "share of trials where they do not all fit"),
    }


def prefix_metric_values(p: PrefixSharing) -> dict[str, tuple[str, str]]:
    """Metric label -> (value, help) for the prefix-caching panel."""
    return {
        "Shared per request": (format_tokens(p.shared_tokens),
                               f"⌊{format_int(p.prefix_len)} / {p.block_size}⌋ full blocks; the partial last "
                               f"block is not shared"),
        "KV saved": (format_bytes(p.bytes_saved), f"{format_bytes_exact(p.bytes_saved)} for {p.num_hits} of "
                                                  f"{count_noun(p.num_requests, 'request')}"),
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
        "KV dtype": o.kv_cache_dtype, "Bits per value": f"{o.bits_per_element:.3g}",
        "KV per token per GPU": format_bytes(o.kv_cache_bytes_per_token_per_gpu, "auto"),
        "Sequences that fit": format_int(o.max_concurrent_sequences),
        "Users gained": f"{o.users_gained:+,}", "Quality trade-off": o.quality_note,
    } for o in options]


def kv_dtype_sources(options: Sequence[KVQuantOption]) -> str:
    """The sources of :func:`kv_dtype_rows`, one clause per KV dtype (a caption under the table, so the
    table's width goes to its "Quality trade-off" notes)."""
    return "Sources: " + "; ".join(f"{o.kv_cache_dtype}: {o.sources}" for o in options) + "."


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


# --------------------------------------------------------------------------
# Charts
# --------------------------------------------------------------------------
@chart
def allocation_bars(c: AllocationComparison, extra_tokens: int = 0) -> go.Figure:
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
    length = (f"{format_int(c.mean_len)} + {format_tokens(extra_tokens)}" if extra_tokens  # text + image / draft
              else format_tokens(c.mean_len))
    fig.update_layout(barmode="group", height=400, yaxis_title="KV cache per GPU [GiB]",
                      title=dict(text=f"{count_noun(c.naive.num_sequences, 'sequence')} of {length}"
                                      f"<br>under a limit of {format_tokens(c.max_model_len)}",
                                 yref="container", y=1, yanchor="top", pad=dict(t=28)), **CHART_LAYOUT)
    # the title at the top of the figure: placed by default in the middle of the top margin, it ran over the
    # legend, which wraps to two rows above the plot at half a page wide; plotly.js anchors a two-line title's
    # top by its last line, so the padding holds the first line (8 px cut its top off)
    # the title on two lines (half a page wide at 1,280 px); left, right and bottom: what automargin grows to for
    # the axis and the slanted names, so the chart is drawn once (ui.chart_look)
    fig.update_layout(margin=dict(l=80, r=76, t=115, b=128))
    return fig


def _label_side(x: int, xs: Sequence[int]) -> str:
    """``xanchor`` that keeps a label beside a vertical line at ``x`` inside a log x axis over ``xs``."""
    if not xs:
        return "left"
    middle = math.sqrt(max(min(xs), 1) * max(max(xs), 1))
    return "right" if x > middle else "left"


@chart
def allocation_curve_chart(points: Sequence[AllocationPoint], current: int) -> go.Figure:
    """Sequences that fit against max_model_len, per scheme (log x axis)."""
    fig = go.Figure()
    series = (("naive", "naive_max_sequences"), ("paged", "paged_max_sequences"),
              ("paged+prefix", "prefix_max_sequences"))
    for i, (scheme, attr) in enumerate(series):
        pts = [(p.max_model_len, getattr(p, attr)) for p in points if getattr(p, attr) > 0]
        fig.add_scatter(x=[x for x, _ in pts], y=[y for _, y in pts], mode="lines", name=SCHEME_LABELS[scheme],
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
                      **CHART_LAYOUT)
    # the legend at the figure's bottom edge (yref container), under the slanted ticks and the axis title: at
    # y=-0.22 of the plot it sat over the title at half a page wide (1,280 px, QA)
    fig.update_layout(legend=dict(orientation="h", yref="container", yanchor="bottom", y=0, x=0),
                      margin=dict(l=86, r=24, t=36, b=150))
    return fig


@chart
def preemption_chart(sim: ConcurrencySimulation, users: int) -> go.Figure:
    """Users against the probability of running out of KV cache (Monte-Carlo)."""
    curve = sim.curve()
    fig = go.Figure(go.Scatter(
        x=[n for n, _ in curve], y=[p for _, p in curve], mode="lines", line=dict(color=PALETTE[3], width=3),
        name="P(out of KV)", hovertext=[f"{count_noun(n, 'user')}: {p:.1%}" for n, p in curve],
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
                                                                            range=[0, 1.02]), **CHART_LAYOUT)
    fig.update_layout(showlegend=False, margin=dict(l=96, r=16, t=66, b=80))
    return fig


@chart
def kv_dtype_bars(options: Sequence[KVQuantOption]) -> go.Figure:
    """Sequences that fit per KV dtype."""
    fig = go.Figure(go.Bar(
        x=[o.kv_cache_dtype for o in options], y=[o.max_concurrent_sequences for o in options],
        text=[format_int(o.max_concurrent_sequences) for o in options], textposition="auto",
        marker_color=[PALETTE[i % len(PALETTE)] for i in range(len(options))],
        hovertext=[f"{o.kv_cache_dtype}: {count_noun(o.max_concurrent_sequences, 'sequence')} "
                   f"({o.users_gained:+,})" for o in options], hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(height=340, yaxis_title="Sequences that fit per GPU", showlegend=False, **CHART_LAYOUT)
    fig.update_layout(margin=dict(l=92, r=16, t=46, b=50))  # what automargin grows to: drawn once (ui.chart_look)
    return fig


@chart
def sampling_bars(s: SamplingMemory) -> go.Figure:
    """KV of one n-sample / beam request: no paging, paged unshared, paged shared."""
    labels = ("No paging (k full caches)", "Paged, no sharing", "Paged, prompt shared")
    values = (s.bytes_without_paging, s.bytes_paged_unshared, s.bytes_paged_shared)
    fig = go.Figure(go.Bar(x=list(labels), y=[bytes_to_gib(v) for v in values],
                           text=[format_bytes(v) for v in values], textposition="auto",
                           marker_color=[PALETTE[3], PALETTE[1], PALETTE[2]],
                           hovertext=[format_bytes_exact(v) for v in values],
                           hovertemplate="%{hovertext}<extra></extra>"))
    fig.update_layout(height=340, yaxis_title="KV per request [GiB per GPU]", showlegend=False, **CHART_LAYOUT)
    fig.update_layout(margin=dict(l=92, r=16, t=46, b=50))  # what automargin grows to: drawn once (ui.chart_look)
    return fig
