"""End-to-end tests in headless Chromium against one real Streamlit server.

What a user does, checked with what the planner says:

* every page opened from a deep link (the first one on the freshly started
  server, before any other request has run a script): no exception, no error,
  the widgets show the link's values, charts drawn;
* the sidebar changed by hand (model, GPU, context): the metrics on screen
  equal ``python -m planner plan ... --format json`` for the same inputs
  (``planner.cli.main`` in-process), formatted with :mod:`ui.format`;
* the Concurrency page's CSV downloaded and parsed with pandas equals the
  planner's concurrency curve;
* the address bar after changes, opened in a fresh browser context, gives
  the same view (same widget values, same metrics).

Server, browser and failure screenshots: ``tests/conftest.py``; settle
signal and widget helpers: ``tests/e2e_helpers.py``. Run alone with
``pytest -m browser``.
"""

from __future__ import annotations

import contextlib
import io
import json

import pandas as pd
import pytest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.budget import PlanRequest, plan
from planner.cli import main as cli_main
from planner.model.kv import attention_variants
from planner.sweep import concurrency_curve
from tests.e2e_helpers import (
    PAGES,
    choose,
    collect,
    open_settled,
    page_now_ms,
    query,
    rerun_latency_ms,
    set_number,
    wait_settled,
)
from ui import data
from ui.format import format_bytes, format_context, format_int

pytestmark = pytest.mark.browser

LLAMA2 = "meta-llama/Llama-2-7b-hf"
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
QWEN = "Qwen/Qwen2.5-7B"
MLA = "deepseek-ai/DeepSeek-V2-Lite"

# One deep link per page, every value different from the page default, so the widgets must come from the URL.
# (path, params, number of plotly charts at least)
DEEP_LINKS: dict[str, tuple[dict, int]] = {
    "/Concurrency": ({"model": QWEN, "gpus": ["nvidia-l4", "nvidia-h100-sxm-80gb"], "num_gpus": 2,
                      "gpu_memory_utilization": 0.85}, 1),
    "/": ({"model": LLAMA2, "gpu": "nvidia-rtx-3090", "weight_dtype": "fp16", "context_len": 4096, "batch_size": 2}, 0),
    "/Memory_curves": ({"models": [LLAMA2, QWEN], "gpus": ["nvidia-l4", "nvidia-a100-sxm-80gb"], "batch_size": 4}, 1),
    "/GQA_savings": ({"model": MLA, "gpu": "nvidia-a100-sxm-80gb", "context_len": 16384}, 3),
    "/Catalog": ({"search": "qwen"}, 0),
    "/Engine": ({"model": QWEN, "gpu": "nvidia-l40s", "engine": "sglang", "context_len": 4096}, 0),
    "/Allocation": ({"model": LLAMA2, "gpu": "nvidia-a10g", "max_model_len": 4096, "users": 50}, 2),
    "/Find_a_GPU_setup": ({"model": QWEN, "users": 20, "prompt_len": 1000, "output_len": 200}, 0),
    "/Disaggregation": ({"model": QWEN, "gpu": "nvidia-h100-sxm-80gb", "users": 64, "prompt_len": 2048}, 0),
}


def _shown(value) -> str | list[str]:
    """A link value as the widget shows it (floats with two decimals, as the number inputs format them)."""
    if isinstance(value, list):
        return [str(v) for v in value]
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def cli_plan(model: str, gpu: str, **flags) -> dict:
    """``python -m planner plan ... --format json``, run in-process; the parsed JSON."""
    argv = ["plan", "--model", model, "--gpu", gpu, "--format", "json"]
    for name, value in flags.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(argv)
    assert code == 0, out.getvalue()
    return json.loads(out.getvalue())


