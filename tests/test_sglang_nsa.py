"""SGLang's cell for DeepSeek-V3.2 / GLM-5.x sparse attention (issue 25, class 3, SGLang side).

What SGLang's source says (read in sgl-project/sglang; paraphrased):

* ``NSATokenToKVPool`` (later ``DSATokenToKVPool``, python/sglang/srt/mem_cache/memory_pool.py) keeps, beside
  the MLA latent, an indexer-key buffer on every layer of the pool (``range(layer_num)``, the stage's layers):
  128 FP8 values and one fp32 scale, 132 B a token. GLM-5.2's layers that reuse an earlier layer's indices
  get one too on CUDA (only the Ascend path counts indexer layers).
* ``calculate_mla_kv_cache_dim`` (model_runner_kv_cache_mixin.py, later mem_cache/kv_cache_configurator.py):
  with an ``fp8_e4m3`` cache the latent row is 512 FP8 + 4 x 4 B scales + 64 bf16 rope = 656 B; a bf16 cache
  keeps 576 values x 2 B.
* The per-token cell SGLang divides its memory by (``get_cell_size_per_token``, later
  ``DefaultPoolConfigurator._compute_cell_size`` in model_executor/pool_configurator.py) is that row times the
  layers plus the 132-B indexer key times the same layers.
* ``--kv-cache-dtype auto`` on these models becomes ``bfloat16`` below compute capability 10 (Hopper) and
  ``fp8_e4m3`` from 10 (Blackwell) (server_args.py, the DeepSeek NSA / DSA model-specific adjustment), which
  also sets the page size to 64.
"""

from __future__ import annotations

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.model.layers import MLAAttention
from planner.model.sparse import IndexedMLAAttention

catalog = pytest.importorskip("model_catalog")


def _sglang(model_id: str, gpu_id: str, kv: str):
    model = catalog.model_spec(model_id)
    gpu = catalog.get_gpu(gpu_id)
    return model, plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="sglang", tensor_parallel_size=8, max_model_len=32768, kv_cache_dtype=kv, gpu_name=gpu.name))


@pytest.mark.parametrize("kv, per_layer, label", [
    ("auto", 576 * 2 + 132, "bf16"),   # Hopper: auto -> bfloat16; 61 x 1,284 = 78,324 B (was 61 x 1,152)
    ("bf16", 576 * 2 + 132, "bf16"),
    ("fp8", 656 + 132, "fp8_ds_mla"),  # 61 x 788 = 48,068 B (was 61 x 576)
])
def test_deepseek_v32_cell_on_8_h200(kv, per_layer, label):
    model, plan = _sglang("deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm", kv)
    assert len(model.layers) == 61
    rank = plan.ranks[0]
    assert rank.kv_cache_bytes_per_token == 61 * per_layer
    assert plan.kv_cache_dtype == label
    assert plan.block_size == 64  # NSA page size
    assert plan.engine_kv_cache_tokens % 64 == 0
    assert plan.engine_kv_cache_tokens * rank.kv_cache_bytes_per_token <= rank.available_kv_cache_bytes


def test_deepseek_v32_auto_is_fp8_on_blackwell():
    _, plan = _sglang("deepseek-ai/DeepSeek-V3.2", "nvidia-b200", "auto")
    assert plan.ranks[0].kv_cache_bytes_per_token == 61 * (656 + 132)
    assert plan.kv_cache_dtype == "fp8_ds_mla"


@pytest.mark.parametrize("kv, per_layer", [("auto", 576 * 2 + 132), ("fp8", 656 + 132)])
def test_glm52_every_layer_holds_an_indexer_key_in_sglang(kv, per_layer):
    """GLM-5.2-FP8: 21 layers with an indexer and 57 that reuse indices; SGLang's CUDA pool gives all 78 the
    indexer buffer and counts it in the cell: auto (bf16 on H200) 78 x 1,284 = 100,152 B (was 78 x 1,152 =
    89,856 B), fp8 78 x 788 = 61,464 B (was 78 x 576 = 44,928 B)."""
    model, plan = _sglang("zai-org/GLM-5.2-FP8", "nvidia-h200-sxm", kv)
    assert sum(isinstance(layer, IndexedMLAAttention) for layer in model.layers) == 21
    assert all(isinstance(layer, MLAAttention) for layer in model.layers) and len(model.layers) == 78
    assert plan.ranks[0].kv_cache_bytes_per_token == 78 * per_layer


def test_dense_mla_models_keep_the_plain_latent():
    """DeepSeek-V3 (no indexer): the SGLang cell stays 576 values per layer and the page size SGLang's default."""
    model, plan = _sglang("deepseek-ai/DeepSeek-V3", "nvidia-h200-sxm", "fp8")
    assert plan.ranks[0].kv_cache_bytes_per_token == len(model.layers) * 576
    assert plan.kv_cache_dtype == "fp8"
