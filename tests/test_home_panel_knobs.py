"""Home's engine panel ("What vllm would allocate and print") plans the link's engine knobs (QA, stop 41).

M2: ``/?model=meta-llama/Meta-Llama-3-8B&gpu=nvidia-h100-sxm-80gb&enforce_eager=true`` gave 441,952 tokens and
53.95x on Home, with a launch without ``--enforce-eager``, where the Engine page and ``python -m planner plan
--engine vllm --enforce-eager`` gave 448,912 tokens and 54.80x; so did ``max_num_batched_tokens``,
``cudagraph_mode``, ``warm_compile_cache`` and the other Engine-page knobs, and no page named them. Home now
reads them as the Disaggregation page does (:mod:`ui.disagg_knobs`) and names what it cannot apply.
M3: a launch that stops before loading weights (a shared GPU, heads tensor parallelism cannot split) showed "0 tokens
as printed, 0.00x concurrency ... largest max_model_len accepted: 0" and an empty log box.
Minors 3-5: the panel's captions contradicted or repeated each other, and the pipeline box said a refused launch's 0
users "differ" from the budget's 0.

Expected figures come from the Engine page for the same link, or from :func:`planner.engines.plan_engine`.
"""

from __future__ import annotations

import pytest

from model_catalog import get_gpu, model_spec
from planner.engines import plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.engines.types import EngineRequest
from tests.test_app import run_page

LLAMA = {"model": "meta-llama/Meta-Llama-3-8B", "gpu": "nvidia-h100-sxm-80gb"}
KNOBS = {
    "enforce_eager": "true", "max_num_batched_tokens": "4096", "cudagraph_mode": "NONE",
    "warm_compile_cache": "true", "enable_prefix_caching": "true", "optimization_level": "1",
    "usage_context": "llm", "max_num_seqs": "64", "gpu_memory_in_use_gib": "1",
}
"""Every Engine-page knob Home's panel applies, each set to a value other than its default."""


def _texts(at, *kinds: str) -> list[str]:
    assert not at.exception, [e.value for e in at.exception]
    return [e.value for kind in kinds or ("error", "warning", "success", "info", "caption", "markdown")
            for e in getattr(at, kind)]


def _log(at) -> str:
    return next(c.value for c in at.code if "Available KV cache memory" in c.value)


def _launch(at) -> str:
    return next(c.value for c in at.code if c.value.startswith("vllm serve"))


def _panel(at) -> str:
    return next(m for m in _texts(at, "markdown") if " of KV per GPU" in m or "stops before loading weights" in m)


def _why(at) -> str:
    return next(c for c in _texts(at, "caption") if c.startswith("Why these can differ"))


@pytest.mark.parametrize("knobs", [{k: v} for k, v in KNOBS.items()] + [KNOBS], ids=[*KNOBS, "all"])
def test_homes_panel_plans_the_links_engine_knobs_as_the_engine_page_does(knobs):
    home, engine = run_page("app.py", {**LLAMA, **knobs}), run_page("pages/5_Engine.py", {**LLAMA, **knobs})
    printed = _log(engine)
    concurrency = next(line for line in printed.splitlines() if line.startswith("Maximum concurrency"))
    assert _launch(home) == _launch(engine)
    assert _log(home) == printed
    assert f"{concurrency.rsplit(' ', 1)[1]} concurrency" in _panel(home), (_panel(home), concurrency)


def test_the_qa_link_gives_the_engine_pages_54_80x():
    """The QA figures: --enforce-eager leaves the graphs' memory to the KV cache (54.80x, not 53.95x)."""
    home = run_page("app.py", {**LLAMA, "enforce_eager": "true"})
    gpu = get_gpu(LLAMA["gpu"])
    eager = plan_engine(model_spec(LLAMA["model"]), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", max_model_len=8192, gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu),
        enforce_eager=True))
    assert f"{eager.max_concurrency:.2f}x concurrency" in _panel(home)
    assert "--enforce-eager" in _launch(home).split()


def test_home_names_the_engine_knobs_its_panel_leaves_out():
    # a context_len beside it: without one, Home plans the link's max_model_len (tests/test_link_max_model_len.py)
    at = run_page("app.py", {**LLAMA, "context_len": "8192", "max_model_len": "16384", "available_kv_memory_gib": "30"})
    said = [c for c in _texts(at, "caption") if "Left out" in c]
    assert said and "`max_model_len=16384`" in said[0] and "`available_kv_memory_gib=30`" in said[0], said
    same = run_page("app.py", {**LLAMA, "context_len": "16384", "max_model_len": "16384"})
    assert not any("max_model_len=" in c for c in _texts(same, "caption"))


def test_home_names_a_bad_knob_value():
    at = run_page("app.py", {**LLAMA, "max_num_batched_tokens": "lots", "enforce_eager": "yes"})
    assert any("`max_num_batched_tokens=lots`" in e for e in _texts(at, "error")), _texts(at, "error")
    said = _texts(at, "error") + _texts(at, "warning")  # a switch's bad value: the link guard's warning
    assert any("`enforce_eager=yes`" in e for e in said), said
    assert _launch(at) == _launch(run_page("app.py", LLAMA))


