"""Sensitivity self-check: how small a slowdown can this runner detect at the configured repeats?

Runs, per round and interleaved: every decomposition plain (group A), plain again (group A'), and
with ``--slowdown`` injected (group S). Then it reports: the run-to-run CV of the steady-state median
step time (pooled over A and A'), the A'/A verdict (should pass), the S/A verdict and its realised
ratio (should be a regression when the slowdown exceeds the threshold), and the minimum detectable
slowdown at power 0.9 for these repeats (harness.simulate.min_detectable_slowdown).
"""

from __future__ import annotations

import math
import time
import uuid
from pathlib import Path
from statistics import fmean

from .baseline import DEFAULT_THRESHOLDS, GPU_DEFAULTS
from .runner import RunRequest, run_one
from .session import headline
from .simulate import min_detectable_slowdown
from .spec import load_workload
from .stats import RuntimeCheck


def calibrate(args, out=print) -> int:
    w = load_workload(args.workloads_dir, args.workload, args.steps)
    t = {**DEFAULT_THRESHOLDS, **GPU_DEFAULTS.get(args.gpu, {})}
    session = f"calibrate-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
    groups = {g: {d.id: [] for d in w.decompositions} for g in ("A", "A'", "S")}
    Path(args.results_dir).mkdir(parents=True, exist_ok=True)
    n = 0
    total = args.repeats * 3 * len(w.decompositions)
    for rep in range(1, args.repeats + 1):
        for g, slow in (("A", 0.0), ("A'", 0.0), ("S", args.slowdown)):
            for d in w.decompositions:
                n += 1
                rec = run_one(RunRequest(w, d, rep, inject_slowdown=slow), Path(args.results_dir), session, args.timeout, args.gpu)
                out(f"[{n}/{total}] {g} {w.name}-{d.id}: {headline(rec)}")
                if rec["status"] != "ok":
                    out(f"error: run failed ({rec['status']}); see {rec['log']}")
                    return 1
                groups[g][d.id].append(rec["step_time_median_ms"])
    chk = RuntimeCheck(t["alpha"], t["runtime"])
    aa = chk.decide({d: (groups["A"][d], groups["A'"][d]) for d in groups["A"]})
    inj = chk.decide({d: (groups["A"][d], groups["S"][d]) for d in groups["A"]})
    out(f"calibration of {w.name} on {args.gpu}: {args.repeats} runs per group, alpha {t['alpha']}, threshold {t['runtime']:.0%}")
    cvs = []
    for d in groups["A"]:
        logs = [math.log(x) for x in groups["A"][d]] , [math.log(x) for x in groups["A'"][d]]
        resid = [x - fmean(g) for g in logs for x in g]
        cv = math.sqrt(sum(r * r for r in resid) / max(len(resid) - 2, 1))
        cvs.append(cv)
        mds = min_detectable_slowdown(cv, args.repeats, args.repeats, t["alpha"], t["runtime"], cases=len(groups["A"]))
        out(f"  {d}: run-to-run CV {cv:.2%}; A/A {aa[d].outcome} ({aa[d].details['ratio']:.3f}); "
              f"injected {args.slowdown:.0%}: {inj[d].outcome} (realised x{inj[d].details['ratio']:.3f}); minimum detectable slowdown {mds:.1%}")
    worst = max(cvs)
    out(f"minimum detectable slowdown at {args.repeats} vs {args.repeats} runs, power 0.9, Holm over {len(cvs)}: "
          f"{min_detectable_slowdown(worst, args.repeats, args.repeats, t['alpha'], t['runtime'], cases=len(cvs)):.1%} (worst CV {worst:.2%})")
    return 0
