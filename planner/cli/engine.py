"""Engine flags of ``python -m planner plan``: the engine-faithful plan merged into the v1 output.

Flags (URL keys are the same names with underscores): ``--engine`` (any profile id, any
case, or an alias such as ``tensorrt-llm`` / ``trt-llm``), ``--tensor-parallel-size``,
``--pipeline-parallel-size``, ``--max-num-batched-tokens``, ``--max-num-seqs``,
``--max-model-len``, ``--available-kv-memory-gib`` (one value, or one per worker in rank
order, comma-separated, as a multi-worker log prints them), ``--distributed-executor-backend``
(``mp`` / ``ray``), ``--num-nodes``, ``--enforce-eager``, ``--cudagraph-mode``, ``-O`` /
``--optimization-level``, ``--max-cudagraph-capture-size`` and ``--usage-context`` (``serve`` /
``llm``) (``--block-size`` and ``--gpu-memory-utilization`` are shared with the v1 plan). JSON keys added:
``engine``, ``available_kv_cache_bytes`` (per GPU), ``num_gpu_blocks``,
``engine_kv_cache_tokens`` (as the engine prints it), ``max_concurrency`` (as vLLM
prints it), ``engine_max_model_len``, ``launch_command`` (plus ``engine_plan``
with the per-rank breakdown). They are added when any engine flag is given, so
the v1 JSON stays byte-identical for existing callers.

This module is a CLI edge: it reads the catalog lazily (inside functions).
"""

from __future__ import annotations

import argparse

from planner.cli.args import gib_amount, positive_int, token_count
from planner.cli.serving import serving_from_args
from planner.engines.sglang_request_cap import cap_text, pool_fix_text
from planner.engines import plan_engine
from planner.engines.replica_layout import stage_log_note
from planner.engines.expected_error import close_call, expected_error_bytes, expected_error_reason
from planner.engines.launch import node_commands
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.profiles import (DEFAULT_ENGINE, ENGINE_ALIASES, ENGINE_CHOICES, ENGINE_PROFILES, USAGE_CONTEXTS,
                                      resolve_engine_name)
from planner.engines.types import EXECUTOR_BACKENDS, EnginePlan, EngineRequest, stores_another_cache
from planner.engines.vllm_cudagraph import CUDAGRAPH_MODES, OPTIMIZATION_LEVELS
from planner.plan_types import ENGINE_KNOB_FIELDS, PlanRequest
from planner.engines.vllm_fp8_kv import fp8_kv_note_of
from planner.units import GiB

ENGINE_FLAGS = ("engine", "tensor_parallel_size", "pipeline_parallel_size", "max_num_batched_tokens",
                "max_num_seqs", "max_model_len", "available_kv_memory_gib", "distributed_executor_backend",
                "num_nodes", "enforce_eager", "usage_context", "enable_prefix_caching", "gpu_memory_in_use_gib",
                "cudagraph_mode", "optimization_level", "max_cudagraph_capture_size", "warm_compile_cache",
                "use_deep_gemm")
"""Argument names whose presence turns the engine plan on."""


def engine_name(text: str) -> str:
    """An ``--engine`` value: a profile id in any case, or an alias (``tensorrt-llm``, ``trt-llm``)."""
    try:
        return resolve_engine_name(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cudagraph_mode(text: str) -> str:
    """A ``--cudagraph-mode`` value in any case (``full_and_piecewise`` -> ``FULL_AND_PIECEWISE``)."""
    value = text.strip().upper()
    if value not in CUDAGRAPH_MODES:
        raise argparse.ArgumentTypeError(f"unknown cudagraph mode {text!r}; choose one of {', '.join(CUDAGRAPH_MODES)}")
    return value


def gib_per_rank(text: str) -> tuple[float, ...]:
    """``--available-kv-memory-gib``: one GiB amount, or several separated by commas (one per worker)."""
    parts = [p.strip() for p in text.split(",")]
    if not parts or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"expected GiB amounts separated by commas, got {text!r}")
    return tuple(gib_amount(p) for p in parts)


