"""Data / expert / context parallel flags of ``plan``, and the ``disagg`` and ``deploy`` subcommands.

Flags, under each engine's own name (URL keys: the same names with underscores):

* vLLM: ``--data-parallel-size`` / ``-dp``, ``--data-parallel-size-local``, ``--enable-expert-parallel``,
  ``--enable-eplb``, ``--num-redundant-experts``, ``--decode-context-parallel-size`` / ``-dcp``;
* SGLang: ``--dp-size``, ``--enable-dp-attention``, ``--ep-size``, ``--ep-num-redundant-experts``;
* both: ``--gpus-per-node`` (default 8).

With any of them ``plan`` plans one attention data-parallel rank with the engine
(:func:`planner.scale.plan_scale`): the engine keys describe that rank (``max_concurrency`` per rank,
as the engine prints it; the launch command of the whole launch), the engine-free keys price one
rank too (experts scaled to the GPU's share), and a ``scale`` block adds the layout, the weights
split, all ranks' users and the decode-context-parallel figures.

``disagg`` sizes a prefill and a decode pool (:func:`planner.scale.plan_disagg`); ``deploy`` prints
llm-d model-service values (``--target llm-d``) or each role's launch commands (``--target commands``)
for a ``plan``-like launch, or for the two pools when ``--users`` is given.

This module is a CLI edge: it reads the catalog lazily (inside functions).
"""

from __future__ import annotations

import argparse
import json

from planner import rank_budget
from planner.cli import engine as cli_engine
from planner.cli import serving as cli_serving
from planner.cli.args import (
    add_gpu_arguments,
    catalog_id,
    fraction,
    non_negative_int,
    positive_float,
    positive_int,
    resolve_gpu,
    token_count,
)
from planner.engines.profiles import engine_profile
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.scale import (
    DEFAULT_LINK,
    LINKS,
    PoolRequest,
    ScalePlan,
    ScaleRequest,
    plan_disagg,
    plan_scale,
)
from planner.scale.links import TRANSFER_MS_DIGITS
from planner.scale.deploy import disagg_roles, role_commands, roles_yaml, start_refusal
from planner.text import count_noun
from planner.units import GiB

VLLM_FLAGS = ("data_parallel_size", "data_parallel_size_local", "enable_expert_parallel", "num_redundant_experts",
              "decode_context_parallel_size")
SGLANG_FLAGS = ("dp_size", "enable_dp_attention", "ep_size", "ep_num_redundant_experts")
SCALE_FLAGS = (*VLLM_FLAGS, *SGLANG_FLAGS, "enable_eplb")
"""Argument names whose presence turns the scale plan on."""

_OTHER_SPELLING = {"data_parallel_size": "--dp-size", "enable_expert_parallel": "--ep-size N",
                   "num_redundant_experts": "--ep-num-redundant-experts", "data_parallel_size_local": None,
                   "decode_context_parallel_size": None, "dp_size": "--data-parallel-size",
                   "enable_dp_attention": "--data-parallel-size", "ep_size": "--enable-expert-parallel",
                   "ep_num_redundant_experts": "--num-redundant-experts"}


