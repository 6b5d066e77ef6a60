"""Speculative decoding: the drafter's weights, its own KV cache, and the token slots each sequence reserves.

Methods (vLLM ``SpeculativeConfig.method``, vllm/config/speculative.py) and what they add per GPU:

    draft_model  a whole small model: its weights (its own embeddings and lm_head) and every one of
                 its layers' KV per token.
    eagle        one decoder layer of the target's shape + ``fc`` (2 H -> H); embeddings and lm_head
                 shared with the target; one layer of KV per token.
    eagle3       one decoder layer whose q/k/v read 2 H + ``fc`` (3 H -> H) + its own lm_head over
                 ``draft_vocab_size`` tokens (embeddings shared); one layer of KV per token.
    mtp          ``num_nextn_predict_layers`` (DeepSeek-V3/V4, GLM-4.x/5) or ``mtp_num_hidden_layers``
                 (Qwen3.5/3.6) next-n layers: each a decoder layer like the target's last one (a full
                 attention MoE layer) + ``eh_proj`` (2 H -> H) + enorm, hnorm and the shared head's
                 norm; embeddings and lm_head shared; each layer's KV per token.
    ngram        no weights, no KV; only the verified tokens.

    extra weights per GPU   = drafter weights, sharded like the target (the drafter runs at the target's
                              tensor parallel size; replicated ``fc`` / ``eh_proj`` / norms stay whole)
    extra KV per token      = the drafter's layers' KV, in the same block pool and dtype as the target
    extra slots per sequence = k verified draft tokens (every method) + k lookahead slots
                              (EAGLE, MTP and draft models), k = ``num_speculative_tokens``

Sources: vllm/v1/spec_decode/eagle.py (``EagleProposer.load_model``: MTP always shares the target's
``embed_tokens`` and ``lm_head``; EAGLE shares them unless the head has its own; EAGLE-3's head
keeps its ``lm_head`` over the draft vocabulary) and draft_model.py (a draft model keeps its own,
and ``draft_tensor_parallel_size`` must equal the target's); vllm/model_executor/models/
llama_eagle.py (``fc = Linear(2 H, H)``), llama_eagle3.py (``qkv_proj`` over 2 H, ``fc`` over 3 H,
``draft_vocab_size``), deepseek_mtp.py (``eh_proj = Linear(2 H, H)``, ``enorm``, ``hnorm``,
``shared_head.norm``); vllm/v1/worker/gpu_model_runner.py (``get_kv_cache_spec`` walks every
attention layer, the drafter's included, so one block pool holds both); vllm/v1/core/sched/
scheduler.py (``num_lookahead_tokens = num_speculative_tokens`` for EAGLE / MTP / draft models, 0
for n-gram; the scheduled tokens of a decode step are 1 + the k drafts) and vllm/v1/core/
kv_cache_manager.py (``allocate_slots`` rounds computed + new + lookahead tokens up to blocks).
SGLang (``--speculative-algorithm EAGLE/EAGLE3/NEXTN/STANDALONE/NGRAM``) sizes the drafter
differently from vLLM (:func:`sglang_draft_pool_bytes`): the target's pool is profiled first, from the
target's layers alone, and the draft worker then loads its weights and allocates a pool of its own
with the target's token count, in the memory ``mem_fraction_static`` leaves; llama.cpp has draft models only (``--model-draft``, its own context
of the same size, tools/server/server.cpp).

Worked example (tests): a Llama-shaped target of hidden 1,024, 8 heads of 128, intermediate 4,096,
EAGLE head in bf16: one layer = q, k, v, o 4 x 1,024 x 1,024 + gate, up, down 3 x 1,024 x 4,096 +
2 norms x 1,024 = 16,779,264 params; fc 2,048 x 1,024 = 2,097,152; together 37,752,832 B. Its KV:
2 x 8 x 128 x 2 B = 4,096 B per token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.layers import FullAttention, MLAAttention
from planner.model.params import ParamGroup, gated_mlp, linear, model_weight_bytes, norm, weight_bytes
from planner.text import count_noun

SPECULATIVE_METHODS = ("draft_model", "eagle", "eagle3", "mtp", "ngram")
"""vLLM ``--speculative-config`` methods modelled (``deepseek_mtp`` and the other ``*_mtp`` names are ``mtp``)."""

LOOKAHEAD_METHODS = frozenset({"draft_model", "eagle", "eagle3", "mtp"})
"""Methods whose sequences reserve ``num_speculative_tokens`` lookahead slots (vLLM scheduler.py)."""

EAGLE3_DRAFT_VOCAB_SIZE = 32000
"""``draft_vocab_size`` of the published EAGLE-3 heads (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B config.json)."""

MAX_MTP_LAYERS = 64
"""Most next-n (MTP) layers accepted from a config: 9x the most published (MiniMax-M3 ``num_mtp_modules``
7; DeepSeek-V3/V4, GLM and Qwen3.5: 1); the drafter's KV layers are a tuple of this length."""

