"""DeepSeek-V4's KV per token is stated in one cache, or with its cache named, on every surface (QA, stop 41).

``plan`` for V4-Flash on 8 x H200 printed "KV budget ... (fp8_ds_mla)" and then "KV/token 8.08 KiB": the model's
exact figure in bf16 (every layer's full per-token KV, the two sliding-window layers included), while Home's tile
for the same plan said 4.01 KiB a token in vLLM's fp8_ds_mla pool pages, the cache its users are counted in. The
Allocation page's KV-dtype table listed bf16/fp8/int8/int4 rows with their exact per-token bytes beside one and the
same pool's users, and the GQA page's as-built row gave the bf16 figure unlabelled. Expected pool figures come from
the Engine view's own layout (one pool block per 256 compressed tokens), never typed in.
"""

from __future__ import annotations

import json

from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.cli.args import human_bytes
from planner.engines.vllm_deepseek_v4 import DEFAULT_BLOCK_SIZE, deepseek_v4_layout
from tests.lazy_tabs import open_tab
from tests.test_serving_app import run
from tests.tiles import metric_tiles
from ui.format import format_bytes

V4, LLAMA, H200 = "deepseek-ai/DeepSeek-V4-Flash", "meta-llama/Meta-Llama-3-8B", "nvidia-h200-sxm"
LINK = {"model": V4, "gpu": H200, "num_gpus": "8", "context_len": "8192", "batch_size": "64"}
CLI = ["--model", V4, "--gpu", H200, "--num-gpus", "8"]


def _v4_plan(context: int = 8192, batch: int = 64):
    return plan(model_spec(V4), get_gpu(H200).framework_memory_bytes,
                PlanRequest(context_len=context, batch_size=batch, num_gpus=8), gpu_id=H200)


