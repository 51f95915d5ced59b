"""Same-machine A/B: one workload under two Python environments, interleaved on one machine.

A stored baseline can only be trusted on the machine it was recorded on; across leased VMs the
machine offset swamps small regressions (docs/evidence/what-a-stored-baseline-detects/). For a library upgrade the way
to see a few percent there is to run both environments on the same machine, in the same job, interleaved:
round r runs every decomposition as A then B (odd r) or B then A (even r), so slow drift cancels.
A's runs go to RESULTS_DIR/a, B's to RESULTS_DIR/b, and the verdicts are those of
``python -m harness compare RESULTS_DIR/a RESULTS_DIR/b``: one machine, so the run is the unit.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from harness.errors import BadInput
from harness.files import ensure_dir, new_id, results_lock
from harness.measuring.interpreters import interpreter, same_versions
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.run import Run
from harness.results.suite_report import SuiteReport
from harness.spec_folder import load_workload
from harness.suite.compare import in_dir, judged, run_record, runs_against


@dataclass(frozen=True)
class Rounds:
    """The interleaved runs of one ``ab``: A's and B's records, as written to ``root/a`` and ``root/b``."""

    root: Path
    a: list[Run]
    b: list[Run]


def run_rounds(
    *,
    gpu: str,
    workload: str,
    python_b: str,
    python_a: str | None = None,
    decompositions: list[str] | None = None,
    repeats: int = 5,
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/ab",
    run_timeout: float = RUN_TIMEOUT_S,
    inject_slowdown_b: float = 0.0,
    inject_work_b: int = 0,
    skip_same_versions: bool = False,
    held: ExitStack,
    out: Callable[[str], None] = print,
) -> Rounds | None:
    """Make the interleaved runs; return their records, or None when ``skip_same_versions``
    finds nothing to compare (both sides have the same versions: no release since the pins). The results dir's lock is
    taken before the first run (refused at once beside another run writing there) and entered into ``held``: the caller
    keeps it until its report is written there."""
    w = load_workload(workloads_dir, workload, steps)
    decs = [w.decomposition(d) for d in decompositions] if decompositions else list(w.decompositions)
    if repeats < 2:
        raise BadInput(f"--repeats must be at least 2 (the test needs two runs per side), got {repeats}")
    pa, pb = interpreter(python_a, "a"), interpreter(python_b, "b")
    if skip_same_versions and not inject_slowdown_b and not inject_work_b and (same := same_versions(pa, pb)):
        msg = f"A and B have the same versions ({same}): nothing to compare, no runs made (--skip-same-versions)"
        out(msg)
        if summary := os.environ.get("GITHUB_STEP_SUMMARY"):
            with open(summary, "a") as fh:
                fh.write(f"## A/B {w.name} on {gpu}\n\n{msg}\n")
        return None
    root = ensure_dir(results_dir)
    held.enter_context(results_lock(root))
    stamp = new_id("ab")
    sides = [
        FreshSide("a", root / "a", f"{stamp}-a", python=pa),
        FreshSide(
            "b", root / "b", f"{stamp}-b", python=pb, inject_slowdown=inject_slowdown_b, inject_work=inject_work_b
        ),
    ]
    out(
        f"A: {pa}\nB: {pb}"
        + (f" (+{inject_slowdown_b:.0%} injected)" if inject_slowdown_b else "")
        + (f" (inject-work {inject_work_b})" if inject_work_b else "")
    )
    slots = schedule(sides, [(w, d) for d in decs], repeats, alternate=True)
    ran = run_slots(slots, timeout_s=run_timeout, gpu=gpu, progress=out)
    by_side: dict[str, list[Run]] = {"a": [], "b": []}
    for slot, rec in zip(slots, ran.records, strict=False):
        d = slot.side.results_dir  # as `compare` of the two dirs would read it
        by_side[slot.side.name].append(in_dir(run_record(rec, f"{d}/runs.jsonl"), d))
    return Rounds(root, by_side["a"], by_side["b"])


def ab(
    *, alpha: float | None = None, threshold: float | None = None, out: Callable[[str], None] = print, **rounds
) -> SuiteReport:
    """``python -m harness ab``: the interleaved runs, then B judged against A (``compare``), the full report in the
    results dir. Returns that report (exit code as ``compare``: 1 on a regression); an empty one when there was nothing
    to compare."""
    with ExitStack() as held:  # the results dir's lock, from the first run to the report
        rounds_made = run_rounds(out=out, held=held, **rounds)
        if rounds_made is None:
            return SuiteReport()
        a, b = rounds_made.root / "a", rounds_made.root / "b"
        judge = runs_against(rounds_made.a, rounds_made.b, a, alpha, threshold)
        return judged(judge, [str(a)], [str(b)], out_dir=rounds_made.root, out=out)
