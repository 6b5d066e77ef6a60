"""GGUF header -> ModelSpec with exact weight bytes (tiny files written by the gguf package).

Hand check of the tiny file (tests/fixtures/gguf_files.py; hidden 256, 2 layers,
4 heads, 2 KV heads, FFN 512, vocab 1024), bytes per ggml type
(gguf ``GGML_QUANT_SIZES``):

* Q8_0, 34 B per 32 values: token_embd 1024 x 256 = 262,144 values -> 278,528 B
* Q4_K, 144 B per 256: 884,736 values (q, k, o, gate, up; v of layer 1) -> 497,664 B
* Q6_K, 210 B per 256: 557,056 values (v of layer 0, ffn_down, output) -> 456,960 B
* F32, 4 B: 5 norms x 256 = 1,280 values -> 5,120 B

Total 1,238,272 B. KV cache (f16, 2 B): 2 layers x 2 (K, V) x 2 heads x 64 x 2 B
= 1,024 B per token.
"""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import pytest

from model_catalog.gguf_reader import ggml_storage, read_gguf
from model_catalog.share_codec import decode_model, encode_model
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.model.dtypes import WEIGHT_DTYPES
from planner.model.kv import cache_dtypes, kv_cache_bytes_per_token
from planner.model.layers import FullAttention, SlidingWindowAttention
from planner.model.params import weight_bytes
from tests.fixtures.gguf_files import T, write_tiny_gguf

TOTAL_BYTES = 278_528 + 497_664 + 456_960 + 5_120
BY_TYPE = {"Q8_0": (1, 262_144, 278_528), "Q4_K": (11, 884_736, 497_664), "Q6_K": (4, 557_056, 456_960),
           "F32": (5, 1_280, 5_120)}


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_tiny_gguf(tmp_path / "tiny.Q4_K_M.gguf")


def test_exact_weight_bytes_match_the_file(tiny):
    read = read_gguf(tiny)
    assert read.weight_bytes == TOTAL_BYTES
    assert read.bytes_by_type == BY_TYPE
    assert read.weight_bytes == sum(int(t.n_bytes) for t in gguf.GGUFReader(tiny).tensors)
    spec = read.model.spec
    assert spec.num_parameters == read.num_parameters == 262_144 + 884_736 + 557_056 + 1_280
    for dtype in WEIGHT_DTYPES.values():  # the file's types win over any requested weight dtype
        assert weight_bytes(spec.params, dtype, spec.torch_dtype) == TOTAL_BYTES


def test_architecture_becomes_the_cache_layers(tiny):
    read = read_gguf(tiny)
    spec = read.model.spec
    assert read.architecture == "llama" and spec.model_type == "gguf:llama"
    assert spec.model_id == "tiny-test-model"
    assert spec.layers == (FullAttention(num_key_value_heads=2, head_dim=64),) * 2
    assert spec.max_position_embeddings == 2048 and spec.vocab_size == 1024
    assert kv_cache_bytes_per_token(spec, cache_dtypes(spec, "fp16", "auto")) == 1024
    assert read.model.reading == "gguf" and "weights are the file's tensors as stored" in read.model.notes[0]


def test_plan_uses_the_exact_bytes(tiny):
    spec = read_gguf(tiny).model.spec
    result = plan(spec, 1 << 30, PlanRequest(context_len=1024, weight_dtype="int4", overhead_bytes=0))
    assert result.weights_bytes == TOTAL_BYTES and result.weights_bytes_per_gpu == TOTAL_BYTES


def test_a_header_prefix_is_enough(tiny, tmp_path):
    offset = gguf.GGUFReader(tiny).data_offset
    head = tmp_path / "head.gguf"
    head.write_bytes(tiny.read_bytes()[:offset])
    assert read_gguf(head).model.spec == read_gguf(tiny).model.spec


def test_cut_short_header_is_a_clear_error(tiny, tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny.read_bytes()[:200])
    with pytest.raises(ValueError, match="the header may be cut short: keep more of the file"):
        read_gguf(cut)


@pytest.mark.parametrize("content", [b"", b"not a gguf file at all", b"{\"model_type\": \"llama\"}"])
def test_non_gguf_files_are_refused(tmp_path, content):
    path = tmp_path / "x.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="x.gguf: (not a GGUF file|cannot read the GGUF header)"):
        read_gguf(path)


