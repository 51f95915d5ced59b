"""The dashboard's data: the history data (:func:`harness.reporting.history.build`) in the compact, columnar shape the
page's script reads, so that years of nightly sessions stay a few megabytes.

Every series becomes parallel arrays (time in epoch seconds, median, run range, peak memory, session and machine as
indices into shared tables); sessions, machines, versions and verdicts are written once each and referred to by index.
Sessions without a readable start are left off the time axis (the tables of ``history.json`` keep them)."""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.record import parse_time
from harness.reporting.history_data import History, Point, Series
from harness.results.event import Event

MIB = 2**20


@dataclass
class Tables:
    """The shared tables and the index of each entry, filled as the series are read."""

    sessions: list[dict] = field(default_factory=list)
    machines: list[str] = field(default_factory=list)
    versions: list[dict] = field(default_factory=list)
    verdicts: list[str] = field(default_factory=list)
    _index: dict = field(default_factory=dict)

    def ref(self, table: str, key, value) -> int:
        """The index of ``key`` in ``table``, appending ``value`` the first time the key is seen."""
        found = self._index.setdefault(table, {})
        if key not in found:
            found[key] = len(getattr(self, table))
            getattr(self, table).append(value)
        return found[key]

    def session(self, t: Point, epoch: float) -> int:
        vkey = tuple(sorted(t.versions.items()))
        v = self.ref("versions", vkey, dict(t.versions))
        commit = t.commit or ""
        return self.ref(
            "sessions", (t.session_id, v, commit), {"id": t.session_id, "t": epoch, "v": v, "commit": commit}
        )


def _epoch(text: str) -> float | None:
    t = parse_time(text)
    return t.timestamp() if t else None


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def _timing(points: list[tuple[Point, float]], tables: Tables) -> dict:
    cols: dict[str, list] = {k: [] for k in ("t", "ms", "lo", "hi", "mem", "s", "m", "vd")}
    for t, epoch in points:
        machine = ", ".join(t.machines)
        row = {
            "t": epoch,
            "ms": _round(t.median_ms),
            "lo": _round(t.min_ms),
            "hi": _round(t.max_ms),
            "mem": _round(t.peak_bytes / MIB, 1) if t.peak_bytes else None,
            "s": tables.session(t, epoch),
            "m": tables.ref("machines", machine, machine),
            "vd": tables.ref("verdicts", t.verdict, t.verdict) if t.verdict else None,
        }
        for col, value in row.items():
            cols[col].append(value)
    return cols


def _census(points: list[tuple[Point, float]], tables: Tables) -> dict:
    cols: dict[str, list] = {k: [] for k in ("t", "ops", "kernels", "calls", "kms", "s")}
    for t, epoch in points:
        row = {
            "t": epoch,
            "ops": _round(t.ops, 1),
            "kernels": _round(t.kernels, 1),
            "calls": _round(t.python_calls, 1),
            "kms": _round(t.kernel_ms, 1),
            "s": tables.session(t, epoch),
        }
        for col, value in row.items():
            cols[col].append(value)
    return cols


def series_entry(s: Series, tables: Tables, last: Event | None) -> dict:
    """One series: its timing and census columns, its change points and version changes on the time axis, its newest
    event."""
    dated = [(t, e) for t in s.timeline if (e := _epoch(t.started_at)) is not None]
    cps = [
        {
            "t": e,
            "ratio": c.ratio,
            "lo": c.lo,
            "hi": c.hi,
            "p": c.p,
            "session": c.session_id,
            "after": c.after_session_id,
        }
        for c in s.change_points
        if (e := _epoch(c.started_at)) is not None
    ]
    marks = [
        {"t": e, "kind": v.kind, "text": "; ".join(ch.text(short=True) for ch in v.changes)}
        for v in s.version_changes
        if (e := _epoch(v.started_at)) is not None
    ]
    return {
        "key": s.key,
        "name": s.name,
        "gpu": s.gpu,
        "workload": s.workload,
        "split": s.decomposition,
        "track": s.track,
        "timing": _timing([(t, e) for t, e in dated if t.timing], tables),
        "census": _census([(t, e) for t, e in dated if not t.timing], tables),
        "change_points": cps,
        "marks": marks,
        "last_change": {"at": last.at, "kind": last.kind, "title": last.title} if last else None,
    }


def dashboard_data(data: History, events: list[Event], limit: int = 400) -> dict:
    """The page's data: every series, the shared tables, and the newest ``limit`` events (``events``: newest first)."""
    tables = Tables()
    last: dict[str, Event] = {}
    for e in events:
        last.setdefault(e.series, e)
    series = [series_entry(s, tables, last.get(s.key)) for s in data.series]
    return {
        "generated_at": data.generated_at,
        "command": data.command,
        "excluded_runs": dict(data.excluded_runs),
        "skipped": list(data.skipped),
        "series": series,
        "sessions": tables.sessions,
        "machines": tables.machines,
        "versions": tables.versions,
        "verdicts": tables.verdicts,
        "events": [{**e.to_json(), "t": _epoch(e.at)} for e in events[:limit]],
        "events_total": len(events),
    }
