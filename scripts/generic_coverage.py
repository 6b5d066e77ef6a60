"""Dev-only: how many transformers model types the generic reading sizes exactly (needs torch).

For every causal-LM and image-text-to-text ``model_type`` transformers ships
(``MODEL_FOR_CAUSAL_LM_MAPPING_NAMES`` and ``MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES``),
this script takes the config class's defaults, shrinks the sizes that never reach
a cache (vocabulary 512, MLP and expert widths, 4 experts), builds the model with
shared random weights (:mod:`model_catalog.verify`), prefills 33 tokens and
decodes 3 more, and compares the bytes of every tensor transformers' cache then
holds with the ``transformers`` view of the *generic* reading
(:func:`model_catalog.generic.generic_spec`) of the same config, which uses no
family adapter. It also records how far the generic parameter estimate of the class's unshrunk
defaults lands from transformers' own count on the meta device (the source of
:data:`model_catalog.generic.PARAMS_EXPECTED_ERROR`).

Usage:
    python scripts/generic_coverage.py [--jobs 2] [--output docs/generic_coverage.md] [MODEL_TYPE ...]

Writes a Markdown table (one row per type) and prints "N of M model types exact".
Encoder-decoder and encoder-only types (no decoder cache) are skipped; types whose defaults cannot be
built or that the generic reading refuses are reported, not counted as exact.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHRUNK_SIZES = {"vocab_size": 512, "vocab_size_per_layer_input": 512, "intermediate_size": 64, "moe_intermediate_size": 32,
                "shared_expert_intermediate_size": 32, "ffn_hidden_size": 64}
"""Overrides applied when the default config has the key (cache shapes never depend on them)."""
EXPERT_KEYS = ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts")
PROMPT_TOKENS = 33


def model_types() -> list[str]:
    """Every causal-LM / image-text-to-text ``model_type`` of the installed transformers, sorted."""
    from transformers.models.auto.modeling_auto import (
        MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
        MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES,
    )

    return sorted(set(MODEL_FOR_CAUSAL_LM_MAPPING_NAMES) | set(MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES))


def _shrunk_raw(model_type: str) -> dict:
    """The config class defaults with :data:`SHRUNK_SIZES` applied, as a config.json dict."""
    from transformers import AutoConfig

    default = AutoConfig.for_model(model_type)
    text = default.get_text_config()
    overrides = {key: value for key, value in SHRUNK_SIZES.items() if isinstance(getattr(text, key, None), int)}
    for key in EXPERT_KEYS:
        if isinstance(getattr(text, key, None), int) and getattr(text, key) > 4:
            overrides[key] = 4
    for key in ("num_experts_per_tok", "top_k_experts", "moe_top_k"):
        if isinstance(getattr(text, key, None), int) and getattr(text, key) > 2:
            overrides[key] = 2
    for key in ("n_group", "topk_group", "num_expert_group"):  # expert groups must divide the 4 experts left
        if isinstance(getattr(text, key, None), int) and getattr(text, key) > 1:
            overrides[key] = 1
    for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
        if isinstance(getattr(text, key, None), int) and getattr(text, key) >= 512:
            overrides[key] = 0
    raw = default.to_dict()
    if text is default:
        raw.update(overrides)
    else:
        raw["text_config"] = {**text.to_dict(), **overrides}
    raw["model_type"] = model_type
    return raw


def _params_error(model_type: str) -> float | None:
    """Relative error of the generic parameter estimate on the *unshrunk* defaults (meta device), or None."""
    import torch

    from model_catalog.generic import generic_spec, read_any_config
    from model_catalog.hf_config import _quiet_transformers
    from model_catalog.verify import LANGUAGE_PREFIXES, _from_config

    try:
        with _quiet_transformers():
            from transformers import AutoConfig

            raw = {**AutoConfig.for_model(model_type).to_dict(), "model_type": model_type}
            text, full = read_any_config(raw)
            spec, _ = generic_spec(raw, model_type)
            with torch.device("meta"):
                model, text_only = _from_config(text, full)
        count = sum(p.numel() for name, p in model.named_parameters() if text_only or name.startswith(LANGUAGE_PREFIXES))
    except Exception:  # noqa: BLE001 - no estimate to compare
        return None
    return round(spec.num_parameters / count - 1, 4) if count else None


def check_type(model_type: str) -> dict:
    """One row: ``status`` (exact / mismatch / refused / unbuildable / skipped), bytes, parameter error."""
    import torch

    from model_catalog.generic import generic_spec, read_any_config
    from model_catalog.hf_config import _quiet_transformers
    from model_catalog.verify import (
        VERIFY_DTYPES,
        _from_config,
        _materialise_shared,
        _parameters_on_meta,
        run_generation,
    )
    from planner.engines.hf_transformers import transformers_cache_bytes

    row = {"model_type": model_type, "status": "", "reason": "", "planner_bytes": None, "transformers_bytes": None,
           "params_error": None}
    try:
        with _quiet_transformers():
            raw = _shrunk_raw(model_type)
            text, full = read_any_config(raw)
    except Exception as exc:  # noqa: BLE001 - every failure is a row
        return {**row, "status": "unbuildable", "reason": f"config: {type(exc).__name__}: {exc}"[:160]}
    if getattr(full, "is_encoder_decoder", False) or getattr(text, "is_encoder_decoder", False):
        return {**row, "status": "skipped", "reason": "encoder-decoder"}
    try:
        spec, _ = generic_spec(raw, model_type)
    except Exception as exc:  # noqa: BLE001
        return {**row, "status": "refused", "reason": f"{type(exc).__name__}: {exc}"[:160]}
    row["params_error"] = _params_error(model_type)
    try:
        with _quiet_transformers(), _parameters_on_meta():
            model, _ = _from_config(text, full, dtype=torch.bfloat16)
        _materialise_shared(model)
        results = run_generation(model.eval(), PROMPT_TOKENS)
    except Exception as exc:  # noqa: BLE001
        return {**row, "status": "unbuildable", "reason": f"run: {type(exc).__name__}: {exc}"[:160]}
    if all(measured.memory_bytes == 0 for _, _, measured in results) and not getattr(text, "is_decoder", True):
        return {**row, "status": "skipped", "reason": "encoder (is_decoder false: no cache)"}
    for phase, tokens, measured in results:
        view = transformers_cache_bytes(spec, tokens, VERIFY_DTYPES, phase=phase)
        if (view.tensor_bytes, view.memory_bytes) != (measured.tensor_bytes, measured.memory_bytes):
            return {**row, "status": "mismatch", "planner_bytes": view.memory_bytes,
                    "transformers_bytes": measured.memory_bytes,
                    "reason": f"{phase} N={tokens}: planner {view.tensor_bytes:,}/{view.memory_bytes:,} vs transformers "
                              f"{measured.tensor_bytes:,}/{measured.memory_bytes:,} B (tensor/memory); cache layers "
                              f"{measured.layer_classes}"}
    last = results[-1][2]
    if last.memory_bytes == 0 and not getattr(text, "is_decoder", True):
        return {**row, "status": "skipped", "reason": "encoder (is_decoder false: no cache)"}
    return {**row, "status": "exact", "planner_bytes": last.memory_bytes, "transformers_bytes": last.memory_bytes}


def _worker(model_type: str) -> dict:
    import torch

    torch.set_num_threads(1)
    started = time.perf_counter()
    row = check_type(model_type)
    print(f"{row['status']:11} {model_type} ({time.perf_counter() - started:.1f}s) {row['reason']}", flush=True)
    return row


def render(rows: list[dict], versions: str) -> str:
    exact = sum(r["status"] == "exact" for r in rows)
    counted = [r for r in rows if r["status"] != "skipped"]
    errors = sorted(abs(r["params_error"]) for r in rows if r["params_error"] is not None)
    median = errors[len(errors) // 2] if errors else None
    p90 = errors[int(0.9 * len(errors)) - 1] if errors else None
    lines = ["# Generic reading vs transformers' own caches", "",
             f"Generated by `python scripts/generic_coverage.py` with {versions}.",
             (f"**{exact} of {len(counted)} model types exact** (KV cache and recurrent state, tensor and memory "
              f"bytes after a {PROMPT_TOKENS}-token prefill and 3 decode steps, from each config class's defaults "
              f"with small MLP/expert widths and vocabulary); {len(rows) - len(counted)} encoder or encoder-decoder "
              "types skipped (no decoder cache)."),
             (f"Parameter estimate vs transformers' count on each class's unshrunk defaults: median error "
              f"{median:.1%}, 90th percentile {p90:.1%} over {len(errors)} types." if errors else ""), "",
             "| model_type | status | cache bytes (generic) | cache bytes (transformers) | parameter error | reason |",
             "|---|---|---:|---:|---:|---|"]
    for r in rows:
        fmt = (lambda v: "-" if v is None else f"{v:,}")
        err = "-" if r["params_error"] is None else f"{r['params_error']:+.1%}"
        lines.append(f"| {r['model_type']} | {r['status']} | {fmt(r['planner_bytes'])} | {fmt(r['transformers_bytes'])} "
                     f"| {err} | {r['reason'].replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("types", nargs="*", help="model types to check (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path, default=ROOT / "docs" / "generic_coverage.md")
    args = parser.parse_args(argv)
    import torch
    import transformers

    types = args.types or model_types()
    if args.jobs > 1:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            rows = list(pool.map(_worker, types))
    else:
        rows = [_worker(t) for t in types]
    versions = f"transformers {transformers.__version__}, torch {torch.__version__.split('+')[0]}"
    text = render(rows, versions)
    if not args.types:
        args.output.write_text(text, encoding="utf-8")
        print(f"wrote {args.output}")
    exact = sum(r["status"] == "exact" for r in rows)
    print(f"{exact} of {sum(r['status'] != 'skipped' for r in rows)} model types exact ({versions})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
