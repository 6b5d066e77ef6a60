"""Unit tests of the UI helpers: byte formatting, link value checks, table helpers, chart builders.

Sizes are powers of two or ten so each expected string can be checked by hand.
"""

from __future__ import annotations

import math
import re

import pandas as pd
import pytest

from planner.budget import PlanRequest, plan
from planner.units import GB, GiB, MiB
from tests.factories import dense_model
from ui import budget_bar, charts, data
from ui.format import (
    bytes_to_gib,
    format_bytes,
    format_bytes_exact,
    format_fraction,
    format_int,
    format_params,
    format_tokens,
    format_tokens_short,
    gib_to_bytes,
    md_cell,
)
from ui.inputs import NUMBER_FIELDS, PlanInputs, number_problem


@pytest.mark.parametrize(("num_bytes", "unit", "text"), [
    (GiB, "GiB", "1.00 GiB"),
    (GB, "GB", "1.00 GB"),
    (GB, "GiB", "0.93 GiB"),            # 10**9 / 2**30 = 0.931...
    (GiB, "GB", "1.07 GB"),             # 2**30 / 10**9 = 1.073...
    (80 * GiB, "GiB", "80.00 GiB"),
    (131072, "B", "131,072 B"),
    (0, "GiB", "0.00 GiB"),
    (-GiB // 2, "GiB", "-0.50 GiB"),    # an over-committed budget stays visible
    (1536 * MiB, "GiB", "1.50 GiB"),
    (131072, "auto", "128.00 KiB"),     # KV per token next to GiB figures: by magnitude, not "131,072 B"
    (1023, "auto", "1,023 B"),
    (1024, "auto", "1.00 KiB"),
    (MiB - 1, "auto", "1,024.00 KiB"),  # 1,048,575 B rounds to 1,024.00 in KiB
    (MiB, "auto", "1.00 MiB"),
    (448 * MiB, "auto", "448.00 MiB"),
    (GiB, "auto", "1.00 GiB"),
    (-3 * MiB, "auto", "-3.00 MiB"),
])
def test_format_bytes_always_labels_the_unit(num_bytes, unit, text):
    assert format_bytes(num_bytes, unit) == text


def test_format_bytes_rejects_unknown_units():
    with pytest.raises(ValueError, match="unknown unit 'MB'"):
        format_bytes(1, "MB")


def test_format_bytes_exact_shows_both():
    assert format_bytes_exact(GiB) == "1.00 GiB (1,073,741,824 B)"


def test_format_bytes_digits():
    assert format_bytes(GiB + GiB // 8, "GiB", digits=3) == "1.125 GiB"


def test_bytes_to_gib_and_back():
    assert bytes_to_gib(3 * GiB) == 3.0
    assert gib_to_bytes(1.5) == 1536 * MiB
    assert gib_to_bytes(0) == 0


@pytest.mark.parametrize("bad", [-1.0, math.inf, math.nan])
def test_gib_to_bytes_rejects_bad_sizes(bad):
    with pytest.raises(ValueError, match="finite number >= 0 GiB"):
        gib_to_bytes(bad)


@pytest.mark.parametrize(("value", "text"), [(1, "1 token"), (0, "0 tokens"), (8192, "8,192 tokens")])
def test_format_tokens(value, text):
    assert format_tokens(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (128, "128"), (1024, "1K"), (8192, "8K"), (131072, "128K"), (1 << 20, "1M"), (1536, "1,536"), (3000, "3,000"),
])
def test_format_tokens_short_uses_binary_k(value, text):
    assert format_tokens_short(value) == text


@pytest.mark.parametrize(("value", "text"), [
    (8_030_261_248, "8.03 B"), (494_032_768, "494.03 M"), (671_000_000_000, "671.00 B"), (10**12, "1.00 T"),
])
def test_format_params(value, text):
    assert format_params(value) == text


def test_small_formatters():
    assert format_int(1234567) == "1,234,567"
    assert format_fraction(0.9) == "0.9"
    assert format_fraction(1.0) == "1"


# --------------------------------------------------------------------------
# Link values
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("key", "raw", "problem"), [
    ("context_len", "8192", None),
    ("context_len", " 4096 ", None),
    ("context_len", "abc", "is not a whole number"),
    ("context_len", "1e5", "is not a whole number"),
    ("context_len", "8192.5", "is not a whole number"),
    ("context_len", "inf", "is not a whole number"),
    ("context_len", "0", "is too small"),
    ("context_len", "-5", "is too small"),
    ("context_len", str(1 << 25), "is too large"),
    ("context_len", "", "is empty"),
    ("gpu_memory_utilization", "0.95", None),
    ("gpu_memory_utilization", "1", None),
    ("gpu_memory_utilization", "0", "is too small"),
    ("gpu_memory_utilization", "1.5", "is too large"),
    ("gpu_memory_utilization", "nan", "is not a finite number"),
    ("gpu_memory_utilization", "ninety", "is not a number"),
    ("overhead_gib", "", None),           # empty = use the planner's estimate
    ("overhead_gib", "2.5", None),
    ("overhead_gib", "-1", "is too small"),
])
def testnumber_problem(key, raw, problem):
    assert number_problem(NUMBER_FIELDS[key], raw) == problem


