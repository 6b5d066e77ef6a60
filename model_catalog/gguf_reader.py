"""A local ``.gguf`` file -> a :class:`~planner.model.ModelSpec` with exact weight bytes.

llama.cpp users load a GGUF file, not a config.json. Its header names the
architecture (``general.architecture``), the hyper-parameters
(``{arch}.block_count``, ``{arch}.attention.head_count_kv`` ...) and every
tensor with its shape and ggml type (``Q4_K``, ``Q6_K``, ``F32`` ...). This
module reads only that header and never touches the tensor data: a header
prefix of the file (``head -c 64M model.gguf > head.gguf``) is enough.

Bounded reading: the header is scanned by :func:`scan_header`, not by gguf-py's
``GGUFReader``, which builds every array item in memory (a 69-byte header
claiming 2^22 int32 items grew a process to 4 GB; a real 262,144-token
vocabulary cost about 900 MB and 10 s). Every declared count and length is
checked against a limit (``MAX_*`` below: metadata entries, array length,
string length, tensor count, header bytes) and against the bytes the file
holds before it is read; arrays are seeked over, and only the few values the
plan uses are decoded. A size over a limit is one sentence naming the key,
the value and the limit. The CLI's ``--gguf`` and the app both call
:func:`read_gguf`, so the same limits apply.

Weights: each tensor becomes a :class:`planner.model.params.ParamGroup` whose
``storage`` is its ggml type, so ``weight_bytes`` is exactly the bytes the file
holds for the tensors, whatever weight dtype the plan asks for:
``bytes = n_elements / block_size x type_size`` per tensor (gguf
``GGML_QUANT_SIZES``; e.g. Q4_K: 144 bytes per 256 values = 4.5 bits).

KV cache: the hyper-parameters are mapped onto a Llama-layout config dict and
read through transformers' config class like any other config, then the
parameter groups are replaced by the file's tensors.

Design notes (assumptions):
    1. Sliding-window layers follow llama.cpp, not transformers: only
       architectures for which llama.cpp sets a window pattern use it
       (:data:`SWA_PATTERNS`; ``llama_hparams::set_swa_pattern`` in
       src/llama-model.cpp: layer ``i`` is sliding when ``i % n < n - 1``), or a
       ``{arch}.attention.sliding_window_pattern`` key in the file. Mistral-7B
       v0.1 runs with full attention in llama.cpp, so it is priced that way here.
    2. Architectures whose cache is not per-token K/V of ``head_count_kv`` heads
       (MLA ``kv_lora_rank``, SSM/RWKV state keys) are refused with a message:
       plan them from their config.json.
    3. ``head_dim`` is ``{arch}.attention.key_length`` when present, else
       ``embedding_length / head_count``; a different ``value_length`` is refused.
    4. ``torch_dtype`` is float16 (llama.cpp computes and caches in f16 by default).

Sources: GGUF specification (ggml docs/gguf.md: "File Structure" for the
header layout, "Standardized key-value pairs" for the keys); gguf-py
``GGUFReader`` (byte-order detection) and ``GGML_QUANT_SIZES`` (gguf/constants.py);
llama.cpp src/llama-model.cpp for the window patterns.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from model_catalog.custom import CustomModel, clean_name, read_custom_config
from planner.model.dtypes import StorageFormat
from planner.model.params import ParamGroup, merge_groups

SWA_PATTERNS: dict[str, int] = {"gemma2": 2, "gemma3": 6, "cohere2": 4}
"""llama.cpp's sliding-window period per architecture (every n-th layer is full attention)."""

UNSUPPORTED_KEYS: dict[str, str] = {
    "attention.kv_lora_rank": "multi-head latent attention (MLA)",
    "ssm.state_size": "a state-space (Mamba) recurrent state",
    "ssm.conv_kernel": "a state-space (Mamba) recurrent state",
    "rwkv.head_size": "an RWKV recurrent state",
    "wkv.head_size": "an RWKV recurrent state",
}
"""Header keys (after ``{arch}.``) whose caches this reader cannot price (design note 2)."""

