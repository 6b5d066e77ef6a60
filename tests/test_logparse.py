"""Engine startup logs: figures recognised, estimate vs actual, re-planning with measured overheads.

Log excerpts are the lines quoted in shared/reference/engine_cases.csv and the
public logs behind it (dennislee22/vLLM-benchmarking, vllm-project/vllm#10517,
vllm-project/vllm#21348, NVIDIA/TensorRT-LLM#1188, llama.cpp PR #11446).
"""

from __future__ import annotations

import pytest

from planner.engines import EngineRequest, plan_engine
from planner.engines.logparse import parse_engine_log
from planner.engines.reconcile import measured_available_bytes, reconcile, request_from_log, residual_overhead_bytes
from planner.model import ModelSpec
from planner.model.layers import FullAttention, SlidingWindowAttention
from planner.units import GiB, MiB
from tests.factories import dense_model

VLLM_V1 = """\
(APIServer pid=1671) INFO 09-04 01:02:21 [api_server.py:1805] vLLM API server version 0.10.1.1
(APIServer pid=1671) INFO 09-04 01:02:37 [__init__.py:1750] Using max model len 16384
(APIServer pid=1671) INFO 09-04 01:02:38 [scheduler.py:222] Chunked prefill is enabled with max_num_batched_tokens=2048.
(EngineCore_0 pid=1812) INFO 09-04 01:03:03 [gpu_model_runner.py:2007] Model loading took 14.2488 GiB and 4.42 seconds
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [gpu_worker.py:276] Available KV cache memory: 5.01 GiB
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:849] GPU KV cache size: 93,872 tokens
(EngineCore_0 pid=1812) INFO 09-04 01:04:29 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens per request: 5.73x
(EngineCore_0 pid=1812) INFO 09-04 01:04:32 [gpu_model_runner.py:2708] Graph capturing finished in 3 secs, took 0.50 GiB
"""

VLLM_V0 = """\
INFO 12-02 10:00:01 model_runner.py:1077] Loading model weights took 14.9888 GB
INFO 12-02 10:00:05 worker.py:232] Memory profiling results: total_gpu_memory=23.58GiB initial_memory_usage=15.25GiB \
peak_torch_memory=17.06GiB memory_usage_post_profile=15.61GiB non_torch_memory=0.35GiB kv_cache_size=3.81GiB \
gpu_memory_utilization=0.90
INFO 12-02 10:00:05 gpu_executor.py:113] # GPU blocks: 1952, # CPU blocks: 2048
INFO 12-02 10:00:05 gpu_executor.py:117] Maximum concurrency for 20000 tokens per request: 1.56x
"""

SGLANG = """\
[2025-07-21 10:00:00 TP0] Load weight end. type=Qwen3MoeForCausalLM, dtype=torch.bfloat16, avail mem=19.40 GB, mem usage=55.52 GB.
[2025-07-21 10:00:01 TP0] KV Cache is allocated. #tokens: 367404, K size: 8.23 GB, V size: 8.23 GB
[2025-07-21 10:00:02 TP0] max_total_num_tokens=367404, chunked_prefill_size=8192, max_prefill_tokens=16384, \
max_running_requests=4096, context_len=40960, available_gpu_mem=2.81 GB
"""

LLAMACPP = """\
llama_context: n_seq_max     = 4
llama_context: n_ctx         = 1024
llama_context: n_ctx_seq     = 256
llama_kv_cache:      CUDA0 KV buffer size =     3.00 MiB
llama_kv_cache: size =    3.00 MiB (   256 cells,   3 layers,  4/4 seqs), K (f16):    1.50 MiB, V (f16):    1.50 MiB
llama_kv_cache_iswa: creating     SWA KV cache, size = 256 cells
llama_kv_cache:      CUDA0 KV buffer size =    15.00 MiB
llama_kv_cache: size =   15.00 MiB (   256 cells,  15 layers,  4/4 seqs), K (f16):    7.50 MiB, V (f16):    7.50 MiB
"""

TRTLLM = "[TensorRT-LLM][INFO] [MemUsageChange] Allocated 4.53 GiB for max tokens in paged KV cache (395776).\n"
TGI = "INFO text_generation_router: KV-cache blocks: 9000, size: 1\nSetting max batch total tokens to 9000\n"


