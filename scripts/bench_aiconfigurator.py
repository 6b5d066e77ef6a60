"""Side by side (not a test): parameters and KV bytes per token, this planner vs NVIDIA aiconfigurator vs transformers.

Usage: ``python scripts/bench_aiconfigurator.py [--peer-spec SPEC] [--venv PATH] [--markdown]``

The models: the 78 catalog entries of the 2026 reference configs (issue 12), i.e.
the entries whose config was copied from aiconfigurator's ``model_configs/``
folder at a commit other than the two the 2024-25 entries came from
(:data:`OLDER_COMMITS`); the script stops if it does not find 78.

What is compared, per model:

* *Parameters* of the language model. Truth: transformers' meta-device build
  (``AutoModelForCausalLM.from_config(text_config)``, summed ``numel``) as
  ``python -m planner verify`` stored it in ``model_catalog/verification.json``
  (``params_transformers``; none for the two types transformers cannot build).
  Ours: ``model_spec(id).num_parameters`` without the vision tower and projector
  (:func:`planner.serving.multimodal.text_only`). aiconfigurator's: the weight bytes its
  backend memory model adds up (``BaseBackend._get_memory_usage`` sums
  ``op.get_weights()`` over ``model.context_ops``, in aiconfigurator_core
  ``sdk/backends/base_backend.py``) with every GEMM / MoE quant mode forced to
  ``bfloat16`` (2 bytes a weight), divided by 2. Its vision encoder
  (``model.encoder_ops``) is counted apart, as the truth is the text model; the
  towers are printed beside (ours: :func:`planner.serving.multimodal.tower_parameters`).
* *KV bytes per token*: how much the cache grows on the first decode step after
  a 33-token prompt (verify's base run: below every window, so every attention
  layer adds its per-token bytes; recurrent states do not grow). Truth: the
  bytes of every tensor transformers' own cache held after that step minus after
  the prefill (``kv_checks`` of verification.json, bf16). Ours: the planner's
  ``transformers`` view (:func:`planner.engines.hf_transformers.transformers_cache_bytes`)
  at the same two points, and, beside it, the engine view's growth at the same
  step (:func:`planner.model.kv.kv_cache_bytes_per_sequence`, the layout vLLM and
  SGLang allocate: sparse-attention indexer keys in FP8 with a scale, DeepSeek-V4's
  compressed entries). aiconfigurator's: ``model.get_kvcache_bytes_per_sequence(34)
  - (33)`` with ``kvcache_quant_mode`` ``bfloat16`` (aiconfigurator_core
  ``sdk/models/base.py`` and the family overrides).

How aiconfigurator is run: its wheel brings numpy / pandas / pydantic pins of its
own, so it lives in its own venv under the user's cache folder (made on first
use with the helpers of ``scripts/bench_peer.py``), never in this project's
environment, and runs in a child process. Each catalog config (and the repo's
``hf_quant_config.json``) is written to a temporary folder, which
aiconfigurator reads as a local model path (``_load_model_config_from_model_path``
in ``sdk/utils.py``); ``get_model`` builds it for the ``vllm`` backend with TP,
PP, MoE-TP and MoE-EP 1 and no MTP (``nextn`` 0). No perf database and no
network are needed. A config it refuses is reported with its message.

Output: one row per model, the totals line ("we are exact on N of M ...") and
the places where aiconfigurator is closer to transformers than this planner (a
bug here, to be filed). ``--markdown`` prints the table as README markdown.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_peer import cache_dir, ensure_peer_venv  # the venv helpers, shared with the speed benchmark

PEER_SPEC = "aiconfigurator==0.12.0"
"""What ``pip install`` puts in the venv (the version measured for the README)."""

OLDER_COMMITS = ("095f58a51c4ca8e61b66ec108d86f223f8d559ce", "f577ab8432dfc9970fea27853a24861a6d3076cf")
"""aiconfigurator commits the 2024-25 catalog entries were copied from (their ``source``)."""

EXPECTED_MODELS = 78
BASE_TOKENS = 33
"""Prompt length of verify's base run; the per-token rate is the growth to 34 tokens."""

