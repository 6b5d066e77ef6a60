"""Tests for the accelerator catalog (model_catalog/gpus.py + gpus.json).

Reference values are copied from ``shared/reference`` (gpus.csv, gpus.md section 1 and 5,
README.md), never from the catalog under test. Where that folder is present, the
catalog is also checked cell by cell against gpus.csv.

Loading errors, lookup and host links: ``tests/test_catalog_gpus_loading.py``.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from model_catalog.gpus import (
    AMD_RESERVED_BYTES,
    GPU,
    NVIDIA_RULE_MAX_ERROR_BYTES,
    estimate_framework_memory_bytes,
    get_gpu,
    gpu_ids,
    load_gpus,
)
from planner.units import GiB, MiB

PRINT_RESOLUTION_BYTES = round(0.005 * GiB)  # two-decimal GiB prints are +/-0.005 GiB

# PyTorch totals printed in public logs [GiB], as listed in shared/reference:
# gpus.md section 1 (B200 pytorch/ao#4002, T4 Open-Sora#697, RTX 5090 Wan2.1#465, MI300X,
# MI325X, MI355X) and README.md / DOMAIN.md section 1 (H100, A100 80GB, A100 40GB, RTX 3090).
MEASURED_TORCH_GIB = {
    "nvidia-h100-sxm-80gb": 79.19,
    "nvidia-a100-sxm-80gb": 79.25,
    "nvidia-a100-sxm-40gb": 39.39,  # README.md: 39.39-39.50; the catalog keeps the lower
    "nvidia-rtx-3090": 23.58,
    "nvidia-b200": 178.35,
    "nvidia-t4": 14.75,
    "nvidia-rtx-5090": 31.37,
    # PyTorch OOM messages "GPU 0 has a total capacity of 15.47 GiB" on an RTX 5080 (public GitHub repos, code-index
    # search; the catalog entry's source says which), added after the reference table
    "nvidia-rtx-5080": 15.47,
    "amd-mi300x": 191.98,
    "amd-mi325x": 255.98,
    "amd-mi355x": 287.98,
    # DGX Spark (GB10, unified memory): vLLM 119.69 / PyTorch 119.70 GiB; the entry keeps the lower.
    "nvidia-dgx-spark": 119.69,
}

# nvidia-smi memory.total [MiB] for the measured NVIDIA parts, from gpus.csv.
NVIDIA_SMI_MIB = {
    "nvidia-h100-sxm-80gb": 81559,
    "nvidia-a100-sxm-80gb": 81920,
    "nvidia-a100-sxm-40gb": 40960,
    "nvidia-rtx-3090": 24576,
    "nvidia-b200": 183359,
    "nvidia-t4": 15360,
    "nvidia-rtx-5090": 32607,
    "nvidia-rtx-5080": 16303,
}

# Metal recommendedMaxWorkingSetSize [GiB] and RAM label [GB], gpus.md section 5.
APPLE_WORKING_SET_GIB = {
    "apple-m2-ultra-192gb": (144, 192),
    "apple-m3-max-128gb": (96, 128),
}

REFERENCE_CSV = Path(__file__).resolve().parent / "data" / "reference" / "gpus.csv"
"""In-repo copy of the reference GPU table, each row with its sources (tests/data/README.md)."""

# Catalog id -> gpus.csv ``name`` cell.
CSV_NAME = {
    "nvidia-b200": "B200 (HGX/DGX B200, SXM)",
    "nvidia-gb200": "GB200 (per B200 GPU in GB200 NVL72/NVL4)",
    "nvidia-b300": "B300 (HGX B300 / Blackwell Ultra, SXM)",
    "nvidia-gb300": "GB300 (per B300 GPU in GB300 NVL72)",
    "nvidia-h200-sxm": "H200 SXM 141GB",
    "nvidia-h200-nvl": "H200 NVL (PCIe, dual-slot)",
    "nvidia-h100-sxm-80gb": "H100 SXM5 80GB",
    "nvidia-h100-pcie-80gb": "H100 PCIe 80GB",
    "nvidia-h100-nvl-94gb": "H100 NVL 94GB (per GPU)",
    "nvidia-h800-sxm-80gb": "H800 SXM 80GB (China export variant of H100)",
    "nvidia-h20-96gb": "H20 96GB (China export variant)",
    "nvidia-h20-141gb": "H20 141GB (H20E / H20-3e, HBM3e)",
    "nvidia-gh200-96gb": "GH200 96GB HBM3 (Grace Hopper; GPU side)",
    "nvidia-gh200-144gb": "GH200 144GB HBM3e (Grace Hopper; GPU side)",
    "nvidia-a100-sxm-80gb": "A100 SXM4 80GB",
    "nvidia-a100-sxm-40gb": "A100 SXM4 40GB",
    "nvidia-a100-pcie-80gb": "A100 PCIe 80GB",
    "nvidia-l40s": "L40S",
    "nvidia-l40": "L40",
    "nvidia-l4": "L4",
    "nvidia-a10g": "A10G (AWS G5 only)",
    "nvidia-a10": "A10",
    "nvidia-a40": "A40",
    "nvidia-t4": "T4",
    "nvidia-v100-sxm-16gb": "V100 SXM2 16GB",
    "nvidia-v100-sxm-32gb": "V100 SXM2 32GB",
    "nvidia-rtx-pro-6000-server": "RTX PRO 6000 Blackwell Server Edition",
    "nvidia-rtx-pro-6000-workstation": "RTX PRO 6000 Blackwell Workstation Edition (600 W)",
    "nvidia-rtx-a6000": "RTX A6000",
    "nvidia-rtx-6000-ada": "RTX 6000 Ada Generation",
    "nvidia-rtx-5090": "GeForce RTX 5090",
    "nvidia-rtx-4090": "GeForce RTX 4090",
    "nvidia-rtx-4080": "GeForce RTX 4080 (16GB)",
    "nvidia-rtx-3090": "GeForce RTX 3090",
    "nvidia-rtx-3060-12gb": "GeForce RTX 3060 12GB",
    "amd-mi300x": "Instinct MI300X (OAM)",
    "amd-mi325x": "Instinct MI325X (OAM)",
    "amd-mi355x": "Instinct MI355X (OAM, liquid)",
    "amd-mi250x-gcd": "Instinct MI250X (OAM, 2 GCDs)",
    "apple-m2-ultra-192gb": "M2 Ultra (max config, unified memory)",
    "apple-m3-max-128gb": "M3 Max (16C CPU / 40C GPU, max config)",
    "apple-m4-max-128gb": "M4 Max (16C CPU / 40C GPU, max config)",
}

# Entries added after gpus.csv, with their own NVIDIA sources (issue "Fit for a design review", item 10):
# id -> (nvidia-smi memory.total [MiB] or None, bandwidth [GB/s], a vendor URL their ``source`` cites).
ADDED_AFTER_REFERENCE = {
    "nvidia-p40": (22919, 346.0, "https://www.nvidia.com/en-us/data-center/tesla-p40/"),
    "nvidia-rtx-2080-ti": (11264, 616.0, "https://www.nvidia.com/en-us/geforce/graphics-cards/rtx-2080-ti/"),
    "nvidia-rtx-5070-ti": (16303, 896.0,
                           "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5070-family/"),
    "nvidia-rtx-5080": (16303, 960.0, "https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/rtx-5080/"),
    "nvidia-rtx-4060-ti-16gb": (16380, 288.0,
                                "https://www.nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4060-4060ti/"),
    "nvidia-rtx-a4000": (16376, 448.0, "https://www.nvidia.com/en-us/design-visualization/rtx-a4000/"),
    "nvidia-rtx-a5000": (24564, 768.0, "https://www.nvidia.com/en-us/design-visualization/rtx-a5000/"),
    "nvidia-l20": (46068, 864.0, "https://technical.city/pl/video/L20"),
    "nvidia-dgx-spark": (None, 273.0, "https://www.nvidia.com/en-us/products/workstations/dgx-spark/"),
}
RTX_5080_SIBLINGS = ("nvidia-rtx-5070-ti",)
"""Same nvidia-smi total (16,303 MiB) as the measured RTX 5080: rule 1 gives them its figure."""

# Unified-memory parts that are not Apple: NVIDIA GB10 shares its LPDDR5x with the Grace CPU.
UNIFIED_NON_APPLE = {"nvidia-dgx-spark"}

# Cells where the catalog deliberately departs from gpus.csv (each explained in notes).
CSV_OVERRIDES = {
    ("nvidia-h20-141gb", "memory_reported_mib"),  # blank in csv; 143771 from public logs
    ("nvidia-rtx-pro-6000-workstation", "memory_reported_mib"),  # blank; 97887 (Max-Q WS)
    ("nvidia-gh200-144gb", "bandwidth_gb_s"),  # blank in csv
    ("amd-mi250x-gcd", "memory_gb_marketed"),  # per GCD: 128 / 2
    ("amd-mi250x-gcd", "bandwidth_gb_s"),
    ("amd-mi250x-gcd", "bf16_dense_tflops"),
}


@pytest.fixture(scope="module")
def gpus() -> dict[str, GPU]:
    return load_gpus()


def _reference_rows() -> dict[str, dict[str, str]]:
    with REFERENCE_CSV.open(encoding="utf-8", newline="") as handle:
        return {row["name"]: row for row in csv.DictReader(handle)}


# --- size, coverage, sources ------------------------------------------------------------


def test_catalog_has_at_least_30_entries(gpus):
    assert len(gpus) >= 30


def test_every_entry_has_a_source_with_a_reference(gpus):
    for gpu in gpus.values():
        assert gpu.source.strip(), gpu.id
        assert gpu.framework_memory_source.strip(), gpu.id


@pytest.mark.parametrize(
    ("group", "predicate"),
    [
        ("NVIDIA datacenter", lambda g: g.vendor == "NVIDIA" and g.segment == "datacenter"),
        ("NVIDIA consumer", lambda g: g.vendor == "NVIDIA" and g.segment == "consumer"),
        ("NVIDIA workstation", lambda g: g.vendor == "NVIDIA" and g.segment == "workstation"),
        ("AMD Instinct", lambda g: g.vendor == "AMD" and g.name.startswith("Instinct")),
        ("Apple unified memory", lambda g: g.vendor == "Apple" and g.unified_memory),
    ],
)
def test_each_vendor_group_is_present(gpus, group, predicate):
    assert any(predicate(gpu) for gpu in gpus.values()), group


@pytest.mark.parametrize(
    "gpu_id",
    [
        "nvidia-h100-sxm-80gb", "nvidia-h100-pcie-80gb", "nvidia-h100-nvl-94gb",
        "nvidia-h200-sxm", "nvidia-a100-sxm-40gb", "nvidia-a100-sxm-80gb", "nvidia-l40s",
        "nvidia-l4", "nvidia-a10g", "nvidia-t4", "nvidia-v100-sxm-16gb", "nvidia-b200",
        "nvidia-gb200", "nvidia-rtx-3090", "nvidia-rtx-4090", "nvidia-rtx-5090",
        "nvidia-rtx-a6000", "nvidia-rtx-6000-ada", "amd-mi300x", "amd-mi325x", "amd-mi355x",
        "amd-mi250x-gcd", "apple-m2-ultra-192gb",
    ],
)
def test_requested_accelerators_are_present(gpus, gpu_id):
    assert gpu_id in gpus


def test_ids_are_unique_slugs_in_file_order(gpus):
    ids = gpu_ids()
    assert ids == tuple(gpus)
    assert len(set(ids)) == len(ids)
    for gpu_id in ids:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", gpu_id), gpu_id
        assert gpu_id.split("-")[0] in {"nvidia", "amd", "apple"}, gpu_id


# --- measured figures -------------------------------------------------------------------


@pytest.mark.parametrize(("gpu_id", "printed_gib"), sorted(MEASURED_TORCH_GIB.items()))
def test_measured_framework_memory_equals_printed_value(gpus, gpu_id, printed_gib):
    gpu = gpus[gpu_id]
    assert gpu.framework_memory_basis == "measured"
    assert gpu.framework_memory_bytes == round(printed_gib * 2**30)


def test_rtx_3090_worked_value(gpus):
    # DOMAIN.md section 1: 23.58 GiB = 23.58 * 1,073,741,824 = 25,318,832,209.92 B -> rounded.
    assert gpus["nvidia-rtx-3090"].framework_memory_bytes == 25_318_832_210


def test_a100_40gb_lies_in_the_printed_range(gpus):
    # README.md: 39.39-39.50 GiB on an A100 40GB.
    framework = gpus["nvidia-a100-sxm-40gb"].framework_memory_bytes
    assert round(39.39 * GiB) <= framework <= round(39.50 * GiB)


@pytest.mark.parametrize(("gpu_id", "gib_and_label"), sorted(APPLE_WORKING_SET_GIB.items()))
def test_apple_measured_working_set(gpus, gpu_id, gib_and_label):
    working_set_gib, label_gb = gib_and_label
    gpu = gpus[gpu_id]
    assert gpu.unified_memory
    assert gpu.memory_gb_marketed == label_gb
    assert gpu.framework_memory_basis == "measured"
    assert gpu.framework_memory_bytes == working_set_gib * GiB


@pytest.mark.parametrize(("gpu_id", "reported_mib"), sorted(NVIDIA_SMI_MIB.items()))
def test_reported_mib_matches_reference(gpus, gpu_id, reported_mib):
    assert gpus[gpu_id].memory_reported_mib == reported_mib


# --- estimation rules -------------------------------------------------------------------


@pytest.mark.parametrize(("gpu_id", "reported_mib"), sorted(NVIDIA_SMI_MIB.items()))
def test_nvidia_rule_reproduces_measured_pairs_within_stated_error(gpu_id, reported_mib):
    measured = round(MEASURED_TORCH_GIB[gpu_id] * GiB)
    estimate = estimate_framework_memory_bytes("NVIDIA", 0, reported_mib)
    assert abs(estimate - measured) <= NVIDIA_RULE_MAX_ERROR_BYTES + PRINT_RESOLUTION_BYTES


def test_nvidia_rule_error_bound_is_tight():
    # The docstring states 256 MiB; the T4 and A100 80GB pairs sit on it.
    assert NVIDIA_RULE_MAX_ERROR_BYTES == 256 * MiB
    errors = [
        estimate_framework_memory_bytes("NVIDIA", 0, mib) - round(MEASURED_TORCH_GIB[i] * GiB)
        for i, mib in NVIDIA_SMI_MIB.items()
    ]
    assert max(abs(e) for e in errors) > NVIDIA_RULE_MAX_ERROR_BYTES - PRINT_RESOLUTION_BYTES


@pytest.mark.parametrize(
    ("label_gb", "printed_gib"), [(192, 191.98), (256, 255.98), (288, 287.98)]
)
def test_amd_rule_reproduces_measured_pairs(label_gb, printed_gib):
    estimate = estimate_framework_memory_bytes("AMD", label_gb, None)
    assert abs(estimate - round(printed_gib * GiB)) <= PRINT_RESOLUTION_BYTES
    assert AMD_RESERVED_BYTES == round(0.02 * GiB)


@pytest.mark.parametrize(("gpu_id", "gib_and_label"), sorted(APPLE_WORKING_SET_GIB.items()))
def test_apple_rule_reproduces_measured_pairs(gpu_id, gib_and_label):
    working_set_gib, label_gb = gib_and_label
    assert estimate_framework_memory_bytes("Apple", label_gb, None) == working_set_gib * GiB


def test_apple_rule_for_small_macs():
    # gpus.md section 5: M2 Max 32 GB -> 21845 MiB (ollama#434), i.e. 2/3 of 32 GiB.
    estimate = estimate_framework_memory_bytes("Apple", 32, None)
    assert estimate // MiB == 21845


def test_estimation_rules_raise_when_none_applies():
    with pytest.raises(ValueError, match="no estimation rule"):
        estimate_framework_memory_bytes("NVIDIA", 80, None)


def test_every_estimated_entry_follows_the_documented_rules(gpus):
    measured = {
        (g.vendor, g.memory_reported_mib): g.framework_memory_bytes
        for g in gpus.values()
        if g.framework_memory_basis == "measured" and g.memory_reported_mib is not None
    }
    for gpu in gpus.values():
        if gpu.framework_memory_basis != "estimated":
            continue
        expected = estimate_framework_memory_bytes(
            gpu.vendor,
            gpu.memory_gb_marketed,
            gpu.memory_reported_mib,
            measured.get((gpu.vendor, gpu.memory_reported_mib)),
        )
        assert gpu.framework_memory_bytes == expected, gpu.id
        assert gpu.framework_memory_source.startswith("Estimated, rule"), gpu.id


def test_sibling_rule_shares_measured_totals(gpus):
    h100 = gpus["nvidia-h100-sxm-80gb"].framework_memory_bytes
    assert gpus["nvidia-h100-pcie-80gb"].framework_memory_bytes == h100
    assert gpus["nvidia-h800-sxm-80gb"].framework_memory_bytes == h100
    a100 = gpus["nvidia-a100-sxm-80gb"].framework_memory_bytes
    assert gpus["nvidia-a100-pcie-80gb"].framework_memory_bytes == a100


# --- physical consistency ---------------------------------------------------------------


def test_framework_memory_never_exceeds_physical(gpus):
    for gpu in gpus.values():
        if gpu.memory_reported_mib is not None:
            assert gpu.framework_memory_bytes <= gpu.memory_reported_mib * MiB, gpu.id
            assert gpu.memory_reported_mib * MiB <= gpu.memory_gb_marketed * GiB, gpu.id
        assert gpu.framework_memory_bytes <= gpu.memory_gb_marketed * GiB, gpu.id


def test_unified_memory_only_on_apple_and_gb10(gpus):
    for gpu in gpus.values():
        assert gpu.unified_memory == (gpu.vendor == "Apple" or gpu.id in UNIFIED_NON_APPLE), gpu.id
        if gpu.unified_memory:
            assert gpu.framework_memory_bytes < gpu.memory_gb_marketed * GiB


def test_priced_entries_name_their_price_source(gpus):
    for gpu in gpus.values():
        if gpu.price_usd_per_hour is not None:
            assert gpu.price_source, gpu.id


# --- cross-check against the reference table --------------------------------------------


def test_every_catalog_entry_maps_to_a_reference_row(gpus):
    assert set(CSV_NAME) | set(ADDED_AFTER_REFERENCE) == set(gpus)
    assert not set(CSV_NAME) & set(ADDED_AFTER_REFERENCE)


# --- entries added after the reference table ----------------------------------------------


@pytest.mark.parametrize("gpu_id", sorted(ADDED_AFTER_REFERENCE))
def test_added_gpus_have_figures_and_sources(gpus, gpu_id):
    reported_mib, bandwidth, url = ADDED_AFTER_REFERENCE[gpu_id]
    gpu = gpus[gpu_id]
    assert gpu.vendor == "NVIDIA"
    assert gpu.memory_reported_mib == reported_mib
    assert gpu.bandwidth_gb_s == bandwidth
    assert url in gpu.source
    assert gpu.price_usd_per_hour is None and gpu.price_source is None  # blank until a price is sourced
    if gpu_id in MEASURED_TORCH_GIB:  # a printed total (checked against the print above)
        assert gpu.framework_memory_basis == "measured"
    elif gpu_id in RTX_5080_SIBLINGS:  # rule 1: the measured RTX 5080's figure, same nvidia-smi total
        assert gpu.framework_memory_basis == "estimated"
        assert gpu.framework_memory_bytes == gpus["nvidia-rtx-5080"].framework_memory_bytes
    elif reported_mib is not None:  # rule 2 of the module docstring
        assert gpu.framework_memory_basis == "estimated"
        assert gpu.framework_memory_bytes == reported_mib * MiB - 512 * MiB


def test_dgx_spark_states_what_cuda_reports(gpus):
    spark = gpus["nvidia-dgx-spark"]
    assert spark.unified_memory and spark.memory_gb_marketed == 128 and spark.memory_reported_mib is None
    assert spark.framework_memory_basis == "measured"
    assert spark.framework_memory_bytes == round(119.69 * GiB)
    for fragment in ("119.69 GiB", "shared", "121.69 GiB"):  # what CUDA reports, the sharing, newer images
        assert fragment in spark.notes + spark.framework_memory_source, fragment


@pytest.mark.parametrize(("query", "expected"), [
    ("tesla-p40", "nvidia-p40"), ("P40", "nvidia-p40"), ("RTX 2080 Ti", "nvidia-rtx-2080-ti"),
    ("rtx-5080", "nvidia-rtx-5080"), ("GeForce RTX 5070 Ti", "nvidia-rtx-5070-ti"),
    ("rtx-4060-ti-16gb", "nvidia-rtx-4060-ti-16gb"), ("RTX A4000", "nvidia-rtx-a4000"),
    ("rtx-a5000", "nvidia-rtx-a5000"), ("l20", "nvidia-l20"), ("dgx-spark", "nvidia-dgx-spark"),
    ("gb10", "nvidia-dgx-spark"), ("NVIDIA GB10", "nvidia-dgx-spark"),
])
def test_added_gpus_resolve_by_their_usual_names(query, expected):
    assert get_gpu(query).id == expected


@pytest.mark.parametrize("gpu_id", sorted(CSV_NAME))
def test_entry_matches_reference_csv(gpus, gpu_id):
    row = _reference_rows()[CSV_NAME[gpu_id]]
    gpu = gpus[gpu_id]
    assert gpu.vendor == row["vendor"]

    def cell(column: str) -> float | None:
        return float(row[column]) if row[column] else None

    expected = {
        "memory_gb_marketed": cell("memory_gb_marketed"),
        "memory_reported_mib": cell("memory_reported_mib"),
        "bandwidth_gb_s": cell("bandwidth_gb_s"),
        "bf16_dense_tflops": cell("bf16_dense_tflops"),
        "price_usd_per_hour": cell("price_usd_per_hour"),
    }
    for field, value in expected.items():
        if (gpu_id, field) not in CSV_OVERRIDES:
            assert getattr(gpu, field) == value, (gpu_id, field)
    for url in re.findall(r"https?://[^\s;,)]+", row["sources"]):
        assert url in gpu.source, (gpu_id, url)
