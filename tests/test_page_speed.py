"""What keeps a page's rerun near Streamlit's floor (issue 27, "Speed, decided"; ``scripts/perf_budget.py``).

* The GQA page's catalog chart rows depend only on the two dtypes, so a rerun for another widget reuses
  them instead of walking every layer of every catalog model again (``ui.data.catalog_kv_rows``).
* The per-model catalog loaders hand out the one frozen object they keep (``st.cache_resource``), so a hit
  costs no unpickling (``st.cache_data`` returns a fresh copy on every call).
"""

from __future__ import annotations

from ui import catalog, data


def test_catalog_kv_rows_are_built_once_per_dtype_pair(monkeypatch):
    data.catalog_kv_rows.clear()
    first = data.catalog_kv_rows("bf16", "auto")
    calls = []
    real = catalog.model_spec
    monkeypatch.setattr(catalog, "model_spec", lambda model_id: calls.append(model_id) or real(model_id))
    again = data.catalog_kv_rows("bf16", "auto")
    assert again == first and calls == []  # kept: no catalog model read again
    assert len(first) == len(catalog.model_ids())
    data.catalog_kv_rows("bf16", "fp8")  # another pair is built afresh, from every catalog model
    assert len(calls) == len(catalog.model_ids())
    data.catalog_kv_rows.clear()


def test_catalog_model_loaders_share_one_frozen_object():
    model_id = catalog.default_model_id()
    assert catalog.model_spec(model_id) is catalog.model_spec(model_id)
    assert catalog.model_entry(model_id) is catalog.model_entry(model_id)
