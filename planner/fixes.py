"""Fixes that fix: each suggestion re-planned with the fix applied, checked against the engine, ordered.

:func:`planner.diagnose.diagnose` proposes knobs from the budget arithmetic alone, so a fix can make the
budget fit while the chosen engine (whose own view holds the weights as its kernels lay them out and
deducts its own profile pass, :mod:`planner.engines`) would still refuse to start. Example (issue 27, before
the budget paged windowed layers and their prefill peak as vLLM does): gpt-oss-120b at 131,072 tokens on one
H100 SXM: "context 87,200" fit the budget but vLLM still had -1.11 GiB for its cache; only "2 GPUs" made it
start (11.79x concurrency).

* :func:`checked_fixes` (Home): each :class:`~planner.diagnose.Fix` of a :class:`~planner.budget.Plan`,
  applied to the :class:`~planner.budget.PlanRequest` (kept only when the new plan fits) and to the
  :class:`~planner.engines.EngineRequest` (the engine verdict goes into the help text).
* :func:`engine_fixes` (Engine page): when an engine plan refuses to start, the one-knob changes that
  make it start (or, for utilization, how far it gets), with the engine's own numbers; a smaller weight
  dtype among them (fp8 where the GPU runs it, else int4) when it shrinks the weights.
* :func:`engine_start_fixes` (Home, when the budget fits but the engine would refuse): those of
  :func:`engine_fixes` with which the engine starts *and* the budget still fits, so no button leads to
  "Fits" beside "would refuse". :func:`checked_fixes` keeps only fixes the engine accepts for the same reason.

Ordering rule (:func:`_order`): fixes with which the engine starts come first; within each group the
smallest *relative change of the user's request* comes first, ties in the order proposed:

* a number (context tokens, batch, GPUs, utilization): ``|new - old| / old``
  (0.90 -> 0.95 utilization: 0.056; 131,072 -> 87,200 tokens: 0.33; 1 -> 2 GPUs: 1.0);
* a dtype: the fraction of bytes it removes, ``1 - new / old`` of the KV bytes per token (KV dtype) or
  of the weight bytes (weight dtype) (bf16 -> fp8 KV: 0.5).

Sources: the engines' refusal texts ("Try increasing gpu_memory_utilization, more tensor/pipeline
parallelism, or a smaller weight dtype"; "decreasing `max_model_len`"), vllm/v1/core/kv_cache_utils.py.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.budget import Plan, PlanRequest, plan
from planner.diagnose import Fix, valid_tensor_parallel_sizes
from planner.engines import ENGINE_PROFILES, EnginePlan, EngineRequest, plan_engine, resolve_engine_name
from planner.engines.loaded import gpu_capability
from planner.engines.sglang_request_cap import holds_one_request, pool_context_len
from planner.engines.types import PREFILL_PEAK_REASON
from planner.model import ModelSpec
from planner.model.params import model_weight_bytes
from planner.pipeline import plan_pipeline

SHORT_NAMES = {"batch_size": "Batch", "context_len": "Context", "max_model_len": "Max len", "num_gpus": "GPUs",
               "kv_cache_dtype": "KV dtype", "weight_dtype": "Weights", "gpu_memory_utilization": "Utilization",
               "tensor_parallel_size": "Tensor parallel", "prefill_tensor_parallel_size": "Prefill TP",
               "decode_tensor_parallel_size": "Decode TP", "num_nodes": "Nodes",
               "max_num_seqs": "Max seqs"}
"""Button names of the knobs a fix sets (the long wording stays in the help text); the tensor-parallel three: the
Disaggregation page's pools (:attr:`planner.scale.disagg.DisaggPlan.tensor_parallel_fixes`); ``num_nodes``: the
Engine page's nodes per replica (:mod:`planner.engines.replica_layout`)."""

ENGINE_FIELDS = {"context_len": "max_model_len", "max_model_len": "max_model_len", "num_gpus": "tensor_parallel_size",
                 "kv_cache_dtype": "kv_cache_dtype", "weight_dtype": "weight_dtype",
                 "gpu_memory_utilization": "gpu_memory_utilization"}
"""Fix key -> :class:`~planner.engines.EngineRequest` field (``batch_size`` does not change what an engine
allocates at startup, so it has none)."""

UTILIZATION_FIX = 0.95
"""The utilization :func:`engine_fixes` offers (the engines' own advice is "increase gpu_memory_utilization";
0.95 leaves 5% of the device to other processes)."""

MAX_GPU_STEPS = 4
"""How many larger tensor-parallel sizes :func:`engine_fixes` tries (1 -> 2, 4, 8, 16)."""

WEIGHT_FIXES = ("fp8", "int4")
"""Weight dtypes :func:`engine_fixes` tries, in order; the first that starts is offered (the engines' refusal:
"... or a smaller weight dtype"). fp8 is vLLM's / SGLang's online ``--quantization fp8`` of a 16-bit checkpoint;
int4 needs a checkpoint quantized that way (AWQ / GPTQ), which the launch command says in a comment."""

