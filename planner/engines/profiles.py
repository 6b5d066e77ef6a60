"""Serving-engine profiles: how each engine (and each vLLM era) budgets and prints its KV cache.

A profile is plain data: the memory base its fraction applies to, its default knobs, which layers it prices
separately (sliding windows, Mamba), how it prints tokens and concurrency, and the overhead constants it was
calibrated with. The arithmetic lives in :mod:`planner.engines.pages` (vLLM-style page specs),
:mod:`planner.engines.overheads` (activation / non-torch / CUDA-graph terms) and :mod:`planner.engines` (the plan).

Design notes (assumptions):
    1. vLLM changed what it prints several times; each era is its own profile
       id, and ``vllm`` is the newest. Eras (ENGINES.md 1.4-1.5):
       ``vllm-v0`` (V0 engine, "# GPU blocks: N"), ``vllm-v1-jan2025`` (PR #12569,
       "# GPU blocks"), ``vllm-v1-2025`` (PR #13596, "GPU KV cache size: N*B
       tokens"), ``vllm-v0.10`` and ``vllm-v0.11`` (hybrid allocator: tokens =
       ``num_blocks // num_groups * B``, window-aware concurrency; v0.10 samples
       with FlashInfer, later builds with PyTorch's sort), ``vllm-v0.28`` (v0.22-v0.28, PRs
       #38364/#40694: tokens = ``int(concurrency * max_model_len)``; Model Runner V2 for dense
       models, which charges no CUDA graphs before the KV cache) and ``vllm`` (v0.29+: V2 for every
       model, graphs estimated and subtracted); :mod:`planner.engines.vllm_runner` says which runner
       runs a model and what it charges. v0.21 (V1 runner only) was not read.
    2. vLLM's default ``max_num_batched_tokens`` / ``max_num_seqs`` (vllm/engine/arg_utils.py,
       ``EngineArgs.get_batch_defaults``): for ``vllm serve`` 8192 / 1024 on GPUs with >= 70 GiB
       that are not A100s, else 2048 / 256; for the offline ``LLM`` class 16384 / 1024 and
       8192 / 256 (``usage_context`` "llm"). The 0.10.1.1 A100 logs in the reference cases show
       2048; the 2026 source keeps 8192 for ``serve`` on large GPUs (a 0.23 log on a 96 GB card
       printed ``max_num_batched_tokens=8192``; vLLM issue #54704 only proposes 16384), and clamps a
       defaulted ``max_num_batched_tokens`` to ``max_num_seqs x max_model_len`` and a
       defaulted ``max_num_seqs`` to ``max_num_batched_tokens`` (:func:`vllm_batch_limits`).
       V0 without chunked prefill profiles ``max(max_model_len, 2048)`` tokens
       (vllm/config.py ``SchedulerConfig``); above 32K it switches chunked prefill on by itself
       and profiles 2048 (``serve``) or 8192 (``llm``) tokens.
    3. Block sizes (vllm/platforms/cuda.py ``check_and_update_config``): 16 for
       ordinary backends, MLA 64 with FlashMLA (Hopper), 128 with CUTLASS MLA
       (Blackwell), 16 with Triton MLA (other GPUs and pre-2025 builds).
    4. Every default can be overridden in :class:`planner.engines.EngineRequest`.

Sources: vLLM vllm/v1/worker/gpu_worker.py, vllm/v1/core/kv_cache_utils.py, vllm/platforms/cuda.py; SGLang
python/sglang/srt/server_args.py and model_runner_kv_cache_mixin.py; TGI server/text_generation_server/models/
flash_causal_lm.py; TensorRT-LLM tensorrt_llm/_torch/pyexecutor/_util.py; llama.cpp src/llama-kv-cache.cpp,
src/llama-context.cpp.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.model.dtypes import KV_CACHE_DTYPES
from planner.units import GiB, MiB

EngineFamily = Literal["vllm", "sglang", "trtllm", "tgi", "llama.cpp", "transformers"]

BudgetBase = Literal["total", "free_before_load", "free_after_profile", "total_minus_reserve", "requested", "device"]
"""What the engine's memory fraction multiplies:

* ``total``: total device memory (vLLM ``gpu_memory_utilization``).
* ``free_before_load``: free memory before the weights load (SGLang ``mem_fraction_static``).
* ``free_after_profile``: free memory after load and a profiling run (TensorRT-LLM
  ``free_gpu_memory_fraction``).
