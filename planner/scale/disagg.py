"""Prefill / decode disaggregation: two pools, sized for N users on the product's roofline.

The prefill pool computes prompts and holds KV only for the prompts in flight; the decode pool holds
every running sequence; between them each request's prompt KV moves once (:mod:`planner.scale.links`).
Both pools are planned by :func:`planner.scale.plan.plan_scale` (their own tensor / data / expert
parallel flags) and timed by the product's roofline (:mod:`planner.traffic.throughput`): an
upper-bound estimate at peak bandwidth and FLOPS, no communication or scheduling time.

    decode, per attention-DP rank:
        batch      = min(sequences of prompt + output tokens the pool holds,
                         largest b with (weights + b x KV per sequence) / bandwidth <= TPOT target)
        replicas   = ceil(users / (batch x attention_dp))
    prefill, per replica (compute roofline, 2 x active params FLOPs per prompt token):
        t_prefill  = 2 x active x prompt / (GPUs per rank x bf16 FLOPS)
        TTFT       = t_prefill + KV transfer over the chosen link
        arrivals   = users / (TTFT + output x TPOT)     (each user sends its next request at once)
        replicas   = ceil(arrivals x t_prefill / attention_dp)

Design notes:
    1. KV per sequence is taken at the mean decode context ``prompt + output // 2`` (as
       :func:`planner.traffic.throughput.estimate_throughput` does), split by decode context parallel.
    2. ``kv_transfer_bytes_per_gpu`` is what one prefill GPU sends for one prompt (whole blocks: the prefill
       engine's own need at a length of ``prompt``, its KV layout and dtype; a model with windows or states: its
       window's blocks and its share of every state); it sets the time, the shards moving in parallel.
       ``kv_transfer_bytes_per_request`` is the request's distinct bytes: every KV head and an MLA latent once,
       every Mamba / DeltaNet state whole (:func:`planner.scale.transfer.transfer_bytes`).
    3. Both roles launch with the same ``--max-model-len`` = prompt + output. A P/D proxy sends the whole
       request to a prefill instance with ``max_tokens`` 1 and the decode instance gets it back with its
       own ``max_tokens`` (vLLM tests/v1/kv_connector/nixl_integration/toy_proxy_server.py,
       ``send_request_to_service``; llm-d's routing sidecar does the same), and vLLM's OpenAI server
       rejects a request whose prompt + ``max_tokens`` exceeds ``max_model_len``
       (vllm/entrypoints/openai/serving_engine.py, the request length check). A prefill instance
       launched at the prompt's length alone would refuse every request. The prefill pool's KV sizing
       stays on the prompts in flight: the prompts one rank holds and one prompt's bytes come from the
       same launch planned at a length of ``prompt`` (the engine's pool does not depend on the length;
       only its per-request arithmetic does).
    4. Queueing is ignored: the prefill pool is sized to utilisation <= 1, so real TTFT at load is
       higher. Both pools use the same KV dtype (the connectors copy blocks as they are).
    5. A pool that would not start at the asked tensor-parallel size gets the smallest one that starts
       (:func:`starting_tensor_parallel`) as a fix (``tensor_parallel_fixes``). Its consequences (no
       sequence per rank, no prompt held) are not repeated as reasons, and it has no launch command.
    6. With no size asked (``PoolRequest.auto_tensor_parallel``) each pool is planned at every size of
       :data:`TP_SEARCH` at which it starts and launched at the one whose pool needs the fewest GPUs for the users
       among those that hold a request and meet its target (ties: the smaller size; none does: the smallest).
       The smallest size that starts can hold next to nothing (Llama-3.3-70B on H100 at tp 2: 65.7 GiB of weights,
       2 GiB of KV, one 8,500-token user per replica); a wider one holds more users per GPU. Decode is chosen
       first (its sizing does not depend on the prefill launch), then prefill at that decode step.
    7. The decode launch runs what one replica holds: ``--max-num-seqs`` = the batch per rank (vLLM's scheduler
       is per data-parallel rank, vllm/v1/core/sched/scheduler.py), SGLang's ``--max-running-requests`` = the
       batch x ranks; the batch is at most the engine's own ``max_num_seqs``. A smaller cap captures no more
       CUDA graphs than the planned default (vLLM's capture sizes stop at ``2 x max_num_seqs``), so the planned
       KV pool is a lower bound. The prefill launch keeps the engine's ``max_num_seqs``, so a prefill rank runs
       at most that many prompts at once, however many its KV pool holds (the same scheduler cap).
    Worked example: a dense 8 B model (16.06 GB bf16) on H100 SXM (3,350 GB/s, 989.5 TFLOPS), 2,000-token
    prompts: t_prefill = 2 x 8.03e9 x 2,000 / 9.895e14 = 32.5 ms on one GPU.

Sources: :mod:`planner.traffic.throughput` (the roofline and its sources), DOMAIN.md section 4;
vLLM's disaggregated prefill docs (docs/features/disagg_prefill.md, the NIXL connector), llm-d's
prefill / decode roles (:mod:`planner.scale.deploy`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from planner.engines.launch import with_max_num_seqs
from planner.engines.profiles import ENGINE_PROFILES
from planner.engines.shared_gpu import shared_gpu_refusal
from planner.engines.types import EngineRequest
from planner.diagnose import tensor_parallel_splits
from planner.model import ModelSpec
from planner.model.dtypes import AUTO_WEIGHT_DTYPE, WEIGHT_DTYPES, StorageFormat, checkpoint_dtype
from planner.scale.deploy import node_commands
from planner.scale.layout import ScaleRequest
from planner.scale.links import DEFAULT_LINK, LINKS, link_by_id, transfer_ms
from planner.scale.plan import ScalePlan, plan_scale
from planner.scale.transfer import capped_kv, kv_sequence_bytes, transfer_bytes
from planner.roofline import UPPER_BOUND_LABEL, active_parameters, prefill_seconds, time_per_output_token
from planner.text import count_noun


@dataclass(frozen=True, kw_only=True)
class PoolRequest:
    """One pool's engine knobs and parallel flags (its ``max_model_len`` is set by :func:`plan_disagg`).

    Attributes:
        engine: The engine and its knobs (``tensor_parallel_size``: the pool's ``-tp``).
        scale: The data / expert / context parallel flags.
        auto_tensor_parallel: No tensor-parallel size was given: :func:`plan_disagg` launches the pool at the
            size that starts, meets its target and needs the fewest GPUs for the users (design note 6).
    """

    engine: EngineRequest
    scale: ScaleRequest
    auto_tensor_parallel: bool = False


@dataclass(frozen=True, kw_only=True)
class Pool:
    """One sized pool.

    Attributes:
        role: ``prefill`` or ``decode``.
        plan: The pool's launch (per replica).
        replicas: Instances of that launch.
        max_concurrency: Requests one replica runs at once (decode: the batch x ranks; prefill: the
            prompts its KV pools hold, at most ``max_num_seqs`` a rank: design note 7).
        step_ms: Decode: time per output token; prefill: one prompt's prefill [ms].
        meets_target: The TTFT / TPOT target is met (True when none was given).
    """

    role: str
    plan: ScalePlan
    replicas: int
    max_concurrency: int
    step_ms: float
    meets_target: bool

    @property
    def gpus(self) -> int:
        """GPUs of the pool."""
        return self.replicas * self.plan.layout.num_gpus

    def to_dict(self) -> dict:
        """The pool's JSON object. ``launch_command`` is the first node's command of one replica with the role's KV
        connector (vLLM ``--kv-transfer-config`` NixlConnector, SGLang ``--disaggregation-mode``), the same text
        the page and ``deploy --target commands`` show; ``launch_commands`` has every node's. A launch that would
        not start has no command (None, and an empty list)."""
        layout, rank = self.plan.layout, self.plan.engine.limiting_rank
        commands = node_commands(self.plan, self.role, disaggregated=True) if self.plan.starts else [None]
        out = {
            "gpus": self.gpus, "replicas": self.replicas, "gpus_per_replica": layout.num_gpus,
            "tensor_parallel_size": layout.tensor_parallel_size, "data_parallel_size": layout.attention_dp,
            "expert_parallel_size": layout.expert_parallel_size,
            "decode_context_parallel_size": layout.decode_context_parallel_size,
            "max_concurrency": self.max_concurrency,
            # prefill holds prompts at their peak (the printed ratio); decode holds decoding requests
            "max_concurrency_by_memory": self.plan.max_concurrency if self.role == "prefill" else round(
                self.plan.requests_held_per_rank * layout.attention_dp, 2),
            "max_model_len": self.plan.engine.max_model_len,
            "weights_bytes_per_gpu": rank.weights_bytes,
            "available_kv_cache_bytes": self.plan.engine.available_kv_cache_bytes,
            "engine_kv_cache_tokens": self.plan.engine_kv_cache_tokens,
            ("prefill_ms_per_request" if self.role == "prefill" else "time_per_output_token_ms"): self.step_ms,
            "meets_target": self.meets_target, "starts": self.plan.starts, "reasons": list(self.plan.reasons),
            "launch_command": commands[0], "launch_commands": [c for c in commands if c],
        }
        return out


@dataclass(frozen=True, kw_only=True)
class DisaggPlan:
    """Both pools, the transfer between them and the inputs (JSON: :meth:`to_dict`)."""

    model_id: str
    users: int
    prompt_len: int
    output_len: int
    ttft_ms_target: float | None
    tpot_ms_target: float | None
    link: str
    prefill: Pool
    decode: Pool
    kv_transfer_bytes_per_request: int
    kv_transfer_bytes_per_gpu: int
    kv_transfer_ms: dict
    ttft_ms: float
    fits: bool
    reasons: tuple[str, ...]
    notes: tuple[str, ...]
    tensor_parallel_fixes: tuple[tuple[str, int], ...] = ()
    pool_notes: tuple[str, ...] = ()
    """The notes of the pools' launches (``"decode: tensor parallel 8, the size that needs the fewest GPUs for ..."``
    when none was given, or that no size up to a node starts a pool), each beginning with its role; they lead
    ``notes``."""

    @property
    def starts(self) -> bool:
        """Both pools' launches start (the engine would not refuse either)."""
        return self.prefill.plan.starts and self.decode.plan.starts

    @property
    def sizing_notes(self) -> tuple[str, ...]:
        """``notes`` less :attr:`pool_notes`: the roofline, the arrivals, what each pool holds."""
        return tuple(note for note in self.notes if note not in self.pool_notes)

    def to_dict(self) -> dict:
        """Plain dict for JSON (``tensor_parallel_fixes``: ``{role: the smallest tensor-parallel size that starts}``
        for a pool whose asked size does not)."""
        return {
            "model_id": self.model_id, "users": self.users, "prompt_len": self.prompt_len,
            "output_len": self.output_len, "ttft_ms_target": self.ttft_ms_target,
            "tpot_ms_target": self.tpot_ms_target, "prefill": self.prefill.to_dict(), "decode": self.decode.to_dict(),
            "gpus": self.prefill.gpus + self.decode.gpus,
            "kv_transfer_bytes_per_request": self.kv_transfer_bytes_per_request,
            "kv_transfer_bytes_per_gpu": self.kv_transfer_bytes_per_gpu,
            "kv_transfer_ms": self.kv_transfer_ms, "link": self.link, "ttft_ms": self.ttft_ms,
            "links": [{"id": x.id, "name": x.name, "gb_s_per_direction": x.gb_s_per_direction, "source": x.source}
                      for x in LINKS],
            "fits": self.fits, "reasons": list(self.reasons), "label": UPPER_BOUND_LABEL,
            "notes": list(self.notes), "tensor_parallel_fixes": dict(self.tensor_parallel_fixes),
        }


