"""The "Custom model & GPU" sidebar panel: any config.json, Hub repo or GGUF file, and any GPU.

The panel turns what the user gives into two share codes
(:mod:`model_catalog.share_codec`), each held in session state under its URL key
(and shown in a text input of that key) and written into the URL on every run
(:func:`_codes_into_the_url`), so the link carries the codes in use:

* ``custom_model=v1....``: the architecture keys the planner needs (and, for a
  GGUF file, its tensor types; with a second file, the repository's
  ``hf_quant_config.json``);
* ``custom_gpu=v1....``: memory with unit, bandwidth and price.

Pages select them with the id :data:`CUSTOM_ID` (``model=custom``,
``gpu=custom``); :func:`model_spec` and :func:`gpu` resolve that id and fall
back to the catalog for every other id. A damaged or tampered code gives an
``st.error`` (at the top of the page when the shared sidebar draws the panel)
and is ignored; the page keeps working with the catalog.

Untrusted input stays data: config.json is parsed as JSON (at most 4 MB) and
read through transformers' built-in config classes, never with remote code;
a GGUF file's header is parsed, never executed; the Hub is asked for
config.json and metadata only, with short timeouts. The optional Hub token
comes from Streamlit secrets or the ``HF_TOKEN`` environment variable.

The panel is a lazy expander (``on_change="rerun"``): folded, which it is unless a code is
invalid or a message waits, it draws none of its widgets, so a rerun after any other input skips
its ~30 elements (measured in the browser, side by side: rerun p50 -13 to -58 ms, cold first page
-0.4 to -1.2 s on Home, Concurrency, Allocation and Engine). The codes need no widget: the session
keeps them (:func:`_hold_codes`), the URL carries them folded or not, and :func:`current_choice` reads them;
what was typed into the panel outlives folding it (:data:`KEPT_KEYS`), uploads do not. Editing a box
changes nothing in use until a "Use" button is pressed; a "Use" that fails is said in the panel and, until
one works, at the top of the page (:func:`failed_use_line`).

Wiring: :func:`ui.inputs.sidebar_inputs` draws the panel on every page,
offers :func:`model_options` / :func:`gpu_options` in its selectboxes (the
option is shown as ``custom``: Streamlit binds a selectbox to the URL by its
label, so no ``format_func`` is used) and shows invalid codes with its link problems;
:func:`ui.catalog.model_spec` and :func:`ui.catalog.gpu` resolve ``custom``
through :func:`model_spec` / :func:`gpu` here, so pages need no change.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field

import streamlit as st

from model_catalog import custom, hub, share_codec
from model_catalog.custom import CustomGPU, CustomModel
from planner.model import ModelSpec
from planner.text import plain_or_quoted
from ui import catalog
from ui.format import format_bytes, format_int, md_message, md_text, shorten_words

CUSTOM_ID = catalog.CUSTOM_ID
"""Option id of the custom model and of the custom GPU in the sidebar selectboxes and the URL."""

MODEL_PARAM = share_codec.MODEL_PARAM
GPU_PARAM = share_codec.GPU_PARAM

_MESSAGE_KEY = "_custom_panel_message"
_FAILED_KEY = "_custom_panel_failed"
"""Session key: (what, reason, "model" or "GPU") of the user's last "Use" when it failed; a "Use" that works or
a "Clear" drops it (:func:`failed_use_line`)."""
_PROBLEMS_SEEN = "_custom_panel_problems_seen"
"""Session key: the invalid-code messages the panel was last opened for (it opens once per new set)."""
_GGUF_UPLOAD_LIMIT_MB = 32
"""Largest GGUF upload [MB]. Only the header is read (the first 32 MB hold it even for a
262,144-token vocabulary), and an uploaded file stays in the server's memory for as long as
its browser session lives, so a larger limit only lets one tab hold more of the server."""

PASTE_MAX_CHARS = custom.MAX_CONFIG_BYTES + 2_000_000
"""What the config.json paste box lets through to the server [characters]: half again the 4 MB a
config.json may have, so an oversized paste reaches :func:`model_catalog.custom.parse_config_json`
and gets its "is N bytes; at most 4,000,000" message instead of being dropped by the browser
(a text area refuses a paste over its ``max_chars``). Every rerun sends every box's text, so this box,
:data:`QUANT_PASTE_MAX_CHARS` and the log box together (12,500,000 characters) fit under
``server.maxWidgetStateSize`` (13 MB, ``.streamlit/config.toml``): a larger frame can only come from a
client that skips the boxes' limits, and the server refuses it before decoding it."""

