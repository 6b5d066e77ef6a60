"""Home's "How these numbers are computed" rows state the arithmetic the plan does (QA: DeepSeek-V4's users row read
⌊budget ÷ per sequence⌋ = 290 where that is 302 and the plan sets one prefill chunk aside first; V4's and
DeepSeek-V3.2's KV per sequence read "÷ N GPUs" for a cache every GPU keeps whole)."""

from __future__ import annotations

import re

import pytest

from model_catalog import model_ids, model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from ui import kv_tiles

H200 = get_gpu("nvidia-h200-sxm")


def _plan(model_id: str, context_len: int, num_gpus: int, batch_size: int = 1):
    request = PlanRequest(context_len=context_len, num_gpus=num_gpus, batch_size=batch_size)
    return plan(model_spec(model_id), H200.framework_memory_bytes, request, gpu_id=H200.id)


def _evaluate(text: str) -> int:
    """The figures after the ``=`` of a users row, evaluated: ``⌊(A B − E B) ÷ P B⌋`` or ``⌊A B ÷ P B⌋``."""
    figures = [int(n.replace(",", "")) for n in re.findall(r"([\d,]+) B", text.split(" = ")[1])]
    *room, per_seq = figures
    return (room[0] - (room[1] if len(room) > 1 else 0)) // per_seq


def test_deepseek_v4_users_row_subtracts_the_prefill_extra_it_sets_aside():
    p = _plan("deepseek-ai/DeepSeek-V4-Flash", 65536, 4, 8)
    assert p.kv_cache_prefill_extra_bytes > 0
    text = kv_tiles.users_formula_text(p, p.kv_cache_bytes_per_sequence_paged_per_gpu)
    assert "(budget − prefill extra)" in text
    assert _evaluate(text) == p.max_concurrent_sequences
    assert p.kv_cache_budget_bytes // p.kv_cache_bytes_per_sequence_paged_per_gpu != p.max_concurrent_sequences


@pytest.mark.parametrize("model_id", [m for m in model_ids() if "Llama-3-8B" in m or "gemma-4-26B" in m
                                      or "gpt-oss-20b" in m or "Qwen3.6-35B" in m])
def test_users_row_arithmetic_gives_the_plans_users(model_id):
    p = _plan(model_id, 32768, 1)
    text = kv_tiles.users_formula_text(p, p.kv_cache_bytes_per_sequence_paged_per_gpu)
    assert _evaluate(text) == p.max_concurrent_sequences_by_memory
    past = p.max_position_embeddings and p.context_len > p.max_position_embeddings
    assert p.max_concurrent_sequences == (0 if past else p.max_concurrent_sequences_by_memory)
    assert ("past the model's" in text) == bool(past)  # Llama 3 8B: 32,768 > 8,192, so the value is 0
    assert ("prefill extra" in text) == bool(p.kv_cache_prefill_extra_bytes)


@pytest.mark.parametrize(("model_id", "gpus"), [("deepseek-ai/DeepSeek-V4-Flash", 4), ("deepseek-ai/DeepSeek-V3.2", 8)])
def test_a_replicated_cache_is_not_divided_by_the_gpus(model_id, gpus):
    p = _plan(model_id, 65536, gpus)
    assert p.kv_cache_bytes_per_token_per_gpu == p.kv_cache_bytes_per_token  # every GPU keeps it whole
    text = kv_tiles.kv_split_text(p)
    assert "÷" not in text and f"replicated on each of the {gpus} GPUs" in text


def test_a_split_cache_is_divided_by_the_gpus():
    p = _plan("meta-llama/Llama-3.1-70B", 8192, 4)
    assert p.kv_cache_bytes_per_token_per_gpu * 4 == p.kv_cache_bytes_per_token
    assert kv_tiles.kv_split_text(p) == " ÷ 4 GPUs (tensor parallel splits the KV heads)"
    assert kv_tiles.kv_split_text(_plan("meta-llama/Llama-3.1-70B", 8192, 1)) == ""


def test_a_max_num_seqs_cap_is_named_after_the_arithmetic():
    request = PlanRequest(context_len=4096, num_gpus=1, max_num_seqs=8)
    p = plan(model_spec("Qwen/Qwen3-8B"), H200.framework_memory_bytes, request, gpu_id=H200.id)
    assert p.max_concurrent_sequences == 8 < p.max_concurrent_sequences_by_memory
    text = kv_tiles.users_formula_text(p, p.kv_cache_bytes_per_sequence_paged_per_gpu)
    assert _evaluate(text) == p.max_concurrent_sequences_by_memory
    assert text.endswith("the KV cache holds, at most max_num_seqs 8")