TensorRow = tuple[str, tuple[int, ...], int, str, str]
"""``(name pattern, shape (out, in), count, kind, ggml type)`` of one tensor group."""


@dataclass(frozen=True, kw_only=True)
class GGUFModel:
    """What a GGUF header says, and the model planned from it.

    Attributes:
        file_name: Name of the file read.
        architecture: ``general.architecture`` (``llama``, ``qwen2``, ...).
        weight_bytes: Exact bytes of all tensors in the file [bytes].
        num_parameters: Elements of all tensors.
        bytes_by_type: ``ggml type -> (tensors, elements, bytes)``.
        model: The planned model; its ``spec.params`` carry each tensor's type.
    """

    file_name: str
    architecture: str
    weight_bytes: int
    num_parameters: int
    bytes_by_type: dict[str, tuple[int, int, int]]
    model: CustomModel


@cache
def ggml_storage(type_name: str) -> StorageFormat:
    """The storage format of one ggml tensor type.

    ``bits_per_element = 8 x type_size / block_size``, exact, so
    ``bytes_for(n)`` equals the file's bytes for any whole number of blocks.

    Raises:
        ValueError: an unknown ggml type name.

    Sources: gguf-py ``GGML_QUANT_SIZES`` (block size, type size).
    """
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    try:
        qtype = GGMLQuantizationType[type_name]
        block_size, type_size = GGML_QUANT_SIZES[qtype]
    except KeyError:
        raise ValueError(f"unknown ggml tensor type {type_name!r}") from None
    bits = Fraction(8 * type_size, block_size)
    return StorageFormat(name=f"gguf:{type_name}", bits_per_element=bits,
                         is_float=type_name in ("F32", "F16", "BF16", "F64"),
                         label=f"GGUF {type_name} ({float(bits):g} bits)")


def _kind(name: str, ndim: int) -> str:
    """Planner kind of a GGUF tensor (decides tensor-parallel sharding only)."""
    if name.startswith("token_embd."):
        return "embedding"
    if name.startswith("output."):
        return "lm_head" if ndim > 1 else "norm"
    if name.endswith(".bias"):
        return "bias"
    if "norm" in name:
        return "norm"
    if "ffn_gate_inp" in name:
        return "router"
    return "linear" if ndim > 1 else "other"


def tensor_groups(rows: Sequence[TensorRow]) -> tuple[ParamGroup, ...]:
    """Parameter groups with fixed ggml storage from tensor rows (merged)."""
    groups = tuple(
        ParamGroup(name=name, shape=tuple(shape), count=count, kind=kind,  # type: ignore[arg-type]
                   storage=ggml_storage(qtype))
        for name, shape, count, kind, qtype in rows
    )
    return merge_groups(groups)


def gguf_custom_model(config: dict[str, Any], rows: Sequence[TensorRow], architecture: str, name: str, *,
                      source: str, notes: Sequence[str] = ()) -> CustomModel:
    """The model a GGUF header describes: cache layers from ``config``, weights from ``rows``.

    Used by :func:`read_gguf` and by the share-link decoder, so both give the
    same spec.

    Args:
        config: Llama/Mixtral config dict built from the header.
        rows: Tensor rows (:data:`TensorRow`).
        architecture: ``general.architecture``.
        name: Model id for the plan.
        source: ``gguf:FILE`` or the share link's source.
        notes: Extra caveats.

    Raises:
        ValueError: a bad config key or an unknown ggml type.
    """
    base = read_custom_config(config, name, source=source)
    groups = tensor_groups(rows)
    spec = replace(base.spec, params=groups, model_type=f"gguf:{architecture}", torch_dtype="float16")
    types = sorted({row[4] for row in rows})
    first = (f"GGUF '{architecture}': weights are the file's tensors as stored ({', '.join(types)}); "
             "the weight dtype setting does not change them")
    return replace(base, spec=spec, reading="gguf", tensors=tuple(rows), weight_dtype_hint=None,
                   notes=(first, *notes))


