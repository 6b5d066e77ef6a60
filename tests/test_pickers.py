"""Model and GPU pickers show names and keep ids in the URL (ui/inputs.py ``picker``, ui/catalog.py labels).

Issue 14, item 6: the pickers listed raw ids. A URL-bound widget with ``format_func`` writes
the shown label into the URL (Streamlit 1.67), so the four pickers sync the URL by hand:
these tests open deep links with ids (and an alias) and change the widgets, and check the
label shown, the widget value and ``st.query_params``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry, model_ids
from model_catalog.gpus import get_gpu, load_gpus
from ui.catalog import LABEL_SEPARATOR, is_fuzzy_match, model_label

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 60

LLAMA31 = "meta-llama/Meta-Llama-3.1-8B"
QWEN = "Qwen/Qwen2.5-7B"
H100 = "nvidia-h100-sxm-80gb"
L4 = "nvidia-l4"


def run(page: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def shown(widget) -> str:
    """What the picker shows for its value (``format_func`` applied)."""
    return widget.format_func(widget.value)


def shown_all(widget) -> list[str]:
    return [widget.format_func(v) for v in widget.value]


def url(at: AppTest, key: str) -> list[str]:
    """The URL's values of ``key`` after the run (AppTest keeps one value as a plain string)."""
    value = at.query_params.get(key, [])
    return [value] if isinstance(value, str) else list(value)


# --------------------------------------------------------------------------
# Labels: what the picker searches
# --------------------------------------------------------------------------
def test_the_fuzzy_filter_is_an_in_order_case_insensitive_subsequence():
    # Streamlit's frontend filter (fzy.js hasMatch): every typed character, in order, any case.
    assert is_fuzzy_match("h100", "H100 SXM5 80GB")
    assert is_fuzzy_match("fzmg", "fuzzy/matching")
    assert not is_fuzzy_match("ba", "ab")
    assert not is_fuzzy_match("h200", "H100 SXM5 80GB")


def test_a_model_label_is_its_name_then_its_id_and_finds_the_instruct_alias():
    entry = get_model_entry(LLAMA31)
    label = model_label(entry.display_name, LLAMA31, entry.aliases)
    assert label == "Llama 3.1 8B · meta-llama/Meta-Llama-3.1-8B[-Instruct]"
    for typed in ("Llama-3.1-8B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", "llama 3.1 8b", LLAMA31):
        assert is_fuzzy_match(typed, label), typed
    assert not is_fuzzy_match("Llama-3.1-70B", label)


def test_insertions_and_other_aliases_are_written_where_they_apply():
    # Llama-2-7b-chat-hf inserts "-chat" before "-hf"; gemma-3-1b-pt changes "it" to "pt".
    assert model_label("Llama 2 7B", "meta-llama/Llama-2-7b-hf",
                       ("meta-llama/Llama-2-7b", "meta-llama/Llama-2-7b-chat-hf", "meta-llama/Llama-2-7b-chat")) \
        == "Llama 2 7B · meta-llama/Llama-2-7b[-chat]-hf"
    assert model_label("Gemma 3 1B IT", "google/gemma-3-1b-it", ("google/gemma-3-1b-pt",)) \
        == "Gemma 3 1B IT · google/gemma-3-1b-it also gemma-3-1b-pt"
    assert model_label("Command R v01", "CohereForAI/c4ai-command-r-v01", ("CohereLabs/c4ai-command-r-v01",)) \
        == "Command R v01 · CohereForAI/c4ai-command-r-v01 also CohereLabs/c4ai-command-r-v01"


def test_every_catalog_model_is_found_by_its_name_its_id_and_each_alias():
    for model_id in model_ids():
        entry = get_model_entry(model_id)
        label = model_label(entry.display_name, model_id, entry.aliases)
        assert label.startswith(entry.display_name)
        for typed in (entry.display_name, model_id, *entry.aliases):
            assert is_fuzzy_match(typed, label), (typed, label)


def test_typing_qwen3_6_finds_only_qwen3_6_models():
    found = [m for m in model_ids()
             if is_fuzzy_match("qwen3.6", model_label(get_model_entry(m).display_name, m, get_model_entry(m).aliases))]
    assert "Qwen/Qwen3.6-35B-A3B" in found
    assert "Qwen/Qwen3.5-27B" in found  # its alias Qwen/Qwen3.6-27B
    assert QWEN not in found


def test_typing_h100_finds_the_h100_cards_by_name():
    found = {g.id for g in load_gpus().values() if is_fuzzy_match("h100", g.name)}
    assert {H100, "nvidia-h100-pcie-80gb", "nvidia-h100-nvl-94gb"} <= found
    assert L4 not in found


# --------------------------------------------------------------------------
# URL sync, both ways
# --------------------------------------------------------------------------
def test_deep_link_ids_show_names_and_the_url_keeps_the_ids():
    at = run("app.py", model=LLAMA31, gpu=L4)
    assert not at.exception and not at.error
    model, gpu = at.selectbox(key="model"), at.selectbox(key="gpu")
    assert model.value == LLAMA31 and shown(model).startswith("Llama 3.1 8B · ")
    assert gpu.value == L4 and shown(gpu) == get_gpu(L4).name == "L4"
    assert url(at, "model") == [LLAMA31] and url(at, "gpu") == [L4]


