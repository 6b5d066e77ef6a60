"""Find sizes a llama.cpp replica as the launch it prints: ``-c slots x L -np slots -kvu``, one KV buffer of ``-c``.

QA: ``python -m planner find --model meta-llama/Meta-Llama-3-8B --users 256 --prompt-len 2000 --output-len 500
--engine llama.cpp --gpu-types nvidia-h100-sxm-80gb`` said "llama.cpp holds 1 request" and "nothing fits" (it planned
``-c 2500``, one slot); with ``--max-num-seqs 32`` "holds 0 requests (1.0 GiB of KV per GPU)" while the printed
``-c 80000 -np 32`` gives about 10 GiB of KV (llama.cpp: n_ctx cells shared by the slots, src/llama-context.cpp,
tools/server). The expected figures are :func:`planner.engines.plan_engine`'s for the printed launch.
"""

from __future__ import annotations

import re

from model_catalog import served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.engines import EngineRequest, plan_engine
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups

LLAMA, H100, LENGTH = "meta-llama/Meta-Llama-3-8B", "nvidia-h100-sxm-80gb", 2500
CASE = dict(users=256, prompt_len=2000, output_len=500, engine="llama.cpp", gpu_ids=(H100,))


def _launch(setup, slots: int | None = None):
    """The engine plan of ``setup``'s printed launch (``-c`` and ``-np`` read from it), or of ``slots`` slots."""
    ctx, np_ = (int(v) for v in re.search(r" -c (\d+) -np (\d+) ", setup.launch_command).groups())
    if slots is not None:
        ctx, np_ = LENGTH * slots, slots
    gpu = get_gpu(setup.gpu_id)
    return plan_engine(served_model_spec(LLAMA), gpu.framework_memory_bytes, EngineRequest(
        engine="llama.cpp", max_model_len=ctx, max_num_seqs=np_, kv_unified=True, gpu_name=gpu.name,
        tensor_parallel_size=setup.tensor_parallel_size, kv_cache_dtype=setup.kv_cache_dtype_flag))


def test_find_holds_the_slots_whose_context_fits():
    found = find_setups(served_model_spec(LLAMA), list(load_gpus().values()), FindRequest(**CASE))
    assert found.options and all(s.fits for s in found.options)
    for s in found.options:
        assert f" -c {LENGTH * s.users_per_replica} -np {s.users_per_replica} " in s.launch_command
        assert _launch(s).starts  # the printed launch starts
        held = s.max_concurrent_sequences // s.data_parallel_size
        assert held >= s.users_per_replica and _launch(s, held).starts and not _launch(s, held + 1).starts


def test_find_plans_max_num_seqs_slots_as_the_launch():
    found = find_setups(served_model_spec(LLAMA), list(load_gpus().values()),
                        FindRequest(**CASE, engine_knobs=(("max_num_seqs", 32),)))
    assert found.options
    for s in found.options:
        assert f" -c {LENGTH * 32} -np 32 " in s.launch_command
        launch = _launch(s)
        assert launch.starts and s.kv_cache_budget_bytes_per_gpu == launch.available_kv_cache_bytes
        assert s.max_concurrent_sequences == 32 * s.data_parallel_size
