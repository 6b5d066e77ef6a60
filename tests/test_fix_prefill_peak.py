"""A fix whose users outnumber the engine's printed concurrency says why (QA, stop 42).

Home's "Try:" read "lower batch_size to 3 (fits at this context): starts with 2.75x concurrency at 32,768 tokens
per request" for gpt-oss-120b on one H100 SXM at 32,768 x 8: 3 users fit where vLLM prints 2.75x, unexplained.
vLLM's print counts each request at its prefill peak (a windowed model's blocks beyond the window during a prefill
chunk); the users are the requests decoding at once beside one prefill chunk. The fix now says so, in the words
Find's engine note uses (one constant, :data:`planner.engines.types.PREFILL_PEAK_REASON`).
"""

from __future__ import annotations


from model_catalog import get_gpu, model_spec
from planner.budget import PlanRequest, plan
from planner.engines.types import PREFILL_PEAK_REASON
from planner.fixes import PEAK_REASON_AGAIN, EngineRequest, checked_fixes
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from tests.test_app import run_page

GPT_OSS = "openai/gpt-oss-120b"
H100 = "nvidia-h100-sxm-80gb"


def _fixes(batch: int = 8):
    model, gpu = model_spec(GPT_OSS), get_gpu(H100)
    request = PlanRequest(context_len=32768, batch_size=batch)
    base = plan(model, gpu.framework_memory_bytes, request, gpu_id=gpu.id)
    engine = EngineRequest(engine="vllm", max_model_len=32768, gpu_name=gpu.name)
    return checked_fixes(model, gpu.framework_memory_bytes, request, base, engine, gpu_id=gpu.id)


def test_a_batch_fix_above_the_printed_concurrency_says_why():
    fixes = {f.fix.key: f for f in _fixes()}
    batch = fixes["batch_size"]
    printed = batch.engine_plan.max_concurrency
    assert batch.fix.value > printed and batch.engine_plan.decodes_more_than_printed  # 3 users, 2.75x printed
    assert PREFILL_PEAK_REASON in batch.help, batch.help
    assert batch.help.index(f"{printed:.2f}x") < batch.help.index(PREFILL_PEAK_REASON)  # where the two meet
    gpus = fixes["num_gpus"]  # 8 users, 49.81x printed: nothing to explain
    assert gpus.fix.value and 8 < gpus.engine_plan.max_concurrency and PREFILL_PEAK_REASON not in gpus.help


def test_home_s_try_list_says_why_three_users_fit_beside_2_75x():
    at = run_page("app.py", {"model": GPT_OSS, "gpu": H100, "context_len": "32768", "batch_size": "8"})
    assert not at.exception
    text = next(w.value for w in at.warning if "Does not fit" in w.value)
    line = next(item for item in text.split("\n- ") if "lower batch_size to 3" in item)
    assert "2.75x" in line and (PREFILL_PEAK_REASON in line or PEAK_REASON_AGAIN in line), line
    assert text.count(PREFILL_PEAK_REASON) == 1  # given once in the list, referred back to after (stop 43)


def test_find_s_engine_note_uses_the_same_words():
    found = find_setups(model_spec(GPT_OSS), [get_gpu(H100)],
                        FindRequest(users=2, prompt_len=30000, output_len=2000, max_gpus=1, engine="vllm",
                                    kv_cache_dtypes=("auto",), setup_kinds=("TP",)))
    assert any(PREFILL_PEAK_REASON in note for note in found.notes), found.notes