def add_engine_arguments(p: argparse.ArgumentParser) -> None:
    """Register the engine flags on the ``plan`` parser (all default to None = unset)."""
    p.add_argument("--engine", type=engine_name, default=None, metavar="{" + ",".join(ENGINE_CHOICES) + "}",
                   help=f"serving engine profile, any case; also {', '.join(ENGINE_ALIASES)} (default when "
                        f"another engine flag is given: {DEFAULT_ENGINE}, the newest vLLM)")
    p.add_argument("--tensor-parallel-size", type=positive_int, default=None,
                   help="GPUs each layer is split over (default: --num-gpus / --pipeline-parallel-size)")
    p.add_argument("--pipeline-parallel-size", type=positive_int, default=None, help="pipeline stages (default 1)")
    p.add_argument("--max-model-len", type=token_count, default=None,
                   help="engine max_model_len (llama.cpp n_ctx); default: --context-len")
    p.add_argument("--available-kv-memory-gib", type=gib_per_rank, default=None,
                   help="the engine's printed available KV memory per GPU in GiB, or one value per worker in rank "
                        "order separated by commas (the pool takes the smallest; skips the overhead model)")
    p.add_argument("--distributed-executor-backend", choices=EXECUTOR_BACKENDS, default=None,
                   help="vLLM executor: mp (one node, default) or ray (needed to span nodes)")
    p.add_argument("--num-nodes", type=positive_int, default=None,
                   help="nodes the GPUs of one replica span (default 1; more than 1 needs the ray backend)")
    p.add_argument("--use-deep-gemm", action="store_const", const=True, default=None,
                   help="vLLM runs FP8 MoE layers on DeepGEMM (VLLM_USE_DEEP_GEMM=1 with the deep_gemm package "
                        "installed, Hopper / datacenter Blackwell; v0.11's default when installed): its workspaces "
                        "size a data-parallel MoE rank's profile pass on vllm-v0.10 / vllm-v0.11; default: Triton")
    p.add_argument("--gpu-memory-in-use-gib", type=gib_amount, default=None,
                   help="device memory other processes already hold on each GPU, GiB (a shared card): vLLM "
                        "refuses when its utilization x total is more than is free, SGLang sizes from what is free")
    p.add_argument("--enable-prefix-caching", action="store_const", const=True, default=None,
                   help="vLLM --enable-prefix-caching (on an attention + Mamba hybrid each request holds two "
                        "state pages per Mamba layer in the 2026 builds)")
    add_budget_knob_arguments(p)


def add_budget_knob_arguments(p: argparse.ArgumentParser) -> None:
    """Register the vLLM flags that change its non-KV memory, which the budget takes too (:func:`budget_knobs`):
    ``plan`` (through :func:`add_engine_arguments`) and ``allocation``, whose page applies a link's knobs."""
    p.add_argument("--max-num-batched-tokens", type=positive_int, default=None,
                   help="tokens in the engine's profile pass (default: the engine's)")
    p.add_argument("--max-num-seqs", type=positive_int, default=None,
                   help="sequences per step / llama.cpp slots (default: the engine's)")
    p.add_argument("--enforce-eager", action="store_const", const=True, default=None,
                   help="vLLM --enforce-eager: no CUDA graphs, so no CUDA-graph memory")
    p.add_argument("--cudagraph-mode", type=cudagraph_mode, default=None, metavar="{" + ",".join(CUDAGRAPH_MODES) + "}",
                   help="vLLM cudagraph_mode (-cc.cudagraph_mode=..., any case): FULL_AND_PIECEWISE (default from "
                        "v0.11), PIECEWISE (default before), FULL, FULL_DECODE_ONLY or NONE; sets which CUDA graphs "
                        "are captured and so their memory (2026 builds take it from the KV cache)")
    p.add_argument("-O", "--optimization-level", type=int, choices=OPTIMIZATION_LEVELS, default=None,
                   help="vLLM -O level: 0 captures no CUDA graphs, 1 PIECEWISE, 2 / 3 FULL_AND_PIECEWISE (v0.12+ "
                        "--optimization-level; on v0.10 -O is the compilation level and only 3, the default, "
                        "captures graphs); --cudagraph-mode wins over it")
    p.add_argument("--max-cudagraph-capture-size", type=positive_int, default=None,
                   help="vLLM --max-cudagraph-capture-size (--cuda-graph-sizes N on v0.10): the largest batch "
                        "captured as a CUDA graph [tokens] (default min(2 x max-num-seqs, 512))")
    p.add_argument("--warm-compile-cache", action="store_const", const=True, default=None,
                   help="vLLM's torch.compile cache already holds this model (a relaunch on the same machine): "
                        "leave out the 0.41 GiB a first launch's compile adds to the profile pass (Model Runner V2, "
                        "measured on a public vLLM 0.27.1 log); default: plan a first launch")
    p.add_argument("--usage-context", choices=USAGE_CONTEXTS, default=None,
                   help="how vLLM is started: serve (vllm serve, default) or llm (the offline LLM class); "
                        "their default max_num_batched_tokens / max_num_seqs differ")


