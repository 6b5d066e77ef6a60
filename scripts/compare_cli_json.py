"""Dev check (not a test): the CLI's JSON at an older commit equals the working tree's, byte for byte.

Usage: ``python scripts/compare_cli_json.py [--before REF] [--after PATH] [--models N]``

Proves that a refactor or a speed-up changed no number. ``--before`` (default
:data:`DEFAULT_BEFORE`, the last commit before ``planner/`` was split into
``model/``, ``engines/``, ``traffic/`` and ``cli/``) is checked out in a
temporary ``git worktree``; ``--after`` defaults to this working tree. In each
tree one child process imports that tree's ``main`` from ``planner.cli`` (``planner/cli.py``
before the split, the ``planner/cli/`` package after) and runs, in process, every
case of :func:`cases`:

* every catalog model (the ids the *before* tree lists),
* on an H100 SXM 80GB, an L4 and an RTX 4090,
* at tensor parallel size 1 and 2,
* without an engine and with ``--engine vllm`` / ``sglang`` / ``llama.cpp``,

each as ``plan ... --format json``, capturing exit code, stdout and stderr. The
script prints the number of cases, the number that differ, and the first
differences, and exits 1 when any differs. Runs take about a minute per tree
on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "162ddc7"
"""Last commit with the flat ``planner/`` (before issue "Give planner/ wings")."""

GPUS = ("nvidia-h100-sxm-80gb", "nvidia-l4", "nvidia-rtx-4090")
TENSOR_PARALLEL_SIZES = (1, 2)
ENGINES = (None, "vllm", "sglang", "llama.cpp")

# The child: reads a JSON list of argv lists on stdin, runs each through main() in process,
# writes one JSON list of [rc, stdout, stderr] on stdout. Kept as text so both trees run the
# same driver whatever their layout.
_CHILD = r"""
import contextlib, io, json, sys
sys.path.insert(0, ".")
from planner.cli import main
cases = json.load(sys.stdin)
out = []
for argv in cases:
    o, e = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code
        except Exception as exc:  # recorded, so a crash in one tree shows as a difference
            rc = "exception " + type(exc).__name__ + ": " + str(exc)
    out.append([rc, o.getvalue(), e.getvalue()])
sys.__stdout__.write(json.dumps(out))
"""


def model_ids(tree: Path) -> list[str]:
    """Catalog model ids as ``python -m planner models --format json`` lists them in ``tree``."""
    text = subprocess.run([sys.executable, "-m", "planner", "models", "--format", "json"], cwd=tree,
                          capture_output=True, text=True, check=True).stdout
    return [row["model_id"] for row in json.loads(text)]


def cases(models: list[str]) -> list[list[str]]:
    """Every ``plan`` argv of the comparison grid (models x GPUs x TP x engine)."""
    out = []
    for model in models:
        for gpu in GPUS:
            for tp in TENSOR_PARALLEL_SIZES:
                for engine in ENGINES:
                    argv = ["plan", "--model", model, "--gpu", gpu, "--format", "json"]
                    if engine is None:
                        argv += ["--num-gpus", str(tp)]
                    else:
                        argv += ["--engine", engine, "--tensor-parallel-size", str(tp)]
                    out.append(argv)
    return out


def run_tree(tree: Path, argvs: list[list[str]]) -> list:
    """Run every argv through ``tree``'s CLI in one child process; ``[rc, stdout, stderr]`` each."""
    proc = subprocess.run([sys.executable, "-c", _CHILD], cwd=tree, input=json.dumps(argvs),
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"the driver failed in {tree.name}: {proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git ref of the reference tree")
    parser.add_argument("--after", type=Path, default=ROOT, help="tree to compare (default: this working tree)")
    parser.add_argument("--models", type=int, default=None, help="only the first N catalog models (quick check)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="planner-before-") as tmp:
        before = Path(tmp) / "tree"
        subprocess.run(["git", "worktree", "add", "--detach", str(before), args.before], cwd=ROOT,
                       check=True, capture_output=True)
        try:
            ids = model_ids(before)[: args.models]
            argvs = cases(ids)
            print(f"{len(ids)} models x {len(GPUS)} GPUs x {len(TENSOR_PARALLEL_SIZES)} TP x "
                  f"{len(ENGINES)} engine settings = {len(argvs)} cases; before = {args.before}")
            old = run_tree(before, argvs)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=ROOT, capture_output=True)
    new = run_tree(args.after, argvs)
    differ = [(a, o, n) for a, o, n in zip(argvs, old, new) if o != n]
    ok = sum(1 for o in old if o[0] == 0)
    print(f"{ok} of {len(argvs)} cases exit 0 before; {len(differ)} differ")
    for argv, o, n in differ[:5]:
        print("  differs:", " ".join(argv))
        print("    before:", json.dumps(o)[:400])
        print("    after: ", json.dumps(n)[:400])
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
