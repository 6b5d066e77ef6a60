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