def _pool_per_token() -> int:
    """The Engine view's layout: one pool block per ``DEFAULT_BLOCK_SIZE`` tokens of the compressed caches."""
    model = model_spec(V4)
    layout = deepseek_v4_layout(model, range(model.num_layers), DEFAULT_BLOCK_SIZE)
    return -(-layout.bytes_per_block // DEFAULT_BLOCK_SIZE)


def test_plan_names_its_exact_cache_and_the_pool_growth():
    p = _v4_plan()
    assert (p.kv_cache_dtype, p.kv_cache_exact_dtype) == ("fp8_ds_mla", "bf16")  # config.json torch_dtype bfloat16
    assert p.kv_cache_pool_bytes_per_token == _pool_per_token() < p.kv_cache_bytes_per_token
    llama = plan(model_spec(LLAMA), get_gpu(H200).framework_memory_bytes, PlanRequest(context_len=8192), gpu_id=H200)
    assert llama.kv_cache_exact_dtype == llama.kv_cache_dtype and llama.kv_cache_pool_bytes_per_token is None


def test_cli_plan_labels_the_exact_figure_and_gives_the_pool_one(capsys):
    assert main(["plan", *CLI, "--context-len", "8192", "--batch-size", "64"]) == 0
    lines = {line[:12].strip(): line[13:] for line in capsys.readouterr().out.splitlines() if line[:2] != "  "}
    p = _v4_plan()
    token = lines["KV/token"]
    assert token.startswith(f"{human_bytes(p.kv_cache_bytes_per_token)} in {p.kv_cache_exact_dtype}")
    assert f"{human_bytes(_pool_per_token())} in {p.kv_cache_dtype} pool pages" in token
    assert f"in {p.kv_cache_exact_dtype} at" in lines["KV/sequence"]
    assert main(["plan", "--model", LLAMA, "--gpu", H200]) == 0  # one cache: the line is the size alone
    lines = {line[:12].strip(): line[13:] for line in capsys.readouterr().out.splitlines() if line[:2] != "  "}
    assert lines["KV/token"] == human_bytes(plan(model_spec(LLAMA), get_gpu(H200).framework_memory_bytes,
                                                 PlanRequest(context_len=8192), gpu_id=H200).kv_cache_bytes_per_token)


def test_cli_json_keeps_its_keys_and_adds_the_cache_names(capsys):
    assert main(["plan", *CLI, "--context-len", "8192", "--batch-size", "64", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    p = _v4_plan()
    assert out["kv_cache_bytes_per_token"] == p.kv_cache_bytes_per_token  # the existing key keeps its figure
    assert (out["kv_cache_dtype"], out["kv_cache_exact_dtype"]) == (p.kv_cache_dtype, p.kv_cache_exact_dtype)
    assert out["kv_cache_pool_bytes_per_token"] == _pool_per_token()


def test_cli_allocation_names_the_budgets_cache(capsys):
    """``allocation`` said "KV budget ... per GPU (bf16)" for a budget whose users are fp8_ds_mla pool pages."""
    assert main(["allocation", *CLI, "--max-model-len", "8192", "--mean-len", "800", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    p = _v4_plan()
    assert out["kv_cache_dtype"] == p.kv_cache_dtype and out["kv_cache_exact_dtype"] == p.kv_cache_exact_dtype
    assert out["kv_cache_pool_bytes_per_token"] == _pool_per_token()
    assert main(["allocation", *CLI, "--max-model-len", "8192", "--mean-len", "800"]) == 0
    budget = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("KV budget"))
    assert f"({p.kv_cache_dtype});" in budget and f"per token in {p.kv_cache_exact_dtype}" in budget
    assert f"{human_bytes(_pool_per_token())} in {p.kv_cache_dtype} pool pages" in budget


def test_allocation_kv_dtype_table_states_the_pool_its_users_are_counted_in():
    at = open_tab(run("pages/6_Allocation.py", LINK), "allocation_section", "KV-cache quantization")
    assert not at.exception and not at.error
    table = at.table[0].value
    assert [str(v).replace("\\_", "_") for v in table["KV dtype"]] == [_v4_plan(800).kv_cache_dtype]  # one cache
    assert list(table["KV per token per GPU"]) == [format_bytes(_pool_per_token(), "auto")]


def test_gqa_page_names_the_cache_of_each_variants_bytes():
    at = run("pages/2_GQA_savings.py", LINK)
    assert not at.exception and not at.error
    p = _v4_plan()
    tiles = {t.label: t.value for t in metric_tiles(at)}
    built = f"KV per token ({p.kv_cache_exact_dtype}), MQA (as built)"
    assert tiles[built] == format_bytes(p.kv_cache_bytes_per_token, "auto")
    table = at.table[0].value
    assert all(str(v).endswith(f"({p.kv_cache_exact_dtype})") for v in [*table["KV per token, whole model"],
                                                                       *table["KV per sequence per GPU"]])
    llama = run("pages/2_GQA_savings.py", {"model": LLAMA, "gpu": H200})
    assert not any("(" in str(v) for v in llama.table[0].value["KV per token, whole model"])  # one cache: the size alone


def test_home_formula_names_the_cache_of_its_per_token_sum():
    at = run("app.py", LINK)
    assert not at.exception and not at.error
    p = _v4_plan()
    sums = [m.value for m in at.markdown if "**Sum**" in str(m.value)]
    assert sums and f"per token in {p.kv_cache_exact_dtype}**" in sums[0]


def test_engine_page_names_the_cache_of_its_kv_per_token():
    """The Engine page's rank table gave V4-Flash's bf16 "8.08 KiB" per token beside its fp8_ds_mla pool blocks."""
    from planner.engines import EngineRequest, plan_engine

    gpu = get_gpu(H200)
    engine = plan_engine(model_spec(V4), gpu.framework_memory_bytes,
                         EngineRequest(tensor_parallel_size=8, max_model_len=8192, gpu_name=gpu.id))
    exact = _v4_plan().kv_cache_exact_dtype  # the plan's exact figure is the same cache
    assert engine.ranks[0].kv_cache_bytes_per_token_dtype == exact != engine.kv_cache_dtype
    for model_id, named in ((V4, f" ({exact})"), (LLAMA, "")):
        at = run("pages/5_Engine.py", {"model": model_id, "gpu": H200, "num_gpus": "8", "context_len": "8192"})
        assert not at.exception and not at.error
        table = at.table[0].value
        row = table[table["Per GPU"] == "KV per token"].iloc[0, 1]
        assert row.endswith(f"KiB{named}"), (model_id, row)


def test_a_plain_fp8_figure_says_vllm_does_not_store_it(capsys):
    """QA: ``--kv-cache-dtype fp8`` printed "KV/token 4.38 KiB in fp8" and "KV/sequence 216.44 MiB in fp8": 1 B x 512
    values an entry, no bf16 RoPE part and no scales, where vLLM stores fp8_ds_mla (584 B an entry)."""
    from planner.engines import EngineRequest, plan_engine
    from ui.engine import _token_cache

    args = ["plan", "--engine", "vllm", "--model", V4, "--gpu", H200, "--num-gpus", "2", "--max-model-len", "65536",
            "--kv-cache-dtype", "fp8"]
    assert main(args) == 0
    lines = {line[:12].strip(): line[13:] for line in capsys.readouterr().out.splitlines() if line[:2] != "  "}
    for key in ("KV/token", "KV/sequence"):
        assert "in fp8 (plain arithmetic, not a cache vLLM stores)" in lines[key], key
    assert main([*args, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kv_cache_exact_dtype"] == "fp8" and out["kv_cache_dtype"] == "fp8_ds_mla"  # the keys stay
    gpu = get_gpu(H200)
    engine = plan_engine(model_spec(V4), gpu.framework_memory_bytes,
                         EngineRequest(tensor_parallel_size=2, max_model_len=65536, gpu_name=gpu.id,
                                       kv_cache_dtype="fp8"))
    assert _token_cache(engine, engine.ranks[0]) == " (fp8: plain arithmetic, not a cache vLLM stores)"
