"""planner/ stays pure: no Streamlit, pydantic or transformers in its computation modules."""

import ast
from pathlib import Path

import pytest

PLANNER = Path(__file__).resolve().parents[1] / "planner"
FORBIDDEN = {"streamlit", "pydantic", "transformers", "torch", "model_catalog"}
# The CLI is the edge that reads the catalog (imported lazily inside functions); verify.py
# imports torch / transformers / the catalog inside functions only (dev-only verifier).
EDGE_MODULES = {"cli.py", "__main__.py", "cli_traffic.py", "cli_engine.py", "cli_args.py", "verify.py"}


def top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("path", sorted(PLANNER.glob("*.py")), ids=lambda p: p.name)
def test_no_forbidden_imports(path):
    imports = top_level_imports(path)
    if path.name in EDGE_MODULES:
        assert not imports & (FORBIDDEN - {"model_catalog"}), imports
    else:
        all_imports = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                all_imports |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                all_imports.add(node.module.split(".")[0])
        assert not all_imports & FORBIDDEN, all_imports
