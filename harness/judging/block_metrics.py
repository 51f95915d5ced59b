"""From the blocks of an interleaved comparison to the numbers its statistics use: one metric per block, the log ratio
of a pair, and the diagnostics of the blocks: the resume penalty (a block's first step against
its others) and the host canary as a covariate of the pair log ratio. Pure; no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import fmean, median

from harness.errors import BadInput
from harness.judging.pair_estimates import paired_estimate
from harness.judging.stats import sd
from harness.record import PHASES

METRICS = ("mean", "median", "min")


def block_metric(step_times_ms: Sequence[float], how: str = "median", drop_first_step: bool = False) -> float:
    """One number per block: the ``mean``, ``median`` or ``min`` of its step times, without the first step if
    ``drop_first_step`` (and the block has more than one). The mean counts every spike, the median ignores a minority
    of slow steps, the min all but the fastest step: it sees a slowdown only where every step of the block has it."""
    if how not in METRICS:
        raise BadInput(f"block metric must be one of {', '.join(METRICS)}, got {how!r}")
    xs = list(step_times_ms[1:] if drop_first_step and len(step_times_ms) > 1 else step_times_ms)
    if not xs or any(x <= 0 for x in xs):
        raise BadInput("block_metric needs positive step times")
    return fmean(xs) if how == "mean" else median(xs) if how == "median" else min(xs)


def log_ratios(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """Per-pair log(b / a) of the pairs' block metrics."""
    if len(a) != len(b):
        raise BadInput(f"log_ratios needs as many A as B values, got {len(a)} and {len(b)}")
    return [math.log(y / x) for x, y in zip(a, b)]


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
    s_d = sd(d)
    mu = md - b * mc
    se_mu = s_e * math.sqrt(1 / n + mc * mc / sxx)
    return CanaryCovariate(
        correlation(c, d),
        b,
        s_d,
        s_e,
        1 - s_e**2 / s_d**2 if s_d > 0 else float("nan"),
        md,
        s_d / math.sqrt(n),
        mu,
        se_mu,
        n,
    )


def phase_deltas(pairs: Sequence) -> dict | None:
    """Where a step's time moved from A to B: per phase (``phases_ms`` of the blocks), B's ms per step less A's in each
    pair, the median over the pairs, beside A's own median; None when the blocks carry no phases. Descriptive: the
    verdict is on the whole step."""
    both = [p for p in pairs if all(b.phases_ms and b.step_times_ms for b in (p.a, p.b))]
    if not both:
        return None

    def per_step(block, phase: str) -> float:
        return sum(block.phases_ms.get(phase) or [0.0]) / len(block.step_times_ms)

    return {
        "pairs": len(both),
        "delta_ms": {ph: median(per_step(p.b, ph) - per_step(p.a, ph) for p in both) for ph in PHASES},
        "a_ms": {ph: median(per_step(p.a, ph) for p in both) for ph in PHASES},
    }
