"""Issue 13 on the H200, session 19: 4x1 blocks of 1 and 2 steps with --warm-apart, against the k = 3 of sessions 16-17.

    PYTHONPATH=. python docs/results/interleave-h200/session19/analyse.py > docs/results/interleave-h200/session19/analysis.txt

Runs (code 405bdfe), each one device call of
`bash docs/results/interleave-h200/session15/one-call.sh NAME 4x1 MINUTES SEED --warm-apart --block-steps K [--pairs N]`
(raw/device-calls.txt): on one lease (boot 92511ad9) raw/aa9-4x1-k2 (k = 2, 9 minutes) and raw/aa9-4x1-k1 (k = 1, 9 minutes);
on a second lease (boot 7bf11cdf) raw2/aa6-4x1-k2 (k = 2, 6 minutes: what the device time left allowed). All A/A.

a. The verdicts re-judged from blocks.jsonl and each run's own MDS (session 16's section a).
b. Per-pair sigma against block length, over every 4x1 A/A run with --warm-apart (k = 3: session 16's aa10-4x1-wa and session
   17's aa10-4x1-wa2, each on its own lease): the sd of the pair log ratio, its robust sd (IQR / 1.349), the pair sd as the
   launch's Hodges-Lehmann summary sees it (launch_components), the GPU seconds a pair costs (wall_s_per_pair: the two
   blocks and their share of the host canary and gaps), and the variance each costs per GPU-second (sd² x s per pair,
   with a 95% bootstrap interval over pairs, resampled within launches), and the launch sd by moments. The launch summary's
   variance in a launch of m pairs is launch sd² + (HL pair sd)² / m, so HL pair sd² x s per pair is the price of the pair
   part per GPU-second, the part k chooses.
c. The MDS by simulation from each run's own pairs (session 16's section c: pooled, within, nested draws at the launch sd
   measured and at its 90% bound, the run's launch estimates redrawn, Levene's test), at the run's own launch count and
   pairs per launch.
d. 10 GPU-minutes, start-up included: for each run of section b, the plan of paired.launch_plan for 600 s at its costs and
   noise (interleave.plan_for, budget_s = 600), checked by draws from the run's own pairs (simulate.drawn_mds at the launch
   sd measured, as the command's plan line does), and the nightly's 16 launches in the same 600 s, drawn the same way.
e. The GPU as each block ended (NVML): SM clock, clock-event reasons, power, temperature, per run.
"""

import json
import math
import runpy
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from scipy import stats

from harness.commands import interleave as il
from harness.files import read_jsonl
from harness.judging import paired as pd
from harness.judging import simulate as sim

HERE = Path(__file__).parent
RUNS = {"aa9-4x1-k2": HERE / "raw", "aa9-4x1-k1": HERE / "raw", "aa6-4x1-k2": HERE / "raw2"}
EARLIER = {"session16 aa10-4x1-wa": HERE.parent / "session16" / "raw" / "aa10-4x1-wa",
           "session17 aa10-4x1-wa2": HERE.parent / "session17" / "raw" / "aa10-4x1-wa2"}
S16 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session16" / "analyse.py")))
SEED = 1919
BOOT = 2000


def load(path):
    return json.loads((path / "report.json").read_text()), read_jsonl(path / "blocks.jsonl")


def lease(path):
    return (path.parent / "boot_id").read_text()[:8]


def groups_of(rep, blocks):
    st = rep["settings"]
    return il.grouped(il.pairs_of(blocks, st["session_id"]), st["metric"], st["drop_first_step"])


def robust_sd(d):
    return float(stats.iqr(d) / 1.349)


def boot_interval(groups, fn, seed):
    """95% percentile interval of fn(pairs) over BOOT resamples of the pairs, drawn within each launch."""
    rng = np.random.default_rng(seed)
    arr = [np.asarray(g) for g in groups]
    vals = [fn(np.concatenate([g[rng.integers(0, len(g), len(g))] for g in arr])) for _ in range(BOOT)]
    return np.percentile(vals, [2.5, 97.5])


