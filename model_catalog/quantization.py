"""A checkpoint's quantization -> the format each tensor has in the published files.

Pre-quantized checkpoints do not quantize everything: gpt-oss stores only the
routed experts in MXFP4 and keeps attention, router, embeddings and ``lm_head``
in bf16 (``modules_to_not_convert``); DeepSeek-V3 stores every linear layer in
FP8 e4m3 with an fp32 scale per 128 x 128 block; NVIDIA's ModelOpt checkpoints
say in ``hf_quant_config.json`` which layers are NVFP4, FP8 or MXFP8 and which
stay in 16 bits, often layer by layer. This module marks each parameter group
with that format (``ParamGroup.checkpoint``), splitting a group whose layers
differ; the planner's weight dtype ``auto`` ("as the checkpoint ships") then sums
the bytes the checkpoint really holds.

Design notes (assumptions):
    1. Only ``linear`` groups (attention / MLP / expert matrices) are ever
       quantized; embeddings, ``lm_head``, norms, biases, routers, convolutions
       and other tensors keep the checkpoint's ``torch_dtype``.
    2. Module names are compared after :func:`normalize_module`: wrapper prefixes
       (``model.``, ``model.language_model.``, ``language_model.model.``,
       ``backbone.``) dropped, the serving names of the original checkpoints mapped
       to transformers' (``block_sparse_moe`` / ``ffn`` -> ``mlp``, ``attn`` ->
       ``self_attn``, ``head`` -> ``lm_head``, per-expert ``experts.N.w1`` / ``w3`` /
       ``w2`` -> ``experts.gate_proj`` / ``up_proj`` / ``down_proj``, which also stand for
       transformers' fused ``experts.gate_up_proj``; MiniMax's ``index_q_proj`` ->
       ``indexer.q_proj``). Patterns are
       globs (``model.layers.0.self_attn*``), exact or prefix module names, or
       ``re:`` regular expressions (compressed-tensors). With the family's
       per-layer map (``FamilyParts.param_layers``) each layer is matched on its
       own; without it a layer index in a pattern is widened to every layer
       (over-excludes, never under-counts).
    3. Formats (bytes of one ``rows x cols`` weight and its scales):
       ModelOpt ``NVFP4``: 4-bit e2m1 values, one fp8 e4m3 scale per 16 values,
       fp32 ``weight_scale_2`` and ``input_scale`` per tensor: 4.5 bits + 8 B;
       ``W4A16_NVFP4``: the same without ``input_scale``: 4.5 bits + 4 B;
       ``FP8``: e4m3 + fp32 ``weight_scale`` and ``input_scale``: 8 bits + 8 B;
       ``MXFP8``: e4m3 + one e8m0 scale per 32: 8.25 bits. ``fp8`` with
       ``weight_block_size`` [br, bc]: 1 B + one fp32 ``weight_scale_inv`` per
       block; DeepSeek-V4's ``expert_dtype`` ``fp4``: the routed experts as e2m1
       with an e8m0 scale per 32 values (4.25 bits, MXFP4 layout).
       compressed-tensors ``pack-quantized`` int4 with a bf16 scale per
       ``group_size`` (symmetric: no zero point) and an int64[2] ``weight_shape``:
       4 + 16/g bits + 16 B; ``mxfp4-pack-quantized``: 4.25 bits; float 4-bit
       group 16 (NVFP4) and float 8-bit per tensor as ModelOpt's.
       ``gptq`` / ``awq``: ``bits`` + one fp16 scale and one packed zero per group.
    4. transformers fuses each expert's gate and up projections
       (``experts.gate_up_proj``); checkpoints store them as two tensors, so
       per-tensor scales count twice for those groups (block scales over the fused
       shape equal the separate ones whenever the width is a multiple of the block:
       DeepSeek-V3 2048 = 16 x 128). Worked example, DeepSeek-V3 ``q_b_proj``
       (24576, 1536) in FP8 blocks: 24576 x 1536 B + 192 x 12 x 4 B = 37,757,952 B.
    5. ``hf_quant_config.json`` (ModelOpt's own file) wins over the config's
       ``quantization_config`` when both are given. An ``hf_quant_config`` whose
       ``quant_algo`` is not one of :data:`MODELOPT_ALGOS` is refused with a message;
       an unknown ``quant_method`` in ``quantization_config`` is reported as
       unsupported and ``auto`` then counts the weights at ``torch_dtype``.
    6. A config.json ``quantization_config`` whose ``quant_method`` is ``modelopt`` is read
       with ModelOpt's keys, as vLLM reads it: ``quant_algo``, ``ignore`` (hf_quant_config.json's
       ``exclude_modules``), ``kv_cache_scheme`` (float 8-bit = FP8, for the description)
       and, for ``MIXED_PRECISION``, the per-layer ``quantized_layers`` map: the same data
       as hf_quant_config.json; its ``config_groups`` (compressed-tensors' style, which
       lists a mixed checkpoint's layers in two groups) is not needed. One the planner
       cannot price (an unknown ``quant_algo``, MIXED_PRECISION without ``quantized_layers``)
       is unsupported, as in note 5, and the repository's hf_quant_config.json can be given
       instead. Source: vLLM vllm/model_executor/layers/quantization/modelopt.py
       (``ModelOptQuantConfigBase.from_config``: without a ``quantization`` object the keys
       are read from config.json's quantization_config; ``ModelOptMixedPrecisionConfig``:
       ``quantized_layers`` from config.json's quantization_config, "preferred", or the
       legacy hf_quant_config.json; a layer it does not list stays unquantized).

Sources: transformers 5.24 quantizers/quantizer_mxfp4.py, integrations/mxfp4.py,
quantizers/quantizer_finegrained_fp8.py and integrations/finegrained_fp8.py (``FP8Experts``:
``expert_dtype == "fp4"`` -> int8-packed e2m1 with a per-row scale every 32 values),
quantizers/quantizer_gptq.py; DeepSeek-V3 README_WEIGHTS.md; OCP Microscaling spec v1.0
(MXFP4, MXFP8); NVIDIA TensorRT Model Optimizer export (``hf_quant_config.json``:
``quant_algo``, ``group_size``, ``exclude_modules``, ``quantized_layers``; NVFP4 tensors
``weight``, ``weight_scale``, ``weight_scale_2``, ``input_scale``); compressed-tensors
``pack-quantized`` format (``weight_packed``, ``weight_scale``, ``weight_shape``).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from planner.model.dtypes import FP8_BLOCK128, WEIGHT_DTYPES, StorageFormat
from planner.model.params import ParamGroup
from planner.text import echo, quote

_LAYER_INDEX = re.compile(r"\.\d+(?=\.|$)")

NVFP4 = WEIGHT_DTYPES["nvfp4"]
W4A16_NVFP4 = replace(NVFP4, name="nvfp4_w4a16", per_tensor_scale_bytes=4,
                      label="NVFP4 weights, 16-bit activations (no input scale)")
FP8_PER_TENSOR = StorageFormat(name="fp8_static", bits_per_element=Fraction(8), per_tensor_scale_bytes=8,
                               label="FP8 e4m3 + fp32 weight and input scales per tensor")
MXFP8 = StorageFormat(name="mxfp8", bits_per_element=Fraction(33, 4), label="MXFP8: e4m3 + e8m0 scale per 32")
MXFP4 = WEIGHT_DTYPES["mxfp4"]

MODELOPT_ALGOS: dict[str, StorageFormat | None] = {
    "NVFP4": NVFP4, "W4A16_NVFP4": W4A16_NVFP4, "FP8": FP8_PER_TENSOR, "MXFP8": MXFP8, "MIXED_PRECISION": None,
}
"""ModelOpt ``quant_algo`` values and their weight format (design note 3); MIXED_PRECISION lists layers."""

_PREFIXES = ("model.language_model.", "language_model.model.", "language_model.", "backbone.", "model.")
_RENAMES = ((re.compile(r"(^|\.)block_sparse_moe(?=\.|$)"), r"\1mlp"), (re.compile(r"(^|\.)ffn(?=\.|$)"), r"\1mlp"),
            (re.compile(r"(^|\.)attn(?=\.|$)"), r"\1self_attn"), (re.compile(r"^head$"), "lm_head"),
            (re.compile(r"\.experts\.(\d+|\*)\."), ".experts."), (re.compile(r"\.experts\.w1$"), ".experts.gate_proj"),
            (re.compile(r"\.experts\.w3$"), ".experts.up_proj"), (re.compile(r"\.experts\.w2$"), ".experts.down_proj"),
            (re.compile(r"\.index_(q|k)_proj$"), r".indexer.\1_proj"))


def normalize_module(name: str) -> str:
    """A checkpoint module name in transformers' naming (design note 2).

    Example: ``language_model.model.layers.3.block_sparse_moe.experts.7.w1`` ->
    ``layers.3.mlp.experts.gate_proj`` (which :func:`_candidates` relates to transformers'
    fused ``experts.gate_up_proj``).
    """
    text = str(name)
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    for pattern, repl in _RENAMES:
        text = pattern.sub(repl, text)
    return text


def _candidates(module: str) -> tuple[str, ...]:
    """The checkpoint names a transformers module may be listed under: itself, its parent
    (``experts``), and for a fused ``gate_up_proj`` its two parts."""
    names = [module, module.rsplit(".", 1)[0]]
    if module.endswith("gate_up_proj"):
        names += [module[: -len("gate_up_proj")] + "gate_proj", module[: -len("gate_up_proj")] + "up_proj"]
    return tuple(names)


@dataclass(frozen=True, kw_only=True)
class Scheme:
    """The resolved quantization of one checkpoint.

    Attributes:
        method: Name for the description (``fp8``, ``modelopt NVFP4``, ...).
        default: Format of linear layers not listed elsewhere (None = unquantized).
        excluded: Normalized glob / prefix patterns kept in 16 bits.
        regex_excluded: ``re:`` patterns kept in 16 bits.
        per_module: Normalized module name (layer index kept) -> format (MIXED_PRECISION).
        experts: Format of routed-expert groups when it differs (DeepSeek-V4 ``expert_dtype``).
        kv_cache: The checkpoint's KV-cache algorithm (``FP8``), for the description.
    """

    method: str
    default: StorageFormat | None
    excluded: tuple[str, ...] = ()
    regex_excluded: tuple[re.Pattern, ...] = ()
    per_module: Mapping[str, StorageFormat] = field(default_factory=dict)
    experts: StorageFormat | None = None
    kv_cache: str | None = None

    @property
    def _exclusion_regex(self) -> re.Pattern | None:
        """All glob / prefix exclusions as one regular expression (a module pattern covers its children)."""
        cached = self.__dict__.get("_compiled")
        if cached is None and self.excluded:
            parts = [fnmatch.translate(p)[:-2] + r"(\..*)?\Z" for p in self.excluded]  # drop translate's \Z
            cached = re.compile("|".join(f"(?:{part})" for part in parts), re.S)
            object.__setattr__(self, "_compiled", cached)
        return cached

    def _is_excluded(self, module: str) -> bool:
        names = _candidates(module)
        regex = self._exclusion_regex
        for name in (names[0], *names[2:]):
            if regex is not None and regex.match(name):
                return True
            if any(r.match(name) or r.match("model." + name) for r in self.regex_excluded):
                return True
        return False

    def format_for(self, module: str) -> StorageFormat | None:
        """The format of the linear module ``module`` (normalized, layer index included), or None."""
        if self._is_excluded(module):
            return None
        if self.per_module:
            # experts.gate_up_proj is listed as "experts" (Qwen3.6) or as gate_proj / up_proj (MiniMax-M3)
            for name in _candidates(module):
                if name in self.per_module:
                    return self.per_module[name]
            for name in _candidates(module):  # glob keys (a share link's widened layer list)
                for key, fmt in self.per_module.items():
                    if "*" in key and fnmatch.fnmatchcase(name, key):
                        return fmt
            return None
        if self.experts is not None and ".experts." in module:
            return self.experts
        return self.default


def _patterns(values: Any, *, widen: bool) -> tuple[tuple[str, ...], tuple[re.Pattern, ...]]:
    globs, regexes = [], []
    for value in values or ():
        text = str(value)
        if text.startswith("re:"):
            regexes.append(re.compile(text[3:]))
            continue
        text = normalize_module(text)
        globs.append(_LAYER_INDEX.sub(".*", text) if widen else text)
    return tuple(dict.fromkeys(globs)), tuple(regexes)


def _modelopt(quant: Mapping[str, Any], *, widen: bool, where: str) -> Scheme:
    """A ModelOpt scheme from ``hf_quant_config.json``'s ``quantization`` (or a config carrying it)."""
    algo = quant.get("quant_algo")
    if algo not in MODELOPT_ALGOS:
        raise ValueError(f"{where} key 'quant_algo' is {echo(algo)}, which the planner cannot price; supported: "
                         f"{', '.join(MODELOPT_ALGOS)} (remove the file to count the weights at torch_dtype)")
    per_module: dict[str, StorageFormat] = {}
    layers = quant.get("quantized_layers") or {}
    if not isinstance(layers, Mapping):
        raise ValueError(f"{where} key 'quantized_layers' must map module names to {{'quant_algo': ...}}")
    for module, spec in layers.items():
        layer_algo = spec.get("quant_algo") if isinstance(spec, Mapping) else None
        fmt = MODELOPT_ALGOS.get(layer_algo)
        if fmt is None:
            raise ValueError(f"{where} key {quote(f'quantized_layers.{module}.quant_algo')} is {echo(layer_algo)}; "
                             "supported: "
                             f"{', '.join(a for a in MODELOPT_ALGOS if a != 'MIXED_PRECISION')}")
        per_module[normalize_module(module)] = fmt
    if algo == "MIXED_PRECISION" and not per_module:
        raise ValueError(f"{where} has quant_algo MIXED_PRECISION but no 'quantized_layers'")
    globs, regexes = _patterns(quant.get("exclude_modules") or quant.get("ignore"), widen=widen)
    if widen:
        per_module = {_LAYER_INDEX.sub(".*", k): v for k, v in per_module.items()}
    return Scheme(method=f"modelopt {algo}", default=MODELOPT_ALGOS[algo], excluded=globs, regex_excluded=regexes,
                  per_module=per_module, kv_cache=quant.get("kv_cache_quant_algo") or _kv_cache_scheme(quant))


