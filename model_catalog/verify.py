"""Prove the planner's numbers against transformers itself (dev-only: needs torch).

For every catalog model this module

1. builds ``AutoModelForCausalLM.from_config(text_config)`` on the meta device
   and compares ``sum(p.numel() for p in model.parameters())`` with the
   planner's language model (``text_only(model_spec(id)).num_parameters``): must be exactly
   equal; for a multimodal model it also builds ``AutoModelForImageTextToText.from_config(config)``
   and compares the whole model (towers and projectors included) with ``model_spec(id).num_parameters``;
2. builds a shrunken copy of the same architecture, runs a prefill of ``N``
   tokens and :data:`DECODE_STEPS` decode steps with the cache transformers
   creates for it, sums the bytes of every tensor that cache holds after each
   step, and compares them with the planner's ``transformers`` view
   (:mod:`planner.engines.hf_transformers`) at the same token count: must be exactly equal,
   both the tensor bytes and the bytes of the storages they keep alive.

torch and transformers are imported inside functions only, so importing this
module (or ``planner``) never needs them. ``python -m planner verify`` writes the
table to ``model_catalog/verification.json`` and renders
``model_catalog/VERIFICATION.md``.

The shrinking and building live in :mod:`model_catalog.verify_build`, the table's rendering, staleness
and merging in :mod:`model_catalog.verify_table` (both re-exported here).

Design notes (assumptions):
    1. *What is shrunk.* Only sizes that never reach a cache tensor: the hidden
       width (where the family reads ``head_dim`` from the config, so K/V stay
       ``num_key_value_heads x head_dim``; Jamba keeps ``d_inner`` by raising
       ``mamba_expand``), MLP / expert widths, the vocabulary, the expert count
       (4 routed, 2 per token), ``q_lora_rank`` and Mamba's ``dt_rank``. Layer
       count, ``layer_types``, KV heads, head dims, windows, chunk sizes, MLA
       ``kv_lora_rank`` / ``qk_rope_head_dim`` and recurrent-state shapes stay
       real. GPT-2 / GPT-J / GPT-NeoX / Falcon derive ``head_dim`` from the hidden
       width, so they keep their real width (note 2 keeps that cheap).
    2. *Weights.* Parameters are created on the meta device and then
       materialised with one shared random tensor per distinct shape (norm-like
       1-D tensors are ones). Cache shapes never depend on weight values, and
       sharing keeps GPT-NeoX-20B's real 6,144-wide layers at a few hundred MB.
       Buffers (RoPE frequencies) are the model's own.
    3. *Attention kernel.* Runs of at most :data:`REAL_ATTENTION_MAX_TOKENS`
       tokens use the model's default kernel (sdpa or eager, masks and all).
       Longer runs (windows of 1,024 - 8,192 tokens) use a registered stand-in
       kernel that returns zeros of the right shape: the K/V projections, RoPE,
       ``cache.update`` and the window slicing are transformers' own code; only
       the quadratic ``softmax(QK^T)V``, whose values never reach the cache, is
       skipped. The table records the kernel of every run.
    4. *Token counts.* Every model runs ``N = 33`` (prefill, then 3 decode
       steps). For every sliding window or chunk ``w`` it also runs
       ``N = w - 2`` (the decode steps cross ``w - 1`` and ``w``) and
       ``N = w + 100`` (prefill beyond the window).
    5. *What is summed.* Every tensor reachable from the cache object
       (keys, values, MLA latents, conv and recurrent states, indexer keys):
       ``numel x element size`` (tensor bytes) and the distinct storages they
       pin (memory bytes). 0-d tensors (``_sliding_window_tensor``, 8 B per
       sliding layer) are bookkeeping and reported separately.
    6. *dtype.* The model runs in bf16; the planner side uses
       ``CacheDtypes(kv=bf16, state=bf16)`` (recurrent states are fp32 in the
       transformers view, as transformers keeps them).

Sources: transformers 5.24 models/auto/auto_factory.py (``from_config``),
cache_utils.py (``DynamicCache``, ``DynamicLayer``, ``DynamicSlidingWindowLayer``,
``LinearAttentionLayer``), modeling_utils.py (``AttentionInterface``);
:mod:`planner.engines.hf_transformers` for the rules checked.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from planner.engines.hf_transformers import transformers_cache_bytes
from planner.model.dtypes import BF16
from planner.model.layers import CacheDtypes

from model_catalog.verify_table import (  # noqa: F401  (re-exported)
    BY_SOURCE,
    DEFAULT_MARKDOWN_PATH,
    DEFAULT_TABLE_PATH,
    VOLATILE_KEYS,
    deterministic,
    merged_table,
    render_markdown,
    stale_reasons,
    write_table,
)
from model_catalog.verify_build import (  # noqa: F401  (re-exported: scripts and tests import them from here)
    EXPLICIT_HEAD_DIM_FAMILIES,
    LANGUAGE_PREFIXES,
    MLA_FAMILIES,
    PER_LAYER_HEAD_FAMILIES,
    SHARED_WEIGHT_STD,
    SHRUNK_DT_RANK,
    SHRUNK_EXPERT_FFN,
    SHRUNK_EXPERTS,
    SHRUNK_EXPERTS_PER_TOKEN,
    SHRUNK_FFN,
    SHRUNK_HIDDEN,
    SHRUNK_LORA_RANK,
    SHRUNK_VOCAB,
    STUB_ATTENTION,
    _from_config,
    build_shrunken_model,
    shrink_overrides,
    shrunken_config,
    shrunken_full_config,
    transformers_full_parameter_count,
    transformers_parameter_count,
)

BASE_TOKENS = 33
"""Prompt length every model is verified at [tokens]."""
DECODE_STEPS = 3
"""Decode steps after each prefill; the cache is measured after every step."""
WINDOW_ABOVE_TOKENS = 100
"""Prefill this many tokens beyond each window [tokens] (design note 4)."""
REAL_ATTENTION_MAX_TOKENS = 1024
"""Runs up to this prompt length use the model's own attention kernel (design note 3)."""
VERIFY_DTYPES = CacheDtypes(kv=BF16, state=BF16)
"""Planner-side element formats matching the bf16 runs (design note 6)."""



