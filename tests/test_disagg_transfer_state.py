"""The KV a request moves from the prefill to the decode pool counts a hybrid model's whole recurrent state (QA).

``disagg --model Qwen/Qwen3.5-397B-A17B ... --prompt-len 130572`` reported 2,059,960,320 B per request: 2 x the
per-GPU shard, the shard multiplied by min(tensor parallel, KV heads) as if all of it were replicated attention KV.
The 45 Gated DeltaNet states are split over all 8 GPUs, so that left out 6/8 of them (193,167,360 B per sequence,
as ``plan`` reports). Nemotron-3-Super at tp 4: 221,511,680 B where ``plan`` gives 302,120,960 B for one sequence.

Expected figures here come from ``python -m planner plan`` (the budget's whole-model bytes of one sequence), not
from the code under test.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines.types import EngineRequest
from planner.scale import ScaleRequest, plan_scale
from planner.scale.links import LINKS, transfer_ms

CASES = [
    ("Qwen/Qwen3.5-397B-A17B", "nvidia-h200-sxm", [], 64, 130_572, 500),
    ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8", "nvidia-h100-sxm-80gb", ["--tensor-parallel-size", "4"], 32,
     32_000, 1_000),
]


def _json(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("model", "gpu", "flags", "users", "prompt", "output"), CASES)
def test_the_request_moves_every_recurrent_state_and_each_kv_head_once(capsys, model, gpu, flags, users, prompt,
                                                                       output):
    out = _json(capsys, ["disagg", "--model", model, "--gpu", gpu, *flags, "--kv-cache-dtype", "fp8", "--users",
                         str(users), "--prompt-len", str(prompt), "--output-len", str(output), "--format", "json"])
    whole = _json(capsys, ["plan", "--model", model, "--gpu", gpu, "--kv-cache-dtype", "fp8", "--context-len",
                           str(prompt), "--format", "json"])
    tp = out["prefill"]["tensor_parallel_size"]
    launch = plan_scale(model_spec(model), get_gpu(gpu).framework_memory_bytes,
                        EngineRequest(gpu_name=get_gpu(gpu).name, tensor_parallel_size=tp, max_model_len=prompt,
                                      kv_cache_dtype="fp8"), ScaleRequest())
    block = launch.engine.block_size
    exact = whole["kv_cache_bytes_per_sequence"]  # every KV head and every state once, token-exact
    # the connector moves whole blocks: at most one block of every full-attention layer's KV more
    assert exact <= out["kv_transfer_bytes_per_request"] < exact + block * whole["kv_cache_bytes_per_token"], (
        out["kv_transfer_bytes_per_request"], exact)
    # the time is one GPU's shard, which holds its share of the states (the GPUs send in parallel)
    shard = _json(capsys, ["plan", "--model", model, "--gpu", gpu, "--kv-cache-dtype", "fp8", "--context-len",
                           str(prompt), "--tensor-parallel-size", str(tp), "--num-gpus", str(tp), "--format",
                           "json"])["kv_cache_bytes_per_sequence_per_gpu"]
    assert out["kv_transfer_bytes_per_gpu"] >= shard
    assert out["kv_transfer_ms"] == {x.id: round(transfer_ms(out["kv_transfer_bytes_per_gpu"], x), 3) for x in LINKS}


@pytest.mark.parametrize(("model", "tp"), [("google/gemma-3-27b-it", 2), ("openai/gpt-oss-120b", 2)])
def test_a_sliding_window_moves_its_window_not_the_prefill_peak(capsys, model, tp):
    """A GPU sends its blocks of the finished prompt, a sliding-window layer only the window's last blocks (vLLM's
    connectors clip such a group, ``get_sw_clipped_blocks``), not the window plus a prefill chunk that the engine's
    start check reserves: Gemma 3 27B at tp 2 and 32,000 tokens sent 3,579,576,320 B per GPU, more than the whole
    request holds (``plan``: 3,057,647,616 B once every layer keeps its window)."""
    gpu = "nvidia-h100-sxm-80gb"
    out = _json(capsys, ["disagg", "--model", model, "--gpu", gpu, "--tensor-parallel-size", str(tp), "--users",
                         "32", "--prompt-len", "32000", "--output-len", "1000", "--format", "json"])
    args = ["plan", "--model", model, "--gpu", gpu, "--context-len", "32000", "--format", "json"]
    whole = _json(capsys, args)
    shard = _json(capsys, [*args, "--tensor-parallel-size", str(tp), "--num-gpus", str(tp)])
    block = 16 * whole["kv_cache_bytes_per_token"]  # a 16-token block of every layer: the rounding's bound
    assert whole["kv_cache_bytes_per_sequence"] <= out["kv_transfer_bytes_per_request"] < (
        whole["kv_cache_bytes_per_sequence"] + block)
    assert shard["kv_cache_bytes_per_sequence_per_gpu"] <= out["kv_transfer_bytes_per_gpu"] < (
        shard["kv_cache_bytes_per_sequence_per_gpu"] + block)
    assert out["kv_transfer_bytes_per_gpu"] < out["kv_transfer_bytes_per_request"]


# (model, tp, prompt, full-attention layers, sliding layers, window, KV heads, head_dim): config.json's
# num_hidden_layers and layer pattern (Gemma 3 27B: 62 layers, sliding_window_pattern 6; gpt-oss-120b: 36 layers
# alternating), sliding_window, num_key_value_heads, head_dim; bf16 KV, vLLM's 16-token blocks.
SLIDING_CASES = [
    ("google/gemma-3-27b-it", 2, 32_000, 10, 52, 1_024, 16, 128),
    ("openai/gpt-oss-120b", 2, 32_000, 18, 18, 128, 8, 64),  # 2,000 - floor(31,873 / 16) = 8 blocks, not the clip's 9
    ("openai/gpt-oss-120b", 2, 130, 18, 18, 128, 8, 64),  # past the window by 2 tokens: nothing skipped, 9 blocks
    ("openai/gpt-oss-120b", 2, 100, 18, 18, 128, 8, 64),  # inside the window: the prompt's own 7 blocks
]


@pytest.mark.parametrize(("model", "tp", "prompt", "full", "sliding", "window", "heads", "head_dim"),
                         SLIDING_CASES)
def test_a_sliding_window_group_moves_the_blocks_the_decode_side_holds(capsys, model, tp, prompt, full, sliding,
                                                                       window, heads, head_dim):
    """vLLM's NIXL connector clips a sliding-window group to its last ``cdiv(window, block) + 1`` block ids on both
    sides (vllm/distributed/kv_transfer/kv_connector/v1/nixl/base_scheduler.py, ``blocks_per_sw`` and
    ``get_exchange_clipped_blocks``), and the decode side reads as many of them as it allocated itself: its
    ``allocate_new_computed_blocks`` leaves the ``floor((prompt - window + 1) / block)`` blocks the window has
    skipped null (vllm/v1/core/single_type_kv_cache_manager.py, ``SlidingWindowManager.get_num_skipped_tokens``),
    ``get_unhashed_block_ids_all_groups`` leaves the nulls out, and nixl/base_worker.py ``_apply_prefix_caching``
    end-trims the prefill's list to that count. Gemma 3 27B at tp 2 and 32,000 tokens: 2,000 - floor(30,977 / 16)
    = 64 blocks a sliding layer, 3,057,647,616 B; the plan moved the clip's 65 (3,064,463,360 B)."""
    out = _json(capsys, ["disagg", "--model", model, "--gpu", "nvidia-h100-sxm-80gb", "--tensor-parallel-size",
                         str(tp), "--users", "8", "--prompt-len", str(prompt), "--output-len", "100", "--format",
                         "json"])
    per_token = 2 * heads * head_dim * 2  # K and V of one layer, bf16 [bytes]
    blocks = -(-prompt // 16)
    held = blocks - max(0, prompt - window + 1) // 16  # the decode side's blocks of the window
    moved = 16 * per_token * (full * blocks + sliding * min(held, -(-window // 16) + 1))
    assert out["kv_transfer_bytes_per_request"] == moved
    assert out["kv_transfer_bytes_per_gpu"] == moved // tp  # each GPU sends its heads' share


def test_a_gated_deltanet_state_moves_as_the_engine_stores_it_without_the_page_padding(capsys):
    """vLLM's NIXL worker reads a Mamba / Gated DeltaNet block as its conv sub-projections and its SSM state, each
    descriptor as long as the state's own bytes (``derive_mamba_conv_split``'s ``ssm_sizes``, from ``MambaSpec``'s
    shapes: vllm/distributed/kv_transfer/kv_connector/v1/ssm_conv_transfer_utils.py, nixl/base_worker.py
    ``_build_mamba_local``), stepping a whole page between blocks: the padding that unifies the state's page with
    the attention page is not moved, and the conv state holds ``d_conv - 1`` columns
    (vllm/model_executor/layers/mamba/mamba_utils.py ``gated_delta_net_state_shape``). The plan counted
    transformers' 4 columns.

    Qwen3.5-397B-A17B (config.json: 60 layers, full_attention_interval 4 -> 15 attention and 45 DeltaNet layers,
    2 KV heads of 256; linear_num_key_heads 16 x 128, linear_num_value_heads 64 x 128, linear_conv_kernel_dim 4,
    mamba_ssm_dtype float32) in fp8 at tp 8, 130,572 tokens in the engine's 1,056-token blocks (124 blocks): conv
    (2 x 16 x 128 + 64 x 128) x 3 x 2 B = 73,728 B and SSM 64 x 128 x 128 x 4 B = 4,194,304 B a layer; one GPU
    holds 1/8 of it, 533,504 B, in a page padded to 1,056 x 2 x 1 x 256 x 1 B = 540,672 B.
    """
    out = _json(capsys, ["disagg", "--model", "Qwen/Qwen3.5-397B-A17B", "--gpu", "nvidia-h200-sxm", "--kv-cache-dtype",
                         "fp8", "--users", "64", "--prompt-len", "130572", "--output-len", "500", "--format", "json"])
    assert out["prefill"]["tensor_parallel_size"] == 8
    tokens = 124 * 1_056
    state = (2 * 16 * 128 + 64 * 128) * 3 * 2 + 64 * 128 * 128 * 4
    assert out["kv_transfer_bytes_per_request"] == tokens * 15 * 2 * 2 * 256 + 45 * state
    assert out["kv_transfer_bytes_per_gpu"] == tokens * 15 * 2 * 1 * 256 + 45 * (state // 8)
    assert state // 8 < 540_672  # the padded page, which the connector does not read whole
