"""Vision / audio towers as parameter groups: the tensors a multimodal checkpoint holds outside its language
model, and the text-only spec a server without them holds.

The vision tower is part of the catalog spec (:mod:`model_catalog.families_multimodal` adds every family's tower
groups, names under :data:`TOWER_PREFIXES`), because vLLM loads it unless every modality it serves is limited to 0
(``--limit-mm-per-prompt '{"image": 0, "video": 0}'``, vllm/model_executor/models/qwen3_vl.py: ``self.visual
= None`` only then; newer releases build a tower under ``_mark_tower_model(vllm_config, modalities)``, skipped when
those modalities are all limited to 0, vllm/model_executor/models/interfaces.py). :func:`text_only` is the spec
such a server holds; :func:`tower_weight_bytes` the share the towers take. It is split over tensor-parallel GPUs
like vLLM's default ``mm_encoder_tp_mode="weights"``, in the activation dtype (quantized checkpoints leave the
tower unquantized).

:func:`vision_tower_groups` builds a tower from its :class:`planner.serving.vision_config.VisionConfig`, as
transformers 5.24 builds it (so ``sum(numel)`` equals transformers' meta-device count, checked by
``python -m planner verify``):

* Qwen2.5-VL / Qwen3-VL / Qwen3.5: ``model.visual`` (transformers Qwen2_5_VisionTransformerPretrainedModel,
  models/qwen2_5_vl/modeling_qwen2_5_vl.py; Qwen3VLVisionModel, models/qwen3_vl/modeling_qwen3_vl.py).
* Gemma 3: ``model.vision_tower`` + ``model.multi_modal_projector`` (models/gemma3/modeling_gemma3.py builds the
  tower with ``AutoModel.from_config(vision_config)``, a ``siglip_vision_model``: models/siglip/modeling_siglip.py
  ``SiglipVisionModel``: Conv2d patch embedding ``3 x p x p`` with bias, an ``nn.Embedding`` of
  ``(image_size / p)^2`` positions, per layer biased q / k / v / out_proj, LayerNorms ``layer_norm1`` /
  ``layer_norm2`` and ``fc1`` / ``fc2`` with biases, ``post_layernorm``, and the attention pooling head only when
  ``vision_use_head``; ``Gemma3MultiModalProjector``: the ``mm_input_projection_weight`` parameter of vision h x
  text hidden and the ``mm_soft_emb_norm`` RMSNorm over vision h).
* Gemma 4: ``model.vision_tower`` (models/gemma4/modeling_gemma4.py ``Gemma4VisionModel``: patch embedder
  ``input_proj`` 3 p^2 -> h and a ``position_embedding_table`` of 2 x ``position_embedding_size`` x h; per layer
  q / k / v / o through ``Gemma4ClippableLinear`` (no bias), q_norm / k_norm of ``head_dim``, a gated MLP, four
  RMSNorms; the pooler has no parameters) and ``model.embed_vision`` (``Gemma4MultimodalEmbedder``: one
  bias-free ``embedding_projection`` vision h -> text hidden; its pre-projection norm has no scale).
* Llama 4: ``model.vision_model`` + ``model.multi_modal_projector`` (models/llama4/modeling_llama4.py
  ``Llama4VisionModel``: an unfold patch embedding ``linear`` of ``3 p^2 -> h`` without bias, a ``class_embedding``
  of h, ``positional_embedding_vlm`` of ``(image_size / p)^2 + 1`` x h, ``layernorm_pre`` / ``layernorm_post``,
  per layer biased q / k / v / o_proj, ``fc1`` / ``fc2`` with biases and two LayerNorms; the ``vision_adapter`` MLP
  ``fc1`` intermediate -> ``projector_input_dim`` and ``fc2`` ``projector_output_dim`` square, both without bias;
  ``Llama4MultiModalProjector.linear_1`` ``vision_output_dim`` -> text hidden, no bias).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from planner.model.dtypes import StorageFormat
from planner.model.memo import memoized
from planner.model.params import ParamGroup, weight_bytes

if TYPE_CHECKING:
    from planner.model.spec import ModelSpec
    from planner.serving.vision_config import VisionConfig


TOWER_PREFIXES: tuple[str, ...] = ("visual.", "vision_tower.", "vision_model.", "embed_vision.", "mm_projector.",
                                   "multi_modal_projector.", "audio_tower.", "embed_audio.")
"""Parameter-group name prefixes of vision / audio towers and projectors (the transformers module names
under ``model.`` of each ``*ForConditionalGeneration``); everything else is the language model."""


def tower_linear(name: str, fan_in: int, fan_out: int, *, bias: bool = False, count: int = 1) -> list[ParamGroup]:
    """One tower ``nn.Linear`` (``fan_in`` -> ``fan_out``) as parameter groups: weight ``(out, in)`` of kind
    ``other`` (activation dtype, split over tensor-parallel GPUs) and, with ``bias``, its bias."""
    out = [ParamGroup(name=f"{name}.weight", shape=(fan_out, fan_in), count=count, kind="other")]
    if bias:
        out.append(ParamGroup(name=f"{name}.bias", shape=(fan_out,), count=count, kind="bias"))
    return out


def tower_norm(name: str, dim: int, *, bias: bool = False, count: int = 1) -> list[ParamGroup]:
    """One tower norm: ``weight`` (and ``bias`` for a LayerNorm) of ``dim``, replicated on every GPU."""
    out = [ParamGroup(name=f"{name}.weight", shape=(dim,), count=count, kind="norm")]
    if bias:
        out.append(ParamGroup(name=f"{name}.bias", shape=(dim,), count=count, kind="norm"))
    return out


def is_tower_group(group: ParamGroup) -> bool:
    """True for a vision / audio tower or projector tensor (:data:`TOWER_PREFIXES`)."""
    return group.name.startswith(TOWER_PREFIXES)


def tower_groups_of(model: ModelSpec) -> tuple[ParamGroup, ...]:
    """The model's tower and projector groups (empty for a text model)."""
    return memoized(model, ("tower_groups",), lambda: tuple(g for g in model.params if is_tower_group(g)))


