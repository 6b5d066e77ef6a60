"""Inputs and page blocks of the Disaggregation page: prefill / decode pools (:func:`planner.scale.plan_disagg`).

The page stays thin: it reads these widgets (keys = the ``python -m planner disagg`` flags with
underscores, bound to the URL), builds each pool's request the way the CLI does
(``planner/cli/scale.py``: the shared flags, then ``--prefill-*`` / ``--decode-*``; decode context
parallel on the decode pool only), calls the planner and renders what it returns. Every size on
screen goes through :mod:`ui.format`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import streamlit as st

from planner.budget import MAX_CONTEXT_SEARCH_LIMIT
from planner.engines.profiles import DEFAULT_ENGINE, ENGINE_CHOICES, ENGINE_PROFILES, resolve_engine_name
from planner.diagnose import Fix
from planner.engines.rank_bar import rank_bar
from planner.engines.shared_gpu import reported_memory_bytes
from planner.serving.features import with_engine_defaults
from planner.engines.types import EngineRequest
from planner.fixes import CheckedFix, short_label
from planner.scale import DEFAULT_LINK, LINKS, PoolRequest, ScaleRequest
from planner.scale.deploy import node_commands
from planner.scale.links import TRANSFER_MS_DIGITS
from planner.engines.launch import SEQUENCE_FLAGS
from ui import inputs, views
from ui.budget_bar import OVER_THE_CARD, RANK_COLOURS, segments_bar_html
from ui.format import (
    count_noun,
    decimal_format,
    format_bytes,
    format_bytes_exact,
    format_command,
    format_duration,
    format_int,
    format_ms,
    md_message,
    shorten,
)
from ui.inputs import NumberField, PlanInputs
from ui.number_fields import DEFAULT_USERS
from ui.serving import raw_config
from ui.tiles import show_tiles, tiles_from_values

SCALE_ENGINES: tuple[str, ...] = tuple(e for e in ENGINE_CHOICES if ENGINE_PROFILES[e].family in ("vllm", "sglang"))
"""Engines whose data / expert parallel flags the planner models (vLLM and SGLang profiles)."""

LINK_IDS: tuple[str, ...] = tuple(x.id for x in LINKS)

_OPTIONAL = "(empty = shared)"

DISAGG_FIELDS: dict[str, NumberField] = {
    f.key: f
    for f in (
        NumberField(key="users", label="Concurrent users", min_value=1, max_value=1_000_000, default=DEFAULT_USERS,
                    step=16, unit="users", help="Requests in flight at once, each user sending the next when one "
                                                "ends (`--users`)."),
        NumberField(key="prompt_len", label="Prompt length [tokens]", min_value=1, max_value=MAX_CONTEXT_SEARCH_LIMIT,
                    default=4096, step=512, unit="tokens", help="Tokens the prefill pool computes (`--prompt-len`)."),
        NumberField(key="output_len", label="Output length [tokens]", min_value=1, max_value=MAX_CONTEXT_SEARCH_LIMIT,
                    default=512, step=128, unit="tokens", help="Tokens the decode pool generates (`--output-len`)."),
        NumberField(key="ttft_ms", label="TTFT target [ms]", min_value=0.01, max_value=1_000_000.0, default=2000.0,
                    step=100.0, is_float=True, unit="ms",
                    help="Time to first token: prefill plus the KV transfer (`--ttft-ms`)."),
        NumberField(key="tpot_ms", label="TPOT target [ms]", min_value=0.01, max_value=100_000.0, default=50.0,
                    step=5.0, is_float=True, unit="ms",
                    help="Time per output token of the decode pool; it caps the decode batch (`--tpot-ms`)."),
        NumberField(key="tensor_parallel_size", label="Tensor parallel size (both pools) (empty = fewest GPUs)",
                    min_value=1, max_value=64, default=None, step=1, unit="GPUs",
                    help="GPUs one attention rank is split over (`-tp`); empty: each pool gets the size, among those "
                         "at which its engine starts and meets its target, that needs the fewest GPUs for the users "
                         "(ties: the smaller)."),
        NumberField(key="data_parallel_size", label="Data parallel size (both pools)", min_value=1, max_value=1024,
                    default=1, step=1, unit="ranks",
                    help="vLLM `-dp`: ranks of one launch, each with its own KV pool and scheduler."),
        NumberField(key="decode_context_parallel_size", label="Decode context parallel size", min_value=1,
                    max_value=64, default=1, step=1, unit="GPUs",
                    help="vLLM `-dcp`, decode pool only: each request's KV split along tokens inside the "
                         "tensor-parallel group."),
        NumberField(key="dp_size", label="Data parallel size (both pools)", min_value=1, max_value=1024, default=1,
                    step=1, unit="ranks",
                    help="SGLang `--dp-size` (with DP attention: attention ranks inside `--tp`)."),
        NumberField(key="ep_size", label="Expert parallel size", min_value=1, max_value=1024, default=1, step=1,
                    unit="GPUs", help="SGLang `--ep-size`: routed experts spread over this many GPUs."),
        *(NumberField(key=f"{role}_{kind}_parallel_size", label=f"{role.capitalize()} {kind} parallel {_OPTIONAL}",
                      min_value=1, max_value=1024 if kind == "data" else 64, default=None, step=1,
                      unit="ranks" if kind == "data" else "GPUs",
                      help=f"The {role} pool's own size (`--{role}-{kind}-parallel-size`); empty = the shared one.")
          for role in ("prefill", "decode") for kind in ("tensor", "data")),
    )
}
"""The page's numeric inputs by key (= the CLI flag with underscores)."""

