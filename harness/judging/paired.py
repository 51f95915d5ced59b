"""Statistics of block-interleaved comparisons on one machine (``python -m harness interleave``). Pure; no I/O.

Design (``harness.commands.interleave`` makes the data):

* **The pair.** Two resident workers, A and B, take turns running blocks of k
  optimizer steps; a pair is one block of each, in an order drawn at random per pair (seeded). Each
  block is summarised by one number, :func:`block_metric` (the median of its step times by default, as
  a run is by the median of its steps; or the mean; the first step optionally dropped), and each pair by
  its **log ratio**
  d = log(B's block metric / A's). Whatever the machine does for longer than a pair (a slow period,
  a clock change, a noisy neighbour) cancels in d, and the random order within the pair keeps a
  systematic first/second effect out of the mean of d.
* **Test.** One-sample t on n units (launch summaries, see Launches below; or pairs, :func:`paired_estimate`):
  mean d̄, sd s, SE = s/√n, n − 1 degrees of freedom. The ratio B/A is exp(d̄) with a (1 − 2a) interval
  exp(d̄ ± t₁₋ₐ,ₙ₋₁·SE), so each end is a one-sided level-a bound; with the pair as the unit the default is
  Wilcoxon's signed-rank test and its Hodges–Lehmann interval (:func:`rank_estimate`). Practical threshold δ,
  T = 1 + δ; a = α / (planned looks).
* **Verdicts** (:class:`PairedCheck`), the same conventions as :class:`harness.judging.stats.RuntimeCheck`:

  - ``regression``: H0 "B/A ≤ T" rejected one-sided at a (equivalently: the interval's lower end is
    above T). When B is truly at most δ slower, this happens with probability at most α over all looks
    together;
  - ``improvement``: the interval's upper end is below 1 − δ (B confidently faster by more than δ);
  - ``pass``: the interval's upper end is below T (B is not slower than the threshold, confidently);
  - ``inconclusive``: anything else: the interval straddles T (or 1 − δ). More pairs narrow it.

* **Sequential looks.** The command looks at the pairs so far every m pairs (once the last launch has
  two pairs, :class:`Plan`) and stops at the first conclusive verdict or when its pairs or
  minutes are spent. α is split evenly over the planned looks (Bonferroni), so the false-alarm bound
  holds whatever the number of looks actually made.
* **Launches: the unit of replication.** The pairs are spread over launches of the worker pair (both workers
  closed and started again). A launch can bring its own offset (B's process happened to get a slower memory layout):
  on the H200 two launches of one build read x1.058 and x0.997 (docs/results/interleave-h200/), as large as the
  effect to be found. Pairs nest inside launches, so by default (``unit="launch"``) **the launch is the unit**: each
  launch is summarised by the Hodges–Lehmann estimate of its pair log ratios (the mean with ``test="t"``), and the
  verdict is a one-sample t test on the L launch summaries, L − 1 degrees of freedom (:func:`launch_estimate`). This
  is the two-stage (summary-statistic) analysis of a nested design: valid whatever the launch variance, with no
  pre-test, and its standard error carries both components, σ²_summary/L + τ²_launch/L. The per-launch
  Hodges–Lehmann estimate keeps the few wild pairs of a launch (a host hiccup) from moving its summary, which a
  launch mean does not (a pair sd of 10.7% on the H200, but 3–5% by ranks). Its cost is degrees of freedom: with
  fewer than :data:`MIN_LAUNCH_UNIT` launches it cannot conclude, so the command uses ``unit="pair"`` there.
* ``unit="pair"`` (1 or 2 launches): the pairs are pooled and judged by the pair-level test, valid only if launches
  add nothing; :func:`launch_check` screens for it at every look (a one-way ANOVA F test of the pair log ratios
  grouped by launch, at ``launch_alpha`` 0.25) and makes the launch means the unit when it fires. Such a pre-test
  costs power (it fires in a quarter of the comparisons without any launch effect, leaving 1 df) and cannot
  protect the level when launch effects are small (simulated false alarms 7–11% at the threshold with 2 launches,
  launch sd 1–3% against a pair sd of 3.5%): the reason the launch is the unit by default.

:func:`min_detectable` gives the smallest true slowdown that the regression test finds with a given
power from the measured σ (about 3.6·σ/√n for α = 0.01, power 0.9, δ = 0; exact via the noncentral t).
"""

