"""How sure a cold-start figure is: the expected error of the available KV memory, per engine group.

A cold-start plan predicts the engine's "Available KV cache memory" (SGLang's K + V size,
TensorRT-LLM's allocation) from the model, the GPU and the flags alone. How far that lands
from what the engine prints was measured by ``scripts/bench_engine_cases.py`` on the rows of
``tests/data/reference/engine_cases.csv`` whose launch the planner can express (the bench's
first table, "cold start mean / max (counted)"), one figure per engine profile, that is per
engine family and version group. :data:`COLD_START_ERROR` holds those figures as data;
``tests/test_expected_error.py`` recomputes them from the bench, so they cannot drift from it.

Design notes (assumptions):
    1. The error is the bench's: ``|predicted - printed| / max(printed, 10 GiB)``. Back in bytes,
       the expected error of a plan is ``max error of its group x max(available, 10 GiB)``: the
       largest miss the group showed, never less than that share of 10 GiB, so a small pool is
       not promised a tighter figure than the bench measured. Worked example: a ``vllm-v0.28`` plan
       with 11.57 GiB available and the group's 3.51 % maximum gets +-0.41 GiB.
    2. A figure the engine printed (``available_kv_from_log``: a pasted log or
       ``--available-kv-memory-gib``) has no estimation error: 0 (its print rounding, 0.005 GiB,
       is below every measured error).
    3. A release the bench has no counted cold start for takes the largest miss of its family's measured
       releases, and its basis says so ("vllm itself not measured: the largest miss of the measured vllm
       releases (vllm-v0.11, on V20, V21, N01)"): issue 25 asks an expected error per engine family and
       version group, and the newest vLLM (only N03, uncounted) is the default of every page. A family the
       bench never measured (TensorRT-LLM, TGI, transformers) has none: :func:`group_error` gives None and a
       basis that begins "not measured", the JSON key is null, and the page and the CLI say "expected error not
       measured". Another family's figure would be a false precision: the largest of all groups (+-0.23 GiB,
       QA) was put on ``trtllm-engine``, whose activation buffers follow build flags no row states.
    4. Some launches the bench ran but could not count, because a cause it showed is not priced yet:
       DeepSeek-V4's forward pass under vLLM (N11) and vLLM on unified memory (N03). A plan of the same
       kind is not promised its group's figure: its expected error is at least the miss that row showed
       (:data:`KNOWN_MISSES`, :func:`known_misses`), so a launch like N11's, which vLLM refused while the
       plan has 3.96 GiB to spare, is a close call instead of a clean "starts". That miss is kept in bytes
       per GPU, not as a share of the pool: both causes are memory outside the KV cache (a forward pass's
       activations at the step's tokens; what the OS holds on unified memory), which does not grow with the
       pool, so a 102 GiB pool of DeepSeek-V4-Flash on 8 x H200 is not given N11's 39.57 % (+-40.51 GiB,
       QA) but its 3.96 GiB.
    5. The margin between "starts" and "refused" is what the start check compares:
       ``available - KV one max_model_len request needs`` (vLLM's
       ``_check_enough_kv_cache_memory``, vllm/v1/core/kv_cache_utils.py); when its size is
       within the expected error the verdict is a close call (:func:`close_call`).

Sources: scripts/bench_engine_cases.py (``groups``, ``COLD_START_FLOOR``); the rows named in
:data:`COLD_START_ERROR`.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.engines.profiles import ENGINE_PROFILES
from planner.units import GiB

COLD_START_FLOOR_BYTES = 10 * GiB
"""Denominator floor of the bench's cold-start error (scripts/bench_engine_cases.py) [bytes]."""


@dataclass(frozen=True, kw_only=True)
class GroupError:
    """The cold-start error one engine group showed in the bench.

    Attributes:
        mean, max: Mean and largest ``|predicted - printed| / max(printed, 10 GiB)`` [fraction].
        cases: The rows of tests/data/reference/engine_cases.csv it was measured on (counted ones).
    """

    mean: float
    max: float
    cases: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class KnownMiss:
    """A cold start the bench measured but could not count: a cause it showed is not priced (design note 4).

    Attributes:
        fraction: Its ``|predicted - printed| / max(printed, 10 GiB)`` [fraction].
        printed_bytes: The available KV memory that row printed [bytes] (tests/data/reference/engine_cases.csv;
            tests/test_expected_error.py checks it against the row).
        case: The row of tests/data/reference/engine_cases.csv it was measured on.
        launch: That row's model and GPUs, for the reason text (:func:`expected_error_reason`).
        cause: What is not priced, for the basis text.
    """

    fraction: float
    printed_bytes: int
    case: str
    launch: str
    cause: str

    @property
    def miss_bytes(self) -> int:
        """The miss in bytes per GPU: ``fraction x max(printed, 10 GiB)`` (design note 4) [bytes]."""
        return round(self.fraction * max(self.printed_bytes, COLD_START_FLOOR_BYTES))


