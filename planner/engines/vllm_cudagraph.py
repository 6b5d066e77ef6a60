"""vLLM's CUDA graphs per version: the capture sizes, the graph mode, the graphs captured and their memory.

vLLM captures one CUDA graph per batch size of ``cudagraph_capture_sizes``; which sizes it picks,
whether a size is captured as one FULL graph or as PIECEWISE graphs (one per piece between two
attention layers), and whether the memory is charged before the KV cache is sized all changed
between releases. This module reproduces the sizes and the graph count exactly, per profile, and
prices them with the rule vLLM itself uses to estimate them (2026 builds) or the memory a capture
took (earlier builds, which capture after the KV cache and so only need the headroom).

Design notes (assumptions):
    1. Capture sizes, per profile (``max_num_seqs`` = ``S``, ``max_num_batched_tokens`` = ``T``,
       ``q`` = 1 + speculative tokens):

       * ``vllm-v0``: V0's decode graphs, ``[1, 2, 4] + [8 i]`` up to the first size >= ``S``
         (v0.7.3 vllm/config.py ``VllmConfig._set_cudagraph_sizes``, the ``VLLM_USE_V1=0`` branch).
       * ``vllm-v1-jan2025``: ``[1, 2, 4] + range(8, 513, 8)``, 67 sizes (v0.7.3 vllm/config.py).
       * ``vllm-v1-2025``: the same list, the sizes above ``T`` dropped (v0.9.2 vllm/config.py,
         ``SchedulerConfig.cuda_graph_sizes`` default ``[512]``).
       * ``vllm-v0.10``: ``[1, 2, 4] + range(8, min(2 S, 512) + 1, 8)``, at most ``T`` (v0.10.1.1
         vllm/config/scheduler.py ``cuda_graph_sizes = [min(max_num_seqs * 2, 512)]``,
         vllm/config/__init__.py ``_set_cudagraph_sizes``). gpt-oss widens the list to 1024 in
         steps of 16 above 256, 83 sizes (vllm/model_executor/models/config.py
         ``GptOssForCausalLMConfig``): the 83 graphs of reference case V15's log.
       * ``vllm-v0.11`` (v0.11.1-v0.20): ``M = min(2 S, 512, T)`` (1024 for gpt-oss), then
         ``[1, 2, 4]`` up to ``M``, steps of 8 below 256, steps of 16 from 256 to ``M``
         (v0.11.1 vllm/config/vllm.py ``_set_cudagraph_sizes``; v0.11.0 still used the v0.10
         list, 992 for gpt-oss, not modelled).
       * ``vllm-v0.28`` and ``vllm`` (read at v0.28.0 and v0.29.0): ``M = min(2 S q, 512, T)``, 1024
         instead of 512 on datacenter Blackwell (SM 10.x, ``is_device_capability_family(100)``) and for
         gpt-oss; the same grid, plus ``T`` when ``T <= M``; ``vllm`` (v0.29+) also adds ``n q`` for the
         request counts ``n`` of that grid up to ``S`` when ``q > 1`` (the uniform-decode sizes of
         speculative decoding).
    2. Graph mode (vllm/config/compilation.py ``CUDAGraphMode``): ``--enforce-eager`` gives NONE.
       Otherwise an explicit ``cudagraph_mode`` (``-cc.cudagraph_mode=...`` /
       ``--compilation-config '{"cudagraph_mode": ...}'``) wins, then the level:
       v0.10 and the early-2025 V1 builds capture PIECEWISE at compilation level 3 (the default)
       and nothing at ``-O0``-``-O2`` (v0.10.1.1 vllm/config/__init__.py ``__post_init__``);
       v0.11+ default to FULL_AND_PIECEWISE, and from v0.12 ``-O`` is ``--optimization-level``:
       O0 NONE, O1 PIECEWISE, O2 / O3 FULL_AND_PIECEWISE (v0.12.0 and v0.29.0
       vllm/config/vllm.py ``OPTIMIZATION_LEVEL_00`` ... ``_03``; v0.11.0 / v0.11.1 read ``-O n``
       as the compilation level / mode, where any value below 3 captured nothing). V0 has no
       mode: it captures decode graphs unless eager.
    3. Graphs per mode (vllm/v1/cudagraph_dispatcher.py ``initialize_cudagraph_keys``): PIECEWISE
       captures every size, each as ``L + 1`` graphs (vLLM splits the compiled model at every
       attention, Mamba and linear-attention op: ``splitting_ops``, vllm/config/compilation.py);
       FULL_AND_PIECEWISE adds one FULL graph per size from ``q`` to ``q S`` (uniform decode);
       FULL captures one FULL graph per size; FULL_DECODE_ONLY only the decode ones.
    4. Memory of a capture: the private pool holds the intermediates of the largest size
       (captures run largest first and the smaller ones reuse the pool), the forward peak of
       :func:`planner.engines.overheads.forward_peak_bytes` at that many tokens; each graph then
       costs :data:`CUDA_GRAPH_BYTES` of driver memory. The 2026 builds estimate the same way
       before sizing the KV cache (vllm/v1/worker/gpu_model_runner.py
       ``profile_cudagraph_memory``): per mode, the first (largest) capture measured whole and
       the second one taken as the cost of each further graph; the modes share the pool, so the
       estimate is ``max over modes(first) + sum over modes((graphs - 1) x per graph)`` (from v0.29 the
       default runner measures its PIECEWISE graphs whole and extrapolates FULL ones the same way:
       vllm/v1/worker/gpu/cudagraph_utils.py ``_extrapolate_full_graph_memory``). The
       ``vllm`` profile follows the newest releases (v0.29+), where both model runners estimate;
       under ``vllm-v0.28`` (v0.22-v0.28) the default runner of dense models (the "V2" runner,
       vllm/v1/worker/gpu/model_runner.py, chosen by vllm/config/vllm.py ``use_v2_model_runner``)
       returned 0 from ``profile_cudagraph_memory``, so those launches charge no graphs before
       the KV cache and capture them into the headroom afterwards, priced as the capture takes them
       (:mod:`planner.engines.vllm_runner`; reference cases N12-N14, v0.28, Qwen3-14B).
       Worked example (reference case N12: Qwen3-14B, 40 layers, L40S, ``S`` 256, ``T`` 2,048):
       sizes up to 512, 51 PIECEWISE sizes x 41 graphs + 35 FULL graphs (1 to 256) = 2,126 graphs x
       235 KiB = 0.48 GiB, plus the 512-token pool 0.06 GiB = 0.54 GiB.
    5. Not modelled: LoRA (one set of graphs per adapter count), the encoder graphs of
       multimodal models, attention workspaces that a FULL capture sizes to the profiled context
       (``profile_seq_lens``: vLLM issue #50780 reports this transient on Gated DeltaNet hybrids
       since v0.26), the NCCL memory of collectives captured in graphs (a TP 2 PCIe log took
       0.65 GiB where TP 1 took 0.50), and unified-memory GPUs, where free memory is the system's
       and host-side growth during capture counts too (reference case N03).

Sources: the files named in the notes; the CUDA-graph constant from reference case V07's log.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from planner.engines.loaded import gpu_capability
from planner.engines.overheads import forward_peak_bytes
from planner.model import ModelSpec
from planner.units import GiB, KiB

if TYPE_CHECKING:  # types.py imports this module's constants
    from planner.engines.types import EngineRequest

CUDAGRAPH_MODES: tuple[str, ...] = ("FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "NONE")
"""vLLM ``cudagraph_mode`` values (vllm/config/compilation.py ``CUDAGraphMode``)."""

OPTIMIZATION_LEVELS: tuple[int, ...] = (0, 1, 2, 3)
"""vLLM ``-O`` values: ``--optimization-level`` from v0.12, the compilation level / mode before."""

CUDA_GRAPH_BYTES = 235 * KiB
"""Driver memory of one captured CUDA graph [bytes]. Measured, not read in code: reference case V07's
log (vLLM 0.10.1.1, Qwen2-7B, A100, TP 1) printed "Graph capturing finished in 3 secs, took 0.50 GiB"
for 67 PIECEWISE sizes x 29 graphs; less the 512-token pool (0.06 GiB) that is 235 KiB a graph. The
same log at TP 2 on a PCIe node took 0.65 GiB (NCCL collectives inside the graphs), gpt-oss-120b at
TP 4 over Ray 1.88 GiB for 83 x 37 graphs: neither is modelled (design note 5)."""

V0_PROFILE = "vllm-v0"
EARLY_V1_PROFILES = frozenset({"vllm-v1-jan2025", "vllm-v1-2025", "vllm-v0.10"})
"""Profiles whose default graph mode is PIECEWISE at compilation level 3 (design note 2)."""
ESTIMATING_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""Profiles whose releases estimate graph memory before sizing the KV cache (``profile_cudagraph_memory``: the
V1 runner from v0.21, Model Runner V2 from v0.29; :func:`planner.engines.vllm_runner.graphs_charged`)."""
GRID_2026_PROFILES = frozenset({"vllm", "vllm-v0.28"})
"""Profiles with the 2026 capture grid (design note 1: ``2 S q``, 1,024 on datacenter Blackwell, ``T`` appended;
read at v0.28.0 and v0.29.0); only ``vllm`` (v0.29+) adds the uniform-decode sizes of speculative decoding."""


