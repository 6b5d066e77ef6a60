"""Serving at scale: data + expert parallel, decode context parallel, prefill / decode pools, deployments.

* :mod:`~planner.scale.layout`: the engines' flags (:class:`ScaleRequest`) -> where each part of the
  model lives (:class:`RankLayout`).
* :mod:`~planner.scale.weights`: the fullest GPU's weights under that layout.
* :mod:`~planner.scale.context`: decode context parallel (KV split along tokens).
* :mod:`~planner.scale.plan`: :func:`plan_scale`, one attention-DP rank planned by its engine, times the ranks.
* :mod:`~planner.scale.replicas`: a batch spread over the data-parallel ranks (each judged on its share).
* :mod:`~planner.scale.links` and :mod:`~planner.scale.disagg`: the prefill / decode pools and the KV
  transfer between them, on the product's roofline.
* :mod:`~planner.scale.deploy`: llm-d model-service values and launch commands per role.

Hand-checked example (DeepSeek-V3.2, FP8 block-128 checkpoint, 8 x H200 of 150,217,949,184 B, newest
vLLM profile, ``-dp 8 --enable-expert-parallel``, 8,192-token requests): each of the 8 DP ranks is one
GPU (TP 1); the 256 routed experts of each of the 58 MoE layers spread over the EP group of 8 = 32 per
GPU; one expert is 3 x 7,168 x 2,048 FP8 values = 44,040,192 B plus (32 x 56 + 56 x 16) fp32 block
scales = 10,752 B, so the experts take 58 x 32 x 44,050,944 = 81,758,552,064 B per GPU; attention (MLA),
the three dense layers, shared experts, embeddings and ``lm_head`` are whole on every GPU:
20,002,185,728 B, 101,760,737,792 B (94.77 GiB) in all. In the profile pass each MoE layer runs the
8 x 8,192 = 65,536 tokens all ranks gather (:mod:`planner.engines.vllm_moe_dispatch`, v0.34.0's modular
kernel): the rank's own rows 3 x 7,168 x 8,192 x 2 = 352,321,536 B; the gathered fp8 rows, their block
scales and top-k 65,536 x (7,168 + 56 x 4 + 8 x 8) = 488,636,416 B; the workspace 65,536 x 8 x 7,168 x 2
x 2 = 15,032,385,536 B (Triton's shapes); the fp8 copy of the activation 65,536 x 8 x (2,048 + 16 x 4) =
1,107,296,256 B: a forward peak of 16,980,639,744 B. The pool: floor(0.9 x 150,217,949,184) =
135,196,154,265 B, minus weights, 18,001,997,991 B of activation (that peak, 581,124,100 B Model Runner V2
state, 440,234,147 B a first launch's torch.compile), 633,339,904 B non-torch (139,460,608 B + the DP
group's 215 MiB of rings and 256 MiB of NVLS) and 910,299,136 B of CUDA graphs = 13,889,779,442 B
(12.94 GiB); the vLLM view's V3.2 cache is 61 layers x 788 B = 48,068 B per token, 3,076,352 B per 64-token
block, so 4,515 blocks = 288,960 tokens and 4,515 / 128 = 35.27 requests of 8,192 tokens per rank, x 8
ranks = 282.16 (592.48 before the gathered batch was charged). ``-tp 8`` keeps the same latent on all 8
GPUs: one pool of 115.34 requests. :func:`plan_scale` returns these figures; ``tests/test_scale.py``
checks them.
"""

from planner.scale.context import ContextParallelResult, apply_dcp
from planner.scale.disagg import DisaggPlan, PoolRequest, plan_disagg
from planner.scale.layout import RankLayout, ScaleRequest, rank_layout
from planner.scale.links import DEFAULT_LINK, LINKS, Link, link_by_id, transfer_ms
from planner.scale.plan import ScalePlan, plan_scale
from planner.scale.weights import RankWeights, rank_weight_bytes

__all__ = [
    "DEFAULT_LINK", "LINKS", "ContextParallelResult", "DisaggPlan", "Link", "PoolRequest", "RankLayout",
    "RankWeights", "ScalePlan", "ScaleRequest", "apply_dcp", "link_by_id", "plan_disagg", "plan_scale",
    "rank_layout", "rank_weight_bytes", "transfer_ms",
]
