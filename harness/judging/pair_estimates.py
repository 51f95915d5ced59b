"""One-sample estimates of a log ratio B/A from the units of an interleaved comparison (pairs, or launch summaries):
the t estimate (:class:`PairedEstimate`) and, for pairs, Wilcoxon's signed-rank test with its Hodges–Lehmann estimate
and interval (:class:`RankEstimate`). Pure; no I/O. The design they serve is described in :mod:`harness.judging.paired`.
"""

from __future__ import annotations

import math
from bisect import bisect_left as _bisect_left
from bisect import bisect_right as _bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from statistics import fmean, median

# the distribution functions themselves, which scipy.stats' t and norm call underneath: the same values, without the
# per-call argument handling of its distribution objects, which a verdict's looks would pay at every call
from scipy import special as _sp

from harness.errors import BadInput
from harness.judging.stats import sd


@dataclass(frozen=True)
class PairedEstimate:
    """Ratio B/A = exp(mean log ratio) with a (1 - 2*alpha) t interval; ``sd`` is the sd of one unit's log ratio.

    ``unit`` is "pair" (n pairs, df n - 1) or "launch" (n launch means, df n - 1). ``p_above(t)`` is the
    one-sided p-value of H0 "ratio <= t"; ``p_below(t)`` of H0 "ratio >= t".
    """

    mean: float
    sd: float
    n: int
    alpha: float
    unit: str = "pair"
    pairs: int = 0  # pairs behind the estimate (== n when unit == "pair")

    @property
    def df(self) -> int:
        return self.n - 1

    @property
    def se(self) -> float:
        return self.sd / math.sqrt(self.n) if self.n >= 2 else float("nan")

    @property
    def ratio(self) -> float:
        return math.exp(self.mean)

    @cached_property
    def _q(self) -> float:
        return float(_sp.stdtrit(self.df, 1 - self.alpha)) if self.df >= 1 else float("nan")

    @property
    def lo(self) -> float:
        return math.exp(self.mean - self._q * self.se) if self.df >= 1 else float("nan")

    @property
    def hi(self) -> float:
        return math.exp(self.mean + self._q * self.se) if self.df >= 1 else float("nan")

    def p_above(self, t: float) -> float:
        """p-value of H0 "ratio <= t" against "ratio > t". Small means: confidently above t."""
        return self._p(self.mean - math.log(t))

    def p_below(self, t: float) -> float:
        """p-value of H0 "ratio >= t" against "ratio < t". Small means: confidently below t."""
        return self._p(math.log(t) - self.mean)

    def _p(self, margin: float) -> float:
        if self.df < 1:
            return 1.0
        if self.se == 0:
            return 0.0 if margin > 0 else 1.0
        return float(_sp.stdtr(self.df, -(margin / self.se)))  # t.sf


def paired_estimate(d: Sequence[float], alpha: float) -> PairedEstimate:
    """The pair as the unit: mean and sd of the pair log ratios ``d`` (t with n - 1 df)."""
    if not d:
        raise BadInput("paired_estimate needs at least one pair")
    return PairedEstimate(fmean(d), sd(d), len(d), alpha, "pair", len(d))


@dataclass(frozen=True)
class RankEstimate:
    """The pair as the unit, by ranks: Wilcoxon's signed-rank test and its Hodges–Lehmann estimate and interval.

    ``mean`` (kept as the name for the log-ratio estimate) is the Hodges–Lehmann estimate: the median of the
    n(n+1)/2 Walsh averages (d_i + d_j)/2, i <= j. ``lo``/``hi`` bound a (1 - 2*alpha) interval: the (k+1)-th smallest
    and largest Walsh averages, k the signed-rank critical value at ``alpha`` (normal approximation). ``p_above(t)`` is
    the one-sided signed-rank p-value of H0 "the pair log ratios are centred at or below log t" (T+ = the number of
    Walsh averages above log t, the same statistic as the sum of the ranks of the positive d - log t), so
    ``p_above(t) <= alpha`` exactly when ``lo > t``. Valid for any continuous distribution of d that is symmetric
    about its centre (the random order within a pair makes an A/A pair's log ratio symmetric); unlike the t interval,
    a few extreme pairs (a step caught by a host hiccup) widen it by little. ``sd`` is the sd this interval would have
    as a t interval: (log hi - log lo) / (2 z) x sqrt(n)."""

    walsh: tuple[float, ...]
    n: int
    alpha: float
    unit: str = "pair"

    @property
    def pairs(self) -> int:
        return self.n

    @property
    def df(self) -> int:
        return self.n - 1

    @cached_property
    def mean(self) -> float:
        return median(self.walsh)

    @cached_property
    def _k(self) -> int:
        big_n = len(self.walsh)
        sd = math.sqrt(self.n * (self.n + 1) * (2 * self.n + 1) / 24)
        return math.floor(big_n / 2 - float(_sp.ndtri(1 - self.alpha)) * sd)

    @property
    def lo(self) -> float:
        return math.exp(self.walsh[self._k]) if 0 <= self._k < len(self.walsh) else float("nan")

    @property
    def hi(self) -> float:
        return math.exp(self.walsh[len(self.walsh) - 1 - self._k]) if 0 <= self._k < len(self.walsh) else float("nan")

    @property
    def ratio(self) -> float:
        return math.exp(self.mean)

    @property
    def se(self) -> float:
        lo, hi = self.lo, self.hi
        return (
            (math.log(hi) - math.log(lo)) / (2 * float(_sp.ndtri(1 - self.alpha)))
            if lo == lo and hi == hi
            else float("nan")
        )

    @property
    def sd(self) -> float:
        return self.se * math.sqrt(self.n)

    def _p(self, above: int) -> float:
        if self.n < 2:
            return 1.0
        mu, sd = len(self.walsh) / 2, math.sqrt(self.n * (self.n + 1) * (2 * self.n + 1) / 24)
        return float(_sp.ndtr(-((above - mu) / sd)))  # norm.sf

    def p_above(self, t: float) -> float:
        """Signed-rank p-value of H0 "centre <= log t" against "centre > log t". Small means: confidently above t."""
        c = math.log(t)
        return self._p(len(self.walsh) - _bisect_right(self.walsh, c))

    def p_below(self, t: float) -> float:
        """Signed-rank p-value of H0 "centre >= log t" against "centre < log t". Small means: confidently below t."""
        c = math.log(t)
        return self._p(_bisect_left(self.walsh, c))


def rank_estimate(d: Sequence[float], alpha: float) -> RankEstimate:
    """The pair as the unit, by ranks (:class:`RankEstimate`): Wilcoxon signed-rank,
    Hodges–Lehmann estimate and interval."""
    if not d:
        raise BadInput("rank_estimate needs at least one pair")
    x = sorted(d)
    walsh = sorted((x[i] + x[j]) / 2 for i in range(len(x)) for j in range(i, len(x)))
    return RankEstimate(tuple(walsh), len(x), alpha)


def hodges_lehmann(d: Sequence[float]) -> float:
    """The Hodges–Lehmann estimate of the centre of ``d``: the median of the Walsh averages (d_i + d_j)/2, i <= j."""
    if not d:
        raise BadInput("hodges_lehmann needs at least one value")
    x = list(d)
    return median((x[i] + x[j]) / 2 for i in range(len(x)) for j in range(i, len(x)))
