"""planner/ stays pure: no Streamlit, pydantic or transformers in its computation modules, and its folders layer.

Computation modules (``model/``, ``engines/``, ``traffic/``, ``budget.py``, ``sweep.py`` and
the other top-level modules) import none of :data:`FORBIDDEN`, anywhere in the file.
``cli/`` and ``__main__.py`` are the edge: they may import the catalog inside functions,
never at module level, and never the UI or ML libraries. Only absolute imports name a
library: ``planner.engines.hf_transformers`` (the transformers engine view) or a relative
``from . import transformers`` is ours, not the library.
"""

import ast
from pathlib import Path

import pytest

PLANNER = Path(__file__).resolve().parents[1] / "planner"
FORBIDDEN = {"streamlit", "pydantic", "transformers", "torch", "model_catalog"}
EDGE = {"cli", "__main__.py"}
"""First path part (folder or file) of the edge modules, relative to planner/."""

ALLOWED_PLANNER_IMPORTS = {
    "model": {"planner.model", "planner.units", "planner.text"},
    "engines": {"planner.engines", "planner.model", "planner.units", "planner.text", "planner.diagnose",
                "planner.overhead", "planner.serving"},
    "traffic": {"planner.traffic", "planner.engines", "planner.model", "planner.units", "planner.text",
                "planner.budget", "planner.pipeline", "planner.sweep", "planner.overhead", "planner.diagnose",
                "planner.serving", "planner.roofline", "planner.scale"},  # the last: Find's setups at scale
    # (traffic/find_scale.py); planner.pipeline: the budget of a replica's pipeline stages (Allocation's schemes)
    "serving": {"planner.serving", "planner.model", "planner.units", "planner.text"},
    "scale": {"planner.scale", "planner.engines", "planner.roofline", "planner.model", "planner.units",
              "planner.text", "planner.serving", "planner.diagnose"},  # the last: the TP sizes a pool can split to
}
"""Which planner packages each folder may import: ``model/`` knows nothing of engines or
traffic, ``scale/`` nothing of traffic (the reverse planner in ``traffic/`` searches its launches), and no
computation module imports the CLI. ``planner.units`` and ``planner.text`` (quoting
user input in messages) are leaves every folder may use."""

MODULES = sorted(PLANNER.rglob("*.py"))


def _rel(path: Path) -> Path:
    return path.relative_to(PLANNER)


def imported_modules(tree: ast.AST, *, top_level_only: bool) -> set[str]:
    """Dotted names of the absolutely imported modules (relative imports are ours, so skipped)."""
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def libraries(modules: set[str]) -> set[str]:
    """Top-level package of each imported module."""
    return {name.split(".")[0] for name in modules}


def test_every_folder_is_checked():
    folders = {p.parts[0] for p in map(_rel, MODULES) if len(p.parts) > 1}
    assert folders == {"model", "engines", "traffic", "serving", "scale", "cli"}, folders
    assert all((PLANNER / folder / "__init__.py").read_text().startswith('"""') for folder in folders)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(_rel(p)))
def test_no_forbidden_imports(path):
    tree = ast.parse(path.read_text())
    if _rel(path).parts[0] in EDGE:
        assert not libraries(imported_modules(tree, top_level_only=False)) & (FORBIDDEN - {"model_catalog"})
        assert not libraries(imported_modules(tree, top_level_only=True)) & FORBIDDEN
    else:
        assert not libraries(imported_modules(tree, top_level_only=False)) & FORBIDDEN


@pytest.mark.parametrize("path", [p for p in MODULES if _rel(p).parts[0] in ALLOWED_PLANNER_IMPORTS],
                         ids=lambda p: str(_rel(p)))
def test_folders_layer(path):
    allowed = ALLOWED_PLANNER_IMPORTS[_rel(path).parts[0]]
    ours = {m for m in imported_modules(ast.parse(path.read_text()), top_level_only=False) if m.startswith("planner")}
    outside = {m for m in ours if not any(m == a or m.startswith(a + ".") for a in allowed)}
    assert not outside, f"{_rel(path)} imports {sorted(outside)}; allowed: {sorted(allowed)}"


def test_no_computation_module_imports_the_cli():
    for path in MODULES:
        if _rel(path).parts[0] in EDGE:
            continue
        ours = imported_modules(ast.parse(path.read_text()), top_level_only=False)
        assert not any(m == "planner.cli" or m.startswith("planner.cli.") for m in ours), _rel(path)


@pytest.mark.parametrize(("source", "flagged"), [
    ("import transformers", {"transformers"}),
    ("from transformers import AutoConfig", {"transformers"}),
    ("from planner.engines import hf_transformers", set()),
    ("from planner.engines.hf_transformers import transformers_cache_bytes", set()),
    ("from . import transformers", set()),
    ("def f():\n    import streamlit as st", {"streamlit"}),
])
def test_checker_tells_our_modules_from_libraries(source, flagged):
    assert libraries(imported_modules(ast.parse(source), top_level_only=False)) & FORBIDDEN == flagged
