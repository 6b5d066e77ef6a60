"""Benchmark (not a test): every printed case of the engine-case table, twice.

Usage: ``python scripts/bench_engine_cases.py [--format table|json] [--cases V15 V21 ...]``

The cases are the rows of ``tests/data/reference/engine_cases.csv`` (the in-repository
copy of the shared engine startup table). Each case runs under the engine profile of
its own version (:data:`CASES`: ``vllm-v0`` for V0 logs, ``vllm-v0.10`` for 0.10.x,
``vllm-v0.11`` for the late-2025 V1 builds, ``vllm-v0.28`` for 0.22-0.28, ``vllm`` for 0.29+
(the row's ``engine_version``), ``sglang-v0.4`` for mid-2025
SGLang, ``llama.cpp``, ``trtllm-engine``) and is planned twice:

1. **KV arithmetic**: the engine's printed available memory is pinned
   (``available_kv_memory_bytes``) and the printed token count (and concurrency) is
   compared with the plan's. Error = ``|predicted - printed| / printed`` tokens; "in
   rounding" says whether some available memory inside the print interval
   (``printed +- 0.005 GiB``; twice that for SGLang's K + V) reproduces the print exactly,
   as ``tests/test_engine_cases.py`` checks.
2. **Cold start**: nothing from the log is used; weights, activation peak, non-torch
   memory and CUDA graphs come from the planner's own model of that engine version on
   that GPU (catalog model, catalog or stated GPU memory, the flags the case states).
   Error = ``|predicted - printed| / max(printed, 10 GiB)`` of the available KV memory.
   Run only where the case states the GPU and the flags the budget depends on; the
   others say why not. Cases whose memory fraction is not stated, or whose model the
   catalog only has a stand-in for, are shown in parentheses and left out of the mean.

Rows ``[N..]`` (2025-26 startup logs) use the catalog model's own layers for pass 1 and the
flags their notes give (:data:`CASES`). A refused launch (its notes print "X GiB KV cache is
needed") is checked in pass 1 by that figure and the estimated maximum length, with the
printed available memory pinned, and in pass 2 by whether the cold start predicts the refusal.
A row launched with data / expert parallel flags (:attr:`Case.scale`) has its cold start planned as one
rank of that launch (:func:`planner.scale.plan_scale`). A launch a pass cannot express says why
(unified memory) and is shown in parentheses, not counted.

The script prints one line per engine and version group (:func:`groups`: cold-start mean and
max, KV arithmetic in rounding, refusals predicted), then one row per case with the mean and
max of each error; ``planner.engines.expected_error`` takes its per-group figures from the
first table. It needs the catalog (``model_catalog``), as the app does; it changes nothing and
writes nothing.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import statistics
import sys
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from planner.engines import EngineRequest, plan_engine
from planner.model import ModelSpec
from planner.model.layers import FullAttention, MLAAttention, SlidingWindowAttention
from planner.units import GiB, MiB

CASES_CSV = ROOT / "tests" / "data" / "reference" / "engine_cases.csv"
PRINT_HALF_STEP = GiB // 200
"""Half of vLLM's print step: two decimals of GiB [bytes]."""
COLD_START_FLOOR = 10 * GiB
"""Denominator floor of the cold-start error, so that small pools do not dominate the mean [bytes]."""


