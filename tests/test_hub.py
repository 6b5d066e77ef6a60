"""Hugging Face repo -> config.json + safetensors counts, against a fake hub on a loopback port.

The fake hub (``http.server`` on 127.0.0.1, an ephemeral port, one thread)
serves the two routes :mod:`model_catalog.hub` uses: ``/api/models/...`` and
``/{repo}/resolve/{rev}/config.json``, with one repo per case (success, gated
401/403, missing 404, rate-limited 429, slow, malformed JSON, oversized,
remote code). It records every request, so each test also bounds the request
count. No test reaches the internet: the endpoint is the loopback server, and
huggingface_hub is pointed at it both by ``HF_ENDPOINT`` (read at call time
by :func:`model_catalog.hub.hub_endpoint`) and by the explicit argument. The
server stops at fixture teardown, and a watchdog stops it after 60 s anyway.
An autouse guard fails any name lookup or connection that is not loopback.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

import pytest

from model_catalog import get_model_entry, hub
from model_catalog.custom import MAX_CONFIG_BYTES

LLAMA3_CONFIG = dict(get_model_entry("meta-llama/Meta-Llama-3-8B").config)
SHA = "0123456789abcdef0123456789abcdef01234567"
SLOW_S = 3.0
WATCHDOG_S = 60.0

REMOTE_CODE_CONFIG = {
    "model_type": "acme_evil", "auto_map": {"AutoConfig": "acme_evil_config.EvilConfig"},
    "trust_remote_code": True, "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
}


def info_body(repo: str, params: dict[str, int] | None) -> bytes:
    body: dict = {"id": repo, "sha": SHA, "gated": False}
    if params is not None:
        body["safetensors"] = {"parameters": params, "total": sum(params.values())}
    return json.dumps(body).encode()


# repo -> (model-info response, config response); a response is (status, headers, body)
OK = 200
REPOS: dict[str, tuple[tuple[int, dict, bytes], tuple[int, dict, bytes]]] = {
    "acme/good": ((OK, {}, info_body("acme/good", {"BF16": 8_030_261_248})),
                  (OK, {}, json.dumps(LLAMA3_CONFIG).encode())),
    "acme/gptq": ((OK, {}, info_body("acme/gptq", {"I32": 900_000_000, "F16": 1_300_000_000})),
                  (OK, {}, json.dumps({**LLAMA3_CONFIG, "torch_dtype": "float16", "quantization_config": {
                      "quant_method": "gptq", "bits": 4, "group_size": 128}}).encode())),
    "acme/gated": ((401, {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model acme/gated is "
                                                                          "restricted."}, b'{"error": "gated"}'),
                   (401, {"X-Error-Code": "GatedRepo"}, b"")),
    # As huggingface.co does it: the model info is public, the file needs an accepted license and a token.
    "acme/gated-file": ((OK, {}, json.dumps({"id": "acme/gated-file", "sha": SHA, "gated": "manual"}).encode()),
                        (401, {"X-Error-Code": "GatedRepo", "X-Error-Message": "Access to model acme/gated-file "
                                                                              "is restricted."}, b"")),
    "acme/forbidden": ((403, {"X-Error-Message": "Forbidden"}, b'{"error": "forbidden"}'), (403, {}, b"")),
    "acme/missing": ((404, {"X-Error-Code": "RepoNotFound"}, b'{"error": "Repository not found"}'), (404, {}, b"")),
    "acme/busy": ((429, {"Retry-After": "7"}, b'{"error": "rate limited"}'), (429, {}, b"")),
    "acme/badjson": ((OK, {}, info_body("acme/badjson", None)), (OK, {}, b'{"model_type": "llama",, }')),
    "acme/badinfo": ((OK, {}, b"<html>not json</html>"), (OK, {}, b"{}")),
    "acme/huge": ((OK, {}, info_body("acme/huge", None)), (OK, {}, b" " * (MAX_CONFIG_BYTES + 10))),
    "acme/noconfig": ((OK, {}, info_body("acme/noconfig", None)),
                      (404, {"X-Error-Code": "EntryNotFound"}, b'{"error": "Entry not found"}')),
    "acme/evil": ((OK, {}, info_body("acme/evil", {"BF16": 8_030_261_248})),
                  (OK, {}, json.dumps(REMOTE_CODE_CONFIG).encode())),
    "acme/slow": ((OK, {}, info_body("acme/slow", None)), (OK, {}, b"{}")),
}


class FakeHub:
    """A loopback HTTP server that plays the Hugging Face Hub for :data:`REPOS`."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str | None]] = []
        self.release = threading.Event()
        hub_self = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server hook
                hub_self.requests.append((self.path, self.headers.get("Authorization")))
                status, headers, body = hub_self.route(unquote(urlparse(self.path).path))
                if status == "slow":
                    hub_self.release.wait(SLOW_S)
                    status, headers, body = OK, {}, info_body("acme/slow", None)
                try:
                    self.send_response(status)
                    for key, value in {"Content-Type": "application/json", **headers}.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.watchdog = threading.Timer(WATCHDOG_S, self.stop)

    def route(self, path: str):
        if path.startswith("/api/models/"):
            repo = "/".join(path.removeprefix("/api/models/").split("/")[:2])
            if repo == "acme/slow":
                return "slow", {}, b""
            return REPOS.get(repo, REPOS["acme/missing"])[0]
        parts = path.strip("/").split("/")
        if len(parts) >= 5 and parts[2] == "resolve" and parts[-1] == "config.json":
            repo = "/".join(parts[:2])
            return REPOS.get(repo, REPOS["acme/missing"])[1]
        return 404, {}, b'{"error": "no route"}'

    def start(self) -> FakeHub:
        self.thread.start()
        self.watchdog.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.watchdog.cancel()


