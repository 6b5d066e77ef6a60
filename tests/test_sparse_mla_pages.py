"""One link, one user count for a sparse-MLA model (issue 25, class 3, on the budget pages).

vLLM stores DeepSeek-V3.2's and GLM-5's sparse-MLA cache in its own ``fp8_ds_mla`` format under
``--kv-cache-dtype auto`` (planner/engines/vllm_kv_formats.py, design note 1). The budget pages priced a bf16
cache, so Home said 17 users for DeepSeek-V3.2 on 8 H200 at 32,768 tokens where vLLM prints 28.84x. Every page
that counts users now prices the format vLLM stores, names it, and agrees with the Engine page.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.lazy_tabs import open_tab
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
LINK = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "32768"}


def _page(script: str) -> AppTest:
    at = AppTest.from_file(str(ROOT / script), default_timeout=180)
    for key, value in LINK.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    return at


def _metric(at: AppTest, label: str) -> str:
    return next(m.value for m in metric_tiles(at) if m.label == label)


@pytest.fixture(scope="module")
def engine_users() -> int:
    """Whole requests of 32,768 tokens vLLM's printed concurrency holds on the Engine page (28.84x -> 28)."""
    at = _page("pages/5_Engine.py")
    return int(float(_metric(at, "Max concurrency").rstrip("x")))


def test_home_gqa_and_concurrency_count_the_users_vllm_holds(engine_users):
    assert engine_users == 28
    assert _metric(_page("app.py"), "Max concurrent sequences") == str(engine_users)
    assert _metric(_page("pages/2_GQA_savings.py"), "Max sequences, MLA (as built)") == str(engine_users)
    concurrency = _page("pages/3_Concurrency.py")
    assert _metric(concurrency, "H200 SXM 141GB") == str(engine_users)
    assert "fp8\\_ds\\_mla KV cache" in concurrency.subheader[0].value


def test_gqa_page_names_the_format_beside_the_bf16_variants():
    at = _page("pages/2_GQA_savings.py")
    assert any("bf16 KV cache, fp8_ds_mla for MLA as built" in c.value for c in at.caption)
    savings = next(c.value for c in at.caption if "is stored in fp8_ds_mla" in c.value)  # a note, not the headline
    assert "would store" not in at.markdown[0].value  # one ratio in the headline (QA, stop 44)
    assert "MLA (as built) is stored in fp8_ds_mla, vLLM's format for sparse-MLA layers, and MHA in bf16" in savings
    # the design's own saving, like for like: the MHA rebuild's 128 heads x (192 K + 128 V) x 2 B against the
    # latent's 1,152 B + 132 B indexer key, both in bf16
    mha = 128 * (192 + 128) * 2
    assert f"in bf16 too, MLA (as built) would store {mha / (1152 + 132):,.3g}x less" in savings
    assert any("the sparse-MLA models (DeepSeek-V3.2, GLM-5) in vLLM's fp8_ds_mla" in c.value for c in at.caption)


def test_allocation_kv_quantization_tab_starts_at_vllms_format():
    at = open_tab(_page("pages/6_Allocation.py"), "allocation_section", "KV-cache quantization")
    assert not at.exception and not at.error
    shown = " ".join(str(t.value) for t in (*at.markdown, *at.caption))
    assert "fp8_ds_mla" in shown.replace("\\_", "_")


def test_home_formula_shows_the_fp8_ds_mla_layout():
    """The "How these numbers are computed" table prices each layer as stored: 512 FP8 latent bytes, 4 fp32
    scales and 64 bf16 rope values = 656 B, + the 132 B indexer key = 788 B (bf16 read (512 + 64) x 2 B before,
    beside a 788 B result)."""
    rows = [line for md in _page("app.py").markdown for line in md.value.splitlines() if "MLA latent" in line]
    assert rows == ["| 61 layers, MLA latent + indexer key | fp8_ds_mla: 512 kv_lora_rank × FP8 (1 B) + 4 fp32 scales "
                    "(4 B) + 64 qk_rope_head_dim × bf16 (2 B) + 128-value FP8 indexer key with its scale (132 B) | "
                    "788 B per layer |"]
