"""vLLM (V0 and every V1 era): per-rank budget -> blocks -> printed tokens and concurrency.

Chain, per GPU (pipeline stage ``s``; every tensor-parallel GPU of a stage is alike, except V0's driver worker):

    requested = floor(total x gpu_memory_utilization)
    available = requested - weights - activation_peak - non_torch [- cudagraph on >= v0.21]
    num_blocks = min over GPUs of available // bytes_per_block
    tokens, concurrency = as the profile's era prints them (planner.engines.pages)

Weights are what the version's kernels hold on that GPU (:mod:`planner.engines.loaded`),
non-torch memory follows the topology (one node over NVLink or PCIe, or several nodes with
Ray: :func:`planner.engines.overheads.non_torch_bytes_by_topology`), CUDA graphs are 0 with
``enforce_eager``; a printed available memory per worker pins each worker's own budget and
the pool takes the smallest.

Start check: V1 refuses when one ``max_model_len`` request needs more KV than a
GPU has ("To serve at least one request with the model's max seq len (N), (X GiB
KV cache is needed, which is larger than the available KV cache memory (Y
GiB)..."), V0 when ``max_model_len > num_blocks x block_size``; either way
``engine_max_model_len`` is the largest length that would be accepted.

Sources: vllm/v1/worker/gpu_worker.py (``determine_available_memory``),
vllm/v1/core/kv_cache_utils.py (``get_kv_cache_configs``,
``_check_enough_kv_cache_memory``, ``_report_kv_cache_config``),
vllm/worker/worker.py (V0 ``determine_num_available_blocks``), vllm/v1/engine/core.py
(minimum blocks across workers); ENGINES.md section 1.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from operator import itemgetter

from planner.engines.launch import LaunchSpec, vllm_command_around_length
from planner.engines.loaded import loaded_weight_bytes, nvfp4_swizzles, pipeline_layer_ranges, vllm_mxfp4_layout
from planner.engines.overheads import activation_estimate, vllm_non_torch_bytes
from planner.engines.pages import (FullAttentionPages, KVLayout, concurrency_ratio, decoding_ratio,
                                   max_model_len_that_fits, printed_tokens_for_ratio)
from planner.engines.profiles import EngineProfile, batch_limits_clamp_below, vllm_batch_limits
from planner.engines.serving import vllm_rank_budget
from planner.engines.shared_gpu import shared_gpu_refusal
from planner.engines import vllm_deepseek_v4 as deepseek_v4, vllm_rocm_fp4 as rocm_fp4
from planner.engines.types import EnginePlan, EngineRequest, RankBudget, stopped_before_load
from planner.engines.vllm_cudagraph import cudagraph_log_lines, cudagraph_note, eager_conflict, request_cudagraphs
from planner.engines.vllm_fp8_kv import fp8_kv_env_backend, fp8_kv_notes
from planner.engines.vllm_runner import (first_compile_bytes, graphs_charged, model_runner, runner_note,
                                         sampler_bytes_per_logit, speculative_tokens, v2_state_bytes)
from planner.engines.vllm_kv_formats import (FP8_DS_MLA_NOTE, MLA_REPLICATED_NOTE, layer_bytes_per_token,
                                             stored_kv_name, too_old_for_sparse_mla, uses_fp8_ds_mla)
from planner.engines.vllm_moe_dispatch import moe_dispatch_peak
from planner.engines.vllm_specs import (  # re-exported: the block-size rules lived here before the split
    mamba_block_alignment, mla_forced_block_size, stage_layout, stage_specs, vllm_block_size)
from planner.engines.weight_tensors import vllm_allocator_rounding_bytes
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.kv import cache_dtypes
from planner.model.memo import model_memo, remember
from planner.text import count_noun
from planner.units import GiB

__all__ = ["MAX_CONTEXT_SEARCH_LIMIT", "gib2", "mamba_block_alignment", "mla_forced_block_size", "plan_vllm",
           "resolve_max_model_len", "stage_layout", "stage_specs", "vllm_block_size", "with_available"]

MAX_CONTEXT_SEARCH_LIMIT = 1 << 24
"""Upper bound of the max-model-len search when the model states no limit [tokens]."""


def gib2(num_bytes: int) -> str:
    """GiB with 2 decimals, as vLLM prints memory (``x / GiB_bytes:.2f``)."""
    return f"{num_bytes / GiB:.2f}"


def resolve_max_model_len(model: ModelSpec, request: EngineRequest) -> int:
    """The request's ``max_model_len``, or the model's ``max_position_embeddings``.

    Raises:
        ValueError: neither is known.
    """
    if request.max_model_len is not None:
        return request.max_model_len
    if model.max_position_embeddings:
        return model.max_position_embeddings
    raise ValueError(f"{model.model_id}: the config states no max_position_embeddings; pass max_model_len")


def plan_vllm(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile,
              static_slot: dict | None = None) -> EnginePlan:
    """Plan ``model`` under a vLLM profile (module docstring).

    Everything but ``max_model_len`` (layouts, per-stage budgets, blocks, the longest
    length that fits, the messages that do not depend on the length) comes from
    :func:`_static_plan`, memoized per model object; the request length sets the
    concurrency, the printed tokens, the KV one request needs, the start check and
    the last log lines.

    ``static_slot``: a dict owned by the caller for these exact fields but ``max_model_len``
    (:func:`planner.engines.dispatch.plan_engine` keeps one per checked request), where a V1
    profile's static plan is kept instead of under a second key in the model's memo.

    Raises:
        ValueError: invalid knobs (e.g. ``pipeline_parallel_size`` above the layer count).
    """
    max_model_len = request.max_model_len or resolve_max_model_len(model, request)  # validated >= 1 when given
    if static_slot is None:
        clamped = _length_clamped(profile, request, gpu_memory_bytes, max_model_len)
    else:  # the threshold is length-free: kept beside the static plan
        below = static_slot.get("clamp_below")
        if below is None:
            below = static_slot["clamp_below"] = _clamp_below(profile, request, gpu_memory_bytes)
        clamped = max_model_len < below
    st = static_slot.get("st") if static_slot is not None and not clamped else None
    if st is None:
        st = _static_plan_at(model, gpu_memory_bytes, request, profile, max_model_len)
        if static_slot is not None and profile.id != "vllm-v0" and not clamped:  # V0's depends on the length
            static_slot["st"] = st

    layout, num_blocks, mnbt = st.layout, st.num_blocks, st.plan_fields["max_num_batched_tokens"]
    if st.full_attention is not None:  # _StaticPlan.full_attention: both sums from one ceil(len / B)
        block, groups, bytes_per_block = st.full_attention
        blocks = -(-max_model_len // block)
        blocks_per_request, needs = blocks * groups, (blocks * bytes_per_block,)
    else:
        blocks_per_request = layout.blocks_per_request(max_model_len, mnbt)
        padded = profile.start_check == "v1_groups"
        needs = [lay.start_check_bytes(max_model_len, mnbt, padded) for lay in st.layouts]
    if profile.token_print == "concurrency_x_len" and profile.concurrency_print == "blocks_per_request":
        # the newest releases: concurrency_ratio is (blocks, blocks per request) and the printed tokens
        # int(concurrency x len) (printed_tokens_for_ratio), without the two calls
        conc = num_blocks / blocks_per_request
        tokens = num_blocks * max_model_len // blocks_per_request
    else:
        ratio = concurrency_ratio(layout, num_blocks, max_model_len, mnbt, profile.concurrency_print,
                                  blocks_per_request=blocks_per_request)
        conc = ratio[0] / ratio[1]  # float(max_concurrency(...)), as vLLM prints it
        tokens = printed_tokens_for_ratio(layout, num_blocks, profile.token_print, ratio, max_model_len)
    engine_max_len = st.engine_max_len
    # A length up to engine_max_len passes every start check (needed bytes grow with the length), so the
    # checks run only above it.
    reasons = () if max_model_len <= engine_max_len else _start_reasons(model, profile, st, max_model_len, needs)
    conc_text = f"{conc:.2f}"  # vLLM prints 2 decimals
    log = st.log_head + (() if reasons and profile.start_check != "v0_tokens" else  # V1 refuses before these lines
                         _log_tail(profile, num_blocks, tokens, conc_text, max_model_len))
    launch_head, launch_tail = st.launch_around_length
    launch = f"{launch_head}{engine_max_len if reasons and engine_max_len > 0 else max_model_len}{launch_tail}"
    # round(conc, 2), read back from the printed digits: both round the float's exact value to 2 decimals
    # (CPython's float round and format use the same correctly rounded dtoa), at half the cost.
    rounded = float(conc_text)
    dp = request.data_parallel_size
    values = st.plan_fields.copy()  # EnginePlan(**st.plan_fields, **these) as one dict (EnginePlan._from_dict)
    values["max_model_len"] = max_model_len
    values["blocks_per_request"] = blocks_per_request
    values["engine_kv_cache_tokens"] = tokens
    values["max_concurrency"] = rounded
    values["max_concurrency_all_replicas"] = rounded if dp == 1 else round(conc * dp, 2)
    if profile.concurrency_print == "blocks_per_request":  # a print that counts each request's prefill peak
        held = ((num_blocks, blocks_per_request) if st.full_attention is not None
                else decoding_ratio(layout, num_blocks, max_model_len, mnbt))
        values["max_concurrency_decoding"] = round(held[0] / held[1], 2)
        values["requests_held_ratio"] = held
    values["kv_cache_bytes_needed_per_request"] = needs[0] if len(needs) == 1 else max(needs)
    values["starts"] = not reasons
    values["reasons"] = tuple(reasons)
    values["engine_log_lines"] = log
    values["launch_command"] = launch
    values.update(stopped_before_load(values) if st.stops_before_profile else {})  # shared GPU, no V4 kernel
    return EnginePlan._from_dict(values)


@dataclass(frozen=True, kw_only=True)
class _StaticPlan:
    """The part of a vLLM plan that ``max_model_len`` does not change (per GPU; bytes unless named).

    Attributes:
        plan_fields: The :class:`EnginePlan` fields that do not depend on ``max_model_len`` (the
            overhead formula of :func:`_formula`, warnings and notes of :func:`_static_messages`
            among them); read-only.
        layouts, ranks: One :class:`KVLayout` and one :class:`RankBudget` per pipeline stage.
        layout, num_blocks: The stage with the fewest blocks, and its blocks (the engine equalises to it).
        engine_max_len: Largest ``max_model_len`` the engine accepts [tokens].
        no_memory_reason: The "No available memory" refusal, or "" when every stage has some.
        log_head: The first engine log lines (weights, available memory).
        launch_around_length: The launch command before and after its ``--max-model-len`` value
            (:func:`planner.engines.launch.vllm_command_around_length`).
        full_attention: ``(block_size, groups, bytes per block over all layers)`` when the one stage holds only
            full-attention pages of one block size, else None. A request of ``L`` tokens then needs ``ceil(L / B)``
            blocks in every group and every layer (:meth:`planner.engines.pages.FullAttentionPages.blocks_per_request`),
            so ``KVLayout.blocks_per_request`` is ``groups x ceil(L / B)`` and ``KVLayout.needed_bytes`` is
            ``ceil(L / B) x`` that byte count.
        reason_tails: ``(over_limit, memory)``: the ends of the "greater than the derived max_model_len" refusal and,
            per stage, of the "To serve at least one request" one, after their figures (:func:`_reason_tails`).
        stops_before_profile: The worker stops before loading weights (:func:`.types.stopped_before_load`).
    """

    plan_fields: dict
    layouts: tuple[KVLayout, ...]
    ranks: tuple[RankBudget, ...]
    layout: KVLayout
    num_blocks: int
    engine_max_len: int
    no_memory_reason: str
    log_head: tuple[str, ...]
    launch_around_length: tuple[str, str]
    full_attention: tuple[int, int, int] | None = None
    reason_tails: tuple[str, tuple[str, ...]] = ("", ())
    stops_before_profile: bool = False


_LENGTH_FREE_FIELDS = itemgetter(*(f.name for f in fields(EngineRequest) if f.name != "max_model_len"))
"""Every :class:`EngineRequest` field but ``max_model_len``, read from the request's ``__dict__`` as one tuple
(part of the static plan's key; by name from the dict: cheaper than ``attrgetter``)."""


def _static_plan_at(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile,
                    max_model_len: int) -> _StaticPlan:
    """:func:`_static_plan` under the batch limits vLLM picks at ``max_model_len`` (the request's, else
    :func:`planner.engines.profiles.vllm_scheduler_defaults`).

    Only V0 derives those defaults from the length; for every V1 profile the static plan is
    also memoized without them, so a warm plan looks it up once.
    """
    v1 = profile.id != "vllm-v0" and not _length_clamped(profile, request, gpu_memory_bytes, max_model_len)
    if v1:
        memo = model_memo(model)
        key = ("vllm_static_v1", profile.id, gpu_memory_bytes, _LENGTH_FREE_FIELDS(request.__dict__))
        st = memo.get(key)
        if st is not None:
            return st
    mnbt, seqs = vllm_batch_limits(profile, gpu_memory_bytes, request.gpu_name, max_model_len, request.usage_context,
                                   max_num_batched_tokens=request.max_num_batched_tokens,
                                   max_num_seqs=request.max_num_seqs)
    st = _static_plan(model, gpu_memory_bytes, request, profile, mnbt, seqs)
    return remember(memo, key, st) if v1 else st


def _clamp_below(profile: EngineProfile, request: EngineRequest, gpu_memory_bytes: int) -> int:
    """:func:`planner.engines.profiles.batch_limits_clamp_below` for this request [tokens]."""
    return batch_limits_clamp_below(profile, gpu_memory_bytes, request.gpu_name, request.usage_context,
                                    request.max_num_batched_tokens, request.max_num_seqs)


def _length_clamped(profile: EngineProfile, request: EngineRequest, gpu_memory_bytes: int, max_model_len: int) -> bool:
    """True when the batch limits depend on ``max_model_len`` here (below :func:`_clamp_below`): such a plan
    is not shared between lengths."""
    return max_model_len < _clamp_below(profile, request, gpu_memory_bytes)


def _static_plan(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile,
                 mnbt: int, seqs: int) -> _StaticPlan:
    """:class:`_StaticPlan` for these knobs, memoized per model object (:mod:`planner.model.memo`).

    Keyed by the profile, the GPU memory, the batch limits ``mnbt`` / ``seqs``
    (vLLM V0 derives them from ``max_model_len``) and every request field but ``max_model_len``.
    """
    memo = model_memo(model)
    key = ("vllm_static", profile.id, gpu_memory_bytes, mnbt, seqs, _LENGTH_FREE_FIELDS(request.__dict__))
    st = memo.get(key)
    if st is None:
        st = remember(memo, key, _build_static_plan(model, gpu_memory_bytes, request, profile, mnbt, seqs))
    return st


def _build_static_plan(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, profile: EngineProfile,
                       mnbt: int, seqs: int) -> _StaticPlan:
    """:func:`_static_plan` without the memo: layouts, per-stage budgets, blocks and the static messages."""
    pp = request.pipeline_parallel_size
    block, block_notes = vllm_block_size(model, request, profile)
    util = request.gpu_memory_utilization or profile.default_memory_fraction
    requested = int(gpu_memory_bytes * util)
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, vllm_storage=False)

    ranks, layouts = [], []
    for stage, layers in enumerate(pipeline_layer_ranges(model.num_layers, pp)):
        layout = stage_layout(model, layers, request, profile, block)
        for role in _stage_roles(profile, request, stage):
            ranks.append(_rank_budget(model, request, profile, stage, layers, layout, requested=requested,
                                      gpu_memory_bytes=gpu_memory_bytes, mnbt=mnbt, seqs=seqs, role=role))
            layouts.append(layout)
    formula = _formula(model, request, profile, ranks[0], mnbt, seqs)

    limiting = min(range(len(ranks)), key=lambda i: ranks[i].num_blocks)
    layout, num_blocks = layouts[limiting], ranks[limiting].num_blocks
    limit = model.max_position_embeddings or MAX_CONTEXT_SEARCH_LIMIT
    if profile.start_check == "v0_tokens":
        engine_max_len = min(num_blocks * layout.block_size, limit)
    else:
        padded = profile.start_check == "v1_groups"
        engine_max_len = min(max_model_len_that_fits(lay, r.available_kv_cache_bytes, mnbt, limit, padded=padded)
                             for lay, r in zip(layouts, ranks))
    shared = (shared_gpu_refusal(gpu_memory_bytes, request.memory_in_use_bytes, util, requested)  # shared_gpu note 1
              or deepseek_v4.gpu_refusal(model, profile.id, request.gpu_name or "")  # its design note 9
              or rocm_fp4.rocm_refusal(model, profile.id, request))  # ROCm: sparse MLA, NVFP4 experts
    engine_max_len = 0 if shared else engine_max_len  # the worker stops before profiling: no length starts
    warnings, notes = _static_messages(model, request, profile, ranks, layouts, util=util,
                                       gpu_memory_bytes=gpu_memory_bytes)
    notes[:0] = block_notes  # vllm_block_size: the asked block size vLLM changed
    graphs = request_cudagraphs(model, request, profile.id, num_layers=ranks[0].num_layers, max_num_seqs=seqs,
                                max_num_batched_tokens=mnbt, activation_bytes=dtypes.state.bytes_for(1))
    charged = ranks[0].cudagraph_charged
    if graph_note := cudagraph_note(graphs, ranks[0].cudagraph_bytes, subtracted=charged):
        notes.append(graph_note)
    if runner_line := runner_note(model_runner(model, profile.id, request), profile, ranks[-1].runner_state_bytes,
                                  ranks[-1].first_compile_bytes):
        notes.append(runner_line)
    graph_lines = cudagraph_log_lines(graphs, ranks[0].cudagraph_bytes) if charged else ()
    launch = vllm_command_around_length(LaunchSpec(
        engine=profile.id, family=profile.family, model_id=model.model_id,
        weight_dtype=request.weight_dtype, tensor_parallel_size=request.tensor_parallel_size,
        pipeline_parallel_size=pp, data_parallel_size=request.data_parallel_size,
        max_model_len=0,  # not read: plan_vllm puts the length between the two parts
        gpu_memory_utilization=util, max_num_seqs=seqs,
        kv_cache_dtype=deepseek_v4.launch_kv_cache_dtype(model, profile.id, request.kv_cache_dtype),
        # the LLM class's token budget, written out: `vllm serve` would take serve's smaller default
        max_num_batched_tokens=request.max_num_batched_tokens or (mnbt if request.usage_context == "llm" else None),
        block_size=request.block_size,
        attention_backend=fp8_kv_env_backend(profile.id, request.gpu_name, request.kv_cache_dtype,
                                             request.attention_backend),
        distributed_executor_backend=request.distributed_executor_backend,
        enforce_eager=request.enforce_eager, enable_prefix_caching=request.enable_prefix_caching,
        use_deep_gemm=request.use_deep_gemm, cudagraph_mode=request.cudagraph_mode,
        optimization_level=request.optimization_level,
        max_cudagraph_capture_size=request.max_cudagraph_capture_size, language_model_only=model.language_model_only))
    plan_fields = {
        "engine": profile.id, "engine_label": profile.label, "engine_version": profile.version,
        "family": profile.family, "model_id": model.model_id,
        "gpu_memory_bytes": gpu_memory_bytes, "tensor_parallel_size": request.tensor_parallel_size,
        "pipeline_parallel_size": pp, "data_parallel_size": request.data_parallel_size,
        "num_gpus": request.num_gpus, "weight_dtype": request.weight_dtype,
        "kv_cache_dtype": deepseek_v4.stored_name(model, profile.id, stored_kv_name(
            model, profile.id, request.kv_cache_dtype, dtypes.kv.name, request.gpu_name)),
        "gpu_memory_utilization": util, "block_size": layout.block_size, "max_num_batched_tokens": mnbt,
        "max_num_seqs": seqs, "ranks": tuple(ranks),
        "available_kv_cache_bytes": min(r.available_kv_cache_bytes for r in ranks),
        "available_kv_from_log": (request.available_kv_memory_bytes is not None
                                  or bool(request.available_kv_memory_per_rank_bytes)),
        "num_gpu_blocks": num_blocks,
        "num_kv_groups": layout.num_groups, "group_size": layout.group_size, "engine_max_model_len": engine_max_len,
        "warnings": tuple(warnings), "notes": tuple(notes), "overhead_formula": formula,
        "stopped_at_config_check": False,
    }
    return _StaticPlan(
        plan_fields=plan_fields, layouts=tuple(layouts), ranks=tuple(ranks), layout=layout,
        num_blocks=num_blocks, engine_max_len=engine_max_len, no_memory_reason=shared or _no_memory_reason(ranks),
        log_head=tuple(_log_head(profile, ranks, graph_lines)), launch_around_length=launch,
        full_attention=_full_attention_terms(layouts),
        reason_tails=_reason_tails(model, ranks, engine_max_len),
        stops_before_profile=bool(shared),
    )