MAX_SPECULATIVE_TOKENS = 1_024
"""Most draft tokens per step accepted: 16x the app's input bound of 64 (published EAGLE-3 and MTP
setups use 1-8); each sequence reserves twice this many slots."""

MAX_DRAFT_VOCAB_SIZE = 4_194_304
"""Largest EAGLE-3 ``draft_vocab_size`` accepted [tokens]: the largest vocabulary a config may state
(``model_catalog.config_bounds.MAX_VOCAB``); the published heads use 32,000."""

MTP_CONFIG_KEYS = ("num_nextn_predict_layers", "mtp_num_hidden_layers")
"""Config keys that count a model's next-n (MTP) layers: DeepSeek-V3/V4 and GLM-4.x/5 use the first,
Qwen3.5/3.6 the second."""

SGLANG_ALGORITHMS = {"draft_model": "STANDALONE", "eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN",
                     "ngram": "NGRAM"}
"""``--speculative-algorithm`` names SGLang gives the vLLM methods (python/sglang/srt/server_args.py)."""


SGLANG_SPEC_RESERVE_MIB: dict[str, int] = {"draft_model": 6 * 1024, "eagle": 2 * 1024, "eagle3": 2 * 1024,
                                             "mtp": 2 * 1024, "ngram": 0}
"""MiB SGLang adds to its reserved memory when it picks the default ``mem_fraction_static`` for a
speculative algorithm: 6 GiB for STANDALONE (a draft model), 2 GiB for the EAGLE family and NEXTN,
none for NGRAM (python/sglang/srt/server_args.py ``_handle_gpu_memory_settings``: "draft model and
larger cuda graph buffers")."""


MODEL_FREE_METHODS = frozenset({"ngram"})
"""Methods that take no draft model: vLLM's ``SpeculativeConfig.__post_init__`` (vllm/config/speculative.py) makes
the n-gram proposer's draft config the target's own (the ``model`` key is never loaded); SGLang's NGRAM algorithm
draws from its n-gram cache (python/sglang/srt/speculative/cpp_ngram/), not a draft. A ``model`` given with such a
method (a JSON naming an EAGLE head, overridden by ``--speculative-method ngram``) is dropped
(planner/cli/serving.py), never written into a launch command (:func:`launch_flags`)."""

NGRAM_MODEL_NAMES = frozenset({"ngram", "[ngram]"})
"""``model`` values vLLM reads as the n-gram proposer when no method is given (vllm/config/speculative.py)."""

MTP_DRAFT_MODEL_TYPES = frozenset({
    "deepseek_v3", "deepseek_v32", "deepseek_v4", "glm_moe_dsa", "glm5_next", "qwen3_next", "qwen3_5", "qwen3_5_moe",
    "qwen3_5_text", "qwen3_5_moe_text", "ernie4_5_moe", "exaone_moe", "longcat_flash", "pangu_ultra_moe", "step3p5",
    "kimi_k3", "hy_v3", "hy_v4", "minimax_m3_vl"})
"""Draft ``model_type``s vLLM's ``SpeculativeConfig.hf_config_override`` rewrites to an ``*_mtp`` type, so a
draft of that checkpoint is detected as ``mtp`` (a type already ending in ``_mtp`` counts too)."""

