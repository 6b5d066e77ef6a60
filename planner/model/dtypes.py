"""Storage formats for weights, KV cache and recurrent state.

A format is described by its bits per element, *including* any per-block scales
that live inline with the data, plus optional per-tensor and per-output-channel
scale overheads. Byte counts are exact integers: ``ceil(numel * bits / 8)``.

Sources:
    * fp32 / bf16 / fp16 / fp8 / int8 element sizes: IEEE 754, OCP 8-bit FP spec.
    * fp8 weights with one fp32 scale per tensor: vLLM ``Fp8LinearMethod``
      (vllm/model_executor/layers/quantization/fp8.py), "per-tensor" checkpoints.
    * int8 weights with one fp32 scale per output channel: vLLM compressed-tensors
      W8A8/W8A16 channel-wise schemes.
    * int4 with group-128 scales: GPTQ (Frantar et al. 2022) / AWQ (Lin et al. 2023)
      checkpoints store 4-bit weights, one fp16 scale and one packed 4-bit zero point
      per group of 128 input elements: 4 + 16/128 + 4/128 = 4.15625 bits/element.
    * mxfp4: OCP Microscaling spec v1.0, 32 fp4 (e2m1) values share one 8-bit e8m0
      scale: (32*4 + 8) / 32 = 4.25 bits/element (gpt-oss checkpoints).
    * KV int4 / q4_0: llama.cpp ``ggml_row_size(GGML_TYPE_Q4_0)`` = 18 bytes per 32
      values (16 bytes of nibbles + one fp16 scale) = 4.5 bits; q8_0 = 34 bytes per 32
      (ggml/src/ggml.c type traits). ``int4`` uses that q4_0 layout.
    * KV fp8 / int8: 1 byte per element, per-tensor scales stored outside the cache
      (vLLM ``CacheConfig.cache_dtype`` "fp8", vllm/config/cache.py).
    * nvfp4 (weights): NVIDIA ModelOpt NVFP4 checkpoints store e2m1 values packed two per
      byte, one fp8 e4m3 ``weight_scale`` per 16 values (4 + 8/16 = 4.5 bits/element) and
      two fp32 scalars per tensor (``weight_scale_2``, ``input_scale``): 8 B per matrix.
      Worked example: a (7168, 2048) expert matrix is 7168 x 2048 x 4.5 / 8 + 8 = 8,257,544 B.
    * nvfp4 (KV cache, TensorRT-LLM ``kv_cache_quant_algo`` NVFP4 on Blackwell): the same
      4.5 bits per value; its per-tensor scales live outside the cache.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from planner.units import ceil_div


@dataclass(frozen=True, kw_only=True)
class StorageFormat:
    """How one tensor's elements are stored.

    Attributes:
        name: Short id used by the CLI and the URL (``bf16``, ``int4``, ...).
        bits_per_element: Bits per stored element including inline block scales.
        per_tensor_scale_bytes: Extra bytes once per weight matrix [bytes].
        per_channel_scale_bytes: Extra bytes per output channel (row) [bytes].
        is_float: True for plain fp32/bf16/fp16 storage (no quantization).
        label: Human-readable description for the UI.
        block_shape: ``(rows, cols)`` of the blocks that share one scale stored
            beside the matrix (DeepSeek-V3 FP8: 128 x 128), or None.
        block_scale_bytes: Bytes of one such block scale (fp32: 4) [bytes].
    """

    name: str
    bits_per_element: Fraction
    per_tensor_scale_bytes: int = 0
    per_channel_scale_bytes: int = 0
    is_float: bool = False
    label: str = ""
    block_shape: tuple[int, int] | None = None
    block_scale_bytes: int = 0

    def bytes_for(self, num_elements: int) -> int:
        """Bytes to store ``num_elements`` values (inline block scales included).

        Args:
            num_elements: Element count, >= 0.

        Returns:
            ``ceil(num_elements * bits_per_element / 8)`` [bytes], in integers:
            ``ceil(num_elements * p / (8 q))`` for ``bits_per_element = p / q``
            (the same value as the exact rational, without building a ``Fraction``).
        """
        bits = self.bits_per_element
        return ceil_div(bits.numerator * num_elements, bits.denominator * 8)

    def bytes_for_matrix(self, shape: tuple[int, ...]) -> int:
        """Bytes for one weight tensor of ``shape`` (rows = output channels).

        Adds the per-tensor, per-output-channel and per-block scale overheads to
        :meth:`bytes_for`. Block scales: ``ceil(rows / br) x ceil(cols / bc)``
        scales, ``cols`` being the product of the other dimensions. Worked
        example: a (576, 7168) FP8 matrix with 128 x 128 fp32 block scales holds
        576 x 7168 B + 5 x 56 x 4 B = 4,129,888 B.
        """
        numel = 1
        for dim in shape:
            numel *= dim
        rows = shape[0] if shape else 1
        blocks = 0
        if self.block_shape is not None and rows:
            block_rows, block_cols = self.block_shape
            blocks = ceil_div(rows, block_rows) * ceil_div(numel // rows, block_cols)
        return (
            self.bytes_for(numel)
            + self.per_tensor_scale_bytes
            + self.per_channel_scale_bytes * rows
            + self.block_scale_bytes * blocks
        )


def _fmt(name: str, bits: Fraction | int, label: str, **kw) -> StorageFormat:
    return StorageFormat(name=name, bits_per_element=Fraction(bits), label=label, **kw)


FP32 = _fmt("fp32", 32, "fp32 (4 B)", is_float=True)
BF16 = _fmt("bf16", 16, "bf16 (2 B)", is_float=True)
FP16 = _fmt("fp16", 16, "fp16 (2 B)", is_float=True)

FP8_BLOCK128 = _fmt(
    "fp8_block128", 8, "FP8 e4m3 + one fp32 scale per 128 x 128 block (DeepSeek-V3 quantization_config)",
    block_shape=(128, 128), block_scale_bytes=4,
)
"""DeepSeek-V3 / R1 checkpoints: 1-byte e4m3 weights and an fp32 ``weight_scale_inv``
of shape ``(ceil(out / 128), ceil(in / 128))`` per matrix (DeepSeek-V3 README_WEIGHTS.md,
"FP8 Weight Documentation")."""

WEIGHT_DTYPES: dict[str, StorageFormat] = {
    f.name: f
    for f in (
        FP32,
        BF16,
        FP16,
        _fmt("fp8", 8, "fp8 (1 B + fp32 scale per tensor)", per_tensor_scale_bytes=4),
        FP8_BLOCK128,
        _fmt("int8", 8, "int8 (1 B + fp32 scale per channel)", per_channel_scale_bytes=4),
        _fmt("int4", Fraction(133, 32), "int4 GPTQ/AWQ (0.5 B + fp16 scale and 4-bit zero per 128)"),
        _fmt("mxfp4", Fraction(17, 4), "MXFP4 (4.25 bits: 32 fp4 values + e8m0 scale)"),
        _fmt("nvfp4", Fraction(9, 2), "NVFP4 (4.5 bits: 16 fp4 values + fp8 scale; fp32 weight and input scale "
             "per tensor)", per_tensor_scale_bytes=8),
        _fmt("auto", 16, "as the checkpoint ships (its quantization_config; else its torch_dtype)"),
    )
}
"""Weight storage formats by CLI name. Quantized formats apply to linear layers only.

