"""Accelerator catalog: validated GPU specs, loaded from ``gpus.json`` beside this module.

Each entry stores three different memory figures, because they differ and engines use
only the last one:

1. ``memory_gb_marketed``: the vendor's label ("80GB"). For HBM parts the label tracks
   binary capacity, so it is used only as an upper bound, read as GiB.
2. ``memory_reported_mib``: ``nvidia-smi``'s ``memory.total`` [MiB]. For AMD rows the
   reference table derived it from PyTorch's printed total, so there it equals (3).
   Empty where nvidia-smi prints none: NVIDIA GB10 (DGX Spark) reports ``[N/A]``.
3. ``framework_memory_bytes``: the total the framework sees [bytes], i.e. PyTorch's
   ``torch.cuda.mem_get_info()[1]``. vLLM multiplies this by
   ``gpu_memory_utilization``; on Apple it is Metal's ``recommendedMaxWorkingSetSize``.
   On NVIDIA GB10's unified memory CUDA reports the OS-visible RAM (119.69 GiB of
   128 GB), which the CPU side shares; no rule below covers it, so it is measured.

``framework_memory_basis`` says where (3) comes from:

* ``"measured"``: a figure printed in a public log (PyTorch "total capacity of X GiB",
  a vLLM memory breakdown, CUDA ``totalGlobalMem``, Metal's working set). Printed GiB
  have two decimals, so the true value is within +/-0.005 GiB; the catalog stores
  ``round(x * 2**30)`` of the printed ``x`` and never adds or removes that uncertainty.
* ``"estimated"``: computed by the first rule below that applies.

Estimation rules (implemented by :func:`estimate_framework_memory_bytes`):

1. Sibling rule. A part with the same vendor and the same ``memory_reported_mib`` as a
   measured part takes that measured figure (H100 PCIe and H800 from H100 SXM;
   A100 PCIe 80GB from A100 SXM 80GB). Same memory configuration, same driver carve-out.
2. NVIDIA rule: ``memory_reported_mib * MiB - 512 MiB``. The driver keeps part of
   nvidia-smi's total for itself. On the seven measured NVIDIA pairs the carve-out
   ranges from 256 MiB (T4) to 768 MiB (A100 80GB); 512 MiB is the middle of that range,
   so the rule's error on them is at most 256 MiB (0.25 GiB), plus the +/-0.005 GiB
   print resolution. Error on each pair, estimate minus measured, in MiB:
   T4 -256.0, RTX 3090 -81.9, H100 80GB -43.6, RTX 5090 -27.9, A100 40GB +112.6,
   B200 +216.6, A100 80GB +256.0. The carve-out depends on the driver version as well as
   the card (an A100 40GB prints 39.39 or 39.50 GiB depending on the host), so no rule
   on ``memory_reported_mib`` alone can do much better. Positive errors are optimistic.
   Out-of-sample check (public PyTorch OOM texts, code-index search, not used above):
   H200 prints 139.72-139.81 GiB (rule: 139.90) and L40S 44.34-44.42 GiB (rule: 44.49),
   both inside the bound.
3. AMD rule: ``memory_gb_marketed * GiB - 0.02 GiB``. PyTorch prints 191.98, 255.98 and
   287.98 GiB on MI300X (192 GB), MI325X (256 GB) and MI355X (288 GB): zero error at the
   printed precision. Used for one MI250X GCD (64 GB -> 63.98 GiB).
4. Apple rule: 3/4 of unified RAM (Apple's "GB" labels are GiB), Metal's default
   ``recommendedMaxWorkingSetSize`` on macOS 13-15 for machines above 36 GB. Exact on
   both measured pairs (M2 Ultra 192 GB -> 144 GiB; M3 Max 128 GB -> 96 GiB). At 36 GB
   and below it is 2/3 (M2 Max 32 GB: 21845 MiB, ollama#434; no such entry yet).
   macOS 26 allows more (M5 Max 128 GB: 107.52 GiB, antirez/ds4#893), and
   ``sudo sysctl iogpu.wired_limit_mb=<MiB>`` overrides it, so treat it as a default.

Sizes: integer bytes; GiB = 2**30, MiB = 2**20, GB = 10**9, never mixed. Bandwidth is
decimal GB/s (10**9 B/s) as vendors publish it. TFLOPS are dense (no 2:4 sparsity).

Sources:
    Reference table ``shared/reference/gpus.csv`` with its notes ``gpus.md`` (sections 1,
    2 and 5) and ``README.md``; every entry copies the URLs of its ``sources`` cell.
    Entries added after that table (Tesla P40, RTX 2080 Ti, RTX 5070 Ti / 5080, RTX 4060 Ti
    16GB, RTX A4000 / A5000, L20, DGX Spark) cite NVIDIA's product pages and public
    nvidia-smi / PyTorch logs in their own ``source``; uncertain figures say LOW-CONFIDENCE
    or DERIVED there, as the table's entries do.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from planner.text import quote
from planner.units import GiB, MiB

__all__ = [
    "AMD_RESERVED_BYTES",
    "APPLE_SMALL_WORKING_SET_FRACTION",
    "APPLE_WORKING_SET_FRACTION",
    "DEFAULT_GPUS_PATH",
    "GPU",
    "NVIDIA_DRIVER_RESERVED_BYTES",
    "NVIDIA_RULE_MAX_ERROR_BYTES",
    "estimate_framework_memory_bytes",
    "get_gpu",
    "gpu_ids",
    "load_gpus",
]

DEFAULT_GPUS_PATH = Path(__file__).with_name("gpus.json")

NVIDIA_DRIVER_RESERVED_BYTES = 512 * MiB
"""Rule 2: nvidia-smi total minus this is the PyTorch total [bytes]."""

NVIDIA_RULE_MAX_ERROR_BYTES = 256 * MiB
"""Largest error of rule 2 on the measured NVIDIA pairs [bytes], before print resolution."""

AMD_RESERVED_BYTES = round(0.02 * GiB)
"""Rule 3: label in GiB minus this is the PyTorch total on AMD Instinct [bytes]."""

APPLE_WORKING_SET_FRACTION = (3, 4)
"""Rule 4: Metal working set = RAM * 3 // 4 above 36 GB (numerator, denominator)."""

