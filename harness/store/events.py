"""The store's part of the history page's "what changed" list: its environment alerts (:mod:`harness.store.alerts`) and
the release nights, the sessions whose reports hold an interleaved A/B verdict, with its outcome and ratio."""

from __future__ import annotations

from harness.results.event import Event
from harness.store.alerts import find_alerts


def _key(gpu: str, workload: str, split: str, track: str) -> str:
    """The history page's series key (:func:`harness.reporting.history.build`): the track only where there is one."""
    return "/".join(p for p in (gpu, workload, split, track) if p)


def alert_events(result: dict) -> list[Event]:
    """One event per alert of :func:`find_alerts`'s result, linked to its (first) series."""
    out = []
    for a in result["alerts"]:
        if a["kind"] == "timing":
            series, lines = _key(a["gpu"], a["workload"], a["decomposition"], a["track"]), (a["summary"],)
        else:
            c = a["cases"][0]
            series = _key(a["gpu"], c["workload"], c["decomposition"], a["track"])
            lines = tuple(f"{x['workload']}-{x['decomposition']}: {ln}" for x in a["cases"] for ln in x["lines"]) + (
                a["summary"],
            )
        out.append(
            Event(
                a.get("started_at") or "",
                "alert",
                series,
                a["session_id"],
                f"{a['kind']} alert: {a['gpu']} {a['subject']}",
                lines,
            )
        )
    return out


def release_events(records: list[dict]) -> list[Event]:
    """One event per session with interleaved A/B verdicts: the release night's outcome per case, with its ratio."""
    out = []
    for rec in records:
        ab = [v for v in rec.get("verdicts") or [] if v.get("kind") == "interleaved"]
        if not ab:
            continue
        cases = [c for c in rec["cases"] if c.get("step_time_ms")]
        series = (
            _key(rec["gpu"], cases[0]["workload"], cases[0]["decomposition"], rec.get("track") or "") if cases else ""
        )
        outcomes = ", ".join(sorted({str(v.get("outcome")) for v in ab}))
        lines = tuple(
            f"{v.get('case') or v.get('source')}: {v.get('outcome')}"
            + (
                f" x{v['ratio']:.3f} [{v['lo']:.3f}, {v['hi']:.3f}]"
                if all(isinstance(v.get(k), (int, float)) for k in ("ratio", "lo", "hi"))
                else ""
            )
            for v in ab
        )
        out.append(
            Event(
                rec.get("started_at") or "",
                "release",
                series,
                rec["session_id"],
                f"release night on {rec['gpu']}: A/B {outcomes}",
                lines,
            )
        )
    return out


def store_events(records: list[dict]) -> list[Event]:
    """The store's events: its alerts and its release nights."""
    return alert_events(find_alerts(records)) + release_events(records)
