"""Environment regressions in a store: what moved between nights while the library pins stayed the same.

* **census**: per GPU x track x runner, the census of each case against the same case's previous census session; with
  the pins (:data:`harness.store.environment.PINS` and the workload spec) unchanged, any count that differs
  (:func:`harness.judging.census_diff.verdict` with the work verdict's tolerances) is a change of the environment. One
  alert per session that moved, naming every case's counts and what in the environment changed since the session before;
* **timing**: per GPU x track x workload x decomposition, the session medians of the timed runs, searched for shifts
  that held (:func:`harness.store.shifts.find`); a shift whose first night also changed a pin is a library change (the
  interleaved A/B judges those) and a line, not an alert;
* **notes**: every environment change that raised no alert, a line for the page.

Each alert has a stable ``key`` (kind, series and the session of the change), so that the nightly opens one issue per
alert whatever night it runs; ``raised_at`` is the session whose arrival raised it (``new_only`` keeps the alerts raised
by each series' newest session: what tonight's sessions raised).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import fields, replace
from statistics import fmean

from harness.judging.census_diff import NAMED, verdict
from harness.judging.judge import CENSUS_TOLERANCES
from harness.record import parse_time
from harness.results.repro import repro
from harness.store import alert_text
from harness.store import environment as envs
from harness.store.findings import (
    Alert,
    CaseLines,
    CensusAlert,
    EnvironmentNote,
    Findings,
    LibraryNote,
    Night,
    ShiftSeen,
    TimingAlert,
)
from harness.store.session import Case, Census, Session
from harness.store.shifts import DEFAULT_RULE, Shift, ShiftRule, find

TREND_BEFORE = 8  # reference nights shown in a timing alert's trend (every night after the change is shown)
BY_NAME = (*NAMED.values(), "kernel_ms_by_name", "cpu_op_ms_by_name")
Point = tuple[Session, Case]  # a case of a session, in a series
Timed = tuple[Session, Case, float]  # and its session median step time (ms)


def _order(records: Iterable[Session]) -> list[Session]:
    def key(r: Session):
        t = parse_time(r.started_at)
        return (t.timestamp() if t else float("-inf"), r.session_id)

    return sorted(records, key=key)


def _trimmed_names(rec: Session) -> bool:
    return any(t.startswith("census names") for t in rec.trimmed or ())


def _census_pair(a: Point, b: Point) -> list[str]:
    """The census lines of a case between two sessions (per-name tables left out when either record had them
    trimmed)."""
    (ra, ca), (rb, cb) = a, b
    base, cur = ca.census.to_json(), cb.census.to_json()  # type: ignore[union-attr]
    if _trimmed_names(ra) or _trimmed_names(rb):
        for k in BY_NAME:
            base.pop(k, None)
            cur.pop(k, None)
    v = verdict(base, cur, CENSUS_TOLERANCES)
    return v.lines if v.outcome == "changed" else []


def _series_key(rec: Session) -> tuple[str, str, str]:
    """A session's GPU x track x runner (its census series, with a case)."""
    return rec.gpu, rec.track or "", rec.runner or ""


def census_alerts(records: list[Session]) -> list[CensusAlert]:
    """One alert per session whose census counts moved against the previous census of the same cases, pins unchanged."""
    series: dict[tuple, list[Point]] = {}
    for rec in _order(records):
        for case in rec.cases:
            if case.census is not None and case.census.fits is not False and case.census != Census():
                series.setdefault((*_series_key(rec), case.workload, case.decomposition), []).append((rec, case))
    moved: dict[tuple, tuple[Session, Session, list[CaseLines]]] = {}
    for (gpu, track, runner, wl, dec), pts in series.items():
        for a, b in zip(pts, pts[1:]):
            if envs.pin_changes(a[0], b[0], a[1], b[1]) or not (lines := _census_pair(a, b)):
                continue
            _, _, cases = moved.setdefault((gpu, track, runner, b[0].session_id), (a[0], b[0], []))
            cases.append(CaseLines(wl, dec, a[0].session_id, tuple(lines)))
    out = []
    for (gpu, track, runner, _), (after, rec, cases) in moved.items():
        environment = envs.env_changes(after, rec)
        al = CensusAlert(
            gpu=gpu,
            track=track,
            runner=runner,
            session_id=rec.session_id,
            started_at=rec.started_at,
            after_session_id=after.session_id,
            environment=tuple(environment),
            cases=tuple(cases),
            summary="",
        )
        summary = (
            f"census counts moved with the library pins unchanged in {al.subject}; "
            f"environment since {after.session_id}: {envs.text(environment, quiet=False)}"
        )
        out.append(replace(al, summary=summary))
    return out