def qwen2_7b() -> ModelSpec:
    return dense_model(num_layers=28, num_key_value_heads=4, num_attention_heads=28, head_dim=128,
                       hidden_size=3584, model_id="Qwen/Qwen2-7B-Instruct", max_position_embeddings=32768)


@pytest.mark.parametrize("text,engine,name,value", [
    (VLLM_V1, "vllm", "available_kv_gib", 5.01),
    (VLLM_V1, "vllm", "kv_cache_tokens", 93_872),
    (VLLM_V1, "vllm", "max_concurrency", 5.73),
    (VLLM_V1, "vllm", "concurrency_len", 16_384),
    (VLLM_V1, "vllm", "weights_gib", 14.2488),
    (VLLM_V1, "vllm", "cudagraph_gib", 0.5),
    (VLLM_V1, "vllm", "max_num_batched_tokens", 2048),
    (VLLM_V0, "vllm", "num_gpu_blocks", 1952),
    # V0 from v0.7 logs the platform's dispatch key (vllm/executor/executor_base.py initialize_cache,
    # "# %s blocks: %d, # CPU blocks: %d" with current_platform.dispatch_key); both spellings are in public logs
    ("INFO 06-26 16:55:19 [executor_base.py:112] # cuda blocks: 41345, # CPU blocks: 21845", "vllm",
     "num_gpu_blocks", 41_345),
    ("INFO 05-30 16:23:28 executor_base.py:110] # CUDA blocks: 5519, # CPU blocks: 9362", "vllm",
     "num_gpu_blocks", 5_519),
    (VLLM_V0, "vllm", "peak_torch_gib", 17.06),
    (VLLM_V0, "vllm", "non_torch_gib", 0.35),
    (VLLM_V0, "vllm", "available_kv_gib", 3.81),
    (VLLM_V0, "vllm", "weights_gib", 14.9888),
    (SGLANG, "sglang", "sglang_tokens", 367_404),
    (SGLANG, "sglang", "sglang_k_gib", 8.23),
    (SGLANG, "sglang", "sglang_context_len", 40_960),
    (SGLANG, "sglang", "sglang_avail_gib", 19.40),
    (LLAMACPP, "llama.cpp", "llamacpp_n_ctx", 1024),
    (LLAMACPP, "llama.cpp", "llamacpp_cells", 256),
    (TRTLLM, "trtllm", "trtllm_tokens", 395_776),
    (TRTLLM, "trtllm", "trtllm_alloc_gib", 4.53),
    (TGI, "tgi", "tgi_max_total_tokens", 9000),
])
def test_figures_are_recognised(text, engine, name, value):
    figures = parse_engine_log(text)
    assert figures.engine == engine
    assert figures.value(name) == pytest.approx(value)


def test_vllm_log_states_its_version_and_is_complete():
    figures = parse_engine_log(VLLM_V1)
    assert figures.version == "0.10.1.1"
    assert figures.complete
    assert "Recognised vllm log" in figures.message and "Not found" not in figures.message


def test_partial_log_lists_what_is_missing():
    figures = parse_engine_log("INFO [gpu_worker.py:276] Available KV cache memory: 5.01 GiB")
    assert figures.engine == "vllm" and not figures.complete
    assert "Available KV cache memory" in figures.message
    assert "Not found: Model loading (weights)" in figures.message


@pytest.mark.parametrize("text", ["", "hello world\nnothing to see", "\x1b[32mINFO\x1b[0m Started server"])
def test_unknown_log_gets_a_clear_message(text):
    figures = parse_engine_log(text)
    assert figures.engine is None and figures.figures == ()
    assert figures.message.startswith("No engine figures recognised")


def test_per_worker_lines_use_the_minimum():
    text = ("(RayWorker rank=0) Available KV cache memory: 45.32 GiB\n"
            "(RayWorker rank=1) Available KV cache memory: 45.30 GiB\n")
    assert measured_available_bytes(parse_engine_log(text)) == int(round(45.30 * GiB))


def test_sglang_and_llamacpp_measured_kv():
    assert measured_available_bytes(parse_engine_log(SGLANG)) == int(round(16.46 * GiB))
    assert measured_available_bytes(parse_engine_log(LLAMACPP)) == 18 * MiB


