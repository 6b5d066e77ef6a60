"""Serving-feature flags of ``python -m planner plan`` / ``find``: the ``serving`` JSON block, gated keys,
one-line errors, launch flags. Golden values are worked from each model's config.json shapes (the
catalog copies; Llama-3.1-8B: hidden 4,096, 32 heads of 128, 8 KV heads, intermediate 14,336, vocab
128,256, 32 layers; DeepSeek-V3: hidden 7,168, q_lora 1,536, kv_lora 512, 128 heads, 256 experts of
2,048, one shared expert, ``num_nextn_predict_layers`` 1).
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_gpu, model_ids, model_spec
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.serving import LoRAConfig, ServingFeatures

LLAMA = "meta-llama/Llama-3.1-8B"


def _json(capsys, *argv: str) -> dict:
    assert main(["plan", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_no_serving_flag_no_serving_key(capsys):
    out = _json(capsys, "--model", LLAMA, "--gpu", "nvidia-l4")
    assert "serving" not in out


def test_lora_slots_for_llama_by_hand(capsys):
    # Per layer 64 x (2 x (4,096 + 4,096) + 2 x (4,096 + 1,024) + 2 x (4,096 + 14,336) + (14,336 + 4,096))
    # = 5,242,880; x 32 = 167,772,160; + embed_tokens and lm_head 2 x 64 x (128,256 + 4,096) = 16,941,056.
    out = _json(capsys, "--model", LLAMA, "--gpu", "nvidia-l4", "--context-len", "4096", "--enable-lora",
                "--max-loras", "8", "--max-lora-rank", "64")
    lora = out["serving"]["lora"]
    assert lora["bytes_per_adapter_slot"] == 2 * (167_772_160 + 16_941_056) == 369_426_432
    assert lora["adapter_slot_bytes"] == 8 * 369_426_432
    expected = plan(model_spec(LLAMA), get_gpu("nvidia-l4").framework_memory_bytes, PlanRequest(
        context_len=4096, serving=ServingFeatures(lora=LoRAConfig(max_loras=8, max_lora_rank=64))),
        gpu_id="nvidia-l4")
    # LLAMA is an alias: the JSON keeps it as model_id, catalog_id names the entry whose numbers it has
    assert out.pop("catalog_id") == "meta-llama/Meta-Llama-3.1-8B" and out["model_id"] == LLAMA
    assert out == json.loads(json.dumps(expected.to_dict())) | {"model_id": LLAMA}
    assert out["serving"]["launch_flags"]["vllm"] == "--enable-lora --max-loras 8 --max-lora-rank 64"


def test_sglang_prices_its_own_pool(capsys):
    out = _json(capsys, "--model", LLAMA, "--gpu", "nvidia-l4", "--enable-lora", "--max-loras", "8",
                "--max-lora-rank", "64", "--engine", "sglang")
    assert out["serving"]["engine"] == "sglang"
    assert out["serving"]["lora"]["bytes_per_adapter_slot"] == 2 * 167_772_160  # no embedding slots
    assert out["serving"]["launch_flags"]["sglang"].startswith("--enable-lora --max-loras-per-batch 8")
    assert "engine" in out  # the engine section is still there


def test_deepseek_mtp_layer_by_hand(capsys):
    h, e, inter = 7168, 256, 2048
    attention = (1536 * h + 1536 + 24576 * 1536 + 576 * h + 512 + 32768 * 512 + h * 16384)
    moe = 256 * h + e * (2 * inter * h + h * inter) + 3 * inter * h
    layer = attention + 2 * h + moe
    out = _json(capsys, "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h200-sxm", "--num-gpus", "8",
                "--speculative-method", "mtp")
    spec = out["serving"]["speculative"]
    assert spec["draft_params"] == layer + 2 * h * h + 3 * h == 11_610_067_968
    assert spec["num_speculative_tokens"] == 1  # num_nextn_predict_layers
    assert spec["draft_kv_cache_bytes_per_token_per_gpu"] == 576 * 2  # one more MLA latent, replicated
    assert out["kv_cache_bytes_per_token"] == 62 * 576 * 2


def test_speculative_config_json_and_draft_model(capsys):
    out = _json(capsys, "--model", "meta-llama/Meta-Llama-3.1-70B", "--gpu", "nvidia-h100-sxm-80gb", "--num-gpus",
                "4", "--speculative-config",
                '{"method": "draft_model", "model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}')
    spec = out["serving"]["speculative"]
    # Llama-3.2-1B: 16 layers x 8 KV heads of 64; 2 heads per GPU at TP 4: 16 x 2 x 2 x 64 x 2 B = 8,192.
    assert spec["draft_kv_cache_bytes_per_token_per_gpu"] == 8192
    assert spec["extra_tokens_per_sequence"] == 8
    assert '"model": "meta-llama/Llama-3.2-1B-Instruct"' in out["serving"]["launch_flags"]["vllm"]


def test_offload_host_tier(capsys):
    out = _json(capsys, "--model", LLAMA, "--gpu", "nvidia-h100-sxm-80gb", "--kv-offloading-size", "64")
    off = out["serving"]["offload"]
    assert off["host_kv_capacity_tokens"] == 64 * 2**30 // 131_072  # 524,288
    assert off["host_link"] == "PCIe 5.0 x16"
    assert off["seconds_per_token_moved"] == pytest.approx(131_072 / 63e9)
    assert out["max_concurrent_sequences"] == _json(capsys, "--model", LLAMA, "--gpu",
                                                    "nvidia-h100-sxm-80gb")["max_concurrent_sequences"]


@pytest.mark.skipif("Qwen/Qwen3-VL-8B-Instruct" not in model_ids(), reason="Qwen3-VL not in this catalog")
def test_images_on_a_vision_language_model(capsys):
    out = _json(capsys, "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-l40s", "--context-len", "4096",
                "--images-per-request", "2")
    mm = out["serving"]["multimodal"]
    assert (mm["tokens_per_image"], mm["tokens_per_request"]) == (1026, 2052)
    assert out["serving"]["extra_tokens_per_sequence"] == 2052


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--max-loras", "8"], "add --enable-lora"),
    (["--speculative-method", "mtp"], "num_nextn_predict_layers"),
    (["--speculative-config", "{nope"], "is not JSON"),
    (["--speculative-config", '{"method": "eagle", "top_k": 2}'], "not modelled"),
    (["--num-speculative-tokens", "3"], "needs a method"),
    (["--speculative-method", "draft_model"], "needs the draft model"),
    (["--host-link-gb-s", "20"], "add --kv-offloading-size"),
    (["--images-per-request", "2"], "vision_config"),
    (["--enable-lora", "--lora-dtype", "int8"], "invalid choice"),
])
def test_bad_serving_flags_are_one_line_errors(argv, fragment, capsys):
    try:
        code = main(["plan", "--model", LLAMA, "--gpu", "nvidia-l4", *argv])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_table_lists_the_features(capsys):
    assert main(["plan", "--model", LLAMA, "--gpu", "nvidia-l4", "--context-len", "4096", "--enable-lora",
                 "--max-loras", "8", "--max-lora-rank", "64", "--kv-offloading-size", "16"]) == 0
    out = capsys.readouterr().out
    assert "per adapter slot" in out and "offload" in out and "vllm flags: --enable-lora" in out


def test_find_sizes_setups_with_the_features(capsys):
    base = ["find", "--model", LLAMA, "--users", "20", "--prompt-len", "2000", "--output-len", "500", "--top", "3",
            "--format", "json"]
    assert main(base) == 0
    plain = json.loads(capsys.readouterr().out)
    assert main([*base, "--enable-lora", "--max-loras", "8", "--max-lora-rank", "64"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert all(r["launch_command"].endswith("--enable-lora --max-loras 8 --max-lora-rank 64") for r in rows)
    assert set(rows[0]) == set(plain[0])  # no new keys in find's rows
    by_setup = {(r["gpu_id"], r["num_gpus"], r["kv_cache_dtype"]): r for r in plain}
    # Slots (8 x 369,426,432 B) and the punica buffer (3 x profile tokens x rank 64 x 4 B) leave each budget.
    punica = {3 * tokens * 64 * 4 for tokens in (2048, 8192, 16384)}
    for r in rows:
        same = by_setup.get((r["gpu_id"], r["num_gpus"], r["kv_cache_dtype"]))
        if same:
            drop = same["kv_cache_budget_bytes_per_gpu"] - r["kv_cache_budget_bytes_per_gpu"] - 8 * 369_426_432
            assert drop in punica


def test_find_language_model_only_sizes_the_text_model(capsys):
    """`find --language-model-only` plans without the vision tower, as `plan` and the Find page do: on the same
    GPU setup the KV budget per GPU grows by the tower's bytes per GPU (bf16, TP 1) and their allocator rounding, and
    by vLLM's default encoder profile, which a server with the tower runs without media flags (as
    `--limit-mm-per-prompt '{"image": 2}'` does)."""
    from planner.cli.entry import main as cli_main
    from planner.model.dtypes import weight_dtype
    from planner.serving.multimodal import tower_weight_bytes

    common = ["find", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--users", "8", "--prompt-len", "2000",
              "--output-len", "500", "--max-gpus", "1", "--top", "200", "--format", "json",
              "--engine", "budget"]  # the budget arithmetic: vLLM's own view also drops the encoder's profile pass
    assert cli_main(common) == 0
    full = {(r["gpu_id"], r["kv_cache_dtype"]): r for r in json.loads(capsys.readouterr().out)}
    assert cli_main([*common, "--language-model-only"]) == 0
    text = {(r["gpu_id"], r["kv_cache_dtype"]): r for r in json.loads(capsys.readouterr().out)}
    assert cli_main([*common, "--limit-mm-per-prompt", '{"image": 2}']) == 0
    limited = {(r["gpu_id"], r["kv_cache_dtype"]): r for r in json.loads(capsys.readouterr().out)}
    key = ("nvidia-h100-sxm-80gb", "bf16")
    assert full[key]["kv_cache_budget_bytes_per_gpu"] == limited[key]["kv_cache_budget_bytes_per_gpu"]
    tower = tower_weight_bytes(model_spec("Qwen/Qwen3-VL-8B-Instruct"), weight_dtype("auto"))
    # the encoder profile's outputs (planner.serving.multimodal): one dummy 16,384-token image held as 16,384 x
    # 4,096 x (1 + 3 deepstack levels) x 2 B
    cache = 16_384 * 4_096 * 4 * 2
    grown = text[key]["kv_cache_budget_bytes_per_gpu"] - full[key]["kv_cache_budget_bytes_per_gpu"]
    assert grown >= tower + cache
    # Find's budget rows are plan()'s on that GPU (planner/traffic/find_costs.py), so the growth is plan()'s: the
    # tower, the encoder profile's outputs and its forward peak above the language model's, the allocator's rounding
    budgets = []
    for only in ([], ["--language-model-only"]):
        assert cli_main(["plan", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", key[0], "--context-len", "2500",
                         "--batch-size", "8", "--format", "json", *only]) == 0
        budgets.append(json.loads(capsys.readouterr().out)["kv_cache_budget_bytes"])
    assert grown == budgets[1] - budgets[0]
