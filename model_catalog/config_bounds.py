"""Bounds on every number, list and object of a model config, wherever it sits (any tower, any depth).

A config reaches the planner from a paste, an upload, the Hub, a share link, the CLI's ``--config`` or a
GGUF header (``model_catalog.gguf_reader`` applies the same :data:`SIZE_LIMITS`). Before anything loops
over a count or multiplies sizes taken from it, :func:`check_sizes` refuses values that are zero,
negative, absurd or too long to compute with, naming the dotted key, the value and the limit. Each bound
is far above the largest published model, cited beside it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from planner.serving.multimodal import (
    MAX_CHANNELS,
    MAX_IMAGE_SIZE,
    MAX_MERGE_SIZE,
    MAX_PATCH_SIZE,
    MAX_PIXELS,
    MAX_TOKENS_PER_IMAGE,
    MAX_VISION_POSITIONS,
)
from planner.serving.speculative import MAX_MTP_LAYERS
from planner.text import quote

MAX_LAYERS = 1_024
"""Most layers of any model or tower [layers]: 8x the largest published decoder (Llama 3.1 405B: 126;
DeepSeek-V3: 61) and far above any vision tower (Qwen3-VL: 27, Llama 4: 34, InternViT-6B: 45)."""

MAX_HIDDEN = 262_144
"""Widest hidden / embedding / projector width accepted [elements]: 16x Llama 3.1 405B's 16,384 (the
widest published; vision towers are 1,024-3,200, their mergers 4,608)."""

MAX_FFN = 1_048_576
"""Widest MLP (dense, expert or shared) accepted [elements]: 20x the widest published (Llama 3.1 405B:
53,248)."""

MAX_HEADS = 4_096
"""Most attention (query, KV, linear-attention, Mamba or indexer) heads or head groups accepted: 32x the
most published (Llama 3.1 405B and DeepSeek-V3: 128 query heads; Nemotron-H-56B: 256 Mamba heads)."""

MAX_HEAD_DIM = 4_096
"""Widest head accepted [elements]: 8x the widest published (Gemma 4 global heads: 512)."""

MAX_VOCAB = 4_194_304
"""Largest vocabulary accepted [tokens]: 16x the largest published (Gemma 3 / 4: 262,144-262,208)."""

MAX_EXPERTS = 16_384
"""Most routed (or shared) experts, or experts per token, accepted: 18x the most published
(Qwen3.5-397B: 512; Kimi K3: 896)."""

MAX_RANK = 65_536
"""Largest low-rank, SSM-state or time-step rank accepted [elements]: 32x the largest published
(GLM-5 q_lora_rank 2,048; DeepSeek-V3 kv_lora_rank 512; Nemotron-H ssm_state_size 256)."""

MAX_CONTEXT = 134_217_728
"""Longest context, window or chunk accepted [tokens] (2^27): 12x the longest published
(Llama 4 Scout: 10,485,760)."""

MAX_SMALL_FACTOR = 64
"""Largest expansion factor or per-layer block multiplier accepted (Mamba ``expand`` 2, DeepSeek-V4
``hc_mult`` 4, Llama-Nemotron ``ffn_mult`` 5.25, Falcon ``num_ln_in_parallel_attn`` 2)."""

MAX_CONV_KERNEL = 1_024
"""Widest convolution kernel of a Mamba / linear-attention layer accepted [tokens] (published: 4)."""

MAX_QUANT_BITS = 64
"""Most bits per quantized value accepted (published: 4 and 8)."""

MAX_QUANT_BLOCK = 65_536
"""Largest quantization group or block side accepted [elements] (published: 16-128)."""

MAX_CONFIG_INT = 10**18
"""Every whole number anywhere in a config must stay below this in magnitude: the largest published
value is a context of 10,485,760 (token ids reach 262,208), and 10^18 x 10^18 still fits the planner's
arithmetic without an overflow to float infinity."""

MAX_CONFIG_FLOAT = 1e18
"""Every real number anywhere in a config must stay below this in magnitude (the largest published:
``rope_theta`` 1e8); a larger one is a typo and would overflow the planner's float arithmetic."""

UNBOUNDED_FLOAT_KEYS: frozenset[str] = frozenset({"time_step_limit"})
"""Keys whose real numbers may be of any magnitude, ``Infinity`` included: the Mamba2 time-step clamp, which
the planner never reads (Nemotron-H ``time_step_limit: [0.0, Infinity]``, :data:`JSON_INFINITIES`;
Nemotron-3-Ultra ``[0.0, 1e308]``). An infinity anywhere else is refused (JSON's ``1e999`` also reads as one)."""

