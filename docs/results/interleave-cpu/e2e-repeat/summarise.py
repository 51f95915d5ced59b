"""usage: python docs/results/interleave-cpu/e2e-repeat/summarise.py DIR [DIR ...]: one line per comparison, then counts."""
import json
import sys
from collections import Counter
from pathlib import Path

for root in map(Path, sys.argv[1:]):
    print(f"{root}:")
    print(f"  {'comparison':14} {'verdict':12} {'B/A':>6} {'interval':>16} {'unit':>6} {'pairs':>5} {'L':>2} {'sigma':>6} {'other CPUs':>10} {'wall s':>6}")
    counts = Counter()
    for log in sorted(root.glob("*.log"), key=lambda p: (p.stem.split("-")[0], int(p.stem.split("-")[1]))):
        rep = root / log.stem / "report.json"
        wall = log.read_text().rsplit("wall ", 1)[-1].strip()
        if not rep.exists():
            print(f"  {log.stem:14} no report ({log.read_text().strip().splitlines()[-2][:80]})")
            counts[(log.stem.split('-')[0], "no report")] += 1
            continue
        r = json.loads(rep.read_text())
        v = r["verdict"]
        counts[(log.stem.split("-")[0], v["outcome"])] += 1
        print(f"  {log.stem:14} {v['outcome']:12} {v['ratio']:6.3f} [{v['lo']:.3f}, {v['hi']:.3f}] {v['unit']:>6} {v['pairs']:5d} "
              f"{len(r['launch_sizes']):2d} {r['sigma']:6.1%} {(r.get('other_cpus') or {}).get('median', 0):10.2f} {wall:>6}")
    print("  counts: " + ", ".join(f"{k} {o}: {n}" for (k, o), n in sorted(counts.items())))