``auto`` is not one format: each tensor takes the format its published checkpoint
stores it in (``ParamGroup.checkpoint``, set by ``model_catalog`` from the config's
``quantization_config``), and unquantized tensors the checkpoint's ``torch_dtype``
(:func:`checkpoint_dtype`). See :func:`planner.model.params.weight_bytes`."""

AUTO_WEIGHT_DTYPE = "auto"
"""Name of the "as the checkpoint ships" weight dtype."""



def checkpoint_dtype(torch_dtype: str | None) -> StorageFormat:
    """Format of a checkpoint's unquantized tensors, from config ``torch_dtype``.

    ``float16`` -> fp16, anything else (``bfloat16``, ``float32``, missing) -> bf16:
    servers load float32 checkpoints in 16 bits (vLLM ``--dtype auto``,
    vllm/config/model.py ``_get_and_verify_dtype``), so that is what occupies the GPU.
    """
    if torch_dtype in ("float16", "fp16"):
        return FP16
    return BF16

KV_CACHE_DTYPES: dict[str, StorageFormat] = {
    f.name: f
    for f in (
        FP32,
        BF16,
        FP16,
        _fmt("fp8", 8, "fp8 (1 B, per-tensor scale outside the cache)"),
        _fmt("int8", 8, "int8 (1 B, per-tensor scale outside the cache)"),
        _fmt("int4", Fraction(9, 2), "int4 (q4_0 layout: 18 B per 32 values)"),
        _fmt("nvfp4", Fraction(9, 2), "NVFP4 (16 fp4 values + fp8 scale, per-tensor scale outside the cache)"),
        _fmt("q8_0", Fraction(17, 2), "llama.cpp q8_0 (34 B per 32 values)"),
        _fmt("q4_0", Fraction(9, 2), "llama.cpp q4_0 (18 B per 32 values)"),
    )
}
"""KV-cache element formats by CLI name; ``auto`` is resolved by :func:`resolve_kv_cache_dtype`."""

KV_CACHE_DTYPE_CHOICES: tuple[str, ...] = ("auto", *KV_CACHE_DTYPES)


def weight_dtype(name: str) -> StorageFormat:
    """Look up a weight format by name.

    Raises:
        ValueError: unknown name; the message lists the valid ones.
    """
    try:
        return WEIGHT_DTYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown weight dtype {name!r}; choose one of {', '.join(WEIGHT_DTYPES)}"
        ) from None


def activation_dtype(weight_format: StorageFormat, torch_dtype: str | None) -> StorageFormat:
    """The 16/32-bit dtype the model computes in.

    Float weights compute in their own dtype; quantized weights (fp8, int8, int4,
    mxfp4) dequantize to the checkpoint's ``torch_dtype`` when it is float16, else
    to bf16. This is what vLLM's ``--dtype auto`` and ``--kv-cache-dtype auto``
    give (vllm/config/model.py ``_get_and_verify_dtype``; float32 checkpoints are
    served in 16 bits there, so they map to bf16 here once quantized).
    """
    if weight_format.is_float:
        return weight_format
    return FP16 if torch_dtype in ("float16", "fp16") else BF16


def resolve_kv_cache_dtype(
    name: str, weight_format: StorageFormat, torch_dtype: str | None
) -> StorageFormat:
    """Resolve a KV-cache dtype name, ``auto`` meaning the activation dtype.

    Args:
        name: ``auto`` or a key of :data:`KV_CACHE_DTYPES`.
        weight_format: The chosen weight format.
        torch_dtype: ``torch_dtype`` from the model's config.json (may be None).

    Raises:
        ValueError: unknown name; the message lists the valid ones.

    Sources: vLLM ``CacheConfig.cache_dtype`` ("auto" = model dtype), vllm/config/cache.py.
    """
    if name == "auto":
        return activation_dtype(weight_format, torch_dtype)
    try:
        return KV_CACHE_DTYPES[name]
    except KeyError:
        raise ValueError(
            f"unknown KV-cache dtype {name!r}; choose one of {', '.join(KV_CACHE_DTYPE_CHOICES)}"
        ) from None
