"""The Find page's setup kinds (issue "Serve at scale"): the kinds and link inputs, the chosen setup and what
launches it (commands per node or role, llm-d values, the two pools of a disaggregated setup).

The search itself is :func:`planner.traffic.reverse.find_setups` (its DP+EP, DCP and disaggregated rows:
:mod:`planner.traffic.find_scale`); this module only reads widgets and renders what a
:class:`~planner.traffic.find_types.Setup` carries.
"""

from __future__ import annotations

import streamlit as st

from planner.scale import DEFAULT_LINK, LINKS
from planner.traffic.find_types import SETUP_KINDS, FindResult, Setup, margin_of, setup_kind
from ui import inputs
from ui.find_table import FIND_PAGE_ROWS, gpu_cell
from ui.format import count_noun, format_bytes, format_command, format_int, md_text, shorten

LINK_IDS: tuple[str, ...] = tuple(x.id for x in LINKS)

KIND_HELP = ("Kinds of setup searched (`--setup-kinds`; empty = every kind). Beside TP (tensor parallel x "
             "replicas), MoE and MLA models get DP+EP (vLLM `-dp N --enable-expert-parallel`), DCP "
             "(`--decode-context-parallel-size`) and disaggregated prefill / decode pools, under vLLM or SGLang.")


def setup_kind_inputs() -> tuple[tuple[str, ...], str, list[str]]:
    """The sidebar's "Setup kinds" multiselect (URL key ``setup_kinds``) and the link between disaggregated pools
    (URL key ``link``, as ``find --link``); the kinds searched (every kind when none is picked), the link id and
    the link problems."""
    problems = inputs.check_link({"link": (LINK_IDS, None, "link", DEFAULT_LINK)},
                                 {"setup_kinds": (SETUP_KINDS, setup_kind, "setup kind", len(SETUP_KINDS))}, ())
    with st.sidebar.expander("Setup kinds (MoE / MLA models)"):
        kinds = st.multiselect("Setup kinds", SETUP_KINDS, default=[], key="setup_kinds", bind="query-params",
                               help=KIND_HELP)
        link = st.selectbox("Link between prefill and decode pools", LINK_IDS, index=LINK_IDS.index(DEFAULT_LINK),
                            key="link", bind="query-params",
                            format_func=lambda i: next(x.name for x in LINKS if x.id == i),
                            help="Disaggregated setups: each prefill GPU sends its KV shard to its decode peer over "
                                 "this link (`--link`); its time is part of their time to first token.")
    return tuple(kinds) or SETUP_KINDS, link, problems


def listed_setups(result: FindResult) -> tuple[Setup, ...]:
    """The setups the table lists: the fitting ones, else the closest."""
    return result.options or ((result.closest,) if result.closest else ())


def setup_label(index: int, s: Setup) -> str:
    """``"1. DP+EP · 8 x H200 SXM · tp 1 x 8 · bf16 KV · $31.92/h"``: one option of the "Setup to launch" box."""
    return (f"{index + 1}. {s.kind} · {s.num_gpus} x {gpu_cell(s.gpu_name)} · tp {s.tensor_parallel_size} x "
            f"{s.data_parallel_size} · {s.kv_cache_dtype} KV · ${s.price_per_hour:,.2f}/h")


SETUP_URL_KEY = "find_setup"
"""URL key of the chosen setup (:func:`setup_id`), absent for the first row. A view, not a plan: like the lazy
tabs' keys (:data:`ui.link_guard.SECTION_KEYS`) the navigation does not carry it and the CLI has no flag for it."""

_WRITTEN = "_find_setup_written"
"""Session key: the setup id this session last wrote to the URL (None: the first row, no key)."""


def setup_id(s: Setup) -> str:
    """A setup's id in a link: what tells it apart from every other setup of a search, in words that survive a new
    search (no rank, no price), such as ``"DP+EP.16.nvidia-h200-sxm.tp1.dp16.ep16.fp8_ds_mla"``; the expert and
    decode context parallel sizes appear when above 1."""
    parts = [s.kind, str(s.num_gpus), s.gpu_id, f"tp{s.tensor_parallel_size}", f"dp{s.data_parallel_size}"]
    if s.expert_parallel_size > 1:
        parts.append(f"ep{s.expert_parallel_size}")
    if s.decode_context_parallel_size > 1:
        parts.append(f"dcp{s.decode_context_parallel_size}")
    return ".".join([*parts, s.kv_cache_dtype])


