"""Serving features in the engine view: what LoRA slots, speculative decoding, images and KV offload
change in each engine's per-GPU budget, its printed figures and its launch command.

:attr:`planner.engines.types.EngineRequest.serving` (a :class:`planner.serving.ServingFeatures`)
is None by default and every number is then the bare model's. When set, the features are priced
by :func:`planner.serving.serving_effects` under the planned engine's rules, and each engine puts
them where it allocates them:

    vLLM     weights        += LoRA slots + drafter weights                  ("Model loading took")
             activation     += punica shrink buffer + encoder cache           (profile_run)
             KV block       += the drafter's attention layers (one pool)      (get_kv_cache_spec)
    SGLang   weights        += LoRA pool, before the KV pool                  (init_lora_manager, then
                                                                               init_memory_pool)
             outside the pool: the draft worker's weights and its own KV pool of the target's
             token count, in the memory ``mem_fraction_static`` leaves (whose default shrinks by
             2 GiB for EAGLE / EAGLE-3 / NEXTN, 6 GiB for STANDALONE)
    llama.cpp the ``--lora`` adapters and the ``--model-draft`` model with its own context of
             ``-c`` cells are added to what device 0 must hold (no fraction)
    others   a note per feature: not modelled for that engine

vLLM sources: vllm/v1/worker/gpu_model_runner.py (``load_model`` wraps the model with the LoRA
manager and loads the drafter inside the ``DeviceMemoryProfiler`` whose total it logs as "Model
loading took", so both come out of the KV budget like weights; ``get_kv_cache_spec`` walks every
attention layer of the static forward context, the drafter's included; ``profile_run`` encodes the
dummy images and keeps their outputs); vllm/lora/model_manager.py (``_create_lora_modules``
allocates the slots); vllm/v1/spec_decode/eagle.py and draft_model.py (the drafter's layers);
vllm/v1/core/kv_cache_utils.py (``get_kv_cache_configs``: one block of the pool is every layer's
page, so a drafter layer makes each block larger and the block count smaller). KV offload keeps
the GPU pool whole and adds host memory (:mod:`planner.serving.offload`). SGLang:
python/sglang/srt/model_executor/model_runner.py, model_runner_kv_cache_mixin.py and
python/sglang/srt/server_args.py (:func:`planner.serving.speculative.sglang_draft_pool_bytes`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from planner.engines.profiles import EngineProfile
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.model import ModelSpec
from planner.model.kv import cache_dtypes, kv_profile
from planner.model.memo import model_memo, remember
from planner.serving import ServingFeatures, serving_effects
from planner.serving.features import ServingEffects, launch_flags
from planner.serving.lora import lora_slots
from planner.serving.multimodal import encoder_chunk_budget
from planner.serving.speculative import draft_placeholder, placeholder_comment, speculative_cost

MODELLED_FAMILIES = ("vllm", "sglang", "llama.cpp")
"""Engine families whose serving-feature memory is priced; the others get notes."""

LORA_SLOTS = "LoRA slots"
DRAFT_WEIGHTS = "Draft weights"
SERVING_ACTIVATION = "LoRA / encoder buffers"
DRAFT_KV = "Draft KV cache"
SEGMENT_LABELS = (LORA_SLOTS, DRAFT_WEIGHTS, SERVING_ACTIVATION, DRAFT_KV)
"""Chart segments the serving features add (:meth:`planner.engines.types.RankBudget.segments`). The
vision tower is not one of them: the catalog's multimodal specs count it in the model's own weights."""


@dataclass(frozen=True, kw_only=True)
class EngineServingTerms:
    """The features' terms on one GPU of one engine (bytes unless named).

    Attributes:
        effects: What :func:`planner.serving.serving_effects` priced (None for engines not modelled).
        lora_bytes, draft_weights_bytes: Weights the features add.
        activation_bytes: Profile-pass extras before the multimodal share (LoRA punica buffer).
        kv_layers: The drafter's KV layers (vLLM: in the same block pool).
        draft_kv_bytes_per_token: Their KV per token on one GPU.
        notes: Assumptions and "not modelled" statements.
    """

    effects: ServingEffects | None
    lora_bytes: int = 0
    draft_weights_bytes: int = 0
    activation_bytes: int = 0
    kv_layers: tuple = ()
    draft_kv_bytes_per_token: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def engine_features(request: EngineRequest, profile: EngineProfile) -> ServingFeatures:
    """The request's features under the planned engine's rules (``engine`` set to the profile id)."""
    return replace(request.serving, engine=profile.id)


def _not_modelled(features: ServingFeatures, engine: str) -> tuple[str, ...]:
    names = (("lora", "LoRA adapter slots"), ("speculative", "speculative decoding"),
             ("multimodal", "image inputs"), ("offload", "KV offload"))
    return tuple(f"not modelled for {engine}: {label} (this plan prices the bare model; no number shown)"
                 for attr, label in names if getattr(features, attr) is not None)


def _llamacpp_terms(model: ModelSpec, features: ServingFeatures, request: EngineRequest) -> EngineServingTerms:
    """llama.cpp: ``--lora`` adapters loaded whole, a ``--model-draft`` model; "llama.cpp has no X" otherwise.

    Sources: src/llama-adapter.cpp (``llama_adapter_lora_init`` loads each adapter's tensors);
    tools/server/server.cpp (the draft model is loaded beside the target and each slot gets a draft
    context of its own size, so the draft caches ``-c`` cells in all).
    """
    dtypes = cache_dtypes(model, request.weight_dtype, "fp16" if request.kv_cache_dtype == "auto"
                          else request.kv_cache_dtype, vllm_storage=False)
    notes: list[str] = []
    lora = draft = kv_per_token = 0
    layers: tuple = ()
    if features.lora is not None:
        slots = lora_slots(model, features.lora, engine="llama.cpp", activation=dtypes.state)
        lora = slots.slot_bytes
        notes += slots.notes
    spec = features.speculative
    if spec is not None and spec.method != "draft_model":
        notes.append(f"llama.cpp has no {spec.method} speculative decoding (only a draft model: --model-draft); "
                     "not priced")
    elif spec is not None:
        cost = speculative_cost(model, spec, engine="llama.cpp")
        draft = cost.weights_bytes
        layers = cost.kv_model.layers
        kv_per_token = kv_profile(cost.kv_model, dtypes, 1, 1).bytes_per_token
        notes += cost.notes
    if features.multimodal is not None:
        notes.append("llama.cpp image inputs (--mmproj) are not modelled here: the projector and its tokens are "
                     "not priced")
    if features.offload is not None:
        notes.append("llama.cpp has no host tier behind a GPU KV cache (--no-kv-offload keeps the whole cache in "
                     "host memory instead); not priced")
    return EngineServingTerms(effects=None, lora_bytes=lora, draft_weights_bytes=draft, kv_layers=layers,
                              draft_kv_bytes_per_token=kv_per_token, notes=tuple(notes))


def serving_terms(model: ModelSpec, request: EngineRequest, profile: EngineProfile, *,
                  num_batched_tokens: int, encoder_chunk_budget_bytes: int | None = None) -> EngineServingTerms:
    """The serving features' terms on one GPU under ``profile``, memoized per model object.

    Args:
        model: The target model.
        request: The engine request (its ``serving`` must not be None).
        profile: The planned engine profile.
        num_batched_tokens: Tokens of the engine's profile pass [tokens].
        encoder_chunk_budget_bytes: vLLM's Gemma 4 encoder chunk budget on the GPU (:func:`encoder_chunk_of`);
            None = unknown.

    Raises:
        ValueError: an invalid feature setting.
    """
    memo = model_memo(model)
    key = ("engine_serving", profile.id, request.serving, request.tensor_parallel_size,
           request.pipeline_parallel_size, request.weight_dtype, request.kv_cache_dtype, num_batched_tokens,
           encoder_chunk_budget_bytes)
    found = memo.get(key)
    if found is not None:
        return found
    features = engine_features(request, profile)
    if profile.family == "llama.cpp":
        return remember(memo, key, _llamacpp_terms(model, features, request))
    if profile.family not in ("vllm", "sglang"):
        return remember(memo, key, EngineServingTerms(effects=None, notes=_not_modelled(features, profile.id)))
    dtypes = cache_dtypes(model, request.weight_dtype, request.kv_cache_dtype, vllm_storage=False)
    effects = serving_effects(model, features, tensor_parallel_size=request.tensor_parallel_size, dtypes=dtypes,
                              weight_dtype_name=request.weight_dtype, num_batched_tokens=num_batched_tokens,
                              pipeline_parallel_size=request.pipeline_parallel_size,
                              encoder_chunk_budget_bytes=encoder_chunk_budget_bytes)
    lora = effects.lora.slot_bytes if effects.lora is not None else 0
    draft = effects.speculative.weights_bytes if effects.speculative is not None else 0
    layers = () if effects.extra_kv_model is None else effects.extra_kv_model.layers
    return remember(memo, key, EngineServingTerms(
        effects=effects, lora_bytes=lora, draft_weights_bytes=draft,
        activation_bytes=effects.extra_activation_bytes, kv_layers=layers,
        draft_kv_bytes_per_token=effects.extra_kv_bytes_per_token, notes=effects.notes))


def encoder_chunk_of(budget: RankBudget) -> int:
    """vLLM's Gemma 4 encoder chunk budget on ``budget``'s GPU [bytes]
    (:func:`planner.serving.multimodal.encoder_chunk_budget`): total = the memory vLLM's fraction multiplies,
    free = that less the model's weights (the serving features' own weights left out) and the non-torch memory,
    as ``mem_get_info`` sees it when the encoder is profiled, before the KV cache exists."""
    features = sum(size for _, term, size in budget.serving_parts if term == "weights")
    free = budget.memory_base_bytes - (budget.weights_bytes - features) - budget.non_torch_bytes
    return encoder_chunk_budget(budget.memory_base_bytes, free)


def vllm_drafter_layers(model: ModelSpec, request: EngineRequest, profile: EngineProfile, layers: range) -> tuple:
    """The drafter's attention layers a vLLM stage's KV pool holds: every one on the last pipeline stage
    (the drafter runs after the target's last layer), none elsewhere or without speculative decoding."""
    spec = request.serving.speculative if request.serving is not None else None
    if spec is None or layers.stop != model.num_layers:
        return ()
    return serving_terms(model, request, profile, num_batched_tokens=0).kv_layers


def vllm_rank_budget(budget: RankBudget, model: ModelSpec, request: EngineRequest, profile: EngineProfile,
                     layout, *, mnbt: int) -> RankBudget:
    """A vLLM stage's budget with the serving features (module docstring), per GPU.

    Weights gain the LoRA slots (split over pipeline stages by their layer count) and the drafter (last
    stage); the activation gains the punica buffer and, on the first
    stage, the encoder cache plus the vision forward's excess over the language model's peak
    (:meth:`planner.serving.features.ServingEffects.with_profile_peak`); available KV memory loses
    both, unless the engine's printed figure pins it, and the blocks are re-cut at the ``layout``'s
    block (which already holds the drafter's layers). A measured weights / activation override is
    taken to include the features (its parts are still shown).

    Worked example (tests/test_serving_engine.py): Llama-3.1-8B, 8 LoRA slots of rank 64 on an L4:
    available KV memory loses 8 x 369,426,432 B of slots + the punica buffer 3 x 2,048 tokens x 64 x 4 B.

    Args:
        budget: The stage's budget without the features.
        model, request, profile: The plan.
        layout: The stage's KV layout (the drafter's layers included on the last stage).
        mnbt: Tokens of the profile pass [tokens].
    """
    terms = serving_terms(model, request, profile, num_batched_tokens=mnbt,
                          encoder_chunk_budget_bytes=encoder_chunk_of(budget))
    pp, stage = request.pipeline_parallel_size, budget.stage
    first, last = stage == 0, stage == pp - 1
    lora = terms.lora_bytes * budget.num_layers // model.num_layers
    draft = terms.draft_weights_bytes if last else 0
    activation = terms.activation_bytes
    if first and terms.effects is not None and terms.effects.multimodal is not None:
        # the runner's kept buffers and the first compile's charge are no forward peak of the encoder profile
        transient = budget.activation_bytes - budget.runner_state_bytes - budget.first_compile_bytes
        activation = terms.effects.with_profile_peak(transient).extra_activation_bytes
    added_weights = 0 if "weights" in budget.overridden else lora + draft
    added_activation = 0 if "activation" in budget.overridden else activation
    available = budget.available_kv_cache_bytes
    if "available_kv_cache" not in budget.overridden:
        available -= added_weights + added_activation
    num_blocks = max(available, 0) // layout.bytes_per_block if layout.bytes_per_block else 0
    draft_kv = num_blocks * layout.block_size * terms.draft_kv_bytes_per_token if last else 0
    parts = ((LORA_SLOTS, "weights", lora), (DRAFT_WEIGHTS, "weights", draft), (SERVING_ACTIVATION, "activation", activation), (DRAFT_KV, "kv", draft_kv))
    return replace(budget, weights_bytes=budget.weights_bytes + added_weights,
                   activation_bytes=budget.activation_bytes + added_activation, available_kv_cache_bytes=available,
                   num_blocks=layout.num_blocks(available), serving_parts=parts)


def _insert_flags(command: str, flags: str) -> str:
    """``command`` with ``flags`` appended before any trailing ``  # comment``."""
    if not flags:
        return command
    head, sep, comment = command.partition("  # ")
    return f"{head} {flags}{sep}{comment}"


def _with_comment(command: str, note: str) -> str:
    """``command`` with ``note`` first in its trailing ``  # comment`` (one comment: bash ends the line there)."""
    head, sep, comment = command.partition("  # ")
    return f"{head}  # {note}" + (f"; {comment}" if sep else "")


def with_serving(model: ModelSpec, request: EngineRequest, profile: EngineProfile, result: EnginePlan) -> EnginePlan:
    """``result`` with the ``serving`` JSON block, the features' notes and their launch flags.

    Raises:
        ValueError: an invalid feature setting.
    """
    rank = result.limiting_rank
    terms = serving_terms(model, request, profile, num_batched_tokens=result.max_num_batched_tokens,
                          encoder_chunk_budget_bytes=encoder_chunk_of(rank))
    features = engine_features(request, profile)
    out: dict = {"engine": profile.id, "modelled": profile.family in MODELLED_FAMILIES,
                 "lora_slot_bytes_per_gpu": terms.lora_bytes, "draft_weights_bytes_per_gpu": terms.draft_weights_bytes,
                 "draft_kv_cache_bytes_per_token_per_gpu": terms.draft_kv_bytes_per_token,
                 "serving_parts_bytes": {label: size for label, _, size in rank.serving_parts}}
    effects = terms.effects
    if effects is not None:  # the feature blocks as the v1 plan's serving JSON has them, at this engine's pool
        tokens_per_block = result.block_size or 1
        out = effects.plan_dict(
            budget_bytes=rank.available_kv_cache_bytes, kv_needed_bytes=result.kv_cache_bytes_needed_per_request,
            features=features, block_size=tokens_per_block,
            kv_bytes_per_token_per_gpu=rank.bytes_per_block // tokens_per_block if rank.bytes_per_block else 0,
            kv_bytes_per_sequence_per_gpu=result.kv_cache_bytes_needed_per_request,
            capacity_tokens=result.engine_kv_cache_tokens) | out
    flags = launch_flags(features).get(profile.id, "") if profile.family in MODELLED_FAMILIES else ""
    out["engine_launch_flags"] = flags
    out["notes"] = list(terms.notes)
    notes = (*result.notes, *terms.notes)
    command = _insert_flags(result.launch_command, flags)
    spec = features.speculative if features is not None else None
    if (name := draft_placeholder(spec)) and name in flags:  # the EAGLE head's repo to fill in (vLLM stops without)
        command = _with_comment(command, placeholder_comment(spec))
    return EnginePlan._from_parts(vars(result), {"serving": out, "notes": notes, "launch_command": command})

