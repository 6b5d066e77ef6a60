"""One colour per kind of memory, on every page that splits a GPU's memory (Home's budget bar, the
Engine page's per-GPU bars, the Allocation page's KV bars).

A reader learns the colours once: weights are blue, KV cache in use orange, free KV budget pale green,
the profile pass's activation peak purple, runtime / non-torch memory brown, anything over the budget
red. Green means free KV and nothing else (the Allocation page drew "wasted" in it, and the Engine page
its LoRA slots); KV held but unused (a naive reservation's tail) is grey. Tableau 10 hues, colour-blind
friendly. No Plotly here: Home imports it without the chart library (:mod:`ui.budget_bar`).
"""

from __future__ import annotations

WEIGHTS = "#4C78A8"
"""Model weights (and the drafter's, lighter: :data:`DRAFT_WEIGHTS`)."""

KV_IN_USE = "#F58518"
"""KV cache the sequences hold (the Engine page's KV pool is this colour: memory the engine gives the cache)."""

KV_FREE = "#C7E9C0"
"""KV budget nobody holds: room for more sequences."""

KV_RESERVED = "#FDAE6B"
"""KV reserved for sequences (in use + wasted), the Allocation page's first bar."""

KV_WASTED = "#BAB0AC"
"""KV reserved but never written (a naive reservation of max_model_len, a block's unused tail)."""

OVER_BUDGET = "#D62728"
"""KV the batch needs beyond the budget, or memory past the card."""

ACTIVATION = "#B279A2"
"""The profile pass's activation peak (forward pass), and an overhead override."""

SAMPLER = "#FF9DA6"
"""The profile pass's sampler peak (logits), when it is larger than the forward pass."""

RUNTIME = "#9D755D"
"""Runtime / non-torch memory (CUDA context, NCCL buffers)."""

RUNNER_STATE = "#B5BD68"
"""Model Runner V2's sampler state and a first launch's compile (olive: apart from the activation's purple)."""

WEIGHTS_LOADED = "#9EB9D4"
"""What the engine's loaded weights take beyond the checkpoint's bytes (pale blue, the weights' family)."""

CUDA_GRAPHS = "#72B7B2"
"""CUDA graph pools."""

NOT_ALLOCATED = "#E5E8EC"
"""Card memory outside the engine's usable share."""

LORA = "#EECA3B"
"""LoRA adapter slots (yellow: not green, which is free KV)."""

DRAFT_WEIGHTS = "#A0CBE8"
"""A speculative drafter's weights (light blue, the weights' family)."""

PROFILE_EXTRAS = "#D4A6C8"
"""LoRA / encoder buffers of the profile pass (light purple, the activation's family)."""

DRAFT_KV = "#FFBF79"
"""The drafter's KV cache (light orange, the KV family)."""

STATE_POOL = "#17BECF"
"""Mamba / recurrent state pool."""
