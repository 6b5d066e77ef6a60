"""The KV one request moves from the prefill to the decode pool: the whole request's distinct bytes and one GPU's part.

A prefill replica's GPUs each send their own blocks of a finished prompt, in parallel
(:mod:`planner.scale.links` times one GPU's part over its link); :mod:`planner.scale.disagg` sizes the pools
with these figures (its design note 2). Sources: vLLM's NIXL connector
(vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py), its Mamba state shapes
(vllm/model_executor/layers/mamba/mamba_utils.py), and the planner's KV spec (:mod:`planner.model.kv`).
"""

from __future__ import annotations

from planner.engines.types import EngineRequest
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.memo import memoized
from planner.scale.plan import ScalePlan, _kv_heads


def kv_sequence_bytes(model: ModelSpec, request: EngineRequest, tp: int, block: int, tokens: int) -> int:
    """KV of one sequence of ``tokens`` on one of ``tp`` GPUs, in whole blocks of ``block`` tokens, windows capped
    and states split as :func:`planner.model.kv.kv_profile` prices them, in ``request``'s dtypes [bytes]."""
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    return kv_profile(model, dtypes, tp, block).bytes_per_sequence(tokens)


def capped_kv(model: ModelSpec) -> bool:
    """True when some layer keeps a window or a constant state: the model's profile then prices a sequence's KV
    (:func:`kv_sequence_bytes`), not the engine's bytes per token x tokens."""
    return memoized(model, ("disagg_capped_kv",), lambda: bool(model.sliding_windows or model.has_recurrent_state))


def transfer_bytes(model: ModelSpec, request: EngineRequest, prompt_plan: ScalePlan,
                   prompt_len: int) -> tuple[int, int]:
    """``(per request, per GPU)``: the distinct bytes of one prompt's cache, which the prefill replica's GPUs send
    together, and one GPU's part of them [bytes].

    Each GPU's connector sends its own blocks of the finished prompt (vLLM's NIXL connector registers every rank's
    KV caches and reads a request's blocks rank by rank: vllm/distributed/kv_transfer/kv_connector/v1/
    nixl_connector.py). A model without windows or states keeps the prefill engine's own bytes for one GPU
    (``prompt_plan``: the prefill launch at a length of the prompt; its KV layout, e.g. vLLM's FP8 latent of
    DeepSeek-V3.2), x ``min(attention TP, KV heads)`` for the request: a head replicated over more GPUs than heads,
    or an MLA latent on every GPU, is the same bytes, counted once. A model with sliding windows or recurrent states
    (:func:`capped_kv`) takes the model's cache (:func:`kv_sequence_bytes`) in the engine's blocks, at the prefill's
    attention TP for one GPU and at 1 for the request: a Mamba / Gated DeltaNet state is split over every GPU
    (``MambaStateShapeCalculator`` divides its heads and channels by the tensor-parallel size:
    vllm/model_executor/layers/mamba/mamba_utils.py), so the shard x KV heads left most of it out (QA:
    Qwen3.5-397B-A17B, 2,059,960,320 B for about 2.05 GiB); a window moves its last blocks (the connector clips a
    sliding-window group to ``cdiv(window, block) + 1`` blocks, ``get_sw_clipped_blocks``), not the window plus a
    prefill chunk that the engine's start check reserves.

    Worked example: Qwen3.5-397B-A17B in fp8 at tensor parallel 8, 130,572 tokens: 15 full-attention layers x 2 x 2
    KV heads x 256 x 1 B = 15,360 B per token in blocks of 1,056 tokens (124 blocks, 2,011,299,840 B) plus 45 Gated
    DeltaNet states of 4,292,608 B = 2,204,467,200 B per request; one GPU: 1 KV head (7,680 B per token) and 1/8 of
    each state, 1,029,795,840 B.
    """
    layout, block = prompt_plan.layout, prompt_plan.engine.block_size
    if not capped_kv(model):
        shard = prompt_plan.engine.kv_cache_bytes_needed_per_request  # one prompt on one GPU, the engine's blocks
        return shard * min(layout.attention_tp, _kv_heads(model)), shard
    return (kv_sequence_bytes(model, request, 1, block, prompt_len),
            kv_sequence_bytes(model, request, layout.attention_tp, block, prompt_len))
