"""Cold-start causes of issue 25, each read from the engine's code (the docstrings name the files).

* DeepSeek-V3.2 / GLM-5 sparse attention under vLLM v0.11+: ``--kv-cache-dtype auto`` is vLLM's
  ``fp8_ds_mla`` (656 B per layer per token) plus the FP8 indexer key, not a bf16 latent.
* Kimi-K2-Thinking ships int4 (compressed-tensors): the catalog prices the checkpoint as shipped.
* vLLM's default batch limits per version, GPU class and usage context (``serve`` / ``llm``), and
  the 2026 dummy sampler (Model Runner V2: the model-dtype logits, no top-k / top-p, plus its kept
  per-sequence state; planner/engines/vllm_runner.py).
* SGLang's default ``mem_fraction_static`` of mid-2025 builds (a fixed reserve per GPU class).
"""

from __future__ import annotations

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines.profiles import (
    SAMPLER_BYTES_PER_LOGIT_GUMBEL,
    engine_profile,
    sglang_2025_memory_defaults,
    vllm_batch_limits,
    vllm_scheduler_defaults,
)
from planner.engines.vllm_kv_formats import fp8_ds_mla_bytes, stored_kv_name
from planner.model.sparse import IndexedMLAAttention
from planner.units import GiB
from tests.factories import dense_model

catalog = pytest.importorskip("model_catalog")

H100 = int(79.19 * GiB)
H200_NAME = "H200 SXM 141GB"


# --- DeepSeek-V3.2: fp8_ds_mla ---------------------------------------------------------------


def test_fp8_ds_mla_is_656_bytes_for_the_deepseek_latent():
    assert fp8_ds_mla_bytes(512, 64) == 512 + 4 * 4 + 64 * 2 == 656


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0.11"])
def test_deepseek_v32_auto_cache_is_fp8_ds_mla_plus_indexer(engine):
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    plan = plan_engine(model, 150_217_949_184, EngineRequest(engine=engine, tensor_parallel_size=8,
                                                             max_model_len=32768, gpu_name=H200_NAME))
    assert plan.limiting_rank.kv_cache_bytes_per_token == 61 * (656 + 132)  # 48,068 B, was 61 x 1,284
    assert any("fp8_ds_mla" in note for note in plan.notes)
    bf16 = plan_engine(model, 150_217_949_184, EngineRequest(engine=engine, tensor_parallel_size=8,
                                                             max_model_len=32768, gpu_name=H200_NAME,
                                                             kv_cache_dtype="bf16"))
    assert bf16.limiting_rank.kv_cache_bytes_per_token == 61 * (1152 + 132)
    assert plan.num_gpu_blocks > 1.6 * bf16.num_gpu_blocks * 0.99  # about 1.63x the tokens


@pytest.mark.parametrize("profile_id, kv, stored", [
    ("vllm", "auto", "fp8_ds_mla"), ("vllm-v0.11", "fp8", "fp8_ds_mla"), ("vllm", "bf16", "bf16"),
    ("vllm-v0.10", "auto", "bf16"), ("sglang", "auto", "bf16"), (None, "auto", "fp8_ds_mla"), (None, "bf16", "bf16")])
def test_stored_kv_name_is_the_one_rule_of_what_the_engine_stores(profile_id, kv, stored):
    """One rule (vllm_kv_formats design notes 1, 2) names the cache for the Engine plan's label and for Find's rows:
    vLLM v0.11+ stores DeepSeek-V3.2's auto / fp8 as fp8_ds_mla; bf16, older vLLM and other engines keep the
    dtype's own name (the checkpoint's bf16 for auto). The budget arithmetic without an engine (None) prices the
    newest vLLM, so its auto is fp8_ds_mla too."""
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    assert stored_kv_name(model, profile_id, kv, "bf16") == stored
    assert stored_kv_name(dense_model(), "vllm", "auto", "bf16") == "bf16"  # no sparse-MLA layer


def test_fp8_ds_mla_pages_give_the_tokens_vllm_would_size():
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    available = 40 * GiB
    plan = plan_engine(model, 150_217_949_184, EngineRequest(engine="vllm", tensor_parallel_size=8, max_model_len=8192,
                                                             gpu_name=H200_NAME, available_kv_memory_bytes=available))
    # one group of 61 layers: blocks = available // (block x 788 B x 61)
    assert plan.num_gpu_blocks == available // (plan.block_size * 788 * 61)