def _reason_tails(model: ModelSpec, ranks: list[RankBudget], engine_max_len: int) -> tuple[str, tuple[str, ...]]:
    """:attr:`_StaticPlan.reason_tails`: the parts of :func:`_start_reasons`' sentences after their
    length-dependent figure, which only the static plan decides."""
    over_limit = (f") is greater than the derived max_model_len (max_position_embeddings="
                  f"{model.max_position_embeddings}); lower max_model_len")
    memory = tuple(f" GiB KV cache is needed, which is larger than the available KV cache memory "
                   f"({gib2(rank.available_kv_cache_bytes)} GiB). Based on the available memory, the estimated "
                   f"maximum model length is {engine_max_len}. Try increasing `gpu_memory_utilization` or "
                   "decreasing `max_model_len` when initializing the engine." for rank in ranks)
    return over_limit, memory


def _full_attention_terms(layouts: list[KVLayout]) -> tuple[int, int, int] | None:
    """:attr:`_StaticPlan.full_attention` of a plan's layouts (one per GPU kind), or None."""
    if len(layouts) != 1 or any(type(spec) is not FullAttentionPages for spec, _ in layouts[0].spec_counts):
        return None
    layout = layouts[0]
    blocks = {spec.block_size for spec, _ in layout.spec_counts}
    if len(blocks) != 1:
        return None
    return (blocks.pop(), sum(count for _, count in layout.group_spec_counts),
            sum(count * spec.page_size_bytes for spec, count in layout.spec_counts))


