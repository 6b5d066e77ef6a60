"""What a serving engine spends before its KV cache: weights as loaded, activation peak, runtime.

These are *models* of what the engines *measure* (vLLM's profile run, SGLang's
free-memory probes, TensorRT-LLM's dummy requests), calibrated on the breakdown
rows of shared/reference/engine_cases.csv and on the llm-d H100 measurements.
Every term can be overridden in :class:`planner.engines.EngineRequest`.

Formulas (per GPU; ``e`` = activation bytes per element, 2 for bf16):

* Weights as loaded: :mod:`planner.engines.loaded` (this pipeline stage's tensors
  at tensor-parallel size ``tp``, the rotary cos/sin cache, the MXFP4 expert layout
  of the kernel the engine version picks on that GPU, per-partition block scales).
  Llama-3.1-8B: 16,060,522,496 + 33,554,432 B = 14.99 GiB, the "Model
  loading took 14.99 GiB" of cases V01 and V20.
* Forward peak of a profile pass of ``T`` tokens =
  ``T x e x (3 h + max(attention, mlp))`` with ``attention = 2 q / tp + 2 kv / tp``
  (q/k/v projections and the attention output) and ``mlp = 3 I / tp`` for a
  dense MLP (gate+up and the activated product), ``k (3 I_e / tp + h)`` for ``k``
  routed experts (vLLM fused-MoE intermediate caches). ``3 h``: residual, hidden
  and normed input live together.
* Sampler peak = ``min(max_num_seqs, T) x vocab x bytes_per_logit`` +
  ``T x h x e`` (the profile pass's hidden states stay alive), on the last
  pipeline stage only; ``bytes_per_logit`` 38 with PyTorch top-k/top-p, 12
  with the FlashInfer sampler (see :mod:`planner.engines.profiles`).
* Activation peak = ``max(forward, sampler)``.
* Non-torch = the profile's constant, plus what the worker's process groups add
  by topology (vLLM: :func:`vllm_non_torch_bytes`, ring connections per group and NCCL's NVLS
  buffers on NVSwitch boards; other engines: :func:`non_torch_bytes_by_topology`, per NVLink peer;
  both: per group on a PCIe node, per group across nodes). CUDA graphs: vLLM's per version and
  ``cudagraph_mode`` (:mod:`planner.engines.vllm_cudagraph`), 0 with ``--enforce-eager``
  (only deducted by engines that say so).

Calibration (available KV predicted vs printed, reference cases; reproduced by
tests/test_engine_cases.py): V01 (V0, Llama-3.1-8B, RTX 3090) 3.82 vs 3.81 GiB
+0.4 %; V07 (v0.10.1.1, Qwen2-7B, A100, util 0.25) 5.04 vs 5.01 +0.6 %; V15
(v0.10.1.1, gpt-oss-120b TP 4, A100) 45.08 vs 45.32 -0.5 %; V20 (late 2025,
Llama-3.1-8B, H100) 51.43 vs 51.38 +0.1 %; V21 (late 2025, gpt-oss-20b, H100)
50.34 vs 50.28 +0.1 %. Other llm-d H100 rows (not in the CSV): Qwen3-0.6B
+0.1 %, Qwen3-32B +1.4 %, Llama-3.3-70B-FP8 TP 2 +0.2 %. Not independent: the
38 B/logit sampler constant was fitted on V20, V21 and those llm-d rows, the
12 B/logit FlashInfer constant on V07, V0's 0.35 GiB non-torch on V01 itself,
and the v0.10 MXFP4 padding on V15's printed weights; only the structure
(which terms, which tokens and sequences) carries over to new cases.

Sources: vLLM ``Worker.determine_available_memory``
(vllm/v1/worker/gpu_worker.py), ``memory_profiling`` (vllm/utils/mem_utils.py),
``GPUModelRunner.profile_run`` / ``_dummy_sampler_run``
(vllm/v1/worker/gpu_model_runner.py), ``get_rope`` cos/sin cache
(vllm/model_executor/layers/rotary_embedding.py), ``Mxfp4MoEMethod.create_weights``
(vllm/model_executor/layers/quantization/mxfp4.py), fused-MoE workspaces
(vllm/model_executor/layers/fused_moe/fused_moe.py); ENGINES.md 1.4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from planner.engines.loaded import gpu_capability
from planner.engines.loaded import (  # noqa: F401 - re-exported: the weights half of the budget
    loaded_weight_bytes,
    pipeline_layer_ranges,
    rope_cache_bytes,
    stage_params,
)
from planner.model import ModelSpec
from planner.units import MiB, ceil_div


def mlp_width(model: ModelSpec) -> int:
    """Widest MLP activation of one token [elements], before tensor parallelism.

    ``model.intermediate_size`` when the catalog fills it; else read from the
    parameter shapes: dense ``up_proj`` (or ``c_fc`` / ``dense_h_to_4h`` / ``up``)
    rows, or ``num_experts_per_tok x`` the expert width plus shared experts;
    ``4 x hidden`` as a last resort.
    """
    if model.intermediate_size:
        return model.intermediate_size
    dense = routed = shared = 0
    for g in model.params:
        if g.kind != "linear" or not g.shape:
            continue
        leaf = g.name.rsplit(".weight", 1)[0].rsplit(".", 1)[-1]
        if ".experts." in g.name and leaf == "gate_up_proj":
            routed = max(routed, g.shape[0] // 2)
        elif "shared_expert" in g.name and leaf in ("up_proj", "gate_up_proj"):
            shared = max(shared, g.shape[0] // (2 if leaf == "gate_up_proj" else 1))
        elif leaf in ("up_proj", "c_fc", "dense_h_to_4h", "up", "fc1", "w1"):
            dense = max(dense, g.shape[0])
    width = max(dense, model.num_experts_per_tok * routed + shared)
    return width or 4 * model.hidden_size


def forward_peak_bytes(model: ModelSpec, num_tokens: int, activation_bytes: int, tensor_parallel_size: int = 1) -> int:
    """Activation peak of one forward pass over ``num_tokens`` tokens [bytes].

    ``T x e x (3 h + max(attention, mlp))`` (module docstring). Worked example
    (case V01, V0 profile of 20,000 tokens, Llama-3.1-8B): 20,000 x 2 x
    (12,288 + 43,008) = 2,211,840,000 B = 2.06 GiB; vLLM measured 2.07 GiB.

    Sources: vLLM ``profile_run`` (a dummy forward of ``max_num_batched_tokens``).
    """
    tp = tensor_parallel_size
    h = model.hidden_size
    q = model.num_attention_heads * model.head_dim
    kv = model.num_key_value_heads * model.head_dim
    attention = ceil_div(2 * q + 2 * kv, tp)
    mlp = ceil_div(3 * mlp_width(model), tp) + model.num_experts_per_tok * h
    return num_tokens * activation_bytes * (3 * h + max(attention, mlp))


def sampler_peak_bytes(model: ModelSpec, num_tokens: int, num_seqs: int, bytes_per_logit: int,
                       activation_bytes: int) -> int:
    """Peak of the dummy sampler run [bytes]: logits pipeline + kept hidden states.

    ``min(num_seqs, T) x vocab x bytes_per_logit + T x h x e``. Worked example
    (case V20, Llama-3.1-8B, 8192 tokens, 1024 sequences, PyTorch sampler):
    1024 x 128,256 x 38 + 8192 x 4096 x 2 = 5,057,527,808 B = 4.71 GiB; vLLM
    measured 4.76 GiB.

    Sources: vLLM ``_dummy_sampler_run`` (vllm/v1/worker/gpu_model_runner.py).
    """
    rows = min(num_seqs, num_tokens)
    return rows * model.vocab_size * bytes_per_logit + num_tokens * model.hidden_size * activation_bytes


@dataclass(frozen=True, kw_only=True)
class ActivationEstimate:
    """The activation-peak model's parts for one GPU [bytes].

    Attributes:
        forward_bytes: Forward-pass peak.
        sampler_bytes: Sampler-run peak (0 off the last pipeline stage).
        formula: The arithmetic as text.
    """

    forward_bytes: int
    sampler_bytes: int
    formula: str

    @property
    def peak_bytes(self) -> int:
        """``max(forward, sampler)`` [bytes]."""
        return max(self.forward_bytes, self.sampler_bytes)


def activation_estimate(model: ModelSpec, *, num_tokens: int, num_seqs: int, bytes_per_logit: int,
                        activation_bytes: int, tensor_parallel_size: int = 1,
                        last_stage: bool = True) -> ActivationEstimate:
    """Forward and sampler peaks of an engine's profile run on one GPU (module docstring)."""
    forward = forward_peak_bytes(model, num_tokens, activation_bytes, tensor_parallel_size)
    sampler = 0
    if last_stage and bytes_per_logit:
        sampler = sampler_peak_bytes(model, num_tokens, num_seqs, bytes_per_logit, activation_bytes)
    formula = (f"max(forward {num_tokens:,} tok x {activation_bytes} B x (3 x {model.hidden_size:,} + "
               f"max(attention, mlp) / tp {tensor_parallel_size}), sampler min({num_seqs}, {num_tokens:,}) x "
               f"{model.vocab_size:,} vocab x {bytes_per_logit} B + hidden states)")
    return ActivationEstimate(forward_bytes=forward, sampler_bytes=sampler, formula=formula)


