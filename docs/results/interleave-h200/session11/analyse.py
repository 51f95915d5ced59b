"""Issue 13 on the H200, session 11: 1x4 at 9 GPU-minutes (A/A and +5% injected), 4x1 +5% injected, and host work sized by
its own clock; the MDS at this lease's measured costs and noise.

    PYTHONPATH=. python docs/results/interleave-h200/session11/analyse.py > docs/results/interleave-h200/session11/analysis.txt

Runs (raw/, one lease per queue; commands in queue.sh and lease-host.sh):
  raw/aa-1x4       A/A 1x4, k = 1, --warmup-steps 2, 10 pre-started launches, 9 minutes
  raw/work5-1x4    the same, +5% injected as casts sized by wall-time ratios (8 + 8 calibration rounds of k = 3), A hooked at 0
  raw/work5-4x1    4x1, k = 3, 6 launches, 5 minutes, injected as raw/work5-1x4
  raw/host/host5-4x1  4x1, k = 3, 4 launches, 2.5 minutes, +5% as host work sized by its own clock (the committed version)

a. Launch costs (start-up + warm-up blocks + stopping), the calibration's share of the blocks' time.
b. Verdicts, launch Hodges-Lehmann summaries, and for the injected runs the injection's nominal share against the measured
   ratio (mean, median and HL of the pair log ratios, with the mean's 95% t interval).
c. Noise and host: pair sigma, robust sd (IQR/1.349), launch HL sd, kernel launch latency, median step, other CPUs busy.
d. MDS in 10 GPU-minutes (alpha 0.01 one-sided, power 0.9, the launch as the unit, Hodges-Lehmann summaries; session 10's
   best_mds, launch_unit.py's draw and mds) at the 1x4 costs measured here, from this lease's 1x4 A/A pairs (symmetrised)
   and from the earlier lease's pooled 1x4 pairs; and the pairs that 3% needs at this lease's noise.
"""

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
from scipy import stats

from harness.judging import paired as pd

HERE = Path(__file__).parent
PARENT = HERE.parent
RAW = HERE / "raw"


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


s10 = _load("analyse_s10", PARENT / "session10" / "analyse.py")
an, lu = s10.an, s10.lu
RUNS = ["aa-1x4", "work5-1x4", "work5-4x1", "host/host5-4x1"]


def costs(rep):
    first = [li for li in rep["launches"] if not li["prestarted"]]
    later = [li for li in rep["launches"] if li["prestarted"]]

    def total(li):
        return li["startup_s"] + (li.get("warmup_s") or 0.0) + (li.get("close_s") or 0.0)
    return (float(np.mean([total(li) for li in first])), float(np.mean([total(li) for li in later])) if later else float("nan"))


def section_a(data):
    print("a. launch costs (s): start-up + warm-up blocks + stopping; the calibration blocks (launch 1) apart\n")
    for run, (rep, d) in data.items():
        c1, c = costs(rep)
        t = rep["timing"]
        blocks = [b for b in blocks_of(run) if b.get("calibration")]
        cal = sum(b["wall_s"] for b in blocks)
        s_pair = sum(r[3] for r in d) / len(d)
        print(f"  {run:<16} first launch {c1:5.1f}, pre-started {c:5.1f} (mean of {len(rep['launches']) - 1}); calibration {cal:5.1f} s in "
              f"{len(blocks)} blocks; pairs {len(d)} at {s_pair:.2f} s; wall {t['wall_s']:.0f} s, start-up {t['startup_s']:.0f} s")


def blocks_of(run):
    return [json.loads(x) for x in (RAW / run / "blocks.jsonl").read_text().splitlines() if x.strip()]


def section_b(data):
    print("\n\nb. verdicts (the command's own), launch HL summaries; injected runs: nominal share against the measured ratio\n")
    for run, (rep, d) in data.items():
        v = rep["verdict"]
        groups = {}
        for lc, x, _, _ in d:
            groups.setdefault(lc, []).append(x)
        hls = ", ".join(f"x{math.exp(pd.hodges_lehmann(g)):.4f}" for g in groups.values())
        print(f"  {run:<16} {rep['settings']['decomposition']} k={rep['settings']['block_steps']} {v['outcome']:<12} x{v['ratio']:.4f} "
              f"[{v['lo']:.4f}, {v['hi']:.4f}] {len(d)} pairs in {len(groups)} launches; launch HL {hls}")
        cal = rep["settings"].get("inject_calibration")
        if cal:
            x = np.array([r[1] for r in d])
            half = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
            inj = rep.get("injected") or {}
            nominal = f"nominal +{inj['share']:.1%} by its own clock ({inj['inject_ms']:.1f} ms per step)" if inj else \
                f"no clock (wall-ratio calibration: +{cal['gain']:.1%} at {cal['probe_casts']:.2f} casts, chose {cal['casts']:.2f})"
            phases = phase_diffs(run)
            print(f"  {'':<16} B - A per phase (median of the block, mean over pairs, sd): "
                  + ", ".join(f"{k} {m:+.1f} ms ({sd:.1f})" for k, (m, sd) in phases.items()))
            print(f"  {'':<16} {nominal}; measured: mean x{math.exp(x.mean()):.4f} [95% t {math.exp(x.mean() - half):.4f}, "
                  f"{math.exp(x.mean() + half):.4f}], median x{math.exp(np.median(x)):.4f}, HL x{math.exp(pd.hodges_lehmann(x.tolist())):.4f}")


