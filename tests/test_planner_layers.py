"""Per-layer KV specs and dtypes, with hand-checkable numbers."""

from fractions import Fraction

import pytest

from planner.model.dtypes import BF16, KV_CACHE_DTYPES, WEIGHT_DTYPES, resolve_kv_cache_dtype
from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)

BF = CacheDtypes(kv=BF16, state=BF16)


def test_full_attention_bytes_per_token_is_2_heads_dim_bytes():
    # 2 (K and V) x 8 heads x 128 dims x 2 bytes = 4096 B
    layer = FullAttention(num_key_value_heads=8, head_dim=128)
    assert layer.bytes_per_token(BF) == 4096


def test_v_head_dim_differs_from_k():
    # K 8 x 192 x 2 = 3072, V 8 x 128 x 2 = 2048
    layer = FullAttention(num_key_value_heads=8, head_dim=192, v_head_dim=128)
    assert layer.bytes_per_token(BF) == 5120


@pytest.mark.parametrize(("tp", "heads"), [(1, 8), (2, 4), (8, 1), (16, 1), (3, 2)])
def test_heads_per_gpu_replicate_past_kv_heads(tp, heads):
    layer = FullAttention(num_key_value_heads=8, head_dim=128)
    assert layer.kv_heads_per_gpu(tp) == heads
    assert layer.bytes_per_token(BF, tp) == 2 * heads * 128 * 2


def test_sliding_window_caps_tokens_on_both_sides_of_the_window():
    layer = SlidingWindowAttention(num_key_value_heads=1, head_dim=64, sliding_window=4096)
    per_token = 2 * 64 * 2
    assert layer.bytes_per_sequence(4095, BF) == 4095 * per_token
    assert layer.bytes_per_sequence(4096, BF) == 4096 * per_token
    assert layer.bytes_per_sequence(4097, BF) == 4096 * per_token
    assert layer.bytes_per_sequence(100_000, BF) == 4096 * per_token


def test_chunked_attention_caps_at_chunk():
    layer = ChunkedLocalAttention(num_key_value_heads=1, head_dim=64, attention_chunk_size=8192)
    assert layer.tokens_held(8191) == 8191
    assert layer.tokens_held(20_000) == 8192


def test_block_rounding_17_tokens_take_two_blocks():
    layer = FullAttention(num_key_value_heads=1, head_dim=64)
    per_token = 256
    assert layer.bytes_per_sequence(16, BF, block_size=16) == 16 * per_token
    assert layer.bytes_per_sequence(17, BF, block_size=16) == 32 * per_token


def test_mla_latent_no_factor_two_and_not_split_by_tp():
    # DeepSeek-V3 layer: (512 + 64) x 2 B = 1152 B, on every TP rank
    layer = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64, num_attention_heads=128,
                         qk_nope_head_dim=128, v_head_dim=128)
    assert layer.bytes_per_token(BF) == 1152
    assert layer.bytes_per_token(BF, 8) == 1152
    # decompressed: 128 heads x (192 + 128) x 2 B = 81,920 B
    assert layer.decompressed_bytes_per_token(BF) == 81_920


def test_recurrent_state_is_constant_and_split_by_tp():
    # Jamba Mamba layer: d_inner 8192 x (d_conv 4 + d_state 16) x 2 B = 327,680 B
    layer = RecurrentState(conv_state_elements=8192 * 4, ssm_state_elements=8192 * 16)
    assert layer.bytes_per_token(BF) == 0
    assert layer.bytes_per_sequence(1, BF) == 327_680
    assert layer.bytes_per_sequence(1_000_000, BF) == 327_680
    assert layer.bytes_per_sequence(10, BF, tensor_parallel_size=2) == 163_840


def test_recurrent_state_uses_state_dtype_not_quantized_kv():
    layer = RecurrentState(conv_state_elements=32, ssm_state_elements=32)
    dtypes = CacheDtypes(kv=KV_CACHE_DTYPES["int4"], state=BF16)
    assert layer.bytes_per_sequence(5, dtypes) == 128


def test_no_cache_layer_costs_nothing():
    assert NoCache().bytes_per_sequence(10_000, BF) == 0


@pytest.mark.parametrize("bad", [dict(num_key_value_heads=0, head_dim=128), dict(num_key_value_heads=8, head_dim=0)])
def test_invalid_shapes_raise(bad):
    with pytest.raises(ValueError, match="num_key_value_heads >= 1"):
        FullAttention(**bad)


def test_negative_tokens_raise():
    with pytest.raises(ValueError, match="num_tokens must be >= 0"):
        FullAttention(num_key_value_heads=1, head_dim=1).bytes_per_sequence(-1, BF)


def test_identical_layers_hash_equal():
    a = FullAttention(num_key_value_heads=8, head_dim=128)
    assert a == FullAttention(num_key_value_heads=8, head_dim=128)
    assert len({a, FullAttention(num_key_value_heads=8, head_dim=128)}) == 1


@pytest.mark.parametrize(("name", "elements", "expected"), [
    ("bf16", 32, 64), ("fp8", 32, 32), ("int8", 32, 32),
    ("q8_0", 32, 34),  # llama.cpp: 34 bytes per block of 32
    ("q4_0", 32, 18), ("int4", 64, 36),
])
def test_kv_dtype_row_sizes(name, elements, expected):
    assert KV_CACHE_DTYPES[name].bytes_for(elements) == expected


@pytest.mark.parametrize(("name", "bits"), [
    ("fp32", 32), ("bf16", 16), ("fp16", 16), ("fp8", 8), ("int8", 8),
    ("int4", Fraction(133, 32)),  # 4 + 16/128 + 4/128
    ("mxfp4", Fraction(17, 4)),  # (32 x 4 + 8) / 32
])
def test_weight_dtype_bits(name, bits):
    assert WEIGHT_DTYPES[name].bits_per_element == bits


def test_weight_scale_overheads():
    # 4096 x 4096 fp8 weight: 16 MiB + one fp32 per-tensor scale
    assert WEIGHT_DTYPES["fp8"].bytes_for_matrix((4096, 4096)) == 4096 * 4096 + 4
    # int8: one fp32 scale per output channel
    assert WEIGHT_DTYPES["int8"].bytes_for_matrix((4096, 4096)) == 4096 * 4096 + 4096 * 4
    # int4 g128: 128 x 128 = 16384 elements -> 8192 data + 128 groups x (2 + 0.5) = 8512
    assert WEIGHT_DTYPES["int4"].bytes_for_matrix((128, 128)) == 8512


def test_auto_kv_dtype_follows_activation_dtype():
    assert resolve_kv_cache_dtype("auto", WEIGHT_DTYPES["fp16"], "bfloat16").name == "fp16"
    assert resolve_kv_cache_dtype("auto", WEIGHT_DTYPES["int4"], "float16").name == "fp16"
    assert resolve_kv_cache_dtype("auto", WEIGHT_DTYPES["int4"], "bfloat16").name == "bf16"
    assert resolve_kv_cache_dtype("fp8", WEIGHT_DTYPES["bf16"], "bfloat16").name == "fp8"


def test_unknown_kv_dtype_lists_choices():
    with pytest.raises(ValueError, match="choose one of auto"):
        resolve_kv_cache_dtype("fp3", BF16, None)
