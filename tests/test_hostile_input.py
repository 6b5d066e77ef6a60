"""Hostile input, second round: the readers' limits outside configs, GGUF, logs and CSVs.

Each test reproduces one finding of the issue "Hostile input, second round" and failed before its fix:

* a custom GPU memory of ``1e999999`` raised ``decimal.Overflow`` (a traceback on 7 pages);
* control characters in a custom GPU name (``--gpu-name``, a ``custom_gpu`` code) reached the terminal;
* ``--config /dev/zero`` read without end (the size check trusted ``st_size``); a FIFO blocked;
* ``--speculative-config`` of 50,000 ``[`` ended in ``RecursionError``;
* ``--model`` of 100,000 characters cost 43 s in the close-match search and was echoed whole;
* messages quoted unbounded input; Markdown in a user string rendered as a link or a remote image;
* a visitor could see a traceback with server paths (``client.showErrorDetails``).
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import custom, hub
from model_catalog.share_codec import GPU_PARAM, decode_gpu, pack
from planner.cli import main
from planner.text import ECHO_CHARS, quote
from ui.format import md_message, md_text, plotly_text

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60


def _bare(text: str) -> str:
    """What Markdown shows for ``text`` made by md_text: escapes resolved, joiners dropped."""
    return re.sub(r"\\(.)", r"\1", text).replace("\u2060", "")


# --------------------------------------------------------------------------
# planner.text.quote
# --------------------------------------------------------------------------
def test_quote_keeps_at_most_the_echo_limit_and_says_the_length():
    text = quote("x" * 100_000)
    assert text.count("x") == ECHO_CHARS
    assert "100,000 characters" in text
    assert quote("short") == "'short'"


def test_quote_writes_control_characters_as_escapes():
    shown = quote("\x1b]0;title\x07")
    assert "\x1b" not in shown and "\x07" not in shown
    assert "\\x1b" in shown


def test_quote_never_raises_on_a_huge_integer():
    assert quote(10**5000)  # str() of it raises past 4,300 digits


# --------------------------------------------------------------------------
# Custom GPU: memory and name
# --------------------------------------------------------------------------
@pytest.mark.parametrize("memory", ["1e999999", "9" * 5000, "1e20", "1e-999999"])
def test_absurd_custom_gpu_memory_is_refused_with_the_range(memory):
    with pytest.raises(ValueError, match=r"outside 1 byte \.\. 64 TiB") as err:
        custom.custom_gpu("card", memory, "GiB", 1000)
    assert len(str(err.value)) < 200


def test_custom_gpu_code_with_overflowing_memory_is_a_link_problem():
    code = pack({"n": "card", "m": "1e999999", "u": "GiB", "b": 1000.0})
    with pytest.raises(ValueError, match=GPU_PARAM):
        decode_gpu(code)


def test_page_with_overflowing_custom_gpu_shows_a_message_and_plans_on():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=TIMEOUT_S)
    at.query_params["gpu"] = "custom"
    at.query_params[GPU_PARAM] = pack({"n": "card", "m": "1e999999", "u": "GiB", "b": 1000.0})
    at.run()
    assert not at.exception
    shown = " ".join(e.value for e in at.error)
    assert "64 TiB" in shown


@pytest.mark.parametrize("name", ["\x1b]0;owned\x07", "tab\there", "line\nbreak", "x" * 101])
def test_non_printable_or_long_gpu_names_are_refused(name):
    with pytest.raises(ValueError, match="printable .* at most 100 characters"):
        custom.custom_gpu(name, "24", "GiB", 1000)


def test_cli_gpu_name_with_a_terminal_escape_is_one_line_without_the_escape(capsys):
    code = main(["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu-memory-gib", "24",
                 "--gpu-name", "\x1b]0;owned\x07"])
    err = capsys.readouterr().err
    assert code == 2
    assert "\x1b" not in err and "\x07" not in err
    assert err.count("\n") == 1


# --------------------------------------------------------------------------
# CLI files and flags
# --------------------------------------------------------------------------
@pytest.mark.parametrize("flag", ["--config", "--gguf"])
def test_cli_refuses_a_device_file(flag, capsys):
    code = main(["plan", flag, "/dev/zero", "--gpu", "nvidia-h100-sxm-80gb"])
    assert code == 2
    assert "not a regular file" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--config", "--gguf"])
def test_cli_refuses_a_fifo_without_blocking(flag, tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code = main(["plan", flag, str(fifo), "--gpu", "nvidia-h100-sxm-80gb"])
    assert code == 2
    assert "not a regular file" in capsys.readouterr().err


def test_cli_config_read_stops_at_the_byte_limit(tmp_path, capsys):
    big = tmp_path / "config.json"
    big.write_bytes(b" " * (custom.MAX_CONFIG_BYTES + 10))
    assert main(["plan", "--config", str(big), "--gpu", "nvidia-h100-sxm-80gb"]) == 2
    assert f"at most {custom.MAX_CONFIG_BYTES:,} bytes" in capsys.readouterr().err


@pytest.mark.parametrize(("value", "said"), [
    ("[" * 50_000, "at most 4,096 are accepted"),
    ("[" * 2_000, "2,000 levels deep"),
    ('{"method": "eagle", "num_speculative_tokens": 3', "is not JSON"),
], ids=["50k-brackets", "2k-deep", "unclosed"])
def test_cli_speculative_config_bombs_are_one_line(value, said, capsys):
    code = main(["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb",
                 "--speculative-config", value])
    err = capsys.readouterr().err
    assert code == 2
    assert said in err
    assert err.count("\n") == 1 and len(err) < 400


def test_cli_limit_mm_per_prompt_bomb_is_one_line(capsys):
    code = main(["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-sxm-80gb",
                 "--limit-mm-per-prompt", "{" * 20_000])
    assert code == 2
    assert "--limit-mm-per-prompt" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--model", "--gpu"])
def test_cli_overlong_id_is_refused_before_matching_and_quoted_short(flag, capsys):
    args = {"--model": "meta-llama/Meta-Llama-3-8B", "--gpu": "nvidia-h100-sxm-80gb"}
    args[flag] = "a" * 100_000
    code = main(["plan", *[item for pair in args.items() for item in pair]])
    err = capsys.readouterr().err
    assert code == 2
    assert "100,000 characters" in err and "longer than 200 characters" in err
    assert len(err) < 400


def test_hub_repo_id_is_quoted_short():
    with pytest.raises(hub.HubError) as err:
        hub.fetch_model("[x](y)" * 1_000)
    assert len(str(err.value)) < 300
    assert err.value.kind == "bad_input"


# --------------------------------------------------------------------------
# Markdown and Plotly escaping
# --------------------------------------------------------------------------
ATTACKS = ["[Click to re-login](https://evil.example/x)", "![t](https://evil.example/p.png)",
           "https://evil.example www.evil.example a@evil.example", "<a href='https://evil.example'>x</a>",
           ":red[red] :material/home: $x^2$ **b** _i_ `c`", "# heading\n- item"]


@pytest.mark.parametrize("text", ATTACKS)
def test_md_text_leaves_no_markdown_construct(text):
    escaped = md_text(text)
    assert not re.search(r"(?<!\\)[\[\]`*_<>$#]", escaped), escaped  # every special is escaped
    assert "://" not in escaped and "www." not in escaped.lower() and "a@" not in escaped
    assert "\n" not in escaped
    assert _bare(escaped) == text.replace("\n", " ")


def test_md_message_keeps_code_spans_and_escapes_the_rest():
    shown = md_message("Link parameter `model=x` is unknown: '[a](https://evil.example)'")
    assert "`model=x`" in shown
    assert "[" not in shown.replace("\\[", "") and "://" not in shown


def test_md_message_with_a_backtick_in_the_value_still_escapes_outside_code():
    shown = md_message("Link parameter `model=a`[x](https://evil.example)`: unknown")
    for piece in shown.split("`")[0::2]:  # outside code spans
        assert "[" not in piece.replace("\\[", "") and "://" not in piece


def test_plotly_text_starts_no_tag():
    assert plotly_text("<a href='https://evil.example'>x</a> & co") == (
        "&lt;a href='https://evil.example'&gt;x&lt;/a&gt; &amp; co")


# --------------------------------------------------------------------------
# Server configuration
# --------------------------------------------------------------------------
def test_hosted_visitors_never_see_tracebacks():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["client"]["showErrorDetails"] == "none"


def test_cli_lengths_csv_refuses_a_device_and_streams_a_file(tmp_path, capsys):
    base = ["find", "--model", "gpt2", "--users", "5", "--prompt-len", "1", "--output-len", "1",
            "--max-model-len", "1024", "--lengths-csv"]
    assert main([*base, "/dev/zero"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    rows = tmp_path / "lengths.csv"
    rows.write_text("1\n" * 1_000_001)
    assert main([*base, str(rows)]) == 2
    assert "reading stopped at line 1,000,001" in capsys.readouterr().err


def test_every_text_box_fits_in_the_frame_limit_together():
    """The server refuses frames over ``server.maxWidgetStateSize``; the boxes' own limits must fit in it."""
    from planner.engines.logparse import MAX_LOG_CHARS
    from ui.custom_panel import PASTE_MAX_CHARS, QUANT_PASTE_MAX_CHARS

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    frame = config["server"]["maxWidgetStateSize"] * 10**6  # Streamlit's MB here is 10^6 bytes
    boxes = PASTE_MAX_CHARS + QUANT_PASTE_MAX_CHARS + MAX_LOG_CHARS + 10 * 4_096  # + short fields, link codes
    assert boxes < frame, f"{boxes:,} characters of boxes do not fit a {frame:,}-byte frame"
    assert 14 * 10**6 > frame  # the 14 MB paste is refused at the frame
