"""Whole requests on the Engine page beside Home's users: a plan link's batch, and a printed concurrency that
rounds up (QA, issue 27 "one link, one answer").

The Engine page plans no batch, so a Home link with ``batch_size=8`` for Qwen3.5-27B + MTP (3 draft tokens) and
2 images per request at 32,768 tokens on one H100 showed a green "vllm starts ... 5.72x" where Home said "Does not
fit" for 8 sequences. The page now says that the pool holds 5 requests at once and 3 would wait. Expected figures
are the page's own engine plan (5.72x printed concurrency, floored) and Home's verdict for the same link.
"""

from __future__ import annotations

from tests.test_serving_app import run

LINK = {"model": "Qwen/Qwen3.5-27B", "gpu": "nvidia-h100-sxm-80gb", "context_len": "32768",
        "speculative_method": "mtp", "num_speculative_tokens": "3", "images_per_request": "2"}


def _batch_warnings(at) -> list[str]:
    assert not at.exception, at.exception
    return [w.value for w in at.warning if "`batch_size`" in w.value]


def test_a_batch_the_pool_cannot_hold_is_said_beside_the_green_verdict():
    at = run("pages/5_Engine.py", {**LINK, "batch_size": "8"})
    assert any("vllm starts" in s.value for s in at.success)
    said = _batch_warnings(at)
    assert len(said) == 1, said
    assert "batch of 8 sequences" in said[0] and "the 5 requests of 32,768 tokens" in said[0], said
    assert "3 requests would wait in its queue" in said[0], said
    home = run("app.py", {**LINK, "batch_size": "8"})
    assert any("Does not fit" in w.value for w in home.warning)  # the same link's answer on Home


def test_no_sentence_for_a_batch_that_fits_or_no_batch():
    assert _batch_warnings(run("pages/5_Engine.py", {**LINK, "batch_size": "5"})) == []
    assert _batch_warnings(run("pages/5_Engine.py", LINK)) == []
    assert _batch_warnings(run("pages/5_Engine.py", {**LINK, "batch_size": "abc"})) == []


def test_a_printed_concurrency_rounded_up_to_a_whole_request_says_how_many_are_held():
    """DeepSeek-V3.2 on 8 x B200 at 32,768 tokens: 13,055 blocks of 256 per request = 50.996, which vLLM prints
    as "51.00x"; Home said "up to 50 concurrent sequences" and the Engine tile "51.00x" with no word (QA). The tile
    now carries "50 whole requests"; a printed figure that does not round up past a whole request has no note."""
    from tests.tiles import metric_tiles

    link = {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-b200", "num_gpus": "8", "context_len": "32768"}
    at = run("pages/5_Engine.py", link)
    tile = next(t for t in metric_tiles(at) if t.label == "Max concurrency")
    assert (tile.value, tile.delta) == ("51.00x", "50 whole requests"), tile
    home = run("app.py", link)
    assert any("up to 50 concurrent sequences" in s.value for s in home.success)
    h200 = run("pages/5_Engine.py", {**link, "gpu": "nvidia-h200-sxm"})  # 28.84x: 28 whole, no note
    tile = next(t for t in metric_tiles(h200) if t.label == "Max concurrency")
    assert (tile.value, tile.delta) == ("28.84x", None), tile


def test_the_decoding_count_tile_names_its_whole_requests_as_home_counts_them():
    """Gemma 4 26B-A4B on 2 x L40S at 8,192 tokens: the Engine tile read "64.81" requests decoding at once beside
    Home's 64 users, with no word between them (QA). The tile carries "64 whole requests", Home's figure."""
    import re

    from tests.tiles import metric_tiles
    from ui.engine_metrics import DECODING_LABEL

    link = {"model": "google/gemma-4-26B-A4B", "gpu": "nvidia-l40s", "num_gpus": "2", "context_len": "8192"}
    at = run("pages/5_Engine.py", link)
    tile = next(t for t in metric_tiles(at) if t.label == DECODING_LABEL)
    whole = int(float(tile.value.replace(",", "")))
    assert tile.delta == f"{whole:,} whole requests", tile
    home = run("app.py", link)
    (said,) = [s.value for s in home.success if s.value.startswith("**Fits.**")]
    assert re.search(rf"up to {whole:,} concurrent sequences", said), said


def test_the_queue_under_data_parallel_counts_each_replicas_share():
    """QA: Llama 3.1 8B on an H100, ``data_parallel_size=4``, 200 requests of 32,768 tokens: "more than the 13 ...
    one replica holds: 187 requests would wait", where vLLM's front end spreads the 200 over the 4 replicas
    (vllm/v1/engine/core_client.py, DP load balancing): 50 each, 13 held by each, so 4 x 37 = 148 wait. Expected
    figures: the page's engine plan of one replica (its whole requests), the batch split evenly here."""
    from model_catalog import get_gpu, model_spec
    from planner.engines import plan_engine
    from planner.engines.types import EngineRequest

    gpu = get_gpu("nvidia-h100-sxm-80gb")
    link = {"model": "meta-llama/Meta-Llama-3.1-8B", "gpu": gpu.id, "data_parallel_size": "4",
            "context_len": "32768", "batch_size": "200"}
    one = plan_engine(model_spec(link["model"]), gpu.framework_memory_bytes,
                      EngineRequest(engine="vllm", tensor_parallel_size=1, data_parallel_size=4, max_model_len=32768,
                                    gpu_name=gpu.name, gpu_memory_reported_bytes=None))
    held = int(one.requests_held)
    shares = [200 // 4 + (i < 200 % 4) for i in range(4)]
    waiting = sum(max(0, share - held) for share in shares)
    said = _batch_warnings(run("pages/5_Engine.py", link))
    assert len(said) == 1, said
    assert f"{waiting} requests would wait" in said[0] and "4 replicas" in said[0], (said, held, waiting)