* ``total_minus_reserve``: total minus a fixed share kept free (TGI keeps 10 %).
* ``requested``: exactly what the user asks for (llama.cpp ``-c``; no fraction).
* ``device``: whatever is free on the device (plain transformers, no fraction).
"""

TokenPrint = Literal["blocks", "blocks_x_block_size", "blocks_per_group", "concurrency_x_len", "cells", "tokens"]
ConcurrencyPrint = Literal["tokens_over_len", "blocks_per_request", "none"]
StartCheck = Literal["v0_tokens", "v1_memory", "v1_groups", "none"]

SAMPLER_BYTES_PER_LOGIT_PYTORCH = 38
"""Peak bytes per (sequence x vocabulary) logit of vLLM's dummy sampler run with
PyTorch top-k/top-p (fp32 logits, a full sort with int64 indices, softmax,
cumulative sum, masks, the scattered result and the sampling probabilities).
Calibrated on the llm-d H100 rows (late-2025 vLLM, max_num_seqs 1024):
Llama-3.1-8B 4.76 GiB, gpt-oss-20b 7.38, Qwen3-0.6B 5.56, Qwen3-32B 5.64,
Llama-3.3-70B TP2 4.84 GiB of peak activation, after removing the
``tokens x hidden x 2 B`` of kept hidden states, give 38.25-38.55 B.
Sources: vllm/v1/worker/gpu_model_runner.py ``_dummy_sampler_run``;
vllm/v1/sample/ops/topk_topp_sampler.py; llm-d/llm-d-benchmark
config_explorer/empirical-vllm-memory-results.md."""

SAMPLER_BYTES_PER_LOGIT_GUMBEL = 6
"""Same, for the 2026 profiles (``vllm-v0.28``, ``vllm``) where a model runs on vLLM's V1 runner (MoE and
hybrid models up to v0.28, ngram speculative decoding on v0.29+): model-dtype logits (2 B) plus an FP32
copy (4 B). Read in V2's sampler of v0.22-v0.25, which copied every batch to FP32; V1's own dummy sampler
run of these releases (FlashInfer, then the Triton top-k / top-p path) was not re-derived. On V2 the
profile pass keeps only the model-dtype logits (:func:`planner.engines.vllm_runner.sampler_bytes_per_logit`).
Sources: vllm/v1/worker/gpu/sample/sampler.py of v0.22.0-v0.25.1 (``apply_sampling_params``)."""

SAMPLER_BYTES_PER_LOGIT_FLASHINFER = 12
"""Same, when vLLM logs "Using FlashInfer for top-p & top-k sampling" (v0.10.x):
no full sort. Calibrated on the 0.10.1.1 A100 logs (reference case V07: 0.55 GiB
of activation + non-torch for Qwen2-7B at 2048 tokens / 256 sequences)."""


@dataclass(frozen=True, kw_only=True)
class EngineProfile:
    """One engine (or one era of vLLM) as the planner models it.

    Attributes:
        id: CLI / URL name (``vllm``, ``vllm-v0.10``, ``sglang``, ...).
        family: Engine family.
        label: Human-readable name with the versions it stands for.
        budget_base: What the memory fraction multiplies (see :data:`BudgetBase`).
        default_memory_fraction: Default fraction, or None when the engine
            derives it (SGLang) or has none (llama.cpp, transformers).
        fraction_flag: The engine's flag for the fraction ("" if none).
        hybrid_allocator: True when sliding-window / chunked-local / Mamba layers
            are priced separately (vLLM >= v0.10); False prices every attention
            layer as full attention.
        token_print: How the engine prints its token capacity.
        concurrency_print: How it prints "Maximum concurrency".
        start_check: How it refuses a ``max_model_len`` that does not fit: ``v1_memory`` sums every layer's
            bytes for one request, ``v1_groups`` (vLLM >= v0.21) counts its blocks in every KV-cache group, a
            short group padded (:meth:`planner.engines.pages.KVLayout.start_check_bytes`), ``v0_tokens`` counts
            tokens.
        subtracts_cudagraph: True when the CUDA-graph estimate is deducted
            before the KV cache is sized (vLLM >= v0.21).
        sampler_bytes_per_logit: Dummy-sampler peak per logit [bytes] (0: the
            engine does not profile a sampler).
        non_torch_bytes: Non-torch memory on one GPU (cuBLAS/cuDNN workspaces,
            CUDA context growth after the baseline snapshot) [bytes].
        non_torch_multi_gpu_bytes: Extra non-torch memory when the model spans
            several GPUs (NCCL, custom all-reduce buffers) [bytes].
        cudagraph_bytes: Default CUDA-graph memory estimate [bytes] (TensorRT-LLM; vLLM's follow the
            graphs each version captures, :mod:`planner.engines.vllm_cudagraph`).
        kv_cache_dtypes: KV dtypes the engine accepts (planner names).
        sources: Files the behaviour was read from.
        version: The releases this profile stands for, as a reader names them
            (``vLLM v0.21+ (2026)``); shown next to every figure it produces.
    """

    id: str
    family: EngineFamily
    label: str
    budget_base: BudgetBase
    default_memory_fraction: float | None
    fraction_flag: str
    hybrid_allocator: bool
    token_print: TokenPrint
    concurrency_print: ConcurrencyPrint
    start_check: StartCheck
    subtracts_cudagraph: bool = False
    sampler_bytes_per_logit: int = 0
    non_torch_bytes: int = 0
    non_torch_multi_gpu_bytes: int = 0
    cudagraph_bytes: int = 0
    kv_cache_dtypes: tuple[str, ...] = ("auto", "bf16", "fp8")
    sources: str = ""
    version: str = ""


_V1_NON_TORCH = 133 * MiB
"""0.13 GiB: non-torch memory of every single-GPU llm-d H100 row (late-2025 vLLM V1)."""
_V1_NON_TORCH_MULTI = 430 * MiB
"""+0.42 GiB with TP 2 (llm-d Llama-3.3-70B-FP8 TP2 row: 0.55 GiB non-torch)."""
_V0_NON_TORCH = 358 * MiB
"""0.35 GiB: V0's non-torch figure in reference case V01 (RTX 3090, v0.6.4)."""
_CUDAGRAPH_BYTES = 512 * MiB
"""0.50 GiB of CUDA graphs for TensorRT-LLM (a vLLM 0.10.1.1 figure, "Graph capturing finished in 3 secs,
took 0.50 GiB", reference case V07's log; vLLM itself now counts its graphs: planner.engines.vllm_cudagraph)."""

