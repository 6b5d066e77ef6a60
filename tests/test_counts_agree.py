"""User counts that agree between Home, Allocation, Find and the CLI for hybrid and windowed models (QA).

A. Allocation of a Gated DeltaNet hybrid: the CLI's budget left out vLLM's default encoder profile that ``plan``
   charges (57.59 GiB against 57.30 for Qwen3.6-35B-A3B on an H200), and the page's naive count (exact bytes of
   max_model_len) sat above Home's users under a line that said "as on Home".
B. ``plan``'s "capacity" line counted whole blocks at every layer's full per-token KV, below the users the same
   output printed (DeepSeek-V4-Flash: 254,720 tokens beside 188 users of 131,072).
C. Find sized its vLLM rows at max_model_len with the image tokens inside, one user above Home's count of text +
   image tokens (Gemma 4 26B with 4 images: 34 on an A100 PCIe where Home says 33).

Expected figures come from :func:`planner.budget.plan` (Home's count), never typed in.
"""

from __future__ import annotations

import json
import re

import pytest

from model_catalog import get_model_entry, served_model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.serving import ServingFeatures
from planner.serving.features import with_engine_defaults
from planner.serving.multimodal import MultimodalConfig, vision_from_config
from planner.traffic.allocation import allocation_for_model
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_find_engine import _run
from tests.tiles import metric_tiles
from ui.format import format_int

QWEN = "Qwen/Qwen3.6-35B-A3B"
H200 = "nvidia-h200-sxm"


def _json(capsys, argv) -> dict | list:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _text(capsys, argv) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out


# --------------------------------------------------------------------------- A


def test_cli_allocation_budget_and_paged_users_are_plan_s(capsys):
    """``allocation`` charges what ``plan`` charges (vLLM's default encoder profile of a vision model): the same
    KV budget, and its paged count at mean_len = max_model_len is ``plan``'s max users."""
    planned = _json(capsys, ["plan", "--model", QWEN, "--gpu", H200, "--context-len", "32768"])
    compared = _json(capsys, ["allocation", "--model", QWEN, "--gpu", H200, "--max-model-len", "32768",
                              "--mean-len", "32768"])
    assert compared["kv_cache_budget_bytes"] == planned["kv_cache_budget_bytes"]
    assert compared["paged_max_sequences"] == planned["max_concurrent_sequences"]
    assert compared["max_concurrent_sequences"] == planned["max_concurrent_sequences"]
    at_800 = _json(capsys, ["allocation", "--model", QWEN, "--gpu", H200, "--max-model-len", "32768",
                            "--mean-len", "800"])
    assert at_800["kv_cache_budget_bytes"] == planned["kv_cache_budget_bytes"]


@pytest.mark.parametrize(("model_id", "gpu_id", "tp", "context"), [
    (QWEN, H200, 1, 32768), (QWEN, "nvidia-h100-80gb", 4, 32768), ("google/gemma-3-27b-it", "nvidia-h200", 1, 8192),
    ("meta-llama/Meta-Llama-3-8B", "nvidia-h100-80gb", 1, 8192)])
def test_allocation_names_home_s_count_beside_naive(model_id, gpu_id, tp, context):
    """The comparison carries plan()'s users at max_model_len; where naive reservation of exact bytes holds more
    (whole raised blocks and padded states of a hybrid, a windowed model's groups and prefill chunk), it says both
    figures and why; where they agree it says nothing."""
    model, gpu = served_model_spec(model_id), get_gpu(gpu_id)
    request = PlanRequest(context_len=context, num_gpus=tp)
    c = allocation_for_model(model, gpu.framework_memory_bytes, request, mean_len=800, gpu_id=gpu.id)
    home = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id).max_concurrent_sequences
    assert c.max_concurrent_sequences == home
    if c.naive.max_sequences == home:
        assert c.naive_note == ""
        return
    assert c.naive.max_sequences > home
    assert f"{format_int(c.naive.max_sequences)} " in c.naive_note and f"{format_int(home)} " in c.naive_note
    assert "exact bytes" in c.naive_note and f"{context:,}" in c.naive_note


