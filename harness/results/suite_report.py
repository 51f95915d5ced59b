"""A suite report: the verdicts of a session of runs (or of results dirs compared), the table's rows and the versions,
as a pytest session, ``compare``, ``report``, ``ab`` and ``confirm`` write it to ``report.json``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
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