def is_multimodal(model: ModelSpec) -> bool:
    """True when the spec carries tower or projector weights."""
    return bool(tower_groups_of(model))


def text_only(model: ModelSpec) -> ModelSpec:
    """The spec a text-only server holds: ``model`` without its towers and projectors (``model`` itself for a
    text model). vLLM builds no tower when every modality it serves is limited to 0 (module docstring).
    Memoized per object, so repeated plans of the same text-only model share one spec. The spec is marked
    ``language_model_only``, so its vLLM launch commands carry the flag that leaves the towers unloaded."""
    if not is_multimodal(model):
        return model
    return memoized(model, ("text_only",), lambda: replace(
        model, params=tuple(g for g in model.params if not is_tower_group(g)), language_model_only=True))


def tower_parameters(model: ModelSpec) -> int:
    """Parameters of the model's towers and projectors."""
    return sum(g.total_numel for g in tower_groups_of(model))


def tower_weight_bytes(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1) -> int:
    """Bytes the towers and projectors take on one of ``tensor_parallel_size`` GPUs [bytes]
    (:func:`planner.model.params.weight_bytes` over their groups, in the format the plan gives them)."""
    return weight_bytes(tower_groups_of(model), weight_format, model.torch_dtype, tensor_parallel_size)


def tower_summary(model: ModelSpec, weight_format: StorageFormat) -> str:
    """``"vision tower 1.07 GiB"`` (and ``"audio tower ..."`` where there is one): the towers with their
    projectors and their bytes in ``weight_format`` (:func:`tower_weight_bytes`), whole model."""
    groups = tower_groups_of(model)
    audio = tuple(g for g in groups if g.name.startswith(("audio_tower.", "embed_audio.")))
    vision = tuple(g for g in groups if g not in audio)
    parts = [f"{what} tower {weight_bytes(gs, weight_format, model.torch_dtype) / (1 << 30):.2f} GiB"
             for what, gs in (("vision", vision), ("audio", audio)) if gs]
    return " + ".join(parts)


