"""Request lengths from a CSV: the columns people export, read with limits.

:func:`parse_lengths_csv` accepts a header row naming a prompt and/or an output
column (common aliases: ``prompt_tokens``, ``input_len``, ``isl``, ``completion_tokens``,
``osl``, ...), one integer per cell, at most :data:`~planner.traffic.workload.MAX_CSV_ROWS`
rows; every error names the line and column. :func:`workload_from_csv` turns the
rows into an :class:`~planner.traffic.workload.Empirical` workload (rows drawn
together when both columns are present).

The CSV is read as a stream, one bounded line at a time: reading stops at the first
line over :data:`MAX_CSV_LINE_CHARS`, the first cell over :data:`MAX_CSV_CELL_CHARS`,
the row after ``max_rows`` or the character after ``max_chars``, so a hostile file costs
what the limits allow, not its size (a 60 MB upload once took 1.7 GB before the row
limit was checked). Messages quote at most :data:`planner.text.ECHO_CHARS` characters
of the file.

Sources: DOMAIN.md section 4 (sizing from traffic).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

from planner.text import ECHO_CHARS, quote
from planner.traffic.workload import MAX_CSV_ROWS, Empirical, Fixed, Growth, Workload

MAX_CSV_CELL_CHARS = 32
"""Longest cell read [characters]: a token count up to 2**24 (the context search limit) is 8
digits, at most 11 written as ``16777216.0`` or ``1.6777216e7``; the longest header alias,
``completion_tokens``, is 17. Room is left for spaces and for counts written longer."""

MAX_CSV_LINE_CHARS = 1_000
"""Longest line read, without its line break [characters]: a data row is two cells and a
delimiter (at most 2 x :data:`MAX_CSV_CELL_CHARS` + 1 = 65); the rest is room for a ``#``
comment line such as an export's description. A longer line is refused unread."""

MAX_CSV_CHARS = 32 * MAX_CSV_ROWS
"""Most characters read from one CSV, blank and comment lines included [characters]:
:data:`~planner.traffic.workload.MAX_CSV_ROWS` rows of 32 characters, above the longest
realistic row (two 8-digit counts, a comma and CRLF: 19). It stops a stream of comment or
blank lines, which the row limit does not count."""


class _Readable(Protocol):
    def readline(self, size: int = -1, /) -> str: ...


CsvSource = str | _Readable | Iterable[str]
"""What :func:`parse_lengths_csv` reads: the whole text, a text stream (read with bounded
``readline``), or an iterable of lines."""

_COLUMN_ALIASES = {
    "prompt": ("prompt", "prompt_len", "prompt_tokens", "input", "input_len", "input_tokens", "isl"),
    "output": ("output", "output_len", "output_tokens", "completion", "completion_tokens", "generated", "osl"),
    "total": ("total", "total_tokens", "tokens", "length", "len", "seq_len", "sequence_len", "context_len"),
}


@dataclass(frozen=True, kw_only=True)
class LengthTable:
    """Lengths read from a CSV; each column is None when absent [tokens]."""

    prompt: tuple[int, ...] | None
    output: tuple[int, ...] | None
    total: tuple[int, ...] | None

    @property
    def num_rows(self) -> int:
        """Rows of data."""
        col = self.total if self.total is not None else self.prompt
        return len(col or ())


def _column_role(name: str) -> str | None:
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    for role, aliases in _COLUMN_ALIASES.items():
        if key in aliases:
            return role
    return None


def _parse_cell(text: str, line_no: int, column: str) -> int:
    cell = text.strip()
    if len(cell) > MAX_CSV_CELL_CHARS:
        raise ValueError(
            f"CSV line {line_no:,}, column {quote(column)}: a cell has at most {MAX_CSV_CELL_CHARS} characters "
            f"(one whole number of tokens), got {quote(cell)}")
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(
            f"CSV line {line_no:,}, column {quote(column)}: expected a whole number of tokens, got {quote(cell)}"
        ) from None
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise ValueError(
            f"CSV line {line_no:,}, column {quote(column)}: expected a whole number of tokens >= 0, got {quote(cell)}")
    return int(value)


def _text_lines(text: str, cap: int) -> Iterator[str]:
    """Lines of ``text`` with their break (``\n``, ``\r\n`` or ``\r``), each cut at ``cap`` characters.

    Slices one line at a time, so a 20 MB text costs one line of memory, not a list of all of them.
    """
    pos, size = 0, len(text)
    while pos < size:
        stop = min(pos + cap, size)
        end = text.find("\n", pos, stop)
        cr = text.find("\r", pos, stop if end < 0 else end)  # a lone CR (old Mac) or the CR of a CRLF
        if cr >= 0:
            end = cr
        if end < 0:
            yield text[pos:stop]
            pos = stop
            continue
        after = end + 2 if text.startswith("\r\n", end) else end + 1
        yield text[pos:after]
        pos = after


def _raw_lines(source: CsvSource) -> Iterator[str]:
    """Lines of ``source`` with their breaks; a line longer than :data:`MAX_CSV_LINE_CHARS` comes cut
    just past the limit, so its caller can refuse it without the rest ever being read."""
    cap = MAX_CSV_LINE_CHARS + 2  # the longest line allowed and a CRLF
    if isinstance(source, str):
        yield from _text_lines(source, cap)
    elif hasattr(source, "readline"):
        readline = source.readline
        while chunk := readline(cap):
            yield chunk
    else:
        yield from source


def _content_lines(source: CsvSource, max_chars: int) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` of the lines that are neither blank nor ``#`` comments, without their breaks.

    Raises:
        ValueError: a line over :data:`MAX_CSV_LINE_CHARS`, or more than ``max_chars`` read in all.
    """
    read = 0
    for line_no, chunk in enumerate(_raw_lines(source), start=1):
        read += len(chunk)
        if read > max_chars:
            raise ValueError(
                f"the CSV is longer than {max_chars:,} characters (reading stopped at line {line_no:,}; blank and "
                f"# comment lines count too); the limit is {max_chars:,}: keep a random sample of the rows")
        line = chunk.rstrip("\r\n")
        if line_no == 1:
            line = line.removeprefix("\ufeff")  # a byte-order mark from Excel's "CSV UTF-8"
        if len(line) > MAX_CSV_LINE_CHARS:
            raise ValueError(
                f"CSV line {line_no:,} is longer than {MAX_CSV_LINE_CHARS:,} characters, the limit per line "
                f"(it starts with {quote(line[:ECHO_CHARS])}): give one or two whole numbers of tokens per line")
        if line.strip() and not line.lstrip().startswith("#"):
            yield line_no, line


def _check_header_cells(cells: list[str], line_no: int) -> None:
    for cell in cells:
        if len(cell) > MAX_CSV_CELL_CHARS:
            raise ValueError(
                f"CSV line {line_no:,}: a column name or number has at most {MAX_CSV_CELL_CHARS} characters, "
                f"got {quote(cell)}; name the columns prompt_len,output_len or total")


def parse_lengths_csv(source: CsvSource, max_rows: int = MAX_CSV_ROWS,
                      max_chars: int = MAX_CSV_CHARS) -> LengthTable:
    """Read request lengths from a CSV, as a stream that stops at the first limit it meets.

    Accepted shapes: one column of total lengths, or two columns prompt and
    output. A header row is optional; recognised names include ``prompt_len``,
    ``input_tokens``, ``output_len``, ``completion_tokens``, ``total``,
    ``tokens``. Without a header one column is totals and two are prompt,
    output. Blank lines and lines starting with ``#`` are skipped.

    Args:
        source: The CSV: its text, a text stream (read line by line with a bounded
            ``readline``), or an iterable of lines.
        max_rows: Most rows of lengths [rows]; reading stops at the row after it.
        max_chars: Most characters read, blank and comment lines included [characters].

    Raises:
        ValueError: empty file, unknown header, wrong number of cells, a cell
            that is not a whole number >= 0, a prompt of 0 tokens, a line over
            :data:`MAX_CSV_LINE_CHARS` or a cell over :data:`MAX_CSV_CELL_CHARS`
            characters, more than ``max_rows`` rows or ``max_chars`` characters --
            each message names the line (and column) and the limit, and quotes at
            most :data:`planner.text.ECHO_CHARS` characters of the file.
    """
    lines = _content_lines(source, max_chars)
    head = next(lines, None)
    if head is None:
        raise ValueError("the CSV of lengths is empty: give one column of total tokens, "
                         "or two columns prompt_len,output_len")
    head_no, head_text = head
    delimiter = ";" if ";" in head_text and "," not in head_text else ","
    first = [c.strip() for c in head_text.split(delimiter)]
    _check_header_cells(first, head_no)
    has_header = any(_looks_like_text(c) for c in first)
    body: Iterable[tuple[int, str]]
    if has_header:
        roles = [_column_role(c) for c in first]
        unknown = [c for c, r in zip(first, roles) if r is None]
        if unknown:
            raise ValueError(
                f"CSV header: unknown column {quote(unknown[0])}; use prompt_len and output_len, or total")
        if len(set(roles)) != len(roles):
            raise ValueError(f"CSV header: a column appears twice ({quote(', '.join(first))})")
        names = first
        body = lines
    else:
        if len(first) == 1:
            roles, names = ["total"], ["total"]
        elif len(first) == 2:
            roles, names = ["prompt", "output"], ["prompt_len", "output_len"]
        else:
            raise ValueError(
                f"CSV line {head_no:,}: {len(first):,} columns without a header; "
                f"give one column (total tokens) or two (prompt_len,output_len)")
        body = itertools.chain([head], lines)
    if set(roles) not in ({"total"}, {"prompt", "output"}):
        raise ValueError(
            f"CSV header: got columns {', '.join(names)}; give either total, or both prompt_len and output_len")
    columns: dict[str, list[int]] = {r: [] for r in roles}
    num_rows = 0
    for line_no, line in body:
        num_rows += 1
        if num_rows > max_rows:
            raise ValueError(f"the CSV has more than {max_rows:,} rows (reading stopped at line {line_no:,}); "
                             f"the limit is {max_rows:,}: keep a random sample of the rows")
        cells = line.split(delimiter)
        if len(cells) != len(roles):
            raise ValueError(f"CSV line {line_no:,}: expected {len(roles)} cells, got {len(cells):,}")
        for role, name, cell in zip(roles, names, cells):
            value = _parse_cell(cell, line_no, name)
            if value < 1 and role == "prompt":
                raise ValueError(f"CSV line {line_no:,}: a prompt needs at least 1 token, got 0")
            if value < 1 and role == "total":
                raise ValueError(f"CSV line {line_no:,}: a request needs at least 1 token, got 0")
            columns[role].append(value)
    if not num_rows:
        raise ValueError("the CSV has a header but no rows of lengths")
    return LengthTable(
        prompt=tuple(columns["prompt"]) if "prompt" in columns else None,
        output=tuple(columns["output"]) if "output" in columns else None,
        total=tuple(columns["total"]) if "total" in columns else None,
    )


def _looks_like_text(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return True
    return False


def workload_from_csv(source: CsvSource, max_model_len: int, growth: Growth = "end") -> Workload:
    """Build a :class:`Workload` from a CSV (see :func:`parse_lengths_csv`, which says what ``source`` may be).

    Raises:
        ValueError: as :func:`parse_lengths_csv` and :func:`workload_from_lengths`.
    """
    return workload_from_lengths(parse_lengths_csv(source), max_model_len, growth)


def workload_from_lengths(table: LengthTable, max_model_len: int, growth: Growth = "end") -> Workload:
    """Build a :class:`Workload` from lengths already read (a table parsed once, used on every rerun).

    Two columns give paired prompt/output draws; one column of totals is
    treated as prompt tokens with no output (sized as given).

    Raises:
        ValueError: a row longer than ``max_model_len`` (the message gives the longest row).
    """
    if table.total is not None:
        longest = max(table.total)
        if longest > max_model_len:
            raise ValueError(
                f"the CSV has a {longest:,}-token request, longer than max_model_len {max_model_len:,}; "
                f"raise max_model_len or drop those rows")
        return Workload(prompt=Empirical(values=table.total, label="CSV totals"), output=Fixed(tokens=0),
                        max_model_len=max_model_len, growth=growth)
    assert table.prompt is not None and table.output is not None
    longest = max(p + o for p, o in zip(table.prompt, table.output))
    if longest > max_model_len:
        raise ValueError(
            f"the CSV has a {longest:,}-token request (prompt + output), longer than max_model_len "
            f"{max_model_len:,}; raise max_model_len or drop those rows")
    return Workload(prompt=Empirical(values=table.prompt, label="from the CSV"),
                    output=Empirical(values=table.output, label="from the CSV"),
                    max_model_len=max_model_len, growth=growth, paired=True)