POOL_KEYS = ("prefill_tensor_parallel_size", "prefill_data_parallel_size", "decode_tensor_parallel_size",
             "decode_data_parallel_size")
LOAD_KEYS = ("users", "prompt_len", "output_len", "ttft_ms", "tpot_ms")
FAMILY_NUMBERS = {"vllm": ("tensor_parallel_size", "data_parallel_size", "decode_context_parallel_size"),
                  "sglang": ("tensor_parallel_size", "dp_size", "ep_size")}
FAMILY_SWITCHES = {"vllm": ("enable_expert_parallel",), "sglang": ("enable_dp_attention",)}
_SWITCH_LABELS = {"enable_expert_parallel": ("Expert parallel (`--enable-expert-parallel`)",
                                             "vLLM: the routed experts split whole over the dp x tp GPUs."),
                  "enable_dp_attention": ("DP attention (`--enable-dp-attention`)",
                                          "SGLang: data-parallel attention ranks inside the tensor-parallel group.")}


@dataclass(frozen=True, kw_only=True)
class DisaggInputs:
    """The page's sidebar after a run (field names are the URL keys)."""

    engine: str
    link: str
    numbers: dict
    switches: dict

    @property
    def family(self) -> str:
        """``vllm`` or ``sglang``."""
        return ENGINE_PROFILES[self.engine].family


def check_numbers(keys) -> list[str]:
    """Validate the link's values of ``keys`` (:data:`DISAGG_FIELDS`) before the widgets exist; a bad one is
    dropped (the widget shows its default) and described, as :func:`ui.inputs.check_link` does."""
    bad = inputs.link_number_problems(keys, DISAGG_FIELDS)  # the shared rules and wording
    inputs.rewrite_link({key: None for key, _, _ in bad}, ())
    return [f"{wrong}. {fix}" for _, wrong, fix in bad]


def _tensor_parallel_from_gpus() -> list[str]:
    """A plan link's ``num_gpus`` (Home's 'GPUs per replica') read once as this page's shared tensor parallel
    size, as ``disagg --num-gpus`` is ("GPUs per tensor-parallel group", planner/cli); the page dropped it unsaid
    and sized both pools at tensor parallel 1 (QA: Qwen3.6-35B-A3B on 2 x H100 from Home became 24 GPUs of one).
    A link that sets ``tensor_parallel_size`` keeps it; one with pipeline stages, which this page does not
    model, or a count out of range is named instead. Returns the link problems."""
    params = st.query_params
    gpus = (params.get_all("num_gpus") or [""])[-1]
    if not gpus or params.get_all("tensor_parallel_size"):
        return []
    stages = (params.get_all("pipeline_parallel_size") or ["1"])[-1]
    field = DISAGG_FIELDS["tensor_parallel_size"]
    if stages.strip() != "1" or inputs.number_problem(field, gpus):
        return [f"Link parameter `num_gpus={shorten(gpus)}`"
                + (f" with `pipeline_parallel_size={shorten(stages)}`" if stages.strip() != "1" else "")
                + f" was not read: this page splits each pool by tensor parallel alone, from {field.min_value} to "
                f"{field.max_value} GPUs. Set '{field.label}' in the sidebar."]
    inputs.rewrite_link({"tensor_parallel_size": [str(int(gpus))]}, ())
    return []


