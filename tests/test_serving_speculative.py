"""Speculative decoding (planner.serving.speculative): drafter weights, KV and slots worked by hand.

Target: tests/factories.py ``dense_model`` (hidden 1,024, 8 heads and 8 KV heads of 128, intermediate
4,096, vocab 32,768, 4 layers, bf16): KV per token 4 x 2 x 8 x 128 x 2 B = 16,384 B. Shapes follow
vLLM's drafter classes (llama_eagle.py, llama_eagle3.py, deepseek_mtp.py) and the sharing rules of
vllm/v1/spec_decode/eagle.py (embeddings and lm_head shared except EAGLE-3's own lm_head).
"""

from __future__ import annotations

import pytest

from planner.budget import PlanRequest, plan
from planner.model import ModelSpec
from planner.model.layers import FullAttention, MLAAttention
from planner.model.params import attention, gated_mlp, mla_attention, moe_experts, norm, router
from planner.serving import ServingFeatures
from planner.serving.speculative import (
    SpeculativeConfig,
    drafter_groups,
    last_layer_groups,
    launch_flags,
    mtp_layers_from_config,
    speculative_cost,
)
from planner.units import GiB
from tests.factories import dense_model

# One Llama layer of the target: q, k, v, o 4 x 1,024 x 1,024 = 4,194,304; gate, up, down 3 x 1,024 x 4,096
# = 12,582,912; input and post-attention norms 2 x 1,024: 16,779,264 parameters.
LAYER = 16_779_264


def test_eagle_head_is_one_layer_plus_fc():
    cost = speculative_cost(dense_model(), SpeculativeConfig(method="eagle", num_speculative_tokens=3))
    assert cost.draft_params == LAYER + 2048 * 1024 == 18_876_416
    assert cost.weights_bytes == 2 * 18_876_416 == 37_752_832
    assert cost.kv_model.num_layers == 1
    assert cost.extra_tokens_per_sequence == 6  # 3 verified drafts + 3 lookahead slots


def test_eagle3_head_reads_two_hidden_states_and_has_its_own_lm_head():
    # + q, k, v again (input 2 H): 3 x 1,024 x 1,024; fc 3,072 x 1,024; norm 1,024; lm_head 32,000 x 1,024.
    cost = speculative_cost(dense_model(), SpeculativeConfig(method="eagle3", num_speculative_tokens=2))
    assert cost.draft_params == LAYER + 3_145_728 + 3_145_728 + 1024 + 32_768_000 == 55_839_744
    assert cost.weights_bytes == 2 * 55_839_744
    # TP 2: linears halve (layer 16,777,216 + q/k/v again 3,145,728 + lm_head 32,768,000 = 52,690,944 -> 26,345,472);
    # norms (3,072) and the replicated fc (3,145,728) stay whole: 29,494,272 parameters per GPU.
    tp2 = speculative_cost(dense_model(), SpeculativeConfig(method="eagle3"), tensor_parallel_size=2)
    assert tp2.weights_bytes == 2 * 29_494_272


def test_draft_model_brings_its_weights_and_every_layer_of_kv():
    draft = dense_model(num_layers=2, hidden_size=512, num_attention_heads=4, num_key_value_heads=2,
                        intermediate_size=2048, model_id="test/draft")
    cost = speculative_cost(dense_model(), SpeculativeConfig(method="draft_model", draft=draft,
                                                             draft_model_id="test/draft", num_speculative_tokens=4))
    assert cost.draft_params == draft.num_parameters
    assert cost.weights_bytes == 2 * draft.num_parameters
    assert cost.kv_model.num_layers == 2
    assert cost.extra_tokens_per_sequence == 8


def test_ngram_adds_only_the_verified_tokens():
    cost = speculative_cost(dense_model(), SpeculativeConfig(method="ngram", num_speculative_tokens=5))
    assert (cost.weights_bytes, cost.kv_model, cost.extra_tokens_per_sequence) == (0, None, 5)


