"""DeepSeek-V4's transformers cache at lengths inside a compression window (issue 25, "Also, in the same code").

The reference figures (``tests/data/reference/deepseek_v4_transformers_cache.json``) were
measured by ``scripts/measure_deepseek_v4_cache.py`` on a three-layer shrunk copy (real
cache shapes) with the transformers and torch versions recorded in the file: the storages
each cache layer keeps alive after a prefill of ``n - 1`` tokens and one decode step, at
8 x 128 and 783 x 128 tokens + 0, 1, 100 and 127, and 100,228 (783 x 128 + 4, the issue's length).
The torch-free tests compare the planner's ``transformers`` view
(:meth:`planner.model.sparse.CompressedAttention.transformers_cache_bytes`, design note 4)
with those figures per layer kind, and for the whole model as the sum of its layers; the
last test re-measures the short lengths and skips without torch.

The issue's constant (107,520 B on V4-Flash, 153,600 B on V4-Pro) is the CSA overlap gate
kept in bf16 instead of fp32: a model cast with ``.to(torch.bfloat16)`` also casts the
compressors' ``position_bias``, which ``from_pretrained`` / ``from_config`` keep in fp32,
and keeps ``ratio x (head_dim + index_head_dim) x 2`` = 4 x 640 x 2 = 5,120 B less per CSA
layer (21 in Flash, 30 in Pro) at every length past the first window; the reference file
holds that run too (``cast_to_bf16``).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from model_catalog import model_spec
from planner.engines.hf_transformers import transformers_cache_bytes, transformers_layer_bytes
from planner.model.dtypes import BF16
from planner.model.layers import CacheDtypes
from planner.model.sparse import CompressedAttention
from planner.serving.multimodal import text_only

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = json.loads((ROOT / "tests" / "data" / "reference" / "deepseek_v4_transformers_cache.json")
                       .read_text(encoding="utf-8"))
BF16_CACHE = CacheDtypes(kv=BF16, state=BF16)
MODELS = sorted(REFERENCE["models"])
CASES = [(m, run["num_tokens"]) for m in MODELS for run in REFERENCE["models"][m]["runs"]]


def _spec(model_id: str):
    return text_only(model_spec(model_id))


def _run(model_id: str, num_tokens: int) -> dict:
    return next(r for r in REFERENCE["models"][model_id]["runs"] if r["num_tokens"] == num_tokens)


def _kind_counts(model_id: str) -> dict[str, int]:
    """Catalog layers of each measured kind: the index of the measured one decides the kind."""
    spec, index = _spec(model_id), REFERENCE["models"][model_id]["layer_index"]
    signature = {kind: spec.layers[i] for kind, i in index.items()}
    counts = {kind: sum(1 for layer in spec.layers if layer == ref) for kind, ref in signature.items()}
    assert sum(counts.values()) == spec.num_layers  # every layer is one of the measured kinds
    return counts


def test_reference_covers_every_offset_in_the_hca_window() -> None:
    for model_id in MODELS:
        offsets = {run["num_tokens"] % 128 for run in REFERENCE["models"][model_id]["runs"]}
        assert {0, 1, 100, 127} <= offsets, model_id
    assert ("deepseek-ai/DeepSeek-V4-Flash", 100_228) in CASES and ("deepseek-ai/DeepSeek-V4-Pro", 100_228) in CASES


@pytest.mark.parametrize(("model_id", "num_tokens"), CASES)
def test_each_layer_kind_matches_transformers(model_id, num_tokens) -> None:
    spec, run = _spec(model_id), _run(model_id, num_tokens)
    index = REFERENCE["models"][model_id]["layer_index"]
    for phase, tokens in (("decode", num_tokens), ("prefill", num_tokens - 1)):
        for kind, measured in run.get(phase, {}).items():
            got = transformers_layer_bytes(spec.layers[index[kind]], tokens, BF16_CACHE, phase=phase)
            assert (got.tensor_bytes, got.memory_bytes) == (measured["tensor_bytes"], measured["memory_bytes"]), \
                (model_id, phase, tokens, kind)


@pytest.mark.parametrize(("model_id", "num_tokens"), CASES)
def test_whole_model_matches_the_sum_of_its_measured_layers(model_id, num_tokens) -> None:
    counts, decode = _kind_counts(model_id), _run(model_id, num_tokens)["decode"]
    measured = sum(counts[kind] * decode[kind]["memory_bytes"] for kind in counts)
    assert transformers_cache_bytes(_spec(model_id), num_tokens, BF16_CACHE).memory_bytes == measured


@pytest.mark.parametrize(("model_id", "constant"), [("deepseek-ai/DeepSeek-V4-Flash", 107_520),
                                                    ("deepseek-ai/DeepSeek-V4-Pro", 153_600)])
def test_the_issue_constant_is_the_overlap_gate_of_a_model_cast_to_bf16(model_id, constant) -> None:
    """fp32 -> bf16 overlap gate: ratio x (head_dim + index_head_dim) x 2 B per CSA layer, nothing else."""
    spec, cast = _spec(model_id), REFERENCE["models"][model_id]["cast_to_bf16"]
    default = _run(model_id, cast["num_tokens"])["decode"]
    csa = spec.layers[REFERENCE["models"][model_id]["layer_index"]["compressed_sparse_attention"]]
    assert isinstance(csa, CompressedAttention) and csa.compress_ratio == 4
    per_layer = csa.compress_ratio * (csa.head_dim + csa.index_head_dim) * 2  # 4 x 640 x 2 = 5,120 B
    for kind, measured in cast["decode"].items():
        saved = default[kind]["memory_bytes"] - measured["memory_bytes"]
        assert saved == (per_layer if kind == "compressed_sparse_attention" else 0), kind
    assert _kind_counts(model_id)["compressed_sparse_attention"] * per_layer == constant


_HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.mark.skipif(not _HAS_TORCH, reason="torch is not installed: `pip install -r requirements-dev.txt` "
                                          "(CI installs it) to re-measure DeepSeek-V4's cache")
def test_fresh_measurement_matches_planner_and_reference() -> None:
    """Short lengths only (about 2 s): the long ones take minutes (``--long``)."""
    spec_ = importlib.util.spec_from_file_location("measure_v4", ROOT / "scripts" / "measure_deepseek_v4_cache.py")
    script = importlib.util.module_from_spec(spec_)
    sys.modules[spec_.name] = script
    spec_.loader.exec_module(script)
    model_id = "deepseek-ai/DeepSeek-V4-Flash"
    model, kinds, indices = script.build(model_id)
    spec = _spec(model_id)
    for total in script.SHORT_LENGTHS:
        decode, _ = script.measure(model, total)
        for kind, index, measured in zip(kinds, indices, decode):
            got = transformers_layer_bytes(spec.layers[index], total, BF16_CACHE)
            assert measured == {"tensor_bytes": got.tensor_bytes, "memory_bytes": got.memory_bytes}, (total, kind)
            assert measured == _run(model_id, total)["decode"][kind]