def _number(container, key: str, default=None):
    field = DISAGG_FIELDS[key]
    default = field.default if default is None else default
    if field.is_float:
        return container.number_input(field.label, min_value=float(field.min_value), max_value=float(field.max_value),
                                      value=None if default is None else float(default),
                                      step=float(field.step), format="%.2f", key=key, help=field.help,
                                      bind="query-params")
    return container.number_input(field.label, min_value=int(field.min_value), max_value=int(field.max_value),
                                  value=None if default is None else int(default), step=int(field.step),
                                  key=key, help=field.help, bind="query-params")


def load_defaults_from_link() -> tuple[dict[str, int], str | None]:
    """The page's users and lengths from a plan link (``context_len``, ``batch_size``: the Find page's rule,
    :func:`ui.traffic.find_defaults_from_link`), kept where they are in this page's ranges, and the sentence
    that says so (None when the link sets none)."""
    from ui.traffic import find_defaults_from_link  # noqa: PLC0415 - ui.traffic imports the page helpers

    found, sentence = find_defaults_from_link()
    kept = {k: v for k, v in found.items()
            if DISAGG_FIELDS[k].min_value <= v <= DISAGG_FIELDS[k].max_value}
    return kept, sentence if kept == found and kept else None


def _other_family_problems(family: str) -> list[str]:
    """A sentence per link key that belongs to the other engine family's flags (left unread)."""
    other = "sglang" if family == "vllm" else "vllm"
    keys = [k for k in (*FAMILY_NUMBERS[other], *FAMILY_SWITCHES[other])
            if k not in FAMILY_NUMBERS[family] and k in st.query_params]
    if family == "sglang":
        keys += [k for k in ("decode_context_parallel_size",) if k in st.query_params and k not in keys]
    return [f"Link parameter `{k}` is a {'SGLang' if other == 'sglang' else 'vLLM'} flag; the chosen engine "
            f"does not read it, so it was ignored. Pick that engine, or use the {family} inputs in the sidebar."
            for k in dict.fromkeys(keys)]


def disagg_inputs() -> tuple[DisaggInputs, list[str]]:
    """Engine, link, load and parallel inputs of the Disaggregation page (URL-bound), and the link problems."""
    problems = inputs.check_link({"engine": (SCALE_ENGINES, resolve_engine_name, "engine", DEFAULT_ENGINE),
                                  "link": (LINK_IDS, None, "link", DEFAULT_LINK)}, {}, ())
    problems += check_numbers(DISAGG_FIELDS)
    problems += _tensor_parallel_from_gpus()
    bar = st.sidebar
    engine = bar.selectbox("Serving engine", SCALE_ENGINES, index=SCALE_ENGINES.index(DEFAULT_ENGINE), key="engine",
                           bind="query-params",
                           help="Data / expert parallel flags are modelled for vLLM and SGLang (`--engine`).")
    family = ENGINE_PROFILES[engine].family
    problems += _other_family_problems(family)
    numbers: dict = {}
    carried, _ = load_defaults_from_link()
    with bar.expander("Users and targets", expanded=True):
        for key in LOAD_KEYS:
            numbers[key] = _number(st, key, carried.get(key))
    switches: dict = {}
    with bar.expander("Parallel sizes", expanded=True):
        for key in FAMILY_NUMBERS[family]:
            numbers[key] = _number(st, key)
        for key in FAMILY_SWITCHES[family]:
            label, help_text = _SWITCH_LABELS[key]
            switches[key] = st.toggle(label, key=key, bind="query-params", help=help_text)
        for key in POOL_KEYS:
            numbers[key] = _number(st, key)
    link = bar.selectbox("Link between the pools", LINK_IDS, index=LINK_IDS.index(DEFAULT_LINK), key="link",
                         bind="query-params",
                         help="Each prefill GPU sends its KV shard to its decode peer (`--link`): "
                              + "; ".join(f"{x.id}: {x.name}, {x.gb_s_per_direction:g} GB/s" for x in LINKS))
    return DisaggInputs(engine=engine, link=link, numbers=numbers, switches=switches), problems


def prefill_dcp_left_out(knobs: DisaggInputs) -> list[tuple[str, str]]:
    """``[(what, why)]`` naming a decode context parallel size > 1 on the prefill pool, which
    :func:`pool_requests` launches without it (the decode pool runs it); empty otherwise."""
    dcp = knobs.numbers.get("decode_context_parallel_size") or 1
    if dcp <= 1:
        return []
    return [(f"`decode_context_parallel_size={dcp}` on the prefill pool",
             "DCP splits the KV of decoding requests: the decode pool runs it; each prefill GPU keeps every token "
             "of its prompts")]


