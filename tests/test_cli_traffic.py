"""``python -m planner allocation`` and ``find`` against the real catalog.

Meta-Llama-3-8B costs 131,072 B per bf16 token (DOMAIN.md section 3), so a
naive 8,192-token reservation is exactly 1 GiB and 800 tokens use 100 MiB.
"""

import json
import re

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.units import GiB

LLAMA3 = "meta-llama/Meta-Llama-3-8B"
H100 = "nvidia-h100-sxm-80gb"
FIND_KEYS = {"gpu_id", "num_gpus", "tensor_parallel_size", "kv_cache_dtype", "price_per_hour",
             "max_concurrent_sequences", "launch_command"}


def run_json(capsys, argv):
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_allocation_json(capsys):
    out = run_json(capsys, ["allocation", "--model", LLAMA3, "--gpu", H100, "--max-model-len", "8192",
                            "--mean-len", "800"])
    budget = plan(model_spec(LLAMA3), get_gpu(H100).framework_memory_bytes,
                  PlanRequest(context_len=8192)).kv_cache_budget_bytes
    assert out["kv_cache_budget_bytes"] == budget
    assert out["naive_unused_fraction"] == 0.90234375  # 1 - 800/8192
    assert out["naive_max_sequences"] == budget // (1 << 30)
    assert out["paged_max_sequences"] == budget // (800 * 131_072)
    assert out["naive_reserved_bytes"] == out["num_sequences"] * (1 << 30)
    assert out["paged_reserved_bytes"] == out["num_sequences"] * 800 * 131_072
    assert out["paged_unused_fraction"] == 0.0


def test_allocation_block_size_and_prefix(capsys):
    out = run_json(capsys, ["allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "1000",
                            "--block-size", "128", "--num-sequences", "10", "--prefix-len", "600"])
    assert out["block_size"] == 128
    assert out["paged_reserved_bytes"] == 10 * 1024 * 131_072  # 1,000 tokens -> 8 blocks of 128
    assert out["paged_reserved_bytes"] - out["prefix_reserved_bytes"] == 9 * 512 * 131_072  # 4 full blocks shared