# --------------------------------------------------------------------------
# Header reading: a bounded scan (GGUF spec, ggml docs/gguf.md "File Structure")
# --------------------------------------------------------------------------
MAX_HEADER_BYTES = 256 * 2**20
"""Most header bytes scanned: file start to the end of the tensor infos [bytes] (256 MiB).

Real headers are the vocabulary plus merges, about 10-30 MB (Gemma 3's 262,144
tokens with scores and types: about 7 MB; Llama 3's 128,256 tokens and 280,147
merges: about 8 MB); the app asks for the first 64 MB. Big arrays are seeked
over, so the bytes actually read are far fewer (length prefixes and the few
values the plan uses).
"""

MAX_METADATA_ENTRIES = 16_384
"""Most metadata key/value pairs (``metadata_kv_count``); llama.cpp's files hold 30-60."""

MAX_ARRAY_LENGTH = 1_048_576
"""Most items in one metadata array (2^20).

The longest real arrays are a vocabulary (Gemma 3: 262,144 tokens, the largest
in the catalog) and BPE merges (Llama 3: 280,147); this is 4x the largest
vocabulary.
"""

MAX_ARRAY_ITEMS = 4_194_304
"""Most string and nested-array items walked over all arrays (2^22).

Numeric arrays are skipped by one seek, but each string's length must be read
to find the next one; Llama 3 walks about 410,000 (tokens + merges), Gemma 3
262,144. Bounds the scan's time (about 0.3 us per item).
"""

MAX_ARRAY_DEPTH = 4
"""Most nesting of arrays inside arrays (the spec allows it; llama.cpp's writers never nest)."""

MAX_STRING_BYTES = 64 * 2**20
"""Longest metadata string [bytes] (64 MiB): an embedded ``tokenizer.huggingface.json`` is the longest written."""

MAX_NAME_BYTES = 65_535
"""Longest key or tensor name [bytes] (the spec: keys are at most 2^16 - 1 bytes), and longest string value decoded."""

MAX_TENSOR_COUNT = 65_536
"""Most tensor infos (``tensor_count``); the largest real models list about 1,100 (Llama 3.1 405B: 1,138)."""

MAX_TENSOR_DIMS = 4
"""Most dimensions of one tensor (``GGML_MAX_DIMS``; llama.cpp's ggml/src/gguf.cpp refuses more)."""

MAX_VALUE_ITEMS = 65_536
"""Longest numeric array decoded for the plan (per-layer values such as ``head_count_kv``: one per layer)."""

_ADVICE = ("use a GGUF file written by llama.cpp's convert script (convert_hf_to_gguf.py), "
           "or paste the model's config.json")
_CUT_SHORT = "the header may be cut short: keep more of the file (the header holds the vocabulary, often 10-30 MB)"

_SCALARS: dict[int, str] = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
"""struct codes of the fixed-size ``gguf_metadata_value_type`` values (spec: UINT8 = 0 ... FLOAT64 = 12)."""
_STRING, _ARRAY = 8, 9
_TYPE_NAMES = {0: "UINT8", 1: "INT8", 2: "UINT16", 3: "INT16", 4: "UINT32", 5: "INT32", 6: "FLOAT32", 7: "BOOL",
               8: "STRING", 9: "ARRAY", 10: "UINT64", 11: "INT64", 12: "FLOAT64"}
_CHUNK = 1 << 20
"""Bytes read at a time while walking a string array [bytes]."""


class _HeaderError(ValueError):
    """A malformed header; :func:`read_gguf` words it as "cannot read the GGUF header (...)"."""


class _CutShort(_HeaderError):
    """The header declares more bytes than the file holds."""


class _NotGGUF(_HeaderError):
    """No ``GGUF`` magic at the start."""


