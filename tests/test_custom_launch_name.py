"""A custom model's launch command says what to put in place of its name (QA, stop 42).

After "Use pasted config", the Engine page's launch command read ``vllm serve custom-model \\ ...`` with no word that
``custom-model`` is only the panel's name for the pasted config, not a checkpoint vLLM can load. A note beside the
command (Engine page, Home's engine panel) says to replace it with the model's repo id or local path; a model read
from the Hub is served under its repo id and gets none.
"""

from __future__ import annotations


import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry
from model_catalog.custom import read_custom_config
from model_catalog.share_codec import encode_model
from tests.test_app import run_page

NEMO = get_model_entry("mistralai/Mistral-Nemo-Base-2407").config


def _run(page: str, source: str) -> AppTest:
    model = read_custom_config(NEMO, "custom-model", source=source)
    at = run_page(page, {"model": "custom", "gpu": "nvidia-h100-sxm-80gb",
                       "custom_model": encode_model(model)})
    assert not at.exception
    return at


def _notes(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if "custom-model" in c.value and "replace" in c.value]


@pytest.mark.parametrize("page", ["pages/5_Engine.py", "app.py"])
def test_a_pasted_model_s_command_says_to_replace_its_name(page):
    at = _run(page, "pasted config.json")
    assert any("vllm serve custom-model" in c.value for c in at.code)
    (note,) = _notes(at)
    assert "repo id" in note and "local path" in note, note


def test_a_hub_model_s_command_needs_no_note():
    at = _run("pages/5_Engine.py", "hf:mistralai/Mistral-Nemo-Base-2407@abc")
    assert not _notes(at)