_SOURCE = re.compile(r"GitHub ai-dynamo/aiconfigurator @ ([0-9a-f]{40})")

# The child, run by the aiconfigurator venv's interpreter in isolated mode (this repository
# is not importable there). Protocol: the payload as one JSON line in, one JSON line out.
_CHILD = r"""
import json, logging, sys, tempfile
from importlib.metadata import version
from pathlib import Path

logging.disable(logging.CRITICAL)
from aiconfigurator_core.sdk import common, config
from aiconfigurator_core.sdk.models import get_model

payload = json.loads(sys.stdin.readline())
root = Path(tempfile.mkdtemp(prefix="aic-configs-"))
out = {"version": version("aiconfigurator"), "core_version": version("aiconfigurator-core"), "models": {}}
for model_id, entry in payload["models"].items():
    folder = root / model_id.replace("/", "__")
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(entry["config"]))
    if entry["hf_quant_config"]:
        (folder / "hf_quant_config.json").write_text(json.dumps(entry["hf_quant_config"]))
    row = {"cached_config": model_id in common.DefaultHFModels}
    try:
        model_config = config.ModelConfig(
            tp_size=1, pp_size=1, moe_tp_size=1, moe_ep_size=1, nextn=0,
            gemm_quant_mode=common.GEMMQuantMode.bfloat16, moe_quant_mode=common.MoEQuantMode.bfloat16,
            kvcache_quant_mode=common.KVCacheQuantMode.bfloat16, fmha_quant_mode=common.FMHAQuantMode.bfloat16)
        model = get_model(str(folder), model_config, "vllm")
        n = payload["base_tokens"]
        row.update(
            family=model.model_family, architecture=model.architecture,
            weight_bytes=sum(op.get_weights() for op in model.context_ops),
            encoder_weight_bytes=sum(op.get_weights() for op in model.encoder_ops),
            kv_per_token=model.get_kvcache_bytes_per_sequence(n + 1) - model.get_kvcache_bytes_per_sequence(n))
    except Exception as exc:
        row["error"] = type(exc).__name__ + ": " + " ".join(str(exc).split())[:160]
    out["models"][model_id] = row
print(json.dumps(out))
"""


def models_2026() -> list[str]:
    """Catalog ids of the 2026 reference configs (sorted); raises SystemExit unless there are 78."""
    from model_catalog import get_model_entry, model_ids

    ids = []
    for model_id in model_ids():
        match = _SOURCE.match(get_model_entry(model_id).source)
        if match and match.group(1) not in OLDER_COMMITS:
            ids.append(model_id)
    if len(ids) != EXPECTED_MODELS:
        raise SystemExit(f"found {len(ids)} catalog entries of the 2026 reference configs, expected "
                         f"{EXPECTED_MODELS}: check OLDER_COMMITS against the entries' source")
    return ids


def transformers_truth(model_id: str, verification: dict) -> tuple[int | None, int | None, str]:
    """(parameters, KV bytes per token, status) transformers measured for ``model_id``; None where it could not."""
    row = verification[model_id]
    checks = {(c["phase"], c["num_tokens"]): c for c in row["kv_checks"] if c["prompt_tokens"] == BASE_TOKENS}
    kv = None
    if ("prefill", BASE_TOKENS) in checks and ("decode", BASE_TOKENS + 1) in checks:
        kv = (checks[("decode", BASE_TOKENS + 1)]["transformers_tensor_bytes"]
              - checks[("prefill", BASE_TOKENS)]["transformers_tensor_bytes"])
    return row["params_transformers"], kv, row["status"]


def _text_and_tower(spec) -> tuple[int, int]:
    """(language-model parameters, tower + projector parameters) of a catalog spec."""
    try:
        from planner.serving.multimodal import text_only, tower_parameters
    except ImportError:  # a tree whose specs carry no towers
        return spec.num_parameters, 0
    return text_only(spec).num_parameters, tower_parameters(spec)


