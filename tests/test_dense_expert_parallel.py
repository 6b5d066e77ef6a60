"""``--enable-expert-parallel`` on a dense model: vLLM refuses it, and so does every view (QA).

``/?model=Qwen/Qwen3-32B&gpu=nvidia-h200-sxm&data_parallel_size=8&enable_expert_parallel=true`` read "Fits" on Home
with a "Left out" line about "its share of every expert"; the Engine page said it could not plan the launch yet
printed ``--data-parallel-size 8``; the CLI refused. vLLM's ``ModelConfig.verify_with_parallel_config`` calls
``_verify_with_expert_parallelism`` whenever ``enable_expert_parallel`` is set, which raises "Number of experts in
the model must be greater than 0 when expert parallelism is enabled." for a model with no experts
(vllm/config/model.py): the engine never starts.
"""

from __future__ import annotations

from tests.test_app import run_page
from tests.test_cli import run_cli

LINK = {"model": "Qwen/Qwen3-32B", "gpu": "nvidia-h200-sxm", "data_parallel_size": "8",
        "enable_expert_parallel": "true"}
VLLM_WORDS = "Number of experts in the model must be greater than 0"


def test_the_refusal_quotes_vllm():
    from planner.scale.layout import VLLM_DENSE_EP_ERROR

    assert VLLM_WORDS in VLLM_DENSE_EP_ERROR


def test_cli_refuses_with_vllms_reason():
    done = run_cli("plan", "--model", LINK["model"], "--gpu", LINK["gpu"], "-dp", "8", "--enable-expert-parallel")
    assert done.returncode != 0
    assert VLLM_WORDS in done.stdout + done.stderr


def _said(at) -> str:
    return " ".join(str(e.value) for e in (*at.error, *at.warning, *at.info, *at.caption, *at.markdown))


def test_home_refuses_with_the_same_reason():
    at = run_page("app.py", LINK)
    said = _said(at)
    assert VLLM_WORDS in said, said
    assert "share of every expert" not in said
    assert not any("Fits." in str(s.value) for s in at.success)


def test_engine_page_refuses_and_prints_no_launch():
    at = run_page("pages/5_Engine.py", LINK)
    said = _said(at)
    assert VLLM_WORDS in said, said
    assert not any("--data-parallel-size 8" in str(c.value) for c in at.code)
