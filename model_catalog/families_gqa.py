"""Family adapters of the 2025-26 GQA decoders: Gemma 4, MiMo-V2-Flash, MiniMax-M2, GLM-4.5/4.7, Step 3.7, Qwen3-VL.

Same contract as :mod:`model_catalog.families`: each adapter mirrors the
``nn.Module`` tree of the transformers model class (named on each adapter), so
``count_parameters`` equals ``sum(p.numel() for p in model.parameters())``
exactly; layers whose heads or windows differ from layer to layer get their
cache specs here (``FamilyParts.layers``).

Design notes (assumptions):
    1. Per-layer head shapes are read from the config class's ``per_layer_config``
       (Gemma 4: full-attention layers use ``global_head_dim`` and
       ``num_global_key_value_heads``; Step 3.7: sliding layers may use
       ``num_sliding_attention_heads``), never re-derived from raw keys.
    2. Values and windows are the config class's: MiMo-V2-Flash's
       ``sliding_window_size`` 128 becomes ``sliding_window`` 129 there (the SGLang
       reference attends to 128 previous tokens plus the query), and its
       ``layer_types`` (full attention on layer 0 and every 6th) agree with the
       raw ``hybrid_layer_pattern``.

Sources: transformers 5.24 ``models/<family>/modeling_<family>.py`` as named.
"""

from __future__ import annotations

from typing import Any

from model_catalog.families import (
    _ATTN,
    _MLP,
    _PRE_POST,
    FamilyParts,
    Groups,
    _decoder,
    _gqa,
    _layer_norms,
    _parts,
    _qwen3,
    _qwen3_moe,
    _routed_moe,
    _swiglu,
    config_head_dim,
    config_int,
    config_kv_heads,
)
from planner.model.layers import FullAttention, LayerSpec, NoCache, SlidingWindowAttention
from planner.model.params import ParamGroup, linear, moe_experts, norm, router
from planner.text import quote


def _attention_spec(layer_type: str, *, kv_heads: int, head_dim: int, window: int | None,
                    v_head_dim: int | None = None) -> LayerSpec:
    """``FullAttention`` or ``SlidingWindowAttention`` for one ``layer_types`` entry."""
    if layer_type == "sliding_attention":
        if window is None:
            raise ValueError("config key 'sliding_window' is missing but 'layer_types' lists sliding layers")
        return SlidingWindowAttention(num_key_value_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim,
                                      sliding_window=window)
    if layer_type == "full_attention":
        return FullAttention(num_key_value_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim)
    raise ValueError(f"config key 'layer_types' holds {quote(layer_type)}, which has no cache spec here")


