"""The weight tensors one vLLM rank creates, in order, and what the CUDA caching allocator adds to them.

vLLM counts its weights as allocated bytes (:mod:`planner.engines.allocator`), so the shapes of the
tensors it creates matter, not only their sum. It fuses what the checkpoint stores apart:

* ``q_proj``, ``k_proj``, ``v_proj`` of a layer into one ``qkv_proj`` (``QKVParallelLinear``) and
  ``gate_proj`` / ``up_proj`` into one ``gate_up_proj`` (``MergedColumnParallelLinear``), biases
  likewise (vllm/model_executor/layers/linear.py);
* the routed experts of a layer into one 3-D ``w13`` (gate and up) and one ``w2`` (down) tensor
  (``FusedMoE`` ``create_weights``, vllm/model_executor/layers/fused_moe/layer.py), each followed by
  its scales where the format has separate ones (fp8 block scales, ``weight_scale_inv``);
* MXFP4 experts as laid out by the kernel it picks (:class:`planner.engines.loaded.Mxfp4Layout`):
  values, checkpoint-layout scales and fp32 biases per layer, then, in
  ``process_weights_after_loading`` (after every layer is loaded), the swizzled scale copy
  (vllm/model_executor/layers/quantization/mxfp4.py).

Every attention layer also holds seven fp32 scalars on the GPU (``_k_scale``, ``_v_scale``,
``_q_scale``, ``_prob_scale`` from ``_init_kv_cache_quant``, and ``q_range``, ``k_range``,
``v_range``; vllm/attention/layer.py ``Attention.__init__``), one 512 B block each, and the model
the rotary cos/sin cache (:func:`planner.engines.loaded.rope_cache_bytes`) from its first layer.

Which free block a tensor lands in depends on what was freed before it, so the one load step that
frees much, the Triton swizzle of MXFP4 experts on Hopper, is replayed allocation by allocation
(:func:`_replay_hopper_swizzle`); elsewhere the tensors are replayed as created and kept (no other
step of these loaders frees enough to move a block).

Tensors within a group keep the catalog's order, which follows the checkpoint's module order
(embedding, then per layer attention, MLP or experts, norms; final norm and ``lm_head`` last).
A block-scaled or packed format's values and scales are separate tensors: values at the format's
whole-bit width (4 or 8 bits, or 16 for unquantized), the rest as scales.
"""

from __future__ import annotations

from planner.engines.allocator import CachingAllocator, allocated_bytes
from planner.engines.loaded import (
    _FUSED_ROWS,
    MXFP4_CHECKPOINT,
    REPLICATED_LEAVES,
    Mxfp4Layout,
    _group_format,
    mxfp4_expert_groups,
    mxfp4_projections,
    pipeline_layer_ranges,
    rope_cache_bytes,
    stage_params,
)
from planner.model import ModelSpec
from planner.model.dtypes import StorageFormat, activation_dtype
from planner.model.layers import FullAttention, MLAAttention
from planner.model.memo import model_memo, remember
from planner.model.params import SHARDED_KINDS, ParamGroup
from planner.units import ceil_div

ATTENTION_SCALARS = 7
"""fp32 scalars each vLLM ``Attention`` layer keeps on the GPU (module docstring)."""

MAX_WEIGHT_TENSORS = 1_048_576
"""Most weight tensors (experts apart, which are laid out as one tensor per layer) one rank's list may
hold: 550x the most of any catalog model (Kimi K3: 1,901) and above any spec a bounded config builds
(1,024 layers of some 30 tensors plus a 1,024-block tower). A spec above it was built around the
config bounds; it is refused before the per-tensor loop instead of filling memory."""


def _check_tensor_count(model: ModelSpec, params: tuple[ParamGroup, ...]) -> None:
    """Refuse a stage whose tensors (experts apart) exceed :data:`MAX_WEIGHT_TENSORS`.

    Raises:
        ValueError: naming the model, the count and the limit.
    """
    count = sum(g.count for g in params if ".experts." not in g.name)
    if count > MAX_WEIGHT_TENSORS:
        raise ValueError(f"{model.model_id}: {count:,} weight tensors to lay out; at most {MAX_WEIGHT_TENSORS:,} "
                         "are accepted (far above any published model): check the config's layer and tower counts")


def _split_bytes(fmt: StorageFormat, group: ParamGroup, shards: int) -> tuple[int, int]:
    """``(values, scales)`` bytes of one tensor of ``group`` on one of ``shards`` GPUs [bytes]."""
    total = ceil_div(fmt.bytes_for_matrix(group.shape), shards)
    bits = fmt.bits_per_element
    whole = 16 if bits >= 16 else 8 if bits >= 8 else 4
    values = ceil_div(group.numel * whole, 8 * shards)
    return (values, total - values) if values < total else (total, 0)


