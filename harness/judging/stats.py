"""Statistics for verdicts. Pure functions and small frozen value objects; nothing here does I/O.

Unit of replication: the run (a fresh process). Each run is summarised by one number, its
steady-state median step time (warm-up steps skipped), or its ``train_runtime`` for imported
baselines that only published that. Within-run step noise (heavy-tailed: GC, allocator, clock
changes) is absorbed by the per-run median; between-run noise is what the tests model.

Runtime test: Welch's t on log run-metrics, giving a (1 - 2*alpha) interval for the ratio of geometric
means current/baseline. Against a practical threshold T = 1 + delta:

* regression: H0 "ratio <= T" rejected one-sided at alpha, Holm-corrected over the session's runtime
  comparisons (so the family-wise false-alarm rate over slowdowns of at most delta is <= alpha);
* pass: the interval's upper end is below T;
* improvement: the interval's upper end is below 1 - delta (a hint to update the baseline);
* inconclusive: anything else (the interval straddles T); more repeats are run if allowed.

Machines: when a baseline was gathered on k >= 2 machines (boot ids, or results dirs for older runs),
runs of one machine share its offset, and a session on another machine brings its own. Then the
machine is the unit of replication (:func:`machine_ratio`, a t prediction interval from the spread of
the k machine means, k - 1 degrees of freedom): correct whatever the machine-to-machine variance,
at the price of power while k is small. A baseline from one machine keeps the run as the unit, and
its verdicts assume the session runs on that machine.

Why Welch on logs and not Mann-Whitney: at 5 vs 5 runs the exact Mann-Whitney one-sided p cannot go
below 1/252 and moves in coarse steps, so after a Holm correction it often cannot reach alpha at all
(see :func:`mannwhitney_min_p`); the t interval is continuous, exact for log-normal run noise, and
an outlying run widens it (towards inconclusive) rather than faking a regression.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from statistics import fmean, median, stdev

from harness.errors import BadInput
from harness.judging.thresholds import ALPHA, MEMORY_ABS_MIB, MEMORY_REL

# scipy is imported in the functions that use it: importing it costs seconds, and the commands that only read or write
# files (``store add``, every ``--help``) import this module through the judge without computing a t quantile


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    """Run-level values of one metric, lazily summarised."""

    values: tuple[float, ...]

    @cached_property
    def median(self) -> float:
        return median(self.values)

    @cached_property
    def min(self) -> float:
        return min(self.values)

    @cached_property
    def max(self) -> float:
        return max(self.values)

    @cached_property
    def cv(self) -> float | None:
        """Coefficient of variation (sample sd / mean); None below two values."""
        if len(self.values) < 2:
            return None
        m = fmean(self.values)
        return stdev(self.values) / m if m else None

    def __len__(self) -> int:
        return len(self.values)


def sd(xs: Sequence[float], short: float | None = math.nan) -> float | None:
    """The sample standard deviation of ``xs`` (n - 1 in the denominator), the spread of log ratios that the t tests
    use. Below two values it is ``short``: nan by default, so that it flows through arithmetic where a verdict would
    need two units; None where it is reported (a report's JSON has no nan)."""
    if len(xs) < 2:
        return short
    m = fmean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1))


