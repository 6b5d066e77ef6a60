"""What the serving features add to each sequence, for the one line every page that counts users shows.

Every page that shows a user count plans it with :class:`planner.serving.ServingFeatures` (Home,
Concurrency, GQA savings, Allocation, Find) or under an engine's own rules (Engine). The pages agree
on one convention, Home's: a sequence of ``context_len`` tokens is the text; the features add, per
sequence,

    image / video tokens   images x tokens_per_image + videos x tokens_per_video   (the prompt's media)
    lookahead slots        k verified drafts (+ k lookahead for draft / EAGLE / MTP)   (vLLM's scheduler)

vLLM itself counts the media tokens inside ``--max-model-len`` (a prompt's text and image placeholder
tokens are one token sequence, vllm/v1/engine/processor.py checks their sum against it), and its printed
"Maximum concurrency for N tokens per request" divides the pool by ``max_model_len`` alone, without
the lookahead slots (vllm/v1/core/kv_cache_utils.py ``get_max_concurrency_for_kv_cache_config``).
:func:`sequence_extras` gives both numbers, so the Engine page can say why its figure differs.

Worked example (tests/test_serving_one_link.py): Qwen3-VL-8B, 2 images of 1,024 x 1,024 px, EAGLE-3
with 1 draft token: each sequence holds its text + 2 x 1,026 image tokens + 2 lookahead slots.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.model.dtypes import BF16
from planner.serving.features import ServingFeatures
from planner.serving.multimodal import multimodal_cost


@dataclass(frozen=True, kw_only=True)
class SequenceExtras:
    """Token slots each sequence holds beyond its text, by cause [tokens].

    Attributes:
        media_tokens: Image and video tokens of one request's prompt.
        lookahead_tokens: Speculative-decoding slots (verified drafts and lookahead).
    """

    media_tokens: int = 0
    lookahead_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Every extra slot of one sequence [tokens]."""
        return self.media_tokens + self.lookahead_tokens


def sequence_extras(features: ServingFeatures | None) -> SequenceExtras:
    """The extra token slots per sequence ``features`` add (module docstring); zeros for None.

    The same numbers as :func:`planner.serving.serving_effects`'s ``extra_tokens_per_sequence``, split by cause
    (the media tokens do not depend on the GPU, the dtype or the profile pass).

    Raises:
        ValueError: an invalid feature setting.
    """
    if features is None:
        return SequenceExtras()
    media = lookahead = 0
    if features.multimodal is not None:
        media = multimodal_cost(features.multimodal, activation=BF16, num_batched_tokens=0,
                                engine="tokens only").tokens_per_request
    if features.speculative is not None:
        lookahead = features.speculative.extra_tokens_per_sequence
    return SequenceExtras(media_tokens=media, lookahead_tokens=lookahead)
