"""Sparse MLA on AMD GPUs: vLLM's ROCm platform stores no ``fp8_ds_mla`` (QA, stop 46).

``plan --model deepseek-ai/DeepSeek-V3.2 --gpu amd-mi300x --num-gpus 8 --context-len 65536`` priced the
``fp8_ds_mla`` cache (46.94 KiB per token, 30 users) and Find made "8 x MI300X ... fp8_ds_mla KV" its cheapest setup.
On ROCm the only sparse-MLA backend is ROCM_AITER_MLA_SPARSE (vllm/platforms/rocm.py), whose cache holds the
``kv_lora_rank + qk_rope_head_dim`` latent in the cache dtype (rocm_aiter_mla_sparse.py ``get_kv_cache_shape``):
``fp8_ds_mla`` is chosen only for CUDA's FLASHMLA_SPARSE (vllm/model_executor/layers/attention/mla_attention.py).
So ``auto`` is a bf16 cache there and ``fp8`` a plain FP8 latent (planner/engines/vllm_kv_formats.py design note 5).
"""

from __future__ import annotations

from dataclasses import replace

from model_catalog import get_gpu, model_spec
from model_catalog.gpus import load_gpus
from planner import PlanRequest, plan
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from planner.model.sparse import indexed_mla_layer
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_app import run_page
from tests.tiles import metric_tiles

MI300X, H200 = get_gpu("amd-mi300x"), get_gpu("nvidia-h200-sxm")
V32 = model_spec("deepseek-ai/DeepSeek-V3.2")
LENGTH = 65_536


def _bytes_per_token(element_bytes: int, model=V32) -> int:
    """The ROCm cache of one token over the model's layers, from the config: the ``kv_lora_rank +
    qk_rope_head_dim`` latent in the cache dtype plus the FP8 indexer key (``index_head_dim`` + an fp32 scale per
    128 values, vLLM ``DeepseekV32IndexerCache``)."""
    layer = indexed_mla_layer(model)
    latent = (layer.kv_lora_rank + layer.qk_rope_head_dim) * element_bytes
    indexer = layer.index_head_dim + layer.index_head_dim // 128 * 4
    return model.num_layers * (latent + indexer)


def _plan(gpu, kv: str = "auto"):
    return plan(V32, gpu.framework_memory_bytes, PlanRequest(context_len=LENGTH, num_gpus=8, kv_cache_dtype=kv),
                gpu.id)


def test_budget_prices_a_bf16_cache_on_amd_and_fp8_ds_mla_on_nvidia():
    amd = _plan(MI300X)
    assert amd.kv_cache_dtype == "bf16"
    assert amd.kv_cache_bytes_per_token == _bytes_per_token(2)  # 78,324 B = 76.49 KiB, not 46.94 KiB
    assert amd.max_concurrent_sequences == amd.kv_cache_capacity_tokens // LENGTH
    nvidia = _plan(H200)
    assert nvidia.kv_cache_dtype == "fp8_ds_mla" and nvidia.kv_cache_bytes_per_token < amd.kv_cache_bytes_per_token


def test_fp8_on_amd_is_a_plain_fp8_latent():
    amd = _plan(MI300X, "fp8")
    assert amd.kv_cache_dtype == "fp8"
    assert amd.kv_cache_bytes_per_token == _bytes_per_token(1)


def test_engine_view_on_amd_stores_bf16_and_v011_refuses_fp8():
    request = EngineRequest(engine="vllm", tensor_parallel_size=8, max_model_len=LENGTH, gpu_name=MI300X.name)
    viewed = plan_engine(V32, MI300X.framework_memory_bytes, request)
    assert viewed.kv_cache_dtype == "bf16"
    assert viewed.ranks[0].kv_cache_bytes_per_token == _bytes_per_token(2)
    assert not any("fp8_ds_mla" in n for n in (*viewed.notes, *viewed.warnings))
    old = plan_engine(V32, MI300X.framework_memory_bytes, EngineRequest(
        engine="vllm-v0.11", tensor_parallel_size=8, max_model_len=LENGTH, kv_cache_dtype="fp8", gpu_name=MI300X.name))
    assert any("doesn't support fp8" in r for r in old.reasons)