@dataclass(frozen=True, kw_only=True)
class KVCheck:
    """One measurement: the cache after a prefill or a decode step.

    Attributes:
        phase: ``prefill`` or ``decode``.
        prompt_tokens: Prefill length of the run [tokens].
        num_tokens: Tokens in the sequence when measured [tokens].
        attention: Attention kernel of the run (design note 3).
        planner_tensor_bytes, transformers_tensor_bytes: Tensor bytes [bytes].
        planner_memory_bytes, transformers_memory_bytes: Storage bytes [bytes].
        scalar_bytes: 0-d bookkeeping tensors in the cache [bytes].
    """

    phase: str
    prompt_tokens: int
    num_tokens: int
    attention: str
    planner_tensor_bytes: int
    transformers_tensor_bytes: int
    planner_memory_bytes: int
    transformers_memory_bytes: int
    scalar_bytes: int

    @property
    def exact(self) -> bool:
        return (self.planner_tensor_bytes == self.transformers_tensor_bytes
                and self.planner_memory_bytes == self.transformers_memory_bytes)


@dataclass(frozen=True, kw_only=True)
class ModelVerification:
    """One row of the verification table.

    Attributes:
        model_id, family, model_class: What was built (``family`` is the text
            config's ``model_type``).
        params_planner, params_transformers: Parameter counts of the language model (None if not built).
        full_params_planner, full_params_transformers: Of a multimodal model, the whole
            ``*ForConditionalGeneration`` (language model + towers + projectors, what vLLM loads by
            default; :mod:`model_catalog.families_multimodal`); None for text models.
        kv_checks: Every cache measurement.
        cache_layers: Cache layer classes transformers created, with counts.
        status: ``exact``, ``mismatch``, ``unverifiable`` or ``by source`` (a ``model_type``
            transformers has no config class for, read through a cited mapping; the
            mapped architecture's checks are kept when transformers can build it).
        reason: Why not exact (empty when exact).
    """

    model_id: str
    family: str
    model_class: str
    params_planner: int
    params_transformers: int | None
    kv_checks: tuple[KVCheck, ...] = ()
    cache_layers: dict[str, int] = field(default_factory=dict)
    status: str = "exact"
    reason: str = ""
    full_params_planner: int | None = None
    full_params_transformers: int | None = None

    @property
    def params_exact(self) -> bool:
        return self.params_transformers == self.params_planner and \
            self.full_params_transformers == self.full_params_planner

    @property
    def kv_exact(self) -> bool:
        return bool(self.kv_checks) and all(check.exact for check in self.kv_checks)

    def to_dict(self) -> dict:
        out = asdict(self)
        out["kv_checks"] = [asdict(check) | {"exact": check.exact} for check in self.kv_checks]
        out["params_exact"] = self.params_exact
        out["kv_exact"] = self.kv_exact
        if self.full_params_planner is None and self.full_params_transformers is None:
            del out["full_params_planner"], out["full_params_transformers"]  # text models: rows as before
        return out


