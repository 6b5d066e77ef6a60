"""What every family adapter shares: :class:`FamilyParts`, the config readers and the building blocks.

The adapters of :mod:`model_catalog.families` (and ``families_gpt``, ``families_gqa``,
``families_hybrid``, ``families_sparse``) build their parameter groups from these pieces:
:func:`_decoder` lays out embeddings, the per-layer groups, the final norm and ``lm_head``;
the attention / MLP / MoE helpers state one block each; :func:`_parts` wraps the result in a
:class:`FamilyParts` with the config's KV heads and head_dim. The design notes that bind
them all are in :mod:`model_catalog.families`.

Sources: transformers 5.24 ``models/llama/modeling_llama.py`` (the decoder layout the
helpers follow; other sources on each helper).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from planner.model.layers import LayerSpec, MLAAttention, RecurrentState
from planner.model.params import (
    ParamGroup,
    attention,
    embedding,
    gated_mlp,
    linear,
    merge_groups,
    moe_experts,
    norm,
    router,
)
from planner.text import echo

Groups = tuple[ParamGroup, ...]

_ATTN = "layers.*.self_attn"
_MLP = "layers.*.mlp"
_PRE_POST = ("input_layernorm", "post_attention_layernorm")


@dataclass(frozen=True, kw_only=True)
class FamilyParts:
    """What a family adapter knows about one config.

    Attributes:
        params: Parameter groups of the ``*ForCausalLM`` model.
        num_key_value_heads: KV heads of an attention layer (query heads for MLA).
        head_dim: Per-head K width [elements] (``qk_nope + qk_rope`` for MLA).
        num_experts: Routed experts per MoE layer (0 when dense).
        num_experts_per_tok: Experts each token is routed to (0 when dense).
        latent: For MLA families, the cache spec of every attention layer.
        recurrent: For hybrid families, the cache spec of a ``linear_attention``
            (Mamba) layer.
        transformers_kv_heads: KV heads transformers' cache stores when it
            differs from ``num_key_value_heads`` (Falcon new decoder: the query heads).
        layers: One cache spec per decoder layer, when the family decides them
            itself (per-layer head shapes, Mamba / MoE-only blocks, compressed
            attention); None = from ``layer_types`` (:func:`model_catalog.hf_config.layer_specs`).
    """

    params: Groups
    num_key_value_heads: int
    head_dim: int
    num_experts: int = 0
    num_experts_per_tok: int = 0
    latent: MLAAttention | None = None
    recurrent: RecurrentState | None = None
    transformers_kv_heads: int | None = None
    layers: tuple[LayerSpec, ...] | None = None
    param_layers: Mapping[tuple[str, tuple[int, ...], str], tuple[int, ...]] = field(default_factory=dict)
    """Decoder layers each per-layer group comes from, keyed by ``(name, shape, kind)``; lets a
    checkpoint's per-layer quantization (:mod:`model_catalog.quantization`) split a merged group."""


# --- config readers --------------------------------------------------------------------


def config_int(cfg: Any, key: str) -> int:
    """Read a positive integer attribute of a transformers config.

    Raises:
        ValueError: the key is missing, not an int, or < 1; the message names it.
    """
    value = getattr(cfg, key, None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"config key {key!r} must be a positive integer, got {echo(value)}")
    return value


def config_head_dim(cfg: Any) -> int:
    """Per-head width: the config's ``head_dim`` when set, else ``hidden_size // heads``.

    Sources: DOMAIN.md section 3 (Qwen3-4B: head_dim 128, not 2560/32 = 80);
    transformers ``LlamaAttention`` (``getattr(config, "head_dim", hidden // heads)``).
    """
    head_dim = getattr(cfg, "head_dim", None)
    if head_dim is not None:
        return config_int(cfg, "head_dim")
    return config_int(cfg, "hidden_size") // config_int(cfg, "num_attention_heads")


def config_kv_heads(cfg: Any) -> int:
    """KV heads: ``num_key_value_heads`` when the config has it, else the query heads (MHA)."""
    if getattr(cfg, "num_key_value_heads", None) is not None:
        return config_int(cfg, "num_key_value_heads")
    return config_int(cfg, "num_attention_heads")


def _tied(cfg: Any) -> bool:
    return bool(getattr(cfg, "tie_word_embeddings", False))


# --- shared building blocks ------------------------------------------------------------


def _gqa(cfg: Any, prefix: str, *, qkv_bias: bool, o_bias: bool) -> Groups:
    """q/k/v/o projections with the config's heads, KV heads and head_dim."""
    return attention(
        prefix,
        hidden_size=config_int(cfg, "hidden_size"),
        num_attention_heads=config_int(cfg, "num_attention_heads"),
        num_key_value_heads=config_kv_heads(cfg),
        head_dim=config_head_dim(cfg),
        qkv_bias=qkv_bias,
        o_bias=o_bias,
    )


def _head_norms(cfg: Any, prefix: str) -> Groups:
    """Per-head RMSNorms on q and k over ``head_dim`` (Qwen3, Gemma 3)."""
    head_dim = config_head_dim(cfg)
    return (*norm(f"{prefix}.q_norm", head_dim), *norm(f"{prefix}.k_norm", head_dim))


