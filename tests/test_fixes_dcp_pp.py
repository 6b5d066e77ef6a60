"""A link's pipeline stages and decode context parallel size, carried into the CLI's ``allocation`` and the fixes.

* ``allocation`` had no ``--pipeline-parallel-size``: Llama 3.1 405B on 16 H100 with ``pipeline_parallel_size=2``
  held 81 users at 8,192 tokens on the Allocation page (2 stages of 8) and 41 in the CLI (one group of 16).
* Home's fixes for a plan that fits while the engine refuses were re-checked without the plan's ``-dcp``: GLM-4.7-Flash
  at 202,752 tokens, batch 3, utilization 0.34 on 4 H100 with ``-dcp 4`` was offered only "Utilization → 0.95" (Home's
  engine panel now plans that ``-dcp 4`` launch, which starts: no fix is offered).
* The budget's GPU-count fix under ``-dcp`` ignored vLLM's rule that the DCP size divides the tensor-parallel size
  (``ParallelConfig._validate_parallel_config`` in vllm/config/parallel.py: "tp_size=... must be divisible by
  dcp_size=..."): GLM-4.7-Flash, 33 x 131,072 tokens on 4 H100 with ``-dcp 4`` was told "use num_gpus 5".
* That fix, and the one of a data-parallel CLI plan, said "tensor parallel; the smallest count that holds this batch"
  where the count kept a DCP split or was per data-parallel rank.

Expected figures come from :func:`planner.pipeline.plan_pipeline`, :func:`planner.context_budget.
plan_context_parallel` and the Allocation page itself, never from the function under test.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from model_catalog import get_gpu, model_spec
from planner import PlanRequest, plan_pipeline
from planner.cli import main
from planner.context_budget import plan_context_parallel
from planner.diagnose import valid_tensor_parallel_sizes
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from tests.test_app import metrics, run_page
from ui.format import format_int

H100 = get_gpu("nvidia-h100-sxm-80gb")
LLAMA_405B = "meta-llama/Meta-Llama-3.1-405B"
GLM = model_spec("zai-org/GLM-4.7-Flash")  # MLA, 20 heads: tensor parallel 1, 2, 4, 5, 10, 20


def _json(capsys, argv) -> dict:
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


# --------------------------------------------------------------------------
# 1. allocation --pipeline-parallel-size
# --------------------------------------------------------------------------
def test_cli_allocation_plans_the_stages_as_the_page_does(capsys):
    """One link, one answer: the CLI's naive and paged users are the Allocation page's for the link's 2 stages, and
    Home's ``plan_pipeline`` users, not those of one tensor-parallel group of 16."""
    link = {"model": LLAMA_405B, "gpu": H100.id, "num_gpus": "16", "pipeline_parallel_size": "2",
            "context_len": "8192"}
    at = run_page("pages/6_Allocation.py", link)
    shown = metrics(at)
    mean_len = at.number_input(key="mean_len").value
    out = _json(capsys, ["allocation", "--model", LLAMA_405B, "--gpu", H100.id, "--num-gpus", "16",
                         "--pipeline-parallel-size", "2", "--max-model-len", "8192", "--mean-len", str(mean_len)])
    assert format_int(out["naive_max_sequences"]) == shown["Naive: users"]
    assert format_int(out["paged_max_sequences"]) == shown["Paged: users"]
    request = PlanRequest(context_len=8192, num_gpus=16)
    stages = plan_pipeline(model_spec(LLAMA_405B), H100.framework_memory_bytes, request, H100.id,
                           pipeline_parallel_size=2)
    one_group = plan_pipeline(model_spec(LLAMA_405B), H100.framework_memory_bytes, request, H100.id)
    assert out["max_concurrent_sequences"] == stages.max_concurrent_sequences > one_group.max_concurrent_sequences
    assert out["kv_cache_budget_bytes"] == stages.kv_cache_budget_bytes
    assert out["pipeline_parallel_size"] == 2