_TRTLLM_KV_DTYPES = ("auto", "fp16", "bf16", "fp8", "int8")
"""KV dtypes of TensorRT-LLM: the engine's own 16-bit dtype (an engine built with ``--dtype float16``
keeps an fp16 cache: ``kv_cache_config.dtype`` "auto" = the model dtype), or quantized FP8 / INT8
(tensorrt_llm/llmapi/llm_args.py ``KvCacheConfig.dtype``; tensorrt_llm/quantization/mode.py)."""

_VLLM_SOURCES = ("vllm/v1/worker/gpu_worker.py (determine_available_memory), vllm/utils/mem_utils.py "
                 "(memory_profiling), vllm/v1/core/kv_cache_utils.py (get_kv_cache_configs, "
                 "_report_kv_cache_config), vllm/v1/kv_cache_interface.py")


def _vllm(id_: str, label: str, **kw) -> EngineProfile:
    base = dict(
        id=id_, family="vllm", label=label, budget_base="total", default_memory_fraction=0.9,
        fraction_flag="--gpu-memory-utilization", non_torch_bytes=_V1_NON_TORCH,
        non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI,
        kv_cache_dtypes=("auto", "bf16", "fp8"), sources=_VLLM_SOURCES,
    )
    base.update(kw)
    return EngineProfile(**base)


def _sglang(id_: str, label: str, version: str, sources: str) -> EngineProfile:
    """An SGLang profile: sized from free memory before loading by ``--mem-fraction-static`` (its default
    derived per release: :func:`sglang_memory_defaults`, :func:`sglang_2025_memory_defaults`)."""
    return EngineProfile(
        id=id_, family="sglang", label=label, version=version, budget_base="free_before_load",
        default_memory_fraction=None, fraction_flag="--mem-fraction-static", hybrid_allocator=False,
        token_print="tokens", concurrency_print="none", start_check="none", non_torch_bytes=_V1_NON_TORCH,
        non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI, kv_cache_dtypes=("auto", "bf16", "fp8"), sources=sources)


