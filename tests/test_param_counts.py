"""Exact parameter counts: the planner's groups vs transformers' own model classes.

Every pinned value below was computed with transformers 5.24.0 (torch 2.13 CPU)
as ``sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())``
with the model built under ``torch.device("meta")``, ``cfg`` being the catalog
config read by ``model_catalog.hf_config.load_text_config`` (the text config for
multimodal entries). ``scripts/verify_param_counts.py`` recomputes them (dev-only,
needs torch); these tests do not import torch.
"""

from __future__ import annotations

import pytest

from model_catalog import get_model_entry, model_ids, model_spec
from planner.model.params import (
    ParamGroup,
    count_parameters,
    mamba_mixer,
    merge_groups,
    mla_attention,
    moe_experts,
    router,
)

PINNED_PARAMS: dict[str, int] = {
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "01-ai/Yi-34B": 34_388_917_248,
    # source: transformers 5.24.0 CohereForCausalLM on meta device
    "CohereForAI/c4ai-command-r-v01": 34_980_831_232,
    # source: transformers 5.24.0 GPTJForCausalLM on meta device
    "EleutherAI/gpt-j-6b": 6_050_882_784,
    # source: transformers 5.24.0 GPTNeoXForCausalLM on meta device
    "EleutherAI/gpt-neox-20b": 20_554_567_680,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-0.5B": 494_032_768,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-1.5B-Instruct": 1_543_714_304,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-14B": 14_770_033_664,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-32B": 32_763_876_352,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-72B-Instruct": 72_706_203_648,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "Qwen/Qwen2.5-7B": 7_615_616_512,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-0.6B": 596_049_920,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-14B": 14_768_307_200,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "Qwen/Qwen3-235B-A22B": 235_093_634_560,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "Qwen/Qwen3-30B-A3B": 30_532_122_624,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-32B": 32_762_123_264,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-4B": 4_022_468_096,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-8B": 8_190_735_360,
    # source: transformers 5.24.0 Qwen3NextForCausalLM on meta device (model card: "80B in total")
    "Qwen/Qwen3-Next-80B-A3B-Instruct": 79_674_391_296,
    # source: transformers 5.24.0 JambaForCausalLM on meta device
    "ai21labs/Jamba-v0.1": 51_570_323_328,
    # source: transformers 5.24.0 Starcoder2ForCausalLM on meta device
    "bigcode/starcoder2-15b": 15_957_889_024,
    # source: transformers 5.24.0 DeepseekV2ForCausalLM on meta device
    "deepseek-ai/DeepSeek-Coder-V2-Instruct": 235_741_434_880,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "deepseek-ai/DeepSeek-R1": 671_026_404_352,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "deepseek-ai/DeepSeek-R1-Distill-Llama-8B": 8_030_261_248,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B": 32_763_876_352,
    # source: transformers 5.24.0 DeepseekV2ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V2-Lite": 15_706_484_224,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V3": 671_026_404_352,
    # source: transformers 5.24.0 Gemma2ForCausalLM on meta device
    "google/gemma-2-27b": 27_227_128_320,
    # source: transformers 5.24.0 Gemma2ForCausalLM on meta device
    "google/gemma-2-2b": 2_614_341_888,
    # source: transformers 5.24.0 Gemma2ForCausalLM on meta device
    "google/gemma-2-9b-it": 9_241_705_984,
    # source: transformers 5.24.0 Gemma3ForCausalLM on meta device
    "google/gemma-3-12b-it": 11_766_034_176,
    # source: transformers 5.24.0 Gemma3ForCausalLM on meta device
    "google/gemma-3-1b-it": 999_885_952,
    # source: transformers 5.24.0 Gemma3ForCausalLM on meta device
    "google/gemma-3-27b-it": 27_009_346_304,
    # source: transformers 5.24.0 Gemma3ForCausalLM on meta device
    "google/gemma-3-4b-it": 3_880_263_168,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-2-13b-hf": 13_015_864_320,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-2-70b-hf": 68_976_648_192,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-2-7b-hf": 6_738_415_616,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-3.2-1B-Instruct": 1_235_814_400,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-3.2-3B": 3_212_749_824,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Llama-3.3-70B-Instruct": 70_553_706_496,
    # source: transformers 5.24.0 Llama4ForCausalLM on meta device
    "meta-llama/Llama-4-Scout-17B-16E-Instruct": 107_769_861_120,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Meta-Llama-3-70B": 70_553_706_496,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Meta-Llama-3-8B": 8_030_261_248,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Meta-Llama-3.1-405B": 405_853_388_800,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Meta-Llama-3.1-70B": 70_553_706_496,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "meta-llama/Meta-Llama-3.1-8B": 8_030_261_248,
    # source: transformers 5.24.0 Phi3ForCausalLM on meta device
    "microsoft/Phi-3-medium-4k-instruct": 13_960_238_080,
    # source: transformers 5.24.0 Phi3ForCausalLM on meta device
    "microsoft/Phi-3-mini-4k-instruct": 3_821_079_552,
    # source: transformers 5.24.0 Phi3ForCausalLM on meta device
    "microsoft/phi-4": 14_659_507_200,
    # source: transformers 5.24.0 MistralForCausalLM on meta device
    "mistralai/Mistral-7B-Instruct-v0.3": 7_248_023_552,
    # source: transformers 5.24.0 MistralForCausalLM on meta device
    "mistralai/Mistral-7B-v0.1": 7_241_732_096,
    # source: transformers 5.24.0 MistralForCausalLM on meta device
    "mistralai/Mistral-Large-Instruct-2411": 122_610_069_504,
    # source: transformers 5.24.0 MistralForCausalLM on meta device
    "mistralai/Mistral-Nemo-Base-2407": 12_247_782_400,
    # source: transformers 5.24.0 MistralForCausalLM on meta device
    "mistralai/Mistral-Small-24B-Instruct-2501": 23_572_403_200,
    # source: transformers 5.24.0 MixtralForCausalLM on meta device
    "mistralai/Mixtral-8x22B-v0.1": 140_620_634_112,
    # source: transformers 5.24.0 MixtralForCausalLM on meta device
    "mistralai/Mixtral-8x7B-v0.1": 46_702_792_704,
    # source: transformers 5.24.0 GPT2LMHeadModel on meta device
    "openai-community/gpt2": 124_439_808,
    # source: transformers 5.24.0 GptOssForCausalLM on meta device
    "openai/gpt-oss-120b": 116_829_156_672,
    # source: transformers 5.24.0 GptOssForCausalLM on meta device
    "openai/gpt-oss-20b": 20_914_757_184,
    # source: transformers 5.24.0 FalconForCausalLM on meta device
    "tiiuae/falcon-40b": 41_303_293_952,
    # source: transformers 5.24.0 FalconForCausalLM on meta device
    "tiiuae/falcon-7b": 6_921_720_704,
    # --- 2025-26 models (scripts/verify_param_counts.py) ---
    # source: transformers 5.24.0 MiniMaxM2ForCausalLM on meta device
    "MiniMaxAI/MiniMax-M2.5": 228_689_748_992,
    # source: transformers 5.24.0 MiniMaxM2ForCausalLM on meta device
    "MiniMaxAI/MiniMax-M2.7": 228_689_748_992,
    # source: transformers 5.24.0 MiniMaxM3VLForCausalLM on meta device (model_type 'minimax_m3' read as minimax_m3_vl_text: by source)
    "MiniMaxAI/MiniMax-M3": 426_174_565_632,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-1.7B": 1_720_574_976,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "Qwen/Qwen3-235B-A22B-FP8": 235_093_634_560,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "Qwen/Qwen3-30B-A3B-FP8": 30_532_122_624,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-32B-FP8-Static-PerTensor": 32_762_123_264,
    # source: transformers 5.24.0 Qwen3ForCausalLM on meta device
    "Qwen/Qwen3-32B-FP8": 32_762_123_264,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "Qwen/Qwen3-Coder-480B-A35B-Instruct": 480_154_875_392,
    # source: transformers 5.24.0 Qwen3NextForCausalLM on meta device
    "Qwen/Qwen3-Next-80B-A3B-Thinking": 79_674_391_296,
    # source: transformers 5.24.0 language model of Qwen3VLMoeForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-235B-A22B-Instruct": 235_093_634_560,
    # source: transformers 5.24.0 language model of Qwen3VLMoeForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-235B-A22B-Thinking": 235_093_634_560,
    # source: transformers 5.24.0 language model of Qwen3VLForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-2B-Instruct": 1_720_574_976,
    # source: transformers 5.24.0 language model of Qwen3VLMoeForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-30B-A3B-Instruct": 30_532_122_624,
    # source: transformers 5.24.0 language model of Qwen3VLForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-32B-Instruct": 32_762_123_264,
    # source: transformers 5.24.0 language model of Qwen3VLForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-32B-Thinking": 32_762_123_264,
    # source: transformers 5.24.0 language model of Qwen3VLForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-4B-Instruct": 4_022_468_096,
    # source: transformers 5.24.0 language model of Qwen3VLForConditionalGeneration on meta device
    "Qwen/Qwen3-VL-8B-Instruct": 8_190_735_360,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "Qwen/Qwen3.5-122B-A10B": 122_111_526_912,
    # source: transformers 5.24.0 Qwen3_5ForCausalLM on meta device
    "Qwen/Qwen3.5-27B": 26_895_998_464,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "Qwen/Qwen3.5-35B-A3B": 34_660_610_688,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "Qwen/Qwen3.5-397B-A17B": 396_346_350_336,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "Qwen/Qwen3.6-35B-A3B": 34_660_610_688,
    # source: transformers 5.24.0 Qwen2ForCausalLM on meta device (model_type 'mimo' read as qwen2: by source)
    "XiaomiMiMo/MiMo-7B-Base": 7_622_619_136,
    # source: transformers 5.24.0 MiMoV2FlashForCausalLM on meta device
    "XiaomiMiMo/MiMo-V2-Flash": 308_778_768_832,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V3.1": 671_026_404_352,
    # source: transformers 5.24.0 DeepseekV32ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V3.2": 671_877_929_216,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V4-Flash": 284_332_230_231,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device
    "deepseek-ai/DeepSeek-V4-Pro": 1_572_997_179_491,
    # source: transformers 5.24.0 Gemma4ForCausalLM on meta device
    "google/gemma-4-26B-A4B": 25_233_141_760,
    # source: transformers 5.24.0 Llama4ForCausalLM on meta device
    "meta-llama/Llama-4-Maverick-17B-128E-Instruct": 400_711_848_960,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device (model_type 'kimi_k2' read as deepseek_v3: by source)
    "moonshotai/Kimi-K2-Instruct": 1_026_408_209_408,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device (model_type 'kimi_k2' read as deepseek_v3: by source)
    "moonshotai/Kimi-K2-Thinking": 1_026_408_209_408,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "moonshotai/Kimi-K2.5": 1_026_408_209_408,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "nvidia/DeepSeek-V3.1-NVFP4": 671_026_404_352,
    # source: transformers 5.24.0 DeepseekV32ForCausalLM on meta device
    "nvidia/DeepSeek-V3.2-NVFP4": 671_877_929_216,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device
    "nvidia/DeepSeek-V4-Flash-NVFP4": 284_332_230_231,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device
    "nvidia/DeepSeek-V4-Pro-NVFP4": 1_572_997_179_491,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "nvidia/GLM-5-NVFP4": 743_911_199_232,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "nvidia/GLM-5.1-NVFP4": 743_911_199_232,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "nvidia/GLM-5.2-NVFP4": 743_377_000_704,
    # source: transformers 5.24.0 Gemma4ForCausalLM on meta device
    "nvidia/Gemma-4-26B-A4B-NVFP4": 25_233_141_760,
    # source: transformers 5.24.0 Gemma4ForCausalLM on meta device
    "nvidia/Gemma-4-31B-IT-NVFP4": 30_697_345_280,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "nvidia/Kimi-K2.5-NVFP4": 1_026_408_209_408,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "nvidia/Kimi-K2.6-NVFP4": 1_026_408_209_408,
    # source: transformers 5.24.0 DeepseekV3ForCausalLM on meta device
    "nvidia/Kimi-K2.7-Code-NVFP4": 1_026_408_209_408,
    # source: transformers 5.24.0 LlamaForCausalLM on meta device
    "nvidia/Llama-3.1-70B-Instruct-FP8": 70_553_706_496,
    # source: transformers 5.24.0 MiniMaxM2ForCausalLM on meta device
    "nvidia/MiniMax-M2.5-NVFP4": 228_689_748_992,
    # source: transformers 5.24.0 MiniMaxM2ForCausalLM on meta device
    "nvidia/MiniMax-M2.7-NVFP4": 228_689_748_992,
    # source: transformers 5.24.0 MiniMaxM3VLForCausalLM on meta device
    "nvidia/MiniMax-M3-NVFP4": 426_174_565_632,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16": 31_577_937_344,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-NVFP4": 31_577_937_344,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8": 120_668_687_360,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4": 120_668_687_360,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16": 549_308_968_960,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-FP8": 549_308_968_960,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-NVFP4": 549_308_968_960,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/NVIDIA-Nemotron-3.5-Lightning-30B-A3B-NVFP4": 31_577_937_344,
    # source: transformers 5.24.0 NemotronHForCausalLM on meta device
    "nvidia/Nemotron-H-56B-Base-8K": 56_324_350_464,
    # source: transformers 5.24.0 Qwen3MoeForCausalLM on meta device
    "nvidia/Qwen3-235B-A22B-NVFP4": 235_093_634_560,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "nvidia/Qwen3.5-122B-A10B-NVFP4": 122_111_526_912,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "nvidia/Qwen3.5-397B-A17B-NVFP4": 396_346_350_336,
    # source: transformers 5.24.0 Qwen3_5ForCausalLM on meta device
    "nvidia/Qwen3.6-27B-NVFP4": 26_895_998_464,
    # source: transformers 5.24.0 Qwen3_5MoeForCausalLM on meta device
    "nvidia/Qwen3.6-35B-A3B-NVFP4": 34_660_610_688,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device (model_type 'deepseek_ref' read as deepseek_v4: by source)
    "sgl-project/DeepSeek-V4-Flash-FP8": 284_332_230_231,
    # source: transformers 5.24.0 DeepseekV4ForCausalLM on meta device (model_type 'deepseek_ref' read as deepseek_v4: by source)
    "sgl-project/DeepSeek-V4-Pro-FP8": 1_572_997_179_491,
    # source: transformers 5.24.0 language model of Step3p7ForConditionalGeneration on meta device
    "stepfun-ai/Step-3.7-Flash-FP8": 195_844_496_640,
    # source: transformers 5.24.0 language model of Step3p7ForConditionalGeneration on meta device
    "stepfun-ai/Step-3.7-Flash": 195_844_496_640,
    # source: transformers 5.24.0 Glm4MoeForCausalLM on meta device
    "zai-org/GLM-4.7-FP8": 352_796_472_320,
    # source: transformers 5.24.0 Glm4MoeLiteForCausalLM on meta device
    "zai-org/GLM-4.7-Flash": 29_943_390_976,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5-FP8": 743_911_199_232,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5.1-FP8": 743_911_199_232,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5.1": 743_911_199_232,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5.2-FP8": 743_377_000_704,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5.2": 743_377_000_704,
    # source: transformers 5.24.0 GlmMoeDsaForCausalLM on meta device
    "zai-org/GLM-5": 743_911_199_232,
}
"""Total parameters per catalog model (all experts, tied lm_head counted once)."""


