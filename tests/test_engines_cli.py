"""Engine plans through ``python -m planner plan``: the engine keys of the JSON, tensor / pipeline
parallel flags that must agree, and the launch commands each engine is given.

Models: the factory model of ``tests/test_engines.py`` (tests/factories.py) and catalog Llama 3.1 8B.
"""

from __future__ import annotations

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.units import GiB
from tests.factories import dense_model

MODEL = dense_model()


# --- CLI -----------------------------------------------------------------------------

CLI_KEYS = {"engine", "available_kv_cache_bytes", "num_gpu_blocks", "engine_kv_cache_tokens", "max_concurrency",
            "engine_max_model_len", "launch_command"}


def _cli_json(capsys, *args: str) -> dict:
    import json

    from planner.cli import main

    assert main(["plan", "--model", "meta-llama/Meta-Llama-3.1-8B", "--gpu", "nvidia-h100-sxm-80gb",
                 "--format", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_without_engine_flags_keeps_the_v1_json(capsys):
    assert not CLI_KEYS & set(_cli_json(capsys))


def test_cli_engine_keys_match_plan_engine(capsys):
    pytest.importorskip("model_catalog")
    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu

    out = _cli_json(capsys, "--engine", "vllm-v0.11", "--max-model-len", "16000", "--block-size", "128",
                    "--available-kv-memory-gib", "51.38")
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    plan = plan_engine(model_spec("meta-llama/Meta-Llama-3.1-8B"), gpu.framework_memory_bytes, EngineRequest(
        engine="vllm-v0.11", max_model_len=16000, block_size=128, available_kv_memory_bytes=int(51.38 * GiB),
        gpu_name=gpu.name))
    assert {k: out[k] for k in CLI_KEYS} == plan.cli_keys()
    assert out["num_gpu_blocks"] == int(51.38 * GiB) // (128 * 131072)  # 3288 blocks of 16 MiB
    assert out["engine_plan"]["ranks"][0]["overridden"] == ["available_kv_cache"]
    assert out["block_size"] == 128  # the v1 keys see the same flag


def test_cli_tp_pp_and_num_gpus_must_agree(capsys):
    out = _cli_json(capsys, "--tensor-parallel-size", "2", "--pipeline-parallel-size", "2")
    assert out["num_gpus"] == 4 and out["engine_plan"]["tensor_parallel_size"] == 2
    assert len(out["engine_plan"]["ranks"]) == 2
    from planner.cli import main

    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--num-gpus", "3",
                 "--tensor-parallel-size", "2"]) == 2
    assert "--num-gpus 3 must equal --tensor-parallel-size 2 x --pipeline-parallel-size 1" in capsys.readouterr().err


def test_cli_engine_rejects_a_dtype_the_engine_lacks(capsys):
    from planner.cli import main

    assert main(["plan", "--model", "gpt2", "--gpu", "nvidia-t4", "--engine", "vllm", "--kv-cache-dtype", "q8_0"]) == 2
    assert "vllm does not offer KV-cache dtype 'q8_0'" in capsys.readouterr().err


def test_cli_pipeline_stages_keep_num_gpus_and_size_one_tensor_parallel_group(capsys):
    # 3 pipeline stages of Llama 3.1 8B (32 heads): tensor parallel 1, so the plan section must not
    # call the layout "cannot split" (it did, reading num_gpus 3 as tensor parallel 3).
    out = _cli_json(capsys, "--engine", "vllm", "--pipeline-parallel-size", "3")
    assert out["num_gpus"] == 3 and out["fits"] and out["engine_plan"]["starts"]
    assert not any("cannot split" in r for r in out["reasons"])
    assert any("pipeline_parallel_size 3" in n for n in out["notes"])


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "tgi"])
def test_head_splitting_engines_refuse_a_tensor_parallel_size_that_does_not_divide_the_heads(engine):
    model = dense_model(num_layers=4, num_attention_heads=32, num_key_value_heads=8)
    result = plan_engine(model, 80 * GiB, EngineRequest(engine=engine, tensor_parallel_size=3, max_model_len=4096))
    assert not result.starts and any("must be divisible by" in r for r in result.reasons)
    # The engine never reaches its memory print: no blocks, tokens or concurrency to report.
    assert (result.num_gpu_blocks, result.engine_kv_cache_tokens, result.max_concurrency) == (0, 0, 0.0)
    assert result.engine_log_lines == ()


def test_llama_cpp_splits_layers_so_three_gpus_are_fine():
    model = dense_model(num_layers=4, num_attention_heads=32, num_key_value_heads=8)
    result = plan_engine(model, 24 * GiB, EngineRequest(engine="llama.cpp", tensor_parallel_size=3, max_model_len=4096))
    assert not any("must be divisible by" in r for r in result.reasons)


@pytest.mark.parametrize(("weight_dtype", "expected"), [
    ("auto", ""), ("bf16", " --dtype bfloat16"), ("fp32", " --dtype float32"), ("fp8", " --quantization fp8"),
])
def test_launch_commands_load_the_planned_weight_dtype(weight_dtype, expected):
    result = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="vllm", weight_dtype=weight_dtype, max_model_len=4096))
    assert result.launch_command.endswith("--max-num-seqs 1024" + expected)
    sglang = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="sglang", weight_dtype=weight_dtype, max_model_len=4096))
    assert sglang.launch_command.endswith(expected) if expected else "--dtype" not in sglang.launch_command


def test_launch_command_for_int4_weights_names_the_checkpoint_it_needs():
    result = plan_engine(MODEL, 80 * GiB, EngineRequest(engine="vllm", weight_dtype="int4", max_model_len=4096))
    assert "--quantization" not in result.launch_command
    assert result.launch_command.split("  # ", 1)[1].startswith("int4 weights: serve a checkpoint quantized to int4")

