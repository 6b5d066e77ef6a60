"""Dev-only: compare the planner's parameter counts with transformers' model classes.

For every catalog model, builds ``AutoModelForCausalLM.from_config(text_config)``
on the meta device (no memory, no weights) and compares
``sum(p.numel() for p in model.parameters())`` with
``count_parameters(model_spec(id).params)``. Prints one table row per model and
exits 1 on any mismatch, listing the transformers tensors whose totals differ.

Needs torch (not a runtime dependency of ``planner`` or ``model_catalog``).

Usage:
    python scripts/verify_param_counts.py [MODEL_ID ...]
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

from model_catalog import get_model_entry, model_ids, model_spec  # noqa: E402
from model_catalog.hf_config import _quiet_transformers, load_text_config  # noqa: E402
from planner.model.params import count_parameters  # noqa: E402

_WRAPPER = re.compile(r"^(model|transformer|gpt_neox)\.")
_INDEX = re.compile(r"\.\d+\.")


def transformers_count(model_id: str) -> tuple[int, str, Counter]:
    """(parameter count, model class name, numel per layer-agnostic tensor name)."""
    config = load_text_config(get_model_entry(model_id).config)
    with _quiet_transformers(), torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    per_name: Counter = Counter()
    for name, tensor in model.named_parameters():
        per_name[_INDEX.sub(".*.", _WRAPPER.sub("", name))] += tensor.numel()
    return sum(p.numel() for p in model.parameters()), type(model).__name__, per_name


def main(ids: list[str]) -> int:
    import transformers

    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"{'model':48} {'class':28} {'transformers':>18} {'planner':>18}  match")
    failures = 0
    for model_id in ids:
        expected, class_name, per_name = transformers_count(model_id)
        spec = model_spec(model_id)
        got = count_parameters(spec.params)
        ok = expected == got
        failures += not ok
        print(f"{model_id:48} {class_name:28} {expected:>18,} {got:>18,}  {'yes' if ok else 'NO'}")
        if not ok:
            mine: Counter = Counter()
            for group in spec.params:
                mine[group.name] += group.total_numel
            for name in sorted(set(per_name) | set(mine)):
                if per_name[name] != mine[name]:
                    print(f"    {name}: transformers {per_name[name]:,} planner {mine[name]:,}")
    print(f"{len(ids) - failures}/{len(ids)} exact")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(model_ids())))