MTP_DRAFT_ARCHITECTURES = frozenset({"MiMoForCausalLM", "MiMoV2FlashForCausalLM", "Glm4MoeForCausalLM",
                                     "Glm4MoeLiteForCausalLM", "GlmOcrForConditionalGeneration"})
"""Draft ``architectures[0]`` values the same override rewrites to an MTP model (MiMo, GLM-4.x MoE)."""

UNMODELLED_DRAFT_TYPES = {"medusa": "medusa", "mlp_speculator": "mlp_speculator"}
"""Draft ``model_type``s vLLM detects as a method the planner does not price."""


def infer_method(draft_model_id: str | None, draft_config: Mapping | None = None) -> str:
    """The speculative method vLLM picks for a ``--speculative-config`` without ``"method"`` (or with
    ``"draft_model"``), from what the planner can know without downloading: the draft's name and, when the
    catalog holds it, its config.json.

    vLLM's order (``SpeculativeConfig.__post_init__``, vllm/config/speculative.py, the 2026 source, the same
    chain since the v0.11 release): no method and ``model`` "ngram" / "[ngram]" -> ``ngram``; otherwise the
    method is ``draft_model`` until the draft's ``ModelConfig`` is built, then the name (lower case)
    decides: "eagle-" -> ``eagle`` (yuhuili/EAGLE-LLaMA3-Instruct-8B), else "eagle3" -> ``eagle3``
    (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, RedHatAI/Qwen3-8B-speculator.eagle3), else "dflash" / "dspark";
    then the draft config's ``model_type`` after ``hf_config_override``: ``medusa``, ``mlp_speculator``, an
    MTP type (:data:`MTP_DRAFT_MODEL_TYPES`, :data:`MTP_DRAFT_ARCHITECTURES`; DeepSeek-V3 names itself as its
    own draft) -> ``mtp``; anything else stays ``draft_model``.

    Args:
        draft_model_id: The config's ``model`` (a repo id), or None.
        draft_config: The draft's config.json when the planner has it (the catalog's copy), else None.

    Returns:
        One of :data:`SPECULATIVE_METHODS`.

    Raises:
        ValueError: no model to infer from, a method the planner does not price (medusa, mlp_speculator,
            dflash, dspark), or a draft the planner can neither name-match nor read (the message says to add
            ``"method"`` or to pick a catalog draft model).
    """
    if not draft_model_id:
        raise ValueError("speculative decoding needs a method or a draft model: add \"method\" (" +
                         ", ".join(SPECULATIVE_METHODS) + ") or \"model\" to --speculative-config (vLLM: "
                         "num_speculative_tokens was provided but without speculative model)")
    if draft_model_id in NGRAM_MODEL_NAMES:
        return "ngram"
    name = draft_model_id.lower()
    if "eagle-" in name:
        return "eagle"
    if "eagle3" in name:
        return "eagle3"
    for hint in ("dflash", "dspark"):
        if hint in name:
            raise ValueError(f"vLLM reads draft {draft_model_id!r} as a {hint} drafter, which the planner does not "
                             f"price; give \"method\" ({', '.join(SPECULATIVE_METHODS)}) if it is another kind")
    config = draft_config or {}
    text = config.get("text_config")
    kinds = {str(config.get("model_type", "")), str(text.get("model_type", "")) if isinstance(text, Mapping) else ""}
    architectures = config.get("architectures") or ()
    first = architectures[0] if isinstance(architectures, (list, tuple)) and architectures else ""
    for kind in kinds:
        if kind in UNMODELLED_DRAFT_TYPES:
            raise ValueError(f"vLLM reads draft {draft_model_id!r} (model_type {kind!r}) as {UNMODELLED_DRAFT_TYPES[kind]}"
                             ", which the planner does not price; use an EAGLE / EAGLE-3 head, MTP, n-gram or a "
                             "draft model")
    if kinds & MTP_DRAFT_MODEL_TYPES or any(k.endswith("_mtp") for k in kinds) or first in MTP_DRAFT_ARCHITECTURES:
        return "mtp"
    if not config:
        raise ValueError(f"cannot tell the speculative method of {draft_model_id!r} from its name (vLLM reads "
                         "\"eagle-\" as eagle and \"eagle3\" as eagle3, otherwise the draft's config.json, which the "
                         "catalog does not hold): add \"method\" (" + ", ".join(SPECULATIVE_METHODS) +
                         ") to --speculative-config, or name a catalog model as the draft")
    return "draft_model"


