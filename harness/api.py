"""The suite as a library: each function measures or judges, and returns its result as an object (``harness.results``).

The command line (``python -m harness``) and the pytest plugin are shells over these functions; ``docs/api.md`` shows
them in use. Every function writes its files into ``results_dir`` once, from the object it returns; a caller reads the
object, never the files.

* :func:`run_case`: timed runs of one case, each a fresh worker process -> :class:`~harness.results.runs.Runs`
* :func:`census`: census runs (the work per optimizer step) -> :class:`~harness.results.runs.Runs`
* :func:`side_by_side`: A against B interleaved on this machine -> :class:`~harness.results.comparison.ComparisonResult`
* :func:`judge`: results dirs against the stored baselines, or against other results dirs ->
  :class:`~harness.results.suite_report.SuiteReport`
* :func:`advise`: the fastest split of the effective batch here -> :class:`~harness.results.advice.Advice`
* :func:`confirm`: a suite report's runtime regressions re-measured side by side -> the confirmed
  :class:`~harness.results.suite_report.SuiteReport`
* :func:`bisect`: the release (or commit) that changed a case's work or time ->
  :class:`~harness.results.bisection.Bisection`
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from harness.bisect.config import BisectConfig
from harness.files import ensure_dir, new_id, results_lock
from harness.measuring.env import detect_gpu, resolve_gpu
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.advice import Advice
from harness.results.bisection import Bisection
from harness.results.comparison import ComparisonResult
from harness.results.runs import Runs
from harness.results.suite_report import SuiteReport
from harness.sidebyside.config import ComparisonConfig
from harness.spec import load_workload
from harness.suite import census as _census
from harness.suite import compare as _compare

__all__ = [
    "Advice",
    "Bisection",
    "BisectConfig",
    "ComparisonConfig",
    "ComparisonResult",
    "Runs",
    "SuiteReport",
    "advise",
    "bisect",
    "census",
    "confirm",
    "judge",
    "run_case",
    "side_by_side",
]


def here(gpu: str = "auto") -> str:
    """The GPU name runs are recorded under: the detected device for ``auto``; another name must be this machine's."""
    return resolve_gpu(gpu, detect_gpu())


def run_case(
    workload: str,
    decomposition: str | None = None,
    *,
    repeats: int = 3,
    gpu: str = "auto",
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/api",
    out: Callable[[str], None] = print,
) -> Runs:
    """``repeats`` timed runs of each of ``workload``'s splits (or of ``decomposition`` alone), one fresh process each,
    in ``results_dir/runs.jsonl``; returns them."""
    w = load_workload(workloads_dir, workload, steps)
    decs = [w.decomposition(decomposition)] if decomposition else list(w.decompositions)
    side = FreshSide("", ensure_dir(results_dir), new_id())
    with results_lock(side.results_dir):  # refused at once beside a session or another call writing there
        ran = run_slots(
            schedule([side], [(w, d) for d in decs], repeats), timeout_s=RUN_TIMEOUT_S, gpu=here(gpu), progress=out
        )
    failed = any(r.get("status") != "ok" for r in ran.records)
    return Runs(side.session_id, w.name, tuple(ran.records), 3 if failed else 0)


def census(
    workload: str,
    decompositions: Sequence[str] | None = None,
    *,
    python: str | None = None,
    gpu: str = "auto",
    repeats: int = 1,
    steps: int | None = None,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/census",
    out: Callable[[str], None] = print,
) -> Runs:
    """Census runs of ``workload`` (all its splits, or ``decompositions``) under ``python`` (default: this
    interpreter)."""
    return _census.census(
        gpu=here(gpu),
        workload=workload,
        decompositions=list(decompositions) if decompositions else None,
        repeats=repeats,
        python=python,
        steps=steps,
        workloads_dir=workloads_dir,
        results_dir=results_dir,
        run_timeout=RUN_TIMEOUT_S,
        out=out,
    )


def side_by_side(config: ComparisonConfig, *, out: Callable[[str], None] = print) -> ComparisonResult:
    """A against B as ``config`` says (:class:`~harness.sidebyside.config.ComparisonConfig`), interleaved on this
    machine."""
    from harness.sidebyside.run import interleave

    return interleave(replace(config, gpu=here(config.gpu or "auto")), out=out)


def judge(
    results_dirs: Sequence[str | Path],
    *,
    against: Sequence[str | Path] | None = None,
    baselines_dir: str | Path = "baselines",
    out_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """The runs of ``results_dirs`` judged against the stored baselines of ``baselines_dir`` (or against the runs of the
    results dirs ``against``); the report is also written to ``out_dir`` (default: the first results dir)."""
    dirs = [str(d) for d in results_dirs]
    if against:
        return _compare.compare([str(d) for d in against], dirs, out_dir=out_dir or dirs[0], out=out)
    return _compare.write_report(
        dirs, baselines_dir=str(baselines_dir), out_dir=None if out_dir is None else str(out_dir), out=out
    )


def bisect(config: BisectConfig, *, out: Callable[[str], None] = print) -> Bisection:
    """The bisection ``config`` asks for; its report is written to ``config.results_dir``."""
    from harness.bisect import report
    from harness.bisect.search import bisect as search

    config = replace(config, gpu=here(config.gpu))
    with results_lock(ensure_dir(config.results_dir)):  # refused at once beside another run writing there
        result = search(config, out=out)
        report.write(result, config.results_dir)
    return result


def advise(
    workload: str,
    *,
    gpu: str = "auto",
    budget_minutes: float = 10.0,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/advise",
    out: Callable[[str], None] = print,
) -> Advice:
    """Which split of ``workload``'s effective batch is fastest on this machine, within ``budget_minutes`` of device
    time."""
    from harness.workflows.advise import advise as run

    return run(
        gpu=here(gpu),
        workload=workload,
        budget_minutes=budget_minutes,
        workloads_dir=workloads_dir,
        results_dir=results_dir,
        out=out,
    )


def confirm(
    report: str | Path,
    config: ComparisonConfig | None = None,
    *,
    workloads_dir: str | Path = "workloads",
    results_dir: str | Path = "perf-results/confirm",
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """Each runtime regression of the suite report ``report`` re-measured side by side here, ``config.python_a`` (the
    reference environment) against ``config.python_b`` (the one the report measured); the confirmed report."""
    from harness.workflows.confirm import confirm as run

    return run(report, config, workloads_dir=workloads_dir, results_dir=results_dir, out=out)
