"""The bounded scan of a GGUF file's header: metadata and tensor infos, never the tensor data.

Every count, length and nesting the file declares is checked against a named limit before anything is
allocated or built from it, and the message names the key, the value and the limit; a header cut short,
a file that is not GGUF and a malformed field are told apart (:class:`_CutShort`, :class:`_NotGGUF`,
:class:`_HeaderError`). :mod:`model_catalog.gguf_reader` turns the scanned header into a model.

Source: the GGUF format, ggml ``docs/gguf.md`` ("File Structure": magic, version, tensor and metadata
counts, typed key/value pairs with length-prefixed strings and arrays, then tensor infos).
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model_catalog.config_bounds import SIZE_LIMITS
from model_catalog.custom import MAX_NAME_CHARS
from model_catalog.share_codec import MAX_CODE_CHARS, MAX_JSON_BYTES
from planner.text import ECHO_CHARS, plain_or_quoted, quote

MAX_HEADER_BYTES = 256 * 2**20
"""Most header bytes scanned: file start to the end of the tensor infos [bytes] (256 MiB).

Real headers are the vocabulary plus merges, about 10-30 MB (Gemma 3's 262,144
tokens with scores and types: about 7 MB; Llama 3's 128,256 tokens and 280,147
merges: about 8 MB); the app asks for the first 32 MB. Big arrays are seeked
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
"""Most elements over all metadata arrays together, items of nested arrays included (2^22).

Numeric arrays are skipped by one seek, but each string's length must be read
to find the next one (about 0.2 us per string: 4 million empty strings scan in
0.7 s). The largest real totals are under 800,000: Gemma 3's 262,144 tokens,
scores and types (786,432), Llama 3's 128,256 tokens and types plus 280,147
merges (536,659); this is 5x that.
"""

MAX_ARRAY_DEPTH = 4
"""Most nesting of arrays inside arrays (the spec allows it; llama.cpp's writers never nest)."""

MAX_NESTED_ARRAYS = 65_536
"""Most arrays lying inside other arrays, over the whole header (2^16).

Each one is a Python call of about 4 us (type, length, checks), some 20 times
a string's cost, so :data:`MAX_ARRAY_ITEMS` alone let a 50 MB header of 4
million empty nested arrays cost 12 s. The GGUF spec allows nesting (ggml
docs/gguf.md, ``gguf_metadata_value_t``), but neither llama.cpp's convert
scripts nor its C writer emit it; 65,536 scan in about 0.3 s.
"""

MAX_STRING_BYTES = 64 * 2**20
"""Longest metadata string [bytes] (64 MiB): an embedded ``tokenizer.huggingface.json`` is the longest written."""

MAX_NAME_BYTES = 65_535
"""Longest metadata key [bytes] (GGUF spec, ``gguf_metadata_kv_t``: at most 2^16 - 1), and longest string decoded."""

MAX_TENSOR_NAME_BYTES = 63
"""Longest tensor name [bytes]: llama.cpp's loader refuses a name of ``GGML_MAX_NAME`` (64) bytes or more.

Sources: ggml/include/ggml.h (``GGML_MAX_NAME 64``), ggml/src/gguf.cpp
(``tensor name ... is too long``). Real names are under 40 bytes
(``blk.60.ffn_gate_shexp.weight``).
"""

MAX_TENSOR_COUNT = 16_384
"""Most tensor infos (``tensor_count``): 16 per layer for the 1,024-layer limit of ``SIZE_LIMITS``.

The largest real GGUF files list about 1,000-1,200 tensors: DeepSeek-V3/R1
(61 layers, experts merged into ``*_exps`` tensors) 1,025, or 1,086 with split
MLA tensors (``split.tensors.count`` and loader logs in ik_llama.cpp pull
requests #259 and #394); Llama 3.1 405B 1,138 (126 layers x 9 + 4); old
files with one tensor per expert, such as Mixtral 8x22B, about 1,700. 16,384
is 14x the largest and scans in about 0.4 s.
"""

MAX_TENSOR_DIMS = 4
"""Most dimensions of one tensor (``GGML_MAX_DIMS``; llama.cpp's ggml/src/gguf.cpp refuses more)."""

