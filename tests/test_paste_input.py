"""What a pasted, uploaded or ``--config`` config.json is told (QA, stop 46): a context limit it never set, keys stated
twice, a bool or a fraction under a count, and raw exception text from transformers."""

from __future__ import annotations

import base64
import contextlib
import io
import json
import zlib

import pytest

from model_catalog import get_model_entry
from model_catalog.custom import parse_config_json, read_custom_config
from model_catalog.share_codec import decode_model
from planner.budget import PlanRequest, plan
from planner.cli import main

LLAMA3_70B = get_model_entry("meta-llama/Meta-Llama-3-70B").config
QWEN3_8B = get_model_entry("Qwen/Qwen3-8B").config
H100 = "nvidia-h100-sxm-80gb"
CLASS_NAMES = ("Error", "TypeError", "ValueError", "Strict", "Traceback", "<class")


def without(config: dict, key: str) -> dict:
    return {k: v for k, v in config.items() if k != key}


def cli(*argv: str) -> tuple[int, str, str]:
    with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


# --- 1. a context limit the config never set ----------------------------------------------------------------------

@pytest.mark.parametrize("config", [without(LLAMA3_70B, "max_position_embeddings"), {"model_type": "llama"}],
                         ids=["llama3-70b-without-the-key", "model-type-only"])
def test_the_defaults_warning_names_max_position_embeddings_and_its_default(config):
    model = read_custom_config(config, "my/llama")
    assert model.spec.max_position_embeddings == 2048  # transformers' LlamaConfig default
    (note,) = [n for n in model.notes if "defaults stand in" in n]
    assert "max_position_embeddings" in note and "2,048" in note and "add" in note, note


def test_a_config_stating_the_limit_has_no_such_warning():
    model = read_custom_config(LLAMA3_70B, "my/llama")
    assert not model.spec.max_position_embeddings_default
    assert not any("max_position_embeddings" in n for n in model.notes)


def test_the_context_limit_reason_says_the_limit_is_transformers_default_and_how_to_fix_it():
    spec = read_custom_config(without(LLAMA3_70B, "max_position_embeddings"), "my/llama").spec
    result = plan(spec, 80 << 30, PlanRequest(context_len=8192, num_gpus=4))
    (reason,) = [r for r in result.reasons if "8,192" in r]
    assert "2,048" in reason and "transformers' default" in reason and "no max_position_embeddings" in reason
    assert 'add "max_position_embeddings"' in reason and "supports" not in reason, reason
    stated = plan(read_custom_config(LLAMA3_70B, "my/llama").spec, 80 << 30, PlanRequest(context_len=16384, num_gpus=4))
    assert any("longer than the model supports (max_position_embeddings 8,192)" in r for r in stated.reasons)


def test_cli_config_without_the_limit_says_where_it_comes_from(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(without(LLAMA3_70B, "max_position_embeddings")))
    code, out, err = cli("plan", "--config", str(path), "--gpu", H100, "--num-gpus", "4", "--context-len", "8192")
    assert code == 0
    assert "max_position_embeddings" in err and "2,048" in err, err
    assert "transformers' default max_position_embeddings" in out and 'add "max_position_embeddings"' in out, out


# --- 2. keys stated twice -----------------------------------------------------------------------------------------

def test_a_key_stated_twice_is_refused_naming_it_and_both_values():
    text = json.dumps(QWEN3_8B)[:-1] + ', "num_hidden_layers": 320}'
    with pytest.raises(ValueError) as info:
        parse_config_json(text)
    message = str(info.value)
    assert "'num_hidden_layers'" in message and "36, then 320" in message and "more than once" in message
    # the same key in two objects is no repeat; the nesting limit still applies
    config = parse_config_json('{"model_type": "llama", "text_config": {"model_type": "llama"}}')
    assert config["text_config"]["model_type"] == "llama"
    with pytest.raises(ValueError, match="nests too deeply"):
        parse_config_json('{"a":' * 100_000 + "1" + "}" * 100_000)


def test_many_repeated_keys_name_five_and_count_the_rest():
    text = "{" + ", ".join(f'"k{i}": 1, "k{i}": 2' for i in range(8)) + "}"
    with pytest.raises(ValueError) as info:
        parse_config_json(text)
    message = str(info.value)
    assert all(f"'k{i}'" in message for i in range(5)) and "'k5'" not in message and "and 3 more" in message


def test_a_long_repeated_key_and_value_are_echoed_short():
    key, value = "k" * 500, "v" * 5000
    with pytest.raises(ValueError) as info:
        parse_config_json(json.dumps({"model_type": "llama"})[:-1] + f', "{key}": 1, "{key}": "{value}"}}')
    message = str(info.value)
    assert "(500 characters)" in message and "(5,000 characters)" in message and len(message) < 400


def test_cli_config_with_a_repeated_key_is_one_line_exit_2(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_8B)[:-1] + ', "num_hidden_layers": 320}')
    code, _, err = cli("plan", "--config", str(path), "--gpu", H100)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "'num_hidden_layers' (36, then 320)" in err and "Traceback" not in err


def test_cli_json_flag_with_a_repeated_key_is_refused():
    code, _, err = cli("plan", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", H100,
                       "--limit-mm-per-prompt", '{"image": 1, "image": 9}')
    assert code == 2 and "'image' (1, then 9)" in err, err


def test_a_share_code_with_a_repeated_key_is_refused():
    payload = '{"v": 1, "v": 1}'
    code = "v1." + base64.urlsafe_b64encode(zlib.compress(payload.encode())).decode().rstrip("=")
    with pytest.raises(ValueError, match="'v'"):
        decode_model(code)


# --- 3. bools and fractions under counts; transformers' refusals in plain words -----------------------------------

@pytest.mark.parametrize(("key", "value", "says"), [
    ("num_key_value_heads", True, "config key 'num_key_value_heads' is true; expected a head count such as 32, "
                                  "a whole number"),
    ("head_dim", 128.5, "config key 'head_dim' is 128.5; expected a head width such as 128, a whole number"),
    ("num_hidden_layers", False, "config key 'num_hidden_layers' is false; expected a layer count"),
])
def test_a_bool_or_fraction_under_a_count_is_refused_before_transformers(key, value, says):
    with pytest.raises(ValueError) as info:
        read_custom_config({**QWEN3_8B, key: value}, "my/qwen")
    message = str(info.value)
    assert says in message and not any(name in message for name in CLASS_NAMES), message
    nemotron = get_model_entry("nvidia/Llama-3_3-Nemotron-Super-49B-v1").config  # ffn_mult 5.25 keeps its fraction
    assert read_custom_config(nemotron, "my/nemotron").spec.num_layers == 80


@pytest.mark.parametrize(("key", "value", "expects"), [
    ("tie_word_embeddings", "yes", "true or false"),
    ("num_hidden_layers", 36.0, "a whole number"),
])
def test_a_transformers_refusal_names_the_key_and_what_it_expects_without_class_names(key, value, expects):
    with pytest.raises(ValueError) as info:
        read_custom_config({**QWEN3_8B, key: value}, "my/qwen")
    message = str(info.value)
    assert f"config key '{key}'" in message and expects in message, message
    assert not any(name in message for name in CLASS_NAMES), message
