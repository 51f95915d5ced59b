"""The history data as types (:func:`harness.reporting.history.build` makes it): a :class:`History` of
:class:`Series`, each a timeline of :class:`Point` sessions, its :class:`VersionStep` version changes and its
:class:`SeriesChange` change points. ``to_json`` writes each as ``history.json`` holds it; the dashboard's compact data
(:mod:`harness.reporting.dashboard_data`) is made from the types."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from harness.judging.changepoints import ChangePoint

SPEC = "workload spec"  # the workload hash, tracked like a version


def finite(x: float | None) -> float | None:
    """``x``, or None where it is not a finite number (JSON holds none)."""
    return x if x is not None and math.isfinite(x) else None


@dataclass(frozen=True)
class VersionDiff:
    """One tracked library (or the workload spec, with the spec's ``fields`` that changed) that differs between two
    sessions."""

    name: str
    old: str
    new: str
    fields: tuple[str, ...] | None = None

    def text(self, short: bool = False) -> str:
        """``torch 2.10→2.11``; the spec by its hashes' first 8 characters and (unless ``short``) its changed fields."""
        if self.name == SPEC:
            what = "; ".join(self.fields or [])
            return f"spec {self.old[:8]}→{self.new[:8]}" + (f" ({what})" if what and not short else "")
        return f"{self.name} {self.old}→{self.new}"

    def to_json(self) -> dict:
        out: dict[str, Any] = {"name": self.name, "old": self.old, "new": self.new}
        if self.fields is not None:
            out["fields"] = list(self.fields)
        return out


@dataclass(frozen=True)
class Point:
    """A session of a series, at position ``x`` of its timeline: a ``timing`` point (the median of its timed runs'
    median step times, their range, peak memory, the baseline verdict) or a ``census`` point (the median counts per
    optimizer step of its census runs). ``spec`` (the workload spec) is read for the version changes, not written."""

    session_id: str
    kind: str
    started_at: str
    dirs: tuple[str, ...]
    machines: tuple[str, ...]
    versions: Mapping[str, str]
    commit: str
    runs: int
    spec: Mapping[str, Any] | None = None
    median_ms: float | None = None
    min_ms: float | None = None
    max_ms: float | None = None
    failed: int | None = None
    peak_bytes: float | None = None
    verdict: str | None = None
    ops: float | None = None
    kernels: float | None = None
    python_calls: float | None = None
    kernel_ms: float | None = None
    x: int = 0

    @property
    def timing(self) -> bool:
        return self.kind == "timing"

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "session_id": self.session_id,
            "kind": self.kind,
            "started_at": self.started_at,
            "dirs": list(self.dirs),
            "machines": list(self.machines),
            "versions": dict(self.versions),
            "commit": self.commit,
        }
        if self.timing:
            out.update(
                median_ms=self.median_ms,
                min_ms=self.min_ms,
                max_ms=self.max_ms,
                runs=self.runs,
                failed=self.failed,
                peak_bytes=self.peak_bytes,
                verdict=self.verdict,
            )
        else:
            out.update(
                runs=self.runs,
                ops=self.ops,
                kernels=self.kernels,
                python_calls=self.python_calls,
                kernel_ms=self.kernel_ms,
            )
        out["x"] = self.x
        return out


@dataclass(frozen=True)
class VersionStep:
    """Where the versions change along a series, between two sessions of one kind (timing or census)."""

    kind: str
    x: int
    session_id: str
    started_at: str
    after_session_id: str
    changes: tuple[VersionDiff, ...]

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "x": self.x,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "after_session_id": self.after_session_id,
            "changes": [c.to_json() for c in self.changes],
        }


@dataclass(frozen=True)
class SeriesChange:
    """A kept change point of a series' timing sessions (``change``), with the sessions, versions and machines on
    either side."""

    change: ChangePoint
    x: int
    session_id: str
    started_at: str
    after_session_id: str
    versions_before: Mapping[str, str]
    versions_after: Mapping[str, str]
    version_changes: tuple[VersionDiff, ...]
    machines_before: tuple[str, ...]
    machines_after: tuple[str, ...]

    @property
    def ratio(self) -> float | None:
        return finite(self.change.ratio)

    @property
    def lo(self) -> float | None:
        return finite(self.change.lo)

    @property
    def hi(self) -> float | None:
        return finite(self.change.hi)

    @property
    def p(self) -> float | None:
        return finite(self.change.p)

    def to_json(self) -> dict:
        return {
            **{f: finite(v) for f, v in asdict(self.change).items()},
            "x": self.x,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "after_session_id": self.after_session_id,
            "versions_before": dict(self.versions_before),
            "versions_after": dict(self.versions_after),
            "version_changes": [c.to_json() for c in self.version_changes],
            "machines_before": list(self.machines_before),
            "machines_after": list(self.machines_after),
        }


@dataclass(frozen=True)
class Series:
    """One GPU x workload x decomposition (x track) of the page: its timeline, version changes, change points and what
    the detector saw (``detector``, as written)."""

    gpu: str
    workload: str
    decomposition: str
    track: str
    timeline: tuple[Point, ...]
    version_changes: tuple[VersionStep, ...]
    change_points: tuple[SeriesChange, ...]
    detector: Mapping[str, Any]

    @property
    def key(self) -> str:
        return "/".join(p for p in (self.gpu, self.workload, self.decomposition, self.track) if p)

    @property
    def name(self) -> str:
        return f"{self.gpu} · {self.workload} · {self.decomposition}" + (f" · {self.track}" if self.track else "")

    @property
    def sessions(self) -> list[str]:
        """The timing sessions, in time order."""
        return [s.session_id for s in self.timeline if s.timing]

    @property
    def census_sessions(self) -> list[str]:
        return [s.session_id for s in self.timeline if not s.timing]

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "name": self.name,
            "gpu": self.gpu,
            "workload": self.workload,
            "decomposition": self.decomposition,
            "track": self.track,
            "timeline": [s.to_json() for s in self.timeline],
            "sessions": self.sessions,
            "census_sessions": self.census_sessions,
            "version_changes": [v.to_json() for v in self.version_changes],
            "change_points": [c.to_json() for c in self.change_points],
            "detector": dict(self.detector),
        }


@dataclass(frozen=True)
class Rule:
    """How the change points are found (said on the method page)."""

    k: float
    alpha: float
    min_size: int
    method: str = (
        "PELT (ruptures, l2) on log session medians; Welch t between neighbouring segments, "
        "Bonferroni over the positions scanned, Holm over the candidates; prune the least significant"
    )
    interval: str = "90% Welch interval of the ratio after/before"

    @property
    def penalty(self) -> str:
        return f"{self.k:g} * sigma^2 * log(n), sigma = 1.4826 * MAD(diff(log y)) / sqrt(2)"

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "penalty": self.penalty,
            "k": self.k,
            "alpha": self.alpha,
            "min_size": self.min_size,
            "interval": self.interval,
        }


@dataclass(frozen=True)
class History:
    """The history data: every series, the rule, the runs left out of the timing series (by why) and the records or
    files the reader left out (one line each)."""

    command: str
    generated_at: str
    results_dirs: tuple[tuple[str, str, int], ...]  # (track, results dir, runs read)
    rule: Rule
    excluded_runs: Mapping[str, int]
    skipped: tuple[str, ...]
    series: tuple[Series, ...]

    def to_json(self) -> dict:
        return {
            "command": self.command,
            "generated_at": self.generated_at,
            "results_dirs": [{"track": t, "dir": d, "runs": n} for t, d, n in self.results_dirs],
            "rule": self.rule.to_json(),
            "excluded_runs": dict(self.excluded_runs),
            "skipped": list(self.skipped),
            "series": [s.to_json() for s in self.series],
        }