QUANT_PASTE_MAX_CHARS = custom.MAX_CONFIG_BYTES + 500_000
"""What the hf_quant_config.json paste box lets through [characters]: the same 4 MB limit plus a
margin for its message (ModelOpt's files are a few KB to a few hundred KB)."""

CONFIG_UPLOAD_LIMIT_MB = 16
"""What the config.json uploader accepts [MB]: above the 4 MB limit for the same reason;
a file over this is refused by the uploader itself, which says so under the widget."""


@dataclass(frozen=True)
class CustomChoice:
    """What the panel holds after a run.

    Attributes:
        model: The custom model, or None (none set, or the code was invalid).
        gpu: The custom GPU, or None.
        problems: Messages about invalid codes (already shown in the panel).
    """

    model: CustomModel | None = None
    gpu: CustomGPU | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)


# --------------------------------------------------------------------------
# Decoding (cached per code: codes are data, never secrets)
# --------------------------------------------------------------------------
@st.cache_data(max_entries=64, show_spinner=False)
def _decode_model(code: str) -> tuple[CustomModel | None, str | None]:
    try:
        return share_codec.decode_model(code), None
    except ValueError as exc:
        return None, str(exc)


@st.cache_data(max_entries=64, show_spinner=False)
def _decode_gpu(code: str) -> tuple[CustomGPU | None, str | None]:
    try:
        return share_codec.decode_gpu(code), None
    except ValueError as exc:
        return None, str(exc)


def current_choice() -> CustomChoice:
    """The custom model and GPU the current codes describe (session state, else the URL)."""
    problems: list[str] = []
    found: dict[str, object] = {}
    for key, decode in ((MODEL_PARAM, _decode_model), (GPU_PARAM, _decode_gpu)):
        code = st.session_state.get(key)
        if code is None:
            code = st.query_params.get(key)
        if code:
            value, problem = decode(str(code))
            found[key] = value
            if problem:
                problems.append(problem)
    return CustomChoice(model=found.get(MODEL_PARAM), gpu=found.get(GPU_PARAM),  # type: ignore[arg-type]
                        problems=tuple(problems))


def model_spec(model_id: str) -> ModelSpec:
    """The spec for a sidebar model id: the custom model for :data:`CUSTOM_ID`, else the catalog's.

    Raises:
        ValueError: ``custom`` chosen but no valid custom model is set, or an
            unknown catalog id.
    """
    if model_id == CUSTOM_ID:
        chosen = current_choice().model
        if chosen is None:
            raise ValueError("the custom model is not set (or its link code is invalid): open 'Custom model & "
                             "GPU' in the sidebar and set one, or pick a catalog model")
        return chosen.spec
    return catalog.model_spec(model_id)


def gpu(gpu_id: str):
    """The GPU for a sidebar GPU id: the custom GPU for :data:`CUSTOM_ID`, else the catalog's.

    Raises:
        ValueError: ``custom`` chosen but no valid custom GPU is set, or an unknown id.
    """
    if gpu_id == CUSTOM_ID:
        chosen = current_choice().gpu
        if chosen is None:
            raise ValueError("the custom GPU is not set (or its link code is invalid): open 'Custom model & "
                             "GPU' in the sidebar and set one, or pick a catalog GPU")
        return chosen
    return catalog.gpu(gpu_id)


def model_options(catalog_ids: tuple[str, ...]) -> tuple[str, ...]:
    """Catalog ids plus :data:`CUSTOM_ID` when a valid custom model is set."""
    return (*catalog_ids, CUSTOM_ID) if current_choice().model is not None else tuple(catalog_ids)


