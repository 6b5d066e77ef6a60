"""The link's ``speculative_config`` (the CLI's ``--speculative-config JSON``) and unknown link keys.

QA, stop 47: ``/Engine?...&speculative_config={"method":"mtp","num_speculative_tokens":1}`` planned no drafter in
silence (1,307,520 tokens, where ``plan --speculative-config`` gives 1,254,656), a bad JSON got no message, and a
mistyped key (``context_length=``) was dropped without a word. The expected figures come from the same link
written with the part keys (``speculative_method``, ``num_speculative_tokens``), which already worked, and from
the CLI's own parser (:func:`planner.cli.serving.speculative_from_args`).
"""

from __future__ import annotations

import argparse
import json

import pytest
from streamlit.runtime.state.query_params import QueryParams

from planner.cli.serving import speculative_from_args
from tests.test_app import metrics, run_page
from ui.link_guard import LINK_KEYS, SECTION_KEYS, guard
from ui.nav import PAGES

GLM = {"model": "zai-org/GLM-5.2-FP8", "gpu": "nvidia-b200", "num_gpus": "8"}
LLAMA = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpu": "nvidia-l4", "context_len": "4096"}
MTP_JSON = '{"method":"mtp","num_speculative_tokens":1}'
SERVING_PAGES = ("app.py", "pages/2_GQA_savings.py", "pages/3_Concurrency.py", "pages/5_Engine.py",
                 "pages/6_Allocation.py", "pages/7_Find_a_GPU_setup.py")
"""Every page that reads the serving features (ui.serving.serving_inputs)."""


def _messages(at) -> list[str]:
    return [m.value for m in (*at.warning, *at.error, *at.info)]


def _figures(at) -> tuple:
    """What a page shows: its metrics, tables, captions (the users line) and launch commands."""
    return (metrics(at), [d.value.to_csv() for d in at.dataframe], [c.value for c in at.caption],
            [c.value for c in at.code])


def _launch(at) -> str:
    return "\n".join(c.value for c in at.code)


def test_engine_page_plans_the_json_as_its_parts():
    """The QA link: the JSON plans what ``speculative_method=mtp&num_speculative_tokens=1`` plans."""
    parts = run_page("pages/5_Engine.py", {**GLM, "speculative_method": "mtp", "num_speculative_tokens": "1"})
    bare = run_page("pages/5_Engine.py", GLM)
    at = run_page("pages/5_Engine.py", {**GLM, "speculative_config": MTP_JSON})
    assert not at.exception and not at.error, [e.value for e in at.error]
    key = "KV cache size [tokens, as printed]"
    assert metrics(at)[key] == metrics(parts)[key] != metrics(bare)[key]
    assert metrics(at) == metrics(parts)
    assert "--speculative-config" in _launch(at) and '"method": "mtp"' in _launch(at)


@pytest.mark.parametrize("page", SERVING_PAGES)
def test_every_serving_page_reads_the_json(page):
    params = {**GLM, "context_len": "8192"}
    parts = run_page(page, {**params, "speculative_method": "mtp", "num_speculative_tokens": "1"})
    at = run_page(page, {**params, "speculative_config": MTP_JSON})
    assert not at.exception
    assert _figures(at) == _figures(parts) != _figures(run_page(page, params))
    assert [m for m in _messages(at) if "speculative" in m] == [m for m in _messages(parts) if "speculative" in m]


BAD = (
    ('{"method":"ngram","num_speculative_tokens":-3}', "num_speculative_tokens"),
    ('{"method":"mtp","num_speculative_tokens":1}', "num_nextn_predict_layers"),  # Llama has no MTP layers
    ('{"method":"eagle3","num_speculative_tokens":3}', "head"),
    ('{"method": "mtp",', "JSON"),
    ('{"method":"ngram","temperature":1}', "temperature"),
    ('["mtp"]', "JSON object"),
)


