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
  by topology (:func:`non_torch_bytes_by_topology`: per NVLink peer, per group on a
  PCIe node, per group across nodes). CUDA graphs: vLLM's per version and
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

from dataclasses import dataclass

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
"""Non-torch memory each NVLink peer of a process group adds on one node: NCCL's per-channel
connection buffers (SIMPLE 4 MiB + LL 512 KiB + LL128 4.7 MiB per connection,
src/include/device.h ``DEFAULT_*BUFFSIZE``), which on NVSwitch boards connect every rank
directly to every peer (NVLS / all-to-all direct connections: "Collnet/Direct uses a lot of
memory because of alltoall direct connections, while Ring uses a limited amount of memory as
it only has 2 connections regardless of the scale", NVIDIA/nccl#986), plus vLLM's custom
all-reduce IPC buffers (vllm/distributed/device_communicators/custom_all_reduce.py, 8 MiB
``max_size``). 0.42 GiB for one peer: llm-d Llama-3.3-70B-FP8 TP 2 on H100 SXM (0.55 GiB
non-torch vs 0.13 on one GPU)."""

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

NVLINK_GPU_TAGS: tuple[str, ...] = ("sxm", "nvl", "hgx", "gb200", "gb300", "b200", "b300", "h200", "h20", "gh200",
                                    "h800", "dgx")
"""GPU names whose multi-GPU nodes link the GPUs with NVLink (the others: PCIe)."""


def gpus_linked_by_nvlink(gpu_name: str) -> bool:
    """True for GPUs sold in NVLink boards (SXM, NVL, HGX, Grace-Blackwell); False for PCIe cards.

    Examples: ``"H100 SXM5 80GB"`` -> True; ``"A100 PCIe 80GB"`` -> False; ``"L40S"`` -> False.
    """
    name = gpu_name.lower()
    return "pcie" not in name and any(tag in name for tag in NVLINK_GPU_TAGS)


def _group_bytes(size: int, on_one_node: bool, nvlink: bool) -> int:
    """Non-torch memory one process group of ``size`` ranks adds to each of its GPUs [bytes]."""
    if size < 2:
        return 0
    if not on_one_node:
        return NCCL_NETWORK_GROUP_BYTES
    return NCCL_NVLINK_PEER_BYTES * (size - 1) if nvlink else NCCL_PCIE_GROUP_BYTES


def non_torch_bytes_by_topology(base_bytes: int, *, tensor_parallel_size: int, pipeline_parallel_size: int,
                                num_nodes: int, gpu_name: str) -> int:
    """Non-torch memory of one worker [bytes]: the runtime plus what its process groups add.

    ``base`` (cuBLAS/cuDNN workspaces and CUDA context growth after the engine's snapshot)
    for one GPU; a replica of ``tp x pp`` GPUs over ``num_nodes`` nodes holds
    ``ceil(tp x pp / nodes)`` GPUs per node (Ray's placement packs a node before the next).
    The tensor-parallel group (``tp`` ranks) stays in one node when ``tp <= GPUs per node``;
    the pipeline group talks to its neighbour stage (2 ranks per send/recv pair) inside a node
    when ``tp x pp <= GPUs per node``. Each group adds, per GPU: on an NVLink node
    :data:`NCCL_NVLINK_PEER_BYTES` per peer, on a PCIe node :data:`NCCL_PCIE_GROUP_BYTES`, across
    nodes :data:`NCCL_NETWORK_GROUP_BYTES`. Worked examples: TP 4 on one H100 node: 133 +
    3 x 430 = 1,423 MiB; case V15, TP 4 over 4 A100 nodes: 133 + 20 = 153 MiB.

    Sources: vllm/v1/worker/gpu_worker.py (``init_device``: the memory snapshot precedes
    ``init_worker_distributed_environment``, so communicator buffers count as non-torch),
    vllm/distributed/parallel_state.py (one group per TP / PP), vllm/executor/ray_utils.py
    (placement), custom_all_reduce.py; SGLang measures free memory after the same groups form
    (python/sglang/srt/model_executor/model_runner.py ``init_torch_distributed``).
    """
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    if tp * pp == 1:
        return base_bytes
    per_node = ceil_div(tp * pp, num_nodes)
    nvlink = gpus_linked_by_nvlink(gpu_name)
    return (base_bytes + _group_bytes(tp, tp <= per_node, nvlink)
            + _group_bytes(2 if pp > 1 else 1, tp * pp <= per_node, nvlink))


vllm_non_torch_bytes = non_torch_bytes_by_topology
"""The same function under the name the vLLM chain uses."""
