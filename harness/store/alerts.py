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
from statistics import fmean

from harness.judging.census_diff import NAMED, verdict
from harness.judging.judge import CENSUS_TOLERANCES
from harness.record import parse_time
from harness.results.repro import repro
from harness.store import alert_text
from harness.store import environment as envs
from harness.store.shifts import DEFAULT_RULE, Shift, ShiftRule, find

TREND_BEFORE = 8  # reference nights shown in a timing alert's trend (every night after the change is shown)
BY_NAME = (*NAMED.values(), "kernel_ms_by_name", "cpu_op_ms_by_name")


def _order(records: Iterable[dict]) -> list[dict]:
    def key(r):
        t = parse_time(r.get("started_at"))
        return (t.timestamp() if t else float("-inf"), r["session_id"])

    return sorted(records, key=key)


def _trimmed_names(rec: dict) -> bool:
    return any(t.startswith("census names") for t in rec.get("trimmed") or [])


def _census_pair(a: tuple[dict, dict], b: tuple[dict, dict]) -> list[str]:
    """The census lines of a case between two sessions (per-name tables left out when either record had them
    trimmed)."""
    (ra, ca), (rb, cb) = a, b
    base, cur = dict(ca["census"]), dict(cb["census"])
    if _trimmed_names(ra) or _trimmed_names(rb):
        for k in BY_NAME:
            base.pop(k, None)
            cur.pop(k, None)
    v = verdict(base, cur, CENSUS_TOLERANCES)
    return v.lines if v.outcome == "changed" else []


def census_alerts(records: list[dict]) -> list[dict]:
    """One alert per session whose census counts moved against the previous census of the same cases, pins unchanged."""
    series: dict[tuple, list[tuple[dict, dict]]] = {}
    for rec in _order(records):
        for case in rec["cases"]:
            if (case.get("census") or {}).get("fits", True) and case.get("census"):
                key = (
                    rec["gpu"],
                    rec.get("track") or "",
                    rec.get("runner") or "",
                    case["workload"],
                    case["decomposition"],
                )
                series.setdefault(key, []).append((rec, case))
    moved: dict[tuple, dict] = {}
    for (gpu, track, runner, wl, dec), pts in series.items():
        for a, b in zip(pts, pts[1:]):
            if envs.pin_changes(a[0], b[0], a[1], b[1]) or not (lines := _census_pair(a, b)):
                continue
            al = moved.setdefault(
                (gpu, track, runner, b[0]["session_id"]),
                {
                    "key": f"env-census/{gpu}/{track or '-'}/{runner or '-'}/{b[0]['session_id']}",
                    "kind": "census",
                    "gpu": gpu,
                    "track": track,
                    "runner": runner,
                    "session_id": b[0]["session_id"],
                    "started_at": b[0].get("started_at"),
                    "raised_at": b[0]["session_id"],
                    "after_session_id": a[0]["session_id"],
                    "environment": envs.env_changes(a[0], b[0]),
                    "cases": [],
                },
            )
            al["cases"].append(
                {"workload": wl, "decomposition": dec, "before_session_id": a[0]["session_id"], "lines": lines}
            )
    out = list(moved.values())
    for al in out:
        al["subject"] = ", ".join(sorted({f"{c['workload']}-{c['decomposition']}" for c in al["cases"]}))
        al["summary"] = (
            f"census counts moved with the library pins unchanged in {al['subject']}; "
            f"environment since {al['after_session_id']}: {envs.text(al['environment'], quiet=False)}"
        )
    return out


def _timing_series(records: list[dict]) -> dict[tuple, list[tuple[dict, dict, float]]]:
    series: dict[tuple, list[tuple[dict, dict, float]]] = {}
    for rec in _order(records):
        for case in rec["cases"]:
            st = case.get("step_time_ms") or {}
            if st.get("median") and st["median"] > 0:
                key = (rec["gpu"], rec.get("track") or "", case["workload"], case["decomposition"])
                series.setdefault(key, []).append((rec, case, st["median"]))
    return series


def _trend(pts: list[tuple[dict, dict, float]], sh: Shift) -> list[dict]:
    """The nights around a shift: up to :data:`TREND_BEFORE` reference nights before it (``night`` -n .. -1) and every
    night of its level (+1 ..), each with its ratio to the reference's geometric mean and what changed since the series'
    night before it (environment and library pins)."""
    level = math.exp(fmean(math.log(p[2]) for p in pts[sh.ref_start : sh.start]))
    out = []
    for i in range(max(sh.ref_start, sh.start - TREND_BEFORE), sh.end + 1):
        (rec, case, ms), prev = pts[i], pts[i - 1] if i > 0 else None
        chs = envs.env_changes(prev[0], rec) + envs.pin_changes(prev[0], rec, prev[1], case) if prev else []
        out.append(
            {
                "night": i - sh.start + (i >= sh.start),
                "session_id": rec["session_id"],
                "started_at": rec.get("started_at"),
                "median_ms": ms,
                "vs_reference": ms / level,
                "changes": chs,
            }
        )
    return out