def test_glm5_sparse_attention_gets_the_same_format():
    model = catalog.model_spec("zai-org/GLM-5")
    plan = plan_engine(model, 150_217_949_184, EngineRequest(engine="vllm", tensor_parallel_size=8, max_model_len=8192,
                                                             gpu_name=H200_NAME, weight_dtype="fp8"))
    indexed = [layer for layer in model.layers if layer.kind == "mla_indexed"]
    assert indexed and any("fp8_ds_mla" in note for note in plan.notes)
    per_layer = fp8_ds_mla_bytes(indexed[0].kv_lora_rank, indexed[0].qk_rope_head_dim) + 132
    assert plan.limiting_rank.kv_cache_bytes_per_token == per_layer * len(indexed)


def test_older_vllm_and_other_engines_keep_the_latent_dtype():
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    v010 = plan_engine(model, 150_217_949_184, EngineRequest(engine="vllm-v0.10", tensor_parallel_size=8,
                                                             max_model_len=8192, gpu_name=H200_NAME))
    assert v010.limiting_rank.kv_cache_bytes_per_token == 61 * 1284


# --- Kimi-K2-Thinking: int4 as shipped ---------------------------------------------------------


def test_kimi_k2_thinking_is_priced_int4_and_starts_on_8_h200():
    model = catalog.model_spec("moonshotai/Kimi-K2-Thinking")
    assert "compressed-tensors" in model.checkpoint_quantization
    plan = plan_engine(model, 150_217_949_184, EngineRequest(engine="vllm-v0.11", tensor_parallel_size=8,
                                                             max_model_len=262144, gpu_name=H200_NAME))
    assert plan.starts, plan.reasons
    # about 1.03 T parameters, the experts at 4.25 bits: some 70 GiB per GPU of eight, not the 239 GiB of bf16
    assert 60 * GiB < plan.limiting_rank.weights_bytes < 80 * GiB


# --- vLLM batch limits and the dummy sampler ------------------------------------------------------


def test_newest_vllm_serve_defaults_are_8192_tokens_on_large_gpus():
    newest = engine_profile("vllm")
    assert vllm_scheduler_defaults(newest, H100, "H100 SXM5 80GB", 8192) == (8192, 1024)
    assert vllm_scheduler_defaults(newest, H100, "H100 SXM5 80GB", 8192, "llm") == (16384, 1024)
    assert vllm_scheduler_defaults(newest, int(44.4 * GiB), "L40S", 8192) == (2048, 256)


def test_usage_context_reaches_the_plan():
    model = dense_model()
    serve = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB"))
    offline = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB",
                                                     usage_context="llm"))
    assert (serve.max_num_batched_tokens, offline.max_num_batched_tokens) == (8192, 16384)


def test_defaulted_limits_clamp_each_other():
    newest = engine_profile("vllm")
    assert vllm_batch_limits(newest, H100, "H100", 4096, max_num_seqs=1) == (4096, 1)
    assert vllm_batch_limits(newest, H100, "H100", 4096, max_num_batched_tokens=512) == (512, 512)
    assert vllm_batch_limits(engine_profile("vllm-v0.10"), H100, "H100", 4096, max_num_seqs=1) == (8192, 1)
    model = dense_model()
    short = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=2048, max_num_seqs=1,
                                                   gpu_name="H100 SXM5 80GB"))
    long = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=65536, max_num_seqs=1,
                                                  gpu_name="H100 SXM5 80GB"))
    assert (short.max_num_batched_tokens, long.max_num_batched_tokens) == (2048, 8192)


