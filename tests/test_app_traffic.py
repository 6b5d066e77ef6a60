"""AppTest runs of the traffic pages (Allocation, Find a GPU setup), seeded through the URL.

Displayed numbers are compared with the planner's output for the same inputs,
passed through the same ui helpers (never re-derived here).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from model_catalog import model_spec, served_model_spec
from model_catalog.gpus import get_gpu, load_gpus
from planner.budget import PlanRequest
from tests.lazy_tabs import open_tab
from ui import traffic
from ui.format import format_int
from ui.number_fields import DEFAULT_USERS
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
ALLOCATION = "pages/6_Allocation.py"
FIND = "pages/7_Find_a_GPU_setup.py"
LLAMA3 = "meta-llama/Meta-Llama-3-8B"
LLAMA70 = "meta-llama/Llama-3.1-70B"
H100 = "nvidia-h100-sxm-80gb"


def run_page(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / page), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in metric_tiles(at)}


def check_allocation(at: AppTest) -> None:
    """Seeded link: 8K limit, 800-token mean, 500-token prefix on half the requests, 300 users, seed 1."""
    workload = traffic.build_workload(600, 1500, 200, 500, 8192)
    view = traffic.allocation_view(
        model_spec(LLAMA3), get_gpu(H100), PlanRequest(context_len=8192), mean_len=800, prefix_len=500,
        prefix_hit_fraction=0.5, workload=workload, users=300, seed=1, num_samples=4, swap_space_gib=4.0,
        host_link_gb_s=31.5)
    def seen(label: str) -> tuple[dict[str, str], list[dict]]:
        open_tab(at, "allocation_section", label)
        assert not at.exception, [e.value for e in at.exception]
        return metrics(at), [json.loads(el.proto.spec) for el in at.get("plotly_chart")]

    # the lazy tabs: a rerun draws only the open tab's charts, and every tab's figures match the view
    expected = {"Naive vs paged": (traffic.allocation_metric_values(view), 2),
                "Your traffic": (traffic.simulation_metric_values(view), 1),
                "Prefix caching": (traffic.prefix_metric_values(view.prefix), 0),
                "Parallel sampling": (traffic.sampling_metric_values(view.sampling), 1),
                "KV-cache quantization": ({}, 1), "Swap / offload": (traffic.swap_metric_values(view.swap), 0)}
    for label, (values, num_charts) in expected.items():
        shown, figures = seen(label)
        for name, (value, _) in values.items():
            assert shown[name] == value, (label, name)
        assert ("Naive: users" in shown) == (label == "Naive vs paged"), label  # each tab its own figures
        assert len(figures) == num_charts and all(fig["data"] for fig in figures), label
    shown, _ = seen("Naive vs paged")
    assert shown["Naive: unused"] == "90.2%"  # 1 - 800/8192
    assert shown["Naive: users"] == format_int(view.comparison.naive.max_sequences)
    assert any("31 of 32" in m.value or "of 32" in m.value for m in at.markdown)


def check_find(at: AppTest) -> None:
    """Seeded link: the issue's case, 200 users x (2,000 + 500) tokens of Llama-3.1-70B."""
    from planner.traffic.find_types import FindRequest
    from planner.traffic.reverse import find_setups

    # LLAMA70 is an alias: the page plans the entry's numbers under that id, so its commands serve it
    expected = find_setups(served_model_spec(LLAMA70), list(load_gpus().values()),
                           FindRequest(users=200, prompt_len=2000, output_len=500, max_gpus=8, top=traffic.FIND_TOP,
                                       engine="vllm", alternative_weight_dtype="fp8"))  # the page's default engine
    table = at.dataframe[0].value
    shown = expected.options[:traffic.FIND_PAGE_ROWS]  # the first page
    assert list(table["GPU"]) == [s.gpu_name for s in shown]
    assert list(table["USD per hour"]) == [s.price_per_hour for s in shown]
    assert list(table["Max users"]) == [s.max_concurrent_sequences for s in shown]
    assert list(table["Launch command"]) == [s.launch_command for s in shown]
    assert at.success[0].value == traffic.best_text(expected)
    assert not at.get("plotly_chart") and any(c.language == "bash" for c in at.code)  # the Launch tab, open first
    open_tab(at, "find_section", "Throughput and cost")  # its chart draws when its tab opens (ui.views.lazy_tabs)
    assert not at.exception, [e.value for e in at.exception]
    figures = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    assert len(figures) == 1 and figures[0]["data"]
    assert "Upper-bound estimate" in at.warning[0].value


SEEDED = {
    ALLOCATION: ({"model": LLAMA3, "gpu": H100, "max_model_len": "8192", "mean_len": "800", "prefix_len": "500",
                  "prefix_hit_fraction": "0.5", "users": "300", "seed": "1"}, check_allocation),
    FIND: ({"model": LLAMA70, "users": "200", "prompt_len": "2000", "output_len": "500", "max_gpus": "8"}, check_find),
}


@pytest.mark.parametrize("page", sorted(SEEDED))
def test_traffic_page_from_deep_link(page):
    params, check = SEEDED[page]
    at = run_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    check(at)


def test_a_link_opens_its_allocation_tab():
    """The open tab is in the link (ui.views.lazy_tabs binds it): a copied link opens the same tab, and a label
    that is no tab opens the first one."""
    at = run_page(ALLOCATION, {"allocation_section": "KV-cache quantization"})
    assert not at.exception and not at.error
    assert any("Quality trade-off" in t.value.columns for t in at.table)
    assert len(at.get("plotly_chart")) == 1  # the KV dtype bars alone
    at = run_page(ALLOCATION, {"allocation_section": "prefix caching"})  # QA: the wrong case was dropped silently
    assert not at.exception and not at.error
    assert len(at.get("plotly_chart")) == 2 and "allocation_section" not in at.query_params
    (warning,) = [w.value for w in at.warning if "allocation_section" in w.value]
    assert "names no tab of this page (“prefix caching”)" in warning and "“Prefix caching”" in warning
    at = run_page(ALLOCATION, {"allocation_section": "[log in](https://evil.example)"})  # echoed inert
    (warning,) = [w.value for w in at.warning if "allocation_section" in w.value]
    assert "](https://evil" not in warning and "\\[log in\\]" in warning


@pytest.mark.parametrize("page", sorted(SEEDED))
def test_traffic_page_with_defaults(page):
    at = run_page(page, {})
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    if page == FIND:  # its one chart sits in the Throughput and cost tab
        open_tab(at, "find_section", "Throughput and cost")
        assert not at.exception, [e.value for e in at.exception]
    assert at.get("plotly_chart")


def test_find_nothing_fits_is_a_warning_with_the_closest_option():
    at = run_page(FIND, {"model": LLAMA70, "users": "100000", "max_gpus": "1"})
    assert not at.exception and not at.error
    text = at.warning[0].value
    assert "Nothing fits" in text and "Closest" in text and "Try" in text
    assert list(at.dataframe[0].value["Fits"]) == [False]


def test_find_with_a_distribution_needs_max_model_len():
    at = run_page(FIND, {"model": LLAMA3, "prompt_p95": "4000"})
    assert "needs max_model_len" in " ".join(e.value for e in at.error)
    at = run_page(FIND, {"model": LLAMA3, "prompt_p95": "4000", "max_model_len": "8192", "users": "50"})
    assert not at.exception and not at.error
    assert at.success


@pytest.mark.parametrize("page, params, phrases", [
    (ALLOCATION, {"mean_len": "abc"}, ["mean_len=abc", "sidebar"]),
    (ALLOCATION, {"mean_len": "9000", "max_model_len": "8192"}, ["raise max_model_len", "sidebar"]),
    (ALLOCATION, {"prompt_len": "800", "prompt_p95": "100"}, ["must exceed the mean"]),
    (FIND, {"kv_cache_dtypes": ["fp8", "fp7"]}, ["kv_cache_dtypes=fp7"]),
    (FIND, {"users": "0"}, ["users=0", "too small"]),
])
def test_bad_links_give_clear_errors(page, params, phrases):
    at = run_page(page, params)
    assert not at.exception, [e.value for e in at.exception]
    errors = " ".join(e.value for e in at.error)
    for phrase in phrases:
        assert phrase in errors, errors


def test_find_page_includes_the_sidebar_custom_gpu():
    from model_catalog.custom import custom_gpu
    from model_catalog.share_codec import encode_gpu

    code = encode_gpu(custom_gpu("Cheap 24G", 24, "GiB", 900.0, 0.44))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "pages" / "7_Find_a_GPU_setup.py"),
                           default_timeout=60)
    for key, value in {"model": "meta-llama/Meta-Llama-3.1-8B", "users": "2", "prompt_len": "18000",
                       "output_len": "2000", "custom_gpu": code}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception and not at.error
    # $0.44/h undercuts every catalog GPU that holds two 20,000-token users.
    assert "Cheapest: 1 x Cheap 24G" in at.success[0].value


def test_allocation_takes_the_plans_context_len_when_the_link_has_no_max_model_len():
    """QA: a Home link at 16K opened Allocation at its own 8,192 default; the plan's length now carries over."""
    at = run_page("pages/6_Allocation.py", {"model": "openai/gpt-oss-120b", "gpu": "nvidia-h200-sxm",
                                            "context_len": "16384"})
    assert not at.exception
    assert at.number_input(key="max_model_len").value == 16384
    at = run_page("pages/6_Allocation.py", {"model": "openai/gpt-oss-120b", "gpu": "nvidia-h200-sxm",
                                            "context_len": "16384", "max_model_len": "4096"})
    assert at.number_input(key="max_model_len").value == 4096  # its own key wins


def test_find_gpu_types_filter_from_the_link():
    """Issue "One link, one answer" item 6: the sidebar's "GPU types" (URL key ``gpu_types``, as ``find --gpu-types``)
    searches only those types; an alias in the link resolves to the catalog id."""
    at = run_page(FIND, {"model": LLAMA3, "users": "20", "gpu_types": "h100"})
    assert not at.exception
    [box] = [m for m in at.multiselect if m.label == "GPU types"]
    assert box.value == [H100]
    table = at.dataframe[0].value
    assert set(table["GPU"]) == {get_gpu(H100).name}


def test_find_gpu_types_picker_shows_names_and_keeps_ids_in_the_url():
    """QA round (disagg-tp): the "GPU types" picker showed raw ids (``nvidia-l40s``) while the grid shows names; it
    shows the catalog names now, and the URL keeps the ids."""
    at = run_page(FIND, {"model": LLAMA3, "users": "20", "gpu_types": "h100"})
    [box] = [m for m in at.multiselect if m.label == "GPU types"]
    assert get_gpu(H100).name in box.options and H100 not in box.options
    assert box.value == [H100] and box.format_func(H100) == get_gpu(H100).name
    box.select("nvidia-l40s").run()
    assert not at.exception
    assert at.query_params["gpu_types"] == [H100, "nvidia-l40s"]
    assert set(at.dataframe[0].value["GPU"]) <= {get_gpu(H100).name, get_gpu("nvidia-l40s").name}


def test_find_takes_a_plan_links_context_and_batch_only_when_carried():
    """Issue "One link, one answer" item 6: arriving from Home without plan keys, Find shows its own defaults
    (the pages' shared ``DEFAULT_USERS``, 2,000 + 500 tokens); a link with ``context_len`` (and no prompt/output lengths) splits it into
    prompt = context - 500 output, and ``batch_size`` (without ``users``) becomes the users. Find's own keys win."""
    def inputs_of(at):
        return {n.label: n.value for n in at.number_input}

    at = run_page(FIND, {"model": LLAMA3})
    values = inputs_of(at)
    assert (values["Concurrent users"], values["Prompt length, mean [tokens]"],
            values["Output length, mean [tokens]"]) == (DEFAULT_USERS, 2000, 500)
    at = run_page(FIND, {"model": LLAMA3, "context_len": "4096", "batch_size": "64"})
    assert not at.exception
    values = inputs_of(at)
    assert (values["Concurrent users"], values["Prompt length, mean [tokens]"],
            values["Output length, mean [tokens]"]) == (64, 3596, 500)
    assert any("context_len 4,096 = prompt 3,596 + output 500" in c.value for c in at.sidebar.caption)
    assert "64 users" in at.subheader[0].value
    assert "prompt_len" not in at.query_params and "users" not in at.query_params  # defaults stay out of the URL
    at = run_page(FIND, {"model": LLAMA3, "context_len": "4096", "output_len": "100", "batch_size": "64",
                         "users": "10"})
    values = inputs_of(at)
    assert (values["Concurrent users"], values["Prompt length, mean [tokens]"],
            values["Output length, mean [tokens]"]) == (10, 2000, 100)


