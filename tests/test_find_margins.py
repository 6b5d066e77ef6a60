"""Find's spare figures agree with its answers; ``plan`` names an engine refusal on its fits line (QA, stop 47).

1. A row offered as fitting never shows fewer users than wanted (distributions: the row's users come from the same
   Monte-Carlo demand that let it fit).
2. With ``--max-num-seqs`` below what a replica's KV cache holds, max users and the margin count the cap, and the
   row says so.
3. The JSON carries the table's kind text (``kind_label``: ``TP+DP`` for a TP row of replicas) beside ``kind``.
4. ``plan`` with a budget that fits and a launch the engine refuses before loading weights names the refusal on
   its fits line, as the one-node pipeline refusal does.
"""

import json

import pytest

from model_catalog import model_spec
from model_catalog.gpus import load_gpus
from planner.cli import main
from planner.traffic.find_types import FindRequest, kind_label
from planner.traffic.reverse import find_setups
from planner.traffic.workload import Fixed, LogNormal, Workload

LLAMA3 = "meta-llama/Meta-Llama-3-8B"


@pytest.mark.parametrize("engine", [None, "vllm"])
def test_a_fitting_row_of_a_length_distribution_holds_the_users_wanted(engine):
    # QA: 41 users on 2 x T4 (bf16 KV) fit by the search's demand quantile and listed 40 max users (headroom -1)
    workload = Workload(prompt=LogNormal(mean=1000, p95=3000), output=Fixed(tokens=500), max_model_len=8192)
    request = FindRequest(users=41, workload=workload, gpu_ids=("nvidia-t4",), max_gpus=2, kv_cache_dtypes=("auto",),
                          engine=engine, top=50)
    found = find_setups(model_spec(LLAMA3), list(load_gpus().values()), request)
    assert found.options
    for s in found.options:
        assert s.headroom_users >= 0, (s.tensor_parallel_size, s.data_parallel_size, s.max_concurrent_sequences)
        assert s.margin is not None and s.margin >= 0


@pytest.mark.parametrize("engine", [None, "vllm"])
def test_margin_follows_an_explicit_max_num_seqs_cap(engine):
    cap = 32
    request = FindRequest(users=20, prompt_len=1000, output_len=500, gpu_ids=("nvidia-h100-sxm-80gb",), max_gpus=2,
                          kv_cache_dtypes=("auto",), engine=engine, top=50, engine_knobs=(("max_num_seqs", cap),))
    uncapped = find_setups(model_spec(LLAMA3), list(load_gpus().values()), FindRequest(
        **{**request.__dict__, "engine_knobs": ()}))
    found = find_setups(model_spec(LLAMA3), list(load_gpus().values()), request)
    assert found.options
    held = {s.num_gpus: s for s in uncapped.options}
    for s in found.options:
        free = held[s.num_gpus]
        assert free.max_concurrent_sequences > cap * free.data_parallel_size  # the cap binds on these GPUs
        assert s.max_concurrent_sequences == cap * s.data_parallel_size
        assert s.margin == pytest.approx(1 - s.users_per_replica / cap)
        assert s.max_num_seqs_cap == cap
        assert s.to_dict()["max_num_seqs_cap"] == cap
        assert any("--max-num-seqs 32" in n and "margin" in n for n in s.notes), s.notes
    assert all(s.max_num_seqs_cap is None for s in uncapped.options)


def test_find_json_carries_the_tables_kind_text(capsys):
    argv = ["find", "--model", LLAMA3, "--users", "600", "--prompt-len", "1000", "--output-len", "500",
            "--gpu-types", "nvidia-h100-sxm-80gb", "--max-gpus", "4", "--kv-cache-dtypes", "auto", "--top", "20"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    printed = [line.split()[4] for line in table.splitlines() if " x nvidia-h100" in line]
    assert main([*argv, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["kind_label"] for r in rows] == printed
    replicas = [r for r in rows if r["data_parallel_size"] > 1]
    assert replicas and all(r["kind"] == "TP" and r["kind_label"] == "TP+DP" for r in replicas)  # kind kept


def test_kind_label_key_is_the_kind_label_of_the_setup():
    request = FindRequest(users=600, prompt_len=1000, output_len=500, gpu_ids=("nvidia-h100-sxm-80gb",), max_gpus=4,
                          kv_cache_dtypes=("auto",), top=20)
    found = find_setups(model_spec(LLAMA3), list(load_gpus().values()), request)
    assert [r["kind_label"] for r in found.rows()] == [kind_label(s) for s in found.options]


@pytest.mark.parametrize("argv", [
    ["--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "amd-mi300x", "--tensor-parallel-size", "8",
     "--kv-cache-dtype", "fp8", "--engine", "vllm-v0.11", "--context-len", "4096"],
    ["--model", "deepseek-ai/DeepSeek-V4-Flash", "--gpu", "nvidia-a100-sxm-80gb", "--tensor-parallel-size", "8",
     "--engine", "vllm", "--context-len", "4096"],
])
def test_plan_names_an_engine_refusal_on_its_fits_line(capsys, argv):
    assert main(["plan", *argv]) == 0  # exit 0, as for every plan that does not fit or start (bad arguments: 2)
    lines = capsys.readouterr().out.splitlines()
    fits = next(x for x in lines if x.startswith("fits "))
    assert "starts       no" in lines
    assert fits.startswith("fits         yes")
    assert "the engine section: " in fits and "would refuse to start" in fits, fits
    assert "before it loads the weights" in fits, fits


def test_the_pages_sentences_name_the_cap_the_margin_counts():
    from ui.find_scale_view import chosen_text
    from ui.find_view import best_text

    request = FindRequest(users=20, prompt_len=1000, output_len=500, gpu_ids=("nvidia-h100-sxm-80gb",), max_gpus=1,
                          kv_cache_dtypes=("auto",), engine="vllm", engine_knobs=(("max_num_seqs", 32),))
    found = find_setups(model_spec(LLAMA3), list(load_gpus().values()), request)
    assert f"({found.options[0].margin:.0%} of the --max-num-seqs 32 cap to spare)" in best_text(found)
    assert "of the --max-num-seqs 32 cap to spare" in chosen_text(found.options[0])


def test_a_disaggregated_rows_margin_follows_the_cap_too():
    cap = 64
    request = FindRequest(users=100, prompt_len=2000, output_len=500, gpu_ids=("nvidia-h100-sxm-80gb",), max_gpus=8,
                          engine="vllm", top=50, setup_kinds=("disaggregated",), engine_knobs=(("max_num_seqs", cap),))
    found = find_setups(model_spec("Qwen/Qwen3-30B-A3B"), list(load_gpus().values()), request)
    capped = [s for s in found.options if s.max_num_seqs_cap == cap]
    assert capped  # the decode ranks' pools hold more than 64 requests
    for s in capped:
        assert s.margin == pytest.approx(1 - s.users_per_replica / cap)
        assert any(n.startswith("max users and margin count --max-num-seqs 64") for n in s.notes)
