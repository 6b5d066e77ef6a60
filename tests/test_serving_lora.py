"""LoRA adapter slots (planner.serving.lora): shapes worked by hand from the engines' allocation code.

The factory model (tests/factories.py ``dense_model``): hidden 1,024, 8 query and 8 KV heads of
128, intermediate 4,096, vocab 32,768, 4 layers, model type ``llama`` (so vLLM also wraps
``embed_tokens`` and ``lm_head``). Per module and slot vLLM holds A = rank x in and B = out x rank
(vllm/lora/layers/base_linear.py ``create_lora_weights``); column-parallel layers shard B's rows,
row-parallel layers A's columns.
"""

from __future__ import annotations

import pytest

from planner.budget import PlanRequest, plan
from planner.model import ModelSpec
from planner.model.dtypes import BF16, FP16
from planner.model.kv import KVGroup, KVProfile
from planner.model.layers import FullAttention
from planner.model.params import moe_experts, norm, router
from planner.serving import LoRAConfig, ServingFeatures, lora_slots
from planner.serving.features import ShiftedProfile, engine_family
from planner.serving.lora import launch_flags
from planner.units import GiB
from tests.factories import dense_model

RANK = 16
# Per layer at TP 1: q, k, v, o: 16 x (1,024 + 1,024) = 32,768 each; gate, up: 16 x (1,024 + 4,096)
# = 81,920 each; down: 16 x (4,096 + 1,024) = 81,920. Sum 4 x 32,768 + 3 x 81,920 = 376,832.
PER_LAYER_TP1 = 376_832
EMBEDDINGS = 2 * RANK * (32_768 + 1_024)  # embed_tokens A vocab x r + B hidden x r; lm_head the same = 1,081,344


def test_vllm_slot_elements_by_hand():
    slots = lora_slots(dense_model(), LoRAConfig(max_loras=1, max_lora_rank=RANK), activation=BF16)
    assert slots.elements_per_slot == 4 * PER_LAYER_TP1 + EMBEDDINGS == 2_588_672
    assert slots.bytes_per_slot == 2 * 2_588_672 == 5_177_344
    assert slots.lora_dtype == "bf16"
    assert {m.name.rsplit(".", 1)[-1] for m in slots.modules} == {
        "embed_tokens", "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"}


def test_slots_multiply_and_host_copies():
    slots = lora_slots(dense_model(), LoRAConfig(max_loras=4, max_lora_rank=RANK, max_cpu_loras=10), activation=BF16)
    assert slots.slot_bytes == 4 * 5_177_344
    assert slots.adapter_bytes == 5_177_344  # TP 1: the host copy is the slot's shape
    assert slots.host_bytes == 10 * 5_177_344
    assert slots.max_cpu_loras == 10


def test_tensor_parallel_shards_one_side_of_each_module():
    # TP 2: q 16 x (1,024 + 512), k and v 16 x (1,024 + 4 heads x 128), o (row) 16 x (512 + 1,024);
    # gate, up 16 x (1,024 + 2,048); down (row) 16 x (2,048 + 1,024): 4 x 24,576 + 3 x 49,152 = 245,760.
    slots = lora_slots(dense_model(), LoRAConfig(max_lora_rank=RANK), activation=BF16, tensor_parallel_size=2)
    assert slots.elements_per_slot == 4 * 245_760 + EMBEDDINGS  # embeddings are not sharded
    assert slots.adapter_bytes == 5_177_344  # the host copy is whole


def test_kv_heads_are_replicated_past_their_count():
    # 2 KV heads of 128 on 4 GPUs: vLLM keeps one head per GPU (B = 128 x r); SGLang divides 256 / 4 = 64.
    model = dense_model(num_key_value_heads=2)
    vllm = {m.name: m for m in lora_slots(model, LoRAConfig(max_lora_rank=RANK), activation=BF16,
                                          tensor_parallel_size=4).modules}
    sglang = {m.name: m for m in lora_slots(model, LoRAConfig(max_lora_rank=RANK), activation=BF16,
                                            tensor_parallel_size=4, engine="sglang").modules}
    assert vllm["layers.*.self_attn.k_proj"].b_elements == 128 * RANK
    assert sglang["layers.*.self_attn.k_proj"].b_elements == 64 * RANK


