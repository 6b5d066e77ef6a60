"""Engine profiles: the KV-cache dtype each engine offers nearest to one it does not (a one-click fix)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("engine,requested,nearest", [
    ("llama.cpp", "fp8", "q8_0"), ("llama.cpp", "int8", "q8_0"), ("llama.cpp", "nvfp4", "q4_0"),
    ("vllm", "q8_0", "fp8"), ("vllm", "int4", "fp8"), ("vllm", "fp32", "bf16"), ("sglang", "int8", "fp8"),
    ("tgi", "bf16", "auto"), ("transformers", "fp8", "int8"), ("vLLM", "fp8", None), ("llama.cpp", "auto", None),
])
def test_nearest_kv_dtype_the_engine_offers(engine, requested, nearest):
    # Nearest in bits per element (planner.model.dtypes.KV_CACHE_DTYPES); None when the engine offers it.
    from planner.engines.profiles import ENGINE_PROFILES, nearest_kv_cache_dtype, resolve_engine_name

    got = nearest_kv_cache_dtype(engine, requested)
    assert got == nearest
    if got is not None:
        assert got in ENGINE_PROFILES[resolve_engine_name(engine)].kv_cache_dtypes
