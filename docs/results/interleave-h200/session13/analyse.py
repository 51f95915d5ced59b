"""Issue 13 on the H200, session 13: the micro grain on 1x4 (a 10-minute A/A, three +5% host-work comparisons) and one more
4x1 +5% comparison at the step grain.

    PYTHONPATH=. python docs/results/interleave-h200/session13/analyse.py > docs/results/interleave-h200/session13/analysis.txt

Runs (raw/, one lease, boot f15c5377; queue.sh, then lease-4x1.sh):
  raw/host5-micro-1x4-{1,2,3}  1x4, --grain micro, k = 1, 6 pre-started launches, 4 GPU-minutes, B +5% host work (own clock)
  raw/aa10-micro-1x4           1x4, --grain micro, k = 1, 8 pre-started launches, 10 GPU-minutes, A/A
  raw/host5-4x1                4x1, step grain, k = 3, 6 pre-started launches, 4.8 GPU-minutes, B +5% host work

a. Costs: the first launch and a pre-started one (start-up + warm-up blocks + stopping), seconds per pair, wall.
b. Verdicts and launch Hodges-Lehmann summaries; for the injected runs the injection's nominal share (its own clock)
   against the measured ratio (mean with its 95% t interval, median, HL), and the over-cost: the median over pairs of
   (B's step - A's step) against the median of B's injected ms per step (session 12 found 1.9 at the 1x4 step grain).
c. Is there a launch effect in the 10-minute A/A? The sd of its 8 launch HL summaries against the sd the same pairs give
   when they are dealt to the launches at random (2000 permutations, launch sizes kept, seed 1313): the one-sided
   permutation p, and the launch sd tau from the excess of the variances (moments, 0 when there is none).
d. 1x4 MDS in 10 GPU-minutes at the micro grain (alpha 0.01 one-sided, power 0.9, the launch as the unit with HL
   summaries, t over L; session 10's best_mds: the best L of 3-20 launches at this lease's costs), drawing from the A/A's
   pairs, symmetrised, at tau 0, at c's tau, and at the 1.06% / 2.86% of launch_bound.txt; beside the verdict's own MDS
   from the run's report (its launch HL sd over its 8 launches). Then the plan the command now prints (plan_for) for each
   run: the plan for the launch sd's point estimate, the plan line's (least regret between the estimate and its 90%
   upper bound), and the plan for the bound alone, each against the MDS of the same L x m drawn from that run's pairs at the point estimate (the model's
   check, and what the plan line gives away when the estimate is right).
e. The power each injected run had to flag its nominal slowdown against +2% at alpha 0.05 (noncentral t over its launch
   HL summaries: harness.judging.paired.power), and the runs pooled post hoc: the three 1x4 micro runs (18 launches, 12
   GPU-minutes), and the 4x1 run with session 12's three 4x1 runs (24 launches, about 20 GPU-minutes, two leases).
f. One --launches for the nightly: the plan model's MDS in 10 GPU-minutes at L = 6, 10, 12, 16, 20 for each H200 run of
   sessions 11-13, against its best L (an injected run's launch sd includes how its injection's cost varied by launch).
"""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from harness.commands import interleave as il
from harness.judging import paired as pd

HERE = Path(__file__).parent
RAW = HERE / "raw"
RUNS = ["host5-micro-1x4-1", "aa10-micro-1x4", "host5-micro-1x4-2", "host5-micro-1x4-3", "host5-4x1"]
PERMS, SEED = 2000, 1313


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


s11 = _load("analyse_s11", HERE.parent / "session11" / "analyse.py")
s10, lu = s11.s10, s11.lu


def read(run_dir):
    """The run's report and its complete pairs (micro-grain units merged into steps by the command's own pairs_of)."""
    rep = json.loads((run_dir / "report.json").read_text())
    blocks = [json.loads(x) for x in (run_dir / "blocks.jsonl").read_text().splitlines() if x.strip()]
    pairs = il.pairs_of(blocks)
    assert len(pairs) == rep["pairs"], (run_dir, len(pairs), rep["pairs"])
    return rep, blocks, pairs


def d_of(pairs):
    return np.array([math.log(pd.block_metric(p["b"]["step_times_ms"], "median") / pd.block_metric(p["a"]["step_times_ms"], "median"))
                     for p in pairs])


def launch_groups(pairs):
    g = {}
    for p, x in zip(pairs, d_of(pairs)):
        g.setdefault(p["launch"], []).append(float(x))
    return [g[k] for k in sorted(g)]


