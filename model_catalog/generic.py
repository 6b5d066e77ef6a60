"""The generic reading: any config transformers has a config class for, without a family adapter.

A pasted config whose ``model_type`` transformers knows but the catalog has no
adapter for is read through *its own* config class (``AutoConfig.for_model``;
never another family's), and then:

* **layer kinds** from the class's ``layer_types`` as transformers' own cache reads
  them (``get_layer_types_and_kwargs`` in cache_utils.py: per-layer windows, KV
  sharing as ``dummy``), with per-layer KV heads / head_dim from ``per_layer_config``;
  MLA (``kv_lora_rank``), sparse-attention indexer keys (``index_head_dim``) and
  recurrent states (Mamba, Mamba2, Gated DeltaNet keys) from the standard fields;
* **parameters** from a standard decoder layout (:func:`estimate_params`), labelled
  an estimate with :data:`PARAMS_EXPECTED_ERROR` (measured by
  ``scripts/generic_coverage.py``); a Hub fetch replaces it with the safetensors count.

Design notes (assumptions):
    1. Layer types: ``full_attention``, ``sliding_attention``, ``chunked_attention``,
       ``reference_sliding_attention`` (as sliding), ``indexed_attention`` and
       ``minimax_m3_sparse`` (attention + indexer key), ``linear_attention`` / ``conv``
       (recurrent state), ``hybrid`` (attention and a recurrent state in one layer,
       :class:`planner.model.sparse.AttentionWithState`), ``hybrid_sliding`` (the
       sliding attention; its state is named in a note), ``dummy`` / ``moe`` / ``mlp`` (no cache).
    2. Recurrent state sizes, first match wins: Mamba2 (``mamba_num_heads`` /
       ``mamba_n_heads`` x ``mamba_head_dim`` / ``mamba_d_head``, ``ssm_state_size`` /
       ``mamba_d_state``, ``n_groups`` / ``mamba_n_groups``, ``conv_kernel`` /
       ``mamba_d_conv``): conv ``(d_inner + 2 g s) x k``, state ``heads x head_dim x s``;
       Gated DeltaNet (``linear_num_value_heads``, ``linear_key_head_dim``,
       ``linear_value_head_dim``, ``linear_num_key_heads``, ``linear_conv_kernel_dim``);
       Mamba1 (``intermediate_size`` beside ``expand``, else ``mamba_expand`` x hidden,
       ``state_size`` / ``ssm_state_size`` / ``mamba_d_state``, ``conv_kernel`` /
       ``mamba_d_conv``): conv ``d_inner x k``,
       state ``d_inner x s``; short convolutions (``conv_L_cache``): ``hidden x L``.
    3. ``multi_query: true`` (Falcon without ``new_decoder_architecture``, GPTBigCode) means
       one KV head, whatever ``num_kv_heads`` says (``FalconAttention``).
    4. The SSM state format follows ``mamba_ssm_cache_dtype`` / ``mamba_ssm_dtype``
       where the config states it.

Sources: transformers 5.24 cache_utils.py (``get_layer_types_and_kwargs``,
``DYNAMIC_LAYER_TYPE_MAPPING``), configuration_utils.py (``ALLOWED_ATTN_LAYER_TYPES``,
``per_layer_config``); the family adapters of :mod:`model_catalog.families` for the layouts.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from model_catalog.families_hybrid import state_format
from planner.model import ModelSpec
from planner.model.layers import (
    ChunkedLocalAttention,
    FullAttention,
    LayerSpec,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.params import ParamGroup, attention, embedding, gated_mlp, linear, merge_groups, mla_attention, norm
from planner.model.sparse import AttentionWithState, IndexedAttention, IndexedMLAAttention
from planner.text import quote

PARAMS_EXPECTED_ERROR = ("median 0.4%, 90th percentile 37% over 227 transformers model types; non-gated MLPs "
                         "read about 25% high, Mamba hybrids up to 2-3x")
"""How far :func:`estimate_params` lands from transformers' own count on each config class's defaults
(``scripts/generic_coverage.py``, transformers 5.24.0; the table is ``docs/generic_coverage.md``)."""

ATTENTION_TYPES = frozenset({"full_attention", "sliding_attention", "chunked_attention", "reference_sliding_attention",
                             "hybrid", "hybrid_sliding", "indexed_attention", "minimax_m3_sparse"})
STATE_TYPES = frozenset({"linear_attention", "conv"})
NO_CACHE_TYPES = frozenset({"dummy", "moe", "mlp"})


def _get(cfg: Any, *keys: str) -> Any:
    """The first of ``keys`` the config has a value for (per-layer globals included), else None."""
    for key in keys:
        try:
            value = getattr(cfg, key)
        except Exception:  # noqa: BLE001, S112 - transformers refuses ambiguous per-layer globals
            continue
        if value is not None:
            return value
    return None


def _int(cfg: Any, *keys: str) -> int | None:
    value = _get(cfg, *keys)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def read_any_config(raw: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(text config, full config)`` through the type's own transformers config class.

    Raises:
        ValueError: transformers has no class for the type, or the class refused a value.
    """
    from transformers import AutoConfig
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    from model_catalog.hf_config import _quiet_transformers, rejection

    model_type = raw.get("model_type")
    if model_type not in CONFIG_MAPPING_NAMES:
        raise ValueError(f"transformers has no config class for model_type {quote(model_type)}")
    kwargs = {key: copy.deepcopy(value) for key, value in raw.items() if key != "model_type"}
    try:
        with _quiet_transformers():
            config = AutoConfig.for_model(model_type, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the class's own validation, named in one line
        raise ValueError(rejection(exc, model_type, kwargs)) from None
    return config.get_text_config(), config


def recurrent_state(cfg: Any) -> RecurrentState | None:
    """The per-layer recurrent state from the standard keys (design note 2), or None."""
    fmt = state_format(cfg, "mamba_ssm_cache_dtype", "mamba_ssm_dtype")
    hidden = _int(cfg, "hidden_size")
    heads, head_dim = _int(cfg, "mamba_num_heads", "mamba_n_heads"), _int(cfg, "mamba_head_dim", "mamba_d_head")
    d_state = _int(cfg, "ssm_state_size", "mamba_d_state", "state_size")
    kernel = _int(cfg, "conv_kernel", "mamba_d_conv", "d_conv", "mamba_conv_kernel")
    groups = _int(cfg, "n_groups", "mamba_n_groups")
    if not (heads and head_dim) and groups:  # Mamba2Config names them num_heads / head_dim
        heads, head_dim = _int(cfg, "num_heads"), _int(cfg, "head_dim")
    if heads and head_dim and d_state and kernel:
        groups = groups or 1
        d_inner = heads * head_dim
        return RecurrentState(conv_state_elements=(d_inner + 2 * groups * d_state) * kernel, conv_kernel=kernel,
                              ssm_state_elements=heads * head_dim * d_state, ssm_state_format=fmt)
    v_heads, k_dim, v_dim = (_int(cfg, k) for k in ("linear_num_value_heads", "linear_key_head_dim",
                                                    "linear_value_head_dim"))
    k_heads, l_kernel = _int(cfg, "linear_num_key_heads"), _int(cfg, "linear_conv_kernel_dim")
    if v_heads and k_dim and v_dim and k_heads and l_kernel:
        conv = (2 * k_heads * k_dim + v_heads * v_dim) * l_kernel
        return RecurrentState(conv_state_elements=conv, ssm_state_elements=v_heads * k_dim * v_dim, conv_kernel=l_kernel,
                              ssm_state_format=fmt)
    expand = _get(cfg, "mamba_expand", "expand")
    if hidden and d_state and kernel and isinstance(expand, int | float) and expand > 0:
        # MambaMixer reads intermediate_size; hybrids (Jamba, Zamba) name the MLP so and expand by mamba_expand
        pure = _get(cfg, "mamba_expand") is None
        d_inner = (_int(cfg, "intermediate_size") if pure else None) or int(expand * hidden)
        return RecurrentState(conv_state_elements=d_inner * kernel, ssm_state_elements=d_inner * d_state, conv_kernel=kernel,
                              ssm_state_format=fmt)
    short = _int(cfg, "conv_L_cache")
    if hidden and short:
        return RecurrentState(conv_state_elements=hidden * short, ssm_state_elements=0, conv_kernel=short)
    return None


def _layer_config(cfg: Any, index: int) -> Any:
    try:
        return cfg.per_layer_config[index]
    except Exception:  # noqa: BLE001 - configs without per-layer overrides
        return cfg


def generic_layers(cfg: Any) -> tuple[tuple[LayerSpec, ...], tuple[str, ...]]:
    """One cache spec per decoder layer (design notes 1 and 2) and the notes on what was assumed.

    Raises:
        ValueError: a layer type with no spec here, or a recurrent layer whose state sizes
            the config does not state (the message names the keys it looked for).
    """
    from transformers.cache_utils import get_layer_types_and_kwargs

    types, per_layer = get_layer_types_and_kwargs(cfg)
    notes: list[str] = []
    heads = _int(cfg, "num_attention_heads", "n_head", "num_heads")
    kv_lora, rope = _int(cfg, "kv_lora_rank"), _int(cfg, "qk_rope_head_dim")
    index_dim = _int(cfg, "index_head_dim")
    state = None
    specs: list[LayerSpec] = []
    for index, (layer_type, kwargs) in enumerate(zip(types, per_layer)):
        layer_cfg = _layer_config(cfg, index)
        if layer_type in NO_CACHE_TYPES:
            specs.append(NoCache())
            continue
        if layer_type in STATE_TYPES:
            state = state or recurrent_state(cfg)
            if state is None:
                raise ValueError(f"config key 'layer_types' lists a {quote(layer_type)} layer, but none of the "
                                 "recurrent-state keys the planner reads is set (mamba_num_heads + mamba_head_dim + "
                                 "ssm_state_size, linear_num_value_heads + linear_key_head_dim + ..., expand + "
                                 "state_size)")
            specs.append(state)
            continue
        if layer_type not in ATTENTION_TYPES:
            raise ValueError(f"config key 'layer_types' holds {quote(layer_type)}, which the generic reading has no "
                             "cache spec for; the model needs a family adapter")
        indexed = layer_type in ("indexed_attention", "minimax_m3_sparse") and index_dim
        if kv_lora and rope:
            latent = {"kv_lora_rank": kv_lora, "qk_rope_head_dim": rope}
            specs.append(IndexedMLAAttention(**latent, index_head_dim=index_dim) if indexed else MLAAttention(**latent))
            continue
        kv_heads = _int(layer_cfg, "num_key_value_heads", "num_kv_heads", "multi_query_group_num") or \
            _int(layer_cfg, "num_attention_heads") or heads
        if _get(cfg, "multi_query") is True and not _get(cfg, "new_decoder_architecture"):
            kv_heads = 1  # FalconAttention / GPTBigCodeAttention: one KV head under multi_query
        head_dim = _int(layer_cfg, "head_dim") or (_int(cfg, "hidden_size") or 0) // max(heads or 1, 1)
        if not kv_heads or not head_dim:
            raise ValueError("config keys 'num_attention_heads' / 'head_dim' do not give the attention shape")
        shape = {"num_key_value_heads": kv_heads, "head_dim": head_dim}
        window = kwargs.get("sliding_window")
        if layer_type == "chunked_attention" and window:
            specs.append(ChunkedLocalAttention(**shape, attention_chunk_size=int(window)))
        elif window and layer_type in ("sliding_attention", "hybrid_sliding", "reference_sliding_attention"):
            specs.append(SlidingWindowAttention(**shape, sliding_window=int(window)))
        elif indexed:
            specs.append(IndexedAttention(**shape, index_head_dim=index_dim))
        elif layer_type == "hybrid" and (state := state or recurrent_state(cfg)) is not None:
            specs.append(AttentionWithState(**shape, conv_state_elements=state.conv_state_elements,
                                            ssm_state_elements=state.ssm_state_elements,
                                            ssm_state_format=state.ssm_state_format))
        else:
            specs.append(FullAttention(**shape))
        if layer_type.startswith("hybrid") and not isinstance(specs[-1], AttentionWithState) \
                and "hybrid" not in " ".join(notes):
            notes.append("hybrid layers keep a recurrent state beside their attention cache; only the attention "
                         "part is counted")
    if kv_lora and not rope:
        notes.append("config key 'kv_lora_rank' is set without 'qk_rope_head_dim': the attention is priced as GQA")
    return tuple(specs), tuple(notes)


def _num_experts(cfg: Any) -> int:
    return _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts") or 0


def estimate_params(cfg: Any, layers: tuple[LayerSpec, ...]) -> tuple[ParamGroup, ...]:
    """A standard decoder layout from the config's own values (an estimate, :data:`PARAMS_EXPECTED_ERROR`).

    Embeddings (+ ``lm_head`` unless ``tie_word_embeddings``); per attention layer the
    q/k/v/o projections of its KV heads (MLA: the DeepSeek-V2 projections); per
    recurrent layer ``in_proj`` / ``out_proj`` of the state width; per layer a gated
    MLP of ``intermediate_size`` or, with routed experts, router + experts of
    ``moe_intermediate_size`` (+ ``n_shared_experts`` shared) after
    ``first_k_dense_replace`` dense layers; two norms per layer and a final norm.
    """
    hidden, vocab = _int(cfg, "hidden_size"), _int(cfg, "vocab_size")
    heads = _int(cfg, "num_attention_heads") or 1
    if not hidden or not vocab:
        raise ValueError("config keys 'hidden_size' and 'vocab_size' must be positive integers")
    inter = _int(cfg, "intermediate_size") or 4 * hidden
    experts = _num_experts(cfg)
    moe_inter = _int(cfg, "moe_intermediate_size", "expert_intermediate_size") or inter
    shared = (_int(cfg, "n_shared_experts", "num_shared_experts") or 0) * moe_inter
    shared += _int(cfg, "shared_expert_intermediate_size", "moe_shared_expert_intermediate_size") or 0
    dense_first = _int(cfg, "first_k_dense_replace") or 0
    groups: list[ParamGroup] = [*embedding("embed_tokens", vocab, hidden)]
    for index, layer in enumerate(layers):
        if isinstance(layer, MLAAttention):
            q_lora = _int(cfg, "q_lora_rank")
            groups += mla_attention("layers.*.self_attn", hidden_size=hidden, num_attention_heads=heads,
                                    q_lora_rank=q_lora, kv_lora_rank=layer.kv_lora_rank,
                                    qk_nope_head_dim=_int(cfg, "qk_nope_head_dim") or 128,
                                    qk_rope_head_dim=layer.qk_rope_head_dim, v_head_dim=_int(cfg, "v_head_dim") or 128)
        elif isinstance(layer, FullAttention):
            groups += attention("layers.*.self_attn", hidden_size=hidden, num_attention_heads=heads,
                                num_key_value_heads=layer.num_key_value_heads, head_dim=layer.head_dim)
        elif isinstance(layer, RecurrentState) and layer.ssm_state_elements:
            width = max(layer.conv_state_elements // max(_int(cfg, "conv_kernel", "mamba_d_conv",
                                                               "linear_conv_kernel_dim") or 4, 1), hidden)
            groups += [*linear("layers.*.mixer.in_proj", hidden, 2 * width), *linear("layers.*.mixer.out_proj",
                                                                                     width, hidden)]
        if experts and index >= dense_first:
            groups += [ParamGroup(name="layers.*.mlp.gate.weight", shape=(experts, hidden), kind="router"),
                       ParamGroup(name="layers.*.mlp.experts.gate_up_proj", shape=(2 * moe_inter, hidden),
                                  count=experts, kind="linear"),
                       ParamGroup(name="layers.*.mlp.experts.down_proj", shape=(hidden, moe_inter), count=experts,
                                  kind="linear")]
            if shared:
                groups += gated_mlp("layers.*.mlp.shared_experts", hidden_size=hidden, intermediate_size=shared)
        elif not isinstance(layer, NoCache) or not experts:
            groups += gated_mlp("layers.*.mlp", hidden_size=hidden, intermediate_size=inter)
        groups += [*norm("layers.*.input_layernorm", hidden), *norm("layers.*.post_attention_layernorm", hidden)]
    groups += norm("norm", hidden)
    if not _get(cfg, "tie_word_embeddings"):
        groups += embedding("lm_head", vocab, hidden, kind="lm_head")
    return merge_groups(tuple(groups))


