"""A Hugging Face repo id -> its config.json and safetensors parameter counts.

Two requests per repo and revision, each with a short timeout and no retries:

1. ``GET {endpoint}/api/models/{repo}[/revision/{rev}]?expand=safetensors&expand=sha&expand=gated``
   (``HfApi.model_info``): the resolved commit, whether the repo is gated, and
   the Hub's exact parameter counts per safetensors dtype (``BF16``,
   ``F8_E4M3``, ``I32`` ...), which the Hub computes from the file headers.
2. ``GET {endpoint}/{repo}/resolve/{sha}/config.json`` streamed through
   huggingface_hub's shared HTTP session, stopped at
   :data:`model_catalog.custom.MAX_CONFIG_BYTES`; nothing is written to disk.

The config is then read by :func:`model_catalog.custom.read_custom_config`:
JSON only, transformers' built-in config classes, no remote code. Nothing from
the repository is imported or run.

The endpoint is passed explicitly to every call: huggingface_hub reads
``HF_ENDPOINT`` once at import (``huggingface_hub.constants.ENDPOINT``), so
:func:`hub_endpoint` re-reads the environment at call time. The token is
optional and passed in by the caller (the UI reads Streamlit secrets, the CLI
the environment; see :func:`resolve_token`); without one, requests are
anonymous (``token=False``), never a token saved on the machine.

Successful results are cached per (endpoint, repo, revision, token
fingerprint) for :data:`CACHE_TTL_S` seconds, at most :data:`CACHE_MAX_ENTRIES`
entries; failures are not cached.

Sources: huggingface_hub ``HfApi.model_info`` (hf_api.py) and
``hf_raise_for_status`` (utils/_http.py) for the error classes; the Hub API's
``safetensors`` field (``SafeTensorsInfo.parameters``: dtype -> count);
safetensors format spec for dtype widths (``F8_E4M3`` 1 byte ... ``F64`` 8).
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from model_catalog.custom import MAX_CONFIG_BYTES, CustomModel, parse_config_json, read_custom_config
from planner.text import quote

DEFAULT_TIMEOUT_S = 6.0
"""Per-request timeout [s]: connect and each read."""

CACHE_TTL_S = 3600.0
"""How long a fetched repo stays cached [s] (a branch such as ``main`` can move)."""

CACHE_MAX_ENTRIES = 64
"""Most repos kept in the cache."""

TOKEN_ENV_VAR = "HF_TOKEN"
"""Environment variable (and Streamlit secret) holding an optional Hub token."""

SAFETENSORS_DTYPE_BYTES: dict[str, int] = {
    "F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2, "U16": 2,
    "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1, "BOOL": 1,
}
"""Bytes per element of each safetensors dtype (safetensors format spec)."""

MAX_REPO_ID_CHARS = 300
"""Longest repo field accepted [characters]: a repo id is ``ORG/NAME``, each part at most 96 characters
(193 in all, :data:`_REPO_ID`), and the field also takes the repo's Hub address
(``https://<host>/ORG/NAME/tree/REV``); the page's field takes no more."""

MAX_REVISION_CHARS = 200
"""Longest revision accepted [characters] (:data:`_REVISION`); the page's field takes no more."""

_REPO_ID = re.compile(r"^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,95}/)?[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")

ErrorKind = Literal["bad_input", "gated", "not_found", "rate_limited", "offline", "timeout", "malformed",
                    "server"]


class HubError(ValueError):
    """A Hub fetch that failed, with a message fit to show the user.

    Attributes:
        kind: ``gated``, ``not_found``, ``rate_limited``, ``offline``,
            ``timeout``, ``malformed``, ``server`` or ``bad_input``.
    """

    def __init__(self, kind: ErrorKind, message: str) -> None:
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True, kw_only=True)
class HubModel:
    """What the Hub says about one repo at one revision.

    Attributes:
        repo_id: ``ORG/NAME``.
        revision: Revision asked for (``main`` when none was given).
        sha: Commit the revision resolved to, when the Hub said.
        config: config.json as a dict.
        parameters_by_dtype: Exact parameter (element) counts per safetensors
            dtype; empty when the repo has no safetensors metadata. Packed
            quantized weights count their storage elements (``I32`` holds
            eight int4 values).
        total_parameters: The Hub's total of the above, or None.
        checkpoint_bytes: Bytes of the safetensors tensors,
            ``sum(count x dtype width)`` [bytes], or None.
        gated: The Hub's ``gated`` field (False, ``auto`` or ``manual``).
        model: The config read for the planner (see :mod:`model_catalog.custom`).
        notes: Caveats (differences between the Hub's count and the config's).
    """

    repo_id: str
    revision: str
    sha: str | None
    config: Mapping[str, Any]
    parameters_by_dtype: Mapping[str, int]
    total_parameters: int | None
    checkpoint_bytes: int | None
    gated: bool | str | None
    model: CustomModel
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def quantization_config(self) -> Mapping[str, Any] | None:
        """The config's ``quantization_config``, or None for unquantized checkpoints."""
        quant = self.config.get("quantization_config")
        return quant if isinstance(quant, Mapping) else None