# --- token plan --------------------------------------------------------------------------


def verification_windows(spec: Any) -> tuple[int, ...]:
    """Every token count at which a layer's cache changes shape [tokens], sorted.

    The model's sliding windows and chunks (``ModelSpec.sliding_windows``), plus
    the window and compression ratio of DeepSeek-V4's compressed layers
    (:class:`planner.model.sparse.CompressedAttention`).
    """
    from planner.model.sparse import CompressedAttention

    windows = set(spec.sliding_windows)
    for layer in spec.layers:
        if isinstance(layer, CompressedAttention):
            windows.update({layer.sliding_window, layer.compress_ratio})
    return tuple(sorted(windows))


def prompt_lengths(windows: Iterable[int]) -> tuple[int, ...]:
    """Prefill lengths for a model with these sliding windows / chunks (design note 4).

    Example: ``prompt_lengths([4096])`` is ``(33, 4094, 4196)``.
    """
    lengths = {BASE_TOKENS}
    for window in windows:
        lengths.update({max(1, window - 2), window + WINDOW_ABOVE_TOKENS})
    return tuple(sorted(lengths))


# --- cache measurement -------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class CacheMeasurement:
    """Bytes a cache object holds (design note 5).

    Attributes:
        tensor_bytes: ``numel x element size`` over non-0-d tensors [bytes].
        memory_bytes: Distinct storages pinned by them [bytes].
        scalar_bytes: 0-d tensors [bytes].
        layer_classes: Cache layer class name -> count.
    """

    tensor_bytes: int
    memory_bytes: int
    scalar_bytes: int
    layer_classes: dict[str, int]


def _cache_tensors(obj: Any, seen: set[int], out: list) -> None:
    """Collect every tensor reachable from ``obj`` through transformers objects and containers."""
    import torch

    if isinstance(obj, torch.Tensor):
        out.append(obj)
        return
    if isinstance(obj, dict):
        for value in obj.values():
            _cache_tensors(value, seen, out)
        return
    if isinstance(obj, (list, tuple)):
        for value in obj:
            _cache_tensors(value, seen, out)
        return
    if id(obj) in seen or isinstance(obj, type) or not type(obj).__module__.startswith("transformers."):
        return
    seen.add(id(obj))
    for value in vars(obj).values():
        _cache_tensors(value, seen, out)


def measure_cache(cache: Any) -> CacheMeasurement:
    """Sum the bytes of every tensor a transformers cache holds (design note 5)."""
    tensors: list = []
    _cache_tensors(cache, set(), tensors)
    tensor_bytes = scalar_bytes = 0
    storages: dict[int, int] = {}
    for tensor in tensors:
        size = tensor.numel() * tensor.element_size()
        if tensor.dim() == 0:
            scalar_bytes += size
            continue
        tensor_bytes += size
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
    classes: dict[str, int] = {}
    for layer in getattr(cache, "layers", ()):
        classes[type(layer).__name__] = classes.get(type(layer).__name__, 0) + 1
    return CacheMeasurement(tensor_bytes=tensor_bytes, memory_bytes=sum(storages.values()),
                            scalar_bytes=scalar_bytes, layer_classes=dict(sorted(classes.items())))


