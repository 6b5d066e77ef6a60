"""Command line: ``python -m planner models|gpus|plan|verify`` (and the traffic commands).

The flags and JSON keys are a public contract (scripts and design docs use
them); the URL query keys of the app are the same names with underscores.
Catalog lookups are imported lazily: the planner's computation modules stay
free of pydantic and transformers, only this edge reads the catalog.

A reader that closes stdout early (``python -m planner models | head``) ends a
command quietly with exit code 0: the rest of the output goes to ``os.devnull``
(the recipe of the Python docs, ``signal`` module, "Note on SIGPIPE").
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
from dataclasses import replace
from typing import Sequence

from planner.budget import (
    DEFAULT_BLOCK_SIZE,
    DEFAULT_GPU_MEMORY_UTILIZATION,
    Plan,
    PlanRequest,
    plan,
    profile_pass_tokens,
)
from planner.cli import engine as cli_engine
from planner.cli import scale as cli_scale
from planner.cli import serving as cli_serving
from planner.cli import traffic as cli_traffic
from planner.cli.args import (
    add_gpu_arguments,
    catalog_id,
    fraction,
    gib_amount,
    human_bytes,
    kv_token_text,
    positive_int,
    resolve_gpu,
    token_count,
    with_catalog_id,
)
from planner.engines import EnginePlan
from planner.engines.block_sizes import vllm_block_size_problem
from planner.engines.budget_gap import budget_gap_text, engine_starts_text
from planner.engines.launch import node_commands
from planner.engines.replica_layout import (
    NodeAdvice,
    node_advice,
    pipeline_stages_text,
    refused_on_one_node,
    starts_text,
)
from planner.fixes import no_single_fix_text, try_texts
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.pipeline import plan_pipeline
from planner.pool_kv import exact_cache_label
from planner.scale.layout import DEFAULT_GPUS_PER_NODE
from planner.units import GiB

DEFAULT_CONTEXT_LEN = 8192
"""``--context-len`` when neither it nor ``--max-model-len`` is given [tokens]."""


SHORTHANDS = {"--json": "--format json", "--table": "--format table"}
"""Output flags other tools spell this way: a usage error names ``--format``, which every command that prints a
table or JSON takes (``models``, ``gpus``, ``plan``, ``allocation``, ``find``, ``disagg``)."""


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one line on stderr, exit code 2."""

    def error(self, message: str) -> None:  # noqa: D102 - argparse hook
        command = "" if self.prog == "planner" else f" {self.prog.split()[-1]}"
        self.exit(2, f"error: {message} (see `python -m planner{command} --help`)\n")

    def parse_args(self, args=None, namespace=None):  # noqa: D102 - argparse hook
        # argparse reports a subcommand's unknown flag from the top parser ("see `planner --help`"); the
        # subcommand's own parser names it, with the closest flag it has.
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            commands = next((a.choices for a in self._actions if isinstance(a, argparse._SubParsersAction)), {})
            parser = commands.get(getattr(parsed, "command", None), self)
            flags = [o for action in parser._actions for o in action.option_strings]
            close = difflib.get_close_matches(extras[0].split("=")[0], flags, n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            if extras[0] in SHORTHANDS and "--format" in flags:  # QA: `disagg --json`; every command takes --format
                hint = f"; did you mean {SHORTHANDS[extras[0]]}?"
            parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m planner`` argument parser."""
    parser = _OneLineParser(prog="planner", description="GPU memory planner for LLM inference.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for name, help_text in (("models", "list catalog model ids"), ("gpus", "list catalog GPU ids")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("plan", help="weights + KV-cache budget for one model on one GPU type")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--model", help="Hugging Face repo id, e.g. meta-llama/Meta-Llama-3-8B")
    source.add_argument("--config", metavar="PATH", help="a config.json file instead of --model (same JSON)")
    source.add_argument("--gguf", metavar="PATH", help="a local .gguf file (header only): exact weight bytes")
    add_gpu_arguments(p, "GPU id, e.g. nvidia-h100-sxm-80gb (see `gpus`)")
    p.add_argument("--num-gpus", type=positive_int, default=None,
                   help="GPUs per replica (tensor parallel; default 1, or tp x pp when those are given)")
    p.add_argument("--weight-dtype", choices=tuple(WEIGHT_DTYPES), default="auto",
                   help="auto (default): as the checkpoint ships, per its quantization_config")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPE_CHOICES, default="auto")
    p.add_argument("--context-len", type=token_count, default=None,
                   help="tokens per sequence (prompt + output); default --max-model-len if given, else 8192")
    p.add_argument("--batch-size", type=positive_int, default=1, help="concurrent sequences")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=None,
                   help=f"memory fraction (default {DEFAULT_GPU_MEMORY_UTILIZATION}; with --engine, the engine's)")
    p.add_argument("--block-size", type=positive_int, default=None,
                   help=f"KV page size in tokens (default {DEFAULT_BLOCK_SIZE}; with --engine, the engine's)")
    p.add_argument("--overhead-gib", type=gib_amount, default=None,
                   help="per-GPU activation + runtime overhead in GiB (default: estimate)")
    cli_engine.add_engine_arguments(p)
    cli_serving.add_serving_arguments(p)  # serving features (planner/cli/serving.py)
    cli_scale.add_scale_arguments(p)  # data / expert / context parallel (planner/cli/scale.py)
    p.add_argument("--format", choices=("table", "json"), default="table")
    cli_traffic.add_parsers(sub)
    cli_scale.add_parsers(sub)  # disagg, deploy
    p = sub.add_parser("verify", help="prove parameter counts and KV-cache bytes against transformers (needs torch)")
    p.add_argument("--model", action="append", dest="models", metavar="ID",
                   help="verify only this model (repeatable); the table is then not written unless --output is given")
    p.add_argument("--output", metavar="PATH", default=None,
                   help="table to write or --check against (default model_catalog/verification.json)")
    p.add_argument("--check", action="store_true",
                   help="compare a fresh run with the committed table instead of writing it (exit 1 if stale)")
    p.add_argument("--jobs", type=positive_int, default=None,
                   help="worker processes of one torch thread each (default: one per core, at most 2)")
    return parser


def _run_verify(args: argparse.Namespace) -> int:
    """``python -m planner verify``: lazily imports the torch-backed verifier."""
    from pathlib import Path

    from model_catalog.model_registry import resolve_model_id
    from model_catalog.verify import DEFAULT_TABLE_PATH, run_verify

    try:  # an unknown id is a usage error like plan's, named before torch is loaded
        models = [resolve_model_id(m) for m in args.models] if args.models else args.models
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    output = Path(args.output) if args.output else (None if args.models and not args.check else DEFAULT_TABLE_PATH)
    return run_verify(models, output=output, check=args.check, jobs=args.jobs)


def _models_rows() -> list[dict]:
    from model_catalog import model_ids, model_spec

    rows = []
    for model_id in model_ids():
        spec = model_spec(model_id)
        rows.append({"model_id": model_id, "display_name": spec.display_name, "params": spec.num_parameters,
                     "attention": spec.attention_kind, "layers": spec.num_layers})
    return rows


def _gpus_rows() -> list[dict]:
    from model_catalog.gpus import load_gpus

    return [{"gpu_id": g.id, "name": g.name, "framework_memory_bytes": g.framework_memory_bytes,
             "memory_gb_marketed": g.memory_gb_marketed} for g in load_gpus().values()]


def run_plan(args: argparse.Namespace) -> Plan:
    """Resolve catalog ids (or the ``--gpu-memory-gib`` custom GPU) and run :func:`planner.budget.plan`.

    Raises:
        ValueError: unknown model or GPU id, or invalid values.
    """
    return _run_plans(args)[0]


def _context_len(args: argparse.Namespace) -> int:
    """``--context-len``, else ``--max-model-len`` (one request of the engine's limit), else 8192."""
    return args.context_len or getattr(args, "max_model_len", None) or DEFAULT_CONTEXT_LEN


def _run_plans(args: argparse.Namespace):
    """``(v1 plan, engine plan or None, GPU)``; the engine plan only when an engine flag is given.

    The GPU is the catalog's ``--gpu`` or the app's custom GPU for ``--gpu-memory-gib`` (id ``custom``,
    as the app's pages plan it).
    """
    if args.block_size is not None and getattr(args, "engine", None) is None:  # an --engine checks its own rule
        if problem := vllm_block_size_problem(args.block_size):  # the budget prices the newest vLLM's blocks
            raise ValueError(f"{problem}; the budget prices the newest vLLM (pick another --engine for its rule)")
    full_model = _model_from_args(args)
    model = cli_serving.served_model(args, full_model)  # text only: no towers (planner/cli/serving.py)
    gpu = resolve_gpu(args)
    _, tp, pp = cli_engine.parallel_layout(args)
    num_gpus = tp * pp  # every GPU of the replica; the budget plans each pipeline stage on its tp GPUs
    overhead = None if args.overhead_gib is None else int(args.overhead_gib * GiB)
    extra = {} if args.max_num_batched_tokens is None else {"max_num_batched_tokens": args.max_num_batched_tokens}
    request = PlanRequest(
        context_len=_context_len(args), batch_size=args.batch_size, weight_dtype=args.weight_dtype,
        kv_cache_dtype=args.kv_cache_dtype, num_gpus=num_gpus,
        gpu_memory_utilization=args.gpu_memory_utilization or DEFAULT_GPU_MEMORY_UTILIZATION,
        block_size=args.block_size or DEFAULT_BLOCK_SIZE, overhead_bytes=overhead, **extra,
        serving=cli_serving.budget_serving_from_args(args), **cli_engine.budget_knobs(args),
    )
    if getattr(args, "engine", None):  # a vLLM version's own overhead (PlanRequest.for_engine), as its section plans
        request = request.for_engine(args.engine)[0]
    scale = cli_scale.run_scale(args, model, gpu)  # None without a data / expert / context parallel flag
    args.replicas_verdict = ""  # the batch over data-parallel ranks, in one line (cli_scale.rank_plan)
    if scale is None:  # the stages' budget, each stage on its tensor-parallel GPUs (planner/pipeline.py)
        result = plan_pipeline(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id, pipeline_parallel_size=pp)
    else:
        result = cli_scale.rank_plan(args, model, gpu, replace(request, num_gpus=tp), scale)  # its share of the batch
    if scale is not None:  # one rank as its engine plans it, with the launch's figures (planner/cli/scale.py)
        engine = scale.engine_view()
    else:
        engine = cli_engine.run_engine(args, model, gpu) if cli_engine.engine_requested(args) else None
    if pp > 1 and engine is not None and engine.starts and int(engine.requests_held) >= args.batch_size:
        result = replace(result, suggestions=())  # the stages start and hold the batch: no fix is needed
    args.node_advice = None if scale is not None or engine is None else node_advice(
        model, gpu.framework_memory_bytes, cli_engine.engine_request(args, gpu),
        args.gpus_per_node or DEFAULT_GPUS_PER_NODE)  # a one-node launch wider than a node
    if engine is not None:  # that launch does not start on one node: its verdict, not a "yes" above the warning
        engine = refused_on_one_node(engine, args.node_advice)
    args.model_keys = cli_serving.model_keys(args, full_model, num_gpus)  # multimodal / params_source JSON keys
    args.budget_batched_tokens = profile_pass_tokens(request, gpu.framework_memory_bytes, gpu.id)  # budget_gap
    args.checked_fixes = None if scale is not None else _checked_fixes(args, model, gpu, request, result)
    return result, engine, gpu


def _checked_fixes(args: argparse.Namespace, model, gpu, request: PlanRequest, result: Plan):
    """Home's fixes for this plan (:func:`planner.fixes.checked_fixes`): each re-planned and checked against the
    engine, ``--engine`` or Home's default (the newest vLLM), with the engine's own defaults for every flag not
    given, as Home's engine view asks it; no engine check when the engine cannot plan these inputs (Home's
    message case). [] for a plan that fits. (Pipeline and data-parallel plans, which Home does not make, keep
    the budget's own suggestions.)"""
    if result.fits:
        return []
    from planner.engines import plan_engine
    from planner.fixes import checked_fixes

    try:
        engine_request = cli_engine.engine_request(args, gpu)
        plan_engine(model, gpu.framework_memory_bytes, engine_request)
    except ValueError:
        engine_request = None
    return checked_fixes(model, gpu.framework_memory_bytes, request, result, engine_request, gpu_id=gpu.id)


def _model_from_args(args: argparse.Namespace):
    """The model for ``plan``: a catalog id, a config.json file (``--config``) or a GGUF header (``--gguf``).

    A catalog alias keeps its own id (``meta-llama/Llama-3.1-8B-Instruct``, in the catalog's spelling)
    as ``model_id``, so the JSON and the launch command serve that repo; :func:`catalog_id` names the
    entry whose numbers it has.

    Notes on how a custom file was read go to stderr; JSON on stdout stays clean.

    Raises:
        ValueError: one line naming the file and the bad key.
    """
    if getattr(args, "config", None) is None and getattr(args, "gguf", None) is None:
        from model_catalog import served_model_spec

        return served_model_spec(args.model)  # the entry's numbers under the user's id (an alias stays)
    try:
        if args.config is not None:
            from model_catalog.custom import load_config_file

            custom = load_config_file(args.config)
        else:
            from pathlib import Path

            from model_catalog.custom import check_regular_file
            from model_catalog.gguf_reader import read_gguf

            check_regular_file(Path(args.gguf), "a .gguf file")
            custom = read_gguf(args.gguf).model
    except ValueError as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    for note in custom.notes:
        print(f"note: {note}", file=sys.stderr)
    return custom.spec




def _plan_table(result: Plan, gpu_name: str | None = None, catalog: str | None = None, fixes=None,
                engine: EnginePlan | None = None, replicas: str = "") -> str:
    """``plan``'s table; ``fixes``: :func:`_checked_fixes` (None: the plan's own suggestions, unchecked);
    ``engine``: the engine section printed below it, whose token count the capacity line compares; ``replicas``:
    the batch over data-parallel ranks (:func:`planner.cli.scale.rank_plan`), after the verdict."""
    def g(n: int) -> str:
        return f"{n / GiB:,.2f} GiB"

    gpu_label = result.gpu_id if gpu_name is None else f"{result.gpu_id} ({gpu_name})"
    lines = [
        f"model        {result.model_id} ({result.params:,} params"
        + (f"; catalog entry {catalog})" if catalog not in (None, result.model_id) else ")"),
        f"gpu          {gpu_label} x {result.num_gpus}: {g(result.gpu_memory_bytes)} framework-visible each",
        f"weights      {g(result.weights_bytes_per_gpu)} per GPU ({result.weights_label})",
        f"overhead     {g(result.overhead_bytes)} per GPU",
        f"KV budget    {g(result.kv_cache_budget_bytes)} per GPU ({result.kv_cache_dtype})"
        if result.kv_cache_budget_bytes > 0 else
        f"KV budget    none: weights + overhead exceed the usable {g(result.usable_memory_bytes)} by "
        f"{g(-result.kv_cache_budget_bytes)} per GPU",
        f"KV/token     {kv_token_text(vars(result))}",
        f"KV/sequence  {human_bytes(result.kv_cache_bytes_per_sequence)}{_exact_cache(result)} at "
        f"{result.context_len:,} tokens" + _paged_sequence(result),
        _capacity_line(result, engine),
        f"max users    {result.max_concurrent_sequences:,} at {result.context_len:,} tokens" + (
            f" (n/a: past the model's {result.max_position_embeddings:,}-token limit)"
            if result.max_position_embeddings and result.context_len > result.max_position_embeddings else
            f" (limited by max_num_seqs {result.max_concurrent_sequences:,}; the KV cache holds "
            f"{result.max_concurrent_sequences_by_memory:,})"
            if result.max_concurrent_sequences < result.max_concurrent_sequences_by_memory else ""),
        f"max context  {result.max_context_len:,} tokens at batch {result.batch_size}"
        f"{' per replica' if replicas else ''} (limited by {result.max_context_len_limited_by})",
        f"fits         {'yes' if result.fits else 'no'}{_stages_clause(result, engine)}"
        + (f": {replicas}" if replicas else ""),
    ]
    lines += [f"  reason: {r}" for r in result.reasons]
    tried = try_texts(result, fixes)  # Home's "Try:" list, one rule (planner/fixes.py)
    lines += [f"  try: {s}" for s in tried]
    if result.suggestions and not tried:
        lines.append(f"  try: no single change fits. {no_single_fix_text(result)}")
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


def _stages_clause(result: Plan, engine: EnginePlan | None) -> str:
    """`` for 2 pipeline stages of 8 GPUs (the budget plans each stage on its tensor-parallel GPUs); the engine
    section: vllm starts with 81.71x at 8,192 tokens (81 requests at once)``: where the engine section splits the
    layers into stages, the fits line says the budget plans the same stages (:mod:`planner.pipeline`) and gives the
    engine's verdict beside its own, so a "no" above a launch that starts, or the reverse (a replica wider than a
    node), names both. Without stages, a budget that fits beside a launch the engine refuses names the refusal the
    same way (QA, stop 47: DeepSeek-V3.2 with an fp8 cache on MI300X under vllm-v0.11 printed "fits yes" above
    "starts no"; the exit code stays 0, as for every plan that does not fit or start), with the check before the
    weights load where that is the stop (:attr:`planner.engines.types.EnginePlan.stopped_at_config_check`, which the
    budget does not make); "" otherwise."""
    stages = pipeline_stages_text(engine) if engine is not None else ""
    before_load = " (it stops at a check before it loads the weights, which the budget does not make)"
    if not stages:
        if engine is None or engine.starts or not result.fits:
            return ""
        return (f"; the engine section: {engine.engine} {starts_text(engine)}"
                + (before_load if engine.stopped_at_config_check else ""))
    count, _, verdict = stages.partition(": ")
    return (f" for {count} (the budget plans each stage on its tensor-parallel GPUs); the engine section: {verdict}"
            + (before_load if engine.stopped_at_config_check else ""))


def _node_lines(advice: NodeAdvice | None, given: int | None) -> list[str]:
    """The warning under the launch when one replica needs more GPUs than a node holds
    (:func:`planner.engines.replica_layout.node_advice`; ``given``: ``--gpus-per-node``)."""
    if advice is None:
        return []
    source = "--gpus-per-node" if given else f"--gpus-per-node, default {DEFAULT_GPUS_PER_NODE}"
    return [f"  warning: {advice.text(f'--num-nodes {advice.num_nodes}', source)}"]


def _node_json(advice: NodeAdvice | None, given: int | None) -> dict:
    """The ``multi_node`` key: the launch across nodes that runs (:func:`_node_lines`), {} when none is needed. SGLang
    runs one command per node (``launch_commands``, node 0's first and in ``launch_command``) and has no executor
    backend (None)."""
    if advice is None:
        return {}
    p = advice.plan
    sglang = {"launch_commands": node_commands(p.launch_command)} if p.family == "sglang" else {}
    return {"multi_node": {"num_nodes": advice.num_nodes, "gpus_per_node": advice.gpus_per_node,
                           "distributed_executor_backend": None if sglang else "ray",
                           "launch_command": p.launch_command, **sglang, "starts": p.starts, "max_concurrency": p.max_concurrency,
                           "warning": _node_lines(advice, given)[0].removeprefix("  warning: ")}}


def _capacity_line(result: Plan, engine: EnginePlan | None = None) -> str:
    """The tokens the pool holds as sequences of ``context_len`` decoding at once (``kv_cache_capacity_tokens_at_
    context``: users x length, each window holding only its own tokens), so the line agrees with "max users";
    where every layer keeping every token gives another figure (windows, recurrent states, compressed caches),
    that one is named as such (QA: DeepSeek-V4-Flash printed "capacity 254,720 tokens" beside 188 users of
    131,072). Where ``engine``'s section prints another token count (:func:`_engine_print_clause`), the line
    names it and says why they differ (QA: 24,649,193 above vLLM's "GPU KV cache size: 3,934,908 tokens")."""
    held = result.kv_cache_capacity_tokens_at_context
    line = f"capacity     {held:,} tokens as {result.context_len:,}-token sequences decoding at once (users x length)"
    flat = result.kv_cache_capacity_tokens
    if abs(flat - held) >= result.block_size:  # not the block rounding of a model whose layers keep every token
        line += (f"; {flat:,} at every layer's full per-token KV (windows, recurrent states and compressed "
                 "caches not applied)")
    return line + _engine_print_clause(result, engine)


def _engine_print_clause(result: Plan, engine: EnginePlan | None) -> str:
    """``"; the engine section's print, 3,934,908 tokens, counts each request at its prefill peak"``: the token
    count the engine section below prints where it differs from the capacity by a block or more, and why, in one
    clause; "" without an engine section or when they agree.

    Why (each that applies): vLLM V1's print divides its pool by each request's blocks at its prefill peak (its
    window plus a whole batched chunk in every windowed layer: :attr:`planner.engines.types.EnginePlan.
    decodes_more_than_printed`, planner/engines/pages.py design note 6); the engine's own KV memory ("engine KV"
    line) differs from the budget; neither: the engine counts its pool its own way
    (``planner.engines.pages.printed_tokens``: blocks, blocks per group, or another engine's tokens)."""
    if engine is None or not engine.starts:
        return ""
    printed = engine.engine_kv_cache_tokens
    if abs(printed - result.kv_cache_capacity_tokens_at_context) < result.block_size:
        return ""
    why = [text for differs, text in (
        (engine.available_kv_cache_bytes != result.kv_cache_budget_bytes, "comes from its own KV memory (engine KV)"),
        (engine.decodes_more_than_printed, "counts each request at its prefill peak")) if differs]
    return f"; the engine section's print, {printed:,} tokens, {' and '.join(why) or 'counts its pool its own way'}"


def _exact_cache(result: Plan) -> str:
    """`` in bf16`` where the exact KV figures are in another cache than the one the users are counted in
    (``Plan.kv_cache_exact_dtype``: DeepSeek-V4's bf16 beside its fp8_ds_mla pool); else empty."""
    named = exact_cache_label(result.kv_cache_exact_dtype, result.kv_cache_dtype)  # plain fp8: not stored
    return f" in {named}" if named else ""


def _paged_sequence(result) -> str:
    """`` (343.00 MiB per GPU in 784-token blocks, as users are counted)`` when whole blocks (a hybrid's raised
    block and padded states) make one GPU's sequence differ from its exact figure; else empty. The blocks are
    named by their cache where that is not the exact figure's (DeepSeek-V4's fp8_ds_mla pool blocks)."""
    paged = result.kv_cache_bytes_per_sequence_paged_per_gpu
    if paged == result.kv_cache_bytes_per_sequence_per_gpu:
        return ""
    pool = f" {result.kv_cache_dtype} pool" if result.kv_cache_pool_bytes_per_token is not None else ""
    return f" ({human_bytes(paged)} per GPU in {result.block_size:,}-token{pool} blocks, as users are counted)"


def _table(rows: list[dict]) -> str:
    if not rows:
        return ""
    keys = list(rows[0])
    widths = {k: max(len(k), *(len(f"{r[k]:,}" if isinstance(r[k], int) else str(r[k])) for r in rows)) for k in keys}

    def cell(v, k):
        text = f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else str(v)
        return text.ljust(widths[k])

    out = ["  ".join(k.ljust(widths[k]) for k in keys)]
    out += ["  ".join(cell(r[k], k) for k in keys) for r in rows]
    return "\n".join(out)


def _output(args: argparse.Namespace) -> str:
    """The text a command writes on stdout (everything but ``verify``).

    Raises:
        ValueError: unknown ids or invalid values (exit code 2).
    """
    text = cli_traffic.run(args)
    if text is None:
        text = cli_scale.run(args)  # disagg, deploy (planner/cli/scale.py)
    if text is not None:
        return text
    if args.command in ("models", "gpus"):
        rows = _models_rows() if args.command == "models" else _gpus_rows()
        return json.dumps(rows, indent=2) if args.format == "json" else _table(rows)
    result, engine, gpu = _run_plans(args)
    if args.format == "json":
        out = with_catalog_id(result.to_dict(), catalog_id(args))
        out |= {} if result.fits else {"fixes": _fixes_json(args.checked_fixes)}  # a fitting plan's JSON as before
        if engine and (said := engine_starts_text(engine, budget_fits=result.fits,
                                                  budget_context_len=result.context_len,
                                                  budget_model_limit=result.max_position_embeddings)):
            out["notes"] = [*out["notes"], said]  # the engine starts where the budget (a vLLM's) does not fit
        return json.dumps(out | args.model_keys | (cli_engine.engine_json(engine) if engine else {})
                          | cli_scale.scale_json(args) | _node_json(args.node_advice, args.gpus_per_node), indent=2)
    shown = tuple(result.serving["notes"]) if result.serving is not None else ()  # printed by the serving block
    extra_lines = cli_engine.engine_table_lines(engine, result.kv_cache_dtype, shown) if engine else []
    extra_lines += _node_lines(args.node_advice, args.gpus_per_node)
    if engine and (gap := budget_gap_text(engine, budget_users=result.max_concurrent_sequences_by_memory,
                                          budget_context_len=result.context_len,
                                          budget_batched_tokens=args.budget_batched_tokens,
                                          budget_kv_bytes=result.kv_cache_budget_bytes,
                                          budget_stages=result.pipeline_parallel_size)):
        extra_lines.append(f"  note: {gap}")
    if result.serving is not None:
        extra_lines += cli_serving.serving_table_lines(result.serving)
    extra_lines += cli_serving.model_table_lines(args.model_keys)
    extra_lines += cli_scale.scale_table_lines(args)
    custom_name = gpu.name if args.gpu_memory_gib is not None else None
    return "\n".join([_plan_table(result, custom_name, catalog_id(args), args.checked_fixes, engine,
                                  args.replicas_verdict), *extra_lines])


def _fixes_json(fixes) -> list[dict] | None:
    """The ``fixes`` JSON key of a plan that does not fit: the checked fixes the table's "try:" lines print, in
    their order (``key``, ``value``: the flag's name with underscores and its value; ``text``: the fix; ``help``:
    with what the engine does; ``starts``: the engine starts with it, null when it was not asked; ``also``: the other
    flags it sets, ``{"num_nodes": 4}`` where its GPUs need more nodes, else ``{}``); null when not checked."""
    if fixes is None:
        return None
    return [{"key": f.fix.key, "value": f.fix.value, "text": str(f.fix), "help": f.help, "starts": f.starts,
             "also": dict(f.also)} for f in fixes]


def _stdout_to_devnull() -> None:
    """Point stdout's file descriptor at ``os.devnull``, so the interpreter's last flush of what is still
    buffered cannot fail again (Python docs, ``signal``: "Note on SIGPIPE")."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation: stdout is not a file (captured)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _write(text: str | None = None) -> None:
    """Print ``text`` (if any) and flush stdout; a reader that has closed the pipe silences stdout instead."""
    try:
        if text is not None:
            print(text)
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 2 bad arguments or unknown ids).

    A closed stdout (``| head``) is not an error: the command stops writing and returns 0.
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit:  # --help or a usage error: flush the help now, quietly if the reader has gone
        _write()
        raise
    except BrokenPipeError:  # help text longer than stdout's buffer
        _stdout_to_devnull()
        return 0
    if args.command == "verify":
        return _run_verify(args)
    try:
        text = _output(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (ArithmeticError, RecursionError, MemoryError) as exc:  # a bound the readers missed: one line, no trace
        print(f"error: the input could not be planned ({type(exc).__name__}): a size or count in it is out of "
              "range; check the config's numbers (a zero, a huge or a negative value)", file=sys.stderr)
        return 2
    _write(text)
    return 0