def _stage_roles(profile: EngineProfile, request: EngineRequest, stage: int) -> tuple[str, ...]:
    """The kinds of tensor-parallel GPU one stage has: ``all`` alike, or V0's ``driver`` and ``others``.

    V0 gathers the logits to tensor-parallel rank 0 only (``tensor_model_parallel_gather`` in
    ``LogitsProcessor._gather_logits``) and only that driver worker samples, so with TP > 1 the
    last stage's rank 0 profiles the sampler and its peers do not. V1 gathers to every rank
    (``all_gather``) and every worker runs ``_dummy_sampler_run``: all ranks alike.

    Sources: vllm/model_executor/layers/logits_processor.py, vllm/worker/model_runner.py
    (``is_driver_worker``), vllm/v1/worker/gpu_model_runner.py (``profile_run``).
    """
    last = stage == request.pipeline_parallel_size - 1
    if profile.id == "vllm-v0" and last and request.tensor_parallel_size > 1:
        return ("driver", "others")
    return ("all",)


def _rank_available_override(request: EngineRequest, stage: int, role: str) -> int | None:
    """The printed available memory of this stage's workers (the smallest of them) [bytes], or None."""
    values = request.available_kv_memory_per_rank_bytes
    if not values:
        return request.available_kv_memory_bytes
    tp, pp = request.tensor_parallel_size, request.pipeline_parallel_size
    if len(values) == tp * pp and tp * pp > 1:
        mine = values[stage * tp:(stage + 1) * tp]
        if role == "driver":
            mine = mine[:1]
        elif role == "others":
            mine = mine[1:]
        return min(mine)
    if len(values) == pp:
        return values[stage]
    return min(values)


