"""Request lengths from a CSV: the columns people export, read with limits.

:func:`parse_lengths_csv` accepts a header row naming a prompt and/or an output
column (common aliases: ``prompt_tokens``, ``input_len``, ``isl``, ``completion_tokens``,
``osl``, ...), one integer per cell, at most :data:`~planner.traffic.workload.MAX_CSV_ROWS`
rows; every error names the line and column. :func:`workload_from_csv` turns the
rows into an :class:`~planner.traffic.workload.Empirical` workload (rows drawn
together when both columns are present).

Sources: DOMAIN.md section 4 (sizing from traffic).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.traffic.workload import MAX_CSV_ROWS, Empirical, Fixed, Growth, Workload

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
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(
            f"CSV line {line_no}, column {column!r}: expected a whole number of tokens, got {cell!r}") from None
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise ValueError(
            f"CSV line {line_no}, column {column!r}: expected a whole number of tokens >= 0, got {cell!r}")
    return int(value)


def parse_lengths_csv(text: str, max_rows: int = MAX_CSV_ROWS) -> LengthTable:
    """Read request lengths from CSV text.

    Accepted shapes: one column of total lengths, or two columns prompt and
    output. A header row is optional; recognised names include ``prompt_len``,
    ``input_tokens``, ``output_len``, ``completion_tokens``, ``total``,
    ``tokens``. Without a header one column is totals and two are prompt,
    output. Blank lines and lines starting with ``#`` are skipped.

    Raises:
        ValueError: empty file, unknown header, wrong number of cells, a cell
            that is not a whole number >= 0, a prompt of 0 tokens, or more than
            ``max_rows`` rows -- each message names the line and column.
    """
    lines = [(i, line) for i, line in enumerate(text.lstrip("\ufeff").splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("the CSV of lengths is empty: give one column of total tokens, "
                         "or two columns prompt_len,output_len")
    delimiter = ";" if ";" in lines[0][1] and "," not in lines[0][1] else ","
    first = [c.strip() for c in lines[0][1].split(delimiter)]
    has_header = any(_looks_like_text(c) for c in first)
    if has_header:
        roles = [_column_role(c) for c in first]
        unknown = [c for c, r in zip(first, roles) if r is None]
        if unknown:
            raise ValueError(
                f"CSV header: unknown column {unknown[0]!r}; use prompt_len and output_len, or total")
        if len(set(roles)) != len(roles):
            raise ValueError(f"CSV header: a column appears twice ({', '.join(first)})")
        names = first
        body = lines[1:]
    else:
        if len(first) == 1:
            roles, names = ["total"], ["total"]
        elif len(first) == 2:
            roles, names = ["prompt", "output"], ["prompt_len", "output_len"]
        else:
            raise ValueError(
                f"CSV line {lines[0][0]}: {len(first)} columns without a header; "
                f"give one column (total tokens) or two (prompt_len,output_len)")
        body = lines
    if set(roles) not in ({"total"}, {"prompt", "output"}):
        raise ValueError(
            f"CSV header: got columns {', '.join(names)}; give either total, or both prompt_len and output_len")
    if not body:
        raise ValueError("the CSV has a header but no rows of lengths")
    if len(body) > max_rows:
        raise ValueError(f"the CSV has {len(body):,} rows; the limit is {max_rows:,}: sample it down")
    columns: dict[str, list[int]] = {r: [] for r in roles}
    for line_no, line in body:
        cells = line.split(delimiter)
        if len(cells) != len(roles):
            raise ValueError(f"CSV line {line_no}: expected {len(roles)} cells, got {len(cells)}")
        for role, name, cell in zip(roles, names, cells):
            columns[role].append(_parse_cell(cell, line_no, name))
    if "prompt" in columns:
        zero = next((i for i, v in enumerate(columns["prompt"]) if v < 1), None)
        if zero is not None:
            raise ValueError(f"CSV line {body[zero][0]}: a prompt needs at least 1 token, got 0")
    if "total" in columns:
        zero = next((i for i, v in enumerate(columns["total"]) if v < 1), None)
        if zero is not None:
            raise ValueError(f"CSV line {body[zero][0]}: a request needs at least 1 token, got 0")
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


def workload_from_csv(text: str, max_model_len: int, growth: Growth = "end") -> Workload:
    """Build a :class:`Workload` from CSV text (see :func:`parse_lengths_csv`).

    Two columns give paired prompt/output draws; one column of totals is
    treated as prompt tokens with no output (sized as given).

    Raises:
        ValueError: as :func:`parse_lengths_csv`, or a row longer than
            ``max_model_len`` (the message gives the longest row).
    """
    table = parse_lengths_csv(text)
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
    return Workload(prompt=Empirical(values=table.prompt, label="CSV prompts"),
                    output=Empirical(values=table.output, label="CSV outputs"),
                    max_model_len=max_model_len, growth=growth, paired=True)
