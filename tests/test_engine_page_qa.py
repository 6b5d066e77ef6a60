"""QA round on the Engine page and the CLI's engine lines.

Log lines are those quoted in tests/data/reference/engine_cases.csv: row [N12] (vLLM 0.28.0, Qwen3-14B on an L40S)
and row [N22] (SGLang of Aug 2025, Qwen3-0.6B on an RTX 5080). SGLang's memory rule: python/sglang/srt/
model_executor/model_runner.py ``profile_max_num_token`` (rest = free_after_load - free_before x (1 -
mem_fraction_static)), so mem_fraction_static caps the weights and the KV pool only.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines import EngineRequest, plan_engine
from planner.engines.shared_gpu import reported_memory_bytes

ROOT = Path(__file__).resolve().parents[1]
PAGE = "pages/5_Engine.py"

N12_LINES = (
    "INFO 09-06 10:13:02 [gpu_model_runner.py:2653] Model loading took 27.52 GiB and 38.112 seconds",
    "INFO 09-06 10:13:20 [gpu_worker.py:298] Available KV cache memory: 11.57 GiB",
    "INFO 09-06 10:13:20 [kv_cache_utils.py:1087] GPU KV cache size: 75,824 tokens",
    "INFO 09-06 10:13:20 [kv_cache_utils.py:1091] Maximum concurrency for 40,960 tokens per request: 1.85x")
N12_VERSION = "(APIServer pid=1) INFO 09-06 10:12:10 [api_server.py:1805] vLLM API server version 0.28.0"
N12 = {"model": "Qwen/Qwen3-14B", "gpu": "nvidia-l40s", "max_model_len": "40960"}

N22_LOG = "\n".join((  # K and V of one token are alike (8 KV heads x 128 each): V size = K size
    "[2025-08-08 10:00:01 TP0] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=13.91 GB, "
    "mem usage=1.25 GB.",
    "[2025-08-08 10:00:02 TP0] KV Cache is allocated. #tokens: 104273, K size: 5.57 GB, V size: 5.57 GB",
    "[2025-08-08 10:00:05 TP0] max_total_num_tokens=104273, chunked_prefill_size=2048, max_running_requests=2048, "
    "context_len=40960"))
N22 = {"model": "Qwen/Qwen3-0.6B", "gpu": "nvidia-rtx-5080", "max_model_len": "40960"}
LLAMA = {"engine": "llama.cpp", "model": "Qwen/Qwen3-4B", "gpu": "nvidia-rtx-4090", "max_model_len": "32768",
         "weight_dtype": "int4", "kv_cache_dtype": "q8_0"}


def run(params: dict, log: str | None = None) -> AppTest:
    at = AppTest.from_file(str(ROOT / PAGE), default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    if log is not None:
        at.text_area(key="engine_log").input(log).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def infos(at: AppTest) -> str:
    return "\n".join(i.value for i in at.info)


def plan(engine: str, model: str, gpu_id: str, **kw):
    gpu = get_gpu(gpu_id)
    request = EngineRequest(engine=engine, gpu_name=gpu.name, gpu_memory_reported_bytes=reported_memory_bytes(gpu),
                            **kw)
    return plan_engine(model_spec(model), gpu.framework_memory_bytes, request)


# --- 1. the log check names a profile of the same engine only when the log points at it ----------------------

def test_a_vllm_log_under_a_versioned_vllm_profile_is_no_engine_mismatch():
    at = run({"engine": "vllm-v0.28", **N12}, "\n".join(N12_LINES))
    assert "pick that engine" not in infos(at) and "looks like" not in infos(at), infos(at)


def test_a_log_stating_its_vllm_version_names_the_profile_of_that_release_without_switching():
    at = run({"engine": "vllm", **N12}, "\n".join((N12_VERSION, *N12_LINES)))
    text = infos(at)
    assert "0.28.0" in text and "`vllm-v0.28`" in text, text
    assert "looks like" not in text  # another build of vLLM, not another engine
    assert at.selectbox(key="engine").value == "vllm"  # a suggestion: the sidebar keeps the user's choice
    same = run({"engine": "vllm-v0.28", **N12}, "\n".join((N12_VERSION, *N12_LINES)))
    assert "vllm-v0.28`" not in infos(same), infos(same)


def test_an_sglang_log_without_a_version_names_the_build_whose_pool_it_matches():
    """N22 printed K + V = 11.14 GiB; the default ``sglang`` profile predicts less than ``sglang-v0.4`` (the
    build of that date) does, and the page names that profile, with both predictions."""
    current = plan("sglang", N22["model"], N22["gpu"], max_model_len=40960).available_kv_cache_bytes
    mid_2025 = plan("sglang-v0.4", N22["model"], N22["gpu"], max_model_len=40960).available_kv_cache_bytes
    printed = round(11.14 * 2**30)
    assert abs(mid_2025 - printed) * 2 <= abs(current - printed)  # the premise of the hint
    at = run({"engine": "sglang", **N22}, N22_LOG)
    text = infos(at)
    assert "`sglang-v0.4`" in text and f"{mid_2025 / 2**30:.2f} GiB" in text and f"{current / 2**30:.2f} GiB" in text
    assert at.selectbox(key="engine").value == "sglang"
    assert "sglang-v0.4" not in infos(run({"engine": "sglang-v0.4", **N22}, N22_LOG))


# --- 2. SGLang's bar follows mem_fraction_static; no claim of a printed concurrency ---------------------------

def _bar(at: AppTest) -> str:
    return next(h.proto.body for h in at.get("html") if 'data-segment="Weights"' in h.proto.body)


def _segments(bar: str) -> list[tuple[str, int]]:
    return [(n, int(b)) for n, b in re.findall(r'data-segment="([^"]+)" data-bytes="(\d+)"', bar)]


def _line_pct(bar: str, kind: str) -> float:
    return float(re.search(r'data-line="%s" style="[^"]*left:([0-9.]+)%%' % kind, bar).group(1))


def test_sglang_bar_puts_weights_and_kv_inside_mem_fraction_static_and_the_rest_after_it():
    at = run({"engine": "sglang", **N22})
    expected = plan("sglang", N22["model"], N22["gpu"], max_model_len=40960)
    rank = expected.limiting_rank
    bar = _bar(at)
    names = [n for n, _ in _segments(bar)]
    assert names[:2] == ["Weights", "KV cache"], names  # the static pools first, then what lives outside them
    assert names.index("Non-torch") > 1 and names.index("Activation peak") > 1
    static_line = int(expected.gpu_memory_utilization * rank.memory_base_bytes)  # fraction x free before loading
    scale = max(expected.gpu_memory_bytes, sum(b for _, b in _segments(bar)))
    assert abs(_line_pct(bar, "usable") / 100 * scale - static_line) < scale * 1e-4
    inside = rank.weights_bytes + rank.available_kv_cache_bytes
    assert abs(inside - static_line) <= 2 * rank.bytes_per_block  # the pool fills the fraction, to a page
    assert 'data-label="usable"' in bar and "mem_fraction_static" in bar
    caption = " ".join(c.value for c in at.caption)
    assert f"mem_fraction_static {expected.gpu_memory_utilization:g} × the" in caption, caption


def test_sglang_verdict_does_not_claim_a_printed_concurrency():
    at = run({"engine": "sglang", **N22})
    verdict = at.success[0].value
    assert "as printed" not in verdict and "prints no concurrency line" in verdict, verdict
    vllm = run({"engine": "vllm-v0.28", **N12})
    assert "as printed" in vllm.success[0].value  # vLLM prints "Maximum concurrency ..."


# --- 3. llama.cpp: no cap, so the row is what it allocates and the rest is free -------------------------------

def test_llamacpp_rows_say_allocated_and_free_and_the_bar_shows_the_free_memory():
    at = run(LLAMA)
    expected = plan("llama.cpp", LLAMA["model"], LLAMA["gpu"], max_model_len=32768, weight_dtype="int4",
                    kv_cache_dtype="q8_0")
    rank = expected.limiting_rank
    table = next(t.value for t in at.table if "Per GPU" in t.value.columns)
    terms = list(table["Per GPU"])
    assert "Usable" not in terms and "Allocated" in terms and "Free on the card" in terms, terms
    allocated = rank.weights_bytes + rank.activation_bytes + rank.available_kv_cache_bytes + rank.non_torch_bytes
    free = expected.gpu_memory_bytes - allocated
    column = table.columns[1]
    assert table[table["Per GPU"] == "Free on the card"][column].iloc[0] == f"{free / 2**30:,.2f} GiB"
    bar = _bar(at)
    assert ("Free", free) in _segments(bar) and 'data-line="usable"' not in bar


# --- 4. one format in the Relative column ---------------------------------------------------------------------

def test_relative_column_has_one_format():
    at = run({"engine": "vllm-v0.28", **N12}, "\n".join(N12_LINES))
    table = next(t.value for t in at.table if "Log line" in t.value.columns)
    assert all(re.fullmatch(r"[+-]?\d+\.\d\d%", v) for v in table["Relative"]), list(table["Relative"])


# --- 5. the CLI ---------------------------------------------------------------------------------------------------

def cli(*argv: str) -> str:
    from planner.cli import main

    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(list(argv)) == 0
    return out.getvalue()


N09 = ("plan", "--engine", "vllm-v0.28", "--model", "nvidia/Qwen3.6-35B-A3B-NVFP4", "--gpu", "nvidia-rtx-5090",
       "--max-model-len", "131072", "--kv-cache-dtype", "fp8", "--max-num-seqs", "1", "--max-num-batched-tokens",
       "8192", "--gpu-memory-utilization", "0.9", "--limit-mm-per-prompt", '{"image": 2}')


def test_cli_prints_each_serving_note_once_and_one_flags_heading():
    text = cli(*N09)
    notes = [line.split("note: ", 1)[1] for line in text.splitlines() if "note: " in line]
    assert notes and len(notes) == len(set(notes)), notes
    flags = [line.strip() for line in text.splitlines() if line.strip().split(" ", 1)[-1].startswith("flags:")]
    assert len(flags) == 1, flags


def test_cli_max_len_line_says_it_is_the_largest_the_engine_accepts_not_the_launch():
    text = cli("plan", "--engine", "vllm", "--model", "Qwen/Qwen3-14B", "--weight-dtype", "int4", "--gpu",
               "nvidia-l40s", "--max-model-len", "1024", "--gpu-memory-utilization", "0.95", "--block-size", "16",
               "--max-num-seqs", "8", "--max-num-batched-tokens", "8192")
    line = next(x for x in text.splitlines() if x.startswith("max len"))
    assert "accepted by the engine" not in line and "largest --max-model-len" in line and "1,024" in line, line


def test_cli_disagg_counts_one_request_in_the_singular():
    from planner.cli.scale import _disagg_table
    from planner.text import count_noun

    class Pool:
        def __init__(self, concurrency):
            self.plan = type("P", (), {"starts": True})()
            self._d = {"gpus": 1, "replicas": 1, "gpus_per_replica": 1, "tensor_parallel_size": 1,
                       "data_parallel_size": 1, "max_concurrency": concurrency, "prefill_ms_per_request": 1.0,
                       "time_per_output_token_ms": 1.0}

        def to_dict(self):
            return self._d

    result = type("R", (), dict(model_id="m", users=1, prompt_len=1, output_len=1, prefill=Pool(1), decode=Pool(2),
                                kv_transfer_bytes_per_request=1, kv_transfer_ms={"l": 1.0}, link="l", ttft_ms=1.0,
                                reasons=(), pool_notes=()))()
    text = _disagg_table(result)
    assert "1 requests" not in text and count_noun(1, "request") + " per replica" in text, text


def test_a_log_of_another_engine_still_names_that_engine():
    at = run({"engine": "vllm", **N22}, N22_LOG)
    assert "looks like `sglang`" in infos(at), infos(at)
    assert at.selectbox(key="engine").value == "vllm"
