"""One line of the history page's "what changed" list: something that happened to a series at a session.

The reporting layer makes the events it can see in the history data (change points, version changes, census counts that
moved); the store layer those it can see in the stored records (environment alerts, release nights' A/B verdicts). Both
meet here, below them, and the command joins the lists."""

from __future__ import annotations

from dataclasses import asdict, dataclass

KINDS = (
    "alert",
    "change point",
    "census",
    "version",
    "release",
)  # the kinds, in the order the page's legend names them


@dataclass(frozen=True)
class Event:
    """``at``: the session's start (ISO 8601, as stored); ``series``: the key of the series it belongs to
    (``gpu/workload/split [/track]``), or "" for a whole session; ``title``: one line; ``lines``: the detail (counts
    that moved, versions)."""

    at: str
    kind: str
    series: str
    session_id: str
    title: str
    lines: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {**asdict(self), "lines": list(self.lines)}


def newest_first(events: list[Event]) -> list[Event]:
    """The events newest first, one per kind, series and session (an alert of the store before the page's own event of
    it)."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for e in sorted(events, key=lambda e: KINDS.index(e.kind) if e.kind in KINDS else len(KINDS)):
        key = (e.series, e.session_id) if e.kind in ("alert", "census") else (e.kind, e.series, e.session_id, e.title)
        if key not in seen:
            seen.add(key)
            out.append(e)
    return sorted(out, key=lambda e: e.at, reverse=True)