def engine_requested(args: argparse.Namespace) -> bool:
    """True when any engine flag was given."""
    return any(getattr(args, name, None) is not None for name in ENGINE_FLAGS)


def parallel_layout(args: argparse.Namespace) -> tuple[int, int, int]:
    """``(num_gpus, tensor_parallel_size, pipeline_parallel_size)`` from the flags.

    ``--num-gpus`` (GPUs per replica) must equal ``tp x pp`` when both are given.

    Raises:
        ValueError: inconsistent values, with the numbers that would fit.
    """
    pp = args.pipeline_parallel_size or 1
    tp = args.tensor_parallel_size
    num_gpus = args.num_gpus
    if tp is None:
        if num_gpus is not None and num_gpus % pp:
            raise ValueError(f"--num-gpus {num_gpus} is not a multiple of --pipeline-parallel-size {pp}")
        tp = (num_gpus or pp) // pp
    if num_gpus is None:
        num_gpus = tp * pp
    if num_gpus != tp * pp:
        raise ValueError(f"--num-gpus {num_gpus} must equal --tensor-parallel-size {tp} x "
                         f"--pipeline-parallel-size {pp} = {tp * pp}; drop --num-gpus or make them agree")
    return num_gpus, tp, pp


def run_engine(args: argparse.Namespace, model, gpu) -> EnginePlan:
    """The engine plan for parsed ``plan`` args (model and GPU already resolved).

    Raises:
        ValueError: invalid combinations (e.g. a KV dtype the engine does not offer).
    """
    return plan_engine(model, gpu.framework_memory_bytes, engine_request(args, gpu))


def engine_request(args: argparse.Namespace, gpu) -> EngineRequest:
    """The :class:`EngineRequest` parsed ``plan`` args describe (also used by ``disagg`` / ``deploy``,
    planner/cli/scale.py).

    Raises:
        ValueError: inconsistent parallel sizes or serving flags.
    """
    _, tp, pp = parallel_layout(args)
    values = args.available_kv_memory_gib or ()
    per_rank = tuple(int(v * GiB) for v in values) if len(values) > 1 else ()
    available = int(values[0] * GiB) if len(values) == 1 else None
    nodes = args.num_nodes or 1
    backend = args.distributed_executor_backend or ("ray" if nodes > 1 else "mp")
    request = EngineRequest(
        engine=args.engine or DEFAULT_ENGINE, weight_dtype=args.weight_dtype, kv_cache_dtype=args.kv_cache_dtype,
        tensor_parallel_size=tp, pipeline_parallel_size=pp,
        max_model_len=args.max_model_len or args.context_len or 8192,
        gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
        max_num_batched_tokens=args.max_num_batched_tokens, max_num_seqs=args.max_num_seqs,
        available_kv_memory_bytes=available, available_kv_memory_per_rank_bytes=per_rank, gpu_name=gpu.name,
        gpu_memory_reported_bytes=reported_memory_bytes(gpu),
        distributed_executor_backend=backend, num_nodes=nodes, enforce_eager=bool(args.enforce_eager),
        cudagraph_mode=getattr(args, "cudagraph_mode", None), optimization_level=getattr(args, "optimization_level", None),
        max_cudagraph_capture_size=getattr(args, "max_cudagraph_capture_size", None),
        warm_compile_cache=bool(getattr(args, "warm_compile_cache", None)),
        use_deep_gemm=bool(getattr(args, "use_deep_gemm", None)),
        usage_context=args.usage_context or "serve",
        enable_prefix_caching=bool(getattr(args, "enable_prefix_caching", None)),
        memory_in_use_bytes=int((getattr(args, "gpu_memory_in_use_gib", None) or 0) * GiB),
        serving=serving_from_args(args, engine=args.engine or DEFAULT_ENGINE),
    )
    return request


