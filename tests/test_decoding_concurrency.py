"""Requests that decode at once under vLLM V1, beside the printed "Maximum concurrency".

vLLM prints the pool's blocks over the blocks one request needs at its prefill peak (every sliding-window
cache holds its window plus ``max_num_batched_tokens``). Its scheduler frees what a window has left behind
before each step (vllm/v1/core/single_type_kv_cache_manager.py, ``SlidingWindowManager.remove_skipped_blocks``,
called from ``KVCacheManager.allocate_slots``), so decoding requests hold far fewer blocks. Expected values
are worked by hand from the layouts (design note 6 of planner/engines/pages.py), and a small replay of that
scheduler rule checks the formula.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines.pages import SlidingWindowPages, decoding_ratio, kv_layout
from planner.units import GiB, ceil_div
from tests.tiles import metric_tiles

catalog = pytest.importorskip("model_catalog")
H200 = pytest.importorskip("model_catalog.gpus").get_gpu("nvidia-h200-sxm")


def _plan(model_id: str, length: int, **kw):
    request = EngineRequest(engine=kw.pop("engine", "vllm"), max_model_len=length, gpu_name=H200.name, **kw)
    return plan_engine(catalog.model_spec(model_id), H200.framework_memory_bytes, request)


def test_gemma3_sliding_layers_decode_twice_the_printed_concurrency():
    """Gemma 3 27B (62 layers: 10 full, 52 sliding with window 1,024), block 16, 8,192 batched tokens on an
    H200: 1 full + 6 sliding groups. Printed divisor 2,048 + 6 x (ceil(9,215 / 16) + 1) = 5,510 blocks;
    decoding 2,048 + 6 x (ceil(1,024 / 16) + 1) = 2,438."""
    plan = _plan("google/gemma-3-27b-it", 32768)
    assert (plan.num_kv_groups, plan.block_size, plan.max_num_batched_tokens) == (7, 16, 8192)
    assert plan.blocks_per_request == 2048 + 6 * (ceil_div(1023 + 8192, 16) + 1) == 5510
    assert plan.max_concurrency == round(plan.num_gpu_blocks / 5510, 2)
    assert plan.max_concurrency_decoding == round((plan.num_gpu_blocks - 5510 + 2438) / 2438, 2)
    assert plan.max_concurrency_decoding > 2 * plan.max_concurrency
    assert "22 requests of 32,768 tokens decode at once (22.62x)" in plan.decoding_note
    assert "10.57x counts each request at its prefill peak" in plan.decoding_note


def test_full_attention_decodes_what_vllm_prints():
    plan = _plan("meta-llama/Llama-3.1-8B-Instruct", 32768)
    assert plan.max_concurrency_decoding == plan.max_concurrency > 0
    assert plan.decoding_note == ""
    assert plan.to_dict()["max_concurrency_decoding"] == plan.max_concurrency


def test_deepseek_v4_states_take_whole_pool_blocks():
    """N11's launch (V4-Flash, TP 2, 30,000 tokens, block 256, 16,384 batched tokens): a decoding request holds
    118 compressed + 3 + 3 sliding + 3 CSA-state + 17 HCA-state = 144 pool blocks, where the prefill peak
    holds the 6,800 of vllm_deepseek_v4's note 4. At N11's 5.44 GiB (5,553 blocks) the prefill chunk does not
    fit: vLLM refused that launch."""
    request = EngineRequest(engine="vllm-v0.28", tensor_parallel_size=2, max_model_len=30000, block_size=256,
                            kv_cache_dtype="fp8", gpu_memory_utilization=0.95, usage_context="llm",
                            enable_prefix_caching=True)
    model = catalog.model_spec("deepseek-ai/DeepSeek-V4-Flash")
    n11 = plan_engine(model, 96 * GiB, replace(request, available_kv_memory_bytes=int(5.44 * GiB)))
    assert n11.num_gpu_blocks == 5553 and not n11.starts
    assert n11.max_concurrency_decoding == 0.0
    roomy = plan_engine(model, 96 * GiB, replace(request, available_kv_memory_bytes=40 * GiB))
    assert roomy.max_concurrency_decoding == round((roomy.num_gpu_blocks - 6800 + 144) / 144, 2)
    assert roomy.max_concurrency_decoding > 10 * roomy.max_concurrency


def test_other_engines_and_early_prints_carry_no_decoding_figure():
    sglang = _plan("google/gemma-3-27b-it", 32768, engine="sglang")
    assert sglang.max_concurrency_decoding is None and sglang.decoding_note == ""
    assert "max_concurrency_decoding" not in sglang.to_dict()
    early = _plan("google/gemma-3-27b-it", 32768, engine="vllm-v1-jan2025")  # tokens x B / len, no peak
    assert early.max_concurrency_decoding is None


def test_a_launch_stopped_at_the_config_check_decodes_nothing():
    plan = _plan("meta-llama/Llama-3.1-8B-Instruct", 8192, tensor_parallel_size=3)
    assert not plan.starts and plan.max_concurrency_decoding == 0.0


def test_cli_json_and_table_carry_the_decoding_figure(capsys):
    """The CLI's figure is the engine plan's with vLLM's default encoder profile (Gemma 3 has a vision tower and
    no media flag is given: planner.serving.features.with_engine_defaults), which takes blocks from the pool of
    the worked example above (22.62 without it)."""
    from planner.cli.entry import main
    from planner.serving.features import with_engine_defaults

    args = ["plan", "--model", "google/gemma-3-27b-it", "--gpu", "nvidia-h200-sxm", "--context-len", "32768",
            "--engine", "vllm"]
    main([*args, "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    serving = with_engine_defaults(None, engine="vllm", raw_config=catalog.get_model_entry("google/gemma-3-27b-it")
                                   .config)
    expected = _plan("google/gemma-3-27b-it", 32768, serving=serving).max_concurrency_decoding
    assert serving is not None and round(expected, 2) < 22.62
    assert data["engine_plan"]["max_concurrency_decoding"] == round(expected, 2)
    main(args)
    assert (f"decoding     {int(expected)} requests of 32,768 tokens decode at once ({expected:.2f}x)"
            in capsys.readouterr().out)


def _replay(window: int, block: int, length: int, batched: int, num_blocks: int) -> int:
    """Requests of ``length`` that a pool of ``num_blocks`` sliding-window blocks holds once decoding, with
    one more request prefilling ``batched`` tokens in the step: before a step, the blocks that end before
    ``computed - window + 1`` are freed (remove_skipped_blocks), then the step's slots are allocated. Each
    request at its worst block alignment (prompts differ in length), as vLLM's formula assumes."""
    def held(computed: int, new: int) -> int:
        first = max(0, computed - window + 1) // block
        return ceil_div(min(computed + new, length), block) - first

    starts = range(window, window + block)  # every alignment of a position past the first window
    decoding = max(held(c, 1) for c in starts)
    prefill_peak = max(held(c, batched) for c in starts)
    return (num_blocks - prefill_peak) // decoding + 1


