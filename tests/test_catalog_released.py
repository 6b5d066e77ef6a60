"""Release dates in the catalog and on the Catalog page (issue "One link, one answer", item 7, last bullet):
each entry's ``released`` comes with the ``released_source`` it was read from, and typing "2026" in the
page's search finds the 2026 models and only those."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_model_entry, model_ids
from model_catalog.model_registry import load_entry_file
from model_catalog.releases import Release, base_model_id, release
from tests.lazy_tabs import open_tab
from ui import data, views

ROOT = Path(__file__).resolve().parents[1]
CATALOG_PAGE = ROOT / "pages" / "4_Catalog.py"


def _entry(**changes) -> dict:
    entry = {"id": "acme/tiny-llama", "display_name": "Tiny", "source": "test fixture", "confidence": "high",
             "config": {"model_type": "llama"}}
    entry.update(changes)
    return entry


def _load(tmp_path: Path, entry: dict):
    path = tmp_path / "acme__tiny-llama.json"
    path.write_text(json.dumps(entry), encoding="utf-8")
    return load_entry_file(path)


@pytest.mark.parametrize("released", ["2026-02", "2026-02-16", "2024-02-29", "1999-12-31"])
def test_release_date_with_its_source_loads(tmp_path: Path, released: str) -> None:
    entry = _load(tmp_path, _entry(released=released, released_source="https://example.org/announcement"))
    assert entry.released == released


def test_entry_without_a_date_loads_and_shows_unknown(tmp_path: Path) -> None:
    entry = _load(tmp_path, _entry())
    assert entry.released is None and entry.released_source is None
    assert data.released(entry) == data.UNKNOWN_RELEASE == "unknown"


@pytest.mark.parametrize("released", ["2026", "2026-2", "2026-13", "2026-00", "2025-02-29", "2026-04-31",
                                      "26-01", "2026/02", "Feb 2026", "2026-02-16T00:00"])
def test_malformed_release_date_is_refused(tmp_path: Path, released: str) -> None:
    with pytest.raises(ValueError, match=r"field 'released'.*must be a date 'YYYY-MM' or 'YYYY-MM-DD'"):
        _load(tmp_path, _entry(released=released, released_source="https://example.org/announcement"))


@pytest.mark.parametrize("changes", [{"released": "2026-02"}, {"released": "2026-02", "released_source": " "},
                                     {"released_source": "https://example.org/announcement"}])
def test_date_and_source_go_together(tmp_path: Path, changes: dict) -> None:
    with pytest.raises(ValueError, match="'released' and 'released_source' go together"):
        _load(tmp_path, _entry(**changes))


def test_catalog_dates_carry_a_source() -> None:
    dated = [get_model_entry(model_id) for model_id in model_ids() if get_model_entry(model_id).released]
    assert len(dated) >= 100, "most entries have a sourced release date"
    for entry in dated:
        assert entry.released_source.startswith("https://"), f"{entry.id}: the source starts with its URL"


def test_search_2026_finds_the_2026_models_and_only_those() -> None:
    expected_2026 = {m for m in model_ids() if (get_model_entry(m).released or "").startswith("2026")}
    expected_2026 |= {m for m in model_ids() if not get_model_entry(m).released
                      and (release(m) or Release("", "")).date.startswith("2026")}  # base model's date
    assert {"Qwen/Qwen3.5-397B-A17B", "zai-org/GLM-5", "deepseek-ai/DeepSeek-V4-Pro"} <= expected_2026
    at = AppTest.from_file(str(CATALOG_PAGE), default_timeout=60)
    at.query_params["search"] = "2026"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    (models,) = (frame.value for frame in at.dataframe)  # the Models tab (ui.views.lazy_tabs: one tab at a time)
    (gpus,) = (frame.value for frame in open_tab(at, "catalog_section", "GPUs").dataframe)
    (verified,) = (frame.value for frame in open_tab(at, "catalog_section", "Verified against transformers").dataframe)
    assert set(models["id"]) == expected_2026
    assert all(released.startswith("2026") for released in models["released"])
    assert gpus.empty
    assert set(verified["id"]) <= expected_2026 and len(verified)
    assert all(released.startswith("2026") for released in verified["released"])
    assert "released" in views.MODEL_COLUMNS and "released" in views.VERIFICATION_COLUMNS


def test_release_column_sorts_by_date() -> None:
    """``YYYY-MM`` and ``YYYY-MM-DD`` strings sort in date order, and "unknown" after every date."""
    table = data.model_table()
    assert list(table.columns[:3]) == ["id", "name", "released"]
    ordered = sorted(table["released"])
    dated = [r for r in ordered if r != data.UNKNOWN_RELEASE]
    assert ordered[:len(dated)] == dated and sorted(["2026-02-16", "2026-02", "2025-12-01"]) == [
        "2025-12-01", "2026-02", "2026-02-16"]


ALIAS, ENTRY, NVFP4 = "Qwen/Qwen3.6-27B", "Qwen/Qwen3.5-27B", "nvidia/Qwen3.6-27B-NVFP4"


def test_a_search_found_by_an_alias_lists_the_alias_with_its_own_date() -> None:
    """QA: "qwen3.6" listed Qwen/Qwen3.5-27B dated 2026-02 (the entry's date) as the match for Qwen3.6-27B, which
    came out on 22 April 2026. The row is the alias, with the alias's own date and the entry it resolves to."""
    own = get_model_entry(ENTRY).alias_released[ALIAS]
    assert own.released == "2026-04-22" and own.source.startswith("https://")
    found = data.catalog_search("models", data.search_words("qwen3.6")).to_pandas().set_index("id")
    assert ENTRY not in found.index
    assert found.loc[ALIAS, "alias of"] == ENTRY and found.loc[ALIAS, "released"] == own.released
    whole = data.catalog_search("models", data.search_words("qwen3.5 27b")).to_pandas().set_index("id")
    assert whole.loc[ENTRY, "released"] == get_model_entry(ENTRY).released and not whole.loc[ENTRY, "alias of"]
    by_date = data.catalog_search("models", data.search_words(own.released)).to_pandas()
    assert ALIAS in set(by_date["id"])


def test_a_quantized_checkpoint_without_a_date_shows_its_base_models_marked() -> None:
    """QA: nvidia/Qwen3.6-27B-NVFP4 showed "released: unknown". A checkpoint with no date of its own shows its
    base model's (read from its repo name), marked; one with its own date keeps it; no base model: unknown."""
    assert get_model_entry(NVFP4).released is None
    assert base_model_id(NVFP4) == ALIAS
    assert base_model_id("Qwen/Qwen3-32B-FP8-Static-PerTensor") == "Qwen/Qwen3-32B"
    assert base_model_id(ENTRY) is None and base_model_id("acme/Unknown-9B-NVFP4") is None
    table = data.model_table().set_index("id")
    base_date = get_model_entry(ENTRY).alias_released[ALIAS].released
    assert table.loc[NVFP4, "released"] == base_date + data.BASE_MODEL_MARK != base_date
    assert ALIAS in table.loc[NVFP4, "released source"]
    assert table.loc["nvidia/GLM-5-NVFP4", "released"] == get_model_entry("nvidia/GLM-5-NVFP4").released
    assert table.loc["nvidia/Kimi-K2.6-NVFP4", "released"] == data.UNKNOWN_RELEASE  # its base is not in the catalog


@pytest.mark.parametrize(("changes", "message"), [
    ({"aliases": ["acme/tiny-2"], "alias_released": {"acme/tiny-3": {"released": "2026-04", "source": "x"}}},
     "not among the aliases"),
    ({"aliases": ["acme/tiny-2"], "alias_released": {"acme/tiny-2": {"released": "April", "source": "x"}}},
     "must be a date"),
])
def test_an_alias_date_names_an_alias_and_is_a_date(tmp_path: Path, changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _load(tmp_path, _entry(**changes))
