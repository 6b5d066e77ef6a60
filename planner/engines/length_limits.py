"""What TensorRT-LLM, TGI, llama.cpp and transformers do with a length past the model's own limit.

vLLM (vllm/config/model.py ``_get_and_verify_max_len``) and SGLang (:func:`planner.engines.sglang.
context_limit_reason`) refuse it; the others start, each in its own way:

* TensorRT-LLM, PyTorch backend: ``PyTorchModelEngine._init_max_seq_len``
  (tensorrt_llm/_torch/pyexecutor/model_engine.py) infers the model's length from the config and, when
  ``max_seq_len`` is larger, warns "Specified self.max_seq_len=... is larger than what the model can support
  (...). Setting max_seq_len to ..." and clamps it (py_executor_creator.py hands the clamped length to the
  executor); newer releases keep the length asked when ``TLLM_ALLOW_LONG_MAX_MODEL_LEN`` is set. Clamp.
* TensorRT-LLM, trtllm-build: ``_init_max_seq_len`` (tensorrt_llm/builder.py; tensorrt_llm/commands/build.py in
  older releases) warns "max_seq_len ... is larger than max_position_embeddings ... * rotary scaling ..., the model
  accuracy might be affected" and builds the engine at the length asked. Warn and run.
* TGI: the launcher (launcher/src/main.rs) caps only its defaults at ``max_position_embeddings``
  (``max_batch_prefill_tokens``; ``FlashCausalLM.warmup`` in server/text_generation_server/models/
  flash_causal_lm.py for ``max_total_tokens``); an explicit ``--max-total-tokens`` is checked against
  ``max_input_tokens`` and ``max_batch_total_tokens`` only (launcher, backends/v3/src/main.rs), so it starts in
  silence. A learned position table past its rows reads row 0s: ``TensorParallelEmbedding`` maps an index out of
  range to a null row (server/text_generation_server/layers/tensor_parallel.py). Run; the planner warns.
* llama.cpp: ``llama_context`` warns "n_ctx_seq (...) > n_ctx_train (...) -- possible training context overflow"
  (src/llama-context.cpp) and allocates the cells asked; llama-server then caps each slot: "the slot context (...)
  exceeds the training context of the model (...) - capping" (tools/server/server-context.cpp). Warn, cap the
  request length, keep the memory.
* transformers: generate() warns "This is a friendly reminder - the current text generation call has exceeded the
  model's predefined maximum length (...)" (generation/stopping_criteria.py ``MaxLengthCriteria``, transformers 5)
  and runs for rotary models; a learned absolute position table (GPT-2's ``wpe``, models/gpt2/modeling_gpt2.py)
  raises ``IndexError: index out of range in self`` past its rows (checked on a 8-row GPT-2 in transformers 5.24).
  Refuse for those, warn for the rest.

The limit is the model's ``max_position_embeddings``, as vLLM's and SGLang's here (the engines also scale it by
some rope factors, which the spec does not carry).
"""

from __future__ import annotations

from planner.model import ModelSpec

LEARNED_POSITION_TYPES = frozenset({"gpt2", "gpt_bigcode", "gpt_neo", "opt"})
"""Model types whose positions index an ``nn.Embedding`` of ``max_position_embeddings`` rows in transformers
(models/gpt2/modeling_gpt2.py ``wpe``, gpt_bigcode ``wpe``, gpt_neo ``wpe``, opt ``OPTLearnedPositionalEmbedding``)."""


def over_limit(model: ModelSpec, length: int) -> int | None:
    """The model's limit when ``length`` [tokens] is past it, else None."""
    limit = model.max_position_embeddings
    return limit if limit and length > limit else None


def trtllm_clamp_warning(length: int, limit: int) -> str:
    """TensorRT-LLM's PyTorch backend clamping ``max_seq_len`` (module docstring), and what the plan does."""
    return (f"Specified self.max_seq_len={length} is larger than what the model can support ({limit}). Setting "
            f"max_seq_len to {limit}. Planned at {limit:,} tokens per request; TLLM_ALLOW_LONG_MAX_MODEL_LEN=1 "
            "keeps the longer length in newer releases (quality past the model's length is not guaranteed)")


def trtllm_build_warning(length: int, limit: int) -> str:
    """trtllm-build's warning for a ``max_seq_len`` past the model's (module docstring); the engine builds."""
    return (f"max_seq_len {length} is larger than max_position_embeddings {limit}, the model accuracy might be "
            f"affected; lower --max_seq_len to {limit:,} for outputs the model was trained for")


def tgi_warning(model: ModelSpec, length: int, limit: int) -> str:
    """TGI starting in silence with ``--max-total-tokens`` past the model's limit (module docstring)."""
    table = (f"; {model.model_type} looks positions up in a learned table of {limit:,} rows, and TGI reads a zero "
             "row past it" if model.model_type in LEARNED_POSITION_TYPES else "")
    return (f"TGI starts with --max-total-tokens {length:,} past the model's max_position_embeddings {limit:,} "
            f"without a word (it checks only its defaults against it){table}: outputs past {limit:,} tokens are not "
            f"guaranteed; lower --max-total-tokens to {limit:,}")


def llamacpp_warning(n_ctx_seq: int, limit: int) -> str:
    """llama.cpp's training-context warning and llama-server's slot cap (module docstring)."""
    return (f"n_ctx_seq ({n_ctx_seq}) > n_ctx_train ({limit}) -- possible training context overflow; llama-server: "
            f"the slot context ({n_ctx_seq}) exceeds the training context of the model ({limit}) - capping. Each "
            f"request gets at most {limit:,} tokens while the KV buffer holds the cells -c asks for (llama-cli "
            f"runs past it, quality not guaranteed); lower -c so that each slot holds at most {limit:,}")


def transformers_message(model: ModelSpec, length: int, limit: int) -> tuple[str, str]:
    """``(reason, warning)``, one of them empty: generate() past the model's limit (module docstring)."""
    if model.model_type in LEARNED_POSITION_TYPES:
        return (f"IndexError: index out of range in self: {model.model_type} looks each position up in a learned "
                f"table of {limit:,} rows (max_position_embeddings), so a sequence of {length:,} tokens fails in "
                f"generate(); lower max_length to {limit:,}"), ""
    return "", (f"This is a friendly reminder - the current text generation call has exceeded the model's "
                f"predefined maximum length ({limit}). Depending on the model, you may observe exceptions, "
                "performance degradation, or nothing at all. (transformers warns and generates past it; quality "
                f"is not guaranteed; lower max_length to {limit:,})")