def section_a(data):
    print("a. costs (s): a launch = start-up + warm-up blocks + stopping; s per pair = the two blocks' wall\n")
    for run, (rep, blocks, pairs) in data.items():
        c1, c = s11.costs(rep)
        cal = sum(b["wall_s"] for b in blocks if b.get("calibration"))
        t = rep["timing"]
        print(f"  {run:<18} grain {rep['settings'].get('grain', 'step'):<5} first launch {c1:5.1f}, pre-started {c:5.1f} (mean of "
              f"{len(rep['launches']) - 1}); calibration {cal:4.1f}; {len(pairs)} pairs at {rep['wall_s_per_pair']:.2f} s; wall {t['wall_s']:.0f}, "
              f"start-up {t['startup_s']:.0f}")


def section_b(data):
    print("\n\nb. verdicts (the command's own) and launch HL summaries; injected runs: nominal share against measured, and the over-cost\n")
    for run, (rep, _, pairs) in data.items():
        v = rep["verdict"]
        groups = launch_groups(pairs)
        hls = ", ".join(f"x{math.exp(pd.hodges_lehmann(g)):.4f}" for g in groups)
        print(f"  {run:<18} {rep['settings']['decomposition']} {v['outcome']:<12} x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}] "
              f"{len(pairs)} pairs in {len(groups)} launches; launch HL {hls}")
        inj = rep.get("injected")
        if not inj:
            continue
        x = d_of(pairs)
        half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
        diff = [float(np.mean(p["b"]["step_times_ms"]) - np.mean(p["a"]["step_times_ms"])) for p in pairs]
        ms = [p["b"]["inject_ms"] for p in pairs]
        print(f"  {'':<18} nominal +{inj['share']:.1%} ({inj['inject_ms']:.1f} ms per step of B); measured: mean x{math.exp(x.mean()):.4f} "
              f"[95% t {math.exp(x.mean() - half):.4f}, {math.exp(x.mean() + half):.4f}], median x{math.exp(np.median(x)):.4f}, "
              f"HL x{math.exp(pd.hodges_lehmann(x.tolist())):.4f}; B - A per step: median {np.median(diff):.1f} ms, HL "
              f"{pd.hodges_lehmann(diff):.1f} ms against {np.median(ms):.1f} ms of clock: over-cost x{pd.hodges_lehmann(diff) / np.median(ms):.2f}")
        per = []
        for lc in sorted({p["launch"] for p in pairs}):
            ps = [p for p in pairs if p["launch"] == lc]
            dl = [float(np.mean(p["b"]["step_times_ms"]) - np.mean(p["a"]["step_times_ms"])) for p in ps]
            per.append(pd.hodges_lehmann(dl) / float(np.median([p["b"]["inject_ms"] for p in ps])))
        se = float(np.std(diff, ddof=1)) / math.sqrt(len(diff)) / float(np.median(ms))
        print(f"  {'':<18} over-cost per launch: " + ", ".join(f"x{x:.2f}" for x in per)
              + f"; the run's over-cost has a standard error of about {se:.2f} (sd of B - A over sqrt(pairs), over the clock)")


def permutation_launch(groups, seed):
    """Observed sd of the launch HL summaries, the mean permuted variance, and the one-sided permutation p."""
    sizes = [len(g) for g in groups]
    flat = np.array([x for g in groups for x in g])
    obs = float(np.std([pd.hodges_lehmann(g) for g in groups], ddof=1))
    rng = np.random.default_rng(seed)
    cuts = np.cumsum(sizes)[:-1]
    perm = []
    for _ in range(PERMS):
        y = rng.permutation(flat)
        perm.append(float(np.std([pd.hodges_lehmann(list(s)) for s in np.split(y, cuts)], ddof=1)))
    perm = np.array(perm)
    return obs, float(np.mean(perm ** 2)), float((1 + np.sum(perm >= obs)) / (PERMS + 1))


def section_c(data):
    rep, _, pairs = data["aa10-micro-1x4"]
    groups = launch_groups(pairs)
    obs, null_var, p = permutation_launch(groups, SEED)
    tau = math.sqrt(max(obs ** 2 - null_var, 0.0))
    print(f"\n\nc. launch effect in the 10-minute A/A (aa10-micro-1x4, {len(groups)} launches of {min(map(len, groups))}-{max(map(len, groups))} pairs)\n")
    print(f"  sd of the launch HL summaries {obs:.2%}; pairs dealt to launches at random ({PERMS} permutations): rms sd {math.sqrt(null_var):.2%}; "
          f"one-sided p = {p:.3f}; launch sd tau (moments) {tau:.2%}")
    for run in ("host5-micro-1x4-1", "host5-micro-1x4-2", "host5-micro-1x4-3", "host5-4x1"):
        o, nv, pp = permutation_launch(launch_groups(data[run][2]), SEED + 1)
        print(f"  {run:<18} launch HL sd {o:.2%}, permuted rms {math.sqrt(nv):.2%}, p = {pp:.3f}, tau {math.sqrt(max(o ** 2 - nv, 0.0)):.2%}")
    return tau


