"""The attacks of ``scripts/attack.py``: :class:`Attack` (one hostile input and how it is delivered)
and :func:`build_attacks`, which builds every payload once, before anything is timed.

Share codes are framed with the product's own codec (:func:`model_catalog.share_codec.pack`) from a
raw payload dict, so a code can hold what the validators refuse; the Markdown names use the real
encoder. How each kind is delivered: ``scripts/attack.py`` (module docstring, "Delivery").
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

QWEN_VL = "Qwen/Qwen3-VL-8B-Instruct"
"""Catalog model whose config carries the vision attacks."""

NAMED_BASE = "meta-llama/Meta-Llama-3-8B"
"""Catalog model whose (valid) config carries the Markdown names."""

EVIL = "https://evil.example"

MIB = 1 << 20


# --------------------------------------------------------------------------
# Attacks
# --------------------------------------------------------------------------
@dataclass
class Attack:
    """One hostile input and how it is delivered.

    Attributes:
        name: Table label.
        kind: ``link``, ``widget`` or ``upload``.
        page: Streamlit page name (``""`` = Home, ``"Engine"`` ...).
        query: Query string of the attack run (``link``).
        key: Widget key the value goes to (``widget``, ``upload``).
        text: Text area value (``widget``).
        file_name, file_data: The uploaded file (``upload``).
        press: Key of the button pressed with the upload (``upload``), or "".
        open_panel: Key of the lazy expander to open first (``upload``), or "".
        refused: The page must show a message (the input is to be refused).
        short: Part of ``--short``.
        show_heading: Report the page's subheader, not an alert (Markdown names).
        about: Text of the alert to report first when the page shows several (the specific reason).
        frame_refused: The server must refuse the message itself: it closes the socket with code
            :data:`FRAME_TOO_BIG` (``server.maxWidgetStateSize``) before decoding the frame.
    """

    name: str
    kind: str
    page: str = ""
    query: str = ""
    key: str = ""
    text: str = ""
    file_name: str = ""
    file_data: bytes = b""
    press: str = ""
    open_panel: str = ""
    refused: bool = True
    short: bool = False
    show_heading: bool = False
    about: str = ""
    frame_refused: bool = False


FRAME_TOO_BIG = 1009
"""WebSocket close code "message too big" (RFC 6455, section 7.4.1)."""


def _catalog_config(model_id: str) -> dict:
    """A deep, plain-JSON copy of a catalog model's config.json."""
    from model_catalog import get_model_entry

    return json.loads(json.dumps(get_model_entry(model_id).config))


def _raw_model_code(config: dict, name: str = "attack-model") -> str:
    """A ``custom_model`` code around ``config`` as given: framed like the codec's, never validated."""
    from model_catalog import share_codec

    return share_codec.pack({"n": name, "c": config, "s": "attack script"})


def _raw_gpu_code(memory: str) -> str:
    """A ``custom_gpu`` code with memory ``memory`` (GiB), framed like the codec's, never validated."""
    from model_catalog import share_codec

    payload = {"n": "Attack GPU", "m": memory, "u": "GiB", "b": 1000.0, "p": None}
    assert set(payload) == set(share_codec._GPUPayload.model_fields), "the GPU payload's field names changed"
    return share_codec.pack(payload)


def _named_model_code(name: str) -> str:
    """A valid ``custom_model`` code (the product's encoder) for a catalog config under ``name``."""
    from model_catalog import custom, share_codec

    return share_codec.encode_model(custom.read_custom_config(_catalog_config(NAMED_BASE), name))


def _vision(**changes) -> str:
    """Qwen3-VL-8B's config with ``vision_config`` keys replaced, as a raw ``custom_model`` code."""
    config = _catalog_config(QWEN_VL)
    config["vision_config"] = {**config["vision_config"], **changes}
    return _raw_model_code(config, "Qwen3-VL-8B-attack")


def _q(*pairs: tuple[str, str]) -> str:
    """A query string (no ``?``), values percent-encoded; a key may repeat."""
    return urlencode(list(pairs))


