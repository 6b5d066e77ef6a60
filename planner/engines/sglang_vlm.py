"""SGLang's lower default ``mem_fraction_static`` for a vision-language model (``adjust_mem_fraction_for_vlm``).

When ``--mem-fraction-static`` is not given, SGLang derives its default (:func:`planner.engines.profiles.
sglang_memory_defaults`, :func:`~planner.engines.profiles.sglang_2025_memory_defaults`) and then, for a model whose
``ModelConfig.is_multimodal`` is true, multiplies it by ``0.95 x clamp(1 - 0.1 x (r - 1), 0.8, 1.05)`` with
``r = L x H^2 / (24 x 1024^2)``: the tower's "weight params count" against a ViT-L/14 baseline, ``L`` =
``vision_config.num_hidden_layers`` and ``H`` = ``vision_config.hidden_size`` read with ``getattr`` defaults 24 and
1,024 (:func:`vit_fraction_factor`). The product is not rounded. A fraction the user sets is never adjusted.

``is_multimodal`` is ``enable_multimodal and is_multimodal_model(architectures)``: the first architecture must be in
``multimodal_model_archs`` (:data:`SGLANG_MULTIMODAL_ARCHS`, :data:`SGLANG_2025_MULTIMODAL_ARCHS`), and
``enable_multimodal`` defaults to off for Gemma 3, Llama 4 and Step3-VL (:data:`MULTIMODAL_OFF_BY_DEFAULT`; their
``--enable-multimodal`` flag is not modelled). A text-only plan (``ModelSpec.language_model_only``) keeps the
fraction, as 2026 builds skip the adjustment under ``--language-only`` / ``--language-model-only``.

``L`` is the stated ``num_hidden_layers`` only: Qwen-VL vision configs state ``depth``, which the transformers
4.5x config objects SGLang pinned in 2025 do not alias (transformers 5 maps ``num_hidden_layers`` to ``depth``
through ``attribute_map``), so SGLang takes 24 there (``ModelSpec.vision_config_sizes``).

Sources: SGLang python/sglang/srt/server_args.py (``ServerArgs.adjust_mem_fraction_for_vlm``, called from
``_handle_gpu_memory_settings`` in late-2025 builds and from ``__post_init__`` in mid-2025 builds, both under
``if self.mem_fraction_static is None``); 2026 builds python/sglang/srt/arg_groups/memory_hook.py
(``adjust_mem_fraction_for_vlm``, the same constants); python/sglang/srt/configs/model_config.py
(``ModelConfig.__init__`` ``mm_disabled_models``, ``multimodal_model_archs``, ``is_multimodal_model``).
"""

from __future__ import annotations

from planner.model import ModelSpec

VLM_BASE_FACTOR = 0.95
"""``base_mem_fraction_reduction_ratio``: the cut for a regular ViT."""
VIT_BASELINE_LAYERS, VIT_BASELINE_HIDDEN = 24, 1024
"""The ViT-L/14 baseline, also the ``getattr`` defaults for a vision config without the key."""
VIT_SENSITIVITY = 0.1
"""``sensitivity_scale``: 10 % of the factor per 100 % more tower."""
VIT_FACTOR_BOUNDS = (0.8, 1.05)
"""Clamp of the dynamic adjustment factor."""

MULTIMODAL_OFF_BY_DEFAULT = frozenset({"Gemma3ForConditionalGeneration", "Llama4ForConditionalGeneration",
                                       "Step3VLForConditionalGeneration"})
"""Architectures whose ``enable_multimodal`` SGLang sets False when the flag is not given (``mm_disabled_models``;
Step3-VL joined in late 2025)."""

SGLANG_2025_MULTIMODAL_ARCHS = frozenset({
    "CLIPModel", "DeepseekVL2ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3nForConditionalGeneration",
    "Grok1VForCausalLM", "Grok1AForCausalLM", "LlavaLlamaForCausalLM", "Llama4ForConditionalGeneration",
    "LlavaMistralForCausalLM", "LlavaQwenForCausalLM", "LlavaForConditionalGeneration", "LlavaVidForCausalLM",
    "MiniCPMO", "MiniCPMV", "Mistral3ForConditionalGeneration", "MultiModalityCausalLM",
    "MllamaForConditionalGeneration", "Qwen2AudioForConditionalGeneration", "Qwen2VLForConditionalGeneration",
    "Qwen2_5_VLForConditionalGeneration", "KimiVLForConditionalGeneration", "InternVLChatModel", "Phi4MMForCausalLM",
    "VILAForConditionalGeneration",
})
"""``multimodal_model_archs`` of mid-2025 builds (profile ``sglang-v0.4``): no Qwen3-VL, Qwen3.5, Gemma 4 or
Kimi-K2.5 yet."""

