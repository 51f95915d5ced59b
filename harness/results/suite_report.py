"""A suite report: the verdicts of a session of runs (or of results dirs compared), the table's rows and the versions,
as a pytest session, ``compare``, ``report``, ``ab`` and ``confirm`` write it to ``report.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.report_row import ReportRow
from harness.results.run import plain
from harness.results.stored import Stored
from harness.results.verdict import Verdict


@dataclass(frozen=True)
class SuiteReport(Stored):
    """``verdicts``: one per check and case, in the report's order; ``gpu`` and ``session_id``: what it measured;
    ``sections``: every other key of ``report.json`` (``rows``, ``env``, ``notes``, ``confirm``, ...); ``exit_code``:
    what its command exits with (1 when a verdict fails, the default); ``path``: the file it was read from."""

    FORMAT = formats.SUITE_REPORT
    verdicts: tuple[Verdict, ...] = ()
    gpu: str | None = None
    session_id: str | None = None
    sections: Mapping[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "verdicts", tuple(self.verdicts))
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))
        if self.exit_code is None:
            object.__setattr__(self, "exit_code", 1 if self.failing else 0)

    @property
    def failing(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.failed]

    def verdict_of(self, kind: str, case: str) -> Verdict | None:
        return next((v for v in self.verdicts if v.kind == kind and v.case == case), None)

    def content(self) -> dict:
        head = {k: v for k, v in (("gpu", self.gpu), ("session_id", self.session_id)) if v is not None}
        return {**head, **self.sections, "verdicts": [v.to_json() for v in self.verdicts]}

    @classmethod
    def of(cls, content: dict, path: Path | None = None, exit_code: int | None = None) -> SuiteReport:
        """The report whose ``report.json`` holds ``content``; its exit code, unless given, 1 when a verdict fails."""
        rest = {k: v for k, v in content.items() if k != formats.KEY}
        made = [Verdict.from_json(v) for v in rest.pop("verdicts", None) or []]
        head = {k: rest.pop(k) for k in ("gpu", "session_id") if rest.get(k) is not None}
        return cls(tuple(v for v in made if v is not None), **head, sections=rest, exit_code=exit_code, path=path)


@dataclass(frozen=True)
class ReportEnv:
    """The machine a suite report's runs ran on, as its first run with an environment found it: ``gpu`` (the full
    name; None on a CPU), ``gpu_count``, ``driver``, ``cuda``, ``cpu``, ``hostname``, ``attn_implementation`` and
    ``gpu_clocks``."""

    gpu: str | None = None
    gpu_count: int | None = None
    driver: str | None = None
    cuda: str | None = None
    cpu: str | None = None
    hostname: str | None = None
    attn_implementation: str | None = None
    gpu_clocks: Any = None

    def to_json(self) -> dict:
        return {f.name: plain(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping | None) -> ReportEnv:
        """The machine of a run's ``env`` (or a report's), its other keys left out."""
        return cls(**{f.name: (data or {}).get(f.name) for f in fields(cls)})


@dataclass(frozen=True)
class ReportData(Stored):
    """Everything a suite report shows, as the reporting builds it (:func:`harness.reporting.report.build`) and its
    ``report.json`` holds it: ``gpu``, ``session_id``, the ``command`` that made it and its ``inject_slowdown``; one
    :class:`ReportRow` per case; ``incomplete`` (why planned runs were not made), ``notes`` (records the reader
    skipped) and ``data_unread`` (the workloads whose text does not reach the model); the ``verdicts`` in the report's
    order; ``recorded``: the baselines a session of --update-baselines wrote (None for another session); the machine
    (``env``), its package ``versions`` and each baseline's (``baseline_versions``, by workload); ``extra``: every other
    key of a ``report.json`` read (``confirm``, ...), written after them. :class:`SuiteReport` reads any suite report,
    its keys as written."""

    FORMAT = formats.SUITE_REPORT
    gpu: str
    session_id: str = ""
    command: str = ""
    inject_slowdown: float = 0.0
    rows: tuple[ReportRow, ...] = ()
    incomplete: str | None = None
    notes: tuple[str, ...] = ()
    data_unread: tuple[Mapping[str, Any], ...] = ()
    verdicts: tuple[Verdict, ...] = ()
    recorded: tuple[str, ...] | None = None
    env: ReportEnv = field(default_factory=ReportEnv)
    versions: Mapping[str, Any] = field(default_factory=dict)
    baseline_versions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows", tuple(self.rows))
        object.__setattr__(self, "notes", tuple(self.notes))
        object.__setattr__(self, "data_unread", tuple(self.data_unread))
        object.__setattr__(self, "verdicts", tuple(self.verdicts))
        object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))
        if self.recorded is not None:
            object.__setattr__(self, "recorded", tuple(self.recorded))

    def content(self) -> dict:
        """``report.json`` without its format version: every field in order, each typed part as its JSON."""
        out: dict[str, Any] = {f.name: plain(getattr(self, f.name)) for f in fields(self) if f.name != "extra"}
        out["rows"] = [r.to_json() for r in self.rows]
        out["verdicts"] = [v.to_json() for v in self.verdicts]
        out["env"] = self.env.to_json()
        return {**out, **plain(self.extra)}

    @classmethod
    def of(cls, content: dict, path: Path | None = None) -> ReportData:
        """The report whose ``report.json`` holds ``content`` (of the current format); a key an older one lacks is
        empty."""
        names = {f.name for f in fields(cls)} - {"extra"}
        given: dict[str, Any] = {k: v for k, v in content.items() if k in names and v is not None}
        given["extra"] = {k: v for k, v in content.items() if k not in names and k != formats.KEY}
        given["rows"] = [ReportRow.from_json(r) for r in given.get("rows") or []]
        given["verdicts"] = [v for v in map(Verdict.from_json, given.get("verdicts") or []) if v is not None]
        given["env"] = ReportEnv.from_json(given.get("env"))
        return cls(given.pop("gpu", ""), **given)
