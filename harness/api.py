"""The suite as a library: each function measures or judges, and returns its result as an object (``harness.results``).

The command line (``python -m harness``) and the pytest plugin are shells over these functions; ``docs/api.md`` shows
them in use. Every function writes its files into ``results_dir`` once, from the object it returns; a caller reads the
object, never the files.

* :func:`run_case`: timed runs of one case, each a fresh worker process -> :class:`~harness.results.runs.Runs`
* :func:`census`: census runs (the work per optimizer step) -> :class:`~harness.results.runs.Runs`
* :func:`ab`: one workload under two Python environments, fresh-process runs interleaved, B judged against A ->
  :class:`~harness.results.suite_report.SuiteReport`
* :func:`side_by_side`: A against B interleaved on this machine -> :class:`~harness.results.comparison.ComparisonResult`
* :func:`judge`: results dirs against the stored baselines, or against other results dirs, the report and its plots
  written -> :class:`~harness.results.suite_report.SuiteReport`
* :func:`compare`: results dirs B against A (results dirs or a baseline file), printed ->
  :class:`~harness.results.suite_report.SuiteReport`
* :func:`update_baseline`: recorded runs stored as a GPU's baseline -> the exit code, 0
* :func:`recover`: an interleaved comparison that stopped before its report, judged from what it kept ->
  :class:`~harness.results.comparison.ComparisonResult`
* :func:`advise`: the fastest split of the effective batch here -> :class:`~harness.results.advice.Advice`
* :func:`confirm`: a suite report's runtime regressions re-measured side by side -> the confirmed
  :class:`~harness.results.suite_report.SuiteReport`
* :func:`bisect`: the release (or commit) that changed a case's work or time ->
  :class:`~harness.results.bisection.Bisection`

The commands build each call's settings from their options as one config (:mod:`harness.configs`,
:class:`ComparisonConfig`, :class:`BisectConfig`); ``census``, ``judge`` and ``advise`` also take the common settings
as arguments, as ``run_case`` does, for a short script; ``recover`` takes its results dir alone.
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
from harness.configs import ABConfig, AdviseConfig, BaselineConfig, CensusConfig, JudgeConfig
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
C = TypeVar("C")

__all__ = [
    "ABConfig",
    "Advice",
    "AdviseConfig",
    "BaselineConfig",
    "Bisection",
    "BisectConfig",
    "CensusConfig",
    "ComparisonConfig",
    "ComparisonResult",
    "JudgeConfig",
    "Runs",
    "SuiteReport",
    "ab",
    "advise",
    "bisect",
    "census",
    "compare",
    "confirm",
    "judge",
    "recover",
    "run_case",
    "side_by_side",
    "update_baseline",
]

CONFIGS = (CensusConfig, ABConfig, AdviseConfig, JudgeConfig, BaselineConfig, ComparisonConfig, BisectConfig)


def _check_repeats(repeats: int) -> None:
    """Refuse ``repeats`` below 1 with one line: the call would end with no run, as if it had passed."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise BadInput(f"repeats must be at least 1 (timed runs per decomposition), got {repeats!r}")


def _folder(config: Any, key: str) -> str:
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
        given = list(bound.arguments.values())
        if given and isinstance(given[0], CONFIGS) and (more := [a for a in list(bound.arguments)[1:] if a != "out"]):
            raise UsageError(
                f"api.{name}: pass the {type(given[0]).__name__} alone (and out), or the arguments without it; "
                f"got it with {', '.join(more)}"
            )
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
    workload: str | CensusConfig,
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
    """Census runs as ``workload``, a :class:`~harness.configs.CensusConfig`, says; or of the workload named so (all
    its splits, or ``decompositions``) under ``python`` (default: this interpreter)."""
    config = (
        workload
        if isinstance(workload, CensusConfig)
        else _short(
            CensusConfig,
            workload=workload,
            decompositions=tuple(decompositions or ()),
            python=python,
            gpu=gpu,
            repeats=repeats,
            steps=steps,
            workloads_dir=workloads_dir,
            results_dir=results_dir,
        )
    )
    return _census.census(
        gpu=here(config.gpu),
        workload=config.workload,
        decompositions=list(config.decompositions) or None,
        repeats=config.repeats,
        python=config.python,
        inject_work=config.inject_work,
        steps=config.steps,
        workloads_dir=_folder(config, "workloads_dir"),
        results_dir=_folder(config, "results_dir"),
        run_timeout=config.run_timeout,
        out=out,
    )


def _short(kind: Callable[..., C], **given: Any) -> C:
    """The config ``kind`` of a short call's arguments: one left None keeps the config's default, a path is its
    text."""
    return kind(**{k: str(v) if isinstance(v, Path) else v for k, v in given.items() if v is not None})