def _loaded_weights(model: ModelSpec, request: EngineRequest, profile: EngineProfile, stage: int) -> int:
    """What "Model loading took" counts on one GPU of ``stage`` [bytes]: the tensors as this vLLM lays them
    out on this GPU (:func:`planner.engines.loaded.loaded_weight_bytes`) plus the caching allocator's
    rounding of their blocks (:func:`planner.engines.weight_tensors.vllm_allocator_rounding_bytes`)."""
    fmt, tp, pp = weight_dtype(request.weight_dtype), request.tensor_parallel_size, request.pipeline_parallel_size
    layout = vllm_mxfp4_layout(profile.id, request.gpu_name)
    return (loaded_weight_bytes(model, fmt, tp, stage, pp, mxfp4=layout, nvfp4_swizzle=nvfp4_swizzles(request.gpu_name))
            + vllm_allocator_rounding_bytes(model, fmt, tp, stage, pp, mxfp4=layout))


def _rank_budget(model: ModelSpec, request: EngineRequest, profile: EngineProfile, stage: int, layers: range,
                 layout: KVLayout, *, requested: int, gpu_memory_bytes: int, mnbt: int, seqs: int,
                 role: str = "all") -> RankBudget:
    """One kind of GPU of a pipeline stage: requested - weights - activation - non-torch [- graphs].

    Non-torch follows the topology (:func:`planner.engines.overheads.vllm_non_torch_bytes`);
    CUDA graphs are the ones this version captures for the stage's layers
    (:func:`planner.engines.vllm_cudagraph.request_cudagraphs`: 0 with ``enforce_eager`` or
    ``cudagraph_mode`` NONE); V0's non-driver ranks profile no sampler (:func:`_stage_roles`).
    """
    tp, pp = request.tensor_parallel_size, request.pipeline_parallel_size
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, vllm_storage=False)
    ds_mla = uses_fp8_ds_mla(model, profile.id, request.kv_cache_dtype, request.gpu_name)
    e, last = dtypes.state.bytes_for(1), stage == pp - 1 and role != "others"
    runner = model_runner(model, profile.id, request)
    charged = graphs_charged(profile, runner)
    act = activation_estimate(model, num_tokens=mnbt, num_seqs=seqs, activation_bytes=e, tensor_parallel_size=tp,
                              bytes_per_logit=sampler_bytes_per_logit(profile, runner, e, request), last_stage=last)
    moe = request.moe_data_parallel and moe_dispatch_peak(model, request.moe_data_parallel, profile.id, num_tokens=mnbt,
                                                          activation_bytes=e, weight_dtype_name=request.weight_dtype,
                                                          gpu_name=request.gpu_name, deep_gemm=request.use_deep_gemm)
    if moe:  # the MoE layers run every DP rank's tokens (planner.engines.vllm_moe_dispatch)
        act = replace(act, forward_bytes=max(act.forward_bytes, moe.peak_bytes))
    state = v2_state_bytes(model, max_num_seqs=seqs, max_num_batched_tokens=mnbt, last_stage=last,
                           num_speculative_tokens=speculative_tokens(request)) if runner == "v2" else 0
    compile_bytes = first_compile_bytes(request, runner)
    graphs = request_cudagraphs(model, request, profile.id, num_layers=len(layers), max_num_batched_tokens=mnbt,
                                max_num_seqs=seqs, activation_bytes=e, estimated=charged)
    estimates = {
        "weights": _loaded_weights(model, request, profile, stage),
        "activation": act.peak_bytes + state + compile_bytes,
        "non_torch": vllm_non_torch_bytes(profile.non_torch_bytes, tensor_parallel_size=tp,
                                          pipeline_parallel_size=pp, num_nodes=request.num_nodes,
                                          gpu_name=request.gpu_name) + (moe.group_bytes if moe else 0),
        "cudagraph": graphs.total_bytes,
    }
    overrides = {"weights": request.weights_bytes, "activation": request.activation_bytes,
                 "non_torch": request.non_torch_bytes, "cudagraph": request.cudagraph_bytes}
    terms = {k: (v if overrides[k] is None else overrides[k]) for k, v in estimates.items()}
    overridden = [k for k, v in overrides.items() if v is not None]
    pinned = _rank_available_override(request, stage, role)
    if pinned is not None:
        available = pinned
        overridden.append("available_kv_cache")
    else:
        graphs = terms["cudagraph"] if charged else 0
        available = requested - terms["weights"] - terms["activation"] - terms["non_torch"] - graphs
    budget = RankBudget(
        stage=stage, role=role, first_layer=layers.start, num_layers=len(layers), memory_base_bytes=gpu_memory_bytes,
        requested_bytes=requested, weights_bytes=terms["weights"], activation_bytes=terms["activation"],
        forward_activation_bytes=act.forward_bytes, sampler_bytes=act.sampler_bytes,
        non_torch_bytes=terms["non_torch"], cudagraph_bytes=terms["cudagraph"], available_kv_cache_bytes=available,
        kv_cache_bytes_per_token=sum(layer_bytes_per_token(model.layers[i], dtypes, tp, ds_mla) for i in layers),
        kv_cache_bytes_per_token_dtype="fp8_ds_mla" if ds_mla else dtypes.kv.name,
        bytes_per_block=layout.bytes_per_block, num_blocks=layout.num_blocks(available),
        overridden=tuple(overridden), runner_state_bytes=state, cudagraph_charged=charged,
        first_compile_bytes=compile_bytes)
    if request.serving is not None:  # serving features (planner.engines.serving)
        return vllm_rank_budget(budget, model, request, profile, layout, mnbt=mnbt)
    return budget


def _formula(model: ModelSpec, request: EngineRequest, profile: EngineProfile, rank: RankBudget, mnbt: int,
             seqs: int) -> str:
    """The overhead model's arithmetic as one line of text (``rank``: the first GPU's budget)."""
    graphs = " - cudagraph" if rank.cudagraph_charged else ""
    e = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, vllm_storage=False).state.bytes_for(1)
    logit = sampler_bytes_per_logit(profile, model_runner(model, profile.id, request), e, request)
    state = f" + model runner V2 state {rank.runner_state_bytes:,} B" if rank.runner_state_bytes else ""
    if rank.first_compile_bytes:
        state += f" + first torch.compile {rank.first_compile_bytes:,} B"
    mm = request.serving.multimodal if request.serving is not None else None
    if mm is not None and mm.encoder_profiled:  # planner.serving.multimodal: held through the profile pass
        state += " + encoder profile" + (" (vLLM's default: no --limit-mm-per-prompt)" if mm.engine_default else "")
    return (f"available = floor(total x gpu_memory_utilization) - weights - activation - non_torch{graphs}; "
            f"activation = max(forward pass of {mnbt:,} tokens, sampler of min({seqs}, {mnbt:,}) x "
            f"{model.vocab_size:,} logits x {logit} B + hidden states){state}")


