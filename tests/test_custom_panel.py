"""The custom-model panel in a real Streamlit run (AppTest): links, paste flow, tampered codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry
from model_catalog.custom import custom_gpu, read_custom_config
from ui import custom_panel
from model_catalog.share_codec import encode_gpu, encode_model
from tests.tiles import metric_tiles

PAGE = Path(__file__).resolve().parent / "fixtures" / "custom_panel_page.py"
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
LLAMA3_CONFIG = get_model_entry(LLAMA3).config


def run(params: dict | None = None, *, open_panel: bool = True) -> AppTest:
    """The fixture page; the panel unfolded (a lazy expander: folded, it draws no widgets), as a user opens it."""
    at = AppTest.from_file(str(PAGE), default_timeout=60)
    for key, value in (params or {}).items():
        at.query_params[key] = value
    if open_panel:
        at.session_state[custom_panel.PANEL_KEY] = True
    return at.run()


def texts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown]


def test_panel_renders_without_codes():
    at = run()
    assert not at.exception and not at.error
    assert "model: none" in texts(at) and "gpu: none" in texts(at)


def test_link_codes_rebuild_the_model_and_gpu():
    model = read_custom_config(LLAMA3_CONFIG, "my-org/llama-ft")
    gpu = custom_gpu("Lab card", 24, "GiB", 936)
    at = run({"custom_model": encode_model(model), "custom_gpu": encode_gpu(gpu)})
    assert not at.exception and not at.error
    shown = texts(at)
    assert "model: my-org/llama-ft" in shown and "params: 8030261248" in shown
    assert "resolved: my-org/llama-ft" in shown
    assert "gpu: Lab card" in shown and f"memory: {24 << 30}" in shown


@pytest.mark.parametrize("param", ["custom_model", "custom_gpu"])
def test_tampered_code_is_a_message_not_a_traceback(param):
    good = encode_model(read_custom_config(LLAMA3_CONFIG, "x")) if param == "custom_model" else encode_gpu(
        custom_gpu("x", 24, "GiB", 900))
    at = run({param: good[:-6] + "AAAAAA"})
    assert not at.exception
    assert len(at.error) == 1 and f"Link parameter {param} is not a valid share code" in at.error[0].value
    assert "model: none" in texts(at) and "gpu: none" in texts(at)


def test_folding_the_panel_keeps_what_was_typed_into_it():
    at = run()
    at.text_area(key="custom_config_text").set_value('{"model_type": "llama"}')
    at.number_input(key="custom_gpu_memory").set_value(48.0)
    at.run()
    at.session_state[custom_panel.PANEL_KEY] = False  # the user folds the panel: a run without its widgets
    at.run()
    assert "custom_config_text" not in [w.key for w in at.text_area]
    at.session_state[custom_panel.PANEL_KEY] = True  # and unfolds it again
    at.run()
    assert not at.exception
    assert at.text_area(key="custom_config_text").value == '{"model_type": "llama"}'
    assert at.number_input(key="custom_gpu_memory").value == 48.0


def test_a_folded_panel_draws_no_widgets():
    at = run(open_panel=False)
    assert not at.exception
    assert not at.text_area and not at.text_input and not at.get("file_uploader")
    assert at.expander and at.expander[0].label == "Custom model & GPU"


def test_paste_flow_sets_the_link_code():
    at = run()
    at.text_area(key="custom_config_text").set_value(json.dumps(LLAMA3_CONFIG))
    at.text_input(key="custom_model_name").set_value("pasted/llama")
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception and not at.error
    assert "model: pasted/llama" in texts(at)
    assert at.text_input(key="custom_model").value.startswith("v1.")
    assert at.success and "Pasted config.json read: pasted/llama" in at.success[0].value


def test_paste_flow_takes_an_optional_hf_quant_config():
    entry = get_model_entry("nvidia/Qwen3-235B-A22B-NVFP4")
    at = run()
    at.text_area(key="custom_config_text").set_value(json.dumps(entry.config))
    at.text_area(key="custom_quant_text").set_value(json.dumps(entry.hf_quant_config))
    at.text_input(key="custom_model_name").set_value("pasted/qwen3-nvfp4")
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception and not at.error
    assert "Pasted config.json and hf_quant_config.json read" in at.success[0].value
    assert "Weight dtype set to auto" in at.success[0].value
    # The link carries the second file: a fresh run from the code plans the same NVFP4 checkpoint.
    code = at.text_input(key="custom_model").value
    again = run({"custom_model": code})
    assert not again.exception and "model: pasted/qwen3-nvfp4" in texts(again)


def test_a_bad_hf_quant_config_is_one_sentence():
    at = run()
    at.text_area(key="custom_config_text").set_value(json.dumps(LLAMA3_CONFIG))
    at.text_area(key="custom_quant_text").set_value('{"quantization": {"quant_algo": "FP3"}}')
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception and len(at.error) == 1
    assert "key 'quant_algo' is 'FP3', which the planner cannot price" in at.error[0].value


def test_paste_flow_reports_a_bad_key_and_keeps_working():
    at = run()
    at.text_area(key="custom_config_text").set_value('{"model_type": "acme", "hidden_size": 64}')
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception
    assert len(at.error) == 1 and "config key 'num_hidden_layers' is missing" in at.error[0].value
    assert "model: none" in texts(at)


FIVE_MB = 5_000_000


def test_an_oversized_paste_reaches_the_server_and_names_the_limit():
    at = run()
    box = at.text_area(key="custom_config_text")
    assert box.proto.max_chars > FIVE_MB  # the browser lets a 5 MB paste through instead of dropping it
    box.set_value('{"model_type": "llama", "pad": "' + "x" * FIVE_MB + '"}')
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "5,000,0" in message and "at most 4,000,000 bytes" in message and "empty" not in message


def test_an_empty_paste_says_what_to_paste_and_the_limit():
    at = run()
    at.button(key="custom_use_pasted").click().run()
    assert len(at.error) == 1 and "box is empty" in at.error[0].value and "4,000,000" in at.error[0].value


def test_an_oversized_upload_reaches_the_server_and_names_file_and_limit():
    at = run()
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("custom_config_file"))
    assert uploader.proto.max_upload_size_mb * 1_000_000 > FIVE_MB  # not refused before the server sees it
    uploader.set_value(("big-config.json", b"{" + b" " * FIVE_MB + b"}", "application/json"))
    at.button(key="custom_use_uploaded").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "big-config.json is 5,000,002 bytes, over the limit" in message and "4,000,000" in message


def test_a_bad_gguf_upload_names_the_users_file_not_a_temporary_copy():
    at = run()
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("custom_gguf_file"))
    uploader.set_value(("my-model.gguf", b"not a gguf file at all", "application/octet-stream"))
    at.button(key="custom_use_gguf").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "my-model.gguf" in message and "tmp" not in message.lower()


def test_custom_gpu_form_sets_the_link_code():
    at = run()
    at.text_input(key="custom_gpu_name").set_value("Lab card")
    at.number_input(key="custom_gpu_memory").set_value(48.0)
    at.button(key="custom_use_gpu").click().run()
    assert not at.exception and not at.error
    assert "gpu: Lab card" in texts(at) and f"memory: {48 << 30}" in texts(at)
    assert at.text_input(key="custom_gpu").value.startswith("v1.")


# --------------------------------------------------------------------------
# Wired into the shared sidebar: every page, deep links with model=custom
# --------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]
CUSTOM_LINK = {
    "custom_model": encode_model(read_custom_config(LLAMA3_CONFIG, "my-org/llama-ft")),
    "custom_gpu": encode_gpu(custom_gpu("Lab card", 24, "GiB", 936, 0.5)),
}


def run_page(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


@pytest.mark.parametrize("page", PAGES)
def test_every_page_offers_the_panel_and_plans_the_custom_model(page):
    at = run_page(page, {**CUSTOM_LINK, "model": "custom", "models": "custom", "gpu": "custom", "gpus": "custom"})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    pickers = [w.key for w in (*at.selectbox, *at.multiselect) if w.key in ("model", "models", "gpu", "gpus")]
    if not pickers:  # a page without the shared sidebar (the catalog tables)
        return
    for key in pickers:
        widget = at.selectbox(key=key) if key in ("model", "gpu") else at.multiselect(key=key)
        assert "custom" in (widget.value if key in ("models", "gpus") else [widget.value]), key
    # The panel is folded (lazy: none of its widgets is drawn), yet the link's codes plan the model;
    # unfolded, its link-code inputs show them.
    assert "custom_model" not in [w.key for w in at.text_input]
    at.session_state[custom_panel.PANEL_KEY] = True
    at.run()
    assert not at.exception, at.exception
    assert at.text_input(key="custom_model").value == CUSTOM_LINK["custom_model"]
    assert at.text_input(key="custom_gpu").value == CUSTOM_LINK["custom_gpu"]


def test_home_page_numbers_are_the_custom_plan():
    from model_catalog.share_codec import decode_gpu, decode_model
    from planner.budget import PlanRequest, plan
    from ui.format import format_bytes, format_int

    at = run_page("app.py", {**CUSTOM_LINK, "model": "custom", "gpu": "custom", "context_len": "4096"})
    assert not at.exception and not at.error
    spec, gpu = decode_model(CUSTOM_LINK["custom_model"]).spec, decode_gpu(CUSTOM_LINK["custom_gpu"])
    expected = plan(spec, gpu.framework_memory_bytes, PlanRequest(context_len=4096), gpu_id=gpu.id)
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown["Weights"] == format_bytes(expected.weights_bytes_per_gpu)
    assert shown["Max concurrent sequences"] == format_int(expected.max_concurrent_sequences)


def test_tampered_link_on_a_page_is_a_top_message_and_the_catalog_still_works():
    at = run_page("app.py", {"custom_model": CUSTOM_LINK["custom_model"][:-8] + "zzzzzzzz", "context_len": "4096"})
    assert not at.exception
    messages = [e.value for e in at.error]
    assert len(messages) == 1 and "Link parameter custom_model is not a valid share code" in messages[0]
    assert at.selectbox(key="model").value == "meta-llama/Meta-Llama-3-8B"
    assert metric_tiles(at)  # the catalog plan is still shown


def test_broken_custom_link_says_the_custom_model_could_not_be_read_not_unknown_id():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.query_params["model"] = "custom"
    at.query_params["gpu"] = "nvidia-rtx-3090"
    at.query_params["custom_model"] = "hello"
    at.run()
    assert not at.exception
    texts = [e.value for e in at.error]
    assert any("custom model this link names could not be read" in t for t in texts)
    assert not any("unknown model id 'custom'" in t for t in texts)



def test_a_custom_model_sized_by_defaults_is_a_warning_on_the_page():
    # {"model_type": "llama"} alone: transformers' Llama defaults stand in for its sizes. The panel is
    # folded, so the page itself says so above the plan.
    from model_catalog.share_codec import encode_model

    code = encode_model(read_custom_config({"model_type": "llama"}, "only/type"))
    at = run_page("app.py", {"custom_model": code, "model": "custom"})
    assert not at.exception
    assert any("defaults stand in" in w.value and "only/type" in w.value for w in at.warning)


def test_a_custom_link_without_a_code_says_so_and_where_to_define_one():
    """QA: ``/?model=custom&gpu=custom`` said the custom model "could not be read (the message about custom_model
    or custom_gpu says why)", and there was no such message: the link carries no code at all."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=60)
    at.query_params["model"] = "custom"
    at.query_params["gpu"] = "custom"
    at.run()
    assert not at.exception
    texts = " ".join(e.value for e in at.error)
    assert "carries no `custom_model` code" in texts and "carries no `custom_gpu` code" in texts, texts
    assert "Custom model & GPU" in texts and "says why" not in texts


