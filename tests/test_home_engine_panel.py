"""Home's engine panel says why its figures differ from the budget above it (QA round of issue 27).

For DeepSeek-V3.2 on 8 H200 at 32,768 tokens, Home used to price a bf16 cache (76.49 KiB per token) while its
"What vllm would allocate" panel gave 944,896 tokens (about 47 KiB per token): vLLM stores the sparse-MLA cache as
``fp8_ds_mla`` under ``--kv-cache-dtype auto``. The budget now prices what the newest vLLM stores (issue 25,
class 3), so for vLLM the two agree; an engine that stores another format (SGLang's bf16 here) is named in the
panel's "why these can differ" line, taken from the engine plan.
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


V32 = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200-sxm", "num_gpus": "8", "context_len": "32768"}


def _engine_plan(engine: str):
    gpu = get_gpu(V32["gpu"])
    return plan_engine(model_spec(V32["model"]), gpu.framework_memory_bytes,
                       EngineRequest(engine=engine, tensor_parallel_size=8, max_model_len=32768, gpu_name=gpu.name))


def test_the_budget_prices_the_cache_vllm_stores():
    """fp8_ds_mla in the budget (61 x (656 + 132) = 48,068 B a token) and in vLLM's plan: the same tokens, the
    same users, and nothing to explain in the panel."""
    model = model_spec(V32["model"])
    engine = _engine_plan("vllm")
    budget = cache_dtypes(model, "auto", "auto")
    assert (engine.kv_cache_dtype, budget.kv_name) == ("fp8_ds_mla", "fp8_ds_mla")
    assert "stores the KV cache as" not in _why_line(V32)


def test_the_panel_names_the_kv_dtype_another_engine_stores():
    engine = _engine_plan("sglang")
    assert engine.kv_cache_dtype == "bf16"
    assert "stores the KV cache as bf16 where the figures above price fp8_ds_mla" in _why_line({**V32,
                                                                                               "engine": "sglang"})


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


def test_cli_plan_names_the_cache_another_engine_stores(capsys):
    """``plan --engine sglang`` prints the budget in the newest vLLM's fp8_ds_mla and SGLang's own figures in
    bf16: a note says so (QA). bf16 against fp16 (llama.cpp's cache for a bf16 model) is the same size: no note."""
    from planner.cli.entry import main
    from planner.engines.types import stores_another_cache

    base = ["plan", "--model", V32["model"], "--gpu", V32["gpu"], "--num-gpus", "8", "--context-len", "8192"]
    main([*base, "--engine", "sglang"])
    assert ("note: sglang stores the KV cache as bf16 where the budget above prices fp8_ds_mla"
            in capsys.readouterr().out)
    main([*base, "--engine", "vllm"])
    assert "stores the KV cache as" not in capsys.readouterr().out
    assert stores_another_cache("bf16", "fp8_ds_mla") and not stores_another_cache("fp16", "bf16")
    assert not stores_another_cache("bf16", None) and not stores_another_cache("auto", "bf16")


def test_home_s_usable_context_is_the_engine_s_longest_accepted_length(capsys):
    """gpt-oss-120b on one H100 at 131,072: the budget's "Usable here" was 112,800, a length vLLM refuses (its
    startup check needs one request's KV at its prefill peak); Home then named the engine's lower limit beside it
    (QA). The budget now pages windowed layers as vLLM does and counts that prefill peak
    (tests/test_window_budget.py), so its usable context is the engine's own limit, with nothing to take back."""
    import json  # noqa: PLC0415

    from planner.cli import main  # noqa: PLC0415

    assert main(["plan", "--engine", "vllm", "--model", "openai/gpt-oss-120b", "--gpu", "nvidia-h100-sxm-80gb",
                 "--context-len", "131072", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    accepted, usable = out["engine_plan"]["engine_max_model_len"], out["max_context_len"]
    assert accepted == usable < 131072
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for key, value in {"model": "openai/gpt-oss-120b", "gpu": "nvidia-h100-sxm-80gb", "context_len": "131072",
                       "engine": "vllm"}.items():
        at.query_params[key] = value
    at.run()
    [seed] = [m.value for m in at.markdown if m.value.startswith("**Longest context")]
    assert f"Usable here: **{usable:,} tokens**" in seed and "startup check accepts at most" not in seed, seed


def test_the_panel_says_the_users_above_are_the_requests_decoding_beside_a_prefill_chunk():
    """Since the budget pages windowed models as vLLM does and sets one prefill chunk aside (tests/
    test_window_budget.py), the panel no longer says the figures above 'cap each window at its size and reserve
    no prefill chunk': Gemma 3 27B on an H200 at 8,192 tokens, 60 users above = floor(60.88) decoding at once."""
    line = _why_line({"model": "google/gemma-3-27b-it", "gpu": "nvidia-h200-sxm", "context_len": "8192"})
    assert "reserve no prefill chunk" not in line
    assert "the users above are the requests decoding at once beside one prefill chunk" in line


def test_home_says_when_the_engine_runs_fewer_than_the_users_it_counts():
    """QA: DeepSeek-V4-Flash on 4 x H200 at 8,192 tokens: Home counted 1,411 users while vLLM runs at most 1,024
    sequences at once by default (--max-num-seqs); only the Engine page said so. Home says it too, from the same
    engine plan (EnginePlan.scheduler_cap_note)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    for key, value in {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-h200-sxm", "num_gpus": "4",
                       "context_len": "8192"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    said = [i.value for i in at.info if "--max-num-seqs" in i.value]
    assert len(said) == 1 and "at most 1,024 sequences at once" in said[0], said
    small = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    small.query_params["model"] = "Qwen/Qwen3-8B"
    small.run()
    assert not any("--max-num-seqs" in i.value for i in small.info)


def test_home_reads_the_links_max_num_seqs_as_the_engine_page_does():
    """After Home began to state vLLM's scheduler cap, a link with ``max_num_seqs=2048`` still read "runs at most
    1,024" there while the Engine page used 2,048. Home's engine request takes the link's value (in the Engine
    input's range); its line then matches the Engine page's plan for the same link, or is gone."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from tests.tiles import metric_tiles
    from ui.engine_metrics import DECODING_LABEL

    root = Path(__file__).resolve().parents[1]
    base = {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-h200-sxm", "num_gpus": "4", "context_len": "8192"}
    for cap, expected in (("2048", None), ("40", "at most 40 sequences at once")):
        home = AppTest.from_file(str(root / "app.py"), default_timeout=120)
        engine = AppTest.from_file(str(root / "pages" / "5_Engine.py"), default_timeout=120)
        for at in (home, engine):
            for key, value in {**base, "max_num_seqs": cap}.items():
                at.query_params[key] = value
            at.run()
            assert not at.exception
        said = [i.value for i in home.info if "--max-num-seqs" in i.value]
        if expected is None:
            assert not said, said
        else:
            decoding = next(t.value for t in metric_tiles(engine) if t.label == DECODING_LABEL)
            assert len(said) == 1 and expected in said[0] and f"tokens ({decoding}x)" in said[0], (said, decoding)


def test_home_is_not_green_for_a_kv_dtype_its_engine_does_not_offer():
    """QA (stop 43): ``/?model=meta-llama/Meta-Llama-3-8B&kv_cache_dtype=q4_0&engine=vllm`` read "Fits ... up to
    191 concurrent sequences" in green beside an info line, where the Engine page shows an error and the CLI exits
    with "vllm does not offer KV-cache dtype 'q4_0'". Under llama.cpp, which offers q4_0, it stays green."""
    from tests.test_app import run_page

    refused = run_page("app.py", {"model": "meta-llama/Meta-Llama-3-8B", "kv_cache_dtype": "q4_0", "engine": "vllm"})
    assert not refused.exception and not refused.success
    assert any(w.value.startswith("**Fits the budget; vllm would not start") for w in refused.warning)
    assert any("does not offer KV-cache dtype `q4_0`" in i.value for i in refused.info)
    offered = run_page("app.py", {"model": "meta-llama/Meta-Llama-3-8B", "kv_cache_dtype": "q4_0",
                                  "engine": "llama.cpp"})
    assert any(s.value.startswith("**Fits.**") for s in offered.success)
