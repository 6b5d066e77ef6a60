"""fp8 KV on Ampere under vLLM (QA, headless Chromium): the Find row's note told the reader to start vLLM with
VLLM_ATTENTION_BACKEND=FLASHINFER while its launch command (and the CSV's) had no such prefix, and Home, the Engine
page and ``plan --engine vllm`` said nothing. One rule (planner.engines.vllm_fp8_kv) now gives the note and the
command's prefix per vLLM release: pre-v0.11 releases fall back (V0: XFormers; V1: the V0 engine) and take
FLASHINFER through the variable, v0.11+ pick an fp8-capable backend themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.engines.vllm_fp8_kv import fp8_kv_backend
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from ui.find_table import csv_rows, find_rows

ROOT = Path(__file__).resolve().parents[1]
MODEL = "Qwen/Qwen3-8B"
A100 = "nvidia-a100-sxm-80gb"
PREFIX = "VLLM_ATTENTION_BACKEND=FLASHINFER"
LEAD = "fp8 KV cache: vLLM's FlashAttention does not read it here"
# profile -> whether vLLM needs the variable to read an fp8 cache on Ampere (vllm/platforms/cuda.py and
# vllm/engine/arg_utils.py of each release group; the module docstring of planner.engines.vllm_fp8_kv)
NEEDS_PREFIX = {"vllm-v0": True, "vllm-v1-2025": True, "vllm-v0.10": True,
                "vllm-v0.11": False, "vllm-v0.28": False, "vllm": False}


def _engine_plan(engine: str, gpu_id: str = A100, kv: str = "fp8", **extra):
    gpu = get_gpu(gpu_id)
    return plan_engine(served_model_spec(MODEL), gpu.framework_memory_bytes, EngineRequest(
        engine=engine, kv_cache_dtype=kv, max_model_len=8192, gpu_name=gpu.name, **extra))


def _backend_notes(notes) -> list[str]:
    return [n for n in notes if n.startswith(LEAD)]


@pytest.mark.parametrize("engine", sorted(NEEDS_PREFIX))
def test_engine_view_command_carries_what_its_note_says(engine):
    """(b) The engine view's command for an A100 with fp8 KV: the prefix exactly where the release needs it, and
    one note that says the same (it names the variable as set, or says none is set)."""
    p = _engine_plan(engine)
    notes = _backend_notes(p.notes)
    assert len(notes) == 1, p.notes
    assert (PREFIX in p.launch_command) is NEEDS_PREFIX[engine]
    assert (PREFIX in notes[0]) is NEEDS_PREFIX[engine]
    assert ("no VLLM_ATTENTION_BACKEND" in notes[0]) is not NEEDS_PREFIX[engine]


@pytest.mark.parametrize("gpu_id, kv, extra", [
    ("nvidia-h100-sxm-80gb", "fp8", {}),  # FlashAttention 3 reads an fp8 cache
    ("nvidia-b200", "fp8", {}),  # compute capability 10.0: is_kv_cache_dtype_supported accepts it
    ("amd-mi300x", "fp8", {}),  # not NVIDIA: no FlashAttention 3 rule
    (A100, "auto", {}),  # no fp8 cache
    (A100, "fp8", {"attention_backend": "TRITON_ATTN"}),  # the user's own backend is kept, no note
])
def test_no_override_outside_ampere_fp8(gpu_id, kv, extra):
    """The rule answers None there, and the plan has neither the note nor the FLASHINFER prefix."""
    assert fp8_kv_backend("vllm-v0.10", get_gpu(gpu_id).name, kv, **extra) is None
    p = _engine_plan("vllm-v0.10", gpu_id, kv, **extra)
    assert not _backend_notes(p.notes)
    assert PREFIX not in p.launch_command
    if extra:
        assert p.launch_command.startswith("VLLM_ATTENTION_BACKEND=TRITON_ATTN ")


@pytest.mark.parametrize("gpu_id", ["nvidia-l40s", "nvidia-rtx-5090", "nvidia-dgx-spark"])
@pytest.mark.parametrize("engine", sorted(NEEDS_PREFIX))
def test_ada_and_consumer_blackwell_have_no_fp8_flash_attention_either(engine, gpu_id):
    """FlashAttention 3 reads an fp8 cache on capability major 9 only (vllm/attention/utils/fa_utils.py
    ``flash_attn_supports_fp8``): Ada (8.9) and SM 12.x are in the same case as Ampere, per release."""
    rule = fp8_kv_backend(engine, get_gpu(gpu_id).name, "fp8")
    assert rule is not None
    assert (rule.env_backend == "FLASHINFER") is NEEDS_PREFIX[engine]
    p = _engine_plan(engine, gpu_id)
    assert len(_backend_notes(p.notes)) == 1
    assert (PREFIX in p.launch_command) is NEEDS_PREFIX[engine]


@pytest.mark.parametrize("engine, needs", [("vllm-v0", True), ("vllm-v0.10", False), ("vllm", False)])
def test_hopper_reads_fp8_with_flash_attention_3_except_on_v0(engine, needs):
    """V0's selector falls back to XFormers for any fp8 cache, Hopper included (vllm/platforms/cuda.py V0 branch);
    V1 runs FlashAttention 3 there."""
    rule = fp8_kv_backend(engine, get_gpu("nvidia-h100-sxm-80gb").name, "fp8")
    assert (rule is not None and rule.env_backend == "FLASHINFER") is needs
    if rule:  # QA: the V0 note on an H100 said FlashAttention 3 "runs on Hopper only"; it names V0's reason
        assert "Hopper" not in rule.note and "FlashAttention 2" in rule.note


def test_other_engines_get_no_vllm_rule():
    """SGLang, TensorRT-LLM and the rest are not vLLM: no VLLM_ATTENTION_BACKEND for them."""
    assert fp8_kv_backend("sglang", get_gpu(A100).name, "fp8") is None
    assert fp8_kv_backend("vllm", get_gpu(A100).name, "fp8").env_backend is None
    assert fp8_kv_backend("vllm-v0", get_gpu("nvidia-rtx-3090").name, "fp8_e5m2").env_backend == "FLASHINFER"


def test_cli_plan_prints_the_prefix_and_the_note(capsys):
    """(b) ``plan --engine``: the launch line carries the prefix for a release that needs it, and the note is
    printed beside it; for the newest vLLM the note says why there is none."""
    base = ["plan", "--model", MODEL, "--gpu", A100, "--kv-cache-dtype", "fp8", "--context-len", "8192"]
    main([*base, "--engine", "vllm-v0.10"])
    out = capsys.readouterr().out
    launch = next(line for line in out.splitlines() if line.startswith("launch"))
    assert PREFIX in launch
    assert any(line.strip().startswith(f"note: {LEAD}") and PREFIX in line for line in out.splitlines())
    main([*base, "--engine", "vllm"])
    out = capsys.readouterr().out
    launch = next(line for line in out.splitlines() if line.startswith("launch"))
    assert PREFIX not in launch
    assert any(line.strip().startswith(f"note: {LEAD}") for line in out.splitlines())


@pytest.mark.parametrize("engine", [None, "vllm-v0.10"])
def test_find_rows_and_csv_carry_what_their_note_says(engine):
    """(a) Every Ampere fp8 row of Find: its note and its launch command agree (the CSV's column too), and the
    prefix is there exactly for a release that needs it (None: the budget, which prices the newest vLLM)."""
    request = FindRequest(users=8, prompt_len=2000, output_len=500, gpu_ids=("nvidia-a100-pcie-80gb", "nvidia-a10"),
                          kv_cache_dtypes=("fp8",), tensor_parallel_sizes=(1, 2), engine=engine)
    result = find_setups(served_model_spec(MODEL), list(load_gpus().values()), request)
    rows = [s for s in result.options if s.kv_cache_dtype == "fp8"]
    assert rows
    want = NEEDS_PREFIX[engine or "vllm"]
    for s in rows:
        notes = _backend_notes(s.notes)
        assert len(notes) == 1, s.notes
        assert (PREFIX in s.launch_command) is want, s.launch_command
        assert (PREFIX in notes[0]) is want
    csv = csv_rows(find_rows(result))
    for _, row in csv[csv["KV dtype"] == "fp8"].iterrows():
        assert (PREFIX in row["Launch command"]) is want
        assert (PREFIX in row["Notes"]) is want


def _page(path: str, **params) -> AppTest:
    at = AppTest.from_file(str(ROOT / path), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


@pytest.mark.parametrize("path", ["app.py", "pages/5_Engine.py"])
def test_home_and_engine_page_show_the_backend_note(path):
    """(c) Home and the Engine page show the same note for an A100 with fp8 KV (QA: only "Fits" / "vllm
    starts"); under a pre-v0.11 release it names the variable the Engine page's launch command sets."""
    at = _page(path, model=MODEL, gpu=A100, kv_cache_dtype="fp8")
    assert not at.exception
    infos = [i.value for i in at.info if LEAD in i.value]
    assert len(infos) == 1
    assert "no VLLM_ATTENTION_BACKEND" in infos[0]
    old = _page(path, model=MODEL, gpu=A100, kv_cache_dtype="fp8", engine="vllm-v0.10")
    assert not old.exception
    notes = [i.value for i in old.info if LEAD in i.value]
    assert len(notes) == 1 and PREFIX in notes[0]
    if path != "app.py":
        assert any(c.value.startswith(PREFIX) for c in old.code)
