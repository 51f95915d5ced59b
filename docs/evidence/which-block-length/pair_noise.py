"""The price of a block length on the H200: per-pair noise of 4x1 A/As at k = 1, 2 and 3 steps per block (all with
--warm-apart, the nightly's settings otherwise), per GPU-second of pairs.

For each run: the pair log ratios d = log(B/A) of the blocks' median steps; their sd and robust sd (IQR / 1.349); the
seconds per pair and the pair sd as the launch's Hodges-Lehmann summary sees it (``wall_s_per_pair`` and
``launch_components`` of the run's own report.json); and sd² x s, robust² x s with 95% intervals from 2000 bootstrap
resamples of the pairs within launches (seeded). The smaller sd² x s, the less a GPU-second of pairs leaves in the
verdict. Stdlib, numpy and scipy only, from the compressed raw data:

    python docs/evidence/which-block-length/pair_noise.py
"""

import math
import sys
from pathlib import Path
from statistics import median

import numpy as np
from scipy import stats

HERE = Path(__file__).resolve().parent
EVIDENCE = HERE.parent
sys.path.insert(0, str(EVIDENCE))

import raw  # noqa: E402

RUNS = [  # (experiment file, run dir inside it)
    (HERE / "h200-4x1-k1-three-leases.jsonl.gz", "lease-1b22e146/aa9-4x1-k1-L1"),
    (HERE / "h200-4x1-k1-three-leases.jsonl.gz", "lease-12632dee/aa7-4x1-k1-L2"),
    (HERE / "h200-4x1-k1-three-leases.jsonl.gz", "lease-03fe7247/aa6-4x1-k1-L3"),
    (HERE / "h200-4x1-k1-and-k2.jsonl.gz", "lease-92511ad9/aa9-4x1-k1"),
    (HERE / "h200-4x1-k1-and-k2.jsonl.gz", "lease-92511ad9/aa9-4x1-k2"),
    (HERE / "h200-4x1-k1-and-k2.jsonl.gz", "lease-7bf11cdf/aa6-4x1-k2"),
    (EVIDENCE / "can-ten-gpu-minutes-resolve-3-percent" / "h200-warm-apart-lease-ba09b90f.jsonl.gz", "aa10-4x1-wa"),
    (EVIDENCE / "can-ten-gpu-minutes-resolve-3-percent" / "h200-warm-apart-lease-feaf0025.jsonl.gz", "aa10-4x1-wa2"),
]
SEED, BOOT = 1919, 2000


def groups_of(blocks, session):
    """Pair log ratios of the blocks' median steps, one array per launch, in launch order."""
    pairs = {}
    for b in blocks:
        if not b["warmup"] and b["session_id"] == session:
            pairs.setdefault(b["pair"], {"launch": b["launch"]})[b["side"]] = median(b["step_times_ms"])
    out = {}
    for _, p in sorted(pairs.items()):
        if "a" in p and "b" in p:
            out.setdefault(p["launch"], []).append(math.log(p["b"] / p["a"]))
    return [np.asarray(out[k]) for k in sorted(out)]


def robust_sd(d, axis=None):
    return stats.iqr(d, axis=axis) / 1.349


def boot(groups, seed):
    """95% percentile intervals of the variance and of the robust variance of the pairs, over BOOT resamples of the
    pairs drawn within each launch."""
    rng = np.random.default_rng(seed)
    draws = np.concatenate([g[rng.integers(0, len(g), (BOOT, len(g)))] for g in groups], axis=1)
    return (
        np.percentile(draws.std(axis=1, ddof=1) ** 2, [2.5, 97.5]),
        np.percentile(robust_sd(draws, axis=1) ** 2, [2.5, 97.5]),
    )


def main():
    print(
        "run            lease     k  pairs  s/pair |    sd   robust  HL pair sd | sd² x s  [95%]           "
        "| robust² x s [95%]       | HL² x s | launch sd"
    )
    cache = {}
    for i, (path, run) in enumerate(RUNS):
        files = cache.setdefault(path, raw.load(path))
        rep = files[f"{run}/report.json"]
        boot_id = files.get(f"{run.rsplit('/', 1)[0]}/boot_id" if "/" in run else "boot_id")
        groups = groups_of(files[f"{run}/blocks.jsonl"], rep["settings"]["session_id"])
        d = np.concatenate(groups)
        s = rep["wall_s_per_pair"]
        c = rep["launch_components"]
        (lo, hi), (rlo, rhi) = (s * x for x in boot(groups, SEED + i))
        print(
            f"{run.rsplit('/', 1)[-1]:<14} {boot_id[:8]}  {rep['settings']['block_steps']:2d} {len(d):6d} {s:7.2f} | "
            f"{d.std(ddof=1):6.2%} {robust_sd(d):7.2%} {c['pair_sd']:10.2%}  | {d.std(ddof=1) ** 2 * s:.4f} [{lo:.4f}, "
            f"{hi:.4f}] | "
            f"{robust_sd(d) ** 2 * s:.4f} [{rlo:.4f}, {rhi:.4f}] | {c['pair_sd'] ** 2 * s:.4f}  | {c['launch_sd']:6.2%}"
        )


if __name__ == "__main__":
    main()