def _output_cache(output: Any) -> Any:
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def run_generation(model: Any, prompt_tokens: int, decode_steps: int = DECODE_STEPS) -> list[tuple[str, int, CacheMeasurement]]:
    """Prefill ``prompt_tokens`` random ids, then greedy-free decode steps; measure after each.

    Uses the model's own forward with ``use_cache=True``: the first call lets the
    model create its cache (``DynamicCache(config=...)``), later calls pass it back.

    Returns:
        ``(phase, tokens in the sequence, measurement)`` per step.
    """
    import inspect

    import torch

    from model_catalog.hf_config import _quiet_transformers

    cache_kwarg = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    generator = torch.Generator().manual_seed(prompt_tokens)
    vocab = model.config.get_text_config().vocab_size
    ids = torch.randint(0, vocab, (1, prompt_tokens + decode_steps), generator=generator)
    results = []
    with torch.no_grad(), _quiet_transformers():  # silences the CPU-fallback kernel notices
        output = model(input_ids=ids[:, :prompt_tokens], use_cache=True)
        cache = _output_cache(output)
        results.append(("prefill", prompt_tokens, measure_cache(cache)))
        for step in range(decode_steps):
            position = prompt_tokens + step
            output = model(input_ids=ids[:, position:position + 1], use_cache=True, **{cache_kwarg: cache})
            cache = _output_cache(output)
            results.append(("decode", position + 1, measure_cache(cache)))
    return results


# --- one model ---------------------------------------------------------------------------


def verify_model(model_id: str, log: Callable[[str], None] | None = None) -> ModelVerification:
    """Verify one catalog model: parameters on meta, cache bytes on a shrunken copy.

    Never raises for a model transformers cannot build or run: the row comes back
    ``unverifiable`` with the reason.
    """
    from model_catalog import get_model_entry, model_spec
    from model_catalog.hf_config import ADAPTERS, read_config
    from planner.serving.multimodal import is_multimodal, text_only

    full_spec = model_spec(model_id)
    spec = text_only(full_spec)  # the language model; the towers are checked on the whole model below
    family, model_class, params = spec.model_type, "", None
    reading = read_config(get_model_entry(model_id).config)
    by_source = reading.by_source
    multimodal = is_multimodal(full_spec)
    full = {"full_params_planner": full_spec.num_parameters} if multimodal else {}
    if by_source is not None and reading.model_type in ADAPTERS:
        return ModelVerification(model_id=model_id, family=family, model_class=by_source.architecture,
                                 params_planner=spec.num_parameters, params_transformers=None, status=BY_SOURCE,
                                 reason=f"no transformers class for {reading.model_type!r}: {by_source.source}", **full)
    try:
        cfg = reading.text
        params, model_class = transformers_parameter_count(cfg, reading.full)
        if multimodal:
            full["full_params_transformers"] = transformers_full_parameter_count(reading.full)
        small = shrunken_config(cfg, spec.head_dim)
        small_full = shrunken_full_config(reading.full, cfg, small)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a table row
        status, why = (BY_SOURCE, _by_source_reason(reading)) if by_source else ("unverifiable", "")
        return ModelVerification(model_id=model_id, family=family, model_class=model_class,
                                 params_planner=spec.num_parameters, params_transformers=params, status=status,
                                 reason=f"{why}build failed: {type(exc).__name__}: {exc}", **full)
    checks: list[KVCheck] = []
    classes: dict[str, int] = {}
    models: dict[str | None, Any] = {}
    try:
        for prompt in prompt_lengths(verification_windows(spec)):
            attention = None if prompt <= REAL_ATTENTION_MAX_TOKENS else STUB_ATTENTION
            if attention not in models:
                models[attention] = build_shrunken_model(small, attention, small_full)
            model = models[attention]
            kernel = model.config._attn_implementation
            started = time.perf_counter()
            for phase, tokens, measured in run_generation(model, prompt):
                view = transformers_cache_bytes(spec, tokens, VERIFY_DTYPES, phase=phase)
                checks.append(KVCheck(
                    phase=phase, prompt_tokens=prompt, num_tokens=tokens, attention=kernel,
                    planner_tensor_bytes=view.tensor_bytes, transformers_tensor_bytes=measured.tensor_bytes,
                    planner_memory_bytes=view.memory_bytes, transformers_memory_bytes=measured.memory_bytes,
                    scalar_bytes=measured.scalar_bytes))
                classes = measured.layer_classes
            if log:
                log(f"  {model_id}: N={prompt} ({kernel}) {time.perf_counter() - started:.1f}s")
    except Exception as exc:  # noqa: BLE001
        status, why = (BY_SOURCE, _by_source_reason(reading)) if by_source else ("unverifiable", "")
        return ModelVerification(model_id=model_id, family=family, model_class=model_class,
                                 params_planner=spec.num_parameters, params_transformers=params,
                                 kv_checks=tuple(checks), cache_layers=classes, status=status,
                                 reason=f"{why}run failed: {type(exc).__name__}: {exc}", **full)
    row = ModelVerification(model_id=model_id, family=family, model_class=model_class,
                            params_planner=spec.num_parameters, params_transformers=params,
                            kv_checks=tuple(checks), cache_layers=classes, **full)
    reasons = []
    if row.params_transformers != row.params_planner:
        reasons.append(f"parameters: planner {row.params_planner:,} vs transformers {row.params_transformers:,}")
    if row.full_params_transformers != row.full_params_planner:
        reasons.append(f"whole multimodal model: planner {row.full_params_planner:,} vs transformers "
                       f"{row.full_params_transformers:,}")
    bad = [c for c in checks if not c.exact]
    if bad:
        c = bad[0]
        reasons.append(f"KV at {c.phase} N={c.num_tokens}: planner {c.planner_tensor_bytes:,}/"
                       f"{c.planner_memory_bytes:,} vs transformers {c.transformers_tensor_bytes:,}/"
                       f"{c.transformers_memory_bytes:,} B (tensor/memory)")
    if by_source is not None:
        verdict = "mapped architecture exact" if not reasons else "mapped architecture differs: " + "; ".join(reasons)
        return ModelVerification(**{**row.__dict__, "status": BY_SOURCE, "reason": _by_source_reason(reading) + verdict})
    if reasons:
        row = ModelVerification(**{**row.__dict__, "status": "mismatch", "reason": "; ".join(reasons)})
    return row