def ours(model_id: str) -> tuple[int, int, int, int]:
    """(language-model parameters, KV growth 33 -> 34 tokens in the transformers view, the same in the
    engine view, tower parameters), bf16."""
    from model_catalog import model_spec
    from model_catalog.verify import VERIFY_DTYPES
    from planner.engines.hf_transformers import transformers_cache_bytes
    from planner.model.kv import kv_cache_bytes_per_sequence

    spec = model_spec(model_id)
    params, tower = _text_and_tower(spec)
    after = transformers_cache_bytes(spec, BASE_TOKENS + 1, VERIFY_DTYPES, phase="decode").tensor_bytes
    before = transformers_cache_bytes(spec, BASE_TOKENS, VERIFY_DTYPES, phase="prefill").tensor_bytes
    engine = (kv_cache_bytes_per_sequence(spec, BASE_TOKENS + 1, VERIFY_DTYPES)
              - kv_cache_bytes_per_sequence(spec, BASE_TOKENS, VERIFY_DTYPES))
    return params, after - before, engine, tower


def run_peer(python: Path, ids: list[str]) -> dict:
    """aiconfigurator's numbers for ``ids``, from the child in its venv."""
    from model_catalog import get_model_entry

    models = {m: {"config": get_model_entry(m).config, "hf_quant_config": get_model_entry(m).hf_quant_config}
              for m in ids}
    payload = json.dumps({"models": models, "base_tokens": BASE_TOKENS}, allow_nan=True)
    done = subprocess.run([str(python), "-I", "-c", _CHILD], input=payload + "\n", capture_output=True, text=True,
                          cwd=python.parent, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the aiconfigurator child exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def error_pct(value: float | None, truth: int | None) -> float | None:
    """Signed error of ``value`` vs ``truth`` [%], or None when either is missing (or truth is 0)."""
    if value is None or truth is None or truth == 0:
        return None
    return 100.0 * (value - truth) / truth


def _pct(value: float | None) -> str:
    if value is None:
        return "n/a"
    return "0" if value == 0 else f"{value:+.2f}"


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{round(value):,}"


def compare(ids: list[str], peer: dict) -> list[dict]:
    """One record per model: the three tools' parameters and KV bytes per token, and who is closer."""
    table = json.loads((ROOT / "model_catalog" / "verification.json").read_text())
    verification = {row["model_id"]: row for row in table["models"]}
    rows = []
    for model_id in ids:
        truth_params, truth_kv, status = transformers_truth(model_id, verification)
        our_params, our_kv, our_engine_kv, our_tower = ours(model_id)
        aic = peer["models"][model_id]
        aic_params = aic["weight_bytes"] / 2 if "error" not in aic else None
        aic_kv = aic["kv_per_token"] if "error" not in aic else None
        rows.append({
            "model": model_id, "status": status, "aic_family": aic.get("family"), "aic_error": aic.get("error"),
            "aic_cached_config": aic["cached_config"],
            "params": (truth_params, our_params, aic_params),
            "params_err": (error_pct(our_params, truth_params), error_pct(aic_params, truth_params)),
            "towers": (our_tower, aic.get("encoder_weight_bytes", 0) / 2),
            "kv": (truth_kv, our_kv, aic_kv), "our_engine_kv": our_engine_kv,
            "kv_err": (error_pct(our_kv, truth_kv), error_pct(aic_kv, truth_kv)),
        })
    return rows


def _closer(ours_err: float | None, aic_err: float | None) -> bool:
    return aic_err is not None and ours_err is not None and abs(aic_err) < abs(ours_err)


def summary(rows: list[dict]) -> list[str]:
    """The totals lines, and one line per place where aiconfigurator is closer to transformers than we are."""
    lines = []
    for field, label in (("params", "parameters"), ("kv", "KV bytes/token")):
        judged = [r for r in rows if r[field][0] is not None]
        we = sum(r[field][1] == r[field][0] for r in judged)
        they = sum(r[field][2] is not None and r[field][2] == r[field][0] for r in judged)
        refused = sum(r[field][2] is None for r in judged)
        closer = [r for r in judged if _closer(*r[f"{field}_err"])]
        lines.append(f"{label}: we are exact on {we} of {len(judged)}; aiconfigurator exact on {they} of "
                     f"{len(judged)} ({refused} not supported), closer than us on {len(closer)}")
        for r in closer:
            lines.append(f"  BUG here: {r['model']} {label}: transformers {_num(r[field][0])}, ours "
                         f"{_num(r[field][1])}, aiconfigurator {_num(r[field][2])}")
    unjudged = [r["model"] for r in rows if r["params"][0] is None]
    if unjudged:
        lines.append(f"no transformers truth (transformers cannot build them): {', '.join(unjudged)}")
    return lines


def markdown(rows: list[dict]) -> str:
    """The table as README markdown (numbers with thousands separators, errors in % vs transformers)."""
    head = ("| Model | aiconfigurator model | Params: transformers | ours | aiconfigurator (err %) | "
            "KV B/token: transformers | ours (engine view) | aiconfigurator (err %) |\n|---|---|---:|---:|---:|---:|---:|---:|")
    out = [head]
    for r in rows:
        if r["aic_error"]:
            mapped = "not supported"
        else:
            mapped = f"{r['model']} ({r['aic_family']}{'' if r['aic_cached_config'] else ', config not shipped'})"
        tp, op, ap = r["params"]
        tk, ok, ak = r["kv"]
        aic_p = "not supported" if ap is None else f"{_num(ap)} ({_pct(r['params_err'][1])})"
        aic_k = "not supported" if ak is None else f"{_num(ak)} ({_pct(r['kv_err'][1])})"
        ours_p = _num(op) if tp is None else f"{_num(op)} ({_pct(r['params_err'][0])})"
        ours_k = (f"{_num(ok)}" if tk is None else f"{_num(ok)} ({_pct(r['kv_err'][0])})") + f" ({_num(r['our_engine_kv'])})"
        out.append(f"| `{r['model']}` | {mapped} | {_num(tp)} | {ours_p} | {aic_p} | {_num(tk)} | {ours_k} | {aic_k} |")
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer-spec", default=PEER_SPEC, help=f"pip requirement for the peer (default {PEER_SPEC})")
    parser.add_argument("--venv", type=Path, default=None,
                        help="the peer's venv (default: aiconfigurator-venv in the user's cache folder)")
    parser.add_argument("--markdown", action="store_true", help="print the table as README markdown")
    args = parser.parse_args()

    python = ensure_peer_venv(args.venv or cache_dir() / "aiconfigurator-venv", args.peer_spec,
                              imports="aiconfigurator_core.sdk.models")
    ids = models_2026()
    peer = run_peer(python, ids)
    rows = compare(ids, peer)
    print(f"aiconfigurator {peer['version']} (aiconfigurator-core {peer['core_version']}), backend vllm, bf16 weights "
          f"and KV, TP 1; {len(ids)} catalog models of the 2026 reference configs")
    if args.markdown:
        print(markdown(rows))
    else:
        print(f"{'model':52} {'params: transformers':>22} {'ours':>18} {'aiconfigurator':>18} {'err %':>8}   "
              f"{'KV B/tok: tf':>12} {'ours':>9} {'(engine)':>9} {'aic':>11} {'err %':>8}")
        for r in rows:
            tp, op, ap = r["params"]
            tk, ok, ak = r["kv"]
            aic_p = "not supported" if ap is None else _num(ap)
            print(f"{r['model']:52} {_num(tp):>22} {_num(op):>18} {aic_p:>18} {_pct(r['params_err'][1]):>8}   "
                  f"{_num(tk):>12} {_num(ok):>9} {_num(r['our_engine_kv']):>9} "
                  f"{'n/s' if ak is None else _num(ak):>11} {_pct(r['kv_err'][1]):>8}")
        for r in rows:
            if any(r["towers"]):
                print(f"  towers of {r['model']}: ours {_num(r['towers'][0])}, aiconfigurator's encoder "
                      f"{_num(r['towers'][1])}")
        for r in rows:
            if r["aic_error"]:
                print(f"  aiconfigurator refused {r['model']}: {r['aic_error']}")
    for line in summary(rows):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
