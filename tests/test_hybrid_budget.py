"""The budget pages attention + Mamba hybrids as vLLM does (QA leftover of stop 37).

vLLM raises a hybrid's attention block size until one page holds a Mamba state and pads each state to that page
(vllm/model_executor/models/config.py ``HybridAttentionMambaModelConfig``; vllm/v1/core/kv_cache_utils.py). The
budget paged every model by 16-token blocks, so Home, Concurrency and Allocation counted 55 users for
Qwen3.5-27B on an H100 at 2,500 tokens where vLLM holds 49.57 requests. Expected figures here are the Engine
view's own (:func:`planner.engines.plan_engine`), never numbers typed in.
"""

from __future__ import annotations

import math

import pytest

from model_catalog import get_gpu, model_ids, model_spec
from planner.budget import PlanRequest, plan, sequence_profiles
from planner.engines import EngineRequest, plan_engine
from planner.engines.pages import kv_layout
from planner.engines.profiles import engine_profile
from planner.engines.vllm_deepseek_v4 import applies as deepseek_v4_applies
from planner.engines.vllm_hybrid_profile import paged_kv_profile
from planner.engines.vllm_specs import stage_specs, vllm_block_size
from planner.model.kv import cache_dtypes, kv_profile
from planner.sweep import concurrency_curve

CASES = [("Qwen/Qwen3.5-27B", "nvidia-h100-80gb", 1), ("Qwen/Qwen3.5-35B-A3B", "nvidia-h100-80gb", 1),
         ("Qwen/Qwen3-Next-80B-A3B-Instruct", "nvidia-h200", 2), ("ai21labs/Jamba-v0.1", "nvidia-h200", 2),
         ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia-h100-80gb", 1),
         ("nvidia/Nemotron-H-56B-Base-8K", "nvidia-h200", 2)]
CONTEXTS = (1000, 2500, 8192)


def assert_budget_users_are_the_engine_views(model_id: str, gpu_id: str, tp: int, contexts=CONTEXTS) -> None:
    """plan()'s users at each context are the requests the Engine view's pool holds while they decode
    (``EnginePlan.requests_held``: vLLM's printed concurrency where no window is freed), on the same memory."""
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    for context in contexts:
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, num_gpus=tp), gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(tensor_parallel_size=tp, max_model_len=context, gpu_name=gpu.id))
        assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes  # the same memory to share
        assert budget.max_concurrent_sequences == math.floor(engine.requests_held), (model_id, gpu_id, context)


@pytest.mark.parametrize(("model_id", "gpu_id", "tp"), CASES)
def test_budget_users_are_the_engine_views(model_id, gpu_id, tp):
    assert_budget_users_are_the_engine_views(model_id, gpu_id, tp)


@pytest.mark.parametrize(("model_id", "gpu_id", "tp"), CASES[:2])
def test_paged_sequence_is_vllms_blocks_per_request(model_id, gpu_id, tp):
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    request = EngineRequest(tensor_parallel_size=tp, block_size=16)
    profile = engine_profile("vllm")
    block, _ = vllm_block_size(model, request, profile)
    layout = kv_layout(stage_specs(model, range(model.num_layers), request, profile, block))
    _, paged = sequence_profiles(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=tp), gpu.id)
    assert paged.block_size == block > 16
    for context in CONTEXTS:
        assert paged.bytes_per_sequence(context) == layout.blocks_per_request(context, 0) * layout.bytes_per_block


def test_qwen35_27b_worked_example():
    """The module docstring's figures: 784-token blocks, 343 MiB a 2,500-token sequence (304 MiB by 16-token
    blocks), 49 users as vLLM's 49.57x."""
    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    dtypes = cache_dtypes(model, "auto", "auto")
    paged = paged_kv_profile(model, dtypes, 1, 16, weight_dtype="auto", kv_cache_dtype="auto")
    assert paged.block_size == 784
    assert paged.bytes_per_sequence(2500) == 343 * 2**20
    assert kv_profile(model, dtypes, 1, 16).bytes_per_sequence(2500) == 304 * 2**20 + 768 * 2**10


def test_models_without_state_keep_the_plain_profile():
    for model_id in ("meta-llama/Meta-Llama-3.1-8B", "deepseek-ai/DeepSeek-V3"):  # windowed ones: test_window_budget
        model = model_spec(model_id)
        dtypes = cache_dtypes(model, "auto", "auto")
        assert paged_kv_profile(model, dtypes, 1, 16, weight_dtype="auto", kv_cache_dtype="auto") is kv_profile(
            model, dtypes, 1, 16)