# --- non-torch memory by topology ----------------------------------------------------

NCCL_NVLINK_PEER_BYTES = 430 * MiB
"""Non-torch memory one process group adds to each GPU of an NVLink node, without NVLS [bytes]: NCCL's
ring / tree connections (each rank connects to its two ring neighbours per channel whatever the group
size: "Ring uses a limited amount of memory as it only has 2 connections regardless of the scale",
NVIDIA/nccl#986; per connection a SIMPLE 4 MiB + LL128 4,915,200 B + LL 524,288 B buffer,
src/include/device.h), for the two NCCL communicators a vLLM tensor-parallel group runs collectives on
during the profile pass (vLLM's PyNccl for all-reduce, torch's ``ProcessGroupNCCL`` for the logits'
all-gather: vllm/distributed/device_communicators/cuda_communicator.py, base_device_communicator.py).
Measured, not read in code: 0.42 GiB for TP 2 in the llm-d Llama-3.3-70B-FP8 H100 row (0.55 GiB
non-torch vs 0.13 on one GPU). The name is kept from when it was charged per peer."""

NCCL_PCIE_GROUP_BYTES = 96 * MiB
"""What a process group adds on one node without NVLink: vLLM disables its custom all-reduce
("Custom allreduce is disabled because your platform lacks GPU P2P capability",
custom_all_reduce.py), NCCL runs rings (two connections whatever the group size) over PCIe or
shared memory, whose FIFOs live in host memory. 0.09 GiB: vLLM 0.10.1.1, Qwen2-7B TP 2 on one
A100 node (log vllm-7B-2gpuA10080GB-0.5GRAM-same-node.log of dennislee22/vLLM-benchmarking:
0.5 x 79.25 - 7.1217 weights - 31.83 KV - 0.449 activation = 0.22 GiB non-torch)."""

