"""LoRA serving: the adapter slots an engine preallocates on each GPU, and what they cost.

Per adapter slot, per GPU, every module the engine wraps holds an A matrix of ``rank x in`` and a
B matrix of ``out x rank`` elements in the adapter dtype, so one slot costs ``rank x (in + out)``
elements per module per layer. Which side is sharded under tensor parallelism follows the base
layer (vLLM ``BaseLinearLayerWithLoRA.create_lora_weights``, vllm/lora/layers/base_linear.py, and
its column / row subclasses):

    column-parallel (q/k/v, gate/up, ...):  A = rank x in           B = (out / tp) x rank
    row-parallel (o_proj, down_proj, ...):   A = rank x (in / tp)    B = out x rank
    replicated (MLA *_a_proj, MoE router):   A = rank x in           B = out x rank
    k_proj / v_proj:                         B = max(1, kv_heads // tp) x head_dim x rank
    routed experts (vLLM FusedMoEWithLoRA):  per expert, w13 = 2 slices of (rank x H + I/tp x rank),
                                             w2 = rank x I/tp + H x rank
    embed_tokens (vLLM, Llama / Mistral):   A = vocab x rank       B = hidden x rank (not sharded)
    lm_head (LogitsProcessorWithLoRA):       A = rank x hidden      B = vocab x rank (not sharded)

    slot bytes per GPU = max_loras x lora_dtype bytes x sum over modules of the elements above

vLLM allocates a slot for **every** module it supports, not only an adapter's targets:
``LoRAModelManager._create_lora_modules`` (vllm/lora/model_manager.py) wraps each module whose
name ``get_supported_lora_modules`` (vllm/lora/utils.py) returns: every ``LinearBase`` and
``FusedMoE`` layer plus the model class's ``embedding_modules`` (``embed_tokens`` and ``lm_head``
for ``LlamaForCausalLM`` and the Mistral class built on it, vllm/model_executor/models/llama.py;
none for ``Qwen3ForCausalLM``, qwen3.py). The slots are allocated while the model loads, so vLLM's
"Model loading took X GiB" includes them and they come out of the KV budget like weights. SGLang's
``LoRAMemoryPool.init_buffers`` (python/sglang/srt/lora/mem_pool.py) allocates
``--max-loras-per-batch`` slots per layer for its ``--lora-target-modules`` only (default here:
every attention and MLP projection, "all"), A ``(slots, rank x stacked, in)`` with ``in / tp`` for
the row-parallel ``o_proj`` / ``down_proj`` and B ``(slots, out / tp, rank)`` otherwise, the KV
heads divided rather than replicated. llama.cpp preallocates nothing: each ``--lora`` file is
loaded whole (``llama_adapter_lora_init``, src/llama-adapter.cpp), so its cost is one adapter's
tensors at its rank (f16 here, what ``convert_lora_to_gguf.py`` writes by default).

Worked example (the README's): Llama-3.1-8B (hidden 4,096, 32 heads of 128, 8 KV heads,
intermediate 14,336, vocab 128,256, 32 layers), rank 64, bf16, TP 1. Per layer:
q 64 x (4,096 + 4,096), k and v 64 x (4,096 + 1,024) each, o 64 x (4,096 + 4,096), gate and up
64 x (4,096 + 14,336) each, down 64 x (14,336 + 4,096) = 5,242,880 elements; x 32 layers =
167,772,160; embed_tokens and lm_head 64 x (128,256 + 4,096) each = 16,941,056; one slot =
184,713,216 elements x 2 B = 369,426,432 B (352.3 MiB); 8 slots = 2,955,411,456 B (2.75 GiB).

Host memory: vLLM keeps up to ``--max-cpu-loras`` adapters (default ``--max-loras``) in each
worker's CPU cache (``LRUCacheLoRAModelManager``, vllm/lora/model_manager.py), each loaded whole
before it is sliced for its GPU; the upper bound here is an adapter of ``max_lora_rank`` on every
wrapped module, unsharded. The profile pass adds only the punica shrink buffer, ``n_slices x tokens
x rank`` fp32 values for the widest packed module (3 for q/k/v; ``PunicaWrapperGPU.add_lora_linear``,
vllm/lora/punica_wrapper/punica_gpu.py), freed after each layer.

Sources: the engine files named above; Hu et al. 2021 (LoRA); Sheng et al. 2023 (S-LoRA, the
slot-based serving vLLM and SGLang follow).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.model import ModelSpec
from planner.model.dtypes import WEIGHT_DTYPES, StorageFormat
from planner.text import quote
from planner.units import ceil_div

LORA_ENGINES = ("vllm", "sglang", "llama.cpp")
"""Engine families whose LoRA memory is modelled; the others get a note instead of a number."""

VLLM_DEFAULT_MAX_LORAS = 1
"""vLLM ``--max-loras`` default (vllm/config/lora.py ``LoRAConfig.max_loras``)."""

VLLM_DEFAULT_MAX_LORA_RANK = 16
"""vLLM ``--max-lora-rank`` default (vllm/config/lora.py ``LoRAConfig.max_lora_rank``)."""

VLLM_MAX_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)
"""Ranks vLLM accepts for ``--max-lora-rank`` (vllm/config/lora.py ``MaxLoRARanks``)."""

LORA_DTYPES = ("auto", "bf16", "fp16")
"""``--lora-dtype`` values (vLLM: auto = the model dtype, float16, bfloat16)."""

VLLM_EMBEDDING_LORA_MODEL_TYPES = frozenset({"llama", "mistral"})
"""Model types whose vLLM class lists ``embed_tokens`` and ``lm_head`` in ``embedding_modules``
(``LlamaForCausalLM``, vllm/model_executor/models/llama.py; ``MistralForCausalLM`` subclasses it).
Other classes declare none (``Qwen3ForCausalLM``, qwen3.py; Gemma's ``embedding_modules = {}``)."""

ROW_PARALLEL_SUFFIXES = frozenset({"o_proj", "down_proj", "out_proj", "dense", "dense_4h_to_h", "c_proj",
                                   "fc_out", "down", "o_b_proj", "fc2_latent_proj", "x_proj"})
"""Module names built as ``RowParallelLinear`` in vLLM's model files (input sharded)."""

SGLANG_MODULES = frozenset({"q_proj", "k_proj", "v_proj", "qkv_proj", "o_proj", "gate_proj", "up_proj",
                            "gate_up_proj", "down_proj"})
"""Projections SGLang's LoRA layers wrap (python/sglang/srt/lora/utils.py ``get_hidden_dim``);
``all`` in ``--lora-target-modules`` means these."""

SGLANG_TARGET_NAMES = SGLANG_MODULES | {"all", "embed_tokens", "lm_head"}
"""Every name SGLang's ``--lora-target-modules`` takes (python/sglang/srt/server_args.py: the projections,
``all``, and the embedding adapters' ``embed_tokens`` / ``lm_head``): 12 distinct names."""

MAX_TARGET_MODULES = 64
"""Most ``target_modules`` names read [names], repeats included: 5x the 12 distinct names SGLang takes
(:data:`SGLANG_TARGET_NAMES`), so a longer list is a paste gone wrong."""

MAX_NAMES_QUOTED = 5
"""Unknown target module names one message quotes (the count of the rest follows)."""

SGLANG_ROW_PARALLEL = frozenset({"o_proj", "down_proj"})
"""SGLang ``ROW_PARALLELISM_LINEAR_LORA_NAMES`` (python/sglang/srt/lora/utils.py)."""

_PUNICA_MAX_SLICES = 3
"""Slices of the widest packed LoRA module (q, k, v) in the punica shrink buffer."""


@dataclass(frozen=True, kw_only=True)
class LoRAConfig:
    """LoRA serving as asked. Field names are vLLM's flags with underscores.

    Attributes:
        max_loras: Adapter slots per GPU (vLLM ``--max-loras``, SGLang ``--max-loras-per-batch``,
            llama.cpp: adapters loaded with ``--lora``), >= 1.
        max_lora_rank: Largest adapter rank (``--max-lora-rank``), >= 1.
        max_cpu_loras: Adapters cached in host memory (vLLM ``--max-cpu-loras``, SGLang
            ``--max-loaded-loras``); None = ``max_loras`` (vLLM's default).
        lora_dtype: ``auto`` (the model's activation dtype), ``bf16`` or ``fp16``.
        target_modules: SGLang ``--lora-target-modules`` (module names or ``all``, at most
            :data:`MAX_TARGET_MODULES`; a repeated name counts once); None = all. vLLM ignores it: it allocates
            every supported module.
    """

    max_loras: int = VLLM_DEFAULT_MAX_LORAS
    max_lora_rank: int = VLLM_DEFAULT_MAX_LORA_RANK
    max_cpu_loras: int | None = None
    lora_dtype: str = "auto"
    target_modules: tuple[str, ...] | None = None

    def validate(self) -> None:
        """Raise ValueError naming the first bad field and what it takes."""
        if not self.max_loras >= 1:
            raise ValueError(f"max_loras must be at least 1 adapter slot, got {self.max_loras}")
        if not self.max_lora_rank >= 1:
            raise ValueError(f"max_lora_rank must be at least 1, got {self.max_lora_rank}")
        if self.max_cpu_loras is not None and self.max_cpu_loras < self.max_loras:
            raise ValueError(f"max_cpu_loras ({self.max_cpu_loras}) must be >= max_loras ({self.max_loras}), "
                             "as vLLM requires; raise it or leave it unset")
        if self.lora_dtype not in LORA_DTYPES:
            raise ValueError(f"unknown lora_dtype {self.lora_dtype!r}; choose one of {', '.join(LORA_DTYPES)}")
        if self.target_modules is not None:
            choices = f"choose from all, {', '.join(sorted(SGLANG_MODULES))}, embed_tokens, lm_head"
            if len(self.target_modules) > MAX_TARGET_MODULES:
                raise ValueError(f"lora target modules lists {len(self.target_modules):,} names; at most "
                                 f"{MAX_TARGET_MODULES} are accepted (SGLang takes 12 distinct names): {choices}")
            bad = list(dict.fromkeys(m for m in self.target_modules if m not in SGLANG_TARGET_NAMES))
            if bad or not self.target_modules:
                shown = ", ".join(quote(m) for m in bad[:MAX_NAMES_QUOTED])
                more = f" and {len(bad) - MAX_NAMES_QUOTED:,} more" if len(bad) > MAX_NAMES_QUOTED else ""
                what = (f"unknown lora target module{'s' if len(bad) > 1 else ''} {shown}{more}" if bad else
                        "no lora target module")
                raise ValueError(f"{what}; {choices}")

    @property
    def cpu_loras(self) -> int:
        """Adapters in host memory: ``max_cpu_loras``, else ``max_loras``."""
        return self.max_loras if self.max_cpu_loras is None else self.max_cpu_loras


@dataclass(frozen=True, kw_only=True)
class LoRAModule:
    """One kind of wrapped module: ``count`` tensors of the same per-GPU LoRA shape.

    Attributes:
        name: Module path pattern (``layers.*.self_attn.q_proj``).
        parallel: ``column``, ``row``, ``replicated``, ``expert`` or ``vocab``.
        in_features, out_features: The base layer's full shape [elements].
        a_elements, b_elements: One slot's A and B elements of one such module on one GPU.
        count: How many such modules (layers, or layers x experts).
    """

    name: str
    parallel: str
    in_features: int
    out_features: int
    a_elements: int
    b_elements: int
    count: int

    @property
    def elements_per_slot(self) -> int:
        """A + B elements of one slot over all ``count`` modules on one GPU."""
        return (self.a_elements + self.b_elements) * self.count


@dataclass(frozen=True, kw_only=True)
class LoRASlots:
    """What the adapter slots cost on one GPU (bytes unless named).

    Attributes:
        engine: Engine family the slots follow.
        supported: False for engines whose LoRA memory is not modelled (then every size is 0).
        max_loras, max_lora_rank, max_cpu_loras: The request (``max_cpu_loras`` resolved).
        lora_dtype: Resolved adapter dtype name.
        modules: The wrapped modules, one entry per distinct shape.
        elements_per_slot: A + B elements of one slot on one GPU.
        bytes_per_slot: ``elements_per_slot`` in the adapter dtype ("memory per adapter slot").
        slot_bytes: ``bytes_per_slot x max_loras``, what the GPU sets aside.
        adapter_bytes: One adapter of ``max_lora_rank`` on every wrapped module, unsharded (the
            host copy).
        host_bytes: ``adapter_bytes x max_cpu_loras``, host memory per GPU worker.
        profile_activation_bytes: The punica shrink buffer of the profile pass.
        notes: What was assumed or left out.
    """

    engine: str
    supported: bool
    max_loras: int
    max_lora_rank: int
    max_cpu_loras: int
    lora_dtype: str
    modules: tuple[LoRAModule, ...]
    elements_per_slot: int
    bytes_per_slot: int
    slot_bytes: int
    adapter_bytes: int
    host_bytes: int
    profile_activation_bytes: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def slots_that_fit(self, free_bytes: int) -> int:
        """Adapter slots ``free_bytes`` holds (0 when none or unsupported)."""
        if not self.supported or self.bytes_per_slot <= 0 or free_bytes <= 0:
            return 0
        return free_bytes // self.bytes_per_slot

    def to_dict(self) -> dict:
        """JSON keys of the ``serving.lora`` block."""
        return {
            "engine": self.engine, "supported": self.supported, "max_loras": self.max_loras,
            "max_lora_rank": self.max_lora_rank, "max_cpu_loras": self.max_cpu_loras, "lora_dtype": self.lora_dtype,
            "bytes_per_adapter_slot": self.bytes_per_slot, "adapter_slot_bytes": self.slot_bytes,
            "elements_per_adapter_slot": self.elements_per_slot, "adapter_bytes_host": self.adapter_bytes,
            "host_bytes": self.host_bytes, "profile_activation_bytes": self.profile_activation_bytes,
            "modules": [{"name": m.name, "parallel": m.parallel, "in_features": m.in_features,
                         "out_features": m.out_features, "count": m.count,
                         "elements_per_slot": m.elements_per_slot} for m in self.modules],
            "notes": list(self.notes),
        }


def lora_dtype_format(name: str, activation: StorageFormat) -> StorageFormat:
    """The adapter format: ``auto`` = the activation dtype (vLLM ``LoRAConfig.lora_dtype``: the model dtype).

    Raises:
        ValueError: an unknown name.
    """
    if name == "auto":
        return activation
    if name not in LORA_DTYPES:
        raise ValueError(f"unknown lora_dtype {name!r}; choose one of {', '.join(LORA_DTYPES)}")
    return WEIGHT_DTYPES[name]


def _module_name(group_name: str) -> str:
    return group_name.removesuffix(".weight")


def _kv_out_per_gpu(model: ModelSpec, out: int, tp: int) -> int:
    """B rows of a k/v projection on one GPU: ``max(1, kv_heads // tp)`` heads (vLLM replicates them)."""
    kv = model.num_key_value_heads
    if kv >= 1 and out % kv == 0:
        return max(1, kv // tp) * (out // kv)
    return ceil_div(out, tp)


def _vllm_modules(model: ModelSpec, tp: int, rank: int) -> list[LoRAModule]:
    """Every module vLLM wraps, with one slot's per-GPU A and B elements (module docstring)."""
    out: list[LoRAModule] = []
    for group in model.params:
        if group.kind not in ("linear", "router", "embedding", "lm_head") or len(group.shape) < 2:
            continue
        name = _module_name(group.name)
        suffix = name.rsplit(".", 1)[-1]
        rows, cols = group.shape[0], group.numel // group.shape[0]
        if group.kind == "embedding":
            if model.model_type not in VLLM_EMBEDDING_LORA_MODEL_TYPES:
                continue  # vocab (rows) x hidden (cols): A = vocab x rank, B = hidden x rank
            out.append(LoRAModule(name=name, parallel="vocab", in_features=rows, out_features=cols,
                                  a_elements=rank * rows, b_elements=cols * rank, count=group.count))
            continue
        if group.kind == "lm_head":
            if model.model_type not in VLLM_EMBEDDING_LORA_MODEL_TYPES:
                continue  # (vocab, hidden): A = rank x hidden, B = vocab x rank
            out.append(LoRAModule(name=name, parallel="vocab", in_features=cols, out_features=rows,
                                  a_elements=rank * cols, b_elements=rows * rank, count=group.count))
            continue
        if ".experts." in name and suffix == "gate_up_proj":  # w13: two slices (gate, up) of I x H
            inter = rows // 2
            per = ceil_div(inter, tp)
            out.append(LoRAModule(name=name, parallel="expert", in_features=cols, out_features=rows,
                                  a_elements=2 * rank * cols, b_elements=2 * per * rank, count=group.count))
        elif ".experts." in name and suffix == "down_proj":  # w2: rank x I/tp and H x rank
            out.append(LoRAModule(name=name, parallel="expert", in_features=cols, out_features=rows,
                                  a_elements=rank * ceil_div(cols, tp), b_elements=rows * rank, count=group.count))
        elif group.kind == "router" or suffix.endswith(("_a_proj", "_a_proj_with_mqa")):
            out.append(LoRAModule(name=name, parallel="replicated", in_features=cols, out_features=rows,
                                  a_elements=rank * cols, b_elements=rows * rank, count=group.count))
        elif suffix in ROW_PARALLEL_SUFFIXES:
            out.append(LoRAModule(name=name, parallel="row", in_features=cols, out_features=rows,
                                  a_elements=rank * ceil_div(cols, tp), b_elements=rows * rank, count=group.count))
        else:
            b_rows = _kv_out_per_gpu(model, rows, tp) if suffix in ("k_proj", "v_proj") else ceil_div(rows, tp)
            out.append(LoRAModule(name=name, parallel="column", in_features=cols, out_features=rows,
                                  a_elements=rank * cols, b_elements=b_rows * rank, count=group.count))
    embed = next((m for m in out if m.parallel == "vocab" and m.in_features == model.vocab_size), None)
    if embed is not None and not any(g.kind == "lm_head" for g in model.params):
        # Tied embeddings: lm_head is the same module, and vLLM still wraps it for the logits.
        hidden = embed.out_features
        out.append(LoRAModule(name="lm_head", parallel="vocab", in_features=hidden, out_features=model.vocab_size,
                              a_elements=rank * hidden, b_elements=model.vocab_size * rank, count=1))
    return out


def _sglang_targets(config: LoRAConfig) -> frozenset[str]:
    names = set(config.target_modules or ("all",))
    if "all" in names:
        names = (names - {"all"}) | SGLANG_MODULES
    if "qkv_proj" in names:
        names |= {"q_proj", "k_proj", "v_proj"}
    if "gate_up_proj" in names:
        names |= {"gate_proj", "up_proj"}
    return frozenset(names)


def _sglang_modules(model: ModelSpec, tp: int, rank: int, targets: frozenset[str]) -> list[LoRAModule]:
    """The modules SGLang's pool allocates for ``targets`` (module docstring)."""
    out: list[LoRAModule] = []
    for group in model.params:
        if group.kind not in ("linear", "embedding", "lm_head") or len(group.shape) < 2:
            continue
        name = _module_name(group.name)
        suffix = name.rsplit(".", 1)[-1]
        rows, cols = group.shape[0], group.numel // group.shape[0]
        if group.kind in ("embedding", "lm_head"):
            wanted = "embed_tokens" if group.kind == "embedding" else "lm_head"
            if wanted not in targets:
                continue
            vocab, hidden = (rows, cols)
            # get_embedding_lora_A_shape: (slots, vocab / tp, rank); B: (slots, hidden, rank)
            out.append(LoRAModule(name=name, parallel="vocab", in_features=vocab, out_features=hidden,
                                  a_elements=ceil_div(vocab, tp) * rank, b_elements=hidden * rank, count=group.count))
            continue
        if suffix not in targets:
            continue
        if ".experts." in name and suffix == "gate_up_proj":
            inter = rows // 2
            out.append(LoRAModule(name=name, parallel="expert", in_features=cols, out_features=rows,
                                  a_elements=2 * rank * cols, b_elements=2 * ceil_div(inter, tp) * rank,
                                  count=group.count))
        elif suffix in SGLANG_ROW_PARALLEL:
            out.append(LoRAModule(name=name, parallel="row" if ".experts." not in name else "expert",
                                  in_features=cols, out_features=rows, a_elements=rank * ceil_div(cols, tp),
                                  b_elements=rows * rank, count=group.count))
        else:
            out.append(LoRAModule(name=name, parallel="column", in_features=cols, out_features=rows,
                                  a_elements=rank * cols, b_elements=ceil_div(rows, tp) * rank, count=group.count))
    return out


def _llamacpp_modules(model: ModelSpec, rank: int) -> list[LoRAModule]:
    """One loaded adapter on every linear projection, whole (llama.cpp splits layers, not tensors)."""
    out: list[LoRAModule] = []
    for group in model.params:
        if group.kind != "linear" or len(group.shape) < 2:
            continue
        rows, cols = group.shape[0], group.numel // group.shape[0]
        out.append(LoRAModule(name=_module_name(group.name), parallel="whole", in_features=cols, out_features=rows,
                              a_elements=rank * cols, b_elements=rows * rank, count=group.count))
    return out


def _unsharded_elements(modules: list[LoRAModule], rank: int) -> int:
    """One adapter of ``rank`` on ``modules`` before any tensor-parallel slicing (the host copy)."""
    total = 0
    for m in modules:
        slices = 2 if m.parallel == "expert" and m.name.endswith("gate_up_proj") else 1
        per = rank * (m.in_features * slices + m.out_features)
        total += per * m.count
    return total


def lora_slots(model: ModelSpec, config: LoRAConfig, *, engine: str = "vllm", tensor_parallel_size: int = 1,
               activation: StorageFormat, num_batched_tokens: int = 0) -> LoRASlots:
    """The adapter slots ``engine`` preallocates on each of ``tensor_parallel_size`` GPUs.

    Args:
        model: The base model (its parameter groups give every module's shape).
        config: Slots, rank, host cache and dtype.
        engine: Engine family: ``vllm``, ``sglang`` or ``llama.cpp`` (others: not modelled).
        tensor_parallel_size: GPUs one layer is split over.
        activation: The model's activation dtype (``lora_dtype`` auto).
        num_batched_tokens: Tokens of the profile pass, for the punica buffer [tokens].

    Returns:
        A :class:`LoRASlots`; ``supported`` False (and zeros) for other engines.

    Raises:
        ValueError: invalid ``config`` or ``tensor_parallel_size < 1``.

    Sources: module docstring (vllm/lora/layers/base_linear.py ``create_lora_weights``,
    vllm/lora/layers/column_parallel_linear.py, row_parallel_linear.py, fused_moe.py,
    vocal_parallel_embedding.py, logits_processor.py; vllm/lora/model_manager.py
    ``_create_lora_modules``; python/sglang/srt/lora/mem_pool.py ``get_lora_A_shape`` /
    ``get_lora_B_shape``; llama.cpp src/llama-adapter.cpp).
    """
    config.validate()
    if tensor_parallel_size < 1:
        raise ValueError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
    rank, tp = config.max_lora_rank, tensor_parallel_size
    notes: list[str] = []
    if engine not in LORA_ENGINES:
        return LoRASlots(engine=engine, supported=False, max_loras=config.max_loras, max_lora_rank=rank,
                         max_cpu_loras=config.cpu_loras, lora_dtype=config.lora_dtype, modules=(),
                         elements_per_slot=0, bytes_per_slot=0, slot_bytes=0, adapter_bytes=0, host_bytes=0,
                         profile_activation_bytes=0,
                         notes=(f"LoRA memory is modelled for {', '.join(LORA_ENGINES)} only; {engine} is not sized",))
    if engine == "llama.cpp":
        fmt = WEIGHT_DTYPES["fp16"]
        modules = _llamacpp_modules(model, rank)
        notes.append("llama.cpp preallocates no slots: each --lora adapter is loaded whole (f16 assumed), "
                     "max_loras = adapters loaded")
    else:
        fmt = lora_dtype_format(config.lora_dtype, activation)
        if engine == "vllm":
            modules = _vllm_modules(model, tp, rank)
            if config.target_modules is not None:
                notes.append("vLLM allocates every supported module whatever the adapters target; "
                             "lora_target_modules applies to SGLang only")
            if rank not in VLLM_MAX_LORA_RANKS:
                notes.append(f"vLLM accepts --max-lora-rank in {VLLM_MAX_LORA_RANKS}; {rank} would be refused")
            if model.model_type not in VLLM_EMBEDDING_LORA_MODEL_TYPES:
                notes.append(f"no embed_tokens / lm_head slots: vLLM's {quote(model.model_type)} class declares no "
                             "embedding_modules (only the Llama / Mistral classes do)")
        else:
            modules = _sglang_modules(model, tp, rank, _sglang_targets(config))
    elements = sum(m.elements_per_slot for m in modules)
    per_slot = fmt.bytes_for(elements)
    adapter = fmt.bytes_for(_unsharded_elements(modules, rank))
    punica = 0 if engine == "llama.cpp" else _PUNICA_MAX_SLICES * num_batched_tokens * rank * 4
    return LoRASlots(
        engine=engine, supported=True, max_loras=config.max_loras, max_lora_rank=rank,
        max_cpu_loras=config.cpu_loras, lora_dtype=fmt.name, modules=tuple(modules), elements_per_slot=elements,
        bytes_per_slot=per_slot, slot_bytes=per_slot * config.max_loras, adapter_bytes=adapter,
        host_bytes=adapter * config.cpu_loras, profile_activation_bytes=punica, notes=tuple(notes))


def launch_flags(config: LoRAConfig, engine: str) -> str:
    """The engine's own flags for this LoRA request (vLLM names map to SGLang's and llama.cpp's).

    Sources: vLLM engine arguments (vllm/engine/arg_utils.py: ``--enable-lora --max-loras
    --max-lora-rank --max-cpu-loras --lora-dtype``); SGLang server arguments
    (python/sglang/srt/server_args.py: ``--enable-lora --max-loras-per-batch --max-lora-rank
    --max-loaded-loras --lora-target-modules``); llama.cpp ``--lora FNAME`` (common/arg.cpp). A target module
    named twice is written once.
    """
    if engine == "vllm":
        flags = f"--enable-lora --max-loras {config.max_loras} --max-lora-rank {config.max_lora_rank}"
        if config.max_cpu_loras is not None:
            flags += f" --max-cpu-loras {config.max_cpu_loras}"
        if config.lora_dtype != "auto":
            flags += f" --lora-dtype {'bfloat16' if config.lora_dtype == 'bf16' else 'float16'}"
        return flags
    if engine == "sglang":
        flags = (f"--enable-lora --max-loras-per-batch {config.max_loras} --max-lora-rank {config.max_lora_rank} "
                 f"--lora-target-modules {' '.join(dict.fromkeys(config.target_modules or ('all',)))}")
        if config.max_cpu_loras is not None:
            flags += f" --max-loaded-loras {config.max_cpu_loras}"
        return flags
    if engine == "llama.cpp":
        return " ".join(f"--lora ADAPTER_{i + 1}.gguf" for i in range(config.max_loras))
    return ""