def pairs_of(run):
    pairs = {}
    for b in blocks_of(run):
        if b["pair"] is not None and not b.get("warmup"):
            pairs.setdefault(b["pair"], {})[b["side"]] = b
    return [p for p in pairs.values() if "a" in p and "b" in p]


def phase_diffs(run):
    out = {}
    for k in ("data", "forward", "backward", "optimizer", "other"):
        v = np.array([np.median(p["b"]["phases_ms"][k]) - np.median(p["a"]["phases_ms"][k]) for p in pairs_of(run)])
        out[k] = (float(v.mean()), float(v.std()))
    return out


def section_c(data):
    print("\n\nc. noise and host\n")
    for run, (rep, d) in data.items():
        x = np.array([r[1] for r in d])
        q1, q3 = np.percentile(x, [25, 75])
        li = rep["launches"][0]
        lus = [li_["ready"]["a"]["host_probe"]["launch_us"] for li_ in rep["launches"]]
        busy = np.mean([r[2] > 0.5 for r in d])
        print(f"  {run:<16} sigma {np.std(x, ddof=1):6.2%}, robust {(q3 - q1) / 1.349:6.2%}, launch HL sd {rep['mds']['unit_sd']:.2%}; boot "
              f"{li['env']['a']['boot_id'][:8]}, kernel launch {min(lus):.1f}-{max(lus):.1f} us over the launches, median step A "
              f"{rep['step_ms_median']['a']:.0f} ms; pairs beside another busy CPU {busy:.0%}")
        ps = pairs_of(run)
        w = np.log([p["b"]["wall_s"] / p["a"]["wall_s"] for p in ps])
        c = np.log([p["b"]["cpu_s"] / p["a"]["cpu_s"] for p in ps])
        print(f"  {'':<16} block wall ratio sd {np.std(w, ddof=1):.2%}, worker CPU-time ratio sd {np.std(c, ddof=1):.2%}, correlation "
              f"{np.corrcoef(w, c)[0, 1]:.2f}: CPU time is no quieter metric here")


def section_d(data):
    rep, d = data["aa-1x4"]
    c1, c = costs(rep)
    s_pair = sum(r[3] for r in d) / len(d)
    here = np.array([r[1] for r in d])
    here = here - here.mean()
    src_here = np.concatenate([here, -here])
    comps = an.load_comparisons(PARENT)
    earlier = [(label, src) for label, src, kind in an.pools(comps, "1x4") if kind == "pool sym"][0]
    print(f"\n\nd. 1x4 MDS in {s10.BUDGET_S / 60:g} GPU-minutes at this lease's costs (C1 {c1:.1f} s, C {c:.1f} s, {s_pair:.2f} s per pair): alpha "
          f"{lu.ALPHA}, power {lu.POWER}, launch unit (HL), {lu.REPS} replicates, best L of {s10.LAUNCHES}; * above 3%\n")
    for si, (label, src) in enumerate([(f"this lease's A/A pairs, symmetrised (sigma {np.std(src_here, ddof=1):.2%})", src_here),
                                       (f"earlier lease: {earlier[0]}", earlier[1])]):
        cells = []
        for ti, (tname, tau) in enumerate(lu.TAUS):
            md, launches, m = s10.best_mds(src, c1, c, s_pair, tau, lu.SEED + 3000 + 100 * si + 10 * ti)
            cells.append(f"tau {tname}: {md:5.2%}{'*' if md > lu.TARGET else ' '} (L={launches}, m={m})")
        print(f"  {label:<70} | " + "; ".join(cells))
    hl_sd = rep["mds"]["unit_sd"] * math.sqrt(len(d) / len(rep["launches"]))  # the launch HL sd as a per-pair sd
    need = pd.pairs_needed(hl_sd, 0.03, 0.01, 0.9)
    print(f"\n  from the verdict's own figures: launch HL sd {rep['mds']['unit_sd']:.2%} over {len(d) / len(rep['launches']):.1f} pairs per launch = "
          f"{hl_sd:.2%} per pair; 3% needs about {need} pairs = {need * s_pair / 60:.1f} minutes of pairs, plus launches")


def main():
    print("issue 13 on the H200, session 11\n")
    data = {run: s10.load(run, RAW) for run in RUNS}
    section_a(data)
    section_b(data)
    section_c(data)
    section_d(data)


if __name__ == "__main__":
    main()
