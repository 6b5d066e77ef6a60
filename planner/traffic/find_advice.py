"""What Find says when nothing fits: the changes that would make a setup fit, each checked and within the filters.

:func:`suggestions` is called by :func:`planner.traffic.reverse.find_setups` with a ``search`` callable that runs the
same search (the same GPUs, GPU-type filter, engine view and setup kinds) up to another GPU count. Rules:

    1. "raise max_gpus to N": the cheapest setup of the kinds asked that fits with up to 16, 32 or 64 GPUs (the
       next of 4, 8, 16, 32, 64 above the limit that finds one), named with its GPUs, layout, KV and users; N is
       that setup's GPU count, always above the current limit (a setup within it would have been found).
    2. "allow setup kind K": when the kinds asked leave out one that fits within the current limit (the Find page's
       "Setup kinds" filter, ``--setup-kinds``), that kind and its cheapest setup, as a change of the filter.
    3. "allow kv_cache_dtype fp8": only when fp8 is not asked, the engine offers it and it stores a different cache
       from every dtype asked (under vLLM, DeepSeek-V3.2's ``auto`` is already ``fp8_ds_mla``, as is its ``fp8``).
    4. "use weight_dtype D": each of fp8 and int4 that shrinks the weights by at least
       ``WEIGHT_ALTERNATIVE_MIN_SAVING`` of the dtype asked (:func:`planner.model.params.model_weight_bytes`: not fp8
       for a checkpoint already in fp8, such as DeepSeek-V3.2's).
    5. The time-per-output-token limit, when one is set; fewer users or shorter requests, always.
    6. "raise max_num_seqs to M": with an explicit ``max_num_seqs``, M is the users per replica (rank) of the cheapest
       setup the same search finds without the cap, checked by a search with ``max_num_seqs`` M (the knob moves the
       engine's profile pass, so the setup named is the cheapest that fits with it). First when the cap alone rules
       out every setup (:func:`cap_cause`: ceil(users / cap) replicas of one GPU each exceed ``max_gpus``); rules 3 and
       4 are then left out, since no memory freed lets a replica run more sequences.

Before any search, :func:`length_limit_error` says why the model refuses the requests' ``--max-model-len``: the
requests themselves, or only the limit the user set.

Sources: :mod:`planner.traffic.reverse` (the search), :mod:`planner.traffic.find_scale` (the kinds beside TP).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from planner.model import ModelSpec
from planner.model.params import model_weight_bytes
from planner.traffic.find_types import SETUP_KINDS, FindRequest, Setup, setup_rank
from planner.traffic.workload import Workload
from planner.text import count_noun
from planner.units import ceil_div

WIDER_LIMITS = (4, 8, 16, 32, 64)
"""GPU counts tried above ``max_gpus`` for rule 1."""

SMALLER_WEIGHTS = ("fp8", "int4")
"""Weight dtypes rule 4 may name."""


def _long_tokens(lengths) -> int | None:
    """A length distribution's long end [tokens]: its p95 where it has one (a log-normal, whose draws are unbounded
    before the workload's clip), else its longest (fixed, uniform, a CSV's lengths); None where it has neither."""
    p95 = getattr(lengths, "p95", None)
    return round(p95) if p95 is not None else lengths.max_tokens


def length_limit_error(model: ModelSpec, workload: Workload, media_tokens: int = 0,
                       setting: str = "max_model_len") -> str:
    """Why the model refuses the search's ``--max-model-len`` (the workload's limit + ``media_tokens``), or "".

    An engine refuses a ``--max-model-len`` above the model's ``max_position_embeddings`` (vLLM:
    ``_get_and_verify_max_len`` in vllm/config/model.py). Where the requests themselves are longer (prompt + output,
    each side at its p95 or longest: :func:`_long_tokens`), the message says to shorten them; where only the limit
    the user set is (``setting``: ``max_model_len`` on the page, ``--max-model-len`` in the CLI), it names that
    setting and the largest value that starts, ``max_position_embeddings - media_tokens``. QA: Llama-2-7b (4,096),
    requests of 2,000 + 500 tokens and ``max_model_len`` 8,192 read "requests of up to 8,192 tokens exceed ...;
    shorten the prompt or output"."""
    limit, asked = model.max_position_embeddings, workload.max_model_len
    if not limit or asked + media_tokens <= limit:
        return ""
    longest = [_long_tokens(workload.prompt), _long_tokens(workload.output)]
    requests = min(sum(longest), asked) if None not in longest else asked
    media = f" ({{:,}} text + {media_tokens:,} image and video tokens)" if media_tokens else ""
    fewer_media = ", or send fewer or smaller images or videos" if media_tokens else ""
    lower = f"lower {setting} to at most {limit - media_tokens:,}" if limit > media_tokens else ""
    if requests + media_tokens > limit:
        text = (f"requests of up to {requests + media_tokens:,} tokens{media.format(requests)} exceed what "
                f"{model.model_id} supports ({limit:,}); shorten the prompt or output{fewer_media}")
        return f"{text}, and {lower}" if requests < asked and lower else text
    return f"{setting} {asked:,}{media.format(asked)} exceeds what {model.model_id} supports ({limit:,}); {lower}"