def test_a_model_alias_stays_in_the_link_and_a_gpu_alias_becomes_the_canonical_id():
    """A model alias is another Hugging Face repo (the Instruct model, not the base one): the picker
    holds it as an option of its own, labelled with the entry's name, so the URL and the launch
    commands keep it. A GPU alias (``h100``) names no repo and becomes the catalog id."""
    instruct = "meta-llama/Llama-3.1-8B-Instruct"
    at = run("app.py", model="meta-llama/llama-3.1-8B-instruct", gpu="h100")  # other case: the Hub spelling
    assert not at.exception and not at.error
    box = at.selectbox(key="model")
    assert box.value == instruct
    assert box.format_func(instruct) == f"Llama 3.1 8B{LABEL_SEPARATOR}{instruct}"
    assert box.options.index(box.format_func(instruct)) == box.options.index(box.format_func(LLAMA31)) + 1
    assert at.selectbox(key="gpu").value == H100
    assert url(at, "model") == [instruct] and url(at, "gpu") == [H100]
    at.selectbox(key="model").select(QWEN).run()  # picking another model drops the alias from the link
    assert url(at, "model") == [QWEN]


def test_changing_a_picker_writes_the_id_into_the_url_in_the_same_run():
    at = run("app.py", model=LLAMA31)
    at.selectbox(key="model").select(QWEN).run()
    assert url(at, "model") == [QWEN]
    at.selectbox(key="gpu").select(L4).run()
    assert url(at, "gpu") == [L4] and url(at, "model") == [QWEN]
    assert at.title[0].value and "Qwen2.5 7B" in at.subheader[0].value


def test_multiselect_pickers_show_names_and_write_repeated_ids():
    at = run("pages/1_Memory_curves.py", models=[LLAMA31, QWEN], gpus=[H100, L4])
    assert not at.exception and not at.error
    models, gpus = at.multiselect(key="models"), at.multiselect(key="gpus")
    assert models.value == [LLAMA31, QWEN]
    assert [s.split(" · ")[0] for s in shown_all(models)] == ["Llama 3.1 8B", "Qwen2.5 7B"]
    assert shown_all(gpus) == ["H100 SXM5 80GB", "L4"]
    models.unselect(LLAMA31).run()
    assert url(at, "models") == [QWEN]
    gpus.select("nvidia-rtx-4090").run()
    assert url(at, "gpus") == [H100, L4, "nvidia-rtx-4090"]


def test_a_link_without_the_picker_keeps_the_url_free_of_defaults():
    at = run("app.py", context_len="4096")
    assert "model" not in at.query_params and "gpu" not in at.query_params
    assert at.selectbox(key="model").value == "meta-llama/Meta-Llama-3-8B"


@pytest.mark.parametrize("bad", ["nope/not-a-model", "x" * 40])
def test_an_unknown_model_in_the_link_is_named_and_dropped(bad):
    at = run("app.py", model=bad, gpu=L4)
    assert any(f"model={bad}" in e.value and "sidebar" in e.value for e in at.error)
    assert "model" not in at.query_params and url(at, "gpu") == [L4]


@pytest.mark.parametrize(("page", "params", "key", "first"), [
    ("pages/1_Memory_curves.py", {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": L4}, "models",
     "Qwen/Qwen3-VL-8B-Instruct"),
    ("pages/1_Memory_curves.py", {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": L4}, "gpus", L4),
    ("pages/3_Concurrency.py", {"model": QWEN, "gpu": "h100"}, "gpus", H100),
    ("pages/2_GQA_savings.py", {"models": "Qwen/Qwen3-VL-8B-Instruct", "gpus": L4}, "model",
     "Qwen/Qwen3-VL-8B-Instruct"),
    ("pages/2_GQA_savings.py", {"models": "Qwen/Qwen3-VL-8B-Instruct", "gpus": L4}, "gpu", L4),
])
def test_a_link_of_the_other_picker_form_leads_the_defaults(page, params, key, first):
    """A link copied from a one-model page (``model=``) and opened on a many-model page (or back) starts
    from its choice instead of the page's defaults; it showed the defaults only before."""
    at = run(page, **params)
    assert not at.exception
    widget = next(w for w in (*at.multiselect, *at.selectbox) if w.key == key)
    value = widget.value if isinstance(widget.value, list) else [widget.value]
    assert value[0] == first, value


def test_a_many_model_link_on_a_one_model_page_takes_what_the_navigation_carries():
    """The other form is read by the navigation's rule (ui.nav.carried_params for a page without the picker):
    ``models=A&models=B`` opened on a one-model page starts from A, the ``model`` a sidebar link would carry."""
    from ui.nav import carried_params

    models = ["Qwen/Qwen3-VL-8B-Instruct", QWEN]
    at = run("pages/2_GQA_savings.py", models=models)
    assert not at.exception
    carried = carried_params({"models": models}, model=None, gpu=None)["model"]
    assert [next(w for w in at.selectbox if w.key == "model").value] == carried == models[:1]


def test_a_link_with_its_own_form_ignores_the_other():
    """``models`` in the link wins over a stray ``model``."""
    at = run("pages/1_Memory_curves.py", models=QWEN, model=LLAMA31)
    assert next(w for w in at.multiselect if w.key == "models").value == [QWEN]


def test_an_unknown_id_of_the_other_form_is_skipped():
    at = run("pages/3_Concurrency.py", gpu="no-such-gpu-zz")
    assert not at.exception
    assert next(w for w in at.multiselect if w.key == "gpus").value