MAX_CONFIG_DEPTH = 32
"""Deepest nesting of objects and lists accepted [levels]: published configs nest at most 7 levels
(Kimi K3: ``text_config.quantization_config.config_groups.group_0.weights.observer_kwargs``)."""

MAX_LIST_ITEMS = 4_096
"""Longest list accepted outside quantization metadata [entries]: 38x the longest published
(Nemotron-3-Ultra ``layers_block_type``: 108 layers); per-layer lists are bounded tighter
(:data:`MAX_LAYER_SEQUENCE`)."""

MAX_MODULE_LIST_ITEMS = 262_144
"""Longest module list accepted inside ``quantization_config`` / ``compression_config`` and
``hf_quant_config.json`` [entries]: ModelOpt checkpoints list every module they leave unquantized
(nvidia/MiniMax-M3-NVFP4: 22,422 quantized layers); a list this long of module names (16+ bytes each)
already exceeds :data:`MAX_CONFIG_BYTES`."""

MAX_OBJECT_KEYS = 1_024
"""Most keys of one object accepted outside quantization metadata: 10x the most published (Kimi K3's
``text_config``: 96). Each key is a constructor argument of transformers' config class and one trial of the
share link's key pruning (:func:`model_catalog.share_codec.minimal_config`), so thousands of unread keys
would cost minutes of CPU per paste."""

MODULE_LIST_SCOPES: frozenset[str] = frozenset({"quantization_config", "compression_config", "quantization"})
"""Keys whose subtree may hold long module lists and maps (:data:`MAX_MODULE_LIST_ITEMS`): a config's
``quantization_config`` / ``compression_config`` and the ``quantization`` object of ModelOpt's
hf_quant_config.json (``quantized_layers``: one entry per module)."""

MAX_LAYER_SEQUENCE = MAX_LAYERS + MAX_MTP_LAYERS
"""Longest per-layer list or pattern string accepted [entries]: one entry per decoder layer plus the MTP
layers (Nemotron-H's class counts its layers from ``hybrid_override_pattern``, so its length is a count)."""

LAYER_SEQUENCE_KEYS: frozenset[str] = frozenset({
    "layer_types", "layers_block_type", "mtp_layers_block_type", "block_configs", "mlp_layer_types",
    "indexer_types", "hybrid_override_pattern", "mtp_hybrid_override_pattern", "compress_ratios",
    "attn_type_list", "moe_layer_freq", "sparse_attention_freq", "sparse_disable_index_value",
    "hybrid_layer_pattern", "no_rope_layers", "full_attn_layers", "kda_layers", "mlp_only_layers",
    "deepstack_visual_indexes", "fullatt_block_indexes", "layers_num_experts", "kv_sharing_modes",
})
"""Lists (and pattern strings) with at most one entry per layer (:data:`MAX_LAYER_SEQUENCE`)."""


MAX_CONFIG_NAME_CHARS = 128
"""Longest name a config states under a key of :data:`NAME_KEYS` [characters]: 3x the longest published
(``architectures`` MiniMaxM3SparseForConditionalGeneration: 39; ``model_type`` llama4_vision_model: 19;
``layer_types`` deepseek_sparse_attention: 25). A name is compared and quoted back, never computed with,
so a longer one is a paste gone wrong."""

NAME_KEYS: frozenset[str] = frozenset({
    "model_type", "architectures", "torch_dtype", "dtype", "quant_method", "quant_algo", "kv_cache_quant_algo",
    "layer_types", "layers_block_type", "mtp_layers_block_type", "mlp_layer_types", "indexer_types",
    "kv_sharing_modes", "expert_dtype",
})
"""Keys whose text (or list of texts) names a type, a dtype, a method or a layer kind
(:data:`MAX_CONFIG_NAME_CHARS`)."""


@dataclass(frozen=True)
class KeyRange:
    """Accepted values of one config key, in the key's own unit.

    Attributes:
        low, high: Smallest and largest value accepted (both inclusive).
        what: What the key holds, with an example, for messages.
    """

    low: int
    high: int
    what: str