APPLE_SMALL_WORKING_SET_FRACTION = (2, 3)
"""Rule 4 at 36 GB of RAM and below: RAM * 2 // 3."""

_ID_PATTERN = r"^[a-z0-9]+(-[a-z0-9]+)*$"

# Common short names that are not a unique suffix of one id. Each maps to the part
# people usually mean by it; ``get_gpu`` also accepts any id without its vendor prefix.
_ALIASES: dict[str, str] = {
    "h100": "nvidia-h100-sxm-80gb",
    "h100-80gb": "nvidia-h100-sxm-80gb",
    "h100-sxm": "nvidia-h100-sxm-80gb",
    "h100-pcie": "nvidia-h100-pcie-80gb",
    "h100-nvl": "nvidia-h100-nvl-94gb",
    "h200": "nvidia-h200-sxm",
    "a100": "nvidia-a100-sxm-80gb",
    "a100-80gb": "nvidia-a100-sxm-80gb",
    "a100-40gb": "nvidia-a100-sxm-40gb",
    "a100-pcie": "nvidia-a100-pcie-80gb",
    "h800": "nvidia-h800-sxm-80gb",
    "h20": "nvidia-h20-96gb",
    "h20-3e": "nvidia-h20-141gb",
    "gh200": "nvidia-gh200-96gb",
    "v100": "nvidia-v100-sxm-32gb",
    "rtx-3060": "nvidia-rtx-3060-12gb",
    "rtx-6000-ada-generation": "nvidia-rtx-6000-ada",
    "tesla-p40": "nvidia-p40",
    "gb10": "nvidia-dgx-spark",
    "mi250x": "amd-mi250x-gcd",
}


PCIE_GT_S: dict[int, int] = {3: 8, 4: 16, 5: 32, 6: 64}
"""PCIe generation -> transfer rate per lane [GT/s] (PCI-SIG base specifications 3.0 to 6.0)."""

HOST_LINK_LABELS: dict[str, str] = {"nvlink-c2c": "NVLink-C2C", "unified": "unified memory", "unknown": "unknown"}
"""Display names of the non-PCIe host-link kinds (PCIe kinds read ``PCIe 5.0 x16``)."""


def pcie_gb_s(generation: int, lanes: int) -> float:
    """Per-direction peak of a PCIe link [GB/s]: GT/s per lane x lanes x coding / 8 bits.

    Gen 3 to 5 code 128b/130b (Gen 5 x16: 32 x 16 x 128/130 / 8 = 63.0 GB/s); Gen 6 uses FLIT mode
    with 242/256 useful bytes (64 x 16 x 242/256 / 8 = 121.0 GB/s). Sources: PCI-SIG PCI Express base
    specifications 3.0 (128b/130b) and 6.0 (FLIT).

    Raises:
        ValueError: a generation outside 3 to 6.
    """
    if generation not in PCIE_GT_S:
        raise ValueError(f"PCIe generation {generation} is not modelled; use 3, 4, 5 or 6")
    coding = 242 / 256 if generation >= 6 else 128 / 130
    return PCIE_GT_S[generation] * lanes * coding / 8