@pytest.mark.parametrize("model_id", sorted(PINNED_PARAMS))
def test_parameter_count_matches_transformers(model_id: str) -> None:
    # the pins are the language model (transformers' *ForCausalLM); a multimodal spec also carries its towers,
    # checked against the whole *ForConditionalGeneration in tests/test_verify.py and test_serving_multimodal.py
    from planner.serving.multimodal import text_only

    assert count_parameters(text_only(model_spec(model_id)).params) == PINNED_PARAMS[model_id]


@pytest.mark.parametrize(
    ("model_id", "expected"),
    [
        # DOMAIN.md section 2 reference counts, taken from transformers' model classes.
        ("meta-llama/Meta-Llama-3-8B", 8_030_261_248),
        ("mistralai/Mixtral-8x7B-v0.1", 46_702_792_704),
        ("meta-llama/Llama-2-7b-hf", 6_738_415_616),
    ],
)
def test_domain_reference_counts(model_id: str, expected: int) -> None:
    assert model_spec(model_id).num_parameters == expected
    assert PINNED_PARAMS[model_id] == expected


UNBUILDABLE = {
    # model_type nemotron-nas: no transformers class; the planner follows vLLM's DeciLMForCausalLM (by source).
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1",
    # model_type kimi_k3 read as kimi_linear: transformers cannot build it (hidden_act "situ" is not in ACT2FN).
    "moonshotai/Kimi-K3",
}
"""Catalog models transformers cannot build, so nothing can be pinned against it."""


