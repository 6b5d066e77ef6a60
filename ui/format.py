"""Numbers to text: the one place where bytes become GiB or GB.

Every size on screen goes through :func:`format_bytes`, so a label always
says which unit it is: ``GiB`` = 2**30 bytes (what PyTorch and the engines
print), ``GB`` = 10**9 bytes (vendor labels), ``B`` for exact byte counts.
Charts need plain floats for their axes; :func:`bytes_to_gib` is the only
conversion for that. Pages never divide or multiply: they call these helpers.

Sources: DOMAIN.md ("GB = 10^9 bytes, GiB = 2^30 bytes, never mixed");
:mod:`planner.units` for the constants.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Literal

from planner.text import count_noun  # noqa: F401 - the pages' plural helper ("1 GPU", "2 GPUs")
from planner.units import GB, GiB, KiB, MiB

ByteUnit = Literal["GiB", "GB", "B", "auto"]

_DIVISORS: dict[str, int] = {"GiB": GiB, "MiB": MiB, "KiB": KiB, "GB": GB}


def binary_unit(num_bytes: int) -> str:
    """The binary unit that reads best for ``num_bytes``: ``B`` under 1 KiB, ``KiB`` under
    1 MiB, ``MiB`` under 1 GiB, else ``GiB`` (by magnitude; negative sizes by their absolute value)."""
    size = abs(num_bytes)
    return "B" if size < KiB else "KiB" if size < MiB else "MiB" if size < GiB else "GiB"


def format_bytes(num_bytes: int, unit: ByteUnit = "GiB", digits: int = 2) -> str:
    """A byte count as labelled text.

    Args:
        num_bytes: Size [bytes]; may be negative (an over-committed budget).
        unit: ``GiB`` (2**30), ``GB`` (10**9), ``B`` (exact, thousands separated) or ``auto``:
            KiB / MiB / GiB by magnitude (:func:`binary_unit`), for sizes that range from a
            block to a card (KV per token, per block, per sequence).
        digits: Decimals for GiB and GB.

    Returns:
        Text such as ``"12.55 GiB"``, ``"13.48 GB"``, ``"131,072 B"`` or (auto) ``"128.00 KiB"``.

    Raises:
        ValueError: an unknown unit.
    """
    if unit == "auto":
        unit = binary_unit(num_bytes)  # type: ignore[assignment]
    if unit == "B":
        return f"{num_bytes:,} B"
    if unit not in _DIVISORS:
        raise ValueError(f"unknown unit {unit!r}; use GiB, GB, B or auto")
    return f"{num_bytes / _DIVISORS[unit]:,.{digits}f} {unit}"


def format_bytes_exact(num_bytes: int, unit: ByteUnit = "GiB", digits: int = 2) -> str:
    """Rounded and exact: ``"12.55 GiB (13,476,831,232 B)"``, for hover text and help."""
    return f"{format_bytes(num_bytes, unit, digits)} ({format_bytes(num_bytes, 'B')})"


def bytes_in(num_bytes: int, unit: str) -> float:
    """A byte count as a float in ``unit`` (``B``, ``KiB``, ``MiB``, ``GiB`` or ``GB``), for chart axes
    whose unit follows the data's magnitude (:func:`binary_unit`).

    Raises:
        ValueError: an unknown unit.
    """
    if unit == "B":
        return float(num_bytes)
    if unit not in _DIVISORS:
        raise ValueError(f"unknown unit {unit!r}; use B, KiB, MiB, GiB or GB")
    return num_bytes / _DIVISORS[unit]


def bytes_to_gib(num_bytes: int) -> float:
    """A byte count as a float number of GiB, for chart axes and numeric table columns."""
    return num_bytes / GiB


def gib_to_bytes(gib: float) -> int:
    """A user-entered size in GiB as whole bytes (truncated, as the CLI's ``--overhead-gib``).

    Raises:
        ValueError: a negative or non-finite value.
    """
    if not math.isfinite(gib) or gib < 0:
        raise ValueError(f"a size must be a finite number >= 0 GiB, got {gib}")
    return int(gib * GiB)


def format_int(value: int) -> str:
    """A count with thousands separators: ``"8,192"``."""
    return f"{value:,}"


def format_budget(num_bytes: int) -> str:
    """A KV budget [bytes]: ``"12.55 GiB"``, or ``"none"`` when weights and overhead exceed the usable memory
    (a negative budget is a shortfall, not a budget)."""
    return format_bytes(num_bytes) if num_bytes >= 0 else "none"


def format_gpus(num_gpus: int, gpu_name: str) -> str:
    """``"8 x H200 SXM 141GB"``, or the GPU's name alone for one GPU: how a page's title names the GPUs of one
    replica (Home's and GQA savings' titles; QA: "on H200 SXM 141GB" for a plan of 8 GPUs)."""
    return gpu_name if num_gpus == 1 else f"{format_int(num_gpus)} x {gpu_name}"


def format_tokens(num_tokens: int) -> str:
    """A token count: ``"8,192 tokens"`` (``"1 token"``)."""
    return f"{num_tokens:,} token" + ("" if num_tokens == 1 else "s")


def format_params(num_params: int, digits: int = 2) -> str:
    """A parameter count in billions (10**9) or millions (10**6): ``"8.03 B"``, ``"494.03 M"``."""
    if num_params >= 10**12:
        return f"{num_params / 10**12:,.{digits}f} T"
    if num_params >= 10**9:
        return f"{num_params / 10**9:,.{digits}f} B"
    return f"{num_params / 10**6:,.{digits}f} M"


def format_decimal(value: float, max_digits: int = 6) -> str:
    """A decimal number in full, with thousands separators and no trailing zeros: ``"1,000,000"``, ``"0.01"``,
    ``"2.5"`` (``:g`` would write ``"1e+06"``); at most ``max_digits`` after the point."""
    text = f"{value:,.{max_digits}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_signed_percent(share: float, max_digits: int = 4) -> str:
    """A signed share as a percentage with as many decimals as it takes not to print zero (one at least,
    ``max_digits`` at most): ``-0.049`` -> ``"-4.9%"``, ``-0.000493`` -> ``"-0.05%"``; a gap never reads
    ``"-0.0%"``."""
    for digits in range(1, max_digits + 1):
        text = f"{share:+.{digits}%}"
        if share == 0 or float(text[:-1]) != 0:
            return text
    return text


def format_ms(milliseconds: float, digits: int = 2) -> str:
    """A time in milliseconds at ``digits`` decimals: ``"10.74 ms"``. A table column of the same figure takes
    :func:`decimal_format` of the same ``digits``, so text and table print one value."""
    return f"{milliseconds:,.{digits}f} ms"


def format_duration(milliseconds: float) -> str:
    """A step time short enough for a half-width tile: ``"27.12 ms"`` below a second, ``"1.27 s"`` from one (QA:
    "1,266.92 ms" wrapped to two lines in a pool's tile at 1,280 px); the exact figure goes in its help."""
    return format_ms(milliseconds) if milliseconds < 999.995 else f"{milliseconds / 1000:,.2f} s"


def decimal_format(digits: int) -> str:
    """The printf-style format of a ``st.column_config.NumberColumn`` at ``digits`` decimals: ``"%.2f"``."""
    return f"%.{digits}f"


def format_fraction(value: float) -> str:
    """A fraction such as ``gpu_memory_utilization`` as the user typed it: ``"0.9"``."""
    return f"{value:g}"


def format_limited_by(limited_by: str) -> str:
    """Plain words for ``Plan.max_context_len_limited_by``."""
    return {
        "memory": "limited by GPU memory",
        "model": "limited by the model's max_position_embeddings",
        "search limit": "search limit reached",
        "none": "no layer grows with context",
        "tensor_parallel": "num_gpus cannot split the model's attention heads",
    }.get(limited_by, limited_by)


def format_context(num_tokens: int, model_limit: int | None) -> str:
    """A context length that may exceed the model's ``max_position_embeddings``, saying so:
    ``"8,192"``, or ``"526,192 (beyond the model's 8,192)"`` when memory alone would allow more
    than the model was built for."""
    if model_limit and num_tokens > model_limit:
        return f"{num_tokens:,} (beyond the model's {model_limit:,})"
    return f"{num_tokens:,}"


def format_bytes_short(num_bytes: int) -> str:
    """A byte count for axis ticks in binary units: ``"512 B"``, ``"16 KiB"``, ``"4 MiB"`` (exact multiples only)."""
    for size, suffix in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if num_bytes >= size and num_bytes % size == 0:
            return f"{num_bytes // size:,} {suffix}"
    return f"{num_bytes:,} B"


def format_tokens_short(num_tokens: int) -> str:
    """A token count for axis ticks, K = 1,024: ``"512"``, ``"8K"``, ``"1M"`` (exact multiples only)."""
    for size, suffix in ((1 << 20, "M"), (1 << 10, "K")):
        if num_tokens >= size and num_tokens % size == 0:
            return f"{num_tokens // size:,}{suffix}"
    return f"{num_tokens:,}"


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for messages that quote user input."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shorten_words(text: str, limit: int = 200) -> str:
    """``text`` whole when it fits ``limit`` characters, else cut after its last whole word that fits, with an
    ellipsis: for a sentence quoted in a one-line banner whose full text is shown elsewhere (QA: "would keep t…")."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    head = cut.rsplit(" ", 1)[0] if " " in cut and not text[limit - 1].isspace() else cut
    return head.rstrip(" ,;:") + "…"


def format_command(command: str, width: int | None = None) -> str:
    """A shell command one flag per line, continued with `` \\``, for a code block that is read and copied.

    Flags (tokens starting with ``-``) start a line with the values that follow them; what comes before
    the first flag (the program, the model; ``python -m module``) stays on the first line. Each line is re-quoted with
    :func:`shlex.join`, so the text pastes into bash as one command. A command ``shlex`` cannot split
    (an unclosed quote) is returned as it is.
    Example: ``vllm serve m --tensor-parallel-size 2 --max-model-len 8192`` ->
    ``vllm serve m \\`` / ``  --tensor-parallel-size 2 \\`` / ``  --max-model-len 8192``.

    Args:
        command: The command as one line.
        width: The characters a line of the code block shows (a narrow column), or None. When the first line
            with its `` \\`` is wider, its last word (the model) gets a line of its own, so the block wraps
            inside a name instead of leaving a lone `` \\`` on a line (the Disaggregation page's pool columns).
    """
    import shlex

    command, comment = _split_comment(command)
    try:
        tokens = shlex.split(command)
    except ValueError:
        return command + (f"  {comment}" if comment else "")
    lines: list[list[str]] = [[]]
    for i, token in enumerate(tokens):
        module = i > 0 and token == "-m" and tokens[i - 1].startswith("python")  # python -m pkg.module
        if token.startswith("-") and lines[-1] and not _is_number(token) and not module:
            lines.append([])
        lines[-1].append(token)
    head = lines[0]
    if width is not None and len(head) > 1 and not head[0].startswith("#") and len(shlex.join(head)) + 2 > width:
        lines[0:1] = [head[:-1], head[-1:]]
    text = " \\\n  ".join(shlex.join(line) for line in lines if line)
    return f"{text}\n{comment}" if comment else text


def _split_comment(command: str) -> tuple[str, str]:
    """``(command, comment)``: a trailing shell comment (a ``#`` that starts a word outside quotes, as bash reads
    it) split off, so its words are not re-quoted as arguments; ``""`` when there is none."""
    import shlex

    for i, char in enumerate(command):
        if char == "#" and i and command[i - 1].isspace():
            try:
                shlex.split(command[:i])
            except ValueError:  # inside a quote
                continue
            return command[:i].rstrip(), command[i:]
    return command, ""


def _is_number(token: str) -> bool:
    """``-1``, ``-0.5``: a negative value after a flag, not a flag of its own."""
    return token.lstrip("-").replace(".", "", 1).isdigit()


MARKDOWN_SPECIALS = frozenset("\\`[]<>$*_~|#")
"""Characters :func:`md_text` backslash-escapes (CommonMark 0.31 "Backslash escapes": any ASCII
punctuation may be): the brackets without which no link ``[..](..)``, image ``![..](..)`` or
Streamlit ``:color[..]`` directive can form, ``<`` of autolinks and HTML, code, Streamlit's ``$``
LaTeX, and the emphasis, strikethrough, table and heading marks, so a name shows as typed.
Parentheses and ``!`` do nothing without a bracket and stay as they are."""

_MESSAGE_SPECIALS = frozenset("\\`[]<>$")
"""What :func:`md_message` escapes outside code spans: only what makes a link, an image, HTML, code
or math, so the message's own words (``max_model_len``, ``x * y``) read the same in the page and
in the Markdown source."""

_WORD_JOINER = "\u2060"
"""U+2060 WORD JOINER: invisible, and part of no URL, domain or e-mail address."""

_AUTOLINK_STARTS = re.compile(r"(?i)(://|www\.|mailto:|xmpp:|@)")
"""Where GitHub-flavoured Markdown's autolink literals start (GFM spec, "Autolinks (extension)":
``http(s)://``, ``www.``, ``mailto:``, ``xmpp:``, ``a@b.c``). remark-gfm finds them after backslash
escapes are resolved (seen in Streamlit 1.67: ``https\\://x`` is still a link), so a joiner goes
inside each: ``:\u2060//``, ``www\u2060.``, ``mailto\u2060:``, ``\u2060@``."""


def _break_autolinks(text: str) -> str:
    def joined(match: re.Match) -> str:
        found = match.group(0)
        if found == "@":
            return _WORD_JOINER + "@"
        if found == "://":
            return ":" + _WORD_JOINER + "//"
        return found[:-1] + _WORD_JOINER + found[-1]
    return _AUTOLINK_STARTS.sub(joined, text)


_DIRECTIVE_START = re.compile(r"(?<![A-Za-z0-9\\]):(?=[A-Za-z])")
"""A colon that can open a Streamlit text directive or emoji shortcode: ``:blue[team]``, ``:red-background[x]``,
``:smile:`` (Streamlit's Markdown reads ``:name`` as a directive even without its brackets, and drops it: seen in
Streamlit 1.67, a custom model named ``acme :blue[team]`` showed as "acme [team]", and ``:smile:`` as an emoji
even after a backslash). A :data:`_WORD_JOINER` after the colon breaks both. Not after a letter or digit
(``key:value``, ``12:30`` render as typed), nor one already escaped."""


def _escaped(text: str, specials: frozenset[str]) -> str:
    out = "".join("\\" + ch if ch in specials else ch for ch in text.replace("\r", " ").replace("\n", " "))
    return _break_autolinks(_DIRECTIVE_START.sub(":" + _WORD_JOINER, out))


def md_text(value: object) -> str:
    """User text made inert for ``st.markdown`` and every element that renders Markdown.

    Every string a visitor can set (a custom model or GPU name, a link value, a search, a GGUF
    ``general.name``, an uploaded file's name) goes through this (or :func:`md_message`) before a page
    echoes it, so ``[Click to re-login](https://...)`` or ``![t](https://.../pixel.png)`` shows as
    text: no link, no remote image.

    Args:
        value: Any object; ``str()`` of it is escaped.

    Returns:
        The text with :data:`MARKDOWN_SPECIALS` backslash-escaped, a :data:`_WORD_JOINER` inside each
        autolink start (:data:`_AUTOLINK_STARTS`) and line breaks as spaces (no heading or list can
        start on a new line). It renders as the same characters.
    """
    return _escaped(str(value), MARKDOWN_SPECIALS)


_LIST_START = re.compile(r"^(\s*)([-+]|\d{1,9}[.)])(?=\s|$)")
"""A list marker at the start of a text (CommonMark "List items"): a lone "-" renders as a bullet."""


def md_cell(value: object) -> object:
    """A table cell for ``st.table``, which renders each string cell as Markdown (Streamlit 1.67): strings
    through :func:`md_text`, with a leading list marker (``-``, ``+``, ``1.``) escaped too; other values as they
    are. A "-" cell showed as a bullet and a custom model name could load a remote image there."""
    if not isinstance(value, str):
        return value
    return _LIST_START.sub(lambda m: m.group(1) + m.group(2)[:-1] + "\\" + m.group(2)[-1], md_text(value), count=1)


def quoted(lines: Sequence[str]) -> list[str]:
    """An engine's own words (its refusal, as it prints it) in quotation marks, each inert (:func:`md_message`),
    so they read as quoted, not as our sentences (a Markdown block quote drew them pale on a warning's yellow)."""
    return [f"“{md_message(line)}”" for line in lines]


def md_message(text: object) -> str:
    """A message of ours that quotes user input, made inert for Markdown but for its code spans.

    Messages mark ids and values as code (`` `model=x` ``), and Markdown renders code spans literally
    (no links, images or emphasis inside). So the text is split at backticks: the code spans stay,
    everything between them has :data:`_MESSAGE_SPECIALS` escaped and its autolinks broken. A backtick inside a quoted value only moves
    the split, and each piece is still either code or escaped text; an unpaired last backtick is escaped.

    Args:
        text: The message (``str()`` of any object).

    Returns:
        Markdown that shows the message's characters, with its code spans as code.
    """
    pieces = str(text).replace("\r", " ").replace("\n", " ").split("`")
    closed = len(pieces) % 2 == 1  # an even count of backticks pairs them all
    out: list[str] = []
    for i, piece in enumerate(pieces):
        if i % 2 == 0:
            out.append(_escaped(piece, _MESSAGE_SPECIALS))
        elif (closed or i < len(pieces) - 1) and piece.strip():
            out.append(f"`{piece}`")
        else:
            out.append(_escaped("`" + piece + ("`" if closed or i < len(pieces) - 1 else ""), _MESSAGE_SPECIALS))
    return "".join(out)


def plotly_text(value: object) -> str:
    """User text for a Plotly label, legend entry or hover text: ``<``, ``>`` and ``&`` as entities.

    Plotly.js renders a subset of HTML in every text property (``<a href>``, ``<b>``, ``<br>``; plotly.js
    ``src/lib/svg_text_utils.js``), so a custom name ``<a href="https://...">`` would be a live link in the
    legend. Entities show the characters and start no tag.
    """
    import html  # noqa: PLC0415 - tiny, used by this edge only

    return html.escape(str(value), quote=False)
