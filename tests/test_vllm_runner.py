"""vLLM's two model runners per release (planner/engines/vllm_runner.py) and the ``vllm-v0.28`` profile.

Oracles: the runner-selection rules and buffer shapes of vLLM's published v0.22.0-v0.29.0 wheels, worked by
hand in the module's docstring (design notes 1-4), and reference cases N12-N14 (vLLM 0.28.0, Qwen3-14B on
an L40S), whose logs state the release.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path
from dataclasses import replace

import pytest

from model_catalog import model_spec
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.engines.logparse import LogFigures
from planner.engines.profiles import ENGINE_CHOICES, engine_profile, vllm_scheduler_defaults
from planner.engines.reconcile import suggest_engine
from planner.engines.vllm_cudagraph import capture_sizes
from planner.engines.vllm_runner import FIRST_COMPILE_BYTES, graphs_charged, model_runner, v2_state_bytes
from planner.serving import ServingFeatures, SpeculativeConfig
from planner.units import GiB

ROOT = Path(__file__).resolve().parents[1]
L40S = 47_768_928_256  # the catalog's L40S [bytes]
QWEN14B = "Qwen/Qwen3-14B"
N12_STATE = 169_930_756
"""Design note 4's worked example: 256 slots x 663,688 B + 2,048 tokens x 13 B + 4 B."""


def _plan(engine: str, model_id: str = QWEN14B, **kw):
    return plan_engine(model_spec(model_id), L40S, EngineRequest(engine=engine, max_model_len=40960,
                                                                 gpu_name="L40S", **kw))


@pytest.mark.parametrize(("engine", "model_id", "runner"), [
    ("vllm-v0.28", QWEN14B, "v2"),  # dense: V2 from v0.25
    ("vllm-v0.28", "nvidia/Qwen3.6-35B-A3B-NVFP4", "v1"),  # MoE + Gated DeltaNet: V1 up to v0.28
    ("vllm-v0.28", "deepseek-ai/DeepSeek-V2-Lite-Chat", "v2"),  # an MoE v0.24+ put on V2 by name
    ("vllm", "nvidia/Qwen3.6-35B-A3B-NVFP4", "v2"),  # v0.29: every model
    ("vllm-v0.11", QWEN14B, "v1"),  # before v0.22 there was one runner
])
def test_runner_per_release_and_model(engine, model_id, runner):
    assert model_runner(model_spec(model_id), engine, EngineRequest(engine=engine)) == runner


def test_ngram_speculation_keeps_the_v1_runner():
    ngram = ServingFeatures(speculative=SpeculativeConfig(method="ngram", num_speculative_tokens=3))
    request = EngineRequest(engine="vllm", serving=ngram)
    assert model_runner(model_spec(QWEN14B), "vllm", request) == "v1"


def test_only_v2_before_v0_29_leaves_the_graphs_out_of_the_budget():
    assert not graphs_charged(engine_profile("vllm-v0.28"), "v2")
    assert graphs_charged(engine_profile("vllm-v0.28"), "v1")
    assert graphs_charged(engine_profile("vllm"), "v2")
    assert not graphs_charged(engine_profile("vllm-v0.11"), "v1")


def test_v2_state_is_the_worked_example():
    model = model_spec(QWEN14B)
    assert v2_state_bytes(model, max_num_seqs=256, max_num_batched_tokens=2048) == N12_STATE
    per_slot = 4 * (151_936 + 4_748 + 4_749 + 3_457 + 1_024) + 32
    assert per_slot == 663_688 and N12_STATE == 256 * per_slot + 2048 * 13 + 4
    # an earlier pipeline stage holds no sampler: only the request slots and the input buffers
    early = v2_state_bytes(model, max_num_seqs=256, max_num_batched_tokens=2048, last_stage=False)
    assert early == 256 * 32 + 2048 * 13 + 4
    # one draft token adds a bitmask row and its logit index (4,749 x 4 B) and a draft-token slot (8 B)
    spec = v2_state_bytes(model, max_num_seqs=256, max_num_batched_tokens=2048, num_speculative_tokens=1)
    assert spec - N12_STATE == 256 * (4 * 4_749 + 8)