NCCL_NETWORK_GROUP_BYTES = 20 * MiB
"""What a process group adds when it spans nodes (Ray): no custom all-reduce ("Custom allreduce
is disabled because this process group spans across nodes"), NCCL rings over the network keep
their proxy FIFOs in host memory unless GPUDirect RDMA is used. 0.02 GiB: vLLM 0.10.1.1,
Qwen2-7B TP 2 over two A100 40GB nodes (log vllm-7B-2gpuA10040GB-0.5GRAM-diff-nodes.log of the
same repository: 0.5 x 39.39 - 7.1217 - 11.03 - 1.391 PyTorch-sampler activation = 0.15 GiB
non-torch)."""

NVLS_BYTES_PER_CHANNEL_AND_HEAD = 2 * 8 * 128 * 1024
"""NCCL's NVLink SHARP buffer per channel and head [bytes]: ``2 x NCCL_STEPS (8) x NVLS_CHUNKSIZE
(128 KiB)`` (src/transport/nvls.cc ``ncclNvlsBufferSetup``: ``nvlsPerRankSize = nChannels x 2 x
buffSize``, ``buffSize = nvlsChunkSize x NCCL_STEPS``, ``nvlsTotalSize = nvlsPerRankSize x nHeads``;
NCCL 2.21-2.28). One node's NVLS graph has a head per GPU."""

NVLS_CHANNELS_BY_SM: dict[int, int] = {9: 16, 10: 24}
"""NVLS channels on one node per compute-capability major: ``NVLS_NCHANNELS_SM90`` 16 (Hopper) and
``NVLS_NCHANNELS_SM100_NVL`` 24 (Blackwell) of src/transport/nvls.cc (``ncclNvlsInit``)."""

VLLM_NVLS_COMMUNICATORS = 2
"""NCCL communicators of a vLLM tensor-parallel group that connect NVLS in the profile pass, after the
memory snapshot: PyNccl's large all-reduce and torch's all-gather of the logits (see
:data:`NCCL_NVLINK_PEER_BYTES`). From v0.11 the worker creates the communicators, custom all-reduce
and symmetric-memory buffers before its snapshot (vllm/v1/worker/gpu_worker.py ``init_device``), and
NCCL >= 2.22 connects an algorithm's buffers at its first use (``NCCL_RUNTIME_CONNECT``, src/init.cc),
so what the KV budget is charged is what these collectives connect."""

