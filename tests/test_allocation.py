"""Naive vs paged allocation, prefix caching, sampling, KV quantization and swap.

The factory model (tests/factories.py) costs 4 layers x 2 x 8 heads x 128 x 2 B
= 16,384 B (16 KiB) per bf16 token, so every figure below is checkable by hand.
"""

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.budget import PlanRequest, plan
from planner.model.kv import cache_dtypes, kv_profile
from planner.traffic.allocation import allocation_curve, allocation_for_model, compare_allocation, slice_waste
from planner.traffic.kvquant import compare_kv_dtypes
from planner.traffic.offload import PCIE4_X16_GB_S, swap_plan
from planner.traffic.prefix import max_sequences_with_sharing, parallel_sampling, prefix_caching, shared_prefix_bytes
from planner.units import GiB, MiB
from tests.factories import dense_model

MODEL = dense_model()
WEIGHTS = 268_453_888
PER_TOKEN = 16_384
DTYPES = cache_dtypes(MODEL, "bf16", "auto")
EXACT = kv_profile(MODEL, DTYPES, 1, 1)
PAGED = kv_profile(MODEL, DTYPES, 1, 16)


def compare(**kw):
    base = dict(max_model_len=8192, mean_len=800)
    base.update(kw)
    return compare_allocation(EXACT, PAGED, 8 * GiB, **base)


# --- the textbook figures ------------------------------------------------------------


def test_8k_limit_with_800_token_sequences_leaves_90_2_percent_of_naive_reservation_unused():
    c = compare()
    assert c.naive.reserved_bytes_per_sequence == 8192 * PER_TOKEN == 128 * MiB
    assert c.naive.used_bytes_per_sequence == 800 * PER_TOKEN == 12.5 * MiB
    assert c.naive.unused_fraction == pytest.approx(1 - 800 / 8192) == 0.90234375
    assert round(c.naive.unused_fraction * 100, 1) == 90.2
    assert c.naive.max_sequences == 64  # 8 GiB / 128 MiB
    assert c.naive.num_sequences == 64  # default batch: what naive admits
    assert c.naive.reserved_bytes == 8 * GiB


def test_paged_holds_ten_times_the_sequences_for_800_token_average():
    c = compare()
    assert c.paged.reserved_bytes_per_sequence == 50 * 16 * PER_TOKEN  # 800 = 50 full blocks
    assert c.paged.unused_fraction == 0
    assert c.paged.max_sequences == 655  # 8 GiB / 12.5 MiB = 655.36
    assert c.paged.reserved_bytes == 64 * 12.5 * MiB


def test_1000_token_completion_under_32k_limit_wastes_31_of_32_slices():
    w = slice_waste(1000, 32 * 1024)
    assert (w.slice_tokens, w.used_slices, w.wasted_slices) == (1024, 1, 31)
    # Same case in bytes: 1 - 1000/32768 of the naive reservation is unused.
    c = compare(max_model_len=32768, mean_len=1000)
    assert c.naive.unused_fraction == pytest.approx(1 - 1000 / 32768)


def test_slice_waste_boundaries():
    assert slice_waste(1024, 32768).wasted_slices == 31
    assert slice_waste(1025, 32768).wasted_slices == 30
    assert slice_waste(32768, 32768).wasted_slices == 0
    with pytest.raises(ValueError, match="must divide"):
        slice_waste(10, 1000, 32)
    with pytest.raises(ValueError, match="num_tokens"):
        slice_waste(40000, 32768)


def test_one_token_past_a_block_wastes_15_slots():
    c = compare(mean_len=801)
    assert c.paged.reserved_bytes_per_sequence == 51 * 16 * PER_TOKEN
    assert c.paged.wasted_bytes == c.paged.num_sequences * 15 * PER_TOKEN


@given(mean_len=st.integers(1, 8192), block=st.sampled_from([1, 8, 16, 32, 128, 256]))
def test_paged_waste_is_below_one_block_per_sequence(mean_len, block):
    paged = kv_profile(MODEL, DTYPES, 1, block)
    c = compare_allocation(EXACT, paged, 8 * GiB, max_model_len=8192, mean_len=mean_len, num_sequences=3)
    assert 0 <= c.paged.wasted_bytes < 3 * block * PER_TOKEN
    assert c.paged.wasted_bytes <= c.naive.wasted_bytes


