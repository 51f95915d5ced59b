"""One number per block: the median of its steps (the default), their mean, or their min, over every stored H200 run.

    PYTHONPATH=. python docs/results/interleave-h200/session16/block_metric.py > docs/results/interleave-h200/session16/block_metric.txt

Every run stored under docs/results/interleave-h200 up to session 16 at the step grain with blocks of 3 or more steps and 3 or more launches with
pairs (the micro grain's block is one wall time, where the three agree), re-judged by the command's own analysis
(interleave.analyse, the launch as the unit, HL summaries) with each --block-metric: the sd of the launch summaries, the
verdict's own MDS (alpha 0.01, power 0.9) and the estimated ratio. Then, over the runs, how often min and mean give a
smaller MDS than the median, with a sign test (scipy.stats.binomtest) and the median ratio of the MDS.

What the min costs: it sees a slowdown only where every step of a block has it. A change that slows one step in three
(a periodic sync, a collection) moves the median of 3 steps little and the min not at all, and the mean fully.
"""

import math
from pathlib import Path
from statistics import median

from scipy import stats

from harness.commands import interleave as il
from harness.files import read_jsonl

ROOT = Path(__file__).resolve().parents[1]
METRICS = ("median", "mean", "min")


def stored_by_session16(rel):
    """A run stored up to session 16 (later sessions' runs, in sessionNN/ folders, would change this page's figures)."""
    return not any(p.startswith("session") and p[7:].isdigit() and int(p[7:]) > 16 for p in rel.parts)


def runs(keep=stored_by_session16):
    """The runs to judge: those whose folder under ROOT ``keep`` keeps."""
    for path in sorted(ROOT.rglob("blocks.jsonl")):
        if not keep(path.parent.relative_to(ROOT)):
            continue
        blocks = read_jsonl(path)
        pairs = il.pairs_of(blocks)
        if not pairs or any(b.get("unit") for b in blocks) or len(pairs[0]["a"]["step_times_ms"]) < 3:
            continue
        if sum(len(g) >= 2 for g in il.grouped(pairs)) < 3:
            continue
        yield path.parent.relative_to(ROOT), blocks


def main(keep=stored_by_session16):
    print("block metric over the stored H200 runs at the step grain (k >= 3, 3+ launches): launch as the unit, alpha 0.01, power 0.9\n")
    print(f"  {'run':<46} {'pairs':>5} {'L':>3} | " + " | ".join(f"{m:>6}: launch sd    MDS  ratio" for m in METRICS))
    mds = {m: [] for m in METRICS}
    for name, blocks in runs(keep):
        row = {}
        for m in METRICS:
            r = il.analyse(blocks, alpha=0.05, threshold=0.02, metric=m, unit="launch")
            row[m] = (r["mds"]["unit_sd"], r["mds"]["slowdown"], r["verdict"]["ratio"], r["verdict"]["pairs"], r["verdict"]["n_units"])
            mds[m].append(r["mds"]["slowdown"])
        p, n = row["median"][3], row["median"][4]
        print(f"  {str(name):<46} {p:5d} {n:3d} | " + " | ".join(f"{'':>6}  {row[m][0]:8.2%} {row[m][1]:6.2%} x{row[m][2]:.3f}" for m in METRICS))
    n = len(mds["median"])
    print(f"\n  over {n} runs, against the median:")
    for m in ("mean", "min"):
        better = sum(a < b for a, b in zip(mds[m], mds["median"]))
        ratio = median(a / b for a, b in zip(mds[m], mds["median"]))
        geo = math.exp(sum(math.log(a / b) for a, b in zip(mds[m], mds["median"])) / n)
        print(f"    {m:<5} smaller MDS in {better} of {n} (sign test p = {stats.binomtest(better, n).pvalue:.3f}); MDS ratio median x{ratio:.3f}, "
              f"geometric mean x{geo:.3f}")


if __name__ == "__main__":
    main()
