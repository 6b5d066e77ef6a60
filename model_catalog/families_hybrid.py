"""Family adapters of hybrid and per-layer-heterogeneous decoders: Qwen3.5 / 3.6 (Gated
DeltaNet + gated attention), Nemotron-H / Nemotron 3 (Mamba2 + attention + MLP/MoE blocks),
Kimi Linear / Kimi K3 (KDA + MLA), Llama-Nemotron NAS (per-layer ``block_configs``).

Same contract as :mod:`model_catalog.families`.

Design notes (assumptions):
    1. Recurrent-state dtype: where the config fixes it (Nemotron-H
       ``mamba_ssm_cache_dtype``, Qwen3.5 ``mamba_ssm_dtype``; both ``float32`` in
       the published configs) the SSM / delta-rule state takes that format in
       every view (:class:`planner.model.layers.RecurrentState` ``ssm_state_format``);
       the conv state stays in the activation dtype.
    2. Nemotron-H: one decoder block per ``layers_block_type`` entry, each a norm plus
       one mixer: Mamba2 (``linear_attention``), attention (``full_attention``),
       an MLP (``mlp``) or a MoE (``moe``). MLP and MoE blocks cache nothing
       (:class:`planner.model.layers.NoCache`), so the pattern
       ``MEMEM*E...`` of Nemotron 3 Nano is 23 Mamba + 6 attention + 23 MoE blocks.
    3. Llama-Nemotron NAS (``nemotron-nas``, no transformers class): read through the
       Llama config class (the architecture vLLM serves it with, ``DeciLMForCausalLM``
       in vllm/model_executor/models/nemotron_nas.py); per layer, attention is absent
       (``no_op``) or Llama attention with ``num_attention_heads //
       n_heads_in_group`` KV heads, and the FFN is absent or a Llama MLP of
       ``ffn_mult``: ``intermediate = round_up(int(2 x ffn_mult x hidden / 3), 256)``.
       ``replace_with_linear`` blocks are refused (vLLM does not build them either).

Sources: transformers 5.24 models/qwen3_5/modeling_qwen3_5.py, models/qwen3_5_moe/
modeling_qwen3_5_moe.py, models/nemotron_h/modeling_nemotron_h.py,
models/kimi_linear/modeling_kimi_linear.py; vLLM vllm/model_executor/models/nemotron_nas.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from model_catalog.families import (
    _ATTN,
    _MLP,
    _PRE_POST,
    FamilyParts,
    Groups,
    _decoder,
    _gated_attention,
    _layer_norms,
    _parts,
    _routed_moe,
    _swiglu,
    config_head_dim,
    config_int,
    config_kv_heads,
)
from planner.model.dtypes import BF16, FP16, FP32, StorageFormat
from planner.model.layers import FullAttention, LayerSpec, MLAAttention, NoCache, RecurrentState
from planner.model.params import ParamGroup, attention, linear, mla_attention, moe_experts, norm, router
from planner.text import echo

_STATE_FORMATS: dict[str, StorageFormat] = {"float32": FP32, "bfloat16": BF16, "float16": FP16}
"""Config dtype names a recurrent state may be fixed to (design note 1)."""


def state_format(cfg: Any, *keys: str) -> StorageFormat | None:
    """The SSM-state format the config fixes under one of ``keys`` (design note 1), or None.

    Raises:
        ValueError: a dtype name other than float32 / bfloat16 / float16; the message names the key.
    """
    for key in keys:
        value = getattr(cfg, key, None)
        if value in (None, "auto"):
            continue
        if value not in _STATE_FORMATS:
            raise ValueError(f"config key {key!r} is {echo(value)}; expected one of {', '.join(_STATE_FORMATS)} "
                             "or auto")
        return _STATE_FORMATS[value]
    return None


def _qwen3_5(cfg: Any) -> FamilyParts:
    """Qwen3.5 / Qwen3.6 text model: Gated DeltaNet (``linear_attention``) and gated full
    attention per ``layer_types``; a dense SwiGLU (Qwen3.5 27B) or, in the ``_moe``
    variant, router + routed experts + a gated shared expert on every layer.

    Gated DeltaNet, ``key_dim = linear_num_key_heads x linear_key_head_dim``,
    ``value_dim = linear_num_value_heads x linear_value_head_dim``:
    ``in_proj_qkv (2 key_dim + value_dim, hidden)``, ``in_proj_z (value_dim, hidden)``,
    ``in_proj_b`` and ``in_proj_a (v_heads, hidden)``, depthwise ``conv1d
    (2 key_dim + value_dim, 1, kernel)`` without bias, ``dt_bias`` / ``A_log (v_heads)``,
    gated RMSNorm over ``linear_value_head_dim``, ``out_proj (hidden, value_dim)``.
    Attention: ``q_proj`` emits query and output gate (``2 x heads x head_dim``),
    q_norm / k_norm over head_dim.

    Recurrent cache per DeltaNet layer: conv ``(2 key_dim + value_dim) x kernel``, state
    ``v_heads x linear_key_head_dim x linear_value_head_dim`` in ``mamba_ssm_dtype``
    (design note 1). Worked example, Qwen3.5-27B: conv (2 x 2,048 + 6,144) x 4 = 40,960,
    state 48 x 128 x 128 = 786,432 elements.

    Sources: transformers models/qwen3_5/modeling_qwen3_5.py (``Qwen3_5GatedDeltaNet``,
    ``Qwen3_5Attention``, ``Qwen3_5DecoderLayer``), models/qwen3_5_moe/modeling_qwen3_5_moe.py
    (``Qwen3_5MoeSparseMoeBlock``); Qwen3.5 config.json ``text_config.mamba_ssm_dtype``.
    """
    hidden, heads, head_dim = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads"), config_head_dim(cfg)
    kv_heads, bias = config_kv_heads(cfg), bool(cfg.attention_bias)
    k_heads, v_heads = config_int(cfg, "linear_num_key_heads"), config_int(cfg, "linear_num_value_heads")
    k_dim, v_dim = config_int(cfg, "linear_key_head_dim"), config_int(cfg, "linear_value_head_dim")
    key_dim, value_dim = k_heads * k_dim, v_heads * v_dim
    kernel, conv_dim = config_int(cfg, "linear_conv_kernel_dim"), 2 * key_dim + value_dim
    experts = int(getattr(cfg, "num_experts", 0) or 0)
    delta = "layers.*.linear_attn"
    delta_net = (
        ParamGroup(name=f"{delta}.conv1d.weight", shape=(conv_dim, 1, kernel), kind="conv"),
        *linear(f"{delta}.in_proj_qkv", hidden, conv_dim), *linear(f"{delta}.in_proj_z", hidden, value_dim),
        *linear(f"{delta}.in_proj_b", hidden, v_heads), *linear(f"{delta}.in_proj_a", hidden, v_heads),
        ParamGroup(name=f"{delta}.dt_bias", shape=(v_heads,), kind="other"),
        ParamGroup(name=f"{delta}.A_log", shape=(v_heads,), kind="other"),
        *norm(f"{delta}.norm", v_dim), *linear(f"{delta}.out_proj", value_dim, hidden),
    )
    gated_attention = _gated_attention(cfg, hidden=hidden, heads=heads, head_dim=head_dim, kv_heads=kv_heads,
                                       bias=bias)
    if experts:
        mlp = (*_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "moe_intermediate_size")),
               *_swiglu(cfg, f"{_MLP}.shared_expert", config_int(cfg, "shared_expert_intermediate_size")),
               *linear(f"{_MLP}.shared_expert_gate", hidden, 1))
    else:
        mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))

    def layer(index: int) -> Groups:
        mixer = delta_net if cfg.layer_types[index] == "linear_attention" else gated_attention
        return (*mixer, *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(
        cfg, _decoder(cfg, layer), num_experts=experts,
        num_experts_per_tok=config_int(cfg, "num_experts_per_tok") if experts else 0,
        recurrent=RecurrentState(conv_state_elements=conv_dim * kernel, ssm_state_elements=v_heads * k_dim * v_dim,
                                 conv_kernel=kernel,
                                 ssm_state_format=state_format(cfg, "mamba_ssm_dtype", "mamba_ssm_cache_dtype")),
    )


def _nemotron_h(cfg: Any) -> FamilyParts:
    """Nemotron-H / Nemotron 3: one mixer per block (design note 2) behind a block norm.

    Mamba2 mixer, ``d_inner = mamba_num_heads x mamba_head_dim``, ``conv_dim = d_inner
    + 2 x n_groups x ssm_state_size``: ``in_proj (d_inner + conv_dim + heads, hidden)``
    [bias ``use_bias``], depthwise ``conv1d (conv_dim, 1, conv_kernel)`` [bias
    ``use_conv_bias``], ``dt_bias`` / ``A_log`` / ``D (heads)``, gated RMSNorm over
    d_inner, ``out_proj (hidden, d_inner)``. Attention: q/k/v/o without bias. MLP:
    ``up_proj`` / ``down_proj`` (ReLU^2, ``mlp_bias``). MoE: fp32 router ``gate (E,
    hidden)``, experts ``up_proj (E, moe_intermediate, d)`` / ``down_proj (E, d,
    moe_intermediate)`` with ``d = moe_latent_size`` (plus ``fc1_latent_proj`` /
    ``fc2_latent_proj``) or hidden, shared expert of ``moe_shared_expert_intermediate_size``.

    Cache per Mamba block: conv ``conv_dim x conv_kernel``, SSM ``heads x head_dim x
    ssm_state_size`` in ``mamba_ssm_cache_dtype``. Worked example, Nemotron 3 Nano:
    conv 6,144 x 4 = 24,576, SSM 64 x 64 x 128 = 524,288 elements.

    Sources: transformers models/nemotron_h/modeling_nemotron_h.py (``NemotronHMamba2Mixer``,
    ``NemotronHAttention``, ``NemotronHMLP``, ``NemotronHMoE``, ``NemotronHExperts``,
    ``NemotronHBlock``, ``NemotronHModel``: ``embeddings``, ``norm_f``).
    """
    hidden = config_int(cfg, "hidden_size")
    m_heads, m_head_dim, d_state = (config_int(cfg, k) for k in ("mamba_num_heads", "mamba_head_dim", "ssm_state_size"))
    d_inner, kernel = m_heads * m_head_dim, config_int(cfg, "conv_kernel")
    conv_dim = d_inner + 2 * config_int(cfg, "n_groups") * d_state
    mix = "layers.*.mixer"
    mamba = (*linear(f"{mix}.in_proj", hidden, d_inner + conv_dim + m_heads, bias=bool(cfg.use_bias)),
             ParamGroup(name=f"{mix}.conv1d.weight", shape=(conv_dim, 1, kernel), kind="conv"),
             *((ParamGroup(name=f"{mix}.conv1d.bias", shape=(conv_dim,), kind="bias"),) if cfg.use_conv_bias else ()),
             *(ParamGroup(name=f"{mix}.{n}", shape=(m_heads,), kind="other") for n in ("dt_bias", "A_log", "D")),
             *norm(f"{mix}.norm", d_inner), *linear(f"{mix}.out_proj", d_inner, hidden, bias=bool(cfg.use_bias)))
    attn = attention(mix, hidden_size=hidden, num_attention_heads=config_int(cfg, "num_attention_heads"),
                     num_key_value_heads=config_kv_heads(cfg), head_dim=config_head_dim(cfg))
    mlp_bias = bool(cfg.mlp_bias)

    def plain(prefix: str, inter: int) -> Groups:
        return (*linear(f"{prefix}.up_proj", hidden, inter, bias=mlp_bias),
                *linear(f"{prefix}.down_proj", inter, hidden, bias=mlp_bias))

    experts = config_int(cfg, "n_routed_experts")
    latent = cfg.moe_latent_size
    width = hidden if latent is None else int(latent)
    moe_inter, n = config_int(cfg, "moe_intermediate_size"), experts
    moe = (*router(f"{mix}.gate", hidden_size=hidden, num_experts=experts),
           ParamGroup(name=f"{mix}.experts.up_proj", shape=(moe_inter, width), count=n, kind="linear"),
           ParamGroup(name=f"{mix}.experts.down_proj", shape=(width, moe_inter), count=n, kind="linear"),
           *plain(f"{mix}.shared_experts", config_int(cfg, "moe_shared_expert_intermediate_size")),
           *(() if latent is None else (*linear(f"{mix}.fc1_latent_proj", hidden, width, bias=mlp_bias),
                                        *linear(f"{mix}.fc2_latent_proj", width, hidden, bias=mlp_bias))))
    state = RecurrentState(conv_state_elements=conv_dim * kernel, ssm_state_elements=m_heads * m_head_dim * d_state,
                           conv_kernel=kernel,
                           ssm_state_format=state_format(cfg, "mamba_ssm_cache_dtype"))
    full = FullAttention(num_key_value_heads=config_kv_heads(cfg), head_dim=config_head_dim(cfg))
    mixers = {"linear_attention": (mamba, state), "full_attention": (attn, full),
              "mlp": (plain(mix, config_int(cfg, "intermediate_size")), NoCache()), "moe": (moe, NoCache())}
    block_types = list(cfg.layers_block_type)
    for block in block_types:
        if block not in mixers:
            raise ValueError(f"config key 'hybrid_override_pattern' names block {echo(block)}; "
                             "Nemotron-H blocks are M (Mamba2), * (attention), - (MLP) and E (MoE)")

    def layer(index: int) -> Groups:
        return (*norm("layers.*.norm", hidden), *mixers[block_types[index]][0])

    has_moe = "moe" in block_types
    return _parts(cfg, _decoder(cfg, layer, embed="embeddings", final_norm="norm_f"),
                  layers=tuple(mixers[block][1] for block in block_types),
                  num_experts=experts if has_moe else 0,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok") if has_moe else 0, recurrent=state)


def _kimi_linear(cfg: Any) -> FamilyParts:
    """Kimi Linear (and Kimi K3 by source): Kimi Delta Attention (``linear_attention``) or
    MLA (``full_attention``) per ``layer_types``; dense SwiGLU or router + routed experts +
    shared SwiGLU of ``n_shared_experts x moe_intermediate_size`` per ``mlp_layer_types``.

    KDA, ``d = linear_num_heads x linear_head_dim``: q/k/v ``(d, hidden)``, depthwise
    ``conv1d (3d, 1, kernel)`` without bias, forget gate ``f_a_proj (head_dim, hidden)``,
    ``f_b_proj (d, head_dim)``, fp32 ``dt_bias (d)``, ``A_log (1, 1, heads, 1)``; ``b_proj
    (heads, hidden)``, ``g_a_proj`` / ``g_b_proj``, gated ``o_norm (head_dim)``, ``o_proj``.
    Cache per KDA layer: conv ``3d x kernel``, fp32 state ``heads x head_dim x head_dim``.

    Kimi K3 routes its experts in a narrower space (config ``routed_expert_hidden_size`` 3,584 of
    ``hidden_size`` 7,168, ``latent_moe_use_norm``): the router reads the full hidden state, a
    ``hidden -> r`` projection (with an RMSNorm of ``r``) feeds experts of ``(2 x moe_intermediate,
    r)`` / ``(r, moe_intermediate)``, and an ``r -> hidden`` projection returns; the shared experts
    stay at full width. The remote modeling file is not in the references, so this follows the
    config fields and the latent MoE transformers builds for Nemotron 3 (``fc1_latent_proj`` /
    ``fc2_latent_proj``, models/nemotron_h/modeling_nemotron_h.py): a by-source count.

    Sources: transformers models/kimi_linear/modeling_kimi_linear.py (``KimiLinearDeltaAttention``,
    ``KimiLinearForgetGate``, ``KimiLinearAttention``, ``KimiLinearMoE``,
    ``KimiLinearDecoderLayer``: ``update_recurrent_state(... .to(torch.float32))``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    l_heads, l_dim, kernel = (config_int(cfg, k) for k in ("linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim"))
    d = l_heads * l_dim
    prefix = _ATTN
    kda = (*linear(f"{prefix}.q_proj", hidden, d), *linear(f"{prefix}.k_proj", hidden, d),
           *linear(f"{prefix}.v_proj", hidden, d),
           ParamGroup(name=f"{prefix}.conv1d.weight", shape=(3 * d, 1, kernel), kind="conv"),
           *linear(f"{prefix}.forget_gate.f_a_proj", hidden, l_dim), *linear(f"{prefix}.forget_gate.f_b_proj", l_dim, d),
           ParamGroup(name=f"{prefix}.forget_gate.dt_bias", shape=(d,), kind="other"),
           ParamGroup(name=f"{prefix}.forget_gate.A_log", shape=(1, 1, l_heads, 1), kind="other"),
           *linear(f"{prefix}.b_proj", hidden, l_heads), *linear(f"{prefix}.g_a_proj", hidden, l_dim),
           *linear(f"{prefix}.g_b_proj", l_dim, d), *norm(f"{prefix}.o_norm", l_dim), *linear(f"{prefix}.o_proj", d, hidden))
    kv_lora, rope, nope = (config_int(cfg, k) for k in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim"))
    v_dim = config_int(cfg, "v_head_dim")
    mla = mla_attention(prefix, hidden_size=hidden, num_attention_heads=heads,
                        q_lora_rank=None if cfg.q_lora_rank is None else config_int(cfg, "q_lora_rank"),
                        kv_lora_rank=kv_lora, qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=v_dim,
                        bias=bool(cfg.attention_bias))
    experts, moe_inter = config_int(cfg, "num_local_experts"), config_int(cfg, "moe_intermediate_size")
    latent = MLAAttention(kv_lora_rank=kv_lora, qk_rope_head_dim=rope, num_attention_heads=heads,
                          qk_nope_head_dim=nope, v_head_dim=v_dim)
    state = RecurrentState(conv_state_elements=3 * d * kernel, ssm_state_elements=l_heads * l_dim * l_dim,
                           conv_kernel=kernel)
    routed = int(getattr(cfg, "routed_expert_hidden_size", None) or hidden)

    def layer(index: int) -> Groups:
        mixer = kda if cfg.layer_types[index] == "linear_attention" else mla
        if cfg.mlp_layer_types[index] == "sparse" and routed < hidden:  # Kimi K3 latent experts
            mlp = (*router(f"{_MLP}.gate", hidden_size=hidden, num_experts=experts),
                   *linear(f"{_MLP}.fc1_latent_proj", hidden, routed),
                   *(norm(f"{_MLP}.latent_norm", routed) if getattr(cfg, "latent_moe_use_norm", False) else ()),
                   *moe_experts(f"{_MLP}.experts", hidden_size=routed, intermediate_size=moe_inter,
                                num_experts=experts),
                   *linear(f"{_MLP}.fc2_latent_proj", routed, hidden),
                   *_swiglu(cfg, f"{_MLP}.shared_experts", moe_inter * config_int(cfg, "n_shared_experts")))
        elif cfg.mlp_layer_types[index] == "sparse":
            mlp = (*_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=moe_inter),
                   *_swiglu(cfg, f"{_MLP}.shared_experts", moe_inter * config_int(cfg, "n_shared_experts")))
        else:
            mlp = _swiglu(cfg, _MLP, config_int(cfg, "intermediate_size"))
        return (*mixer, *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(cfg, _decoder(cfg, layer), head_dim=nope + rope, num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"), latent=latent, recurrent=state)


def nas_intermediate_size(ffn_mult: float, hidden_size: int) -> int:
    """Llama-Nemotron NAS FFN width: ``int(2 x ffn_mult x hidden / 3)`` rounded up to 256 (design note 3).

    Example: ffn_mult 5.25, hidden 8,192 -> int(28,672.0) = 28,672 (already a multiple of 256).

    Sources: vLLM ``_ffn_mult_to_intermediate_size`` (vllm/model_executor/models/nemotron_nas.py).
    """
    width = int(2 * ffn_mult * hidden_size / 3)
    return -(-width // 256) * 256


def _block_part(block: Mapping[str, Any], part: str, index: int) -> Mapping[str, Any]:
    value = block.get(part) if isinstance(block, Mapping) else None
    if not isinstance(value, Mapping):
        raise ValueError(f"config key 'block_configs[{index}].{part}' must be an object with 'no_op' and "
                         f"{'n_heads_in_group' if part == 'attention' else 'ffn_mult'}")
    if value.get("replace_with_linear"):
        raise ValueError(f"config key 'block_configs[{index}].{part}.replace_with_linear' is true; such blocks "
                         "are not planned (vLLM's DeciLMForCausalLM does not build them either)")
    return value


def _nemotron_nas(cfg: Any) -> FamilyParts:
    """Llama-Nemotron NAS (``DeciLMForCausalLM``): Llama layers whose attention and FFN come
    and go per ``block_configs`` (design note 3); a no-op attention has no
    ``input_layernorm`` and caches nothing, a no-op FFN no ``post_attention_layernorm``.

    Worked example, Llama-3.3-Nemotron-Super-49B-v1: 49 of 80 layers keep attention
    (8 KV heads x 128), so KV per token is 49 x 2 x 8 x 128 x 2 B = 200,704 B in bf16.

    Sources: vLLM vllm/model_executor/models/nemotron_nas.py (``DeciLMDecoderLayer``);
    the config's ``block_configs``.
    """
    blocks = getattr(cfg, "block_configs", None)
    layers = config_int(cfg, "num_hidden_layers")
    if not isinstance(blocks, list) or len(blocks) != layers:
        got = len(blocks) if isinstance(blocks, list) else type(blocks).__name__
        raise ValueError(f"config key 'block_configs' must list one block per layer ({layers}), got {got}")
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    head_dim = config_head_dim(cfg)
    specs: list[LayerSpec] = []
    kv_seen: set[int] = set()

    def layer(index: int) -> Groups:
        block = blocks[index]
        attn_cfg, ffn_cfg = _block_part(block, "attention", index), _block_part(block, "ffn", index)
        groups: list[ParamGroup] = []
        if attn_cfg.get("no_op"):
            specs.append(NoCache())
        else:
            group = attn_cfg.get("n_heads_in_group")
            if not isinstance(group, int) or group < 1 or heads % group:
                raise ValueError(f"config key 'block_configs[{index}].attention.n_heads_in_group' must divide "
                                 f"num_attention_heads ({heads}), got {echo(group)}")
            kv_heads = heads // group
            kv_seen.add(kv_heads)
            groups += [*attention(_ATTN, hidden_size=hidden, num_attention_heads=heads, num_key_value_heads=kv_heads,
                                  head_dim=head_dim, qkv_bias=bool(cfg.attention_bias), o_bias=bool(cfg.attention_bias)),
                       *_layer_norms(cfg, "input_layernorm")]
            specs.append(FullAttention(num_key_value_heads=kv_heads, head_dim=head_dim))
        if not ffn_cfg.get("no_op"):
            mult = ffn_cfg.get("ffn_mult")
            if isinstance(mult, bool) or not isinstance(mult, (int, float)) or mult <= 0:
                raise ValueError(f"config key 'block_configs[{index}].ffn.ffn_mult' must be a positive number, "
                                 f"got {echo(mult)}")
            groups += [*_swiglu(cfg, _MLP, nas_intermediate_size(float(mult), hidden), bias=bool(cfg.mlp_bias)),
                       *_layer_norms(cfg, "post_attention_layernorm")]
        return tuple(groups)

    params = _decoder(cfg, layer)
    kv_heads = max(kv_seen) if kv_seen else heads
    return _parts(cfg, params, layers=tuple(specs), num_key_value_heads=kv_heads)


HYBRID_FAMILIES = {
    "qwen3_5_text": _qwen3_5,
    "qwen3_5_moe_text": _qwen3_5,
    "nemotron_h": _nemotron_h,
    "kimi_linear": _kimi_linear,
    "nemotron-nas": _nemotron_nas,
}
"""Adapter per text config ``model_type`` (``nemotron-nas`` keyed by the raw type, read through
the Llama config class: :data:`model_catalog.hf_config.BY_SOURCE_MODEL_TYPES`)."""