def roofline_gap(gpu) -> str | None:
    """Why ``gpu`` cannot be sized here (no bandwidth or bf16 TFLOPS figure, e.g. a custom GPU), else None."""
    if getattr(gpu, "bf16_dense_tflops", None) and getattr(gpu, "bandwidth_gb_s", None):
        return None
    return (f"{gpu.name} has no bf16 TFLOPS figure, so the prefill pool cannot be timed on the roofline. Pick a "
            "catalog GPU in the sidebar (each states its TFLOPS), or use the Engine page for this card's budget.")


def pool_requests(form: PlanInputs, knobs: DisaggInputs, gpu, *, text_only: bool = False,
                  engine_fields: dict | None = None) -> tuple[PoolRequest, PoolRequest]:
    """``(prefill, decode)`` requests on ``gpu`` (a catalog GPU): the shared flags, each pool's own sizes where
    given, DCP on decode only, the memory nvidia-smi reports (SGLang's default fraction reads it) and what the
    engine does unasked (vLLM's default encoder profile for a vision model, none for a ``text_only`` server:
    :func:`planner.serving.features.with_engine_defaults`) and the engine knobs both pools take (``engine_fields``,
    :func:`ui.disagg_knobs.request_fields`), as ``python -m planner disagg`` builds them."""
    n = knobs.numbers
    engine = EngineRequest(engine=knobs.engine, weight_dtype=form.weight_dtype, kv_cache_dtype=form.kv_cache_dtype,
                           tensor_parallel_size=n["tensor_parallel_size"] or 1, gpu_name=gpu.name,
                           gpu_memory_reported_bytes=reported_memory_bytes(gpu),
                           serving=with_engine_defaults(None, engine=knobs.engine,  # vLLM's default encoder profile
                                                        raw_config=raw_config(form.model_id), text_only=text_only))
    engine = replace(engine, **(engine_fields or {}))
    shared_auto = n["tensor_parallel_size"] is None  # empty: the fewest GPUs (planner.scale.disagg note 6)
    if knobs.family == "vllm":
        scale = ScaleRequest(data_parallel_size=n["data_parallel_size"] or 1,
                             enable_expert_parallel=bool(knobs.switches.get("enable_expert_parallel")),
                             decode_context_parallel_size=n["decode_context_parallel_size"] or 1)
    else:
        scale = ScaleRequest(data_parallel_size=n["dp_size"] or 1,
                             enable_dp_attention=bool(knobs.switches.get("enable_dp_attention")),
                             expert_parallel_size=n["ep_size"] or 1)
    pools = []
    for role in ("prefill", "decode"):
        request, pool_scale = engine, scale
        if n[f"{role}_tensor_parallel_size"] is not None:
            request = replace(request, tensor_parallel_size=n[f"{role}_tensor_parallel_size"])
        if n[f"{role}_data_parallel_size"] is not None:
            pool_scale = replace(pool_scale, data_parallel_size=n[f"{role}_data_parallel_size"])
        if role == "prefill":
            pool_scale = replace(pool_scale, decode_context_parallel_size=1)  # DCP is a decode-side split
        auto = shared_auto and n[f"{role}_tensor_parallel_size"] is None
        pools.append(PoolRequest(engine=request, scale=pool_scale, auto_tensor_parallel=auto))
    return pools[0], pools[1]


