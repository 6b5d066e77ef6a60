"""The KV one request moves from the prefill to the decode pool, per KV-cache kind, as vLLM's NIXL connector reads it.

The decode instance reads, per KV-cache group, as many of the prefill's blocks as it allocated for the request
itself: its own block list, null padding left out, clipped like the prefill's, and the prefill's list end-trimmed to
that count (vllm/distributed/kv_transfer/kv_connector/v1/nixl/pull_scheduler.py ``update_state_after_alloc``:
``get_unhashed_block_ids_all_groups`` then ``get_exchange_clipped_blocks``; nixl/base_worker.py
``_apply_prefix_caching``). The decode side allocates a remote prompt's blocks as ``allocate_new_computed_blocks``
does (vllm/v1/core/single_type_kv_cache_manager.py): the blocks a window or a chunk has already skipped are null.

Expected bytes are worked by hand from config.json fields (in each docstring), not read from the code under test.
"""

from __future__ import annotations

import json

from planner.cli import main

GPU = "nvidia-h100-sxm-80gb"


def _disagg(capsys, model: str, tp: int, prompt: int) -> dict:
    argv = ["disagg", "--model", model, "--gpu", GPU, "--tensor-parallel-size", str(tp), "--users", "8",
            "--prompt-len", str(prompt), "--output-len", "100", "--format", "json"]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prefill"]["tensor_parallel_size"] == tp
    return out


