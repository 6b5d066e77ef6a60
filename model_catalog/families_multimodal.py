"""Vision / audio towers and projectors of multimodal checkpoints, as transformers builds them.

vLLM loads a multimodal checkpoint's towers by default and skips them only when every modality the
tower serves is limited to 0 per prompt (``--limit-mm-per-prompt '{"image": 0, "video": 0}'``:
vllm/model_executor/models/qwen3_vl.py and qwen3_5.py set ``self.visual = None`` when
``multimodal_config.get_limit_per_prompt("image")`` and ``("video")`` are both 0; an unstated
modality counts 999, vllm/config/multimodal.py ``get_limit_per_prompt``). So a catalog spec carries its
towers' parameter groups beside the language model's, and :func:`planner.serving.multimodal.text_only`
removes them for a text-only server.

Each builder lists the tensors of one family's ``*ForConditionalGeneration`` outside its language model
and ``lm_head``, in the order and with the shapes of the transformers 5.24 modeling file it names, so
``sum(numel)`` equals transformers' meta-device count of those modules (checked by
``python -m planner verify``, :mod:`model_catalog.verify`):

* Qwen3-VL / Qwen3-VL-MoE / Qwen3.5 / Qwen3.5-MoE (and Qwen2-VL / 2.5-VL): ``model.visual``
  (:func:`planner.serving.multimodal.vision_tower_groups`; models/qwen3_vl/modeling_qwen3_vl.py
  ``Qwen3VLVisionModel``, models/qwen3_5/modeling_qwen3_5.py).
* Gemma 3 and Gemma 4: ``model.vision_tower`` + ``model.multi_modal_projector`` / ``model.embed_vision``
  (:func:`planner.serving.multimodal.vision_tower_groups`; the layouts are in :mod:`planner.serving.vision_towers`).
  No catalog Gemma 4 config has an ``audio_config`` (26B-A4B and 31B state ``null``), so no audio tower.
* Kimi-K2.5 (MoonViT): ``model.vision_tower`` + ``model.mm_projector`` (models/kimi_k25/modeling_kimi_k25.py:
  Conv2d patch embedding with bias, a learned ``init_pos_emb_height x init_pos_emb_width x h`` position
  table, per layer two LayerNorms, q / k / v / proj and fc1 / fc2 with biases, a final LayerNorm; the
  projector's LayerNorm over ``projection_hidden_size``, ``in_proj`` over the 2 x 2 merged width and
  ``out_proj`` to the text hidden size).
* MiniMax-M3-VL: ``model.vision_tower`` + ``model.multi_modal_projector``
  (models/minimax_m3_vl/modeling_minimax_m3_vl.py: Conv3d patch embedding of ``temporal_patch_size x p x p``
  without bias, ``pre_layrnorm``, CLIP-style layers with biased q / k / v / out_proj and fc1 / fc2; the
  projector's ``linear_1`` h -> ``projector_hidden_size``, ``linear_2`` to the text hidden size, and
  ``merge_linear_1`` / ``merge_linear_2`` from ``merged_hidden_size``).
* Llama 4 (``llama4``): ``model.vision_model`` + ``model.multi_modal_projector``
  (:func:`planner.serving.multimodal.vision_tower_groups`; the layout is in :mod:`planner.serving.vision_towers`).
  A tower is counted only where the catalog copy states its ``vision_config`` (transformers' defaults would
  size one for a copy that omits it).

Not covered, and why: Gemma 3 4B / 12B catalog copies are text-only extractions (``Gemma3ForCausalLM``,
no ``vision_config``), so their specs stay the language model; Kimi K3 (``kimi_k3``) has no transformers class and its MoonViT-v2 fields differ
from K2.5's, so its tower is not counted either.

Kinds: tower weights stay in the activation dtype under every weight dtype (kind ``other``: ModelOpt and
compressed-tensors checkpoints list the towers among their unquantized modules; vLLM passes no quantization
to GPTQ / AWQ towers), sharded over tensor-parallel GPUs like vLLM's default ``mm_encoder_tp_mode="weights"``;
patch / position embeddings are kept whole on every GPU (kind ``norm``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner.model.params import ParamGroup
from planner.serving.multimodal import tower_linear, tower_norm, vision_from_config, vision_tower_groups
from planner.text import reason

QWEN_VISION_TYPES = frozenset({"qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe", "qwen3_5", "qwen3_5_moe"})
"""Wrapper ``model_type``s whose ``model.visual`` :func:`planner.serving.multimodal.vision_tower_groups` builds."""

FIELD_TOWER_TYPES = frozenset({"gemma3", "gemma4", "llama4"})
"""Wrapper ``model_type``s whose tower :func:`planner.serving.multimodal.vision_tower_groups` builds from the
vision fields (:mod:`planner.serving.vision_towers` holds the Gemma 3 / Gemma 4 / Llama 4 builders), so the tower
the spec counts and the images the planner prices read the same fields."""


def _tower_from_fields(model_type: str, full: Any) -> tuple[ParamGroup, ...]:
    """The Gemma 3 / Gemma 4 / Llama 4 tower groups, from the wrapper config as transformers read it (its class
    defaults fill what a copy omits)."""
    wrapper = {"model_type": model_type, "vision_config": full.vision_config.to_dict(),
               "text_config": {"hidden_size": full.get_text_config().hidden_size}}
    for key in ("mm_tokens_per_image", "vision_soft_tokens_per_image"):
        if getattr(full, key, None) is not None:
            wrapper[key] = getattr(full, key)
    vision = vision_from_config(wrapper)
    return () if vision is None else vision_tower_groups(vision)


def _kimi_k25_vision(full: Any) -> list[ParamGroup]:
    """``model.vision_tower`` + ``model.mm_projector`` of Kimi_K25ForConditionalGeneration (module docstring)."""
    v = full.vision_config
    h, inter, n, p = v.hidden_size, v.intermediate_size, v.num_hidden_layers, v.patch_size
    groups = [ParamGroup(name="vision_tower.patch_embed.proj.weight", shape=(h, 3, p, p), kind="norm"),
              ParamGroup(name="vision_tower.patch_embed.proj.bias", shape=(h,), kind="norm"),
              ParamGroup(name="vision_tower.patch_embed.pos_emb.position_embeddings",
                         shape=(v.init_pos_emb_height, v.init_pos_emb_width, h), kind="norm")]
    layer = "vision_tower.layers.*"
    groups += [*tower_norm(f"{layer}.norm1", h, bias=True, count=n), *tower_norm(f"{layer}.norm2", h, bias=True, count=n)]
    for name in ("q_proj", "k_proj", "v_proj", "proj"):
        groups += tower_linear(f"{layer}.attn.{name}", h, h, bias=True, count=n)
    groups += [*tower_linear(f"{layer}.mlp.fc1", h, inter, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc2", inter, h, bias=True, count=n),
               *tower_norm("vision_tower.final_layernorm", h, bias=True)]
    merge = 1
    for k in v.merge_kernel_size:
        merge *= int(k)
    width = full.projection_hidden_size
    groups += [*tower_norm("mm_projector.pre_norm", width, bias=True),
               *tower_linear("mm_projector.in_proj", width * merge, width * merge, bias=True),
               *tower_linear("mm_projector.out_proj", width * merge, full.get_text_config().hidden_size, bias=True)]
    return groups


def _minimax_m3_vision(full: Any) -> list[ParamGroup]:
    """``model.vision_tower`` + ``model.multi_modal_projector`` of MiniMax-M3-VL (module docstring)."""
    v = full.vision_config
    h, inter, n, p = v.hidden_size, v.intermediate_size, v.num_hidden_layers, v.patch_size
    groups = [ParamGroup(name="vision_tower.embeddings.proj.weight",
                         shape=(h, v.num_channels, v.temporal_patch_size, p, p), kind="norm"),
              *tower_norm("vision_tower.pre_layrnorm", h, bias=True)]
    layer = "vision_tower.layers.*"
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        groups += tower_linear(f"{layer}.self_attn.{name}", h, h, bias=True, count=n)
    groups += [*tower_norm(f"{layer}.layer_norm1", h, bias=True, count=n),
               *tower_norm(f"{layer}.layer_norm2", h, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc1", h, inter, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc2", inter, h, bias=True, count=n)]
    hidden, text = full.projector_hidden_size, full.get_text_config().hidden_size
    groups += [*tower_linear("multi_modal_projector.linear_1", h, hidden, bias=True),
               *tower_linear("multi_modal_projector.linear_2", hidden, text, bias=True),
               *tower_linear("multi_modal_projector.merge_linear_1", full.merged_hidden_size, hidden, bias=True),
               *tower_linear("multi_modal_projector.merge_linear_2", hidden, text, bias=True)]
    return groups


TOWER_BUILDERS = {"kimi_k25": _kimi_k25_vision, "minimax_m3_vl": _minimax_m3_vision}
"""Wrapper ``model_type`` -> builder of its towers from the transformers wrapper config."""


def tower_groups(raw_config: Mapping[str, Any], full: Any) -> tuple[ParamGroup, ...]:
    """The tower and projector parameter groups of a multimodal config (empty for text models).

    Args:
        raw_config: config.json as a dict (its ``model_type`` picks the family).
        full: The wrapper config transformers read (``ConfigReading.full``).

    Raises:
        ValueError: a ``vision_config`` without a field its family needs (the message names it), or with sizes
            out of range (:func:`planner.serving.multimodal.vision_from_config`; pasted configs are bounded
            before, :func:`model_catalog.config_bounds.check_sizes`).
    """
    model_type = raw_config.get("model_type")
    if model_type in QWEN_VISION_TYPES:
        # the vision config as transformers read it, so its class defaults fill what a trimmed copy omits
        # (Qwen3-VL-235B-A22B-Thinking's copy states no deepstack_visual_indexes / num_position_embeddings)
        read = getattr(full, "vision_config", None)
        stated = read.to_dict() if read is not None else raw_config.get("vision_config")
        vision = vision_from_config({"model_type": model_type, "vision_config": stated})
        return () if vision is None else vision_tower_groups(vision)
    if getattr(full, "vision_config", None) is None or not raw_config.get("vision_config"):
        return ()  # no tower stated: transformers' defaults would size one the checkpoint may not have
    if model_type in FIELD_TOWER_TYPES:
        return _tower_from_fields(model_type, full)
    builder = TOWER_BUILDERS.get(model_type)
    if builder is None:
        return ()
    try:
        return tuple(builder(full))
    except (AttributeError, TypeError) as exc:
        raise ValueError(f"config key 'vision_config' of a {model_type!r} config lacks a field its tower needs "
                         f"({reason(exc)}); paste the whole config.json") from None
    except ArithmeticError as exc:  # a zero patch or an overflowing size that reached the builder unchecked
        raise ValueError(f"config key 'vision_config' of a {model_type!r} config gives a size its tower cannot be "
                         f"built from ({type(exc).__name__}); check its patch, merge and layer sizes") from None
