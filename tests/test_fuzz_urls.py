"""Fuzzing the shared links: every page, any query string, a clear answer and never a traceback.

Hypothesis draws query strings for every page (``app.py`` and each
``pages/*.py``) and runs the page in ``streamlit.testing.v1.AppTest``:
random text, huge and negative numbers, ``inf``/``nan`` spellings, numbers in
other scripts (``١٢٣``), every field's limits (and just past them), unknown and
valid ids, repeated keys and very long values, on the pages' own keys and on
unknown ones. Properties:

* no exception element and no uncaught exception (``at.exception`` empty);
* the page still answers: its title is drawn;
* every ``st.error`` is a sentence that says what to change (it names the
  sidebar or the link), never a traceback.

Example counts are modest (the file runs in about two minutes on two cores);
``FUZZ_EXAMPLES`` raises them for a longer local run. In CI (``CI`` set) the
draws are derandomized so a run is reproducible. Planner-level properties
live in ``tests/test_planner_properties.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

import ui.engine  # noqa: F401 - registers the engine and traffic number fields in ui.inputs.NUMBER_FIELDS
from model_catalog import model_ids
from model_catalog.gpus import gpu_ids
from planner.engines.profiles import ENGINE_CHOICES
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from tests.e2e_helpers import in_ci
from ui.inputs import NUMBER_FIELDS

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["app.py", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "pages").glob("*.py"))]
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "10"))
TIMEOUT_S = 60

SELECT_KEYS = ("model", "models", "gpu", "gpus", "weight_dtype", "kv_cache_dtype", "kv_cache_dtypes", "engine",
               "search", "custom_model", "custom_gpu")
KEYS = (*SELECT_KEYS, *sorted(NUMBER_FIELDS))
"""Every URL key some page binds (numbers from ui.inputs, ui.traffic and ui.engine)."""

VALID = (*model_ids()[:6], "h100", "rtx-3090", "meta-llama/llama-2-7b-hf", *gpu_ids()[:6], *WEIGHT_DTYPES,
         *KV_CACHE_DTYPE_CHOICES, *ENGINE_CHOICES, "custom")
"""Values some key accepts (ids, aliases, dtypes, engines), so valid and invalid values mix."""

SPECIAL = ("", " ", "0", "-0", "-1", "1", "+7", "inf", "-inf", "+inf", "Infinity", "-Infinity", "nan", "NaN",
           "-nan", "1e5", "1e308", "1e400", "-1e400", "1e-400", "5e-324", "0.5", ".5", "5.", "0x10", "1_000",
           "١٢٣", "²", "½", "9" * 40, "-" + "9" * 40, "9" * 400, "0.0000001", "none", "null", "None", "true",
           "[]", "{}", "%00", "\x00", "a&b=c", "../../etc/passwd", "<script>alert(1)</script>", "v1.", "v1.AAAA",
           "💥", "x" * 10_000)
"""Hand-picked nasty values: float spellings Python accepts, other scripts' digits, overflow, markup."""

BOUNDS = tuple(sorted({f"{x:g}" if f.is_float else str(x) for f in NUMBER_FIELDS.values()
                       for v in (f.min_value, f.max_value) for x in (v, v * 2, v - 1)}))
"""Every number field's limits, doubled and minus one: valid extremes (slowest plans) and just-outside values."""

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)  # URLs cannot carry surrogates
raw_value = st.one_of(
    st.sampled_from(SPECIAL),
    st.sampled_from(VALID),
    st.sampled_from(BOUNDS),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    _text,
)
link_value = st.one_of(raw_value, st.lists(raw_value, min_size=2, max_size=4))  # a list = a repeated key
query = st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(min_size=1, max_size=12)), link_value, max_size=6)

FUZZ_SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=in_ci(), database=None if in_ci() else
                         settings.default.database,
                         suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                                HealthCheck.data_too_large])


def run_page(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=TIMEOUT_S)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def check_answer(at: AppTest, params: dict) -> None:
    """The page answered: no exception, a title, and only actionable error messages."""
    assert not at.exception, (params, [e.value for e in at.exception])
    assert at.title, (params, "the page drew no title")
    for error in at.error:
        text = error.value
        assert text.strip(), (params, "an empty error")
        assert "Traceback" not in text, (params, text)
        assert any(word in text.lower() for word in ("sidebar", "link")), (params, "says what to change", text)


@pytest.mark.parametrize("page", PAGES)
@FUZZ_SETTINGS
@given(params=query)
@example(params={"context_len": "inf", "batch_size": "-inf", "gpu_memory_utilization": "nan", "num_gpus": "1e400"})
@example(params={"model": ["nope", "meta-llama/Meta-Llama-3-8B", "zzz"], "gpu": ["h100", "tpu"],
                 "models": ["x" * 10_000, "h100"], "gpus": ["nvidia-l4"] * 12})
@example(params={"context_len": "١٢٣", "users": "1_000", "max_model_len": "9" * 400, "seed": "-1",
                 "overhead_gib": "1e308", "prefix_hit_fraction": "NaN", "host_link_gb_s": "-0"})
@example(params={"custom_model": "v1.AAAA", "custom_gpu": "x" * 10_000, "model": "custom", "gpu": "custom"})
@example(params={"engine": "tensorrt", "kv_cache_dtypes": ["fp9", "int4", "int4"], "search": "\x00<b>",
                 "weight_dtype": ["fp16", "int3"]})
@example(params={"prompt_len": "131072"})  # a pool that would not start: its error says where to change it
def test_any_link_gets_a_clear_answer(page, params):
    check_answer(run_page(page, params), params)