def sglang_draft_pool_bytes(target_tokens: int, page_size: int, draft_cell_bytes: int) -> int:
    """The SGLang draft worker's own KV pool on one GPU [bytes].

    SGLang profiles the target worker first: ``profile_max_num_token`` divides the memory left under
    ``mem_fraction_static`` by the target's cell (its own layers only; the draft is not loaded yet), and
    ``init_memory`` then sets ``draft_runner_cache_size = max_total_num_tokens`` (after page rounding).
    The draft worker, built afterwards on the same GPU, overrides its own profiled count with that
    size and allocates its pool with it (``MHATokenToKVPool`` / ``MLATokenToKVPool`` of ``size +
    page_size`` slots, the first page padding), the cell being the draft's: one layer for an EAGLE /
    EAGLE-3 head (its config's ``num_hidden_layers``), ``num_nextn_predict_layers`` for NEXTN, every
    layer of a STANDALONE draft model. Target and draft share slot indices, so the pools are the same
    length. Both the draft's weights and this pool come out of the ``1 - mem_fraction_static`` share,
    not out of the target's KV tokens.

        pool = (target tokens + page_size) x draft cell

    Worked example (tests): target 100,000 tokens, page 1, EAGLE head of 8 KV heads x 128 in bf16
    (cell 2 x 8 x 128 x 2 = 4,096 B): (100,000 + 1) x 4,096 = 409,604,096 B.

    Older releases sized it with headroom, ``tokens + max_num_reqs x (steps x topk + draft tokens) +
    100`` (python/sglang/srt/model_executor/model_runner.py before the KV-cache mixin); this follows
    the current rule.

    Sources: python/sglang/srt/model_executor/model_runner_kv_cache_mixin.py (``profile_max_num_token``,
    ``init_memory``: ``draft_runner_cache_size``), python/sglang/srt/speculative/eagle_worker.py and
    standalone_worker.py (the draft ``TpModelWorker`` with ``is_draft_worker=True``).

    Raises:
        ValueError: a negative size.
    """
    if min(target_tokens, page_size, draft_cell_bytes) < 0:
        raise ValueError(f"sizes must be >= 0, got tokens {target_tokens}, page {page_size}, cell {draft_cell_bytes}")
    if target_tokens == 0 or draft_cell_bytes == 0:
        return 0
    return (target_tokens + page_size) * draft_cell_bytes