@dataclass(frozen=True, kw_only=True)
class CudaGraphEstimate:
    """The CUDA graphs of one GPU and their memory (module docstring).

    Attributes:
        mode: The resolved ``cudagraph_mode`` (``NONE``: nothing captured).
        capture_sizes: Batch sizes captured [tokens], ascending.
        piecewise_sizes, full_sizes: The sizes captured PIECEWISE and FULL [tokens], ascending.
        graphs_per_piecewise_size: CUDA graphs of one PIECEWISE size (pieces of the compiled model).
        pool_bytes: The private pool: forward peak at the largest size [bytes].
        total_bytes: The estimate [bytes].
    """

    mode: str
    capture_sizes: tuple[int, ...] = ()
    piecewise_sizes: tuple[int, ...] = ()
    full_sizes: tuple[int, ...] = ()
    graphs_per_piecewise_size: int = 0
    pool_bytes: int = 0
    total_bytes: int = 0

    @property
    def num_graphs(self) -> int:
        """CUDA graphs captured on this GPU."""
        return len(self.piecewise_sizes) * self.graphs_per_piecewise_size + len(self.full_sizes)

    def profiling_line(self) -> str:
        """vLLM's "Profiling CUDA graph memory" line (v0.2x gpu_model_runner.py), "" when nothing is captured."""
        groups = [f"{name}={len(sizes)} (largest={sizes[-1]})"
                  for name, sizes in (("PIECEWISE", self.piecewise_sizes), ("FULL", self.full_sizes)) if sizes]
        return f"Profiling CUDA graph memory: {', '.join(groups)}" if groups else ""


