"""Find's engine view: every candidate setup sized as the chosen serving engine sizes it.

:func:`planner.traffic.reverse.find_setups` prices a setup with the budget arithmetic of
:func:`planner.budget.plan` (the checkpoint's bytes, the newest vLLM's profile pass). An engine loads the
weights as its kernels lay them out and deducts its own profile pass, CUDA graphs and non-torch memory
(:mod:`planner.engines`), so the two can differ by a factor: gpt-oss-120b (MXFP4 experts) on one A100 SXM
80GB, 2,000 + 500 tokens, holds 111 users by the budget arithmetic but 38 under vLLM (38.73 requests decoding
at once on the Engine page, 22.30x printed), whose Marlin MXFP4 layout on Ampere pads the experts (the review
saw 189 against about 88 with the engine model of then). With ``FindRequest.engine`` set, each (GPU type, tensor-parallel size,
KV dtype) is planned once with :func:`planner.engines.plan_engine` (one replica; the replicas are copies) and
the search reads its figures instead:

    budget per GPU   = the engine's available KV memory (its "Available KV cache memory"), min over GPUs
    held / replica   = vLLM V1: the requests its pool holds while they decode, beside one prefill chunk
                       (the Engine page's "Requests decoding at once"; its printed concurrency where no
                       sliding-window layer frees blocks: planner.engines.pages design note 6);
                       other engines: engine tokens // max_model_len; llama.cpp: the slots (-np) of the
                       launch Find prints, -c slots x length -np slots -kvu, whose one KV buffer
                       holds -c cells: --max-num-seqs where set, else the most slots whose -c fits
                       (:func:`_llamacpp_capacity`)
    users / replica  = floor(held / replica)
    demand per GPU   = users per replica x the KV one max_model_len request needs there   (fixed lengths)
    margin           = 1 - users per replica / held per replica   (or / max_num_seqs where an explicit
                       --max-num-seqs is lower: planner.traffic.reverse)
    fits             = the engine starts and users per replica <= that floor

Design notes (assumptions):
    1. The engine plan uses the engine's own defaults for what Find does not ask (``max_num_seqs``,
       ``max_num_batched_tokens``, the block size unless the request sets one other than 16, the memory
       fraction unless the request sets one other than 0.9), as the Engine page does with an untouched
       sidebar, so Find's users for a setup are the Engine page's for the same model, GPU, tensor-parallel
       size, dtypes and ``max_model_len``. The engine knobs a link or the CLI sets
       (``FindRequest.engine_knobs``: ``max_num_seqs``, ``enforce_eager``, the CUDA-graph knobs ...) are
       planned as the Engine page plans them, and the launch commands write them (:func:`launch_knobs`).
    2. An explicit per-GPU overhead (``overhead_bytes``) stands for the engine's activation peak, with no
       non-torch or CUDA-graph memory beside it (the budget arithmetic's meaning of the override).
    3. A KV dtype the engine does not offer (llama.cpp has no fp8 cache) is skipped and named in a note.
    4. Length distributions keep the Monte-Carlo demand of the budget arithmetic (the checkpoint's KV bytes
       per token, which engines store as they are), against the engine's budget.
    Worked example: one request of 2,500 tokens in 16-token blocks holds ceil(2,500 / 16) = 157 blocks per KV
    group; a vLLM pool of 14,000 blocks of one group holds 14,000 // 157 = 89 of them.

Sources: :mod:`planner.engines` (vLLM ``gpu_worker.determine_available_memory``,
``kv_cache_utils.get_max_concurrency_for_kv_cache_config``; SGLang ``model_runner``); the launch command of
each engine from :mod:`planner.engines.launch`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.budget import DEFAULT_BLOCK_SIZE, DEFAULT_GPU_MEMORY_UTILIZATION
from planner.engines import ENGINE_PROFILES, EngineRequest, plan_engine, resolve_engine_name
from planner.engines.launch import LaunchSpec, launch_command
from planner.model import ModelSpec
from planner.model.memo import model_memo, remember
from planner.serving.features import for_engine
from planner.serving.summary import sequence_extras


@dataclass(frozen=True, kw_only=True)
class EngineCapacity:
    """What one replica of a (GPU type, tensor-parallel size, KV dtype) holds under an engine.

    Attributes:
        engine: Resolved engine profile id (``vllm``, ``sglang``, ...).
        family: Its family (picks the launch command).
        starts: False when the engine would refuse to start at ``max_model_len``.
        reason: The engine's first reason when it refuses, else "".
        available_kv_bytes: The engine's KV memory per GPU, min over the replica's GPUs [bytes].
        kv_cache_tokens: Tokens the pool holds: the capacity as the engine prints it (llama.cpp: the cells of
            the launch's ``-c``, which its slots share) [tokens].
        users_per_replica: Whole requests of ``max_model_len`` the pool holds at once: ``floor(requests_held)``
            (0 when it refuses) [sequences].
        needed_bytes_per_request: KV of one ``max_model_len`` request on one GPU [bytes].
        max_model_len: The length planned [tokens].
        gpu_memory_utilization: The memory fraction the engine resolved (None when it has none).
        weights_bytes: Weights on the replica's fullest GPU, as the engine loads them [bytes].
        kv_cache_dtype: The KV cache the engine stores (:attr:`planner.engines.types.EnginePlan.kv_cache_dtype`).
    """

    engine: str
    family: str
    starts: bool
    reason: str
    available_kv_bytes: int
    kv_cache_tokens: int
    users_per_replica: int
    needed_bytes_per_request: int
    max_model_len: int
    gpu_memory_utilization: float | None
    weights_bytes: int = 0
    requests_held: float = 0.0
    kv_cache_dtype: str = ""

    def margin(self, users_per_replica: int) -> float | None:
        """``1 - users / requests_held``: the share of the pool left at that load (None: no pool)."""
        if self.requests_held <= 0:
            return None
        return 1 - users_per_replica / self.requests_held


def offers_kv_dtype(engine: str, kv_cache_dtype: str) -> bool:
    """Whether ``engine`` takes ``kv_cache_dtype`` (:attr:`planner.engines.EngineProfile.kv_cache_dtypes`)."""
    return kv_cache_dtype in ENGINE_PROFILES[resolve_engine_name(engine)].kv_cache_dtypes


def launch_max_model_len(request, max_model_len: int) -> int:
    """``--max-model-len`` of a Find launch: the workload's longest text plus the tokens the request's images and
    videos add (:func:`planner.serving.summary.sequence_extras`), which every engine counts inside its limit
    (vLLM's prompt length includes the placeholder tokens). Each user then holds text + media tokens in the pool,
    as Home counts them (QA: Gemma 4 26B with 4 images, 34 users on an A100 PCIe where Home says 33: Find sized
    requests of 16,384 tokens with the 1,032 image tokens inside, which vLLM would refuse for a 16,384-token text).
    The lookahead slots of speculative decoding are not in the limit (vLLM's check leaves them out)."""
    return max_model_len + launch_media_tokens(request)


def launch_media_tokens(request) -> int:
    """The image and video tokens :func:`launch_max_model_len` adds to a Find request's longest text
    (:func:`planner.serving.summary.sequence_extras`, the request's features as its engine takes them); 0 without
    images or videos. Gemma 4 26B, 4 images of the default size: 4 x 258 = 1,032 tokens."""
    features = request.serving if request.engine is None else for_engine(request.serving, request.engine)
    return sequence_extras(features).media_tokens


def engine_request_for(request, gpu, tensor_parallel_size: int, kv_cache_dtype: str,
                       max_model_len: int) -> EngineRequest:
    """The :class:`~planner.engines.EngineRequest` of one replica of a Find setup (design notes 1 and 2).

    Args:
        request: The :class:`~planner.traffic.find_types.FindRequest` (its ``engine`` set).
        gpu: The GPU type (``name`` picks the engine's scheduler defaults and kernels).
        tensor_parallel_size: GPUs of the replica.
        kv_cache_dtype: The KV dtype flag (``auto``, ``bf16``, ``fp8``).
        max_model_len: The workload's longest text [tokens]; the launch's ``--max-model-len`` adds the media
            tokens (:func:`launch_max_model_len`).
    """
    overhead = request.overhead_bytes
    serving = for_engine(request.serving, request.engine)  # vLLM's default encoder profile: vLLM only
    return EngineRequest(
        engine=request.engine, weight_dtype=request.weight_dtype, kv_cache_dtype=kv_cache_dtype,
        tensor_parallel_size=tensor_parallel_size, max_model_len=launch_max_model_len(request, max_model_len),
        gpu_memory_utilization=(None if request.gpu_memory_utilization == DEFAULT_GPU_MEMORY_UTILIZATION
                                else request.gpu_memory_utilization),
        block_size=None if request.block_size == DEFAULT_BLOCK_SIZE else request.block_size,
        activation_bytes=overhead, non_torch_bytes=None if overhead is None else 0,
        cudagraph_bytes=None if overhead is None else 0, gpu_name=gpu.name, serving=serving,
        **dict(request.engine_knobs))


def engine_capacity(model: ModelSpec, gpu, request, tensor_parallel_size: int, kv_cache_dtype: str,
                    max_model_len: int) -> EngineCapacity | str:
    """One replica planned under ``request.engine``; the engine's message when it cannot plan it at all.

    Returns:
        An :class:`EngineCapacity`, or a sentence (an option the engine refuses before planning, such as a
        tensor-parallel size or serving feature it does not take). Kept in the model's ``"find"`` memo
        (:mod:`planner.model.memo`) under the GPU's memory and the engine request: nothing here depends on the
        user count, so a rerun of the Find page with new users plans no replica again.
    """
    engine_request = engine_request_for(request, gpu, tensor_parallel_size, kv_cache_dtype, max_model_len)
    memo, key = model_memo(model, "find"), ("replica", gpu.framework_memory_bytes, engine_request)
    try:
        cached = memo.get(key)
    except TypeError:  # an unhashable serving field: plan without the memo
        return _capacity(model, gpu, request, engine_request)
    if cached is None:
        cached = remember(memo, key, _capacity(model, gpu, request, engine_request))
    return cached


def _capacity(model: ModelSpec, gpu, request, engine_request: EngineRequest) -> EngineCapacity | str:
    """:func:`engine_capacity` without the memo."""
    try:
        if ENGINE_PROFILES[resolve_engine_name(request.engine)].family == "llama.cpp":
            return _llamacpp_capacity(model, gpu, engine_request)
        p = plan_engine(model, gpu.framework_memory_bytes, engine_request)
    except ValueError as exc:
        return f"{request.engine}: {exc}"
    requests = p.requests_held
    return _from_plan(p, users=int(requests) if p.starts else 0, requests=requests, held=p.engine_kv_cache_tokens,
                      max_model_len=p.max_model_len)


def _from_plan(p, *, users: int, requests: float, held: int, max_model_len: int) -> EngineCapacity:
    """The :class:`EngineCapacity` of engine plan ``p`` with these users, requests held, tokens and length."""
    reason = "" if p.starts else (p.reasons[0] if p.reasons else "no room for its KV cache")
    return EngineCapacity(
        engine=p.engine, family=p.family, starts=p.starts, reason=reason,
        available_kv_bytes=p.available_kv_cache_bytes, kv_cache_tokens=held,
        users_per_replica=users, needed_bytes_per_request=p.kv_cache_bytes_needed_per_request,
        max_model_len=max_model_len, gpu_memory_utilization=p.gpu_memory_utilization,
        weights_bytes=p.limiting_rank.weights_bytes, requests_held=requests, kv_cache_dtype=p.kv_cache_dtype)


LLAMACPP_MAX_SLOTS = 4096
"""The most ``-np`` slots Find sizes a llama.cpp replica for (a search bound, far above any Find row's users)."""


def _llamacpp_capacity(model: ModelSpec, gpu, engine_request: EngineRequest) -> EngineCapacity:
    """One llama.cpp replica as Find's launch runs it: ``-c slots x L -np slots -kvu`` (:func:`engine_launch_command`),
    one unified KV buffer of ``-c`` cells that the ``-np`` slots share, each request of ``L`` tokens in its slot.

    With ``max_num_seqs`` set the slots are that many and the replica is planned at that launch (users: the slots,
    or none where it does not start). Without it the launch writes one slot per user of the replica, so the users
    it holds are the most slots whose ``-c`` still fits the GPU (a doubling, then a bisection, over
    :func:`planner.engines.plan_engine`; the KV buffer grows with ``-c``); the KV figures are those of that launch.

    Sources: llama.cpp src/llama-context.cpp (``n_ctx`` cells for all sequences, ``n_ctx_seq = n_ctx / n_seq``
    a slot), tools/server (``-np`` slots; ``-kvu`` one unified buffer); :func:`planner.engines.llamacpp.
    plan_llamacpp` for the bytes.
    """
    length = engine_request.max_model_len

    def at(slots: int):
        return plan_engine(model, gpu.framework_memory_bytes, replace(
            engine_request, max_model_len=length * slots, max_num_seqs=slots, kv_unified=True))

    def held(p, slots: int) -> EngineCapacity:
        users = slots if p.starts else 0
        return _from_plan(p, users=users, requests=float(users), held=p.engine_kv_cache_tokens, max_model_len=length)

    if engine_request.max_num_seqs:
        return held(at(engine_request.max_num_seqs), engine_request.max_num_seqs)
    first = at(1)
    if not first.starts:
        return held(first, 1)
    low, high = 1, 2  # low starts; find a high that does not
    while high <= LLAMACPP_MAX_SLOTS and at(high).starts:
        low, high = high, high * 2
    high = min(high, LLAMACPP_MAX_SLOTS + 1)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if at(mid).starts else (low, mid)
    return held(at(low), low)


LAUNCH_KNOBS = ("max_num_batched_tokens", "enforce_eager", "cudagraph_mode", "optimization_level",
                "max_cudagraph_capture_size")
"""The knobs of ``FindRequest.engine_knobs`` a launch command writes as flags (:class:`LaunchSpec` fields:
``--max-num-batched-tokens``, ``--enforce-eager``, ``-O``, the compilation config, the capture size);
``max_num_seqs`` is written as every launch's ``--max-num-seqs`` (:func:`launch_max_num_seqs`); ``usage_context``
and ``warm_compile_cache`` are how the engine is started (the offline class, a relaunch), not flags."""


def launch_knobs(request) -> dict:
    """The :class:`LaunchSpec` fields of ``request.engine_knobs`` (:data:`LAUNCH_KNOBS`)."""
    return {name: value for name, value in request.engine_knobs if name in LAUNCH_KNOBS}


def launch_max_num_seqs(request, users: int) -> int:
    """A launch's ``--max-num-seqs``: the request's knob where set (the value its setups were planned with),
    else the users of one replica (or rank)."""
    return request.knob("max_num_seqs") or users


def engine_launch_command(cap: EngineCapacity, model_id: str, *, tensor_parallel_size: int, data_parallel_size: int,
                          kv_cache_dtype: str, weight_dtype: str, max_num_seqs: int, block_size: int | None,
                          extra: str = "", language_model_only: bool = False, knobs: dict | None = None) -> str:
    """The launch command of a setup under a non-vLLM engine (:func:`planner.engines.launch.launch_command`),
    its capacity flags written out (the resolved memory fraction included); ``extra``: serving-feature flags;
    ``language_model_only``: a text-only plan (vLLM writes its flag:
    :func:`planner.engines.launch.vllm_text_only_flags`); ``knobs``: :func:`launch_knobs`."""
    shared = cap.family == "llama.cpp"  # -c is n_ctx for all -np slots, in one unified cache (-kvu)
    spec = LaunchSpec(engine=cap.engine, family=cap.family, model_id=model_id,
                      tensor_parallel_size=tensor_parallel_size, data_parallel_size=data_parallel_size,
                      max_model_len=cap.max_model_len * (max_num_seqs if shared else 1),
                      gpu_memory_utilization=cap.gpu_memory_utilization, kv_cache_dtype=kv_cache_dtype,
                      weight_dtype=weight_dtype, max_num_seqs=max_num_seqs, kv_unified=shared,
                      block_size=None if block_size == DEFAULT_BLOCK_SIZE else block_size,
                      language_model_only=language_model_only, **(knobs or {}))
    command = launch_command(spec)
    return f"{command} {extra}" if extra else command
