"""What a bisection returns: which release, commit or package between a good and a bad end changed the work or the time
of a case, each change with its boundary and its counts, every step the search took, and what it spent.

:class:`Bisection` is built by :func:`harness.bisect.search.bisect` as the search decides, written as ``report.json``
by :meth:`Bisection.to_json` and read back by :meth:`Bisection.from_json` (the one place that reads its keys)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.stored import Stored
from harness.results.verdict import Verdict

OUTCOMES = ("changed", "no_change", "inconclusive", "ends_failed")
DEVICE_STEPS = ("census", "interleave")  # the kinds of step that hold the device (installs run on the host)


@dataclass(frozen=True)
class PackageRange:
    """A package that moved between the ends: its version at good and at bad; ``alone``: what its swap alone on
    good's environment gave (``changed``, ``unchanged``, the comparison's outcome, or why it could not be measured),
    None where it was not swapped alone (the only package of the range)."""

    package: str
    good: str
    bad: str
    alone: str | None = None

    def to_json(self) -> dict:
        return {"package": self.package, "good": self.good, "bad": self.bad} | (
            {"alone": self.alone} if self.alone is not None else {}
        )

    @classmethod
    def from_json(cls, d: Mapping) -> PackageRange:
        return cls(str(d["package"]), str(d.get("good", "")), str(d.get("bad", "")), d.get("alone"))


@dataclass(frozen=True)
class Unmeasured:
    """A candidate the search could not measure (not installable, or past the budget), and why."""

    label: str
    reason: str

    def to_json(self) -> dict:
        return {"label": self.label, "reason": self.reason}

    @classmethod
    def from_json(cls, d: Mapping) -> Unmeasured:
        return cls(str(d["label"]), str(d.get("reason", "")))


@dataclass(frozen=True)
class Step:
    """One step of the search as it was taken: ``kind`` (``census``, ``interleave`` or ``install``), the candidate's
    ``label``, its ``wall_s`` (0 when reused or not started), whether its census was ``reused`` from an earlier run,
    its ``outcome`` (``ok``, ``failed: why``, ``skipped: why``, ``uninstallable: why``, or the comparison's outcome),
    the folder it ran in (``dir``) and, for an interleaved comparison that gave one, its ``verdict`` (written as its
    ``message``)."""

    kind: str
    label: str
    wall_s: float
    reused: bool
    outcome: str
    dir: str | None = None
    verdict: Verdict | None = None

    @property
    def ran(self) -> bool:
        """Whether it held the device: a census or a comparison that was started."""
        return self.kind in DEVICE_STEPS and not self.outcome.startswith("skipped")

    def to_json(self) -> dict:
        d = {
            "kind": self.kind,
            "label": self.label,
            "wall_s": self.wall_s,
            "reused": self.reused,
            "outcome": self.outcome,
            "dir": self.dir,
        }
        return d | ({"message": self.verdict.message} if self.verdict is not None else {})

    @classmethod
    def from_json(cls, d: Mapping) -> Step:
        said = d.get("message")
        verdict = Verdict(str(d["outcome"]), said) if isinstance(said, str) and d.get("outcome") else None
        return cls(
            str(d["kind"]),
            str(d["label"]),
            float(d.get("wall_s") or 0.0),
            bool(d.get("reused")),
            str(d["outcome"]),
            d.get("dir"),
            verdict,
        )


@dataclass(frozen=True)
class TimingStep:
    """One interleaved comparison against good on a package's ladder: the candidate, its outcome and the comparison's
    line (None where it gave none)."""

    label: str
    outcome: str
    message: str | None = None

    @property
    def said(self) -> str:
        return self.message or self.outcome

    def to_json(self) -> dict:
        return {"label": self.label, "outcome": self.outcome, "message": self.message}

    @classmethod
    def from_json(cls, d: Mapping) -> TimingStep:
        return cls(str(d["label"]), str(d["outcome"]), d.get("message"))


@dataclass(frozen=True)
class Change:
    """A boundary on one package's ladder where the case changed: ``last_good`` and ``first_bad`` (the candidates
    either side), ``exact`` when no candidate between them was left unmeasured (``skipped``: those, each with why),
    ``ladder``: its candidates, both ends counted; ``kind``: ``census`` (a count or a peak of memory moved) or
    ``timing`` (slower, the counts equal).

    A census change has the ``counts`` that moved there (attributed to it), the peaks of ``memory`` that moved, the
    census ``diff``'s lines and its ``time_line`` (information only), the cost model's ``predicted`` change of the step
    (``{"reason"}`` where it cannot say, None without a model) and the candidates ``measured_inside`` the ladder. A
    timing change has its ``steps`` against good. An inconclusive one (:attr:`Bisection.inconclusive`) says ``at``
    which candidate the comparison decided nothing."""

    package: str
    last_good: str
    first_bad: str
    exact: bool
    ladder: int
    kind: str
    skipped: tuple[Unmeasured, ...] = ()
    counts: tuple[str, ...] = ()
    memory: tuple[str, ...] = ()
    diff: tuple[str, ...] = ()
    time_line: str | None = None
    predicted: Mapping[str, Any] | None = None
    measured_inside: int = 0
    steps: tuple[TimingStep, ...] = ()
    at: str | None = None

    def __post_init__(self) -> None:
        for name in ("skipped", "counts", "memory", "diff", "steps"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.predicted is not None:
            object.__setattr__(self, "predicted", MappingProxyType(dict(self.predicted)))

    @property
    def boundary(self) -> str:
        """``lorafx 1.1 -> lorafx 1.2`` (last good -> first bad)."""
        return f"{self.last_good} -> {self.first_bad}"

    @property
    def predicted_pct(self) -> float | None:
        """The predicted change of the step in percent, None where the cost model gave none."""
        return None if self.predicted is None else self.predicted.get("delta_pct")

    def to_json(self) -> dict:
        d: dict[str, Any] = {
            "package": self.package,
            "last_good": self.last_good,
            "first_bad": self.first_bad,
            "exact": self.exact,
            "skipped": [s.to_json() for s in self.skipped],
            "ladder": self.ladder,
            "kind": self.kind,
        }
        if self.kind == "census":
            d |= {
                "counts": list(self.counts),
                "memory": list(self.memory),
                "diff": list(self.diff),
                "time_line": self.time_line,
                "predicted": dict(self.predicted) if self.predicted is not None else None,
                "measured_inside": self.measured_inside,
            }
        else:
            d["steps"] = [s.to_json() for s in self.steps]
        return d | ({"at": self.at} if self.at is not None else {})

    @classmethod
    def from_json(cls, d: Mapping) -> Change:
        predicted = d.get("predicted")
        return cls(
            str(d["package"]),
            str(d["last_good"]),
            str(d["first_bad"]),
            bool(d.get("exact", True)),
            int(d.get("ladder") or 0),
            str(d.get("kind", "census")),
            skipped=tuple(Unmeasured.from_json(s) for s in d.get("skipped") or []),
            counts=tuple(d.get("counts") or []),
            memory=tuple(d.get("memory") or []),
            diff=tuple(d.get("diff") or []),
            time_line=d.get("time_line"),
            predicted=predicted if isinstance(predicted, Mapping) else None,
            measured_inside=int(d.get("measured_inside") or 0),
            steps=tuple(TimingStep.from_json(s) for s in d.get("steps") or []),
            at=d.get("at"),
        )


@dataclass(frozen=True)
class CensusChange:
    """The census from good to bad: whether a judged count or a peak of memory ``changed``, the diff's ``lines`` and
    its ``time_line`` (the timing change, information only)."""

    changed: bool
    lines: tuple[str, ...] = ()
    time_line: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", tuple(self.lines))

    def to_json(self) -> dict:
        return {"changed": self.changed, "lines": list(self.lines), "time_line": self.time_line}

    @classmethod
    def from_json(cls, d: Mapping) -> CensusChange:
        return cls(bool(d.get("changed")), tuple(d.get("lines") or []), d.get("time_line"))


@dataclass(frozen=True)
class Spent:
    """What the search spent: ``device_s`` (census runs and comparisons started; a reused census costs none),
    ``census_runs`` made and ``census_reused``, comparisons ``interleaved``, the host seconds of installs
    (``install_s``) and the ``environments_built``."""

    device_s: float = 0.0
    census_runs: int = 0
    census_reused: int = 0
    interleaved: int = 0
    install_s: float = 0.0
    environments_built: int = 0

    @classmethod
    def of(cls, steps: tuple[Step, ...] | list[Step], install_s: float, built: int) -> Spent:
        """The spending of ``steps``, with the installs' seconds and the environments built."""
        ran = [s for s in steps if s.ran]
        return cls(
            device_s=round(sum(s.wall_s for s in ran), 1),
            census_runs=sum(1 for s in ran if s.kind == "census" and not s.reused),
            census_reused=sum(1 for s in ran if s.kind == "census" and s.reused),
            interleaved=sum(1 for s in ran if s.kind == "interleave"),
            install_s=round(install_s, 1),
            environments_built=built,
        )

    def to_json(self) -> dict:
        return {
            "device_s": self.device_s,
            "census_runs": self.census_runs,
            "census_reused": self.census_reused,
            "interleaved": self.interleaved,
            "install_s": self.install_s,
            "environments_built": self.environments_built,
        }

    @classmethod
    def from_json(cls, d: Mapping | None) -> Spent:
        d = d or {}
        return cls(
            d.get("device_s", 0.0),
            d.get("census_runs", 0),
            d.get("census_reused", 0),
            d.get("interleaved", 0),
            d.get("install_s", 0.0),
            d.get("environments_built", 0),
        )