def test_a_long_gguf_upload_name_is_cut_in_the_message():
    """The panel put the uploaded file's name whole into the reader's message; other readers quote at most 60
    characters of what they were given (planner/text.py)."""
    at = run()
    uploader = next(u for u in at.get("file_uploader") if u.proto.id.endswith("custom_gguf_file"))
    uploader.set_value(("q" * 300 + ".gguf", b"not a gguf file at all", "application/octet-stream"))
    at.button(key="custom_use_gguf").click().run()
    assert not at.exception
    assert len(at.error) == 1
    message = at.error[0].value
    assert "q" * 61 not in message and "qqq" in message and "(305 characters)" in message, message


BOLD = "**bold** _x_"
"""A custom GPU / model name with Markdown emphasis (QA: "Custom GPU set" and the Concurrency headline drew it bold)."""


def test_a_custom_gpu_name_with_markdown_is_inert_in_the_set_message():
    from ui.format import md_text

    at = run()
    at.text_input(key="custom_gpu_name").set_value(BOLD)
    at.number_input(key="custom_gpu_memory").set_value(48.0)
    at.button(key="custom_use_gpu").click().run()
    assert not at.exception and not at.error
    (said,) = [s.value for s in at.success if "Custom GPU set" in s.value]
    assert said.startswith(f"Custom GPU set: {md_text(BOLD)},"), said


def test_a_custom_model_name_with_markdown_is_inert_in_the_read_message():
    from ui.format import md_text

    at = run()
    at.text_input(key="custom_model_name").set_value(BOLD)
    at.text_area(key="custom_config_text").set_value(json.dumps(LLAMA3_CONFIG))
    at.button(key="custom_use_pasted").click().run()
    assert not at.exception and not at.error
    (said,) = [s.value for s in at.success if "read" in s.value]
    assert f": {md_text(BOLD)} (" in said, said


def test_a_custom_gpu_name_with_markdown_is_the_concurrency_tile_label_as_typed():
    gpu = encode_gpu(custom_gpu(BOLD, 80, "GiB", 3350))
    at = run_page("pages/3_Concurrency.py", {"custom_gpu": gpu, "gpus": "custom", "model": LLAMA3})
    assert not at.exception, at.exception
    assert BOLD in [t.label for t in metric_tiles(at)], [t.label for t in metric_tiles(at)]
