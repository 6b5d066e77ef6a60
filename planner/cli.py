"""Command line: ``python -m planner models|gpus|plan``.

The flags and JSON keys are a public contract (scripts and design docs use
them); the URL query keys of the app are the same names with underscores.
Catalog lookups are imported lazily: the planner's computation modules stay
free of pydantic and transformers, only this edge reads the catalog.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from planner import cli_traffic
from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, Plan, PlanRequest, plan
from planner.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.units import GiB


class _OneLineParser(argparse.ArgumentParser):
    """argparse that reports bad arguments as one line on stderr, exit code 2."""

    def error(self, message: str) -> None:  # noqa: D102 - argparse hook
        self.exit(2, f"error: {message} (see `python -m planner {self.prog.split()[-1]} --help`)\n")


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0 or value != value:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m planner`` argument parser."""
    parser = _OneLineParser(prog="planner", description="GPU memory planner for LLM inference.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_OneLineParser)
    for name, help_text in (("models", "list catalog model ids"), ("gpus", "list catalog GPU ids")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("plan", help="weights + KV-cache budget for one model on one GPU type")
    p.add_argument("--model", required=True, help="Hugging Face repo id, e.g. meta-llama/Meta-Llama-3-8B")
    p.add_argument("--gpu", required=True, help="GPU id, e.g. nvidia-h100-sxm-80gb (see `gpus`)")
    p.add_argument("--num-gpus", type=_positive_int, default=1, help="GPUs per replica (tensor parallel)")
    p.add_argument("--weight-dtype", choices=tuple(WEIGHT_DTYPES), default="bf16")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPE_CHOICES, default="auto")
    p.add_argument("--context-len", type=_positive_int, default=8192, help="tokens per sequence (prompt + output)")
    p.add_argument("--batch-size", type=_positive_int, default=1, help="concurrent sequences")
    p.add_argument("--gpu-memory-utilization", type=_fraction, default=DEFAULT_GPU_MEMORY_UTILIZATION)
    p.add_argument("--block-size", type=_positive_int, default=DEFAULT_BLOCK_SIZE, help="KV page size in tokens")
    p.add_argument("--overhead-gib", type=_non_negative_float, default=None,
                   help="per-GPU activation + runtime overhead in GiB (default: estimate)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    cli_traffic.add_parsers(sub)
    return parser


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
    """Resolve catalog ids and run :func:`planner.budget.plan` for parsed args.

    Raises:
        ValueError: unknown model or GPU id, or invalid values.
    """
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu

    model = model_spec(args.model)
    gpu = get_gpu(args.gpu)
    overhead = None if args.overhead_gib is None else int(args.overhead_gib * GiB)
    request = PlanRequest(
        context_len=args.context_len, batch_size=args.batch_size, weight_dtype=args.weight_dtype,
        kv_cache_dtype=args.kv_cache_dtype, num_gpus=args.num_gpus,
        gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
        overhead_bytes=overhead,
    )
    return plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)


def _plan_table(result: Plan) -> str:
    def g(n: int) -> str:
        return f"{n / GiB:,.2f} GiB"

    lines = [
        f"model        {result.model_id} ({result.params:,} params)",
        f"gpu          {result.gpu_id} x {result.num_gpus}: {g(result.gpu_memory_bytes)} framework-visible each",
        f"weights      {g(result.weights_bytes_per_gpu)} per GPU ({result.weight_dtype})",
        f"overhead     {g(result.overhead_bytes)} per GPU",
        f"KV budget    {g(result.kv_cache_budget_bytes)} per GPU ({result.kv_cache_dtype})",
        f"KV/token     {result.kv_cache_bytes_per_token:,} B",
        f"KV/sequence  {result.kv_cache_bytes_per_sequence:,} B at {result.context_len:,} tokens",
        f"capacity     {result.kv_cache_capacity_tokens:,} tokens",
        f"max users    {result.max_concurrent_sequences:,} at {result.context_len:,} tokens",
        f"max context  {result.max_context_len:,} tokens at batch {result.batch_size} (limited by {result.max_context_len_limited_by})",
        f"fits         {'yes' if result.fits else 'no'}",
    ]
    lines += [f"  reason: {r}" for r in result.reasons]
    lines += [f"  try: {s}" for s in result.suggestions]
    lines += [f"  note: {n}" for n in result.notes]
    return "\n".join(lines)


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


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (0 ok, 2 bad arguments or unknown ids)."""
    args = build_parser().parse_args(argv)
    try:
        handled = cli_traffic.run(args)
        if handled is not None:
            return handled
        if args.command == "models":
            rows = _models_rows()
        elif args.command == "gpus":
            rows = _gpus_rows()
        else:
            result = run_plan(args)
            print(json.dumps(result.to_dict(), indent=2) if args.format == "json" else _plan_table(result))
            return 0
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(rows, indent=2) if args.format == "json" else _table(rows))
    return 0
