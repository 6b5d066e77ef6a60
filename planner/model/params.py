"""Parameter tensors of a model, and the bytes they take as weights.

(Size: about 500 lines because it holds the tensor builders every family adapter shares
(linear, attention, MLA, MoE experts, Mamba mixer) beside the byte arithmetic they feed; a builder
used by one family only belongs in that family's adapter, not here.)

The catalog describes a model as a tuple of :class:`ParamGroup` (a tensor shape,
how many copies, and what kind of tensor it is). Counting is a sum of products;
weight bytes apply a storage format per kind: quantized formats apply to linear
layers (attention and MLP projections, experts included) while embeddings,
``lm_head``, norms, biases and routers stay in the activation dtype, as GPTQ,
AWQ, FP8 and MXFP4 checkpoints ship them (DOMAIN.md section 2).

The builder helpers below mirror the ``nn.Module`` layout of transformers'
modeling files so that counts match ``sum(p.numel() for p in model.parameters())``
exactly (each helper names the file it follows).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from planner.model.dtypes import AUTO_WEIGHT_DTYPE, StorageFormat, activation_dtype, checkpoint_dtype, weight_dtype
from planner.model.memo import model_memo, remember
from planner.units import ceil_div

if TYPE_CHECKING:  # annotations only (planner.model.spec imports this module)
    from planner.model.spec import ModelSpec

ParamKind = Literal["embedding", "lm_head", "linear", "norm", "bias", "router", "conv", "other"]

QUANTIZABLE_KINDS: frozenset[str] = frozenset({"linear"})
"""Kinds stored in the chosen (possibly quantized) weight format."""

SHARDED_KINDS: frozenset[str] = frozenset({"embedding", "lm_head", "linear", "bias", "conv", "other"})
"""Kinds split across tensor-parallel GPUs (vLLM ``VocabParallelEmbedding``,
``ColumnParallelLinear`` / ``RowParallelLinear``); norms and routers are replicated."""


@dataclass(frozen=True, kw_only=True)
class ParamGroup:
    """``count`` identical parameter tensors of one ``shape``.

    Attributes:
        name: Module path pattern, e.g. ``layers.*.self_attn.q_proj.weight``.
        shape: Tensor shape [elements]; for linear weights ``(out_features, in_features)``.
        count: Number of such tensors in the model (layers x experts ...).
        kind: One of :data:`ParamKind`; decides the storage format and TP split.
        storage: Format fixed by the checkpoint file (a GGUF tensor's ggml
            type); when set it replaces the format chosen from ``kind`` and the
            requested weight dtype. None for configs read from config.json.
        checkpoint: Format the published safetensors checkpoint stores this
            tensor in, from the config's ``quantization_config`` (gpt-oss experts
            ``mxfp4``, DeepSeek-V3 linears ``fp8_block128``); used only by weight
            dtype ``auto``. None = unquantized (the checkpoint's ``torch_dtype``).
        layers: The decoder layers that hold this per-layer group when not all of them do (DeepSeek's
            dense MLP in its first ``first_k_dense_replace`` layers, its experts in the rest; Llama 4's
            MoE on ``moe_layers``), ``count / len(layers)`` tensors each; None when every layer holds
            the same number (or the group is not per layer). Pipeline stages place groups by it
            (:func:`planner.engines.loaded.stage_params`).
    """

    name: str
    shape: tuple[int, ...]
    count: int = 1
    kind: ParamKind = "other"
    storage: StorageFormat | None = None
    checkpoint: StorageFormat | None = None
    layers: tuple[int, ...] | None = None

    @property
    def numel(self) -> int:
        """Elements in one tensor of this group."""
        n = 1
        for dim in self.shape:
            n *= dim
        return n

    @property
    def total_numel(self) -> int:
        """Elements in all ``count`` tensors of this group."""
        return self.numel * self.count


def count_parameters(params: tuple[ParamGroup, ...]) -> int:
    """Total parameter count: ``sum(numel * count)``.

    Sources: equals ``sum(p.numel() for p in model.parameters())`` of the
    transformers model class when the groups follow its module tree.
    """
    return sum(group.total_numel for group in params)


def _formats_and_bytes(
    params: tuple[ParamGroup, ...],
    weight_format: StorageFormat,
    torch_dtype: str | None,
    tensor_parallel_size: int,
):
    """Yield ``(format, bytes)`` for each parameter group (see :func:`weight_bytes`)."""
    if tensor_parallel_size < 1:
        raise ValueError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
    other_format = activation_dtype(weight_format, torch_dtype)
    as_shipped = weight_format.name == AUTO_WEIGHT_DTYPE
    shipped_default = checkpoint_dtype(torch_dtype)
    for group in params:
        if group.storage:
            fmt = group.storage
        elif as_shipped:  # weight dtype "auto": the checkpoint's own format per tensor
            fmt = group.checkpoint or shipped_default
        else:
            fmt = weight_format if group.kind in QUANTIZABLE_KINDS else other_format
        per_tensor = fmt.bytes_for_matrix(group.shape)
        if group.kind in SHARDED_KINDS and tensor_parallel_size > 1:
            per_tensor = ceil_div(per_tensor, tensor_parallel_size)
        yield fmt, per_tensor * group.count


def weight_bytes(
    params: tuple[ParamGroup, ...],
    weight_format: StorageFormat,
    torch_dtype: str | None = None,
    tensor_parallel_size: int = 1,
) -> int:
    """Bytes of weights, in total or on one of ``tensor_parallel_size`` GPUs.

    Args:
        params: The model's parameter groups.
        weight_format: Format for linear layers; other kinds use the activation
            dtype (:func:`planner.model.dtypes.activation_dtype`). ``auto`` takes each
            group's ``checkpoint`` format, else the checkpoint's ``torch_dtype``
            (:func:`planner.model.dtypes.checkpoint_dtype`), whatever its kind.
        torch_dtype: Config ``torch_dtype``; picks fp16 vs bf16 for unquantized
            tensors of a quantized model.
        tensor_parallel_size: 1 for the whole model; ``tp`` for one GPU's share,
            where sharded kinds are split (ceil) and norms/routers are replicated.

    Returns:
        Weight bytes [bytes].

    Raises:
        ValueError: ``tensor_parallel_size < 1``.

    Sources: DOMAIN.md section 2 (bytes = sum numel x bits / 8 + scales); vLLM
    parallel linear layers (vllm/model_executor/layers/linear.py).
    """
    return sum(n for _, n in _formats_and_bytes(params, weight_format, torch_dtype, tensor_parallel_size))


def weight_bytes_by_format(
    params: tuple[ParamGroup, ...],
    weight_format: StorageFormat,
    torch_dtype: str | None = None,
    tensor_parallel_size: int = 1,
) -> dict[str, int]:
    """The bytes of :func:`weight_bytes`, split by the storage format each tensor ends up in.

    Shows what a requested dtype resolves to: ``auto`` on gpt-oss gives
    ``{"mxfp4": ..., "bf16": ...}`` (experts in MXFP4, the rest in bf16), an int4
    request keeps embeddings and norms in the activation dtype.

    Args:
        params, weight_format, torch_dtype, tensor_parallel_size: as for :func:`weight_bytes`.

    Returns:
        Format name -> bytes [bytes], largest first; the values sum to :func:`weight_bytes`.

    Raises:
        ValueError: ``tensor_parallel_size < 1``.

    Sources: as :func:`weight_bytes`.
    """
    totals: dict[str, int] = {}
    for fmt, n in _formats_and_bytes(params, weight_format, torch_dtype, tensor_parallel_size):
        totals[fmt.name] = totals.get(fmt.name, 0) + n
    return dict(sorted(totals.items(), key=lambda item: (-item[1], item[0])))


def model_weight_bytes_by_format(
    model: ModelSpec, weight_dtype_name: str, tensor_parallel_size: int = 1
) -> dict[str, int]:
    """:func:`weight_bytes_by_format` of ``model.params`` at a weight dtype name, memoized per model object.

    Args:
        model: The model (its ``params`` and ``torch_dtype``).
        weight_dtype_name: A key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.
        tensor_parallel_size: 1 for the whole model, ``tp`` for one GPU's share.

    Returns:
        A new dict, format name -> bytes [bytes], largest first.

    Raises:
        ValueError: unknown dtype name or ``tensor_parallel_size < 1``.

    Sources: as :func:`weight_bytes`; memo: :mod:`planner.model.memo` (a plan and
    its suggestions price the weights at several sizes).
    """
    memo = model_memo(model)
    key = ("weight_bytes_by_format", weight_dtype_name, tensor_parallel_size)
    items = memo.get(key)
    if items is None:
        by_format = weight_bytes_by_format(model.params, weight_dtype(weight_dtype_name), model.torch_dtype,
                                           tensor_parallel_size)
        items = remember(memo, key, tuple(by_format.items()))
    return dict(items)


def model_weight_bytes(model: ModelSpec, weight_dtype_name: str, tensor_parallel_size: int = 1) -> int:
    """:func:`weight_bytes` of ``model.params`` at a weight dtype name [bytes], memoized per model object.

    Equals ``weight_bytes(model.params, weight_dtype(weight_dtype_name), model.torch_dtype, tp)``.

    Raises:
        ValueError: unknown dtype name or ``tensor_parallel_size < 1``.
    """
    memo = model_memo(model)
    key = ("weight_bytes", weight_dtype_name, tensor_parallel_size)
    total = memo.get(key)
    if total is None:
        by_format = model_weight_bytes_by_format(model, weight_dtype_name, tensor_parallel_size)
        total = remember(memo, key, sum(by_format.values()))
    return total


def describe_weight_formats(by_format: dict[str, int]) -> str:
    """One line naming the formats of :func:`weight_bytes_by_format`, largest share first.

    ``{"bf16": n}`` -> ``"bf16"``; ``{"mxfp4": a, "bf16": b}`` -> ``"mxfp4 + bf16"``.
    Formats holding under 0.05 % of the bytes are left out (a few norms do not
    make a model "mixed"). An empty dict (no parameters) gives ``"none"``.
    """
    total = sum(by_format.values())
    if not total:
        return "none"
    names = [name for name, n in by_format.items() if n * 2000 >= total]
    return " + ".join(names)


# --- builders: one helper per module kind --------------------------------------------


def linear(
    name: str, in_features: int, out_features: int, *, bias: bool = False, count: int = 1
) -> tuple[ParamGroup, ...]:
    """``nn.Linear(in_features, out_features, bias)``: weight (out, in) [+ bias (out,)].

    Sources: torch.nn.Linear.
    """
    groups = [ParamGroup(name=f"{name}.weight", shape=(out_features, in_features), count=count, kind="linear")]
    if bias:
        groups.append(ParamGroup(name=f"{name}.bias", shape=(out_features,), count=count, kind="bias"))
    return tuple(groups)


def embedding(name: str, num_embeddings: int, embedding_dim: int, *, kind: ParamKind = "embedding") -> tuple[ParamGroup, ...]:
    """``nn.Embedding(num_embeddings, embedding_dim)``: one (num, dim) table."""
    return (ParamGroup(name=f"{name}.weight", shape=(num_embeddings, embedding_dim), kind=kind),)


def norm(name: str, dim: int, *, bias: bool = False, count: int = 1) -> tuple[ParamGroup, ...]:
    """RMSNorm (weight only) or LayerNorm (weight + bias) over ``dim``.

    Sources: transformers ``LlamaRMSNorm`` (models/llama/modeling_llama.py);
    torch.nn.LayerNorm.
    """
    groups = [ParamGroup(name=f"{name}.weight", shape=(dim,), count=count, kind="norm")]
    if bias:
        groups.append(ParamGroup(name=f"{name}.bias", shape=(dim,), count=count, kind="norm"))
    return tuple(groups)


def attention(
    prefix: str,
    *,
    hidden_size: int,
    num_attention_heads: int,
    num_key_value_heads: int,
    head_dim: int,
    qkv_bias: bool = False,
    o_bias: bool = False,
    count: int = 1,
) -> tuple[ParamGroup, ...]:
    """q/k/v/o projections of MHA/GQA/MQA attention.

    Shapes: q ``(heads*head_dim, hidden)``, k and v ``(kv_heads*head_dim, hidden)``,
    o ``(hidden, heads*head_dim)``.

    Sources: transformers ``LlamaAttention`` (models/llama/modeling_llama.py),
    ``Qwen2Attention`` (q/k/v bias).
    """
    q_out = num_attention_heads * head_dim
    kv_out = num_key_value_heads * head_dim
    return (
        *linear(f"{prefix}.q_proj", hidden_size, q_out, bias=qkv_bias, count=count),
        *linear(f"{prefix}.k_proj", hidden_size, kv_out, bias=qkv_bias, count=count),
        *linear(f"{prefix}.v_proj", hidden_size, kv_out, bias=qkv_bias, count=count),
        *linear(f"{prefix}.o_proj", q_out, hidden_size, bias=o_bias, count=count),
    )


def gated_mlp(
    prefix: str, *, hidden_size: int, intermediate_size: int, bias: bool = False, count: int = 1
) -> tuple[ParamGroup, ...]:
    """SwiGLU/GeGLU MLP: gate and up ``(inter, hidden)``, down ``(hidden, inter)``.

    Sources: transformers ``LlamaMLP`` (models/llama/modeling_llama.py); Shazeer 2020 (GLU variants).
    """
    return (
        *linear(f"{prefix}.gate_proj", hidden_size, intermediate_size, bias=bias, count=count),
        *linear(f"{prefix}.up_proj", hidden_size, intermediate_size, bias=bias, count=count),
        *linear(f"{prefix}.down_proj", intermediate_size, hidden_size, bias=bias, count=count),
    )


def plain_mlp(
    prefix: str, *, hidden_size: int, intermediate_size: int, bias: bool = True, count: int = 1
) -> tuple[ParamGroup, ...]:
    """Two-matrix MLP (GPT-2, GPT-J, GPT-NeoX, Falcon, Starcoder2): up then down.

    Sources: transformers ``GPTNeoXMLP`` (models/gpt_neox/modeling_gpt_neox.py).
    """
    return (
        *linear(f"{prefix}.up", hidden_size, intermediate_size, bias=bias, count=count),
        *linear(f"{prefix}.down", intermediate_size, hidden_size, bias=bias, count=count),
    )


# --- builders added for the model catalog: MoE, MLA, Mamba ---------------------------


def merge_groups(groups: tuple[ParamGroup, ...]) -> tuple[ParamGroup, ...]:
    """Merge groups with the same name, shape, kind and storage by adding their counts.

    Lets a catalog adapter list each decoder layer's tensors with ``count=1`` and
    still hand the planner one group per distinct tensor. Order of first
    appearance is kept. Example: 32 layers x ``q_proj (4096, 4096)`` become one
    group with ``count=32``.
    """
    merged: dict[tuple, int] = {}
    for group in groups:
        key = (group.name, group.shape, group.kind, group.storage, group.checkpoint, group.layers)
        merged[key] = merged.get(key, 0) + group.count
    return tuple(
        ParamGroup(name=name, shape=shape, count=count, kind=kind, storage=storage,  # type: ignore[arg-type]
                   checkpoint=checkpoint, layers=layers)
        for (name, shape, kind, storage, checkpoint, layers), count in merged.items()
    )


def router(
    prefix: str, *, hidden_size: int, num_experts: int, bias: bool = False, count: int = 1
) -> tuple[ParamGroup, ...]:
    """MoE router (gate): weight ``(num_experts, hidden)`` [+ bias ``(num_experts,)``].

    Kept in the activation dtype and replicated across GPUs (kind ``router``),
    as quantized MoE checkpoints ship it.

    Sources: transformers ``MixtralTopKRouter`` (models/mixtral/modeling_mixtral.py),
    ``GptOssTopKRouter`` with bias (models/gpt_oss/modeling_gpt_oss.py).
    """
    groups = [ParamGroup(name=f"{prefix}.weight", shape=(num_experts, hidden_size), count=count, kind="router")]
    if bias:
        groups.append(ParamGroup(name=f"{prefix}.bias", shape=(num_experts,), count=count, kind="router"))
    return tuple(groups)


def moe_experts(
    prefix: str,
    *,
    hidden_size: int,
    intermediate_size: int,
    num_experts: int,
    bias: bool = False,
    count: int = 1,
) -> tuple[ParamGroup, ...]:
    """Routed gated experts: ``num_experts`` x (fused gate+up, down) per layer.

    transformers 5 stores each layer's experts as two 3-D tensors,
    ``gate_up_proj (E, 2*inter, hidden)`` and ``down_proj (E, hidden, inter)``;
    here each expert is one ``(2*inter, hidden)`` and one ``(hidden, inter)``
    linear matrix (``count = layers x E``), so element counts match exactly and
    per-output-channel scales see the same number of rows.

    Args:
        prefix: Module path of the experts, e.g. ``layers.*.mlp.experts``.
        hidden_size: Model width [elements].
        intermediate_size: One expert's inner width [elements]
            (``moe_intermediate_size`` or ``intermediate_size`` per family).
        num_experts: Routed experts in one layer.
        bias: gpt-oss experts carry ``gate_up_proj_bias (E, 2*inter)`` and
            ``down_proj_bias (E, hidden)``.
        count: Number of MoE layers with this shape.

    Sources: transformers ``MixtralExperts`` (models/mixtral/modeling_mixtral.py),
    ``Qwen3MoeExperts``, ``DeepseekV3NaiveMoe``, ``GptOssExperts``
    (models/gpt_oss/modeling_gpt_oss.py), ``Llama4TextExperts``.
    """
    n = count * num_experts
    groups = [
        ParamGroup(name=f"{prefix}.gate_up_proj", shape=(2 * intermediate_size, hidden_size), count=n, kind="linear"),
        ParamGroup(name=f"{prefix}.down_proj", shape=(hidden_size, intermediate_size), count=n, kind="linear"),
    ]
    if bias:
        up_bias = ParamGroup(name=f"{prefix}.gate_up_proj_bias", shape=(2 * intermediate_size,), count=n, kind="bias")
        groups.insert(1, up_bias)
        groups.append(ParamGroup(name=f"{prefix}.down_proj_bias", shape=(hidden_size,), count=n, kind="bias"))
    return tuple(groups)


def mla_attention(
    prefix: str,
    *,
    hidden_size: int,
    num_attention_heads: int,
    q_lora_rank: int | None,
    kv_lora_rank: int,
    qk_nope_head_dim: int,
    qk_rope_head_dim: int,
    v_head_dim: int,
    bias: bool = False,
    count: int = 1,
) -> tuple[ParamGroup, ...]:
    """Multi-head latent attention projections (DeepSeek-V2/V3).

    Queries: ``q_proj (heads*qk_head_dim, hidden)`` when ``q_lora_rank`` is None
    (DeepSeek-V2-Lite), else ``q_a_proj (q_lora_rank, hidden)`` + RMSNorm over
    ``q_lora_rank`` + ``q_b_proj (heads*qk_head_dim, q_lora_rank)``, with
    ``qk_head_dim = qk_nope_head_dim + qk_rope_head_dim``. Keys/values:
    ``kv_a_proj_with_mqa (kv_lora_rank + qk_rope_head_dim, hidden)`` + RMSNorm over
    ``kv_lora_rank`` + ``kv_b_proj (heads*(qk_nope_head_dim + v_head_dim), kv_lora_rank)``.
    Output: ``o_proj (hidden, heads*v_head_dim)``. ``bias`` (config
    ``attention_bias``) adds biases to ``q_a_proj``, ``kv_a_proj_with_mqa`` and ``o_proj``.

    Worked example, DeepSeek-V3 (hidden 7168, 128 heads, q_lora 1536, kv_lora 512,
    nope 128, rope 64, v 128): 187,107,328 parameters per layer.

    Sources: DeepSeek-V2 technical report (2024) section 2.1; transformers
    ``DeepseekV2Attention`` (models/deepseek_v2/modeling_deepseek_v2.py),
    ``DeepseekV3Attention`` (models/deepseek_v3/modeling_deepseek_v3.py).
    """
    qk_head_dim = qk_nope_head_dim + qk_rope_head_dim
    q_out = num_attention_heads * qk_head_dim
    if q_lora_rank is None:
        query = linear(f"{prefix}.q_proj", hidden_size, q_out, count=count)
    else:
        query = (
            *linear(f"{prefix}.q_a_proj", hidden_size, q_lora_rank, bias=bias, count=count),
            *norm(f"{prefix}.q_a_layernorm", q_lora_rank, count=count),
            *linear(f"{prefix}.q_b_proj", q_lora_rank, q_out, count=count),
        )
    return (
        *query,
        *linear(f"{prefix}.kv_a_proj_with_mqa", hidden_size, kv_lora_rank + qk_rope_head_dim, bias=bias, count=count),
        *norm(f"{prefix}.kv_a_layernorm", kv_lora_rank, count=count),
        *linear(
            f"{prefix}.kv_b_proj", kv_lora_rank, num_attention_heads * (qk_nope_head_dim + v_head_dim), count=count
        ),
        *linear(f"{prefix}.o_proj", num_attention_heads * v_head_dim, hidden_size, bias=bias, count=count),
    )


def mamba_mixer(
    prefix: str,
    *,
    hidden_size: int,
    d_inner: int,
    d_state: int,
    d_conv: int,
    dt_rank: int,
    conv_bias: bool = True,
    proj_bias: bool = False,
    inner_norms: bool = False,
    count: int = 1,
) -> tuple[ParamGroup, ...]:
    """A Mamba (selective SSM) mixer as in Jamba.

    Tensors: ``in_proj (2*d_inner, hidden)``; depthwise ``conv1d`` weight
    ``(d_inner, 1, d_conv)`` [+ bias ``(d_inner,)``]; ``x_proj (dt_rank + 2*d_state,
    d_inner)``; ``dt_proj (d_inner, dt_rank)`` + bias; ``A_log (d_inner, d_state)``;
    ``D (d_inner,)``; ``out_proj (hidden, d_inner)``; with ``inner_norms`` the
    RMSNorms over dt (``dt_rank``), B and C (``d_state`` each).
    ``proj_bias`` adds biases to ``in_proj`` and ``out_proj``.

    Worked example, Jamba-v0.1 (hidden 4096, d_inner 8192, d_state 16, d_conv 4,
    dt_rank 256, conv bias, no proj bias, inner norms): 105,308,448 parameters.

    Sources: Gu & Dao 2023 (Mamba); transformers ``JambaMambaMixer``
    (models/jamba/modeling_jamba.py).
    """
    groups = [
        *linear(f"{prefix}.in_proj", hidden_size, 2 * d_inner, bias=proj_bias, count=count),
        ParamGroup(name=f"{prefix}.conv1d.weight", shape=(d_inner, 1, d_conv), count=count, kind="conv"),
    ]
    if conv_bias:
        groups.append(ParamGroup(name=f"{prefix}.conv1d.bias", shape=(d_inner,), count=count, kind="bias"))
    groups += [
        *linear(f"{prefix}.x_proj", d_inner, dt_rank + 2 * d_state, count=count),
        *linear(f"{prefix}.dt_proj", dt_rank, d_inner, bias=True, count=count),
        ParamGroup(name=f"{prefix}.A_log", shape=(d_inner, d_state), count=count, kind="other"),
        ParamGroup(name=f"{prefix}.D", shape=(d_inner,), count=count, kind="other"),
        *linear(f"{prefix}.out_proj", d_inner, hidden_size, bias=proj_bias, count=count),
    ]
    if inner_norms:
        groups += [
            *norm(f"{prefix}.dt_layernorm", dt_rank, count=count),
            *norm(f"{prefix}.b_layernorm", d_state, count=count),
            *norm(f"{prefix}.c_layernorm", d_state, count=count),
        ]
    return tuple(groups)
