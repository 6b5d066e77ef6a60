"""DeepSeek-V4 compressed-attention layers in the vLLM page view (planner/engines/pages.py design note 5).

Expected values are worked from the DeepSeek-V4-Flash config.json (tests/data/reference/hf_configs):
one K=V head of ``head_dim`` 512, ``index_head_dim`` 128, ``sliding_window`` 128 and
``compress_ratios`` 0 (sliding only) x 2, 4 (CSA) x 21, 128 (HCA) x 20 over the 43 decoder layers.
In bf16 a sliding token is 512 x 2 = 1,024 B; a CSA token ceil((1,024 + 128 + 4) / 4) = 289 B
(FP8 indexer key plus one fp32 scale per 128 values); an HCA token ceil(1,024 / 128) = 8 B.
"""

from __future__ import annotations

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.engines.pages import FullAttentionPages, SlidingWindowPages, kv_layout, layer_page_specs
from planner.model.dtypes import BF16
from planner.model.layers import CacheDtypes

V4 = "deepseek-ai/DeepSeek-V4-Flash"
BLOCK = 16


def _v4_pages():
    model = model_spec(V4)
    dtypes = CacheDtypes(kv=BF16, state=BF16)
    return [spec for layer in model.layers for spec in layer_page_specs(layer, dtypes, 4, BLOCK)]


def test_v4_page_sizes_follow_the_config():
    pages = _v4_pages()
    counts: dict[tuple[str, int], int] = {}
    for p in pages:
        key = (type(p).__name__, p.page_size_bytes)
        counts[key] = counts.get(key, 0) + 1
    # window 16 x 1,024 on the 2 sliding layers and beside each of the 41 compressed ones;
    # CSA 16 x 289 on 21 layers; HCA 16 x 8 on 20
    assert counts == {("SlidingWindowPages", 16 * 1024): 43, ("FullAttentionPages", 16 * 289): 21,
                      ("FullAttentionPages", 16 * 8): 20}
    windows = {p.sliding_window for p in pages if isinstance(p, SlidingWindowPages)}
    assert windows == {128}


def test_v4_compressed_pages_are_padded_to_the_sliding_page():
    layout = kv_layout(_v4_pages())
    assert layout.padded_estimate
    specs = {spec for group in layout.groups for spec in group}
    csa = next(s for s in specs if s.compressed and s.bytes_per_token == 289)
    hca = next(s for s in specs if s.compressed and s.bytes_per_token == 8)
    # 16,384 // 4,624 = 3 whole pages: block 48 (13,872 B), padded to 16,384 B
    assert (csa.block_size, csa.page_size_bytes) == (48, 16_384)
    # 16,384 / 128 = 128 exactly: block 2,048, no padding
    assert (hca.block_size, hca.padded_page_bytes, hca.page_size_bytes) == (2048, 0, 16_384)
    assert layout.bytes_per_block == 16_384 * layout.group_size


def test_other_pages_that_do_not_divide_still_raise():
    full = FullAttentionPages(block_size=BLOCK, bytes_per_token=289)
    sliding = SlidingWindowPages(block_size=BLOCK, bytes_per_token=1024, sliding_window=128)
    with pytest.raises(ValueError, match="cannot be unified"):
        kv_layout([full, sliding])


@pytest.mark.parametrize("tp", [4, 8])
def test_v4_older_vllm_view_starts_with_an_estimate_note(tp):
    # vLLM before v0.22 could not load the model: its view keeps this estimate (v0.22+: tests/test_vllm_deepseek_v4.py)
    gpu = get_gpu("nvidia-h200-sxm")
    result = plan_engine(model_spec(V4), gpu.framework_memory_bytes,
                         EngineRequest(engine="vllm-v0.11", tensor_parallel_size=tp, max_model_len=8192))
    assert result.starts
    assert result.engine_kv_cache_tokens > 0
    assert any("DeepSeek-V4 compressed-attention pages" in note for note in result.notes)


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0.28"])
def test_v4_current_vllm_view_uses_its_allocator(engine):
    gpu = get_gpu("nvidia-h200-sxm")
    result = plan_engine(model_spec(V4), gpu.framework_memory_bytes,
                         EngineRequest(engine=engine, tensor_parallel_size=4, max_model_len=8192, kv_cache_dtype="fp8"))
    assert result.starts and result.engine_kv_cache_tokens > 0
    assert result.num_kv_groups == 5 and result.block_size == 256
    assert not any("DeepSeek-V4 compressed-attention pages" in note for note in result.notes)
