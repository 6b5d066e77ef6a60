"""Find ranks setups by the link's vLLM engine knobs, as Home and the Engine page plan them (one link, one answer).

QA: ``/Find_a_GPU_setup?model=openai/gpt-oss-120b&enforce_eager=true`` ranked the setups by the default CUDA-graph
memory while Home and the Engine page applied ``--enforce-eager``; ``python -m planner find`` had no such flag. Every
expected figure here is :func:`planner.engines.plan_engine`'s (the Engine page's) for the same launch and knobs.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_app import run_page
from tests.tiles import metric_tiles
from ui import find_view

FIND, ENGINE_PAGE = "pages/7_Find_a_GPU_setup.py", "pages/5_Engine.py"
OSS, H100 = "openai/gpt-oss-120b", "nvidia-h100-sxm-80gb"
CASE = dict(users=100, prompt_len=2000, output_len=500)
LINK = {"model": OSS, "gpu_types": H100, **{k: str(v) for k, v in CASE.items()}}


def _engine_users(setup, **knobs) -> int:
    """Whole requests one replica of ``setup`` decodes at once under vLLM with ``knobs`` (the Engine page's
    "Requests decoding at once")."""
    gpu = get_gpu(setup.gpu_id)
    p = plan_engine(served_model_spec(OSS), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=setup.tensor_parallel_size, max_model_len=setup.max_model_len,
        kv_cache_dtype=setup.kv_cache_dtype_flag, gpu_name=gpu.name, **knobs))
    return int(p.requests_held)


def _find(**knobs):
    return find_setups(served_model_spec(OSS), list(load_gpus().values()), FindRequest(
        **CASE, engine="vllm", gpu_ids=(H100,), setup_kinds=("TP",), engine_knobs=tuple(knobs.items())))


@pytest.mark.parametrize("knobs", [{"enforce_eager": True}, {"cudagraph_mode": "NONE"}, {"optimization_level": 0},
                                   {"usage_context": "llm"}, {"max_num_batched_tokens": 4096}],
                         ids=lambda k: ",".join(f"{a}={b}" for a, b in k.items()))
def test_every_tp_row_holds_what_the_engine_view_holds_with_the_knob(knobs):
    found = _find(**knobs)
    assert found.options
    for s in found.options:
        assert s.max_concurrent_sequences == _engine_users(s, **knobs) * s.data_parallel_size, s
    plain = {(s.tensor_parallel_size, s.kv_cache_dtype): s.kv_cache_budget_bytes_per_gpu for s in _find().options}
    assert any(plain.get((s.tensor_parallel_size, s.kv_cache_dtype)) not in (None, s.kv_cache_budget_bytes_per_gpu)
               for s in found.options)  # the knob moves the KV memory


def test_enforce_eager_changes_the_cheapest_setup_and_its_command():
    """gpt-oss-120b, 100 users of 2,000 + 500 tokens on H100: without CUDA graphs one GPU with an fp8 cache holds
    them, where the default graphs leave it short (two GPUs are the cheapest)."""
    plain, eager = _find().options[0], _find(enforce_eager=True).options[0]
    assert eager.price_per_hour < plain.price_per_hour
    assert eager.max_concurrent_sequences >= 100 and "--enforce-eager" in eager.launch_command
    assert "--enforce-eager" not in plain.launch_command


def test_max_num_seqs_caps_a_replica_and_is_the_launch_flag():
    found = _find(max_num_seqs=64)
    assert found.options and all(s.users_per_replica <= 64 for s in found.options)
    assert all("--max-num-seqs 64" in s.launch_command for s in found.options)
    for s in found.options:
        # the requests the pool holds, at most the 64 the scheduler runs (vllm/v1/core/sched/scheduler.py)
        assert s.max_concurrent_sequences == min(_engine_users(s, max_num_seqs=64), 64) * s.data_parallel_size


def test_a_vllm_knob_under_another_engine_is_refused():
    with pytest.raises(ValueError, match="enforce_eager"):
        FindRequest(**CASE, engine="sglang", engine_knobs=(("enforce_eager", True),)).validate()


def test_the_cached_search_is_keyed_by_the_knobs():
    model, gpus = served_model_spec(OSS), tuple(load_gpus().values())
    request = FindRequest(**CASE, engine="vllm", gpu_ids=(H100,), setup_kinds=("TP",))
    eager = FindRequest(**CASE, engine="vllm", gpu_ids=(H100,), setup_kinds=("TP",),
                        engine_knobs=(("enforce_eager", True),))
    assert find_view.run_find(model, gpus, request) != find_view.run_find(model, gpus, eager)


def test_find_page_ranks_by_the_links_enforce_eager_as_the_engine_page_shows():
    at = run_page(FIND, {**LINK, "enforce_eager": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    row = at.dataframe[0].value.iloc[0]
    assert "--enforce-eager" in row["Launch command"]
    kv = "auto" if row["KV dtype"] in ("bf16", "fp16") else row["KV dtype"]
    engine = run_page(ENGINE_PAGE, {"model": OSS, "gpu": H100, "num_gpus": str(row["TP"]), "context_len": "2500",
                                    "enforce_eager": "true", "kv_cache_dtype": kv})
    assert not engine.exception
    shown = {m.label: m.value for m in metric_tiles(engine)}
    assert row["Max users"] == int(float(shown["Requests decoding at once"])) * row["replicas"]


def test_find_page_under_sglang_leaves_the_vllm_knob_out():
    at = run_page(FIND, {**LINK, "users": "20", "engine": "sglang", "enforce_eager": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not any("--enforce-eager" in c for c in at.dataframe[0].value["Launch command"])
    texts = [m.value for kind in (at.caption, at.markdown, at.info, at.warning) for m in kind]
    assert any("enforce_eager" in t and "no such knob" in t for t in texts), texts


def test_cli_find_takes_plans_knob_flags(capsys):
    argv = ["find", "--model", OSS, "--gpu", H100, "--users", "100", "--prompt-len", "2000", "--output-len", "500",
            "--setup-kinds", "tp", "--format", "json"]
    assert main([*argv, "--enforce-eager"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["launch_command"], r["max_concurrent_sequences"]) for r in rows] == [
        (s.launch_command, s.max_concurrent_sequences) for s in _find(enforce_eager=True).options]
    assert main([*argv, "--engine", "sglang", "--enforce-eager"]) == 2
    assert "vLLM flag" in capsys.readouterr().err
