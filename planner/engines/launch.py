"""Ready-to-run launch commands that reproduce a planned capacity.

One small function per engine turns a :class:`LaunchSpec` into a shell command
with the engine's own flag names. Flags that carry the plan's capacity
(parallelism, context length, memory fraction, KV dtype, batch limits) are
always written out, so the command yields the planned numbers even where the
engine's defaults change between versions.

Sources (flag names): vLLM ``vllm serve --help`` (vllm/engine/arg_utils.py);
SGLang python/sglang/srt/server_args.py; llama.cpp common/arg.cpp
(``-c``, ``-np``, ``-ctk``, ``-ctv``, ``-ub``, ``-kvu``, ``--swa-full``, ``-fa``);
TensorRT-LLM ``trtllm-serve`` (tensorrt_llm/commands/serve.py); TGI
``text-generation-launcher`` (launcher/src/main.rs).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

VLLM_KV_DTYPES: dict[str, str] = {"auto": "auto", "bf16": "bfloat16", "fp8": "fp8"}
SGLANG_KV_DTYPES: dict[str, str] = {"auto": "auto", "bf16": "bfloat16", "fp8": "fp8_e4m3"}
LLAMACPP_KV_TYPES: dict[str, str] = {"auto": "f16", "fp32": "f32", "fp16": "f16", "bf16": "bf16",
                                     "q8_0": "q8_0", "q4_0": "q4_0"}
TRTLLM_KV_DTYPES: dict[str, str] = {"auto": "auto", "fp16": "float16", "bf16": "bfloat16", "fp8": "fp8",
                                    "int8": "int8"}
TGI_KV_DTYPES: dict[str, str] = {"fp8": "fp8_e4m3fn"}


@dataclass(frozen=True, kw_only=True)
class LaunchSpec:
    """What a launch command must pin down.

    Attributes:
        engine: Profile id (``vllm``, ``vllm-v0.10``, ``sglang``, ``llama.cpp``, ...).
        family: Engine family of the profile.
        model_id: Hugging Face repo id (llama.cpp: the GGUF file is named after it).
        tensor_parallel_size, pipeline_parallel_size, data_parallel_size: Layout.
        max_model_len: Context per request (llama.cpp: ``n_ctx`` in all) [tokens].
        gpu_memory_utilization: Memory fraction (None when the engine has none).
        kv_cache_dtype: Planner KV dtype name.
        weight_dtype: Planner weight dtype name (:func:`weight_flags`).
        max_num_seqs: Sequences per step / slots.
        max_num_batched_tokens: Profile-pass tokens, written when the user set them.
        block_size: Block size, written when the user set it.
        attention_backend: Written when the user set it.
        n_ubatch, kv_unified, swa_full: llama.cpp knobs.
        kv_cache_dtype_v: llama.cpp ``-ctv`` when it differs from ``-ctk`` (None = the same).
        distributed_executor_backend: vLLM ``--distributed-executor-backend``, written when not ``mp``.
        enforce_eager: vLLM ``--enforce-eager``.
        enable_prefix_caching: vLLM ``--enable-prefix-caching``, written when set.
        use_deep_gemm: vLLM's DeepGEMM MoE kernels: ``VLLM_USE_DEEP_GEMM=1`` before the command when set.
        cudagraph_mode, optimization_level, max_cudagraph_capture_size: vLLM's CUDA-graph knobs, written
            when set (:func:`vllm_cudagraph_flags`).
        language_model_only: The plan leaves the vision / audio towers unloaded (text only): vLLM's flag for
            it is written (:func:`vllm_text_only_flags`).
        num_nodes: Nodes one replica spans: SGLang's ``--nnodes`` with node 0's ``--node-rank`` and
            ``--dist-init-addr`` (:func:`sglang_node_flags`), written when above 1 (vLLM spans nodes with its Ray
            backend, ``distributed_executor_backend``).
    """

    engine: str
    family: str
    model_id: str
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    data_parallel_size: int = 1
    max_model_len: int
    gpu_memory_utilization: float | None = None
    kv_cache_dtype: str = "auto"
    weight_dtype: str = "auto"
    max_num_seqs: int = 256
    max_num_batched_tokens: int | None = None
    block_size: int | None = None
    attention_backend: str | None = None
    n_ubatch: int = 512
    kv_unified: bool = False
    swa_full: bool = False
    kv_cache_dtype_v: str | None = None
    distributed_executor_backend: str = "mp"
    enforce_eager: bool = False
    enable_prefix_caching: bool = False
    use_deep_gemm: bool = False
    cudagraph_mode: str | None = None
    optimization_level: int | None = None
    language_model_only: bool = False
    max_cudagraph_capture_size: int | None = None
    num_nodes: int = 1


def _join(parts: list[str]) -> str:
    return " ".join(shlex.quote(p) if p and not p.startswith("-") and " " in p else p for p in parts)


def _fraction(value: float | None) -> str:
    return f"{value:g}" if value is not None else ""


WEIGHT_DTYPE_FLAGS: dict[str, tuple[str, ...]] = {
    "fp32": ("--dtype", "float32"), "bf16": ("--dtype", "bfloat16"), "fp16": ("--dtype", "float16"),
    "fp8": ("--quantization", "fp8"),
}
"""Flags that give vLLM and SGLang the planned weights from an unquantized checkpoint: ``--dtype``
for 16/32-bit, ``--quantization fp8`` for online fp8 (vllm/engine/arg_utils.py; SGLang server_args.py)."""

PRE_QUANTIZED = frozenset({"int8", "int4", "mxfp4", "nvfp4", "fp8_block128"})
"""Weight dtypes no flag produces from a 16-bit checkpoint: the model must be a quantized checkpoint
(vLLM's online ``--quantization fp8`` is per-tensor, not 128 x 128 block-scaled; NVFP4 needs ModelOpt's
``hf_quant_config.json`` or a compressed-tensors nvfp4 config, vllm/model_executor/layers/quantization/modelopt.py)."""

PRE_QUANTIZED_KINDS = {
    "nvfp4": "an NVFP4 checkpoint (ModelOpt hf_quant_config.json, e.g. the nvidia/...-NVFP4 repos)",
    "fp8_block128": "a block-scaled FP8 checkpoint (weight_block_size [128, 128], e.g. the ...-FP8 repos)",
}
"""What a checkpoint of each pre-quantized dtype is, for the launch comment (default: AWQ / GPTQ / ...)."""


def weight_flags(weight_dtype: str) -> tuple[list[str], str]:
    """``(flags, trailing comment)`` that load weights in ``weight_dtype`` (vLLM and SGLang).

    ``auto`` adds nothing (the engines follow the checkpoint's ``torch_dtype`` and
    ``quantization_config``). int8/int4/mxfp4/nvfp4/fp8_block128 add no flag but a comment: they
    need a checkpoint quantized that way (AWQ, GPTQ, compressed-tensors, MXFP4, ModelOpt NVFP4,
    block-scaled FP8), whose quantization config the engine reads.
    """
    if weight_dtype in PRE_QUANTIZED_KINDS:
        return [], (f"  # {weight_dtype} weights: serve {PRE_QUANTIZED_KINDS[weight_dtype]}; the engine reads its "
                    "quantization config")
    if weight_dtype in PRE_QUANTIZED:
        return [], (f"  # {weight_dtype} weights: serve a checkpoint quantized to {weight_dtype} "
                    "(AWQ/GPTQ/compressed-tensors/MXFP4); the engine reads its quantization_config")
    return list(WEIGHT_DTYPE_FLAGS.get(weight_dtype, ())), ""


def vllm_command(spec: LaunchSpec) -> str:
    """``vllm serve MODEL --tensor-parallel-size ... --max-num-seqs ...``."""
    head, tail = vllm_command_around_length(spec)
    return f"{head}{spec.max_model_len}{tail}"


def vllm_command_around_length(spec: LaunchSpec) -> tuple[str, str]:
    """:func:`vllm_command` as the text before and after the ``--max-model-len`` value.

    ``head + str(max_model_len) + tail`` is the command for any length (a number
    is never quoted), so a plan builds the two once per setup; ``spec.max_model_len``
    itself is not read.
    """
    before = ["vllm", "serve", spec.model_id,
              "--tensor-parallel-size", str(spec.tensor_parallel_size)]
    if spec.pipeline_parallel_size > 1:
        before += ["--pipeline-parallel-size", str(spec.pipeline_parallel_size)]
    if spec.data_parallel_size > 1:
        before += ["--data-parallel-size", str(spec.data_parallel_size)]
    before.append("--max-model-len")
    after = ["--gpu-memory-utilization", _fraction(spec.gpu_memory_utilization),
             "--kv-cache-dtype", VLLM_KV_DTYPES.get(spec.kv_cache_dtype, spec.kv_cache_dtype),
             "--max-num-seqs", str(spec.max_num_seqs)]
    if spec.max_num_batched_tokens is not None:
        after += ["--max-num-batched-tokens", str(spec.max_num_batched_tokens)]
    if spec.block_size is not None:
        after += ["--block-size", str(spec.block_size)]
    if spec.distributed_executor_backend != "mp":
        after += ["--distributed-executor-backend", spec.distributed_executor_backend]
    if spec.enforce_eager:
        after.append("--enforce-eager")
    if spec.enable_prefix_caching:
        after.append("--enable-prefix-caching")
    after += vllm_cudagraph_flags(spec)
    after += vllm_text_only_flags(spec)
    flags, comment = weight_flags(spec.weight_dtype)
    head = _join(before) + " "
    if spec.attention_backend:
        head = f"VLLM_ATTENTION_BACKEND={spec.attention_backend.upper()} {head}"
    if spec.use_deep_gemm:
        head = f"VLLM_USE_DEEP_GEMM=1 {head}"
    if spec.engine == "vllm-v0":
        head = f"VLLM_USE_V1=0 {head}"
    return head, " " + _join(after + flags) + comment


LANGUAGE_MODEL_ONLY_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""vLLM profiles whose ``vllm serve`` takes ``--language-model-only`` (the vLLM docs' multimodal page, 2026:
"a text-only mode can be enabled by setting all multimodal modalities to 0 using --language-model-only"; the
flag follows vLLM PR 22299 of 2025-08, which made every modality limited to 0 mean the same)."""


