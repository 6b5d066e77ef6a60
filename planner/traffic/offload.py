"""Swap / offload: CPU memory for preempted sequences, and what it buys.

When the KV budget runs out, an engine preempts a running sequence. It can
either drop its KV and recompute it later (vLLM V1's default, "RECOMPUTE"), or
copy its blocks to CPU memory and copy them back ("SWAP": vLLM V0's
``--swap-space`` GiB per GPU, default 4; V1 has a KV offloading connector,
``--kv-offloading-size`` GiB). Swapping parks sequences without losing work;
the price is host memory and the copy time over the host link.

Per GPU (each tensor-parallel GPU swaps its own shard):

    parked sequences  = cpu_swap_bytes // kv_bytes_per_sequence_per_gpu
    swap time (1 way) = kv_bytes_per_sequence_per_gpu / (host_link_gb_s x 10^9)    [s]
    recompute time    = prefill of the sequence's tokens (planner.traffic.throughput)   [s]

Worked example: 2.5 GiB per sequence (Llama-3-70B, 8,192 tokens, one GPU),
4 GiB of swap: 1 sequence parked; 2,684,354,560 B / 31.5e9 B/s = 85 ms to
swap out, 85 ms to swap in.

Sources: vLLM docs "Optimization and Tuning" (preemption, RECOMPUTE vs SWAP);
vLLM ``CacheConfig.swap_space`` (vllm/config/cache.py, V0, default 4 GiB per GPU);
vLLM ``vllm/v1/kv_offload`` (V1 CPU offloading); Kwon et al. 2023 section 4.5
(swapping and recomputation); PCI-SIG PCIe 4.0 x16: 16 GT/s x 16 lanes x
128/130 / 8 = 31.5 GB/s per direction (PCIe 5.0 x16: 63 GB/s).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.units import GB, GiB

DEFAULT_SWAP_BYTES = 4 * GiB
"""vLLM V0 ``swap_space`` default: 4 GiB of CPU memory per GPU."""

PCIE4_X16_GB_S = 31.5
"""PCIe 4.0 x16 per-direction bandwidth [GB/s]: 16 GT/s x 16 x 128/130 / 8."""

PCIE5_X16_GB_S = 63.0
"""PCIe 5.0 x16 per-direction bandwidth [GB/s]."""


@dataclass(frozen=True, kw_only=True)
class SwapPlan:
    """What CPU swap space holds and costs, per GPU.

    Attributes:
        cpu_swap_bytes: Host memory set aside per GPU [bytes].
        kv_bytes_per_sequence_per_gpu: One sequence's KV on one GPU [bytes].
        gpu_max_sequences: Sequences the GPU KV budget holds.
        parked_sequences: Preempted sequences the swap space holds.
        host_link_gb_s: Host link bandwidth per direction [GB/s].
        swap_out_seconds: Time to copy one sequence out (same to copy back) [s].
        recompute_seconds: Prefill time to rebuild it instead [s], None if unknown.
        host_memory_total_bytes: ``cpu_swap_bytes x num_gpus`` [bytes].
    """

    cpu_swap_bytes: int
    kv_bytes_per_sequence_per_gpu: int
    gpu_max_sequences: int
    parked_sequences: int
    host_link_gb_s: float
    swap_out_seconds: float
    recompute_seconds: float | None
    host_memory_total_bytes: int

    @property
    def sequences_in_flight(self) -> int:
        """Sequences kept alive: resident on the GPU plus parked in host memory."""
        return self.gpu_max_sequences + self.parked_sequences

    @property
    def swap_is_faster(self) -> bool | None:
        """True when a swap round trip beats recomputing (None without a recompute time)."""
        if self.recompute_seconds is None:
            return None
        return 2 * self.swap_out_seconds < self.recompute_seconds


def swap_plan(
    *,
    kv_bytes_per_sequence_per_gpu: int,
    gpu_max_sequences: int,
    cpu_swap_bytes: int = DEFAULT_SWAP_BYTES,
    host_link_gb_s: float = PCIE4_X16_GB_S,
    recompute_seconds: float | None = None,
    num_gpus: int = 1,
) -> SwapPlan:
    """Parked sequences and copy time for ``cpu_swap_bytes`` of swap per GPU.

    Args:
        kv_bytes_per_sequence_per_gpu: KV of one sequence on one GPU [bytes], > 0.
        gpu_max_sequences: Sequences resident on the GPU (``Plan.max_concurrent_sequences``).
        cpu_swap_bytes: Host memory per GPU for swapped blocks [bytes], >= 0.
        host_link_gb_s: Host-device bandwidth per direction [GB/s], > 0.
        recompute_seconds: Prefill time of the same sequence, for comparison [s].
        num_gpus: GPUs of the replica (host memory is per GPU).

    Raises:
        ValueError: out-of-range arguments.

    Sources: module docstring.
    """
    if kv_bytes_per_sequence_per_gpu <= 0:
        raise ValueError(f"kv_bytes_per_sequence_per_gpu must be > 0, got {kv_bytes_per_sequence_per_gpu}")
    if cpu_swap_bytes < 0:
        raise ValueError(f"cpu_swap_bytes must be >= 0, got {cpu_swap_bytes}")
    if not host_link_gb_s or host_link_gb_s <= 0:
        raise ValueError(f"host_link_gb_s must be > 0, got {host_link_gb_s}")
    if num_gpus < 1:
        raise ValueError(f"num_gpus must be >= 1, got {num_gpus}")
    return SwapPlan(
        cpu_swap_bytes=cpu_swap_bytes, kv_bytes_per_sequence_per_gpu=kv_bytes_per_sequence_per_gpu,
        gpu_max_sequences=max(gpu_max_sequences, 0),
        parked_sequences=cpu_swap_bytes // kv_bytes_per_sequence_per_gpu,
        host_link_gb_s=host_link_gb_s,
        swap_out_seconds=kv_bytes_per_sequence_per_gpu / (host_link_gb_s * GB),
        recompute_seconds=recompute_seconds, host_memory_total_bytes=cpu_swap_bytes * num_gpus,
    )
