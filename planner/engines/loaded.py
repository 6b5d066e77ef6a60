"""Weights as an engine loads them: which layers a stage holds, and the layouts its kernels pick.

A checkpoint's bytes (:func:`planner.model.params.weight_bytes`) are not what an engine
holds after loading: its MoE kernels pad the experts, repack them and keep extra copies
of their scales, its rotary embedding keeps a cos/sin cache, and which kernel it picks
depends on the engine version and the GPU's compute capability. This module turns a
model's parameter groups into the bytes one GPU of one pipeline stage holds.

Design notes (assumptions, each with the file it was read from):
    1. GPU generation from its name (:func:`gpu_capability`): H100/H200/H800/H20/GH200 are
       SM 9.0 (Hopper); B200/B300/GB200/GB300 SM 10.0; RTX 50xx and RTX PRO 6000 Blackwell
       SM 12.0; A100/A800 SM 8.0; A10/A40/RTX A-series/RTX 30xx SM 8.6; L4/L40/L20/RTX 40xx/
       RTX 6000 Ada SM 8.9. An unknown name is taken as Hopper, the usual datacenter card.
    2. vLLM's MXFP4 MoE backend (vllm/model_executor/layers/quantization/mxfp4.py,
       ``get_mxfp4_backend`` and ``Mxfp4MoEMethod.create_weights``):
       * Hopper, vLLM 0.11+ as its docker image ships it (``triton_kernels`` importable, torch
         >= 2.8.1): OpenAI's Triton kernels. ``create_weights`` pads the per-GPU
         intermediate size to a multiple of 64; ``process_weights_after_loading`` turns
         the biases into fp32 and ``_swizzle_mxfp4`` (quantization/utils/mxfp4_utils.py)
         converts values and scales to the Hopper layouts of triton_kernels
         (tensor_details/layout_details/hopper_value.py: rows to a multiple of 16 and
         packed bytes to 32; hopper_scale.py: rows to 256, scale columns to 2). The new
         scale tensor lives in the precision config while ``layer.w13_weight_scale`` keeps
         the checkpoint-layout scales, so scales are held twice.
       * Hopper, vLLM 0.10.x: Marlin (below), read in each release's wheel. 0.10.0-0.10.1.1
         pin torch 2.7.1, and ``Mxfp4MoEMethod._should_use_marlin`` picks Marlin on SM 9.0
         under torch 2.8.0 (or without ``triton_kernels``); 0.10.2 (torch 2.8.0) reaches
         Triton only through ``get_mxfp4_backend`` when ``triton_kernels`` imports, which
         no vLLM wheel requires (METADATA lists no triton_kernels). For gpt-oss-120b on
         one H100 Marlin's padding (intermediate 2880 -> 2944, hidden 2880 -> 3072) loads
         about 5 GiB more than the checkpoint. Triton under torch < 2.8.1 (0.10.2, 0.11.0
         with triton_kernels installed) skips the swizzle (``StridedLayout``: the
         checkpoint's bytes); a 0.11+ install without triton_kernels falls back to Marlin
         as well (:func:`vllm_mxfp4_layout`; not what the v0.11 / current profiles price).
       * Ampere / Ada / consumer Blackwell (SM 8.x, 12.x): Marlin, intermediate to a
         multiple of 128 and hidden to 256 (``n % 256 == 0 and k % 128 == 0`` of the Marlin
         MoE kernel), biases kept in bf16; ``prepare_moe_fp4_layer_for_marlin``
         (quantization/utils/marlin_utils_fp4.py) repacks to the same byte count.
       * Datacenter Blackwell (SM 10.x) with FlashInfer (2025-26 builds): TRT-LLM-gen
         kernels, intermediate and hidden to 256, biases fp32 (same file,
         ``SM100_FI_MXFP4_BF16``); v0.10 used the Triton kernels there too.
       Only the experts are MXFP4: attention, router, embeddings and ``lm_head`` are
       bf16 (``Mxfp4Config.get_quant_method`` falls back to ``UnquantizedLinearMethod``).
       ``w2_bias`` (E, hidden) is whole on every GPU (only rank 0 loads real values).
    3. FP8 with 128 x 128 block scales (DeepSeek-V3, Qwen3-FP8): one fp32 scale per block
       *of this GPU's partition* (vllm/model_executor/layers/quantization/fp8.py,
       ``Fp8LinearMethod.create_weights``: ``ceil(out_per_partition / 128) x
       ceil(in_per_partition / 128)``); column-parallel layers split rows, row-parallel
       layers (``o_proj``, ``down_proj``, ``out_proj``) split columns. DeepSeek MLA's
       down-projections (``q_a_proj``, ``kv_a_proj_with_mqa``) are not split at all
       (:data:`REPLICATED_LEAVES`).
    4. GPTQ / AWQ int4 with Marlin (gptq_marlin.py, awq_marlin.py): repacking keeps the
       byte count of packed weights, scales and zero points, so the checkpoint's bytes
       stand. NVFP4 follows its own format's bytes when the model carries it (plus note 6 on Blackwell).
    5. Rotary cos/sin cache (vllm/model_executor/layers/rotary_embedding.py,
       ``RotaryEmbedding._compute_cos_sin_cache``): ``max_position_embeddings x
       rotary_dim`` in the dtype ``get_rope`` gets: the model dtype, except gpt-oss,
       whose ``OAIAttention`` asks for float32 (vllm/model_executor/models/gpt_oss.py).
       One cache is shared by every layer (``get_rope`` memoizes by its arguments).
    6. NVFP4 on Blackwell (SM 10.x / 12.x; vllm/model_executor/layers/quantization/utils/nvfp4_utils.py,
       used by the CUTLASS and FlashInfer kernels of model_executor/kernels/linear/nvfp4/ and by the
       CUTLASS MoE path of quantization/modelopt.py): ``swizzle_blockscale`` replaces each fp8 scale
       matrix (``rows x cols / 16`` of one partition, per expert for MoE) by one padded to a
       multiple of 128 rows and 4 scale columns, and ``pad_nvfp4_weight_for_cutlass`` pads a dense
       linear's packed values to a multiple of 32 rows and 32 values per row. vLLM fuses ``q/k/v``
       and ``gate/up`` into one partition before padding (``QKVParallelLinear``,
       ``MergedColumnParallelLinear``). Hopper and older run NVFP4 through Marlin
       (quantization/utils/marlin_utils_fp4.py), which repacks to the same byte count. The
       shapes of most checkpoints are already aligned (no padding); Nemotron 3 Nano's 1,856-row
       experts and Gemma 4 26B-A4B's at TP 2 are not.

Worked example (case V21, gpt-oss-20b on an H100, vLLM late 2025): 24 layers x 32
experts, hidden 2880, intermediate 2880 (no padding at 64). Values 12,441,600 B per
expert, checkpoint scales 777,600 B, swizzled scales (5888 x 90 + 3072 x 90) =
806,400 B, fp32 biases 34,560 B; x 768 experts = 10,798,202,880 B; plus 3,595,648,128 B of
bf16 attention, router, norms, embedding and ``lm_head`` and a 32 MiB fp32 rope cache:
14,427,405,440 B = 13.44 GiB (12.83 GiB at checkpoint bytes). Case V15, gpt-oss-120b TP 4 on
A100s (Marlin): 17.2171 GiB. These are tensor bytes; vLLM's "Model loading took" counts the caching
allocator's blocks, which the vLLM planner adds (:mod:`planner.engines.weight_tensors`): V21
13.4665 GiB (printed 13.47), V15 17.2209 GiB (printed 17.2217 on every worker of its log).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.model import ModelSpec
from planner.model.dtypes import AUTO_WEIGHT_DTYPE, StorageFormat, activation_dtype, checkpoint_dtype
from planner.model.params import ParamGroup, weight_bytes
from planner.units import ceil_div

# --- GPUs -----------------------------------------------------------------------------

_CAPABILITY_TAGS: tuple[tuple[tuple[str, ...], tuple[int, int]], ...] = (
    (("gb300", "gb200", "b300", "b200", "b100"), (10, 0)),
    (("gb10", "dgx spark"), (12, 1)),
    (("rtx 50", "rtx pro 6000", "rtx-50", "rtx-pro-6000", "blackwell"), (12, 0)),
    (("h100", "h200", "h800", "h20", "gh200", "hopper"), (9, 0)),
    (("a100", "a800", "a30"), (8, 0)),
    (("l40", "l4", "l20", "rtx 40", "rtx-40", "ada"), (8, 9)),
    (("a10", "a40", "rtx a", "rtx-a", "rtx 30", "rtx-30", "3090", "3080", "3060", "a6000", "a5000", "a4000"),
     (8, 6)),
    (("t4", "rtx 20", "rtx-20", "2080", "turing"), (7, 5)),
    (("v100", "volta"), (7, 0)),
)
"""Name tags of each NVIDIA generation, most specific first, and their compute capability."""

DEFAULT_CAPABILITY = (9, 0)
"""Compute capability assumed for a GPU name the table does not know (Hopper)."""


def gpu_capability(gpu_name: str) -> tuple[int, int]:
    """The CUDA compute capability of a GPU from its name or catalog id (design note 1).

    Examples: ``"H100 SXM5 80GB"`` -> (9, 0); ``"nvidia-a100-sxm-80gb"`` -> (8, 0);
    ``"GeForce RTX 3090"`` -> (8, 6); ``""`` -> (9, 0).
    """
    return nvidia_capability(gpu_name) or DEFAULT_CAPABILITY


def nvidia_capability(gpu_name: str) -> tuple[int, int] | None:
    """The CUDA compute capability of a known NVIDIA GPU from its name or catalog id, or None for a name the
    generation table does not know (another vendor's part, an unknown name): :func:`gpu_capability` without its
    Hopper default.

    Examples: ``"L40S"`` -> (8, 9); ``"AMD Instinct MI300X"`` -> None.
    """
    name = gpu_name.lower().replace("nvidia ", "").replace("geforce ", "")
    for tags, capability in _CAPABILITY_TAGS:
        if any(tag in name for tag in tags):
            return capability
    return None


# --- MXFP4 experts ----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Mxfp4Layout:
    """How an engine stores MXFP4 experts on one GPU (design note 2).

    Attributes:
        backend: Kernel family (``triton``, ``marlin``, ``flashinfer``, ``checkpoint``).
        inter_multiple: The per-GPU intermediate size is padded to a multiple of this.
        hidden_multiple: The hidden size is padded to a multiple of this (1 = none).
        bias_bytes: Bytes per expert-bias element after loading (4 = fp32, 2 = bf16).
        value_pack: ``(rows, bytes)`` multiples of the swizzled value matrix, or None.
        scale_pack: ``(rows, columns)`` multiples of a swizzled copy of the scales that is
            held beside the checkpoint-layout scales, or None (no copy).
    """

    backend: str
    inter_multiple: int = 1
    hidden_multiple: int = 1
    bias_bytes: int = 2
    value_pack: tuple[int, int] | None = None
    scale_pack: tuple[int, int] | None = None


MXFP4_CHECKPOINT = Mxfp4Layout(backend="checkpoint")
"""The checkpoint's own layout: no padding, bf16 biases (engines not modelled here)."""

_MXFP4_TRITON_HOPPER = Mxfp4Layout(backend="triton", inter_multiple=64, bias_bytes=4, value_pack=(16, 32),
                                   scale_pack=(256, 2))
_MXFP4_TRITON_BLACKWELL = Mxfp4Layout(backend="triton", inter_multiple=64, bias_bytes=4, scale_pack=(128, 8))
_MXFP4_MARLIN = Mxfp4Layout(backend="marlin", inter_multiple=128, hidden_multiple=256, bias_bytes=2)
_MXFP4_FLASHINFER_SM100 = Mxfp4Layout(backend="flashinfer", inter_multiple=256, hidden_multiple=256, bias_bytes=4)

_VLLM_BEFORE_0_11 = frozenset({"vllm-v0", "vllm-v1-jan2025", "vllm-v1-2025", "vllm-v0.10"})
"""vLLM profiles before 0.11: Marlin on Hopper, Triton without FlashInfer on datacenter Blackwell (design note 2)."""


def vllm_mxfp4_layout(profile_id: str, gpu_name: str) -> Mxfp4Layout:
    """The MXFP4 expert layout a vLLM profile picks on a GPU (design note 2).

    Examples: ``("vllm-v0.11", "H100 SXM5 80GB")`` -> Triton with Hopper swizzle;
    ``("vllm-v0.10", "H100 SXM5 80GB")`` and ``("vllm-v0.10", "A100 SXM4 80GB")`` -> Marlin (128 / 256 padding).

    Sources: vllm/model_executor/layers/quantization/mxfp4.py ``get_mxfp4_backend`` (0.10.2+;
    ``Mxfp4MoEMethod._should_use_marlin`` in 0.10.0-0.10.1.1), ``Mxfp4MoEMethod.create_weights`` /
    ``process_weights_after_loading``; quantization/utils/mxfp4_utils.py ``_swizzle_mxfp4``.
    """
    major, _ = gpu_capability(gpu_name)
    if major in (8, 12):
        return _MXFP4_MARLIN
    old = profile_id in _VLLM_BEFORE_0_11
    if major == 10:
        return _MXFP4_TRITON_BLACKWELL if old else _MXFP4_FLASHINFER_SM100
    if major == 9:
        return _MXFP4_MARLIN if old else _MXFP4_TRITON_HOPPER
    return _MXFP4_MARLIN  # older GPUs: Marlin is the only kernel that accepts them


def _pad(n: int, multiple: int) -> int:
    return ceil_div(n, multiple) * multiple


@dataclass(frozen=True)
class Mxfp4Projection:
    """One projection (fused gate+up ``w13``, or down ``w2``) of one MXFP4 expert on one GPU [bytes].

    Attributes:
        checkpoint_values: Packed values in the checkpoint's shape (rows x packed bytes, unpadded).
        values: Packed values as the layout holds them (``value_pack`` padding).
        scales: The checkpoint-layout e8m0 scales (one byte per 32 values), which stay.
        scale_copy: The swizzled copy of the scales the layout keeps beside them (0: none).
        bias_rows: Elements of its bias (times :attr:`Mxfp4Layout.bias_bytes` once loaded, 2 as created).
    """

    checkpoint_values: int
    values: int
    scales: int
    scale_copy: int
    bias_rows: int


def mxfp4_projections(*, hidden: int, intermediate: int, tensor_parallel_size: int,
                      layout: Mxfp4Layout) -> tuple[Mxfp4Projection, Mxfp4Projection]:
    """``(w13, w2)`` of one MXFP4 expert on one GPU (design note 2).

    ``I = pad(intermediate // tp)``, ``H = pad(hidden)``; w13 is ``2I`` rows of ``H / 2`` packed
    bytes, w2 ``H`` rows of ``I / 2``; scales ``rows x packed x 2 / 32``.

    Sources: design note 2.
    """
    inter = _pad(intermediate // tensor_parallel_size, layout.inter_multiple)
    hid = _pad(hidden, layout.hidden_multiple)
    out = []
    for rows, packed in ((2 * inter, hid // 2), (hid, inter // 2)):
        srows, scols = rows, packed * 2 // 32
        vrows, vbytes = (rows, packed) if layout.value_pack is None else (
            _pad(rows, layout.value_pack[0]), _pad(packed, layout.value_pack[1]))
        copy = 0 if layout.scale_pack is None else \
            _pad(srows, layout.scale_pack[0]) * _pad(scols, layout.scale_pack[1])
        out.append(Mxfp4Projection(checkpoint_values=rows * packed, values=vrows * vbytes, scales=srows * scols,
                                   scale_copy=copy, bias_rows=rows))
    return out[0], out[1]


def mxfp4_expert_bytes(*, hidden: int, intermediate: int, tensor_parallel_size: int, layout: Mxfp4Layout,
                       with_bias: bool) -> int:
    """Bytes of one MXFP4 expert (fused gate+up and down) on one GPU [bytes].

    The sum over :func:`mxfp4_projections` of values, scales and the swizzled scale copy, plus biases
    ``(2I + H) x bias_bytes``. Worked example (V15, Marlin, TP 4): I = 768, H = 3072: 2,359,296 +
    1,179,648 + 147,456 + 73,728 + 9,216 = 3,769,344 B.

    Sources: design note 2.
    """
    total = 0
    for p in mxfp4_projections(hidden=hidden, intermediate=intermediate, tensor_parallel_size=tensor_parallel_size,
                               layout=layout):
        total += p.values + p.scales + p.scale_copy + (p.bias_rows * layout.bias_bytes if with_bias else 0)
    return total


def mxfp4_expert_groups(params: tuple[ParamGroup, ...], weight_format: StorageFormat,
                        torch_dtype: str | None) -> dict[str, ParamGroup]:
    """The routed-expert groups by leaf (``gate_up_proj``, ``down_proj``, their biases) when they load in an
    MXFP4 layout (an explicit ``mxfp4`` request, or ``auto`` on a checkpoint that ships them so), else {}."""
    experts = {g.name.rsplit(".", 1)[-1]: g for g in params if ".experts." in g.name}
    gate_up = experts.get("gate_up_proj")
    if weight_format.name == "mxfp4" or (
            gate_up is not None and _group_format(gate_up, weight_format, torch_dtype).name == "mxfp4"):
        return experts
    return {}


# --- pipeline stages ----------------------------------------------------------------------


def pipeline_layer_ranges(num_layers: int, pipeline_parallel_size: int) -> tuple[range, ...]:
    """Decoder layers held by each pipeline stage.

    ``num_layers // pp`` each; the remainder goes one each to the stages just
    before the last (the last stage also holds the LM head). Worked example:
    30 layers over 4 stages -> 7, 8, 8, 7.

    Raises:
        ValueError: ``pipeline_parallel_size`` < 1 or > ``num_layers``.

    Sources: vLLM ``get_pp_indices`` (vllm/distributed/utils.py).
    """
    pp = pipeline_parallel_size
    if pp < 1 or pp > num_layers:
        raise ValueError(f"pipeline_parallel_size must be between 1 and the {num_layers} layers, got {pp}")
    sizes = [num_layers // pp] * pp
    for i in range(2, num_layers % pp + 2):
        sizes[-i] += 1
    ranges, start = [], 0
    for size in sizes:
        ranges.append(range(start, start + size))
        start += size
    return tuple(ranges)


def stage_params(model: ModelSpec, stage: int, pipeline_parallel_size: int) -> tuple[ParamGroup, ...]:
    """Parameter groups one pipeline stage holds.

    Per-layer groups (names starting with ``layers.``) go where their layers are: a group
    that names its layers (:attr:`planner.model.params.ParamGroup.layers`, e.g. the dense MLP
    of DeepSeek's first three layers and its experts in the other 58) contributes its tensors
    of the stage's layers; one in every layer is apportioned by the stage's share of layers
    (a group present in only some layers without naming them, as a GGUF header gives, is
    apportioned proportionally: an approximation); the embedding goes to the first stage, the
    final norm and ``lm_head`` to the last. A tied model's last stage also holds a copy of the
    embedding table as its LM head when ``pp > 1``.

    Sources: vLLM ``PPMissingLayer`` / ``make_layers`` (vllm/model_executor/models/utils.py).
    """
    pp = pipeline_parallel_size
    if pp == 1:
        return model.params
    ranges = pipeline_layer_ranges(model.num_layers, pp)
    share = len(ranges[stage])
    first, last = stage == 0, stage == pp - 1
    has_lm_head = any(g.kind == "lm_head" for g in model.params)
    out = []
    for group in model.params:
        if group.name.startswith("layers.") and group.layers:
            inside = sum(1 for index in group.layers if index in ranges[stage])
            count = group.count * inside // len(group.layers)
            if count:
                out.append(replace(group, count=count))
        elif group.name.startswith("layers."):
            count = group.count * share // model.num_layers if group.count % model.num_layers == 0 \
                else round(group.count * share / model.num_layers)
            if count:
                out.append(replace(group, count=count))
        elif group.kind == "embedding":
            if first:
                out.append(group)
            if last and not has_lm_head:
                out.append(replace(group, name="lm_head.weight", kind="lm_head"))
        elif last:
            out.append(group)
    return tuple(out)


# --- whole stage --------------------------------------------------------------------------

ROW_PARALLEL_LEAVES = frozenset({"o_proj", "down_proj", "out_proj", "dense", "c_proj", "wo", "w2", "fc2"})
"""Linear layers vLLM splits along their input (``RowParallelLinear``); the others split rows."""

REPLICATED_LEAVES = frozenset({"q_a_proj", "kv_a_proj_with_mqa"})
"""Linear layers every tensor-parallel GPU holds whole: DeepSeek MLA's down-projections
(``ReplicatedLinear`` / the fused ``fused_qkv_a_proj`` with ``disable_tp``,
vllm/model_executor/models/deepseek_v2.py ``DeepseekV2MLAAttention``)."""


def rope_cache_bytes(model: ModelSpec, activation_bytes: int) -> int:
    """vLLM's rotary cos/sin cache: ``max_position_embeddings x head_dim x e`` [bytes] (design note 5).

    ``e`` is the model dtype's bytes, 4 for gpt-oss (float32 cache). Llama-3.1-8B:
    131,072 x 128 x 2 B = 32 MiB; gpt-oss: 131,072 x 64 x 4 B = 32 MiB. MLA models cache
    the rope part only (``qk_rope_head_dim``), approximated here by ``head_dim``.

    Sources: vLLM ``RotaryEmbedding._compute_cos_sin_cache``
    (vllm/model_executor/layers/rotary_embedding.py); ``OAIAttention``
    (vllm/model_executor/models/gpt_oss.py).
    """
    element = 4 if model.model_type == "gpt_oss" else activation_bytes
    return (model.max_position_embeddings or 0) * model.head_dim * element


def _group_format(group: ParamGroup, weight_format: StorageFormat, torch_dtype: str | None) -> StorageFormat:
    """The format :func:`planner.model.params.weight_bytes` gives a group (storage, ``auto``, or the request)."""
    if group.storage:
        return group.storage
    if weight_format.name == AUTO_WEIGHT_DTYPE:
        return group.checkpoint or checkpoint_dtype(torch_dtype)
    return weight_format if group.kind == "linear" else activation_dtype(weight_format, torch_dtype)


def _block_scaled_bytes(group: ParamGroup, fmt: StorageFormat, tp: int) -> int:
    """One GPU's share of a block-scaled matrix group, scales per partition (design note 3)."""
    rows, cols = group.shape[0], group.numel // group.shape[0]
    leaf = group.name.removesuffix(".weight").rsplit(".", 1)[-1]
    shape = (rows, ceil_div(cols, tp)) if leaf in ROW_PARALLEL_LEAVES else (ceil_div(rows, tp), cols)
    return fmt.bytes_for_matrix(shape) * group.count


def loaded_weight_bytes(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1,
                        stage: int = 0, pipeline_parallel_size: int = 1, *, engine_extras: bool = True,
                        mxfp4: Mxfp4Layout = MXFP4_CHECKPOINT, nvfp4_swizzle: bool = False) -> int:
    """Weights one GPU holds after loading, as the engine reports them [bytes].

    Args:
        model: The model.
        weight_format: The requested weight format (``auto``: each tensor as the checkpoint ships it).
        tensor_parallel_size: GPUs each layer is split over.
        stage: Pipeline stage of this GPU.
        pipeline_parallel_size: Pipeline stages.
        engine_extras: Add the rope cache, the MXFP4 layout and per-partition block scales
            (False: the checkpoint's bytes, as llama.cpp and transformers hold them).
        mxfp4: How MXFP4 experts are laid out (:func:`vllm_mxfp4_layout`).
        nvfp4_swizzle: Add the padding of NVFP4 scales and values the Blackwell kernels need
            (design note 6; :func:`nvfp4_swizzles`).

    MXFP4 applies to the routed experts only (``.experts.`` groups, whether the request
    names ``mxfp4`` or the checkpoint ships it with ``auto``); with an explicit ``mxfp4``
    the other linear layers stay in the activation dtype, as vLLM keeps them.

    Sources: module docstring.
    """
    params = stage_params(model, stage, pipeline_parallel_size)
    tp = tensor_parallel_size
    explicit = weight_format.name == "mxfp4"
    # without the engine layout every group is at its checkpoint (or requested) bytes
    experts = mxfp4_expert_groups(params, weight_format, model.torch_dtype) if engine_extras else {}
    plain: list[ParamGroup] = []
    total = 0
    for group in params:
        fmt = _group_format(group, weight_format, model.torch_dtype)
        is_expert = ".experts." in group.name
        if is_expert and experts:
            continue
        if engine_extras and tp > 1 and group.name.removesuffix(".weight").rsplit(".", 1)[-1] in REPLICATED_LEAVES:
            total += weight_bytes((group,), weight_format, model.torch_dtype, 1)
            continue
        if explicit and group.kind == "linear" and not is_expert:
            plain.append(replace(group, storage=activation_dtype(weight_format, model.torch_dtype)))
        elif engine_extras and fmt.block_shape is not None and len(group.shape) == 2:
            total += _block_scaled_bytes(group, fmt, tp)
        else:
            plain.append(group)
    total += weight_bytes(tuple(plain), weight_format, model.torch_dtype, tp)
    if engine_extras and nvfp4_swizzle:
        total += nvfp4_padding_bytes(tuple(g for g in plain if _group_format(g, weight_format, model.torch_dtype)
                                           .name == "nvfp4" and len(g.shape) == 2), tp)
    total += _mxfp4_bytes(experts, tp, mxfp4)
    if engine_extras:
        total += rope_cache_bytes(model, activation_dtype(weight_format, model.torch_dtype).bytes_for(1))
    return total


def nvfp4_swizzles(gpu_name: str) -> bool:
    """Whether vLLM's NVFP4 kernels on this GPU pad scales and values (design note 6): Blackwell, SM 10.x / 12.x."""
    return gpu_capability(gpu_name)[0] in (10, 12)


_FUSED_ROWS = {"q_proj": "qkv_proj", "k_proj": "qkv_proj", "v_proj": "qkv_proj",
               "gate_proj": "gate_up_proj", "up_proj": "gate_up_proj"}
"""Column-parallel projections vLLM loads into one fused partition (``QKVParallelLinear``,
``MergedColumnParallelLinear``): their rows are padded together."""


def nvfp4_padding_bytes(groups: tuple[ParamGroup, ...], tensor_parallel_size: int) -> int:
    """Bytes the Blackwell NVFP4 kernels add to these NVFP4 matrix groups on one GPU (design note 6) [bytes].

    Per partition of ``rows x cols`` (column-parallel layers split rows, row-parallel ones columns;
    ``q/k/v`` and ``gate/up`` fused into one partition): scales ``pad(rows, 128) x pad(cols / 16, 4)``
    instead of ``rows x cols / 16`` (experts: per expert), and for dense layers values
    ``pad(rows, 32) x pad(cols, 32) / 2`` instead of ``rows x cols / 2``. Zero for aligned shapes.
    Worked example (Nemotron 3 Nano's routed ``up_proj``, 1,856 x 2,688, TP 1): scales
    1,920 x 168 - 1,856 x 168 = 10,752 B per expert.

    Sources: vllm/model_executor/layers/quantization/utils/nvfp4_utils.py (``swizzle_blockscale``,
    ``pad_nvfp4_weight_for_cutlass``).
    """
    tp = tensor_parallel_size
    fused: dict[tuple[str, int], list[int]] = {}  # (fused name, count) -> [rows of one partition, cols]
    extra = 0
    for group in groups:
        rows, cols = group.shape[0], group.numel // group.shape[0]
        leaf = group.name.removesuffix(".weight").rsplit(".", 1)[-1]
        expert = ".experts." in group.name
        if leaf in ROW_PARALLEL_LEAVES:
            cols = ceil_div(cols, tp)
        else:
            rows = ceil_div(rows, tp)
        if not expert and leaf in _FUSED_ROWS:
            key = (group.name.rsplit(".", 2 if group.name.endswith(".weight") else 1)[0] + "." + _FUSED_ROWS[leaf],
                   group.count)
            entry = fused.setdefault(key, [0, cols])
            entry[0] += rows
            continue
        extra += _nvfp4_partition_padding(rows, cols, values=not expert) * group.count
    for (_, count), (rows, cols) in fused.items():
        extra += _nvfp4_partition_padding(rows, cols, values=True) * count
    return extra


def _nvfp4_partition_padding(rows: int, cols: int, *, values: bool) -> int:
    """Padding bytes of one NVFP4 partition of ``rows x cols`` values (:func:`nvfp4_padding_bytes`)."""
    scale_cols = ceil_div(cols, 16)
    extra = _pad(rows, 128) * _pad(scale_cols, 4) - rows * scale_cols
    if values:
        extra += (_pad(rows, 32) * _pad(cols, 32) - rows * cols) // 2
    return extra


def _mxfp4_bytes(experts: dict[str, ParamGroup], tp: int, layout: Mxfp4Layout) -> int:
    """MXFP4 expert groups (``gate_up_proj``, ``down_proj`` and their biases) on one GPU [bytes]."""
    gate_up = experts.get("gate_up_proj")
    if gate_up is None:
        if experts:  # experts without the fused layout: checkpoint bytes
            return sum(ceil_div(g.total_numel * 17, 32 * tp) for g in experts.values())
        return 0
    with_bias = "gate_up_proj_bias" in experts
    per_expert = mxfp4_expert_bytes(hidden=gate_up.shape[1], intermediate=gate_up.shape[0] // 2,
                                    tensor_parallel_size=tp, layout=layout, with_bias=with_bias)
    return per_expert * gate_up.count
