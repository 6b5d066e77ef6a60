"""llama.cpp: the cells ``-c`` / ``-np`` ask for, and their bytes per device.

Exactly the cells requested: ``n_ctx`` padded to 256; one stream (unified) or
``-np`` streams of ``pad256(n_ctx / np)`` cells; SWA layers keep
``pad256(min(cells, n_swa x (unified ? np : 1) + n_ubatch))``; rows are
``ggml_row_size`` (q8_0 34 B / 32 values, q4_0 18 B / 32) of the K type (``-ctk``) and
the V type (``-ctv``, default the K type); MLA keeps one 576-wide latent row and no V.

Recurrent layers (Mamba, Gated DeltaNet and the other linear-attention mixers of hybrid
models) live in a separate ``llama_memory_recurrent``: one cell per sequence
(``max(1, n_seq_max)``), each holding the layer's conv state R and SSM state S in f32
whatever ``-ctk`` / ``-ctv`` say (``llama_model::create_memory`` passes ``GGML_TYPE_F32``
for both); it prints ``llama_memory_recurrent: size = X MiB (N cells, L layers, S seqs),
R (f32): ..., S (f32): ...``. S is the catalog's SSM state; R keeps ``d_conv - 1`` of the
``d_conv`` conv columns (``llama_hparams::n_embd_r`` in src/llama-hparams.cpp:
``(ssm_d_conv - 1) x (d_inner + 2 x n_group x d_state)``; LFM2 ``n_shortconv_l_cache - 1``).

SWA layers take the same K/V types as the full layers: ggml-org/llama.cpp PR #21277
(2026-04-01) kept them in F16 under a quantized cache, and PR #21332 reverted it the next
day ("in some cases the SWA cache actually takes significant portion of memory"), so no
release build keeps a separate SWA type.

Sources: llama.cpp src/llama-kv-cache.cpp, src/llama-kv-cache-iswa.cpp,
src/llama-memory-recurrent.cpp, src/llama-context.cpp, ggml/src/ggml.c (type traits);
ENGINES.md 3.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner.engines.common import engine_plan, kv_row_bytes, rank_budget, resolve_knobs
from planner.engines.launch import LaunchSpec
from planner.engines.length_limits import llamacpp_warning, over_limit
from planner.engines.overheads import (
    forward_peak_bytes,
    loaded_weight_bytes,
    pipeline_layer_ranges,
)
from planner.engines.profiles import EngineProfile
from planner.engines.serving import DRAFT_KV, DRAFT_WEIGHTS, LORA_SLOTS, serving_terms
from planner.engines.types import EnginePlan, EngineRequest, RankBudget
from planner.engines.vllm import gib2
from planner.model import ModelSpec
from planner.model.dtypes import weight_dtype
from planner.model.kv import cache_dtypes
from planner.model.layers import (
    CacheDtypes,
    MLAAttention,
    RecurrentState,
    SlidingWindowAttention,
)
from planner.units import MiB, ceil_div

LLAMACPP_PAD = 256
"""llama.cpp pads ``n_ctx`` and per-stream cells to a multiple of 256."""

RECURRENT_STATE_BYTES_PER_ELEMENT = 4
"""llama.cpp keeps recurrent R and S states in f32 (``GGML_TYPE_F32`` in ``llama_model::create_memory``)."""


def pad256(n: int) -> int:
    """Round up to a multiple of 256 (llama.cpp cell padding): 1000 -> 1024."""
    return ceil_div(n, LLAMACPP_PAD) * LLAMACPP_PAD


@dataclass(frozen=True, kw_only=True)
class LlamaCppCells:
    """Cells of a llama.cpp context.

    Attributes:
        n_ctx: Padded context [cells]. n_seq: Slots (``-np``). unified: One shared stream.
        streams: KV streams. full_cells: Cells per stream of full layers.
        swa_cells: Cells per stream of SWA layers.
    """

    n_ctx: int
    n_seq: int
    unified: bool
    streams: int
    full_cells: int
    swa_cells: int


def llamacpp_cells(n_ctx: int, n_seq: int, *, unified: bool, sliding_window: int | None, n_ubatch: int = 512,
                   swa_full: bool = False) -> LlamaCppCells:
    """Cells llama.cpp allocates (module docstring).

    Worked example (case L04, gemma-3-270m): ``-c 1024 -np 4``, non-unified,
    window 512: 4 streams x pad256(1024 / 4) = 4 x 256 cells; SWA
    pad256(min(256, 512 + 512)) = 256 cells per stream.

    Sources: src/llama-context.cpp (n_ctx padding, ``n_ctx_seq``),
    src/llama-kv-cache-iswa.cpp (SWA size).
    """
    padded = pad256(n_ctx)
    streams = 1 if unified else n_seq
    full = padded if unified else pad256(padded // n_seq)
    swa = full
    if sliding_window is not None and not swa_full:
        swa = pad256(min(full, sliding_window * (n_seq if unified else 1) + n_ubatch))
    return LlamaCppCells(n_ctx=padded, n_seq=n_seq, unified=unified, streams=streams, full_cells=full, swa_cells=swa)


@dataclass(frozen=True, kw_only=True)
class _DeviceKV:
    """One llama.cpp device's layers: counts and per-cell row bytes of the full and SWA caches, and the
    per-sequence recurrent state of its recurrent layers."""

    full_layers: int
    swa_layers: int
    k_full: int
    v_full: int
    k_swa: int
    v_swa: int
    recurrent_layers: int = 0
    r_state: int = 0
    s_state: int = 0

    def bytes(self, cells: LlamaCppCells) -> int:
        """KV buffer of this device: rows x cells x streams for each cache [bytes]."""
        return ((self.k_full + self.v_full) * cells.full_cells
                + (self.k_swa + self.v_swa) * cells.swa_cells) * cells.streams

    def recurrent_bytes(self, n_seq: int) -> int:
        """The recurrent-state buffer: one f32 R + S row per sequence and layer [bytes]."""
        return (self.r_state + self.s_state) * max(1, n_seq)


def _device_kv(model: ModelSpec, layers: range, k_dtypes: CacheDtypes, v_dtypes: CacheDtypes) -> _DeviceKV:
    counts = {"full": [0, 0, 0], "swa": [0, 0, 0]}
    recurrent = [0, 0, 0]
    for i in layers:
        layer = model.layers[i]
        if isinstance(layer, RecurrentState):
            recurrent[0] += 1
            recurrent[1] += layer.engine_conv_state_elements * RECURRENT_STATE_BYTES_PER_ELEMENT  # d_conv - 1
            recurrent[2] += layer.ssm_state_elements * RECURRENT_STATE_BYTES_PER_ELEMENT
            continue
        k, _ = kv_row_bytes(layer, k_dtypes, 1)
        _, v = kv_row_bytes(layer, v_dtypes, 1)
        bucket = "swa" if isinstance(layer, SlidingWindowAttention) else "full"
        if k:
            counts[bucket][0] += 1
            counts[bucket][1] += k
            counts[bucket][2] += v
    (nf, kf, vf), (ns, ks, vs) = counts["full"], counts["swa"]
    return _DeviceKV(full_layers=nf, swa_layers=ns, k_full=kf, v_full=vf, k_swa=ks, v_swa=vs,
                     recurrent_layers=recurrent[0], r_state=recurrent[1], s_state=recurrent[2])


def _ggml_type(name: str) -> str:
    """ggml's name of a KV dtype (``fp16`` -> ``f16``)."""
    return {"fp32": "f32", "fp16": "f16"}.get(name, name)


def _llamacpp_lines(dev: _DeviceKV, cells: LlamaCppCells, k_name: str, v_name: str) -> list[str]:
    """The ``llama_kv_cache`` / ``llama_memory_recurrent`` lines llama.cpp prints for one device
    (formats of llama-kv-cache.cpp and llama-memory-recurrent.cpp)."""
    k_type, v_type = _ggml_type(k_name), _ggml_type(v_name)
    lines = []
    if dev.swa_layers:
        lines.append(f"llama_kv_cache_iswa: creating non-SWA KV cache, size = {cells.full_cells} cells")
        lines.append(f"llama_kv_cache_iswa: creating     SWA KV cache, size = {cells.swa_cells} cells")
    for per_stream, layers_n, k_b, v_b in ((cells.full_cells, dev.full_layers, dev.k_full, dev.v_full),
                                           (cells.swa_cells, dev.swa_layers, dev.k_swa, dev.v_swa)):
        if layers_n:
            n_cells = per_stream * cells.streams
            lines.append(f"llama_kv_cache: size = {(k_b + v_b) * n_cells / MiB:7.2f} MiB ({per_stream:6d} cells, "
                         f"{layers_n:3d} layers, {cells.n_seq:2d}/{cells.streams} seqs), K ({k_type}): "
                         f"{k_b * n_cells / MiB:7.2f} MiB, V ({v_type}): {v_b * n_cells / MiB:7.2f} MiB")
    if dev.recurrent_layers:
        seqs = max(1, cells.n_seq)
        r, st = dev.r_state * seqs, dev.s_state * seqs
        lines.append(f"llama_memory_recurrent: size = {(r + st) / MiB:7.2f} MiB ({seqs:6d} cells, "
                     f"{dev.recurrent_layers:3d} layers, {seqs:2d} seqs), R (f32): {r / MiB:7.2f} MiB, "
                     f"S (f32): {st / MiB:7.2f} MiB")
    return lines