@pytest.mark.parametrize("engine", ["vllm", "vllm-v0.28"])
def test_newest_vllm_samples_without_a_full_sort(engine):
    # Model Runner V2 (the default for dense models from v0.25, for every model from v0.29): bf16 logits of
    # the 256 dummy sequences and the kept hidden states, no FP32 copy, no sort (vllm_runner.py note 3)
    model = catalog.model_spec("Qwen/Qwen3-14B")
    plan = plan_engine(model, 47_768_928_256, EngineRequest(engine=engine, max_model_len=40960, gpu_name="L40S"))
    rank = plan.limiting_rank
    assert (plan.max_num_batched_tokens, plan.max_num_seqs) == (2048, 256)
    assert rank.sampler_bytes == 256 * 151936 * 2 + 2048 * 5120 * 2
    assert rank.activation_bytes == (max(rank.forward_activation_bytes, rank.sampler_bytes) + rank.runner_state_bytes
                                     + rank.first_compile_bytes)  # a first launch's torch.compile (vllm_runner.py)
    # reference case N12 (vLLM 0.28, L40S, a first launch): 11.57 GiB printed; the 38 B/logit sampler gave 10.5.
    # v0.29+ (``vllm``) runs the same V2 pass and also takes its CUDA-graph estimate from the KV cache
    if engine == "vllm-v0.28":
        assert abs(plan.available_kv_cache_bytes / GiB - 11.57) < 0.05 and not rank.cudagraph_charged
    else:
        v028 = plan_engine(model, 47_768_928_256, EngineRequest(engine="vllm-v0.28", max_model_len=40960,
                                                                gpu_name="L40S"))
        assert rank.cudagraph_charged
        assert plan.available_kv_cache_bytes == v028.available_kv_cache_bytes - rank.cudagraph_bytes


def test_v1_runner_models_keep_the_profile_sampler_constant():
    # Qwen3.6-35B-A3B (MoE + Gated DeltaNet) stays on the V1 runner up to v0.28
    model = catalog.model_spec("nvidia/Qwen3.6-35B-A3B-NVFP4")
    plan = plan_engine(model, 47_768_928_256, EngineRequest(engine="vllm-v0.28", max_model_len=40960, gpu_name="L40S"))
    rank = plan.limiting_rank
    assert SAMPLER_BYTES_PER_LOGIT_GUMBEL == 6
    assert rank.sampler_bytes == 256 * model.vocab_size * 6 + 2048 * model.hidden_size * 2
    assert rank.runner_state_bytes == 0 and rank.cudagraph_charged


# --- SGLang's mid-2025 default memory fraction --------------------------------------------------


def test_sglang_mid_2025_reserve_per_gpu_class():
    rtx5080 = 16_558_063_616
    assert sglang_2025_memory_defaults(rtx5080) == (2048, 8, 0.812)
    assert sglang_2025_memory_defaults(H100, 4)[2] == round((H100 / 2**20 - 11.5 * 1024) / (H100 / 2**20), 3)
    model = catalog.model_spec("Qwen/Qwen3-0.6B")
    old = plan_engine(model, rtx5080, EngineRequest(engine="sglang-v0.4", max_model_len=40960))
    new = plan_engine(model, rtx5080, EngineRequest(engine="sglang", max_model_len=40960))
    assert (old.gpu_memory_utilization, new.gpu_memory_utilization) == (0.812, 0.764)
    assert old.available_kv_cache_bytes > new.available_kv_cache_bytes


def test_sglang_mid_2025_fraction_reads_nvidia_smi_total():
    # get_nvgpu_memory_capacity reads nvidia-smi's memory.total: 16,303 MiB on an RTX 5080 (case N22),
    # round((16,303 - 2,969.6) / 16,303, 3) = 0.818; the 15,791 MiB CUDA lets a process use gave 0.812
    rtx5080, reported = 16_558_063_616, 16_303 * 2**20
    assert sglang_2025_memory_defaults(reported) == (2048, 8, 0.818)
    model = catalog.model_spec("Qwen/Qwen3-0.6B")
    fallback = plan_engine(model, rtx5080, EngineRequest(engine="sglang-v0.4", max_model_len=40960))
    smi = plan_engine(model, rtx5080, EngineRequest(engine="sglang-v0.4", max_model_len=40960,
                                                    gpu_memory_reported_bytes=reported))
    assert (fallback.gpu_memory_utilization, smi.gpu_memory_utilization) == (0.812, 0.818)
    # the pool grows by the 0.006 share of the free memory before the load, nothing else moves
    assert smi.available_kv_cache_bytes > fallback.available_kv_cache_bytes
    assert smi.limiting_rank.weights_bytes == fallback.limiting_rank.weights_bytes


