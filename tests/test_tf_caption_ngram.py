"""QA, stop 47: the transformers caption, an n-gram override of a JSON's draft model, and n-gram's profile pass.

1. ``/Engine?engine=transformers&model=meta-llama/Llama-2-7b-hf&gpu=nvidia-h100-sxm-80gb&context_len=2048`` said
   transformers "allocates 79.19 GiB ... and leaves the rest of the card free": the whole card at the 65 sequences
   that fit, not the one sequence asked. The figure expected here is the plan's own weights + activation peak + the
   asked sequences x one sequence's cache.
2. ``speculative_method=ngram`` over a JSON naming an EAGLE-3 head kept the head in both launch commands; n-gram
   takes no draft model (vLLM's ``SpeculativeConfig.__post_init__`` sets the n-gram drafter's config to the
   target's own, vllm/config/speculative.py).
3. n-gram speculation gave Llama-3.1-8B on one H100 more KV than no speculation: the V1 runner it runs on charged
   the plain dummy sampler only, while vLLM's ``_dummy_sampler_run`` (vllm/v1/worker/gpu_model_runner.py) runs the
   rejection sampler too whenever speculative decoding is on.
"""

from __future__ import annotations

import contextlib
import io
import json
from argparse import Namespace

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.cli import main
from planner.cli.serving import speculative_from_args
from planner.engines import EngineRequest, plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.serving.features import ServingFeatures
from planner.serving.speculative import SpeculativeConfig
from tests.test_app import run_page
from ui.format import format_bytes

H100 = "nvidia-h100-sxm-80gb"
TF = {"engine": "transformers", "model": "meta-llama/Llama-2-7b-hf", "gpu": H100, "context_len": "2048"}
EAGLE3 = "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
EAGLE3_JSON = json.dumps({"method": "eagle3", "model": EAGLE3, "num_speculative_tokens": 3})
LLAMA31 = "meta-llama/Llama-3.1-8B"


def _plan(engine: str, model: str, **kw):
    gpu = get_gpu(H100)
    request = EngineRequest(engine=engine, gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu),
                            **kw)
    return plan_engine(model_spec(model), gpu.framework_memory_bytes, request)


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


# --- 1. transformers: what generate() allocates for the batch asked -------------------------------------------

def test_transformers_caption_gives_the_asked_batch_allocation_not_the_whole_card():
    at = run_page("pages/5_Engine.py", TF)
    assert not at.exception, [e.value for e in at.exception]
    plan = _plan("transformers", TF["model"], max_model_len=2048)
    rank = plan.limiting_rank
    asked = plan.max_num_seqs
    allocated = rank.weights_bytes + rank.activation_bytes + asked * rank.bytes_per_block  # one cache a sequence
    whole = sum(size for name, size in rank.segments(plan.gpu_memory_bytes) if name not in ("Not allocated",
                                                                                             "Over the card"))
    caption = _captions(at)
    assert f"allocates {format_bytes(allocated)}" in caption, caption
    assert f"allocates {format_bytes(whole)}" not in caption, caption
    assert f"{plan.num_gpu_blocks} sequences" in caption, caption  # how many would fit, said apart


# --- 2. n-gram over a JSON's draft model: the model is dropped, CLI and page alike ------------------------------

def test_ngram_override_drops_the_jsons_draft_model():
    args = Namespace(speculative_config=EAGLE3_JSON, speculative_method="ngram", num_speculative_tokens=None,
                     speculative_model=None)
    spec = speculative_from_args(args, {})
    assert spec.method == "ngram" and spec.draft_model_id == "" and spec.num_speculative_tokens == 3


def test_ngram_override_on_the_cli_launches_without_the_head():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["plan", "--model", LLAMA31, "--gpu", H100, "--speculative-method", "ngram",
              "--speculative-config", EAGLE3_JSON])
    text = out.getvalue()
    assert '"method": "ngram"' in text, text
    assert EAGLE3 not in text, text


def test_ngram_override_on_the_engine_page_launches_without_the_head_and_says_so():
    params = {"model": LLAMA31, "gpu": H100, "speculative_config": EAGLE3_JSON, "speculative_method": "ngram"}
    at = run_page("pages/5_Engine.py", params)
    assert not at.exception, [e.value for e in at.exception]
    launch = "\n".join(c.value for c in at.code)
    assert '"method": "ngram"' in launch or "NGRAM" in launch, launch
    assert EAGLE3 not in launch, launch
    said = " ".join(m.value for m in (*at.error, *at.warning))
    assert "`speculative_method=ngram`" in said and EAGLE3 in said and "no draft model" in said, said


# --- 3. n-gram's profile pass charges the rejection sampler's dummy run ----------------------------------------

def _ngram() -> ServingFeatures:
    return ServingFeatures(engine="vllm", speculative=SpeculativeConfig(method="ngram", num_speculative_tokens=3))


def test_ngram_does_not_lower_the_profile_activation_below_no_speculation():
    bare = _plan("vllm", LLAMA31).limiting_rank
    ngram = _plan("vllm", LLAMA31, serving=_ngram()).limiting_rank
    assert ngram.activation_bytes >= bare.activation_bytes, (ngram.activation_bytes, bare.activation_bytes)
    assert ngram.available_kv_cache_bytes <= bare.available_kv_cache_bytes


def test_ngram_sampler_term_counts_the_rejection_samplers_tensors():
    """vLLM's rejection sampler on the dummy batch (vllm/v1/sample/rejection_sampler.py ``forward``) holds, per
    request and vocabulary entry: the dummy logits of 2 rows (one draft + one bonus) in the model dtype, the bonus
    row copied out, then the target row in FP32, its clone and its FP32 softmax."""
    model = model_spec(LLAMA31)
    plan = _plan("vllm", LLAMA31, serving=_ngram())
    rank = plan.limiting_rank
    e = 2  # bf16
    rows = min(plan.max_num_seqs, plan.max_num_batched_tokens)
    held = rows * model.vocab_size * (2 * e + e + 4 + 4 + 4)
    assert rank.sampler_bytes >= held, (rank.sampler_bytes, held)
