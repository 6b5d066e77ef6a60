"""The Disaggregation page (pages/8_Disaggregation.py): AppTest runs compared with planner.scale.plan_disagg.

Displayed numbers are checked against the planner's own return values (never re-derived here); the
DeepSeek-V3.2 DP 8 + EP case is the README's "Prefill / decode pools" example.
"""

from __future__ import annotations

import json

from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines.types import EngineRequest
from planner.scale import PoolRequest, ScaleRequest, plan_disagg
from tests.lazy_tabs import open_tab
from ui.format import format_bytes, format_int
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
PAGE = str(ROOT / "pages" / "8_Disaggregation.py")
V32, H200 = "deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm"


def _run(params: dict) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def _metrics(at: AppTest) -> list[tuple[str, str]]:
    return [(m.label, m.value) for m in metric_tiles(at)]


def _expected(model_id: str, gpu_id: str, *, users: int, scale: ScaleRequest):
    gpu = get_gpu(gpu_id)
    engine = EngineRequest(gpu_name=gpu.name)
    return plan_disagg(model_spec(model_id), gpu_memory_bytes=gpu.framework_memory_bytes,
                       bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=gpu.bf16_dense_tflops,
                       prefill=PoolRequest(engine=engine, scale=scale), decode=PoolRequest(engine=engine, scale=scale),
                       users=users, prompt_len=4096, output_len=512, ttft_ms=2000.0, tpot_ms=50.0)


def test_default_view_shows_both_pools_side_by_side():
    at = _run({})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    heads = [s.value for s in at.subheader]
    assert "Prefill pool" in heads and "Decode pool" in heads
    assert [t.label for t in at.tabs] == ["KV transfer between the pools", "llm-d model-service values"]
    assert [d.value for d in at.dataframe], "the KV transfer tab is open first"
    labels = [label for label, _ in _metrics(at)]
    assert labels.count("GPUs") == 2 and labels.count("Concurrency per replica") == 2
    assert any("llm-d" in c.value or "vllm serve" in c.value for c in at.code)