def test_sliding_window_caps_the_naive_reservation():
    swa = dense_model(sliding_window=4096)
    d = cache_dtypes(swa, "bf16", "auto")
    c = compare_allocation(kv_profile(swa, d, 1, 1), kv_profile(swa, d, 1, 16), 8 * GiB,
                           max_model_len=8192, mean_len=800)
    assert c.naive.reserved_bytes_per_sequence == 4096 * PER_TOKEN
    assert c.naive.unused_fraction == pytest.approx(1 - 800 / 4096)


def test_budget_comes_from_plan():
    request = PlanRequest(context_len=8192, gpu_memory_utilization=1.0, overhead_bytes=0)
    c = allocation_for_model(MODEL, WEIGHTS + 8 * GiB, request, mean_len=800, gpu_id="toy")
    assert c.kv_cache_budget_bytes == plan(MODEL, WEIGHTS + 8 * GiB, request).kv_cache_budget_bytes == 8 * GiB
    assert c.naive.max_sequences == 64
    assert c.to_dict()["naive_unused_fraction"] == 0.90234375
    assert c.gpu_id == "toy"


def test_to_dict_has_the_cli_keys():
    d = compare().to_dict()
    for key in ("naive_reserved_bytes", "naive_unused_fraction", "paged_reserved_bytes", "paged_unused_fraction",
                "naive_max_sequences", "paged_max_sequences", "prefix_max_sequences"):
        assert key in d


def test_curve_naive_halves_when_the_limit_doubles_and_paged_stays():
    points = allocation_curve(EXACT, PAGED, 8 * GiB, mean_len=800, max_model_lens=(512, 1024, 2048, 4096, 8192))
    assert [p.max_model_len for p in points] == [1024, 2048, 4096, 8192]  # 512 < mean_len skipped
    assert [p.naive_max_sequences for p in points] == [512, 256, 128, 64]
    assert {p.paged_max_sequences for p in points} == {655}


@pytest.mark.parametrize("kw, match", [
    (dict(mean_len=9000), "raise max_model_len to at least 9,000"),
    (dict(prefix_len=800), "lower prefix_len to at most 799"),
    (dict(prefix_hit_fraction=1.5), r"\[0, 1\]"),
    (dict(mean_len=0), "mean_len must be >= 1"),
])
def test_bad_lengths_raise_actionable_errors(kw, match):
    with pytest.raises(ValueError, match=match):
        compare(**kw)


# --- prefix caching ------------------------------------------------------------------


def test_prefix_saving_is_n_minus_1_full_blocks():
    # P 1,000 at B 16 -> 62 full blocks = 992 tokens; 10 requests save 9 x 992 x 16 KiB.
    p = prefix_caching(PAGED, prefix_len=1000, seq_len=1200, num_requests=10, budget_bytes=8 * GiB)
    assert p.shared_tokens == 992
    assert p.shared_bytes_per_sequence == 992 * PER_TOKEN
    assert p.bytes_saved == 9 * 992 * PER_TOKEN == 146_276_352
    assert p.prefill_tokens_saved == 9 * 992
    assert p.bytes_with_sharing == 10 * 1200 * PER_TOKEN - 146_276_352


def test_prefix_hit_fraction_counts_only_hitting_requests():
    p = prefix_caching(PAGED, prefix_len=1000, seq_len=1200, num_requests=10, hit_fraction=0.5)
    assert p.num_hits == 5
    assert p.bytes_saved == 4 * 992 * PER_TOKEN


def test_prefix_shorter_than_a_block_saves_nothing():
    assert prefix_caching(PAGED, prefix_len=15, seq_len=100, num_requests=10).bytes_saved == 0


def test_prefix_in_allocation_comparison():
    c = compare(num_sequences=10, prefix_len=500, prefix_hit_fraction=1.0)
    # 500 tokens -> 31 full blocks = 496 tokens shared; 9 requests reuse them.
    assert c.paged.reserved_bytes - c.prefix.reserved_bytes == 9 * 496 * PER_TOKEN
    assert c.prefix.max_sequences > c.paged.max_sequences


