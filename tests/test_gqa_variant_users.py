"""The GQA page's variants hold the users their own KV per token allows (QA: DeepSeek-V4-Flash's MHA rebuild, 43.35 GiB
a sequence, showed the as-built MQA's 188 users on 8 x H200, ~8 TB of KV in 8 x 141 GB).

DeepSeek-V4's budget is vLLM's own allocator for the model, built from the model's real caches (one K=V row per
entry); a rebuilt variant with more KV heads is no model that allocator places, so its users come from the plain
paged arithmetic of its own per-token bytes. The bound here is independent of the paging: a sequence never takes
less than its exact (unpaged) attention bytes, so ``users x exact bytes per sequence <= KV budget`` and
``batch x exact bytes at the max context <= KV budget``. DeepSeek-V4 as built is priced in vLLM's fp8_ds_mla pages
(users equal the Engine view's: tests/test_v4_budget.py), which never take less than an fp8 cache of the same rows:
its bound is that fp8 cache.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import model_ids, model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.model.kv import KVProfile, attention_variants, cache_dtypes, kv_profile
from planner.model.sparse import CompressedAttention
from tests.test_app import ROOT, TIMEOUT_S

SETTINGS = [("nvidia-h200-sxm", 8, 131072, 64), ("nvidia-b300", 1, 32768, 1), ("nvidia-h100-sxm-80gb", 1, 8192, 4)]
V4 = "deepseek-ai/DeepSeek-V4-Flash"


def _v4_as_built(model, variant) -> bool:
    return variant.as_built and any(isinstance(layer, CompressedAttention) for layer in model.layers)


def _exact_profile(model, variant, tp: int) -> KVProfile:
    """The variant's unpaged attention KV on one GPU, in the cache its users are priced in (module docstring).
    Recurrent states are left out: vLLM's state page can be smaller than the model's own state (Jamba rebuilt as
    MQA: 311,296 B against 327,680 B), and the attention bytes alone already bound the users."""
    kv = "fp8" if _v4_as_built(model, variant) else "auto"
    exact = kv_profile(variant.model, cache_dtypes(variant.model, "auto", kv), tp, 1)
    return KVProfile(groups=tuple(g for g in exact.groups if g.bytes_per_token), block_size=1)


def _variant_plans(model_id: str, gpu_id: str, tp: int, context: int, batch: int):
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    limit = model.max_position_embeddings or context
    request = PlanRequest(context_len=min(context, limit), batch_size=batch, num_gpus=tp)
    try:
        variants = attention_variants(model)
    except ValueError:  # an MLA spec without head shapes: the page says so
        return model, request, []
    return model, request, [(v, plan(v.model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)) for v in variants]


@pytest.mark.parametrize(("gpu_id", "tp", "context", "batch"), SETTINGS)
def test_every_catalog_variants_users_fit_its_own_kv(gpu_id, tp, context, batch):
    checked = 0
    for model_id in model_ids():
        model, request, plans = _variant_plans(model_id, gpu_id, tp, context, batch)
        for variant, p in plans:
            if p.num_gpus != tp or p.kv_cache_budget_bytes <= 0:
                continue
            exact = _exact_profile(model, variant, tp)
            where = (model_id, variant.name, gpu_id)
            users_bytes = p.max_concurrent_sequences * exact.bytes_per_sequence(request.context_len)
            assert users_bytes <= p.kv_cache_budget_bytes, where
            if p.max_context_len_limited_by == "memory" and p.max_context_len:
                at_max = request.batch_size * exact.bytes_per_sequence(p.max_context_len)
                assert at_max <= p.kv_cache_budget_bytes, where
            checked += 1
    assert checked > 100


def test_v4_mha_variant_holds_fewer_users_than_as_built():
    """The QA link: each variant's users follow its own KV per token, the as-built model keeps vLLM's pool."""
    for gpu_id, tp, context, batch in SETTINGS[:2]:
        _, _, plans = _variant_plans(V4, gpu_id, tp, context, batch)
        by_name = {v.name: p for v, p in plans}
        mha, mqa = by_name["MHA"], by_name["MQA"]
        assert mha.kv_cache_bytes_per_token > 50 * mqa.kv_cache_bytes_per_token
        assert 0 < mha.max_concurrent_sequences < mqa.max_concurrent_sequences / 10
        assert mha.max_context_len < mqa.max_context_len
        assert mqa.kv_cache_dtype == "fp8_ds_mla"  # the as-built model stays on vLLM's DeepSeek-V4 pages


def test_gqa_page_table_and_chart_follow_each_variant():
    """The QA link on the page: the users chart's bars and the table's users are each variant's own, and a caption
    says the rebuilt variant is priced by the plain paged arithmetic."""
    at = AppTest.from_file(str(ROOT / "pages/2_GQA_savings.py"), default_timeout=TIMEOUT_S)
    for key, value in {"model": V4, "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "131072",
                       "batch_size": "64"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    _, _, plans = _variant_plans(V4, "nvidia-h200-sxm", 8, 131072, 64)
    users = [p.max_concurrent_sequences for _, p in plans]
    assert len(set(users)) == len(users)  # MHA and MQA differ
    bars = json.loads(at.get("plotly_chart")[1].proto.spec)
    assert bars["data"][0]["y"] == users
    table = at.table[0].value
    assert [int(str(u).replace(",", "")) for u in table["Max concurrent sequences"]] == users
    shown = " ".join(c.value for c in at.caption)
    assert "MHA" in shown and "plain paged arithmetic" in shown
    savings = at.markdown[0].value  # both variants' bytes per token are bf16: no "in bf16 too" second factor
    assert "MQA (as built) stores" in savings and "in bf16 too" not in savings
