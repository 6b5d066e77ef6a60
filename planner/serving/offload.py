"""KV offload to host memory: what stays on the GPU, what moves to the host, and what moving it costs.

What each engine does with a host tier (none of them shrinks the GPU's KV pool):

    vLLM V1 native  ``--kv-offloading-size GiB`` (``--kv-offloading-backend native``, the default): the
                    ``OffloadingConnector`` copies finished KV blocks to a pinned CPU pool and loads them
                    back on a prefix hit. The size is server-wide, split over the worker ranks:
                    host per GPU = size x GiB / (tp x pp); CPU blocks = host per GPU // bytes per
                    offloaded block (``CPUOffloadingSpec``, vllm/v1/kv_offload/cpu/spec.py).
    vLLM V1 LMCache ``--kv-offloading-backend lmcache``: LMCache owns the store (its
                    ``max_local_cpu_size``); the size given is priced as that store, per GPU the same way.
    vLLM V0         ``--swap-space GiB`` per GPU (default 4): CPU blocks for preempted sequences
                    (vllm/config/cache.py ``swap_space``; the V1 engine ignores it).
    SGLang          hierarchical cache (``--enable-hierarchical-cache --hicache-size GB``, per rank;
                    python/sglang/srt/mem_cache/hiradix_cache.py): a host pool behind the radix cache.
    llama.cpp       no host tier behind a GPU KV cache (``--no-kv-offload`` keeps the whole cache in host
                    memory instead), so nothing is priced.

Per GPU, with ``B`` the KV bytes one token costs on that GPU (all its layers, its heads):

    host tokens          = (host bytes // (block_size x B)) x block_size
    seconds per token    = B / (link GB/s x 10^9)                  (one direction; an estimate)
    seconds per sequence = KV of one sequence of the plan / (link GB/s x 10^9)

The link rate is the per-direction peak of the GPU's host interface, which the GPU catalog states
per GPU with its source (``model_catalog/gpus.json`` ``host_link``; the CLI and the pages pass it in
:class:`OffloadConfig`, ``--host-link-gb-s`` overrides it, a GPU marked ``unknown`` gets no time): PCIe x16 carries 8 / 16 / 32 GT/s per lane for Gen 3 /
4 / 5 with 128b/130b coding, so 15.75 / 31.5 / 63.0 GB/s per direction (PCI-SIG base
specifications); NVLink-C2C carries 900 GB/s both ways, 450 GB/s per direction (NVIDIA GH200 and
GB200 datasheets). Real copies reach 70-90 % of that, hence "estimate". Worked example: Llama-3.1-8B
in bf16 on one H100 (131,072 B per token): 131,072 / 63e9 s = 2.08 us per token; a 8,192-token
sequence (1 GiB) reloads in 17.0 ms.

Sources: vllm/config/cache.py (``kv_offloading_size``, ``kv_offloading_backend``, ``swap_space``),
vllm/config/vllm.py (``_post_init_kv_transfer_config``: the size is split over the ranks),
vllm/v1/kv_offload/ (``CPUOffloadingSpec``), vllm/distributed/kv_transfer/kv_connector/v1/
offloading_connector.py; SGLang server arguments (python/sglang/srt/server_args.py); each GPU's
link source in model_catalog/gpus.json.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.text import count_noun
from planner.units import GB, GiB

PCIE3_X16_GB_S = 15.75
"""PCIe 3.0 x16 per direction [GB/s]: 8 GT/s x 16 lanes x 128/130 / 8."""

PCIE4_X16_GB_S = 31.5
"""PCIe 4.0 x16 per direction [GB/s]: 16 GT/s x 16 x 128/130 / 8."""

PCIE5_X16_GB_S = 63.0
"""PCIe 5.0 x16 per direction [GB/s]: 32 GT/s x 16 x 128/130 / 8."""

NVLINK_C2C_GB_S = 450.0
"""NVLink-C2C per direction [GB/s]: 900 GB/s bidirectional (NVIDIA GH200 / GB200 datasheets)."""

OFFLOAD_BACKENDS = ("native", "lmcache")
"""vLLM ``--kv-offloading-backend`` values."""


@dataclass(frozen=True)
class HostLink:
    """A GPU family's host interface.

    Attributes:
        name: What it is (``PCIe 5.0 x16``).
        gb_s: Per-direction peak [GB/s]; 0 for unified memory (no copy: nothing to offload to).
        source: Where the rate and the GPU's interface come from.
    """

    name: str
    gb_s: float
    source: str


UNKNOWN_LINK = HostLink("unknown", 0.0, "the GPU catalog states no host link for this GPU; give --host-link-gb-s")
"""The link of a GPU whose catalog entry says ``unknown`` (or of a custom GPU): no time is priced."""


def host_link(gb_s: float | None, name: str = "", source: str = "") -> HostLink:
    """A host link from its per-direction rate, as the edge read it from the GPU catalog
    (``model_catalog/gpus.json`` ``host_link``) or from ``--host-link-gb-s``.

    Args:
        gb_s: Per-direction peak [GB/s]; 0 for unified memory (nothing is copied); None when unknown.
        name: What the link is (``pcie5 x16``, ``nvlink-c2c``); "" = ``given``.
        source: Where the rate comes from; "" = ``--host-link-gb-s``.

    Returns:
        A :class:`HostLink`; :data:`UNKNOWN_LINK` when ``gb_s`` is None.

    Raises:
        ValueError: a negative rate.

    Examples: ``host_link(63.0, "pcie5 x16", "NVIDIA H100 datasheet")`` (PCIe Gen5 x16, :data:`PCIE5_X16_GB_S`);
    ``host_link(450.0, "nvlink-c2c", ...)`` (GH200); ``host_link(None)`` -> unknown, no time priced.
    """
    if gb_s is None:
        return UNKNOWN_LINK
    if gb_s < 0:
        raise ValueError(f"host link rate must be >= 0 GB/s, got {gb_s}")
    return HostLink(name or "given", float(gb_s), source or "--host-link-gb-s")


def link_of_gpu(gpu) -> tuple[float | None, str, str]:
    """``(GB/s per direction, name, source)`` of a catalog GPU's ``host_link`` (model_catalog/gpus.json, read
    by attribute: ``gb_s_per_direction``, ``label``, ``source``), for :class:`OffloadConfig`; ``(None, "", "")``
    for a GPU without one (a custom GPU, None) or one the catalog marks ``unknown``."""
    link = getattr(gpu, "host_link", None)
    if link is None or link.gb_s_per_direction is None:
        return None, "", ""
    return link.gb_s_per_direction, link.label, link.source


@dataclass(frozen=True, kw_only=True)
class OffloadConfig:
    """KV offload as asked (vLLM flag names).

    Attributes:
        kv_offloading_size: Host buffer in GiB, server-wide (vLLM ``--kv-offloading-size``); SGLang:
            ``--hicache-size`` per rank. None = off.
        kv_offloading_backend: ``native`` or ``lmcache``.
        swap_space: vLLM V0 ``--swap-space`` GiB per GPU; None = off.
        host_link_gb_s: Host-link rate [GB/s per direction] (``--host-link-gb-s``, or the catalog GPU's
            ``host_link`` filled in by the CLI / page); None = unknown (no time priced).
        host_link_name, host_link_source: What that link is and where its rate comes from (the catalog's
            ``kind`` and ``source``); "" = given by the user.
    """

    kv_offloading_size: float | None = None
    kv_offloading_backend: str = "native"
    swap_space: float | None = None
    host_link_gb_s: float | None = None
    host_link_name: str = ""
    host_link_source: str = ""

    def validate(self) -> None:
        """Raise ValueError naming the bad setting."""
        if self.kv_offloading_size is None and self.swap_space is None:
            raise ValueError("KV offload needs --kv-offloading-size GiB (vLLM V1, SGLang) or --swap-space GiB "
                             "(vLLM V0)")
        for name, value in (("kv_offloading_size", self.kv_offloading_size), ("swap_space", self.swap_space)):
            if value is not None and not 0 <= value <= 1 << 20:
                raise ValueError(f"{name} must be between 0 and 1,048,576 GiB, got {value}")
        if self.kv_offloading_backend not in OFFLOAD_BACKENDS:
            raise ValueError(f"unknown kv_offloading_backend {self.kv_offloading_backend!r}; choose "
                             f"{' or '.join(OFFLOAD_BACKENDS)}")
        if self.host_link_gb_s is not None and not (self.host_link_gb_s > 0 or (
                self.host_link_gb_s == 0 and self.host_link_name)):
            raise ValueError(f"host_link_gb_s must be > 0 GB/s, got {self.host_link_gb_s}")


@dataclass(frozen=True, kw_only=True)
class OffloadPlan:
    """The host tier on one GPU (bytes unless named); every time is an estimate.

    Attributes:
        engine: The engine profile id priced.
        supported: False when the engine has no such tier (then the sizes are 0 and ``notes`` say so).
        mechanism: ``kv_offloading`` (vLLM V1 native / LMCache, SGLang HiCache) or ``swap_space`` (vLLM V0).
        host_bytes_per_gpu: Host memory one GPU's worker sets aside.
        host_bytes_per_replica: The same over the replica's GPUs.
        link: The host link priced.
        notes: What stays where, what is assumed.
    """

    engine: str
    supported: bool
    mechanism: str
    host_bytes_per_gpu: int
    host_bytes_per_replica: int
    link: HostLink
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self, *, kv_bytes_per_token_per_gpu: int, block_size: int, kv_bytes_per_sequence_per_gpu: int,
                gpu_kv_capacity_tokens: int) -> dict:
        """JSON keys of the ``serving.offload`` block, at the plan's per-token and per-sequence KV."""
        per_block = block_size * kv_bytes_per_token_per_gpu
        host_tokens = (self.host_bytes_per_gpu // per_block) * block_size if per_block and self.supported else 0
        rate = self.link.gb_s * GB
        return {
            "engine": self.engine, "supported": self.supported, "mechanism": self.mechanism,
            "gpu_kv_capacity_tokens": gpu_kv_capacity_tokens, "host_kv_capacity_tokens": host_tokens,
            "host_bytes_per_gpu": self.host_bytes_per_gpu, "host_bytes_per_replica": self.host_bytes_per_replica,
            "host_link": self.link.name, "host_link_gb_s": self.link.gb_s, "host_link_source": self.link.source,
            "seconds_per_token_moved": kv_bytes_per_token_per_gpu / rate if rate and self.supported else None,
            "seconds_per_sequence_moved": kv_bytes_per_sequence_per_gpu / rate if rate and self.supported else None,
            "estimate": True, "notes": list(self.notes),
        }


def offload_plan(config: OffloadConfig, *, engine: str, gpu_id: str, tensor_parallel_size: int = 1,
                 pipeline_parallel_size: int = 1) -> OffloadPlan:
    """The host tier ``config`` asks for on one GPU under ``engine`` (module docstring).

    Args:
        config: Sizes, backend, link override.
        engine: Engine profile id (``vllm``, ``vllm-v0``, ``sglang``, ``llama.cpp``, ...).
        gpu_id: Catalog GPU id (named in the notes; the link rate comes in ``config``).
        tensor_parallel_size, pipeline_parallel_size: The replica's ranks (vLLM splits the size over them).

    Raises:
        ValueError: an invalid config.
    """
    config.validate()
    link = host_link(config.host_link_gb_s, config.host_link_name, config.host_link_source)
    ranks = tensor_parallel_size * pipeline_parallel_size
    family = "vllm" if engine == "vllm" or engine.startswith("vllm-") else engine
    notes: list[str] = ["the GPU keeps its whole KV pool: offloading adds a host tier behind it, for prefix hits "
                        "and preempted sequences (users per card on the GPU are unchanged)"]
    if link is UNKNOWN_LINK:
        notes.append(f"host link of {gpu_id or 'this GPU'} unknown: no copy time priced (give --host-link-gb-s)")
    elif link.gb_s == 0:
        notes.append(f"{link.name}: the host tier is the same memory, so nothing is copied")

    def unsupported(why: str) -> OffloadPlan:
        return OffloadPlan(engine=engine, supported=False, mechanism="none", host_bytes_per_gpu=0,
                           host_bytes_per_replica=0, link=link, notes=(why,))

    if family == "vllm" and engine == "vllm-v0":
        if config.swap_space is None:
            return unsupported("vLLM V0 has no --kv-offloading-size; its host tier is --swap-space GiB per GPU")
        per_gpu = int(config.swap_space * GiB)
        return OffloadPlan(engine=engine, supported=True, mechanism="swap_space", host_bytes_per_gpu=per_gpu,
                           host_bytes_per_replica=per_gpu * ranks, link=link,
                           notes=(*notes, "vLLM V0 swaps preempted sequences' blocks out and back in "
                                          "(--swap-space, per GPU)"))
    if family in ("vllm", "sglang"):
        if config.kv_offloading_size is None:
            return unsupported(f"{engine} ignores --swap-space (vLLM V0 only); give --kv-offloading-size")
        if family == "vllm":
            total = int(config.kv_offloading_size * GiB)
            per_gpu = total // ranks
            if config.kv_offloading_backend == "lmcache":
                notes.append("LMCache owns the store (its max_local_cpu_size); priced at the size given")
            else:
                notes.append(f"--kv-offloading-size is server-wide: {count_noun(ranks, 'rank')} share it")
        else:
            per_gpu = int(config.kv_offloading_size * GB)  # --hicache-size is in GB, per rank
            total = per_gpu * ranks
            notes.append("SGLang hierarchical cache: --hicache-size GB per rank behind the radix cache")
        if config.swap_space is not None:
            notes.append(f"{engine} ignores --swap-space (vLLM V0 only)")
        return OffloadPlan(engine=engine, supported=True, mechanism="kv_offloading", host_bytes_per_gpu=per_gpu,
                           host_bytes_per_replica=total, link=link, notes=tuple(notes))
    if family == "llama.cpp":
        return unsupported("llama.cpp has no host tier behind a GPU KV cache (--no-kv-offload keeps the whole "
                           "cache in host memory instead)")
    return unsupported(f"KV offload is modelled for vLLM and SGLang, not {engine}")


def launch_flags(config: OffloadConfig, engine: str) -> str:
    """The engine's flags for this host tier (vLLM's names; SGLang's HiCache).

    Sources: vLLM engine arguments (vllm/engine/arg_utils.py: ``--kv-offloading-size``,
    ``--kv-offloading-backend``, V0 ``--swap-space``); SGLang ``--enable-hierarchical-cache
    --hicache-size`` (python/sglang/srt/server_args.py).
    """
    if engine == "vllm-v0":
        return "" if config.swap_space is None else f"--swap-space {config.swap_space:g}"
    if engine == "vllm" or engine.startswith("vllm-"):
        if config.kv_offloading_size is None:
            return ""
        flags = f"--kv-offloading-size {config.kv_offloading_size:g}"
        if config.kv_offloading_backend != "native":
            flags += f" --kv-offloading-backend {config.kv_offloading_backend}"
        return flags
    if engine == "sglang" and config.kv_offloading_size is not None:
        return f"--enable-hierarchical-cache --hicache-size {config.kv_offloading_size:g}"
    return ""