def _start_reasons(model: ModelSpec, profile: EngineProfile, st: _StaticPlan, max_model_len: int,
                   needs: list[int]) -> list[str]:
    """Reasons vLLM would not start at ``max_model_len``, with vLLM's own wording.

    Args:
        model, profile: The model and the vLLM profile.
        st: The static part of the plan.
        max_model_len: The request length [tokens].
        needs: KV bytes one request of ``max_model_len`` needs on each stage (``KVLayout.needed_bytes``).
    """
    reasons: list[str] = []
    over_limit_tail, memory_tails = st.reason_tails  # the sentences' static ends (_reason_tails)
    # Heads that tensor parallelism cannot split: planner.engines.plan_engine, for every head-splitting engine.
    if model.max_position_embeddings and max_model_len > model.max_position_embeddings:
        reasons.append(f"User-specified max_model_len ({max_model_len}{over_limit_tail}")
    if st.no_memory_reason:
        reasons.append(st.no_memory_reason)
    elif profile.start_check in ("v1_memory", "v1_groups"):
        for needed, rank, tail in zip(needs, st.ranks, memory_tails):
            if needed > rank.available_kv_cache_bytes:
                reasons.append(f"To serve at least one request with the model's max seq len ({max_model_len}), "
                               f"({gib2(needed)}{tail}")
                break
    elif max_model_len > st.num_blocks * st.layout.block_size:
        reasons.append(
            f"The model's max seq len ({max_model_len}) is larger than the maximum number of tokens that can be "
            f"stored in KV cache ({st.num_blocks * st.layout.block_size}). Try increasing `gpu_memory_utilization` "
            f"or decreasing `max_model_len` when initializing the engine.")
    return reasons


