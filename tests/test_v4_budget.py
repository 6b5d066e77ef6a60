"""The budget counts DeepSeek-V4's users as vLLM's DeepSeek-V4 allocator holds them (the windowed models' rule,
tests/test_window_budget.py, without its "compressed pages keep the plain profile" exception).

The Engine view prices DeepSeek-V4 with vLLM's own allocator for the model (planner/engines/vllm_deepseek_v4.py:
compressed K and indexer keys in ``--block-size`` blocks, sliding K=V caches and fp32 compressor states in small
windowed blocks, every group block a whole pool block of fp8_ds_mla pages), while plan() priced a plain per-token
profile: V4-Flash on 4 x H200 at 8,192 tokens, 1,746 users where the Engine view decodes 1,411.41 requests at once.
Expected figures are the Engine view's own (:func:`planner.engines.plan_engine`, ``requests_held_ratio``) or its
layout's held blocks (``DeepseekV4Layout.held_blocks_per_request``), never numbers typed in.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from model_catalog import get_gpu, model_ids, model_spec
from planner.budget import MAX_CONTEXT_SEARCH_LIMIT, PlanRequest, plan
from planner.engines import EngineRequest, plan_engine
from planner.engines.vllm_deepseek_v4 import DEFAULT_BLOCK_SIZE, deepseek_v4_layout
from planner.sweep import catalog_sweep, concurrency_curve

CASES = [("deepseek-ai/DeepSeek-V4-Flash", "nvidia-h200-sxm", 4), ("deepseek-ai/DeepSeek-V4-Flash", "nvidia-b200", 8),
         ("deepseek-ai/DeepSeek-V4-Flash", "nvidia-h100-80gb", 8), ("deepseek-ai/DeepSeek-V4-Pro", "nvidia-b200", 8),
         ("deepseek-ai/DeepSeek-V4-Pro", "nvidia-b300", 8), ("nvidia/DeepSeek-V4-Pro-NVFP4", "nvidia-h200-sxm", 8),
         ("nvidia/DeepSeek-V4-Flash-NVFP4", "nvidia-h100-80gb", 4),
         ("sgl-project/DeepSeek-V4-Pro-FP8", "nvidia-b300", 8),
         ("sgl-project/DeepSeek-V4-Flash-FP8", "nvidia-h200-sxm", 4)]
CONTEXTS = (8192, 65536, 1048576)


def _engine_users(model, gpu, tp: int, context: int, kv: str = "auto") -> tuple[int, int]:
    """``(KV budget, whole requests decoding at once)`` of the Engine view (vLLM's own ratio, floored)."""
    engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
        tensor_parallel_size=tp, max_model_len=context, gpu_name=gpu.id, kv_cache_dtype=kv))
    free, per_request = engine.requests_held_ratio
    return engine.available_kv_cache_bytes, free // per_request


@pytest.mark.parametrize(("model_id", "gpu_id", "tp"), CASES)
def test_budget_users_are_the_requests_vllm_decodes_at_once(model_id, gpu_id, tp):
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    for context in CONTEXTS:
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, num_gpus=tp), gpu_id=gpu.id)
        available, users = _engine_users(model, gpu, tp, context)
        assert budget.kv_cache_budget_bytes == available  # the same memory to share
        assert budget.max_concurrent_sequences == users, (model_id, gpu_id, context)


@pytest.mark.parametrize("kv", ["fp8", "bf16"])
def test_every_kv_dtype_is_priced_as_the_engine_view_prices_it(kv):
    """vLLM stores every accepted cache of DeepSeek-V4 as fp8_ds_mla (the Engine view prices any other name so and
    warns): the budget follows, whatever ``--kv-cache-dtype`` says, and names the cache it prices."""
    for model_id, gpu_id, tp in CASES[:4]:
        model, gpu = model_spec(model_id), get_gpu(gpu_id)
        for context in CONTEXTS[:2]:
            budget = plan(model, gpu.framework_memory_bytes,
                          PlanRequest(context_len=context, num_gpus=tp, kv_cache_dtype=kv), gpu_id=gpu.id)
            available, users = _engine_users(model, gpu, tp, context, kv)
            assert budget.kv_cache_budget_bytes == available
            assert budget.max_concurrent_sequences == users, (model_id, gpu_id, context, kv)
            assert budget.kv_cache_dtype == "fp8_ds_mla"


def test_paged_sequence_and_prefill_extra_are_the_layouts_held_blocks():
    """A sequence's paged bytes are the V4 layout's held blocks of a decode step times the pool block; the prefill
    extra is what a whole chunk of batched tokens holds more (compressor states and sliding caches grow with the
    chunk), at lengths on and around the 4-, 8-, 64- and 256-token block and window edges."""
    from planner.budget import plan_base  # noqa: PLC0415

    counts = [1, 3, 4, 5, 8, 9, 63, 64, 65, 127, 128, 129, 255, 256, 257, 8191, 8192, 8193, 16384, 65536, 100000]
    for model_id, gpu_id, tp in CASES[:4]:
        model, gpu = model_spec(model_id), get_gpu(gpu_id)
        layout = deepseek_v4_layout(model, range(model.num_layers), DEFAULT_BLOCK_SIZE)
        base = plan_base(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=tp), gpu.id)
        chunk = base.prefill_tokens
        assert chunk > 1
        for n in counts:
            decode = layout.held_blocks_per_request(n, 1)
            assert base.bytes_per_sequence(n)[0] == decode * layout.bytes_per_block, (model_id, n)
            assert base.prefill_extra_bytes(n) == (
                (layout.held_blocks_per_request(n, chunk) - decode) * layout.bytes_per_block), (model_id, n)
        assert base.paged_gpu.prefill_extra_bytes_many(counts, chunk) == [base.prefill_extra_bytes(n) for n in counts]
        assert base.paged_gpu.bytes_per_sequences(counts) == [base.bytes_per_sequence(n)[0] for n in counts]
        assert base.plan_fields["block_size"] == DEFAULT_BLOCK_SIZE  # vLLM's --block-size for the model


def test_a_block_size_the_allocator_takes_is_kept():
    """``--block-size 512`` (a multiple of the indexer's 256) pages the compressed caches in 512-token blocks, in
    the budget as in the Engine view."""
    model, gpu = model_spec("deepseek-ai/DeepSeek-V4-Flash"), get_gpu("nvidia-h200-sxm")
    for context in (8192, 65536):
        budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=context, num_gpus=4, block_size=512),
                      gpu_id=gpu.id)
        engine = plan_engine(model, gpu.framework_memory_bytes, EngineRequest(
            tensor_parallel_size=4, max_model_len=context, gpu_name=gpu.id, block_size=512))
        free, per_request = engine.requests_held_ratio
        assert budget.block_size == 512
        assert budget.max_concurrent_sequences == free // per_request


@pytest.mark.parametrize(("model_id", "gpu_id", "tp"), CASES[:2])
def test_the_sweeps_and_a_batch_agree_with_the_plan(model_id, gpu_id, tp):
    """Concurrency's curve is plan()'s users at every context, a batch of that many fits while one more does not,
    and the catalog sweep (GPUs by memory) counts as plan() on that memory."""
    model, gpu = model_spec(model_id), get_gpu(gpu_id)
    request = PlanRequest(context_len=8192, num_gpus=tp)
    contexts = (1000, 8192, 65536, 262144)
    curve = concurrency_curve(model, gpu.framework_memory_bytes, request, contexts, gpu.id)
    for context, users in zip(contexts, curve, strict=True):
        one = plan(model, gpu.framework_memory_bytes, replace(request, context_len=context), gpu_id=gpu.id)
        assert one.max_concurrent_sequences == users
        assert users == _engine_users(model, gpu, tp, context)[1]
        at = replace(request, context_len=context, batch_size=users)
        assert plan(model, gpu.framework_memory_bytes, at, gpu_id=gpu.id).fits
        assert not plan(model, gpu.framework_memory_bytes, replace(at, batch_size=users + 1), gpu_id=gpu.id).fits
    if gpu_id != "nvidia-b200":  # a B200's memory: the sweep's size-class overhead (test_window_budget, a1635a3)
        ((row,),) = catalog_sweep((model,), (gpu.framework_memory_bytes,), request, contexts)
        by_plan = [plan(model, gpu.framework_memory_bytes, replace(request, context_len=c)) for c in contexts]
        assert row == tuple(p.max_concurrent_sequences for p in by_plan)