def _kv_cache_scheme(quant: Mapping[str, Any]) -> str | None:
    """config.json's ``kv_cache_scheme`` as ModelOpt's ``kv_cache_quant_algo`` (design note 6): float 8-bit -> FP8."""
    scheme = quant.get("kv_cache_scheme")
    if isinstance(scheme, Mapping) and scheme.get("type") == "float" and scheme.get("num_bits") == 8:
        return "FP8"
    return None


def _compressed_tensors(config: Mapping[str, Any], *, widen: bool) -> Scheme | None:
    """compressed-tensors ``config_groups`` (design note 3), or None for a scheme not priced here."""
    groups = [g for g in (config.get("config_groups") or {}).values() if isinstance(g, Mapping)]
    if len(groups) != 1 or not isinstance(groups[0].get("weights"), Mapping):
        return None
    group, weights = groups[0], groups[0]["weights"]
    bits, kind, size = weights.get("num_bits"), weights.get("type"), weights.get("group_size")
    fmt_name = str(config.get("format") or group.get("format") or "")
    if bits == 4 and kind == "float" and size == 16:
        fmt = NVFP4
    elif bits == 4 and kind == "float" and (size == 32 or "mxfp4" in fmt_name):
        fmt = MXFP4
    elif bits == 4 and kind == "int" and isinstance(size, int) and size > 0:
        zero = 0 if weights.get("symmetric", True) else 4
        fmt = StorageFormat(name=f"int4_g{size}", bits_per_element=Fraction(4) + Fraction(16 + zero, size),
                            per_tensor_scale_bytes=16,
                            label=f"int4 + bf16 scale per {size}{' + zero point' if zero else ''} (pack-quantized)")
    elif bits == 8 and kind == "float":
        fmt = FP8_PER_TENSOR
    else:
        return None
    targets = group.get("targets") or ["Linear"]
    per_module: dict[str, StorageFormat] = {}
    if targets != ["Linear"]:
        per_module = {(_LAYER_INDEX.sub(".*", normalize_module(t)) if widen else normalize_module(t)): fmt
                      for t in targets}
    globs, regexes = _patterns(config.get("ignore"), widen=widen)
    return Scheme(method=f"compressed-tensors {fmt.name}", default=fmt, excluded=globs, regex_excluded=regexes,
                  per_module=per_module)


