"""Issue 13 on the H200, session 10: pre-started launches measured, injected +5% comparisons, and the MDS at the measured costs.

    PYTHONPATH=. python docs/results/interleave-h200/session10/analyse.py > docs/results/interleave-h200/session10/analysis.txt

Runs (one lease, boot ids in the run dirs; commands in ../lease-prestart.sh and ../lease-injected.sh, the 1x4 A/A in README.md):
  prestart-oversubscribed/  A/A 4x1 --prestart before the thread fix (7d1f342): the pre-started workers kept the OpenMP pool
                            sized for the 14 hold CPUs they imported on
  prestart-omp/             the same after the fix (OMP_NUM_THREADS = the pinned CPUs)
  injected/work5-{1,2,3}    4x1, --inject-work-b-percent 5, 6 launches, --prestart, 5.5 minutes, threshold +2%, alpha 0.05
  aa1x4/                    A/A 1x4 (k = 3, not the chosen k = 1), 6 launches, --prestart, 5 minutes

a. Launch costs: start-up (until both workers are ready), warm-up blocks and stopping, per launch; a pre-started worker's
   import/preload/trainer set-up seconds.
b. The comparisons as the command judged them, and their launch Hodges-Lehmann summaries.
c. Noise: sigma of the pair log ratio d (centred per launch), split by whether another CPU was busy (> 0.5 CPUs
   elsewhere, the next launch's workers importing) during either block of the pair: does pre-starting disturb the blocks?
d. MDS (alpha 0.01 one-sided, power 0.9, the launch as the unit, Hodges-Lehmann summaries, launch_unit.py's draw/mds) in
   10 GPU-minutes at the measured costs: the first launch C1, every later launch C (pre-started), s per pair;
   L launches of m = ((600 - C1 - (L - 1) C) / s per pair) // L pairs, the best L. Noise sources: the earlier one-CPU
   comparisons (analyse.py's pools, symmetrised) and, for 4x1, session 10's own pairs (centred per comparison and
   symmetrised; their pairs were about 1.4 times as wide as the earlier ones). tau as launch_unit.py.
e. Warm-up: each launch's warm-up block (5 steps per side, the workload's [measure] warmup_steps), every step against the
   median of steps 3-5 of its block: only the first step is slow. The launch costs with --warmup-steps N (N = 1, 2)
   projected from the measured warm-up blocks (the first N steps of each side's block plus the block's own overhead
   outside its steps), and the MDS of d at those costs (projected, not run).
"""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np

from harness.judging import paired as pd

HERE = Path(__file__).parent
PARENT = HERE.parent


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


an = _load("analyse_h200", PARENT / "analyse.py")
lu = _load("launch_unit_h200", PARENT / "launch_unit.py")

RUNS = ["prestart-oversubscribed/aa-4x1-prestart", "prestart-omp/aa-4x1-prestart", "injected/work5-1", "injected/work5-2", "injected/work5-3",
        "aa1x4/aa-1x4-prestart"]
LAUNCHES = (3, 4, 6, 8, 10, 12, 16, 20)
BUDGET_S = 600


def load(run, base=HERE):
    rep = json.loads((base / run / "report.json").read_text())
    blocks = [json.loads(x) for x in (base / run / "blocks.jsonl").read_text().splitlines() if x.strip()]
    pairs = {}
    for b in blocks:
        if not b.get("warmup"):
            pairs.setdefault((b["launch"], b["pair"]), {})[b["side"]] = b
    d = [(lc, math.log(pd.block_metric(p["b"]["step_times_ms"], "median") / pd.block_metric(p["a"]["step_times_ms"], "median")),
          max(p["a"].get("other_cpus", 0.0), p["b"].get("other_cpus", 0.0)), p["a"]["wall_s"] + p["b"]["wall_s"])
         for (lc, _), p in sorted(pairs.items()) if "a" in p and "b" in p]
    return rep, d


def section_a(data):
    print("a. launch costs on the H200 (s): start-up + warm-up blocks + stopping; per worker A: import / preload / trainer set-up, torch threads\n")
    costs = {}
    for run, (rep, _) in data.items():
        print(f"  {run}")
        for li in rep["launches"]:
            ta = li["ready"]["a"]["timing_s"]
            total = li["startup_s"] + (li.get("warmup_s") or 0.0) + (li.get("close_s") or 0.0)
            print(f"    launch {li['launch']}: {'pre-started' if li['prestarted'] else 'plain      '} start-up {li['startup_s']:5.1f} + warm-up "
                  f"{li.get('warmup_s') or 0:5.1f} + stop {li.get('close_s') or 0:4.1f} = {total:5.1f}; A import {ta['import_s']:5.2f}, preload "
                  f"{ta.get('preload_s', float('nan')):5.2f}, trainer set-up {ta['trainer_setup_s']:5.2f}, threads {li['ready']['a'].get('torch_threads')}")
            if run.startswith(("injected", "aa1x4")):  # complete preloads, the fixed build, launches long enough to matter
                costs.setdefault(rep["settings"]["decomposition"], {"first": [], "later": []})["later" if li["prestarted"] else "first"].append(total)
    print()
    out = {}
    for dec, c in costs.items():
        out[dec] = (float(np.mean(c["first"])), float(np.mean(c["later"])))
        print(f"  {dec}: first launch {out[dec][0]:.1f} s (mean of {len(c['first'])}), pre-started launch {out[dec][1]:.1f} s (mean of {len(c['later'])}); "
              f"before --prestart (analyse.py's section c, start-up + warm-up + stopping): {an.overhead(an.load_comparisons(PARENT), dec)[1]:.1f} s")
    return out


