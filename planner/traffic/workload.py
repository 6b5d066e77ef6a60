"""Traffic: length distributions, a growth model, and a seeded Monte-Carlo of users.

A *workload* says how long requests are: a prompt length and an output length,
each fixed, uniform, log-normal (given its mean and 95th percentile) or taken
from uploaded data (CSV). A sequence holds prompt + generated tokens and its KV
cache grows during generation, so by default every request is sized for its
end (DOMAIN.md section 4: "size for the end").

The Monte-Carlo draws a stream of requests, lays their paged KV cache
(:class:`planner.model.kv.KVProfile`, blocks of ``block_size`` tokens) into the
per-GPU budget in arrival order, and counts how many fit before the budget runs
out. Repeated over seeded trials this gives the expected number of concurrent
users, its 5th/95th percentiles, and the probability that N concurrent users
run out of KV cache (vLLM then preempts a request: the "preemption" of the
vLLM docs, "Optimization and Tuning").

Design notes (assumptions):
    1. Prompt and output lengths are independent unless ``paired`` (rows of a
       CSV with both columns are drawn together).
    2. Draws from continuous distributions are rounded to the nearest whole
       token, at least 1 prompt token; the total is clipped to ``max_model_len``
       (the engine rejects longer requests).
    3. ``growth="end"`` sizes each request at prompt + output tokens (its
       peak). ``growth="uniform"`` is a snapshot of continuous batching: each
       running request is at a uniformly random decode step, prompt + U{0..output}.
       Worked example: prompt 100, output 50 -> "end" holds 150 tokens, "uniform"
       holds 100 to 150 (mean 125).
    4. N users run out of KV cache exactly when the first N requests of a
       stream do not fit, so one simulation of "users that fit" yields the whole
       users-vs-probability curve: P(preempt at N) = P(users_fit < N).

Sources: DOMAIN.md section 4; Kwon et al., SOSP 2023 (PagedAttention, blocks on
demand); vLLM docs "Optimization and Tuning" (preemption when KV blocks run out);
log-normal request lengths: a common fit for LLM traffic (e.g. Splitwise, Patel
et al. ISCA 2024, figure 3 length CDFs) -- used as a shape, not as data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np

from planner.text import count_noun

Z95 = 1.6448536269514722
"""Standard normal 95th percentile, Phi^-1(0.95)."""

MAX_CSV_ROWS = 1_000_000
"""Largest CSV of lengths accepted [rows]."""

MAX_SIMULATION_ELEMENTS = 4_000_000
"""Requests drawn per Monte-Carlo chunk (trials x stream length), ~32 MB of int64."""


def _normal_cdf(x: float) -> float:
    """Standard normal CDF Phi(x) via erf."""
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


class LengthDistribution(Protocol):
    """What every length distribution offers (tokens are whole numbers)."""

    kind: str

    @property
    def mean_tokens(self) -> float:
        """Analytic mean [tokens]."""

    @property
    def max_tokens(self) -> int | None:
        """Largest possible draw [tokens], None when unbounded."""

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws as int64 [tokens]."""

    def describe(self) -> str:
        """One line for the UI."""


@dataclass(frozen=True, kw_only=True)
class Fixed:
    """Every request has exactly ``tokens`` tokens.

    Attributes:
        tokens: Length [tokens], >= 0 (0 is allowed for outputs only).
    """

    tokens: int
    kind = "fixed"

    def __post_init__(self) -> None:
        if self.tokens < 0:
            raise ValueError(f"a fixed length must be >= 0 tokens, got {self.tokens}")

    @property
    def mean_tokens(self) -> float:
        return float(self.tokens)

    @property
    def max_tokens(self) -> int:
        return self.tokens

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.tokens, dtype=np.int64)

    def describe(self) -> str:
        return f"fixed {count_noun(self.tokens, 'token')}"


@dataclass(frozen=True, kw_only=True)
class Uniform:
    """Whole-token lengths uniform on ``[low, high]`` inclusive.

    Mean ``(low + high) / 2``. Worked example: [100, 300] has mean 200.
    """

    low: int
    high: int
    kind = "uniform"

    def __post_init__(self) -> None:
        if self.low < 0 or self.high < self.low:
            raise ValueError(
                f"a uniform length needs 0 <= low <= high tokens, got low {self.low}, high {self.high}")

    @property
    def mean_tokens(self) -> float:
        return (self.low + self.high) / 2

    @property
    def max_tokens(self) -> int:
        return self.high

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.integers(self.low, self.high + 1, size=n, dtype=np.int64)

    def describe(self) -> str:
        return f"uniform {self.low:,}-{self.high:,} tokens"