from __future__ import annotations

import math
from bisect import bisect_left as _bisect_left
from bisect import bisect_right as _bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from statistics import fmean, median

from scipy import stats as _st

from harness.judging.stats import Verdict, fmt_ratio

METRICS = ("mean", "median", "min")
TESTS = ("rank", "t")  # of the pair unit: Wilcoxon signed-rank with Hodges–Lehmann (default), or the t test
LAUNCH_ALPHA = 0.25  # level of the launch-variance screen of unit "pair" that switches it to the launch (liberal: see the module docstring)
UNITS = ("launch", "pair")  # of replication: the launch (two-stage, the default), or the pair (pooled, launch effect screened)
MIN_LAUNCH_UNIT = 3  # fewest launches for which the command makes the launch the unit (2 launches: 1 df, a t quantile of 31.8 at 0.01)


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------
def block_metric(step_times_ms: Sequence[float], how: str = "median", drop_first: bool = False) -> float:
    """One number per block: the ``mean``, ``median`` or ``min`` of its step times, without the first step if
    ``drop_first`` (and the block has more than one). The mean counts every spike, the median ignores a minority of slow
    steps, the min all but the fastest step: it sees a slowdown only where every step of the block has it."""
    if how not in METRICS:
        raise ValueError(f"block metric must be one of {', '.join(METRICS)}, got {how!r}")
    xs = list(step_times_ms[1:] if drop_first and len(step_times_ms) > 1 else step_times_ms)
    if not xs or any(x <= 0 for x in xs):
        raise ValueError("block_metric needs positive step times")
    return fmean(xs) if how == "mean" else median(xs) if how == "median" else min(xs)


def log_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-pair log(b / a) of the pairs' block metrics."""
    if len(a) != len(b):
        raise ValueError(f"log_ratios needs as many A as B values, got {len(a)} and {len(b)}")
    return [math.log(y / x) for x, y in zip(a, b)]


def _sd(xs: Sequence[float]) -> float:
    if len(xs) < 2:
        return float("nan")
    m = fmean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


# ---------------------------------------------------------------------------------------------
# Estimates
# ---------------------------------------------------------------------------------------------
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
        return float(_st.t.ppf(1 - self.alpha, self.df)) if self.df >= 1 else float("nan")

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
        return float(_st.t.sf(margin / self.se, self.df))


def paired_estimate(d: Sequence[float], alpha: float) -> PairedEstimate:
    """The pair as the unit: mean and sd of the pair log ratios ``d`` (t with n - 1 df)."""
    if not d:
        raise ValueError("paired_estimate needs at least one pair")
    return PairedEstimate(fmean(d), _sd(d) if len(d) > 1 else float("nan"), len(d), alpha, "pair", len(d))


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
        return math.floor(big_n / 2 - float(_st.norm.ppf(1 - self.alpha)) * sd)

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
        return (math.log(hi) - math.log(lo)) / (2 * float(_st.norm.ppf(1 - self.alpha))) if lo == lo and hi == hi else float("nan")

    @property
    def sd(self) -> float:
        return self.se * math.sqrt(self.n)

    def _p(self, above: int) -> float:
        if self.n < 2:
            return 1.0
        mu, sd = len(self.walsh) / 2, math.sqrt(self.n * (self.n + 1) * (2 * self.n + 1) / 24)
        return float(_st.norm.sf((above - mu) / sd))

    def p_above(self, t: float) -> float:
        """Signed-rank p-value of H0 "centre <= log t" against "centre > log t". Small means: confidently above t."""
        c = math.log(t)
        return self._p(len(self.walsh) - _bisect_right(self.walsh, c))

    def p_below(self, t: float) -> float:
        """Signed-rank p-value of H0 "centre >= log t" against "centre < log t". Small means: confidently below t."""
        c = math.log(t)
        return self._p(_bisect_left(self.walsh, c))


