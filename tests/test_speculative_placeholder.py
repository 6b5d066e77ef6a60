"""An EAGLE / EAGLE-3 launch without its head's repo names a placeholder to replace, and round-trips (QA D6).

vLLM's ``SpeculativeConfig.__post_init__`` (vllm/config/speculative.py) fills ``model`` itself only for MTP (the
target's own checkpoint) and the n-gram / suffix proposers; ``eagle``, ``eagle3`` and ``draft_model`` without
``model`` stop with "num_speculative_tokens was provided but without speculative model". The product printed
``--speculative-config '{"method": "eagle3", "num_speculative_tokens": 2}'`` for ``--speculative-method eagle3``:
a command that does not run, and that its own ``plan --speculative-config`` refused.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from planner.cli import main

ROOT = Path(__file__).resolve().parents[1]
TARGET = ("--engine", "vllm", "--model", "Qwen/Qwen3-VL-8B-Instruct", "--gpu", "nvidia-h100-sxm-80gb")


def _plan(capsys, *flags: str) -> dict:
    assert main(["plan", *TARGET, *flags, "--format", "json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _spec_json(command: str) -> str:
    """The ``--speculative-config`` value of a launch command, as bash would pass it."""
    tokens = shlex.split(command, comments=True)
    return tokens[tokens.index("--speculative-config") + 1]


@pytest.mark.parametrize(("method", "placeholder"), [("eagle3", "EAGLE3_DRAFT_REPO"), ("eagle", "EAGLE_DRAFT_REPO")])
def test_a_head_method_without_its_repo_names_a_placeholder_to_replace(capsys, method, placeholder):
    plan = _plan(capsys, "--speculative-method", method, "--num-speculative-tokens", "2")
    command = plan["launch_command"]
    assert json.loads(_spec_json(command)) == {"method": method, "model": placeholder, "num_speculative_tokens": 2}
    comment = command.partition("  # ")[2]
    assert placeholder in comment and "replace" in comment.lower(), command
    notes = plan["serving"]["speculative"]["notes"]
    assert any(placeholder in note for note in notes), notes


def test_the_emitted_config_round_trips_through_the_cli(capsys):
    first = _plan(capsys, "--speculative-method", "eagle3", "--num-speculative-tokens", "2")
    again = _plan(capsys, "--speculative-config", _spec_json(first["launch_command"]))
    assert again["launch_command"] == first["launch_command"]
    for key in ("max_concurrent_sequences", "kv_cache_budget_bytes", "weights_bytes_per_gpu"):
        assert again[key] == first[key], key
    assert again["engine_plan"]["ranks"] == first["engine_plan"]["ranks"]


def test_only_a_head_without_its_repo_gets_the_placeholder(capsys):
    """A given head repo is written as given; n-gram (no checkpoint) and MTP (vLLM takes the target's own
    checkpoint) name no model; EAGLE-3 without its repo names the placeholder."""
    head = "RedHatAI/Qwen3-8B-speculator.eagle3"
    given = _plan(capsys, "--speculative-method", "eagle3", "--num-speculative-tokens", "2",
                  "--speculative-model", head)["launch_command"]
    assert json.loads(_spec_json(given))["model"] == head and "DRAFT_REPO" not in given
    ngram = _plan(capsys, "--speculative-method", "ngram", "--num-speculative-tokens", "3")["launch_command"]
    assert "model" not in json.loads(_spec_json(ngram)) and "DRAFT_REPO" not in ngram
    assert main(["plan", "--engine", "vllm", "--model", "deepseek-ai/DeepSeek-V3", "--gpu", "nvidia-h200-sxm",
                 "--num-gpus", "8", "--speculative-method", "mtp", "--format", "json"]) == 0
    mtp = json.loads(capsys.readouterr().out)["launch_command"]
    assert "model" not in json.loads(_spec_json(mtp)) and "DRAFT_REPO" not in mtp
    bare = _plan(capsys, "--speculative-method", "eagle3", "--num-speculative-tokens", "2")["launch_command"]
    assert json.loads(_spec_json(bare))["model"] == "EAGLE3_DRAFT_REPO"


def test_the_engine_page_shows_the_placeholder_and_its_comment():
    at = AppTest.from_file(str(ROOT / "pages" / "5_Engine.py"), default_timeout=120)
    for key, value in {"model": "Qwen/Qwen3-VL-8B-Instruct", "gpu": "nvidia-h100-sxm-80gb",
                       "speculative_method": "eagle3", "num_speculative_tokens": "2"}.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    launch = [c.value for c in at.code if c.value.startswith("vllm serve")]
    assert len(launch) == 1
    assert '"model": "EAGLE3_DRAFT_REPO"' in launch[0]
    assert any(line.startswith("#") and "EAGLE3_DRAFT_REPO" in line for line in launch[0].splitlines())


def test_readme_names_the_placeholders_the_code_emits():
    from planner.serving.speculative import DRAFT_PLACEHOLDERS

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert set(DRAFT_PLACEHOLDERS) == {"eagle", "eagle3"}  # vLLM's head methods (module docstring)
    for placeholder in DRAFT_PLACEHOLDERS.values():
        assert f"`{placeholder}`" in readme


def test_sglang_eagle_launch_names_the_heads_path_placeholder(capsys):
    """QA (stop 43): SGLang's EAGLE-3 launch had no --speculative-draft-model-path, which its EAGLE workers load the
    head from (SGLang docs, Speculative Decoding: EAGLE needs a draft model; NEXTN / NGRAM do not)."""
    from planner.cli import main

    base = ["plan", "--engine", "sglang", "--model", "Qwen/Qwen3-8B", "--gpu", "nvidia-h100", "--format", "json"]
    main([*base, "--speculative-method", "eagle3", "--num-speculative-tokens", "2"])
    command = json.loads(capsys.readouterr().out)["engine_plan"]["launch_command"]
    assert "--speculative-draft-model-path EAGLE3_DRAFT_REPO" in command and "# replace EAGLE3_DRAFT_REPO" in command
    main([*base, "--speculative-method", "ngram", "--num-speculative-tokens", "2"])
    assert "--speculative-draft-model-path" not in json.loads(capsys.readouterr().out)["engine_plan"]["launch_command"]