def budget_knobs(args: argparse.Namespace) -> dict:
    """The :class:`planner.budget.PlanRequest` fields of the engine flags that change vLLM's non-KV memory, as
    :func:`engine_request` reads them, so ``plan``'s budget prices the launch its engine section plans (QA:
    ``--max-num-seqs 64`` left the budget at 50.38 GiB beside "engine KV 51.53 GiB" for Kimi-K2.5 on 8 H200).

    Raises:
        ValueError: a vLLM-only flag (:data:`planner.plan_types.ENGINE_KNOB_FIELDS`: ``--enforce-eager``,
            ``--usage-context llm``, ``--warm-compile-cache``, the CUDA-graph flags) set for another ``--engine``,
            which has no such flag (QA: ``--engine sglang --enforce-eager`` moved the budget with no word).
    """
    given = {name: getattr(args, name) for name in ENGINE_KNOB_FIELDS}  # None: unset, the request's default
    knobs = {"max_num_seqs": args.max_num_seqs, **{name: value for name, value in given.items() if value is not None}}
    engine = getattr(args, "engine", None)  # None: no engine section, the budget's newest vLLM
    _, foreign = PlanRequest(context_len=1, **knobs).for_engine_family(ENGINE_PROFILES[engine].family if engine
                                                                        else "vllm")
    if foreign:  # as planner.engines.dispatch refuses --cudagraph-mode under another engine: no silent budget change
        flags = ", ".join("-O" if name == "optimization_level" else "--" + name.replace("_", "-") for name in foreign)
        raise ValueError(f"{flags} {'are vLLM flags' if len(foreign) > 1 else 'is a vLLM flag'}; {engine} does not "
                         f"take {'them' if len(foreign) > 1 else 'it'} (drop {'them' if len(foreign) > 1 else 'it'}, "
                         "or pick a vLLM engine)")
    return knobs


def engine_json(result: EnginePlan) -> dict:
    """The keys merged into the ``plan`` JSON; ``launch_commands`` (every node's, node 0's first: the same as
    ``launch_command``) only for an SGLang launch over nodes, which runs one command per node."""
    plan = result.to_dict()  # with available_kv_cache_bytes_expected_error (planner/engines/expected_error.py)
    commands = node_commands(result.launch_command)
    return result.cli_keys() | {"available_kv_cache_bytes_expected_error":
                                plan["available_kv_cache_bytes_expected_error"], "engine_plan": plan} | (
        {"launch_commands": commands} if len(commands) > 1 else {})


def _graphs_charged(result: EnginePlan) -> bool:
    """True when the plan takes CUDA-graph memory from the KV cache (the 2026 vLLM builds, where the model
    runner estimates them: :func:`planner.engines.vllm_runner.graphs_charged`)."""
    rank = result.limiting_rank
    return bool(rank.cudagraph_charged and rank.cudagraph_bytes)


def _expected_error_text(result: EnginePlan) -> str:
    """`` (+-X GiB expected error)`` of a cold-start figure, "" for a printed one, `` (expected error not
    measured)`` for a group the bench never measured (:func:`planner.engines.expected_error.expected_error_bytes`,
    design note 3: no borrowed figure)."""
    error = expected_error_bytes(result)
    if error is None:
        return " (expected error not measured)"
    return f" (±{error / GiB:,.2f} GiB expected error)" if error else ""