def hub_endpoint(endpoint: str | None = None) -> str:
    """The Hub base URL: ``endpoint``, else ``HF_ENDPOINT`` now, else huggingface_hub's default."""
    if endpoint:
        return endpoint.rstrip("/")
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def resolve_token(secrets: Mapping[str, Any] | None = None) -> str | None:
    """An optional Hub token: ``secrets["HF_TOKEN"]`` (Streamlit secrets), else the ``HF_TOKEN`` env var.

    Args:
        secrets: A mapping such as ``st.secrets``; lookups that fail count as absent.

    Returns:
        The token, or None (anonymous requests).
    """
    if secrets is not None:
        try:
            value = secrets.get(TOKEN_ENV_VAR)
        except Exception:  # noqa: BLE001 - st.secrets raises when no secrets file exists
            value = None
        if isinstance(value, str) and value.strip():
            return value.strip()
    value = os.environ.get(TOKEN_ENV_VAR, "").strip()
    return value or None


# --------------------------------------------------------------------------
# Cache
# --------------------------------------------------------------------------
_CACHE: OrderedDict[tuple[str, str, str, str], tuple[float, HubModel]] = OrderedDict()
_CACHE_LOCK = threading.Lock()


def _fingerprint(token: str | None) -> str:
    """A short hash of the token, so the cache key never holds the token itself."""
    return hashlib.sha256(token.encode()).hexdigest()[:16] if token else ""


def clear_cache() -> None:
    """Forget every cached repo (tests; a user asking for a refresh)."""
    with _CACHE_LOCK:
        _CACHE.clear()


def _cache_get(key: tuple[str, str, str, str]) -> HubModel | None:
    with _CACHE_LOCK:
        hit = _CACHE.get(key)
        if hit is None:
            return None
        stored_at, model = hit
        if time.monotonic() - stored_at > CACHE_TTL_S:
            del _CACHE[key]
            return None
        _CACHE.move_to_end(key)
        return model


def _cache_put(key: tuple[str, str, str, str], model: HubModel) -> None:
    with _CACHE_LOCK:
        _CACHE[key] = (time.monotonic(), model)
        _CACHE.move_to_end(key)
        while len(_CACHE) > CACHE_MAX_ENTRIES:
            _CACHE.popitem(last=False)


