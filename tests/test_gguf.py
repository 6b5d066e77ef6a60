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

import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import gguf
import pytest
from gguf import GGUFEndian

from model_catalog import gguf_header, gguf_reader
from model_catalog.config_bounds import SIZE_LIMITS as LIMITS
from model_catalog.gguf_reader import ggml_storage, read_gguf
from model_catalog.share_codec import decode_model, encode_model
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.model.dtypes import WEIGHT_DTYPES
from planner.model.kv import cache_dtypes, kv_cache_bytes_per_token
from planner.model.layers import FullAttention, SlidingWindowAttention
from planner.model.params import weight_bytes
from tests.fixtures.gguf_files import (
    T,
    V,
    array_bomb,
    gguf_array,
    gguf_header_bytes,
    gguf_kv,
    gguf_string,
    gguf_tensor_info,
    write_big_vocab_gguf,
    write_tiny_gguf,
)

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



# --------------------------------------------------------------------------
# Bounded header reading: bombs run in a child process under an address-space
# limit (RLIMIT_AS), so a regression fails the test instead of the machine.
# --------------------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[1]
HEADROOM = 1 << 30
"""Address space the child may add after its imports [bytes] (1 GiB)."""

_CHILD = r"""
import json, resource, sys, time
from model_catalog.gguf_reader import read_gguf
from planner.cli import main
if sys.argv[3]:
    read_gguf(sys.argv[3])  # warm-up: imports transformers' config classes before the limit
size = int(open("/proc/self/status").read().split("VmSize:")[1].split()[0]) * 1024
resource.setrlimit(resource.RLIMIT_AS, (size + int(sys.argv[2]), size + int(sys.argv[2])))
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
result = {}
if sys.argv[4] == "cli":
    result["rc"] = main(["plan", "--gguf", sys.argv[1], "--gpu", "rtx-3090", "--format", "json"])
else:
    try:
        result["weight_bytes"] = read_gguf(sys.argv[1]).weight_bytes
    except ValueError as exc:
        result["error"] = str(exc)
result["seconds"] = time.perf_counter() - start
result["grew_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
print(json.dumps(result))
"""


