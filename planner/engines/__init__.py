"""Engine views: what vLLM, SGLang, TensorRT-LLM, TGI, llama.cpp and transformers allocate.

One module per engine family (:mod:`~planner.engines.vllm`, :mod:`~planner.engines.sglang`,
:mod:`~planner.engines.trtllm`, :mod:`~planner.engines.tgi`, :mod:`~planner.engines.llamacpp`,
:mod:`~planner.engines.hf_transformers`), and what they share: the request and result
records (:mod:`~planner.engines.types`), per-version profiles (:mod:`~planner.engines.profiles`),
the block/page layout of KV groups (:mod:`~planner.engines.pages`), weights as each engine
loads them (:mod:`~planner.engines.loaded`), profile-pass activations and non-torch memory by
topology (:mod:`~planner.engines.overheads`), the common budget terms of
the non-vLLM engines (:mod:`~planner.engines.common`), launch commands
(:mod:`~planner.engines.launch`), startup-log parsing (:mod:`~planner.engines.logparse`)
and estimate-vs-actual (:mod:`~planner.engines.reconcile`). :func:`plan_engine` in
:mod:`~planner.engines.dispatch` picks the engine.

May import: :mod:`planner.model`, :mod:`planner.units` and the tensor-parallel rule of
:mod:`planner.diagnose`; never the catalog, Streamlit, pydantic or transformers.
"""

from planner.engines.dispatch import plan_engine, reproduce_printed
from planner.engines.profiles import (
    DEFAULT_ENGINE,
    ENGINE_CHOICES,
    ENGINE_PROFILES,
    EngineProfile,
    engine_profile,
    resolve_engine_name,
)
from planner.engines.types import EnginePlan, EngineRequest, RankBudget

__all__ = [
    "DEFAULT_ENGINE", "ENGINE_CHOICES", "ENGINE_PROFILES", "EnginePlan", "EngineProfile", "EngineRequest",
    "RankBudget", "engine_profile", "plan_engine", "reproduce_printed", "resolve_engine_name",
]
