"""Serving features in the engine view (planner.engines.serving): each figure worked by hand.

Shapes: Llama-3.1-8B (config.json: hidden 4,096, 32 heads of 128, 8 KV heads, intermediate
14,336, vocab 128,256, 32 layers, bf16); the factory model of tests/factories.py (4 layers,
hidden 1,024, 8 heads and 8 KV heads of 128, intermediate 4,096, bf16).
"""

from __future__ import annotations

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.serving import LoRAConfig, ServingFeatures, SpeculativeConfig
from planner.serving.offload import OffloadConfig
from planner.serving.speculative import sglang_draft_pool_bytes
from planner.units import GiB, MiB
from tests.factories import dense_model

# One Llama-3.1-8B slot of rank 64 in bf16 (planner/serving/lora.py docstring, vLLM wraps every
# module): per layer q 64 x (4,096 + 4,096), k and v 64 x (4,096 + 1,024) each, o 64 x 8,192,
# gate and up 64 x (4,096 + 14,336) each, down 64 x (14,336 + 4,096) = 5,242,880 elements;
# x 32 = 167,772,160; embed_tokens and lm_head 64 x (128,256 + 4,096) each = 16,941,056;
# 184,713,216 elements x 2 B = 369,426,432 B per slot.
LLAMA8B_SLOT_BYTES = 369_426_432
# vLLM's punica shrink buffer: 3 slices x 2,048 tokens (vllm serve's max_num_batched_tokens below
# 70 GiB of GPU memory, vllm/engine/arg_utils.py) x rank 64 x 4 B (fp32).
PUNICA_BYTES = 3 * 2048 * 64 * 4
# EAGLE head on the factory model (planner/serving/speculative.py docstring): one decoder layer
# 16,779,264 params + fc 2,048 x 1,024 = 2,097,152 -> 18,876,416 params x 2 B.
EAGLE_HEAD_BYTES = 37_752_832
# One factory layer's KV in a 16-token block: 16 x 2 x 8 heads x 128 x 2 B = 65,536 B.
LAYER_BLOCK = 65_536


def _lora8(engine: str = "vllm") -> ServingFeatures:
    return ServingFeatures(engine=engine, lora=LoRAConfig(max_loras=8, max_lora_rank=64))


def test_vllm_lora_slots_come_out_of_the_kv_budget_on_an_l4():
    model, gpu = model_spec("meta-llama/Llama-3.1-8B-Instruct"), get_gpu("nvidia-l4")
    base = EngineRequest(engine="vllm", max_model_len=4096, gpu_name=gpu.name)
    plain = plan_engine(model, gpu.framework_memory_bytes, base)
    lora = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", max_model_len=4096, gpu_name=gpu.name, serving=_lora8()))
    assert plain.max_num_batched_tokens == 2048
    p, q = plain.ranks[0], lora.ranks[0]
    assert q.weights_bytes - p.weights_bytes == 8 * LLAMA8B_SLOT_BYTES == 2_955_411_456
    assert q.activation_bytes - p.activation_bytes == PUNICA_BYTES == 1_572_864
    assert p.available_kv_cache_bytes - q.available_kv_cache_bytes == 2_956_984_320
    # a block: 32 layers x 16 tokens x 2 x 8 x 128 x 2 B = 2,097,152 B, the same with or without LoRA
    assert q.bytes_per_block == p.bytes_per_block == 2_097_152
    assert q.num_blocks == q.available_kv_cache_bytes // 2_097_152
    assert lora.engine_log_lines[0] == f"Model loading took {q.weights_bytes / GiB:.4f} GiB"
    assert {label: size for label, _, size in q.serving_parts}["LoRA slots"] == 2_955_411_456
    assert lora.serving["lora"]["bytes_per_adapter_slot"] == LLAMA8B_SLOT_BYTES
    assert "--enable-lora --max-loras 8 --max-lora-rank 64" in lora.launch_command
    segments = dict(q.segments(gpu.framework_memory_bytes))
    assert segments["LoRA slots"] == 2_955_411_456
    assert segments["Weights"] == p.weights_bytes  # the bar shows the base weights and the slots apart