def test_plan_number_fields_are_the_cli_flags():
    # Other UI modules may register more fields (traffic, engine); the plan's own are these.
    core = {"num_gpus", "context_len", "batch_size", "gpu_memory_utilization", "block_size", "overhead_gib"}
    assert core <= set(NUMBER_FIELDS)
    assert all(NUMBER_FIELDS[k].key == k for k in core)


def test_plan_inputs_request_converts_overhead_like_the_cli():
    form = PlanInputs(model_ids=("m",), gpu_ids=("g",), context_len=4096, batch_size=2, overhead_gib=1.5)
    request = form.request()
    assert request == PlanRequest(context_len=4096, batch_size=2, overhead_bytes=1536 * MiB)
    assert "--overhead-gib 1.5" in form.cli_command()
    assert "--context-len 4096" in form.cli_command()


# --------------------------------------------------------------------------
# Tables and charts
# --------------------------------------------------------------------------
def test_search_matches_every_word_case_insensitively():
    table = pd.DataFrame({"id": ["meta-llama/Llama-2-7b-hf", "Qwen/Qwen2.5-7B", "meta-llama/Llama-2-70b-hf"],
                          "name": ["Llama 2 7B", "Qwen2.5 7B", "Llama 2 70B"]})
    assert list(data.search(table, "LLAMA 70b")["id"]) == ["meta-llama/Llama-2-70b-hf"]
    assert len(data.search(table, "")) == 3
    assert data.search(table, "mistral").empty


def test_table_contexts_stop_at_the_model_limit():
    assert data.table_contexts(dense_model(max_position_embeddings=4096)) == (128, 256, 512, 1024, 2048, 4096)
    assert data.table_contexts(dense_model(max_position_embeddings=40960))[-1] == 40960


def test_within_limit_cuts_each_curve():
    assert data.within_limit((128, 4096, 8192), dense_model(max_position_embeddings=4096)) == (128, 4096)


def test_first_url():
    assert data.first_url("see https://huggingface.co/x/y/blob/abc/config.json (official)") == \
        "https://huggingface.co/x/y/blob/abc/config.json"
    assert data.first_url("no link") is None


def _bar_parts(fragment: str) -> tuple[dict[str, int], dict[str, float]]:
    """``({segment: bytes}, {line: left %})`` of a budget bar's HTML (ui/budget_bar.py)."""
    segments = {name: int(size) for name, size in re.findall(r'data-segment="([^"]+)" data-bytes="(\d+)"', fragment)}
    lines = {name: float(left) for name, left in re.findall(r'data-line="(\w+)" style="[^"]*left:([\d.]+)%', fragment)}
    return segments, lines


