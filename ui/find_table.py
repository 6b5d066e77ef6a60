"""The Find page's table of setups: rows, the columns shown at 1,280 px, pages of rows and their notes.

Moved out of :mod:`ui.traffic` (which re-exports these names). The table keeps every figure of a
:class:`~planner.traffic.find_types.Setup` for the CSV; the columns shown are sized so nothing is cut at
1,280 px: the GPU cell shows the catalog name without its parenthesis or "Edition" (the full name stays in
the CSV, the "Cheapest" line and the throughput heading), and the Notes cell shows the numbers of the notes
listed in full under the table ("1, 2").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

from planner.traffic.find_types import KIND_LABELS, TP_REPLICAS_LABEL, FindResult, kind_label
from ui.format import format_bytes

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built
    import pandas as pd

FIND_PAGE_ROWS = 20
"""Setups per page of the Find table (drawn at their full height: no scroll inside the table)."""

FIND_TOP = 200
"""Setups the Find page asks the search for (the CLI's ``--top`` default stays 10)."""

GPU_CELL_CHARS = 24
"""Longest GPU cell [characters]: what the GPU column's width shows in the table's font; a longer short
name (a custom GPU's) ends in "…" there and stays whole in the CSV. The catalog's longest cells,
"GeForce RTX 4060 Ti 16GB" and "RTX PRO 6000 Workstation", are 24."""

_RTX_PRO_ARCH = re.compile(r"^(RTX PRO \d+) Blackwell\b")
"""NVIDIA's RTX PRO line is Blackwell only (RTX PRO 6000 / 5000 / 4500 / 4000 Blackwell): the cell drops the
architecture word and keeps the edition (Server, Workstation, Max-Q), which tells the catalog's entries apart."""


EMPTY_TEXT = ("No setup of the kinds asked starts on these GPUs within the limit, so none is listed, not even a closest "
              "one; the changes above are each checked by the same search.")
"""What the Find page says instead of an empty table."""


MISSING_CELL = "n/a"
"""How the Find table writes a figure it has none for (a TTFT without the GPU's bf16 TFLOPS), in the grid
(``st.dataframe``'s ``placeholder``) and in the CSV alike (QA: the grid read "n/a", the CSV an empty cell)."""

TTFT = "Time to first token [ms]"


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def gpu_cell(name: str) -> str:
    """The GPU column's text: the catalog name without a parenthesis and without "Edition", at most
    :data:`GPU_CELL_CHARS` characters. ``"GB300 (per Blackwell Ultra GPU, NVL72)"`` -> ``"GB300"``;
    ``"RTX PRO 6000 Blackwell Server Edition"`` -> ``"RTX PRO 6000 Server"``."""
    short = re.sub(r"\s*\([^)]*\)", "", name).replace(" Edition", "").strip() or name
    short = _RTX_PRO_ARCH.sub(r"\1", short)
    return short if len(short) <= GPU_CELL_CHARS else short[:GPU_CELL_CHARS - 1].rstrip() + "…"


def note_numbers(result: FindResult) -> dict[str, int]:
    """Every distinct note of the listed setups, numbered 1, 2, ... in order of first appearance."""
    setups = result.options or ((result.closest,) if result.closest else ())
    return {note: i for i, note in enumerate(dict.fromkeys(n for s in setups for n in s.notes), start=1)}


def find_rows(result: FindResult, page: int | None = None, rows: int = FIND_PAGE_ROWS) -> pd.DataFrame:
    """The Find page table: fitting setups, or the closest one; speed and cost first. ``GPU`` and ``Notes``
    hold the full texts (the CSV), ``GPU type`` and ``Note`` what the table shows (:func:`gpu_cell`,
    :func:`note_numbers`).

    Args:
        result: The search.
        page: Only rows ``(page - 1) x rows`` to ``page x rows`` (page 1 first), the notes numbered over every
            listed setup; None: every row (the CSV). A rerun builds the 20 rows it shows, not 200 (issue 27 speed).
        rows: Rows a page.
    """
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    setups = result.options or ((result.closest,) if result.closest else ())
    numbers = note_numbers(result)
    if page is not None:
        setups = setups[(page - 1) * rows: page * rows]
    return pd.DataFrame([{
        "GPU": s.gpu_name, "GPUs": s.num_gpus, "TP": s.tensor_parallel_size,
        "replicas": s.data_parallel_size, "USD per hour": s.price_per_hour,
        "USD per 1M output tokens": None if s.usd_per_million_output_tokens is None else
        round(s.usd_per_million_output_tokens, 4),
        "Time per output token [ms]": _ms(s.time_per_output_token_s),
        TTFT: _ms(s.time_to_first_token_s),
        "KV dtype": s.kv_cache_dtype, "Max users": s.max_concurrent_sequences,
        "Margin": f"{s.margin:.0%}" if s.kv_cache_budget_bytes_per_gpu > 0 and s.margin is not None
        else "weights do not fit" if s.kv_cache_budget_bytes_per_gpu <= 0 else "-",
        "KV budget per GPU": format_bytes(s.kv_cache_budget_bytes_per_gpu),
        "Fits": s.fits, "Notes": "; ".join(s.notes) or "-", "Launch command": s.launch_command,
        "Setup kind": s.kind, "Expert parallel": s.expert_parallel_size,
        "Decode context parallel": s.decode_context_parallel_size, "Nodes": s.nodes,
        "GPU type": gpu_cell(s.gpu_name), "Note": ", ".join(str(numbers[n]) for n in s.notes) or "-",
        "Kind": kind_cell(s),
    } for s in setups])


@dataclass(frozen=True)
class FindColumn:
    """How the Find table shows one column of :func:`find_rows`: short header, fixed width, tooltip."""

    label: str
    width: int
    help: str
    format: str | None = None


KIND_CELLS = KIND_LABELS
"""The Kind column's text per :data:`planner.traffic.find_types.SETUP_KINDS` (the CLI's table prints the same)."""

TP_REPLICAS_CELL = TP_REPLICAS_LABEL
"""The Kind cell of a TP row of more than one replica."""


def kind_cell(s) -> str:
    """A row's Kind cell: :func:`planner.traffic.find_types.kind_label` (``TP+DP`` for a TP row of more than one
    replica), the text the CLI's table prints too."""
    return kind_label(s)


FIND_COLUMNS: dict[str, FindColumn] = {
    "GPU type": FindColumn("GPU", 175, "Catalog GPU name (without its parenthesis, 'Edition', or 'Blackwell' in "
                                       "an RTX PRO name; the CSV has it in full)"),
    "Kind": FindColumn("Kind", 50, "Setup kind: TP = tensor parallel, one replica; TP+DP = tensor parallel x "
                                   "replicas; DP+EP = data parallel ranks with expert parallel (vLLM -dp N "
                                   "--enable-expert-parallel); DCP = decode context "
                                   "parallel (-dcp); P/D = disaggregated prefill and decode pools. The kinds "
                                   "beside TP are offered for MoE and MLA models"),
    "GPUs": FindColumn("GPUs", 42, "GPUs in the whole setup (tensor parallel x replicas; P/D: both pools)"),
    "TP": FindColumn("TP", 32, "Tensor-parallel size of one replica (DP+EP: of one rank; P/D: of the decode pool)"),
    "replicas": FindColumn("DP", 34, "Replicas (data parallel): copies of the model; users are split evenly "
                                     "over them. DP+EP: ranks of one launch, each with its own KV pool; P/D: "
                                     "ranks of one decode replica"),
    "USD per hour": FindColumn("$/h", 56, "USD per hour for every GPU of the setup (catalog price)", "$%,.2f"),
    "USD per 1M output tokens": FindColumn(
        "$/1M out", 66, "USD per 1M output tokens: price per hour over the output tokens the setup makes for "
                        "your users (roofline: one token per user per decode step)", "$%.3f"),
    "Time per output token [ms]": FindColumn(
        "TPOT ms", 60, "Time per output token [ms] at your user count (roofline upper bound)", "%,.1f"),
    "Time to first token [ms]": FindColumn(
        "TTFT ms", 60, "Time to first token [ms]: the prompt's prefill on the replica's GPUs plus one decode "
                       "step (roofline); n/a where the catalog states no dense bf16 TFLOPS for the GPU (e.g. "
                       "RTX PRO 6000 Blackwell: NVIDIA's figure has no sparsity footnote, see the Catalog)", "%,.1f"),
    "KV dtype": FindColumn("KV", 84, "KV-cache dtype the engine stores (fp8_ds_mla: vLLM's fp8 layout for "
                                     "sparse-MLA layers, DeepSeek-V3.2 / GLM-5)"),
    "Max users": FindColumn("Max users", 70, "Most concurrent sequences the setup holds, as the chosen engine "
                                             "sizes it", "localized"),
    "Note": FindColumn("Notes", 48, "Numbers of the notes listed in full under the table"),
}
"""The Find table's shown columns, in order: 1,280 px minus the 340 px sidebar and the page padding
leaves about 780 px (the grid's client width: 778), and these widths add up to 777, so the table never scrolls
sideways (checked at 1,280 px in headless Chromium). The full GPU name, the margin (also under the table for the chosen setup),
the KV budget, the fit flag, the notes and each launch command stay in the CSV download."""


def find_table_config() -> tuple[list[str], dict]:
    """``column_order`` and ``column_config`` for ``st.dataframe`` of :func:`find_rows` (:data:`FIND_COLUMNS`)."""
    config = {}
    for name, col in FIND_COLUMNS.items():
        if col.format:
            config[name] = st.column_config.NumberColumn(col.label, width=col.width, help=col.help, format=col.format)
        else:
            config[name] = st.column_config.Column(col.label, width=col.width, help=col.help)
    return list(FIND_COLUMNS), config


def page_notes(result: FindResult, page: int, rows: int = FIND_PAGE_ROWS) -> list[tuple[int, str]]:
    """``(number, note)`` for the distinct notes of the setups on table page ``page`` (as :func:`find_rows` and
    :func:`page_of` lay them out), numbered as the Notes cells (:func:`note_numbers`)."""
    setups = result.options or ((result.closest,) if result.closest else ())
    numbers = note_numbers(result)
    shown = dict.fromkeys(note for s in setups[(page - 1) * rows: page * rows] for note in s.notes)
    return [(numbers[note], note) for note in shown]


def num_pages(count: int, rows: int = FIND_PAGE_ROWS) -> int:
    """Pages of ``rows`` rows that ``count`` listed setups fill (at least 1)."""
    return max(1, -(-count // rows))


def csv_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The CSV download: every column but the table's short forms (``GPU type``, ``Note``, ``Kind``: the CSV
    spells the kind out in ``Setup kind``); a missing figure written :data:`MISSING_CELL`, as the grid shows it."""
    out = table.drop(columns=["GPU type", "Note", "Kind"], errors="ignore")
    for name in out.columns:
        if out[name].isna().any():
            out[name] = out[name].astype(object).where(out[name].notna(), MISSING_CELL)
    return out


def missing_ttft_text(table: pd.DataFrame) -> str | None:
    """The caption under the table when a row shown has no TTFT: which GPUs and why, in words (QA: only the
    header's tooltip said why), or None. The roofline's prefill time needs the GPU's dense bf16 TFLOPS
    (planner/traffic/throughput.py), which the catalog leaves empty where the vendor's figure is ambiguous."""
    if TTFT not in table.columns or not table[TTFT].isna().any():
        return None
    names = list(dict.fromkeys(table.loc[table[TTFT].isna(), "GPU type"]))
    which = "this GPU" if len(names) == 1 else "these GPUs"
    return (f"TTFT {MISSING_CELL} for {', '.join(names)}: the catalog states no dense bf16 TFLOPS for {which} (e.g. "
            "NVIDIA's RTX PRO 6000 Blackwell figure has no sparsity footnote; each GPU's note on the Catalog page "
            f"says why), so the prompt's prefill time is not estimated. The CSV writes {MISSING_CELL} there too.")


__all__ = ["FIND_COLUMNS", "FIND_PAGE_ROWS", "FIND_TOP", "KIND_CELLS", "MISSING_CELL", "FindColumn", "TP_REPLICAS_CELL",
           "csv_rows", "find_rows", "find_table_config", "gpu_cell", "kind_cell", "missing_ttft_text", "note_numbers",
           "num_pages", "page_notes"]
