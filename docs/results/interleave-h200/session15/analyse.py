"""Issue 13 on the H200, session 15: a 1x4 A/A run as the nightly runs it, 16 launches in 10 GPU-minutes, cut at launch 15.

    PYTHONPATH=. python docs/results/interleave-h200/session15/analyse.py > docs/results/interleave-h200/session15/analysis.txt

Run (one lease, boot e6e98b8b, code a93e990): raw/aa10-1x4, started by queue.sh in the background and polled by poll.sh.
The first poll packed /tmp/s15 540 s after the start, during launch 15 of 16. The lease was gone before the second poll
(raw/device-calls.txt), so the run has blocks.jsonl and the worker logs but no report.json. The run predates
progress.json, so `python -m harness recover` refuses it; the analysis below is the command's own (`interleave.analyse`)
of the blocks kept, at the run's settings (threshold +2%, alpha 0.05, one look, the launch as the unit).

a. The verdict and its own MDS: every kept pair (launch 15 had made 1 pair when the tarball was made), and launches 1-14
   only (each complete; what a finished run's verdict would have rested on, less launches 15-16).
b. Where the 510 s of blocks went: pairs, warm-up (2 steps per side and launch), the gaps between launches (stopping +
   the next launch's build), per launch; and each worker's first step.
c. The host: the canary (a fixed CPU loop before each block) per launch and side; whether the slow stretches differ
   between the sides within a launch (they would bias the launch's ratio) or hit both.
d. Plans for 10 GPU-minutes at this run's costs and noise (paired.launch_plan, least regret between the launch sd's
   estimate and its 90% bound), the nightly's 16 launches at the same costs, and both drawn from the run's own pairs
   (symmetrised, with a N(0, launch sd) offset per launch; launch_unit.draw).
e. The warm-up order. A launch warms up A first when its number is odd, B first when even (interleave: the order
   alternates by launch). Over every stored run of 4 or more launches with both orders (docs/results/interleave-h200 and
   interleave-cpu): the mean launch HL log ratio of A-first launches minus that of B-first ones (negative: the side that
   warms up first is slower for the rest of its launch), a sign test over runs (scipy.stats.binomtest), and what an
   analysis blocked by the order (t with L - 2 df on the residuals within the two orders) would do to each run's MDS.
"""

import math
import runpy
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

from harness.commands import interleave as il
from harness.files import read_jsonl
from harness.judging import paired as pd

HERE = Path(__file__).parent
RUN = HERE / "raw" / "aa10-1x4"
S13 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session13" / "analyse.py")))
lu = S13.lu
SETTINGS = {"alpha": 0.05, "threshold": 0.02, "looks": 1}  # the run's (aa10-1x4.log, line 3)
BUDGET_S, SEED = 600.0, 1515


def verdict_line(name, r):
    v, m, c = r["verdict"], r["mds"], r["launch_components"]
    print(f"  {name}: {v['outcome']}, x{v['ratio']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}], {v['pairs']} pairs, {v['n_units']} launches; "
          f"pair sigma {v['sigma_pair']:.2%}; launch HL sd {m['unit_sd']:.2%}; own MDS {m['slowdown']:.2%} (alpha 0.01, power 0.9; "
          f"{m['units_for_3pct']} launches for 3%)")
    print(f"    launch components: pair sd {c['pair_sd']:.2%} as the HL summary sees it, launch sd {c['launch_sd']:.2%} "
          f"(90% bound {c['launch_sd_upper']:.2%}); F test of a launch effect p = {v['launch_check']['p']:.3f}")


def section_a(blocks):
    print("a. the verdict of the kept blocks (interleave.analyse at the run's settings)\n")
    verdict_line("all kept pairs (launches 1-15)", il.analyse(blocks, **SETTINGS))
    r14 = il.analyse([b for b in blocks if b["launch"] <= 14], **SETTINGS)
    verdict_line("launches 1-14 (complete)", r14)
    return r14