def resolve_cudagraph_mode(profile_id: str, *, cudagraph_mode: str | None = None,
                           optimization_level: int | None = None, enforce_eager: bool = False) -> str:
    """The ``cudagraph_mode`` vLLM runs with (design note 2).

    Examples: ``vllm`` -> FULL_AND_PIECEWISE; ``vllm`` with ``-O1`` -> PIECEWISE; ``vllm-v0.10`` ->
    PIECEWISE; ``vllm-v0.10`` with ``-O2`` -> NONE; any profile with ``--enforce-eager`` -> NONE.

    Raises:
        ValueError: an unknown mode or level, or a mode / level under the V0 engine, which has neither.
    """
    if cudagraph_mode is not None and cudagraph_mode.upper() not in CUDAGRAPH_MODES:
        raise ValueError(f"unknown cudagraph_mode {cudagraph_mode!r}; choose one of {', '.join(CUDAGRAPH_MODES)}")
    if optimization_level is not None and optimization_level not in OPTIMIZATION_LEVELS:
        raise ValueError(f"optimization level -O{optimization_level} does not exist; choose 0, 1, 2 or 3")
    if profile_id == V0_PROFILE:
        if cudagraph_mode is not None or optimization_level is not None:
            raise ValueError("vLLM's V0 engine has no cudagraph_mode or -O level; it captures decode graphs "
                             "unless --enforce-eager; pick a V1 engine (vllm, vllm-v0.11, ...) or drop the flag")
        return "NONE" if enforce_eager else "FULL_DECODE_ONLY"
    if enforce_eager:
        return "NONE"
    if cudagraph_mode is not None:
        return cudagraph_mode.upper()
    level = 3 if optimization_level is None else optimization_level
    if profile_id in EARLY_V1_PROFILES:
        return "PIECEWISE" if level == 3 else "NONE"
    return ("NONE", "PIECEWISE", "FULL_AND_PIECEWISE", "FULL_AND_PIECEWISE")[level]


