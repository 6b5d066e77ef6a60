"""The Find table at 1,280 px (issue "One link, one answer", polish): GPU and Notes cells are not cut, the
throughput columns keep one number of decimals each with thousands separators.

Widths are checked against the table's font: Source Sans at 14 px averages 6.2 px a character for GPU names
(measured on a 1,280 px headless-Chromium screenshot: "RTX PRO 6000 Blackwell Server", 29 characters, took
180 px; canvas measureText in the page's font: 180.6 px, and "fp8_ds_mla" 68.7 px); the check allows 6.6,
and 8 px of cell padding on each side.
``tests/test_browser.py`` checks that the table does not scroll sideways.
"""

from __future__ import annotations

from model_catalog.gpus import load_gpus
from planner.engines.vllm_kv_formats import FP8_DS_MLA
from planner.traffic.find_types import FIND_KV_DTYPE_CHOICES, FindResult, Setup
from planner.traffic.throughput import ThroughputPoint
from ui import find_table, traffic

PX_PER_CHAR = 6.6
CELL_PADDING_PX = 16
TABLE_WIDTH_PX = 780  # 1,280 px minus the 340 px sidebar and the page padding


def test_gpu_cells_fit_their_column():
    column = find_table.FIND_COLUMNS["GPU type"].width
    for gpu in load_gpus().values():
        cell = find_table.gpu_cell(gpu.name)
        assert len(cell) * PX_PER_CHAR + CELL_PADDING_PX <= column, (gpu.name, cell)
        assert gpu.name.startswith(cell.removesuffix("…").split(" ")[0])
    assert find_table.gpu_cell("GB300 (per Blackwell Ultra GPU, NVL72)") == "GB300"
    # NVIDIA's RTX PRO line is Blackwell only: the cell drops the word, so the KV column gets its width
    assert find_table.gpu_cell("RTX PRO 6000 Blackwell Server Edition") == "RTX PRO 6000 Server"
    assert find_table.gpu_cell("RTX PRO 6000 Blackwell Workstation Edition") == "RTX PRO 6000 Workstation"
    assert find_table.gpu_cell("x" * 100) == "x" * (find_table.GPU_CELL_CHARS - 1) + "…"
    assert sum(c.width for c in find_table.FIND_COLUMNS.values()) <= TABLE_WIDTH_PX


def test_kv_cells_fit_their_column():
    # QA (stop 38): DeepSeek-V3.2's rows read "fp8_ds_" at 1,280 and 1,400 px, the 40 px column cut vLLM's
    # fp8_ds_mla (planner.engines.vllm_kv_formats.stored_kv_name), the only cache those rows list
    column = find_table.FIND_COLUMNS["KV dtype"].width
    for name in (*FIND_KV_DTYPE_CHOICES, FP8_DS_MLA):
        assert len(name) * PX_PER_CHAR + CELL_PADDING_PX <= column, (name, column)
    assert sum(c.width for c in find_table.FIND_COLUMNS.values()) <= TABLE_WIDTH_PX


def _setup(gpu: str, notes: tuple[str, ...]) -> Setup:
    return Setup(gpu_id=gpu, gpu_name=gpu, num_gpus=1, tensor_parallel_size=1, data_parallel_size=1,
                 kv_cache_dtype="bf16", weight_dtype="auto", price_per_hour=1.0, price_per_gpu_hour=1.0, users=10,
                 users_per_replica=10, max_concurrent_sequences=10_068, kv_cache_budget_bytes_per_gpu=1 << 30,
                 kv_demand_bytes_per_gpu=1 << 29, margin=0.5, time_per_output_token_s=0.02, max_model_len=1024,
                 fits=True, launch_command="vllm serve x", notes=notes)