def test_budget_bar_segments_are_plan_fields():
    model = dense_model()  # 4 layers x 2 x 8 heads x 128 x 2 B = 16,384 B per token
    p = plan(model, 8 * GiB, PlanRequest(context_len=1024, overhead_bytes=GiB), gpu_id="test")
    segments, lines = _bar_parts(budget_bar.budget_bar_html(p, "test GPU"))
    assert segments["Weights"] == p.weights_bytes_per_gpu
    assert segments["KV cache in use"] == p.kv_cache_bytes_in_use == 16 * 1024 * 1024  # 16 KiB x 1,024
    assert segments["Overhead (override)"] == GiB
    assert segments["Free KV budget"] == p.free_bytes
    assert sum(segments.values()) == p.usable_memory_bytes  # it fits: the segments fill the usable memory
    # the card's 8 GiB is the scale: the card line at 100 %, the usable one at 0.9 of it
    assert lines == {"usable": pytest.approx(100 * p.usable_memory_bytes / p.gpu_memory_bytes, abs=1e-3),
                     "card": 100.0}


def test_budget_bar_names_the_activation_peak_as_the_engine_page_does():
    model = dense_model()
    p = plan(model, 24 * GiB, PlanRequest(context_len=1024), gpu_id="test")  # the planner's own estimate
    assert p.activation_bytes + p.logits_bytes > 0 and min(p.activation_bytes, p.logits_bytes) == 0
    segments, _ = _bar_parts(budget_bar.budget_bar_html(p, "test GPU"))
    peak = {name: size for name, size in segments.items() if name.startswith("Activation peak")}
    assert list(peak.values()) == [p.activation_bytes + p.logits_bytes]  # one segment: the part that is not zero
    assert ("Activation peak (sampler)" if p.logits_bytes else "Activation peak (forward)") in peak
    assert segments["Runtime"] == p.runtime_bytes
    assert sum(segments.values()) == p.usable_memory_bytes


def test_budget_bar_runs_past_the_card_when_the_shortfall_is_larger_than_the_headroom():
    model = dense_model()
    p = plan(model, 8 * GiB, PlanRequest(context_len=4096, batch_size=200, overhead_bytes=GiB), gpu_id="test")
    assert p.kv_cache_shortfall_bytes > p.gpu_memory_bytes - p.usable_memory_bytes
    fragment = budget_bar.budget_bar_html(p, "test GPU")
    segments, lines = _bar_parts(fragment)
    assert segments["KV over the budget"] == p.kv_cache_shortfall_bytes
    scale = sum(segments.values())  # wider than the card: the card line sits inside the bar
    assert lines["card"] == pytest.approx(100 * p.gpu_memory_bytes / scale, abs=1e-3)
    assert "usable " + format_bytes(p.usable_memory_bytes) in fragment and "card 8.00 GiB" in fragment


def test_budget_bar_ticks_are_round_steps():
    assert budget_bar.nice_ticks(80.0) == [0, 20, 40, 60, 80]  # 80 / 6 = 13.3 -> a step of 20
    assert budget_bar.nice_ticks(23.6) == [0, 5, 10, 15, 20]
    assert budget_bar.nice_ticks(0.9) == [0, 0.2, 0.4, 0.6, 0.8]  # rounded: no 0.6000000000000001
    assert budget_bar.nice_ticks(0) == [0.0]


def test_concurrency_lines_drop_zero_points_for_the_log_axis():
    fig = charts.concurrency_lines((1024, 2048, 4096), {"GPU": (4, 2, 0)})
    assert list(fig.data[0].x) == [1024, 2048]
    assert list(fig.data[0].y) == [4, 2]


