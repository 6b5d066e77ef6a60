"""The committed ModelSpec snapshot (``model_catalog/spec_snapshot.json``) is current and exact.

The app reads catalog specs from the snapshot so a cold server does not
import transformers (:mod:`model_catalog.spec_snapshot`). These tests fail
when the snapshot is stale (a model or the spec-building code changed): run
``python scripts/snapshot_model_specs.py`` and commit the file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import model_catalog
from model_catalog import spec_snapshot
from model_catalog.hf_config import model_spec_from_config
from model_catalog.model_registry import load_catalog

ROOT = Path(__file__).resolve().parents[1]
REGENERATE = "run `python scripts/snapshot_model_specs.py` and commit model_catalog/spec_snapshot.json"
ENTRIES = sorted(load_catalog().entries.values(), key=lambda e: e.id)


def test_snapshot_covers_every_catalog_model_and_is_current():
    stale = [e.id for e in ENTRIES
             if spec_snapshot.lookup(e.id, e.display_name, e.config, hf_quant_config=e.hf_quant_config) is None]
    assert not stale, f"spec snapshot stale or missing for {len(stale)} models ({', '.join(stale[:5])} ...); " \
                      f"{REGENERATE}"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_snapshot_spec_equals_the_transformers_built_spec(entry):
    fresh = model_spec_from_config(entry.config, entry.id, display_name=entry.display_name,
                                   hf_quant_config=entry.hf_quant_config)
    stored = spec_snapshot.lookup(entry.id, entry.display_name, entry.config, hf_quant_config=entry.hf_quant_config)
    assert stored is not None, REGENERATE
    assert stored == fresh, REGENERATE
    assert spec_snapshot.encode(stored) == spec_snapshot.encode(fresh), "fields outside __eq__ differ too"
    assert model_catalog.model_spec(entry.id) == fresh


def test_changed_config_or_code_is_not_served_from_the_snapshot(monkeypatch):
    entry = next(e for e in ENTRIES if e.id == "meta-llama/Llama-2-7b-hf")
    assert spec_snapshot.lookup(entry.id, entry.display_name, entry.config) is not None
    edited = dict(entry.config, num_key_value_heads=8)
    assert spec_snapshot.lookup(entry.id, entry.display_name, edited) is None
    assert spec_snapshot.lookup(entry.id, "renamed", entry.config) is None
    quantized = next(e for e in ENTRIES if e.id == "nvidia/Qwen3-235B-A22B-NVFP4")
    assert spec_snapshot.lookup(quantized.id, quantized.display_name, quantized.config) is None  # hf_quant_config counts
    monkeypatch.setattr(spec_snapshot, "sources_sha256", lambda: "0" * 64)
    assert spec_snapshot.lookup(entry.id, entry.display_name, entry.config) is None


def test_encoding_round_trips_runs_and_fractions():
    spec = model_catalog.model_spec("google/gemma-3-27b-it") if "google/gemma-3-27b-it" in model_catalog.model_ids() \
        else model_catalog.model_spec(ENTRIES[0].id)
    data = spec_snapshot.encode(spec)
    assert spec_snapshot.decode(data) == spec
    assert spec_snapshot.encode(spec_snapshot.decode(data)) == data
    with pytest.raises(TypeError, match="cannot store"):
        spec_snapshot.encode({"a": 1})


def test_every_page_runs_without_importing_transformers():
    """A fresh interpreter runs every page (AppTest) and never imports transformers: the cold-start saving."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"root = Path({str(ROOT)!r})\n"
        "for page in [root / 'app.py', *sorted((root / 'pages').glob('*.py'))]:\n"
        "    at = AppTest.from_file(str(page), default_timeout=60).run()\n"
        "    assert not at.exception, (page, [e.value for e in at.exception])\n"
        "print('transformers' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "False", f"transformers was imported; {REGENERATE}"


def _project_imports(path: Path) -> set[str]:
    """Repository files (``planner/``, ``model_catalog/``) that ``path`` imports at module level or inside
    functions, as paths from the repository root."""
    import ast

    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] not in ("planner", "model_catalog"):
                continue
            for candidate in (ROOT / (name.replace(".", "/") + ".py"), ROOT / name.replace(".", "/") / "__init__.py"):
                if candidate.exists():
                    found.add(candidate.relative_to(ROOT).as_posix())
                    break
    return found


def test_every_module_the_spec_builder_imports_is_hashed():
    """A spec-building module left out of DERIVATION_SOURCES would let an edit serve stale specs (the vision
    towers of multimodal entries were: ``families_multimodal.py`` and ``planner/serving/``)."""
    seen, todo = set(), ["model_catalog/hf_config.py"]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(_project_imports(ROOT / name))
    missing = sorted(seen - set(spec_snapshot.DERIVATION_SOURCES))
    assert not missing, f"add to model_catalog/spec_snapshot.DERIVATION_SOURCES: {missing}; then {REGENERATE}"