def vllm_text_only_flags(spec: LaunchSpec) -> list[str]:
    """The flag of a text-only vLLM launch (``spec.language_model_only``): ``--language-model-only`` for the
    2026 profiles (:data:`LANGUAGE_MODEL_ONLY_PROFILES`), else the form every V1 release since v0.10.1 reads
    the same way, ``--limit-mm-per-prompt '{"image": 0, "video": 0}'`` (vLLM PR 22299: every modality
    limited to 0 loads no tower and profiles no encoder). Without it a copied command loads the tower the plan
    left out and profiles its encoder, so the KV budget comes out smaller than planned."""
    if not spec.language_model_only:
        return []
    if spec.engine in LANGUAGE_MODEL_ONLY_PROFILES:
        return ["--language-model-only"]
    return ["--limit-mm-per-prompt", '{"image": 0, "video": 0}']


def vllm_cudagraph_flags(spec: LaunchSpec) -> list[str]:
    """vLLM's CUDA-graph flags for the knobs set: ``-O<n>`` (``--optimization-level`` from v0.12, the
    compilation level before), ``--compilation-config '{"cudagraph_mode": ...}'`` (accepted by every V1
    release) and ``--max-cudagraph-capture-size`` (``--cuda-graph-sizes`` on v0.10 and the 2025 V1 builds).

    With ``--enforce-eager`` none is written: vLLM then runs eager whatever they say (compilation mode NONE,
    ``cudagraph_mode`` NONE, ``-O0``, no capture sizes; vllm/config/vllm.py ``VllmConfig.__post_init__``), so a
    command carrying both would contradict itself (:func:`planner.engines.vllm_cudagraph.eager_conflict`).

    Sources: vllm/engine/arg_utils.py and vllm/utils/argparse_utils.py of v0.10.1.1, v0.12.0 and v0.29.0.
    """
    flags: list[str] = []
    if spec.enforce_eager:
        return flags
    if spec.optimization_level is not None:
        flags.append(f"-O{spec.optimization_level}")
    if spec.cudagraph_mode is not None:
        flags += ["--compilation-config", f'{{"cudagraph_mode": "{spec.cudagraph_mode}"}}']
    if spec.max_cudagraph_capture_size is not None:
        early = spec.engine in ("vllm-v0.10", "vllm-v1-2025")
        flags += ["--cuda-graph-sizes" if early else "--max-cudagraph-capture-size", str(spec.max_cudagraph_capture_size)]
    return flags