@dataclass(frozen=True, kw_only=True)
class Case:
    """How one row of the case table was run (from its engine, version, GPU and notes columns).

    Attributes:
        engine: Planner engine profile of the row's version.
        request: Knobs the row states (besides ``max_model_len``, TP and block size, read from the row).
        model_id: Catalog model for the cold start ("" = not in the catalog: no cold start).
        gpu_memory_gib: Framework-visible memory the row states [GiB]; None = the catalog GPU's.
        gpu_id: Catalog GPU id (memory when ``gpu_memory_gib`` is None, and the name).
        max_position_embeddings: Override of the catalog model's limit (a sibling with another context).
        cold_start: "" when the cold start runs, else why it does not.
        outside_mean: "" when the cold start counts in the mean, else why it is shown but not counted
            (a flag the row does not state, or a stand-in model).
        geometry: Builds the KV-only model of the KV-arithmetic pass (layers from the row's notes;
            ``catalog``: the catalog model's own layers, for the ``[N..]`` rows whose notes give none).
        arithmetic: "" when the KV-arithmetic pass can express the launch, else why not (its figures
            are then shown in parentheses and left out of the rounding count).
        image_limit: ``--limit-mm-per-prompt``'s image count the row states (None = not stated: vLLM's default
            encoder profile for a vision model, as ``plan`` charges it): the cold
            start then plans the vision tower's encoder profile as ``plan --limit-mm-per-prompt`` does
            (one 1,024 x 1,024 image per request, the CLI's default size).
        scale: The data / expert parallel flags the row states, as :class:`planner.scale.ScaleRequest`
            fields (empty = none): the cold start then plans one rank of the launch with
            :func:`planner.scale.plan_scale`, as ``plan -dp N --enable-expert-parallel`` does.
        inferred: A knob of ``request`` the row's own command line does not show, with the source it is
            inferred from (printed in the case's note, so a reader can weigh it).
    """

    engine: str
    request: dict = field(default_factory=dict)
    model_id: str = ""
    gpu_memory_gib: float | None = None
    gpu_id: str = ""
    max_position_embeddings: int | None = None
    cold_start: str = ""
    outside_mean: str = ""
    geometry: str = "plain"
    arithmetic: str = ""
    image_limit: int | None = None
    scale: dict = field(default_factory=dict)
    inferred: str = ""