def test_notes_cells_are_numbers_of_the_notes_listed_under_the_table():
    long_a, long_b = "a" * 200, "b" * 200
    result = FindResult(options=(_setup("A", (long_a,)), _setup("B", ()), _setup("C", (long_b, long_a))),
                        fits=True, closest=None, skipped_gpus=(), num_evaluated=3)
    table = find_table.find_rows(result)
    assert list(table["Note"]) == ["1", "-", "2, 1"]
    assert list(table["Notes"]) == [long_a, "-", f"{long_b}; {long_a}"]  # in full for the CSV
    assert find_table.page_notes(result, 1) == [(1, long_a), (2, long_b)]
    assert find_table.page_notes(result, 2, rows=2) == [(2, long_b), (1, long_a)]
    assert "Note" not in find_table.csv_rows(table).columns and "Notes" in find_table.csv_rows(table).columns
    order, config = find_table.find_table_config()
    assert order[0] == "GPU type" and order[-1] == "Note" and "Notes" not in order
    assert config["Max users"]["type_config"]["format"] == "localized"  # 10,068, not 10068


def test_throughput_columns_one_precision_each_with_separators():
    class Estimate:
        points = (ThroughputPoint(batch_size=1, time_per_output_token_s=0.0123, tokens_per_s_per_sequence=81.3,
                                  aggregate_tokens_per_s=81.3, cost_per_million_output_tokens_usd=12.5, fits=True),
                  ThroughputPoint(batch_size=256, time_per_output_token_s=0.0254, tokens_per_s_per_sequence=39.37,
                                  aggregate_tokens_per_s=10_068.0, cost_per_million_output_tokens_usd=0.02, fits=True))

    rows = traffic.throughput_rows(Estimate())
    assert [r["Tokens/s, all sequences"] for r in rows] == ["81.3", "10,068.0"]
    assert [r["Time per output token [ms]"] for r in rows] == ["12.30", "25.40"]
    assert [r["Batch"] for r in rows] == ["1", "256"]


def test_kind_column_short_in_the_table_spelled_out_in_the_csv():
    """Issue "Serve at scale": each row says its kind in its own column (``P/D`` for disaggregated pools, the
    header's help says so); the CSV keeps the old columns first and adds the kind and the layout at the end."""
    from dataclasses import replace

    rows = [replace(_setup("A", ()), kind=kind, expert_parallel_size=8 if kind == "DP+EP" else 1)
            for kind in ("TP", "DP+EP", "DCP", "disaggregated")]
    table = find_table.find_rows(FindResult(options=tuple(rows), fits=True, closest=None, skipped_gpus=(),
                                            num_evaluated=4))
    assert list(table["Kind"]) == ["TP", "DP+EP", "DCP", "P/D"]
    order, config = find_table.find_table_config()
    assert order[:2] == ["GPU type", "Kind"] and "P/D = disaggregated" in config["Kind"]["help"]
    csv = find_table.csv_rows(table)
    assert list(csv.columns[:4]) == ["GPU", "GPUs", "TP", "replicas"] and "Kind" not in csv.columns
    assert list(csv.columns[-5:]) == ["Launch command", "Setup kind", "Expert parallel", "Decode context parallel",
                                      "Nodes"]
    assert list(csv["Setup kind"]) == ["TP", "DP+EP", "DCP", "disaggregated"]
    widest = max(len(cell) for cell in find_table.KIND_CELLS.values())
    assert widest * PX_PER_CHAR + CELL_PADDING_PX <= find_table.FIND_COLUMNS["Kind"].width


def test_a_page_of_rows_is_the_same_rows_as_the_whole_table_with_the_same_note_numbers():
    """The Find page builds the rows of the table page it shows (``find_rows(result, page)``), not all 200 (issue
    27 speed); they are the whole table's rows on that page, notes numbered over every listed setup."""
    from dataclasses import replace

    notes = ("n0", "n1", "n2")
    result = FindResult(options=tuple(replace(_setup(f"G{i}", (notes[i % 3],)), max_concurrent_sequences=i)
                                      for i in range(25)), fits=True, closest=None, skipped_gpus=(), num_evaluated=25)
    whole = find_table.find_rows(result)
    second = find_table.find_rows(result, 2, rows=10)
    assert len(whole) == 25 and list(second["Max users"]) == list(range(10, 20))
    assert second.reset_index(drop=True).equals(whole.iloc[10:20].reset_index(drop=True))
    assert list(find_table.find_rows(result, 3, rows=10)["Max users"]) == list(range(20, 25))
    assert find_table.num_pages(25, rows=10) == 3 and find_table.num_pages(0) == 1