AWQ_BITS: tuple[int, ...] = (4,)
"""``bits`` / ``w_bit`` vLLM's AWQ loads (awq.py ``AWQConfig``; awq_marlin.py ``AWQMarlinConfig.TYPE_MAP``)."""

GPTQ_BITS: tuple[int, ...] = (2, 3, 4, 8)
"""``bits`` vLLM's GPTQ loads (gptq.py ``GPTQConfig``)."""

PER_CHANNEL_GROUP = -1
"""``group_size`` meaning one group per input row (per-channel scales; gptq.py / awq_marlin.py)."""


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_quantization_values(quant: Mapping[str, Any], where: str = "quantization_config") -> None:
    """Refuse GPTQ / AWQ ``bits`` and ``group_size`` that vLLM refuses when it builds the quantization config.

    Sources: vllm/model_executor/layers/quantization/awq.py ``AWQConfig.__init__`` refuses any ``weight_bits``
    but 4 (awq_marlin.py ``AWQMarlinConfig.TYPE_MAP`` holds only 4 too); gptq.py ``GPTQConfig.__init__`` refuses
    any ``weight_bits`` outside 2, 3, 4, 8. Both divide the input width by ``group_size``
    (``input_size_per_partition % group_size``, ``input_size // group_size``); -1 stands for the whole input
    row (``group_size = input_size``: one scale per output channel), so 0 or another negative divides by zero
    or counts negative groups. Reads the keys vLLM reads: AWQ ``w_bit`` or ``bits``, ``q_group_size`` or
    ``group_size`` (``AWQConfig.from_config``); GPTQ ``bits`` and ``group_size`` (``GPTQConfig.from_config``).
    Other methods pass unchecked.

    Raises:
        ValueError: naming the dotted key, the value and what vLLM accepts.
    """
    method = str(quant.get("quant_method", "")).lower()
    if method not in ("awq", "gptq"):
        return
    name, accepted = ("AWQ", AWQ_BITS) if method == "awq" else ("GPTQ", GPTQ_BITS)
    bit_keys = ("w_bit", "bits") if method == "awq" else ("bits", "w_bit")
    group_keys = ("q_group_size", "group_size") if method == "awq" else ("group_size", "q_group_size")
    for key in bit_keys:
        if key in quant and (not _whole(quant[key]) or quant[key] not in accepted):
            choices = (f"{accepted[0]}-bit weights only" if len(accepted) == 1 else
                       f"{', '.join(map(str, accepted[:-1]))} or {accepted[-1]} bits")
            raise ValueError(f"config key '{where}.{key}' is {echo(quant[key])}; vLLM's {name} loads {choices} "
                             f"(vllm/model_executor/layers/quantization/{method}.py): fix the value, or check "
                             "that quant_method names the checkpoint's scheme")
    for key in group_keys:
        value = quant.get(key)
        if key in quant and value is not None and (not _whole(value) or (value <= 0 and value != PER_CHANNEL_GROUP)):
            raise ValueError(f"config key '{where}.{key}' is {echo(value)}; vLLM's {name} takes a positive group "
                             f"size such as 128 (inputs per scale), or {PER_CHANNEL_GROUP} for one scale per "
                             "output channel")