# --------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------
def _status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _retry_after(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or {}
    value = headers.get("Retry-After") if hasattr(headers, "get") else None
    return f"retry in {value} s" if value else "retry in a minute"


def _translate(exc: BaseException, repo_id: str, revision: str, endpoint: str, timeout_s: float,
               token: str | None, what: str) -> HubError:
    """Map a huggingface_hub / HTTP-client exception to a :class:`HubError` with advice."""
    from huggingface_hub import errors

    where = f"'{repo_id}' on {endpoint}"
    token_hint = ("the token in use has no access to it: accept the license on the model page with that "
                  "account, or use another token" if token else
                  f"accept its license on the model page, then set a Hub token ({TOKEN_ENV_VAR} in Streamlit "
                  f"secrets or the environment)")
    if isinstance(exc, errors.GatedRepoError):
        return HubError("gated", f"{where} is gated: {token_hint}. Or paste its config.json instead.")
    if isinstance(exc, errors.RevisionNotFoundError):
        return HubError("not_found", f"{where} has no revision '{revision}': use a branch, tag or commit that "
                                     "exists (default: main)")
    if isinstance(exc, (errors.RemoteEntryNotFoundError, errors.EntryNotFoundError)):
        return HubError("not_found", f"{where} has no {what} at revision '{revision}' (GGUF-only or "
                                     "non-transformers repo?): use the GGUF reader or paste a config.json")
    if isinstance(exc, errors.RepositoryNotFoundError):
        auth = ("" if token else "; if it is private, set a Hub token with access "
                f"({TOKEN_ENV_VAR})")
        return HubError("not_found", f"no model repo {where} (check the spelling, ORG/NAME){auth}")
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return HubError("offline", "Hugging Face access is switched off here (HF_HUB_OFFLINE is set): paste "
                                   "the config.json instead")
    status = _status(exc)
    if status in (401, 403):
        return HubError("gated", f"{where} refused access ({status}): {token_hint}.")
    if status == 404:
        return HubError("not_found", f"no model repo {where} (404): check the spelling, ORG/NAME")
    if status == 429:
        return HubError("rate_limited", f"the Hub is rate-limiting requests (429): {_retry_after(exc)}, or set "
                                        f"a Hub token ({TOKEN_ENV_VAR}) for a higher limit")
    if status is not None and status >= 500:
        return HubError("server", f"the Hub answered {status} for {where}: try again later, or paste the "
                                  "config.json")
    if status is not None:
        return HubError("server", f"the Hub answered {status} for {where}: {str(exc).splitlines()[0][:200]}")
    name = type(exc).__name__
    if isinstance(exc, (ValueError, TypeError, KeyError, AttributeError)):
        return HubError("malformed", f"the answer for {where} is not valid {what} JSON ({name}: "
                                     f"{str(exc)[:160]}); is {endpoint} a Hugging Face Hub?")
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return HubError("timeout", f"no answer from {endpoint} within {timeout_s:g} s: the app may have no "
                                   "internet access (a local run behind a firewall); paste the config.json instead")
    if any(word in name for word in ("Connect", "Network", "Transport", "Proxy", "Protocol")) or isinstance(
            exc, OSError):
        return HubError("offline", f"cannot reach {endpoint} ({name}): this app has no network access here; "
                                   "paste the config.json instead")
    return HubError("server", f"fetching {where} failed ({name}: {str(exc)[:200]})")


# --------------------------------------------------------------------------
# Requests
# --------------------------------------------------------------------------
def _model_info(repo_id: str, revision: str | None, endpoint: str, token: str | None, timeout_s: float) -> Any:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=endpoint, token=token or False)
    return api.model_info(repo_id, revision=revision, expand=["safetensors", "sha", "gated"], timeout=timeout_s)


def _fetch_text(url: str, token: str | None, timeout_s: float, limit: int = MAX_CONFIG_BYTES) -> bytes:
    """GET ``url`` with huggingface_hub's session and headers; at most ``limit`` bytes.

    Raises:
        HubError: ``malformed`` when the body exceeds ``limit``; HTTP errors
            propagate as huggingface_hub exceptions.
    """
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

    headers = build_hf_headers(token=token or False)
    with get_session().stream("GET", url, headers=headers, timeout=timeout_s) as response:
        if response.status_code >= 400:
            response.read()
            hf_raise_for_status(response)
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > limit:
                raise HubError("malformed", f"config.json at {url} is larger than {limit:,} bytes; "
                                            "that is not a model config")
            chunks.append(chunk)
    return b"".join(chunks)


def _safetensors_counts(info: Any) -> tuple[dict[str, int], int | None, int | None]:
    """``(parameters per dtype, total, checkpoint bytes)`` from the model info's safetensors field."""
    safetensors = getattr(info, "safetensors", None)
    if safetensors is None:
        return {}, None, None
    params = getattr(safetensors, "parameters", None) or {}
    if not isinstance(params, Mapping) or not all(
            isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
            for k, v in params.items()):
        raise HubError("malformed", "the Hub's safetensors metadata is not a dtype -> count mapping")
    counts = dict(params)
    total = getattr(safetensors, "total", None)
    total = total if isinstance(total, int) and not isinstance(total, bool) else sum(counts.values())
    widths = [SAFETENSORS_DTYPE_BYTES.get(dtype) for dtype in counts]
    checkpoint = None if None in widths else sum(n * w for n, w in zip(counts.values(), widths))
    return counts, total, checkpoint


