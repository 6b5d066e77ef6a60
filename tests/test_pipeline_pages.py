"""One link, one answer: the pages that read ``num_gpus`` plan the link's pipeline stages as Home does.

Memory curves, GQA savings, Concurrency and Allocation planned a link's ``num_gpus=16`` with
``pipeline_parallel_size=2`` as one tensor-parallel group of 16 (which replicates Llama 3.1 405B's 8 KV heads:
38 users at 8,192 tokens) and only named the split they left out, where Home plans the link's 2 stages of 8
(:func:`planner.pipeline.plan_pipeline`: 81 users, the engine view's 81.71x). Each page now plans the same stages:
its users at Home's context are ``plan_pipeline``'s.

Expected figures come from :func:`planner.pipeline.plan_pipeline` and :func:`planner.budget.plan` (the stages'
users the smallest stage's: vLLM's ``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py), never from the
page or the sweep under test.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.model.kv import attention_variants
from planner.pipeline import plan_pipeline, stage_model
from planner.serving import LoRAConfig, ServingFeatures
from planner.sweep import concurrency_curve, memory_curve
from planner.traffic.allocation import allocation_for_model
from planner.traffic.kvquant import compare_kv_dtypes
from tests.lazy_tabs import open_tab
from tests.test_app import metrics, plotly_specs, run_page
from ui.format import format_int, format_tokens, format_tokens_short

MODEL_ID = "meta-llama/Meta-Llama-3.1-405B"
GPU = get_gpu("nvidia-h100-sxm-80gb")
MODEL = model_spec(MODEL_ID)
LINK = {"model": MODEL_ID, "gpu": GPU.id, "num_gpus": "16", "pipeline_parallel_size": "2", "context_len": "8192"}
PLAIN = {k: v for k, v in LINK.items() if k != "pipeline_parallel_size"}
CONTEXTS = (1024, 8192, 32768, 131072)


def _home(context_len: int = 8192, pp: int = 2, model=MODEL, **more):
    """Home's budget of the link (app.py: ``plan_pipeline`` of the link's stages)."""
    request = PlanRequest(context_len=context_len, num_gpus=16, **more)
    return plan_pipeline(model, GPU.framework_memory_bytes, request, GPU.id, pipeline_parallel_size=pp)


def _texts(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [e.value for kind in ("error", "warning", "info", "caption", "markdown") for e in getattr(at, kind)]


def _says_the_stages(at) -> None:
    said = [t for t in _texts(at) if "2 pipeline stages of 8" in t]
    assert said and "as Home and the Engine page plan them" in said[0], _texts(at)
    assert not any("Left out" in t and "pipeline_parallel_size" in t for t in _texts(at))


# --------------------------------------------------------------------------
# The planner functions the pages call
# --------------------------------------------------------------------------
def test_the_stages_hold_home_users_where_one_group_holds_fewer():
    """The premise: 2 stages of 8 hold more than one tensor-parallel group of 16 (the KV heads sharded)."""
    assert _home().max_concurrent_sequences > _home(pp=1).max_concurrent_sequences


def test_concurrency_curve_of_the_stages_is_plan_pipeline_at_each_context():
    request = PlanRequest(context_len=8192, num_gpus=16)
    staged = concurrency_curve(MODEL, GPU.framework_memory_bytes, request, CONTEXTS, GPU.id, pipeline_parallel_size=2)
    assert staged == tuple(_home(c).max_concurrent_sequences for c in CONTEXTS)
    plain = concurrency_curve(MODEL, GPU.framework_memory_bytes, request, CONTEXTS, GPU.id)
    assert plain == tuple(plan(MODEL, GPU.framework_memory_bytes, replace(request, context_len=c), GPU.id)
                          .max_concurrent_sequences for c in CONTEXTS)


def test_memory_curve_of_the_stages_is_the_fullest_gpu_and_holds_home_users():
    """Each point is the stage whose GPUs hold the most bytes; at Home's users and context it is within the usable
    memory, where one group of 16 holding as many users is over it."""
    users = _home().max_concurrent_sequences
    request = PlanRequest(context_len=8192, num_gpus=16, batch_size=users)
    staged = memory_curve(MODEL, request, CONTEXTS, GPU.framework_memory_bytes, GPU.id, pipeline_parallel_size=2)
    group = replace(request, num_gpus=8, pipeline_parallel_size=2)  # a stage's request (planner.pipeline)
    stages = [memory_curve(stage_model(MODEL, s, 2), group, CONTEXTS, GPU.framework_memory_bytes, GPU.id)
              for s in range(2)]
    assert [p.total_bytes for p in staged] == [max(s[i].total_bytes for s in stages) for i in range(len(CONTEXTS))]
    usable = _home().usable_memory_bytes
    at_home = CONTEXTS.index(8192)
    assert staged[at_home].total_bytes <= usable
    one_group = memory_curve(MODEL, request, CONTEXTS, GPU.framework_memory_bytes, GPU.id)
    assert one_group[at_home].total_bytes > usable


def test_allocation_of_the_stages_is_plan_pipelines_budget_and_users():
    request = PlanRequest(context_len=8192, num_gpus=16)
    home = _home()
    c = allocation_for_model(MODEL, GPU.framework_memory_bytes, request, mean_len=800, gpu_id=GPU.id,
                             pipeline_parallel_size=2)
    assert c.max_concurrent_sequences == home.max_concurrent_sequences
    assert c.kv_cache_budget_bytes == home.kv_cache_budget_bytes
    assert c.kv_cache_bytes_per_token_per_gpu == home.kv_cache_bytes_per_token_per_gpu
    plain = allocation_for_model(MODEL, GPU.framework_memory_bytes, request, mean_len=800, gpu_id=GPU.id)
    assert plain.max_concurrent_sequences == _home(pp=1).max_concurrent_sequences


def test_kv_dtype_comparison_of_the_stages_is_plan_pipeline_per_dtype():
    request = PlanRequest(context_len=8192, num_gpus=16)
    rows = compare_kv_dtypes(MODEL, GPU.framework_memory_bytes, request, ("auto", "fp8"), gpu_id=GPU.id,
                             pipeline_parallel_size=2)
    assert [r.max_concurrent_sequences for r in rows] == [
        _home(kv_cache_dtype=k).max_concurrent_sequences for k in ("auto", "fp8")]


# --------------------------------------------------------------------------
# The pages
# --------------------------------------------------------------------------
def test_concurrency_page_plans_the_links_stages():
    at = run_page("pages/3_Concurrency.py", LINK)
    users = _home().max_concurrent_sequences
    assert metrics(at)[GPU.name] == format_int(users)  # the headline at the plan's context
    (figure,) = plotly_specs(at)
    line = next(t for t in figure["data"] if t["name"] == GPU.name)
    assert dict(zip(line["x"], line["y"]))[8192] == users
    open_tab(at, "concurrency_section", "Table by context length")
    table = at.table[0].value
    row = table[table["GPU"] == GPU.name].iloc[0]
    assert row[format_tokens_short(8192)] == format_int(users)
    _says_the_stages(at)


def test_gqa_page_plans_every_variant_in_the_links_stages():
    at = run_page("pages/2_GQA_savings.py", LINK)
    shown = metrics(at)
    for v in attention_variants(MODEL):
        tag = f"{v.name} (as built)" if v.as_built else v.name
        assert shown[f"Max sequences, {tag}"] == format_int(_home(model=v.model).max_concurrent_sequences), tag
    assert shown["Max sequences, GQA (as built)"] == format_int(_home().max_concurrent_sequences)
    _says_the_stages(at)


def test_allocation_page_plans_the_links_stages():
    """The naive scheme reserves Home's context for each user (8,192 tokens: whole blocks, so its count is Home's);
    the paged users at the page's mean length come from the same stage's budget."""
    at = run_page("pages/6_Allocation.py", LINK)
    shown = metrics(at)
    assert shown["Naive: users"] == format_int(_home().max_concurrent_sequences)
    mean_len = at.number_input(key="mean_len").value
    c = allocation_for_model(MODEL, GPU.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=16),
                             mean_len=mean_len, gpu_id=GPU.id, pipeline_parallel_size=2)
    assert shown["Paged: users"] == format_int(c.paged.max_sequences)
    _says_the_stages(at)


def test_concurrency_page_with_serving_features_plans_the_links_stages():
    """With a serving feature on (4 LoRA slots, as the sidebar reads ``enable_lora``), each point is a plan of the
    stages with the features (the sweep prices none), the headline and the table both ``plan_pipeline``'s."""
    at = run_page("pages/3_Concurrency.py", {**LINK, "enable_lora": "true", "max_loras": "4"})
    users = _home(serving=ServingFeatures(lora=LoRAConfig(max_loras=4, max_lora_rank=16))).max_concurrent_sequences
    assert users != _home().max_concurrent_sequences  # the slots take budget: the features are priced
    assert metrics(at)[GPU.name] == format_int(users)
    open_tab(at, "concurrency_section", "Table by context length")
    table = at.table[0].value
    assert table[table["GPU"] == GPU.name].iloc[0][format_tokens_short(8192)] == format_int(users)
    _says_the_stages(at)


