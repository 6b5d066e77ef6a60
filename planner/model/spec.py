"""The planner's view of a model: per-layer cache specs plus parameter shapes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.model.layers import (
    ChunkedLocalAttention,
    FullAttention,
    LayerSpec,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.model.memo import memoized
from planner.model.params import ParamGroup, count_parameters

AttentionKind = Literal["MHA", "GQA", "MQA", "MLA"]


@dataclass(frozen=True, kw_only=True)
class ModelSpec:
    """Everything the planner needs to know about one model.

    Built by ``model_catalog`` from a Hugging Face config.json read through
    transformers' config classes; plain data, no transformers objects.

    Attributes:
        model_id: Hugging Face repo id, e.g. ``meta-llama/Meta-Llama-3-8B``.
        model_type: Config ``model_type`` (``llama``, ``gemma3_text``, ...).
        layers: One cache spec per decoder layer, in order.
        params: Parameter groups (see :mod:`planner.model.params`).
        hidden_size: Config ``hidden_size`` [elements].
        num_attention_heads: Config ``num_attention_heads``.
        num_key_value_heads: KV heads of the attention layers (1 for MLA's
            latent is *not* used here: MLA models report their query heads).
        head_dim: Per-head K width of the attention layers [elements].
        vocab_size: Config ``vocab_size``.
        max_position_embeddings: Longest context the model supports [tokens], or
            None when the config does not say.
        max_position_embeddings_default: True when the config states no ``max_position_embeddings`` (under
            any name) and ``max_position_embeddings`` is the default of transformers' config class for the
            model type (``LlamaConfig``: 2,048), which vLLM reads as well; messages about the context limit
            then say so and how to fix it (add the key to the config).
        torch_dtype: Config ``torch_dtype`` (``bfloat16``, ``float16``, ``float32``) or None.
        num_experts: Routed experts per MoE layer (0 for dense models).
        num_experts_per_tok: Experts each token is routed to (0 for dense).
        intermediate_size: Widest MLP activation one token produces [elements]:
            the dense ``intermediate_size``, or for MoE layers
            ``num_experts_per_tok * moe_intermediate_size`` plus shared experts,
            whichever is larger. Used only by the activation estimate.
        display_name: Name shown in the UI.
        checkpoint_quantization: How the published checkpoint stores its weights
            (from ``quantization_config``: e.g. ``mxfp4: 2 groups``), empty when it
            ships unquantized; weight dtype ``auto`` follows it.
        language_model_only: The server leaves the model's vision / audio towers unloaded (vLLM
            ``--language-model-only``; set by :func:`planner.serving.vision_towers.text_only`), so launch
            commands must say so.
        architecture: Config ``architectures[0]`` (``Gemma4ForConditionalGeneration``), empty when the config
            names none; engines that key behaviour on it read it (SGLang's multimodal list,
            :mod:`planner.engines.sglang_vlm`).
        vision_config_sizes: ``(num_hidden_layers, hidden_size)`` as config.json's ``vision_config`` states them
            (None for a key it omits: Qwen-VL configs state ``depth`` instead), or None without a
            ``vision_config`` object. SGLang's ``adjust_mem_fraction_for_vlm`` reads these two keys.
    """

    model_id: str
    model_type: str
    layers: tuple[LayerSpec, ...]
    params: tuple[ParamGroup, ...]
    hidden_size: int
    num_attention_heads: int
    num_key_value_heads: int
    head_dim: int
    vocab_size: int
    max_position_embeddings: int | None = None
    max_position_embeddings_default: bool = False
    torch_dtype: str | None = None
    num_experts: int = 0
    num_experts_per_tok: int = 0
    intermediate_size: int = 0
    display_name: str = ""
    checkpoint_quantization: str = ""
    language_model_only: bool = False
    architecture: str = ""
    vision_config_sizes: tuple[int | None, int | None] | None = None

    def __post_init__(self) -> None:
        if not self.layers:
            raise ValueError(f"{self.model_id}: a model needs at least one layer")

    @property
    def num_parameters(self) -> int:
        """Total parameters, all experts included (memoized per object, :mod:`planner.model.memo`)."""
        return memoized(self, ("num_parameters",), lambda: count_parameters(self.params))

    @property
    def num_layers(self) -> int:
        """Decoder layers."""
        return len(self.layers)

    @property
    def attention_kind(self) -> AttentionKind:
        """MLA if any layer is MLA, else MHA / MQA / GQA from the KV head count.

        Sources: Shazeer 2019 (MQA: one KV head); Ainslie et al. 2023 (GQA:
        1 < kv_heads < heads); DeepSeek-V2 report 2024 (MLA).

        Memoized per object (:mod:`planner.model.memo`): every plan asks, and the
        answer walks the layers.
        """
        return memoized(self, ("attention_kind",), self._attention_kind)

    def _attention_kind(self) -> AttentionKind:
        """:attr:`attention_kind` without the memo."""
        if any(isinstance(layer, MLAAttention) for layer in self.layers):
            return "MLA"
        if self.num_key_value_heads == 1:
            return "MQA"
        if self.num_key_value_heads >= self.num_attention_heads:
            return "MHA"
        return "GQA"

    @property
    def layer_counts(self) -> dict[str, int]:
        """How many layers of each kind (``full_attention``, ``sliding_attention``, ...)."""
        counts: dict[str, int] = {}
        for layer in self.layers:
            counts[layer.kind] = counts.get(layer.kind, 0) + 1
        return counts

    @property
    def is_moe(self) -> bool:
        """True for mixture-of-experts models."""
        return self.num_experts > 0

    @property
    def is_hybrid(self) -> bool:
        """True when the layers are not all of one cache kind."""
        return len(self.layer_counts) > 1

    @property
    def sliding_windows(self) -> tuple[int, ...]:
        """Distinct local-attention windows (sliding or chunked) [tokens], sorted."""
        windows = set()
        for layer in self.layers:
            if isinstance(layer, SlidingWindowAttention):
                windows.add(layer.sliding_window)
            elif isinstance(layer, ChunkedLocalAttention):
                windows.add(layer.attention_chunk_size)
        return tuple(sorted(windows))

    @property
    def has_recurrent_state(self) -> bool:
        """True when some layer keeps a constant recurrent state."""
        return any(isinstance(layer, RecurrentState) for layer in self.layers)

    @property
    def has_attention(self) -> bool:
        """True when some layer holds per-token KV."""
        return any(isinstance(layer, (FullAttention, MLAAttention)) for layer in self.layers)