# ---------------------------------------------------------------------------------------------
# Ratio estimate
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RatioEstimate:
    """Ratio current/baseline of geometric means with a (1 - 2*alpha) Welch interval on the log scale.

    ``p_above(t)`` is the one-sided p-value of H0 "ratio <= t"; ``p_below(t)`` of H0 "ratio >= t".
    """

    log_diff: float
    se: float
    df: float
    alpha: float
    n_base: int
    n_cur: int
    unit: str = "run"  # the unit of replication: "run", or "machine" (see machine_ratio)
    machines: int = 1  # baseline machines (k) when unit == "machine"

    @property
    def ratio(self) -> float:
        return math.exp(self.log_diff)

    @cached_property
    def _q(self) -> float:
        from scipy import special
        from scipy import stats as _st

        # special.stdtrit(df, q) is what scipy.stats.t.ppf(q, df) computes, without its per-call argument handling
        return (
            float(special.stdtrit(self.df, 1 - self.alpha))
            if self.df > 0 and math.isfinite(self.df)
            else float(_st.norm.ppf(1 - self.alpha))
        )

    @property
    def lo(self) -> float:
        return math.exp(self.log_diff - self._q * self.se) if self.se > 0 or self.df > 0 else float("nan")

    @property
    def hi(self) -> float:
        return math.exp(self.log_diff + self._q * self.se) if self.se > 0 or self.df > 0 else float("nan")

    def p_above(self, t: float) -> float:
        """p-value of H0 "ratio <= t" against "ratio > t". Small means: confidently above t."""
        return self._p(self.log_diff - math.log(t))

    def p_below(self, t: float) -> float:
        """p-value of H0 "ratio >= t" against "ratio < t". Small means: confidently below t."""
        return self._p(math.log(t) - self.log_diff)

    def _p(self, margin: float) -> float:
        if self.df <= 0:
            return 1.0
        if self.se == 0:
            return 0.0 if margin > 0 else 1.0
        from scipy import special

        return float(special.stdtr(self.df, -margin / self.se))  # scipy.stats.t.sf(margin / se, df), called directly


def sample_variance(xs: Sequence[float]) -> float:
    """The sample variance (n - 1 in the denominator) as scipy.stats.tvar computes it, the mean squared deviation
    times n / (n - 1), to the last bit; without its per-call array handling, which costs far more than the sum on a
    handful of runs."""
    import numpy as np

    d = np.asarray(xs, dtype=float)
    d = d - np.mean(d)
    return float(np.mean(d * d) * (len(xs) / (len(xs) - 1)))


def log_ratio(base: Sequence[float], cur: Sequence[float], alpha: float) -> RatioEstimate:
    """Welch's t on log values. With fewer than two values on a side the interval is undefined (df = 0)."""
    if min(len(base), len(cur)) < 1 or any(v <= 0 for v in (*base, *cur)):
        raise BadInput("log_ratio needs positive values on both sides")
    lb, lc = [math.log(v) for v in base], [math.log(v) for v in cur]
    d = fmean(lc) - fmean(lb)
    if len(lb) < 2 or len(lc) < 2:
        return RatioEstimate(d, 0.0, 0.0, alpha, len(lb), len(lc))
    vb = sample_variance(lb) / len(lb)
    vc = sample_variance(lc) / len(lc)
    se = math.sqrt(vb + vc)
    if se == 0:
        return RatioEstimate(d, 0.0, math.inf, alpha, len(lb), len(lc))
    df = (vb + vc) ** 2 / (vb**2 / (len(lb) - 1) + vc**2 / (len(lc) - 1))
    return RatioEstimate(d, se, df, alpha, len(lb), len(lc))


def machine_ratio(groups: Sequence[Sequence[float]], cur: Sequence[float], alpha: float) -> RatioEstimate:
    """Ratio current/baseline with the machine as the unit, for a baseline gathered on k >= 2 machines.

    Each baseline machine contributes the mean of its log values; the current session is one more
    machine, its mean sharing the variance of a machine mean, which the spread s of the k baseline
    means estimates. So SE = s * sqrt(1 + 1/k) with k - 1 degrees of freedom: a t prediction interval,
    valid whatever the machine-to-machine variance. Raises ValueError for fewer than two machines.
    """
    groups = [g for g in groups if len(g)]
    if len(groups) < 2 or not cur or any(v <= 0 for g in (*groups, cur) for v in g):
        raise BadInput("machine_ratio needs positive values from at least two baseline machines and the session")
    means = [fmean(math.log(v) for v in g) for g in groups]
    k = len(means)
    d = fmean(math.log(v) for v in cur) - fmean(means)
    from scipy import stats as _st

    se = _st.tstd(means) * math.sqrt(1 + 1 / k)
    return RatioEstimate(d, se, k - 1 if se > 0 else math.inf, alpha, sum(map(len, groups)), len(cur), "machine", k)