LOOPBACK = ("127.0.0.1", "localhost", "::1")


@pytest.fixture(autouse=True)
def no_internet(monkeypatch):
    """Fail any name lookup or connection that is not to the loopback interface."""
    real_getaddrinfo, real_connect = socket.getaddrinfo, socket.socket.connect

    def getaddrinfo(host, *args, **kwargs):
        if host not in LOOPBACK:
            raise OSError(f"test tried to resolve {host!r}: no test may reach the internet")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self, address):
        if isinstance(address, tuple) and address[0] not in LOOPBACK:
            raise OSError(f"test tried to connect to {address!r}: no test may reach the internet")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    # huggingface_hub fetches an "agent harness" registry from its import-time endpoint on the first
    # request (utils/_detect_agent.py, best-effort telemetry); seed it empty so no such request is made.
    from huggingface_hub.utils import _detect_agent

    if hasattr(_detect_agent, "_registry"):
        monkeypatch.setattr(_detect_agent, "_registry", getattr(_detect_agent, "_EMPTY_REGISTRY", None))


@pytest.fixture
def fake_hub(monkeypatch):
    server = FakeHub().start()
    monkeypatch.setenv("HF_ENDPOINT", server.url)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    hub.clear_cache()
    try:
        yield server
    finally:
        server.stop()
        server.thread.join(timeout=5)
        hub.clear_cache()
        assert not server.thread.is_alive()


def fetch(server: FakeHub, repo: str, **kwargs) -> hub.HubModel:
    kwargs.setdefault("endpoint", server.url)
    kwargs.setdefault("timeout_s", 2.0)
    return hub.fetch_model(repo, **kwargs)


def failure(server: FakeHub, repo: str, **kwargs) -> hub.HubError:
    with pytest.raises(hub.HubError) as info:
        fetch(server, repo, **kwargs)
    assert len(server.requests) <= 2
    assert "Traceback" not in str(info.value)
    return info.value