def engine_table_lines(result: EnginePlan, budget_kv_cache_dtype: str | None = None,
                       shown_notes: tuple[str, ...] = ()) -> list[str]:
    """Lines appended to the ``plan`` table; ``budget_kv_cache_dtype``: the cache the budget lines above price
    (the newest vLLM's: ``fp8_ds_mla`` for a sparse-MLA model under ``auto``), named in a note when this engine
    stores another; ``shown_notes``: serving notes the table prints elsewhere (the serving block's), left out of
    the engine's."""
    rank = result.limiting_rank
    lines = [
        f"engine       {result.engine}: {result.engine_label} (models {result.engine_version})",
        f"engine KV    {result.available_kv_cache_bytes / GiB:,.2f} GiB per GPU available"
        f"{' (from the engine log)' if result.available_kv_from_log else ''}"
        f"{_expected_error_text(result)}; "
        f"weights {rank.weights_bytes / GiB:,.2f}, activation {rank.activation_bytes / GiB:,.2f}, "
        f"non-torch {rank.non_torch_bytes / GiB:,.2f}"
        f"{f', CUDA graphs {rank.cudagraph_bytes / GiB:,.2f}' if _graphs_charged(result) else ''} GiB",
        ("engine says  " + "\n             ".join(result.engine_log_lines)) if result.engine_log_lines
        else "engine says  nothing about memory at startup" if result.starts
        else "engine says  nothing: it stops before allocating",
        (f"max len      none: the engine stops before it profiles memory (this launch: {result.max_model_len:,})"
         if result.stopped_at_config_check else
         f"max len      {result.engine_max_model_len:,} tokens: the largest --max-model-len the engine would accept "
         f"with this memory (this launch: {result.max_model_len:,})"),
        f"starts       {'yes' if result.starts else 'no'}" + (f"; but {cap}" if (cap := cap_text(result)) else ""),
    ]
    if cap:  # an SGLang pool shorter than one request: the way out, with numbers (sglang_request_cap)
        lines.append(f"  fix: {pool_fix_text(result)}")
    if reason := expected_error_reason(result):  # why the +- on the engine KV line is that large
        lines.insert(2, f"KV error     {reason}")
    if stage_note := stage_log_note(result):  # pipeline stages: which stage each printed line describes
        lines.insert(lines.index(next(x for x in lines if x.startswith("engine says"))) + 1, f"  note: {stage_note}")
    if result.decoding_note and result.starts:  # a refused launch decodes nothing
        lines.insert(-2, f"decoding     {result.decoding_note}")
    if result.scheduler_cap_note:
        lines.insert(-2, f"running      {result.scheduler_cap_note}")
    if stores_another_cache(result.kv_cache_dtype, budget_kv_cache_dtype):
        lines.insert(-2, f"  note: {result.engine} stores the KV cache as {result.kv_cache_dtype} where the budget "
                         f"above prices {budget_kv_cache_dtype}, so its tokens differ")
    if caveat := close_call(result):
        lines.append(f"  close call: {caveat}")
    lines += [f"  reason: {r}" for r in result.reasons]
    lines += [f"  warning: {w}" for w in result.warnings]
    if backend_note := fp8_kv_note_of(result.notes):  # the command's VLLM_ATTENTION_BACKEND, or why it has none
        lines.append(f"  note: {backend_note}")
    lines += [f"launch       {command}" for command in node_commands(result.launch_command)]  # SGLang: each node's
    if result.serving is not None:
        lines += engine_serving_lines(result, shown_notes)
    return lines


def engine_serving_lines(result: EnginePlan, shown_notes: tuple[str, ...] = ()) -> list[str]:
    """Lines for the engine plan's serving features: each part on the limiting GPU, then the notes not in
    ``shown_notes`` (printed once, by the serving block)."""
    parts = [f"{label} {size / GiB:,.2f} GiB ({term if term != 'outside' else 'beside the pool'})"
             for label, term, size in result.limiting_rank.serving_parts if size]
    lines = [f"engine serv  {result.engine}: " + ("; ".join(parts) if parts else "no memory priced") + " per GPU"]
    lora = result.serving.get("lora")
    if lora:
        lines.append(f"engine LoRA  {lora['bytes_per_adapter_slot'] / GiB:,.3f} GiB per adapter slot; "
                     f"{lora['max_loras_that_fit']:,} slots fit beside one {result.max_model_len:,}-token request")
    lines += [f"  engine note: {n}" for n in result.serving["notes"] if n not in shown_notes]
    return lines