def tensor_parallel_fixes(result, knobs: DisaggInputs) -> list[CheckedFix]:
    """Buttons for :attr:`planner.scale.disagg.DisaggPlan.tensor_parallel_fixes`: the shared input when every pool
    that would not start wants the same size and no pool has its own, else each pool's own input."""
    sizes = dict(result.tensor_parallel_fixes)
    own = any(knobs.numbers.get(f"{role}_tensor_parallel_size") is not None for role in sizes)
    if len(sizes) == 2 and len(set(sizes.values())) == 1 and not own:
        tp = sizes["prefill"]
        fix = Fix(f"tensor parallel {tp}: the smallest size at which both pools start", "tensor_parallel_size", tp)
        return [CheckedFix(fix, short_label(fix.key, tp), str(fix), 0.0, True)]
    out = []
    for role, tp in sizes.items():
        fix = Fix(f"{role} tensor parallel {tp}: the smallest size at which the {role} pool starts",
                  f"{role}_tensor_parallel_size", tp)
        out.append(CheckedFix(fix, short_label(fix.key, tp), str(fix), 0.0, True))
    return out


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------
def pool_metric_values(pool) -> dict[str, tuple[str, str]]:
    """``label -> (value, help)`` of one pool, from :meth:`planner.scale.disagg.Pool.to_dict`."""
    d = pool.to_dict()
    step_key = "prefill_ms_per_request" if pool.role == "prefill" else "time_per_output_token_ms"
    step_label = "Prefill per prompt" if pool.role == "prefill" else "Time per output token"
    return {
        "GPUs": (format_int(d["gpus"]),
                 f"{count_noun(d['replicas'], 'replica')} x {count_noun(d['gpus_per_replica'], 'GPU')}"),
        "Replicas": (format_int(d["replicas"]), "Launches of this pool's command"),
        "GPUs per replica": (format_int(d["gpus_per_replica"]), "data parallel x tensor parallel"),
        "tp / dp / ep": (f"{d['tensor_parallel_size']} / {d['data_parallel_size']} / {d['expert_parallel_size']}",
                         "Attention tensor parallel / attention data-parallel ranks / expert parallel GPUs"),
        "Concurrency per replica": (format_int(d["max_concurrency"]), (
            f"Prompts one replica prefills at once: what its KV pools hold, each only its prompt's tokens, at most "
            f"{_seq_cap(pool)} a rank (its launch's cap, as the decode pool's); vLLM prints "
            f"{d['max_concurrency_by_memory']:,.2f}x for requests of {format_int(d['max_model_len'])} tokens"
            if pool.role == "prefill" else f"Memory alone holds {int(d['max_concurrency_by_memory']):,} requests of "
                                            f"{format_int(d['max_model_len'])} tokens per replica "
                                            f"({d['max_concurrency_by_memory']:,.2f}x)")),
        step_label: (format_duration(d[step_key]),
                     f"{format_ms(d[step_key])}; roofline upper bound: peak bandwidth and FLOPS"),
        "KV pool per GPU": (format_bytes(d["available_kv_cache_bytes"]),
                            format_bytes_exact(d["available_kv_cache_bytes"])),
        "Weights per GPU": (format_bytes(d["weights_bytes_per_gpu"]), format_bytes_exact(d["weights_bytes_per_gpu"])),
    }


def _seq_cap(pool) -> str:
    """``"--max-num-seqs 1,024"``: the scheduler's cap on the requests one rank of a pool runs at once."""
    flag = SEQUENCE_FLAGS[pool.plan.layout.family]
    return f"`{flag}` {format_int(pool.plan.engine.max_num_seqs)}"


def pool_bar_html(pool, gpu_memory_bytes: int, gpu_label: str) -> str:
    """The fullest GPU of a pool as a budget bar (:func:`ui.budget_bar.segments_bar_html`, the Engine page's
    segments and :mod:`ui.palette` colours); zero-byte segments are left out."""
    return rank_bar_html(pool.plan.engine, gpu_memory_bytes, f"{pool.role} GPU, {gpu_label}")


def rank_bar_html(plan, gpu_memory_bytes: int, gpu_label: str, rank=None) -> str:
    """One GPU of an :class:`planner.engines.types.EnginePlan` (``rank``, a :class:`~planner.engines.types.RankBudget`
    of it; default the fullest) as a budget bar: the segments and the line of :func:`planner.engines.rank_bar.rank_bar`
    (zero-byte ones and "Over the card" left out: terms that exceed the card run past its line, as Home's bar draws
    them). The dashed line is the engine's cap: vLLM's usable share, SGLang's mem_fraction_static of the free
    memory (after the weights and KV pool, the terms it caps), TensorRT-LLM's "KV cap" (what it allocates before the
    KV pool plus free_gpu_memory_fraction of the memory then free); none for llama.cpp, whose rest is "Free"."""
    rank = rank or plan.limiting_rank
    bar = rank_bar(plan, rank, gpu_memory_bytes)
    # Home's rule (ui/budget_bar.py): the segments stack to their own sum, so what exceeds the card already runs past
    # the card line; an "Over the card" segment after them would count that excess twice
    segments = [(name, size) for name, size in bar.segments if size > 0 and name != OVER_THE_CARD]
    # SGLang: a fraction of the free memory at startup, not of the card (ui.engine_metrics.cap_sentence says of what);
    # TensorRT-LLM: the terms before its KV pool plus its fraction of the memory free after them
    words = {"static": "mem_fraction_static", "free": "KV cap"}.get(bar.line_kind)
    label = f"{words} {format_bytes(bar.line_bytes)}" if words else None
    return segments_bar_html(segments, RANK_COLOURS, usable_bytes=bar.line_bytes, card_bytes=gpu_memory_bytes,
                             gpu_label=gpu_label, usable_label=label)


