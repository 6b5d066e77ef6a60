"""Traffic subcommands of ``python -m planner``: ``allocation`` and ``find``.

``add_parsers`` registers them on the main parser; ``run`` handles them (it
returns the text for stdout) and returns None for commands it does not own.
Flags and JSON keys are a public contract, like ``plan``'s. This module is a CLI
edge: it reads the catalog (imported lazily inside functions, as
:mod:`planner.cli` does).

A GPU the catalog lacks: ``allocation --gpu-memory-gib 24`` instead of ``--gpu``;
``find --gpu-memory-gib 24`` searches it beside the catalog, skipped (and listed
as unpriced) unless ``--gpu-price-per-hour`` is given, like the app's custom GPU.

Examples::

    python -m planner allocation --model meta-llama/Meta-Llama-3-8B --gpu nvidia-h100-sxm-80gb \\
        --max-model-len 8192 --mean-len 800 --format json
    python -m planner find --model meta-llama/Llama-3.1-70B --users 200 --prompt-len 2000 \\
        --output-len 500 --max-gpus 8 --format json
    python -m planner find --model meta-llama/Meta-Llama-3-8B --users 20 --prompt-len 1000 \\
        --output-len 200 --gpu-memory-gib 22 --gpu-name "My card" --gpu-price-per-hour 0.3
    python -m planner find --model openai/gpt-oss-120b --users 100 --prompt-len 2000 --output-len 500 \\
        --engine sglang

``find`` sizes every setup as ``--engine`` does (default vLLM, as the app: its loaded weights, profile pass
and block rules; ``--engine budget`` = the budget arithmetic alone, as before the flag), with ``plan``'s engine
knob flags (``--max-num-seqs``, ``--enforce-eager``, ``--cudagraph-mode`` ...: the Find page's link keys), and
searches fp8 weights beside a 16-bit checkpoint for a hint (``--no-weight-hint`` skips it).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION, PlanRequest
from planner.cli.args import (
    add_gpu_arguments,
    catalog_id,
    check_custom_gpu_flags,
    custom_gpu_from_args,
    fraction,
    gib_amount,
    gpu_memory_gib,
    human_bytes,
    kv_token_text,
    non_negative_int,
    positive_float,
    positive_int,
    probability,
    resolve_gpu,
    share,
    with_catalog_id,
)
from planner.cli.engine import add_budget_knob_arguments, budget_knobs, engine_name
from planner.cli.serving import add_serving_arguments, serving_from_args
from planner.engines import DEFAULT_ENGINE, ENGINE_CHOICES
from planner.engines.block_sizes import vllm_block_size_problem
from planner.engines.profiles import ENGINE_PROFILES, resolve_engine_name
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, WEIGHT_DTYPES
from planner.pipeline import plan_pipeline
from planner.traffic.allocation import allocation_for_model
from planner.scale.links import DEFAULT_LINK, LINKS
from planner.traffic.find_advice import length_limit_error
from planner.traffic.find_engine import launch_media_tokens
from planner.traffic.find_types import (
    DEFAULT_FIND_KV_DTYPES,
    FIND_KNOB_FIELDS,
    FIND_KV_DTYPE_CHOICES,
    SETUP_KINDS,
    FindRequest,
    FindResult,
    kind_label,
    setup_kind,
)
from planner.traffic.lengths_csv import workload_from_csv
from planner.traffic.reverse import find_setups
from planner.traffic.workload import Fixed, LogNormal, Workload
from planner.units import GiB

COMMANDS = ("allocation", "find")

BUDGET_ONLY = "budget"
"""``find --engine budget``: size the setups by the budget arithmetic alone (no engine view)."""


def _find_engine(text: str) -> str:
    """A ``find --engine`` value: an engine (any case, or an alias) or :data:`BUDGET_ONLY`."""
    return BUDGET_ONLY if text.strip().lower() == BUDGET_ONLY else engine_name(text)


def _kv_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    bad = [n for n in names if n not in FIND_KV_DTYPE_CHOICES]
    if not names or bad:
        raise argparse.ArgumentTypeError(
            f"expected a comma-separated list of {', '.join(FIND_KV_DTYPE_CHOICES)} (what vLLM's --kv-cache-dtype "
            f"takes), got {text!r}")
    return names


def _kind_list(text: str) -> tuple[str, ...]:
    """A ``--setup-kinds`` value: a comma-separated list of kinds (:func:`planner.traffic.find_types.setup_kind`)."""
    try:
        kinds = tuple(dict.fromkeys(setup_kind(n) for n in text.split(",") if n.strip()))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    if not kinds:
        raise argparse.ArgumentTypeError(f"expected a comma-separated list of setup kinds, got {text!r}")
    return kinds


def _gpu_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    if not names:
        raise argparse.ArgumentTypeError(
            f"expected a GPU id or a comma-separated list of them (see `gpus`), got {text!r}")
    return names


def find_gpu_ids(args: argparse.Namespace, custom) -> tuple[str, ...]:
    """The canonical GPU ids of ``--gpu-types`` / ``--gpu`` (aliases resolved; ``custom`` = the ``--gpu-memory-gib``
    GPU); empty when neither flag is given (every GPU is searched).

    Raises:
        ValueError: an unknown id, with close matches.
    """
    from model_catalog.gpus import get_gpu

    ids = []
    for name in (n for group in (args.gpu_types or ()) for n in group):
        if custom is not None and name == custom.id:
            ids.append(name)
            continue
        try:
            ids.append(get_gpu(name).id)
        except ValueError as exc:
            raise ValueError(f"--gpu-types: {exc}") from None
    return tuple(dict.fromkeys(ids))


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Register ``allocation`` and ``find`` on ``sub``."""
    p = sub.add_parser("allocation", help="naive vs paged vs paged+prefix KV allocation for a workload")
    p.add_argument("--model", required=True, help="Hugging Face repo id (see `models`)")
    add_gpu_arguments(p, "GPU id (see `gpus`)")
    p.add_argument("--max-model-len", type=positive_int, default=8192, help="engine limit per sequence, tokens")
    p.add_argument("--mean-len", type=positive_int, required=True, help="average tokens a sequence holds")
    p.add_argument("--block-size", type=positive_int, default=DEFAULT_BLOCK_SIZE, help="KV page size in tokens")
    p.add_argument("--num-gpus", type=positive_int, default=None,
                   help="GPUs per replica (tensor parallel x pipeline stages; default 1 per stage)")
    p.add_argument("--pipeline-parallel-size", type=positive_int, default=None,
                   help="pipeline stages splitting --num-gpus, each planned on its tensor-parallel GPUs as `plan` "
                        "and the Allocation page plan a link's stages (default 1)")
    p.add_argument("--weight-dtype", choices=tuple(WEIGHT_DTYPES), default="auto")
    p.add_argument("--kv-cache-dtype", choices=KV_CACHE_DTYPE_CHOICES, default="auto")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=DEFAULT_GPU_MEMORY_UTILIZATION)
    p.add_argument("--overhead-gib", type=gib_amount, default=None,
                   help="per-GPU activation + runtime overhead in GiB (default: estimate)")
    add_budget_knob_arguments(p)  # the vLLM knobs the Allocation page takes from a link (ui/budget_knobs.py)
    p.add_argument("--num-sequences", type=positive_int, default=None,
                   help="batch compared (default: what naive allocation admits)")
    p.add_argument("--prefix-len", type=non_negative_int, default=0, help="shared prompt prefix, tokens")
    p.add_argument("--prefix-hit-fraction", type=share, default=1.0,
                   help="share of requests that start with the prefix, 0-1")
    p.add_argument("--format", choices=("table", "json"), default="table")

    p = sub.add_parser("find", help="cheapest GPU setups that hold N concurrent users")
    p.add_argument("--model", required=True, help="Hugging Face repo id (see `models`)")
    p.add_argument("--users", type=positive_int, required=True, help="concurrent users (sequences)")
    p.add_argument("--prompt-len", type=positive_int, default=None,
                   help="prompt tokens (the mean when --prompt-p95 is given); required without --lengths-csv")
    p.add_argument("--output-len", type=non_negative_int, default=None,
                   help="output tokens (the mean when --output-p95 is given); required without --lengths-csv")
    p.add_argument("--prompt-p95", type=positive_int, default=None,
                   help="95th percentile of prompt tokens: log-normal prompts")
    p.add_argument("--output-p95", type=positive_int, default=None,
                   help="95th percentile of output tokens: log-normal outputs")
    p.add_argument("--lengths-csv", type=Path, default=None,
                   help="CSV of lengths (prompt_len,output_len or total) instead of the length flags")
    p.add_argument("--max-model-len", type=positive_int, default=None,
                   help="engine limit; required with a distribution (default: prompt + output)")
    p.add_argument("--max-gpus", type=positive_int, default=8, help="most GPUs per setup")
    p.add_argument("--kv-cache-dtypes", type=_kv_list, default=DEFAULT_FIND_KV_DTYPES,
                   help="comma-separated KV dtypes to try (default auto,fp8)")
    p.add_argument("--weight-dtype", choices=tuple(WEIGHT_DTYPES), default="auto")
    p.add_argument("--max-tpot-ms", type=positive_float, default=None,
                   help="limit on time per output token, ms (roofline estimate)")
    p.add_argument("--gpu-memory-utilization", type=fraction, default=DEFAULT_GPU_MEMORY_UTILIZATION)
    p.add_argument("--block-size", type=positive_int, default=DEFAULT_BLOCK_SIZE)
    p.add_argument("--overhead-gib", type=gib_amount, default=None,
                   help="per-GPU activation + runtime overhead in GiB (default: estimate)")
    p.add_argument("--preemption-probability", type=probability, default=0.05,
                   help="accepted chance of running out of KV with a distribution")
    p.add_argument("--seed", type=int, default=0, help="Monte-Carlo seed")
    p.add_argument("--top", type=positive_int, default=10, help="setups listed")
    p.add_argument("--gpu-types", "--gpu", dest="gpu_types", type=_gpu_list, action="append", default=None, metavar="GPU",
                   help="search only these GPU types: catalog ids (see `gpus`), comma-separated or repeated; "
                        "`custom` = the --gpu-memory-gib GPU (default: every GPU)")
    p.add_argument("--gpu-memory-gib", type=gpu_memory_gib, default=None, metavar="GIB",
                   help="also search a GPU not in the catalog with this much framework-visible memory "
                        "(torch.cuda.mem_get_info()[1]); skipped as unpriced unless --gpu-price-per-hour is given")
    p.add_argument("--gpu-name", default=None, help="display name of the --gpu-memory-gib GPU (default 'Custom GPU')")
    p.add_argument("--gpu-price-per-hour", type=positive_float, default=None, metavar="USD",
                   help="on-demand price of one --gpu-memory-gib GPU, USD/h")
    p.add_argument("--gpu-bandwidth-gb-s", type=positive_float, default=None, metavar="GB_S",
                   help="memory bandwidth of the --gpu-memory-gib GPU, GB/s (the time-per-token roofline; "
                        "without it that GPU gets no time per token and --max-tpot-ms is refused)")
    p.add_argument("--engine", type=_find_engine, default=DEFAULT_ENGINE,
                   metavar="{" + ",".join((*ENGINE_CHOICES, BUDGET_ONLY)) + "}",
                   help=f"whose view sizes each setup: its loaded weights, profile pass and block rules (default "
                        f"{DEFAULT_ENGINE}, as the app; {BUDGET_ONLY} = the budget arithmetic alone)")
    p.add_argument("--setup-kinds", type=_kind_list, default=SETUP_KINDS, metavar="KINDS",
                   help="kinds of setup searched, comma-separated: tp, dp-ep (data + expert parallel), dcp (decode "
                        "context parallel), disaggregated (prefill / decode pools); default all (the last three "
                        "for MoE or MLA models under vllm or sglang)")
    p.add_argument("--link", choices=[x.id for x in LINKS], default=DEFAULT_LINK,
                   help=f"link between the prefill and decode pools of disaggregated setups (default {DEFAULT_LINK})")
    p.add_argument("--no-weight-hint", dest="weight_hint", action="store_false",
                   help="do not search fp8 weights beside a 16-bit checkpoint for a cheaper setup (the hint note)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    add_serving_arguments(p)  # serving features (planner/cli/serving.py)
    add_budget_knob_arguments(p)  # the engine knobs the Find page takes from a link (ui/budget_knobs.py find_knobs)


def find_knobs(args: argparse.Namespace) -> tuple[tuple[str, object], ...]:
    """:attr:`FindRequest.engine_knobs` of ``plan``'s knob flags (:func:`planner.cli.engine.budget_knobs`, which
    refuses a vLLM-only flag under another ``--engine``; ``--engine budget`` is the newest vLLM's arithmetic)."""
    engine = None if args.engine == BUDGET_ONLY else args.engine
    given = budget_knobs(argparse.Namespace(**{**vars(args), "engine": engine}))
    given["max_num_batched_tokens"] = args.max_num_batched_tokens
    return tuple((name, given[name]) for name in FIND_KNOB_FIELDS if given.get(name) is not None)


def run(args: argparse.Namespace) -> str | None:
    """Run ``allocation`` or ``find`` and return the text for stdout; None when ``args.command`` is not ours.

    With ``--format json`` the notes of ``find`` are not in the JSON list; the one about an unpriced
    ``--gpu-memory-gib`` GPU goes to stderr instead.

    Raises:
        ValueError: unknown ids or invalid values (the caller prints them, exit 2).
    """
    if args.command in ("allocation", "find"):
        _check_block_size(args)
    if args.command == "allocation":
        result = run_allocation(args)
        if args.format == "json":
            return json.dumps(with_catalog_id(result, catalog_id(args)), indent=2)
        return _allocation_table(result)
    if args.command == "find":
        found = run_find(args)
        if args.format == "table":
            return _find_table(found)
        for note in found.notes:
            if note.startswith(CUSTOM_UNPRICED_NOTE_START):
                print(f"note: {note}", file=sys.stderr)
        return json.dumps(found.rows(), indent=2)
    return None


def _check_block_size(args: argparse.Namespace) -> None:
    """Refuse a ``--block-size`` the vLLM that sizes the setups refuses (``--engine``'s version; the newest for
    ``allocation`` and ``--engine budget``), before any search, as ``plan`` refuses it (QA: ``find --block-size 24``
    exited 0 with "nothing fits", the refusal as a reason and unrelated "try" lines). Another engine's block size
    (SGLang's page size) is its own (:func:`planner.engines.block_sizes.vllm_block_size_problem`).

    Raises:
        ValueError: the refusal, in one line.
    """
    engine = getattr(args, "engine", None)
    engine = DEFAULT_ENGINE if engine in (None, BUDGET_ONLY) else resolve_engine_name(engine)
    if args.block_size is not None and ENGINE_PROFILES[engine].family == "vllm" and (
            problem := vllm_block_size_problem(args.block_size, profile_id=engine)):
        raise ValueError(problem)


CUSTOM_UNPRICED_NOTE_START = "the --gpu-memory-gib GPU"
"""Start of ``find``'s note about a custom GPU without ``--gpu-price-per-hour``."""


def _catalog_model(model_id: str):
    """The catalog spec for ``--model``, named by the user's id (an alias stays: launch commands serve it)."""
    from model_catalog import served_model_spec

    return served_model_spec(model_id)


def _catalog_gpus() -> list:
    from model_catalog.gpus import load_gpus

    return list(load_gpus().values())


def run_allocation(args: argparse.Namespace) -> dict:
    """Resolve ids (or the ``--gpu-memory-gib`` GPU) and run :func:`planner.traffic.allocation.allocation_for_model`;
    the JSON dict.

    ``--pipeline-parallel-size`` splits ``--num-gpus`` into stages as ``plan`` does (:func:`planner.cli.engine.
    parallel_layout`: ``--num-gpus`` a multiple of the stages, one GPU per stage without it): every per-GPU figure is
    then the stage's that :func:`planner.pipeline.plan_pipeline` reports (vLLM sizes every stage's cache to the
    smallest worker's, ``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py), as the Allocation page plans a
    link's stages (:func:`ui.allocation_view.allocation_view`), so the page and the CLI give one answer.

    Raises:
        ValueError: ``--num-gpus`` the stages do not split, or as :func:`allocation_for_model`.
    """
    model = _catalog_model(args.model)
    gpu = resolve_gpu(args)
    pp = args.pipeline_parallel_size or 1
    if args.num_gpus is not None and args.num_gpus % pp:
        raise ValueError(f"--num-gpus {args.num_gpus} is not a multiple of --pipeline-parallel-size {pp}")
    num_gpus = args.num_gpus or pp  # plan's rule (planner/cli/engine.py parallel_layout): one GPU per stage
    overhead = None if args.overhead_gib is None else int(args.overhead_gib * GiB)
    # what vLLM does unasked, as `plan` charges it: its default encoder profile for a vision model (the budget)
    request = PlanRequest(
        context_len=args.max_model_len, weight_dtype=args.weight_dtype, kv_cache_dtype=args.kv_cache_dtype,
        num_gpus=num_gpus, gpu_memory_utilization=args.gpu_memory_utilization,
        block_size=args.block_size, overhead_bytes=overhead, serving=serving_from_args(args),
        max_num_batched_tokens=args.max_num_batched_tokens, **budget_knobs(args))
    result = allocation_for_model(
        model, gpu.framework_memory_bytes, request, mean_len=args.mean_len, num_sequences=args.num_sequences,
        prefix_len=args.prefix_len, prefix_hit_fraction=args.prefix_hit_fraction, gpu_id=gpu.id,
        pipeline_parallel_size=pp)
    # the cache the budget's users are counted in, as the plan command names it (fp8_ds_mla for a sparse-MLA model
    # under auto, and for DeepSeek-V4's pool), and the cache of the exact per-token figure beside it (the stage's)
    priced = plan_pipeline(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id, pipeline_parallel_size=pp)
    return result.to_dict() | {key: getattr(priced, key) for key in (
        "kv_cache_dtype", "kv_cache_exact_dtype", "kv_cache_pool_bytes_per_token")} | {
        "num_gpus": num_gpus, "pipeline_parallel_size": pp}


def find_workload(args: argparse.Namespace) -> Workload | None:
    """The length distribution the flags describe, or None for fixed lengths.

    Raises:
        ValueError: a distribution without ``--max-model-len``, or a bad CSV.
    """
    if args.lengths_csv is None and (args.prompt_len is None or args.output_len is None):
        raise ValueError("give --prompt-len and --output-len, or --lengths-csv with the lengths of real requests")
    if args.lengths_csv is None and args.prompt_p95 is None and args.output_p95 is None:
        if args.max_model_len is not None and args.max_model_len < args.prompt_len + args.output_len:
            raise ValueError(f"--max-model-len {args.max_model_len:,} is shorter than prompt + output "
                             f"({args.prompt_len + args.output_len:,})")
        return None
    if args.max_model_len is None:
        raise ValueError("a length distribution needs --max-model-len (the engine limit that caps long requests)")
    if args.lengths_csv is not None:  # a regular file, read as a stream that stops at the CSV's limits
        from model_catalog.custom import check_regular_file

        try:
            check_regular_file(args.lengths_csv, "a CSV file of lengths")
        except ValueError as exc:
            raise ValueError(f"cannot read --lengths-csv: {exc}") from None
        try:
            with args.lengths_csv.open(encoding="utf-8", errors="replace") as handle:
                return workload_from_csv(handle, args.max_model_len)
        except OSError as exc:
            raise ValueError(f"cannot read --lengths-csv {args.lengths_csv}: {exc.strerror}") from None
    prompt = (LogNormal(mean=args.prompt_len, p95=args.prompt_p95) if args.prompt_p95 is not None
              else Fixed(tokens=args.prompt_len))
    output = (LogNormal(mean=args.output_len, p95=args.output_p95) if args.output_p95 is not None
              else Fixed(tokens=args.output_len))
    return Workload(prompt=prompt, output=output, max_model_len=args.max_model_len)


def run_find(args: argparse.Namespace) -> FindResult:
    """Resolve the model and run :func:`planner.reverse.find_setups` over the GPU catalog.

    With ``--gpu-memory-gib`` the app's custom GPU (id ``custom``) is searched too, as the app's "Find a
    GPU setup" page does: without ``--gpu-price-per-hour`` it has no price, so the search skips it and
    a note says so; without ``--gpu-bandwidth-gb-s`` its setups carry no time per output token.

    Raises:
        ValueError: bad values, or a custom-GPU flag without ``--gpu-memory-gib``.
    """
    check_custom_gpu_flags(args)
    custom = custom_gpu_from_args(args) if args.gpu_memory_gib is not None else None
    if custom is not None and args.gpu_bandwidth_gb_s is None and args.max_tpot_ms is not None:
        raise ValueError("--max-tpot-ms with --gpu-memory-gib needs --gpu-bandwidth-gb-s (the time-per-token "
                         "roofline reads the GPU's memory bandwidth)")
    from planner.cli.serving import served_model  # noqa: PLC0415 - the one user of it here

    model = served_model(args, _catalog_model(args.model))  # --language-model-only: no tower, as `plan`
    workload = find_workload(args)
    prompt_len, output_len = args.prompt_len, args.output_len
    if workload is None and args.max_model_len is not None:
        # A limit above prompt + output: keep fixed lengths, size for the limit in the launch command only.
        workload = Workload(prompt=Fixed(tokens=prompt_len), output=Fixed(tokens=output_len),
                            max_model_len=args.max_model_len)
    if prompt_len is None or output_len is None:  # --lengths-csv alone: its means stand for the length flags
        prompt_len = prompt_len or max(1, round(workload.prompt.mean_tokens))
        output_len = round(workload.output.mean_tokens) if output_len is None else output_len
    request = FindRequest(
        users=args.users, prompt_len=prompt_len, output_len=output_len, workload=workload,
        max_gpus=args.max_gpus, kv_cache_dtypes=args.kv_cache_dtypes, weight_dtype=args.weight_dtype,
        max_time_per_output_token_s=None if args.max_tpot_ms is None else args.max_tpot_ms / 1000,
        gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
        overhead_bytes=None if args.overhead_gib is None else int(args.overhead_gib * GiB),
        max_preemption_probability=args.preemption_probability, seed=args.seed, top=args.top,
        serving=serving_from_args(args, engine="vllm"), gpu_ids=find_gpu_ids(args, custom),
        engine=None if args.engine == BUDGET_ONLY else args.engine,
        alternative_weight_dtype="fp8" if args.weight_hint else None, setup_kinds=args.setup_kinds, link=args.link,
        engine_knobs=find_knobs(args))
    request.validate()  # then the length check, naming the flag (find_setups names the page's max_model_len)
    if too_long := length_limit_error(model, request.resolved_workload(), launch_media_tokens(request),
                                      "--max-model-len"):
        raise ValueError(too_long)
    found = find_setups(model, [*_catalog_gpus(), *([custom] if custom is not None else [])], request)
    ignored = [flag for flag, value in (("--prompt-len", args.prompt_len), ("--output-len", args.output_len),
                                        ("--prompt-p95", args.prompt_p95), ("--output-p95", args.output_p95))
               if value is not None]
    if args.lengths_csv is not None and ignored:  # the CSV gives the lengths: say that the flags were not used
        found = replace(found, notes=(*found.notes, f"{', '.join(ignored)} not used: --lengths-csv gives the lengths"))
    return found if custom is None else _with_custom_gpu_notes(found, custom, args.gpu_bandwidth_gb_s is not None)


def _with_custom_gpu_notes(found: FindResult, custom, bandwidth_given: bool) -> FindResult:
    """Say that an unpriced custom GPU was skipped; drop the time per token computed from a bandwidth
    nobody gave."""
    notes = list(found.notes)
    if custom.price_usd_per_hour is None:
        notes.append(f"{CUSTOM_UNPRICED_NOTE_START} ({custom.name!r}, id {custom.id}) has no price and was "
                     "skipped; give --gpu-price-per-hour to include it")
    if bandwidth_given:
        return replace(found, notes=tuple(notes))

    def untimed(s):
        return replace(s, time_per_output_token_s=None) if s is not None and s.gpu_id == custom.id else s

    return replace(found, options=tuple(untimed(s) for s in found.options), closest=untimed(found.closest),
                   notes=tuple(notes))


def _allocation_table(d: dict) -> str:
    def g(n: int) -> str:
        return f"{n / GiB:,.2f} GiB"

    lines = [
        f"model        {d['model_id']} on {d['gpu_id']}",
        (f"KV budget    {g(d['kv_cache_budget_bytes'])} per GPU ({d['kv_cache_dtype']}); "
         f"{kv_token_text(d, 'kv_cache_bytes_per_token_per_gpu', ' per token')}"
         if d["kv_cache_budget_bytes"] > 0 else
         f"KV budget    none: weights + overhead exceed the usable memory by {g(-d['kv_cache_budget_bytes'])} per GPU"),
        f"workload     mean {d['mean_len']:,} tokens, limit {d['max_model_len']:,}, block {d['block_size']}, "
        f"batch {d['num_sequences']:,}",
        f"{'scheme':<14}{'reserved':>14}{'used':>14}{'wasted':>14}{'unused':>9}{'max seqs':>10}",
    ]
    for key, label in (("naive", "naive"), ("paged", "paged"), ("prefix", "paged+prefix")):
        lines.append(
            f"{label:<14}{g(d[f'{key}_reserved_bytes']):>14}{g(d[f'{key}_used_bytes']):>14}"
            f"{g(d[f'{key}_wasted_bytes']):>14}{d[f'{key}_unused_fraction']:>9.1%}{d[f'{key}_max_sequences']:>10,}")
    lines.append(f"plan users   {d['max_concurrent_sequences']:,} at {d['max_model_len']:,} tokens (as `plan` and "
                 "Home count them)")
    if d.get("pipeline_parallel_size", 1) > 1:
        pp = d["pipeline_parallel_size"]
        lines.append(f"stages       {pp} pipeline stages of {d['num_gpus'] // pp} tensor-parallel GPUs: every figure "
                     "per GPU is the stage's that holds the fewest users")
    lines += [f"  note: {n}" for n in (*d["notes"], *([d["naive_note"]] if d["naive_note"] else []))]
    return "\n".join(lines)


def _find_table(found: FindResult) -> str:
    lines = []
    if not found.fits:
        lines.append("nothing fits within the limits.")
        if found.nothing_fits_cause:
            lines.append(f"cause: {found.nothing_fits_cause}")
        if found.closest:
            c = found.closest
            lines.append(f"closest: {c.num_gpus} x {c.gpu_id} ({kind_label(c)}, tp {c.tensor_parallel_size}, "
                         f"{c.kv_cache_dtype} KV), "
                         f"${c.price_per_hour:.2f}/h")
            lines += [f"  reason: {r}" for r in c.reasons]
        lines += [f"  try: {s}" for s in found.suggestions]
    else:
        kv = max([5, *(len(s.kv_cache_dtype) + 1 for s in found.options)])  # fp8_ds_mla is wider than bf16
        gpus = max([30, *(len(f"{s.num_gpus} x {s.gpu_id}") + 2 for s in found.options)])  # long GPU ids
        lines.append(f"{'$/h':>8}  {'GPUs':<{gpus}}{'kind':<14}{'tp':>3}{'dp':>3}  {'KV':<{kv}}{'max users':>10}"
                     f"{'margin':>8}{'TPOT ms':>9}")
        for s in found.options:
            tpot = f"{s.time_per_output_token_s * 1000:.1f}" if s.time_per_output_token_s else "-"
            lines.append(f"{s.price_per_hour:>8.2f}  {f'{s.num_gpus} x {s.gpu_id}':<{gpus}}{kind_label(s):<14}"
                         f"{s.tensor_parallel_size:>3}{s.data_parallel_size:>3}  {s.kv_cache_dtype:<{kv}}"
                         f"{s.max_concurrent_sequences:>10,}{s.margin:>8.0%}{tpot:>9}")
            lines.append(f"          {s.launch_command}")
    lines += [f"  note: {n}" for n in found.notes]
    return "\n".join(lines)
