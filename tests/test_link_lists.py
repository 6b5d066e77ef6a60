"""A comma-separated multi-value link key reads as the key repeated (QA, stop 46).

``/Concurrency?model=Qwen/Qwen3.5-27B&gpus=nvidia-h100-sxm-80gb,nvidia-b200`` said "unknown GPU id ... left out"
and showed five default GPUs, where ``&gpus=nvidia-h100-sxm-80gb&gpus=nvidia-b200`` showed the two. Every key of
:data:`ui.link_guard.MULTI_VALUE_KEYS` now splits a comma list (ui/link_guard.py, rule 3), within the same limits.
"""

from __future__ import annotations

from tests.test_app import run_page
from ui.link_guard import MAX_ID_CHARS, MAX_LIST_CHARS, MAX_VALUES_PER_KEY, MULTI_VALUE_KEYS, guard

H100, B200 = "nvidia-h100-sxm-80gb", "nvidia-b200"


def test_every_multi_value_key_splits_a_comma_list():
    for key in MULTI_VALUE_KEYS:
        result = guard({key: ["a, b,,c"]})
        assert result.changes == {key: ["a", "b", "c"]} and not result.problems, key
    assert guard({"gpus": [f"{H100},{B200}"]}).changes == {"gpus": [H100, B200]}
    assert guard({"gpus": [H100, B200]}).changes == {}  # repeated keys stay as they are


def test_a_comma_list_keeps_the_count_and_length_limits():
    many = guard({"gpus": [",".join(f"g{i}" for i in range(40))]})
    assert many.changes == {"gpus": [f"g{i}" for i in range(MAX_VALUES_PER_KEY)]} and many.listed == {"gpus": 40}
    long_id = guard({"gpus": [f"{H100},{'x' * (MAX_ID_CHARS + 1)}"]})
    assert long_id.changes == {"gpus": [H100]} and len(long_id.problems) == 1
    huge = guard({"models": ["a," * MAX_LIST_CHARS]})
    assert huge.changes == {"models": None} and f"{MAX_LIST_CHARS:,}" in huge.problems[0]
    assert guard({"model": [f"{H100},{B200}"]}).changes == {}  # a single-value key is not split


def _concurrency(errors: bool = False, **params):
    at = run_page("pages/3_Concurrency.py", params)
    assert not at.exception and (errors or not at.error)
    return at


def test_concurrency_reads_a_comma_list_as_repeated_keys():
    comma = _concurrency(model="Qwen/Qwen3.5-27B", gpus=f"{H100},{B200}")
    repeated = _concurrency(model="Qwen/Qwen3.5-27B", gpus=[H100, B200])
    assert not [m.value for m in (*comma.warning, *comma.error) if "unknown GPU" in m.value]
    assert comma.multiselect[0].value == repeated.multiselect[0].value
    assert comma.multiselect[0].label.startswith("GPU") and len(comma.multiselect[0].value) == 2


def test_only_the_unknown_id_of_a_comma_list_is_named():
    at = _concurrency(errors=True, model="Qwen/Qwen3.5-27B", gpus=f"{H100},no-such-gpu")
    named = " ".join(m.value for m in (*at.warning, *at.error) if "no-such-gpu" in m.value)
    assert named and H100 not in named
    assert len(at.multiselect[0].value) == 1