def test_concurrency_lines_name_a_lone_line():
    """QA (stop 38): DeepSeek-V3.2 on the default Concurrency GPUs drew one line (the H200's; the other four
    hold no sequence) with no legend, as Plotly hides a legend of one drawn trace: nothing named the line. The
    legend is always on, and a GPU that holds no sequence at any context (its tile says 0) draws no empty entry."""
    fig = charts.concurrency_lines((1024, 2048), {"H200": (40, 20), "RTX 4090": (0, 0)})
    assert fig.layout.showlegend is True
    assert [t.name for t in fig.data] == ["H200"]


def test_format_context_says_when_memory_allows_more_than_the_model():
    """Issue: "max context before overheads 526,192" for a model limited to 8K, without a word."""
    from ui.format import format_context

    assert format_context(526_192, 8192) == "526,192 (beyond the model's 8,192)"
    assert format_context(8192, 8192) == "8,192"
    assert format_context(4096, None) == "4,096"


def test_a_chart_with_unchanged_arguments_is_reused_and_any_change_builds_it_again():
    series = {"GPU a": [4, 2, 1], "GPU b": [8, 4, 2]}
    first = charts.concurrency_lines([1024, 2048, 4096], series)
    assert charts.concurrency_lines([1024, 2048, 4096], {"GPU a": [4, 2, 1], "GPU b": [8, 4, 2]}) is first
    changed = charts.concurrency_lines([1024, 2048, 4096], {"GPU a": [4, 2, 1], "GPU b": [8, 4, 3]})
    assert changed is not first and list(changed.data[1].y) == [8, 4, 3]
    assert list(first.data[1].y) == [8, 4, 2]  # the kept figure was not touched by the new one
    built = charts.concurrency_lines.kept
    for n in range(charts.FIGURES_KEPT + 1):  # bounded: the oldest figure goes
        charts.concurrency_lines([1024], {"GPU": [n + 1]})
    assert len(built) == charts.FIGURES_KEPT
    with pytest.raises(TypeError):  # an unhashable argument: the builder then runs uncached
        charts._frozen(([1], {"k": set()}))


@pytest.mark.parametrize("command", [
    "vllm serve openai/gpt-oss-20b --tensor-parallel-size 1 --max-model-len 8192 --gpu-memory-utilization 0.9",
    "llama-server -m model.gguf -c 8192 -ngl 99 -ctk q8_0 -ctv f16 --rope-freq-scale -1",
    "VLLM_USE_V1=1 vllm serve m --override-generation-config '{\"a\": 1}'",
    "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp 2 --mem-fraction-static 0.88",
])
def test_a_launch_command_on_lines_is_the_same_command(command):
    import shlex

    from ui.format import format_command

    shown = format_command(command)
    assert shlex.split(shown.replace(" \\\n", " ")) == shlex.split(command)  # pastes as the same command
    lines = shown.split("\n")
    assert all(line.startswith("  -") for line in lines[1:])  # one flag (and its values) per line
    assert max(len(line) for line in lines) <= 80


def test_a_narrow_command_block_puts_the_model_on_its_own_line():
    """QA: in Disaggregation's half-width pool columns "vllm serve meta-llama/Meta-Llama-3-8B \\" wrapped and left
    its " \\" alone on the next line. With a width, a first line that would not fit splits before the model."""
    import shlex

    from ui.format import format_command

    command = "vllm serve meta-llama/Meta-Llama-3-8B --tensor-parallel-size 1 --max-model-len 4608"
    shown = format_command(command, width=36)
    assert shown.split("\n")[:2] == ["vllm serve \\", "  meta-llama/Meta-Llama-3-8B \\"]
    assert shlex.split(shown.replace(" \\\n", " ")) == shlex.split(command)  # still the same command
    assert format_command(command, width=80) == format_command(command)  # it fits: unchanged
    assert format_command("vllm serve m --tensor-parallel-size 1", width=8).startswith("vllm serve \\\n  m \\")