def section_b(blocks):
    print("\n\nb. where the time went (s): per launch, warm-up blocks, pair blocks, gap before it (stopping + build)\n")
    by = defaultdict(list)
    for x in blocks:
        by[x["launch"]].append(x)
    prev_end, tot = None, defaultdict(float)
    print("  launch  warm-up  pairs  gap   first steps A, B (ms)")
    for n in sorted(by):
        xs = sorted(by[n], key=lambda x: x["started_at"])
        warm = sum(x["wall_s"] for x in xs if x["warmup"])
        pairs = sum(x["wall_s"] for x in xs if not x["warmup"])
        gap = xs[0]["started_at"] - prev_end if prev_end is not None else float("nan")
        first = {x["side"]: x["step_times_ms"][0] for x in xs if x["warmup"]}
        print(f"  {n:6d} {warm:8.1f} {pairs:6.1f} {gap:5.1f}   {first['a']:5.0f}, {first['b']:5.0f}")
        tot["warm-up"] += warm
        tot["pairs"] += pairs
        tot["gaps"] += 0.0 if math.isnan(gap) else gap
        prev_end = xs[-1]["started_at"] + xs[-1]["wall_s"]
    span = prev_end - min(x["started_at"] for x in blocks)
    print(f"\n  first block to last: {span:.0f} s; " + ", ".join(f"{k} {v:.0f} s ({v / span:.0%})" for k, v in tot.items())
          + "; launch 1's start-up (32.0 s, aa10-1x4.log) before that")
    later = [n for n in sorted(by) if 1 < n < 15]
    return by, later


def costs(by, later):
    """The first launch's cost, a later one's (warm-up + the gap before the next: stopping + build), and the mean pair."""
    def warm(n):
        return sum(x["wall_s"] for x in by[n] if x["warmup"])

    def start(n):
        return min(x["started_at"] for x in by[n])

    def end(n):
        return max(x["started_at"] + x["wall_s"] for x in by[n])

    first = 32.0 + warm(1) + (start(2) - end(1))  # ready in 32.0 s (aa10-1x4.log)
    later_s = float(np.mean([warm(n) + (start(n + 1) - end(n)) for n in later]))
    return first, later_s


def section_c(blocks, r):
    print("\n\nc. the host canary (ms) per launch and side, and each launch's ratio\n")
    can = defaultdict(list)
    for x in blocks:
        if not x["warmup"]:
            can[(x["launch"], x["side"])].append(x["canary_ms"])
    allc = np.concatenate([np.array(v) for v in can.values()])
    slow = 1.25 * float(np.median(allc))
    print(f"  canary percentiles 5/25/50/75/95: {', '.join(f'{q:.2f}' for q in np.percentile(allc, [5, 25, 50, 75, 95]))}; "
          f"'slow' above {slow:.2f}")
    print("  launch  median A  median B  slow A  slow B  launch ratio (HL)")
    ratios = r["verdict"]["launch_check"]["ratios"]
    xs, ys = [], []
    for n in sorted({k[0] for k in can}):
        a, b = np.array(can[(n, "a")]), np.array(can[(n, "b")])
        print(f"  {n:6d} {np.median(a):9.2f} {np.median(b):9.2f} {np.mean(a > slow):7.0%} {np.mean(b > slow):7.0%}  x{ratios[n - 1]:.3f}")
        xs.append(math.log(np.median(b) / np.median(a)))
        ys.append(math.log(ratios[n - 1]))
    slow_share = [np.mean(np.array(can[(n, s)]) > slow) for n in sorted({k[0] for k in can}) for s in "ab"]
    print(f"\n  slow share per launch and side: {min(slow_share):.0%} to {max(slow_share):.0%}; correlation of log(B/A canary "
          f"median) with the launch's log ratio: {np.corrcoef(xs, ys)[0, 1]:+.2f} over {len(xs)} launches")


def section_d(r14, by, later, pairs):
    print(f"\n\nd. plans for {BUDGET_S / 60:g} GPU-minutes at this run's costs and noise (launches 1-14), and drawn from its pairs "
          f"({lu.REPS} replicates)\n")
    first, later_s = costs(by, later)
    pair_s = r14["wall_s_per_pair"]
    c = r14["launch_components"]
    print(f"  first launch {first:.1f} s, later launch {later_s:.1f} s (warm-up + stopping + build; no wait for imports: every "
          f"pre-started launch was ready in 3.4-5.6 s), pair {pair_s:.2f} s; pair sd {c['pair_sd']:.2%}, launch sd "
          f"{c['launch_sd']:.2%} (bound {c['launch_sd_upper']:.2%})")
    y = S13.d_of([p for p in pairs if p["launch"] <= 14])
    y = np.concatenate([y - y.mean(), -(y - y.mean())])
    best = pd.launch_plan(BUDGET_S, first, later_s, pair_s, c["pair_sd"], c["launch_sd"], launch_sd_hi=c["launch_sd_upper"])
    rows = [("least-regret plan", best.launches, best.pairs_per_launch)]
    m16 = int((BUDGET_S - first - 15 * later_s) / (16 * pair_s))
    rows.append(("the nightly's --launches 16", 16, m16))
    for i, (name, n, m) in enumerate(rows):
        at_est = pd.min_detectable(math.sqrt(c["launch_sd"] ** 2 + c["pair_sd"] ** 2 / m), n, 0.01, 0.9)
        at_hi = pd.min_detectable(math.sqrt(c["launch_sd_upper"] ** 2 + c["pair_sd"] ** 2 / m), n, 0.01, 0.9)
        summ, _ = lu.draw(y, lu.REPS, n, m, c["launch_sd"], SEED + i)
        print(f"  {name:<28} {n:2d} launches of {m:2d} pairs: {at_est:.2%} at the launch sd's estimate, {lu.mds(summ['hl']):.2%} drawn, "
              f"{at_hi:.2%} at its bound")
    for tau, why in ((0.0, "no launch effect"), (0.0106, "sessions 6-8's pooled estimate")):
        p = pd.launch_plan(BUDGET_S, first, later_s, pair_s, c["pair_sd"], tau)
        print(f"  at a launch sd of {tau:.2%} ({why}), the same costs and pair sd: best {p.launches} launches of "
              f"{p.pairs_per_launch}: {p.mds:.2%}")


