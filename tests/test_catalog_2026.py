"""The 2025-26 catalog models: every id plans through the CLI, variants resolve, and each new
layer kind holds the bytes its source states (hand-checkable values in the comments)."""

from __future__ import annotations

import json
import re

import pytest

from model_catalog import get_model_entry, model_ids, model_spec, model_spec_from_config
from model_catalog.hf_config import BY_SOURCE_MODEL_TYPES, read_config
from model_catalog.model_registry import resolve_model_id
from planner.cli import main
from planner.model.dtypes import BF16, FP32
from planner.model.layers import (
    CacheDtypes,
    FullAttention,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.sparse import (
    CompressedAttention,
    IndexedAttention,
    IndexedMLAAttention,
    SharedKVSlidingAttention,
    engine_indexer_bytes,
)

BF16_CACHE = CacheDtypes(kv=BF16, state=BF16)


def _per_token(model_id: str) -> int:
    return sum(layer.bytes_per_token(BF16_CACHE) for layer in model_spec(model_id).layers)


# --- every id plans -------------------------------------------------------------------------


@pytest.mark.parametrize("model_id", model_ids())
def test_every_catalog_model_plans_as_json(model_id: str, capsys) -> None:
    assert main(["plan", "--model", model_id, "--gpu", "nvidia-h100-sxm-80gb", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model_id"] == model_id
    assert out["params"] == model_spec(model_id).num_parameters > 0


@pytest.mark.parametrize(("alias", "canonical"), [
    ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B"),
    ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Meta-Llama-3.1-70B"),
    ("meta-llama/Llama-3.1-405B-Instruct", "meta-llama/Meta-Llama-3.1-405B"),
    ("meta-llama/Meta-Llama-3-8B-Instruct", "meta-llama/Meta-Llama-3-8B"),
    ("meta-llama/Llama-3.2-3B-Instruct", "meta-llama/Llama-3.2-3B"),
    ("meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-hf"),
    ("Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-7B"),
    ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-0.5B"),
    ("Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-14B"),
    ("Qwen/Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B"),
    ("Qwen/Qwen3-30B-A3B-Instruct-2507", "Qwen/Qwen3-30B-A3B"),
    ("Qwen/Qwen3-235B-A22B-Thinking-2507", "Qwen/Qwen3-235B-A22B"),
    ("Qwen/Qwen3.6-27B", "Qwen/Qwen3.5-27B"),
    ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mistralai/Mixtral-8x7B-v0.1"),
    ("google/gemma-2-2b-it", "google/gemma-2-2b"),
    ("deepseek-ai/DeepSeek-V3-0324", "deepseek-ai/DeepSeek-V3"),
    ("moonshotai/Kimi-K2-Instruct-0905", "moonshotai/Kimi-K2-Instruct"),
    ("QWEN/qwen3-vl-8b-thinking", "Qwen/Qwen3-VL-8B-Instruct"),
])
def test_variants_resolve_to_their_architecture(alias: str, canonical: str) -> None:
    assert resolve_model_id(alias) == canonical


def test_the_thinking_variant_has_its_own_verbatim_entry() -> None:
    assert resolve_model_id("Qwen/Qwen3-Next-80B-A3B-Thinking") == "Qwen/Qwen3-Next-80B-A3B-Thinking"
    assert get_model_entry("Qwen/Qwen3-Next-80B-A3B-Thinking").confidence == "high"


# --- the new layer kinds --------------------------------------------------------------------


def test_deepseek_v32_caches_latent_plus_fp8_indexer_key() -> None:
    spec = model_spec("deepseek-ai/DeepSeek-V3.2")
    assert {type(layer) for layer in spec.layers} == {IndexedMLAAttention}
    assert engine_indexer_bytes(128) == 132  # 128 FP8 values + one fp32 scale
    # 61 layers x ((512 + 64) x 2 B latent + 132 B indexer key) = 78,324 B (DeepSeek-V3's 70,272 + 61 x 132).
    assert _per_token("deepseek-ai/DeepSeek-V3.2") == 61 * (576 * 2 + 132) == 78_324
    assert spec.layers[0].transformers_bytes_per_token(BF16_CACHE) == 576 * 2 + 128 * 2


def test_glm52_shared_indexer_layers_cache_the_latent_only() -> None:
    # indexer_types: "full" on layers 0-2 and every 4th from 6 on (the rest "shared").
    spec = model_spec("zai-org/GLM-5.2")
    modes = get_model_entry("zai-org/GLM-5.2").config["indexer_types"]
    for layer, mode in zip(spec.layers, modes):
        assert isinstance(layer, IndexedMLAAttention) is (mode == "full")
        assert isinstance(layer, MLAAttention)
    assert sum(isinstance(layer, IndexedMLAAttention) for layer in spec.layers) == modes.count("full")


def test_nemotron3_nano_pattern_is_mamba_attention_and_moe_blocks() -> None:
    # hybrid_override_pattern "MEMEM*E...": 23 M, 6 *, 23 E.
    spec = model_spec("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16")
    assert spec.layer_counts == {"recurrent": 23, "no_cache": 23, "full_attention": 6}
    assert [layer.kind for layer in spec.layers[:6]] == ["recurrent", "no_cache"] * 2 + ["recurrent", "full_attention"]
    # 6 attention layers x 2 (K, V) x 2 KV heads x 128 x 2 B.
    assert _per_token("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16") == 6 * 2 * 2 * 128 * 2 == 6_144
    state = spec.layers[0]
    assert state.ssm_state_format == FP32  # mamba_ssm_cache_dtype "float32"
    # conv (64 x 64 + 2 x 8 x 128) x 4 in bf16 + SSM 64 heads x 64 x 128 in fp32.
    assert state.bytes_per_sequence(0, BF16_CACHE) == 6_144 * 4 * 2 + 64 * 64 * 128 * 4 == 2_146_304


def test_qwen35_state_dtype_comes_from_mamba_ssm_dtype() -> None:
    spec = model_spec("Qwen/Qwen3.5-27B")
    assert spec.layer_counts == {"recurrent": 48, "full_attention": 16}
    state = next(layer for layer in spec.layers if isinstance(layer, RecurrentState))
    assert state.ssm_state_format == FP32
    # conv (2 x 16 x 128 + 48 x 128) x 4 = 40,960 elements in bf16; state 48 x 128 x 128 in fp32.
    assert state.bytes_per_sequence(0, BF16_CACHE) == 40_960 * 2 + 48 * 128 * 128 * 4
    assert _per_token("Qwen/Qwen3.5-27B") == 16 * 2 * 4 * 256 * 2 == 65_536


def test_mimo_v2_flash_slides_only_on_its_sliding_layers() -> None:
    spec = model_spec("XiaomiMiMo/MiMo-V2-Flash")
    full = [i for i, layer in enumerate(spec.layers) if type(layer) is FullAttention]
    assert full == [0, 5, 11, 17, 23, 29, 35, 41, 47]  # hybrid_layer_pattern zeros
    assert spec.layers[0] == FullAttention(num_key_value_heads=4, head_dim=192, v_head_dim=128)
    # sliding_window_size 128 -> attention over 128 previous tokens plus the query.
    assert spec.layers[1] == SlidingWindowAttention(num_key_value_heads=8, head_dim=192, v_head_dim=128,
                                                    sliding_window=129)
    # full: 4 x (192 + 128) x 2 B = 2,560 B; sliding: 8 x 320 x 2 B = 5,120 B.
    assert _per_token("XiaomiMiMo/MiMo-V2-Flash") == 9 * 2_560 + 39 * 5_120


def test_gemma4_full_layers_use_the_global_head_dim() -> None:
    spec = model_spec("google/gemma-4-26B-A4B")
    assert spec.layer_counts == {"sliding_attention": 25, "full_attention": 5}
    assert spec.layers[5] == FullAttention(num_key_value_heads=2, head_dim=512)  # global_head_dim, 2 global KV heads
    assert spec.layers[0] == SlidingWindowAttention(num_key_value_heads=8, head_dim=256, sliding_window=1024)
    assert _per_token("google/gemma-4-26B-A4B") == 5 * 2 * 2 * 512 * 2 + 25 * 2 * 8 * 256 * 2 == 225_280


def test_deepseek_v4_compressed_layers() -> None:
    spec = model_spec("deepseek-ai/DeepSeek-V4-Flash")
    kinds = [type(layer) for layer in spec.layers]
    assert kinds[:4] == [SharedKVSlidingAttention, SharedKVSlidingAttention, CompressedAttention, CompressedAttention]
    csa, hca = spec.layers[2], spec.layers[3]
    assert (csa.compress_ratio, csa.index_head_dim, hca.compress_ratio, hca.index_head_dim) == (4, 128, 128, 0)
    # One K=V head of 512: 1,024 B per sliding token; CSA ceil((1,024 + 132) / 4) = 289; HCA 1,024 / 128 = 8.
    assert [layer.bytes_per_token(BF16_CACHE) for layer in spec.layers[:4]] == [1_024, 1_024, 289, 8]
    assert _per_token("deepseek-ai/DeepSeek-V4-Flash") == 2 * 1_024 + 21 * 289 + 20 * 8
    assert csa.exact_bytes_per_sequence(1_000, BF16_CACHE) == 128 * 1_024 + 250 * 1_156


def test_minimax_m3_sparse_layers_add_an_indexer_key() -> None:
    spec = model_spec("MiniMaxAI/MiniMax-M3")
    assert sum(isinstance(layer, IndexedAttention) for layer in spec.layers) == 57  # sparse_attention_freq
    # K + V 2 x 4 x 128 x 2 B = 2,048 B, + 132 B indexer key on sparse layers.
    assert _per_token("MiniMaxAI/MiniMax-M3") == 3 * 2_048 + 57 * 2_180


def test_nemotron_nas_no_op_attention_caches_nothing() -> None:
    spec = model_spec("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    assert spec.layer_counts == {"full_attention": 49, "no_cache": 31}
    assert _per_token("nvidia/Llama-3_3-Nemotron-Super-49B-v1") == 49 * 2 * 8 * 128 * 2 == 200_704
    assert 49e9 <= spec.num_parameters <= 50e9  # "49B"


def test_step37_flat_config_reads_through_its_text_config_class() -> None:
    spec = model_spec("stepfun-ai/Step-3.7-Flash")
    assert spec.layer_counts == {"full_attention": 12, "sliding_attention": 33}
    assert spec.sliding_windows == (512,)
    assert spec.vocab_size == 128_896  # the config's, not Step3p7TextConfig's default 128,815


def test_kimi_k25_reads_its_kimi_k2_text_config() -> None:
    spec = model_spec("moonshotai/Kimi-K2.5")
    assert spec.attention_kind == "MLA"
    from planner.serving.multimodal import text_only, tower_parameters

    # the language model is Kimi-K2's; the whole spec adds MoonViT + its projector (families_multimodal)
    assert text_only(spec).num_parameters == model_spec("moonshotai/Kimi-K2-Instruct").num_parameters
    assert spec.num_parameters == text_only(spec).num_parameters + tower_parameters(spec) == 1_026_879_353_328


@pytest.mark.parametrize("model_id", [m for m in model_ids()
                                      if get_model_entry(m).config["model_type"] in BY_SOURCE_MODEL_TYPES])
def test_by_source_types_name_their_mapping(model_id: str) -> None:
    reading = read_config(get_model_entry(model_id).config)
    assert reading.by_source is BY_SOURCE_MODEL_TYPES[reading.model_type]
    assert model_spec(model_id).model_type == reading.model_type


# --- bad input: one sentence naming the field ---------------------------------------------


@pytest.mark.parametrize(("config", "fragment"), [
    ({"model_type": "qwen3_5", "text_config": {}}, "config key 'text_config' has no 'hidden_size'"),
    ({"model_type": "qwen3_5", "text_config": {"hidden_size": 64, "num_hidden_layers": 4,
                                               "layer_types": ["full_attention"]}},
     "'text_config.layer_types' lists 1 layers but 'text_config.num_hidden_layers' is 4"),
    ({"model_type": "kimi_k3", "text_config": {"model_type": "kimi_linear"}}, "config key 'text_config' of a 'kimi_k3'"),
    ({"model_type": "nemotron-nas", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 32, "block_configs": [{"attention": {"no_op": True}, "ffn": {"ffn_mult": 1.0}}]},
     "config key 'block_configs' must list one block per layer"),
])
def test_bad_configs_name_the_field(config: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=None) as error:
        model_spec_from_config(config, "x/y")
    assert fragment in str(error.value)
    assert "\n" not in str(error.value)


def test_no_cache_blocks_have_no_bytes() -> None:
    assert NoCache().bytes_per_sequence(1_000, BF16_CACHE) == 0


# --- pasted configs: what the generic fallback used to get wrong -----------------------------


def _pasted(model_id: str):
    from model_catalog.custom import parse_config_json, read_custom_config

    text = json.dumps(get_model_entry(model_id).config)  # Infinity stays a bare token, as in the repo's file
    return read_custom_config(parse_config_json(text), model_id)


def test_a_verbatim_nemotron_h_config_with_infinity_is_accepted() -> None:
    from model_catalog.custom import parse_config_json

    assert parse_config_json('{"model_type": "nemotron_h", "time_step_limit": [0.0, Infinity]}')[
        "time_step_limit"] == [0.0, float("inf")]
    custom = _pasted("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8")
    assert custom.reading == "family" and custom.spec.layer_counts["recurrent"] == 40


@pytest.mark.parametrize(("model_id", "per_token"), [
    ("deepseek-ai/DeepSeek-V3.2", 61 * (576 * 2 + 132)),  # MLA latent + FP8 indexer key
    ("zai-org/GLM-4.7-Flash", 47 * 576 * 2),  # MLA latent only (kv_lora_rank 512 + rope 64)
    ("zai-org/GLM-5", 78 * (576 * 2 + 132)),
])
def test_pasted_mla_and_indexer_configs_cache_the_latent(model_id: str, per_token: int) -> None:
    spec = _pasted(model_id).spec
    assert sum(layer.bytes_per_token(BF16_CACHE) for layer in spec.layers) == per_token


def test_pasted_nemotron3_nano_keeps_its_block_pattern() -> None:
    assert _pasted("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").spec.layer_counts == {
        "recurrent": 23, "no_cache": 23, "full_attention": 6}


def test_pasted_mimo_v2_flash_caps_only_its_sliding_layers() -> None:
    spec = _pasted("XiaomiMiMo/MiMo-V2-Flash").spec
    assert spec.layer_counts == {"full_attention": 9, "sliding_attention": 39}


def test_pasted_kimi_k25_reads_its_kimi_k2_text_config() -> None:
    custom = _pasted("moonshotai/Kimi-K2.5")
    assert custom.reading == "family" and custom.spec.attention_kind == "MLA"


def test_pasted_qwen35_keeps_its_fp32_recurrent_state() -> None:
    spec = _pasted("Qwen/Qwen3.5-27B").spec
    assert {layer.ssm_state_format for layer in spec.layers if isinstance(layer, RecurrentState)} == {FP32}


def test_generic_reading_uses_the_types_own_config_class() -> None:
    # olmo2 has no adapter here: transformers' Olmo2Config reads it (q/k norms, no sliding window).
    from model_catalog.custom import read_custom_config

    custom = read_custom_config({"model_type": "olmo2", "hidden_size": 2048, "num_hidden_layers": 16,
                                 "num_attention_heads": 16, "intermediate_size": 8192, "vocab_size": 100352}, "a/b")
    assert custom.reading == "generic" and custom.spec.layer_counts == {"full_attention": 16}
    assert any("transformers' own 'olmo2' config class" in note for note in custom.notes)
    assert any("estimate" in note and "expected error" in note for note in custom.notes)


def test_a_remote_code_only_type_is_named_with_what_to_do() -> None:
    from model_catalog.custom import read_custom_config

    with pytest.raises(ValueError) as error:
        read_custom_config({"model_type": "acme_remote", "auto_map": {"AutoConfig": "x.Y"}}, "acme/x")
    assert "model_type 'acme_remote' is not known to transformers" in str(error.value)
    assert "remote code" in str(error.value) and "config key 'hidden_size' is missing" in str(error.value)


def test_a_layer_with_attention_and_a_state_adds_both() -> None:
    from planner.model import ModelSpec
    from planner.model.kv import kv_cache_bytes_per_sequence
    from planner.model.sparse import AttentionWithState

    layer = AttentionWithState(num_key_value_heads=1, head_dim=64, conv_state_elements=1_000, ssm_state_elements=2_000)
    # 10 tokens x 2 (K, V) x 64 x 2 B + (1,000 + 2,000) x 2 B state.
    assert layer.bytes_per_sequence(10, BF16_CACHE) == 10 * 256 + 3_000 * 2 == 8_560
    spec = ModelSpec(model_id="t/hybrid", model_type="falcon_h1", layers=(layer,), params=(), hidden_size=64,
                     num_attention_heads=1, num_key_value_heads=1, head_dim=64, vocab_size=8)
    assert kv_cache_bytes_per_sequence(spec, 10, BF16_CACHE) == 8_560  # the profile keeps the state too
    assert layer.transformers_cache_bytes(10, BF16_CACHE) == (10 * 256 + 1_000 * 2 + 2_000 * 4,) * 2


def test_generic_reading_of_mamba2_and_falcon_h1_states() -> None:
    from model_catalog.custom import read_custom_config
    from planner.model.sparse import AttentionWithState

    mamba2 = read_custom_config({"model_type": "mamba2", "hidden_size": 64, "num_hidden_layers": 2, "num_heads": 8,
                                 "head_dim": 16, "state_size": 32, "n_groups": 2, "conv_kernel": 4, "expand": 2,
                                 "vocab_size": 512}, "a/m2").spec
    state = mamba2.layers[0]
    # conv (8 x 16 + 2 x 2 groups x 32) x 4 = 1,024 elements; SSM 8 heads x 16 x 32 = 4,096 elements.
    assert (state.conv_state_elements, state.ssm_state_elements) == (1_024, 4_096)
    falcon_h1 = read_custom_config({"model_type": "falcon_h1", "num_hidden_layers": 2}, "a/fh1").spec
    assert {type(layer) for layer in falcon_h1.layers} == {AttentionWithState}  # attention + Mamba2 in each layer


def test_generic_reading_of_multi_query_falcon_and_mamba1() -> None:
    from model_catalog.custom import read_custom_config

    # FalconAttention: multi_query without new_decoder_architecture keeps one KV head, whatever num_kv_heads says.
    falcon = read_custom_config({"model_type": "falcon", "hidden_size": 256, "num_hidden_layers": 2,
                                 "num_attention_heads": 4, "num_kv_heads": 4, "multi_query": True,
                                 "new_decoder_architecture": False, "vocab_size": 512}, "a/f").spec
    assert {layer.num_key_value_heads for layer in falcon.layers} == {1}
    # MambaMixer sizes its states by intermediate_size: conv 96 x 4, SSM 96 x 16 (not expand 2 x 64 = 128).
    mamba = read_custom_config({"model_type": "mamba", "hidden_size": 64, "intermediate_size": 96, "expand": 2,
                                "state_size": 16, "conv_kernel": 4, "num_hidden_layers": 2, "vocab_size": 512},
                               "a/m").spec
    assert (mamba.layers[0].conv_state_elements, mamba.layers[0].ssm_state_elements) == (384, 1_536)
    # Jamba names its MLP intermediate_size and sizes Mamba by mamba_expand x hidden = 2 x 64 = 128.
    from types import SimpleNamespace

    from model_catalog.generic import recurrent_state

    jamba = recurrent_state(SimpleNamespace(hidden_size=64, intermediate_size=96, mamba_expand=2, mamba_d_state=16,
                                            mamba_d_conv=4))
    assert (jamba.conv_state_elements, jamba.ssm_state_elements) == (512, 2_048)


# --- stated parameter counts (params_official) ----------------------------------------------


@pytest.mark.parametrize(("model_id", "low", "high"), [
    ("zai-org/GLM-5", 743.5e9, 744.5e9),  # "744B" (GLM-5 technical report)
    ("deepseek-ai/DeepSeek-V3.1", 670.5e9, 671.5e9),  # "671 billion total parameters"
    ("moonshotai/Kimi-K2-Instruct", 0.95e12, 1.05e12),  # "1 trillion total parameters"
    ("Qwen/Qwen3-Coder-480B-A35B-Instruct", 479.5e9, 480.5e9),  # repo id "480B-A35B"
    ("Qwen/Qwen3.5-397B-A17B", 396.5e9, 397.5e9),  # repo id "397B-A17B" (tower included)
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 396e9, 404e9),  # "~400B total"
])
def test_stated_totals_bracket_the_exact_count(model_id: str, low: float, high: float) -> None:
    assert get_model_entry(model_id).params_official is not None
    assert low <= model_spec(model_id).num_parameters <= high


def test_repo_id_sizes_are_the_stated_totals() -> None:
    # Where the repo id states the size ("122B-A10B"), params_official carries exactly that statement.
    sized = re.compile(r"-(\d+(?:\.\d+)?B)(?:-A(\d+(?:\.\d+)?B))?(?:-|$)")
    for model_id in model_ids():
        official = get_model_entry(model_id).params_official
        if official is None or not official.source.startswith("Hugging Face repo id"):
            continue
        match = sized.search(model_id.split("/")[1])
        assert match, model_id
        assert (official.total, official.active) == match.groups(), model_id
