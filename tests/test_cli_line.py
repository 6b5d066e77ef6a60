"""Home's "Same plan from the command line" names a custom model and GPU with flags the CLI accepts (QA, stop 42).

A pasted config.json showed ``python -m planner plan --model custom``, which the CLI refuses ("unknown model id
'custom'"); the snippet now says to save the paste as config.json and passes ``--config config.json``.
"""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from dataclasses import replace
from pathlib import Path


from model_catalog import get_model_entry
from model_catalog.custom import read_custom_config
from model_catalog.custom_gpu import custom_gpu
from model_catalog.share_codec import encode_gpu, encode_model
from planner.cli import main
from tests.test_app import run_page
from ui import cli_line

NEMO = "mistralai/Mistral-Nemo-Base-2407"
CONFIG = dict(get_model_entry(NEMO).config)


def _home_snippet(params: dict) -> str:
    at = run_page("app.py", params)
    assert not at.exception, [e.value for e in at.exception]
    return next(c.value for c in at.code if "python -m planner plan" in c.value)


def _run_snippet(snippet: str, folder: Path) -> int:
    """Run the snippet's command (comment lines dropped) in ``folder``'s terms: file flags point into it."""
    words = shlex.split(" ".join(line.rstrip("\\") for line in snippet.splitlines() if not line.startswith("#")))
    assert words[:3] == ["python", "-m", "planner"]
    args = [str(folder / w) if prev in ("--config", "--gguf") else w for prev, w in zip(["", *words], words)][3:]
    with contextlib.redirect_stdout(io.StringIO()):
        return main([*args, "--format", "json"])


def test_a_pasted_config_becomes_config_json_and_the_command_runs(tmp_path):
    code = encode_model(read_custom_config(CONFIG, "my-nemo"))
    snippet = _home_snippet({"model": "custom", "custom_model": code, "gpu": "nvidia-h100-sxm-80gb"})
    assert "--model custom" not in snippet and "--config config.json" in snippet
    assert "config.json" in snippet.splitlines()[0] and snippet.startswith("#")
    (tmp_path / "config.json").write_text(json.dumps(CONFIG))
    assert _run_snippet(snippet, tmp_path) == 0


def test_a_custom_gpu_becomes_its_memory_flag_and_the_command_runs(tmp_path):
    gpu = custom_gpu("My card", "24", "GB", 900)
    snippet = _home_snippet({"model": NEMO, "gpu": "custom", "custom_gpu": encode_gpu(gpu)})
    assert "--gpu custom" not in snippet and "--gpu-memory-gib" in snippet
    assert _run_snippet(snippet, tmp_path) == 0


def test_hub_and_gguf_models_get_their_own_flags():
    hub_catalog = read_custom_config(CONFIG, NEMO, source=f"hf:{NEMO}@0123456789ab")
    assert cli_line.model_flag(hub_catalog) == (f"--model {NEMO}", None)
    hub_other = read_custom_config(CONFIG, "someone/unlisted-nemo", source="hf:someone/unlisted-nemo@0123456789ab")
    flag, note = cli_line.model_flag(hub_other)
    assert flag == "--config config.json" and "someone/unlisted-nemo" in note
    gguf = read_custom_config(CONFIG, "nemo-q4", source="gguf:tmpab12.gguf")
    flag, note = cli_line.model_flag(replace(gguf, reading="gguf"))
    assert flag.startswith("--gguf ") and ".gguf" in note
