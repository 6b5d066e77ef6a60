"""A local ``.gguf`` file -> a :class:`~planner.model.ModelSpec` with exact weight bytes.

llama.cpp users load a GGUF file, not a config.json. Its header names the
architecture (``general.architecture``), the hyper-parameters
(``{arch}.block_count``, ``{arch}.attention.head_count_kv`` ...) and every
tensor with its shape and ggml type (``Q4_K``, ``Q6_K``, ``F32`` ...). This
module reads only that header, with the ``gguf`` package's reader (pure
Python + numpy), and never touches the tensor data: a header prefix of the file
(``head -c 64M model.gguf > head.gguf``) is enough.

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

Sources: GGUF specification (ggml docs/gguf.md: header, metadata keys, tensor
info); gguf-py ``GGUFReader`` and ``GGML_QUANT_SIZES`` (gguf/constants.py);
llama.cpp src/llama-model.cpp for the window patterns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import lru_cache
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


@lru_cache(maxsize=None)
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
# Header reading
# --------------------------------------------------------------------------
def _header_reader(path: Path) -> Any:
    """A GGUFReader that parses metadata and tensor infos but never maps tensor data.

    The stock reader builds a numpy view of every tensor's data, which fails
    on a header prefix; this subclass keeps only (name, type, dims).
    """
    from gguf import GGMLQuantizationType, GGUFReader

    class HeaderReader(GGUFReader):
        def _build_tensors(self, start_offs: int, fields: list) -> None:  # noqa: ARG002 - gguf hook
            self.tensor_infos = []
            for field in fields:
                _name_len, name_data, _n_dims, dims, raw_dtype, _offset = field.parts
                name = bytes(name_data).decode("utf-8", errors="replace")
                self.tensor_infos.append((name, GGMLQuantizationType(int(raw_dtype[0])).name,
                                          tuple(int(d) for d in dims)))

    return HeaderReader(path)


def _value(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    return None if field is None else field.contents()


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
            return None, None, [f"the header states a {window:,}-token sliding window, but llama.cpp runs "
                                f"'{arch}' with full attention; priced as full attention"]
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
        ValueError: not a GGUF file, a header cut short, a missing key (named),
            or an architecture whose cache is not priced here.

    Example:
        ``read_gguf("Meta-Llama-3-8B-Instruct.Q4_K_M.gguf").weight_bytes``
    """
    path = Path(path)
    try:
        reader = _header_reader(path)
    except (OSError, ValueError, IndexError, KeyError, TypeError, OverflowError, MemoryError) as exc:
        with_prefix = ""
        try:
            with path.open("rb") as handle:
                if handle.read(4) == b"GGUF":
                    with_prefix = ("; the header may be cut short: keep more of the file (the header holds the "
                                   "vocabulary, often 10-30 MB)")
        except OSError:
            pass
        if not with_prefix and path.is_file():
            raise ValueError(f"{path.name}: not a GGUF file (no 'GGUF' magic at the start)") from None
        raise ValueError(f"{path.name}: cannot read the GGUF header ({type(exc).__name__}: "
                         f"{str(exc)[:120]}){with_prefix}") from None
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