def rank_estimate(d: Sequence[float], alpha: float) -> RankEstimate:
    """The pair as the unit, by ranks (:class:`RankEstimate`): Wilcoxon signed-rank, Hodges–Lehmann estimate and interval."""
    if not d:
        raise ValueError("rank_estimate needs at least one pair")
    x = sorted(d)
    walsh = sorted((x[i] + x[j]) / 2 for i in range(len(x)) for j in range(i, len(x)))
    return RankEstimate(tuple(walsh), len(x), alpha)


def hodges_lehmann(d: Sequence[float]) -> float:
    """The Hodges–Lehmann estimate of the centre of ``d``: the median of the Walsh averages (d_i + d_j)/2, i <= j."""
    if not d:
        raise ValueError("hodges_lehmann needs at least one value")
    x = list(d)
    return median((x[i] + x[j]) / 2 for i in range(len(x)) for j in range(i, len(x)))


SUMMARIES = {"mean": fmean, "hl": hodges_lehmann}


@dataclass(frozen=True)
class LaunchComponents:
    """The two variance components of launch summaries (:func:`launch_components`): ``pair_sd``, the noise of one pair
    inside a launch as the summary sees it, and ``launch_sd``, the sd of a launch's own offset (0 when the summaries vary
    no more than their pairs make them)."""

    pair_sd: float
    launch_sd: float
    summary: str
    launch_sd_upper: float = float("nan")
    level: float = 0.9


PLAN_LEVEL = 0.9  # one-sided level of the launch sd's upper bound that a plan is made for


def launch_components(groups: Sequence[Sequence[float]], summary: str = "hl", level: float = PLAN_LEVEL) -> LaunchComponents | None:
    """Method-of-moments split of the launch summaries' variance: var(summaries) = launch_sd² + pair_sd² x mean(1/m_i).

    The within-launch residuals (each launch's log ratios minus its own summary, pooled) are scaled by sqrt(m / (m - 1))
    first: a launch of m pairs centred on itself keeps only (m - 1)/m of their variance, a half at 2 pairs. Without that,
    19 launches of 2 pairs with no launch effect read a launch sd of 2.8% at a pair sd of 7% (mean of 300 simulated runs;
    1.0% with it: docs/results/interleave-h200/session14/short_launches.txt),
    and session 14's 20-launch H200 run of 2-3 pairs each read 5.2%.

    ``launch_sd_upper`` is a one-sided ``level`` upper bound: the summaries' variance at its chi-square bound on L - 1 df,
    less the same pair part. A plan made for it (:func:`launch_plan`) does not bet on launches that a few of them could
    not tell apart: planning for a launch sd that is absent costs a few tenths of a point of MDS, planning for none where
    there is one costs far more (docs/results/interleave-h200/session13/, docs/results/interleave-cpu/plan-s13/).

    ``pair_sd`` with ``summary`` "hl": the sd a t interval as wide as the Hodges–Lehmann interval of the scaled residuals
    would have, so heavy-tailed pairs count as the HL summary counts them (a resampled small-launch HL variance was tried
    and dropped: one pair of outliers in a 2-pair launch of the CPU runner then outweighed every other launch); with
    "mean": the pooled within-launch sd. None below 2 launches with 2 pairs."""
    gs = [list(g) for g in groups if len(g) >= 2]
    if len(gs) < 2 or summary not in SUMMARIES:
        return None
    centre = [SUMMARIES[summary](g) for g in gs]
    resid = launch_residuals(gs, summary)
    pair_sd = rank_estimate(resid, 0.05).sd if summary == "hl" else math.sqrt(sum(r * r for r in resid) / len(resid))
    var, part, df = _sd(centre) ** 2, pair_sd ** 2 * fmean([1 / len(g) for g in gs]), len(gs) - 1
    upper = var * df / float(_st.chi2.ppf(1 - level, df)) - part
    return LaunchComponents(pair_sd, math.sqrt(max(var - part, 0.0)), summary, math.sqrt(max(upper, 0.0)), level)


def launch_residuals(groups: Sequence[Sequence[float]], summary: str = "hl") -> list[float]:
    """The pair log ratios less their own launch's summary, pooled over the launches of 2 or more pairs, each scaled by
    sqrt(m / (m - 1)) (a launch of m pairs centred on itself keeps only (m - 1)/m of their variance): the pairs' noise
    with the launch effects taken out, as :func:`launch_components` measures it."""
    out = []
    for g in groups:
        if len(g) >= 2:
            c = SUMMARIES[summary](list(g))
            out += [(x - c) * math.sqrt(len(g) / (len(g) - 1)) for x in g]
    return out


