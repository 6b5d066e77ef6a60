"""Find offers data + expert parallel, decode context parallel and disaggregated setups (issue "Serve at scale").

Every figure a row shows is cross-checked against the CLI that plans the same launch on its own
(``python -m planner plan ... -dp 8 --enable-expert-parallel``, ``plan ... -dcp 8``, ``disagg``, ``deploy``),
never re-derived here.
"""

from __future__ import annotations

import json

import pytest

from model_catalog import served_model_spec
from model_catalog.gpus import load_gpus
from planner.cli import main
from planner.traffic import find_scale
from planner.traffic.find_types import SETUP_KINDS, FindRequest, setup_kind
from planner.traffic.reverse import find_setups

V32, H200 = "deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm"
QWEN_MOE, H100 = "Qwen/Qwen3-30B-A3B", "nvidia-h100-sxm-80gb"
LLAMA70 = "meta-llama/Llama-3.1-70B"
LOAD = dict(prompt_len=2000, output_len=500)  # 2,500-token requests


def _gpus():
    return list(load_gpus().values())


def _cli_json(capsys, argv: list[str]):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def _cli_text(capsys, argv: list[str]) -> str:
    assert main(argv) == 0
    return capsys.readouterr().out.strip()


def _find(model_id: str, **kw):
    request = FindRequest(**(dict(LOAD, engine="vllm", top=50) | kw))
    return find_setups(served_model_spec(model_id), _gpus(), request)


@pytest.fixture(scope="module")
def v32_500():
    """DeepSeek-V3.2 on H200 SXM, 500 users of 2,000 + 500 tokens, up to 16 GPUs, every kind."""
    return _find(V32, users=500, gpu_ids=(H200,), max_gpus=16, kv_cache_dtypes=("auto",))


def test_dp_ep_is_ranked_above_tp_when_it_holds_the_users_for_less(v32_500, capsys):
    """-tp 8 holds 369 of the 500 users (two replicas: 16 GPUs); DP + EP holds them on 8 GPUs, so its row comes first
    among TP and DP+EP. Of the 8-GPU DP+EP launches -tp 2 -dp 4 holds the most (1,016; -dp 8 holds 896 now that each
    rank's MoE layers are charged the batch gathered from every rank, planner/engines/vllm_moe_dispatch.py). Its
    figures are what ``plan --num-gpus 2 -dp 4`` prints for the same inputs (GPU, length, engine)."""
    kinds = [s for s in v32_500.options if s.kind in ("TP", "DP+EP")]
    first = kinds[0]
    tp = min((s for s in kinds if s.kind == "TP"), key=lambda s: s.price_per_hour)
    assert (first.kind, first.num_gpus, first.tensor_parallel_size, first.data_parallel_size) == ("DP+EP", 8, 2, 4)
    assert (tp.num_gpus, tp.data_parallel_size) == (16, 2) and first.price_per_hour == tp.price_per_hour / 2
    plan = _cli_json(capsys, ["plan", "--model", V32, "--gpu", H200, "--context-len", "2500", "--engine", "vllm",
                              "--num-gpus", "2", "-dp", "4", "--enable-expert-parallel", "--format", "json"])["scale"]
    per_rank = int(plan["max_concurrency_per_rank"])  # 254.45 requests of 2,500 tokens per rank
    assert first.max_concurrent_sequences == per_rank * 4 == 1016
    assert first.users_per_replica == 125  # ceil(500 / 4) per rank
    assert first.weights_bytes_per_gpu == plan["weights_bytes_per_gpu"] == 92_362_416_992
    assert first.kv_cache_budget_bytes_per_gpu == plan["available_kv_cache_bytes"]
    assert first.expert_parallel_size == plan["layout"]["expert_parallel_size"] == 8
    assert first.fits and first.margin == pytest.approx(1 - 125 * 2500 / plan["engine_kv_cache_tokens"])
    assert "--data-parallel-size 4" in first.launch_command and "--enable-expert-parallel" in first.launch_command
    assert "--max-num-seqs 125" in first.launch_command and first.deploy_commands == ()  # one node


def test_dcp_row_is_plan_dcp(v32_500, capsys):
    """DeepSeek-V3.2's MLA latent is whole on each of 8 GPUs under -tp 8; -dcp 8 splits each request's tokens
    over them: 8 x the users on the same GPUs, as ``plan -dcp 8`` prints."""
    dcp = next(s for s in v32_500.options if s.kind == "DCP" and s.num_gpus == 8)
    plan = _cli_json(capsys, ["plan", "--model", V32, "--gpu", H200, "--num-gpus", "8", "--context-len", "2500",
                              "--engine", "vllm", "-dcp", "8", "--format", "json"])["scale"]
    assert dcp.decode_context_parallel_size == 8 and dcp.tensor_parallel_size == 8
    assert dcp.max_concurrent_sequences == plan["engine_kv_cache_tokens"] // 2500
    assert "--decode-context-parallel-size 8" in dcp.launch_command