CASES: dict[str, Case] = {
    "V01": Case(engine="vllm-v0", model_id="meta-llama/Meta-Llama-3.1-8B", gpu_id="nvidia-rtx-3090",
                request=dict(gpu_memory_utilization=0.9)),
    "V03": Case(engine="vllm-v0.11", cold_start="GPU not stated"),
    "V06": Case(engine="vllm-v0.11", model_id="mistralai/Mistral-Small-24B-Instruct-2501", gpu_memory_gib=79.19,
                gpu_id="nvidia-h100-sxm-80gb", request=dict(gpu_memory_utilization=0.95),
                outside_mean="stand-in: Mistral-Small-3.2 (vision tower, encoder profile) is not in the catalog"),
    "V07": Case(engine="vllm-v0.10", model_id="Qwen/Qwen2.5-7B", gpu_id="nvidia-a100-sxm-80gb",
                max_position_embeddings=32768, request=dict(gpu_memory_utilization=0.25)),
    "V12": Case(engine="vllm-v0.11", model_id="Qwen/Qwen3-8B", gpu_id="nvidia-h100-sxm-80gb",
                outside_mean="gpu_memory_utilization not stated (0.9, the default, assumed)"),
    "V14": Case(engine="vllm-v0.11", model_id="meta-llama/Meta-Llama-3.1-70B", gpu_id="nvidia-h100-sxm-80gb",
                geometry="heads64", outside_mean="gpu_memory_utilization not stated (0.9, the default, assumed)"),
    "V15": Case(engine="vllm-v0.10", model_id="openai/gpt-oss-120b", gpu_id="nvidia-a100-sxm-80gb",
                request=dict(gpu_memory_utilization=0.8, max_num_batched_tokens=2048,
                             distributed_executor_backend="ray", num_nodes=4), geometry="gpt_oss_120b"),
    "V19": Case(engine="vllm-v1-2025", cold_start="GPU not stated (\"22GB-class\", cpu_offload_gb=13)",
                geometry="mla27"),
    "V20": Case(engine="vllm-v0.11", model_id="meta-llama/Meta-Llama-3.1-8B", gpu_memory_gib=79.18,
                gpu_id="nvidia-h100-sxm-80gb", request=dict(gpu_memory_utilization=0.9)),
    "V21": Case(engine="vllm-v0.11", model_id="openai/gpt-oss-20b", gpu_memory_gib=79.18,
                gpu_id="nvidia-h100-sxm-80gb", request=dict(gpu_memory_utilization=0.9), geometry="gpt_oss_20b"),
    "S01": Case(engine="sglang-v0.4", model_id="Qwen/Qwen3-235B-A22B-FP8", gpu_id="nvidia-h100-sxm-80gb",
                request=dict(gpu_memory_utilization=0.93, block_size=1), geometry="heads64"),
    "L01": Case(engine="llama.cpp", model_id="deepseek-ai/DeepSeek-R1", request=dict(kv_cache_dtype="fp16"),
                gpu_id="nvidia-h100-sxm-80gb", geometry="mla61"),
    "L04": Case(engine="llama.cpp", request=dict(kv_cache_dtype="fp16", max_num_seqs=4, kv_unified=False),
                geometry="gemma3_270m", cold_start="llama.cpp: the KV buffer is the flags' (same as KV arithmetic)"),
    "L06": Case(engine="llama.cpp", model_id="Qwen/Qwen3-4B", request=dict(kv_cache_dtype="q8_0"),
                gpu_id="nvidia-rtx-4090", geometry="qwen3_4b"),
    "T02": Case(engine="trtllm-engine", geometry="heads14",
                cold_start="trtllm-build engine: its activation buffers follow build flags the row does not state"),
    # --- 2025-26 startup logs (rows [N..]; their notes give the flags, listed here as the request) ---
    "N01": Case(engine="vllm-v0.11", model_id="moonshotai/Kimi-K2-Thinking", gpu_id="nvidia-h200-sxm",
                request=dict(gpu_memory_utilization=0.9, gpu_name="H200 SXM 141GB"), geometry="catalog"),
    "N03": Case(engine="vllm", model_id="MiniMaxAI/MiniMax-M2.7", gpu_id="nvidia-dgx-spark", geometry="catalog",
                request=dict(weight_dtype="int4", gpu_memory_utilization=0.8, num_nodes=2,
                             distributed_executor_backend="ray", gpu_name="DGX Spark (GB10)"),
                outside_mean="unified memory (GB10): vLLM charges the drop of MemAvailable (host-side growth "
                             "included), and its CUDA-graph estimate there (about 5.0 GiB, util 0.80 'effectively "
                             "0.758') far exceeds the graphs counted; neither is modelled"),
    "N09": Case(engine="vllm-v0.28", model_id="nvidia/Qwen3.6-35B-A3B-NVFP4", gpu_id="nvidia-rtx-5090",
                geometry="catalog",
                request=dict(kv_cache_dtype="fp8", max_num_seqs=1, max_num_batched_tokens=8192,
                             gpu_memory_utilization=0.9, enable_prefix_caching=True),
                image_limit=2),
    "N10": Case(engine="vllm-v0.10", model_id="Qwen/Qwen3-Coder-480B-A35B-Instruct", gpu_id="nvidia-h20-141gb",
                request=dict(weight_dtype="fp8_block128", gpu_memory_utilization=0.9, use_deep_gemm=True),
                geometry="catalog", scale=dict(data_parallel_size=8, enable_expert_parallel=True),
                inferred="VLLM_USE_DEEP_GEMM=1, from the recipe this log's PR edits (vllm-project/recipes "
                         "Qwen/Qwen3-Coder-480B-A35B.md: its FP8 command sets it since PR #7 of 2025-07-29, and "
                         "says how to install DeepGEMM since PR #9); the PR's quoted command shows no environment. "
                         "Without it (Triton experts): 50.72 GiB, 4.23 %"),
    "N11": Case(engine="vllm-v0.28", model_id="deepseek-ai/DeepSeek-V4-Flash", gpu_id="nvidia-gh200-96gb",
                geometry="catalog",
                request=dict(kv_cache_dtype="fp8", gpu_memory_utilization=0.95, usage_context="llm",
                             enable_prefix_caching=True),
                outside_mean="v0.22.0's own code widens this miss: its DeepSeek-V4 MXFP4 selector has no Triton path on"
                             " SM 9.0 (FlashInfer TRT-LLM and DeepGEMM FP4 need SM 10.x), so the experts load as Marlin"
                             " at the checkpoint's bytes, 4.02 GiB under the Triton layout priced here "
                             "(fused_moe/oracle/mxfp4.py select_deepseek_v4_mxfp4_moe_backend); it runs the model on "
                             "the V1 runner (no V2 state or first-compile charge, -0.95 GiB; CUDA graphs charged, "
                             "+0.57); the profile forward peaks in a compressed-sparse layer's attention at 5.01 GiB, "
                             "not the 1.78 priced (Marlin MoE workspace 2 x 16,384 x 6 x 4,096 x 2 B with or without "
                             "--enable-expert-parallel, hyper-connection residual 16,384 x 4 x 4,096 x 2 B, output and "
                             "query at 64 padded heads 1 GiB each, the indexer's query and 512 MiB logits reservation: "
                             "models/deepseek_v4/attention.py, layers/sparse_attn_indexer.py); the MTP hidden and top-k"
                             " buffers (+0.53) and two fp32 rotary tables (0.50; 1.00 priced) sit in the weights. "
                             "Together they predict about 10.6 GiB available: about 5.1 GiB of non-KV memory per rank "
                             "is not in the code read (the CUDA-graph estimate and GH200's total are measured at run "
                             "time; the commenter's version is not stated)"),
    "N12": Case(engine="vllm-v0.28", model_id="Qwen/Qwen3-14B", gpu_id="nvidia-l40s", geometry="catalog",
                request=dict(gpu_memory_utilization=0.9)),
    "N13": Case(engine="vllm-v0.28", model_id="Qwen/Qwen3-14B", gpu_id="nvidia-l40s", geometry="catalog",
                request=dict(weight_dtype="int4", gpu_memory_utilization=0.9)),
    "N14": Case(engine="vllm-v0.28", model_id="Qwen/Qwen3-14B", gpu_id="nvidia-l40s", geometry="catalog",
                request=dict(weight_dtype="int4", gpu_memory_utilization=0.95, max_num_seqs=8,
                             max_num_batched_tokens=8192)),
    "N22": Case(engine="sglang-v0.4", model_id="Qwen/Qwen3-0.6B", gpu_id="nvidia-rtx-5080", geometry="catalog",
                request=dict(block_size=1)),
}
"""Every case of the table: version-matched profile, stated knobs, catalog model and GPU."""


# --- the case table -------------------------------------------------------------------


def load_rows() -> dict[str, dict]:
    """The CSV rows by their ``[Vnn]`` tag."""
    with CASES_CSV.open(newline="") as f:
        return {re.search(r"\[([A-Z]\d+)\]", row["notes"]).group(1): row for row in csv.DictReader(f)}


def _geometry_model(row: dict, kind: str) -> ModelSpec:
    """The KV-only model of a row (its notes' ``L=.. kv=.. hd=..``, or the named geometry)."""
    if kind.startswith("gpt_oss"):
        pairs = 18 if kind == "gpt_oss_120b" else 12
        sliding = SlidingWindowAttention(num_key_value_heads=8, head_dim=64, sliding_window=128)
        full = FullAttention(num_key_value_heads=8, head_dim=64)
        return ModelSpec(model_id=row["model_id"], model_type="gpt_oss", layers=(sliding, full) * pairs, params=(),
                         hidden_size=2880, num_attention_heads=64, num_key_value_heads=8, head_dim=64,
                         vocab_size=201088, max_position_embeddings=131072, torch_dtype="bfloat16")
    if kind.startswith("mla"):
        mla = MLAAttention(kv_lora_rank=512, qk_rope_head_dim=64, num_attention_heads=16, qk_nope_head_dim=128,
                           v_head_dim=128)
        return ModelSpec(model_id=row["model_id"], model_type="deepseek_v2", layers=(mla,) * int(kind[3:]),
                         params=(), hidden_size=2048, num_attention_heads=16, num_key_value_heads=16, head_dim=192,
                         vocab_size=102400, max_position_embeddings=163840, torch_dtype="bfloat16")
    if kind == "gemma3_270m":
        sliding = SlidingWindowAttention(num_key_value_heads=1, head_dim=256, sliding_window=512)
        full = FullAttention(num_key_value_heads=1, head_dim=256)
        return ModelSpec(model_id=row["model_id"], model_type="gemma3_text", layers=((sliding,) * 5 + (full,)) * 3,
                         params=(), hidden_size=640, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                         vocab_size=262144, max_position_embeddings=32768, torch_dtype="bfloat16")
    if kind == "qwen3_4b":
        return ModelSpec(model_id=row["model_id"], model_type="qwen3",
                         layers=(FullAttention(num_key_value_heads=8, head_dim=128),) * 36, params=(),
                         hidden_size=2560, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                         vocab_size=151936, max_position_embeddings=40960, torch_dtype="bfloat16")
    notes = row["notes"]
    layers = int(re.search(r"L=(\d+)", notes).group(1))
    kv = int(re.search(r"kv=(\d+)", notes).group(1))
    hd = int(re.search(r"hd=(\d+)", notes).group(1))
    heads = int(kind[5:]) if kind.startswith("heads") else kv * 4
    dtype = "float16" if "fp16" in notes.split("geometry:")[1] else "bfloat16"
    return ModelSpec(model_id=row["model_id"], model_type="geometry",
                     layers=(FullAttention(num_key_value_heads=kv, head_dim=hd),) * layers, params=(),
                     hidden_size=4096, num_attention_heads=heads, num_key_value_heads=kv, head_dim=hd,
                     vocab_size=32000, max_position_embeddings=None, torch_dtype=dtype)


def _leading_int(text: str) -> int | None:
    """The number a cell starts with (``"262144 (model default, inferred)"`` -> 262144), or None."""
    found = re.match(r"\s*(\d+)", text)
    return int(found.group(1)) if found else None


def _catalog_model(case: Case) -> ModelSpec:
    """The catalog model of a ``geometry="catalog"`` row (its KV layers are the catalog's)."""
    import model_catalog  # the catalog is this script's input

    model = model_catalog.model_spec(case.model_id)
    if case.max_position_embeddings:
        model = replace(model, max_position_embeddings=case.max_position_embeddings)
    return model


def _gpu(case: Case):
    """The row's catalog GPU, or None."""
    if not case.gpu_id:
        return None
    import model_catalog

    return model_catalog.get_gpu(case.gpu_id)


def _request(row: dict, case: Case, **extra) -> EngineRequest:
    """The row's request; knobs an older tree's :class:`EngineRequest` lacks are dropped (``--before`` runs)."""
    kw: dict = dict(engine=case.engine, tensor_parallel_size=int(row["tp"] or 1),
                    max_model_len=_leading_int(row["max_model_len"]) or 131072)
    if row["block_size"] and case.engine.startswith("vllm"):
        kw["block_size"] = int(row["block_size"])
    kw.update(case.request)
    kw.update(extra)
    known = {f.name for f in fields(EngineRequest)}
    return EngineRequest(**{k: v for k, v in kw.items() if k in known})


def _printed_bytes(row: dict) -> int:
    return int(float(row["available_kv_gib"]) * GiB)


# --- pass 1: KV arithmetic --------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Arithmetic:
    """The printed figures against the plan's, given the printed available memory."""

    printed_tokens: int | None
    predicted_tokens: int | None
    error: float | None
    in_rounding: bool | None
    note: str = ""
    shown_error: float | None = None
    """The error of a launch the pass cannot express (``error`` is then None: not counted)."""


def _refusal(row: dict, model: ModelSpec, request: EngineRequest, memory: int) -> Arithmetic | None:
    """Pass 1 of a refused launch: the printed "X GiB KV cache is needed" and estimated maximum length
    against the plan's, with the printed available memory pinned; None when the notes print neither."""
    needed = re.search(r"KV needed GiB (\d+\.\d+)", row["notes"])
    if not needed:
        return None
    estimated = re.search(r"estimated max model len (\d+)", row["notes"])
    printed = _printed_bytes(row)
    plan = plan_engine(model, memory, replace(request, available_kv_memory_bytes=printed))
    lo = plan_engine(model, memory, replace(request, available_kv_memory_bytes=printed - PRINT_HALF_STEP))
    hi = plan_engine(model, memory, replace(request, available_kv_memory_bytes=printed + PRINT_HALF_STEP - 1))
    predicted_needed = plan.kv_cache_bytes_needed_per_request
    exact = round(predicted_needed / GiB, 2) == float(needed.group(1))  # the notes may drop a trailing 0
    note = f"refusal: needs {predicted_needed / GiB:.2f} GiB (printed {needed.group(1)})"
    if estimated:
        exact = exact and lo.engine_max_model_len <= int(estimated.group(1)) <= hi.engine_max_model_len
        note += f", estimated max len {plan.engine_max_model_len:,} (printed {int(estimated.group(1)):,})"
    return Arithmetic(printed_tokens=None, predicted_tokens=None,
                      error=abs(predicted_needed / GiB - float(needed.group(1))) / float(needed.group(1)),
                      in_rounding=exact, note=f"{note}; starts={plan.starts}")


def _not_expressible(result: Arithmetic, why: str) -> Arithmetic:
    """``result`` marked as a launch the pass cannot express (``why``): shown, not counted."""
    if not why:
        return result
    note = f"not expressible: {why}" + (f"; {result.note}" if result.note else "")
    return replace(result, in_rounding=None, error=None, shown_error=result.error, note=note)


