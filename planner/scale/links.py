"""Links between the prefill and decode pools, and the time to move one request's KV over them.

Each GPU of a prefill instance sends its own shard of a finished prompt's KV to its decode peer
over its own link (the usual rail layout: one NIC per GPU on HGX / DGX nodes, one NVLink port set
per GPU inside an NVLink domain), so the shards move in parallel and the time is one shard over
one GPU's bandwidth:

    kv_transfer_s = kv_transfer_bytes_per_gpu / (gb_s_per_direction x 10^9)

This is a lower bound: peak line rate, no protocol overhead, no setup latency, no overlap with
the prefill's last layers (NIXL and Mooncake pipeline the layers, which hides part of it).
Worked example: Llama-3.1-70B (80 layers x 8 KV heads x 128 x 2 x 2 B = 327,680 B per token) at
TP 4, 2,048-token prompt: 2 KV heads per GPU, 167,772,160 B per GPU; over 400 Gb/s InfiniBand
(50 GB/s) 3.36 ms, over NVLink 4 (450 GB/s) 0.37 ms.

Sources: each :class:`Link`'s ``source``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Link:
    """One kind of GPU-to-GPU link, per GPU and per direction.

    Attributes:
        id: Key used on the command line (``--link``) and in the JSON.
        name: Display name.
        gb_s_per_direction: Peak bandwidth one GPU has on it in one direction [GB/s, 10^9 B/s].
        source: Where the figure comes from.
    """

    id: str
    name: str
    gb_s_per_direction: float
    source: str


LINKS: tuple[Link, ...] = (
    Link(id="nvlink4", name="NVLink 4 (H100 / H200 SXM, one NVLink domain)", gb_s_per_direction=450.0,
         source="NVIDIA H100 and H200 datasheets: NVLink 900 GB/s per GPU, both directions together"),
    Link(id="nvlink5", name="NVLink 5 (B200 / GB200)", gb_s_per_direction=900.0,
         source="NVIDIA Blackwell (DGX B200 / GB200 NVL72) datasheets: fifth-generation NVLink 1.8 TB/s per GPU, "
                "both directions together"),
    Link(id="infiniband-ndr", name="InfiniBand NDR 400 Gb/s per GPU", gb_s_per_direction=50.0,
         source="NVIDIA DGX H100 user guide: eight ConnectX-7 400 Gb/s compute ports, one per GPU; NVIDIA Quantum-2 "
                "NDR 400 Gb/s per port (400 / 8 = 50 GB/s)"),
    Link(id="infiniband-xdr", name="InfiniBand XDR 800 Gb/s per GPU", gb_s_per_direction=100.0,
         source="NVIDIA ConnectX-8 SuperNIC and Quantum-X800 datasheets: 800 Gb/s per port (100 GB/s)"),
    Link(id="roce-400g", name="RoCE 400 GbE per GPU", gb_s_per_direction=50.0,
         source="NVIDIA Spectrum-X / ConnectX-7 Ethernet datasheets: 400 GbE per port (50 GB/s)"),
    Link(id="roce-200g", name="RoCE 200 GbE per GPU", gb_s_per_direction=25.0,
         source="NVIDIA ConnectX-6 Dx / ConnectX-7 Ethernet datasheets: 200 GbE per port (25 GB/s)"),
    Link(id="pcie5", name="PCIe 5.0 x16 (through the host)", gb_s_per_direction=63.0,
         source="PCI-SIG PCIe 5.0: 32 GT/s x 16 lanes, 128b/130b encoding = 63 GB/s per direction (the GPU "
                "catalog's host_link figure, from the H100 / H200 datasheets' 128 GB/s both ways)"),
    Link(id="pcie4", name="PCIe 4.0 x16 (through the host)", gb_s_per_direction=31.5,
         source="PCI-SIG PCIe 4.0: 16 GT/s x 16 lanes, 128b/130b encoding = 31.5 GB/s per direction"),
)
"""The link table (ids in the order the JSON lists them)."""

DEFAULT_LINK = "infiniband-ndr"
"""The link between pools when ``--link`` is not given: separate nodes on a 400 Gb/s fabric."""

TRANSFER_MS_DIGITS = 2
"""Decimals a request's KV transfer time [ms] is shown with, on the Disaggregation page (table and sentence) and by
``disagg``'s table alike (QA: the sentence said 10.737 ms beside the table's 10.74)."""


def link_by_id(link_id: str) -> Link:
    """The :class:`Link` with this id.

    Raises:
        ValueError: an unknown id, with the known ones.
    """
    for link in LINKS:
        if link.id == link_id:
            return link
    raise ValueError(f"unknown link {link_id!r}; choose one of {', '.join(link.id for link in LINKS)}")


def transfer_ms(num_bytes: int, link: Link) -> float:
    """Milliseconds to move ``num_bytes`` over one GPU's ``link`` at peak rate (module docstring) [ms].

    Args:
        num_bytes: Bytes one GPU sends [bytes], >= 0.
        link: The link.

    Raises:
        ValueError: negative bytes.
    """
    if num_bytes < 0:
        raise ValueError(f"bytes to move must be >= 0, got {num_bytes}")
    return num_bytes / (link.gb_s_per_direction * 1e9) * 1e3
