"""A pasted config.json plans as ``plan --config`` and the catalog entry of the same repository (QA round).

QA found three ways a paste differed:

* Home's custom panel wrote the config's dtype guess into the sidebar's weight dtype (``weight_dtype=bf16``
  for Kimi-K2.5, whose int4 quantization_config sits in ``text_config``: 239.37 GiB per GPU and 0 users on
  8 x H200 instead of the catalog's 69.56 GiB and 93; ``fp8`` per tensor for DeepSeek-V3.2's 128 x 128 block
  FP8; ``mxfp4`` on every linear layer of gpt-oss) where ``auto`` reads the checkpoint's own formats.
* A ModelOpt ``quantization_config`` (``quant_method: modelopt``, ``quant_algo: MIXED_PRECISION`` with its
  ``quantized_layers`` map, as nvidia/Qwen3.6-35B-A3B-NVFP4 ships it) was not read: auto counted bf16.
  vLLM reads the same keys from config.json as from hf_quant_config.json
  (vllm/model_executor/layers/quantization/modelopt.py, ``ModelOptQuantConfigBase.from_config`` and
  ``ModelOptMixedPrecisionConfig``).
* The CLI's note said "pick the weight dtype in the sidebar"; the CLI has ``--weight-dtype``.

Expected figures come from the catalog entry (the config with the repository's hf_quant_config.json), never
from copied output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from model_catalog import get_model_entry, model_spec
from model_catalog.custom import read_custom_config
from planner.cli import main
from planner.model.dtypes import WEIGHT_DTYPES
from planner.model.params import weight_bytes_by_format
from tests.test_app import metrics, run_page
from ui import custom_panel

HF_CONFIGS = Path(__file__).resolve().parent / "data" / "reference" / "hf_configs"
MODELOPT_MIXED = ("nvidia__Qwen3.6-35B-A3B-NVFP4", "nvidia__Qwen3.6-27B-NVFP4")


def reference(stem: str) -> dict:
    """The reference copy of a repository's config.json, without the copy's own ``_`` keys (what a user pastes)."""
    return {k: v for k, v in json.loads((HF_CONFIGS / f"{stem}.json").read_text()).items() if not k.startswith("_")}


def repo_id(stem: str) -> str:
    return json.loads((HF_CONFIGS / f"{stem}.json").read_text()).get("_id") or stem.replace("__", "/", 1)


def auto_bytes(spec) -> dict[str, int]:
    return weight_bytes_by_format(spec.params, WEIGHT_DTYPES["auto"], spec.torch_dtype)


# --------------------------------------------------------------------------
# D2: ModelOpt's quantization_config inside config.json
# --------------------------------------------------------------------------
@pytest.mark.parametrize("stem", MODELOPT_MIXED)
def test_modelopt_quantization_config_in_config_json_is_read_like_hf_quant_config(stem):
    config = reference(stem)
    assert config["quantization_config"]["quant_method"] == "modelopt"  # the keys vLLM reads from config.json
    pasted = read_custom_config(config, repo_id(stem))
    catalog = model_spec(repo_id(stem))
    assert pasted.spec.checkpoint_quantization.startswith("modelopt MIXED_PRECISION")
    assert auto_bytes(pasted.spec) == auto_bytes(catalog)
    assert not [n for n in pasted.notes if "not a scheme the planner reads" in n], pasted.notes
    assert pasted.weight_dtype_hint == "auto"


def test_every_catalog_modelopt_config_json_alone_prices_the_catalogs_weights():
    """Each catalog entry whose config.json carries a ``quant_method: modelopt`` quantization_config: the config
    alone (a paste, no hf_quant_config.json) counts the same bytes per format as the entry."""
    stems = [p.stem for p in sorted(HF_CONFIGS.glob("*.json"))
             if str(((reference(p.stem).get("quantization_config") or {}).get("quant_method") or "")) == "modelopt"]
    assert len(stems) >= 10
    differ = {}
    for stem in stems:
        entry = get_model_entry(repo_id(stem))
        pasted = auto_bytes(read_custom_config(reference(stem), entry.id).spec)
        if pasted != auto_bytes(model_spec(entry.id)):
            differ[stem] = pasted
    assert not differ


def _cli_json(capsys, argv: list[str]) -> tuple[dict, str]:
    assert main([*argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_cli_plan_config_of_a_modelopt_config_json_matches_the_catalog(capsys, tmp_path):
    stem = "nvidia__Qwen3.6-35B-A3B-NVFP4"
    path = tmp_path / "config.json"  # no hf_quant_config.json beside it
    path.write_text(json.dumps(reference(stem)))
    common = ["--gpu", "nvidia-rtx-5090", "--context-len", "8192"]
    pasted, err = _cli_json(capsys, ["plan", "--config", str(path), *common])
    catalog, _ = _cli_json(capsys, ["plan", "--model", repo_id(stem), *common])
    assert pasted["weights_bytes_per_gpu"] == catalog["weights_bytes_per_gpu"]
    assert pasted["weight_dtype_resolved"] == catalog["weight_dtype_resolved"]
    assert pasted["max_concurrent_sequences"] == catalog["max_concurrent_sequences"] > 0
    assert "not a scheme the planner reads" not in err


def test_modelopt_mixed_precision_without_its_layer_map_points_to_hf_quant_config(capsys, tmp_path):
    """A ModelOpt config.json that names MIXED_PRECISION but leaves the per-layer map to hf_quant_config.json
    is planned (at torch_dtype, with a note) instead of refused; the note names the second file."""
    config = reference("nvidia__Qwen3.6-35B-A3B-NVFP4")
    quant = {k: v for k, v in config["quantization_config"].items() if k not in ("quantized_layers", "config_groups")}
    config["quantization_config"] = quant
    model = read_custom_config(config, "pasted/qwen")
    [note] = [n for n in model.notes if "not a scheme the planner reads" in n]
    assert "hf_quant_config.json" in note
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _, err = _cli_json(capsys, ["plan", "--config", str(path), "--gpu", "nvidia-h200-sxm"])
    assert "hf_quant_config.json beside" in err and "sidebar" not in err


# --------------------------------------------------------------------------
# D8: the CLI's note names the CLI's flag
# --------------------------------------------------------------------------
def test_cli_note_on_an_unread_quantization_names_weight_dtype_flag(capsys, tmp_path):
    config = {**reference("Qwen__Qwen2.5-7B"),
              "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    _, err = _cli_json(capsys, ["plan", "--config", str(path), "--gpu", "nvidia-l4"])
    [note] = [line for line in err.splitlines() if "not a scheme the planner reads" in line]
    assert "--weight-dtype int4" in note and "sidebar" not in note
    page_note = [n for n in read_custom_config(config, "pasted/qwen").notes if "not a scheme" in n]
    assert page_note and "--weight-dtype" not in page_note[0] and "sidebar" in page_note[0]


# --------------------------------------------------------------------------
# D1: Home's "Use pasted config" keeps weight dtype auto
# --------------------------------------------------------------------------
HOME = {"gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "8192"}


def _paste_on_home(config: dict):
    at = run_page("app.py", HOME)
    at.session_state[custom_panel.PANEL_KEY] = True
    at.run()
    at.text_area(key="custom_config_text").set_value(json.dumps(config))
    return at.button(key="custom_use_pasted").click().run()


@pytest.mark.parametrize("stem", ["moonshotai__Kimi-K2.5", "deepseek-ai__DeepSeek-V4-Flash", "openai__gpt-oss-120b",
                                  "deepseek-ai__DeepSeek-V3.2", "nvidia__Qwen3.6-35B-A3B-NVFP4"])
def test_a_paste_on_home_shows_the_catalog_entrys_figures(stem):
    pasted = _paste_on_home(reference(stem))
    assert not pasted.exception and not pasted.error, [e.value for e in pasted.error]
    assert pasted.query_params.get("weight_dtype", "auto") == "auto"
    catalog = run_page("app.py", {**HOME, "model": repo_id(stem)})
    assert not catalog.exception
    assert metrics(pasted) == metrics(catalog)


def test_the_panel_sets_a_dtype_only_where_auto_cannot_read_the_checkpoint():
    """bitsandbytes is no scheme the planner prices per tensor: there the config's guess (int4) still goes into the
    sidebar, as before; a readable scheme (or none) leaves weight dtype auto."""
    bnb = {**reference("Qwen__Qwen2.5-7B"), "quantization_config": {"quant_method": "bitsandbytes",
                                                                     "load_in_4bit": True}}
    assert read_custom_config(bnb, "pasted/bnb").weight_dtype_hint == "int4"
    at = _paste_on_home(bnb)
    assert not at.exception and at.query_params.get("weight_dtype") == "int4"
    for stem in ("Qwen__Qwen2.5-7B", "moonshotai__Kimi-K2.5", "deepseek-ai__DeepSeek-V3.2"):
        assert read_custom_config(reference(stem), stem).weight_dtype_hint == "auto", stem


def test_home_labels_the_parameter_count_not_the_bytes():
    """QA (stop 43): "Weights: exact." beside a pasted checkpoint whose bytes the planner could not read from its
    quantization config read as exact bytes; the label names what is exact: the parameter count."""
    from tests.test_app import run_page

    at = run_page("app.py", {"model": "meta-llama/Llama-3.1-8B-Instruct"})
    labels = [c.value for c in at.caption if "Parameter count:" in c.value or c.value.startswith("Weights:")]
    assert labels and all(v.startswith("Parameter count: ") for v in labels), labels