MIN_WEIGHT_SAVING = 0.25
"""A weight dtype is tried only when it removes at least this share of the weight bytes [fraction] (so an
already-quantized checkpoint, e.g. gpt-oss's MXFP4 experts, gets no "fp8" fix that changes little)."""

FP8_WEIGHTS_MIN_CAPABILITY = (8, 0)
"""Lowest CUDA compute capability on which vLLM runs fp8 weights: natively from 8.9 (Ada, Hopper), weight-only
through the FP8 Marlin kernel on 8.0-8.6 (Ampere) (vllm/model_executor/layers/quantization/fp8.py,
``utils/marlin_utils_fp8.py``); a GPU the name lookup does not know counts as Hopper
(:func:`planner.engines.loaded.gpu_capability`)."""


@dataclass(frozen=True)
class CheckedFix:
    """A fix, applied and checked.

    Attributes:
        fix: The :class:`~planner.diagnose.Fix` (its text, knob ``key`` and ``value``).
        label: Short button text, under 24 characters ("GPUs → 2", "Context → 87,200"; a GPU count with the
            nodes it needs or the ``-dcp`` it drops is longer: "GPUs → 10, 2 nodes, no -dcp").
        help: The fix's text plus what the engine does with it.
        change: Relative change of the request (module docstring), >= 0 [fraction].
        starts: True when the engine plan with the fix starts; False when it still refuses; None when the
            engine could not plan it (a dtype it does not offer) or no engine was given.
        engine_plan: The engine plan with the fix applied, or None.
    """

    fix: Fix
    label: str
    help: str
    change: float
    starts: bool | None
    engine_plan: EnginePlan | None = None
    also: tuple[tuple[str, int], ...] = ()
    """Other inputs the fix sets with its own: ``(("num_nodes", 4),)`` where its GPUs need more nodes than the
    request has (:func:`_try_on_nodes`), so one click gives the launch that starts."""


def short_label(key: str, value: int | float | str) -> str:
    """``"GPUs → 2"``, ``"Context → 87,200"``, ``"Utilization → 0.95"``: the knob and its value in full."""
    shown = f"{value:,}" if isinstance(value, int) else f"{value:g}" if isinstance(value, float) else value
    return f"{SHORT_NAMES.get(key, key)} → {shown}"


def _relative(old: float, new: float) -> float:
    """``|new - old| / old`` [fraction]; 1.0 when ``old`` is not positive."""
    return abs(new - old) / old if old > 0 else 1.0


def concurrency_text(fixed: EnginePlan) -> str:
    """``"1.64x concurrency at 131,072 tokens per request"``: vLLM's "Maximum concurrency for 131,072 tokens per
    request: 1.64x" (vllm/v1/core/kv_cache_utils.py), labelled wherever a fix quotes it (QA: a bare "3.74x")."""
    return f"{fixed.max_concurrency:.2f}x concurrency at {fixed.max_model_len:,} tokens per request"


def _starts_at(fixed: EnginePlan) -> str:
    """``"starts with 1.64x concurrency at 131,072 tokens per request"``: the length and concurrency an engine
    starts with after a fix (:func:`concurrency_text`)."""
    return f"starts with {concurrency_text(fixed)}"


def _peak_reason(fixed: EnginePlan, users: int) -> str:
    """`` (users are the requests ... at its prefill peak)`` (:data:`~planner.engines.types.PREFILL_PEAK_REASON`)
    when a fix leaves ``users`` sequences that fit the budget above the concurrency the engine prints (vLLM V1
    with windowed layers: the print counts each request at its prefill peak), else "". QA: "lower batch_size to 3
    ...: starts with 2.75x concurrency" for gpt-oss-120b on one H100 SXM at 32,768 tokens said no why."""
    return f" ({PREFILL_PEAK_REASON})" if fixed.decodes_more_than_printed and users > fixed.max_concurrency else ""


def _kv_tokens(engine: str, fixed: EnginePlan) -> str:
    """``"vllm starts with 214,607 tokens of KV cache."``: what a fix's help adds to its text."""
    return f"{engine} starts with {fixed.engine_kv_cache_tokens:,} tokens of KV cache."


def _engine_outcome(engine: str, fixed: EnginePlan | None, error: str = "") -> str:
    """The help's second sentence: whether ``engine`` starts with the fix, with its figures."""
    if fixed is None:
        return f"{engine} cannot plan it: {error}" if error else ""
    if fixed.starts:  # an SGLang pool shorter than one request starts and rejects it (sglang_request_cap)
        return (f"{engine} starts: {fixed.engine_kv_cache_tokens:,} tokens of KV cache, {concurrency_text(fixed)}."
                + ("" if holds_one_request(fixed) else " Its pool is shorter than one request."))
    reach = (f" It would start with max_model_len up to {fixed.engine_max_model_len:,}."
             if fixed.engine_max_model_len > 0 else "")
    return f"Not enough for {engine}: it would still refuse to start.{reach}"