@pytest.mark.parametrize(("window", "block", "length", "batched"),
                         [(1024, 16, 32768, 8192), (128, 16, 32768, 2048), (4096, 32, 100000, 16384)])
def test_formula_matches_a_replay_of_the_scheduler_rule(window, block, length, batched):
    """One sliding-window layer: the formula's whole requests equal the replay's, for a pool of 1,000 requests
    at the printed peak."""
    spec = SlidingWindowPages(block_size=block, bytes_per_token=1, sliding_window=window)
    layout = kv_layout([spec])
    num_blocks = 1000 * spec.blocks_per_request(length, batched)
    spare, decode = decoding_ratio(layout, num_blocks, length, batched)
    assert spare // decode == _replay(window, block, length, batched, num_blocks)


# --- the scheduler's sequence limit: a pool can hold more requests than the engine runs at once ---------------
def test_a_pool_holding_more_than_max_num_seqs_says_the_scheduler_caps_it():
    """gpt-oss-20b at 2,048 tokens on an H200 under vLLM: the pool holds about 2,185 decoding requests, but the
    scheduler runs at most ``max_num_seqs`` sequences a step (1,024, vLLM's default for ``serve`` on a GPU of
    70 GiB or more: vllm/engine/arg_utils.py); the note says so and names the flag that raises it."""
    plan = _plan("openai/gpt-oss-20b", 2048)
    assert plan.max_num_seqs == 1024 and plan.requests_held > 2000
    note = plan.scheduler_cap_note
    assert note.startswith("vllm runs at most 1,024 sequences at once (--max-num-seqs)")
    assert f"{int(plan.requests_held):,} requests of 2,048 tokens ({plan.requests_held:,.2f}x)" in note
    raised = _plan("openai/gpt-oss-20b", 2048, max_num_seqs=4096)
    assert raised.requests_held < 4096 and raised.scheduler_cap_note == ""