def kv_arithmetic(tag: str, row: dict, case: Case) -> Arithmetic:
    """Pass 1 for one case (module docstring)."""
    if case.geometry == "catalog":  # the [N..] rows: the catalog model, on the row's GPU (scheduler defaults)
        model, gpu = _catalog_model(case), _gpu(case)
        request = _request(row, case, gpu_name=gpu.name)
        refused = _refusal(row, model, request, gpu.framework_memory_bytes)
        if refused is not None:
            return _not_expressible(refused, case.arithmetic)
        if not row["printed_kv_tokens"]:
            return Arithmetic(printed_tokens=None, predicted_tokens=None, error=None, in_rounding=None,
                              note="no token print")
        return _not_expressible(_reproduce(row, case, model, request, gpu.framework_memory_bytes), case.arithmetic)
    model = _geometry_model(row, case.geometry)
    request = _request(row, case)
    if case.engine == "llama.cpp":
        plan = plan_engine(model, 24 * GiB, request)
        printed = float(re.search(r"printed KV size (\d+\.\d+) MiB", row["notes"]).group(1))
        exact = plan.available_kv_cache_bytes == int(printed * MiB)
        tokens = int(row["printed_kv_tokens"])
        return Arithmetic(printed_tokens=tokens, predicted_tokens=plan.engine_kv_cache_tokens,
                          error=abs(plan.available_kv_cache_bytes - printed * MiB) / (printed * MiB),
                          in_rounding=exact and plan.engine_kv_cache_tokens == tokens,
                          note="KV buffer from the flags, compared in MiB")
    if not row["printed_kv_tokens"]:
        if tag == "V19":
            plan = plan_engine(model, 22 * GiB, replace(request, tensor_parallel_size=2, max_model_len=32768,
                                                        available_kv_memory_bytes=_printed_bytes(row)))
            needed = f"{plan.kv_cache_bytes_needed_per_request / GiB:.2f}"
            return Arithmetic(printed_tokens=None, predicted_tokens=None, error=None, in_rounding=None,
                              note=f"refusal: needs {needed} GiB (printed 0.95), starts={plan.starts}")
        return Arithmetic(printed_tokens=None, predicted_tokens=None, error=None, in_rounding=None,
                          note="breakdown row: no token print")
    return _reproduce(row, case, model, request, 80 * GiB)


