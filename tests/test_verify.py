"""The planner's numbers against transformers itself.

Three layers of checks:

* hand-checkable rules of the ``transformers`` view (:mod:`planner.engines.hf_transformers`)
  and of pre-quantized checkpoints (weight dtype ``auto``), no torch;
* the committed table (``model_catalog/verification.json``): every catalog model
  exact, every window crossed, every required family present, and its planner
  columns equal to what the planner computes today (no torch);
* a fresh ``python -m planner verify --check`` run against transformers: skipped
  with a reason when torch is not installed (CI installs it from requirements-dev.txt).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_catalog import (
    get_model_entry,
    model_ids,
    model_spec,
    verification_checks,
    verification_summary,
    verification_table,
)
from model_catalog.hf_config import BY_SOURCE_MODEL_TYPES
from model_catalog.quantization import checkpoint_formats
from model_catalog.verify import (
    DEFAULT_TABLE_PATH,
    VERIFY_DTYPES,
    prompt_lengths,
    render_markdown,
    stale_reasons,
    verification_windows,
)
from planner.budget import PlanRequest, plan, weights_label
from planner.engines.hf_transformers import (
    TransformersCacheBytes,
    differs_from_engines,
    transformers_cache_bytes,
    transformers_layer_bytes,
    transformers_layer_tokens,
    transformers_peak_bytes,
    transformers_recurrent_state_bytes,
)
from planner.model.dtypes import BF16, FP8_BLOCK128, FP16, FP32, KV_CACHE_DTYPES, WEIGHT_DTYPES
from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.params import ParamGroup, describe_weight_formats, weight_bytes, weight_bytes_by_format
from planner.units import GiB

ROOT = Path(__file__).resolve().parents[1]
BF16_CACHE = CacheDtypes(kv=BF16, state=BF16)
# One KV head of width 1 in bf16: 2 (K and V) x 1 x 2 B = 4 B per token, easy to read.
TINY_SLIDING = SlidingWindowAttention(num_key_value_heads=1, head_dim=1, sliding_window=4)
TINY_CHUNKED = ChunkedLocalAttention(num_key_value_heads=1, head_dim=1, attention_chunk_size=4)
TINY_FULL = FullAttention(num_key_value_heads=1, head_dim=1)

# --- the transformers view, by hand -------------------------------------------------------


@pytest.mark.parametrize("layer", [TINY_SLIDING, TINY_CHUNKED], ids=["sliding", "chunked"])
@pytest.mark.parametrize(
    ("num_tokens", "phase", "expected"),
    [
        (2, "prefill", (2, 2)),   # below the window: everything
        (3, "prefill", (3, 3)),   # w - 1 tokens: still everything
        (4, "prefill", (3, 4)),   # the kept view is w - 1; the prefill concatenation stays pinned
        (6, "prefill", (3, 6)),
        (3, "decode", (3, 3)),
        (4, "decode", (3, 4)),    # cat(3 kept, 1 new) = 4 pinned, view of 3
        (7, "decode", (3, 4)),
    ],
)
def test_windowed_layer_keeps_w_minus_1_and_pins_the_prefill(layer, num_tokens, phase, expected) -> None:
    assert transformers_layer_tokens(layer, num_tokens, phase) == expected


def test_full_layer_keeps_everything_in_both_phases() -> None:
    assert transformers_layer_tokens(TINY_FULL, 9, "prefill") == (9, 9)
    assert transformers_layer_tokens(TINY_FULL, 9, "decode") == (9, 9)


def test_layer_bytes_are_tokens_times_per_token_bytes() -> None:
    got = transformers_layer_bytes(TINY_SLIDING, 6, BF16_CACHE, phase="prefill")
    assert got == TransformersCacheBytes(tensor_bytes=3 * 4, memory_bytes=6 * 4)


def test_mla_latent_is_512_plus_64_per_layer() -> None:
    # DOMAIN.md: DeepSeek-V3 bf16 = 61 x 576 x 2 = 70,272 B/token.
    spec = model_spec("deepseek-ai/DeepSeek-V3")
    assert isinstance(spec.layers[0], MLAAttention)
    got = transformers_cache_bytes(spec, 1000, BF16_CACHE)
    assert got.tensor_bytes == got.memory_bytes == 70_272 * 1000


def test_recurrent_state_is_conv_in_bf16_plus_fp32_ssm_state() -> None:
    # Jamba-v0.1: d_inner 8192, d_conv 4, d_state 16 -> 8192 x 4 x 2 B + 8192 x 16 x 4 B.
    layer = RecurrentState(conv_state_elements=8192 * 4, ssm_state_elements=8192 * 16)
    assert transformers_recurrent_state_bytes(layer, BF16_CACHE) == 589_824
    bytes_ = transformers_layer_bytes(layer, 123, BF16_CACHE)
    assert bytes_.tensor_bytes == bytes_.memory_bytes == 589_824


def test_llama3_8b_at_8k_is_one_gib_in_the_transformers_view() -> None:
    spec = model_spec("meta-llama/Meta-Llama-3-8B")
    got = transformers_cache_bytes(spec, 8192, BF16_CACHE)
    assert got.tensor_bytes == got.memory_bytes == 32 * 2 * 8 * 128 * 2 * 8192 == GiB


def test_gemma3_windows_cut_the_decode_memory_but_not_the_prefill() -> None:
    spec = model_spec("google/gemma-3-27b-it")  # 52 sliding (w 1024) + 10 full layers
    per_layer = 2 * 16 * 128 * 2
    n = 32_768
    decode = transformers_cache_bytes(spec, n, BF16_CACHE, phase="decode")
    prefill = transformers_cache_bytes(spec, n, BF16_CACHE, phase="prefill")
    assert decode.memory_bytes == (10 * n + 52 * 1024) * per_layer
    assert decode.tensor_bytes == (10 * n + 52 * 1023) * per_layer
    assert prefill.memory_bytes == 62 * n * per_layer
    assert transformers_peak_bytes(spec, n, n + 100, BF16_CACHE) == prefill.memory_bytes


def test_peak_is_the_larger_of_prefill_and_decode() -> None:
    spec = model_spec("mistralai/Mistral-7B-v0.1")  # 32 sliding layers, w 4096, 4 KiB/token/layer
    per_token = 32 * 2 * 8 * 128 * 2
    assert transformers_peak_bytes(spec, 100, 9000, BF16_CACHE) == 4096 * per_token
    assert transformers_peak_bytes(spec, 6000, 9000, BF16_CACHE) == 6000 * per_token
    with pytest.raises(ValueError, match="prompt_tokens <= total_tokens"):
        transformers_peak_bytes(spec, 10, 5, BF16_CACHE)


@pytest.mark.parametrize("name", ["fp8", "int4", "q8_0"])
def test_quantized_kv_is_outside_the_view(name) -> None:
    spec = model_spec("meta-llama/Meta-Llama-3-8B")
    with pytest.raises(ValueError, match="fp32, bf16 and fp16"):
        transformers_cache_bytes(spec, 10, CacheDtypes(kv=KV_CACHE_DTYPES[name], state=BF16))


@pytest.mark.parametrize(
    ("model_id", "differs"),
    [("meta-llama/Meta-Llama-3-8B", False), ("deepseek-ai/DeepSeek-V3", False),
     ("google/gemma-2-9b-it", True), ("ai21labs/Jamba-v0.1", True), ("meta-llama/Llama-4-Scout-17B-16E-Instruct", True)],
)
def test_differs_from_engines(model_id, differs) -> None:
    assert differs_from_engines(model_spec(model_id)) is differs


def test_prompt_lengths_cross_every_window() -> None:
    assert prompt_lengths([]) == (33,)
    assert prompt_lengths([4096]) == (33, 4094, 4196)
    assert prompt_lengths([128, 8192]) == (33, 126, 228, 8190, 8292)


# --- pre-quantized checkpoints (weight dtype auto) ----------------------------------------


def test_fp8_block_scales_by_hand() -> None:
    # kv_a_proj_with_mqa of DeepSeek-V3: 576 x 7168 e4m3 + ceil(576/128) x ceil(7168/128) fp32 scales.
    assert FP8_BLOCK128.bytes_for_matrix((576, 7168)) == 576 * 7168 + 5 * 56 * 4


@pytest.mark.parametrize(
    ("model_id", "expected", "card_gib"),
    [
        # gpt-oss model card (arXiv 2508.10925), Table 1: checkpoint size 60.8 GiB and 12.8 GiB.
        ("openai/gpt-oss-120b", 65_248_815_744, 60.8),
        ("openai/gpt-oss-20b", 13_761_264_768, 12.8),
    ],
)
def test_gpt_oss_auto_weights_match_the_published_checkpoint(model_id, expected, card_gib) -> None:
    spec = model_spec(model_id)
    auto = weight_bytes(spec.params, WEIGHT_DTYPES["auto"], spec.torch_dtype)
    assert auto == expected
    assert round(auto / GiB, 1) == card_gib
    assert spec.checkpoint_quantization.startswith("mxfp4")
    # Only the routed experts are MXFP4; attention, router, embeddings and lm_head stay bf16.
    marked = {group.name for group in spec.params if group.checkpoint is not None}
    assert marked == {"layers.*.mlp.experts.gate_up_proj", "layers.*.mlp.experts.down_proj"}


def test_auto_weights_split_by_format_name_what_auto_resolved_to() -> None:
    spec = model_spec("openai/gpt-oss-120b")
    auto = WEIGHT_DTYPES["auto"]
    split = weight_bytes_by_format(spec.params, auto, spec.torch_dtype)
    assert list(split) == ["mxfp4", "bf16"]  # largest share first
    assert sum(split.values()) == weight_bytes(spec.params, auto, spec.torch_dtype) == 65_248_815_744
    # Per GPU under tensor parallelism the split still sums to the per-GPU weight bytes.
    split_tp = weight_bytes_by_format(spec.params, auto, spec.torch_dtype, 4)
    assert sum(split_tp.values()) == weight_bytes(spec.params, auto, spec.torch_dtype, 4)
    result = plan(spec, 80 * GiB, PlanRequest(context_len=4096))
    assert result.weight_dtype == "auto" and result.weight_dtype_resolved == "mxfp4 + bf16"
    assert result.weights_label == "auto → mxfp4 + bf16"
    assert weights_label(spec, "auto") == result.weights_label
    assert weights_label(spec, "bf16") == "bf16" and weights_label(spec, "int4") == "int4 + bf16"
    deepseek = model_spec("deepseek-ai/DeepSeek-V3")
    assert plan(deepseek, 141 * GiB, PlanRequest(context_len=4096, num_gpus=8)).weight_dtype_resolved == (
        "fp8_block128 + bf16")


@pytest.mark.parametrize("name", ["auto", "bf16", "fp8", "int4", "mxfp4", "fp32"])
@pytest.mark.parametrize("tp", [1, 8])
def test_split_by_format_sums_to_weight_bytes_for_every_catalog_model(name, tp) -> None:
    fmt = WEIGHT_DTYPES[name]
    for model_id in model_ids():
        spec = model_spec(model_id)
        split = weight_bytes_by_format(spec.params, fmt, spec.torch_dtype, tp)
        assert sum(split.values()) == weight_bytes(spec.params, fmt, spec.torch_dtype, tp), model_id
        assert all(n > 0 for n in split.values()), model_id


def test_describe_weight_formats_drops_negligible_shares() -> None:
    assert describe_weight_formats({"bf16": 100}) == "bf16"
    assert describe_weight_formats({"int4": 9_000, "bf16": 1_000}) == "int4 + bf16"
    # under 0.05 % of the bytes (a few norms) does not make the weights "mixed"
    assert describe_weight_formats({"fp32": 1_000_000, "bf16": 499}) == "fp32"
    assert describe_weight_formats({"fp32": 1_000_000, "bf16": 600}) == "fp32 + bf16"
    assert describe_weight_formats({}) == "none"


def test_deepseek_v3_auto_weights_are_fp8_with_block_scales() -> None:
    spec = model_spec("deepseek-ai/DeepSeek-V3")
    marked = {group.name for group in spec.params if group.checkpoint == FP8_BLOCK128}
    unmarked = {group.name for group in spec.params if group.checkpoint is None}
    assert "layers.*.mlp.experts.gate_up_proj" in marked and "layers.*.self_attn.kv_b_proj.weight" in marked
    assert {"embed_tokens.weight", "lm_head.weight", "layers.*.mlp.gate.weight", "norm.weight"} <= unmarked
    # 669,065,609,216 e4m3 weights + 163,352,928 fp32 block scales x 4 B + 1,960,795,136 bf16 params x 2 B.
    assert weight_bytes(spec.params, WEIGHT_DTYPES["auto"], spec.torch_dtype) == 673_150_552_416


def test_weight_dtypes_other_than_auto_keep_their_meaning() -> None:
    spec = model_spec("openai/gpt-oss-20b")
    plain = tuple(ParamGroup(name=g.name, shape=g.shape, count=g.count, kind=g.kind) for g in spec.params)
    for name in ("bf16", "fp8", "int4", "mxfp4"):
        fmt = WEIGHT_DTYPES[name]
        assert weight_bytes(spec.params, fmt, spec.torch_dtype) == weight_bytes(plain, fmt, spec.torch_dtype)


def test_auto_without_quantization_config_follows_torch_dtype() -> None:
    groups = (ParamGroup(name="w.weight", shape=(4, 8), kind="linear"), ParamGroup(name="n.weight", shape=(8,), kind="norm"))
    auto = WEIGHT_DTYPES["auto"]
    # float32 checkpoints are served in 16 bits (vLLM --dtype auto), 40 elements x 2 B
    assert weight_bytes(groups, auto, "float32") == 40 * 2
    assert weight_bytes(groups, auto, "float16") == 40 * 2
    assert weight_bytes(groups, auto, "bfloat16") == weight_bytes(groups, auto, None) == 40 * 2
    assert (FP32.name, FP16.name) == ("fp32", "fp16")


def test_quantization_config_exclusions_and_methods() -> None:
    groups = (
        ParamGroup(name="layers.*.self_attn.q_proj.weight", shape=(256, 256), count=2, kind="linear"),
        ParamGroup(name="layers.*.mlp.up_proj.weight", shape=(512, 256), count=2, kind="linear"),
        ParamGroup(name="lm_head.weight", shape=(1000, 256), kind="lm_head"),
    )
    marked, text = checkpoint_formats(groups, {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                               "modules_to_not_convert": ["model.layers.0.self_attn"]})
    assert [g.checkpoint is not None for g in marked] == [False, True, False]
    assert marked[1].checkpoint.bytes_for(512 * 256) == 512 * 256 * (4 * 128 + 20) // (8 * 128)
    assert "1 of 2" in text
    same, text = checkpoint_formats(groups, {"quant_method": "bitsandbytes"})
    assert same == groups and text.startswith("unsupported")
    assert checkpoint_formats(groups, None) == (groups, "")


def test_cli_plan_accepts_auto(capsys) -> None:
    from planner.cli import main

    code = main(["plan", "--model", "openai/gpt-oss-120b", "--gpu", "nvidia-h100-sxm-80gb",
                 "--weight-dtype", "auto", "--context-len", "4096", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["weights_bytes"] == 65_248_815_744 and out["weight_dtype"] == "auto"
    assert out["weight_dtype_resolved"] == "mxfp4 + bf16"


# --- the committed table -------------------------------------------------------------------

REQUIRED_FAMILIES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "gemma2", "gemma3_text", "gpt_oss",
    "deepseek_v2", "deepseek_v3", "phi3", "falcon", "gpt2", "gptj", "gpt_neox", "starcoder2", "cohere",
    "jamba", "llama4_text", "qwen3_next",
}


def test_table_covers_every_catalog_model_and_is_exact() -> None:
    rows = {row["model_id"]: row for row in verification_table()}
    assert set(rows) == set(model_ids()), "run `python -m planner verify` after changing the catalog"
    bad = {mid: row["status_text"] for mid, row in rows.items() if row["status"] not in ("exact", "by source")}
    assert not bad
    exact = {mid: row for mid, row in rows.items() if row["status"] == "exact"}
    assert all(row["params_exact"] and row["kv_exact"] for row in exact.values())
    summary = verification_summary()
    assert summary["exact"] + summary["by_source"] == summary["models"] == len(rows)
    assert summary["kv_checks_exact"] == summary["kv_checks"]


def test_by_source_rows_are_the_model_types_transformers_lacks() -> None:
    """"by source" is only for the cited table of model types without a transformers config class."""
    for row in verification_table():
        raw_type = get_model_entry(row["model_id"]).config["model_type"]
        assert (row["status"] == "by source") == (raw_type in BY_SOURCE_MODEL_TYPES), row["model_id"]


def test_table_covers_the_required_families() -> None:
    families = {row["family"] for row in verification_table()}
    assert REQUIRED_FAMILIES <= families, sorted(REQUIRED_FAMILIES - families)


def test_table_crosses_every_window() -> None:
    for row in verification_table():
        spec = model_spec(row["model_id"])
        if row["status"] == "by source" and not row["kv_checks"]:
            continue  # transformers cannot build the architecture: nothing was measured
        assert row["prompt_tokens"] == prompt_lengths(verification_windows(spec)), row["model_id"]
        tokens = {c["num_tokens"] for c in verification_checks(row["model_id"])}
        for window in verification_windows(spec):
            assert {window - 1, window, window + 1} <= tokens  # decode steps across w - 1 and w
            assert any(n > window for n in tokens)


def test_table_planner_columns_match_the_planner_today() -> None:
    """Catches a stale table on the planner side without torch."""
    from planner.serving.multimodal import is_multimodal, text_only

    for row in json.loads(DEFAULT_TABLE_PATH.read_text(encoding="utf-8"))["models"]:
        full = model_spec(row["model_id"])
        spec = text_only(full)  # the language model; multimodal rows add the whole model
        assert row["params_planner"] == spec.num_parameters, row["model_id"]
        assert row.get("full_params_planner") == (full.num_parameters if is_multimodal(full) else None), row["model_id"]
        for check in row["kv_checks"]:
            view = transformers_cache_bytes(spec, check["num_tokens"], VERIFY_DTYPES, phase=check["phase"])
            assert (view.tensor_bytes, view.memory_bytes) == (
                check["planner_tensor_bytes"], check["planner_memory_bytes"]), (row["model_id"], check)


def test_markdown_rendering_is_current() -> None:
    table = json.loads(DEFAULT_TABLE_PATH.read_text(encoding="utf-8"))
    assert DEFAULT_TABLE_PATH.with_name("VERIFICATION.md").read_text(encoding="utf-8") == render_markdown(table)


def test_stale_reasons_ignore_the_date() -> None:
    table = json.loads(DEFAULT_TABLE_PATH.read_text(encoding="utf-8"))
    assert stale_reasons({**table, "generated": "1999-01-01"}, table) == []
    changed = json.loads(json.dumps(table))
    changed["models"][0]["kv_checks"][0]["transformers_memory_bytes"] += 1
    assert stale_reasons(changed, table) == [f"row {table['models'][0]['model_id']} differs"]


# --- a fresh run against transformers -------------------------------------------------------

_HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed: `pip install -r requirements-dev.txt` "
                                          "(CI installs it) to build the multimodal models on the meta device")
@pytest.mark.parametrize("model_id", ["Qwen/Qwen3-VL-8B-Instruct", "Qwen/Qwen3.5-35B-A3B", "google/gemma-4-26B-A4B",
                                      "moonshotai/Kimi-K2.5", "nvidia/MiniMax-M3-NVFP4", "google/gemma-3-27b-it",
                                      "meta-llama/Llama-4-Scout-17B-16E-Instruct"])
def test_whole_multimodal_model_on_meta_equals_text_plus_towers(model_id) -> None:
    """transformers' AutoModelForImageTextToText on the meta device = language model + towers + projectors."""
    from model_catalog import get_model_entry
    from model_catalog.hf_config import read_config
    from model_catalog.verify import transformers_full_parameter_count
    from planner.serving.multimodal import text_only, tower_parameters

    spec = model_spec(model_id)
    whole = transformers_full_parameter_count(read_config(get_model_entry(model_id).config).full)
    assert whole == spec.num_parameters == text_only(spec).num_parameters + tower_parameters(spec)
    assert tower_parameters(spec) > 0


def test_multimodal_rows_check_the_whole_model() -> None:
    rows = {r["model_id"]: r for r in json.loads(DEFAULT_TABLE_PATH.read_text(encoding="utf-8"))["models"]}
    for model_id in ("Qwen/Qwen3-VL-8B-Instruct", "google/gemma-4-26B-A4B", "moonshotai/Kimi-K2.5"):
        row = rows[model_id]
        assert row["full_params_planner"] == row["full_params_transformers"] > row["params_planner"], model_id


@pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed: `pip install -r requirements-dev.txt` "
                                          "(CI installs it) to re-run the verification against transformers")
def test_fresh_verification_matches_the_committed_table() -> None:
    """Re-runs every model against transformers (a few minutes on 2 cores)."""
    result = subprocess.run([sys.executable, "-m", "planner", "verify", "--check"], cwd=ROOT, check=False,
                            capture_output=True, text=True, timeout=900)
    tail = "\n".join((result.stdout + result.stderr).splitlines()[-30:])
    assert result.returncode == 0, tail
