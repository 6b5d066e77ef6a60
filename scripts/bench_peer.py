"""Benchmark (not a test): per-plan time of this planner vs llm-d-planner's ``calculate_capacity``, side by side.

Usage: ``python scripts/bench_peer.py [--repeats 7] [--tp 1 2] [--clock wall|cpu] [--peer-spec SPEC] [--venv PATH]``

The grid (issue "Ten times faster than the closest peer, measured side by side"):
:data:`MODELS` (12 catalog models) x :data:`CONTEXTS` (64 context lengths spaced
linearly from 1,024 to 131,072 tokens) = 768 plans per tensor parallel size, on an
H100 SXM 80GB, batch 1, ``gpu_memory_utilization`` 0.9, block size 16, the
model's own KV dtype (``auto``), pipeline and data parallel 1. Three paths of
this planner are timed, each building its request per plan as a caller does:

* ``plan()`` -- :func:`planner.budget.plan`;
* ``plan_engine(vllm)`` -- :func:`planner.engines.plan_engine` with ``engine="vllm"``
  and ``max_model_len`` = the context;
* ``cli`` -- the two one after the other on the same knobs, as
  ``planner/cli/entry.py`` (``_run_plans``) runs them (argument parsing and JSON
  printing excluded on both sides).

The peer: llm-d-planner's wheel installs a top-level package that is also named
``planner`` and needs a newer pydantic-settings than this project, so it runs in
a child process in its own virtual environment, made on first use (``python -m
venv`` + ``pip install`` of ``--peer-spec``) under the user's cache folder and
reused after. The child replaces the two Hub entry points ``calculate_capacity``
uses: ``AutoConfig.from_pretrained`` reads the model's config.json from this
catalog (written to a temporary folder, parsed by transformers' own
``AutoConfig``), ``HfApi.get_safetensors_metadata`` returns the parameter count
per safetensors dtype computed from this catalog's parameter groups (weight
dtype ``auto``: the checkpoint's formats; packed formats as ``U8`` bytes). The
Hub is set offline. The peer keeps its own ``lru_cache`` on those two lookups,
so after one warm-up pass it computes from cached configs. This planner is warm
the same way: catalog specs loaded, and its per-model memos
(:mod:`planner.model.memo`) hold what does not depend on the context length, so
every timed plan still computes its context-dependent part (KV per sequence,
users, start check, messages, the result record).

Both tools run the grid alternately: each repetition times the peer's 768 plans
in the child, then this planner's three paths in this process; ``--repeats``
repetitions (default 7), medians. The script prints per-plan times [us], one
line per tensor parallel size with the word ``ratio`` and each path's ratio as
``N.Nx`` (peer time / our time), and each tool's exceptions (a plan that raises
is timed up to the exception). Run it on a quiet machine; the load average is
printed with the results. ``--clock cpu`` times each process's CPU time
instead of the wall clock, which other work on a shared machine disturbs less.
Timings vary between machines and runs: they are kept out of the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = (
    "meta-llama/Meta-Llama-3-8B", "meta-llama/Llama-2-7b-hf", "meta-llama/Meta-Llama-3.1-70B", "Qwen/Qwen2.5-7B",
    "Qwen/Qwen3-4B", "Qwen/Qwen3-32B", "mistralai/Mistral-7B-v0.1", "google/gemma-3-4b-it", "openai/gpt-oss-20b",
    "deepseek-ai/DeepSeek-V2-Lite", "tiiuae/falcon-7b", "mistralai/Mixtral-8x7B-v0.1",
)
"""The issue's 12 models (catalog ids)."""

CONTEXTS = tuple(round(1024 + i * (131072 - 1024) / 63) for i in range(64))
"""64 context lengths spaced linearly from 1,024 to 131,072 tokens."""

GPU_ID = "nvidia-h100-sxm-80gb"
GPU_MEMORY_UTILIZATION = 0.9
BLOCK_SIZE = 16
PEER_SPEC = "llm-d-planner[estimation]==0.3.3"
"""What ``pip install`` puts in the peer's venv (the version measured for the README)."""

