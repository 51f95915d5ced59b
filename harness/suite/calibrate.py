"""Sensitivity self-check: how small a slowdown can this runner detect at the configured repeats?

Runs, per round and interleaved: every decomposition plain (group A), plain again (group A'), and
with ``slowdown`` injected (group S). Then it reports: the run-to-run CV of the steady-state median
step time (pooled over A and A'), the A'/A verdict (should pass), the S/A verdict and its realised
ratio (should be a regression when the slowdown exceeds the threshold), and the minimum detectable
slowdown at power 0.9 for these repeats (harness.judging.simulate.min_detectable_slowdown).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from statistics import variance

from harness.errors import BadInput
from harness.exits import MEASUREMENT_FAILED
from harness.files import ensure_dir, new_id, results_lock
from harness.judging.baseline import Thresholds
from harness.judging.simulate import min_detectable_slowdown
from harness.judging.stats import RuntimeCheck
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.run import Run
from harness.spec_folder import load_workload


def pooled_log_cv(a: list[float], b: list[float]) -> float:
    """Pooled within-group sd of log values of two groups (the run-to-run CV on the log scale)."""
    la, lb = [math.log(x) for x in a], [math.log(x) for x in b]
    ss = (len(la) - 1) * variance(la) + (len(lb) - 1) * variance(lb)
    return math.sqrt(ss / max(len(la) + len(lb) - 2, 1))


def calibrate(
    *,
    gpu: str,
    workload: str,
    repeats: int = 5,
    slowdown: float = 0.10,
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/calibrate",
    run_timeout: float = RUN_TIMEOUT_S,
    out: Callable[[str], None] = print,
) -> int:
    if repeats < 2:
        raise BadInput(f"--repeats must be at least 2 (a CV needs two runs per group), got {repeats}")
    w = load_workload(workloads_dir, workload, steps)
    t = Thresholds.of(gpu)
    root, session = ensure_dir(results_dir), new_id("calibrate")
    sides = [
        FreshSide("A", root, session),
        FreshSide("A'", root, session),
        FreshSide("S", root, session, inject_slowdown=slowdown),
    ]
    groups: dict[str, dict[str, list[float]]] = {s.name: {d.id: [] for d in w.decompositions} for s in sides}
    failed: list[Run] = []

    def keep(slot, rec):
        run = Run.from_json(rec)
        if not run.ok:
            failed.append(run)
        else:
            groups[slot.side.name][slot.decomposition.id].append(run.step_time_median_ms)

    with results_lock(root):  # refused at once beside a session or another command writing there
        run_slots(
            schedule(sides, [(w, d) for d in w.decompositions], repeats, sides_inside=False),
            timeout_s=run_timeout,
            gpu=gpu,
            progress=out,
            on_record=keep,
            stop=lambda _s: f"error: run failed ({failed[0].status}); see {failed[0].log}" if failed else None,
        )
    if failed:
        return MEASUREMENT_FAILED
    chk = RuntimeCheck(t.alpha, t.runtime)
    aa = chk.decide({d: (groups["A"][d], groups["A'"][d]) for d in groups["A"]})
    inj = chk.decide({d: (groups["A"][d], groups["S"][d]) for d in groups["A"]})
    out(f"calibration of {w.name} on {gpu}: {repeats} runs per group, alpha {t.alpha}, threshold {t.runtime:.0%}")
    cvs = []
    for d in groups["A"]:
        cv = pooled_log_cv(groups["A"][d], groups["A'"][d])
        cvs.append(cv)
        mds = min_detectable_slowdown(cv, repeats, repeats, t.alpha, t.runtime, cases=len(groups["A"]))
        out(
            f"  {d}: run-to-run CV {cv:.2%}; A/A {aa[d].outcome} ({aa[d].details['ratio']:.3f}); "
            f"injected {slowdown:.0%}: {inj[d].outcome} (realised x{inj[d].details['ratio']:.3f}); "
            f"minimum detectable slowdown {mds:.1%}"
        )
    worst = max(cvs)
    out(
        f"minimum detectable slowdown at {repeats} vs {repeats} runs, power 0.9, Holm over {len(cvs)}: "
        f"{min_detectable_slowdown(worst, repeats, repeats, t.alpha, t.runtime, cases=len(cvs)):.1%} "
        f"(worst CV {worst:.2%})"
    )
    return 0