NCCL_RING_BYTES_PER_COMMUNICATOR = NCCL_NVLINK_PEER_BYTES // VLLM_NVLS_COMMUNICATORS
"""One communicator's ring connections on an NVLink node [bytes]: :data:`NCCL_NVLINK_PEER_BYTES` covers the
two communicators of a vLLM tensor-parallel group, each with its own rings (215 MiB)."""

NVLINK_GPU_TAGS: tuple[str, ...] = ("sxm", "nvl", "hgx", "gb200", "gb300", "b200", "b300", "h200", "h20", "gh200",
                                    "h800", "dgx")
"""GPU names whose multi-GPU nodes link the GPUs with NVLink (the others: PCIe)."""


def gpus_linked_by_nvlink(gpu_name: str) -> bool:
    """True for GPUs sold in NVLink boards (SXM, NVL, HGX, Grace-Blackwell); False for PCIe cards.

    Examples: ``"H100 SXM5 80GB"`` -> True; ``"A100 PCIe 80GB"`` -> False; ``"L40S"`` -> False.
    """
    name = gpu_name.lower()
    return "pcie" not in name and any(tag in name for tag in NVLINK_GPU_TAGS)


def nvls_bytes(group_size: int, gpu_name: str) -> int:
    """NCCL's NVLS buffers of one communicator on one GPU of an NVSwitch node [bytes].

    ``channels x 2 x 8 x 128 KiB x group_size`` (:data:`NVLS_BYTES_PER_CHANNEL_AND_HEAD`) when NCCL can use
    NVLS: more than 2 GPUs (``ncclNvlsInit`` returns early for ``gpuCount <= 2``) on a Hopper or Blackwell
    NVSwitch board (multicast objects: not the PCIe cards, not the bridged pairs of an H100 NVL); else 0.
    Worked example: TP 8 on H200: 16 x 2 MiB x 8 = 256 MiB.
    """
    name = gpu_name.lower()
    channels = NVLS_CHANNELS_BY_SM.get(gpu_capability(gpu_name)[0], 0)
    bridged_pair = re.search(r"\bnvl\b", name) is not None  # "H100 NVL": NVLink bridges, not "GB200 NVL72"
    if group_size <= 2 or not channels or bridged_pair or not gpus_linked_by_nvlink(gpu_name):
        return 0
    return channels * NVLS_BYTES_PER_CHANNEL_AND_HEAD * group_size


def _group_bytes(size: int, on_one_node: bool, nvlink: bool) -> int:
    """Non-torch memory one process group of ``size`` ranks adds to each of its GPUs, per NVLink peer
    (the model of other engines' process groups, :func:`non_torch_bytes_by_topology`) [bytes]."""
    if size < 2:
        return 0
    if not on_one_node:
        return NCCL_NETWORK_GROUP_BYTES
    return NCCL_NVLINK_PEER_BYTES * (size - 1) if nvlink else NCCL_PCIE_GROUP_BYTES


def non_torch_bytes_by_topology(base_bytes: int, *, tensor_parallel_size: int, pipeline_parallel_size: int,
                                num_nodes: int, gpu_name: str) -> int:
    """Non-torch memory of one worker of SGLang, TensorRT-LLM or TGI [bytes]: the runtime plus what its
    process groups add (vLLM's own rule: :func:`vllm_non_torch_bytes`).

    ``base`` (cuBLAS/cuDNN workspaces and CUDA context growth after the engine's snapshot)
    for one GPU; a replica of ``tp x pp`` GPUs over ``num_nodes`` nodes holds
    ``ceil(tp x pp / nodes)`` GPUs per node (Ray's placement packs a node before the next).
    The tensor-parallel group (``tp`` ranks) stays in one node when ``tp <= GPUs per node``;
    the pipeline group talks to its neighbour stage (2 ranks per send/recv pair) inside a node
    when ``tp x pp <= GPUs per node``. Each group adds, per GPU: on an NVLink node
    :data:`NCCL_NVLINK_PEER_BYTES` per peer, on a PCIe node :data:`NCCL_PCIE_GROUP_BYTES`, across
    nodes :data:`NCCL_NETWORK_GROUP_BYTES`. Worked examples: TP 4 on one H100 node: 133 +
    3 x 430 = 1,423 MiB; TP 4 over 4 A100 nodes: 133 + 20 = 153 MiB.

    Sources: SGLang measures free memory after its groups form
    (python/sglang/srt/model_executor/model_runner.py ``init_torch_distributed``).
    """
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    if tp * pp == 1:
        return base_bytes
    per_node = ceil_div(tp * pp, num_nodes)
    nvlink = gpus_linked_by_nvlink(gpu_name)
    return (base_bytes + _group_bytes(tp, tp <= per_node, nvlink)
            + _group_bytes(2 if pp > 1 else 1, tp * pp <= per_node, nvlink))


