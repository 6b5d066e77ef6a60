"""Small model factories with powers-of-two shapes, for hand-checkable tests."""

from __future__ import annotations

from planner.model import ModelSpec
from planner.model.layers import FullAttention, SlidingWindowAttention
from planner.model.params import attention, embedding, gated_mlp, linear, norm


def dense_model(
    *,
    num_layers: int = 4,
    hidden_size: int = 1024,
    num_attention_heads: int = 8,
    num_key_value_heads: int = 8,
    head_dim: int = 128,
    intermediate_size: int = 4096,
    vocab_size: int = 32768,
    sliding_window: int | None = None,
    max_position_embeddings: int | None = 1 << 20,
    layers=None,
    model_id: str = "test/dense",
) -> ModelSpec:
    """A Llama-shaped model; every size is chosen so bytes are round numbers."""
    if layers is None:
        if sliding_window is None:
            layer = FullAttention(num_key_value_heads=num_key_value_heads, head_dim=head_dim)
        else:
            layer = SlidingWindowAttention(
                num_key_value_heads=num_key_value_heads, head_dim=head_dim, sliding_window=sliding_window)
        layers = (layer,) * num_layers
    params = (
        *embedding("embed_tokens", vocab_size, hidden_size),
        *attention("layers.*.self_attn", hidden_size=hidden_size, num_attention_heads=num_attention_heads,
                   num_key_value_heads=num_key_value_heads, head_dim=head_dim, count=num_layers),
        *gated_mlp("layers.*.mlp", hidden_size=hidden_size, intermediate_size=intermediate_size, count=num_layers),
        *norm("layers.*.input_layernorm", hidden_size, count=num_layers),
        *norm("layers.*.post_attention_layernorm", hidden_size, count=num_layers),
        *norm("norm", hidden_size),
        *linear("lm_head", hidden_size, vocab_size),
    )
    params = tuple(
        p if p.name != "lm_head.weight" else type(p)(name=p.name, shape=p.shape, count=p.count, kind="lm_head")
        for p in params
    )
    return ModelSpec(
        model_id=model_id, model_type="llama", layers=layers, params=params, hidden_size=hidden_size,
        num_attention_heads=num_attention_heads, num_key_value_heads=num_key_value_heads, head_dim=head_dim,
        vocab_size=vocab_size, max_position_embeddings=max_position_embeddings, torch_dtype="bfloat16",
        intermediate_size=intermediate_size,
    )
