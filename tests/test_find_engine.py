"""Find plans what the Engine page plans (issue "One link, one answer", item 6): each setup sized by the
chosen engine's view, fp8 weights searched for a hint, the CLI's ``--engine``.

The engine figures are :func:`planner.engines.plan_engine`'s for the same setup (never re-derived here).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.lazy_tabs import open_tab
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
FIND = "pages/7_Find_a_GPU_setup.py"
ENGINE_PAGE = "pages/5_Engine.py"
OSS = "openai/gpt-oss-120b"
LLAMA70 = "meta-llama/Llama-3.1-70B"
A100 = "nvidia-a100-sxm-80gb"
OSS_CASE = dict(users=100, prompt_len=2000, output_len=500)  # the review's case: 100 users of 2,000 + 500 tokens


def _gpus():
    return list(load_gpus().values())


def _engine_users(model, setup) -> int:
    """Requests of max_model_len one replica holds under vLLM, as the Engine page plans that replica: the whole
    requests that decode at once (gpt-oss's sliding layers keep 128 tokens each once a request decodes), which
    the printed concurrency undercounts (its divisor holds every request at its prefill peak)."""
    gpu = get_gpu(setup.gpu_id)
    p = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=setup.tensor_parallel_size, max_model_len=setup.max_model_len,
        kv_cache_dtype="auto" if setup.kv_cache_dtype in ("bf16", "fp16") else setup.kv_cache_dtype,
        gpu_name=gpu.name))
    assert p.max_concurrency_decoding > 1.5 * p.max_concurrency
    return int(p.max_concurrency_decoding)


def test_gpt_oss_on_one_a100_holds_what_vllm_holds():
    """The review saw "1x A100, 189 users for 100 wanted" (the budget arithmetic of the checkpoint's bytes); vLLM,
    with its Marlin MXFP4 layout on Ampere and its own profile pass, holds far fewer there. The plan now charges
    the weights as the newest vLLM loads them, so neither view lists one A100; with one GPU allowed, the engine
    view's row holds vLLM's users and says why it falls short."""
    model = served_model_spec(OSS)
    budget = find_setups(model, _gpus(), FindRequest(**OSS_CASE, gpu_ids=(A100,), tensor_parallel_sizes=(1,)))
    viewed = find_setups(model, _gpus(), FindRequest(**OSS_CASE, gpu_ids=(A100,), tensor_parallel_sizes=(1,),
                                                      engine="vllm"))
    assert budget.options and viewed.options
    assert not any(s.num_gpus == 1 for s in budget.options) and not any(s.num_gpus == 1 for s in viewed.options)
    [seen] = [s for s in find_setups(model, _gpus(), FindRequest(
        **OSS_CASE, gpu_ids=(A100,), tensor_parallel_sizes=(1,), max_gpus=1, kv_cache_dtypes=("auto",),
        engine="vllm")).rows()]
    one = replace(viewed.options[0], tensor_parallel_size=seen["tensor_parallel_size"],
                  max_model_len=seen["max_model_len"])
    users = _engine_users(model, one)
    assert seen["max_concurrent_sequences"] == users < 100 and not seen["fits"]
    assert any("vllm holds" in r for r in seen["reasons"])
    assert viewed.engine == "vllm" and any("Sized as vllm sizes them" in n for n in viewed.notes)


def test_every_top_pick_agrees_with_the_engine_view():
    """gpt-oss-120b, 100 users: every listed TP setup's users are vLLM's for one replica, times the replicas (the
    DP+EP / DCP / disaggregated rows are checked against ``plan_scale`` in tests/test_find_scale.py)."""
    model = served_model_spec(OSS)
    found = find_setups(model, _gpus(), FindRequest(**OSS_CASE, engine="vllm", top=5, setup_kinds=("TP",)))
    assert found.fits
    for s in found.options:
        assert s.max_concurrent_sequences == _engine_users(model, s) * s.data_parallel_size, s.gpu_id
        assert s.users_per_replica <= _engine_users(model, s)


def test_fp8_weights_hint_when_they_cut_the_cheapest_answer():
    """Llama-3.1-70B in bf16 (a 16-bit checkpoint): fp8 weights are searched beside it, and the cheapest fp8
    setup is named when it costs at most 3/4 of the cheapest answer; an MXFP4 checkpoint (gpt-oss) gets no fp8
    search, and a saving of a cent (Llama-3-8B, 64 users) no hint."""
    llama = served_model_spec(LLAMA70)
    found = find_setups(llama, _gpus(), FindRequest(users=20, prompt_len=2000, output_len=500, engine="vllm",
                                                    alternative_weight_dtype="fp8"))
    alt = found.weight_alternative
    assert alt is not None and alt.weight_dtype == "fp8" and "--quantization fp8" in alt.launch_command
    assert alt.price_per_hour <= 0.75 * found.options[0].price_per_hour
    assert any(n.startswith("fp8 weights (--quantization fp8 of this checkpoint) would") for n in found.notes)
    oss = find_setups(served_model_spec(OSS), _gpus(), FindRequest(**OSS_CASE, engine="vllm",
                                                                    alternative_weight_dtype="fp8"))
    assert oss.weight_alternative is None
    small = find_setups(served_model_spec("meta-llama/Meta-Llama-3-8B"), _gpus(), FindRequest(
        users=64, prompt_len=3596, output_len=500, engine="vllm", alternative_weight_dtype="fp8"))
    assert small.weight_alternative is None


def test_engine_skips_kv_dtypes_it_does_not_offer():
    found = find_setups(served_model_spec(LLAMA70), _gpus(), FindRequest(
        users=20, prompt_len=2000, output_len=500, engine="llama.cpp", kv_cache_dtypes=("auto", "fp8"), top=3))
    assert all(s.kv_cache_dtype != "fp8" for s in found.options)
    assert any("KV dtype fp8 skipped: llama.cpp does not offer it" in n for n in found.notes)
    assert all(s.launch_command.startswith("llama-server ") for s in found.options)


def _json(capsys, argv) -> list[dict]:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_find_engine_flag(capsys):
    """``find --engine``: vLLM by default (as the app), ``budget`` for the arithmetic alone, any engine's own
    launch command; the JSON keys stay those of before (nothing renamed)."""
    base = ["find", "--model", OSS, "--users", "100", "--prompt-len", "2000", "--output-len", "500", "--gpu-types",
            A100, "--top", "3", "--format", "json"]
    default = _json(capsys, base)
    vllm = _json(capsys, [*base, "--engine", "vLLM"])
    budget = _json(capsys, [*base, "--engine", "budget"])
    assert default == vllm and default != budget
    assert all(a.keys() == b.keys() for a, b in zip(default, budget))
    model = served_model_spec(OSS)
    expected = find_setups(model, _gpus(), FindRequest(**OSS_CASE, gpu_ids=(A100,), top=3, engine="vllm",
                                                       alternative_weight_dtype="fp8"))
    assert [r["max_concurrent_sequences"] for r in default] == [s.max_concurrent_sequences for s in
                                                                (expected.options or (expected.closest,))]
    sglang = _json(capsys, [*base, "--engine", "sglang"])
    assert all(r["launch_command"].startswith("python -m sglang.launch_server --model-path openai/gpt-oss-120b")
               for r in sglang)
    with pytest.raises(SystemExit) as exc:
        main([*base, "--engine", "nope"])
    assert exc.value.code == 2 and "unknown engine 'nope'" in capsys.readouterr().err


def _run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_find_page_top_pick_agrees_with_the_engine_page():
    """The Find page's first row for gpt-oss-120b (100 users of 2,000 + 500 tokens) holds the users the Engine
    page shows for the same model, GPU, tensor-parallel size and max_model_len (the floor of its requests decoding
    at once, beside its printed concurrency)."""
    at = _run(FIND, {"model": OSS, **{k: str(v) for k, v in OSS_CASE.items()}})
    assert not at.exception and not at.error
    [box] = [s for s in at.selectbox if s.key == "engine"]
    assert box.value == "vllm"
    row = at.dataframe[0].value.iloc[0]
    gpu = next(g for g in _gpus() if g.name == row["GPU"])
    engine = _run(ENGINE_PAGE, {"model": OSS, "gpu": gpu.id, "num_gpus": str(row["TP"]), "context_len": "2500",
                                "kv_cache_dtype": "auto" if row["KV dtype"] in ("bf16", "fp16") else row["KV dtype"]})
    assert not engine.exception
    shown = {m.label: float(m.value.rstrip("x")) for m in metric_tiles(engine) if "oncurrency" in m.label or "decoding"
             in m.label}
    assert shown["Requests decoding at once"] > shown["Max concurrency"]
    assert row["Max users"] == int(shown["Requests decoding at once"]) * row["replicas"]


def test_find_page_engine_from_the_link_writes_its_command():
    at = _run(FIND, {"model": OSS, "users": "20", "engine": "sglang", "gpu_types": "nvidia-h100-sxm-80gb"})
    assert not at.exception and not at.error
    assert all(c.startswith("python -m sglang.launch_server") for c in at.dataframe[0].value["Launch command"])


def test_find_page_offers_fp8_weights_in_one_click():
    at = _run(FIND, {"model": LLAMA70, "users": "20"})
    assert not at.exception and not at.error
    [button] = [b for b in at.button if b.key and b.key.startswith("find_weight_fix_")]
    assert button.label == "Weights → fp8"
    button.click().run()
    assert not at.exception
    assert at.selectbox(key="weight_dtype").value == "fp8"
    assert "--quantization fp8" in at.dataframe[0].value["Launch command"].iloc[0]


def test_find_page_throughput_table_ends_at_the_setups_max_users():
    """Llama-3.1-8B, 1 x A100 PCIe, fp8 KV (the review's case): the throughput table's last "Fits in KV" batch is
    the setups table's "Max users" of that row (358, vLLM's view), not the budget arithmetic's 365; its TPOT at the
    setup's load is the row's TPOT."""
    from planner.traffic.throughput import time_per_output_token
    from ui.find_view import setup_throughput

    model_id, gpu_id = "meta-llama/Llama-3.1-8B-Instruct", "nvidia-a100-pcie-80gb"
    at = _run(FIND, {"model": model_id, "users": "200", "gpu_types": gpu_id, "kv_cache_dtypes": "fp8"})
    assert not at.exception and not at.error
    rows = at.dataframe[0].value
    first = rows.iloc[0]
    assert first["GPU"] == get_gpu(gpu_id).name and first["replicas"] == 1 and first["TP"] == 1
    open_tab(at, "find_section", "Throughput and cost")  # a lazy tab (ui.views.lazy_tabs)
    throughput = next(d.value for d in at.dataframe if "Fits in KV" in d.value.columns)
    fitting = throughput[throughput["Fits in KV"]]
    assert int(fitting.iloc[-1]["Batch"].replace(",", "")) == first["Max users"]
    found = find_setups(served_model_spec(model_id), _gpus(), FindRequest(
        users=200, prompt_len=2000, output_len=500, engine="vllm", gpu_ids=(gpu_id,), kv_cache_dtypes=("fp8",)))
    s = found.options[0]
    assert s.max_concurrent_sequences == first["Max users"] == 358
    gpu = get_gpu(gpu_id)
    est = setup_throughput(served_model_spec(model_id), gpu, s, found_request := FindRequest(
        users=200, prompt_len=2000, output_len=500, engine="vllm", kv_cache_dtypes=("fp8",)),
        found_request.resolved_workload())
    assert est.kv_bytes_per_sequence_per_gpu == s.kv_bytes_per_sequence_per_gpu
    assert time_per_output_token(est.weights_bytes_per_gpu, est.kv_bytes_per_sequence_per_gpu, s.users_per_replica,
                                 gpu.bandwidth_gb_s) == pytest.approx(s.time_per_output_token_s)


def test_find_leaves_out_gpus_vllm_cannot_run_deepseek_v4_on():
    """Find's DeepSeek-V4 answer under vLLM names no Ampere or Ada card (FlashMLA sparse / FlashInfer V4 kernels
    need SM90+, planner.engines.vllm_deepseek_v4.gpu_refusal); MI300X stays (vLLM's ROCm V4 path)."""
    model = served_model_spec("deepseek-ai/DeepSeek-V4-Flash")
    ids = ("nvidia-a100-sxm-80gb", "nvidia-rtx-a6000", "nvidia-rtx-6000-ada", "amd-mi300x")
    found = find_setups(model, _gpus(), FindRequest(users=64, prompt_len=7692, output_len=500, engine="vllm",
                                                    gpu_ids=ids, top=20))
    names = {s.gpu_id for s in found.options}
    assert names == {"amd-mi300x"}