def _limit(what: str, declared: int, limit: int) -> ValueError:
    """The one-sentence message for a declared size over a reader limit."""
    return ValueError(f"this GGUF header declares {declared:,} {what}; the reader accepts at most {limit:,}: {_ADVICE}")


@dataclass(frozen=True)
class _Field:
    """Where one metadata value lies: ``kind`` (value type), ``offset`` [bytes], item type and length."""

    kind: int
    offset: int
    item_kind: int = -1
    length: int = 1


@dataclass(frozen=True)
class _Unread:
    """A value the plan never needs whole (a long string, an array of strings); its repr says what it is."""

    what: str

    def __repr__(self) -> str:
        return self.what


class _Scan:
    """Reads a GGUF header within the module's limits, seeking over what the plan does not need."""

    def __init__(self, handle: Any, size: int) -> None:
        self.handle, self.size, self.pos = handle, size, 0
        self.order = "<"
        self.items = 0

    def need(self, count: int, what: str) -> None:
        """Check that ``count`` bytes at the position are inside the header limit and the file."""
        end = self.pos + count
        if end > MAX_HEADER_BYTES:
            raise _limit(f"bytes of header (it runs to byte {end:,} in {what})", end, MAX_HEADER_BYTES)
        if end > self.size:
            raise _CutShort(f"{what} needs {count:,} bytes at byte {self.pos:,} but the file ends at byte "
                            f"{self.size:,}")

    def read(self, count: int, what: str) -> bytes:
        """The next ``count`` bytes (checked by :meth:`need`; only small items are read)."""
        self.need(count, what)
        self.pos += count
        return self.handle.read(count)

    def skip(self, count: int, what: str) -> None:
        """Seek over the next ``count`` bytes (checked by :meth:`need`) without reading them."""
        self.need(count, what)
        self.pos += count
        self.handle.seek(self.pos)

    def unpack(self, code: str, what: str) -> Any:
        """The next fixed-size value, ``code`` a struct code in the file's byte order."""
        fmt = struct.Struct(self.order + code)
        return fmt.unpack(self.read(fmt.size, what))[0]

    def string(self, what: str, limit: int) -> str:
        """A ``gguf_string_t`` of at most ``limit`` bytes, decoded."""
        length = self.unpack("Q", what)
        if length > limit:
            raise _limit(f"bytes in the {what}", length, limit)
        return self.read(length, what).decode("utf-8", errors="replace")

    def value(self, kind: int, key: str, depth: int = 0) -> _Field:
        """Check and seek over one metadata value; return where it lies.

        Args:
            kind: Its ``gguf_metadata_value_type``.
            key: Its key, for messages.
            depth: Arrays it lies inside.

        Returns:
            Its :class:`_Field`; an array's offset is its first item's [bytes].

        Raises:
            ValueError: a length over a limit, the file ending inside it, or an unknown type.
        """
        offset = self.pos
        code = _SCALARS.get(kind)
        if code is not None:
            self.skip(struct.calcsize(code), key)
            return _Field(kind, offset)
        if kind == _STRING:
            length = self.unpack("Q", key)
            if length > MAX_STRING_BYTES:
                raise _limit(f"bytes in the string {key}", length, MAX_STRING_BYTES)
            self.skip(length, key)
            return _Field(kind, offset + 8, length=length)
        if kind != _ARRAY:
            raise _HeaderError(f"unknown metadata value type {kind} for {key}")
        if depth >= MAX_ARRAY_DEPTH:
            raise _limit(f"levels of nested arrays in {key}", depth + 1, MAX_ARRAY_DEPTH)
        item_kind = self.unpack("I", key)
        length = self.unpack("Q", key)
        if length > MAX_ARRAY_LENGTH:
            raise _limit(f"entries in {key}", length, MAX_ARRAY_LENGTH)
        code = _SCALARS.get(item_kind)
        if code is not None:
            self.skip(length * struct.calcsize(code), key)
        elif item_kind in (_STRING, _ARRAY):
            self.items += length
            if self.items > MAX_ARRAY_ITEMS:
                raise _limit(f"string or array items in all (at {key})", self.items, MAX_ARRAY_ITEMS)
            smallest = 8 if item_kind == _STRING else 12  # an empty string / array [bytes]
            self.need(length * smallest, f"{key} ({length:,} items of at least {smallest} bytes)")
            if item_kind == _STRING:
                self.skip_strings(length, key)
            else:
                for _ in range(length):
                    self.value(_ARRAY, key, depth + 1)
        else:
            raise _HeaderError(f"unknown array item type {item_kind} in {key}")
        return _Field(kind, offset + 12, item_kind, length)  # items follow the u32 type and u64 length

    def skip_strings(self, count: int, key: str) -> None:
        """Seek over ``count`` strings, reading only their u64 length prefixes, a chunk at a time."""
        prefix = struct.Struct(self.order + "Q")
        left = count
        while left:
            self.need(8, key)
            start = self.pos
            avail = min(_CHUNK, self.size - start, MAX_HEADER_BYTES - start)
            buf = self.handle.read(avail)
            off = 0
            while left and off + 8 <= avail:
                (length,) = prefix.unpack_from(buf, off)
                if length > MAX_STRING_BYTES:
                    raise _limit(f"bytes in one string of {key}", length, MAX_STRING_BYTES)
                off += 8 + length
                left -= 1
            self.handle.seek(start)
            self.skip(off, key)

    def tensor(self, index: int) -> tuple[str, str, tuple[int, ...]]:
        """One ``gguf_tensor_info_t``: (name, ggml type name, dims with ne0 first)."""
        from gguf import GGMLQuantizationType

        name = self.string(f"name of tensor {index:,}", MAX_NAME_BYTES)
        n_dims = self.unpack("I", f"tensor {name}")
        if n_dims > MAX_TENSOR_DIMS:
            raise _limit(f"dimensions for tensor {name}", n_dims, MAX_TENSOR_DIMS)
        dims = struct.unpack(f"{self.order}{n_dims}Q", self.read(8 * n_dims, f"tensor {name}"))
        raw_type = self.unpack("I", f"tensor {name}")
        self.skip(8, f"tensor {name}")  # offset of the data, not needed
        try:
            type_name = GGMLQuantizationType(raw_type).name
        except ValueError:
            raise _HeaderError(f"tensor {name} has unknown ggml type {raw_type}") from None
        numel = 1
        for d in dims:
            numel *= d
        if numel > 2**63 - 1:
            raise _limit(f"elements in tensor {name}", numel, 2**63 - 1)
        return name, type_name, tuple(dims)