class HostLink(BaseModel):
    """A GPU's link to its host CPU (what KV offload copies over), with its source.

    Attributes:
        kind: ``pcieN xL`` (generation N in 3 to 6, L lanes), ``nvlink-c2c``, ``unified`` (CPU and GPU
            share one memory: nothing is copied) or ``unknown`` (no source found: say so).
        gb_s_per_direction: Peak rate in one direction [GB/s, 10**9 B/s]; for PCIe it must match
            :func:`pcie_gb_s` within 0.1 GB/s (the datasheets round); 0 for ``unified``; None for ``unknown``.
        source: The datasheet or specification page that states the interface.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: str = Field(pattern=r"^(pcie[3-6] x(1|2|4|8|16)|nvlink-c2c|unified|unknown)$")
    gb_s_per_direction: float | None = Field(default=None, ge=0)
    source: str = Field(min_length=1)

    @model_validator(mode="after")
    def _rate_matches_kind(self) -> HostLink:
        rate = self.gb_s_per_direction
        if self.kind == "unknown":
            if rate is not None:
                raise ValueError("host_link.gb_s_per_direction: must be null when kind is unknown")
        elif rate is None:
            raise ValueError(f"host_link.gb_s_per_direction: required for kind {self.kind} (or say kind unknown)")
        elif self.kind == "unified" and rate != 0:
            raise ValueError("host_link.gb_s_per_direction: must be 0 for unified memory (nothing is copied)")
        elif self.kind.startswith("pcie"):
            expected = pcie_gb_s(int(self.kind[4]), int(self.kind.split("x")[1]))
            if abs(rate - expected) > 0.1:
                raise ValueError(f"host_link.gb_s_per_direction: {rate} GB/s does not match {self.kind} "
                                 f"({expected:.2f} GB/s per direction)")
        return self

    @property
    def label(self) -> str:
        """Display name: ``PCIe 5.0 x16``, ``NVLink-C2C``, ``unified memory``, ``unknown``."""
        if self.kind.startswith("pcie"):
            return f"PCIe {self.kind[4]}.0 {self.kind.split(' ')[1]}"
        return HOST_LINK_LABELS[self.kind]


class GPU(BaseModel):
    """One accelerator as a serving engine sees it (one device, one memory pool).

    Attributes:
        id: Stable lowercase slug, e.g. ``nvidia-h100-sxm-80gb``; a public URL/CLI key.
        vendor: Maker, e.g. ``NVIDIA``.
        name: Display name without the vendor, e.g. ``H100 SXM5 80GB``.
        segment: ``datacenter``, ``workstation`` or ``consumer``.
        memory_gb_marketed: The capacity label [GB as printed by the vendor]. HBM labels
            track GiB, so checks read it as GiB, an upper bound on the device memory.
        memory_reported_mib: nvidia-smi ``memory.total`` [MiB]; ``None`` when no dump
            was found (Apple, MI250X) or nvidia-smi reports none (GB10). For AMD, PyTorch's
            total converted to MiB.
        framework_memory_bytes: Total memory the framework sees [bytes]:
            ``torch.cuda.mem_get_info()[1]`` (Metal's ``recommendedMaxWorkingSetSize`` on
            Apple). Engines multiply this by their memory fraction.
        framework_memory_basis: ``measured`` (a printed figure) or ``estimated`` (a rule
            from the module docstring).
        framework_memory_source: Where the framework figure comes from, or the rule used.
        unified_memory: True when the memory is system RAM shared with the CPU (Apple,
            NVIDIA GB10), so ``framework_memory_bytes`` is the share the GPU may wire (on
            GB10 the whole OS-visible RAM, of which the OS and CPU processes use part).
        bandwidth_gb_s: Peak memory bandwidth [GB/s, 10**9 B/s].
        bf16_dense_tflops: Dense BF16 tensor throughput [TFLOPS, 10**12 FLOP/s]; FP16 on
            T4/V100; the FP32-accumulate rate on GeForce; ``None`` when unsourced.
        fp8_native: True when the part has FP8 tensor math in hardware (it can still
            store FP8 weights or KV cache without it).
        price_usd_per_hour: Cheapest sourced on-demand price for one device [USD/h].
        price_source: Provider and date of ``price_usd_per_hour``.
        notes: Caveats (ECC, nameplate mismatches, per-GCD values).
        source: Spec sources, with URLs, from the reference table.
        host_link: The host interface KV offload copies over (:class:`HostLink`; ``unknown`` when
            no source states it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=_ID_PATTERN, max_length=40)
    vendor: Literal["NVIDIA", "AMD", "Apple", "Intel", "Google", "AWS"]
    name: str = Field(min_length=1)
    segment: Literal["datacenter", "workstation", "consumer"]
    memory_gb_marketed: int = Field(gt=0, strict=True)
    memory_reported_mib: int | None = Field(default=None, gt=0, strict=True)
    framework_memory_bytes: int = Field(gt=0, strict=True)
    framework_memory_basis: Literal["measured", "estimated"]
    framework_memory_source: str = Field(min_length=1)
    unified_memory: bool
    bandwidth_gb_s: float = Field(gt=0)
    bf16_dense_tflops: float | None = Field(default=None, gt=0)
    fp8_native: bool
    price_usd_per_hour: float | None = Field(default=None, gt=0)
    price_source: str | None = None
    notes: str = ""
    source: str = Field(min_length=1)
    host_link: HostLink

    @model_validator(mode="after")
    def _memory_figures_are_ordered(self) -> GPU:
        label_bytes = self.memory_gb_marketed * GiB
        if self.memory_reported_mib is not None:
            reported_bytes = self.memory_reported_mib * MiB
            if reported_bytes > label_bytes:
                raise ValueError(
                    f"memory_reported_mib: {self.memory_reported_mib} MiB exceeds the "
                    f"{self.memory_gb_marketed} GB label read as GiB"
                )
            bound, what = reported_bytes, "memory_reported_mib"
        else:
            bound, what = label_bytes, "memory_gb_marketed (as GiB)"
        if self.framework_memory_bytes > bound:
            raise ValueError(
                f"framework_memory_bytes: {self.framework_memory_bytes} B exceeds "
                f"{what} = {bound} B"
            )
        return self

    @model_validator(mode="after")
    def _price_has_a_source(self) -> GPU:
        if self.price_usd_per_hour is not None and not self.price_source:
            raise ValueError("price_source: required when price_usd_per_hour is set")
        return self


