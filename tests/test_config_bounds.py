"""Bounds on every number, list and nesting level of a config, wherever it enters.

A pasted config.json, an upload, a Hub fetch, a share link and the CLI's ``--config`` all reach
:func:`model_catalog.custom.read_custom_config`, which walks the whole config tree first
(:func:`model_catalog.config_bounds.check_sizes`): every tower (``vision_config``, ``audio_config``, a draft's
config, any future one) gets the text model's bounds. Before these bounds a 676-character share link
with ``vision_config.depth`` 10^9 cost 84 s of CPU and 2.6 GB before a MemoryError, patch size 0 and
10^2000-wide towers raised ZeroDivisionError / OverflowError tracebacks, and a negative or 10^15-layer
tower was planned as if real. Each case here must be a one-line ValueError naming the dotted key and
the limit; none is timed (a regression shows as a hang or a MemoryError).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from model_catalog import get_model_entry, model_ids
from model_catalog.config_bounds import check_sizes
from model_catalog.custom import load_config_file, parse_config_json, read_custom_config
from model_catalog.share_codec import decode_model, pack
from planner.cli import main
from planner.engines.weight_tensors import vllm_weight_tensors
from planner.model.dtypes import weight_dtype
from planner.model.params import ParamGroup
from planner.serving.multimodal import vision_from_config
from planner.serving.speculative import SpeculativeConfig, mtp_layers_from_config
from tests.factories import dense_model

# The limits' values, written out so that these tests also run (and fail) against code without the bounds.
MAX_LAYER_SEQUENCE = 1_088  # model_catalog.config_bounds.MAX_LAYER_SEQUENCE: 1,024 layers + 64 MTP layers
MAX_LIST_ITEMS = 4_096  # model_catalog.config_bounds.MAX_LIST_ITEMS
MAX_MTP_LAYERS = 64  # planner.serving.speculative.MAX_MTP_LAYERS
MAX_WEIGHT_TENSORS = 1_048_576  # planner.engines.weight_tensors.MAX_WEIGHT_TENSORS

ROOT = Path(__file__).resolve().parents[1]
QWEN3_VL_8B = "Qwen/Qwen3-VL-8B-Instruct"
KIMI_K25 = "moonshotai/Kimi-K2.5"


def qwen3_vl(**vision) -> dict:
    """Qwen3-VL-8B-Instruct's catalog config with ``vision_config`` keys replaced."""
    config = copy.deepcopy(get_model_entry(QWEN3_VL_8B).config)
    config["vision_config"].update(vision)
    return config


def with_text(config: dict, **text) -> dict:
    out = copy.deepcopy(config)
    out["text_config"].update(text)
    return out


