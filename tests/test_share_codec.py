"""Share codes for a custom model and GPU: compact, versioned, validated, never a traceback."""

from __future__ import annotations

import base64
import json
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from model_catalog import get_gpu, get_model_entry, model_ids, model_spec
from model_catalog.custom import custom_gpu, read_custom_config
from model_catalog.share_codec import (
    ALWAYS_KEPT_KEYS,
    GPU_PARAM,
    MAX_CODE_CHARS,
    MAX_JSON_BYTES,
    MODEL_PARAM,
    decode_gpu,
    decode_model,
    encode_gpu,
    encode_model,
    minimal_config,
    pack,
)
from planner.budget import PlanRequest, plan
from planner.serving.speculative import MTP_CONFIG_KEYS
from planner.units import GiB

LLAMA3 = "meta-llama/Meta-Llama-3-8B"
H100 = get_gpu("nvidia-h100-sxm-80gb")


def raw_code(payload_text: str, version: int = 1) -> str:
    """A code around arbitrary text (to forge payloads the encoder would never write)."""
    data = zlib.compress(payload_text.encode())
    return f"v{version}." + base64.urlsafe_b64encode(data).decode().rstrip("=")


def custom(model_id: str):
    entry = get_model_entry(model_id)
    return read_custom_config(entry.config, model_id, hf_quant_config=entry.hf_quant_config)


# --------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", model_ids())
def test_every_catalog_model_survives_the_link(model_id):
    model = custom(model_id)
    code = encode_model(model)
    # Per-layer lists stay: Kimi-K3's KDA / full-attention layer lists (about 1,130 characters), ModelOpt
    # checkpoints that exclude layers one by one (nvidia/GLM-5-NVFP4: about 2,200).
    assert code.startswith("v1.") and len(code) < (1200 if model.hf_quant_config is None else 2500)
    back = decode_model(code)
    assert back.spec == model.spec
    request = PlanRequest(context_len=16384, batch_size=8, num_gpus=2)
    assert plan(back.spec, H100.framework_memory_bytes, request).to_dict() == plan(
        model_spec(model_id), H100.framework_memory_bytes, request).to_dict() | {"model_id": model_id}


def test_minimal_config_keeps_only_what_the_planner_needs():
    full = {**get_model_entry(LLAMA3).config, "architectures": ["LlamaForCausalLM"], "bos_token_id": 128000,
            "eos_token_id": 128001, "initializer_range": 0.02, "transformers_version": "4.40.0",
            "rope_theta": 500000.0, "use_cache": True}
    model = read_custom_config(full, LLAMA3)
    kept = minimal_config(model)
    assert kept == {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
                    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
                    "max_position_embeddings": 8192, "torch_dtype": "bfloat16"}
    assert set(kept) - {"model_type"} <= set(ALWAYS_KEPT_KEYS)
    assert decode_model(encode_model(model)).spec == model.spec


def test_generic_and_wrapped_models_survive_the_link():
    generic = read_custom_config({"model_type": "acme_llm", "auto_map": {"AutoConfig": "x.Y"},
                                  **{k: v for k, v in get_model_entry(LLAMA3).config.items() if k != "model_type"}},
                                 "acme/llm")
    back = decode_model(encode_model(generic))
    assert back.spec == generic.spec and back.reading == "generic"
    assert any("generic" in note for note in back.notes)


def test_gpu_round_trip_and_example():
    gpu = custom_gpu("My card", "23.5", "GiB", 936.2, 0.44)
    code = encode_gpu(gpu)
    assert code.startswith("v1.") and len(code) < 120
    assert decode_gpu(code) == gpu
    assert decode_gpu(code).framework_memory_bytes == 23 * GiB + GiB // 2
    assert decode_gpu(encode_gpu(custom_gpu("No price", 80, "GB", 3350))).price_usd_per_hour is None


# --------------------------------------------------------------------------
# Damaged, tampered, forged
# --------------------------------------------------------------------------
GOOD = encode_model(custom(LLAMA3))


def flip(code: str, index: int) -> str:
    char = code[index]
    return code[:index] + ("A" if char != "A" else "B") + code[index + 1:]