def estimate_framework_memory_bytes(
    vendor: str,
    memory_gb_marketed: int,
    memory_reported_mib: int | None,
    measured_sibling_bytes: int | None = None,
) -> int:
    """Framework-visible memory by the rules of the module docstring [bytes].

    Args:
        vendor: ``NVIDIA``, ``AMD`` or ``Apple``.
        memory_gb_marketed: Capacity label [GB, read as GiB for AMD and Apple].
        memory_reported_mib: nvidia-smi total [MiB]; required for NVIDIA.
        measured_sibling_bytes: Measured figure of a part with the same vendor and
            ``memory_reported_mib`` [bytes]; wins when given (rule 1).

    Returns:
        The estimate [bytes].

    Raises:
        ValueError: When no rule applies.

    Example:
        ``estimate_framework_memory_bytes("NVIDIA", 24, 24576)`` is 24064 MiB
        (23.50 GiB); PyTorch printed 23.58 GiB on an RTX 3090.

    Sources:
        Measured pairs in ``shared/reference/gpus.md`` section 1 and ``README.md``.
    """
    if measured_sibling_bytes is not None:
        return measured_sibling_bytes
    if vendor == "NVIDIA" and memory_reported_mib is not None:
        return memory_reported_mib * MiB - NVIDIA_DRIVER_RESERVED_BYTES
    if vendor == "AMD":
        return memory_gb_marketed * GiB - AMD_RESERVED_BYTES
    if vendor == "Apple":
        numerator, denominator = (
            APPLE_WORKING_SET_FRACTION
            if memory_gb_marketed > 36
            else APPLE_SMALL_WORKING_SET_FRACTION
        )
        return memory_gb_marketed * GiB * numerator // denominator
    raise ValueError(
        f"no estimation rule for vendor {vendor!r} with memory_reported_mib="
        f"{memory_reported_mib!r}; give a measured framework_memory_bytes instead"
    )


def _describe_errors(path: Path, where: str, error: ValidationError) -> str:
    lines = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"])
        message = item["msg"]
        if not field and message.startswith("Value error, "):
            # A cross-field check of GPU: its message starts with "<field>: ".
            field, _, message = message.removeprefix("Value error, ").partition(": ")
        field = field or "(entry)"
        lines.append(f"{path}: {where}: field '{field}': {message}")
    return "\n".join(lines)


