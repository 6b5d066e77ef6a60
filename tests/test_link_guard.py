"""Hostile and mangled links: bounded values, repeated keys, bad switches (ui/link_guard.py).

The rules are checked on :func:`ui.link_guard.guard` directly (pure), then on real
pages in ``AppTest``: the 100,000-character ``model=`` that once cost 18 s of server
CPU, a repeated ``model=``, and ``log_y=maybe``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog.share_codec import MAX_CODE_CHARS
from ui.link_guard import ECHO_CHARS, MAX_ID_CHARS, MAX_NUMBER_CHARS, MAX_VALUES_PER_KEY, guard, value_limit

ROOT = Path(__file__).resolve().parents[1]
LLAMA = "meta-llama/Meta-Llama-3-8B"


def test_limits_per_key():
    assert value_limit("model") == value_limit("gpus") == MAX_ID_CHARS == 200
    assert value_limit("context_len") == value_limit("gpu_memory_utilization") == MAX_NUMBER_CHARS == 32
    assert value_limit("custom_model") >= MAX_CODE_CHARS  # what the share codec can produce still fits


def test_a_huge_value_is_dropped_and_not_echoed():
    result = guard({"model": ["A" * 100_000], "gpu": ["nvidia-l4"]})
    assert result.changes == {"model": None}
    [message] = result.problems
    assert "100,000 characters" in message and "at most 200" in message
    assert len(message) < 400 and "A" * (ECHO_CHARS + 1) not in message


def test_values_at_the_limit_pass():
    assert guard({"model": ["a" * MAX_ID_CHARS], "context_len": ["9" * MAX_NUMBER_CHARS]}).changes == {}
    assert guard({"context_len": ["9" * (MAX_NUMBER_CHARS + 1)]}).changes == {"context_len": None}


def test_a_repeated_single_value_key_says_which_value_is_used():
    result = guard({"model": ["Qwen/Qwen2.5-7B", LLAMA], "models": ["a", "b"]})
    assert result.changes == {"model": [LLAMA]}  # the last one, as Streamlit reads it; models repeat by design
    [message] = result.problems
    assert "appears 2 times" in message and f"using the last one, `{LLAMA}`" in message


@pytest.mark.parametrize(("raw", "kept"), [("true", ["true"]), ("false", ["false"]), ("maybe", None)])
def test_switch_values(raw, kept):
    result = guard({"log_y": [raw]})
    assert result.changes.get("log_y", [raw]) == kept
    assert bool(result.problems) == (kept is None)
    if kept is None:
        assert "`log_y=maybe` is not `true` or `false`" in result.problems[0]


def test_multi_value_keys_are_capped():
    result = guard({"gpus": [f"g{i}" for i in range(40)]})
    assert result.changes == {"gpus": [f"g{i}" for i in range(MAX_VALUES_PER_KEY)]}
    assert result.listed == {"gpus": 40} and not result.problems  # the page that reads it says so, once


def _run(page: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=60)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_a_100_kb_model_value_gets_a_short_message_and_the_default_model():
    at = _run("app.py", model="A" * 100_000)
    assert not at.exception
    messages = [w.value for w in at.warning] + [e.value for e in at.error]
    assert any("100,000 characters" in m for m in messages), messages
    assert all(len(m) < 1_000 for m in messages)
    assert at.selectbox(key="model").value == LLAMA  # the default: nothing else of the link was lost


def test_a_repeated_model_key_on_a_page_names_the_value_used():
    at = _run("app.py", model=["Qwen/Qwen2.5-7B", LLAMA], gpu="nvidia-l4")
    assert not at.exception
    assert any("appears 2 times" in w.value and LLAMA in w.value for w in at.warning)
    assert at.selectbox(key="model").value == LLAMA
    assert at.selectbox(key="gpu").value == "nvidia-l4"


def test_log_y_maybe_is_reported():
    at = _run("pages/1_Memory_curves.py", log_y="maybe")
    assert not at.exception
    assert any("log_y=maybe" in w.value for w in at.warning)
    assert at.toggle(key="log_y").value is False


def test_a_key_written_as_its_cli_flag_is_read_under_the_page_s_name():
    """QA round: ``/?context-len=4096`` (the CLI's spelling) showed the default 8,192 with no word. It is read as
    ``context_len`` and said so; a tracker's key (``utm_source``) stays unread and unmentioned."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    result = guard({"context-len": ["4096"], "utm_source": ["chat"], "--Batch-Size": ["3"], "batch_size": ["2"]})
    assert result.changes == {"context_len": ["4096"], "context-len": None, "--Batch-Size": None}
    assert len(result.problems) == 2 and "the link now says `context_len`" in result.problems[0]
    assert "`batch_size` was used" in result.problems[1]

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=90)
    at.query_params["context-len"] = "4096"
    at.run()
    assert not at.exception
    assert at.number_input(key="context_len").value == 4096
    assert any("CLI spelling" in e.value for e in [*at.error, *at.warning, *at.info]), \
        [e.value for e in [*at.error, *at.warning, *at.info]]