def _try_engine(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                changes: dict, scale=None) -> tuple[EnginePlan | None, str]:
    """``plan_engine`` with ``changes`` applied; ``(None, message)`` when the engine cannot plan it. ``scale``: a
    :class:`planner.scale.ScaleRequest` (``-dcp``, ``--enable-expert-parallel``) the launch keeps, planned by
    :func:`planner.scale.plan_scale` as the Engine page plans it (its :meth:`~planner.scale.ScalePlan.engine_view`:
    the printed tokens and concurrency under the split)."""
    try:
        if scale is None:
            return plan_engine(model, gpu_memory_bytes, replace(request, **changes)), ""
        from planner.scale import plan_scale  # noqa: PLC0415 - planner.scale imports the engines

        return plan_scale(model, gpu_memory_bytes, replace(request, **changes), scale).engine_view(), ""
    except ValueError as exc:
        return None, str(exc)


def _try_on_nodes(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                  changes: dict, scale=None) -> tuple[EnginePlan | None, str, int]:
    """:func:`_try_engine` of a change in GPUs per replica, as it runs on nodes of
    :data:`~planner.scale.layout.DEFAULT_GPUS_PER_NODE`: where the GPUs outgrow the request's nodes, the launch
    over the nodes that hold them (:func:`planner.engines.replica_layout.node_advice`: vLLM over Ray, SGLang's
    ``--nnodes``); ``(plan, error, nodes)``, ``nodes`` above the request's only then. QA: "GPUs → 32" for
    DeepSeek-V3.2 on 8 H200 said "starts with 16.98x", and the page it opened refused the one-node launch ("World
    size (32 ...) is larger than the 8 GPUs of this node")."""
    from planner.engines.replica_layout import node_advice  # noqa: PLC0415 - imports planner.engines.dispatch
    from planner.scale.layout import DEFAULT_GPUS_PER_NODE  # noqa: PLC0415

    plan, error = _try_engine(model, gpu_memory_bytes, request, changes, scale)
    if plan is None:
        return plan, error, request.num_nodes
    try:
        advice = node_advice(model, gpu_memory_bytes, replace(request, **changes), DEFAULT_GPUS_PER_NODE)
    except ValueError as exc:
        return None, str(exc), request.num_nodes
    if advice is None:
        return plan, error, request.num_nodes
    if scale is None:
        return advice.plan, "", advice.num_nodes
    across = {**changes, "num_nodes": advice.num_nodes, "distributed_executor_backend": "ray"}  # as node_advice
    plan, error = _try_engine(model, gpu_memory_bytes, request, across, scale)
    return plan, error, advice.num_nodes


def _nodes_words(nodes: int, before: int) -> tuple[str, tuple[tuple[str, int], ...]]:
    """``(" over 4 nodes", (("num_nodes", 4),))`` for a fix whose GPUs need ``nodes`` nodes where the request had
    ``before``; ``("", ())`` where they fit those."""
    return ("", ()) if nodes <= before else (f" over {nodes} nodes", (("num_nodes", nodes),))


def _fix_label(key: str, value, also: tuple[tuple[str, int], ...]) -> str:
    """:func:`short_label`, with the nodes a GPU-count fix also sets: ``"GPUs → 32, 4 nodes"``."""
    nodes = dict(also).get("num_nodes")
    return short_label(key, value) + (f", {nodes} nodes" if nodes else "")


def _order(fixes: list[CheckedFix]) -> list[CheckedFix]:
    """Starting fixes first, then the smallest relative change (module docstring); stable for ties."""
    return sorted(fixes, key=lambda f: (f.starts is not True, f.change))


