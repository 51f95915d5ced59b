"""The store's part of the history page's "what changed" list: its environment alerts (:mod:`harness.store.alerts`) and
the release nights, the sessions whose reports hold an interleaved A/B verdict, with its outcome and ratio."""

from __future__ import annotations

from harness.results.event import Event
from harness.store.alerts import find_alerts
from harness.store.findings import CensusAlert, Findings
from harness.store.session import Session, StoredVerdict


def _key(gpu: str, workload: str, split: str, track: str) -> str:
    """The history page's series key (:func:`harness.reporting.history.build`): the track only where there is one."""
    return "/".join(p for p in (gpu, workload, split, track) if p)


def alert_events(result: Findings) -> list[Event]:
    """One event per alert of :func:`find_alerts`'s result, linked to its (first) series."""
    out = []
    for a in result.alerts:
        if isinstance(a, CensusAlert):
            c = a.cases[0]
            series = _key(a.gpu, c.workload, c.decomposition, a.track)
            lines = tuple(f"{x.subject}: {ln}" for x in a.cases for ln in x.lines) + (a.summary,)
        else:
            series, lines = _key(a.gpu, a.workload, a.decomposition, a.track), (a.summary,)
        out.append(
            Event(a.started_at or "", "alert", series, a.session_id, f"{a.kind} alert: {a.gpu} {a.subject}", lines)
        )
    return out


def _line(v: StoredVerdict) -> str:
    """An A/B verdict's line: its case, its outcome, its ratio with its interval where it has one."""
    size = v.interval()
    return f"{v.case or v.source}: {v.outcome}" + (f" x{size[0]:.3f} [{size[1]:.3f}, {size[2]:.3f}]" if size else "")


def release_events(records: list[Session]) -> list[Event]:
    """One event per session with interleaved A/B verdicts: the release night's outcome per case, with its ratio."""
    out = []
    for rec in records:
        ab = [v for v in rec.verdicts or () if v.kind == "interleaved"]
        if not ab:
            continue
        cases = [c for c in rec.cases if c.step_time_ms]
        series = _key(rec.gpu, cases[0].workload, cases[0].decomposition, rec.track or "") if cases else ""
        outcomes = ", ".join(sorted({str(v.outcome) for v in ab}))
        title = f"release night on {rec.gpu}: A/B {outcomes}"
        out.append(Event(rec.started_at or "", "release", series, rec.session_id, title, tuple(_line(v) for v in ab)))
    return out


def store_events(records: list[Session]) -> list[Event]:
    """The store's events: its alerts and its release nights."""
    return alert_events(find_alerts(records)) + release_events(records)