def test_vllm_eagle_head_joins_the_block_pool():
    model = dense_model()
    plain = plan_engine(model, 24 * GiB, EngineRequest(engine="vllm", max_model_len=4096))
    eagle = plan_engine(model, 24 * GiB, EngineRequest(engine="vllm", max_model_len=4096, serving=ServingFeatures(
        speculative=SpeculativeConfig(method="eagle", num_speculative_tokens=3))))
    p, q = plain.ranks[0], eagle.ranks[0]
    assert p.bytes_per_block == 4 * LAYER_BLOCK and q.bytes_per_block == 5 * LAYER_BLOCK  # + one drafter layer
    assert q.weights_bytes - p.weights_bytes == EAGLE_HEAD_BYTES
    graphs = q.cudagraph_bytes - p.cudagraph_bytes  # 4 tokens per decode step: more sizes (tests/test_vllm_cudagraph.py)
    assert graphs > 0
    # Model Runner V2 keeps a structured-output bitmask row, its logit index and a draft-token slot per draft
    # token for each of the 256 sequence slots (planner/engines/vllm_runner.py note 4)
    state = q.runner_state_bytes - p.runner_state_bytes
    assert state == 256 * 3 * (4 * (-(-model.vocab_size // 32) + 1) + 8)
    assert p.available_kv_cache_bytes - q.available_kv_cache_bytes == EAGLE_HEAD_BYTES + graphs + state
    assert q.num_blocks == q.available_kv_cache_bytes // (5 * LAYER_BLOCK)
    parts = {label: size for label, _, size in q.serving_parts}
    assert parts["Draft KV cache"] == q.num_blocks * LAYER_BLOCK  # the drafter's page of every block
    assert eagle.serving["speculative"]["draft_kv_cache_bytes_per_token_per_gpu"] == 4096
    assert '"method": "eagle", "model": "EAGLE_DRAFT_REPO", "num_speculative_tokens": 3' in eagle.launch_command


def test_sglang_draft_pool_rule():
    # (tokens + page) x draft cell: 100,000 tokens, page 1, an EAGLE layer of 2 x 8 x 128 x 2 B = 4,096 B.
    assert sglang_draft_pool_bytes(100_000, 1, 4096) == 409_604_096
    assert sglang_draft_pool_bytes(0, 1, 4096) == 0
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        sglang_draft_pool_bytes(-1, 1, 1)


def test_sglang_eagle_keeps_the_target_pool_and_adds_its_own():
    model, memory = dense_model(), 81_090 * MiB  # an H100's framework memory
    features = ServingFeatures(engine="sglang", speculative=SpeculativeConfig(method="eagle", num_speculative_tokens=3))
    fixed = dict(engine="sglang", max_model_len=4096, gpu_memory_utilization=0.8)
    plain = plan_engine(model, memory, EngineRequest(**fixed))
    eagle = plan_engine(model, memory, EngineRequest(**fixed, serving=features))
    assert eagle.engine_kv_cache_tokens == plain.engine_kv_cache_tokens  # the target is profiled first
    parts = {label: (where, size) for label, where, size in eagle.ranks[0].serving_parts}
    tokens = eagle.engine_kv_cache_tokens
    assert parts["Draft KV cache"] == ("outside", (tokens + 1) * 4096)
    assert parts["Draft weights"] == ("outside", EAGLE_HEAD_BYTES)
    # Default fraction: reserved 13,440 MiB (profiles.sglang_memory_defaults) + 2,048 MiB for EAGLE:
    # round((81,090 - 15,488) / 81,090, 3) = 0.809 (0.834 without).
    default = plan_engine(model, memory, EngineRequest(engine="sglang", max_model_len=4096, serving=features))
    assert default.gpu_memory_utilization == 0.809
    assert plan_engine(model, memory, EngineRequest(engine="sglang", max_model_len=4096)).gpu_memory_utilization \
        == 0.834
    assert "--speculative-algorithm EAGLE" in eagle.launch_command
    assert "--speculative-num-draft-tokens 4" in eagle.launch_command
    assert not any("estimate)" in n and "priced like vLLM" in n for n in eagle.notes)


def test_sglang_lora_pool_is_sized_before_the_kv_pool():
    # SGLang's pool for all projections (python/sglang/srt/lora/mem_pool.py), rank 8, bf16, TP 1, per layer:
    # q, k, v, o 8 x (1,024 + 1,024) each; gate, up, down 8 x (1,024 + 4,096) each = 188,416 elements;
    # 4 layers x 2 B = 1,507,328 B per slot; 2 slots = 3,014,656 B.
    model = dense_model()
    fixed = dict(engine="sglang", max_model_len=4096, gpu_memory_utilization=0.8)
    plain = plan_engine(model, 24 * GiB, EngineRequest(**fixed))
    lora = plan_engine(model, 24 * GiB, EngineRequest(**fixed, serving=ServingFeatures(
        engine="sglang", lora=LoRAConfig(max_loras=2, max_lora_rank=8))))
    assert lora.ranks[0].weights_bytes - plain.ranks[0].weights_bytes == 3_014_656
    assert "--max-loras-per-batch 2" in lora.launch_command


def test_llamacpp_prices_a_draft_model_and_says_it_has_no_eagle():
    target, draft = dense_model(), dense_model(num_layers=2, model_id="test/draft")
    base = dict(engine="llama.cpp", max_model_len=4096)
    plain = plan_engine(target, 24 * GiB, EngineRequest(**base))
    with_draft = plan_engine(target, 24 * GiB, EngineRequest(**base, serving=ServingFeatures(
        engine="llama.cpp", speculative=SpeculativeConfig(method="draft_model", draft=draft,
                                                          draft_model_id="test/draft"))))
    # draft KV: 4,096 cells x 2 layers x 2 x 8 x 128 x 2 B (f16) = 33,554,432 B; its weights whole on device 0
    parts = {label: size for label, _, size in with_draft.ranks[0].serving_parts}
    assert parts["Draft KV cache"] == 33_554_432
    assert with_draft.ranks[0].requested_bytes - plain.ranks[0].requested_bytes == \
        parts["Draft weights"] + 33_554_432
    assert "--model-draft" in with_draft.launch_command
    eagle = plan_engine(target, 24 * GiB, EngineRequest(**base, serving=ServingFeatures(
        engine="llama.cpp", speculative=SpeculativeConfig(method="eagle"))))
    assert any(n.startswith("llama.cpp has no eagle") for n in eagle.notes)
    assert eagle.ranks[0].requested_bytes == plain.ranks[0].requested_bytes


@pytest.mark.parametrize("engine", ["tgi", "trtllm", "transformers"])
def test_other_engines_get_a_note_not_a_number(engine):
    model = dense_model()
    plain = plan_engine(model, 24 * GiB, EngineRequest(engine=engine, max_model_len=4096))
    lora = plan_engine(model, 24 * GiB, EngineRequest(engine=engine, max_model_len=4096, serving=_lora8(engine)))
    assert lora.available_kv_cache_bytes == plain.available_kv_cache_bytes
    assert any(n.startswith(f"not modelled for {engine}: LoRA") for n in lora.notes)
    assert lora.launch_command == plain.launch_command


def test_offload_keeps_the_gpu_pool_and_reports_the_host_tier():
    model = dense_model()
    features = ServingFeatures(offload=OffloadConfig(kv_offloading_size=8.0, host_link_gb_s=31.5,
                                                     host_link_name="PCIe 4.0 x16"))
    plain = plan_engine(model, 24 * GiB, EngineRequest(engine="vllm", max_model_len=4096))
    off = plan_engine(model, 24 * GiB, EngineRequest(engine="vllm", max_model_len=4096, serving=features))
    assert off.num_gpu_blocks == plain.num_gpu_blocks
    assert off.serving["offload"]["host_bytes_per_gpu"] == 8 * GiB
    # 4 layers x 2 x 8 x 128 x 2 B = 16,384 B per token over 31.5 GB/s
    assert off.serving["offload"]["seconds_per_token_moved"] == pytest.approx(16_384 / 31.5e9)
    assert "--kv-offloading-size 8" in off.launch_command


def test_no_features_no_new_keys():
    plan = plan_engine(dense_model(), 24 * GiB, EngineRequest(engine="vllm", max_model_len=4096))
    out = plan.to_dict()
    assert "serving" not in out and all("serving_parts" not in r for r in out["ranks"])
    assert [name for name, _ in plan.ranks[0].segments(24 * GiB)] == [
        "Weights", "Activation peak", "Non-torch", "CUDA graphs", "KV cache", "Not allocated", "Over the card"]
