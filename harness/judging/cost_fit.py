"""Calibrating the cost model (:mod:`harness.judging.cost_model`) on a case's own measurements.

An :class:`Observation` is one measured ratio of step times, T(target) / T(base), with the standard error of its log:
the splits of one workload on one machine (1x4 against 4x1: the same work per micro-batch, G times over), or an
injected change measured by an interleaved comparison (its census diff known). :func:`calibrate` scores every host-cost
mix on a grid by the weighted squared log errors of its predicted ratios and keeps, besides the best, every mix whose
score is within the 95% profile bound of it (3.84, scaled up by the reduced chi-square where the observations scatter
more than their errors say): the mixes the data cannot tell apart, over which a prediction's interval runs.

Splits vary the counts almost in proportion (every count is affine in G), so splits alone pin the total host cost per
micro-batch, not its mix; a change with another mix (the injected casts: many launches and ops, few Python calls) is
what tells the mixes apart.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import median, stdev

from harness.errors import BadInput
from harness.judging.cost_model import EQUAL, Case, Mix, Work, change, simplex
from harness.results.run import Run

CHI2_95 = 3.84  # the 95% point of chi-square with 1 degree of freedom: a profile-likelihood interval
MEDIAN_SE = 1.2533  # the standard error of a sample median is about this times sd / sqrt(n) (normal data)


@dataclass(frozen=True)
class Observation:
    """A measured ratio T(target) / T(base) = ``ratio`` with ``log_se``: ``base`` is the case measured, ``target`` the
    work the other side ran, ``extra_host_ms`` host time the census does not see."""

    name: str
    base: Case
    target: Work
    ratio: float
    log_se: float
    extra_host_ms: float = 0.0

    def __post_init__(self):
        if not (self.ratio > 0 and self.log_se > 0 and math.isfinite(self.ratio) and math.isfinite(self.log_se)):
            raise BadInput(f"observation {self.name}: ratio and log_se must be positive numbers")

    def predicted(self, mix: Mix, idle: float | None = None) -> float:
        lo, hi = self.base.idle_range()
        total, _ = change(
            self.base, self.target, mix, (lo + hi) / 2 if idle is None else idle, self.base.step_ms, self.extra_host_ms
        )
        return 1.0 + total

    def z(self, mix: Mix) -> float:
        return (math.log(self.predicted(mix)) - math.log(self.ratio)) / self.log_se


@dataclass(frozen=True)
class Calibration:
    """The best ``mix``, every mix not ruled out (``feasible``), the device idle range per micro-batch, the
    observations' names, the best mix's chi-square, the scale applied to the bound (>= 1), and ``rel_error``: the
    model's relative error on the size of a change over the observations it resolves (RMS of log(predicted) /
    log(measured) - 1 at the best mix), by which a prediction's interval is widened."""

    best: Mix
    feasible: tuple[Mix, ...]
    idle_ms: tuple[float, float] | None
    names: tuple[str, ...]
    chi2: float
    scale: float
    rel_error: float = 0.0

    def line(self) -> str:
        b = self.best
        span = [
            f"{min(m.shares()[i] for m in self.feasible):.2f}-{max(m.shares()[i] for m in self.feasible):.2f}"
            for i in range(3)
        ]
        return (
            f"host time {b.python_calls:.0%} Python calls, {b.ops:.0%} aten ops, {b.kernels:.0%} launches (not ruled "
            f"out: {span[0]}, {span[1]}, {span[2]}); from {len(self.names)} observation(s), chi-square "
            f"{self.chi2:.2f}, relative error {self.rel_error:.0%}"
        )


def calibrate(
    observations: Sequence[Observation], idle_ms: tuple[float, float] | None = None, step: float = 0.02
) -> Calibration:
    """The mixes that fit ``observations``; with none, every mix is possible and the equal mix is the point."""
    grid = simplex(step)
    if not observations:
        return Calibration(EQUAL, tuple(grid), idle_ms, (), 0.0, 1.0)
    scored = [(sum(o.z(m) ** 2 for o in observations), m) for m in grid]
    best_chi2, best = min(scored, key=lambda t: t[0])
    dof = len(observations) - 2  # a mix has two free shares
    scale = max(1.0, best_chi2 / dof) if dof > 0 else 1.0
    feasible = tuple(m for c, m in scored if c <= best_chi2 + CHI2_95 * scale)
    return Calibration(
        best, feasible, idle_ms, tuple(o.name for o in observations), best_chi2, scale, rel_error(observations, best)
    )