def _leaf(group: ParamGroup) -> tuple[str, str]:
    """``(module path, leaf)`` of a group name: ``layers.*.self_attn.q_proj.weight`` -> (``layers.*.self_attn``, ``q_proj``)."""
    name = group.name.removesuffix(".weight")
    head, _, leaf = name.rpartition(".")
    return head, leaf


def _mxfp4_tensors(gate_up: ParamGroup, with_bias: bool, tp: int, layout: Mxfp4Layout,
                   experts: int) -> tuple[list[int], list[int], dict]:
    """``(created, swizzled, swizzle)`` of one layer's ``experts`` MXFP4 experts
    (:func:`planner.engines.loaded.mxfp4_projections`, times the experts).

    ``created``: w13 values, scales (and fp32 biases), then w2's, as loaded; ``swizzled``: the swizzled
    scale copies. ``swizzle``: what the Hopper swizzle (:func:`_replay_hopper_swizzle`) works on, per
    projection ``(checkpoint values, swizzled values, checkpoint scales, swizzled scales, bf16 bias,
    fp32 bias)`` [bytes].
    """
    created, swizzled, swizzle = [], [], []
    for p in mxfp4_projections(hidden=gate_up.shape[1], intermediate=gate_up.shape[0] // 2,
                               tensor_parallel_size=tp, layout=layout):
        bias = (experts * p.bias_rows * 2, experts * p.bias_rows * layout.bias_bytes) if with_bias else (0, 0)
        created += [experts * p.values, experts * p.scales, *([bias[1]] if with_bias else [])]
        if layout.scale_pack is not None:
            swizzled.append(experts * p.scale_copy)
        swizzle.append((experts * p.checkpoint_values, experts * p.values, experts * p.scales,
                        experts * p.scale_copy, *bias))
    return created, swizzled, {"projections": swizzle}