def _read_entries(path: Path) -> list:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from exc
    if not isinstance(raw, dict) or set(raw) - {"comment", "gpus"}:
        raise ValueError(f"{path}: expected an object with keys 'comment' and 'gpus'")
    entries = raw.get("gpus")
    if not isinstance(entries, list):
        raise ValueError(f"{path}: field 'gpus' must be a list of entries")
    return entries


def _parse(path: Path) -> tuple[GPU, ...]:
    gpus: list[GPU] = []
    seen: set[str] = set()
    for index, entry in enumerate(_read_entries(path)):
        entry_id = entry.get("id") if isinstance(entry, dict) else None
        where = f"gpus[{index}] (id={entry_id!r})"
        try:
            gpu = GPU.model_validate(entry)
        except ValidationError as exc:
            raise ValueError(_describe_errors(path, where, exc)) from None
        if gpu.id in seen:
            raise ValueError(f"{path}: {where}: field 'id': duplicate id {gpu.id!r}")
        seen.add(gpu.id)
        gpus.append(gpu)
    return tuple(gpus)


@functools.lru_cache(maxsize=1)
def _load_default() -> tuple[GPU, ...]:
    return _parse(DEFAULT_GPUS_PATH)


def load_gpus(path: str | Path | None = None) -> dict[str, GPU]:
    """Loads and validates the catalog.

    Args:
        path: A catalog JSON file; ``None`` reads ``gpus.json`` beside this module
            (parsed once per process, then cached).

    Returns:
        A new dict from id to :class:`GPU`, in file order.

    Raises:
        ValueError: On unreadable JSON, a malformed entry or a duplicate id. The message
            names the file, the entry index and id, and the field.
    """
    gpus = _load_default() if path is None else _parse(Path(path))
    return {gpu.id: gpu for gpu in gpus}


def gpu_ids() -> tuple[str, ...]:
    """Ids of the default catalog, in file order."""
    return tuple(gpu.id for gpu in _load_default())


def _normalize(gpu_id: str) -> str:
    return re.sub(r"[\s_]+", "-", gpu_id.strip().lower())


MAX_GPU_ID_CHARS = 200
"""Longest GPU id looked up [characters]: catalog ids are under 40; the same bound as a link's id values
(ui/link_guard.py ``MAX_ID_CHARS``), checked before the close-match search."""


def get_gpu(gpu_id: str, gpus: Mapping[str, GPU] | None = None) -> GPU:
    """Looks up one accelerator by id, case-insensitively, accepting a few aliases.

    Besides exact ids, accepts spaces or underscores for hyphens, an id without its
    vendor prefix when unique (``rtx-3090``, ``mi300x``), a ``geforce-`` infix, and the
    short names in ``_ALIASES`` with or without the vendor (``h100``, ``nvidia-a100``).

    Args:
        gpu_id: The id to find.
        gpus: Catalog to search; the default catalog when ``None``.

    Returns:
        The matching :class:`GPU`.

    Raises:
        ValueError: For an unknown id, with close matches as suggestions.
    """
    catalog = load_gpus() if gpus is None else gpus
    if len(str(gpu_id)) > MAX_GPU_ID_CHARS:  # before any matching: difflib is quadratic in the query's length
        raise ValueError(f"GPU id {quote(gpu_id)} is longer than {MAX_GPU_ID_CHARS} characters; "
                         "see `python -m planner gpus` for the ids")
    key = _normalize(gpu_id)
    if key in catalog:
        return catalog[key]
    bare = re.sub(r"^(nvidia|amd|apple)-", "", key).replace("geforce-", "")
    for candidate in (key, bare):
        alias = _ALIASES.get(candidate)
        if alias in catalog:
            return catalog[alias]
    suffix_hits = [known for known in catalog if known.split("-", 1)[-1] == bare]
    if len(suffix_hits) == 1:
        return catalog[suffix_hits[0]]

    names = {known: known for known in catalog}
    names.update({known.split("-", 1)[-1]: known for known in catalog})
    names.update({a: target for a, target in _ALIASES.items() if target in catalog})
    close = difflib.get_close_matches(key, list(names), n=8, cutoff=0.6)
    suggestions = list(dict.fromkeys(names[name] for name in close))[:3]
    if suggestions:
        hint = "did you mean " + ", ".join(repr(s) for s in suggestions) + "?"
    else:
        hint = f"none of the {len(catalog)} known ids is close"
    raise ValueError(f"unknown GPU id {quote(gpu_id)}; {hint} (see `python -m planner gpus`)")
