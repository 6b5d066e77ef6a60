"""The numbers behind the one line every page shows (issue 27, item 4): the extra token slots per sequence, the
Allocation page's profiles with the serving features, the Monte-Carlo costing them, and why a card of the same
memory can hold more users (the profile pass by GPU class)."""

from __future__ import annotations

import numpy as np
import pytest

from model_catalog import get_gpu, get_model_entry, model_spec
from planner.budget import PlanRequest, plan, sequence_profiles
from planner.gpu_compare import profile_inversions
from planner.model.kv import cache_dtypes, kv_profile
from planner.serving import LoRAConfig, MultimodalConfig, ServingFeatures, SpeculativeConfig, vision_from_config
from planner.serving.features import ShiftedProfile
from planner.serving.summary import SequenceExtras, sequence_extras
from planner.traffic.allocation import allocation_for_model
from planner.traffic.simulation import analytic_mean_sequence_bytes, sequence_bytes
from planner.traffic.workload import Fixed, Uniform, Workload

VL = "Qwen/Qwen3-VL-8B-Instruct"
LLAMA = "meta-llama/Meta-Llama-3-8B"


def vl_features(**kw) -> ServingFeatures:
    vision = vision_from_config(dict(get_model_entry(VL).config))
    return ServingFeatures(lora=LoRAConfig(max_loras=4), speculative=SpeculativeConfig(method="eagle3"),
                           multimodal=MultimodalConfig(vision=vision, images_per_request=2), **kw)


def test_no_features_no_extra_slots():
    assert sequence_extras(None) == SequenceExtras()
    assert sequence_extras(ServingFeatures(lora=LoRAConfig())).total_tokens == 0


def test_extras_split_what_the_plan_adds_per_sequence():
    gpu = get_gpu("nvidia-l40s")
    features = vl_features()
    result = plan(model_spec(VL), gpu.framework_memory_bytes, PlanRequest(context_len=16384, serving=features),
                  gpu_id=gpu.id)
    extras = sequence_extras(features)
    assert extras.lookahead_tokens == 2  # 1 draft verified + 1 lookahead slot (vLLM scheduler.py)
    assert extras.media_tokens == result.serving["multimodal"]["tokens_per_request"]
    assert extras.total_tokens == result.serving["extra_tokens_per_sequence"]


@pytest.mark.parametrize("method, k, slots", [("eagle3", 3, 6), ("ngram", 3, 3)])
def test_lookahead_slots_by_method(method, k, slots):
    extras = sequence_extras(ServingFeatures(speculative=SpeculativeConfig(method=method, num_speculative_tokens=k)))
    assert extras == SequenceExtras(lookahead_tokens=slots)


def test_the_monte_carlo_costs_a_shifted_profile_as_its_own_bytes_per_sequence():
    model = model_spec(LLAMA)
    inner = kv_profile(model, cache_dtypes(model, "auto", "auto"), 1, 16)
    shifted = ShiftedProfile(inner=inner, extra_tokens=5)
    tokens = np.array([1, 11, 12, 16, 100])  # 11 + 5 = 16 fills one block; 12 + 5 = 17 takes a second
    assert sequence_bytes(shifted, tokens).tolist() == [shifted.bytes_per_sequence(int(n)) for n in tokens]
    assert sequence_bytes(shifted, tokens).tolist()[1:3] == [16 * inner.bytes_per_token, 32 * inner.bytes_per_token]
    spread = Workload(prompt=Uniform(low=100, high=200), output=Fixed(tokens=10), max_model_len=1000)
    assert analytic_mean_sequence_bytes(shifted, spread) == pytest.approx(
        analytic_mean_sequence_bytes(inner, spread) + 5 * inner.bytes_per_token)  # Llama: no windows


def test_allocation_applies_the_features_like_the_plan():
    gpu = get_gpu("nvidia-l40s")
    model = model_spec(VL)
    request = PlanRequest(context_len=16384, serving=vl_features())
    with_features = allocation_for_model(model, gpu.framework_memory_bytes, request, mean_len=800, gpu_id=gpu.id)
    bare = allocation_for_model(model, gpu.framework_memory_bytes, PlanRequest(context_len=16384), mean_len=800,
                                gpu_id=gpu.id)
    exact, _ = sequence_profiles(model, gpu.framework_memory_bytes, request, gpu.id)
    result = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    assert with_features.kv_cache_budget_bytes == result.kv_cache_budget_bytes
    assert with_features.naive.max_sequences == result.kv_cache_budget_bytes // exact.bytes_per_sequence(16384)
    assert with_features.naive.max_sequences < bare.naive.max_sequences


def test_without_features_the_profiles_are_the_models_own():
    gpu = get_gpu("nvidia-l40s")
    model = model_spec(LLAMA)
    dtypes = cache_dtypes(model, "auto", "auto")
    assert sequence_profiles(model, gpu.framework_memory_bytes, PlanRequest(context_len=4096, block_size=32), gpu.id) == (
        kv_profile(model, dtypes, 1, 1), kv_profile(model, dtypes, 1, 32))


def test_a100_holds_more_than_the_h100_of_the_same_memory():
    a100, h100 = get_gpu("nvidia-a100-sxm-80gb"), get_gpu("nvidia-h100-sxm-80gb")
    model = model_spec(LLAMA)
    request = PlanRequest(context_len=8192)
    entries = [(g.id, g.framework_memory_bytes, plan(model, g.framework_memory_bytes, request, gpu_id=g.id))
               for g in (h100, a100)]
    (found,) = profile_inversions(entries, request)
    assert (found.more_gpu_id, found.fewer_gpu_id) == (a100.id, h100.id)
    assert found.more_profile_tokens == 2048 < found.fewer_profile_tokens  # A100s profile the small pass
    assert found.more_users > found.fewer_users
    assert profile_inversions(entries, PlanRequest(context_len=8192, overhead_bytes=1 << 30)) == []
