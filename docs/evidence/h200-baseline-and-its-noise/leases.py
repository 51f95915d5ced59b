"""How far machine leases of one H200 kind differ, against how far runs on one lease differ; and what the baseline built
from them can flag. From the raw runs in h200-baseline-rounds.jsonl.gz (stdlib and harness.judging.stats only):

    python docs/evidence/h200-baseline-and-its-noise/leases.py
"""

import math
import sys
from pathlib import Path
from statistics import fmean

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[2]))

import raw  # noqa: E402

from harness.judging.stats import smallest_flagged  # noqa: E402

DECS = ("1x4", "2x2", "4x1")
FIRST = ("lease1-100steps", "lease2-100steps")  # the first baseline: rounds 1-2 on lease 1, rounds 3-5 on lease 2
COMMITTED = (*FIRST, "lease3-4-fresh-checkout", "lease5-round")  # the committed baseline: 11 runs per split, leases 1-5
NAMES = [
    "1 (lease1-100steps)",
    "2 (lease2-100steps)",
    "3 (lease3-4-fresh-checkout, rounds 1-4)",
    "4 (lease3-4-fresh-checkout, round 5)",
    "5 (lease5-round)",
    "6 (lease6-round, report.json)",
]


def log_sd(values):
    lv = [math.log(v) for v in values]
    m = fmean(lv)
    return math.sqrt(sum((x - m) ** 2 for x in lv) / (len(lv) - 1)) if len(lv) > 1 else float("nan")


def gmean(values):
    return math.exp(fmean(map(math.log, values)))


def machines(files, dirs, dec):
    """Run medians of ``dec`` per machine, as the baseline groups them: boot id, else the results dir."""
    out = {}
    for d in dirs:
        for r in files[f"{d}/runs.jsonl"]:
            if r["decomposition_id"] == dec and r["status"] == "ok":
                out.setdefault(r["env"].get("boot_id") or f"dir:{d}", []).append(r["step_time_median_ms"])
    return out


def main():
    files = raw.load(HERE / "h200-baseline-rounds.jsonl.gz")
    per = {d: list(machines(files, COMMITTED, d).values()) for d in DECS}
    six = {r["decomposition"]: r["step_time_ms"]["median"] for r in files["lease6-round/report.json"]["rows"]}
    for d in DECS:
        per[d].append([six[d]])
    print(
        "| lease | runs | " + " | ".join(f"{d} mean step ms" for d in DECS) + " | " + " / ".join(DECS) + " vs lease 1 |"
    )
    print("|---|---:|" + "---:|" * len(DECS) + "---|")
    for i, name in enumerate(NAMES):
        means = [gmean(per[d][i]) for d in DECS]
        print(
            f"| {name} | {len(per[DECS[0]][i])} | "
            + " | ".join(f"{m:.0f}" for m in means)
            + " | "
            + " / ".join(f"x{m / gmean(per[d][0]):.2f}" for m, d in zip(means, DECS))
            + " |"
        )
    between = {d: log_sd([gmean(g) for g in per[d]]) for d in DECS}
    within = {d: math.sqrt(fmean([log_sd(g) ** 2 for g in per[d] if len(g) > 1])) for d in DECS}
    print(
        "\nLog-sd of the 6 lease means: "
        + ", ".join(f"{d} {between[d]:.1%}" for d in DECS)
        + "; of runs within a lease (pooled over leases with 2+ runs): "
        + ", ".join(f"{d} {within[d]:.1%}" for d in DECS)
        + "."
    )
    t = {d: gmean([v for g in per[d] for v in g]) for d in DECS}
    print(
        f"Over all 6 leases 1x4 takes x{t['1x4'] / t['4x1']:.2f} the step time of 4x1 and 2x2 "
        f"x{t['2x2'] / t['4x1']:.2f}."
    )
    print(
        "\nSmallest estimate the baseline flags (unit: machine, threshold +5%), alone (alpha 0.05) / at the first Holm "
        "step of 3:"
    )
    for d in DECS:
        g = list(machines(files, COMMITTED, d).values())
        first = list(machines(files, FIRST, d).values())
        print(
            f"- {d}: committed (leases 1-5, {sum(map(len, g))} runs) x{smallest_flagged(g, 0.05, 0.05):.2f} / "
            f"x{smallest_flagged(g, 0.05 / 3, 0.05):.2f}; first (leases 1-2) "
            f"x{smallest_flagged(first, 0.05, 0.05):.2f} / "
            f"x{smallest_flagged(first, 0.05 / 3, 0.05):.2f}"
        )


if __name__ == "__main__":
    main()
