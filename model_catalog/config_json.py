"""Reading config.json text and files: JSON only, nothing evaluated, every read capped.

A user's config.json is untrusted: :func:`parse_config_json` reads at most
:data:`MAX_CONFIG_BYTES`, refuses ``NaN`` and numbers too long to convert, and says where
JSON is broken; :func:`read_regular_file` refuses devices, FIFOs and folders before it reads
(with the same cap). A key stated twice in one object is refused (:mod:`planner.json_keys`).
:mod:`model_catalog.custom` then reads the dict.

Sources: Python :mod:`json` (``parse_constant`` / ``parse_int`` / ``object_pairs_hook`` hooks); CPython
``sys.int_info.default_max_str_digits``.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from planner.json_keys import UniqueKeys

MAX_CONFIG_BYTES = 4_000_000
"""Largest config.json accepted [bytes] (4 MB = 4 x 10**6 bytes). Most are a few KB, but ModelOpt
checkpoints list every module they leave unquantized: nvidia/MiniMax-M3-NVFP4's is 3.1 MB."""


JSON_INFINITIES: dict[str, float] = {"Infinity": float("inf"), "-Infinity": float("-inf")}
"""Non-standard JSON constants config.json files ship and transformers reads (``json.loads``):
Nemotron-H's ``time_step_limit: [0.0, Infinity]``. ``NaN`` is still refused: no published config
uses it, and in a size key it would size nothing."""


def json_constant(name: str) -> float:
    """``parse_constant`` for config.json: ``Infinity`` / ``-Infinity`` as floats, ``NaN`` refused.

    Raises:
        ValueError: ``NaN``.
    """
    if name in JSON_INFINITIES:
        return JSON_INFINITIES[name]
    raise ValueError(f"config.json holds {name}, which is not a number; use a number")


MAX_PARSED_INT_DIGITS = 4_300
"""Longest whole number parse_config_json converts [decimal digits]: CPython's default
``sys.int_info.default_max_str_digits``, beyond which ``int()`` itself refuses. Any number over 18 digits is
refused later anyway (:data:`MAX_CONFIG_INT`, with the key named); this bound only gives the longer ones a
clear message instead of CPython's."""


def json_int(text: str) -> int:
    """``parse_int`` for config.json: ``int(text)``, refusing a number too long to convert.

    Raises:
        ValueError: more than :data:`MAX_PARSED_INT_DIGITS` digits.
    """
    digits = len(text) - text.startswith("-")
    if digits > MAX_PARSED_INT_DIGITS:
        raise ValueError(f"config.json holds a whole number of {digits:,} digits (it starts {text[:12]}...); "
                         f"numbers in a model config stay below 10^18: fix that number")
    return int(text)


def parse_config_json(data: str | bytes, *, max_bytes: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Parse config.json text (JSON only, nothing evaluated).

    Args:
        data: The text or raw bytes (UTF-8).
        max_bytes: Size limit [bytes].

    Returns:
        The JSON object as a dict.

    Raises:
        ValueError: too large, not UTF-8, not JSON (with line and column), a key stated twice in one object
            (:class:`planner.json_keys.UniqueKeys`: json would keep the last value in silence), or not a JSON object.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > max_bytes:
        raise ValueError(
            f"config.json is {len(raw):,} bytes; at most {max_bytes:,} bytes are accepted "
            "(a config.json is a few KB to a few MB: did you pick the weights or tokenizer file?)")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise ValueError("config.json is not UTF-8 text (is it a binary file such as .safetensors?)") from None
    if not text.strip():
        raise ValueError("config.json is empty; paste the contents of the model's config.json")
    try:
        unique = UniqueKeys()
        parsed = json.loads(text, parse_constant=json_constant, parse_int=json_int, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        # json's messages may end in "at" ("Unterminated string starting at"): one "at" before the place
        where = f"at line {exc.lineno}, column {exc.colno}"
        raise ValueError(f"config.json is not valid JSON: {exc.msg.removesuffix(' at')} {where}") from None
    except RecursionError:
        raise ValueError("config.json nests too deeply to be a model config") from None
    unique.check("config.json")
    if not isinstance(parsed, dict):
        raise ValueError(f"config.json must be a JSON object ({{...}}), got a JSON {type(parsed).__name__}")
    return parsed


HF_QUANT_CONFIG_NAME = "hf_quant_config.json"
"""The file NVIDIA ModelOpt checkpoints ship beside config.json."""


def check_regular_file(path: Path, what: str = "a config.json file") -> None:
    """Refuse a path that is not a regular file before anything reads it.

    ``st_size`` is not to be trusted and a read may never end: ``/dev/zero`` reports 0 bytes and
    streams forever, a FIFO blocks until a writer comes.

    Raises:
        ValueError: missing, unreadable, or a device, FIFO or folder (the message says to give ``what``).
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path}: not a regular file (a device, FIFO or folder); give {what}")


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """At most ``max_bytes`` bytes of a regular file [bytes], read with that cap.

    Raises:
        ValueError: not a regular file (:func:`check_regular_file`), unreadable, or longer than
            ``max_bytes`` (naming the limit).
    """
    check_regular_file(path)
    try:
        with path.open("rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the file ({exc.strerror or exc})") from None
    if len(raw) > max_bytes:
        raise ValueError(f"{path}: more than {max_bytes:,} bytes; at most {max_bytes:,} bytes are accepted")
    return raw


def _read_json_file(path: Path) -> dict[str, Any]:
    raw = read_regular_file(path, MAX_CONFIG_BYTES)
    try:
        return parse_config_json(raw)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None
