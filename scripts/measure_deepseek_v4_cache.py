"""Dev-only: what transformers' DeepSeek-V4 cache keeps, per layer kind, at lengths inside a compression window.

Builds a three-layer shrunk DeepSeek-V4 (one sliding-only, one CSA and one HCA
layer where the model has them, every cache shape real: ``head_dim`` 512,
``index_head_dim`` 128, window 128, ratios 4 and 128; hidden width, experts,
LoRA ranks and ``index_n_heads`` shrunk, :mod:`model_catalog.verify`), prefills
``n - 1`` tokens, decodes one, and records the bytes of every storage each cache
layer keeps alive (:func:`model_catalog.verify.measure_cache`). The lengths sit
at a multiple of the HCA window (128) and 1, 100 and 127 past it, near 1K tokens
(one prefill call) and near 100K tokens (the issue's 100,228; the prompt is fed
in chunks of :data:`LONG_CHUNK` tokens, which leaves the same state after the
decode step, because the decode step replaces every buffer view the last
prefill call left). One more run casts the model with ``.to(torch.bfloat16)``,
which also casts the compressors' fp32 ``position_bias`` (design note 4 of
:mod:`planner.model.sparse`).

Usage:
    python scripts/measure_deepseek_v4_cache.py [--long] [--output PATH]

Writes ``tests/data/reference/deepseek_v4_transformers_cache.json`` (read by
``tests/test_deepseek_v4_transformers_cache.py`` without torch).

Sources: transformers models/deepseek_v4/modeling_deepseek_v4.py
(``DeepseekV4HCACache.store_compression_weights``, ``DeepseekV4CSACache.update_overlap_state``,
``DeepseekV4CSACompressor.forward``, ``DeepseekV4PreTrainedModel._keep_in_fp32_modules_strict``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MODELS = ("deepseek-ai/DeepSeek-V4-Flash", "deepseek-ai/DeepSeek-V4-Pro")
SHORT_LENGTHS = (1024, 1025, 1124, 1151)
"""Sequence lengths after the decode step: 8 x 128 + 0, 1, 100, 127 [tokens]."""
LONG_LENGTHS = (100_224, 100_225, 100_228, 100_324, 100_351)
"""783 x 128 + 0, 1, 4, 100, 127 [tokens]; 100,228 (783 x 128 + 4) is the issue's length."""
LONG_CHUNK = 8192
"""Prefill chunk of the long runs [tokens]."""
CAST_LENGTH = 1124
KINDS = ("sliding_attention", "compressed_sparse_attention", "heavily_compressed_attention")
OUTPUT = ROOT / "tests" / "data" / "reference" / "deepseek_v4_transformers_cache.json"


def build(model_id: str):
    """``(three-layer shrunk model, kinds, catalog layer index of each kind)``."""
    from model_catalog import get_model_entry, model_spec
    from model_catalog import verify as V
    from model_catalog.hf_config import _quiet_transformers, read_config
    from planner.serving.multimodal import text_only

    spec = text_only(model_spec(model_id))
    cfg = read_config(get_model_entry(model_id).config).text
    kinds = tuple(k for k in KINDS if k in cfg.layer_types)
    small = V.shrunken_config(cfg, spec.head_dim)
    kwargs = small.to_dict()
    for key in ("model_type", "transformers_version"):
        kwargs.pop(key, None)
    kwargs.update(num_hidden_layers=len(kinds), layer_types=list(kinds), mlp_layer_types=["moe"] * len(kinds),
                  num_hash_layers=0, index_n_heads=1)  # index heads never reach the cache
    with _quiet_transformers():
        small = type(cfg)(**kwargs)
    return V.build_shrunken_model(small, V.STUB_ATTENTION), kinds, tuple(cfg.layer_types.index(k) for k in kinds)


def measure(model, total: int, chunk: int | None = None) -> tuple[list[dict], list[dict] | None]:
    """Per cache layer ``{tensor_bytes, memory_bytes}`` after the decode step (and after a one-call prefill)."""
    import torch

    from model_catalog import verify as V
    from model_catalog.hf_config import _quiet_transformers

    prompt = total - 1
    ids = torch.randint(0, model.config.vocab_size, (1, total), generator=torch.Generator().manual_seed(total))
    step = chunk or prompt
    cache, prefill = None, None
    with torch.no_grad(), _quiet_transformers():
        for start in range(0, prompt, step):
            extra = {} if cache is None else {"cache": cache}
            cache = V._output_cache(model(input_ids=ids[:, start:min(prompt, start + step)], use_cache=True, **extra))
        if chunk is None:
            prefill = [_bytes(V.measure_cache(layer)) for layer in cache.layers]
        cache = V._output_cache(model(input_ids=ids[:, prompt:], use_cache=True, cache=cache))
    return [_bytes(V.measure_cache(layer)) for layer in cache.layers], prefill


def _bytes(m) -> dict:
    return {"tensor_bytes": m.tensor_bytes, "memory_bytes": m.memory_bytes}


def run(long: bool) -> dict:
    import torch
    import transformers

    out = {"transformers_version": transformers.__version__, "torch_version": torch.__version__,
           "measured": dt.date.today().isoformat(), "dtype": "bfloat16",
           "method": "scripts/measure_deepseek_v4_cache.py: three-layer shrunk copy, prefill n - 1 tokens, one "
                     "decode step, bytes of the storages each cache layer keeps alive (model_catalog/verify.py "
                     "measure_cache); long runs prefill in chunks of %d tokens" % LONG_CHUNK,
           "models": {}}
    for model_id in MODELS:
        model, kinds, indices = build(model_id)
        runs = []
        for total in SHORT_LENGTHS + (LONG_LENGTHS if long else ()):
            started = time.perf_counter()
            chunk = LONG_CHUNK if total in LONG_LENGTHS else None
            decode, prefill = measure(model, total, chunk)
            row = {"num_tokens": total, "decode": dict(zip(kinds, decode))}
            if prefill is not None:
                row["prefill"] = dict(zip(kinds, prefill))
            runs.append(row)
            print(f"{model_id} n={total}: {time.perf_counter() - started:.1f} s", flush=True)
        model.to(torch.bfloat16)  # casts position_bias too
        cast, _ = measure(model, CAST_LENGTH)
        out["models"][model_id] = {"layer_index": dict(zip(kinds, indices)), "runs": runs,
                                   "cast_to_bf16": {"num_tokens": CAST_LENGTH, "decode": dict(zip(kinds, cast))}}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="also the ~100K-token lengths (minutes on CPU)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args()
    args.output.write_text(json.dumps(run(args.long), indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