def add_scale_arguments(p: argparse.ArgumentParser) -> None:
    """Register the data / expert / context parallel flags (all default to None = unset)."""
    g = p.add_argument_group("data / expert / context parallel (each engine's own flag names)")
    g.add_argument("--data-parallel-size", "-dp", type=positive_int, default=None,
                   help="vLLM: data-parallel ranks, each with its own KV cache and scheduler (GPUs = dp x tp)")
    g.add_argument("--data-parallel-size-local", type=positive_int, default=None,
                   help="vLLM: data-parallel ranks per node (default: as many as fit --gpus-per-node)")
    g.add_argument("--enable-expert-parallel", action="store_const", const=True, default=None,
                   help="vLLM: split the routed experts whole over the dp x tp GPUs")
    g.add_argument("--enable-eplb", action="store_const", const=True, default=None,
                   help="vLLM / SGLang: the expert-parallel load balancer (needed for redundant experts in vLLM)")
    g.add_argument("--num-redundant-experts", type=non_negative_int, default=None,
                   help="vLLM: extra expert copies per MoE layer (newer builds: --eplb-config)")
    g.add_argument("--dp-size", type=positive_int, default=None,
                   help="SGLang: data-parallel size (with --enable-dp-attention: attention ranks inside --tp)")
    g.add_argument("--enable-dp-attention", action="store_const", const=True, default=None,
                   help="SGLang: data-parallel attention inside the tensor-parallel group")
    g.add_argument("--ep-size", type=positive_int, default=None, help="SGLang: expert-parallel size (divides --tp)")
    g.add_argument("--ep-num-redundant-experts", type=non_negative_int, default=None,
                   help="SGLang: redundant experts per MoE layer")
    g.add_argument("--decode-context-parallel-size", "-dcp", type=positive_int, default=None,
                   help="vLLM: split each request's KV along tokens over this many tensor-parallel GPUs")
    g.add_argument("--gpus-per-node", type=positive_int, default=None, help="GPUs in one node (default 8)")


def scale_requested(args: argparse.Namespace) -> bool:
    """True when any data / expert / context parallel flag was given."""
    return any(getattr(args, name, None) is not None for name in SCALE_FLAGS)


def scale_request(args: argparse.Namespace, family: str) -> ScaleRequest:
    """The :class:`ScaleRequest` the flags describe under ``family``'s names.

    Raises:
        ValueError: another engine's flag, naming this engine's spelling.
    """
    if family not in ("vllm", "sglang"):
        raise ValueError("data / expert / context parallel are modelled for vLLM and SGLang; use --engine vllm or "
                         "--engine sglang")
    theirs, mine, other_name = ((SGLANG_FLAGS, "vLLM", "SGLang") if family == "vllm"
                                else (VLLM_FLAGS, "SGLang", "vLLM"))
    for name in theirs:
        if getattr(args, name, None) is not None:
            flag, other = "--" + name.replace("_", "-"), _OTHER_SPELLING[name]
            hint = f"; {mine} spells it {other}" if other else f"; {mine} has no such flag"
            raise ValueError(f"{flag} is a {other_name} flag{hint}")
    if family == "vllm":
        return ScaleRequest(data_parallel_size=args.data_parallel_size or 1,
                            data_parallel_size_local=args.data_parallel_size_local,
                            enable_expert_parallel=bool(args.enable_expert_parallel),
                            enable_eplb=bool(args.enable_eplb), num_redundant_experts=args.num_redundant_experts or 0,
                            decode_context_parallel_size=args.decode_context_parallel_size or 1,
                            gpus_per_node=args.gpus_per_node or 8)
    return ScaleRequest(data_parallel_size=args.dp_size or 1, enable_dp_attention=bool(args.enable_dp_attention),
                        expert_parallel_size=args.ep_size or 1, enable_eplb=bool(args.enable_eplb),
                        num_redundant_experts=args.ep_num_redundant_experts or 0,
                        gpus_per_node=args.gpus_per_node or 8)


def _family(request) -> str:
    return engine_profile(request.engine).family


def run_scale(args: argparse.Namespace, model, gpu) -> ScalePlan | None:
    """The scale plan of ``plan``'s flags, kept on ``args.scale_plan``; None without a scale flag.

    Raises:
        ValueError: invalid or inconsistent flags (one line).
    """
    args.scale_plan = None
    if not scale_requested(args):
        return None
    request = cli_engine.engine_request(args, gpu)
    args.scale_plan = plan_scale(model, gpu.framework_memory_bytes, request, scale_request(args, _family(request)))
    return args.scale_plan


def rank_plan(args: argparse.Namespace, model, gpu, request, scale: ScalePlan):
    """The engine-free plan of one attention data-parallel rank at its share of the batch
    (:func:`planner.rank_budget.rank_plan`, which Home's budget calls too). Keeps the one-line verdict on
    ``args.replicas_verdict`` and the JSON block on ``args.replicas_json`` ("" / None with one rank)."""
    budget = rank_budget.rank_plan(model, gpu.framework_memory_bytes, gpu.id, request, scale)
    args.replicas_verdict, args.replicas_json = budget.verdict, budget.data_parallel
    return budget.result