POOL_COMMAND_CHARS = 36
"""Characters a line of a pool column's code block shows at 1,280 px (half the main area; "vllm serve
meta-llama/Meta-Llama-3-8B \\", 40 characters, wrapped there)."""


def show_pool(container, pool, gpu_memory_bytes: int, gpu_label: str) -> None:
    """One pool's column: heading, verdict, metrics, budget bar and launch commands."""
    title = "Prefill pool" if pool.role == "prefill" else "Decode pool"
    container.subheader(title)
    target = "TTFT" if pool.role == "prefill" else "TPOT"
    if not pool.plan.starts:  # no sizes, times or commands for a launch that would not start; the reason is above
        layout = pool.plan.layout
        container.error(f"Would not start at tensor parallel {layout.tensor_parallel_size} x "
                        f"{count_noun(layout.attention_dp, 'rank')}: the warning above says why and what would "
                        "start it; change that in the sidebar.", icon=":material/block:")
        container.markdown("**Budget per GPU** (the fullest GPU of one rank)")
        container.html(pool_bar_html(pool, gpu_memory_bytes, gpu_label))
        return
    if not pool.meets_target:
        container.warning(f"Misses the {target} target.", icon=":material/timer_off:")
    values = pool_metric_values(pool)
    show_tiles(tiles_from_values(values), 2, container=container, border=False)
    container.markdown("**Budget per GPU** (the fullest GPU of one rank)")
    container.html(pool_bar_html(pool, gpu_memory_bytes, gpu_label))
    container.markdown("**Launch command** (one replica, one command per node)")
    commands = node_commands(pool.plan, pool.role, disaggregated=True)
    container.code("\n\n".join(format_command(c, width=POOL_COMMAND_CHARS) for c in commands), language="bash",
                   wrap_lines=True)  # one flag a line; only a long --kv-transfer-config JSON wraps



TRANSFER_COLUMNS = {
    "Chosen": st.column_config.CheckboxColumn("Chosen"),
    "GB/s per GPU and direction": st.column_config.NumberColumn("GB/s per GPU and direction", format="%.1f"),
    "Time per request [ms]": st.column_config.NumberColumn("Time per request [ms]",
                                                           format=decimal_format(TRANSFER_MS_DIGITS)),
}
"""Column formats of :func:`transfer_rows`: one precision a column (QA: 31.071 above 24.66)."""


def transfer_rows(result) -> list[dict]:
    """The KV transfer time of one request per link (the chosen link first)."""
    rows = [{"Link": x.name, "id": x.id, "GB/s per GPU and direction": x.gb_s_per_direction,
             "Time per request [ms]": result.kv_transfer_ms[x.id], "Chosen": x.id == result.link} for x in LINKS]
    return sorted(rows, key=lambda row: not row["Chosen"])


def transfer_text(result) -> str:
    """One sentence: the KV that moves per request, per GPU, and its time over the chosen link."""
    return (f"Each request's prompt KV moves once from prefill to decode: "
            f"**{format_bytes(result.kv_transfer_bytes_per_request, 'auto')}** per request "
            f"({format_bytes(result.kv_transfer_bytes_per_request, 'B')}), "
            f"{format_bytes(result.kv_transfer_bytes_per_gpu, 'auto')} per GPU, the shards in parallel: "
            f"{format_ms(result.kv_transfer_ms[result.link], TRANSFER_MS_DIGITS)} over `{result.link}`; "
            f"TTFT {format_ms(result.ttft_ms, 1)}.")


def headline(result, knobs: DisaggInputs) -> None:
    """The verdict: GPUs in all when it fits, else every reason once (a normal result, not an error); when a pool
    would not start, no sizes, and a button for the tensor-parallel size that starts it (when one does)."""
    d = result.to_dict()
    if not result.starts:  # the pools' notes say when no size up to a node starts one (the CLI's notes)
        st.warning(md_message("Would not start as asked: " + "; ".join(result.reasons) + ".")
                   + "".join(f"\n\n{md_message(note)}." for note in result.pool_notes), icon=":material/warning:")
        views.fix_buttons(tensor_parallel_fixes(result, knobs), key_prefix="disagg_tp_fix")
        return
    sizes = (f"{count_noun(d['gpus'], 'GPU')} for {count_noun(result.users, 'user')}: prefill "
             f"{format_int(d['prefill']['gpus'])} + decode {format_int(d['decode']['gpus'])}")
    for note in result.pool_notes:  # the tensor-parallel size chosen when none was given
        st.caption(md_message(note))
    if result.fits:
        st.success(sizes + ".", icon=":material/check_circle:")
    else:
        st.warning(md_message(f"Does not fit as asked ({sizes}): " + "; ".join(result.reasons) + "."),
                   icon=":material/warning:")