def test_allocation_page_does_not_claim_home_s_count_for_naive():
    """QA's link: "Naive: users 83" under "Every user count on this page ... as on Home" where Home says 81. The
    line now says which count differs from Home's and by how much; the Naive vs paged tab says why."""
    model, gpu = served_model_spec(QWEN), get_gpu(H200)
    at = _run("pages/6_Allocation.py", {"model": QWEN, "gpu": H200, "context_len": "32768"})
    assert not at.exception and not at.error
    shown = {m.label: m.value for m in metric_tiles(at)}
    features = with_engine_defaults(None, engine="vllm", raw_config=get_model_entry(QWEN).config)
    home = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=32768, serving=features),
                gpu_id=gpu.id).max_concurrent_sequences
    naive = shown["Naive: users"]
    assert naive != format_int(home)  # exact bytes of 32,768 tokens, by design (the docstring's note 2)
    lines = [c.value for c in at.caption if c.value.startswith("Every user count on this page")]
    assert len(lines) == 1
    assert f"Naive's {naive}" in lines[0] and f"Home's {format_int(home)}" in lines[0], lines[0]
    assert any(f"{format_int(home)} " in c.value and "exact bytes" in c.value for c in at.caption
               if not c.value.startswith("Every user count")), [c.value for c in at.caption]


# --------------------------------------------------------------------------- B


def _capacity(text: str) -> int:
    return int(re.search(r"^capacity\s+([\d,]+) tokens", text, re.M).group(1).replace(",", ""))


@pytest.mark.parametrize("argv", [
    ["--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", H200, "--num-gpus", "8", "--context-len", "131072",
     "--batch-size", "64"],
    ["--model", "openai/gpt-oss-120b", "--gpu", "nvidia-h100-80gb", "--context-len", "131072"],
    ["--model", QWEN, "--gpu", H200, "--context-len", "32768"],
    ["--model", "google/gemma-3-27b-it", "--gpu", "nvidia-h200", "--context-len", "8192"],
    ["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-80gb", "--context-len", "8192"]])
def test_plan_capacity_line_agrees_with_its_max_users(capsys, argv):
    """The table's capacity is the tokens the pool holds in sequences of context_len (users x context, as vLLM's
    "GPU KV cache size" counts them): at least max users x context and under one more user; the JSON keeps
    ``kv_cache_capacity_tokens`` and adds ``kv_cache_capacity_tokens_at_context``, the figure the line shows."""
    out = _json(capsys, ["plan", *argv])
    text = _text(capsys, ["plan", *argv])
    users, context = out["max_concurrent_sequences"], out["context_len"]
    shown = _capacity(text)
    assert shown == out["kv_cache_capacity_tokens_at_context"]
    assert users * context <= shown < (users + 1) * context
    assert "kv_cache_capacity_tokens" in out
    if out["max_context_len_limited_by"] == "memory" and out["batch_size"] == 1:
        assert shown <= out["max_context_len"] + context  # never contradicts the longest single sequence


def test_plan_capacity_of_a_plain_model_is_unchanged(capsys):
    """A model whose every layer keeps every token (Llama 3 8B): the line's figure differs from the whole-block
    figure by less than one block, and the JSON's old key keeps its value."""
    out = _json(capsys, ["plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-80gb",
                         "--context-len", "8192"])
    assert abs(out["kv_cache_capacity_tokens_at_context"] - out["kv_cache_capacity_tokens"]) < out["block_size"]


# --------------------------------------------------------------------------- C


def _images(model_id: str, n: int) -> ServingFeatures:
    vision = vision_from_config(get_model_entry(model_id).config)
    return ServingFeatures(engine="vllm", multimodal=MultimodalConfig(vision=vision, images_per_request=n))


