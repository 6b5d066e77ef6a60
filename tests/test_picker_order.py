"""Typing into a model picker lists the base repo before its quantized checkpoints (ui/picker_search.py).

Issue 27, polish: typing "DeepSeek-V3.2" put nvidia/DeepSeek-V3.2-NVFP4 first, so one Enter planned the
NVFP4 checkpoint; and Enter in a multi-model picker added every match ("Select 2 matches"). The
browser sorts the fuzzy matches by fzy's score (shorter labels first); :func:`frontend_order` replays it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry, model_ids
from ui.catalog import model_label
from ui.picker_search import QUANTIZED_NOTE, base_first_labels, frontend_order, fzy_score, quantized_bases

ROOT = Path(__file__).resolve().parents[1]
BASE, NVFP4 = "deepseek-ai/DeepSeek-V3.2", "nvidia/DeepSeek-V3.2-NVFP4"


def _catalog() -> tuple[dict[str, str], dict[str, str]]:
    """(plain model labels, quantized id -> base id) of the whole catalog."""
    entries = {m: get_model_entry(m) for m in model_ids()}
    plain = {m: model_label(e.display_name, m, e.aliases) for m, e in entries.items()}
    return plain, quantized_bases({m: tuple(e.aliases) for m, e in entries.items()})


def _shown(plain: dict[str, str], bases: dict[str, str]) -> dict[str, str]:
    """The labels the pickers show (ui.inputs): each quantized checkpoint names its base."""
    return base_first_labels(plain, {v: get_model_entry(b).display_name for v, b in bases.items()})


def test_fzy_port_scores_as_the_browser():
    # fzy.js: an exact match is infinite; a consecutive run after "/" earns 0.9 + 1 per next character,
    # and every character outside the match costs 0.005.
    assert fzy_score("abc", "ABC") == float("inf")
    assert fzy_score("ab", "x/ab") == pytest.approx(2 * -0.005 + 0.9 + 1.0)
    assert fzy_score("ab", "x/abcd") == pytest.approx(fzy_score("ab", "x/ab") - 2 * 0.005)
    assert frontend_order("ab", {"long": "ab and more", "short": "ab more"}) == ["short", "long"]
    assert frontend_order("ab", {"first": "xab", "second": "yab"}) == ["first", "second"]  # stable on ties


def test_the_plain_labels_put_the_nvfp4_checkpoint_first():
    """The issue as the browser saw it: without the base named in the checkpoint's label."""
    plain, _ = _catalog()
    assert frontend_order("DeepSeek-V3.2", plain)[0] == NVFP4


def test_quantized_checkpoints_find_their_base():
    _, bases = _catalog()
    assert bases[NVFP4] == BASE
    assert bases["Qwen/Qwen3-32B-FP8-Static-PerTensor"] == "Qwen/Qwen3-32B"
    assert bases["nvidia/Gemma-4-26B-A4B-NVFP4"] == "google/gemma-4-26B-A4B"  # any owner, any case
    assert bases["nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4"] == "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"
    assert "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16" not in bases  # the original precision is a base
    assert "deepseek-ai/DeepSeek-V3.2" not in bases


def test_typing_a_base_lists_it_before_every_quantized_checkpoint_of_it():
    plain, bases = _catalog()
    labels = _shown(plain, bases)
    assert labels[NVFP4] == f"{plain[NVFP4]}{QUANTIZED_NOTE}{get_model_entry(BASE).display_name}"
    assert frontend_order("DeepSeek-V3.2", labels)[0] == BASE
    checked = 0
    for variant, base in bases.items():
        for typed in (base.rpartition("/")[2], base, get_model_entry(base).display_name):
            order = frontend_order(typed, labels)
            assert variant not in order[:order.index(base)], (typed, order[:4])  # (or not listed at all)
            checked += 1
        assert frontend_order(variant, labels)[0] == variant  # the checkpoint's own id still finds it first
    assert checked >= 60


def test_the_pickers_show_the_base_note_and_the_multiselect_has_no_select_matches_row():
    at = AppTest.from_file(str(ROOT / "pages/1_Memory_curves.py"), default_timeout=60)
    at.query_params["models"] = [NVFP4, BASE]
    at.run()
    assert not at.exception
    picker = at.multiselect(key="models")
    note = f"{QUANTIZED_NOTE}{get_model_entry(BASE).display_name}"
    assert [picker.format_func(v) for v in picker.value][0].endswith(note)
    assert picker.proto.select_all == 0  # select_all=False: Enter adds the best match, not "Select 2 matches"
    assert at.multiselect(key="gpus").proto.select_all == 0
    home = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    home.query_params["model"] = NVFP4
    home.run()
    assert not home.exception
    box = home.selectbox(key="model")
    assert box.format_func(box.value).endswith(note)
    url = home.query_params.get("model")
    assert (url if isinstance(url, str) else list(url)[-1]) == NVFP4  # the URL keeps the id
