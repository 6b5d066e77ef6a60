"""Reverse planner on made-up GPUs whose budgets are round numbers.

Factory model: 16 KiB per bf16 token, 268,453,888 B of weights. 100 users of
1,000 + 24 tokens hold 16 MiB each = 1,600 MiB of KV on one GPU.
"""

from dataclasses import dataclass

import pytest

from planner.budget import PlanRequest, plan
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups, valid_tensor_parallel, vllm_serve_command
from planner.traffic.workload import LogNormal, Uniform, Workload
from planner.units import GiB, MiB
from tests.factories import dense_model

MODEL = dense_model()
WEIGHTS = 268_453_888


@dataclass(frozen=True)
class FakeGPU:
    id: str
    name: str
    framework_memory_bytes: int
    bandwidth_gb_s: float
    price_usd_per_hour: float | None
    fp8_native: bool = True


BIG = FakeGPU("big", "Big", WEIGHTS + 2 * GiB, 1000.0, 1.5)
SMALL = FakeGPU("small", "Small", WEIGHTS + 1 * GiB, 1000.0, 1.0)
NOPRICE = FakeGPU("noprice", "No price", WEIGHTS + 64 * GiB, 1000.0, None)
GPUS = (BIG, SMALL, NOPRICE)


def request(**kw) -> FindRequest:
    base = dict(users=100, prompt_len=1000, output_len=24, max_gpus=2, tensor_parallel_sizes=(1, 2),
                kv_cache_dtypes=("auto",), gpu_memory_utilization=1.0, overhead_bytes=0)
    base.update(kw)
    return FindRequest(**base)


def test_cheapest_first_with_margins():
    result = find_setups(MODEL, GPUS, request())
    assert result.fits
    order = [(s.gpu_id, s.num_gpus) for s in result.options]
    assert order == [("big", 1), ("small", 2), ("big", 2)]
    prices = [s.price_per_hour for s in result.options]
    assert prices == [1.5, 2.0, 3.0]
    big = result.options[0]
    assert big.kv_cache_budget_bytes_per_gpu == 2 * GiB
    assert big.kv_demand_bytes_per_gpu == 1600 * MiB
    assert big.margin == pytest.approx(1 - 1600 / 2048) == 0.21875
    assert big.max_concurrent_sequences == 128  # 2 GiB / 16 MiB
    assert big.headroom_users == 28
    assert big.kv_cache_dtype == "bf16"
    assert big.launch_command == ("vllm serve test/dense --tensor-parallel-size 1 --max-model-len 1024 "
                                  "--gpu-memory-utilization 1 --kv-cache-dtype auto --max-num-seqs 100")


def test_same_price_keeps_the_split_with_the_best_margin():
    small = find_setups(MODEL, GPUS, request()).options[1]
    # tp 2 halves weights and KV per GPU: better margin than two tp-1 replicas of 50 users (1 - 800/1024).
    assert small.tensor_parallel_size == 2 and small.data_parallel_size == 1
    assert small.margin > 0.21875
    assert "--tensor-parallel-size 2" in small.launch_command


def test_setups_agree_with_plan():
    for s in find_setups(MODEL, GPUS, request()).options:
        gpu = {g.id: g for g in GPUS}[s.gpu_id]
        p = plan(MODEL, gpu.framework_memory_bytes, PlanRequest(
            context_len=1024, num_gpus=s.tensor_parallel_size, gpu_memory_utilization=1.0, overhead_bytes=0))
        assert s.kv_cache_budget_bytes_per_gpu == p.kv_cache_budget_bytes
        assert s.max_concurrent_sequences == p.max_concurrent_sequences * s.data_parallel_size


def test_gpus_without_price_are_skipped_and_named():
    result = find_setups(MODEL, GPUS, request())
    assert result.skipped_gpus == ("noprice",)
    assert all(s.gpu_id != "noprice" for s in result.options)
    assert any("noprice" in n for n in result.notes)


