"""Tests for loading the accelerator catalog (model_catalog/gpus.py + gpus.json): errors that name
the file, entry and field; lookup by id, alias and close match; host links, checked on load.

The figures of the entries themselves (measured totals, estimation rules, the reference table)
are tested in ``tests/test_catalog_gpus.py``. Host-link rates are worked by hand below.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from model_catalog.gpus import _ALIASES, GPU, get_gpu, load_gpus
from planner.units import MiB


@pytest.fixture(scope="module")
def gpus() -> dict[str, GPU]:
    return load_gpus()




def _entry(**overrides) -> dict:
    """A valid catalog entry (a 16 GiB card) with selected fields replaced."""
    entry = {
        "id": "test-card-16gb",
        "vendor": "NVIDIA",
        "name": "Test Card 16GB",
        "segment": "datacenter",
        "memory_gb_marketed": 16,
        "memory_reported_mib": 16384,
        "framework_memory_bytes": 16384 * MiB - 512 * MiB,
        "framework_memory_basis": "estimated",
        "framework_memory_source": "rule 2",
        "unified_memory": False,
        "bandwidth_gb_s": 500.0,
        "bf16_dense_tflops": 100.0,
        "fp8_native": False,
        "price_usd_per_hour": None,
        "price_source": None,
        "notes": "",
        "source": "https://example.org/spec",
        "host_link": {"kind": "pcie4 x16", "gb_s_per_direction": 31.5, "source": "https://example.org/spec"},
    }
    entry.update(overrides)
    return entry


def _write_catalog(tmp_path: Path, entries: list, name: str = "broken_gpus.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"gpus": entries}), encoding="utf-8")
    return path


# --- loading errors ---------------------------------------------------------------------


def test_valid_temp_catalog_loads(tmp_path):
    path = _write_catalog(tmp_path, [_entry()])
    loaded = load_gpus(path)
    assert list(loaded) == ["test-card-16gb"]
    assert loaded["test-card-16gb"].framework_memory_bytes == 15872 * MiB


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        (_entry(framework_memory_bytes=-1), "framework_memory_bytes"),
        (_entry(framework_memory_bytes=15.5e9), "framework_memory_bytes"),  # not an int
        (_entry(memory_gb_marketed=0), "memory_gb_marketed"),
        (_entry(framework_memory_basis="guessed"), "framework_memory_basis"),
        (_entry(id="Test_Card"), "id"),
        (_entry(vendor="Nvidia"), "vendor"),
        (_entry(colour="green"), "colour"),  # unknown key
        ({k: v for k, v in _entry().items() if k != "source"}, "source"),  # missing
        (_entry(source=""), "source"),
        (_entry(framework_memory_bytes=16385 * MiB), "framework_memory_bytes"),  # > reported
        (_entry(memory_reported_mib=17000), "memory_reported_mib"),  # > 16 GiB label
        (_entry(price_usd_per_hour=1.0), "price_source"),
    ],
)
def test_malformed_entry_names_file_entry_and_field(tmp_path, entry, field):
    path = _write_catalog(tmp_path, [_entry(id="good-card"), entry])
    with pytest.raises(ValueError) as excinfo:
        load_gpus(path)
    message = str(excinfo.value)
    assert "broken_gpus.json" in message
    assert f"gpus[1] (id={entry.get('id')!r})" in message
    assert f"field '{field}'" in message


def test_non_object_entry_is_rejected(tmp_path):
    path = _write_catalog(tmp_path, [_entry(), "nvidia-t4"])
    with pytest.raises(ValueError, match=r"broken_gpus\.json: gpus\[1\] \(id=None\)"):
        load_gpus(path)


def test_duplicate_id_is_rejected(tmp_path):
    path = _write_catalog(tmp_path, [_entry(), _entry()])
    with pytest.raises(ValueError, match=r"broken_gpus\.json: gpus\[1\].*duplicate id"):
        load_gpus(path)


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "not_json.json"
    path.write_text('{"gpus": [', encoding="utf-8")
    with pytest.raises(ValueError, match=r"not_json\.json: invalid JSON at line 1"):
        load_gpus(path)


@pytest.mark.parametrize("document", [[], {"gpus": {}}, {"gpus": [], "extra": 1}])
def test_wrong_top_level_shape_names_the_file(tmp_path, document):
    path = tmp_path / "shape.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match=r"shape\.json"):
        load_gpus(path)


def test_entries_are_frozen(gpus):
    with pytest.raises(ValidationError):
        gpus["nvidia-t4"].framework_memory_bytes = 1


def test_load_gpus_returns_a_fresh_dict():
    first = load_gpus()
    first.pop("nvidia-t4")
    assert "nvidia-t4" in load_gpus()


# --- lookup -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("nvidia-rtx-3090", "nvidia-rtx-3090"),
        ("NVIDIA-RTX-3090", "nvidia-rtx-3090"),
        ("  nvidia rtx 3090 ", "nvidia-rtx-3090"),
        ("rtx-3090", "nvidia-rtx-3090"),
        ("GeForce RTX 4090", "nvidia-rtx-4090"),
        ("mi300x", "amd-mi300x"),
        ("h100", "nvidia-h100-sxm-80gb"),
        ("nvidia-a100", "nvidia-a100-sxm-80gb"),
        ("A100_40GB", "nvidia-a100-sxm-40gb"),
        ("amd-mi250x", "amd-mi250x-gcd"),
    ],
)
def test_get_gpu_accepts_case_and_aliases(query, expected):
    assert get_gpu(query).id == expected


def test_every_alias_targets_a_catalog_id(gpus):
    for alias, target in _ALIASES.items():
        assert target in gpus, alias
        assert alias not in gpus, alias


def test_unknown_id_suggests_close_matches():
    message = re.escape("unknown GPU id 'nvidia-h100-sxm-81gb'; did you mean ")
    with pytest.raises(ValueError, match=message) as excinfo:
        get_gpu("nvidia-h100-sxm-81gb")
    assert "'nvidia-h100-sxm-80gb'" in str(excinfo.value)
    assert "python -m planner gpus" in str(excinfo.value)


def test_unknown_id_without_close_match_still_points_at_the_list():
    with pytest.raises(ValueError, match=r"unknown GPU id 'tpu-v9'.*python -m planner gpus"):
        get_gpu("tpu-v9")


def test_get_gpu_searches_a_given_catalog(tmp_path):
    catalog = load_gpus(_write_catalog(tmp_path, [_entry()]))
    assert get_gpu("TEST-CARD-16GB", catalog).name == "Test Card 16GB"
    with pytest.raises(ValueError, match="did you mean 'test-card-16gb'"):
        get_gpu("test-card-32gb", catalog)


# --- host links (what KV offload copies over) --------------------------------------------------
# Per-direction rates worked by hand: PCIe Gen3/4/5 carry 8/16/32 GT/s per lane with 128b/130b
# coding, so x16 = 8 x 16 x 128/130 / 8 = 15.75, 31.51, 63.02 GB/s (x8: half); NVLink-C2C 900 GB/s
# both ways = 450 per direction (NVIDIA GH200 / GB200 datasheets).
HOST_LINK_EXPECTED = {
    "nvidia-h100-sxm-80gb": ("PCIe 5.0 x16", 63.0), "nvidia-h200-sxm": ("PCIe 5.0 x16", 63.0),
    "nvidia-gh200-144gb": ("NVLink-C2C", 450.0), "nvidia-a100-sxm-80gb": ("PCIe 4.0 x16", 31.5),
    "nvidia-l4": ("PCIe 4.0 x16", 31.5), "nvidia-rtx-4060-ti-16gb": ("PCIe 4.0 x8", 15.75),
    "nvidia-t4": ("PCIe 3.0 x16", 15.75), "amd-mi300x": ("PCIe 5.0 x16", 63.0),
    "apple-m4-max-128gb": ("unified memory", 0.0), "nvidia-dgx-spark": ("unified memory", 0.0),
    "nvidia-b300": ("unknown", None),
}


def test_every_gpu_has_a_host_link_or_says_unknown():
    for gpu in load_gpus().values():
        link = gpu.host_link
        assert link.source.strip(), gpu.id
        if link.kind == "unknown":
            assert link.gb_s_per_direction is None, gpu.id
        else:
            assert link.gb_s_per_direction is not None, gpu.id
        assert (link.kind == "unified") == gpu.unified_memory, gpu.id  # shared memory: nothing to copy


@pytest.mark.parametrize(("gpu_id", "expected"), HOST_LINK_EXPECTED.items())
def test_host_links_worked_by_hand(gpu_id, expected):
    link = get_gpu(gpu_id).host_link
    assert (link.label, link.gb_s_per_direction) == expected


@pytest.mark.parametrize(("link", "message"), [
    ({"kind": "pcie5 x16", "gb_s_per_direction": 64.0, "source": "s"}, "does not match pcie5 x16"),
    ({"kind": "unknown", "gb_s_per_direction": 31.5, "source": "s"}, "must be null"),
    ({"kind": "pcie4 x16", "gb_s_per_direction": None, "source": "s"}, "required for kind"),
    ({"kind": "unified", "gb_s_per_direction": 5.0, "source": "s"}, "must be 0"),
    ({"kind": "pcie9 x16", "gb_s_per_direction": 1.0, "source": "s"}, "kind"),
    ({"kind": "pcie4 x16", "gb_s_per_direction": 31.5, "source": ""}, "source"),
])
def test_bad_host_links_are_refused(tmp_path, link, message):
    path = _write_catalog(tmp_path, [_entry(host_link=link)])
    with pytest.raises(ValueError, match=message):
        load_gpus(path)


def test_a_gpu_without_a_host_link_is_refused(tmp_path):
    entry = _entry()
    del entry["host_link"]
    with pytest.raises(ValueError, match="host_link"):
        load_gpus(_write_catalog(tmp_path, [entry]))
