"""Which engine profile a pasted startup log matches, said as a suggestion (the page never switches by itself).

A log is matched to the chosen profile's *family* first: a vLLM log checked under ``vllm-v0.28`` is a vLLM
log, and the family alone is no reason to name another profile. Within the family:

- vLLM states its version at startup ("vLLM API server version 0.28.0", "LLM engine (v0.6.4)", read by
  :mod:`planner.engines.logparse`); :func:`planner.engines.reconcile.suggest_engine` maps it to the profile
  that models that release, and a different one is named.
- A profile whose release cannot load the model is never named: vLLM before v0.11 for a sparse-MLA model
  (DeepSeek-V3.2, GLM-5: :func:`planner.engines.vllm_kv_formats.too_old_for_sparse_mla`), before v0.22 for
  DeepSeek-V4 (:func:`planner.engines.vllm_deepseek_v4.predates`). A log whose version line names such a release
  gets no hint; the nearest-pool rule below leaves such profiles out of its candidates.
- SGLang's lines that the parser reads ("Load weight end. ... mem usage", "KV Cache is allocated. #tokens",
  "max_total_num_tokens=") state no version. The pool it printed (K + V size) is then compared with what each
  profile of the family predicts at the same settings, and the nearest is named when it is not the chosen
  one and at least halves the gap. The same rule serves a vLLM log without a version line.

Sources: vLLM vllm/entrypoints/openai/api_server.py and vllm/engine/llm_engine.py (the version lines);
SGLang python/sglang/srt/model_executor/model_runner.py (``profile_max_num_token``: the K/V size line); the
profile table :data:`planner.engines.profiles.ENGINE_PROFILES`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines.dispatch import plan_engine
from planner.engines.logparse import LogFigures
from planner.engines.profiles import ENGINE_PROFILES, resolve_engine_name
from planner.engines.reconcile import measured_available_bytes, suggest_engine
from planner.engines.types import EngineRequest
from planner.engines.vllm_deepseek_v4 import predates as predates_deepseek_v4
from planner.engines.vllm_kv_formats import too_old_for_sparse_mla
from planner.model import ModelSpec
from planner.units import GiB


@dataclass(frozen=True, kw_only=True)
class ProfileHint:
    """A profile to suggest for a pasted log.

    Attributes:
        profile: The profile id to suggest (``vllm-v0.28``, ``sglang-v0.4``, ``llama.cpp``, ...).
        same_family: True when it is another build of the chosen engine, False for another engine.
        message: One sentence for the user (Markdown: ids in backticks).
    """

    profile: str
    same_family: bool
    message: str


def _family(engine: str) -> str | None:
    profile = ENGINE_PROFILES.get(engine)
    return None if profile is None else profile.family


def loads_model(model: ModelSpec, engine: str) -> bool:
    """False when ``engine``'s release cannot load ``model`` (module docstring), else True."""
    if _family(engine) != "vllm":
        return True
    return not (too_old_for_sparse_mla(model, engine) or predates_deepseek_v4(model, engine))


def profile_hint(figures: LogFigures, model: ModelSpec, gpu_memory_bytes: int,
                 request: EngineRequest) -> ProfileHint | None:
    """The profile the log matches when it is not ``request.engine`` (module docstring), or None.

    Args:
        figures: The parsed log.
        model, gpu_memory_bytes: What the page plans.
        request: The request compared with the log (the log's own knobs applied), ``engine`` the chosen profile.
    """
    suggested = suggest_engine(figures)
    if suggested is None or suggested not in ENGINE_PROFILES:
        return None
    chosen = resolve_engine_name(request.engine)
    if _family(suggested) != _family(chosen):
        return ProfileHint(profile=suggested, same_family=False, message=(
            f"The log looks like `{suggested}`{f' (vLLM {figures.version})' if figures.version else ''}; pick that "
            "engine in the sidebar so the token and concurrency lines are printed the same way."))
    if figures.version and figures.engine == "vllm":
        if suggested == chosen or not loads_model(model, suggested):
            return None
        return ProfileHint(profile=suggested, same_family=True, message=(
            f"The log states vLLM {figures.version}, which profile `{suggested}` models "
            f"({ENGINE_PROFILES[suggested].version}); `{chosen}` models {ENGINE_PROFILES[chosen].version}. Pick "
            f"`{suggested}` in the sidebar to compare with the build that printed this log."))
    return _nearest_in_family(figures, model, gpu_memory_bytes, request, chosen)


def _nearest_in_family(figures: LogFigures, model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                       chosen: str) -> ProfileHint | None:
    """The family's profile whose predicted pool is nearest the printed one, when it is not ``chosen`` and its
    gap is at most half the chosen profile's; None without a printed pool or a clear winner."""
    printed = measured_available_bytes(figures)
    if not printed:
        return None
    family = _family(chosen)
    predicted = {}
    for engine, profile in ENGINE_PROFILES.items():
        if profile.family != family or (engine != chosen and not loads_model(model, engine)):
            continue
        try:
            predicted[engine] = plan_engine(model, gpu_memory_bytes, replace(request, engine=engine,
                                                                           available_kv_memory_bytes=None))
        except ValueError:  # a profile that refuses these settings outright is no candidate
            continue
    if chosen not in predicted:
        return None
    gap = {engine: abs(plan.available_kv_cache_bytes - printed) for engine, plan in predicted.items()}
    best = min(gap, key=lambda e: (gap[e], e != chosen))
    if best == chosen or 2 * gap[best] > gap[chosen]:
        return None
    shown = {e: f"{predicted[e].available_kv_cache_bytes / GiB:.2f} GiB" for e in (best, chosen)}
    what = "K + V size" if figures.engine == "sglang" else "KV memory"
    return ProfileHint(profile=best, same_family=True, message=(
        f"The log's {what}, {printed / GiB:.2f} GiB, is nearest what profile `{best}` predicts here, {shown[best]}; "
        f"`{chosen}` predicts {shown[chosen]}. The log states no version: if it comes from "
        f"{ENGINE_PROFILES[best].version}, pick `{best}` in the sidebar."))
