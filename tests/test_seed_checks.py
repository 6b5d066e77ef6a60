"""Seed checks from the issue and DOMAIN.md, on real catalog models.

Sources: ../shared/docs/DOMAIN.md sections 3-4 (worked values); RTX 3090
framework-visible memory 23.58 GiB from shared/reference/README.md (vLLM log,
vllm-project/vllm#10517).
"""

import pytest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.model.kv import attention_variants, cache_dtypes, kv_profile
from planner.units import GiB


def test_llama3_70b_8k_sequence_is_2_5_gib_not_40_gb():
    result = plan(model_spec("meta-llama/Meta-Llama-3-70B"), 80 * GiB, PlanRequest(context_len=8192))
    assert result.kv_cache_bytes_per_sequence == 2_684_354_560
    # seeds/README.md: batch 32 is 80 GiB, not 1.3 TB
    batch = plan(model_spec("meta-llama/Meta-Llama-3-70B"), 80 * GiB, PlanRequest(context_len=8192, batch_size=32))
    assert batch.kv_cache_bytes_total == 80 * GiB


@pytest.mark.parametrize(("model_id", "per_token"), [
    ("meta-llama/Llama-2-7b-hf", 524_288),
    ("meta-llama/Meta-Llama-3-8B", 131_072),
    ("Qwen/Qwen2.5-7B", 57_344),
    ("deepseek-ai/DeepSeek-V3", 70_272),
])
def test_kv_bytes_per_token_in_bf16(model_id, per_token):
    result = plan(model_spec(model_id), 80 * GiB, PlanRequest(context_len=1, kv_cache_dtype="bf16"))
    assert result.kv_cache_bytes_per_token == per_token


def test_gqa_saving_llama2_vs_llama3_is_4x():
    l2 = plan(model_spec("meta-llama/Llama-2-7b-hf"), 80 * GiB, PlanRequest(context_len=1))
    l3 = plan(model_spec("meta-llama/Meta-Llama-3-8B"), 80 * GiB, PlanRequest(context_len=1))
    assert l2.kv_cache_bytes_per_token == 4 * l3.kv_cache_bytes_per_token


def test_rtx_3090_llama2_7b_fp16_stops_fitting_near_22_500_tokens():
    gpu = get_gpu("nvidia-rtx-3090")
    assert gpu.framework_memory_bytes == round(23.58 * GiB)
    result = plan(model_spec("meta-llama/Llama-2-7b-hf"), gpu.framework_memory_bytes,
                  PlanRequest(context_len=4096, weight_dtype="fp16"))
    # 12.55 GiB of weights (DOMAIN.md section 4)
    assert round(result.weights_bytes / GiB, 2) == 12.55
    # (23.58 GiB - 6,738,415,616 x 2 B) // 524,288 B = 22,586 tokens before overheads
    assert result.max_context_len_before_overheads == (round(23.58 * GiB) - 6_738_415_616 * 2) // 524_288 == 22_586
    assert result.max_context_len_by_memory < result.max_context_len_before_overheads
    # Llama-2 itself supports only 4,096 positions
    assert result.max_context_len == 4096 and result.max_context_len_limited_by == "model"


def test_mla_decompressed_view_is_about_70x_the_latent():
    model = model_spec("deepseek-ai/DeepSeek-V3")
    bf = cache_dtypes(model, "bf16", "bf16")
    variants = {v.name: v for v in attention_variants(model)}
    latent = kv_profile(variants["MLA"].model, bf).bytes_per_token
    decompressed = kv_profile(variants["MHA"].model, bf).bytes_per_token
    assert latent == 70_272
    assert decompressed == 61 * 128 * (192 + 128) * 2 == 4_997_120
    assert 70 < decompressed / latent < 72


def test_gemma3_sliding_layers_cap_at_window():
    model = model_spec("google/gemma-3-27b-it")
    bf = cache_dtypes(model, "bf16", "bf16")
    per_layer = 2 * 16 * 128 * 2
    counts = model.layer_counts
    assert counts == {"sliding_attention": 52, "full_attention": 10}
    seq = kv_profile(model, bf).bytes_per_sequence(32_768)
    assert seq == per_layer * (52 * 1024 + 10 * 32_768)


def test_jamba_recurrent_state_is_constant():
    model = model_spec("ai21labs/Jamba-v0.1")
    bf = cache_dtypes(model, "bf16", "bf16")
    profile = kv_profile(model, bf)
    state = 28 * 8192 * (4 + 16) * 2  # 28 Mamba layers x d_inner x (d_conv + d_state) x 2 B
    attn = 4 * 2 * 8 * 128 * 2  # 4 attention layers, 8 KV heads x 128
    assert profile.bytes_per_sequence(1000) == state + 1000 * attn
    assert profile.bytes_per_token == attn


def test_mla_latent_not_divided_by_tensor_parallel():
    model = model_spec("deepseek-ai/DeepSeek-V3")
    result = plan(model, 141 * GiB, PlanRequest(context_len=1024, num_gpus=8, weight_dtype="fp8"))
    assert result.kv_cache_bytes_per_token_per_gpu == result.kv_cache_bytes_per_token == 70_272


def test_moe_weights_count_every_expert():
    # Mixtral-8x7B: 46,702,792,704 params (transformers MixtralForCausalLM, DOMAIN.md section 2)
    result = plan(model_spec("mistralai/Mixtral-8x7B-v0.1"), 80 * GiB, PlanRequest(context_len=1))
    assert result.params == 46_702_792_704
    assert result.weights_bytes == 2 * 46_702_792_704
    assert not result.fits