# Safetensors dtype names of this catalog's unquantized formats; packed formats are stored as bytes.
_SAFETENSORS_DTYPES = {"bf16": "BF16", "fp16": "F16", "fp32": "F32", "fp8": "F8_E4M3", "int8": "I8"}

# The child, run by the peer venv's interpreter (isolated mode, a temporary working folder, so this
# repository's ``planner`` is not importable there). Protocol: one JSON line in (the payload), then
# one JSON line per command ({"tp": n} -> timing, {"quit": true} -> exit).
_CHILD = r"""
import collections, json, os, sys, tempfile, time, types
from pathlib import Path

payload = json.loads(sys.stdin.readline())
import transformers
import planner.capacity_planner as cp
from importlib.metadata import version

root = Path(tempfile.mkdtemp(prefix="peer-configs-"))
folders = {}
for model_id, entry in payload["models"].items():
    folder = root / model_id.replace("/", "__")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(entry["config"]))
    folders[model_id] = str(folder)


class CatalogAutoConfig:
    # Stands in for transformers.AutoConfig: the catalog's config.json, parsed by transformers itself.
    @staticmethod
    def from_pretrained(model_id, **kwargs):
        return transformers.AutoConfig.from_pretrained(folders[model_id])


class CatalogHfApi:
    # Stands in for huggingface_hub.HfApi: parameter counts per safetensors dtype from the catalog.
    def __init__(self, token=None):
        pass

    def get_safetensors_metadata(self, model_id):
        counts = dict(payload["models"][model_id]["params_by_dtype"])
        return types.SimpleNamespace(parameter_count=counts, sharded=False)


cp.AutoConfig, cp.HfApi = CatalogAutoConfig, CatalogHfApi
cp._TRANSFORMERS_AVAILABLE = cp._HF_AVAILABLE = True
grid = [(m, c) for m in payload["models"] for c in payload["contexts"]]
gpu_gb, util, block = payload["gpu_memory_gb"], payload["gpu_memory_utilization"], payload["block_size"]


clock = getattr(time, payload["clock"])


def run(tp):
    errors = collections.Counter()
    calc = cp.calculate_capacity
    start = clock()
    for model_id, context in grid:
        try:
            calc(model_id, context, 1, gpu_gb, tp, 1, 1, util, block)
        except Exception as exc:
            errors[type(exc).__name__ + ": " + " ".join(str(exc).split())[:90]] += 1
    return clock() - start, errors


for tp in payload["tensor_parallel_sizes"]:
    run(tp)  # warm: configs and metadata into the peer's own caches
print(json.dumps({"ready": True, "version": version("llm-d-planner"),
                  "transformers": transformers.__version__}), flush=True)
for line in sys.stdin:
    command = json.loads(line)
    if command.get("quit"):
        break
    seconds, errors = run(command["tp"])
    print(json.dumps({"seconds": seconds, "errors": dict(errors)}), flush=True)
"""


