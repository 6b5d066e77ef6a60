"""Copy: a count agrees with its noun and large numbers carry thousands separators (issue 27, QA round).

Seen on pages: "1 GPUs", "1 replica(s) of 8 GPU(s)", "1 dummy videos", "216252 x GB200 ... prefill 5724 +
decode 210528", and a link message "0.01 to 1e+06 ms". The sources now write counts with
:func:`planner.text.count_noun` (``ui.format.count_noun`` is the same function) and decimals with
:func:`ui.format.format_decimal`.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from planner.text import count_noun
from ui import format as ui_format
from ui.format import format_decimal

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py"),
                  *(ROOT / "planner").rglob("*.py")])
"""Every module whose strings reach a page, the CLI or a message."""

PLURAL_HEDGE = re.compile(r"[A-Za-z]\(s\)")
"""``GPU(s)``, ``replica(s)``: a hedge where the count is known."""


@pytest.mark.parametrize(("count", "noun", "text"), [
    (1, "GPU", "1 GPU"), (8, "GPU", "8 GPUs"), (0, "replica", "0 replicas"), (2475, "replica", "2,475 replicas"),
    (1, "dummy video", "1 dummy video"), (3, "dummy video", "3 dummy videos"), (2, "query", "2 queries")])
def test_count_noun_agrees_with_the_count(count, noun, text):
    plural = "queries" if noun == "query" else None
    assert count_noun(count, noun, plural) == text


def test_the_pages_use_the_planner_s_plural_helper():
    assert ui_format.count_noun is count_noun


@pytest.mark.parametrize(("value", "text"), [(1_000_000.0, "1,000,000"), (0.01, "0.01"), (0.9, "0.9"),
                                             (2000.0, "2,000"), (2.5, "2.5"), (0.0, "0")])
def test_format_decimal_writes_the_number_in_full(value, text):
    assert format_decimal(value) == text


def test_a_bad_ttft_link_value_names_the_range_in_full():
    from ui import number_fields, scale_view

    text = number_fields._number_fix(scale_view.DISAGG_FIELDS["ttft_ms"])
    assert "from 0.01 to 1,000,000 ms" in text, text


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the string nodes that are docstrings: a bare string statement (a module, class or function
    docstring, or the attribute docstring under an assignment)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def _strings(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every string literal and f-string piece that is not a docstring."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found.append((node.lineno, node.value))
    return found


def test_no_message_hedges_a_plural_with_parentheses():
    """Every count the code knows is written with its noun in the right number, never "GPU(s)"."""
    hedges = [f"{path.relative_to(ROOT)}:{line}: {text.strip()[:80]}" for path in SOURCES
              for line, text in _strings(path) if PLURAL_HEDGE.search(text)]
    assert hedges == []


def test_the_llm_d_header_and_commands_count_replicas_gpus_and_nodes():
    """A million users of Llama-3.1-8B on GB200: thousands of replicas per pool, one GPU each. The values'
    header said "prefill: 2475 x 1 GPUs" and each command block "# prefill: N replica(s) of 1 GPU(s) on 1 node(s)"."""
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines.types import EngineRequest
    from planner.scale import PoolRequest, ScaleRequest, plan_disagg
    from planner.scale.deploy import disagg_roles, disagg_values_yaml, role_commands

    gpu = get_gpu("nvidia-gb200")
    model = model_spec("meta-llama/Llama-3.1-8B-Instruct")
    pool = PoolRequest(engine=EngineRequest(gpu_name=gpu.name), scale=ScaleRequest())
    result = plan_disagg(model, gpu_memory_bytes=gpu.framework_memory_bytes, bandwidth_gb_s=gpu.bandwidth_gb_s,
                         bf16_dense_tflops=gpu.bf16_dense_tflops, prefill=pool, decode=pool, users=1_000_000,
                         prompt_len=4096, output_len=512, ttft_ms=2000.0, tpot_ms=50.0)
    roles = disagg_roles(result)
    (prefill, prefill_replicas), (decode, decode_replicas) = roles["prefill"], roles["decode"]
    assert prefill_replicas >= 1000 and prefill.layout.num_gpus == 1  # the case of the report
    header = disagg_values_yaml(model, result, gpu_name=gpu.name).splitlines()[1]
    assert (f"prefill: {prefill_replicas:,} replicas of 1 GPU; decode: {decode_replicas:,} replicas of 1 GPU"
            in header), header
    comments = [line for line in role_commands(roles) if line.startswith("# ")]
    assert comments[0].startswith(f"# prefill: {prefill_replicas:,} replicas of 1 GPU on 1 node;"), comments


def test_qa_round_copy_one_token_one_rank_units_on_every_figure():
    """QA round: "output fixed 1 tokens"; "1 users per rank (of 1)" and "200 users per rank (of 200)" on Find's
    chosen setup; Home's "53.95 GiB ± 2.28 of KV" (no unit after ±); and the no-memory reason
    "249.34 GiB requested - 1431.83 weights - 10.31 activation" (units on the first term only)."""

    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines import EngineRequest, plan_engine
    from planner.traffic.workload import Fixed
    from ui.expected_error import available_kv_text
    from ui.find_scale_view import _users_per_rank

    assert Fixed(tokens=1).describe() == "fixed 1 token" and Fixed(tokens=2000).describe() == "fixed 2,000 tokens"

    class _Setup:  # the fields the sentence reads
        def __init__(self, per, users, kind="TP"):
            self.users_per_replica, self.users, self.kind = per, users, kind

    assert _users_per_rank(_Setup(1, 1)) == "1 user on its one replica"
    assert _users_per_rank(_Setup(200, 200)) == "200 users on its one replica"
    assert _users_per_rank(_Setup(134, 400)) == "134 users per replica (400 in all)"  # 3 replicas of TP 2
    assert _users_per_rank(_Setup(50, 200, "DP+EP")) == "50 users per rank (200 in all)"

    gpu = get_gpu("nvidia-h100-sxm-80gb")
    plan = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), gpu.framework_memory_bytes,  # measured: a +-
                       EngineRequest(engine="vllm-v0.28", gpu_name=gpu.name, max_model_len=8192))
    assert re.fullmatch(r"[\d.,]+ GiB ± [\d.]+ GiB", available_kv_text(plan)), available_kv_text(plan)
    huge = plan_engine(model_spec("moonshotai/Kimi-K2-Thinking"), gpu.framework_memory_bytes,
                       EngineRequest(engine="vllm", gpu_name=gpu.name, max_model_len=8192))
    reason = next(r for r in huge.reasons if r.startswith("No available memory"))
    terms = re.search(r"\(stage 0: (.*) = ", reason).group(1).split(" - ")
    assert all(re.fullmatch(r"[\d.,]+ GiB [a-zA-Z -]+", t) for t in terms), terms


def test_a_bad_value_of_a_field_without_default_says_what_empty_means():
    """A field whose label says what empty stands for ("Images per request (empty = none)") is left empty; the
    message said "Showing the planner's estimate instead" (QA: images_per_request=-1, max_num_seqs=0 on the
    Engine page). A field with no such label keeps the estimate wording (the overhead override)."""
    from ui import engine, number_fields, serving

    images = number_fields._number_fix(serving.SERVING_FIELDS["images_per_request"])
    assert images.startswith("Leaving it empty instead, which means none; enter a whole number from 0 to"), images
    seqs = number_fields._number_fix(engine.ENGINE_FIELDS["max_num_seqs"])
    assert seqs.startswith("Leaving it empty instead, which means engine default;"), seqs
    overhead = number_fields._number_fix(number_fields.NUMBER_FIELDS["overhead_gib"])
    assert overhead.startswith("Showing the planner's estimate instead;"), overhead


def test_the_engine_page_link_message_says_the_field_is_left_empty():
    from tests.test_serving_app import run

    at = run("pages/5_Engine.py", {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-l40s", "images_per_request": "-1"})
    said = [w.value for w in at.error]  # link problems are st.error blocks
    assert any("`images_per_request=-1` is too small. Leaving it empty instead, which means none" in s
               for s in said), said