def section_b(data):
    print("\n\nb. the comparisons (the command's own verdicts, as reported)\n")
    for run, (rep, d) in data.items():
        v, s = rep["verdict"], rep["settings"]
        groups = {}
        for lc, x, _, _ in d:
            groups.setdefault(lc, []).append(x)
        hls = ", ".join(f"x{math.exp(pd.hodges_lehmann(g)):.4f}" for g in groups.values() if len(g) >= 1)
        inj = rep.get("inject_work") or {}
        print(f"  {run:<42} {s['decomposition']} k={s['block_steps']} {v['outcome']:<12} x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}] "
              f"{len(d)} pairs in {len(groups)} launches, unit {v['unit']}; launch HL {hls}"
              + (f"; inject-work {inj.get('layers', inj)}" if inj else ""))


def section_c(data):
    print("\n\nc. noise: sigma of d centred per launch, pairs with another CPU busy (> 0.5) during either block, and the rest\n")
    for run, (_, d) in data.items():
        x = np.array([r[1] for r in d])
        lc = np.array([r[0] for r in d])
        busy = np.array([r[2] > 0.5 for r in d])
        wall = np.array([r[3] for r in d])
        xc = x.copy()
        for g in set(lc.tolist()):
            xc[lc == g] -= x[lc == g].mean()

        def rms(v):
            return float(np.sqrt(np.sum(v ** 2) / max(len(v) - 1, 1))) if len(v) > 1 else float("nan")

        print(f"  {run:<42} {len(x):3d} pairs, sigma {np.std(x, ddof=1):6.2%}; busy {busy.sum():3d}: sigma {rms(xc[busy]):6.2%}, "
              f"{wall[busy].mean() if busy.any() else float('nan'):5.2f} s per pair; quiet {(~busy).sum():3d}: sigma {rms(xc[~busy]):6.2%}, "
              f"{wall[~busy].mean() if (~busy).any() else float('nan'):5.2f} s per pair")
    print("\n  the host of each lease (the workload is host-bound at 4x1: ~11,000 kernel launches per micro-batch step): launch 1's worker A")
    for rep_path in sorted(PARENT.glob("[cd]/*/report.json")) + [HERE / run / "report.json" for run in RUNS]:
        rep = json.loads(rep_path.read_text())
        li = rep["launches"][0]
        print(f"    {str(rep_path.parent.relative_to(PARENT)):<45} boot {li['env']['a']['boot_id'][:8]}: kernel launch "
              f"{li['ready']['a']['host_probe']['launch_us']:5.2f} us, {rep['settings']['decomposition']} median step A {rep['step_ms_median']['a']:.0f} ms, B {rep['step_ms_median']['b']:.0f} ms")
    comps = an.load_comparisons(PARENT)
    for dec in an.CHOSEN_K:
        print(f"  earlier one-CPU comparisons, {dec} (k = {an.CHOSEN_K[dec]}): pooled sigma "
              f"{float(np.std(next(s for _, s, k in an.pools(comps, dec) if k == 'pool'), ddof=1)):.2%}, {an.overhead(comps, dec)[2]:.2f} s per pair")