def cache_dir() -> Path:
    """The user's cache folder for this benchmark (``$XDG_CACHE_HOME`` or ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "gpu-memory-planner"


def venv_python(venv: Path) -> Path:
    """The interpreter of ``venv`` (POSIX or Windows layout)."""
    posix = venv / "bin" / "python"
    return posix if posix.exists() else venv / "Scripts" / "python.exe"


def ensure_peer_venv(venv: Path, spec: str, imports: str = "planner.capacity_planner, transformers") -> Path:
    """Make (or reuse) a venv holding ``spec``; returns its interpreter.

    Reused when ``imports`` (default: ``planner.capacity_planner`` and transformers)
    import there; else created with ``python -m venv`` and filled with ``pip install spec``.
    """
    python = venv_python(venv)
    probe = [str(python), "-I", "-c", f"import {imports}"]
    if python.exists() and subprocess.run(probe, cwd=venv, capture_output=True, check=False).returncode == 0:
        return python
    print(f"making the peer's venv ({spec}) under {venv} ...", file=sys.stderr, flush=True)
    venv.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv_python(venv)  # the layout is known only now: probe that interpreter
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", spec], check=True)
    subprocess.run([str(python), *probe[1:]], cwd=venv, check=True)
    return python


def params_by_dtype(spec) -> dict[str, int]:
    """Parameter count per safetensors dtype, as ``HfApi.get_safetensors_metadata`` reports it.

    Weight dtype ``auto``: each group in its checkpoint format
    (:func:`planner.model.params.weight_bytes_by_format` picks the same), else the
    checkpoint's ``torch_dtype``; formats packed below one byte per element
    (MXFP4 blocks and scales) count their bytes as ``U8``, as the checkpoints store them.
    """
    from planner.model.dtypes import checkpoint_dtype

    counts: dict[str, int] = {}
    default = checkpoint_dtype(spec.torch_dtype)
    for group in spec.params:
        fmt = group.storage or group.checkpoint or default
        name = _SAFETENSORS_DTYPES.get(fmt.name)
        if name is None or fmt.block_shape is not None:
            name, n = "U8", fmt.bytes_for_matrix(group.shape) * group.count
        else:
            n = group.total_numel
        counts[name] = counts.get(name, 0) + n
    return counts


CLOCKS = {"wall": "perf_counter", "cpu": "process_time"}
"""``--clock`` choices: wall-clock time, or the CPU time of the timing process (steadier on a busy machine)."""


def peer_payload(tensor_parallel_sizes: list[int], clock: str = "wall") -> dict:
    """What the child needs: each model's config.json and dtype counts, the grid and the knobs."""
    from model_catalog import get_model_entry, model_spec
    from model_catalog.gpus import get_gpu

    models = {m: {"config": get_model_entry(m).config, "params_by_dtype": params_by_dtype(model_spec(m))}
              for m in MODELS}
    return {"models": models, "contexts": list(CONTEXTS), "tensor_parallel_sizes": tensor_parallel_sizes,
            "clock": CLOCKS[clock],
            "gpu_memory_gb": get_gpu(GPU_ID).memory_gb_marketed,
            "gpu_memory_utilization": GPU_MEMORY_UTILIZATION, "block_size": BLOCK_SIZE}


def our_paths():
    """``{name: fn(spec, context, tp)}`` for the three timed paths of this planner."""
    from model_catalog.gpus import get_gpu
    from planner.budget import PlanRequest, plan
    from planner.engines import plan_engine
    from planner.engines.types import EngineRequest

    gpu = get_gpu(GPU_ID)
    memory, gpu_id, gpu_name = gpu.framework_memory_bytes, gpu.id, gpu.name

    def v1(spec, context, tp):
        return plan(spec, memory, PlanRequest(context_len=context, num_gpus=tp, block_size=BLOCK_SIZE,
                                              gpu_memory_utilization=GPU_MEMORY_UTILIZATION), gpu_id=gpu_id)

    def engine(spec, context, tp):
        return plan_engine(spec, memory, EngineRequest(
            engine="vllm", tensor_parallel_size=tp, max_model_len=context, block_size=BLOCK_SIZE,
            gpu_memory_utilization=GPU_MEMORY_UTILIZATION, gpu_name=gpu_name))

    def cli(spec, context, tp):
        return v1(spec, context, tp), engine(spec, context, tp)

    return {"plan()": v1, "plan_engine(vllm)": engine, "cli": cli}


