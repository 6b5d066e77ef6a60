"""Caches cannot grow with user input: every Streamlit cache has ``max_entries``, every
``lru_cache`` keyed by user data has a ``maxsize``, and the link-code caches stay bounded
after many distinct inputs (a server once grew from 77 MB to 563 MB over a session of page
loads and never gave it back)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.runtime.caching import get_data_cache_stats_provider

ROOT = Path(__file__).resolve().parents[1]
APP_SOURCES = sorted([ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").glob("*.py")])
LIBRARY_SOURCES = sorted([*(ROOT / "planner").rglob("*.py"), *(ROOT / "model_catalog").glob("*.py")])

UNBOUNDED_OK = {
    ("model_catalog/__init__.py", "_cached_model_spec"): "keyed by canonical catalog ids (at most the catalog)",
    ("model_catalog/__init__.py", "_cached_served_spec"): "keyed by catalog ids and aliases as the catalog spells "
                                                          "them (hub_model_id refuses any other id)",
    ("model_catalog/gguf_reader.py", "ggml_storage"): "keyed by ggml type names (a fixed set of about 40)",
}
"""``lru_cache(maxsize=None)`` whose keys come from a fixed set, with the reason."""


def _decorators(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                yield node.name, deco


def _name(deco: ast.expr) -> str:
    target = deco.func if isinstance(deco, ast.Call) else deco
    return ast.unparse(target)


def _keyword(deco: ast.expr, name: str):
    if not isinstance(deco, ast.Call):
        return None
    for kw in deco.keywords:
        if kw.arg == name:
            return ast.literal_eval(kw.value)
    if name == "maxsize" and deco.args:
        return ast.literal_eval(deco.args[0])
    return None


@pytest.mark.parametrize("path", APP_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_streamlit_caches_have_max_entries(path):
    for func, deco in _decorators(path):
        if _name(deco) in ("st.cache_data", "st.cache_resource"):
            bound = _keyword(deco, "max_entries")
            assert isinstance(bound, int) and 0 < bound <= 1024, f"{path.name}:{func} needs max_entries"


@pytest.mark.parametrize("path", LIBRARY_SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_lru_caches_are_bounded(path):
    rel = str(path.relative_to(ROOT))
    for func, deco in _decorators(path):
        name = _name(deco)
        if name in ("cache", "functools.cache"):
            assert (rel, func) in UNBOUNDED_OK, f"{rel}:{func} is an unbounded functools.cache"
        elif name in ("lru_cache", "functools.lru_cache") and _unbounded_lru(deco):
            assert (rel, func) in UNBOUNDED_OK, f"{rel}:{func} has maxsize=None; bound it or say why"


def _unbounded_lru(deco: ast.expr) -> bool:
    """``@lru_cache(maxsize=None)`` or ``@lru_cache(None)``; a bare ``@lru_cache`` keeps 128."""
    if not isinstance(deco, ast.Call):
        return False
    values = [kw.value for kw in deco.keywords if kw.arg == "maxsize"] + list(deco.args[:1])
    return any(isinstance(v, ast.Constant) and v.value is None for v in values)


def _cache_bytes(name: str) -> int:
    stats = get_data_cache_stats_provider().get_stats()
    rows = stats["cache_memory_bytes"] if isinstance(stats, dict) else stats
    return sum(s.byte_length for s in rows if s.cache_name == name)


@pytest.mark.parametrize("func_name", ["_decode_model", "_decode_gpu"])
def test_link_code_caches_stay_bounded_after_many_distinct_codes(func_name):
    from ui import custom_panel

    func = getattr(custom_panel, func_name)
    name = f"ui.custom_panel.{func_name}"
    func.clear()
    func("v1.AAAA0")
    one = _cache_bytes(name)
    assert one > 0
    for i in range(1, 300):  # 300 distinct (bad) codes, as a crawler or a fuzzer would send
        func(f"v1.AAAA{i}")
    assert _cache_bytes(name) <= 64 * one * 1.2  # max_entries=64, entries of about the same size
    func.clear()
