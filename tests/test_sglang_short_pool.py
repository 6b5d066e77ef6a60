"""SGLang with a KV pool shorter than one request: no "fits" fix, no green verdict (QA, stop 47).

Qwen3-32B on one H100 SXM at 32,768 tokens under ``engine=sglang``: Home offered "Context → 27,904 (fits this
batch)" while SGLang's pool held 18,754 tokens (0.67x); after the click Home read a green "Fits" and the Engine
page a green "sglang starts ... 0.67x" beside "Longest max_model_len 18,754". SGLang starts there but caps each
request at ``min(context_len - 1, pool - 1)`` tokens and rejects a longer prompt (python/sglang/srt/managers/
tp_worker.py, managers/utils.py ``validate_input_length``): planner.engines.sglang_request_cap. Expected figures
come from the engine plan itself, never typed in.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.cli import main
from planner.engines import EngineRequest, plan_engine
from planner.engines.shared_gpu import reported_memory_bytes
from planner.fixes import checked_fixes
from tests.test_app import run_page

QWEN, H100 = "Qwen/Qwen3-32B", "nvidia-h100-sxm-80gb"
LINK = {"model": QWEN, "gpu": H100, "engine": "sglang"}


def _engine(context_len: int, **more):
    model, gpu = model_spec(QWEN), get_gpu(H100)
    request = EngineRequest(engine="sglang", max_model_len=context_len, gpu_name=gpu.name,
                            gpu_memory_reported_bytes=reported_memory_bytes(gpu), **more)
    return model, gpu, request, plan_engine(model, gpu.framework_memory_bytes, request)


def _pool_tokens(context_len: int) -> int:
    return _engine(context_len)[3].engine_kv_cache_tokens


def _context_values(labels) -> list[int]:
    return [int(m.group(1).replace(",", "")) for label in labels if (m := re.match(r"Context → ([\d,]+)", label))]


@pytest.mark.parametrize("batch", [1, 2])
def test_a_context_fix_under_sglang_holds_the_batch_in_sglangs_pool(batch):
    model, gpu, engine_request, _ = _engine(32768)
    request = PlanRequest(context_len=32768, batch_size=batch)
    base = plan(model, gpu.framework_memory_bytes, request, gpu.id)
    assert not base.fits
    fixes = checked_fixes(model, gpu.framework_memory_bytes, request, base, engine_request, gpu_id=gpu.id)
    context = [f for f in fixes if f.fix.key == "context_len"]
    assert context, [f.label for f in fixes]  # a context fix is still offered: the one SGLang's pool holds
    for f in fixes:  # every fix the engine checked holds the batch of whole requests in SGLang's pool
        if f.engine_plan is not None and f.fix.key == "context_len":
            assert f.engine_plan.engine_kv_cache_tokens >= f.fix.value * batch, (f.label, f.help)
        if f.engine_plan is not None:
            assert f.engine_plan.engine_kv_cache_tokens >= f.engine_plan.max_model_len, (f.label, f.help)


def test_cli_plan_under_sglang_offers_no_context_its_pool_cannot_hold(capsys):
    assert main(["plan", "--model", QWEN, "--gpu", H100, "--context-len", "32768", "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    pool = _pool_tokens(32768)
    tried = [int(v.replace(",", "")) for v in re.findall(r"try: lower context_len to ([\d,]+)", out)]
    assert tried and all(v <= pool for v in tried), (tried, pool)


def test_cli_plan_under_sglang_says_a_short_pool_caps_requests(capsys):
    _, _, _, engine_plan = _engine(27904)
    assert main(["plan", "--model", QWEN, "--gpu", H100, "--context-len", "27904", "--engine", "sglang"]) == 0
    out = capsys.readouterr().out
    cap = engine_plan.engine_kv_cache_tokens - 1 - 5  # max_req_len - 5, tp_worker.py
    assert f"maximum allowed length ({cap} tokens)" in out, out


def _buttons(at) -> list[str]:
    return [b.label for b in at.button]


def test_home_offers_no_context_fix_sglang_cannot_hold():
    at = run_page("app.py", {**LINK, "context_len": "32768"})
    assert not at.exception and not at.error
    values = _context_values(_buttons(at))
    pool = _pool_tokens(32768)
    assert values and all(v <= pool for v in values), (values, pool, _buttons(at))


def test_home_is_not_green_where_sglangs_pool_is_shorter_than_one_request():
    at = run_page("app.py", {**LINK, "context_len": "27904"})
    assert not at.exception and not at.error
    assert not [s.value for s in at.success if "Fits" in s.value], [s.value for s in at.success]
    cap = _pool_tokens(27904) - 6
    head = [w.value for w in at.warning if "Fits the budget" in w.value]
    assert head and "sglang" in head[0], [w.value for w in at.warning]
    assert any(f"({cap} tokens)" in w.value for w in at.warning), [w.value for w in at.warning]
    values = _context_values(_buttons(at))  # one click to a context SGLang's pool holds
    assert values and all(v <= _pool_tokens(27904) for v in values), _buttons(at)


def test_engine_page_does_not_say_plain_starts_for_a_short_sglang_pool():
    at = run_page("pages/5_Engine.py", {**LINK, "context_len": "27904"})
    assert not at.exception and not at.error
    assert not [s.value for s in at.success if "starts" in s.value], [s.value for s in at.success]
    pool = _pool_tokens(27904)
    verdict = [w.value for w in at.warning if "sglang" in w.value and f"({pool - 6} tokens)" in w.value]
    assert verdict, [w.value for w in at.warning]
    assert f"{pool:,}" in verdict[0]  # the context that fits, with its number
    labels = _buttons(at)
    values = _context_values(labels) + _context_values([lb.replace("Max len", "Context") for lb in labels])
    assert values and all(v <= pool for v in values), labels
    assert any(lb.startswith(("KV dtype", "GPUs")) for lb in labels), labels


def test_a_pool_that_holds_the_request_stays_a_plain_start():
    from planner.engines.sglang_request_cap import cap_text, holds_one_request, short_pool

    _, _, _, fits = _engine(16384)
    assert fits.starts and not short_pool(fits) and holds_one_request(fits) and cap_text(fits) == ""
    _, _, _, short = _engine(27904)
    assert short.starts and short_pool(short) and not holds_one_request(short)
    assert not short_pool(replace(short, family="vllm"))  # vLLM refuses instead: its starts says it
