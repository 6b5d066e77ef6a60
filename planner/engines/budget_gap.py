"""Why an engine's users differ from the budget's, in one sentence for Home's engine panel and the CLI.

The budget (:func:`planner.budget.plan`, the headline users of Home and of ``python -m planner plan``) prices the
newest vLLM under ``vllm serve``, or the launch's vLLM version (:func:`planner.overhead.budget_profile`): its loaded
weights, a profile pass of the scheduler's default ``max_num_batched_tokens`` for the GPU, CUDA graphs and runner
state.
The engine section prices every flag of the launch. Three causes move the engine's users away from the budget's:

1. Another profile (an older vLLM, SGLang, llama.cpp ...) loads weights, profiles and captures graphs its own way.
2. A longer profile pass: the offline ``LLM`` class (``--usage-context llm``) takes 16,384 tokens on a large
   datacenter GPU where ``vllm serve`` takes 8,192 (vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults``;
   :func:`planner.engines.profiles.vllm_scheduler_defaults`), or ``--max-num-batched-tokens`` sets it. The pass's
   activation grows with it, and so does the prefill peak of the one request a windowed or compressed model holds
   beside the decoding ones (a window plus a whole chunk: :mod:`planner.engines.pages` design note 6).
3. Pipeline stages (``--pipeline-parallel-size``): the engine splits the layers over them, the budget has no
   pipeline model (:mod:`planner.engines.replica_layout`).

QA (stop 43): DeepSeek-V4-Flash on 2 x GH200 at 30,000 tokens with ``--usage-context llm`` printed "max users 45"
above an engine section in which 20 requests decode at once, and nothing said why.
"""

from __future__ import annotations

from planner.engines.types import EnginePlan
from planner.engines.profiles import engine_profile
from planner.overhead import budget_profile
from planner.text import count_noun
from planner.units import GiB


def budget_gap_text(plan: EnginePlan, *, budget_users: int, budget_context_len: int, budget_batched_tokens: int,
                    pipeline_said: bool = False, budget_kv_bytes: int | None = None, budget_stages: int = 1) -> str:
    """The sentence that says why ``plan`` holds another number of whole requests than the budget (or does not start
    where the budget fits), or "" when they hold the same, or the engine stops at a check before loading weights.

    Args:
        plan: The engine plan of the launch (its :attr:`~EnginePlan.requests_held`: requests decoding at once).
        budget_users: The budget's users (``Plan.max_concurrent_sequences``) at ``budget_context_len`` [tokens]; a
            length other than the launch's ``max_model_len`` gets "" (the two count different requests).
        budget_batched_tokens: The budget's profile-pass tokens (:func:`planner.budget.profile_pass_tokens`).
        pipeline_said: The reader was told of cause 3 already (Home's pipeline box above its verdict): it is left
            out, and where it is the only cause the sentence is "" (QA, stop 41: the box and the panel said it twice).
        budget_kv_bytes: The budget's KV memory per GPU [bytes], to name a difference from the engine's available KV
            where no other cause applies (QA, stop 43: 27.88 against 26.48 GiB across two nodes was blamed on "block
            size, prefix caching"); None leaves it out.
        budget_stages: The pipeline stages the budget planned (``Plan.pipeline_parallel_size``,
            :func:`planner.pipeline.plan_pipeline`): where they are the launch's, the split is no cause.

    Returns:
        For example "The budget above holds 45 users of 30,000 tokens; this launch decodes 20 at once: its profile
        pass is 16,384 tokens where the budget's is 8,192 (vllm serve's default on this GPU), which takes more
        activation memory and a longer prefill peak in each windowed or compressed cache."
    """
    engine_users = int(plan.requests_held) if plan.starts else 0
    if engine_users == budget_users or budget_context_len != plan.max_model_len or plan.stopped_at_config_check:
        return ""
    causes = []
    staged = plan.pipeline_parallel_size > 1
    if staged and not pipeline_said and budget_stages != plan.pipeline_parallel_size:  # the budget's one group
        causes.append(f"its layers are split over {plan.pipeline_parallel_size} pipeline stages of "
                      f"{plan.tensor_parallel_size} GPUs each, which the budget does not model")
    if plan.engine != budget_profile(plan.engine):  # a vLLM version's own overhead is the budget's
        causes.append(f"{plan.engine} (models {plan.engine_version}) loads the weights, profiles and captures CUDA "
                      "graphs its own way, where the budget prices the newest vLLM")
    if plan.max_num_batched_tokens != budget_batched_tokens:
        more = plan.max_num_batched_tokens > budget_batched_tokens
        peak = (" and a longer prefill peak in each windowed or compressed cache" if plan.decodes_more_than_printed
                else "")
        causes.append(f"its profile pass is {plan.max_num_batched_tokens:,} tokens where the budget's is "
                      f"{budget_batched_tokens:,} (`vllm serve`'s default on this GPU)"
                      + (f", which takes more activation memory{peak}" if more else ""))
    if not causes and staged and pipeline_said:
        return ""
    kv_differs = budget_kv_bytes is not None and abs(plan.available_kv_cache_bytes - budget_kv_bytes) >= GiB // 100
    if not causes and kv_differs:
        causes.append(f"its available KV is {plan.available_kv_cache_bytes / GiB:,.2f} GiB per GPU where the budget's "
                      f"is {budget_kv_bytes / GiB:,.2f} GiB: the engine section prices this launch's own memory terms "
                      "(its nodes, flags and non-torch memory)")
    if not causes:
        causes.append("with the same KV memory, the engine pages each request its own way (whole blocks per KV-cache "
                      "group, image and draft-token slots)")
    outcome = f"decodes {engine_users:,} at once" if plan.starts else "does not start"
    return (f"The budget above holds {budget_users:,} users of {plan.max_model_len:,} tokens; this launch {outcome}: "
            + "; ".join(causes) + ".")