def test_every_catalog_hybrid_gets_a_raised_block():
    """Each catalog model with both recurrent state and attention is paged at vLLM's raised block size, and its
    exact profile (block 1, transformers' figure) is untouched."""
    raised = 0
    for model_id in model_ids():
        model = model_spec(model_id)
        dtypes = cache_dtypes(model, "auto", "auto")
        plain = kv_profile(model, dtypes, 1, 16)
        paged = paged_kv_profile(model, dtypes, 1, 16, weight_dtype="auto", kv_cache_dtype="auto")
        has_state = any(g.bytes_per_sequence_fixed and not g.bytes_per_token for g in plain.groups)
        if has_state and any(g.bytes_per_token for g in plain.groups):
            assert paged.block_size > 16, model_id
            assert paged.bytes_per_sequence(2500) >= plain.bytes_per_sequence(2500)
            raised += 1
        elif model.sliding_windows and paged is not plain:  # vLLM's layout of a windowed model (test_window_budget)
            assert paged.bytes_per_sequence(2500) >= plain.bytes_per_sequence(2500), model_id
        elif deepseek_v4_applies(model, "vllm"):  # vLLM's DeepSeek-V4 allocator (test_v4_budget)
            assert paged is not plain and paged.windowed and paged.block_size == 256, model_id
        else:
            assert paged is plain
        assert paged_kv_profile(model, dtypes, 1, 1, weight_dtype="auto", kv_cache_dtype="auto") is kv_profile(
            model, dtypes, 1, 1)
    assert raised >= 10  # Qwen3.5 / 3.6, Qwen3-Next, Nemotron-H / 3, Jamba, Kimi-K3


def test_sweep_counts_the_same_users_as_the_plan():
    """Concurrency and Memory curves read the sweep: its users at a context are the plan's."""
    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    users = concurrency_curve(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192), CONTEXTS,
                              gpu_name=gpu.id)
    for context, counted in zip(CONTEXTS, users, strict=True):
        one = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context), gpu_id=gpu.id)
        assert counted == one.max_concurrent_sequences



def test_home_counts_the_engine_views_users_and_names_the_block():
    """Home's headline users are the Engine page's whole requests, and its tile names vLLM's block size."""
    from tests.test_serving_app import run
    from tests.tiles import metric_tiles

    at = run("app.py", {"model": "Qwen/Qwen3.5-27B", "gpu": "nvidia-h100-80gb", "context_len": "2500"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    tile = next(t for t in metric_tiles(at) if t.label == "Max concurrent sequences")
    engine = run("pages/5_Engine.py", {"model": "Qwen/Qwen3.5-27B", "gpu": "nvidia-h100-80gb",
                                       "context_len": "2500"})
    assert not engine.exception and not engine.error, [e.value for e in engine.error]
    shown = next(t for t in metric_tiles(engine) if "concurrency" in t.label.lower())
    assert int(tile.value) == math.floor(float(shown.value.rstrip("x").replace(",", "")))
    assert "784-token blocks" in tile.help


@pytest.mark.parametrize(("model_id", "tp"), [("Qwen/Qwen3.5-27B", 1), ("Qwen/Qwen3.5-35B-A3B", 2)])
def test_datacenter_blackwell_pages_as_the_engine_view(model_id, tp):
    """On a B200 vLLM aligns a hybrid's block to 32 tokens (FlashInfer, head size 256): 800-token blocks for
    Qwen3.5-27B, not 784. The budget, the sweep and Find's budget arithmetic read the GPU as the Engine view."""
    model, gpu = model_spec(model_id), get_gpu("nvidia-b200")
    users = concurrency_curve(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=tp),
                              CONTEXTS, gpu_name=gpu.id)
    for context, swept in zip(CONTEXTS, users, strict=True):
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, num_gpus=tp), gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(tensor_parallel_size=tp, max_model_len=context, gpu_name=gpu.id))
        assert budget.block_size == engine.block_size
        assert budget.max_concurrent_sequences == math.floor(engine.max_concurrency) == swept, (model_id, context)


@pytest.mark.parametrize("k", [1, 3])
def test_speculative_decoding_keeps_a_state_page_per_draft_token(k):
    """With MTP, vLLM adds the drafter's attention layer to the pool and keeps 1 + k state pages in every Gated
    DeltaNet layer (planner/engines/vllm_kv_formats.py design note 4): Qwen3.5-27B on an H100 at 2,500 tokens holds
    31 requests at k = 1 in the Engine view, where the budget counted 45. Home and Find's budget arithmetic count
    the Engine view's whole requests."""
    from planner.serving import ServingFeatures
    from planner.serving.speculative import SpeculativeConfig
    from planner.traffic.find_types import FindRequest
    from planner.traffic.reverse import find_setups

    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    features = ServingFeatures(speculative=SpeculativeConfig(method="mtp", num_speculative_tokens=k, num_mtp_layers=1))
    for context in CONTEXTS:
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, serving=features),
                      gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(max_model_len=context, gpu_name=gpu.id, serving=features))
        assert budget.max_concurrent_sequences == math.floor(engine.max_concurrency), context
    found = find_setups(model, [gpu], FindRequest(users=1, prompt_len=2000, output_len=500, max_gpus=1,
                                                  kv_cache_dtypes=("auto",), serving=features))  # budget arithmetic
    one = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500, serving=features), gpu_id=gpu.id)
    assert found.options[0].max_concurrent_sequences == one.max_concurrent_sequences


