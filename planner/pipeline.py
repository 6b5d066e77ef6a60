"""The budget of a replica split into pipeline stages: each stage planned on its own GPUs, the replica's users
those of the stage that holds the fewest.

A replica of ``tensor_parallel_size x pipeline_parallel_size`` GPUs holds, on each GPU of stage ``s``, the stage's
layers sharded over its tensor-parallel group: its weights (the embedding on the first stage, the final norm and
``lm_head`` on the last), its layers' KV heads (``max(1, kv_heads // tp)`` each) and its own profile pass. Planning
all the GPUs as one tensor-parallel group instead replicates the KV heads once ``tp x pp`` exceeds
``num_key_value_heads``: Llama 3.1 405B on 16 GPUs in two stages of 8 holds twice the tokens per GPU that one group
of 16 does (each GPU keeps one KV head of 63 layers, not one of 126).

Sources:
    * Layers per stage: vLLM ``get_pp_indices`` (vllm/distributed/utils.py), through
      :func:`planner.engines.loaded.pipeline_layer_ranges`; parameters per stage: vLLM ``PPMissingLayer`` /
      ``make_layers`` (vllm/model_executor/models/utils.py), through :func:`planner.engines.loaded.stage_params`.
    * One cache size for every stage: vLLM's executor takes the minimum of the workers' KV blocks
      (``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py sizes every worker's cache to the smallest
      worker's), so the replica's tokens and users are the smallest stage's.
"""

from __future__ import annotations

from dataclasses import replace

from planner.budget import plan
from planner.model import ModelSpec
from planner.model.memo import memoized
from planner.model.params import model_weight_bytes
from planner.plan_types import Plan, PlanRequest
from planner.text import count_noun


def stage_model(model: ModelSpec, stage: int, pipeline_parallel_size: int) -> ModelSpec:
    """``model`` as pipeline ``stage`` of ``pipeline_parallel_size`` holds it: that stage's layers (vLLM's split)
    and parameter groups; the same object for ``pipeline_parallel_size`` 1. Memoized per model object.

    Raises:
        ValueError: ``pipeline_parallel_size`` < 1 or more than the model's layers
            (:func:`planner.engines.loaded.pipeline_layer_ranges`).
    """
    if pipeline_parallel_size == 1:
        return model
    from planner.engines.loaded import pipeline_layer_ranges, stage_params  # noqa: PLC0415 - engines load lazily

    def build() -> ModelSpec:
        layers = pipeline_layer_ranges(len(model.layers), pipeline_parallel_size)[stage]
        return replace(model, layers=model.layers[layers.start:layers.stop],
                       params=stage_params(model, stage, pipeline_parallel_size))

    return memoized(model, ("stage_model", stage, pipeline_parallel_size), build)