def _ranges(keys: tuple[str, ...], low: int, high: int, what: str) -> dict[str, KeyRange]:
    """One :class:`KeyRange` for each of ``keys`` (keys of the same kind: layer counts, widths, heads ...)."""
    return {key: KeyRange(low, high, what) for key in keys}


def _config_key_ranges() -> dict[str, KeyRange]:
    """:data:`CONFIG_KEY_RANGES` (vision geometry bounds from :mod:`planner.serving.multimodal`, MTP from
    :mod:`planner.serving.speculative`)."""
    return {
        **_ranges(("num_hidden_layers", "n_layer", "n_layers", "num_layers", "depth", "vt_num_hidden_layers"),
                  1, MAX_LAYERS, "a layer count such as 32"),
        **_ranges(("first_k_dense_replace", "max_window_layers", "num_kv_shared_layers", "num_hash_layers",
                   "attn_layer_offset", "expert_layer_offset", "moe_layer_freq", "deepstack_visual_indexes",
                   "full_attn_layers", "kda_layers", "mlp_only_layers", "no_rope_layers", "fullatt_block_indexes",
                   "hybrid_layer_pattern", "attn_type_list", "sparse_attention_freq"),
                  0, MAX_LAYERS, "a layer index or count such as 3"),
        **_ranges(("decoder_sparse_step", "interleave_moe_layer_step", "full_attention_interval", "attn_layer_period",
                   "expert_layer_period", "sliding_window_pattern", "global_attn_every_n_layers", "index_topk_freq"),
                  1, MAX_LAYERS, "a layer period such as 4"),
        **_ranges(("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules", "mtp_transformer_layers"),
                  0, MAX_MTP_LAYERS, "an MTP layer count such as 1"),
        **_ranges(("hidden_size", "n_embd", "d_model", "model_dim", "vt_hidden_size", "embed_dim", "out_hidden_size",
                   "mm_hidden_size", "text_hidden_size", "projection_hidden_size", "projector_hidden_size",
                   "merged_hidden_size", "projector_input_dim", "projector_output_dim", "vision_output_dim",
                   "output_proj_dims", "projection_dim", "qkv_hidden_size", "routed_expert_hidden_size",
                   "moe_latent_size"),
                  1, MAX_HIDDEN, "a width such as 4096"),
        **_ranges(("hidden_size_per_layer_input",), 0, MAX_HIDDEN, "a width such as 256 (0 for none)"),
        **_ranges(("intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", "vt_intermediate_size",
                   "dense_intermediate_size", "intermediate_size_mlp"),
                  1, MAX_FFN, "an MLP width such as 14336"),
        **_ranges(("moe_intermediate_size", "shared_expert_intermediate_size", "shared_intermediate_size",
                   "moe_shared_expert_intermediate_size", "share_expert_dim"),
                  0, MAX_FFN, "an expert MLP width such as 1408"),
        **_ranges(("num_attention_heads", "n_head", "n_heads", "num_heads", "vt_num_attention_heads",
                   "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num", "n_kv_heads",
                   "num_global_key_value_heads", "swa_num_attention_heads", "swa_num_key_value_heads",
                   "index_n_heads", "linear_num_key_heads", "linear_num_value_heads", "linear_num_heads",
                   "mamba_num_heads", "mamba_n_heads", "n_groups", "mamba_n_groups", "n_heads_in_group",
                   "sparse_num_index_heads"),
                  1, MAX_HEADS, "a head count such as 32"),
        **_ranges(("head_dim", "global_head_dim", "qk_head_dim", "v_head_dim", "index_head_dim", "linear_key_head_dim",
                   "linear_value_head_dim", "linear_head_dim", "mamba_head_dim", "swa_head_dim", "swa_v_head_dim",
                   "attention_head_dim", "kv_channels", "sparse_index_dim"),
                  1, MAX_HEAD_DIM, "a head width such as 128"),
        **_ranges(("qk_rope_head_dim", "qk_nope_head_dim", "rotary_dim", "mrope_section"),
                  0, MAX_HEAD_DIM, "a rotary width such as 64"),
        **_ranges(("vocab_size", "padded_vocab_size", "draft_vocab_size"), 1, MAX_VOCAB,
                  "a vocabulary size such as 128256"),
        **_ranges(("vocab_size_per_layer_input",), 0, MAX_VOCAB, "a vocabulary size such as 262144"),
        **_ranges(("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", "n_shared_experts",
                   "num_shared_experts", "num_experts_per_tok", "num_experts_per_token", "experts_per_token",
                   "top_k_experts", "moe_topk"),
                  0, MAX_EXPERTS, "an expert count such as 8"),
        **_ranges(("kv_lora_rank",), 1, MAX_RANK, "a latent rank such as 512"),
        **_ranges(("q_lora_rank", "o_lora_rank"), 0, MAX_RANK, "a low-rank width such as 1536"),
        **_ranges(("ssm_state_size", "mamba_d_state", "state_size", "mamba_dt_rank", "time_step_rank"),
                  1, MAX_RANK, "a state or rank width such as 128"),
        **_ranges(("mamba_d_conv", "conv_kernel", "linear_conv_kernel_dim", "short_conv_kernel_size"),
                  1, MAX_CONV_KERNEL, "a convolution width such as 4"),
        **_ranges(("mamba_expand", "expand", "hc_mult", "num_ln_in_parallel_attn"), 1, MAX_SMALL_FACTOR,
                  "a small factor such as 2"),
        **_ranges(("ffn_mult",), 0, MAX_SMALL_FACTOR, "an MLP multiplier such as 2.5"),
        **_ranges(("max_position_embeddings", "n_positions", "seq_length", "max_sequence_length", "n_ctx",
                   "original_max_position_embeddings"),
                  1, MAX_CONTEXT, "the longest context in tokens, a positive number such as 131072"),
        **_ranges(("sliding_window", "sliding_window_size", "attention_chunk_size", "index_topk"), 1, MAX_CONTEXT,
                  "a window in tokens such as 4096 (null for none)"),
        **_ranges(("compress_ratios",), 0, MAX_CONTEXT, "a compression ratio such as 4"),
        **_ranges(("patch_size",), 1, MAX_PATCH_SIZE, "a patch side in pixels such as 14"),
        **_ranges(("spatial_merge_size", "temporal_patch_size", "merge_kernel_size", "pooling_kernel_size"),
                  1, MAX_MERGE_SIZE, "a merge size such as 2"),
        **_ranges(("num_channels", "in_channels"), 1, MAX_CHANNELS, "an input channel count such as 3"),
        **_ranges(("image_size",), 1, MAX_IMAGE_SIZE, "an image side in pixels such as 896"),
        **_ranges(("num_position_embeddings", "position_embedding_size", "init_pos_emb_height", "init_pos_emb_width",
                   "init_pos_emb_time"),
                  1, MAX_VISION_POSITIONS, "a position-table size such as 2304"),
        **_ranges(("min_pixels", "max_pixels"), 1, MAX_PIXELS, "a pixel count such as 16777216"),
        **_ranges(("mm_tokens_per_image", "vision_soft_tokens_per_image", "default_output_length"), 1,
                  MAX_TOKENS_PER_IMAGE, "tokens per image such as 256"),
        **_ranges(("bits", "w_bit", "num_bits"), 1, MAX_QUANT_BITS, "bits per weight such as 4"),
        **_ranges(("group_size", "q_group_size"), -1, MAX_QUANT_BLOCK, "a group size such as 128 (-1 per channel)"),
        **_ranges(("weight_block_size",), 1, MAX_QUANT_BLOCK, "a block side such as 128"),
    }


