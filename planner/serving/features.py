"""The one serving hook of the budget chain: :class:`ServingFeatures` in, :class:`ServingEffects` out.

:class:`planner.budget.PlanRequest` has an optional ``serving`` field holding a
:class:`ServingFeatures`; ``None`` (the default) leaves every number of :func:`planner.budget.plan`
as it was. When set, :func:`serving_effects` says what the features change on one GPU, and the
budget chain applies it in four places, each as vLLM accounts for it:

    weights_per_gpu  += LoRA slots + draft / MTP / EAGLE weights                    ("Model loading took")
    activation       += profile-pass extras (LoRA punica buffer, encoder cache)     (determine_available_memory)
    KV per token     += the draft's own layers (the same block pool)                (get_kv_cache_spec)
    tokens per seq   += lookahead slots (num_speculative_tokens) + image / video tokens (allocate_slots)

Sources: vllm/v1/worker/gpu_model_runner.py (``load_model`` loads the drafter and the LoRA
manager inside the memory profiler that reports "Model loading took"; ``get_kv_cache_spec`` walks
every attention layer, the drafter's included); vllm/v1/core/sched/scheduler.py
(``num_lookahead_tokens``); vllm/v1/core/kv_cache_manager.py (``allocate_slots``); the feature
modules name the rest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from planner.model import ModelSpec
from planner.model.kv import KVProfile, kv_profile
from planner.model.layers import CacheDtypes
from planner.serving.lora import LoRAConfig, LoRASlots, lora_slots
from planner.serving.lora import launch_flags as lora_flags
from planner.serving.multimodal import (
    MultimodalConfig,
    MultimodalCost,
    engine_default_media,
    multimodal_cost,
    vision_from_config,
)
from planner.serving.multimodal import launch_flags as multimodal_flags
from planner.serving.offload import OffloadConfig, OffloadPlan, offload_plan
from planner.serving.offload import launch_flags as offload_flags
from planner.serving.speculative import SpeculativeConfig, SpeculativeCost, speculative_cost
from planner.serving.speculative import launch_flags as speculative_flags

SERVING_ENGINES = ("vllm", "sglang", "llama.cpp")
"""Engine families the serving features are modelled for (others get notes, not numbers)."""

LAUNCH_FLAG_ENGINES = ("vllm", "sglang")
"""Engines whose launch flags the ``serving.launch_flags`` JSON lists (plus the planned engine)."""


def engine_family(engine: str) -> str:
    """``vllm`` for every vLLM profile id (``vllm-v0.11``, ...), else the id itself (``sglang``, ``llama.cpp``)."""
    for family in ("vllm", "sglang", "trtllm", "tgi", "llama.cpp", "transformers"):
        if engine == family or engine.startswith(family + "-"):
            return family
    return engine


@dataclass(frozen=True, kw_only=True)
class ServingFeatures:
    """The serving features switched on for one plan (None = off).

    Attributes:
        engine: Engine profile id whose rules apply (``vllm``, ``vllm-v0``, ``sglang``, ``llama.cpp``, ...;
            LoRA and speculative decoding follow its family, the offload tier the version).
        lora: LoRA adapter slots.
        speculative: Speculative decoding (draft model, EAGLE / EAGLE-3 head, MTP layers, n-gram).
        offload: KV offload to host memory.
        multimodal: Images per request (Qwen-VL-family vision fields).
    """

    engine: str = "vllm"
    lora: LoRAConfig | None = None
    speculative: SpeculativeConfig | None = None
    offload: OffloadConfig | None = None
    multimodal: MultimodalConfig | None = None

    def validate(self) -> None:
        """Raise ValueError for the first bad feature setting."""
        if self.lora is not None:
            self.lora.validate()
        if self.speculative is not None:
            self.speculative.validate()
        if self.offload is not None:
            self.offload.validate()
        if self.multimodal is not None:
            self.multimodal.validate()

    @property
    def family(self) -> str:
        """The engine family (:func:`engine_family`)."""
        return engine_family(self.engine)

    @property
    def enabled(self) -> bool:
        """True when some feature is switched on."""
        return any(f is not None for f in (self.lora, self.speculative, self.offload, self.multimodal))

    @property
    def asked(self) -> bool:
        """True when some feature was asked for: not only vLLM's default encoder profile
        (:func:`with_engine_defaults`)."""
        mm = self.multimodal
        return (any(f is not None for f in (self.lora, self.speculative, self.offload))
                or (mm is not None and not mm.engine_default))


def with_engine_defaults(features: ServingFeatures | None, *, engine: str, raw_config: Mapping,
                         text_only: bool = False) -> ServingFeatures | None:
    """``features`` with what the engine does unasked: vLLM's default encoder profile for a model whose
    config.json has a vision config the planner reads (:func:`planner.serving.multimodal.engine_default_media`),
    when no image / video was asked for and the server is not text only. The CLI
    (planner/cli/serving.py ``serving_from_args``) and the pages (ui/serving.py ``serving_inputs``) both call it,
    so they charge the same profile. Other engine families do not profile an encoder: ``features`` unchanged.

    Args:
        features: The features the flags or the page's inputs ask for (None = none).
        engine: Engine profile id of the plan (``vllm``, ``vllm-v0.11``, ``sglang``, ...).
        raw_config: The model's config.json (empty for a GGUF or an unknown id: unchanged).
        text_only: The server loads no tower (``--language-model-only``, every modality limited to 0).

    Raises:
        ValueError: a vision config field out of bounds (:func:`planner.serving.multimodal.vision_from_config`).
    """
    if text_only or engine_family(engine) != "vllm" or (features is not None and features.multimodal is not None):
        return features
    vision = vision_from_config(raw_config)
    if vision is None:
        return features
    if features is None:
        return ServingFeatures(engine=engine, multimodal=engine_default_media(vision))
    return replace(features, multimodal=engine_default_media(vision))


def budget_features(features: ServingFeatures | None, *, engine: str, raw_config: Mapping,
                    text_only: bool = False) -> ServingFeatures | None:
    """The features the budget (:func:`planner.budget.plan`, the newest vLLM's overhead) prices for a link or a
    ``plan`` run under ``engine``: :func:`with_engine_defaults` under ``engine``, and under another family with no
    feature asked (``features`` None) vLLM's default encoder profile all the same, as GQA savings, Concurrency,
    Allocation and ``plan`` without ``--engine`` charge it. QA: Gemma 4 26B-A4B on an H100 at 32,768 tokens under
    ``engine=sglang`` had 22 users on Home and 17 on those pages. That engine's own view keeps ``features`` as
    :func:`with_engine_defaults` gives them, without the profile. SGLang runs no encoder profile pass, but it does
    hold memory back for a vision tower: ``adjust_mem_fraction_for_vlm`` scales ``mem_fraction_static`` by 0.95 x a
    factor of 0.8 to 1.05 from the tower's layers x hidden size squared (python/sglang/srt/server_args.py
    ``_handle_gpu_memory_settings``; later builds python/sglang/srt/arg_groups/memory_hook.py; its engine view
    applies it: :mod:`planner.engines.sglang_vlm`), so a budget with no encoder term would overstate its users.
    Features asked under another family keep that family's rules and carry no profile
    (:func:`budget_encoder_left_out` says so).

    Args:
        features: The features for ``engine`` (:func:`with_engine_defaults` applied or not; None = none).
        engine: The link's or the run's engine profile id.
        raw_config: The model's config.json (its vision config).
        text_only: The server loads no tower.
    """
    features = with_engine_defaults(features, engine=engine, raw_config=raw_config, text_only=text_only)
    if features is None and engine_family(engine) != "vllm":
        return with_engine_defaults(None, engine="vllm", raw_config=raw_config, text_only=text_only)
    return features


def budget_encoder_left_out(features: ServingFeatures | None, *, engine: str, raw_config: Mapping,
                            text_only: bool = False) -> bool:
    """True when the budget under ``engine`` leaves vLLM's default encoder profile out although the model has a
    tower the planner reads: features asked under another family, priced by its rules (:func:`budget_features`)."""
    if text_only or engine_family(engine) == "vllm" or features is None or features.multimodal is not None:
        return False
    return vision_from_config(raw_config) is not None


def for_engine(features: ServingFeatures | None, engine: str) -> ServingFeatures | None:
    """``features`` priced under ``engine``: its id swapped in, and vLLM's default encoder profile
    (:func:`with_engine_defaults`) left out for another family, which profiles none (None when nothing is left)."""
    if features is None:
        return None
    mm = features.multimodal
    if mm is not None and mm.engine_default and engine_family(engine) != "vllm":
        features = replace(features, multimodal=None)
    return replace(features, engine=engine) if features.enabled else None


def features_off(features: ServingFeatures | None) -> ServingFeatures | None:
    """What a server started without the asked features' flags still runs (the "features off" plan of Home's
    serving panel): vLLM's default encoder profile (:func:`planner.serving.multimodal.engine_default_media`) for a
    vision model under a vLLM-family engine, whether the features asked for images or left the default; None
    otherwise (other families profile no encoder; a text-only server has no multimodal feature).

    Worked example: Qwen3-VL-8B with 2 images per request and LoRA on: features off = no image per request and
    no adapter slots, but the encoder profile vLLM runs unasked is still charged.
    """
    mm = None if features is None else features.multimodal
    if mm is None or engine_family(features.engine) != "vllm":
        return None
    default = mm if mm.engine_default else engine_default_media(mm.vision)
    return ServingFeatures(engine=features.engine, multimodal=default)


@dataclass(frozen=True, kw_only=True)
class ServingEffects:
    """What the features change on one GPU (bytes unless named).

    Attributes:
        engine: Engine profile id (``vllm``, ``vllm-v0``, ``sglang``, ...).
        extra_weights_bytes: Added to the weights per GPU (LoRA slots, draft weights).
        extra_activation_bytes: Added to the profile-pass activation per GPU.
        extra_tokens_per_sequence: Token slots each sequence holds beyond its context [tokens].
        extra_kv_model: A layers-only model of the KV the features add per token (draft layers), or None.
        host_bytes: Host memory per GPU worker the features use (adapter cache, offload).
        lora: The adapter slots, when on.
        speculative: The drafter's cost, when on.
        offload: The host tier, when on.
        multimodal: The images' tokens, encoder cache and tower, when on (``extra_activation_bytes`` takes
            its profile-pass share only after :meth:`with_profile_peak`).
        extra_kv_bytes_per_token: KV per token the extra layers add on one GPU [bytes].
        notes: Assumptions and "not modelled" statements.
    """

    engine: str
    extra_weights_bytes: int = 0
    extra_activation_bytes: int = 0
    extra_tokens_per_sequence: int = 0
    extra_kv_model: ModelSpec | None = None
    host_bytes: int = 0
    lora: LoRASlots | None = None
    speculative: SpeculativeCost | None = None
    offload: OffloadPlan | None = None
    multimodal: MultimodalCost | None = None
    extra_kv_bytes_per_token: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)

    def with_profile_peak(self, language_model_peak_bytes: int) -> ServingEffects:
        """These effects with the multimodal profile-pass share added to ``extra_activation_bytes``:
        the encoder cache, held while the language model is profiled, plus whatever the vision forward
        peak exceeds that model's own peak by (:mod:`planner.serving.multimodal`).

        Args:
            language_model_peak_bytes: The language model's profile-pass activation peak [bytes].
        """
        mm = self.multimodal
        if mm is None:
            return self
        extra = mm.encoder_cache_bytes + max(0, mm.vision_forward_bytes - language_model_peak_bytes)
        return replace(self, extra_activation_bytes=self.extra_activation_bytes + extra)

    def kv_profile(self, base: KVProfile, extra: KVProfile | None) -> KVProfile | ShiftedProfile:
        """``base`` with the features' extra layers' groups (``extra``) and extra tokens per sequence."""
        profile = base if extra is None else KVProfile(groups=base.groups + extra.groups, block_size=base.block_size)
        if self.extra_tokens_per_sequence:
            return ShiftedProfile(inner=profile, extra_tokens=self.extra_tokens_per_sequence)
        return profile

    def plan_dict(self, *, budget_bytes: int, kv_needed_bytes: int, features: ServingFeatures,
                  kv_bytes_per_token_per_gpu: int = 0, block_size: int = 16, kv_bytes_per_sequence_per_gpu: int = 0,
                  capacity_tokens: int = 0) -> dict:
        """The ``serving`` JSON block of a plan (sizes per GPU).

        Args:
            budget_bytes: The KV budget with the features on [bytes].
            kv_needed_bytes: What the plan's batch needs at its context, features on [bytes].
            features: The request, for the launch flags.
            kv_bytes_per_token_per_gpu, block_size, kv_bytes_per_sequence_per_gpu, capacity_tokens: The
                plan's paged KV per token, block, per-sequence KV and GPU capacity (the offload tier's sizes).
        """
        out: dict = {
            "engine": self.engine, "engine_family": engine_family(self.engine),
            "extra_weights_bytes_per_gpu": self.extra_weights_bytes,
            "extra_activation_bytes_per_gpu": self.extra_activation_bytes,
            "extra_tokens_per_sequence": self.extra_tokens_per_sequence,
            "extra_kv_cache_bytes_per_token_per_gpu": self.extra_kv_bytes_per_token,
            "host_bytes_per_gpu": self.host_bytes,
            "kv_cache_budget_bytes_without_serving": budget_bytes + self.extra_weights_bytes
            + self.extra_activation_bytes,
        }
        if self.lora is not None:
            lora = self.lora.to_dict()
            free = budget_bytes + self.lora.slot_bytes - kv_needed_bytes
            lora["max_loras_that_fit"] = self.lora.slots_that_fit(free)
            out["lora"] = lora
        if self.speculative is not None:
            out["speculative"] = self.speculative.to_dict(self.extra_kv_bytes_per_token)
        if self.multimodal is not None:
            out["multimodal"] = self.multimodal.to_dict()
        if self.offload is not None:
            out["offload"] = self.offload.to_dict(
                kv_bytes_per_token_per_gpu=kv_bytes_per_token_per_gpu, block_size=block_size,
                kv_bytes_per_sequence_per_gpu=kv_bytes_per_sequence_per_gpu, gpu_kv_capacity_tokens=capacity_tokens)
        out["launch_flags"] = launch_flags(features)
        out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class ShiftedProfile:
    """A KV profile whose sequences each hold ``extra_tokens`` more token slots than their context.

    ``bytes_per_sequence(n) = inner.bytes_per_sequence(n + extra_tokens)``: the lookahead slots vLLM's
    scheduler reserves (``allocate_slots(..., num_lookahead_tokens)``) and the image tokens a prompt
    carries both sit in the same blocks as the text. Worked example: block 16, context 16, 2 extra
    tokens: 18 slots round up to 2 blocks = 32 token slots, where the plain sequence took one block.
    """

    inner: KVProfile
    extra_tokens: int

    @property
    def groups(self):
        return self.inner.groups

    @property
    def block_size(self) -> int:
        return self.inner.block_size

    @property
    def bytes_per_token(self) -> int:
        return self.inner.bytes_per_token

    def bytes_per_sequence(self, num_tokens: int) -> int:
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        return self.inner.bytes_per_sequence(num_tokens + self.extra_tokens)

    def bytes_per_sequences(self, token_counts) -> list[int]:
        if token_counts and min(token_counts) < 0:
            raise ValueError(f"num_tokens must be >= 0, got {min(token_counts)}")
        return self.inner.bytes_per_sequences([n + self.extra_tokens for n in token_counts])

    @property
    def windowed(self) -> bool:
        return self.inner.windowed

    @property
    def pooled(self) -> bool:
        return self.inner.pooled

    @property
    def pool_bytes_per_token(self) -> int | None:
        return self.inner.pool_bytes_per_token  # the growth per token: the extra slots shift, not scale, a sequence

    def prefill_extra_bytes(self, num_tokens: int, batched_tokens: int) -> int:
        """:meth:`planner.model.kv.KVProfile.prefill_extra_bytes` of the shifted sequence."""
        if num_tokens < 0:
            raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
        return self.inner.prefill_extra_bytes(num_tokens + self.extra_tokens, batched_tokens)

    def prefill_extra_bytes_many(self, token_counts, batched_tokens: int) -> list[int]:
        """:meth:`planner.model.kv.KVProfile.prefill_extra_bytes_many` of the shifted sequences."""
        if token_counts and min(token_counts) < 0:
            raise ValueError(f"num_tokens must be >= 0, got {min(token_counts)}")
        return self.inner.prefill_extra_bytes_many([n + self.extra_tokens for n in token_counts], batched_tokens)


def launch_flags(features: ServingFeatures) -> dict[str, str]:
    """Engine -> the flags that switch these features on (vLLM's, SGLang's, and the planned engine's)."""
    engines = dict.fromkeys((*LAUNCH_FLAG_ENGINES, features.engine))
    out = {}
    for engine in engines:
        family = engine_family(engine)
        parts = []
        if features.lora is not None:
            parts.append(lora_flags(features.lora, family))
        if features.speculative is not None:
            parts.append(speculative_flags(features.speculative, family))
        if features.offload is not None:
            parts.append(offload_flags(features.offload, engine))
        if features.multimodal is not None:
            parts.append(multimodal_flags(features.multimodal, family))
        text = " ".join(p for p in parts if p)
        if text:
            out[engine] = text
    return out


def serving_effects(model: ModelSpec, features: ServingFeatures, *, tensor_parallel_size: int,
                    dtypes: CacheDtypes, weight_dtype_name: str = "auto", num_batched_tokens: int,
                    gpu_id: str = "", pipeline_parallel_size: int = 1,
                    encoder_chunk_budget_bytes: int | None = None) -> ServingEffects:
    """What ``features`` change on one of ``tensor_parallel_size`` GPUs.

    Args:
        model: The served model.
        features: The switched-on features.
        tensor_parallel_size: GPUs one layer is split over.
        dtypes: The plan's cache formats (KV of the drafter; ``state`` is the activation dtype, LoRA's ``auto``).
        weight_dtype_name: The target's weight dtype (EAGLE heads and MTP layers are stored like it).
        num_batched_tokens: Tokens of the profile pass [tokens].
        gpu_id: Catalog GPU id (the offload tier's host link).
        pipeline_parallel_size: Pipeline stages (vLLM splits the offload buffer over every rank).
        encoder_chunk_budget_bytes: vLLM's Gemma 4 encoder chunk budget on this GPU
            (:func:`planner.serving.multimodal.encoder_chunk_budget`); None = unknown.

    Raises:
        ValueError: an invalid feature setting.

    Sources: module docstring and the feature modules.
    """
    features.validate()
    family = features.family
    tp = tensor_parallel_size
    weights = activation_extra = host = tokens = kv_per_token = 0
    notes: list[str] = []
    lora = spec = kv_model = offload = mm = None
    if features.lora is not None:
        lora = lora_slots(model, features.lora, engine=family, tensor_parallel_size=tp,
                          activation=dtypes.state, num_batched_tokens=num_batched_tokens)
        weights += lora.slot_bytes
        activation_extra += lora.profile_activation_bytes
        host += lora.host_bytes
        notes += lora.notes
    if features.speculative is not None:
        spec = speculative_cost(model, features.speculative, weight_dtype_name=weight_dtype_name,
                                tensor_parallel_size=tp, engine=family)
        weights += spec.weights_bytes
        tokens += spec.extra_tokens_per_sequence
        kv_model = spec.kv_model
        if kv_model is not None:
            kv_per_token = kv_profile(kv_model, dtypes, tp, 1).bytes_per_token
        notes += spec.notes
    if features.offload is not None:
        offload = offload_plan(features.offload, engine=features.engine, gpu_id=gpu_id, tensor_parallel_size=tp,
                               pipeline_parallel_size=pipeline_parallel_size)
        host += offload.host_bytes_per_gpu
    if features.multimodal is not None:
        mm = multimodal_cost(features.multimodal, activation=dtypes.state, num_batched_tokens=num_batched_tokens,
                             tensor_parallel_size=tp, engine=family,
                             encoder_chunk_budget_bytes=encoder_chunk_budget_bytes)
        tokens += mm.tokens_per_request  # the tower's weights are in the model's own (families_multimodal)
        notes += mm.notes
    return ServingEffects(engine=features.engine, extra_weights_bytes=weights, extra_activation_bytes=activation_extra,
                          extra_tokens_per_sequence=tokens, extra_kv_model=kv_model, host_bytes=host, lora=lora,
                          speculative=spec, offload=offload, multimodal=mm, extra_kv_bytes_per_token=kv_per_token,
                          notes=tuple(notes))
