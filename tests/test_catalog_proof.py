"""The Catalog page's verification table agrees with its own headline (issue "One link, one answer", item 7)."""

from __future__ import annotations

from ui import data


def test_catalog_proof_table_agrees_with_its_headline():
    """Kimi-K3 could not be built by transformers ("build failed: KeyError"): the headline counts it as not
    built and the table says "not built" and "not checked" for it, never "0 of 0" under a verified count."""
    frame = data.verification_frame()
    headline = data.verification_headline()
    not_built = frame[frame["status"] == "not built"]
    assert "moonshotai/Kimi-K3" in set(not_built["id"])
    assert f"{len(not_built)} could not be built" in headline and "moonshotai/Kimi-K3" in headline
    assert "0 of 0" not in set(frame["KV checks exact"])
    assert set(not_built["KV checks exact"]) == {"not checked"}
    qwen_vl = frame[frame["id"] == "Qwen/Qwen3-VL-8B-Instruct"].iloc[0]
    assert qwen_vl["counted"].startswith("language model")
