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
"""

import importlib.util
from pathlib import Path

import numpy as np

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


def main():
    print("issue 13 on the H200, session 12\n")
    data = {run: s11.s10.load(run, RAW) for run in RUNS}
    for run, (rep, d) in data.items():
        assert len(d) == rep["pairs"], (run, len(d), rep["pairs"])
    s11.section_a(data)
    s11.section_b(data)
    s11.section_c(data)
    section_d(data)


if __name__ == "__main__":
    main()