def launch_name_note(model_id: str) -> str | None:
    """The line beside a launch command that serves the custom model under its panel name, or None: the name of a
    pasted, uploaded or GGUF model is only a label (``custom-model`` by default), which the engine cannot load,
    while a model read from the Hub (source ``hf:...``) is served under its repo id. The config's
    ``_name_or_path`` is not read (the reader drops it), so the note cannot name the checkpoint itself."""
    chosen = current_choice().model if model_id == CUSTOM_ID else None
    if chosen is None or chosen.source.startswith("hf:"):
        return None
    return (f"`{md_text(chosen.name)}` is this page's name for the custom model, not a checkpoint the engine can "
            "load: replace it in the command with the model's Hub repo id or local path.")


def gpu_options(catalog_ids: tuple[str, ...]) -> tuple[str, ...]:
    """Catalog GPU ids plus :data:`CUSTOM_ID` when a valid custom GPU is set."""
    return (*catalog_ids, CUSTOM_ID) if current_choice().gpu is not None else tuple(catalog_ids)


# --------------------------------------------------------------------------
# Callbacks: run before the next script run, so they may set widget state
# --------------------------------------------------------------------------
def _say(kind: str, text: str, *, markdown: bool = False) -> None:
    """Leave a message for the panel's next run and open the panel to show it (a callback may set its state).

    ``text`` is made inert (:func:`ui.format.md_message`) unless ``markdown``: a message that already escapes each
    name the user gave with :func:`ui.format.md_text`, which md_message alone leaves to render (QA: a custom GPU
    named ``**bold**`` showed in bold in "Custom GPU set")."""
    st.session_state[_MESSAGE_KEY] = (kind, text if markdown else md_message(text))
    st.session_state[PANEL_KEY] = True
    if kind != "error":
        st.session_state.pop(_FAILED_KEY, None)


def _adopt(model: CustomModel, how: str) -> None:
    """Store ``model`` as the custom model, select it, and match the weight dtype to the checkpoint; ``how``: the
    first words of the message, Markdown with every user-given name through :func:`ui.format.md_text`."""
    st.session_state[MODEL_PARAM] = share_codec.encode_model(model)
    if "model" in st.session_state or st.query_params.get("model") is not None:
        st.session_state["model"] = CUSTOM_ID
    extra = ""
    if model.weight_dtype_hint:
        st.session_state["weight_dtype"] = model.weight_dtype_hint
        extra = f" Weight dtype set to {model.weight_dtype_hint} ({custom.hint_text(model)})."
    _say("success", f"{how}: {md_text(model.name)} " + md_message(
        f"({format_int(model.spec.num_parameters)} parameters, {model.spec.attention_kind}).{extra}"), markdown=True)


def _guard(action: Callable[[], None], what: str, thing: str = "model") -> None:
    """Run a "Use" callback; a ValueError is the panel's message and, until a "Use" works, the page's top line.

    Args:
        action: The callback's work.
        what: What the user gave, for :func:`failed_use_line` ("The pasted config.json").
        thing: ``"model"`` or ``"GPU"``: what the page keeps showing instead.
    """
    try:
        action()
    except ValueError as exc:
        _say("error", str(exc))
        st.session_state[_FAILED_KEY] = (what, str(exc), thing)


def _quant_config(data: str | bytes | None) -> dict | None:
    """The optional second file, ``hf_quant_config.json`` (NVIDIA ModelOpt), parsed; None when not given.

    Raises:
        ValueError: not JSON or too large, prefixed with the file's name.
    """
    if data is None or not (data.strip() if isinstance(data, str) else data.strip()):
        return None
    try:
        return custom.parse_config_json(data)
    except ValueError as exc:
        raise ValueError(f"hf_quant_config.json: {str(exc).replace('config.json ', '', 1)}") from None


def _use_pasted() -> None:
    def run() -> None:
        text = st.session_state.get("custom_config_text") or ""
        name = st.session_state.get("custom_model_name") or "custom-model"
        if not text.strip():
            raise ValueError(
                "the config.json box is empty: paste the contents of the model's config.json (at most "
                f"{custom.MAX_CONFIG_BYTES:,} bytes; the box drops a paste over {PASTE_MAX_CHARS:,} characters)")
        quant = _quant_config(st.session_state.get("custom_quant_text"))
        _adopt(custom.read_custom_config(custom.parse_config_json(text), name, hf_quant_config=quant),
               "Pasted config.json" + (" and hf_quant_config.json" if quant else "") + " read")
    _guard(run, "The pasted config.json")