def refused(config, *fragments: str) -> str:
    """The ValueError message of reading ``config``; asserts it holds every fragment and is one line."""
    with pytest.raises(ValueError) as info:
        read_custom_config(config, "pasted/model")
    message = str(info.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message
    return message


# --------------------------------------------------------------------------
# The reported configs
# --------------------------------------------------------------------------
def test_a_billion_vision_blocks_are_refused_from_a_paste_a_file_and_a_share_link(tmp_path):
    config = qwen3_vl(depth=10**9)
    expected = "config key 'vision_config.depth' is 1,000,000,000; at most 1,024 is accepted"
    refused(config, expected)
    refused(parse_config_json(json.dumps(config)), expected)  # the paste / upload / Hub text path
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(ValueError, match=expected):
        load_config_file(path)  # the CLI's --config
    code = pack({"n": "Qwen3-VL-8B", "c": config})
    with pytest.raises(ValueError, match=expected):
        decode_model(code)  # the share link (custom_model=v1....)


@pytest.mark.parametrize(("vision", "fragments"), [
    ({"depth": -1}, ("'vision_config.depth' is -1", "at least 1")),
    ({"depth": 0}, ("'vision_config.depth' is 0", "at least 1")),
    ({"depth": 10**15}, ("'vision_config.depth' is 1,000,000,000,000,000; at most 1,024",)),
    ({"hidden_size": 10**2000}, ("'vision_config.hidden_size' is a number of 2,001 digits; at most 262,144",)),
    ({"intermediate_size": -4304}, ("'vision_config.intermediate_size' is -4,304", "at least 1")),
    ({"patch_size": 0}, ("'vision_config.patch_size' is 0", "at least 1")),
    ({"patch_size": 10**6}, ("'vision_config.patch_size' is 1,000,000; at most 256",)),
    ({"spatial_merge_size": 0}, ("'vision_config.spatial_merge_size' is 0",)),
    ({"temporal_patch_size": 10**40}, ("'vision_config.temporal_patch_size' is a number of 41 digits; at most 64",)),
    ({"num_heads": 0}, ("'vision_config.num_heads' is 0",)),
    ({"out_hidden_size": 10**12}, ("'vision_config.out_hidden_size' is 1,000,000,000,000; at most 262,144",)),
    ({"num_position_embeddings": 10**9}, ("'vision_config.num_position_embeddings' is 1,000,000,000",)),
    ({"deepstack_visual_indexes": list(range(5000))},
     ("'vision_config.deepstack_visual_indexes' lists 5,000 entries", f"at most {MAX_LAYER_SEQUENCE:,}")),
    ({"deepstack_visual_indexes": [8, 10**9]}, ("'vision_config.deepstack_visual_indexes[1]' is 1,000,000,000",)),
])
def test_nonsense_vision_sizes_are_refused_with_the_key_and_the_limit(vision, fragments):
    refused(qwen3_vl(**vision), "config key ", *fragments)


def test_a_kimi_merge_kernel_of_a_thousand_digits_is_refused():
    config = copy.deepcopy(get_model_entry(KIMI_K25).config)
    config["vision_config"]["merge_kernel_size"] = [10**1000, 2]
    refused(config, "config key 'vision_config.merge_kernel_size[0]' is a number of 1,001 digits; at most 64")
    config["vision_config"]["merge_kernel_size"] = [2, 0]
    refused(config, "config key 'vision_config.merge_kernel_size[1]' is 0")
    config["vision_config"]["vt_num_hidden_layers"] = 10**9
    config["vision_config"]["merge_kernel_size"] = [2, 2]
    refused(config, "config key 'vision_config.vt_num_hidden_layers' is 1,000,000,000; at most 1,024")


def test_a_four_thousand_digit_context_is_refused_with_its_key():
    digits = "9" * 4000
    text = json.dumps(qwen3_vl()).replace('"max_position_embeddings": 262144', f'"max_position_embeddings": {digits}')
    assert digits in text
    refused(parse_config_json(text),
            "config key 'text_config.max_position_embeddings' is a number of 4,000 digits; at most 134,217,728")


def test_a_number_too_long_to_convert_is_a_clear_parse_error():
    with pytest.raises(ValueError, match="config.json holds a whole number of 5,000 digits") as info:
        parse_config_json('{"model_type": "llama", "hidden_size": ' + "7" * 5000 + "}")
    assert len(str(info.value)) < 300  # the number is not echoed


@pytest.mark.parametrize("text", ['"rope_theta": 1e999999', '"rope_theta": -1e999', '"rope_theta": Infinity'])
def test_an_infinite_float_is_refused(text):
    config = json.dumps(qwen3_vl())
    pasted = parse_config_json(config[:-1] + ", " + text + "}")
    refused(pasted, "config key 'rope_theta' is", "inf", "expected a finite number")


def test_nan_and_huge_floats_are_refused_anywhere():
    refused(with_text(qwen3_vl(), rope_theta=float("nan")), "'text_config.rope_theta' is nan")
    refused(qwen3_vl(initializer_range=1e300), "'vision_config.initializer_range' is 1e+300",
            "below 10^18 in magnitude")


def test_huge_numbers_under_unbounded_keys_are_refused_too():
    config = {**qwen3_vl(), "image_token_id": 10**18}
    refused(config, "config key 'image_token_id' is 1,000,000,000,000,000,000; numbers in a model config stay "
                    "below 10^18")
    refused({**qwen3_vl(), "some_future_key": {"deep": [1, -(10**50)]}},
            "'some_future_key.deep[1]' is a number of 51 digits")


def test_a_mamba_time_step_limit_may_be_infinite():
    nemotron = get_model_entry("nvidia/Nemotron-H-56B-Base-8K").config
    for limit in ([0.0, float("inf")], [0.0, 1e308]):
        check_sizes({**nemotron, "time_step_limit": limit})


# --------------------------------------------------------------------------
# Lists, patterns, nesting and unnamed towers
# --------------------------------------------------------------------------
def test_over_long_lists_are_refused():
    refused(with_text(qwen3_vl(), layer_types=["full_attention"] * 100_000),
            "'text_config.layer_types' lists 100,000 entries", f"at most {MAX_LAYER_SEQUENCE:,}")
    refused(with_text(qwen3_vl(), rope_scaling={"mrope_section": [24] * 10_000}),
            "'text_config.rope_scaling.mrope_section' lists 10,000 entries", f"at most {MAX_LIST_ITEMS:,}")
    refused({**qwen3_vl(), "eos_token_id": list(range(MAX_LIST_ITEMS + 1))}, "'eos_token_id' lists 4,097")


def test_quantization_module_lists_may_be_long():
    modules = [f"model.layers.{i}.mlp.experts.{j}.down_proj" for i in range(60) for j in range(200)]
    check_sizes({"model_type": "llama", "quantization_config": {"quant_method": "fp8", "ignore": modules}})
    check_sizes({"quantization": {"exclude_modules": modules}}, module_lists=True)


def test_a_layer_pattern_string_is_bounded():
    nemotron = copy.deepcopy(get_model_entry("nvidia/Nemotron-H-56B-Base-8K").config)
    nemotron["hybrid_override_pattern"] = "M" * 4_000_000
    refused(nemotron, "config key 'hybrid_override_pattern' is 4,000,000 characters long",
            f"at most {MAX_LAYER_SEQUENCE:,}")


def test_deep_nesting_is_refused_without_a_recursion_error():
    deep: dict = {"x": 1}
    for _ in range(900):
        deep = {"a": deep}
    refused({**qwen3_vl(), "extra": deep}, "nests 32 levels deep")
    listed: list = [1]
    for _ in range(900):
        listed = [listed]
    refused({**qwen3_vl(), "extra": listed}, "nests 32 levels deep")


@pytest.mark.parametrize("tower", ["audio_config", "speculative_config", "future_tower"])
def test_any_sub_config_gets_the_text_model_bounds(tower):
    bad = {"model_type": "whatever", "num_hidden_layers": 10**6, "hidden_size": 4096}
    refused({**qwen3_vl(), tower: bad}, f"config key '{tower}.num_hidden_layers' is 1,000,000; at most 1,024")
    refused({**qwen3_vl(), tower: {"draft": {**bad, "num_hidden_layers": 4, "patch_size": 0}}},
            f"'{tower}.draft.patch_size' is 0")


def test_hf_quant_config_is_bounded_too():
    entry = get_model_entry("Qwen/Qwen2.5-7B")
    with pytest.raises(ValueError, match=r"hf_quant_config\.json key 'quantization\.group_size' is 1,000,000,000; "
                                         "at most 65,536"):
        read_custom_config(entry.config, "q", hf_quant_config={"quantization": {"quant_algo": "NVFP4",
                                                                               "group_size": 10**9}})


def test_key_paths_in_messages_are_bounded_and_printable():
    key = "k\x1b]0;" + "x" * 500
    message = refused({**qwen3_vl(), key: {"depth": -1}}, "config key ")
    assert "\x1b" not in message and "x" * 61 not in message


# --------------------------------------------------------------------------
# The CLI: one line, exit 2 (10^15 layers used to exit 0 with a 28-million-GiB tower)
# --------------------------------------------------------------------------
@pytest.mark.parametrize("vision", [{"depth": 10**15}, {"depth": -5}, {"patch_size": 0}])
def test_cli_config_with_a_nonsense_tower_exits_2_with_one_line(tmp_path, capsys, vision):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(qwen3_vl(**vision)))
    assert main(["plan", "--config", str(path), "--gpu", "h100"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "'vision_config." in err[0], err
    assert "Traceback" not in err[0]


# --------------------------------------------------------------------------
# Planner-side bounds: configs that reach the planner another way
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("vision", "fragment"), [
    ({"depth": 10**9}, "'vision_config.depth' is 1,000,000,000; at most 1,024"),
    ({"depth": -3}, "'vision_config.depth' is -3; at least 1"),
    ({"patch_size": -16}, "'vision_config.patch_size' is -16"),
    ({"hidden_size": 10**2000}, "'vision_config.hidden_size' is a number of more than 30 digits"),
    ({"max_pixels": float("inf")}, "'vision_config.max_pixels' is 'inf'; expected a whole number"),
    ({"deepstack_visual_indexes": list(range(2000))}, "'vision_config.deepstack_visual_indexes' lists 2,000"),
])
def test_vision_from_config_bounds_what_it_reads(vision, fragment):
    config = qwen3_vl(**vision)
    with pytest.raises(ValueError, match=fragment.replace("(", r"\(")):
        vision_from_config(config)


def test_mtp_layers_and_speculative_sizes_are_bounded():
    with pytest.raises(ValueError, match=f"'text_config.num_nextn_predict_layers' is 1,000,000,000; at most "
                                         f"{MAX_MTP_LAYERS}"):
        mtp_layers_from_config({"text_config": {"num_nextn_predict_layers": 10**9}})
    assert mtp_layers_from_config({"num_nextn_predict_layers": 3}) == 3
    for bad, fragment in (({"num_speculative_tokens": 10**9}, "num_speculative_tokens is 1,000,000,000"),
                          ({"draft_vocab_size": 10**30}, "draft_vocab_size is"),
                          ({"method": "mtp", "num_mtp_layers": 10**9}, "MTP layer count")):
        with pytest.raises(ValueError, match=fragment):
            SpeculativeConfig(**{"method": "eagle3", **bad}).validate()


def test_weight_tensors_refuse_a_spec_built_around_the_bounds():
    model = dense_model(num_layers=2)
    huge = ParamGroup(name="visual.blocks.*.attn.qkv.weight", shape=(8, 8), count=MAX_WEIGHT_TENSORS + 1,
                      kind="other")
    from dataclasses import replace

    with pytest.raises(ValueError, match="weight tensors to lay out; at most 1,048,576"):
        vllm_weight_tensors(replace(model, params=(*model.params, huge)), weight_dtype("bf16"))


def test_share_link_gguf_rows_are_bounded_like_a_gguf_file():
    config = {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 128, "vocab_size": 1000}
    rows = [["blk.*.attn_q.weight", [64, 64], 10**9, "linear", "F16"]]
    with pytest.raises(ValueError, match="count 1,000,000,000 tensors; a GGUF file holds at most"):
        decode_model(pack({"n": "g", "c": config, "a": "llama", "t": rows}))
    rows = [["token_embd.weight", [64, 10**300], 1, "embedding", "F16"]]
    with pytest.raises(ValueError, match="more than a GGUF file can hold"):
        decode_model(pack({"n": "g", "c": config, "a": "llama", "t": rows}))


# --------------------------------------------------------------------------
# No real model is refused by a bound that is too tight
# --------------------------------------------------------------------------
@pytest.mark.parametrize("model_id", model_ids())
def test_every_catalog_config_is_inside_the_bounds(model_id):
    entry = get_model_entry(model_id)
    check_sizes(entry.config)
    if entry.hf_quant_config is not None:
        check_sizes(entry.hf_quant_config, label="hf_quant_config.json key", module_lists=True)
    vision_from_config(entry.config)
    mtp_layers_from_config(entry.config)


def test_every_reference_config_is_inside_the_bounds():
    files = sorted((ROOT / "tests" / "data" / "reference" / "hf_configs").glob("*.json"))
    assert files
    for path in files:
        check_sizes(parse_config_json(path.read_bytes()))


def test_vision_bounds_agree_with_the_config_bounds():
    from model_catalog import config_bounds as custom
    from planner.engines import weight_tensors
    from planner.serving import speculative
    from planner.serving.multimodal import VISION_FIELD_LIMITS

    CONFIG_KEY_RANGES = custom.CONFIG_KEY_RANGES
    assert (custom.MAX_LAYER_SEQUENCE, custom.MAX_LIST_ITEMS) == (MAX_LAYER_SEQUENCE, MAX_LIST_ITEMS)
    assert (speculative.MAX_MTP_LAYERS, weight_tensors.MAX_WEIGHT_TENSORS) == (MAX_MTP_LAYERS, MAX_WEIGHT_TENSORS)
    for key, (low, high) in VISION_FIELD_LIMITS.items():
        assert CONFIG_KEY_RANGES[key].high == high, key
    assert CONFIG_KEY_RANGES["num_nextn_predict_layers"].high == MAX_MTP_LAYERS


# --------------------------------------------------------------------------
# Objects padded with keys nothing reads (each key is a rebuild when a share link is made)
# --------------------------------------------------------------------------
def test_an_object_of_thousands_of_keys_is_refused():
    refused({**qwen3_vl(), **{f"junk_{i}": i for i in range(5000)}}, "the config's top level holds 5,00",
            "keys; at most 1,024 are accepted")
    refused(with_text(qwen3_vl(), **{f"junk_{i}": i for i in range(2000)}), "config key 'text_config' holds 2,0")


def test_a_share_link_of_a_padded_config_is_the_plain_configs_link():
    from model_catalog.share_codec import encode_model, minimal_config

    plain = read_custom_config(qwen3_vl(), "pasted/qwen3-vl")
    padded = with_text({**qwen3_vl(), **{f"junk_{i}": i for i in range(900)}},
                       **{f"junk_{i}": i for i in range(900)})
    model = read_custom_config(padded, "pasted/qwen3-vl")
    assert minimal_config(model) == minimal_config(plain)  # pruned by halves: a few rebuilds, not 1,800
    assert decode_model(encode_model(model)).spec == model.spec
