"""Change points of a series of positive values (a history's session median step times, in time order): the idea of
Otava / E-Divisive with a t-test, on the log values (:func:`detect`). Pure but for ruptures and numpy, imported when
used; no I/O. ``harness.reporting.history`` applies it to every series of its page.

1. candidates: PELT (``ruptures``, least-squares cost, segments of at least ``MIN_SIZE`` sessions) with the
   penalty ``PENALTY_K * sigma^2 * log(n)`` per change point; sigma is estimated robustly from successive
   differences, ``1.4826 * MAD(diff(y)) / sqrt(2)`` (a shift moves one difference only, so it barely moves
   sigma). In units of sigma^2 the least-squares cost is -2 log-likelihood of Gaussian log values, and
   ``3 log n`` per change point is the modified BIC of Zhang & Siegmund (2007), the default penalty of
   R's changepoint package: BIC's 2 log n (a location and a new mean) plus log n for the location search;
2. test: for each candidate, Welch's t between the log session medians of its two neighbouring segments
   (:func:`harness.judging.stats.log_ratio`), two-sided; the p-value is multiplied by the number of
   positions that split could have taken in those segments (Bonferroni over the scan: the candidate is the
   best split, not a pre-chosen one); Holm over the candidates at ``ALPHA``;
3. prune: while some candidate is not significant, drop the least significant one (its neighbours'
   segments merge) and test again. What remains is kept, each with its ratio after/before and the 90%
   Welch interval of that ratio.

The false-alarm rate of series without a shift and the power against a shift are checked by simulation
(:func:`simulate` over :func:`synthetic` series) in ``tests/test_history.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

from harness.errors import BadInput
from harness.judging.stats import holm, log_ratio
from harness.judging.thresholds import CHANGE_ALPHA

PENALTY_K = 3.0
ALPHA = CHANGE_ALPHA
MIN_SIZE = 2
INSTALL = "pip install ruptures (or pip install -e . from the repository)"


class ChangePointError(BadInput):
    """A series that change points cannot be searched in (a value that is not positive)."""


@dataclass(frozen=True)
class ChangePoint:
    """A kept change: sessions ``index`` onwards differ from the segment before, by ``ratio`` (after/before,
    geometric means of session medians) with a 90% Welch interval [lo, hi]."""

    index: int
    ratio: float
    lo: float
    hi: float
    p: float  # Welch two-sided p times the positions scanned, capped at 1 (what Holm sees)
    p_welch: float
    positions: int
    n_before: int
    n_after: int


@dataclass(frozen=True)
class Detection:
    n: int
    sigma: float | None  # robust sd of the log values (successive differences)
    penalty: float | None
    candidates: tuple[ChangePoint, ...]  # PELT's, as the first round of the test saw them
    kept: tuple[ChangePoint, ...]
    note: str = ""  # why nothing was searched, when nothing was


def robust_sigma(y: Sequence[float]) -> float:
    """``1.4826 * MAD(diff(y)) / sqrt(2)``: the sd of y from its successive differences, unmoved by a few shifts.
    Falls back to the plain sd of the differences when the MAD is 0 (values in steps of exactly 0)."""
    d = [b - a for a, b in zip(y, y[1:])]
    if not d:
        return 0.0
    md = median(d)
    s = 1.4826 * median(abs(x - md) for x in d) / math.sqrt(2)
    if s == 0 and len(d) > 1:
        m = sum(d) / len(d)
        s = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1) / 2)
    return s


def _test(values: Sequence[float], cps: list[int], min_size: int) -> list[ChangePoint]:
    edges = [0, *cps, len(values)]
    out = []
    for j, b in enumerate(cps):
        before, after = values[edges[j] : b], values[b : edges[j + 2]]
        e = log_ratio(before, after, 0.05)  # 90% interval
        pw = 2 * min(e.p_above(1.0), e.p_below(1.0))
        pw = 1.0 if not math.isfinite(pw) else min(pw, 1.0)
        positions = len(before) + len(after) - 2 * min_size + 1
        out.append(
            ChangePoint(b, e.ratio, e.lo, e.hi, min(1.0, pw * positions), pw, positions, len(before), len(after))
        )
    return out


def detect(
    values: Sequence[float], *, k: float = PENALTY_K, alpha: float = ALPHA, min_size: int = MIN_SIZE
) -> Detection:
    """Change points of a series of positive values (session median step times, in time order).

    Rule (module docstring): PELT on the log values with penalty ``k * sigma^2 * log(n)``, then Welch's t between
    neighbouring segments, Bonferroni over the positions scanned, Holm over the candidates at ``alpha``, dropping
    the least significant candidate until all that remain are significant. Raises ImportError without ruptures.
    """
    import numpy as np
    import ruptures as rpt

    n = len(values)
    if any(not (v > 0) for v in values):
        raise ChangePointError("change points need positive values")
    if n < 2 * min_size:
        return Detection(n, None, None, (), (), f"{n} sessions; a change point needs at least {2 * min_size}")
    y = [math.log(v) for v in values]
    sigma = robust_sigma(y)
    if sigma == 0:
        return Detection(n, 0.0, 0.0, (), (), "constant series")
    penalty = k * sigma**2 * math.log(n)
    cands = rpt.Pelt(model="l2", min_size=min_size, jump=1).fit(np.asarray(y).reshape(-1, 1)).predict(pen=penalty)[:-1]
    cps, first = list(cands), tuple(_test(values, cands, min_size))
    while cps:
        tested = _test(values, cps, min_size)
        rejected = holm([c.p for c in tested], alpha)
        if all(rejected):
            return Detection(n, sigma, penalty, first, tuple(tested))
        worst = max(range(len(tested)), key=lambda i: (tested[i].p, -abs(math.log(tested[i].ratio))))
        del cps[worst]
    return Detection(n, sigma, penalty, first, ())


def synthetic(
    seed: int,
    n: int = 30,
    sigma: float = 0.02,
    shift: float = 0.0,
    at: int | None = None,
    noise: str = "normal",
    level_ms: float = 400.0,
) -> list[float]:
    """A synthetic series of session medians (ms): log-normal noise of sd ``sigma`` ("normal"), or t(3) scaled to
    that sd ("t3"); from session ``at`` on, ``shift`` (0.10: 10% slower) is added."""
    import numpy as np

    rng = np.random.default_rng(seed)
    e = rng.normal(0.0, sigma, n) if noise == "normal" else rng.standard_t(3, n) * sigma / math.sqrt(3)
    if shift and at is not None:
        e[at:] += math.log1p(shift)
    return [level_ms * math.exp(x) for x in e]


def simulate(
    series: int = 200,
    n: int = 30,
    sigma: float = 0.02,
    shift: float = 0.0,
    at: int | None = None,
    noise: str = "normal",
    first_seed: int = 0,
    **kw,
) -> dict[str, float]:
    """Detection over ``series`` synthetic series: the share with any change point (``any``; without a shift, the
    false-alarm rate), with one at ``at`` (``found``), and with exactly that one (``exact``)."""
    hits = [
        [c.index for c in detect(synthetic(first_seed + i, n, sigma, shift, at, noise), **kw).kept]
        for i in range(series)
    ]
    return {
        "any": sum(bool(h) for h in hits) / series,
        "found": sum(at in h for h in hits) / series,
        "exact": sum(h == [at] for h in hits) / series,
    }