@dataclass(frozen=True)
class Bisection(Stored):
    """A bisection of ``case`` (``workload-decomposition``) on ``gpu``: ``mode`` (``releases``, ``commits``,
    ``interpreters``), the ``good`` and ``bad`` ends, the ``packages`` that moved between them (``one_side``: found at
    one end only; ``left_out``: moved but not asked for), whether dependencies moved with a candidate (``move_deps``);
    ``outcome`` (one of :data:`OUTCOMES`) and ``search`` (``census``, ``timing`` or ``none``); the ``census`` from good
    to bad (None where an end could not be measured); the ``changes`` found and the intervals left ``inconclusive``;
    the candidates ``uninstallable``; ``attribution``: each count that moved from good to bad, the boundaries that
    account for it; ``notes``; what it ``spent``, and every step it took (``steps``)."""

    FORMAT = formats.BISECTION
    case: str
    gpu: str
    mode: str
    good: str
    bad: str
    outcome: str
    search: str = "none"
    packages: tuple[PackageRange, ...] = ()
    one_side: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    move_deps: bool = False
    census: CensusChange | None = None
    changes: tuple[Change, ...] = ()
    inconclusive: tuple[Change, ...] = ()
    uninstallable: tuple[Unmeasured, ...] = ()
    notes: tuple[str, ...] = ()
    attribution: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    spent: Spent = field(default_factory=Spent)
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"a bisection ends in one of {', '.join(OUTCOMES)}, not {self.outcome!r}")
        for name in ("packages", "one_side", "left_out", "changes", "inconclusive", "uninstallable", "notes", "steps"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "attribution", MappingProxyType({k: tuple(v) for k, v in self.attribution.items()}))

    @property
    def exit_code(self) -> int:
        """3 when an end could not be measured (nothing was bisected), else 0: a change found is an answer, not a
        failure."""
        return 3 if self.outcome == "ends_failed" else 0

    def content(self) -> dict:
        head = {
            "case": self.case,
            "gpu": self.gpu,
            "mode": self.mode,
            "good": self.good,
            "bad": self.bad,
            "packages": [p.to_json() for p in self.packages],
            "one_side": list(self.one_side),
            "left_out": list(self.left_out),
            "move_deps": self.move_deps,
            "changes": [c.to_json() for c in self.changes],
            "inconclusive": [c.to_json() for c in self.inconclusive],
            "uninstallable": [u.to_json() for u in self.uninstallable],
            "notes": list(self.notes),
            "attribution": {k: list(v) for k, v in self.attribution.items()},
        }
        return (
            head
            | ({"census": self.census.to_json()} if self.census is not None else {})
            | {"search": self.search, "outcome": self.outcome}
            | {"spent": self.spent.to_json(), "steps": [s.to_json() for s in self.steps]}
        )

    @classmethod
    def of(cls, content: dict, path: Path | None = None) -> Bisection:
        d = content
        census = d.get("census")
        return cls(
            case=str(d.get("case", "")),
            gpu=str(d.get("gpu", "")),
            mode=str(d.get("mode", "")),
            good=str(d.get("good", "")),
            bad=str(d.get("bad", "")),
            outcome=str(d.get("outcome", "")),
            search=str(d.get("search") or "none"),
            packages=tuple(PackageRange.from_json(p) for p in d.get("packages") or []),
            one_side=tuple(d.get("one_side") or []),
            left_out=tuple(d.get("left_out") or []),
            move_deps=bool(d.get("move_deps")),
            census=CensusChange.from_json(census) if isinstance(census, Mapping) else None,
            changes=tuple(Change.from_json(c) for c in d.get("changes") or []),
            inconclusive=tuple(Change.from_json(c) for c in d.get("inconclusive") or []),
            uninstallable=tuple(Unmeasured.from_json(u) for u in d.get("uninstallable") or []),
            notes=tuple(d.get("notes") or []),
            attribution={k: tuple(v) for k, v in (d.get("attribution") or {}).items()},
            spent=Spent.from_json(d.get("spent")),
            steps=tuple(Step.from_json(s) for s in d.get("steps") or []),
        )