def test_cli_allocation_stages_take_plans_gpu_rules(capsys):
    """``--pipeline-parallel-size`` alone is one GPU per stage (``plan``'s rule, planner/cli/engine.py); GPUs the
    stages do not split are refused with the numbers; without the flag the JSON says one stage."""
    model = model_spec("meta-llama/Meta-Llama-3-8B")
    out = _json(capsys, ["allocation", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", H100.id,
                         "--pipeline-parallel-size", "2", "--mean-len", "800"])
    two = plan_pipeline(model, H100.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=2), H100.id,
                        pipeline_parallel_size=2)
    assert out["max_concurrent_sequences"] == two.max_concurrent_sequences and out["pipeline_parallel_size"] == 2
    assert main(["allocation", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", H100.id, "--num-gpus", "3",
                 "--pipeline-parallel-size", "2", "--mean-len", "800"]) == 2
    assert "--num-gpus 3 is not a multiple of --pipeline-parallel-size 2" in capsys.readouterr().err
    plain = _json(capsys, ["allocation", "--model", "meta-llama/Meta-Llama-3-8B", "--gpu", H100.id,
                           "--mean-len", "800"])
    assert plain["pipeline_parallel_size"] == 1


# --------------------------------------------------------------------------
# 2. engine_start_fixes re-checks the budget under the plan's -dcp
# --------------------------------------------------------------------------
def _glm_request(**more) -> PlanRequest:
    return PlanRequest(**{"context_len": 202_752, "batch_size": 3, "num_gpus": 4, "gpu_memory_utilization": 0.34,
                          **more})


def test_engine_start_fixes_check_the_budget_as_the_page_plans_it_under_dcp():
    """The budget with ``-dcp 4`` fits (3 users: each GPU keeps 50,688 of a request's tokens); vLLM without it
    refuses (Home's engine panel has no ``-dcp``). Each fix with which vLLM starts is kept where the budget *with*
    ``-dcp 4`` still fits: fp8 KV and fp8 weights do, but without the split the budget held none of them."""
    from planner.fixes import engine_start_fixes

    request = _glm_request()
    base = plan_context_parallel(GLM, H100.framework_memory_bytes, request, H100.id, decode_context_parallel_size=4)
    engine_request = EngineRequest(engine="vllm", tensor_parallel_size=4, max_model_len=202_752,
                                   gpu_memory_utilization=0.34, gpu_name=H100.name)
    refused = plan_engine(GLM, H100.framework_memory_bytes, engine_request)
    assert base.fits and not refused.starts
    fixes = engine_start_fixes(GLM, H100.framework_memory_bytes, request, engine_request, refused, gpu_id=H100.id,
                               decode_context_parallel_size=4)
    keys = {f.fix.key for f in fixes}
    assert {"kv_cache_dtype", "weight_dtype", "gpu_memory_utilization"} <= keys, [f.label for f in fixes]
    for f in fixes:
        fixed = replace(request, **{f.fix.key: f.fix.value})
        assert plan_context_parallel(GLM, H100.framework_memory_bytes, fixed, H100.id,
                                     decode_context_parallel_size=4).fits, f.label
    plain = plan_pipeline(GLM, H100.framework_memory_bytes, replace(request, kv_cache_dtype="fp8"), H100.id)
    assert not plain.fits  # the plain budget would have dropped the fp8 fix


def test_checked_fixes_pass_the_plans_dcp_to_the_engine_start_fixes():
    """A plan under ``-dcp 4`` that does not fit (batch 4) while vLLM refuses even with the split (utilization
    0.24; at 0.34 the ``-dcp 4`` launch starts, so no engine fix is needed): the engine's own fixes appended by
    :func:`planner.fixes.checked_fixes` are those whose budget fits with the split."""
    from planner.fixes import checked_fixes

    request = _glm_request(batch_size=4, gpu_memory_utilization=0.24)
    base = plan_context_parallel(GLM, H100.framework_memory_bytes, request, H100.id, decode_context_parallel_size=4)
    engine_request = EngineRequest(engine="vllm", tensor_parallel_size=4, max_model_len=202_752,
                                   gpu_memory_utilization=0.24, gpu_name=H100.name)
    assert not base.fits
    fixes = checked_fixes(GLM, H100.framework_memory_bytes, request, base, engine_request, gpu_id=H100.id)
    assert any(f.fix.key == "weight_dtype" for f in fixes), [f.label for f in fixes]
    for f in fixes:
        fixed = replace(request, **{f.fix.key: f.fix.value})
        assert plan_context_parallel(GLM, H100.framework_memory_bytes, fixed, H100.id,
                                     decode_context_parallel_size=4).fits, f.label