def _format_for(config: Mapping[str, Any]) -> StorageFormat | None:
    """The storage format of quantized tensors for one ``quantization_config`` (design note 3)."""
    method = str(config.get("quant_method", "")).lower()
    if method == "mxfp4":
        return WEIGHT_DTYPES["mxfp4"]
    if method == "fp8":
        block = config.get("weight_block_size")
        if block is None:
            return WEIGHT_DTYPES["fp8"]
        rows, cols = (int(v) for v in block)
        if (rows, cols) == FP8_BLOCK128.block_shape:
            return FP8_BLOCK128
        return replace(FP8_BLOCK128, name=f"fp8_block{rows}x{cols}", block_shape=(rows, cols),
                       label=f"FP8 e4m3 + one fp32 scale per {rows} x {cols} block")
    if method in ("gptq", "awq"):
        check_quantization_values(config)  # vLLM's own limits on bits and group_size
        bits = int(config.get("bits", config.get("w_bit", 4)))
        group = int(config.get("group_size", config.get("q_group_size", 128)))
        if group == PER_CHANNEL_GROUP:  # per-channel GPTQ / AWQ: one scale + zero per output row
            return StorageFormat(name=f"{method}-int{bits}", bits_per_element=Fraction(bits),
                                 per_channel_scale_bytes=2, label=f"{method} int{bits}, per-channel scale")
        return StorageFormat(name=f"{method}-int{bits}-g{group}",
                             bits_per_element=Fraction(bits) + Fraction(16 + bits, group),
                             label=f"{method} int{bits}: fp16 scale + {bits}-bit zero per {group} inputs")
    return None