def test_multi_node_dp_ep_carries_each_nodes_command_and_the_llm_d_values(v32_500, capsys):
    row = next(s for s in v32_500.options if s.kind == "DP+EP" and s.num_gpus == 16)
    assert row.nodes == 2 and "--data-parallel-size-local 8" in row.launch_command
    commands = [c for c in row.deploy_commands if not c.startswith("#")]
    assert len(commands) == 2 and "--headless" not in commands[0] and "--headless" in commands[1]
    assert "--data-parallel-start-rank 8" in commands[1]
    assert "parallelism:\n    tensor: 1\n    data: 16\n    dataLocal: 8\n    workers: 2" in row.llm_d_values
    assert "--enable-expert-parallel" in row.llm_d_values


def test_disaggregated_row_is_what_disagg_and_deploy_print(capsys):
    """Qwen3-30B-A3B on H100, 300 users: the cheapest disaggregated row's pools, transfer and deployment are
    ``disagg`` / ``deploy``'s for the same pool sizes."""
    found = _find(QWEN_MOE, users=300, gpu_ids=(H100,), kv_cache_dtypes=("auto",), setup_kinds=("disaggregated",))
    row = found.options[0]
    assert row.kind == "disaggregated" and {s.kind for s in found.options} == {"disaggregated"}
    flags = ["--model", QWEN_MOE, "--gpu", H100, "--users", "300", "--prompt-len", "2000", "--output-len", "500",
             "--engine", "vllm", "--prefill-tensor-parallel-size", str(row.prefill["tensor_parallel_size"]),
             "--decode-tensor-parallel-size", str(row.decode["tensor_parallel_size"])]
    disagg = _cli_json(capsys, ["disagg", *flags])
    assert row.num_gpus == disagg["gpus"] == row.prefill["gpus"] + row.decode["gpus"]
    assert row.prefill == disagg["prefill"] and row.decode == disagg["decode"]
    assert row.prefill["max_model_len"] == row.decode["max_model_len"] == 2500  # both roles: prompt + output
    assert row.time_to_first_token_s == pytest.approx(disagg["ttft_ms"] / 1000)
    assert row.max_concurrent_sequences == disagg["decode"]["replicas"] * disagg["decode"]["max_concurrency"]
    assert list(row.deploy_commands) == _cli_text(capsys, ["deploy", "--target", "commands", *flags]).splitlines()
    assert row.llm_d_values.strip() == _cli_text(capsys, ["deploy", "--target", "llm-d", *flags])
    assert "--kv-transfer-config" in row.launch_command


def test_a_dense_gqa_model_gets_tp_rows_only():
    found = _find(LLAMA70, users=200)
    assert found.fits and {s.kind for s in found.options} == {"TP"}
    assert not any("DP+EP" in n for n in found.notes)
    assert find_scale.scale_shapes(served_model_spec(LLAMA70), "vllm", (1, 2, 4, 8), 64) == []


def test_budget_arithmetic_names_the_kinds_it_leaves_out():
    found = _find(QWEN_MOE, users=50, engine=None, gpu_ids=(H100,))
    assert {s.kind for s in found.options} == {"TP"}
    assert any("only TP setups are listed" in n for n in found.notes)


def test_a_new_user_count_plans_no_launch_again(monkeypatch):
    """What does not depend on the users (every launch's plan, every replica's engine view) is kept: a second
    search with another user count calls neither planner."""
    model = served_model_spec(QWEN_MOE)
    request = FindRequest(**LOAD, users=100, engine="vllm", gpu_ids=(H100, H200), kv_cache_dtypes=("auto",), top=200)
    first = find_setups(model, _gpus(), request)
    calls = []
    monkeypatch.setattr(find_scale, "plan_scale", lambda *a, **k: calls.append(a))
    from planner.traffic import find_engine
    monkeypatch.setattr(find_engine, "plan_engine", lambda *a, **k: calls.append(a))
    from dataclasses import replace
    second = find_setups(model, _gpus(), replace(request, users=101))
    assert calls == [] and {s.kind for s in second.options} == {s.kind for s in first.options} == set(SETUP_KINDS)