@dataclass(frozen=True, kw_only=True)
class LogNormal:
    """A log-normal length given its mean and 95th percentile, optionally clipped.

    ``ln X ~ N(mu, sigma^2)`` with ``mean = exp(mu + sigma^2 / 2)`` and
    ``p95 = exp(mu + z sigma)``, ``z = 1.6449``. Dividing, ``ln(p95 / mean) =
    z sigma - sigma^2 / 2``, whose smaller root is
    ``sigma = z - sqrt(z^2 - 2 ln(p95 / mean))``. A solution exists only when
    ``p95 / mean <= exp(z^2 / 2) = 3.87``.
    Worked example: mean 800, p95 2,000: ln 2.5 = 0.9163, sigma = 1.6449 -
    sqrt(2.7055 - 1.8326) = 0.7106, mu = ln 800 - sigma^2 / 2 = 6.4322.

    Attributes:
        mean: Mean length before clipping [tokens], > 0.
        p95: 95th percentile [tokens], > mean.
        clip_tokens: Largest length kept [tokens]; longer draws become this.
            None = no clip (the workload's ``max_model_len`` still applies).

    Sources: Aitchison & Brown, *The Lognormal Distribution* (1957) for the
    moments; clipped mean ``E[min(X, c)] = e^(mu + sigma^2/2) Phi((ln c - mu -
    sigma^2)/sigma) + c (1 - Phi((ln c - mu)/sigma))``.
    """

    mean: float
    p95: float
    clip_tokens: int | None = None
    kind = "lognormal"

    def __post_init__(self) -> None:
        if not self.mean > 0:
            raise ValueError(f"a log-normal length needs mean > 0 tokens, got {self.mean}")
        if not self.p95 > self.mean:
            raise ValueError(
                f"a log-normal length is right-skewed: p95 ({self.p95:g}) must exceed the mean ({self.mean:g}); "
                f"for a symmetric spread use a uniform distribution")
        ratio_limit = math.exp(Z95 * Z95 / 2)
        if self.p95 / self.mean > ratio_limit:
            raise ValueError(
                f"no log-normal has p95 / mean = {self.p95 / self.mean:.2f}; the most is {ratio_limit:.2f}: "
                f"lower p95 to at most {math.floor(self.mean * ratio_limit):,} tokens or upload a CSV of lengths")
        if self.clip_tokens is not None and self.clip_tokens < 1:
            raise ValueError(f"clip_tokens must be >= 1 token, got {self.clip_tokens}")

    @property
    def sigma(self) -> float:
        """Log-space standard deviation (smaller root, see class docstring)."""
        log_ratio = math.log(self.p95 / self.mean)
        return Z95 - math.sqrt(max(Z95 * Z95 - 2 * log_ratio, 0.0))

    @property
    def mu(self) -> float:
        """Log-space mean: ``ln(mean) - sigma^2 / 2``."""
        return math.log(self.mean) - self.sigma ** 2 / 2

    @property
    def mean_tokens(self) -> float:
        """Mean after clipping [tokens] (equals ``mean`` without a clip)."""
        if self.clip_tokens is None:
            return float(self.mean)
        c, mu, s = self.clip_tokens, self.mu, self.sigma
        below = math.exp(mu + s * s / 2) * _normal_cdf((math.log(c) - mu - s * s) / s)
        return below + c * (1 - _normal_cdf((math.log(c) - mu) / s))

    @property
    def max_tokens(self) -> int | None:
        return self.clip_tokens

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        draws = np.rint(rng.lognormal(self.mu, self.sigma, size=n))
        hi = self.clip_tokens if self.clip_tokens is not None else np.iinfo(np.int32).max
        return np.clip(draws, 1, hi).astype(np.int64)

    def describe(self) -> str:
        clip = f", clipped at {self.clip_tokens:,}" if self.clip_tokens else ""
        return f"log-normal, mean {self.mean:,.0f}, p95 {self.p95:,.0f} tokens{clip}"


