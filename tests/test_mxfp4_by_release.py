"""MXFP4 experts as each vLLM release loads them on Hopper (planner.engines.loaded, design note 2).

Read in each release's wheel (vllm/model_executor/layers/quantization/mxfp4.py and utils/mxfp4_utils.py):
0.10.0-0.10.1.1 pin torch 2.7.1 and ``Mxfp4MoEMethod._should_use_marlin`` returns True on SM 9.0 under torch
2.8.0; 0.10.2 reaches Triton only when ``triton_kernels`` imports, which the wheel does not require. Marlin pads
the per-GPU intermediate size to 128 and the hidden size to 256 (``create_weights``) and keeps bf16 biases.
The later Hopper layout (V21, gpt-oss-20b, printed 13.47 GiB; vllm-project/vllm#33155, gpt-oss-120b on one H100
under 0.14.1, printed "Model loading took 64.38 GiB") is Triton with the swizzled copy of the scales.
"""

from __future__ import annotations

from model_catalog import model_spec
from planner.engines.loaded import loaded_weight_bytes, mxfp4_expert_bytes, vllm_mxfp4_layout
from planner.model.dtypes import weight_dtype

GPT_OSS_120B = "openai/gpt-oss-120b"


def test_hopper_under_v0_10_is_marlin():
    layout = vllm_mxfp4_layout("vllm-v0.10", "H100 SXM5 80GB")
    assert (layout.backend, layout.inter_multiple, layout.hidden_multiple, layout.bias_bytes) == ("marlin", 128, 256, 2)
    assert vllm_mxfp4_layout("vllm-v0.11", "H100 SXM5 80GB").backend == "triton"
    assert vllm_mxfp4_layout("vllm", "H200").backend == "triton"


def test_gpt_oss_120b_expert_on_one_hopper_by_hand():
    # Marlin, TP 1: intermediate 2880 -> 2944, hidden 2880 -> 3072. Values 2 x 2944 x 1536 + 3072 x 1472; scales
    # (2 x 2944 x 3072 + 3072 x 2944) / 32; bf16 biases (2 x 2944 + 3072) x 2.
    marlin = mxfp4_expert_bytes(hidden=2880, intermediate=2880, tensor_parallel_size=1,
                                layout=vllm_mxfp4_layout("vllm-v0.10", "H100"), with_bias=True)
    assert marlin == 9_043_968 + 4_521_984 + 565_248 + 282_624 + 17_920 == 14_431_744
    # Triton with the Hopper swizzle (0.11+): checkpoint values and scales, the 256-row scale copy, fp32 biases
    triton = mxfp4_expert_bytes(hidden=2880, intermediate=2880, tensor_parallel_size=1,
                                layout=vllm_mxfp4_layout("vllm-v0.11", "H100"), with_bias=True)
    assert triton == 12_441_600 + 777_600 + (5888 + 3072) * 90 + (5760 + 2880) * 4 == 14_060_160


def test_gpt_oss_120b_loads_more_under_v0_10_on_hopper():
    # 36 layers x 128 experts: Marlin holds 4,608 x (14,431,744 - 14,060,160) B more than the 0.11+ layout
    model, auto = model_spec(GPT_OSS_120B), weight_dtype("auto")
    old = loaded_weight_bytes(model, auto, 1, mxfp4=vllm_mxfp4_layout("vllm-v0.10", "H100"))
    new = loaded_weight_bytes(model, auto, 1, mxfp4=vllm_mxfp4_layout("vllm-v0.11", "H100"))
    assert old - new == 4608 * (14_431_744 - 14_060_160)


def test_the_engine_refuses_gpt_oss_120b_at_full_context_on_one_h100_under_v0_10(capsys):
    # vllm-project/vllm#23278: vLLM 0.10.1, `vllm serve openai/gpt-oss-120b` on one H100 (max len 131,072) did
    # not start. With Marlin's padding the plan refuses it too; with the unpadded layout it said "starts".
    import json

    from planner.cli import main

    assert main(["plan", "--model", GPT_OSS_120B, "--gpu", "nvidia-h100-sxm", "--engine", "vllm-v0.10",
                 "--context-len", "131072", "--format", "json"]) == 0
    engine = json.loads(capsys.readouterr().out)["engine_plan"]
    assert engine["starts"] is False
    assert engine["ranks"][0]["weights_bytes"] > 65 * 2**30
