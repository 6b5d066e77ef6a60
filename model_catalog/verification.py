"""Read the committed verification table (``model_catalog/verification.json``), no torch needed.

``python -m planner verify`` (dev-only, needs torch) writes the table: for every
catalog model the parameter count and the KV-cache bytes the planner predicts
next to what transformers itself builds and caches. The app's Catalog page shows
it through :func:`verification_table` (one flat row per model) and
:func:`verification_checks` (one row per measurement).
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

VERIFICATION_PATH = Path(__file__).resolve().parent / "verification.json"
"""The committed table."""


@lru_cache(maxsize=4)
def load_verification(path: Path = VERIFICATION_PATH) -> MappingProxyType:
    """The whole table document (read-only mapping), cached.

    Raises:
        ValueError: the file is missing or not valid JSON (the message says how to rebuild it).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{path} is missing; run `python -m planner verify` (needs requirements-dev.txt)") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc}); run `python -m planner verify`") from None
    return MappingProxyType(data)


def _status_text(row: dict[str, Any]) -> str:
    return row["status"] + (f" ({row['reason']})" if row.get("reason") else "")


def verification_table(path: Path = VERIFICATION_PATH) -> tuple[dict[str, Any], ...]:
    """One flat row per model, in model-id order.

    Keys: ``model_id``, ``family``, ``params_planner``, ``params_transformers``,
    ``params_exact``, ``prompt_tokens`` (the prefill lengths run, a tuple),
    ``kv_checks`` (measurements), ``kv_checks_exact``, ``kv_exact``,
    ``kv_bytes_planner`` / ``kv_bytes_transformers`` (memory bytes at the
    longest sequence measured), ``status`` (``exact`` / ``mismatch`` /
    ``unverifiable``), ``status_text`` (with the reason), ``reason``, ``built`` (transformers built the
    model: a parameter count or a KV measurement exists), ``transformers_version``, ``torch_version``,
    ``generated`` (date).
    """
    table = load_verification(path)
    rows = []
    for row in table["models"]:
        checks = row["kv_checks"]
        last = max(checks, key=lambda c: (c["num_tokens"], c["phase"] == "decode")) if checks else None
        rows.append({
            "model_id": row["model_id"],
            "family": row["family"],
            "params_planner": row["params_planner"],
            "params_transformers": row["params_transformers"],
            "params_exact": row["params_exact"],
            "prompt_tokens": tuple(sorted({c["prompt_tokens"] for c in checks})),
            "kv_checks": len(checks),
            "kv_checks_exact": sum(c["exact"] for c in checks),
            "kv_exact": row["kv_exact"],
            "kv_bytes_planner": last["planner_memory_bytes"] if last else None,
            "kv_bytes_transformers": last["transformers_memory_bytes"] if last else None,
            "status": row["status"],
            "status_text": _status_text(row),
            "reason": row.get("reason", ""),
            "built": row["params_transformers"] is not None or bool(checks),
            "transformers_version": table["transformers_version"],
            "torch_version": table["torch_version"],
            "generated": table["generated"],
        })
    return tuple(rows)


def verification_checks(model_id: str | None = None, path: Path = VERIFICATION_PATH) -> tuple[dict[str, Any], ...]:
    """One row per measurement (phase, N, kernel, planner vs transformers tensor and memory bytes).

    Args:
        model_id: Only this model's measurements; None = all.
    """
    table = load_verification(path)
    return tuple(
        {"model_id": row["model_id"], **check}
        for row in table["models"]
        if model_id is None or row["model_id"] == model_id
        for check in row["kv_checks"]
    )


def verification_summary(path: Path = VERIFICATION_PATH) -> dict[str, Any]:
    """Counts (``models``, ``params_exact``, ``kv_exact``, ``exact``, ``unverifiable``,
    ``kv_checks``, ``kv_checks_exact``) plus versions and date, and from the rows themselves:
    ``not_built`` (ids transformers could not build, so nothing of them was checked) and ``built``
    (their count's complement)."""
    table = load_verification(path)
    rows = verification_table(path)
    not_built = tuple(r["model_id"] for r in rows if not r["built"])
    return {**table["summary"], "transformers_version": table["transformers_version"],
            "torch_version": table["torch_version"], "generated": table["generated"],
            "not_built": not_built, "built": len(rows) - len(not_built)}