def generic_spec(raw: Mapping[str, Any], model_id: str) -> tuple[ModelSpec, tuple[str, ...]]:
    """The planner's spec of a transformers-known type without an adapter, and its notes.

    Raises:
        ValueError: as :func:`read_any_config` and :func:`generic_layers`.
    """
    from model_catalog.hf_config import _raw_quantization_config, _raw_torch_dtype, states_positions
    from model_catalog.quantization import checkpoint_formats

    cfg, _ = read_any_config(raw)
    layers, notes = generic_layers(cfg)
    if not layers:
        raise ValueError("config key 'num_hidden_layers' gives no decoder layers")
    params, quantization = checkpoint_formats(estimate_params(cfg, layers), _raw_quantization_config(raw))
    attention_layer = next((layer for layer in layers if isinstance(layer, FullAttention)), None)
    hidden, heads = _int(cfg, "hidden_size") or 1, _int(cfg, "num_attention_heads") or 1
    experts = _num_experts(cfg)
    per_token = (_int(cfg, "num_experts_per_tok", "top_k_experts", "moe_top_k") or 0) if experts else 0
    spec = ModelSpec(
        model_id=model_id, model_type=str(raw.get("model_type")), layers=layers, params=params,
        hidden_size=hidden, num_attention_heads=heads,
        num_key_value_heads=attention_layer.num_key_value_heads if attention_layer else heads,
        head_dim=attention_layer.head_dim if attention_layer else max(hidden // heads, 1),
        vocab_size=_int(cfg, "vocab_size") or 1, max_position_embeddings=_int(cfg, "max_position_embeddings"),
        max_position_embeddings_default=(_int(cfg, "max_position_embeddings") is not None
                                         and not states_positions(raw, cfg)),
        torch_dtype=_raw_torch_dtype(raw), num_experts=experts, num_experts_per_tok=per_token,
        intermediate_size=_int(cfg, "intermediate_size") or 4 * hidden, display_name=model_id,
        checkpoint_quantization=quantization,
    )
    estimate = (f"parameters are an estimate from a standard decoder layout (expected error "
                f"{PARAMS_EXPECTED_ERROR}); the KV cache and recurrent state follow the config's layer_types")
    return spec, (estimate, *notes)
