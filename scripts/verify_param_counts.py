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

from model_catalog import get_model_entry, model_ids, model_spec  # noqa: E402
from model_catalog.hf_config import _quiet_transformers, read_config  # noqa: E402
from model_catalog.verify import LANGUAGE_PREFIXES, _from_config  # noqa: E402
from planner.model.params import count_parameters  # noqa: E402

_WRAPPER = re.compile(r"^(model\.language_model|model|transformer|gpt_neox)\.")
_INDEX = re.compile(r"\.\d+\.")


def transformers_count(model_id: str) -> tuple[int, str, Counter]:
    """(parameter count, model class name, numel per layer-agnostic tensor name).

    A text config without a causal-LM class (Qwen3-VL, Step 3.7) is counted inside its
    wrapper's ``*ForConditionalGeneration`` over the language model and ``lm_head``.
    """
    reading = read_config(get_model_entry(model_id).config)
    with _quiet_transformers(), torch.device("meta"):
        model, text_only = _from_config(reading.text, reading.full)
    per_name: Counter = Counter()
    for name, tensor in model.named_parameters():
        if text_only or name.startswith(LANGUAGE_PREFIXES):
            per_name[_INDEX.sub(".*.", _WRAPPER.sub("", name))] += tensor.numel()
    return sum(per_name.values()), type(model).__name__, per_name


def main(ids: list[str]) -> int:
    import transformers

    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"{'model':48} {'class':28} {'transformers':>18} {'planner':>18}  match")
    failures = 0
    from model_catalog.hf_config import ADAPTERS, BY_SOURCE_MODEL_TYPES

    for model_id in ids:
        model_type = get_model_entry(model_id).config["model_type"]
        if model_type in BY_SOURCE_MODEL_TYPES and model_type in ADAPTERS:
            print(f"{model_id:48} by source: {BY_SOURCE_MODEL_TYPES[model_type].source}")
            continue
        try:
            expected, class_name, per_name = transformers_count(model_id)
        except Exception as exc:  # noqa: BLE001 - a by-source type transformers cannot build
            print(f"{model_id:48} cannot be built by transformers: {type(exc).__name__}: {exc}")
            continue
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
