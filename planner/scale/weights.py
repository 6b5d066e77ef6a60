"""Weights one GPU holds under data + expert parallelism, as the engine loads them.

The model's parameter groups are cut into up to three parts, each split over its own GPU count
(:class:`planner.scale.layout.RankLayout`): attention (``attention_tp``), the rest of the dense
weights (dense MLP, shared experts, norms, router, embeddings, ``lm_head``: ``dense_tp``) and the
routed experts (``expert_tp``, only the fullest GPU's ``local_experts`` of each MoE layer). Each part
is priced by the engine's own loader arithmetic (:func:`planner.engines.loaded.loaded_weight_bytes`,
plus for vLLM the caching allocator's rounding,
:func:`planner.engines.weight_tensors.vllm_allocator_rounding_bytes`); the rotary cache and the
attention scalars, which belong to no group, are counted once.

Design notes:
    1. Routed experts are the groups named ``.experts.`` (:func:`planner.model.params.moe_experts`);
       ``shared_experts`` / ``shared_expert`` groups are dense. An expert group's ``count`` is MoE
       layers x routed experts, so one GPU holds ``count // num_experts x local_experts`` of them.
    2. The allocator's rounding is taken per part, so blocks shared across parts are not merged:
       the sum can differ from one fused allocation by a few MiB (the tensor bytes are exact).
    3. Worked example (the README's hand check, in :mod:`planner.scale`): DeepSeek-V3.2 FP8 on 8 x H200,
       ``-dp 8 --enable-expert-parallel``: 256 experts / 8 = 32 per GPU, each 3 x 7,168 x 2,048 FP8
       values (44,040,192 B) + (32 x 56 + 56 x 16) fp32 block scales of the fused gate_up and the down
       projection (10,752 B), x 58 MoE layers x 32 = 81,758,552,064 B (76.14 GiB) of experts per GPU;
       attention, the three dense layers, shared experts, embeddings and ``lm_head`` (20,002,185,728 B
       with the rotary cache and the allocator's rounding, 18.63 GiB) are held whole on each GPU (TP 1
       inside each rank): 101,760,737,792 B (94.77 GiB) in all.

Sources: :mod:`planner.scale.layout` (placement), :mod:`planner.engines.loaded` (bytes per group).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines.loaded import loaded_weight_bytes, mxfp4_expert_groups, nvfp4_swizzles, vllm_mxfp4_layout
from planner.engines.weight_tensors import vllm_allocator_rounding_bytes
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.memo import model_memo, remember
from planner.model.params import ParamGroup
from planner.scale.layout import RankLayout

ATTENTION_MARKERS = (".self_attn.", ".attn.", ".attention.", ".linear_attn.", ".mixer.")
"""Name parts of attention-layer tensors (the catalog's module paths), split by ``attention_tp``."""


def is_routed_expert(group: ParamGroup) -> bool:
    """True for a routed-expert tensor group (design note 1)."""
    return ".experts." in group.name


def is_attention(group: ParamGroup) -> bool:
    """True for an attention tensor group (:data:`ATTENTION_MARKERS`)."""
    return any(mark in group.name for mark in ATTENTION_MARKERS)


@dataclass(frozen=True, kw_only=True)
class RankWeights:
    """One GPU's weights under a layout [bytes].

    Attributes:
        total_bytes: All weights on the fullest GPU, as the engine reports them.
        routed_expert_bytes: Its share of routed experts.
        dense_bytes: Everything else (attention, dense MLP, shared experts, embeddings, rotary cache).
        experts_per_layer: Routed experts of one MoE layer on that GPU.
    """

    total_bytes: int
    routed_expert_bytes: int
    dense_bytes: int
    experts_per_layer: int

    def to_dict(self) -> dict:
        """Plain dict for JSON."""
        return dict(self.__dict__)


def local_expert_groups(model: ModelSpec, local_experts: int) -> tuple[ParamGroup, ...]:
    """The routed-expert groups one GPU holds: ``count // num_experts x local_experts`` of each.

    Args:
        model: An MoE model.
        local_experts: Experts of one MoE layer on the GPU [experts].

    Raises:
        ValueError: an expert group whose count is not a multiple of the model's routed experts.
    """
    out = []
    for group in model.params:
        if not is_routed_expert(group):
            continue
        if group.count % model.num_experts:
            raise ValueError(f"{model.model_id}: expert group {group.name} holds {group.count} tensors, not a "
                             f"multiple of its {model.num_experts} experts; expert parallel cannot place it")
        out.append(replace(group, count=group.count // model.num_experts * local_experts))
    return tuple(out)


def _loader(model: ModelSpec, engine: str, family: str, weight_dtype_name: str, gpu_name: str):
    """``f(params, tp)``: one GPU's bytes of a model holding only ``params`` at tensor parallel ``tp``."""
    fmt = weight_dtype(weight_dtype_name)
    if family == "vllm":
        layout = vllm_mxfp4_layout(engine, gpu_name)
        swizzle = nvfp4_swizzles(gpu_name)

        def price(params: tuple[ParamGroup, ...], tp: int) -> int:
            part = replace(model, params=params)
            return (loaded_weight_bytes(part, fmt, tp, mxfp4=layout, nvfp4_swizzle=swizzle)
                    + vllm_allocator_rounding_bytes(part, fmt, tp, mxfp4=layout))
    else:
        def price(params: tuple[ParamGroup, ...], tp: int) -> int:
            return loaded_weight_bytes(replace(model, params=params), fmt, tp)
    return price


def rank_weight_bytes(model: ModelSpec, layout: RankLayout, *, engine: str, weight_dtype_name: str,
                      gpu_name: str = "") -> RankWeights:
    """The weights of the fullest GPU under ``layout`` (module docstring) [bytes].

    Args:
        model: The model.
        layout: Placement from :func:`planner.scale.layout.rank_layout`.
        engine: Engine profile id (picks vLLM's MXFP4 layout).
        weight_dtype_name: A key of :data:`planner.model.dtypes.WEIGHT_DTYPES`.
        gpu_name: GPU display name (kernel layouts by generation).

    Raises:
        ValueError: an unknown dtype, or expert groups that cannot be placed.

    Sources: module docstring.

    The figure is kept in the model's memo (:mod:`planner.model.memo`) under what it reads: the split sizes, the
    engine, the dtype and the GPU's kernel layout (MXFP4 layout, NVFP4 swizzle), so the Find page prices one
    layout once for every GPU of a kind and every user count.
    """
    key = ("rank_weight_bytes", layout.family, layout.attention_tp, layout.dense_tp, layout.expert_tp,
           layout.local_experts, engine, weight_dtype_name, _kernel_key(model, layout.family, engine,
                                                                        weight_dtype_name, gpu_name))
    memo = model_memo(model)
    cached = memo.get(key)
    if cached is None:
        cached = remember(memo, key, _rank_weight_bytes(model, layout, engine, weight_dtype_name, gpu_name))
    return cached


def _kernel_key(model: ModelSpec, family: str, engine: str, weight_dtype_name: str, gpu_name: str) -> tuple | None:
    """What of the GPU the loader's figure reads: vLLM's MXFP4 expert layout when the experts load as MXFP4, and
    the Blackwell NVFP4 padding when a tensor may be NVFP4 (any group stored or shipped so, or an ``nvfp4``
    request: a superset, so the memo never mixes GPUs whose figures differ)."""
    if family != "vllm":
        return None
    fmt = weight_dtype(weight_dtype_name)
    mxfp4 = vllm_mxfp4_layout(engine, gpu_name) if mxfp4_expert_groups(model.params, fmt, model.torch_dtype) else None
    names = {fmt.name, *(g.storage.name for g in model.params if g.storage),
             *(g.checkpoint.name for g in model.params if g.checkpoint)}
    return mxfp4, "nvfp4" in names and nvfp4_swizzles(gpu_name)


def _rank_weight_bytes(model: ModelSpec, layout: RankLayout, engine: str, weight_dtype_name: str,
                       gpu_name: str) -> RankWeights:
    """:func:`rank_weight_bytes` without the memo."""
    price = _loader(model, engine, layout.family, weight_dtype_name, gpu_name)
    parts: dict[int, list[ParamGroup]] = {}
    for group in model.params:
        if is_routed_expert(group):
            continue
        tp = layout.attention_tp if is_attention(group) else layout.dense_tp
        parts.setdefault(tp, []).append(group)
    experts = local_expert_groups(model, layout.local_experts) if model.num_experts else ()
    empty = price((), 1)  # the rotary cache and scalars, in every part's figure once
    dense = sum(price(tuple(groups), tp) for tp, groups in parts.items()) - (len(parts) - 1) * empty
    if not parts:
        dense = empty
    routed = price(experts, layout.expert_tp) - empty if experts else 0
    return RankWeights(total_bytes=dense + routed, routed_expert_bytes=routed, dense_bytes=dense,
                       experts_per_layer=layout.local_experts)


def rank_model(model: ModelSpec, layout: RankLayout) -> ModelSpec:
    """``model`` with its routed experts scaled to one GPU's share, for the engine-free plan
    (:func:`planner.budget.plan` at ``num_gpus = attention_tp``, which splits every linear group by it).

    Each expert group keeps ``ceil(layers x local_experts x attention_tp / expert_tp)`` tensors, so that
    split by ``attention_tp`` it holds the GPU's experts (whole under expert parallel, a ``1 / expert_tp``
    slice of each without). Checkpoint bytes only: the engine view (:func:`rank_weight_bytes`) adds the
    kernels' layouts. Dense models and plain layouts come back unchanged.

    Raises:
        ValueError: expert groups that cannot be placed.
    """
    if not model.num_experts or (layout.expert_tp == layout.attention_tp and layout.local_experts == model.num_experts):
        return model
    params = []
    for group in model.params:
        if is_routed_expert(group):
            layers = group.count // model.num_experts
            count = -(-layers * layout.local_experts * layout.attention_tp // layout.expert_tp)
            group = replace(group, count=count)
        params.append(group)
    local_expert_groups(model, layout.local_experts)  # the same placement checks
    return replace(model, params=tuple(params))
