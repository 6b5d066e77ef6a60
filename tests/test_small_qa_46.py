"""Small QA findings of stop 46: the Home banner of a failed custom config cut mid-word, a link's vendors refused in
lower case, ``plan --config`` naming the file twice, and the GQA savings catalog caption naming fp8_ds_mla on an AMD
GPU."""

from __future__ import annotations

import json


from planner.cli import main
from planner.model.platforms import is_rocm_gpu
from tests.test_app import run_page
from tests.test_custom_panel_use import _main_errors, home, use_pasted

DUPLICATED = ('{"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, '
              '"num_key_value_heads": 8, "num_key_value_heads": 4, "intermediate_size": 14336, "vocab_size": 128256}')


def test_the_failed_config_banner_cuts_at_a_word_or_not_at_all():
    at = use_pasted(home({}), DUPLICATED)
    assert not at.exception
    line = next(t for t in _main_errors(at) if "could not be used" in t)
    reason = line.split("could not be used (", 1)[1].split("); the page still shows", 1)[0]
    words = reason.replace("\\", "").rstrip("…").split()
    full = ("config.json states the key more than once in one object: 'num_key_value_heads' (8, then 4); a JSON "
            "reader would keep the last value in silence, so remove the extra copy and keep the value you mean")
    assert words and all(w in full.split() for w in words), reason  # every word whole
    assert reason.replace("\\", "") == full or reason.endswith("…"), reason


def test_vendors_in_a_link_ignore_case():
    at = run_page("pages/7_Find_a_GPU_setup.py", {"model": "meta-llama/Meta-Llama-3-8B", "vendors": "nvidia,amd"})
    assert not at.exception
    shown = " ".join(str(e.value) for kind in ("error", "warning") for e in getattr(at, kind))
    assert "unknown vendor" not in shown, shown
    assert sorted(at.multiselect(key="vendors").value) == ["AMD", "NVIDIA"]


def test_plan_config_names_the_file_once(tmp_path, capsys):
    config = {"model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32,
              "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256,
              "max_position_embeddings": 8192, "layer_types": ["bogus", "full_attention"]}
    path = tmp_path / "float0.json"
    path.write_text(json.dumps(config))
    assert main(["plan", "--config", str(path), "--gpu", "nvidia-h100-sxm-80gb"]) == 2
    err = capsys.readouterr().err
    assert err.count("float0") == 1, err


def test_gqa_catalog_caption_follows_the_gpu():
    amd = "amd-mi300x"
    assert is_rocm_gpu(amd)
    at = run_page("pages/2_GQA_savings.py", {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": amd})
    assert not at.exception
    captions = [str(c.value) for c in at.caption if "Every KV-holding layer counted" in str(c.value)]
    assert captions and not any("fp8_ds_mla" in c for c in captions), captions
    nvidia = run_page("pages/2_GQA_savings.py", {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm"})
    assert any("fp8_ds_mla" in str(c.value) for c in nvidia.caption if "Every KV-holding layer" in str(c.value))