def _no_memory_reason(ranks: list[RankBudget]) -> str:
    """vLLM's refusal when some stage has no memory left for cache blocks, else ""."""
    worst = min(ranks, key=lambda r: r.available_kv_cache_bytes)
    if worst.available_kv_cache_bytes > 0:
        return ""
    # the profiles that deduct CUDA graphs (>= v0.21) show that term too, so the sentence adds up
    graphs = (worst.requested_bytes - worst.weights_bytes - worst.activation_bytes - worst.non_torch_bytes
              - worst.available_kv_cache_bytes)
    graphs_term = f"{gib2(graphs)} GiB CUDA graphs - " if graphs > 0 else ""
    return (f"No available memory for the cache blocks (stage {worst.stage}: {gib2(worst.requested_bytes)} GiB "
            f"requested - {gib2(worst.weights_bytes)} GiB weights - {gib2(worst.activation_bytes)} GiB activation - "
            f"{graphs_term}{gib2(worst.non_torch_bytes)} GiB non-torch = {gib2(worst.available_kv_cache_bytes)} GiB). "
            "Try increasing gpu_memory_utilization, more tensor/pipeline parallelism, or a smaller weight dtype")


def _static_messages(model: ModelSpec, request: EngineRequest, profile: EngineProfile, ranks: list[RankBudget],
                     layouts: list[KVLayout], *, util: float, gpu_memory_bytes: int) -> tuple[list[str], list[str]]:
    """Warnings and notes of a vLLM plan (none depends on the request length), with vLLM's wording."""
    warnings: list[str] = []
    notes: list[str] = []
    tp = request.tensor_parallel_size
    headroom = gpu_memory_bytes - int(gpu_memory_bytes * util)
    if not ranks[0].cudagraph_charged and ranks[0].cudagraph_bytes > headroom:
        warnings.append(
            f"CUDA graphs (~{gib2(ranks[0].cudagraph_bytes)} GiB) are captured after the KV cache is allocated and "
            f"must fit in the 1 - gpu_memory_utilization headroom ({gib2(headroom)} GiB); lower "
            "gpu_memory_utilization or pass --enforce-eager")
    v4_warnings, v4_notes = deepseek_v4.messages(model, profile.id, request.kv_cache_dtype, layouts[0].padded_estimate)
    warnings += [w for w in (eager_conflict(request), *v4_warnings, too_old_for_sparse_mla(model, profile.id)) if w]
    notes += [*v4_notes, *fp8_kv_notes(profile.id, request.gpu_name, request.kv_cache_dtype, request.attention_backend)]
    if uses_fp8_ds_mla(model, profile.id, request.kv_cache_dtype, request.gpu_name):
        notes.append(FP8_DS_MLA_NOTE.format(kv_cache_dtype=request.kv_cache_dtype))
    if layouts[0].padding_layers:
        notes.append(f"hybrid KV groups padded with {count_noun(layouts[0].padding_layers, 'layer')}; vLLM warns about "
                     "the memory this may waste")
    if tp > model.num_key_value_heads and model.attention_kind != "MLA":
        notes.append(f"tensor_parallel_size {tp} > {model.num_key_value_heads} KV heads: each GPU keeps one "
                     "replicated KV head, so KV per GPU stops shrinking")
    if model.attention_kind == "MLA" and tp > 1:
        notes.append(MLA_REPLICATED_NOTE)
    if request.available_kv_memory_bytes is None:
        notes.append("available KV memory is the overhead model's estimate; paste the engine log or pass "
                     "--available-kv-memory-gib to use the engine's own figure")
    return warnings, notes