def test_max_sequences_with_sharing_by_hand():
    # 100 B per sequence, 60 B shared, all hit: k sequences cost 100k - 60(k-1) = 40k + 60.
    assert max_sequences_with_sharing(100, 60, 1.0, 1000) == 23  # 40*23+60 = 980; 24 -> 1020
    assert max_sequences_with_sharing(100, 0, 1.0, 1000) == 10
    assert max_sequences_with_sharing(100, 60, 0.0, 1000) == 10
    with pytest.raises(ValueError, match="at least one block"):
        max_sequences_with_sharing(100, 100, 1.0, 1000)


def test_windowed_layers_share_the_prefix_only_inside_the_window():
    swa = dense_model(sliding_window=1024)
    paged = kv_profile(swa, cache_dtypes(swa, "bf16", "auto"), 1, 16)
    assert shared_prefix_bytes(paged, 500, 1000) == 496 * PER_TOKEN
    assert shared_prefix_bytes(paged, 500, 2000) == 0


# --- parallel sampling / beam search --------------------------------------------------


def test_four_samples_share_the_prompt_blocks_with_paging():
    s = parallel_sampling(EXACT, PAGED, prompt_len=1000, output_len=200, num_samples=4, budget_bytes=8 * GiB)
    assert s.bytes_without_paging == 4 * 1200 * PER_TOKEN == 75 * MiB
    assert s.bytes_paged_unshared == 4 * 1200 * PER_TOKEN
    assert s.bytes_paged_shared == (4 * 1200 - 3 * 992) * PER_TOKEN == 28.5 * MiB
    assert s.requests_without_paging == 109  # 8 GiB / 75 MiB = 109.2
    assert s.requests_paged_shared == 287  # 8 GiB / 28.5 MiB = 287.4


def test_one_sample_is_one_sequence():
    s = parallel_sampling(EXACT, PAGED, prompt_len=1000, output_len=200, num_samples=1)
    assert s.bytes_paged_shared == PAGED.bytes_per_sequence(1200)


# --- KV quantization ------------------------------------------------------------------


def test_kv_quantization_users_gained():
    request = PlanRequest(context_len=1024, gpu_memory_utilization=1.0, overhead_bytes=0)
    rows = {r.kv_cache_dtype: r for r in compare_kv_dtypes(MODEL, WEIGHTS + 8 * GiB, request)}
    assert list(rows) == ["bf16", "fp8", "int8", "int4"]
    assert rows["bf16"].max_concurrent_sequences == 512  # 8 GiB / 16 MiB
    assert rows["fp8"].kv_cache_bytes_per_token_per_gpu == 8192
    assert rows["fp8"].users_gained == 512
    assert rows["int8"].users_gained == 512
    # int4 = q4_0 layout, 18 B per 32 values (fp16 scale per group of 32): 16,384 x 4.5 / 16 = 4,608 B/token.
    assert rows["int4"].bits_per_element == 4.5
    assert rows["int4"].kv_cache_bytes_per_token_per_gpu == 4608
    assert rows["int4"].max_concurrent_sequences == 1820  # 8 GiB / (1024 x 4,608 B) = 1820.4
    assert rows["int4"].users_gained == 1308
    assert rows["fp8"].capacity_ratio == 2.0
    assert "KIVI" in rows["int4"].sources and "vLLM" in rows["fp8"].sources