def section_d(data, tau_here):
    rep, _, pairs = data["aa10-micro-1x4"]
    c1, c = s11.costs(rep)
    s_pair = rep["wall_s_per_pair"]
    x = d_of(pairs)
    x = x - x.mean()
    src = np.concatenate([x, -x])
    m = rep["mds"]
    print(f"\n\nd. 1x4 MDS in {s10.BUDGET_S / 60:g} GPU-minutes at the micro grain, this lease's costs (first launch {c1:.1f} s, pre-started "
          f"{c:.1f} s, {s_pair:.2f} s per pair): alpha {lu.ALPHA}, power {lu.POWER}, launch unit (HL), {lu.REPS} replicates, best L of "
          f"{s10.LAUNCHES}; * above 3%\n")
    n, sd = len(x), float(np.std(x, ddof=1))
    lo, hi = sd * math.sqrt((n - 1) / stats.chi2.ppf(0.975, n - 1)), sd * math.sqrt((n - 1) / stats.chi2.ppf(0.025, n - 1))
    print(f"  pair sigma {sd:.2%} [95% chi-square {lo:.2%}, {hi:.2%}] over {n} pairs; variance per GPU-second sigma^2 x s = "
          f"{sd ** 2 * s_pair:.4f} [{lo ** 2 * s_pair:.4f}, {hi ** 2 * s_pair:.4f}] (the step grain's 1x4 k = 1: 0.0300 pooled on session 6's "
          "lease, 0.0573 on session 11's; ../analysis.txt, ../session12/analysis.txt)")
    print(f"  the run's own verdict: {m['units']} launches, launch HL sd {m['unit_sd']:.2%}: MDS {m['slowdown']:.2%}{'*' if m['slowdown'] > lu.TARGET else ''}"
          if "slowdown" in m else f"  the run's own mds record: {m}")
    taus = [("0", 0.0), (f"c's {tau_here:.2%}", tau_here), ("1.06%", 0.0106), ("2.86%", 0.0286)]
    cells = []
    for ti, (tname, tau) in enumerate(taus):
        md, launches, mm = s10.best_mds(src, c1, c, s_pair, tau, SEED + 100 * ti)
        cells.append(f"tau {tname}: {md:.2%}{'*' if md > lu.TARGET else ''} (L={launches}, m={mm})")
    print(f"  simulated from its {len(x)} pairs, symmetrised (sigma {np.std(x, ddof=1):.2%}): " + "; ".join(cells))
    fine = s10.LAUNCHES
    s10.LAUNCHES = tuple(range(8, 29, 2))  # a finer search of L around the best
    w2 = float(np.mean([b["step_times_ms"][1] / 1e3 for b in data["aa10-micro-1x4"][1] if b.get("warmup")]))
    for label, cc, cf in (("as run", c, c1), (f"--warmup-steps 1 (projected: minus 2 x {w2:.2f} s, the mean second warm-up step)", c - 2 * w2, c1 - 2 * w2)):
        cells = []
        for ti, (tname, tau) in enumerate(taus[1:3]):
            md, launches, mm = s10.best_mds(src, cf, cc, s_pair, tau, SEED + 50 + 100 * ti)
            cells.append(f"tau {tname}: {md:.2%}{'*' if md > lu.TARGET else ''} (L={launches}, m={mm})")
        print(f"  L = 8-28 in steps of 2, {label}, later launch {cc:.1f} s: " + "; ".join(cells))
    s10.LAUNCHES = fine
    need = pd.pairs_needed(float(np.std(x, ddof=1)), 0.03, 0.01, 0.9)
    print(f"  from sigma alone (pair-level t, no launch variance): 3% needs {need} pairs = {need * s_pair / 60:.1f} minutes of pairs")
    print("\n  the command's new plan line (interleave.plan_for: paired.launch_plan on the HL variance components, by moments) for "
          "10 GPU-minutes, per run, and the same L x m drawn from the run's own pairs (symmetrised, tau = the plan's launch sd):")
    for ri, (run, (r, _, prs)) in enumerate(data.items()):
        full = dict(r, **il.reanalyse(RAW / run))
        p = il.plan_for(full, s10.BUDGET_S)
        y = d_of(prs)
        y = y - y.mean()
        e = p["at_estimate"]
        summ, _ = lu.draw(np.concatenate([y, -y]), lu.REPS, e["launches"], e["pairs_per_launch"], p["launch_sd"], SEED + 500 + ri)
        rob, _ = lu.draw(np.concatenate([y, -y]), lu.REPS, p["launches"], p["pairs_per_launch"], p["launch_sd"], SEED + 700 + ri)
        bnd = pd.launch_plan(p["budget_s"], p["first_s"], p["launch_s"], p["pair_s"], p["pair_sd"], p["launch_sd_planned"])
        bd, _ = lu.draw(np.concatenate([y, -y]), lu.REPS, bnd.launches, bnd.pairs_per_launch, p["launch_sd"], SEED + 900 + ri)
        print(f"  {run:<18} launch sd {p['launch_sd']:.2%} (90% upper bound {p['launch_sd_planned']:.2%}), pair sd {p['pair_sd']:.2%} (HL): "
              f"for the estimate --launches {e['launches']} of {e['pairs_per_launch']} pairs, MDS {e['mds']:.2%} by the model, "
              f"{lu.mds(summ['hl']):.2%} drawn; the plan line (least regret up to the bound) --launches {p['launches']} of {p['pairs_per_launch']}, "
              f"at the estimate {p['mds_at_estimate']:.2%} by the model, {lu.mds(rob['hl']):.2%} drawn; for the bound alone --launches "
              f"{bnd.launches} of {bnd.pairs_per_launch}, at the estimate {lu.mds(bd['hl']):.2%} drawn")


