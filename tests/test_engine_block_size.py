"""vLLM raises a too-small ``--block-size`` the way vLLM does, instead of failing to unify pages.

Rules (planner.engines.vllm.vllm_block_size): attention + Mamba hybrids get
``attn_block_size = a x ceil(mamba_page_size / (a x attention bytes of one token))``
(vllm/model_executor/models/config.py ``HybridAttentionMambaModelConfig.verify_and_update_config``,
``a`` 16, 64 for MLA, 128 for CUTLASS MLA) when the asked block is smaller; MLA backends then force
their block (vllm/platforms/cuda.py ``check_and_update_config``: FlashMLA 64 unless a multiple of 64).
"""

from __future__ import annotations

import json

import pytest

from model_catalog import model_ids, model_spec
from model_catalog.gpus import get_gpu
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.engines.pages import mamba_hybrid_block_size
from planner.engines.vllm import mla_forced_block_size
from planner.model.kv import cache_dtypes
from planner.model.layers import FullAttention, MLAAttention, RecurrentState
from planner.units import GiB
from tests.factories import dense_model

H100 = get_gpu("nvidia-h100-sxm-80gb")


def _hybrid_ids() -> list[str]:
    """Catalog models with both attention and Mamba / linear-attention (recurrent-state) layers."""
    out = []
    for model_id in model_ids():
        layers = model_spec(model_id).layers
        if any(isinstance(x, RecurrentState) for x in layers) and any(
                isinstance(x, (FullAttention, MLAAttention)) for x in layers):
            out.append(model_id)
    return out


HYBRIDS = _hybrid_ids()


def _h100(model_id: str, **kw):
    request = EngineRequest(engine="vllm", gpu_name=H100.name, max_model_len=8192, **kw)
    return plan_engine(model_spec(model_id), H100.framework_memory_bytes, request)


def test_the_catalog_has_the_hybrids_of_the_issue():
    # Qwen3.5 / 3.6, Qwen3-Next, Nemotron-H / Nemotron 3, Jamba, Kimi-K3: 22 entries when this was written
    assert len(HYBRIDS) >= 22
    assert {"Qwen/Qwen3.5-35B-A3B", "nvidia/Nemotron-H-56B-Base-8K", "ai21labs/Jamba-v0.1",
            "moonshotai/Kimi-K3", "Qwen/Qwen3-Next-80B-A3B-Instruct"} <= set(HYBRIDS)


@pytest.mark.parametrize("model_id", HYBRIDS)
def test_block_size_16_is_raised_to_vllms_attention_block_size(model_id):
    default = _h100(model_id)
    plan = _h100(model_id, block_size=16)
    model = model_spec(model_id)
    dtypes = cache_dtypes(model, "auto", "auto")
    per_token = max(x.bytes_per_token(dtypes, 1) for x in model.layers if isinstance(x, (FullAttention, MLAAttention)))
    state = max(x.engine_bytes_per_sequence(dtypes, 1) for x in model.layers if isinstance(x, RecurrentState))
    alignment = 64 if model.attention_kind == "MLA" else 16  # FlashMLA on Hopper for MLA
    expected = mamba_hybrid_block_size(per_token, state, alignment)
    assert plan.block_size == default.block_size == expected > 16
    assert plan.notes[0] == (f"vLLM raises the attention block size to {expected:,} tokens so that an attention "
                             "page holds at least one Mamba state page (model_executor/models/config.py); "
                             "block_size 16 was asked")
    assert plan.num_gpu_blocks == default.num_gpu_blocks  # the same plan as without --block-size
    assert not any("block size" in note for note in default.notes)  # no note when nothing was asked


