"""argparse value types shared by every ``python -m planner`` subcommand, and the custom-GPU flags.

Each type raises ``argparse.ArgumentTypeError`` with a message that says what was
expected and what was given; the parser turns it into one line and exit code 2.

The custom-GPU flags (``--gpu-memory-gib``, ``--gpu-name``; ``find`` adds
``--gpu-price-per-hour`` and ``--gpu-bandwidth-gb-s``) size a GPU the catalog
lacks. :func:`custom_gpu_from_args` builds it with
:func:`model_catalog.custom.custom_gpu`, the app's "Custom model & GPU" panel's
code path, so the CLI and the app plan the same card the same way: the GiB given
are the framework-visible total (``torch.cuda.mem_get_info()[1]``, the figure the
catalog stores as ``framework_memory_bytes``), not the marketed size.
"""

from __future__ import annotations

import argparse
import json
import math

from planner.pool_kv import exact_cache_label
from planner.units import GiB, KiB, MiB

MAX_JSON_FLAG_CHARS = 4_096
"""Longest JSON value of a flag (``--speculative-config``, ``--limit-mm-per-prompt``) [characters]:
vLLM's own examples are under 200 characters."""

MAX_JSON_FLAG_DEPTH = 8
"""Deepest nesting of ``[`` / ``{`` accepted in a JSON flag: the flags take a flat object (one level,
a nested ``{"count": N}`` at most); checked by a linear scan before :func:`json.loads`, whose
recursion 50,000 ``[`` would exhaust (``RecursionError``)."""