def _timing_series(records: list[Session]) -> dict[tuple, list[Timed]]:
    series: dict[tuple, list[Timed]] = {}
    for rec in _order(records):
        for case in rec.cases:
            if (ms := case.median_ms) is not None:
                key = (rec.gpu, rec.track or "", case.workload, case.decomposition)
                series.setdefault(key, []).append((rec, case, ms))
    return series


def _trend(pts: list[Timed], sh: Shift) -> list[Night]:
    """The nights around a shift: up to :data:`TREND_BEFORE` reference nights before it (``night`` -n .. -1) and every
    night of its level (+1 ..), each with its ratio to the reference's geometric mean and what changed since the series'
    night before it (environment and library pins)."""
    level = math.exp(fmean(math.log(p[2]) for p in pts[sh.ref_start : sh.start]))
    out = []
    for i in range(max(sh.ref_start, sh.start - TREND_BEFORE), sh.end + 1):
        (rec, case, ms), prev = pts[i], pts[i - 1] if i > 0 else None
        chs = envs.env_changes(prev[0], rec) + envs.pin_changes(prev[0], rec, prev[1], case) if prev else []
        night = i - sh.start + (i >= sh.start)
        out.append(Night(night, rec.session_id, rec.started_at, ms, ms / level, tuple(chs)))
    return out


def _shift_seen(key: tuple, pts: list[Timed], sh: Shift) -> ShiftSeen:
    gpu, track, wl, dec = key
    (a, _, _), (b, _, _) = pts[sh.start - 1], pts[sh.start]
    return ShiftSeen(
        gpu=gpu,
        track=track,
        workload=wl,
        decomposition=dec,
        session_id=b.session_id,
        started_at=b.started_at,
        after_session_id=a.session_id,
        raised_at=pts[sh.raised][0].session_id,
        ratio=sh.ratio,
        lo=sh.lo,
        hi=sh.hi,
        nights=sh.end - sh.start + 1,
        reference_nights=sh.start - sh.ref_start,
        environment=tuple(envs.env_changes(a, b)),
    )


def _head(seen: ShiftSeen) -> dict:
    """The fields of a shift, to make an alert or a note of it."""
    return {f.name: getattr(seen, f.name) for f in fields(ShiftSeen)}


def timing_alerts(
    records: list[Session], rule: ShiftRule = DEFAULT_RULE
) -> tuple[list[TimingAlert], list[LibraryNote]]:
    """Shifts that held, as alerts (pins unchanged at their first night) and notes (a pin changed there)."""
    alerts, notes = [], []
    for key, pts in _timing_series(records).items():
        for sh in find([p[2] for p in pts], rule):
            seen = _shift_seen(key, pts, sh)
            a, b = pts[sh.start - 1], pts[sh.start]
            size = (
                f"step time x{sh.ratio:.3f} [90%: {sh.lo:.3f}, {sh.hi:.3f}] over {seen.nights} night(s) "
                f"against the {seen.reference_nights} before"
            )
            if pins := envs.pin_changes(a[0], b[0], a[1], b[1]):
                text = (
                    f"{seen.gpu} {seen.track} {seen.subject}: {size}, at {envs.text(pins)} "
                    "(a library change: the interleaved A/B judges it)"
                )
                notes.append(LibraryNote(**_head(seen), changes=tuple(pins), text=text))
                continue
            summary = (
                f"{size}, since {seen.session_id}; environment since {seen.after_session_id}: "
                f"{envs.text(list(seen.environment), quiet=False)}"
            )
            alerts.append(
                TimingAlert(
                    **_head(seen),
                    threshold=sh.threshold,
                    t_values=tuple(sh.t_values),
                    trend=tuple(_trend(pts, sh)),
                    summary=summary,
                )
            )
    return alerts, notes


