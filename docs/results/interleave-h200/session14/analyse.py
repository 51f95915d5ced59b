"""Issue 13 on the H200, session 14: the two 10-minute comparisons session 13's plan called for, and a short check of the
pre-start at the ready on a second lease.

    PYTHONPATH=. python docs/results/interleave-h200/session14/analyse.py > docs/results/interleave-h200/session14/analysis.txt

Runs (two leases):
  raw/aa10-micro-1x4-L20   lease 1 (queue.sh, code 6a730e4): 1x4, --grain micro, k = 1, 20 pre-started launches, 10 GPU-minutes, A/A
  raw/host5-4x1-10         lease 1: 4x1, step grain, k = 3, 16 pre-started launches, 10 GPU-minutes, B +5% host work (own clock)
  raw2/aa45-micro-1x4-L10  lease 2 (lease2.sh, code af5ee16: the next launch pre-starts at the ready, beside the warm-up):
                           1x4, --grain micro, k = 1, 10 pre-started launches, 4.5 GPU-minutes, A/A

a. Launch costs. A pre-started launch's start-up is its build after the release plus a wait for whatever of its imports
   the launch before it did not hide; the model (interleave.prestart_costs, paired.plans_within) says wait = max(0, imports -
   the time they ran beside: the launch before's pairs and stopping, and its warm-up where the run pre-started at the
   ready). Measured against that model, launch by launch. Then a launch's second warm-up step against its recorded
   steps, over the H200 runs of sessions 12-14.
b. Verdicts (the command's own), launch HL summaries and each run's own MDS; for the injected run its nominal share
   against the measured ratio and the over-cost (session 13's section b).
c. Launch components: session 13's estimator (residuals not rescaled, a large-sample HL part) against the current one
   (paired.launch_components), with the permutation test of a launch effect (pairs dealt to launches at random).
d. Lease 1's host: the 1x4 micro-batch times per launch. A micro-batch either took about 290 ms or about 470 ms; the share
   of slow ones (above 380 ms) per side and launch, against the launch's ratio. And whether blocks that ran beside the
   next launch's imports were slower (lease 2 and session 13's lease, where some did and some did not). And the host
   canary's histogram on each lease.
e. Plans for 10 GPU-minutes (interleave.plan_for, least regret between the launch sd's estimate and its 90% bound, with
   the wait of a) for each run and for session 13's 10-minute A/A, and the same L x m drawn from the run's own pairs
   (symmetrised, at the plan's launch sd) where the run has 100 pairs or more.
"""

import math
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from harness.commands import interleave as il
from harness.judging import paired as pd

HERE = Path(__file__).parent
S13 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session13" / "analyse.py")))
lu = S13.lu
RUNS = {"aa10-micro-1x4-L20": HERE / "raw" / "aa10-micro-1x4-L20", "host5-4x1-10": HERE / "raw" / "host5-4x1-10",
        "aa45-micro-1x4-L10": HERE / "raw2" / "aa45-micro-1x4-L10"}
SLOW_MS = 380.0  # between the two speeds of lease 1's micro-batches (about 290 and 470 ms)
SEED = 1414


def section_a(data):
    print("a. launch costs (s): a pre-started launch's start-up = its build after the release + the wait for its imports\n")
    for run, (rep, _, pairs) in data.items():
        at = rep["settings"].get("prestart_at") or "after the warm-up"
        lis = rep["launches"]
        sizes = rep["launch_sizes"]
        print(f"  {run:<19} pre-start {at}; first launch {il.launch_cost(lis[0]):.1f}; pairs per launch {min(sizes)}-{max(sizes)} "
              f"at {rep['wall_s_per_pair']:.2f} s")
        waits, model = [], []
        for prev, li in zip(lis, lis[1:]):
            build = max(li["ready"][s]["startup_wall_s"] for s in il.SIDES)
            imports = max(li["ready"][s]["timing_s"]["preload_s"] for s in il.SIDES)
            n = sum(1 for p in pairs if p["launch"] == prev["launch"])
            beside = n * rep["wall_s_per_pair"] + (prev.get("close_s") or 0.0) + ((prev.get("warmup_s") or 0.0) if at == "ready" else 0.0)
            waits.append(li["startup_s"] - build)
            model.append(max(0.0, imports - beside))
        launch_s, hide_s = il.prestart_costs(rep)
        corr = (f"corr {np.corrcoef(waits, model)[0, 1]:+.2f}, " if np.std(waits) > 0 and np.std(model) > 0 else "")
        print(f"  {'':<19} pre-started: start-up {np.mean([li['startup_s'] for li in lis[1:]]):.1f} (build {launch_s - np.mean([li.get('warmup_s') or 0 for li in lis[1:]]) - np.mean([li.get('close_s') or 0 for li in lis[1:]]):.1f} "
              f"+ wait {np.mean(waits):.1f}), warm-up {np.mean([li.get('warmup_s') or 0 for li in lis[1:]]):.1f}; the wait by the model "
              f"{np.mean(model):.1f} (launch by launch: {corr}mean |error| {np.mean(np.abs(np.subtract(waits, model))):.1f}); "
              f"for a plan of a next run, which pre-starts at the ready: a later launch {launch_s:.1f} s plus max(0, {hide_s:.1f} - its pairs' s)")


