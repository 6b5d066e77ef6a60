"""First reader of every shared link: bounded values, one value per single-value key, valid switches.

Runs in :func:`ui.views.setup_page`, before any widget or catalog lookup sees the
query string, so a hostile or mangled link costs microseconds, not seconds of
fuzzy matching (a 100,000-character ``model=`` once cost 18 s of server CPU):

1. Every value is capped by its key's limit (:func:`value_limit`): ids and words
   :data:`MAX_ID_CHARS`, numbers :data:`MAX_NUMBER_CHARS`, ``custom_model`` /
   ``custom_gpu`` what the share codec can produce. A longer value is dropped
   (the widget shows its default) and the message quotes at most
   :data:`ECHO_CHARS` characters of it.
2. A key that takes one value (everything but :data:`MULTI_VALUE_KEYS`) and is
   repeated keeps its last value, as Streamlit does, and the message says which
   value was used.
3. A multi-value key takes its values repeated (``gpus=a&gpus=b``) or comma-separated (``gpus=a,b``), read the same
   (QA, stop 46: ``gpus=nvidia-h100-sxm-80gb,nvidia-b200`` was one unknown id, and the page showed its default
   GPUs); a comma list is capped at :data:`MAX_LIST_CHARS`, each id in it at the key's own limit. It keeps at most
   :data:`MAX_VALUES_PER_KEY` values, in silence: the page that reads the key
   says so once, with the count the link had and its own limit (:func:`ui.inputs.check_link`, from
   :data:`ui.inputs.LISTED_KEY`), and a page that does not read it says nothing (QA, stop 42: two boxes, two
   counts, and "Remove some in the sidebar" on a one-model page).
4. Switches (:data:`BOOLEAN_KEYS`) take ``true`` / ``false``; anything else is
   dropped with a message (Streamlit would drop it silently).
5. A key no page reads (not in :data:`LINK_KEYS`: a typo such as ``context_length`` or vLLM's ``tp``) is named
   with the closest keys (:func:`unknown_key_problems`) and removed from the link; the rest of the link stays.

:func:`guard` is pure (a mapping of key -> values in, changes and messages out)
so the rules are unit-tested without Streamlit; :func:`apply` reads and rewrites
``st.query_params``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import streamlit as st
from streamlit.runtime.state.query_params import PROTECTED_QUERY_PARAMS

from model_catalog.share_codec import MAX_CODE_CHARS
from ui.format import shorten
from ui.inputs import LISTED_KEY, rewrite_link

MAX_ID_CHARS = 200
"""Longest id or word value read [characters]: a Hugging Face repo id is at most 96
characters of name plus the owner (huggingface_hub ``validate_repo_id``), GPU ids are shorter."""

MAX_NUMBER_CHARS = 32
"""Longest number value read [characters] (``131072``, ``0.95``, ``1e3``)."""

CODE_KEYS = frozenset({"custom_model", "custom_gpu"})
"""Keys holding a share code (:mod:`model_catalog.share_codec`)."""

MAX_CODE_VALUE_CHARS = MAX_CODE_CHARS + 16
"""Longest share-code value read: the codec's own limit plus whitespace the codec strips [characters]."""

MULTI_VALUE_KEYS = frozenset({"models", "gpus", "kv_cache_dtypes", "vendors", "gpu_types",
                              "setup_kinds"})  # the last: Find's setup kinds (ui/find_scale_view.py)
"""Keys that repeat by design (multiselects)."""

MAX_VALUES_PER_KEY = 16
"""Most values one multi-value key keeps (the pages show at most 8 GPUs and 6 models)."""

MAX_LIST_CHARS = MAX_VALUES_PER_KEY * (MAX_ID_CHARS + 1)
"""Longest comma-separated value of a multi-value key read [characters]: as many ids as the key keeps, each at most
:data:`MAX_ID_CHARS`, with their commas."""

BOOLEAN_KEYS = frozenset({"log_y", "enable_lora", "language_model_only",
                          "enable_expert_parallel", "enable_dp_attention",  # these two: Disaggregation
                          # the Engine page's switches (QA: /Engine?enforce_eager=maybe planned it off in silence)
                          "enforce_eager", "enable_prefix_caching", "warm_compile_cache", "use_deep_gemm"})
"""Switches: ``true`` or ``false`` (what Streamlit writes for a bound toggle)."""