def _use_uploaded() -> None:
    def run() -> None:
        uploaded = st.session_state.get("custom_config_file")
        if uploaded is None:
            raise ValueError(f"choose a config.json file first (at most {custom.MAX_CONFIG_BYTES:,} bytes; the "
                             f"uploader refuses files over {CONFIG_UPLOAD_LIMIT_MB} MB and says so under it)")
        if uploaded.size > custom.MAX_CONFIG_BYTES:
            raise ValueError(f"{uploaded.name} is {uploaded.size:,} bytes, over the limit: a config.json is at most "
                             f"{custom.MAX_CONFIG_BYTES:,} bytes (a few KB is usual: did you pick the weights or "
                             "the tokenizer?)")
        stem = uploaded.name.rsplit(".", 1)[0]
        name = st.session_state.get("custom_model_name") or (stem if stem != "config" else "custom-model")
        second = st.session_state.get("custom_quant_file")
        if second is not None and second.size > custom.MAX_CONFIG_BYTES:
            raise ValueError(f"{second.name} is {second.size:,} bytes, over the {custom.MAX_CONFIG_BYTES:,}-byte "
                             "limit of an hf_quant_config.json")
        quant = _quant_config(second.getvalue() if second is not None else None)
        model = custom.read_custom_config(custom.parse_config_json(uploaded.getvalue()), name,
                                          source=f"file:{uploaded.name}", hf_quant_config=quant)
        _adopt(model, md_text(uploaded.name) + (f" and {md_text(second.name)}" if quant else "") + " read")
    _guard(run, "The uploaded config.json")


def _use_hub() -> None:
    def run() -> None:
        repo = (st.session_state.get("custom_hf_repo") or "").strip()
        revision = (st.session_state.get("custom_hf_revision") or "").strip() or None
        if not repo:
            raise ValueError("enter a Hugging Face repo id, e.g. Qwen/Qwen2.5-7B")
        try:
            secrets = st.secrets
        except Exception:  # noqa: BLE001 - no secrets file
            secrets = None
        fetched = hub.fetch_model(repo, revision=revision, token=hub.resolve_token(secrets))
        st.session_state["_custom_hub_result"] = fetched
        _adopt(fetched.model, f"Fetched {md_text(fetched.repo_id)}@{md_text((fetched.sha or fetched.revision)[:12])}")
    _guard(run, "The Hugging Face repo")


def _use_gguf() -> None:
    def run() -> None:
        from model_catalog.gguf_reader import read_gguf

        uploaded = st.session_state.get("custom_gguf_file")
        if uploaded is None:
            raise ValueError(f"choose a .gguf file (or its first 32 MB) first; the uploader refuses files over "
                             f"{_GGUF_UPLOAD_LIMIT_MB} MB: upload the header only, `head -c 32M model.gguf > "
                             "header.gguf`")
        handle, path = tempfile.mkstemp(suffix=".gguf")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(uploaded.getbuffer())
            name = st.session_state.get("custom_model_name") or None
            try:
                read = read_gguf(path, name=name)
            except ValueError as exc:  # name the user's file (at most 60 characters of it), not the temporary copy
                shown = plain_or_quoted(uploaded.name)
                text = str(exc).replace(path, shown).replace(os.path.basename(path), shown)
                raise ValueError(text) from None
        finally:
            os.unlink(path)
        st.session_state["_custom_gguf_result"] = read
        _adopt(read.model, f"{md_text(uploaded.name)} header read ({format_bytes(read.weight_bytes)} of tensors)")
    _guard(run, "The GGUF file")


def _clear_model() -> None:
    st.session_state[MODEL_PARAM] = ""
    if st.session_state.get("model") == CUSTOM_ID:
        st.session_state["model"] = catalog.default_model_id()
    _say("info", "Custom model cleared.")