def warmup_check():
    """The second warm-up step of each launch and side against the median recorded step of the same launch and side
    (a micro-grain record is one micro-batch: times grad-accum), over the H200 runs of sessions 12-14: is a launch's
    second step already like the rest (then 1-2 warm-up steps do, not the workload's 5)?"""
    print("\n  a launch's second warm-up step / the median recorded step of its launch and side (sessions 12-14):")
    dirs = sorted(p.parent for p in HERE.parent.glob("session1[234]/raw*/*/blocks.jsonl"))
    for d in dirs:
        rep, blocks, _ = S13.read(d)
        per = rep.get("micro_per_step") or 1  # a micro-grain record is one micro-batch
        r = []
        for w in blocks:
            if not w["warmup"] or w.get("calibration") or len(w["step_times_ms"]) < 2:
                continue
            rec = [t for b in blocks if not b["warmup"] and b["side"] == w["side"] and b["launch"] == w["launch"] for t in b["step_times_ms"]]
            if rec:
                r.append(w["step_times_ms"][1] / (float(np.median(rec)) * per))
        if r:
            print(f"    {d.parent.parent.name}/{d.name:<20} {len(r):3d} launch-sides: median {np.median(r):.2f}, 90th percentile "
                  f"{np.quantile(r, 0.9):.2f}; the first step: median {np.median([w['step_times_ms'][0] / 1e3 for w in blocks if w['warmup'] and not w.get('calibration')]):.1f} s")


def section_b(data):
    S13.section_b(data)
    print()
    for run, (rep, _, _) in data.items():
        m = rep["mds"]
        print(f"  {run:<19} own MDS (alpha 0.01, power 0.9, t over {m['units']} launch HL estimates, sd {m['unit_sd']:.2%}): {m['slowdown']:.2%}")


def old_components(groups):
    """Session 13's estimator, for comparison: residuals around each launch's HL not rescaled, the HL part pair_sd² / m
    with pair_sd from the rank interval of the pooled residuals."""
    gs = [list(g) for g in groups if len(g) >= 2]
    centre = [pd.hodges_lehmann(g) for g in gs]
    resid = [x - c for g, c in zip(gs, centre) for x in g]
    pair_sd = pd.rank_estimate(resid, 0.05).sd
    var, part = float(np.var(centre, ddof=1)), pair_sd ** 2 * float(np.mean([1 / len(g) for g in gs]))
    return pair_sd, math.sqrt(max(var - part, 0.0))


def section_c(data):
    print("\n\nc. launch components: session 13's estimator against the current one (paired.launch_components), and the "
          f"permutation test ({S13.PERMS} permutations)\n")
    for i, (run, (_, _, pairs)) in enumerate(data.items()):
        groups = S13.launch_groups(pairs)
        old_pair, old_tau = old_components(groups)
        c = pd.launch_components(groups)
        obs, null_var, p = S13.permutation_launch(groups, SEED + i)
        print(f"  {run:<19} {len(groups)} launches of {min(map(len, groups))}-{max(map(len, groups))} pairs: session 13's: pair sd "
              f"{old_pair:.2%}, launch sd {old_tau:.2%}; current: pair sd {c.pair_sd:.2%}, launch sd {c.launch_sd:.2%} (90% upper "
              f"bound {c.launch_sd_upper:.2%}); launch HL sd {obs:.2%} against {math.sqrt(null_var):.2%} permuted, p = {p:.3f}")


def micro_times(blocks, side, launch):
    return [t for b in blocks if not b["warmup"] and b["side"] == side and b["launch"] == launch for t in b["step_times_ms"]]


def section_d(data):
    print(f"\n\nd. the host: 1x4 micro-batch times per launch, and the share above {SLOW_MS:.0f} ms per side\n")
    rep, blocks, pairs = data["aa10-micro-1x4-L20"]
    groups = {p["launch"]: [] for p in pairs}
    for p, x in zip(pairs, S13.d_of(pairs)):
        groups[p["launch"]].append(float(x))
    all_t = np.array([t for b in blocks if not b["warmup"] for t in b["step_times_ms"]])
    hist = np.histogram(all_t, bins=[0, 250, 300, 350, 400, 450, 500, 550, 2000])[0]
    print("  aa10-micro-1x4-L20, all micro-batches: " + ", ".join(f"{a}-{b} ms {n}" for a, b, n in
                                                                 zip([0, 250, 300, 350, 400, 450, 500, 550], [250, 300, 350, 400, 450, 500, 550, "+"], hist)))
    diff, ratio = [], []
    for lc in sorted(groups):
        a, b = micro_times(blocks, "a", lc), micro_times(blocks, "b", lc)
        sa, sb = np.mean(np.array(a) > SLOW_MS), np.mean(np.array(b) > SLOW_MS)
        diff.append(sb - sa)
        ratio.append(pd.hodges_lehmann(groups[lc]))
        print(f"  launch {lc:2d}: median A {np.median(a):4.0f} ms, B {np.median(b):4.0f} ms; slow share A {sa:.2f}, B {sb:.2f}; "
              f"launch HL x{math.exp(ratio[-1]):.4f}")
    print(f"  correlation of the launch HL log ratio with (B's slow share - A's): {np.corrcoef(diff, ratio)[0, 1]:+.2f} over {len(ratio)} launches")
    for run, blks in (("aa10-micro-1x4-L20", blocks), ("aa45-micro-1x4-L10", data["aa45-micro-1x4-L10"][1]),
                      ("session13 aa10-micro-1x4", S13.read(HERE.parent / "session13" / "raw" / "aa10-micro-1x4")[1])):
        u = [b for b in blks if not b["warmup"]]
        busy = np.array([(b.get("other_cpus") or 0.0) > 0.5 for b in u])
        t = np.array([float(np.mean(b["step_times_ms"])) for b in u])
        slow = np.mean(np.array([x for b in u for x in b["step_times_ms"]]) > SLOW_MS)
        beside = (f"median {np.median(t[busy]):.0f} ms beside the imports, {np.median(t[~busy]):.0f} ms without"
                  if busy.any() and (~busy).any() else f"every block beside them ({busy.mean():.0%}): no comparison")
        print(f"  {run:<25} slow share {slow:.2f}; blocks beside more than half a busy CPU {busy.mean():.0%}: {beside}")
    print("\n  the host canary (a fixed 1.3 ms Python loop before each block), in multiples of its median: two speeds on every lease")
    for run, blks in (("aa10-micro-1x4-L20", blocks), ("host5-4x1-10", data["host5-4x1-10"][1]), ("aa45-micro-1x4-L10", data["aa45-micro-1x4-L10"][1]),
                      ("session13 aa10-micro-1x4", S13.read(HERE.parent / "session13" / "raw" / "aa10-micro-1x4")[1])):
        c = np.array([b["canary_ms"] for b in blks if not b["warmup"] and b.get("canary_ms")])
        edges = [0, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.8, 9]
        h = np.histogram(c / np.median(c), bins=edges)[0]
        lo = float(np.quantile(c, 0.25))
        print(f"  {run:<25} " + " ".join(f"{a:g}-{b:g}: {n}" for a, b, n in zip(edges, edges[1:], h))
              + f"; above 1.3 x its 25th percentile ({lo:.2f} ms): {np.mean(c > 1.3 * lo):.0%}")


def section_e(data):
    print("\n\ne. plans for 10 GPU-minutes (interleave.plan_for), and the same L x m drawn from the run's pairs (symmetrised, "
          f"at the plan's launch sd, {lu.REPS} replicates)\n")
    runs = dict(data)
    runs["session13 aa10-micro-1x4"] = S13.read(HERE.parent / "session13" / "raw" / "aa10-micro-1x4")
    dirs = dict(RUNS, **{"session13 aa10-micro-1x4": HERE.parent / "session13" / "raw" / "aa10-micro-1x4"})
    for i, (run, (r, _, prs)) in enumerate(runs.items()):
        full = dict(r, **il.reanalyse(dirs[run]))
        p = il.plan_for(full, 600.0)
        y = S13.d_of(prs)
        y = y - y.mean()
        drawn = ""
        if len(prs) >= 100:
            summ, _ = lu.draw(np.concatenate([y, -y]), lu.REPS, p["launches"], p["pairs_per_launch"], p["launch_sd"], SEED + 100 + i)
            drawn = f", {lu.mds(summ['hl']):.2%} drawn"
        print(f"  {run:<25} later launch {p['launch_s']:.1f} s + max(0, {p['hide_s']:.1f} s - pairs), pair {p['pair_s']:.2f} s; pair sd "
              f"{p['pair_sd']:.2%}, launch sd {p['launch_sd']:.2%} (bound {p['launch_sd_planned']:.2%}): --launches {p['launches']} of "
              f"{p['pairs_per_launch']}: {p['mds_at_estimate']:.2%} at the estimate{drawn}, {p['mds']:.2%} at the bound")


def main():
    print("issue 13 on the H200, session 14\n")
    data = {run: S13.read(d) for run, d in RUNS.items()}
    section_a(data)
    warmup_check()
    section_b(data)
    section_c(data)
    section_d(data)
    section_e(data)


if __name__ == "__main__":
    main()