# --------------------------------------------------------------------------
# Success, caching, endpoint and token handling
# --------------------------------------------------------------------------
def test_success_reads_config_and_exact_counts(fake_hub):
    got = fetch(fake_hub, "acme/good")
    assert got.sha == SHA and got.revision == "main"
    assert got.parameters_by_dtype == {"BF16": 8_030_261_248}
    assert got.total_parameters == 8_030_261_248
    assert got.checkpoint_bytes == 2 * 8_030_261_248
    assert got.model.spec.num_parameters == 8_030_261_248 and got.notes == ()
    assert got.model.source == f"hf:acme/good@{SHA[:12]}"
    assert got.quantization_config is None and got.model.weight_dtype_hint == "auto"  # auto = its torch_dtype
    paths = [path for path, _ in fake_hub.requests]
    assert len(paths) == 2
    assert paths[0].startswith("/api/models/acme/good?") and "expand=safetensors" in paths[0]
    assert paths[1] == f"/acme/good/resolve/{SHA}/config.json"


def test_results_are_cached_per_repo_revision_and_token(fake_hub):
    first = fetch(fake_hub, "acme/good")
    assert fetch(fake_hub, "acme/good") is first
    assert len(fake_hub.requests) == 2
    fetch(fake_hub, "acme/good", revision="v1.0")
    assert len(fake_hub.requests) == 4
    assert fake_hub.requests[2][0].startswith("/api/models/acme/good/revision/v1.0")
    fetch(fake_hub, "acme/good", token="hf_test_token")
    assert len(fake_hub.requests) == 6
    fetch(fake_hub, "acme/good", use_cache=False)
    assert len(fake_hub.requests) == 8


def test_failures_are_not_cached(fake_hub):
    failure(fake_hub, "acme/missing")
    failure(fake_hub, "acme/missing")
    assert len(fake_hub.requests) == 2


def test_hf_endpoint_is_read_at_call_time(fake_hub):
    got = hub.fetch_model("acme/good", timeout_s=2.0)  # no endpoint argument: HF_ENDPOINT from the fixture
    assert got.repo_id == "acme/good" and len(fake_hub.requests) == 2
    assert hub.hub_endpoint() == fake_hub.url


def test_token_is_sent_only_when_given(fake_hub):
    fetch(fake_hub, "acme/good")
    assert [auth for _, auth in fake_hub.requests] == [None, None]
    fetch(fake_hub, "acme/good", token="hf_test_token", use_cache=False)
    assert [auth for _, auth in fake_hub.requests[2:]] == ["Bearer hf_test_token"] * 2