# --------------------------------------------------------------------------
# Engine page: data / expert / context parallel of one launch (planner.scale.plan_scale)
# --------------------------------------------------------------------------
def engine_scale_inputs(engine: str, data_parallel_size: int | None) -> tuple[ScaleRequest | None, list[str]]:
    """The Engine page's "Advanced: data / expert / context parallel" block (URL-bound), for vLLM and SGLang.

    vLLM's ``-dp`` is the page's "Replicas (data parallel)" input (``data_parallel_size``); this block adds
    ``--enable-expert-parallel`` and ``-dcp``. SGLang: ``--dp-size``, ``--enable-dp-attention``, ``--ep-size``.

    Returns:
        The request (None for another engine, a plain tensor-parallel launch, or vLLM ``-dp`` alone, which the
        page already plans as replicas), and the link problems.
    """
    family = ENGINE_PROFILES[engine].family
    if family not in FAMILY_NUMBERS:
        return None, []
    keys = ("decode_context_parallel_size",) if family == "vllm" else ("dp_size", "ep_size")
    problems = check_numbers(keys)
    values: dict = {}
    with st.sidebar.expander("Advanced: data / expert / context parallel"):
        if family == "vllm":
            st.caption("Data parallel size (`-dp`): \"Replicas (data parallel)\" in the engine knobs.")
        for key in keys:
            values[key] = _number(st, key)
        for key in FAMILY_SWITCHES[family]:
            label, help_text = _SWITCH_LABELS[key]
            values[key] = st.toggle(label, key=key, bind="query-params", help=help_text)
    if family == "vllm":
        return vllm_scale_request(data_parallel_size or 1, bool(values["enable_expert_parallel"]),
                                  values["decode_context_parallel_size"] or 1), problems
    request = ScaleRequest(data_parallel_size=values["dp_size"] or 1,
                           enable_dp_attention=bool(values["enable_dp_attention"]),
                           expert_parallel_size=values["ep_size"] or 1)
    return (None if request.is_plain else request), problems


def vllm_scale_request(data_parallel_size: int, enable_expert_parallel: bool,
                       decode_context_parallel_size: int) -> ScaleRequest | None:
    """The vLLM launch the Engine page plans with :func:`planner.scale.plan_scale` (``-dp``,
    ``--enable-expert-parallel``, ``-dcp``: vllm/engine/arg_utils.py), or None where it plans plain replicas
    (no flag, or ``-dp`` alone: each replica its own engine). Home's engine panel plans the same request
    (:func:`ui.engine_home.link_scale`)."""
    request = ScaleRequest(data_parallel_size=data_parallel_size, enable_expert_parallel=enable_expert_parallel,
                           decode_context_parallel_size=decode_context_parallel_size)
    return None if replace(request, data_parallel_size=1).is_plain else request


def _decoding_aside(plan) -> str:
    """``", 60.12x once decoding"`` when a rank holds more decoding requests than vLLM prints (sliding-window
    layers free their passed blocks: :attr:`planner.scale.ScalePlan.requests_held_per_rank`), else ""."""
    return f", {plan.requests_held_per_rank:,.2f}x once decoding" if plan.decodes_more_than_printed else ""


def scale_users_line(plan) -> str:
    """``"**35** users per rank (vLLM prints 35.27x) x **8** ranks = **280** requests of 8,192 tokens"`` of a
    :class:`planner.scale.ScalePlan`: whole requests (a rank's scheduler admits whole ones), beside the ratio vLLM
    prints per rank."""
    d, ranks = plan.to_dict(), plan.layout.attention_dp
    return (f"**{format_int(d['requests_per_rank'])}** users per rank (vLLM prints "
            f"{d['max_concurrency_per_rank']:,.2f}x{_decoding_aside(plan)}) x **{format_int(ranks)}** "
            f"{'rank' if ranks == 1 else 'ranks'} = "
            f"**{format_int(d['requests_all_ranks'])}** requests of {format_int(d['max_model_len'])} tokens")