def test_a_chunked_local_layer_moves_only_the_blocks_of_the_prompts_last_chunk(capsys):
    """Llama 4 Scout's chunked-local layers move the last chunk's blocks, not ``min(prompt, chunk)`` tokens.

    vLLM's ``ChunkedLocalAttentionManager.get_num_skipped_tokens`` skips ``(n // chunk) x chunk`` tokens, so the
    decode side holds null blocks for every whole chunk before the last and reads only the rest; the connector does
    not clip a ``ChunkedLocalAttentionSpec`` group itself (``blocks_per_sw`` is 0 for it), so the decode side's count
    is what moves.

    config.json: 48 layers, ``attention_chunk_size`` 8,192; every 4th layer is a NoPE full-attention layer
    (transformers' ``no_rope_layer_interval`` 4) -> 12 full, 36 chunked; 8 KV heads x head_dim 128, bf16:
    2 x 8 x 128 x 2 B = 4,096 B per token a layer. Prompt 20,000 tokens, 16-token blocks:
    full 12 x ceil(20,000 / 16) = 1,250 blocks x 16 x 4,096 B = 983,040,000 B;
    chunked: skipped 2 x 8,192 = 16,384 tokens = 1,024 blocks, 1,250 - 1,024 = 226 blocks (3,616 tokens):
    36 x 3,616 x 4,096 B = 533,200,896 B; together 1,516,240,896 B. At tp 4 each GPU holds 8 / 4 = 2 heads, a
    quarter: 379,060,224 B. The plan moved ``min(20,000, 8,192)`` tokens of each chunked layer: 2,190,999,552 B.
    """
    out = _disagg(capsys, "meta-llama/Llama-4-Scout-17B-16E-Instruct", 4, 20_000)
    per_token = 2 * 8 * 128 * 2
    blocks = -(-20_000 // 16)
    chunked_blocks = blocks - (20_000 // 8_192) * 8_192 // 16
    moved = 16 * per_token * (12 * blocks + 36 * chunked_blocks)
    assert moved == 1_516_240_896
    assert out["kv_transfer_bytes_per_request"] == moved
    assert out["kv_transfer_bytes_per_gpu"] == moved // 4


def test_each_kv_cache_group_rounds_to_its_own_block_size(capsys):
    """Gemma 4 26B-A4B's full-attention layers move 32-token blocks beside the sliding layers' 16-token ones.

    vLLM's hybrid allocator gives every layer one page size and grows the block of a layer with fewer bytes per
    token (vllm/v1/core/kv_cache_utils.py ``unify_kv_cache_spec_page_size``), so a full-attention layer with half the
    sliding layer's bytes per token holds 32-token blocks, and the connector reads whole blocks of each group.

    config.json: 30 layers, every 6th ``full_attention`` -> 5 full, 25 sliding; sliding: 8 KV heads x head_dim 256,
    window 1,024; full: ``num_global_key_value_heads`` 2 x ``global_head_dim`` 512; bf16. Per token a layer:
    sliding 2 x 8 x 256 x 2 B = 8,192 B (a 16-token page 131,072 B), full 2 x 2 x 512 x 2 B = 4,096 B (the same page
    at 32 tokens). Prompt 32,001 tokens at tp 1: full 5 x ceil(32,001 / 32) = 1,001 blocks x 32 x 4,096 B =
    656,015,360 B; sliding: ceil(32,001 / 16) = 2,001 blocks, the decode side skips
    floor((32,001 - 1,024 + 1) / 16) = 1,936 -> 65 blocks (= ceil(1,024 / 16) + 1, the connector's clip):
    25 x 65 x 16 x 8,192 B = 212,992,000 B; together 869,007,360 B. The plan rounded the full layers to 16-token
    blocks: 2,001 x 16 tokens, 327,680 B fewer.
    """
    out = _disagg(capsys, "google/gemma-4-26B-A4B", 1, 32_001)
    full = 5 * -(-32_001 // 32) * 32 * (2 * 2 * 512 * 2)
    sliding_blocks = min(-(-32_001 // 16) - (32_001 - 1_024 + 1) // 16, -(-1_024 // 16) + 1)
    sliding = 25 * sliding_blocks * 16 * (2 * 8 * 256 * 2)
    assert full + sliding == 869_007_360
    assert out["kv_transfer_bytes_per_request"] == full + sliding
    assert out["kv_transfer_bytes_per_gpu"] == full + sliding


def test_a_mamba_hybrids_prefill_moves_the_prompt_less_its_last_token_and_one_state(capsys):
    """Qwen3.5-27B: the prefill computes the prompt less its last token, which the decode side recomputes, and moves
    one recurrent state per Gated DeltaNet layer.

    vLLM's NIXL scheduler drops a Mamba hybrid's last prompt token on the prefill side and asks for ``n - 1``
    remote tokens on the decode side (nixl/base_scheduler.py ``_truncate_mamba_request_for_prefill``,
    ``_get_remote_prefill_token_count``); it keeps one state block of an SSM group (``get_exchange_clipped_blocks``:
    the last non-speculative slot, in "none" and "align" modes alike), and the worker asserts one local state
    block (nixl/base_worker.py ``_apply_prefix_caching``).

    config.json (text_config): 64 layers, ``full_attention_interval`` 4 -> 16 attention, 48 DeltaNet layers;
    attention 4 KV heads x 256, bf16: 2 x 4 x 256 x 2 B = 4,096 B per token; DeltaNet ``linear_num_key_heads`` 16 x
    128, ``linear_num_value_heads`` 48 x 128, ``linear_conv_kernel_dim`` 4, ``mamba_ssm_dtype`` float32: conv
    (2 x 16 x 128 + 48 x 128) x 3 x 2 B = 61,440 B, SSM 48 x 128 x 128 x 4 B = 3,145,728 B, 3,207,168 B a layer.
    vLLM's attention block holds a state: 16 x ceil(3,207,168 / 4,096 / 16) = 784 tokens. Prompt 785 tokens at tp 1:
    784 tokens move, 1 block: 16 x 784 x 4,096 B = 51,380,224 B, plus 48 x 3,207,168 B = 153,944,064 B; together
    205,324,288 B. The plan moved 2 blocks of 785 tokens: 256,704,512 B.
    """
    out = _disagg(capsys, "Qwen/Qwen3.5-27B", 1, 785)
    state = (2 * 16 * 128 + 48 * 128) * 3 * 2 + 48 * 128 * 128 * 4
    block = 16 * -(-state // (4_096 * 16))
    assert block == 784
    moved = 16 * -(-(785 - 1) // block) * block * 4_096 + 48 * state
    assert moved == 205_324_288
    assert out["kv_transfer_bytes_per_request"] == moved
    assert out["kv_transfer_bytes_per_gpu"] == moved