def _moe_model() -> ModelSpec:
    """3 layers: the first dense (MLP 1,024 -> 2,048), two MoE (router over 4 experts of 512, plus a shared
    expert of 512), full attention everywhere (8 heads of 128)."""
    h = 1024
    params = (
        *attention("layers.*.self_attn", hidden_size=h, num_attention_heads=8, num_key_value_heads=8, head_dim=128,
                   count=3),
        *gated_mlp("layers.*.mlp", hidden_size=h, intermediate_size=2048, count=1),
        *router("layers.*.mlp.gate", hidden_size=h, num_experts=4, count=2),
        *moe_experts("layers.*.mlp.experts", hidden_size=h, intermediate_size=512, num_experts=4, count=2),
        *gated_mlp("layers.*.mlp.shared_experts", hidden_size=h, intermediate_size=512, count=2),
        *norm("layers.*.input_layernorm", h, count=3), *norm("layers.*.post_attention_layernorm", h, count=3),
        *norm("norm", h),
    )
    return ModelSpec(model_id="test/moe", model_type="deepseek_v3", layers=(FullAttention(num_key_value_heads=8,
                     head_dim=128),) * 3, params=params, hidden_size=h, num_attention_heads=8, num_key_value_heads=8,
                     head_dim=128, vocab_size=32768, num_experts=4, num_experts_per_tok=2, torch_dtype="bfloat16")


def test_mtp_layer_is_shaped_like_the_last_moe_layer():
    # attention 4 x 1,048,576 + router 4 x 1,024 + 4 experts x (1,024 x 1,024 + 1,024 x 512) + shared expert
    # 3 x 1,024 x 512 + 2 norms x 1,024 = 4,194,304 + 4,096 + 6,291,456 + 1,572,864 + 2,048 = 12,064,768;
    # the first layer's dense MLP is left out.
    layer = last_layer_groups(_moe_model())
    assert sum(g.total_numel for g in layer) == 12_064_768
    # + eh_proj 2,048 x 1,024 + enorm, hnorm, shared_head.norm 3 x 1,024, per MTP layer.
    config = SpeculativeConfig(method="mtp", num_mtp_layers=2, num_speculative_tokens=2)
    assert sum(g.total_numel for g in drafter_groups(_moe_model(), config)) == 2 * (12_064_768 + 2_097_152 + 3072)
    cost = speculative_cost(_moe_model(), config)
    assert cost.kv_model.num_layers == 2 and cost.extra_tokens_per_sequence == 4


def test_mtp_caches_the_mla_latent_of_its_layer():
    h = 1024
    layer = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64, num_attention_heads=8, qk_nope_head_dim=128,
                         v_head_dim=128)
    params = (*mla_attention("layers.*.self_attn", hidden_size=h, num_attention_heads=8, q_lora_rank=None,
                             kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128, count=2),
              *gated_mlp("layers.*.mlp", hidden_size=h, intermediate_size=2048, count=2))
    model = ModelSpec(model_id="test/mla", model_type="deepseek_v3", layers=(layer,) * 2, params=params,
                      hidden_size=h, num_attention_heads=8, num_key_value_heads=8, head_dim=192, vocab_size=32768,
                      torch_dtype="bfloat16")
    features = ServingFeatures(speculative=SpeculativeConfig(method="mtp", num_mtp_layers=1))
    result = plan(model, 24 * GiB, PlanRequest(context_len=1024, serving=features))
    # One more latent of (512 + 64) x 2 B per token, on every GPU (MLA is replicated).
    assert result.kv_cache_bytes_per_token == 3 * 576 * 2
    assert result.serving["speculative"]["draft_kv_cache_bytes_per_token_per_gpu"] == 1152


@pytest.mark.parametrize(("config", "layers"), [
    ({"num_nextn_predict_layers": 1}, 1),
    ({"text_config": {"mtp_num_hidden_layers": 1, "mtp_use_dedicated_embeddings": False}}, 1),
    ({"num_hidden_layers": 32}, 0),
])
def test_mtp_layers_come_from_the_config(config, layers):
    assert mtp_layers_from_config(config) == layers


@pytest.mark.parametrize(("config", "match"), [
    (SpeculativeConfig(method="medusa"), "unknown speculative method"),
    (SpeculativeConfig(method="eagle", num_speculative_tokens=0), "num_speculative_tokens"),
    (SpeculativeConfig(method="draft_model"), "needs the draft model"),
    (SpeculativeConfig(method="mtp"), "num_nextn_predict_layers"),
])
def test_bad_settings_say_what_to_change(config, match):
    with pytest.raises(ValueError, match=match):
        config.validate()