MAX_VALUE_ITEMS = 65_536
"""Longest numeric array decoded by :meth:`GGUFHeader.value`; per-layer arrays must also fit :data:`MAX_LAYERS`."""

SIZE_KEYS: dict[str, str] = {
    "block_count": "num_hidden_layers",
    "embedding_length": "hidden_size",
    "feed_forward_length": "intermediate_size",
    "expert_feed_forward_length": "moe_intermediate_size",
    "attention.head_count": "num_attention_heads",
    "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim",
    "attention.value_length": "head_dim",
    "vocab_size": "vocab_size",
    "expert_count": "num_local_experts",
    "expert_used_count": "num_local_experts",
    "context_length": "max_position_embeddings",
    "attention.sliding_window": "sliding_window",
}
"""Header key (after ``{arch}.``) -> the config.json key whose ``SIZE_LIMITS`` bound it obeys.

The same bounds as a pasted config.json (model_catalog/custom.py), checked as
each value is read, before anything is built from it: ``block_count`` 2^27 made
a per-layer list of 134 million entries (about 20 s, 2.1 GB) before the config
check ran. Key names: GGUF spec (ggml docs/gguf.md, "LLM") and gguf-py ``Keys.LLM``.
"""

MAX_LAYERS = SIZE_LIMITS["num_hidden_layers"]
"""Most layers (1,024, the config.json bound): also the longest per-layer array and sliding-window period [layers]."""

MAX_CONTEXT_TOKENS = 1 << 27
"""Largest ``context_length`` and ``attention.sliding_window`` [tokens] (2^27 = 134,217,728), when ``SIZE_LIMITS``
bounds neither ``max_position_embeddings`` nor ``sliding_window``.

12x the longest published context (Llama 4 Scout: 10,485,760 tokens) and 8x
the planner's context search limit (``planner.budget.MAX_CONTEXT_SEARCH_LIMIT``,
2^24).
"""

MAX_ARCHITECTURE_CHARS = 32
"""Longest ``general.architecture`` [characters].

The GGUF spec (ggml docs/gguf.md, "General") allows lowercase ASCII
``[a-z0-9]``; llama.cpp adds ``-`` and ``_`` (``command-r``, ``gpt-oss``,
``ernie4_5``) and its longest names are about 16 characters
(``wavtokenizer-dec``, src/llama-arch.cpp). A share code carries at most 64
(model_catalog/share_codec.py).
"""

MAX_HEADER_NAME_BYTES = 4 * MAX_NAME_CHARS
"""Bytes of ``general.name`` read [bytes]: ``MAX_NAME_CHARS`` (100) characters of up to 4 UTF-8 bytes each."""

SHARE_RESERVE_CHARS = 4_000
"""Share-code characters left to everything but the tensor rows [characters].

A code also carries the name (at most 100 characters), the source (at most
300) and the minimal config (5-20 keys; ``layer_types``, at most 1,024
entries, compresses to a few hundred): about 200 characters for the test
model once compressed; 4,000 leaves room for long names and configs.
"""

SHARE_RESERVE_JSON_BYTES = 64 * 1024
"""Decompressed share-payload bytes left to everything but the tensor rows [bytes] (64 KiB).

The same parts uncompressed: name and source 400 bytes, a config of 20 keys
about 1 KB, plus ``layer_types`` at most 1,024 x 20 bytes = 20 KB.
"""

MAX_TENSOR_CODE_CHARS = MAX_CODE_CHARS - SHARE_RESERVE_CHARS
"""Longest share code of the tensor rows alone [characters], so the model's own link fits ``MAX_CODE_CHARS``."""

MAX_TENSOR_JSON_BYTES = MAX_JSON_BYTES - SHARE_RESERVE_JSON_BYTES
"""Longest JSON of the tensor rows alone [bytes], so the link fits the share code's ``MAX_JSON_BYTES``."""

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


def _shown(text: str) -> str:
    """A key or name from the header for a message: as is when short and printable, else quoted and cut.

    At most ``ECHO_CHARS`` (60) characters of it appear (:func:`planner.text.quote`).
    """
    return plain_or_quoted(text, ECHO_CHARS)