def test_a_cli_flag_for_a_gpu_or_model_of_ones_own_says_where_to_set_it():
    """QA: ``/?model=Qwen/Qwen3-8B&gpu_memory_gib=40`` (the CLI's ``--gpu-memory-gib``) planned an H100 in
    silence. The key is reported with the flag and the sidebar panel that sets such a GPU; the rest of the link is
    planned as it says, and a tracker's key stays unmentioned."""
    result = guard({"gpu_memory_gib": ["40"], "config": ["x.json"], "utm_source": ["mail"]})
    said = " ".join(result.problems)
    assert "`gpu_memory_gib`" in said and "--gpu-memory-gib" in said and "Custom model & GPU" in said, said
    assert "`config`" in said and "utm_source" not in said
    at = _run("app.py", model="Qwen/Qwen3-8B", gpu_memory_gib="40")
    assert not at.exception
    assert any("`gpu_memory_gib`" in w.value for w in at.warning)
    assert at.selectbox(key="model").value == "Qwen/Qwen3-8B"


def test_a_bad_id_under_the_other_picker_key_is_said():
    """QA: ``/Memory_curves?gpu=nvidia-zzz`` (the navigation carries ``gpu`` to a page that picks ``gpus``) drew
    the default GPUs with no word; a good ``gpu`` leads the list, a bad one is reported with the catalog's
    suggestion, and the page still plans its defaults."""
    at = _run("pages/1_Memory_curves.py", gpu="nvidia-zzz")
    assert not at.exception
    said = [w.value for w in list(at.warning) + list(at.error) if "`gpu=nvidia-zzz`" in w.value]
    assert len(said) == 1 and "unknown GPU id" in said[0] and "`gpus` list starts with its defaults" in said[0]
    good = _run("pages/1_Memory_curves.py", gpu="nvidia-l40s")
    assert good.multiselect(key="gpus").value[0] == "nvidia-l40s" and not good.warning and not good.error
    home = _run("app.py", models="nobody/nothing")
    assert any("`models=nobody/nothing`" in e.value and "default for `model`" in e.value
               for e in list(home.warning) + list(home.error)), [e.value for e in home.error]


def test_a_one_gpu_link_plans_that_gpu_on_a_many_gpu_page_as_the_navigation_does():
    """QA (stop 44): ``/Concurrency?...&gpu=nvidia-h200-sxm`` opened directly planned the H200 and four default GPUs
    nobody picked, each with a "does not fit" warning; through the sidebar (``gpus=nvidia-h200-sxm``) the H200 alone.
    Both now plan the link's GPU alone."""
    link = {"model": "deepseek-ai/DeepSeek-V3.2", "num_gpus": "8", "context_len": "131072", "kv_cache_dtype": "fp8"}
    direct = _run("pages/3_Concurrency.py", gpu="nvidia-h200-sxm", **link)
    through = _run("pages/3_Concurrency.py", gpus="nvidia-h200-sxm", **link)
    assert direct.multiselect(key="gpus").value == through.multiselect(key="gpus").value == ["nvidia-h200-sxm"]
    assert not any("does not fit" in w.value for w in direct.warning), [w.value for w in direct.warning]
    defaults = _run("pages/3_Concurrency.py", **link)
    assert len(defaults.multiselect(key="gpus").value) > 1  # no GPU in the link: the page's comparison set


def test_custom_under_the_other_picker_key_without_a_code_is_said():
    """QA: ``/Memory_curves?gpu=custom`` and ``?model=custom`` (no share code) drew the defaults in silence, where
    Home said the link carries no code; the other-form reading now says the same."""
    for key, code in (("gpu", "custom_gpu"), ("model", "custom_model")):
        at = _run("pages/1_Memory_curves.py", **{key: "custom"})
        assert not at.exception
        said = " ".join(w.value for w in list(at.warning) + list(at.error))
        assert f"`{key}=custom`" in said and f"carries no `{code}` code" in said, said


def test_engine_switches_take_true_or_false_on_every_page():
    """QA: ``/Engine?enforce_eager=maybe`` (and Disaggregation's copy of the switches) planned the switch off with no
    word, while Home said the value was neither true nor false. The guard drops such a value on every page with one
    message that points at the Engine page's switch."""
    from tests.test_serving_app import run

    for page in ("pages/5_Engine.py", "pages/8_Disaggregation.py", "app.py", "pages/3_Concurrency.py"):
        at = run(page, {"enforce_eager": "maybe", "use_deep_gemm": "on"})
        said = [w.value for w in [*at.warning, *at.error]]
        for key, value in (("enforce_eager", "maybe"), ("use_deep_gemm", "on")):
            assert sum(f"`{key}={value}`" in s for s in said) == 1, (page, said)
        assert any("switch on the Engine page" in s for s in said), (page, said)
        assert not at.exception
