"""Find names the KV cache each engine-sized setup stores, as the engine plan of that setup names it: SGLang keeps
DeepSeek-V3.2 (sparse MLA) in bf16 under ``auto`` below compute capability 10 and in fp8 from 10
(planner/engines/sglang.py ``sglang_dsa_kv_name``), so on a B200 ``auto`` and ``fp8`` are one cache, listed once."""

from __future__ import annotations

import pytest

from model_catalog import served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.engines import EngineRequest, plan_engine
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups

DSV32 = "deepseek-ai/DeepSeek-V3.2"


@pytest.fixture(scope="module")
def found():
    model = served_model_spec(DSV32)
    request = FindRequest(users=100, prompt_len=8000, output_len=1000, engine="sglang", top=40,
                          kv_cache_dtypes=("auto", "fp8"), gpu_ids=("nvidia-b200", "nvidia-h200-sxm"),
                          setup_kinds=("TP",))
    return model, find_setups(model, list(load_gpus().values()), request)


def test_each_setup_names_the_cache_its_engine_plan_stores(found):
    model, result = found
    assert result.options
    for s in result.options:
        gpu = get_gpu(s.gpu_id)
        plan = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
            engine="sglang", gpu_name=gpu.name, tensor_parallel_size=s.tensor_parallel_size, max_model_len=s.max_model_len,
            kv_cache_dtype=s.kv_cache_dtype_flag))
        assert s.kv_cache_dtype == plan.kv_cache_dtype, (s.gpu_id, s.kv_cache_dtype_flag)
        assert f"--kv-cache-dtype {'fp8_e4m3' if s.kv_cache_dtype_flag == 'fp8' else 'auto'}" in s.launch_command


def test_auto_and_fp8_are_one_setup_on_blackwell(found):
    _, result = found
    b200 = {(s.num_gpus, s.kv_cache_dtype) for s in result.options if s.gpu_id == "nvidia-b200"}
    assert b200 and {kv for _, kv in b200} == {"fp8_ds_mla"}  # auto is fp8 there: not "bf16"
    rows = [(s.num_gpus, s.kv_cache_dtype) for s in result.options if s.gpu_id == "nvidia-b200"]
    assert len(rows) == len(set(rows))  # listed once
    h200 = {s.kv_cache_dtype_flag: s.kv_cache_dtype for s in result.options if s.gpu_id == "nvidia-h200-sxm"}
    assert h200.get("fp8") == "fp8_ds_mla" and h200.get("auto", "bf16") == "bf16"  # auto is bf16 on Hopper


def test_disaggregated_rows_name_the_decode_pool_s_stored_cache():
    """The P/D rows named the asked dtype ("fp8") where the TP and DP+EP rows of the same cache say
    ``fp8_ds_mla`` (QA): they now take the decode pool's engine plan's name, and keep the flag beside it."""
    model = served_model_spec(DSV32)
    request = FindRequest(users=100, prompt_len=8000, output_len=1000, engine="sglang", top=40,
                          kv_cache_dtypes=("fp8",), gpu_ids=("nvidia-h200-sxm",), setup_kinds=("disaggregated",),
                          max_gpus=32)
    rows = [s for s in find_setups(model, list(load_gpus().values()), request).options if s.kind == "disaggregated"]
    assert rows
    for s in rows:
        assert s.kv_cache_dtype == "fp8_ds_mla" and s.kv_cache_dtype_flag == "fp8"
