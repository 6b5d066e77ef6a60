"""Prefill / decode pools (planner/scale/disagg.py), the link table, and what deploys them (planner/scale/deploy.py).

The llm-d values are validated against the chart's own schema, pinned in
tests/data/llm_d_modelservice/ (chart v0.4.12; source and checksum in its SOURCE.md).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.cli import main
from planner.scale.deploy import to_yaml
from planner.scale.links import LINKS, link_by_id, transfer_ms

SCHEMA = Path(__file__).resolve().parent / "data" / "llm_d_modelservice" / "values.schema.json"
DISAGG = ["--model", "meta-llama/Llama-3.1-70B", "--gpu", "nvidia-h100-sxm-80gb", "--tensor-parallel-size", "4",
          "--users", "64", "--prompt-len", "2048", "--output-len", "256"]


def test_link_table_has_sources_and_the_worked_example():
    assert {"nvlink4", "infiniband-ndr", "roce-400g", "pcie5"} <= {x.id for x in LINKS}
    assert all(x.source and x.gb_s_per_direction > 0 for x in LINKS)
    shard = 2048 * 80 * 2 * 2 * 128 * 2  # Llama-3.1-70B at TP 4: 2 KV heads per GPU, 2,048 tokens
    assert shard == 167_772_160
    assert transfer_ms(shard, link_by_id("infiniband-ndr")) == pytest.approx(3.355, abs=1e-3)
    with pytest.raises(ValueError, match="unknown link"):
        link_by_id("carrier-pigeon")


def test_disagg_json_has_both_pools_and_the_transfer(capsys):
    assert main(["disagg", *DISAGG, "--tpot-ms", "50", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for pool in ("prefill", "decode"):
        assert {"gpus", "replicas", "tensor_parallel_size", "data_parallel_size", "max_concurrency"} <= set(out[pool])
        assert out[pool]["gpus"] == out[pool]["replicas"] * out[pool]["gpus_per_replica"]
    # the prompt's KV in whole 16-token blocks, all 80 layers x 8 KV heads, once
    assert out["kv_transfer_bytes_per_request"] == 2048 * 327_680
    assert out["kv_transfer_bytes_per_gpu"] == 2048 * 327_680 // 4
    assert set(out["kv_transfer_ms"]) == {x.id for x in LINKS}
    assert out["decode"]["time_per_output_token_ms"] <= 50
    assert out["decode"]["replicas"] * out["decode"]["max_concurrency"] >= 64
    assert "roofline" in out["label"]


def test_disagg_refuses_bad_targets_in_one_line(capsys):
    with pytest.raises(SystemExit) as stop:  # argparse's one-line refusal (planner/cli/entry.py)
        main(["disagg", *DISAGG, "--ttft-ms", "-1"])
    assert stop.value.code == 2 and capsys.readouterr().err.count("\n") == 1
    assert main(["disagg", *DISAGG, "--link", "nvlink4", "--engine", "llama.cpp"]) == 2
    assert "modelled for vLLM and SGLang" in capsys.readouterr().err


def test_yaml_emitter_round_trips():
    yaml = pytest.importorskip("yaml")
    values = {"a": {"b": [1, "two", {"c": True, "d": []}], "e": {}}, "llm-d.ai/x": "y: z", "n": None}
    assert yaml.safe_load(to_yaml(values, ("header",))) == values


def _validate(values: dict) -> None:
    """The chart schema's verdict (jsonschema when installed, else the checks the chart's templates rely on)."""
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    try:
        import jsonschema
    except ImportError:  # minimal check: the keys the chart's parallelism and role objects allow
        for role in ("decode", "prefill"):
            allowed = set(schema["properties"][role]["properties"]["parallelism"]["properties"])
            assert set(values[role].get("parallelism", {})) <= allowed
        return
    jsonschema.Draft7Validator(schema).validate(values)


def test_deploy_llm_d_disagg_values_validate_against_the_chart_schema(capsys):
    yaml = pytest.importorskip("yaml")
    assert main(["deploy", "--target", "llm-d", *DISAGG]) == 0
    text = capsys.readouterr().out
    assert text.startswith("# llm-d model-service values (llm-d-incubation/llm-d-modelservice chart v0.4.12)")
    values = yaml.safe_load(text)
    _validate(values)
    for role in ("prefill", "decode"):
        spec = values[role]
        assert spec["parallelism"] == {"tensor": 4, "data": 1, "dataLocal": 1, "workers": 1}
        args = spec["containers"][0]["args"]
        assert "--kv-transfer-config" in args and "--tensor-parallel-size" not in args
        assert spec["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"


def test_deploy_llm_d_dp_ep_puts_expert_parallel_in_the_args(capsys):
    yaml = pytest.importorskip("yaml")
    assert main(["deploy", "--target", "llm-d", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-h200-sxm",
                 "--max-model-len", "8192", "-dp", "16", "--enable-expert-parallel"]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    _validate(values)
    assert values["multinode"] is True and values["prefill"]["create"] is False
    assert values["decode"]["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 8, "workers": 2}
    assert "--enable-expert-parallel" in values["decode"]["containers"][0]["args"]


def test_deploy_commands_one_per_node(capsys):
    assert main(["deploy", "--target", "commands", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu",
                 "nvidia-h200-sxm", "--max-model-len", "8192", "-dp", "16", "--enable-expert-parallel"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if not x.startswith("#")]
    assert len(lines) == 2
    assert "--headless --data-parallel-start-rank 8" in lines[1] and "--headless" not in lines[0]


def test_deploy_llm_d_refuses_sglang(capsys):
    assert main(["deploy", "--target", "llm-d", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-h200-sxm",
                 "--engine", "sglang", "--tensor-parallel-size", "8"]) == 2
    assert "runs vLLM" in capsys.readouterr().err


def test_prefill_launches_at_the_full_request_length_and_sizes_on_prompts(capsys):
    """A P/D proxy sends the whole request to prefill with max_tokens 1 and vLLM rejects prompt + max_tokens >
    max_model_len (planner/scale/disagg.py design note 3): both roles launch at prompt + output = 2,304; the
    prefill pool still holds as many prompts as the same launch at 2,048 tokens does."""
    from model_catalog import get_gpu, model_spec
    from planner.engines.types import EngineRequest
    from planner.scale import ScaleRequest, plan_scale

    assert main(["disagg", *DISAGG, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prefill"]["max_model_len"] == out["decode"]["max_model_len"] == 2048 + 256
    assert "--max-model-len 2304" in out["prefill"]["launch_command"]
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    at_prompt = plan_scale(model_spec("meta-llama/Llama-3.1-70B"), gpu.framework_memory_bytes,
                           EngineRequest(gpu_name=gpu.name, tensor_parallel_size=4, max_model_len=2048), ScaleRequest())
    assert out["prefill"]["max_concurrency"] == int(at_prompt.max_concurrency_per_rank)
    assert out["kv_transfer_bytes_per_gpu"] == at_prompt.engine.kv_cache_bytes_needed_per_request
    full = plan_scale(model_spec("meta-llama/Llama-3.1-70B"), gpu.framework_memory_bytes,
                      EngineRequest(gpu_name=gpu.name, tensor_parallel_size=4, max_model_len=2304), ScaleRequest())
    assert out["prefill"]["max_concurrency_by_memory"] == full.max_concurrency  # the launch's own figure


def test_llm_d_prefill_args_carry_the_full_request_length(capsys):
    yaml = pytest.importorskip("yaml")
    assert main(["deploy", "--target", "llm-d", *DISAGG]) == 0
    values = yaml.safe_load(capsys.readouterr().out)
    for role in ("prefill", "decode"):
        args = values[role]["containers"][0]["args"]
        assert args[args.index("--max-model-len") + 1] == "2304"


def test_disagg_json_commands_are_deploys_with_the_kv_connector(capsys):
    """``disagg``'s launch commands carry the role's KV connector, the same lines ``deploy --target commands`` and
    the page print (vLLM NixlConnector; SGLang --disaggregation-mode)."""
    assert main(["disagg", *DISAGG]) == 0
    out = json.loads(capsys.readouterr().out)
    assert main(["deploy", "--target", "commands", *DISAGG]) == 0
    deployed = [x for x in capsys.readouterr().out.splitlines() if not x.startswith("#")]
    for pool in ("prefill", "decode"):
        assert "--kv-transfer-config" in out[pool]["launch_command"] and "NixlConnector" in out[pool]["launch_command"]
        assert out[pool]["launch_commands"] == [out[pool]["launch_command"]]
    assert deployed == [out["prefill"]["launch_command"], out["decode"]["launch_command"]]
    assert main(["disagg", *DISAGG, "--engine", "sglang"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prefill"]["launch_command"].endswith("--disaggregation-mode prefill")
    assert out["decode"]["launch_command"].endswith("--disaggregation-mode decode")


QWEN235 = ["--model", "Qwen/Qwen3-235B-A22B", "--gpu", "nvidia-h200-sxm", "--users", "256", "--prompt-len", "4096",
           "--output-len", "512"]


def test_disagg_over_one_gpu_names_the_fix_once_and_has_no_command(capsys):
    """Qwen3-235B on one H200: the engine's refusal once for both pools, the smallest tensor-parallel size that starts
    them (planner/scale/disagg.py design note 5), no launch command, and nothing derived from a pool that does not
    exist (no "not one sequence fits")."""
    assert main(["disagg", *QWEN235, "--tensor-parallel-size", "1"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["fits"] is False and out["tensor_parallel_fixes"] == {"prefill": 4, "decode": 4}
    refusal = out["prefill"]["reasons"][0]
    assert sum(r.count(refusal) for r in out["reasons"]) == 1
    assert out["reasons"][0].startswith("prefill and decode: ")
    assert not any("not one sequence" in r or "does not fit a rank" in r for r in out["reasons"])
    assert any("--tensor-parallel-size 4" in r for r in out["reasons"])
    for pool in ("prefill", "decode"):
        assert out[pool]["launch_command"] is None and out[pool]["launch_commands"] == []
    assert main(["disagg", *QWEN235, "--tensor-parallel-size", "1", "--format", "table"]) == 0
    table = capsys.readouterr().out
    assert "prefill      would not start at tp 1" in table and table.count(refusal) == 1
    assert main(["deploy", "--target", "commands", *QWEN235, "--tensor-parallel-size", "1"]) == 2
    err = capsys.readouterr().err
    assert "would not start" in err and err.count(refusal) == 1


def test_disagg_without_a_tensor_parallel_size_launches_a_size_that_starts(capsys):
    assert main(["disagg", *QWEN235]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["prefill"]["starts"] and out["decode"]["starts"] and out["tensor_parallel_fixes"] == {}
    for role in ("prefill", "decode"):
        tp = out[role]["tensor_parallel_size"]
        assert tp >= 4  # tp 4 is the smallest that starts (test_disagg_over_one_gpu_names_the_fix_once...)
        assert any(n.startswith(f"{role}: tensor parallel {tp}, the size that needs the fewest GPUs")
                   for n in out["notes"])
        assert f"--tensor-parallel-size {tp} " in out[role]["launch_command"]


def test_the_kv_transfer_config_wraps_between_its_keys(capsys):
    """QA round: in the Disaggregation page's half-width code blocks, the JSON of ``--kv-transfer-config`` was one
    57-character word, broken mid-name at 1,280 px ("kv_r|ole"). With a space after each separator (the same JSON,
    the same config for vLLM) the block wraps between its keys; no word of the commands is longer than 40."""
    from planner.scale.deploy import NIXL_CONFIG

    assert json.loads(NIXL_CONFIG) == {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    assert main(["disagg", *DISAGG]) == 0
    out = json.loads(capsys.readouterr().out)
    words = [w for pool in ("prefill", "decode") for w in out[pool]["launch_command"].split()]
    assert max(len(w) for w in words) <= 40, max(words, key=len)
