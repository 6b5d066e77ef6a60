"""The Find page's setup kinds and the Engine page's headline under data / expert / context parallel flags
(issue "Serve at scale"), in AppTest. Shown figures are compared with the planner's for the same inputs.
"""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from model_catalog import model_spec
from model_catalog.gpus import get_gpu
from planner.engines.types import EngineRequest
from planner.scale import ScaleRequest, plan_scale
from ui.format import md_cell
from tests.tiles import metric_tiles

ROOT = Path(__file__).resolve().parents[1]
FIND = str(ROOT / "pages" / "7_Find_a_GPU_setup.py")
ENGINE_PAGE = str(ROOT / "pages" / "5_Engine.py")
V32, H200 = "deepseek-ai/DeepSeek-V3.2", "nvidia-h200-sxm"
V32_500 = {"model": V32, "users": "500", "prompt_len": "2000", "output_len": "500", "gpu_types": H200,
           "max_gpus": "16", "kv_cache_dtypes": "auto"}


def _run(page: str, params: dict) -> AppTest:
    at = AppTest.from_file(page, default_timeout=120)
    for key, value in params.items():
        at.query_params[key] = value
    return at.run()


def _codes(at: AppTest) -> list[str]:
    return [c.value for c in at.code]


def test_find_page_shows_each_kind_and_the_chosen_setups_commands():
    at = _run(FIND, V32_500)
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    assert {"DP+EP", "DCP", "P/D"} <= set(table["Kind"]) and {"TP", "TP+DP"} & set(table["Kind"])
    tp = table[table["Setup kind"] == "TP"]  # a TP row of several replicas says so (TP+DP)
    assert list(tp["Kind"]) == ["TP+DP" if r > 1 else "TP" for r in tp["replicas"]]
    assert set(table["Setup kind"]) == {"TP", "DP+EP", "DCP", "disaggregated"}  # the CSV spells it out
    choice = at.selectbox(key="find_choice")  # its options are the setups' labels (ui/find_scale_view.py)
    assert choice.value == choice.options[0] and len(choice.options) == len(table)
    first_command = table["Launch command"].iloc[0]
    assert any(code.replace(" \\\n  ", " ") == first_command for code in _codes(at))

    wide = next(i for i, (k, g) in enumerate(zip(table["Setup kind"], table["GPUs"])) if k == "DP+EP" and g == 16)
    choice.set_value(choice.options[wide]).run()
    assert not at.exception
    nodes = next(c for c in _codes(at) if c.startswith("# serve"))
    assert "--headless" in nodes and "--data-parallel-start-rank 8" in nodes
    assert any(c.startswith("# llm-d model-service values") and "workers: 2" in c for c in _codes(at))
    assert any(m.value.startswith("**DP+EP**: 16 x") and "on 2 nodes" in m.value for m in at.markdown)

    split = next(i for i, k in enumerate(table["Setup kind"]) if k == "disaggregated")
    at.selectbox(key="find_choice").set_value(at.selectbox(key="find_choice").options[split]).run()
    assert not at.exception
    roles = next(c for c in _codes(at) if c.startswith("# prefill"))
    assert "# decode" in roles and "NixlConnector" in roles
    pools = at.dataframe[1].value  # the table, then the two pools
    assert list(pools.columns) == ["", "Prefill", "Decode"] and pools.iloc[0, 0] == "GPUs"


def test_find_page_setup_kinds_from_the_link():
    at = _run(FIND, {**V32_500, "setup_kinds": ["tp", "DP EP"]})  # an alias, and DP+EP with its "+" read as a space
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key="setup_kinds").value == ["TP", "DP+EP"]
    assert set(at.dataframe[0].value["Setup kind"]) == {"TP", "DP+EP"}
    assert set(at.dataframe[0].value["Kind"]) <= {"TP", "TP+DP", "DP+EP"}
    # -tp 2 -dp 4 holds the most users of the $31.92/h launches now that each rank's MoE layers are charged the
    # gathered batch (planner/engines/vllm_moe_dispatch.py): 1,016 against -dp 8's 896
    assert "Cheapest: 8 x H200" in at.success[0].value and "DP+EP: 4 ranks of 2 GPUs" in at.success[0].value