# --------------------------------------------------------------------------
# 3 and 4. The GPU-count fix under -dcp keeps a tensor-parallel size the DCP size divides, and says so
# --------------------------------------------------------------------------
@pytest.mark.parametrize(("pp", "batch_size"), [(1, 33)])  # stages beside -dcp: refused (test_home_dcp_pipeline)
def test_gpu_fix_under_dcp_is_a_count_vllm_splits_and_names_the_dcp(pp, batch_size):
    """vLLM refuses ``-dcp 4`` on tensor parallel 5 (vllm/config/parallel.py); the fix is the smallest valid
    tensor-parallel size above 4 that 4 divides and whose budget with the split holds the batch, in the plan's
    stages; its text names the DCP it keeps (and the stages). In 2 stages of 4 the budget held 73 users, and the
    fix already was 2 stages of 20 but named no DCP."""
    request = PlanRequest(context_len=131_072, batch_size=batch_size, num_gpus=4 * pp)
    base = plan_context_parallel(GLM, H100.framework_memory_bytes, request, H100.id, decode_context_parallel_size=4,
                                 pipeline_parallel_size=pp)
    assert not base.fits
    fix = next(s for s in base.suggestions if getattr(s, "key", None) == "num_gpus")

    def holds(tp: int) -> bool:
        return plan_context_parallel(GLM, H100.framework_memory_bytes, replace(request, num_gpus=tp * pp), H100.id,
                                     decode_context_parallel_size=4, pipeline_parallel_size=pp).fits

    splits = [n for n in valid_tensor_parallel_sizes(GLM, 64) if n > 4 and n % 4 == 0]
    expected = next(n for n in splits if holds(n))
    assert fix.value == expected * pp, str(fix)
    assert "decode context parallel 4" in fix and "tensor parallel;" not in fix, str(fix)
    if pp > 1:
        assert f"2 stages of {expected} tensor-parallel GPUs" in fix, str(fix)


def test_engine_gpu_fix_that_drops_the_dcp_says_so():
    """An engine fix of a GPU count the plan's DCP size does not divide (vLLM's own "GPUs → 5" for a launch without
    ``-dcp``) is checked and labelled as the page plans it: without the split."""
    from planner.fixes import engine_start_fixes

    request = PlanRequest(context_len=202_752, batch_size=1, num_gpus=4, gpu_memory_utilization=0.3)
    engine_request = EngineRequest(engine="vllm", tensor_parallel_size=4, max_model_len=202_752,
                                   gpu_memory_utilization=0.3, gpu_name=H100.name)
    refused = plan_engine(GLM, H100.framework_memory_bytes, engine_request)
    assert not refused.starts
    fixes = engine_start_fixes(GLM, H100.framework_memory_bytes, request, engine_request, refused, gpu_id=H100.id,
                               decode_context_parallel_size=4)
    gpus = [f for f in fixes if f.fix.key == "num_gpus"]
    assert any(f.fix.value % 4 for f in gpus), [f.label for f in fixes]  # vLLM's own next count, 10, is one
    for f in gpus:
        if f.fix.value % 4:
            assert "-dcp" in f.label and "decode context parallel 4" in f.help, (f.label, f.help)
        else:
            assert "-dcp" not in f.label, f.label


