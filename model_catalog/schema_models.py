"""Validated shape of one model catalog entry (``model_catalog/models/*.json``).

One JSON file per model holds the model's Hugging Face ``config.json``
(architecture keys only, original key names and values) plus catalog metadata.
Entries are validated here, at the edge, with frozen pydantic models; the rest
of the code base only sees :class:`planner.model.ModelSpec`.

Sources: pydantic v2 docs, "Models" (``ConfigDict(frozen=True, extra="forbid")``).
"""

from __future__ import annotations

import datetime
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
_RELEASED = re.compile(r"^(\d{4})-(\d{2})(?:-(\d{2}))?$")


class OfficialParams(BaseModel):
    """A parameter count stated by the model's authors (or a source quoting them).

    Attributes:
        total: Stated total, as written (``"671B"``, ``"~109B"``).
        active: Stated parameters active per token (MoE), as written.
        experts: Stated routed experts, where the statement gives them.
        quote: The sentence the numbers come from.
        source: Where the quote was read (URL or repository file).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    total: str = Field(min_length=1)
    active: str | None = None
    experts: int | None = None
    quote: str = Field(min_length=1)
    source: str = Field(min_length=1)


def release_date(value: str) -> str:
    """``value`` when it is a real date written ``YYYY-MM`` or ``YYYY-MM-DD``.

    Raises:
        ValueError: any other text.
    """
    match = _RELEASED.match(value)
    try:
        if match is None:
            raise ValueError
        datetime.date(int(match[1]), int(match[2]), int(match[3] or 1))  # a real month and day
    except ValueError:
        raise ValueError(f"must be a date 'YYYY-MM' or 'YYYY-MM-DD', got {value!r}") from None
    return value


class AliasRelease(BaseModel):
    """An alias's own first public release, where it came out after the entry (Qwen/Qwen3.6-27B, an alias of
    Qwen/Qwen3.5-27B, on 22 April 2026; the Qwen3.5 series in February).

    Attributes:
        released: ``YYYY-MM`` or ``YYYY-MM-DD``.
        source: Where the date was read (URL of the model card or the announcement).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    released: str
    source: str = Field(min_length=1)

    @field_validator("released")
    @classmethod
    def _released_is_a_date(cls, value: str) -> str:
        return release_date(value)


class ModelEntry(BaseModel):
    """One catalog model: its config.json plus where it came from.

    Attributes:
        id: Hugging Face repo id whose config was read, ``ORG/NAME``.
        display_name: Short name for the UI.
        aliases: Other ids that resolve to this entry (renamed repos,
            variants with the same architecture).
        source: Where the config was read (copied from the reference file's
            ``_source``).
        confidence: ``high`` (verbatim official config), ``medium`` (mirror or
            test fixture, some keys may be missing) or ``low`` (proxy).
        released: First public release of the model (the weights on the Hub or the
            vendor's announcement), ``YYYY-MM`` or ``YYYY-MM-DD``; None when no source
            was found. Aliases share it unless ``alias_released`` gives one its own.
        released_source: Where the date was read (URL of the model card, the
            announcement or the repository's history); required with ``released``.
        alias_released: Alias -> its own release (:class:`AliasRelease`), for an alias published later
            than the entry; each key must be one of ``aliases``.
        params_official: Stated parameter count, or None when none was read.
        notes: Caveats: missing keys and the transformers defaults that fill
            them, proxies, variants.
        hf_quant_config: The repository's ``hf_quant_config.json`` (NVIDIA ModelOpt:
            ``quantization.quant_algo``, ``exclude_modules``, ``quantized_layers``,
            ``kv_cache_quant_algo``), verbatim, or None when the repository has none.
        config: The config.json keys, original names and values; must hold
            ``model_type``. No keys starting with ``_`` (metadata lives above).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    display_name: str = Field(min_length=1)
    aliases: tuple[str, ...] = ()
    source: str = Field(min_length=1)
    confidence: Literal["high", "medium", "low"]
    released: str | None = None
    released_source: str | None = None
    alias_released: dict[str, AliasRelease] = Field(default_factory=dict)
    params_official: OfficialParams | None = None
    notes: str = ""
    hf_quant_config: dict[str, Any] | None = None
    config: dict[str, Any]

    @field_validator("id")
    @classmethod
    def _id_is_repo_id(cls, value: str) -> str:
        if not _REPO_ID.match(value):
            raise ValueError(f"must look like 'ORG/NAME' (a Hugging Face repo id), got {value!r}")
        return value

    @field_validator("aliases")
    @classmethod
    def _aliases_not_blank(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for alias in value:
            if not alias.strip():
                raise ValueError("aliases must be non-empty strings")
        return value

    @field_validator("released")
    @classmethod
    def _released_is_a_date(cls, value: str | None) -> str | None:
        return value if value is None else release_date(value)

    @field_validator("config")
    @classmethod
    def _config_has_model_type(cls, value: dict[str, Any]) -> dict[str, Any]:
        model_type = value.get("model_type")
        if not isinstance(model_type, str) or not model_type:
            raise ValueError("config needs a 'model_type' string (as in config.json)")
        private = sorted(key for key in value if key.startswith("_"))
        if private:
            raise ValueError(f"config holds metadata keys {private}; put them beside 'config', not inside it")
        return value

    @model_validator(mode="after")
    def _aliases_differ_from_id(self) -> ModelEntry:
        if self.id in self.aliases:
            raise ValueError(f"aliases repeat the id {self.id!r}")
        return self

    @model_validator(mode="after")
    def _alias_released_names_aliases(self) -> ModelEntry:
        strays = sorted(set(self.alias_released) - set(self.aliases))
        if strays:
            raise ValueError(f"alias_released names {strays}, which are not among the aliases")
        return self

    @model_validator(mode="after")
    def _released_has_a_source(self) -> ModelEntry:
        if (self.released is None) != (not (self.released_source or "").strip()):
            raise ValueError("'released' and 'released_source' go together: a date needs the source it was read "
                             "from, and a source needs its date")
        return self

    @property
    def file_stem(self) -> str:
        """File name (without ``.json``) this entry must be stored under: ``ORG__NAME``."""
        return self.id.replace("/", "__")
