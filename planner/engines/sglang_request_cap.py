"""SGLang with a KV pool shorter than one request: it starts, and caps every request at the pool.

vLLM refuses to start when its KV cache cannot hold one request of ``max_model_len`` tokens. SGLang does not: it
starts with any pool of at least a few tokens and caps each request instead. Every release the SGLang profiles model
(mid-2025 and late 2025-26) sets, once the pool is sized:

* ``max_req_len = min(context_len - 1, pool - 1)`` tokens (prompt and output together), and
  ``max_req_input_len = max_req_len - 5`` (``TpModelWorker.__init__``, python/sglang/srt/managers/tp_worker.py; the
  pool is ``max_total_num_tokens``, named ``max_token_pool_size`` in late builds; "Memory pool size is too small"
  only when either is not positive);
* a prompt of ``max_req_input_len`` tokens or more is rejected with "Input length (N tokens) exceeds the maximum
  allowed length (M tokens). Use a shorter input or enable --allow-auto-truncate.", or cut to ``max_req_input_len``
  tokens under ``--allow-auto-truncate`` ("Request length is longer than the KV cache pool size or the max context
  length. Truncated.") (``validate_input_length``, python/sglang/srt/managers/utils.py, called by the scheduler's
  ``handle_generate_request``, python/sglang/srt/managers/scheduler.py); the output is clipped so that prompt and
  output stay within ``max_req_len``.

So a request of the whole ``--context-length`` fits only where the pool holds at least ``context_len`` tokens
(concurrency >= 1), and ``batch`` of them at once only where it holds ``batch x context_len``. QA (stop 47):
Qwen3-32B on one H100 SXM at 32,768 tokens under ``engine=sglang`` offered "Context → 27,904 (fits this batch)"
while SGLang's pool held 18,754 tokens (0.67x); after the click Home read a green "Fits" and the Engine page a
green "starts".
"""

from __future__ import annotations

from planner.engines.types import EnginePlan

INPUT_MARGIN = 5
"""``max_req_input_len = max_req_len - 5`` (tp_worker.py): tokens SGLang keeps back from the prompt."""


def max_req_len(plan: EnginePlan) -> int:
    """SGLang's longest request, prompt and output [tokens]: ``min(context_len - 1, pool - 1)`` (tp_worker.py)."""
    return min(plan.max_model_len - 1, plan.engine_kv_cache_tokens - 1)


def max_req_input_len(plan: EnginePlan) -> int:
    """SGLang's prompt cap [tokens]: :func:`max_req_len` minus :data:`INPUT_MARGIN`; a prompt of this many tokens or
    more is rejected (or cut under ``--allow-auto-truncate``), ``validate_input_length`` in managers/utils.py."""
    return max_req_len(plan) - INPUT_MARGIN


def short_pool(plan: EnginePlan) -> bool:
    """True where ``plan`` is an SGLang launch that starts with a pool shorter than one request of its
    ``max_model_len`` (``--context-length``): it caps every request below that length (module docstring)."""
    return (plan.family == "sglang" and plan.starts and not plan.stopped_at_config_check
            and 0 < plan.engine_kv_cache_tokens < plan.max_model_len)


def holds_one_request(plan: EnginePlan) -> bool:
    """The engine starts and serves a request of its whole ``max_model_len``: ``starts``, except an SGLang pool
    shorter than that request (:func:`short_pool`), which starts and rejects it."""
    return plan.starts and not short_pool(plan)


def pool_context_len(plan: EnginePlan, batch_size: int = 1) -> int:
    """The longest ``--context-length`` at which SGLang's pool holds ``batch_size`` whole requests at once
    [tokens]: ``pool // batch_size`` (a request of ``context_len`` tokens takes that many pool slots, page size 1 by
    default; ``max_req_len`` is then ``context_len - 1``, tp_worker.py). Example (QA): 18,754 tokens, batch 1:
    18,754."""
    return plan.engine_kv_cache_tokens // max(batch_size, 1)


def cap_text(plan: EnginePlan) -> str:
    """What SGLang does with requests of the launch's length where its pool is shorter (:func:`short_pool`), with
    its own reply; "" otherwise. Example (QA, Qwen3-32B on one H100 SXM at 27,904 tokens): "sglang's KV pool holds
    18,754 tokens, fewer than one request of 27,904 (0.67x): it caps each request at 18,753 tokens, prompt and
    output, and rejects a prompt of 18,748 tokens or more: ..."."""
    if not short_pool(plan):
        return ""
    cap = max_req_input_len(plan)
    return (f"{plan.engine}'s KV pool holds {plan.engine_kv_cache_tokens:,} tokens, fewer than one request of "
            f"{plan.max_model_len:,} ({plan.max_concurrency:.2f}x): it caps each request at {max_req_len(plan):,} "
            f"tokens, prompt and output (max_req_len = min(context_len - 1, max_total_num_tokens - 1)), and rejects a "
            f"prompt of {cap:,} tokens or more: \"Input length (N tokens) exceeds the maximum allowed length "
            f"({cap} tokens). Use a shorter input or enable --allow-auto-truncate.\"")


def pool_fix_text(plan: EnginePlan, batch_size: int = 1) -> str:
    """The way out :func:`cap_text` names, with numbers: a context the pool holds ``batch_size`` whole requests of
    (:func:`pool_context_len`), or a larger pool (more GPUs, fp8 KV cache)."""
    context = pool_context_len(plan, batch_size)
    whole = "one whole request" if batch_size <= 1 else f"{batch_size:,} whole requests"
    return (f"Lower the context to {context:,} tokens or less (the pool holds {whole} of that length), or grow the "
            "pool: more GPUs (tensor parallel) or an fp8 KV cache.")


def cap_headline(plan: EnginePlan) -> str:
    """The verdict's words where the budget fits and SGLang's pool is shorter than one request (:func:`short_pool`):
    "sglang's KV pool of 18,754 tokens is shorter than one request: it rejects prompts of 18,748 tokens or more";
    "" otherwise."""
    if not short_pool(plan):
        return ""
    return (f"{plan.engine}'s KV pool of {plan.engine_kv_cache_tokens:,} tokens is shorter than one request: it "
            f"rejects prompts of {max_req_input_len(plan):,} tokens or more")