def scale_json(args: argparse.Namespace) -> dict:
    """``{"scale": ...}`` for ``plan`` JSON, with ``"data_parallel"`` (the batch over the ranks, :func:`rank_plan`)
    when there are several ranks, or ``{}`` without a scale flag (the JSON stays as it was)."""
    plan = getattr(args, "scale_plan", None)
    if plan is None:
        return {}
    replicas = getattr(args, "replicas_json", None)
    return {"scale": plan.to_dict()} | ({} if replicas is None else {"data_parallel": replicas})


def scale_table_lines(args: argparse.Namespace) -> list[str]:
    """Lines appended to the ``plan`` table under a scale plan."""
    plan = getattr(args, "scale_plan", None)
    if plan is None:
        return []
    layout, weights = plan.layout, plan.weights
    experts = ""
    if layout.global_experts:
        experts = (f"; experts EP {layout.expert_parallel_size} ({layout.local_experts} of {layout.global_experts} per "
                   f"layer per GPU" + (f", each split over {layout.expert_tp})" if layout.expert_tp > 1 else ")"))
    lines = [f"scale        {count_noun(layout.num_gpus, 'GPU')}: {count_noun(layout.attention_dp, 'rank')} x "
             f"attention TP {layout.attention_tp}"
             + experts,
             f"scale wts    {weights.total_bytes / GiB:,.2f} GiB per GPU"
             + (f" ({weights.routed_expert_bytes / GiB:,.2f} routed experts + {weights.dense_bytes / GiB:,.2f} dense)"
                if weights.routed_expert_bytes else ""),
             f"scale users  {plan.requests_per_rank:,} per rank (vLLM prints {plan.max_concurrency_per_rank:,.2f}x) x "
             f"{layout.attention_dp} = {count_noun(plan.requests_all_ranks, 'request')} of "
             f"{plan.engine.max_model_len:,} tokens"]
    if plan.context is not None:
        lines.append(f"scale dcp    {plan.context.decode_context_parallel_size}: "
                     f"{plan.context.engine_kv_cache_tokens:,} tokens printed per rank")
    lines += [f"  scale note: {n}" for n in plan.notes]
    return lines


# --- disagg and deploy --------------------------------------------------------------------------
def _add_plan_like_arguments(p: argparse.ArgumentParser) -> None:
    """The flags ``plan`` takes (model, GPU, dtypes, memory, engine, serving, scale)."""
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="Hugging Face repo id")
    source.add_argument("--config", metavar="PATH", help="a config.json file instead of --model")
    source.add_argument("--gguf", metavar="PATH", help="a local .gguf file (header only)")
    add_gpu_arguments(p, "GPU id (see `gpus`)")
    p.add_argument("--num-gpus", type=positive_int, default=None, help="GPUs per tensor-parallel group")
    p.add_argument("--weight-dtype", choices=tuple(WEIGHT_DTYPES), default="auto")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPE_CHOICES, default="auto")
    p.add_argument("--context-len", type=token_count, default=None, help="tokens per request (default 8192)")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=None)
    p.add_argument("--block-size", type=positive_int, default=None)
    cli_engine.add_engine_arguments(p)
    cli_serving.add_serving_arguments(p)
    add_scale_arguments(p)