def test_every_catalog_model_has_a_pinned_count() -> None:
    missing = sorted(set(model_ids()) - set(PINNED_PARAMS) - UNBUILDABLE)
    assert not missing, f"run scripts/verify_param_counts.py and pin: {missing}"


@pytest.mark.parametrize(
    ("model_id", "low", "high"),
    [
        # Stated totals (entry params_official) bracket the exact count.
        ("deepseek-ai/DeepSeek-V3", 670e9, 672e9),  # "671B total"
        ("Qwen/Qwen3-30B-A3B", 30.4e9, 30.6e9),  # "30.5B total"
        ("openai/gpt-oss-120b", 116e9, 118e9),  # "117B"
        ("openai/gpt-oss-20b", 20.5e9, 21.5e9),  # "21B"
        ("ai21labs/Jamba-v0.1", 51e9, 53e9),  # "52B"
        ("deepseek-ai/DeepSeek-V2-Lite", 15.5e9, 16.5e9),  # "16B"
        ("Qwen/Qwen3-Next-80B-A3B-Instruct", 79.5e9, 80.5e9),  # "80B in total"
    ],
)
def test_counts_agree_with_stated_totals(model_id: str, low: float, high: float) -> None:
    assert get_model_entry(model_id).params_official is not None
    assert low <= model_spec(model_id).num_parameters <= high