STOPPED = [
    {**LLAMA, "gpu_memory_in_use_gib": "10"},
    {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-a100-sxm-80gb", "num_gpus": "8"},
]


@pytest.mark.parametrize("link", STOPPED, ids=["shared-gpu", "no-kernel"])
def test_a_launch_that_stops_before_loading_weights_shows_no_printed_figures(link):
    at = run_page("app.py", link)
    engine = run_page("pages/5_Engine.py", link)
    assert any("stops before it prints any memory line" in c for c in _texts(engine, "caption"))  # the premise
    panel = _panel(at)
    assert "stops before loading weights" in panel
    for printed in ("tokens as printed", "x concurrency", "largest max_model_len accepted"):
        assert printed not in panel, panel
    assert all(c.value.strip() for c in at.code), "no empty log box"
    refusal = next(w for w in _texts(engine, "warning") if "“" in w)
    reason = refusal[refusal.index("“"):].split("”")[0] + "”"
    assert any(reason in m for m in _texts(at, "markdown")), reason


def test_the_newest_vllm_sentence_only_for_another_engine():
    ours = run_page("app.py", STOPPED[0])
    assert not any("this engine version" in w for w in _texts(ours, "warning"))
    assert any("would refuse to start" in w for w in _texts(ours, "warning"))
    # an older vLLM V1 is priced by the budget itself (PlanRequest.for_engine): its own sentence, as the newest's
    v010 = run_page("app.py", {**STOPPED[0], "engine": "vllm-v0.10"})
    assert not any("this engine version" in w for w in _texts(v010, "warning")), _texts(v010, "warning")
    # vllm-v0, whose overhead the budget cannot price (its profile pass grows with the context), keeps the newest's
    older = run_page("app.py", {**STOPPED[0], "engine": "vllm-v0"})
    assert any("this engine version" in w for w in _texts(older, "warning")), _texts(older, "warning")


def test_a_computed_concurrency_is_not_called_printed():
    at = run_page("app.py", {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-h100-sxm-80gb", "engine": "sglang"})
    assert "prints no concurrency line" in _panel(at)
    assert "the figure the engine prints" not in _why(at)


@pytest.mark.parametrize("engine", ["sglang", "vllm-v0.10"])
def test_the_why_line_says_another_engine_loads_its_own_way_once(engine):
    at = run_page("app.py", {"model": "Qwen/Qwen3-8B", "gpu": "nvidia-h100-sxm-80gb", "engine": engine})
    assert _why(at).count("its own way") == 1, _why(at)


def test_the_pipeline_split_is_said_once():
    at = run_page("app.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": "nvidia-h100-sxm-80gb", "num_gpus": "16",
                             "pipeline_parallel_size": "2", "num_nodes": "2"})  # one node holds no 16 workers
    boxes = [i for i in _texts(at, "info") if "pipeline stages of" in i]
    assert len(boxes) == 1 and "the same stages" in boxes[0], boxes
    assert "pipeline stages" not in _why(at) and "tensor-parallel group" not in _why(at), _why(at)


def test_no_difference_is_claimed_between_two_zeros():
    at = run_page("app.py", {"model": "deepseek-ai/DeepSeek-V3", "gpu": "nvidia-h100-sxm-80gb", "num_gpus": "8",
                             "pipeline_parallel_size": "2"})
    box = next(i for i in _texts(at, "info") if "pipeline stages of" in i)
    assert "would refuse to start" in box and "differ" not in box, box


def test_a_refused_launch_shows_no_printed_tokens_or_concurrency():
    """QA (stop 43): a launch vLLM V1 refuses at its KV check read "0 tokens as printed, 0.00x concurrency ... as
    printed" in Home's panel, where vLLM raises before those lines (its log ends at the available memory). The panel
    gives what the refusal compares instead: the available KV and what one request needs."""
    at = run_page("app.py", {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "nvidia-rtx-4090",
                             "context_len": "40000"})
    line = next(m.value for m in at.markdown if "would refuse to start:" in m.value)
    assert "as printed" not in line and "concurrency" not in line, line
    assert "where one request of 40,000 tokens needs" in line and "largest max_model_len accepted: 39,536" in line


def test_engine_page_calls_a_refused_launchs_tokens_unprinted():
    """The Engine page's tile said "KV cache size [tokens, as printed]" for a launch vLLM V1 refuses before that
    line; it is the pool's figure, labelled without "as printed" (a started launch keeps the label)."""
    from tests.tiles import metric_tiles

    refused = run_page("pages/5_Engine.py", {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "nvidia-rtx-4090",
                                             "context_len": "40000"})
    labels = {t.label for t in metric_tiles(refused)}
    assert "KV cache size [tokens]" in labels and "KV cache size [tokens, as printed]" not in labels
    started = run_page("pages/5_Engine.py", {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "nvidia-rtx-4090",
                                             "context_len": "8192"})
    assert "KV cache size [tokens, as printed]" in {t.label for t in metric_tiles(started)}


def test_every_fix_in_homes_try_list_gets_a_button():
    """QA (stop 43): Qwen2.5-32B at 32,768 tokens on one H100 listed five fixes and showed four buttons ("use
    num_gpus 2" had none): the buttons were cut at four. They now run four a row."""
    at = run_page("app.py", {"model": "Qwen/Qwen2.5-32B", "gpu": "nvidia-h100-sxm-80gb", "context_len": "32768"})
    tried = next(w.value for w in at.warning if "**Try:**" in w.value).split("**Try:**")[1]
    knob_fixes = [line for line in tried.split("\n- ") if line.strip()]
    labels = [b.label for b in at.button if b.key and b.key.startswith("apply_fix")]
    assert len(labels) == len(knob_fixes) >= 5 and "GPUs → 2" in labels, (labels, knob_fixes)
