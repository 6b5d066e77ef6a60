"""PyTorch's CUDA caching allocator rules (planner/engines/allocator.py), on sizes the rules decide by hand.

Constants and rules: c10/cuda/CUDACachingAllocator.cpp (``kMinBlockSize`` 512 B, ``kSmallSize`` 1 MiB,
``kSmallBuffer`` 2 MiB, ``kLargeBuffer`` 20 MiB, ``kMinLargeAlloc`` 10 MiB, ``kRoundLarge`` 2 MiB;
``should_split``: the large pool splits a block only when more than 1 MiB would remain).
"""

from __future__ import annotations

import pytest

from planner.engines.allocator import allocated_bytes, block_size, rounding_bytes, segment_size
from planner.units import MiB


@pytest.mark.parametrize("request_bytes,block", [(1, 512), (512, 512), (513, 1024), (7_168, 7_168)])
def test_requests_round_up_to_512_bytes(request_bytes, block):
    assert block_size(request_bytes) == block
    assert allocated_bytes([request_bytes]) == block


@pytest.mark.parametrize("size,segment", [(MiB, 2 * MiB), (MiB + 512, 20 * MiB), (10 * MiB - 512, 20 * MiB),
                                           (10 * MiB, 10 * MiB), (253 * MiB + 128 * 1024, 254 * MiB)])
def test_segment_sizes(size, segment):
    assert segment_size(size) == segment


def test_a_remainder_of_at_most_1_mib_stays_with_the_tensor():
    # gpt-oss-20b's fused gate/up experts: 32 x 5,760 x 1,440 B = 253.125 MiB in a 254 MiB segment
    assert allocated_bytes([32 * 5760 * 1440]) == 254 * MiB
    # exactly 1 MiB left (Qwen2.5-7B's gate_up_proj, 259 MiB): not more than kSmallSize, so not split
    assert allocated_bytes([37888 * 3584 * 2]) == 260 * MiB


def test_a_remainder_above_1_mib_is_split_off_and_reused():
    down = 32 * 2880 * 1440  # 126.5625 MiB: 1.4375 MiB left in its 128 MiB segment
    assert allocated_bytes([down]) == down
    # the 1.4375 MiB remainder holds a later 1.25 MiB tensor whole (0.1875 MiB left: too little to split)
    assert allocated_bytes([down, 1280 * 1024]) == down + 1280 * 1024 + 192 * 1024


def test_small_tensors_share_a_small_segment_without_rounding_beyond_512_bytes():
    sizes = [7_168] * 100  # 700 KiB in all: one 2 MiB small segment, split block by block
    assert allocated_bytes(sizes) == sum(sizes)
    assert rounding_bytes([100, 0, 7_168]) == 412


def test_multiples_of_2_mib_keep_no_remainder():
    # Llama-3.1-8B's tensors (qkv 48 MiB, gate_up 224 MiB, down 112 MiB, embedding 1,002 MiB)
    assert rounding_bytes([48 * MiB, 32 * MiB, 224 * MiB, 112 * MiB, 1002 * MiB]) == 0


def test_vllm_tensor_list_adds_up_to_the_loaded_weights_for_every_catalog_model():
    # The per-tensor list the rounding is computed on must be the same weights loaded_weight_bytes
    # prices: equal sums (within block-scale partition rounding, a few KiB) for every catalog model.
    catalog = pytest.importorskip("model_catalog")
    from planner.engines.loaded import loaded_weight_bytes, vllm_mxfp4_layout
    from planner.engines.weight_tensors import vllm_weight_tensors
    from planner.model.dtypes import weight_dtype

    layout = vllm_mxfp4_layout("vllm-v0.11", "H100 SXM5 80GB")
    auto = weight_dtype("auto")
    for model_id in catalog.model_ids():
        model = catalog.model_spec(model_id)
        for tp in (1, 2):
            tensors, scalars = vllm_weight_tensors(model, auto, tp, mxfp4=layout)
            expected = loaded_weight_bytes(model, auto, tp, mxfp4=layout)
            assert abs(sum(tensors) - expected) <= 64 * 1024, (model_id, tp, sum(tensors) - expected)
            assert scalars % 7 == 0


def test_freed_blocks_merge_with_free_neighbours_and_are_reused():
    from planner.engines.allocator import CachingAllocator

    allocator = CachingAllocator()
    a = allocator.malloc(100 * MiB)
    b = allocator.malloc(90 * MiB)  # a fresh 90 MiB segment, exact
    allocator.free(a)
    c = allocator.malloc(60 * MiB)  # best fit: the freed 100 MiB block, 40 MiB split off
    assert allocator.allocated == 150 * MiB
    d = allocator.malloc(39 * MiB + 512)  # the 40 MiB remainder, 1 MiB - 512 B left: kept whole
    assert allocator.allocated == 190 * MiB
    allocator.free(c)
    allocator.free(d)  # merges back into one free 100 MiB block
    e = allocator.malloc(100 * MiB)
    assert allocator.allocated == 190 * MiB and e == a
    allocator.free(e)
    allocator.empty_cache()  # the wholly free 100 MiB segment goes back; b's stays
    f = allocator.malloc(100 * MiB)
    assert f != a and allocator.allocated == 190 * MiB
    allocator.free(b)
    allocator.free(f)
    assert allocator.allocated == 0
