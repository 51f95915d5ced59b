"""Monte-Carlo and analytic checks of the runtime verdict: false-alarm rate, power, minimum detectable slowdown.

The noise model draws whole runs the way the suite sees them: each run gets a between-run effect
(log-normal, with a fraction of runs drawn from a heavy-tailed t(3) instead), and each of its
steady-state steps gets within-run noise (log-normal plus rare 1.5-4x spikes). The run's metric is
the median of its steps, exactly as :mod:`harness.measuring.worker` computes it, and the verdict is
:class:`harness.judging.stats.RuntimeCheck` itself, Holm over ``cases`` comparisons per session.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st

from harness.judging.stats import RuntimeCheck
from harness.judging.thresholds import ALPHA, INTERLEAVED


@dataclass(frozen=True)
class NoiseModel:
    between_cv: float = 0.01  # sd of log run effect (machine state, clocks, allocator layout)
    outlier_prob: float = 0.10  # share of runs whose effect comes from a heavy tail instead
    outlier_scale: float = 0.02  # scale of that t(3) tail
    within_cv: float = 0.08  # sd of log step noise inside a run
    spike_prob: float = 0.03  # share of steps that spike (GC, logging, clock dips)
    spike_lo: float = 1.5
    spike_hi: float = 4.0
    steps: int = 95  # steady-state steps per run (100 minus 5 warm-up)
    lease_cv: float = 0.0  # sd of log machine effect: one draw per machine lease, shared by all runs made on it
    base_leases: int = 1  # machine leases the baseline's runs were gathered on (the session itself runs on one more)

    def run_metrics(self, rng: np.random.Generator, true_ms: float, n: int, leases: int = 1) -> list[float]:
        """Run medians of ``n`` runs spread round-robin over ``leases`` fresh machine leases (0:
        no lease effect added)."""
        eff = rng.normal(0.0, self.between_cv, n)
        out = rng.random(n) < self.outlier_prob
        eff[out] = rng.standard_t(3, out.sum()) * self.outlier_scale
        if self.lease_cv and leases:  # drawn only when asked for, so lease-free simulations keep their random streams
            eff += rng.normal(0.0, self.lease_cv, leases)[np.arange(n) % leases]
        steps = true_ms * np.exp(eff[:, None] + rng.normal(0.0, self.within_cv, (n, self.steps)))
        spikes = rng.random((n, self.steps)) < self.spike_prob
        steps[spikes] *= rng.uniform(self.spike_lo, self.spike_hi, spikes.sum())
        return np.median(steps, axis=1).tolist()


@dataclass(frozen=True)
class SimResult:
    ratio: float
    trials: int
    any_regression: float  # share of sessions with at least one regression verdict (family-wise)
    regression: float  # share of comparisons with a regression verdict (power when ratio > 1 + threshold)
    passed: float
    inconclusive: float


def simulate(
    trials: int,
    ratio: float,
    noise: NoiseModel = NoiseModel(),
    n_base: int = 5,
    n_cur: int = 5,
    alpha: float = ALPHA,
    threshold: float = 0.05,
    cases: int = 3,
    max_repeats: int | None = None,
    seed: int = 0,
    by_machine: bool = True,
) -> SimResult:
    """Simulate ``trials`` sessions of ``cases`` comparisons, all with true slowdown ``ratio``.

    With ``max_repeats``, inconclusive comparisons get ``n_cur`` more runs per look, and alpha is
    split over the planned looks, as :class:`harness.suite.session.PerfSession` does. With
    ``noise.base_leases >= 2`` the baseline's runs are grouped by machine, as a baseline store records
    them, so the machine is the unit (``by_machine=False`` pools them: the run-level test).
    """
    rng = np.random.default_rng(seed)
    looks = 1 + (math.ceil(((max_repeats or n_cur) - n_cur) / n_cur))
    check = RuntimeCheck(alpha, threshold)
    true = [1800.0, 800.0, 450.0, 300.0, 1200.0][:cases] + [500.0] * max(0, cases - 5)
    any_reg = reg = ok = inc = 0
    for _ in range(trials):
        # the session runs on one lease of its own: its effect is drawn once per case and kept for the extra looks
        cur = [t * ratio * (math.exp(rng.normal(0.0, noise.lease_cv)) if noise.lease_cv else 1.0) for t in true]
        data = {}
        for i, t in enumerate(true):
            base = noise.run_metrics(rng, t, n_base, noise.base_leases)
            if by_machine and noise.base_leases > 1:
                base = [base[j :: noise.base_leases] for j in range(noise.base_leases)]
            data[f"c{i}"] = (base, noise.run_metrics(rng, cur[i], n_cur, 0))
        verdicts = check.decide(data, looks=looks)
        for _look in range(looks - 1):
            todo = [c for c, v in verdicts.items() if v.outcome == "inconclusive"]
            if not todo:
                break
            for c in todo:
                i = int(c[1:])
                data[c] = (data[c][0], data[c][1] + noise.run_metrics(rng, cur[i], n_cur, 0))
            verdicts = check.decide(data, looks=looks)
        outs = [v.outcome for v in verdicts.values()]
        any_reg += any(o == "regression" for o in outs)
        reg += outs.count("regression")
        ok += outs.count("pass")
        inc += outs.count("inconclusive")
    n = trials * cases
    return SimResult(ratio, trials, any_reg / trials, reg / n, ok / n, inc / n)


def two_sample_t_power(
    true_ratio: float, cv: float, n_base: int, n_cur: int, alpha: float, threshold: float, cases: int = 1
) -> float:
    """Analytic power of the runtime regression test, the two-sample t test between ``n_base`` baseline runs and
    ``n_cur`` current runs (one case, Holm's first step alpha/cases), for log-normal run noise of ``cv``."""
    if true_ratio <= 0 or cv <= 0:
        return float("nan")
    se = cv * math.sqrt(1 / n_base + 1 / n_cur)
    df = n_base + n_cur - 2
    ncp = (math.log(true_ratio) - math.log(1 + threshold)) / se
    return float(_st.nct.sf(_st.t.ppf(1 - alpha / cases, df), df, ncp))


def min_detectable_slowdown(
    cv: float, n_base: int, n_cur: int, alpha: float, threshold: float, target: float = 0.9, cases: int = 1
) -> float:
    """Smallest true slowdown (fraction) detected as a regression with probability ``target``."""
    lo, hi = 1 + threshold, 10.0
    if two_sample_t_power(hi, cv, n_base, n_cur, alpha, threshold, cases) < target:
        return float("inf")
    for _ in range(60):
        mid = (lo + hi) / 2
        if two_sample_t_power(mid, cv, n_base, n_cur, alpha, threshold, cases) >= target:
            hi = mid
        else:
            lo = mid
    return hi - 1


# ---------------------------------------------------------------------------------------------
# Block-interleaved comparisons (python -m harness interleave)
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairNoise:
    """Noise of one pair's log ratio log(B/A): normal with sd ``sigma`` (or a t with ``tail_df`` degrees of freedom
    scaled to the same sd, for heavy tails), plus a per-launch offset with sd ``launch_sd`` shared by the launch's
    pairs. With ``outlier_share`` > 0 that share of pairs is drawn from a normal with sd ``outlier_sd`` instead (a step
    caught by a host hiccup: most pairs are tight and a few are far off)."""

    sigma: float = 0.03
    launch_sd: float = 0.0
    tail_df: float | None = None
    outlier_share: float = 0.0
    outlier_sd: float = 0.0

    def draw(self, rng: np.random.Generator, ratio: float, sizes: list[int]) -> list[list[float]]:
        out = []
        for n in sizes:
            if self.tail_df:
                e = rng.standard_t(self.tail_df, n) * self.sigma / math.sqrt(self.tail_df / (self.tail_df - 2))
            else:
                e = rng.normal(0.0, self.sigma, n)
            if self.outlier_share:
                wild = rng.random(n) < self.outlier_share
                e = np.where(wild, rng.normal(0.0, self.outlier_sd, n), e)
            off = rng.normal(0.0, self.launch_sd) if self.launch_sd else 0.0
            out.append((math.log(ratio) + off + e).tolist())
        return out


@dataclass(frozen=True)
class InterleaveSim:
    ratio: float
    trials: int
    regression: float  # share of comparisons ending in a regression verdict (at any look)
    passed: float
    improvement: float
    inconclusive: float
    mean_pairs: float  # pairs made on average (sequential looks stop early)
    launch_unit: float  # share of final verdicts made with the launch as the unit


def simulate_interleave(
    trials: int,
    ratio: float,
    noise: PairNoise,
    pairs: int = 60,
    launches: int = 2,
    look_every: int | None = None,
    alpha: float = ALPHA,
    threshold: float = INTERLEAVED,
    seed: int = 0,
    launch_alpha: float | None = None,
    test: str = "rank",
    unit: str | None = None,
) -> InterleaveSim:
    """Simulate ``trials`` interleaved comparisons with true ratio B/A ``ratio``, through the command's own plan
    (:class:`harness.judging.paired.Plan`) and verdict (:class:`harness.judging.paired.PairedCheck`): looks every
    ``look_every`` pairs once every launch has 2 pairs, stopping at the first conclusive look. ``unit`` as the command
    chooses it when None: the launch from :data:`~harness.judging.launches.MIN_LAUNCH_UNIT` launches on,
    else the pair."""
    from harness.judging.launches import LAUNCH_ALPHA, MIN_LAUNCH_UNIT
    from harness.judging.paired import PairedCheck, Plan
    from harness.judging.stopping import StopRule

    plan = Plan(pairs, launches, look_every)
    unit = unit or ("launch" if launches >= MIN_LAUNCH_UNIT else "pair")
    stop = StopRule(
        plan,
        PairedCheck(
            alpha, threshold, len(plan.looks), LAUNCH_ALPHA if launch_alpha is None else launch_alpha, test, unit
        ),
    )
    rng = np.random.default_rng(seed)
    sizes = [b - a for a, b in zip(plan.starts, (*plan.starts[1:], pairs))]
    counts = {"regression": 0, "pass": 0, "improvement": 0, "inconclusive": 0}
    used = unit = 0
    for _ in range(trials):
        v, n = stop.run(noise.draw(rng, ratio, sizes))
        counts[v.outcome] += 1
        used += n
        unit += v.details["unit"] == "launch"
    return InterleaveSim(
        ratio,
        trials,
        *(counts[k] / trials for k in ("regression", "pass", "improvement", "inconclusive")),
        used / trials,
        unit / trials,
    )


DRAWS = 1000  # replicates of :func:`drawn_mds`: enough that its MDS moves little between seeds


def hl_rows(x: np.ndarray) -> np.ndarray:
    """The Hodges-Lehmann estimate along the last axis (the median of the Walsh averages (x_i + x_j) / 2, i <= j), as
    :func:`harness.judging.pair_estimates.hodges_lehmann` computes it for one launch;
    in chunks of about 4M Walsh averages."""
    i, j = np.triu_indices(x.shape[-1])
    flat = x.reshape(-1, x.shape[-1])
    step = max(1, 4_000_000 // len(i))
    out = [np.median((flat[r : r + step, i] + flat[r : r + step, j]) / 2, axis=-1) for r in range(0, len(flat), step)]
    return np.concatenate(out).reshape(x.shape[:-1])


def hl_counts(y: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """:func:`hl_rows` of rows drawn from the values ``y``, each row given by how many times it holds each value
    (``counts``, rows x len(y), every row of the same length n): the weighted median of the len(y)(len(y)+1)/2 means
    (y_a + y_b) / 2, a <= b, each weighted by the number of Walsh averages it stands for (c_a c_b, or c_a(c_a+1)/2 for
    a = b). The same numbers as :func:`hl_rows` (the middle one, or the mean of the middle two, of the n(n+1)/2 Walsh
    averages), without making them: the work grows with len(y)² instead of n²."""
    a, b = np.triu_indices(len(y))
    means = (y[a] + y[b]) / 2
    order = np.argsort(means, kind="stable")
    a, b, means = a[order], b[order], means[order]
    flat = counts.reshape(-1, len(y)).astype(np.int64)
    n = int(flat[0].sum()) if len(flat) else 0
    total = n * (n + 1) // 2
    lo, hi = (total - 1) // 2, total // 2  # the middle Walsh average's place, or the middle two's
    step = max(1, 4_000_000 // len(a))
    out = []
    for r in range(0, len(flat), step):
        c = flat[r : r + step]
        w = np.where(a == b, c[:, a] * (c[:, a] + 1) // 2, c[:, a] * c[:, b])
        cum = np.cumsum(w, axis=-1)
        out.append((means[np.argmax(cum > lo, axis=-1)] + means[np.argmax(cum > hi, axis=-1)]) / 2)
    return np.concatenate(out).reshape(counts.shape[:-1])


def drawn_summaries(
    groups, launches: int, pairs: int, launch_sd: float, summary: str = "hl", reps: int = DRAWS, seed: int = 0
) -> np.ndarray:
    """(reps, launches) launch summaries under the null, drawn from a run's own pairs as :func:`drawn_mds` draws them:
    the launch residuals (:func:`harness.judging.launches.launch_residuals`) mirrored, ``pairs`` of them per launch with
    replacement, summarised (Hodges-Lehmann or mean), plus a N(0, ``launch_sd``) offset per launch."""
    from harness.judging.launches import launch_residuals

    y = np.asarray(launch_residuals(groups, summary), dtype=float)
    y = np.concatenate([y, -y])
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(y), (reps, launches, pairs))
    if summary != "hl":
        s = y[drawn].mean(axis=-1)
    elif len(y) < pairs:  # fewer values than pairs: the Walsh averages from how often each value was drawn
        rows = drawn.reshape(-1, pairs) + len(y) * np.arange(reps * launches)[:, None]
        counts = np.bincount(rows.ravel(), minlength=reps * launches * len(y)).reshape(reps, launches, len(y))
        s = hl_counts(y, counts)
    else:
        s = hl_rows(y[drawn])
    if launch_sd > 0:
        s = s + rng.normal(0.0, launch_sd, (reps, launches))
    return s


def drawn_mds(
    groups,
    launches: int,
    pairs: int,
    launch_sd: float,
    summary: str = "hl",
    alpha: float = 0.01,
    target: float = 0.9,
    reps: int = DRAWS,
    seed: int = 0,
) -> float | None:
    """The minimum detectable slowdown of ``launches`` launches of ``pairs`` pairs, drawn from a run's own pairs instead
    of the normal model of :func:`harness.judging.planning.launch_plan`.

    The source is the run's pairs with the launch effects taken out (:func:`harness.judging.launches.launch_residuals`:
    each launch's log ratios less its own summary, scaled), mirrored so that the null holds. Each drawn launch is
    ``pairs`` of them, drawn with replacement, plus a N(0, ``launch_sd``) offset; it is summarised as the verdict
    summarises a launch (``summary``: Hodges-Lehmann or mean), and the t test over the launch summaries rejects "ratio
    <= 1" one-sided at ``alpha``. A slowdown s shifts every summary by log(1 + s), so the MDS is the ``target`` quantile
    over the replicates of the shift each one needs, t_(1-alpha, L-1) x SE - mean, turned back into a ratio.

    Where the pairs are close to normal this agrees with the model (:func:`harness.judging.planning.min_detectable` of
    sqrt(launch_sd² + pair_sd²/m)). Where they are heavy-tailed (a host that is slow for stretches of seconds), the
    summary of a launch of a few pairs is noisier than pair_sd/sqrt(m) says, and the drawn MDS is larger than the
    model's. None without 2 launches of 2 pairs, or for fewer than 2 launches or pairs."""
    from harness.judging.launches import SUMMARIES

    if launches < 2 or pairs < 1 or summary not in SUMMARIES or sum(len(g) >= 2 for g in groups) < 2:
        return None
    s = drawn_summaries(groups, launches, pairs, launch_sd, summary, reps, seed)
    need = _st.t.ppf(1 - alpha, launches - 1) * s.std(axis=-1, ddof=1) / math.sqrt(launches) - s.mean(axis=-1)
    return math.expm1(max(float(np.quantile(need, target)), 0.0))