def test_no_cap_note_when_the_pool_holds_fewer_than_the_limit():
    plan = _plan("google/gemma-3-27b-it", 32768)
    assert plan.requests_held < plan.max_num_seqs and plan.scheduler_cap_note == ""


def test_sglang_names_its_own_flag_and_the_cli_prints_the_cap(capsys):
    """SGLang runs at most ``max_running_requests`` requests (python/sglang/srt/managers/scheduler.py); its
    launch flag is ``--max-running-requests``. The CLI table prints the note on a ``running`` line."""
    plan = _plan("Qwen/Qwen3-0.6B", 1024, engine="sglang", max_num_seqs=64)
    assert plan.requests_held > 64
    assert plan.scheduler_cap_note.startswith("sglang runs at most 64 sequences at once (--max-running-requests)")
    from planner.cli.entry import main

    main(["plan", "--engine", "vllm", "--model", "openai/gpt-oss-20b", "--gpu", "nvidia-h200-sxm",
          "--context-len", "2048"])
    running = [line for line in capsys.readouterr().out.splitlines() if line.startswith("running")]
    assert len(running) == 1 and "at most 1,024 sequences at once (--max-num-seqs)" in running[0]


def test_engine_page_and_home_panel_say_the_scheduler_caps_the_pool():
    """The Engine page's verdict and Home's engine panel carry the same sentence as the CLI's ``running`` line
    (gpt-oss-20b, 2,048 tokens, one H200: the pool holds more than vLLM's 1,024 sequences)."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    root = Path(__file__).resolve().parents[1]
    note = _plan("openai/gpt-oss-20b", 2048).scheduler_cap_note
    for page in ("pages/5_Engine.py", "app.py"):
        at = AppTest.from_file(str(root / page), default_timeout=120)
        for key, value in {"model": "openai/gpt-oss-20b", "gpu": "nvidia-h200-sxm", "context_len": "2048"}.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception
        texts = [e.value for e in (*at.info, *at.caption)]
        assert any(note in text for text in texts), page
        if page == "pages/5_Engine.py":  # the count itself, without vLLM's "x", and the cap under it
            [tile] = [m for m in metric_tiles(at) if m.label == "Requests decoding at once"]
            assert tile.value == "2,184.65" and tile.delta == "runs 1,024 (max_num_seqs)"


def test_whole_requests_are_floored_from_the_exact_ratio_not_the_print(capsys):
    """DeepSeek-V3.2 on 8 B200 at 32,768 tokens (128-token blocks): 13,055 blocks / 256 a request = 50.996, which
    vLLM prints as 51.00x. Only 50 whole requests fit: Find and the decode pool count 50 (they counted 51)."""
    from model_catalog.gpus import get_gpu
    from planner.cli.entry import main

    b200 = get_gpu("nvidia-b200")
    plan = plan_engine(catalog.model_spec("deepseek-ai/DeepSeek-V3.2"), b200.framework_memory_bytes, EngineRequest(
        engine="vllm", tensor_parallel_size=8, max_model_len=32768, gpu_name=b200.name))
    assert (plan.num_gpu_blocks, plan.blocks_per_request, plan.max_concurrency) == (13055, 256, 51.0)
    assert plan.requests_held_ratio == (13055, 256) and int(plan.requests_held) == 50
    assert plan.requests_at_prefill_peak == 50 and "requests_held_ratio" not in plan.to_dict()
    main(["find", "--model", "deepseek-ai/DeepSeek-V3.2", "--users", "50", "--prompt-len", "32268", "--output-len",
          "500", "--gpu-types", "nvidia-b200", "--setup-kinds", "tp", "--format", "json"])
    [row] = json.loads(capsys.readouterr().out)
    assert row["max_concurrent_sequences"] == row["users_per_replica"] == 50
    main(["disagg", "--model", "deepseek-ai/DeepSeek-V3.2", "--gpu", "nvidia-b200", "--users", "256", "--prompt-len",
          "32268", "--output-len", "500"])
    assert json.loads(capsys.readouterr().out)["decode"]["max_concurrency"] == 50


def test_a_cap_of_one_sequence_is_singular():
    """``--max-num-seqs 1`` (as in the [N09] launch of tests/data/reference/engine_cases.csv): the note said
    "vllm runs at most 1 sequences at once" (QA). gpt-oss-20b at 2,048 tokens on an H200 holds thousands."""
    plan = _plan("openai/gpt-oss-20b", 2048, max_num_seqs=1)
    assert plan.requests_held > 1
    assert plan.scheduler_cap_note.startswith("vllm runs at most 1 sequence at once (--max-num-seqs)")
