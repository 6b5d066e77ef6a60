"""A local ``.gguf`` file -> a :class:`~planner.model.ModelSpec` with exact weight bytes.

llama.cpp users load a GGUF file, not a config.json. Its header names the
architecture (``general.architecture``), the hyper-parameters
(``{arch}.block_count``, ``{arch}.attention.head_count_kv`` ...) and every
tensor with its shape and ggml type (``Q4_K``, ``Q6_K``, ``F32`` ...). This
module reads only that header and never touches the tensor data: a header
prefix of the file (``head -c 32M model.gguf > head.gguf``) is enough.

Bounded reading: the header is scanned by :func:`scan_header`, not by gguf-py's
``GGUFReader``, which builds every array item in memory (a 69-byte header
claiming 2^22 int32 items grew a process to 4 GB; a real 262,144-token
vocabulary cost about 900 MB and 10 s). Every declared count and length is
checked against a limit (``MAX_*`` below: metadata entries, array length,
elements over all arrays, nested arrays, string length, tensor count and name
length, header bytes) and against the bytes the file holds before it is read;
arrays are seeked over, and only the few values the plan uses are decoded.
Each hyper-parameter (``block_count``, head and expert counts, widths, vocabulary,
context, per-layer arrays and window patterns) is checked against the bound a
config.json key gets (``SIZE_LIMITS`` of model_catalog/custom.py, mapped by
:data:`SIZE_KEYS`) as it is read, before anything is built from it. Keys and
tensor names must be printable; ``general.name`` is read in part, stripped of
non-printable characters and cut. A size over a limit is one sentence naming
the key, the value and the limit, quoting at most 60 characters of the file's
text. The tensor rows must fit the model's own share link
(model_catalog/share_codec.py). The CLI's ``--gguf`` and the app both call
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

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

from model_catalog.config_bounds import SIZE_LIMITS
from model_catalog.custom import MAX_NAME_CHARS, CustomModel, clean_name, read_custom_config
from model_catalog.gguf_header import (
    _ADVICE,
    _ARRAY,
    _CUT_SHORT,
    _STRING,
    MAX_ARCHITECTURE_CHARS,
    MAX_CONTEXT_TOKENS,
    MAX_HEADER_NAME_BYTES,
    MAX_LAYERS,
    MAX_TENSOR_CODE_CHARS,
    MAX_TENSOR_JSON_BYTES,
    SIZE_KEYS,
    GGUFHeader,
    _CutShort,
    _HeaderError,
    _NotGGUF,
    scan_header,
)
from model_catalog.share_codec import MAX_TENSOR_ROWS, pack
from planner.model.dtypes import StorageFormat
from planner.model.params import ParamGroup, merge_groups
from planner.text import plain_or_quoted, quote, reason

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
        raise ValueError(f"unknown ggml tensor type {quote(type_name)}") from None
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


def _value(reader: GGUFHeader, key: str) -> Any:
    return reader.value(key)


def _bounded(what: str, value: int, limit: int, bound: str) -> int:
    """``value`` when at most ``limit``, else a ValueError naming ``what``, the value, the limit and its source."""
    if value > limit:
        raise ValueError(f"GGUF {what} is {value:,}; the reader accepts at most {limit:,} ({bound}, far above any "
                         f"published model): {_ADVICE}")
    return value


def _limit_of(suffix: str) -> tuple[int, str]:
    """``(limit, its source)`` for the header key ``{arch}.{suffix}`` (:data:`SIZE_KEYS`; a key in tokens that
    ``SIZE_LIMITS`` does not bound gets :data:`MAX_CONTEXT_TOKENS`)."""
    name = SIZE_KEYS[suffix]
    if name in SIZE_LIMITS:
        return SIZE_LIMITS[name], f"the bound on config.json's {name}"
    return MAX_CONTEXT_TOKENS, "tokens"


def _per_layer_length(reader: GGUFHeader, key: str) -> None:
    """Refuse an array value of ``key`` longer than :data:`MAX_LAYERS` before it is decoded."""
    field = reader.fields.get(key)
    if field is not None and field.kind == _ARRAY and field.length > MAX_LAYERS:
        raise ValueError(f"GGUF key '{key}' is an array of {field.length:,} values; a per-layer array holds "
                         f"one per layer and the reader accepts at most {MAX_LAYERS:,} layers (the bound on "
                         f"config.json's num_hidden_layers): {_ADVICE}")


def _int(reader: GGUFHeader, arch: str, suffix: str, *, required: bool = True) -> int | None:
    """The positive integer ``{arch}.{suffix}``, checked against its limit (:func:`_limit_of`) as it is read.

    A per-layer array (one value per layer) is accepted when all its values are
    equal; its length is checked (:data:`MAX_LAYERS`) before it is decoded.

    Raises:
        ValueError: missing (when required), not a positive integer, over its
            limit, or a per-layer array too long or with differing values.
    """
    key = f"{arch}.{suffix}"
    _per_layer_length(reader, key)
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
        shown = quote(value) if isinstance(value, str) else repr(value)
        raise ValueError(f"GGUF key '{key}' is {shown}; expected a positive integer")
    return _bounded(f"key '{key}'", value, *_limit_of(suffix))


def _layer_types(reader: GGUFHeader, arch: str, num_layers: int) -> tuple[list[str] | None, int | None, list[str]]:
    """(layer_types, sliding window, notes) following llama.cpp (design note 1).

    ``num_layers`` is at most :data:`MAX_LAYERS` (checked by the caller); the
    window pattern, a per-layer array or a period [layers], is checked against
    the same limit before it is decoded or used.
    """
    window = _int(reader, arch, "attention.sliding_window", required=False)
    if window is None:
        return None, None, []
    pattern_key = f"{arch}.attention.sliding_window_pattern"
    _per_layer_length(reader, pattern_key)
    pattern = _value(reader, pattern_key)
    if isinstance(pattern, list) and len(pattern) == num_layers:
        flags = [bool(p) for p in pattern]
    else:
        if isinstance(pattern, int) and not isinstance(pattern, bool):
            _bounded(f"key '{pattern_key}' (a period in layers)", pattern, MAX_LAYERS,
                     "the bound on config.json's num_hidden_layers")
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
    hidden = _int(reader, arch, "embedding_length")
    heads = _int(reader, arch, "attention.head_count")
    layers = _int(reader, arch, "block_count")
    kv_heads = _int(reader, arch, "attention.head_count_kv", required=False) or heads
    key_length = _int(reader, arch, "attention.key_length", required=False)
    value_length = _int(reader, arch, "attention.value_length", required=False)
    if key_length and value_length and key_length != value_length:
        raise ValueError(f"GGUF keys '{arch}.attention.key_length' ({key_length}) and 'value_length' "
                         f"({value_length}) differ; such caches are not priced here")
    embd = shapes.get("token_embd.weight")
    # GGUF dims list ne0 first: token_embd is (n_embd, n_vocab), ffn_up (n_embd, n_ff).
    vocab = _int(reader, arch, "vocab_size", required=False)
    if vocab is None and embd and len(embd) == 2:
        vocab = _bounded("token_embd.weight's vocabulary dimension", embd[1], *_limit_of("vocab_size"))
    if not vocab:
        raise ValueError(f"GGUF header has no vocabulary size ('{arch}.vocab_size' or a token_embd tensor)")
    ffn = _int(reader, arch, "feed_forward_length", required=False)
    if ffn is None:
        up = shapes.get("blk.0.ffn_up.weight")
        ffn = (_bounded("blk.0.ffn_up.weight's FFN dimension", up[1], *_limit_of("feed_forward_length"))
               if up and len(up) == 2 else 4 * hidden)
    config: dict[str, Any] = {
        "model_type": "llama", "hidden_size": hidden, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads, "intermediate_size": ffn,
        "vocab_size": vocab, "head_dim": key_length or hidden // heads, "torch_dtype": "float16",
        "tie_word_embeddings": "output.weight" not in shapes,
    }
    context = _int(reader, arch, "context_length", required=False)
    if context:
        config["max_position_embeddings"] = context
    experts = _int(reader, arch, "expert_count", required=False)
    if experts and experts > 1:
        config.update(model_type="mixtral", num_local_experts=experts,
                      num_experts_per_tok=_int(reader, arch, "expert_used_count"))
        expert_ffn = _int(reader, arch, "expert_feed_forward_length", required=False)
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
    file = plain_or_quoted(path.name)  # at most 60 characters of the name in a message (planner/text.py)
    try:
        reader = scan_header(path)
    except _CutShort as exc:
        raise ValueError(f"{file}: cannot read the GGUF header ({exc}); {_CUT_SHORT}") from None
    except _NotGGUF:
        raise ValueError(f"{file}: not a GGUF file (no 'GGUF' magic at the start)") from None
    except _HeaderError as exc:
        raise ValueError(f"{file}: cannot read the GGUF header ({exc})") from None
    except ValueError as exc:  # a declared size over a limit: already one sentence
        raise ValueError(f"{file}: {exc}") from None
    except OSError as exc:
        raise ValueError(f"{file}: cannot read the GGUF header ({reason(exc)})") from None
    if "general.architecture" not in reader.fields:
        raise ValueError(f"{file}: GGUF header has no 'general.architecture'")
    arch = _value(reader, "general.architecture")
    if not isinstance(arch, str) or not _ARCHITECTURE.fullmatch(arch):
        shown = quote(arch) if isinstance(arch, str) else repr(arch)
        raise ValueError(f"{file}: GGUF key 'general.architecture' is {shown}; expected an architecture "
                         f"name of 1-{MAX_ARCHITECTURE_CHARS} characters a-z, 0-9, '-' or '_' such as 'llama' or "
                         f"'qwen2' (GGUF spec): {_ADVICE}")
    tensors = list(reader.tensor_infos)
    if not tensors:
        raise ValueError(f"{file}: GGUF header lists no tensors (a vocabulary-only file?)")
    try:
        config, notes = _config_from_header(reader, arch, tensors)
        rows, by_type = _rows(tensors)
        _check_shareable(rows, len(tensors))
    except ValueError as exc:
        raise ValueError(f"{file}: {exc}") from None
    header_name, name_note = _header_name(reader)
    model_name = clean_name(name or header_name or _plain_text(path.stem, MAX_NAME_CHARS) or "gguf-model")
    if name is None and name_note:
        notes = [*notes, name_note]
    model = gguf_custom_model(config, rows, arch, model_name, source=f"gguf:{path.name}", notes=notes)
    return GGUFModel(
        file_name=path.name, architecture=arch,
        weight_bytes=sum(b for _, _, b in by_type.values()),
        num_parameters=sum(n for _, n, _ in by_type.values()),
        bytes_by_type=by_type, model=model,
    )


_LAYER = re.compile(r"^blk\.\d+\.")
_ARCHITECTURE = re.compile(rf"[a-z0-9_-]{{1,{MAX_ARCHITECTURE_CHARS}}}")


def _plain_text(text: str, limit: int) -> str:
    """``text`` with non-printable characters dropped, whitespace runs made one space, cut to ``limit`` characters."""
    kept = "".join(ch if ch.isprintable() else (" " if ch.isspace() else "") for ch in text)
    return " ".join(kept.split())[:limit].rstrip()


def _header_name(reader: GGUFHeader) -> tuple[str | None, str | None]:
    """``(general.name for display, a note when it was cleaned)``; ``(None, None)`` if absent, empty or not a string.

    Reads at most :data:`MAX_HEADER_NAME_BYTES` of it, drops non-printable
    characters (control characters, bidirectional overrides) and cuts it to
    ``MAX_NAME_CHARS`` (100), so a long or odd name never refuses the file.
    """
    field = reader.fields.get("general.name")
    if field is None or field.kind != _STRING:
        return None, None
    raw = reader._read(field.offset, min(field.length, MAX_HEADER_NAME_BYTES))
    text = raw.decode("utf-8", errors="ignore")
    clean = _plain_text(text, MAX_NAME_CHARS)
    if not clean:
        return None, None
    if clean == text and field.length <= MAX_HEADER_NAME_BYTES:
        return clean, None
    return clean, (f"the header's general.name ({field.length:,} bytes) is shown as {quote(clean)}: non-printable "
                   f"characters dropped, at most {MAX_NAME_CHARS} characters kept")


def _check_shareable(rows: list[TensorRow], tensor_count: int) -> None:
    """Refuse tensor rows that the model's own share link could not carry (model_catalog/share_codec.py).

    A link holds at most ``MAX_TENSOR_ROWS`` rows; their JSON and code must
    leave room for the rest of the payload (:data:`MAX_TENSOR_JSON_BYTES`,
    :data:`MAX_TENSOR_CODE_CHARS`). Real models merge into a few dozen rows
    (``blk.N.`` -> ``layers.*.``): the count is checked first, so the code is
    built only for at most ``MAX_TENSOR_ROWS`` rows.

    Raises:
        ValueError: naming the count or size, its limit and what to do.
    """
    why = (f"the {tensor_count:,} tensors merge into {len(rows):,} rows (per-layer tensors blk.N.* share one row), "
           "and a share link of the model must carry them all")
    if len(rows) > MAX_TENSOR_ROWS:
        raise ValueError(f"{why}: at most {MAX_TENSOR_ROWS:,} rows fit a share link; {_ADVICE}")
    payload = [[row_name, list(shape), count, kind, qtype] for row_name, shape, count, kind, qtype in rows]
    size = len(json.dumps(payload, separators=(",", ":")))
    if size > MAX_TENSOR_JSON_BYTES:
        raise ValueError(f"{why}: they take {size:,} bytes of JSON, at most {MAX_TENSOR_JSON_BYTES:,} fit; {_ADVICE}")
    chars = len(pack({"t": payload}))
    if chars > MAX_TENSOR_CODE_CHARS:
        raise ValueError(f"{why}: they take {chars:,} characters of share code, at most {MAX_TENSOR_CODE_CHARS:,} "
                         f"fit; {_ADVICE}")


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
