"""The Find page's search cache keys its arguments by ``repr`` (``ui.find_view.KEYED_BY_REPR``, issue 27 speed).

That is only safe while ``repr`` names every value that can change a search: a field left out of ``repr``
(``field(repr=False)``, pydantic ``Field(repr=False)``) would let two different searches share one cached
result. These tests walk real arguments (a hybrid model with an MTP drafter and a drafter spec, a request with
serving features and an uploaded-lengths workload, every catalog GPU and a custom one) and fail on any such
field, then check that the cache tells apart searches that differ in one nested value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest
from pydantic import BaseModel

import model_catalog
from model_catalog.custom import custom_gpu
from model_catalog.gpus import GPU, load_gpus
from planner.model import ModelSpec
from planner.serving import LoRAConfig, ServingFeatures, SpeculativeConfig
from planner.traffic.find_types import FindRequest
from planner.traffic.lengths_csv import LengthTable
from ui import find_view


def _hidden_fields(value, path: str, seen: set[int]) -> list[str]:
    """Paths of init fields that ``repr`` leaves out, anywhere inside ``value``."""
    if id(value) in seen or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return []
    seen.add(id(value))
    found = []
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            if f.init and not f.repr:
                found.append(f"{path}.{f.name}")
            found += _hidden_fields(getattr(value, f.name), f"{path}.{f.name}", seen)
    elif isinstance(value, BaseModel):
        for name, info in type(value).model_fields.items():
            if not info.repr:
                found.append(f"{path}.{name}")
            found += _hidden_fields(getattr(value, name), f"{path}.{name}", seen)
    elif isinstance(value, dict):
        for key, item in value.items():
            found += _hidden_fields(item, f"{path}[{key!r}]", seen)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, item in enumerate(value):
            found += _hidden_fields(item, f"{path}[{i}]", seen)
    return found


def _request(model_id: str) -> FindRequest:
    lengths = LengthTable(prompt=(900, 2_000, 4_100), output=(100, 400, 700), total=None)
    workload = find_view.fixed_or_workload(2_000, None, 500, None, 8_192, lengths)
    request = find_view.find_request(users=40, workload=workload, max_gpus=8, kv_cache_dtypes=("auto", "fp8"),
                                     weight_dtype="auto", max_tpot_ms=50.0, gpu_memory_utilization=0.9,
                                     block_size=16, overhead_gib=None, preemption_probability=0.05, seed=0)
    features = ServingFeatures(engine="vllm", lora=LoRAConfig(max_loras=4, max_lora_rank=16),
                               speculative=SpeculativeConfig(method="mtp", num_speculative_tokens=2,
                                                             num_mtp_layers=1))
    return replace(request, serving=features, engine="vllm", alternative_weight_dtype="fp8")


def test_the_keyed_types_are_the_cached_search_arguments():
    assert set(find_view.KEYED_BY_REPR) == {ModelSpec, FindRequest, GPU}
    assert all(func is repr for func in find_view.KEYED_BY_REPR.values())


@pytest.mark.parametrize("model_id", ["Qwen/Qwen3.5-27B", "deepseek-ai/DeepSeek-V3.2", "Qwen/Qwen3-VL-8B-Instruct"])
def test_repr_names_every_field_of_a_search(model_id):
    model = model_catalog.served_model_spec(model_id)
    gpus = (*load_gpus().values(), custom_gpu("My card", 48, "GB", 900.0, 1.5))
    hidden = (_hidden_fields(model, "model", set()) + _hidden_fields(_request(model_id), "request", set())
              + _hidden_fields(gpus, "gpus", set()))
    assert not hidden, f"repr leaves these out, so the Find cache could mix searches up: {hidden}"


def test_a_nested_change_is_a_different_search():
    model = model_catalog.served_model_spec("Qwen/Qwen3.5-27B")
    gpus = tuple(load_gpus().values())
    request = _request("Qwen/Qwen3.5-27B")
    lora8 = replace(request, serving=replace(request.serving, lora=LoRAConfig(max_loras=8, max_lora_rank=16)))
    first = find_view.run_find(model, gpus, request)
    again = find_view.run_find(model, gpus, request)
    other = find_view.run_find(model, gpus, lora8)
    assert repr(request) != repr(lora8)
    assert first == again  # a cache hit: the same search
    def same(setup):
        return (setup.gpu_id, setup.kind, setup.tensor_parallel_size, setup.data_parallel_size, setup.kv_cache_dtype)

    best = first.options[0]
    best8 = next(s for s in other.options if same(s) == same(best))
    assert best.kv_cache_budget_bytes_per_gpu > best8.kv_cache_budget_bytes_per_gpu  # 8 adapter slots cost more
