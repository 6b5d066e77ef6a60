"""Rows and series for the pages' tables and charts, built from planner calls.

Nothing here re-derives a planner quantity: each number is a field of a
:class:`planner.budget.Plan`, a :mod:`planner.sweep` value or a
:mod:`planner.model.kv` return value; this module only arranges them (and formats
text cells through :mod:`ui.format`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import streamlit as st

from model_catalog.releases import release
from planner.budget import Plan, PlanRequest, plan
from planner.model import ModelSpec
from planner.plan_types import MAX_CONTEXT_SEARCH_LIMIT
from planner.model.kv import AttentionVariant, cache_dtypes, kv_cache_bytes_per_token
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import FP8_DS_MLA_CACHE_DTYPES
from planner.context_budget import shard_contexts
from planner.pipeline import plan_pipeline
from planner.sweep import concurrency_curve, context_points, contexts_up_to, memory_curve, stage_costs
from ui import catalog, kv_tiles
from ui.format import bytes_to_gib, format_bytes, format_int, format_tokens, format_tokens_short

if TYPE_CHECKING:  # annotations only: pandas is imported where a table is built (a page without
    import pandas as pd  # tables, such as Home, starts without it)
    import pyarrow as pa

CURVE_MIN_TOKENS = 128
"""Shortest context on the curves [tokens]."""

CURVE_MAX_TOKENS = MAX_CONTEXT_SEARCH_LIMIT
"""Longest context on the curves [tokens]: 16,777,216, the longest context a plan takes
(``planner.plan_types.MAX_CONTEXT_SEARCH_LIMIT``), so Llama 4 Scout's curves reach its 10,485,760
(``max_position_embeddings`` of its config); only a custom config states more. A curve keeps
:data:`CURVE_POINTS` points however far it reaches."""

CURVE_END = (f"its model's max_position_embeddings ({CURVE_MAX_TOKENS:,} tokens at most, the longest context the "
             "planner takes)")
"""Where every curve and table of the Memory curves and Concurrency pages (and the Allocation page's curve) ends, for
their captions."""

CURVE_DEFAULT_MAX_TOKENS = 131072
"""Curve end for models whose config states no limit [tokens]."""

CURVE_POINTS = 64
"""Points per curve."""

TABLE_CONTEXTS = tuple(CURVE_MIN_TOKENS << i for i in range((CURVE_MAX_TOKENS // CURVE_MIN_TOKENS).bit_length()))
"""Context lengths of the concurrency table [tokens]: the powers of two over the curves' range, 128 to
16,777,216, so the table covers what the chart draws (:func:`concurrency_contexts`)."""

_URL = re.compile(r"https?://[^\s,;)'\"]+")


def model_limit(model: ModelSpec) -> int:
    """The model's stated context limit, or :data:`CURVE_DEFAULT_MAX_TOKENS` when it states none."""
    return model.max_position_embeddings or CURVE_DEFAULT_MAX_TOKENS


def curve_top(models: Iterable[ModelSpec]) -> int:
    """Where the curves of ``models`` end: the longest limit among them (:func:`model_limit`), capped at
    :data:`CURVE_MAX_TOKENS` [tokens]. The Memory curves, Concurrency and Allocation pages' one rule."""
    return min(max(model_limit(m) for m in models), CURVE_MAX_TOKENS)


def curve_contexts(models: Iterable[ModelSpec]) -> tuple[int, ...]:
    """Log-spaced contexts up to :func:`curve_top` of ``models``."""
    return context_points(CURVE_MIN_TOKENS, max(curve_top(models), CURVE_MIN_TOKENS * 2), CURVE_POINTS)


def concurrency_contexts(model: ModelSpec) -> tuple[int, ...]:
    """The Concurrency chart's contexts: the log-spaced curve (:func:`curve_contexts`) with every column of the
    table (:func:`table_contexts`) added, up to the model's limit, so the chart passes through each table cell
    and hovering at 1K shows the table's 1K figure."""
    return within_limit(tuple(sorted({*curve_contexts([model]), *table_contexts(model)})), model)


def within_limit(contexts: Sequence[int], model: ModelSpec) -> tuple[int, ...]:
    """The contexts a model supports, its own limit the last (:func:`planner.sweep.contexts_up_to`), so its
    curve ends where the table's "(model limit)" says."""
    return contexts_up_to(tuple(contexts), model_limit(model))


@dataclass(frozen=True)
class CurveGroup:
    """One memory curve: a model with the overhead of the GPUs it is drawn against.

    Attributes:
        label: Legend text (the model, and the GPUs when its overhead differs between them).
        model_id: Catalog id.
        gpu_names: The GPUs whose usable-memory line this curve is compared with.
        points: The curve (:func:`planner.sweep.memory_curve` with those GPUs' overhead).
        group: 0 for the first GPU class of :func:`memory_curve_groups`, 1 for the next (line style; the same
            GPUs for every model).
    """

    label: str
    model_id: str
    gpu_names: tuple[str, ...]
    points: tuple
    group: int


def memory_curve_groups(models: Sequence[ModelSpec], gpus: Sequence, request: PlanRequest,
                        contexts: Sequence[int], pipeline_parallel_size: int = 1) -> list[CurveGroup]:
    """One curve per model and GPU class, so each GPU's line is crossed by the curve priced with that GPU's own
    overhead, as the table and the CLI price it (the newest vLLM's profile pass is sized by GPU class,
    :func:`planner.gpu_compare.profile_pass_tiers`). A class is the GPUs whose overhead is the same for every
    chosen model, numbered in the GPUs' order, so ``group`` (the line style) names the same GPUs for every model
    and each GPU's usable line can take the style of the curves priced for it (QA: a dotted curve priced for the
    L40S read against the dotted H200 line). ``pipeline_parallel_size``: the link's stages
    (:func:`ui.feature_line.link_stages`), each stage's overhead in the class and each curve the stage's GPU that
    holds the most (:func:`planner.sweep.memory_curve`)."""
    pp = pipeline_parallel_size
    costs = [[tuple(c.overhead_bytes for c in stage_costs(m, request, g.framework_memory_bytes, g.id,
                                                         pipeline_parallel_size=pp)) for g in gpus] for m in models]
    classes: dict[tuple[tuple[int, ...], ...], list] = {}
    for j, g in enumerate(gpus):
        classes.setdefault(tuple(row[j] for row in costs), []).append(g)
    out: list[CurveGroup] = []
    for m in models:
        for i, members in enumerate(classes.values()):
            first = members[0]
            names = tuple(g.name for g in members)
            label = m.display_name if len(classes) == 1 else f"{m.display_name} · on {', '.join(names)}"
            points = memory_curve(m, request, within_limit(contexts, m), first.framework_memory_bytes, first.id,
                                  pipeline_parallel_size=pp)
            out.append(CurveGroup(label=label, model_id=m.model_id, gpu_names=names, points=points, group=i))
    return out


def plan_grid(models: Sequence[ModelSpec], gpus: Sequence, request: PlanRequest,
              pipeline_parallel_size: int = 1) -> dict[tuple[str, str], Plan]:
    """``plan()`` for every model x GPU pair, keyed by (model id, GPU id); with the link's
    ``pipeline_parallel_size`` stages, :func:`planner.pipeline.plan_pipeline`'s plan of them (Home's)."""
    return {(m.model_id, g.id): plan_pipeline(m, g.framework_memory_bytes, request, g.id,
                                              pipeline_parallel_size=pipeline_parallel_size)
            for m in models for g in gpus}


def fit_table(grid: Mapping[tuple[str, str], Plan], models: Sequence[ModelSpec], gpus: Sequence) -> pd.DataFrame:
    """Largest context that fits at the plan's batch, model rows x GPU columns (text cells)."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    rows = []
    for m in models:
        row = {"Model": m.display_name or m.model_id}
        for g in gpus:
            p = grid[(m.model_id, g.id)]
            if p.max_context_len_limited_by == "tensor_parallel":
                row[g.name] = "does not fit: num_gpus cannot split the heads"
            elif p.kv_cache_budget_bytes <= 0:
                row[g.name] = "does not fit: weights + overhead exceed memory"
            elif not p.max_context_len:
                row[g.name] = "does not fit: not one token of KV"
            elif p.max_context_len_limited_by == "memory":
                row[g.name] = format_tokens(p.max_context_len)
            else:
                row[g.name] = f"{format_tokens(p.max_context_len)} (model limit)"
        rows.append(row)
    return pd.DataFrame(rows)


def variant_rows(plans: Sequence[tuple[AttentionVariant, Plan]]) -> list[dict]:
    """One row per attention variant: KV per token of the whole model, KV per sequence on one GPU (what the users,
    counted against one GPU's KV budget, hold: in whole blocks as Home's tile, or exact where a cache is named), their
    cache named where that is needed (:func:`ui.kv_tiles.exact_cache_suffix`), users, max context. QA (stop 46): the
    column said 2.05 GiB (the whole model) beside Home's 0.97 GiB per GPU, and MHA's 30.18 GiB beside a 28.85 GiB
    per-GPU budget."""
    named = any(q.kv_cache_exact_named for _, q in plans)  # DeepSeek-V4: exact figures, blocks in another cache
    return [
        {
            "Variant": v.name,
            "As built": v.as_built,
            "KV heads": "latent" if v.num_key_value_heads is None else format_int(v.num_key_value_heads),
            KV_TOKEN_COLUMN: format_bytes(p.kv_cache_bytes_per_token, "auto") + kv_tiles.exact_cache_suffix(plans, p),
            KV_SEQUENCE_COLUMN: format_bytes(p.kv_cache_bytes_per_sequence_per_gpu if named else
                                             p.kv_cache_bytes_per_sequence_paged_per_gpu)
            + kv_tiles.exact_cache_suffix(plans, p),
            "Max concurrent sequences": format_int(p.max_concurrent_sequences),
            "Max context": format_tokens(p.max_context_len),
            "Design": v.description,
            "kv_bytes_per_token": p.kv_cache_bytes_per_token,
            "max_concurrent_sequences": p.max_concurrent_sequences,
        }
        for v, p in plans
    ]


KV_TOKEN_COLUMN, KV_SEQUENCE_COLUMN = "KV per token, whole model", "KV per sequence per GPU"
"""The GQA table's KV columns: one token over every layer of the whole model (Home's "KV per token"), one sequence
on one GPU (Home's "KV per sequence per GPU"), what each GPU's KV budget holds the users in."""

VARIANT_COLUMNS = ("Variant", "As built", "KV heads", KV_TOKEN_COLUMN, KV_SEQUENCE_COLUMN, "Max concurrent sequences",
                   "Max context", "Design")
"""The GQA page's table columns, in order (:func:`variant_rows` also keeps the raw figures for the charts)."""


def variant_table(rows: Sequence[Mapping]) -> pd.DataFrame:
    """:func:`variant_rows` as the GQA page's table: the shown columns, "As built" as a check mark."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import

    return pd.DataFrame([{**{k: r[k] for k in VARIANT_COLUMNS}, "As built": "✓" if r["As built"] else ""}
                         for r in rows], columns=list(VARIANT_COLUMNS))


def savings_sentence(plans: Sequence[tuple[AttentionVariant, Plan]]) -> str:
    """The attention designs' KV per token compared in words, against the largest one:
    ``"GQA (as built) stores 8x less KV per token than MHA; MQA stores 64x less."``; the part of a saving that is
    the cache format's, not the design's, is :func:`savings_format_note` (QA, stop 44: one sentence gave "52x"
    and "57.9x" for DeepSeek-V3.2)."""
    base_variant, base = max(plans, key=lambda vp: vp[1].kv_cache_bytes_per_token)
    parts = []
    for variant, p in plans:
        if variant is base_variant or p.kv_cache_bytes_per_token <= 0:
            continue
        factor = base.kv_cache_bytes_per_token / p.kv_cache_bytes_per_token
        parts.append(f"{variant_tag(variant)} stores {factor:,.3g}x less")
    if not parts:
        return ""
    first, *rest = parts
    return f"{first} KV per token than {base_variant.name}" + "".join(f"; {r}" for r in rest) + "."


def savings_format_note(plans: Sequence[tuple[AttentionVariant, Plan]]) -> str:
    """What of :func:`savings_sentence`'s factors is the cache format rather than the design, for a note under it:
    ``"MLA (as built) is stored in fp8_ds_mla, ...: in fp8 too, MLA (as built) would store 57.9x less."``; "" where
    every variant is stored in the largest one's format."""
    base_variant, base = max(plans, key=lambda vp: vp[1].kv_cache_bytes_per_token)
    return "".join(_format_share(v, p, base_variant.name, base) for v, p in plans
                   if p.kv_cache_dtype != base.kv_cache_dtype and p.kv_cache_bytes_per_token > 0).strip()


def _format_share(variant: AttentionVariant, p: Plan, base_name: str, base: Plan) -> str:
    """The part of a saving that comes from the cache format, not the design: ``" MLA (as built) is stored in
    fp8_ds_mla, vLLM's format for sparse-MLA layers, and MHA in bf16: in bf16 too, MLA (as built) would store
    61x less."``, the design's own factor priced in the larger variant's dtype; "" when the variant's bytes per token
    are that price already."""
    same = kv_cache_bytes_per_token(variant.model, cache_dtypes(variant.model, p.weight_dtype, base.kv_cache_dtype,
                                                                vllm_storage=False))
    if same == p.kv_cache_bytes_per_token:  # its bytes per token are already priced in the base's cache (DeepSeek-V4
        return ""  # as built: fp8_ds_mla pool pages for its users, bf16 per token): the factor above is like for like
    tag = variant_tag(variant)
    return (f" {tag} is stored in {p.kv_cache_dtype}, vLLM's format for sparse-MLA layers, and {base_name} in "
            f"{base.kv_cache_dtype}: in {base.kv_cache_dtype} too, {tag} would store "
            f"{base.kv_cache_bytes_per_token / same:,.3g}x less.")


def variant_pricing_note(plans: Sequence[tuple[AttentionVariant, Plan]]) -> str:
    """Why the variants' users are counted two ways, or "": DeepSeek-V4 as built is paged as vLLM's allocator for
    it holds it (:func:`planner.engines.vllm_hybrid_profile.allocator_pool_prices`, fp8_ds_mla pool pages), a
    rebuild with more KV heads is no model that allocator places, so its users and max context follow its own KV
    per token in plain pages (QA: the MHA rebuild showed the as-built model's users)."""
    from planner.engines.vllm_hybrid_profile import allocator_pool_prices  # noqa: PLC0415 - engines load on use

    priced = [(v, p, allocator_pool_prices(v.model)) for v, p in plans]
    pooled = [v for v, _, pool in priced if pool]
    plain = [(v, p) for v, p, pool in priced if not pool]
    if not pooled or not plain:
        return ""
    names = " and ".join(v.name for v, _ in plain)
    pages = "; ".join(f"{v.name + ': ' if len(plain) > 1 else ''}{p.kv_cache_dtype}, {p.block_size}-token blocks"
                      for v, p in plain)
    return (f"{variant_tag(pooled[0])} is paged as vLLM's DeepSeek-V4 allocator holds it (its users in fp8_ds_mla "
            f"pool pages, not the {plain[0][1].kv_cache_dtype} bytes per token above; v0.22-v0.23: "
            f"planner/engines/vllm_deepseek_v4.py). {names} is no model that allocator places (its pages hold one "
            f"K=V head per layer), so its users and max context come from the plain paged arithmetic "
            f"of its own KV per token ({pages}).")


def variant_tag(variant: AttentionVariant) -> str:
    """``"MLA (as built)"`` for the model as built, else the variant's name."""
    return f"{variant.name} (as built)" if variant.as_built else variant.name


def priced_kv_name(model: ModelSpec, weight_dtype: str, kv_cache_dtype: str, gpu_ids: tuple[str, ...] = ()) -> str:
    """The KV cache a page's users are priced in, as ``Plan.kv_cache_dtype`` names it (the request's cache, or
    DeepSeek-V4's fp8_ds_mla pool pages: :func:`planner.engines.vllm_hybrid_profile.budget_kv_name`); on ``gpu_ids``
    of both vendors a sparse-MLA model's two caches, NVIDIA's first ("fp8_ds_mla / bf16": an AMD GPU stores no
    fp8_ds_mla, :mod:`planner.engines.vllm_kv_formats` design note 5).

    Raises:
        ValueError: a dtype the model cannot take (from :func:`planner.model.kv.cache_dtypes`).
    """
    from planner.engines.vllm_hybrid_profile import budget_kv_name  # noqa: PLC0415 - engines load on use

    names = [budget_kv_name(model, cache_dtypes(model, weight_dtype, kv_cache_dtype, gpu_name=g).kv_name)
             for g in sorted(gpu_ids or ("",), key=is_rocm_gpu)]
    return " / ".join(dict.fromkeys(names))


def sparse_mla_clause(kv_cache_dtype: str, gpu_name: str | None = "") -> str:
    """``"; sparse-MLA models ... fp8_ds_mla"`` when ``kv_cache_dtype`` is one vLLM stores sparse-MLA layers as
    ``fp8_ds_mla`` for (``auto``, the fp8 names: :data:`planner.model.sparse.FP8_DS_MLA_CACHE_DTYPES`) on
    ``gpu_name`` (an AMD GPU stores none: :mod:`planner.engines.vllm_kv_formats` design note 5), else ""."""
    if kv_cache_dtype not in FP8_DS_MLA_CACHE_DTYPES or is_rocm_gpu(gpu_name):
        return ""
    return "; the sparse-MLA models (DeepSeek-V3.2, GLM-5) in vLLM's fp8_ds_mla, as vLLM stores them"


def kv_dtypes_text(plans: Sequence[tuple[AttentionVariant, Plan]]) -> str:
    """The KV caches the variants are priced in: ``"bf16 KV cache"``, or ``"bf16 KV cache, fp8_ds_mla for MLA as
    built"`` when a variant is stored in another format (vLLM's sparse-MLA format under ``auto``)."""
    first = plans[0][1].kv_cache_dtype
    others = [f"{p.kv_cache_dtype} for {v.name}{' as built' if v.as_built else ''}"
              for v, p in plans if p.kv_cache_dtype != first]
    return ", ".join([f"{first} KV cache", *others])


@st.cache_data(max_entries=32, ttl=3600, show_spinner=False)  # keyed by the two dtypes (a few dozen pairs)
def catalog_kv_rows(weight_dtype: str, kv_cache_dtype: str, gpu_name: str | None = "") -> list[dict]:
    """Every catalog model: parameters, KV bytes per token (whole model, one GPU) and attention kind.

    Kept per (``weight_dtype``, ``kv_cache_dtype``): the rows read nothing else (the catalog is fixed
    per server), and building them walks every layer of every catalog model (about 20 ms a rerun of
    the GQA page, whose other widgets do not change them).

    Args:
        weight_dtype: The sidebar's weight dtype (``planner.model.kv.cache_dtypes``).
        kv_cache_dtype: The sidebar's KV cache dtype (``auto`` = each model's compute dtype).
        gpu_name: The sidebar's GPU: on an AMD one, sparse-MLA models store no fp8_ds_mla (as the table prices).

    Raises:
        ValueError: a dtype the planner does not know (from ``cache_dtypes``).

    Sources: ``planner.model.kv.kv_cache_bytes_per_token``; Streamlit docs, "st.cache_data".
    """
    rows = []
    for model_id in catalog.model_ids():
        spec = catalog.model_spec(model_id)
        per_token = kv_cache_bytes_per_token(spec, cache_dtypes(spec, weight_dtype, kv_cache_dtype, gpu_name=gpu_name))
        rows.append({"model_id": model_id, "params": spec.num_parameters, "kv_bytes_per_token": per_token,
                     "attention": spec.attention_kind})
    return rows


def table_contexts(model: ModelSpec) -> tuple[int, ...]:
    """:data:`TABLE_CONTEXTS` up to the model's limit, plus the limit itself when it is not listed."""
    limit = model_limit(model)
    chosen = [c for c in TABLE_CONTEXTS if c <= limit]
    if limit not in chosen and limit <= CURVE_MAX_TOKENS:
        chosen.append(limit)
    return tuple(chosen)


def concurrency_series(model: ModelSpec, gpus: Sequence, request: PlanRequest, contexts: Sequence[int],
                       pipeline_parallel_size: int = 1,
                       decode_context_parallel_size: int = 1) -> dict[str, tuple[int, ...]]:
    """GPU name -> max concurrent sequences at each context (:func:`planner.sweep.concurrency_curve`); with serving
    features in ``request``, one :func:`planner.pipeline.plan_pipeline` per point (the sweep prices none). With the
    link's ``pipeline_parallel_size`` stages (:func:`ui.feature_line.link_stages`), each point is
    ``plan_pipeline``'s users of them, as Home plans them. With the link's ``decode_context_parallel_size``
    (:func:`ui.feature_line.link_dcp`), each point is the users of the share one GPU keeps
    (:func:`planner.context_budget.shard_contexts`), as Home plans them."""
    pp = pipeline_parallel_size
    contexts = shard_contexts(contexts, decode_context_parallel_size)
    if request.serving is None:
        return {g.name: concurrency_curve(model, g.framework_memory_bytes, request, tuple(contexts), g.id,
                                          pipeline_parallel_size=pp) for g in gpus}
    return {g.name: tuple(plan_pipeline(model, g.framework_memory_bytes, replace(request, context_len=c), g.id,
                                        pipeline_parallel_size=pp).max_concurrent_sequences for c in contexts)
            for g in gpus}


def concurrency_table(series: Mapping[str, Sequence[int]], gpus: Sequence, contexts: Sequence[int]) -> pd.DataFrame:
    """GPU rows x context columns of max concurrent sequences (integers, for CSV)."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    rows = []
    for g in gpus:
        row = {"gpu_id": g.id, "gpu": g.name}
        row.update({f"{c} tokens": users for c, users in zip(contexts, series[g.name])})
        rows.append(row)
    return pd.DataFrame(rows)


def concurrency_display(table: pd.DataFrame) -> pd.DataFrame:
    """The on-screen form of :func:`concurrency_table`: GPU names first (ids stay in the CSV), context
    columns headed in K / M tokens (``"8K"``; inexact sizes in full) and counts with thousands separators
    (``"11,892"``; the CSV keeps plain integers)."""
    shown = table.drop(columns=["gpu_id"]).rename(columns={"gpu": "GPU"})
    counts = [c for c in shown.columns if c != "GPU"]
    shown[counts] = shown[counts].map(format_int)
    return shown.rename(columns={c: format_tokens_short(int(c.split()[0])) for c in counts})


def first_url(text: str) -> str | None:
    """The first http(s) URL in a source note, for a link column."""
    match = _URL.search(text or "")
    return match.group(0) if match else None


UNKNOWN_RELEASE = "unknown"
"""The released column of an entry without a sourced date (never a guessed one)."""


def released(entry) -> str:
    """The entry's first public release, ``YYYY-MM[-DD]`` (sorts as text), or :data:`UNKNOWN_RELEASE`."""
    return entry.released or UNKNOWN_RELEASE


BASE_MODEL_MARK = "+"
"""After a release date that is the base model's ("2026-04-22+": then or later): the checkpoint has no date of
its own in the catalog. One character, so the date still fits the grid's narrow column and sorts as before."""


def released_cells(model_id: str) -> tuple[str, str]:
    """``(released, released source)`` of a catalog id or alias (:func:`model_catalog.releases.release`): its
    own date (an alias's own where the catalog has one, else its entry's); for a quantized checkpoint without
    one, its base model's date marked :data:`BASE_MODEL_MARK` (QA: nvidia/Qwen3.6-27B-NVFP4 showed
    "unknown"); else :data:`UNKNOWN_RELEASE` and no source."""
    found = release(model_id)
    if found is None:
        return UNKNOWN_RELEASE, ""
    if found.base_model is None:
        return found.date, found.source
    return (f"{found.date}{BASE_MODEL_MARK}", f"no date of its own in the catalog: its base model "
            f"{found.base_model}'s release (the checkpoint came out on or after it), {found.source}")


def _aliases_cell(entry) -> str:
    """The entry's aliases, each with its own release date where the catalog gives one."""
    return ", ".join(f"{a} (released {entry.alias_released[a].released})" if a in entry.alias_released else a
                     for a in entry.aliases)


def _alias_rows(found: pd.DataFrame, words: Sequence[str]) -> pd.DataFrame:
    """``found`` with each row that the search ``words`` match only through an alias shown as that alias: its
    id, its release date (:func:`released_cells`) and the entry it resolves to in "alias of" (QA: "qwen3.6"
    listed Qwen/Qwen3.5-27B dated 2026-02, while Qwen3.6-27B came out on 22 April 2026). A row whose own id,
    name or date holds every word, or whose words lie in several aliases, stays the entry's."""
    found = found.copy()
    for index, row in found.iterrows():
        if all(w in f"{row['id']} {row['name']} {row['released']}".lower() for w in words):
            continue
        for alias in catalog.model_entry(row["id"]).aliases:
            date, source = released_cells(alias)
            if all(w in f"{alias} {date} {row['name']}".lower() for w in words):
                found.loc[index, ["id", "alias of", "released", "released source"]] = [alias, row["id"], date, source]
                break
    return found


@st.cache_data(max_entries=1, show_spinner=False)  # the catalog's alone: built once per server
def model_table() -> pd.DataFrame:
    """The model catalog, one row per model."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    rows = []
    for model_id in catalog.model_ids():
        spec, entry = catalog.model_spec(model_id), catalog.model_entry(model_id)
        date, date_source = released_cells(model_id)
        rows.append({
            "id": model_id, "name": entry.display_name, "released": date, "alias of": "",
            "aliases": _aliases_cell(entry), "params": spec.num_parameters,
            "attention": spec.attention_kind, "layers": spec.num_layers, "kv heads": spec.num_key_value_heads,
            "head_dim": spec.head_dim,
            "windows": ", ".join(format_int(w) for w in spec.sliding_windows),
            "layer kinds": ", ".join(f"{n} {kind}" for kind, n in spec.layer_counts.items()),
            "experts": f"{spec.num_experts_per_tok} of {spec.num_experts}" if spec.is_moe else "",
            "max context": spec.max_position_embeddings,
            "checkpoint": spec.checkpoint_quantization.split(":", 1)[0] if spec.checkpoint_quantization else "",
            "confidence": entry.confidence, "source": first_url(entry.source), "source note": entry.source,
            "released source": date_source,
        })
    return pd.DataFrame(rows)


@st.cache_data(max_entries=1, show_spinner=False)  # the catalog's alone: built once per server
def gpu_table() -> pd.DataFrame:
    """The GPU catalog, one row per GPU."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    rows = []
    for g in catalog.gpus().values():
        rows.append({
            "id": g.id, "name": g.name, "vendor": g.vendor,
            "framework memory [GiB]": bytes_to_gib(g.framework_memory_bytes),
            "basis": g.framework_memory_basis, "marketed [GB]": g.memory_gb_marketed,
            "bandwidth [GB/s]": g.bandwidth_gb_s, "bf16 dense TFLOPS": g.bf16_dense_tflops,
            "host link": g.host_link.label, "host link [GB/s per direction]": g.host_link.gb_s_per_direction,
            "host link source": g.host_link.source,
            "price [USD/h]": g.price_usd_per_hour, "source": first_url(g.source), "source note": g.source,
        })
    return pd.DataFrame(rows)


@st.cache_data(max_entries=1, show_spinner=False)  # the catalog's alone: built once per server
def verification_frame() -> pd.DataFrame:
    """The committed verification against transformers, one row per model.

    Rows come from :func:`model_catalog.verification_table` (written by
    ``python -m planner verify``); nothing is recomputed here.
    """
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    from model_catalog import verification_table

    rows = []
    for r in verification_table():
        catalog_params = catalog.model_spec(r["model_id"]).num_parameters
        rows.append({
            "id": r["model_id"], "family": r["family"], "released": released_cells(r["model_id"])[0],
            "status": r["status"] if r["built"] else "not built",
            "counted": "language model" if catalog_params != r["params_planner"] else "whole model",
            "params (planner)": r["params_planner"], "params (transformers)": r["params_transformers"],
            "KV checks exact": f"{r['kv_checks_exact']} of {r['kv_checks']}" if r["kv_checks"] else "not checked",
            "prompt tokens": ", ".join(format_int(n) for n in r["prompt_tokens"]),
            "KV bytes (planner)": r["kv_bytes_planner"], "KV bytes (transformers)": r["kv_bytes_transformers"],
            "transformers": r["transformers_version"], "reason": r["reason"],
        })
    return pd.DataFrame(rows)


@st.cache_data(max_entries=1, show_spinner=False)  # the committed table's alone: built once per server
def verification_headline() -> str:
    """One sentence summarising the verification table."""
    from model_catalog import verification_summary
    from planner.engines.hf_transformers import TRANSFORMERS_VIEW_SENTENCE

    s = verification_summary()
    not_built = s["not_built"]
    unbuilt = (f"{len(not_built)} could not be built by transformers and are not verified "
               f"({', '.join(not_built)}: select a row for its reason)" if not_built else "every model was built")
    return (f"{s['params_exact']} of {s['models']} models match transformers {s['transformers_version']} "
            f"exactly on parameter count, and {s['kv_checks_exact']} of {s['kv_checks']} KV-cache measurements "
            f"on the {s['built']} models built (prefill and decode, below and above every window) match byte "
            f"for byte; {unbuilt} (generated {s['generated']}, torch {s['torch_version']}). Multimodal models "
            f"are checked on their language model (column \"counted\"). Where serving engines differ: "
            f"{TRANSFORMERS_VIEW_SENTENCE}")


def search(table: pd.DataFrame, query: str, columns: Sequence[str] = ("id", "name")) -> pd.DataFrame:
    """Rows whose ``columns`` contain every word of ``query`` (case-insensitive)."""
    import pandas as pd  # noqa: PLC0415 - lazily, see the TYPE_CHECKING import
    words = [w for w in (query or "").lower().split() if w]
    if not words:
        return table
    first, *rest = (table[c].astype(str) for c in columns)  # column-wise: a row-wise join took 15 ms a search
    text = first.str.cat(rest, sep=" ").str.lower()
    mask = pd.Series(True, index=table.index)
    for word in words:
        mask &= text.str.contains(word, regex=False)
    return table[mask]


CATALOG_TABLES: dict[str, tuple[Callable[[], pd.DataFrame], tuple[str, ...]]] = {
    "models": (model_table, ("id", "name", "aliases", "released")),
    "gpus": (gpu_table, ("id", "name", "vendor")),
    "verified": (verification_frame, ("id", "family", "released")),
}
"""The Catalog page's tables: builder and the columns its search box looks in."""


def search_words(query: str) -> tuple[str, ...]:
    """The words :func:`search` looks for, lowercased (``" Llama  70B"`` -> ``("llama", "70b")``): the key of
    :func:`catalog_search`, so a query typed in another case or spacing is the same search."""
    return tuple(w for w in (query or "").lower().split() if w)


@st.cache_resource(max_entries=96, ttl=3600, show_spinner=False)  # 3 tables x 32 recent searches
def catalog_search(kind: str, words: tuple[str, ...]) -> pa.Table:
    """The rows of catalog table ``kind`` (:data:`CATALOG_TABLES`) that hold every word, ready to draw.

    Built once per search and server: a rerun of the Catalog page for another search term, or back to one
    seen before, neither filters the table again nor converts it to Arrow (``st.dataframe`` converts a
    pandas frame on every call; an Arrow table is only written out). The table is immutable, so every
    session shares the one object (``st.cache_resource``; ``st.cache_data`` would copy it per call).

    The verification table lists the models the models table finds for the same words, by name and alias too
    (QA: "qwen3.6" listed Qwen3.5-27B, an alias match, on the models tab and not on the verified one), beside its
    own matches (family, release date).

    Args:
        kind: ``"models"``, ``"gpus"`` or ``"verified"``.
        words: :func:`search_words` of the query; empty = the whole table.

    Returns:
        A pyarrow table with the frame's columns, its index dropped (the page hides it).
    """
    import pyarrow as pa  # noqa: PLC0415 - lazily, with pandas

    build, columns = CATALOG_TABLES[kind]
    query, table = " ".join(words), build()
    found = search(table, query, columns)
    if kind == "models" and words:
        found = _alias_rows(found, words)
    if kind == "verified" and words:  # a model the models tab finds (by name or alias) is found here too
        by_model = set(search(model_table(), query, CATALOG_TABLES["models"][1])["id"])
        found = table[table["id"].isin(by_model | set(found["id"]))]
    return pa.Table.from_pandas(found, preserve_index=False)