def test_sglang_allocates_its_target_modules_only():
    config = LoRAConfig(max_loras=2, max_lora_rank=RANK)
    slots = lora_slots(dense_model(), config, activation=BF16, engine="sglang")
    assert slots.elements_per_slot == 4 * PER_LAYER_TP1  # "all" = attention + MLP, no embeddings
    attention_only = lora_slots(dense_model(), LoRAConfig(max_lora_rank=RANK, target_modules=("qkv_proj", "o_proj")),
                                activation=BF16, engine="sglang")
    assert attention_only.elements_per_slot == 4 * 4 * 32_768


def test_moe_experts_and_router_get_slots():
    # 2 MoE layers, 4 experts of I = 512 on H = 1,024, rank 8, TP 1. Per expert (vLLM FusedMoEWithLoRA):
    # w13 = 2 x (8 x 1,024 + 512 x 8) = 24,576; w2 = 8 x 512 + 1,024 x 8 = 12,288: 36,864.
    # Router (ReplicatedLinear 4 x 1,024): 8 x (1,024 + 4) = 8,224 per layer.
    params = (*moe_experts("layers.*.mlp.experts", hidden_size=1024, intermediate_size=512, num_experts=4, count=2),
              *router("layers.*.mlp.gate", hidden_size=1024, num_experts=4, count=2),
              *norm("norm", 1024))
    model = ModelSpec(model_id="test/moe", model_type="mixtral", layers=(FullAttention(num_key_value_heads=8,
                      head_dim=128),) * 2, params=params, hidden_size=1024, num_attention_heads=8,
                      num_key_value_heads=8, head_dim=128, vocab_size=32768, num_experts=4, num_experts_per_tok=2)
    slots = lora_slots(model, LoRAConfig(max_lora_rank=8), activation=BF16)
    assert slots.elements_per_slot == 2 * 4 * 36_864 + 2 * 8_224
    # TP 2 shards the intermediate: w13 = 2 x (8 x 1,024 + 256 x 8), w2 = 8 x 256 + 1,024 x 8 per expert.
    tp2 = lora_slots(model, LoRAConfig(max_lora_rank=8), activation=BF16, tensor_parallel_size=2)
    assert tp2.elements_per_slot == 2 * 4 * (2 * (8_192 + 2_048) + 2_048 + 8_192) + 2 * 8_224


def test_tied_embeddings_still_wrap_lm_head():
    model = dense_model()
    tied = ModelSpec(**{**model.__dict__, "params": tuple(p for p in model.params if p.kind != "lm_head")})
    assert lora_slots(tied, LoRAConfig(max_lora_rank=RANK), activation=BF16).elements_per_slot == 2_588_672


def test_non_llama_classes_get_no_embedding_slots():
    model = dense_model()
    qwen = ModelSpec(**{**model.__dict__, "model_type": "qwen3"})
    slots = lora_slots(qwen, LoRAConfig(max_lora_rank=RANK), activation=BF16)
    assert slots.elements_per_slot == 4 * PER_LAYER_TP1
    assert any("embedding_modules" in n for n in slots.notes)


def test_lora_dtype_and_profile_buffer():
    slots = lora_slots(dense_model(), LoRAConfig(max_lora_rank=RANK, lora_dtype="fp16"), activation=BF16,
                       num_batched_tokens=2048)
    assert slots.lora_dtype == FP16.name
    assert slots.profile_activation_bytes == 3 * 2048 * RANK * 4  # q, k, v slices x tokens x rank, fp32


def test_engines_without_the_feature_say_so():
    slots = lora_slots(dense_model(), LoRAConfig(), activation=BF16, engine="tgi")
    assert not slots.supported and slots.bytes_per_slot == 0
    assert "not sized" in slots.notes[0]


