"""Issue 13 on the H200: block length, sensitivity in 10 GPU-minutes and its simulation, from the stored blocks.

    PYTHONPATH=. python docs/results/interleave-h200/analyse.py docs/results/interleave-h200 > docs/results/interleave-h200/analysis.txt

Reads ROOT/sweep/gpu*/sweep.jsonl (docs/results/interleave-cpu/sweep.py: A/A pairs per block length k on resident
workers, then part 2: A against B with --inject-work N) and ROOT/{b,c,d}/*/{blocks.jsonl,report.json} (python -m harness
interleave), and prints:
  a. sigma of the pair log ratio d against k (sweep), and pooled over sweep cell + comparisons at the chosen k;
  b. one row per comparison, re-analysed from its blocks with the command's own analyse(), by both tests of the pair
     unit: the t test (test="t", as the comparisons ran and report.json holds) and Wilcoxon's signed-rank test with
     the Hodges-Lehmann estimate and interval (test="rank", the command's default since);
  c. the pairs that fit in 10 GPU-minutes (start-up included) and the minimum detectable slowdown (MDS) they give:
     by t from sigma (paired.min_detectable), by the signed-rank test from a bootstrap of the measured d;
  d. a bootstrap simulation of c from the measured d: the plain tests and the command's PairedCheck (launch screen),
     each by t and by rank.
Nothing is hard-coded but the design constants below.
"""

import json
import math
import sys
from pathlib import Path
from statistics import fmean, median

import numpy as np
from scipy import stats

from harness.commands.interleave import analyse, grouped, pairs_of
from harness.files import read_jsonl
from harness.judging import paired as pd

CHOSEN_K = {"4x1": 3, "1x4": 1}  # the block length the comparisons used
BUDGET_S = 600  # 10 GPU-minutes per comparison
ALPHA, POWER, TARGET = 0.01, 0.9, 0.03  # MDS definition (issue 13)
CMD_ALPHA, CMD_THRESHOLD = 0.05, 0.02  # the command's defaults, as the comparisons ran
REPS, SEED = 4000, 13
RANK_REPS, RANK_SEED = 2000, 31  # bootstrap replicates and seed of the signed-rank MDS searches (section c)
VALIDATE = 100  # replicates per row of d whose vectorised rank PairedCheck verdict is checked against PairedCheck.decide
TESTS = ("t", "rank")


def sd(xs):
    return float(np.std(xs, ddof=1)) if len(xs) > 1 else float("nan")


def sd_ci(s, df, level=0.95):
    """Chi-square interval of an sd with df degrees of freedom (assumes normal d)."""
    a = (1 - level) / 2
    return s * math.sqrt(df / stats.chi2.ppf(1 - a, df)), s * math.sqrt(df / stats.chi2.ppf(a, df))


def pooled_sd(groups):
    """sd of d with every group centred on its own mean; df = sum(n_i - 1)."""
    ss = sum(float(np.sum((np.asarray(g) - np.mean(g)) ** 2)) for g in groups)
    df = sum(len(g) - 1 for g in groups)
    return math.sqrt(ss / df), df


def dlog(p, how="median"):
    return math.log(pd.block_metric(p["b"]["step_times_ms"], how) / pd.block_metric(p["a"]["step_times_ms"], how))


# ---------------------------------------------------------------------------------------------
def load_sweep(root):
    """Pairs of the sweeps: consecutive records of one round, k (and N) are one pair (sweep.py writes them so)."""
    out = []
    for f in sorted(root.glob("sweep/gpu*/sweep.jsonl")):
        recs = read_jsonl(f)
        for x, y in zip(recs[0::2], recs[1::2]):
            assert (x["part"], x["round"], x["k"], x["order"]) == (y["part"], y["round"], y["k"], y["order"]) and x["order"] == x["side"] + y["side"], f
            p = {x["side"]: x, y["side"]: y, "part": x["part"], "k": x["k"], "file": f.parent.name}
            p["dec"] = x.get("decomposition")
            p["n"] = p["b"].get("inject_work", 0)
            out.append(p)
    return out