SGLANG_MULTIMODAL_ARCHS = SGLANG_2025_MULTIMODAL_ARCHS | frozenset({
    "Cohere2VisionForConditionalGeneration", "Ernie4_5_VLMoeForConditionalGeneration", "Gemma4ForConditionalGeneration",
    "Gemma4UnifiedForConditionalGeneration", "Glm4vForConditionalGeneration", "Glm4vMoeForConditionalGeneration",
    "GlmOcrForConditionalGeneration", "Lfm2VlForConditionalGeneration", "LightOnOCRForConditionalGeneration",
    "MiMoV2ForCausalLM", "MossVLForConditionalGeneration", "NemotronH_Nano_VL_V2", "PixtralForConditionalGeneration",
    "Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
    "Qwen3_5MoeForConditionalGeneration", "Qwen3OmniMoeForConditionalGeneration", "InternS1ForConditionalGeneration",
    "Step3VLForConditionalGeneration", "DotsVLMForCausalLM", "DotsOCRForCausalLM", "NVILAForConditionalGeneration",
    "DeepseekOCRForCausalLM", "PaddleOCRVLForConditionalGeneration", "StepVLForConditionalGeneration",
    "KimiK25ForConditionalGeneration",
})
"""``multimodal_model_archs`` of late-2025 / 2026 builds (profile ``sglang``): the vision architectures added to
the mid-2025 list (audio-only ones left out: they have no ``vision_config``)."""


def vit_fraction_factor(layers: int, hidden_size: int) -> float:
    """``0.95 x clamp(1 - 0.1 x (r - 1), 0.8, 1.05)``, ``r = layers x hidden_size^2 / (24 x 1024^2)``.

    Worked example, Gemma 4 26B-A4B (27 layers, 1,152 wide): r = 35,831,808 / 25,165,824 = 1.423828125,
    1 - 0.0423828125 = 0.9576171875, x 0.95 = 0.909736328125.

    Sources: SGLang python/sglang/srt/server_args.py ``adjust_mem_fraction_for_vlm`` (module docstring).
    """
    ratio = layers * hidden_size ** 2 / (VIT_BASELINE_LAYERS * VIT_BASELINE_HIDDEN ** 2)
    low, high = VIT_FACTOR_BOUNDS
    return VLM_BASE_FACTOR * max(low, min(high, 1.0 - VIT_SENSITIVITY * (ratio - 1.0)))


def sglang_vlm_fraction(model: ModelSpec, profile_id: str, default_fraction: float) -> tuple[float, str | None]:
    """``(fraction, note)``: SGLang's default ``mem_fraction_static`` for ``model`` under ``profile_id`` after
    ``adjust_mem_fraction_for_vlm``, and a note with the factor; ``(default_fraction, None)`` where SGLang does not
    adjust (no vision config, an architecture not multimodal in that build or off by default, a text-only plan).
    Callers apply it only when the user set no fraction."""
    sizes = model.vision_config_sizes
    archs = SGLANG_2025_MULTIMODAL_ARCHS if profile_id == "sglang-v0.4" else SGLANG_MULTIMODAL_ARCHS
    if (sizes is None or model.language_model_only or model.architecture not in archs
            or model.architecture in MULTIMODAL_OFF_BY_DEFAULT):
        return default_fraction, None
    stated_layers, stated_hidden = sizes
    layers = VIT_BASELINE_LAYERS if stated_layers is None else stated_layers
    hidden = VIT_BASELINE_HIDDEN if stated_hidden is None else stated_hidden
    factor = vit_fraction_factor(layers, hidden)
    fraction = default_fraction * factor
    read = "" if stated_layers is not None else " (no vision_config.num_hidden_layers: SGLang takes 24)"
    return fraction, (f"vision tower ({layers} layers x {hidden:,} wide{read}): adjust_mem_fraction_for_vlm scales "
                      f"the default mem_fraction_static {default_fraction:g} by {factor:.4f} to {fraction:.4f}")
