"""Issue 13 on the H200, session 16: three 9-minute comparisons with --warm-apart, as the nightly runs them otherwise.

    PYTHONPATH=. python docs/results/interleave-h200/session16/analyse.py > docs/results/interleave-h200/session16/analysis.txt

Runs (one lease, boot ba09b90f, code df0899b), each one device call of
`bash docs/results/interleave-h200/session15/one-call.sh NAME DEC 9 SEED --warm-apart [...]` (raw/device-calls.txt):
raw/aa10-1x4-wa (1x4 A/A), raw/host5-1x4-wa (1x4, B with host work sized for +5%), raw/aa10-4x1-wa (4x1 A/A).

a. The verdicts, re-judged from blocks.jsonl by the command's own analysis (interleave.analyse) at each run's settings, against
   its report.json; each run's own MDS (alpha 0.01, power 0.9, the launch as the unit) and its launch components.
b. What a later launch cost: start-up (the pre-started workers' build), warm-up, stopping; against session 15's 1x4 A/A
   (same command and settings, without --warm-apart; its costs from its blocks as its analyse.py takes them) and session 14's
   lease-2 1x4 A/A (report.json). And whether moving home after a warm-up apart costs the first measured block anything:
   each side's first measured step (1x4: its first pair's step) against the median of its launch, launches 2-16 (moved)
   and launch 1 (built and warmed on the measured CPU).
c. The MDS confirmed by simulation: launches of each run's own pairs (drawn with replacement, 16 launches of the run's mean
   launch size) plus a N(0, launch sd) offset per launch; the pairs either pooled (centred on their mean and symmetrised, as
   session 15 drew them: they carry the launch effects already) or within (each launch's pairs less its HL, rescaled and
   symmetrised: the launch effect from the offset alone, the model the plan assumes) or nested (a launch of the run drawn with
   replacement, then pairs from its own residuals: launches that were noisier than others stay so; Levene's test of equal
   spread across launches, on the residuals, says whether that matters); at the launch sd by moments and at its
   90% bound; the smallest slowdown the launch-unit t test (alpha 0.01, one-sided against ratio 1) finds in 90% of
   replicates (launch_unit.mds); the same from the run's launch HL estimates themselves (centred, symmetrised, 16 redrawn:
   no model of the pairs, only of the launches), with the t figure from their sd and at its chi-square 90% upper bound
   (15 df); and the false-alarm rate of the run's own verdict rule (alpha 0.05 against +2%) at no
   slowdown.
d. The injected run: B's host work per step by its own clock against B's step without it (interleave.injected_share: the
   nominal slowdown) and the slowdown measured.
e. What the cheaper launch alone is worth, by the plan model (paired.launch_plan) at session 15's noise.
f. 4x1's launches that differ in spread: per launch, the robust sd of its pair log ratios against its median step and
   the share of its blocks whose host canary was slow (above 1.25 x the run's median canary).
"""

import json
import math
import runpy
from pathlib import Path
from statistics import fmean, median
from types import SimpleNamespace

import numpy as np
from scipy import stats

from harness.commands import interleave as il
from harness.files import read_jsonl
from harness.judging import paired as pd

HERE = Path(__file__).parent
RAW = HERE / "raw"
RUNS = ("aa10-1x4-wa", "host5-1x4-wa", "aa10-4x1-wa")
S13 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session13" / "analyse.py")))
S15 = SimpleNamespace(**runpy.run_path(str(HERE.parent / "session15" / "analyse.py")))
lu = S13.lu
SEED = 1616


def load(name):
    run = RAW / name
    rep = json.loads((run / "report.json").read_text())
    return rep, read_jsonl(run / "blocks.jsonl")


