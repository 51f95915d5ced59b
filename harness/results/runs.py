"""What fresh-process runs return: the run records they wrote (timed runs, or census runs with the work per step)."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from harness.results.census import Census
from harness.results.run import Run


@dataclass(frozen=True)
class Runs:
    """The runs of one workload in one session: ``records``, one :class:`Run` a line of ``runs.jsonl``, in run order;
    ``exit_code`` 3 when a run failed, else 0."""

    session_id: str
    workload: str
    records: tuple[Run, ...]
    exit_code: int

    def runs_of(self, decomposition: str) -> list[Run]:
        return [r for r in self.records if r.decomposition_id == decomposition]

    def latest(self, decomposition: str) -> Run | None:
        """The last run of ``decomposition`` (whatever its status), or None when none was made."""
        runs = self.runs_of(decomposition)
        return runs[-1] if runs else None

    def step_ms(self, decomposition: str) -> float | None:
        """The median over the finished runs of ``decomposition`` of their median step time (ms), or None."""
        steps = [r.step_time_median_ms for r in self.runs_of(decomposition) if r.ok and r.step_time_median_ms]
        return median(steps) if steps else None

    def census(self, decomposition: str) -> Census | None:
        """The census of the last finished census run of ``decomposition`` that fitted its window, or None."""
        found = [r.census for r in self.runs_of(decomposition) if r.ok and r.census is not None and r.census.fits]
        return found[-1] if found else None

    @property
    def failed(self) -> bool:
        return any(not r.ok for r in self.records)