KNOWN_MISSES: dict[str, KnownMiss] = {
    "deepseek_v4_vllm": KnownMiss(fraction=0.3957, printed_bytes=round(5.44 * GiB), case="N11", launch="DeepSeek-V4-Flash on 2 x GH200",
                                  cause="DeepSeek-V4's forward pass under vLLM "
                                  "(hyper-connection streams, padded query heads, the indexer's buffers) is not priced"),
    "unified_memory_vllm": KnownMiss(fraction=0.6205, printed_bytes=round(22.5 * GiB), case="N03", launch="MiniMax-M2.7 AWQ on 2 x DGX Spark",
                                     cause="on unified memory vLLM charges the drop of "
                                     "the OS's available memory, host-side growth included, which is not priced"),
}
"""Per kind of launch: the uncounted miss the bench showed (design note 4); tests/test_expected_error.py
recomputes each from the bench."""

UNIFIED_MEMORY_CAPABILITY = (12, 1)
"""Compute capability of GB10 (DGX Spark), the integrated (unified-memory) device vLLM reads free memory from
the OS for (``MemorySnapshot.measure``, vllm/utils/mem_utils.py; the device's ``is_integrated`` property);
named from the GPU's name by :func:`planner.engines.loaded.gpu_capability`, case-insensitively."""


def known_misses(model, request, family: str) -> tuple[str, ...]:
    """Keys of :data:`KNOWN_MISSES` that apply to a plan of ``model`` under ``request`` (design note 4).

    Args:
        model: The :class:`planner.model.ModelSpec` planned.
        request: Its :class:`planner.engines.EngineRequest` (``gpu_name``).
        family: The engine family (``vllm``, ``sglang``, ...); both misses were measured under vLLM.
    """
    from planner.engines.loaded import gpu_capability
    from planner.model.sparse import CompressedAttention

    if family != "vllm":
        return ()
    found = []
    if any(isinstance(layer, CompressedAttention) for layer in model.layers):
        found.append("deepseek_v4_vllm")
    if request.gpu_name and gpu_capability(request.gpu_name) == UNIFIED_MEMORY_CAPABILITY:
        found.append("unified_memory_vllm")
    return tuple(found)


COLD_START_ERROR: dict[str, GroupError] = {
    "vllm-v0": GroupError(mean=0.0014, max=0.0014, cases=("V01",)),
    "vllm-v0.10": GroupError(mean=0.0054, max=0.0108, cases=("V07", "V15", "N10")),
    "vllm-v0.11": GroupError(mean=0.007, max=0.0188, cases=("V20", "V21", "N01")),
    "vllm-v0.28": GroupError(mean=0.0045, max=0.0091, cases=("N09", "N12", "N13", "N14")),
    "sglang-v0.4": GroupError(mean=0.0085, max=0.0146, cases=("S01", "N22")),
    "llama.cpp": GroupError(mean=0.0, max=0.0, cases=("L01", "L06")),
}
"""Per engine profile: the cold-start error measured by ``scripts/bench_engine_cases.py`` on the
rows of tests/data/reference/engine_cases.csv listed in ``cases`` (the ones it counts in its mean:
a stated GPU, the flags the budget depends on, the model itself in the catalog). Figures are the
bench's first table, rounded up to 0.01 %; ``tests/test_expected_error.py`` recomputes them."""


def group_error(engine: str) -> tuple[float | None, str]:
    """``(max error, basis)`` for a profile id: its own measured group, else ``(None, "not measured: ...")``
    (design note 3); ``basis`` names where the figure comes from.

    Raises:
        ValueError: an unknown profile id.
    """
    if engine not in ENGINE_PROFILES:
        raise ValueError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINE_PROFILES)}")
    own = COLD_START_ERROR.get(engine)
    if own is not None:
        return own.max, f"measured on {', '.join(own.cases)}"
    family = ENGINE_PROFILES[engine].family
    measured = [(name, g) for name, g in COLD_START_ERROR.items() if ENGINE_PROFILES[name].family == family]
    if not measured:
        return None, f"not measured: scripts/bench_engine_cases.py counts no cold start of {engine} or its family"
    name, worst = max(measured, key=lambda item: item[1].max)
    return worst.max, (f"{engine} itself not measured: the largest miss of the measured {family} releases "
                       f"({name}, on {', '.join(worst.cases)})")


