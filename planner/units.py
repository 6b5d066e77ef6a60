"""Byte units, defined once.

Inside ``planner`` every size is an ``int`` number of bytes; these constants exist
for the display edge and for tests that speak in GiB. GB is decimal (10**9 bytes,
as vendors label capacity and bandwidth); GiB is binary (2**30 bytes, as PyTorch
and the engines print memory). Never mix them.
"""

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
GB = 10**9


def ceil_div(numerator: int, denominator: int) -> int:
    """Integer ceiling division for non-negative ints, without floats.

    Example: ``ceil_div(17, 16) == 2`` (17 tokens need two 16-token blocks).
    """
    return -(-numerator // denominator)


def largest_fitting(fits, low: int, high: int) -> int:
    """Largest integer ``n`` in ``[low, high]`` with ``fits(n)``, for a monotone ``fits``.

    ``fits`` must be True up to some point and False after it. Returns
    ``low - 1`` when even ``low`` does not fit. Binary search: about
    ``log2(high - low)`` calls (24 for a 16M-token range).
    Example: ``largest_fitting(lambda n: 16 * n <= 100, 0, 1000) == 6``.
    """
    if not fits(low):
        return low - 1
    if fits(high):
        return high
    lo, hi = low, high  # fits(lo) is True, fits(hi) is False
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo
