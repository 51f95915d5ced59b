"""The settings of one bisection (:class:`BisectConfig`), and what its two ends (``--good``, ``--bad``) are.

An end is one of:

* an **interpreter** (a path to an executable Python): the environment as it is; the base is good's, and each package
  at another version in bad is tried on it alone;
* a **requirements line**, ``name==version`` (several separated by spaces or commas): those releases on the base
  environment (``--base-python``), from the index or, with ``--wheels DIR``, from that folder alone;
* a **wheel file**: its release, from its folder (or ``--wheels``);
* with ``--checkout REPO``, a **commit** of that git checkout of a pure-Python package, installed by path.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import BadInput
from harness.measuring.runner import RUN_TIMEOUT_S
from harness.sidebyside.config import DEFAULT_THRESHOLD, ComparisonConfig

STEP_BUDGET_MINUTES = 5.0  # device minutes of each interleaved step (start-up included)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")


@dataclass(frozen=True)
class End:
    """One end of the range: ``kind`` is ``python`` (``text`` is the interpreter), ``pins`` (``pins``: name, version;
    ``wheel_dir``: the folder of a wheel file given as the end) or ``commit`` (``text`` is the revision)."""

    kind: str
    text: str
    pins: tuple[tuple[str, str], ...] = ()
    wheel_dir: str | None = None


def parse_end(text: str, flag: str, checkout: str | None) -> End:
    """What ``--good``/``--bad`` names (module docstring); ValueError with one line otherwise."""
    text = text.strip()
    if checkout:
        if not text or text.startswith("-"):
            raise BadInput(f"{flag} {text!r}: with --checkout, name a commit of {checkout} (a hash, a tag or a branch)")
        return End("commit", text)
    if text.endswith(".whl"):
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        if not os.path.isfile(text):
            raise BadInput(f"{flag} {text}: no such wheel file")
        try:
            name, version = parse_wheel_filename(os.path.basename(text))[:2]
        except InvalidWheelFilename:
            raise BadInput(f"{flag} {text}: not a wheel's file name (name-version-tags.whl)") from None
        return End("pins", text, ((str(name), str(version)),), str(Path(text).resolve().parent))
    if os.sep in text or os.path.isfile(text):
        if not (os.path.isfile(text) and os.access(text, os.X_OK)):
            raise BadInput(
                f"{flag} {text}: not an executable Python; pass an interpreter such as .tox/latest/bin/python, "
                "or name==version"
            )
        return End("python", text)
    pins = [p for p in re.split(r"[\s,]+", text) if p]
    bad = [p for p in pins if not _PIN.match(p)]
    if not pins or bad:
        raise BadInput(
            f"{flag} {text!r}: expected an interpreter, a wheel file, or releases as name==version "
            "(e.g. transformers==5.17.0)"
        )
    return End("pins", text, tuple((m.group(1), m.group(2)) for m in map(_PIN.match, pins)))


@dataclass(frozen=True)
class BisectConfig:
    """Every setting of a bisection.

    The case: ``workload``, ``decomposition``, ``gpu``, ``steps`` (a census run's max_steps). The range: ``good``,
    ``bad`` (:func:`parse_end`), the base environment ``python`` (default: this interpreter; an interpreter end is its
    own), ``checkout`` (and ``package``, its distribution name when pyproject.toml or setup.py do not say it), where
    releases come from: ``wheels`` (a folder; pip installs from it alone), ``index_url``, ``no_index``; ``move_deps``: a
    release may bring its dependencies at other versions than the base's (default: it is uninstallable); ``packages``:
    with interpreter ends, only these of the packages that moved are tried (the others are named in the report). The
    steps: census runs; where the counts are equal at both ends, interleaved comparisons of ``step_budget_minutes`` each
    (``alpha``, ``threshold``, ``sets``: the comparison's knobs) unless ``census_only``; ``budget_minutes``: no step is
    started that would end past this many device minutes of the whole bisection (the search narrows around it). Where
    things go: ``results_dir``, ``env_cache``.
    """

    workload: str
    decomposition: str
    good: str
    bad: str
    python: str | None = None
    checkout: str | None = None
    package: str | None = None
    wheels: str | None = None
    index_url: str | None = None
    no_index: bool = False
    move_deps: bool = False
    packages: tuple[str, ...] = ()
    gpu: str = "cpu"
    steps: int | None = None
    census_only: bool = False
    step_budget_minutes: float = STEP_BUDGET_MINUTES
    budget_minutes: float | None = None
    alpha: float | None = None
    threshold: float = DEFAULT_THRESHOLD
    sets: dict = field(default_factory=dict)
    workloads_dir: str = "workloads"
    results_dir: str = "perf-results/bisect"
    env_cache: str | None = None
    run_timeout: float = RUN_TIMEOUT_S

    def __post_init__(self):
        good, bad = self.ends()
        if good.kind != bad.kind:
            raise BadInput(f"--good is {_kind(good)} but --bad is {_kind(bad)}: give both ends the same way")
        if good.text == bad.text:
            raise BadInput(f"--good and --bad are both {good.text}: nothing lies between them")
        if good.kind == "pins" and {canonical(n) for n, _ in good.pins} != {canonical(n) for n, _ in bad.pins}:
            raise BadInput(
                f"--good {good.text!r} and --bad {bad.text!r} name other packages: name the same packages at both ends"
            )
        if (
            self.checkout
            and not os.path.isdir(os.path.join(self.checkout, ".git"))
            and not os.path.isfile(os.path.join(self.checkout, ".git"))
        ):
            raise BadInput(f"--checkout {self.checkout}: not a git checkout (no .git); pass the folder of a clone")
        if self.wheels and not os.path.isdir(self.wheels):
            raise BadInput(
                f"--wheels {self.wheels}: no such folder; pass the folder the wheels were downloaded to "
                "(pip download -d)"
            )
        if self.python and not (os.path.isfile(self.python) and os.access(self.python, os.X_OK)):
            raise BadInput(f"--base-python {self.python}: not an executable Python; pass e.g. .venv/bin/python")
        if self.packages and good.kind != "python":
            raise BadInput(
                "--packages chooses among the packages that differ between two interpreters; with releases or commits, "
                "name them in --good and --bad"
            )
        if self.python and good.kind == "python":
            raise BadInput(
                "--base-python names the base environment of releases or commits; with interpreters as ends, good's is "
                "the base"
            )
        if not self.step_budget_minutes > 0:
            raise BadInput(f"--step-budget-minutes must be positive, got {self.step_budget_minutes}")
        if self.budget_minutes is not None and not self.budget_minutes > 0:
            raise BadInput(f"--total-budget-minutes must be positive, got {self.budget_minutes}")
        self.comparison("a", "b")  # the comparison's knobs are checked now, before any run

    def ends(self) -> tuple[End, End]:
        return parse_end(self.good, "--good", self.checkout), parse_end(self.bad, "--bad", self.checkout)

    @property
    def wheel_dir(self) -> str | None:
        """Where releases are installed from: ``wheels``, else the folder of a wheel file given as an end."""
        return self.wheels or self.ends()[0].wheel_dir or self.ends()[1].wheel_dir

    def comparison(self, python_a: str, python_b: str, results_dir: str | None = None) -> ComparisonConfig:
        """The interleaved comparison of one timing step: B's candidate against A's (good) within the step's budget."""
        return ComparisonConfig(
            workload=self.workload,
            decomposition=self.decomposition,
            python_a=python_a,
            python_b=python_b,
            gpu=self.gpu,
            budget_minutes=self.step_budget_minutes,
            alpha=self.alpha,
            threshold=self.threshold,
            workloads_dir=self.workloads_dir,
            results_dir=results_dir or self.results_dir,
            run_timeout=self.run_timeout,
            **self.sets,
        )


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _kind(end: End) -> str:
    return {"python": "an interpreter", "pins": "releases", "commit": "a commit"}[end.kind]