def test_find_s_budget_rows_are_the_engine_view_s():
    """Find's budget arithmetic (no engine) counts a DeepSeek-V4 setup's users as plan() and the Engine view do, and
    names the cache as they do: auto and fp8 store the same fp8_ds_mla pages, one row per setup (as Find's vLLM
    rows), not a bf16 and an fp8 row of equal users."""
    from planner.traffic.find_types import FindRequest  # noqa: PLC0415
    from planner.traffic.reverse import find_setups  # noqa: PLC0415

    model = model_spec("deepseek-ai/DeepSeek-V4-Flash")
    gpus = [get_gpu(g) for g in ("nvidia-h200-sxm", "nvidia-b200")]
    found = find_setups(model, gpus, FindRequest(users=64, prompt_len=7000, output_len=1192, max_gpus=8, top=60,
                                                 kv_cache_dtypes=("auto", "fp8")))
    rows = [s for s in found.options if s.kind == "TP" and s.data_parallel_size == 1]
    assert rows and {s.kv_cache_dtype for s in rows} == {"fp8_ds_mla"}
    assert len({(s.gpu_id, s.tensor_parallel_size) for s in rows}) == len(rows)
    for s in rows:
        gpu = get_gpu(s.gpu_id)
        available, users = _engine_users(model, gpu, s.tensor_parallel_size, 8192)
        assert (s.kv_cache_budget_bytes_per_gpu, s.max_concurrent_sequences) == (available, users), (
            s.gpu_id, s.tensor_parallel_size)



def test_concurrency_heading_names_the_cache_home_prices():
    """QA: Concurrency's heading said "bf16 KV cache" for DeepSeek-V4-Flash where Home and the Engine page, for the
    same link, said fp8_ds_mla (the budget's pool pages); it names Plan.kv_cache_dtype now."""
    from streamlit.testing.v1 import AppTest

    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.budget import MAX_CONTEXT_SEARCH_LIMIT, PlanRequest, plan

    link = {"model": "deepseek-ai/DeepSeek-V4-Flash", "gpu": "nvidia-h200-sxm", "num_gpus": "4",
            "context_len": "8192"}
    gpu = get_gpu(link["gpu"])
    priced = plan(model_spec(link["model"]), gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=4),
                  gpu_id=gpu.id).kv_cache_dtype
    at = AppTest.from_file("../pages/3_Concurrency.py", default_timeout=120)
    for key, value in link.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    heading = at.subheader[0].value.replace("\\_", "_")
    assert priced == "fp8_ds_mla" and heading.endswith(f"{priced} KV cache"), heading


def test_find_launches_deepseek_v4_with_the_cache_vllm_accepts():
    """Find's DeepSeek-V4 rows launched with ``--kv-cache-dtype auto``, which the Engine view warns v0.22+ refuses
    for the model (DeepseekV4MLAAttention asserts an fp8 cache) and which its own launch command turns into fp8.
    Every vLLM row (TP and DP+EP) now passes what the Engine page's command passes; a model without that allocator
    keeps the searched dtype."""
    import re

    from model_catalog import model_spec
    from model_catalog.gpus import get_gpu
    from planner.engines import EngineRequest, plan_engine
    from planner.traffic.find_types import FindRequest
    from planner.traffic.reverse import find_setups
    from planner.traffic.workload import fixed_workload

    gpu = get_gpu("nvidia-h200-sxm")
    for model_id, expected in (("deepseek-ai/DeepSeek-V4-Flash", None), ("Qwen/Qwen3-8B", "auto")):
        model = model_spec(model_id)
        result = find_setups(model, [gpu], FindRequest(users=64, workload=fixed_workload(2000, 500), max_gpus=8,
                                                       kv_cache_dtypes=("auto",), top=20))
        flags = {re.search(r"--kv-cache-dtype (\S+)", s.launch_command).group(1) for s in result.options}
        if expected is None:  # the Engine view's own launch command for the same model and GPU
            engine = plan_engine(model, gpu.framework_memory_bytes,
                                 EngineRequest(engine="vllm", max_model_len=2500, tensor_parallel_size=2))
            expected = re.search(r"--kv-cache-dtype (\S+)", engine.launch_command).group(1)
        assert flags == {expected}, (model_id, flags, expected)