def home_metrics_from_cli(result: dict) -> dict[str, str]:
    """The Home page's metric values for a CLI ``plan`` JSON, through :mod:`ui.format`."""
    per_gpu = " per GPU" if result["num_gpus"] > 1 else ""
    return {
        "Weights" + per_gpu: format_bytes(result["weights_bytes_per_gpu"]),
        "KV per token": format_bytes(result["kv_cache_bytes_per_token"], "auto"),
        "KV per sequence": format_bytes(result["kv_cache_bytes_per_sequence_paged_per_gpu"]),  # as users count it
        "KV budget per GPU": format_bytes(result["kv_cache_budget_bytes"]),
        "Max concurrent sequences": format_int(result["max_concurrent_sequences"]),
        f"Max context at batch {format_int(result['batch_size'])} [tokens]": format_int(result["max_context_len"]),
        "Max context before overheads [tokens]": format_int(result["max_context_len_before_overheads"]),
    }


def errors(shown: dict) -> list[str]:
    return [a["text"] for a in shown["alerts"] if a["kind"] == "error"]


# --------------------------------------------------------------------------
# Deep links (the first test of the session's server: the first link is cold)
# --------------------------------------------------------------------------
def test_pages_cover_every_script():
    assert set(DEEP_LINKS) == set(PAGES)


@pytest.mark.parametrize("path", list(DEEP_LINKS))
def test_every_page_opens_from_a_deep_link(streamlit_server, browser_page, path):
    params, min_charts = DEEP_LINKS[path]
    page = browser_page()
    open_settled(page, streamlit_server.base_url + path + query(**params))
    shown = collect(page)
    assert not shown["exceptions"], shown["exceptions"]
    assert not errors(shown), errors(shown)
    assert shown["title"], "the page drew its title"
    for key, value in params.items():
        assert shown["widgets"].get(key) == _shown(value), (key, shown["widgets"].get(key))
    assert len(shown["charts"]) >= min_charts, shown["charts"]
    for i, chart in enumerate(shown["charts"]):
        assert chart["drawn"] and chart["traces"] and chart["points"], f"chart {i} is empty: {chart}"


# Which model / GPU input each page has: "one" (model, gpu), "many" (models, gpus) or None.
PAGE_INPUTS = {"/": ("one", "one"), "/Memory_curves": ("many", "many"), "/GQA_savings": ("one", "one"),
               "/Concurrency": ("one", "many"), "/Catalog": (None, None), "/Engine": ("one", "one"),
               "/Allocation": ("one", "one"), "/Find_a_GPU_setup": ("one", None), "/Disaggregation": ("one", "one")}
NAV_LABELS = {"/": "Home", "/Memory_curves": "Memory curves", "/GQA_savings": "GQA savings",
              "/Concurrency": "Concurrency", "/Catalog": "Catalog", "/Engine": "Engine",
              "/Allocation": "Allocation", "/Find_a_GPU_setup": "Find a GPU setup", "/Disaggregation": "Disaggregation"}


def _link_for(path: str) -> dict:
    """A deep link to ``path`` naming Qwen2.5-7B on an L4 in the page's own keys."""
    model_mode, gpu_mode = PAGE_INPUTS[path]
    params = {"context_len": 4096} if path in ("/", "/GQA_savings", "/Engine") else {}
    if model_mode:
        params["model" if model_mode == "one" else "models"] = QWEN if model_mode == "one" else [QWEN, LLAMA2]
    if gpu_mode:
        params["gpu" if gpu_mode == "one" else "gpus"] = "nvidia-l4" if gpu_mode == "one" else ["nvidia-l4"]
    if not model_mode:
        params["model"] = QWEN  # a page without the input passes the link's value on
    if not gpu_mode:
        params["gpu"] = "nvidia-l4"
    return params


def _assert_plan_kept(shown: dict, path: str) -> None:
    model_mode, gpu_mode = PAGE_INPUTS[path]
    widgets = shown["widgets"]
    if model_mode == "one":
        assert widgets.get("model") == QWEN, (path, widgets.get("model"), shown["url"])
    elif model_mode == "many":
        assert (widgets.get("models") or [None])[0] == QWEN, (path, widgets.get("models"), shown["url"])
    if gpu_mode == "one":
        assert widgets.get("gpu") == "nvidia-l4", (path, widgets.get("gpu"), shown["url"])
    elif gpu_mode == "many":
        assert (widgets.get("gpus") or [None])[0] == "nvidia-l4", (path, widgets.get("gpus"), shown["url"])
    assert "Qwen2.5-7B" in shown["url"], (path, shown["url"])