def test_reconcile_lines_up_estimate_and_actual_for_vllm():
    model = qwen2_7b()
    request = EngineRequest(engine="vllm-v0.10", max_model_len=16384, gpu_memory_utilization=0.25,
                            gpu_name="A100 SXM4 80GB")
    figures = parse_engine_log(VLLM_V1)
    pinned = plan_engine(model, int(79.25 * GiB), request_from_log(request, figures))
    rows = {r.quantity: r for r in reconcile(pinned, figures)}
    assert rows["Available KV cache memory"].difference == pytest.approx(0, abs=0.005)
    # 5.01 GiB printed -> 93,808 tokens at the printed value; the engine's exact figure gave 93,872 (one rounding)
    assert abs(rows["GPU KV cache size"].difference) <= 0.005 * GiB / 57_344 + 16
    assert rows["Maximum concurrency"].difference == pytest.approx(0, abs=0.011)
    assert rows["Model loading (weights)"].actual == 14.2488
    assert "Model loading took 14.2488 GiB" in rows["Model loading (weights)"].line


def test_replan_with_measured_overheads_carries_them_to_new_knobs():
    model = qwen2_7b()
    request = EngineRequest(engine="vllm-v0.10", max_model_len=16384, gpu_memory_utilization=0.25,
                            gpu_name="A100 SXM4 80GB")
    estimate = plan_engine(model, int(79.25 * GiB), request)
    figures = parse_engine_log(VLLM_V1)
    assert residual_overhead_bytes(estimate, figures) == pytest.approx(0.5537 * GiB, abs=0.006 * GiB)
    measured = request_from_log(request, figures, pin_available=False, plan=estimate)
    assert measured.weights_bytes == int(round(14.2488 * GiB)) and measured.available_kv_memory_bytes is None
    again = plan_engine(model, int(79.25 * GiB), measured)
    assert again.available_kv_cache_bytes == pytest.approx(5.01 * GiB, abs=0.006 * GiB)
    # the same hardware at gpu_memory_utilization 0.5: the 0.5 GiB log of that run printed 24.83 GiB
    doubled = plan_engine(model, int(79.25 * GiB), type(measured)(**{**measured.__dict__,
                                                                     "gpu_memory_utilization": 0.5}))
    assert doubled.available_kv_cache_bytes / GiB == pytest.approx(24.83, abs=0.03)


def test_v0_breakdown_gives_activation_from_peak_minus_weights():
    request = request_from_log(EngineRequest(engine="vllm-v0"), parse_engine_log(VLLM_V0), pin_available=False)
    assert request.activation_bytes == int(round(17.06 * GiB)) - int(round(14.9888 * GiB))
    assert request.non_torch_bytes == int(round(0.35 * GiB))
    assert request.max_model_len == 20000


def test_llamacpp_log_reconciles_exactly():
    sliding = SlidingWindowAttention(num_key_value_heads=1, head_dim=256, sliding_window=512)
    full = FullAttention(num_key_value_heads=1, head_dim=256)
    model = dense_model(num_layers=18, layers=((sliding,) * 5 + (full,)) * 3, num_key_value_heads=1,
                        num_attention_heads=4, head_dim=256, hidden_size=640)
    plan = plan_engine(model, 8 * GiB, EngineRequest(engine="llama.cpp", max_model_len=1024, max_num_seqs=4,
                                                     kv_unified=False))
    rows = {r.quantity: r for r in reconcile(plan, parse_engine_log(LLAMACPP))}
    assert rows["llama.cpp KV size"].difference == 0
    assert rows["llama.cpp cells (all streams)"].actual == rows["llama.cpp cells (all streams)"].estimate == 1024
    assert "llama_kv_cache: size =    3.00 MiB (   256 cells,   3 layers,  4/4 seqs), K (f16):    1.50 MiB, " \
           "V (f16):    1.50 MiB" in plan.engine_log_lines
    # the planner's own log lines parse back to the same figures
    assert parse_engine_log("\n".join(plan.engine_log_lines)).value("llamacpp_kv_mib") == 3.0