@dataclass(frozen=True)
class GGUFHeader:
    """What :func:`scan_header` found.

    Attributes:
        path: The file scanned (values are read from it on demand).
        order: struct byte order of the file, ``<`` or ``>``.
        fields: Key -> where its value lies; ``key in fields`` tests presence.
        tensor_infos: ``(name, ggml type name, dims with ne0 first)`` per tensor, in file order.
    """

    path: Path
    order: str
    fields: dict[str, _Field]
    tensor_infos: list[tuple[str, str, tuple[int, ...]]]

    def value(self, key: str) -> Any:
        """The decoded value of one metadata key, read from the file now.

        Scalars and strings up to :data:`MAX_NAME_BYTES` come back as Python
        values, numeric arrays up to :data:`MAX_VALUE_ITEMS` as lists; longer
        strings, string arrays and nested arrays as an :class:`_Unread`
        describing them (the plan never needs them).

        Args:
            key: The metadata key.

        Returns:
            The value, or None when the header has no such key.
        """
        field = self.fields.get(key)
        if field is None:
            return None
        code = _SCALARS.get(field.kind)
        if field.kind == _STRING:
            if field.length > MAX_NAME_BYTES:
                return _Unread(f"a string of {field.length:,} bytes")
            return self._read(field.offset, field.length).decode("utf-8", errors="replace")
        if code is not None:
            return struct.unpack(self.order + code, self._read(field.offset, struct.calcsize(code)))[0]
        code = _SCALARS.get(field.item_kind)
        if code is None or field.length > MAX_VALUE_ITEMS:
            return _Unread(f"an array of {field.length:,} {_TYPE_NAMES.get(field.item_kind, '?')} values")
        data = self._read(field.offset, field.length * struct.calcsize(code))
        return list(struct.unpack(f"{self.order}{field.length}{code}", data))

    def _read(self, offset: int, count: int) -> bytes:
        """``count`` bytes at ``offset`` [bytes] (bounded by the callers' limits)."""
        with self.path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(count)


