"""The settings of the API's calls that make fresh-process runs, advise or judge recorded runs: one frozen dataclass per
call, validated where it is made (a bad value is one :class:`~harness.errors.BadInput` line naming the field), so that a
command and a script hand :mod:`harness.api` the same object.

* :class:`CensusConfig`: census runs of one workload (``api.census``)
* :class:`ABConfig`: one workload under two Python environments, fresh-process runs interleaved (``api.ab``)
* :class:`AdviseConfig`: the fastest split of the effective batch here (``api.advise``)
* :class:`JudgeConfig`: recorded runs judged against the stored baselines or other runs (``api.judge``,
  ``api.compare``)
* :class:`BaselineConfig`: recorded runs stored as a GPU's baseline (``api.update_baseline``)

The interleaved comparison's settings are :class:`~harness.sidebyside.config.ComparisonConfig`, the bisection's
:class:`~harness.bisect.config.BisectConfig`. Folders left at their defaults are the project's
(:func:`~harness.spec_folder.in_project`); ``gpu`` ``auto`` is the detected device.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from harness.errors import BadInput
from harness.judging.baseline import MIN_REPEATS
from harness.judging.thresholds import ALPHA, INTERLEAVED
from harness.measuring.runner import RUN_TIMEOUT_S


def _names(value: object, field: str) -> tuple[str, ...]:
    """``value`` (a list or tuple of names or paths) as a tuple of strings; a lone string is refused, as it would be
    read letter by letter."""
    if value is None:
        return ()
    if isinstance(value, (str, Path)) or not isinstance(value, (list, tuple)):
        raise BadInput(f"{field} must be a list of names or paths, got {value!r}")
    return tuple(str(v) for v in value)


def _whole(field: str, value: object, low: int, allow_none: bool = False) -> Iterator[str]:
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        yield f"{field} must be a whole number >= {low}" + (" or None" if allow_none else "") + f", got {value!r}"


def _positive(field: str, value: object) -> Iterator[str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        yield f"{field} must be a positive number, got {value!r}"


def _judging(alpha: float | None, threshold: float | None) -> Iterator[str]:
    """The rules of ``alpha`` and ``threshold`` (None: the baseline's, or the comparison's default)."""
    if alpha is not None and not 0 < alpha < 0.5:
        yield f"alpha must be in (0, 0.5), got {alpha!r}"
    if threshold is not None and not 0 <= threshold < 1:
        yield f"threshold must be a fraction in [0, 1), got {threshold!r}"


def _folders(config: Any) -> None:
    """A config's folders as strings (a ``Path`` given is kept as its text)."""
    for f in fields(config):
        value = getattr(config, f.name)
        if f.name.endswith("_dir") and isinstance(value, Path):
            object.__setattr__(config, f.name, str(value))


def _refuse(problems: Iterator[str]) -> None:
    for problem in problems:
        raise BadInput(problem)


@dataclass(frozen=True)
class CensusConfig:
    """Census runs of ``workload``: ``repeats`` of each of ``decompositions`` (empty: all of its splits) under the
    interpreter ``python`` (None: this one), ``steps`` overriding its max_steps; ``inject_work`` (test-only) adds N
    casts per LoRA forward; ``run_timeout``: seconds per run."""

    workload: str
    decompositions: tuple[str, ...] = ()
    python: str | None = None
    gpu: str = "auto"
    repeats: int = 1
    steps: int | None = None
    inject_work: int = 0
    run_timeout: float = RUN_TIMEOUT_S
    workloads_dir: str = "workloads"
    results_dir: str = "perf-results/census"

    def __post_init__(self) -> None:
        object.__setattr__(self, "decompositions", _names(self.decompositions, "decompositions"))
        _folders(self)
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 1:
            # else it would end with no run, as if it had passed
            raise BadInput(f"--repeats must be at least 1 (census runs per decomposition), got {self.repeats!r}")
        _refuse(_steps_and_timeout(self.steps, self.run_timeout))
        _refuse(_whole("inject_work", self.inject_work, 0))


def _steps_and_timeout(steps: int | None, run_timeout: float) -> Iterator[str]:
    yield from _whole("steps", steps, 1, allow_none=True)
    yield from _positive("run_timeout", run_timeout)


@dataclass(frozen=True)
class ABConfig:
    """``workload`` under two Python environments on this machine, ``python_a`` (None: this one) and ``python_b``:
    ``repeats`` fresh-process runs of each of ``decompositions`` (empty: all) per side, in alternating order, then B
    judged against A with ``alpha`` and ``threshold`` (None: the suite's defaults). ``skip_same_versions``: no runs when
    both sides have the same versions. Test-only: ``inject_slowdown_b`` (B sleeps this fraction of each step),
    ``inject_work_b`` (B casts N extra times per LoRA forward)."""

    workload: str
    python_b: str
    python_a: str | None = None
    decompositions: tuple[str, ...] = ()
    gpu: str = "auto"
    repeats: int = 5
    steps: int | None = None
    alpha: float | None = None
    threshold: float | None = None
    skip_same_versions: bool = False
    inject_slowdown_b: float = 0.0
    inject_work_b: int = 0
    run_timeout: float = RUN_TIMEOUT_S
    workloads_dir: str = "workloads"
    results_dir: str = "perf-results/ab"

    def __post_init__(self) -> None:
        object.__setattr__(self, "decompositions", _names(self.decompositions, "decompositions"))
        _folders(self)
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or self.repeats < 2:
            raise BadInput(f"--repeats must be at least 2 (the test needs two runs per side), got {self.repeats!r}")
        _refuse(_steps_and_timeout(self.steps, self.run_timeout))
        _refuse(_judging(self.alpha, self.threshold))
        _refuse(_whole("inject_work_b", self.inject_work_b, 0))
        if not 0 <= self.inject_slowdown_b < 10:
            raise BadInput(f"inject_slowdown_b must be a fraction in [0, 10), got {self.inject_slowdown_b!r}")


