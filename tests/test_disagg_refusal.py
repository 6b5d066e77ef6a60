"""QA round (Disaggregation): a model no tensor-parallel size starts, the budget bar's labels inside its box, and the
prefill pool's concurrency as its launch allows.

Expected texts come from the planner's own return values (never re-derived here).
"""

from __future__ import annotations

import re
from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines.types import EngineRequest
from planner.scale import PoolRequest, ScaleRequest, plan_disagg
from tests.test_disaggregation_page import _run
from tests.tiles import metric_tiles
from ui.budget_bar import segments_bar_html
from ui.format import format_int

LLAMA405, L4 = "meta-llama/Llama-3.1-405B-Instruct", "nvidia-l4"
QWEN_SMALL, H100 = "Qwen/Qwen3-0.6B", "nvidia-h100-sxm-80gb"
MOE = "Qwen/Qwen3-235B-A22B"


def _plan(model_id: str, gpu_id: str, *, users: int, prompt: int, output: int):
    gpu = get_gpu(gpu_id)
    pool = PoolRequest(engine=EngineRequest(gpu_name=gpu.name), scale=ScaleRequest(), auto_tensor_parallel=True)
    return plan_disagg(model_spec(model_id), gpu_memory_bytes=gpu.framework_memory_bytes,
                       bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=gpu.bf16_dense_tflops, prefill=pool,
                       decode=pool, users=users, prompt_len=prompt, output_len=output, ttft_ms=2000.0, tpot_ms=50.0)


def test_a_dense_model_no_size_starts_gets_advice_for_a_dense_model():
    """Llama 405B on L4: every size up to a node was tried; the note says so and offers no expert parallel."""
    result = _plan(LLAMA405, L4, users=10, prompt=2000, output=500)
    assert not result.starts and not result.tensor_parallel_fixes
    assert len(result.pool_notes) == 2
    for note in result.pool_notes:
        assert "no tensor-parallel size up to a node of 8 GPUs starts it" in note
        assert "expert parallel" not in note
        assert "GPU with more memory" in note and "pipeline parallel" in note
    # a pool that does not start is not timed: no TTFT reason advising a size the choice already tried
    assert not any("tensor-parallel-size" in r for r in result.reasons)


def test_a_moe_model_no_size_starts_keeps_data_plus_expert_advice():
    result = _plan(MOE, L4, users=10, prompt=2000, output=500)
    assert not result.starts and not result.tensor_parallel_fixes
    assert result.pool_notes and all("data + expert parallel across nodes" in n for n in result.pool_notes)


def test_the_page_shows_the_planner_s_reason_when_no_size_starts():
    at = _run({"model": LLAMA405, "gpu": L4, "users": "10", "prompt_len": "2000", "output_len": "500"})
    assert not at.exception, at.exception
    result = _plan(LLAMA405, L4, users=10, prompt=2000, output=500)
    shown = " ".join(x.value for x in (*at.warning, *at.error, *at.info, *at.caption))
    for note in result.pool_notes:
        assert note in shown
    assert "raise the prefill --tensor-parallel-size" not in shown
    assert "change the lengths or the parallel sizes" not in shown
    assert not at.button  # no size to offer


def _label_box(fragment: str, name: str) -> str:
    return re.search(rf'data-label="{name}" style="([^"]*)"', fragment).group(1)


def test_a_usable_label_near_the_left_edge_sits_right_of_its_line():
    """The usable line at 2.5% of the bar: its label, drawn left of the line, was cut at the box's left edge."""
    gib = 2**30
    fragment = segments_bar_html([("Weights", 776 * gib)], {"Weights": "#000"}, usable_bytes=int(19.79 * gib),
                                 card_bytes=22 * gib, gpu_label="L4")
    usable = _label_box(fragment, "usable")
    assert "right:" not in usable and "left:" in usable  # anchored to the right of the line: never past x = 0
    # and the card label, right of a line just beside it, does not sit on the same row
    assert _label_box(fragment, "card") != usable and "bottom:2px" not in _label_box(fragment, "card")


def test_a_usable_label_with_room_stays_left_of_its_line():
    gib = 2**30
    fragment = segments_bar_html([("Weights", 40 * gib)], {"Weights": "#000"}, usable_bytes=72 * gib,
                                 card_bytes=80 * gib, gpu_label="H100")
    assert "right:calc(" in _label_box(fragment, "usable")


def test_the_prefill_concurrency_is_what_its_launch_runs():
    """Qwen3-0.6B on H100: memory holds thousands of prompts, the launch caps a rank at --max-num-seqs."""
    result = _plan(QWEN_SMALL, H100, users=1, prompt=100, output=100)
    cap = result.prefill.plan.engine.max_num_seqs
    assert f"--max-num-seqs {cap}" in result.prefill.to_dict()["launch_command"]
    assert result.prefill.max_concurrency == cap * result.prefill.plan.layout.attention_dp
    at = _run({"model": QWEN_SMALL, "gpu": H100, "users": "1", "prompt_len": "100", "output_len": "100"})
    assert not at.exception, at.exception
    tiles = [m for m in metric_tiles(at) if m.label == "Concurrency per replica"]
    assert tiles[0].value == format_int(result.prefill.max_concurrency)
    assert "--max-num-seqs" in tiles[0].help


GLM_FP8 = "zai-org/GLM-5.1-FP8"


def test_a_checkpoint_already_in_fp8_is_not_told_to_use_fp8():
    """QA, stop 42: GLM-5.1-FP8 on H100 was told "smaller weights (fp8)"; only formats smaller than the one the
    checkpoint ships in are offered (4-bit ones for fp8), none for a 4-bit checkpoint."""
    result = _plan(GLM_FP8, H100, users=256, prompt=1000, output=1000)
    assert not result.starts and result.pool_notes
    for note in result.pool_notes:
        assert "(fp8)" not in note and "fp8 or" not in note
        assert "nvfp4" in note and "int4" in note
    bf16 = _plan("zai-org/GLM-5.1", H100, users=256, prompt=1000, output=1000)
    assert bf16.pool_notes and all("fp8" in n for n in bf16.pool_notes)
    nvfp4 = _plan("nvidia/GLM-5.1-NVFP4", L4, users=256, prompt=1000, output=1000)
    assert nvfp4.pool_notes and not any(re.search(r"smaller weights|int4|nvfp4", n) for n in nvfp4.pool_notes)


def test_the_cli_prints_no_transfer_time_when_the_pools_would_not_start(capsys):
    from planner.cli import main

    args = ["disagg", "--model", GLM_FP8, "--gpu", H100, "--users", "256", "--prompt-len", "1000",
            "--output-len", "1000", "--format", "table"]
    main(args)
    out = capsys.readouterr().out
    transfer = next(line for line in out.splitlines() if line.startswith("transfer"))
    assert "TTFT" not in transfer and " ms" not in transfer and "n/a" in transfer