ENGINE_PROFILES: dict[str, EngineProfile] = {
    p.id: p
    for p in (
        _vllm("vllm", "vLLM V1, 2026 builds (>= v0.29: model runner V2 for every model, CUDA graphs profiled)",
              version="vLLM v0.29+ (2026)",
              hybrid_allocator=True, token_print="concurrency_x_len", concurrency_print="blocks_per_request",
              start_check="v1_groups", subtracts_cudagraph=True,
              sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_GUMBEL),
        _vllm("vllm-v0.28", "vLLM V1, v0.22-v0.28 (model runner V2 for dense models: CUDA graphs not charged)",
              version="vLLM v0.22-v0.28",
              hybrid_allocator=True, token_print="concurrency_x_len", concurrency_print="blocks_per_request",
              start_check="v1_groups", subtracts_cudagraph=True,
              sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_GUMBEL),
        _vllm("vllm-v0.11", "vLLM V1, v0.11-v0.20 (hybrid allocator, PyTorch top-k/top-p sampler)",
              version="vLLM v0.11-v0.20",
              hybrid_allocator=True, token_print="blocks_per_group", concurrency_print="blocks_per_request",
              start_check="v1_memory", sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_PYTORCH),
        _vllm("vllm-v0.10", "vLLM V1, v0.10.x (hybrid allocator, FlashInfer sampler)",
              version="vLLM v0.10.x",
              hybrid_allocator=True, token_print="blocks_per_group", concurrency_print="blocks_per_request",
              start_check="v1_memory", sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_FLASHINFER),
        _vllm("vllm-v1-2025", "vLLM V1, Feb-Jun 2025 (~v0.7.3-v0.9: 'GPU KV cache size: N tokens')",
              version="vLLM v0.7.3-v0.9 (V1)",
              hybrid_allocator=False, token_print="blocks_x_block_size", concurrency_print="tokens_over_len",
              start_check="v1_memory", sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_PYTORCH),
        _vllm("vllm-v1-jan2025", "vLLM V1, Jan 2025 (~v0.7.0-v0.7.2: '# GPU blocks: N')",
              version="vLLM v0.7.0-v0.7.2 (V1)",
              hybrid_allocator=False, token_print="blocks", concurrency_print="tokens_over_len",
              start_check="v1_memory", sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_PYTORCH),
        _vllm("vllm-v0", "vLLM V0 engine (<= v0.8: '# GPU blocks: N')",
              version="vLLM <= v0.8 (V0 engine)",
              hybrid_allocator=False, token_print="blocks", concurrency_print="tokens_over_len",
              start_check="v0_tokens", sampler_bytes_per_logit=SAMPLER_BYTES_PER_LOGIT_PYTORCH,
              non_torch_bytes=_V0_NON_TORCH,
              sources="vllm/worker/worker.py (determine_num_available_blocks), vllm/executor"),
        _sglang("sglang", "SGLang (late 2025-26, model_runner_kv_cache_mixin)", "SGLang 0.5.x (late 2025-26)",
                "python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py (profile_max_num_token), "
                "python/sglang/srt/server_args.py (_handle_gpu_memory_settings), "
                "python/sglang/srt/mem_cache/memory_pool.py"),
        _sglang("sglang-v0.4", "SGLang, mid-2025 builds (mem_fraction_static from a fixed reserve per GPU class)",
                "SGLang 0.4.8-0.5.0rc (mid-2025)",
                "python/sglang/srt/server_args.py (ServerArgs.__post_init__, mid-2025: reserved_mem per GPU class), "
                "python/sglang/srt/model_executor/model_runner.py (profile_max_num_token)"),
        EngineProfile(
            id="trtllm", family="trtllm", version="TensorRT-LLM 1.x, PyTorch backend",
            label="TensorRT-LLM, PyTorch backend / LLM API (tokens_per_block 32)",
            budget_base="free_after_profile", default_memory_fraction=0.9, fraction_flag="free_gpu_memory_fraction",
            hybrid_allocator=False, token_print="tokens", concurrency_print="none", start_check="none",
            non_torch_bytes=_V1_NON_TORCH, non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI,
            cudagraph_bytes=_CUDAGRAPH_BYTES, kv_cache_dtypes=_TRTLLM_KV_DTYPES,
            sources="tensorrt_llm/_torch/pyexecutor/_util.py (KvCacheCreator), "
                    "tensorrt_llm/_torch/pyexecutor/resource_manager.py (get_cache_size_per_token)"),
        EngineProfile(
            id="trtllm-engine", family="trtllm", version="TensorRT-LLM, trtllm-build engines (2024-25)",
            label="TensorRT-LLM, trtllm-build engine + C++ runtime (tokens_per_block 64)",
            budget_base="free_after_profile", default_memory_fraction=0.9,
            fraction_flag="kv_cache_free_gpu_mem_fraction", hybrid_allocator=False, token_print="tokens",
            concurrency_print="none", start_check="none", non_torch_bytes=_V1_NON_TORCH,
            non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI, cudagraph_bytes=_CUDAGRAPH_BYTES,
            kv_cache_dtypes=_TRTLLM_KV_DTYPES,
            sources="cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp (calculateMaxNumBlocks)"),
        EngineProfile(
            id="tgi", family="tgi", version="TGI 3.x",
            label="Hugging Face TGI 3.x (flashinfer backend, BLOCK_SIZE 1)",
            budget_base="total_minus_reserve", default_memory_fraction=1.0, fraction_flag="CUDA_MEMORY_FRACTION",
            hybrid_allocator=False, token_print="tokens", concurrency_print="none", start_check="none",
            non_torch_bytes=_V1_NON_TORCH, non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI,
            kv_cache_dtypes=("auto", "fp8"),
            sources="server/text_generation_server/models/flash_causal_lm.py (warmup), "
                    "server/text_generation_server/models/globals.py (BLOCK_SIZE, TGI_WIGGLE_ROOM)"),
        EngineProfile(
            id="llama.cpp", family="llama.cpp", version="llama.cpp 2025-26 builds",
            label="llama.cpp (llama-server / llama-cli, 2025-26 builds)",
            budget_base="requested", default_memory_fraction=None, fraction_flag="",
            hybrid_allocator=True, token_print="cells", concurrency_print="none", start_check="none",
            kv_cache_dtypes=("auto", "fp32", "bf16", "fp16", "q8_0", "q4_0"),
            sources="src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp, src/llama-context.cpp"),
        EngineProfile(
            id="transformers", family="transformers", version="transformers 5",
            label="Hugging Face transformers generate() (DynamicCache, transformers 5)",
            budget_base="device", default_memory_fraction=None, fraction_flag="", hybrid_allocator=True,
            token_print="tokens", concurrency_print="none", start_check="none", non_torch_bytes=_V1_NON_TORCH,
            non_torch_multi_gpu_bytes=_V1_NON_TORCH_MULTI,
            kv_cache_dtypes=("auto", "fp32", "bf16", "fp16", "int8", "int4"),
            sources="transformers/cache_utils.py (DynamicLayer, DynamicSlidingWindowLayer), "
                    "models/deepseek_v3/modeling_deepseek_v3.py"),
    )
}
"""Every profile by id; ``vllm`` is the newest vLLM."""

