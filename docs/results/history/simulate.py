"""False alarms and detection of the history page's change points, by simulation (docs/results/history/README.md).

    python docs/results/history/simulate.py [SERIES]

Synthetic series of session medians (``harness.reporting.history.synthetic``): log-normal noise of sd 2%, or
t(3) noise scaled to the same sd; the detector is ``harness.reporting.history.detect`` with its defaults.
"""

import sys

from harness.reporting.history import ALPHA, MIN_SIZE, PENALTY_K, simulate

SIGMA = 0.02


def main(series: int) -> None:
    print(f"detector: PELT penalty {PENALTY_K:g} * sigma^2 * log(n), segments >= {MIN_SIZE}, Welch x positions, Holm at {ALPHA:g}; "
          f"{series} series per cell, noise sd {SIGMA:.0%} (log)")
    print("\nfalse alarms: share of series without a shift that get any change point")
    print("| sessions | normal | t(3) |\n|---:|---:|---:|")
    for n in (10, 30, 60):
        print(f"| {n} | " + " | ".join(f"{simulate(series, n, SIGMA, noise=z)['any']:.3f}" for z in ("normal", "t3")) + " |")
    print("\ndetection: a shift at session 15 of 30; found there / found there and nothing else")
    print("| shift | in sd | normal | t(3) |\n|---:|---:|---:|---:|")
    for shift in (0.04, 0.06, 0.08, 0.12):
        cells = [simulate(series, 30, SIGMA, shift=shift, at=15, noise=z, first_seed=10_000) for z in ("normal", "t3")]
        print(f"| +{shift:.0%} | {shift / SIGMA:.0f} | " + " | ".join(f"{c['found']:.3f} / {c['exact']:.3f}" for c in cells) + " |")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
