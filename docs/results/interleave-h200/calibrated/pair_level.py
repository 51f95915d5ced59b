"""Pair-level rank estimate (Hodges-Lehmann, 90%) of each comparison here, ignoring launches.
Run from the repository root: python docs/results/interleave-h200/calibrated/pair_level.py"""
import json
import math
from pathlib import Path
from statistics import median

from harness.judging import paired as pd

HERE = Path(__file__).parent
for i in (1, 2, 3):
    blocks = [json.loads(line) for line in (HERE / f"work5-{i}" / "blocks.jsonl").read_text().splitlines()]
    pairs: dict = {}
    for b in blocks:
        if not b["warmup"]:
            pairs.setdefault((b["launch"], b["pair"]), {})[b["side"]] = median(b["step_times_ms"])
    d = [math.log(p["b"] / p["a"]) for p in pairs.values() if len(p) == 2]
    e = pd.rank_estimate(d, 0.05)
    print(f"work5-{i}: {len(d)} pairs, x{e.ratio:.3f} [{e.lo:.3f}, {e.hi:.3f}], HL sd {e.sd:.1%} (the sd a t interval as wide would have)")