def checked_fixes(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, base: Plan,
                  engine_request: EngineRequest | None = None, *, gpu_id: str = "", scale=None,
                  budget_model: ModelSpec | None = None) -> list[CheckedFix]:
    """``base.suggestions`` that name a knob, each applied and checked, in :func:`_order`.

    Args:
        model: The planned model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        request: The request ``base`` was planned with.
        base: ``plan(model, gpu_memory_bytes, request)``.
        engine_request: The chosen engine's request for the same inputs (Home's engine view); None = no
            engine check.
        gpu_id: Catalog id, passed to :func:`planner.budget.plan`.
        scale: The :class:`planner.scale.ScaleRequest` of Home's launch where it plans the link's ``-dcp`` (and
            ``--enable-expert-parallel``) through :func:`planner.scale.plan_scale`: each fix's engine check is that
            launch after the fix (:func:`_try_engine` with it), as the Engine page plans it, and the engine's own
            fixes are searched on it (:func:`engine_start_fixes`). QA: DeepSeek-V3 on 8 H200 under vllm-v0.11 at
            131,072 tokens, utilization 0.61, ``-dcp 8`` (the budget does not fit): "Utilization → 0.95: starts
            with 5.56x" where the Engine page then prints 44.45x. None: the launch without it, its figures split
            by :func:`_dcp_view`.
        budget_model: The model ``base`` prices where it is not ``model``: one data-parallel rank's share of the
            routed experts (:func:`planner.rank_budget.v1_model`, Home's budget of a scale launch); each fix's
            budget is re-planned with it, its engine check with ``model`` (the launch splits the experts itself).

    Returns:
        One :class:`CheckedFix` per fix whose re-planned budget fits and with which the engine starts (a fix
        the engine still refuses is left out: applied, it would show "Fits" beside "would refuse"; one the
        engine cannot plan stays, ``starts`` None); then :func:`engine_start_fixes` of the refused engine plan
        that the budget fixes lack (a knob or value of the engine's own). Example: gpt-oss-120b at 131,072 tokens,
        batch 3, on one A100 SXM 80GB under vLLM: "Utilization → 0.95" (vLLM's), "Context → 98,208",
        "KV dtype → fp8", "GPUs → 2"; not "Batch → 2", which fits the budget while vLLM still cannot hold one
        131,072-token request (its startup does not depend on the batch).
    """
    found: list[CheckedFix] = []
    for fix in base.suggestions:
        if not isinstance(fix, Fix) or not hasattr(request, fix.key):
            continue
        fixed = _budget_with(budget_model or model, gpu_memory_bytes, request, base.pipeline_parallel_size, gpu_id, fix,
                             base.decode_context_parallel_size)
        if engine_request is not None and fix.key == "context_len":  # SGLang: a context its pool holds the batch of
            fix, fixed = _pool_context_fix(model, gpu_memory_bytes, request, engine_request, base, fix, fixed, scale,
                                           budget_model or model, gpu_id)
        if fix is None or not fixed.fits:
            continue
        if fix.key == "kv_cache_dtype":
            change = 1 - fixed.kv_cache_bytes_per_token / base.kv_cache_bytes_per_token
        elif fix.key == "weight_dtype":
            change = 1 - fixed.weights_bytes / base.weights_bytes
        else:
            change = _relative(getattr(request, fix.key), fix.value)
        engine_plan, error, outcome, nodes = None, "", ".", ("", ())
        if engine_request is not None:
            field = ENGINE_FIELDS.get(fix.key)
            changes = {field: _engine_value(engine_request, field, fix.value)} if field else {}  # batch: no change
            if field == "tensor_parallel_size":  # more GPUs: on the nodes that hold them
                engine_plan, error, count = _try_on_nodes(model, gpu_memory_bytes, engine_request, changes, scale)
                nodes = _nodes_words(count, engine_request.num_nodes)
            else:
                engine_plan, error = _try_engine(model, gpu_memory_bytes, engine_request, changes, scale)
            if scale is None:  # the launch without the split: its figures as the -dcp launch prints them
                engine_plan = _dcp_view(model, gpu_memory_bytes, engine_request, field, fix.value, nodes[1],
                                        engine_plan, base.decode_context_parallel_size)
            engine = resolve_engine_name(engine_request.engine)
            users = fix.value if fix.key == "batch_size" else request.batch_size  # the batch the fix leaves
            where = nodes[0].strip() + " it " if nodes[0] else ""
            outcome = (f": {where}{_starts_at(engine_plan)}{_peak_reason(engine_plan, users)}; "
                       f"{_kv_tokens(engine, engine_plan)}" if engine_plan is not None
                       else f". {_engine_outcome(engine, engine_plan, error)}")  # the engine fixes' wording
        if engine_plan is not None and not holds_one_request(engine_plan):
            continue  # the budget fits, the engine would refuse (or SGLang reject the request): not a fix
        found.append(CheckedFix(fix=fix, label=_fix_label(fix.key, fix.value, nodes[1]),
                                help=f"{fix}{outcome}".rstrip(), change=max(change, 0.0),
                                starts=None if engine_plan is None else engine_plan.starts, engine_plan=engine_plan,
                                also=nodes[1]))
    if engine_request is not None:
        refused, _ = _try_engine(model, gpu_memory_bytes, engine_request, {}, scale)
        dcp_view = refused if scale is not None else _dcp_view(model, gpu_memory_bytes, engine_request, None, None,
                                                                (), refused, base.decode_context_parallel_size)
        if refused is not None and not holds_one_request(refused) and not holds_one_request(dcp_view):
            have = {(f.fix.key, f.fix.value) for f in found}
            found += [f for f in engine_start_fixes(
                model, gpu_memory_bytes, request, engine_request, refused, gpu_id=gpu_id,
                decode_context_parallel_size=base.decode_context_parallel_size, scale=scale,
                budget_model=budget_model)
                if (f.fix.key, f.fix.value) not in have]
    return _order(found)


