"""Recurrent states as the serving engines store them, and SGLang's separate Mamba pool.

Expected values are worked from the Nemotron 3 Nano config.json (tests/data/reference/hf_configs):
``hybrid_override_pattern`` has 23 Mamba2 blocks (M) and 6 attention blocks (*); ``mamba_num_heads`` 64 x
``mamba_head_dim`` 64 = 4,096 channels, ``n_groups`` 8, ``ssm_state_size`` 128, ``conv_kernel`` 4,
``mamba_ssm_cache_dtype`` float32. Conv channels 4,096 + 2 x 8 x 128 = 6,144: transformers keeps 4 columns
(24,576 elements), vLLM / SGLang / llama.cpp keep ``d_conv - 1`` = 3 (18,432). SSM 64 x 64 x 128 = 524,288.
"""

from __future__ import annotations

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.engines.llamacpp import _device_kv
from planner.engines.pages import MambaPages, layer_pages
from planner.engines.sglang import hybrid_swa_tokens, mamba_pool, mamba_state_bytes_per_request
from planner.model.dtypes import BF16
from planner.model.layers import CacheDtypes, RecurrentState

NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
BF16_CACHE = CacheDtypes(kv=BF16, state=BF16)


def _mamba_layers(model):
    return [layer for layer in model.layers if isinstance(layer, RecurrentState)]


def test_engines_keep_d_conv_minus_one_conv_columns():
    layers = _mamba_layers(model_spec(NANO))
    assert len(layers) == 23
    layer = layers[0]
    assert layer.conv_kernel == 4
    assert layer.conv_state_elements == 6144 * 4
    assert layer.engine_conv_state_elements == 6144 * 3
    # transformers: 24,576 x 2 + 524,288 x 4; engines: 18,432 x 2 + 524,288 x 4
    assert layer.bytes_per_sequence(0, BF16_CACHE) == 24_576 * 2 + 524_288 * 4
    assert layer.engine_bytes_per_sequence(BF16_CACHE) == 18_432 * 2 + 524_288 * 4 == 2_134_016


def test_vllm_mamba_page_is_the_engine_state():
    layer = _mamba_layers(model_spec(NANO))[0]
    page = layer_pages(layer, BF16_CACHE, 1, 16)
    assert isinstance(page, MambaPages)
    assert page.state_bytes == 2_134_016


def test_llamacpp_r_state_keeps_d_conv_minus_one_columns():
    model = model_spec(NANO)
    kv = _device_kv(model, range(model.num_layers), BF16_CACHE, BF16_CACHE)
    # R: 23 layers x 18,432 x 4 B (f32); S: 23 x 524,288 x 4 B
    assert kv.r_state == 23 * 18_432 * 4
    assert kv.s_state == 23 * 524_288 * 4


def test_sglang_mamba_state_per_request_and_pool_split():
    model = model_spec(NANO)
    per_request = mamba_state_bytes_per_request(model, range(model.num_layers), BF16_CACHE, 1)
    assert per_request == 23 * 2_134_016 == 49_082_368
    # rest 60 GiB: 64,424,509,440 x 0.9 / 1.9 = 30,516,872,892 B -> 621 slots of 49,082,368 B
    assert mamba_pool(60 * 2**30, per_request) == (621, 621 * 49_082_368)
    assert mamba_pool(0, per_request) == (0, 0)


def test_sglang_view_carves_the_mamba_pool_before_the_kv_tokens():
    model = model_spec(NANO)
    gpu = get_gpu("nvidia-h200-sxm")
    result = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(engine="sglang", max_model_len=8192))
    assert result.starts
    log = "\n".join(result.engine_log_lines)
    assert "Mamba Cache is allocated. max_mamba_cache_size: " in log
    slots = int(log.split("max_mamba_cache_size: ")[1].split(",")[0])
    assert result.max_num_seqs == min(4096, slots // 3)
    # the KV pool gets the rest: fewer tokens than the whole budget over the 6 attention layers' cell
    cell = 6 * 2 * 2 * 128 * 2  # 6 layers x K+V x 2 KV heads x 128 x bf16
    rank = result.ranks[0]
    assert result.engine_kv_cache_tokens * cell + slots * 49_082_368 <= rank.requested_bytes - rank.weights_bytes


def test_sglang_hybrid_swa_split_worked_example():
    # F = 16,384 B, S = 81,920 B, 1,000,000 profile tokens: 1,000,000 x 98,304 / (16,384 + 0.8 x 81,920)
    assert hybrid_swa_tokens(1_000_000, 16_384, 81_920, 1) == (1_200_000, 960_000)
    # rounded down to the page size
    assert hybrid_swa_tokens(1_000_000, 16_384, 81_920, 64) == (1_200_000 // 64 * 64, 960_000 // 64 * 64)


def test_sglang_gemma4_gets_a_sliding_pool_and_gpt_oss_does_not():
    gpu = get_gpu("nvidia-h200-sxm")
    request = EngineRequest(engine="sglang", max_model_len=8192)
    gemma = plan_engine(model_spec("google/gemma-4-26B-A4B"), gpu.framework_memory_bytes, request)
    assert any(line.startswith("Use sliding window memory pool.") for line in gemma.engine_log_lines)
    assert any("hybrid SWA pool" in note for note in gemma.notes)
    oss = plan_engine(model_spec("openai/gpt-oss-20b"), gpu.framework_memory_bytes, request)
    assert not any(line.startswith("Use sliding window memory pool.") for line in oss.engine_log_lines)


def test_sglang_state_pool_is_its_own_segment_and_json_key():
    model = model_spec(NANO)
    gpu = get_gpu("nvidia-h200-sxm")
    result = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(engine="sglang", max_model_len=8192))
    rank = result.ranks[0]
    slots = int(result.engine_log_lines[1].split("max_mamba_cache_size: ")[1].split(",")[0])
    assert rank.state_pool_bytes == slots * 49_082_368
    segments = dict(rank.segments(gpu.framework_memory_bytes))
    assert segments["Mamba state pool"] == rank.state_pool_bytes
    assert sum(v for k, v in segments.items() if k != "Over the card") == gpu.framework_memory_bytes
    assert result.to_dict()["ranks"][0]["state_pool_bytes"] == rank.state_pool_bytes
    plain = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), gpu.framework_memory_bytes,
                        EngineRequest(engine="sglang", max_model_len=8192))
    assert "state_pool_bytes" not in plain.to_dict()["ranks"][0]  # the JSON of other models is unchanged


def test_a_refused_engine_plan_draws_its_excess_over_the_card():
    """A plan whose weights exceed the card has a negative KV pool; its bar shows the excess, not a negative bar."""
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    result = plan_engine(model_spec("meta-llama/Meta-Llama-3.1-70B"), gpu.framework_memory_bytes,
                         EngineRequest(engine="vllm-v0", max_model_len=8192))
    rank = result.ranks[0]
    assert not result.starts and rank.available_kv_cache_bytes < 0
    segments = dict(rank.segments(gpu.framework_memory_bytes))
    assert segments["KV cache"] == 0 and segments["Not allocated"] == 0
    used = rank.weights_bytes + rank.activation_bytes + rank.non_torch_bytes + rank.cudagraph_bytes
    assert segments["Over the card"] == used - gpu.framework_memory_bytes