@pytest.mark.parametrize(
    ("model_id", "tied"),
    [
        ("openai-community/gpt2", True),
        ("google/gemma-3-1b-it", True),
        ("Qwen/Qwen2.5-0.5B", True),
        ("tiiuae/falcon-7b", True),
        ("CohereForAI/c4ai-command-r-v01", True),
        ("meta-llama/Meta-Llama-3-8B", False),
        ("EleutherAI/gpt-j-6b", False),
    ],
)
def test_tied_embeddings_have_no_lm_head(model_id: str, tied: bool) -> None:
    kinds = {group.kind for group in model_spec(model_id).params}
    assert ("lm_head" in kinds) is (not tied)


def _kinds_by_name(model_id: str) -> dict[str, str]:
    return {group.name: group.kind for group in model_spec(model_id).params}


def test_moe_kinds_deepseek_v3() -> None:
    kinds = _kinds_by_name("deepseek-ai/DeepSeek-V3")
    assert kinds["layers.*.mlp.experts.gate_up_proj"] == "linear"
    assert kinds["layers.*.mlp.experts.down_proj"] == "linear"
    assert kinds["layers.*.mlp.gate.weight"] == "router"
    assert kinds["layers.*.self_attn.kv_a_layernorm.weight"] == "norm"
    assert kinds["embed_tokens.weight"] == "embedding"
    assert kinds["lm_head.weight"] == "lm_head"