def test_navigation_labels_home_and_hides_streamlits_own_list(streamlit_server, browser_page):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/Concurrency" + query(model=QWEN))
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert sidebar.locator('[data-testid="stSidebarNav"]').count() == 0
    links = [sidebar.get_by_role("link", name=label) for label in NAV_LABELS.values()]
    assert all(link.count() >= 1 for link in links)


@pytest.mark.parametrize("path", list(DEEP_LINKS))
def test_a_deep_link_survives_every_page_switch(streamlit_server, browser_page, path):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + path + query(**_link_for(path)))
    _assert_plan_kept(collect(page), path)
    order = list(DEEP_LINKS)
    for target in order[order.index(path) + 1:] + order[:order.index(path)]:
        page.locator('[data-testid="stSidebar"]').get_by_role("link", name=NAV_LABELS[target]).first.click()
        page.wait_for_function("path => location.pathname === path", arg=target, timeout=30_000)
        wait_settled(page)
        shown = collect(page)
        assert not shown["exceptions"], (path, target, shown["exceptions"])
        _assert_plan_kept(shown, target)


def test_gqa_page_from_deep_link_shows_planner_values(streamlit_server, browser_page):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/GQA_savings" + query(model=QWEN, gpu="nvidia-h100-sxm-80gb",
                                                                          context_len=32768))
    gpu = get_gpu("nvidia-h100-sxm-80gb")
    expected = {}
    for v in attention_variants(model_spec(QWEN)):
        p = plan(v.model, gpu.framework_memory_bytes, PlanRequest(context_len=32768), gpu_id=gpu.id)
        tag = f"{v.name} (as built)" if v.as_built else v.name
        expected[f"KV per token, {tag}"] = format_bytes(p.kv_cache_bytes_per_token, "auto")
        expected[f"Max sequences, {tag}"] = format_int(p.max_concurrent_sequences)
    assert collect(page)["metrics"] == expected


# --------------------------------------------------------------------------
# Sidebar changes vs the CLI
# --------------------------------------------------------------------------
def test_sidebar_changes_match_the_cli_json(streamlit_server, browser_page, report_figures):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/")
    before = collect(page)
    assert before["widgets"]["model"] == LLAMA3 and before["metrics"] == home_metrics_from_cli(
        cli_plan(LLAMA3, "nvidia-h100-sxm-80gb"))

    latency = {}
    for key, action in (("model", lambda: choose(page, "model", QWEN)),
                        ("gpu", lambda: choose(page, "gpu", "nvidia-l40s")),
                        ("context_len", lambda: set_number(page, "context_len", 20000)),
                        ("batch_size", lambda: set_number(page, "batch_size", 3))):
        latency[key] = round(rerun_latency_ms(page, action()))
    report_figures.append(f"e2e Home rerun latency after each sidebar change [ms]: {latency}")

    shown = collect(page)
    assert not shown["exceptions"] and not errors(shown), shown["alerts"]
    widgets = shown["widgets"]
    assert (widgets["model"], widgets["gpu"], widgets["context_len"], widgets["batch_size"]) == (
        QWEN, "nvidia-l40s", "20000", "3")
    expected = cli_plan(QWEN, "nvidia-l40s", context_len=20000, batch_size=3, num_gpus=1, weight_dtype="bf16",
                        kv_cache_dtype="auto", gpu_memory_utilization=0.9, block_size=16)
    assert shown["metrics"] == home_metrics_from_cli(expected)
    for part in ("model=Qwen%2FQwen2.5-7B", "gpu=nvidia-l40s", "context_len=20000", "batch_size=3"):
        assert part in page.url, page.url