def section_b(every):
    print("\n\nb. per-pair sigma against block length, 4x1 A/A with --warm-apart (log ratio of the block's median step)\n")
    print("  run                      lease     k  pairs  s/pair |    sd   robust  HL pair sd | sd² x s  [95%]             "
          "| robust² x s [95%]           | HL² x s | launch sd")
    for i, (name, (path, rep, blocks)) in enumerate(every.items()):
        groups = groups_of(rep, blocks)
        d = np.concatenate([np.asarray(g) for g in groups])
        s = rep["wall_s_per_pair"]
        c = rep["launch_components"]
        lo, hi = s * boot_interval(groups, lambda x: x.std(ddof=1) ** 2, SEED + i)
        rlo, rhi = s * boot_interval(groups, lambda x: robust_sd(x) ** 2, SEED + 50 + i)
        print(f"  {name:<24} {lease(path)}  {rep['settings']['block_steps']:2d} {len(d):6d} {s:7.2f} | {d.std(ddof=1):6.2%} "
              f"{robust_sd(d):7.2%} {c['pair_sd']:10.2%}  | {d.std(ddof=1) ** 2 * s:.4f} [{lo:.4f}, {hi:.4f}] | "
              f"{robust_sd(d) ** 2 * s:.4f} [{rlo:.4f}, {rhi:.4f}] | {c['pair_sd'] ** 2 * s:.4f}  | {c['launch_sd']:6.2%}")


def section_d(every):
    print("\n\nd. 10 GPU-minutes (600 s, start-up included) at each run's costs and noise: the plan, and the nightly's 16 launches,"
          "\n   drawn from the run's own pairs (simulate.drawn_mds at the launch sd measured; alpha 0.01, power 0.9)\n")
    print("  run                      k | first  later  s/pair | plan L x m  model (est / 90% bound)  drawn | 16 x m  model  drawn")
    for name, (_path, rep, blocks) in every.items():
        groups = groups_of(rep, blocks)
        p = il.plan_for(rep, budget_s=600.0, groups=groups)
        c = rep["launch_components"]
        fits = dict(pd.plans_within(600.0, p["first_s"], p["launch_s"], p["pair_s"], 16, 1, p["hide_s"]))
        m16 = fits.get(16)
        model16 = pd.min_detectable(math.sqrt(c["launch_sd"] ** 2 + c["pair_sd"] ** 2 / m16), 16)
        drawn16 = sim.drawn_mds(groups, 16, m16, c["launch_sd"], c["summary"])
        print(f"  {name:<24} {rep['settings']['block_steps']:1d} | {p['first_s']:5.1f} {p['launch_s']:6.1f} {p['pair_s']:7.2f} | "
              f"{p['launches']:3d} x {p['pairs_per_launch']:2d}  {p['mds_at_estimate']:5.2%} / {p['mds']:5.2%}          "
              f"{p['drawn']['plan']:6.2%} | 16 x {m16:2d} {model16:6.2%} {drawn16:6.2%}")


def section_e(every):
    print("\n\ne. the GPU as each block ended (NVML, one reading per measured block)\n")
    for name, (_path, _rep, blocks) in every.items():
        g = [b["gpu"] for b in blocks if not b["warmup"] and b.get("gpu")]
        if not g:
            print(f"  {name:<24} no per-block GPU readings")
            continue
        clk = [x["sm_clock_mhz"] for x in g]
        reasons = sorted({x["throttle_reasons"] for x in g})
        print(f"  {name:<24} {len(g)} blocks: SM clock {min(clk)}-{max(clk)} MHz (median {np.median(clk):.0f}), reasons {reasons}, "
              f"power {min(x['power_w'] for x in g):.0f}-{max(x['power_w'] for x in g):.0f} W, "
              f"{min(x['temp_c'] for x in g)}-{max(x['temp_c'] for x in g)} C")


def main():
    print("issue 13 on the H200, session 19: 4x1 with blocks of 1 and 2 steps (--warm-apart)\n")
    runs = {n: load(p / n) for n, p in RUNS.items()}
    every = {n: (p / n, *runs[n]) for n, p in RUNS.items()}
    every.update({n: (p, *load(p)) for n, p in EARLIER.items()})
    S16.section_a(runs)
    section_b(every)
    S16.section_c(runs)
    section_d(every)
    section_e(every)


if __name__ == "__main__":
    sys.exit(main())
