"""A config's named values (model_type, dtype, quantization bits and groups): bounded, checked early, quoted short.

QA (stop 41): a pasted config whose ``model_type`` was 200,000 x "A" printed a 200,848-byte note on the CLI's
stderr and a 200,000-character caption on Home; ``torch_dtype`` "float128" surfaced as transformers'
``AttributeError``; a ``--config`` refused by the bounds check was refused only after transformers had been
imported (~6 s); AWQ ``bits: 3``, AWQ ``group_size: 0`` and GPTQ ``bits: 7`` were planned although vLLM refuses
them (vllm/model_executor/layers/quantization/awq.py ``AWQConfig``: 4-bit only; gptq.py ``GPTQConfig``: 2, 3,
4 or 8 bits; a group size of -1 means per channel, otherwise it divides the input width).
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_catalog import get_model_entry
from model_catalog.custom import load_config_file, read_custom_config
from model_catalog.quantization import checkpoint_formats
from planner.cli import main
from planner.model.params import ParamGroup

ROOT = Path(__file__).resolve().parents[1]
ECHO_CHARS = 60  # planner.text.ECHO_CHARS, written out so the tests also run against code without it
NAME_LIMIT = 128  # model_catalog.config_bounds.MAX_CONFIG_NAME_CHARS (the longest published name: 39)
QWEN = get_model_entry("Qwen/Qwen2.5-0.5B").config
GENERIC = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
           "vocab_size": 1000, "max_position_embeddings": 2048}
"""The standard keys of a decoder that no adapter and no transformers class reads (generic reading)."""


def qwen(**keys) -> dict:
    config = copy.deepcopy(QWEN)
    config.update(keys)
    return config


def message_of(config: dict) -> str:
    with pytest.raises(ValueError) as info:
        read_custom_config(config, "pasted/model")
    message = str(info.value)
    assert "\n" not in message and len(message) < 1_000, message
    return message


def no_long_run(text: str, char: str) -> None:
    """``text`` quotes at most :data:`ECHO_CHARS` of a value made of ``char``."""
    assert char * (ECHO_CHARS + 1) not in text, f"{len(text):,} characters: {text[:200]}"


# --------------------------------------------------------------------------
# 1. Names: at most NAME_LIMIT characters read, at most ECHO_CHARS quoted
# --------------------------------------------------------------------------
def test_a_200000_character_model_type_is_refused_on_the_cli_in_one_short_line(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "A" * 200_000, **GENERIC}))
    assert main(["plan", "--config", str(path), "--gpu", "nvidia-h100-sxm-80gb"]) == 2
    err = capsys.readouterr().err
    assert len(err.encode()) < 1_000, f"{len(err.encode()):,} bytes on stderr"
    assert "'model_type'" in err and "200,000 characters" in err and f"at most {NAME_LIMIT}" in err, err
    no_long_run(err, "A")


@pytest.mark.parametrize("key", ["model_type", "torch_dtype", "quant_method", "architectures"])
def test_a_name_over_the_limit_is_refused_naming_the_key_and_the_limit(key):
    value = "B" * (NAME_LIMIT + 1)
    config = {"model_type": "llama_like", **GENERIC}
    if key == "quant_method":
        config["quantization_config"] = {"quant_method": value}
    elif key == "architectures":
        config["architectures"] = [value]
    else:
        config[key] = value
    message = message_of(config)
    assert key in message and f"{NAME_LIMIT + 1} characters" in message and f"at most {NAME_LIMIT}" in message
    no_long_run(message, "B")


def test_a_long_model_type_under_the_limit_is_quoted_short_in_every_note(tmp_path, capsys):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "A" * 100, **GENERIC}))
    assert main(["plan", "--config", str(path), "--gpu", "nvidia-h100-sxm-80gb"]) == 0
    err = capsys.readouterr().err
    assert "note: model_type 'AAAA" in err and "(100 characters)" in err, err
    no_long_run(err, "A")


def test_a_long_quant_method_and_layer_type_are_quoted_short():
    model = read_custom_config(qwen(quantization_config={"quant_method": "Q" * 100}), "pasted/model")
    assert any("quantization_config" in note for note in model.notes)
    no_long_run(" ".join(model.notes) + model.spec.checkpoint_quantization, "Q")
    layer_types = ["full_attention"] * QWEN["num_hidden_layers"]
    layer_types[1] = "X" * 100
    message = message_of(qwen(layer_types=layer_types))
    assert "layer_types" in message
    no_long_run(message, "X")


# --------------------------------------------------------------------------
# 2. torch_dtype / dtype
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("where", "key", "value"), [
    ("", "torch_dtype", "float128"), ("", "torch_dtype", "banana"), ("", "dtype", "float128"),
    ("", "dtype", "bf16x"), ("text_config.", "torch_dtype", "float128"),
])
def test_a_dtype_the_planner_cannot_read_names_the_key_and_the_allowed_values(where, key, value):
    if where:
        config = copy.deepcopy(get_model_entry("Qwen/Qwen3-VL-8B-Instruct").config)
        config["text_config"][key] = value
    else:
        config = qwen(**{key: value})
        config.pop("torch_dtype" if key == "dtype" else "dtype", None)
    message = message_of(config)
    assert f"'{where}{key}' is '{value}'" in message, message
    assert "bfloat16, float16 or float32" in message and "AttributeError" not in message, message


def test_the_dtypes_hf_configs_use_still_plan():
    for value in ("bfloat16", "float16", "float32"):
        assert read_custom_config(qwen(torch_dtype=value), "q").spec.torch_dtype == value
        config = qwen(dtype=value)
        config.pop("torch_dtype")
        assert read_custom_config(config, "q").spec.torch_dtype == value
    for value in ("half", "float", "float64", "float8_e4m3fn"):  # torch's names, which transformers resolves
        read_custom_config(qwen(torch_dtype=value), "q")  # planned before the check: still planned
    assert "bfloat16, float16 or float32" in message_of(qwen(torch_dtype="fp16"))


# --------------------------------------------------------------------------
# 3. The cheap checks run before transformers is imported
# --------------------------------------------------------------------------
def test_configs_refused_by_the_cheap_checks_never_import_transformers(tmp_path):
    bad = {
        "vocab": qwen(vocab_size=10**12),
        "name": {"model_type": "A" * 1000, **GENERIC},
        "dtype": qwen(torch_dtype="float128"),
        "awq": qwen(quantization_config={"quant_method": "awq", "bits": 3, "group_size": 128, "zero_point": True}),
    }
    for name, config in bad.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(config))
    script = (
        "import json, sys\n"
        "from model_catalog.custom import load_config_file\n"
        "messages = []\n"
        f"for name in {sorted(bad)!r}:\n"
        "    try:\n"
        f"        load_config_file({str(tmp_path)!r} + '/' + name + '.json')\n"
        "    except ValueError as exc:\n"
        "        messages.append(str(exc))\n"
        "print(json.dumps({'transformers': 'transformers' in sys.modules, 'messages': messages}))\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["messages"]) == len(bad), out
    assert out["transformers"] is False, out["messages"]


# --------------------------------------------------------------------------
# 4. quantization_config values vLLM refuses
# --------------------------------------------------------------------------
AWQ = {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}
GPTQ = {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}


@pytest.mark.parametrize(("quant", "fragments"), [
    ({**AWQ, "bits": 3}, ("'quantization_config.bits' is 3", "AWQ", "4-bit")),
    ({"quant_method": "awq", "w_bit": 8, "q_group_size": 128, "zero_point": True},
     ("'quantization_config.w_bit' is 8", "AWQ", "4-bit")),
    ({**AWQ, "group_size": 0}, ("'quantization_config.group_size' is 0", "-1", "positive")),
    ({**GPTQ, "bits": 7}, ("'quantization_config.bits' is 7", "GPTQ", "2, 3, 4 or 8")),
    ({**GPTQ, "group_size": 0}, ("'quantization_config.group_size' is 0", "-1", "positive")),
])
def test_quantization_values_vllm_refuses_are_refused(quant, fragments):
    message = message_of(qwen(quantization_config=quant))
    for fragment in fragments:
        assert fragment in message, message
    groups = (ParamGroup(name="layers.*.self_attn.q_proj.weight", shape=(896, 896), count=24, kind="linear"),)
    with pytest.raises(ValueError, match="quantization_config"):
        checkpoint_formats(groups, quant)  # the catalog's and the Hub's path


def test_the_quantization_values_vllm_accepts_still_plan():
    for quant, name in (({**AWQ}, "awq-int4-g128"), ({**AWQ, "group_size": -1}, "awq-int4"),
                        ({**GPTQ, "bits": 8, "group_size": -1}, "gptq-int8"), ({**GPTQ, "bits": 3}, "gptq-int3-g128"),
                        ({**GPTQ, "bits": 2, "group_size": 64}, "gptq-int2-g64")):
        spec = read_custom_config(qwen(quantization_config=quant), "q").spec
        assert name in {g.checkpoint.name for g in spec.params if g.checkpoint is not None}, name
    assert "2, 3, 4 or 8" in message_of(qwen(quantization_config={**GPTQ, "bits": 5}))


def test_load_config_file_names_the_file_and_the_quantization_key(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(qwen(quantization_config={**GPTQ, "bits": 7})))
    with pytest.raises(ValueError, match=r"config\.json: .*'quantization_config\.bits' is 7"):
        load_config_file(path)


def test_thousands_of_bad_values_are_counted_not_each_quoted():
    message = message_of({"model_type": "llama_like", **GENERIC, "mrope_section": ["x"] * 4_000})
    assert "4,000 values to fix" in message and "more" in message, message[:300]
