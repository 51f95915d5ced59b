"""What an interleaved (side-by-side) comparison returns: its exit code, its verdict and the whole report it wrote."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.results import formats
from harness.results.verdict import Verdict


@dataclass(frozen=True)
class ComparisonResult:
    """One comparison of A against B. ``report``: the report as written to ``results_dir/report.json`` (empty when the
    comparison made none: nothing to compare, or a worker died before a verdict); ``reason``: why there is no
    verdict."""

    exit_code: int
    results_dir: Path
    report: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "report", MappingProxyType(dict(self.report)))

    @property
    def session_id(self) -> str | None:
        return self.report.get("session_id") or (self.report.get("settings") or {}).get("session_id")

    @property
    def verdict(self) -> Verdict | None:
        return Verdict.from_json(self.report.get("verdict"))

    @property
    def prediction(self) -> Mapping | None:
        """The cost model's prediction beside the measured change (``{"reason"}`` when it has none)."""
        return self.report.get("prediction")

    def to_json(self) -> dict:
        """The report as its file holds it, with its format version."""
        return formats.COMPARISON.stamp(self.report)

    @classmethod
    def from_json(
        cls, data: object, results_dir: str | Path, exit_code: int | None = None, where: str = ""
    ) -> ComparisonResult:
        report = formats.COMPARISON.read(data, where)
        verdict = Verdict.from_json(report.get("verdict"))
        code = (
            exit_code if exit_code is not None else 1 if verdict is not None and verdict.outcome == "regression" else 0
        )
        return cls(code, Path(results_dir), report)

    @classmethod
    def read(cls, results_dir: str | Path) -> ComparisonResult:
        """The comparison whose report ``results_dir/report.json`` holds (a stored one, judged again or recovered)."""
        path = Path(results_dir) / "report.json"
        return cls.from_json(json.loads(path.read_text()), results_dir, where=str(path))
