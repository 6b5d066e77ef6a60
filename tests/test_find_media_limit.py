"""Find's request length is the launch's: text + image tokens, in the position check and the page's caption (QA).

With images per request, Find's launches carry ``--max-model-len`` = the longest text + the images' tokens (Gemma 4
26B, 2,000 + 500 text and 4 images: 3,532), while the page said "limit 2,500 tokens" and the check against the
model's ``max_position_embeddings`` left the image tokens out: 262,000 text tokens + 4 images passed the check and
every setup was then refused by the engine ("max_model_len (263032) is greater than the derived max_model_len").
Expected lengths come from the launch command itself, never typed in.
"""

from __future__ import annotations

import re

import pytest

from model_catalog import get_gpu, model_spec
from planner.cli.entry import build_parser
from planner.cli.serving import serving_from_args
from planner.traffic.find_types import FindRequest
from planner.traffic.reverse import find_setups
from planner.traffic.workload import fixed_workload
from tests.test_serving_app import run

GEMMA, H200 = "google/gemma-4-26B-A4B", "nvidia-h200-sxm"


def _request(prompt: int, output: int, images: int) -> FindRequest:
    """The request ``find --images-per-request`` builds (its serving features as the CLI reads them)."""
    args = build_parser().parse_args(["find", "--model", GEMMA, "--users", "1", "--prompt-len", str(prompt),
                                      "--output-len", str(output), "--images-per-request", str(images)])
    return FindRequest(users=1, workload=fixed_workload(prompt, output), max_gpus=8, kv_cache_dtypes=("auto",),
                       top=1, serving=serving_from_args(args), gpu_ids=(H200,))


def _launched_len(prompt: int, output: int, images: int) -> int:
    result = find_setups(model_spec(GEMMA), [get_gpu(H200)], _request(prompt, output, images))
    return int(re.search(r"--max-model-len (\d+)", result.options[0].launch_command).group(1))


def test_the_position_check_counts_the_image_tokens():
    model = model_spec(GEMMA)
    media = _launched_len(2000, 500, 4) - 2500
    assert media > 0
    text = model.max_position_embeddings - 500 - media + 1  # text fits alone; with the images, one token too long
    with pytest.raises(ValueError, match=f"requests of up to {model.max_position_embeddings + 1:,} tokens"):
        find_setups(model, [get_gpu(H200)], _request(text, 500, 4))
    assert _launched_len(text - 1, 500, 4) == model.max_position_embeddings  # the longest one that fits starts


def test_find_page_caption_states_the_launched_length():
    at = run("pages/7_Find_a_GPU_setup.py", {"model": GEMMA, "users": "64", "prompt_len": "2000",
                                              "output_len": "500", "images_per_request": "4", "gpu_types": H200})
    assert not at.exception and not at.error
    launched = _launched_len(2000, 500, 4)
    caption = next(c.value for c in at.caption if "limit " in c.value)
    assert f"limit {launched:,} tokens (2,500 text + {launched - 2500:,} image and video tokens)" in caption
