"""Issue 13 on the H200, session 20: three 4x1 A/As at k = 1 (the default since session 19), each on a lease of its own.

    PYTHONPATH=. python docs/results/interleave-h200/session20/analyse.py > docs/results/interleave-h200/session20/analysis.txt

Runs (code c4d0bf0), each one device call of
`bash docs/results/interleave-h200/session15/one-call.sh NAME 4x1 MINUTES SEED --warm-apart --pairs 800`
(device-calls.txt), with give_back between calls: raw1/aa9-4x1-k1-L1 (9 minutes, boot 1b22e146), raw2/aa7-4x1-k1-L2
(7 minutes, boot 12632dee), raw3/aa6-4x1-k1-L3 (6 minutes, boot 03fe7247); 7 and 6 because a refused call cost 90 s of
the device time. With them, session 19's aa9-4x1-k1 (boot 92511ad9): four k = 1 runs on four leases.

a. The verdicts re-judged from blocks.jsonl and each run's own MDS (session 16's section a).
b. Per-pair sigma and its price per GPU-second (session 19's section b), for the four k = 1 runs and, for reference,
   session 19's k = 2 and sessions 16-17's k = 3 runs.
c. The MDS by simulation from each run's own pairs, at its own launch count and pairs per launch (session 16's section c).
d. 10 GPU-minutes, start-up included (session 19's section d): for each run, the plan for 600 s at its costs and noise, and
   the nightly's 16 launches in the same 600 s, both drawn from the run's own pairs.
e. The GPU as each block ended (session 19's section e).
f. The nightly's launch count: 10 GPU-minutes split into 16, 20, 24 or 28 launches, drawn from the pairs of the four k = 1
   4x1 runs and of sessions 16-17's three 1x4 runs at the micro grain (the nightly runs both decompositions with one
   --launches).
g. Done-when point 2 for 4x1, lease by lease: the run's own MDS (its own minutes), and 10 minutes drawn from its pairs at
   the plan and at the nightly's launch count, against 3%.
h. At the nightly's launch count, drawn as in f: the level of point 2's test, and how often the nightly's own verdict
   calls a regression at x1.00, x1.03 and x1.05 (false alarms, and the power behind Done-when point 4).
"""

import math
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

from harness.commands import interleave as il
from harness.judging import paired as pd
from harness.judging import simulate as sim

HERE = Path(__file__).parent
S16 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session16" / "analyse.py")))
S19 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session19" / "analyse.py")))
RUNS = {"aa9-4x1-k1-L1": HERE / "raw1", "aa7-4x1-k1-L2": HERE / "raw2", "aa6-4x1-k1-L3": HERE / "raw3"}
EARLIER = {"session19 aa9-4x1-k1": HERE.parent / "session19" / "raw" / "aa9-4x1-k1",
           "session19 aa9-4x1-k2": HERE.parent / "session19" / "raw" / "aa9-4x1-k2",
           "session19 aa6-4x1-k2": HERE.parent / "session19" / "raw2" / "aa6-4x1-k2",
           "session16 aa10-4x1-wa": HERE.parent / "session16" / "raw" / "aa10-4x1-wa",
           "session17 aa10-4x1-wa2": HERE.parent / "session17" / "raw" / "aa10-4x1-wa2"}
GOAL = 0.03


LAUNCH_COUNTS = (16, 20, 24, 28)
NIGHTLY = 20  # the nightly's --launches, from section f
PAIRS_CAP = 800  # the nightly's --pairs
ONE_BY_FOUR = {"session16 aa10-1x4-wa": HERE.parent / "session16" / "raw" / "aa10-1x4-wa",
               "session16 host5-1x4-wa": HERE.parent / "session16" / "raw" / "host5-1x4-wa",
               "session17 aa10-1x4-wa2": HERE.parent / "session17" / "raw" / "aa10-1x4-wa2"}


