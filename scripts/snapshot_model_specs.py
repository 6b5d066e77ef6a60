"""Regenerate ``model_catalog/spec_snapshot.json``: every catalog model's ModelSpec, built through transformers.

Usage: ``python scripts/snapshot_model_specs.py`` (after adding or editing a
model, or changing the spec-building code; ``tests/test_spec_snapshot.py``
says when). ``--check`` only reports whether the committed snapshot is
current (exit 1 when stale).

The app then loads these specs without importing transformers
(:mod:`model_catalog.spec_snapshot`); a stale entry is ignored there and the
spec is built through transformers as before.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from model_catalog import spec_snapshot  # noqa: E402
from model_catalog.hf_config import model_spec_from_config  # noqa: E402
from model_catalog.model_registry import load_catalog  # noqa: E402


def fresh_spec(entry):
    """The spec of a catalog entry, built through transformers (never from the snapshot)."""
    return model_spec_from_config(entry.config, entry.id, display_name=entry.display_name,
                                  hf_quant_config=entry.hf_quant_config)


def stale_models() -> list[str]:
    """Catalog ids whose snapshot entry is missing or not current (all of them when the code changed)."""
    return [e.id for e in load_catalog().entries.values()
            if spec_snapshot.lookup(e.id, e.display_name, e.config, hf_quant_config=e.hf_quant_config) is None]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale entries")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_models()
        print(f"{len(stale)} stale or missing: {', '.join(stale)}" if stale else "spec snapshot is current")
        return 1 if stale else 0
    doc = spec_snapshot.build(load_catalog().entries.values(), fresh_spec)
    spec_snapshot.write(doc)
    size = spec_snapshot.SNAPSHOT_PATH.stat().st_size
    print(f"wrote {spec_snapshot.SNAPSHOT_PATH.relative_to(ROOT)}: {len(doc['models'])} models, {size:,} bytes "
          f"(transformers {doc['transformers_version']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