def _add_disagg_arguments(p: argparse.ArgumentParser, *, required: bool) -> None:
    """``--users --prompt-len --output-len`` (required for ``disagg``), targets, link and per-pool sizes."""
    p.add_argument("--users", type=positive_int, required=required, default=None, help="concurrent users")
    p.add_argument("--prompt-len", type=token_count, required=required, default=None, help="prompt tokens")
    p.add_argument("--output-len", type=token_count, required=required, default=None, help="output tokens")
    p.add_argument("--ttft-ms", type=positive_float, default=None, help="time-to-first-token target [ms]")
    p.add_argument("--tpot-ms", type=positive_float, default=None, help="time-per-output-token target [ms]")
    p.add_argument("--link", choices=[x.id for x in LINKS], default=DEFAULT_LINK,
                   help=f"link between the pools (default {DEFAULT_LINK})")
    for role in ("prefill", "decode"):
        p.add_argument(f"--{role}-tensor-parallel-size", type=positive_int, default=None,
                       help=f"{role} pool's tensor-parallel size (default: --tensor-parallel-size; neither "
                            "given: the size at which the pool starts, meets its target and needs the fewest GPUs "
                            "for --users, ties to the smaller)")
        p.add_argument(f"--{role}-data-parallel-size", type=positive_int, default=None,
                       help=f"{role} pool's data-parallel size (default: the data-parallel flag)")


def add_parsers(sub) -> None:
    """Register ``disagg`` and ``deploy`` on the ``python -m planner`` subparsers."""
    p = sub.add_parser("disagg", help="size prefill and decode pools for N users (roofline estimate)")
    _add_plan_like_arguments(p)
    _add_disagg_arguments(p, required=True)
    p.add_argument("--format", choices=("table", "json"), default="json",
                   help="json (default since disagg was added; scripts read it) or table (plan, find and allocation "
                        "default to table)")
    p = sub.add_parser("deploy", help="llm-d model-service values or launch commands for a plan (or disagg)")
    _add_plan_like_arguments(p)
    _add_disagg_arguments(p, required=False)
    p.add_argument("--target", choices=("llm-d", "commands"), required=True)
    p.add_argument("--replicas", type=positive_int, default=1, help="replicas of a plan-like (not disagg) deployment")


def _model(args: argparse.Namespace):
    """The served model of ``--model`` / ``--config`` / ``--gguf`` (as ``plan`` reads it)."""
    from planner.cli.entry import _model_from_args

    return cli_serving.served_model(args, _model_from_args(args))


def _pool(args: argparse.Namespace, gpu, role: str) -> PoolRequest:
    """One pool's request: the shared flags, with ``--{role}-tensor-parallel-size`` / ``-data-parallel-size``."""
    from dataclasses import replace

    request = cli_engine.engine_request(args, gpu)
    family = _family(request)
    scale = scale_request(args, family)
    tp = getattr(args, f"{role}_tensor_parallel_size")
    dp = getattr(args, f"{role}_data_parallel_size")
    if tp is not None:
        request = replace(request, tensor_parallel_size=tp)
    if dp is not None:
        scale = replace(scale, data_parallel_size=dp)
    if role == "prefill" and scale.decode_context_parallel_size > 1:
        scale = replace(scale, decode_context_parallel_size=1)  # DCP is a decode-side split
    auto = tp is None and args.tensor_parallel_size is None and args.num_gpus is None  # the fewest GPUs
    return PoolRequest(engine=request, scale=scale, auto_tensor_parallel=auto)


def _disagg(args: argparse.Namespace, model, gpu):
    """:func:`planner.scale.plan_disagg` for the parsed flags.

    Raises:
        ValueError: ``--max-model-len`` / ``--context-len`` given: each pool launches with ``--max-model-len``
            prompt + output, so the flag would be dropped without a word (QA, stop 43; the page names it on its
            "Left out" line)."""
    given = [flag for flag, value in (("--max-model-len", getattr(args, "max_model_len", None)),
                                      ("--context-len", getattr(args, "context_len", None))) if value]
    if given:
        raise ValueError(f"{' / '.join(given)} does not apply here: each pool launches with --max-model-len = "
                         f"--prompt-len + --output-len ({args.prompt_len + args.output_len:,} tokens); drop it")
    return plan_disagg(model, gpu_memory_bytes=gpu.framework_memory_bytes, bandwidth_gb_s=gpu.bandwidth_gb_s or 0,
                       bf16_dense_tflops=getattr(gpu, "bf16_dense_tflops", None),
                       prefill=_pool(args, gpu, "prefill"), decode=_pool(args, gpu, "decode"), users=args.users,
                       prompt_len=args.prompt_len, output_len=args.output_len, ttft_ms=args.ttft_ms,
                       tpot_ms=args.tpot_ms, link_id=args.link)


