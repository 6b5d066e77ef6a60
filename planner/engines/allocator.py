"""What PyTorch's CUDA caching allocator counts for a sequence of tensors: block rounding.

vLLM's "Model loading took X GiB" is ``torch.cuda.max_memory_allocated()`` after loading minus
before (``DeviceMemoryProfiler``, vllm/utils; ``CudaPlatform.get_current_memory_usage`` resets the
peak first, so it reads the bytes allocated at that moment). PyTorch counts in that figure the
size of each *block* it hands out, not the size the tensor asked for, and a block can be larger
(c10/cuda/CUDACachingAllocator.cpp, default settings, no ``expandable_segments``):

1. Every request is rounded up to a multiple of 512 B (``kMinBlockSize``, ``round_size``).
2. Requests up to 1 MiB (``kSmallSize``) come from the small pool, whose segments are 2 MiB
   (``kSmallBuffer``); larger ones from the large pool, whose new segments are 20 MiB
   (``kLargeBuffer``) below 10 MiB (``kMinLargeAlloc``) and the request rounded up to a multiple
   of 2 MiB (``kRoundLarge``) from 10 MiB on (``get_allocation_size``).
3. A request takes the smallest free block of its pool that holds it (``get_free_block``), else
   a new segment. What is left of the block is split off as a free block only when more than
   1 MiB would remain in the large pool (at least 512 B in the small pool; ``should_split``);
   otherwise the request keeps the whole block, and the allocated-bytes statistic counts it.

So a 253.125 MiB tensor (gpt-oss-20b's 32 fused gate/up experts in MXFP4) is counted as its
254 MiB segment, while a 126.5625 MiB one (its down projections) leaves 1.4375 MiB free and is
counted exactly. Checked on case V07 (Qwen2.5-7B / Qwen2-7B geometry, vLLM 0.10, bf16): the
tensors vLLM creates (fused ``qkv_proj`` 31.5 MiB, ``gate_up_proj`` 259 MiB, ``down_proj`` 129.5
MiB and the 1,039.5 MiB embedding and ``lm_head``) keep 57 MiB of such remainders, which closes
its log's "Model loading took 14.2488 GiB" from 14.1930 at tensor bytes. Llama-3.1-8B's tensors
are all multiples of 2 MiB (V01, V20: no remainder).

:class:`CachingAllocator` replays allocations and frees; :func:`allocated_bytes` a list of tensors
that are all kept.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

MIN_BLOCK_SIZE = 512
"""``kMinBlockSize``: every block is a multiple of this [bytes]."""
SMALL_SIZE = 1 << 20
"""``kSmallSize``: largest request served from the small pool; also the least remainder the large pool splits off."""
SMALL_BUFFER = 2 << 20
"""``kSmallBuffer``: size of a small-pool segment [bytes]."""
LARGE_BUFFER = 20 << 20
"""``kLargeBuffer``: segment for a large-pool request below :data:`MIN_LARGE_ALLOC` [bytes]."""
MIN_LARGE_ALLOC = 10 << 20
"""``kMinLargeAlloc``: from this request size on, the segment is the request rounded to :data:`ROUND_LARGE`."""
ROUND_LARGE = 2 << 20
"""``kRoundLarge``: rounding of large segments [bytes]."""


def block_size(num_bytes: int) -> int:
    """A request rounded up to a multiple of 512 B (``round_size``), at least 512 B [bytes]."""
    if num_bytes < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return -(-num_bytes // MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE


def segment_size(size: int) -> int:
    """The segment PyTorch reserves from the driver for a rounded request of ``size`` bytes
    that no free block holds (``get_allocation_size``) [bytes]."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return -(-size // ROUND_LARGE) * ROUND_LARGE


