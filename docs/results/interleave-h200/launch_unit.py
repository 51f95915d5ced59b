"""The launch as the unit (session 9): the command's verdict from 3 launches on, simulated from the H200 pairs.

    PYTHONPATH=. python docs/results/interleave-h200/launch_unit.py > docs/results/interleave-h200/launch_unit.txt

The verdict (harness.judging.paired.PairedCheck, unit "launch"): each launch's pair log ratios d are summarised by their
Hodges-Lehmann estimate (test "rank", the default) or their mean (test "t"), and a one-sample t test over the L launch
summaries (L - 1 df) judges them. No pre-test: the launch variance tau^2 is in the spread of the summaries whatever it is.

e. Does a launch add anything to the Hodges-Lehmann summaries? Over the 8 comparisons pinned to one CPU (as
   launch_bound.py, which asks it of the launch means): the statistic sum over comparisons and launches of
   n_l (HL_l - HL_c)^2 (HL_c: the comparison's own HL), against the same with the pairs of each comparison permuted
   over its launches (PERMS permutations, seed SEED): the one-sided permutation p of "launches add nothing", and the
   excess of the observed statistic over the permutation mean as a launch sd.
f. What the verdict resolves in 10 GPU-minutes: n = floor((600 s - L x launch cost) / s per pair) pairs in L launches
   of m = n // L pairs, the launch cost and s per pair measured in the one-CPU comparisons (analyse.py's section c,
   the same function); REPS replicates of L x m pairs drawn with replacement from a source of measured d (analyse.py's
   sources: every comparison's d centred and pooled, and the widest comparison alone, both symmetrised: the null of an
   A/A pair), a N(0, tau) offset added per launch, tau = 0, the moments launch sd of launch_bound.py (1.06%) and its 95%
   upper bound (2.86%). FA: share of replicates flagged at no slowdown (alpha 0.01 one-sided, threshold 0; nominal
   0.01); MDS: the smallest slowdown flagged in 90% of them (bisection on the same draws: the HL and the mean move with
   a shift of every d, so the summaries are drawn once). "hl" rows are the command's default; "mean" rows the same
   with launch means (--test t).
g. The same verdicts made by PairedCheck.decide itself on the first VALIDATE replicates of each f row, at the row's MDS:
   they must agree with the vectorised ones.
i. The same MDS as f (hl, pooled source) at the best L, had a launch cost less (20 s, 10 s) than measured: what
   --prestart (the next launch's workers import while this one runs) would buy if it cut the launch cost so on the
   H200 (hypothetical costs: 20 of the 23-27 s of start-up there were imports).
h. Minutes to flag a 5% slowdown against the command's threshold +2% at alpha 0.05 (one look), power 0.9, with the
   launch as the unit (pooled source, tau as in f): what an injected-work comparison on the H200 needs.
"""

import importlib.util
import math
from pathlib import Path

import numpy as np
from scipy import stats

from harness.judging import paired as pd

HERE = Path(__file__).parent
_spec = importlib.util.spec_from_file_location("analyse_h200", HERE / "analyse.py")
an = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(an)
_spec = importlib.util.spec_from_file_location("launch_bound_h200", HERE / "launch_bound.py")
lb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lb)

TAUS = (("0", 0.0), ("moments", 0.0106), ("95% bound", 0.0286))  # launch sd: none, and launch_bound.txt's two figures
LAUNCHES = (3, 4, 6, 8, 10, 12)
BUDGET_S, ALPHA, POWER, TARGET = 600, 0.01, 0.9, 0.03
REPS, SEED, PERMS, VALIDATE = 2000, 41, 2000, 100
FLAG = (0.05, 0.05, 0.02)  # slowdown, alpha, threshold of section h


