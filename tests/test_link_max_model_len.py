"""A link from the Engine page gives the context length as ``max_model_len``: every page with a context length
plans it where the link has no ``context_len`` (QA, issue 27 "one link, one answer").

Kimi-K2.5 on 8 H200, ``max_model_len=65536``: the Engine page showed 24.03x at 65,536 tokens; Home, one click on,
planned its default 8,192 tokens ("up to 187 concurrent sequences") and named ``max_model_len`` as left out only
inside its folded engine panel. Expected figures are each page's own for the equivalent ``context_len`` link.
"""

from __future__ import annotations

import pytest

from tests.test_serving_app import run
from tests.tiles import metric_tiles

LINK = {"model": "moonshotai/Kimi-K2.5", "gpu": "nvidia-h200-sxm", "tensor_parallel_size": "8",
        "kv_cache_dtype": "fp8", "max_num_seqs": "64"}


def _tiles(at) -> dict[str, str]:
    assert not at.exception and not at.error, [e.value for e in at.error]
    return {t.label: t.value for t in metric_tiles(at)}


@pytest.mark.parametrize("page", ["app.py", "pages/3_Concurrency.py", "pages/2_GQA_savings.py"])
def test_a_max_model_len_link_plans_that_length(page):
    by_engine_key = run(page, {**LINK, "max_model_len": "65536"})
    by_context = run(page, {**LINK, "context_len": "65536", "max_model_len": "65536"})
    assert by_engine_key.number_input(key="context_len").value == 65536
    assert _tiles(by_engine_key) == _tiles(by_context)


def test_home_no_longer_names_it_left_out():
    at = run("app.py", {**LINK, "max_model_len": "65536"})
    assert not any("max_model_len=65536" in c.value for c in [*at.markdown, *at.caption]), "named as left out"


def test_context_len_wins_and_a_bad_max_model_len_is_not_taken():
    both = run("app.py", {**LINK, "context_len": "16384", "max_model_len": "65536"})
    assert both.number_input(key="context_len").value == 16384
    bad = run("app.py", {**LINK, "max_model_len": "0"})
    assert bad.number_input(key="context_len").value == 8192  # the field's default


@pytest.mark.parametrize("page", ["app.py", "pages/3_Concurrency.py", "pages/2_GQA_savings.py"])
def test_a_bad_max_model_len_is_named_where_the_context_would_take_it(page):
    """QA: ``/Concurrency?max_model_len=4096.5`` planned 8,192 tokens with no word (the Engine page names it)."""
    at = run(page, {**LINK, "max_model_len": "4096.5"})
    said = [e.value for e in at.error if "`max_model_len=4096.5`" in e.value]
    assert len(said) == 1 and "8,192" in said[0], [e.value for e in at.error]
    engine = run("pages/5_Engine.py", {**LINK, "max_model_len": "4096.5"})
    assert sum("`max_model_len=4096.5`" in e.value for e in engine.error) == 1  # its own input's message, once
