"""Home and GQA savings say whose KV per sequence they show (QA, stop 46).

Qwen/Qwen3.5-397B-A17B on 8 H200 at 131,072 tokens, ``kv_cache_dtype=fp8``: Home's "KV per sequence per GPU" said
0.97 GiB, GQA savings' "KV per sequence" column 2.05 GiB (the whole model over the 8 GPUs) with no word, its MHA row
30.18 GiB beside a 28.85 GiB per-GPU budget. The table's sequence column is now per GPU, as the users are counted
against one GPU's budget, and each KV column and tile names what it is.
"""

from __future__ import annotations

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan
from planner.model.kv import attention_variants
from tests.test_app import run_page
from tests.tiles import metric_tiles
from ui.format import format_bytes

LINK = {"model": "Qwen/Qwen3.5-397B-A17B", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
        "kv_cache_dtype": "fp8"}


def _page(script: str):
    at = run_page(script, LINK)
    assert not at.exception and not at.error
    return at


def test_gqa_table_shows_per_gpu_sequences_as_home_does():
    home = {t.label: t.value for t in metric_tiles(_page("app.py"))}
    gqa = _page("pages/2_GQA_savings.py")
    table = gqa.table[0].value
    assert "KV per sequence per GPU" in table.columns and "KV per token, whole model" in table.columns
    built = table[table["As built"] == "✓"].iloc[0]
    assert built["KV per sequence per GPU"] == home["KV per sequence per GPU"]
    assert built["KV per token, whole model"] == home["KV per token"]


def test_every_variants_sequence_is_compared_with_one_gpus_budget():
    gpu = get_gpu("nvidia-h200-sxm")
    request = PlanRequest(context_len=131_072, num_gpus=8, kv_cache_dtype="fp8")
    table = _page("pages/2_GQA_savings.py").table[0].value
    for variant in attention_variants(model_spec("Qwen/Qwen3.5-397B-A17B")):
        p = plan(variant.model, gpu.framework_memory_bytes, request, gpu.id)
        row = table[table["Variant"] == variant.name].iloc[0]
        assert row["KV per sequence per GPU"] == format_bytes(p.kv_cache_bytes_per_sequence_paged_per_gpu)
        assert p.kv_cache_bytes_per_sequence_paged_per_gpu * p.max_concurrent_sequences <= p.kv_cache_budget_bytes


def test_gqa_token_tiles_say_whole_model_across_the_gpus():
    tiles = metric_tiles(_page("pages/2_GQA_savings.py"))
    helps = [t.help for t in tiles if t.label.startswith("KV per token")]
    assert helps and all("whole model across 8 GPUs" in h for h in helps)