@dataclass(frozen=True, kw_only=True)
class SpeculativeConfig:
    """Speculative decoding as asked (vLLM ``--speculative-config`` keys).

    Attributes:
        method: One of :data:`SPECULATIVE_METHODS`.
        num_speculative_tokens: Draft tokens per step k, >= 1.
        draft: The draft model (``draft_model``), or an EAGLE head's own config; None = built from
            the target's shapes (EAGLE / EAGLE-3 / MTP).
        draft_model_id: The draft's id for the launch command ("model" of the config).
        num_mtp_layers: Next-n layers the checkpoint ships (:data:`MTP_CONFIG_KEYS`); 0 = none.
        draft_vocab_size: EAGLE-3's draft vocabulary [tokens].
        passthrough: ``--speculative-config`` keys that change no memory (:data:`PASSTHROUGH_KEYS`: n-gram's
            lookup window), as ``(key, value)`` pairs, written back into vLLM's flag as given.
    """

    method: str
    num_speculative_tokens: int = 1
    draft: ModelSpec | None = field(default=None, compare=False)
    draft_model_id: str = ""
    num_mtp_layers: int = 0
    draft_vocab_size: int = EAGLE3_DRAFT_VOCAB_SIZE
    passthrough: tuple[tuple[str, int], ...] = ()

    def validate(self) -> None:
        """Raise ValueError naming the bad setting and what it takes."""
        if self.method not in SPECULATIVE_METHODS:
            raise ValueError(f"unknown speculative method {self.method!r}; choose one of "
                             f"{', '.join(SPECULATIVE_METHODS)}")
        if not self.num_speculative_tokens >= 1:
            raise ValueError(f"num_speculative_tokens must be at least 1, got {self.num_speculative_tokens}")
        if self.num_speculative_tokens > MAX_SPECULATIVE_TOKENS:
            raise ValueError(f"num_speculative_tokens is {self.num_speculative_tokens:,}; at most "
                             f"{MAX_SPECULATIVE_TOKENS:,} are accepted (published setups draft 1-8 tokens)")
        if not 0 <= self.num_mtp_layers <= MAX_MTP_LAYERS:
            raise ValueError(f"the model's MTP layer count {self.num_mtp_layers:,} is outside 0 .. {MAX_MTP_LAYERS}")
        if self.method == "draft_model" and self.draft is None:
            raise ValueError("speculative method draft_model needs the draft model (--speculative-model ID)")
        if self.method == "mtp" and self.num_mtp_layers < 1:
            raise ValueError("speculative method mtp needs a model whose config has num_nextn_predict_layers or "
                             "mtp_num_hidden_layers (DeepSeek-V3/V4, GLM-4.x/5, Qwen3.5/3.6); this one has none")
        if self.draft_vocab_size < 1:
            raise ValueError(f"draft_vocab_size must be >= 1, got {self.draft_vocab_size}")
        if self.draft_vocab_size > MAX_DRAFT_VOCAB_SIZE:
            raise ValueError(f"draft_vocab_size is {self.draft_vocab_size:,}; at most {MAX_DRAFT_VOCAB_SIZE:,} is "
                             "accepted (the published EAGLE-3 heads use 32000)")

    @property
    def extra_tokens_per_sequence(self) -> int:
        """Token slots each sequence holds beyond its context: k verified drafts, plus k lookahead
        slots for the methods that reserve them [tokens]."""
        k = self.num_speculative_tokens
        return 2 * k if self.method in LOOKAHEAD_METHODS else k


@dataclass(frozen=True, kw_only=True)
class SpeculativeCost:
    """What the drafter costs on one GPU (bytes unless named).

    Attributes:
        method, num_speculative_tokens: The request.
        draft_params: Parameters the drafter adds (shared embeddings / lm_head not counted).
        weights_bytes: Their bytes on one GPU.
        kv_model: The drafter's layers as a layers-only model (its KV per token), or None.
        kv_bytes_per_token: Their KV per token on one GPU at TP 1 in the target's KV dtype (for the text).
        extra_tokens_per_sequence: Slots each sequence reserves beyond its context [tokens].
        notes: Assumptions.
    """

    method: str
    num_speculative_tokens: int
    draft_params: int
    weights_bytes: int
    kv_model: ModelSpec | None
    extra_tokens_per_sequence: int
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self, kv_bytes_per_token_per_gpu: int) -> dict:
        """JSON keys of the ``serving.speculative`` block."""
        return {"method": self.method, "num_speculative_tokens": self.num_speculative_tokens,
                "draft_params": self.draft_params, "draft_weights_bytes_per_gpu": self.weights_bytes,
                "draft_kv_cache_bytes_per_token_per_gpu": kv_bytes_per_token_per_gpu,
                "draft_layers": 0 if self.kv_model is None else self.kv_model.num_layers,
                "extra_tokens_per_sequence": self.extra_tokens_per_sequence, "notes": list(self.notes)}


def mtp_layers_from_config(config: Mapping) -> int:
    """Next-n (MTP) layers a config states (:data:`MTP_CONFIG_KEYS`, in ``text_config`` too); 0 when none.

    Raises:
        ValueError: more than :data:`MAX_MTP_LAYERS` (naming the key).
    """
    text = config.get("text_config")
    for where, scope in (("", config), ("text_config.", text if isinstance(text, Mapping) else {})):
        for key in MTP_CONFIG_KEYS:
            value = scope.get(key)
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                if value > MAX_MTP_LAYERS:
                    shown = f"{value:,}" if value < 10**30 else "a number of more than 30 digits"
                    raise ValueError(f"config key '{where}{key}' is {shown}; at most {MAX_MTP_LAYERS} MTP layers are "
                                     "accepted (published models have 1-7): fix the value")
                return value
    return 0


