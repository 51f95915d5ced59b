"""``python -m harness cost``: what the census says a step costs, and what a change of it will cost
(docs/cost-model.md).

* ``cost --model PATH...``: per workload and split, the host work (Python calls, aten ops, launches) and the device
  work (kernel time), the GPU busy share, which path bounds the step, the host-cost mix calibrated on the splits' own
  step times, and each split's ratio to the reference split (the fewest micro-batches) measured beside predicted, each
  prediction calibrated on the other splits only.
* ``cost --diff A B``: for every case with a census on both sides, the census diff and the predicted change of A's step
  time, with its interval and its host and GPU parts; calibrated on A's splits (or ``--timing``'s). The critical-path
  model (:mod:`harness.judging.cost_path`) where the censuses carry timelines, else the two-path model; each line
  names the model that gave it.

A PATH is a results dir (its ``runs.jsonl``: census runs give the work, timed runs the step times) or a baseline file.
"""

from __future__ import annotations

from collections.abc import Callable
from statistics import median

from harness import options as opt
from harness.errors import UsageError
from harness.judging import census_diff, cost_path
from harness.judging import cost_fit as cf
from harness.judging import cost_model as cm
from harness.options_results import COST
from harness.suite.runs import census_of, merged, runs_of


def _splits(runs: dict[tuple[str, str], list[dict]], workload: str) -> list[cf.SplitCase]:
    return cf.split_cases({s: r for (w, s), r in runs.items() if w == workload})


def calibration_of(splits: list[cf.SplitCase], idle_ms) -> cf.Calibration | None:
    """The splits' calibration (every split's ratio to the reference), or None with fewer than two splits."""
    if len(splits) < 2:
        return None
    ref = cf.reference(splits)
    return cf.calibrate([cf.split_observation(ref, s, idle_ms) for s in splits if s is not ref], idle_ms)


def census_report(paths: list[str], idle_ms=None, out: Callable[[str], None] = print) -> int:
    """``cost --model``: the work of each case and the split ratios, measured beside predicted."""
    runs = merged(paths)
    workloads = sorted({w for w, _ in runs})
    shown = 0
    for w in workloads:
        splits = _splits(runs, w)
        if not splits:
            out(f"{w}: no split has both a census and a timed run; nothing to model")
            continue
        shown += 1
        out(f"{w}:")
        for s in splits:
            case = s.case(idle_ms)
            out(
                f"  {s.split}: step {s.step_ms:.1f} ms (median of {len(s.steps_ms)} runs); "
                f"host work {s.work.python_calls:,.0f} Python calls, "
                f"{s.work.ops:,.0f} aten ops, {s.work.kernels:,.0f} launches; "
                f"device work {s.work.kernel_ms:.1f} ms of kernels "
                f"in {s.work.micro_batches} micro-batch(es): GPU busy {case.busy:.0%}, {case.bound}-bound"
                + (f"; {why}" if (why := cm.unexplained(case)) else "")
            )
            if (line := cost_path.timeline_line(census_of(runs, (w, s.split)) or {}, s.step_ms)) is not None:
                out(f"    {line}")
        cal = calibration_of(splits, idle_ms)
        if cal is None:
            out("  one split only: no calibration (a prediction's interval spans every host-cost mix)")
            continue
        ref = cf.reference(splits)
        us = cm.unit_costs_us(ref.case(idle_ms), cal.best)
        out(f"  calibrated on the split ratios: {cal.line()}")
        out(
            "  on "
            + ref.split
            + ": "
            + ", ".join(f"{v:.2f} us per {n}" for n, v in zip(("Python call", "aten op", "launch"), us.values()))
        )
        for split, measured, pred, lo, hi, c in cf.leave_one_out(splits, idle_ms=idle_ms):
            out(
                f"  {split}/{ref.split}: measured x{measured:.2f}, predicted x{pred:.2f} [{lo:.2f}, {hi:.2f}] "
                f"({100 * (pred / measured - 1):+.1f}%), "
                f"calibrated on {', '.join(c.names) or 'nothing (the other splits are missing)'}"
            )
    return 0 if shown else 2