def _printable(text: str, what: str) -> str:
    """``text`` unchanged, or a ValueError when it holds control or other non-printable characters."""
    if not text.isprintable():
        raise ValueError(f"the {what} {quote(text)} holds control or other non-printable characters; "
                         f"names in a GGUF header are plain text: {_ADVICE}")
    return text


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
        self.nested = 0

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
        """A ``gguf_string_t`` of at most ``limit`` bytes, decoded (the length is checked before any read)."""
        length = self.unpack("Q", what)
        if length > limit:
            raise _limit(f"bytes in the {what}", length, limit)
        return self.read(length, what).decode("utf-8", errors="replace")

    def value(self, kind: int, key: str, depth: int = 0) -> _Field:
        """Check and seek over one metadata value; return where it lies.

        Args:
            kind: Its ``gguf_metadata_value_type``.
            key: Its key as messages show it (:func:`_shown`: at most 60 characters of it).
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
        self.items += length
        if self.items > MAX_ARRAY_ITEMS:
            raise _limit(f"array elements over all its arrays, nested ones included (the total passes the limit "
                         f"at {key})", self.items, MAX_ARRAY_ITEMS)
        code = _SCALARS.get(item_kind)
        if code is not None:
            self.skip(length * struct.calcsize(code), key)
        elif item_kind in (_STRING, _ARRAY):
            smallest = 8 if item_kind == _STRING else 12  # an empty string / array [bytes]
            self.need(length * smallest, f"{key} ({length:,} items of at least {smallest} bytes)")
            if item_kind == _STRING:
                self.skip_strings(length, key)
            else:
                self.nested += length
                if self.nested > MAX_NESTED_ARRAYS:
                    raise _limit(f"arrays inside arrays over the whole header (the total passes the limit at "
                                 f"{key})", self.nested, MAX_NESTED_ARRAYS)
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

        what = f"name of tensor {index:,}"
        name = _printable(self.string(what, MAX_TENSOR_NAME_BYTES), what)
        shown = _shown(name)
        n_dims = self.unpack("I", f"tensor {shown}")
        if n_dims > MAX_TENSOR_DIMS:
            raise _limit(f"dimensions for tensor {shown}", n_dims, MAX_TENSOR_DIMS)
        dims = struct.unpack(f"{self.order}{n_dims}Q", self.read(8 * n_dims, f"tensor {shown}"))
        raw_type = self.unpack("I", f"tensor {shown}")
        self.skip(8, f"tensor {shown}")  # offset of the data, not needed
        try:
            type_name = GGMLQuantizationType(raw_type).name
        except ValueError:
            raise _HeaderError(f"tensor {shown} has unknown ggml type {raw_type}") from None
        if not dims or 0 in dims:  # ggml tensors have 1-4 dims of at least 1 (a share code refuses others)
            raise _HeaderError(f"tensor {shown} has shape {list(dims)}; a tensor needs 1-{MAX_TENSOR_DIMS} "
                               "dimensions of at least 1")
        numel = 1
        for d in dims:
            numel *= d
        if numel > 2**63 - 1:
            raise _limit(f"elements in tensor {shown}", numel, 2**63 - 1)
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
            raise _limit("tensors (the largest real models list about 1,100)", tensor_count, MAX_TENSOR_COUNT)
        fields: dict[str, _Field] = {}
        for index in range(kv_count):
            key = _printable(scan.string(f"key of metadata entry {index:,}", MAX_NAME_BYTES),
                             f"key of metadata entry {index:,}")
            shown = _shown(key)
            if key in fields:
                raise _HeaderError(f"the key {shown} appears twice")
            fields[key] = scan.value(scan.unpack("I", shown), shown)
        tensors = [scan.tensor(index) for index in range(tensor_count)]
        if len({name for name, _, _ in tensors}) != len(tensors):
            raise _HeaderError("a tensor name appears twice")
        return GGUFHeader(path=path, order=scan.order, fields=fields, tensor_infos=tensors)