# --------------------------------------------------------------------------
# CSV download
# --------------------------------------------------------------------------
def test_concurrency_csv_download_equals_the_planner(streamlit_server, browser_page, tmp_path):
    gpus = ["nvidia-rtx-4090", "nvidia-a100-sxm-80gb"]
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/Concurrency" + query(model=QWEN, gpus=gpus, num_gpus=2,
                                                                          gpu_memory_utilization=0.8))
    before = page_now_ms(page)
    page.get_by_role("tab", name="Table by context length").click()  # the CSV sits with its table (a lazy tab)
    wait_settled(page, after_ms=before)
    with page.expect_download(timeout=30_000) as info:
        page.locator(".st-key-download_csv button").click()
    download = info.value
    assert download.suggested_filename == "max_concurrent_sequences.csv"
    target = tmp_path / download.suggested_filename
    download.save_as(target)
    table = pd.read_csv(target)

    spec = model_spec(QWEN)
    contexts = data.table_contexts(spec)
    request = PlanRequest(context_len=8192, num_gpus=2, gpu_memory_utilization=0.8)
    assert list(table.columns) == ["gpu_id", "gpu", *(f"{c} tokens" for c in contexts)]
    assert list(table["gpu_id"]) == gpus
    for gpu_id in gpus:
        gpu = get_gpu(gpu_id)
        row = table[table["gpu_id"] == gpu_id].iloc[0]
        assert row["gpu"] == gpu.name
        expected = concurrency_curve(spec, gpu.framework_memory_bytes, request, contexts, gpu.id)
        assert [int(row[f"{c} tokens"]) for c in contexts] == list(expected)


# --------------------------------------------------------------------------
# The copied link is the view
# --------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/GQA_savings", "/Memory_curves"])
def test_copied_link_reproduces_the_view_in_a_fresh_context(streamlit_server, browser_page, path):
    page = browser_page()
    open_settled(page, streamlit_server.base_url + path)
    if path == "/GQA_savings":
        changes = (lambda: choose(page, "model", LLAMA2), lambda: choose(page, "gpu", "nvidia-rtx-3090"),
                   lambda: set_number(page, "context_len", 2048), lambda: set_number(page, "num_gpus", 2))
    else:
        changes = (lambda: set_number(page, "batch_size", 8), lambda: set_number(page, "gpu_memory_utilization", 0.8))
    for change in changes:
        rerun_latency_ms(page, change())
    before = collect(page)
    assert not before["exceptions"] and not errors(before)
    link = page.url

    copy = browser_page()
    open_settled(copy, link)
    after = collect(copy)
    assert after["widgets"] == before["widgets"]
    assert after["metrics"] == before["metrics"]
    assert [a["text"] for a in after["alerts"]] == [a["text"] for a in before["alerts"]]
    assert [(c["traces"], c["points"]) for c in after["charts"]] == [(c["traces"], c["points"]) for c in before["charts"]]
    assert after["url"] == link, "opening the link does not rewrite it"


def test_folding_the_custom_panel_keeps_its_codes_in_the_share_link(streamlit_server, browser_page):
    # The panel is a lazy expander: folded, its bound link-code inputs are not drawn, and Streamlit would
    # take their parameters out of the URL. The share link must keep them (ui/custom_panel.py).
    from model_catalog import get_model_entry
    from model_catalog.custom import read_custom_config
    from model_catalog.share_codec import encode_model

    code = encode_model(read_custom_config(get_model_entry("meta-llama/Meta-Llama-3-8B").config, "my-org/llama-ft"))
    page = browser_page()
    open_settled(page, streamlit_server.base_url + "/" + query(model="custom", custom_model=code))
    for _ in range(2):  # unfold (its inputs drawn), then fold again
        before = page.evaluate("performance.now()")
        page.get_by_text("Custom model & GPU").click()
        wait_settled(page, after_ms=before)
    rerun_latency_ms(page, set_number(page, "batch_size", 3))
    assert "custom_model=" in page.url, page.url

    copy = browser_page()
    open_settled(copy, page.url)
    shown = collect(copy)
    assert not shown["exceptions"] and not errors(shown)
    assert copy.locator("h3").first.inner_text().startswith("my-org/llama-ft")
