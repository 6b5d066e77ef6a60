"""KV-cache specs: one frozen dataclass per kind of layer.

Each spec answers two questions (the shape of vLLM's ``KVCacheSpec``,
vllm/v1/kv_cache_interface.py): how many bytes one token costs in this layer on
one GPU, and how many bytes one sequence of ``num_tokens`` holds in this layer.
A model is a tuple of these, one per decoder layer; identical layers compare and
hash equal, so they group for free.

Design notes (assumptions):
    1. K and V of a token in an attention layer cost
       ``bytes(kv_heads * head_dim) + bytes(kv_heads * v_head_dim)`` on one GPU,
       where ``bytes`` is the KV dtype's row size (2 bytes per element for bf16).
       Worked example: Meta-Llama-3-8B, 8 KV heads x 128, bf16:
       2 * 8 * 128 * 2 = 4,096 B per layer, x 32 layers = 131,072 B per token.
    2. Under tensor parallelism each GPU holds ``max(1, kv_heads // tp)`` heads:
       heads are replicated once ``tp > kv_heads`` (vLLM ``ModelConfig.get_num_kv_heads``).
    3. A sliding-window layer with window ``w`` needs at most ``w`` tokens: the
       newest token attends to itself and the ``w - 1`` before it. Serving engines
       add margins on top of this (see ENGINES.md); the transformers cache keeps
       ``w - 1`` after each step.
    4. An MLA layer caches one latent of ``kv_lora_rank + qk_rope_head_dim`` values
       per token, no factor 2, on every tensor-parallel GPU (DeepSeek-V2 report,
       2024; vLLM ``MLAAttentionSpec``).
    5. A recurrent (Mamba / linear-attention) layer keeps a constant state per
       sequence, split across tensor-parallel GPUs with the channels.
    6. Paging rounds each layer's tokens up to whole blocks of ``block_size``:
       with ``block_size`` 16, 17 tokens take 2 blocks = 32 token slots.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.model.dtypes import StorageFormat
from planner.units import ceil_div


@dataclass(frozen=True, kw_only=True)
class CacheDtypes:
    """The element formats a cache uses.

    Attributes:
        kv: Format of attention K/V (and MLA latent) elements.
        state: Format of recurrent (Mamba) state elements; engines keep these in
            the activation dtype even when the KV cache is quantized.
        fp8_ds_mla: True when sparse-MLA layers (DeepSeek-V3.2, GLM-5 DSA) are stored in
            vLLM's ``fp8_ds_mla`` format (FP8 latent, fp32 scales, bf16 rope key:
            :func:`fp8_ds_mla_bytes`) whatever ``kv`` says; every other layer keeps
            ``kv``. Set by :func:`planner.model.kv.cache_dtypes`.
    """

    kv: StorageFormat
    state: StorageFormat
    fp8_ds_mla: bool = False

    @property
    def kv_name(self) -> str:
        """The name of the KV cache as stored: ``fp8_ds_mla`` when :attr:`fp8_ds_mla`, else ``kv.name``."""
        return "fp8_ds_mla" if self.fp8_ds_mla else self.kv.name


FP8_DS_MLA_SCALE_BLOCK = 128
"""Latent values per fp32 scale in vLLM's ``fp8_ds_mla`` format."""


def fp8_ds_mla_bytes(kv_lora_rank: int, qk_rope_head_dim: int) -> int:
    """Bytes of one token of one MLA layer in vLLM's ``fp8_ds_mla`` format.

    ``kv_lora_rank`` FP8 bytes + 4 B (fp32) per 128 latent values + 2 B (bf16) per rope value;
    512 / 64 -> 512 + 16 + 128 = 656 B.

    Sources: vllm/v1/attention/backends/mla/flashmla_sparse.py (``get_kv_cache_shape``: 656 bytes per token);
    design note 1 of :mod:`planner.engines.vllm_kv_formats`. Every MLA layer of a sparse-attention model
    is stored so, with or without an indexer of its own (GLM-5.2's layers that reuse an earlier layer's indices).
    """
    return kv_lora_rank + kv_lora_rank // FP8_DS_MLA_SCALE_BLOCK * 4 + 2 * qk_rope_head_dim


