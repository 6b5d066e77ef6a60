"""Pre-quantized checkpoints to the byte: NVFP4, FP8 (per tensor and block-scaled), MXFP8, compressed-tensors
int4, DeepSeek-V4's FP4 experts, and ModelOpt's per-layer ``hf_quant_config.json`` (hand-worked values)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from model_catalog import get_model_entry, model_spec
from model_catalog.custom import read_custom_config
from model_catalog.quantization import FP8_PER_TENSOR, MXFP8, NVFP4, W4A16_NVFP4, checkpoint_formats, normalize_module
from planner.cli import main
from planner.model.dtypes import FP8_BLOCK128, KV_CACHE_DTYPES, WEIGHT_DTYPES
from planner.model.params import ParamGroup, weight_bytes, weight_bytes_by_format

Q = ParamGroup(name="layers.*.self_attn.q_proj.weight", shape=(256, 256), count=4, kind="linear")
UP = ParamGroup(name="layers.*.mlp.experts.gate_up_proj", shape=(64, 32), count=4 * 2, kind="linear")  # 2 experts
EMBED = ParamGroup(name="embed_tokens.weight", shape=(1000, 256), kind="embedding")
LAYERS = {(Q.name, Q.shape, Q.kind): (0, 1, 2, 3), (UP.name, UP.shape, UP.kind): (0, 1, 2, 3)}


def test_nvfp4_format_by_hand() -> None:
    assert WEIGHT_DTYPES["nvfp4"] is NVFP4
    # 4-bit values + one fp8 scale per 16 = 4.5 bits, + fp32 weight_scale_2 and input_scale per tensor.
    assert NVFP4.bytes_for_matrix((7168, 2048)) == 7168 * 2048 * 9 // 16 + 8 == 8_257_544
    assert W4A16_NVFP4.bytes_for_matrix((16, 16)) == 16 * 16 * 9 // 16 + 4  # no input_scale
    assert FP8_PER_TENSOR.bytes_for_matrix((16, 16)) == 256 + 8
    assert MXFP8.bytes_for_matrix((32, 32)) == 1024 + 32  # one e8m0 byte per 32 values
    assert KV_CACHE_DTYPES["nvfp4"].bytes_for(32) == 18  # 32 x 4.5 bits


def test_fp8_block_scaled_is_a_weight_format() -> None:
    assert WEIGHT_DTYPES["fp8_block128"] is FP8_BLOCK128
    # (576, 7168): 5 x 56 blocks of 128 x 128, one fp32 scale each.
    assert FP8_BLOCK128.bytes_for_matrix((576, 7168)) == 576 * 7168 + 5 * 56 * 4


def test_module_names_are_compared_in_transformers_naming() -> None:
    assert normalize_module("language_model.model.layers.3.block_sparse_moe.experts.7.w1") == \
        "layers.3.mlp.experts.gate_proj"
    assert normalize_module("backbone.layers.4.mixer.in_proj") == "layers.4.mixer.in_proj"
    assert normalize_module("model.language_model.layers.0.linear_attn.in_proj_qkv") == "layers.0.linear_attn.in_proj_qkv"
    assert normalize_module("layers.0.ffn.experts") == "layers.0.mlp.experts"
    assert normalize_module("head") == "lm_head"
    assert normalize_module("language_model.model.layers.5.self_attn.index_q_proj") == "layers.5.self_attn.indexer.q_proj"


def test_modelopt_exclusions_are_matched_layer_by_layer() -> None:
    hf = {"quantization": {"quant_algo": "NVFP4", "group_size": 16,
                           "exclude_modules": ["lm_head", "model.layers.0.self_attn*"]}}
    groups, text = checkpoint_formats((EMBED, Q), None, hf, LAYERS)
    q_parts = {g.count: g.checkpoint for g in groups if g.name == Q.name}
    assert q_parts == {1: None, 3: NVFP4}  # layer 0 stays bf16, layers 1-3 NVFP4
    assert "modelopt NVFP4" in text
    # 1 x 256 x 256 x 2 B + 3 x (256 x 256 x 9 / 16 + 8) B, embeddings in bf16.
    assert weight_bytes(groups, WEIGHT_DTYPES["auto"], "bfloat16") == 1000 * 256 * 2 + 131_072 + 3 * 36_872


def test_without_the_layer_map_a_layer_index_is_widened() -> None:
    hf = {"quantization": {"quant_algo": "NVFP4", "exclude_modules": ["model.layers.0.self_attn*"]}}
    groups, _ = checkpoint_formats((Q,), None, hf)
    assert [g.checkpoint for g in groups] == [None]  # over-excludes, never under-counts


def test_mixed_precision_lists_layers_and_fused_experts_count_two_tensors() -> None:
    hf = {"quantization": {"quant_algo": "MIXED_PRECISION", "quantized_layers": {
        "model.layers.1.mlp.experts.3.up_proj": {"quant_algo": "W4A16_NVFP4", "group_size": 16},  # per expert
        "model.layers.2.mlp.experts": {"quant_algo": "W4A16_NVFP4", "group_size": 16},  # all experts of a layer
        **{f"model.layers.{i}.self_attn.q_proj": {"quant_algo": "FP8"} for i in (0, 1)}}}}
    groups, text = checkpoint_formats((Q, UP), None, hf, LAYERS)
    parts = {(g.name, g.checkpoint.name if g.checkpoint else None): g.count for g in groups}
    assert parts == {(Q.name, "fp8_static"): 2, (Q.name, None): 2, (UP.name, "nvfp4_w4a16"): 4, (UP.name, None): 4}
    fmt = next(g.checkpoint for g in groups if g.name == UP.name and g.checkpoint)
    # transformers' fused gate_up_proj is two checkpoint tensors (gate_proj, up_proj): two weight_scale_2.
    assert fmt.bytes_for_matrix(UP.shape) == 64 * 32 * 9 // 16 + 2 * 4
    assert text.startswith("modelopt MIXED_PRECISION")


def test_unknown_modelopt_algorithm_is_one_sentence() -> None:
    with pytest.raises(ValueError) as error:
        checkpoint_formats((Q,), None, {"quantization": {"quant_algo": "FP3_MAGIC"}}, LAYERS)
    message = str(error.value)
    assert "hf_quant_config.json quantization key 'quant_algo' is 'FP3_MAGIC'" in message and "\n" not in message
    with pytest.raises(ValueError, match="needs a 'quantization' object"):
        checkpoint_formats((Q,), None, {"producer": {"name": "modelopt"}}, LAYERS)


def test_compressed_tensors_int4_pack_quantized() -> None:
    config = {"quant_method": "compressed-tensors", "format": "pack-quantized", "config_groups": {"group_0": {
        "targets": ["Linear"], "weights": {"num_bits": 4, "type": "int", "group_size": 32, "symmetric": True}}},
        "ignore": ["lm_head", "re:.*self_attn.*"]}
    groups, _ = checkpoint_formats((Q, UP), config, None, LAYERS)
    assert [g.checkpoint is None for g in groups if g.name == Q.name] == [True]  # attention kept in bf16
    fmt = next(g.checkpoint for g in groups if g.name == UP.name)
    # int4 + one bf16 scale per 32 values + weight_shape (2 x int64) per tensor, twice for gate/up.
    assert fmt.bytes_for_matrix(UP.shape) == 64 * 32 * 9 // 16 + 2 * 16


def test_deepseek_v4_experts_ship_in_fp4() -> None:
    spec = model_spec("deepseek-ai/DeepSeek-V4-Flash")
    experts = next(g for g in spec.params if g.name.endswith("mlp.experts.gate_up_proj"))
    shared = next(g for g in spec.params if g.name.endswith("shared_experts.gate_proj.weight"))
    assert experts.checkpoint == WEIGHT_DTYPES["mxfp4"] and shared.checkpoint == FP8_BLOCK128
    # expert_dtype "fp4": e2m1 + one e8m0 scale per 32 values = 4.25 bits; (4096, 4096) -> 8,912,896 B.
    assert experts.checkpoint.bytes_for_matrix((4096, 4096)) == 4096 * 4096 * 17 // 32 == 8_912_896


@pytest.mark.parametrize(("model_id", "quantized", "kept"), [
    # hf_quant_config excludes every layer's attention projections (kv_a, kv_b, q_a, q_b); experts NVFP4.
    ("nvidia/DeepSeek-V3.1-NVFP4", "layers.*.mlp.experts.gate_up_proj", "layers.*.self_attn.q_b_proj.weight"),
    # Nemotron 3 Nano NVFP4 keeps the in/out projections of 6 of its 23 Mamba layers in bf16.
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", "layers.*.mixer.experts.up_proj", None),
    ("nvidia/Gemma-4-31B-IT-NVFP4", "layers.*.mlp.gate_proj.weight", "layers.*.self_attn.q_proj.weight"),
])
def test_catalog_nvfp4_checkpoints(model_id: str, quantized: str, kept: str | None) -> None:
    spec = model_spec(model_id)
    assert all(g.checkpoint is not None and g.checkpoint.name == "nvfp4" for g in spec.params if g.name == quantized)
    if kept:
        assert all(g.checkpoint is None for g in spec.params if g.name == kept)


def test_nemotron_nano_nvfp4_excludes_mamba_projections_layer_by_layer() -> None:
    spec = model_spec("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4")
    in_proj = {g.count: g.checkpoint for g in spec.params if g.name == "layers.*.mixer.in_proj.weight"}
    excluded = [m for m in get_model_entry(spec.model_id).hf_quant_config["quantization"]["exclude_modules"]
                if m.endswith("mixer.in_proj")]
    assert in_proj == {len(excluded): None, 23 - len(excluded): NVFP4} and len(excluded) == 6


def test_a_pasted_config_takes_its_hf_quant_config() -> None:
    entry = get_model_entry("nvidia/Qwen3-235B-A22B-NVFP4")
    plain = read_custom_config(entry.config, "a/b")
    with_file = read_custom_config(entry.config, "a/b", hf_quant_config=entry.hf_quant_config)
    assert plain.spec.checkpoint_quantization == ""  # its config.json alone says nothing about NVFP4
    assert with_file.spec == replace(model_spec(entry.id), model_id="a/b", display_name="a/b")
    assert with_file.weight_dtype_hint == "auto"


def test_cli_weight_dtype_nvfp4_and_auto_on_a_modelopt_checkpoint(capsys) -> None:
    assert main(["plan", "--model", "nvidia/Qwen3-235B-A22B-NVFP4", "--gpu", "nvidia-h100-sxm-80gb",
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spec = model_spec("nvidia/Qwen3-235B-A22B-NVFP4")
    by_format = weight_bytes_by_format(spec.params, WEIGHT_DTYPES["auto"], spec.torch_dtype)
    assert set(by_format) == {"nvfp4", "bf16"} and out["weight_dtype_resolved"] == "nvfp4 + bf16"
    assert main(["plan", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100-sxm-80gb", "--weight-dtype", "nvfp4",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["weight_dtype"] == "nvfp4"


def test_plan_config_reads_the_hf_quant_config_beside_it(tmp_path, capsys) -> None:
    entry = get_model_entry("nvidia/Qwen3-235B-A22B-NVFP4")
    folder = tmp_path / "Qwen3-235B-A22B-NVFP4"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(entry.config))
    (folder / "hf_quant_config.json").write_text(json.dumps(entry.hf_quant_config))
    assert main(["plan", "--config", str(folder / "config.json"), "--gpu", "nvidia-h100-sxm-80gb",
                 "--format", "json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    spec = model_spec(entry.id)
    assert out["weights_bytes"] == weight_bytes(spec.params, WEIGHT_DTYPES["auto"], spec.torch_dtype)
    assert "read hf_quant_config.json beside config.json" in captured.err
    (folder / "hf_quant_config.json").write_text('{"quantization": {"quant_algo": "FP3"}}')
    assert main(["plan", "--config", str(folder / "config.json"), "--gpu", "nvidia-h100-sxm-80gb"]) == 2
    assert "key 'quant_algo' is 'FP3'" in capsys.readouterr().err


# --- NVFP4 on Blackwell: swizzled scales and padded values (planner/engines/loaded.py design note 6) -------------

def test_nvfp4_padding_follows_vllms_swizzle_on_blackwell_only():
    from planner.engines.loaded import nvfp4_padding_bytes, nvfp4_swizzles
    from planner.model.dtypes import weight_dtype
    from planner.model.params import ParamGroup

    nvfp4 = weight_dtype("nvfp4")
    # Nemotron 3 Nano's routed up_proj: 1,856 rows -> 1,920 scale rows (168 scale columns, already x4)
    up = ParamGroup(name="layers.*.mixer.experts.up_proj", shape=(1856, 2688), count=1, kind="linear",
                    checkpoint=nvfp4)
    assert nvfp4_padding_bytes((up,), 1) == (1920 - 1856) * 168
    # aligned shapes pad nothing: 4,096 x 7,168 experts at TP 8 (512 rows, 448 scale columns)
    aligned = ParamGroup(name="layers.*.mlp.experts.gate_up_proj", shape=(4096, 7168), count=10, kind="linear")
    assert nvfp4_padding_bytes((aligned,), 8) == 0
    # q/k/v are one partition: 4,096 + 2 x 512 rows at TP 8 = 640 rows (5 x 128) -> no padding, though
    # k and v alone (64 rows each) would pad to 128 scale rows and 64 value rows
    qkv = tuple(ParamGroup(name=f"layers.*.self_attn.{leaf}.weight", shape=(rows, 4096), count=94, kind="linear")
                for leaf, rows in (("q_proj", 4096), ("k_proj", 512), ("v_proj", 512)))
    assert nvfp4_padding_bytes(qkv, 8) == 0
    assert nvfp4_padding_bytes(qkv[1:2], 8) > 0
    # a dense row-parallel layer pads its columns: 5,000 / 16 = 313 scale columns -> 316, 5,000 values -> 5,024
    down = ParamGroup(name="layers.*.mlp.down_proj.weight", shape=(4096, 5000), count=2, kind="linear")
    assert nvfp4_padding_bytes((down,), 1) == 2 * (4096 * (316 - 313) + 4096 * (5024 - 5000) // 2)
    assert nvfp4_swizzles("B200") and nvfp4_swizzles("RTX PRO 6000 Blackwell") and not nvfp4_swizzles("H100 SXM5 80GB")


def test_vllm_weights_of_an_nvfp4_checkpoint_on_b200_add_the_padding():
    from model_catalog.gpus import load_gpus
    from planner.engines import EngineRequest, plan_engine
    from planner.engines.loaded import loaded_weight_bytes, nvfp4_padding_bytes
    from planner.model.dtypes import weight_dtype

    model = model_spec("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4")
    auto = weight_dtype("auto")
    gpus = {g.name: g for g in load_gpus().values()}
    b200 = next(g for name, g in gpus.items() if "B200" in name)
    h100 = next(g for name, g in gpus.items() if "H100" in name)
    plain = loaded_weight_bytes(model, auto, 1)
    padded = loaded_weight_bytes(model, auto, 1, nvfp4_swizzle=True)
    nvfp4_groups = tuple(g for g in model.params if g.checkpoint is not None and g.checkpoint.name == "nvfp4")
    assert padded - plain == nvfp4_padding_bytes(nvfp4_groups, 1) > 30 * 2**20  # the routed experts' 1,856 rows
    on = {gpu.name: plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", max_model_len=8192, gpu_name=gpu.name)).limiting_rank.weights_bytes for gpu in (b200, h100)}
    # Hopper runs NVFP4 through Marlin: no padding. Both views add the same caching-allocator blocks
    # (planner/engines/weight_tensors.py; no MXFP4 experts here, so the GPU does not change them).
    from planner.engines.weight_tensors import vllm_allocator_rounding_bytes

    blocks = vllm_allocator_rounding_bytes(model, auto, 1)
    assert on[b200.name] == padded + blocks and on[h100.name] == plain + blocks
