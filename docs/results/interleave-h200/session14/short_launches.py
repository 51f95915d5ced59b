"""The launch sd that paired.launch_components reads from short launches, before and after session 14's rescaling of the
within-launch residuals by sqrt(m / (m - 1)): simulated normal pair log ratios (sd 7%), 300 replicates per row, seeded.

    PYTHONPATH=. python docs/results/interleave-h200/session14/short_launches.py > docs/results/interleave-h200/session14/short_launches.txt
"""

import math

import numpy as np

from harness.judging import paired as pd


def before(groups):
    """Session 13's estimator: residuals around each launch's HL as they are."""
    centre = [pd.hodges_lehmann(g) for g in groups]
    resid = [x - c for g, c in zip(groups, centre) for x in g]
    sd = pd.rank_estimate(resid, 0.05).sd
    return math.sqrt(max(float(np.var(centre, ddof=1)) - sd ** 2 * float(np.mean([1 / len(g) for g in groups])), 0.0))


def main():
    rng = np.random.default_rng(1)
    print("m pairs x L launches, true launch sd: launch sd read, mean and rms over 300 replicates (before | after)")
    for m, n, tau in ((2, 19, 0.0), (2, 19, 0.03), (3, 12, 0.0), (5, 20, 0.0), (5, 20, 0.02), (20, 8, 0.02)):
        b, a = [], []
        for _ in range(300):
            groups = [list(rng.normal(rng.normal(0, tau), 0.07, m)) for _ in range(n)]
            b.append(before(groups))
            a.append(pd.launch_components(groups).launch_sd)
        b, a = np.array(b), np.array(a)
        print(f"  {m:2d} x {n:2d}, tau {tau:.0%}: before mean {b.mean():.2%} rms {math.sqrt(np.mean(b ** 2)):.2%} | "
              f"after mean {a.mean():.2%} rms {math.sqrt(np.mean(a ** 2)):.2%}")


if __name__ == "__main__":
    main()