def test_n12_under_its_own_release_charges_no_graphs_and_keeps_the_v2_state():
    new, newest = _plan("vllm-v0.28"), _plan("vllm")
    rank = new.limiting_rank
    assert not rank.cudagraph_charged and rank.cudagraph_bytes > 0  # captured later, in the headroom
    assert rank.runner_state_bytes == N12_STATE
    assert rank.available_kv_cache_bytes == (rank.requested_bytes - rank.weights_bytes - rank.activation_bytes
                                             - rank.non_torch_bytes)
    # v0.29 runs the same model on the same runner and only adds its graph estimate
    graphs = newest.limiting_rank.cudagraph_bytes
    assert newest.limiting_rank.cudagraph_charged and graphs > 0
    assert rank.available_kv_cache_bytes - newest.available_kv_cache_bytes == graphs
    assert "Estimated CUDA graph memory" not in " ".join(new.engine_log_lines)
    assert any("model runner V2" in n and "not charged" in n for n in new.notes)


def test_json_names_the_runner_terms_only_where_they_exist():
    ranks = _plan("vllm-v0.28").to_dict()["ranks"]
    assert ranks[0]["runner_state_bytes"] == N12_STATE and "cudagraph_charged" not in ranks[0]
    assert _plan("vllm").to_dict()["ranks"][0]["cudagraph_charged"] is True
    old = _plan("vllm-v0.11").to_dict()["ranks"][0]
    assert "runner_state_bytes" not in old and "cudagraph_charged" not in old


def test_warm_relaunch_of_a_public_v2_log_is_planned_within_print_rounding():
    """vLLM 0.27.1, Qwen2.5-0.5B-Instruct on an RTX 4090 relaunched with its compile cache warm
    (tests/data/reference/vllm_runner_logs.json): the printed split, term by term (vllm_runner.py note 5)."""
    log = json.loads((ROOT / "tests" / "data" / "reference" / "vllm_runner_logs.json").read_text())[
        "qwen2_5_0_5b_rtx4090"]
    warm, cold = log["warm_compile_cache"], log["first_compile"]
    plan = plan_engine(model_spec(log["model"]), round(log["printed_total_gib"] * GiB), EngineRequest(
        engine="vllm-v0.28", max_model_len=2048, gpu_memory_utilization=0.85, gpu_name="GeForce RTX 4090",
        warm_compile_cache=True))
    rank = plan.limiting_rank
    assert (plan.max_num_batched_tokens, plan.max_num_seqs) == (2048, 256) and not rank.cudagraph_charged
    assert f"{rank.weights_bytes / GiB:.2f}" == f"{log['printed_weights_gib']:.2f}"
    transient = rank.activation_bytes - rank.runner_state_bytes
    assert f"{transient / GiB:.2f}" == f"{warm['printed_peak_activation_gib']:.2f}"
    consumed = rank.weights_bytes + rank.runner_state_bytes + rank.non_torch_bytes
    assert abs(consumed / GiB - warm["printed_consumed_gib"]) < 0.04
    assert abs(plan.available_kv_cache_bytes / GiB - warm["printed_available_kv_gib"]) < 0.05
    assert rank.first_compile_bytes == 0  # a warm relaunch compiles nothing
    # the first launch compiled the model during the profile pass: the 0.41 GiB the planner charges by default
    assert warm["printed_available_kv_gib"] - cold["printed_available_kv_gib"] == pytest.approx(0.41)


def test_a_first_launch_of_the_public_log_is_planned_within_print_rounding():
    """The same log's first launch (attempt 4), which compiled the model: the default plan (no
    ``warm_compile_cache``) charges FIRST_COMPILE_BYTES, the difference of the log's two launches (vllm_runner.py
    note 5), and lands on its printed available memory within the two prints' rounding."""
    log = json.loads((ROOT / "tests" / "data" / "reference" / "vllm_runner_logs.json").read_text())[
        "qwen2_5_0_5b_rtx4090"]
    cold = log["first_compile"]
    request = EngineRequest(engine="vllm-v0.28", max_model_len=2048, gpu_memory_utilization=0.85,
                            gpu_name="GeForce RTX 4090")
    model, total = model_spec(log["model"]), round(log["printed_total_gib"] * GiB)
    first, warm = plan_engine(model, total, request), plan_engine(model, total, replace(request, warm_compile_cache=True))
    assert first.limiting_rank.first_compile_bytes == FIRST_COMPILE_BYTES == 440_234_147
    assert warm.available_kv_cache_bytes - first.available_kv_cache_bytes == FIRST_COMPILE_BYTES
    assert abs(first.available_kv_cache_bytes / GiB - cold["printed_available_kv_gib"]) < 0.05
    assert any("first launch compiles" in note for note in first.notes)


