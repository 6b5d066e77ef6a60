"""What production serving adds to the memory plan: LoRA adapter slots, speculative decoding, multimodal
inputs, KV offload.

One module per feature, each with a frozen request record (field names are vLLM's flag names with
underscores, the CLI flags and URL keys), a pure function that prices the feature on one GPU, and a
frozen result with ``to_dict`` for the JSON:

* :mod:`planner.serving.lora`: the adapter slots an engine preallocates per GPU (vLLM
  ``--enable-lora --max-loras --max-lora-rank --max-cpu-loras``, SGLang ``--max-loras-per-batch``).
* :mod:`planner.serving.speculative`: draft model, EAGLE / EAGLE-3 heads, MTP / next-n layers:
  extra weights, extra KV per token, lookahead slots per sequence.
* :mod:`planner.serving.offload`: host memory and host-link time of CPU KV offload
  (``--kv-offloading-size``, LMCache, V0 ``--swap-space``).
* :mod:`planner.serving.multimodal`: image tokens per request, the encoder cache budget and the
  vision tower (split into :mod:`~planner.serving.vision_config`, :mod:`~planner.serving.media_tokens` and
  :mod:`~planner.serving.vision_towers`; Qwen-VL, Gemma 3 and Gemma 4).
* :mod:`planner.serving.features`: :class:`ServingFeatures`, the one optional record
  :class:`planner.budget.PlanRequest` carries (``serving=None`` keeps every number as before), and
  :func:`serving_effects`, what it changes in the budget chain.

What this package may import: the standard library, ``planner.model`` and ``planner.units`` (checked by
``tests/test_planner_purity.py``). ``planner.budget`` imports it, so it never imports the budget,
the engines, the traffic planner, the CLI, the UI or the catalog; the edges (CLI, pages) read the
catalog and hand plain values over.

Sources: every formula names the engine file (and function) it follows in its docstring.
"""

from planner.serving.features import ServingEffects, ServingFeatures, serving_effects
from planner.serving.lora import LoRAConfig, LoRASlots, lora_slots
from planner.serving.multimodal import MultimodalConfig, vision_from_config
from planner.serving.offload import OffloadConfig, host_link
from planner.serving.speculative import SpeculativeConfig, mtp_layers_from_config

__all__ = ["LoRAConfig", "LoRASlots", "MultimodalConfig", "OffloadConfig", "ServingEffects", "ServingFeatures",
           "SpeculativeConfig", "host_link", "lora_slots", "mtp_layers_from_config", "serving_effects",
           "vision_from_config"]
