"""vLLM data-parallel MoE ranks: the gathered batch their profile pass holds (planner/engines/vllm_moe_dispatch.py).

Expected figures are the module docstring's worked example ([N10]: Qwen3-Coder-480B-A35B-Instruct-FP8, ``-dp 8
--enable-expert-parallel`` on 8 x H20, vLLM 0.10.1) and the per-group NCCL rule of
planner/engines/overheads.py (``vllm_dp_group_bytes``), worked out by hand there.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines.overheads import NCCL_NETWORK_GROUP_BYTES, NCCL_PCIE_GROUP_BYTES, vllm_dp_group_bytes
from planner.engines.vllm_moe_dispatch import RULES, DataParallelMoE, moe_dispatch_peak
from planner.units import GiB, MiB

catalog = pytest.importorskip("model_catalog")

QWEN = "Qwen/Qwen3-Coder-480B-A35B-Instruct"
H20 = "H20 141GB (H20-3e)"  # the catalog name of nvidia-h20-141gb


def _peak(profile: str = "vllm-v0.10", dp: int = 8, expert_tp: int = 1, **kw):
    model = catalog.model_spec(kw.pop("model", QWEN))
    layout = DataParallelMoE(data_parallel_size=dp, expert_tp=expert_tp, nodes=kw.pop("nodes", 1),
                             local_experts=kw.pop("local_experts", None))
    return moe_dispatch_peak(model, layout, profile, num_tokens=kw.pop("num_tokens", 8192), activation_bytes=2,
                             weight_dtype_name=kw.pop("weight_dtype", "fp8_block128"), gpu_name=kw.pop("gpu", H20),
                             deep_gemm=kw.pop("deep_gemm", False))


def test_n10_worked_example_term_by_term():
    peak = _peak()
    assert (peak.gathered_tokens, peak.chunk_tokens) == (65_536, 32_768)
    assert peak.own_bytes == 3 * 6144 * 8192 * 2 == 301_989_888
    assert peak.gathered_bytes == 65_536 * (6144 + 160) * 2 + 65_536 * 8 * 8 == 830_472_192
    assert peak.workspace_bytes == 32_768 * 8 * 6144 * 2 + 32_768 * 8 * 2560 * 2 == 4_563_402_752
    # the chunk's fp8 copy, and two fp8 copies of cache2 (the first chunk's is still referenced)
    assert peak.copies_bytes == 32_768 * (6144 + 48 * 4) + 2 * 32_768 * 8 * (2560 + 20 * 4) == 1_591_738_368
    assert peak.peak_bytes == 7_287_603_200
    assert peak.group_bytes == (2 * 215 + 16 * 2 * 8) * MiB  # torch's broadcast + PyNccl's all-reduce (NVLS)


def test_n10_engine_plan_charges_the_peak_and_the_dp_group():
    """56.20 GiB before; the peak replaces the TP-1 forward model (2,113,929,216 B) and the group adds 686 MiB."""
    model = catalog.model_spec(QWEN)
    gpu = catalog.get_gpu("nvidia-h20-141gb")
    lone = EngineRequest(engine="vllm-v0.10", weight_dtype="fp8_block128", max_model_len=262144, gpu_name=gpu.name,
                         weights_bytes=72_593_935_360)
    before = plan_engine(model, gpu.framework_memory_bytes, lone)
    after = plan_engine(model, gpu.framework_memory_bytes, replace(lone, moe_data_parallel=DataParallelMoE(
        data_parallel_size=8)))
    assert before.limiting_rank.forward_activation_bytes == 2_113_929_216
    assert after.limiting_rank.forward_activation_bytes == after.limiting_rank.activation_bytes == 7_287_603_200
    assert after.limiting_rank.non_torch_bytes - before.limiting_rank.non_torch_bytes == 686 * MiB
    assert before.available_kv_cache_bytes - after.available_kv_cache_bytes == 5_173_673_984 + 686 * MiB
    assert f"{after.available_kv_cache_bytes / GiB:.2f}" == "50.72"  # printed 48.66


def test_n10_with_deep_gemm_term_by_term():
    """The module docstring's DeepGEMM figures (v0.10.1.1 ``deep_gemm_moe_fp8``): 20 local experts pad
    M_sum = round_up(32,768 x 8 + 20 x 127, 128) = 264,704 rows; two workspaces as wide as the hidden size."""
    peak = _peak(deep_gemm=True, local_experts=20)
    m_sum = 264_704
    assert peak.expert_kernel == "DeepGemmExperts" and peak.to_dict()["kernel"] == "DeepGemmExperts"
    assert peak.workspace_bytes == 2 * m_sum * 6144 * 2 == 6_505_365_504
    # gathered rows + logits + top-k, the whole batch's fp8 copy with its scales, and the G x K output
    assert peak.gathered_bytes == 830_472_192 + 65_536 * (6144 + 48 * 4) + 65_536 * 6144 * 2 == 2_051_014_656
    assert peak.copies_bytes == m_sum * 48 * 4 + m_sum * 4 + 32_768 * 8 * 4 + m_sum * 20 * 4 == 74_106_880
    assert peak.peak_bytes == 8_932_476_928
    assert peak.group_bytes == _peak().group_bytes


def test_deep_gemm_only_where_that_release_runs_it():
    triton = _peak(local_experts=20)
    assert _peak(deep_gemm=True, local_experts=20, gpu="A100 SXM4 80GB") == _peak(local_experts=20,
                                                                                 gpu="A100 SXM4 80GB")  # no SM90
    assert _peak(deep_gemm=True, weight_dtype="bf16") == _peak(weight_dtype="bf16")  # not block-FP8 experts
    assert _peak("vllm-v0.28", deep_gemm=True) == _peak("vllm-v0.28")  # the modular groups keep Triton's shapes
    assert _peak(deep_gemm=True, expert_tp=8) == _peak(expert_tp=8)  # 2,560 / 8 = 320 wide: _valid_deep_gemm no
    assert _peak(deep_gemm=True, local_experts=20).peak_bytes > triton.peak_bytes
    with pytest.raises(ValueError, match="local_experts"):
        DataParallelMoE(data_parallel_size=8, local_experts=0)


def test_the_cli_flag_reaches_the_dp_plan():
    """``plan -dp 8 --enable-expert-parallel --use-deep-gemm``: the rank's plan charges DeepGEMM's peak, 20 local
    experts from the layout."""
    import contextlib
    import io
    import json

    from planner.cli import main

    def available(*flags: str) -> int:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["plan", "--engine", "vllm-v0.10", "--model", QWEN, "--weight-dtype", "fp8_block128",
                         "--gpu", "nvidia-h20-141gb", "--max-model-len", "262144", "-dp", "8",
                         "--enable-expert-parallel", "--format", "json", *flags]) == 0
        return json.loads(out.getvalue())["available_kv_cache_bytes"]

    assert available() - available("--use-deep-gemm") == 8_932_476_928 - 7_287_603_200
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["plan", "--engine", "vllm-v0.10", "--model", QWEN, "--gpu", "nvidia-h20-141gb", "--use-deep-gemm",
              "--format", "json"])
    assert json.loads(out.getvalue())["launch_command"].startswith("VLLM_USE_DEEP_GEMM=1 vllm serve ")


def test_version_groups_follow_their_release():
    assert (RULES["vllm-v0.10"].all2all_backend, RULES["vllm-v0.11"].all2all_backend) == (
        "naive", "allgather_reducescatter")
    v11, v28, newest = _peak("vllm-v0.11"), _peak("vllm-v0.28"), _peak("vllm")
    # v0.11: the same chunked Triton function, one DP-group communicator (PyNccl's all-gather / reduce-scatter)
    assert (v11.workspace_bytes, v11.copies_bytes) == (_peak().workspace_bytes, _peak().copies_bytes)
    assert v11.group_bytes == (215 + 256) * MiB
    # v0.28+: the modular kernel sizes its workspace for the whole gathered batch, gathers fp8 rows and top-k
    assert v28 == replace(newest, rule=v28.rule) and v28.chunk_tokens == 65_536
    assert v28.workspace_bytes == 65_536 * 8 * 6144 * 2 + 65_536 * 8 * 6144 * 2
    assert v28.gathered_bytes == 65_536 * (6144 + 48 * 4) + 65_536 * 8 * 8
    assert v28.copies_bytes == 65_536 * 8 * (2560 + 20 * 4)


def test_nothing_is_charged_without_a_gathered_batch():
    assert _peak(dp=1) is None
    assert _peak(model="Qwen/Qwen3-8B") is None  # dense: no MoE layer gathers
    assert _peak("vllm-v1-2025") is None  # no rule read for that era
    model = catalog.model_spec("Qwen/Qwen3-8B")
    plain = EngineRequest(engine="vllm", max_model_len=8192, gpu_name="H100 SXM5 80GB")
    assert plan_engine(model, 80 * GiB, replace(plain, moe_data_parallel=DataParallelMoE(data_parallel_size=4))) == \
        plan_engine(model, 80 * GiB, plain)


def test_dp_without_expert_parallel_splits_each_expert():
    """``-dp 8`` alone: every expert is tensor-split over the 8 GPUs, the batch is gathered all the same."""
    split = _peak(expert_tp=8)
    assert split.gathered_tokens == 65_536 and split.gathered_bytes == _peak().gathered_bytes
    assert split.workspace_bytes == 32_768 * 8 * 6144 * 2 + 32_768 * 8 * 320 * 2  # max(2 x 320, 6,144); 2,560 / 8


def test_bf16_experts_make_no_fp8_copies():
    assert _peak(weight_dtype="bf16").copies_bytes == 0


def test_dp_group_nccl_rule():
    assert vllm_dp_group_bytes(8, ring_communicators=2, nvls_communicators=1, nodes=1, gpu_name=H20) == 686 * MiB
    assert vllm_dp_group_bytes(2, ring_communicators=1, nvls_communicators=1, nodes=1, gpu_name=H20) == 215 * MiB
    assert vllm_dp_group_bytes(4, ring_communicators=1, nvls_communicators=1, nodes=1, gpu_name="L40S") == \
        NCCL_PCIE_GROUP_BYTES
    assert vllm_dp_group_bytes(16, ring_communicators=1, nvls_communicators=1, nodes=2, gpu_name=H20) == \
        NCCL_NETWORK_GROUP_BYTES
    assert vllm_dp_group_bytes(1, ring_communicators=2, nvls_communicators=1, nodes=1, gpu_name=H20) == 0


def test_layout_sizes_must_be_positive():
    with pytest.raises(ValueError, match="data_parallel_size of the data-parallel MoE layout must be at least 1"):
        DataParallelMoE(data_parallel_size=0)


def test_bench_counts_n10_and_its_refusal():
    """scripts/bench_engine_cases.py runs N10's cold start through the DP + EP plan with DeepGEMM (the recipe's
    VLLM_USE_DEEP_GEMM=1, stated in the case's note): counted, refusal predicted; 49.18 GiB against 48.66."""
    path = Path(__file__).resolve().parents[1] / "scripts" / "bench_engine_cases.py"
    spec = importlib.util.spec_from_file_location("bench_engine_cases_n10", path)
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench
    spec.loader.exec_module(bench)
    result = bench.cold_start("N10", bench.load_rows()["N10"], bench.CASES["N10"])
    assert result.counted and result.refused and result.starts is False
    assert f"{result.predicted_bytes / GiB:.2f}" == "49.18" and "inferred: VLLM_USE_DEEP_GEMM=1" in result.note