def _pool_context_fix(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, engine_request: EngineRequest,
                      base: Plan, fix: Fix, fixed: Plan, scale, budget_model: ModelSpec,
                      gpu_id: str) -> tuple[Fix | None, Plan]:
    """A context fix as SGLang holds it: where its pool at ``fix.value`` holds fewer than the batch of whole requests
    (it caps each request at the pool, :mod:`planner.engines.sglang_request_cap`), the longest context it holds the
    batch at (:func:`~planner.engines.sglang_request_cap.pool_context_len`), with the budget re-planned there; QA:
    Qwen3-32B on one H100 SXM at 32,768 tokens offered "Context → 27,904 (fits this batch)" where the pool held
    18,754 tokens. ``(fix, fixed)`` as they are under any other engine or where the pool holds the batch."""
    if ENGINE_PROFILES[resolve_engine_name(engine_request.engine)].family != "sglang" or not fixed.fits:
        return fix, fixed
    at, _ = _try_engine(model, gpu_memory_bytes, engine_request, {"max_model_len": fix.value}, scale)
    if at is None or not at.starts or at.engine_kv_cache_tokens >= fix.value * request.batch_size:
        return fix, fixed
    context = pool_context_len(at, request.batch_size)
    if context <= 0:
        return None, fixed
    held = Fix(f"lower context_len to {context:,} (fits this batch in {at.engine}'s KV pool of "
               f"{at.engine_kv_cache_tokens:,} tokens)", "context_len", context)
    return held, _budget_with(budget_model, gpu_memory_bytes, request, base.pipeline_parallel_size, gpu_id, held,
                              base.decode_context_parallel_size)


def _dcp_view(model: ModelSpec, gpu_memory_bytes: int, engine_request: EngineRequest, field: str | None, value,
              also: tuple[tuple[str, int], ...], fixed: EnginePlan | None, dcp: int) -> EnginePlan | None:
    """``fixed`` (the engine plan of a fix, ``field`` set to ``value`` in ``engine_request`` plus the nodes in
    ``also``) as the ``-dcp dcp`` launch the fixed budget plans prints it: its concurrency, KV tokens, accepted
    length and verdict are those of :func:`planner.scale.context.apply_dcp` (one GPU keeps ``ceil(L / dcp)`` of a
    request's tokens, ``max_memory_usage_bytes`` in vllm/v1/kv_cache_interface.py), as the Engine page shows them.
    QA: DeepSeek-V3.2 on 8 H200 at 131,072 tokens with ``-dcp 8``: "Batch → 57 ... starts with 7.21x" where the
    Engine page prints 57.67x. ``fixed`` as it is without a split, or where ``dcp`` does not divide the fix's
    tensor-parallel size (the budget drops the split there, :func:`_drops_dcp`) or the engine has no ``-dcp``."""
    if fixed is None or dcp <= 1:
        return fixed
    from planner.scale.context import apply_dcp  # noqa: PLC0415 - planner.scale imports this module's callers

    nodes = dict(also)  # across nodes: the Ray launch :func:`_try_on_nodes` planned (replica_layout.node_advice)
    request = replace(engine_request, **({field: _engine_value(engine_request, field, value)} if field else {}),
                      **nodes, **({"distributed_executor_backend": "ray"} if nodes else {}))
    if request.tensor_parallel_size % dcp:
        return fixed
    try:
        cp = apply_dcp(model, gpu_memory_bytes, request, fixed, dcp)
    except ValueError:
        return fixed
    return replace(fixed, max_concurrency=cp.max_concurrency, engine_kv_cache_tokens=cp.engine_kv_cache_tokens,
                   engine_max_model_len=cp.engine_max_model_len, starts=cp.starts, reasons=cp.reasons,
                   max_concurrency_decoding=cp.max_concurrency_decoding)


def _engine_value(engine_request: EngineRequest, field: str, value):
    """A budget fix's value as the engine request's ``field`` takes it: a ``num_gpus`` fix names GPUs per replica,
    which pipeline stages split (tensor parallel = GPUs / stages, ``--num-gpus`` = tp x pp in planner/cli), so Home's
    "use num_gpus 16" on a link of 2 stages is checked as 2 stages of 8, not 2 of 16; any other value as it is."""
    pp = engine_request.pipeline_parallel_size
    return value // pp if field == "tensor_parallel_size" and pp > 1 and value % pp == 0 else value


def try_texts(base: Plan, fixes: list[CheckedFix] | None) -> list[str]:
    """The "Try:" list of a plan that does not fit, as Home's verdict and ``python -m planner plan`` print it.

    Args:
        base: The plan.
        fixes: :func:`checked_fixes` of ``base``; None = no check (a plan the check does not cover: the CLI's
            pipeline or data-parallel plans), ``base.suggestions`` as they are.

    Returns:
        Each checked fix's help, in :func:`checked_fixes`'s order, then the suggestions that name no knob
        ("choose a GPU with more memory"); [] when every knob fix was dropped and none other remains (then
        :func:`no_single_fix_text`). Example (QA): Qwen3.6-35B-A3B at 32,768 tokens, batch 100, on one H100 SXM:
        "use kv_cache_dtype fp8" is not in it (70.50 GiB halved is still far over the 2.66 GiB budget).
    """
    if fixes is None:
        return [str(s) for s in base.suggestions]
    return [*_reason_once([f.help for f in fixes]), *(str(s) for s in base.suggestions if not isinstance(s, Fix))]


