"""GPU memory planner for LLM inference: pure computation, integer bytes.

Pipeline: per-layer cache specs (:mod:`planner.model.layers`) -> model KV profile
(:mod:`planner.model.kv`) -> per-GPU budget, capacity, users, max context
(:mod:`planner.budget`) -> curves (:mod:`planner.sweep`). No Streamlit,
pydantic or transformers import here; ``model_catalog`` builds the inputs.
"""

from planner.budget import Plan, PlanRequest, max_context_len, plan
from planner.model import ModelSpec
from planner.model.dtypes import KV_CACHE_DTYPE_CHOICES, KV_CACHE_DTYPES, WEIGHT_DTYPES
from planner.model.kv import attention_variants, cache_dtypes, kv_cache_bytes_per_sequence, kv_cache_bytes_per_token
from planner.model.layers import (
    CacheDtypes,
    ChunkedLocalAttention,
    FullAttention,
    MLAAttention,
    NoCache,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.overhead import estimate_overhead
from planner.pipeline import plan_pipeline
from planner.units import GB, GiB, MiB

__all__ = [
    "GB", "GiB", "MiB", "KV_CACHE_DTYPES", "KV_CACHE_DTYPE_CHOICES", "WEIGHT_DTYPES",
    "CacheDtypes", "ChunkedLocalAttention", "FullAttention", "MLAAttention", "ModelSpec", "NoCache",
    "Plan", "PlanRequest", "RecurrentState", "SlidingWindowAttention", "attention_variants",
    "cache_dtypes", "estimate_overhead", "kv_cache_bytes_per_sequence", "kv_cache_bytes_per_token",
    "max_context_len", "plan", "plan_pipeline",
]