def _by_source_reason(reading: Any) -> str:
    by_source = reading.by_source
    return (f"no transformers config class for {reading.model_type!r}; read as {by_source.read_as} "
            f"({by_source.source}); ")


# --- the table ---------------------------------------------------------------------------


def library_versions() -> dict[str, str]:
    """``{"transformers": ..., "torch": ...}`` as installed."""
    import torch
    import transformers

    return {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0]}


def _timed_verify(model_id: str, log: Callable[[str], None] | None) -> ModelVerification:
    started = time.perf_counter()
    row = verify_model(model_id, log)
    if log:
        log(f"{row.status:12} {model_id} ({time.perf_counter() - started:.1f}s) {row.reason}")
    return row


def _worker_init() -> None:
    """One torch thread per worker process: the runs are many small ops, where a second
    OpenMP thread costs more in synchronisation than it saves (and oversubscribes 2-core CI)."""
    import torch

    torch.set_num_threads(1)


def _worker_verify(model_id: str) -> ModelVerification:
    return _timed_verify(model_id, print)


def _cost(model_id: str) -> int:
    """Rough cost for scheduling: longest windows first (they run the most tokens)."""
    from model_catalog import model_spec

    spec = model_spec(model_id)
    return sum(prompt_lengths(verification_windows(spec))) * spec.num_layers


def verify_models(model_ids: Sequence[str], log: Callable[[str], None] | None = None,
                  jobs: int = 1) -> list[ModelVerification]:
    """Verify each model; with ``jobs > 1`` in that many worker processes of one torch thread each.

    Rows come back in the order of ``model_ids``.
    """
    if jobs <= 1 or len(model_ids) <= 1:
        _worker_init()
        return [_timed_verify(model_id, log) for model_id in model_ids]
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    order = sorted(model_ids, key=_cost, reverse=True)
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=jobs, mp_context=context, initializer=_worker_init) as pool:
        rows = dict(zip(order, pool.map(_worker_verify, order)))
    return [rows[model_id] for model_id in model_ids]


def default_jobs() -> int:
    """Worker processes for a full run: one per core, at most 2 (the CI machine's cores)."""
    import os

    return max(1, min(2, os.cpu_count() or 1))