PEAK_REASON_AGAIN = " (more users than its printed concurrency, for the reason given above)"
"""What a fix's text in the "Try:" list says in place of :data:`~planner.engines.types.PREFILL_PEAK_REASON` when
an earlier fix in the list gave it (QA: the same 30-word sentence repeated under each of two fixes)."""


def _reason_once(texts: list[str]) -> list[str]:
    """``texts`` with the prefill-peak reason kept in the first that has it and shortened in the others
    (:data:`PEAK_REASON_AGAIN`); each fix's own help, on its button, keeps the whole sentence."""
    reason, out, seen = f" ({PREFILL_PEAK_REASON})", [], False
    for text in texts:
        out.append(text.replace(reason, PEAK_REASON_AGAIN) if seen else text)
        seen = seen or reason in text
    return out


def no_single_fix_text(base: Plan) -> str:
    """What a plan says when :func:`try_texts` is empty although it has suggestions: each was planned alone and
    none fits (QA: "Try:" with nothing after it)."""
    return ("Each of these was planned alone and still does not fit: " + "; ".join(map(str, base.suggestions))
            + ". Combine two of them, or lower the batch or the context.")


def engine_start_fixes(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, engine_request: EngineRequest,
                       refused: EnginePlan, *, gpu_id: str = "",
                       decode_context_parallel_size: int = 1, scale=None,
                       budget_model: ModelSpec | None = None) -> list[CheckedFix]:
    """Home's fixes for a plan whose budget fits (or not) while the engine refuses: :func:`engine_fixes` with
    the Home page's context key, kept when the engine starts with it *and* the budget re-planned with it fits.

    Args:
        model, gpu_memory_bytes: As for :func:`planner.budget.plan` [bytes].
        request: Home's budget request (its ``num_gpus``: every GPU of the replica, which the engine request's
            pipeline stages split where ``tensor_parallel_size x pipeline_parallel_size`` is that many).
        engine_request: The engine request for the same inputs (``refused`` was planned from it).
        refused: ``plan_engine(model, gpu_memory_bytes, engine_request)``; [] when it starts.
        gpu_id: Catalog id, passed to :func:`planner.budget.plan`.
        decode_context_parallel_size: The budget's ``-dcp`` (``Plan.decode_context_parallel_size`` of Home's plan,
            :func:`planner.context_budget.plan_context_parallel`); neither request carries it (Home's engine panel
            adds it through :func:`planner.scale.plan_scale` and asks for these fixes only when that launch
            refuses too). Each fix's budget is re-planned with it, as the page plans the fix; a GPU count whose
            tensor-parallel size it does not divide (vLLM refuses: ``tp_size ... must be divisible by dcp_size``,
            ``ParallelConfig`` in vllm/config/parallel.py) is planned without it, and its label and help say so.
        scale: The :class:`planner.scale.ScaleRequest` of Home's launch when it plans the link's ``-dcp`` (and
            ``--enable-expert-parallel``) through :func:`planner.scale.plan_scale` (``refused`` is then that
            launch's :meth:`~planner.scale.ScalePlan.engine_view`): each fix is searched on that launch
            (:func:`engine_fixes`), so its figures are the Engine page's after the fix (QA: DeepSeek-V3 on 8 H200
            under vllm-v0.11 at 131,072 tokens, utilization 0.61, ``-dcp 8``: "Utilization → 0.95: starts with
            5.56x", the launch without the split). None: ``engine_request`` as it is.
        budget_model: As for :func:`checked_fixes`: the model the budget re-plans (default ``model``).

    Returns:
        :class:`CheckedFix` list in :func:`_order` (every ``starts`` True). Example: gpt-oss-120b at 131,072
        tokens on one A100 SXM 80GB (the budget fits; vLLM has 4.43 GiB for a 4.58 GiB request): "Context →
        126,848", "Utilization → 0.95", "KV dtype → fp8", "GPUs → 2". A utilization fix with which the engine
        starts only at a shorter max_model_len is dropped (applied alone it would still refuse).
    """
    tp, pp = engine_request.tensor_parallel_size, engine_request.pipeline_parallel_size
    stages = pp if request.num_gpus == tp * pp else 1  # the budget plans the link's stages where they split its GPUs
    dcp, out = decode_context_parallel_size, []
    for f in engine_fixes(model, gpu_memory_bytes, engine_request, refused, context_key="context_len", scale=scale):
        if f.starts and hasattr(request, f.fix.key) and _budget_with(
                budget_model or model, gpu_memory_bytes, request, stages, gpu_id, f.fix, dcp).fits:
            out.append(_drops_dcp(f, dcp, stages) if f.fix.key == "num_gpus" else f)
    return out