def test_qwen35_hand_checked():
    """Qwen3.5-35B-A3B, bf16, TP 1 (config: 2 KV heads x head_dim 256; Gated DeltaNet 16 key heads x 128,
    32 value heads x 128, conv kernel 4).

    Attention page of one token: 2 (K, V) x 2 heads x 256 x 2 B = 2,048 B (16 tokens: 32,768 B).
    Mamba state: conv (4 - 1) x (2 x 16 x 128 + 32 x 128 = 8,192) x 2 B = 49,152 B
    + SSM 32 x 128 x 128 x 4 B (fp32) = 2,097,152 B -> 2,146,304 B.
    attn_block_size = 16 x ceil(2,146,304 / (16 x 2,048)) = 16 x ceil(65.5) = 1,056 tokens;
    its attention page 1,056 x 2,048 = 2,162,688 B, the Mamba page padded to it.
    """
    model = model_spec("Qwen/Qwen3.5-35B-A3B")
    dtypes = cache_dtypes(model, "auto", "auto")
    attention = next(x for x in model.layers if isinstance(x, FullAttention))
    mamba = next(x for x in model.layers if isinstance(x, RecurrentState))
    assert attention.bytes_per_token(dtypes, 1) == 2048
    assert mamba.engine_bytes_per_sequence(dtypes, 1) == 49_152 + 2_097_152 == 2_146_304
    plan = _h100("Qwen/Qwen3.5-35B-A3B", block_size=16)
    assert plan.block_size == 1056
    assert plan.limiting_rank.bytes_per_block % (1056 * 2048) == 0  # every page is one 2,162,688 B attention page


def test_kimi_k3_mla_hybrid_aligns_to_64():
    """Kimi-K3 (MLA + KDA): one MLA token 576 x 2 B = 1,152 B; KDA state 3,366,912 B;
    64 x ceil(3,366,912 / (64 x 1,152)) = 64 x 46 = 2,944 (MLA alignment 64: FlashMLA keeps it)."""
    plan = _h100("moonshotai/Kimi-K3", block_size=16)
    assert plan.block_size == 2944
    assert len([n for n in plan.notes if n.startswith("vLLM")]) == 1  # FlashMLA does not force it again


def test_a_block_size_at_least_vllms_is_kept():
    # vLLM keeps a block size >= attn_block_size and pads the Mamba page to the (larger) attention page
    plan = _h100("Qwen/Qwen3.5-35B-A3B", block_size=2048)
    assert plan.block_size == 2048
    assert not any("raises the attention block size" in n for n in plan.notes)
    assert plan.limiting_rank.bytes_per_block % (2048 * 2048) == 0


def test_cli_json_plans_the_hybrid_with_the_raised_block(capsys):
    code = main(["plan", "--engine", "vllm", "--block-size", "16", "--model", "nvidia/Nemotron-H-56B-Base-8K",
                 "--gpu", "nvidia-h100-sxm-80gb", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    # the budget pages the hybrid as vLLM does (planner/engines/vllm_hybrid_profile.py): both name the block used
    assert out["block_size"] == out["engine_plan"]["block_size"] == 4128
    assert "vLLM raises the attention block size to 4,128 tokens" in out["engine_plan"]["notes"][0]


def test_flashmla_forces_64_on_hopper():
    mla = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64)
    model = dense_model(num_layers=2, layers=(mla, mla))

    def plan(gpu: str, block: int):
        return plan_engine(model, 80 * GiB, EngineRequest(engine="vllm", gpu_name=gpu, block_size=block,
                                                          max_model_len=1024, available_kv_memory_bytes=8 * GiB))

    forced = plan("H100 SXM5 80GB", 16)
    assert forced.block_size == 64
    assert forced.notes[0] == ("vLLM forces the KV cache block size to 64 for the FLASHMLA backend "
                               "(platforms/cuda.py); block_size 16 was asked")
    assert plan("H100 SXM5 80GB", 128).block_size == 128  # a multiple of 64 is kept
    assert plan("B200", 16).block_size == 128  # CUTLASS MLA
    assert plan("A100 SXM4 80GB", 16).block_size == 16  # Triton MLA forces nothing
    assert mla_forced_block_size("FLASHINFER_MLA", 32) == 32
    assert mla_forced_block_size("FLASHINFER_MLA", 16) == 64


def test_block_size_rules_live_in_vllm_specs_and_stay_importable_from_vllm():
    from planner.engines import vllm, vllm_specs

    for name in ("vllm_block_size", "mla_forced_block_size", "mamba_block_alignment", "stage_specs", "stage_layout"):
        assert getattr(vllm, name) is getattr(vllm_specs, name)