def scan_header(path: Path) -> GGUFHeader:
    """Scan a GGUF header within the module's limits, without materializing its arrays.

    Layout (GGUF spec, ggml docs/gguf.md "File Structure"; gguf-py
    ``GGUFReader``): ``GGUF`` magic, u32 version (2 or 3), u64 tensor count, u64
    metadata count, the key/value pairs (string key, u32 value type, value;
    arrays are u32 item type, u64 length, items), then per tensor its name, u32
    n_dims, u64 dims (ne0 first), u32 ggml type and u64 data offset. A file of
    the other byte order is read as gguf-py does (version low half zero).

    Every declared count and length is checked against a module limit
    (``MAX_*``) and against the bytes the file holds before anything is read,
    and big arrays (``tokenizer.ggml.tokens`` ...) are seeked over, so memory
    stays a few MB and time is bounded whatever the header claims.

    Args:
        path: A ``.gguf`` file or a prefix holding its whole header.

    Returns:
        Where each metadata value lies, and the ``(name, ggml type, dims)`` of each tensor.

    Raises:
        ValueError: a declared size over a limit (naming the key and the limit),
            a header cut short, or a malformed header.
        OSError: the file cannot be opened.
    """
    with path.open("rb", buffering=1 << 16) as handle:
        scan = _Scan(handle, os.fstat(handle.fileno()).st_size)
        if scan.size < 4 or handle.read(4) != b"GGUF":
            raise _NotGGUF("no 'GGUF' magic at the start")
        scan.pos = 4
        raw = scan.read(4, "version")
        version = struct.unpack("<I", raw)[0]
        if version & 0xFFFF == 0:  # written on a host of the other byte order (gguf-py's test)
            scan.order = ">"
            version = struct.unpack(">I", raw)[0]
        if version not in (2, 3):
            raise _HeaderError(f"GGUF version {version} is not supported (versions 2 and 3 are)")
        tensor_count = scan.unpack("Q", "tensor count")
        kv_count = scan.unpack("Q", "metadata count")
        if kv_count > MAX_METADATA_ENTRIES:
            raise _limit("metadata entries", kv_count, MAX_METADATA_ENTRIES)
        if tensor_count > MAX_TENSOR_COUNT:
            raise _limit("tensors", tensor_count, MAX_TENSOR_COUNT)
        fields: dict[str, _Field] = {}
        for index in range(kv_count):
            key = scan.string(f"key of metadata entry {index:,}", MAX_NAME_BYTES)
            if key in fields:
                raise _HeaderError(f"the key {key} appears twice")
            fields[key] = scan.value(scan.unpack("I", key), key)
        tensors = [scan.tensor(index) for index in range(tensor_count)]
        if len({name for name, _, _ in tensors}) != len(tensors):
            raise _HeaderError("a tensor name appears twice")
        return GGUFHeader(path=path, order=scan.order, fields=fields, tensor_infos=tensors)


def _value(reader: GGUFHeader, key: str) -> Any:
    return reader.value(key)