NUMBER_KEYS = frozenset({
    "num_gpus", "context_len", "batch_size", "gpu_memory_utilization", "block_size", "overhead_gib",
    "tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size", "max_model_len",
    "max_num_batched_tokens", "max_num_seqs", "available_kv_memory_gib", "users", "prompt_len", "output_len",
    "max_gpus", "max_tpot_ms", "mean_len", "num_samples", "preemption_probability", "prefix_hit_fraction",
    "prefix_len", "seed", "swap_space_gib", "host_link_gb_s",
    "gpu_memory_in_use_gib",  # the Engine page's shared GPU; Home's engine panel applies it too
    "max_loras", "max_lora_rank", "max_cpu_loras", "num_speculative_tokens", "kv_offloading_size",  # ui/serving.py
    "images_per_request", "image_width", "image_height", "limit_mm_per_prompt",
    "videos_per_request", "video_frames", "video_seconds", "video_width", "video_height",
    "ttft_ms", "tpot_ms", "decode_context_parallel_size", "dp_size", "ep_size",  # pages/8_Disaggregation.py
    "prefill_tensor_parallel_size", "prefill_data_parallel_size", "decode_tensor_parallel_size",
    "decode_data_parallel_size",
})
"""Keys of numeric inputs (every page's number fields)."""

SELECT_KEYS = frozenset({"speculative_method", "speculative_model", "kv_offloading_backend",
                         "usage_context"})  # the last: the Engine page's start mode, which Home's panel applies
"""Keys of selectboxes outside the shared sidebar (serving features, ui/serving.py); ids and words."""

ENGINE_PAGE_KEYS = frozenset({"cudagraph_mode", "optimization_level", "enable_prefix_caching", "enforce_eager",
                              "warm_compile_cache", "use_deep_gemm"})
"""The Engine page's CUDA-graph selects and switches (Disaggregation has them too; Home's engine panel and budget read
them from the link): the navigation carries them (:data:`ui.nav.PLAN_KEYS`)."""

PAGE_KEYS = frozenset({"model", "gpu", "weight_dtype", "kv_cache_dtype", "engine", "search", "link",
                       "language_model_only"}) | ENGINE_PAGE_KEYS
"""Keys of the shared sidebar and the Engine page's selects and switches (besides the sets above)."""

SECTION_KEYS = frozenset({"memory_curves_section", "concurrency_section", "catalog_section", "allocation_section",
                          "find_section", "disaggregation_section"})
"""Keys of the pages' lazy tabs (:func:`ui.views.lazy_tabs`): the open tab's label, absent for the first tab. A
view, not a plan: the navigation does not carry them to other pages, and they have no CLI spelling (so they are
not in :data:`KNOWN_KEYS`)."""

JSON_KEYS = frozenset({"speculative_config"})
"""Keys holding a CLI flag's JSON as typed (``--speculative-config``: ui/speculative_link.py), read by the CLI's
parser, whose length limit they take (:func:`value_limit`)."""

KNOWN_KEYS = NUMBER_KEYS | SELECT_KEYS | BOOLEAN_KEYS | MULTI_VALUE_KEYS | CODE_KEYS | PAGE_KEYS | JSON_KEYS
"""Every key a page reads that a CLI-style spelling (``context-len``, ``--context-len``) is mapped to."""

OTHER_READ_KEYS = frozenset({"num_nodes",  # Home's engine panel and the Engine page (ui/engine_home.py)
                             "prompt_p95", "output_p95",  # Allocation's traffic (ui/traffic.py)
                             "find_setup"})  # Find's chosen setup (ui/find_scale_view.py)
"""Keys pages read that are in none of the sets above (no length rule of their own, not carried by the
navigation)."""

LINK_KEYS = KNOWN_KEYS | OTHER_READ_KEYS | SECTION_KEYS | PROTECTED_QUERY_PARAMS
"""Every key some page or Streamlit itself (``embed``, ``embed_options``) reads: the union over all pages, so a
key the navigation carries to a page that does not read it is not flagged there (rule 5). A test runs every page
and checks that each key it reads is here (tests/test_link_spec_config.py)."""

SHORT_FLAGS = {"tp": "tensor_parallel_size", "pp": "pipeline_parallel_size", "dp": "data_parallel_size",
               "dcp": "decode_context_parallel_size"}
"""vLLM's short flags (``-tp``, ``-pp``, ``-dp``, ``-dcp``: vllm/engine/arg_utils.py ``add_cli_args``) -> the
URL key, suggested for a link that uses one as a key (too short for difflib to match)."""

TRACKER_KEYS = frozenset({"fbclid", "gclid", "msclkid"})
"""Keys that sites and mail clients add to a shared link (and ``utm_*``): unread, never flagged."""

ECHO_CHARS = 60
"""Most characters of a bad value quoted back in a message."""


def value_limit(key: str) -> int:
    """Longest value accepted for query ``key`` [characters]."""
    if key in JSON_KEYS:
        from planner.cli.args import MAX_JSON_FLAG_CHARS  # noqa: PLC0415 - the CLI's limit on a JSON flag

        return MAX_JSON_FLAG_CHARS
    if key in CODE_KEYS:
        return MAX_CODE_VALUE_CHARS
    if key in NUMBER_KEYS:
        return MAX_NUMBER_CHARS
    return MAX_ID_CHARS


