"""The verdict of block-interleaved comparisons on one machine (``python -m harness interleave``): the paired check and
the plan of its launches and looks. Pure; no I/O.

Design (``harness.sidebyside.run`` makes the data; the statistics live in :mod:`harness.judging.block_metrics`,
:mod:`harness.judging.pair_estimates`, :mod:`harness.judging.launches` and :mod:`harness.judging.planning`):

* **The pair.** Two resident workers, A and B, take turns running blocks of k
  optimizer steps; a pair is one block of each, in an order drawn at random per pair (seeded). Each
  block is summarised by one number, :func:`~harness.judging.block_metrics.block_metric` (the median of its step times
  by default, as a run is by the median of its steps; or the mean; the first step optionally dropped), and each pair by
  its **log ratio**
  d = log(B's block metric / A's). Whatever the machine does for longer than a pair (a slow period,
  a clock change, a noisy neighbour) cancels in d, and the random order within the pair keeps a
  systematic first/second effect out of the mean of d.
* **Test.** One-sample t on n units (launch summaries, see Launches below; or pairs,
  :func:`~harness.judging.pair_estimates.paired_estimate`): mean d̄, sd s, SE = s/√n, n − 1 degrees of freedom. The
  ratio B/A is exp(d̄) with a (1 − 2a) interval exp(d̄ ± t₁₋ₐ,ₙ₋₁·SE), so each end is a one-sided level-a bound; with
  the pair as the unit the default is Wilcoxon's signed-rank test and its Hodges–Lehmann interval
  (:func:`~harness.judging.pair_estimates.rank_estimate`). Practical threshold δ, T = 1 + δ; a = α / (planned looks).
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
  closed and started again). A launch can bring its own offset (B's process happened to get a slower memory layout),
  and two launches of one build can differ by as much as the effect to be found. Pairs nest inside launches, so by
  default (``unit="launch"``) **the launch is the unit**: each launch is summarised by the Hodges–Lehmann estimate of
  its pair log ratios (the mean with ``test="t"``), and the verdict is a one-sample t test on the L launch summaries,
  L − 1 degrees of freedom (:func:`~harness.judging.launches.launch_estimate`). This is the two-stage
  (summary-statistic) analysis of a nested design: valid whatever the launch variance, with no pre-test, and its
  standard error carries both components, σ²_summary/L + τ²_launch/L. The per-launch Hodges–Lehmann estimate keeps the
  few wild pairs of a launch (a host hiccup) from moving its summary, which a launch mean does not. Its cost is degrees
  of freedom: with fewer than :data:`~harness.judging.launches.MIN_LAUNCH_UNIT` launches it cannot conclude, so the
  command uses ``unit="pair"`` there.
* ``unit="pair"`` (1 or 2 launches): the pairs are pooled and judged by the pair-level test, valid only if launches
  add nothing; :func:`~harness.judging.launches.launch_check` screens for it at every look (a one-way ANOVA F test of
  the pair log ratios grouped by launch, at ``launch_alpha`` 0.25) and makes the launch means the unit when it fires.
  Such a pre-test costs power (it fires in a quarter of the comparisons without any launch effect, leaving 1 df) and
  cannot protect the level when launch effects are too small for it to see but not nil: the reason the launch is the
  unit by default.

:func:`harness.judging.planning.min_detectable` gives the smallest true slowdown that the regression test finds with a
given power from the measured σ (about 3.6·σ/√n for α = 0.01, power 0.9, δ = 0; exact via the noncentral t).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from harness.errors import BadInput
from harness.judging.launches import LAUNCH_ALPHA, LaunchCheck, launch_check, launch_estimate
from harness.judging.pair_estimates import PairedEstimate, RankEstimate, paired_estimate, rank_estimate
from harness.judging.stats import Verdict, fmt_ratio, sd
from harness.judging.thresholds import ALPHA, INTERLEAVED

TESTS = ("rank", "t")  # of the pair unit: Wilcoxon signed-rank with Hodges–Lehmann (default), or the t test
UNITS = (
    "launch",
    "pair",
)  # of replication: the launch (two-stage, the default), or the pair (pooled, launch effect screened)


# ---------------------------------------------------------------------------------------------
# The plan: launches and looks
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """``pairs`` pairs over ``launches`` consecutive launches of equal size (launch j serves pairs
    round((j-1)·N/L) .. round(j·N/L) - 1), with a look every ``look_every`` pairs once the last launch has at
    least two pairs, and always one at the end. ``looks`` are the pair counts of the planned looks.

    No look is made before every launch has contributed: an early look over 2 or 3 launches can neither see
    a launch effect nor afford the launch as its unit, so its false alarms would exceed the level."""

    pairs: int
    launches: int = 2
    look_every: int | None = None

    def __post_init__(self):
        if self.launches < 1:
            raise BadInput(f"--launches must be at least 1, got {self.launches}")
        if self.pairs < 2 * self.launches:
            raise BadInput(
                f"--pairs {self.pairs} is too few for {self.launches} launches: every launch needs at least 2 pairs "
                f"(pass --pairs {2 * self.launches} or more)"
            )
        if self.look_every is not None and self.look_every < 1:
            raise BadInput(f"--look-every must be at least 1, got {self.look_every}")

    @cached_property
    def starts(self) -> tuple[int, ...]:
        """0-based index of the first pair of each launch."""
        return tuple(round(j * self.pairs / self.launches) for j in range(self.launches))

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

    alpha: float = ALPHA
    threshold: float = INTERLEAVED
    looks: int = 1
    launch_alpha: float = LAUNCH_ALPHA
    test: str = "rank"
    unit: str = "launch"

    def __post_init__(self):
        if self.test not in TESTS:
            raise BadInput(f"--test must be one of {', '.join(TESTS)}, got {self.test!r}")
        if self.unit not in UNITS:
            raise BadInput(f"--unit must be one of {', '.join(UNITS)}, got {self.unit!r}")

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
        pair_sd = sd([x for g in groups for x in g])
        details = {
            "ratio": e.ratio,
            "lo": e.lo,
            "hi": e.hi,
            "p_regression": e.p_above(t_up),
            "alpha": a,
            "alpha_total": self.alpha,
            "looks": self.looks,
            "look": look,
            "threshold": self.threshold,
            "pairs": e.pairs,
            "unit": e.unit,
            "n_units": e.n,
            "df": e.df,
            "sigma_pair": pair_sd,
            "mean_log_ratio": e.mean,
            "se": e.se,
            "sd": e.sd,
            "test": "signed-rank" if isinstance(e, RankEstimate) else "t",
            "unit_rule": self.unit,
            "launch_summary": self.summary if self.unit == "launch" else "mean" if e.unit == "launch" else None,
            "launch_check": None
            if lc is None
            else {
                "f": lc.f,
                "df_between": lc.df_between,
                "df_within": lc.df_within,
                "p": lc.p,
                "sigma_launch": lc.sigma_launch,
                "sigma_pair": lc.sigma_pair,
                "sizes": list(lc.sizes),
                "ratios": [math.exp(m) for m in lc.means],
            },
            "correction": f"alpha {self.alpha:g} split over {self.looks} planned look(s)"
            if self.looks > 1
            else "one look",
        }
        head = f"B/A {fmt_ratio(e.ratio, e.lo, e.hi)} over {e.pairs} pairs, threshold +{self.threshold:.1%}"
        if e.unit == "launch" and self.unit == "launch":
            head += (
                f" (unit: launch, t over {e.n} launch "
                f"{'Hodges-Lehmann estimates' if self.summary == 'hl' else 'means'})"
            )
        elif e.unit == "launch":
            head += f" (unit: launch, {e.n} launches: they differ, F test p = {lc.p:.2g})"
        if e.df < 1:
            need = "2 launches with pairs" if e.unit == "launch" else "2 pairs"
            return Verdict("runtime", case, "inconclusive", f"inconclusive: {head}: needs at least {need}", details)
        if e.p_above(t_up) <= a:
            return Verdict(
                "runtime",
                case,
                "regression",
                f"REGRESSION: {head} (p={e.p_above(t_up):.2g}, alpha {a:.3g} per look)",
                details,
            )
        if e.hi < 1 - self.threshold:
            return Verdict("runtime", case, "improvement", f"improvement: {head}", details)
        if e.hi < t_up:
            return Verdict("runtime", case, "pass", f"pass: {head}", details)
        hint = "; more launches narrow it" if e.unit == "launch" else "; more pairs narrow it"
        return Verdict(
            "runtime",
            case,
            "inconclusive",
            f"inconclusive: {head}; the interval straddles +{self.threshold:.1%}{hint}",
            details,
        )