def scale_metric_values(plan) -> dict[str, tuple[str, str]]:
    """``label -> (value, help)`` of a :class:`planner.scale.ScalePlan`, from its :meth:`to_dict`."""
    d, layout = plan.to_dict(), plan.layout
    values = {
        "Users, all ranks": (format_int(d["requests_all_ranks"]),
                             f"Whole requests of {format_int(d['max_model_len'])} tokens: each attention data-parallel "
                             f"rank has its own KV pool and scheduler (vLLM's ratio, all ranks: "
                             f"{d['max_concurrency']:,.2f})"),
        "Users per rank": (format_int(d["requests_per_rank"]),
                           f"Whole requests one rank's KV pool holds (vLLM prints {d['max_concurrency_per_rank']:,.2f}x"
                           f"{_decoding_aside(plan)})"),
        "Ranks x GPUs each": (f"{layout.attention_dp} x {layout.attention_tp}",
                              f"{count_noun(layout.num_gpus, 'GPU')} on {count_noun(layout.nodes, 'node')}"),
        "Weights per GPU": (format_bytes(d["weights_bytes_per_gpu"]), "The fullest GPU: "
                            + format_bytes_exact(d["weights_bytes_per_gpu"])),
        "KV pool per GPU": (format_bytes(d["available_kv_cache_bytes"]),
                            format_bytes_exact(d["available_kv_cache_bytes"])),
    }
    if layout.global_experts:
        values["Experts per GPU"] = (f"{layout.local_experts} of {layout.global_experts}",
                                     f"Routed experts per MoE layer on the fullest GPU (expert parallel "
                                     f"{layout.expert_parallel_size}, each split over {layout.expert_tp})")
    return values


def plan_launch(model, gpu, request: EngineRequest, scale: ScaleRequest):
    """The Engine page's data / expert / context parallel launch (:func:`planner.scale.plan_scale`), or None with
    an error message when the flags cannot be planned (the page then plans one tensor-parallel replica). Expert
    parallel on a dense model, which vLLM itself refuses (:func:`planner.scale.layout.
    vllm_dense_expert_parallel_refusal`), stops the page there: no replica's figures or command under it."""
    from planner.scale import plan_scale  # noqa: PLC0415 - only pages that show the block need it
    from planner.scale.layout import vllm_dense_expert_parallel_refusal  # noqa: PLC0415

    if ENGINE_PROFILES[request.engine].family == "vllm" and (refusal := vllm_dense_expert_parallel_refusal(
            model.num_experts, scale.enable_expert_parallel or scale.enable_eplb)):
        st.error(md_message(f"{request.engine} would refuse to start: {refusal}."), icon=":material/error:")
        st.stop()
    try:
        return plan_scale(model, gpu.framework_memory_bytes, request, scale)
    except ValueError as exc:
        st.error(md_message(f"Could not plan the data / expert / context parallel launch: {exc}. The figures below "
                            "plan one tensor-parallel replica instead; change the inputs in the sidebar."),
                 icon=":material/error:")
        return None


def launch_layout_text(plan) -> str:
    """``"8 data-parallel ranks × tensor parallel 1, experts over 8 GPUs = 8 GPUs on 1 node"``: the layout of a
    :class:`planner.scale.ScalePlan`, for the Engine page's caption."""
    layout = plan.layout
    experts = (f", experts over {count_noun(layout.expert_parallel_size, 'GPU')}" if layout.expert_parallel_size > 1
               else "")
    dcp = (f", decode context parallel {layout.decode_context_parallel_size}"
           if layout.decode_context_parallel_size > 1 else "")
    return (f"{count_noun(layout.attention_dp, 'data-parallel rank')} × tensor parallel {layout.attention_tp}"
            f"{experts}{dcp} = {count_noun(layout.num_gpus, 'GPU')} on {count_noun(layout.nodes, 'node')}")


def engine_scale_section(plan, gpu) -> None:
    """The Engine page's block for a data / expert / context parallel launch: where the model lives, the users of
    all ranks and the budget of one rank's fullest GPU (the figures above are that rank's)."""
    st.subheader("Data / expert / context parallel launch")
    st.caption("The figures above describe this launch: one attention data-parallel rank (its own KV pool and "
               "scheduler), its fullest GPU, as `python -m planner plan -dp ...` prints it (planner.scale).")
    if not plan.starts:
        st.warning(md_message("The engine would not start: " + "; ".join(plan.reasons)), icon=":material/warning:")
    st.markdown(scale_users_line(plan))
    show_tiles(tiles_from_values(scale_metric_values(plan)), 3, border=False)
    st.markdown("**Budget per GPU** (the fullest GPU of one rank)")
    st.html(rank_bar_html(plan.engine, gpu.framework_memory_bytes, gpu.name))
    for note in plan.notes:
        st.caption(md_message(note))
