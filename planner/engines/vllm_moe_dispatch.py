"""What a vLLM data-parallel MoE rank's profile pass holds beyond a lone rank's: every rank's tokens at once.

With ``--data-parallel-size`` > 1 on an MoE model (with or without ``--enable-expert-parallel``), every
fused-MoE layer first gathers the hidden states of all DP ranks, runs the experts on the gathered batch and
hands each rank its rows back. All ranks profile together with ``max_num_batched_tokens`` each, so one
GPU's MoE layer runs ``G = dp x T`` tokens in the profile pass: that batch, the expert kernel's workspace
for it and the DP group's NCCL buffers are charged to the KV budget on top of what a TP-1 rank holds.

Per version group (:data:`RULES`; each read in the release named):

* ``vllm-v0.10`` (v0.10.1.1; v0.10.0 the same): ``VLLM_ALL2ALL_BACKEND`` defaults to ``naive``
  (vllm/envs.py). ``NaiveAll2AllManager.dispatch`` (vllm/distributed/device_communicators/all2all.py)
  broadcasts every rank's rows of the bf16 hidden states and of the router logits into ``G``-row buffers
  on the DP group's torch process group; ``combine`` all-reduces the output on the DP group's PyNccl
  communicator (``FusedMoE.forward_impl``, vllm/model_executor/layers/fused_moe/layer.py). The FP8 experts
  then run ``fused_experts_impl`` (fused_moe.py; DeepGEMM only with ``VLLM_USE_DEEP_GEMM=1``), which cuts
  the batch into chunks of ``VLLM_FUSED_MOE_CHUNK_SIZE`` = 32,768 tokens and holds, for a chunk of ``M``:
  ``cache13`` of ``M k max(N, K)`` and ``cache2`` of ``M k I`` elements, the chunk's fp8 copy (``M K`` B +
  one fp32 scale per 128 values with block quantization) and the fp8 copy of ``cache2`` (``M k I`` B +
  scales), whose previous chunk's copy is still referenced when the next is made (two at once when there
  are two chunks or more). ``K`` = hidden size, ``I`` = one expert's width on the GPU, ``N`` = ``2 I``
  (gated) or ``I``, ``k`` = experts per token.
* ``vllm-v0.11`` (v0.11.0): the default is ``allgather_reducescatter`` (vllm/envs.py); ``AgRsAll2AllManager``
  all-gathers the bf16 hidden states and router logits with ``all_gatherv`` and reduce-scatters the
  output, both on the DP group's PyNccl (pynccl.py: equal sizes take ``ncclAllGather`` /
  ``ncclReduceScatter``). The experts run the same chunked ``fused_experts_impl`` (DeepGEMM only when
  the separate ``deep_gemm`` package is installed, ``has_deep_gemm``). The DP chunking of
  ``VLLM_MOE_DP_CHUNK_SIZE`` applies only to the pplx / DeepEP low-latency / FlashInfer paths
  (``forward_impl_chunked``), not to the default.
* ``vllm-v0.28`` (v0.28.0) and ``vllm`` (v0.34.0, the newest release read): still
  ``allgather_reducescatter`` (vllm/config/parallel.py ``all2all_backend``), now inside the modular kernel:
  ``MoEPrepareAndFinalizeNaiveDPEPModular.prepare`` (fused_moe/prepare_finalize/naive_dp_ep.py) quantizes the
  rank's rows and all-gathers the quantized rows, their scales and the top-k weights and ids (fp32 and
  int32) on the DP group; ``VLLM_FUSED_MOE_CHUNK_SIZE`` is gone and ``FusedMoEModularKernel`` sizes its
  workspaces for the whole gathered batch, kept by the ``WorkspaceManager`` (vllm/v1/worker/workspace.py):
  ``max(M k max(I, K), M K)`` + ``M k max(N, K)`` elements (``workspace_shapes``), plus the fp8 copy of the
  activation inside ``apply``. These are ``TritonExperts``' shapes (fused_moe/experts/triton_moe.py); on
  Hopper with block-FP8 experts and EP the oracle (fused_moe/oracle/fp8.py) prefers FlashInfer's CUTLASS
  MoE, whose workspace lives inside FlashInfer and is not read here: the Triton shapes stand in for it.
  In v0.29-v0.3x the V2 runner marked every profile token as padding (``VLLM_MOE_SKIP_PADDING``), so
  routing-sized kernels (DeepGEMM) measured no workspace; v0.34.0 routes them (``is_padding=not
  is_profile``, vllm/v1/worker/gpu/model_runner.py). Triton's shapes do not depend on routing.

DeepGEMM (``VLLM_USE_DEEP_GEMM=1`` with the ``deep_gemm`` package installed, on Hopper or datacenter Blackwell:
``EngineRequest.use_deep_gemm``; v0.10 defaults the variable to 0, v0.11 to 1, so there it is on wherever the
package is): in the ``fused_experts_impl`` groups a block-FP8 expert layer whose width ``I`` is a multiple of 128
above 512 (``_valid_deep_gemm``) runs ``deep_gemm_moe_fp8`` instead, a ``FusedMoEModularKernel`` of
``MoEPrepareAndFinalizeNoEP`` and ``DeepGemmExperts`` (fused_moe/deep_gemm_moe.py, modular_kernel.py, read in
v0.10.1.1 and v0.11.0). Its prepare step quantizes the whole gathered batch at once (``G K`` fp8 bytes + fp32
scales); the experts then run in chunks of ``VLLM_FUSED_MOE_CHUNK_SIZE`` into a ``G x K`` output the kernel
allocates when there is more than one chunk; a chunk of ``M`` rows takes two workspaces of ``M_sum`` rows,
``max(N, K)`` and ``max(N / 2, K)`` wide, where ``M_sum = round_up(M k + E (128 - 1), 128)`` rows pad every
local expert (``E`` on this GPU) to DeepGEMM's 128-row alignment (``compute_aligned_M``); beside them the
permuted activation scales (``M_sum x K / 128`` fp32), the expert ids (``M_sum`` int32), the inverse permutation
(``M k`` int32) and the second GEMM's activation scales (``M_sum x N / 256`` fp32). [N10] with it: ``M_sum`` =
264,704; workspaces 2 x 264,704 x 6,144 x 2 = 6,505,365,504 B; held 830,472,192 + 415,236,096 (fp8 batch) +
805,306,368 (output) B; copies 74,106,880 B; peak 8,932,476,928 B (8.32 GiB, 1.53 GiB above the Triton path):
49.18 GiB against the printed 48.66.

In every group the experts see ``G = dp x T`` rows: the default backends do not chunk the gathered batch.
The rank's own residual, hidden and normed rows (``3 K T`` elements, the forward model's ``3 h`` term)
stay alive beside it. The DP group's NCCL buffers follow the per-group rule of
:func:`planner.engines.overheads.vllm_dp_group_bytes`: v0.10 runs collectives on two communicators of the
DP group (torch's broadcast: rings only; PyNccl's all-reduce: rings and NVLS), v0.11+ on one (PyNccl's
all-gather and reduce-scatter: rings and NVLS). The expert-parallel group's own communicators run nothing
in the profile pass (the managers gather over the DP group), and the DP coordinator process holds no GPU
memory (vllm/v1/engine/coordinator.py).

Worked example ([N10]: Qwen3-Coder-480B-A35B-Instruct-FP8, ``-dp 8 --enable-expert-parallel``, vLLM
0.10.1, H20, ``T`` = 8,192, so ``G`` = 65,536 in two chunks of ``M`` = 32,768; ``K`` = 6,144, ``I`` = 2,560,
``N`` = 5,120, ``k`` = 8, 160 experts, bf16): own rows 3 x 6,144 x 8,192 x 2 = 301,989,888 B; gathered
65,536 x (6,144 + 160) x 2 + 65,536 x 8 x 8 top-k = 830,472,192 B; cache13 32,768 x 8 x 6,144 x 2 =
3,221,225,472 B and cache2 32,768 x 8 x 2,560 x 2 = 1,342,177,280 B; fp8 copies 32,768 x (6,144 + 48 x 4) =
207,618,048 B of the chunk and 2 x 32,768 x 8 x (2,560 + 20 x 4) = 1,384,120,320 B of ``cache2``: a peak of
7,287,603,200 B (6.79 GiB) against the TP-1 forward model's 2,113,929,216 B. The DP group adds 2 x 215 MiB
of rings + 1 x 16 x 2 MiB x 8 of NVLS = 686 MiB of non-torch memory. Together 5.49 GiB less KV than a lone
rank: 56.20 -> 50.72 GiB against the printed 48.66.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engines.loaded import _group_format, gpu_capability
from planner.engines.overheads import vllm_dp_group_bytes
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.units import ceil_div

FP8_GROUP = 128
"""Values that share one fp32 activation scale under block quantization (``per_token_group_quant_fp8``)."""


@dataclass(frozen=True, kw_only=True)
class MoeDispatchRule:
    """How one vLLM version group gathers and runs a data-parallel MoE batch (module docstring).

    Attributes:
        release: The release whose code was read.
        all2all_backend: The default ``VLLM_ALL2ALL_BACKEND`` / ``--all2all-backend``.
        gathers: ``hidden_and_logits`` (bf16 rows and router logits) or ``quantized_and_topk`` (the
            quantized rows, their scales and the top-k weights and ids).
        chunk_tokens: ``VLLM_FUSED_MOE_CHUNK_SIZE`` [tokens], or None (the workspace covers the whole batch).
        kernel: ``fused_experts_impl`` (the chunked Triton function) or ``TritonExperts`` (modular kernel).
        dp_ring_communicators: DP-group communicators that run a collective in the profile pass.
        dp_nvls_communicators: Of them, those whose collective NCCL may run as NVLS.
    """

    release: str
    all2all_backend: str
    gathers: str
    chunk_tokens: int | None
    kernel: str
    dp_ring_communicators: int
    dp_nvls_communicators: int


_TRITON_CHUNKED = dict(gathers="hidden_and_logits", chunk_tokens=32768, kernel="fused_experts_impl")
_MODULAR = dict(all2all_backend="allgather_reducescatter", gathers="quantized_and_topk", chunk_tokens=None,
                kernel="TritonExperts", dp_ring_communicators=1, dp_nvls_communicators=1)
RULES: dict[str, MoeDispatchRule] = {
    "vllm-v0.10": MoeDispatchRule(release="v0.10.1.1", all2all_backend="naive", dp_ring_communicators=2,
                                  dp_nvls_communicators=1, **_TRITON_CHUNKED),
    "vllm-v0.11": MoeDispatchRule(release="v0.11.0", all2all_backend="allgather_reducescatter",
                                  dp_ring_communicators=1, dp_nvls_communicators=1, **_TRITON_CHUNKED),
    "vllm-v0.28": MoeDispatchRule(release="v0.28.0", **_MODULAR),
    "vllm": MoeDispatchRule(release="v0.34.0", **_MODULAR),
}
"""The rule of each vLLM profile that has one; older profiles have none (not read: nothing is charged)."""


@dataclass(frozen=True, kw_only=True)
class DataParallelMoE:
    """A vLLM worker whose MoE layers gather the tokens of several data-parallel ranks
    (:attr:`planner.engines.EngineRequest.moe_data_parallel`, set by :func:`planner.scale.plan_scale`).

    Attributes:
        data_parallel_size: Attention data-parallel ranks whose tokens each MoE layer gathers [ranks].
        expert_tp: GPUs each routed expert is tensor-split over (1 under expert parallel) [GPUs].
        nodes: Nodes the data-parallel group spans.
        local_experts: Routed experts of each MoE layer on this GPU (``global // ep``), or None (all of them):
            DeepGEMM pads each to 128 rows.

    Raises:
        ValueError: a size below 1.
    """

    data_parallel_size: int
    expert_tp: int = 1
    nodes: int = 1
    local_experts: int | None = None

    def __post_init__(self) -> None:
        if self.local_experts is not None and self.local_experts < 1:
            raise ValueError(f"local_experts of the data-parallel MoE layout must be at least 1, got "
                             f"{self.local_experts}")
        for name in ("data_parallel_size", "expert_tp", "nodes"):
            value = getattr(self, name)
            if value < 1:
                raise ValueError(f"{name} of the data-parallel MoE layout must be at least 1, got {value}")


@dataclass(frozen=True, kw_only=True)
class MoeDispatchPeak:
    """The MoE layer's profile-pass peak on one GPU of a data-parallel MoE launch [bytes unless named].

    Attributes:
        rule: The version group's rule.
        gathered_tokens: Rows each MoE layer runs (``dp x max_num_batched_tokens``) [tokens].
        chunk_tokens: Rows of the largest chunk the workspace is sized for [tokens].
        own_bytes: The rank's own residual, hidden and normed rows (``3 K T e``).
        gathered_bytes: The gathered rows (and logits or top-k) every rank's tokens fill.
        workspace_bytes: The expert kernel's intermediate caches.
        copies_bytes: The quantized copies the kernel makes (0 for 16-bit experts).
        group_bytes: The DP group's NCCL buffers (non-torch memory).
        expert_kernel: The kernel whose shapes were priced: the rule's, or ``DeepGemmExperts``.
    """

    rule: MoeDispatchRule
    gathered_tokens: int
    chunk_tokens: int
    own_bytes: int
    gathered_bytes: int
    workspace_bytes: int
    copies_bytes: int
    group_bytes: int
    expert_kernel: str

    @property
    def peak_bytes(self) -> int:
        """The forward peak at the MoE layer [bytes]: own + gathered + workspace + copies."""
        return self.own_bytes + self.gathered_bytes + self.workspace_bytes + self.copies_bytes

    def to_dict(self) -> dict:
        """Plain dict for JSON (the rule's fields flattened, the peak included)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("rule", "expert_kernel")}
        return {"release": self.rule.release, "all2all_backend": self.rule.all2all_backend,
                "kernel": self.expert_kernel, **out, "peak_bytes": self.peak_bytes}

    def note(self) -> str:
        """One line for the plan's notes."""
        gib = 1 << 30
        kernel = self.expert_kernel
        stand_in = "; Triton's shapes: other expert kernels keep their own" if kernel == "TritonExperts" else ""
        return (f"data-parallel MoE ({self.rule.all2all_backend} dispatch, vLLM {self.rule.release}): each MoE "
                f"layer runs {self.gathered_tokens:,} gathered tokens ({self.chunk_tokens:,} per workspace chunk); "
                f"profile peak {self.peak_bytes / gib:.2f} GiB (gathered {self.gathered_bytes / gib:.2f}, "
                f"{kernel} workspace {self.workspace_bytes / gib:.2f}{stand_in}, copies "
                f"{self.copies_bytes / gib:.2f}) + {self.group_bytes / gib:.2f} GiB of DP-group NCCL buffers")


def expert_width(model: ModelSpec) -> int:
    """One routed expert's inner width ``I`` [elements]: the ``.experts.down_proj`` columns (catalog layout
    ``(hidden, inter)``, :func:`planner.model.params.moe_experts`)."""
    for group in model.params:
        if ".experts." in group.name and group.name.endswith("down_proj") and group.shape:
            return group.shape[-1]
    return ceil_div(model.intermediate_size, max(1, model.num_experts_per_tok))


def _gated(model: ModelSpec) -> bool:
    """True when the experts fuse gate and up projections (``N = 2 I``)."""
    return any(".experts." in g.name and g.name.endswith("gate_up_proj") for g in model.params)


def _activation_quant(model: ModelSpec, weight_dtype_name: str) -> tuple[bool, bool]:
    """``(quantized, block)``: whether the expert kernel quantizes activations to fp8 (fp8 experts) and
    whether with one scale per 128 values (block-quantized experts)."""
    fmt = weight_dtype(weight_dtype_name)
    for group in model.params:
        if ".experts." in group.name:
            expert_fmt = _group_format(group, fmt, model.torch_dtype)
            return expert_fmt.name.startswith("fp8"), expert_fmt.block_shape is not None
    return False, False


DEEP_GEMM_ALIGN = 128
"""Rows DeepGEMM's contiguous grouped GEMM pads each expert's block to (``get_m_alignment_for_contiguous_layout``;
vLLM ``deep_gemm_block_shape()[0]``)."""


def _runs_deep_gemm(rule: MoeDispatchRule, model: ModelSpec, width: int, block: bool, gpu_name: str,
                    rows: int) -> bool:
    """Whether this release routes the expert layer to DeepGEMM when it is enabled: the chunked Triton groups
    only (the modular ones are priced with Triton's shapes), block-FP8 experts, Hopper or datacenter Blackwell,
    and ``_valid_deep_gemm``'s shape rule (``I`` and ``K`` multiples of 128, ``I`` above 512, at least 128 rows)."""
    return (rule.kernel == "fused_experts_impl" and block and gpu_capability(gpu_name) in ((9, 0), (10, 0))
            and width % DEEP_GEMM_ALIGN == 0 and width > 512 and model.hidden_size % DEEP_GEMM_ALIGN == 0
            and rows >= DEEP_GEMM_ALIGN)


def _fp8_bytes(rows: int, width: int, block: bool) -> int:
    """An fp8 copy of ``rows x width`` values with its fp32 group scales [bytes]."""
    return rows * width + (rows * ceil_div(width, FP8_GROUP) * 4 if block else 0)


def moe_dispatch_peak(model: ModelSpec, layout: DataParallelMoE, profile_id: str, *, num_tokens: int,
                      activation_bytes: int, weight_dtype_name: str, gpu_name: str,
                      deep_gemm: bool = False) -> MoeDispatchPeak | None:
    """The data-parallel MoE layer's profile-pass peak on one GPU (module docstring and worked example).

    Args:
        model: An MoE model.
        layout: The data-parallel layout of the MoE layers.
        profile_id: vLLM profile id (a key of :data:`RULES`).
        num_tokens: ``max_num_batched_tokens`` of each rank's profile pass [tokens].
        activation_bytes: Bytes per activation element (2 for bf16).
        weight_dtype_name: The request's weight dtype (the experts' format decides the fp8 copies).
        gpu_name: GPU display name (NVLink / NVLS for the DP group's buffers; DeepGEMM's GPUs).
        deep_gemm: ``VLLM_USE_DEEP_GEMM=1`` with the ``deep_gemm`` package installed (module docstring); it
            changes the shapes only where that release would run DeepGEMM (:func:`_runs_deep_gemm`).

    Returns:
        The peak, or None for a dense model, one DP rank, or a profile without a rule.
    """
    rule = RULES.get(profile_id)
    dp = layout.data_parallel_size
    if rule is None or dp < 2 or not model.num_experts:
        return None
    e, k, hidden, experts = activation_bytes, model.num_experts_per_tok, model.hidden_size, model.num_experts
    width = ceil_div(expert_width(model), layout.expert_tp)
    n = 2 * width if _gated(model) else width
    quantized, block = _activation_quant(model, weight_dtype_name)
    gathered = dp * num_tokens
    m = min(gathered, rule.chunk_tokens or gathered)
    cache2 = _fp8_bytes(m, k * width, block) if quantized else 0
    kernel = rule.kernel
    if deep_gemm and _runs_deep_gemm(rule, model, width, block, gpu_name, m):
        kernel = "DeepGemmExperts"
        local = layout.local_experts or experts
        m_sum = ceil_div(m * k + local * (DEEP_GEMM_ALIGN - 1), DEEP_GEMM_ALIGN) * DEEP_GEMM_ALIGN
        output = gathered * hidden * e if gathered > m else 0  # one chunk writes into its workspace instead
        held = gathered * (hidden + experts) * e + gathered * k * 8 + _fp8_bytes(gathered, hidden, block) + output
        workspace = m_sum * (max(n, hidden) + max(n // 2, hidden)) * e
        copies = (m_sum * ceil_div(hidden, FP8_GROUP) * 4 + m_sum * 4 + m * k * 4
                  + m_sum * ceil_div(n // 2, FP8_GROUP) * 4)
    elif rule.kernel == "fused_experts_impl":
        held = gathered * (hidden + experts) * e + gathered * k * 8
        workspace = m * k * max(n, hidden) * e + m * k * width * e
        second = min(m, gathered - m)  # the next chunk's copies are made while this one's are referenced
        copies = (_fp8_bytes(m, hidden, block) + cache2 + (_fp8_bytes(second, k * width, block) if second else 0)
                  if quantized else 0)
    else:
        held = (_fp8_bytes(gathered, hidden, block) if quantized else gathered * hidden * e) + gathered * k * 8
        workspace = max(m * k * max(width, hidden), m * hidden) * e + m * k * max(n, hidden) * e
        copies = cache2
    group = vllm_dp_group_bytes(dp, ring_communicators=rule.dp_ring_communicators,
                                nvls_communicators=rule.dp_nvls_communicators, nodes=layout.nodes, gpu_name=gpu_name)
    return MoeDispatchPeak(rule=rule, gathered_tokens=gathered, chunk_tokens=m, own_bytes=3 * hidden * num_tokens * e,
                           gathered_bytes=held, workspace_bytes=workspace, copies_bytes=copies, group_bytes=group,
                           expert_kernel=kernel)