def test_find_names_what_each_vendor_stores():
    gpus = [g for g in load_gpus().values() if g.id in (MI300X.id, H200.id)]
    found = find_setups(V32, gpus, FindRequest(users=30, prompt_len=4000, output_len=1000, top=50,
                                               setup_kinds=("TP",)))
    amd = [s for s in found.options if s.gpu_id == MI300X.id]
    nvidia = [s for s in found.options if s.gpu_id == H200.id]
    assert amd and nvidia
    assert {s.kv_cache_dtype for s in amd} <= {"bf16", "fp8"}
    assert {s.kv_cache_dtype for s in nvidia} == {"fp8_ds_mla"}


def test_home_link_on_amd_shows_no_fp8_ds_mla():
    at = run_page("app.py", {"model": "zai-org/GLM-5-FP8", "gpu": "amd-mi300x", "num_gpus": "8"})
    assert not at.exception and not at.error
    glm5 = model_spec("zai-org/GLM-5-FP8")
    per_token = next(m.value for m in metric_tiles(at) if m.label == "KV per token")
    assert per_token == f"{_bytes_per_token(2, glm5) / 1024:.2f} KiB"  # 78 x (1,152 + 132) B = 97.80 KiB
    shown = " ".join(str(e.value) for kind in ("markdown", "caption") for e in getattr(at, kind)).replace("\\_", "_")
    assert "price fp8_ds_mla" not in shown  # the engine panel's line: vLLM and the budget store the same cache
    assert "(fp8_ds_mla)" not in shown and "fp8_ds_mla format" not in shown


def test_allocation_kv_quantization_rows_on_amd_are_what_rocm_stores():
    from planner.traffic.kvquant import compare_kv_dtypes

    rows = compare_kv_dtypes(V32, MI300X.framework_memory_bytes, PlanRequest(context_len=LENGTH, num_gpus=8),
                             gpu_id=MI300X.id)
    assert [r.kv_cache_dtype for r in rows[:2]] == ["bf16", "fp8"]
    assert rows[1].kv_cache_bytes_per_token_per_gpu == _bytes_per_token(1)


def _v011_fp8() -> EngineRequest:
    return EngineRequest(engine="vllm-v0.11", tensor_parallel_size=8, max_model_len=LENGTH, kv_cache_dtype="fp8",
                         gpu_name=MI300X.name)


def test_v011_fp8_on_amd_does_not_start():
    """vLLM v0.11 raises while picking the attention backend (vllm/platforms/rocm.py ``get_attn_backend_cls``), so the
    launch never starts: a refusal (starts False, the reason), not a warning beside "starts yes" (QA, stop 46)."""
    refused = plan_engine(V32, MI300X.framework_memory_bytes, _v011_fp8())
    assert not refused.starts
    assert any("doesn't support fp8" in r for r in refused.reasons)
    assert not any("doesn't support fp8" in w for w in refused.warnings)
    assert refused.max_concurrency == 0 and refused.engine_kv_cache_tokens == 0  # stopped before loading
    bf16 = plan_engine(V32, MI300X.framework_memory_bytes, replace(_v011_fp8(), kv_cache_dtype="auto"))
    assert bf16.starts  # the bf16 cache still starts
    nvidia = plan_engine(V32, H200.framework_memory_bytes, replace(_v011_fp8(), gpu_name=H200.name))
    assert nvidia.starts


def test_cli_plan_says_v011_fp8_on_amd_does_not_start():
    from tests.test_cli import run_cli

    out = run_cli("plan", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", MI300X.id, "--num-gpus", "8",
                  "--context-len", str(LENGTH), "--engine", "vllm-v0.11", "--kv-cache-dtype", "fp8").stdout
    starts = next(line for line in out.splitlines() if line.startswith("starts"))
    assert starts.split()[1] == "no", out
    assert "doesn't support fp8" in out


def test_find_under_v011_ranks_no_fp8_mi300x_setup():
    gpus = [g for g in load_gpus().values() if g.id == MI300X.id]
    found = find_setups(V32, gpus, FindRequest(users=4, prompt_len=4000, output_len=1000, top=50,
                                               setup_kinds=("TP",), engine="vllm-v0.11"))
    assert found.options
    assert all(s.kv_cache_dtype != "fp8" for s in found.options if s.fits)