def test_gpt_oss_kinds_and_expert_biases() -> None:
    kinds = _kinds_by_name("openai/gpt-oss-20b")
    assert kinds["layers.*.mlp.router.weight"] == "router"
    assert kinds["layers.*.mlp.router.bias"] == "router"
    assert kinds["layers.*.mlp.experts.gate_up_proj_bias"] == "bias"
    assert kinds["layers.*.self_attn.sinks"] == "other"


def test_jamba_mamba_kinds() -> None:
    kinds = _kinds_by_name("ai21labs/Jamba-v0.1")
    assert kinds["layers.*.mamba.conv1d.weight"] == "conv"
    assert kinds["layers.*.mamba.in_proj.weight"] == "linear"
    assert kinds["layers.*.mamba.A_log"] == "other"
    assert kinds["layers.*.mamba.dt_layernorm.weight"] == "norm"


def test_gpt2_has_learned_positions() -> None:
    groups = {group.name: group for group in model_spec("gpt2").params}
    assert groups["wpe.weight"].shape == (1024, 768)
    assert groups["wpe.weight"].kind == "embedding"


def test_deepseek_v3_expert_group_counts() -> None:
    groups = {group.name: group for group in model_spec("deepseek-ai/DeepSeek-V3").params}
    # 58 MoE layers (61 - first_k_dense_replace 3) x 256 routed experts.
    assert groups["layers.*.mlp.experts.gate_up_proj"].count == 58 * 256
    assert groups["layers.*.mlp.experts.gate_up_proj"].shape == (2 * 2048, 7168)
    assert groups["layers.*.mlp.gate_proj.weight"].count == 3


