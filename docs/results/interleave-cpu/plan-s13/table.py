"""Session 13's check of the plan line on the CPU runner (run.sh): per run, its verdict, its launches and its own MDS
(alpha 0.01, power 0.9, t over its launch HL estimates), the plan its report proposed, and what the current planner
(harness.commands.interleave.plan_for: least regret between the launch sd's estimate and its 90% upper bound) proposes
from the same run.

    PYTHONPATH=. python docs/results/interleave-cpu/plan-s13/table.py > docs/results/interleave-cpu/plan-s13/table.txt
"""

import json
from pathlib import Path

from harness.commands import interleave as il

HERE = Path(__file__).parent


def main():
    print(f"{'run':<16} {'verdict':<12} {'B/A':>6} {'interval':<16} {'L':>2} {'pairs':>5} {'launch HL sd':>12} {'MDS':>6} | "
          f"{'stored plan':<24} | current plan (least regret up to the 90% bound)")
    for d in sorted(p for p in HERE.iterdir() if p.is_dir()):
        rep = json.loads((d / "report.json").read_text())
        v, m, sp = rep["verdict"], rep["mds"], rep["plan"]
        stored = f"L {sp['launches']:2d}, {sp.get('mds_at_estimate', sp['mds']):.2%} at est."
        cur = il.plan_for(dict(rep, **il.reanalyse(d)))
        print(f"{d.name:<16} {v['outcome']:<12} {v['ratio']:6.3f} [{v['lo']:.3f}, {v['hi']:.3f}] {m['units']:2d} {rep['pairs']:5d} "
              f"{m['unit_sd']:12.2%} {m['slowdown']:6.2%} | {stored:<24} | L {cur['launches']:2d} of {cur['pairs_per_launch']:2d}: "
              f"{cur['mds_at_estimate']:.2%} at the estimate {cur['launch_sd']:.2%}, {cur['mds']:.2%} at the bound {cur['launch_sd_planned']:.2%}")


if __name__ == "__main__":
    main()