def _start_reasons(prefill_plan: ScalePlan, decode_plan: ScalePlan) -> list[str]:
    """Why each launch would not start, each reason once: ``"prefill and decode: ..."`` when both pools give the
    same one (the same launch refused twice)."""
    out: dict[str, list[str]] = {}
    for role, plan in (("prefill", prefill_plan), ("decode", decode_plan)):
        for reason in plan.reasons:
            out.setdefault(reason, []).append(role)
    return [f"{' and '.join(roles)}: {reason}" for reason, roles in out.items()]


def decode_kv_per_sequence(plan: ScalePlan, model: ModelSpec, request: EngineRequest, tokens: int) -> int:
    """KV one decoding sequence of ``tokens`` keeps on one GPU of the decode pool, split by ``-dcp`` [bytes]."""
    layout = plan.layout
    if capped_kv(model):  # windows capped, states constant: the model's profile
        kv_seq = kv_sequence_bytes(model, request, layout.attention_tp, 1, tokens)
    else:  # the engine's own bytes per token (its KV layout, e.g. vLLM's FP8 latent of DeepSeek-V3.2)
        kv_seq = plan.engine.limiting_rank.kv_cache_bytes_per_token * tokens
    return -(-kv_seq // layout.decode_context_parallel_size)


def decode_step_seconds(plan: ScalePlan, model: ModelSpec, request: EngineRequest, *, prompt_len: int,
                        output_len: int, batch: int, bandwidth_gb_s: float) -> float:
    """One decode step of the decode pool at ``batch`` sequences per rank, on the roofline (module docstring:
    KV at the mean decode context ``prompt + output // 2``) [s].

    Raises:
        ValueError: ``batch < 1`` or no bandwidth (:func:`planner.roofline.time_per_output_token`).
    """
    kv_seq = decode_kv_per_sequence(plan, model, request, prompt_len + output_len // 2)
    return time_per_output_token(plan.engine.limiting_rank.weights_bytes, kv_seq, batch, bandwidth_gb_s)


def _decode_batch(plan: ScalePlan, model: ModelSpec, request: EngineRequest, tokens: int, bandwidth_gb_s: float,
                  tpot_ms: float | None) -> tuple[int, int]:
    """``(batch per rank, KV per sequence per GPU)`` of the decode pool (module docstring)."""
    kv_seq = decode_kv_per_sequence(plan, model, request, tokens)
    weights = plan.engine.limiting_rank.weights_bytes
    # decoding requests (a sliding window's passed blocks are freed), at most what one step schedules
    batch = min(plan.requests_per_rank, plan.engine.max_num_seqs)
    if tpot_ms is not None and kv_seq > 0:
        room = tpot_ms / 1e3 * bandwidth_gb_s * 1e9 - weights
        batch = min(batch, max(0, math.floor(room / kv_seq)))
    return batch, kv_seq


def plan_disagg(model: ModelSpec, *, gpu_memory_bytes: int, bandwidth_gb_s: float, bf16_dense_tflops: float | None,
                prefill: PoolRequest, decode: PoolRequest, users: int, prompt_len: int, output_len: int,
                ttft_ms: float | None = None, tpot_ms: float | None = None, link_id: str = DEFAULT_LINK) -> DisaggPlan:
    """Size the prefill and decode pools for ``users`` concurrent users (module docstring).

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        bandwidth_gb_s: Its memory bandwidth [GB/s].
        bf16_dense_tflops: Its dense bf16 peak [TFLOPS]; None refuses (prefill cannot be timed).
        prefill, decode: Each pool's engine knobs and parallel flags.
        users: Concurrent users, each with one request in flight [users], >= 1.
        prompt_len, output_len: Tokens per request [tokens].
        ttft_ms, tpot_ms: Targets [ms], or None.
        link_id: The link between the pools (:data:`planner.scale.links.LINKS`).

    Raises:
        ValueError: bad counts or lengths, no TFLOPS figure, an unknown link, or what
            :func:`planner.scale.plan.plan_scale` refuses.
    """
    if users < 1 or prompt_len < 1 or output_len < 1:
        raise ValueError(f"need users, prompt_len and output_len >= 1, got {users}, {prompt_len} and {output_len}")
    if bandwidth_gb_s <= 0 or not bf16_dense_tflops or bf16_dense_tflops <= 0:
        raise ValueError("the GPU needs a memory bandwidth and a bf16 TFLOPS figure for the roofline; this one lacks "
                         "one (give a catalog GPU that has both)")
    for name, target in (("--ttft-ms", ttft_ms), ("--tpot-ms", tpot_ms)):
        if target is not None and target <= 0:
            raise ValueError(f"{name} must be > 0 ms, got {target}")
    link_by_id(link_id)  # an unknown link fails before any plan
    for role, pool in (("prefill", prefill), ("decode", decode)):
        _check_one_node(role, pool)
    length = prompt_len + output_len  # both roles' --max-model-len (design note 3)
    launched = {role: _launches(model, gpu_memory_bytes, role, pool, length)
                for role, pool in (("prefill", prefill), ("decode", decode))}
    fixes = [(role, x[0][3]) for role, x in launched.items() if x[0][3] is not None]
    prompt_plans = {id(x[1]): plan_scale(model, gpu_memory_bytes, replace(x[0], max_model_len=prompt_len),
                                         prefill.scale) for x in launched["prefill"]}

    def sized(p, d):
        return size_pools(model, p[1], d[1], prompt_plan=prompt_plans[id(p[1])], decode_engine=d[0],
                          bandwidth_gb_s=bandwidth_gb_s, bf16_dense_tflops=bf16_dense_tflops, users=users,
                          prompt_len=prompt_len, output_len=output_len, ttft_ms=ttft_ms, tpot_ms=tpot_ms,
                          link_id=link_id, prefill_sizes_tried=p[4])

    # design note 6: the decode pool's sizing does not depend on the prefill launch; the prefill pool's arrivals
    # depend on the decode step, so the decode size is chosen first
    decode_pick = _fewest(launched["decode"], lambda d: sized(launched["prefill"][0], d).decode)
    prefill_pick = _fewest(launched["prefill"], lambda p: sized(p, decode_pick).prefill)
    result = sized(prefill_pick, decode_pick)
    notes = [_pool_note(role, pick, len(launched[role]), users)
             for role, pick in (("prefill", prefill_pick), ("decode", decode_pick))]
    notes = [n for n in notes if n]
    return replace(result, notes=(*notes, *result.notes), pool_notes=tuple(notes), tensor_parallel_fixes=tuple(fixes),
                   reasons=(*result.reasons, *fix_sentences(fixes)))


def _fewest(launches: list, pool_of):
    """The launch of ``launches`` whose pool (``pool_of(launch)``) needs the fewest GPUs among those that hold a
    request and meet their target, ties to the smaller tensor-parallel size (``launches`` are in rising size); the
    first when none does (its reasons say why)."""
    if len(launches) == 1:
        return launches[0]
    pools = [pool_of(x) for x in launches]
    good = [i for i, pool in enumerate(pools) if pool.meets_target and pool.replicas >= 1 and pool.max_concurrency >= 1]
    return launches[min(good, key=lambda i: (pools[i].gpus, i))] if good else launches[0]


def _pool_note(role: str, launch: tuple, candidates: int, users: int) -> str:
    """The note of a pool's launch (design notes 5 and 6): its own note, or which size was chosen and by what rule
    when none was given."""
    engine, _, note, _, by_size = launch
    if note or not by_size:
        return note
    tp = engine.tensor_parallel_size
    if candidates == 1:
        return f"{role}: tensor parallel {tp}, the only size up to a node at which it starts (none was given)"
    return (f"{role}: tensor parallel {tp}, the size that needs the fewest GPUs for {count_noun(users, 'user')} "
            "among those at which it starts and meets its target (ties: the smaller; none was given)")


def _launches(model: ModelSpec, gpu_memory_bytes: int, role: str, pool: PoolRequest,
              length: int) -> list[tuple[EngineRequest, ScalePlan, str, int | None, bool]]:
    """``[(engine request, plan, note, fix, chosen by size)]`` of one pool launched at ``length`` (design notes 5 and
    6): with no size asked, every size of :data:`TP_SEARCH` at which it starts, in rising size; else (or when none
    starts) the one launch of :func:`_launch_pool`."""
    if pool.auto_tensor_parallel:
        out = []
        for tp in _tp_sizes(model, pool.scale):
            engine = replace(pool.engine, max_model_len=length, tensor_parallel_size=tp)
            try:
                plan = plan_scale(model, gpu_memory_bytes, engine, pool.scale)
            except ValueError:  # flags that do not fit this size (e.g. -dcp above tp): not a candidate
                continue
            if plan.starts:
                out.append((engine, plan, "", None, True))
        if out:
            return out
    return [(*_launch_pool(model, gpu_memory_bytes, role, pool, length), False)]


def _launch_pool(model: ModelSpec, gpu_memory_bytes: int, role: str, pool: PoolRequest,
                 length: int) -> tuple[EngineRequest, ScalePlan, str, int | None]:
    """``(engine request, plan, note, fix)`` of one pool launched at ``length`` at the asked tensor-parallel size
    (design note 5); ``fix`` is the smallest size that starts when the asked one would not, and the note says when
    no size up to a node starts it.

    Raises:
        ValueError: what :func:`planner.scale.plan_scale` refuses at the asked size.
    """
    engine = replace(pool.engine, max_model_len=length)
    plan = plan_scale(model, gpu_memory_bytes, engine, pool.scale)
    tp = None if plan.starts else starting_tensor_parallel(model, gpu_memory_bytes, engine, pool.scale)
    limit = model.max_position_embeddings
    note = ("" if plan.starts or tp is not None or _shared_gpu_short(gpu_memory_bytes, engine)
            else length_note(role, length, limit) if limit and length > limit  # no size or memory lifts it
            else refusal_note(model, role, pool.scale.gpus_per_node, pool.engine.weight_dtype))
    return engine, plan, note, tp


def length_note(role: str, length: int, limit: int) -> str:
    """The note of a pool launched past the model's length (design note 3: ``--max-model-len`` = prompt + output):
    vLLM (vllm/config/model.py ``_get_and_verify_max_len``) and SGLang (python/sglang/srt/configs/model_config.py
    ``_derive_context_length``) refuse it at every size before loading, so no size, weight format or GPU helps."""
    return (f"{role}: prompt + output = {length:,} tokens, past the model's {limit:,} (max_position_embeddings), "
            "which the engine refuses at every tensor-parallel size; lower the prompt or output length so they "
            f"sum to at most {limit:,}")


def _check_one_node(role: str, pool: PoolRequest) -> None:
    """Refuse a pool whose one replica (tensor x pipeline parallel) is wider than a node: the pools split by tensor
    and data parallel within a node (design note 5), and vLLM's default ``mp`` executor keeps a replica's workers on
    one node (vllm/config/parallel.py; :mod:`planner.engines.replica_layout`). QA (stop 43): tensor parallel 16 on
    nodes of 8 sized "64 GPUs for 256 users" with one-node commands, where the Engine page refuses that replica.

    Raises:
        ValueError: the replica's GPUs exceed ``pool.scale.gpus_per_node``.
    """
    world = pool.engine.tensor_parallel_size * pool.engine.pipeline_parallel_size
    if world > pool.scale.gpus_per_node:
        raise ValueError(f"the {role} pool's replica needs {world} GPUs (tensor parallel "
                         f"{pool.engine.tensor_parallel_size}) where a node holds {pool.scale.gpus_per_node}: the "
                         f"pools split by tensor parallel within a node and add data-parallel replicas; set the "
                         f"tensor-parallel size to at most {pool.scale.gpus_per_node} (or leave it empty for the "
                         "fewest GPUs)")


def _shared_gpu_short(gpu_memory_bytes: int, engine: EngineRequest) -> bool:
    """True when vLLM refuses the pool at its startup memory check, before any size matters: other processes leave
    less free than ``total x gpu_memory_utilization`` (:func:`planner.engines.shared_gpu.shared_gpu_refusal`, whose
    reason gives the fix: a lower utilization or a free GPU). QA (stop 43): a shared H100 got "use smaller weights
    ... or a GPU with more memory" for a Qwen3-8B pool that utilization 0.74 starts."""
    profile = ENGINE_PROFILES[engine.engine]
    util = engine.gpu_memory_utilization or profile.default_memory_fraction
    return profile.family == "vllm" and bool(
        shared_gpu_refusal(gpu_memory_bytes, engine.memory_in_use_bytes, util, int(gpu_memory_bytes * util)))


def refusal_note(model: ModelSpec, role: str, gpus_per_node: int, weight_dtype: str = AUTO_WEIGHT_DTYPE) -> str:
    """The note of a pool that no tensor-parallel size up to a node starts (design note 5), with the ways out that fit
    the model: a mixture-of-experts model can spread its experts over nodes (data + expert parallel, what
    :func:`planner.scale.plan_scale` plans); a dense one cannot, and these pools plan no pipeline stages across nodes
    (Home's ``plan`` offers a GPU count over nodes), so it needs smaller weights or more memory per GPU. Smaller
    weights are offered only below the format the weights load in (:func:`smaller_weight_formats`; QA, stop 42:
    an fp8 checkpoint was told "smaller weights (fp8)")."""
    head = f"{role}: no tensor-parallel size up to a node of {gpus_per_node} GPUs starts it (each was tried)"
    loaded = loaded_weight_format(model, weight_dtype)
    smaller = smaller_weight_formats(loaded)
    names = " or ".join(", ".join(smaller).rsplit(", ", 1))
    if model.is_moe:
        weights = f", smaller weights than its {loaded.name} ({names})" if smaller else ""
        return f"{head}; try data + expert parallel across nodes{weights} or a GPU with more memory"
    weights = f"smaller weights than its {loaded.name} ({names}, as a quantized checkpoint) or " if smaller else ""
    return (f"{head}; use {weights}a GPU with more memory; a dense model has no experts to spread, and a replica "
            "across nodes (tensor or pipeline parallel, as Home's GPU count suggests) is not planned for these pools")


SMALLER_WEIGHT_FORMATS = ("fp8", "int4", "nvfp4")
"""The weight formats a refusal may suggest, smallest last (keys of :data:`planner.model.dtypes.WEIGHT_DTYPES`)."""


def loaded_weight_format(model: ModelSpec, weight_dtype: str = AUTO_WEIGHT_DTYPE) -> StorageFormat:
    """The format most of the weights load in: the asked one, or for ``auto`` the one the checkpoint stores most
    elements in (each group's ``storage`` or ``checkpoint`` format, else the config's ``torch_dtype``:
    :func:`planner.model.params.weight_bytes` reads them the same way)."""
    if weight_dtype != AUTO_WEIGHT_DTYPE:
        return WEIGHT_DTYPES[weight_dtype]
    shipped = checkpoint_dtype(model.torch_dtype)
    elements: dict[str, int] = {}
    formats: dict[str, StorageFormat] = {shipped.name: shipped}
    for group in model.params:
        fmt = group.storage or group.checkpoint or shipped
        formats[fmt.name] = fmt
        elements[fmt.name] = elements.get(fmt.name, 0) + math.prod(group.shape) * group.count
    return formats[max(elements, key=elements.get)] if elements else shipped


def smaller_weight_formats(loaded: StorageFormat) -> tuple[str, ...]:
    """The formats of :data:`SMALLER_WEIGHT_FORMATS` with at most two thirds of ``loaded``'s bits per element: fp8,
    int4 and nvfp4 below 16 bits; int4 and nvfp4 below fp8; none below a 4-bit format."""
    return tuple(name for name in SMALLER_WEIGHT_FORMATS
                 if WEIGHT_DTYPES[name].bits_per_element * 3 <= loaded.bits_per_element * 2)


def _tp_sizes(model: ModelSpec, scale: ScaleRequest) -> list[int]:
    """The sizes of :data:`TP_SEARCH` up to one node that the model's attention heads split over."""
    return [t for t in TP_SEARCH if t <= scale.gpus_per_node and tensor_parallel_splits(model, t)]


TP_SEARCH = (1, 2, 4, 8, 16, 32, 64)
"""Tensor-parallel sizes :func:`starting_tensor_parallel` tries, up to one node (``ScaleRequest.gpus_per_node``)."""


def starting_tensor_parallel(model: ModelSpec, gpu_memory_bytes: int, engine: EngineRequest,
                             scale: ScaleRequest) -> int | None:
    """The smallest tensor-parallel size at which this launch starts, or None.

    Tries the powers of two of :data:`TP_SEARCH` up to one node (``scale.gpus_per_node``) that the model's
    attention heads split over (:func:`planner.diagnose.tensor_parallel_splits`, vLLM's
    ``ModelConfig.verify_with_parallel_config``), each planned by :func:`planner.scale.plan_scale` with the other
    flags as given: the search Find runs over its TP rows (:mod:`planner.traffic.reverse`).

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes].
        engine: The pool's engine request (its ``max_model_len`` set); its own ``tensor_parallel_size`` is replaced.
        scale: The pool's data / expert / context parallel flags.
    """
    for tp in _tp_sizes(model, scale):
        if tp == engine.tensor_parallel_size:
            continue  # the asked size: already planned by the caller
        try:
            if plan_scale(model, gpu_memory_bytes, replace(engine, tensor_parallel_size=tp), scale).starts:
                return tp
        except ValueError:  # flags that do not fit this size (e.g. -dcp above tp): not a candidate
            continue
    return None


def fix_sentences(fixes) -> list[str]:
    """One sentence per fix of :attr:`DisaggPlan.tensor_parallel_fixes`: the shared flag when both pools want the
    same size, else each role's own flag (``python -m planner disagg`` names; URL keys with underscores)."""
    sizes = dict(fixes)
    if len(sizes) == 2 and len(set(sizes.values())) == 1:
        return [f"--tensor-parallel-size {sizes['prefill']} starts both pools (the smallest size that does)"]
    return [f"{role}: --{role}-tensor-parallel-size {tp} starts it (the smallest size that does)"
            for role, tp in sizes.items()]


def size_pools(model: ModelSpec, prefill_plan: ScalePlan, decode_plan: ScalePlan, *, prompt_plan: ScalePlan,
               decode_engine: EngineRequest, bandwidth_gb_s: float, bf16_dense_tflops: float, users: int,
               prompt_len: int, output_len: int,
               ttft_ms: float | None = None, tpot_ms: float | None = None,
               link_id: str = DEFAULT_LINK, prefill_sizes_tried: bool = False) -> DisaggPlan:
    """The pools' replicas, times and transfer for ``users`` (module docstring), from their planned launches.

    :func:`plan_disagg` plans both launches and calls this; the Find page plans each launch once per GPU and
    calls this for every user count (the arithmetic here is all that depends on ``users``).

    Args:
        model: The model.
        prefill_plan: One prefill replica as it launches (its ``max_model_len`` = prompt + output, design note 3).
        decode_plan: One decode replica (its ``max_model_len`` = prompt + output).
        prompt_plan: The prefill launch planned at a length of the prompt: the prompts a rank holds and one
            prompt's KV bytes (design note 3).
        decode_engine: The decode pool's engine request (its dtypes price a sliding-window model's KV and the
            KV a request moves: both pools use one dtype, design note 4).
        bandwidth_gb_s, bf16_dense_tflops: The GPU's roofline figures [GB/s, TFLOPS].
        users, prompt_len, output_len, ttft_ms, tpot_ms, link_id: As :func:`plan_disagg`'s.
        prefill_sizes_tried: The prefill launch was chosen among every size up to a node (design note 6): a missed
            TTFT then names no larger size to try.

    Raises:
        ValueError: an unknown link.
    """
    link = link_by_id(link_id)
    reasons = _start_reasons(prefill_plan, decode_plan)

    batch, kv_seq = _decode_batch(decode_plan, model, decode_engine, prompt_len + output_len // 2, bandwidth_gb_s,
                                  tpot_ms)
    step_s = time_per_output_token(decode_plan.engine.limiting_rank.weights_bytes, kv_seq, max(batch, 1),
                                   bandwidth_gb_s)
    if batch < 1 and decode_plan.starts:
        reasons.append("decode: not one sequence fits the memory or the TPOT target on a rank; raise the decode "
                       "--tensor-parallel-size / data parallel size, or relax --tpot-ms")
    per_replica = batch * decode_plan.layout.attention_dp
    decode_replicas = -(-users // per_replica) if per_replica else 0
    if batch >= 1 and decode_plan.starts:  # design note 7: the launch runs what a replica holds
        cap = per_replica if decode_plan.layout.family == "sglang" else batch
        decode_plan = replace(decode_plan, launch_command=with_max_num_seqs(
            decode_plan.launch_command, decode_plan.layout.family, cap))

    layout = prefill_plan.layout
    gpus_per_rank = max(1, layout.num_gpus // layout.attention_dp)
    t_prefill = prefill_seconds(active_parameters(model), prompt_len, bf16_dense_tflops, gpus_per_rank)
    whole, shard = transfer_bytes(model, decode_engine, prompt_plan, prompt_len)
    by_link = {x.id: round(transfer_ms(shard, x), 3) for x in LINKS}
    ttft_s = t_prefill + transfer_ms(shard, link) / 1e3
    arrivals = users / (ttft_s + output_len * step_s)
    prefill_replicas = max(1, math.ceil(arrivals * t_prefill / layout.attention_dp - 1e-9))
    prompts = (prompt_plan.engine.requests_at_prefill_peak if prompt_plan.context is None  # not the 2-decimal print
               else math.floor(prompt_plan.max_concurrency_per_rank))
    # design note 7: a rank runs at most --max-num-seqs at once, whatever its KV pool holds
    held = max(0, min(prompts, prefill_plan.engine.max_num_seqs)) if prefill_plan.starts else 0
    if held < 1 and prefill_plan.starts:
        reasons.append(f"prefill: one {prompt_len:,}-token prompt does not fit a rank's KV pool")
    ttft_ok = ttft_ms is None or ttft_s * 1e3 <= ttft_ms
    if not ttft_ok and prefill_plan.starts:  # a launch that would not start is not timed (design note 5)
        way = ("no tensor-parallel size up to a node meets it (each was tried): relax --ttft-ms or use a GPU with "
               "more FLOPS" if prefill_sizes_tried else "raise the prefill --tensor-parallel-size")
        reasons.append(f"prefill: TTFT {ttft_s * 1e3:,.1f} ms (prefill {t_prefill * 1e3:,.1f} + transfer over "
                       f"{link.id}) exceeds --ttft-ms {ttft_ms:,.10g}; {way}")
    tpot_ok = tpot_ms is None or (batch >= 1 and step_s * 1e3 <= tpot_ms)
    notes = ("roofline: peak bandwidth and FLOPS, no communication, queueing or scheduling time; real TTFT and TPOT "
             "are higher",
             f"arrivals {arrivals:,.2f} requests/s: {count_noun(users, 'user')}, each sending its next request when "
             "the last ends",
             "the prefill pool holds KV only for the prompts in flight; the decode pool holds every running sequence")
    return DisaggPlan(
        model_id=model.model_id, users=users, prompt_len=prompt_len, output_len=output_len, ttft_ms_target=ttft_ms,
        tpot_ms_target=tpot_ms, link=link.id,
        prefill=Pool(role="prefill", plan=prefill_plan, replicas=prefill_replicas,
                     max_concurrency=held * layout.attention_dp, step_ms=round(t_prefill * 1e3, 3),
                     meets_target=ttft_ok),
        decode=Pool(role="decode", plan=decode_plan, replicas=decode_replicas, max_concurrency=per_replica,
                    step_ms=round(step_s * 1e3, 3), meets_target=tpot_ok),
        kv_transfer_bytes_per_request=whole, kv_transfer_bytes_per_gpu=shard, kv_transfer_ms=by_link,
        ttft_ms=round(ttft_s * 1e3, 3), fits=not reasons, reasons=tuple(reasons), notes=notes)