def test_engines_without_the_method_say_so():
    with pytest.raises(ValueError, match="llama.cpp has no eagle"):
        speculative_cost(dense_model(), SpeculativeConfig(method="eagle"), engine="llama.cpp")


def test_launch_flags_per_engine():
    config = SpeculativeConfig(method="eagle3", num_speculative_tokens=3, draft_model_id="org/head")
    assert launch_flags(config, "vllm") == (
        '--speculative-config \'{"method": "eagle3", "model": "org/head", "num_speculative_tokens": 3}\'')
    assert launch_flags(config, "sglang") == (
        "--speculative-algorithm EAGLE3 --speculative-draft-model-path org/head --speculative-num-steps 3 "
        "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4")
    draft = SpeculativeConfig(method="draft_model", num_speculative_tokens=4, draft=dense_model())
    assert launch_flags(draft, "llama.cpp") == "--model-draft DRAFT.gguf --draft-max 4"


def test_plan_adds_head_weights_kv_and_slots():
    model = dense_model()
    features = ServingFeatures(speculative=SpeculativeConfig(method="eagle", num_speculative_tokens=3))
    plain = plan(model, 24 * GiB, PlanRequest(context_len=1024, overhead_bytes=GiB))
    spec = plan(model, 24 * GiB, PlanRequest(context_len=1024, overhead_bytes=GiB, serving=features))
    assert spec.weights_bytes_per_gpu == plain.weights_bytes_per_gpu + 37_752_832
    assert spec.kv_cache_bytes_per_token == 16_384 + 4_096
    # 1,024 + 6 slots = 1,030 -> 65 blocks of 16 = 1,040 slots x 20,480 B.
    assert spec.kv_cache_bytes_per_sequence_per_gpu == 1030 * 20_480
    assert spec.kv_cache_bytes_needed == 1040 * 20_480
    assert spec.max_concurrent_sequences == spec.kv_cache_budget_bytes // (1040 * 20_480)
    assert spec.kv_cache_capacity_tokens == spec.kv_cache_budget_bytes // (16 * 20_480) * 16
    block = spec.to_dict()["serving"]
    assert block["extra_tokens_per_sequence"] == 6 and block["extra_kv_cache_bytes_per_token_per_gpu"] == 4096


def test_ngram_budget_follows_the_runner_the_engine_view_picks():
    """n-gram drafting keeps vLLM on the V1 model runner (planner/engines/vllm_runner.model_runner), whose
    sampler, CUDA graphs and state differ from V2's; the budget charged V2's, 0.95 GiB more than the Engine
    view for Llama-3.1-8B on an H100 (QA: 175 users against 178.93x)."""
    from model_catalog import get_gpu, model_spec
    from planner.engines import EngineRequest, plan_engine

    features = ServingFeatures(speculative=SpeculativeConfig(method="ngram", num_speculative_tokens=3))
    for model_id, context in (("meta-llama/Meta-Llama-3.1-8B", 2500),
                              ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 8192)):
        model, gpu = model_spec(model_id), get_gpu("nvidia-h100-80gb")
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, serving=features),
                      gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(max_model_len=context, gpu_name=gpu.id, serving=features))
        assert abs(budget.kv_cache_budget_bytes - engine.available_kv_cache_bytes) < 2**20, model_id
        assert budget.max_concurrent_sequences == int(engine.max_concurrency), model_id


def test_budget_charges_v2_s_draft_token_rows_as_the_engine_view_does():
    """Model runner V2's structured-output state holds 1 + k rows per sequence slot
    (planner/engines/vllm_runner.v2_state_bytes): about 31 MB per draft token for Qwen3.5's 248K vocabulary at
    1,024 slots. The budget charged one row, so it was up to 95 MB richer than the Engine view (QA)."""
    from model_catalog import get_gpu, get_model_entry, model_spec
    from planner.engines import EngineRequest, plan_engine

    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    layers = mtp_layers_from_config(get_model_entry(model.model_id).config)
    for k in (1, 3):
        features = ServingFeatures(speculative=SpeculativeConfig(method="mtp", num_speculative_tokens=k,
                                                                 num_mtp_layers=layers))
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500, serving=features),
                      gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(max_model_len=2500, gpu_name=gpu.id, serving=features))
        assert abs(budget.kv_cache_budget_bytes - engine.available_kv_cache_bytes) < 2**20, k