def test_llamacpp_loads_adapters_whole():
    slots = lora_slots(dense_model(), LoRAConfig(max_loras=2, max_lora_rank=RANK), activation=BF16,
                       engine="llama.cpp", tensor_parallel_size=2)
    assert slots.elements_per_slot == 4 * PER_LAYER_TP1  # no sharding, no embedding adapters
    assert slots.slot_bytes == 2 * 2 * 4 * PER_LAYER_TP1  # f16


@pytest.mark.parametrize(("config", "match"), [
    (LoRAConfig(max_loras=0), "max_loras"),
    (LoRAConfig(max_lora_rank=0), "max_lora_rank"),
    (LoRAConfig(max_loras=4, max_cpu_loras=2), "max_cpu_loras"),
    (LoRAConfig(lora_dtype="int8"), "lora_dtype"),
    (LoRAConfig(target_modules=("wq",)), "target module"),
])
def test_bad_settings_say_what_to_change(config, match):
    with pytest.raises(ValueError, match=match):
        config.validate()


def test_launch_flags_per_engine():
    config = LoRAConfig(max_loras=8, max_lora_rank=64, max_cpu_loras=16)
    assert launch_flags(config, "vllm") == "--enable-lora --max-loras 8 --max-lora-rank 64 --max-cpu-loras 16"
    assert launch_flags(config, "sglang") == ("--enable-lora --max-loras-per-batch 8 --max-lora-rank 64 "
                                              "--lora-target-modules all --max-loaded-loras 16")
    assert engine_family("vllm-v0.11") == "vllm" and engine_family("sglang") == "sglang"


# --- the budget hook ------------------------------------------------------------------------------
GPU = 24 * GiB


def test_plan_without_serving_has_no_serving_key():
    result = plan(dense_model(), GPU, PlanRequest(context_len=1024))
    assert "serving" not in result.to_dict()
    assert result == plan(dense_model(), GPU, PlanRequest(context_len=1024, serving=None))


def test_plan_subtracts_the_slots_like_weights():
    model = dense_model()
    request = PlanRequest(context_len=1024, overhead_bytes=GiB)
    features = ServingFeatures(lora=LoRAConfig(max_loras=8, max_lora_rank=RANK))
    plain = plan(model, GPU, request)
    with_lora = plan(model, GPU, PlanRequest(context_len=1024, overhead_bytes=GiB, serving=features))
    assert with_lora.weights_bytes_per_gpu == plain.weights_bytes_per_gpu + 8 * 5_177_344
    assert with_lora.kv_cache_budget_bytes == plain.kv_cache_budget_bytes - 8 * 5_177_344
    assert with_lora.overhead_bytes == GiB  # an override is the whole overhead: no profile extra
    serving = with_lora.to_dict()["serving"]
    assert serving["lora"]["bytes_per_adapter_slot"] == 5_177_344
    assert serving["kv_cache_budget_bytes_without_serving"] == plain.kv_cache_budget_bytes
    # Beside one 1,024-token sequence (KV per token 4 layers x 2 x 8 x 128 x 2 B = 16 KiB; 16 MiB):
    free = plain.kv_cache_budget_bytes - 1024 * 16384
    assert serving["lora"]["max_loras_that_fit"] == free // 5_177_344
    assert serving["launch_flags"]["vllm"] == "--enable-lora --max-loras 8 --max-lora-rank 16"


def test_plan_adds_the_punica_buffer_to_the_estimated_activation():
    model = dense_model()
    features = ServingFeatures(lora=LoRAConfig(max_lora_rank=RANK))
    plain = plan(model, GPU, PlanRequest(context_len=1024, max_num_batched_tokens=2048))
    with_lora = plan(model, GPU, PlanRequest(context_len=1024, max_num_batched_tokens=2048, serving=features))
    assert with_lora.overhead_bytes == plain.overhead_bytes + 3 * 2048 * RANK * 4
    assert "serving features" in with_lora.overhead_formula


def test_shifted_profile_rounds_extra_slots_into_blocks():
    profile = KVProfile(groups=(KVGroup(num_layers=1, bytes_per_token=1, max_tokens=None,
                                        bytes_per_sequence_fixed=0),), block_size=16)
    shifted = ShiftedProfile(inner=profile, extra_tokens=2)
    assert profile.bytes_per_sequence(16) == 16
    assert shifted.bytes_per_sequence(16) == 32  # 18 slots -> 2 blocks of 16
    assert shifted.bytes_per_sequences([14, 16]) == [16, 32]