def ten_minutes(rep, blocks, counts):
    """The plan for 600 s at the run's costs and noise, and {L: (m, drawn MDS, model MDS at the launch sd's 90% bound)}
    for each launch count in ``counts`` that 600 s give a pair per launch or more (paired.plans_within)."""
    groups = S19.groups_of(rep, blocks)
    p = il.plan_for(rep, budget_s=600.0, groups=groups)
    c = rep["launch_components"]
    fits = dict(pd.plans_within(600.0, p["first_s"], p["launch_s"], p["pair_s"], max(counts), 1, p["hide_s"]))
    at = {}
    for n in counts:
        if n in fits:
            m = fits[n]
            at[n] = (m, sim.drawn_mds(groups, n, m, c["launch_sd"], c["summary"]),
                     pd.min_detectable(math.sqrt(c["launch_sd_upper"] ** 2 + c["pair_sd"] ** 2 / m), n))
    return p, at


def section_f(every):
    print("\n\nf. The nightly's launch count: 10 GPU-minutes (600 s, start-up included) split into L launches, at each run's costs,"
          "\n   drawn from its own pairs at its launch sd (simulate.drawn_mds; alpha 0.01, power 0.9), and in brackets the model at"
          "\n   the launch sd's 90% upper bound; 4x1 at k = 1 (step grain) and the 1x4 runs at the micro grain of sessions 16-17."
          "\n   '-': 600 s do not hold that many launches that hide the next one's imports\n")
    print("  run                      dec grain | plan L x m  drawn | " + " | ".join(f"L = {n}: m  drawn  [bound]" for n in LAUNCH_COUNTS))
    worst = {}
    for name, (_path, rep, blocks) in every.items():
        p, at = ten_minutes(rep, blocks, LAUNCH_COUNTS)
        cells = []
        for n in LAUNCH_COUNTS:
            if n in at:
                m, d, hi = at[n]
                worst[n] = max(worst.get(n, 0.0), d)
                cells.append(f"{m:11d} {d:6.2%} [{hi:5.2%}]")
            else:
                worst[n] = math.inf
                cells.append(f"{'-':>27}")
        print(f"  {name:<24} {rep['settings']['decomposition']} {rep['grain']:<5} | {p['launches']:3d} x {p['pairs_per_launch']:2d} "
              f"{p['drawn']['plan']:6.2%} | " + " | ".join(cells))
    for name, (_path, rep, blocks) in every.items():  # where the nightly's --pairs cap, not its budget, ends the run
        p, at = ten_minutes(rep, blocks, (NIGHTLY,))
        if at[NIGHTLY][0] * NIGHTLY > PAIRS_CAP:
            m = PAIRS_CAP // NIGHTLY
            c = rep["launch_components"]
            took = p["first_s"] + (NIGHTLY - 1) * p["launch_s"] + PAIRS_CAP * p["pair_s"]
            print(f"\n  {name}: 600 s hold {NIGHTLY} x {at[NIGHTLY][0]} pairs, more than the nightly's --pairs {PAIRS_CAP}: it stops at "
                  f"{NIGHTLY} x {m} after about {took:.0f} s, drawn MDS {sim.drawn_mds(S19.groups_of(rep, blocks), NIGHTLY, m, c['launch_sd'], c['summary']):.2%}")
    print("\n  largest drawn MDS over these runs: " + ", ".join(f"L = {n}: {w:.2%}" if w < math.inf else f"L = {n}: does not fit"
                                                         for n, w in worst.items()))