def _gguf_bomb() -> bytes:
    """A tiny GGUF file whose header claims ``block_count`` 2^27 (tests/fixtures/gguf_files.py's writer)."""
    from tests.fixtures.gguf_files import write_tiny_gguf

    with tempfile.TemporaryDirectory(prefix="attack_gguf_") as tmp:
        path = write_tiny_gguf(Path(tmp) / "blocks.gguf", skip_keys=("block_count",),
                               extra=lambda writer: writer.add_block_count(1 << 27))
        return path.read_bytes()


MODEL_REASON = "Link parameter custom_model"
"""How the page's message about a refused ``custom_model`` code begins (the specific reason)."""

LOG_LINE = "INFO 05-01 12:00:00 [gpu_worker.py:298] Available KV cache memory: 50.91 GiB\n"
"""One realistic vLLM log line (78 characters), repeated into the 14 MB paste."""


def build_attacks() -> list[Attack]:
    """Every attack of the issue, payloads built once (before any is timed)."""
    depth = _vision(depth=10**9)
    huge = 10**2000
    custom_model = ("model", "custom")
    attacks = [
        Attack("link: vision depth 1e9 (Home)", "link", "", _q(custom_model, ("custom_model", depth)), short=True,
               about=MODEL_REASON),
        Attack("link: vision depth 1e9 (Engine)", "link", "Engine", _q(custom_model, ("custom_model", depth)),
               about=MODEL_REASON),
        Attack("link: custom GPU memory 1e999999", "link", "",
               _q(("gpu", "custom"), ("custom_gpu", _raw_gpu_code("1e999999"))), short=True,
               about="Link parameter custom_gpu"),
        Attack("link: vision sizes 10^2000", "link", "",
               _q(custom_model, ("custom_model", _vision(hidden_size=huge, intermediate_size=huge,
                                                         out_hidden_size=huge))), about=MODEL_REASON),
        Attack("link: vision patch size 0", "link", "",
               _q(custom_model, ("custom_model", _vision(patch_size=0))), short=True,
               about=MODEL_REASON),
        Attack("link: model named [link](evil)", "link", "",
               _q(custom_model, ("custom_model", _named_model_code(f"[Click to re-login]({EVIL}/x)"))),
               refused=False, short=True, show_heading=True),
        Attack("link: model named ![img](evil)", "link", "",
               _q(custom_model, ("custom_model", _named_model_code(f"![t]({EVIL}/p.png)"))),
               refused=False, show_heading=True),
        Attack("link: ?model=[x](evil)", "link", "", _q(("model", f"[x]({EVIL})"))),
        Attack("link: /Catalog?search=[x](evil)", "link", "Catalog", _q(("search", f"[x]({EVIL})")),
               refused=False),
        Attack("link: ?model= 100 KB", "link", "", _q(("model", "a" * 100_000)), short=True),
        Attack("link: ?model= repeated x999", "link", "", _q(*[("model", QWEN_VL)] * 999)),
        Attack("widget: log 'Load weight end.' x16000", "widget", "Engine", key="engine_log",
               text="Load weight end." * 16_000, refused=False, short=True),
        Attack("widget: log 'Peak memory ...' x8000", "widget", "Engine", key="engine_log",
               text="Peak memory during memory usage profiling" * 8_000, refused=False),
        Attack("widget: log 14 MB of lines", "widget", "Engine", key="engine_log",
               text=LOG_LINE * (14_000_000 // len(LOG_LINE)), refused=False, short=True, frame_refused=True),
        Attack("upload: 60 MiB CSV of '1' lines", "upload", "Allocation", key="lengths_csv",
               file_name="lengths.csv", file_data=b"1\n" * (30 * MIB), short=True),
        Attack("upload: 70 MiB CSV (over maxUploadSize)", "upload", "Allocation", key="lengths_csv",
               file_name="lengths.csv", file_data=b"1\n" * (35 * MIB), short=True),
        Attack("upload: GGUF block_count 2^27", "upload", "", key="custom_gguf_file", file_name="blocks.gguf",
               file_data=_gguf_bomb(), press="custom_use_gguf", open_panel="custom_panel_open", short=True),
    ]
    return attacks