@pytest.mark.parametrize(("model_id", "images"), [("google/gemma-4-26B-A4B", 4), ("Qwen/Qwen3-VL-8B-Instruct", 2)])
def test_find_engine_rows_count_users_as_home(model_id, images):
    """Find's vLLM-sized TP rows hold Home's users for the same GPU, tensor-parallel size and features: each
    request holds its text and its image tokens (vLLM counts those inside --max-model-len, so the launch's limit
    is the text's plus the image tokens)."""
    model = served_model_spec(model_id)
    features = _images(model_id, images)
    gpus = [get_gpu(g) for g in ("nvidia-h100-80gb", "nvidia-a100-pcie-80gb")]
    found = find_setups(model, gpus, FindRequest(users=16, prompt_len=15884, output_len=500, max_gpus=1,
                                                 kv_cache_dtypes=("auto",), engine="vllm", serving=features,
                                                 setup_kinds=("TP",)))
    rows = [s for s in found.options if s.kind == "TP"]
    assert {s.gpu_id for s in rows} == {g.id for g in gpus}
    for s in rows:
        gpu = get_gpu(s.gpu_id)
        home = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=16384, serving=features),
                    gpu_id=gpu.id)
        assert s.max_concurrent_sequences == home.max_concurrent_sequences, s.gpu_id
        media = home.serving["extra_tokens_per_sequence"]
        assert f"--max-model-len {16384 + media} " in s.launch_command, s.launch_command


def test_home_budget_tile_quotes_the_capacity_its_users_fill():
    """QA: Home's "KV budget per GPU" help said "254,720 tokens of capacity" beside DeepSeek-V4-Flash's 188 users
    of 131,072 tokens (every layer keeping every token). It quotes the tokens the budget holds as sequences of the
    plan's context, users x context within one sequence (``kv_cache_capacity_tokens_at_context``)."""
    from model_catalog import get_gpu, model_spec
    from planner.budget import PlanRequest, plan
    from ui.format import format_tokens
    from ui.views import plan_metric_values

    gpu = get_gpu("nvidia-h200-sxm")
    p = plan(model_spec("deepseek-ai/DeepSeek-V4-Flash"), gpu.framework_memory_bytes,
             PlanRequest(context_len=131072, batch_size=64, num_gpus=8), gpu.id)
    held = p.kv_cache_capacity_tokens_at_context
    assert p.max_concurrent_sequences * 131072 <= held < (p.max_concurrent_sequences + 1) * 131072
    help_text = plan_metric_values(p)["KV budget per GPU"][1]
    assert format_tokens(held) in help_text and format_tokens(p.kv_cache_capacity_tokens) not in help_text


@pytest.mark.parametrize("argv", [
    ["--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", H200, "--num-gpus", "8", "--context-len", "131072",
     "--batch-size", "64"],
    ["--model", "openai/gpt-oss-120b", "--gpu", "nvidia-h100-80gb", "--context-len", "32768", "--batch-size", "8"],
    ["--model", QWEN, "--gpu", H200, "--context-len", "32768"],
    ["--model", "meta-llama/Meta-Llama-3-8B", "--gpu", "nvidia-h100-80gb", "--context-len", "8192"]])
def test_plan_json_gives_the_sequence_users_are_counted_in(capsys, argv):
    """QA: DeepSeek-V4-Flash's JSON gave only the exact bf16 ``kv_cache_bytes_per_sequence_per_gpu`` (0.76 GiB), so
    budget / it gave 134 users beside the 188 reported (the table counts 539.64 MiB fp8_ds_mla pool blocks). The
    JSON adds ``kv_cache_bytes_per_sequence_paged_per_gpu``, the sequence the users are counted in: the users are
    ``(budget - prefill extra) // it`` for every model (the extra: one windowed request's prefill chunk)."""
    out = _json(capsys, ["plan", *argv])
    paged = out["kv_cache_bytes_per_sequence_paged_per_gpu"]
    assert paged > 0
    usable = out["kv_cache_budget_bytes"] - out["kv_cache_prefill_extra_bytes"]
    assert out["max_concurrent_sequences"] == usable // paged