CONFIG_KEY_RANGES: dict[str, KeyRange] = _config_key_ranges()
"""Accepted range of every size, count, window, geometry and quantization key the planner, transformers'
config classes or the tower builders read, applied wherever the key appears (top level, ``text_config``,
``vision_config``, ``audio_config``, a draft's or any future tower's sub-config, and each entry of a list
under the key). A value outside is a typo or an attempt to make the server build a huge model, and is
refused with a message instead of a long computation. Keys with a meaningful 0 (optional counts) start at 0."""

SIZE_LIMITS: dict[str, int] = {key: bound.high for key, bound in CONFIG_KEY_RANGES.items()}
"""Largest value accepted per key (:data:`CONFIG_KEY_RANGES`' upper bounds)."""

def _shown(value: int | float) -> str:
    """A number for a message: with thousands separators, or its digit count when it is very long."""
    if isinstance(value, float):
        return f"{value:,g}" if math.isfinite(value) else str(value)
    if abs(value) < 10**30:
        return f"{value:,}"
    digits = len(str(abs(value))) if value.bit_length() < 14_000 else int(value.bit_length() * math.log10(2)) + 1
    return f"a number of {digits:,} digits"


def _check_number(value: int | float, key: str, where: str, label: str) -> None:
    """Raise ValueError for a number out of :data:`CONFIG_KEY_RANGES` (by ``key``) or out of magnitude."""
    name = f"{label} {quote(where)}"
    if isinstance(value, float) and key in UNBOUNDED_FLOAT_KEYS and not math.isnan(value):
        return
    if isinstance(value, float) and math.isnan(value):
        raise ValueError(f"{name} is nan, which is not a number: use a number")
    if isinstance(value, float) and math.isinf(value):
        raise ValueError(f"{name} is {value} (JSON numbers beyond about 1.8e308 read as infinity); expected a "
                         "finite number: fix the value")
    bound = CONFIG_KEY_RANGES.get(key)
    if bound is not None:
        if value > bound.high:
            raise ValueError(f"{name} is {_shown(value)}; at most {bound.high:,} is accepted, far above any "
                             f"published model (expected {bound.what}): fix the value")
        if value < bound.low:
            raise ValueError(f"{name} is {_shown(value)}; expected {bound.what}, at least {bound.low:,}: fix the "
                             "value, or leave the key out")
    limit = MAX_CONFIG_INT if isinstance(value, int) else MAX_CONFIG_FLOAT
    if abs(value) >= limit:
        raise ValueError(f"{name} is {_shown(value)}; numbers in a model config stay below 10^18 in magnitude: "
                         "fix the value")