def test_engine_page_headline_describes_the_dp_ep_launch():
    """Before: with -dp 8 --enable-expert-parallel the top planned one TP-1 replica ("vllm would refuse to start",
    627.82 GiB of weights on one GPU) while the block below fitted. Now the verdict, the metrics, the printed lines
    and the launch command are the launch's: one rank of it, as ``plan -dp 8`` prints it."""
    at = _run(ENGINE_PAGE, {"model": V32, "gpu": H200, "data_parallel_size": "8", "enable_expert_parallel": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu = get_gpu(H200)
    plan = plan_scale(model_spec(V32), gpu.framework_memory_bytes, EngineRequest(max_model_len=8192, gpu_name=gpu.name),
                      ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    assert not any("refuse" in w.value for w in at.warning)
    assert "vllm starts" in at.success[0].value and f"{plan.max_concurrency_per_rank:.2f}x" in at.success[0].value
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown["Max concurrency"] == f"{plan.max_concurrency_per_rank:.2f}x" == "35.27x"  # README: DP + EP by hand
    assert shown["KV cache size [tokens, as printed]"] == f"{plan.engine_kv_cache_tokens:,}"
    assert shown["Users, all ranks"] == "280"  # whole requests: 35 per rank x 8 (vLLM prints 35.27x per rank)
    assert any("8 data-parallel ranks × tensor parallel 1, experts over 8 GPUs = 8 GPUs" in c.value
               for c in at.caption)
    assert any("Model loading took 94.77" in c for c in _codes(at))
    assert any("--data-parallel-size 8" in c and "--enable-expert-parallel" in c for c in _codes(at))


def test_engine_page_bad_scale_flags_fall_back_to_one_replica_with_a_message():
    """A -dcp that does not divide tp is the planner's to refuse: one tensor-parallel replica is planned instead.
    (Expert parallel on a dense model, the former case here, is vLLM's own refusal:
    tests/test_dense_expert_parallel.py.)"""
    at = _run(ENGINE_PAGE, {"model": "meta-llama/Llama-3.1-70B", "num_gpus": "2", "data_parallel_size": "2",
                            "decode_context_parallel_size": "3"})
    assert not at.exception
    assert any("Could not plan the data / expert / context parallel launch" in e.value for e in at.error)
    assert any("tensor parallel 2 × pipeline 1 × 2 replicas" in c.value for c in at.caption)


def test_engine_page_dp_ep_rank_table_measures_nothing_without_a_log():
    """Qwen3-235B-A22B-FP8, H200, -dp 8 --enable-expert-parallel, no log pasted: the per-GPU table's "Measured" row is
    "-" (the placement's weights are an estimate, not a log's figure) and the users are whole requests
    (requests per rank x ranks; vLLM's fractional ratio is in the help)."""
    model_id = "Qwen/Qwen3-235B-A22B-FP8"
    at = _run(ENGINE_PAGE, {"model": model_id, "gpu": H200, "data_parallel_size": "8",
                            "enable_expert_parallel": "true"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    gpu = get_gpu(H200)
    plan = plan_scale(model_spec(model_id), gpu.framework_memory_bytes,
                      EngineRequest(max_model_len=8192, gpu_name=gpu.name),
                      ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
    assert plan.engine.limiting_rank.overridden == ()
    assert plan.requests_all_ranks == plan.requests_per_rank * 8 == plan.engine_kv_cache_tokens // 8192 * 8
    shown = {m.label: m.value for m in metric_tiles(at)}
    assert shown["Users, all ranks"] == f"{plan.requests_all_ranks:,}" and "." not in shown["Users, all ranks"]
    measured = [row for d in (*at.dataframe, *at.table) for row in d.value.to_dict("records")
                if row.get("Per GPU") == "Measured"]
    assert measured and all(v in ("-", md_cell("-")) for row in measured for k, v in row.items() if k != "Per GPU")


def test_engine_page_deep_gemm_toggle_is_the_cli_flag():
    """The Engine page's "DeepGEMM MoE kernels" toggle (URL key use_deep_gemm) plans what ``plan --use-deep-gemm``
    plans: [N10]'s DP 8 x EP 8 launch under vLLM 0.10, where DeepGEMM's workspaces take 1.53 GiB more of each
    rank's profile pass than Triton's (planner/engines/vllm_moe_dispatch.py)."""
    h20, qwen = "nvidia-h20-141gb", "Qwen/Qwen3-Coder-480B-A35B-Instruct"
    link = {"model": qwen, "gpu": h20, "engine": "vllm-v0.10", "weight_dtype": "fp8_block128",
            "data_parallel_size": "8", "enable_expert_parallel": "true", "context_len": "262144"}
    gpu = get_gpu(h20)
    shown = {}
    for deep_gemm in (False, True):
        at = _run(ENGINE_PAGE, {**link, **({"use_deep_gemm": "true"} if deep_gemm else {})})
        assert not at.exception and not at.error, [e.value for e in at.error]
        plan = plan_scale(model_spec(qwen), gpu.framework_memory_bytes,
                          EngineRequest(engine="vllm-v0.10", weight_dtype="fp8_block128", max_model_len=262144,
                                        gpu_name=gpu.name, use_deep_gemm=deep_gemm),
                          ScaleRequest(data_parallel_size=8, enable_expert_parallel=True))
        printed = f"Available KV cache memory: {plan.engine.available_kv_cache_bytes / 2**30:.2f} GiB"
        assert any(printed in c for c in _codes(at)), printed
        shown[deep_gemm] = plan.engine.available_kv_cache_bytes
    assert shown[False] - shown[True] == 8_932_476_928 - 7_287_603_200


def test_a_link_opens_the_chosen_setup_and_a_choice_is_written_to_the_link():
    """Find's "Setup to launch" is in the link (``find_setup``, ui/find_scale_view.setup_id), so a design review's
    link opens on the same launch commands; a choice is written to the URL in the same run, the first row leaves
    the key out, and a choice stays chosen through a new search that still lists it."""
    from ui.find_scale_view import SETUP_URL_KEY

    at = _run(FIND, V32_500)
    table = at.dataframe[0].value
    wide = next(i for i, (k, g) in enumerate(zip(table["Setup kind"], table["GPUs"])) if k == "DP+EP" and g == 16)
    choice = at.selectbox(key="find_choice")
    assert SETUP_URL_KEY not in at.query_params
    choice.set_value(choice.options[wide]).run()
    written = at.query_params[SETUP_URL_KEY]
    written = written[0] if isinstance(written, list) else written
    assert written.startswith("DP+EP.16.nvidia-h200-sxm.") and written.endswith(table["KV dtype"].iloc[wide])

    shared = _run(FIND, {**V32_500, SETUP_URL_KEY: written})  # the link, opened in a fresh session
    assert not shared.exception and not shared.warning, [w.value for w in shared.warning]
    assert shared.selectbox(key="find_choice").value == choice.options[wide]
    assert any(c.startswith("# serve") and "--data-parallel-start-rank 8" in c for c in _codes(shared))

    shared.number_input(key="users").set_value(520).run()  # a new search that still lists the setup
    kept = shared.selectbox(key="find_choice").value
    assert kept.split(" · ")[1:3] == choice.options[wide].split(" · ")[1:3]  # "DP+EP", "16 x H200 SXM"
    assert shared.query_params[SETUP_URL_KEY] in (written, [written])

    shared.selectbox(key="find_choice").set_value(shared.selectbox(key="find_choice").options[0]).run()
    assert SETUP_URL_KEY not in shared.query_params  # the first row: no key


def test_a_link_naming_no_listed_setup_says_so_and_shows_the_first_row():
    from ui.find_scale_view import SETUP_URL_KEY

    at = _run(FIND, {**V32_500, SETUP_URL_KEY: "TP.3.nvidia-h200-sxm.tp3.dp1.bf16"})
    assert not at.exception
    assert any(SETUP_URL_KEY in w.value and "first row" in w.value for w in at.warning)
    choice = at.selectbox(key="find_choice")
    assert choice.value == choice.options[0] and SETUP_URL_KEY not in at.query_params