def pipeline_stages(model: ModelSpec, request: PlanRequest,
                    pipeline_parallel_size: int) -> tuple[tuple[ModelSpec, PlanRequest], ...]:
    """``(stage model, request)`` for each of ``pipeline_parallel_size`` stages of a replica of ``request.num_gpus``
    GPUs: the stage's layers and parameters (:func:`stage_model`, vLLM ``get_pp_indices`` in
    vllm/distributed/utils.py) and the request on its ``num_gpus // pipeline_parallel_size`` tensor-parallel GPUs;
    ``((model, request),)`` for one stage. What :func:`plan_pipeline` plans, and the sweeps of the pages
    (:mod:`planner.sweep`) evaluate per stage.

    Raises:
        ValueError: stages that do not divide ``num_gpus``, or more stages than the model has layers.
    """
    pp = pipeline_parallel_size
    if pp == 1:
        return ((model, request),)
    if pp < 1 or request.num_gpus % pp:
        raise ValueError(f"pipeline_parallel_size {pp} does not divide num_gpus {request.num_gpus}: make the GPUs "
                         "per replica a multiple of the pipeline stages")
    if pp > len(model.layers):
        raise ValueError(f"pipeline_parallel_size {pp} is more than the {len(model.layers)} layers of "
                         f"{model.model_id}: use at most {len(model.layers)} stages")
    # each stage on its tensor-parallel GPUs; its GPUs also hold the pipeline group's buffers (the overhead reads pp)
    group = replace(request, num_gpus=request.num_gpus // pp, pipeline_parallel_size=pp)
    return tuple((stage_model(model, s, pp), group) for s in range(pp))


def planning_stage(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str = "", *,
                   pipeline_parallel_size: int = 1) -> tuple[ModelSpec, PlanRequest]:
    """The stage whose per-GPU figures :func:`plan_pipeline` reports (the fewest users, then KV tokens, then budget
    bytes) and the request on its tensor-parallel GPUs, from :func:`pipeline_stages`; ``(model, request)`` itself
    for one stage (no plan is made). A page that prices one GPU's KV budget in detail (the Allocation page's
    schemes, traffic and sampling) prices it on that stage: vLLM sizes every stage's cache to the smallest worker's
    KV blocks (``get_kv_cache_configs`` in vllm/v1/core/kv_cache_utils.py).

    Raises:
        ValueError: as :func:`plan_pipeline`.
    """
    if pipeline_parallel_size == 1:
        return model, request
    chosen = plan_pipeline(model, gpu_memory_bytes, request, gpu_id, pipeline_parallel_size=pipeline_parallel_size)
    return pipeline_stages(model, request, pipeline_parallel_size)[chosen.pipeline_stage]


def plan_pipeline(model: ModelSpec, gpu_memory_bytes: int, request: PlanRequest, gpu_id: str = "", *,
                  pipeline_parallel_size: int = 1) -> Plan:
    """Plan one replica of ``request.num_gpus`` GPUs split into ``pipeline_parallel_size`` stages of
    ``num_gpus // pipeline_parallel_size`` tensor-parallel GPUs each.

    With one stage this is :func:`planner.budget.plan`. With more, each stage is planned as its own model (its
    layers and parameters, :func:`stage_model`) on its tensor-parallel group; the result is the stage with the
    fewest users (then the fewest KV tokens, the fewest budget bytes), its per-GPU figures as they are, and the
    replica's own figures where a field describes the whole replica: ``num_gpus`` (every GPU of the replica),
    ``params`` and ``weights_bytes`` (the whole model), the KV per token and per sequence at tensor parallel 1 and
    ``kv_cache_bytes_total`` (summed over the stages), and a note naming the stage and its layers.

    Args:
        model: The model.
        gpu_memory_bytes: Framework-visible memory of one GPU [bytes], > 0.
        request: The workload; ``num_gpus`` is every GPU of the replica (tensor parallel x stages).
        gpu_id: Catalog id, echoed in the result.
        pipeline_parallel_size: Stages, >= 1; divides ``request.num_gpus``, at most the model's layers.

    Raises:
        ValueError: as :func:`planner.budget.plan`; stages that do not divide ``num_gpus``, or more stages than
            the model has layers.

    Sources: the module docstring.
    """
    pp = pipeline_parallel_size
    if pp == 1:
        return plan(model, gpu_memory_bytes, request, gpu_id)
    from planner.engines.loaded import pipeline_layer_ranges  # noqa: PLC0415 - engines load lazily

    tp = request.num_gpus // pp
    stages = [plan(stage, gpu_memory_bytes, group, gpu_id) for stage, group in pipeline_stages(model, request, pp)]
    worst = min(range(pp), key=lambda s: (stages[s].max_concurrent_sequences, stages[s].kv_cache_capacity_tokens,
                                          stages[s].kv_cache_budget_bytes))
    chosen = stages[worst]
    layers = pipeline_layer_ranges(len(model.layers), pp)[worst]
    note = (f"pipeline_parallel_size {pp}: {count_noun(pp, 'stage')} of {count_noun(tp, 'tensor-parallel GPU')}, "
            f"the layers split as vLLM splits them; the per-GPU figures are stage {worst}'s (layers {layers.start}-"
            f"{layers.stop - 1}{_stage_holds(worst, pp)}), the stage with the fewest KV tokens, which sizes every "
            "stage's cache (vLLM takes the smallest worker's blocks)")
    return replace(
        chosen, model_id=model.model_id, num_gpus=request.num_gpus, pipeline_parallel_size=pp, pipeline_stage=worst,
        params=model.num_parameters,
        weights_bytes=model_weight_bytes(model, request.weight_dtype),
        kv_cache_bytes_per_token=sum(s.kv_cache_bytes_per_token for s in stages),
        kv_cache_bytes_per_sequence=sum(s.kv_cache_bytes_per_sequence for s in stages),
        kv_cache_bytes_total=sum(s.kv_cache_bytes_total for s in stages),
        suggestions=tuple(_stage_fix(fix, pp) for fix in chosen.suggestions), notes=(*chosen.notes, note))


def _stage_holds(stage: int, pp: int) -> str:
    """`` and the embedding`` / `` and the LM head``: what a first or last stage holds beside its layers."""
    return " and the embedding" if stage == 0 else " and the final norm and LM head" if stage == pp - 1 else ""


def _stage_fix(fix, pp: int):
    """A stage's fix as the replica applies it: "use num_gpus N" for one stage's group means N x ``pp`` GPUs per
    replica (``num_gpus`` is every GPU of the replica); other fixes as they are."""
    if getattr(fix, "key", None) != "num_gpus":
        return fix
    from planner.diagnose import Fix  # noqa: PLC0415 - only a plan with a GPU-count fix needs it

    gpus = fix.value * pp
    return Fix(f"use num_gpus {gpus} ({count_noun(pp, 'stage')} of {fix.value} tensor-parallel GPUs)", "num_gpus",
               gpus)