def _disagg_table(result) -> str:
    """A short table of both pools."""
    lines = [f"model        {result.model_id}: {count_noun(result.users, 'user')}, {result.prompt_len:,} + "
             f"{result.output_len:,} "
             "tokens (roofline upper bound)"]
    for name, pool in (("prefill", result.prefill), ("decode", result.decode)):
        d = pool.to_dict()
        if not pool.plan.starts:  # no sizes for a launch that would not start: its reason is below, once
            lines.append(f"{name:<12} would not start at tp {d['tensor_parallel_size']}, dp {d['data_parallel_size']} "
                         f"({count_noun(d['gpus_per_replica'], 'GPU')} per replica)")
            continue
        step = d.get("prefill_ms_per_request", d.get("time_per_output_token_ms"))
        lines.append(f"{name:<12} {count_noun(d['gpus'], 'GPU')} = {d['replicas']:,} x {d['gpus_per_replica']} (tp "
                     f"{d['tensor_parallel_size']}, dp {d['data_parallel_size']}); "
                     f"{count_noun(d['max_concurrency'], 'request')} per replica; {step:,.2f} ms "
                     f"{'per prompt' if name == 'prefill' else 'per output token'}")
    if all(pool.plan.starts for pool in (result.prefill, result.decode)):  # DisaggPlan.starts
        lines.append(f"transfer     {result.kv_transfer_bytes_per_request:,} B per request; "
                     f"{result.kv_transfer_ms[result.link]:,.{TRANSFER_MS_DIGITS}f} ms over {result.link}; "
                     f"TTFT {result.ttft_ms:,.1f} ms")
    else:  # as the page: no transfer or TTFT between pools that would not start
        lines.append("transfer     n/a (a pool would not start; the reason is below)")
    lines += [f"  reason: {r}" for r in result.reasons]
    lines += [f"  note: {n}" for n in result.pool_notes]  # the sizes chosen
    return "\n".join(lines)


def _deploy(args: argparse.Namespace, model, gpu) -> str:
    """``deploy``'s text: values YAML or commands."""
    if args.users is not None:
        roles = disagg_roles(_disagg(args, model, gpu))
    else:
        if args.prompt_len is not None or args.output_len is not None:
            raise ValueError("--prompt-len / --output-len size the two pools: give --users too (or drop them)")
        roles = {"decode": (plan_scale(model, gpu.framework_memory_bytes, cli_engine.engine_request(args, gpu),
                                       scale_request(args, _family(cli_engine.engine_request(args, gpu)))),
                            args.replicas)}
    if refusal := start_refusal(roles):  # nothing to deploy: the fix is in the reason (or --tensor-parallel-size)
        raise ValueError(f"no deployment: {refusal}; raise --tensor-parallel-size (see `disagg`'s "
                         "tensor_parallel_fixes) or change the flags")
    if args.target == "commands":
        return "\n".join(role_commands(roles))
    return roles_yaml(model, roles, gpu_name=gpu.name, gpus_per_node=args.gpus_per_node or 8)


def run(args: argparse.Namespace) -> str | None:
    """The text of ``disagg`` or ``deploy``, or None for another command.

    Raises:
        ValueError: unknown ids or invalid values, a vLLM-only flag under another engine (exit code 2).
    """
    if args.command not in ("disagg", "deploy"):
        return None
    cli_engine.budget_knobs(args)  # a vLLM-only flag under another --engine is refused, as `plan` refuses it
    model = _model(args)
    gpu = resolve_gpu(args)
    if args.command == "deploy":
        return _deploy(args, model, gpu)
    result = _disagg(args, model, gpu)
    if args.format == "json":
        out = {"model_id": result.model_id, "catalog_id": catalog_id(args), "gpu_id": gpu.id}
        return json.dumps(out | result.to_dict(), indent=2)
    return _disagg_table(result)