_OTHER_MIXERS = ("linear_attn", "mamba", "mixer", "conv1d")
"""Name parts of the non-attention mixers of hybrid models (an MTP layer is full attention)."""


def _router_layers(model: ModelSpec) -> int:
    """MoE layers: the count of the router weight (one per MoE layer), 0 for dense models."""
    for g in model.params:
        if g.kind == "router" and g.name.endswith(".weight") and model.num_experts and g.shape[0] == model.num_experts:
            return g.count
    return 0


def last_layer_groups(model: ModelSpec) -> tuple[ParamGroup, ...]:
    """The parameter groups of one decoder layer like the model's last: full attention, and the MoE
    block (router, every routed expert, shared experts) when the model is MoE. Counts become one
    layer's (experts: ``count // MoE layers``).

    Groups are read by name: ``layers.*`` tensors only; the mixers of hybrid models' linear-attention
    / Mamba layers and the dense MLP of an MoE model's first dense layers are left out (DeepSeek-V3's
    ``first_k_dense_replace`` layers: ``mlp.gate_proj`` of count 3 against 58 routers).
    """
    moe_layers = _router_layers(model)
    out = []
    for g in model.params:
        if not g.name.startswith("layers.") or any(part in g.name for part in _OTHER_MIXERS):
            continue
        expert = ".experts." in g.name
        if moe_layers and ".mlp." in g.name and not expert and "shared_expert" not in g.name \
                and g.kind != "router" and g.count != moe_layers:
            continue  # a dense layer's MLP
        copies = g.count // moe_layers if expert and moe_layers and g.count % moe_layers == 0 else 1
        out.append(replace(g, count=copies))
    return tuple(out)


def _attention_groups(model: ModelSpec) -> tuple[ParamGroup, ...]:
    """One layer's attention tensors and its two norms."""
    return tuple(g for g in last_layer_groups(model)
                 if ("attn" in g.name or g.name.endswith("layernorm.weight")) and ".mlp." not in g.name)


def _last_attention_layer(model: ModelSpec):
    """The last layer that holds per-token KV (what an EAGLE head or an MTP layer caches)."""
    for layer in reversed(model.layers):
        if isinstance(layer, (FullAttention, MLAAttention)):
            return layer
    raise ValueError(f"{model.model_id} has no attention layer for a drafter to copy")


def _layers_model(model: ModelSpec, layers: tuple, suffix: str) -> ModelSpec:
    return ModelSpec(model_id=f"{model.model_id}#{suffix}", model_type=model.model_type, layers=layers, params=(),
                     hidden_size=model.hidden_size, num_attention_heads=model.num_attention_heads,
                     num_key_value_heads=model.num_key_value_heads, head_dim=model.head_dim,
                     vocab_size=model.vocab_size, torch_dtype=model.torch_dtype)


def _replicated(name: str, in_features: int, out_features: int) -> tuple[ParamGroup, ...]:
    """A plain ``nn.Linear`` / ``ReplicatedLinear``: whole on every GPU, in the activation dtype."""
    return (ParamGroup(name=f"{name}.weight", shape=(out_features, in_features), kind="router"),)


def drafter_groups(model: ModelSpec, config: SpeculativeConfig) -> tuple[ParamGroup, ...]:
    """The parameter groups the drafter adds to the target (module docstring), built from the target's shapes."""
    h = model.hidden_size
    if config.method == "mtp":
        n = config.num_mtp_layers
        per_layer = (*last_layer_groups(model), *_replicated("mtp.eh_proj", 2 * h, h),
                     *norm("mtp.enorm", h), *norm("mtp.hnorm", h), *norm("mtp.shared_head.norm", h))
        return tuple(replace(g, count=g.count * n) for g in per_layer)
    layer = _attention_groups(model)
    mlp_width = model.intermediate_size or 4 * h
    mlp = gated_mlp("eagle.mlp", hidden_size=h, intermediate_size=mlp_width)
    if config.method == "eagle":
        return (*layer, *mlp, *_replicated("eagle.fc", 2 * h, h))
    # eagle3: q/k/v read the concatenated embeddings and hidden states (2 H): the same tensors again.
    qkv_again = tuple(g for g in layer if g.kind == "linear" and g.name.rsplit(".", 2)[-2] in ("q_proj", "k_proj",
                                                                                             "v_proj"))
    return (*layer, *qkv_again, *mlp, *_replicated("eagle3.fc", 3 * h, h), *norm("eagle3.norm", h),
            *linear("eagle3.lm_head", h, config.draft_vocab_size))