def _grid(largest: int) -> list[int]:
    """``[1, 2, 4]`` up to ``largest``, steps of 8 below 256, steps of 16 from 256 (v0.11.1+ grid)."""
    sizes = [i for i in (1, 2, 4) if i <= largest]
    if largest >= 8:
        sizes += range(8, min(largest + 1, 256), 8)
    if largest >= 256:
        sizes += range(256, largest + 1, 16)
    return sizes


def _is_gpt_oss(model: ModelSpec) -> bool:
    """gpt-oss, whose config widens the capture list to 1024 (``GptOssForCausalLMConfig``)."""
    return model.model_type == "gpt_oss"


def capture_sizes(profile_id: str, model: ModelSpec, *, max_num_seqs: int, max_num_batched_tokens: int,
                  gpu_name: str = "", num_speculative_tokens: int = 0,
                  max_capture_size: int | None = None) -> tuple[int, ...]:
    """The ``cudagraph_capture_sizes`` a profile picks [tokens], ascending (design note 1).

    ``max_capture_size`` is ``--max-cudagraph-capture-size`` (``--cuda-graph-sizes N`` on v0.10 and the
    2025 V1 builds; V0 and v0.7.0-v0.7.2 have no such flag and ignore it); None = the default.

    Worked examples: ``vllm`` with 256 sequences and 2,048 batched tokens -> 51 sizes, 1 ... 512;
    with 8 sequences and 8,192 tokens -> (1, 2, 4, 8, 16); ``vllm-v0.10`` with 256 sequences -> 67
    sizes, 1 ... 512 (reference case V07's log); gpt-oss under ``vllm-v0.10`` with 2,048 tokens -> 83
    sizes, 1 ... 1,024 (case V15's log).
    """
    seqs, tokens = max_num_seqs, max_num_batched_tokens
    if profile_id == V0_PROFILE:
        possible = (1, 2, 4, *range(8, 8193, 8))
        largest = next((s for s in possible if s >= seqs), possible[-1])
        return tuple(s for s in possible if s <= largest)
    if profile_id == "vllm-v1-jan2025":
        return (1, 2, 4, *range(8, 513, 8))
    if profile_id in ("vllm-v1-2025", "vllm-v0.10"):
        top = max_capture_size or (512 if profile_id == "vllm-v1-2025" else min(2 * seqs, 512))
        sizes = [1, 2, 4, *range(8, top + 1, 8)]
        if profile_id == "vllm-v0.10" and _is_gpt_oss(model) and top < 1024:
            sizes = [1, 2, 4, *range(8, 256, 8), *range(256, 1025, 16)]
        return tuple(s for s in sizes if s <= tokens)
    return _v011_sizes(profile_id, model, seqs, tokens, gpu_name, num_speculative_tokens, max_capture_size)


def _v011_sizes(profile_id: str, model: ModelSpec, seqs: int, tokens: int, gpu_name: str, num_speculative_tokens: int,
                max_capture_size: int | None) -> tuple[int, ...]:
    """:func:`capture_sizes` of ``vllm-v0.11``, ``vllm-v0.28`` and ``vllm`` (v0.11.1+ grid; design note 1)."""
    newest = profile_id in GRID_2026_PROFILES
    query = 1 + num_speculative_tokens if newest else 1
    ceiling = 1024 if newest and gpu_capability(gpu_name)[0] == 10 else 512
    defaulted = max_capture_size is None and not _is_gpt_oss(model)
    if max_capture_size is None:
        max_capture_size = 1024 if _is_gpt_oss(model) else min(2 * seqs * query, ceiling)
    largest = min(max_capture_size, tokens)
    sizes = _grid(largest)
    if newest:
        if tokens <= largest:
            sizes.append(tokens)
        if defaulted and query > 1 and profile_id == "vllm":
            counts = set(_grid(min(seqs, ceiling))) | {min(seqs, ceiling)}
            sizes += [n * query for n in counts if n * query <= largest]
    return tuple(sorted(set(sizes)))


