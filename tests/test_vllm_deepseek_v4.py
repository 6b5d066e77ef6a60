"""DeepSeek-V4 under vLLM v0.22+: the allocator of planner/engines/vllm_deepseek_v4.py against vLLM's own figures.

Sources of the expected values:
* reference case N11 (tests/data/reference/engine_cases.csv; vllm-project/vllm#44376, vLLM ~0.22, V4-Flash on
  two GH200s, ``max_model_len`` 30,000, ``block_size`` 256, fp8 cache, the ``LLM`` class): "6.66 GiB KV cache is
  needed, which is larger than the available KV cache memory (5.44 GiB) ... the estimated maximum model length
  is 13528";
* tests/data/reference/deepseek_v4_vllm_pages.json: vLLM v0.22.0's own ``get_kv_cache_configs`` run on CPU with
  the specs each V4 cache layer registers (scripts/measure_deepseek_v4_vllm_pages.py);
* the hand-worked example of the module's design notes (page sizes, groups, 6,800 blocks).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines import vllm_deepseek_v4 as V4
from planner.engines.loaded import pipeline_layer_ranges
from planner.serving import ServingFeatures, SpeculativeConfig
from planner.units import GiB

catalog = pytest.importorskip("model_catalog")

FLASH = "deepseek-ai/DeepSeek-V4-Flash"
PRO = "deepseek-ai/DeepSeek-V4-Pro"
MEASURED = json.loads((Path(__file__).resolve().parent / "data" / "reference" / "deepseek_v4_vllm_pages.json")
                      .read_text())["runs"]
PRINT_HALF_STEP = GiB // 200


def _model(model_id: str = FLASH):
    return catalog.model_spec(model_id)


def _request(**kw) -> EngineRequest:
    """N11's launch: TP 2, 30,000 tokens, --block-size 256, fp8, the LLM class (16,384 batched tokens)."""
    base = dict(engine="vllm-v0.28", tensor_parallel_size=2, max_model_len=30000, block_size=256,
                kv_cache_dtype="fp8", gpu_memory_utilization=0.95, usage_context="llm", enable_prefix_caching=True)
    base.update(kw)
    return EngineRequest(**base)


def _pinned(model, request: EngineRequest, available: int):
    return plan_engine(model, 96 * GiB, replace(request, available_kv_memory_bytes=available))


def test_flash_pages_and_groups_follow_the_vllm_specs():
    layout = V4.deepseek_v4_layout(_model(), range(43), 256)
    pages = [sorted({s.page_size_bytes for s in group}) for group in layout.groups]
    # compressed K 64 x 584 -> 37,440, HCA 2 x 584 -> 1,728, indexer keys 64 x 132 -> 8,640 (576-byte alignment);
    # the sliding caches 37,440; the CSA states 32,832 -> 37,440 and 8,640; the HCA states 32,832 -> 37,440
    assert pages == [[1728, 8640, 37440], [37440], [37440], [8640, 37440], [37440]]
    assert [len(g) for g in layout.groups] == [62, 22, 21, 42, 20]
    assert layout.bytes_per_block == 22 * 47_808 == layout.need_block_bytes
    blocks = [max(s.blocks_per_request(30000, 16384) for s in set(g)) for g in layout.groups]
    assert blocks == [118, 259, 259, 4099, 2065]


def test_approximate_gcd_pads_the_tuple_counts_least():
    assert V4.approximate_gcd([21, 43, 21, 20], 21) == 22  # pads 1 + 1 + 1 + 2
    assert V4.approximate_gcd([31, 61, 31, 30], 31) == 31  # V4-Pro: pads 0 + 1 + 0 + 1


def test_n11_needs_what_vllm_printed_and_finds_its_estimate():
    model, request = _model(), _request()
    plan = _pinned(model, request, int(5.44 * GiB))
    assert not plan.starts
    assert plan.kv_cache_bytes_needed_per_request == 6_800 * 22 * 47_808 == 7_152_076_800
    assert "(6.66 GiB KV cache is needed" in plan.reasons[0] and "(5.44 GiB)" in plan.reasons[0]
    low = _pinned(model, request, int(5.44 * GiB) - PRINT_HALF_STEP)
    high = _pinned(model, request, int(5.44 * GiB) + PRINT_HALF_STEP - 1)
    assert low.engine_max_model_len <= 13_528 <= high.engine_max_model_len
    assert plan.engine_max_model_len == 13_524  # vLLM v0.22.0's own code at exactly 5.44 GiB (the JSON's first run)


def test_before_this_allocator_the_need_was_15x_too_small():
    # the pages.py estimate of older profiles (compressed pages padded to the sliding page) charged 0.45 GiB
    plan = _pinned(_model(), _request(engine="vllm-v0.11"), int(5.44 * GiB))
    assert plan.kv_cache_bytes_needed_per_request < GiB
    assert any("not modelled" in n for n in plan.notes)


@pytest.mark.parametrize("run", MEASURED, ids=lambda r: f"{r['model'][-5:]}-{r['max_model_len']}-"
                         f"{r['max_num_batched_tokens']}-pp{len(r['stage_first_layers'])}-mtp{r['mtp_layers']}")