def linked_page(result: FindResult, rows: int = FIND_PAGE_ROWS) -> int | None:
    """The table page that holds the setup a link names (:data:`SETUP_URL_KEY`) on the run that opens it, so the
    row shows in the table beside its launch commands (QA: a link to row 25 opened on page 1); None when no link
    names a listed setup, or this session wrote the choice itself while the page input kept its state (a page the
    user turned stays turned; back on the page after another, Back or Forward, the input starts afresh and follows
    the choice: QA, Forward showed page 1 beside row 45)."""
    asked = st.query_params.get(SETUP_URL_KEY)
    if asked is None or (asked == st.session_state.get(_WRITTEN) and "find_page" in st.session_state):
        return None  # the choice this session made, on the page it shows (a page the user turned stays turned)
    ids = [setup_id(s) for s in listed_setups(result)]
    return ids.index(asked) // rows + 1 if asked in ids else None


def chosen_setup(result: FindResult, page: int = 1, rows: int = FIND_PAGE_ROWS) -> Setup | None:
    """The "Setup to launch" select under the table; None when nothing is listed. The first row unless the user
    picks another, or the link names one (:data:`SETUP_URL_KEY`), so a shared link opens on the same launch
    commands; a choice stays chosen through a new search that still lists it, and through a turn of the table's
    page.

    The options are the rows of the table page shown (``page``, ``rows`` a page, as
    :func:`ui.find_table.find_rows` builds it) and the chosen setup wherever it is: the rows on screen are the ones
    a user picks from, and a box of every listed setup sent up to 200 labels on each rerun (issue 27 speed; side by
    side the change is within the benchmark's noise). They are the setups' labels, not their positions: a new
    search lists other setups under other labels, so the choice falls back to the first row instead of showing a
    label the list no longer has (QA: after a change of users the box still read the A100 row above the RTX 5090
    setup it described). The URL holds the setup's :func:`setup_id`, written by hand in the
    same run (labels carry a rank and a price that a new search changes, so the widget is not bound).
    """
    setups = listed_setups(result)
    if not setups:
        return None
    ids = [setup_id(s) for s in setups]
    asked, written = st.query_params.get(SETUP_URL_KEY), st.session_state.get(_WRITTEN)
    kept = ids.index(written) if written in ids else 0  # the choice of the last run, if still listed
    if asked is not None and asked != written:  # a link (or Back) names a setup this session did not write
        if asked in ids:
            kept = ids.index(asked)
            st.session_state["find_choice"] = setup_label(kept, setups[kept])
        else:
            st.warning(f"Link parameter `{SETUP_URL_KEY}` names no setup this search lists "
                       f"(“{md_text(shorten(asked))}”), so the first row is shown.", icon=":material/link_off:")
    offered = sorted({*range((page - 1) * rows, min(page * rows, len(setups))), kept})
    labels = [setup_label(i, setups[i]) for i in offered]
    if st.session_state.get("find_choice") not in labels:  # a new search: the kept setup under its new label
        st.session_state["find_choice"] = setup_label(kept, setups[kept])
    chosen = st.selectbox("Setup to launch", labels, key="find_choice",
                          help="One of the rows on the table page shown, or the setup chosen before. Its launch "
                               "command (and for a multi-node or disaggregated setup, every node's command and the "
                               "llm-d values) are shown below. The link keeps the choice.")
    index = offered[labels.index(chosen)] if chosen in labels else kept
    _write_choice(ids[index] if index else None)
    return setups[index]


def _write_choice(setup: str | None) -> None:
    """Put the chosen setup's id in the URL (None: the first row, the key removed), as :func:`ui.inputs.picker`
    writes its ids: in the same run, replacing the history entry."""
    st.session_state[_WRITTEN] = setup
    if setup is None:
        if SETUP_URL_KEY in st.query_params:
            del st.query_params[SETUP_URL_KEY]
    elif st.query_params.get(SETUP_URL_KEY) != setup:
        st.query_params[SETUP_URL_KEY] = setup


