"""The history data's part of the "what changed" list (:mod:`harness.results.event`): per series its change points, the
version changes along it, and the census sessions whose counts per step moved against the census session before."""

from __future__ import annotations

from harness.reporting.history_data import History, Point, Series
from harness.results.event import Event

COUNTS = (
    ("ops", "ops"),
    ("kernels", "kernel launches"),
    ("python_calls", "Python calls"),
)  # census keys, as the page names them


def _count_lines(a: Point, b: Point) -> tuple[str, ...]:
    """The census counts that differ between two census sessions, as ``kernel launches 10,937 -> 10,938 (+1)``."""
    out = []
    for key, name in COUNTS:
        x, y = getattr(a, key), getattr(b, key)
        if x is not None and y is not None and x != y:
            out.append(f"{name} {x:,.1f} -> {y:,.1f} ({y - x:+,.1f})")
    return tuple(out)


def series_events(s: Series) -> list[Event]:
    """The events of one series of :func:`harness.reporting.history.build`'s data."""
    out = []
    for c in s.change_points:
        chs = "; ".join(ch.text(short=True) for ch in c.version_changes) or "no version change"
        out.append(
            Event(
                c.started_at,
                "change point",
                s.key,
                c.session_id,
                f"step time x{c.ratio:.3f} [{c.lo:.3f}, {c.hi:.3f}] in {s.name}",
                (f"since {c.after_session_id}; {chs}",),
            )
        )
    timed = set(s.sessions)
    for v in s.version_changes:
        if v.kind == "timing" or v.session_id not in timed:
            out.append(
                Event(
                    v.started_at,
                    "version",
                    s.key,
                    v.session_id,
                    f"{'; '.join(ch.text(short=True) for ch in v.changes)} in {s.name}",
                    tuple(ch.text() for ch in v.changes),
                )
            )
    census = [t for t in s.timeline if not t.timing]
    for a, b in zip(census, census[1:]):
        if lines := _count_lines(a, b):
            out.append(
                Event(
                    b.started_at,
                    "census",
                    s.key,
                    b.session_id,
                    f"census counts moved in {s.name}",
                    (*lines, f"since {a.session_id}"),
                )
            )
    return out


def history_events(data: History) -> list[Event]:
    """Every series' events (unsorted: :func:`harness.results.event.newest_first` orders the joined list)."""
    return [e for s in data.series for e in series_events(s)]


def tonight(events: list[Event], data: History, hours: float = 24.0) -> list[Event]:
    """The events of the newest night: those at or after ``hours`` before the newest session's start."""
    from harness.record import parse_time

    starts = [t for s in data.series for x in s.timeline if (t := parse_time(x.started_at))]
    if not starts:
        return []
    since = max(starts).timestamp() - hours * 3600
    return [e for e in events if (t := parse_time(e.at)) and t.timestamp() >= since]


def markdown(events: list[Event], page_url: str = "") -> str:
    """The nightly job summary's "what changed" section: one item per event (its detail indented), linked to the
    page."""
    link = f" ([history page]({page_url}))" if page_url else ""
    out = [f"## What changed tonight{link}", ""]
    for e in events:
        out.append(f"- **{e.kind}** {e.at[:16]} `{e.session_id}`: {e.title}")
        out += [f"  - {ln}" for ln in e.lines]
    if not events:
        out.append(
            "Nothing: no alert, change point, census change, version change or release night in the newest night."
        )
    return "\n".join(out) + "\n"