def smallest_flagged(groups: Sequence[Sequence[float]], alpha: float, threshold: float) -> float:
    """The smallest ratio estimate that :func:`machine_ratio` against these baseline ``groups``
    can call a regression at ``alpha``.

    It depends on the baseline alone (the spread of its machine means), not on the session's runs, so a
    session can say before it starts what its runtime verdicts can and cannot detect.
    """
    from scipy import stats as _st

    e = machine_ratio(groups, [1.0], alpha)
    return (
        (1 + threshold) * math.exp(float(_st.t.ppf(1 - alpha, e.df)) * e.se) if math.isfinite(e.df) else 1 + threshold
    )


def estimate(base: Sequence[float] | Sequence[Sequence[float]], cur: Sequence[float], alpha: float) -> RatioEstimate:
    """The runtime estimate: :func:`machine_ratio` when ``base`` is grouped by machine over >= 2 machines,
    else Welch."""
    if base and isinstance(base[0], (list, tuple)):
        groups = [g for g in base if len(g)]
        if len(groups) >= 2:
            return machine_ratio(groups, cur, alpha)
        base = [v for g in groups for v in g]
    return log_ratio(base, cur, alpha)


def holm(pvalues: Sequence[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure. ``True`` at i means H0_i is rejected with family-wise error <= alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    reject = [False] * len(pvalues)
    m = len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] <= alpha / (m - rank):
            reject[i] = True
        else:
            break
    return reject


def mannwhitney_min_p(n1: int, n2: int, alternative: str = "two-sided") -> float:
    """Smallest p-value the exact Mann-Whitney U test can give at n1 vs n2 (1/C(n1+n2, n1), doubled if two-sided)."""
    p = 1.0 / math.comb(n1 + n2, n1)
    return min(1.0, 2 * p if alternative == "two-sided" else p)


def reachable(alpha: float, n_base: int, n_cur: int) -> bool:
    """True when the runtime test can reject at ``alpha`` with these sample sizes (Welch needs >= 2 runs per side).

    False means: no data, however extreme, can give a regression verdict; run more repeats.
    """
    return n_base >= 2 and n_cur >= 2 and alpha > 0


# ---------------------------------------------------------------------------------------------
# Verdicts
# ---------------------------------------------------------------------------------------------
PASSING = ("pass", "improvement", "tie", "skip", "inconclusive")


@dataclass(frozen=True)
class Verdict:
    """One check's verdict on one case, as the judging makes it: the suite's checks (runtime, memory, ordering,
    equivalence, work) and each look of an interleaved comparison (:meth:`harness.judging.paired.PairedCheck.decide`),
    every figure in ``details``; a suite report writes its kind, case, outcome and message. What an interleaved
    comparison reports is its one verdict as :class:`harness.results.verdict.Verdict`, whose figures are typed fields
    (:func:`harness.judging.blocks.comparison_verdict`)."""

    kind: str  # runtime | ordering | memory | equivalence
    case: str  # "workload-1x4" or "workload"
    outcome: str  # pass | improvement | regression | inconclusive | fail | tie | skip
    message: str
    details: dict = field(default_factory=dict, compare=False)

    @property
    def failed(self) -> bool:
        """True for a regression or a failed check; inconclusive is not a failure unless the session says so."""
        return self.outcome not in PASSING


def fmt_ratio(r: float, lo: float, hi: float) -> str:
    def pct(x):
        return f"{(x - 1) * 100:+.1f}%"

    return f"x{r:.3f} ({pct(r)}), {'CI' if math.isfinite(lo) else 'no CI'} [{lo:.3f}, {hi:.3f}]"


@dataclass(frozen=True)
class RuntimeCheck:
    """Runtime regression strategy: Welch ratio per case, Holm over the cases of one session."""

    alpha: float = ALPHA
    threshold: float = 0.05  # practical threshold delta: regression means slower than 1 + delta

    def decide(
        self,
        cases: dict[str, tuple[Sequence[float], Sequence[float]]],
        metric: dict[str, str] | None = None,
        looks: int = 1,
    ) -> dict[str, Verdict]:
        """``cases``: case -> (baseline values, or lists of them per machine; current values).

        ``looks``: planned sequential looks (alpha is split over them).
        """
        a = self.alpha / looks
        t_up = 1 + self.threshold
        est = {c: estimate(b, v, a) for c, (b, v) in cases.items()}
        names = list(est)
        rejected = dict(zip(names, holm([est[c].p_above(t_up) for c in names], a)))
        out = {}
        for c in names:
            e = est[c]
            what = (metric or {}).get(c, "steady-state median step time")
            details = {
                "ratio": e.ratio,
                "lo": e.lo,
                "hi": e.hi,
                "p_regression": e.p_above(t_up),
                "alpha": a,
                "threshold": self.threshold,
                "n_base": e.n_base,
                "n_cur": e.n_cur,
                "metric": what,
                "unit": e.unit,
                "machines": e.machines,
                "correction": f"Holm over {len(names)} runtime comparisons"
                + (f", alpha/{looks} per look" if looks > 1 else ""),
            }
            head = f"{what} {fmt_ratio(e.ratio, e.lo, e.hi)} vs baseline, threshold +{self.threshold:.0%}"
            if e.unit == "machine":
                head += f" (unit: machine; the baseline spans {e.machines} machines)"
            if e.unit == "run" and not reachable(a, e.n_base, e.n_cur):
                out[c] = Verdict(
                    "runtime",
                    c,
                    "inconclusive",
                    f"{head}: cannot reach alpha={a:g} with {e.n_base} baseline "
                    f"and {e.n_cur} current runs (need >= 2 each); run more repeats",
                    details,
                )
            elif rejected[c]:
                out[c] = Verdict(
                    "runtime",
                    c,
                    "regression",
                    f"REGRESSION: {head} (p={e.p_above(t_up):.2g}, {details['correction']})",
                    details,
                )
            elif e.hi < 1 - self.threshold:
                out[c] = Verdict(
                    "runtime",
                    c,
                    "improvement",
                    f"improvement: {head}; if intended, record a new baseline with --update-baselines",
                    details,
                )
            elif e.hi < t_up:
                out[c] = Verdict("runtime", c, "pass", f"pass: {head}", details)
            else:
                hint = "; more runs from other machines in the baseline narrow it" if e.unit == "machine" else ""
                out[c] = Verdict(
                    "runtime",
                    c,
                    "inconclusive",
                    f"inconclusive: {head}; the interval straddles +{self.threshold:.0%}{hint}",
                    details,
                )
        return out


@dataclass(frozen=True)
class MemoryCheck:
    """Peak reserved memory may not grow by more than max(rel, abs_bytes) over the baseline median: a change counts
    only where it exceeds both ``rel`` of the baseline and ``abs_bytes`` (:meth:`allowed`; :meth:`changed` applies the
    same rule to a move either way, which the census diff uses)."""

    rel: float = MEMORY_REL
    abs_bytes: int = MEMORY_ABS_MIB * 2**20

    def allowed(self, base: float) -> float:
        """The largest move from ``base`` bytes that is not a change."""
        return max(self.rel * base, self.abs_bytes)

    def changed(self, base: float, cur: float) -> bool:
        """Whether ``cur`` bytes moved from ``base`` beyond :meth:`allowed`, up or down."""
        return abs(cur - base) > self.allowed(base)

    def decide(self, case: str, base: Sequence[float], cur: Sequence[float]) -> Verdict:
        b, c = median(base), median(cur)
        allowed = self.allowed(b)
        gib = 2**30
        d = {"baseline_bytes": b, "current_bytes": c, "allowed_bytes": allowed}
        msg = (
            f"peak reserved {c / gib:.2f} GiB vs baseline {b / gib:.2f} GiB ({(c - b) / 2**20:+.0f} MiB, "
            f"allowed +{allowed / 2**20:.0f} MiB)"
        )
        return Verdict(
            "memory",
            case,
            "fail" if c - b > allowed else "pass",
            ("MEMORY REGRESSION: " if c - b > allowed else "pass: ") + msg,
            d,
        )
