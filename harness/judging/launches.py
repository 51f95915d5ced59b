"""Launches, the unit of replication of an interleaved comparison: each launch's summary of its pair log ratios, the
t estimate over those summaries, the F test of whether launches differ, and the split of the summaries' variance into
the launch's own offset and its pairs' noise. Pure; no I/O. The design is described in :mod:`harness.judging.paired`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean

from scipy import special as _sp
from scipy import stats as _st

from harness.errors import BadInput
from harness.judging.pair_estimates import PairedEstimate, hodges_lehmann, rank_estimate
from harness.judging.stats import sd

# level of the launch-variance screen of unit "pair" that switches it to the launch
# (liberal: see harness.judging.paired)
LAUNCH_ALPHA = 0.25
# fewest launches for which the command makes the launch the unit (2 launches: 1 df, a t quantile of 31.8 at 0.01)
MIN_LAUNCH_UNIT = 3


SUMMARIES = {"mean": fmean, "hl": hodges_lehmann}


@dataclass(frozen=True)
class LaunchComponents:
    """The two variance components of launch summaries (:func:`launch_components`): ``pair_sd``, the noise of one pair
    inside a launch as the summary sees it, and ``launch_sd``, the sd of a launch's own offset (0 when the summaries
    vary no more than their pairs make them)."""

    pair_sd: float
    launch_sd: float
    summary: str
    launch_sd_upper: float = float("nan")
    level: float = 0.9


PLAN_LEVEL = 0.9  # one-sided level of the launch sd's upper bound that a plan is made for


def launch_components(
    groups: Sequence[Sequence[float]], summary: str = "hl", level: float = PLAN_LEVEL
) -> LaunchComponents | None:
    """Method-of-moments split of the launch summaries' variance: var(summaries) = launch_sd² + pair_sd² x mean(1/m_i).

    The within-launch residuals (each launch's log ratios minus its own summary, pooled) are scaled by sqrt(m / (m - 1))
    first: a launch of m pairs centred on itself keeps only (m - 1)/m of their variance, a half at 2 pairs. Without
    that, many short launches with no launch effect read a launch sd well above 0.

    ``launch_sd_upper`` is a one-sided ``level`` upper bound: the summaries' variance at its chi-square bound on L - 1
    df, less the same pair part. A plan made for it (:func:`harness.judging.planning.launch_plan`) does not bet on
    launches that a few of them could not tell apart: planning for a launch sd that is absent costs little MDS, planning
    for none where there is one costs far more.

    ``pair_sd`` with ``summary`` "hl": the sd a t interval as wide as the Hodges–Lehmann interval of the scaled
    residuals would have, so heavy-tailed pairs count as the HL summary counts them (not a resampled small-launch HL
    variance, by which one pair of outliers in a 2-pair launch can outweigh every other launch); with "mean": the pooled
    within-launch sd. None below 2 launches with 2 pairs."""
    gs = [list(g) for g in groups if len(g) >= 2]
    if len(gs) < 2 or summary not in SUMMARIES:
        return None
    centre = [SUMMARIES[summary](g) for g in gs]
    resid = launch_residuals(gs, summary)
    pair_sd = rank_estimate(resid, 0.05).sd if summary == "hl" else math.sqrt(sum(r * r for r in resid) / len(resid))
    var, part, df = sd(centre) ** 2, pair_sd**2 * fmean([1 / len(g) for g in gs]), len(gs) - 1
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
        raise BadInput(f"launch summary must be one of {', '.join(SUMMARIES)}, got {summary!r}")
    means = [SUMMARIES[summary](g) for g in groups if len(g)]
    if len(means) < 1:
        raise BadInput("launch_estimate needs at least one launch with pairs")
    return PairedEstimate(fmean(means), sd(means), len(means), alpha, "launch", sum(len(g) for g in groups))


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
        return (
            f"launches: {len(self.sizes)} ({'+'.join(map(str, self.sizes))} pairs), launch means {ratios}; "
            f"F({self.df_between}, {self.df_within}) = {self.f:.2f}, p = {self.p:.3g}; "
            f"launch sd {self.sigma_launch:.2%} vs pair sd {self.sigma_pair:.2%}"
        )


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
        p = float(_sp.fdtrc(dfb, dfw, f))  # f.sf, without scipy.stats' per-call argument handling
    n0 = (n - sum(len(g) ** 2 for g in gs) / n) / dfb
    var_launch = max(0.0, (msb - msw) / n0)
    return LaunchCheck(f, dfb, dfw, p, math.sqrt(msw), math.sqrt(var_launch), tuple(map(len, gs)), tuple(means))