def section_a(runs):
    print("a. the verdicts, re-judged from the blocks (interleave.analyse at each run's settings), and each run's own MDS\n")
    for name, (rep, blocks) in runs.items():
        st = rep["settings"]
        r = il.analyse(blocks, alpha=st["alpha"], threshold=st["threshold"], looks=len(st["looks"]), metric=st["metric"],
                       drop_first=st["drop_first_step"], session=st["session_id"], test=st["test"], unit=st["unit"])
        v, m, c = r["verdict"], r["mds"], r["launch_components"]
        same = all(v[k] == rep["verdict"][k] for k in ("outcome", "ratio", "lo", "hi", "pairs", "n_units"))
        print(f"  {name:<13} {st['decomposition']} {st['grain']} k={st['block_steps']}: {v['outcome']}, x{v['ratio']:.3f} "
              f"[{v['lo']:.3f}, {v['hi']:.3f}], {v['pairs']} pairs in {v['n_units']} launches, {rep['timing']['wall_s']:.0f} s wall "
              f"start-up included; same as report.json: {'yes' if same else 'NO'}")
        print(f"      own MDS {m['slowdown']:.2%} (alpha 0.01, power 0.9, launch HL sd {m['unit_sd']:.2%}); pair sigma "
              f"{v['sigma_pair']:.2%}; launch components: pair sd {c['pair_sd']:.2%}, launch sd {c['launch_sd']:.2%} "
              f"(90% bound {c['launch_sd_upper']:.2%}); F test of a launch effect p = {v['launch_check']['p']:.3f}")


def later_costs(rep):
    lis = [li for li in rep["launches"] if li["prestarted"]]
    return {k: fmean(li.get(k) or 0.0 for li in lis) for k in ("startup_s", "warmup_s", "close_s")}


def section_b(runs):
    print("\n\nb. what a later launch cost (s, mean over the pre-started launches): build + warm-up + stopping\n")
    print("  run                                       build  warm-up  stopping  total  pairs/launch  s/pair")
    for name, (rep, _) in runs.items():
        c = later_costs(rep)
        print(f"  session 16 {name:<30} {c['startup_s']:6.1f} {c['warmup_s']:8.1f} {c['close_s']:9.1f} {sum(c.values()):6.1f} "
              f"{fmean(rep['launch_sizes']):13.1f} {rep['wall_s_per_pair']:7.2f}")
    s14 = json.loads((HERE.parent / "session14" / "raw2" / "aa45-micro-1x4-L10" / "report.json").read_text())
    c = later_costs(s14)
    print(f"  session 14 aa45-micro-1x4-L10 (sequential) {c['startup_s']:6.1f} {c['warmup_s']:8.1f} {c['close_s']:9.1f} {sum(c.values()):6.1f} "
          f"{fmean(s14['launch_sizes']):13.1f} {s14['wall_s_per_pair']:7.2f}")
    blocks15 = read_jsonl(HERE.parent / "session15" / "raw" / "aa10-1x4" / "blocks.jsonl")
    by = {}
    for x in blocks15:
        by.setdefault(x["launch"], []).append(x)
    _, later15 = S15.costs(by, [n for n in sorted(by) if 1 < n < 15])
    print(f"  session 15 aa10-1x4 (sequential)           {'':>6} {'':>8} {'':>9} {later15:6.1f}   (warm-up + gap, from its blocks)")

    print("\n  moving home: each side's first measured step / the median measured step of its launch (1x4: merged micro-batches)")
    for name, (_rep, blocks) in runs.items():
        pairs = il.pairs_of(blocks)
        by = {}
        for p in pairs:
            for s in "ab":
                by.setdefault((p["launch"], s), []).append(p[s]["step_times_ms"][0])
        first1 = [by[(1, s)][0] / median(by[(1, s)]) for s in "ab" if (1, s) in by]
        moved = [v[0] / median(v) for (n, s), v in by.items() if n > 1 and len(v) >= 3]
        print(f"  {name:<13} launches 2-16 (moved): median x{median(moved):.3f}, range x{min(moved):.3f}-x{max(moved):.3f} over {len(moved)}; "
              f"launch 1 (not moved): " + ", ".join(f"x{x:.3f}" for x in first1))