def run_child(path: Path, *, warm_up: Path | None = None, cli: bool = False, timeout: float = 90) -> tuple[
        dict, str]:
    """``read_gguf(path)`` (or ``plan --gguf path``) in a child under RLIMIT_AS: (its JSON result, its stderr)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("RLIMIT_AS and /proc/self/status are Linux-only")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    try:
        done = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(HEADROOM), str(warm_up or ""),
                               "cli" if cli else "read"], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail(f"reading {path.name} ran past {timeout:g} s")
    assert done.returncode == 0, f"child exited {done.returncode}: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _entries(key: str, declared: int) -> str:
    """The message for an array over ``MAX_ARRAY_LENGTH`` (1,048,576: 4x Gemma 3's 262,144-token vocabulary)."""
    return (f"this GGUF header declares {declared:,} entries in {key}; the reader accepts at most 1,048,576: "
            "use a GGUF file written by llama.cpp's convert script")


def _arch() -> bytes:
    return gguf_kv("general.architecture", V.STRING, gguf_string("llama"))


BOMBS = {
    # the bomb: one array claiming 2^22, 2^24, 2^40 items, as strings and as int32
    **{f"tokens-2^{p}": (array_bomb(2**p), _entries("tokenizer.ggml.tokens", 2**p)) for p in (22, 24, 40)},
    **{f"token_type-2^{p}": (array_bomb(2**p, "tokenizer.ggml.token_type", V.INT32),
                             _entries("tokenizer.ggml.token_type", 2**p)) for p in (22, 24, 40)},
    "string-2^40": (gguf_header_bytes([gguf_kv("general.name", V.STRING, (2**40).to_bytes(8, "little"))]),
                    "declares 1,099,511,627,776 bytes in the string general.name; the reader accepts at most 67,108,864"),
    "key-2^40": (gguf_header_bytes(tensor_count=0, kv_count=1) + (2**40).to_bytes(8, "little"),
                 "declares 1,099,511,627,776 bytes in the key of metadata entry 0; the reader accepts at most 65,535"),
    "entries-2^40": (gguf_header_bytes(kv_count=2**40),
                     "declares 1,099,511,627,776 metadata entries; the reader accepts at most 16,384"),
    "tensors-2^40": (gguf_header_bytes([_arch()], tensor_count=2**40),
                     "declares 1,099,511,627,776 tensors (the largest real models list about 1,100); the reader "
                     "accepts at most 16,384"),
    "dims-2^32": (gguf_header_bytes([_arch()], [gguf_tensor_info("token_embd.weight", (), 0, n_dims=2**32 - 1)]),
                  "declares 4,294,967,295 dimensions for tensor token_embd.weight; the reader accepts at most 4"),
    "nested-arrays": (gguf_header_bytes([gguf_kv("x.nested", V.ARRAY, gguf_array(V.ARRAY, 1) * 64)]),
                      "declares 5 levels of nested arrays in x.nested; the reader accepts at most 4"),
    # within every limit, but the items are not in the file
    "absent-strings": (gguf_header_bytes([_arch(), gguf_kv("tokenizer.ggml.tokens", V.ARRAY,
                                                           gguf_array(V.STRING, 1_000_000, gguf_string("a")))]),
                       "tokenizer.ggml.tokens (1,000,000 items of at least 8 bytes) needs 8,000,000 bytes at byte 114 but the file ends at byte 123"),
    "absent-floats": (gguf_header_bytes([_arch(), gguf_kv("tokenizer.ggml.scores", V.ARRAY,
                                                          gguf_array(V.FLOAT32, 1_000_000))]),
                      "tokenizer.ggml.scores needs 4,000,000 bytes at byte 114 but the file ends at byte 114"),
    "absent-string": (gguf_header_bytes([_arch(), gguf_kv("tokenizer.chat_template", V.STRING,
                                                          (1 << 20).to_bytes(8, "little") + b"{%")]),
                      "tokenizer.chat_template needs 1,048,576 bytes at byte 112 but the file ends at byte 114"),
}


@pytest.mark.parametrize("bomb", list(BOMBS))
def test_header_bombs_are_refused_quickly_in_bounded_memory(bomb, tmp_path):
    content, message = BOMBS[bomb]
    path = tmp_path / f"{bomb}.gguf"
    path.write_bytes(content)
    result, _ = run_child(path)
    assert message in result.get("error", ""), result
    assert result["error"].startswith(f"{bomb}.gguf: ")
    assert result["seconds"] < 5 and result["grew_mb"] < 64, result


def test_cli_gguf_has_the_same_limits(tmp_path):
    path = tmp_path / "bomb.gguf"
    path.write_bytes(array_bomb(2**22, "tokenizer.ggml.token_type", V.INT32))
    result, err = run_child(path, cli=True)
    assert result["rc"] == 2 and result["seconds"] < 5, result
    assert err.strip().splitlines() == ["error: bomb.gguf: " + _entries("tokenizer.ggml.token_type", 2**22)
                                        + " (convert_hf_to_gguf.py), or paste the model's config.json"]


def test_a_real_sized_vocabulary_reads_in_bounded_memory(tmp_path):
    """Gemma 3's 262,144 tokens with scores and types: the arrays are seeked over, not built."""
    big = write_big_vocab_gguf(tmp_path / "vocab.gguf")
    result, _ = run_child(big, warm_up=write_tiny_gguf(tmp_path / "tiny.gguf"))
    assert result.get("weight_bytes") == TOTAL_BYTES, result
    assert result["seconds"] < 5 and result["grew_mb"] < 64, result


def test_big_vocabulary_plans_like_the_tiny_file(tiny, tmp_path):
    big = write_big_vocab_gguf(tmp_path / "vocab.gguf", vocab=4096)
    assert read_gguf(big).model.spec == read_gguf(tiny).model.spec


def test_header_bytes_limit(tiny, monkeypatch):
    monkeypatch.setattr(gguf_header, "MAX_HEADER_BYTES", 1000)
    with pytest.raises(ValueError, match=r"^tiny.Q4_K_M.gguf: this GGUF header declares 1,0\d\d bytes of header "
                                         r"\(it runs to byte 1,0\d\d in tensor .*\); the reader accepts at most 1,000: "
                                         "use a GGUF file written by llama.cpp's convert script"):
        read_gguf(tiny)


def test_array_items_limit_counts_all_string_arrays(tmp_path, monkeypatch):
    path = write_tiny_gguf(tmp_path / "two.gguf", extra=lambda w: (w.add_token_list(["a"] * 600),
                                                                  w.add_token_merges(["a b"] * 600)))
    assert read_gguf(path).weight_bytes == TOTAL_BYTES
    monkeypatch.setattr(gguf_header, "MAX_ARRAY_ITEMS", 1000)
    with pytest.raises(ValueError, match="declares 1,200 array elements over all its arrays, nested ones included "
                                         r"\(the total passes the limit at tokenizer.ggml.merges\); the reader "
                                         "accepts at most 1,000"):
        read_gguf(path)


def test_malformed_headers_are_named(tmp_path):
    cases = {
        "v1": (gguf_header_bytes(version=1), r"cannot read the GGUF header \(GGUF version 1 is not supported"),
        "dup": (gguf_header_bytes([_arch(), _arch()]), "the key general.architecture appears twice"),
        "type": (gguf_header_bytes([gguf_kv("a.b", 13, b"")]), "unknown metadata value type 13 for a.b"),
        "ggml": (gguf_header_bytes([_arch()], [gguf_tensor_info("w", (4,), 999)]),
                 "tensor w has unknown ggml type 999"),
    }
    for stem, (content, message) in cases.items():
        path = tmp_path / f"{stem}.gguf"
        path.write_bytes(content)
        with pytest.raises(ValueError, match=f"^{stem}.gguf: .*{message}"):
            read_gguf(path)


def test_big_endian_header_is_read(tiny, tmp_path):
    """gguf-py writes big-endian files; the scan reads them as its ``GGUFReader`` does."""
    path = write_tiny_gguf(tmp_path / "be.gguf", endianess=GGUFEndian.BIG)
    assert path.read_bytes()[4:8] == (3).to_bytes(4, "big")
    read = read_gguf(path)
    assert read.weight_bytes == TOTAL_BYTES and read.bytes_by_type == BY_TYPE
    assert read.model.spec == read_gguf(tiny).model.spec


@pytest.mark.parametrize(("items", "refused"), [(1024, False), (1025, True)])
def test_array_length_limit_is_inclusive(tmp_path, monkeypatch, items, refused):
    path = write_tiny_gguf(tmp_path / "edge.gguf", extra=lambda w: w.add_token_types([1] * items))
    monkeypatch.setattr(gguf_header, "MAX_ARRAY_LENGTH", 1024)
    if refused:
        with pytest.raises(ValueError, match="declares 1,025 entries in tokenizer.ggml.token_type; the reader "
                                             "accepts at most 1,024"):
            read_gguf(path)
    else:
        assert read_gguf(path).weight_bytes == TOTAL_BYTES



# --------------------------------------------------------------------------
# Hostile headers within the byte limits: every count is bounded before it is
# used, nested arrays and all arrays' elements are capped, tensor rows must fit
# the model's own share link, and the file's strings are bounded and plain.
# --------------------------------------------------------------------------
BASE_SIZES = {"block_count": 2, "embedding_length": 256, "attention.head_count": 4, "vocab_size": 1024}
"""The keys :func:`read_gguf` needs, at the tiny model's sizes (tests/fixtures/gguf_files.py ``TINY``)."""

BIG = 2**40
"""A declared count far over every limit."""


def _model_header(arch: str = "llama", sizes: dict | None = None, extra: tuple[bytes, ...] = (),
                  tensors: list[bytes] | None = None) -> bytes:
    """A hand-built header that plans (:data:`BASE_SIZES` as u64 values, updated by ``sizes``), plus ``extra`` pairs."""
    values = {**BASE_SIZES, **(sizes or {})}
    kvs = [gguf_kv("general.architecture", V.STRING, gguf_string(arch)),
           *(gguf_kv(f"{arch}.{key}", V.UINT64, struct.pack("<Q", value)) for key, value in values.items()), *extra]
    infos = tensors if tensors is not None else [gguf_tensor_info("token_embd.weight", (256, 1024), T.F32)]
    return gguf_header_bytes(kvs, infos)


def _refusal(tmp_path: Path, content: bytes) -> str:
    """The ValueError message of :func:`read_gguf` for a file holding ``content``."""
    path = tmp_path / "hostile.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError) as caught:
        read_gguf(path)
    return str(caught.value)


def _window(arch: str = "gemma3") -> bytes:
    return gguf_kv(f"{arch}.attention.sliding_window", V.UINT32, struct.pack("<I", 512))


def test_the_hand_built_header_plans(tmp_path):
    path = tmp_path / "base.gguf"
    path.write_bytes(_model_header("gemma3", extra=(_window(),)))
    spec = read_gguf(path).model.spec
    assert len(spec.layers) == 2 and spec.vocab_size == 1024


@pytest.mark.parametrize("layers", [2**27, 2**36])
def test_block_count_is_refused_before_any_layer_is_built(tmp_path, layers):
    """The issue's tiny files: a sliding window made a list per layer (2^27: about 20 s, 2.1 GB; 2^36: MemoryError)."""
    path = tmp_path / "layers.gguf"
    path.write_bytes(_model_header("gemma3", {"block_count": layers}, (_window(),)))
    result, _ = run_child(path)
    assert (f"layers.gguf: GGUF key 'gemma3.block_count' is {layers:,}; the reader accepts at most "
            f"{LIMITS['num_hidden_layers']:,} (the bound on config.json's num_hidden_layers, far above any published "
            "model): use a GGUF file written by "
            "llama.cpp's convert script") in result.get("error", ""), result
    assert result["grew_mb"] < 64, result


COUNT_CASES = {
    "head_count_kv": ({"attention.head_count_kv": BIG}, (), "GGUF key 'llama.attention.head_count_kv' is "
                      f"1,099,511,627,776; the reader accepts at most {LIMITS['num_key_value_heads']:,} (the bound on "
                      "config.json's num_key_value_heads"),
    "head_count": ({"attention.head_count": BIG}, (), "'llama.attention.head_count' is 1,099,511,627,776; the "
                   f"reader accepts at most {LIMITS['num_attention_heads']:,} (the bound on config.json's "
                   "num_attention_heads"),
    "embedding_length": ({"embedding_length": BIG}, (), "'llama.embedding_length' is 1,099,511,627,776; the "
                         f"reader accepts at most {LIMITS['hidden_size']:,} (the bound on config.json's hidden_size"),
    "vocab_size": ({"vocab_size": BIG}, (), "'llama.vocab_size' is 1,099,511,627,776; the reader accepts at "
                   f"most {LIMITS['vocab_size']:,} (the bound on config.json's vocab_size"),
    "expert_count": ({"expert_count": BIG}, (), "'llama.expert_count' is 1,099,511,627,776; the reader accepts "
                     f"at most {LIMITS['num_local_experts']:,} (the bound on config.json's num_local_experts"),
    "key_length": ({"attention.key_length": BIG}, (), "'llama.attention.key_length' is 1,099,511,627,776; the "
                   f"reader accepts at most {LIMITS['head_dim']:,} (the bound on config.json's head_dim"),
    "context_length": ({"context_length": BIG}, (), "'llama.context_length' is 1,099,511,627,776; the reader "
                       "accepts at most "),
    "per-layer array": ({}, (gguf_kv("llama.attention.head_count_kv", V.ARRAY,
                                     gguf_array(V.INT32, 2000, struct.pack("<2000i", *[2] * 2000))),),
                        "GGUF key 'llama.attention.head_count_kv' is an array of 2,000 values; a per-layer array "
                        f"holds one per layer and the reader accepts at most {LIMITS['num_hidden_layers']:,} layers"),
}


@pytest.mark.parametrize("case", list(COUNT_CASES))
def test_every_header_count_is_checked_as_it_is_read(tmp_path, case):
    sizes, extra, message = COUNT_CASES[case]
    assert message in _refusal(tmp_path, _model_header("llama", sizes, extra))


def test_window_pattern_and_embedding_shape_are_bounded(tmp_path):
    period = gguf_kv("gemma3.attention.sliding_window_pattern", V.UINT64, struct.pack("<Q", BIG))
    assert ("GGUF key 'gemma3.attention.sliding_window_pattern' (a period in layers) is 1,099,511,627,776; the "
            f"reader accepts at most {LIMITS['num_hidden_layers']:,}") in _refusal(
                tmp_path, _model_header("gemma3", extra=(_window(), period)))
    flags = gguf_kv("gemma3.attention.sliding_window_pattern", V.ARRAY, gguf_array(V.BOOL, 5000, b"\1" * 5000))
    assert "'gemma3.attention.sliding_window_pattern' is an array of 5,000 values" in _refusal(
        tmp_path, _model_header("gemma3", extra=(_window(), flags)))
    no_vocab = {key: value for key, value in BASE_SIZES.items() if key != "vocab_size"}
    header = gguf_header_bytes(
        [gguf_kv("general.architecture", V.STRING, gguf_string("llama")),
         *(gguf_kv(f"llama.{key}", V.UINT64, struct.pack("<Q", value)) for key, value in no_vocab.items())],
        [gguf_tensor_info("token_embd.weight", (256, BIG), T.F32)])
    assert ("GGUF token_embd.weight's vocabulary dimension is 1,099,511,627,776; the reader accepts at most "
            f"{LIMITS['vocab_size']:,}") in _refusal(tmp_path, header)


def test_size_keys_reuse_the_config_json_bounds():
    for suffix, config_key in gguf_reader.SIZE_KEYS.items():
        limit, _ = gguf_reader._limit_of(suffix)
        assert limit == LIMITS.get(config_key, gguf_reader.MAX_CONTEXT_TOKENS), suffix
    assert gguf_reader.MAX_LAYERS == LIMITS["num_hidden_layers"]


def test_nested_empty_arrays_are_capped_over_the_whole_header(tmp_path):
    """The issue's 50 MB of empty nested arrays cost 12 s; here three keys of 21,846 (786 KB) pass the 65,536 cap."""
    nested = tuple(gguf_kv(f"x.nested{i}", V.ARRAY, gguf_array(V.ARRAY, 21_846, gguf_array(V.UINT8, 0) * 21_846))
                   for i in range(3))
    assert ("declares 65,538 arrays inside arrays over the whole header (the total passes the limit at x.nested2); "
            "the reader accepts at most 65,536") in _refusal(tmp_path, _model_header(extra=nested))


def test_array_elements_are_capped_numeric_and_nested_included(tmp_path, monkeypatch):
    numeric = tuple(gguf_kv(f"x.bytes{i}", V.ARRAY, gguf_array(V.UINT8, 840_000, bytes(840_000))) for i in range(5))
    assert ("declares 4,200,000 array elements over all its arrays, nested ones included (the total passes the "
            "limit at x.bytes4); the reader accepts at most 4,194,304") in _refusal(
                tmp_path, _model_header(extra=numeric))  # 4.2 MB
    monkeypatch.setattr(gguf_header, "MAX_ARRAY_ITEMS", 1000)
    inner = gguf_array(V.UINT8, 100, bytes(100))
    nested = gguf_kv("x.nested", V.ARRAY, gguf_array(V.ARRAY, 10, inner * 10))
    assert "declares 1,010 array elements over all its arrays" in _refusal(tmp_path, _model_header(extra=(nested,)))


def _tensors(names) -> list[bytes]:
    return [gguf_tensor_info(name, (256,), T.F32) for name in names]


def test_65536_tensor_names_are_refused_at_read_time(tmp_path):
    """Such a file was read (8 s, +333 MB) and then its own share code was refused as too long."""
    header = _model_header(tensors=_tensors(f"t{i}.weight" for i in range(65_536)))
    assert ("declares 65,536 tensors (the largest real models list about 1,100); the reader accepts at most "
            "16,384") in _refusal(tmp_path, header)


def test_tensor_rows_must_fit_the_models_share_link(tmp_path):
    rows = _refusal(tmp_path, _model_header(tensors=_tensors(f"t{i}.weight" for i in range(4097))))
    assert "the 4,097 tensors merge into 4,097 rows" in rows and "at most 4,096 rows fit a share link" in rows
    random_names = (hashlib.sha256(str(i).encode()).hexdigest()[:40] for i in range(1500))
    code = _refusal(tmp_path, _model_header(tensors=_tensors(random_names)))
    assert "the 1,500 tensors merge into 1,500 rows" in code and "characters of share code, at most 12,000" in code


def test_a_405b_sized_tensor_list_reads_and_shares(tmp_path):
    """Llama 3.1 405B's layout: 126 layers x 9 tensors + 4 = 1,138, the most of a real dense model."""
    names = ["attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down"]
    infos = [gguf_tensor_info(f"blk.{i}.{n}.weight", (256,) if "norm" in n else (256, 256), T.F32 if "norm" in n
                              else T.Q4_K) for i in range(126) for n in names]
    infos += [gguf_tensor_info("token_embd.weight", (256, 1024), T.Q8_0), gguf_tensor_info("output.weight", (256, 1024),
              T.Q6_K), gguf_tensor_info("output_norm.weight", (256,), T.F32), gguf_tensor_info("rope_freqs.weight",
              (64,), T.F32)]
    path = tmp_path / "405b.gguf"
    path.write_bytes(_model_header(sizes={"block_count": 126}, tensors=infos))
    model = read_gguf(path).model
    assert decode_model(encode_model(model)).spec == model.spec


HUGE = (2**60).to_bytes(8, "little")
"""A ``gguf_string_t`` length prefix of 2^60 bytes."""

STRING_BOMBS = {
    "key": (gguf_header_bytes(kv_count=1) + HUGE, "1,152,921,504,606,846,976 bytes in the key of metadata entry 0; "
            "the reader accepts at most 65,535"),
    "name": (gguf_header_bytes([gguf_kv("general.name", V.STRING, HUGE)]), "1,152,921,504,606,846,976 bytes in the "
             "string general.name; the reader accepts at most 67,108,864"),
    "token": (gguf_header_bytes([gguf_kv("tokenizer.ggml.tokens", V.ARRAY, gguf_array(V.STRING, 1, HUGE))]),
              "1,152,921,504,606,846,976 bytes in one string of tokenizer.ggml.tokens; the reader accepts at most "
              "67,108,864"),
    "tensor": (_model_header(tensors=[HUGE]), "1,152,921,504,606,846,976 bytes in the name of tensor 0; the reader "
               "accepts at most 63"),
}


@pytest.mark.parametrize("case", list(STRING_BOMBS))
def test_string_lengths_are_checked_before_any_allocation(tmp_path, case):
    content, message = STRING_BOMBS[case]
    assert f"this GGUF header declares {message}" in _refusal(tmp_path, content)


def test_tensor_names_follow_llama_cpp(tmp_path):
    assert "declares 64 bytes in the name of tensor 0; the reader accepts at most 63" in _refusal(
        tmp_path, _model_header(tensors=_tensors(["x" * 64])))
    control = _refusal(tmp_path, _model_header(tensors=_tensors(["blk.0.\x1b[31mred"])))
    assert "the name of tensor 0 'blk.0.\\x1b[31mred' holds control or other non-printable characters" in control
    assert "\x1b" not in control


def test_keys_with_control_characters_are_refused_and_long_keys_are_cut(tmp_path):
    title = _refusal(tmp_path, _model_header(extra=(gguf_kv("x.\x1b]0;pwned\x07", V.UINT8, b"\0"),)))
    assert "key of metadata entry 5 'x.\\x1b]0;pwned\\x07' holds control" in title and "\x1b" not in title
    long_key = _refusal(tmp_path, gguf_header_bytes([gguf_kv("k" * 10_000, 13, b"")]))
    assert "unknown metadata value type 13 for 'kkk" in long_key and "(10,000 characters)" in long_key
    assert "k" * 61 not in long_key


def test_general_name_is_cut_and_stripped_not_refused(tmp_path):
    hostile = "Evil\x1b[2J\u202e model\n" + "x" * 5000
    path = tmp_path / "named.gguf"
    path.write_bytes(_model_header(extra=(gguf_kv("general.name", V.STRING, gguf_string(hostile)),)))
    read = read_gguf(path)
    assert read.model.name == ("Evil[2J model " + "x" * 100)[:100]
    assert any("general.name (5,018 bytes) is shown as 'Evil[2J model xxx" in note for note in read.model.notes)


def test_architecture_must_be_a_short_plain_name(tmp_path):
    message = _refusal(tmp_path, _model_header(arch="a" * 1000))
    assert "GGUF key 'general.architecture' is 'aaa" in message and "(1,000 characters)" in message
    assert "a" * 61 not in message and "such as 'llama' or 'qwen2'" in message


def test_a_long_file_name_and_key_are_echoed_cut_to_60_characters(tmp_path, capsys):
    """Every other reader quotes at most 60 characters of what it was given (planner/text.py); the GGUF reader put
    the file's name whole before each of its messages (a 205-character name, on every line of the CLI and the
    panel)."""
    path = tmp_path / ("m" * 200 + ".gguf")
    path.write_bytes(_model_header(extra=(gguf_kv("k" * 5_000, 13, b""),)))
    message = _refusal_at(path)
    assert "m" * 61 not in message and "k" * 61 not in message, message
    assert "(205 characters)" in message and "(5,000 characters)" in message
    assert main(["plan", "--gguf", str(path), "--gpu", "nvidia-h100-sxm-80gb"]) != 0
    assert "m" * 61 not in capsys.readouterr().err


def _refusal_at(path: Path) -> str:
    """The ValueError message of :func:`read_gguf` for the file at ``path``."""
    with pytest.raises(ValueError) as caught:
        read_gguf(path)
    return str(caught.value)
