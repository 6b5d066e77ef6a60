"""``--speculative-config`` without ``"method"``: the method vLLM detects (planner.serving.speculative.infer_method).

vLLM's rule (``SpeculativeConfig.__post_init__``, vllm/config/speculative.py): ``model`` "ngram" -> ngram; else
the draft's name, lower case: "eagle-" -> eagle, then "eagle3" -> eagle3; then the draft config's ``model_type``
after ``hf_config_override`` (``deepseek_v3`` -> ``deepseek_mtp``, an MTP type) -> mtp; medusa / mlp_speculator
are methods of their own; anything else is a draft model. The repo names are the published ones vLLM's source
lists as examples (yuhuili/EAGLE-LLaMA3-Instruct-8B, yuhuili/EAGLE3-LLaMA3.1-Instruct-8B) and the one of
issue 25 (RedHatAI/Qwen3-8B-speculator.eagle3).
"""

from __future__ import annotations

import json

import pytest

from model_catalog import get_model_entry
from planner.cli import main
from planner.serving.speculative import infer_method

QWEN3_8B = ("--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100-sxm", "--engine", "vllm")


@pytest.mark.parametrize(("model", "method"), [
    ("yuhuili/EAGLE-LLaMA3-Instruct-8B", "eagle"),        # "eagle-" comes first
    ("yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "eagle3"),    # "eagle3-" holds no "eagle-"
    ("RedHatAI/Qwen3-8B-speculator.eagle3", "eagle3"),
    ("AngelSlim/Qwen3-8B_eagle3", "eagle3"),
    ("ngram", "ngram"),
    ("[ngram]", "ngram"),
])
def test_the_name_decides_first(model, method):
    assert infer_method(model) == method


def test_the_draft_config_decides_next():
    deepseek = get_model_entry("deepseek-ai/DeepSeek-V3").config  # model_type deepseek_v3 -> deepseek_mtp
    assert deepseek["model_type"] == "deepseek_v3"
    assert infer_method("deepseek-ai/DeepSeek-V3", deepseek) == "mtp"
    assert infer_method("x/y", {"model_type": "qwen3_5_moe"}) == "mtp"
    assert infer_method("x/y", {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe"}) == "mtp"
    assert infer_method("x/y", {"model_type": "qwen3_next_mtp"}) == "mtp"  # already an MTP type
    llama = get_model_entry("meta-llama/Llama-3.2-1B-Instruct").config
    assert infer_method("meta-llama/Llama-3.2-1B-Instruct", llama) == "draft_model"


@pytest.mark.parametrize(("model", "config", "match"), [
    (None, None, "needs a method or a draft model"),
    ("FasterDecoding/medusa-vicuna-7b", {"model_type": "medusa"}, "medusa, which the planner does not price"),
    ("ibm/granite-speculator", {"model_type": "mlp_speculator"}, "mlp_speculator"),
    ("z-lab/Qwen3-8B-DFlash-b16", None, "dflash drafter"),
    ("someone/mystery-draft", None, 'add "method"'),
])
def test_what_cannot_be_inferred_says_what_to_add(model, config, match):
    with pytest.raises(ValueError, match=match):
        infer_method(model, config)


def _plan(capsys, *argv: str) -> dict:
    assert main(["plan", *QWEN3_8B, "--max-model-len", "8192", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_issue_launch_plans_as_the_explicit_method(capsys):
    inferred = _plan(capsys, "--speculative-config",
                     '{"model": "RedHatAI/Qwen3-8B-speculator.eagle3", "num_speculative_tokens": 3}')
    explicit = _plan(capsys, "--speculative-config", '{"method": "eagle3", "model": '
                     '"RedHatAI/Qwen3-8B-speculator.eagle3", "num_speculative_tokens": 3}')
    assert inferred["serving"]["speculative"]["method"] == "eagle3"
    assert inferred == explicit  # every figure, and the launch command names the method vLLM picks
    assert '"method": "eagle3"' in inferred["serving"]["launch_flags"]["vllm"]


def test_a_catalog_draft_is_a_draft_model_and_the_target_itself_is_mtp(capsys):
    draft = _plan(capsys, "--speculative-config",
                  '{"model": "meta-llama/Llama-3.2-1B-Instruct", "num_speculative_tokens": 4}')
    assert draft["serving"]["speculative"]["method"] == "draft_model"
    assert main(["plan", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h200-sxm", "--num-gpus", "8",
                 "--speculative-config", '{"model": "deepseek-ai/DeepSeek-V3", "num_speculative_tokens": 1}',
                 "--format", "json"]) == 0
    spec = json.loads(capsys.readouterr().out)["serving"]["speculative"]
    assert (spec["method"], spec["draft_layers"]) == ("mtp", 1)  # num_nextn_predict_layers: 1


def test_an_unknown_draft_is_a_one_line_error(capsys):
    code = main(["plan", *QWEN3_8B, "--speculative-config",
                 '{"model": "someone/mystery-draft", "num_speculative_tokens": 4}'])
    err = capsys.readouterr().err
    assert code == 2 and 'add "method"' in err and err.count("\n") == 1


def test_a_named_draft_needs_its_token_count_as_vllm_does(capsys):
    """vLLM stops on a draft model without num_speculative_tokens unless the draft's config.json has n_predict
    (vllm/config/speculative.py); the plan says what to add instead of assuming 1."""
    assert main(["plan", *QWEN3_8B, "--speculative-config", '{"model": "Qwen/Qwen3-0.6B"}']) == 2
    assert 'add "num_speculative_tokens"' in capsys.readouterr().err


def test_ngram_lookup_window_is_accepted_and_written_back(capsys):
    """prompt_lookup_max / prompt_lookup_min change no memory; they are accepted and kept in the command."""
    plan = _plan(capsys, "--speculative-config", '{"model": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}')
    assert plan["serving"]["speculative"]["method"] == "ngram"
    assert '"prompt_lookup_max": 4' in plan["serving"]["launch_flags"]["vllm"]
    assert main(["plan", *QWEN3_8B, "--speculative-config",
                 '{"model": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": "x"}']) == 2
    assert "prompt_lookup_max must be a whole number" in capsys.readouterr().err


def test_an_eagle3_config_without_its_head_stops_as_vllm_does(capsys):
    """vLLM stops on an EAGLE / EAGLE-3 ``--speculative-config`` without ``"model"``; the planner says so and names
    the flag that plans the head from the target's shapes instead. That flag's plan says what to add."""
    assert main(["plan", *QWEN3_8B, "--speculative-config", '{"method": "eagle3", "num_speculative_tokens": 2}']) == 2
    assert 'add "model"' in capsys.readouterr().err
    plan = _plan(capsys, "--speculative-method", "eagle3", "--num-speculative-tokens", "2")
    said = "the engine needs the head's repo: replace EAGLE3_DRAFT_REPO in the launch command"
    assert any(said in note for note in plan["serving"]["speculative"]["notes"])
