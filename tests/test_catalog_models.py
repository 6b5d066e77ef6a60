"""Model catalog: entries vs the reference configs, layer patterns, KV sizes, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from model_catalog import (
    MODELS_DIR,
    get_model_entry,
    model_ids,
    model_spec,
    model_spec_from_config,
)
from model_catalog.model_registry import load_catalog, load_entry_file, resolve_model_id
from planner.model.dtypes import BF16
from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)

REFERENCE_DIR = Path(__file__).resolve().parent / "data" / "reference"
"""In-repo copies of the reference facts, each with its source (tests/data/README.md)."""
HF_CONFIGS = REFERENCE_DIR / "hf_configs"
REFERENCE_FILES = sorted(HF_CONFIGS.glob("*.json"))

BF16_CACHE = CacheDtypes(kv=BF16, state=BF16)


def _reference(path: Path) -> tuple[str, dict]:
    """(catalog id, reference dict) for an ``ORG__MODEL.json`` reference file."""
    return path.stem.replace("__", "/"), json.loads(path.read_text(encoding="utf-8"))


def _kv_bytes_per_token(model_id: str) -> int:
    return sum(layer.bytes_per_token(BF16_CACHE) for layer in model_spec(model_id).layers)


# --- (a) entries vs the reference configs ----------------------------------------------------


def test_reference_folder_is_not_empty() -> None:
    assert REFERENCE_FILES, f"no *.json in {HF_CONFIGS}"


@pytest.mark.parametrize("path", REFERENCE_FILES, ids=lambda p: p.stem)
def test_entry_matches_reference(path: Path) -> None:
    model_id, reference = _reference(path)
    entry = get_model_entry(model_id)
    assert entry.id == model_id, "every reference model is in the catalog under ORG/MODEL"
    architecture = {key: value for key, value in reference.items() if not key.startswith("_")}
    shared = architecture.keys() & entry.config.keys()
    for key in sorted(shared):
        assert entry.config[key] == architecture[key], f"{model_id}: config key {key!r} differs from {path.name}"
    # an entry may add keys the reference copy lacks (e.g. a verbatim vision_config from a second file), and
    # then names that file after the reference's own source
    assert entry.source == reference["_source"] or entry.source.startswith(reference["_source"] + "; ")
    assert entry.confidence == reference["_confidence"]
    assert entry.hf_quant_config == reference.get("_hf_quant_config"), "the repo's hf_quant_config.json, verbatim"
    if "_params_official" in reference:
        assert entry.params_official is not None
        assert entry.params_official.model_dump(exclude_none=True) == reference["_params_official"]


# --- catalog shape -------------------------------------------------------------------------


def test_catalog_size_and_ids() -> None:
    ids = model_ids()
    assert len(ids) >= 45
    assert list(ids) == sorted(ids)
    assert len(set(ids)) == len(ids)


def test_every_file_is_named_after_its_id() -> None:
    for path in MODELS_DIR.glob("*.json"):
        assert load_entry_file(path).file_stem == path.stem


def test_catalog_covers_every_kind() -> None:
    specs = [model_spec(model_id) for model_id in model_ids()]
    attention_kinds = {spec.attention_kind for spec in specs}
    assert attention_kinds == {"MHA", "GQA", "MQA", "MLA"}
    layer_kinds = {kind for spec in specs for kind in spec.layer_counts}
    assert {"full_attention", "sliding_attention", "chunked_attention", "mla", "recurrent"} <= layer_kinds
    assert any(spec.is_moe for spec in specs)
    assert any(spec.is_hybrid and spec.has_recurrent_state for spec in specs)


@pytest.mark.parametrize(
    ("model_id", "kind"),
    [
        ("meta-llama/Llama-2-7b-hf", "MHA"),
        ("openai-community/gpt2", "MHA"),
        ("CohereForAI/c4ai-command-r-v01", "MHA"),
        ("meta-llama/Meta-Llama-3-8B", "GQA"),
        ("tiiuae/falcon-7b", "MQA"),
        ("deepseek-ai/DeepSeek-V2-Lite", "MLA"),
        ("deepseek-ai/DeepSeek-V3", "MLA"),
        ("deepseek-ai/DeepSeek-R1", "MLA"),
    ],
)
def test_attention_kinds(model_id: str, kind: str) -> None:
    assert model_spec(model_id).attention_kind == kind


@pytest.mark.parametrize(
    ("model_id", "experts", "per_token"),
    [
        ("mistralai/Mixtral-8x7B-v0.1", 8, 2),
        ("Qwen/Qwen3-30B-A3B", 128, 8),
        ("deepseek-ai/DeepSeek-V3", 256, 8),
        ("openai/gpt-oss-120b", 128, 4),
        ("ai21labs/Jamba-v0.1", 16, 2),
        ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 16, 1),
        ("meta-llama/Meta-Llama-3-8B", 0, 0),
    ],
)
def test_experts(model_id: str, experts: int, per_token: int) -> None:
    spec = model_spec(model_id)
    assert (spec.num_experts, spec.num_experts_per_tok) == (experts, per_token)


# --- (c) layer patterns -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "window"),
    [("google/gemma-3-1b-it", 512), ("google/gemma-3-4b-it", 1024), ("google/gemma-3-12b-it", 1024),
     ("google/gemma-3-27b-it", 1024)],
)
def test_gemma3_five_sliding_to_one_full(model_id: str, window: int) -> None:
    layers = model_spec(model_id).layers
    for index, layer in enumerate(layers):
        if (index + 1) % 6 == 0:
            assert type(layer) is FullAttention, index
        else:
            assert layer == SlidingWindowAttention(
                num_key_value_heads=layer.num_key_value_heads, head_dim=layer.head_dim, sliding_window=window
            ), index


def test_gemma3_27b_counts() -> None:
    # 62 layers, every 6th full: layers 5, 11, ..., 59 -> 10 full, 52 sliding.
    assert model_spec("google/gemma-3-27b-it").layer_counts == {"sliding_attention": 52, "full_attention": 10}


def test_gemma2_alternates_sliding_4096() -> None:
    layers = model_spec("google/gemma-2-9b-it").layers
    assert [type(layer) for layer in layers[:4]] == [SlidingWindowAttention, FullAttention] * 2
    assert model_spec("google/gemma-2-9b-it").sliding_windows == (4096,)


@pytest.mark.parametrize("model_id", ["openai/gpt-oss-20b", "openai/gpt-oss-120b"])
def test_gpt_oss_alternates_128_window(model_id: str) -> None:
    layers = model_spec(model_id).layers
    for index, layer in enumerate(layers):
        if index % 2 == 0:
            assert isinstance(layer, SlidingWindowAttention) and layer.sliding_window == 128
        else:
            assert type(layer) is FullAttention
    assert model_spec(model_id).layer_counts["sliding_attention"] == len(layers) // 2


def test_mistral_v01_all_sliding_4096() -> None:
    spec = model_spec("mistralai/Mistral-7B-v0.1")
    assert spec.layer_counts == {"sliding_attention": 32}
    assert spec.sliding_windows == (4096,)


def test_mistral_v03_all_full() -> None:
    assert model_spec("mistralai/Mistral-7B-Instruct-v0.3").layer_counts == {"full_attention": 32}


@pytest.mark.parametrize(
    ("model_id", "window", "layers"),
    [("microsoft/Phi-3-mini-4k-instruct", 2047, 32), ("bigcode/starcoder2-15b", 4096, 40)],
)
def test_uniform_sliding_families(model_id: str, window: int, layers: int) -> None:
    spec = model_spec(model_id)
    assert spec.layer_counts == {"sliding_attention": layers}
    assert spec.sliding_windows == (window,)


@pytest.mark.parametrize("model_id", ["Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-72B-Instruct", "Qwen/Qwen2.5-0.5B"])
def test_qwen25_all_full_when_sliding_disabled(model_id: str) -> None:
    # use_sliding_window false: the sliding_window value (131072) is inactive.
    spec = model_spec(model_id)
    assert set(spec.layer_counts) == {"full_attention"}


def test_jamba_four_attention_28_recurrent() -> None:
    spec = model_spec("ai21labs/Jamba-v0.1")
    assert spec.layer_counts == {"recurrent": 28, "full_attention": 4}
    attention_at = [index for index, layer in enumerate(spec.layers) if isinstance(layer, FullAttention)]
    assert attention_at == [4, 12, 20, 28]  # attn_layer_offset 4, attn_layer_period 8
    # d_inner = 2 x 4096 = 8192; conv 8192 x 4, ssm 8192 x 16.
    assert spec.layers[0] == RecurrentState(conv_state_elements=32_768, ssm_state_elements=131_072, conv_kernel=4)
    assert spec.layers[0].bytes_per_sequence(10_000, BF16_CACHE) == 327_680


def test_llama4_chunked_8192_with_full_every_fourth() -> None:
    spec = model_spec("meta-llama/Llama-4-Scout-17B-16E-Instruct")
    for index, layer in enumerate(spec.layers):
        if (index + 1) % 4 == 0:
            assert type(layer) is FullAttention, index
        else:
            assert isinstance(layer, ChunkedLocalAttention) and layer.attention_chunk_size == 8192, index
    assert spec.layer_counts == {"chunked_attention": 36, "full_attention": 12}


def test_deepseek_v3_61_mla_layers() -> None:
    spec = model_spec("deepseek-ai/DeepSeek-V3")
    assert spec.layers == (
        MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64, num_attention_heads=128, qk_nope_head_dim=128, v_head_dim=128),
    ) * 61


def test_falcon_7b_one_kv_head() -> None:
    spec = model_spec("tiiuae/falcon-7b")
    assert spec.num_key_value_heads == 1
    assert spec.num_layers == 32
    assert spec.layers[0] == FullAttention(num_key_value_heads=1, head_dim=64)


def test_falcon_40b_grouped_kv() -> None:
    layer = model_spec("tiiuae/falcon-40b").layers[0]
    assert layer == FullAttention(num_key_value_heads=8, head_dim=64)
    # transformers' FalconAttention broadcasts K/V to all 128 query heads before caching them.
    assert layer.transformers_kv_heads == 128
    assert model_spec("tiiuae/falcon-7b").layers[0].transformers_kv_heads is None


def test_qwen3_4b_head_dim_from_config() -> None:
    # head_dim 128 from config.json, not hidden/heads = 2560/32 = 80.
    spec = model_spec("Qwen/Qwen3-4B")
    assert spec.head_dim == 128
    assert spec.layers[0] == FullAttention(num_key_value_heads=8, head_dim=128)


# --- KV bytes per token (bf16) -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        # DOMAIN.md section 3 worked values.
        ("meta-llama/Llama-2-7b-hf", 524_288),  # 32 layers x 2 x 32 heads x 128 x 2 B
        ("meta-llama/Meta-Llama-3-8B", 131_072),  # 32 x 2 x 8 x 128 x 2
        ("Qwen/Qwen2.5-7B", 57_344),  # 28 x 2 x 4 x 128 x 2
        ("deepseek-ai/DeepSeek-V3", 70_272),  # 61 x (512 + 64) x 2
    ],
)
def test_kv_bytes_per_token_seed_values(model_id: str, expected: int) -> None:
    assert _kv_bytes_per_token(model_id) == expected


def test_llama3_70b_8k_sequence_is_2_5_gib() -> None:
    # DOMAIN.md: Llama-3-70B at 8,192 tokens = 2,684,354,560 B per sequence.
    assert _kv_bytes_per_token("meta-llama/Meta-Llama-3-70B") * 8192 == 2_684_354_560


# --- lookups and (d) errors ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("alias", "model_id"),
    [
        ("gpt2", "openai-community/gpt2"),
        ("meta-llama/Llama-3.1-8B", "meta-llama/Meta-Llama-3.1-8B"),
        ("META-LLAMA/META-LLAMA-3-8B", "meta-llama/Meta-Llama-3-8B"),
    ],
)
def test_aliases_resolve(alias: str, model_id: str) -> None:
    assert get_model_entry(alias).id == model_id
    assert model_spec(alias) is model_spec(model_id)


def test_unknown_id_suggests_close_matches() -> None:
    with pytest.raises(ValueError, match=r"unknown model id 'Qwen/Qwen3-5B'; did you mean .*'Qwen/Qwen3-\d+B'") as info:
        get_model_entry("Qwen/Qwen3-5B")
    assert "python -m planner models" in str(info.value)


def test_unknown_id_without_close_match() -> None:
    with pytest.raises(ValueError, match="unknown model id 'zzzz'; no close match"):
        model_spec("zzzz")


def _valid_entry() -> dict:
    return {
        "id": "acme/tiny-llama",
        "display_name": "Tiny",
        "aliases": [],
        "source": "test fixture",
        "confidence": "high",
        "params_official": None,
        "notes": "",
        "config": {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
                   "intermediate_size": 128, "vocab_size": 100},
    }


def _write(folder: Path, entry: dict, name: str = "acme__tiny-llama.json") -> Path:
    path = folder / name
    path.write_text(json.dumps(entry), encoding="utf-8")
    return path


def test_valid_fixture_loads(tmp_path: Path) -> None:
    entry = load_entry_file(_write(tmp_path, _valid_entry()))
    assert entry.id == "acme/tiny-llama"
    catalog = load_catalog(tmp_path)
    assert list(catalog.entries) == ["acme/tiny-llama"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda e: e.pop("source"), "source"),
        (lambda e: e.update(confidence="certain"), "confidence"),
        (lambda e: e.update(surprise=1), "surprise"),
        (lambda e: e.update(id="no-slash"), "id"),
        (lambda e: e["config"].pop("model_type"), "config"),
        (lambda e: e["config"].update(_source="x"), "config"),
        (lambda e: e.update(params_official={"total": "1B"}), "params_official.quote"),
    ],
)
def test_malformed_entry_names_file_and_field(tmp_path: Path, change, field: str) -> None:
    entry = _valid_entry()
    change(entry)
    path = _write(tmp_path, entry)
    with pytest.raises(ValueError, match=rf"acme__tiny-llama\.json: .*field '{re.escape(field)}'"):
        load_entry_file(path)


def test_entry_file_name_must_match_id(tmp_path: Path) -> None:
    path = _write(tmp_path, _valid_entry(), name="acme__other.json")
    with pytest.raises(ValueError, match=r"acme__other\.json: field 'id' .*acme__tiny-llama\.json"):
        load_entry_file(path)


def test_invalid_json_names_file(tmp_path: Path) -> None:
    path = tmp_path / "acme__broken.json"
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match=r"acme__broken\.json: not valid JSON"):
        load_entry_file(path)


def test_duplicate_alias_is_rejected(tmp_path: Path) -> None:
    first = _valid_entry() | {"aliases": ["acme/shared"]}
    second = _valid_entry() | {"id": "acme/other", "aliases": ["ACME/shared"]}
    _write(tmp_path, first)
    _write(tmp_path, second, name="acme__other.json")
    with pytest.raises(ValueError, match=r"(?i)'acme/shared' is already used"):
        load_catalog(tmp_path)


# --- model_spec_from_config ------------------------------------------------------------------------


def test_spec_from_pasted_config() -> None:
    spec = model_spec_from_config(_valid_entry()["config"], "acme/tiny-llama")
    assert spec.num_layers == 2
    assert spec.head_dim == 16
    # embed 100x64 + 2 x (4 x 64x64 + 3 x 64x128 + 2 x 64) + norm 64 + lm_head 100x64
    assert spec.num_parameters == 6_400 + 2 * (16_384 + 24_576 + 128) + 64 + 6_400


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({}, "acme/x: config.json needs a 'model_type'"),
        ({"model_type": "bert"}, "acme/x: config key 'model_type' is 'bert'"),
        ({"model_type": "llama", "hidden_size": "wide"}, "acme/x: .*'hidden_size'"),
        ({"model_type": "llama", "num_hidden_layers": 0}, "acme/x: config key 'num_hidden_layers'"),
        ({"model_type": "deepseek_v3", "kv_lora_rank": None}, "acme/x: .*'kv_lora_rank'"),
    ],
)
def test_spec_from_bad_config_names_the_key(raw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        model_spec_from_config(raw, "acme/x")


def test_building_a_spec_leaves_the_raw_config_unchanged() -> None:
    # Config classes edit nested dicts in place (rope_scaling); the adapter passes copies.
    raw = json.loads(json.dumps(get_model_entry("deepseek-ai/DeepSeek-V3").config))
    before = json.dumps(raw, sort_keys=True)
    model_spec_from_config(raw, "acme/copy")
    assert json.dumps(raw, sort_keys=True) == before


def test_legacy_falcon_keys_are_read() -> None:
    # RefinedWebModel configs say n_layer / n_head; transformers 5 would ignore them.
    raw = {"model_type": "RefinedWebModel", "n_layer": 2, "n_head": 8, "hidden_size": 512,
           "multi_query": True, "vocab_size": 1000}
    spec = model_spec_from_config(raw, "acme/tiny-falcon")
    assert (spec.model_type, spec.num_layers, spec.num_attention_heads) == ("falcon", 2, 8)
    assert spec.layers[0] == FullAttention(num_key_value_heads=1, head_dim=64)


def test_stored_falcon_7b_config_stays_original() -> None:
    config = get_model_entry("tiiuae/falcon-7b").config
    assert config["model_type"] == "RefinedWebModel"
    assert config["n_layer"] == 32


DEV_ONLY_TORCH_MODULES = {Path("model_catalog") / "verify.py", Path("model_catalog") / "verify_build.py"}
"""The verifier behind `python -m planner verify` and its shrunken-copy builder (requirements-dev.txt); both
import torch inside functions only."""


def test_no_torch_in_runtime_packages() -> None:
    root = Path(__file__).resolve().parents[1]
    for folder in ("planner", "model_catalog"):
        for source in (root / folder).rglob("*.py"):
            if source.relative_to(root) in DEV_ONLY_TORCH_MODULES:
                continue
            text = source.read_text(encoding="utf-8")
            assert not re.search(r"^\s*(import|from)\s+torch\b", text, re.M), source


@pytest.mark.parametrize(("asked", "first"), [
    # The -Instruct ids are aliases now (tests/test_catalog_2026.py); an unknown decoration still ranks the base first.
    ("meta-llama/Meta-Llama-3.1-8B-Chat", "meta-llama/Meta-Llama-3.1-8B"),
    ("Qwen/Qwen2.5-7B-Chat", "Qwen/Qwen2.5-7B"),
])
def test_suggestions_put_the_same_model_without_release_decorations_first(asked, first):
    with pytest.raises(ValueError) as info:
        resolve_model_id(asked)
    assert f"did you mean '{first}'" in str(info.value)