def sglang_command(spec: LaunchSpec) -> str:
    """``python -m sglang.launch_server --model-path ... --tp ... --mem-fraction-static ...``."""
    parts = ["python", "-m", "sglang.launch_server", "--model-path", spec.model_id,
             "--tp", str(spec.tensor_parallel_size)]
    if spec.pipeline_parallel_size > 1:
        parts += ["--pp-size", str(spec.pipeline_parallel_size)]
    if spec.data_parallel_size > 1:
        parts += ["--dp", str(spec.data_parallel_size)]
    if spec.num_nodes > 1:
        parts += sglang_node_flags(spec.num_nodes, 0)
    parts += ["--context-length", str(spec.max_model_len)]
    if spec.gpu_memory_utilization is not None:
        parts += ["--mem-fraction-static", _fraction(spec.gpu_memory_utilization)]
    parts += ["--kv-cache-dtype", SGLANG_KV_DTYPES.get(spec.kv_cache_dtype, spec.kv_cache_dtype),
              "--max-running-requests", str(spec.max_num_seqs)]
    if spec.max_num_batched_tokens is not None:
        parts += ["--chunked-prefill-size", str(spec.max_num_batched_tokens)]
    if spec.block_size is not None:
        parts += ["--page-size", str(spec.block_size)]
    flags, comment = weight_flags(spec.weight_dtype)
    return _join(parts + flags) + comment