def section_e(data):
    print("\n\ne. the power each injected run had to flag its nominal slowdown (launch HL sd, t over its launches, its alpha, +2% "
          "threshold), and the runs pooled post hoc\n")
    pools = {"1x4 micro (this lease)": [], "4x1 step (this lease and session 12's)": []}
    for run, (rep, _, pairs) in data.items():
        inj = rep.get("injected")
        if not inj:
            continue
        v = rep["verdict"]
        hls = [pd.hodges_lehmann(g) for g in launch_groups(pairs)]
        sd = float(np.std(hls, ddof=1))
        pw = pd.power(1 + inj["share"], sd, len(hls), v["alpha"], v["threshold"])
        print(f"  {run:<18} nominal +{inj['share']:.1%}, launch HL sd {sd:.2%} over {len(hls)} launches: power {pw:.0%}; {v['outcome']} "
              f"x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}]")
        pools["1x4 micro (this lease)" if rep["settings"]["decomposition"] == "1x4" else "4x1 step (this lease and session 12's)"] += hls
    for i in (1, 2, 3):
        _, _, pairs = read(HERE.parent / "session12" / "raw" / f"host5-4x1-{i}")
        pools["4x1 step (this lease and session 12's)"] += [pd.hodges_lehmann(g) for g in launch_groups(pairs)]
    for name, hls in pools.items():
        est = pd.PairedEstimate(float(np.mean(hls)), float(np.std(hls, ddof=1)), len(hls), 0.05, "launch")
        print(f"  pooled, {name}: {len(hls)} launch HL estimates: x{est.ratio:.4f} [{est.lo:.4f}, {est.hi:.4f}] (90% t, each end "
              f"one-sided 0.05), p(ratio <= 1.02) = {est.p_above(1.02):.2g}; launch HL sd {est.sd:.2%}")


FIXED_L = (6, 10, 12, 16, 20)


def section_f():
    """The plan model's MDS in 10 GPU-minutes at a fixed launch count, per H200 run of sessions 11-13 (their own costs and
    variance components): what one --launches for the nightly costs against each run's best."""
    print("\n\nf. one launch count for the nightly: the plan model's MDS in 10 GPU-minutes at fixed L, per run (its costs, its HL "
          "variance components by moments), against the run's own best L\n")
    runs = [("session13", r) for r in RUNS] + [("session12", f"host5-4x1-{i}") for i in (1, 2, 3)] + [("session12", "host5-1x4"), ("session11", "aa-1x4")]
    for sess, run in runs:
        d = HERE.parent / sess / "raw" / run
        r = json.loads((d / "report.json").read_text())
        r.update(il.reanalyse(d))
        p = il.plan_for(r, s10.BUDGET_S)
        cells = []
        for n in FIXED_L:
            m = int((s10.BUDGET_S - p["first_s"] - (n - 1) * p["launch_s"]) // (n * p["pair_s"]))
            cells.append(f"L {n}: {pd.min_detectable(math.sqrt(p['launch_sd'] ** 2 + p['pair_sd'] ** 2 / m), n):.2%}")
        e = p["at_estimate"]
        print(f"  {sess + '/' + run:<28} launch sd {p['launch_sd']:.2%}: best L {e['launches']:2d} {e['mds']:.2%} | " + ", ".join(cells))


def main():
    print("issue 13 on the H200, session 13\n")
    data = {run: read(RAW / run) for run in RUNS}
    section_a(data)
    section_b(data)
    tau = section_c(data)
    section_d(data, tau)
    section_e(data)
    section_f()


if __name__ == "__main__":
    main()