REAL_VALUED_KEYS: frozenset[str] = frozenset({"ffn_mult"})
"""Keys of :data:`CONFIG_KEY_RANGES` whose value may have a fraction (Llama-Nemotron ``block_configs[].ffn.ffn_mult``
5.25); every other one is a count or a size, which transformers' strict config classes type ``int``."""


def _not_whole(value: bool | float, key: str, path: str, label: str) -> str | None:
    """Why a bool or a fractional number cannot stand under ``key``, or None (a key without a range, a
    :data:`REAL_VALUED_KEYS` value, or a whole float such as 32.0, which the range check reads as the number).

    JSON ``true`` under a count is no count: Python's ``bool`` is an ``int`` (``True == 1``), so a class that
    accepts ``int`` planned one KV head, and transformers' strict classes (huggingface_hub
    ``StrictDataclassFieldValidationError``) refused it with a 261-character exception text. ``128.5`` is no
    width either.
    """
    bound = CONFIG_KEY_RANGES.get(key)
    if bound is None:
        return None
    if isinstance(value, bool):
        return (f"{label} {quote(path)} is {str(value).lower()}; expected {bound.what}, a whole number: fix the value")
    if key in REAL_VALUED_KEYS or not math.isfinite(value) or value.is_integer():
        return None
    return f"{label} {quote(path)} is {value:g}; expected {bound.what}, a whole number: fix the value"


