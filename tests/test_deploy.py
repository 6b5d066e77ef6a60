"""Hosted deployment: health check, Streamlit config, a runtime without torch, README's deploy section.

Streamlit Community Cloud installs ``requirements.txt`` (the first dependency
file it finds), runs ``app.py`` from the repository root with the root
``.streamlit/config.toml``, and takes the Python version from the deploy
dialog's "Advanced settings" (Streamlit docs: "Deploy your app on Community
Cloud", "App dependencies", "Status and limitations").
"""

from __future__ import annotations

import re
import tomllib
import urllib.request
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
FORBIDDEN = ("torch", "tensorflow", "jax", "jaxlib", "flax")
"""Packages the hosted runtime must never pull in (the planner reads configs, it runs no model)."""


def test_health_endpoint_answers_ok(streamlit_server):
    with urllib.request.urlopen(streamlit_server.base_url + "/_stcore/health", timeout=10) as response:
        assert response.status == 200
        assert response.read().decode().strip() == "ok"


def test_streamlit_config_for_hosting():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["browser"]["gatherUsageStats"] is False
    assert config["runner"]["postScriptGC"] is False, "gc.collect() after every rerun cost ~340 ms"
    assert {"base", "primaryColor", "backgroundColor", "textColor"} <= set(config["theme"])
    assert "port" not in config.get("server", {}), "the host chooses the port"


def _runtime_requirements() -> list[Requirement]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [Requirement(line.split("#")[0].strip()) for line in lines if line.split("#")[0].strip()]


def _closure(roots: list[Requirement]) -> dict[str, str]:
    """Installed distributions the runtime requirements pull in, name -> who asked for it.

    Follows each distribution's requirements, with the extras the asking requirement names
    (``transformers[torch]`` would pull torch) and no others.
    """
    seen: dict[str, str] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, "requirements.txt") for r in roots]
    while todo:
        req, parent = todo.pop()
        name = canonicalize_name(req.name)
        if (name, frozenset(req.extras)) in done:
            continue
        done.add((name, frozenset(req.extras)))
        seen.setdefault(name, parent)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: it has no installed dependencies to follow
        for line in dist.requires or ():
            child = Requirement(line)
            extras = ("", *req.extras)
            if child.marker is None or any(child.marker.evaluate({"extra": e}) for e in extras):
                todo.append((child, name))
    return seen


def test_runtime_requirements_pull_in_no_torch():
    roots = _runtime_requirements()
    assert {canonicalize_name(r.name) for r in roots} >= {"streamlit", "plotly", "pandas", "pydantic", "transformers"}
    closure = _closure(roots)
    pulled = {name: parent for name, parent in closure.items()
              if name in FORBIDDEN or name.startswith("nvidia-")}
    assert not pulled, f"the hosted runtime would install {pulled} (package -> required by)"


def test_readme_keeps_its_first_two_commands_and_documents_the_deploy():
    commands = re.search(r"```bash\n(.*?)```", README, re.DOTALL).group(1).splitlines()
    assert commands[:2] == ["pip install -r requirements.txt && streamlit run app.py",
                            "pip install -r requirements-dev.txt && python -m pytest"]
    deploy = README[README.index("## Deploy"):]
    assert "share.streamlit.io/deploy?" in deploy and "streamlit_badge" in deploy, "deploy button"
    assert "Advanced settings" in deploy and re.search(r"Python version\W+3\.\d+", deploy), "Python version"
    assert "/_stcore/health" in deploy, "health check"


@pytest.mark.parametrize("name", ["model_catalog/spec_snapshot.json", ".streamlit/config.toml", "requirements.txt"])
def test_files_the_host_needs_are_in_the_repository(name):
    assert (ROOT / name).is_file()