def timing_alerts(records: list[dict], rule: ShiftRule = DEFAULT_RULE) -> tuple[list[dict], list[dict]]:
    """Shifts that held, as alerts (pins unchanged at their first night) and notes (a pin changed there)."""
    alerts, notes = [], []
    for (gpu, track, wl, dec), pts in _timing_series(records).items():
        for sh in find([p[2] for p in pts], rule):
            a, b = pts[sh.start - 1], pts[sh.start]
            head = {
                "gpu": gpu,
                "track": track,
                "workload": wl,
                "decomposition": dec,
                "subject": f"{wl}-{dec}",
                "session_id": b[0]["session_id"],
                "started_at": b[0].get("started_at"),
                "after_session_id": a[0]["session_id"],
                "raised_at": pts[sh.raised][0]["session_id"],
                "ratio": sh.ratio,
                "lo": sh.lo,
                "hi": sh.hi,
                "nights": sh.end - sh.start + 1,
                "reference_nights": sh.start - sh.ref_start,
                "environment": envs.env_changes(a[0], b[0]),
            }
            size = (
                f"step time x{sh.ratio:.3f} [90%: {sh.lo:.3f}, {sh.hi:.3f}] over {head['nights']} night(s) "
                f"against the {head['reference_nights']} before"
            )
            if pins := envs.pin_changes(a[0], b[0], a[1], b[1]):
                notes.append(
                    {
                        **head,
                        "kind": "library",
                        "changes": pins,
                        "text": f"{gpu} {track} {wl}-{dec}: {size}, at {envs.text(pins)} "
                        "(a library change: the interleaved A/B judges it)",
                    }
                )
                continue
            alerts.append(
                {
                    **head,
                    "kind": "timing",
                    "key": f"env-timing/{gpu}/{track or '-'}/{wl}/{dec}/{b[0]['session_id']}",
                    "threshold": sh.threshold,
                    "t_values": list(sh.t_values),
                    "trend": _trend(pts, sh),
                    "summary": f"{size}, since {b[0]['session_id']}; environment since {a[0]['session_id']}: "
                    f"{envs.text(head['environment'], quiet=False)}",
                }
            )
    return alerts, notes


def environment_notes(records: list[dict], raised: set[tuple]) -> list[dict]:
    """Environment changes between consecutive sessions of one GPU x track x runner that raised no alert."""
    groups: dict[tuple, list[dict]] = {}
    for rec in _order(records):
        groups.setdefault((rec["gpu"], rec.get("track") or "", rec.get("runner") or ""), []).append(rec)
    out = []
    for (gpu, track, runner), recs in groups.items():
        for a, b in zip(recs, recs[1:]):
            chs = [c for c in envs.env_changes(a, b) if c["name"] not in envs.QUIET]
            if chs and (gpu, track, b["session_id"]) not in raised:
                out.append(
                    {
                        "kind": "environment",
                        "gpu": gpu,
                        "track": track,
                        "runner": runner,
                        "session_id": b["session_id"],
                        "started_at": b.get("started_at"),
                        "after_session_id": a["session_id"],
                        "changes": chs,
                        "text": f"{gpu} {track or ''} {b['session_id']}: {envs.text(chs)}, no census or timing alert",
                    }
                )
    return out


def _newest(records: list[dict]) -> set[str]:
    """The newest session of every case series (per GPU x track x runner) and timing series: where tonight's alerts
    arise."""
    newest: dict[tuple, str] = {}
    for rec in _order(records):
        for case in rec["cases"]:
            newest[
                (rec["gpu"], rec.get("track") or "", rec.get("runner") or "", case["workload"], case["decomposition"])
            ] = rec["session_id"]
    return set(newest.values()) | {pts[-1][0]["session_id"] for pts in _timing_series(records).values()}


def find_alerts(records: list[dict], rule: ShiftRule = DEFAULT_RULE, new_only: bool = False) -> dict:
    """``{"alerts": [...], "notes": [...], "rule": {...}}`` of the records (alerts sorted by their session's start)."""
    cens = census_alerts(records)
    timing, notes = timing_alerts(records, rule)
    alerts = cens + timing
    raised = {(a["gpu"], a["track"], a["session_id"]) for a in alerts}
    notes += environment_notes(records, raised)
    if new_only:
        newest = _newest(records)
        alerts = [a for a in alerts if a["raised_at"] in newest]
    order = {r["session_id"]: i for i, r in enumerate(_order(records))}
    alerts.sort(key=lambda a: (order.get(a["session_id"], -1), a["key"]))
    notes.sort(key=lambda n: (order.get(n["session_id"], -1), n["kind"]))
    return {
        "alerts": alerts,
        "notes": notes,
        "sessions": len(records),
        "rule": {
            "timing": {
                k: getattr(rule, k)
                for k in ("alpha", "horizon", "nights", "reference", "min_reference", "sigma_floor", "agree")
            },
            "census": {
                "tolerances": CENSUS_TOLERANCES,
                "rule": "any count that differs, library pins and workload spec unchanged",
            },
        },
    }


def issues_report(result: dict, gpu: str, session_id: str = "") -> dict:
    """The alerts of one GPU in the shape of a suite's report.json, for ``.github/scripts/regression-issues.sh``: one
    verdict per alert, titled ``perf regression: <gpu> <env> env-<kind> <case> since <session>``, its message
    :func:`harness.store.alert_text.message` (a timing alert's with its trend), its ``repro`` the command that measures
    its cases again (:func:`harness.results.repro.repro`)."""
    verdicts = [
        {
            "kind": f"env-{a['kind']}",
            "case": f"{a['subject']} since {a['session_id']}",
            "outcome": "regression",
            "message": alert_text.message(a),
            "repro": repro(f"env-{a['kind']}", a["subject"], gpu),
        }
        for a in result["alerts"]
        if a["gpu"] == gpu
    ]
    return {"gpu": gpu, "session_id": session_id, "verdicts": verdicts, "rows": [], "versions": {}}


def lines(result: dict) -> list[str]:
    """Human lines: every alert (a timing alert with its trend), then every note."""
    return alert_text.lines(result)
