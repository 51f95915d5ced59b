"""What an interleaved (side-by-side) comparison returns: its exit code, its verdict, the cost model's prediction and
the rest of the report it wrote."""

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
    """One comparison of A against B, as ``results_dir/report.json`` holds it. ``verdict``: the one verdict the
    comparison decided (None when it made none: nothing to compare, or a worker died before a verdict; ``reason``
    says why); ``prediction``: the cost model's prediction beside the measured change (``{"reason"}`` when it has
    none); ``sections``: every other key of the report (``settings``, ``blocks``, ``launches``, ``analysis``, ...),
    empty when the comparison wrote no report."""

    exit_code: int
    results_dir: Path
    verdict: Verdict | None = None
    prediction: Mapping[str, Any] | None = None
    sections: Mapping[str, Any] = field(default_factory=dict)
    reason: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sections", MappingProxyType(dict(self.sections)))

    @property
    def session_id(self) -> str | None:
        settings = self.sections.get("settings")
        inside = settings.get("session_id") if isinstance(settings, Mapping) else None
        return self.sections.get("session_id") or inside

    def to_json(self) -> dict:
        """The report as its file holds it, with its format version."""
        out = dict(self.sections)
        if self.verdict is not None:
            out["verdict"] = self.verdict.to_json()
        if self.prediction is not None:
            out["prediction"] = dict(self.prediction)
        return formats.COMPARISON.stamp(out)

    @classmethod
    def from_json(
        cls, data: object, results_dir: str | Path, exit_code: int | None = None, where: str = ""
    ) -> ComparisonResult:
        """The comparison whose report is ``data``; its exit code, unless given, 1 on a regression, else 0."""
        report = formats.COMPARISON.read(data, where)
        report.pop(formats.KEY)
        verdict = Verdict.from_json(report.get("verdict"))
        if verdict is not None:
            del report["verdict"]  # else kept as written (null, or an object without an outcome)
        prediction = report.pop("prediction") if isinstance(report.get("prediction"), Mapping) else None
        if exit_code is None:
            exit_code = 1 if verdict is not None and verdict.outcome == "regression" else 0
        return cls(exit_code, Path(results_dir), verdict, prediction, report)

    @classmethod
    def read(cls, results_dir: str | Path) -> ComparisonResult:
        """The comparison whose report ``results_dir/report.json`` holds (a stored one, judged again or recovered)."""
        path = Path(results_dir) / "report.json"
        return cls.from_json(json.loads(path.read_text()), results_dir, where=str(path))