@pytest.mark.parametrize(("page", "users_label"), [("pages/3_Concurrency.py", GPU.name),
                                                   ("pages/2_GQA_savings.py", "Max sequences, GQA (as built)"),
                                                   ("pages/6_Allocation.py", "Naive: users")])
def test_a_link_without_stages_is_unchanged(page, users_label):
    """One tensor-parallel group of 16, as before, and no word of stages."""
    at = run_page(page, PLAIN)
    assert metrics(at)[users_label] == format_int(_home(pp=1).max_concurrent_sequences)
    assert not any("pipeline" in t for t in _texts(at))


def test_memory_curves_page_fits_home_users_at_home_context():
    """At a batch of Home's users, the longest context that fits on the link's stages is Home's context or more
    (plan_pipeline's own figure); one group of 16 holds that batch only at a shorter context."""
    users = _home().max_concurrent_sequences
    staged = _home(batch_size=users)
    at = run_page("pages/1_Memory_curves.py", {**LINK, "batch_size": str(users)})
    _says_the_stages(at)
    open_tab(at, "memory_curves_section", "Longest context that fits")
    table = at.table[0].value
    cell = table[table["Model"] == MODEL.display_name].iloc[0][GPU.name]
    assert staged.max_context_len >= 8192 and cell.startswith(format_tokens(staged.max_context_len)), cell
    plain = run_page("pages/1_Memory_curves.py", {**PLAIN, "batch_size": str(users)})
    open_tab(plain, "memory_curves_section", "Longest context that fits")
    table = plain.table[0].value
    cell = table[table["Model"] == MODEL.display_name].iloc[0][GPU.name]
    one_group = _home(pp=1, batch_size=users)
    assert one_group.max_context_len < 8192 and cell.startswith(format_tokens(one_group.max_context_len)), cell
    assert not any("pipeline" in t for t in _texts(plain))