def expected_error_bytes(plan) -> int | None:
    """``available_kv_cache_bytes_expected_error`` of an :class:`planner.engines.EnginePlan` [bytes], or None when
    not measured.

    0 when the available memory is the engine's own print; else the group's largest error times
    ``max(available, 10 GiB)`` (design notes 1-2), and never less than a known miss of its kind in bytes
    (design note 4); None for a group the bench never measured with no known miss of its kind (design note 3).
    Worked example: ``vllm-v0.28`` at 11.57 GiB with the group's 3.51 % maximum:
    ``0.0351 x 11.57 GiB`` = 436,054,071 B.
    """
    if plan.available_kv_from_log:
        return 0
    fraction, _ = group_error(plan.engine)
    found = [KNOWN_MISSES[k].miss_bytes for k in plan.known_misses]
    if fraction is not None:
        found.append(round(fraction * max(plan.available_kv_cache_bytes, COLD_START_FLOOR_BYTES)))
    return max(found) if found else None


def _setting_miss(plan) -> KnownMiss | None:
    """The known miss that sets the plan's expected error (design note 4), or None (the group's own figure, or a
    printed one)."""
    if plan.available_kv_from_log or not plan.known_misses:
        return None
    miss = max((KNOWN_MISSES[k] for k in plan.known_misses), key=lambda m: m.miss_bytes)
    return miss if miss.miss_bytes == expected_error_bytes(plan) else None


def expected_error_reason(plan) -> str:
    """One line on why the expected error is as large as it is, where a known miss sets it (design note 4), else
    "" (a printed figure, or the group's own measured figure, which the hover text names).

    Example (DeepSeek-V4-Flash on 8 x H200 under vLLM): "Why the error is this large: the 3.96 GiB per GPU that
    scripts/bench_engine_cases.py missed on case N11 (DeepSeek-V4-Flash on 2 x GH200), where ... is not priced:
    memory outside the KV cache, so it is not scaled with this pool". Source: :data:`KNOWN_MISSES` (the bench's
    uncounted rows).
    """
    miss = _setting_miss(plan)
    if miss is None:
        return ""
    return (f"Why the error is this large: the {_gib(miss.miss_bytes)} per GPU that scripts/bench_engine_cases.py "
            f"missed on case {miss.case} ({miss.launch}), where {miss.cause}: memory outside the KV cache, so it "
            "is not scaled with this pool.")


def start_margin_bytes(plan) -> int:
    """``available - KV one max_model_len request needs`` on the limiting GPU [bytes] (design note 4):
    positive = room to spare, negative = short."""
    return plan.available_kv_cache_bytes - plan.kv_cache_bytes_needed_per_request


def _gib(num_bytes: int) -> str:
    return f"{abs(num_bytes) / GiB:.2f} GiB"


def close_call(plan) -> str:
    """The verdict's caveat when the start/refuse margin is inside the expected error, else "".

    Examples: "starts, but the margin (0.40 GiB) is within this estimate's expected error
    (+-1.10 GiB): paste a startup log or leave headroom"; for a refusal "refuses, but the shortfall
    (...) is within ...: it may start; paste a startup log to be sure". A family the bench never measured has
    no caveat (design note 3), nor do plans that stop at the configuration check or take a printed figure.
    """
    error = expected_error_bytes(plan)
    if error == 0 or plan.stopped_at_config_check or plan.kv_cache_bytes_needed_per_request <= 0:
        return ""
    margin = start_margin_bytes(plan)
    if error is None or abs(margin) > error:  # None: a family the bench never measured (design note 3)
        return ""
    if plan.starts:
        return (f"starts, but the margin ({_gib(margin)}) is within this estimate's expected error "
                f"(±{_gib(error)}): paste a startup log or leave headroom")
    return (f"refuses, but the shortfall ({_gib(margin)}) is within this estimate's expected error "
            f"(±{_gib(error)}): it may start; paste a startup log to be sure")


def expected_error_fields(plan) -> dict:
    """The JSON keys an engine plan adds (``EnginePlan.to_dict``): ``available_kv_cache_bytes_expected_error``
    [bytes; null when not measured, design note 3], ``available_kv_cache_expected_error_basis`` (where the
    figure comes from; "not measured: ..." when it is not) and
    ``close_call`` (:func:`close_call`, "" when the answer is not close)."""
    basis = "the engine's own figure" if plan.available_kv_from_log else group_error(plan.engine)[1]
    if not plan.available_kv_from_log and plan.known_misses:
        basis += "; at least the miss of " + "; ".join(
            f"{KNOWN_MISSES[k].case} ({KNOWN_MISSES[k].cause})" for k in plan.known_misses)
    return {"available_kv_cache_bytes_expected_error": expected_error_bytes(plan),
            "available_kv_cache_expected_error_basis": basis, "close_call": close_call(plan)}
