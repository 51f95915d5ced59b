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

import collections.abc
import functools
import inspect
import types
import typing
from collections.abc import Callable, Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from harness import knobs
from harness.bisect.config import BisectConfig
from harness.errors import BadInput, UsageError
from harness.files import ensure_dir, new_id, results_lock
from harness.measuring import env
from harness.measuring.loop import FreshSide, run_slots, schedule
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.results.advice import Advice
from harness.results.bisection import Bisection
from harness.results.comparison import ComparisonResult
from harness.results.run import Run
from harness.results.runs import Runs
from harness.results.suite_report import SuiteReport
from harness.sidebyside.config import ComparisonConfig
from harness.spec_folder import in_project, load_workload
from harness.suite import census as _census
from harness.suite import compare as _compare

P = ParamSpec("P")
R = TypeVar("R")

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


def _check_repeats(repeats: int) -> None:
    """Refuse ``repeats`` below 1 with one line: the call would end with no run, as if it had passed."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise BadInput(f"repeats must be at least 1 (timed runs per decomposition), got {repeats!r}")


def _folder(config: ComparisonConfig | BisectConfig, key: str) -> str:
    """A config's folder ``key`` (``workloads_dir``, ``results_dir``) where it is its default, resolved in the project
    (:func:`~harness.spec_folder.in_project`); a folder it was given stays as given."""
    given: str = getattr(config, key)
    default = next(f.default for f in fields(config) if f.name == key)
    return str(in_project(None, str(default))) if given == default else given


def _matches(value: Any, tp: Any) -> bool:
    """Whether ``value`` is of the annotated type ``tp``: a sequence is a list or a tuple (never a string), an int is
    no bool, a float may be an int, a Callable anything callable."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, t) for t in args)
    if tp is type(None):
        return value is None
    if origin is collections.abc.Callable:
        return callable(value)
    if origin in (collections.abc.Sequence, list, tuple):
        return isinstance(value, (list, tuple)) and all(_matches(v, args[0] if args else Any) for v in value)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, origin or tp)


def _noun(tp: Any) -> str:
    """The annotated type ``tp`` in words: ``a string or a path``, ``a list of strings``."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_noun(t) for t in args)
    if origin in (collections.abc.Sequence, list, tuple):
        return "a list of " + " or ".join(_noun(t).split(" ", 1)[-1] + "s" for t in _options(args[0] if args else Any))
    if origin is collections.abc.Callable:
        return "a function"
    nouns = {str: "a string", int: "an integer", float: "a number", Path: "a path", type(None): "None", Any: "a value"}
    return nouns.get(tp, f"a {getattr(tp, '__name__', tp)}")


def _options(tp: Any) -> tuple:
    return typing.get_args(tp) if typing.get_origin(tp) in (typing.Union, types.UnionType) else (tp,)


def _checked(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` refusing an argument of the wrong type before it does anything: one line (UsageError) naming the call, the
    argument, what it must be (its annotation) and what it got; never a TypeError or AttributeError from deep inside.
    Its signature stays ``fn``'s, for a type checker too."""
    hints, sig = typing.get_type_hints(fn), inspect.signature(fn)
    name = getattr(fn, "__name__", "call")

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise UsageError(f"api.{name}: {exc}") from None
        for arg, value in bound.arguments.items():
            if arg in hints and not _matches(value, hints[arg]):
                got = repr(value) if len(repr(value)) <= 60 else f"{repr(value)[:57]}..."
                raise UsageError(f"api.{name}: {arg} must be {_noun(hints[arg])}, got {got}")
        return fn(*args, **kwargs)

    return call


def here(gpu: str = "auto") -> str:
    """The GPU name runs are recorded under: the detected device for ``auto``; another name must be this machine's."""
    return env.resolve_gpu(gpu, env.detect_gpu())


