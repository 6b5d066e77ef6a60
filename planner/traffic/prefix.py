"""Block sharing under paging: prefix caching and parallel sampling / beam search.

With paged KV (blocks of ``B`` tokens), sequences can point at the same
physical block. Two cases matter for memory:

* **Prefix caching.** n requests that start with the same P-token system
  prompt or document hold its *full* blocks once. Saving
  ``(n - 1) x floor(P / B) x B x bytes_per_token``; the partly filled last
  prefix block is not shared (vLLM hashes full blocks only).
  Worked example: P = 1,000, B = 16 -> 62 full blocks = 992 tokens shared;
  at 16 KiB/token, 10 requests save 9 x 992 x 16 KiB = 139.5 MiB.
* **Parallel sampling n / beam width k.** Without paging each of the k
  outputs is a full contiguous cache: ``k x bytes(P + O)``. With paging the
  prompt's full blocks are shared and copied only on write; each sample owns
  the blocks from the last partial prompt block on:
  ``k x bytes_paged(P + O) - (k - 1) x floor(P / B) x B x bytes_per_token``.

Design notes (assumptions):
    1. A sliding-window (or chunked) layer shares the prefix only while the
       whole sequence is inside its window (``seq_len <= window``); past that
       the prefix blocks have slid out of the layer and nothing is shared there.
    2. Recurrent (Mamba) state is per sequence and never shared.
    3. Beam search may also share generated blocks between beams with a common
       history; that is ignored, so the paged beam figure is an upper bound.

Sources: Kwon et al., SOSP 2023, sections 4.4 (parallel sampling, beam search,
shared prefix; copy-on-write at block granularity); vLLM automatic prefix
caching design doc (docs/design/prefix_caching.md: hash of full blocks only);
DOMAIN.md section 4; seed write-up 001 section 4 ("four beams, four times the memory").
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.kv import KVProfile, pool_exact_profile


def shared_prefix_bytes(profile: KVProfile, prefix_len: int, seq_len: int) -> int:
    """Bytes of one sequence's full prefix blocks that other sequences can share [bytes].

    ``sum over layer groups of layers x floor(P / B) x B x bytes_per_token``,
    skipping windowed groups the sequence has outgrown (module note 1).

    Args:
        profile: Paged profile on one GPU (``block_size`` B).
        prefix_len: Shared prefix P [tokens], >= 0.
        seq_len: Tokens the sequence holds [tokens], >= ``prefix_len``.

    Raises:
        ValueError: negative ``prefix_len`` or ``seq_len < prefix_len``.
    """
    if prefix_len < 0:
        raise ValueError(f"prefix_len must be >= 0 tokens, got {prefix_len}")
    if seq_len < prefix_len:
        raise ValueError(f"seq_len ({seq_len:,}) must be >= prefix_len ({prefix_len:,})")
    block = profile.block_size
    full_tokens = prefix_len // block * block  # 1,000 tokens at B 16 -> 62 blocks = 992 tokens
    total = 0
    for g in profile.groups:
        if g.max_tokens is None or seq_len <= g.max_tokens:
            total += g.num_layers * full_tokens * g.bytes_per_token
    return total


def max_sequences_with_sharing(
    bytes_per_sequence: int, shared_bytes: int, hit_fraction: float, budget_bytes: int
) -> int:
    """Largest k with ``k x bytes_per_sequence - max(floor(h k) - 1, 0) x shared <= budget``.

    The first of the ``floor(h k)`` requests that hit the prefix stores it; the
    others reuse it. With ``shared_bytes`` 0 this is ``budget // bytes_per_sequence``.

    Raises:
        ValueError: ``shared_bytes >= bytes_per_sequence`` (a sequence must own
            at least one block), or ``hit_fraction`` outside [0, 1].
    """
    if not 0 <= hit_fraction <= 1:
        raise ValueError(f"hit_fraction must be in [0, 1], got {hit_fraction}")
    if budget_bytes <= 0 or bytes_per_sequence <= 0:
        return 0
    if shared_bytes == 0 or hit_fraction == 0:
        return budget_bytes // bytes_per_sequence
    if shared_bytes >= bytes_per_sequence:
        raise ValueError("the shared prefix cannot cover a whole sequence: each sequence owns at least one block")

    def cost(k: int) -> int:
        return k * bytes_per_sequence - max(int(hit_fraction * k + 1e-9) - 1, 0) * shared_bytes

    lo = 0  # cost(0) = 0 fits
    hi = budget_bytes // (bytes_per_sequence - shared_bytes) + 1  # cost(hi) >= hi (per_seq - shared) + shared > budget
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cost(mid) <= budget_bytes:
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True, kw_only=True)
class PrefixSharing:
    """Memory and prefill saved when requests share a prefix (one GPU).

    Attributes:
        prefix_len: Shared prefix P [tokens].
        block_size: Page size B [tokens].
        shared_tokens: ``floor(P / B) x B`` [tokens].
        shared_bytes_per_sequence: Bytes of those blocks in one sequence [bytes].
        num_requests: Concurrent requests n.
        num_hits: Requests that start with the prefix, ``floor(hit_fraction x n)``.
        hit_fraction: Share of requests that hit the prefix.
        bytes_without_sharing: ``n x bytes_paged(seq_len)`` [bytes].
        bytes_saved: ``max(hits - 1, 0) x shared_bytes_per_sequence`` [bytes].
        prefill_tokens_saved: Prompt tokens not recomputed, ``max(hits - 1, 0) x shared_tokens``.
        max_sequences_without: Budget // bytes per sequence.
        max_sequences_with: Sequences that fit with sharing.
    """

    prefix_len: int
    block_size: int
    shared_tokens: int
    shared_bytes_per_sequence: int
    num_requests: int
    num_hits: int
    hit_fraction: float
    bytes_without_sharing: int
    bytes_saved: int
    prefill_tokens_saved: int
    max_sequences_without: int
    max_sequences_with: int

    @property
    def bytes_with_sharing(self) -> int:
        """KV the n requests hold with the prefix stored once [bytes]."""
        return self.bytes_without_sharing - self.bytes_saved


def prefix_caching(
    profile: KVProfile,
    *,
    prefix_len: int,
    seq_len: int,
    num_requests: int,
    hit_fraction: float = 1.0,
    budget_bytes: int = 0,
) -> PrefixSharing:
    """Bytes saved by storing a shared P-token prefix once.

    ``saving = (hits - 1) x floor(P / B) x B x bytes_per_token``,
    ``hits = floor(hit_fraction x num_requests)``.
    Worked example: 16 KiB/token, B 16, P 1,000, n 10, all hit:
    9 x 992 x 16,384 = 146,276,352 B.

    Args:
        profile: Paged profile on one GPU.
        prefix_len: Shared prefix [tokens].
        seq_len: Tokens each request holds, prefix included [tokens], > ``prefix_len``.
        num_requests: Concurrent requests, >= 1.
        hit_fraction: Share that starts with the prefix, in [0, 1].
        budget_bytes: Per-GPU KV budget for the sequences-that-fit figures [bytes].

    Raises:
        ValueError: out-of-range arguments, with the limit to respect.

    Sources: DOMAIN.md section 4; Kwon et al. 2023 section 4.4; vLLM
    docs/design/prefix_caching.md.
    """
    if num_requests < 1:
        raise ValueError(f"num_requests must be >= 1, got {num_requests}")
    if not 0 <= hit_fraction <= 1:
        raise ValueError(f"hit_fraction must be in [0, 1], got {hit_fraction}")
    if seq_len <= prefix_len:
        raise ValueError(
            f"seq_len ({seq_len:,}) must exceed prefix_len ({prefix_len:,}): each request adds its own tokens")
    shared = shared_prefix_bytes(profile, prefix_len, seq_len)
    per_seq = profile.bytes_per_sequence(seq_len)
    hits = int(hit_fraction * num_requests + 1e-9)
    reusers = max(hits - 1, 0)
    block = profile.block_size
    return PrefixSharing(
        prefix_len=prefix_len, block_size=block, shared_tokens=prefix_len // block * block,
        shared_bytes_per_sequence=shared, num_requests=num_requests, num_hits=hits, hit_fraction=hit_fraction,
        bytes_without_sharing=num_requests * per_seq, bytes_saved=reusers * shared,
        prefill_tokens_saved=reusers * (prefix_len // block * block),
        max_sequences_without=max(budget_bytes, 0) // per_seq if per_seq else 0,
        max_sequences_with=max_sequences_with_sharing(per_seq, shared, hit_fraction, budget_bytes),
    )


@dataclass(frozen=True, kw_only=True)
class SamplingMemory:
    """KV of one request that generates ``num_samples`` outputs (parallel n or beam k).

    Attributes:
        num_samples: Outputs per request (n or beam width k).
        prompt_len, output_len: Tokens [tokens].
        bytes_without_paging: ``k x bytes_exact(P + O)``: k full contiguous caches [bytes].
        bytes_paged_unshared: ``k x bytes_paged(P + O)``: paging, no sharing [bytes].
        bytes_paged_shared: prompt blocks shared copy-on-write [bytes].
        requests_without_paging: Requests that fit the budget without paging.
        requests_paged_shared: Requests that fit with shared prompt blocks.
    """

    num_samples: int
    prompt_len: int
    output_len: int
    bytes_without_paging: int
    bytes_paged_unshared: int
    bytes_paged_shared: int
    requests_without_paging: int
    requests_paged_shared: int

    @property
    def bytes_saved(self) -> int:
        """Without paging minus paged with sharing [bytes]."""
        return self.bytes_without_paging - self.bytes_paged_shared


def parallel_sampling(
    exact: KVProfile,
    paged: KVProfile,
    *,
    prompt_len: int,
    output_len: int,
    num_samples: int,
    budget_bytes: int = 0,
) -> SamplingMemory:
    """KV for k samples (or beams) of one prompt, with and without paging.

    Without paging: ``k x bytes(P + O)``. With paging, copy-on-write:
    ``k x bytes_paged(P + O) - (k - 1) x floor(P / B) x B x bytes_per_token``.
    Worked example: 16 KiB/token, B 16, P 1,000, O 200, k 4:
    without 4 x 1,200 x 16 KiB = 75 MiB; paged 4 x 1,200 slots - 3 x 992 =
    1,824 slots x 16 KiB = 28.5 MiB.

    A pooled ``paged`` profile (DeepSeek-V4: vLLM stores its cache only as ``fp8_ds_mla`` pool pages) prices
    "without paging" in that format too (:func:`planner.model.kv.pool_exact_profile`), as
    :func:`planner.traffic.allocation.compare_allocation` prices its naive scheme: ``exact`` is then the bf16
    cache vLLM never stores.

    Raises:
        ValueError: ``num_samples < 1``, ``prompt_len < 1`` or ``output_len < 0``.

    Sources: Kwon et al. 2023 section 4.4; seed write-up 001 section 4.
    """
    if getattr(paged, "pooled", False):
        exact = pool_exact_profile(paged)
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if prompt_len < 1 or output_len < 0:
        raise ValueError(f"need prompt_len >= 1 and output_len >= 0 tokens, got {prompt_len} and {output_len}")
    seq = prompt_len + output_len
    without = num_samples * exact.bytes_per_sequence(seq)
    unshared = num_samples * paged.bytes_per_sequence(seq)
    shared = unshared - (num_samples - 1) * shared_prefix_bytes(paged, prompt_len, seq)
    budget = max(budget_bytes, 0)
    return SamplingMemory(
        num_samples=num_samples, prompt_len=prompt_len, output_len=output_len,
        bytes_without_paging=without, bytes_paged_unshared=unshared, bytes_paged_shared=shared,
        requests_without_paging=budget // without if without else 0,
        requests_paged_shared=budget // shared if shared else 0,
    )