@dataclass(frozen=True)
class LinkGuard:
    """What :func:`guard` decided.

    Attributes:
        changes: key -> the values to keep, or None to drop the key.
        problems: One sentence per finding: what was wrong, what was used, how to fix it.
        listed: Multi-value key -> how many values the link listed, for each key capped at
            :data:`MAX_VALUES_PER_KEY`.
    """

    changes: dict[str, list[str] | None] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    listed: dict[str, int] = field(default_factory=dict)


def _too_long(key: str, value: str, limit: int) -> str:
    return (f"Link parameter `{key}` is {len(value):,} characters long (`{shorten(value, ECHO_CHARS)}`); the planner reads "
            f"at most {limit:,}, so it was ignored. Copy the link again from the address bar, or set it in the "
            "sidebar.")


def _bounded(key: str, values: Sequence[str], problems: list[str]) -> list[str]:
    """``values`` without those over the key's length limit (each reported)."""
    limit = value_limit(key)
    kept = []
    for value in values:
        if len(value) > limit:
            problems.append(_too_long(key, value, limit))
        else:
            kept.append(value)
    return kept


def _split_lists(key: str, values: Sequence[str], problems: list[str]) -> list[str]:
    """The values of multi-value ``key`` with each comma-separated one read as its ids, in order (blanks dropped),
    as the key repeated once per id; a value over :data:`MAX_LIST_CHARS` is dropped and reported."""
    out = []
    for value in values:
        if "," not in value:
            out.append(value)
        elif len(value) > MAX_LIST_CHARS:
            problems.append(_too_long(key, value, MAX_LIST_CHARS))
        else:
            out += [part.strip() for part in value.split(",") if part.strip()]
    return out


def guard(params: Mapping[str, Sequence[str]]) -> LinkGuard:
    """Apply the rules of this module to raw query ``params`` (key -> every value, in URL order).

    Returns:
        A :class:`LinkGuard`; keys it does not mention are fine as they are.
    """
    result = LinkGuard()
    params = _snake_cased(params, result)
    result.problems.extend(_cli_only(params))
    unknown = unknown_key_problems(params)
    result.problems.extend(unknown.values())
    result.changes.update(dict.fromkeys(unknown))  # removed from the link (rule 5)
    params = {key: values for key, values in params.items() if key not in unknown}
    for key, raw in params.items():
        listed = _split_lists(key, list(raw), result.problems) if key in MULTI_VALUE_KEYS else list(raw)
        values = _bounded(key, listed, result.problems)
        if key in MULTI_VALUE_KEYS:
            if len(values) > MAX_VALUES_PER_KEY:  # said by the page that reads the key (module docstring, 3)
                result.listed[key] = len(values)
                values = values[:MAX_VALUES_PER_KEY]
        elif len(values) > 1:
            shown = ", ".join(f"`{shorten(v, 30)}`" for v in values[:4]) + (", …" if len(values) > 4 else "")
            result.problems.append(
                f"Link parameter `{key}` appears {len(values)} times ({shown}); using the last one, "
                f"`{shorten(values[-1], ECHO_CHARS)}`. Keep one `{key}=` in the link.")
            values = values[-1:]
        if key == MM_LIMIT_KEY and values and values[0].lstrip().startswith("{"):
            values = _image_limit(values[0], result.problems)
        if key in BOOLEAN_KEYS and values and values[0].strip().lower() not in ("true", "false"):
            result.problems.append(
                f"Link parameter `{key}={shorten(values[0], ECHO_CHARS)}` is not `true` or `false`, so it was ignored and "
                f"the switch is off. Use the switch on the {'Engine page' if key in ENGINE_PAGE_KEYS else 'page'}, "
                "or write `true` or `false`.")
            values = []
        if values != list(raw):
            result.changes[key] = values or None
    return result


CLI_ONLY_KEYS = {
    "gpu_memory_gib": "a GPU of your own memory", "gpu_name": "a GPU of your own",
    "gpu_bandwidth_gb_s": "a GPU of your own bandwidth", "gpu_price_per_hour": "a GPU of your own price",
    "config": "a model from its config.json", "gguf": "a model from its GGUF header",
}
"""Flags of ``python -m planner`` that describe a GPU or a model of one's own: a link cannot carry a file or a GPU
the catalog does not have, so the pages read the sidebar's Custom model & GPU panel (its share codes
``custom_gpu`` / ``custom_model`` travel in the link) instead. QA: ``?gpu_memory_gib=40`` planned an H100 in
silence."""


