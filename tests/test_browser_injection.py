"""Markdown / HTML injection through what a visitor can put in a link: no page shows a foreign link or image.

A shared link can carry a custom model (``custom_model=``, its name included), a custom GPU
(``custom_gpu=``), any ``?model=`` and the Catalog's ``?search=``; a GGUF header's ``general.name``
becomes the custom model's name. Each vector below puts a Markdown link, a Markdown image, a bare URL
(GitHub-flavoured Markdown links those by itself) and an HTML anchor to ``evil.example`` into one of
them, opens the pages that echo it in headless Chromium, and counts the anchors (HTML and SVG, so
Plotly legends too) and images whose target's host is that host: 0 is the only answer (the page's
own links carry the value in their query string, which is fine). The text itself must
still be on the page, so a vector that was silently dropped does not pass.
"""

from __future__ import annotations

from urllib.parse import quote

import pytest

from model_catalog import custom, get_model_entry
from model_catalog.gguf_reader import read_gguf
from model_catalog.share_codec import encode_gpu, encode_model
from tests.e2e_helpers import open_settled
from tests.fixtures.gguf_files import write_tiny_gguf

pytestmark = pytest.mark.browser

HOST = "evil.example"
PAYLOADS = (
    f"[Click to re-login](https://{HOST}/login)",
    f"![t](https://{HOST}/pixel.png)",
    f"see https://{HOST}/x www.{HOST} a@{HOST}",
    f"<a href='https://{HOST}/a'>x</a>",
)
"""One of each kind of live markup; each fits a 100-character custom name."""

FOREIGN_JS = r"""(host) => {
  const urls = [];
  for (const el of document.querySelectorAll('a, img, image, source, iframe, link')) {
    for (const attr of ['href', 'src', 'xlink:href', 'srcset']) {
      const value = el.getAttribute(attr);
      if (!value) continue;
      let target;
      try { target = new URL(value.split(/\s/)[0], location.href); } catch (e) { continue; }
      if (target.host !== location.host && target.hostname.endsWith(host)) {
        urls.push(el.tagName + ' ' + attr + '=' + value);
      }
    }
  }
  const bg = Array.from(document.querySelectorAll('[style*="//' + host + '"]')).map(e => e.tagName + ' style');
  return urls.concat(bg);
}"""

TEXT_JS = "() => document.body.innerText"


def _q(**params: str) -> str:
    return "?" + "&".join(f"{key}={quote(value, safe='')}" for key, value in params.items())


def _custom_model_code(name: str) -> str:
    return encode_model(custom.read_custom_config(get_model_entry("meta-llama/Meta-Llama-3-8B").config, name))


def _gguf_model_code(tmp_path, name: str) -> str:
    path = write_tiny_gguf(tmp_path / "named.gguf", extra=lambda w: w.add_name(name))
    return encode_model(read_gguf(path).model)


def _assert_inert(page, url: str, visible: str) -> None:
    open_settled(page, url)
    found = page.evaluate(FOREIGN_JS, HOST)
    assert found == [], f"{url}: {len(found)} live link(s) or image(s) to {HOST}: {found[:4]}"
    text = " ".join(page.evaluate(TEXT_JS).replace("\u2060", "").split())
    assert visible in text, f"{url}: the echoed text {visible!r} is not on the page"


@pytest.mark.parametrize("payload", PAYLOADS)
def test_custom_model_name_is_text_on_every_page_that_echoes_it(streamlit_server, browser_page, payload):
    code = _custom_model_code(payload)
    page = browser_page()
    for path in ("/", "/Engine", "/Find_a_GPU_setup", "/Memory_curves"):  # Memory curves: its static table
        _assert_inert(page, streamlit_server.base_url + path + _q(model="custom", custom_model=code),
                      payload.split("(")[0][:12])


@pytest.mark.parametrize("payload", PAYLOADS[:2])
def test_custom_gpu_name_is_text(streamlit_server, browser_page, payload):
    code = encode_gpu(custom.custom_gpu(payload, "80", "GiB", 3350))
    page = browser_page()
    for path in ("/", "/Concurrency"):
        _assert_inert(page, streamlit_server.base_url + path + _q(gpu="custom", gpus="custom", custom_gpu=code),
                      payload.split("(")[0][:12])


@pytest.mark.parametrize("payload", PAYLOADS[:3])
def test_unknown_model_and_search_values_are_text(streamlit_server, browser_page, payload):
    page = browser_page()
    _assert_inert(page, streamlit_server.base_url + "/" + _q(model=payload), "model=")
    _assert_inert(page, streamlit_server.base_url + "/Catalog" + _q(search=payload), "Nothing matches")


def test_gguf_general_name_is_text(streamlit_server, browser_page, tmp_path):
    payload = PAYLOADS[0]
    page = browser_page()
    _assert_inert(page, streamlit_server.base_url + "/" + _q(model="custom",
                                                             custom_model=_gguf_model_code(tmp_path, payload)),
                  "[Click to re")


def test_streamlit_directives_in_a_custom_name_show_as_typed(streamlit_server, browser_page):
    """QA (stop 46): a custom model named ``acme :blue[team]`` showed as "acme [team]" in the title, the sidebar and
    the warnings: Streamlit's Markdown reads ``:name`` as a colour directive or emoji shortcode even with its
    brackets escaped (ui.format ``_DIRECTIVE_START``). The name must be on the page character for character."""
    name = "acme :blue[team] :smile: v2"
    page = browser_page()
    for path in ("/", "/Engine"):
        _assert_inert(page, streamlit_server.base_url + path + _q(model="custom", custom_model=_custom_model_code(name)),
                      name)
        headings = page.evaluate("() => Array.from(document.querySelectorAll('h1, h2, h3'), h => h.innerText)")
        shown = [" ".join(h.replace("\u2060", "").split()) for h in headings]
        assert any(name in h for h in shown), f"{path}: no heading shows {name!r}: {shown}"