def test_missing_key_is_named(tmp_path):
    path = write_tiny_gguf(tmp_path / "nolayers.gguf", skip_keys=("block_count",))
    with pytest.raises(ValueError, match="GGUF header has no 'llama.block_count'; expected a positive integer"):
        read_gguf(path)


def test_tied_embeddings_and_missing_vocab_key(tmp_path):
    path = write_tiny_gguf(tmp_path / "tied.gguf", tied=True, skip_keys=("vocab_size",))
    spec = read_gguf(path).model.spec
    assert spec.vocab_size == 1024  # from token_embd's shape
    assert read_gguf(path).weight_bytes == TOTAL_BYTES - 262_144 // 256 * 210


def test_gemma3_windows_follow_llama_cpp(tmp_path):
    path = write_tiny_gguf(tmp_path / "g3.gguf", arch="gemma3", layers=12,
                           extra=lambda w: w.add_sliding_window(512))
    layers = read_gguf(path).model.spec.layers
    full = [i for i, layer in enumerate(layers) if not isinstance(layer, SlidingWindowAttention)]
    assert full == [5, 11]  # llama.cpp set_swa_pattern(6): every sixth layer is global
    assert all(layer.sliding_window == 512 for layer in layers if isinstance(layer, SlidingWindowAttention))


def test_window_without_a_llama_cpp_pattern_is_full_attention(tmp_path):
    path = write_tiny_gguf(tmp_path / "mistral.gguf", extra=lambda w: w.add_sliding_window(4096))
    read = read_gguf(path)
    assert all(type(layer) is FullAttention for layer in read.model.spec.layers)
    assert any("llama.cpp runs 'llama' with full attention" in note for note in read.model.notes)


def test_mla_architecture_is_refused_with_advice(tmp_path):
    path = write_tiny_gguf(tmp_path / "ds.gguf", arch="deepseek2", extra=lambda w: w.add_kv_lora_rank(512))
    with pytest.raises(ValueError, match="uses multi-head latent attention .* plan the model from its config.json"):
        read_gguf(path)


def test_per_layer_kv_heads_that_differ_are_refused(tmp_path):
    def per_layer(writer):
        writer.add_array("llama.attention.head_count_kv", [2, 4])

    path = write_tiny_gguf(tmp_path / "mixed.gguf", skip_keys=("head_count_kv",), extra=per_layer)
    with pytest.raises(ValueError, match="'llama.attention.head_count_kv' differs per layer"):
        read_gguf(path)


@pytest.mark.parametrize(("name", "bits"), [("Q4_K", 4.5), ("Q6_K", 6.5625), ("Q8_0", 8.5), ("F16", 16),
                                            ("MXFP4", 4.25)])
def test_ggml_storage_bits(name, bits):
    assert float(ggml_storage(name).bits_per_element) == bits
    with pytest.raises(ValueError, match="unknown ggml tensor type 'Q3_Z'"):
        ggml_storage("Q3_Z")


def test_share_link_round_trip_keeps_exact_bytes(tiny):
    model = read_gguf(tiny).model
    code = encode_model(model)
    assert code.startswith("v1.") and len(code) < 1500
    back = decode_model(code)
    assert back.spec == model.spec and back.reading == "gguf"
    assert weight_bytes(back.spec.params, WEIGHT_DTYPES["bf16"]) == TOTAL_BYTES


def test_cli_gguf_flag(tiny, capsys):
    assert main(["plan", "--gguf", str(tiny), "--gpu", "rtx-3090", "--format", "json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["weights_bytes"] == TOTAL_BYTES and out["kv_cache_bytes_per_token"] == 1024
    assert out["model_id"] == "tiny-test-model"
    assert "note: GGUF 'llama'" in captured.err


def test_cli_gguf_bad_file_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"nope")
    assert main(["plan", "--gguf", str(bad), "--gpu", "rtx-3090"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["error: bad.gguf: not a GGUF file (no 'GGUF' magic at the start)"]


def test_quantized_types_list_is_from_the_package():
    assert ggml_storage(T.Q4_K.name).name == "gguf:Q4_K"