def _use_gpu() -> None:
    def run() -> None:
        state = st.session_state
        price = state.get("custom_gpu_price")
        made = custom.custom_gpu(state.get("custom_gpu_name") or "Custom GPU", state.get("custom_gpu_memory"),
                                 state.get("custom_gpu_unit") or "GiB", state.get("custom_gpu_bandwidth"),
                                 None if price in (None, 0, 0.0) else price)
        state[GPU_PARAM] = share_codec.encode_gpu(made)
        if "gpu" in state or st.query_params.get("gpu") is not None:
            state["gpu"] = CUSTOM_ID
        _say("success", f"Custom GPU set: {md_text(made.name)}, "
                        + md_message(f"{format_bytes(made.framework_memory_bytes)} framework-visible memory."),
             markdown=True)
    _guard(run, "The custom GPU", "GPU")


def _clear_gpu() -> None:
    st.session_state[GPU_PARAM] = ""
    if st.session_state.get("gpu") == CUSTOM_ID:
        st.session_state["gpu"] = catalog.default_gpu_id()
    _say("info", "Custom GPU cleared.")


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------
SOURCES = ("Paste", "Upload", "Hugging Face", "GGUF")
"""Where a custom model comes from: one tab each."""


def _model_sources() -> None:
    st.text_input("Name for the plan", key="custom_model_name", placeholder="my-org/my-finetune",
                  max_chars=custom.MAX_NAME_CHARS,
                  help="Shown as the model id; defaults to the repo id or file name.")
    # Keyed, state-tracking tabs: plain st.tabs fall back to the first tab on every rerun, so a
    # button press in "Upload" or "GGUF" jumped back to "Paste". Every tab's widgets still run, so
    # nothing typed in another tab is lost.
    paste, upload, hub_tab, gguf_tab = st.tabs(list(SOURCES), key="custom_model_source", on_change="rerun")
    with paste:
        st.text_area("config.json", key="custom_config_text", height=160, max_chars=PASTE_MAX_CHARS,
                     placeholder='{"model_type": "llama", "hidden_size": 4096, ...}',
                     help="The model's config.json (JSON only, at most 4 MB). Remote code is never run.")
        st.text_area("hf_quant_config.json (optional)", key="custom_quant_text", height=80,
                     max_chars=QUANT_PASTE_MAX_CHARS, placeholder='{"quantization": {"quant_algo": "NVFP4", ...}}',
                     help="NVIDIA ModelOpt checkpoints ship it beside config.json: which layers are NVFP4 / FP8 "
                          "and which stay in 16 bits (weight dtype auto then counts them as shipped).")
        st.button("Use pasted config", key="custom_use_pasted", on_click=_use_pasted)
    with upload:
        st.file_uploader("config.json file", type=["json"], key="custom_config_file",
                         max_upload_size=CONFIG_UPLOAD_LIMIT_MB,
                         help=f"At most {custom.MAX_CONFIG_BYTES:,} bytes are read.")
        st.file_uploader("hf_quant_config.json (optional)", type=["json"], key="custom_quant_file",
                         max_upload_size=CONFIG_UPLOAD_LIMIT_MB,
                         help="The repository's hf_quant_config.json (NVIDIA ModelOpt), if it has one.")
        st.button("Use uploaded config", key="custom_use_uploaded", on_click=_use_uploaded)
    with hub_tab:
        st.text_input("Repo id", key="custom_hf_repo", placeholder="Qwen/Qwen2.5-7B", max_chars=hub.MAX_REPO_ID_CHARS)
        st.text_input("Revision", key="custom_hf_revision", placeholder="main", max_chars=hub.MAX_REVISION_CHARS)
        st.button("Fetch config.json", key="custom_use_hub", on_click=_use_hub,
                  help="Needs network access (hosted app). Gated repos need a token: HF_TOKEN in Streamlit "
                       "secrets or the environment.")
        fetched = st.session_state.get("_custom_hub_result")
        if fetched is not None and fetched.parameters_by_dtype:
            st.caption("Safetensors parameters per dtype: " + ", ".join(
                f"{md_text(dtype)} {format_int(n)}" for dtype, n in fetched.parameters_by_dtype.items())
                + (f"; checkpoint {format_bytes(fetched.checkpoint_bytes)}" if fetched.checkpoint_bytes else ""))
            for note in fetched.notes:
                st.caption(md_message(note))
    with gguf_tab:
        st.file_uploader("GGUF file or its header", type=["gguf"], key="custom_gguf_file",
                         max_upload_size=_GGUF_UPLOAD_LIMIT_MB,
                         help="Only the header is read. For a large file upload its first 32 MB: "
                              "`head -c 32M model.gguf > header.gguf`.")
        st.button("Read GGUF header", key="custom_use_gguf", on_click=_use_gguf)
        read = st.session_state.get("_custom_gguf_result")
        if read is not None:
            st.caption("Tensor bytes by type: " + ", ".join(
                f"{md_text(t)} {format_bytes(b)}" for t, (_, _, b) in sorted(read.bytes_by_type.items())))


