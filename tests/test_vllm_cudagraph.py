"""vLLM's CUDA graphs per version (planner/engines/vllm_cudagraph.py): capture sizes, modes, graphs, memory.

Oracles: the capture lists and capture memory printed by public vLLM 0.10.1.1 logs
(tests/data/reference/vllm_cudagraph_logs.json, with their sources) and the sizing rules of each
release's own code, worked by hand in the docstrings of the module under test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.engines.vllm_cudagraph import (
    CUDA_GRAPH_BYTES,
    capture_sizes,
    cudagraph_estimate,
    graph_sizes,
    resolve_cudagraph_mode,
)
from planner.units import GiB

ROOT = Path(__file__).resolve().parents[1]
LOGS = json.loads((ROOT / "tests" / "data" / "reference" / "vllm_cudagraph_logs.json").read_text())
QWEN7B = "Qwen/Qwen2.5-7B"  # the same layer shapes as the logs' Qwen2-7B (28 layers, hidden 3,584)
QWEN14B = "Qwen/Qwen3-14B"
GRID_512 = (1, 2, 4, *range(8, 256, 8), *range(256, 513, 16))
"""The v0.11.1+ grid up to 512: 3 + 31 + 17 = 51 sizes (vllm/config/vllm.py ``_set_cudagraph_sizes``)."""


def test_v0_10_capture_list_is_the_one_reference_case_v07_printed():
    log = LOGS["V07_qwen2_7b_tp1"]
    sizes = capture_sizes("vllm-v0.10", model_spec(QWEN7B), max_num_seqs=256,
                          max_num_batched_tokens=log["max_num_batched_tokens"])
    assert sizes == tuple(sorted(log["printed_cudagraph_capture_sizes"]))
    assert len(sizes) == 67


def test_gpt_oss_widens_the_v0_10_list_to_1024_as_case_v15_printed():
    log = LOGS["V15_gpt_oss_120b_tp4_ray"]
    sizes = capture_sizes("vllm-v0.10", model_spec("openai/gpt-oss-120b"), max_num_seqs=256,
                          max_num_batched_tokens=log["max_num_batched_tokens"])
    assert (len(sizes), sizes[-1]) == (log["printed_num_capture_sizes"], log["printed_largest_capture_size"])


@pytest.mark.parametrize(("profile", "seqs", "tokens", "expected"), [
    ("vllm", 256, 2048, GRID_512),  # min(2 x 256, 512) = 512
    ("vllm-v0.11", 1024, 8192, GRID_512),
    ("vllm", 8, 8192, (1, 2, 4, 8, 16)),  # min(2 x 8, 512) = 16
    ("vllm", 1024, 300, (*GRID_512[:GRID_512.index(288) + 1], 300)),  # capped at 300 and 300 itself added (v0.21+)
    ("vllm-v0.11", 1024, 300, GRID_512[:GRID_512.index(288) + 1]),  # v0.11-v0.20 do not add it
    ("vllm-v0.10", 8, 8192, (1, 2, 4, 8, 16)),  # [1, 2, 4] + range(8, 17, 8)
    ("vllm-v0", 100, 8192, (1, 2, 4, *range(8, 105, 8))),  # V0: up to the first size >= 100
])
def test_default_capture_sizes_follow_each_release_rule(profile, seqs, tokens, expected):
    assert capture_sizes(profile, model_spec(QWEN14B), max_num_seqs=seqs, max_num_batched_tokens=tokens) == expected


def test_newest_builds_capture_up_to_1024_on_datacenter_blackwell_and_with_draft_tokens():
    model = model_spec(QWEN14B)
    b200 = capture_sizes("vllm", model, max_num_seqs=1024, max_num_batched_tokens=8192, gpu_name="B200")
    assert b200[-1] == 1024 and len(b200) == 51 + 32  # 528 ... 1024 in steps of 16
    h100 = capture_sizes("vllm", model, max_num_seqs=1024, max_num_batched_tokens=8192, gpu_name="H100 SXM5 80GB")
    assert h100 == GRID_512
    # 4 sequences, 3 draft tokens (q = 4): min(2 x 4 x 4, 512) = 32, plus n x 4 for n in (1, 2, 4): all in the grid
    assert capture_sizes("vllm", model, max_num_seqs=4, max_num_batched_tokens=8192,
                         num_speculative_tokens=3) == (1, 2, 4, 8, 16, 24, 32)


def test_max_cudagraph_capture_size_caps_the_list():
    model = model_spec(QWEN14B)
    assert capture_sizes("vllm", model, max_num_seqs=256, max_num_batched_tokens=2048, max_capture_size=64) == (
        1, 2, 4, *range(8, 65, 8))
    assert capture_sizes("vllm-v0.10", model, max_num_seqs=256, max_num_batched_tokens=2048,
                         max_capture_size=32) == (1, 2, 4, 8, 16, 24, 32)  # --cuda-graph-sizes 32


@pytest.mark.parametrize(("profile", "kw", "mode"), [
    ("vllm", {}, "FULL_AND_PIECEWISE"),
    ("vllm-v0.11", {}, "FULL_AND_PIECEWISE"),
    ("vllm-v0.10", {}, "PIECEWISE"),
    ("vllm-v1-2025", {}, "PIECEWISE"),
    ("vllm", {"optimization_level": 0}, "NONE"),
    ("vllm", {"optimization_level": 1}, "PIECEWISE"),
    ("vllm", {"optimization_level": 2}, "FULL_AND_PIECEWISE"),
    ("vllm-v0.10", {"optimization_level": 2}, "NONE"),  # v0.10: -O is the compilation level, 3 alone captures
    ("vllm", {"optimization_level": 0, "cudagraph_mode": "FULL"}, "FULL"),  # an explicit mode wins
    ("vllm", {"cudagraph_mode": "full_decode_only"}, "FULL_DECODE_ONLY"),
    ("vllm", {"cudagraph_mode": "FULL", "enforce_eager": True}, "NONE"),
    ("vllm-v0", {}, "FULL_DECODE_ONLY"),
    ("vllm-v0", {"enforce_eager": True}, "NONE"),
])
def test_graph_mode_per_version_level_and_flag(profile, kw, mode):
    assert resolve_cudagraph_mode(profile, **kw) == mode


@pytest.mark.parametrize(("kw", "match"), [
    ({"cudagraph_mode": "FAST"}, "unknown cudagraph_mode 'FAST'"),
    ({"optimization_level": 4}, "-O4 does not exist"),
])
def test_bad_mode_or_level_says_what_to_choose(kw, match):
    with pytest.raises(ValueError, match=match):
        resolve_cudagraph_mode("vllm", **kw)


def test_v0_engine_refuses_a_graph_mode_it_does_not_have():
    with pytest.raises(ValueError, match="V0 engine has no cudagraph_mode"):
        resolve_cudagraph_mode("vllm-v0", cudagraph_mode="PIECEWISE")


def test_full_and_piecewise_adds_full_graphs_for_the_decode_sizes_only():
    piecewise, full = graph_sizes("FULL_AND_PIECEWISE", GRID_512, max_num_seqs=256)
    assert piecewise == GRID_512
    assert full == GRID_512[:GRID_512.index(256) + 1] and len(full) == 35  # 1 ... 256 = 3 + 31 + 1
    assert graph_sizes("FULL_DECODE_ONLY", GRID_512, max_num_seqs=256) == ((), full)
    assert graph_sizes("FULL", GRID_512, max_num_seqs=256) == ((), GRID_512)


def test_v07_capture_memory_is_the_log_figure_it_was_measured_on():
    # The constant's own source, reproduced within the print's rounding (0.50 GiB: 0.495 to 0.505).
    est = cudagraph_estimate(model_spec(QWEN7B), "vllm-v0.10", mode="PIECEWISE", max_num_seqs=256,
                             max_num_batched_tokens=2048, num_layers=28, activation_bytes=2)
    assert est.num_graphs == 67 * 29
    assert abs(est.total_bytes / GiB - LOGS["V07_qwen2_7b_tp1"]["printed_graph_capture_gib"]) < 0.005


def test_estimate_follows_the_graphs_captured_not_a_flat_half_gib():
    model = model_spec(QWEN14B)
    many = cudagraph_estimate(model, "vllm", mode="FULL_AND_PIECEWISE", max_num_seqs=256, max_num_batched_tokens=2048,
                              num_layers=40, activation_bytes=2)
    few = cudagraph_estimate(model, "vllm", mode="FULL_AND_PIECEWISE", max_num_seqs=8, max_num_batched_tokens=8192,
                             num_layers=40, activation_bytes=2)
    assert many.num_graphs == 51 * 41 + 35 and few.num_graphs == 5 * 41 + 4
    # vLLM's estimate: the pool, the first graph of the costlier mode, then (n - 1) more per mode
    assert many.total_bytes == many.pool_bytes + 41 * CUDA_GRAPH_BYTES + (50 * 41 + 34) * CUDA_GRAPH_BYTES
    assert few.total_bytes < 0.1 * GiB < 0.5 * GiB < many.total_bytes
    assert many.profiling_line() == "Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)"


def _plan(**kw):
    gpu = get_gpu("nvidia-l40s")
    request = EngineRequest(engine="vllm", gpu_name=gpu.name, max_model_len=40960, **kw)
    return plan_engine(model_spec(QWEN14B), gpu.framework_memory_bytes, request)


def test_minus_o0_and_mode_none_free_the_graph_memory_like_enforce_eager():
    """-O0 is what --enforce-eager sets (vllm/config/vllm.py: "Enforce eager set, overriding optimization level
    to -O0"): no graphs and nothing compiled. cudagraph_mode NONE drops only the graphs: torch.compile still runs,
    so a first launch's compile charge stays (planner.engines.vllm_runner.first_compile_bytes)."""
    eager = _plan(enforce_eager=True)
    assert eager.ranks[0].cudagraph_bytes == 0 and eager.ranks[0].first_compile_bytes == 0
    assert _plan(optimization_level=0).available_kv_cache_bytes == eager.available_kv_cache_bytes
    no_graphs = _plan(cudagraph_mode="NONE")
    assert no_graphs.ranks[0].cudagraph_bytes == 0
    assert no_graphs.available_kv_cache_bytes == eager.available_kv_cache_bytes - no_graphs.ranks[0].first_compile_bytes
    default = _plan()
    assert default.available_kv_cache_bytes == (eager.available_kv_cache_bytes - default.ranks[0].cudagraph_bytes
                                                - default.ranks[0].first_compile_bytes)


def test_newest_builds_print_the_estimate_and_the_launch_carries_the_flags():
    plan = _plan(optimization_level=1, max_cudagraph_capture_size=64)
    lines = plan.engine_log_lines
    assert "Profiling CUDA graph memory: PIECEWISE=11 (largest=64)" in lines
    assert f"Estimated CUDA graph memory: {plan.ranks[0].cudagraph_bytes / GiB:.2f} GiB total" in lines
    assert lines.index("Profiling CUDA graph memory: PIECEWISE=11 (largest=64)") < len(lines) - 3
    assert plan.launch_command.endswith("-O1 --max-cudagraph-capture-size 64")
    assert any(n.startswith("CUDA graphs (PIECEWISE)") for n in plan.notes)


def test_older_builds_warn_when_the_graphs_do_not_fit_the_headroom():
    gpu = get_gpu("nvidia-l40s")
    request = EngineRequest(engine="vllm-v0.11", gpu_name=gpu.name, max_model_len=4096, gpu_memory_utilization=0.99)
    plan = plan_engine(model_spec(QWEN14B), gpu.framework_memory_bytes, request)
    assert any("captured after the KV cache" in w for w in plan.warnings)
    assert not any("captured after the KV cache" in w for w in
                   plan_engine(model_spec(QWEN14B), gpu.framework_memory_bytes,
                               EngineRequest(engine="vllm-v0.11", gpu_name=gpu.name, max_model_len=4096,
                                             gpu_memory_utilization=0.99, optimization_level=0)).warnings)


def test_other_engines_refuse_the_vllm_graph_flags():
    gpu = get_gpu("nvidia-l40s")
    with pytest.raises(ValueError, match="are vLLM flags; sglang does not take them"):
        plan_engine(model_spec(QWEN14B), gpu.framework_memory_bytes,
                    EngineRequest(engine="sglang", gpu_name=gpu.name, max_model_len=4096, cudagraph_mode="FULL"))


def _cli(*args: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "planner", "plan", "--format", "json", *args], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def test_cli_reads_cudagraph_mode_and_minus_o():
    base = ["--model", QWEN14B, "--gpu", "nvidia-l40s", "--max-model-len", "40960"]
    graphs = _cli(*base, "--cudagraph-mode", "piecewise")["engine_plan"]
    level = _cli(*base, "-O1")["engine_plan"]
    assert graphs["ranks"][0]["cudagraph_bytes"] == level["ranks"][0]["cudagraph_bytes"] > 0
    assert _cli(*base, "-O", "0")["engine_plan"]["ranks"][0]["cudagraph_bytes"] == 0
    assert """--compilation-config '{"cudagraph_mode": "PIECEWISE"}'""" in graphs["launch_command"]


@pytest.mark.parametrize("kw, named", [
    (dict(cudagraph_mode="FULL"), "cudagraph_mode FULL"),
    (dict(optimization_level=3, max_cudagraph_capture_size=64), "-O3 and max_cudagraph_capture_size 64"),
])
def test_enforce_eager_wins_and_the_command_drops_the_contradicting_flags(kw, named):
    """vLLM's VllmConfig.__post_init__ (vllm/config/vllm.py) sets cudagraph_mode NONE and -O0 under --enforce-eager:
    the plan warns, captures nothing, and its launch command keeps --enforce-eager alone."""
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    plan = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), gpu.framework_memory_bytes,
                       EngineRequest(gpu_name=gpu.name, enforce_eager=True, **kw))
    assert "--enforce-eager" in plan.launch_command
    assert "--compilation-config" not in plan.launch_command and " -O" not in plan.launch_command
    assert "--max-cudagraph-capture-size" not in plan.launch_command
    assert any(w.startswith(f"--enforce-eager overrides {named}") for w in plan.warnings)
    assert plan.limiting_rank.cudagraph_bytes == 0
    plain = plan_engine(model_spec("meta-llama/Meta-Llama-3-8B"), gpu.framework_memory_bytes,
                        EngineRequest(gpu_name=gpu.name, enforce_eager=True))
    assert not any("overrides" in w for w in plain.warnings)