def test_home_kv_tiles_show_the_pool_cache_the_users_are_counted_in():
    """QA: Home's "KV per token" / "KV per sequence" tiles showed DeepSeek-V4-Flash's bf16 figures (8,277 B a token,
    48.9 MiB a sequence) beside 1,411 users priced in vLLM's fp8_ds_mla pool pages: one plan, two caches. The tiles
    now name the pool's cache and show its figures: the Engine view's layout (one pool block per 256 compressed
    tokens, its held blocks a decoding request), and the sequence the budget divides into the users."""
    from tests.test_serving_app import run
    from tests.tiles import metric_tiles
    from ui.format import format_bytes

    model, gpu = model_spec("deepseek-ai/DeepSeek-V4-Flash"), get_gpu("nvidia-h200-sxm")
    budget = plan(model, gpu.framework_memory_bytes, PlanRequest(context_len=8192, num_gpus=4), gpu_id=gpu.id)
    layout = deepseek_v4_layout(model, range(model.num_layers), DEFAULT_BLOCK_SIZE)
    sequence = layout.held_blocks_per_request(8192) * layout.bytes_per_block
    assert (budget.kv_cache_budget_bytes - budget.kv_cache_prefill_extra_bytes) // sequence \
        == budget.max_concurrent_sequences  # the sequence the users are counted with
    at = run("app.py", {"model": model.model_id, "gpu": gpu.id, "num_gpus": "4", "context_len": "8192"})
    assert not at.exception and not at.error
    tiles = {t.label: t for t in metric_tiles(at)}
    token = tiles["KV per token (fp8_ds_mla, as vLLM stores it)"]
    per_sequence = tiles["KV per sequence per GPU (fp8_ds_mla, as vLLM stores it)"]
    assert token.value == format_bytes(-(-layout.bytes_per_block // DEFAULT_BLOCK_SIZE), "auto")
    assert per_sequence.value == format_bytes(sequence)
    assert f"{layout.held_blocks_per_request(8192)} pool blocks" in per_sequence.help


@pytest.mark.parametrize("model_id, gpu_id, tp", CASES)
def test_context_before_overheads_is_searched_in_the_cache_users_are_counted_in(model_id, gpu_id, tp):
    """QA: V4-Flash on 8 x H200 at batch 64 read 397,824 tokens with overheads and 327,774 before them (the latter
    searched in the exact bf16 cache). Before overheads the budget is larger and the cache the same pool pages, so
    it holds at least as long a context; and the figure is the largest context whose sequences' pool pages fit the
    whole card minus the weights (checked at that length and one token more)."""
    gpu = get_gpu(gpu_id)
    for batch in (1, 64):
        p = plan(model_spec(model_id), gpu.framework_memory_bytes,
                 PlanRequest(context_len=8192, batch_size=batch, num_gpus=tp), gpu_id)
        assert p.max_context_len_before_overheads >= p.max_context_len_by_memory
        raw = gpu.framework_memory_bytes - p.weights_bytes_per_gpu
        limit = p.max_context_len_before_overheads
        checks = ((limit, True),) if limit == MAX_CONTEXT_SEARCH_LIMIT else ((limit, True), (limit + 1, False))
        for context, fits in checks:
            q = plan(model_spec(model_id), gpu.framework_memory_bytes,
                     PlanRequest(context_len=context, batch_size=batch, num_gpus=tp), gpu_id)
            assert (batch * q.kv_cache_bytes_per_sequence_paged_per_gpu <= raw) is fits, (context, batch)


def test_context_before_overheads_never_falls_below_the_context_with_them():
    """Over the whole catalog on 8 x H200 at batch 64: removing the overheads never shortens the context."""
    gpu = get_gpu("nvidia-h200-sxm")
    checked = 0
    for model_id in model_ids():
        try:
            p = plan(model_spec(model_id), gpu.framework_memory_bytes,
                     PlanRequest(context_len=8192, batch_size=64, num_gpus=8), "nvidia-h200-sxm")
        except ValueError:
            continue
        if p.max_context_len_limited_by == "tensor_parallel":  # the engine refuses 8 ways: every context is 0
            continue
        checked += 1
        assert p.max_context_len_before_overheads >= p.max_context_len_by_memory, model_id
    assert checked > 100


@pytest.mark.parametrize("model_id, gpu_id, tp", CASES)
def test_per_gpu_kv_per_token_is_the_whole_models_for_deepseek_v4(model_id, gpu_id, tp):
    """QA: the CLI JSON of V4-Flash on 8 x H200 gave kv_cache_bytes_per_token 8,277 and
    kv_cache_bytes_per_token_per_gpu 431,392 (each fp8_ds_mla group's whole page over its block, windowed groups
    included). DeepSeek-V4's latent is replicated on every GPU, so one GPU's per-token cache is the whole model's, in
    the same (exact) cache; the pool's own per-token growth is Home's tile (planner.pool_kv)."""
    gpu = get_gpu(gpu_id)
    p = plan(model_spec(model_id), gpu.framework_memory_bytes,
             PlanRequest(context_len=8192, batch_size=1, num_gpus=tp), gpu.id)
    assert p.kv_cache_bytes_per_token_per_gpu == p.kv_cache_bytes_per_token
