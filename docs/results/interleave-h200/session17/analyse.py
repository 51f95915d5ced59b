"""Issue 13 on the H200, session 17: the three --warm-apart comparisons of session 16 on a second lease, 4x1 twice.

    PYTHONPATH=. python docs/results/interleave-h200/session17/analyse.py > docs/results/interleave-h200/session17/analysis.txt

Runs (one lease, boot feaf0025, code 30a06f3), each one device call of
`bash docs/results/interleave-h200/session15/one-call.sh NAME DEC 9 SEED --warm-apart [...]` (raw/device-calls.txt):
raw/aa10-4x1-wa2 (4x1 A/A), raw/aa10-1x4-wa2 (1x4 A/A), raw/host5-4x1-wa2 (4x1, B with host work sized for +5%).

a. The verdicts re-judged from blocks.jsonl and each run's own MDS (session 16's section a, on these runs).
b. What a later launch cost, against session 16's lease (session 16's later_costs).
c. The MDS by simulation from each run's own pairs (session 16's section c, on these runs: pooled, within, nested draws at the
   launch sd measured and at its 90% bound; the run's launch estimates redrawn; Levene's test of equal spread).
d. The injected run: B's host work by its own clock against the slowdown measured (interleave.injected_share).
e. The GPU as each block ended (the per-block NVML reading that session 16 added): SM clock, throttle reasons, power, GPU
   utilisation, per run; then per launch of the 4x1 A/A, the robust sd of the pair log ratios (IQR / 1.349) against the
   launch's median step, its SM clock and the share of its blocks whose host canary read slow (above 1.25 x the run's median
   canary), as session 16's section f; and whether pairs measured while the next launch imports beside them (other_cpus >=
   0.5 on either side) are noisier than the rest (Levene's test).
f. The host canary, looked at again over the stored runs of sessions 14-17 with 30 or more pairs, after the fact: as a
   covariate (the pair log ratio less its least-squares slope on the log canary ratio) and as a screen that leaves out the
   pairs where one side's canary read slow and the other's not (straddle), or where either did (either), judged by the
   command's own analysis.
g. --block-metric median, mean and min over the stored H200 step-grain runs up to session 17 (session 16's block_metric.py
   with this session's runs included).
h. The block metric by simulation, on the 4x1 runs of both leases (the step grain, where it matters): section c's within and
   nested draws at the launch sd measured, from the pair log ratios of each metric (interleave.grouped).
i. How many launches 10 minutes should hold, now that a later launch costs 4.5-9 s: for each --warm-apart run of both leases,
   its costs (first launch, later launch, s per pair, from report.json) give m pairs per launch for L launches in 600 s, start-up
   included; the MDS of L x m is drawn as in section c (within: pooled residuals plus a N(0, launch sd) offset; nested: each
   launch keeps its own spread) at the launch sd measured and at its 90% bound, for the nightly's L = 16, for L = 24 and 32,
   and for the plan's L (paired.launch_plan, least regret between the estimate and the bound, as the command prints it);
   "model" is the plan model's MDS at the launch sd measured (paired.min_detectable of sqrt(launch sd² + pair sd² / m)).
j. The plan line as the command now makes it, re-made from each --warm-apart run's stored report and blocks
   (interleave.plan_for with the run's pair log ratios, then interleave.drawn_text): the plan drawn from the run's own
   pairs (simulate.drawn_mds, seeded), and the run's own launch count in the same budget.
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

HERE = Path(__file__).parent
RAW = HERE / "raw"
RUNS = ("aa10-4x1-wa2", "aa10-1x4-wa2", "host5-4x1-wa2")
S16 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session16" / "analyse.py")))
BM = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session16" / "block_metric.py")))
SLOW = 1.25  # a canary above 1.25 x the run's median reads "slow", as in session 16


def load(name):
    run = RAW / name
    return json.loads((run / "report.json").read_text()), read_jsonl(run / "blocks.jsonl")


def log_ratios(pairs):
    """Each pair's log(B / A) of the median step of its block (the command's default metric)."""
    return np.array([math.log(np.median(p["b"]["step_times_ms"]) / np.median(p["a"]["step_times_ms"])) for p in pairs])


def section_b(runs):
    print("\n\nb. what a later launch cost (s, mean over the pre-started launches): build + warm-up + stopping\n")
    print("  run                          build  warm-up  stopping  total  pairs/launch  s/pair")
    rows = [(f"session 17 {n}", r) for n, (r, _) in runs.items()]
    rows += [(f"session 16 {n}", json.loads((HERE.parent / "session16" / "raw" / n / "report.json").read_text())) for n in S16.RUNS]
    for name, rep in rows:
        c = S16.later_costs(rep)
        print(f"  {name:<28} {c['startup_s']:6.1f} {c['warmup_s']:8.1f} {c['close_s']:9.1f} {sum(c.values()):6.1f} "
              f"{np.mean(rep['launch_sizes']):13.1f} {rep['wall_s_per_pair']:7.2f}")


def section_e(runs):
    print("\n\ne. the GPU as each block ended (NVML, one reading per measured block)\n")
    for name, (_, blocks) in runs.items():
        g = [b["gpu"] for b in blocks if not b["warmup"] and b.get("gpu")]
        clk = [x["sm_clock_mhz"] for x in g]
        reasons = sorted({x["throttle_reasons"] for x in g})
        print(f"  {name:<14} {len(g)} blocks: SM clock {min(clk)}-{max(clk)} MHz (median {np.median(clk):.0f}), throttle reasons "
              f"{reasons}, power {min(x['power_w'] for x in g):.0f}-{max(x['power_w'] for x in g):.0f} W, GPU busy "
              f"{min(x['util_pct'] for x in g)}-{max(x['util_pct'] for x in g)}%, {min(x['temp_c'] for x in g)}-{max(x['temp_c'] for x in g)} C")

    _, blocks = runs["aa10-4x1-wa2"]
    pairs = il.pairs_of(blocks)
    slow = SLOW * float(np.median([b["canary_ms"] for b in blocks if not b["warmup"]]))
    print("\n  aa10-4x1-wa2 per launch: robust sd of the pair log ratio (IQR / 1.349)\n")
    print("  launch  pairs  robust sd  median step ms  median SM clock  canary slow")
    rows = []
    for n in sorted({p["launch"] for p in pairs}):
        ps = [p for p in pairs if p["launch"] == n]
        d = log_ratios(ps)
        step = float(np.median([t for p in ps for s in "ab" for t in p[s]["step_times_ms"]]))
        clk = float(np.median([p[s]["gpu"]["sm_clock_mhz"] for p in ps for s in "ab"]))
        slow_share = float(np.mean([p[s]["canary_ms"] > slow for p in ps for s in "ab"]))
        rows.append((stats.iqr(d) / 1.349, step, slow_share))
        print(f"  {n:6d} {len(ps):6d} {rows[-1][0]:10.1%} {step:15.0f} {clk:16.0f} {slow_share:12.0%}")
    for what, i in (("median step", 1), ("canary slow share", 2)):
        rho = stats.spearmanr([r[0] for r in rows], [r[i] for r in rows])
        print(f"  Spearman's rho of the robust sd against the launch's {what}: {rho.statistic:+.2f} (p = {rho.pvalue:.3f})")

    print("\n  pairs beside the next launch's imports (other_cpus >= 0.5 on either side) against the rest: robust sd, Levene p")
    for name, (_, blocks) in list(runs.items()) + [(n, S16.load(n)) for n in S16.RUNS]:
        pairs = il.pairs_of(blocks)
        d = log_ratios(pairs)
        busy = np.array([max(p["a"]["other_cpus"], p["b"]["other_cpus"]) >= 0.5 for p in pairs])
        lev = stats.levene(d[busy] - np.median(d[busy]), d[~busy] - np.median(d[~busy]))
        print(f"  {name:<14} beside {busy.sum():3d}: {stats.iqr(d[busy]) / 1.349:6.2%} | alone {(~busy).sum():3d}: "
              f"{stats.iqr(d[~busy]) / 1.349:6.2%} | p = {lev.pvalue:.3f}")


def screened(blocks, pairs, rule):
    """The blocks less both blocks of each pair the canary screen drops: ``straddle``, one side's canary slow and the
    other's not; ``either``, either side's slow (slow: above SLOW x the run's median canary). Returns (blocks, share dropped)."""
    med = float(np.median([p[s]["canary_ms"] for p in pairs for s in "ab"]))
    drop = set()
    for p in pairs:
        a, b = (p[s]["canary_ms"] > SLOW * med for s in "ab")
        if (a != b) if rule == "straddle" else (a or b):
            drop.add((p["launch"], p["pair"]))
    return [b for b in blocks if b["warmup"] or (b["launch"], b["pair"]) not in drop], len(drop) / len(pairs)


def section_f():
    print("\n\nf. the host canary after the fact, over the stored runs of sessions 14-17 with 30+ pairs (pair log ratio of the median step)\n")
    print("  as a covariate: the sd of the pair log ratio, and less its least-squares slope on the log canary ratio")
    print("  as a screen: the run's own verdict (interleave.analyse, the launch as the unit, alpha 0.05 against +2%) with the pairs")
    print("  the screen drops left out: its MDS (alpha 0.01, power 0.9) and ratio, before -> after\n")
    print("  run                              pairs |    sd   r    sd less | straddle: dropped  MDS            ratio         "
          "| either: dropped  MDS")
    for path in sorted(HERE.parent.glob("session1[4-7]/raw*/*/blocks.jsonl")):
        blocks = read_jsonl(path)
        pairs = il.pairs_of(blocks)
        if len(pairs) < 30:
            continue
        d = log_ratios(pairs)
        c = np.array([math.log(p["b"]["canary_ms"] / p["a"]["canary_ms"]) for p in pairs])
        slope = float(np.polyfit(c, d, 1)[0])
        r0 = il.analyse(blocks, alpha=0.05, threshold=0.02, unit="launch")
        cells = []
        for rule in ("straddle", "either"):
            kept, share = screened(blocks, pairs, rule)
            r1 = il.analyse(kept, alpha=0.05, threshold=0.02, unit="launch")
            cells.append((share, r1["mds"]["slowdown"], r1["verdict"]["ratio"]))
        (s1, m1, x1), (s2, m2, _) = cells
        name = str(path.parent.relative_to(HERE.parent))
        print(f"  {name:<32} {len(d):5d} | {d.std(ddof=1):6.2%} {np.corrcoef(c, d)[0, 1]:+.2f} {(d - slope * c).std(ddof=1):6.2%} |"
              f" {s1:16.0%} {r0['mds']['slowdown']:5.2%} -> {m1:5.2%}  x{r0['verdict']['ratio']:.3f} -> x{x1:.3f} | {s2:15.0%}  "
              f"{r0['mds']['slowdown']:5.2%} -> {m2:5.2%}")


def section_g():
    print("\n\ng. ", end="")
    BM.main(keep=lambda rel: not any(p.startswith("session") and p[7:].isdigit() and int(p[7:]) > 17 for p in rel.parts))


def residuals(groups):
    """Each launch's pair log ratios less their Hodges-Lehmann estimate, rescaled and symmetrised (session 16's by_launch)."""
    out = []
    for g in groups:
        g = np.array(g)
        if len(g) >= 2:
            r = (g - pd.hodges_lehmann(g.tolist())) * math.sqrt(len(g) / (len(g) - 1))
            out.append(np.concatenate([r, -r]))
    return out


def section_h(runs):
    lu = S16.lu
    print(f"\n\nh. the block metric by simulation, 4x1 runs of both leases ({lu.REPS} replicates; alpha 0.01, power 0.9, the launch as the unit)\n")
    print("  run                       metric  launch sd  MDS within  MDS nested  own MDS")
    both = [(n, b) for n, (_, b) in runs.items() if "4x1" in n] + [("session16 aa10-4x1-wa", S16.load("aa10-4x1-wa")[1])]
    for i, (name, blocks) in enumerate(both):
        pairs = il.pairs_of(blocks)
        for j, metric in enumerate(("median", "min")):
            groups = il.grouped(pairs, metric)
            c = pd.launch_components(groups, "hl")
            by = residuals(groups)
            y = np.concatenate([g[: len(g) // 2] for g in by])
            n, m = len(groups), round(np.mean([len(g) for g in groups]))
            w, _ = lu.draw(np.concatenate([y, -y]), lu.REPS, n, m, c.launch_sd, 1717 + 2 * i + j)
            nst, _ = S16.nested_draw(by, lu.REPS, n, m, c.launch_sd, 1757 + 2 * i + j)
            own = il.analyse(blocks, alpha=0.05, threshold=0.02, metric=metric, unit="launch")["mds"]["slowdown"]
            print(f"  {name:<25} {metric:<7} {c.launch_sd:8.2%} {lu.mds(w['hl']):11.2%} {lu.mds(nst['hl']):11.2%} {own:8.2%}")


def costs(rep):
    """First launch, later launch (mean of the pre-started: build + warm-up + stopping) and s per pair, from a report."""
    first = sum(rep["launches"][0].get(k) or 0.0 for k in ("startup_s", "warmup_s", "close_s"))
    return first, sum(S16.later_costs(rep).values()), rep["wall_s_per_pair"]


def section_i(runs):
    lu = S16.lu
    print(f"\n\ni. launches per 10 minutes, start-up included, drawn from each --warm-apart run's own pairs ({lu.REPS} replicates; "
          "alpha 0.01, power 0.9)\n")
    print("  run                     first  later  s/pair |   L x  m  | model | MDS within nested | at the 90% bound: within nested")
    both = [(f"session17 {n}", r, b) for n, (r, b) in runs.items()]
    both += [(f"session16 {n}", *S16.load(n)) for n in S16.RUNS]
    for i, (name, rep, blocks) in enumerate(both):
        first, later, pair_s = costs(rep)
        c = rep["launch_components"]
        groups = il.grouped(il.pairs_of(blocks))
        by = residuals(groups)
        y = np.concatenate([g[: len(g) // 2] for g in by])
        y = np.concatenate([y, -y])
        plan = pd.launch_plan(600.0, first, later, pair_s, c["pair_sd"], c["launch_sd"], launch_sd_hi=c["launch_sd_upper"])
        for j, n in enumerate(sorted({16, 24, 32, plan.launches})):
            m = int((600.0 - first - (n - 1) * later) / (n * pair_s))
            out = []
            for tau in (c["launch_sd"], c["launch_sd_upper"]):
                seed = 1800 + 40 * i + 4 * j + len(out)
                w, _ = lu.draw(y, lu.REPS, n, m, tau, seed)
                nst, _ = S16.nested_draw(by, lu.REPS, n, m, tau, seed + 1)
                out += [lu.mds(w["hl"]), lu.mds(nst["hl"])]
            head = f"  {name:<23} {first:5.1f} {later:6.1f} {pair_s:7.2f}" if j == 0 else f"  {'':<23} {'':>5} {'':>6} {'':>7}"
            tag = "plan" if n == plan.launches else ("nightly" if n == 16 else "")
            model = pd.min_detectable(math.sqrt(c["launch_sd"] ** 2 + c["pair_sd"] ** 2 / m), n)
            print(f"{head} | {n:3d} x {m:2d} {tag:<7}| {model:5.2%} | {out[0]:6.2%} {out[1]:6.2%}  | {'':>16} {out[2]:6.2%} {out[3]:6.2%}")


def section_j(runs):
    print("\n\nj. the plan, checked by draws from the run's own pairs (the command's plan line, re-made from the stored runs)\n")
    both = [(f"session17 {n}", r, b) for n, (r, b) in runs.items()] + [(f"session16 {n}", *S16.load(n)) for n in S16.RUNS]
    for name, rep, blocks in both:
        st = rep["settings"]
        groups = il.grouped(il.pairs_of(blocks, st["session_id"]), st["metric"], st["drop_first_step"])
        p = il.plan_for(rep, groups=groups)
        print(f"  {name:<23} plan --launches {p['launches']} x {p['pairs_per_launch']}, model {p['mds_at_estimate']:.2%}{il.drawn_text(p)}")


def main():
    print("issue 13 on the H200, session 17: --warm-apart on a second lease\n")
    runs = {n: load(n) for n in RUNS}
    S16.section_a(runs)
    section_b(runs)
    S16.section_c(runs)
    S16.section_d(runs, "host5-4x1-wa2")
    section_e(runs)
    section_f()
    section_g()
    section_h(runs)
    section_i(runs)
    section_j(runs)


if __name__ == "__main__":
    sys.exit(main())