def best_mds(src, c1, c, s_pair, tau, seed):
    res = []
    for li, launches in enumerate(LAUNCHES):
        m = int((BUDGET_S - c1 - (launches - 1) * c) // s_pair) // launches
        if m < 2:
            continue
        summ, _ = lu.draw(src, lu.REPS, launches, m, tau, seed + li)
        res.append((lu.mds(summ["hl"]), launches, m))
    return min(res)


def section_d(data, costs):
    print(f"\n\nd. MDS in {BUDGET_S / 60:g} GPU-minutes at the measured pre-started costs: alpha {lu.ALPHA} one-sided, power {lu.POWER}, launch unit (HL), "
          f"{lu.REPS} replicates, best L of {LAUNCHES}; * above 3%\n")
    comps = an.load_comparisons(PARENT)
    s10 = {}
    for run, (_rep, d) in data.items():
        if run.startswith("injected") or run == "prestart-omp/aa-4x1-prestart":
            x = np.array([r[1] for r in d])
            s10.setdefault("4x1", []).append(x - x.mean())
    s10_pairs = {"4x1": sum(r[3] for run in data if run.startswith("injected") for r in data[run][1]) /
                 sum(len(data[run][1]) for run in data if run.startswith("injected"))}
    for dec in an.CHOSEN_K:
        c1, c = costs[dec]
        _, old_cost, old_s_pair, _ = an.overhead(comps, dec)
        srcs = [(label, src, old_s_pair) for label, src, kind in an.pools(comps, dec) if kind in ("pool sym", "worst sym")][:2]
        if dec in s10:
            pool = np.concatenate(s10[dec])
            srcs.append((f"session 10's {len(pool)} pairs, symmetrised (sigma {np.std(pool, ddof=1):.2%})", np.concatenate([pool, -pool]), s10_pairs[dec]))
        print(f"  {dec} (k = {an.CHOSEN_K[dec]}): C1 = {c1:.1f} s, C = {c:.1f} s (before --prestart every launch {old_cost:.1f} s)")
        for si, (label, src, s_pair) in enumerate(srcs):
            cells = []
            for ti, (tname, tau) in enumerate(lu.TAUS):
                md, launches, m = best_mds(src, c1, c, s_pair, tau, lu.SEED + 2000 + 100 * si + 10 * ti)
                cells.append(f"tau {tname}: {md:5.2%}{'*' if md > lu.TARGET else ' '} (L={launches}, m={m})")
            print(f"     {label:<62} {s_pair:.2f} s/pair | " + "; ".join(cells))
        print()


def warm_blocks(run):
    blocks = [json.loads(x) for x in (HERE / run / "blocks.jsonl").read_text().splitlines() if x.strip()]
    return [b for b in blocks if b.get("warmup") and not b.get("calibration") and b["k"] == 5]


def section_e(data, costs):
    print("\n\ne. warm-up: step i of a launch's warm-up block / the median of its steps 3-5 (median over blocks [10th, 90th percentile])\n")
    projected = {}
    for dec in an.CHOSEN_K:
        runs = [run for run, (rep, _) in data.items() if rep["settings"]["decomposition"] == dec and not run.startswith("prestart-over")]
        ratios = np.array([np.array(b["step_times_ms"]) / np.median(b["step_times_ms"][2:]) for run in runs for b in warm_blocks(run)])
        cells = [f"step {i + 1} x{np.median(ratios[:, i]):.2f} [{np.percentile(ratios[:, i], 10):.2f}, {np.percentile(ratios[:, i], 90):.2f}]" for i in range(5)]
        print(f"  {dec} ({len(ratios)} blocks of {', '.join(runs)}): " + "; ".join(cells))
        for n in (1, 2):
            first, later = [], []
            for run in runs:
                if not run.startswith(("injected", "aa1x4")):
                    continue
                rep = data[run][0]
                by_launch = {}
                for b in warm_blocks(run):
                    over = b["wall_s"] - sum(b["step_times_ms"]) / 1000
                    by_launch[b["launch"]] = by_launch.get(b["launch"], 0.0) + sum(b["step_times_ms"][:n]) / 1000 + over
                for li in rep["launches"]:
                    total = li["startup_s"] + by_launch[li["launch"]] + (li.get("close_s") or 0.0)
                    (later if li["prestarted"] else first).append(total)
            projected[(dec, n)] = (float(np.mean(first)), float(np.mean(later)))
            print(f"     --warmup-steps {n}: first launch {projected[(dec, n)][0]:.1f} s, pre-started launch {projected[(dec, n)][1]:.1f} s "
                  f"(measured with 5: {costs[dec][0]:.1f} s, {costs[dec][1]:.1f} s)")
    print(f"\n   MDS at those costs (as d; projected): alpha {lu.ALPHA}, power {lu.POWER}, best L of {LAUNCHES}; * above 3%\n")
    comps = an.load_comparisons(PARENT)
    for dec in an.CHOSEN_K:
        _, _, old_s_pair, _ = an.overhead(comps, dec)
        src = next(src for _, src, kind in an.pools(comps, dec) if kind == "pool sym")
        for n in (2, 1):
            c1, c = projected[(dec, n)]
            cells = []
            for ti, (tname, tau) in enumerate(lu.TAUS):
                md, launches, m = best_mds(src, c1, c, old_s_pair, tau, lu.SEED + 3000 + 10 * ti + n)
                cells.append(f"tau {tname}: {md:5.2%}{'*' if md > lu.TARGET else ' '} (L={launches}, m={m})")
            print(f"  {dec} earlier pooled noise, {old_s_pair:.2f} s/pair, --warmup-steps {n} (C1 {c1:.1f} s, C {c:.1f} s) | " + "; ".join(cells))


def main():
    print("issue 13 on the H200, session 10: --prestart measured, injected +5% comparisons, MDS at the measured costs\n")
    data = {run: load(run) for run in RUNS}
    costs = section_a(data)
    section_b(data)
    section_c(data)
    section_d(data, costs)
    section_e(data, costs)


if __name__ == "__main__":
    main()