def _cli_only(params: Mapping[str, Sequence[str]]) -> list[str]:
    """One message per key of :data:`CLI_ONLY_KEYS` the link carries: what it would describe, and where to set
    that on the pages. The key is left in the link, unread (like any key no page reads)."""
    return [f"Link parameter `{key}` is a flag of the command line (`--{key.replace('_', '-')}`) that no page "
            f"reads from a link, so it was ignored. For {what}, open Custom model & GPU in the sidebar; its share "
            "code goes into the link." for key, what in CLI_ONLY_KEYS.items() if key in params]


def unknown_key_problems(params: Mapping[str, Sequence[str]]) -> dict[str, str]:
    """Key -> its message, for each key of ``params`` no page reads (not in :data:`LINK_KEYS`; not a flag of
    :data:`CLI_ONLY_KEYS`, which has its own message, nor a tracker's): the key, the closest known keys
    (``difflib.get_close_matches``, vLLM's short flags by :data:`SHORT_FLAGS`), and that the rest of the link was
    kept. QA, stop 47: ``context_length=`` and ``tp=`` were dropped in silence."""
    out = {}
    for key in params:
        if key in LINK_KEYS or key in CLI_ONLY_KEYS or key in TRACKER_KEYS or key.startswith("utm_"):
            continue
        name = key.strip().lstrip("-").replace("-", "_").lower()
        near = [SHORT_FLAGS[name]] if name in SHORT_FLAGS else []
        close = difflib.get_close_matches(name, sorted(KNOWN_KEYS | OTHER_READ_KEYS), n=3, cutoff=0.6)
        near += [k for k in close if k not in near]
        hint = (f" Did you mean {' or '.join(f'`{k}`' for k in near)}?" if near
                else " The URL keys are the command line's flag names with underscores (`context_len`, `num_gpus`).")
        out[key] = (f"Link parameter `{shorten(key, ECHO_CHARS)}` is not a key any page reads, so it was removed from "
                    f"the link; the rest of the link was kept.{hint}")
    return out


MM_LIMIT_KEY = "limit_mm_per_prompt"
"""The image limit's key: a count in the page's input, JSON (``{"image": 2}``) in the CLI's flag."""


def _image_limit(text: str, problems: list[str]) -> list[str]:
    """The image count of a ``limit_mm_per_prompt`` value written as the CLI's JSON (read as
    :func:`planner.cli.serving.mm_limits` reads ``--limit-mm-per-prompt``), as the page's input holds it; [] with
    a message when the JSON is bad or names no image limit (the page's input is the image limit)."""
    from argparse import Namespace  # noqa: PLC0415 - only for a JSON value

    from planner.cli.serving import mm_limits  # noqa: PLC0415

    shown = f"Link parameter `{MM_LIMIT_KEY}={shorten(text, ECHO_CHARS)}`"
    try:
        images, _ = mm_limits(Namespace(limit_mm_per_prompt=text))
    except ValueError as exc:
        problems.append(f"{shown}: {exc}; it was ignored. Set the image limit in the sidebar.")
        return []
    if images is None:
        problems.append(f"{shown} sets no image limit, the one this page's input holds, so it was ignored. Set the "
                        "image limit in the sidebar.")
        return []
    return [str(images)]


def _snake_cased(params: Mapping[str, Sequence[str]], result: LinkGuard) -> dict[str, Sequence[str]]:
    """``params`` with a key written as its CLI flag (``context-len``, ``--Context-Len``) read as the page's key
    (``context_len``), when that key is one a page reads (:data:`KNOWN_KEYS`) and the link does not also set it;
    each such key is reported and rewritten in the link. Other unknown keys (a tracker's ``utm_source``) stay
    as they are, unread."""
    out = dict(params)
    for key in list(params):
        name = key.strip().lstrip("-").replace("-", "_").lower()
        if key in KNOWN_KEYS or name not in KNOWN_KEYS:
            continue
        if name in params:
            result.problems.append(f"Link parameter `{shorten(key, ECHO_CHARS)}` is the CLI spelling of `{name}`, "
                                   f"which the link also sets; `{name}` was used. Keep one of them.")
        else:
            result.problems.append(f"Link parameter `{shorten(key, ECHO_CHARS)}` is the CLI spelling; the link now "
                                   f"says `{name}` (the URL keys use underscores), which the pages that take it read.")
            out[name] = list(params[key])
            result.changes[name] = list(params[key])
        result.changes[key] = None
        del out[key]
    return out


def apply() -> list[str]:
    """Guard this run's ``st.query_params`` in place; the messages to show.

    Streamlit seeds bound widgets from the page-load query string, so changes go
    through :func:`ui.inputs.rewrite_link`, which rewrites that too.
    """
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    result = guard(params)
    st.session_state[LISTED_KEY] = result.listed  # this run's counts (rule 3), for the page's own message
    rewrite_link(result.changes, tuple(MULTI_VALUE_KEYS))
    return result.problems