def check_sizes(config: Mapping[str, Any], where: str = "", *, label: str = "config key",
                module_lists: bool = False) -> None:
    """Refuse a config whose numbers, lists or nesting could make the planner loop, overflow or divide by 0.

    Walks every nested object and list (any tower, present or future), iteratively: each number under a
    key of :data:`CONFIG_KEY_RANGES` must be in its range; every number below :data:`MAX_CONFIG_INT` /
    :data:`MAX_CONFIG_FLOAT` in magnitude and finite (``Infinity`` only in :data:`UNBOUNDED_FLOAT_KEYS`);
    lists at most :data:`MAX_LIST_ITEMS` long (:data:`MAX_LAYER_SEQUENCE` for per-layer lists and pattern
    strings, :data:`MAX_MODULE_LIST_ITEMS` in quantization metadata); objects at most :data:`MAX_OBJECT_KEYS`
    keys (:data:`MAX_MODULE_LIST_ITEMS` in quantization metadata); nesting at most :data:`MAX_CONFIG_DEPTH`
    levels; no ``true`` / ``false`` or fraction under a count or size key (:func:`_not_whole`); a name under a
    key of :data:`NAME_KEYS` at most :data:`MAX_CONFIG_NAME_CHARS` characters. Costs one pass over the config.

    Args:
        config: The config dict.
        where: Prefix of the key paths in messages (e.g. ``"text_config."``).
        label: How messages name a key (``config key``, ``hf_quant_config.json key``).
        module_lists: The whole tree is quantization metadata (``hf_quant_config.json``).

    Raises:
        ValueError: names the dotted key path (``vision_config.depth``, ``block_configs[3].ffn.ffn_mult``),
            its value and the accepted limit.
    """
    prefix = where.removesuffix(".")
    stack: list[tuple[Any, str, str, int, bool]] = [(config, prefix, prefix.rpartition(".")[2], 0, module_lists)]
    values: list[tuple[str, str]] = []  # (path, problem) of each bad value, reported together at the end
    while stack:
        node, path, key, depth, in_modules = stack.pop()
        if node is None:
            continue
        if isinstance(node, (bool, float)) and (problem := _not_whole(node, key, path, label)):
            values.append((path, problem))
        elif isinstance(node, bool):
            continue
        elif isinstance(node, (int, float)):
            try:
                _check_number(node, key, path, label)
            except ValueError as exc:
                values.append((path, str(exc)))
        elif isinstance(node, str):
            if key in CONFIG_KEY_RANGES and not in_modules:
                bound = CONFIG_KEY_RANGES[key]
                values.append((path, f"{label} {quote(path)} is the text {quote(node[:40])}; expected {bound.what}, "
                                     "a number: fix the value"))
            if key in NAME_KEYS and len(node) > MAX_CONFIG_NAME_CHARS:
                raise ValueError(f"{label} {quote(path)} is {quote(node)}; at most {MAX_CONFIG_NAME_CHARS} "
                                 "characters are accepted (published names are under 40, e.g. 'llama', "
                                 "'bfloat16'): paste the model's own config.json")
            if key in LAYER_SEQUENCE_KEYS and len(node) > MAX_LAYER_SEQUENCE:
                raise ValueError(f"{label} {quote(path)} is {len(node):,} characters long; at most "
                                 f"{MAX_LAYER_SEQUENCE:,} (one per layer) are accepted: paste the model's own "
                                 "config.json")
        elif isinstance(node, (Mapping, list, tuple)):
            if depth >= MAX_CONFIG_DEPTH:
                raise ValueError(f"{label} {quote(path)} nests {MAX_CONFIG_DEPTH} levels deep; a model config "
                                 "nests a few levels: paste the model's own config.json")
            if isinstance(node, Mapping):
                keys = MAX_MODULE_LIST_ITEMS if in_modules else MAX_OBJECT_KEYS
                if len(node) > keys:
                    what = f"{label} {quote(path)} holds" if path else "the config's top level holds"
                    raise ValueError(f"{what} {len(node):,} keys; at most {keys:,} are accepted (a model config "
                                     "has about 100): paste the model's own config.json")
                for child_key, value in node.items():
                    child_key = str(child_key)
                    stack.append((value, f"{path}.{child_key}" if path else child_key, child_key, depth + 1,
                                  in_modules or child_key in MODULE_LIST_SCOPES))
                continue
            limit = (MAX_MODULE_LIST_ITEMS if in_modules else MAX_LAYER_SEQUENCE if key in LAYER_SEQUENCE_KEYS
                     else MAX_LIST_ITEMS)
            if len(node) > limit:
                raise ValueError(f"{label} {quote(path)} lists {len(node):,} entries; at most {limit:,} are "
                                 "accepted (far above any published model): paste the model's own config.json")
            stack.extend((item, f"{path}[{index}]", key, depth + 1, in_modules) for index, item in enumerate(node))
    if values:
        _raise_all(sorted(values))


MAX_PROBLEMS_SHOWN = 5
"""Bad values one message names (the count of the rest follows)."""


def _raise_all(problems: list[tuple[str, str]]) -> None:
    """One ValueError naming every bad value (in key order, at most :data:`MAX_PROBLEMS_SHOWN`), so a paste with
    several is fixed in one round instead of one message per try."""
    texts = [text for _, text in problems]
    if len(texts) == 1:
        raise ValueError(texts[0])
    shown = texts[:MAX_PROBLEMS_SHOWN]
    rest = [path for path, _ in problems[len(shown):]]
    more = f"; and {', '.join(quote(p) for p in rest[:MAX_PROBLEMS_SHOWN])}" if rest else ""
    if len(rest) > MAX_PROBLEMS_SHOWN:
        more += f" and {len(rest) - MAX_PROBLEMS_SHOWN:,} more"
    raise ValueError(f"{len(texts):,} values to fix: " + "; ".join(shown) + more)