SGLANG_HEAD = "HEAD_IP"
"""Where SGLang's multi-node commands name the first node's address (the reader fills it in)."""

SGLANG_DIST_INIT_PORT = 20000
"""The port of ``--dist-init-addr`` in SGLang's multi-node example (docs/references/multi_node_deployment/
multi_node.md, Llama 3.1 405B on two nodes); any free port of the first node serves."""


def sglang_node_flags(num_nodes: int, node_rank: int) -> list[str]:
    """``--nnodes N --node-rank R --dist-init-addr HEAD_IP:20000``: the flags one node of an SGLang replica over
    ``num_nodes`` nodes runs with (python/sglang/srt/server_args.py ``nnodes``, ``node_rank``, ``dist_init_addr``;
    every node names the first node's address, the rendezvous of torch.distributed in ``ModelRunner.
    init_torch_distributed``, python/sglang/srt/model_executor/model_runner.py)."""
    return ["--nnodes", str(num_nodes), "--node-rank", str(node_rank), "--dist-init-addr",
            f"{SGLANG_HEAD}:{SGLANG_DIST_INIT_PORT}"]


_NODES = re.compile(r"(?<= )--nnodes (\d+) --node-rank 0(?= )")


def node_commands(command: str) -> list[str]:
    """Every node's command of an SGLang launch over nodes, node 0's first: ``command`` (node 0's, as
    :func:`sglang_command` writes it, with any flags added after) with ``--node-rank`` 0, 1, ...; ``[command]`` for
    a launch on one node or of another engine (a vLLM Ray launch runs one command, on the first node)."""
    found = _NODES.search(command)
    if found is None:
        return [command]
    head, tail = command[:found.start()], command[found.end():]
    nodes = int(found.group(1))
    return [f"{head}--nnodes {nodes} --node-rank {rank}{tail}" for rank in range(nodes)]


def without_node_flags(command: str) -> str:
    """``command`` without the node flags :func:`sglang_command` writes (a data / expert parallel launch writes its
    own per node: ``planner.scale.deploy.node_commands``)."""
    found = _NODES.search(command)
    if found is None:
        return command
    rest = command[found.end():].removeprefix(f" --dist-init-addr {SGLANG_HEAD}:{SGLANG_DIST_INIT_PORT}")
    return command[:found.start()].rstrip() + rest


def llamacpp_command(spec: LaunchSpec) -> str:
    """``llama-server -m MODEL.gguf -c N_CTX -np SLOTS -ctk T -ctv T ...``.

    Quantized V needs flash attention, so ``-fa on`` is added for q8_0 / q4_0.
    """
    kv = LLAMACPP_KV_TYPES.get(spec.kv_cache_dtype, spec.kv_cache_dtype)
    kv_v = kv if spec.kv_cache_dtype_v in (None, "auto") else LLAMACPP_KV_TYPES.get(spec.kv_cache_dtype_v,
                                                                                   spec.kv_cache_dtype_v)
    gguf = spec.model_id.rsplit("/", 1)[-1] + ".gguf"
    parts = ["llama-server", "-m", gguf, "-c", str(spec.max_model_len), "-np", str(spec.max_num_seqs),
             "-ctk", kv, "-ctv", kv_v, "-ub", str(spec.n_ubatch), "-ngl", "999"]
    if kv_v.startswith("q"):
        parts += ["-fa", "on"]
    if spec.kv_unified:
        parts.append("-kvu")
    if spec.swa_full:
        parts.append("--swa-full")
    devices = spec.tensor_parallel_size * spec.pipeline_parallel_size
    if devices > 1:
        parts += ["-sm", "layer", "-ts", ",".join(["1"] * devices)]
    return _join(parts)