def test_nothing_fits_gives_the_closest_option_and_a_gpu_count_that_would():
    result = find_setups(MODEL, GPUS, request(users=1000))
    assert not result.fits and result.options == ()
    closest = result.closest
    assert closest is not None and not closest.fits
    assert (closest.gpu_id, closest.num_gpus, closest.tensor_parallel_size) == ("big", 2, 2)
    assert any("need" in r and "budget" in r for r in closest.reasons)
    assert result.suggestions[0].startswith("raise max_gpus to")
    rows = result.rows()
    assert len(rows) == 1 and rows[0]["fits"] is False
    assert rows[0]["suggestions"] == list(result.suggestions)


def test_time_per_token_limit_filters_setups():
    result = find_setups(MODEL, GPUS, request(max_time_per_output_token_s=1e-6))
    assert not result.fits
    assert any("time per output token" in r for r in result.closest.reasons)
    loose = find_setups(MODEL, GPUS, request(max_time_per_output_token_s=1.0))
    assert [s.gpu_id for s in loose.options] == ["big", "small", "big"]


def test_fp8_kv_doubles_the_users_and_ranks_after_bf16_at_equal_price():
    result = find_setups(MODEL, GPUS, request(kv_cache_dtypes=("auto", "fp8"), users=200))
    first = result.options[0]
    # 200 users x 16 MiB = 3,200 MiB in bf16: no single GPU; fp8 halves it to 1,600 MiB on "big".
    assert (first.gpu_id, first.num_gpus, first.kv_cache_dtype) == ("big", 1, "fp8")
    assert first.max_concurrent_sequences == 256
    assert "--kv-cache-dtype fp8" in first.launch_command


def test_distribution_workload_is_seeded_and_holds_the_users():
    w = Workload(prompt=LogNormal(mean=800, p95=1600), output=Uniform(low=50, high=300), max_model_len=8192)
    a = find_setups(MODEL, GPUS, request(workload=w, num_trials=200))
    b = find_setups(MODEL, GPUS, request(workload=w, num_trials=200))
    assert a == b and a.fits
    for s in a.options:
        assert s.max_concurrent_sequences >= s.users_per_replica
        assert s.max_model_len == 8192


def test_invalid_tensor_parallel_sizes_are_skipped():
    assert valid_tensor_parallel(MODEL, 2) and not valid_tensor_parallel(MODEL, 3)
    result = find_setups(MODEL, GPUS, request(tensor_parallel_sizes=(1, 3)))
    assert all(s.tensor_parallel_size == 1 for s in result.options)
    assert any("[3]" in n for n in result.notes)


def test_requests_longer_than_the_model_are_refused():
    short = dense_model(max_position_embeddings=512)
    with pytest.raises(ValueError, match="exceed what test/dense supports"):
        find_setups(short, GPUS, request())


@pytest.mark.parametrize("kw, match", [
    (dict(users=0), "users must be >= 1"),
    (dict(prompt_len=0), "prompt_len"),
    (dict(kv_cache_dtypes=("fp7",)), "kv_cache_dtypes"),
    (dict(max_gpus=0), "max_gpus"),
])
def test_bad_requests(kw, match):
    with pytest.raises(ValueError, match=match):
        find_setups(MODEL, GPUS, request(**kw))


def test_vllm_serve_command():
    cmd = vllm_serve_command("org/m", tensor_parallel_size=4, data_parallel_size=2, kv_cache_dtype="fp8",
                             weight_dtype="fp8", max_model_len=2500, max_num_seqs=300, block_size=32)
    assert cmd == ("vllm serve org/m --tensor-parallel-size 4 --data-parallel-size 2 --max-model-len 2500 "
                   "--gpu-memory-utilization 0.9 --kv-cache-dtype fp8 --max-num-seqs 300 --block-size 32 "
                   "--quantization fp8")


def test_find_kv_dtypes_are_the_ones_vllm_takes():
    with pytest.raises(ValueError, match="what vLLM's --kv-cache-dtype takes"):
        FindRequest(users=10, prompt_len=100, output_len=10, kv_cache_dtypes=("int4",)).validate()