def build_table(rows: Sequence[ModelVerification], versions: dict[str, str], today: str | None = None) -> dict:
    """The JSON document written to ``model_catalog/verification.json``."""
    checks = [check for row in rows for check in row.kv_checks]
    return {
        "generated": today or _dt.date.today().isoformat(),
        "transformers_version": versions["transformers"],
        "torch_version": versions["torch"],
        "dtype": "bf16",
        "method": {
            "params": ("AutoModelForCausalLM.from_config(text_config) on torch.device('meta'); sum(p.numel()); "
                       "multimodal models also AutoModelForImageTextToText.from_config(config), the whole model "
                       "vLLM loads by default (language model + towers + projectors)"),
            "kv": (f"shrunken copy (same layers, layer_types, KV heads, head_dim, windows, MLA ranks, recurrent "
                   f"state shapes); prefill N then {DECODE_STEPS} decode steps; every tensor of the cache summed "
                   f"after each step; kernels: model default for N <= {REAL_ATTENTION_MAX_TOKENS}, "
                   f"'{STUB_ATTENTION}' above"),
            "view": "planner.engines.hf_transformers.transformers_cache_bytes (the 'transformers' view)",
        },
        "summary": {
            "models": len(rows),
            "params_exact": sum(row.params_exact for row in rows),
            "kv_exact": sum(row.kv_exact for row in rows),
            "exact": sum(row.status == "exact" for row in rows),
            "by_source": sum(row.status == BY_SOURCE for row in rows),
            "mismatch": sum(row.status == "mismatch" for row in rows),
            "unverifiable": sum(row.status == "unverifiable" for row in rows),
            "kv_checks": len(checks),
            "kv_checks_exact": sum(check.exact for check in checks),
        },
        "models": [row.to_dict() for row in sorted(rows, key=lambda r: r.model_id)],
    }


def run_verify(model_ids: Sequence[str] | None = None, *, output: Path | None = DEFAULT_TABLE_PATH,
               check: bool = False, jobs: int | None = None, log: Callable[[str], None] = print) -> int:
    """Entry point of ``python -m planner verify``.

    Args:
        model_ids: Models to verify; None = the whole catalog.
        output: Table path to write (and, with ``check``, to compare with).
        check: Compare with the table at ``output`` instead of writing it.
        jobs: Worker processes (None = :func:`default_jobs`).
        log: Progress printer.

    Returns:
        0 when every model is exact (and, with ``check``, the table is current),
        1 otherwise; 2 when torch is missing.
    """
    try:
        versions = library_versions()
    except ImportError as exc:
        log(f"error: verification needs torch and transformers (pip install -r requirements-dev.txt): {exc}")
        return 2
    from model_catalog import model_ids as catalog_ids

    committed_path = Path(output or DEFAULT_TABLE_PATH)
    if check and not committed_path.is_file():
        log(f"stale: {committed_path} does not exist; run `python -m planner verify` to write it")
        return 1
    ids = list(model_ids) if model_ids else list(catalog_ids())
    started = time.perf_counter()
    rows = verify_models(ids, log, jobs=default_jobs() if jobs is None else jobs)
    table = build_table(rows, versions)
    s = table["summary"]
    log(f"{s['exact']}/{s['models']} exact, {s['by_source']} by source (params {s['params_exact']}, "
        f"KV {s['kv_exact']}; {s['kv_checks_exact']}/{s['kv_checks']} measurements) in "
        f"{time.perf_counter() - started:.0f}s with transformers {versions['transformers']}, torch {versions['torch']}")
    failed = s["exact"] + s["by_source"] != s["models"]
    if check:
        committed = json.loads(committed_path.read_text(encoding="utf-8"))
        if model_ids:  # a subset: compare its rows (and the versions), not the catalog-wide summary
            wanted = set(ids)
            committed = {**committed, "summary": None,
                         "models": [r for r in committed["models"] if r["model_id"] in wanted]}
            table = {**table, "summary": None}
        reasons = stale_reasons(table, committed)
        for reason in reasons:
            log(f"stale: {reason}")
        return 1 if failed or reasons else 0
    if output is not None and model_ids and committed_path.is_file():
        table = merged_table(json.loads(committed_path.read_text(encoding="utf-8")), table)
    if output is not None:
        write_table(table, Path(output), Path(output).with_name("VERIFICATION.md"))
        log(f"wrote {output}")
    return 1 if failed else 0
