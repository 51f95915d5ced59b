"""What :func:`harness.store.alerts.find_alerts` finds in a store, as types: a :class:`CensusAlert` or a
:class:`TimingAlert` (with its :class:`Night` trend) per environment regression, a :class:`LibraryNote` or an
:class:`EnvironmentNote` per change that raised none, all in one :class:`Findings`. ``to_json`` writes each as
``store alerts --json`` prints it (``docs/store.md``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from harness.judging.judge import CENSUS_TOLERANCES
from harness.store.environment import Change
from harness.store.shifts import ShiftRule

RULE_FIELDS = ("alpha", "horizon", "nights", "reference", "min_reference", "sigma_floor", "agree")


def _changes(chs: tuple[Change, ...]) -> list[dict]:
    return [c.to_json() for c in chs]


@dataclass(frozen=True)
class CaseLines:
    """The census counts of one case that moved against the session before it."""

    workload: str
    decomposition: str
    before_session_id: str
    lines: tuple[str, ...]

    @property
    def subject(self) -> str:
        return f"{self.workload}-{self.decomposition}"

    def to_json(self) -> dict:
        return {
            "workload": self.workload,
            "decomposition": self.decomposition,
            "before_session_id": self.before_session_id,
            "lines": list(self.lines),
        }


@dataclass(frozen=True)
class CensusAlert:
    """A session of one GPU x track x runner whose census counts moved against the session before, pins unchanged."""

    gpu: str
    track: str
    runner: str
    session_id: str
    started_at: str | None
    after_session_id: str
    environment: tuple[Change, ...]
    cases: tuple[CaseLines, ...]
    summary: str
    kind: ClassVar[str] = "census"

    @property
    def key(self) -> str:
        """Stable whatever night it is found: one issue per alert."""
        return f"env-census/{self.gpu}/{self.track or '-'}/{self.runner or '-'}/{self.session_id}"

    @property
    def raised_at(self) -> str:
        return self.session_id

    @property
    def subject(self) -> str:
        return ", ".join(sorted({c.subject for c in self.cases}))

    def to_json(self) -> dict:
        return {
            "key": self.key,
            "kind": self.kind,
            "gpu": self.gpu,
            "track": self.track,
            "runner": self.runner,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "raised_at": self.raised_at,
            "after_session_id": self.after_session_id,
            "environment": _changes(self.environment),
            "cases": [c.to_json() for c in self.cases],
            "subject": self.subject,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class Night:
    """A night of a timing alert's trend: ``night`` -n .. -1 before the change, +1 .. from it on; its session median,
    its ratio to the reference level, what changed since the series' night before it."""

    night: int
    session_id: str
    started_at: str | None
    median_ms: float
    vs_reference: float
    changes: tuple[Change, ...]

    def to_json(self) -> dict:
        return {
            "night": self.night,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "median_ms": self.median_ms,
            "vs_reference": self.vs_reference,
            "changes": _changes(self.changes),
        }


@dataclass(frozen=True)
class ShiftSeen:
    """A step-time shift that held in one GPU x track x case series: since ``session_id``, against the
    ``reference_nights`` before it, ``ratio`` with its 90% interval [``lo``, ``hi``] over ``nights`` nights."""

    gpu: str
    track: str
    workload: str
    decomposition: str
    session_id: str
    started_at: str | None
    after_session_id: str
    raised_at: str
    ratio: float
    lo: float
    hi: float
    nights: int
    reference_nights: int
    environment: tuple[Change, ...]

    @property
    def subject(self) -> str:
        return f"{self.workload}-{self.decomposition}"

    def head_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "track": self.track,
            "workload": self.workload,
            "decomposition": self.decomposition,
            "subject": self.subject,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "after_session_id": self.after_session_id,
            "raised_at": self.raised_at,
            "ratio": self.ratio,
            "lo": self.lo,
            "hi": self.hi,
            "nights": self.nights,
            "reference_nights": self.reference_nights,
            "environment": _changes(self.environment),
        }


@dataclass(frozen=True, kw_only=True)
class TimingAlert(ShiftSeen):
    """A shift with the library pins unchanged at its first night: an environment regression; ``threshold`` and
    ``t_values`` are the rule's (:mod:`harness.store.shifts`)."""

    threshold: float
    t_values: tuple[float, ...]
    trend: tuple[Night, ...]
    summary: str
    kind: ClassVar[str] = "timing"

    @property
    def key(self) -> str:
        """Stable whatever night it is found: one issue per alert."""
        return f"env-timing/{self.gpu}/{self.track or '-'}/{self.workload}/{self.decomposition}/{self.session_id}"

    def to_json(self) -> dict:
        return {
            **self.head_json(),
            "kind": self.kind,
            "key": self.key,
            "threshold": self.threshold,
            "t_values": list(self.t_values),
            "trend": [n.to_json() for n in self.trend],
            "summary": self.summary,
        }


@dataclass(frozen=True, kw_only=True)
class LibraryNote(ShiftSeen):
    """A shift whose first night also changed a library pin: the interleaved A/B judges it, a line here."""

    changes: tuple[Change, ...]
    text: str
    kind: ClassVar[str] = "library"

    def to_json(self) -> dict:
        return {**self.head_json(), "kind": self.kind, "changes": _changes(self.changes), "text": self.text}


@dataclass(frozen=True)
class EnvironmentNote:
    """An environment change between two sessions of one GPU x track x runner that raised no alert."""

    gpu: str
    track: str
    runner: str
    session_id: str
    started_at: str | None
    after_session_id: str
    changes: tuple[Change, ...]
    text: str
    kind: ClassVar[str] = "environment"

    def to_json(self) -> dict:
        return {
            "kind": self.kind,
            "gpu": self.gpu,
            "track": self.track,
            "runner": self.runner,
            "session_id": self.session_id,
            "started_at": self.started_at,
            "after_session_id": self.after_session_id,
            "changes": _changes(self.changes),
            "text": self.text,
        }


Alert = CensusAlert | TimingAlert
Note = LibraryNote | EnvironmentNote


@dataclass(frozen=True)
class Findings:
    """The alerts (by their session's start) and notes of ``sessions`` stored sessions, found under ``rule``."""

    alerts: tuple[Alert, ...]
    notes: tuple[Note, ...]
    sessions: int
    rule: ShiftRule

    def to_json(self) -> dict:
        return {
            "alerts": [a.to_json() for a in self.alerts],
            "notes": [n.to_json() for n in self.notes],
            "sessions": self.sessions,
            "rule": {
                "timing": {k: getattr(self.rule, k) for k in RULE_FIELDS},
                "census": {
                    "tolerances": CENSUS_TOLERANCES,
                    "rule": "any count that differs, library pins and workload spec unchanged",
                },
            },
        }