def test_cli_data_parallel_gpu_fix_is_per_rank(capsys):
    """Under ``--data-parallel-size 4`` the budget section prices one rank: its GPU fix is that rank's tensor
    parallel size, and says so (it said "tensor parallel; the smallest count that holds this batch"). The batch is
    one whose share, ceil(100 / 4) = 25, one rank of one H100 does not hold (20 fit: 5 a rank, of 13)."""
    out = _json(capsys, ["plan", "--model", "meta-llama/Meta-Llama-3.1-8B", "--gpu", H100.id, "--num-gpus", "1",
                         "--data-parallel-size", "4", "--context-len", "32768", "--batch-size", "100"])
    assert out["data_parallel"]["batch_size_per_replica"] > out["max_concurrent_sequences"]
    fix = next(s for s in out["suggestions"] if s.startswith("use num_gpus"))
    assert "per data-parallel rank" in fix and "4 ranks" in fix, fix


def test_home_plans_the_dcp_launch_that_starts_and_needs_no_start_fix():
    """Home (app.py) plans the link's ``-dcp 4`` in its budget and, since then, in its engine panel too (as the Engine
    page): at utilization 0.34 the ``-dcp 4`` launch starts (each GPU keeps 50,688 of a request's tokens), so there
    is no "would refuse to start" warning and no start fix. Before, the panel planned the launch without the split,
    which refuses, and offered fixes for a refusal the Engine page does not show (this test then asked for them)."""
    link = {"model": GLM.model_id, "gpu": H100.id, "num_gpus": "4", "context_len": "202752", "batch_size": "3",
            "gpu_memory_utilization": "0.34", "decode_context_parallel_size": "4"}
    at = run_page("app.py", link)
    engine = run_page("pages/5_Engine.py", link)
    assert not at.exception and not engine.exception
    assert not any("would refuse to start" in w.value for w in engine.warning)  # the premise: it starts there
    assert not any("would refuse to start" in w.value for w in at.warning), [w.value for w in at.warning]
    assert not [b.label for b in at.button if b.key and "start_fix" in b.key], [b.label for b in at.button]


# --------------------------------------------------------------------------
# 5. The engine figures a fix quotes under -dcp
# --------------------------------------------------------------------------
def test_home_fix_quotes_the_dcp_launch_the_engine_page_plans():
    """QA: DeepSeek-V3.2 on 8 H200 at 131,072 tokens, batch 64, fp8, ``-dcp 8``: Home's "Batch → 57" said "starts
    with 7.21x" (the launch without the split) where the Engine page prints 57.67x, and "GPUs → 16, 2 nodes" said
    14.05x where the 16-GPU launch prints 112.44x. Each fix now quotes the concurrency of
    :func:`planner.scale.context.apply_dcp` of its own launch, as the Engine page and ``plan -dcp`` show it."""
    from planner.scale.context import apply_dcp

    h200, model_id = get_gpu("nvidia-h200-sxm"), "deepseek-ai/DeepSeek-V3.2"
    at = run_page("app.py", {"model": model_id, "gpu": h200.id, "num_gpus": "8", "kv_cache_dtype": "fp8",
                             "context_len": "131072", "batch_size": "64", "decode_context_parallel_size": "8"})
    helps = {b.label: b.help for b in at.button}
    model = model_spec(model_id)

    def printed(tp: int, nodes: int) -> str:
        request = EngineRequest(engine="vllm", max_model_len=131072, tensor_parallel_size=tp, num_nodes=nodes,
                                kv_cache_dtype="fp8", gpu_name=h200.name,
                                distributed_executor_backend="ray" if nodes > 1 else "mp")
        launch = plan_engine(model, h200.framework_memory_bytes, request)
        return f"{apply_dcp(model, h200.framework_memory_bytes, request, launch, 8).max_concurrency:.2f}x"

    batch = next(label for label in helps if label.startswith("Batch"))
    gpus = next(label for label in helps if label.startswith("GPUs"))
    assert printed(8, 1) in helps[batch] and printed(16, 2) in helps[gpus]
    assert float(printed(8, 1)[:-1]) > 50  # the split's figure, not the whole-request launch's 7.21x
