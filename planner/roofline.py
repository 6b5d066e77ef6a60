"""The roofline's core: a decode step on the bandwidth roofline, a prefill on the compute roofline.

Shared by the traffic estimates (:mod:`planner.traffic.throughput`, which re-exports these names and builds its
throughput and cost tables on them) and the prefill / decode pools (:mod:`planner.scale.disagg`). An upper
bound, not a benchmark: peak bandwidth and dense bf16 FLOPS, no kernel launch, communication or scheduling
time (the design notes of :mod:`planner.traffic.throughput`).

Sources: DOMAIN.md section 4; Williams, Waterman & Patterson, "Roofline", CACM 2009; Kaplan et al. 2020 (2N
FLOPs per token forward); Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023.
"""

from __future__ import annotations

from planner.model import ModelSpec
from planner.units import GB

UPPER_BOUND_LABEL = "upper-bound estimate (roofline: peak bandwidth and FLOPS, no overheads)"
"""The label every roofline figure carries."""


def active_parameters(model: ModelSpec) -> int:
    """Parameters one token touches: all, minus unrouted experts for MoE.

    ``active = total - expert_params x (1 - experts_per_token / num_experts)``,
    expert tensors being the groups under ``.experts.``
    (:func:`planner.model.params.moe_experts`). Dense models return the total.
    Worked example: Mixtral-8x7B, 2 of 8 experts: 46.7 B total -> about 12.9 B active.

    Sources: Fedus et al. 2022 (Switch Transformer: per-token compute of a
    routed MoE); Mixtral report (Jiang et al. 2024: 12.9 B active of 46.7 B).
    """
    total = model.num_parameters
    if not model.num_experts or not model.num_experts_per_tok:
        return total
    experts = sum(g.total_numel for g in model.params if ".experts." in g.name)
    unused = experts * (model.num_experts - model.num_experts_per_tok) // model.num_experts
    return total - unused


def time_per_output_token(
    weights_bytes_per_gpu: int, kv_bytes_per_sequence_per_gpu: int, batch_size: int, bandwidth_gb_s: float
) -> float:
    """Decode step time on the bandwidth roofline [s].

    ``(weights + batch x kv_per_sequence) / (bandwidth_gb_s x 10^9)``.

    Raises:
        ValueError: ``bandwidth_gb_s <= 0`` or ``batch_size < 1``.

    Sources: DOMAIN.md section 4; Pope et al. 2023.
    """
    if not bandwidth_gb_s or bandwidth_gb_s <= 0:
        raise ValueError(f"bandwidth_gb_s must be > 0, got {bandwidth_gb_s}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    return (weights_bytes_per_gpu + batch_size * kv_bytes_per_sequence_per_gpu) / (bandwidth_gb_s * GB)


def prefill_seconds(active_params: int, prompt_tokens: int, bf16_dense_tflops: float, num_gpus: int = 1) -> float:
    """Prefill time on the compute roofline [s]: ``2 x params x tokens / (GPUs x TFLOPS x 10^12)``.

    Worked example: 8.03 B params, 2,000 tokens, one 989.5-TFLOPS GPU:
    3.212e13 / 9.895e14 = 32.5 ms.

    Raises:
        ValueError: ``bf16_dense_tflops <= 0``, ``num_gpus < 1`` or negative tokens.

    Sources: DOMAIN.md section 4; Kaplan et al. 2020.
    """
    if not bf16_dense_tflops or bf16_dense_tflops <= 0:
        raise ValueError(f"bf16_dense_tflops must be > 0, got {bf16_dense_tflops}")
    if num_gpus < 1 or prompt_tokens < 0:
        raise ValueError(f"need num_gpus >= 1 and prompt_tokens >= 0, got {num_gpus} and {prompt_tokens}")
    return 2 * active_params * prompt_tokens / (num_gpus * bf16_dense_tflops * 1e12)