def launch_estimate(groups: Sequence[Sequence[float]], alpha: float, summary: str = "mean") -> PairedEstimate:
    """The launch as the unit: each launch contributes one summary of its pair log ratios (``mean``, or ``hl``: the
    Hodges–Lehmann estimate); t with L - 1 df over the L summaries. Valid whatever the launch-to-launch variance; wide
    when L is small."""
    if summary not in SUMMARIES:
        raise ValueError(f"launch summary must be one of {', '.join(SUMMARIES)}, got {summary!r}")
    means = [SUMMARIES[summary](g) for g in groups if len(g)]
    if len(means) < 1:
        raise ValueError("launch_estimate needs at least one launch with pairs")
    return PairedEstimate(fmean(means), _sd(means) if len(means) > 1 else float("nan"), len(means), alpha, "launch",
                          sum(len(g) for g in groups))


@dataclass(frozen=True)
class LaunchCheck:
    """One-way ANOVA of pair log ratios grouped by launch. ``p`` small means: launches differ more than the pairs
    inside them allow (the launch adds variance). ``sigma_launch`` is the method-of-moments sd of the launch effect
    (0 when the launch means vary less than chance would make them); ``sigma_pair`` the pooled within-launch sd."""

    f: float
    df_between: int
    df_within: int
    p: float
    sigma_pair: float
    sigma_launch: float
    sizes: tuple[int, ...]
    means: tuple[float, ...]

    def differ(self, level: float = LAUNCH_ALPHA) -> bool:
        return self.p < level

    def line(self) -> str:
        ratios = ", ".join(f"x{math.exp(m):.4f}" for m in self.means)
        return (f"launches: {len(self.sizes)} ({'+'.join(map(str, self.sizes))} pairs), launch means {ratios}; "
                f"F({self.df_between}, {self.df_within}) = {self.f:.2f}, p = {self.p:.3g}; "
                f"launch sd {self.sigma_launch:.2%} vs pair sd {self.sigma_pair:.2%}")


def launch_check(groups: Sequence[Sequence[float]]) -> LaunchCheck | None:
    """F test of H0 "no launch effect" on the pair log ratios grouped by launch; None below 2 launches or when no
    launch has two pairs (no within-launch variance to compare against)."""
    gs = [list(g) for g in groups if len(g)]
    n = sum(map(len, gs))
    k = len(gs)
    if k < 2 or n - k < 1:
        return None
    grand = fmean([x for g in gs for x in g])
    means = [fmean(g) for g in gs]
    ssb = sum(len(g) * (m - grand) ** 2 for g, m in zip(gs, means))
    ssw = sum((x - m) ** 2 for g, m in zip(gs, means) for x in g)
    dfb, dfw = k - 1, n - k
    msb, msw = ssb / dfb, ssw / dfw
    if msw == 0:
        f, p = (math.inf, 0.0) if msb > 0 else (float("nan"), 1.0)
    else:
        f = msb / msw
        p = float(_st.f.sf(f, dfb, dfw))
    n0 = (n - sum(len(g) ** 2 for g in gs) / n) / dfb
    var_launch = max(0.0, (msb - msw) / n0)
    return LaunchCheck(f, dfb, dfw, p, math.sqrt(msw), math.sqrt(var_launch), tuple(map(len, gs)), tuple(means))