def test_resolve_token_prefers_secrets_then_env(monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert hub.resolve_token(None) is None
    assert hub.resolve_token({"HF_TOKEN": " hf_secret "}) == "hf_secret"
    monkeypatch.setenv("HF_TOKEN", "hf_env")
    assert hub.resolve_token({}) == "hf_env"

    class Broken:
        def get(self, key):
            raise FileNotFoundError("no secrets.toml")

    assert hub.resolve_token(Broken()) == "hf_env"


def test_quantized_repo_gives_a_dtype_hint_and_a_packing_note(fake_hub):
    got = fetch(fake_hub, "acme/gptq")
    assert got.model.weight_dtype_hint == "auto"  # auto reads GPTQ (its group scales and zeros), as plan --config
    assert got.quantization_config["quant_method"] == "gptq"
    assert got.checkpoint_bytes == 4 * 900_000_000 + 2 * 1_300_000_000
    assert any("packed integer tensors" in note for note in got.notes)


def test_url_repo_ids_are_accepted(fake_hub):
    assert fetch(fake_hub, "https://huggingface.co/acme/good").repo_id == "acme/good"


# --------------------------------------------------------------------------
# Each failure: kind, message, bounded requests
# --------------------------------------------------------------------------
def test_gated_401(fake_hub):
    error = failure(fake_hub, "acme/gated")
    assert error.kind == "gated"
    assert "is gated" in str(error) and "HF_TOKEN" in str(error) and "accept its license" in str(error)
    assert len(fake_hub.requests) == 1


def test_gated_file_behind_public_metadata(fake_hub):
    error = failure(fake_hub, "acme/gated-file")
    assert error.kind == "gated" and "is gated" in str(error)
    assert len(fake_hub.requests) == 2


def test_forbidden_403_with_token(fake_hub):
    error = failure(fake_hub, "acme/forbidden", token="hf_test_token")
    assert error.kind == "gated" and "(403)" in str(error) and "the token in use has no access" in str(error)


def test_missing_404(fake_hub):
    error = failure(fake_hub, "acme/missing")
    assert error.kind == "not_found"
    assert "no model repo 'acme/missing'" in str(error) and "ORG/NAME" in str(error)


def test_rate_limited_429(fake_hub):
    error = failure(fake_hub, "acme/busy")
    assert error.kind == "rate_limited" and "retry in 7 s" in str(error)


def test_timeout_is_short_and_clear(fake_hub):
    start = time.monotonic()
    error = failure(fake_hub, "acme/slow", timeout_s=0.3)
    assert time.monotonic() - start < SLOW_S
    assert error.kind == "timeout" and "within 0.3 s" in str(error) and "paste the config.json" in str(error)
    assert len(fake_hub.requests) == 1


def test_malformed_config_json(fake_hub):
    error = failure(fake_hub, "acme/badjson")
    assert error.kind == "malformed"
    assert "'acme/badjson' config.json: config.json is not valid JSON" in str(error)
    assert "line 1, column 24" in str(error)


def test_malformed_model_info(fake_hub):
    error = failure(fake_hub, "acme/badinfo")
    assert error.kind == "malformed" and "is not valid model info JSON" in str(error)
    assert len(fake_hub.requests) == 1


def test_oversized_config_is_cut_off(fake_hub):
    error = failure(fake_hub, "acme/huge")
    assert error.kind == "malformed" and f"larger than {MAX_CONFIG_BYTES:,} bytes" in str(error)


def test_repo_without_config_json(fake_hub):
    error = failure(fake_hub, "acme/noconfig")
    assert error.kind == "not_found" and "has no config.json" in str(error)


def test_offline_when_nothing_listens():
    with socket.socket() as probe:  # a port that was free a moment ago: connection refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(hub.HubError) as info:
        hub.fetch_model("acme/good", endpoint=f"http://127.0.0.1:{port}", timeout_s=1.0, use_cache=False)
    assert info.value.kind in ("offline", "timeout") and "paste the config.json" in str(info.value)


@pytest.mark.parametrize(("repo", "revision", "fragment"), [
    ("not a repo", None, "is not a Hugging Face repo id"),
    ("a/b/c", None, "is not a Hugging Face repo id"),
    ("../etc/passwd", None, "is not a Hugging Face repo id"),
    ("acme/good", "../../x", "is not a branch, tag or commit name"),
])
def test_bad_input_makes_no_request(fake_hub, repo, revision, fragment):
    error = failure(fake_hub, repo, revision=revision)
    assert error.kind == "bad_input" and fragment in str(error)
    assert fake_hub.requests == []


# --------------------------------------------------------------------------
# Bar 3 over the network path: a repo naming remote code runs nothing
# --------------------------------------------------------------------------
def test_remote_code_repo_runs_nothing(fake_hub, monkeypatch, tmp_path):
    import transformers
    import transformers.dynamic_module_utils as dynamic

    def forbidden(*args, **kwargs):
        raise AssertionError("remote code loader called")

    for name in ("get_class_from_dynamic_module", "get_cached_module_file", "get_class_in_module"):
        monkeypatch.setattr(dynamic, name, forbidden)
    monkeypatch.setattr(transformers.AutoConfig, "from_pretrained", forbidden)
    marker = tmp_path / "imported.txt"
    (tmp_path / "acme_evil_config.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)

    got = fetch(fake_hub, "acme/evil")

    assert got.model.reading == "generic" and got.model.spec.num_parameters == 8_030_261_248
    assert any("remote code is never loaded or run" in note for note in got.model.notes)
    new = set(sys.modules) - before
    assert "acme_evil_config" not in new and not [m for m in new if m.startswith("transformers_modules")]
    assert not marker.exists()
    assert all("/resolve/" not in path or path.endswith("/config.json") for path, _ in fake_hub.requests)
    assert len(fake_hub.requests) == 2
