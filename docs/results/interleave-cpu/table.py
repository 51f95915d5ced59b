"""One line per comparison stored under a directory: every blocks.jsonl with its report.json, re-analysed with the
current statistics (harness.commands.interleave.reanalyse: the block metric given, median by default, and the launch
screen at harness.judging.paired.LAUNCH_ALPHA). The report.json/report.md beside each blocks.jsonl are what the command
printed when it ran (some before the median became the default and the screen moved from 0.05 to 0.25).

    PYTHONPATH=. python docs/results/interleave-cpu/table.py docs/results/interleave-cpu [mean|median]

Columns: the verdict's ratio B/A, interval, outcome and unit; the sd of one pair's log ratio; the launch check (launch
sd, F test p); CPUs kept busy by the rest of the machine during the blocks (median); wall time; the resume penalty
(first step / median of the others) of A and B; the host canary's correlation with the pair log ratio, and the change
of the log ratio's variance when the canary is used as a covariate (negative: it helps).

B names side B's interpreter (a wrapper from wrappers/ or plain python), its injection and its malloc: "fixed" is
harness.measuring.resident.STABLE_MALLOC (the default since it was added), "glibc" glibc's own moving thresholds
(runs from before, or --malloc-default); the py-malloc and py-all wrappers set their own malloc variables.

"""

import json
import math
import sys
from pathlib import Path

from harness.commands.interleave import reanalyse


def main(root: str, metric: str = "median") -> None:
    print(f"{'run':<38} {'B (malloc)':<24} {'k':>2} {'pairs':>5} {'L':>2} {'B/A':>7} {'interval':<17} {'verdict':<12} {'unit':<6} "
          f"{'pair sd':>7} {'launch sd':>9} {'F p':>6} {'other CPUs':>10} {'wall s':>6} {'resume A,B':>11} {'canary r':>8} {'cov var':>7}")
    for rep in sorted(Path(root).rglob("report.json")):
        stored = json.loads(rep.read_text())
        r = {**stored, **reanalyse(rep.parent, metric)}
        s, v = r["settings"], r.get("verdict") or {}
        lc = v.get("launch_check") or {}
        b = Path(s["python_b"]).name if Path(s["python_b"]).name != "python" else "python"
        if s.get("inject_slowdown_b"):
            b += f" +{s['inject_slowdown_b']:.0%} sleep"
        if s.get("inject_work_b"):
            b += f" +work {s['inject_work_b']}"
        # runs made before the fixed-malloc default have no malloc_default key: glibc's default, unless a wrapper set it
        if "malloc_default" not in s or s["malloc_default"]:
            b += " glibc" if Path(s["python_b"]).name in ("python", "py-fixed", "py-thp") else ""
        else:
            b += " fixed"
        other = (r.get("other_cpus") or {}).get("median")
        c = r.get("canary") or {}

        def rp(side, r=r):
            p = (r.get("resume_penalty") or {}).get(side)
            return f"{p['ratio']:.3f}" if p else "  -  "
        print(f"{str(rep.parent.relative_to(root)):<38} {b:<24} {s['block_steps']:>2} {r.get('pairs', 0):>5} {len(r.get('launch_sizes') or []):>2} "
              f"{v.get('ratio', math.nan):>7.4f} [{v.get('lo', math.nan):.3f}, {v.get('hi', math.nan):.3f}] {v.get('outcome', '-'):<12} "
              f"{v.get('unit', '-'):<6} {r.get('sigma') or math.nan:>7.2%} {lc.get('sigma_launch', math.nan):>9.2%} {lc.get('p', math.nan):>6.3f} "
              f"{other if other is not None else math.nan:>10.2f} {r['timing']['wall_s']:>6.0f} "
              f"{rp('a')},{rp('b')} {c.get('pair_corr', math.nan):>+8.2f} {-c.get('reduction', math.nan):>+7.0%}")


if __name__ == "__main__":
    main(*sys.argv[1:])