@pytest.mark.parametrize(("code", "fragment"), [
    ("", "expected 'v1.'"),
    ("hello", "expected 'v1.'"),
    ("v1.abc$%", "expected 'v1.'"),
    ("v2." + GOOD[3:], "format version 2; this app reads version 1"),
    (GOOD[:-10], "cut short or altered"),
    (GOOD[:3] + GOOD[4:], "cut short or altered"),
    (flip(GOOD, len(GOOD) // 2), "cut short or altered"),
    (flip(GOOD, len(GOOD) - 2), "cut short or altered"),
    ("v1." + "A" * (MAX_CODE_CHARS + 1), "at most"),
    (raw_code("[1, 2, 3]"), "not a JSON object"),
    (raw_code("{not json"), "not valid JSON"),
    (raw_code('{"n": "x", "c": {"model_type": "llama"}, "z": 1}'), "field 'z': Extra inputs are not permitted"),
    (raw_code('{"n": 5, "c": {}}'), "field 'n'"),
    (raw_code('{"c": {}}'), "field 'n': Field required"),
    (raw_code('{"n": "x", "c": {"model_type": "llama", "hidden_size": NaN}}'), "not valid JSON"),
    (raw_code('{"n": "x", "c": {"model_type": "acme", "hidden_size": 64}}'), "cannot be planned"),
    (raw_code('{"n": "x", "c": {"model_type": "llama"}, "t": [["a", [0], 1, "linear", "Q4_K"]], "a": "llama"}'),
     "tensor row 'a' is malformed"),
    (raw_code('{"n": "x", "c": {"model_type": "llama"}, "t": [["a", [256], 1, "linear", "Q9_Z"]], "a": "llama"}'),
     "unknown ggml tensor type 'Q9_Z'"),
])
def test_bad_model_codes_are_clear_value_errors(code, fragment):
    with pytest.raises(ValueError) as info:
        decode_model(code)
    message = str(info.value)
    assert MODEL_PARAM in message and fragment in message


def test_decompression_bomb_is_refused():
    bomb = "v1." + base64.urlsafe_b64encode(zlib.compress(b" " * (MAX_JSON_BYTES * 40), 9)).decode().rstrip("=")
    assert len(bomb) < MAX_CODE_CHARS
    with pytest.raises(ValueError, match=f"expands beyond {MAX_JSON_BYTES:,} bytes"):
        decode_model(bomb)


@pytest.mark.parametrize(("payload", "fragment"), [
    ('{"n": "x", "m": "24", "u": "TB", "b": 100}', "unit 'TB'"),
    ('{"n": "x", "m": "-24", "u": "GiB", "b": 100}', "positive number"),
    ('{"n": "x", "m": "24", "u": "GiB", "b": -5}', "bandwidth_gb_s"),
    ('{"n": "x", "m": "24", "u": "GiB", "b": 1e999}', "bandwidth_gb_s"),
    ('{"n": "x", "m": "24", "u": "GiB", "b": 100, "p": -1}', "price_usd_per_hour"),
    ('{"n": "x", "m": "24", "u": "GiB"}', "field 'b': Field required"),
    ('{"n": "", "m": "24", "u": "GiB", "b": 100}', "field 'n'"),
])
def test_bad_gpu_codes_name_the_field(payload, fragment):
    with pytest.raises(ValueError) as info:
        decode_gpu(raw_code(payload))
    assert GPU_PARAM in str(info.value) and fragment in str(info.value)


def test_pack_refuses_nan():
    with pytest.raises(ValueError):
        pack({"b": float("nan")})


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_any_text_is_a_value_error_or_a_model(text):
    for decode in (decode_model, decode_gpu):
        try:
            decode(text)
        except ValueError:
            pass


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=3, max_value=len(GOOD) - 1), st.sampled_from("ABCxyz019-_"))
def test_any_single_character_change_is_caught_or_harmless(index, char):
    changed = GOOD[:index] + char + GOOD[index + 1:]
    try:
        back = decode_model(changed)
    except ValueError:
        return
    # zlib's Adler-32 lets a change through only when the bytes decode to the same payload.
    assert back.spec == decode_model(GOOD).spec


def test_payload_with_remote_code_keys_runs_nothing(monkeypatch):
    import transformers.dynamic_module_utils as dynamic

    def forbidden(*args, **kwargs):
        raise AssertionError("remote code loader called")

    monkeypatch.setattr(dynamic, "get_class_from_dynamic_module", forbidden)
    config = {**get_model_entry(LLAMA3).config, "auto_map": {"AutoConfig": "evil.Config"},
              "trust_remote_code": True}
    back = decode_model(raw_code(json.dumps({"n": "x", "c": config})))
    assert back.spec.num_parameters == 8_030_261_248
    assert "auto_map" not in back.config


@pytest.mark.parametrize("model_id", [m for m in model_ids()
                                      if any(k in get_model_entry(m).config for k in MTP_CONFIG_KEYS)])
def test_the_link_keeps_the_draft_layers_speculative_decoding_reads(model_id):
    """A pasted config's MTP layer count (``num_nextn_predict_layers`` / ``mtp_num_hidden_layers``) changes no
    spec, so the minimal link config dropped it: with ``speculative_method=mtp`` the pages read 0 draft layers
    where ``plan --config`` reads the file's (QA, stop 42). The link keeps it."""
    model = custom(model_id)
    back = decode_model(encode_model(model))
    for key in MTP_CONFIG_KEYS:
        assert back.config.get(key) == get_model_entry(model_id).config.get(key)
