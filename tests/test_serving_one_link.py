"""One shared link, one user count (issue 27, item 4): every page that shows users applies the serving
features the link carries and says so on one line, or names what it leaves out.

The link is the review's: Qwen3-VL-8B on an L40S at 16,384 tokens with 4 LoRA slots, EAGLE-3 and 2 images per
request. Each page runs with the parameters Home's navigation would carry to it (:func:`ui.nav.carried_params`),
and its user count is compared with :func:`planner.budget.plan` of the same features (never re-derived here).
The Engine page's figure is vLLM's (image tokens inside ``max_model_len``, no lookahead slots): the test asks
for the line that says so, with the planner's numbers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import get_gpu, get_model_entry, model_spec
from planner.budget import PlanRequest, plan
from planner.serving import LoRAConfig, MultimodalConfig, ServingFeatures, SpeculativeConfig, vision_from_config
from planner.serving.summary import sequence_extras
from ui import feature_line, nav
from ui.format import format_int
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
MODEL = "Qwen/Qwen3-VL-8B-Instruct"
GPU = "nvidia-l40s"
LINK = {"context_len": "16384", "enable_lora": "true", "gpu": GPU, "images_per_request": "2", "max_loras": "4",
        "model": MODEL, "speculative_method": "eagle3"}
"""The review's link (``/?context_len=16384&enable_lora=true&...``)."""

PHRASES = ("4 LoRA slots (rank 16)", "EAGLE-3 (1 draft token)", "2 images per request")
"""What the one line names (the field's terms)."""


def features() -> ServingFeatures:
    """The link's features as the sidebar reads them (vLLM's defaults for the rest)."""
    vision = vision_from_config(dict(get_model_entry(MODEL).config))
    return ServingFeatures(lora=LoRAConfig(max_loras=4, max_lora_rank=16),
                           speculative=SpeculativeConfig(method="eagle3", num_speculative_tokens=1),
                           multimodal=MultimodalConfig(vision=vision, images_per_request=2))


def expected_users(**request) -> int:
    gpu = get_gpu(GPU)
    return plan(model_spec(MODEL), gpu.framework_memory_bytes,
                PlanRequest(context_len=16384, serving=features(), **request), gpu_id=gpu.id).max_concurrent_sequences


def run(page: str, **extra: str) -> AppTest:
    """``page`` opened from Home's navigation link for :data:`LINK` (plus ``extra`` keys)."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    link = {k: [v] for k, v in {**LINK, **extra}.items()}
    for key, values in nav.carried_params(link, model="one", gpu="one").items():
        at.query_params[key] = values if len(values) > 1 else values[0]
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in metric_tiles(at)}


def one_line(at: AppTest) -> str:
    """The caption that names the features (exactly one)."""
    lines = [c.value for c in at.caption if all(p in c.value for p in PHRASES)]
    assert len(lines) == 1, [c.value for c in at.caption]
    return lines[0]


def test_the_planner_prices_the_link_below_the_bare_model():
    gpu = get_gpu(GPU)
    bare = plan(model_spec(MODEL), gpu.framework_memory_bytes, PlanRequest(context_len=16384), gpu_id=gpu.id)
    assert expected_users() < bare.max_concurrent_sequences  # the features cost users (7 vs 9 in the review)
    extras = sequence_extras(features())
    assert extras.lookahead_tokens == 2  # EAGLE-3, 1 draft: the verified draft + its lookahead slot
    assert extras.media_tokens > 0


def test_home_counts_the_features():
    at = run("app.py")
    shown = metrics(at)
    assert shown["Max concurrent sequences"] == format_int(expected_users())
    assert shown["Users at this context"].startswith(f"{format_int(expected_users())} (was ")


def test_concurrency_headline_and_line():
    at = run("pages/3_Concurrency.py")
    assert metrics(at)[get_gpu(GPU).name] == format_int(expected_users())
    assert "each sequence holds its text + " in one_line(at)


def test_gqa_savings_counts_the_features():
    at = run("pages/2_GQA_savings.py")
    shown = metrics(at)
    built = [v for k, v in shown.items() if k.startswith("Max sequences, ") and k.endswith("(as built)")]
    assert built == [format_int(expected_users())]
    one_line(at)


def test_allocation_counts_the_features():
    at = run("pages/6_Allocation.py")
    assert metrics(at)["Naive: users"] == format_int(expected_users())  # each reserves max_model_len = 16,384
    one_line(at)


def test_engine_says_why_its_concurrency_differs():
    at = run("pages/5_Engine.py")
    line = one_line(at)
    assert f"{metrics(at)['Max concurrency']} is vLLM's count of 16,384-token requests" in line  # the figure shown
    extras = sequence_extras(features())
    assert f"the {format_int(extras.media_tokens)} image tokens count inside max_model_len" in line
    assert f"the {format_int(extras.lookahead_tokens)} lookahead slots per sequence are left out" in line


def test_find_carries_the_features():
    at = run("pages/7_Find_a_GPU_setup.py")
    commands = " ".join(c.value for c in at.code)
    assert "--enable-lora" in commands and "eagle3" in commands


@pytest.mark.parametrize("page", ["pages/2_GQA_savings.py", "pages/3_Concurrency.py", "pages/6_Allocation.py"])
def test_a_carried_host_tier_is_named_as_left_out(page):
    at = run(page, kv_offloading_size="64")
    assert "Left out: the host tier `kv_offloading_size` (the GPU keeps its whole KV pool" in one_line(at)


@pytest.mark.parametrize("page", ["pages/2_GQA_savings.py", "pages/3_Concurrency.py", "pages/6_Allocation.py"])
@pytest.mark.parametrize("key", ["max_loras", "images_per_request", "speculative_method", "kv_offloading_size"])
def test_nasty_serving_values_get_a_clear_answer(page, key):
    """The pages that now read the serving keys answer a bad value with a message, never a traceback."""
    for value in ("-1", "nan", "x" * 300):
        at = AppTest.from_file(str(ROOT / page), default_timeout=120)
        for k, v in nav.carried_params({k: [v] for k, v in {**LINK, key: value}.items()}, model="one",
                                       gpu="one").items():
            at.query_params[k] = v if len(v) > 1 else v[0]
        at.run()
        assert not at.exception, (page, key, value, at.exception)
        for error in at.error:
            assert "sidebar" in error.value or "link" in error.value.lower(), error.value


def test_disaggregation_names_the_features_it_leaves_out_and_sizes_the_link_s_length():
    """The Disaggregation page showed users per pool for 4,096 + 512 tokens and said nothing of the link's
    16,384-token context or its features (seen at 1,280 px). It now splits ``context_len`` as Find does
    (prompt 15,884 + output 500) and names the features it leaves out."""
    at = run("pages/8_Disaggregation.py")
    captions = [c.value for c in at.caption]
    left_out = [c for c in captions if c.startswith("Left out: the serving features")]
    assert left_out and all(f"`{k}=" in left_out[0] for k in ("enable_lora", "speculative_method",
                                                              "images_per_request")), captions
    lengths = {w.key: w.value for w in at.number_input if w.key in ("prompt_len", "output_len")}
    assert lengths == {"prompt_len": 16384 - 500, "output_len": 500}
    assert "context_len 16,384 = prompt 15,884 + output 500 tokens" in " ".join(captions)


def _memory_curves_line():
    from ui import feature_line

    feature_line.show_users_line(None, left_out=feature_line.link_features_left_out("these curves are the bare models' memory"))


def test_a_page_that_applies_none_names_the_carried_features():
    """The line a page without the features (Memory curves) would show: the link's switches, named by key."""
    at = AppTest.from_function(_memory_curves_line)
    for key, value in {**LINK, "speculative_method": "off", "kv_offloading_size": "64"}.items():
        at.query_params[key] = value
    at.run()
    assert [c.value for c in at.caption] == [
        "Left out: the serving features `enable_lora=true`, `images_per_request=2`, `kv_offloading_size=64` "
        "(these curves are the bare models' memory)."]