def resolve_scheme(quantization_config: Mapping[str, Any] | None, hf_quant_config: Mapping[str, Any] | None = None,
                   *, widen: bool = False) -> Scheme | str | None:
    """The checkpoint's :class:`Scheme`; a string naming an unsupported method; None when unquantized.

    Raises:
        ValueError: an ``hf_quant_config`` that is not ModelOpt's layout or names an
            unknown ``quant_algo`` (the message names the key).
    """
    if hf_quant_config is not None:
        quant = hf_quant_config.get("quantization") if isinstance(hf_quant_config, Mapping) else None
        if not isinstance(quant, Mapping):
            raise ValueError("hf_quant_config.json needs a 'quantization' object with 'quant_algo' (NVIDIA ModelOpt's "
                             "layout); check that the second file is the repository's hf_quant_config.json")
        return _modelopt(quant, widen=widen, where="hf_quant_config.json quantization")
    if not isinstance(quantization_config, Mapping) or not quantization_config:
        return None
    config = quantization_config
    method = str(config.get("quant_method", "")).lower()
    if method.startswith("modelopt"):  # design note 6: ModelOpt's own keys, whatever config_groups says
        try:
            return _modelopt(config, widen=widen, where="quantization_config")
        except ValueError as exc:
            return f"unsupported: {exc}"
    if config.get("quant_algo") in MODELOPT_ALGOS and not config.get("config_groups"):
        return _modelopt(config, widen=widen, where="quantization_config")
    if method in ("compressed-tensors", "modelopt") or config.get("config_groups"):
        scheme = _compressed_tensors(config, widen=widen)
        if scheme is not None:
            return scheme
        return f"unsupported quantization_config ({echo(method or config.get('quant_algo') or 'config_groups')})"
    fmt = _format_for(config)
    if fmt is None:
        return f"unsupported quant_method {echo(config.get('quant_method', '?'))}"
    globs, regexes = _patterns(config.get("modules_to_not_convert") or config.get("ignore")
                               or config.get("ignored_layers"), widen=widen)
    experts = MXFP4 if method == "fp8" and config.get("expert_dtype") == "fp4" else None
    return Scheme(method=method, default=fmt, excluded=globs, regex_excluded=regexes, experts=experts)