def _qwen_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """The Qwen-VL vision tower's parameter groups, named as transformers' ``model.visual`` (module docstring's
    classes): Conv3d patch embedding (bias in Qwen3-VL), Qwen3-VL's learned position table, per block two
    norms (LayerNorm in Qwen3-VL, RMSNorm in Qwen2.5-VL), biased ``qkv`` / ``proj`` and MLP (Qwen3-VL
    ``linear_fc1`` / ``linear_fc2``, Qwen2.5-VL gated), the patch merger over ``spatial_merge_size^2``
    tokens and Qwen3-VL's deepstack mergers (one per ``deepstack_visual_indexes`` entry).

    Worked example (Qwen3-VL-8B: hidden 1,152, depth 27, intermediate 4,304, patch 16, position table 2,304,
    out 4,096, 3 deepstack levels): patch 1,152 x 3 x 2 x 16 x 16 + 1,152 = 1,770,624; position 2,304 x 1,152
    = 2,654,208; per block 4 x 1,152 (norms) + 1,152 x 3,456 + 3,456 + 1,152^2 + 1,152 + 2 x 1,152 x 4,304
    + 4,304 + 1,152 = 15,239,504, x 27 = 411,466,608; merger 2 x 1,152 + 4,608^2 + 4,608 + 4,608 x 4,096
    + 4,096 = 40,119,040; each deepstack merger 2 x 4,608 + the same two linears = 40,125,952, x 3 =
    120,377,856; total 576,388,336 (transformers 5.24 meta count of ``model.visual``).
    """
    h, m2 = vision.hidden_size, vision.spatial_merge_size ** 2
    kernel = (h, vision.in_channels, vision.temporal_patch_size, vision.patch_size, vision.patch_size)
    qwen3 = vision.family == "qwen3_vl"
    d = vision.depth
    # patch_embed is a Conv3d vLLM keeps whole on every GPU (kind "norm": replicated, activation dtype)
    groups = [ParamGroup(name="visual.patch_embed.proj.weight", shape=kernel, kind="norm")]
    if qwen3:
        groups.append(ParamGroup(name="visual.patch_embed.proj.bias", shape=(h,), kind="norm"))
        if vision.num_position_embeddings:
            groups.append(ParamGroup(name="visual.pos_embed.weight", shape=(vision.num_position_embeddings, h),
                                     kind="norm"))  # an nn.Embedding vLLM keeps whole on every GPU
    norm_bias = qwen3  # LayerNorm (weight + bias) in Qwen3-VL, RMSNorm (weight) in Qwen2.5-VL
    groups += [*tower_norm("visual.blocks.*.norm1", h, bias=norm_bias, count=d),
               *tower_norm("visual.blocks.*.norm2", h, bias=norm_bias, count=d),
               *tower_linear("visual.blocks.*.attn.qkv", h, 3 * h, bias=True, count=d),
               *tower_linear("visual.blocks.*.attn.proj", h, h, bias=True, count=d)]
    if qwen3:
        groups += [*tower_linear("visual.blocks.*.mlp.linear_fc1", h, vision.intermediate_size, bias=True, count=d),
                   *tower_linear("visual.blocks.*.mlp.linear_fc2", vision.intermediate_size, h, bias=True, count=d)]
    else:
        for name in ("gate_proj", "up_proj"):
            groups += tower_linear(f"visual.blocks.*.mlp.{name}", h, vision.intermediate_size, bias=True, count=d)
        groups += tower_linear("visual.blocks.*.mlp.down_proj", vision.intermediate_size, h, bias=True, count=d)
    merged = h * m2
    fc1, fc2 = ("linear_fc1", "linear_fc2") if qwen3 else ("mlp.0", "mlp.2")
    groups += [*tower_norm("visual.merger.norm" if qwen3 else "visual.merger.ln_q", h, bias=norm_bias),
               *tower_linear(f"visual.merger.{fc1}", merged, merged, bias=True),
               *tower_linear(f"visual.merger.{fc2}", merged, vision.out_hidden_size, bias=True)]
    if vision.deepstack_levels:
        n = vision.deepstack_levels
        groups += [*tower_norm("visual.deepstack_merger_list.*.norm", merged, bias=True, count=n),
                   *tower_linear("visual.deepstack_merger_list.*.linear_fc1", merged, merged, bias=True, count=n),
                   *tower_linear("visual.deepstack_merger_list.*.linear_fc2", merged, vision.out_hidden_size,
                                 bias=True, count=n)]
    return tuple(groups)


