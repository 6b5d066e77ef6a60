"""The budget of a replica split into pipeline stages (planner/pipeline.py).

Expected figures come from the configs' own fields (layers, KV heads, head_dim) and vLLM's split of the layers
(``get_pp_indices`` in vllm/distributed/utils.py: 32 layers in 3 stages are 11, 11, 10), or from the engine
view's separate code path (:func:`planner.engines.plan_engine`), never from the function under test.
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan, plan_pipeline
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from planner.pipeline import stage_model

GPU = get_gpu("nvidia-h100-sxm-80gb")
LLAMA_405B = model_spec("meta-llama/Meta-Llama-3.1-405B")  # config: 126 layers, 8 KV heads, head_dim 16384 / 128
LLAMA_8B = model_spec("meta-llama/Meta-Llama-3.1-8B")  # config: 32 layers, 8 KV heads, head_dim 4096 / 32


def _plan(model, num_gpus: int, pp: int, **more):
    request = PlanRequest(context_len=more.pop("context_len", 8192), num_gpus=num_gpus, **more)
    return plan_pipeline(model, GPU.framework_memory_bytes, request, GPU.id, pipeline_parallel_size=pp)


def test_each_gpu_holds_its_stages_layers_with_the_kv_heads_sharded():
    """2 stages of 8 for Llama 3.1 405B: one KV head (8 / 8) of 63 layers per GPU, where one group of 16
    replicates a head over all 126 layers (vLLM keeps max(1, kv_heads // tp) heads per GPU)."""
    staged = _plan(LLAMA_405B, 16, 2)
    one_group = _plan(LLAMA_405B, 16, 1)
    head_dim, bf16 = 16384 // 128, 2
    assert staged.kv_cache_bytes_per_token_per_gpu == 63 * 1 * head_dim * 2 * bf16
    assert one_group.kv_cache_bytes_per_token_per_gpu == 126 * 1 * head_dim * 2 * bf16
    assert staged.kv_cache_bytes_per_token == one_group.kv_cache_bytes_per_token == 126 * 8 * head_dim * 2 * bf16
    assert staged.num_gpus == 16 and staged.pipeline_parallel_size == 2 and one_group.pipeline_parallel_size == 1
    assert staged.params == one_group.params and staged.weights_bytes == one_group.weights_bytes
    assert staged.max_concurrent_sequences > one_group.max_concurrent_sequences  # half the KV per token per GPU


MINIMAX = model_spec("MiniMaxAI/MiniMax-M2.5")


@pytest.mark.parametrize(("model", "num_gpus", "pp", "nodes"), [
    (LLAMA_405B, 16, 2, 2), (LLAMA_8B, 3, 3, 1), (LLAMA_8B, 4, 2, 1), (LLAMA_8B, 2, 2, 1), (MINIMAX, 8, 8, 1)])
def test_the_budgets_users_are_the_engine_views_for_the_same_stages(model, num_gpus, pp, nodes):
    """Two code paths, one answer: the budget's stages and vLLM's view of the same launch (whose cache is sized
    to the smallest worker's blocks) hold the same users on one node. Each stage's GPUs hold the pipeline group's
    NCCL buffers and only the last stage samples (QA, stop 44: Llama 3.1 8B in 2 stages of 1 GPU held 123 beside
    the engine's 122.32x, MiniMax-M2.5 in 8 stages 164 beside 166.62x), and a replica wider than a node is priced
    on the nodes it needs, as the engine view prices it (405B in 2 stages of 8 over 2 nodes: 80 beside 81.71x)."""
    staged = _plan(model, num_gpus, pp)
    engine = plan_engine(model, GPU.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=num_gpus // pp, pipeline_parallel_size=pp, max_model_len=8192,
        num_nodes=nodes, distributed_executor_backend="ray" if nodes > 1 else "mp", gpu_name=GPU.name,
        gpu_memory_reported_bytes=reported_memory_bytes(GPU)))
    assert engine.starts
    assert staged.max_concurrent_sequences == int(engine.requests_held)


def test_a_group_wider_than_a_node_is_priced_on_the_nodes_it_needs():
    """DeepSeek-V3 on 16 H100: the budget priced one node's NVLink groups (26.48 GiB of KV per GPU) where the
    launch runs only over 2 nodes of 8, which the engine view prices (27.88 GiB); the two now agree."""
    model = model_spec("deepseek-ai/DeepSeek-V3")
    budget = _plan(model, 16, 1)
    engine = plan_engine(model, GPU.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=16, max_model_len=8192, num_nodes=2, distributed_executor_backend="ray",
        gpu_name=GPU.name, gpu_memory_reported_bytes=reported_memory_bytes(GPU)))
    assert budget.kv_cache_budget_bytes == engine.available_kv_cache_bytes
    assert budget.max_concurrent_sequences == int(engine.requests_held)


def test_the_layers_split_as_vllm_splits_them():
    """32 layers in 3 stages: 11, 11, 10 (the remainder to the stages before the last); the first stage also holds
    the embedding, the last the final norm and LM head."""
    stages = [stage_model(LLAMA_8B, s, 3) for s in range(3)]
    assert [len(s.layers) for s in stages] == [11, 11, 10]
    assert sum(s.num_parameters for s in stages) == LLAMA_8B.num_parameters
    staged = _plan(LLAMA_8B, 3, 3)
    assert staged.pipeline_stage in (0, 1)  # 11 layers: more KV per token than the last stage's 10
    alone = plan(stages[staged.pipeline_stage], GPU.framework_memory_bytes, PlanRequest(context_len=8192), GPU.id)
    assert staged.weights_bytes_per_gpu == alone.weights_bytes_per_gpu
    assert staged.max_concurrent_sequences == alone.max_concurrent_sequences
    assert f"stage {staged.pipeline_stage}'s (layers " in staged.notes[-1]


def test_one_stage_is_the_plain_plan():
    request = PlanRequest(context_len=8192, num_gpus=8)
    assert plan_pipeline(LLAMA_405B, GPU.framework_memory_bytes, request, GPU.id) == plan(
        LLAMA_405B, GPU.framework_memory_bytes, request, GPU.id)


def test_a_stages_gpu_fix_names_every_gpu_of_the_replica_and_fits():
    """2 stages of 4 GPUs hold no bf16 Llama 405B; the stage's "more tensor-parallel GPUs" fix is said as GPUs per
    replica (stages x group), and applied so, it fits."""
    short = _plan(LLAMA_405B, 8, 2)
    assert not short.fits
    fix = next(f for f in short.suggestions if getattr(f, "key", None) == "num_gpus")
    assert fix.value % 2 == 0 and fix.value > 8 and "2 stages of" in str(fix)
    assert _plan(LLAMA_405B, fix.value, 2).fits


@pytest.mark.parametrize(("num_gpus", "pp", "words"), [(16, 3, "does not divide"), (64, 64, "more than the 32")])
def test_a_layout_that_cannot_be_split_says_how_to_fix_it(num_gpus, pp, words):
    with pytest.raises(ValueError, match=words):
        _plan(LLAMA_8B, num_gpus, pp)
