"""Pasted or uploaded config.json: same plan as the catalog, clear errors, never remote code.

Bars checked here: a pasted config of every catalog model gives exactly the
catalog model's plan; errors name the key and the expected value; a config
that names remote code imports and runs nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from model_catalog import get_gpu, get_model_entry, model_ids, model_spec
from model_catalog.config_bounds import check_sizes
from model_catalog.custom import (
    MAX_CONFIG_BYTES,
    custom_gpu,
    load_config_file,
    parse_config_json,
    read_custom_config,
    weight_dtype_hint,
)
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.units import GB, GiB, MiB

ROOT = Path(__file__).resolve().parents[1]
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
H100 = get_gpu("nvidia-h100-sxm-80gb")
REQUESTS = (
    PlanRequest(context_len=8192, batch_size=4),
    PlanRequest(context_len=32768, batch_size=2, num_gpus=4, weight_dtype="int4", kv_cache_dtype="fp8"),
)


def plan_dict(spec, request: PlanRequest) -> dict:
    """A plan as JSON-ready dict without the id (the only field a custom model may name differently)."""
    out = plan(spec, H100.framework_memory_bytes, request, gpu_id=H100.id).to_dict()
    out.pop("model_id")
    return out


def pasted(model_id: str, name: str = "pasted/model"):
    """The catalog config of ``model_id`` as a user would paste it (JSON text)."""
    entry = get_model_entry(model_id)
    text = json.dumps(entry.config, indent=2)
    return read_custom_config(parse_config_json(text), name, hf_quant_config=entry.hf_quant_config)


# --------------------------------------------------------------------------
# Bar 1: every catalog model, pasted, plans exactly like the catalog entry
# --------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", model_ids())
def test_pasted_catalog_config_gives_the_catalog_plan(model_id):
    custom = pasted(model_id)
    catalog = model_spec(model_id)
    assert replace(custom.spec, model_id=catalog.model_id, display_name=catalog.display_name) == catalog
    for request in REQUESTS:
        assert plan_dict(custom.spec, request) == plan_dict(catalog, request)
    assert custom.reading in ("family", "text_config")


def test_cli_config_flag_matches_model_flag(tmp_path, capsys):
    path = tmp_path / "Meta-Llama-3-8B" / "config.json"
    path.parent.mkdir()
    path.write_text(json.dumps(get_model_entry(LLAMA3).config))
    common = ["--gpu", "h100", "--context-len", "8192", "--batch-size", "4", "--format", "json"]
    assert main(["plan", "--config", str(path), *common]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert main(["plan", "--model", LLAMA3, *common]) == 0
    from_catalog = json.loads(capsys.readouterr().out)
    assert from_file.pop("model_id") == "Meta-Llama-3-8B"
    from_catalog.pop("model_id")
    assert (from_file.pop("catalog_id"), from_catalog.pop("catalog_id")) == (None, LLAMA3)  # a file is no entry
    # a file says how its parameters were counted (a family adapter: exact); a text-only catalog entry's JSON
    # stays the plan's own keys
    assert (from_file.pop("params_source"), from_file.pop("params_expected_error")) == ("exact", None)
    assert from_file == from_catalog


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "planner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize(("content", "fragment"), [
    (None, "cannot read the file"),
    ("{not json", "not valid JSON: Expecting property name enclosed in double quotes at line 1, column 2"),
    ("[1, 2]", "must be a JSON object"),
    ('{"model_type": "llama", "hidden_size": "big"}', "hidden_size"),
    ('{"hidden_size": 4096}', "config key 'model_type' is missing"),
    ('{"model_type": "acme", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, '
     '"vocab_size": 100}', "config key 'intermediate_size' is missing; expected a positive integer"),
])
def test_cli_bad_config_file_one_line_exit_2(tmp_path, content, fragment):
    path = tmp_path / "config.json"
    if content is not None:
        path.write_text(content)
    proc = run_cli("plan", "--config", str(path), "--gpu", "h100")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: ") and fragment in lines[0]
    assert "Traceback" not in proc.stderr


def test_cli_config_and_model_are_mutually_exclusive(tmp_path):
    proc = run_cli("plan", "--config", str(tmp_path / "c.json"), "--model", LLAMA3, "--gpu", "h100")
    assert proc.returncode == 2
    assert "not allowed with argument" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


# --------------------------------------------------------------------------
# Parsing: JSON only, at most 1 MB
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("data", "fragment"), [
    ("", "config.json is empty"),
    ("   ", "config.json is empty"),
    ('{"a": 1,}', "not valid JSON"),
    ('{"a": NaN}', "holds NaN"),
    ('"llama"', "must be a JSON object"),
    (b"\xff\xfe\x00binary", "not UTF-8"),
    ("x" * (MAX_CONFIG_BYTES + 1), f"at most {MAX_CONFIG_BYTES:,} bytes"),
    ("[" * 100_000 + "]" * 100_000, "nests too deeply"),
])
def test_parse_rejects_non_json_with_a_reason(data, fragment):
    with pytest.raises(ValueError, match=None) as info:
        parse_config_json(data)
    assert fragment in str(info.value)


def test_parse_accepts_exactly_the_limit_and_a_bom():
    body = '{"model_type": "llama"}'
    padded = body + " " * (MAX_CONFIG_BYTES - len(body))
    assert parse_config_json(padded) == {"model_type": "llama"}
    assert parse_config_json("\ufeff" + body) == {"model_type": "llama"}


def test_load_config_file_rejects_a_large_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b" " * (MAX_CONFIG_BYTES + 1))
    with pytest.raises(ValueError, match=f"at most {MAX_CONFIG_BYTES:,} bytes"):
        load_config_file(path)


# --------------------------------------------------------------------------
# Readings and error messages
# --------------------------------------------------------------------------
LLAMA3_KEYS = {
    "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
    "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 8192, "torch_dtype": "bfloat16",
}


def test_unknown_model_type_reads_standard_keys_and_says_so():
    custom = read_custom_config({"model_type": "acme_llm", **LLAMA3_KEYS}, "acme/llm-8b")
    assert custom.reading == "generic"
    assert "has no adapter here" in custom.notes[0] and "generic" in custom.notes[0]
    # Same keys as Llama-3-8B, Llama layout: the transformers count of that model.
    assert custom.spec.num_parameters == 8_030_261_248
    assert plan_dict(custom.spec, REQUESTS[0]) == plan_dict(model_spec(LLAMA3), REQUESTS[0])


def test_generic_reading_accepts_key_aliases_and_notes_them():
    raw = {"model_type": "acme_gpt", "n_embd": 1024, "n_layer": 4, "n_head": 8, "n_inner": 4096,
           "vocab_size": 32768}
    custom = read_custom_config(raw, "acme/gpt")
    assert custom.spec.hidden_size == 1024 and custom.spec.num_layers == 4
    assert any("read 'n_embd' as 'hidden_size'" in note for note in custom.notes)


def test_a_missing_context_limit_is_named_not_invented():
    """Without max_position_embeddings the generic reading took transformers' Llama default of 2,048 tokens in
    silence, and a longer context was refused for a limit the user never gave (QA round of issue 27)."""
    keys = {k: v for k, v in LLAMA3_KEYS.items() if k != "max_position_embeddings"}
    custom = read_custom_config({"model_type": "acme_llm", **keys}, "acme/llm-8b")
    assert custom.spec.max_position_embeddings == 2048
    assert any(n.startswith("no max_position_embeddings") and "2,048 tokens" in n for n in custom.notes)
    given = read_custom_config({"model_type": "acme_llm", **LLAMA3_KEYS}, "acme/llm-8b")
    assert not any(n.startswith("no max_position_embeddings") for n in given.notes)


def test_generic_moe_and_ignored_keys_are_noted():
    raw = {"model_type": "acme_moe", **LLAMA3_KEYS, "num_experts": 8, "num_experts_per_tok": 2,
           "moe_intermediate_size": 1024, "kv_lora_rank": 512}
    custom = read_custom_config(raw, "acme/moe")
    assert custom.spec.num_experts == 8 and custom.spec.num_experts_per_tok == 2
    assert any("8 experts of width 1,024" in note for note in custom.notes)
    assert any("kv_lora_rank" in note and "cannot price" in note for note in custom.notes)


def test_multimodal_wrapper_plans_its_text_model():
    raw = {"model_type": "llava", "torch_dtype": "float16", "vision_config": {"model_type": "clip_vision_model"},
           "text_config": {"model_type": "llama", **LLAMA3_KEYS}}
    raw["text_config"].pop("torch_dtype")
    custom = read_custom_config(raw, "acme/llava")
    assert custom.reading == "text_config"
    assert custom.spec.num_parameters == 8_030_261_248 and custom.spec.torch_dtype == "float16"
    assert any("vision" in note for note in custom.notes)


@pytest.mark.parametrize(("raw", "fragment"), [
    ({}, "config key 'model_type' is missing; expected a string such as \"llama\""),
    ({"model_type": 7}, "config key 'model_type' is 7"),
    ({"model_type": "t5", "is_encoder_decoder": True}, "only decoder-only"),
    ({"model_type": "acme", **LLAMA3_KEYS, "num_hidden_layers": "32"},
     "config key 'num_hidden_layers' is the text '32'; expected a layer count such as 32, a number"),
    ({"model_type": "acme", **LLAMA3_KEYS, "vocab_size": 0}, "config key 'vocab_size' is 0"),
    ({"model_type": "acme", **{k: v for k, v in LLAMA3_KEYS.items() if k != "hidden_size"}},
     "config key 'hidden_size' is missing; expected a positive integer (the model width, e.g. 4096)"),
    ({"model_type": "acme", **LLAMA3_KEYS, "tie_word_embeddings": "yes"},
     "config key 'tie_word_embeddings' is 'yes'; expected true or false"),
    ({"model_type": "acme", **LLAMA3_KEYS, "layer_types": ["full_attention"] * 31 + ["mamba"]},
     "config key 'layer_types' holds"),
    ({"model_type": "llama", **LLAMA3_KEYS, "num_attention_heads": -1}, "num_attention_heads"),
])
def test_errors_name_the_key_and_the_expected_value(raw, fragment):
    with pytest.raises(ValueError) as info:
        read_custom_config(raw, "acme/x")
    assert fragment in str(info.value)


@pytest.mark.parametrize(("config", "expected"), [
    ({"torch_dtype": "bfloat16"}, "bf16"),
    ({"torch_dtype": "float16"}, "fp16"),
    ({"dtype": "float32"}, "bf16"),
    ({"quantization_config": {"quant_method": "gptq", "bits": 4}}, "int4"),
    ({"quantization_config": {"quant_method": "awq", "bits": 4}}, "int4"),
    ({"quantization_config": {"quant_method": "fp8"}}, "fp8"),
    ({"quantization_config": {"quant_method": "mxfp4"}}, "mxfp4"),
    ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_8bit": True}}, "int8"),
    ({"quantization_config": {"quant_method": "compressed-tensors",
                              "config_groups": {"g0": {"weights": {"num_bits": 8, "type": "float"}}}}}, "fp8"),
    ({"quantization_config": {"quant_method": "hqq"}}, None),
    ({}, None),
])
def test_weight_dtype_hint(config, expected):
    assert weight_dtype_hint(config)[0] == expected


# --------------------------------------------------------------------------
# Bar 3: a config that names remote code runs nothing
# --------------------------------------------------------------------------
@pytest.fixture
def no_remote_code(monkeypatch, tmp_path):
    """Make every remote-code entry point fail loudly, and plant a module that records an import."""
    import transformers
    import transformers.dynamic_module_utils as dynamic

    def forbidden(*args, **kwargs):
        raise AssertionError("remote code loader called")

    for name in ("get_class_from_dynamic_module", "get_cached_module_file", "get_class_in_module",
                 "create_dynamic_module"):
        monkeypatch.setattr(dynamic, name, forbidden)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", forbidden)
    marker = tmp_path / "imported.txt"
    (tmp_path / "acme_evil_config.py").write_text(
        f"open({str(marker)!r}, 'w').write('imported')\nclass EvilConfig: pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield marker
    new = set(sys.modules) - before
    assert "acme_evil_config" not in new
    assert not [m for m in new if m.startswith("transformers_modules")], new
    assert not marker.exists(), "the planted remote-code module was imported"


REMOTE_CODE_CONFIGS = [
    {"model_type": "acme_evil", "auto_map": {"AutoConfig": "acme_evil_config.EvilConfig",
                                             "AutoModelForCausalLM": "acme_evil_config.EvilModel"},
     "trust_remote_code": True, **LLAMA3_KEYS},
    {"model_type": "llama", "auto_map": {"AutoConfig": "acme_evil_config.EvilConfig"}, **LLAMA3_KEYS},
    {"model_type": "llava", "auto_map": {"AutoConfig": "acme_evil_config.EvilConfig"},
     "text_config": {"model_type": "llama", "auto_map": {"AutoConfig": "acme_evil_config.EvilConfig"},
                     **LLAMA3_KEYS}},
    {"model_type": "acme_evil_config.EvilConfig", "custom_pipelines": {"x": {"impl": "acme_evil_config.P"}},
     **LLAMA3_KEYS},
]


@pytest.mark.parametrize("raw", REMOTE_CODE_CONFIGS)
def test_remote_code_is_never_imported(no_remote_code, raw):
    custom = read_custom_config(raw, "acme/evil")
    assert custom.spec.num_parameters == 8_030_261_248
    assert "auto_map" not in custom.config and "trust_remote_code" not in custom.config
    if "auto_map" in raw or "custom_pipelines" in raw:
        assert any("remote code is never loaded or run" in note for note in custom.notes)


def test_remote_code_config_through_cli_and_share_link(no_remote_code, tmp_path, capsys):
    from model_catalog.share_codec import decode_model, encode_model

    path = tmp_path / "config.json"
    path.write_text(json.dumps(REMOTE_CODE_CONFIGS[0]))
    assert main(["plan", "--config", str(path), "--gpu", "h100", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["params"] == 8_030_261_248
    custom = read_custom_config(REMOTE_CODE_CONFIGS[0], "acme/evil")
    assert decode_model(encode_model(custom)).spec == custom.spec


# --------------------------------------------------------------------------
# Custom GPU
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("memory", "unit", "expected"), [
    (24, "GiB", 24 * GiB),
    ("23.5", "GiB", 23 * GiB + GiB // 2),
    ("24", "GB", 24 * GB),
    (24576, "MiB", 24 * GiB),
    ("0.5", "MiB", MiB // 2),
])
def test_custom_gpu_memory_is_exact_integer_bytes(memory, unit, expected):
    gpu = custom_gpu("My card", memory, unit, 936, 0.44)
    assert gpu.framework_memory_bytes == expected
    assert gpu.id == "custom" and gpu.vendor == "Custom" and gpu.price_usd_per_hour == 0.44


@pytest.mark.parametrize(("args", "fragment"), [
    (("x", 24, "TB", 100), "unit 'TB' is not one of GiB, GB, MiB"),
    (("x", "abc", "GiB", 100), "is not a number"),
    (("x", -1, "GiB", 100), "must be a positive number of GiB"),
    (("x", "inf", "GiB", 100), "must be a positive number"),
    (("x", 10**9, "GiB", 100), "outside 1 byte .. 64 TiB"),
    (("x", 24, "GiB", 0), "bandwidth_gb_s"),
    (("x", 24, "GiB", float("nan")), "bandwidth_gb_s must be a finite number"),
    (("x", 24, "GiB", 100, -1.0), "price_usd_per_hour"),
    (("x" * 101, 24, "GiB", 100), "name"),
])
def test_custom_gpu_errors_name_the_field(args, fragment):
    with pytest.raises(ValueError) as info:
        custom_gpu(*args)
    assert fragment in str(info.value)


def test_custom_gpu_plans_like_a_catalog_gpu_with_the_same_memory():
    decimal_gb = str(Decimal(H100.framework_memory_bytes) / Decimal(GB))  # exact: GB is a power of ten
    gpu = custom_gpu("H100 copy", decimal_gb, "GB", 3350)
    assert gpu.framework_memory_bytes == H100.framework_memory_bytes
    spec = model_spec(LLAMA3)
    assert plan(spec, gpu.framework_memory_bytes, REQUESTS[0]).to_dict() == plan(
        spec, H100.framework_memory_bytes, REQUESTS[0]).to_dict()


def test_sizes_far_above_any_model_are_refused_at_once():
    import time

    huge = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 3_200_000, "num_attention_heads": 32,
            "vocab_size": 32000, "intermediate_size": 11008}
    start = time.monotonic()
    with pytest.raises(ValueError, match=r"'num_hidden_layers' is 3,200,000; at most 1,024"):
        read_custom_config(huge)
    assert time.monotonic() - start < 5  # refused before any model is built (it took 40 s before)
    wrapped = {"model_type": "gemma3", "text_config": {"model_type": "gemma3_text", "vocab_size": 10**9}}
    with pytest.raises(ValueError, match=r"'text_config.vocab_size' is 1,000,000,000"):
        read_custom_config(wrapped)
    # The largest catalog configs stay well inside the limits.
    for model_id in ("meta-llama/Meta-Llama-3.1-405B", "deepseek-ai/DeepSeek-V3", "Qwen/Qwen3-Next-80B-A3B-Instruct"):
        check_sizes(get_model_entry(model_id).config)


def test_a_known_family_with_missing_size_keys_says_defaults_stand_in():
    model = read_custom_config({"model_type": "llama", "hidden_size": 2048})
    assert any("does not state num_hidden_layers, num_attention_heads, intermediate_size, vocab_size" in n
               for n in model.notes)


@pytest.mark.parametrize("change,phrase", [
    ({"max_position_embeddings": -1}, "config key 'max_position_embeddings' is -1; expected the longest context"),
    ({"max_position_embeddings": 0}, "config key 'max_position_embeddings' is 0"),
    ({"num_key_value_heads": 1000}, "num_key_value_heads 1000 does not divide num_attention_heads 28"),
    ({"num_attention_heads": 7}, "num_key_value_heads 4 does not divide num_attention_heads 7"),
])
def test_impossible_geometry_is_refused_with_the_key_and_the_fix(change, phrase):
    # A new user pasted these: -1 led to "lower context_len to at most -1", 1,000 KV heads for 28 query
    # heads was planned as MHA. transformers' repeat_kv needs heads % kv_heads == 0.
    from model_catalog import get_model_entry
    from model_catalog.custom import read_custom_config

    config = {**get_model_entry("Qwen/Qwen2.5-7B").config, **change}
    with pytest.raises(ValueError, match=re.escape(phrase)):
        read_custom_config(config, "pasted/qwen")


@pytest.mark.parametrize("quantization", [{"quant_method": "weird"}, "fp8"])
def test_a_quantization_config_the_planner_cannot_read_is_a_note(quantization):
    from model_catalog import get_model_entry
    from model_catalog.custom import read_custom_config

    model = read_custom_config({**get_model_entry("Qwen/Qwen2.5-7B").config, "quantization_config": quantization},
                               "pasted/qwen")
    assert any("is not a scheme the planner reads" in note for note in model.notes)


def test_every_bad_size_of_a_paste_is_named_in_one_message():
    """QA round: a paste with ``hidden_size: "big"``, ``num_hidden_layers: -1`` and ``num_attention_heads: 0``
    named only the last; fixing a config took one round per key. All three are named at once, in key order."""
    raw = {"model_type": "llama", "hidden_size": "big", "num_hidden_layers": -1, "num_attention_heads": 0,
           "vocab_size": 32000, "intermediate_size": 11008}
    with pytest.raises(ValueError) as exc:
        read_custom_config(raw)
    text = str(exc.value)
    assert text.startswith("3 values to fix: config key 'hidden_size' is the text 'big'")
    assert text.index("'num_attention_heads' is 0") < text.index("'num_hidden_layers' is -1")


_HF_CONFIGS = Path(__file__).resolve().parent / "data" / "reference" / "hf_configs"


def _reference_config(stem: str) -> dict:
    return {k: v for k, v in json.loads((_HF_CONFIGS / f"{stem}.json").read_text()).items() if not k.startswith("_")}


@pytest.mark.parametrize("stem", ["EleutherAI__gpt-j-6b", "openai-community__gpt2", "tiiuae__falcon-7b",
                                  "tiiuae__falcon-40b"])
def test_whole_config_under_its_own_key_names_is_not_called_incomplete(stem):
    """GPT-J / GPT-2 state their sizes as n_embd, n_layer, n_head (the config class's attribute_map) and the MLP
    width as n_inner, null meaning 4 x n_embd; Falcon-7B's legacy n_layer / n_head and Falcon's ffn_hidden_size
    (absent = 4 x hidden_size): none of them leaves a size to transformers' defaults. Falcon's states no
    max_position_embeddings, so the note names that one alone (FalconConfig's default 2,048 caps the context)."""
    model = read_custom_config(_reference_config(stem), stem)
    stated = [n.split(":")[0] for n in model.notes if "does not state" in n]
    assert stated in ([], ["config.json does not state max_position_embeddings"]), model.notes


def test_config_missing_a_size_under_every_name_is_still_called_incomplete():
    """The check still names a size the config states under no name (GPT-J without n_embd)."""
    config = _reference_config("EleutherAI__gpt-j-6b")
    del config["n_embd"]
    [note] = [n for n in read_custom_config(config, "gptj-cut").notes if "does not state" in n]
    assert note.startswith("config.json does not state hidden_size:"), note


def test_cli_plan_of_gpt_j_config_has_no_defaults_warning(capsys, tmp_path):
    """`python -m planner plan --config` on GPT-J's config prints no 'defaults stand in' warning."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_reference_config("EleutherAI__gpt-j-6b")))
    main(["plan", "--config", str(path), "--gpu", "nvidia-a100-sxm-80gb"])
    printed = capsys.readouterr()
    assert "gpt" in printed.out.lower()
    assert "does not state" not in printed.out + printed.err