def vllm_non_torch_bytes(base_bytes: int, *, tensor_parallel_size: int, pipeline_parallel_size: int,
                         num_nodes: int, gpu_name: str) -> int:
    """Non-torch memory of one vLLM worker [bytes]: the runtime plus what its process groups connect.

    Per group of ``n`` ranks, on each GPU: inside an NVLink node :data:`NCCL_NVLINK_PEER_BYTES` (ring
    connections: two per channel whatever ``n``) plus, for ``n > 2`` on an NVSwitch board,
    :data:`VLLM_NVLS_COMMUNICATORS` x :func:`nvls_bytes`; on a PCIe node :data:`NCCL_PCIE_GROUP_BYTES`;
    across nodes (Ray) :data:`NCCL_NETWORK_GROUP_BYTES`. Placement as in :func:`non_torch_bytes_by_topology`
    (Ray packs a node before the next; the pipeline group is a send/recv pair). Worked examples: TP 8 on
    one H200 node: 133 + 430 + 2 x 256 = 1,075 MiB (was 133 + 7 x 430 = 3,143 MiB when every peer was
    charged); TP 2 on H100: 133 + 430 = 563 MiB (no NVLS for 2 GPUs); TP 4 over 4 A100 nodes: 133 + 20.

    Sources: vllm/distributed/parallel_state.py (``initialize_model_parallel``: the groups),
    vllm/distributed/device_communicators/cuda_communicator.py (PyNccl, custom all-reduce and symmetric
    memory for the TP group), vllm/v1/worker/gpu_worker.py (``init_device``: v0.10.1.1 takes its snapshot
    before the groups form, v0.11+ after, so only lazily connected buffers count there; both are charged
    the same here), NCCL src/transport/nvls.cc and src/init.cc; vllm/executor/ray_utils.py (placement).
    """
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    if tp * pp == 1:
        return base_bytes
    per_node = ceil_div(tp * pp, num_nodes)
    nvlink = gpus_linked_by_nvlink(gpu_name)
    tp_group = 0
    if tp > 1:
        tp_group = (_group_bytes(2, tp <= per_node, nvlink)
                    + (VLLM_NVLS_COMMUNICATORS * nvls_bytes(tp, gpu_name) if tp <= per_node else 0))
    return base_bytes + tp_group + _group_bytes(2 if pp > 1 else 1, tp * pp <= per_node, nvlink)


def vllm_dp_group_bytes(data_parallel_size: int, *, ring_communicators: int, nvls_communicators: int, nodes: int,
                        gpu_name: str) -> int:
    """Non-torch memory the data-parallel group of a vLLM MoE launch adds to each GPU [bytes].

    The per-group rule of :func:`vllm_non_torch_bytes`, counted per communicator that runs a collective in the
    profile pass: inside an NVLink node :data:`NCCL_RING_BYTES_PER_COMMUNICATOR` per communicator plus, for
    each whose collective NCCL may run as NVLS (all-reduce, all-gather, reduce-scatter; not broadcast),
    :func:`nvls_bytes` of the group; on a PCIe node :data:`NCCL_PCIE_GROUP_BYTES`; across nodes
    :data:`NCCL_NETWORK_GROUP_BYTES`. Which communicators run what, per version:
    :mod:`planner.engines.vllm_moe_dispatch`. Worked examples: DP 8 on one H20 node under v0.10 (torch's
    broadcast and PyNccl's all-reduce): 2 x 215 + 256 = 686 MiB; under v0.11+ (PyNccl's all-gather and
    reduce-scatter): 215 + 256 = 471 MiB.

    Sources: vllm/distributed/parallel_state.py (``initialize_model_parallel``: the DP group),
    vllm/distributed/device_communicators/cuda_communicator.py (its PyNccl), NCCL src/transport/nvls.cc.
    """
    if data_parallel_size < 2:
        return 0
    if nodes > 1:
        return NCCL_NETWORK_GROUP_BYTES
    if not gpus_linked_by_nvlink(gpu_name):
        return NCCL_PCIE_GROUP_BYTES
    return (ring_communicators * NCCL_RING_BYTES_PER_COMMUNICATOR
            + nvls_communicators * nvls_bytes(data_parallel_size, gpu_name))