def json_flag(text: str, flag: str, example: str):
    """Parse a flag's JSON value within :data:`MAX_JSON_FLAG_CHARS` and :data:`MAX_JSON_FLAG_DEPTH`.

    Args:
        text: The flag's value as typed.
        flag: The flag's name for the message (``--speculative-config``).
        example: A valid value for the message.

    Returns:
        The parsed JSON value (any type: the caller checks the shape).

    Raises:
        ValueError: too long, nested too deeply, not JSON, or stating a key twice in one object
            (:class:`planner.json_keys.UniqueKeys`); the message names the limit, the repeated key or the
            JSON error, quotes at most 60 characters of ``text`` and gives ``example``.
    """
    from planner.text import quote

    if len(text) > MAX_JSON_FLAG_CHARS:
        raise ValueError(f"{flag} is {len(text):,} characters; at most {MAX_JSON_FLAG_CHARS:,} are accepted; "
                         f"e.g. {example}")
    depth = deepest = 0
    for ch in text:  # brackets inside strings count too: an over-count only refuses absurd input
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    if deepest > MAX_JSON_FLAG_DEPTH:
        raise ValueError(f"{flag} nests {deepest:,} levels deep; at most {MAX_JSON_FLAG_DEPTH} are accepted; "
                         f"e.g. {example}")
    from planner.json_keys import UniqueKeys

    unique = UniqueKeys()
    try:
        parsed = json.loads(text, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:  # within 4,096 characters no integer reaches Python's 4,300-digit limit
        raise ValueError(f"{flag} is not JSON ({exc.msg}): {quote(text)}; e.g. {example}") from None
    try:
        unique.check(flag)
    except ValueError as exc:
        raise ValueError(f"{exc}; e.g. {example}") from None
    return parsed


def _number(text: str, kind: type, expected: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if kind is float and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A whole number >= 1."""
    value = _number(text, int, "a whole number")
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def token_count(text: str) -> int:
    """A length in tokens: a whole number from 1 to :data:`planner.budget.MAX_CONTEXT_SEARCH_LIMIT` (2^24), the
    longest context the planner searches, so a too-long value gets argparse's "argument --context-len: ..."
    message like the other flags."""
    from planner.budget import MAX_CONTEXT_SEARCH_LIMIT  # noqa: PLC0415 - args stays import-light

    value = positive_int(text)
    if value > MAX_CONTEXT_SEARCH_LIMIT:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_CONTEXT_SEARCH_LIMIT:,} tokens, got {value:,}")
    return value


def non_negative_int(text: str) -> int:
    """A whole number >= 0."""
    value = _number(text, int, "a whole number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """A finite number > 0."""
    value = _number(text, float, "a number")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite number >= 0."""
    value = _number(text, float, "a number")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


MAX_GIB = 1 << 20
"""Largest memory amount a ``--*-gib`` flag takes: 1,048,576 GiB (1 PiB), far above any accelerator."""


def gib_amount(text: str) -> float:
    """A memory amount in GiB: finite, >= 0 and at most :data:`MAX_GIB` (so bytes stay an exact int)."""
    value = non_negative_float(text)
    if value > MAX_GIB:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_GIB:,} GiB, got {text}")
    return value


def fraction(text: str) -> float:
    """A number in (0, 1], e.g. ``gpu_memory_utilization``."""
    value = _number(text, float, "a number in (0, 1]")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def share(text: str) -> float:
    """A number in [0, 1], e.g. the share of requests that hit a prefix."""
    value = _number(text, float, "a number in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def probability(text: str) -> float:
    """A number in [0, 1)."""
    value = share(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be below 1, got {value}")
    return value


MIN_CUSTOM_GPU_GIB = 0.001
"""Smallest ``--gpu-memory-gib``: the app's custom-GPU form minimum (``min_value=0.001``)."""

MAX_CUSTOM_GPU_GIB = 64 * 1024
"""Largest ``--gpu-memory-gib``: 65,536 GiB (64 TiB), the app's custom-GPU limit
(``model_catalog.custom.MAX_GPU_MEMORY_BYTES``)."""

CUSTOM_GPU_NAME = "Custom GPU"
"""Display name of a ``--gpu-memory-gib`` GPU without ``--gpu-name`` (the app's default)."""

CUSTOM_GPU_BANDWIDTH_GB_S = 1000.0
"""Bandwidth a custom GPU carries when ``--gpu-bandwidth-gb-s`` is not given [GB/s] (the app form's
default). Only ``find``'s time-per-token roofline reads bandwidth, and it reports no time for such a GPU."""


def gpu_memory_gib(text: str) -> float:
    """Framework-visible memory of a custom GPU in GiB: finite, in [0.001, 65536]."""
    value = positive_float(text)
    if value < MIN_CUSTOM_GPU_GIB:
        raise argparse.ArgumentTypeError(f"must be at least {MIN_CUSTOM_GPU_GIB} GiB, got {text}")
    if value > MAX_CUSTOM_GPU_GIB:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_CUSTOM_GPU_GIB:,} GiB (64 TiB), got {text}")
    return value


def add_gpu_arguments(p: argparse.ArgumentParser, gpu_help: str) -> None:
    """``--gpu`` or ``--gpu-memory-gib`` (exactly one), and ``--gpu-name``, on ``plan`` / ``allocation``."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--gpu", help=gpu_help)
    which.add_argument("--gpu-memory-gib", type=gpu_memory_gib, default=None, metavar="GIB",
                       help="instead of --gpu: a GPU not in the catalog with this much framework-visible memory "
                            "(what torch.cuda.mem_get_info()[1] reports; a card sold as 24 GB reports about 23.5)")
    p.add_argument("--gpu-name", default=None,
                   help=f"display name of the --gpu-memory-gib GPU (default {CUSTOM_GPU_NAME!r})")


def custom_gpu_from_args(args: argparse.Namespace):
    """The ``--gpu-memory-gib`` GPU as the app's custom GPU (:class:`model_catalog.custom.CustomGPU`, id ``custom``).

    ``--gpu-name``, ``--gpu-bandwidth-gb-s`` and ``--gpu-price-per-hour`` are read when the
    subcommand has them.

    Raises:
        ValueError: one line naming the flag (a name over 100 characters, say).
    """
    from model_catalog.custom import custom_gpu

    bandwidth = getattr(args, "gpu_bandwidth_gb_s", None)
    try:
        return custom_gpu(CUSTOM_GPU_NAME if args.gpu_name is None else args.gpu_name, repr(args.gpu_memory_gib),
                          "GiB", CUSTOM_GPU_BANDWIDTH_GB_S if bandwidth is None else bandwidth,
                          getattr(args, "gpu_price_per_hour", None))
    except ValueError as exc:
        raise ValueError(f"--gpu-memory-gib / --gpu-name: {exc}") from None


def check_custom_gpu_flags(args: argparse.Namespace) -> None:
    """Refuse the custom-GPU companions (``--gpu-name`` and, on ``find``, price and bandwidth) without
    ``--gpu-memory-gib``.

    Raises:
        ValueError: one line naming the stray flag.
    """
    if args.gpu_memory_gib is not None:
        return
    for name in ("gpu_name", "gpu_price_per_hour", "gpu_bandwidth_gb_s"):
        if getattr(args, name, None) is not None:
            flag = "--" + name.replace("_", "-")
            if getattr(args, "gpu", None) is not None:
                raise ValueError(f"{flag} describes a --gpu-memory-gib GPU, not the catalog's --gpu {args.gpu}: "
                                 f"drop {flag}, or give --gpu-memory-gib instead of --gpu")
            raise ValueError(f"{flag} describes a custom GPU: give --gpu-memory-gib too")


def resolve_gpu(args: argparse.Namespace):
    """The GPU of ``plan`` / ``allocation``: the catalog's ``--gpu``, else the ``--gpu-memory-gib`` custom GPU.

    Raises:
        ValueError: an unknown ``--gpu`` id (with suggestions) or a stray custom-GPU flag.
    """
    check_custom_gpu_flags(args)
    if args.gpu_memory_gib is not None:
        return custom_gpu_from_args(args)
    from model_catalog.gpus import get_gpu

    return get_gpu(args.gpu)


def catalog_id(args: argparse.Namespace) -> str | None:
    """The ``catalog_id`` JSON key: the canonical id of the catalog entry ``--model`` resolved to
    (``meta-llama/Meta-Llama-3.1-8B`` for ``--model meta-llama/Llama-3.1-8B-Instruct``), beside
    ``model_id``, which is the id the user gave; None for ``--config`` and ``--gguf``."""
    if getattr(args, "model", None) is None:
        return None
    from model_catalog import resolve_model_id

    return resolve_model_id(args.model)


def with_catalog_id(out: dict, catalog: str | None) -> dict:
    """``out`` with ``catalog_id`` placed right after ``model_id`` (the JSON reads in that order)."""
    keys = list(out)
    at = keys.index("model_id") + 1 if "model_id" in keys else 0
    return {**{k: out[k] for k in keys[:at]}, "catalog_id": catalog, **{k: out[k] for k in keys[at:]}}


def human_bytes(num_bytes: int) -> str:
    """A size for the tables in the binary unit its magnitude calls for: ``512 B``, ``128.00 KiB``,
    ``4.00 MiB``, ``1.50 GiB`` (negative sizes by their absolute value). The JSON keeps integer bytes."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if abs(num_bytes) >= size:
            return f"{num_bytes / size:,.2f} {unit}"
    return f"{num_bytes:,} B"


def kv_token_text(d: dict, per_token_key: str = "kv_cache_bytes_per_token", unit: str = "") -> str:
    """``8.08 KiB in bf16, every layer (4.01 KiB in fp8_ds_mla pool pages past every window, as users are
    counted)``: the exact per-token figure ``d[per_token_key]`` with its cache named, and the pool's, where a
    plan's users are counted in an engine's pool of another format (``kv_cache_exact_dtype`` beside
    ``kv_cache_dtype``, ``kv_cache_pool_bytes_per_token``: DeepSeek-V4, :mod:`planner.pool_kv`; the figure Home's
    tile shows); just the size where the two are one cache. ``d``: the plan's (or allocation's) JSON keys; ``unit``
    follows the size (`` per token``). QA:
    "KV budget ... (fp8_ds_mla)" stood above an unlabelled bf16 "KV/token 8.08 KiB" for DeepSeek-V4-Flash."""
    text = human_bytes(d[per_token_key]) + unit
    if d["kv_cache_exact_dtype"] != d["kv_cache_dtype"]:  # a plain fp8 figure says no engine stores it
        text += f" in {exact_cache_label(d['kv_cache_exact_dtype'], d['kv_cache_dtype'])}"
    if d["kv_cache_pool_bytes_per_token"] is not None:
        text += (f", every layer ({human_bytes(d['kv_cache_pool_bytes_per_token'])} in {d['kv_cache_dtype']} pool "
                 "pages past every window, as users are counted)")
    return text