# --- a GPU shared with another process ------------------------------------------------------------


def test_vllm_refuses_when_other_processes_leave_less_than_its_share_free():
    model = dense_model()
    alone = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB"))
    shared = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB",
                                                    memory_in_use_bytes=8 * GiB))
    # 0.9 x 79.19 = 71.27 GiB wanted; 79.19 - 8 - 0.61 (own CUDA context) = 70.58 GiB free
    assert alone.starts and not shared.starts
    assert shared.reasons[0].startswith("Free memory on device (70.58/79.19 GiB) on startup is less than desired GPU "
                                        "memory utilization (0.9, 71.27 GiB)")
    assert shared.engine_max_model_len == 0
    lower = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB",
                                                   memory_in_use_bytes=8 * GiB, gpu_memory_utilization=0.85))
    # the fraction applies to the total: the same budget as alone at 0.85
    alone_085 = plan_engine(model, H100, EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB",
                                                       gpu_memory_utilization=0.85))
    assert lower.starts and lower.available_kv_cache_bytes == alone_085.available_kv_cache_bytes


def test_sglang_sizes_from_what_other_processes_leave_free():
    model = dense_model()
    request = EngineRequest(engine="sglang", max_model_len=8192, gpu_memory_utilization=0.8)
    alone = plan_engine(model, H100, request)
    from dataclasses import replace

    shared = plan_engine(model, H100, replace(request, memory_in_use_bytes=10 * GiB))
    smaller = alone.available_kv_cache_bytes - shared.available_kv_cache_bytes
    assert smaller == pytest.approx(0.8 * 10 * GiB, abs=2 * 32768)  # 0.8 of the 10 GiB, to a token cell
    with pytest.raises(ValueError, match="memory in use by other processes"):
        plan_engine(model, H100, replace(request, memory_in_use_bytes=H100))


def test_cli_takes_the_memory_in_use(capsys):
    import json

    from planner.cli import main

    assert main(["plan", "--model", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb", "--engine", "vllm",
                 "--max-model-len", "8192", "--gpu-memory-in-use-gib", "8", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert not out["engine_plan"]["starts"] and "in use by other processes" in out["engine_plan"]["reasons"][0]


@pytest.mark.parametrize("model_id", ["deepseek-ai/DeepSeek-V3.2", "zai-org/GLM-5-FP8"])
def test_the_budget_prices_the_sparse_mla_cache_vllm_stores(model_id):
    """Issue 25, class 3, on the budget pages (Home's headline, Concurrency, Memory curves, Allocation): under
    ``--kv-cache-dtype auto`` the budget prices vLLM's fp8_ds_mla (656 + 132 B a layer and token), so on 8 H200 at
    32,768 tokens its token capacity is the one vLLM prints and its users the whole part of vLLM's concurrency
    (DeepSeek-V3.2: 944,896 tokens, 28 users; bf16 priced 579,888 tokens, 17 users). ``bf16`` keeps a bf16 cache
    in both views."""
    from planner import PlanRequest, plan
    from planner.model.kv import cache_dtypes, kv_cache_bytes_per_token

    model = catalog.model_spec(model_id)
    gpu = catalog.get_gpu("nvidia-h200-sxm")
    layers = sum(isinstance(layer, IndexedMLAAttention) for layer in model.layers)
    assert layers == len(model.layers)
    for kv, per_layer in (("auto", 656 + 132), ("fp8", 656 + 132), ("bf16", 1152 + 132)):
        assert kv_cache_bytes_per_token(model, cache_dtypes(model, "auto", kv)) == layers * per_layer
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=32768, num_gpus=8,
                                                                     kv_cache_dtype=kv), gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
            engine="vllm", tensor_parallel_size=8, max_model_len=32768, kv_cache_dtype=kv, gpu_name=gpu.name))
        assert budget.kv_cache_dtype == engine.kv_cache_dtype == ("bf16" if kv == "bf16" else "fp8_ds_mla")
        assert budget.kv_cache_bytes_per_token_per_gpu == engine.limiting_rank.kv_cache_bytes_per_token
        assert budget.max_concurrent_sequences == int(engine.max_concurrency)