def speculative_cost(model: ModelSpec, config: SpeculativeConfig, *, weight_dtype_name: str = "auto",
                     tensor_parallel_size: int = 1, engine: str = "vllm") -> SpeculativeCost:
    """What ``config``'s drafter costs on one of ``tensor_parallel_size`` GPUs.

    Args:
        model: The target model.
        config: Method, draft tokens and the draft model / MTP layer count.
        weight_dtype_name: The target's weight dtype (heads and MTP layers are stored like it; a
            draft model takes its own checkpoint's ``auto``).
        tensor_parallel_size: GPUs the target (and so the drafter) is split over.
        engine: Engine family (``vllm``, ``sglang``; ``llama.cpp`` has draft models only).

    Raises:
        ValueError: an invalid config, or a method the engine lacks.

    Sources: module docstring.
    """
    config.validate()
    tp = tensor_parallel_size
    notes: list[str] = []
    if engine == "llama.cpp" and config.method != "draft_model":
        raise ValueError(f"llama.cpp has no {config.method} speculative decoding (only a draft model: --model-draft)")
    if engine not in ("vllm", "sglang", "llama.cpp"):
        raise ValueError(f"speculative decoding is modelled for vLLM, SGLang and llama.cpp, not {engine}")
    if engine == "sglang":
        notes.append("SGLang: the draft worker holds its own KV pool of the target's token count beside the target's, "
                     "both its weights and that pool in the share mem_fraction_static leaves (the draft's CUDA "
                     "graphs and activations there are not priced: an estimate)")
    if config.method == "ngram":
        return SpeculativeCost(method="ngram", num_speculative_tokens=config.num_speculative_tokens, draft_params=0,
                               weights_bytes=0, kv_model=None,
                               extra_tokens_per_sequence=config.extra_tokens_per_sequence,
                               notes=(*notes, "n-gram proposals come from the prompt: no weights, no KV"))
    if config.method == "draft_model":
        draft = config.draft
        weights = model_weight_bytes(draft, "auto", 1 if engine == "llama.cpp" else tp)
        return SpeculativeCost(method="draft_model", num_speculative_tokens=config.num_speculative_tokens,
                               draft_params=draft.num_parameters, weights_bytes=weights,
                               kv_model=_layers_model(draft, draft.layers, "draft"),
                               extra_tokens_per_sequence=config.extra_tokens_per_sequence,
                               notes=(*notes, f"draft model {draft.model_id} at its checkpoint dtype, " + (
                                   "whole on the GPU (llama.cpp splits layers, not tensors)" if engine == "llama.cpp"
                                   else f"tensor parallel {tp} like the target (vLLM requires it)")))
    groups = drafter_groups(model, config)
    params = sum(g.total_numel for g in groups)
    weights = weight_bytes(groups, weight_dtype(weight_dtype_name), model.torch_dtype, tp)
    attention = _last_attention_layer(model)
    layers = (attention,) * (config.num_mtp_layers if config.method == "mtp" else 1)
    if config.method == "mtp":
        notes.append(f"{count_noun(config.num_mtp_layers, 'MTP layer')} shaped like the last decoder layer; "
                     "embeddings and lm_head shared with the target")
        if config.num_speculative_tokens > config.num_mtp_layers:
            notes.append(f"{config.num_speculative_tokens} draft tokens from "
                         f"{count_noun(config.num_mtp_layers, 'MTP layer')}: vLLM runs the layers again for the "
                         "extra tokens (no extra weights)")
    else:
        notes.append(f"{config.method.upper()} head built from the target's shapes (one dense layer of "
                     f"intermediate {model.intermediate_size or 4 * model.hidden_size:,}); embeddings shared"
                     + (f", its own lm_head over {config.draft_vocab_size:,} draft tokens" if config.method == "eagle3"
                        else " and lm_head shared")
                     + (f"; the engine needs the head's repo: replace {draft_placeholder(config)} in the launch "
                        "command with it" if not config.draft_model_id else ""))
    return SpeculativeCost(method=config.method, num_speculative_tokens=config.num_speculative_tokens,
                           draft_params=params, weights_bytes=weights,
                           kv_model=_layers_model(model, layers, config.method),
                           extra_tokens_per_sequence=config.extra_tokens_per_sequence, notes=tuple(notes))