def trtllm_command(spec: LaunchSpec) -> str:
    """``trtllm-serve MODEL --tp_size ... --kv_cache_free_gpu_memory_fraction ...``."""
    parts = ["trtllm-serve", spec.model_id, "--tp_size", str(spec.tensor_parallel_size),
             "--pp_size", str(spec.pipeline_parallel_size), "--max_seq_len", str(spec.max_model_len),
             "--max_batch_size", str(spec.max_num_seqs)]
    if spec.gpu_memory_utilization is not None:
        parts += ["--kv_cache_free_gpu_memory_fraction", _fraction(spec.gpu_memory_utilization)]
    if spec.max_num_batched_tokens is not None:
        parts += ["--max_num_tokens", str(spec.max_num_batched_tokens)]
    command = _join(parts)
    if spec.kv_cache_dtype != "auto":
        command += f"  # plus kv_cache_config: {{dtype: {TRTLLM_KV_DTYPES[spec.kv_cache_dtype]}}} in --extra_llm_api_options"
    return command


def tgi_command(spec: LaunchSpec) -> str:
    """``text-generation-launcher --model-id ... --num-shard ... --max-total-tokens ...``."""
    parts = ["text-generation-launcher", "--model-id", spec.model_id,
             "--num-shard", str(spec.tensor_parallel_size),
             "--max-total-tokens", str(spec.max_model_len),
             "--max-input-tokens", str(max(1, spec.max_model_len - 1)),
             "--max-concurrent-requests", str(spec.max_num_seqs)]
    if spec.gpu_memory_utilization is not None:
        parts += ["--cuda-memory-fraction", _fraction(spec.gpu_memory_utilization)]
    if spec.max_num_batched_tokens is not None:
        parts += ["--max-batch-prefill-tokens", str(spec.max_num_batched_tokens)]
    if spec.kv_cache_dtype in TGI_KV_DTYPES:
        parts += ["--kv-cache-dtype", TGI_KV_DTYPES[spec.kv_cache_dtype]]
    command = _join(parts)
    if spec.attention_backend:
        command = f"ATTENTION={spec.attention_backend.lower()} {command}"
    return command


def transformers_command(spec: LaunchSpec) -> str:
    """A ``generate()`` one-liner with the planned batch and length."""
    device_map = "auto" if spec.tensor_parallel_size * spec.pipeline_parallel_size > 1 else "cuda"
    return (
        "python -c \"from transformers import AutoModelForCausalLM, AutoTokenizer; "
        f"m = AutoModelForCausalLM.from_pretrained('{spec.model_id}', dtype='auto', device_map='{device_map}'); "
        f"t = AutoTokenizer.from_pretrained('{spec.model_id}'); "
        f"x = t(['Hello'] * {spec.max_num_seqs}, return_tensors='pt').to(m.device); "
        f"print(m.generate(**x, max_length={spec.max_model_len}).shape)\""
    )


_BUILDERS = {
    "vllm": vllm_command, "sglang": sglang_command, "llama.cpp": llamacpp_command,
    "trtllm": trtllm_command, "tgi": tgi_command, "transformers": transformers_command,
}


def launch_command(spec: LaunchSpec) -> str:
    """The launch command for ``spec.family``.

    Raises:
        ValueError: an unknown engine family.
    """
    try:
        return _BUILDERS[spec.family](spec)
    except KeyError:
        raise ValueError(f"no launch command for engine family {spec.family!r}; "
                         f"choose one of {', '.join(_BUILDERS)}") from None


SEQUENCE_FLAGS = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests"}
"""The flag that caps the sequences a launch runs at once (vLLM ``SchedulerConfig.max_num_seqs``; SGLang
``ServerArgs.max_running_requests``, python/sglang/srt/server_args.py), as the builders above write it."""


def with_max_num_seqs(command: str, family: str, value: int) -> str:
    """``command`` with its :data:`SEQUENCE_FLAGS` value set to ``value`` (a command without the flag is returned as
    it is): the cap a sized pool launches with, written by :func:`vllm_command` / :func:`sglang_command` from the
    engine's resolved default before the pool is sized."""
    flag = SEQUENCE_FLAGS.get(family)
    if flag is None:
        return command
    return re.sub(rf"(?<= ){re.escape(flag)} \d+(?= |$)", f"{flag} {value}", command, count=1)
