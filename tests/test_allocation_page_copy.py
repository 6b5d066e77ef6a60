"""The Allocation page's "slices" sentence: plain English, and honest about what its slices count.

Issue 27 (copy): "a 800 tokens sequence"-style phrases read badly; the slices sentence said "the naive 8,192 tokens
reservation". DeepSeek-V4 (stop 42 leftover): its slices count tokens, while its windows and compressed layers make the
reservation's unused bytes another share, which the table beside the sentence gives.
"""

import re

import pytest

from tests.test_app import run_page


def _slice_sentence(model: str, num_gpus: int) -> str:
    at = run_page("pages/6_Allocation.py", {"model": model, "num_gpus": str(num_gpus), "gpu": "nvidia-h200"})
    assert not at.exception
    found = [m.value for m in at.markdown if "slices of" in m.value]
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("model", ["meta-llama/Llama-3.1-8B-Instruct", "deepseek-ai/DeepSeek-V4-Flash"])
def test_slice_sentence_reads_as_english(model):
    text = _slice_sentence(model, 8 if "V4" in model else 1)
    assert "tokens reservation" not in text
    assert re.search(r"naive reservation of [\d,]+ tokens into 32 slices of [\d,]+ tokens each", text)


def test_v4_slices_say_they_count_tokens_and_give_the_byte_share():
    text = _slice_sentence("deepseek-ai/DeepSeek-V4-Flash", 8)
    wasted, total = map(int, re.search(r"\*\*(\d+) of (\d+)\*\*", text).groups())
    share = float(re.search(r"in bytes ([\d.]+)% of the reservation is unused", text).group(1)) / 100
    assert abs(share - wasted / total) > 0.05  # the reason the clause is there


def test_dense_model_gets_no_token_slot_clause():
    assert "count tokens" not in _slice_sentence("meta-llama/Llama-3.1-8B-Instruct", 1)