def test_setup_kinds_spellings_and_the_cli_flag(capsys):
    assert [setup_kind(x) for x in ("tp", "DP+EP", "dp-ep", "dp ep", "DCP", "disagg", "P/D")] == [
        "TP", "DP+EP", "DP+EP", "DP+EP", "DCP", "disaggregated", "disaggregated"]
    with pytest.raises(ValueError, match="unknown setup kind"):
        setup_kind("pp")
    with pytest.raises(ValueError, match="setup_kinds must be among"):
        FindRequest(users=1, prompt_len=1, setup_kinds=("PP",)).validate()
    rows = _cli_json(capsys, ["find", "--model", V32, "--users", "500", "--prompt-len", "2000", "--output-len", "500",
                              "--gpu-types", H200, "--max-gpus", "16", "--setup-kinds", "dp-ep", "--format", "json"])
    assert {r["kind"] for r in rows} == {"DP+EP"}
    old_keys = {"gpu_id", "gpu_name", "num_gpus", "tensor_parallel_size", "data_parallel_size", "kv_cache_dtype",
                "weight_dtype", "price_per_hour", "price_per_gpu_hour", "users", "users_per_replica",
                "max_concurrent_sequences", "kv_cache_budget_bytes_per_gpu", "kv_demand_bytes_per_gpu", "margin",
                "time_per_output_token_s", "max_model_len", "fits", "launch_command", "time_to_first_token_s",
                "output_tokens_per_s", "usd_per_million_output_tokens", "reasons", "notes", "headroom_users"}
    new_keys = {"kind", "expert_parallel_size", "decode_context_parallel_size", "nodes", "weights_bytes_per_gpu",
                "deploy_commands", "llm_d_values", "prefill", "decode", "kv_bytes_per_sequence_per_gpu",
                "kv_cache_dtype_flag", "kind_label", "max_num_seqs_cap"}  # stop 47: kind text, a binding cap
    assert set(rows[0]) == old_keys | new_keys
    text = _cli_text(capsys, ["find", "--model", V32, "--users", "500", "--prompt-len", "2000", "--output-len", "500",
                              "--gpu-types", H200, "--max-gpus", "8", "--setup-kinds", "tp,dp-ep"])
    assert "kind" in text.splitlines()[0] and "DP+EP" in text


@pytest.mark.parametrize(("model_id", "gpus"), [
    ("openai/gpt-oss-120b", ("H100 SXM5 80GB", "A100 SXM4 80GB", "B200")),  # MXFP4 experts: layout per generation
    ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4", ("B200", "H100 SXM5 80GB")),  # NVFP4: Blackwell pads scales
])
def test_memoized_rank_weights_are_each_gpus_own(model_id, gpus):
    """One layout's weights are kept once per kernel layout, never shared across GPUs whose loaders differ."""
    from dataclasses import replace

    from planner.scale.layout import ScaleRequest, rank_layout
    from planner.scale.weights import _rank_weight_bytes, rank_weight_bytes

    model = served_model_spec(model_id)
    layout = rank_layout(ScaleRequest(data_parallel_size=4, enable_expert_parallel=True), family="vllm",
                         tensor_parallel_size=1, num_experts=model.num_experts, num_kv_heads=1)
    fresh = {g: _rank_weight_bytes(replace(model), layout, "vllm", "auto", g) for g in gpus}
    assert len(set(fresh.values())) > 1  # the GPUs' loaders do differ here
    for gpu in (*gpus, *gpus):  # memo filled, then read
        assert rank_weight_bytes(model, layout, engine="vllm", weight_dtype_name="auto", gpu_name=gpu) == fresh[gpu]