def test_kv_quantization_of_a_sparse_mla_model_starts_at_vllms_format():
    """DeepSeek-V3.2: ``auto`` and ``fp8`` are both vLLM's fp8_ds_mla (one row, 656 B for the 576 latent and
    rope values: 9.11 bits), against the bf16 cache vLLM keeps for ``--kv-cache-dtype bfloat16`` (the baseline,
    1,152 B), then int8 and int4 priced on the plain latent (576 and 324 B); every row adds the 132 B indexer
    key a layer."""
    catalog = pytest.importorskip("model_catalog")
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    request = PlanRequest(context_len=32768, num_gpus=8)
    rows = {r.kv_cache_dtype: r for r in compare_kv_dtypes(model, 150_217_949_184, request)}
    assert list(rows) == ["bf16", "fp8_ds_mla", "int8", "int4"]
    assert rows["bf16"].kv_cache_bytes_per_token_per_gpu == 61 * (1152 + 132) and rows["bf16"].users_gained == 0
    assert rows["fp8_ds_mla"].users_gained > 0
    assert round(rows["fp8_ds_mla"].bits_per_element, 2) == 9.11
    assert rows["fp8_ds_mla"].kv_cache_bytes_per_token_per_gpu == 61 * (656 + 132)
    assert rows["int8"].kv_cache_bytes_per_token_per_gpu == 61 * (576 + 132)
    assert rows["int4"].kv_cache_bytes_per_token_per_gpu == 61 * (324 + 132)
    assert "fp8_ds_mla" not in rows["int8"].sources and "flashmla_sparse" in rows["fp8_ds_mla"].sources


# --- swap / offload -------------------------------------------------------------------


def test_swap_space_parks_sequences():
    s = swap_plan(kv_bytes_per_sequence_per_gpu=16 * MiB, gpu_max_sequences=512, cpu_swap_bytes=4 * GiB,
                  recompute_seconds=1.0, num_gpus=2)
    assert s.parked_sequences == 256
    assert s.sequences_in_flight == 768
    assert s.swap_out_seconds == pytest.approx(16 * MiB / (PCIE4_X16_GB_S * 1e9))
    assert s.swap_is_faster is True
    assert s.host_memory_total_bytes == 8 * GiB


def test_swap_rejects_bad_link():
    with pytest.raises(ValueError, match="host_link_gb_s"):
        swap_plan(kv_bytes_per_sequence_per_gpu=1, gpu_max_sequences=1, host_link_gb_s=0)


# --- DeepSeek-V4: every scheme in the fp8_ds_mla pool vLLM stores (QA: naive in bf16 beat paging) ----------------

V4_GPU_BYTES = 150_217_949_184  # an H200 SXM as vLLM sees it


def _v4(max_model_len: int, mean_len: int = 800):
    catalog = pytest.importorskip("model_catalog")
    model = catalog.model_spec("deepseek-ai/DeepSeek-V4-Flash")
    request = PlanRequest(context_len=max_model_len, num_gpus=4)
    return model, request, allocation_for_model(model, V4_GPU_BYTES, request, mean_len=mean_len)


def _pool_bytes(paged, num_tokens: int) -> Fraction:
    """A sequence's bytes at each pool page's rate (page / block per token held), windows capped, unrounded."""
    return sum(Fraction(g.num_layers * g.page_bytes * (num_tokens if g.max_tokens is None
                                                       else min(num_tokens, g.max_tokens)),
                        g.block_size or paged.block_size) for g in paged.groups)


def test_deepseek_v4_naive_and_used_bytes_are_priced_in_the_pool_format():
    from planner.budget import sequence_profiles

    model, request, c = _v4(1024)
    _, paged = sequence_profiles(model, V4_GPU_BYTES, request)
    assert paged.pooled
    assert c.naive.reserved_bytes_per_sequence == _pool_bytes(paged, 1024)  # 1,024 tokens: whole bytes
    assert c.naive.used_bytes_per_sequence == _pool_bytes(paged, 800)
    assert c.pooled


def test_deepseek_v4_reserves_no_more_than_the_budget_and_windows_are_not_waste():
    from planner.budget import sequence_profiles

    model, request, c = _v4(1024)
    _, paged = sequence_profiles(model, V4_GPU_BYTES, request)
    for usage in c.schemes:
        assert usage.reserved_bytes <= c.kv_cache_budget_bytes, usage.scheme
    # a paged sequence wastes at most its last block's tail and the block kept beyond a window, per group
    bound = sum(2 * g.num_layers * g.page_bytes for g in paged.groups)
    assert c.paged.reserved_bytes_per_sequence - c.paged.used_bytes_per_sequence < bound
    assert c.paged.unused_fraction < 0.5