def _swiglu(cfg: Any, prefix: str, intermediate_size: int, *, bias: bool = False) -> Groups:
    return gated_mlp(prefix, hidden_size=config_int(cfg, "hidden_size"), intermediate_size=intermediate_size, bias=bias)


def _layer_norms(cfg: Any, *names: str, bias: bool = False) -> Groups:
    hidden = config_int(cfg, "hidden_size")
    return tuple(group for name in names for group in norm(f"layers.*.{name}", hidden, bias=bias))


def _routed_moe(
    cfg: Any, prefix: str, *, num_experts: int, intermediate_size: int, gate: str = "gate", bias: bool = False
) -> Groups:
    """Router + routed experts of one MoE block."""
    hidden = config_int(cfg, "hidden_size")
    return (
        *router(f"{prefix}.{gate}", hidden_size=hidden, num_experts=num_experts, bias=bias),
        *moe_experts(
            f"{prefix}.experts",
            hidden_size=hidden,
            intermediate_size=intermediate_size,
            num_experts=num_experts,
            bias=bias,
        ),
    )


def _gated_attention(cfg: Any, *, hidden: int, heads: int, head_dim: int, kv_heads: int, bias: bool) -> Groups:
    """Gated full attention of Qwen3-Next / Qwen3.5: ``q_proj`` doubled for the output gate
    (``2 x heads x head_dim``), k/v/o and the q/k head norms (transformers models/qwen3_next/
    modeling_qwen3_next.py ``Qwen3NextAttention``; Qwen3.5 reuses it)."""
    return (
        *linear(f"{_ATTN}.q_proj", hidden, 2 * heads * head_dim, bias=bias),
        *linear(f"{_ATTN}.k_proj", hidden, kv_heads * head_dim, bias=bias),
        *linear(f"{_ATTN}.v_proj", hidden, kv_heads * head_dim, bias=bias),
        *linear(f"{_ATTN}.o_proj", heads * head_dim, hidden, bias=bias),
        *_head_norms(cfg, _ATTN),
    )


def _decoder(
    cfg: Any,
    layer: Callable[[int], Groups],
    *,
    embed: str = "embed_tokens",
    final_norm: str = "norm",
    norm_bias: bool = False,
    lm_head_bias: bool = False,
    extra: Groups = (),
) -> Groups:
    """Embeddings, ``num_hidden_layers`` x ``layer(i)``, final norm, lm_head (unless tied).

    Identical per-layer tensors are merged into one group with ``count`` = layers.

    Sources: transformers ``LlamaModel`` / ``LlamaForCausalLM``
    (models/llama/modeling_llama.py); ``tie_word_embeddings`` shares ``lm_head``
    with the input embedding (``PreTrainedModel.tie_weights``).
    """
    hidden = config_int(cfg, "hidden_size")
    vocab = config_int(cfg, "vocab_size")
    groups: list[ParamGroup] = [*embedding(embed, vocab, hidden), *extra]
    layer_sets: dict[tuple[str, tuple[int, ...], str], list[int]] = {}
    for index in range(config_int(cfg, "num_hidden_layers")):
        for group in layer(index):
            layer_sets.setdefault((group.name, group.shape, group.kind), []).append(index)
            groups.append(group)
    groups += norm(final_norm, hidden, bias=norm_bias)
    if not _tied(cfg):
        groups += embedding("lm_head", vocab, hidden, kind="lm_head")
    if lm_head_bias:
        groups.append(ParamGroup(name="lm_head.bias", shape=(vocab,), kind="bias"))
    sets = {key: tuple(sorted(set(indices))) for key, indices in layer_sets.items()}
    num_layers = config_int(cfg, "num_hidden_layers")
    merged = tuple(replace(g, layers=sets[(g.name, g.shape, g.kind)])
                   if len(sets.get((g.name, g.shape, g.kind), range(num_layers))) < num_layers else g
                   for g in merge_groups(tuple(groups)))  # groups in only some layers name them
    return DecoderGroups(merged, sets)


class DecoderGroups(tuple):
    """The merged groups of :func:`_decoder` plus the decoder layers each per-layer group came from."""

    layer_sets: Mapping[tuple[str, tuple[int, ...], str], tuple[int, ...]]

    def __new__(cls, groups: Groups, layer_sets: Mapping[tuple[str, tuple[int, ...], str], tuple[int, ...]]):
        obj = super().__new__(cls, groups)
        obj.layer_sets = layer_sets
        return obj


def _parts(cfg: Any, params: Groups, **overrides: Any) -> FamilyParts:
    """FamilyParts with the config's KV heads and head_dim unless overridden."""
    overrides.setdefault("param_layers", getattr(params, "layer_sets", {}))
    return FamilyParts(
        params=tuple(params),
        num_key_value_heads=overrides.pop("num_key_value_heads", None) or config_kv_heads(cfg),
        head_dim=overrides.pop("head_dim", None) or config_head_dim(cfg),
        **overrides,
    )
