"""A pasted vision model's config.json gets vLLM's default encoder profile, as the catalog entry and the CLI do
(QA, stop 42).

Pasting Qwen3.6-35B-A3B's config.json on Home (H200 SXM, 65,536 tokens) planned a KV budget of 57.59 GiB where the
catalog entry and ``python -m planner plan --config`` give 57.30 GiB: the page's ``ui.serving.raw_config`` returned
{} for the custom model, so ``with_engine_defaults`` never saw its ``vision_config``.
"""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry
from planner.cli import main
from tests.test_app import run_page
from tests.tiles import metric_tiles
from ui import custom_panel
from ui.format import format_bytes_exact

QWEN = "Qwen/Qwen3.6-35B-A3B"
QWEN_TEXT = json.dumps(dict(get_model_entry(QWEN).config))  # the reference config.json QA pasted, less its notes
PARAMS = {"gpu": "nvidia-h200-sxm", "context_len": "65536"}


def _cli_budget(capsys, *model: str) -> int:
    assert main(["plan", *model, "--gpu", PARAMS["gpu"], "--context-len", PARAMS["context_len"],
                 "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)["kv_cache_budget_bytes"]


def _home(params: dict) -> AppTest:
    return run_page("app.py", params)


def _budget_help(at: AppTest) -> str:
    return next(t.help for t in metric_tiles(at) if t.label.startswith("KV budget"))


def _paste(params: dict) -> AppTest:
    """Home with ``params``, Qwen3.6-35B-A3B's config.json pasted in the custom panel and used."""
    at = _home({"model": "custom", **params})
    at.session_state[custom_panel.PANEL_KEY] = True
    at.run()
    at.text_area(key="custom_config_text").set_value(QWEN_TEXT)
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception and at.selectbox(key="model").value == custom_panel.CUSTOM_ID
    return at


@pytest.fixture(scope="module")
def pasted() -> AppTest:
    return _paste(PARAMS)


def test_a_pasted_vision_config_is_planned_with_vllm_s_encoder_profile(capsys, pasted, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(QWEN_TEXT)
    cli = _cli_budget(capsys, "--config", str(config))
    assert cli == _cli_budget(capsys, "--model", QWEN)  # the file is the catalog entry's config
    assert _budget_help(pasted).startswith(format_bytes_exact(cli)), _budget_help(pasted)


def test_the_pasted_model_s_page_says_users_carry_the_encoder_profile(pasted):
    catalog = _home({"model": QWEN, **PARAMS})
    note = [c.value for c in catalog.caption if "default encoder profile" in c.value]
    assert note  # the catalog entry's page says it
    assert [c.value for c in pasted.caption if "default encoder profile" in c.value]


def test_a_pasted_config_keeps_its_mtp_layers_for_speculative_decoding():
    """The link's config of a pasted model dropped ``mtp_num_hidden_layers`` (it changes no spec), so
    ``speculative_method=mtp`` read 0 draft layers on the pages where ``plan --config`` reads the file's 1 (QA,
    stop 42): the pasted model now gets the catalog entry's users and no "needs ... mtp_num_hidden_layers"."""
    params = {**PARAMS, "speculative_method": "mtp"}
    at = _paste(params)
    shown = [e.value for e in at.error] + [w.value for w in at.warning]
    assert not [m for m in shown if "mtp_num_hidden_layers" in m], shown
    catalog = _home({"model": QWEN, **params})
    users = {t.label: t.value for t in metric_tiles(catalog) if "users" in t.label.lower()}
    assert users and users == {t.label: t.value for t in metric_tiles(at) if "users" in t.label.lower()}