def _int(reader: Any, key: str, *, required: bool = True) -> int | None:
    value = _value(reader, key)
    if isinstance(value, list):
        distinct = set(value)
        if len(distinct) != 1:
            raise ValueError(f"GGUF key '{key}' differs per layer ({sorted(distinct)[:6]}); per-layer shapes "
                             "are not supported here: plan the model from its config.json")
        value = distinct.pop()
    if value is None:
        if required:
            raise ValueError(f"GGUF header has no '{key}'; expected a positive integer")
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"GGUF key '{key}' is {value!r}; expected a positive integer")
    return value


def _layer_types(reader: Any, arch: str, num_layers: int) -> tuple[list[str] | None, int | None, list[str]]:
    """(layer_types, sliding window, notes) following llama.cpp (design note 1)."""
    window = _int(reader, f"{arch}.attention.sliding_window", required=False)
    pattern = _value(reader, f"{arch}.attention.sliding_window_pattern")
    if window is None:
        return None, None, []
    if isinstance(pattern, list) and len(pattern) == num_layers:
        flags = [bool(p) for p in pattern]
    else:
        period = pattern if isinstance(pattern, int) and pattern > 0 else SWA_PATTERNS.get(arch)
        if period is None:
            return None, None, [(f"the header states a {window:,}-token sliding window, but llama.cpp runs "
                                 f"'{arch}' with full attention; priced as full attention")]
        flags = [i % period < period - 1 for i in range(num_layers)]
    types = ["sliding_attention" if f else "full_attention" for f in flags]
    return types, window, []


def _config_from_header(reader: Any, arch: str, tensors: list[tuple[str, str, tuple[int, ...]]]) -> tuple[
        dict[str, Any], list[str]]:
    """A Llama/Mixtral config dict from the header keys (module docstring)."""
    for suffix, what in UNSUPPORTED_KEYS.items():
        if f"{arch}.{suffix}" in reader.fields:
            raise ValueError(f"GGUF architecture '{arch}' uses {what}; this reader prices only K/V attention "
                             "caches: plan the model from its config.json instead")
    shapes = {name: dims for name, _, dims in tensors}
    hidden = _int(reader, f"{arch}.embedding_length")
    heads = _int(reader, f"{arch}.attention.head_count")
    layers = _int(reader, f"{arch}.block_count")
    kv_heads = _int(reader, f"{arch}.attention.head_count_kv", required=False) or heads
    key_length = _int(reader, f"{arch}.attention.key_length", required=False)
    value_length = _int(reader, f"{arch}.attention.value_length", required=False)
    if key_length and value_length and key_length != value_length:
        raise ValueError(f"GGUF keys '{arch}.attention.key_length' ({key_length}) and 'value_length' "
                         f"({value_length}) differ; such caches are not priced here")
    embd = shapes.get("token_embd.weight")
    # GGUF dims list ne0 first: token_embd is (n_embd, n_vocab), ffn_up (n_embd, n_ff).
    vocab = _int(reader, f"{arch}.vocab_size", required=False) or (embd[1] if embd and len(embd) == 2 else None)
    if not vocab:
        raise ValueError(f"GGUF header has no vocabulary size ('{arch}.vocab_size' or a token_embd tensor)")
    ffn = _int(reader, f"{arch}.feed_forward_length", required=False)
    if ffn is None:
        up = shapes.get("blk.0.ffn_up.weight")
        ffn = up[1] if up and len(up) == 2 else 4 * hidden
    config: dict[str, Any] = {
        "model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": ffn,
        "vocab_size": vocab, "head_dim": key_length or hidden // heads, "torch_dtype": "float16",
        "tie_word_embeddings": "output.weight" not in shapes,
    }
    context = _int(reader, f"{arch}.context_length", required=False)
    if context:
        config["max_position_embeddings"] = context
    experts = _int(reader, f"{arch}.expert_count", required=False)
    if experts and experts > 1:
        config.update(model_type="mixtral", num_local_experts=experts,
                      num_experts_per_tok=_int(reader, f"{arch}.expert_used_count"))
        expert_ffn = _int(reader, f"{arch}.expert_feed_forward_length", required=False)
        if expert_ffn:
            config["intermediate_size"] = expert_ffn
    layer_types, window, notes = _layer_types(reader, arch, layers)
    if layer_types is not None:
        config["layer_types"] = layer_types
        config["sliding_window"] = window
    return config, notes