def test_glm52_layers_that_reuse_indices_are_stored_in_fp8_ds_mla_too():
    """GLM-5.2: 21 layers with an indexer, 57 that reuse an earlier layer's indices. vLLM runs every layer of a
    model with ``index_topk`` on the sparse MLA backend (``DeepseekV2MLAAttention`` passes ``is_sparse`` for each,
    vllm/model_executor/models/deepseek_v2.py), so all 78 latents are fp8_ds_mla and 21 add the indexer key:
    78 x 656 + 21 x 132 = 53,940 B a token (the shared layers in bf16 gave 57 x 1,152 + 21 x 788 = 82,212 B).
    The budget and the Engine view agree; bf16 keeps 57 x 1,152 + 21 x 1,284."""
    from planner import PlanRequest, plan

    model = catalog.model_spec("zai-org/GLM-5.2-FP8")
    gpu = catalog.get_gpu("nvidia-h200-sxm")
    assert sum(isinstance(layer, IndexedMLAAttention) for layer in model.layers) == 21 and len(model.layers) == 78
    # vLLM builds an indexer where max(layer - index_skip_topk_offset + 1, 0) % index_topk_freq == 0 (deepseek_v2.py,
    # the IndexCache config): with the config's 4 and 3, the same 21 layers as its indexer_types.
    config = catalog.get_model_entry("zai-org/GLM-5.2-FP8").config
    freq, offset = config["index_topk_freq"], config["index_skip_topk_offset"]
    assert [isinstance(layer, IndexedMLAAttention) for layer in model.layers] == [
        max(i - offset + 1, 0) % freq == 0 for i in range(78)]
    for kv, per_token in (("auto", 78 * 656 + 21 * 132), ("bf16", 57 * 1152 + 21 * (1152 + 132))):
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=32768, num_gpus=8,
                                                                     kv_cache_dtype=kv), gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
            engine="vllm", tensor_parallel_size=8, max_model_len=32768, kv_cache_dtype=kv, gpu_name=gpu.name))
        assert budget.kv_cache_bytes_per_token_per_gpu == engine.limiting_rank.kv_cache_bytes_per_token == per_token
        assert budget.max_concurrent_sequences == int(engine.max_concurrency)


@pytest.mark.parametrize("engine", ["vllm-v0.10", "vllm-v0", "vllm-v1-2025"])
def test_releases_before_sparse_attention_warn_they_cannot_load_the_model(engine):
    """vLLM first served DeepSeek-V3.2 in v0.11.0 (vllm_kv_formats design note 2): an older profile's plan prices
    a plain MLA cache for a launch that would not run, and says so; v0.11+ and dense MLA models say nothing."""
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    request = EngineRequest(engine=engine, tensor_parallel_size=8, max_model_len=8192)
    plan = plan_engine(model, 150_217_949_184, request)
    assert any("predates vLLM's sparse-attention support" in w and "cannot load this model" in w
               for w in plan.warnings)
    for quiet_model, quiet_engine in (("deepseek-ai/DeepSeek-V3.2", "vllm-v0.11"), ("deepseek-ai/DeepSeek-V3", engine)):
        quiet = plan_engine(catalog.model_spec(quiet_model), 150_217_949_184,
                            EngineRequest(engine=quiet_engine, tensor_parallel_size=8, max_model_len=8192))
        assert not any("predates" in w for w in quiet.warnings)


def test_transformers_rank_prices_the_cache_transformers_keeps():
    """The transformers view sizes DeepSeek-V3.2 with its own cache (latent + rope + the indexer key in bf16:
    61 x (1,152 + 256) = 85,888 B a token); the per-rank figure in its JSON said the engines' 78,324 (QA)."""
    model = catalog.model_spec("deepseek-ai/DeepSeek-V3.2")
    plan = plan_engine(model, 150_217_949_184, EngineRequest(engine="transformers", tensor_parallel_size=8,
                                                              max_model_len=32768))
    assert plan.ranks[0].kv_cache_bytes_per_token == 61 * (1152 + 256) == 85_888
    assert plan.kv_cache_bytes_needed_per_request == 85_888 * 32768