def _module_path(group: ParamGroup) -> str:
    """``layers.*.self_attn.q_proj`` for ``layers.*.self_attn.q_proj.weight`` (experts keep their tensor name)."""
    name = group.name
    return name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name


def _split_tensors(group: ParamGroup, fmt: StorageFormat) -> StorageFormat:
    """``fmt`` with per-tensor scales doubled for a fused gate/up group (design note 4)."""
    if group.name.endswith("gate_up_proj") and fmt.per_tensor_scale_bytes:
        return replace(fmt, per_tensor_scale_bytes=2 * fmt.per_tensor_scale_bytes)
    return fmt


def checkpoint_formats(params: tuple[ParamGroup, ...], quantization_config: Mapping[str, Any] | None,
                       hf_quant_config: Mapping[str, Any] | None = None,
                       param_layers: Mapping[tuple[str, tuple[int, ...], str], tuple[int, ...]] | None = None,
                       ) -> tuple[tuple[ParamGroup, ...], str]:
    """Mark the groups a pre-quantized checkpoint stores quantized.

    Args:
        params: Parameter groups from the family adapter.
        quantization_config: The config's ``quantization_config`` (None when the
            checkpoint ships unquantized).
        hf_quant_config: The repository's ``hf_quant_config.json`` (ModelOpt), or None.
        param_layers: The decoder layers of each per-layer group
            (``FamilyParts.param_layers``); without it per-layer patterns are widened.

    Returns:
        ``(groups, description)``: groups with ``checkpoint`` set on the quantized
        ones (a group split where its layers differ), and one line for
        ``ModelSpec.checkpoint_quantization`` (empty when unquantized; ``unsupported
        ...`` for an unknown ``quant_method``).

    Raises:
        ValueError: an ``hf_quant_config`` the planner cannot price (design note 5).

    Example: gpt-oss-20b (``mxfp4``, attention / router / embeddings excluded)
    marks the two expert groups; weight dtype ``auto`` then gives
    13,761,264,768 B (12.82 GiB; the gpt-oss model card says 12.8 GiB).
    """
    scheme = resolve_scheme(quantization_config, hf_quant_config, widen=param_layers is None)
    if scheme is None:
        return params, ""
    if isinstance(scheme, str):
        return params, f"{scheme}: weight dtype auto counts torch_dtype weights"
    layer_map = param_layers or {}
    memo: dict[str, StorageFormat | None] = {}

    def format_of(module: str) -> StorageFormat | None:
        if module not in memo:
            memo[module] = scheme.format_for(module)
        return memo[module]

    out: list[ParamGroup] = []
    marked = total = 0
    labels: dict[str, str] = {}
    for group in params:
        if group.kind != "linear":
            out.append(group)
            continue
        total += 1
        module = _module_path(group)
        layers = layer_map.get((group.name, group.shape, group.kind))
        where: dict[StorageFormat | None, list[int]] = {}
        if "*" not in module or not layers or group.count % len(layers):
            parts = {format_of(module): group.count}
        else:
            per_layer = group.count // len(layers)
            parts: dict[StorageFormat | None, int] = {}
            for index in layers:
                fmt = format_of(module.replace("*", str(index), 1))
                parts[fmt] = parts.get(fmt, 0) + per_layer
                where.setdefault(fmt, []).append(index)
        for fmt, count in parts.items():
            checkpoint = None if fmt is None else _split_tensors(group, fmt)
            piece = replace(group, count=count, checkpoint=checkpoint)
            if len(parts) > 1:  # split by format: each piece holds some of the group's layers
                piece = replace(piece, layers=tuple(where[fmt]))
            out.append(piece)
            if fmt is not None:
                labels[fmt.name] = fmt.label
        marked += any(fmt is not None for fmt in parts)
    formats = "; ".join(labels.values()) or "no linear layer quantized"
    kv = f"; KV cache {scheme.kv_cache} in the checkpoint" if scheme.kv_cache else ""
    return tuple(out), f"{scheme.method}: {formats}; {marked} of {total} linear weight groups{kv}"
