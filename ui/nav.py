"""Sidebar navigation whose links carry the plan: a shared link survives every page switch.

Streamlit's own page list is hidden (``client.showSidebarNavigation = false`` in
``.streamlit/config.toml``) and drawn here with ``st.page_link(..., query_params=...)``,
so that

* the home page is labelled "Home" (``st.navigation`` would do that too, but beside a
  ``pages/`` folder it makes a fresh server run a deep-linked page without ``app.py``);
* every link carries the inputs the user set (a key in this page's URL: from the link, or
  a widget moved off its default), with its current value (:func:`current_values`), so
  opening ``/?model=Qwen/Qwen2.5-7B`` and clicking "Concurrency" keeps the model, and a
  page's untouched defaults stay on that page;
* a page switch adds one browser-history entry (:func:`_one_entry_per_page`);
* single- and multi-model pages map onto each other: on a page with one ``model`` the
  links carry ``models`` = that model first, then the rest of the list the link had;
  on a page with ``models`` they carry ``model`` = its first entry (the same for ``gpu``
  / ``gpus``).

Page URLs stay what Streamlit derives from the file names (``/Memory_curves``, ...).
The links are drawn into a container that :func:`begin` places at the top of the
sidebar, and filled by :func:`draw` once the page knows which keys it owns.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, urlencode

import streamlit as st
from streamlit.errors import StreamlitPageNotFoundError
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from ui.inputs import rewrite_link
from ui.link_guard import (BOOLEAN_KEYS, CODE_KEYS, ENGINE_PAGE_KEYS, JSON_KEYS, MULTI_VALUE_KEYS, NUMBER_KEYS,
                           SELECT_KEYS)


@dataclass(frozen=True)
class PageLink:
    """One entry of the navigation: file (Streamlit's page path), label and a material icon
    (bundled with Streamlit; emoji need a colour-emoji font the browser may lack)."""

    path: str
    label: str
    icon: str


PAGES: tuple[PageLink, ...] = (
    PageLink("app.py", "Home", ":material/home:"),
    PageLink("pages/1_Memory_curves.py", "Memory curves", ":material/show_chart:"),
    PageLink("pages/2_GQA_savings.py", "GQA savings", ":material/compress:"),
    PageLink("pages/3_Concurrency.py", "Concurrency", ":material/group:"),
    PageLink("pages/4_Catalog.py", "Catalog", ":material/menu_book:"),
    PageLink("pages/5_Engine.py", "Engine", ":material/memory:"),
    PageLink("pages/6_Allocation.py", "Allocation", ":material/view_module:"),
    PageLink("pages/7_Find_a_GPU_setup.py", "Find a GPU setup", ":material/search:"),
    PageLink("pages/8_Disaggregation.py", "Disaggregation", ":material/call_split:"),
)
"""Every page, in the order of the ``pages/N_`` prefixes (Home first)."""

PLAN_KEYS: frozenset[str] = frozenset({
    "model", "models", "gpu", "gpus", "weight_dtype", "kv_cache_dtype", "engine", "search", "link",
}) | NUMBER_KEYS | MULTI_VALUE_KEYS | BOOLEAN_KEYS | CODE_KEYS | SELECT_KEYS | ENGINE_PAGE_KEYS | JSON_KEYS
"""Query keys the links carry: every input some page binds to the URL (the Engine page's switches and CUDA-graph
selects too, :data:`ui.link_guard.ENGINE_PAGE_KEYS`: Home's engine panel and budget read them from the link)."""

MAX_MODELS = 6
MAX_GPUS = 8

_local = threading.local()  # one script run per thread: the container of this run's navigation


_CARRIED = "_nav_carried"
"""Session-state key: the parameters the last page's links carried (read by the tests)."""

_LAST_PAGE = "_nav_last_page"
"""Session-state key: the page (script hash) that drew them."""


def _page_id() -> str:
    ctx = get_script_run_ctx()
    return "" if ctx is None else str(ctx.page_script_hash)


def begin() -> None:
    """Reserve the top of the sidebar for the navigation (called by :func:`ui.views.setup_page`),
    and, on a page's first run after a page switch, make the URL the browser sent the plan
    (:func:`_arrive`)."""
    _local.container = st.sidebar.container()
    _one_entry_per_page()
    _local.drawn = False
    _local.modes = {}
    last = st.session_state.get(_LAST_PAGE)
    if last is not None and last != _page_id():
        _arrive()


PICKER_KEYS = frozenset({"model", "models", "gpu", "gpus"})
"""Plan keys of the pickers: not bound to the URL by Streamlit (:func:`ui.inputs.picker` syncs them)."""


def _arrive() -> None:
    """First run of a page after a switch (a sidebar link, Back or Forward): the URL is the plan.

    Two things of Streamlit 1.67 (``runtime/scriptrunner/script_runner.py`` and
    ``runtime/state/session_state.py``) would make the page show something else:

    * on a page switch ``QueryParams.populate_from_query_string`` drops the parameters bound to
      a widget of another page than this one and the entrypoint, even when the URL the browser
      sent (the link's, or the history entry's on Back) names them. Each key the sent URL
      (``ScriptRunContext.query_string``) has and ``st.query_params`` lost is put back. Only
      the sent URL counts: a Back to ``/Catalog`` gets the ``/Catalog`` that was visited, not
      what the page left carried (issue 27: Back landed on ``/Catalog?batch_size=4&...``);
    * ``SessionState._remove_stale_widgets`` keeps the value of every bound widget of the page
      left under its key, and a widget with that key on this page takes it and writes it into
      the URL when it differs from *this* widget's default (``register_widget``'s "non-default
      restore"). Home's untouched ``block_size`` 16 and utilization 0.9 thus became set values
      on the Engine page, whose same inputs start empty (the engine's own default). So each
      bound plan key the URL does not name is dropped from the session: its widget starts at
      this page's default, and a link carries only what the user set. The custom model and GPU share
      codes (:data:`CODE_KEYS`) the sent URL names become the session's (ui/custom_panel.py keeps them in
      the session, not in bound inputs), so Back shows the custom model of the entry, not the last one used.
    """
    ctx = get_script_run_ctx()
    sent = parse_qs(ctx.query_string if ctx is not None else "", keep_blank_values=True)
    lost = {key: values for key, values in sent.items() if key in PLAN_KEYS and key not in st.query_params}
    rewrite_link(lost, tuple(MULTI_VALUE_KEYS))
    for key in CODE_KEYS & sent.keys():  # the custom model / GPU of the link, not the session's newer one (QA:
        st.session_state[key] = sent[key][-1]  # Back to Home showed the model "Use"d on the page left)
    for key in PLAN_KEYS - PICKER_KEYS:
        if key in st.session_state and key not in st.query_params and key not in lost:
            del st.session_state[key]


HISTORY_JS = """<script>
(() => {
  // Streamlit 1.67's frontend turns every st.query_params update (its handlePageInfoChanged) into a
  // history.pushState, and on a page switch the new page's updates come while the address bar still
  // shows the page being left. Same-page URL updates therefore replace the current entry, and the
  // entry of the page being left gets its own URL back: a page switch adds exactly one entry.
  const w = window, h = w.history;
  if (w.__planHistoryOneEntryPerPage || !h || typeof h.pushState !== "function") return;
  w.__planHistoryOneEntryPerPage = true;
  const push = h.pushState.bind(h), replace = h.replaceState.bind(h);
  let leaving = null;  // [URL of the page being left, ms] after a click on a link to another page
  document.addEventListener("click", (event) => {
    const a = event.target && event.target.closest ? event.target.closest("a[href]") : null;
    if (!a) return;
    try {
      const to = new URL(a.href, w.location.href);
      if (to.origin === w.location.origin && to.pathname !== w.location.pathname) leaving = [w.location.href, Date.now()];
    } catch (err) { /* not a URL: nothing to remember */ }
  }, true);
  w.addEventListener("popstate", () => { leaving = null; });
  h.pushState = function (state, title, url) {
    try {
      const to = new URL(url == null ? w.location.href : String(url), w.location.href);
      if (to.pathname === w.location.pathname) return replace(state, title, url);
      if (leaving && Date.now() - leaving[1] < 60000) replace(h.state, "", leaving[0]);
    } catch (err) { /* a URL we cannot read: the browser's own push */ }
    leaving = null;
    return push(state, title, url);
  };
})();
</script>"""
"""Installed once per browser tab by :func:`_one_entry_per_page` (see there)."""


def _one_entry_per_page() -> None:
    """Make the Back button go back one page: one history entry per page switch.

    Streamlit's frontend (1.67, ``handlePageInfoChanged`` in ``static/js/index.*.js``) calls
    ``history.pushState`` for every ``page_info_changed`` message, i.e. for every update of
    ``st.query_params`` (``QueryParams._send_query_param_msg``), including Streamlit's own on a
    page switch: dropping the params bound on the page left (``populate_from_query_string``) and
    clearing each URL value a widget rejects (``SessionState._clear_url_param``). Only bound
    widget changes use ``replaceState``. No Python API chooses replace over push, so a small
    script (:data:`HISTORY_JS`, through ``st.html(unsafe_allow_javascript=True)``, documented)
    makes same-page pushes replace. A Streamlit without that option gets nothing (pushes stay).
    """
    try:
        _local.container.html(HISTORY_JS, unsafe_allow_javascript=True)
    except TypeError:  # pragma: no cover - a Streamlit release without unsafe_allow_javascript
        pass


def _url_value(value) -> list[str] | None:
    """A widget value as Streamlit writes it into the URL (None = leave the key out)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return ["true" if value else "false"]
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value] or None
    return [str(value)]


def current_values() -> dict[str, list[str]]:
    """Each plan key the user set, with its value now; a widget's untouched default is left out.

    One rule for every input: a key is carried when it is in this page's URL. The URL holds what
    the link said plus what the user changed: Streamlit writes a bound widget into it when the
    user moves it off its default and drops it when it is back at the default, the pickers do the
    same (:func:`ui.inputs.picker`), and :func:`_arrive` puts back what the URL the browser sent
    carried. The value is the widget's state where this session has one (it may be newer than
    the URL this run started from), else the URL's. So Home's untouched ``block_size=16`` does
    not ride to the Engine page, where that default would break hybrid models.
    """
    values: dict[str, list[str]] = {}
    for key in PLAN_KEYS:
        in_url = st.query_params.get_all(key)
        if not in_url:
            continue
        value = _url_value(st.session_state[key]) if key in st.session_state else None
        values[key] = value or list(in_url)
    return values


def _first_then_rest(first: str, rest: Sequence[str], limit: int) -> list[str]:
    return [first, *(x for x in rest if x != first)][:limit]


def carried_params(values: Mapping[str, Sequence[str]], *, model: str | None, gpu: str | None) -> dict[str, list[str]]:
    """The query parameters every navigation link carries (pure; see the module docstring).

    Args:
        values: key -> current values (:func:`current_values`).
        model, gpu: ``"one"`` when this page owns ``model`` / ``gpu``, ``"many"`` when it owns
            ``models`` / ``gpus``, None when it has neither (the other values pass through).

    Returns:
        key -> values, for ``st.page_link(query_params=...)``.
    """
    out = {key: list(v) for key, v in values.items() if v}
    for mode, one, many, limit in ((model, "model", "models", MAX_MODELS), (gpu, "gpu", "gpus", MAX_GPUS)):
        if mode == "one" and out.get(one):
            out[many] = _first_then_rest(out[one][0], out.get(many, []), limit)
        elif mode == "many" and out.get(many):
            out[one] = [out[many][0]]
        elif mode is None and out.get(one) and not out.get(many):  # a page without the input: fill the
            out[many] = [out[one][0]]                               # counterpart the link lacks
        elif mode is None and out.get(many) and not out.get(one):
            out[one] = [out[many][0]]
    return out


def link(path: str, label: str, icon: str | None = None) -> None:
    """An ``st.page_link`` in the page body that carries the plan like the navigation does."""
    mode = getattr(_local, "modes", {})
    _page_link(path, label, icon, carried_params(current_values(), model=mode.get("model"), gpu=mode.get("gpu")))


def draw(*, model: str | None = None, gpu: str | None = None) -> None:
    """Fill the reserved container with one ``st.page_link`` per page (once per run).

    Args:
        model, gpu: Which of the single/multi keys this page owns (:func:`carried_params`).
    """
    if getattr(_local, "drawn", True):
        return
    _local.drawn = True
    _local.modes = {"model": model, "gpu": gpu}
    params = carried_params(current_values(), model=model, gpu=gpu)
    st.session_state[_CARRIED] = params
    st.session_state[_LAST_PAGE] = _page_id()
    with _local.container:
        for page in PAGES:
            _page_link(page.path, page.label, page.icon, params)
        st.divider()


def url_path(path: str) -> str:
    """The URL Streamlit gives a page file: ``""`` for the entrypoint, ``Memory_curves`` for
    ``pages/1_Memory_curves.py`` (the number prefix dropped)."""
    if "/" not in path:
        return ""
    stem = path.rsplit("/", 1)[1].removesuffix(".py")
    return stem.split("_", 1)[1] if stem.split("_", 1)[0].isdigit() else stem


def _page_link(path: str, label: str, icon: str | None, params: Mapping[str, Sequence[str]]) -> None:
    """``st.page_link``; when a page file runs as the entrypoint itself (``AppTest.from_file`` on a
    page), Streamlit cannot resolve the other files, so the same link is written as markdown."""
    try:
        st.page_link(path, label=label, icon=icon, query_params=params)
    except StreamlitPageNotFoundError:
        query = urlencode([(k, v) for k, values in params.items() for v in values])
        st.markdown(f"[{icon or ''} {label}](/{url_path(path)}?{query})")