PASSTHROUGH_KEYS = frozenset({"prompt_lookup_max", "prompt_lookup_min"})
"""vLLM ``--speculative-config`` keys the planner accepts and writes back but does not price: the n-gram
proposer's lookup window (vllm/config/speculative.py) holds no device memory."""

DRAFT_PLACEHOLDERS = {"eagle": "EAGLE_DRAFT_REPO", "eagle3": "EAGLE3_DRAFT_REPO"}
"""The ``"model"`` a vLLM launch names for an EAGLE / EAGLE-3 head the user did not give, to be replaced.

vLLM's ``SpeculativeConfig.__post_init__`` (vllm/config/speculative.py) fills a missing ``model`` only for
``mtp`` (the target's own checkpoint), ``ngram`` and the other proposers without weights; any other method given
``num_speculative_tokens`` without ``model`` stops with "num_speculative_tokens was provided but without
speculative model". Of the planner's methods that leaves ``eagle`` and ``eagle3`` (``draft_model`` always names
its draft: :meth:`SpeculativeConfig.validate`). The planner prices such a head from the target's shapes
(:func:`drafter_groups`); the CLI reads a placeholder back as no repo (planner/cli/serving.py)."""


def draft_placeholder(config: SpeculativeConfig | None) -> str:
    """:data:`DRAFT_PLACEHOLDERS`' name for ``config`` when it is an EAGLE head without a repo, else ``""``."""
    if config is None or config.draft_model_id:
        return ""
    return DRAFT_PLACEHOLDERS.get(config.method, "")


def placeholder_comment(config: SpeculativeConfig | None) -> str:
    """The shell comment a vLLM launch with a :func:`draft_placeholder` carries (``""`` without one)."""
    name = draft_placeholder(config)
    head = {"eagle": "EAGLE", "eagle3": "EAGLE-3"}.get(config.method, "") if name else ""
    return f"replace {name} with the {head} head's repo trained for this model" if name else ""


def launch_flags(config: SpeculativeConfig, engine: str) -> str:
    """The engine's own flags for this speculative request.

    Sources: vLLM ``--speculative-config`` (vllm/engine/arg_utils.py, keys of
    vllm/config/speculative.py); SGLang ``--speculative-algorithm --speculative-draft-model-path
    --speculative-num-steps --speculative-eagle-topk --speculative-num-draft-tokens``
    (python/sglang/srt/server_args.py); llama.cpp ``--model-draft --draft-max`` (common/arg.cpp).
    """
    k = config.num_speculative_tokens
    draft = "" if config.method in MODEL_FREE_METHODS else config.draft_model_id
    if engine == "vllm":  # an EAGLE head without its repo names DRAFT_PLACEHOLDERS' name (vLLM needs a model)
        draft = draft or draft_placeholder(config)
        model = f', "model": "{draft}"' if draft else ""
        extra = "".join(f', "{key}": {value}' for key, value in config.passthrough)
        return (f"--speculative-config '{{\"method\": \"{config.method}\"{model}, \"num_speculative_tokens\": {k}"
                f"{extra}}}'")
    if engine == "sglang":
        flags = f"--speculative-algorithm {SGLANG_ALGORITHMS[config.method]}"
        draft = draft or draft_placeholder(config)  # SGLang's EAGLE workers load the head from this path too
        if draft:
            flags += f" --speculative-draft-model-path {draft}"
        if config.method != "ngram":
            flags += f" --speculative-num-steps {k} --speculative-eagle-topk 1 --speculative-num-draft-tokens {k + 1}"
        return flags
    if engine == "llama.cpp" and config.method == "draft_model":
        return f"--model-draft DRAFT.gguf --draft-max {k}"
    return ""