@dataclass(frozen=True, kw_only=True, eq=False)
class Empirical:
    """Lengths drawn with replacement from observed values (e.g. an uploaded CSV).

    Attributes:
        values: Observed lengths [tokens], each >= 0, at least one.
        label: Where the values came from, for the UI.
    """

    values: tuple[int, ...]
    label: str = "uploaded lengths"
    kind = "empirical"
    _array: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError("an empirical length distribution needs at least one value")
        array = np.asarray(self.values, dtype=np.int64)
        if (array < 0).any():
            raise ValueError(f"lengths must be >= 0 tokens, got {int(array.min())}")
        object.__setattr__(self, "_array", array)

    @property
    def mean_tokens(self) -> float:
        return float(self._array.mean())

    @property
    def max_tokens(self) -> int:
        return int(self._array.max())

    def quantile(self, q: float) -> float:
        """The ``q`` quantile of the observed values [tokens]."""
        return float(np.quantile(self._array, q))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self._array[rng.integers(0, len(self._array), size=n)]

    def sample_indices(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Row indices for paired draws."""
        return rng.integers(0, len(self._array), size=n)

    def describe(self) -> str:
        return f"{self.label}: {len(self.values):,} values, mean {self.mean_tokens:,.0f} tokens"


Distribution = Fixed | Uniform | LogNormal | Empirical
"""Any length distribution."""

Growth = Literal["end", "uniform"]


@dataclass(frozen=True, kw_only=True)
class Workload:
    """Request lengths and how KV grows while a request runs.

    Attributes:
        prompt: Prompt lengths [tokens].
        output: Generated lengths [tokens].
        max_model_len: Longest sequence the engine accepts [tokens]; totals are
            clipped to it.
        growth: ``end`` (size every request for its last token; default) or
            ``uniform`` (random decode step, see module note 3).
        paired: Draw prompt and output from the same row (both must be
            :class:`Empirical` of equal length).
    """

    prompt: Distribution
    output: Distribution
    max_model_len: int
    growth: Growth = "end"
    paired: bool = False

    def __post_init__(self) -> None:
        if self.max_model_len < 1:
            raise ValueError(f"max_model_len must be >= 1 token, got {self.max_model_len}")
        if self.growth not in ("end", "uniform"):
            raise ValueError(f"growth must be 'end' or 'uniform', got {self.growth!r}")
        if self.paired and not (
            isinstance(self.prompt, Empirical) and isinstance(self.output, Empirical)
            and len(self.prompt.values) == len(self.output.values)
        ):
            raise ValueError("paired draws need prompt and output from the same CSV (equal row counts)")

    @property
    def is_fixed(self) -> bool:
        """True when every request has the same length (growth 'end')."""
        return isinstance(self.prompt, Fixed) and isinstance(self.output, Fixed) and self.growth == "end"

    @property
    def mean_tokens(self) -> float:
        """Analytic mean tokens held per request (before the ``max_model_len`` clip) [tokens]."""
        out = self.output.mean_tokens if self.growth == "end" else self.output.mean_tokens / 2
        return self.prompt.mean_tokens + out

    @property
    def max_tokens(self) -> int:
        """Longest request [tokens]: max prompt + max output, at most ``max_model_len``.

        Unbounded distributions (log-normal without a clip) reach ``max_model_len``.
        """
        p, o = self.prompt.max_tokens, self.output.max_tokens
        if p is None or o is None:
            return self.max_model_len
        return min(p + o, self.max_model_len)

    def sample_tokens(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Tokens held by ``n`` requests (growth applied, clipped) as int64 [tokens]."""
        if self.paired:
            idx = self.prompt.sample_indices(rng, n)  # type: ignore[union-attr]
            prompt = self.prompt._array[idx]  # type: ignore[union-attr]
            output = self.output._array[idx]  # type: ignore[union-attr]
        else:
            prompt = self.prompt.sample(rng, n)
            output = self.output.sample(rng, n)
        if self.growth == "uniform":
            output = np.floor(rng.random(n) * (output + 1)).astype(np.int64)
        return np.minimum(prompt + output, self.max_model_len)

    def describe(self, media_tokens: int = 0) -> str:
        """One line for the UI. ``media_tokens``: the image and video tokens each request carries beside its text
        (:func:`planner.traffic.find_engine.launch_media_tokens`), inside the limit as a launch's
        ``--max-model-len`` holds them: "limit 3,532 tokens (2,500 text + 1,032 image and video tokens)"."""
        media = f" ({self.max_model_len:,} text + {media_tokens:,} image and video tokens)" if media_tokens else ""
        return (f"prompt {self.prompt.describe()}; output {self.output.describe()}; "
                f"limit {self.max_model_len + media_tokens:,} tokens{media}; sized at the {self.growth}")


def fixed_workload(prompt_len: int, output_len: int, max_model_len: int | None = None) -> Workload:
    """A workload where every request has ``prompt_len`` + ``output_len`` tokens.

    Raises:
        ValueError: negative lengths, or a request longer than ``max_model_len``.
    """
    limit = prompt_len + output_len if max_model_len is None else max_model_len
    if prompt_len < 1:
        raise ValueError(f"prompt_len must be >= 1 token, got {prompt_len}")
    if prompt_len + output_len > limit:
        raise ValueError(
            f"prompt_len + output_len = {prompt_len + output_len:,} tokens exceeds max_model_len {limit:,}; "
            f"raise max_model_len or shorten the request")
    return Workload(prompt=Fixed(tokens=prompt_len), output=Fixed(tokens=output_len), max_model_len=limit)