def test_serving_budget_cost_is_the_adapter_weights_plus_the_profile_pass():
    """planner.budget.serving_budget_cost_bytes (Home's "The features take ... per GPU"), the docstring's worked
    example: Qwen3-8B on an H100 SXM, one rank-16 bf16 LoRA slot takes its adapter weights plus its profile pass
    from the KV budget; usable memory is unchanged."""
    from dataclasses import replace

    catalog = pytest.importorskip("model_catalog")
    from planner.budget import serving_budget_cost_bytes

    model, gpu = catalog.model_spec("Qwen/Qwen3-8B"), catalog.get_gpu("nvidia-h100-sxm-80gb")
    request = PlanRequest(context_len=8192, serving=ServingFeatures(lora=LoRAConfig()))
    served = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    plain = plan(model, gpu.framework_memory_bytes, replace(request, serving=None), gpu_id=gpu.id)
    lora = served.serving["lora"]
    assert (lora["adapter_slot_bytes"], lora["profile_activation_bytes"]) == (87_293_952, 1_572_864)
    cost = serving_budget_cost_bytes(plain, served)
    assert cost == 87_293_952 + 1_572_864 == 88_866_816
    assert cost == (served.weights_bytes_per_gpu - plain.weights_bytes_per_gpu
                    + served.overhead_bytes - plain.overhead_bytes)
    assert serving_budget_cost_bytes(plain, plain) == 0


# --- --lora-target-modules: bounded, quoted short, de-duplicated (QA stop 41) ---------------------------------
MAX_LORA_TARGET_MODULES = 64  # planner.serving.lora.MAX_TARGET_MODULES, written out for the old code


def test_thousands_of_unknown_target_modules_are_refused_in_one_short_line():
    names = tuple(f"mod_{i}" for i in range(20_000))
    with pytest.raises(ValueError) as info:
        LoRAConfig(target_modules=names).validate()
    message = str(info.value)
    assert len(message) < 600 and "20,000" in message and f"at most {MAX_LORA_TARGET_MODULES}" in message, message[:300]


def test_unknown_target_modules_quote_the_first_five_and_count_the_rest():
    names = tuple(f"mod_{i}" for i in range(40))
    with pytest.raises(ValueError) as info:
        LoRAConfig(target_modules=("q_proj", *names)).validate()
    message = str(info.value)
    assert "'mod_0', 'mod_1', 'mod_2', 'mod_3', 'mod_4' and 35 more" in message, message
    assert "'mod_5'" not in message and "q_proj, qkv_proj" in message


def test_a_long_unknown_target_module_is_quoted_short():
    with pytest.raises(ValueError) as info:
        LoRAConfig(target_modules=("z" * 10_000,)).validate()
    assert "z" * 61 not in str(info.value) and "(10,000 characters)" in str(info.value)


def test_repeated_target_modules_reach_the_sglang_flags_once():
    config = LoRAConfig(target_modules=("q_proj", "q_proj", "v_proj", "q_proj"))
    config.validate()
    assert launch_flags(config, "sglang").endswith("--lora-target-modules q_proj v_proj")


def test_the_cli_refuses_thousands_of_target_modules_in_one_short_line(capsys):
    from planner.cli import main

    argv = ["plan", "--model", "Qwen/Qwen2.5-0.5B", "--gpu", "nvidia-h100-sxm-80gb", "--engine", "sglang",
            "--enable-lora", "--lora-target-modules", *(f"mod_{i}" for i in range(20_000))]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert len(err) < 600 and f"at most {MAX_LORA_TARGET_MODULES}" in err, err[:300]
    assert main([*argv[:8], "--lora-target-modules", "q_proj", "q_proj", "--format", "json"]) == 0
    out = capsys.readouterr().out
    assert "--lora-target-modules q_proj q_proj" not in out and "--lora-target-modules q_proj" in out
