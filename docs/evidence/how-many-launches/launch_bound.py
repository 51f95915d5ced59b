"""How much do launches add on the H200, pooled over the eight interleaved comparisons with both workers on one CPU?

For each comparison: the pair log ratios d (median of each block) grouped by launch, the comparison's own grand mean
removed; a one-way random-effects model d = mu + u_launch + e_pair. Pooled over comparisons: SS and df between launches
(within comparisons) and within launches; the F test of "launches add nothing" (tau = 0); the method-of-moments launch
variance tau^2 = (MS_between - MS_within) / n0 (n0: the usual effective pairs per launch); and a one-sided 95% upper
bound on tau from the chi-square bound on MS_between: (SS_between / chi2_0.05(df_between) - MS_within) / n0.
Stdlib and scipy only, from the compressed raw data:

    python docs/evidence/how-many-launches/launch_bound.py
"""

import math
import sys
from pathlib import Path
from statistics import median

from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import raw  # noqa: E402

SOURCES = {  # experiment file: the comparisons in it with both workers on one CPU
    HERE.parent / "interleaving-on-the-h200" / "h200-two-gpu-lease.jsonl.gz": [
        "one-cpu-4-launches/aa-4x1-c",
        "one-cpu-4-launches/tf-4x1",
        "one-cpu-4-launches/work-4x1-c",
        "one-cpu-2-launches/aa-1x4-d",
        "one-cpu-2-launches/work-1x4-d",
    ],
    HERE.parent / "is-injected-5pct-flagged-on-the-h200" / "h200-casts-sized-by-wall-ratio.jsonl.gz": [
        "work5-1",
        "work5-2",
        "work5-3",
    ],
}


def launch_groups(blocks):
    """The pair log ratios (median of each block) of one comparison, one list per launch, in launch order."""
    pairs: dict = {}
    for b in blocks:
        if not b["warmup"]:
            pairs.setdefault((b["launch"], b["pair"]), {})[b["side"]] = median(b["step_times_ms"])
    groups: dict = {}
    for (launch, _), p in pairs.items():
        if len(p) == 2:
            groups.setdefault(launch, []).append(math.log(p["b"] / p["a"]))
    return [g for g in groups.values() if g]


def main():
    ss_b = ss_w = 0.0
    df_b = df_w = 0
    n0_num = n0_den = 0.0
    for path, names in SOURCES.items():
        files = raw.load(path)
        for name in names:
            gs = launch_groups(files[f"{name}/blocks.jsonl"])
            n = sum(map(len, gs))
            grand = sum(map(sum, gs)) / n
            sb = sum(len(g) * (sum(g) / len(g) - grand) ** 2 for g in gs)
            sw = sum((x - sum(g) / len(g)) ** 2 for g in gs for x in g)
            ss_b, ss_w, df_b, df_w = ss_b + sb, ss_w + sw, df_b + len(gs) - 1, df_w + n - len(gs)
            n0 = (n - sum(len(g) ** 2 for g in gs) / n) / (len(gs) - 1) if len(gs) > 1 else 0.0
            n0_num += n0 * (len(gs) - 1)
            n0_den += len(gs) - 1
            f = (sb / (len(gs) - 1)) / (sw / (n - len(gs))) if len(gs) > 1 else float("nan")
            print(
                f"{name:30s} launches {len(gs)}, pairs {n}, sizes {[len(g) for g in gs]}, launch means "
                f"{[round(math.exp(sum(g) / len(g)), 4) for g in gs]}, F {f:.2f}"
            )
    ms_b, ms_w = ss_b / df_b, ss_w / df_w
    n0 = n0_num / n0_den
    f = ms_b / ms_w
    p = stats.f.sf(f, df_b, df_w)
    tau2 = max(0.0, (ms_b - ms_w) / n0)
    tau2_up = max(0.0, (ss_b / stats.chi2.ppf(0.05, df_b) - ms_w) / n0)
    print(f"\npooled: df between {df_b}, within {df_w}; pair sd {math.sqrt(ms_w):.2%}; n0 {n0:.1f} pairs per launch")
    print(
        f"F({df_b}, {df_w}) = {f:.2f}, p = {p:.3f}; launch sd (moments) {math.sqrt(tau2):.2%}; one-sided 95% upper "
        f"bound {math.sqrt(tau2_up):.2%}"
    )


if __name__ == "__main__":
    main()
