"""Reverse planner: the cheapest GPU setups that hold N concurrent users.

Input: N users, their prompt/output lengths (fixed or a :class:`Workload`
distribution), optionally a limit on time per output token. Output: setups
(GPU type x GPU count x tensor parallel size x KV dtype) that hold them,
cheapest per hour first, each with its margin and a launch command; when none
fits, the closest one and what to change.

The search, per GPU type with a price, tensor parallel size ``tp`` and data
parallel replicas ``dp`` (``tp x dp <= max_gpus``), KV dtype:

    users per replica  = ceil(N / dp)
    budget per GPU     = floor(memory x gpu_memory_utilization) - weights/GPU - overhead/GPU
    demand per GPU     = users per replica x bytes_paged(prompt + output)      (fixed lengths)
                       = quantile_(1 - p) of the KV of that many sampled requests (distribution)
    fits               = demand <= budget  (and time per output token <= limit)
    margin             = 1 - demand / budget
                       = 1 - users per replica / max_num_seqs   (an explicit --max-num-seqs below what the
                         replica holds: max users are then max_num_seqs x dp)
    price per hour     = catalog price per GPU x tp x dp

The budget arithmetic is :func:`planner.budget.plan`'s on each GPU (:mod:`planner.traffic.find_costs`: once per
tp and dtype, then each GPU's overhead, paged layout and prefill chunk from the memoized plan base), so a
whole catalog is searched in milliseconds and a row's users are Home's for that GPU.

With ``FindRequest.engine`` set (the page and the CLI pass vLLM unless told otherwise) the budget, the users a
replica holds and whether it starts are the engine's own view of the setup instead
(:mod:`planner.traffic.find_engine`), so a setup's users agree with the Engine page's for the same inputs.
``FindRequest.alternative_weight_dtype`` (fp8) searches again with those weights and keeps the cheapest
setup when it beats the cheapest answer (:attr:`~planner.traffic.find_types.FindResult.weight_alternative`).

Design notes (assumptions):
    1. One replica spans one node: ``tp`` in (1, 2, 4, 8), and engines need
       ``num_attention_heads % tp == 0`` and KV heads divisible by ``tp`` (or
       ``tp`` by KV heads) (vLLM ``ParallelConfig`` / ``ModelConfig.verify_with_parallel_config``).
    2. Replicas share users evenly (data parallel / a load balancer).
    3. GPUs without a catalog price are skipped and listed.
    4. Time per output token is the bandwidth roofline of :mod:`planner.traffic.throughput`
       (a lower bound on the real time), at the mean decode context.
    Worked example: 200 users x 2,500 tokens of Llama-3.1-70B (320 KiB/token
    bf16) need 200 x 2,512 slots x 320 KiB = 153.3 GiB of KV in total.

Sources: DOMAIN.md sections 1 and 4; vLLM ``vllm serve`` CLI flags
(--tensor-parallel-size, --data-parallel-size, --kv-cache-dtype, --max-model-len,
--max-num-seqs, --gpu-memory-utilization) written by planner.engines.launch; GPU prices from model_catalog/gpus.json
(each with its ``price_source``).
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION
from planner.diagnose import tensor_parallel_splits
from planner.engines.launch import LaunchSpec, launch_command
from planner.engines.loaded import gpu_capability
from planner.engines.profiles import engine_profile, resolve_engine_name
from planner.engines.vllm_fp8_kv import Fp8KvBackend, fp8_kv_backend
from planner.engines.vllm_rocm_fp4 import rocm_nvfp4_note
from planner.engines.types import PREFILL_PEAK_REASON
from planner.model import ModelSpec
from planner.model.params import model_weight_bytes
from planner.model.platforms import is_rocm_gpu
from planner.model.sparse import indexed_mla_layer
from planner.overhead import DEFAULT_MAX_NUM_SEQS
from planner.serving.features import launch_flags as serving_launch_flags
from planner.text import count_noun
from planner.traffic import find_advice
from planner.traffic.find_costs import CandidateCosts, candidate_costs, launch_kv_flag, stored_name
from planner.traffic.find_engine import (
    EngineCapacity,
    engine_capacity,
    engine_launch_command,
    launch_knobs,
    launch_max_model_len,
    launch_max_num_seqs,
    launch_media_tokens,
    offers_kv_dtype,
)
from planner.traffic.find_scale import (
    Candidate,
    disagg_candidates,
    launch_candidates,
    scale_notes,
    scale_searched,
    scale_shapes,
)
from planner.traffic.find_types import (
    CAPPED_NOTE_START,
    FindRequest,
    FindResult,
    GPULike,
    Setup,
    capped_note,
    setup_rank,
)
from planner.traffic.simulation import DemandCache, simulate_concurrency
from planner.traffic.throughput import (
    cost_per_million_tokens,
    prefill_seconds,
    time_per_output_token,
)
from planner.traffic.workload import Workload
from planner.units import GiB, ceil_div


def vllm_serve_command(
    model_id: str,
    *,
    tensor_parallel_size: int = 1,
    data_parallel_size: int = 1,
    kv_cache_dtype: str = "auto",
    weight_dtype: str = "auto",
    max_model_len: int,
    max_num_seqs: int = DEFAULT_MAX_NUM_SEQS,
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION,
    block_size: int = DEFAULT_BLOCK_SIZE,
    language_model_only: bool = False,
    attention_backend: str | None = None,
    knobs: dict | None = None,
) -> str:
    """A ``vllm serve`` command line for a setup, via :func:`planner.engines.launch.launch_command`.

    Capacity flags are always written (see :mod:`planner.engines.launch`); ``--block-size`` only when it differs
    from vLLM's 16; the weight dtype as :func:`planner.engines.launch.weight_flags` writes it (``--quantization
    fp8`` for online fp8; a comment for int4/int8/MXFP4, which need a pre-quantized checkpoint the command cannot
    name); ``--language-model-only`` for a text-only model (``ModelSpec.language_model_only``);
    ``attention_backend``: the ``VLLM_ATTENTION_BACKEND`` to set (:func:`planner.engines.vllm_fp8_kv.fp8_kv_backend`
    names FLASHINFER for an fp8 cache on Ampere under pre-v0.11 releases); ``knobs``: the engine knobs' flags
    (:func:`planner.traffic.find_engine.launch_knobs`). Example: ``vllm serve
    meta-llama/Meta-Llama-3.1-70B --tensor-parallel-size 4 --max-model-len 2500 --gpu-memory-utilization 0.9
    --kv-cache-dtype fp8 --max-num-seqs 200``.

    Sources: vLLM engine arguments (vllm/engine/arg_utils.py); planner.engines.launch.
    """
    spec = LaunchSpec(
        engine="vllm", family="vllm", model_id=model_id, tensor_parallel_size=tensor_parallel_size,
        data_parallel_size=data_parallel_size, max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization, kv_cache_dtype=kv_cache_dtype, max_num_seqs=max_num_seqs,
        block_size=None if block_size == DEFAULT_BLOCK_SIZE else block_size, weight_dtype=weight_dtype,
        language_model_only=language_model_only, attention_backend=attention_backend, **(knobs or {}))
    return launch_command(spec)


def valid_tensor_parallel(model: ModelSpec, tp: int) -> bool:
    """Whether engines accept ``tp`` for this model (design note 1; :func:`planner.budget.tensor_parallel_splits`)."""
    return tensor_parallel_splits(model, tp)


def find_setups(model: ModelSpec, gpus: list[GPULike] | tuple[GPULike, ...], request: FindRequest) -> FindResult:
    """Search GPU type x count x TP x KV dtype for the cheapest setups that hold the users.

    Args:
        model: The model to serve.
        gpus: GPU catalog entries (``model_catalog.gpus.load_gpus().values()``).
        request: Users, lengths and search limits.

    Returns:
        A :class:`FindResult`; ``fits`` False with ``closest`` and suggestions
        when no setup within ``max_gpus`` holds the users.

    Raises:
        ValueError: invalid request fields, or requests longer than the model supports.

    Sources: module docstring.
    """
    request.validate()
    workload = request.resolved_workload()
    # the launch's --max-model-len holds the media tokens too (QA: Gemma 4 with images)
    if too_long := find_advice.length_limit_error(model, workload, launch_media_tokens(request)):
        raise ValueError(too_long)
    gpus = _chosen_gpus(gpus, request.gpu_ids)
    priced = [g for g in gpus if g.price_usd_per_hour is not None]
    skipped = tuple(g.id for g in gpus if g.price_usd_per_hour is None)
    tp_sizes = tuple(t for t in dict.fromkeys(request.tensor_parallel_sizes)
                     if t <= request.max_gpus and valid_tensor_parallel(model, t))
    notes = []
    bad_tp = [t for t in request.tensor_parallel_sizes if not valid_tensor_parallel(model, t)]
    if bad_tp:
        notes.append(f"tensor parallel sizes {bad_tp} skipped: {model.num_attention_heads} attention heads / "
                     f"{model.num_key_value_heads} KV heads do not split evenly")
    if skipped:
        notes.append(f"{count_noun(len(skipped), 'GPU')} {'has' if len(skipped) == 1 else 'have'} no price in the "
                     f"catalog and {'was' if len(skipped) == 1 else 'were'} skipped: {', '.join(skipped)}")
    if not tp_sizes:
        raise ValueError(f"no tensor parallel size in {request.tensor_parallel_sizes} works for "
                         f"{model.model_id} within max_gpus {request.max_gpus}")
    costs = candidate_costs(model, request, workload, tp_sizes, priced)
    engine_caps: dict | None = None
    if request.engine is not None:  # the engine's view sizes every setup (planner.traffic.find_engine)
        engine_caps = {}
        engine = resolve_engine_name(request.engine)
        peak = engine_profile(engine)  # a vLLM print that counts each request at its prefill peak
        decoding = (peak.family, peak.concurrency_print) == ("vllm", "blocks_per_request")
        notes.append(f"Sized as {engine} sizes them: its loaded weights, profile pass and block rules (what "
                     f"`plan --engine {engine}` prints), with {engine}'s defaults for what is not asked here"
                     + (f"; {PREFILL_PEAK_REASON}" if decoding else ""))
        refused = sorted({c.kv_flag for c in costs.values() if not offers_kv_dtype(engine, c.kv_flag)})
        if refused:
            notes.append(f"KV dtype {', '.join(refused)} skipped: {engine} does not offer it")
    notes += scale_notes(model, request, workload)
    candidates = _search(model, priced, request, workload, costs, request.max_gpus, engine_caps)
    setups = [x.setup for x in candidates]
    best: dict[tuple[str, int, str, str], Candidate] = {}
    for x in candidates:
        s = x.setup
        key = (s.gpu_id, s.num_gpus, s.kv_cache_dtype, s.kind)
        if s.fits and (key not in best or s.margin > best[key].setup.margin):  # fitting setups have a margin
            best[key] = x
    chosen = sorted(best.values(), key=lambda x: setup_rank(x.setup))[:request.top]
    options = [x.finish(x.setup) for x in chosen]  # launch commands and deployments for the listed setups only
    if not workload.is_fixed:
        options = [_with_simulated_users(s, costs, workload, request) for s in options]
        if request.serving is not None and any(getattr(c.profile, "extra_tokens", 0) for c in costs.values()):
            notes.append("serving features: the Monte-Carlo draws leave out the extra token slots per sequence "
                         "(speculative drafts, image tokens); the fixed-length sizing includes them")
        notes.append(
            f"lengths vary: each setup is sized so N users run out of KV with probability <= "
            f"{request.max_preemption_probability:g} ({request.num_trials} Monte-Carlo trials, seed {request.seed})")
    closest = None
    suggestions: list[str] = []
    if not options:
        if candidates:
            cap = request.knob("max_num_seqs")
            near = max(candidates, key=lambda x: (x.setup.num_gpus <= request.max_gpus, _coverage(x.setup, cap),
                                                  -x.setup.price_per_hour))
            closest = near.finish(near.setup)
        suggestions = find_advice.suggestions(
            model, request, partial(_search_up_to, model, priced, workload, tp_sizes, engine_caps),
            stored_kv=lambda kv: stored_name(model, request, kv),
            offers_kv=lambda kv: request.engine is None or offers_kv_dtype(request.engine, kv),
            min_weight_saving=WEIGHT_ALTERNATIVE_MIN_SAVING)
    alternative = _weight_alternative(model, priced, request, options)
    if alternative is not None:
        notes.append(_alternative_note(alternative, options[0] if options else None))
    return FindResult(options=tuple(options), fits=bool(options), closest=closest, skipped_gpus=skipped,
                      num_evaluated=len(setups), suggestions=tuple(suggestions), notes=tuple(notes),
                      weight_alternative=alternative,
                      engine=None if request.engine is None else resolve_engine_name(request.engine),
                      nothing_fits_cause="" if options else find_advice.cap_cause(request))


LEAN_KINDS = ("TP", "DP+EP")
"""The kinds the fp8-weights hint searches: DCP and disaggregated setups would double the plans kept per model for a
hint that names one setup. (The "nothing fits" suggestions search the kinds asked: :mod:`planner.traffic.find_advice`.)"""

WEIGHT_ALTERNATIVE_MIN_SAVING = 0.25
"""The alternative weight dtype is searched only when it removes at least this share of the weight bytes
[fraction] (fp8 on a bf16 checkpoint: 0.5; on gpt-oss's MXFP4 experts: almost nothing, so no search)."""

WEIGHT_ALTERNATIVE_MAX_PRICE_SHARE = 0.75
"""Its cheapest setup is named only when it costs at most this share of the cheapest answer [fraction]: a
hint worth a re-quantized checkpoint (Llama-3.1-70B, 20 users of 2,000 + 500 tokens under vLLM: 1 x RTX PRO
6000 at $1.80/h with fp8 weights against 1 x MI300X at $2.59/h, 0.69; Llama-3-8B at 64 users: $0.99 against
$1.00, no hint)."""


def runs_fp8_weights(gpu) -> bool:
    """Whether vLLM runs fp8 weights on ``gpu``: NVIDIA from compute capability 8.0 (weight-only FP8 Marlin on
    Ampere, native from 8.9; vllm/model_executor/layers/quantization/fp8.py), other vendors where the catalog
    says fp8 is native (MI300 and newer)."""
    if getattr(gpu, "vendor", "NVIDIA") == "NVIDIA":
        return gpu_capability(gpu.name) >= (8, 0)
    return bool(getattr(gpu, "fp8_native", False))


def _weight_alternative(model: ModelSpec, gpus, request: FindRequest, options) -> Setup | None:
    """The cheapest setup with ``request.alternative_weight_dtype`` weights, when it costs at most
    :data:`WEIGHT_ALTERNATIVE_MAX_PRICE_SHARE` of the cheapest of ``options`` (or when ``options`` is empty);
    None when that dtype does not shrink the weights by :data:`WEIGHT_ALTERNATIVE_MIN_SAVING`. fp8 is searched
    on the GPUs that run it (:func:`runs_fp8_weights`)."""
    name = request.alternative_weight_dtype
    if name is None or name == request.weight_dtype:
        return None
    old, new = model_weight_bytes(model, request.weight_dtype), model_weight_bytes(model, name)
    if not old or new > (1 - WEIGHT_ALTERNATIVE_MIN_SAVING) * old:
        return None
    able = [g for g in gpus if name != "fp8" or runs_fp8_weights(g)]
    if not able:
        return None
    kinds = tuple(k for k in request.setup_kinds if k in LEAN_KINDS) or ("TP",)
    other = find_setups(model, able, replace(request, weight_dtype=name, alternative_weight_dtype=None, top=1,
                                             gpu_ids=(), setup_kinds=kinds))
    if not other.options or (options and other.options[0].price_per_hour
                             > WEIGHT_ALTERNATIVE_MAX_PRICE_SHARE * options[0].price_per_hour):
        return None
    return other.options[0]


def _alternative_note(alt: Setup, cheapest: Setup | None) -> str:
    """The hint for :func:`_weight_alternative`'s setup: what it costs beside the cheapest answer."""
    how = " (--quantization fp8 of this checkpoint)" if alt.weight_dtype == "fp8" else ""
    where = (f"{alt.num_gpus} x {alt.gpu_name} (tensor parallel {alt.tensor_parallel_size}, {alt.kv_cache_dtype} KV) "
             f"at ${alt.price_per_hour:,.2f}/h")
    if cheapest is None:
        return f"{alt.weight_dtype} weights{how} fit where nothing else does: {where}"
    verb = "halve" if alt.price_per_hour <= cheapest.price_per_hour / 2 else "cut"
    return (f"{alt.weight_dtype} weights{how} would {verb} the cheapest answer: {where}, instead of "
            f"${cheapest.price_per_hour:,.2f}/h")


def _search_up_to(model: ModelSpec, gpus, workload: Workload, tp_sizes: tuple[int, ...], engine_caps: dict | None,
                  request: FindRequest, max_gpus: int) -> list[Setup]:
    """Every setup of ``request``'s kinds on ``gpus`` within ``max_gpus`` (the search :func:`find_setups` runs, its
    tensor-parallel sizes widened to the new limit): what :mod:`planner.traffic.find_advice` checks a change with."""
    wider = tuple(t for t in dict.fromkeys(request.tensor_parallel_sizes)
                  if t <= max_gpus and valid_tensor_parallel(model, t)) or tp_sizes
    costs = candidate_costs(model, request, workload, wider, gpus)
    return [x.setup for x in _search(model, gpus, request, workload, costs, max_gpus, engine_caps)]


def _chosen_gpus(gpus, gpu_ids: tuple[str, ...]) -> list:
    """The GPUs of ``gpus`` whose id is in ``gpu_ids`` (all of them when it is empty).

    Raises:
        ValueError: an id that is none of ``gpus`` (named, with the ids to choose from).
    """
    gpus = list(gpus)
    if not gpu_ids:
        return gpus
    known = {g.id for g in gpus}
    unknown = [i for i in dict.fromkeys(gpu_ids) if i not in known]
    if unknown:
        raise ValueError(f"unknown GPU type {', '.join(map(repr, unknown))} in the GPU filter; choose among "
                         f"{', '.join(sorted(known))}")
    wanted = set(gpu_ids)
    return [g for g in gpus if g.id in wanted]


def _coverage(s: Setup, max_num_seqs: int | None = None) -> float:
    """Share of the demand a setup covers: of the per-GPU KV demand its budget holds (negative when weights do not
    fit), at most ``max_num_seqs / users per replica`` (an explicit cap runs no more at once)."""
    held = s.kv_cache_budget_bytes_per_gpu / s.kv_demand_bytes_per_gpu if s.kv_demand_bytes_per_gpu else 0.0
    return held if not max_num_seqs or s.users_per_replica <= 0 else min(held, max_num_seqs / s.users_per_replica)


def platform_groups(model: ModelSpec, gpus) -> list[list]:
    """``gpus`` as one group, or for a sparse-MLA model (DeepSeek-V3.2, GLM-5) with NVIDIA and AMD GPUs the NVIDIA
    ones and the AMD ones: vLLM stores fp8_ds_mla on the first and bf16 / plain fp8 on the second
    (:mod:`planner.engines.vllm_kv_formats` design note 5), so one (tp, KV) candidate's costs cannot serve both."""
    rocm = [g for g in gpus if is_rocm_gpu(g.id)]
    if not rocm or len(rocm) == len(gpus) or indexed_mla_layer(model) is None:
        return [list(gpus)]
    return [[g for g in gpus if not is_rocm_gpu(g.id)], rocm]


def _search(model: ModelSpec, gpus, request: FindRequest, workload: Workload,
            costs: dict[tuple[int, str], CandidateCosts], max_gpus: int, engine_caps: dict | None) -> list[Candidate]:
    """Every setup of the kinds asked (:attr:`FindRequest.setup_kinds`) within ``max_gpus``: the TP x replicas
    rows, then for an MoE or MLA model under an engine that has them the DP+EP, DCP and disaggregated rows
    (:mod:`planner.traffic.find_scale`). A sparse-MLA model's AMD GPUs are searched apart, on their own
    costs (:func:`platform_groups`)."""
    groups = platform_groups(model, gpus)
    if len(groups) > 1:
        tps = tuple(dict.fromkeys(tp for tp, _ in costs))
        return [x for group in groups for x in _search(model, group, request, workload, candidate_costs(
            model, request, workload, tps, group), max_gpus, engine_caps)]
    demand = DemandCache(workload, costs, block_size=request.block_size, num_trials=request.num_trials,
                         seed=request.seed, quantile=1 - request.max_preemption_probability)
    out = _evaluate(model, gpus, request, workload, costs, max_gpus, engine_caps, demand)
    if "TP" not in request.setup_kinds:
        out = []
    if not scale_searched(model, request):
        return out
    shapes = [x for x in scale_shapes(model, request.engine, tuple(dict.fromkeys(tp for tp, _ in costs)), max_gpus)
              if x.kind in request.setup_kinds]

    def make(gpu, c, tp, ranks, per_rank, cap, weights, kv_split):
        on = c.on(gpu)
        return _setup(model, gpu, request, workload, on, tp, ranks, per_rank, demand(tp, c.kv_name, per_rank, on), cap,
                      weights=weights, kv_split=kv_split)

    for gpu in gpus:
        out += launch_candidates(model, gpu, request, workload, costs, shapes, max_gpus, make)
        if "disaggregated" in request.setup_kinds:
            out += disagg_candidates(model, gpu, request, workload, costs,
                                     [x for x in shapes if x.kind in ("DP+EP", "DCP")], max_gpus)
    return out


def _evaluate(model: ModelSpec, gpus, request: FindRequest, workload: Workload,
              costs: dict[tuple[int, str], CandidateCosts], max_gpus: int, engine_caps: dict | None,
              demand: DemandCache) -> list[Candidate]:
    """Every GPU x (tp, dtype) x replica count within ``max_gpus`` (the TP rows); ``engine_caps``: the engine view's
    :class:`~planner.traffic.find_engine.EngineCapacity` cache, by (GPU, tp, KV flag) (None: no engine)."""
    users = request.users
    out = []
    for (tp, kv_name), c in costs.items():
        if engine_caps is not None and not offers_kv_dtype(request.engine, c.kv_flag):
            continue  # named in find_setups' notes
        for dp in range(1, max_gpus // tp + 1):
            if dp > users:
                break
            per_replica = ceil_div(users, dp)
            for gpu in gpus:
                on = c.on(gpu)  # plan()'s arithmetic on this GPU
                need = demand(tp, kv_name, per_replica, on)
                cap = None
                if engine_caps is not None:
                    key = (gpu.id, gpu.framework_memory_bytes, tp, c.kv_flag, request.engine_knobs)
                    if key not in engine_caps:
                        engine_caps[key] = engine_capacity(model, gpu, request, tp, c.kv_flag, workload.max_model_len)
                    cap = engine_caps[key]
                setup = _setup(model, gpu, request, workload, on, tp, dp, per_replica, need, cap)
                out.append(Candidate(setup, partial(_with_tp_command, model, gpu, request, workload, on, cap)))
    return out


def _setup(model: ModelSpec, gpu, request: FindRequest, workload: Workload, c: CandidateCosts,
           tp: int, dp: int, per_replica: int, demand: int, cap: EngineCapacity | str | None = None, *,
           weights: int | None = None, kv_split: int = 1) -> Setup:
    """One setup without its launch command (:func:`_with_tp_command` adds it to the listed ones); ``cap``: the
    engine's view of one replica (:mod:`planner.traffic.find_engine`), a sentence when the engine cannot plan it,
    or None for the budget arithmetic. ``weights``: the fullest GPU's weights when they are not ``c``'s (a DP+EP
    rank) [bytes]; ``kv_split``: GPUs one request's KV is split over along tokens (``-dcp``), for the roofline."""
    usable = int(gpu.framework_memory_bytes * request.gpu_memory_utilization)
    overhead = c.overhead(gpu)
    engine = cap if isinstance(cap, EngineCapacity) else None
    budget = (usable - c.weights - overhead) if cap is None else engine.available_kv_bytes if engine else 0
    by_engine = engine is not None and engine.starts and workload.is_fixed
    reasons = []
    if isinstance(cap, str) or (engine is not None and not engine.starts):
        reasons.append(cap if isinstance(cap, str) else f"{engine.engine} would refuse to start: {engine.reason}")
        per_replica_max = 0
    elif by_engine:  # the engine's own count: requests of max_model_len its pool holds
        per_replica_max = engine.users_per_replica
        demand = per_replica * engine.needed_bytes_per_request
        if per_replica > per_replica_max:
            reasons.append(f"{count_noun(per_replica, 'user')} per replica; {engine.engine} holds "
                           f"{count_noun(per_replica_max, 'request')} of "
                           f"{engine.max_model_len:,} tokens ({budget / GiB:.1f} GiB of KV per GPU)")
    elif budget <= 0:
        reasons.append(f"weights ({c.weights / GiB:.1f} GiB) + overhead ({overhead / GiB:.1f} GiB) per GPU "
                       f"exceed the usable {usable / GiB:.1f} GiB")
        per_replica_max = 0
    else:
        per_replica_max = (max(budget - c.prefill_extra, 0) // c.paged_per_seq if workload.is_fixed  # beside a chunk
                           else int(per_replica * budget / demand) if demand else 0)  # rough, before the simulation
        if demand > budget:
            reasons.append(f"{count_noun(per_replica, 'user')} per replica need {demand / GiB:.1f} GiB of KV per GPU; "
                           f"the budget is {budget / GiB:.1f} GiB")
    tpot, kv_seq = None, -(-c.exact_decode_seq // kv_split)
    if gpu.bandwidth_gb_s:
        tpot = time_per_output_token(c.weights if weights is None else weights, kv_seq, per_replica, gpu.bandwidth_gb_s)
        limit = request.max_time_per_output_token_s
        if limit is not None and tpot > limit:
            reasons.append(f"time per output token {tpot * 1000:.1f} ms (roofline) exceeds the "
                           f"{limit * 1000:.1f} ms limit")
    elif request.max_time_per_output_token_s is not None:
        reasons.append("no bandwidth in the catalog to check the time-per-token limit")
    notes = []
    if c.kv_name == "fp8" and getattr(gpu, "vendor", "NVIDIA") == "NVIDIA":
        notes += [n for n in (_fp8_backend(request, gpu, cap, c.kv_name).note,) if n]
    elif c.kv_name == "fp8" and not getattr(gpu, "fp8_native", True):
        notes.append("no native fp8 on this GPU: fp8 KV relies on software conversion in the attention backend")
    profile = engine.engine if engine else resolve_engine_name(request.engine or "vllm")  # the kernel of NVFP4 on ROCm
    if engine_profile(profile).family == "vllm" and (fp4 := rocm_nvfp4_note(model, profile, request.weight_dtype,
                                                                             gpu.name)):
        notes.append(fp4)
    num_gpus = tp * dp
    price = float(gpu.price_usd_per_hour)
    ttft, tokens_per_s, usd_per_mtok = _speed_and_cost(c, gpu, request, workload, tp, tpot, price * num_gpus)
    scheduler = request.knob("max_num_seqs")  # the link's or the flag's: a replica runs at most that many at once
    margin = engine.margin(per_replica) if by_engine else (1 - demand / budget) if budget > 0 else None
    capped = scheduler is not None and 0 < scheduler < per_replica_max  # the cap, not the KV cache, bounds the users
    if scheduler is not None and per_replica > scheduler:
        reasons.append(f"{count_noun(per_replica, 'user')} per replica; --max-num-seqs {scheduler:,} runs at most "
                       f"{count_noun(scheduler, 'sequence')} at once")
    elif scheduler is None and per_replica > DEFAULT_MAX_NUM_SEQS:
        notes.append(f"--max-num-seqs raised above vLLM's default {DEFAULT_MAX_NUM_SEQS}")
    if capped:
        margin = 1 - per_replica / scheduler
        notes.append(capped_note(scheduler))
    return Setup(
        gpu_id=gpu.id, gpu_name=gpu.name, num_gpus=num_gpus, tensor_parallel_size=tp, data_parallel_size=dp,
        kv_cache_dtype=engine.kv_cache_dtype if by_engine and engine.kv_cache_dtype else c.kv_name,
        kv_cache_dtype_flag=c.kv_flag, weight_dtype=request.weight_dtype, price_per_hour=round(price * num_gpus, 6),
        price_per_gpu_hour=price, users=request.users, users_per_replica=per_replica,
        max_concurrent_sequences=_scheduled(per_replica_max, scheduler) * dp, kv_cache_budget_bytes_per_gpu=budget,
        kv_demand_bytes_per_gpu=demand,
        margin=margin, max_num_seqs_cap=scheduler if capped else None,
        time_per_output_token_s=tpot, max_model_len=launch_max_model_len(request, workload.max_model_len),
        fits=not reasons,
        launch_command="", reasons=tuple(reasons), notes=tuple(notes),
        time_to_first_token_s=ttft, output_tokens_per_s=tokens_per_s, usd_per_million_output_tokens=usd_per_mtok,
        weights_bytes_per_gpu=weights if weights is not None else engine.weights_bytes if engine else c.weights,
        kv_bytes_per_sequence_per_gpu=kv_seq,
    )


def _with_tp_command(model: ModelSpec, gpu, request: FindRequest, workload: Workload, c: CandidateCosts,
                     cap: EngineCapacity | str | None, s: Setup) -> Setup:
    """A listed TP row with its launch command: the chosen engine's own (:func:`engine_launch_command`) outside
    vLLM, else :func:`vllm_serve_command` with the serving features' flags."""
    engine = cap if isinstance(cap, EngineCapacity) else None
    tp, dp, per_replica = s.tensor_parallel_size, s.data_parallel_size, s.users_per_replica
    if engine is not None and engine.family != "vllm":  # the chosen engine's own command and flags
        extra = "" if request.serving is None else serving_launch_flags(
            replace(request.serving, engine=engine.engine)).get(engine.engine, "")
        command = engine_launch_command(engine, model.model_id, tensor_parallel_size=tp, data_parallel_size=dp,
                                        kv_cache_dtype=c.kv_flag, weight_dtype=request.weight_dtype,
                                        max_num_seqs=launch_max_num_seqs(request, per_replica),
                                        block_size=request.block_size, extra=extra, knobs=launch_knobs(request))
    else:
        # vLLM's -dp couples an MoE model's ranks into one launch (planner/engines/vllm_moe_dispatch.py), the
        # DP+EP kind, not independent replicas: an MoE TP row is one server per replica behind a load balancer
        coupled = model.is_moe and dp > 1
        command = vllm_serve_command(
            model.model_id, tensor_parallel_size=tp, data_parallel_size=1 if coupled else dp,
            kv_cache_dtype=launch_kv_flag(model, request, c.kv_flag),
            weight_dtype=request.weight_dtype, max_model_len=launch_max_model_len(request, workload.max_model_len),
            max_num_seqs=launch_max_num_seqs(request, per_replica), knobs=launch_knobs(request),
            gpu_memory_utilization=request.gpu_memory_utilization,
            block_size=request.block_size, language_model_only=model.language_model_only,
            attention_backend=_fp8_backend(request, gpu, cap, c.kv_name).env_backend)
        if c.launch_extra:  # serving features: their vllm serve flags
            command = f"{command} {c.launch_extra}"
        if coupled:
            command += (f"  # one of {dp} replicas: start {dp} such servers behind a load balancer (vLLM's "
                        "--data-parallel-size would couple an MoE model's ranks into one expert-parallel launch)")
    return replace(s, launch_command=command)


def _fp8_backend(request: FindRequest, gpu, cap: EngineCapacity | str | None, kv_name: str) -> Fp8KvBackend:
    """The fp8-KV backend rule of a setup (:func:`planner.engines.vllm_fp8_kv.fp8_kv_backend`) under the vLLM
    profile that sizes it (the chosen engine's, else the newest vLLM's the budget prices), so the note and the
    launch command's ``VLLM_ATTENTION_BACKEND`` come from one answer; an empty one where it does not apply."""
    engine = cap.engine if isinstance(cap, EngineCapacity) else resolve_engine_name(request.engine or "vllm")
    return fp8_kv_backend(engine, gpu.name, kv_name) or Fp8KvBackend(None, "")


def _speed_and_cost(c: CandidateCosts, gpu, request: FindRequest, workload: Workload, tp: int, tpot: float | None,
                    price_per_hour: float) -> tuple[float | None, float | None, float | None]:
    """(time to first token [s], output tokens/s, USD per 10^6 output tokens) on the roofline.

    ``ttft = prefill_seconds(active params, mean prompt, bf16 TFLOPS, tp) + tpot`` (the new
    request's prompt on its replica's GPUs, then the decode step it shares with the running
    ones); ``tokens/s = users / tpot``; cost from
    :func:`planner.traffic.throughput.cost_per_million_tokens`. Worked example: 8.03 B active
    parameters, a 2,000-token prompt on one 989.5-TFLOPS H100 = 32.5 ms of prefill, plus a
    20 ms step = 52.5 ms.

    Sources: :mod:`planner.traffic.throughput` (Pope et al. 2023; Kaplan et al. 2020).
    """
    if tpot is None or tpot <= 0:
        return None, None, None
    tokens_per_s = request.users / tpot
    usd = cost_per_million_tokens(price_per_hour, 1, tokens_per_s)
    tflops = getattr(gpu, "bf16_dense_tflops", None)
    ttft = None
    if tflops:
        ttft = prefill_seconds(c.active_params, round(workload.prompt.mean_tokens), tflops, tp) + tpot
    return ttft, tokens_per_s, usd


def _with_simulated_users(s: Setup, costs, workload: Workload, request: FindRequest) -> Setup:
    """Replace a distribution setup's user count by the Monte-Carlo figure at the target probability.

    The figure never falls below the users the row was found to hold: a row fits when the ``1 - p`` quantile of
    its replica's demand (``request.num_trials`` draws, :class:`DemandCache`) is within the budget, while the
    figure comes from a second, shorter simulation (500 streams) that can land a user or two lower (QA: 41 users
    on 2 x T4 fit and listed 40, a negative spare). Below them, the figure is counted up from them by the same
    demand quantile that let the row fit. An explicit ``max_num_seqs`` below the figure caps it and sets the
    margin (:func:`planner.traffic.find_types.capped_note`)."""
    c = costs[(s.tensor_parallel_size, s.kv_cache_dtype)]
    c = c.by_gpu.get(s.gpu_id, c)  # its GPU's paged profile
    budget, per_replica, scheduler = s.kv_cache_budget_bytes_per_gpu, s.users_per_replica, request.knob("max_num_seqs")
    sim = simulate_concurrency(c.profile, budget, workload, num_trials=min(request.num_trials, 500), seed=request.seed)
    held = sim.users_at_risk(request.max_preemption_probability)
    if s.fits and held < per_replica:  # the search's own quantile held per_replica: count on from there
        demand = DemandCache(workload, costs, block_size=request.block_size, num_trials=request.num_trials,
                             seed=request.seed, quantile=1 - request.max_preemption_probability)
        held = per_replica
        while (scheduler is None or held < scheduler) and demand(s.tensor_parallel_size, c.kv_name, held + 1,
                                                                 c) <= budget:
            held += 1
    notes = tuple(n for n in s.notes if not n.startswith(CAPPED_NOTE_START))  # the rough count's verdict
    if scheduler is not None and 0 < scheduler < held:
        return replace(s, max_concurrent_sequences=scheduler * s.data_parallel_size, max_num_seqs_cap=scheduler,
                       margin=1 - per_replica / scheduler, notes=(*notes, capped_note(scheduler)))
    margin = 1 - s.kv_demand_bytes_per_gpu / budget if budget > 0 else None
    return replace(s, max_concurrent_sequences=held * s.data_parallel_size, max_num_seqs_cap=None, margin=margin,
                   notes=notes)


def _scheduled(held: int, max_num_seqs: int | None) -> int:
    """Users one replica runs at once: the ``held`` its KV cache holds, at most an explicit ``max_num_seqs``
    (vLLM's scheduler admits no more running requests: vllm/v1/core/sched/scheduler.py); ``held`` without one."""
    return held if max_num_seqs is None or held <= max_num_seqs else max_num_seqs