@_checked
def run_case(
    workload: str,
    decomposition: str | None = None,
    *,
    repeats: int = 3,
    gpu: str = "auto",
    steps: int | None = None,
    workloads_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> Runs:
    """``repeats`` timed runs of each of ``workload``'s splits (or of ``decomposition`` alone), one fresh process each,
    in ``results_dir/runs.jsonl``; returns them."""
    _check_repeats(repeats)
    w = load_workload(in_project(workloads_dir, "workloads"), workload, steps)
    decs = [w.decomposition(decomposition)] if decomposition else list(w.decompositions)
    side = FreshSide("", ensure_dir(in_project(results_dir, "perf-results/api")), new_id())
    with results_lock(side.results_dir):  # refused at once beside a session or another call writing there
        ran = run_slots(
            schedule([side], [(w, d) for d in decs], repeats), timeout_s=RUN_TIMEOUT_S, gpu=here(gpu), progress=out
        )
    runs = tuple(Run.from_json(r) for r in ran.records)
    return Runs(side.session_id, w.name, runs, 3 if any(not r.ok for r in runs) else 0)


@_checked
def census(
    workload: str,
    decompositions: Sequence[str] | None = None,
    *,
    python: str | None = None,
    gpu: str = "auto",
    repeats: int = 1,
    steps: int | None = None,
    workloads_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
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
        workloads_dir=in_project(workloads_dir, "workloads"),
        results_dir=in_project(results_dir, "perf-results/census"),
        run_timeout=RUN_TIMEOUT_S,
        out=out,
    )


@_checked
def side_by_side(config: ComparisonConfig, *, out: Callable[[str], None] = print) -> ComparisonResult:
    """A against B as ``config`` says (:class:`~harness.sidebyside.config.ComparisonConfig`), interleaved on this
    machine."""
    from harness.sidebyside.launchers import Hooks
    from harness.sidebyside.run import interleave

    config = replace(
        config,
        gpu=here(config.gpu or "auto"),
        workloads_dir=_folder(config, "workloads_dir"),
        results_dir=_folder(config, "results_dir"),
    )
    hooks = Hooks(faults=knobs.FAULTS.get())  # test-only fault injection, as the pytest session takes it
    return interleave(config, hooks=hooks, out=out)


@_checked
def judge(
    results_dirs: Sequence[str | Path],
    *,
    against: Sequence[str | Path] | None = None,
    baselines_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """The runs of ``results_dirs`` judged against the stored baselines of ``baselines_dir`` (or against the runs of the
    results dirs ``against``); the report is also written to ``out_dir`` (default: the first results dir)."""
    dirs = [str(d) for d in results_dirs]
    if not dirs:
        raise UsageError("api.judge: results_dirs is empty; pass the results dir(s) to judge")
    if against:
        return _compare.compare([str(d) for d in against], dirs, out_dir=out_dir or dirs[0], out=out)
    return _compare.write_report(
        dirs,
        baselines_dir=str(in_project(baselines_dir, "baselines")),
        out_dir=None if out_dir is None else str(out_dir),
        out=out,
    )


@_checked
def bisect(config: BisectConfig, *, out: Callable[[str], None] = print) -> Bisection:
    """The bisection ``config`` asks for; its report is written to ``config.results_dir``."""
    from harness.bisect import report
    from harness.bisect.search import bisect as search

    config = replace(
        config,
        gpu=here(config.gpu),
        workloads_dir=_folder(config, "workloads_dir"),
        results_dir=_folder(config, "results_dir"),
    )
    with results_lock(ensure_dir(config.results_dir)):  # refused at once beside another run writing there
        result = search(config, out=out)
        report.write(result, config.results_dir)
    return result


@_checked
def advise(
    workload: str,
    *,
    gpu: str = "auto",
    budget_minutes: float = 10.0,
    workloads_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> Advice:
    """Which split of ``workload``'s effective batch is fastest on this machine, within ``budget_minutes`` of device
    time."""
    from harness.workflows.advise import advise as run

    return run(
        gpu=here(gpu),
        workload=workload,
        budget_minutes=budget_minutes,
        workloads_dir=in_project(workloads_dir, "workloads"),
        results_dir=in_project(results_dir, "perf-results/advise"),
        out=out,
    )


@_checked
def confirm(
    report: str | Path,
    config: ComparisonConfig | None = None,
    *,
    workloads_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """Each runtime regression of the suite report ``report`` re-measured side by side here, ``config.python_a`` (the
    reference environment) against ``config.python_b`` (the one the report measured); the confirmed report."""
    from harness.workflows.confirm import confirm as run

    return run(
        report,
        config,
        workloads_dir=in_project(workloads_dir, "workloads"),
        results_dir=in_project(results_dir, "perf-results/confirm"),
        out=out,
    )