def _refusal(r, gpu_memory_bytes: int, k_name: str, mla: bool) -> str:
    """Why a device does not fit, with a knob that helps: a smaller ``-c``, a smaller cache type than the
    one given (never the one already in use), fewer offloaded layers."""
    flag = "-ctk" if mla else "-ctk/-ctv"  # MLA keeps only K (the latent); V is a view of it
    smaller = {"fp32": "q8_0", "bf16": "q8_0", "fp16": "q8_0", "q8_0": "q4_0"}.get(k_name)
    knobs = ["lower -c"] + ([f"use {flag} {smaller}"] if smaller else []) + ["offload fewer layers (-ngl)"]
    return (f"device {r.stage}: weights {gib2(r.weights_bytes)} + KV {gib2(r.available_kv_cache_bytes)} + compute "
            f"buffer ~{gib2(r.activation_bytes)} GiB exceed {gib2(gpu_memory_bytes)} GiB; {', '.join(knobs)}")


def _llamacpp_serving_rank(rank: RankBudget, terms, n_ctx: int, lines: list[str]) -> RankBudget:
    """Device 0 with the ``--lora`` adapters (loaded whole) and the ``--model-draft`` model with its KV of
    ``n_ctx`` cells beside its own (llama-server gives each slot a draft context of the slot's size, so
    the slots' draft caches add up to ``-c``; tools/server/server.cpp), all of it on device 0 (an
    estimate: ``-ngld`` / ``-devd`` can place the draft elsewhere). Appends the draft's KV line."""
    draft_kv = terms.draft_kv_bytes_per_token * n_ctx
    parts = ((LORA_SLOTS, "outside", terms.lora_bytes), (DRAFT_WEIGHTS, "outside", terms.draft_weights_bytes),
             (DRAFT_KV, "outside", draft_kv))
    if draft_kv:
        lines.append(f"llama_kv_cache: {'CUDA0':>10s} KV buffer size = {draft_kv / MiB:8.2f} MiB")
    extra = terms.lora_bytes + terms.draft_weights_bytes + draft_kv
    return replace(rank, requested_bytes=rank.requested_bytes + extra, serving_parts=parts)