def read_gguf(path: str | Path, *, name: str | None = None) -> GGUFModel:
    """Read a GGUF header and plan the model it describes.

    Args:
        path: A ``.gguf`` file, or a prefix of one that holds the whole header.
        name: Model id for the plan; default ``general.name`` or the file stem.

    Returns:
        The :class:`GGUFModel`; ``model.spec`` has exact weight bytes.

    Raises:
        ValueError: not a GGUF file, a header cut short, a declared count or
            length over a reader limit (naming the key, the value and the
            limit: :func:`scan_header`), a missing key (named), or an
            architecture whose cache is not priced here.

    Example:
        ``read_gguf("Meta-Llama-3-8B-Instruct.Q4_K_M.gguf").weight_bytes``
    """
    path = Path(path)
    try:
        reader = scan_header(path)
    except _CutShort as exc:
        raise ValueError(f"{path.name}: cannot read the GGUF header ({exc}); {_CUT_SHORT}") from None
    except _NotGGUF:
        raise ValueError(f"{path.name}: not a GGUF file (no 'GGUF' magic at the start)") from None
    except _HeaderError as exc:
        raise ValueError(f"{path.name}: cannot read the GGUF header ({exc})") from None
    except ValueError as exc:  # a declared size over a limit: already one sentence
        raise ValueError(f"{path.name}: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{path.name}: cannot read the GGUF header ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None
    arch = _value(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise ValueError(f"{path.name}: GGUF header has no 'general.architecture'")
    tensors = list(reader.tensor_infos)
    if not tensors:
        raise ValueError(f"{path.name}: GGUF header lists no tensors (a vocabulary-only file?)")
    try:
        config, notes = _config_from_header(reader, arch, tensors)
    except ValueError as exc:
        raise ValueError(f"{path.name}: {exc}") from None
    default_name = _value(reader, "general.name")
    model_name = clean_name(name or (default_name if isinstance(default_name, str) and default_name.strip()
                                     else path.stem))
    rows, by_type = _rows(tensors)
    model = gguf_custom_model(config, rows, arch, model_name, source=f"gguf:{path.name}", notes=notes)
    return GGUFModel(
        file_name=path.name, architecture=arch,
        weight_bytes=sum(b for _, _, b in by_type.values()),
        num_parameters=sum(n for _, n, _ in by_type.values()),
        bytes_by_type=by_type, model=model,
    )


_LAYER = re.compile(r"^blk\.\d+\.")


def _rows(tensors: list[tuple[str, str, tuple[int, ...]]]) -> tuple[list[TensorRow], dict[str, tuple[int, int, int]]]:
    """Tensor rows merged over layers, and a per-type summary.

    ``blk.N.attn_q.weight`` becomes ``layers.*.attn_q.weight``: the catalog's
    per-layer naming, which pipeline-parallel stage splits rely on.
    """
    counts: dict[tuple[str, tuple[int, ...], str, str], int] = {}
    by_type: dict[str, list[int]] = {}
    for name, qtype, dims in tensors:
        shape = tuple(reversed(dims))  # GGUF lists ne0 (the contiguous dim) first; planner shapes are (out, in)
        numel = 1
        for d in shape:
            numel *= d
        nbytes = ggml_storage(qtype).bytes_for(numel)
        stats = by_type.setdefault(qtype, [0, 0, 0])
        stats[0] += 1
        stats[1] += numel
        stats[2] += nbytes
        key = (_LAYER.sub("layers.*.", name), shape, _kind(name, len(shape)), qtype)
        counts[key] = counts.get(key, 0) + 1
    rows = [(n, s, c, k, q) for (n, s, k, q), c in counts.items()]
    return rows, {t: (a, b, c) for t, (a, b, c) in by_type.items()}
