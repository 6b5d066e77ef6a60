"""The KV one request moves from the prefill to the decode pool: the whole request's distinct bytes and one GPU's part.

A prefill replica's GPUs each send their own blocks of a finished prompt, in parallel
(:mod:`planner.scale.links` times one GPU's part over its link); :mod:`planner.scale.disagg` sizes the pools
with these figures (its design note 2). Sources: vLLM's NIXL connector
(vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py, since split into the package
vllm/distributed/kv_transfer/kv_connector/v1/nixl/: base_scheduler.py picks a request's blocks, base_worker.py
reads them), its Mamba state shapes (vllm/model_executor/layers/mamba/mamba_utils.py), and the planner's KV spec
(:mod:`planner.model.kv`).
"""

from __future__ import annotations

from planner.engines.types import EngineRequest
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.layers import CacheDtypes, RecurrentState, SlidingWindowAttention
from planner.model.memo import memoized
from planner.scale.plan import ScalePlan, _kv_heads
from planner.units import ceil_div


def kv_sequence_bytes(model: ModelSpec, request: EngineRequest, tp: int, block: int, tokens: int) -> int:
    """KV of one sequence of ``tokens`` on one of ``tp`` GPUs, in whole blocks of ``block`` tokens, windows capped
    and states split as :func:`planner.model.kv.kv_profile` prices them, in ``request``'s dtypes [bytes]."""
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    return kv_profile(model, dtypes, tp, block).bytes_per_sequence(tokens)


def moved_sequence_bytes(model: ModelSpec, request: EngineRequest, tp: int, block: int, tokens: int) -> int:
    """KV the connector reads for one finished prompt of ``tokens`` on one of ``tp`` GPUs [bytes]:
    :func:`kv_sequence_bytes` with each sliding-window layer's blocks and each recurrent state as the connector
    reads them (:func:`_connector_extra`)."""
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    return kv_sequence_bytes(model, request, tp, block, tokens) + _connector_extra(model, dtypes, tp, block, tokens)


def _connector_extra(model: ModelSpec, dtypes: CacheDtypes, tp: int, block: int, tokens: int) -> int:
    """What the connector reads beyond :func:`kv_sequence_bytes` for one prompt of ``tokens`` [bytes].

    A sliding-window group keeps the last ``cdiv(window, block) + 1`` of the request's block ids, the ``+ 1`` for a
    window that does not start on a block boundary, and at most the prompt's ``cdiv(tokens, block)``: vLLM's NIXL
    scheduler sizes ``blocks_per_sw`` per sliding-window KV-cache group from that group's window and block size, and
    ``get_exchange_clipped_blocks`` (``get_sw_clipped_blocks`` in the older single-file connector) keeps that tail
    (vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py). The profile holds
    ``cdiv(min(tokens, window), block)``, one block fewer past the window. Only sliding-window layers: a
    chunked-local group (``ChunkedLocalAttentionSpec``) is not clipped there, and the profile keeps pricing it.

    A Mamba / Gated DeltaNet layer moves its state as the engine stores it, and no more: the worker reads each
    state block as its conv sub-projections and its SSM state, descriptors as long as the state's own bytes
    (``derive_mamba_conv_split``'s ``ssm_sizes`` from ``MambaSpec``'s shapes:
    vllm/distributed/kv_transfer/kv_connector/v1/ssm_conv_transfer_utils.py; ``_build_mamba_local`` in
    nixl/base_worker.py steps a whole page between blocks), so the padding that unifies the state's page with the
    attention page (:mod:`planner.engines.pages` ``_unify_pages``) stays behind; and the conv state holds
    ``d_conv - 1`` columns (:meth:`planner.model.layers.RecurrentState.engine_bytes_per_sequence`), where the
    profile counts transformers' ``d_conv``.

    Worked examples: Gemma 3 27B (52 sliding layers, window 1,024, block 16) at 32,000 tokens on one GPU:
    52 x (65 - 64) blocks x 16 tokens x 8,192 B = 6,815,744 B. Qwen3.5-397B-A17B on one GPU: 45 DeltaNet
    layers x (4,268,032 - 4,292,608) B = -1,105,920 B (one conv column of 12,288 channels in bf16 each).
    """
    last = ceil_div(tokens, block)
    extra = 0
    for layer in model.layers:
        if isinstance(layer, SlidingWindowAttention):
            held = ceil_div(min(tokens, layer.sliding_window), block)
            sent = min(last, ceil_div(layer.sliding_window, block) + 1)
            extra += (sent - held) * block * layer.bytes_per_token(dtypes, tp)
        elif isinstance(layer, RecurrentState):
            extra += layer.engine_bytes_per_sequence(dtypes, tp) - layer.bytes_per_sequence(0, dtypes, tp)
    return extra


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
    Qwen3.5-397B-A17B, 2,059,960,320 B for about 2.05 GiB); a window moves its last ``cdiv(window, block) + 1``
    blocks (:func:`_connector_extra`: Gemma 3 27B at tp 2 and 32,000 tokens, 3,064,463,360 B per request where the
    window's own blocks gave 3,057,647,616 B), not the window plus a prefill chunk that the engine's start check
    reserves.

    Worked example: Qwen3.5-397B-A17B in fp8 at tensor parallel 8, 130,572 tokens: 15 full-attention layers x 2 x 2
    KV heads x 256 x 1 B = 15,360 B per token in blocks of 1,056 tokens (124 blocks, 2,011,299,840 B) plus 45 Gated
    DeltaNet states of 4,268,032 B as vLLM stores them (conv 73,728 B, SSM 4,194,304 B) = 2,203,361,280 B per
    request; one GPU: 1 KV head (7,680 B per token) and 1/8 of each state (533,504 B, not its 540,672 B padded
    page), 1,029,657,600 B.
    """
    layout, block = prompt_plan.layout, prompt_plan.engine.block_size
    if not capped_kv(model):
        shard = prompt_plan.engine.kv_cache_bytes_needed_per_request  # one prompt on one GPU, the engine's blocks
        return shard * min(layout.attention_tp, _kv_heads(model)), shard
    return (moved_sequence_bytes(model, request, 1, block, prompt_len),
            moved_sequence_bytes(model, request, layout.attention_tp, block, prompt_len))