def section_g(k1):
    print("\n\ng. Done-when point 2 for 4x1 at k = 1, lease by lease (MDS at alpha 0.01, power 0.9; goal <= 3% in <= 10 GPU-minutes,"
          f"\n   start-up included): the run's own MDS in its own minutes, and 10 minutes drawn from its pairs at the plan and at"
          f"\n   the nightly's {NIGHTLY} launches\n")
    print(f"  run                      lease     minutes  own MDS | 10 min: plan drawn  {NIGHTLY} launches drawn | 10 min <= 3%")
    met = 0
    for name, (path, rep, blocks) in k1.items():
        p, at = ten_minutes(rep, blocks, (NIGHTLY,))
        n = at[NIGHTLY][1]
        ok = max(p["drawn"]["plan"], n) <= GOAL
        met += ok
        print(f"  {name:<24} {S19.lease(path)}  {rep['settings']['budget_minutes']:5.0f}  {rep['mds']['slowdown']:7.2%} | "
              f"{p['drawn']['plan']:15.2%} {n:18.2%} | {'yes' if ok else 'no'}")
    print(f"\n  met on {met} of {len(k1)} leases")


def drawn_rates(groups, launches, pairs, launch_sd, summary, reps=2000, seed=2020):
    """Draws as simulate.drawn_mds makes them (the run's launch residuals, mirrored; ``launches`` x ``pairs`` with
    replacement plus a N(0, launch sd) offset, each launch summarised): the fraction of replicates in which the one-sided t
    test over the launch summaries rejects "ratio <= 1" at 0.01 with no slowdown (its level), and in which the nightly's
    rule (PairedCheck: alpha 0.05 in one look, "ratio <= 1.02" rejected) calls a regression at x1.00, x1.03 and x1.05."""
    sm = sim.drawn_summaries(groups, launches, pairs, launch_sd, summary, reps, seed)
    mean, se = sm.mean(axis=-1), sm.std(axis=-1, ddof=1) / math.sqrt(launches)
    level = float(np.mean(mean / se > stats.t.ppf(0.99, launches - 1)))
    flag = {r: float(np.mean((mean + math.log(r) - math.log(1.02)) / se > stats.t.ppf(0.95, launches - 1))) for r in (1.0, 1.03, 1.05)}
    return level, flag


def section_h(every):
    print(f"\n\nh. At the nightly's {NIGHTLY} launches in 600 s, drawn as in section f ({2000} replicates, seed 2020): the level of the"
          "\n   t test of Done-when point 2 (alpha 0.01 against x1.00), and how often the nightly's verdict (alpha 0.05, threshold"
          "\n   +2%) calls a regression at a true x1.00, x1.03 and x1.05\n")
    print("  run                      dec  L x m   | level at 0.01 | regression at x1.00  x1.03  x1.05")
    for name, (_path, rep, blocks) in every.items():
        _p, at = ten_minutes(rep, blocks, (NIGHTLY,))
        m = min(at[NIGHTLY][0], PAIRS_CAP // NIGHTLY)
        c = rep["launch_components"]
        level, flag = drawn_rates(S19.groups_of(rep, blocks), NIGHTLY, m, c["launch_sd"], c["summary"])
        print(f"  {name:<24} {rep['settings']['decomposition']} {NIGHTLY:3d} x {m:2d} | {level:13.3f} | "
              f"{flag[1.0]:19.3f} {flag[1.03]:6.3f} {flag[1.05]:6.3f}")


def main():
    print("issue 13 on the H200, session 20: 4x1 A/A at k = 1 on three more leases\n")
    runs = {n: S19.load(p / n) for n, p in RUNS.items()}
    every = {n: (p / n, *runs[n]) for n, p in RUNS.items()}
    every.update({n: (p, *S19.load(p)) for n, p in EARLIER.items()})
    S16.section_a(runs)
    S19.section_b(every)
    S16.section_c(runs)
    S19.section_d(every)
    S19.section_e({n: v for n, v in every.items() if n in RUNS})
    k1 = {n: v for n, v in every.items() if v[1]["settings"]["block_steps"] == 1}
    section_f({**k1, **{n: (p, *S19.load(p)) for n, p in ONE_BY_FOUR.items()}})
    section_g(k1)
    section_h({**k1, **{n: (p, *S19.load(p)) for n, p in ONE_BY_FOUR.items()}})


if __name__ == "__main__":
    sys.exit(main())