@pytest.mark.parametrize("engine,names", [
    ("vllm", ("available_kv_gib", "kv_cache_tokens", "max_concurrency", "weights_gib")),
    ("vllm-v0", ("available_kv_gib", "num_gpu_blocks", "max_concurrency")),
    ("sglang", ("sglang_tokens", "sglang_k_gib", "sglang_v_gib", "sglang_max_total_tokens")),
    ("trtllm", ("trtllm_alloc_gib", "trtllm_tokens", "trtllm_blocks")),
    ("tgi", ("tgi_blocks", "tgi_max_total_tokens")),
    ("llama.cpp", ("llamacpp_kv_mib", "llamacpp_cells", "llamacpp_kv_buffer_mib")),
])
def test_the_planners_own_log_lines_parse_back(engine, names):
    plan = plan_engine(dense_model(), 24 * GiB, EngineRequest(engine=engine, max_model_len=2048))
    figures = parse_engine_log("\n".join(plan.engine_log_lines))
    assert figures.engine == plan.family
    for name in names:
        assert figures.get(name) is not None, name
    rows = reconcile(plan, figures)
    assert rows and all(abs(r.difference) <= 0.006 * max(1.0, abs(r.actual)) for r in rows), rows


@pytest.mark.parametrize("version,profile", [
    ("0.6.4", "vllm-v0"), ("0.7.1", "vllm-v1-jan2025"), ("0.8.3.dev", "vllm-v1-2025"), ("0.10.1.1", "vllm-v0.10"),
    ("0.11.0", "vllm-v0.11"), ("0.19.2", "vllm-v0.11"), ("0.21.0", "vllm"), ("1.2.0", "vllm"),
])
def test_log_version_picks_the_profile_that_prints_the_same_way(version, profile):
    from planner.engines.reconcile import suggest_engine
    text = f"vLLM API server version {version}\nAvailable KV cache memory: 1.00 GiB\n"
    assert suggest_engine(parse_engine_log(text)) == profile


def test_knobs_from_log_take_the_logs_settings():
    from planner.engines.reconcile import knobs_from_log
    request, adopted = knobs_from_log(EngineRequest(max_model_len=8192), parse_engine_log(VLLM_V1))
    assert (request.max_model_len, request.max_num_batched_tokens) == (16384, 2048)
    assert adopted == ("max_model_len", "max_num_batched_tokens")


# --- per-worker figures and llama.cpp's recurrent memory -----------------------------------

VLLM_TP2 = """\
(VllmWorker TP1 pid=3975) INFO 09-03 02:12:04 [gpu_model_runner.py:2007] Model loading took 7.1217 GiB and 2.85 seconds
(VllmWorker TP0 pid=3974) INFO 09-03 02:12:04 [gpu_model_runner.py:2007] Model loading took 7.1217 GiB and 2.89 seconds
(VllmWorker TP1 pid=3975) INFO 09-03 02:12:25 [gpu_worker.py:276] Available KV cache memory: 31.85 GiB
(VllmWorker TP0 pid=3974) INFO 09-03 02:12:25 [gpu_worker.py:276] Available KV cache memory: 31.83 GiB
(EngineCore_0 pid=3902) INFO 09-03 02:12:26 [kv_cache_utils.py:849] GPU KV cache size: 1,192,160 tokens
(EngineCore_0 pid=3902) INFO 09-03 02:12:26 [kv_cache_utils.py:853] Maximum concurrency for 16,384 tokens per request: 72.76x
"""
"""vllm-7B-2gpuA10080GB-0.5GRAM-same-node.log (dennislee22/vLLM-benchmarking), TP1's figure raised to 31.85 so the
two workers differ."""


def test_one_available_line_per_worker_becomes_per_rank_figures():
    figures = parse_engine_log(VLLM_TP2)
    request = request_from_log(EngineRequest(engine="vllm-v0.10", tensor_parallel_size=2), figures)
    assert request.available_kv_memory_per_rank_bytes == (int(round(31.85 * GiB)), int(round(31.83 * GiB)))
    plan = plan_engine(dense_model(num_attention_heads=8), 80 * GiB, request)
    assert plan.available_kv_cache_bytes == int(round(31.83 * GiB))  # vLLM's pool is the smallest worker's


LLAMACPP_HYBRID = """\
llama_kv_cache:      CUDA0 KV buffer size =    64.00 MiB
llama_kv_cache: size =   64.00 MiB (  4096 cells,   2 layers,  2/2 seqs), K (q8_0):   32.00 MiB, V (q8_0):   32.00 MiB
llama_memory_recurrent:      CUDA0 RS buffer size =     2.50 MiB
llama_memory_recurrent: size =    2.50 MiB (     2 cells,   2 layers,  2 seqs), R (f32):    0.50 MiB, S (f32):    2.00 MiB
"""


def test_llamacpp_recurrent_memory_line_adds_to_the_kv_size():
    figures = parse_engine_log(LLAMACPP_HYBRID)
    assert figures.engine == "llama.cpp" and figures.complete
    assert figures.value("llamacpp_rs_mib") == 2.5 and figures.value("llamacpp_rs_buffer_mib") == 2.5
    assert measured_available_bytes(figures) == int(66.5 * MiB)


# --- hostile pastes: linear time, a size limit, the page's box ----------------------------------
# One pasted log runs on the shared server while ``re`` holds the GIL. Before the gaps were bounded,
# 256 kB of "Load weight end." took ~17 s (quadratic: 1 MB ~270 s), so a regression shows here as a
# hung test rather than a timing assertion on a noisy machine.

HOSTILE = ("Load weight end.", "Peak memory during memory usage profiling", "llama_kv_cache")
"""Repeated anchors of the patterns that had an unbounded gap (``.*?``) or ``\\w*`` after a word."""


