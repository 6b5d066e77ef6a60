"""The KV one request moves from the prefill to the decode pool: the whole request's distinct bytes and one GPU's part.

A prefill replica's GPUs each send their own blocks of a finished prompt, in parallel
(:mod:`planner.scale.links` times one GPU's part over its link); :mod:`planner.scale.disagg` sizes the pools
with these figures (its design note 2). Sources: vLLM's NIXL connector
(vllm/distributed/kv_transfer/kv_connector/v1/nixl_connector.py, since split into the package
vllm/distributed/kv_transfer/kv_connector/v1/nixl/: base_scheduler.py picks a request's blocks, base_worker.py
reads them), the decode side's block allocation (vllm/v1/core/single_type_kv_cache_manager.py), its Mamba state
shapes (vllm/model_executor/layers/mamba/mamba_utils.py), and the planner's KV spec (:mod:`planner.model.kv`).
"""

from __future__ import annotations

from planner.engines.types import EngineRequest
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.layers import (CacheDtypes, ChunkedLocalAttention, FullAttention, RecurrentState,
                                  SlidingWindowAttention)
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
    :func:`kv_sequence_bytes` of the tokens the prefill computes (:func:`prefilled_tokens`), with each layer's blocks
    and each recurrent state as the decode side reads them (:func:`_connector_extra`)."""
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype)
    sent = prefilled_tokens(model, tokens)
    return kv_sequence_bytes(model, request, tp, block, sent) + _connector_extra(model, dtypes, tp, block, sent)


def prefilled_tokens(model: ModelSpec, prompt_len: int) -> int:
    """Tokens of a ``prompt_len`` prompt whose KV the prefill computes and the decode side reads: the prompt less
    its last token for a model with a Mamba / Gated DeltaNet state, else the whole prompt.

    vLLM's NIXL scheduler drops such a model's last prompt token on the prefill side and asks the prefill for
    ``prompt_len - 1`` tokens on the decode side, which recomputes the last token from the state after
    ``prompt_len - 1`` (nixl/base_scheduler.py ``_truncate_mamba_request_for_prefill``,
    ``_get_remote_prefill_token_count``; ``kv_cache_config.has_mamba_layers``). Qwen3.5-27B at 785 tokens in its
    784-token blocks: one block of each attention layer moves, not two.
    """
    return prompt_len - 1 if model.has_recurrent_state and prompt_len > 1 else prompt_len


def decode_read_blocks(layer, tokens: int, block: int) -> int:
    """Blocks of one attention layer's group the decode side reads for a remote prompt of ``tokens``, in blocks of
    ``block`` tokens (the group's own, :func:`_group_blocks`).

    The decode side allocates the prompt's blocks as ``allocate_new_computed_blocks`` does, the blocks the layer's
    window or chunk has already skipped null (vllm/v1/core/single_type_kv_cache_manager.py,
    ``get_num_skipped_tokens``), takes its non-null ones (``KVCacheBlocks.get_unhashed_block_ids_all_groups``,
    vllm/v1/core/kv_cache_manager.py), clips them as the prefill clips its list (a sliding-window group to its last
    ``cdiv(window, block) + 1``: nixl/base_scheduler.py ``blocks_per_sw``, ``get_exchange_clipped_blocks``; a
    chunked-local group is not clipped there) and reads that many of the prefill's last blocks
    (nixl/base_worker.py ``_apply_prefix_caching`` end-trims the prefill's list to the decode side's count):

    * full attention: ``cdiv(tokens, block)``;
    * a sliding window ``w`` (``SlidingWindowManager``: ``tokens - w + 1`` skipped):
      ``min(cdiv(tokens, block) - floor(max(0, tokens - w + 1) / block), cdiv(w, block) + 1)``; Gemma 3 27B at
      32,000 tokens: 2,000 - 1,936 = 64 blocks, at 32,001 65;
    * chunked local attention of ``chunk`` tokens (``ChunkedLocalAttentionManager``: ``floor(tokens / chunk) x
      chunk`` skipped): ``cdiv(tokens, block) - floor(floor(tokens / chunk) x chunk / block)``, the blocks of the
      prompt's last chunk; Llama 4 Scout (chunk 8,192) at 20,000 tokens: 1,250 - 1,024 = 226 blocks. A prompt of
      whole chunks leaves that group nothing to read.
    """
    total = ceil_div(tokens, block)
    if isinstance(layer, SlidingWindowAttention):
        window = layer.sliding_window
        return min(total - max(0, tokens - window + 1) // block, ceil_div(window, block) + 1)
    if type(layer) is ChunkedLocalAttention:
        return total - tokens // layer.attention_chunk_size * layer.attention_chunk_size // block
    return total


def _paged(layer) -> bool:
    """True for the attention kinds :func:`decode_read_blocks` reads and :func:`_group_blocks` pages."""
    return type(layer) in (FullAttention, ChunkedLocalAttention) or isinstance(layer, SlidingWindowAttention)


def _group_blocks(model: ModelSpec, dtypes: CacheDtypes, tp: int, block: int) -> list[int]:
    """Each layer's block size when the engine pages the model in ``block``-token blocks [tokens].

    vLLM's hybrid allocator gives every KV-cache group one page size: a layer whose bytes per token are a fraction
    of the largest layer's gets that many times the tokens a block (vllm/v1/core/kv_cache_utils.py
    ``unify_kv_cache_spec_page_size``; :mod:`planner.engines.pages` ``_unify_pages``): Gemma 4 26B-A4B's full-attention
    layers (2 x 2 x 512 x 2 B = 4,096 B a token) in 32-token blocks beside the sliding layers' (8,192 B) 16. A
    Mamba state's page is padded instead (the engine's ``block`` already holds one). ``block`` for every layer when
    the attention layers share one spec, or are one kind with one window beside no state (one group,
    ``UniformTypeKVCacheSpecs``), or some cache layer is a kind not paged here (its profile keeps pricing it).
    """
    attention = [layer for layer in model.layers if _paged(layer)]
    per_token = {layer.bytes_per_token(dtypes, tp) for layer in attention}
    other = any(not _paged(layer) and not isinstance(layer, RecurrentState) and layer.tokens_held(1 << 20)
                for layer in model.layers)
    one_kind = len({(type(layer), layer.tokens_held(1 << 62)) for layer in attention}) == 1
    if len(per_token) < 2 or other or (one_kind and not model.has_recurrent_state):
        return [block] * len(model.layers)
    top = max(per_token)
    return [block * top // layer.bytes_per_token(dtypes, tp)
            if _paged(layer) and top % layer.bytes_per_token(dtypes, tp) == 0 else block for layer in model.layers]


def _connector_extra(model: ModelSpec, dtypes: CacheDtypes, tp: int, block: int, tokens: int) -> int:
    """What the decode side reads beyond :func:`kv_sequence_bytes` for one prompt of ``tokens`` [bytes].

    An attention layer (full, sliding window, chunked local) moves :func:`decode_read_blocks` blocks of its group's
    own block size (:func:`_group_blocks`), where the profile holds ``cdiv(min(tokens, cap), block)`` blocks of
    ``block``: a sliding window moves at most ``cdiv(window, block) + 1`` blocks, a chunked-local layer only the
    last chunk's. Any other layer keeps its profile's price.

    A Mamba / Gated DeltaNet layer moves one state as the engine stores it, and no more: the connector keeps an SSM
    group's last non-speculative block (``get_exchange_clipped_blocks``; "none" and "align" ``mamba_cache_mode``
    alike, only "all" keeps a state per block position) and the worker asserts one local state block
    (nixl/base_worker.py ``_apply_prefix_caching``); it reads each state block as its conv sub-projections and its
    SSM state, descriptors as long as the state's own bytes (``derive_mamba_conv_split``'s ``ssm_sizes`` from
    ``MambaSpec``'s shapes: vllm/distributed/kv_transfer/kv_connector/v1/ssm_conv_transfer_utils.py;
    ``_build_mamba_local`` in nixl/base_worker.py steps a whole page between blocks), so the padding that unifies
    the state's page with the attention page (:mod:`planner.engines.pages` ``_unify_pages``) stays behind; and the
    conv state holds ``d_conv - 1`` columns (:meth:`planner.model.layers.RecurrentState.engine_bytes_per_sequence`),
    where the profile counts transformers' ``d_conv``.

    Worked examples: Gemma 3 27B (52 sliding layers, window 1,024, block 16) at 32,001 tokens on one GPU:
    52 x (65 - 64) blocks x 16 tokens x 8,192 B = 6,815,744 B. Llama 4 Scout (36 chunked layers, 4,096 B a token)
    at 20,000 tokens: 36 x (226 - 512) x 16 x 4,096 B = -674,758,656 B. Qwen3.5-397B-A17B on one GPU: 45 DeltaNet
    layers x (4,268,032 - 4,292,608) B = -1,105,920 B (one conv column of 12,288 channels in bf16 each).
    """
    extra = 0
    for layer, own in zip(model.layers, _group_blocks(model, dtypes, tp, block)):
        if _paged(layer):
            held = ceil_div(layer.tokens_held(tokens), block) * block
            extra += (decode_read_blocks(layer, tokens, own) * own - held) * layer.bytes_per_token(dtypes, tp)
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
    Qwen3.5-397B-A17B, 2,059,960,320 B for about 2.05 GiB); a window moves the blocks the decode side holds of it,
    at most ``cdiv(window, block) + 1`` (:func:`decode_read_blocks`: Gemma 3 27B at tp 2 and 32,000 tokens,
    3,057,647,616 B per request), not the window plus a prefill chunk that the engine's start check reserves; a
    chunked-local layer its last chunk's blocks; each group in its own block size (:func:`_group_blocks`).

    Worked example: Qwen3.5-397B-A17B in fp8 at tensor parallel 8, 130,572 tokens (130,571 prefilled,
    :func:`prefilled_tokens`): 15 full-attention layers x 2 x 2 KV heads x 256 x 1 B = 15,360 B per token in
    blocks of 1,056 tokens (124 blocks, 2,011,299,840 B) plus 45 Gated DeltaNet states of 4,268,032 B as vLLM
    stores them (conv 73,728 B, SSM 4,194,304 B) = 2,203,361,280 B per request; one GPU: 1 KV head (7,680 B per
    token) and 1/8 of each state (533,504 B, not its 540,672 B padded page), 1,029,657,600 B.
    """
    layout, block = prompt_plan.layout, prompt_plan.engine.block_size
    if not capped_kv(model):
        shard = prompt_plan.engine.kv_cache_bytes_needed_per_request  # one prompt on one GPU, the engine's blocks
        return shard * min(layout.attention_tp, _kv_heads(model)), shard
    return (moved_sequence_bytes(model, request, 1, block, prompt_len),
            moved_sequence_bytes(model, request, layout.attention_tp, block, prompt_len))
