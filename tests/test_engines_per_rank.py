"""Engine plans per GPU and per worker: the weights each rank loads (planner/engines/loaded.py), and
the topology: non-torch memory by tensor / pipeline parallel size and nodes, workers, per-rank figures.

Models: the factory model of ``tests/test_engines.py`` (tests/factories.py) unless a test names one.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.units import GiB, MiB
from tests.factories import dense_model
from tests.test_engines_cli import _cli_json

MODEL = dense_model()


def pinned(available: int = 8 * GiB, **kw) -> EngineRequest:
    base = dict(engine="vllm-v0.11", max_model_len=1024, available_kv_memory_bytes=available)
    base.update(kw)
    return EngineRequest(**base)


# --- weights as the engine loads them (planner/engines/loaded.py) --------------------


@pytest.mark.parametrize("name,capability", [
    ("H100 SXM5 80GB", (9, 0)), ("nvidia-h200-sxm", (9, 0)), ("A100 SXM4 80GB", (8, 0)),
    ("nvidia-a100-pcie-80gb", (8, 0)), ("GeForce RTX 3090", (8, 6)), ("L40S", (8, 9)), ("B200 (HGX, SXM) 180GB", (10, 0)),
    ("GeForce RTX 5090", (12, 0)), ("Tesla T4", (7, 5)), ("", (9, 0)),
])
def test_gpu_capability_from_the_name(name, capability):
    from planner.engines.loaded import gpu_capability

    assert gpu_capability(name) == capability


def test_vllm_mxfp4_kernel_by_version_and_gpu():
    from planner.engines.loaded import vllm_mxfp4_layout

    assert vllm_mxfp4_layout("vllm-v0.10", "A100 SXM4 80GB").backend == "marlin"
    assert vllm_mxfp4_layout("vllm", "RTX 5090").backend == "marlin"  # SM 12.0: no Triton kernels
    hopper_new, hopper_old = vllm_mxfp4_layout("vllm-v0.11", "H100"), vllm_mxfp4_layout("vllm-v0.10", "H100")
    assert hopper_new.scale_pack == (256, 2) and hopper_old.backend == "marlin"  # 0.10.x: Marlin on Hopper
    assert vllm_mxfp4_layout("vllm", "B200").backend == "flashinfer"


def test_mxfp4_expert_bytes_by_hand():
    from planner.engines.loaded import vllm_mxfp4_layout
    from planner.engines.loaded import mxfp4_expert_bytes as expert

    # Marlin, TP 4 (case V15): intermediate 2880 // 4 = 720 -> 768, hidden 2880 -> 3072.
    # w13 2 x 768 x 3072 / 2 + w2 3072 x 768 / 2 values, (2 x 768 x 3072 + 3072 x 768) / 32 scales,
    # bf16 biases (2 x 768 + 3072) x 2.
    marlin = vllm_mxfp4_layout("vllm-v0.10", "A100")
    assert expert(hidden=2880, intermediate=2880, tensor_parallel_size=4, layout=marlin, with_bias=True) == (
        2_359_296 + 1_179_648 + 147_456 + 73_728 + 9_216)
    # Hopper Triton (case V21): no padding at 64; a second, swizzled copy of the scales padded to
    # 256 rows (5760 -> 5888, 2880 -> 3072); fp32 biases.
    triton = vllm_mxfp4_layout("vllm-v0.11", "H100")
    assert expert(hidden=2880, intermediate=2880, tensor_parallel_size=1, layout=triton, with_bias=True) == (
        12_441_600 + 777_600 + 5888 * 90 + 3072 * 90 + (5760 + 2880) * 4)


def test_block_scaled_fp8_keeps_one_scale_per_block_of_each_gpu_partition():
    from planner.engines.loaded import loaded_weight_bytes
    from planner.model.dtypes import FP8_BLOCK128, weight_dtype
    from planner.model.params import ParamGroup

    def one(name: str, shape):
        group = ParamGroup(name=f"layers.*.mlp.{name}.weight", shape=shape, kind="linear", checkpoint=FP8_BLOCK128)
        model = replace(MODEL, params=(group,), max_position_embeddings=None)
        return loaded_weight_bytes(model, weight_dtype("auto"), 2)

    # column parallel (rows split): (192, 256) per GPU: 192 x 256 B + ceil(192/128) x 2 x 4 B
    assert one("up_proj", (384, 256)) == 192 * 256 + 2 * 2 * 4
    # row parallel (columns split): (384, 128) per GPU: 384 x 128 B + 3 x 1 x 4 B
    assert one("down_proj", (384, 256)) == 384 * 128 + 3 * 1 * 4


def test_mla_down_projections_stay_whole_on_every_tensor_parallel_gpu():
    from planner.engines.loaded import loaded_weight_bytes
    from planner.model.dtypes import weight_dtype
    from planner.model.params import ParamGroup

    kv_a = ParamGroup(name="layers.*.self_attn.kv_a_proj_with_mqa.weight", shape=(576, 1024), kind="linear")
    q_b = ParamGroup(name="layers.*.self_attn.q_b_proj.weight", shape=(4096, 1024), kind="linear")
    model = replace(MODEL, params=(kv_a, q_b), max_position_embeddings=None)
    assert loaded_weight_bytes(model, weight_dtype("bf16"), 4) == 576 * 1024 * 2 + 4096 * 1024 * 2 // 4


# --- topology: non-torch memory, workers, per-rank figures -------------------------


@pytest.mark.parametrize("tp,pp,nodes,gpu,extra_mib", [
    (1, 1, 1, "H100 SXM5 80GB", 0),
    (2, 1, 1, "H100 SXM5 80GB", 430),        # NVLink: one peer (NCCL direct connections + custom all-reduce)
    (4, 1, 1, "H100 SXM5 80GB", 3 * 430),    # three peers
    (1, 2, 1, "H100 SXM5 80GB", 430),        # the pipeline's neighbour stage
    (2, 1, 1, "A100 PCIe 80GB", 96),         # no NVLink: rings over PCIe / shared memory, no custom all-reduce
    (8, 1, 1, "L40S", 96),                   # rings: two connections whatever the size
    (4, 1, 4, "A100 SXM4 80GB", 20),         # case V15: TP over 4 nodes (Ray)
    (4, 2, 2, "H100 SXM5 80GB", 3 * 430 + 20),  # TP in a node, the pipeline across the two
])
def test_non_torch_memory_by_topology(tp, pp, nodes, gpu, extra_mib):
    from planner.engines.overheads import non_torch_bytes_by_topology

    assert non_torch_bytes_by_topology(133 * MiB, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                       num_nodes=nodes, gpu_name=gpu) == (133 + extra_mib) * MiB


@pytest.mark.parametrize("tp,pp,nodes,gpu,extra_mib", [
    (2, 1, 1, "H100 SXM5 80GB", 430),            # ring connections of one NVLink group; NCCL has no NVLS for 2 GPUs
    (4, 1, 1, "H100 SXM5 80GB", 430 + 2 * 128),  # + NVLS: 16 channels x 2 x 8 x 128 KiB x 4 heads, two communicators
    (8, 1, 1, "H200 SXM 141GB", 430 + 2 * 256),  # case N01 (Kimi-K2-Thinking TP 8): 1,075 MiB, not 133 + 7 x 430
    (8, 1, 1, "B200 SXM 180GB", 430 + 2 * 384),  # Blackwell: 24 NVLS channels on one node
    (8, 1, 1, "A100 SXM4 80GB", 430),            # Ampere: no multicast, so no NVLS
    (4, 1, 1, "H100 NVL 94GB", 430),             # bridged pairs, no NVSwitch
    (2, 1, 1, "A100 PCIe 80GB", 96),             # no NVLink: rings over PCIe / shared memory
    (4, 1, 4, "A100 SXM4 80GB", 20),             # case V15: TP over 4 nodes (Ray)
    (4, 2, 2, "H100 SXM5 80GB", 430 + 2 * 128 + 20),  # TP in a node, the pipeline across the two
])
def test_vllm_non_torch_memory_follows_nccl_rings_and_nvls(tp, pp, nodes, gpu, extra_mib):
    from planner.engines.overheads import vllm_non_torch_bytes

    assert vllm_non_torch_bytes(133 * MiB, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                                num_nodes=nodes, gpu_name=gpu) == (133 + extra_mib) * MiB


def test_nvls_buffer_is_nccls_formula():
    from planner.engines.overheads import nvls_bytes

    # src/transport/nvls.cc: nChannels (16 on SM90) x 2 x (128 KiB chunk x 8 steps) x nHeads (one per GPU)
    assert nvls_bytes(8, "H200 SXM 141GB") == 16 * 2 * 8 * 128 * 1024 * 8 == 256 * MiB
    assert nvls_bytes(2, "H200 SXM 141GB") == 0  # ncclNvlsInit: gpuCount <= 2 returns before NVLS
    assert nvls_bytes(8, "L40S") == 0


def test_nodes_need_ray_and_enough_gpus():
    with pytest.raises(ValueError, match="need --distributed-executor-backend ray"):
        plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=2))
    with pytest.raises(ValueError, match="3 nodes for 2 GPUs"):
        plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=3,
                                                   distributed_executor_backend="ray"))
    plan = plan_engine(MODEL, 80 * GiB, EngineRequest(tensor_parallel_size=2, num_nodes=2,
                                                      distributed_executor_backend="ray", max_model_len=1024))
    assert plan.ranks[0].non_torch_bytes == (133 + 20) * MiB
    assert "--distributed-executor-backend ray" in plan.launch_command


def test_v0_driver_worker_samples_and_its_peers_do_not():
    plan = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm-v0", max_model_len=1024, tensor_parallel_size=2))
    driver, others = plan.ranks
    assert (driver.role, others.role) == ("driver", "others")
    assert driver.sampler_bytes > 0 == others.sampler_bytes
    assert plan.num_gpu_blocks == driver.num_blocks < others.num_blocks  # the pool is the smallest worker's
    v1 = plan_engine(MODEL, 24 * GiB, EngineRequest(engine="vllm-v0.11", max_model_len=1024, tensor_parallel_size=2))
    assert [r.role for r in v1.ranks] == ["all"]  # V1: every worker runs the dummy sampler


def test_available_memory_per_worker_pools_to_the_smallest():
    values = (int(45.32 * GiB), int(45.40 * GiB), int(45.35 * GiB), int(45.38 * GiB))
    plan = plan_engine(MODEL, 80 * GiB, pinned(tensor_parallel_size=4, available_kv_memory_bytes=None,
                                               available_kv_memory_per_rank_bytes=values))
    assert plan.available_kv_cache_bytes == values[0]
    assert plan.available_kv_from_log
    staged = plan_engine(MODEL, 80 * GiB, pinned(pipeline_parallel_size=2, available_kv_memory_bytes=None,
                                                 available_kv_memory_per_rank_bytes=(6 * GiB, 5 * GiB)))
    assert [r.available_kv_cache_bytes for r in staged.ranks] == [6 * GiB, 5 * GiB]
    with pytest.raises(ValueError, match="3 available-KV values for 4 workers"):
        plan_engine(MODEL, 80 * GiB, pinned(tensor_parallel_size=4, available_kv_memory_per_rank_bytes=(1, 2, 3)))


def test_cli_takes_one_available_value_per_worker(capsys):
    out = _cli_json(capsys, "--engine", "vllm-v0.11", "--tensor-parallel-size", "2", "--max-model-len", "8192",
                    "--available-kv-memory-gib", "30.5,30.25")
    assert out["available_kv_cache_bytes"] == int(30.25 * GiB)
