"""Traffic: length distributions, a growth model, and a seeded Monte-Carlo of users.

A *workload* says how long requests are: a prompt length and an output length,
each fixed, uniform, log-normal (given its mean and 95th percentile) or taken
from uploaded data (CSV). A sequence holds prompt + generated tokens and its KV
cache grows during generation, so by default every request is sized for its
end (DOMAIN.md section 4: "size for the end").

The Monte-Carlo draws a stream of requests, lays their paged KV cache
(:class:`planner.kv.KVProfile`, blocks of ``block_size`` tokens) into the
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

from planner.kv import KVProfile

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
        return f"fixed {self.tokens:,} tokens"


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

    def describe(self) -> str:
        """One line for the UI."""
        return (f"prompt {self.prompt.describe()}; output {self.output.describe()}; "
                f"limit {self.max_model_len:,} tokens; sized at the {self.growth}")


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


# --- CSV of lengths -----------------------------------------------------------------

_COLUMN_ALIASES = {
    "prompt": ("prompt", "prompt_len", "prompt_tokens", "input", "input_len", "input_tokens", "isl"),
    "output": ("output", "output_len", "output_tokens", "completion", "completion_tokens", "generated", "osl"),
    "total": ("total", "total_tokens", "tokens", "length", "len", "seq_len", "sequence_len", "context_len"),
}


@dataclass(frozen=True, kw_only=True)
class LengthTable:
    """Lengths read from a CSV; each column is None when absent [tokens]."""

    prompt: tuple[int, ...] | None
    output: tuple[int, ...] | None
    total: tuple[int, ...] | None

    @property
    def num_rows(self) -> int:
        """Rows of data."""
        col = self.total if self.total is not None else self.prompt
        return len(col or ())


def _column_role(name: str) -> str | None:
    key = name.strip().lower().replace(" ", "_").replace("-", "_")
    for role, aliases in _COLUMN_ALIASES.items():
        if key in aliases:
            return role
    return None


def _parse_cell(text: str, line_no: int, column: str) -> int:
    cell = text.strip()
    try:
        value = float(cell)
    except ValueError:
        raise ValueError(
            f"CSV line {line_no}, column {column!r}: expected a whole number of tokens, got {cell!r}") from None
    if not math.isfinite(value) or value != int(value) or value < 0:
        raise ValueError(
            f"CSV line {line_no}, column {column!r}: expected a whole number of tokens >= 0, got {cell!r}")
    return int(value)


def parse_lengths_csv(text: str, max_rows: int = MAX_CSV_ROWS) -> LengthTable:
    """Read request lengths from CSV text.

    Accepted shapes: one column of total lengths, or two columns prompt and
    output. A header row is optional; recognised names include ``prompt_len``,
    ``input_tokens``, ``output_len``, ``completion_tokens``, ``total``,
    ``tokens``. Without a header one column is totals and two are prompt,
    output. Blank lines and lines starting with ``#`` are skipped.

    Raises:
        ValueError: empty file, unknown header, wrong number of cells, a cell
            that is not a whole number >= 0, a prompt of 0 tokens, or more than
            ``max_rows`` rows -- each message names the line and column.
    """
    lines = [(i, line) for i, line in enumerate(text.lstrip("\ufeff").splitlines(), start=1)
             if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise ValueError("the CSV of lengths is empty: give one column of total tokens, "
                         "or two columns prompt_len,output_len")
    delimiter = ";" if ";" in lines[0][1] and "," not in lines[0][1] else ","
    first = [c.strip() for c in lines[0][1].split(delimiter)]
    has_header = any(_looks_like_text(c) for c in first)
    if has_header:
        roles = [_column_role(c) for c in first]
        unknown = [c for c, r in zip(first, roles) if r is None]
        if unknown:
            raise ValueError(
                f"CSV header: unknown column {unknown[0]!r}; use prompt_len and output_len, or total")
        if len(set(roles)) != len(roles):
            raise ValueError(f"CSV header: a column appears twice ({', '.join(first)})")
        names = first
        body = lines[1:]
    else:
        if len(first) == 1:
            roles, names = ["total"], ["total"]
        elif len(first) == 2:
            roles, names = ["prompt", "output"], ["prompt_len", "output_len"]
        else:
            raise ValueError(
                f"CSV line {lines[0][0]}: {len(first)} columns without a header; "
                f"give one column (total tokens) or two (prompt_len,output_len)")
        body = lines
    if set(roles) not in ({"total"}, {"prompt", "output"}):
        raise ValueError(
            f"CSV header: got columns {', '.join(names)}; give either total, or both prompt_len and output_len")
    if not body:
        raise ValueError("the CSV has a header but no rows of lengths")
    if len(body) > max_rows:
        raise ValueError(f"the CSV has {len(body):,} rows; the limit is {max_rows:,}: sample it down")
    columns: dict[str, list[int]] = {r: [] for r in roles}
    for line_no, line in body:
        cells = line.split(delimiter)
        if len(cells) != len(roles):
            raise ValueError(f"CSV line {line_no}: expected {len(roles)} cells, got {len(cells)}")
        for role, name, cell in zip(roles, names, cells):
            columns[role].append(_parse_cell(cell, line_no, name))
    if "prompt" in columns:
        zero = next((i for i, v in enumerate(columns["prompt"]) if v < 1), None)
        if zero is not None:
            raise ValueError(f"CSV line {body[zero][0]}: a prompt needs at least 1 token, got 0")
    if "total" in columns:
        zero = next((i for i, v in enumerate(columns["total"]) if v < 1), None)
        if zero is not None:
            raise ValueError(f"CSV line {body[zero][0]}: a request needs at least 1 token, got 0")
    return LengthTable(
        prompt=tuple(columns["prompt"]) if "prompt" in columns else None,
        output=tuple(columns["output"]) if "output" in columns else None,
        total=tuple(columns["total"]) if "total" in columns else None,
    )


def _looks_like_text(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return True
    return False


def workload_from_csv(text: str, max_model_len: int, growth: Growth = "end") -> Workload:
    """Build a :class:`Workload` from CSV text (see :func:`parse_lengths_csv`).

    Two columns give paired prompt/output draws; one column of totals is
    treated as prompt tokens with no output (sized as given).

    Raises:
        ValueError: as :func:`parse_lengths_csv`, or a row longer than
            ``max_model_len`` (the message gives the longest row).
    """
    table = parse_lengths_csv(text)
    if table.total is not None:
        longest = max(table.total)
        if longest > max_model_len:
            raise ValueError(
                f"the CSV has a {longest:,}-token request, longer than max_model_len {max_model_len:,}; "
                f"raise max_model_len or drop those rows")
        return Workload(prompt=Empirical(values=table.total, label="CSV totals"), output=Fixed(tokens=0),
                        max_model_len=max_model_len, growth=growth)
    assert table.prompt is not None and table.output is not None
    longest = max(p + o for p, o in zip(table.prompt, table.output))
    if longest > max_model_len:
        raise ValueError(
            f"the CSV has a {longest:,}-token request (prompt + output), longer than max_model_len "
            f"{max_model_len:,}; raise max_model_len or drop those rows")
    return Workload(prompt=Empirical(values=table.prompt, label="CSV prompts"),
                    output=Empirical(values=table.output, label="CSV outputs"),
                    max_model_len=max_model_len, growth=growth, paired=True)


# --- KV bytes of many sequences at once ----------------------------------------------


def sequence_bytes(profile: KVProfile, tokens: np.ndarray) -> np.ndarray:
    """Vectorised ``profile.bytes_per_sequence`` over an int array [bytes].

    Same arithmetic as :meth:`planner.kv.KVProfile.bytes_per_sequence`: per
    group, tokens capped by the window, rounded up to whole blocks.
    """
    tokens = np.asarray(tokens, dtype=np.int64)
    block = profile.block_size
    total = np.zeros(tokens.shape, dtype=np.int64)
    for g in profile.groups:
        held = tokens if g.max_tokens is None else np.minimum(tokens, g.max_tokens)
        slots = -(-held // block) * block
        total += g.num_layers * (slots * g.bytes_per_token + g.bytes_per_sequence_fixed)
    return total


def analytic_mean_sequence_bytes(profile: KVProfile, workload: Workload) -> float:
    """Expected paged KV bytes of one request, in closed form [bytes].

    Exact for fixed lengths (``profile.bytes_per_sequence``). Otherwise, per
    layer group: ``layers x (bytes_per_token x (min(E[L], window) + (B - 1) / 2)
    + fixed)``: a request's last block is on average ``(B - 1) / 2`` slots short
    of full when lengths are spread over many blocks. Ignores the
    ``max_model_len`` clip and uses ``min(E[L], w)`` for ``E[min(L, w)]``
    (an overestimate for windowed layers).
    Worked example: 16 KiB/token, block 16, mean 800 tokens -> 16 KiB x 807.5.

    Sources: Kwon et al. 2023 section 4.1 (waste bounded by one block per
    sequence); DOMAIN.md section 4.
    """
    if workload.is_fixed:
        return float(profile.bytes_per_sequence(workload.max_tokens))
    mean = workload.mean_tokens
    half_block = (profile.block_size - 1) / 2
    total = 0.0
    for g in profile.groups:
        held = mean if g.max_tokens is None else min(mean, g.max_tokens)
        total += g.num_layers * (g.bytes_per_token * (held + half_block) + g.bytes_per_sequence_fixed)
    return total


# --- Monte-Carlo of concurrent users --------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ConcurrencySimulation:
    """Users that fit a KV budget under paging, from a seeded Monte-Carlo.

    Attributes:
        seed: The ``numpy.random.default_rng`` seed.
        num_trials: Streams simulated.
        kv_cache_budget_bytes: Per-GPU KV budget [bytes].
        guaranteed_users: Users that fit with every request at its maximum
            length (``budget // bytes(max_tokens)``): never preempted.
        expected_users: Mean users that fit before the budget runs out.
        p5_users: Users that fit in 95% of trials (5th percentile).
        p50_users: Median users.
        p95_users: Users that fit in only 5% of trials (95th percentile).
        analytic_expected_users: ``budget / analytic_mean_sequence_bytes``.
        mean_sequence_bytes: Mean paged KV bytes per request in the draws [bytes].
        analytic_mean_sequence_bytes: Closed-form mean [bytes].
        mean_tokens: Mean tokens per request in the draws [tokens].
        analytic_mean_tokens: The workload's analytic mean [tokens].
        max_tokens: Longest request the workload allows [tokens].
        users_fit: Per-trial users that fit, sorted ascending.
    """

    seed: int
    num_trials: int
    kv_cache_budget_bytes: int
    guaranteed_users: int
    expected_users: float
    p5_users: int
    p50_users: int
    p95_users: int
    analytic_expected_users: float
    mean_sequence_bytes: float
    analytic_mean_sequence_bytes: float
    mean_tokens: float
    analytic_mean_tokens: float
    max_tokens: int
    users_fit: tuple[int, ...] = field(repr=False)

    def preemption_probability(self, num_users: int) -> float:
        """P(``num_users`` concurrent requests run out of KV cache) (module note 4)."""
        if num_users < 1:
            raise ValueError(f"num_users must be >= 1, got {num_users}")
        below = int(np.searchsorted(np.asarray(self.users_fit), num_users, side="left"))
        return below / self.num_trials

    def users_at_risk(self, probability: float) -> int:
        """Most users whose preemption probability is at most ``probability``.

        Raises:
            ValueError: ``probability`` outside [0, 1).
        """
        if not 0 <= probability < 1:
            raise ValueError(f"probability must be in [0, 1), got {probability}")
        fits = np.asarray(self.users_fit)
        # P(users_fit < n) <= p  <=>  at most floor(p * trials) trials below n.
        allowed = int(math.floor(probability * self.num_trials + 1e-9))
        return int(fits[allowed])

    def curve(self, max_points: int = 200) -> tuple[tuple[int, float], ...]:
        """Chart data: (users, probability of running out of KV), increasing users.

        From the guaranteed users (probability 0) to one past the largest
        trial (probability 1), at most ``max_points`` points.
        """
        lo = max(1, min(self.guaranteed_users, self.users_fit[0]))
        hi = self.users_fit[-1] + 1
        step = max(1, math.ceil((hi - lo + 1) / max_points))
        points = list(range(lo, hi + 1, step))
        if points[-1] != hi:
            points.append(hi)
        fits = np.asarray(self.users_fit)
        below = np.searchsorted(fits, np.asarray(points), side="left") / self.num_trials
        return tuple((n, float(p)) for n, p in zip(points, below))

    def to_dict(self) -> dict:
        """Summary for JSON (without the per-trial array)."""
        return {
            "seed": self.seed, "num_trials": self.num_trials,
            "kv_cache_budget_bytes": self.kv_cache_budget_bytes,
            "guaranteed_users": self.guaranteed_users, "expected_users": self.expected_users,
            "p5_users": self.p5_users, "p50_users": self.p50_users, "p95_users": self.p95_users,
            "analytic_expected_users": self.analytic_expected_users,
            "mean_sequence_bytes": self.mean_sequence_bytes,
            "analytic_mean_sequence_bytes": self.analytic_mean_sequence_bytes,
            "mean_tokens": self.mean_tokens, "analytic_mean_tokens": self.analytic_mean_tokens,
            "max_tokens": self.max_tokens,
        }


def simulate_concurrency(
    profile: KVProfile,
    budget_bytes: int,
    workload: Workload,
    *,
    num_trials: int = 1000,
    seed: int = 0,
) -> ConcurrencySimulation:
    """Seeded Monte-Carlo of how many concurrent requests fit a paged KV budget.

    Each trial draws a stream of requests (``workload.sample_tokens``), costs
    each with ``profile.bytes_per_sequence`` (blocks of ``profile.block_size``,
    windows applied), and counts the requests admitted in order before the
    running total exceeds ``budget_bytes``.

    Args:
        profile: Paged KV profile on one GPU (``kv_profile(..., block_size=B)``).
        budget_bytes: Per-GPU KV budget [bytes] (``Plan.kv_cache_budget_bytes``).
        workload: Request lengths.
        num_trials: Streams to simulate, >= 20.
        seed: Seed of ``numpy.random.default_rng``; same seed, same result.

    Raises:
        ValueError: ``num_trials < 20``, a budget that holds not even the
            smallest request, or a model without per-sequence KV.

    Sources: module docstring; vLLM scheduler admits requests FCFS while free
    blocks remain (vllm/v1/core/sched/scheduler.py).
    """
    if num_trials < 20:
        raise ValueError(f"num_trials must be >= 20 for percentiles, got {num_trials}")
    if profile.bytes_per_sequence(1) <= 0:
        raise ValueError("this model holds no KV cache per sequence; concurrency is not limited by KV")
    rng = np.random.default_rng(seed)
    max_tokens = workload.max_tokens
    worst = profile.bytes_per_sequence(max_tokens)
    guaranteed = max(budget_bytes, 0) // worst
    analytic_bytes = analytic_mean_sequence_bytes(profile, workload)
    if budget_bytes < profile.bytes_per_sequence(1):
        raise ValueError(
            f"the KV budget ({budget_bytes:,} B) holds not even a 1-token request "
            f"({profile.bytes_per_sequence(1):,} B): add GPUs, use a smaller weight dtype or raise "
            f"gpu_memory_utilization")

    stream_len = int(math.ceil(1.3 * budget_bytes / analytic_bytes)) + 32
    chunk = max(1, MAX_SIMULATION_ELEMENTS // stream_len)
    users: list[np.ndarray] = []
    token_sum = 0.0
    byte_sum = 0.0
    drawn = 0
    done = 0
    while done < num_trials:
        rows = min(chunk, num_trials - done)
        tokens = workload.sample_tokens(rng, rows * stream_len).reshape(rows, stream_len)
        costs = sequence_bytes(profile, tokens)
        token_sum += float(tokens.sum())
        byte_sum += float(costs.sum())
        drawn += tokens.size
        running = np.cumsum(costs, axis=1)
        # Rare long tails: extend the streams that never ran out (deterministic for a seed).
        while (running[:, -1] <= budget_bytes).any():
            extra_tokens = workload.sample_tokens(rng, rows * stream_len).reshape(rows, stream_len)
            extra = sequence_bytes(profile, extra_tokens)
            token_sum += float(extra_tokens.sum())
            byte_sum += float(extra.sum())
            drawn += extra_tokens.size
            running = np.concatenate([running, running[:, -1:] + np.cumsum(extra, axis=1)], axis=1)
        users.append((running <= budget_bytes).sum(axis=1))
        done += rows
    fits = np.sort(np.concatenate(users))
    return ConcurrencySimulation(
        seed=seed, num_trials=num_trials, kv_cache_budget_bytes=budget_bytes,
        guaranteed_users=int(guaranteed), expected_users=float(fits.mean()),
        p5_users=int(np.quantile(fits, 0.05, method="lower")),
        p50_users=int(np.quantile(fits, 0.5, method="lower")),
        p95_users=int(np.quantile(fits, 0.95, method="higher")),
        analytic_expected_users=budget_bytes / analytic_bytes,
        mean_sequence_bytes=byte_sum / drawn, analytic_mean_sequence_bytes=analytic_bytes,
        mean_tokens=token_sum / drawn, analytic_mean_tokens=workload.mean_tokens,
        max_tokens=max_tokens, users_fit=tuple(int(x) for x in fits),
    )


def demand_quantile_bytes(
    slot_sums: dict[int | None, np.ndarray], profile: KVProfile, num_users: int, quantile: float
) -> int:
    """The ``quantile`` of the KV bytes ``num_users`` requests need, from pre-drawn slot sums.

    ``slot_sums[cap]`` holds, per trial, the block-rounded token slots of
    ``num_users`` requests in a layer with window ``cap`` (None = no window),
    from :func:`draw_slot_sums`. Bytes per trial are then
    ``sum_g layers_g x bytes_per_token_g x slot_sums[cap_g] + num_users x fixed``:
    linear in the profile, so one draw serves every dtype and TP size.

    Raises:
        KeyError: a window of ``profile`` missing from ``slot_sums``.
    """
    total = np.zeros_like(next(iter(slot_sums.values())), dtype=np.float64)
    for g in profile.groups:
        total += float(g.num_layers * g.bytes_per_token) * slot_sums[g.max_tokens]
        total += float(num_users * g.num_layers * g.bytes_per_sequence_fixed)
    return int(math.ceil(float(np.quantile(total, quantile))))


def draw_slot_sums(
    workload: Workload, num_users: int, block_size: int, caps: tuple[int | None, ...],
    *, num_trials: int = 2000, seed: int = 0,
) -> dict[int | None, np.ndarray]:
    """Per-trial sums of block-rounded token slots of ``num_users`` requests, per window cap.

    See :func:`demand_quantile_bytes`. Deterministic for a seed.
    """
    if num_users < 1:
        raise ValueError(f"num_users must be >= 1, got {num_users}")
    rng = np.random.default_rng(seed)
    rows = max(1, min(num_trials, MAX_SIMULATION_ELEMENTS // num_users))
    sums: dict[int | None, list[np.ndarray]] = {c: [] for c in caps}
    done = 0
    while done < num_trials:
        n = min(rows, num_trials - done)
        tokens = workload.sample_tokens(rng, n * num_users).reshape(n, num_users)
        for cap in caps:
            held = tokens if cap is None else np.minimum(tokens, cap)
            sums[cap].append((-(-held // block_size) * block_size).sum(axis=1).astype(np.float64))
        done += n
    return {c: np.concatenate(v) for c, v in sums.items()}