def plan_llamacpp(model: ModelSpec, gpu_memory_bytes: int, request: EngineRequest,
                  profile: EngineProfile) -> EnginePlan:
    """llama.cpp: the KV buffer is exactly what ``-c/-np/-ctk/-ctv`` ask for (or it fails).

    Layers are split across ``tp x pp`` devices (``-sm layer``); each device's
    "KV buffer size" holds its layers. Bytes per layer = ``(K row + V row) x cells
    x streams``. Worked example (case L06, Qwen3-4B, q8_0, ``-c 32768``): 36 x
    (1088 + 1088) B x 32,768 = 2,448.00 MiB. Concurrency is the slot count
    (``-np``); the fit check adds weights and a compute-buffer estimate
    (``n_ubatch x vocab x 4 B`` of logits + an fp32 forward pass; not calibrated). A slot past the
    model's training context keeps its cells, with llama.cpp's warning, and serves at most the training context
    (llama-server's cap; :mod:`planner.engines.length_limits`).

    Sources: module docstring; tools/server/server-context.cpp (slot cap).
    """
    kv_name = "fp16" if request.kv_cache_dtype == "auto" else request.kv_cache_dtype
    v_name = kv_name if request.kv_cache_dtype_v in (None, "auto") else request.kv_cache_dtype_v
    c = resolve_knobs(model, request, kv_name)
    v_dtypes = cache_dtypes(model, request.weight_dtype, v_name, vllm_storage=False)
    n_seq = request.max_num_seqs or 1
    unified = request.kv_unified if request.kv_unified is not None else n_seq == 1
    windows = [layer.sliding_window for layer in model.layers if isinstance(layer, SlidingWindowAttention)]
    cells = llamacpp_cells(c.max_model_len, n_seq, unified=unified, sliding_window=max(windows) if windows else None,
                           n_ubatch=request.n_ubatch, swa_full=request.swa_full)
    devices = c.tp * c.pp
    ranks, lines = [], []
    for device, layers in enumerate(pipeline_layer_ranges(model.num_layers, devices)):
        dev = _device_kv(model, layers, c.dtypes, v_dtypes)
        kv = dev.bytes(cells) + dev.recurrent_bytes(n_seq)
        if device == 0:
            lines += _llamacpp_lines(dev, cells, c.dtypes.kv.name, v_dtypes.kv.name)
        weights = request.weights_bytes if request.weights_bytes is not None else loaded_weight_bytes(
            model, weight_dtype(request.weight_dtype), 1, device, devices, engine_extras=False)
        compute = request.activation_bytes
        if compute is None:
            compute = request.n_ubatch * model.vocab_size * 4 + forward_peak_bytes(model, request.n_ubatch, 4, 1)
        row = dev.k_full + dev.v_full + dev.k_swa + dev.v_swa
        ranks.append(rank_budget(device, layers, base=gpu_memory_bytes, requested=weights + kv + compute, weights=weights,
                           activation=compute, forward=compute, sampler=0, non_torch=request.non_torch_bytes or 0,
                           cudagraph=0, available=kv, per_token=row, bytes_per_block=row,
                           num_blocks=cells.full_cells * cells.streams, request=request))
        lines.append(f"llama_kv_cache: {'CUDA' + str(device):>10s} KV buffer size = {kv / MiB:8.2f} MiB")
    if request.serving is not None:  # --lora adapters and --model-draft on device 0 (planner.engines.serving)
        ranks[0] = _llamacpp_serving_rank(ranks[0], serving_terms(model, request, profile, num_batched_tokens=0),
                                          cells.n_ctx, lines)
    mla = any(isinstance(layer, MLAAttention) for layer in model.layers)
    reasons = [_refusal(r, gpu_memory_bytes, c.dtypes.kv.name, mla)
               for r in ranks if r.requested_bytes + r.non_torch_bytes > gpu_memory_bytes][:1]
    notes = ["quantized V cache needs flash attention (-fa on)"] if v_dtypes.kv.name in ("q8_0", "q4_0") else []
    total_cells = cells.full_cells * cells.streams
    n_ctx_seq = cells.n_ctx if unified else cells.full_cells  # llama_context's n_ctx_seq
    limit = over_limit(model, n_ctx_seq)
    warnings = [llamacpp_warning(n_ctx_seq, limit)] if limit else []
    return engine_plan(model, request, profile, c, ranks, gpu_memory_bytes=gpu_memory_bytes, fraction=None, block_size=1,
                 mnbt=request.n_ubatch, seqs=n_seq, tokens=total_cells, num_blocks=total_cells,
                 concurrency=float(n_seq), engine_max_len=min(n_ctx_seq, limit or n_ctx_seq),
                 needed=ranks[0].available_kv_cache_bytes // n_seq, reasons=reasons, warnings=warnings,
                 notes=notes, log=lines,
                 formula="KV = rows x cells (no fraction); compute buffer ~ n_ubatch x (vocab x 4 B "
                         "+ fp32 forward pass)",
                 launch=LaunchSpec(engine=profile.id, family=profile.family, model_id=model.model_id,
                                   weight_dtype=request.weight_dtype,
                                   tensor_parallel_size=c.tp, pipeline_parallel_size=c.pp,
                                   max_model_len=c.max_model_len, kv_cache_dtype=request.kv_cache_dtype,
                                   kv_cache_dtype_v=request.kv_cache_dtype_v,
                                   max_num_seqs=n_seq, n_ubatch=request.n_ubatch, kv_unified=unified and n_seq > 1,
                                   swa_full=request.swa_full))
