"""Decode context parallel (vLLM ``--decode-context-parallel-size`` / ``-dcp``): KV split along tokens.

With ``dcp`` GPUs of the tensor-parallel group in one DCP group, token ``t`` of a request is stored
on rank ``t mod dcp`` (interleaved, so a growing request stays split), so one GPU keeps
``ceil(L / dcp)`` of a request's ``L`` tokens and no GPU is added. The pool itself is unchanged:
the same available memory, the same blocks per GPU. What changes is what vLLM prints and checks:

    per-request need  = blocks for ceil(L / dcp) tokens        (``max_memory_usage_bytes``)
    concurrency       = blocks per GPU / that need
    printed tokens    = blocks // groups x block_size x dcp    (vLLM ~0.11: one more line,
                        "Multiplying the GPU KV cache size by the dcp_world_size N.")
                      = int(concurrency x L)                   (newest builds)
    accepted length   = dcp x the longest length one GPU's pool holds

Worked example (the Kimi-K2-Thinking recipe, 8 x H200, TP 8, MLA latent 61 layers x 576 x 2 B =
70,272 B per token, FlashMLA block 64 = 4,497,408 B a block): 46.80 GiB hold 11,173 blocks =
715,072 tokens; with ``-dcp 8`` the same 46.80 GiB (11,174 blocks in that run, inside the print's
0.005 GiB) print 11,174 x 64 x 8 = 5,721,088 tokens.

Which attention kinds allow it: vLLM asks every attention implementation to return the softmax
log-sum-exp of its decode step, so the partial results of the DCP ranks can be merged; an
implementation that does not (``need_to_return_lse_for_decode`` False) stops the launch. vLLM's documentation lists MLA and GQA (full attention) models as supported, and the range
``1 <= dcp <= tp / kv_heads`` (1 KV head for MLA). The planner therefore allows DCP on models whose
cached layers are all full attention or MLA, and refuses sliding-window, chunked-local and recurrent
(Mamba / linear-attention) layers rather than guess their behaviour.

Which attention backends return that log-sum-exp, read in the published vLLM wheels v0.11.0, v0.11.1, v0.12.0,
v0.14.0, v0.20.0, v0.22.0, v0.25.0, v0.28.0, v0.29.0 and v0.34.0 (``can_return_lse_for_decode = True`` on the
backend's implementation; :func:`dcp_backend_refusal`):

* full attention: FLASH_ATTN and FLASHINFER (v0.11.1+), the NVIDIA defaults. No ROCm backend does (ROCM_ATTN,
  ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, TRITON_ATTN: vllm/v1/attention/backends/rocm_attn.py, rocm_aiter_fa.py,
  triton_attn.py; the order in vllm/platforms/rocm.py ``_get_backend_priorities``), so on AMD GPUs a full-attention
  model's ``-dcp`` launch stops.
* dense MLA (DeepSeek-V3, Kimi-K2): FLASHMLA, FLASH_ATTN_MLA, CUTLASS_MLA and TRITON_MLA (v0.11+), FLASHINFER_MLA
  (v0.25+). On ROCm, TRITON_MLA is the default (vllm/platforms/rocm.py: ROCM_AITER_MLA only with
  ``VLLM_ROCM_USE_AITER=1``) and returns it; AITER MLA (rocm_aiter_mla.py) does from v0.29 only.
* sparse MLA (DeepSeek-V3.2, GLM-5): FLASHMLA_SPARSE (mla/flashmla_sparse.py) from v0.29 only, FLASHINFER_MLA_SPARSE
  from v0.25; FLASH_ATTN_MLA_SPARSE (Hopper's first choice for a bf16 sparse cache, vllm/platforms/cuda.py) never
  (v0.34 skips it for a ``-dcp`` launch, v0.29-v0.33 do not), nor FLASHINFER_MLA_SPARSE_SM120 (SM 12.x's only one).
  So it runs on every release of the ``vllm`` profile (v0.29+) on Hopper with the ``fp8_ds_mla`` cache (``auto`` /
  ``fp8``: FlashMLA-sparse) and on SM 10.x with either cache, on no older profile. ROCm's only sparse backend, ROCM_AITER_MLA_SPARSE (rocm_aiter_mla_sparse.py), never returns it; v0.34
  declares ``supports_dcp = False`` and refuses context parallelism outright.

Sources: vllm/v1/core/kv_cache_utils.py (``_report_kv_cache_config``: the multiplied token print),
vllm/v1/kv_cache_interface.py (``FullAttentionSpec.max_memory_usage_bytes``: ``cdiv(L, dcp)``),
vllm/v1/worker/cp_utils.py (``check_attention_cp_compatibility``: the LSE requirement),
docs/serving/context_parallel_deployment.md (supported models and the ``tp / H`` range), the vLLM
recipe moonshotai/Kimi-K2-Think.md (the printed figures).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines import plan_engine
from planner.engines.profiles import engine_profile
from planner.engines.loaded import gpu_capability
from planner.engines.types import EnginePlan, EngineRequest
from planner.engines.vllm_kv_formats import uses_fp8_ds_mla
from planner.model import ModelSpec
from planner.model.layers import ChunkedLocalAttention, FullAttention, MLAAttention, NoCache, SlidingWindowAttention
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import indexed_mla_layer
from planner.units import GiB

DCP_PROFILES = ("vllm", "vllm-v0.28", "vllm-v0.11")
"""vLLM profiles whose releases have decode context parallel (it arrived in the 0.11 line)."""

MULTIPLY_LINE = "Multiplying the GPU KV cache size by the dcp_world_size {dcp}."
"""The line vLLM ~0.11 prints before the multiplied token count."""


@dataclass(frozen=True, kw_only=True)
class ContextParallelResult:
    """The figures one DCP group prints and checks (per GPU, per attention-DP rank).

    Attributes:
        decode_context_parallel_size: GPUs one request's KV is split over.
        tokens_per_gpu_per_request: ``ceil(max_model_len / dcp)`` [tokens].
        kv_cache_bytes_needed_per_request: KV one ``max_model_len`` request takes on one GPU [bytes].
        engine_kv_cache_tokens: The token capacity vLLM prints [tokens].
        max_concurrency: Requests of ``max_model_len`` per rank, as printed (2 decimals).
        engine_max_model_len: Longest ``max_model_len`` the pool accepts [tokens].
        starts: False when vLLM would refuse the length.
        reasons: Why not, with the needed and available memory.
        engine_log_lines: The KV lines vLLM would print.
        max_concurrency_decoding: Requests of ``max_model_len`` one rank's pool holds while they decode, each
            keeping ``tokens_per_gpu_per_request`` on a GPU: the shard's
            :attr:`~planner.engines.types.EnginePlan.max_concurrency_decoding` (None where the engine has none).
    """

    decode_context_parallel_size: int
    tokens_per_gpu_per_request: int
    kv_cache_bytes_needed_per_request: int
    engine_kv_cache_tokens: int
    max_concurrency: float
    engine_max_model_len: int
    starts: bool
    reasons: tuple[str, ...]
    engine_log_lines: tuple[str, ...]
    max_concurrency_decoding: float | None = None

    def to_dict(self) -> dict:
        """Plain dict for JSON (tuples become lists)."""
        out = dict(self.__dict__)
        out["reasons"], out["engine_log_lines"] = list(self.reasons), list(self.engine_log_lines)
        return out


def check_dcp_model(model: ModelSpec) -> None:
    """Refuse a model with cached layers DCP is not modelled for (module docstring).

    Raises:
        ValueError: naming the first such layer kind.
    """
    for index, layer in enumerate(model.layers):
        if isinstance(layer, (SlidingWindowAttention, ChunkedLocalAttention)):
            kind = type(layer).__name__
        elif isinstance(layer, (FullAttention, MLAAttention, NoCache)):
            continue
        else:
            kind = type(layer).__name__
        raise ValueError(f"{model.model_id}: layer {index} is {kind}; decode context parallel is modelled for "
                         "full attention (GQA / MHA / MQA) and MLA layers only, as vLLM documents it; drop "
                         "--decode-context-parallel-size")


def dcp_backend_refusal(model: ModelSpec, profile_id: str, gpu_name: str, kv_cache_dtype: str) -> str | None:
    """Why the attention backend vLLM picks for ``model`` on ``gpu_name`` stops a ``-dcp`` launch (it returns no
    decode log-sum-exp, so ``check_attention_cp_compatibility`` in vllm/v1/worker/cp_utils.py fails), or None
    where it returns one on every release of ``profile_id`` (module docstring's list).

    Args:
        model: The model.
        profile_id: The vLLM profile (release group).
        gpu_name: The GPU's display name or catalog id (AMD GPUs run vLLM's ROCm backends).
        kv_cache_dtype: ``--kv-cache-dtype`` (a sparse-MLA model's cache format picks its backend).
    """
    sparse = indexed_mla_layer(model) is not None
    rocm = is_rocm_gpu(gpu_name)
    where = "vllm/v1/worker/cp_utils.py check_attention_cp_compatibility stops the launch"
    if sparse and rocm:
        return ("ROCm's only sparse-MLA backend, ROCM_AITER_MLA_SPARSE (vllm/v1/attention/backends/mla/"
                f"rocm_aiter_mla_sparse.py), returns no decode log-sum-exp in any release (v0.34: supports_dcp False): "
                f"{where}; drop --decode-context-parallel-size on AMD GPUs")
    if sparse and profile_id != "vllm":
        return ("FlashMLA-sparse returns the decode log-sum-exp DCP needs only from v0.29 (vllm/v1/attention/backends/"
                f"mla/flashmla_sparse.py can_return_lse_for_decode): on {profile_id}'s releases {where}; use --engine "
                "vllm (v0.29+)")
    major = gpu_capability(gpu_name)[0]
    if sparse and major == 12:
        return ("sparse MLA on SM 12.x (RTX 50, RTX PRO 6000) runs on FLASHINFER_MLA_SPARSE_SM120 (vllm/platforms/cuda.py), "
                f"which returns no decode log-sum-exp (mla/flashinfer_mla_sparse_sm120.py, v0.29-v0.34): {where}")
    if sparse and major != 10 and not uses_fp8_ds_mla(model, profile_id, kv_cache_dtype, gpu_name):
        return ("a bf16 sparse-MLA cache runs on FLASH_ATTN_MLA_SPARSE on Hopper (vllm/platforms/cuda.py), which returns "
                f"no decode log-sum-exp (mla/flashattn_mla_sparse.py; v0.34 skips it for -dcp, v0.29-v0.33 do not): "
                f"{where}; use --kv-cache-dtype auto or fp8 (fp8_ds_mla on FlashMLA-sparse)")
    if rocm and model.attention_kind != "MLA":
        return ("no ROCm full-attention backend (ROCM_ATTN, ROCM_AITER_FA, ROCM_AITER_UNIFIED_ATTN, TRITON_ATTN; "
                f"vllm/platforms/rocm.py) returns the decode log-sum-exp: {where}; drop --decode-context-parallel-size "
                "on AMD GPUs")
    return None


def apply_dcp(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, plan: EnginePlan,
              dcp: int) -> ContextParallelResult:
    """What one vLLM rank prints and accepts with ``-dcp dcp`` (module docstring).

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        request: The rank's engine request (its ``max_model_len`` is the served length).
        plan: :func:`planner.engines.plan_engine` of ``request`` (the pool without DCP).
        dcp: Decode context parallel size [GPUs], >= 1.

    Raises:
        ValueError: a profile without DCP, or a model with layers DCP is not modelled for.
    """
    profile = engine_profile(request.engine)
    if dcp > 1 and profile.id not in DCP_PROFILES:
        raise ValueError(f"decode context parallel arrived in vLLM 0.11; {profile.id} ({profile.version}) has no "
                         f"-dcp: use --engine {' or '.join(DCP_PROFILES)}")
    check_dcp_model(model)
    length = plan.max_model_len
    local = -(-length // dcp)
    shard = plan if dcp == 1 else plan_engine(model, gpu_memory_bytes, replace(request, max_model_len=local))
    lines: list[str] = []
    if profile.token_print == "blocks_per_group":
        tokens = plan.engine_kv_cache_tokens * dcp
        if dcp > 1:
            lines.append(MULTIPLY_LINE.format(dcp=dcp))
    else:  # newest builds: int(concurrency x L), the concurrency already per DCP shard
        tokens = plan.num_gpu_blocks * length // max(shard.blocks_per_request, 1)
    concurrency = round(plan.num_gpu_blocks / max(shard.blocks_per_request, 1), 2)
    limit = model.max_position_embeddings or shard.engine_max_model_len * dcp
    accepted = min(shard.engine_max_model_len * dcp, limit)
    refusal = dcp_backend_refusal(model, profile.id, request.gpu_name, request.kv_cache_dtype) if dcp > 1 else None
    reasons = [refusal] if refusal else []
    if length > limit:
        reasons.append(f"max_model_len {length} is above the model's max_position_embeddings {limit}")
    if shard.kv_cache_bytes_needed_per_request > plan.available_kv_cache_bytes:
        reasons.append(f"with -dcp {dcp} one request of {length:,} tokens keeps {local:,} tokens per GPU, "
                       f"{shard.kv_cache_bytes_needed_per_request / GiB:.2f} GiB of KV, above the "
                       f"{plan.available_kv_cache_bytes / GiB:.2f} GiB available; the longest length that fits "
                       f"is {accepted:,}: lower max_model_len or raise gpu_memory_utilization")
    lines += [f"GPU KV cache size: {tokens:,} tokens",
              f"Maximum concurrency for {length:,} tokens per request: {concurrency:.2f}x"]
    return ContextParallelResult(
        decode_context_parallel_size=dcp, tokens_per_gpu_per_request=local,
        kv_cache_bytes_needed_per_request=shard.kv_cache_bytes_needed_per_request, engine_kv_cache_tokens=tokens,
        max_concurrency=concurrency, engine_max_model_len=accepted, starts=not reasons, reasons=tuple(reasons),
        engine_log_lines=tuple(lines), max_concurrency_decoding=shard.max_concurrency_decoding)