ENGINE_CHOICES: tuple[str, ...] = tuple(ENGINE_PROFILES)
"""Valid ``--engine`` values."""

DEFAULT_ENGINE = "vllm"


ENGINE_ALIASES: dict[str, str] = {
    "tensorrt-llm": "trtllm", "tensorrt_llm": "trtllm", "trt-llm": "trtllm", "trt_llm": "trtllm",
    "tensorrtllm": "trtllm", "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "llama_cpp": "llama.cpp",
    "hf": "transformers", "huggingface": "transformers",
}
"""Other spellings of engine ids (matched case-insensitively: ``vLLM``, ``SGLang`` work as they are)."""


def resolve_engine_name(name: str) -> str:
    """The profile id an engine name means: itself, its lower case, or an alias.

    Examples: ``"vLLM"`` -> ``"vllm"``; ``"tensorrt-llm"`` -> ``"trtllm"``; ``"TRT-LLM"`` -> ``"trtllm"``.

    Raises:
        ValueError: no profile of that name; the message lists the valid ones.
    """
    if name in ENGINE_PROFILES:
        return name
    key = name.strip().lower()
    key = ENGINE_ALIASES.get(key, key)
    if key in ENGINE_PROFILES:
        return key
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_PROFILES)} "
                     f"(also accepted: {', '.join(ENGINE_ALIASES)})")


def engine_profile(engine: str) -> EngineProfile:
    """Look up a profile by id.

    Raises:
        ValueError: unknown id; the message lists the valid ones.
    """
    try:
        return ENGINE_PROFILES[engine]
    except KeyError:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINE_CHOICES)}") from None


def nearest_kv_cache_dtype(engine: str, kv_cache_dtype: str) -> str | None:
    """The KV-cache dtype ``engine`` offers that is closest in bits to ``kv_cache_dtype``, or None when it
    offers that one (nothing to change).

    Closest: the smallest difference in bits per element (:data:`planner.model.dtypes.KV_CACHE_DTYPES`;
    ``auto`` counts as 16), ties to the wider one, then to a named dtype over ``auto``. Examples: llama.cpp
    with ``fp8`` -> ``q8_0`` (8.5 bits); vLLM with ``q8_0`` or ``int4`` -> ``fp8``; vLLM with ``fp32`` ->
    ``bf16``; TGI with ``bf16`` -> ``auto``.

    Raises:
        ValueError: unknown engine (as :func:`resolve_engine_name`).

    Sources: each profile's ``kv_cache_dtypes`` (the engine's ``--kv-cache-dtype`` / ``-ctk`` choices).
    """
    offered = ENGINE_PROFILES[resolve_engine_name(engine)].kv_cache_dtypes
    if kv_cache_dtype in offered:
        return None

    def bits(name: str) -> float:
        fmt = KV_CACHE_DTYPES.get(name)
        return 16.0 if fmt is None else float(fmt.bits_per_element)

    wanted = bits(kv_cache_dtype)
    return min(offered, key=lambda name: (abs(bits(name) - wanted), -bits(name), name == "auto"))


LARGE_GPU_BYTES, LARGEST_TIER_BYTES = 70 * GiB, 160 * GiB
"""vLLM's scheduler-default tiers by device memory (:func:`vllm_scheduler_defaults`)."""


def is_large_datacenter_gpu(gpu_memory_bytes: int, gpu_name: str) -> bool:
    """vLLM's "large GPU" test for scheduler defaults: >= 70 GiB and not an A100.

    Sources: vllm/engine/arg_utils.py ``EngineArgs._set_default_args``
    (``device_memory >= 70 GiB and "a100" not in device_name``).
    """
    return gpu_memory_bytes >= LARGE_GPU_BYTES and "a100" not in gpu_name.lower()


USAGE_CONTEXTS: tuple[str, ...] = ("serve", "llm")
"""How vLLM is started: ``serve`` (the OpenAI-compatible server, ``UsageContext.OPENAI_API_SERVER``)
or ``llm`` (the offline ``LLM`` class, ``UsageContext.LLM_CLASS``); their scheduler defaults differ."""

V0_CHUNKED_PREFILL_ABOVE = 32768
"""V0 switches chunked prefill on by itself for ``max_model_len`` above this [tokens]
(vllm/engine/arg_utils.py ``EngineArgs._set_default_args_v0``: "Chunked prefill is enabled by
default for models with max_model_len > 32K")."""


