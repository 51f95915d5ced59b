"""Shifts that hold: the timing alert's rule, on one series of nightly session medians (ms, in time order). Pure; numpy
and scipy only.

Why not the page's change points alone (:func:`harness.judging.changepoints.detect`): they test a split with Welch's t
between the segments on either side, with the p-value multiplied by the positions scanned. Two nights after a shift give
Welch's t about one degree of freedom and the scan multiplies by the series' length, so a shift two nights old is almost
never significant there, whatever its size. The alert asks the narrower question the nightly has each morning: *have the
last ``nights`` nights all left the level of the nights before them, on the same side?*

Rule, on the log medians y. A reference segment starts at the first night and again at each alert's first night. At
night t, the candidate shift starts at s = t - nights + 1; its reference is the nights [max(start, s - reference), s),
at least ``min_reference`` of them, with mean m and sample sd sd (at least ``sigma_floor``). The prediction statistic
of each night i >= s is ``T_i = (y_i - m) / (sd * sqrt(1 + 1/n))`` (Student t, n - 1 df, for one night under Gaussian
noise). An alert when every ``T_i`` of the ``nights`` nights is beyond ``c`` on the same side and the nights agree (no
two differ by more than the two-sided ``1 - agree`` band of a difference of two nights, Bonferroni over the pairs); the
next reference then starts at s. ``c`` makes the chance of that at one look, for a series without a shift (Gaussian
night-to-night noise, the reference's mean and sd shared by the nights: :func:`tail`), equal to ``alpha / horizon``:
over ``horizon`` looks at most ``alpha`` false alerts are expected (Bonferroni over the looks). A one-night spike never
alerts: the night after it is back at the level, and a noisy night next to it does not agree with it. The size of an
alert: the ratio of the geometric mean of the nights from s on (up to the next alert) to the reference's, with its 90%
pooled-t interval. :func:`simulate` measures false alarms and power (``docs/store.md``).
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate
from statistics import fmean, stdev

from harness.errors import BadInput


@dataclass(frozen=True)
class ShiftRule:
    """The settings of the rule (module docstring); ``alpha`` is the expected number of false alerts of one series in
    ``horizon`` nights."""

    alpha: float = 0.05
    horizon: int = 365
    nights: int = 2
    reference: int = 30
    min_reference: int = 8
    sigma_floor: float = 0.002
    agree: float = 0.01  # the nights after a shift hold one level: no two differ beyond the two-sided (1 - agree) band

    def __post_init__(self):
        if not 0 < self.alpha < 1:
            raise BadInput(f"shift rule: alpha must be in (0, 1), got {self.alpha}; pass e.g. 0.05")
        if self.nights < 2:
            raise BadInput(f"shift rule: nights must be at least 2 (one night proves nothing), got {self.nights}")
        if self.horizon < 1 or self.min_reference < 3 or self.reference < self.min_reference:
            raise BadInput(
                f"shift rule: need horizon >= 1 and 3 <= min_reference <= reference, got {self.horizon}, "
                f"{self.min_reference}, {self.reference}"
            )
        if not self.sigma_floor >= 0:
            raise BadInput(f"shift rule: sigma_floor must be >= 0, got {self.sigma_floor}")


DEFAULT_RULE = ShiftRule()


@dataclass(frozen=True)
class Shift:
    """A shift that held: nights ``start``.. left the level of nights ``ref_start``..``start - 1``; raised at night
    ``raised`` (``start + nights - 1``); ``end`` is the last night of its level (the next shift's start, or the series'
    end)."""

    start: int
    raised: int
    end: int
    ref_start: int
    ratio: float
    lo: float
    hi: float
    threshold: float
    t_values: tuple[float, ...]


def tail(c: float, n: int, nights: int) -> float:
    """P(every one of ``nights`` new nights has T > c), T the prediction statistic of a reference of n nights, for
    Gaussian noise: the nights share the reference's mean and sd, so they are not independent. By quadrature over the
    reference mean (Gauss-Hermite) and sd (chi-square quantiles)."""
    import numpy as np
    from scipy import special, stats

    x, w = np.polynomial.hermite_e.hermegauss(48)
    w = w / w.sum()
    q = (np.arange(400) + 0.5) / 400
    s = np.sqrt(stats.chi2.ppf(q, n - 1) / (n - 1))
    k = math.sqrt(1 + 1 / n)
    u = x[None, :] / math.sqrt(n)
    p = special.ndtr(-(u + c * k * s[:, None])) ** nights
    return float((p * w[None, :]).sum(axis=1).mean())


@lru_cache(maxsize=256)
def threshold(n: int, nights: int, per_look: float) -> float:
    """The c at which two-sided ``2 * tail(c, n, nights) = per_look``."""
    from scipy.optimize import brentq

    return brentq(lambda c: 2 * tail(c, n, nights) - per_look, 0.0, 60.0, xtol=1e-6)


def _size(ref: Sequence[float], after: Sequence[float], sd: float) -> tuple[float, float, float]:
    """Ratio after/reference of the geometric means and its 90% pooled-t interval (sd from the reference)."""
    from scipy import stats

    d = fmean(after) - fmean(ref)
    half = stats.t.ppf(0.95, len(ref) - 1) * sd * math.sqrt(1 / len(ref) + 1 / len(after))
    return math.exp(d), math.exp(d - half), math.exp(d + half)


def _agree(after: Sequence[float], sd: float, beta: float) -> bool:
    """Whether the nights after a candidate shift hold one level: every two differ by at most the (1 - beta) band of a
    difference of two nights (Bonferroni over the pairs). A one-night spike next to a high night fails it."""
    return max(after) - min(after) <= _band(len(after), beta) * sd * math.sqrt(2)


@lru_cache(maxsize=64)
def _band(k: int, beta: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(1 - beta / (k * (k - 1))))


_SQRT_BITS = 2 * sys.float_info.mant_dig + 3  # the bits of n / m whose root is rounded to odd, then to a float


def _sqrt_of_fraction(n: int, m: int) -> float:
    """The square root of ``n / m`` (``n >= 0``, ``m > 0``), correctly rounded to a float, as :func:`statistics.stdev`
    rounds it: the root to :data:`_SQRT_BITS` bits, rounded to odd, then converted once."""
    q = (n.bit_length() - m.bit_length() - _SQRT_BITS) // 2
    n, m = (n, m << 2 * q) if q >= 0 else (n << -2 * q, m)
    root = math.isqrt(n // m)
    root |= root * root * m != n  # round to odd: a root that is not exact keeps its last bit set
    return float(root << q) if q >= 0 else root / (1 << -q)


def _window_sd(y: list[float]) -> Callable[[int, int], float]:
    """The sample sd of ``y[lo:hi]``, for any window, equal to ``statistics.stdev(y[lo:hi])`` to the last bit: the sum
    and the sum of squares of each window are exact integers (every float is an integer over a common power of two)
    taken from running sums, so that a window costs two subtractions instead of a pass over it in fractions."""
    if not all(map(math.isfinite, y)):
        return lambda lo, hi: stdev(y[lo:hi])
    ratios = [v.as_integer_ratio() for v in y]
    scale = max((d for _, d in ratios), default=1).bit_length() - 1  # every denominator is a power of two
    units = [n << (scale - d.bit_length() + 1) for n, d in ratios]
    s1 = [0, *accumulate(units)]
    s2 = [0, *accumulate(u * u for u in units)]

    def sd(lo: int, hi: int) -> float:
        k, a, b = hi - lo, s1[hi] - s1[lo], s2[hi] - s2[lo]
        return _sqrt_of_fraction(k * b - a * a, (k * (k - 1)) << (2 * scale))

    return sd


def find(values: Sequence[float], rule: ShiftRule = DEFAULT_RULE) -> list[Shift]:
    """The shifts that held in a series of positive values (session median step times, time order)."""
    y = [math.log(v) for v in values]
    window_sd = _window_sd(y)
    per_look = rule.alpha / rule.horizon
    found: list[tuple[int, int, int, float, tuple[float, ...]]] = []
    start = 0
    for t in range(len(y)):
        s = t - rule.nights + 1
        lo = max(start, s - rule.reference)
        if s - lo < rule.min_reference:
            continue
        ref = y[lo:s]
        m, sd = fmean(ref), max(window_sd(lo, s), rule.sigma_floor)
        c = threshold(len(ref), rule.nights, per_look)
        tv = tuple((y[i] - m) / (sd * math.sqrt(1 + 1 / len(ref))) for i in range(s, t + 1))
        if (all(v > c for v in tv) or all(v < -c for v in tv)) and _agree(y[s : t + 1], sd, rule.agree):
            found.append((s, t, lo, c, tv))
            start = s
    out = []
    for j, (s, t, lo, c, tv) in enumerate(found):
        end = found[j + 1][0] - 1 if j + 1 < len(found) else len(y) - 1
        ref = y[lo:s]
        ratio, a, b = _size(ref, y[s : end + 1], max(window_sd(lo, s), rule.sigma_floor))
        out.append(Shift(s, t, end, lo, ratio, a, b, c, tv))
    return out


def simulate(
    series: int = 200,
    n: int = 100,
    sigma: float = 0.10,
    shift: float = 0.0,
    at: int | None = None,
    noise: str = "normal",
    first_seed: int = 0,
    rule: ShiftRule = DEFAULT_RULE,
) -> dict[str, float]:
    """The rule on ``series`` synthetic series (:func:`harness.judging.changepoints.synthetic`: log-normal or t(3) noise
    of sd ``sigma``, ``shift`` from night ``at`` on): the share with any alert (``any``; without a shift, the
    false-alarm rate of ``n`` nights), with one starting at ``at`` (``found``), and raised on its ``rule.nights``-th
    night (``on_time``)."""
    from harness.judging.changepoints import synthetic

    hits = [find(synthetic(first_seed + i, n, sigma, shift, at, noise), rule) for i in range(series)]
    return {
        "any": sum(bool(h) for h in hits) / series,
        "found": sum(any(s.start == at for s in h) for h in hits) / series,
        "on_time": sum(any(s.start == at and s.raised == at + rule.nights - 1 for s in h) for h in hits) / series,
    }