def _check_tokens(num_tokens: int) -> None:
    if num_tokens < 0:
        raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")


def _check_tp(tensor_parallel_size: int) -> None:
    if tensor_parallel_size < 1:
        raise ValueError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")


@dataclass(frozen=True, kw_only=True)
class FullAttention:
    """A layer that keeps K and V for every token of the sequence (MHA, GQA, MQA).

    Attributes:
        num_key_value_heads: KV heads in the config (``num_key_value_heads``;
            equal to ``num_attention_heads`` for MHA, 1 for MQA).
        head_dim: Per-head K width [elements] (config ``head_dim``, else
            ``hidden_size // num_attention_heads``).
        v_head_dim: Per-head V width [elements]; None means ``head_dim``.
        transformers_kv_heads: KV heads transformers' own cache stores when that
            differs from ``num_key_value_heads`` (Falcon's new decoder
            architecture broadcasts K and V to every query head before
            ``cache.update``); None = ``num_key_value_heads``. Only the
            ``transformers`` view (planner/engines/hf_transformers.py) reads it; it takes no
            part in equality, so engine views group such layers as before.

    Sources: Vaswani et al. 2017 (MHA); Shazeer 2019 (MQA); Ainslie et al. 2023
    (GQA); vLLM ``FullAttentionSpec.real_page_size_bytes``; transformers
    models/falcon/modeling_falcon.py ``FalconAttention._split_heads``.
    """

    num_key_value_heads: int
    head_dim: int
    v_head_dim: int | None = None
    transformers_kv_heads: int | None = field(default=None, compare=False)

    kind = "full_attention"

    def __post_init__(self) -> None:
        if self.num_key_value_heads < 1 or self.head_dim < 1:
            raise ValueError(
                f"{type(self).__name__} needs num_key_value_heads >= 1 and head_dim >= 1, "
                f"got {self.num_key_value_heads} and {self.head_dim}"
            )

    def kv_heads_per_gpu(self, tensor_parallel_size: int = 1) -> int:
        """KV heads one GPU holds: ``max(1, num_key_value_heads // tp)``.

        Sources: vLLM ``ModelConfig.get_num_kv_heads`` (vllm/config/model.py).
        """
        _check_tp(tensor_parallel_size)
        return max(1, self.num_key_value_heads // tensor_parallel_size)

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """K + V bytes of one token in this layer on one GPU [bytes]."""
        heads = self.kv_heads_per_gpu(tensor_parallel_size)
        v_dim = self.head_dim if self.v_head_dim is None else self.v_head_dim
        return dtypes.kv.bytes_for(heads * self.head_dim) + dtypes.kv.bytes_for(heads * v_dim)

    def tokens_held(self, num_tokens: int) -> int:
        """Tokens of a ``num_tokens``-long sequence this layer keeps [tokens]."""
        _check_tokens(num_tokens)
        return num_tokens

    def bytes_per_sequence(
        self,
        num_tokens: int,
        dtypes: CacheDtypes,
        tensor_parallel_size: int = 1,
        block_size: int = 1,
    ) -> int:
        """Bytes one sequence of ``num_tokens`` holds in this layer on one GPU.

        Args:
            num_tokens: Prompt + generated tokens of the sequence [tokens].
            dtypes: Element formats.
            tensor_parallel_size: GPUs the layer is split over.
            block_size: Page size [tokens]; 1 means no rounding. Tokens held are
                rounded up to whole blocks (17 tokens, block 16 -> 32 slots).
        """
        held = self.tokens_held(num_tokens)
        slots = ceil_div(held, block_size) * block_size
        return slots * self.bytes_per_token(dtypes, tensor_parallel_size)


@dataclass(frozen=True, kw_only=True)
class SlidingWindowAttention(FullAttention):
    """A local-attention layer that needs only the last ``sliding_window`` tokens.

    Attributes:
        sliding_window: Window ``w`` [tokens] (config ``sliding_window``); the layer
            holds ``min(num_tokens, w)`` tokens.

    Sources: Beltagy et al. 2020 (Longformer local attention); Mistral-7B-v0.1
    config (``sliding_window`` 4096); Gemma 2/3 ``layer_types``; vLLM
    ``SlidingWindowSpec``.
    """

    sliding_window: int

    kind = "sliding_attention"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sliding_window < 1:
            raise ValueError(f"sliding_window must be >= 1, got {self.sliding_window}")

    def tokens_held(self, num_tokens: int) -> int:
        _check_tokens(num_tokens)
        return min(num_tokens, self.sliding_window)


@dataclass(frozen=True, kw_only=True)
class ChunkedLocalAttention(FullAttention):
    """A layer attending only within fixed chunks of ``attention_chunk_size`` tokens.

    The newest token sees at most the ``attention_chunk_size`` tokens of its own
    chunk, so the layer holds ``min(num_tokens, attention_chunk_size)`` tokens.

    Sources: Llama 4 config ``attention_chunk_size`` (8192) and ``layer_types``
    "chunked_attention"; vLLM ``ChunkedLocalAttentionSpec``.
    """

    attention_chunk_size: int

    kind = "chunked_attention"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.attention_chunk_size < 1:
            raise ValueError(
                f"attention_chunk_size must be >= 1, got {self.attention_chunk_size}"
            )

    def tokens_held(self, num_tokens: int) -> int:
        _check_tokens(num_tokens)
        return min(num_tokens, self.attention_chunk_size)


@dataclass(frozen=True, kw_only=True)
class MLAAttention:
    """Multi-head latent attention: one compressed latent per token, no factor 2.

    Attributes:
        kv_lora_rank: Latent width [elements] (config ``kv_lora_rank``, 512 for
            DeepSeek-V2/V3).
        qk_rope_head_dim: Decoupled RoPE key width [elements] (config
            ``qk_rope_head_dim``, 64).
        num_attention_heads, qk_nope_head_dim, v_head_dim: Query-head shapes
            (config keys of the same names), used only for the decompressed view.

    The latent is replicated on every tensor-parallel GPU.
    Worked example: DeepSeek-V3 bf16 = 61 layers x (512 + 64) x 2 = 70,272 B/token.

    Sources: DeepSeek-V2 technical report (2024), section 2.1; vLLM
    ``MLAAttentionSpec`` and ``ModelConfig.get_head_size``; transformers 5
    ``DeepseekV3Attention`` caches the 512-wide latent and the 64-wide rope key.
    """

    kv_lora_rank: int
    qk_rope_head_dim: int
    num_attention_heads: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0

    kind = "mla"

    def decompressed_bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """K + V bytes per token if the cache held decompressed per-head K and V.

        K per head is ``qk_nope_head_dim + qk_rope_head_dim`` wide, V per head
        ``v_head_dim``; heads split over tensor-parallel GPUs. This is what
        engines without MLA kernels (and transformers 4.x) stored.
        Worked example: DeepSeek-V3, 128 heads x (192 + 128) x 2 B x 61 layers
        = 4,997,120 B/token in bf16, 71x the latent's 70,272.

        Raises:
            ValueError: the spec was built without the head shapes.
        """
        _check_tp(tensor_parallel_size)
        if not (self.num_attention_heads and self.v_head_dim):
            raise ValueError("MLAAttention needs num_attention_heads and v_head_dim for the decompressed view")
        heads = max(1, self.num_attention_heads // tensor_parallel_size)
        k_dim = self.qk_nope_head_dim + self.qk_rope_head_dim
        return dtypes.kv.bytes_for(heads * k_dim) + dtypes.kv.bytes_for(heads * self.v_head_dim)

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        _check_tp(tensor_parallel_size)
        if dtypes.fp8_ds_mla:  # vLLM's sparse-MLA format: FP8 latent, fp32 scales, bf16 rope key
            return fp8_ds_mla_bytes(self.kv_lora_rank, self.qk_rope_head_dim)
        return dtypes.kv.bytes_for(self.kv_lora_rank) + dtypes.kv.bytes_for(self.qk_rope_head_dim)

    def tokens_held(self, num_tokens: int) -> int:
        _check_tokens(num_tokens)
        return num_tokens

    def bytes_per_sequence(
        self,
        num_tokens: int,
        dtypes: CacheDtypes,
        tensor_parallel_size: int = 1,
        block_size: int = 1,
    ) -> int:
        """Bytes one sequence holds in this layer on one GPU (see FullAttention)."""
        slots = ceil_div(self.tokens_held(num_tokens), block_size) * block_size
        return slots * self.bytes_per_token(dtypes, tensor_parallel_size)


@dataclass(frozen=True, kw_only=True)
class RecurrentState:
    """A Mamba / linear-attention layer: a constant state per sequence.

    Attributes:
        conv_state_elements: Elements of the rolling convolution state
            (Mamba: ``d_inner * d_conv``).
        ssm_state_elements: Elements of the recurrent SSM state
            (Mamba: ``d_inner * d_state``).
        ssm_state_format: Format of the SSM state when the config fixes it
            (``mamba_ssm_cache_dtype`` of Nemotron-H, ``mamba_ssm_dtype`` of
            Qwen3.5: ``float32``); None = ``CacheDtypes.state`` (the activation
            dtype). The conv state always takes ``CacheDtypes.state``.

        conv_kernel: Convolution width ``d_conv`` (config ``conv_kernel``,
            ``mamba_d_conv``, ``linear_conv_kernel_dim``, ``conv_L_cache``) when the
            family knows it, else 0. transformers keeps all ``d_conv`` columns of the
            rolling conv state (``conv_state_elements``); the serving engines keep
            ``d_conv - 1``, because the oldest column is shifted out before it is read
            (:meth:`engine_bytes_per_sequence`).

    Both are split across tensor-parallel GPUs with the ``d_inner`` channels.
    Worked example: Jamba-v0.1, d_inner = 2 * 4096 = 8192, d_conv 4, d_state 16:
    8192 * (4 + 16) * 2 B = 327,680 B per Mamba layer per sequence in bf16.
    With an fp32 SSM state (Nemotron 3 Nano: conv (4096 + 2 * 8 * 128) x 4 = 24,576,
    SSM 64 heads x 64 x 128 = 524,288 elements): 24,576 x 2 B + 524,288 x 4 B = 2,146,304 B.

    Sources: Gu & Dao 2023 (Mamba); transformers ``HybridMambaAttentionDynamicCache``
    (models/jamba/modeling_jamba.py); vLLM ``MambaSpec.page_size_bytes`` and
    ``--mamba-ssm-cache-dtype`` ("auto" takes the model config's value, vllm/config/cache.py).
    """

    conv_state_elements: int
    ssm_state_elements: int
    ssm_state_format: StorageFormat | None = None
    conv_kernel: int = 0

    kind = "recurrent"

    @property
    def engine_conv_state_elements(self) -> int:
        """Conv-state elements a serving engine keeps: ``d_conv - 1`` of the ``d_conv`` columns.

        Worked example, Nemotron 3 Nano: conv_dim 4096 + 2 x 8 x 128 = 6,144 channels, d_conv 4:
        transformers 24,576 elements, the engines 6,144 x 3 = 18,432. Unknown kernel (0): all of them.

        Sources: vLLM vllm/model_executor/layers/mamba/mamba_utils.py ``MambaStateShapeCalculator``
        (``conv_kernel - 1`` in ``mamba2_state_shape``, ``gated_delta_net_state_shape``,
        ``short_conv_state_shape``); SGLang configs/mamba_utils.py ``Mamba2StateShape``
        (``conv_kernel - 1``); llama.cpp src/llama-hparams.cpp ``n_embd_r`` (``ssm_d_conv - 1``,
        LFM2 ``n_shortconv_l_cache - 1``).
        """
        if self.conv_kernel > 1:
            return self.conv_state_elements // self.conv_kernel * (self.conv_kernel - 1)
        return self.conv_state_elements

    def engine_bytes_per_sequence(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1, *,
                                  conv_format: StorageFormat | None = None,
                                  ssm_format: StorageFormat | None = None) -> int:
        """State bytes per sequence on one GPU as a serving engine stores it [bytes].

        ``conv_format`` (default ``dtypes.state``) for the ``d_conv - 1`` conv columns
        (:attr:`engine_conv_state_elements`), ``ssm_format`` (default the config's
        ``ssm_state_format``, else ``dtypes.state``) for the SSM state; both split over
        ``tensor_parallel_size``. Worked example, Nemotron 3 Nano in vLLM (bf16 conv, fp32 SSM
        from ``mamba_ssm_cache_dtype``): 18,432 x 2 + 524,288 x 4 = 2,134,016 B per layer.

        Sources: vLLM ``MambaSpec.page_size_bytes`` (vllm/v1/kv_cache_interface.py: the product of
        each state shape times its dtype size); see :attr:`engine_conv_state_elements`.
        """
        _check_tp(tensor_parallel_size)
        conv = (conv_format or dtypes.state).bytes_for(ceil_div(self.engine_conv_state_elements,
                                                                tensor_parallel_size))
        ssm = (ssm_format or self.ssm_state_format or dtypes.state).bytes_for(
            ceil_div(self.ssm_state_elements, tensor_parallel_size))
        return conv + ssm

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        """Always 0: the state does not grow with the sequence."""
        _check_tp(tensor_parallel_size)
        return 0

    def tokens_held(self, num_tokens: int) -> int:
        _check_tokens(num_tokens)
        return 0

    def bytes_per_sequence(
        self,
        num_tokens: int,
        dtypes: CacheDtypes,
        tensor_parallel_size: int = 1,
        block_size: int = 1,
    ) -> int:
        """State bytes per sequence on one GPU, whatever ``num_tokens`` is."""
        _check_tokens(num_tokens)
        _check_tp(tensor_parallel_size)
        if self.ssm_state_format is None:
            elements = self.conv_state_elements + self.ssm_state_elements
            return dtypes.state.bytes_for(ceil_div(elements, tensor_parallel_size))
        conv = dtypes.state.bytes_for(ceil_div(self.conv_state_elements, tensor_parallel_size))
        return conv + self.ssm_state_format.bytes_for(ceil_div(self.ssm_state_elements, tensor_parallel_size))


@dataclass(frozen=True, kw_only=True)
class NoCache:
    """A layer with no cache of its own (e.g. it reuses another layer's KV).

    Sources: Gemma-3n ``kv_sharing`` layers; vLLM ``kv_sharing_target_layer_name``.
    """

    kind = "no_cache"

    def bytes_per_token(self, dtypes: CacheDtypes, tensor_parallel_size: int = 1) -> int:
        return 0

    def tokens_held(self, num_tokens: int) -> int:
        _check_tokens(num_tokens)
        return 0

    def bytes_per_sequence(
        self,
        num_tokens: int,
        dtypes: CacheDtypes,
        tensor_parallel_size: int = 1,
        block_size: int = 1,
    ) -> int:
        _check_tokens(num_tokens)
        return 0


LayerSpec = FullAttention | SlidingWindowAttention | ChunkedLocalAttention | MLAAttention | RecurrentState | NoCache
"""Any per-layer cache spec."""