# --- builders -----------------------------------------------------------------------------


def test_mla_attention_deepseek_v3_layer() -> None:
    # q_a 1536x7168 + 1536 + q_b 24576x1536 + kv_a 576x7168 + 512 + kv_b 32768x512 + o 7168x16384
    groups = mla_attention(
        "a", hidden_size=7168, num_attention_heads=128, q_lora_rank=1536, kv_lora_rank=512,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
    )
    assert count_parameters(groups) == 187_107_328


def test_mla_attention_without_q_lora_uses_q_proj() -> None:
    groups = mla_attention(
        "a", hidden_size=2048, num_attention_heads=16, q_lora_rank=None, kv_lora_rank=512,
        qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
    )
    names = {group.name: group.shape for group in groups}
    assert names["a.q_proj.weight"] == (16 * 192, 2048)
    assert "a.q_a_proj.weight" not in names


def test_mamba_mixer_jamba_layer() -> None:
    groups = mamba_mixer(
        "m", hidden_size=4096, d_inner=8192, d_state=16, d_conv=4, dt_rank=256, inner_norms=True
    )
    assert count_parameters(groups) == 105_308_448


def test_moe_experts_and_router_numel() -> None:
    experts = moe_experts("e", hidden_size=8, intermediate_size=4, num_experts=2, bias=True, count=3)
    # per expert: gate_up 8x8 + bias 8 + down 8x4 + bias 8 = 112; x 2 experts x 3 layers
    assert count_parameters(experts) == 112 * 2 * 3
    assert count_parameters(router("r", hidden_size=8, num_experts=2, bias=True)) == 18


def test_merge_groups_adds_counts_and_keeps_order() -> None:
    a = ParamGroup(name="a", shape=(2, 2), kind="linear")
    b = ParamGroup(name="b", shape=(2,), kind="norm")
    merged = merge_groups((a, b, a, a))
    assert merged == (
        ParamGroup(name="a", shape=(2, 2), count=3, kind="linear"),
        ParamGroup(name="b", shape=(2,), kind="norm"),
    )


def test_qwen3_next_hybrid_layout_and_state() -> None:
    # 12 x (3 Gated DeltaNet + 1 gated attention); DeltaNet state per layer: conv (2 x 16 x 128 + 32 x 128) x 4,
    # recurrent 32 x 128 x 128 (transformers Qwen3NextGatedDeltaNet).
    spec = model_spec("Qwen/Qwen3-Next-80B-A3B-Instruct")
    assert spec.layer_counts == {"recurrent": 36, "full_attention": 12}
    state = spec.layers[0]
    assert (state.conv_state_elements, state.ssm_state_elements) == (8192 * 4, 32 * 128 * 128)
    groups = {group.name: group for group in spec.params}
    assert groups["layers.*.self_attn.q_proj.weight"].shape == (2 * 16 * 256, 2048)  # query + output gate
    assert groups["layers.*.mlp.experts.gate_up_proj"].count == 48 * 512
    assert groups["layers.*.mlp.shared_expert_gate.weight"].shape == (1, 2048)