def test_deepseek_v32_dp8_ep_matches_the_planner():
    at = _run({"model": V32, "gpu": H200, "users": "512", "data_parallel_size": "8",
               "enable_expert_parallel": "true"})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    expected = _expected(V32, H200, users=512, scale=ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    shown = _metrics(at)
    prefill, decode = dict(shown[:len(shown) // 2]), dict(shown[len(shown) // 2:])
    for pool, want in ((prefill, expected.prefill.to_dict()), (decode, expected.decode.to_dict())):
        assert pool["GPUs"] == format_int(want["gpus"])
        assert pool["Replicas"] == format_int(want["replicas"])
        assert pool["tp / dp / ep"] == (f"{want['tensor_parallel_size']} / {want['data_parallel_size']} / "
                                        f"{want['expert_parallel_size']}")
        assert pool["Concurrency per replica"] == format_int(want["max_concurrency"])
        assert pool["Weights per GPU"] == format_bytes(want["weights_bytes_per_gpu"])
    assert prefill["tp / dp / ep"] == "1 / 8 / 8"  # the README's table: 8 DP ranks, EP 8
    text = "\n".join(m.value for m in at.markdown)
    assert format_bytes(expected.kv_transfer_bytes_per_request, "auto") in text
    assert f"{expected.kv_transfer_bytes_per_request:,} B" in text
    assert [s.value for s in at.success] and f"{format_int(expected.to_dict()['gpus'])} GPUs" in at.success[0].value
    codes = [c.value for c in at.code]
    assert any("--enable-expert-parallel" in c and "--kv-transfer-config" in c for c in codes)
    assert not any(c.startswith("# llm-d model-service values") for c in codes)  # its tab is not open yet
    codes = [c.value for c in open_tab(at, "disaggregation_section", "llm-d model-service values").code]
    assert any(c.startswith("# llm-d model-service values") and "prefill:" in c for c in codes)


def test_bad_values_get_a_message_and_the_page_still_draws():
    at = _run({"users": "abc", "tpot_ms": "-5", "enable_expert_parallel": "maybe", "link": "pigeon",
               "data_parallel_size": "1" * 40})
    assert not at.exception, at.exception
    errors = " ".join(e.value for e in at.error)
    warnings = " ".join(w.value for w in at.warning)
    assert "users=abc" in errors and "whole number" in errors
    assert "tpot_ms=-5" in errors and "too small" in errors
    assert "link=pigeon" in errors and "infiniband-ndr" in errors
    assert "enable_expert_parallel=maybe" in warnings
    assert "data_parallel_size" in warnings and "at most 32" in warnings  # the link guard's cap for numbers
    assert "Prefill pool" in [s.value for s in at.subheader]


def test_a_planner_refusal_is_a_message_not_a_traceback():
    at = _run({"model": "meta-llama/Meta-Llama-3-8B", "decode_context_parallel_size": "8"})  # dcp 8 > tp 1
    assert not at.exception, at.exception
    assert at.error and "Could not finish" in at.error[0].value


def test_sglang_flags_on_a_vllm_engine_are_named():
    at = _run({"dp_size": "2"})
    assert not at.exception, at.exception
    assert any("dp_size" in e.value and "SGLang flag" in e.value for e in at.error)


def test_a_custom_gpu_without_tflops_is_a_warning_with_the_way_out():
    from model_catalog.custom import custom_gpu
    from model_catalog.share_codec import encode_gpu

    at = _run({"custom_gpu": encode_gpu(custom_gpu("Lab card", 24, "GiB", 936, 0.5)), "gpu": "custom"})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    assert any("no bf16 TFLOPS figure" in w.value and "catalog GPU" in w.value for w in at.warning)


QWEN235 = "Qwen/Qwen3-235B-A22B"  # 438 GiB of bf16 weights: no single H200 holds them


def test_a_model_over_one_gpu_shows_the_refusal_once_and_the_tensor_parallel_fix():
    """Qwen3-235B on one H200 (tp 1 asked): one warning with the engine's reason, no sizes, no commands, no llm-d
    values, and a button for the smallest tensor-parallel size that starts both pools (the planner's own figure);
    clicking it gives a plan that fits."""
    at = _run({"model": QWEN235, "gpu": H200, "tensor_parallel_size": "1"})
    assert not at.exception, at.exception
    expected = _expected(QWEN235, H200, users=256, scale=ScaleRequest())
    assert not expected.starts and dict(expected.tensor_parallel_fixes) == {"prefill": 4, "decode": 4}
    refusal = expected.prefill.plan.reasons[0]
    shown = [w.value for w in (*at.warning, *at.error, *at.info, *at.success)]
    assert sum(x.count(refusal) for x in shown) == 1
    assert not _metrics(at) and not at.code  # no GPUs, TPOT, negative KV pool or launch commands
    assert not any("GPUs for" in x for x in shown)
    assert [b.label for b in at.button] == ["Tensor parallel → 4"]
    at.button[0].click().run()
    assert not at.exception, at.exception
    assert at.query_params["tensor_parallel_size"] == "4" and at.success and at.code


def test_each_pool_of_its_own_gets_a_button_named_as_the_other_fixes_are():
    """Pools that want different sizes (or a pool with its own input) get one button each, labelled by
    planner.fixes.short_label like every other fix ("Prefill TP → 4"), the help the fix's text."""
    from types import SimpleNamespace

    from ui.scale_view import tensor_parallel_fixes

    result = SimpleNamespace(tensor_parallel_fixes=(("prefill", 4), ("decode", 8)))
    fixes = tensor_parallel_fixes(result, SimpleNamespace(numbers={}))
    assert [(f.label, f.fix.key, f.fix.value, f.starts) for f in fixes] == [
        ("Prefill TP → 4", "prefill_tensor_parallel_size", 4, True),
        ("Decode TP → 8", "decode_tensor_parallel_size", 8, True)]
    assert fixes[0].help == "prefill tensor parallel 4: the smallest size at which the prefill pool starts"
    same = SimpleNamespace(tensor_parallel_fixes=(("prefill", 4), ("decode", 4)))
    assert [f.label for f in tensor_parallel_fixes(same, SimpleNamespace(numbers={}))] == ["Tensor parallel → 4"]
    own = SimpleNamespace(numbers={"decode_tensor_parallel_size": 2})
    assert [f.label for f in tensor_parallel_fixes(same, own)] == ["Prefill TP → 4", "Decode TP → 4"]


def test_the_plan_tells_its_pool_notes_from_its_sizing_notes():
    """planner.scale.plan_disagg names the pools' launch notes (pool_notes: the size chosen when none was given),
    so the page's headline shows those and the transfer section the rest (sizing_notes), not by a text prefix;
    notes (the JSON's key) keeps both, the pools' first."""
    gpu = get_gpu(H200)
    pool = PoolRequest(engine=EngineRequest(gpu_name=gpu.name), scale=ScaleRequest(), auto_tensor_parallel=True)
    result = plan_disagg(model_spec(QWEN235), gpu_memory_bytes=gpu.framework_memory_bytes,
                         bandwidth_gb_s=gpu.bandwidth_gb_s, bf16_dense_tflops=gpu.bf16_dense_tflops, prefill=pool,
                         decode=pool, users=256, prompt_len=4096, output_len=512)
    sizes = {"prefill": result.prefill.plan.layout.tensor_parallel_size,
             "decode": result.decode.plan.layout.tensor_parallel_size}
    assert result.pool_notes == tuple(f"{role}: tensor parallel {sizes[role]}, the size that needs the fewest GPUs for "
                                      "256 users among those at which it starts and meets its target (ties: the "
                                      "smaller; none was given)" for role in ("prefill", "decode"))
    assert result.notes == (*result.pool_notes, *result.sizing_notes)
    assert result.sizing_notes[0].startswith("roofline:") and len(result.sizing_notes) == 3
    assert result.to_dict()["notes"] == list(result.notes) and "pool_notes" not in result.to_dict()


def test_no_tensor_parallel_size_launches_each_pool_at_the_fewest_gpus():
    from planner.scale import plan_scale

    at = _run({"model": QWEN235, "gpu": H200})
    assert not at.exception, at.exception
    gpu = get_gpu(H200)
    for tp, starts in ((2, False), (4, True)):  # the planner's own verdicts at the sizes around the choice
        plan = plan_scale(model_spec(QWEN235), gpu.framework_memory_bytes,
                          EngineRequest(gpu_name=gpu.name, tensor_parallel_size=tp, max_model_len=4608), ScaleRequest())
        assert plan.starts is starts
    shown = [value for label, value in _metrics(at) if label == "tp / dp / ep"]
    assert len(shown) == 2 and all(int(v.split(" / ")[0]) >= 4 for v in shown) and at.success
    for role, value in zip(("prefill", "decode"), shown):  # the rule is said, with the size shown
        tp = value.split(" / ")[0]
        assert any(f"{role}: tensor parallel {tp}, the size that needs the fewest GPUs" in c.value for c in at.caption)


def test_a_pool_over_the_card_is_drawn_by_home_s_rule():
    """The bar of a launch over the card: its terms stack to their own sum past the card line; no extra "Over the
    card" segment counts the excess a second time."""
    from ui.scale_view import pool_bar_html

    expected = _expected(QWEN235, H200, users=256, scale=ScaleRequest())
    rank = expected.decode.plan.engine.limiting_rank
    card = get_gpu(H200).framework_memory_bytes
    html = pool_bar_html(expected.decode, card, "H200")
    assert 'data-segment="Over the card"' not in html and 'data-segment="Weights"' in html
    assert dict(rank.segments(card))["Over the card"] > 0  # the case has an excess to draw


# --------------------------------------------------------------------------
# Engine page: the "Advanced: data / expert / context parallel" block (planner.scale.plan_scale)
# --------------------------------------------------------------------------
ENGINE_PAGE = str(ROOT / "pages" / "5_Engine.py")


def _run_engine(params: dict) -> AppTest:
    at = AppTest.from_file(ENGINE_PAGE, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def test_engine_page_shows_users_per_rank_times_ranks_for_dp8_ep():
    from planner.scale import plan_scale

    at = _run_engine({"model": V32, "gpu": H200, "data_parallel_size": "8", "enable_expert_parallel": "true"})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    gpu = get_gpu(H200)
    expected = plan_scale(model_spec(V32), gpu.framework_memory_bytes,
                          EngineRequest(max_model_len=8192, gpu_name=gpu.name),
                          ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    shown = dict(_metrics(at))
    # README, DP + EP by hand: 4,515 blocks / 128 a request = 35.27x printed per rank; whole requests 35 x 8 = 280
    assert expected.max_concurrency_per_rank == 35.27 and expected.requests_per_rank == 35
    assert shown["Users, all ranks"] == f"{expected.requests_all_ranks:,}" == "280"
    assert shown["Users per rank"] == "35"
    assert shown["Ranks x GPUs each"] == "8 x 1" and shown["Experts per GPU"] == "32 of 256"
    assert any("**35** users per rank (vLLM prints 35.27x) x **8** ranks = **280**" in m.value for m in at.markdown)
    assert "Data / expert / context parallel launch" in [s.value for s in at.subheader]


def test_engine_page_without_scale_flags_has_no_scale_block():
    at = _run_engine({"data_parallel_size": "2"})  # vLLM -dp alone: the page's replicas, as before
    assert not at.exception, at.exception
    assert "Data / expert / context parallel launch" not in [s.value for s in at.subheader]


def test_the_page_s_llm_d_values_are_what_the_cli_prints(capsys):
    from planner.cli import main
    from planner.scale.deploy import disagg_values_yaml

    assert main(["deploy", "--target", "llm-d", "--model", V32, "--gpu", H200, "--users", "512", "--prompt-len",
                 "4096", "--output-len", "512", "--ttft-ms", "2000", "--tpot-ms", "50", "-dp", "8",
                 "--enable-expert-parallel"]) == 0
    expected = _expected(V32, H200, users=512, scale=ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    assert capsys.readouterr().out.strip() == disagg_values_yaml(model_spec(V32), expected,
                                                                 gpu_name=get_gpu(H200).name).strip()


def test_sglang_pools_use_the_memory_nvidia_smi_reports_as_the_cli_does(capsys):
    """SGLang's default mem_fraction_static reads nvidia-smi's total (planner.engines.shared_gpu.reported_memory_bytes);
    the page built its requests without it and showed 7.64 GiB / 0.834 where `disagg` and the Engine page say
    7.72 GiB / 0.835 (QA: Qwen3.5-27B on an H100 at 32,768 tokens)."""
    import json  # noqa: PLC0415

    from planner.cli import main  # noqa: PLC0415

    assert main(["disagg", "--model", "Qwen/Qwen3.5-27B", "--gpu", "nvidia-h100-sxm-80gb", "--engine", "sglang",
                 "--users", "256", "--prompt-len", "4096", "--output-len", "512", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    at = _run({"model": "Qwen/Qwen3.5-27B", "gpu": "nvidia-h100-sxm-80gb", "engine": "sglang"})
    assert not at.exception
    shown = [value for label, value in _metrics(at) if label == "KV pool per GPU"]
    pools = [cli["prefill"]["available_kv_cache_bytes"], cli["decode"]["available_kv_cache_bytes"]]
    assert shown == [format_bytes(b) for b in pools]


def test_a_vision_model_s_pools_carry_vllm_s_default_encoder_profile_as_disagg_does(capsys):
    """vLLM profiles a vision model's encoder unasked (planner.serving.features.with_engine_defaults); `disagg`
    charges it and the page did not (QA: Qwen3-VL-8B on an L40S, 22.28 GiB on the page, 21.02 in the CLI)."""
    import json  # noqa: PLC0415

    from planner.cli import main  # noqa: PLC0415

    assert main(["disagg", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-l40s", "--engine", "vllm",
                 "--users", "256", "--prompt-len", "4096", "--output-len", "512", "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    at = _run({"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-l40s"})
    assert not at.exception
    shown = [value for label, value in _metrics(at) if label == "KV pool per GPU"]
    assert shown == [format_bytes(cli[p]["available_kv_cache_bytes"]) for p in ("prefill", "decode")]


def test_a_text_only_link_sizes_text_pools_and_writes_the_flag_as_disagg_does(capsys):
    """`language_model_only=true` (the CLI's --language-model-only): `disagg` sizes the pools without the tower and
    writes the flag into both launch commands; the page ignored the key and sized and launched the tower (QA:
    Qwen3-VL-8B on an L40S, 21.02 GiB of KV per GPU on the page where the CLI says 23.36, and no flag)."""
    import json  # noqa: PLC0415

    from planner.cli import main  # noqa: PLC0415

    assert main(["disagg", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-l40s", "--engine", "vllm",
                 "--users", "256", "--prompt-len", "4096", "--output-len", "512", "--language-model-only",
                 "--format", "json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    at = _run({"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-l40s", "language_model_only": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = [value for label, value in _metrics(at) if label == "KV pool per GPU"]
    assert shown == [format_bytes(cli[p]["available_kv_cache_bytes"]) for p in ("prefill", "decode")]
    commands = [" ".join(c.value.replace("\\\n", " ").split()) for c in at.code if "vllm serve" in c.value]
    assert commands and all(c.count("--language-model-only") == 1 for c in commands)
    values = open_tab(at, "disaggregation_section", "llm-d model-service values").code
    yaml = next(c.value for c in values if c.language == "yaml")
    assert yaml.count("--language-model-only") == 2  # one per pool


def test_each_pool_s_concurrency_help_speaks_of_what_the_tile_counts():
    """The prefill tile counts prompts held at their peak (each only its prompt's tokens); its help gave vLLM's
    ratio for whole requests as if it were the same figure ("57" beside "memory alone holds 49.57 requests")."""
    from ui.scale_view import pool_metric_values

    result = _expected("Qwen/Qwen3-8B", "nvidia-h100-80gb", users=64, scale=ScaleRequest())
    prefill, decode = pool_metric_values(result.prefill), pool_metric_values(result.decode)
    shown, said = prefill["Concurrency per replica"]
    assert shown == format_int(result.prefill.max_concurrency)
    ratio = result.prefill.to_dict()["max_concurrency_by_memory"]
    assert said.startswith("Prompts one replica prefills at once") and f"{ratio:,.2f}x" in said
    assert decode["Concurrency per replica"][1].startswith("Memory alone holds")


# --- a plan link's num_gpus: Home's 'GPUs per replica' is disagg's --num-gpus (QA) ---------------------------
def test_a_links_num_gpus_sets_the_shared_tensor_parallel_size():
    """From Home with 2 GPUs per replica (Qwen3.6-35B-A3B on H100s), the page sized both pools at tensor parallel
    1 (65.5 GiB of weights, 3 users a replica) without a word. ``disagg --num-gpus`` is the tensor-parallel group
    (planner/cli), so the link's ``num_gpus=2`` plans what ``tensor_parallel_size=2`` plans."""
    base = {"model": "Qwen/Qwen3.6-35B-A3B", "gpu": "nvidia-h100-sxm-80gb", "users": "64"}
    by_gpus = _run({**base, "num_gpus": "2"})
    by_tp = _run({**base, "tensor_parallel_size": "2"})
    assert _metrics(by_gpus) == _metrics(by_tp)
    assert ("tp / dp / ep", "2 / 1 / 1") in _metrics(by_gpus)
    assert not by_gpus.error, [e.value for e in by_gpus.error]


def test_a_links_own_tensor_parallel_size_wins_and_pipeline_stages_are_named():
    base = {"model": "Qwen/Qwen3.6-35B-A3B", "gpu": "nvidia-h100-sxm-80gb", "users": "64"}
    both = _run({**base, "num_gpus": "4", "tensor_parallel_size": "2"})
    assert ("tp / dp / ep", "2 / 1 / 1") in _metrics(both)
    staged = _run({**base, "num_gpus": "4", "pipeline_parallel_size": "2"})
    said = [e.value for e in staged.error]
    assert any("`num_gpus=4` with `pipeline_parallel_size=2` was not read" in s for s in said), said
    bad = _run({**base, "num_gpus": "500"})
    assert any("`num_gpus=500` was not read" in e.value for e in bad.error), [e.value for e in bad.error]


def test_the_transfer_table_has_one_precision_a_column():
    """QA: the link table's "Time per request [ms]" read 31.071, 3.452 ... 24.66 (each value's own decimals)."""
    at = _run({})
    table = at.dataframe[0]  # the KV transfer tab is open first
    assert "Time per request [ms]" in table.value.columns
    columns = json.loads(table.proto.columns)
    assert columns["Time per request [ms]"]["type_config"]["format"] == "%.2f"
    assert columns["GB/s per GPU and direction"]["type_config"]["format"] == "%.1f"


def test_the_transfer_sentence_gives_the_chosen_links_time_as_the_table_shows_it():
    """QA: the sentence said "10.737 ms over `nvlink-...`" where the table beside it showed 10.74 for the same
    figure; the sentence now prints the chosen link's time at the table column's precision."""
    import re

    at = _run({})
    table = at.dataframe[0]  # the KV transfer tab is open first
    shown_as = json.loads(table.proto.columns)["Time per request [ms]"]["type_config"]["format"]
    chosen = table.value[table.value["Chosen"]].iloc[0]
    [sentence] = [m.value for m in at.markdown if "ms over" in m.value]
    said = re.search(r"([\d,.]+) ms over `([^`]+)`", sentence)
    assert said.group(2) == chosen["id"]
    assert said.group(1).replace(",", "") == shown_as % chosen["Time per request [ms]"], (sentence, shown_as)