def hl_rows(x):
    """Hodges-Lehmann estimate along the last axis (median of the Walsh averages), in chunks of rows to bound memory."""
    x = np.asarray(x)
    i, j = np.triu_indices(x.shape[-1])
    flat = x.reshape(-1, x.shape[-1])
    step = max(1, 4_000_000 // len(i))
    out = np.concatenate([np.median((flat[r:r + step, i] + flat[r:r + step, j]) / 2, axis=-1) for r in range(0, len(flat), step)])
    return out.reshape(x.shape[:-1])


def spread(gs):
    c = float(hl_rows(np.concatenate(gs)))
    return sum(len(g) * (float(hl_rows(g)) - c) ** 2 for g in gs)


def section_e():
    print("e. launch effect in the Hodges-Lehmann launch summaries, one-CPU comparisons (permutation test, pairs permuted over")
    print(f"   the launches of their own comparison, {PERMS} permutations, seed {SEED}):\n")
    rng = np.random.default_rng(SEED)
    obs, perm, n_launches, n_pairs = 0.0, np.zeros(PERMS), 0, 0
    for name in lb.DIRS:  # the one-CPU comparisons, as launch_bound.py
        gs = [np.asarray(g) for g in lb.launch_groups(name)]
        o = spread(gs)
        sizes = [len(g) for g in gs]
        d = np.concatenate(gs)
        cuts = np.cumsum(sizes)[:-1]
        p = np.array([spread(np.split(rng.permutation(d), cuts)) for _ in range(PERMS)])
        obs, perm, n_launches, n_pairs = obs + o, perm + p, n_launches + len(gs), n_pairs + len(d)
        hls = ", ".join(f"x{math.exp(pd.hodges_lehmann(g.tolist())):.4f}" for g in gs)
        print(f"   {name:<20} launches {len(gs)}, pairs {len(d):>3}, launch HL {hls}; statistic {o * 1e4:7.2f}e-4, permutation mean {p.mean() * 1e4:6.2f}e-4")
    p_value = (1 + np.sum(perm >= obs)) / (1 + PERMS)
    excess = max(0.0, obs - perm.mean())
    tau = math.sqrt(excess / n_pairs)  # sum n_l tau^2 over launches = n_pairs tau^2 (expected excess, between-launch df aside)
    print(f"\n   pooled: {n_launches} launches, {n_pairs} pairs; statistic {obs * 1e4:.2f}e-4 against a permutation mean of {perm.mean() * 1e4:.2f}e-4 "
          f"(95th percentile {np.percentile(perm, 95) * 1e4:.2f}e-4); permutation p = {p_value:.3f}; launch sd from the excess {tau:.2%}")


def verdicts(summaries, alpha, threshold=0.0):
    """Per row (replicate) of launch summaries: the t test over the launches rejects "ratio <= 1 + threshold" at alpha."""
    return stats.ttest_1samp(summaries, math.log(1 + threshold), axis=-1, alternative="greater").pvalue <= alpha


def mds(summaries):
    def rate(s_):
        return float(np.mean(verdicts(summaries + math.log(1 + s_), ALPHA)))

    lo, hi = 0.0, 0.01
    while rate(hi) < POWER:
        lo, hi = hi, 2 * hi
        if hi > 1:
            return float("inf")
    while hi - lo > 1e-5:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if rate(mid) >= POWER else (mid, hi)
    return hi


def draw(src, reps, launches, m, tau, seed):
    """Launch summaries (hl and mean) of reps x launches launches of m pairs drawn from src, each with a N(0, tau) offset,
    and the pairs themselves (for the check against PairedCheck)."""
    rng = np.random.default_rng(seed)
    x = src[rng.integers(0, len(src), (reps, launches, m))]
    off = rng.normal(0.0, tau, (reps, launches, 1)) if tau else np.zeros((reps, launches, 1))
    x = x + off
    return {"hl": hl_rows(x), "mean": x.mean(axis=-1)}, x


def section_f(comps):
    print(f"\n\nf. the launch as the unit in {BUDGET_S / 60:g} GPU-minutes: alpha {ALPHA} one-sided against ratio 1, power {POWER}; {REPS} replicates per row, "
          f"seed {SEED} + offsets;\n   launch sd tau: " + ", ".join(f"{k} {v:.2%}" for k, v in TAUS) + " (launch_bound.txt). * above 3%.\n")
    agree = total = 0
    best = {}
    for dec in an.CHOSEN_K:
        _, per_launch, s_pair, _ = an.overhead(comps, dec)
        srcs = [(label, src) for label, src, kind in an.pools(comps, dec) if kind.endswith("sym")]
        print(f"  {dec} (k = {an.CHOSEN_K[dec]}): {per_launch:.1f} s per launch, {s_pair:.2f} s per pair (one-CPU comparisons)")
        print(f"     {'source':<38} {'tau':>9} {'summary':>7} | " + " ".join(f"{'L=' + str(L) + ' (' + str(int((BUDGET_S - L * per_launch) // s_pair) // L) + ')':>14}" for L in LAUNCHES))
        print(f"     {'':<38} {'':>9} {'':>7} | " + " ".join(f"{'FA    MDS':>14}" for _ in LAUNCHES))
        for si, (label, src) in enumerate(srcs):
            for ti, (tname, tau) in enumerate(TAUS):
                rows = {"hl": [], "mean": []}
                for li, launches in enumerate(LAUNCHES):
                    n = int((BUDGET_S - launches * per_launch) // s_pair)
                    m = n // launches
                    summ, x = draw(src, REPS, launches, m, tau, SEED + 100 * si + 10 * ti + li)
                    for how in ("hl", "mean"):
                        fa = float(np.mean(verdicts(summ[how], ALPHA)))
                        md = mds(summ[how])
                        rows[how].append(f"{fa:5.3f} {md:6.2%}{'*' if md > TARGET else ' '}")
                        if how == "hl":
                            best.setdefault((dec, si, ti), []).append((md, launches))
                            check = pd.PairedCheck(ALPHA, 0.0, unit="launch")
                            shift = math.log(1 + md)
                            mine = verdicts(summ["hl"][:VALIDATE] + shift, ALPHA)
                            for r in range(VALIDATE):
                                got = check.decide([(g + shift).tolist() for g in x[r]]).outcome == "regression"
                                agree += got == bool(mine[r])
                                total += 1
                for how in ("hl", "mean"):
                    if how == "mean" and tau:
                        continue
                    print(f"     {label if ti == 0 and how == 'hl' else '':<38} {tname:>9} {how:>7} | " + " ".join(f"{c:>14}" for c in rows[how]))
        print()
    print("   best L per row (hl): " + "; ".join(f"{dec} {srcs_label} tau {TAUS[ti][0]}: L = {min(v)[1]}, MDS {min(v)[0]:.2%}"
                                              for (dec, si, ti), v in best.items()
                                              for srcs_label in ["pool" if si == 0 else "widest"]))
    print(f"\ng. vectorised launch-unit verdicts against PairedCheck(alpha {ALPHA}, threshold 0, unit 'launch').decide, {VALIDATE} replicates per "
          f"hl cell at its MDS: {agree} of {total} agree")
    assert agree == total


def section_h(comps):
    slow, alpha, thr = FLAG
    print(f"\n\nh. minutes to flag x{1 + slow:.2f} against +{thr:.0%} at alpha {alpha} (one look), power {POWER}, launch as the unit (hl), pooled source:\n")
    for dec in an.CHOSEN_K:
        _, per_launch, s_pair, _ = an.overhead(comps, dec)
        src = next(src for label, src, kind in an.pools(comps, dec) if kind == "pool sym")
        for tname, tau in TAUS:
            cells = []
            for launches in (4, 6, 8):

                def found(m, launches=launches, tau=tau, src=src):
                    summ, _ = draw(src, REPS, launches, m, tau, SEED + 7 * m + launches)
                    return float(np.mean(verdicts(summ["hl"] + math.log(1 + slow), alpha, thr))) >= POWER

                lo, hi = 1, 2  # bisection on the pairs per launch (fresh draws per m: power grows with m up to draw noise)
                while not found(hi) and hi < 256:
                    lo, hi = hi, 2 * hi
                m_found = None
                if found(hi):
                    while hi - lo > 1:
                        mid = (lo + hi) // 2
                        lo, hi = (lo, mid) if found(mid) else (mid, hi)
                    m_found = hi
                cells.append(f"L={launches}: " + (f"{m_found:>3} pairs per launch, {(launches * per_launch + launches * m_found * s_pair) / 60:4.1f} min"
                                                  if m_found else "not within 256 pairs per launch"))
            print(f"  {dec} tau {tname:>9}: " + "; ".join(cells))


def section_i(comps):
    print("\n\ni. the same MDS (hl, pooled source) if a launch cost less than measured (--prestart takes the imports out of a launch: measured")
    print(f"   on the CPU runner, not yet on the H200): launch cost C s, L launches of m = ((600 - L C) / s per pair) // L pairs; the best L of {LAUNCHES + (16, 20)}:\n")
    for dec in an.CHOSEN_K:
        _, per_launch, s_pair, _ = an.overhead(comps, dec)
        src = next(src for label, src, kind in an.pools(comps, dec) if kind == "pool sym")
        for cost in (round(per_launch, 1), 20.0, 10.0):
            cells = []
            for tname, tau in TAUS:
                res = []
                for li, launches in enumerate(LAUNCHES + (16, 20)):
                    m = int((BUDGET_S - launches * cost) // s_pair) // launches
                    if m < 2:
                        continue
                    summ, _ = draw(src, REPS, launches, m, tau, SEED + 1000 + li)
                    res.append((mds(summ["hl"]), launches, m))
                md, launches, m = min(res)
                cells.append(f"tau {tname}: {md:5.2%}{'*' if md > TARGET else ' '} (L={launches}, m={m})")
            print(f"  {dec} C = {cost:4.1f} s: " + "; ".join(cells))


def main():
    print("issue 13 on the H200, session 9: the launch as the unit of the verdict (PairedCheck unit 'launch')\n")
    section_e()
    comps = an.load_comparisons(HERE)
    section_f(comps)
    section_h(comps)
    section_i(comps)


if __name__ == "__main__":
    main()
