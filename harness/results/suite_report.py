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
from harness.results.verdict import FAILING


@dataclass(frozen=True)
class SuiteReport(Stored):
    """``data``: the report as written; ``exit_code``: what its command exits with (1 when a verdict fails)."""

    FORMAT = formats.SUITE_REPORT
    data: Mapping[str, Any]
    exit_code: int | None = None
    path: Path | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "data", MappingProxyType(dict(self.data)))
        if self.exit_code is None:
            object.__setattr__(self, "exit_code", 1 if self.failing else 0)

    @property
    def verdicts(self) -> list[Mapping[str, Any]]:
        return list(self.data.get("verdicts") or [])

    @property
    def failing(self) -> list[Mapping[str, Any]]:
        return [v for v in self.verdicts if v.get("outcome") in FAILING]

    def verdict_of(self, kind: str, case: str) -> Mapping[str, Any] | None:
        return next((v for v in self.verdicts if v.get("kind") == kind and v.get("case") == case), None)

    @classmethod
    def read(cls, path: str | Path) -> SuiteReport:
        found = super().read(path)
        return cls(found.data, path=Path(path))
