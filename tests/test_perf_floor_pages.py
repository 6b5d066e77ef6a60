"""Each page's floor in ``scripts/perf_floor.py`` (its script up to its last ``inputs.show_problems`` call) still draws
the widget ``scripts/perf_budget.py`` changes: stop 46 put the Catalog's link-problem line above its search box, the
floor then stopped before the box, and the benchmark waited 30 s for an input that was never drawn."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.e2e_browser import PAGES

ROOT = Path(__file__).resolve().parents[1]


def _last_show_problems_line(tree: ast.AST) -> int:
    return max((node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute) and node.func.attr == "show_problems"), default=0)


def _widget_lines(tree: ast.AST, key: str) -> list[int]:
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            for kw in node.keywords if kw.arg == "key" and isinstance(kw.value, ast.Constant) and kw.value.value == key]


@pytest.mark.parametrize("path", sorted(PAGES))
def test_the_benchmarked_widget_is_drawn_before_the_floor_stops(path):
    script, widget = PAGES[path]
    tree = ast.parse((ROOT / script).read_text(encoding="utf-8"))
    stop = _last_show_problems_line(tree)
    drawn_here = _widget_lines(tree, widget)  # a sidebar widget is drawn inside ui.inputs, before any problems line
    assert not (stop and drawn_here) or min(drawn_here) < stop, (script, widget, drawn_here, stop)