def setup_words(s: Setup) -> str:
    """``"8 x nvidia-h200-sxm (tp 8, fp8_ds_mla KV, 369 users) at $31.92/h"``: a setup in a suggestion."""
    how = (f"tp {s.tensor_parallel_size}" if s.kind == "TP" else
           f"{s.kind}, tp {s.tensor_parallel_size} x {s.data_parallel_size}")
    return (f"{s.num_gpus} x {s.gpu_id} ({how}, {s.kv_cache_dtype} KV, "
            f"{count_noun(s.max_concurrent_sequences, 'user')}) at ${s.price_per_hour:.2f}/h")


def _cheapest(setups: list[Setup]) -> Setup | None:
    """The first fitting setup in Find's order (:func:`planner.traffic.find_types.setup_rank`), or None."""
    fitting = [s for s in setups if s.fits]
    return min(fitting, key=setup_rank) if fitting else None


def cap_cause(request: FindRequest) -> str:
    """Why nothing can fit whatever the memory, when an explicit ``max_num_seqs`` is the cause (rule 6), else "".

    Each replica (vLLM: each data-parallel rank; the decode rank of a disaggregated setup) runs at most
    ``max_num_seqs`` requests at once (vllm/v1/core/sched/scheduler.py), so ``N`` users need at least
    ``ceil(N / max_num_seqs)`` of them, each of at least one GPU. Example: 256 users with ``--max-num-seqs 4`` need
    64 replicas, more than ``max_gpus`` 8.
    """
    cap = request.knob("max_num_seqs")
    if not cap or ceil_div(request.users, cap) <= request.max_gpus:
        return ""
    replicas = ceil_div(request.users, cap)
    return (f"--max-num-seqs {cap:,} runs at most {count_noun(cap, 'sequence')} per replica at once: "
            f"{count_noun(request.users, 'user')} need at least {replicas:,} replicas of one GPU or more, beyond "
            f"max_gpus {request.max_gpus:,}. No memory change helps: raise max_num_seqs or max_gpus")


def _raised_cap(request: FindRequest, search: Callable[[FindRequest, int], list[Setup]]) -> str | None:
    """Rule 6's suggestion, or None when no setup fits within ``max_gpus`` without the cap either."""
    cap = request.knob("max_num_seqs")
    free = tuple((k, v) for k, v in request.engine_knobs if k != "max_num_seqs")
    best = _cheapest(search(replace(request, engine_knobs=free), request.max_gpus))
    if best is None or best.users_per_replica <= cap:
        return None
    value = best.users_per_replica
    again = _cheapest(search(replace(request, engine_knobs=(*free, ("max_num_seqs", value))), request.max_gpus))
    if again is None:
        return None
    return f"raise max_num_seqs to {value:,}: {setup_words(again)} fits within {request.max_gpus} GPUs"


def suggestions(model: ModelSpec, request: FindRequest, search: Callable[[FindRequest, int], list[Setup]], *,
                stored_kv: Callable[[str], str], offers_kv: Callable[[str], bool], min_weight_saving: float) -> list[str]:
    """When nothing fits: the changes that would make a setup fit (module docstring).

    Args:
        model: The model.
        request: What was asked (its kinds, dtypes, limit, GPU filter).
        search: ``(request, max_gpus) -> setups``: the search of :func:`planner.traffic.reverse.find_setups` over the
            same GPUs up to that many GPUs (every setup, fitting or not).
        stored_kv: ``kv flag -> the cache the engine stores`` (``auto`` -> ``bf16``; vLLM on DeepSeek-V3.2:
            ``fp8_ds_mla``).
        offers_kv: ``kv flag -> whether the engine offers it``.
        min_weight_saving: Share of the weight bytes a dtype must remove to be named [fraction].
    """
    out = []
    binds = bool(cap_cause(request))
    raised = _raised_cap(request, search) if request.knob("max_num_seqs") else None
    if raised and binds:
        out.append(raised)
    for limit in (n for n in WIDER_LIMITS if n > request.max_gpus):
        best = _cheapest([s for s in search(request, limit) if s.num_gpus > request.max_gpus])
        if best is not None:
            out.append(f"raise max_gpus to {best.num_gpus}: {setup_words(best)} fits")
            break
    others = tuple(k for k in SETUP_KINDS if k not in request.setup_kinds)
    if others:
        best = _cheapest(search(replace(request, setup_kinds=others), request.max_gpus))
        if best is not None:
            out.append(f"allow setup kind {best.kind} (the setup kinds filter): {setup_words(best)} fits within "
                       f"{request.max_gpus} GPUs")
    if raised and not binds:
        out.append(raised)
    asked = {stored_kv(kv) for kv in request.kv_cache_dtypes}
    if not binds and "fp8" not in request.kv_cache_dtypes and offers_kv("fp8") and stored_kv("fp8") not in asked:
        out.append(f"allow kv_cache_dtype fp8 (stores {stored_kv('fp8')} instead of {', '.join(sorted(asked))})")
    weights = model_weight_bytes(model, request.weight_dtype)
    smaller = [d for d in SMALLER_WEIGHTS if d != request.weight_dtype
               and model_weight_bytes(model, d) <= (1 - min_weight_saving) * weights]
    if smaller and not binds:
        out.append(f"use weight_dtype {' or '.join(smaller)} (frees memory for KV)")
    if request.max_time_per_output_token_s is not None:
        out.append("relax the time-per-output-token limit")
    out.append("serve fewer users per setup or shorten prompts/outputs")
    return out