def _gemma4(cfg: Any) -> FamilyParts:
    """Gemma 4 text: per-layer head_dim / KV heads (design note 1), K = V on full layers,
    dense MLP on every layer plus, with ``enable_moe_block``, a routed MoE beside it.

    Attention per layer: ``q_proj (heads x head_dim)``, ``k_proj (kv x head_dim)``,
    ``v_proj`` unless ``attention_k_eq_v`` and full attention (then V is K, but
    the cache still stores both after their own norms), ``o_proj``, ``q_norm`` /
    ``k_norm`` over head_dim (``v_norm`` has no weight). Four layer norms; the MoE
    block adds ``router.proj (E, hidden)``, ``router.scale (hidden)``,
    ``router.per_expert_scale (E)``, experts and three more norms. Layers at and
    after ``num_hidden_layers - num_kv_shared_layers`` reuse an earlier layer's
    K/V (no projections, no cache: ``NoCache``) and may use a double-wide MLP.

    Sources: transformers models/gemma4/modeling_gemma4.py (``Gemma4TextAttention``,
    ``Gemma4TextMLP``, ``Gemma4TextRouter``, ``Gemma4TextExperts``,
    ``Gemma4TextDecoderLayer``, ``Gemma4TextModel``); configuration_gemma4.py
    (``per_layer_config``, ``kv_sharing_modes``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    bias = bool(cfg.attention_bias)
    modes = list(cfg.kv_sharing_modes)
    moe = bool(getattr(cfg, "enable_moe_block", False))
    per_layer = int(getattr(cfg, "hidden_size_per_layer_input", 0) or 0)
    specs: list[LayerSpec] = []

    def layer(index: int) -> Groups:
        layer_cfg = cfg.per_layer_config[index]
        head_dim, kv_heads = int(layer_cfg.head_dim), int(layer_cfg.num_key_value_heads)
        layer_type = cfg.layer_types[index]
        shared = modes[index] == "reuse"
        groups = [*linear(f"{_ATTN}.q_proj", hidden, heads * head_dim, bias=bias),
                  *norm(f"{_ATTN}.q_norm", head_dim)]
        if shared:
            specs.append(NoCache())
        else:
            groups += [*norm(f"{_ATTN}.k_norm", head_dim),
                       *linear(f"{_ATTN}.k_proj", hidden, kv_heads * head_dim, bias=bias)]
            if not (cfg.attention_k_eq_v and layer_type == "full_attention"):
                groups += linear(f"{_ATTN}.v_proj", hidden, kv_heads * head_dim, bias=bias)
            specs.append(_attention_spec(layer_type, kv_heads=kv_heads, head_dim=head_dim,
                                         window=getattr(cfg, "sliding_window", None)))
        groups += linear(f"{_ATTN}.o_proj", heads * head_dim, hidden, bias=bias)
        inter = config_int(cfg, "intermediate_size") * (2 if cfg.use_double_wide_mlp and shared else 1)
        groups += _swiglu(cfg, _MLP, inter)
        groups += _layer_norms(cfg, *_PRE_POST, "pre_feedforward_layernorm", "post_feedforward_layernorm")
        if per_layer:
            groups += [*linear("layers.*.per_layer_input_gate", hidden, per_layer),
                       *linear("layers.*.per_layer_projection", per_layer, hidden),
                       *norm("layers.*.post_per_layer_input_norm", hidden)]
        if moe:
            experts = config_int(cfg, "num_experts")
            groups += [*router("layers.*.router.proj", hidden_size=hidden, num_experts=experts),
                       ParamGroup(name="layers.*.router.scale", shape=(hidden,), kind="router"),
                       ParamGroup(name="layers.*.router.per_expert_scale", shape=(experts,), kind="router"),
                       *moe_experts("layers.*.experts", hidden_size=hidden,
                                    intermediate_size=config_int(cfg, "moe_intermediate_size"), num_experts=experts),
                       *_layer_norms(cfg, "post_feedforward_layernorm_1", "post_feedforward_layernorm_2",
                                     "pre_feedforward_layernorm_2")]
        return tuple(groups)

    extra: Groups = ()
    if per_layer:
        layers = config_int(cfg, "num_hidden_layers")
        extra = (ParamGroup(name="embed_tokens_per_layer.weight", kind="embedding",
                            shape=(config_int(cfg, "vocab_size_per_layer_input"), layers * per_layer)),
                 *linear("per_layer_model_projection", hidden, layers * per_layer),
                 *norm("per_layer_projection_norm", per_layer))
    params = _decoder(cfg, layer, extra=extra)
    experts = config_int(cfg, "num_experts") if moe else 0
    first = cfg.per_layer_config[0]  # headline shape: layer 0 (sliding in Gemma 4); the global reads are refused
    return _parts(cfg, params, layers=tuple(specs), num_experts=experts,
                  num_key_value_heads=int(first.num_key_value_heads), head_dim=int(first.head_dim),
                  num_experts_per_tok=config_int(cfg, "top_k_experts") if moe else 0)


def _mimo_v2_flash(cfg: Any) -> FamilyParts:
    """MiMo-V2-Flash: full-attention layers with ``num_key_value_heads`` KV heads,
    sliding layers with twice as many and a per-head ``sinks`` vector; K width
    ``head_dim`` (192), V width ``v_head_dim`` (128); dense MLP or routed MoE per
    ``mlp_layer_types`` (no shared expert).

    Sources: transformers models/mimo_v2_flash/modeling_mimo_v2_flash.py
    (``MiMoV2FlashAttention``: ``num_key_value_heads * 2 if is_swa``, ``sinks`` on
    sliding layers, ``o_proj`` without bias; ``MiMoV2FlashDecoderLayer``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    head_dim, v_dim = config_head_dim(cfg), config_int(cfg, "v_head_dim")
    bias = bool(cfg.attention_bias)
    experts = config_int(cfg, "n_routed_experts")
    specs: list[LayerSpec] = []

    def layer(index: int) -> Groups:
        sliding = cfg.layer_types[index] == "sliding_attention"
        kv_heads = config_kv_heads(cfg) * (2 if sliding else 1)
        groups = [*linear(f"{_ATTN}.q_proj", hidden, heads * head_dim, bias=bias),
                  *linear(f"{_ATTN}.k_proj", hidden, kv_heads * head_dim, bias=bias),
                  *linear(f"{_ATTN}.v_proj", hidden, kv_heads * v_dim, bias=bias),
                  *linear(f"{_ATTN}.o_proj", heads * v_dim, hidden)]
        if sliding:
            groups.append(ParamGroup(name=f"{_ATTN}.sinks", shape=(heads,), kind="other"))
        specs.append(_attention_spec(cfg.layer_types[index], kv_heads=kv_heads, head_dim=head_dim,
                                     window=cfg.sliding_window, v_head_dim=v_dim))
        if cfg.mlp_layer_types[index] == "sparse":
            groups += _routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "moe_intermediate_size"))
        else:
            groups += _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*groups, *_layer_norms(cfg, *_PRE_POST))

    params = _decoder(cfg, layer)
    return _parts(cfg, params, layers=tuple(specs), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


def _minimax_m2(cfg: Any) -> FamilyParts:
    """MiniMax-M2 / M2.5 / M2.7: GQA with RMSNorms over the whole q (heads x head_dim)
    and k (kv_heads x head_dim) projections; every MLP a routed MoE of
    ``intermediate_size`` experts (no shared expert).

    Sources: transformers models/minimax_m2/modeling_minimax_m2.py (``MiniMaxM2Attention``,
    ``MiniMaxM2SparseMoeBlock``).
    """
    heads, kv_heads, head_dim = (config_int(cfg, "num_attention_heads"), config_kv_heads(cfg),
                                 config_head_dim(cfg))
    experts = config_int(cfg, "num_local_experts")

    def layer(_: int) -> Groups:
        return (
            *linear(f"{_ATTN}.q_proj", config_int(cfg, "hidden_size"), heads * head_dim),
            *linear(f"{_ATTN}.k_proj", config_int(cfg, "hidden_size"), kv_heads * head_dim),
            *linear(f"{_ATTN}.v_proj", config_int(cfg, "hidden_size"), kv_heads * head_dim),
            *linear(f"{_ATTN}.o_proj", heads * head_dim, config_int(cfg, "hidden_size")),
            *norm(f"{_ATTN}.q_norm", heads * head_dim),
            *norm(f"{_ATTN}.k_norm", kv_heads * head_dim),
            *_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


def _glm4_moe(cfg: Any) -> FamilyParts:
    """GLM-4.5 / 4.6 / 4.7: GQA with ``attention_bias`` on q/k/v (not o), optional
    q_norm / k_norm over head_dim (``use_qk_norm``); dense MLP on the first
    ``first_k_dense_replace`` layers, then router + routed experts + a shared
    SwiGLU of ``n_shared_experts x moe_intermediate_size``. The MTP layer
    (``num_nextn_predict_layers``) is not part of ``Glm4MoeForCausalLM``.

    Sources: transformers models/glm4_moe/modeling_glm4_moe.py (``Glm4MoeAttention``,
    ``Glm4MoeMoE``, ``Glm4MoeDecoderLayer``).
    """
    bias = bool(cfg.attention_bias)
    experts, moe_inter = config_int(cfg, "n_routed_experts"), config_int(cfg, "moe_intermediate_size")
    head_norms = (*norm(f"{_ATTN}.q_norm", config_head_dim(cfg)), *norm(f"{_ATTN}.k_norm", config_head_dim(cfg))) \
        if cfg.use_qk_norm else ()

    def layer(index: int) -> Groups:
        if index >= cfg.first_k_dense_replace:
            mlp = (*_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=moe_inter),
                   *_swiglu(cfg, f"{_MLP}.shared_experts", moe_inter * config_int(cfg, "n_shared_experts")))
        else:
            mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=False), *head_norms, *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(cfg, _decoder(cfg, layer), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


def _step3p5(cfg: Any) -> FamilyParts:
    """Step 3.5 / 3.7 text model: GQA with q_norm / k_norm over head_dim and a head-wise
    output gate ``g_proj (heads, hidden)`` (``heads x head_dim`` unless per-head
    gating); sliding layers may have their own query-head count (design note 1);
    dense MLP or router + routed experts + shared SwiGLU of ``share_expert_dim``
    per ``mlp_layer_types``. The MTP layers are not part of the model.

    Sources: transformers models/step3p7/modeling_step3p7.py (``Step3p7Attention``,
    ``Step3p7SparseMoeBlock``, ``Step3p7DecoderLayer``); configuration_step3p7.py
    (``Step3p7TextConfig``: model_type ``step3p5``).
    """
    hidden, bias = config_int(cfg, "hidden_size"), bool(cfg.attention_bias)
    kv_heads, head_dim = config_kv_heads(cfg), config_head_dim(cfg)
    experts = config_int(cfg, "n_routed_experts")
    per_head_gate = cfg.gating is True or cfg.gating == "per-head"
    specs: list[LayerSpec] = []

    def layer(index: int) -> Groups:
        heads = int(cfg.per_layer_config[index].num_attention_heads)
        groups = [*linear(f"{_ATTN}.q_proj", hidden, heads * head_dim, bias=bias),
                  *linear(f"{_ATTN}.k_proj", hidden, kv_heads * head_dim, bias=bias),
                  *linear(f"{_ATTN}.v_proj", hidden, kv_heads * head_dim, bias=bias),
                  *linear(f"{_ATTN}.o_proj", heads * head_dim, hidden, bias=bias),
                  *norm(f"{_ATTN}.q_norm", head_dim), *norm(f"{_ATTN}.k_norm", head_dim),
                  *linear(f"{_ATTN}.g_proj", hidden, heads if per_head_gate else heads * head_dim)]
        specs.append(_attention_spec(cfg.layer_types[index], kv_heads=kv_heads, head_dim=head_dim,
                                     window=cfg.sliding_window))
        if cfg.mlp_layer_types[index] == "sparse":
            groups += (*_routed_moe(cfg, _MLP, num_experts=experts,
                                    intermediate_size=config_int(cfg, "moe_intermediate_size")),
                       *_swiglu(cfg, f"{_MLP}.shared_experts", config_int(cfg, "share_expert_dim")))
        else:
            groups += _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*groups, *_layer_norms(cfg, *_PRE_POST))

    return _parts(cfg, _decoder(cfg, layer), layers=tuple(specs), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


GQA_FAMILIES = {
    "gemma4_text": _gemma4,
    "mimo_v2_flash": _mimo_v2_flash,
    "minimax_m2": _minimax_m2,
    "glm4_moe": _glm4_moe,
    "step3p5": _step3p5,
    "qwen3_vl_text": _qwen3,
    "qwen3_vl_moe_text": _qwen3_moe,
}
"""Adapter per text config ``model_type`` (Qwen3-VL's text models are Qwen3 / Qwen3-MoE decoders:
transformers models/qwen3_vl/modeling_qwen3_vl.py ``Qwen3VLTextDecoderLayer``,
models/qwen3_vl_moe/modeling_qwen3_vl_moe.py ``Qwen3VLMoeTextDecoderLayer``)."""