def chosen_text(s: Setup) -> str:
    """One paragraph on the chosen setup: kind, layout, users per rank x ranks, and what it holds: its margin, or for
    a setup short of the users (the closest when nothing fits), how many of them it holds and how many short (QA:
    "the setup holds 16, -300% of the --max-num-seqs 2 cap to spare" for 64 users)."""
    replicas, tp = count_noun(s.data_parallel_size, "replica"), s.tensor_parallel_size
    layout = {"TP": f"{replicas} of tensor parallel {tp}",
              "DP+EP": f"{count_noun(s.data_parallel_size, 'data-parallel rank')} of {count_noun(tp, 'GPU')}, "
                       f"experts spread over {count_noun(s.expert_parallel_size, 'GPU')}",
              "DCP": f"{replicas} of tensor parallel {tp} with decode context parallel "
                     f"{s.decode_context_parallel_size}",
              "disaggregated": f"decode ranks of {count_noun(tp, 'GPU')}, {format_int(s.data_parallel_size)} per "
                               "replica, beside a prefill pool"}[s.kind]
    nodes = f" on {format_int(s.nodes)} nodes" if s.nodes > 1 else ""
    return (f"**{s.kind}**: {format_int(s.num_gpus)} x {md_text(s.gpu_name)}{nodes}, {layout}. "
            f"{_users_per_rank(s)}; the setup holds {_held_text(s)}. Weights per GPU: "
            f"{'n/a' if s.weights_bytes_per_gpu is None else format_bytes(s.weights_bytes_per_gpu)}.")


def _held_text(s: Setup) -> str:
    """``"16 of 64, 48 short"`` for a setup that holds fewer than the users (:attr:`Setup.headroom_users` < 0),
    else ``"80, 20% of the KV pool to spare"`` (the margin, when it has one and it is not negative)."""
    held = format_int(s.max_concurrent_sequences)
    if s.headroom_users < 0:
        return f"{held} of {format_int(s.users)}, {format_int(-s.headroom_users)} short"
    if s.margin is None or s.margin < 0:
        return held
    return f"{held}, {s.margin:.0%} of {margin_of(s, 'the KV pool')} to spare"


def _users_per_rank(s: Setup) -> str:
    """``"200 users on its one replica"``, ``"50 users per replica (200 in all)"``; "rank" for a DP+EP or
    disaggregated setup, whose data-parallel ranks each hold their own users."""
    unit = "rank" if s.kind in ("DP+EP", "disaggregated") else "replica"
    if s.users_per_replica >= s.users:
        return f"{count_noun(s.users, 'user')} on its one {unit}"
    return f"{count_noun(s.users_per_replica, 'user')} per {unit} ({format_int(s.users)} in all)"


POOL_ROWS = (("GPUs", "gpus"), ("Replicas", "replicas"), ("GPUs per replica", "gpus_per_replica"),
             ("Tensor parallel", "tensor_parallel_size"), ("Data parallel ranks", "data_parallel_size"),
             ("Expert parallel", "expert_parallel_size"), ("Requests per replica", "max_concurrency"))


def pool_rows(s: Setup) -> list[dict]:
    """The two pools of a disaggregated setup side by side (:meth:`planner.scale.disagg.Pool.to_dict`)."""
    rows = [{"": label, "Prefill": format_int(s.prefill[key]), "Decode": format_int(s.decode[key])}
            for label, key in POOL_ROWS]
    rows.append({"": "Step [ms]", "Prefill": f"{s.prefill['prefill_ms_per_request']:,.2f} per prompt",
                 "Decode": f"{s.decode['time_per_output_token_ms']:,.2f} per token at a full batch"})
    rows.append({"": "KV pool per GPU", "Prefill": format_bytes(s.prefill["available_kv_cache_bytes"]),
                 "Decode": format_bytes(s.decode["available_kv_cache_bytes"])})
    return rows


def show_launch(s: Setup) -> None:
    """The chosen setup's launch: its command, every node's or role's command, the llm-d values and, for a
    disaggregated setup, both pools."""
    st.markdown(chosen_text(s))
    st.markdown("Launch command" + (" (the decode role's first node)" if s.kind == "disaggregated" else "") + ":")
    st.code(format_command(s.launch_command), language="bash")
    if s.prefill is not None and s.decode is not None:
        st.markdown("**The two pools** (roofline sizing)")
        st.dataframe(pool_rows(s), hide_index=True, key="find_pools")
    if s.deploy_commands:
        st.markdown("**Every node's command**" if s.kind != "disaggregated" else "**Each role's commands**")
        st.code("\n".join(format_command(c) if not c.startswith("#") else c for c in s.deploy_commands),
                language="bash")
    if s.llm_d_values:
        with st.expander("llm-d model-service values (Helm, chart v0.4.12)"):
            st.code(s.llm_d_values, language="yaml")
            st.download_button("Download values.yaml", s.llm_d_values, file_name="values.yaml", mime="text/yaml",
                               key="find_llm_d", icon=":material/download:", on_click="ignore")
