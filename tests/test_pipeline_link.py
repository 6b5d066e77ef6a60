"""A link that splits its GPUs into pipeline stages, and a replica wider than one node (QA, stop 41).

1. The Engine page writes ``pipeline_parallel_size`` into the link. Home read ``num_gpus=16`` as one
   tensor-parallel group of 16 in its budget *and* in its engine panel ("19.37x", ``--tensor-parallel-size 16``,
   "KV heads are replicated") while the Engine page, on the same link, planned 2 stages of 8 (40.04x). The CLI's
   headline said "fits no" and "try: use weight_dtype fp8" above an engine section that starts. Home's panel now
   plans the link's layout, and the budget of Home and the CLI plans its stages (planner.pipeline: each stage on
   its tensor-parallel GPUs, 40 users as the engine's 40.85x); the other pages that read ``num_gpus`` plan the same
   stages (tests/test_pipeline_pages.py) and name only a split that does not divide their GPUs.
2. vLLM's default ``mp`` executor keeps a replica on one node (vllm/config/parallel.py, ``ParallelConfig.
   __post_init__``); 16 GPUs per replica on 8-GPU nodes started "yes" with a one-node command and no word.

Expected figures come from :func:`planner.engines.plan_engine` of the layout, never from the page under test.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli import main
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page

MODEL = "meta-llama/Meta-Llama-3.1-405B"
GPU = "nvidia-h100-sxm-80gb"
LINK = {"model": MODEL, "gpu": GPU, "num_gpus": "16", "context_len": "32768", "kv_cache_dtype": "fp8"}
PP_LINK = {**LINK, "pipeline_parallel_size": "2"}
PP_NODES_LINK = {**PP_LINK, "num_nodes": "2"}
"""The 16 GPUs of 2 stages over 2 nodes of 8 (one node holds no 16 workers: section 3 below)."""
CLI = ["plan", "--model", MODEL, "--gpu", GPU, "--num-gpus", "16", "--context-len", "32768",
       "--kv-cache-dtype", "fp8"]


def _engine(tp: int, pp: int = 1, **more):
    gpu = get_gpu(GPU)
    return plan_engine(model_spec(MODEL), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", kv_cache_dtype="fp8", tensor_parallel_size=tp, pipeline_parallel_size=pp,
        max_model_len=32768, gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu), **more))


def _texts(at) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [e.value for kind in ("error", "warning", "success", "info", "caption", "markdown")
            for e in getattr(at, kind)]


def _codes(at) -> list[str]:
    return [c.value for c in at.code]


def _launch(at) -> str:
    return next(c for c in _codes(at) if c.startswith("vllm serve"))


# --------------------------------------------------------------------------
# 1. Home
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def home_pp():
    return run_page("app.py", PP_NODES_LINK)


@pytest.fixture(scope="module")
def engine_pp():
    return run_page("pages/5_Engine.py", PP_NODES_LINK)


def test_home_engine_panel_plans_the_links_pipeline_stages(home_pp, engine_pp):
    staged = _engine(8, 2, num_nodes=2, distributed_executor_backend="ray")
    panel = next(t for t in _texts(home_pp) if "concurrency at" in t and "would allocate" not in t)
    assert f"{staged.max_concurrency:.2f}x concurrency" in panel, panel
    assert "--pipeline-parallel-size 2" in _launch(home_pp) and "--tensor-parallel-size 8" in _launch(home_pp)
    assert _launch(home_pp) == _launch(engine_pp)  # one layout, one command


def test_home_budget_plans_the_links_stages_and_holds_the_engines_users(home_pp):
    """Home's budget plans the link's 2 stages of 8 (planner.pipeline), not one tensor-parallel group of 16, which
    replicated Llama 405B's 8 KV heads and held half the users (19 beside the engine's 40.04x, QA stop 41)."""
    staged = _engine(8, 2, num_nodes=2, distributed_executor_backend="ray")
    said = [t for t in _texts(home_pp) if "pipeline stages" in t]
    assert said, _texts(home_pp)
    assert "2 pipeline stages of 8" in said[0] and "the same stages" in said[0]
    assert f"{staged.max_concurrency:.2f}x" in said[0]
    assert f"holds the same {int(staged.requests_held)} users" in said[0]
    # Tensor parallel 8 shards Llama 405B's 8 KV heads: no note says they are replicated as a fact of the layout
    assert not any(t.startswith("num_gpus 16 \\> num_key_value_heads") for t in _texts(home_pp))
    assert not any("KV heads are replicated" in t for t in _texts(home_pp))


def test_home_formulas_are_of_the_stage_its_figures_are_of(home_pp):
    """The formula panel's rows are the planned stage's: its 63 layers, one KV head each on 8 GPUs, summing to
    the per-GPU figure shown (it listed 126 layers at tensor parallel 16 beside a stage's sum)."""
    texts = _texts(home_pp)
    intro = next(t for t in texts if t.startswith("**KV cache per token**"))
    assert "pipeline stage 1 of 2 (its 63 layers; each stage on 8 tensor-parallel GPUs)" in intro, intro
    table = next(t for t in texts if "| Layers |" in t)
    assert "| 63 layers, full attention | 2 (K, V) × 1 KV heads × 128 head_dim" in table, table
    terms = next(t for t in texts if "| KV per sequence" in t)
    assert "of the stage's layers ÷ 8 GPUs (tensor parallel splits the KV heads)" in terms, terms
    assert "÷ 16 GPUs" not in terms and "÷ 8 GPUs (tensor parallel)" in terms  # the weights: the stage's on 8


def test_home_command_line_plans_the_same_stages(home_pp, capsys):
    """Home's "Same plan from the command line" carries the stages its budget planned, and that command holds
    Home's users (without the flag the CLI planned one group of 16: another figure under the same link)."""
    line = next(c for c in _codes(home_pp) if c.startswith("python -m planner plan"))
    assert "--pipeline-parallel-size 2" in line, line
    assert "--num-nodes 2 --distributed-executor-backend ray" in line, line  # QA (stop 44): it refused on one node
    args = line.replace("\\\n", " ").split()[4:]
    assert main(["plan", *args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine_plan"]["starts"], out["engine_plan"]["reasons"]
    verdict = next(t for t in _texts(home_pp) if t.startswith("**Fits.**"))
    assert out["pipeline_parallel_size"] == 2
    assert f"up to {out['max_concurrent_sequences']} concurrent sequences" in verdict, verdict


def test_home_without_stages_keeps_its_tensor_parallel_panel():
    at = run_page("app.py", LINK)
    assert "--tensor-parallel-size 16" in _launch(at) and "--pipeline-parallel-size" not in _launch(at)
    assert not any("pipeline stages" in t for t in _texts(at))
    assert any("KV heads are replicated" in t for t in _texts(at))  # true of tensor parallel 16


def test_home_names_stages_that_do_not_divide_its_gpus():
    at = run_page("app.py", {**LINK, "pipeline_parallel_size": "3"})
    assert any("`pipeline_parallel_size=3`" in e.value for e in at.error), [e.value for e in at.error]
    assert "--tensor-parallel-size 16" in _launch(at)


def test_home_panel_reads_the_links_replicas_and_nodes():
    at = run_page("app.py", {**PP_LINK, "data_parallel_size": "2", "num_nodes": "2"})
    engine = run_page("pages/5_Engine.py", {**PP_LINK, "data_parallel_size": "2", "num_nodes": "2"})
    assert "--data-parallel-size 2" in _launch(at) and "--distributed-executor-backend ray" in _launch(at)
    assert _launch(at) == _launch(engine)


@pytest.mark.parametrize("page", ["pages/1_Memory_curves.py", "pages/2_GQA_savings.py", "pages/3_Concurrency.py",
                                  "pages/6_Allocation.py"])
def test_pages_that_read_num_gpus_plan_the_links_stages(page):
    """One link, one answer: each page plans the link's 2 stages of 8 as Home does and says so (it named them as
    left out, planning one tensor-parallel group of 16); stages that do not divide the GPUs stay named."""
    at = run_page(page, PP_LINK)
    captions = [c.value for c in at.caption]
    assert not any("Left out" in c and "pipeline_parallel_size" in c for c in captions), captions
    line = [c for c in captions if "2 pipeline stages of 8" in c]
    assert line and "as Home and the Engine page plan them" in line[0], captions
    plain = run_page(page, LINK)
    assert not any("pipeline" in c.value for c in plain.caption)
    odd = run_page(page, {**LINK, "pipeline_parallel_size": "3"})
    left = [c.value for c in odd.caption if "Left out" in c.value and "pipeline_parallel_size=3" in c.value]
    assert left and "one tensor-parallel group" in left[0], [c.value for c in odd.caption]
    assert "the Engine page refuses 16 GPUs in 3 stages" in left[0], left[0]  # it said the Engine page runs them


# --------------------------------------------------------------------------
# 1. CLI
# --------------------------------------------------------------------------
def _cli(capsys, *extra: str) -> str:
    assert main([*CLI, *extra]) == 0
    return capsys.readouterr().out


ACROSS_NODES = ("--num-nodes", "2", "--distributed-executor-backend", "ray")
"""Two nodes of 8 for the 16 GPUs of tensor parallel 8 x pipeline 2: on one node the launch does not start
(section 3 below; QA, stop 43: it said "starts yes" above the warning that it stops)."""


def test_cli_headline_plans_the_stages_beside_the_engine_section(capsys):
    out = _cli(capsys, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", *ACROSS_NODES)
    staged = _engine(8, 2, num_nodes=2, distributed_executor_backend="ray")
    assert staged.starts
    fits = next(line for line in out.splitlines() if line.startswith("fits "))
    assert fits.split()[1].rstrip(",;:") == "yes"  # the budget's 2 stages of 8 (it said "no": the model on 8 GPUs)
    assert "engine section" in fits and f"{staged.max_concurrency:.2f}x" in fits and "2 pipeline stages" in fits
    assert "try:" not in out
    users = next(line for line in out.splitlines() if line.startswith("max users"))
    assert users.split()[2] == str(int(staged.requests_held)), users  # one layout, one user count
    assert "The budget above holds" not in out  # nothing to explain between two equal counts


def test_cli_json_plans_the_stages_and_keeps_its_keys(capsys):
    out = json.loads(_cli(capsys, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", *ACROSS_NODES,
                          "--format", "json"))
    staged = _engine(8, 2, num_nodes=2, distributed_executor_backend="ray")
    assert out["fits"] is True and out["suggestions"] == [] and out["engine_plan"]["starts"]
    assert {"num_gpus", "fits", "reasons", "notes", "max_concurrent_sequences"} <= set(out)  # "fixes": a no only
    assert out["num_gpus"] == 16 and out["pipeline_parallel_size"] == 2
    assert out["max_concurrent_sequences"] == int(staged.requests_held)


def test_cli_without_stages_keeps_its_fixes(capsys):
    out = _cli(capsys, "--num-gpus", "8", "--engine", "vllm")  # 8 GPUs: the whole model does not fit in bf16
    assert "try:" in out


# --------------------------------------------------------------------------
# 3. A replica wider than one node
# --------------------------------------------------------------------------
def test_cli_warns_when_a_replica_spans_more_than_one_node(capsys):
    out = _cli(capsys, "--tensor-parallel-size", "16", "--engine", "vllm")
    across = _engine(16, num_nodes=2, distributed_executor_backend="ray")
    warning = next((line for line in out.splitlines() if "mp" in line and "node" in line and "warning" in line), "")
    assert warning, out
    assert "--num-nodes 2" in warning and across.launch_command in warning
    assert f"{across.max_concurrency:.2f}x" in warning


def test_cli_node_warning_follows_the_nodes_and_gpus_per_node(capsys):
    for extra in (["--num-nodes", "2"], ["--gpus-per-node", "16"]):
        out = _cli(capsys, "--tensor-parallel-size", "16", "--engine", "vllm", *extra)
        assert "`mp` executor" not in out, extra
    out = json.loads(_cli(capsys, "--tensor-parallel-size", "16", "--engine", "vllm", "--format", "json"))
    assert out["multi_node"]["num_nodes"] == 2 and "ray" in out["multi_node"]["launch_command"]
    small = json.loads(_cli(capsys, "--num-gpus", "8", "--engine", "vllm", "--format", "json"))
    assert "multi_node" not in small


def test_engine_page_warns_when_a_replica_spans_more_than_one_node():
    at = run_page("pages/5_Engine.py", LINK)
    across = _engine(16, num_nodes=2, distributed_executor_backend="ray")
    warned = [w.value for w in at.warning if "node" in w.value and "`mp`" in w.value]
    assert warned, [w.value for w in at.warning]
    assert "--distributed-executor-backend ray" in warned[0] and f"{across.max_concurrency:.2f}x" in warned[0]
    assert not any("`mp`" in w.value for w in run_page("pages/5_Engine.py", {**LINK, "num_nodes": "2"}).warning)
    assert not any("`mp`" in w.value for w in run_page("pages/5_Engine.py", {**LINK, "num_gpus": "8"}).warning)


def test_home_checks_a_gpu_fix_on_the_links_stages():
    """8 GPUs in 2 stages of 4 hold no bf16 Llama 405B; "use num_gpus 16" is checked as 2 stages of 8 (the
    Engine page's reading of 16 GPUs per replica), not as tensor parallel 16 in each of 2 stages (32 GPUs), and over
    the 2 nodes its 16 workers need (tests/test_fix_nodes.py)."""
    at = run_page("app.py", {**PP_LINK, "num_gpus": "8"})
    fix = next(w.value for w in at.warning if "Does not fit" in w.value)
    staged = _engine(8, 2, num_nodes=2, distributed_executor_backend="ray")
    assert "use num_gpus 16" in fix and f"over 2 nodes it starts with {staged.max_concurrency:.2f}x" in fix, fix



def test_cli_a_replica_wider_than_a_node_does_not_start_on_one(capsys):
    """QA (stop 43): DeepSeek-V3 on tensor parallel 8 x pipeline 2 printed "starts yes" and, under it, a warning
    that the same one-node launch stops at startup. One node of 8 holds no 16 workers: the verdict is no, with the
    two-node launch that runs as its reason's way out, and no log of a launch that never loads weights."""
    out = json.loads(_cli(capsys, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", "--format", "json"))
    engine, across = out["engine_plan"], out["multi_node"]
    assert engine["starts"] is False and engine["engine_log_lines"] == []
    assert "is larger than the 8 GPUs of this node" in engine["reasons"][0]
    assert across["starts"] is True and across["num_nodes"] == 2


def test_engine_page_verdict_for_a_replica_wider_than_a_node_is_a_refusal_with_the_nodes_button():
    """QA (stop 43): the Engine page showed a green "vllm starts ... 99.09x" above the warning that the one-node
    launch stops. The verdict now refuses it; the warning and its "Nodes → 2" button give the launch that runs."""
    at = run_page("pages/5_Engine.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": GPU, "num_gpus": "16",
                                        "pipeline_parallel_size": "2"})
    texts = _texts(at)
    assert not at.success
    assert any("would refuse to start" in t and "is larger than the 8 GPUs of this node" in t for t in texts)
    assert any(b.label == "Nodes → 2" for b in at.button)
    across = run_page("pages/5_Engine.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": GPU, "num_gpus": "16",
                                            "pipeline_parallel_size": "2", "num_nodes": "2"})
    assert any("vllm starts" in s.value for s in across.success), _texts(across)


def test_home_panel_refuses_a_replica_wider_than_a_node_and_offers_no_fix_that_ignores_it():
    """QA (stop 43): Home showed a green "Fits." and "vllm starts with 99.09x" for DeepSeek-V3 on 16 H100 in 2
    stages, the one-node stop only inside the folded panel. The engine's verdict is now the Engine page's refusal,
    and no one-click fix is offered that leaves the replica on one node (utilization, weights, KV dtype, GPUs)."""
    at = run_page("app.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": GPU, "num_gpus": "16",
                             "pipeline_parallel_size": "2"})
    texts = _texts(at)
    assert not at.success
    assert any("would refuse to start" in t and "is larger than the 8 GPUs of this node" in t for t in texts)
    assert not [b.label for b in at.button if b.key and b.key.startswith("start_fix")]


def test_home_and_cli_say_which_stage_the_printed_available_memory_is(capsys):
    """QA (stop 43): Home and the CLI showed the stages' smallest available KV beside a printed "Available KV cache
    memory" of stage 0, and only the Engine page said why they differ."""
    from planner.engines.replica_layout import stage_log_note

    staged = plan_engine(model_spec("deepseek-ai/DeepSeek-V3"), get_gpu(GPU).framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=8, pipeline_parallel_size=2, num_nodes=2,
        distributed_executor_backend="ray", max_model_len=8192, gpu_name=get_gpu(GPU).name))
    note = stage_log_note(staged)
    assert note and "stage 0's here" in note
    out = _cli(capsys, "--tensor-parallel-size", "8", "--pipeline-parallel-size", "2", *ACROSS_NODES)
    assert "stage 0's here" in out or not stage_log_note(_engine(8, 2, num_nodes=2, distributed_executor_backend="ray"))
    at = run_page("app.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": GPU, "num_gpus": "16",
                             "pipeline_parallel_size": "2", "num_nodes": "2"})
    assert any("stage 0's here" in c.value for c in at.caption)


@pytest.mark.parametrize("page", ["app.py", "pages/1_Memory_curves.py", "pages/2_GQA_savings.py",
                                  "pages/3_Concurrency.py", "pages/6_Allocation.py"])
def test_more_stages_than_layers_plan_one_group_and_say_why(page):
    """QA (stop 44): 32 stages of Llama 3.2 1B's 16 layers stopped every budget page with "Could not finish planning
    ... Change the inputs in the sidebar" (Home has no stages input). vLLM gives every stage a layer
    (``get_pp_indices``): the pages plan one tensor-parallel group and say why, as for stages that do not divide."""
    link = {"model": "meta-llama/Llama-3.2-1B-Instruct", "gpu": "nvidia-l4", "num_gpus": "32",
            "pipeline_parallel_size": "32", "num_nodes": "4"}
    at = run_page(page, link)
    assert not at.exception and not any("Could not finish" in e.value for e in at.error), [e.value for e in at.error]
    said = " ".join(e.value for kind in ("warning", "caption") for e in getattr(at, kind))
    assert "16 layers" in said, said
