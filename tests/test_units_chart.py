"""The GQA page's catalog scatter labels its KV axis in binary units, the unit in the axis title
(issue 27, polish: "the GQA scatter axis ticks are raw bytes")."""

from __future__ import annotations

from ui import charts


def test_kv_scatter_ticks_are_kib_and_mib_and_the_title_names_them():
    rows = [{"model_id": "a", "params": 8 * 10**9, "kv_bytes_per_token": 131_072, "attention": "GQA"},
            {"model_id": "b", "params": 7 * 10**9, "kv_bytes_per_token": 524_288, "attention": "MHA"}]
    axis = charts.kv_vs_params(rows, highlight="a").layout.yaxis
    assert axis.title.text.endswith("[KiB / MiB]")
    # At 14 px a title of over ~45 characters is taller than the plot (480 - 52 - 80 px) and ran off its top at
    # 1,280 px; the page's caption defines KiB and MiB.
    assert len(axis.title.text) <= 45, axis.title.text
    shown = dict(zip(axis.tickvals, axis.ticktext))
    assert shown[1024] == "1 KiB" and shown[262_144] == "256 KiB" and shown[1 << 20] == "1 MiB"
    assert all(text.endswith((" KiB", " MiB")) for text in axis.ticktext)