# --------------------------------------------------------------------------
# Home's fix previews plan with the page's serving features (issue 27, QA round)
# --------------------------------------------------------------------------
GEMMA_LINK = {"model": "google/gemma-3-27b-it", "gpu": "nvidia-l40s", "images_per_request": "4"}
"""The QA link: Gemma 3 27B does not fit one L40S; its fixes are fp8 weights and 2 GPUs."""


def _opened(page: str, link: dict[str, str]) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=180)
    for key, values in nav.carried_params({k: [v] for k, v in link.items()}, model="one", gpu="one").items():
        at.query_params[key] = values if len(values) > 1 else values[0]
    at.run()
    assert not at.exception, at.exception
    return at


def _concurrency_by_label(at: AppTest) -> dict[str, str]:
    """Fix button label -> the engine's concurrency its help promises (``"5.19x"``)."""
    out = {}
    for button in at.button:
        words = (button.help or "").split()
        figures = [w.rstrip(".,;") for w in words if w.rstrip(".,;").endswith("x") and w[:1].isdigit()]
        if figures:
            out[button.label] = figures[-1]
    return out


def test_home_fix_previews_give_the_engine_page_s_figures():
    """Before: Home previewed "Weights → fp8" at 5.28x and "GPUs → 2" at 12.25x for the bare model, while the
    Engine page, which prices the 4 images per request, said 5.19x and 11.95x for the same link."""
    home = _concurrency_by_label(_opened("app.py", GEMMA_LINK))
    engine_page = _concurrency_by_label(_opened("pages/5_Engine.py", GEMMA_LINK))
    assert {"Weights → fp8", "GPUs → 2"} <= set(home), home
    assert {label: engine_page.get(label) for label in home} == home, (home, engine_page)


def test_home_budget_labels_are_distinct_and_a_shortfall_is_no_budget():
    at = _opened("app.py", GEMMA_LINK)
    labels = [m.label for m in metric_tiles(at)]
    assert len(labels) == len(set(labels)), labels
    shown = metrics(at)
    assert shown["KV budget per GPU"] == "none"  # weights + overhead exceed the usable memory
    assert shown["KV budget, features off"] == "none"
    assert not any(v.startswith("-") for v in shown.values()), shown


@pytest.mark.parametrize(("page", "key"), [("pages/6_Allocation.py", "context_len"),
                                           ("pages/7_Find_a_GPU_setup.py", "context_len"),
                                           ("pages/7_Find_a_GPU_setup.py", "batch_size"),
                                           ("pages/8_Disaggregation.py", "context_len")])
@pytest.mark.parametrize("value", ["-5", "abc", "0"])
def test_a_bad_carried_length_is_named_not_dropped_in_silence(page, key, value):
    """Allocation and Find dropped ``context_len=-5`` in silence and showed their defaults, while Home said
    why (QA round of issue 27)."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    at.query_params["model"] = "openai/gpt-oss-120b"
    at.query_params[key] = value
    at.run()
    assert not at.exception
    assert any(f"`{key}={value}`" in e.value and "ignored" in e.value for e in at.error), [e.value for e in at.error]


@pytest.mark.parametrize("page", ["pages/2_GQA_savings.py", "pages/3_Concurrency.py", "pages/6_Allocation.py"])
def test_a_budget_page_names_the_link_s_engine_it_does_not_apply(page):
    """A link with engine=sglang: the budget pages count users with the newest vLLM's budget, and say so on their
    users line, where they used to count 7 users beside the Engine page's 3.86x in silence (QA: Qwen3.5-27B on an
    H100 at 32,768 tokens)."""
    at = AppTest.from_file(str(ROOT / page), default_timeout=120)
    for key, value in {"model": "Qwen/Qwen3.5-27B", "gpu": "nvidia-h100-sxm-80gb", "context_len": "32768",
                       "engine": "sglang"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception
    assert any("the link's engine (sglang)" in c.value and "Engine page" in c.value for c in at.caption), \
        [c.value for c in at.caption]


def test_find_applies_the_link_s_engine_so_does_not_name_it():
    at = AppTest.from_file(str(ROOT / "pages/7_Find_a_GPU_setup.py"), default_timeout=120)
    at.query_params["engine"] = "sglang"
    at.run()
    assert not at.exception
    assert not any("the link's engine" in c.value for c in at.caption)
