"""A link's GPU layout: ``tensor_parallel_size`` sets the GPUs on pages whose layout knob is ``num_gpus``, and
Home names the GPU count where it names the GPU (QA, issue 27).

URL keys are the CLI's flag names, and ``plan --tensor-parallel-size 4`` plans 4 GPUs (``--num-gpus`` defaults
to tensor parallel x pipeline stages, planner/cli). The Engine page dropped the key without a word and showed
"vllm would refuse to start" for Llama-3.1-70B on one H100. Expected figures are each page's own for the
equivalent ``num_gpus`` link.
"""

from __future__ import annotations

from tests.test_serving_app import run
from tests.tiles import metric_tiles

LLAMA_70B = "meta-llama/Meta-Llama-3.1-70B"
H100 = "nvidia-h100-80gb"


def _tiles(at) -> dict[str, str]:
    assert not at.exception and not at.error, [e.value for e in at.error]
    return {t.label: t.value for t in metric_tiles(at)}


def test_engine_page_reads_tensor_parallel_size_as_the_cli_does():
    by_tp = run("pages/5_Engine.py", {"model": LLAMA_70B, "gpu": H100, "tensor_parallel_size": "4"})
    by_gpus = run("pages/5_Engine.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "4"})
    assert _tiles(by_tp) == _tiles(by_gpus)
    assert _tiles(by_tp)["Max concurrency"] != "0.00x"  # 4 GPUs start; the dropped key planned one
    assert not any("refuse" in w.value for w in by_tp.warning)


def test_engine_page_multiplies_pipeline_stages():
    by_tp = run("pages/5_Engine.py", {"model": LLAMA_70B, "gpu": H100, "tensor_parallel_size": "2",
                                      "pipeline_parallel_size": "2"})
    by_gpus = run("pages/5_Engine.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "4",
                                        "pipeline_parallel_size": "2"})
    assert _tiles(by_tp) == _tiles(by_gpus)


def test_home_reads_it_too():
    assert _tiles(run("app.py", {"model": LLAMA_70B, "gpu": H100, "tensor_parallel_size": "2"})) == _tiles(
        run("app.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "2"}))


def test_disagreeing_and_bad_values_are_named():
    """Each is one link problem (shown as the page's link errors), and the page plans as if the key were absent."""
    at = run("app.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "2", "tensor_parallel_size": "4"})
    said = " ".join(e.value for e in at.error)
    assert "`num_gpus=2` and `tensor_parallel_size=4` disagree" in said and not at.exception
    assert {t.label: t.value for t in metric_tiles(at)} == _tiles(
        run("app.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "2"}))
    bad = run("app.py", {"model": LLAMA_70B, "gpu": H100, "tensor_parallel_size": "lots"})
    assert "`tensor_parallel_size=lots`" in " ".join(e.value for e in bad.error) and not bad.exception
    assert {t.label: t.value for t in metric_tiles(bad)} == _tiles(run("app.py", {"model": LLAMA_70B, "gpu": H100}))


def test_the_key_is_read_once_so_the_widget_can_change_the_layout():
    at = run("app.py", {"model": LLAMA_70B, "gpu": H100, "tensor_parallel_size": "4"})
    assert "tensor_parallel_size" not in at.query_params and at.query_params["num_gpus"] == "4"
    at.number_input(key="num_gpus").set_value(2).run()
    assert not at.error, [e.value for e in at.error]
    assert _tiles(at) == _tiles(run("app.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "2"}))


def test_home_heading_and_longest_context_name_the_gpu_count():
    """With 8 GPUs per replica, Home's heading and its "Longest context" sentence said "H200 SXM 141GB" alone,
    while the banner said "x 8" (QA)."""
    at = run("app.py", {"model": "deepseek-ai/DeepSeek-V3.2", "gpu": "nvidia-h200", "num_gpus": "8"})
    assert not at.exception and not at.error
    assert at.subheader[0].value.endswith("on 8 x NVIDIA H200 SXM 141GB")
    assert any("on 8 x H200 SXM 141GB:" in m.value for m in at.markdown if "Longest context" in m.value)
    one = run("app.py", {"model": LLAMA_70B, "gpu": H100, "num_gpus": "1"})
    assert " x " not in one.subheader[0].value
