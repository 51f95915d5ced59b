"""Session 12 on the CPU runner: the CI end-to-end configuration at the step grain against the micro grain (run.sh).

    python docs/results/interleave-cpu/micro-s12/table.py > docs/results/interleave-cpu/micro-s12/table.txt

One line per run, in run order (quiet, then beside one CPU hog): the verdict, the ratio with its interval, the nominal
slowdown by the injection's own clock, the pair sigma, the launch Hodges-Lehmann sd, the MDS of the run (alpha 0.01,
power 0.9, its launches), seconds per pair and the whole run's wall time; then the means per grain and condition.
"""

import json
from pathlib import Path
from statistics import fmean

HERE = Path(__file__).parent
RUNS = ["quiet-step-1", "quiet-micro-1", "quiet-step-2", "quiet-micro-2", "hog-step-1", "hog-micro-1", "hog-step-2", "hog-micro-2"]


def main():
    rows = []
    for run in RUNS:
        path = HERE / run / "report.json"
        if not path.exists():
            print(f"{run:<14} (no report)")
            continue
        r = json.loads(path.read_text())
        v, inj, m, t = r["verdict"], r.get("injected") or {}, r["mds"], r["timing"]
        rows.append((run, r))
        print(f"{run:<14} {v['outcome']:<12} x{v['ratio']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}] nominal +{inj.get('share', 0):.1%}; "
              f"pair sigma {r['sigma']:6.2%}, launch HL sd {m['unit_sd']:.2%} ({m['units']} launches), MDS {m['slowdown']:.2%}; "
              f"{r['wall_s_per_pair']:.2f} s per pair, {r['pairs']} pairs, wall {t['wall_s']:.0f} s; other CPUs median "
              f"{(r.get('other_cpus') or {}).get('median', 0):.2f}")
    print()
    for cond in ("quiet", "hog"):
        for grain in ("step", "micro"):
            got = [r for n, r in rows if n.startswith(f"{cond}-{grain}-")]
            if got:
                flagged = sum(r["verdict"]["outcome"] == "regression" for r in got)
                print(f"{cond:<5} {grain:<5} {flagged}/{len(got)} flagged; mean pair sigma {fmean(r['sigma'] for r in got):.2%}, mean launch HL sd "
                      f"{fmean(r['mds']['unit_sd'] for r in got):.2%}, mean ratio x{fmean(r['verdict']['ratio'] for r in got):.4f} against nominal "
                      f"+{fmean((r.get('injected') or {}).get('share', 0) for r in got):.1%}")


if __name__ == "__main__":
    main()