def test_time_and_price_columns_have_thousands_separators():
    """QA: the TTFT column read "1215.1" (DeepSeek-V4-Flash, 1,411 users): the Find table's time and price columns
    use Streamlit's printf grouping flag (``%,``: "1,215.1"), one precision a column."""
    order, config = find_table.find_table_config()
    for name in ("Time per output token [ms]", "Time to first token [ms]", "USD per hour"):
        assert "%," in config[name]["type_config"]["format"], (name, config[name])


def test_a_missing_ttft_says_why_under_the_table_and_reads_the_same_in_the_csv():
    """QA: RTX PRO 6000 rows showed TTFT "n/a" with the reason only in the header's tooltip, and the CSV left the
    cell empty. A caption names the GPUs and the reason, and the CSV writes the grid's placeholder."""
    from dataclasses import replace

    from ui.downloads import csv_text

    timed = replace(_setup("H100 SXM5 80GB", ()), time_to_first_token_s=0.25)
    untimed = _setup("RTX PRO 6000 Blackwell Server Edition", ())
    table = find_table.find_rows(FindResult(options=(timed, untimed), fits=True, closest=None, skipped_gpus=(),
                                            num_evaluated=2))
    text = find_table.missing_ttft_text(table)
    assert text.startswith("TTFT n/a for RTX PRO 6000 Server: ") and "no dense bf16 TFLOPS" in text
    assert "H100" not in text
    assert find_table.missing_ttft_text(table.iloc[:1]) is None  # no caption when every row has one
    csv = csv_text(find_table.csv_rows(table)).splitlines()
    column = csv[0].split(",").index(find_table.TTFT)
    assert [row.split(",")[column] for row in csv[1:]] == ["250.0", find_table.MISSING_CELL]


def test_kind_says_replicas_of_a_tensor_parallel_row():
    """QA round (disagg-tp): a TP row with 3 replicas (DP 3) said Kind "TP"; it says "TP+DP" (tensor parallel x
    replicas), a one-replica row "TP"; the header's help says which is which and the CSV keeps the kind's id."""
    from dataclasses import replace

    rows = [replace(_setup("A", ()), kind="TP", data_parallel_size=dp) for dp in (1, 3)]
    table = find_table.find_rows(FindResult(options=tuple(rows), fits=True, closest=None, skipped_gpus=(),
                                            num_evaluated=2))
    assert list(table["Kind"]) == ["TP", "TP+DP"] and list(table["replicas"]) == [1, 3]
    _, config = find_table.find_table_config()
    assert "TP+DP = tensor parallel x replicas" in config["Kind"]["help"]
    assert list(find_table.csv_rows(table)["Setup kind"]) == ["TP", "TP"]


def test_cli_table_says_the_kind_the_page_says():
    """QA: the page's Kind for a TP row of 3 replicas is "TP+DP" and for disaggregated pools "P/D"; `planner find`'s
    table printed the kind id ("TP", "disaggregated"). Both read one rule now; the JSON keeps ``kind`` (the id)."""
    from dataclasses import replace

    from planner.cli.traffic import _find_table

    rows = tuple(replace(_setup(f"gpu-{i}", ()), kind=kind, data_parallel_size=dp)
                 for i, (kind, dp) in enumerate((("TP", 1), ("TP", 3), ("DP+EP", 2), ("disaggregated", 1))))
    result = FindResult(options=rows, fits=True, closest=None, skipped_gpus=(), num_evaluated=len(rows))
    page = list(find_table.find_rows(result)["Kind"])
    printed = [line.split()[4] for line in _find_table(result).splitlines() if "x gpu-" in line]
    assert printed == page
    assert [row["kind"] for row in result.rows()] == ["TP", "TP", "DP+EP", "disaggregated"]