def graph_sizes(mode: str, sizes: tuple[int, ...], *, max_num_seqs: int,
                num_speculative_tokens: int = 0) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(piecewise_sizes, full_sizes)`` a mode captures (design note 3) [tokens].

    Example: FULL_AND_PIECEWISE over 1 ... 512 with 256 sequences -> the 51 sizes PIECEWISE and the
    35 sizes from 1 to 256 FULL.
    """
    query = 1 + num_speculative_tokens
    decode = tuple(s for s in sizes if query <= s <= query * max_num_seqs)
    return {
        "NONE": ((), ()), "PIECEWISE": (sizes, ()), "FULL": ((), sizes), "FULL_DECODE_ONLY": ((), decode),
        "FULL_AND_PIECEWISE": (sizes, decode),
    }[mode]


def cudagraph_estimate(model: ModelSpec, profile_id: str, *, mode: str, max_num_seqs: int,
                       max_num_batched_tokens: int, num_layers: int, activation_bytes: int,
                       tensor_parallel_size: int = 1, gpu_name: str = "", num_speculative_tokens: int = 0,
                       max_capture_size: int | None = None, estimated: bool | None = None) -> CudaGraphEstimate:
    """The CUDA graphs one GPU captures and their memory (design notes 1-4).

    Args:
        model: The model (hidden sizes for the pool, the gpt-oss capture list).
        profile_id: The vLLM profile.
        mode: The resolved mode (:func:`resolve_cudagraph_mode`).
        max_num_seqs, max_num_batched_tokens: The scheduler limits vLLM runs with.
        num_layers: Layers on this GPU (its pipeline stage) [layers].
        activation_bytes: Bytes per activation element (2 for bf16).
        tensor_parallel_size: GPUs each layer is split over.
        gpu_name: The GPU (datacenter Blackwell captures up to 1,024 in the 2026 builds).
        num_speculative_tokens: Draft tokens per step (uniform-decode sizes of the 2026 builds).
        max_capture_size: ``--max-cudagraph-capture-size`` [tokens]; None = the version's default.
        estimated: True prices vLLM's estimate, False what the capture itself takes; None = the profile's
            (:data:`ESTIMATING_PROFILES`; a runner that captures after the KV cache passes False).
    """
    if mode == "NONE":
        return CudaGraphEstimate(mode=mode)
    sizes = capture_sizes(profile_id, model, max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
                          gpu_name=gpu_name, num_speculative_tokens=num_speculative_tokens,
                          max_capture_size=max_capture_size)
    piecewise, full = graph_sizes(mode, sizes, max_num_seqs=max_num_seqs, num_speculative_tokens=num_speculative_tokens)
    pieces = num_layers + 1
    largest = max(piecewise + full, default=0)
    pool = forward_peak_bytes(model, largest, activation_bytes, tensor_parallel_size) if largest else 0
    per_graph = {"PIECEWISE": (len(piecewise), pieces * CUDA_GRAPH_BYTES), "FULL": (len(full), CUDA_GRAPH_BYTES)}
    counts = [(n, cost) for n, cost in per_graph.values() if n]
    if estimated is None:
        estimated = profile_id in ESTIMATING_PROFILES
    if estimated:  # first capture per mode whole, (n - 1) more at the second's cost
        total = pool + max(cost for _, cost in counts) + sum((n - 1) * cost for n, cost in counts)
    else:  # what the capture itself took
        total = pool + sum(n * cost for n, cost in counts)
    return CudaGraphEstimate(mode=mode, capture_sizes=sizes, piecewise_sizes=piecewise, full_sizes=full,
                             graphs_per_piecewise_size=pieces if piecewise else 0, pool_bytes=pool, total_bytes=total)


def request_cudagraphs(model: ModelSpec, request: EngineRequest, profile_id: str, *, num_layers: int,
                       max_num_batched_tokens: int, max_num_seqs: int, activation_bytes: int,
                       estimated: bool | None = None) -> CudaGraphEstimate:
    """:func:`cudagraph_estimate` for an :class:`planner.engines.types.EngineRequest` (its mode flags, its
    speculative tokens, its GPU) on a GPU holding ``num_layers`` layers.

    Raises:
        ValueError: a mode or ``-O`` level the profile does not have (:func:`resolve_cudagraph_mode`).
    """
    mode = resolve_cudagraph_mode(profile_id, cudagraph_mode=request.cudagraph_mode,
                                  optimization_level=request.optimization_level, enforce_eager=request.enforce_eager)
    speculative = request.serving.speculative if request.serving is not None else None
    return cudagraph_estimate(model, profile_id, mode=mode, max_num_seqs=max_num_seqs,
                              max_num_batched_tokens=max_num_batched_tokens, num_layers=num_layers,
                              activation_bytes=activation_bytes, tensor_parallel_size=request.tensor_parallel_size,
                              gpu_name=request.gpu_name, max_capture_size=request.max_cudagraph_capture_size,
                              num_speculative_tokens=speculative.num_speculative_tokens if speculative else 0,
                              estimated=estimated)


def eager_conflict(request: EngineRequest) -> str:
    """The warning for ``--enforce-eager`` together with a graph mode, a ``-O`` level or a capture size, "" without
    such a pair. vLLM lets eager win: ``VllmConfig.__post_init__`` (vllm/config/vllm.py; v0.12.0 and v0.34.0) sets
    the compilation mode and ``cudagraph_mode`` to NONE, the level to -O0 and the capture sizes to none, so the
    other flags are ignored, and the launch command leaves them out (:func:`planner.engines.launch.
    vllm_cudagraph_flags`)."""
    if not request.enforce_eager:
        return ""
    given = [text for text, value in (
        (f"cudagraph_mode {request.cudagraph_mode}", request.cudagraph_mode),
        (f"-O{request.optimization_level}", request.optimization_level),
        (f"max_cudagraph_capture_size {request.max_cudagraph_capture_size}", request.max_cudagraph_capture_size))
        if value is not None]
    if not given:
        return ""
    return (f"--enforce-eager overrides {' and '.join(given)}: vLLM runs eager (no torch.compile, cudagraph_mode NONE, "
            "-O0; vllm/config/vllm.py VllmConfig.__post_init__), so the launch command leaves "
            f"{'it' if len(given) == 1 else 'them'} out and no CUDA graph is planned; drop --enforce-eager to capture "
            "graphs")


def cudagraph_note(graphs: CudaGraphEstimate, charged_bytes: int, *, subtracted: bool) -> str:
    """One line saying which graphs this version captures and what they cost, "" when none are.

    ``charged_bytes`` is the figure the plan uses (the estimate, or a measured one that replaced it).
    """
    if graphs.mode == "NONE":
        return ""
    parts = []
    if graphs.piecewise_sizes:
        parts.append(f"{len(graphs.piecewise_sizes)} PIECEWISE sizes x {graphs.graphs_per_piecewise_size} graphs")
    if graphs.full_sizes:
        parts.append(f"{len(graphs.full_sizes)} FULL (1 to {graphs.full_sizes[-1]:,})")
    where = ("estimated before the KV cache is sized and taken from it" if subtracted
             else "captured after the KV cache is allocated, in the 1 - gpu_memory_utilization headroom")
    return (f"CUDA graphs ({graphs.mode}): capture sizes 1 to {graphs.capture_sizes[-1]:,} "
            f"({len(graphs.capture_sizes)} sizes); {' + '.join(parts)} = {graphs.num_graphs:,} graphs, "
            f"~{charged_bytes / GiB:.2f} GiB, {where}; --enforce-eager or -O0 captures none")


def cudagraph_log_lines(graphs: CudaGraphEstimate, charged_bytes: int) -> tuple[str, ...]:
    """The lines the 2026 builds print while estimating graph memory (gpu_model_runner.py
    ``profile_cudagraph_memory``), with the plan's figure; none when nothing is captured."""
    line = graphs.profiling_line()
    if not line:
        return ()
    return line, f"Estimated CUDA graph memory: {charged_bytes / GiB:.2f} GiB total"
