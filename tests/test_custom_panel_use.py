"""The "Custom model & GPU" panel after a "Use" (AppTest on Home): the share link keeps the code in use,
the panel stays open while the user edits, and a failed "Use" is one line at the top of the page.

QA: after "Use pasted config", editing the config.json box folded the panel and the URL lost
``custom_model=`` (a link that no longer opened the model on the page); a pasted config that did not
parse was said only in the sidebar while the page kept planning the previous model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry
from model_catalog.custom import parse_config_json, read_custom_config
from model_catalog.share_codec import decode_model, encode_model
from tests.test_app import run_page
from ui import catalog, custom_panel

ROOT = Path(__file__).resolve().parents[1]
MISTRAL_NEMO = get_model_entry("mistralai/Mistral-Nemo-Base-2407").config
BROKEN = '{"model_type": "mistral", "hidden_size": 5120, "name": "unterminated}'


def home(params: dict) -> AppTest:
    at = run_page("app.py", params)
    at.session_state[custom_panel.PANEL_KEY] = True  # the user unfolds the panel
    return at.run()


def use_pasted(at: AppTest, text: str) -> AppTest:
    at.text_area(key="custom_config_text").set_value(text)
    return at.button(key="custom_use_pasted").click().run()


def test_editing_the_config_box_keeps_the_code_in_the_link_and_the_panel_open():
    at = use_pasted(home({"model": "custom"}), json.dumps(MISTRAL_NEMO))
    assert not at.exception
    code = at.query_params["custom_model"]
    assert decode_model(code).spec.hidden_size == MISTRAL_NEMO["hidden_size"]

    at.text_area(key="custom_config_text").set_value("{}").run()  # edited, "Use" not pressed
    assert not at.exception
    assert at.session_state[custom_panel.PANEL_KEY] is True
    assert at.text_area(key="custom_config_text").value == "{}"
    assert at.query_params.get("custom_model") == code  # the model in use is still the link's

    at.session_state[custom_panel.PANEL_KEY] = False  # folded: the link-code inputs are not drawn
    at.run()
    assert at.query_params.get("custom_model") == code

    fresh = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in at.query_params.items():
        fresh.query_params[key] = value
    fresh.run()
    assert not fresh.exception and not fresh.error, [e.value for e in fresh.error]
    assert fresh.selectbox(key="model").value == catalog.CUSTOM_ID


def test_a_new_code_typed_into_the_link_code_box_goes_into_the_link():
    at = home({})
    code = encode_model(read_custom_config(MISTRAL_NEMO, "typed/nemo"))
    at.text_input(key="custom_model").set_value(code).run()
    assert not at.exception
    assert at.query_params.get("custom_model") == code
    at.button(key="custom_clear_model").click().run()
    assert "custom_model" not in at.query_params


def test_a_json_error_says_at_once():
    with pytest.raises(ValueError) as error:
        parse_config_json(BROKEN)
    message = str(error.value)
    assert "Unterminated string starting at line 1, column" in message and "at at" not in message


def _main_errors(at: AppTest) -> list[str]:
    return [e.value for e in at.main.error]


def test_a_failed_use_is_one_line_at_the_top_of_the_page_and_keeps_the_paste():
    at = use_pasted(home({}), BROKEN)
    assert not at.exception
    shown_model = get_model_entry(catalog.default_model_id()).display_name  # what the page plans instead
    lines = [t for t in _main_errors(at) if "could not be used" in t]
    assert len(lines) == 1, _main_errors(at)
    line = lines[0]
    assert "\n" not in line.strip()
    assert "pasted config.json" in line and "Unterminated string" in line
    assert shown_model in line and "Custom model & GPU" in line

    at.number_input(key="context_len").set_value(4096).run()  # any other input: the line stays
    assert [t for t in _main_errors(at) if "could not be used" in t] == lines
    assert at.text_area(key="custom_config_text").value == BROKEN

    at = use_pasted(at, json.dumps(MISTRAL_NEMO))  # a "Use" that works ends it
    assert not [t for t in _main_errors(at) if "could not be used" in t]


GENERIC = {"hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
           "vocab_size": 1000, "max_position_embeddings": 2048}


def _texts(at: AppTest) -> str:
    return "\n".join(str(e.value) for kind in ("caption", "error", "warning", "info", "success", "markdown")
                     for e in getattr(at, kind))


@pytest.mark.parametrize("length", [100, 200_000])
def test_a_long_model_type_is_quoted_at_most_60_characters_in_the_panel(length):
    """QA: a 200,000-character model_type was rendered whole in a caption (the browser then took ~50 s)."""
    at = use_pasted(home({}), json.dumps({"model_type": "A" * length, **GENERIC}))
    assert not at.exception
    shown = _texts(at)
    assert "A" * 61 not in shown, f"{len(shown):,} characters shown"
    assert f"({length:,} characters)" in shown
    if length > 128:  # model_catalog.config_bounds.MAX_CONFIG_NAME_CHARS
        assert "at most 128" in shown
