"""The link's ``speculative_config``: vLLM's ``--speculative-config JSON``, read as ``python -m planner plan`` reads it.

The sidebar's "Serving features" block (:func:`ui.serving.serving_inputs`) shows the JSON in a text box bound to the
URL key ``speculative_config`` (the CLI flag's name, README "Sharing links"), so a link carries it and its text
stays as typed. The request is what the CLI plans from the same flags: the JSON, with the part keys
``speculative_method``, ``num_speculative_tokens`` and ``speculative_model`` overriding its ``method``,
``num_speculative_tokens`` and ``model`` as ``--speculative-method`` and its siblings override the JSON there
(:func:`planner.cli.serving.speculative_from_args`, which infers a missing method from the draft as vLLM does, then
:meth:`planner.serving.speculative.SpeculativeConfig.validate`); no second parser. A value the CLI refuses is named
with the CLI's own reason and planned without speculative decoding; the text stays in the box and the link.
QA, stop 47: the key was ignored in silence (GLM-5.2-FP8 on 8 x B200: 1,307,520 tokens where the CLI gives
1,254,656).
"""

from __future__ import annotations

import json
import shlex
from argparse import Namespace
from collections.abc import Mapping

import streamlit as st

from planner.serving.speculative import EAGLE3_DRAFT_VOCAB_SIZE, MODEL_FREE_METHODS, SpeculativeConfig
from ui.format import shorten

KEY = "speculative_config"
"""The URL key (the CLI's ``--speculative-config``)."""

PARTS = {"method": "speculative_method", "num_speculative_tokens": "num_speculative_tokens",
         "model": "speculative_model"}
"""JSON key -> the link key (and CLI flag) that overrides it."""

ECHO_CHARS = 60
"""Most characters of the JSON quoted back in a message."""


def in_link() -> bool:
    """Whether the widget state (else the link) holds a JSON: speculative decoding is asked for."""
    return bool((st.session_state.get(KEY, st.query_params.get(KEY, "")) or "").strip())


def json_input(container) -> str:
    """The sidebar's text box for the JSON (URL key ``speculative_config``); its text stripped, "" when empty."""
    from planner.cli.args import MAX_JSON_FLAG_CHARS  # noqa: PLC0415 - the CLI's limit, as the link guard's

    text = container.text_input(
        "Speculative config (vLLM JSON; empty = the method above)", key=KEY, bind="query-params",
        max_chars=MAX_JSON_FLAG_CHARS, placeholder='{"method": "eagle3", "num_speculative_tokens": 3}',
        help="vLLM `--speculative-config`, read as `python -m planner plan --speculative-config` reads it (keys "
             "`method`, `model`, `num_speculative_tokens`, `draft_vocab_size`; a missing method is inferred from "
             "the draft as vLLM does). The method, draft tokens and draft model chosen above override the JSON's, "
             "as `--speculative-method` does.")
    return (text or "").strip()


def from_link(text: str, method: str | None, tokens: int | None, draft_id: str | None, raw_config: Mapping,
              problems: list[str]) -> SpeculativeConfig | None:
    """The speculative request of JSON ``text`` with the sidebar's parts, as the CLI reads the same flags.

    Args:
        text: The ``speculative_config`` JSON as typed (not empty).
        method, tokens, draft_id: The part inputs (None = not set), which override the JSON's keys.
        raw_config: The planned model's config.json (its MTP layers).
        problems: Gets one message when the CLI would refuse the request (then None is returned), or when a part
            overrides a different JSON value (the part wins, as on the CLI).
    """
    from planner.cli.serving import speculative_from_args  # noqa: PLC0415 - the CLI's reader, only with a JSON

    args = Namespace(speculative_config=text, speculative_method=method, num_speculative_tokens=tokens,
                     speculative_model=draft_id)
    shown = f"Link parameter `{KEY}={shorten(text, ECHO_CHARS).replace('`', chr(39))}`"
    try:
        spec = speculative_from_args(args, raw_config)
        if spec is not None:
            spec.validate()  # as plan's serving_from_args: the same refusal
    except ValueError as exc:
        problems.append(f"{shown}: {exc}. The command line refuses it too, so this plan has no speculative "
                        "decoding; fix the JSON in the sidebar's Serving features (the text is kept).")
        return None
    problems.extend(_overridden(text, args, spec))
    return spec


def _overridden(text: str, args: Namespace, spec: SpeculativeConfig | None = None) -> list[str]:
    """One message naming the part keys that override a different value of the JSON (empty when none does); when
    the method that wins takes no draft model (:data:`planner.serving.speculative.MODEL_FREE_METHODS`), it says
    the JSON's ``model`` is dropped, as the CLI drops it (:func:`planner.cli.serving.speculative_from_args`)."""
    parsed = json.loads(text)  # the CLI's reader accepted it: a JSON object within its limits
    clashes = [(flag, getattr(args, flag), key, parsed[key]) for key, flag in PARTS.items()
               if getattr(args, flag) is not None and key in parsed and parsed[key] != getattr(args, flag)]
    if not clashes:
        return []
    named = "; ".join(f"`{flag}={value}` overrides the JSON's `\"{key}\": {json.dumps(mine)}`"
                      for flag, value, key, mine in clashes)
    dropped = ""
    if spec is not None and spec.method in MODEL_FREE_METHODS and parsed.get("model"):
        dropped = (f" {spec.method} takes no draft model, so the JSON's `\"model\": {json.dumps(parsed['model'])}` "
                   "is dropped from the plan and the launch commands.")
    return [f"Link parameters `{KEY}` and {', '.join(f'`{c[0]}`' for c in clashes)} disagree: {named}. The part "
            f"wins, as `--{clashes[0][0].replace('_', '-')}` overrides `--speculative-config` on the command line."
            f"{dropped} Keep one of them in the sidebar's Serving features."]


def cli_flags(spec: SpeculativeConfig) -> str:
    """The ``python -m planner`` flags for ``spec``: the part flags, or ``--speculative-config`` JSON when it
    carries keys they cannot say (an n-gram's lookup window, a draft vocabulary)."""
    if spec.passthrough or spec.draft_vocab_size != EAGLE3_DRAFT_VOCAB_SIZE:
        config = {"method": spec.method, **({"model": spec.draft_model_id} if spec.draft_model_id else {}),
                  "num_speculative_tokens": spec.num_speculative_tokens,
                  **({"draft_vocab_size": spec.draft_vocab_size}
                     if spec.draft_vocab_size != EAGLE3_DRAFT_VOCAB_SIZE else {}),
                  **dict(spec.passthrough)}
        return f"--speculative-config {shlex.quote(json.dumps(config))}"
    flags = f"--speculative-method {spec.method} --num-speculative-tokens {spec.num_speculative_tokens}"
    return flags + (f" --speculative-model {spec.draft_model_id}" if spec.draft_model_id else "")