# ---------------------------------------------------------------------------------------------
# The plan: launches and looks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """``pairs`` pairs over ``launches`` consecutive launches of equal size (launch j serves pairs
    round((j-1)·N/L) .. round(j·N/L) - 1), with a look every ``look_every`` pairs once the last launch has at
    least two pairs, and always one at the end. ``looks`` are the pair counts of the planned looks.

    No look is made before every launch has contributed: an early look over 2 or 3 launches can neither see
    a launch effect nor afford the launch as its unit (simulated: 9% false alarms at the threshold with a
    launch sd of 2%, 6 launches planned, looks from the second launch on)."""

    pairs: int
    launches: int = 2
    look_every: int | None = None

    def __post_init__(self):
        if self.launches < 1:
            raise ValueError(f"--launches must be at least 1, got {self.launches}")
        if self.pairs < 2 * self.launches:
            raise ValueError(f"--pairs {self.pairs} is too few for {self.launches} launches: every launch needs at least 2 pairs "
                             f"(pass --pairs {2 * self.launches} or more)")
        if self.look_every is not None and self.look_every < 1:
            raise ValueError(f"--look-every must be at least 1, got {self.look_every}")

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """0-based index of the first pair of each launch."""
        return tuple(round(j * self.pairs / self.launches) for j in range(self.launches))

    def launch_of(self, i: int) -> int:
        """1-based launch of 0-based pair ``i``."""
        return sum(1 for s in self.starts if s <= i)

    @cached_property
    def looks(self) -> tuple[int, ...]:
        first = self.starts[-1] + 2
        m = self.look_every or self.pairs
        out = [n for n in range(m, self.pairs + 1, m) if n >= first]
        if not out or out[-1] != self.pairs:
            out.append(self.pairs)
        return tuple(out)


# ---------------------------------------------------------------------------------------------
# Verdict
# ---------------------------------------------------------------------------------------------
CONCLUSIVE = ("regression", "pass", "improvement")


@dataclass(frozen=True)
class PairedCheck:
    """B against A from pair log ratios grouped by launch; see the module docstring for what each outcome means.

    ``alpha`` is the family-wise false-alarm rate over all ``looks``; each look tests at ``alpha / looks``.
    """

    alpha: float = 0.05
    threshold: float = 0.02
    looks: int = 1
    launch_alpha: float = LAUNCH_ALPHA
    test: str = "rank"
    unit: str = "launch"

    def __post_init__(self):
        if self.test not in TESTS:
            raise ValueError(f"--test must be one of {', '.join(TESTS)}, got {self.test!r}")
        if self.unit not in UNITS:
            raise ValueError(f"--unit must be one of {', '.join(UNITS)}, got {self.unit!r}")

    @property
    def summary(self) -> str:
        """Of each launch, when the launch is the unit: Hodges–Lehmann under the rank test, the mean under t."""
        return "hl" if self.test == "rank" else "mean"

    @property
    def per_look(self) -> float:
        return self.alpha / self.looks

    def estimate(self, groups: Sequence[Sequence[float]]) -> tuple[PairedEstimate | RankEstimate, LaunchCheck | None]:
        """The estimate the verdict uses and the launch check: unit "launch", t over the launch summaries; unit "pair",
        the pair-level test (ranks or t), or the launch means when the screen finds that launches differ."""
        lc = launch_check(groups)
        if self.unit == "launch":
            return launch_estimate(groups, self.per_look, self.summary), lc
        if lc is not None and lc.differ(self.launch_alpha):
            return launch_estimate(groups, self.per_look), lc
        d = [x for g in groups for x in g]
        return (rank_estimate(d, self.per_look) if self.test == "rank" else paired_estimate(d, self.per_look)), lc

    def decide(self, groups: Sequence[Sequence[float]], case: str = "B/A", look: int | None = None) -> Verdict:
        """``groups``: per launch, the log ratios log(B/A) of its pairs, in order."""
        e, lc = self.estimate(groups)
        t_up = 1 + self.threshold
        a = self.per_look
        pair_sd = _sd([x for g in groups for x in g])
        details = {"ratio": e.ratio, "lo": e.lo, "hi": e.hi, "p_regression": e.p_above(t_up), "alpha": a, "alpha_total": self.alpha,
                   "looks": self.looks, "look": look, "threshold": self.threshold, "pairs": e.pairs, "unit": e.unit, "n_units": e.n,
                   "df": e.df, "sigma_pair": pair_sd, "mean_log_ratio": e.mean, "se": e.se, "sd": e.sd,
                   "test": "signed-rank" if isinstance(e, RankEstimate) else "t", "unit_rule": self.unit,
                   "launch_summary": self.summary if self.unit == "launch" else "mean" if e.unit == "launch" else None,
                   "launch_check": None if lc is None else {"f": lc.f, "df_between": lc.df_between, "df_within": lc.df_within, "p": lc.p,
                                                            "sigma_launch": lc.sigma_launch, "sigma_pair": lc.sigma_pair, "sizes": list(lc.sizes),
                                                            "ratios": [math.exp(m) for m in lc.means]},
                   "correction": f"alpha {self.alpha:g} split over {self.looks} planned look(s)" if self.looks > 1 else "one look"}
        head = f"B/A {fmt_ratio(e.ratio, e.lo, e.hi)} over {e.pairs} pairs, threshold +{self.threshold:.1%}"
        if e.unit == "launch" and self.unit == "launch":
            head += f" (unit: launch, t over {e.n} launch {'Hodges-Lehmann estimates' if self.summary == 'hl' else 'means'})"
        elif e.unit == "launch":
            head += f" (unit: launch, {e.n} launches: they differ, F test p = {lc.p:.2g})"
        if e.df < 1:
            need = "2 launches with pairs" if e.unit == "launch" else "2 pairs"
            return Verdict("runtime", case, "inconclusive", f"inconclusive: {head}: needs at least {need}", details)
        if e.p_above(t_up) <= a:
            return Verdict("runtime", case, "regression", f"REGRESSION: {head} (p={e.p_above(t_up):.2g}, alpha {a:.3g} per look)", details)
        if e.hi < 1 - self.threshold:
            return Verdict("runtime", case, "improvement", f"improvement: {head}", details)
        if e.hi < t_up:
            return Verdict("runtime", case, "pass", f"pass: {head}", details)
        hint = "; more launches narrow it" if e.unit == "launch" else "; more pairs narrow it"
        return Verdict("runtime", case, "inconclusive", f"inconclusive: {head}; the interval straddles +{self.threshold:.1%}{hint}", details)


# ---------------------------------------------------------------------------------------------
# Sensitivity
# ---------------------------------------------------------------------------------------------
def power(true_ratio: float, sigma: float, n: int, alpha: float, threshold: float = 0.0) -> float:
    """Probability that the one-sided t test on n pairs (sd ``sigma`` of one pair's log ratio) rejects H0
    "ratio <= 1 + threshold" at ``alpha`` when the true ratio is ``true_ratio``."""
    if n < 2 or sigma <= 0:
        return float("nan")
    ncp = (math.log(true_ratio) - math.log(1 + threshold)) * math.sqrt(n) / sigma
    return float(_st.nct.sf(_st.t.ppf(1 - alpha, n - 1), n - 1, ncp))


def min_detectable(sigma: float, n: int, alpha: float = 0.01, target: float = 0.9, threshold: float = 0.0) -> float:
    """Smallest true slowdown (a fraction: 0.03 is 3%) that :func:`power` finds with probability ``target``.

    With ``threshold`` 0 this is the resolution of n pairs: about (z₁₋α + z_target)·σ/√n, 3.6·σ/√n at α 0.01
    and power 0.9, a little more at small n (the t distribution)."""
    if n < 2 or not sigma > 0:
        return float("inf")
    df = n - 1
    q = float(_st.t.ppf(1 - alpha, df))
    lo, hi = 0.0, 1.0
    while _st.nct.sf(q, df, hi) < target:
        hi *= 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if _st.nct.sf(q, df, mid) >= target:
            hi = mid
        else:
            lo = mid
    return (1 + threshold) * math.exp(hi * sigma / math.sqrt(n)) - 1


def pairs_needed(sigma: float, slowdown: float, alpha: float = 0.01, target: float = 0.9, threshold: float = 0.0) -> int | None:
    """Fewest pairs for which :func:`min_detectable` is at most ``slowdown``; None when that needs more than 100,000."""
    if slowdown <= threshold or not sigma > 0:
        return None
    n = 2
    while n <= 100_000:
        if min_detectable(sigma, n, alpha, target, threshold) <= slowdown:
            return n
        n = n + 1 if n < 64 else int(n * 1.05) + 1
    return None


@dataclass(frozen=True)
class LaunchPlan:
    """How to spend a budget on launches and pairs when the launch is the unit (:func:`launch_plan`): ``launches`` of
    ``pairs_per_launch`` pairs each, whose launch summaries have the sd ``unit_sd``; ``mds`` is the slowdown the t test over
    them finds with the asked power at the asked alpha (:func:`min_detectable` of ``unit_sd`` over ``launches``). A plan
    made for a range of launch sds also gives ``mds_hi``, its MDS at the range's top, and ``regret``, the most MDS (a
    fraction) it gives away anywhere in the range against the best plan for that launch sd."""

    launches: int
    pairs_per_launch: int
    unit_sd: float
    mds: float
    mds_hi: float = float("nan")
    regret: float = 0.0


PLAN_MIN_PAIRS = 5  # fewest pairs per launch a plan proposes: the HL of fewer is nearly their mean, and its noise stops scaling as 1/m
PLAN_GRID = 5  # launch sds a plan for a range weighs, evenly spaced from its bottom to its top


def plans_within(budget_s: float, first_s: float, launch_s: float, pair_s: float, max_launches: int, min_pairs: int,
           hide_s: float = 0.0) -> list[tuple[int, int]]:
    """(L, m) for every launch count from :data:`MIN_LAUNCH_UNIT` whose launches the budget gives ``min_pairs`` pairs or more.
    A later launch costs ``launch_s`` + max(0, ``hide_s`` - m ``pair_s``): it also waits for whatever of its pre-start the
    launch before it, m pairs long, did not hide. So budget = first + (L - 1)(launch + max(0, hide - m pair)) + L m pair,
    solved for m on each side of m pair = hide."""
    out = []
    for n in range(MIN_LAUNCH_UNIT, max_launches + 1):
        m_c = (budget_s - first_s - (n - 1) * launch_s) / (n * pair_s)
        if m_c * pair_s < hide_s:  # the launches are too short to hide the pre-start: each waits for the rest of it
            m_c = (budget_s - first_s - (n - 1) * (launch_s + hide_s)) / pair_s
        m = math.floor(m_c)
        if m < min_pairs:
            break
        out.append((n, m))
    return out


def launch_plan(budget_s: float, first_s: float, launch_s: float, pair_s: float, pair_sd: float, launch_sd: float,
                alpha: float = 0.01, target: float = 0.9, max_launches: int = 64, min_pairs: int = PLAN_MIN_PAIRS,
                launch_sd_hi: float | None = None, hide_s: float = 0.0) -> LaunchPlan | None:
    """The number of launches that minimises the minimum detectable slowdown of the launch unit within ``budget_s``.

    The model is the two-stage one of the verdict: a launch costs ``first_s`` (the first) or ``launch_s`` (each later one:
    start-up, warm-up, stopping), a pair ``pair_s``; a launch summary of m pairs has the variance ``launch_sd``² +
    ``pair_sd``²/m (the launch's own offset plus its pairs' noise); the t test over L summaries has L - 1 df. For each L
    from :data:`MIN_LAUNCH_UNIT` the budget gives m = (budget - first - (L - 1) launch) / (L pair), and the L with the
    smallest MDS wins, among plans of at least ``min_pairs`` pairs per launch. Its continuous form is Cochran's optimum for
    two-stage sampling, m* = sqrt(launch_s / pair_s) x pair_sd / launch_sd pairs per launch: a costly launch or a small
    launch sd asks for long launches, a cheap launch or a large launch sd for many short ones.

    With ``launch_sd_hi`` above ``launch_sd`` the launch sd is known only to lie between them (an estimate and its upper
    bound): the plan is then the one of least regret, the L whose MDS falls furthest behind the best L for a launch sd
    of the range by the least (:data:`PLAN_GRID` launch sds from bottom to top). Betting on the estimate alone loses much
    when the next run's launches differ more; betting on the bound alone gives away longer launches that a run without a
    launch effect would have used. ``mds`` is at ``launch_sd``, ``mds_hi`` at ``launch_sd_hi``.

    None when the budget holds no 3 launches of ``min_pairs`` pairs, or the sds are not positive (``launch_sd`` 0 is
    allowed: then fewer, longer launches only lose degrees of freedom)."""
    if not pair_sd > 0 or launch_sd < 0 or pair_s <= 0:
        return None
    plans = plans_within(budget_s, first_s, launch_s, pair_s, max_launches, min_pairs, hide_s)
    if not plans:
        return None

    def mds(n: int, m: int, tau: float) -> float:
        return min_detectable(math.sqrt(tau ** 2 + pair_sd ** 2 / m), n, alpha, target)

    hi = launch_sd_hi if launch_sd_hi is not None and launch_sd_hi > launch_sd else launch_sd
    taus = [launch_sd + (hi - launch_sd) * i / (PLAN_GRID - 1) for i in range(PLAN_GRID)] if hi > launch_sd else [launch_sd]
    table = [[mds(n, m, tau) for tau in taus] for n, m in plans]
    best = [min(row[j] for row in table) for j in range(len(taus))]
    regret = [max(row[j] - best[j] for j in range(len(taus))) for row in table]
    k = min(range(len(plans)), key=lambda i: (regret[i], table[i][0]))
    n, m = plans[k]
    return LaunchPlan(n, m, math.sqrt(launch_sd ** 2 + pair_sd ** 2 / m), table[k][0], table[k][-1], regret[k])


# ---------------------------------------------------------------------------------------------
# Diagnostics: resume penalty, host canary
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ResumePenalty:
    """First step of a block against the median of its other steps, as a geometric-mean ratio over blocks with a
    95% t interval. Above 1: resuming costs time (caches refilled after the other side ran); near 1: no penalty."""

    ratio: float
    lo: float
    hi: float
    blocks: int

    def line(self) -> str:
        return f"x{self.ratio:.3f} [{self.lo:.3f}, {self.hi:.3f}] over {self.blocks} blocks"


def resume_penalty(blocks: Sequence[Sequence[float]]) -> ResumePenalty | None:
    """From the step times of blocks of at least 2 steps; None below 2 such blocks."""
    d = [math.log(b[0] / median(b[1:])) for b in blocks if len(b) >= 2]
    if len(d) < 2:
        return None
    e = paired_estimate(d, 0.025)
    return ResumePenalty(e.ratio, e.lo, e.hi, len(d))


def correlation(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation; nan below 3 points or without variation."""
    if len(x) != len(y) or len(x) < 3:
        return float("nan")
    mx, my = fmean(x), fmean(y)
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / math.sqrt(sxx * syy) if sxx > 0 and syy > 0 else float("nan")