class CachingAllocator:
    """A replay of PyTorch's CUDA caching allocator on one device: blocks, splits, merges, segments.

    ``malloc`` follows rules 1-3 of the module docstring; ``free`` returns a block to its pool and
    merges it with free neighbours of the same segment (``free_block`` / ``try_merge_blocks``);
    ``empty_cache`` gives back the segments that are wholly free (``release_cached_blocks``).
    ``allocated`` is the allocated-bytes statistic ``torch.cuda.memory_allocated`` reads [bytes];
    ``reserved`` the segments held from the driver, ``torch.cuda.memory_reserved`` [bytes].
    One stream, default settings (no ``expandable_segments``, no ``max_split_size_mb``).

    Sources: c10/cuda/CUDACachingAllocator.cpp.
    """

    def __init__(self) -> None:
        self._free: dict[bool, list[tuple[int, int, int]]] = {True: [], False: []}  # (size, segment, offset)
        self._blocks: dict[tuple[int, int], list] = {}  # (segment, offset) -> [size, free, small, previous offset]
        self._segments = 0
        self._segment_bytes: dict[int, int] = {}
        self.allocated = 0
        self.reserved = 0

    def malloc(self, num_bytes: int) -> tuple[int, int]:
        """Allocate ``num_bytes`` (> 0); returns the block's handle ``(segment, offset)``."""
        size = block_size(num_bytes)
        small = size <= SMALL_SIZE
        pool = self._free[small]
        at = bisect_left(pool, (size, -1, -1))
        if at < len(pool):
            block_bytes, segment, offset = pool.pop(at)
            previous = self._blocks[(segment, offset)][3]
        else:
            block_bytes, segment, offset, previous = segment_size(size), self._segments, 0, None
            self._segments += 1
            self._segment_bytes[segment] = block_bytes
            self.reserved += block_bytes
        remaining = block_bytes - size
        if remaining >= MIN_BLOCK_SIZE if small else remaining > SMALL_SIZE:
            rest = offset + size
            self._blocks[(segment, rest)] = [remaining, True, small, offset]
            following = self._blocks.get((segment, offset + block_bytes))
            if following is not None:
                following[3] = rest
            insort(pool, (remaining, segment, rest))
            block_bytes = size
        self._blocks[(segment, offset)] = [block_bytes, False, small, previous]
        self.allocated += block_bytes
        return segment, offset

    def free(self, handle: tuple[int, int]) -> None:
        """Free the block ``handle`` and merge it with the free blocks on either side."""
        segment, offset = handle
        size, _, small, previous = self._blocks.pop(handle)
        self.allocated -= size
        pool = self._free[small]
        after = self._blocks.get((segment, offset + size))
        if after is not None and after[1]:
            pool.remove((after[0], segment, offset + size))
            del self._blocks[(segment, offset + size)]
            size += after[0]
        before = None if previous is None else self._blocks[(segment, previous)]
        if before is not None and before[1]:
            pool.remove((before[0], segment, previous))
            offset, size, previous = previous, before[0] + size, before[3]
        following = self._blocks.get((segment, offset + size))
        if following is not None:
            following[3] = offset
        self._blocks[(segment, offset)] = [size, True, small, previous]
        insort(pool, (size, segment, offset))

    def empty_cache(self) -> None:
        """Release every segment none of whose blocks is allocated (``torch.cuda.empty_cache``)."""
        used = {s for (s, _), b in self._blocks.items() if not b[1]}
        for segment in [s for s in self._segment_bytes if s not in used]:
            self.reserved -= self._segment_bytes.pop(segment)
        for small in (True, False):
            self._free[small] = [e for e in self._free[small] if e[1] in used]
        self._blocks = {k: b for k, b in self._blocks.items() if k[0] in used}


def allocated_bytes(tensor_bytes: Iterable[int]) -> int:
    """The caching allocator's allocated bytes after creating tensors of these sizes, in order [bytes].

    Args:
        tensor_bytes: Bytes each tensor asks for (>= 0; 0 allocates nothing), in creation order.

    Returns:
        The sum of the blocks handed out (module docstring, rules 1-3); at least the sum of the
        requests. Examples: ``[265_420_800]`` -> 266,338,304 (254 MiB); ``[132_710_400]`` ->
        132,710,400; ``[100]`` -> 512.

    Sources: c10/cuda/CUDACachingAllocator.cpp (``round_size``, ``get_allocation_size``,
    ``get_free_block``, ``should_split``), default ``PYTORCH_CUDA_ALLOC_CONF``.
    """
    allocator = CachingAllocator()
    for request in tensor_bytes:
        if request > 0:
            allocator.malloc(request)
    return allocator.allocated


def reserved_bytes(tensor_bytes: Iterable[int]) -> int:
    """The device memory the caching allocator holds after creating tensors of these sizes, in order, all
    kept, once ``torch.cuda.empty_cache()`` has run: the segments it reserved [bytes] (what a free-memory
    reading such as SGLang's ``get_available_gpu_memory`` sees the tensors take).

    Examples: ``[8 MiB, 4 MiB]`` -> 20 MiB (one ``kLargeBuffer`` segment holds both); ``[100]`` -> 2 MiB.

    Sources: c10/cuda/CUDACachingAllocator.cpp (``get_allocation_size``, ``release_cached_blocks``).
    """
    allocator = CachingAllocator()
    for request in tensor_bytes:
        if request > 0:
            allocator.malloc(request)
    return allocator.reserved


def rounding_bytes(tensor_bytes: Iterable[int]) -> int:
    """What :func:`allocated_bytes` adds to the plain sum of these tensor sizes [bytes] (>= 0)."""
    sizes = list(tensor_bytes)
    return allocated_bytes(sizes) - sum(s for s in sizes if s > 0)
