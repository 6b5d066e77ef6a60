"""Dev-only: what vLLM v0.22's own allocator code says about DeepSeek-V4's KV cache, on CPU.

Builds the ``KVCacheSpec`` every cache layer of DeepSeek-V4-Flash / -Pro registers, in registration order
(per decoder layer: a CSA layer's indexer keys and indexer compressor state, then the sliding K=V cache, the
compressed K and the compressor state; the values each ``get_kv_cache_spec`` passes, read in
vllm/models/deepseek_v4/attention.py, compressor.py and vllm/v1/attention/backends/mla/sparse_swa.py), hands
them to vLLM's ``get_kv_cache_configs`` (vllm/v1/core/kv_cache_utils.py) with a stand-in config that carries
only what that function reads (``max_model_len``, ``max_num_batched_tokens``, no context parallel, no block
override, no speculative config), and records what it answers: the "KV cache is needed" figure and the
estimated maximum length of its refusal, or the blocks and the concurrency of each worker. Only the spec
construction is this script's; grouping, padding, blocks and the memory check are vLLM's code.

Usage:
    python scripts/measure_deepseek_v4_vllm_pages.py --vllm-source DIR [--output PATH]

``DIR`` holds the ``vllm`` package of the v0.22.0 wheel (unpacked; its Python dependencies installed, no GPU
needed). Writes ``tests/data/reference/deepseek_v4_vllm_pages.json``, read by
``tests/test_vllm_deepseek_v4.py`` (no vLLM needed there).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "data" / "reference" / "hf_configs"
OUTPUT = ROOT / "tests" / "data" / "reference" / "deepseek_v4_vllm_pages.json"
GIB = 1 << 30

CASES = (
    # model, max_model_len, max_num_batched_tokens, available [bytes], first layer of each stage, MTP layers
    ("deepseek-ai/DeepSeek-V4-Flash", 30000, 16384, int(5.44 * GIB), (0,), 0),
    ("deepseek-ai/DeepSeek-V4-Flash", 30000, 16384, int(5.4405 * GIB), (0,), 0),
    ("deepseek-ai/DeepSeek-V4-Flash", 30000, 8192, int(5.44 * GIB), (0,), 0),
    ("deepseek-ai/DeepSeek-V4-Flash", 13000, 16384, int(5.44 * GIB), (0,), 0),
    ("deepseek-ai/DeepSeek-V4-Flash", 30000, 16384, int(5.44 * GIB), (0,), 1),
    ("deepseek-ai/DeepSeek-V4-Flash", 13000, 16384, int(5.44 * GIB), (0, 22), 0),
    ("deepseek-ai/DeepSeek-V4-Flash", 8192, 2048, 20 * GIB, (0, 11, 22, 33), 0),
    ("deepseek-ai/DeepSeek-V4-Pro", 30000, 16384, int(5.44 * GIB), (0,), 0),
    ("deepseek-ai/DeepSeek-V4-Pro", 8000, 16384, int(5.44 * GIB), (0,), 0),
)
"""The runs recorded: N11's launch (the printed available memory, and a value inside its print interval that
gives the printed estimate), the ``serve`` token budget, a length that fits, an MTP layer, two pipeline splits
(the planner's ``pipeline_layer_ranges``) and V4-Pro."""


def layer_specs(config: dict, block_size: int, mtp_layers: int) -> dict:
    """``{cache layer name: KVCacheSpec}`` in registration order (module docstring)."""
    import torch
    from vllm.v1.kv_cache_interface import MLAAttentionSpec, SlidingWindowMLASpec

    specs = {}
    n = config["num_hidden_layers"]
    for i in range(n + mtp_layers):
        ratio = max(1, config["compress_ratios"][i]) if i < n else 1  # an MTP layer has ratio 1
        name = f"model.layers.{i}.attn"
        if ratio == 4:
            index_dim = config["index_head_dim"]
            specs[f"{name}.indexer.k_cache"] = MLAAttentionSpec(
                block_size=block_size, num_kv_heads=1, head_size=index_dim + index_dim // 128 * 4, dtype=torch.uint8,
                compress_ratio=4, alignment=576)
            specs[f"{name}.indexer.compressor.state_cache"] = SlidingWindowMLASpec(
                block_size=4, num_kv_heads=1, head_size=2 * 2 * index_dim, dtype=torch.float32, sliding_window=8,
                alignment=576)
        specs[f"{name}.swa_cache"] = SlidingWindowMLASpec(
            block_size=64, num_kv_heads=1, head_size=config["head_dim"], dtype=torch.uint8,
            sliding_window=config["sliding_window"], cache_dtype_str="fp8_ds_mla", alignment=576,
            model_version="deepseek_v4")
        if ratio > 1:
            coff = 2 if ratio == 4 else 1
            specs[name] = MLAAttentionSpec(
                block_size=block_size, num_kv_heads=1, head_size=config["head_dim"], dtype=torch.uint8,
                compress_ratio=ratio, cache_dtype_str="fp8_ds_mla", alignment=576, model_version="deepseek_v4")
            specs[f"{name}.compressor.state_cache"] = SlidingWindowMLASpec(
                block_size=4 if ratio == 4 else 8, num_kv_heads=1, head_size=2 * coff * config["head_dim"],
                dtype=torch.float32, sliding_window=coff * ratio, alignment=576)
    return specs


def stand_in_config(max_model_len: int, max_num_batched_tokens: int):
    """The fields of ``VllmConfig`` that ``get_kv_cache_configs`` reads."""
    ns = types.SimpleNamespace
    return ns(model_config=ns(max_model_len=max_model_len, original_max_model_len=max_model_len),
              scheduler_config=ns(max_num_batched_tokens=max_num_batched_tokens,
                                  disable_hybrid_kv_cache_manager=False),
              parallel_config=ns(decode_context_parallel_size=1, prefill_context_parallel_size=1),
              cache_config=ns(num_gpu_blocks_override=None), speculative_config=None)


def run(case) -> dict:
    """One case through ``get_kv_cache_configs``."""
    import vllm
    from vllm.v1.core import kv_cache_utils as U

    model_id, length, batched, available, starts, mtp = case
    config = json.loads((CONFIGS / f"{model_id.replace('/', '__')}.json").read_text())
    every = layer_specs(config, 256, mtp)
    bounds = [*starts, config["num_hidden_layers"] + mtp]
    workers = [{k: v for k, v in every.items() if a <= int(k.split(".")[2]) < b} for a, b in zip(bounds, bounds[1:])]
    record = {"model": model_id, "max_model_len": length, "max_num_batched_tokens": batched,
              "available_bytes": available, "stage_first_layers": list(starts), "mtp_layers": mtp,
              "block_size": 256, "vllm_version": vllm.__version__}
    vllm_config = stand_in_config(length, batched)
    try:
        configs = U.get_kv_cache_configs(vllm_config, workers, [available] * len(workers))
    except ValueError as exc:
        text = str(exc)
        record["needed_gib_printed"] = re.search(r"\((\d+\.\d+) GiB KV cache is needed", text).group(1)
        record["estimated_max_model_len"] = int(re.search(r"maximum model length is (\d+)", text).group(1))
        return record
    record["num_blocks"] = configs[0].num_blocks
    record["max_concurrency"] = [U.get_max_concurrency_for_kv_cache_config(vllm_config, c) for c in configs]
    record["group_layers"] = [len(g.layer_names) for g in configs[0].kv_cache_groups]
    return record


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vllm-source", type=Path, help="folder holding the vllm package (v0.22.0 wheel, unpacked)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    args = parser.parse_args(argv)
    if args.vllm_source:
        sys.path.insert(0, str(args.vllm_source))
    runs = [run(case) for case in CASES]
    out = {"measured": dt.date.today().isoformat(),
           "method": "scripts/measure_deepseek_v4_vllm_pages.py: the specs each DeepSeek-V4 cache layer registers, "
                     "through vLLM's own get_kv_cache_configs (vllm/v1/core/kv_cache_utils.py) on CPU",
           "source": "vLLM v0.22.0 wheel (published release), vllm/v1/core/kv_cache_utils.py and "
                     "vllm/v1/kv_cache_interface.py",
           "runs": runs}
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {len(runs)} runs to {args.output}")


if __name__ == "__main__":
    main()
