"""Per-family adapters: a transformers config object -> parameter groups + cache facts.

Each adapter mirrors the ``nn.Module`` tree that transformers builds for the
family's ``*ForCausalLM`` class, so that ``count_parameters`` equals
``sum(p.numel() for p in model.parameters())`` exactly (tied ``lm_head``
counted once). Group names drop the outer wrapper (``model.``, ``transformer.``,
``gpt_neox.``) and keep the rest of the module path, layers as ``layers.*``
(or ``h.*``).

Families are one table, :data:`FAMILIES`, keyed by the (text) config's
``model_type``; Llama-like decoders share :func:`_decoder` and the attention /
MLP helpers, so a family entry only states how it differs. This module holds the
Llama-like adapters and the table; the shared pieces are in
:mod:`model_catalog.families_base` and the GPT-style adapters (GPT-2, GPT-J,
GPT-NeoX, Falcon) in :mod:`model_catalog.families_gpt` (both re-exported here).

Design notes (assumptions):
    1. Values are read from the transformers config object, never from the raw
       dict, so defaults, attribute maps (``n_embd`` -> ``hidden_size``) and
       derived fields (``head_dim``, ``layer_types``, Jamba's
       ``layers_num_experts``) are the library's own.
    2. Fused or 3-D tensors (Phi-3 ``qkv_proj``, GPT-2 ``Conv1D``, transformers 5
       expert tensors) become ``(out, in)`` linear groups with the same element
       count; GPT-2's Conv1D stores ``(in, out)`` but the count is the same.

Sources: transformers 5.24 ``models/<family>/modeling_<family>.py`` (named on
each adapter).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from model_catalog.families_base import (  # noqa: F401  (re-exported: the other family modules import them from here)
    _ATTN,
    _MLP,
    _PRE_POST,
    DecoderGroups,
    FamilyParts,
    Groups,
    _decoder,
    _gated_attention,
    _gqa,
    _head_norms,
    _layer_norms,
    _parts,
    _routed_moe,
    _swiglu,
    _tied,
    config_head_dim,
    config_int,
    config_kv_heads,
)
from model_catalog.families_gpt import _falcon, _gpt2, _gpt_neox, _gptj, falcon_kv_heads  # noqa: F401  (re-exported)
from planner.model.layers import MLAAttention, RecurrentState
from planner.model.params import ParamGroup, linear, mamba_mixer, mla_attention, norm

# --- Llama-like families ----------------------------------------------------------------


def _llama(cfg: Any) -> FamilyParts:
    """Llama / Yi / DeepSeek-R1-Distill-Llama: optional ``attention_bias`` and ``mlp_bias``.

    Sources: transformers models/llama/modeling_llama.py (``LlamaAttention``, ``LlamaMLP``).
    """
    bias = bool(cfg.attention_bias)

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias),
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"), bias=bool(cfg.mlp_bias)),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _mistral(cfg: Any) -> FamilyParts:
    """Mistral: Llama layout without biases.

    Sources: transformers models/mistral/modeling_mistral.py.
    """

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=False, o_bias=False),
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _mixtral(cfg: Any) -> FamilyParts:
    """Mixtral: Mistral attention, every MLP a sparse MoE (``num_local_experts``).

    Sources: transformers models/mixtral/modeling_mixtral.py (``MixtralSparseMoeBlock``).
    """
    experts = config_int(cfg, "num_local_experts")

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=False, o_bias=False),
            *_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(
        cfg, _decoder(cfg, layer), num_experts=experts, num_experts_per_tok=config_int(cfg, "num_experts_per_tok")
    )


def _qwen2(cfg: Any) -> FamilyParts:
    """Qwen2 / Qwen2.5: biases on q, k and v (not o).

    Sources: transformers models/qwen2/modeling_qwen2.py (``Qwen2Attention``).
    """

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=True, o_bias=False),
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _qwen3_attention(cfg: Any) -> Groups:
    bias = bool(cfg.attention_bias)
    return (*_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias), *_head_norms(cfg, _ATTN))


def _qwen3(cfg: Any) -> FamilyParts:
    """Qwen3 dense: Llama layout plus q_norm / k_norm over ``head_dim``.

    Sources: transformers models/qwen3/modeling_qwen3.py (``Qwen3Attention``).
    """

    def layer(_: int) -> Groups:
        return (
            *_qwen3_attention(cfg),
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _qwen3_moe(cfg: Any) -> FamilyParts:
    """Qwen3-MoE: sparse MLP on layers ``(i + 1) % decoder_sparse_step == 0`` not in
    ``mlp_only_layers``; dense ``intermediate_size`` MLP elsewhere.

    Sources: transformers models/qwen3_moe/modeling_qwen3_moe.py (``Qwen3MoeDecoderLayer``).
    """
    experts = int(cfg.num_experts or 0)
    dense_only = cfg.mlp_only_layers or ()  # None in Qwen3-VL-MoE text configs that do not state it

    def is_sparse(index: int) -> bool:
        return index not in dense_only and experts > 0 and (index + 1) % cfg.decoder_sparse_step == 0

    def layer(index: int) -> Groups:
        if is_sparse(index):
            moe_inter = config_int(cfg, "moe_intermediate_size")
            mlp = _routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=moe_inter)
        else:
            mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*_qwen3_attention(cfg), *mlp, *_layer_norms(cfg, *_PRE_POST))

    per_token = config_int(cfg, "num_experts_per_tok") if experts else 0
    return _parts(cfg, _decoder(cfg, layer), num_experts=experts, num_experts_per_tok=per_token)


def _qwen3_next(cfg: Any) -> FamilyParts:
    """Qwen3-Next: Gated DeltaNet (``linear_attention``) and gated full attention per
    ``layer_types``; sparse MoE with one gated shared expert on the layers
    Qwen3-MoE would make sparse.

    Full attention: ``q_proj`` emits query and output gate (``2 x heads x head_dim``),
    q_norm / k_norm over ``head_dim``. Gated DeltaNet, with
    ``key_dim = linear_num_key_heads x linear_key_head_dim`` and
    ``value_dim = linear_num_value_heads x linear_value_head_dim``:
    ``in_proj_qkvz (2 key_dim + 2 value_dim, hidden)``, ``in_proj_ba (2 v_heads, hidden)``,
    depthwise ``conv1d (2 key_dim + value_dim, 1, kernel)`` without bias,
    ``dt_bias`` and ``A_log (v_heads,)``, gated RMSNorm over ``linear_value_head_dim``,
    ``out_proj (hidden, value_dim)``. MoE: router ``gate (experts, hidden)``,
    experts, ``shared_expert`` SwiGLU of ``shared_expert_intermediate_size``,
    ``shared_expert_gate (1, hidden)``.

    Recurrent cache per DeltaNet layer: conv state ``(2 key_dim + value_dim) x kernel``,
    recurrent state ``v_heads x linear_key_head_dim x linear_value_head_dim``.
    Worked example, Qwen3-Next-80B-A3B: conv 8192 x 4 = 32,768 elements, state
    32 x 128 x 128 = 524,288 elements.

    Sources: transformers models/qwen3_next/modeling_qwen3_next.py (``Qwen3NextAttention``,
    ``Qwen3NextGatedDeltaNet``, ``Qwen3NextSparseMoeBlock``, ``Qwen3NextDecoderLayer``);
    Yang et al. 2024 (Gated Delta Networks).
    """
    hidden = config_int(cfg, "hidden_size")
    heads, head_dim = config_int(cfg, "num_attention_heads"), config_head_dim(cfg)
    kv_heads, bias = config_kv_heads(cfg), bool(cfg.attention_bias)
    k_heads, v_heads = config_int(cfg, "linear_num_key_heads"), config_int(cfg, "linear_num_value_heads")
    key_dim = k_heads * config_int(cfg, "linear_key_head_dim")
    value_dim = v_heads * config_int(cfg, "linear_value_head_dim")
    kernel, conv_dim = config_int(cfg, "linear_conv_kernel_dim"), 2 * key_dim + value_dim
    experts = int(cfg.num_experts or 0)
    delta = "layers.*.linear_attn"
    delta_net = (
        ParamGroup(name=f"{delta}.conv1d.weight", shape=(conv_dim, 1, kernel), kind="conv"),
        *linear(f"{delta}.in_proj_qkvz", hidden, 2 * key_dim + 2 * value_dim),
        *linear(f"{delta}.in_proj_ba", hidden, 2 * v_heads),
        ParamGroup(name=f"{delta}.dt_bias", shape=(v_heads,), kind="other"),
        ParamGroup(name=f"{delta}.A_log", shape=(v_heads,), kind="other"),
        *norm(f"{delta}.norm", config_int(cfg, "linear_value_head_dim")),
        *linear(f"{delta}.out_proj", value_dim, hidden),
    )
    gated_attention = _gated_attention(cfg, hidden=hidden, heads=heads, head_dim=head_dim, kv_heads=kv_heads,
                                       bias=bias)

    def layer(index: int) -> Groups:
        mixer = delta_net if cfg.layer_types[index] == "linear_attention" else gated_attention
        if index not in cfg.mlp_only_layers and experts > 0 and (index + 1) % cfg.decoder_sparse_step == 0:
            mlp = (
                *_routed_moe(cfg, _MLP, num_experts=experts,
                             intermediate_size=config_int(cfg, "moe_intermediate_size")),
                *_swiglu(cfg, f"{_MLP}.shared_expert", config_int(cfg, "shared_expert_intermediate_size")),
                *linear(f"{_MLP}.shared_expert_gate", hidden, 1),
            )
        else:
            mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*mixer, *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(
        cfg,
        _decoder(cfg, layer),
        num_experts=experts,
        num_experts_per_tok=config_int(cfg, "num_experts_per_tok") if experts else 0,
        recurrent=RecurrentState(conv_state_elements=conv_dim * kernel, conv_kernel=kernel,
                                 ssm_state_elements=v_heads * config_int(cfg, "linear_key_head_dim")
                                 * config_int(cfg, "linear_value_head_dim")),
    )


def _gemma(cfg: Any) -> FamilyParts:
    """Gemma 2 and Gemma 3 text: four RMSNorms per layer; Gemma 3 adds q_norm / k_norm.

    Sources: transformers models/gemma2/modeling_gemma2.py (``Gemma2DecoderLayer``),
    models/gemma3/modeling_gemma3.py (``Gemma3Attention``).
    """
    bias = bool(cfg.attention_bias)
    head_norms = _head_norms(cfg, _ATTN) if cfg.model_type == "gemma3_text" else ()

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias),
            *head_norms,
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size")),
            *_layer_norms(
                cfg, *_PRE_POST, "pre_feedforward_layernorm", "post_feedforward_layernorm"
            ),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _phi3(cfg: Any) -> FamilyParts:
    """Phi-3 / Phi-4: fused ``qkv_proj`` and ``gate_up_proj``, no biases.

    Sources: transformers models/phi3/modeling_phi3.py (``Phi3Attention``, ``Phi3MLP``).
    """
    hidden = config_int(cfg, "hidden_size")
    heads, kv_heads, head_dim = config_int(cfg, "num_attention_heads"), config_kv_heads(cfg), config_head_dim(cfg)
    inter = config_int(cfg, "intermediate_size")

    def layer(_: int) -> Groups:
        return (
            *linear(f"{_ATTN}.qkv_proj", hidden, (heads + 2 * kv_heads) * head_dim),
            *linear(f"{_ATTN}.o_proj", heads * head_dim, hidden),
            *linear(f"{_MLP}.gate_up_proj", hidden, 2 * inter),
            *linear(f"{_MLP}.down_proj", inter, hidden),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _cohere(cfg: Any) -> FamilyParts:
    """Command-R: parallel attention + MLP behind one LayerNorm (weight only);
    optional per-head ``q_norm (heads, head_dim)`` / ``k_norm (kv_heads, head_dim)``.

    Sources: transformers models/cohere/modeling_cohere.py (``CohereLayerNorm``,
    ``CohereAttention``, ``CohereDecoderLayer``).
    """
    bias = bool(cfg.attention_bias)
    head_dim, heads = config_head_dim(cfg), config_int(cfg, "num_attention_heads")
    qk_norm: Groups = ()
    if cfg.use_qk_norm:
        qk_norm = (
            ParamGroup(name=f"{_ATTN}.q_norm.weight", shape=(heads, head_dim), kind="norm"),
            ParamGroup(name=f"{_ATTN}.k_norm.weight", shape=(config_kv_heads(cfg), head_dim), kind="norm"),
        )

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias),
            *qk_norm,
            *_swiglu(cfg, _MLP, config_int(cfg, "intermediate_size")),
            *_layer_norms(cfg, "input_layernorm"),
        )

    return _parts(cfg, _decoder(cfg, layer))


def _starcoder2(cfg: Any) -> FamilyParts:
    """Starcoder2: ``use_bias`` on every projection, two-matrix MLP, LayerNorms with bias.

    Sources: transformers models/starcoder2/modeling_starcoder2.py.
    """
    bias = bool(cfg.use_bias)

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias),
            *linear(f"{_MLP}.c_fc", config_int(cfg, "hidden_size"), config_int(cfg, "intermediate_size"), bias=bias),
            *linear(f"{_MLP}.c_proj", config_int(cfg, "intermediate_size"), config_int(cfg, "hidden_size"), bias=bias),
            *_layer_norms(cfg, *_PRE_POST, bias=True),
        )

    return _parts(cfg, _decoder(cfg, layer, norm_bias=True))


def _gpt_oss(cfg: Any) -> FamilyParts:
    """gpt-oss: biased attention with per-head ``sinks``, biased router and experts.

    Sources: transformers models/gpt_oss/modeling_gpt_oss.py (``GptOssAttention``,
    ``GptOssTopKRouter``, ``GptOssExperts``).
    """
    experts = config_int(cfg, "num_local_experts")
    sinks = ParamGroup(name=f"{_ATTN}.sinks", shape=(config_int(cfg, "num_attention_heads"),), kind="other")

    def layer(_: int) -> Groups:
        return (
            *_gqa(cfg, _ATTN, qkv_bias=True, o_bias=True),
            sinks,
            *_routed_moe(
                cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "intermediate_size"),
                gate="router", bias=True,
            ),
            *_layer_norms(cfg, *_PRE_POST),
        )

    return _parts(
        cfg, _decoder(cfg, layer), num_experts=experts, num_experts_per_tok=config_int(cfg, "num_experts_per_tok")
    )


def _llama4(cfg: Any) -> FamilyParts:
    """Llama 4 text model: MoE (router, experts, one shared expert) on ``moe_layers``,
    dense ``intermediate_size_mlp`` MLP elsewhere; q/k L2 norm has no weights.

    Sources: transformers models/llama4/modeling_llama4.py (``Llama4TextMoe``,
    ``Llama4TextDecoderLayer``, ``Llama4ForCausalLM``).
    """
    experts = config_int(cfg, "num_local_experts")
    bias = bool(cfg.attention_bias)
    ffn = "layers.*.feed_forward"

    def layer(index: int) -> Groups:
        if index in cfg.moe_layers:
            inter = config_int(cfg, "intermediate_size")
            mlp = (
                *_routed_moe(cfg, ffn, num_experts=experts, intermediate_size=inter, gate="router"),
                *_swiglu(cfg, f"{ffn}.shared_expert", inter),
            )
        else:
            mlp = _swiglu(cfg, ffn, config_int(cfg, "intermediate_size_mlp"))
        return (*_gqa(cfg, _ATTN, qkv_bias=bias, o_bias=bias), *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(
        cfg, _decoder(cfg, layer), num_experts=experts, num_experts_per_tok=config_int(cfg, "num_experts_per_tok")
    )


def _jamba(cfg: Any) -> FamilyParts:
    """Jamba: attention or Mamba mixer per ``layers_block_type``; MoE where
    ``layers_num_experts[i] > 1``, else a dense SwiGLU MLP.

    Mamba cache per layer (transformers ``HybridMambaAttentionDynamicCache``):
    conv state ``d_inner x d_conv``, SSM state ``d_inner x d_state``, with
    ``d_inner = mamba_expand * hidden_size``.

    Sources: transformers models/jamba/modeling_jamba.py (``JambaMambaMixer``,
    ``JambaAttentionDecoderLayer``, ``JambaMambaDecoderLayer``).
    """
    hidden = config_int(cfg, "hidden_size")
    d_inner = config_int(cfg, "mamba_expand") * hidden
    d_state, d_conv = config_int(cfg, "mamba_d_state"), config_int(cfg, "mamba_d_conv")
    mixer = mamba_mixer(
        "layers.*.mamba", hidden_size=hidden, d_inner=d_inner, d_state=d_state, d_conv=d_conv,
        dt_rank=config_int(cfg, "mamba_dt_rank"), conv_bias=bool(cfg.mamba_conv_bias),
        proj_bias=bool(cfg.mamba_proj_bias), inner_norms=True,
    )
    ffn = "layers.*.feed_forward"
    inter = config_int(cfg, "intermediate_size")

    def layer(index: int) -> Groups:
        if cfg.layers_block_type[index] == "attention":
            mix = _gqa(cfg, _ATTN, qkv_bias=False, o_bias=False)
        else:
            mix = mixer
        experts = cfg.layers_num_experts[index]
        if experts > 1:
            mlp = _routed_moe(cfg, ffn, num_experts=experts, intermediate_size=inter, gate="router")
        else:
            mlp = _swiglu(cfg, ffn, inter)
        return (*mix, *mlp, *_layer_norms(cfg, "input_layernorm", "pre_ff_layernorm"))

    has_moe = max(cfg.layers_num_experts) > 1
    return _parts(
        cfg,
        _decoder(cfg, layer, final_norm="final_layernorm"),
        num_experts=config_int(cfg, "num_experts") if has_moe else 0,
        num_experts_per_tok=config_int(cfg, "num_experts_per_tok") if has_moe else 0,
        recurrent=RecurrentState(conv_state_elements=d_inner * d_conv, ssm_state_elements=d_inner * d_state,
                                 conv_kernel=d_conv),
    )


def _deepseek(cfg: Any) -> FamilyParts:
    """DeepSeek-V2 / V3: MLA attention; dense MLP for the first ``first_k_dense_replace``
    layers, then router + routed experts + ``n_shared_experts`` fused shared MLP.

    The MTP module (``num_nextn_predict_layers``) is not part of
    ``DeepseekV3ForCausalLM`` and is not counted.

    Sources: transformers models/deepseek_v2/modeling_deepseek_v2.py
    (``DeepseekV2Attention``, ``DeepseekV2Moe``), models/deepseek_v3/modeling_deepseek_v3.py
    (``DeepseekV3MoE``, ``DeepseekV3DecoderLayer``).
    """
    heads = config_int(cfg, "num_attention_heads")
    kv_lora, rope, nope = (config_int(cfg, k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"))
    q_lora = None if cfg.q_lora_rank is None else config_int(cfg, "q_lora_rank")
    experts, moe_inter = config_int(cfg, "n_routed_experts"), config_int(cfg, "moe_intermediate_size")
    attn = mla_attention(
        _ATTN, hidden_size=config_int(cfg, "hidden_size"), num_attention_heads=heads, q_lora_rank=q_lora,
        kv_lora_rank=kv_lora, qk_nope_head_dim=nope, qk_rope_head_dim=rope,
        v_head_dim=config_int(cfg, "v_head_dim"), bias=bool(cfg.attention_bias),
    )
    mlp_bias = bool(getattr(cfg, "mlp_bias", False))  # DeepseekV2MLP reads it; V3 has none

    mlp_types = getattr(cfg, "mlp_layer_types", None)  # GLM-5.x states it; else first_k_dense_replace decides

    def layer(index: int) -> Groups:
        if (mlp_types[index] == "sparse") if mlp_types else index >= cfg.first_k_dense_replace:
            mlp = (
                *_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=moe_inter),
                *_swiglu(cfg, f"{_MLP}.shared_experts", moe_inter * config_int(cfg, "n_shared_experts"), bias=mlp_bias),
            )
        else:
            mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"), bias=mlp_bias)
        return (*attn, *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(
        cfg,
        _decoder(cfg, layer),
        head_dim=nope + rope,
        num_experts=experts,
        num_experts_per_tok=config_int(cfg, "num_experts_per_tok"),
        latent=MLAAttention(
            kv_lora_rank=kv_lora,
            qk_rope_head_dim=rope,
            num_attention_heads=config_int(cfg, "num_attention_heads"),
            qk_nope_head_dim=nope,
            v_head_dim=config_int(cfg, "v_head_dim"),
        ),
    )


FAMILIES: dict[str, Callable[[Any], FamilyParts]] = {
    "llama": _llama,
    "mistral": _mistral,
    "mixtral": _mixtral,
    "qwen2": _qwen2,
    "qwen3": _qwen3,
    "qwen3_moe": _qwen3_moe,
    "qwen3_next": _qwen3_next,
    "gemma2": _gemma,
    "gemma3_text": _gemma,
    "phi3": _phi3,
    "cohere": _cohere,
    "starcoder2": _starcoder2,
    "gpt_oss": _gpt_oss,
    "llama4_text": _llama4,
    "jamba": _jamba,
    "deepseek_v2": _deepseek,
    "deepseek_v3": _deepseek,
    "gpt2": _gpt2,
    "gptj": _gptj,
    "gpt_neox": _gpt_neox,
    "falcon": _falcon,
}
"""Adapter per (text) config ``model_type``."""