def _log_head(profile: EngineProfile, ranks: list[RankBudget], graph_lines: tuple[str, ...] = ()) -> list[str]:
    """The first startup lines this vLLM era prints: weights, the CUDA-graph estimate (2026 builds) and
    available KV memory (as vLLM formats them)."""
    lines = [f"Model loading took {ranks[0].weights_bytes / GiB:.4f} GiB", *graph_lines]
    if profile.id == "vllm-v0":
        lines.append(f"Memory profiling results: ... the rest of the memory reserved for KV Cache is "
                     f"{gib2(ranks[0].available_kv_cache_bytes)} GiB")
    else:
        lines.append(f"Available KV cache memory: {gib2(ranks[0].available_kv_cache_bytes)} GiB")
    return lines


def _log_tail(profile: EngineProfile, num_blocks: int, tokens: int, conc: str, max_model_len: int) -> tuple[str, str]:
    """The startup lines after :func:`_log_head`: the KV cache size and the maximum concurrency (``conc`` formatted
    with 2 decimals, as vLLM prints it). V1 prints neither for a launch its KV check refuses: it raises first
    (vllm/v1/core/kv_cache_utils.py ``get_kv_cache_configs``); V0 prints its blocks, then refuses."""
    if profile.token_print == "blocks":
        size = f"# GPU blocks: {num_blocks}"
    else:
        size = f"GPU KV cache size: {tokens:,} tokens"
    return size, f"Maximum concurrency for {max_model_len:,} tokens per request: {conc}x"


def with_available(request: EngineRequest, available_bytes: int) -> EngineRequest:
    """The same request with the engine's reported available KV memory pinned."""
    return replace(request, available_kv_memory_bytes=available_bytes)