def test_a_trailing_comment_stays_a_comment_on_its_own_line():
    """Seen on the Engine page: the launch command's "  # fp8_block128 weights: serve ... (weight_block_size ..."
    comment was split like arguments and quoted ('#' ... '(weight_block_size'), so a pasted command passed them
    to vllm. The comment now keeps its words and takes the last line."""
    import shlex

    from ui.format import format_command

    command = ("vllm serve m --tensor-parallel-size 1 --enable-expert-parallel  # fp8_block128 weights: serve a "
               "block-scaled FP8 checkpoint (weight_block_size [128, 128], e.g. the ...-FP8 repos)")
    shown = format_command(command)
    *code, comment = shown.split("\n")
    assert comment == command[command.index("# "):]
    assert shlex.split(" ".join(code).replace(" \\", "")) == shlex.split(command, comments=True)
    assert format_command("vllm serve m --override-generation-config '{\"a\": \"# x\"}'").count("\n") == 1  # quoted


@pytest.mark.parametrize(("count", "expected"), [(0, "0 sequences"), (1, "1 sequence"), (2048, "2,048 sequences")])
def test_count_noun_agrees_in_number(count, expected):
    from ui.format import count_noun

    assert count_noun(count, "sequence") == expected


@pytest.mark.parametrize(("size", "expected"), [(512, "512 B"), (1024, "1 KiB"), (16 << 20, "16 MiB"), (1536, "1,536 B")])
def test_byte_ticks_are_binary_units(size, expected):
    from ui.format import format_bytes_short

    assert format_bytes_short(size) == expected


@pytest.mark.parametrize(("raw", "shown"), [("-", "\\-"), ("- x", "\\- x"), ("1. a", "1\\. a"), ("+", "\\+"),
                                            ("-35.50 GiB", "-35.50 GiB"), ("8,192 tokens (model limit)",
                                                                           "8,192 tokens (model limit)")])
def test_md_cell_keeps_a_table_cell_from_becoming_a_list(raw, shown):
    """``st.table`` renders string cells as Markdown: the Engine table's "-" (nothing measured) showed as a bullet."""
    assert md_cell(raw) == shown


def test_md_cell_makes_a_custom_name_inert():
    cell = md_cell("![t](https://evil.example/pixel.png)")
    assert not re.search(r"(?<!\\)[\[\]]", cell)  # every bracket escaped: no link or image can form
    assert md_cell(7) == 7


def test_concurrency_lines_stay_apart_where_two_gpus_hold_the_same_users():
    """QA round 2: on the default Concurrency page the A100's line (55 users) ran under the H100's (53) and only
    one showed. Each GPU's line has its own dash and the later ones are thinner."""
    fig = charts.concurrency_lines((1024, 2048), {"A100": (55, 27), "H100": (53, 26), "L40S": (20, 10)})
    styles = [(t.line.dash, t.line.width) for t in fig.data]
    assert len({dash for dash, _ in styles}) == 3 and styles[0][1] > styles[1][1] > styles[2][1]
    assert styles[0][0] == "solid"


def test_a_small_bar_segment_names_its_size_in_a_unit_that_shows_it():
    """QA: Home's legend read "Weights as loaded, beyond the checkpoint 0.00 GiB" for 2.2 MB. A segment under
    0.01 GiB is named in KiB / MiB (format_bytes auto); the others keep GiB, as the axis."""
    html_text = budget_bar.segments_bar_html(
        [("Weights", 15 * 2**30), ("Loading", 2_306_867), ("Free", 0)], {"Weights": "#111", "Loading": "#222",
                                                                         "Free": "#333"},
        usable_bytes=20 * 2**30, card_bytes=24 * 2**30, gpu_label="test GPU")
    assert "Weights 15.00 GiB" in html_text and "Loading 2.20 MiB" in html_text and "Free 0.00 GiB" in html_text
    assert "Loading: 2.20 MiB (2,306,867 B)" in html_text  # the hover title too
