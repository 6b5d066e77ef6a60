"""The suite runs on a plain clone: no test or module reads a path outside the repository.

Reference facts live in ``tests/data`` (with their sources, tests/data/README.md). This
test reads every Python file of the project as text and fails on the spellings that
reach out of the repository: a parent of the repository root, a folder beside the clone,
or an absolute machine path (the exact patterns are ``ESCAPES`` below).
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("planner", "model_catalog", "ui", "pages", "tests", "scripts")
SOURCES = sorted({ROOT / "app.py", *(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))}
                 - {Path(__file__).resolve()})  # this file spells the patterns out

ESCAPES = (
    (r"parents\[1\]\.parent\b", "the folder above the repository"),
    (r"parents\[[2-9]\]", "a folder above the repository"),
    (r"[\"']\.\./shared|/\s*[\"']shared[\"']\s*/", "the sibling shared/ folder"),
    (r"[\"']/(work|root|home|tmp)/", "an absolute path of one machine"),
)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_path_outside_the_repository(path):
    text = path.read_text(encoding="utf-8")
    for pattern, what in ESCAPES:
        match = re.search(pattern, text)
        assert not match, f"{path.relative_to(ROOT)} names {what}: {match.group(0)!r}; copy the fact into tests/data"


def test_reference_copies_are_present_and_sourced():
    data = ROOT / "tests" / "data" / "reference"
    configs = sorted((data / "hf_configs").glob("*.json"))
    assert len(configs) >= 59
    assert all('"_source"' in p.read_text(encoding="utf-8") for p in configs)
    assert (data / "engine_cases.csv").read_text(encoding="utf-8").startswith("source,")
    assert "sources" in (data / "gpus.csv").read_text(encoding="utf-8").splitlines()[0]