def time_ours(fn, grid, tp: int, clock=time.perf_counter) -> tuple[float, dict[str, int]]:
    """Seconds for ``fn`` over the grid, and its exceptions by message."""
    errors: dict[str, int] = {}
    start = clock()
    for spec, context in grid:
        try:
            fn(spec, context, tp)
        except Exception as exc:  # noqa: BLE001 - counted like the peer's
            key = f"{type(exc).__name__}: {' '.join(str(exc).split())[:90]}"
            errors[key] = errors.get(key, 0) + 1
    return clock() - start, errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--tp", type=int, nargs="+", default=[1, 2], help="tensor parallel sizes (default 1 2)")
    parser.add_argument("--peer-spec", default=PEER_SPEC, help=f"pip requirement for the peer (default {PEER_SPEC})")
    parser.add_argument("--clock", choices=tuple(CLOCKS), default="wall",
                        help="wall-clock time (default) or each process's CPU time (steadier when others load the machine)")
    parser.add_argument("--venv", type=Path, default=None,
                        help="the peer's venv (default: llm-d-planner-venv in the user's cache folder)")
    args = parser.parse_args()

    from model_catalog import model_spec

    python = ensure_peer_venv(args.venv or cache_dir() / "llm-d-planner-venv", args.peer_spec)
    specs = {m: model_spec(m) for m in MODELS}
    grid = [(specs[m], c) for m in MODELS for c in CONTEXTS]
    paths = our_paths()
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TRANSFORMERS_VERBOSITY="error")
    child = subprocess.Popen([str(python), "-I", "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, cwd=python.parent, env=env)
    assert child.stdin and child.stdout

    def ask(message: dict) -> dict:
        child.stdin.write(json.dumps(message) + "\n")
        child.stdin.flush()
        line = child.stdout.readline()
        if not line:
            raise SystemExit(f"the peer's child exited ({child.wait()})")
        return json.loads(line)

    load_before = os.getloadavg()
    clock = getattr(time, CLOCKS[args.clock])
    hello = ask(peer_payload(args.tp, args.clock))
    for tp in args.tp:  # warm ours too: specs, profiles and per-model caches
        for fn in paths.values():
            time_ours(fn, grid, tp)
    times: dict[tuple[int, str], list[float]] = {}
    errors: dict[tuple[int, str], dict[str, int]] = {}
    for _ in range(args.repeats):
        for tp in args.tp:
            reply = ask({"tp": tp})
            times.setdefault((tp, "peer"), []).append(reply["seconds"])
            errors[(tp, "peer")] = reply["errors"]
            for name, fn in paths.items():
                seconds, errs = time_ours(fn, grid, tp, clock)
                times.setdefault((tp, name), []).append(seconds)
                errors[(tp, name)] = errs
    child.stdin.write(json.dumps({"quit": True}) + "\n")
    child.stdin.flush()
    child.wait()
    load_after = os.getloadavg()

    n = len(grid)
    print(f"grid: {len(MODELS)} models x {len(CONTEXTS)} contexts ({CONTEXTS[0]:,}..{CONTEXTS[-1]:,}) = {n} plans "
          f"per TP size on {GPU_ID}, batch 1, gpu_memory_utilization {GPU_MEMORY_UTILIZATION}, block size "
          f"{BLOCK_SIZE}, KV dtype auto; {args.repeats} alternating repetitions, medians of {args.clock} time")
    print(f"peer: llm-d-planner {hello['version']} (transformers {hello['transformers']}), Python "
          f"{sys.version.split()[0]}; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    for tp in args.tp:
        per_plan = {name: 1e6 * statistics.median(times[(tp, name)]) / n for name in ("peer", *paths)}
        print(f"TP {tp}: per plan  llm-d-planner calculate_capacity {per_plan['peer']:.1f} us  "
              + "  ".join(f"{name} {per_plan[name]:.2f} us" for name in paths))
        print(f"TP {tp}: ratio " + "  ".join(f"{name} {per_plan['peer'] / per_plan[name]:.1f}x" for name in paths))
        for name in ("peer", *paths):
            errs = errors[(tp, name)]
            label = "llm-d-planner" if name == "peer" else name
            print(f"TP {tp}: exceptions {label}: {sum(errs.values())} of {n}"
                  + "".join(f"\n    {count} x {message}" for message, count in sorted(errs.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
