"""Issue 13 on the H200, session 12: three 4x1 comparisons and one 1x4 with +5% host work injected (sized by its own clock).

    PYTHONPATH=. python docs/results/interleave-h200/session12/analyse.py > docs/results/interleave-h200/session12/analysis.txt

Runs (raw/, one lease, queue.sh): raw/host5-4x1-{1,2,3} (4x1, k = 3, 6 pre-started launches, 5 minutes each) and
raw/host5-1x4 (1x4, k = 1, 10 pre-started launches, 8 minutes); side B slowed by --inject-work-b-percent 5.

a. Launch costs, as session 11's section a.
b. Verdicts, launch HL summaries, B - A per phase, and the injection's nominal share (its own clock) against the measured ratio.
c. Noise and host, as session 11's section c.
d. Why a run was not flagged: the power each run had to flag its own nominal slowdown against the +2% threshold at its
   alpha (0.05, one look), from its launch HL sd and launch count (the noncentral t of harness.judging.paired.power);
   and the three 4x1 runs pooled post hoc (18 launch HL estimates, t, the same alpha and threshold): what 15 GPU-minutes
   of this host give.
e. The micro grain (raw/micro/aa-micro-1x4, another lease: 1x4 A/A, --grain micro, k = 1, 3 pre-started launches, 3
   minutes): pair sigma with its 95% chi-square interval, cost per pair, variance per GPU-second against the step grain's
   1x4 A/A of session 11 (raw of ../session11), how closely A's and B's units follow each other (the correlation of their
   log times within a unit pair, against that of the two blocks of a step-grain pair), and the 1x4 MDS in 10 GPU-minutes
   at this lease's costs by session 10's simulation (best_mds: L launches of m pairs, Hodges-Lehmann launch summaries,
   t over L, alpha 0.01, power 0.9), drawing from its pairs, symmetrised.
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
RUNS = ["host5-4x1-1", "host5-4x1-2", "host5-4x1-3", "host5-1x4"]


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


s11 = _load("analyse_s11", HERE.parent / "session11" / "analyse.py")
s11.RAW = RAW  # session 11's sections read the blocks from its module-level RAW


def launch_hls(d):
    groups = {}
    for lc, x, _, _ in d:
        groups.setdefault(lc, []).append(x)
    return [pd.hodges_lehmann(g) for g in groups.values()]


def section_d(data):
    print("\n\nd. the power each run had to flag its nominal slowdown (launch HL sd, t over its launches, its alpha, +2% threshold)\n")
    pooled = []
    for run, (rep, d) in data.items():
        v, inj = rep["verdict"], rep["injected"]
        hls = launch_hls(d)
        sd = float(np.std(hls, ddof=1))
        pw = pd.power(1 + inj["share"], sd, len(hls), v["alpha"], v["threshold"])
        print(f"  {run:<12} nominal +{inj['share']:.1%}, launch HL sd {sd:.2%} over {len(hls)} launches: power {pw:.0%}; "
              f"{v['outcome']} x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}]")
        if rep["settings"]["decomposition"] == "4x1":
            pooled += hls
    est = pd.PairedEstimate(float(np.mean(pooled)), float(np.std(pooled, ddof=1)), len(pooled), 0.05, "launch")
    print(f"\n  the three 4x1 runs pooled post hoc ({len(pooled)} launch HL estimates, about 15 GPU-minutes): x{est.ratio:.4f} "
          f"[{est.lo:.4f}, {est.hi:.4f}] (90% t, each end one-sided 0.05), p(ratio <= 1.02) = {est.p_above(1.02):.2g}; "
          f"launch HL sd {est.sd:.2%}")


def _read(run_dir):
    rep = json.loads((run_dir / "report.json").read_text())
    blocks = [json.loads(x) for x in (run_dir / "blocks.jsonl").read_text().splitlines() if x.strip()]
    return rep, blocks


def section_e():
    rep, blocks = _read(RAW / "micro" / "aa-micro-1x4")
    srep, sblocks = _read(HERE.parent / "session11" / "raw" / "aa-1x4")
    v = rep["verdict"]
    print("\n\ne. the micro grain: 1x4 A/A, --grain micro, k = 1 (4 single micro-batches per side and pair), 3 pre-started launches, 3 minutes\n")
    print(f"  verdict: {v['message']}")
    rows = {}
    for name, bl in (("micro (this session)", blocks), ("step (session 11 aa-1x4)", sblocks)):
        pairs = il.pairs_of(bl)
        d = np.array([math.log(p["b"]["step_times_ms"][0] / p["a"]["step_times_ms"][0]) for p in pairs])
        n = len(d)
        sd = float(np.std(d, ddof=1))
        lo, hi = sd * math.sqrt((n - 1) / stats.chi2.ppf(0.975, n - 1)), sd * math.sqrt((n - 1) / stats.chi2.ppf(0.025, n - 1))
        cost = float(np.mean([p["a"]["wall_s"] + p["b"]["wall_s"] for p in pairs]))
        q1, q3 = np.percentile(d, [25, 75])
        rows[name] = (d, sd, cost)
        print(f"  {name:<26} {n:3d} pairs: sigma {sd:6.2%} [95% {lo:.2%}, {hi:.2%}], robust {(q3 - q1) / 1.349:6.2%}; blocks' wall "
              f"{cost:.2f} s per pair; variance per GPU-second sigma^2 x s = {sd ** 2 * cost * 1e4:.1f} (%^2 s)")
    (_, sm, cm), (_, ss, cs) = rows["micro (this session)"], rows["step (session 11 aa-1x4)"]
    print(f"  per GPU-second the micro grain's variance is {sm ** 2 * cm / (ss ** 2 * cs):.2f} of the step grain's (different leases)")
    units = [b for b in blocks if b.get("unit") is not None]
    by = {}
    for b in units:
        by.setdefault((b["pair"], b["unit"]), {})[b["side"]] = b
    ua = np.log([u["a"]["wall_s"] for u in by.values() if len(u) == 2])
    ub = np.log([u["b"]["wall_s"] for u in by.values() if len(u) == 2])
    pos = {}
    for u in by.values():
        if len(u) == 2:
            pos.setdefault(u["a"]["unit"], []).append(math.log(u["b"]["wall_s"] / u["a"]["wall_s"]))
    sp = il.pairs_of(sblocks)
    sa = np.log([p["a"]["wall_s"] for p in sp])
    sb = np.log([p["b"]["wall_s"] for p in sp])
    print(f"  A and B within a unit pair (one micro-batch each): log-time correlation {np.corrcoef(ua, ub)[0, 1]:.2f} over {len(ua)} units; "
          f"within a step-grain pair (one step each, session 11): {np.corrcoef(sa, sb)[0, 1]:.2f} over {len(sa)} pairs")
    print("  per unit position (micro-batch 1-4 of the step; 4 carries the optimizer step): median unit A "
          + ", ".join(f"{j}: {np.median([u['a']['wall_s'] for u in by.values() if len(u) == 2 and u['a']['unit'] == j]) * 1e3:.0f} ms" for j in sorted(pos))
          + "; sd of log(B/A) " + ", ".join(f"{j}: {np.std(pos[j], ddof=1):.1%}" for j in sorted(pos)))
    switch = [li for li in rep["launches"]]
    c1, c = s11.costs(rep)
    s_pair = rep["wall_s_per_pair"]
    src = rows["micro (this session)"][0]
    n_micro = len(src)
    src = src - src.mean()
    src = np.concatenate([src, -src])
    print(f"\n  1x4 MDS in {s11.s10.BUDGET_S / 60:g} GPU-minutes at this lease's costs (first launch {c1:.1f} s, pre-started {c:.1f} s, "
          f"{s_pair:.2f} s per pair; {len(switch)} launches measured), from its {n_micro} pairs symmetrised: ", end="")
    cells = []
    for ti, (tname, tau) in enumerate(s11.lu.TAUS):
        md, launches, m = s11.s10.best_mds(src, c1, c, s_pair, tau, s11.lu.SEED + 5000 + 10 * ti)
        cells.append(f"tau {tname}: {md:.2%}{'*' if md > s11.lu.TARGET else ''} (L={launches}, m={m})")
    print("; ".join(cells))
    need = pd.pairs_needed(sm, 0.03, 0.01, 0.9)
    print(f"  from sigma alone (pair-level t, no launch variance): 3% needs {need} pairs = {need * s_pair / 60:.1f} minutes of pairs; "
          f"at the upper end of sigma's interval {pd.pairs_needed(rows['micro (this session)'][1] * math.sqrt((n_micro - 1) / stats.chi2.ppf(0.025, n_micro - 1)), 0.03, 0.01, 0.9)} pairs")


def main():
    print("issue 13 on the H200, session 12\n")
    data = {run: s11.s10.load(run, RAW) for run in RUNS}
    for run, (rep, d) in data.items():
        assert len(d) == rep["pairs"], (run, len(d), rep["pairs"])
    s11.section_a(data)
    s11.section_b(data)
    s11.section_c(data)
    section_d(data)
    section_e()


if __name__ == "__main__":
    main()