@dataclass(frozen=True)
class CanaryCovariate:
    """The host canary as a covariate of the pair log ratio d, with c = log(canary of B's block / canary of A's).

    Regression d = mu + b·c + e. ``adjusted`` is the intercept mu (d at equal canaries) with its own standard
    error (``adjusted_se``, n - 2 df): valid when both sides run the same interpreter, so that the canary's true
    speed is the same on both (E[c] = 0), and only worth using when ``reduction`` (1 - residual variance /
    variance of d) is clearly positive. The verdict does not use it; the report shows both.
    """

    corr: float
    slope: float
    sigma_plain: float
    sigma_adjusted: float
    reduction: float
    plain: float
    plain_se: float
    adjusted: float
    adjusted_se: float
    n: int


def canary_covariate(d: Sequence[float], c: Sequence[float]) -> CanaryCovariate | None:
    """None below 4 pairs or without canary variation."""
    n = len(d)
    if n != len(c) or n < 4:
        return None
    md, mc = fmean(d), fmean(c)
    sxx = sum((x - mc) ** 2 for x in c)
    if sxx <= 0:
        return None
    b = sum((x - mc) * (y - md) for x, y in zip(c, d)) / sxx
    resid = [y - md - b * (x - mc) for x, y in zip(c, d)]
    s_e = math.sqrt(sum(r * r for r in resid) / (n - 2))
    s_d = _sd(d)
    mu = md - b * mc
    se_mu = s_e * math.sqrt(1 / n + mc * mc / sxx)
    return CanaryCovariate(correlation(c, d), b, s_d, s_e, 1 - s_e**2 / s_d**2 if s_d > 0 else float("nan"), md, s_d / math.sqrt(n), mu, se_mu, n)


@dataclass(frozen=True)
class PairRecord:
    """What the statistics need of one pair (built from two blocks of ``blocks.jsonl``)."""

    pair: int
    launch: int
    a: float  # block metric of A
    b: float
    canary_a: float | None = None
    canary_b: float | None = None
    first: str = "a"
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def d(self) -> float:
        return math.log(self.b / self.a)