def section_c(runs):
    print(f"\n\nc. the MDS by simulation from each run's own pairs ({lu.REPS} replicates, seed {SEED} + offsets; alpha 0.01, power 0.9, "
          "the launch as the unit)\n")
    print("  run           pairs   launches x pairs  launch sd   MDS drawn  | at the 90% bound: sd   MDS drawn | false alarms of the run's rule at x1.00")
    for i, (name, (rep, blocks)) in enumerate(runs.items()):
        pairs = il.pairs_of(blocks)
        c = rep["launch_components"]
        n, m = len(rep["launch_sizes"]), round(fmean(rep["launch_sizes"]))
        for how, y in (("pooled", pooled(pairs)), ("within", within(pairs)), ("nested", by_launch(pairs))):
            draw = nested_draw if how == "nested" else lu.draw
            summ, _ = draw(y, lu.REPS, n, m, c["launch_sd"], SEED + 2 * i)
            hi, _ = draw(y, lu.REPS, n, m, c["launch_sd_upper"], SEED + 2 * i + 1)
            fa = float(np.mean(lu.verdicts(summ["hl"], rep["settings"]["alpha"], rep["settings"]["threshold"])))
            print(f"  {name:<13} {how:<7} {n:3d} x {m:2d}      {c['launch_sd']:6.2%}   {lu.mds(summ['hl']):8.2%}   |  {c['launch_sd_upper']:17.2%}"
                  f" {lu.mds(hi['hl']):9.2%} | {fa:.3f}")
        hl = np.array([pd.hodges_lehmann(g) for g in S13.launch_groups(pairs)])
        hl = np.concatenate([hl - hl.mean(), -(hl - hl.mean())])
        drawn = hl[np.random.default_rng(SEED + 100 + i).integers(0, len(hl), (lu.REPS, n))]
        sd, df = float(np.std(hl[: len(hl) // 2], ddof=1)), n - 1
        sd_hi = sd * math.sqrt(df / stats.chi2.ppf(0.1, df))
        print(f"  {name:<13} launches {n:3d} of the run's launch HL estimates, redrawn: MDS {lu.mds(drawn):.2%} (from their sd "
              f"{sd:.2%}: {pd.min_detectable(sd, n, 0.01, 0.9):.2%}; at its chi-square 90% bound {sd_hi:.2%}: "
              f"{pd.min_detectable(sd_hi, n, 0.01, 0.9):.2%})")
        print(f"  {'':<13} Levene's test of equal spread across launches (residuals, not symmetrised) p = "
              f"{stats.levene(*[g[:len(g) // 2] for g in by_launch(pairs)]).pvalue:.3f}")


def pooled(pairs):
    """The run's pair log ratios, centred on their mean and symmetrised (the null of an A/A pair); they still carry the
    run's launch effects, so a launch offset drawn on top counts the launch sd twice."""
    y = S13.d_of(pairs)
    return np.concatenate([y - y.mean(), -(y - y.mean())])


def by_launch(pairs):
    """Each launch's residuals, kept apart: its pairs less their Hodges-Lehmann estimate, rescaled by sqrt(m/(m-1)) as
    paired.launch_components does, followed by their mirror image."""
    out = []
    for g in S13.launch_groups(pairs):
        g = np.array(g)
        if len(g) >= 2:
            r = (g - pd.hodges_lehmann(g.tolist())) * math.sqrt(len(g) / (len(g) - 1))
            out.append(np.concatenate([r, -r]))
    return out


def nested_draw(groups, reps, launches, m, tau, seed):
    """Launch summaries drawn in two stages: a launch of the run, with replacement, then m of its own residuals, plus a
    N(0, tau) offset; launches that were noisier than others stay so (the pooled draw spreads their pairs over all)."""
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(groups), (reps, launches))
    x = np.empty((reps, launches, m))
    for k, g in enumerate(groups):
        at = pick == k
        x[at] = g[rng.integers(0, len(g), (int(at.sum()), m))]
    x = x + (rng.normal(0.0, tau, (reps, launches, 1)) if tau else 0.0)
    return {"hl": lu.hl_rows(x), "mean": x.mean(axis=-1)}, x


def within(pairs):
    """The residuals within launches (:func:`by_launch`) pooled, then symmetrised; the launch effect then comes from the
    drawn offset alone."""
    y = np.concatenate([g[: len(g) // 2] for g in by_launch(pairs)])
    return np.concatenate([y, -y])


def section_d(runs, name="host5-1x4-wa"):
    rep, blocks = runs[name]
    inj = il.injected_share(blocks)
    ratio = rep["verdict"]["ratio"]
    print(f"\n\nd. the injected run ({name})\n")
    print(f"  B's host work: {inj['inject_ms']:.1f} ms per step, a nominal +{inj['share']:.2%} on B's step without it, over {inj['blocks']} "
          f"pairs (target +5%); measured B/A x{ratio:.3f}: the work cost x{math.log(ratio) / math.log(1 + inj['share']):.2f} its own clock")


def section_e(runs):
    """What the cheaper launch alone is worth: session 15's noise (pair sd 5.95%, launch sd 2.60%, its first launch 50.9 s and
    2.85 s per pair; session15/analysis.txt, section d) planned for 10 minutes with its later launch of 13.3 s, and with this
    session's 1x4 A/A later launch."""
    later16 = sum(later_costs(runs["aa10-1x4-wa"][0]).values())
    print("\n\ne. the cheaper launch alone, at session 15's noise (pair sd 5.95%, launch sd 2.60%), 10 minutes, alpha 0.01, power 0.9\n")
    for name, later in (("session 15's later launch", 13.3), ("this session's (--warm-apart)", later16)):
        p = pd.launch_plan(600.0, 50.9, later, 2.85, 0.0595, 0.026)
        print(f"  {name:<31} {later:5.1f} s: best {p.launches} launches of {p.pairs_per_launch} pairs, MDS {p.mds:.2%}")


def section_f(runs):
    """4x1's launches that differ in spread: their pair noise against their speed and the host canary."""
    _, blocks = runs["aa10-4x1-wa"]
    pairs = il.pairs_of(blocks)
    slow = 1.25 * float(np.median([b["canary_ms"] for b in blocks if not b["warmup"]]))
    print("\n\nf. aa10-4x1-wa: which launches were noisy (robust sd of the pair log ratio: IQR / 1.349)\n")
    print("  launch  pairs  robust sd  median step ms  canary slow")
    rows = []
    for n, g in zip(sorted({p["launch"] for p in pairs}), S13.launch_groups(pairs)):
        ps = [p for p in pairs if p["launch"] == n]
        step = float(np.median([t for p in ps for s in "ab" for t in p[s]["step_times_ms"]]))
        slow_share = float(np.mean([p[s]["canary_ms"] > slow for p in ps for s in "ab"]))
        rows.append((stats.iqr(g) / 1.349, step))
        print(f"  {n:6d} {len(g):6d} {rows[-1][0]:10.1%} {step:15.0f} {slow_share:12.0%}")
    rho = stats.spearmanr([r[0] for r in rows], [r[1] for r in rows])
    print(f"\n  Spearman's rho of the robust sd against the launch's median step: {rho.statistic:+.2f} (p = {rho.pvalue:.3f}; one run, "
          "looked at after the fact)")


def main():
    print("issue 13 on the H200, session 16: --warm-apart\n")
    runs = {n: load(n) for n in RUNS}
    section_a(runs)
    section_b(runs)
    section_c(runs)
    section_d(runs)
    section_e(runs)
    section_f(runs)


if __name__ == "__main__":
    main()
