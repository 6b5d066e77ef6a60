"""Family adapters of sparse-attention decoders: DeepSeek-V3.2 / GLM-5 (MLA + indexer),
GLM-4.7-Flash (MLA), DeepSeek-V4 (compressed attention), MiniMax-M3 (GQA + indexer).

Same contract as :mod:`model_catalog.families` (parameter groups that follow the
transformers module tree exactly); the cache specs come from
:mod:`planner.model.sparse`.

Design notes (assumptions):
    1. DSA indexer (DeepSeek-V3.2, GLM-5.x): per layer ``wq_b (index_n_heads x
       index_head_dim, q_lora_rank)``, ``wk (index_head_dim, hidden)``, a LayerNorm
       ``k_norm`` with bias over index_head_dim, ``weights_proj (index_n_heads,
       hidden)``; everything else is DeepSeek-V3 (:func:`model_catalog.families._deepseek`).
    2. DeepSeek-V4's hash router keeps a ``tid2eid (vocab, top_k)`` int64 *buffer*
       on the first ``num_hash_layers`` layers: it is in the checkpoint but is not
       a parameter, so it is not counted (6.2 MB per hash layer for V4-Flash).
    3. The multi-token-prediction layers (``num_nextn_predict_layers``) are not
       part of the ``*ForCausalLM`` classes and are not counted.

Sources: transformers 5.24 models/deepseek_v32/modeling_deepseek_v32.py,
models/glm_moe_dsa/modeling_glm_moe_dsa.py, models/glm4_moe_lite/modeling_glm4_moe_lite.py,
models/deepseek_v4/modeling_deepseek_v4.py, models/minimax_m3_vl/modeling_minimax_m3_vl.py.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from model_catalog.families import (
    _ATTN,
    _MLP,
    _PRE_POST,
    FamilyParts,
    Groups,
    _decoder,
    _deepseek,
    _layer_norms,
    _parts,
    _routed_moe,
    _swiglu,
    config_head_dim,
    config_int,
    config_kv_heads,
)
from planner.model.layers import FullAttention, LayerSpec
from planner.model.params import ParamGroup, linear, merge_groups, norm
from planner.model.sparse import CompressedAttention, IndexedAttention, IndexedMLAAttention, SharedKVSlidingAttention
from planner.text import quote


def _deepseek_dsa(cfg: Any) -> FamilyParts:
    """DeepSeek-V3.2 / GLM-5.x: DeepSeek-V3 layers plus a lightning indexer on every
    ``indexed_attention`` layer whose ``indexer_types`` entry is ``full`` (GLM-5.2's
    ``shared`` layers reuse the previous full layer's top-k and have none); each such
    layer caches the MLA latent and one indexer key
    (:class:`planner.model.sparse.IndexedMLAAttention`), the others the latent only.

    Sources: transformers models/deepseek_v32/modeling_deepseek_v32.py
    (``DeepseekV32Indexer``: ``wq_b``, ``wk``, ``k_norm = nn.LayerNorm``, ``weights_proj``;
    ``cache.update_indexer``), models/glm_moe_dsa/modeling_glm_moe_dsa.py (same layout).
    """
    parts = _deepseek(cfg)
    index_heads, index_dim = config_int(cfg, "index_n_heads"), config_int(cfg, "index_head_dim")
    hidden, q_lora = config_int(cfg, "hidden_size"), config_int(cfg, "q_lora_rank")
    num_layers = config_int(cfg, "num_hidden_layers")
    layer_types = list(getattr(cfg, "layer_types", None) or ["indexed_attention"] * num_layers)
    # GLM-5.2: "shared" layers reuse the previous full layer's top-k and build no indexer.
    modes = list(getattr(cfg, "indexer_types", None) or ["full"] * num_layers)
    runs_indexer = [t == "indexed_attention" and m == "full" for t, m in zip(layer_types, modes)]
    indexed = sum(runs_indexer)
    prefix = f"{_ATTN}.indexer"
    indexer = (*linear(f"{prefix}.wq_b", q_lora, index_heads * index_dim, count=indexed),
               *linear(f"{prefix}.wk", hidden, index_dim, count=indexed),
               *norm(f"{prefix}.k_norm", index_dim, bias=True, count=indexed),
               *linear(f"{prefix}.weights_proj", hidden, index_heads, count=indexed))
    latent = parts.latent
    with_indexer = IndexedMLAAttention(**{f: getattr(latent, f) for f in latent.__dataclass_fields__},
                                       index_head_dim=index_dim)
    layers: list[LayerSpec] = []
    for layer_type, own_indexer in zip(layer_types, runs_indexer):
        if layer_type == "indexed_attention":
            layers.append(with_indexer if own_indexer else latent)
        elif layer_type == "full_attention":
            layers.append(latent)
        else:
            raise ValueError(f"config key 'layer_types' holds {quote(layer_type)}, which has no cache spec here")
    indexer_layers = tuple(i for i, own in enumerate(runs_indexer) if own)
    param_layers = {**parts.param_layers, **{(g.name, g.shape, g.kind): indexer_layers for g in indexer}}
    return replace(parts, params=merge_groups((*parts.params, *indexer)), layers=tuple(layers),
                   param_layers=param_layers)


def _v4_compressor(prefix: str, *, hidden: int, width: int, ratio: int, overlap: bool) -> Groups:
    """One DeepSeek-V4 compressor: ``kv_proj`` / ``gate_proj (c x width, hidden)``, fp32
    ``position_bias (ratio, c x width)`` and ``kv_norm (width)``, with ``c`` = 2 for the
    overlapping CSA series, 1 for HCA.

    Sources: transformers ``DeepseekV4CSACompressor``, ``DeepseekV4HCACompressor``,
    ``DeepseekV4Indexer`` (models/deepseek_v4/modeling_deepseek_v4.py).
    """
    out = (2 if overlap else 1) * width
    return (*linear(f"{prefix}.kv_proj", hidden, out), *linear(f"{prefix}.gate_proj", hidden, out),
            ParamGroup(name=f"{prefix}.position_bias", shape=(ratio, out), kind="other"),
            *norm(f"{prefix}.kv_norm", width))


def _v4_hyper_connection(prefix: str, cfg: Any) -> Groups:
    """mHC mixing weights: ``fn ((2 + n) x n, n x hidden)``, ``base ((2 + n) x n)``, ``scale (3)``.

    Sources: transformers ``DeepseekV4HyperConnection`` (``concatenated_weights_size =
    (2 + hc_mult) * hc_mult``).
    """
    n, hidden = config_int(cfg, "hc_mult"), config_int(cfg, "hidden_size")
    mix = (2 + n) * n
    return (ParamGroup(name=f"{prefix}.fn", shape=(mix, n * hidden), kind="other"),
            ParamGroup(name=f"{prefix}.base", shape=(mix,), kind="other"),
            ParamGroup(name=f"{prefix}.scale", shape=(3,), kind="other"))


def _deepseek_v4(cfg: Any) -> FamilyParts:
    """DeepSeek-V4: shared-KV MQA (one ``head_dim`` head) with low-rank queries, grouped
    output projection, per-head ``sinks``; per ``layer_types`` a sliding window only,
    a CSA compressor (ratio 4, overlapping series) with a lightning indexer, or an HCA
    compressor (ratio 128); every MLP a routed MoE (hash-routed on the first
    ``num_hash_layers``, design note 2) with one shared expert; mHC hyper-connections
    around attention and MLP, and an ``hc_head`` before the final norm.

    Cache per layer (:mod:`planner.model.sparse`): sliding layers
    ``SharedKVSlidingAttention``; CSA / HCA layers ``CompressedAttention``.

    Sources: transformers models/deepseek_v4/modeling_deepseek_v4.py
    (``DeepseekV4Attention``, ``DeepseekV4GroupedLinear``, ``DeepseekV4CSACompressor``,
    ``DeepseekV4HCACompressor``, ``DeepseekV4Indexer``, ``DeepseekV4SparseMoeBlock``,
    ``DeepseekV4DecoderLayer``, ``DeepseekV4HyperHead``); configuration_deepseek_v4.py
    (``compress_ratios`` -> ``layer_types``, ``compress_rates``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    head_dim, q_lora = config_head_dim(cfg), config_int(cfg, "q_lora_rank")
    groups_o, o_rank = config_int(cfg, "o_groups"), config_int(cfg, "o_lora_rank")
    index_heads, index_dim = config_int(cfg, "index_n_heads"), config_int(cfg, "index_head_dim")
    experts, window = config_int(cfg, "n_routed_experts"), config_int(cfg, "sliding_window")
    rates = cfg.compress_rates
    attn = (ParamGroup(name=f"{_ATTN}.sinks", shape=(heads,), kind="other"),
            *linear(f"{_ATTN}.q_a_proj", hidden, q_lora), *norm(f"{_ATTN}.q_a_norm", q_lora),
            *linear(f"{_ATTN}.q_b_proj", q_lora, heads * head_dim),
            *linear(f"{_ATTN}.kv_proj", hidden, head_dim), *norm(f"{_ATTN}.kv_norm", head_dim),
            *linear(f"{_ATTN}.o_a_proj", heads * head_dim // groups_o, groups_o * o_rank),
            *linear(f"{_ATTN}.o_b_proj", groups_o * o_rank, hidden))
    csa_ratio = int(rates["compressed_sparse_attention"])
    hca_ratio = int(rates["heavily_compressed_attention"])
    compressor = f"{_ATTN}.compressor"
    csa = (*_v4_compressor(compressor, hidden=hidden, width=head_dim, ratio=csa_ratio, overlap=True),
           *_v4_compressor(f"{compressor}.indexer", hidden=hidden, width=index_dim, ratio=csa_ratio, overlap=True),
           *linear(f"{compressor}.indexer.q_b_proj", q_lora, index_heads * index_dim),
           *linear(f"{compressor}.indexer.scorer.weights_proj", hidden, index_heads))
    hca = _v4_compressor(compressor, hidden=hidden, width=head_dim, ratio=hca_ratio, overlap=False)
    mlp = (*_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "moe_intermediate_size")),
           *_swiglu(cfg, f"{_MLP}.shared_experts", config_int(cfg, "moe_intermediate_size")))
    kv = {"num_key_value_heads": config_kv_heads(cfg), "head_dim": head_dim}
    specs: list[LayerSpec] = []

    def layer(index: int) -> Groups:
        layer_type = cfg.layer_types[index]
        if layer_type == "sliding_attention":
            extra: Groups = ()
            specs.append(SharedKVSlidingAttention(**kv, sliding_window=window))
        elif layer_type == "compressed_sparse_attention":
            extra = csa
            specs.append(CompressedAttention(**kv, sliding_window=window, compress_ratio=csa_ratio,
                                             index_head_dim=index_dim))
        elif layer_type == "heavily_compressed_attention":
            extra = hca
            specs.append(CompressedAttention(**kv, sliding_window=window, compress_ratio=hca_ratio))
        else:
            raise ValueError(f"config key 'layer_types' holds {quote(layer_type)}, which DeepSeek-V4 does not define")
        return (*attn, *extra, *mlp, *_layer_norms(cfg, *_PRE_POST),
                *_v4_hyper_connection("layers.*.attn_hc", cfg), *_v4_hyper_connection("layers.*.ffn_hc", cfg))

    n = config_int(cfg, "hc_mult")
    head = (ParamGroup(name="hc_head.hc_fn", shape=(n, n * hidden), kind="other"),
            ParamGroup(name="hc_head.hc_base", shape=(n,), kind="other"),
            ParamGroup(name="hc_head.hc_scale", shape=(1,), kind="other"))
    return _parts(cfg, _decoder(cfg, layer, extra=head), layers=tuple(specs), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


def _minimax_m3(cfg: Any) -> FamilyParts:
    """MiniMax-M3 text model: GQA with per-head q_norm / k_norm; ``minimax_m3_sparse``
    layers add a lightning indexer (``q_proj (index_n_heads x index_head_dim)``,
    ``k_proj (index_head_dim)``, q/k norms) whose key is cached per token; dense
    layers a fused SwiGLU ``gate_up_proj (2 x dense_intermediate_size)``; sparse
    layers router + routed experts + a fused shared SwiGLU of ``shared_intermediate_size``.

    Sources: transformers models/minimax_m3_vl/modeling_minimax_m3_vl.py
    (``MiniMaxM3VLAttention``, ``MiniMaxM3VLIndexer``, ``MiniMaxM3VLSparseCacheLayer``,
    ``MiniMaxM3VLTextMLP``, ``MiniMaxM3VLTextSparseMoeBlock``); configuration_minimax_m3_vl.py
    (``sparse_attention_config`` -> ``layer_types``, ``moe_layer_freq`` -> ``mlp_layer_types``).
    """
    hidden, heads = config_int(cfg, "hidden_size"), config_int(cfg, "num_attention_heads")
    kv_heads, head_dim = config_kv_heads(cfg), config_head_dim(cfg)
    index_heads, index_dim = config_int(cfg, "index_n_heads"), config_int(cfg, "index_head_dim")
    experts = config_int(cfg, "num_local_experts")
    attn = (*linear(f"{_ATTN}.q_proj", hidden, heads * head_dim),
            *linear(f"{_ATTN}.k_proj", hidden, kv_heads * head_dim),
            *linear(f"{_ATTN}.v_proj", hidden, kv_heads * head_dim),
            *linear(f"{_ATTN}.o_proj", heads * head_dim, hidden),
            *norm(f"{_ATTN}.q_norm", head_dim), *norm(f"{_ATTN}.k_norm", head_dim))
    indexer = (*linear(f"{_ATTN}.indexer.q_proj", hidden, index_heads * index_dim),
               *linear(f"{_ATTN}.indexer.k_proj", hidden, index_dim),
               *norm(f"{_ATTN}.indexer.q_norm", index_dim), *norm(f"{_ATTN}.indexer.k_norm", index_dim))
    specs: list[LayerSpec] = []

    def fused_mlp(prefix: str, inter: int) -> Groups:
        return (*linear(f"{prefix}.gate_up_proj", hidden, 2 * inter), *linear(f"{prefix}.down_proj", inter, hidden))

    def layer(index: int) -> Groups:
        sparse_attention = cfg.layer_types[index] == "minimax_m3_sparse"
        if sparse_attention:
            specs.append(IndexedAttention(num_key_value_heads=kv_heads, head_dim=head_dim, index_head_dim=index_dim))
        elif cfg.layer_types[index] == "full_attention":
            specs.append(FullAttention(num_key_value_heads=kv_heads, head_dim=head_dim))
        else:
            raise ValueError(f"config key 'layer_types' holds {quote(cfg.layer_types[index])}, which has no cache "
                             "spec here")
        if cfg.mlp_layer_types[index] == "sparse":
            mlp = (*_routed_moe(cfg, _MLP, num_experts=experts, intermediate_size=config_int(cfg, "intermediate_size")),
                   *fused_mlp(f"{_MLP}.shared_experts", config_int(cfg, "shared_intermediate_size")))
        else:
            mlp = fused_mlp(_MLP, config_int(cfg, "dense_intermediate_size"))
        return (*attn, *(indexer if sparse_attention else ()), *mlp, *_layer_norms(cfg, *_PRE_POST))

    return _parts(cfg, _decoder(cfg, layer), layers=tuple(specs), num_experts=experts,
                  num_experts_per_tok=config_int(cfg, "num_experts_per_tok"))


SPARSE_FAMILIES = {
    "deepseek_v32": _deepseek_dsa,
    "glm_moe_dsa": _deepseek_dsa,
    "glm4_moe_lite": _deepseek,
    "deepseek_v4": _deepseek_v4,
    "minimax_m3_vl_text": _minimax_m3,
}
"""Adapter per text config ``model_type`` (GLM-4.7-Flash is a DeepSeek-V3 MLA decoder:
transformers models/glm4_moe_lite/modeling_glm4_moe_lite.py ``Glm4MoeLiteAttention``, ``Glm4MoeLiteMoE``)."""
