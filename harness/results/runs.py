"""What fresh-process runs return: the run records they wrote (timed runs, or census runs with the work per step)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from statistics import median
from typing import Any

from harness.results.census import Census


@dataclass(frozen=True)
class Runs:
    """The runs of one workload in one session: ``records`` as written to ``runs.jsonl``, in run order; ``exit_code`` 3
    when a run failed, else 0."""

    session_id: str
    workload: str
    records: tuple[Mapping[str, Any], ...]
    exit_code: int

    def runs_of(self, decomposition: str) -> list[Mapping[str, Any]]:
        return [r for r in self.records if r.get("decomposition_id") == decomposition]

    def latest(self, decomposition: str) -> Mapping[str, Any] | None:
        """The last run of ``decomposition`` (whatever its status), or None when none was made."""
        runs = self.runs_of(decomposition)
        return runs[-1] if runs else None

    def step_ms(self, decomposition: str) -> float | None:
        """The median over the finished runs of ``decomposition`` of their median step time (ms), or None."""
        steps = [
            r["step_time_median_ms"]
            for r in self.runs_of(decomposition)
            if r.get("status") == "ok" and r.get("step_time_median_ms")
        ]
        return median(steps) if steps else None

    def census(self, decomposition: str) -> Census | None:
        """The census of the last finished census run of ``decomposition`` that fitted its window, or None."""
        found = [
            r["census"]
            for r in self.runs_of(decomposition)
            if r.get("status") == "ok" and (r.get("census") or {}).get("fits")
        ]
        return Census.from_json(found[-1]) if found else None

    @property
    def failed(self) -> bool:
        return any(r.get("status") != "ok" for r in self.records)
