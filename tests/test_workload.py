"""Length distributions, CSV validation and the seeded Monte-Carlo of users.

Factory model: 16 KiB per bf16 token (tests/factories.py), block 16.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.model.kv import cache_dtypes, kv_profile
from planner.traffic import simulation
from planner.traffic.lengths_csv import parse_lengths_csv, workload_from_csv
from planner.traffic.simulation import (
    analytic_mean_sequence_bytes,
    demand_quantile_bytes,
    draw_slot_sums,
    sequence_bytes,
    simulate_concurrency,
)
from planner.traffic.workload import Empirical, Fixed, LogNormal, Uniform, Workload, fixed_workload
from planner.units import GiB
from tests.factories import dense_model

MODEL = dense_model()
PER_TOKEN = 16_384
PAGED = kv_profile(MODEL, cache_dtypes(MODEL, "bf16", "auto"), 1, 16)


# --- distributions ---------------------------------------------------------------------


def test_lognormal_from_mean_and_p95_worked_example():
    d = LogNormal(mean=800, p95=2000)
    assert d.sigma == pytest.approx(0.7105, abs=1e-4)
    assert d.mu == pytest.approx(6.4322, abs=1e-4)
    assert math.exp(d.mu + d.sigma ** 2 / 2) == pytest.approx(800)
    assert math.exp(d.mu + 1.6448536 * d.sigma) == pytest.approx(2000)


def test_lognormal_samples_match_mean_and_p95():
    s = LogNormal(mean=800, p95=2000).sample(np.random.default_rng(1), 200_000)
    assert s.mean() == pytest.approx(800, rel=0.01)
    assert np.quantile(s, 0.95) == pytest.approx(2000, rel=0.01)


def test_clipped_lognormal_mean_is_closed_form():
    d = LogNormal(mean=800, p95=2000, clip_tokens=1500)
    s = d.sample(np.random.default_rng(2), 200_000)
    assert s.max() == 1500
    assert d.max_tokens == 1500
    assert s.mean() == pytest.approx(d.mean_tokens, rel=0.01)
    assert d.mean_tokens < 800


@pytest.mark.parametrize("mean, p95, match", [
    (800, 800, "must exceed the mean"),
    (800, 500, "must exceed the mean"),
    (100, 1000, "lower p95 to at most 386"),
    (0, 10, "mean > 0"),
])
def test_lognormal_rejects_impossible_shapes(mean, p95, match):
    with pytest.raises(ValueError, match=match):
        LogNormal(mean=mean, p95=p95)


def test_fixed_and_uniform():
    rng = np.random.default_rng(0)
    assert Fixed(tokens=7).sample(rng, 3).tolist() == [7, 7, 7]
    u = Uniform(low=100, high=300)
    assert u.mean_tokens == 200 and u.max_tokens == 300
    s = u.sample(rng, 100_000)
    assert s.min() >= 100 and s.max() <= 300 and s.mean() == pytest.approx(200, rel=0.01)
    with pytest.raises(ValueError, match="low <= high"):
        Uniform(low=5, high=4)


def test_workload_growth_and_limits():
    w = Workload(prompt=Fixed(tokens=100), output=Fixed(tokens=50), max_model_len=1000)
    assert w.mean_tokens == 150 and w.max_tokens == 150 and w.is_fixed
    mid = Workload(prompt=Fixed(tokens=100), output=Fixed(tokens=50), max_model_len=1000, growth="uniform")
    assert mid.mean_tokens == 125
    s = mid.sample_tokens(np.random.default_rng(0), 50_000)
    assert s.min() == 100 and s.max() == 150 and s.mean() == pytest.approx(125, rel=0.01)
    unbounded = Workload(prompt=LogNormal(mean=800, p95=2000), output=Fixed(tokens=10), max_model_len=4096)
    assert unbounded.max_tokens == 4096
    assert unbounded.sample_tokens(np.random.default_rng(0), 100_000).max() <= 4096
    with pytest.raises(ValueError, match="exceeds max_model_len"):
        fixed_workload(1000, 200, 1100)


# --- CSV -------------------------------------------------------------------------------


def test_csv_with_header_pairs_prompt_and_output():
    table = parse_lengths_csv("prompt_len,output_len\n100,20\n# comment\n\n300,40\n")
    assert table.prompt == (100, 300) and table.output == (20, 40) and table.total is None
    w = workload_from_csv("prompt_tokens,completion_tokens\n100,20\n300,40\n", max_model_len=1000)
    assert w.paired and w.mean_tokens == 230
    s = w.sample_tokens(np.random.default_rng(0), 1000)
    assert set(s.tolist()) == {120, 340}  # rows drawn together, never 100 + 40


def test_csv_without_header():
    assert parse_lengths_csv("5\n6\n7").total == (5, 6, 7)
    assert parse_lengths_csv("5,1\n6,2").prompt == (5, 6)
    assert parse_lengths_csv("\ufefftokens\n12\n").total == (12,)
    w = workload_from_csv("10\n20\n", max_model_len=100)
    assert w.mean_tokens == 15 and w.max_tokens == 20


@pytest.mark.parametrize("text, match", [
    ("", "empty"),
    ("tokens\n", "no rows"),
    ("foo,bar\n1,2\n", "unknown column 'foo'"),
    ("prompt_len,output_len\n100,abc\n", "line 2, column 'output_len'.*'abc'"),
    ("prompt_len,output_len\n100,2.5\n", "line 2.*whole number"),
    ("prompt_len,output_len\n100,-3\n", "line 2.*>= 0"),
    ("prompt_len,output_len\n100\n", "line 2: expected 2 cells"),
    ("prompt_len,output_len\n0,5\n", "line 2: a prompt needs at least 1 token"),
    ("1,2,3\n", "3 columns without a header"),
    ("prompt_len,tokens\n1,2\n", "either total, or both"),
    ("prompt_len\n1\n", "either total, or both"),
])
def test_csv_errors_name_the_line_and_the_fix(text, match):
    with pytest.raises(ValueError, match=match):
        parse_lengths_csv(text)


def test_csv_rows_longer_than_the_limit_are_refused():
    with pytest.raises(ValueError, match="5,000-token request.*raise max_model_len"):
        workload_from_csv("4000,1000\n", max_model_len=4096)


def test_csv_row_limit():
    with pytest.raises(ValueError, match="limit is 2"):
        parse_lengths_csv("1\n2\n3\n", max_rows=2)


# --- vectorised bytes -------------------------------------------------------------------


@settings(max_examples=50)
@given(tokens=st.lists(st.integers(0, 20_000), min_size=1, max_size=20), window=st.sampled_from([None, 100, 4096]))
def test_sequence_bytes_matches_profile(tokens, window):
    model = dense_model(sliding_window=window)
    profile = kv_profile(model, cache_dtypes(model, "bf16", "auto"), 1, 16)
    assert sequence_bytes(profile, np.array(tokens)).tolist() == [profile.bytes_per_sequence(t) for t in tokens]


# --- Monte-Carlo ------------------------------------------------------------------------


def test_fixed_lengths_give_one_answer():
    # 1,000 tokens -> 63 blocks = 1,008 slots x 16 KiB = 16,515,072 B; 8 GiB / that = 520.1.
    sim = simulate_concurrency(PAGED, 8 * GiB, fixed_workload(800, 200), num_trials=50, seed=3)
    assert sim.guaranteed_users == sim.p5_users == sim.p95_users == 520
    assert sim.expected_users == 520
    assert sim.analytic_mean_sequence_bytes == 1008 * PER_TOKEN
    assert sim.preemption_probability(520) == 0 and sim.preemption_probability(521) == 1


LOGNORMAL = Workload(prompt=LogNormal(mean=2000, p95=4000), output=Uniform(low=100, high=900), max_model_len=1 << 20)


def test_monte_carlo_is_deterministic_for_a_seed():
    a = simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=7)
    simulation._simulate.cache_clear()  # draw again instead of reusing the kept result
    b = simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=7)
    c = simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=8)
    assert a == b and a is not b
    assert a.users_fit != c.users_fit


def test_a_repeated_simulation_is_reused_and_any_changed_argument_draws_again():
    simulation._simulate.cache_clear()
    first = simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=7)
    assert simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=7) is first
    # An equal workload built anew (as every page rerun builds it) is the same key.
    again = Workload(prompt=LogNormal(mean=2000, p95=4000), output=Uniform(low=100, high=900), max_model_len=1 << 20)
    assert simulate_concurrency(PAGED, 8 * GiB, again, num_trials=200, seed=7) is first
    changed = [simulate_concurrency(PAGED, 8 * GiB - 1, LOGNORMAL, num_trials=200, seed=7),
               simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=201, seed=7),
               simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=200, seed=8),
               simulate_concurrency(PAGED, 8 * GiB, fixed_workload(2000, 500), num_trials=200, seed=7)]
    assert all(sim is not first for sim in changed)
    assert changed[0].kv_cache_budget_bytes == 8 * GiB - 1 and changed[1].num_trials == 201
    assert simulation._simulate.cache_info().currsize == 5
    for _ in range(simulation.SIMULATION_CACHE_SIZE + 1):  # bounded: the oldest result goes
        simulate_concurrency(PAGED, 4 * GiB + _, LOGNORMAL, num_trials=20, seed=0)
    assert simulation._simulate.cache_info().currsize == simulation.SIMULATION_CACHE_SIZE
    with pytest.raises(ValueError, match="num_trials must be >= 20"):  # errors are not kept
        simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=19, seed=7)


def test_monte_carlo_agrees_with_the_analytic_mean_within_1_percent():
    # 64 GiB / (16 KiB x (2,500 + 7.5)) = 68,719,476,736 / 41,082,880 = 1,672.7 users expected.
    sim = simulate_concurrency(PAGED, 64 * GiB, LOGNORMAL, num_trials=400, seed=0)
    assert sim.analytic_mean_tokens == 2500
    assert sim.analytic_mean_sequence_bytes == PER_TOKEN * 2507.5
    assert sim.analytic_expected_users == pytest.approx(1672.7, abs=0.1)
    assert sim.mean_tokens == pytest.approx(sim.analytic_mean_tokens, rel=0.01)
    assert sim.mean_sequence_bytes == pytest.approx(sim.analytic_mean_sequence_bytes, rel=0.01)
    assert sim.expected_users == pytest.approx(sim.analytic_expected_users, rel=0.01)


def test_percentiles_and_preemption_curve():
    sim = simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=500, seed=1)
    # Worst case: a clipped request of 2^20 tokens; the guarantee is far below the typical load.
    assert sim.guaranteed_users == 0
    assert sim.p5_users <= sim.p50_users <= sim.p95_users
    assert sim.p5_users <= sim.expected_users <= sim.p95_users
    assert sim.preemption_probability(sim.p5_users) <= 0.05
    assert sim.preemption_probability(sim.p95_users + 1) >= 0.95
    curve = sim.curve()
    probs = [p for _, p in curve]
    assert probs == sorted(probs) and probs[0] == 0 and probs[-1] == 1
    assert len(curve) <= 201
    assert sim.users_at_risk(0.05) == sim.users_fit[25]
    assert sim.preemption_probability(sim.users_at_risk(0.05)) <= 0.05
    assert sim.preemption_probability(sim.users_at_risk(0.05) + 1) > 0.05


def test_monte_carlo_errors():
    with pytest.raises(ValueError, match="num_trials"):
        simulate_concurrency(PAGED, 8 * GiB, LOGNORMAL, num_trials=5)
    with pytest.raises(ValueError, match="not even a 1-token request"):
        simulate_concurrency(PAGED, 1000, LOGNORMAL)


def test_demand_quantile_matches_fixed_lengths_exactly():
    sums = draw_slot_sums(fixed_workload(800, 200), 10, 16, (None,), num_trials=30)
    assert demand_quantile_bytes(sums, PAGED, 10, 0.95) == 10 * 1008 * PER_TOKEN


def test_analytic_mean_of_empirical_lengths():
    w = Workload(prompt=Empirical(values=(16, 32)), output=Fixed(tokens=0), max_model_len=100)
    # mean 24 tokens + (16 - 1) / 2 slots of rounding on average.
    assert analytic_mean_sequence_bytes(PAGED, w) == PER_TOKEN * (24 + 7.5)