def _drops_dcp(f: CheckedFix, dcp: int, stages: int) -> CheckedFix:
    """A GPU-count fix of a plan under ``-dcp dcp`` whose tensor-parallel size (GPUs / ``stages``) ``dcp`` does not
    divide: vLLM refuses that split (``tp_size ... must be divisible by dcp_size``, ``ParallelConfig`` in
    vllm/config/parallel.py), so the page plans the fix without it (:func:`_budget_with`, ui.feature_line.link_dcp);
    the label and help say the DCP is dropped. Any other fix as it is."""
    tp = f.fix.value // stages if f.fix.value % stages == 0 else f.fix.value
    if dcp <= 1 or tp % dcp == 0:
        return f
    return replace(f, label=f"{f.label}, no -dcp", help=(
        f"{f.help} The budget drops decode context parallel {dcp}: it must divide the tensor-parallel size {tp}."))


def _budget_with(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, stages: int, gpu_id: str,
                 fix: Fix, dcp: int = 1) -> Plan:
    """The budget re-planned with ``fix`` applied, in ``stages`` pipeline stages where they still divide its GPUs
    (:func:`planner.pipeline.plan_pipeline`: a "use num_gpus 16" on 2 stages is 2 stages of 8), else as one
    tensor-parallel group; with ``dcp`` > 1 (the base plan's decode context parallel size) split along tokens as
    the base was (:func:`planner.context_budget.plan_context_parallel`) where the fixed GPUs still allow it."""
    fixed = replace(request, **{fix.key: fix.value})
    pp = stages if fixed.num_gpus % stages == 0 else 1
    if dcp > 1:
        from planner.context_budget import plan_context_parallel  # noqa: PLC0415 - only a -dcp plan needs it

        try:
            return plan_context_parallel(model, gpu_memory_bytes, fixed, gpu_id, decode_context_parallel_size=dcp,
                                         pipeline_parallel_size=pp)
        except ValueError:  # the fixed GPUs do not allow the split: the plain budget
            pass
    return plan_pipeline(model, gpu_memory_bytes, fixed, gpu_id, pipeline_parallel_size=pp)