def test_matches_vllm_v022_own_allocator(run):
    model = _model(run["model"])
    pp = len(run["stage_first_layers"])
    assert [r.start for r in pipeline_layer_ranges(model.num_layers, pp)] == run["stage_first_layers"]
    serving = None
    if run["mtp_layers"]:
        serving = ServingFeatures(speculative=SpeculativeConfig(method="mtp", num_speculative_tokens=1,
                                                                num_mtp_layers=run["mtp_layers"]))
    request = _request(tensor_parallel_size=1, pipeline_parallel_size=pp, max_model_len=run["max_model_len"],
                       max_num_batched_tokens=run["max_num_batched_tokens"], serving=serving)
    plan = _pinned(model, request, run["available_bytes"])
    if "needed_gib_printed" in run:
        assert not plan.starts
        assert f"{plan.kv_cache_bytes_needed_per_request / GiB:.2f}" == run["needed_gib_printed"]
        assert plan.engine_max_model_len == run["estimated_max_model_len"]
        return
    assert plan.starts
    assert plan.num_gpu_blocks == run["num_blocks"]  # every worker runs with the smallest count (vLLM equalises)
    assert plan.max_concurrency == round(run["max_concurrency"][0], 2)
    assert plan.engine_kv_cache_tokens == int(run["max_concurrency"][0] * run["max_model_len"])
    assert plan.num_kv_groups == len(run["group_layers"])


def test_default_block_size_is_256_and_other_sizes_are_refused():
    plan = _pinned(_model(), _request(block_size=None, max_model_len=8192), 20 * GiB)
    assert plan.block_size == 256
    assert plan.starts
    with pytest.raises(ValueError, match="multiple of 256"):
        _pinned(_model(), _request(block_size=128), 20 * GiB)


def test_hybrid_manager_disabled_is_refused_with_the_flag_named():
    with pytest.raises(ValueError, match="--disable-hybrid-kv-cache-manager"):
        _pinned(_model(), _request(disable_hybrid_kv_cache_manager=True), 20 * GiB)


def test_a_non_fp8_cache_is_priced_as_fp8_with_a_warning():
    fp8 = _pinned(_model(), _request(), int(5.44 * GiB))
    auto = _pinned(_model(), _request(kv_cache_dtype="auto"), int(5.44 * GiB))
    assert auto.kv_cache_bytes_needed_per_request == fp8.kv_cache_bytes_needed_per_request
    assert any("--kv-cache-dtype fp8" in w for w in auto.warnings) and not fp8.warnings
    assert V4.NOTE in fp8.notes


def test_the_compressor_states_grow_with_the_batched_tokens_not_the_length():
    model = _model()
    serve = _pinned(model, _request(max_num_batched_tokens=8192), int(5.44 * GiB))  # vllm serve's budget
    llm = _pinned(model, _request(), int(5.44 * GiB))
    assert serve.starts and not llm.starts
    assert f"{serve.kv_cache_bytes_needed_per_request / GiB:.2f}" == "3.40"


def test_auto_launches_with_the_fp8_cache_vllm_accepts_and_names_it():
    """v0.22 asserts an fp8 cache for DeepSeek-V4 (messages()): with --kv-cache-dtype auto the plan prices fp8, so its
    launch command passes fp8 (a copied `--kv-cache-dtype auto` would not start) and names the cache fp8_ds_mla, as
    an explicit fp8 does (QA: the JSON said bf16 and the command kept auto)."""
    model = _model()
    auto = plan_engine(model, 141 * GiB, _request(kv_cache_dtype="auto"))
    fp8 = plan_engine(model, 141 * GiB, _request(kv_cache_dtype="fp8"))
    assert "--kv-cache-dtype fp8" in auto.launch_command and "--kv-cache-dtype auto" not in auto.launch_command
    assert auto.kv_cache_dtype == fp8.kv_cache_dtype == "fp8_ds_mla"
    assert auto.available_kv_cache_bytes == fp8.available_kv_cache_bytes and auto.num_gpu_blocks == fp8.num_gpu_blocks
    assert any("the launch command passes --kv-cache-dtype fp8" in w for w in auto.warnings)


@pytest.mark.parametrize("gpu_name", ["A100 SXM4 80GB", "RTX A6000", "RTX 6000 Ada Generation"])
def test_pre_hopper_nvidia_gpu_refuses_v4(gpu_name):
    """vLLM runs DeepSeek-V4's sparse MLA on NVIDIA only through FlashMLA sparse (compute capability 9.x/10.x, 12.x
    through its Triton kernels) or FlashInfer's V4 kernels (SM90/SM100/SM120): an Ampere or Ada card does not
    start, whatever its memory; Hopper and ROCm (the AITER path of models/deepseek_v4/amd) do."""
    model = _model()
    request = _request(engine="vllm", tensor_parallel_size=4, max_model_len=8192, block_size=None,
                       gpu_memory_utilization=None, usage_context="serve")
    refused = plan_engine(model, 192 * GiB, replace(request, gpu_name=gpu_name))
    assert not refused.starts
    assert any("compute capability" in r and "DeepSeek-V4" in r for r in refused.reasons)
    for fine in ("H100 SXM5 80GB", "Instinct MI300X"):
        assert plan_engine(model, 192 * GiB, replace(request, gpu_name=fine)).starts, fine