@_checked
def ab(config: ABConfig, *, out: Callable[[str], None] = print) -> SuiteReport:
    """``config.workload`` under ``config.python_a`` and ``config.python_b``, fresh-process runs interleaved on this
    machine (:class:`~harness.configs.ABConfig`), then B judged against A; the report is written to
    ``config.results_dir``. An empty report when ``skip_same_versions`` found nothing to compare."""
    from harness.suite.ab import ab as run

    return run(
        gpu=here(config.gpu),
        workload=config.workload,
        python_a=config.python_a,
        python_b=config.python_b,
        decompositions=list(config.decompositions) or None,
        repeats=config.repeats,
        steps=config.steps,
        workloads_dir=_folder(config, "workloads_dir"),
        results_dir=_folder(config, "results_dir"),
        run_timeout=config.run_timeout,
        inject_slowdown_b=config.inject_slowdown_b,
        inject_work_b=config.inject_work_b,
        skip_same_versions=config.skip_same_versions,
        alpha=config.alpha,
        threshold=config.threshold,
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
    results_dirs: Sequence[str | Path] | JudgeConfig,
    *,
    against: Sequence[str | Path] | None = None,
    baselines_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> SuiteReport:
    """The runs of ``results_dirs`` judged against the stored baselines of ``baselines_dir`` (or against the runs of the
    results dirs ``against``), or as a :class:`~harness.configs.JudgeConfig` says; the report and its plots are written
    to ``out_dir`` (default: the first results dir)."""
    if isinstance(results_dirs, JudgeConfig):
        config = results_dirs
    else:
        if not results_dirs:
            raise UsageError("api.judge: results_dirs is empty; pass the results dir(s) to judge")
        config = _short(
            JudgeConfig,
            results_dirs=tuple(map(str, results_dirs)),
            against=tuple(map(str, against or ())),
            baselines_dir=baselines_dir,
            out_dir=out_dir,
        )
    if config.markdown:
        raise UsageError("api.judge writes report.md into out_dir; markdown is for api.compare")
    return _compare.write_report(
        list(config.results_dirs),
        baseline=list(config.against) or None,
        baselines_dir=_folder(config, "baselines_dir"),
        out_dir=config.out_dir,
        alpha=config.alpha,
        threshold=config.threshold,
        allow_gpu_mismatch=config.allow_gpu_mismatch,
        out=out,
    )


@_checked
def compare(config: JudgeConfig, *, out: Callable[[str], None] = print) -> SuiteReport:
    """The runs of ``config.results_dirs`` (B) judged against ``config.against`` (A: results dirs or a baseline file),
    printed; the report is written to ``config.out_dir`` and ``config.markdown`` where they are set."""
    if not config.against:
        raise UsageError("api.compare: against is empty; pass the results dir(s) or the baseline file to compare with")
    return _compare.compare(
        list(config.against),
        list(config.results_dirs),
        alpha=config.alpha,
        threshold=config.threshold,
        markdown=config.markdown,
        allow_gpu_mismatch=config.allow_gpu_mismatch,
        out_dir=config.out_dir,
        out=out,
    )


@_checked
def update_baseline(config: BaselineConfig, *, out: Callable[[str], None] = print) -> int:
    """The runs of ``config.results_dirs`` on ``config.gpu`` stored as its baseline in ``config.baselines_dir``
    (:class:`~harness.configs.BaselineConfig`); each refusal is raised before anything is written. Returns 0."""
    gpu = env.detect_gpu() if config.gpu.lower() == "auto" else config.gpu.lower()  # runs made elsewhere: any label
    return _compare.baseline_update(
        list(config.results_dirs),
        gpu=gpu,
        workload=list(config.workloads) or None,
        baselines_dir=_folder(config, "baselines_dir"),
        min_repeats=config.min_repeats,
        note=config.note,
        out=out,
    )


@_checked
def recover(results_dir: str | Path, *, out: Callable[[str], None] = print) -> ComparisonResult:
    """The interleaved comparison of ``results_dir`` that stopped before its report (the machine lost, a kill -9, a
    job's timeout), judged from the blocks and launches it kept; its report is written there, never over the run's
    own."""
    from harness.sidebyside.run import recover as judge_kept

    return judge_kept(results_dir, out=out)


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
    workload: str | AdviseConfig,
    *,
    gpu: str = "auto",
    budget_minutes: float = 10.0,
    workloads_dir: str | Path | None = None,
    results_dir: str | Path | None = None,
    out: Callable[[str], None] = print,
) -> Advice:
    """Which split of ``workload``'s effective batch is fastest on this machine, within ``budget_minutes`` of device
    time; or as ``workload``, an :class:`~harness.configs.AdviseConfig`, says."""
    from harness.workflows.advise import advise as run

    config = (
        workload
        if isinstance(workload, AdviseConfig)
        else _short(
            AdviseConfig,
            workload=workload,
            gpu=gpu,
            budget_minutes=budget_minutes,
            workloads_dir=workloads_dir,
            results_dir=results_dir,
        )
    )
    return run(
        gpu=here(config.gpu),
        workload=config.workload,
        effective=config.effective,
        budget_minutes=config.budget_minutes,
        probe_steps=config.probe_steps,
        block_seconds=config.block_seconds,
        pairs=config.pairs,
        launches=config.launches,
        alpha=config.alpha,
        threshold=config.threshold,
        census=config.census,
        screen=config.screen,
        cpus=list(config.cpus) or None,
        memory_limit_micro=config.memory_limit_micro,
        workloads_dir=_folder(config, "workloads_dir"),
        results_dir=_folder(config, "results_dir"),
        run_timeout=config.run_timeout,
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