def _gemma3_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """``model.vision_tower`` (SigLIP) + ``model.multi_modal_projector`` of Gemma3ForConditionalGeneration
    (module docstring).

    Worked example (Gemma 3 27B: h 1,152, intermediate 4,304, 27 layers, patch 14, image 896, text 5,376):
    patch 1,152 x 3 x 14 x 14 + 1,152 = 678,528; positions 64^2 x 1,152 = 4,718,592; per layer 4 x (1,152^2 +
    1,152) + 4 x 1,152 + 2 x 1,152 x 4,304 + 4,304 + 1,152 = 15,239,504; post-layernorm 2,304; projector 1,152 x
    5,376 + 1,152 (tests/test_serving_multimodal.py).
    """
    h, inter, n, p = vision.hidden_size, vision.intermediate_size, vision.depth, vision.patch_size
    groups = [ParamGroup(name="vision_tower.embeddings.patch_embedding.weight", shape=(h, vision.in_channels, p, p),
                         kind="norm"),
              ParamGroup(name="vision_tower.embeddings.patch_embedding.bias", shape=(h,), kind="norm"),
              ParamGroup(name="vision_tower.embeddings.position_embedding.weight",
                         shape=((vision.image_size // p) ** 2, h), kind="norm")]
    layer = "vision_tower.encoder.layers.*"
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        groups += tower_linear(f"{layer}.self_attn.{name}", h, h, bias=True, count=n)
    groups += [*tower_norm(f"{layer}.layer_norm1", h, bias=True, count=n),
               *tower_norm(f"{layer}.layer_norm2", h, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc1", h, inter, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc2", inter, h, bias=True, count=n),
               *tower_norm("vision_tower.post_layernorm", h, bias=True)]
    if vision.use_head:  # SiglipMultiheadAttentionPoolingHead
        groups += [ParamGroup(name="vision_tower.head.probe", shape=(1, 1, h), kind="norm"),
                   ParamGroup(name="vision_tower.head.attention.in_proj_weight", shape=(3 * h, h), kind="other"),
                   ParamGroup(name="vision_tower.head.attention.in_proj_bias", shape=(3 * h,), kind="bias"),
                   *tower_linear("vision_tower.head.attention.out_proj", h, h, bias=True),
                   *tower_norm("vision_tower.head.layernorm", h, bias=True),
                   *tower_linear("vision_tower.head.mlp.fc1", h, inter, bias=True),
                   *tower_linear("vision_tower.head.mlp.fc2", inter, h, bias=True)]
    # a bare nn.Parameter, not an nn.Linear: kept whole on every GPU
    groups += [ParamGroup(name="multi_modal_projector.mm_input_projection_weight", shape=(h, vision.out_hidden_size),
                          kind="norm"),
               *tower_norm("multi_modal_projector.mm_soft_emb_norm", h)]
    return tuple(groups)


def _gemma4_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """``model.vision_tower`` + ``model.embed_vision`` of Gemma4ForConditionalGeneration (module docstring)."""
    h, inter, n, d = vision.hidden_size, vision.intermediate_size, vision.depth, vision.head_dim
    q_out, kv_out = vision.num_heads * d, vision.num_kv_heads * d
    p = "vision_tower.encoder.layers.*"
    groups = [ParamGroup(name="vision_tower.patch_embedder.position_embedding_table",
                         shape=(2, vision.num_position_embeddings, h), kind="norm"),
              *tower_linear("vision_tower.patch_embedder.input_proj", vision.in_channels * vision.patch_size ** 2, h)]
    for name, fan_in, fan_out in (("q_proj", h, q_out), ("k_proj", h, kv_out), ("v_proj", h, kv_out),
                                  ("o_proj", q_out, h)):
        groups += tower_linear(f"{p}.self_attn.{name}.linear", fan_in, fan_out, count=n)
    groups += [*tower_norm(f"{p}.self_attn.q_norm", d, count=n), *tower_norm(f"{p}.self_attn.k_norm", d, count=n)]
    for name, fan_in, fan_out in (("gate_proj", h, inter), ("up_proj", h, inter), ("down_proj", inter, h)):
        groups += tower_linear(f"{p}.mlp.{name}.linear", fan_in, fan_out, count=n)
    for name in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                 "post_feedforward_layernorm"):
        groups += tower_norm(f"{p}.{name}", h, count=n)
    groups += tower_linear("embed_vision.embedding_projection", vision.output_proj_dims or h, vision.out_hidden_size)
    return tuple(groups)


def _llama4_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """``model.vision_model`` + ``model.multi_modal_projector`` of Llama4ForConditionalGeneration (module docstring;
    Scout's 871,932,416 parameters by hand in tests/test_serving_multimodal_llama4.py)."""
    h, inter, n, p = vision.hidden_size, vision.intermediate_size, vision.depth, vision.patch_size
    groups = [*tower_linear("vision_model.patch_embedding.linear", vision.in_channels * p * p, h),
              ParamGroup(name="vision_model.class_embedding", shape=(h,), kind="norm"),
              ParamGroup(name="vision_model.positional_embedding_vlm", shape=((vision.image_size // p) ** 2 + 1, h),
                         kind="norm"),
              *tower_norm("vision_model.layernorm_pre", h, bias=True),
              *tower_norm("vision_model.layernorm_post", h, bias=True)]
    layer = "vision_model.model.layers.*"
    for name in ("q_proj", "k_proj", "v_proj", "o_proj"):
        groups += tower_linear(f"{layer}.self_attn.{name}", h, h, bias=True, count=n)
    adapter_out = vision.projector_output_dim
    groups += [*tower_linear(f"{layer}.mlp.fc1", h, inter, bias=True, count=n),
               *tower_linear(f"{layer}.mlp.fc2", inter, h, bias=True, count=n),
               *tower_norm(f"{layer}.input_layernorm", h, bias=True, count=n),
               *tower_norm(f"{layer}.post_attention_layernorm", h, bias=True, count=n),
               *tower_linear("vision_model.vision_adapter.mlp.fc1", inter, vision.projector_input_dim),
               *tower_linear("vision_model.vision_adapter.mlp.fc2", adapter_out, adapter_out),
               *tower_linear("multi_modal_projector.linear_1", vision.vision_output_dim, vision.out_hidden_size)]
    return tuple(groups)


def vision_tower_groups(vision: VisionConfig) -> tuple[ParamGroup, ...]:
    """The vision tower's (and projector's) parameter groups for ``vision``'s family (module docstring)."""
    if vision.family == "gemma3":
        return _gemma3_tower_groups(vision)
    if vision.family == "gemma4":
        return _gemma4_tower_groups(vision)
    if vision.family == "llama4":
        return _llama4_tower_groups(vision)
    return _qwen_tower_groups(vision)