def test_deepseek_v4_curve_prices_naive_in_the_pool_format():
    from planner.budget import sequence_profiles

    model, request, c = _v4(1024)
    exact, paged = sequence_profiles(model, V4_GPU_BYTES, request)
    points = allocation_curve(exact, paged, c.kv_cache_budget_bytes, mean_len=800, max_model_lens=(1024, 8192),
                              prefill_tokens=c.prefill_tokens)
    for p in points:
        assert p.naive_max_sequences == c.kv_cache_budget_bytes // _pool_bytes(paged, p.max_model_len)
    assert points[1].paged_max_sequences > points[1].naive_max_sequences


def test_a_given_batch_beyond_paged_count_is_said():
    c = compare(num_sequences=1000)  # paged admits 655
    assert any("exceeds what paged allocation admits (655)" in n for n in c.notes)


def _fitting_comparison(model_id: str, max_model_len: int):
    catalog = pytest.importorskip("model_catalog")
    model = catalog.model_spec(model_id)
    for gpus in (1, 2, 4, 8):
        try:
            c = allocation_for_model(model, V4_GPU_BYTES, PlanRequest(context_len=max_model_len, num_gpus=gpus),
                                     mean_len=800)
        except ValueError:
            continue
        if c.naive.max_sequences and c.paged.max_sequences:
            return c
    return None


def test_every_catalog_model_pages_at_least_naive_users_within_the_budget():
    """800-token sequences, an H200 per GPU, the fewest GPUs that hold one sequence: paging holds at least naive's
    users at an 8,192-token limit, and no scheme's batch reserves more than the budget at 8,192 or 1,024 tokens
    (where DeepSeek-V4's pages, a block kept beyond each window, cost more than its exact pool bytes)."""
    catalog = pytest.importorskip("model_catalog")
    checked = 0
    for model_id, limit in ((m, n) for m in catalog.model_ids() for n in (8192, 1024)):
        c = _fitting_comparison(model_id, limit)
        if c is None:
            continue
        checked += 1
        assert limit < 8192 or c.paged.max_sequences >= c.naive.max_sequences, model_id
        for usage in c.schemes:
            assert usage.reserved_bytes <= c.kv_cache_budget_bytes, (model_id, usage.scheme)
            assert usage.wasted_bytes >= 0, (model_id, usage.scheme)
    assert checked > 200


def test_deepseek_v4_parallel_sampling_prices_no_paging_in_the_pool_format():
    """The Parallel sampling tab priced V4's "without paging" in the exact bf16 cache (8,277 B a token) beside
    paged figures in vLLM's fp8_ds_mla pool (4,109 B), so four samples without paging cost more than paged ones
    that share nothing (stop 42, left from the Allocation fix). Without paging is now the pool's exact bytes,
    as the naive scheme is: never above the paged figure, and the whole-prompt share is the only saving."""
    from planner.budget import sequence_profiles

    model, request, _ = _v4(8192)
    exact, paged = sequence_profiles(model, V4_GPU_BYTES, request)
    s = parallel_sampling(exact, paged, prompt_len=1000, output_len=200, num_samples=4)
    assert s.bytes_without_paging == 4 * _pool_bytes(paged, 1200)  # 1,200 tokens: whole bytes per 2-token step
    assert s.bytes_without_paging <= s.bytes_paged_unshared


@pytest.mark.parametrize("model_id", ["openai/gpt-oss-120b", "Qwen/Qwen3.6-35B-A3B", "meta-llama/Meta-Llama-3-8B"])
def test_parallel_sampling_without_paging_never_exceeds_unshared_pages(model_id):
    """Paging rounds each sequence up to whole blocks, so k sequences without paging never cost more than k paged
    sequences that share nothing (the exact cache of the same format)."""
    from planner.budget import sequence_profiles

    catalog = pytest.importorskip("model_catalog")
    exact, paged = sequence_profiles(catalog.model_spec(model_id), V4_GPU_BYTES, PlanRequest(context_len=8192))
    s = parallel_sampling(exact, paged, prompt_len=1000, output_len=200, num_samples=4)
    assert 0 < s.bytes_without_paging <= s.bytes_paged_unshared