@dataclass(frozen=True)
class AdviseConfig:
    """Which split of ``workload``'s effective batch (``effective``; None: the workload's) is fastest here, within
    ``budget_minutes`` of device time: fit probes of ``probe_steps`` timed steps (with a census window unless not
    ``census``), then interleaved comparisons of blocks of ``block_seconds``, at most ``pairs`` pairs over ``launches``
    launches each, judged with ``alpha`` and ``threshold``; a split whose probe step is over ``screen`` times the
    fastest's is called slower without one. ``cpus``: the CPUs the resident workers are pinned to (empty: not pinned).
    Test-only: ``memory_limit_micro`` (splits with a larger micro-batch run out of memory at their first step)."""

    workload: str
    gpu: str = "auto"
    effective: int | None = None
    budget_minutes: float = 10.0
    probe_steps: int = 3
    block_seconds: float = 0.8
    pairs: int = 200
    launches: int = 2
    alpha: float = ALPHA
    threshold: float = INTERLEAVED
    census: bool = True
    screen: float = 1.5
    cpus: tuple[int, ...] = ()
    memory_limit_micro: int | None = None
    run_timeout: float = RUN_TIMEOUT_S
    workloads_dir: str = "workloads"
    results_dir: str = "perf-results/advise"

    def __post_init__(self) -> None:
        from harness.workflows.advise import check_options

        object.__setattr__(self, "cpus", tuple(self.cpus or ()))
        _folders(self)
        check_options(self.budget_minutes, self.screen)
        for name, low in (("probe_steps", 1), ("pairs", 2), ("launches", 1)):
            _refuse(_whole(name, getattr(self, name), low))
        _refuse(_whole("effective", self.effective, 1, allow_none=True))
        _refuse(_whole("memory_limit_micro", self.memory_limit_micro, 1, allow_none=True))
        _refuse(_positive("block_seconds", self.block_seconds))
        _refuse(_positive("run_timeout", self.run_timeout))
        _refuse(_judging(self.alpha, self.threshold))
        if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in self.cpus):
            raise BadInput(f"cpus must be CPU numbers >= 0, got {self.cpus!r}")


@dataclass(frozen=True)
class JudgeConfig:
    """The runs of ``results_dirs`` judged against ``against`` (results dirs, or one baseline file such as
    baselines/h200/W.json) or, where it is empty, against the stored baselines of ``baselines_dir``, with ``alpha`` and
    ``threshold`` (None: the baseline's); ``allow_gpu_mismatch`` judges runs of another GPU than the baseline's.
    ``out_dir``: where the report goes; ``markdown``: a file the Markdown report is also written to."""

    results_dirs: tuple[str, ...]
    against: tuple[str, ...] = ()
    baselines_dir: str = "baselines"
    out_dir: str | None = None
    alpha: float | None = None
    threshold: float | None = None
    allow_gpu_mismatch: bool = False
    markdown: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "results_dirs", _names(self.results_dirs, "results_dirs"))
        object.__setattr__(self, "against", _names(self.against, "against"))
        _folders(self)
        if not self.results_dirs:
            raise BadInput("results_dirs is empty; pass the results dir(s) to judge")
        _refuse(_judging(self.alpha, self.threshold))


@dataclass(frozen=True)
class BaselineConfig:
    """The runs of ``results_dirs`` made on ``gpu`` (``auto``: this machine's) stored as its baseline in
    ``baselines_dir``: of ``workloads`` (empty: every workload they hold), each decomposition from at least
    ``min_repeats`` runs, with ``note`` (why it was recorded)."""

    results_dirs: tuple[str, ...]
    gpu: str
    workloads: tuple[str, ...] = ()
    baselines_dir: str = "baselines"
    min_repeats: int = MIN_REPEATS
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "results_dirs", _names(self.results_dirs, "results_dirs"))
        object.__setattr__(self, "workloads", _names(self.workloads, "workloads"))
        _folders(self)
        if not self.results_dirs:
            raise BadInput("results_dirs is empty; pass the results dir(s) whose runs become the baseline")
        if not isinstance(self.gpu, str) or not self.gpu:
            raise BadInput(f"gpu must name the GPU the runs were made on (or auto), got {self.gpu!r}")
        _refuse(_whole("min_repeats", self.min_repeats, 1))