def engine_starts_text(plan: EnginePlan, *, budget_fits: bool, budget_context_len: int,
                       budget_model_limit: int | None = None) -> str:
    """The sentence beside a budget that does not fit where the chosen engine, whose overhead the budget does not price
    (another engine, or vllm-v0: :func:`planner.overhead.budget_profile`), starts and holds at least one whole request
    of the budget's context; "" otherwise (the budget fits, the engine refuses, holds no whole request, stops at a
    check before loading weights, or plans another length).

    The figures are the engine view's: its KV tokens, its available KV per GPU and its requests held at once
    (:attr:`EnginePlan.requests_held`, floored to whole users). QA: Qwen3-32B on one H100 at 32,768 tokens under
    ``trtllm`` read "Does not fit ... budget 6.82 GiB" above an engine panel where TensorRT-LLM starts with 57,152
    tokens (1.74x, 13.95 GiB available), and nothing said which to believe. ``budget_model_limit``: the model's
    ``max_position_embeddings`` as the budget reads it; a budget that does not fit because the context is past it is
    not a matter of memory, so no sentence (QA, stop 46: Meta-Llama-3-8B at 32,768 tokens, limit 8,192, under sglang
    read "Does not fit ... longer than the model supports" above "But sglang starts ... 14 users").
    """
    if budget_fits or not plan.starts or plan.stopped_at_config_check or plan.max_model_len != budget_context_len:
        return ""
    if budget_model_limit and budget_context_len > budget_model_limit:
        return ""
    priced = budget_profile(plan.engine)
    users = int(plan.requests_held)
    if plan.engine == priced or users < 1:
        return ""
    return (f"{plan.engine} starts with these inputs: {plan.engine_kv_cache_tokens:,} tokens of KV cache "
            f"({plan.available_kv_cache_bytes / GiB:,.2f} GiB per GPU available), {count_noun(users, 'user')} of "
            f"{plan.max_model_len:,} tokens at once ({plan.requests_held:,.2f}x); the budget above is vLLM's: it "
            f"prices the overhead of {engine_profile(priced).version}, not those of {plan.engine}.")