def vllm_scheduler_defaults(profile: EngineProfile, gpu_memory_bytes: int, gpu_name: str,
                            max_model_len: int, usage_context: str = "serve") -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` vLLM picks when the user sets neither.

    * V0 (``vllm-v0``): without chunked prefill one pass holds a whole prompt,
      ``max(max_model_len, 2048)`` tokens; above 32K chunked prefill turns itself on with
      2,048 tokens (``serve``) or 8,192 (``llm``); 256 sequences.
    * V1 (every other profile, the 2026 one included): on GPUs of >= 70 GiB that are not A100s,
      8,192 tokens for ``serve`` and 16,384 for ``llm``, 1,024 sequences; else 2,048 (``serve``)
      or 8,192 (``llm``) and 256 sequences. From v0.28.0 (``vllm-v0.28``, ``vllm``) GPUs of >= 160 GiB
      (B200, B300, MI300X) get 16,384 tokens for both (:data:`LARGEST_TIER_PROFILES`).

    Worked example: an H100 80GB (79.19 GiB, not an A100) under ``vllm-v0.11``
    gets (8192, 1024); an A100 80GB gets (2048, 256); ``vllm-v0`` at
    ``max_model_len`` 20,000 profiles (20000, 256).

    Raises:
        ValueError: an unknown ``usage_context``.

    Sources: vllm/engine/arg_utils.py ``EngineArgs.get_batch_defaults`` (V1; the 160 GiB tier read in
    v0.28.0 and v0.29.0, absent from v0.22.0-v0.27.1) and ``_set_default_args_v0``; design note 2 of this
    module.
    """
    if usage_context not in USAGE_CONTEXTS:
        raise ValueError(f"unknown usage context {usage_context!r}; choose one of {', '.join(USAGE_CONTEXTS)}")
    offline = usage_context == "llm"
    if profile.id == "vllm-v0":
        if max_model_len <= V0_CHUNKED_PREFILL_ABOVE:
            return max(max_model_len, 2048), 256
        return (8192 if offline else 2048), 256
    if profile.id in LARGEST_TIER_PROFILES and gpu_memory_bytes >= LARGEST_TIER_BYTES:
        return 16384, 1024
    if is_large_datacenter_gpu(gpu_memory_bytes, gpu_name):
        return (16384 if offline else 8192), 1024
    return (8192 if offline else 2048), 256


LARGEST_TIER_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""vLLM profiles with the >= 160 GiB scheduler tier (:func:`vllm_scheduler_defaults`)."""

CLAMPING_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""vLLM profiles whose defaulted batch limits are clamped to each other (:func:`vllm_batch_limits`; read in
v0.22.0-v0.29.0; when the clamp arrived before v0.22 was not checked)."""


def batch_limits_clamp_below(profile: EngineProfile, gpu_memory_bytes: int, gpu_name: str,
                             usage_context: str = "serve", max_num_batched_tokens: int | None = None,
                             max_num_seqs: int | None = None) -> int:
    """The ``max_model_len`` below which :func:`vllm_batch_limits` clamps a defaulted token budget to
    ``max_num_seqs x max_model_len`` [tokens]: ``ceil(tokens / seqs)``, 0 when nothing clamps (an older
    profile, or a token budget the user set). Below it a plan for one length holds for no other."""
    if profile.id not in CLAMPING_PROFILES or max_num_batched_tokens is not None:
        return 0
    tokens, seqs = vllm_scheduler_defaults(profile, gpu_memory_bytes, gpu_name, 0, usage_context)
    return -(-tokens // (max_num_seqs or seqs))


def vllm_batch_limits(profile: EngineProfile, gpu_memory_bytes: int, gpu_name: str, max_model_len: int,
                      usage_context: str = "serve", *, max_num_batched_tokens: int | None = None,
                      max_num_seqs: int | None = None) -> tuple[int, int]:
    """``(max_num_batched_tokens, max_num_seqs)`` vLLM runs with: the user's, else the defaults of
    :func:`vllm_scheduler_defaults`, and on the 2026 builds a defaulted token budget at most
    ``max_num_seqs x max_model_len`` and a defaulted sequence limit at most the token budget.

    Worked example (``vllm``, H100, ``serve``): ``--max-num-seqs 1 --max-model-len 4096`` profiles min(1 x 4096,
    8192) = 4,096 tokens; ``--max-num-batched-tokens 512`` caps the defaulted 1,024 sequences at 512.

    Raises:
        ValueError: an unknown ``usage_context``; tokens below sequences, which vLLM refuses at startup
            (vllm/config/scheduler.py: "max_num_batched_tokens ... must be greater than or equal to max_num_seqs").

    Sources: vllm/engine/arg_utils.py ``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``
    (2026 source: "Ensure max_num_batched_tokens does not exceed model limit").
    """
    tokens, seqs = vllm_scheduler_defaults(profile, gpu_memory_bytes, gpu_name, max_model_len, usage_context)
    seqs = max_num_seqs or seqs
    if max_num_batched_tokens is not None:
        tokens = max_num_batched_tokens
    elif profile.id in CLAMPING_PROFILES:
        tokens = min(seqs * max_model_len, tokens)
    if max_num_seqs is None and profile.id in CLAMPING_PROFILES:
        seqs = min(seqs, tokens)
    if tokens < seqs:
        raise ValueError(f"vLLM refuses max_num_batched_tokens ({tokens}) below max_num_seqs ({seqs}) (vllm/config/"
                         f"scheduler.py): lower max_num_seqs to {tokens:,} or less, or raise max_num_batched_tokens")
    return tokens, seqs


MLA_BACKEND_BLOCK_SIZES: dict[str, int] = {
    "FLASHMLA": 64, "CUTLASS_MLA": 128, "FLASHINFER_MLA": 64, "TRITON_MLA": 16, "FLASH_ATTN_MLA": 16,
}
"""Block size forced by each vLLM MLA backend [tokens] (vllm/platforms/cuda.py)."""

ATTENTION_BACKEND_BLOCK_SIZES: dict[str, int] = {
    "FLASH_ATTN": 16, "FLASHINFER": 16, "TRITON_ATTN": 16, "XFORMERS": 16, **MLA_BACKEND_BLOCK_SIZES,
}
"""Default vLLM block size per ``--attention-backend`` / ``VLLM_ATTENTION_BACKEND`` [tokens]."""

TGI_BLOCK_SIZES: dict[str, int] = {"flashinfer": 1, "flashdecoding": 256, "flashdecoding-ipex": 64, "paged": 16}
"""TGI ``BLOCK_SIZE`` per ``ATTENTION`` backend (server/text_generation_server/models/globals.py)."""


def default_mla_backend(profile: EngineProfile, gpu_name: str) -> str:
    """vLLM's MLA backend for a GPU: FlashMLA on Hopper, CUTLASS MLA on Blackwell, else Triton.

    Pre-2025 profiles (``vllm-v0``, ``vllm-v1-jan2025``) use Triton MLA everywhere.

    Sources: vllm/platforms/cuda.py ``get_attn_backend_cls`` and
    ``check_and_update_config`` ("Forcing kv cache block size to 64 for FlashMLA backend").
    """
    if profile.id in ("vllm-v0", "vllm-v1-jan2025"):
        return "TRITON_MLA"
    name = gpu_name.lower()
    if any(tag in name for tag in ("b200", "b300", "gb200", "gb300", "blackwell")):
        return "CUTLASS_MLA"
    if any(tag in name for tag in ("h100", "h200", "h800", "h20", "gh200")):
        return "FLASHMLA"
    return "TRITON_MLA"


def default_block_size(profile: EngineProfile, *, is_mla: bool, gpu_name: str = "",
                       attention_backend: str | None = None) -> int:
    """The engine's KV page size [tokens] before any hybrid-model adjustment.

    vLLM: 16, or the MLA backend's forced size (64 FlashMLA, 128 CUTLASS MLA);
    SGLang ``page_size`` 1; TensorRT-LLM ``tokens_per_block`` 32 (PyTorch) or 64
    (trtllm-build); TGI ``BLOCK_SIZE`` 1 with flashinfer; llama.cpp and
    transformers 1 (cells / plain tensors).

    Raises:
        ValueError: an unknown ``attention_backend`` name.

    Sources: module design note 3; ENGINES.md 2-5.
    """
    if profile.family == "vllm":
        backend = attention_backend
        if backend is None:
            backend = default_mla_backend(profile, gpu_name) if is_mla else "FLASH_ATTN"
        try:
            return ATTENTION_BACKEND_BLOCK_SIZES[backend.upper()]
        except KeyError:
            raise ValueError(f"unknown vLLM attention backend {backend!r}; choose one of "
                             f"{', '.join(ATTENTION_BACKEND_BLOCK_SIZES)}") from None
    if profile.family == "tgi":
        backend = (attention_backend or "flashinfer").lower()
        if backend not in TGI_BLOCK_SIZES:
            raise ValueError(f"unknown TGI attention backend {backend!r}; choose one of {', '.join(TGI_BLOCK_SIZES)}")
        return TGI_BLOCK_SIZES[backend]
    if profile.id == "trtllm":
        return 32
    if profile.id == "trtllm-engine":
        return 64
    return 1


def sglang_2025_memory_defaults(gpu_memory_bytes: int, tensor_parallel_size: int = 1,
                                pipeline_parallel_size: int = 1, speculative: bool = False) -> tuple[int, int, float]:
    """``(chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static)`` of mid-2025 SGLang builds.

    Before the reserve was derived from the chunk and graph sizes (:func:`sglang_memory_defaults`),
    ``mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)`` with a fixed reserve per GPU
    class and ``p = tp x pp``: below 35 GiB (T4, 4080, A10, L40, 4090, 5090) ``(2.8 + p / 10)`` GiB;
    below 90 GiB (H100, A100) ``(9.5 + p / 2)``; below 160 GiB (H20, H200) ``(12 + p / 2)``; else 32 GiB;
    +2 GiB with speculative decoding. ``chunked_prefill_size`` 2048 below 35 GiB, 8192 below 160 GiB,
    else 16384; ``cuda_graph_max_bs`` 8 below 35 GiB (80 at TP >= 4), else 160.
    ``gpu_memory_bytes`` is the GPU capacity as SGLang reads it: ``get_nvgpu_memory_capacity`` asks
    ``nvidia-smi --query-gpu=memory.total`` (the catalog's ``memory_reported_mib``), not the memory CUDA
    lets a process use, so callers pass ``EngineRequest.gpu_memory_reported_bytes`` when they know it.
    Worked example (reference case N22, RTX 5080, TP 1): reserved 2,969.6 MiB; nvidia-smi's 16,303 MiB
    give round(13,333.4 / 16,303, 3) = 0.818, the log's (13.91 + 1.25) x 0.818 - 1.25 = 11.15 GiB of K + V
    (printed 11.14); the 15,791 MiB CUDA reports gave 0.812 and 11.06.

    Sources: python/sglang/srt/server_args.py ``ServerArgs.__post_init__`` (mid-2025 source: "T4, 4080",
    "H100, A100", "H200", "B200, MI300" reserves); python/sglang/srt/utils.py
    ``get_nvgpu_memory_capacity`` (nvidia-smi's ``memory.total`` [MiB], smallest over the GPUs); the
    DP-attention +4 GiB term is not modelled.
    """
    tp = tensor_parallel_size
    parallel = tp * pipeline_parallel_size
    mem_mib = gpu_memory_bytes / MiB
    if mem_mib < 35 * 1024:
        reserved_gib, chunk, graph_bs = 2.8 + parallel / 10, 2048, (8 if tp < 4 else 80)
    elif mem_mib < 90 * 1024:
        reserved_gib, chunk, graph_bs = 9.5 + parallel / 2, 8192, 160
    elif mem_mib < 160 * 1024:
        reserved_gib, chunk, graph_bs = 12 + parallel / 2, 8192, 160
    else:
        reserved_gib, chunk, graph_bs = 32, 16384, 160
    reserved = (reserved_gib + (2 if speculative else 0)) * 1024
    return chunk, graph_bs, round((mem_mib - reserved) / mem_mib, 3)


def sglang_memory_defaults(gpu_memory_bytes: int, tensor_parallel_size: int = 1,
                           pipeline_parallel_size: int = 1, extra_reserved_mib: float = 0) -> tuple[int, int, float]:
    """``(chunked_prefill_size, cuda_graph_max_bs, mem_fraction_static)`` SGLang picks.

    Buckets by GPU memory (MiB): < 20 GiB 2048 / 8; < 35 GiB 2048 / 24 (80 at
    TP >= 4); < 60 GiB 4096 / 32 (160); < 160 GiB 8192 / 256 (512); else 16384 / 512.
    Then ``reserved = 512 + 1.5 x max(chunked, 2048) + 2 x cuda_graph_max_bs +
    1024 x tp x pp / 8`` MiB, at least 10 GiB above 60 GiB, and
    ``mem_fraction_static = round((gpu_mem - reserved) / gpu_mem, 3)``.
    Worked example: H100 80GB (81,090 MiB), TP 1: reserved = max(512 + 12288 + 512
    + 128, 10240) = 13,440 MiB, fraction round(67,650 / 81,090, 3) = 0.834.

    ``extra_reserved_mib`` is added to ``reserved`` after that floor: the speculative term
    (:data:`planner.serving.speculative.SGLANG_SPEC_RESERVE_MIB`).

    Sources: python/sglang/srt/server_args.py ``_handle_gpu_memory_settings``
    (PR #10975 and later; the DP-attention term not modelled).
    """
    tp = tensor_parallel_size
    mem_mib = gpu_memory_bytes / MiB
    if mem_mib < 20 * 1024:
        chunk, graph_bs = 2048, 8
    elif mem_mib < 35 * 1024:
        chunk, graph_bs = 2048, (24 if tp < 4 else 80)
    elif mem_mib < 60 * 1024:
        chunk, graph_bs = 4096, (32 if tp < 4 else 160)
    elif mem_mib < 160 * 1024:
        chunk, graph_bs = 8192, (256 if tp < 4 else 512)
    else:
        chunk, graph_bs = 16384, 512
    reserved = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp * pipeline_parallel_size / 8 * 1024
    if mem_mib > 60 * 1024:
        reserved = max(reserved, 10 * 1024)
    return chunk, graph_bs, round((mem_mib - reserved - extra_reserved_mib) / mem_mib, 3)
