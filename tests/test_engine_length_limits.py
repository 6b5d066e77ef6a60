"""A length past the model's limit under TensorRT-LLM, TGI, llama.cpp and transformers: each engine's own answer.

vLLM and SGLang refuse it (tests/test_sglang_context_limit.py); the other engines used to plan it in silence as
starting, e.g. Llama 2 (limit 4,096) at 8,192 tokens. What each engine does instead:

* TensorRT-LLM, PyTorch backend: clamps ``max_seq_len`` to the model's and warns
  (tensorrt_llm/_torch/pyexecutor/model_engine.py ``PyTorchModelEngine._init_max_seq_len``);
* trtllm-build: builds at the length asked and warns that accuracy might be affected
  (tensorrt_llm/builder.py ``_init_max_seq_len``);
* TGI: neither refuses nor warns (launcher/src/main.rs only caps its defaults at the limit);
* llama.cpp: warns of a training context overflow (src/llama-context.cpp), and llama-server caps each slot at the
  training context (tools/server/server-context.cpp);
* transformers: generate() warns (generation/stopping_criteria.py ``MaxLengthCriteria``) and runs for rotary
  models; GPT-2's learned position table raises ``IndexError`` past its rows (models/gpt2/modeling_gpt2.py).

Expected figures come from the model spec (its ``max_position_embeddings``), never typed in.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from tests.test_app import run_page

LLAMA2, GPT2, H100 = "meta-llama/Llama-2-7b-hf", "openai-community/gpt2", "nvidia-h100-sxm-80gb"

WORDS = {
    "trtllm": "Setting max_seq_len to",
    "trtllm-engine": "the model accuracy might be affected",
    "tgi": "max_position_embeddings",
    "llama.cpp": "possible training context overflow",
    "transformers": "friendly reminder",
}
"""The engine's own words (or, for TGI, the config key it leaves unchecked) in the plan's warning."""


def _plan(engine: str, model_id: str, length: int):
    model, gpu = model_spec(model_id), get_gpu(H100)
    return plan_engine(model, gpu.framework_memory_bytes,
                       EngineRequest(engine=engine, gpu_name=gpu.name, max_model_len=length))


@pytest.mark.parametrize("engine", sorted(WORDS))
def test_a_length_past_the_limit_starts_with_the_engine_s_warning(engine):
    limit = model_spec(LLAMA2).max_position_embeddings
    over = _plan(engine, LLAMA2, 2 * limit)
    assert over.starts, over.reasons
    said = " ".join(over.warnings)
    assert WORDS[engine] in said and str(limit) in said.replace(",", "")
    at_limit = _plan(engine, LLAMA2, limit)
    assert not any(WORDS[engine] in w for w in at_limit.warnings)


def test_trtllm_pytorch_plans_at_the_clamped_length():
    limit = model_spec(LLAMA2).max_position_embeddings
    over, at_limit = _plan("trtllm", LLAMA2, 2 * limit), _plan("trtllm", LLAMA2, limit)
    assert over.max_model_len == limit
    assert over.max_concurrency == at_limit.max_concurrency
    assert over.engine_kv_cache_tokens == at_limit.engine_kv_cache_tokens
    assert f"--max_seq_len {limit}" in over.launch_command


def test_trtllm_build_keeps_the_length_asked():
    limit = model_spec(LLAMA2).max_position_embeddings
    assert _plan("trtllm-engine", LLAMA2, 2 * limit).max_model_len == 2 * limit


def test_llama_server_caps_each_slot_at_the_training_context_but_allocates_the_cells_asked():
    limit = model_spec(LLAMA2).max_position_embeddings
    over, at_limit = _plan("llama.cpp", LLAMA2, 2 * limit), _plan("llama.cpp", LLAMA2, limit)
    assert over.engine_max_model_len == limit
    assert over.available_kv_cache_bytes == 2 * at_limit.available_kv_cache_bytes  # the KV buffer holds -c cells
    assert any("capping" in w for w in over.warnings)


def test_transformers_refuses_gpt2_past_its_position_table():
    limit = model_spec(GPT2).max_position_embeddings
    over = _plan("transformers", GPT2, 2 * limit)
    assert not over.starts
    assert any("index out of range" in r and str(limit) in r.replace(",", "") for r in over.reasons)
    assert _plan("transformers", GPT2, limit).starts


def test_tgi_names_gpt2_s_zeroed_positions():
    limit = model_spec(GPT2).max_position_embeddings
    over = _plan("tgi", GPT2, 2 * limit)
    assert over.starts
    assert any("zero" in w for w in over.warnings)


@pytest.mark.parametrize("engine", sorted(WORDS))
def test_cli_plan_prints_the_engine_s_warning(engine, capsys):
    limit = model_spec(LLAMA2).max_position_embeddings
    assert main(["plan", "--model", LLAMA2, "--gpu", H100, "--engine", engine, "--context-len", str(2 * limit),
                 "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)["engine_plan"]
    assert out["starts"] is True
    assert any(WORDS[engine] in w for w in out["warnings"])
    assert main(["plan", "--model", LLAMA2, "--gpu", H100, "--engine", engine, "--context-len", str(2 * limit)]) == 0
    assert any(line.strip().startswith("warning:") and WORDS[engine] in line
               for line in capsys.readouterr().out.splitlines())


def _page_warnings(model_id: str, engine: str) -> str:
    """The Engine page's warnings at twice the model's limit."""
    length = 2 * model_spec(model_id).max_position_embeddings
    at = run_page("pages/5_Engine.py", {"model": model_id, "gpu": H100, "engine": engine, "max_model_len": str(length)})
    assert not at.exception
    return " ".join(w.value for w in at.warning)


@pytest.mark.parametrize("engine", sorted(WORDS))
def test_engine_page_shows_the_engine_s_warning(engine):
    assert WORDS[engine] in _page_warnings(LLAMA2, engine)


def test_engine_page_says_transformers_fails_on_gpt2_past_its_table():
    said = _page_warnings(GPT2, "transformers")
    assert "index out of range" in said and "run out of memory" not in said