def _timing(runs: dict, key) -> float | None:
    steps = [
        float(r["step_time_median_ms"])
        for r in runs.get(key, [])
        if not r.get("census") and r.get("step_time_median_ms")
    ]
    return median(steps) if steps else None


def _spec_warning(ra: dict, rb: dict, key) -> str | None:
    """One line when the censuses of a case were made of two workload specs (their hashes differ): then the diff counts
    a change of the workload, not of the environment, and the prediction says nothing of either."""
    ha, hb = (
        {r.get("workload_hash") for r in runs.get(key, []) if r.get("census") and r["census"].get("fits")}
        for runs in (ra, rb)
    )
    if ha and hb and ha != hb:
        return (
            f"warning: {key[0]} {key[1]}: A and B are censuses of different workload specs "
            f"(hash {', '.join(sorted(map(str, ha)))} != {', '.join(sorted(map(str, hb)))}): "
            "the diff counts a change of the workload; compare censuses of one spec"
        )
    return None


def diff_report(
    a: str, b: str, timing: list[str] | None = None, idle_ms=None, out: Callable[[str], None] = print
) -> int:
    """``cost --diff A B``: the predicted step change of each case whose census differs."""
    ra, rb = runs_of(a), runs_of(b)
    rt = merged(timing) if timing else ra
    keys = sorted(k for k in ra if census_of(ra, k) and census_of(rb, k))
    if not keys:
        raise UsageError(
            f"{a} and {b}: no case has a census on both sides; run `python -m harness census` in each environment"
        )
    for key in keys:
        base, cur = census_of(ra, key), census_of(rb, key)
        step = _timing(rt, key) or (None if timing else _timing(rb, key))
        d = census_diff.diff(base, cur)
        head = f"{key[0]} {key[1]}"
        if (warning := _spec_warning(ra, rb, key)) is not None:
            out(warning)
        if step is None:
            raise UsageError(
                f"{head}: no timed run in {' '.join(timing) if timing else f'{a} or {b}'}; "
                "the model needs the case's step time "
                "(pass --timing with a results dir or baseline file that has timed runs)"
            )
        out(f"{head}: " + ("; ".join(census_diff.lines(d, base, cur)) if d.counts_changed else "counts identical"))
        cal = calibration_of(_splits(rt, key[0]), idle_ms)
        p = cost_path.predict_pair(base, cur, step, cal, idle_ms)
        out(
            f"  {cost_path.pair_line(p)}; step {step:.1f} ms; "
            + (f"calibrated on {', '.join(cal.names)}" if cal else "no calibration: every host-cost mix")
        )
    return 0


def idle_range(text: str | None):
    """``--idle-ms LO,HI`` (or one value) as a range, or None."""
    if not text:
        return None
    try:
        xs = [float(x) for x in text.split(",")]
        lo, hi = (xs[0], xs[0]) if len(xs) == 1 else (xs[0], xs[1])
    except (ValueError, IndexError):
        raise UsageError(f"--idle-ms {text}: expected LO,HI in ms per micro-batch, such as 60,76") from None
    if not 0 <= lo <= hi or len(xs) > 2:
        raise UsageError(f"--idle-ms {text}: expected 0 <= LO <= HI (ms per micro-batch)")
    return (lo, hi)


def run(a) -> int:
    """The CLI's entry: exactly one of --model and --diff."""
    if bool(a.model) == bool(a.diff):
        raise UsageError("cost needs --model PATH... or --diff A B (one of them)")
    idle = idle_range(a.idle_ms)
    if a.model:
        return census_report(a.model, idle)
    return diff_report(a.diff[0], a.diff[1], a.timing, idle)


def add_parser(sub) -> None:
    """The ``cost`` subcommand's options."""
    cp = sub.add_parser(
        "cost",
        help="the cost model: host and GPU work per case and the split ratios predicted (--model), or the predicted "
        "step change of a census diff (--diff A B); docs/cost-model.md",
    )
    opt.add(cp.add_argument, COST)
    cp.set_defaults(fn=run)