def environment_notes(records: list[Session], raised: set[tuple]) -> list[EnvironmentNote]:
    """Environment changes between consecutive sessions of one GPU x track x runner that raised no alert."""
    groups: dict[tuple, list[Session]] = {}
    for rec in _order(records):
        groups.setdefault(_series_key(rec), []).append(rec)
    out = []
    for (gpu, track, runner), recs in groups.items():
        for a, b in zip(recs, recs[1:]):
            chs = [c for c in envs.env_changes(a, b) if not c.quiet]
            if chs and (gpu, track, b.session_id) not in raised:
                text = f"{gpu} {track or ''} {b.session_id}: {envs.text(chs)}, no census or timing alert"
                out.append(
                    EnvironmentNote(gpu, track, runner, b.session_id, b.started_at, a.session_id, tuple(chs), text)
                )
    return out


def _newest(records: list[Session]) -> set[str]:
    """The newest session of every case series (per GPU x track x runner) and timing series: where tonight's alerts
    arise."""
    newest: dict[tuple, str] = {}
    for rec in _order(records):
        for case in rec.cases:
            newest[(*_series_key(rec), case.workload, case.decomposition)] = rec.session_id
    return set(newest.values()) | {pts[-1][0].session_id for pts in _timing_series(records).values()}


def find_alerts(records: list[Session], rule: ShiftRule = DEFAULT_RULE, new_only: bool = False) -> Findings:
    """The alerts and notes of the records (alerts sorted by their session's start)."""
    timing, library = timing_alerts(records, rule)
    alerts: list[Alert] = [*census_alerts(records), *timing]
    raised = {(a.gpu, a.track, a.session_id) for a in alerts}
    notes = [*library, *environment_notes(records, raised)]
    if new_only:
        newest = _newest(records)
        alerts = [a for a in alerts if a.raised_at in newest]
    order = {r.session_id: i for i, r in enumerate(_order(records))}
    alerts.sort(key=lambda a: (order.get(a.session_id, -1), a.key))
    notes.sort(key=lambda n: (order.get(n.session_id, -1), n.kind))
    return Findings(tuple(alerts), tuple(notes), len(records), rule)


def issues_report(result: Findings, gpu: str, session_id: str = "") -> dict:
    """The alerts of one GPU in the shape of a suite's report.json, for ``.github/scripts/regression-issues.sh``: one
    verdict per alert, titled ``perf regression: <gpu> <env> env-<kind> <case> since <session>``, its message
    :func:`harness.store.alert_text.message` (a timing alert's with its trend), its ``repro`` the command that measures
    its cases again (:func:`harness.results.repro.repro`)."""
    verdicts = [
        {
            "kind": f"env-{a.kind}",
            "case": f"{a.subject} since {a.session_id}",
            "outcome": "regression",
            "message": alert_text.message(a),
            "repro": repro(f"env-{a.kind}", a.subject, gpu),
        }
        for a in result.alerts
        if a.gpu == gpu
    ]
    return {"gpu": gpu, "session_id": session_id, "verdicts": verdicts, "rows": [], "versions": {}}


def lines(result: Findings) -> list[str]:
    """Human lines: every alert (a timing alert with its trend), then every note."""
    return alert_text.lines(result)