def _count_notes(model: CustomModel, counts: Mapping[str, int], total: int | None) -> list[str]:
    notes: list[str] = []
    if total is None:
        notes.append("no safetensors metadata on the Hub: parameter counts come from the config only")
        return notes
    computed = model.spec.num_parameters
    if total != computed and not model.config.get("quantization_config"):
        diff = total - computed
        notes.append(f"the checkpoint holds {total:,} parameters; the config gives {computed:,} "
                     f"({diff:+,}: e.g. vision towers, MTP layers or extra heads not in the text model)")
    if any(dtype in ("I32", "U8", "I8", "U32") for dtype in counts):
        notes.append("packed integer tensors (quantized weights) count storage elements, not parameters")
    return notes


def fetch_model(repo_id: str, *, revision: str | None = None, token: str | None = None,
                endpoint: str | None = None, timeout_s: float = DEFAULT_TIMEOUT_S,
                use_cache: bool = True) -> HubModel:
    """Fetch config.json and safetensors parameter counts of a Hub repo (module docstring).

    Args:
        repo_id: ``ORG/NAME`` (or a legacy ``NAME``), e.g. ``Qwen/Qwen2.5-7B``.
        revision: Branch, tag or commit; None means ``main``.
        token: Optional Hub token (for gated or private repos); None = anonymous.
        endpoint: Hub base URL; None reads ``HF_ENDPOINT`` now, else huggingface.co.
        timeout_s: Per-request timeout [s], > 0.
        use_cache: Reuse a cached result for the same repo, revision and token.

    Returns:
        The :class:`HubModel`.

    Raises:
        HubError: a ``ValueError`` whose ``kind`` says what happened (gated,
            not_found, rate_limited, offline, timeout, malformed, server,
            bad_input) and whose message says what to do.
    """
    repo_id = str(repo_id).strip().strip("/")
    if repo_id.startswith(("https://", "http://")):
        repo_id = re.sub(r"^https?://[^/]+/", "", repo_id).split("/tree/")[0].strip("/")
    if not _REPO_ID.match(repo_id) or ".." in repo_id:
        raise HubError("bad_input", f"{quote(repo_id)} is not a Hugging Face repo id; expected ORG/NAME, e.g. "
                                    "Qwen/Qwen2.5-7B")
    if revision is not None and (not _REVISION.match(revision) or ".." in revision):
        raise HubError("bad_input", f"revision {quote(revision)} is not a branch, tag or commit name")
    if not timeout_s > 0:
        raise HubError("bad_input", f"timeout_s must be > 0, got {timeout_s}")
    base = hub_endpoint(endpoint)
    asked = revision or "main"
    key = (base, repo_id, asked, _fingerprint(token))
    if use_cache:
        cached = _cache_get(key)
        if cached is not None:
            return cached

    try:
        info = _model_info(repo_id, revision, base, token, timeout_s)
    except HubError:
        raise
    except Exception as exc:  # noqa: BLE001 - every failure becomes a HubError with advice
        raise _translate(exc, repo_id, asked, base, timeout_s, token, "model info") from None
    sha = getattr(info, "sha", None)
    sha = sha if isinstance(sha, str) and re.fullmatch(r"[0-9a-f]{40}", sha) else None

    from huggingface_hub import hf_hub_url

    url = hf_hub_url(repo_id, "config.json", revision=sha or asked, endpoint=base)
    try:
        body = _fetch_text(url, token, timeout_s)
    except HubError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise _translate(exc, repo_id, asked, base, timeout_s, token, "config.json") from None
    try:
        config = parse_config_json(body)
    except ValueError as exc:
        raise HubError("malformed", f"'{repo_id}' config.json: {exc}") from None
    counts, total, checkpoint = _safetensors_counts(info)
    source = f"hf:{repo_id}@{sha[:12] if sha else asked}"
    try:
        model = read_custom_config(config, repo_id, source=source)
    except ValueError as exc:
        raise HubError("malformed", f"'{repo_id}' config.json cannot be planned: {exc}") from None
    result = HubModel(
        repo_id=repo_id, revision=asked, sha=sha, config=config, parameters_by_dtype=counts,
        total_parameters=total, checkpoint_bytes=checkpoint, gated=getattr(info, "gated", None), model=model,
        notes=tuple(_count_notes(model, counts, total)),
    )
    if use_cache:
        _cache_put(key, result)
    return result