@pytest.mark.parametrize("change", [{"enforce_eager": True}, {"optimization_level": 0},
                                    {"warm_compile_cache": True}, {"engine": "vllm-v0.11"}])
def test_nothing_compiled_or_no_v2_runner_charges_no_first_compile(change):
    """Eager launches compile nothing; a warm cache recompiles nothing; the V1 runner's first compile has no
    measured split (vllm_runner.py note 5), so only V2 is charged."""
    request = replace(EngineRequest(engine="vllm-v0.28", max_model_len=8192, gpu_name="L40S"), **change)
    plan = plan_engine(model_spec("Qwen/Qwen3-14B"), 44 * GiB, request)
    assert plan.limiting_rank.first_compile_bytes == 0
    assert "first_compile_bytes" not in plan.to_dict()["ranks"][0]


def test_cli_reads_warm_compile_cache(capsys):
    argv = ["plan", "--engine", "vllm-v0.28", "--model", "Qwen/Qwen3-14B", "--gpu", "nvidia-l40s",
            "--max-model-len", "40960", "--format", "json"]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)["engine_plan"]
    assert main([*argv, "--warm-compile-cache"]) == 0
    warm = json.loads(capsys.readouterr().out)["engine_plan"]
    assert first["ranks"][0]["first_compile_bytes"] == FIRST_COMPILE_BYTES
    assert warm["available_kv_cache_bytes"] - first["available_kv_cache_bytes"] == FIRST_COMPILE_BYTES


def test_largest_gpus_get_16k_tokens_from_v0_28():
    b200 = 178 * GiB
    assert vllm_scheduler_defaults(engine_profile("vllm-v0.28"), b200, "B200", 4096) == (16384, 1024)
    assert vllm_scheduler_defaults(engine_profile("vllm"), b200, "B200", 4096) == (16384, 1024)
    assert vllm_scheduler_defaults(engine_profile("vllm-v0.11"), b200, "B200", 4096) == (8192, 1024)
    assert vllm_scheduler_defaults(engine_profile("vllm"), 139 * GiB, "H200", 4096) == (8192, 1024)


def test_v0_28_capture_grid_has_no_uniform_decode_sizes():
    model = model_spec(QWEN14B)
    kw = dict(max_num_seqs=8, max_num_batched_tokens=8192, num_speculative_tokens=2)
    # min(2 x 8 x 3, 512) = 48 on both; only v0.29 adds the request counts x 3 (3, 6, 12)
    assert capture_sizes("vllm-v0.28", model, **kw) == (1, 2, 4, 8, 16, 24, 32, 40, 48)
    assert set(capture_sizes("vllm", model, **kw)) - set(capture_sizes("vllm-v0.28", model, **kw)) == {3, 6, 12}


@pytest.mark.parametrize(("version", "engine"), [
    ("0.21.0", "vllm"), ("0.22.0", "vllm-v0.28"), ("0.28.0", "vllm-v0.28"), ("0.29.1rc1.dev17", "vllm"),
    ("0.11.1", "vllm-v0.11"),
])
def test_a_log_version_picks_its_profile(version, engine):
    figures = LogFigures(engine="vllm", version=version, figures=())
    assert suggest_engine(figures) == engine


def test_bench_rows_run_under_the_profile_of_their_stated_release():
    sys.path.insert(0, str(ROOT / "scripts"))
    import bench_engine_cases as bench  # noqa: PLC0415 - the script is this test's subject

    with (ROOT / "tests" / "data" / "reference" / "engine_cases.csv").open(newline="") as f:
        rows = {re.search(r"\[([A-Z]\d+)\]", r["notes"]).group(1): r for r in csv.DictReader(f)}
    for tag in ("N12", "N13", "N14", "N09"):
        version = re.search(r"0\.\d+\.\d+", rows[tag]["engine_version"]).group(0)
        assert bench.CASES[tag].engine == suggest_engine(LogFigures(engine="vllm", version=version, figures=()))


def test_cli_offers_the_profile_and_prints_no_graph_term():
    out = subprocess.run([sys.executable, "-m", "planner", "plan", "--model", QWEN14B, "--gpu", "nvidia-l40s",
                          "--engine", "vllm-v0.28", "--max-model-len", "40960"], capture_output=True, text=True,
                         cwd=ROOT, check=True).stdout
    assert "vllm-v0.28" in ENGINE_CHOICES
    assert "v0.22-v0.28" in out and "CUDA graphs 0." not in out.split("engine KV")[1].split("\n")[0]