def test_find_suggests_more_gpus_when_the_weights_do_not_fit():
    # 8 layers of 64 MiB linears: too big for two 1 GiB GPUs at any tensor-parallel size <= 2,
    # fine with more GPUs: the suggestion must search the larger sizes (it kept tp <= max_gpus).
    model = dense_model(num_layers=8, hidden_size=4096, intermediate_size=16384, num_attention_heads=32,
                        num_key_value_heads=8)
    gpus = [FakeGPU(id="small", name="Small", framework_memory_bytes=4 * GiB, price_usd_per_hour=1.0,
                    bandwidth_gb_s=1000.0)]
    result = find_setups(model, gpus, FindRequest(users=1, prompt_len=100, output_len=10, max_gpus=2,
                                                  weight_dtype="fp32", overhead_bytes=0))
    assert not result.fits
    assert any(s.startswith("raise max_gpus to") for s in result.suggestions), result.suggestions


@dataclass(frozen=True)
class FastGPU(FakeGPU):
    bf16_dense_tflops: float = 100.0
    vendor: str = "NVIDIA"


def test_first_columns_time_per_token_ttft_and_cost_per_million_tokens():
    """Hand-worked on the factory model (every figure from its round numbers):
    tpot = (weights + 100 users x KV at the mean decode context) / 1,000 GB/s;
    ttft = 2 x active params x 1,000 prompt tokens / 100 TFLOPS + tpot;
    tokens/s = 100 / tpot; USD per 10^6 tokens = 1.5 / 3,600 / (tokens/s) x 10^6."""
    gpu = FastGPU("fast", "Fast", WEIGHTS + 2 * GiB, 1000.0, 1.5)
    s = find_setups(MODEL, (gpu,), request(tensor_parallel_sizes=(1,))).options[0]
    decode_ctx = 1000 + 24 // 2  # prompt + half the output
    tpot = (WEIGHTS + 100 * decode_ctx * 16 * 1024) / 1e12
    assert s.time_per_output_token_s == pytest.approx(tpot)
    active = MODEL.num_parameters  # dense: every parameter is active
    assert s.time_to_first_token_s == pytest.approx(2 * active * 1000 / 100e12 + tpot)
    assert s.output_tokens_per_s == pytest.approx(100 / tpot)
    assert s.usd_per_million_output_tokens == pytest.approx(1.5 / 3600 / (100 / tpot) * 1e6)
    assert set(s.to_dict()) >= {"time_to_first_token_s", "output_tokens_per_s", "usd_per_million_output_tokens"}


def test_fp8_kv_on_an_nvidia_gpu_without_fp8_names_the_backend():
    """An Ampere part (its capability read from the name): the newest vLLM, which the budget prices, picks an
    fp8-capable backend itself, so the note says no variable is set and the command sets none
    (planner.engines.vllm_fp8_kv; tests/test_fp8_kv_backend.py has each release)."""
    ampere = FastGPU("ampere", "A100 PCIe 80GB", WEIGHTS + 2 * GiB, 1000.0, 1.5, fp8_native=False)
    s = find_setups(MODEL, (ampere,), request(tensor_parallel_sizes=(1,), kv_cache_dtypes=("fp8",))).options[0]
    assert any("no VLLM_ATTENTION_BACKEND" in n for n in s.notes)
    assert "VLLM_ATTENTION_BACKEND" not in s.launch_command


def test_gpu_ids_filter_searches_only_those_types():
    """Issue "One link, one answer" item 6: a filter to one GPU type; only that type is searched."""
    everything = find_setups(MODEL, GPUS, request(users=4))
    assert {s.gpu_id for s in everything.options} == {"big", "small"}
    only_big = find_setups(MODEL, GPUS, request(users=4, gpu_ids=("big",)))
    assert only_big.options and {s.gpu_id for s in only_big.options} == {"big"}
    assert not only_big.skipped_gpus  # the unpriced GPU was not asked for
    with pytest.raises(ValueError, match="unknown GPU type 'nope'"):
        find_setups(MODEL, GPUS, request(users=4, gpu_ids=("nope",)))