def _gpu_form() -> None:
    st.text_input("GPU name", key="custom_gpu_name", placeholder="My accelerator", max_chars=custom.MAX_NAME_CHARS)
    st.number_input("Memory (framework-visible)", key="custom_gpu_memory", min_value=0.001, value=24.0,
                    step=1.0, help="What PyTorch reports as total memory (torch.cuda.mem_get_info()[1]); a "
                                   "card sold as 24 GB reports about 23.5 GiB.")
    st.selectbox("Memory unit", tuple(custom.MEMORY_UNITS), key="custom_gpu_unit",
                 help="GiB = 2^30 bytes (what PyTorch and the engines print); GB = 10^9 bytes (vendor labels).")
    st.number_input("Bandwidth [GB/s]", key="custom_gpu_bandwidth", min_value=1.0, value=1000.0, step=50.0)
    st.number_input("Price [USD/h], 0 = unknown", key="custom_gpu_price", min_value=0.0, value=0.0, step=0.1)
    st.button("Use this GPU", key="custom_use_gpu", on_click=_use_gpu)


PANEL_KEY = "custom_panel_open"
"""Session key of the panel's open state (a lazy expander: its content runs only while it is open)."""

KEPT_KEYS = ("custom_model_name", "custom_config_text", "custom_quant_text", "custom_hf_repo", "custom_hf_revision",
             "custom_gpu_name", "custom_gpu_memory", "custom_gpu_unit", "custom_gpu_bandwidth", "custom_gpu_price")
"""The panel's typed inputs that outlive folding it: Streamlit drops the state of a widget a run does not
draw, unless the script assigns it itself (its documented way to keep it); uploads cannot be assigned and
are not kept."""


def _keep_typed_inputs() -> None:
    """Re-assign the :data:`KEPT_KEYS` the session holds, so a folded panel keeps what was typed into it."""
    for key in KEPT_KEYS:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


WARNING_PHRASES = ("defaults stand in", "is not a scheme the planner reads")
"""Notes of a custom model that change its numbers (sizes taken from defaults, a quantization not read):
pages that plan it show them as warnings, not only inside the panel."""


def warning_notes(model: CustomModel) -> tuple[str, ...]:
    """The notes of ``model`` that :data:`WARNING_PHRASES` mark."""
    return tuple(note for note in model.notes if any(phrase in note for phrase in WARNING_PHRASES))


def _hold_codes() -> None:
    """Keep the session's link codes in session state on every run, folded or not, seeded from the URL.

    The link-code inputs are not bound to the URL (``bind="query-params"``): Streamlit takes a bound input's
    parameter out of the URL at the end of a run that does not draw it, so folding the panel, or the panel
    folding itself, left a share link without ``custom_model=`` (QA). The session holds the code instead
    (re-assigned, Streamlit's documented way to keep the state of an input a run does not draw), the link
    seeds it on a session's first run, and :func:`_codes_into_the_url` writes it back on every run.
    """
    for key in (MODEL_PARAM, GPU_PARAM):
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]
        elif st.query_params.get(key):
            st.session_state[key] = st.query_params[key]


def _codes_into_the_url() -> None:
    """Make the URL carry the code in use (or none): the code of the last "Use", a typed code, or the link's."""
    for key in (MODEL_PARAM, GPU_PARAM):
        code = str(st.session_state.get(key) or "")
        if code and st.query_params.get(key) != code:
            st.query_params[key] = code
        elif not code and key in st.query_params:
            del st.query_params[key]


