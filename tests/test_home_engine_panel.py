"""Home's engine panel says why its figures differ from the budget above it (QA round of issue 27).

For DeepSeek-V3.2 on 8 H200 at 32,768 tokens, Home prices a bf16 cache (76.49 KiB per token) while its "What
vllm would allocate" panel gave 944,896 tokens (about 47 KiB per token): vLLM stores the sparse-MLA cache as
``fp8_ds_mla`` under ``--kv-cache-dtype auto``. The panel's "why these can differ" line named sliding windows
and the profile pass only; it now names the stored dtype, taken from the engine plan.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import get_gpu, model_spec
from planner.engines import plan_engine
from planner.engines.types import EngineRequest
from planner.model.kv import cache_dtypes

ROOT = Path(__file__).resolve().parents[1]


def _why_line(params: dict[str, str]) -> str:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    return next(c.value for c in at.caption if c.value.startswith("Why these can differ"))


def test_the_panel_names_the_kv_dtype_the_engine_stores():
    params = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "32768"}
    gpu = get_gpu(params["gpu"])
    model = model_spec(params["model"])
    engine = plan_engine(model, gpu.framework_memory_bytes,
                         EngineRequest(engine="vllm", tensor_parallel_size=8, max_model_len=32768, gpu_name=gpu.name))
    budget = cache_dtypes(model, "auto", "auto").kv.name
    assert (engine.kv_cache_dtype, budget) == ("fp8_ds_mla", "bf16")
    assert f"stores the KV cache as {engine.kv_cache_dtype} where the figures above price {budget}" in _why_line(params)


def test_the_same_dtype_is_not_named():
    line = _why_line({"model": "meta-llama/Meta-Llama-3-8B", "gpu": "nvidia-h100-sxm-80gb"})
    assert "stores the KV cache as" not in line


def test_home_builds_its_engine_request_once_for_the_panel_and_the_fixes(monkeypatch):
    """Home plans its engine view and checks its fixes on the same request: app.py builds it once and passes it
    (engine_home.home_engine_plan built its own copy before, so each run built it twice)."""
    from ui import engine_home

    built = []
    home_request = engine_home.home_request
    monkeypatch.setattr(engine_home, "home_request", lambda *a, **k: built.append(1) or home_request(*a, **k))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception
    assert len(built) == 1