def test_allocation_with_images_names_the_feature_tokens_its_figures_count():
    """QA round (Qwen3-VL-8B, 2 images, EAGLE-3): "a sequence of 800 tokens fills 2 and leaves 30 of 32 empty"
    (94 % empty) sat beside the table's "Naive: unused 84.5 %", which counts each sequence's 2,054 image and
    draft tokens; the chart title said "sequences of 800 tokens". Both now name those tokens."""
    link = {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-l40s", "images_per_request": "2",
            "speculative_method": "eagle3", "context_len": "16384"}
    at = run_page(ALLOCATION, link)
    assert not at.exception and not at.error, [e.value for e in at.error]
    texts = [m.value for m in at.markdown]
    assert not any("of 32** empty" in t for t in texts), texts
    assert any("the serving features add" in t for t in texts), texts
    titles = [json.loads(c.proto.spec)["layout"].get("title", {}).get("text", "") for c in at.get("plotly_chart")]
    assert any(t.startswith(("1 sequence of 800 + 2,054 tokens", "7 sequences of 800 + 2,054 tokens")) for t in titles), titles
    plain = run_page(ALLOCATION, {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-l40s", "context_len": "16384"})
    assert any("of 32** empty" in m.value for m in plain.markdown)  # text only: the 32-slice picture stays


def test_allocation_traffic_takes_a_plans_batch_size_and_says_so():
    """QA: a link from Home with ``batch_size=8`` opened Allocation with its own 200 users and no word; a bad
    ``batch_size`` was dropped in silence. The batch is the sampled traffic's users (Find does the same), the
    sidebar says so, and a bad value gets the page's message; the link's own ``users`` wins."""
    at = run_page(ALLOCATION, {"model": LLAMA3, "gpu": H100, "batch_size": "8"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key="users").value == 8
    assert any("batch_size 8 = 8 concurrent users" in c.value for c in at.sidebar.caption)
    own = run_page(ALLOCATION, {"model": LLAMA3, "gpu": H100, "batch_size": "8", "users": "40"})
    assert own.number_input(key="users").value == 40
    assert not any("batch_size" in c.value for c in own.sidebar.caption)
    bad = run_page(ALLOCATION, {"model": LLAMA3, "gpu": H100, "batch_size": "0"})
    assert not bad.exception
    said = " ".join(e.value for e in bad.error)
    assert "batch_size=0" in said and "its own traffic's users" in said, said
    assert bad.number_input(key="users").value == traffic.TRAFFIC_FIELDS["users"].default


def test_an_out_of_range_users_gives_way_to_the_links_batch_size_and_the_message_says_so():
    """QA: ``batch_size=8&users=0`` fell back to the field's default 200 users ("Showing the default 200 instead"):
    a ``users`` out of range is as good as none, so the link's batch_size is the users, and the message names the
    value the page used. Find takes the batch the same way (one rule, ``users_from_link``)."""
    for page in (ALLOCATION, FIND):
        at = run_page(page, {"model": LLAMA3, "gpu": H100, "batch_size": "8", "users": "0"})
        assert not at.exception
        assert at.number_input(key="users").value == 8, page
        said = " ".join(e.value for e in at.error)
        assert "`users=0` is too small" in said and "Showing the link's batch_size 8 instead" in said, said
        assert "200" not in said, said


def test_a_bad_link_value_names_the_page_default_it_shows():
    """Allocation's prompt length defaults to 600 (not the field's 2,000): a bad ``prompt_len`` said "Showing the
    default 2,000 instead" above a field showing 600."""
    at = run_page(ALLOCATION, {"model": LLAMA3, "gpu": H100, "prompt_len": "0"})
    shown = at.number_input(key="prompt_len").value
    said = " ".join(e.value for e in at.error)
    assert f"Showing this page's default {shown:,} instead" in said, (shown, said)


def test_a_batch_size_the_plan_refuses_is_not_carried_into_users():
    """QA: ``batch_size=100000`` (over the plan's 65,536) was reported "too large, so it was ignored" while
    Allocation's and Find's users took it (100,000): a value the plan's own check ignores is not carried."""
    for page in (ALLOCATION, FIND):
        at = run_page(page, {"model": LLAMA3, "gpu": H100, "batch_size": "100000"})
        assert not at.exception
        assert any("batch_size=100000" in e.value for e in at.error), (page, [e.value for e in at.error])
        assert at.number_input(key="users").value == traffic.TRAFFIC_FIELDS["users"].default, page
        assert not any("batch_size 100,000" in c.value for c in at.sidebar.caption), page


def test_allocation_text_of_deepseek_v4_names_its_pool_waste_not_one_block_per_sequence():
    """QA: V4's tiles read "Paged: unused 83.4%" and the caption "waste under one block per sequence" where
    each cache group wastes up to a block and vLLM keeps one beyond each window."""
    from types import SimpleNamespace

    from planner.traffic.allocation import allocation_for_model

    gpu = get_gpu("nvidia-h200-sxm")
    c = allocation_for_model(model_spec("deepseek-ai/DeepSeek-V4-Flash"), gpu.framework_memory_bytes,
                             PlanRequest(context_len=1024, num_gpus=4), mean_len=800, gpu_id=gpu.id)
    values = traffic.allocation_metric_values(SimpleNamespace(comparison=c))
    assert "under one block per sequence" not in values["Paged: unused"][1]
    assert "fp8_ds_mla" in values["Paged: unused"][1] and "fp8_ds_mla" in values["Naive: unused"][1]
    assert "under one block per sequence" not in traffic.allocation_caption(c)
    llama = allocation_for_model(model_spec(LLAMA3), get_gpu(H100).framework_memory_bytes,
                                 PlanRequest(context_len=8192), mean_len=800)
    assert "waste under one block per sequence" in traffic.allocation_caption(llama)
