"""Roofline throughput and cost, with hand-checkable numbers."""

import pytest

from planner.budget import PlanRequest
from planner.model import ModelSpec
from planner.model.layers import FullAttention
from planner.model.params import embedding, linear, moe_experts
from planner.traffic.throughput import (
    UPPER_BOUND_LABEL,
    active_parameters,
    cost_per_million_tokens,
    default_batch_sizes,
    estimate_throughput,
    prefill_seconds,
    time_per_output_token,
)
from planner.units import GiB
from tests.factories import dense_model

MODEL = dense_model()
WEIGHTS = 268_453_888
PER_TOKEN = 16_384


def test_weights_only_step_on_h100_bandwidth():
    # 16 GiB / 3,350 GB/s = 17,179,869,184 / 3.35e12 = 5.128 ms.
    step = time_per_output_token(16 * GiB, 0, 1, 3350)
    assert step == pytest.approx(0.0051283, rel=1e-4)
    assert 1 / step == pytest.approx(195.0, abs=0.1)


def test_kv_of_every_sequence_adds_to_the_step():
    # (1e9 weights + 100 x 1e7 KV) / 1,000 GB/s = 2 ms; aggregate 100 / 2 ms = 50,000 tokens/s.
    step = time_per_output_token(10**9, 10**7, 100, 1000)
    assert step == pytest.approx(0.002)
    assert 100 / step == pytest.approx(50_000)


def test_prefill_is_two_flops_per_parameter_per_token():
    assert prefill_seconds(10**9, 1000, 100.0) == pytest.approx(0.02)  # 2e12 / 1e14
    assert prefill_seconds(10**9, 1000, 100.0, num_gpus=2) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="bf16_dense_tflops"):
        prefill_seconds(10**9, 1000, 0)


def test_cost_per_million_tokens():
    # 2 GPUs at $3.20/h producing 1,000 tokens/s: 6.40 / 3,600 / 1,000 x 1e6 = $1.78.
    assert cost_per_million_tokens(3.2, 2, 1000) == pytest.approx(1.7778, abs=1e-4)


def test_bad_bandwidth_is_rejected():
    with pytest.raises(ValueError, match="bandwidth_gb_s must be > 0"):
        time_per_output_token(1, 1, 1, 0)


def test_default_batch_sizes():
    assert default_batch_sizes(1) == (1,)
    assert default_batch_sizes(10) == (1, 2, 4, 8, 10)
    assert default_batch_sizes(0) == (1,)


def test_estimate_on_the_factory_model():
    request = PlanRequest(context_len=1, gpu_memory_utilization=1.0, overhead_bytes=0)
    est = estimate_throughput(MODEL, request, gpu_memory_bytes=WEIGHTS + 8 * GiB, bandwidth_gb_s=1000.0,
                              bf16_dense_tflops=100.0, price_usd_per_gpu_hour=2.0, prompt_len=1000, output_len=48)
    assert est.decode_context_len == 1024
    assert est.kv_bytes_per_sequence_per_gpu == 1024 * PER_TOKEN
    assert est.max_concurrent_sequences == 8 * GiB // (1056 * PER_TOKEN)  # 1,048 tokens -> 66 blocks
    first = est.points[0]
    assert first.batch_size == 1
    assert first.time_per_output_token_s == pytest.approx((WEIGHTS + 1024 * PER_TOKEN) / 1e12)
    steps = [p.time_per_output_token_s for p in est.points]
    aggregates = [p.aggregate_tokens_per_s for p in est.points]
    assert steps == sorted(steps) and aggregates == sorted(aggregates)
    assert est.points[-1].fits and est.points[-1].batch_size == est.max_concurrent_sequences
    assert est.prefill_seconds == pytest.approx(2 * MODEL.num_parameters * 1000 / 1e14)
    assert first.cost_per_million_output_tokens_usd == pytest.approx(2.0 / 3600 / first.aggregate_tokens_per_s * 1e6)
    assert est.label == UPPER_BOUND_LABEL and "upper-bound" in est.label
    assert "bandwidth" in est.formula


def test_missing_price_and_flops_are_notes_not_errors():
    request = PlanRequest(context_len=1, gpu_memory_utilization=1.0, overhead_bytes=0)
    est = estimate_throughput(MODEL, request, gpu_memory_bytes=WEIGHTS + GiB, bandwidth_gb_s=500.0,
                              bf16_dense_tflops=None, price_usd_per_gpu_hour=None, prompt_len=100, output_len=10,
                              batch_sizes=(1, 4))
    assert est.prefill_seconds is None
    assert all(p.cost_per_million_output_tokens_usd is None for p in est.points)
    assert len(est.notes) == 2
    assert [p["batch_size"] for p in est.to_dict()["points"]] == [1, 4]


def test_active_parameters_of_a_moe_counts_routed_experts_only():
    # 8 experts of (2*64 x 32) + (32 x 64) = 6,144 params each, 2 routed per token.
    params = (*embedding("embed_tokens", 100, 32),
              *moe_experts("layers.*.mlp.experts", hidden_size=32, intermediate_size=64, num_experts=8),
              *linear("lm_head", 32, 100))
    moe = ModelSpec(model_id="toy/moe", model_type="mixtral",
                    layers=(FullAttention(num_key_value_heads=1, head_dim=8),),
                    params=params, hidden_size=32, num_attention_heads=4, num_key_value_heads=1, head_dim=8,
                    vocab_size=100, num_experts=8, num_experts_per_tok=2)
    experts = 8 * 6144
    assert moe.num_parameters == 3200 + experts + 3200
    assert active_parameters(moe) == moe.num_parameters - experts * 6 // 8
    assert active_parameters(MODEL) == MODEL.num_parameters
