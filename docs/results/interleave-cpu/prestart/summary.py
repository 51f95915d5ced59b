"""One line per comparison of run.sh: launch start-ups, import seconds per launch (side A), verdict, sigmas, wall.

    python docs/results/interleave-cpu/prestart/summary.py DIR"""
import json
import sys
from pathlib import Path

root = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).parent)
for rep_path in sorted(root.glob("*/report.json")):
    r = json.loads(rep_path.read_text())
    lau, v, t = r["launches"], r["verdict"], r["timing"]
    lc = v.get("launch_check") or {}
    start = " ".join(f"{li['startup_s']:4.1f}" for li in lau)
    imp = " ".join(f"{li['ready']['a']['timing_s']['import_s']:4.1f}" for li in lau)
    print(f"{rep_path.parent.name:<11} start-up s [{start}]  import s [{imp}]  {v['outcome']:<12} x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}] "
          f"unit {v['unit']}  pair sigma {r['sigma']:.2%}  launch sd {lc.get('sigma_launch', 0):.2%}  "
          f"other CPUs {r['other_cpus']['median']:.2f}  wall {t['wall_s']:.0f} s (start-up {t['startup_s']:.0f} s)")