def _repeat(unit: str, chars: int) -> str:
    return (unit * (chars // len(unit) + 1))[:chars]


def test_no_pattern_has_an_unbounded_gap():
    import re

    from planner.engines.logparse import _COMPILED, _VERSION
    # "." / "\w" / "\S" under * or + can swallow the pattern's own anchor: every start then rescans the line
    unbounded, classes = re.compile(r"(?<!\\)\.[*+]|\\[wS][*+]"), re.compile(r"\[(?:\\.|[^\]])*\]")
    for pattern in [entry[3].pattern for entry in _COMPILED] + [_VERSION.pattern]:
        assert not unbounded.search(classes.sub("C", pattern)), pattern  # a "." inside [...] is the character


@pytest.mark.parametrize("unit", HOSTILE)
@pytest.mark.parametrize("one_line", [True, False])
def test_a_megabyte_of_repeated_anchors_is_read_in_one_pass(unit, one_line):
    text = _repeat(unit, 1_000_000)
    if not one_line:  # lines at the length cap: the cap alone does not bound the work
        from planner.engines.logparse import MAX_LINE_CHARS
        step = MAX_LINE_CHARS - MAX_LINE_CHARS % len(unit)
        text = "\n".join(text[i:i + step] for i in range(0, len(text), step))
    figures = parse_engine_log(text)
    assert figures.engine is None and figures.message.startswith("No engine figures recognised")


@pytest.mark.parametrize("text,name,value", [
    ("Load weight end. " * 500 + "avail mem=19.40 GB, mem usage=55.52 GB.", "sglang_weights_gib", 55.52),
    ("[TRT-LLM] [I] Peak memory during memory usage profiling (torch + non-torch): 91.46 GiB, available KV cache "
     "memory when calculating max tokens: 41.11 GiB, fraction is set 0.85", "trtllm_peak_gib", 91.46),
    ("[2026-08-28 21:32:38] Load weight end. elapsed=787.55 s, type=Qwen4ExpForConditionalGeneration, "
     "quant=modelopt_fp4, quant_algo=NVFP4, avail mem=29.01 GB, mem usage=82.97 GB.", "sglang_weights_gib", 82.97),
    ("llama_kv_cache_unified_iswa: size =   64.00 MiB (  4096 cells,   2 layers,  2/2 seqs)", "llamacpp_kv_mib", 64.0),
], ids=["anchors-then-sglang", "trtllm-peak", "sglang-2026", "llamacpp-iswa"])
def test_bounded_gaps_still_read_real_lines(text, name, value):
    # public SGLang / TensorRT-LLM startup lines (2026 issue logs); a run of anchors before the real one
    assert parse_engine_log(text).value(name) == value


def test_paste_over_the_limit_is_refused_unread_with_both_sizes():
    from planner.engines.logparse import MAX_LOG_CHARS
    assert MAX_LOG_CHARS == 2_000_000
    text = VLLM_V1 * (14_400_000 // len(VLLM_V1) + 1)
    figures = parse_engine_log(text)  # holds real figures: refused unread, not scanned
    assert figures.engine is None and figures.figures == () and not figures.complete
    assert "at most 2,000,000 characters" in figures.message
    assert f"this paste has {len(text):,}" in figures.message
    assert parse_engine_log(VLLM_V1 + "x" * (MAX_LOG_CHARS - len(VLLM_V1))).engine == "vllm"  # at the limit: read


def test_a_line_over_the_length_cap_is_read_that_far_and_said():
    from planner.engines.logparse import MAX_LINE_CHARS
    head = "Available KV cache memory: 5.01 GiB "
    figures = parse_engine_log(head + "x" * MAX_LINE_CHARS + " GPU KV cache size: 93,872 tokens")
    assert figures.value("available_kv_gib") == 5.01 and figures.get("kv_cache_tokens") is None
    assert len(figures.get("available_kv_gib").line) == MAX_LINE_CHARS
    assert f"Line 1 is longer than {MAX_LINE_CHARS:,} characters" in figures.message


def test_prefilter_literals_are_in_every_match():
    from planner.engines.logparse import _COMPILED
    text = "\n".join((VLLM_V1, VLLM_V0, SGLANG, LLAMACPP, LLAMACPP_HYBRID, TRTLLM, TGI, VLLM_TP2))
    for name, _, _, pattern, _, literal in _COMPILED:
        assert len(literal) >= 4, (name, literal)
        for m in pattern.finditer(text):
            assert literal in m.group(0), (name, literal)


def test_engine_page_log_box_states_and_enforces_the_limit():
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from planner.engines.logparse import MAX_LOG_CHARS
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages/5_Engine.py"), default_timeout=90).run()
    assert not at.exception, [e.value for e in at.exception]
    box = at.text_area(key="engine_log")
    assert box.max_chars == MAX_LOG_CHARS
    assert f"At most {MAX_LOG_CHARS:,} characters" in box.help


IMPOSSIBLE_LOG = """INFO [gpu_model_runner.py:1] Model loading took 130.2 GiB and 20.1 seconds
INFO [gpu_worker.py:2] Available KV cache memory: 3.21 GiB
INFO [kv_cache_utils.py:3] GPU KV cache size: 20,000 tokens
INFO [kv_cache_utils.py:4] Maximum concurrency for 131,072 tokens per request: 0.15x
"""


def test_a_log_that_cannot_hold_for_this_gpu_and_model_is_named():
    """QA round: a pasted log of 130.2 GiB of weights on an 80 GB card, at 131,072 tokens per request for
    Llama-3-8B (8,192), was compared as if it were this plan's; the re-plan showed "-59.50 GiB" and the
    token figure "20,000.0". Each impossible figure is now named with what to set, a shortfall reads "none"
    and token counts are whole."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    from planner.engines.reconcile import implausible_figures

    said = implausible_figures(parse_engine_log(IMPOSSIBLE_LOG), gpu_memory_bytes=79 * GiB,
                               max_position_embeddings=8192)
    assert len(said) == 2 and said[0].startswith("The log's weights per GPU (130.20 GiB) are more than this GPU's")
    assert "131,072 tokens per request are past this model's 8,192" in said[1]
    assert implausible_figures(parse_engine_log(IMPOSSIBLE_LOG), gpu_memory_bytes=200 * GiB,
                               max_position_embeddings=262_144) == ()

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages/5_Engine.py"), default_timeout=90)
    at.query_params["model"] = "meta-llama/Meta-Llama-3-8B"
    at.query_params["gpu"] = "nvidia-h100-sxm-80gb"
    at.run()
    at.text_area(key="engine_log").set_value(IMPOSSIBLE_LOG).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    assert any("are more than this GPU's" in w for w in warnings) and any("past this model's 8,192" in w for w in warnings)
    assert not any(".0 " in w and "tokens" in w for w in warnings), warnings
    # compared at the sidebar's settings: the log's own max_model_len (past the model's limit) is not adopted
    assert not any("taken from the log" in i.value for i in at.info), [i.value for i in at.info]
    replans = next(d.value for d in at.dataframe if "Plan" in d.value.columns)
    assert not any(str(v).startswith("-") for v in replans["Available KV per GPU"]), replans