def order_effect(run_dir):
    """(launches, A-first minus B-first mean launch HL log ratio, plain MDS, MDS blocked by the warm-up order), or None."""
    blocks = read_jsonl(run_dir / "blocks.jsonl")
    pairs = il.pairs_of(blocks)
    first = {}
    for x in sorted((x for x in blocks if x["warmup"] and not x.get("calibration")), key=lambda x: x["started_at"]):
        first.setdefault(x["launch"], x["side"])
    hl = {"a": [], "b": []}
    for n, xs in zip(sorted({p["launch"] for p in pairs}), il.grouped(pairs)):
        hl[first[n]].append(pd.hodges_lehmann(xs))
    a, b = np.array(hl["a"]), np.array(hl["b"])
    n = len(a) + len(b)
    if n < 4 or min(len(a), len(b)) < 2:
        return None

    def mds(se, df):
        return (stats.t.ppf(0.99, df) + stats.t.ppf(0.9, df)) * se

    plain = mds(np.concatenate([a, b]).std(ddof=1) / math.sqrt(n), n - 1)
    within = math.sqrt((((a - a.mean()) ** 2).sum() + ((b - b.mean()) ** 2).sum()) / (n - 2))
    return n, float(a.mean() - b.mean()), plain, mds(within * 0.5 * math.sqrt(1 / len(a) + 1 / len(b)), n - 2)


def stored_by_session15(run_dir):
    """A run stored up to session 15 (later sessions' runs, in sessionNN/ folders, would change this page's figures)."""
    return not any(p.startswith("session") and p[7:].isdigit() and int(p[7:]) > 15 for p in run_dir.parts)


def section_e():
    print("\n\ne. the warm-up order: A-first launches (odd) against B-first ones (even), over the stored runs of 4+ launches\n")
    results = HERE.parent.parent
    for name in ("interleave-h200", "interleave-cpu"):
        rows = [(d.relative_to(results), r) for d in sorted(p.parent for p in (results / name).rglob("blocks.jsonl"))
                if stored_by_session15(d) and (r := order_effect(d)) is not None]
        diffs = np.array([r[1] for _, r in rows])
        neg = int((diffs < 0).sum())
        ci = stats.t.interval(0.95, len(diffs) - 1, diffs.mean(), stats.sem(diffs))
        better = sum(r[3] < r[2] for _, r in rows)
        ratio = np.median([r[3] / r[2] for _, r in rows])
        print(f"  {name}: {len(rows)} runs; A-first minus B-first {diffs.mean():+.2%} [95% {ci[0]:+.2%}, {ci[1]:+.2%}] (mean over runs); "
              f"negative in {neg}, sign test p = {stats.binomtest(neg, len(rows)).pvalue:.3f}; blocked by the order, the MDS is lower in "
              f"{better} of {len(rows)}, median ratio x{ratio:.3f}")
        for d, r in rows:
            if abs(r[1]) >= 0.05:
                print(f"    {str(d):<52} {r[0]:2d} launches: {r[1]:+.2%}; MDS plain {r[2]:.2%}, blocked {r[3]:.2%}")


def main():
    print("issue 13 on the H200, session 15\n")
    blocks = read_jsonl(RUN / "blocks.jsonl")
    pairs = il.pairs_of(blocks)
    r14 = section_a(blocks)
    by, later = section_b(blocks)
    section_c(blocks, il.analyse(blocks, **SETTINGS))
    section_d(r14, by, later, pairs)
    section_e()


if __name__ == "__main__":
    main()
