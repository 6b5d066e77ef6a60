"""Home names the kind of windowed layer a model has (QA, stop 42).

Llama 4 Scout on 4 x H100 at 1,000,000 tokens read "(of which ... only while the sequence is prefilled: a chunk of
batched tokens in its sliding-window layers)". Llama 4 has chunked local attention (config ``attention_chunk_size``
8,192; vLLM ``ChunkedLocalAttentionSpec``), not a sliding window. The text now names the kinds the model has
(:func:`planner.model.kv.windowed_layer_kinds`).
"""

from __future__ import annotations


import pytest

from model_catalog import model_spec
from planner.model.kv import windowed_layer_kinds
from tests.test_app import run_page


@pytest.mark.parametrize(("model_id", "kinds"), [
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", ("chunked local-attention",)),
    ("openai/gpt-oss-120b", ("sliding-window",)),
    ("deepseek-ai/DeepSeek-V4-Flash", ("sliding-window", "compressed-attention")),
    ("Qwen/Qwen3.6-35B-A3B", ()),
    ("meta-llama/Meta-Llama-3-8B", ())])
def test_windowed_layer_kinds(model_id, kinds):
    assert windowed_layer_kinds(model_spec(model_id)) == kinds


@pytest.mark.parametrize(("params", "words", "not_words"), [
    ({"model": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "gpu": "nvidia-h100-sxm-80gb", "num_gpus": "4",
      "context_len": "1000000", "batch_size": "1"}, "in its chunked local-attention layers", "sliding-window"),
    ({"model": "openai/gpt-oss-120b", "gpu": "nvidia-h200-sxm", "context_len": "32768", "batch_size": "1"},
     "in its sliding-window layers", "chunked")], ids=["llama-4", "gpt-oss"])
def test_home_s_prefill_share_names_the_model_s_window_kind(params, words, not_words):
    at = run_page("app.py", params)
    assert not at.exception
    text = next(s.value for s in at.success if s.value.startswith("**Fits.**"))
    share = text[text.index("only while"):]
    assert words in share and not_words not in share, share