@pytest.mark.parametrize(("text", "named"), BAD)
def test_a_bad_json_is_named_and_kept(text, named):
    """As the CLI refuses it (the same message), the page names what is wrong, plans without speculative decoding
    and keeps the user's text in the link."""
    with pytest.raises(ValueError) as cli:  # the CLI's reading: parse, then validate (serving_from_args)
        speculative_from_args(argparse.Namespace(speculative_config=text), {}).validate()
    at = run_page("app.py", {**LLAMA, "speculative_config": text})
    bare = run_page("app.py", LLAMA)
    assert not at.exception
    said = [m.replace("\\", "") for m in _messages(at) if "speculative_config" in m]  # Markdown escapes out
    assert len(said) == 1 and named in said[0] and str(cli.value).split(";")[0][:40] in said[0], said
    assert at.query_params["speculative_config"] == [text] or at.query_params["speculative_config"] == text
    assert metrics(at) == metrics(bare)


def test_speculative_method_wins_over_the_json_method_as_on_the_cli():
    """``--speculative-method`` overrides the JSON's method on the CLI (planner/cli/serving.py); the link the same,
    and the page says so."""
    text = json.dumps({"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3})
    at = run_page("app.py", {**LLAMA, "speculative_config": text, "speculative_method": "eagle3"})
    parts = run_page("app.py", {**LLAMA, "speculative_method": "eagle3", "num_speculative_tokens": "3"})
    assert not at.exception
    assert metrics(at) == metrics(parts) and "Drafter weights (eagle3)" in metrics(at)
    [said] = [e.value for e in at.error]  # the one link problem
    assert "`speculative_method=eagle3`" in said and "eagle" in said and "wins" in said
    assert "yuhuili/EAGLE-LLaMA3.1-Instruct-8B" in _launch(at)  # the JSON's head stays


def test_the_json_alone_turns_the_features_line_on_other_pages():
    """A page that does not read serving features names the JSON among what it leaves out."""
    at = run_page("pages/1_Memory_curves.py", {**LLAMA, "speculative_config": MTP_JSON})
    assert not at.exception
    assert any("speculative_config" in m for m in (*_messages(at), *(c.value for c in at.caption))), _messages(at)


# --- unknown keys ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "meant"), [("context_length", "context_len"), ("tp", "tensor_parallel_size"),
                                            ("modle", "model"), ("num_gpu", "num_gpus")])
def test_a_mistyped_key_is_named_with_the_closest_keys(key, meant):
    result = guard({key: ["4096"], "model": ["x"]})
    [message] = result.problems
    assert f"`{key}`" in message and f"`{meant}`" in message
    assert "model" not in result.changes  # the rest of the link stays


def test_an_unknown_key_without_a_near_key_is_named():
    [message] = guard({"foo": ["bar"]}).problems
    assert "`foo`" in message


def test_keys_of_streamlit_tabs_trackers_and_other_pages_are_not_flagged():
    keys = {"embed": ["true"], "embed_options": ["dark_theme"], "utm_source": ["x"], "fbclid": ["x"],
            "speculative_config": [MTP_JSON], "num_nodes": ["2"], "find_setup": ["x"], "prompt_p95": ["900"],
            "output_p95": ["400"], **{k: ["x"] for k in SECTION_KEYS}}
    assert guard(keys).problems == []


def test_home_names_a_mistyped_key_and_keeps_the_rest():
    at = run_page("app.py", {**LLAMA, "context_length": "16384"})
    ok = run_page("app.py", LLAMA)
    assert not at.exception
    [said] = [m for m in _messages(at) if "context_length" in m]
    assert "`context_len`" in said
    assert metrics(at) == metrics(ok)  # the model, GPU and context length of the link still planned
    assert at.query_params["model"] in (LLAMA["model"], [LLAMA["model"]])


def test_every_key_a_page_reads_is_known(monkeypatch):
    """The known keys are the union of what every page reads: each key a page binds or reads from the link (seen on
    every page under a link that opens the serving inputs) is in :data:`ui.link_guard.LINK_KEYS`, so the link a
    page's navigation carries to another page is never flagged there."""
    seen: set[str] = set()
    for name in ("__getitem__", "get_all", "__contains__", "bind_widget"):
        original = getattr(QueryParams, name)

        def spy(self, *args, _original=original, **kwargs):
            seen.add(args[0] if args else kwargs.get("param_key", kwargs.get("key")))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(QueryParams, name, spy)
    for page in PAGES:
        run_page(page.path, {"model": "Qwen/Qwen3-VL-8B-Instruct", "speculative_method": "draft_model",
                             "enable_lora": "true", "kv_offloading_size": "64"})
    assert {k for k in seen if isinstance(k, str)} - LINK_KEYS == set()