def test_allocation_table(capsys):
    assert main(["allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "800"]) == 0
    text = capsys.readouterr().out
    assert "90.2%" in text and "paged+prefix" in text


def test_find_json_cheapest_first(capsys):
    rows = run_json(capsys, ["find", "--model", "meta-llama/Llama-3.1-70B", "--users", "200", "--prompt-len", "2000",
                             "--output-len", "500", "--max-gpus", "8"])
    assert rows and all(FIND_KEYS <= row.keys() for row in rows)
    assert all(row["fits"] for row in rows)
    prices = [row["price_per_hour"] for row in rows]
    assert prices == sorted(prices)
    for row in rows:
        assert row["max_concurrent_sequences"] >= 200
        assert row["num_gpus"] <= 8
        # --model is an alias of meta-llama/Meta-Llama-3.1-70B: the command serves the repo given, not the entry's
        assert row["launch_command"].startswith("vllm serve meta-llama/Llama-3.1-70B ")
        assert "--max-model-len 2500" in row["launch_command"]


def test_find_nothing_fits_returns_the_closest(capsys):
    rows = run_json(capsys, ["find", "--model", "meta-llama/Llama-3.1-70B", "--users", "100000",
                             "--prompt-len", "2000", "--output-len", "500", "--max-gpus", "1"])
    assert len(rows) == 1 and rows[0]["fits"] is False and rows[0]["reasons"]
    assert main(["find", "--model", "meta-llama/Llama-3.1-70B", "--users", "100000", "--prompt-len", "2000",
                 "--output-len", "500", "--max-gpus", "1"]) == 0
    assert "nothing fits" in capsys.readouterr().out


def test_find_with_a_distribution_and_a_csv(capsys, tmp_path):
    rows = run_json(capsys, ["find", "--model", LLAMA3, "--users", "50", "--prompt-len", "800", "--prompt-p95",
                             "2000", "--output-len", "200", "--max-model-len", "8192", "--top", "2"])
    assert len(rows) == 2 and all(r["max_model_len"] == 8192 for r in rows)
    csv = tmp_path / "lengths.csv"
    csv.write_text("prompt_len,output_len\n800,200\n1500,300\n")
    rows = run_json(capsys, ["find", "--model", LLAMA3, "--users", "50", "--prompt-len", "1", "--output-len", "0",
                             "--lengths-csv", str(csv), "--max-model-len", "4096", "--top", "1"])
    assert rows[0]["fits"]


@pytest.mark.parametrize("argv, message", [
    (["allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "9000"], "raise max_model_len"),
    (["allocation", "--model", "no/such-model", "--gpu", H100, "--mean-len", "800"], "no/such-model"),
    (["find", "--model", LLAMA3, "--users", "5", "--prompt-len", "800", "--prompt-p95", "2000",
      "--output-len", "10"], "needs --max-model-len"),
    (["find", "--model", LLAMA3, "--users", "5", "--prompt-len", "10", "--output-len", "1",
      "--lengths-csv", "/nonexistent.csv", "--max-model-len", "100"], "cannot read --lengths-csv"),
])
def test_bad_values_exit_2_with_a_message(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "0"],
    ["find", "--model", LLAMA3, "--users", "5", "--prompt-len", "10", "--output-len", "1",
     "--kv-cache-dtypes", "fp7"],
    ["find", "--model", LLAMA3, "--users", "5", "--prompt-len", "10", "--output-len", "1",
     "--preemption-probability", "1"],
])
def test_bad_flags_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


# --- a GPU that is not in the catalog (--gpu-memory-gib) -----------------------------------

FIND_8B = ["find", "--model", LLAMA3, "--users", "20", "--prompt-len", "1000", "--output-len", "200"]


def test_allocation_on_a_custom_gpu_equals_a_catalog_gpu_of_the_same_memory(capsys):
    # apple-m3-max-128gb's framework memory is exactly 96 GiB.
    args = ["allocation", "--model", LLAMA3, "--max-model-len", "8192", "--mean-len", "800"]
    catalog = run_json(capsys, [*args, "--gpu", "apple-m3-max-128gb"])
    custom = run_json(capsys, [*args, "--gpu-memory-gib", "96", "--gpu-name", "My card"])
    assert custom.pop("gpu_id") == "custom" and catalog.pop("gpu_id") == "apple-m3-max-128gb"
    assert custom == catalog


def test_find_skips_an_unpriced_custom_gpu_and_says_so(capsys):
    rows = run_json(capsys, [*FIND_8B, "--gpu-memory-gib", "22", "--gpu-name", "My card"])
    assert rows and all(row["gpu_id"] != "custom" for row in rows)
    assert main([*FIND_8B, "--gpu-memory-gib", "22", "--gpu-name", "My card"]) == 0
    table = capsys.readouterr().out
    assert "note: the --gpu-memory-gib GPU ('My card', id custom) has no price and was skipped" in table
    assert ", custom" in table  # and in the list of unpriced GPUs


def test_find_json_reports_the_unpriced_custom_gpu_on_stderr(capsys):
    assert main([*FIND_8B, "--gpu-memory-gib", "22", "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert all(row["gpu_id"] != "custom" for row in json.loads(captured.out))
    assert "note: the --gpu-memory-gib GPU ('Custom GPU', id custom) has no price" in captured.err


def test_find_includes_a_priced_custom_gpu(capsys):
    rows = run_json(capsys, [*FIND_8B, "--gpu-memory-gib", "22", "--gpu-name", "My card",
                             "--gpu-price-per-hour", "0.05", "--top", "3", "--engine", "budget"])
    cheapest = rows[0]
    assert cheapest["gpu_id"] == "custom" and cheapest["gpu_name"] == "My card"
    assert cheapest["price_per_gpu_hour"] == 0.05 and cheapest["fits"]
    assert cheapest["time_per_output_token_s"] is None  # no --gpu-bandwidth-gb-s, so no roofline
    # Its budget is plan()'s on 22 GiB of framework memory.
    budget = plan(model_spec(LLAMA3), 22 * GiB, PlanRequest(context_len=1200, num_gpus=1),
                  gpu_id="custom").kv_cache_budget_bytes
    assert cheapest["kv_cache_budget_bytes_per_gpu"] == budget


def test_find_times_a_custom_gpu_with_its_bandwidth(capsys):
    rows = run_json(capsys, [*FIND_8B, "--gpu-memory-gib", "22", "--gpu-price-per-hour", "0.05",
                             "--gpu-bandwidth-gb-s", "1000", "--max-tpot-ms", "200", "--top", "1"])
    assert rows[0]["gpu_id"] == "custom" and rows[0]["time_per_output_token_s"] > 0


@pytest.mark.parametrize("argv, message", [
    ([*FIND_8B, "--gpu-memory-gib", "22", "--max-tpot-ms", "50"], "needs --gpu-bandwidth-gb-s"),
    ([*FIND_8B, "--gpu-price-per-hour", "1"], "--gpu-price-per-hour describes a custom GPU"),
    ([*FIND_8B, "--gpu-name", "My card"], "--gpu-name describes a custom GPU"),
    ([*FIND_8B, "--gpu-bandwidth-gb-s", "900"], "--gpu-bandwidth-gb-s describes a custom GPU"),
    (["allocation", "--model", LLAMA3, "--gpu", H100, "--mean-len", "800", "--gpu-name", "x"],
     "--gpu-name describes a --gpu-memory-gib GPU"),
])
def test_custom_gpu_flag_misuse_exits_2(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("argv", [
    [*FIND_8B, "--gpu-memory-gib", "0"],
    [*FIND_8B, "--gpu-memory-gib", "1e9"],
    [*FIND_8B, "--gpu-memory-gib", "22", "--gpu-price-per-hour", "0"],
    [*FIND_8B, "--gpu-memory-gib", "22", "--gpu-bandwidth-gb-s", "-1"],
])
def test_custom_gpu_bad_values_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert "error: argument --gpu-" in capsys.readouterr().err


def test_find_gpus_flag_searches_only_those_types(capsys):
    """Issue "One link, one answer" item 6: ``--gpu-types`` (alias ``--gpu``, repeatable or comma-separated,
    catalog aliases accepted) searches only those GPU types."""
    base = ["find", "--model", LLAMA3, "--users", "20", "--prompt-len", "1000", "--output-len", "200"]
    rows = run_json(capsys, [*base, "--gpu", "h100"])
    assert rows and {r["gpu_id"] for r in rows} == {H100}
    rows = run_json(capsys, [*base, "--gpu-types", f"{H100},nvidia-a100-sxm-80gb", "--top", "50"])
    assert {r["gpu_id"] for r in rows} == {H100, "nvidia-a100-sxm-80gb"}
    rows = run_json(capsys, [*base, "--gpu", H100, "--gpu", "nvidia-a100-sxm-80gb", "--top", "50"])
    assert {r["gpu_id"] for r in rows} == {H100, "nvidia-a100-sxm-80gb"}
    assert main([*base, "--gpu", "not-a-gpu"]) == 2
    assert "--gpu-types: unknown GPU id" in capsys.readouterr().err


def test_allocation_json_keeps_the_alias_with_its_catalog_id(capsys):
    out = run_json(capsys, ["allocation", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", H100,
                            "--max-model-len", "8192", "--mean-len", "800"])
    assert (out["model_id"], out["catalog_id"]) == ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B")
    assert list(out)[:2] == ["model_id", "catalog_id"]


def test_find_takes_a_lengths_csv_without_the_length_flags(capsys, tmp_path):
    """QA: the help says --lengths-csv comes "instead of the length flags", but argparse still required
    --prompt-len and --output-len (dummy values worked). Either the flags or the CSV; neither is a clear error."""
    csv = tmp_path / "lengths.csv"
    csv.write_text("prompt_len,output_len\n800,200\n1500,300\n")
    alone = run_json(capsys, ["find", "--model", LLAMA3, "--users", "50", "--lengths-csv", str(csv),
                              "--max-model-len", "4096", "--top", "1"])
    dummies = run_json(capsys, ["find", "--model", LLAMA3, "--users", "50", "--prompt-len", "1", "--output-len", "0",
                                "--lengths-csv", str(csv), "--max-model-len", "4096", "--top", "1"])
    assert alone[0]["fits"] and alone[0]["max_concurrent_sequences"] == dummies[0]["max_concurrent_sequences"]
    assert main(["find", "--model", LLAMA3, "--users", "50", "--prompt-len", "100", "--lengths-csv", str(csv),
                 "--max-model-len", "4096", "--top", "1"]) == 0
    assert "note: --prompt-len not used: --lengths-csv gives the lengths" in capsys.readouterr().out
    assert main(["find", "--model", LLAMA3, "--users", "5", "--prompt-len", "100"]) == 2
    assert "give --prompt-len and --output-len, or --lengths-csv" in capsys.readouterr().err


def test_find_table_keeps_a_long_gpu_id_apart_from_its_kind(capsys):
    """gpt-oss-120b's cheapest GPU is ``nvidia-rtx-pro-6000-server`` (29 characters with its count), which used
    to run into the kind column ("1 x nvidia-rtx-pro-6000-serverTP"); every row keeps two spaces before its kind."""
    assert main(["find", "--model", "openai/gpt-oss-120b", "--users", "100", "--prompt-len", "2000",
                 "--output-len", "500", "--top", "3", "--gpu-types", "nvidia-rtx-pro-6000-server"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if " x nvidia-rtx-pro-6000-server" in line]
    assert rows and all(re.search(r"nvidia-rtx-pro-6000-server {2,}(TP|DP\+EP|DCP|disaggregated) ", r) for r in rows)


def test_allocation_names_the_cache_it_prices(capsys):
    """``allocation`` prices DeepSeek-V3.2's cache as vLLM stores it (fp8_ds_mla under auto) and says so, in
    the JSON and the table, as ``plan`` does; a dense model keeps its bf16 (QA: the KV format was not named)."""
    import json

    from planner.cli.entry import main

    base = ["allocation", "--gpu", "nvidia-h200-sxm", "--num-gpus", "8", "--mean-len", "800"]
    main([*base, "--model", "deepseek-ai/DeepSeek-V3.2", "--format", "json"])
    assert json.loads(capsys.readouterr().out)["kv_cache_dtype"] == "fp8_ds_mla"
    main([*base, "--model", "meta-llama/Meta-Llama-3-8B"])
    assert "per GPU (bf16); 16.00 KiB per token" in capsys.readouterr().out  # 128 KiB over 8 GPUs
