"""JSON objects read from users with every key stated once: a repeated key is refused, not resolved in silence.

RFC 8259 section 4 says the names within an object SHOULD be unique and leaves what a reader does with a repeated
one to the reader; Python's :func:`json.loads` keeps the last value without a word (its ``object_pairs_hook``
documentation), as transformers' ``PretrainedConfig.from_json_file`` and vLLM's config loading do through it. A
config.json with ``"num_hidden_layers": 32`` and, further down, ``"num_hidden_layers": 320`` planned 320 layers. So
every reader of user JSON (a pasted or uploaded config.json, ``--config``, ``hf_quant_config.json``, a share link's
payload, the CLI's JSON flags) parses with :class:`UniqueKeys` as ``object_pairs_hook`` and refuses a repeated key
with its name and values.
"""

from __future__ import annotations

from typing import Any

from planner.text import echo, quote

MAX_KEYS_SHOWN = 5
"""Repeated keys one message names (the count of the rest follows)."""


class UniqueKeys:
    """``object_pairs_hook`` for :func:`json.loads` that builds each object as a dict and notes every key an object
    states more than once (with its values in order), instead of keeping the last value in silence.

    Example: ``hook = UniqueKeys(); json.loads(text, object_pairs_hook=hook); hook.check("config.json")``.
    """

    def __init__(self) -> None:
        self.repeated: dict[str, list[Any]] = {}
        """key -> every value of it, in order, for each key stated twice or more in one object."""

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        for key, value in pairs:
            if key in obj:
                values = self.repeated.setdefault(key, [])
                if not values:
                    values.append(obj[key])
                values.append(value)
            obj[key] = value
        return obj

    def check(self, what: str) -> None:
        """Raise when a key was repeated.

        Args:
            what: The text's name for the message (``config.json``, ``--speculative-config``).

        Raises:
            ValueError: naming at most :data:`MAX_KEYS_SHOWN` repeated keys (each quoted, at most 60 characters)
                with their values (each at most 60 characters), the count of the rest, and the fix.
        """
        if not self.repeated:
            return
        shown = [f"{quote(key)} ({_values(values)})" for key, values in list(self.repeated.items())[:MAX_KEYS_SHOWN]]
        rest = len(self.repeated) - len(shown)
        listed = ", ".join(shown) + (f" and {rest:,} more" if rest else "")
        many = len(self.repeated) > 1
        raise ValueError(f"{what} states {'these keys' if many else 'the key'} more than once in one object: {listed}; "
                         "a JSON reader would keep the last value in silence, so remove the extra "
                         f"{'copies' if many else 'copy'} and keep the value you mean")


def _values(values: list[Any]) -> str:
    """``32, then 320`` for two values; ``3 times: 1, ..., 9`` (first and last) for more."""
    if len(values) == 2:
        return f"{echo(values[0])}, then {echo(values[1])}"
    return f"{len(values):,} times: {echo(values[0])}, …, {echo(values[-1])}"