def rel_error(observations: Sequence[Observation], mix: Mix) -> float:
    """RMS over the observations whose change is resolved (|log ratio| > 2 standard errors) of the relative error of the
    predicted change: log(predicted) / log(measured) - 1; 0 where none is resolved."""
    errs = [
        math.log(o.predicted(mix)) / math.log(o.ratio) - 1
        for o in observations
        if abs(math.log(o.ratio)) > 2 * o.log_se
    ]
    return math.sqrt(sum(e * e for e in errs) / len(errs)) if errs else 0.0


@dataclass(frozen=True)
class SplitCase:
    """One split of a workload on one GPU: its census work and its timed runs' median step times."""

    split: str
    work: Work
    steps_ms: tuple[float, ...]

    def __post_init__(self):
        if not self.steps_ms or min(self.steps_ms) <= 0:
            raise BadInput(f"split {self.split}: needs at least one timed run with a positive step time")

    @property
    def step_ms(self) -> float:
        return median(self.steps_ms)

    @property
    def log_se(self) -> float:
        """Standard error of the log of the median step (a floor of 1% where there are too few runs to tell)."""
        logs = [math.log(x) for x in self.steps_ms]
        return max(MEDIAN_SE * stdev(logs) / math.sqrt(len(logs)), 0.01) if len(logs) >= 3 else 0.05

    def case(self, idle_ms: tuple[float, float] | None = None) -> Case:
        return Case(self.work, self.step_ms, idle_ms)


def split_observation(base: SplitCase, other: SplitCase, idle_ms: tuple[float, float] | None = None) -> Observation:
    """The measured ratio of ``other``'s step to ``base``'s (their runs' medians), as an observation."""
    return Observation(
        f"{other.split}/{base.split}",
        base.case(idle_ms),
        other.work,
        other.step_ms / base.step_ms,
        math.hypot(base.log_se, other.log_se),
    )


def reference(splits: Sequence[SplitCase]) -> SplitCase:
    """The split the others are predicted from: the one with the fewest micro-batches per step (the nightly's 4x1)."""
    return min(splits, key=lambda s: (s.work.micro_batches, s.split))


def split_cases(runs_by_split: Mapping[str, Sequence[Run | Mapping]]) -> list[SplitCase]:
    """Split cases from runs (each a :class:`Run`, or its record) grouped by split id: census runs give the work (the
    first usable census), timed runs (no census) the step times; a split with either missing is left out. A record
    without a status (a baseline's run) is taken to have finished."""
    out = []
    for split, records in runs_by_split.items():
        runs = [r if isinstance(r, Run) else Run.from_json(r) for r in records]
        censuses = [r.census for r in runs if r.census is not None and r.census.fits and r.census.ops is not None]
        steps = [
            float(r.step_time_median_ms)
            for r in runs
            if r.census is None and r.status in ("", "ok") and r.step_time_median_ms
        ]
        if censuses and steps:
            d = runs[0].decomposition
            g = d.get("grad_accum") if isinstance(d, Mapping) else None
            out.append(SplitCase(split, Work.of(censuses[0], g), tuple(steps)))
    return sorted(out, key=lambda s: (s.work.micro_batches, s.split))


def leave_one_out(
    splits: Sequence[SplitCase], extra: Sequence[Observation] = (), idle_ms: tuple[float, float] | None = None
) -> list[tuple[str, float, float, float, float, Calibration]]:
    """For each split but the reference: (split, measured ratio to the reference, predicted, lo, hi, calibration), the
    prediction calibrated on the other splits' ratios and ``extra`` observations, never on the ratio it predicts."""
    ref = reference(splits)
    out = []
    for s in splits:
        if s is ref:
            continue
        obs = [split_observation(ref, o, idle_ms) for o in splits if o is not ref and o is not s] + list(extra)
        cal = calibrate(obs, idle_ms)
        ratios = [
            split_observation(ref, s, idle_ms).predicted(m, i)
            for m in (cal.best, *cal.feasible)
            for i in ref.case(idle_ms).idle_range()
        ]
        out.append(
            (
                s.split,
                s.step_ms / ref.step_ms,
                split_observation(ref, s, idle_ms).predicted(cal.best),
                min(ratios),
                max(ratios),
                cal,
            )
        )
    return out