def engine_fixes(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest, refused: EnginePlan, *,
                 context_key: str = "max_model_len", scale=None) -> list[CheckedFix]:
    """One-knob changes for an engine plan that refuses to start, each re-planned, in :func:`_order`.

    Candidates: GPU memory utilization :data:`UTILIZATION_FIX` (kept when it starts, or when it makes the
    engine accept a longer max_model_len: "utilization 0.95: starts up to 66,480 tokens"); the smallest
    larger tensor-parallel size (of :func:`~planner.diagnose.valid_tensor_parallel_sizes`, up to
    :data:`MAX_GPU_STEPS` tried) that starts; max_model_len lowered to the largest the engine accepts;
    fp8 KV cache where the engine offers it; a smaller weight dtype (:data:`WEIGHT_FIXES`: fp8 on GPUs of
    compute capability :data:`FP8_WEIGHTS_MIN_CAPABILITY` or newer, else int4) when it removes at least
    :data:`MIN_WEIGHT_SAVING` of the weight bytes. Only those that start are kept, apart from the
    utilization note above.

    Args:
        model, gpu_memory_bytes: As for :func:`planner.engines.plan_engine` [bytes].
        request: The refused request.
        refused: ``plan_engine(model, gpu_memory_bytes, request)`` (``starts`` False).
        context_key: The input that sets max_model_len on the caller's page (``context_len`` or
            ``max_model_len``); the fix's ``key``.
        scale: A :class:`planner.scale.ScaleRequest` the launch keeps (``refused`` is its
            :meth:`~planner.scale.ScalePlan.engine_view`); every fix is planned through
            :func:`planner.scale.plan_scale` with it. None: :func:`planner.engines.plan_engine`.

    Returns:
        :class:`CheckedFix` list; ``num_gpus`` fixes carry GPUs per replica (tensor parallel x pipeline stages).
    """
    if holds_one_request(refused):  # an SGLang pool shorter than one request starts, and rejects it
        return []
    engine = refused.engine
    found: list[CheckedFix] = []

    def keep(key: str, value, text: str, change: float, fixed: EnginePlan, nodes=("", ())) -> None:
        fix = Fix(text, key, value)
        # the text already gives the length and concurrency it starts with: the help adds only the KV tokens
        help_text = (f"{text}; {_kv_tokens(engine, fixed)}" if holds_one_request(fixed)
                     else f"{text}. {_engine_outcome(engine, fixed)}")
        found.append(CheckedFix(fix=fix, label=_fix_label(key, value, nodes[1]), help=help_text,
                                change=max(change, 0.0), starts=holds_one_request(fixed), engine_plan=fixed,
                                also=nodes[1]))

    util = refused.gpu_memory_utilization
    if util is not None and util < UTILIZATION_FIX:
        fixed, _ = _try_engine(model, gpu_memory_bytes, request, {"gpu_memory_utilization": UTILIZATION_FIX},
                                scale)
        longer = fixed is not None and fixed.engine_max_model_len > refused.engine_max_model_len
        if fixed is not None and (holds_one_request(fixed) or longer):
            text = (f"utilization {UTILIZATION_FIX:g}: {_starts_at(fixed)}"
                    if holds_one_request(fixed)
                    else f"utilization {UTILIZATION_FIX:g}: starts up to {fixed.engine_max_model_len:,} tokens")
            keep("gpu_memory_utilization", UTILIZATION_FIX, text, _relative(util, UTILIZATION_FIX), fixed)
    tp, pp = refused.tensor_parallel_size, refused.pipeline_parallel_size
    if refused.family == "sglang" and request.num_nodes > 1 and (tp * pp) % request.num_nodes:
        # --nnodes that do not divide tp x pp (check_server_args): the same GPUs over the nodes SGLang lays them out
        # on (QA, stop 44: 16 GPUs over 3 nodes offered only "GPUs → 32, 4 nodes")
        from planner.engines.sglang_nodes import nodes_needed  # noqa: PLC0415
        from planner.scale.layout import DEFAULT_GPUS_PER_NODE  # noqa: PLC0415

        nodes = nodes_needed(tp, pp, DEFAULT_GPUS_PER_NODE)
        fixed, _ = _try_engine(model, gpu_memory_bytes, request, {"num_nodes": nodes})
        if fixed is not None and holds_one_request(fixed):
            keep("num_nodes", nodes, f"{nodes} nodes (--nnodes {nodes}): {_starts_at(fixed)}",
                 _relative(request.num_nodes, nodes), fixed)
    for size in [n for n in valid_tensor_parallel_sizes(model, 64) if n > tp][:MAX_GPU_STEPS]:
        fixed, _, count = _try_on_nodes(model, gpu_memory_bytes, request, {"tensor_parallel_size": size}, scale)
        if fixed is not None and holds_one_request(fixed):
            nodes = _nodes_words(count, request.num_nodes)
            keep("num_gpus", size * pp, f"{size * pp} GPUs (tensor parallel {size}){nodes[0]}: {_starts_at(fixed)}",
                 _relative(tp, size), fixed, nodes)
            break
    shorter = refused.engine_max_model_len
    if 0 < shorter < refused.max_model_len:
        fixed, _ = _try_engine(model, gpu_memory_bytes, request, {"max_model_len": shorter}, scale)
        if fixed is not None and holds_one_request(fixed):
            keep(context_key, shorter, f"max_model_len {shorter:,}: {_starts_at(fixed)}",
                 _relative(refused.max_model_len, shorter), fixed)
    offered = ENGINE_PROFILES[resolve_engine_name(request.engine)].kv_cache_dtypes
    if refused.kv_cache_dtype in ("auto", "bf16", "fp16") and "fp8" in offered:
        fixed, _ = _try_engine(model, gpu_memory_bytes, request, {"kv_cache_dtype": "fp8"}, scale)
        if fixed is not None and holds_one_request(fixed) and refused.ranks and fixed.ranks:
            old, new = refused.ranks[0].kv_cache_bytes_per_token, fixed.ranks[0].kv_cache_bytes_per_token
            keep("kv_cache_dtype", "fp8", f"KV dtype fp8: {_starts_at(fixed)}", 1 - new / old if old else 1.0, fixed)
    weight = _weight_fix(model, gpu_memory_bytes, request, scale)
    if weight is not None:
        name, saving, fixed = weight
        how = "--quantization fp8" if name == "fp8" else "a checkpoint quantized to int4, AWQ / GPTQ"
        keep("weight_dtype", name, f"{name} weights ({how}): {_starts_at(fixed)}", saving, fixed)
    return _order(found)


def _weight_fix(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                scale=None) -> tuple[str, float, EnginePlan] | None:
    """The first of :data:`WEIGHT_FIXES` with which the engine starts: ``(dtype, share of weight bytes removed,
    plan)``, or None. Skipped: a dtype removing under :data:`MIN_WEIGHT_SAVING` of the weights, fp8 on a GPU
    older than :data:`FP8_WEIGHTS_MIN_CAPABILITY`, one the engine cannot plan."""
    tp = request.tensor_parallel_size
    old = model_weight_bytes(model, request.weight_dtype, tp)
    for name in WEIGHT_FIXES:
        too_old = name == "fp8" and gpu_capability(request.gpu_name) < FP8_WEIGHTS_MIN_CAPABILITY
        if name == request.weight_dtype or too_old:
            continue
        saving = 1 - model_weight_bytes(model, name, tp) / old if old else 0.0
        if saving < MIN_WEIGHT_SAVING:
            continue
        fixed, _ = _try_engine(model, gpu_memory_bytes, request, {"weight_dtype": name}, scale)
        if fixed is not None and holds_one_request(fixed):
            return name, saving, fixed
    return None