def _reproduce(row: dict, case: Case, model: ModelSpec, request: EngineRequest, memory: int) -> Arithmetic:
    """The printed tokens (and concurrency) against the plan's, searching the print-rounding interval."""
    printed_tokens = int(row["printed_kv_tokens"])
    concurrency = float(row["printed_max_concurrency"]) if row["printed_max_concurrency"] else None
    nominal = plan_engine(model, memory, replace(request, available_kv_memory_bytes=_printed_bytes(row)))
    half = PRINT_HALF_STEP * (2 if case.engine.startswith("sglang") else 1)
    lo, hi = _printed_bytes(row) - half, _printed_bytes(row) + half
    per_block = nominal.limiting_rank.bytes_per_block
    found = False
    for blocks in range(lo // per_block, hi // per_block + 2):
        available = max(lo, blocks * per_block)
        if available >= hi:
            break
        plan = plan_engine(model, memory, replace(request, available_kv_memory_bytes=available))
        if plan.engine_kv_cache_tokens == printed_tokens and (
                concurrency is None or plan.max_concurrency == concurrency):
            found = True
            break
    return Arithmetic(printed_tokens=printed_tokens, predicted_tokens=nominal.engine_kv_cache_tokens,
                      error=abs(nominal.engine_kv_cache_tokens - printed_tokens) / printed_tokens, in_rounding=found)


# --- pass 2: cold start -----------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ColdStart:
    """The available KV memory predicted from scratch against the printed one."""

    predicted_bytes: int | None
    printed_bytes: int
    error: float | None
    weights_bytes: int | None = None
    printed_weights_gib: float | None = None
    counted: bool = False
    note: str = ""
    refused: bool = False
    """The engine refused this launch (its notes print "X GiB KV cache is needed")."""
    starts: bool | None = None
    """Whether the cold-start plan says the engine starts (None: no cold start)."""


def _images(case: Case) -> dict:
    """``serving=`` for a row that states an image limit (:attr:`Case.image_limit`); for a vision model without
    one, vLLM's default encoder profile, as ``plan`` charges it (:func:`planner.serving.features.with_engine_defaults`);
    else nothing."""
    import model_catalog
    from planner.serving import ServingFeatures
    from planner.serving.features import with_engine_defaults
    from planner.serving.multimodal import MultimodalConfig, vision_from_config

    try:
        config = model_catalog.get_model_entry(case.model_id).config if case.model_id else {}
    except (KeyError, ValueError):
        config = {}  # a stand-in model outside the catalog
    if case.image_limit is None:
        default = with_engine_defaults(None, engine=case.engine, raw_config=config)
        return {} if default is None else {"serving": default}
    vision = vision_from_config(config)
    return {"serving": ServingFeatures(multimodal=MultimodalConfig(vision=vision, limit_mm_per_prompt=case.image_limit))}


def _cold_plan(model: ModelSpec, memory: int, request: EngineRequest, case: Case):
    """The cold-start engine plan: one rank of the launch's data / expert parallel layout when the row states
    one (:attr:`Case.scale`, the view ``plan -dp ...`` prints), else the plain engine plan."""
    if not case.scale:
        return plan_engine(model, memory, request)
    from planner.scale import ScaleRequest, plan_scale

    return plan_scale(model, memory, request, ScaleRequest(**case.scale)).engine_view()


def cold_start(tag: str, row: dict, case: Case) -> ColdStart:
    """Pass 2 for one case (module docstring)."""
    printed = _printed_bytes(row)
    refused = "KV needed GiB" in row["notes"]
    if case.cold_start:
        return ColdStart(predicted_bytes=None, printed_bytes=printed, error=None, note=case.cold_start, refused=refused)
    import model_catalog  # the catalog is this script's input

    try:
        model = model_catalog.model_spec(case.model_id)
    except ValueError as exc:
        return ColdStart(predicted_bytes=None, printed_bytes=printed, error=None,
                         note=f"{case.model_id} not in the catalog ({str(exc)[:60]})")
    if case.max_position_embeddings:
        model = replace(model, max_position_embeddings=case.max_position_embeddings)
    gpu = model_catalog.get_gpu(case.gpu_id) if case.gpu_id else None
    memory = int(case.gpu_memory_gib * GiB) if case.gpu_memory_gib else gpu.framework_memory_bytes
    reported = gpu.memory_reported_mib * MiB if gpu and gpu.memory_reported_mib else None
    request = _request(row, case, gpu_name=gpu.name if gpu else "", gpu_memory_reported_bytes=reported,
                       **_images(case))
    plan = _cold_plan(model, memory, request, case)
    weights = re.search(r"weights (?:GiB )?(\d+\.\d+)", row["notes"])
    printed_weights = float(weights.group(1)) if weights else None
    if case.engine == "llama.cpp":
        printed_mib = float(re.search(r"printed KV size (\d+\.\d+) MiB", row["notes"]).group(1))
        printed = int(printed_mib * MiB)
    note = f"{plan.engine_label.split(' (')[0]}, {model.model_id}"
    if case.scale:  # the flags plan_scale read
        ep = " --enable-expert-parallel" if case.scale.get("enable_expert_parallel") else ""
        note += f", one rank of -dp {case.scale.get('data_parallel_size', 1)}{ep}"
    if case.inferred:
        note += f"; inferred: {case.inferred}"
    return ColdStart(predicted_bytes=plan.available_kv_cache_bytes, printed_bytes=printed,
                     error=abs(plan.available_kv_cache_bytes - printed) / max(printed, COLD_START_FLOOR),
                     weights_bytes=plan.limiting_rank.weights_bytes, printed_weights_gib=printed_weights,
                     counted=not case.outside_mean, refused=refused, starts=plan.starts,
                     note=f"{note}; not in the mean: {case.outside_mean}" if case.outside_mean else note)


# --- report -----------------------------------------------------------------------------


def run(tags: list[str]) -> list[dict]:
    """Both passes for each tag, as plain rows."""
    rows = load_rows()
    out = []
    for tag in tags:
        row, case = rows[tag], CASES[tag]
        a, c = kv_arithmetic(tag, row, case), cold_start(tag, row, case)
        out.append({"tag": tag, "engine": case.engine, "printed_kv_gib": float(row["available_kv_gib"]),
                    "arithmetic": a.__dict__, "cold_start": c.__dict__})
    return out


def _pct(x: float | None) -> str:
    return "" if x is None else f"{100 * x:.2f} %"


def groups(results: list[dict]) -> dict[str, dict]:
    """Per engine profile (engine family and version group): the cold-start errors counted in the mean
    (``errors``), the KV-arithmetic cases in print rounding (``in_rounding`` of ``arithmetic``), and the
    refused launches the cold start predicts to refuse (``refusals_predicted`` of ``refusals``)."""
    out: dict[str, dict] = {}
    for r in results:
        g = out.setdefault(r["engine"], {"cases": [], "errors": [], "in_rounding": 0, "arithmetic": 0,
                                         "refusals": 0, "refusals_predicted": 0})
        a, c = r["arithmetic"], r["cold_start"]
        g["cases"].append(r["tag"])
        if c["counted"] and c["error"] is not None:
            g["errors"].append(c["error"])
        if a["in_rounding"] is not None:
            g["arithmetic"] += 1
            g["in_rounding"] += bool(a["in_rounding"])
        if c["refused"] and c["starts"] is not None:  # a refusal whose launch the cold start can express
            g["refusals"] += 1
            g["refusals_predicted"] += c["starts"] is False
    return out


def group_table(results: list[dict]) -> str:
    """One line per engine and version group (:func:`groups`)."""
    lines = ["| group | cases | cold start mean / max (counted) | KV arithmetic in rounding | refusals predicted |",
             "|---|---|---|---|---|"]
    for name, g in groups(results).items():
        errors = g["errors"]
        cold = f"{_pct(statistics.mean(errors))} / {_pct(max(errors))} ({len(errors)})" if errors else "-"
        refusals = f"{g['refusals_predicted']}/{g['refusals']}" if g["refusals"] else "-"
        lines.append(f"| {name} | {' '.join(g['cases'])} | {cold} | {g['in_rounding']}/{g['arithmetic']} | "
                     f"{refusals} |")
    return "\n".join(lines)


def table(results: list[dict]) -> str:
    """The results as a markdown table, with the means and maxima."""
    lines = ["| case | profile | printed KV | tokens printed / predicted | KV arithmetic error | in rounding "
             "| cold start predicted | cold start error | weights predicted / printed | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        a, c = r["arithmetic"], r["cold_start"]
        tokens = "" if a["printed_tokens"] is None else f"{a['printed_tokens']:,} / {a['predicted_tokens']:,}"
        arith_error = _pct(a["error"]) if a["shown_error"] is None else f"({_pct(a['shown_error'])})"
        rounding = "" if a["in_rounding"] is None else ("yes" if a["in_rounding"] else "NO")
        cold = "" if c["predicted_bytes"] is None else f"{c['predicted_bytes'] / GiB:.2f} GiB"
        cold_error = _pct(c["error"]) if c["counted"] or c["error"] is None else f"({_pct(c['error'])})"
        weights = ""
        if c["weights_bytes"] is not None and c["printed_weights_gib"] is not None:
            weights = f"{c['weights_bytes'] / GiB:.4f} / {c['printed_weights_gib']}"
        refusal = ""
        if c["refused"] and c["starts"] is not None:
            refusal = "engine refused; cold start predicts " + ("a refusal" if c["starts"] is False else "START")
        note = "; ".join(x for x in (a["note"], c["note"], refusal) if x)
        lines.append(f"| {r['tag']} | {r['engine']} | {r['printed_kv_gib']} GiB | {tokens} | {arith_error} | "
                     f"{rounding} | {cold} | {cold_error} | {weights} | {note} |")
    arith = [r["arithmetic"]["error"] for r in results if r["arithmetic"]["error"] is not None]
    cold = [r["cold_start"]["error"] for r in results if r["cold_start"]["counted"]]
    inside = [r["arithmetic"]["in_rounding"] for r in results if r["arithmetic"]["in_rounding"] is not None]
    served = [r["cold_start"]["error"] for r in results
              if r["cold_start"]["counted"] and r["engine"] != "llama.cpp"]
    if arith:
        lines.append(f"| **mean** | | | | {_pct(statistics.mean(arith))} | {sum(inside)}/{len(inside)} | | "
                     f"{_pct(statistics.mean(cold)) if cold else ''} | | |")
        lines.append(f"| **max** | | | | {_pct(max(arith))} | | | {_pct(max(cold)) if cold else ''} | | |")
        if served:
            lines.append(f"| **mean / max without llama.cpp** | | | | | | | {_pct(statistics.mean(served))} / "
                         f"{_pct(max(served))} | | cold starts that size a pool from a memory fraction |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="*", default=None, help="case tags (default: every case)")
    parser.add_argument("--format", choices=("table", "json"), default="table")
    args = parser.parse_args(argv)
    tags = args.cases or list(CASES)
    unknown = sorted(set(tags) - set(CASES))
    if unknown:
        parser.error(f"unknown case(s) {', '.join(unknown)}; choose from {', '.join(CASES)}")
    results = run(tags)
    print(json.dumps(results, indent=1) if args.format == "json" else
          group_table(results) + "\n\n" + table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