def vllm_weight_tensors(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1,
                        stage: int = 0, pipeline_parallel_size: int = 1, *,
                        mxfp4: Mxfp4Layout = MXFP4_CHECKPOINT, replay: list | None = None) -> tuple[list[int], int]:
    """Bytes of each weight tensor one vLLM rank holds after loading, in creation order, and the attention
    scalars' count.

    Args:
        model, weight_format, tensor_parallel_size, stage, pipeline_parallel_size, mxfp4: as for
            :func:`planner.engines.loaded.loaded_weight_bytes`.

        replay: A list that receives, per layer of MXFP4 experts, where they were created and what
            :func:`_replay_hopper_swizzle` needs (for :func:`vllm_allocator_rounding_bytes`), then
            ``{"swizzled_at": index}`` of the first swizzled scale copy.

    Returns:
        ``(tensor bytes, number of attention scalars)``; the tensors' sum is close to
        ``loaded_weight_bytes`` (the same formats and splits, values and scales apart).

    Raises:
        ValueError: more tensors than :data:`MAX_WEIGHT_TENSORS` (a spec built around the config bounds).

    Sources: module docstring.
    """
    tp = tensor_parallel_size
    params = stage_params(model, stage, pipeline_parallel_size)
    _check_tensor_count(model, params)
    stage_layers = pipeline_layer_ranges(model.num_layers, pipeline_parallel_size)[stage]
    layers = len(stage_layers)
    routers = max((g.count for g in params if g.kind == "router"), default=0)
    moe_layers = routers if routers and routers <= layers else layers
    head, per_layer, tail = [], [], []
    for group in params:
        (per_layer if group.name.startswith("layers.") else head if group.kind == "embedding" else tail).append(group)

    explicit = weight_format.name == "mxfp4"

    def parts_of(group: ParamGroup) -> tuple[int, int]:
        fmt = _group_format(group, weight_format, model.torch_dtype)
        if explicit and group.kind == "linear" and ".experts." not in group.name:
            fmt = activation_dtype(weight_format, model.torch_dtype)  # as loaded_weight_bytes keeps them
        shards = tp if group.kind in SHARDED_KINDS and _leaf(group)[1] not in REPLICATED_LEAVES else 1
        return _split_bytes(fmt, group, shards)

    out: list[int] = []

    def emit(parts: tuple[int, int], times: int = 1) -> None:
        for _ in range(times):
            out.extend(n for n in parts if n)

    for group in head:
        emit(parts_of(group), group.count)
    experts = mxfp4_expert_groups(tuple(per_layer), weight_format, model.torch_dtype)
    mxfp4_experts = (experts["gate_up_proj"], "gate_up_proj_bias" in experts) if "gate_up_proj" in experts else None
    swizzled_all: list[int] = []
    replays: list[dict] = []
    for layer in range(layers):
        fused: dict[str, list[int]] = {}
        order: list[str | tuple[int, int]] = []
        for group in per_layer:
            if ".experts." in group.name:
                per = group.count // moe_layers if moe_layers else 0
                if layer >= moe_layers or per == 0:
                    continue
                if mxfp4_experts is not None:
                    if group is mxfp4_experts[0]:
                        created, swizzled, swizzle = _mxfp4_tensors(group, mxfp4_experts[1], tp, mxfp4, per)
                        swizzle["layer"] = layer
                        order += [(n, 0) for n in created]
                        order.append(swizzle)  # marks where the layer's experts were created
                        swizzled_all += swizzled
                    continue
                values, scales = parts_of(group)
                order.append((values * per, scales * per))
                continue
            if layer >= group.count:
                continue
            repeat = max(1, group.count // layers)
            path, leaf = _leaf(group)
            target = _FUSED_ROWS.get(leaf)
            if target is not None and repeat == 1:
                key = f"{path}.{target}{'.bias' if group.name.endswith('.bias') else ''}"
                values, scales = parts_of(group)
                if key in fused:
                    fused[key][0] += values
                    fused[key][1] += scales
                else:
                    fused[key] = [values, scales]
                    order.append(key)
                continue
            order += [parts_of(group)] * repeat
        for item in order:
            if isinstance(item, dict):
                item["end"] = len(out)  # the experts' created tensors are the last len(created) entries
                replays.append(item)
                continue
            emit(tuple(fused[item]) if isinstance(item, str) else item)
        if layer == 0:
            emit((rope_cache_bytes(model, activation_dtype(weight_format, model.torch_dtype).bytes_for(1)), 0))
    for group in tail:
        emit(parts_of(group), group.count)
    swizzled_at = len(out)
    out += swizzled_all
    attention = sum(1 for i in stage_layers if isinstance(model.layers[i], (FullAttention, MLAAttention)))
    if replay is not None:
        replay += replays
        replay.append({"swizzled_at": swizzled_at})
    return out, attention * ATTENTION_SCALARS


def _replay_pack_part(allocator: CachingAllocator, n: int, *, fourth: bool) -> tuple[int, int]:
    """One of ``_pack_bits``'s four int32 words, ``c(x) | (c(x >> 4) << 16)``: its temporaries in order."""
    m, f = allocator.malloc, allocator.free

    def compress(argument: tuple[int, int] | None) -> tuple[int, int]:
        x = m(n)  # x.to(torch.int32); the uint8 argument (if a temporary) dies with its last name
        if argument is not None:
            f(argument)
        terms = 3 if fourth else 2  # (x & a) << b, or'ed together
        total = None
        for _ in range(terms):
            masked = m(n)
            shifted = m(n)
            f(masked)
            if total is None:
                total = shifted
            else:
                joined = m(n)
                f(total)
                f(shifted)
                total = joined
        f(x)
        return total

    low = compress(None)  # x[..., i] is a view of the permuted copy
    high = compress(m(n // 4))  # x[..., i] >> 4: a uint8 temporary
    shifted = m(n)
    f(high)
    word = m(n)
    f(low)
    f(shifted)
    return word


def _replay_hopper_swizzle(allocator: CachingAllocator, values: int, scales: int, padded_scales: int
                           ) -> tuple[tuple[int, int], tuple[int, int]]:
    """The allocations and frees of one projection's Triton swizzle on Hopper; returns the handles of the
    new value and scale blocks. ``values``: bytes of the padded values; ``scales``, ``padded_scales``:
    of the checkpoint's and the swizzled scales [bytes].

    Values (``HopperMXValueLayout.swizzle_data``, triton_kernels/tensor_details/layout_details/
    hopper_value.py, the ``mx_axis`` layouts vLLM 0.11-0.12 call): ``F.pad`` (a copy even when nothing
    is padded: PyTorch ``constant_pad_nd`` returns a clone), ``permute(...).contiguous()``, then
    ``_pack_bits``, which works in int32 (each temporary as large as the values): four words, each
    ``c(x) | (c(x >> 4) << 16)`` with ``c`` two or three masked shifts, or'ed together with two
    unsigned right shifts; the result is the last of them. Scales (``HopperMXScaleLayout.swizzle_data``,
    hopper_scale.py): two contiguous copies of the transposed view, the padded copy, the permuted copy.
    Temporaries die when their last name does (CPython reference counting).
    """
    m, f = allocator.malloc, allocator.free
    padded = m(values)
    permuted = m(values)
    f(padded)
    words = [_replay_pack_part(allocator, values, fourth=i == 3) for i in range(4)]

    def unsigned_right_shift() -> tuple[int, int]:  # (x >> s) & mask
        shifted = m(values)
        masked = m(values)
        f(shifted)
        return masked

    second = unsigned_right_shift()
    partial = m(values)  # first | second'
    f(second)
    third = unsigned_right_shift()
    joined = m(values)  # ... | third'
    f(partial)
    f(third)
    result = m(values)  # ... | fourth: the swizzled values
    f(joined)
    for word in words:  # the four words are _pack_bits' locals, freed when it returns
        f(word)
    f(permuted)
    copy = m(scales)
    transposed = m(scales)
    f(copy)
    pad = m(padded_scales)
    f(transposed)
    scale = m(padded_scales)
    f(pad)
    return result, scale


def _replayed_allocated_bytes(tensors: list[int], scalars: int, replay: list[dict]) -> int:
    """Allocated bytes after vLLM creates ``tensors`` and swizzles each layer's MXFP4 experts on Hopper
    (``Mxfp4MoEMethod.process_weights_after_loading``, Triton backend, after every layer is loaded):
    fp32 copies of both biases replace the bf16 ones, each projection is swizzled
    (:func:`_replay_hopper_swizzle`), then the checkpoint-layout values are deleted."""
    swizzled_at = replay[-1]["swizzled_at"]
    layers = replay[:-1]
    allocator = CachingAllocator()
    created: dict[int, tuple[int, int]] = {}
    slots: dict[int, tuple[dict, int]] = {}  # tensor index -> (layer record, 0..5 within w13 v/s/b, w2 v/s/b)
    for record in layers:
        per = 3 if record["projections"][0][4] else 2
        for j in range(2 * per):
            slots[record["end"] - 2 * per + j] = (record, j)
    for i, n in enumerate(tensors[:swizzled_at]):
        slot = slots.get(i)
        if slot is not None:
            record, j = slot
            per = 3 if record["projections"][0][4] else 2
            projection = record["projections"][j // per]
            n = projection[0] if j % per == 0 else projection[4] if j % per == 2 else n  # as created
        if n > 0:
            created[i] = allocator.malloc(n)
    for _ in range(scalars):
        allocator.malloc(4)
    for record in layers:
        per = 3 if record["projections"][0][4] else 2
        first = record["end"] - 2 * per
        if per == 3:  # w13_bias.to(float32), w2_bias.to(float32), then each replaces its bf16 parameter
            for projection in record["projections"]:
                allocator.malloc(projection[5])
            for k in (2, per + 2):
                allocator.free(created[first + k])
        for _, padded_values, scales, padded_scales, _, _ in record["projections"]:
            _replay_hopper_swizzle(allocator, padded_values, scales, padded_scales)
        for k in (0, per):
            allocator.free(created[first + k])
    return allocator.allocated


def vllm_allocator_rounding_bytes(model: ModelSpec, weight_format: StorageFormat, tensor_parallel_size: int = 1,
                                  stage: int = 0, pipeline_parallel_size: int = 1, *,
                                  mxfp4: Mxfp4Layout = MXFP4_CHECKPOINT) -> int:
    """What vLLM's "Model loading took" counts beyond the weights' bytes on one rank [bytes] (>= 0).

    The caching allocator's blocks for :func:`vllm_weight_tensors` minus their sizes, plus the
    attention scalars' 512 B blocks; MXFP4 experts on Hopper are replayed through their swizzle's
    temporaries (:func:`_replayed_allocated_bytes`), which decide the blocks the swizzled tensors
    land in. Worked examples: Qwen2.5-7B geometry at TP 1 (case V07): 57 MiB of remainders +
    28 x 7 x 512 B = 59,869,184 B; Llama-3.1-8B: only the scalars (114,688 B); gpt-oss-20b on an
    H100 (case V21): 32,181,120 B (13.4665 GiB in all; its document prints "13.47").
    Memoized per model object and arguments (:mod:`planner.model.memo`).

    Sources: :mod:`planner.engines.allocator`; module docstring.
    """
    memo = model_memo(model)
    key = ("vllm_allocator_rounding", weight_format, tensor_parallel_size, stage, pipeline_parallel_size, mxfp4)
    found = memo.get(key)
    if found is None:
        replay: list[dict] = []
        tensors, scalars = vllm_weight_tensors(model, weight_format, tensor_parallel_size, stage,
                                               pipeline_parallel_size, mxfp4=mxfp4, replay=replay)
        if mxfp4.value_pack is not None and len(replay) > 1:
            allocated = _replayed_allocated_bytes(tensors, scalars, replay)
        else:
            allocated = allocated_bytes([*tensors, *([4] * scalars)])
        found = remember(memo, key, allocated - sum(tensors))
    return found
