"""Sensitivity and planning of an interleaved comparison: the power of its t test, the smallest slowdown it finds, the
pairs that takes, and how to spend a time budget on launches and pairs when the launch is the unit. Pure; no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats as _st

from harness.judging.launches import MIN_LAUNCH_UNIT


def one_sample_t_power(true_ratio: float, sigma: float, n: int, alpha: float, threshold: float = 0.0) -> float:
    """Power of the one-sided one-sample t test on n units (pairs, or launch summaries; ``sigma`` the sd of one unit's
    log ratio): the probability that it rejects H0 "ratio <= 1 + threshold" at ``alpha`` when the true ratio is
    ``true_ratio``."""
    if n < 2 or sigma <= 0:
        return float("nan")
    ncp = (math.log(true_ratio) - math.log(1 + threshold)) * math.sqrt(n) / sigma
    return float(_st.nct.sf(_st.t.ppf(1 - alpha, n - 1), n - 1, ncp))


def min_detectable(sigma: float, n: int, alpha: float = 0.01, target: float = 0.9, threshold: float = 0.0) -> float:
    """Smallest true slowdown (a fraction: 0.03 is 3%) that :func:`one_sample_t_power` finds
    with probability ``target``.

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


def pairs_needed(
    sigma: float, slowdown: float, alpha: float = 0.01, target: float = 0.9, threshold: float = 0.0
) -> int | None:
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
    ``pairs_per_launch`` pairs each, whose launch summaries have the sd ``unit_sd``; ``mds`` is the slowdown the t test
    over them finds with the asked power at the asked alpha (:func:`min_detectable` of ``unit_sd`` over ``launches``). A
    plan made for a range of launch sds also gives ``mds_hi``, its MDS at the range's top, and ``regret``, the most MDS
    (a fraction) it gives away anywhere in the range against the best plan for that launch sd."""

    launches: int
    pairs_per_launch: int
    unit_sd: float
    mds: float
    mds_hi: float = float("nan")
    regret: float = 0.0


# fewest pairs per launch a plan proposes: the HL of fewer is nearly their mean, and its noise stops scaling as 1/m
PLAN_MIN_PAIRS = 5
PLAN_GRID = 5  # launch sds a plan for a range weighs, evenly spaced from its bottom to its top


def plans_within(
    budget_s: float,
    first_s: float,
    launch_s: float,
    pair_s: float,
    max_launches: int,
    min_pairs: int,
    hide_s: float = 0.0,
) -> list[tuple[int, int]]:
    """(L, m) for every launch count from :data:`MIN_LAUNCH_UNIT` whose launches the budget gives ``min_pairs`` pairs or
    more. A later launch costs ``launch_s`` + max(0, ``hide_s`` - m ``pair_s``): it also waits for whatever of its
    pre-start the launch before it, m pairs long, did not hide. So budget = first + (L - 1)(launch + max(0, hide - m
    pair)) + L m pair, solved for m on each side of m pair = hide."""
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


def launch_plan(
    budget_s: float,
    first_s: float,
    launch_s: float,
    pair_s: float,
    pair_sd: float,
    launch_sd: float,
    alpha: float = 0.01,
    target: float = 0.9,
    max_launches: int = 64,
    min_pairs: int = PLAN_MIN_PAIRS,
    launch_sd_hi: float | None = None,
    hide_s: float = 0.0,
) -> LaunchPlan | None:
    """The number of launches that minimises the minimum detectable slowdown of the launch unit within ``budget_s``.

    The model is the two-stage one of the verdict: a launch costs ``first_s`` (the first) or ``launch_s`` (each later
    one: start-up, warm-up, stopping), a pair ``pair_s``; a launch summary of m pairs has the variance ``launch_sd``² +
    ``pair_sd``²/m (the launch's own offset plus its pairs' noise); the t test over L summaries has L - 1 df. For each L
    from :data:`MIN_LAUNCH_UNIT` the budget gives m = (budget - first - (L - 1) launch) / (L pair), and the L with the
    smallest MDS wins, among plans of at least ``min_pairs`` pairs per launch. Its continuous form is Cochran's optimum
    for two-stage sampling, m* = sqrt(launch_s / pair_s) x pair_sd / launch_sd pairs per launch: a costly launch or a
    small launch sd asks for long launches, a cheap launch or a large launch sd for many short ones.

    With ``launch_sd_hi`` above ``launch_sd`` the launch sd is known only to lie between them (an estimate and its upper
    bound): the plan is then the one of least regret, the L whose MDS falls furthest behind the best L for a launch sd
    of the range by the least (:data:`PLAN_GRID` launch sds from bottom to top). Betting on the estimate alone loses
    much when the next run's launches differ more; betting on the bound alone gives away longer launches that a run
    without a launch effect would have used. ``mds`` is at ``launch_sd``, ``mds_hi`` at ``launch_sd_hi``.

    None when the budget holds no 3 launches of ``min_pairs`` pairs, or the sds are not positive (``launch_sd`` 0 is
    allowed: then fewer, longer launches only lose degrees of freedom)."""
    if not pair_sd > 0 or launch_sd < 0 or pair_s <= 0:
        return None
    plans = plans_within(budget_s, first_s, launch_s, pair_s, max_launches, min_pairs, hide_s)
    if not plans:
        return None

    def mds(n: int, m: int, tau: float) -> float:
        return min_detectable(math.sqrt(tau**2 + pair_sd**2 / m), n, alpha, target)

    hi = launch_sd_hi if launch_sd_hi is not None and launch_sd_hi > launch_sd else launch_sd
    taus = (
        [launch_sd + (hi - launch_sd) * i / (PLAN_GRID - 1) for i in range(PLAN_GRID)]
        if hi > launch_sd
        else [launch_sd]
    )
    table = [[mds(n, m, tau) for tau in taus] for n, m in plans]
    best = [min(row[j] for row in table) for j in range(len(taus))]
    regret = [max(row[j] - best[j] for j in range(len(taus))) for row in table]
    k = min(range(len(plans)), key=lambda i: (regret[i], table[i][0]))
    n, m = plans[k]
    return LaunchPlan(n, m, math.sqrt(launch_sd**2 + pair_sd**2 / m), table[k][0], table[k][-1], regret[k])
