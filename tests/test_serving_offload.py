"""KV offload (planner.serving.offload): host tier sizes and host-link times worked by hand.

Rates: PCIe x16 per direction = GT/s x 16 lanes x 128/130 / 8 (Gen4 31.5 GB/s, Gen5 63.0 GB/s);
NVLink-C2C 900 GB/s both ways = 450 GB/s per direction. vLLM splits ``--kv-offloading-size`` over
its ranks (its own config test: 8 GiB at TP 2 x PP 2 is 2 GiB per rank, vllm/config/vllm.py).
"""

from __future__ import annotations

import pytest

from planner.budget import PlanRequest, plan
from planner.serving import ServingFeatures
from planner.serving.offload import UNKNOWN_LINK, OffloadConfig, host_link, launch_flags, offload_plan
from planner.units import GB, GiB
from tests.factories import dense_model


def test_host_link_takes_the_rate_it_is_given():
    # The rate comes from the GPU catalog (model_catalog/gpus.json host_link) or --host-link-gb-s.
    link = host_link(63.0, "PCIe 5.0 x16", "NVIDIA H100 datasheet")
    assert (link.name, link.gb_s, link.source) == ("PCIe 5.0 x16", 63.0, "NVIDIA H100 datasheet")
    assert host_link(25.0).name == "given" and host_link(25.0).source == "--host-link-gb-s"
    assert host_link(None) is UNKNOWN_LINK


def test_unknown_link_prices_no_time():
    off = offload_plan(OffloadConfig(kv_offloading_size=8.0), engine="vllm", gpu_id="nvidia-b300")
    out = off.to_dict(kv_bytes_per_token_per_gpu=131_072, block_size=16, kv_bytes_per_sequence_per_gpu=GiB,
                      gpu_kv_capacity_tokens=0)
    assert out["host_link"] == "unknown" and out["seconds_per_token_moved"] is None
    assert any("unknown" in n for n in off.notes)


def test_catalog_link_prices_the_copy():
    # Llama-3.1-8B bf16 on one GPU: 32 layers x 2 x 8 heads x 128 x 2 B = 131,072 B per token;
    # over PCIe 5.0 x16 (32 GT/s x 16 x 128/130 / 8 = 63.0 GB/s): 131,072 / 63e9 s = 2.0805 us.
    config = OffloadConfig(kv_offloading_size=8.0, host_link_gb_s=63.0, host_link_name="PCIe 5.0 x16",
                           host_link_source="NVIDIA H100 datasheet")
    out = offload_plan(config, engine="vllm", gpu_id="nvidia-h100-sxm-80gb").to_dict(
        kv_bytes_per_token_per_gpu=131_072, block_size=16, kv_bytes_per_sequence_per_gpu=GiB, gpu_kv_capacity_tokens=0)
    assert out["host_link"] == "PCIe 5.0 x16"
    assert out["seconds_per_token_moved"] == pytest.approx(131_072 / 63e9)
    assert out["seconds_per_sequence_moved"] == pytest.approx(GiB / 63e9)


def test_vllm_splits_the_size_over_its_ranks():
    off = offload_plan(OffloadConfig(kv_offloading_size=8.0), engine="vllm", gpu_id="nvidia-h100-sxm-80gb",
                       tensor_parallel_size=2, pipeline_parallel_size=2)
    assert off.host_bytes_per_gpu == 2 * GiB and off.host_bytes_per_replica == 8 * GiB
    assert off.mechanism == "kv_offloading"


def test_v0_swaps_per_gpu_and_v1_ignores_swap():
    v0 = offload_plan(OffloadConfig(swap_space=4.0), engine="vllm-v0", gpu_id="nvidia-l4", tensor_parallel_size=2)
    assert v0.host_bytes_per_gpu == 4 * GiB and v0.host_bytes_per_replica == 8 * GiB
    v1 = offload_plan(OffloadConfig(swap_space=4.0), engine="vllm", gpu_id="nvidia-l4")
    assert not v1.supported and "V0 only" in v1.notes[0]


def test_sglang_hicache_is_gb_per_rank():
    off = offload_plan(OffloadConfig(kv_offloading_size=64), engine="sglang", gpu_id="nvidia-h100-sxm-80gb",
                       tensor_parallel_size=2)
    assert off.host_bytes_per_gpu == 64 * GB and off.host_bytes_per_replica == 128 * GB


def test_engines_without_a_host_tier_say_so():
    off = offload_plan(OffloadConfig(kv_offloading_size=8), engine="llama.cpp", gpu_id="nvidia-l4")
    assert not off.supported and "no host tier" in off.notes[0]


@pytest.mark.parametrize(("config", "match"), [
    (OffloadConfig(), "needs --kv-offloading-size"),
    (OffloadConfig(kv_offloading_size=-1), "kv_offloading_size"),
    (OffloadConfig(kv_offloading_size=1, kv_offloading_backend="nixl"), "backend"),
    (OffloadConfig(kv_offloading_size=1, host_link_gb_s=0), "host_link_gb_s"),
])
def test_bad_settings_say_what_to_change(config, match):
    with pytest.raises(ValueError, match=match):
        config.validate()


def test_launch_flags():
    config = OffloadConfig(kv_offloading_size=64, kv_offloading_backend="lmcache", swap_space=4)
    assert launch_flags(config, "vllm") == "--kv-offloading-size 64 --kv-offloading-backend lmcache"
    assert launch_flags(config, "vllm-v0") == "--swap-space 4"
    assert launch_flags(config, "sglang") == "--enable-hierarchical-cache --hicache-size 64"
    assert launch_flags(config, "llama.cpp") == ""


def test_plan_keeps_the_gpu_pool_and_adds_a_host_tier():
    # The factory model costs 4 layers x 2 x 8 x 128 x 2 B = 16,384 B per token; a 16-token block 262,144 B.
    # 1 GiB of host = 4,096 blocks = 65,536 tokens. Over PCIe 5.0 x16: 16,384 / 63e9 s per token.
    model = dense_model()
    features = ServingFeatures(offload=OffloadConfig(kv_offloading_size=1.0, host_link_gb_s=63.0,
                                                     host_link_name="PCIe 5.0 x16"))
    plain = plan(model, 24 * GiB, PlanRequest(context_len=1024), gpu_id="nvidia-h100-sxm-80gb")
    result = plan(model, 24 * GiB, PlanRequest(context_len=1024, serving=features), gpu_id="nvidia-h100-sxm-80gb")
    assert result.max_concurrent_sequences == plain.max_concurrent_sequences
    assert result.kv_cache_capacity_tokens == plain.kv_cache_capacity_tokens
    off = result.to_dict()["serving"]["offload"]
    assert off["host_kv_capacity_tokens"] == 65_536
    assert off["gpu_kv_capacity_tokens"] == plain.kv_cache_capacity_tokens
    assert off["seconds_per_token_moved"] == pytest.approx(16_384 / 63e9)
    assert off["seconds_per_sequence_moved"] == pytest.approx(1024 * 16_384 / 63e9)
    assert off["estimate"] is True
    assert result.to_dict()["serving"]["host_bytes_per_gpu"] == GiB
