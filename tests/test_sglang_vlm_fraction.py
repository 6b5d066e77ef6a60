"""SGLang lowers its default ``mem_fraction_static`` for a vision-language model (``adjust_mem_fraction_for_vlm``).

SGLang's rule (python/sglang/srt/server_args.py ``_handle_gpu_memory_settings`` and ``adjust_mem_fraction_for_vlm``,
late-2025 builds; the mid-2025 ``__post_init__`` the same; 2026 builds python/sglang/srt/arg_groups/memory_hook.py):
only when ``--mem-fraction-static`` is not given and ``ModelConfig.is_multimodal`` (the architecture is listed in
python/sglang/srt/configs/model_config.py ``multimodal_model_archs`` and multimodal is not off by default, as it is
for Gemma 3 and Llama 4), the fraction becomes ``f x 0.95 x clamp(1 - 0.1 x (r - 1), 0.8, 1.05)`` with
``r = L x H^2 / (24 x 1024^2)``, ``L = vision_config.num_hidden_layers`` (else 24) and
``H = vision_config.hidden_size`` (else 1024). The expected figures are worked here by hand.
"""

from __future__ import annotations

import json

import pytest

from planner.cli import main

H100 = "nvidia-h100-sxm-80gb"
H100_DEFAULT = 0.835
"""SGLang's default on an H100 (nvidia-smi 81,559 MiB; chunk 8,192, graph bs 256): reserved = 512 + 1.5 x 8,192 +
2 x 256 + 1,024 / 8 = 13,440 MiB; round((81,559 - 13,440) / 81,559, 3) = round(0.83521, 3) = 0.835."""


def _engine_plan(capsys, model: str, *extra: str, engine: str = "sglang") -> dict:
    assert main(["plan", "--format", "json", "--engine", engine, "--model", model, "--gpu", H100,
                 "--context-len", "8192", *extra]) == 0
    return json.loads(capsys.readouterr().out)["engine_plan"]


def test_gemma4_default_fraction_is_lowered_for_its_vision_tower(capsys):
    """Gemma 4 26B-A4B (Gemma4ForConditionalGeneration; vision_config num_hidden_layers 27, hidden_size 1,152):
    r = 27 x 1,152^2 / (24 x 1,024^2) = 35,831,808 / 25,165,824 = 1.423828125; dynamic = 1 - 0.1 x 0.423828125 =
    0.9576171875; factor = 0.95 x 0.9576171875 = 0.909736328125; fraction = 0.835 x 0.909736328125 =
    0.759629833984375 (0.835 before)."""
    plan = _engine_plan(capsys, "google/gemma-4-26B-A4B")
    assert plan["gpu_memory_utilization"] == pytest.approx(0.759629833984375, abs=1e-12)
    rank = plan["ranks"][0]
    assert rank["requested_bytes"] == int(rank["memory_base_bytes"] * 0.759629833984375)
    note = next(n for n in plan["notes"] if "adjust_mem_fraction_for_vlm" in n)
    assert "0.9097" in note and "0.7596" in note and "0.835" in note


def test_qwen3_vl_reads_num_hidden_layers_not_depth(capsys):
    """Qwen3-VL-8B (Qwen3VLForConditionalGeneration): its vision_config states ``depth`` 27 and hidden_size 1,152 but
    no ``num_hidden_layers``, which SGLang's getattr asks for, so L = 24: r = 1,152^2 / 1,024^2 = 1.265625;
    dynamic = 1 - 0.0265625 = 0.9734375; fraction = 0.835 x 0.95 x 0.9734375 = 0.772179296875."""
    plan = _engine_plan(capsys, "Qwen/Qwen3-VL-8B-Instruct")
    assert plan["gpu_memory_utilization"] == pytest.approx(0.772179296875, abs=1e-12)


def test_text_model_keeps_the_default(capsys):
    plan = _engine_plan(capsys, "Qwen/Qwen3-0.6B")
    assert plan["gpu_memory_utilization"] == H100_DEFAULT
    assert not any("adjust_mem_fraction_for_vlm" in n for n in plan["notes"])


def test_gemma3_and_llama4_keep_the_default_multimodal_is_off_for_them(capsys):
    """``ModelConfig`` turns multimodal off for Gemma3ForConditionalGeneration and Llama4ForConditionalGeneration
    unless ``--enable-multimodal`` is given, so ``is_multimodal`` is false and the fraction stays. Llama 4 Scout at
    TP 4: graph bs 512, reserved = 512 + 12,288 + 1,024 + 4 / 8 x 1,024 = 14,336 MiB; round(67,223 / 81,559, 3) =
    0.824."""
    for model, tp, default in (("google/gemma-3-27b-it", "1", H100_DEFAULT),
                               ("meta-llama/Llama-4-Scout-17B-16E-Instruct", "4", 0.824)):
        plan = _engine_plan(capsys, model, "--tensor-parallel-size", tp)
        assert plan["gpu_memory_utilization"] == default, model
        assert not any("adjust_mem_fraction_for_vlm" in n for n in plan["notes"]), model


def test_a_fraction_the_user_sets_is_not_adjusted(capsys):
    plan = _engine_plan(capsys, "google/gemma-4-26B-A4B", "--gpu-memory-utilization", "0.8")
    assert plan["gpu_memory_utilization"] == 0.8
    assert not any("adjust_mem_fraction_for_vlm" in n for n in plan["notes"])


def test_mid_2025_builds_do_not_list_qwen3_vl(capsys):
    """SGLang 0.4.8-0.5.0rc predate Qwen3-VL: its architecture is not in that ``multimodal_model_archs``."""
    plan = _engine_plan(capsys, "Qwen/Qwen3-VL-8B-Instruct", engine="sglang-v0.4")
    assert not any("adjust_mem_fraction_for_vlm" in n for n in plan["notes"])


def test_factor_bounds():
    """The dynamic factor is clamped to [0.8, 1.05]: a 48-layer 2,048-wide tower (r = 8) gives 0.95 x 0.8 = 0.76;
    a 12-layer 768-wide one (r = 0.28125) gives 0.95 x 1.05 = 0.9975; the ViT-L/14 baseline 0.95."""
    from planner.engines.sglang_vlm import vit_fraction_factor

    assert vit_fraction_factor(48, 2048) == pytest.approx(0.76)
    assert vit_fraction_factor(12, 768) == pytest.approx(0.9975)
    assert vit_fraction_factor(24, 1024) == pytest.approx(0.95)


def test_home_says_the_sglang_panel_models_the_vision_cut():
    """Home's "Left out" line under ``engine=sglang`` named the cut as not modelled; the panel now applies it."""
    from ui.engine_home import home_budget_features

    _, left = home_budget_features(None, "sglang", "google/gemma-4-26B-A4B")
    why = " ".join(reason for _, reason in left)
    assert "adjust_mem_fraction_for_vlm" in why
    assert "does not model" not in why