def test_deepseek_v32_rows_label_the_cache_vllm_stores_and_list_it_once():
    """Under vLLM, --kv-cache-dtype auto and fp8 both store DeepSeek-V3.2's sparse-MLA layers as fp8_ds_mla
    (planner/engines/vllm_kv_formats.py uses_fp8_ds_mla): one row per setup, labelled so, and its roofline reads the
    bytes the engine plan stores per token (not the bf16 latent of the budget arithmetic)."""
    from planner.engines import plan_engine
    from planner.engines.types import EngineRequest

    found = _find(V32, users=300, gpu_ids=(H200,), max_gpus=8, kv_cache_dtypes=("auto", "fp8"))
    assert found.options and {s.kv_cache_dtype for s in found.options} == {"fp8_ds_mla"}
    keys = [(s.kind, s.num_gpus, s.tensor_parallel_size, s.data_parallel_size) for s in found.options]
    assert len(keys) == len(set(keys))  # no bf16 / fp8 twins with the same users
    gpu = load_gpus()[H200]
    plan = plan_engine(served_model_spec(V32), gpu.framework_memory_bytes,
                       EngineRequest(gpu_name=gpu.name, tensor_parallel_size=8, max_model_len=2500))
    assert plan.kv_cache_dtype == "fp8_ds_mla"  # the Engine page's header label
    kv_seq = plan.limiting_rank.kv_cache_bytes_per_token * (2000 + 500 // 2)  # at the mean decode context
    fewer = _find(V32, users=200, gpu_ids=(H200,), max_gpus=8, kv_cache_dtypes=("auto", "fp8"))
    t300, t200 = (next(s for s in x.options if s.kind == "TP" and s.num_gpus == 8).time_per_output_token_s
                  for x in (found, fewer))
    assert (t300 - t200) * gpu.bandwidth_gb_s * 1e9 / 100 == pytest.approx(kv_seq, rel=1e-9)  # 100 more sequences


def test_nothing_fits_advice_respects_the_filters_and_never_repeats_the_request():
    """DeepSeek-V3.2, disaggregated only, H200 only, 8 GPUs: no disaggregated pair fits in 8. The advice names the
    search's own answer at 16 GPUs (the kinds and GPU type asked), the filtered-out kind as a filter change, no fp8
    weights (the checkpoint is fp8 already) and no fp8 KV (vLLM stores fp8_ds_mla for auto and fp8 alike)."""
    asked = dict(users=200, gpu_ids=(H200,), kv_cache_dtypes=("auto",), setup_kinds=("disaggregated",))
    found = _find(V32, **asked)
    assert not found.fits
    wider = _find(V32, **asked, max_gpus=16).options[0]
    assert wider.kind == "disaggregated" and wider.num_gpus == 16
    assert found.suggestions[0] == (
        f"raise max_gpus to 16: 16 x {H200} (disaggregated, tp {wider.tensor_parallel_size} x "
        f"{wider.data_parallel_size}, {wider.kv_cache_dtype} KV, {wider.max_concurrent_sequences:,} users) at "
        f"${wider.price_per_hour:.2f}/h fits")
    other = _find(V32, **(asked | {"setup_kinds": ("TP", "DP+EP", "DCP")})).options[0]
    assert any(s.startswith(f"allow setup kind {other.kind} (the setup kinds filter): {other.num_gpus} x {H200}")
               for s in found.suggestions)
    text = " ".join(found.suggestions)
    assert "max_gpus to 8" not in text and "weight_dtype fp8" not in text and "kv_cache_dtype fp8" not in text
    assert "use weight_dtype int4" in text  # int4 does halve an fp8 checkpoint


def test_nothing_fits_offers_fp8_kv_where_it_stores_less():
    found = _find(LLAMA70, users=2000, gpu_ids=(H100,), kv_cache_dtypes=("auto",), max_gpus=2)
    assert not found.fits
    assert "allow kv_cache_dtype fp8 (stores fp8 instead of bf16)" in found.suggestions


def test_find_page_nothing_fits_shows_the_checked_advice_and_no_empty_table():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from ui.find_table import EMPTY_TEXT

    page = Path(__file__).resolve().parents[1] / "pages" / "7_Find_a_GPU_setup.py"
    at = AppTest.from_file(str(page), default_timeout=180)
    at.query_params["model"] = V32
    at.query_params["setup_kinds"] = ["disaggregated"]
    at.query_params["gpu_types"] = [H200]
    at.run()
    assert not at.exception, at.exception
    warning = next(w.value for w in at.warning if "Nothing fits" in w.value)
    assert "raise max_gpus to 16: 16 x nvidia-h200-sxm (disaggregated" in warning
    assert "max_gpus to 8" not in warning and "weight_dtype fp8" not in warning
    assert not at.dataframe or all(d.key != "setups_table" for d in at.dataframe)
    assert any(c.value == EMPTY_TEXT for c in at.caption)


def test_find_lists_dcp_only_where_vllm_s_attention_backend_runs_it():
    """On AMD GPUs: no DCP row for DeepSeek-V3.2 (ROCm's sparse-MLA backend returns no decode log-sum-exp) or for a
    full-attention model; Kimi-K2's dense MLA runs ROCm's default TRITON_MLA, which does (planner/scale/context.py
    dcp_backend_refusal, each case planned by plan_scale in tests/test_scale.py)."""
    amd = ("amd-mi300x", "amd-mi325x")
    v32 = _find(V32, users=500, gpu_ids=amd, max_gpus=16, kv_cache_dtypes=("auto",), setup_kinds=("DCP", "TP"))
    assert v32.options and "DCP" not in {s.kind for s in v32.options} | {s.kind for s in (v32.closest,) if s}
    qwen = _find(QWEN_MOE, users=300, gpu_ids=amd, kv_cache_dtypes=("auto",), setup_kinds=("DCP",))
    assert not qwen.options
    kimi = _find("moonshotai/Kimi-K2-Thinking", users=500, gpu_ids=amd, max_gpus=16, kv_cache_dtypes=("auto",),
                 setup_kinds=("DCP",))
    assert kimi.options and {s.kind for s in kimi.options} == {"DCP"}
    nvidia = _find(V32, users=500, gpu_ids=(H200,), max_gpus=16, kv_cache_dtypes=("auto",), setup_kinds=("DCP",))
    assert nvidia.options and all("check_attention_cp_compatibility" in " ".join(s.notes) for s in nvidia.options)
