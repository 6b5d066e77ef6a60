"""Naive vs paged vs paged + prefix-cached KV allocation on one GPU's budget.

Three ways to hand out a KV budget to sequences whose average length is
``mean_len`` under an engine limit of ``max_model_len`` tokens:

* **naive** (contiguous, pre-PagedAttention servers): every sequence reserves
  room for ``max_model_len`` tokens up front; only ``mean_len`` of it is ever
  written. Unused share of the reservation ``1 - mean_len / max_model_len``:
  8,192-token limit, 800-token sequences -> 1 - 800/8192 = 90.2%.
* **paged** (vLLM, Kwon et al. 2023): blocks of ``block_size`` tokens allocated
  on demand; a sequence wastes only the unfilled tail of its last block, less
  than one block (800 tokens, block 16 -> 50 blocks, 0 slots wasted; 801 ->
  51 blocks, 15 wasted).
* **paged + prefix caching**: requests that share a prompt prefix hold its full
  blocks once (:mod:`planner.traffic.prefix`).

Design notes (assumptions):
    1. All sequences in the batch are at ``mean_len`` tokens (use
       :mod:`planner.workload` for spread-out lengths).
    2. The naive reservation is exact in tokens (no block rounding), windows
       applied: a sliding-window layer reserves at most its window. It models a
       contiguous server, not vLLM, so it can admit more sequences of
       ``max_model_len`` than :func:`planner.budget.plan` counts (Home's users),
       which pages them as vLLM does: whole raised blocks and padded recurrent
       states of an attention + Mamba hybrid, a windowed model's padded layer
       groups, the block kept beyond each window and one prefill chunk set
       aside. ``max_concurrent_sequences`` is that count and ``naive_note``
       says both figures where they differ (Qwen3.6-35B-A3B on an H200 at
       32,768 tokens with vLLM's default encoder profile: naive 83, plan 81 in
       1,056-token blocks).
    3. "Used" bytes are the KV of the tokens actually held, unrounded;
       ``wasted = reserved - used``.
    4. Budgets are per GPU, from :func:`planner.budget.plan`.
    5. A pooled paged profile (DeepSeek-V4: vLLM stores its cache only as ``fp8_ds_mla`` pool pages) prices the
       naive reservation and the used bytes in that format too (:func:`planner.model.kv.pool_exact_profile`:
       each cache at its pool rate, windows and compressor states at their caps, no block rounding), so no
       scheme is priced in a cache vLLM never stores (its exact bf16 figure is twice the pool's per token). A
       window's and a compressor state's tokens count as used; the block vLLM keeps beyond each window counts
       as reserved and unused.
    6. The default batch is what both naive and paged admit (the smaller count, at least 1), so no bar
       reserves more than the budget; a batch given beyond a scheme's count gets a note saying so.

Sources: Kwon et al., "Efficient Memory Management for Large Language Model
Serving with PagedAttention", SOSP 2023 (section 3: 20.4-38.2% of reserved KV
used by earlier systems; section 4: waste under one block per sequence);
DOMAIN.md section 4; seed write-up 000 (section 2.3, the 90% and 31-of-32 figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.budget import PlanRequest, plan, plan_base, sequence_profiles
from planner.model import ModelSpec
from planner.model.kv import KVProfile, pool_exact_profile
from planner.pipeline import planning_stage
from planner.traffic.prefix import max_sequences_with_sharing, shared_prefix_bytes
from planner.text import count_noun
from planner.units import MiB, ceil_div

SCHEMES = ("naive", "paged", "paged+prefix")
"""Allocation schemes, in display order."""


@dataclass(frozen=True, kw_only=True)
class SchemeUsage:
    """One allocation scheme applied to ``num_sequences`` sequences on one GPU.

    Attributes:
        scheme: ``naive``, ``paged`` or ``paged+prefix``.
        reserved_bytes_per_sequence: KV set aside per sequence [bytes] (for
            ``paged+prefix``, the average including the shared prefix once).
        used_bytes_per_sequence: KV of the tokens held per sequence [bytes].
        num_sequences: Sequences in the batch compared.
        reserved_bytes: KV set aside for the batch [bytes].
        used_bytes: KV the batch's tokens fill [bytes].
        max_sequences: Sequences of ``mean_len`` tokens the budget admits.
    """

    scheme: str
    reserved_bytes_per_sequence: int
    used_bytes_per_sequence: int
    num_sequences: int
    reserved_bytes: int
    used_bytes: int
    max_sequences: int

    @property
    def wasted_bytes(self) -> int:
        """Reserved but never written [bytes]."""
        return self.reserved_bytes - self.used_bytes

    @property
    def unused_fraction(self) -> float:
        """``wasted / reserved`` (0 when nothing is reserved)."""
        return self.wasted_bytes / self.reserved_bytes if self.reserved_bytes else 0.0


@dataclass(frozen=True, kw_only=True)
class AllocationComparison:
    """Naive, paged and paged + prefix allocation side by side (per GPU).

    ``to_dict`` keys are a CLI contract (``python -m planner allocation``).
    """

    model_id: str
    gpu_id: str
    max_model_len: int
    mean_len: int
    block_size: int
    kv_cache_budget_bytes: int
    kv_cache_bytes_per_token_per_gpu: int
    prefix_len: int
    prefix_hit_fraction: float
    naive: SchemeUsage
    paged: SchemeUsage
    prefix: SchemeUsage
    notes: tuple[str, ...] = field(default_factory=tuple)
    prefill_tokens: int = 0  # the one prefill chunk the paged counts set aside (windowed layers; planner.budget)
    max_concurrent_sequences: int = 0
    """Sequences of ``max_model_len`` tokens :func:`planner.budget.plan` counts (Home's users): the paged count at
    ``mean_len = max_model_len``, beside one prefill chunk (design note 2)."""
    naive_note: str = ""
    """Why the naive count differs from :attr:`max_concurrent_sequences`, with both figures; empty when equal."""
    pooled: bool = False
    """True when every scheme is priced in an engine's pool format (DeepSeek-V4's ``fp8_ds_mla`` pages, design
    note 5): the waste is then the unfilled tail of each cache group's last block and the block kept beyond each
    window, not under one block per sequence."""

    @property
    def schemes(self) -> tuple[SchemeUsage, SchemeUsage, SchemeUsage]:
        """The three schemes in display order."""
        return (self.naive, self.paged, self.prefix)

    def to_dict(self) -> dict:
        """Flat dict for JSON: ``naive_*``, ``paged_*``, ``prefix_*`` keys."""
        out: dict = {
            "model_id": self.model_id, "gpu_id": self.gpu_id, "max_model_len": self.max_model_len,
            "mean_len": self.mean_len, "block_size": self.block_size,
            "kv_cache_budget_bytes": self.kv_cache_budget_bytes,
            "kv_cache_bytes_per_token_per_gpu": self.kv_cache_bytes_per_token_per_gpu,
            "prefix_len": self.prefix_len, "prefix_hit_fraction": self.prefix_hit_fraction,
            "num_sequences": self.naive.num_sequences,
            "max_concurrent_sequences": self.max_concurrent_sequences,
        }
        for key, usage in (("naive", self.naive), ("paged", self.paged), ("prefix", self.prefix)):
            out.update({
                f"{key}_reserved_bytes_per_sequence": usage.reserved_bytes_per_sequence,
                f"{key}_used_bytes_per_sequence": usage.used_bytes_per_sequence,
                f"{key}_reserved_bytes": usage.reserved_bytes,
                f"{key}_used_bytes": usage.used_bytes,
                f"{key}_wasted_bytes": usage.wasted_bytes,
                f"{key}_unused_fraction": usage.unused_fraction,
                f"{key}_max_sequences": usage.max_sequences,
            })
        out["notes"] = list(self.notes)
        out["naive_note"] = self.naive_note
        return out


def _check(max_model_len: int, mean_len: int, prefix_len: int, hit_fraction: float) -> None:
    if max_model_len < 1:
        raise ValueError(f"max_model_len must be >= 1 token, got {max_model_len}")
    if mean_len < 1:
        raise ValueError(f"mean_len must be >= 1 token, got {mean_len}")
    if mean_len > max_model_len:
        raise ValueError(
            f"mean_len (the average sequence length) {mean_len:,} exceeds max_model_len {max_model_len:,}: no sequence can be longer "
            f"than the limit; raise max_model_len to at least {mean_len:,}")
    if prefix_len < 0:
        raise ValueError(f"prefix_len must be >= 0 tokens, got {prefix_len}")
    if prefix_len and prefix_len >= mean_len:
        raise ValueError(
            f"prefix_len {prefix_len:,} must be shorter than mean_len {mean_len:,}: each sequence adds "
            f"at least one token of its own; lower prefix_len to at most {mean_len - 1:,}")
    if not 0 <= hit_fraction <= 1:
        raise ValueError(f"prefix_hit_fraction must be in [0, 1], got {hit_fraction}")


def compare_allocation(
    exact: KVProfile,
    paged: KVProfile,
    budget_bytes: int,
    *,
    max_model_len: int,
    mean_len: int,
    num_sequences: int | None = None,
    prefix_len: int = 0,
    prefix_hit_fraction: float = 1.0,
    model_id: str = "",
    gpu_id: str = "",
    prefill_tokens: int = 0,
    max_num_seqs: int | None = None,
) -> AllocationComparison:
    """Reserved, used and wasted KV, and sequences that fit, under each scheme.

    Formulas (per GPU; ``bytes(n)`` from the profile, windows applied):
        naive reserved/seq  = bytes_exact(max_model_len)
        paged reserved/seq  = bytes_paged(mean_len) = ceil(mean_len / B) x B x bytes_per_token
        used/seq            = bytes_exact(mean_len)
        max_sequences       = budget // reserved/seq
        plan's users        = (budget - prefill extra at L) // bytes_paged(L), L = max_model_len
                              (``max_concurrent_sequences``; ``naive_note`` when naive's count differs)
        prefix saving       = (hits - 1) x floor(P / B) x B x bytes_per_token,
                              hits = floor(prefix_hit_fraction x num_sequences)
    Worked example (16 KiB/token, B 16, limit 8,192, mean 800): naive reserves
    128 MiB per sequence and uses 12.5 MiB, unused 1 - 800/8192 = 90.2%;
    paged reserves 50 blocks = 12.5 MiB, unused 0%.

    Args:
        exact: KV profile with ``block_size`` 1 on one GPU.
        paged: KV profile with the engine's ``block_size`` on one GPU.
        budget_bytes: Per-GPU KV budget [bytes] (``Plan.kv_cache_budget_bytes``).
        max_model_len: Engine limit per sequence [tokens].
        mean_len: Tokens each sequence holds [tokens], ``<= max_model_len``.
        num_sequences: Batch compared; None = what the naive scheme admits
            (at least 1), so the three bars show the same traffic.
        prefix_len: Tokens of a prefix shared by some requests [tokens], ``< mean_len``.
        prefix_hit_fraction: Share of requests that start with that prefix, in [0, 1].
        model_id, gpu_id: Echoed in the result.
        prefill_tokens: The one prefill chunk beside the decoding sequences [tokens]
            (``planner.budget._PlanBase.prefill_tokens``): the paged and prefix counts set its extra window
            blocks aside first (``paged.prefill_extra_bytes``), as :func:`planner.budget.plan` counts users;
            0 = none (a model without windows gets 0 from the plan too).
        max_num_seqs: An explicit ``max_num_seqs``: the plan's users are at most that many, as
            :func:`planner.budget.plan` counts them (vLLM's scheduler runs at most that many requests at once,
            vllm/v1/core/sched/scheduler.py), and the naive note says so; the schemes keep counting what memory
            holds. None = no cap.

    Raises:
        ValueError: lengths out of range (the message says what would fit).

    Sources: module docstring; Kwon et al. 2023; DOMAIN.md section 4.
    """
    _check(max_model_len, mean_len, prefix_len, prefix_hit_fraction)
    if num_sequences is not None and num_sequences < 1:
        raise ValueError(f"num_sequences must be >= 1, got {num_sequences}")
    budget = max(budget_bytes, 0)
    pooled = bool(getattr(paged, "pooled", False))
    bytes_per_token = exact.bytes_per_token  # the exact cache's figure, echoed (the JSON key's meaning)
    if pooled:  # DeepSeek-V4: vLLM stores only its fp8_ds_mla pool; price naive and used in it (design note 5)
        exact = pool_exact_profile(paged)
    naive_per_seq = exact.bytes_per_sequence(max_model_len)
    used_per_seq = exact.bytes_per_sequence(mean_len)
    paged_per_seq = paged.bytes_per_sequence(mean_len)
    naive_max = budget // naive_per_seq if naive_per_seq else 0
    room = max(budget - (paged.prefill_extra_bytes(mean_len, prefill_tokens) if prefill_tokens else 0), 0)
    paged_max = room // paged_per_seq if paged_per_seq else 0  # beside one prefill chunk, as planner.budget.plan
    # the batch every scheme holds (design note 6): naive's count, or paged's where pages cost more
    n = num_sequences if num_sequences is not None else max(1, min(naive_max, paged_max))

    shared = shared_prefix_bytes(paged, prefix_len, mean_len) if prefix_len else 0
    hits = int(prefix_hit_fraction * n + 1e-9)
    saving = max(hits - 1, 0) * shared
    prefix_reserved = n * paged_per_seq - saving
    prefix_max = max_sequences_with_sharing(paged_per_seq, shared, prefix_hit_fraction, room)

    naive = SchemeUsage(scheme="naive", reserved_bytes_per_sequence=naive_per_seq,
                        used_bytes_per_sequence=used_per_seq, num_sequences=n,
                        reserved_bytes=n * naive_per_seq, used_bytes=n * used_per_seq, max_sequences=naive_max)
    paged_usage = SchemeUsage(scheme="paged", reserved_bytes_per_sequence=paged_per_seq,
                              used_bytes_per_sequence=used_per_seq, num_sequences=n,
                              reserved_bytes=n * paged_per_seq, used_bytes=n * used_per_seq,
                              max_sequences=paged_max)
    prefix = SchemeUsage(scheme="paged+prefix", reserved_bytes_per_sequence=ceil_div(prefix_reserved, n),
                         used_bytes_per_sequence=ceil_div(n * used_per_seq - saving, n), num_sequences=n,
                         reserved_bytes=prefix_reserved, used_bytes=n * used_per_seq - saving,
                         max_sequences=prefix_max)
    at_limit = paged.bytes_per_sequence(max_model_len)
    limit_room = max(budget - (paged.prefill_extra_bytes(max_model_len, prefill_tokens) if prefill_tokens else 0), 0)
    held = limit_room // at_limit if at_limit else 0  # what the KV cache holds at max_model_len
    engine_max = min(held, max_num_seqs) if max_num_seqs else held  # planner.budget.plan's users there
    notes = []
    if budget_bytes <= 0:
        notes.append("the KV budget is not positive: weights and overhead fill the GPU")
    if naive_max == 0 and budget_bytes > 0:
        notes.append(f"naive allocation cannot hold one {max_model_len:,}-token reservation in this budget")
    if n > naive_max:
        notes.append(f"the batch of {n:,} exceeds what naive allocation admits ({naive_max:,})")
    if n > paged_max:
        notes.append(f"the batch of {n:,} exceeds what paged allocation admits ({paged_max:,}): its reserved "
                     "figure is above the budget")
    if paged_max < naive_max:  # large blocks and padded states (an attention + Mamba hybrid under vLLM)
        notes.append(f"paged holds fewer sequences than naive reservation here ({paged_max:,} vs {naive_max:,}): a "
                     f"{mean_len:,}-token sequence takes whole {paged.block_size:,}-token blocks, "
                     f"{paged_per_seq / MiB:,.1f} MiB against {naive_per_seq / MiB:,.1f} MiB reserved for "
                     f"{max_model_len:,} tokens ("
                     + ("vLLM pads its layer groups, keeps a block beyond each window, and one prefill chunk holds "
                        f"{prefill_tokens:,} tokens more in each window" if room < budget else
                        "vLLM pads each recurrent state to a whole page") + ")")
    return AllocationComparison(
        model_id=model_id, gpu_id=gpu_id, max_model_len=max_model_len, mean_len=mean_len,
        block_size=paged.block_size, kv_cache_budget_bytes=budget_bytes,
        kv_cache_bytes_per_token_per_gpu=bytes_per_token, prefix_len=prefix_len, pooled=pooled,
        prefix_hit_fraction=prefix_hit_fraction, naive=naive, paged=paged_usage, prefix=prefix,
        notes=tuple(notes), prefill_tokens=prefill_tokens, max_concurrent_sequences=engine_max,
        naive_note=_naive_note(naive_max, held, naive_per_seq, at_limit, max_model_len, paged.block_size,
                               exact.bytes_per_token, limit_room < budget, max_num_seqs),
    )


def _naive_note(naive_max: int, engine_max: int, naive_per_seq: int, paged_per_seq: int, max_model_len: int,
                block_size: int, bytes_per_token: int, chunk_aside: bool, cap: int | None = None) -> str:
    """Why naive reservation holds ``naive_max`` sequences of ``max_model_len`` where the paged KV cache holds
    ``engine_max`` (design note 2), and where an explicit ``max_num_seqs`` ``cap`` below that is the plan's users
    (QA, stop 46: Llama 3.1 8B on an H100 at 2,500 tokens with ``max_num_seqs=64``, Home 64 users beside "The plan
    (Home's users) counts 178"); empty when they agree and no cap applies.

    Sources: vllm/v1/core/kv_cache_utils.py (whole blocks per request, page-size unification of a hybrid's
    groups); :meth:`planner.model.kv.KVProfile.prefill_extra_bytes` (the prefill chunk of a windowed model).
    """
    capped = (f"The plan (Home's users) counts {cap:,}: max_num_seqs {cap:,} caps the {engine_max:,} requests of "
              f"{max_model_len:,} tokens its KV cache holds (vLLM runs at most max_num_seqs at once)."
              if cap and cap < engine_max else "")
    if naive_max == engine_max:
        return capped
    rounded = ceil_div(max_model_len, block_size) * block_size
    causes = [f"whole {block_size:,}-token blocks" + (f" ({rounded:,} tokens)" if rounded != max_model_len else "")]
    if chunk_aside:
        causes.append("its layer groups padded, a block kept beyond each window and one prefill chunk's window "
                      "blocks set aside")
    elif paged_per_seq > naive_per_seq + (rounded - max_model_len) * bytes_per_token:  # more than the rounding
        causes.append("each recurrent state padded to a whole page")
    who = "Paged memory holds" if capped else "The plan (Home's users) counts"
    return (f"Naive reservation holds {count_noun(naive_max, 'sequence')}: each reserves the exact bytes of "
            f"{max_model_len:,} tokens, {naive_per_seq / MiB:,.1f} MiB. {who} "
            f"{engine_max:,} of {max_model_len:,} tokens, as vLLM pages them: {paged_per_seq / MiB:,.1f} MiB each in "
            + ", ".join(causes) + " (Paged's count when mean_len = max_model_len)." + (f" {capped}" if capped else ""))


def allocation_for_model(
    model: ModelSpec,
    gpu_memory_bytes: int,
    request: PlanRequest,
    *,
    mean_len: int,
    num_sequences: int | None = None,
    prefix_len: int = 0,
    prefix_hit_fraction: float = 1.0,
    gpu_id: str = "",
    pipeline_parallel_size: int = 1,
) -> AllocationComparison:
    """:func:`compare_allocation` for a model on a GPU, budget from :func:`planner.budget.plan`.

    ``request.context_len`` is the engine's ``max_model_len``; its
    ``block_size``, dtypes, ``num_gpus``, overheads and serving features set the budget and
    profiles (:func:`planner.budget.sequence_profiles`: with features, each sequence also holds
    their lookahead and image tokens, as on :func:`planner.budget.plan`). With ``pipeline_parallel_size``
    stages splitting ``num_gpus``, every figure is one GPU's of the stage :func:`planner.pipeline.plan_pipeline`
    reports (:func:`planner.pipeline.planning_stage`: the fewest users; vLLM sizes every stage's cache to the
    smallest worker's, ``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py), so the plan's users are
    ``plan_pipeline``'s.

    Raises:
        ValueError: invalid request fields or lengths, or a ``num_gpus`` that cannot
            split the attention heads (no engine would start, so there is nothing to compare); stages that do not
            split the GPUs or the layers.
    """
    if pipeline_parallel_size != 1:
        model, request = planning_stage(model, gpu_memory_bytes, request, gpu_id,
                                        pipeline_parallel_size=pipeline_parallel_size)
    result = plan(model, gpu_memory_bytes, request, gpu_id=gpu_id)
    if result.max_context_len_limited_by == "tensor_parallel":
        reason = next(r for r in result.reasons if "cannot split" in r)
        fix = next((f for f in result.suggestions if f.startswith("use num_gpus")), "")
        raise ValueError(f"{reason}; {fix}" if fix else reason)
    exact, paged = sequence_profiles(model, gpu_memory_bytes, request, gpu_id)  # serving features applied
    return compare_allocation(
        exact, paged, result.kv_cache_budget_bytes, max_model_len=request.context_len, mean_len=mean_len,
        num_sequences=num_sequences, prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction,
        model_id=model.model_id, gpu_id=gpu_id,
        prefill_tokens=plan_base(model, gpu_memory_bytes, request, gpu_id).prefill_tokens,
        max_num_seqs=request.max_num_seqs,
    )


@dataclass(frozen=True, kw_only=True)
class AllocationPoint:
    """One ``max_model_len`` of the allocation curve (per GPU)."""

    max_model_len: int
    naive_max_sequences: int
    paged_max_sequences: int
    prefix_max_sequences: int
    naive_unused_fraction: float
    paged_unused_fraction: float


def allocation_curve(
    exact: KVProfile,
    paged: KVProfile,
    budget_bytes: int,
    *,
    mean_len: int,
    max_model_lens: tuple[int, ...],
    prefix_len: int = 0,
    prefix_hit_fraction: float = 1.0,
    prefill_tokens: int = 0,
) -> tuple[AllocationPoint, ...]:
    """Sequences that fit, and unused share of the reservation, per ``max_model_len``.

    Limits below ``mean_len`` are skipped (no sequence can be that long). The
    paged figures do not depend on the limit; the naive ones fall as ``1 / max_model_len``.

    Raises:
        ValueError: as :func:`compare_allocation`.
    """
    points = []
    for limit in sorted(set(max_model_lens)):
        if limit < mean_len:
            continue
        c = compare_allocation(exact, paged, budget_bytes, max_model_len=limit, mean_len=mean_len,
                               num_sequences=1, prefix_len=prefix_len, prefix_hit_fraction=prefix_hit_fraction,
                               prefill_tokens=prefill_tokens)
        points.append(AllocationPoint(
            max_model_len=limit, naive_max_sequences=c.naive.max_sequences,
            paged_max_sequences=c.paged.max_sequences, prefix_max_sequences=c.prefix.max_sequences,
            naive_unused_fraction=c.naive.unused_fraction, paged_unused_fraction=c.paged.unused_fraction,
        ))
    return tuple(points)


@dataclass(frozen=True, kw_only=True)
class SliceWaste:
    """A naive reservation cut into equal slices, and how many one sequence fills.

    Attributes:
        num_tokens: Tokens the sequence holds.
        max_model_len: Tokens reserved [tokens].
        num_slices: Slices the reservation is cut into.
        slice_tokens: Tokens per slice [tokens].
        used_slices: Slices the sequence touches, ``ceil(num_tokens / slice_tokens)``.
        wasted_slices: ``num_slices - used_slices``.
    """

    num_tokens: int
    max_model_len: int
    num_slices: int
    slice_tokens: int
    used_slices: int
    wasted_slices: int


def slice_waste(num_tokens: int, max_model_len: int, num_slices: int = 32) -> SliceWaste:
    """How many of ``num_slices`` equal slices of a naive reservation a sequence leaves empty.

    Worked example (seed write-up 000, section 2.3): a 1,000-token completion
    under a 32K (32,768-token) limit, 32 slices of 1,024 tokens: it touches
    ceil(1000 / 1024) = 1 slice and wastes 31 of 32.

    Raises:
        ValueError: ``num_tokens`` outside [1, max_model_len], or ``num_slices``
            not dividing ``max_model_len``.
    """
    if not 1 <= num_tokens <= max_model_len:
        raise ValueError(f"num_tokens must be in [1, max_model_len={max_model_len:,}], got {num_tokens:,}")
    if num_slices < 1 or max_model_len % num_slices:
        raise ValueError(f"num_slices ({num_slices}) must divide max_model_len ({max_model_len:,})")
    size = max_model_len // num_slices
    used = ceil_div(num_tokens, size)
    return SliceWaste(num_tokens=num_tokens, max_model_len=max_model_len, num_slices=num_slices,
                      slice_tokens=size, used_slices=used, wasted_slices=num_slices - used)