def load_comparisons(root):
    out = []
    for rep_path in sorted(root.glob("[bcd]/*/report.json")):
        rep = json.loads(rep_path.read_text())
        s = rep["settings"]
        blocks = read_jsonl(rep_path.parent / "blocks.jsonl")
        kw = dict(alpha=s["alpha"], threshold=s["threshold"], looks=len(s["looks"]), metric=s["metric"], session=s["session_id"],
                  unit=s.get("unit", "pair"))  # as they ran: the pair as the unit, screened
        stored = s.get("test", "t")  # the comparisons ran before the rank test existed: their reports hold the t test
        a = analyse(blocks, **kw, test="t")
        ar = analyse(blocks, **kw, test="rank")
        v, vr, rv = a["verdict"], ar["verdict"], rep["verdict"]
        same = stored == "t" and v["outcome"] == rv["outcome"] and abs(v["ratio"] - rv["ratio"]) < 1e-9 and a["pairs"] == rep["pairs"]
        groups = grouped(pairs_of(blocks, s["session_id"]), s["metric"])
        t = rep["timing"]
        nl = len(rep["launches"])
        warm = [b for b in blocks if b.get("warmup") and b.get("session_id") == s["session_id"]]
        lc = v["launch_check"] or {}
        d = np.concatenate([np.asarray(g) for g in groups])
        q1, q3 = np.percentile(d, [25, 75])
        hl = pd.rank_estimate(d.tolist(), s["alpha"] / len(s["looks"]))  # the pair unit by rank, whatever the launch screen says
        out.append(
            {
                "name": f"{rep_path.parent.parent.name}/{rep_path.parent.name}",
                "dec": s["decomposition"],
                "k": s["block_steps"],
                "cpus": ",".join(map(str, s["cpus"] or [])),
                "inject_work": s["inject_work_b"],
                "release": s["python_b"] != s["python_a"],
                "launches": f"{len(groups)}/{nl}/{s['launches']}",
                "launches_started": nl,
                "pairs": a["pairs"],
                "outcome": v["outcome"],
                "ratio": v["ratio"],
                "lo": v["lo"],
                "hi": v["hi"],
                "unit": v["unit"],
                "test": v["test"],
                "r_outcome": vr["outcome"],
                "r_ratio": vr["ratio"],
                "r_lo": vr["lo"],
                "r_hi": vr["hi"],
                "r_unit": vr["unit"],
                "r_test": vr["test"],
                "hl_sd": hl.sd,
                "mds_hl": pd.min_detectable(hl.sd, a["pairs"], ALPHA, POWER),
                "pairs_3_hl": pd.pairs_needed(hl.sd, TARGET, ALPHA, POWER),
                "flag_t": pd.pairs_needed(a["sigma"], math.exp(float(d.mean())) - 1, CMD_ALPHA, POWER, CMD_THRESHOLD),
                "flag_hl": pd.pairs_needed(hl.sd, hl.ratio - 1, CMD_ALPHA, POWER, CMD_THRESHOLD),
                "sigma": a["sigma"],
                "robust": (q3 - q1) / 1.349,
                "tail": float(np.mean(np.abs(d - np.median(d)) > 3 * (q3 - q1) / 1.349)),
                "f_p": lc.get("p"),
                "launch_sd": lc.get("sigma_launch"),
                "wall": t["wall_s"],
                "startup": t["startup_s"],
                "warmup": t["warmup_blocks_wall_s"],
                "close": t["close_s"],
                "warm_blocks": len(warm),
                "s_pair": (t["wall_s"] - t["startup_s"] - t["warmup_blocks_wall_s"] - t["close_s"]) / a["pairs"],
                "mds": pd.min_detectable(a["sigma"], a["pairs"], ALPHA, POWER),
                "pairs_3": a["mds"]["pairs_for_3pct"],
                "same": same,
                "groups": groups,
                "d": d,
                "resume": a["resume_penalty"],
                "canary": a["canary"],
                "step_ms": a["step_ms_median"],
                "other": (a["other_cpus"] or {}).get("median"),
                "spikes": float(
                    np.mean([x > 1.5 * a["step_ms_median"][s_] for p in pairs_of(blocks, s["session_id"]) for s_ in "ab" for x in p[s_]["step_times_ms"]])
                ),
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
def section_a(sweep, comps):
    print("a. Block length: sigma of the pair log ratio d against k, A/A on resident workers (sweep/gpu*/sweep.jsonl)")
    print("   wall s per pair: the two blocks' wall time (GPU held); sigma^2 x s: variance per GPU-second of pairs (smaller is better);")
    print("   the sd's 95% interval is chi-square (normal d); resume: first step / median of the others, geometric mean over blocks\n")
    print(
        f"{'dec':>4} {'k':>3} {'pairs':>5} {'step ms':>7} {'s/pair':>7} {'sigma med':>9} {'95% CI':>15} {'sigma mean':>10} "
        f"{'s2*s med':>8} {'95% CI':>16} {'s2*s mean':>9} {'resume A,B':>12}"
    )
    cells, dcell = {}, {}
    for p in sweep:
        if p["part"] == "k":
            cells.setdefault((p["dec"], p["k"]), []).append(p)
    for (dec, k), ps in sorted(cells.items(), key=lambda x: (x[0][0] != "4x1", x[0][1])):
        dm, dn = [dlog(p, "median") for p in ps], [dlog(p, "mean") for p in ps]
        wall = fmean(p["a"]["wall_s"] + p["b"]["wall_s"] for p in ps)
        step = median(x for p in ps for s in "ab" for x in p[s]["step_times_ms"])
        sm, sn = sd(dm), sd(dn)
        lo, hi = sd_ci(sm, len(dm) - 1)
        rp = [pd.resume_penalty([p[s]["step_times_ms"] for p in ps]) for s in "ab"]
        res = ",".join(f"{r.ratio:.3f}" for r in rp) if all(rp) else "-"
        dcell[dec, k] = dm
        print(
            f"{dec:>4} {k:>3} {len(ps):>5} {step:7.0f} {wall:7.2f} {sm:9.2%} [{lo:6.2%},{hi:6.2%}] {sn:10.2%} {sm**2 * wall:8.4f} [{lo**2 * wall:.4f}, {hi**2 * wall:.4f}] {sn**2 * wall:9.4f} {res:>12}"
        )
    n6 = min(len(v) for v in cells.values())
    lo, hi = sd_ci(1.0, n6 - 1)
    print(f"\n   an sd from {n6} pairs is within x{lo:.2f} .. x{hi:.2f} of the true one at 95% ({lo - 1:+.0%} / {hi - 1:+.0%})")

    for dec in sorted({d for d, k in cells if k == 1}, key=lambda x: x != "4x1"):
        steps = [p[s]["step_times_ms"][0] for p in cells[dec, 1] for s in "ab"]
        m = median(steps)
        print(f"   {dec}, k = 1: the {len(steps)} single steps / their cell's median step: " + " ".join(f"{x / m:.2f}" for x in sorted(steps)))
    print("\n   inject-work N on 4x1, k = 3 (sweep part 2, B = A + N extra casts per LoRA layer forward): B/A, median of the block, 95% t interval")
    ns = sorted({p["n"] for p in sweep if p["part"] == "work"})
    for n in ns:
        e = pd.paired_estimate([dlog(p) for p in sweep if p["part"] == "work" and p["n"] == n], 0.025)
        print(f"     N = {n}: x{e.ratio:.4f} [{e.lo:.4f}, {e.hi:.4f}] over {e.n} pairs")

    print("\n   sigma at the chosen k, pooled: the sweep cell and every comparison of that decomposition, each centred on its own mean")
    pooled = {}
    for dec, k in CHOSEN_K.items():
        groups = [dcell[dec, k]] + [list(c["d"]) for c in comps if c["dec"] == dec and c["k"] == k]
        s, df = pooled_sd(groups)
        lo, hi = sd_ci(s, df)
        rng = np.random.default_rng(SEED)
        boot = []
        for _ in range(2000):
            boot.append(pooled_sd([np.asarray(g)[rng.integers(0, len(g), len(g))] for g in groups])[0])
        blo, bhi = np.percentile(boot, [2.5, 97.5])
        one = [c for c in comps if c["dec"] == dec and "," not in c["cpus"]]
        s_pair = sum(c["s_pair"] * c["pairs"] for c in one) / sum(c["pairs"] for c in one)
        pooled[dec] = s
        print(
            f"     {dec}, k = {k}: sigma {s:.2%} over {df} df ({len(groups)} groups), 95% CI chi-square [{lo:.2%}, {hi:.2%}], "
            f"bootstrap of pairs within groups [{blo:.2%}, {bhi:.2%}]; sigma^2 x s = {s**2 * s_pair:.4f} at {s_pair:.2f} s per pair "
            f"(one-CPU comparisons, overhead between blocks included)"
        )
    return pooled


def section_b(comps):
    print("\n\nb. The comparisons, re-analysed from blocks.jsonl with harness.commands.interleave.analyse (median of the block), by both tests")
    print("   of the pair unit, each at the comparison's own settings (alpha 0.05 one-sided against +2%, one look: the interval's level is 0.90):")
    print("   t: analyse(..., test='t'), the one-sample t on the pair log ratios d: the test the comparisons ran with (report.json);")
    print("   rank: analyse(..., test='rank'), Wilcoxon's signed-rank test with the Hodges-Lehmann estimate and interval: the command's default now.")
    print("   Both keep the launch screen (F test at 0.25): where it fires the unit is the launch (t over the launch means) under either test.")
    print("   L: launches with pairs / started / planned; CPUs: both workers pinned to these; same: the t verdict equals report.json's\n")
    print(f"{'':<14} {'':>3} {'':>1} {'':>5} {'':>5} {'':>7} {'':>5} | {'t (report.json)':<42} | {'rank (signed-rank, Hodges-Lehmann)':<42} |")
    print(
        f"{'comparison':<14} {'dec':>3} {'k':>1} {'L':>5} {'CPUs':>5} {'B':>7} {'pairs':>5} | {'verdict':<12} {'B/A':>6} {'interval':>16} {'unit':>6} "
        f"| {'verdict':<12} {'B/A':>6} {'interval':>16} {'unit':>6} | same"
    )
    for c in comps:
        b = "tf5.24" if c["release"] else (f"work{c['inject_work']}" if c["inject_work"] else "A")
        print(
            f"{c['name']:<14} {c['dec']:>3} {c['k']:>1} {c['launches']:>5} {c['cpus']:>5} {b:>7} {c['pairs']:>5} | {c['outcome']:<12} {c['ratio']:6.3f} "
            f"[{c['lo']:.3f}, {c['hi']:.3f}] {c['unit']:>6} | {c['r_outcome']:<12} {c['r_ratio']:6.3f} [{c['r_lo']:.3f}, {c['r_hi']:.3f}] {c['r_unit']:>6} "
            f"| {'yes' if c['same'] else 'NO'}"
        )
    print(
        f"   tests the verdicts name (details 'test'): t column {', '.join(sorted({c['test'] for c in comps}))}; "
        f"rank column {', '.join(sorted({c['r_test'] for c in comps}))} (t where the unit is the launch); "
        f"outcome the same by both tests in {sum(c['outcome'] == c['r_outcome'] for c in comps)} of {len(comps)}"
    )

    print("\n   noise and cost. robust sd: IQR/1.349 of d; HL sd: the sd a t interval as wide as the pair-level Hodges-Lehmann interval")
    print("   would have ((log hi - log lo) / (2 z) x sqrt n, rank_estimate(d).sd; the rank test's effective noise per pair);")
    print("   tail: share of pairs farther than 3 robust sd from the median of d (0.3% for normal d);")
    print("   F p, launch sd: the launch check; s/pair: (wall - start-up - warm-up blocks - stopping) / pairs;")
    print("   MDS t: smallest slowdown found with power 0.9 by a one-sided t at alpha 0.01 over the pairs made (paired.min_detectable);")
    print("   n 3%: pairs for an MDS of 3% at this sigma; MDS HL, n 3% HL: the same from the HL sd (a normal approximation of the rank")
    print("   test's resolution from its interval width, not a simulation: section c simulates it);")
    print("   flag t, flag HL (injected work only): pairs to flag the comparison's own pair-level estimate (mean; Hodges-Lehmann) against")
    print(f"   +{CMD_THRESHOLD:.0%} at alpha {CMD_ALPHA} with power {POWER}, from sigma; from the HL sd (the same normal approximation)\n")
    print(
        f"{'comparison':<14} {'sigma':>6} {'robust':>6} {'HL sd':>6} {'tail':>4} {'F p':>6} {'L sd':>5} {'wall':>4} {'start':>5} {'s/pair':>6} "
        f"{'MDS t':>6} {'n 3%':>4} {'MDS HL':>6} {'n 3% HL':>7} {'flag t':>6} {'flag HL':>7}"
    )
    for c in comps:
        fp = f"{c['f_p']:.3f}" if c["f_p"] is not None else "-"
        ls = f"{c['launch_sd']:.1%}" if c["launch_sd"] is not None else "-"
        print(
            f"{c['name']:<14} {c['sigma']:6.2%} {c['robust']:6.2%} {c['hl_sd']:6.2%} {c['tail']:4.0%} {fp:>6} {ls:>5} {c['wall']:4.0f} {c['startup']:5.0f} "
            f"{c['s_pair']:6.2f} {c['mds']:6.2%} {c['pairs_3'] or '-':>4} {c['mds_hl']:6.2%} {c['pairs_3_hl'] or '-':>7} "
            f"{(c['flag_t'] or '-') if c['inject_work'] else '':>6} {(c['flag_hl'] or '-') if c['inject_work'] else '':>7}"
        )
    print(
        "\n   diagnostics (not used by the verdict): median step A, B; resume penalty A, B (k > 1 only); host canary: correlation with d and the\n"
        "   change of d's variance as a covariate; other CPUs: median CPUs busy elsewhere on the host during the blocks;\n"
        "   steps > 1.5x: share of measured steps longer than 1.5 x their side's median step\n"
    )
    print(f"{'comparison':<14} {'step ms A':>9} {'B':>6} {'resume A':>24} {'resume B':>24} {'canary r':>8} {'var':>5} {'other CPUs':>10} {'steps > 1.5x':>12}")
    for c in comps:
        rs = [c["resume"].get(s) for s in "ab"]
        rtxt = [f"x{r['ratio']:.3f} [{r['lo']:.3f}, {r['hi']:.3f}]" if r else "-" for r in rs]
        cn = c["canary"]
        print(
            f"{c['name']:<14} {c['step_ms']['a']:9.0f} {c['step_ms']['b']:6.0f} {rtxt[0]:>24} {rtxt[1]:>24} {cn.get('pair_corr', float('nan')):+8.2f} "
            f"{-cn.get('reduction', float('nan')):+5.0%} {c['other']:10.2f} {c['spikes']:12.1%}"
        )
    for label, pick in (("two CPUs", lambda c: "," in c["cpus"]), ("one CPU", lambda c: "," not in c["cpus"])):
        cs = [c for c in comps if pick(c) and c["f_p"] is not None]
        print(
            f"   launch check, workers pinned to {label}: F p < 0.05 in {sum(c['f_p'] < 0.05 for c in cs)} of {len(cs)}, "
            f"p < {pd.LAUNCH_ALPHA} (the screen) in {sum(c['f_p'] < pd.LAUNCH_ALPHA for c in cs)} of {len(cs)}; "
            f"start-up per launch {min(c['startup'] / c['launches_started'] for c in cs):.1f}-{max(c['startup'] / c['launches_started'] for c in cs):.1f} s"
        )
    for dec in CHOSEN_K:
        ws, e, r = injected_pool(comps, dec)
        print(
            f"   {dec}, inject-work 2, all {len(ws)} comparisons' pairs together: x{e.ratio:.4f} [{e.lo:.4f}, {e.hi:.4f}] by t, "
            f"x{r.ratio:.4f} [{r.lo:.4f}, {r.hi:.4f}] by rank (Hodges-Lehmann) over {e.n} pairs (95%; ignores launches)"
        )


def injected_pool(comps, dec):
    """The injected comparisons of ``dec`` and the t and Hodges-Lehmann 95% estimates of all their pairs together."""
    ws = [c for c in comps if c["dec"] == dec and c["inject_work"]]
    d = np.concatenate([c["d"] for c in ws]).tolist()
    return ws, pd.paired_estimate(d, 0.025), pd.rank_estimate(d, 0.025)


def overhead(comps, dec):
    one = [c for c in comps if c["dec"] == dec and "," not in c["cpus"]]
    nl = sum(c["launches_started"] for c in one)
    per_launch = (sum(c["startup"] for c in one) + sum(c["warmup"] for c in one) + sum(c["close"] for c in one)) / nl
    s_pair = sum(c["s_pair"] * c["pairs"] for c in one) / sum(c["pairs"] for c in one)
    return one, per_launch, s_pair, nl


# ---------------------------------------------------------------------------------------------
# Vectorised tests on the rows of a matrix of log ratios (one row: one simulated comparison)
# ---------------------------------------------------------------------------------------------
def signed_rank_p(x, c=0.0):
    """One-sided signed-rank p-value of H0 "centre <= c" for each row of x, as paired.rank_estimate(row).p_above(exp(c)):
    T+ = the sum of the ranks of |x - c| over the positive x - c (= the number of Walsh averages above c, ties in |x|
    broken in any order), normal approximation without continuity or tie correction."""
    y = x - c
    r = np.argsort(np.argsort(np.abs(y), axis=-1), axis=-1) + 1
    t = np.sum(r * (y > 0), axis=-1)
    n = x.shape[-1]
    return stats.norm.sf((t - n * (n + 1) / 4) / math.sqrt(n * (n + 1) * (2 * n + 1) / 24))


def rejects(x, test, alpha=ALPHA, c=0.0):
    """Per row: the one-sided test ('t' or 'rank') rejects H0 "centre <= c" at alpha (p <= alpha, as PairedCheck)."""
    if test == "t":
        return stats.ttest_1samp(x, c, axis=-1, alternative="greater").pvalue <= alpha
    return signed_rank_p(x, c) <= alpha


def draws(src, n, reps, seed):
    rng = np.random.default_rng(seed)
    return src[rng.integers(0, len(src), (reps, n))]


def boot_mds(x, test, alpha=ALPHA, target=POWER):
    """Smallest slowdown s at which at least `target` of the rows of x (the same draws for every s), shifted by log(1 + s),
    reject "ratio <= 1"; bisection to 0.001% (the rejection of each row only grows with s, so the share does too)."""

    def rate(s_):
        return float(np.mean(rejects(x + math.log(1 + s_), test, alpha)))

    if rate(0.0) >= target:
        return 0.0
    lo, hi = 0.0, 0.01
    while rate(hi) < target:
        lo, hi = hi, 2 * hi
    while hi - lo > 1e-5:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if rate(mid) >= target else (mid, hi)
    return hi


def boot_pairs(src, effect, test, alpha, threshold, seed, reps=RANK_REPS, target=POWER, top=20000):
    """Fewest pairs n (bisection on n, fresh draws of n pairs from src per n, seed + n) at which the test, on the draws
    shifted by log(1 + effect), rejects "ratio <= 1 + threshold" at alpha in at least `target` of `reps`; None above `top`."""

    def power(n):
        return float(np.mean(rejects(draws(src, n, reps, seed + n) + math.log(1 + effect), test, alpha, math.log(1 + threshold))))

    lo, hi = 4, 16
    while power(hi) < target:
        lo, hi = hi, 2 * hi
        if hi > top:
            return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if power(mid) >= target else (mid, hi)
    return hi


def hodges_lehmann(x):
    """Median of the Walsh averages (numpy; the same as paired.rank_estimate(x, a).mean)."""
    x = np.asarray(x)
    i, j = np.triu_indices(len(x))
    return float(np.median((x[i] + x[j]) / 2))


def pools(comps, dec):
    """The bootstrap sources of a decomposition: every comparison's d centred on its own mean, pooled, and the widest
    comparison alone (largest sigma; largest HL sd, where that is another one); each also symmetrised (d and -d: the
    null an A/A pair has, its order within the pair drawn at random, where mean and pseudo-median coincide)."""
    cs = [c for c in comps if c["dec"] == dec]
    pool = np.concatenate([c["d"] - c["d"].mean() for c in cs])
    out = [(f"all {len(cs)} comparisons, centred", pool, "pool")]
    worst = [max(cs, key=lambda c: c["sigma"])]
    w_hl = max(cs, key=lambda c: c["hl_sd"])
    worst += [w_hl] if w_hl is not worst[0] else []
    for w in worst:
        out.append((f"{w['name']} alone, centred", w["d"] - w["d"].mean(), "worst"))
    return out + [(label.replace("centred", "symmetrised"), np.concatenate([src, -src]), kind + " sym") for label, src, kind in out]


def section_c(comps, pooled):
    print(
        f"\n\nc. {BUDGET_S / 60:g} GPU-minutes per comparison, start-up included: pairs = ({BUDGET_S} - L x (start-up + warm-up blocks + stopping) per launch) / s per pair,"
    )
    print(f"   both from the comparisons pinned to one CPU (c/, d/); MDS at alpha {ALPHA}, power {POWER}, against ratio 1.")
    print("   t: from sigma by the noncentral t (paired.min_detectable), as the t test would judge the pairs;")
    print(f"   rank: the signed-rank test (the command's default) has no such formula: its MDS is simulated: {RANK_REPS} bootstrap replicates")
    print(f"   of n pairs (seed {RANK_SEED} + offsets) drawn from the measured d, the smallest slowdown s, added as log(1 + s), at which >= {POWER:.0%} of")
    print(f"   the replicates reject at alpha {ALPHA} one-sided (T+ vectorised, the same p-value as paired.rank_estimate(x, {ALPHA}).p_above(1.0));")
    print("   bisection on s to 0.001% over the same draws. 'boot t' is the same search with the t test, for comparison. FA: the share of")
    print("   the replicates rejecting at s = 0 (false alarms; nominal 0.01). Sources: every comparison's d centred on its own mean, pooled")
    print("   (as section d), or the widest comparison alone; 'symmetrised': the same with every value also mirrored (d and -d), the null")
    print("   of an A/A pair, where the rank test's centre (the pseudo-median) and the t test's (the mean) coincide.\n")
    plan = {}
    for i, dec in enumerate(CHOSEN_K):
        one, per_launch, s_pair, nl = overhead(comps, dec)
        ws = [c for c in comps if c["dec"] == dec]
        worst = max(ws, key=lambda c: c["sigma"])
        n2 = int((BUDGET_S - 2 * per_launch) // s_pair)
        n6 = int((BUDGET_S - 6 * per_launch) // s_pair)
        plan[dec] = {"n2": n2, "n6": n6, "per_launch": per_launch, "s_pair": s_pair, "worst": worst, "rank_mds": {}}
        print(
            f"  {dec} (k = {CHOSEN_K[dec]}): from {', '.join(c['name'] for c in one)} ({nl} launches): {per_launch:.1f} s per launch, {s_pair:.2f} s per pair"
        )
        print(f"     pairs in {BUDGET_S} s: {n2} with 2 launches, {n6} with 6")
        print("     t, from sigma:")
        for label, s in ((f"pooled sigma {pooled[dec]:.2%}", pooled[dec]), (f"largest sigma {worst['sigma']:.2%} ({worst['name']})", worst["sigma"])):
            m2, m6 = pd.min_detectable(s, n2, ALPHA, POWER), pd.min_detectable(s, n6, ALPHA, POWER)
            need = pd.pairs_needed(s, TARGET, ALPHA, POWER)
            mins = (2 * per_launch + need * s_pair) / 60
            print(
                f"     {label:<40} MDS {m2:.2%} (2 launches) {'<=' if m2 <= TARGET else '> '} 3%, {m6:.2%} (6 launches) {'<=' if m6 <= TARGET else '> '} 3%; "
                f"3% needs {need} pairs, {mins:.1f} min with 2 launches"
            )
        print("     rank, simulated (and t on the same draws):")
        print(
            f"     {'source':<44} {'sd':>6} {'HL':>6} {'FA t':>6} {'FA rank':>7} | n {n2:>3}: {'boot t':>6} {'rank':>6} | n {n6:>3}: {'boot t':>6} {'rank':>6} | "
            f"rank: 3% needs"
        )
        for j, (label, src, kind) in enumerate(pools(comps, dec)):
            seed = RANK_SEED + 1000 * i + 100 * j
            x2, x6 = draws(src, n2, RANK_REPS, seed), draws(src, n6, RANK_REPS, seed + 1)
            fa_t, fa_r = float(np.mean(rejects(x2, "t"))), float(np.mean(rejects(x2, "rank")))
            mt2, mr2, mt6, mr6 = boot_mds(x2, "t"), boot_mds(x2, "rank"), boot_mds(x6, "t"), boot_mds(x6, "rank")
            need = boot_pairs(src, TARGET, "rank", ALPHA, 0.0, seed + 2)
            mins = (2 * per_launch + need * s_pair) / 60
            plan[dec]["rank_mds"][kind] = mr2

            def mark(m):
                return f"{m:6.2%}{'*' if m > TARGET else ' '}"

            print(
                f"     {label:<44} {sd(src):6.2%} {hodges_lehmann(src):+6.2%} {fa_t:6.3f} {fa_r:7.3f} |        {mark(mt2)}{mark(mr2)}|        {mark(mt6)}{mark(mr6)}| "
                f"{need:>4} pairs, {mins:4.1f} min with 2 launches"
            )
        print("     (* above 3%; HL: the Hodges-Lehmann estimate of the source, the centre the rank test sees at s = 0, where the mean is 0)")
        ws, e, r = injected_pool(comps, dec)
        print(
            f"     to flag inject-work 2 against +{CMD_THRESHOLD:.0%} at alpha {CMD_ALPHA} with power {POWER} (the effect of all {len(ws)} injected comparisons' "
            f"pairs together: x{e.ratio:.4f} by t, x{r.ratio:.4f} by HL; minutes with 2 launches):"
        )
        for label, s in ((f"pooled sigma {pooled[dec]:.2%}", pooled[dec]), (f"largest sigma {worst['sigma']:.2%} ({worst['name']})", worst["sigma"])):
            need = pd.pairs_needed(s, e.ratio - 1, CMD_ALPHA, POWER, CMD_THRESHOLD)
            mins = (2 * per_launch + need * s_pair) / 60 if need else float("nan")
            print(f"       t, from {label:<49}: {need:>4} pairs, {mins:4.1f} min (effect x{e.ratio:.4f})")
        for j, (label, src, _kind) in enumerate(pools(comps, dec)):
            txt = []
            for m, eff in enumerate((e.ratio, r.ratio)):
                need = boot_pairs(src, eff - 1, "rank", CMD_ALPHA, CMD_THRESHOLD, RANK_SEED + 1000 * i + 100 * j + 50 + 10 * m)
                mins = (2 * per_launch + need * s_pair) / 60 if need else float("nan")
                txt.append(f"{need:>4} pairs, {mins:4.1f} min (effect x{eff:.4f})")
            print(f"       rank, simulated, {label:<40}: " + "; ".join(txt))
    return plan


def t_rate(src, n, shift, seed):
    """Share of REPS bootstrap samples of n pairs from src, shifted by log(1 + shift), that the one-sided t rejects at ALPHA."""
    rng = np.random.default_rng(seed)
    x = src[rng.integers(0, len(src), (REPS, n))] + math.log(1 + shift)
    return float(np.mean(stats.ttest_1samp(x, 0.0, axis=1, alternative="greater").pvalue < ALPHA))


def rank_rates(src, n, shifts, seed):
    """Share of REPS bootstrap samples of n pairs from src (the same draws for every shift), shifted by log(1 + shift),
    that the one-sided signed-rank test rejects at ALPHA."""
    x = draws(src, n, REPS, seed)
    return [float(np.mean(rejects(x + math.log(1 + sh), "rank"))) for sh in shifts]


def check_rate(pool, n, launches, s_l, shift, seed):
    """The same through the command's PairedCheck (test t), the n pairs split into launches, each with a N(0, s_l) offset."""
    rng = np.random.default_rng(seed)
    check = pd.PairedCheck(ALPHA, 0.0, test="t", unit="pair")  # the screened pair unit, as the command judged then
    hits = 0
    for _ in range(REPS):
        x = pool[rng.integers(0, len(pool), n)] + math.log(1 + shift)
        cut = [round(j * n / launches) for j in range(launches + 1)]
        groups = [(x[cut[j] : cut[j + 1]] + rng.normal(0, s_l)).tolist() for j in range(launches)]
        hits += check.decide(groups).outcome == "regression"
    return hits / REPS


def check_rates(pool, n, launches, s_l, shifts, seed, test):
    """PairedCheck(ALPHA, 0, test=test) vectorised over REPS draws (the same draws for every shift: the launch screen does
    not see a shift): the F test of the launch means at LAUNCH_ALPHA; where it fires, the t over the launch means, else the
    pair-level test (t or signed-rank) over the pairs. Returns the rejection rates at `shifts`, the share of draws where the
    screen fired, the MDS (bisection on the shift over the same draws, as boot_mds) and how many of the first VALIDATE
    draws per shift PairedCheck.decide judges the same (of VALIDATE x len(shifts))."""
    rng = np.random.default_rng(seed)
    cut = [round(j * n / launches) for j in range(launches + 1)]
    sizes = np.diff(cut)
    lab = np.repeat(np.arange(launches), sizes)
    x = pool[rng.integers(0, len(pool), (REPS, n))] + rng.normal(0, s_l, (REPS, launches))[:, lab]
    means = np.stack([x[:, a:b].mean(axis=1) for a, b in zip(cut, cut[1:])], axis=1)
    ssb = np.sum(sizes * (means - x.mean(axis=1, keepdims=True)) ** 2, axis=1)
    ssw = np.sum((x - means[:, lab]) ** 2, axis=1)
    launch_unit = stats.f.sf((ssb / (launches - 1)) / (ssw / (n - launches)), launches - 1, n - launches) < pd.LAUNCH_ALPHA
    lsd = means.std(axis=1, ddof=1) / math.sqrt(launches)

    def hits(sh):
        c = math.log(1 + sh)
        p_launch = stats.t.sf((means.mean(axis=1) + c) / lsd, launches - 1)
        p_pair = signed_rank_p(x + c) if test == "rank" else stats.ttest_1samp(x + c, 0.0, axis=1, alternative="greater").pvalue
        return np.where(launch_unit, p_launch, p_pair) <= ALPHA

    check = pd.PairedCheck(ALPHA, 0.0, test=test, unit="pair")
    rates, agree = [], 0
    for sh in shifts:
        hit = hits(sh)
        rates.append(float(np.mean(hit)))
        for r in range(VALIDATE):
            groups = [(x[r, a:b] + math.log(1 + sh)).tolist() for a, b in zip(cut, cut[1:])]
            agree += (check.decide(groups).outcome == "regression") == bool(hit[r])
    lo, hi = 0.0, 0.01
    while np.mean(hits(hi)) < POWER:
        lo, hi = hi, 2 * hi
        if hi > 1.0:
            return rates, float(launch_unit.mean()), math.inf, agree
    while hi - lo > 1e-5:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if np.mean(hits(mid)) >= POWER else (mid, hi)
    return rates, float(launch_unit.mean()), hi, agree


def section_d(comps, pooled, plan):
    print(f"\n\nd. Simulation of c: bootstrap of the measured d ({REPS} replicates, seed {SEED}). Pool: every comparison of the decomposition,")
    print("   each comparison's d centred on its own mean (the injected and release ones too), or the widest comparison alone; 'sym':")
    print("   the same symmetrised (d and -d, as in c). n pairs drawn with replacement, a slowdown added as log(1 + s); 'rejects': one-sided")
    print(f"   test at alpha {ALPHA} against ratio 1: t (scipy.stats.ttest_1samp, alternative='greater') or rank (signed-rank, the p-value of")
    print("   paired.rank_estimate, vectorised; the same draws for every slowdown).")
    print(f"   'at MDS': with the MDS of c for this source added (t: from its sd; rank: c's simulated one, other draws; should be about {POWER}).")
    print("   PairedCheck rows: the n pairs (all comparisons' pool, centred) split into L equal launches, a normal offset per launch with sd 0,")
    print("   the largest launch sd of the decomposition's one-CPU comparisons, and the largest of all its comparisons; judged by the command's")
    print(f"   paired.PairedCheck(alpha {ALPHA}, threshold 0): launch screen at {pd.LAUNCH_ALPHA}, the launch as the unit when it fires. t rows:")
    print("   x1.00 and x1.03 from PairedCheck(test='t').decide per replicate (as before); rank rows: PairedCheck(test='rank'), vectorised (the")
    print(f"   same draws for x1.00 and x1.03), checked against PairedCheck.decide on the first {VALIDATE} replicates of each. 'MDS' of the")
    print(f"   PairedCheck rows: the slowdown the check finds with power {POWER} (vectorised for both tests on seed + 5 draws, bisection);")
    print("   '>100%': not found up to a doubling of the time; 'launch unit': share of those draws where the screen fired.\n")
    print(f"{'dec':>3} {'source':<40} {'test':>4} {'n':>4} {'L':>2} {'launch sd':>9} {'x1.00':>6} {'x1.03':>6} {'at MDS':>15} {'MDS':>7} {'launch unit':>11}")
    agree = total = 0
    for i, dec in enumerate(CHOSEN_K):
        cs = [c for c in comps if c["dec"] == dec]
        pool = np.concatenate([c["d"] - c["d"].mean() for c in cs])
        n2, n6 = plan[dec]["n2"], plan[dec]["n6"]
        lsd_all = max(c["launch_sd"] or 0 for c in cs)
        lsd_one = max(c["launch_sd"] or 0 for c in cs if "," not in c["cpus"])

        for j, (label, src, kind) in enumerate(pools(comps, dec)):
            label = f"{label.replace('comparisons', 'comp.').replace('symmetrised', 'sym')}, sd {sd(src):.2%}"
            mds = pd.min_detectable(sd(src), n2, ALPHA, POWER)
            seed = SEED + 100 * i + 10 * j
            print(
                f"{dec:>3} {label:<40} {'t':>4} {n2:>4} {'-':>2} {'-':>9} {t_rate(src, n2, 0, seed):6.3f} {t_rate(src, n2, TARGET, seed + 1):6.3f} "
                f"{t_rate(src, n2, mds, seed + 2):6.3f} (+{mds:.2%})"
            )
            rmds = plan[dec]["rank_mds"][kind]
            r0, r3, rm = rank_rates(src, n2, (0.0, TARGET, rmds), seed + 5)
            print(f"{dec:>3} {label:<40} {'rank':>4} {n2:>4} {'-':>2} {'-':>9} {r0:6.3f} {r3:6.3f} {rm:6.3f} (+{rmds:.2%})")
        offsets = sorted({0.0, lsd_one, lsd_all})
        for k, (n, launches, s_l) in enumerate((n, launches, s_l) for s_l in offsets for n, launches in ((n2, 2), (n6, 6))):
            seed = SEED + 100 * i + 50 + 10 * k
            for test in TESTS:
                rates, unit, mds, ok = check_rates(pool, n, launches, s_l, (0.0, TARGET), seed + 5, test)
                if test == "t":
                    rates = [check_rate(pool, n, launches, s_l, 0, seed), check_rate(pool, n, launches, s_l, TARGET, seed + 1)]
                agree, total = agree + ok, total + 2 * VALIDATE
                print(
                    f"{dec:>3} {'all, PairedCheck':<40} {test:>4} {n:>4} {launches:>2} {s_l:9.2%} {rates[0]:6.3f} {rates[1]:6.3f} {'':>15} "
                    f"{f'{mds:.2%}' if mds < math.inf else '>100%':>7} {unit:11.3f}"
                )
    print(f"\n   vectorised PairedCheck against PairedCheck.decide: {agree} of {total} verdicts agree")
    assert agree == total


def main(argv):
    root = Path(argv[0] if argv else "docs/results/interleave-h200")
    boots = {p.parent.name: p.read_text().strip() for p in sorted(root.glob("*/boot_id"))}
    print(f"issue 13 on the H200: {root}")
    print("boot ids: " + ", ".join(f"{k} {v}" for k, v in boots.items()) + "\n")
    sweep = load_sweep(root)
    comps = load_comparisons(root)
    pooled = section_a(sweep, comps)
    section_b(comps)
    plan = section_c(comps, pooled)
    section_d(comps, pooled, plan)


if __name__ == "__main__":
    main(sys.argv[1:])
