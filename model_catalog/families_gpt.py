"""Family adapters of the GPT-style decoders: GPT-2, GPT-J, GPT-NeoX, Falcon.

Same contract as :mod:`model_catalog.families` (parameter groups that follow the
transformers module tree exactly, with the layer prefix the model uses: ``h.*`` or
``layers.*``); :data:`model_catalog.families.FAMILIES` lists them beside the
Llama-like families.

Sources: transformers 5.24 models/gpt2/modeling_gpt2.py, models/gptj/modeling_gptj.py,
models/gpt_neox/modeling_gpt_neox.py, models/falcon/modeling_falcon.py.
"""

from __future__ import annotations

from typing import Any

from model_catalog.families_base import _MLP, _PRE_POST, FamilyParts, Groups, _decoder, _layer_norms, _parts, config_int
from planner.model.params import embedding, linear, norm


def _gpt2(cfg: Any) -> FamilyParts:
    """GPT-2: learned positions ``wpe``, Conv1D projections with biases, LayerNorms
    with bias, ``lm_head`` tied to ``wte`` by default.

    Sources: transformers models/gpt2/modeling_gpt2.py (``GPT2Attention``, ``GPT2MLP``,
    ``GPT2Block``).
    """
    if getattr(cfg, "add_cross_attention", False):
        raise ValueError("config key 'add_cross_attention' is true: encoder-decoder GPT-2 is not a causal LM")
    hidden = config_int(cfg, "hidden_size")
    inner = cfg.n_inner if cfg.n_inner is not None else 4 * hidden
    attn, mlp = "h.*.attn", "h.*.mlp"

    def layer(_: int) -> Groups:
        return (
            *norm("h.*.ln_1", hidden, bias=True),
            *linear(f"{attn}.c_attn", hidden, 3 * hidden, bias=True),
            *linear(f"{attn}.c_proj", hidden, hidden, bias=True),
            *norm("h.*.ln_2", hidden, bias=True),
            *linear(f"{mlp}.c_fc", hidden, inner, bias=True),
            *linear(f"{mlp}.c_proj", inner, hidden, bias=True),
        )

    wpe = embedding("wpe", config_int(cfg, "max_position_embeddings"), hidden)
    return _parts(cfg, _decoder(cfg, layer, embed="wte", final_norm="ln_f", norm_bias=True, extra=wpe))


def _gptj(cfg: Any) -> FamilyParts:
    """GPT-J: parallel attention + MLP behind ``ln_1``; q/k/v/out without bias;
    ``fc_in`` / ``fc_out`` with bias; untied ``lm_head`` with bias.

    Sources: transformers models/gptj/modeling_gptj.py.
    """
    hidden = config_int(cfg, "hidden_size")
    inner = cfg.n_inner if cfg.n_inner is not None else 4 * hidden
    attn = "h.*.attn"

    def layer(_: int) -> Groups:
        projections = (f"{attn}.{name}" for name in ("k_proj", "v_proj", "q_proj", "out_proj"))
        return (
            *norm("h.*.ln_1", hidden, bias=True),
            *(group for name in projections for group in linear(name, hidden, hidden)),
            *linear("h.*.mlp.fc_in", hidden, inner, bias=True),
            *linear("h.*.mlp.fc_out", inner, hidden, bias=True),
        )

    return _parts(cfg, _decoder(cfg, layer, embed="wte", final_norm="ln_f", norm_bias=True, lm_head_bias=True))


def _gpt_neox(cfg: Any) -> FamilyParts:
    """GPT-NeoX: fused ``query_key_value``, ``attention_bias``, biased MLP, LayerNorms with bias.

    Sources: transformers models/gpt_neox/modeling_gpt_neox.py.
    """
    hidden = config_int(cfg, "hidden_size")
    bias = bool(cfg.attention_bias)
    attn = "layers.*.attention"

    def layer(_: int) -> Groups:
        return (
            *_layer_norms(cfg, *_PRE_POST, bias=True),
            *linear(f"{attn}.query_key_value", hidden, 3 * hidden, bias=bias),
            *linear(f"{attn}.dense", hidden, hidden, bias=bias),
            *linear(f"{_MLP}.dense_h_to_4h", hidden, config_int(cfg, "intermediate_size"), bias=True),
            *linear(f"{_MLP}.dense_4h_to_h", config_int(cfg, "intermediate_size"), hidden, bias=True),
        )

    return _parts(cfg, _decoder(cfg, layer, embed="embed_in", final_norm="final_layer_norm", norm_bias=True))


def falcon_kv_heads(cfg: Any) -> int:
    """Falcon KV heads: ``num_kv_heads`` with the new decoder or without multi-query, else 1.

    Sources: transformers models/falcon/modeling_falcon.py (``FalconAttention.num_kv_heads``).
    """
    if cfg.new_decoder_architecture or not cfg.multi_query:
        return config_int(cfg, "num_kv_heads")
    return 1


def _falcon(cfg: Any) -> FamilyParts:
    """Falcon: fused ``query_key_value`` (MQA for falcon-7b, grouped KV with the new
    decoder architecture), two-matrix MLP, LayerNorms with bias.

    Norms per layer: ``input_layernorm`` + ``post_attention_layernorm`` without
    parallel attention; ``ln_attn`` + ``ln_mlp`` when ``num_ln_in_parallel_attn``
    is 2 (the default with the new decoder architecture); else ``input_layernorm``.

    Sources: transformers models/falcon/modeling_falcon.py (``FalconAttention``,
    ``FalconMLP``, ``FalconDecoderLayer``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    head_dim, kv_heads = hidden // heads, falcon_kv_heads(cfg)
    ffn = config_int(cfg, "ffn_hidden_size")
    bias = bool(cfg.bias)
    num_ln = cfg.num_ln_in_parallel_attn
    if num_ln is None and cfg.new_decoder_architecture:
        num_ln = 2
    if not cfg.parallel_attn:
        norms = ("h.*.input_layernorm", "h.*.post_attention_layernorm")
    elif num_ln == 2:
        norms = ("h.*.ln_attn", "h.*.ln_mlp")
    else:
        norms = ("h.*.input_layernorm",)
    attn = "h.*.self_attention"

    def layer(_: int) -> Groups:
        return (
            *linear(f"{attn}.query_key_value", hidden, (heads + 2 * kv_heads) * head_dim, bias=bias),
            *linear(f"{attn}.dense", hidden, hidden, bias=bias),
            *linear("h.*.mlp.dense_h_to_4h", hidden, ffn, bias=bias),
            *linear("h.*.mlp.dense_4h_to_h", ffn, hidden, bias=bias),
            *(group for name in norms for group in norm(name, hidden, bias=True)),
        )

    params = _decoder(cfg, layer, embed="word_embeddings", final_norm="ln_f", norm_bias=True)
    # With the new decoder architecture FalconAttention._split_heads broadcasts K and V to all
    # query heads before cache.update, so transformers' cache holds `heads` heads (Falcon-40B: 128, not 8).
    broadcast = heads if cfg.new_decoder_architecture and kv_heads != heads else None
    return _parts(cfg, params, num_key_value_heads=kv_heads, head_dim=head_dim, transformers_kv_heads=broadcast)