def last_use_failed() -> bool:
    """Whether the user's last "Use" in the panel failed (:func:`failed_use_line` has a line)."""
    return _FAILED_KEY in st.session_state


def failed_use_line(model_shown: str | None, gpu_shown: str | None) -> str | None:
    """One line for the top of the page when the user's last "Use" in the panel failed, else None.

    The panel says why in the sidebar; the page kept planning what it showed before, so a failed paste was
    easy to miss (QA). The line names what failed and why (cut short), what the page shows instead and
    where to fix it; the pasted text stays in the panel (:data:`KEPT_KEYS`).

    Args:
        model_shown: The model the page plans instead (its label); None where it has none or several.
        gpu_shown: The GPU the page plans instead, likewise.
    """
    failed = st.session_state.get(_FAILED_KEY)
    if failed is None:
        return None
    what, reason, thing = failed
    shown = gpu_shown if thing == "GPU" else model_shown
    instead = md_text(shown) if shown else f"the {thing}s it showed before"  # a name the user may have given
    return (md_message(f"{what} could not be used ({shorten_words(reason)}); the page still shows ") + instead
            + ": fix it under Custom model & GPU in the sidebar, which shows the whole reason.")


def render_custom_model_panel(container=None, *, show_problems: bool = True) -> CustomChoice:
    """Draw the "Custom model & GPU" panel (in the sidebar by default) and return the active choice.

    Args:
        container: Where to draw it; ``st.sidebar`` when None.
        show_problems: Show invalid-code messages in the panel; the shared
            sidebar passes False and shows them at the top of the page instead.

    Returns:
        The decoded custom model and GPU (None where unset or invalid) and the
        problems shown.
    """
    box = st.sidebar if container is None else container
    _hold_codes()
    choice = current_choice()
    _keep_typed_inputs()
    if choice.problems and st.session_state.get(_PROBLEMS_SEEN) != choice.problems:
        st.session_state[PANEL_KEY] = True  # open once for each new invalid code; the user may fold it
    st.session_state[_PROBLEMS_SEEN] = choice.problems
    # ``expanded`` is part of the expander's identity: it stays False, and the panel opens through its state
    # (here, and in :func:`_say` for a message). QA: ``expanded=`` "a message waits" flipped on the run after
    # a "Use", so the panel became a new, folded expander while the user edited the config box.
    panel = box.expander("Custom model & GPU", expanded=False, key=PANEL_KEY, on_change="rerun")
    _codes_into_the_url()
    if not panel.open:  # lazy: a folded panel draws none of its ~30 widgets
        return choice
    with panel:
        message = st.session_state.pop(_MESSAGE_KEY, None)
        if message is not None:
            kind, text = message
            {"success": st.success, "error": st.error}.get(kind, st.info)(text)  # inert already (_say)
        for problem in choice.problems if show_problems else ():
            st.error(md_message(problem), icon=":material/link_off:")
        st.markdown("**Model** (config.json, Hugging Face repo or GGUF)")
        _model_sources()
        st.text_input("Custom model link code", key=MODEL_PARAM,
                      help="The model's architecture in the URL; copy the page address to share it.")
        if choice.model is not None:
            st.caption(f"Active: **{md_text(choice.model.name)}** ({md_text(choice.model.source)}), select "
                       f"`{CUSTOM_ID}` as model.")
            for note in choice.model.notes:
                st.caption(md_message(note))
            st.button("Clear custom model", key="custom_clear_model", on_click=_clear_model)
        st.divider()
        st.markdown("**GPU**")
        _gpu_form()
        st.text_input("Custom GPU link code", key=GPU_PARAM,
                      help="The GPU's memory, bandwidth and price in the URL; copy the page address to share it.")
        if choice.gpu is not None:
            st.caption(f"Active: **{md_text(choice.gpu.name)}**, {format_bytes(choice.gpu.framework_memory_bytes)}, "
                       f"{choice.gpu.bandwidth_gb_s:g} GB/s; select `{CUSTOM_ID}` as GPU.")
            st.button("Clear custom GPU", key="custom_clear_gpu", on_click=_clear_gpu)
    return choice