@pytest.mark.parametrize(("model_id", "gpu_id", "tp", "block"), [
    ("deepseek-ai/DeepSeek-V3.2", "nvidia-h200", 8, 64), ("deepseek-ai/DeepSeek-V3", "nvidia-h200", 8, 64),
    ("moonshotai/Kimi-K2.5", "nvidia-b200", 8, 128), ("deepseek-ai/DeepSeek-V2-Lite", "nvidia-h100-80gb", 1, 64),
    ("deepseek-ai/DeepSeek-V2-Lite", "nvidia-a100-80gb", 1, 16)])
def test_mla_models_are_paged_in_the_block_their_backend_forces(model_id, gpu_id, tp, block):
    """vLLM forces an MLA model's block size for its default backend (vllm/platforms/cuda.py: FlashMLA 64 on
    Hopper, CUTLASS MLA 128 on datacenter Blackwell; Triton MLA on an A100 keeps 16). The budget paged every MLA
    model in 16-token blocks: DeepSeek-V3.2 on 8 x H200 at 800 tokens counted 1,181 users where vLLM holds
    1,135.69 (QA). Expected block and users: the Engine view's."""
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    for context in (800, 32768):
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, num_gpus=tp), gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes,
                             EngineRequest(tensor_parallel_size=tp, max_model_len=context, gpu_name=gpu.id))
        assert budget.block_size == engine.block_size == block
        assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes
        assert budget.max_concurrent_sequences == math.floor(engine.max_concurrency), (model_id, context)


def test_home_kv_per_sequence_tile_gives_the_paged_figure_users_are_counted_with():
    """The tile's exact figure (0.30 GiB for Qwen3.5-27B at 2,500 tokens) divides the budget into 55, not the 49
    shown; its help now gives the paged sequence beside it (QA)."""
    from tests.test_serving_app import run
    from tests.tiles import metric_tiles
    from ui.format import format_bytes

    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    at = run("app.py", {"model": model.model_id, "gpu": gpu.id, "context_len": "2500"})
    assert not at.exception and not at.error
    tile = next(t for t in metric_tiles(at) if t.label.startswith("KV per sequence"))
    paged = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500), gpu_id=gpu.id).kv_cache_bytes_needed
    assert f"in whole 784-token blocks, as users are counted: {format_bytes(paged)} per GPU" in tile.help


def test_allocation_says_why_paged_holds_fewer_than_naive_for_a_hybrid():
    """At mean length = max_model_len, naive reservation of exact bytes holds 55 Qwen3.5-27B users on an H100,
    paging in 784-token blocks with padded states 49 (Home's figure): the comparison says why (QA)."""
    from planner.traffic.allocation import allocation_for_model

    model, gpu = model_spec("Qwen/Qwen3.5-27B"), get_gpu("nvidia-h100-80gb")
    c = allocation_for_model(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500), mean_len=2500,
                                 gpu_id=gpu.id)
    home = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=2500), gpu_id=gpu.id)
    assert c.paged.max_sequences == home.max_concurrent_sequences < c.naive.max_sequences
    assert any("whole 784-token blocks" in n and "pads each recurrent state" in n for n in c.notes)
    llama = model_spec("meta-llama/Meta-Llama-3.1-8B")
    plain = allocation_for_model(llama, gpu.framework_memory_bytes, PlanRequest(context_len=2500), mean_len=2000,
                                     gpu_id=gpu.id)
    assert not any("paged holds fewer" in n for n in plain.notes)


def test_home_kv_per_sequence_tile_is_the_block_rounded_figure_the_users_count():
    """QA (stop 44): Qwen3.5-397B-A17B-NVFP4 on 4 B200 at 262,144 tokens, batch 32: the tile said 1.92 GiB (before
    the 2,112-token block rounding) beside the verdict's 61.88 GiB for 32 sequences and the CLI's 1.93 GiB."""
    from model_catalog import get_gpu, model_spec
    from planner.budget import PlanRequest, plan
    from tests.test_app import run_page as run
    from tests.tiles import metric_tiles
    from ui.format import format_bytes

    model, gpu = model_spec("nvidia/Qwen3.5-397B-A17B-NVFP4"), get_gpu("nvidia-b200")
    link = {"model": model.model_id, "gpu": gpu.id, "num_gpus": "4", "context_len": "262144", "batch_size": "32",
            "kv_cache_dtype": "fp8"}
    at = run("app.py", link)
    p = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=262144, batch_size=32, num_gpus=4,
                                                             kv_cache_dtype="fp8"), gpu_id=gpu.id)
    assert p.kv_cache_bytes_per_sequence_paged_per_gpu != p.kv_cache_bytes_per_sequence_per_gpu
    tile = next(t for t in metric_tiles(at) if t.label.startswith("KV per sequence"))
    assert tile.value == format_bytes(p.kv_cache_bytes_per_sequence_paged_per_gpu), tile.value
    assert format_bytes(p.kv_cache_bytes_per_sequence_per_gpu) in tile.help  # the exact figure stays in the help
